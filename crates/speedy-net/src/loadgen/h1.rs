//! The load generator's lean HTTP/1.1 keep-alive connection: one request in flight, as
//! h2load's.

use crate::transport::io::BoxIo;
use bytes::{Buf, BytesMut};
use spdy::url::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A lean HTTP/1.1 keep-alive connection: the request is formatted once, responses are
/// parsed in place (Content-Length bodies only) and skipped.
pub(super) struct H1 {
    io: BoxIo,
    buf: BytesMut,
    request: Vec<u8>,
}

impl H1 {
    pub(super) fn new(io: BoxIo, url: &Url) -> H1 {
        let request = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: speedy-bench\r\nAccept: */*\r\n\r\n",
            url.path,
            url.authority()
        )
        .into_bytes();
        H1 {
            io,
            buf: BytesMut::with_capacity(16 * 1024),
            request,
        }
    }

    /// Sends the request and reads one response (Content-Length bodies only): its status
    /// and body length.
    pub(super) async fn roundtrip(&mut self) -> Result<(u16, u64), String> {
        self.io
            .write_all(&self.request)
            .await
            .map_err(|_| "connection closed".to_string())?;
        let (status, head_len, body_len) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut resp = httparse::Response::new(&mut headers);
            match resp.parse(&self.buf) {
                Ok(httparse::Status::Complete(n)) => {
                    let mut len = None;
                    for h in resp.headers.iter() {
                        if h.name.eq_ignore_ascii_case("content-length") {
                            len = std::str::from_utf8(h.value)
                                .ok()
                                .and_then(|v| v.trim().parse::<usize>().ok());
                        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                            return Err("chunked body (unsupported by the bench)".into());
                        }
                    }
                    break (resp.code.unwrap_or(0), n, len.unwrap_or(0));
                }
                Ok(httparse::Status::Partial) => {}
                Err(e) => return Err(format!("bad response: {e}")),
            }
            self.fill().await?;
        };
        while self.buf.len() < head_len + body_len {
            self.buf.reserve(head_len + body_len - self.buf.len());
            self.fill().await?;
        }
        self.buf.advance(head_len + body_len);
        if status >= 400 {
            return Err(format!("http {status}"));
        }
        Ok((status, body_len as u64))
    }

    /// Reads more bytes into the buffer; end of stream is an error.
    async fn fill(&mut self) -> Result<(), String> {
        match self.io.read_buf(&mut self.buf).await {
            Ok(0) | Err(_) => Err("connection closed".into()),
            Ok(_) => Ok(()),
        }
    }
}
