//! Load-generator connections (what `speedy bench` drives): one connection to one URL
//! that repeats a GET of it as fast as it is asked to, over SPDY or HTTP/3 (the
//! [`Client`]), HTTP/2 (the `h2` crate, large windows) or a lean HTTP/1.1 keep-alive
//! connection with
//! one request in flight, as h2load does. Timing, counting and reporting belong to the
//! caller; each GET returns the status and the body's length or a short error kind to
//! count by.
//!
//! ```no_run
//! # async fn f() -> Result<(), speedy_net::ClientError> {
//! use speedy_net::{loadgen::LoadConn, Protocol};
//! let url = "http://127.0.0.1:8080/a.html".parse().unwrap();
//! let conn = LoadConn::connect(&url, Protocol::H2, &speedy_net::tls::Verify::System).await?;
//! let bytes = conn.get().await;
//! # let _ = bytes; Ok(()) }
//! ```

use crate::client::{Client, ClientConfig, ClientError, ClientRequest};
use crate::protocol::Protocol;
use crate::transport::dial::{dial, tls_dial};
use crate::transport::io::BoxIo;
use crate::transport::tls::{client_config, Verify};
use bytes::{Buf, Bytes, BytesMut};
use spdy::url::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One open load connection to one URL. Shared by several tasks (`&self`), it carries
/// as many GETs at once as its protocol multiplexes; HTTP/1.1 takes them in turn.
pub struct LoadConn {
    path: String,
    uri: String,
    inner: Inner,
}

enum Inner {
    /// SPDY or HTTP/3, through the [`Client`].
    Client(Client),
    H2(h2::client::SendRequest<Bytes>),
    H1(tokio::sync::Mutex<H1>),
}

impl LoadConn {
    /// Opens a connection to `url`'s origin (TCP with `TCP_NODELAY`, TLS for `https`)
    /// and completes the protocol's handshake: SPDY through the [`Client`], h2 through
    /// the `h2` crate (prior knowledge on plain TCP, ALPN `h2` over TLS), HTTP/1.1 as a
    /// lean keep-alive connection with one request in flight. Errors name the address.
    pub async fn connect(
        url: &Url,
        protocol: Protocol,
        verify: &Verify,
    ) -> Result<LoadConn, ClientError> {
        let (host, port) = (url.host_bare(), url.port_or_default());
        let inner = match protocol {
            Protocol::H2 => Inner::H2(h2_connect(url, verify).await?),
            Protocol::Http1 => {
                let io = open(url, verify, "http/1.1").await?;
                Inner::H1(tokio::sync::Mutex::new(H1::new(io, url)))
            }
            Protocol::Spdy(_) | Protocol::H3 => {
                let cfg = ClientConfig {
                    protocol: Some(protocol),
                    verify: verify.clone(),
                    http1_connections: 1,
                    read_timeout: None,
                    ..Default::default()
                };
                Inner::Client(Client::connect(&url.scheme, host, port, &cfg).await?)
            }
        };
        Ok(LoadConn {
            path: url.path.clone(),
            uri: url.to_string(),
            inner,
        })
    }

    /// Header bytes this connection's SPDY session sent and received, raw and as sent
    /// on the wire; `None` over HTTP/1.1 (no compression) and h2 (the h2 crate does not
    /// report its HPACK sizes).
    pub async fn header_bytes(&self) -> Option<spdy::session::Stats> {
        match &self.inner {
            Inner::Client(c) => c.session_stats().await,
            _ => None,
        }
    }

    /// GETs the URL once and reads the whole body. `Ok`: the status (below 400) and the
    /// body's length; `Err`: a short error kind to count failures by (`http 404`,
    /// `stream reset`, `connection closed`, `connect`, `h2: …`).
    pub async fn get(&self) -> Result<(u16, u64), String> {
        match &self.inner {
            Inner::Client(cl) => {
                let resp = cl
                    .request(ClientRequest::get(&self.path))
                    .await
                    .map_err(|e| kind(&e.to_string()))?;
                if resp.status >= 400 {
                    return Err(format!("http {}", resp.status));
                }
                let mut body = resp.body;
                let mut n = 0u64;
                while let Some(c) = body.chunk().await {
                    n += c.map_err(|e| kind(&e.to_string()))?.len() as u64;
                }
                Ok((resp.status, n))
            }
            Inner::H1(h1) => h1.lock().await.roundtrip().await,
            Inner::H2(send) => {
                let mut s = send.clone().ready().await.map_err(|e| format!("h2: {e}"))?;
                let req = http::Request::get(&self.uri)
                    .body(())
                    .map_err(|e| e.to_string())?;
                let (resp, _) = s.send_request(req, true).map_err(|e| format!("h2: {e}"))?;
                let resp = resp.await.map_err(|e| format!("h2: {e}"))?;
                let status = resp.status().as_u16();
                if status >= 400 {
                    return Err(format!("http {status}"));
                }
                let mut body = resp.into_body();
                let mut n = 0u64;
                while let Some(d) = body.data().await {
                    let d = d.map_err(|e| format!("h2: {e}"))?;
                    let _ = body.flow_control().release_capacity(d.len());
                    n += d.len() as u64;
                }
                Ok((status, n))
            }
        }
    }
}

/// The error kind of a client error's text: the few kinds a load test tells apart, else
/// the text up to its first `:`.
fn kind(e: &str) -> String {
    if e.contains("reset") {
        "stream reset".into()
    } else if e.contains("closed") {
        "connection closed".into()
    } else if e.contains("connect") {
        "connect".into()
    } else {
        e.split(':').next().unwrap_or(e).to_string()
    }
}

/// TCP (no delay) to `url`'s host and port, then TLS offering `alpn` for `https`.
async fn open(url: &Url, verify: &Verify, alpn: &str) -> Result<BoxIo, ClientError> {
    let (host, port) = (url.host_bare(), url.port_or_default());
    if url.scheme == "https" {
        let tls = client_config(verify, &[alpn]).map_err(ClientError::Connect)?;
        Ok(tls_dial(host, port, None, tls).await?.0)
    } else {
        Ok(Box::new(dial(host, port, None).await?))
    }
}

/// SETTINGS_MAX_FRAME_SIZE announced by `speedy bench`'s h2 connections.
const BENCH_H2_MAX_FRAME: u32 = 1 << 20;

async fn h2_connect(
    url: &Url,
    verify: &Verify,
) -> Result<h2::client::SendRequest<Bytes>, ClientError> {
    let io = open(url, verify, "h2").await?;
    let (send, conn) = h2::client::Builder::new()
        // The generator accepts frames up to 1 MiB (RFC 9113 §6.5.2 allows 16 MiB): a
        // server that honours it frames a download in fewer, larger DATA frames.
        .max_frame_size(BENCH_H2_MAX_FRAME)
        .initial_window_size(crate::protocol::H2_STREAM_WINDOW)
        .initial_connection_window_size(crate::protocol::H2_SESSION_WINDOW)
        .handshake(io)
        .await
        .map_err(|e| ClientError::Connect(format!("h2 handshake with {}: {e}", url.authority())))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(send)
}

/// A lean HTTP/1.1 keep-alive connection: the request is formatted once, responses are
/// parsed in place (Content-Length bodies only) and skipped.
struct H1 {
    io: BoxIo,
    buf: BytesMut,
    request: Vec<u8>,
}

impl H1 {
    fn new(io: BoxIo, url: &Url) -> H1 {
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
    async fn roundtrip(&mut self) -> Result<(u16, u64), String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_error_kinds() {
        assert_eq!(kind("stream reset by peer: REFUSED_STREAM"), "stream reset");
        assert_eq!(kind("connection closed"), "connection closed");
        assert_eq!(kind("connect: 127.0.0.1:1: refused"), "connect");
        assert_eq!(kind("protocol error: bad frame"), "protocol error");
    }
}
