//! HTTP/1.1 pipelining (RFC 9112 §9.3.2) on one connection: each request is written as
//! soon as it is asked for, without waiting for earlier responses, and responses are
//! read back in the order the requests went out. This is what `speedy fetch --pipeline`
//! and SST's Fig 8 ("HTTP/1.1 pipelined") use; hyper's client does not pipeline.
//!
//! A writer task sends the requests and hands each one's reply slot, in order, to a
//! reader task, which parses the response head, gives the caller its body as a stream,
//! and reads that body (by `Content-Length`, chunked coding, or to the end of the
//! connection) before the next response. A body nobody reads is still read, so the
//! responses behind it are not stuck; one that is read slowly holds them up, as
//! pipelining does. When the connection fails, every request still waiting fails.

use crate::body::Body;
use crate::client::ClientError;
use crate::io::BoxIo;
use bytes::{Buf, Bytes, BytesMut};
use std::io;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadHalf};
use tokio::sync::{mpsc, oneshot};

/// The largest response head read (status line and headers).
const MAX_HEAD: usize = 64 * 1024;
/// Most headers in a response head.
const MAX_HEADERS: usize = 128;

type Reply = oneshot::Sender<Result<(http::response::Parts, Body), ClientError>>;

/// A request waiting for its response: whether the response has no body (HEAD), and
/// where to send it.
struct Waiting {
    head_only: bool,
    reply: Reply,
}

struct Job {
    bytes: Vec<u8>,
    waiting: Waiting,
}

/// One pipelined HTTP/1.1 connection.
pub struct Pipeline {
    jobs: mpsc::UnboundedSender<Job>,
}

impl Pipeline {
    /// Takes over `io` (connected, TLS done) and starts its writer and reader tasks.
    pub fn new(io: BoxIo) -> Pipeline {
        let (rd, mut wr) = tokio::io::split(io);
        let (jobs, mut rx) = mpsc::unbounded_channel::<Job>();
        let (order_tx, order_rx) = mpsc::unbounded_channel::<Waiting>();
        tokio::spawn(async move {
            while let Some(job) = rx.recv().await {
                let r = async {
                    wr.write_all(&job.bytes).await?;
                    wr.flush().await
                }
                .await;
                if let Err(e) = r {
                    let _ = job
                        .waiting
                        .reply
                        .send(Err(ClientError::Http(format!("writing the request: {e}"))));
                    break;
                }
                if order_tx.send(job.waiting).is_err() {
                    break;
                }
            }
        });
        tokio::spawn(read_responses(rd, order_rx));
        Pipeline { jobs }
    }

    /// Sends a request (`head`: the request line and headers, ending with the blank
    /// line; `body`: its body, already announced in the head) and waits for its
    /// response head. `head_only`: a HEAD request, whose response has no body.
    pub async fn request(
        &self,
        head: Vec<u8>,
        body: &[u8],
        head_only: bool,
    ) -> Result<(http::response::Parts, Body), ClientError> {
        let (reply, rx) = oneshot::channel();
        let mut bytes = head;
        bytes.extend_from_slice(body);
        self.jobs
            .send(Job {
                bytes,
                waiting: Waiting { head_only, reply },
            })
            .map_err(|_| ClientError::Closed)?;
        rx.await.map_err(|_| ClientError::Closed)?
    }
}

/// How a response body ends.
#[derive(Debug, PartialEq)]
enum Framing {
    None,
    Length(u64),
    Chunked,
    Close,
}

async fn read_responses<R: AsyncRead>(
    mut rd: ReadHalf<R>,
    mut order: mpsc::UnboundedReceiver<Waiting>,
) {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    while let Some(w) = order.recv().await {
        let (parts, framing) = loop {
            match read_head(&mut rd, &mut buf, w.head_only).await {
                // 1xx: informational, the final response follows.
                Ok((p, _)) if p.status.is_informational() => continue,
                Ok(r) => break r,
                Err(e) => {
                    let _ = w.reply.send(Err(ClientError::Http(e.to_string())));
                    fail_rest(&mut order).await;
                    return;
                }
            }
        };
        let len = match framing {
            Framing::Length(n) => Some(n),
            Framing::None => Some(0),
            _ => None,
        };
        let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(8);
        let body = Body::stream(
            futures_util::stream::unfold(
                rx,
                |mut rx| async move { rx.recv().await.map(|c| (c, rx)) },
            ),
            len,
        );
        let _ = w.reply.send(Ok((parts, body)));
        let close = framing == Framing::Close;
        if let Err(e) = read_body(&mut rd, &mut buf, framing, &tx).await {
            let _ = tx.send(Err(io::Error::new(e.kind(), e.to_string()))).await;
            fail_rest(&mut order).await;
            return;
        }
        if close {
            fail_rest(&mut order).await;
            return;
        }
    }
}

/// Fails every request still waiting: the connection is gone.
async fn fail_rest(order: &mut mpsc::UnboundedReceiver<Waiting>) {
    order.close();
    while let Some(w) = order.recv().await {
        let _ = w.reply.send(Err(ClientError::Http(
            "the pipelined connection ended before this response".into(),
        )));
    }
}

/// Reads more bytes into `buf`; an error at the end of the stream.
async fn fill<R: AsyncRead>(rd: &mut ReadHalf<R>, buf: &mut BytesMut) -> io::Result<()> {
    buf.reserve(16 * 1024);
    if rd.read_buf(buf).await? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed by the server",
        ));
    }
    Ok(())
}

async fn read_head<R: AsyncRead>(
    rd: &mut ReadHalf<R>,
    buf: &mut BytesMut,
    head_only: bool,
) -> io::Result<(http::response::Parts, Framing)> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let bad = |e: String| io::Error::new(io::ErrorKind::InvalidData, e);
        match resp
            .parse(buf)
            .map_err(|e| bad(format!("bad response head: {e}")))?
        {
            httparse::Status::Complete(n) => {
                let status = resp.code.unwrap_or(0);
                let mut b = http::Response::builder().status(status);
                let mut framing = None;
                let mut chunked = false;
                for h in resp.headers.iter() {
                    if h.name.eq_ignore_ascii_case("content-length") {
                        let n = std::str::from_utf8(h.value)
                            .ok()
                            .and_then(|v| v.trim().parse::<u64>().ok())
                            .ok_or_else(|| bad("bad content-length".into()))?;
                        if framing.is_some_and(|f| f != n) {
                            return Err(bad("conflicting content-length headers".into()));
                        }
                        framing = Some(n);
                    } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                        chunked = h
                            .value
                            .rsplit(|&c| c == b',')
                            .next()
                            .is_some_and(|v| v.trim_ascii().eq_ignore_ascii_case(b"chunked"));
                    }
                    b = b.header(h.name, h.value);
                }
                let parts = b
                    .body(())
                    .map_err(|e| bad(format!("bad response head: {e}")))?
                    .into_parts()
                    .0;
                buf.advance(n);
                let framing = if head_only
                    || parts.status.is_informational()
                    || parts.status == 204
                    || parts.status == 304
                {
                    Framing::None
                } else if chunked {
                    Framing::Chunked
                } else if let Some(n) = framing {
                    Framing::Length(n)
                } else {
                    Framing::Close
                };
                return Ok((parts, framing));
            }
            httparse::Status::Partial => {
                if buf.len() > MAX_HEAD {
                    return Err(bad(format!("response head over {MAX_HEAD} bytes")));
                }
                fill(rd, buf).await?;
            }
        }
    }
}

/// Passes one body to `tx` (or drops it when the reader is gone), leaving the bytes
/// after it in `buf`.
async fn read_body<R: AsyncRead>(
    rd: &mut ReadHalf<R>,
    buf: &mut BytesMut,
    framing: Framing,
    tx: &mpsc::Sender<io::Result<Bytes>>,
) -> io::Result<()> {
    match framing {
        Framing::None => Ok(()),
        Framing::Length(n) => pass(rd, buf, n, tx).await,
        Framing::Close => loop {
            if buf.is_empty() {
                match fill(rd, buf).await {
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
                    r => r?,
                }
            }
            let n = buf.len();
            let _ = tx.send(Ok(buf.split_to(n).freeze())).await;
        },
        Framing::Chunked => {
            let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
            loop {
                let line = read_line(rd, buf).await?;
                let size = std::str::from_utf8(&line)
                    .ok()
                    .and_then(|l| l.split(';').next())
                    .and_then(|s| u64::from_str_radix(s.trim(), 16).ok())
                    .ok_or_else(|| bad("bad chunk size"))?;
                if size == 0 {
                    // Trailers, up to the blank line.
                    while !read_line(rd, buf).await?.is_empty() {}
                    return Ok(());
                }
                pass(rd, buf, size, tx).await?;
                if !read_line(rd, buf).await?.is_empty() {
                    return Err(bad("chunk data longer than its size"));
                }
            }
        }
    }
}

/// Passes the next `left` bytes of the connection to `tx` (dropped when the reader is
/// gone: a body nobody reads is still read off the connection).
async fn pass<R: AsyncRead>(
    rd: &mut ReadHalf<R>,
    buf: &mut BytesMut,
    mut left: u64,
    tx: &mpsc::Sender<io::Result<Bytes>>,
) -> io::Result<()> {
    while left > 0 {
        if buf.is_empty() {
            fill(rd, buf).await?;
        }
        let n = (buf.len() as u64).min(left) as usize;
        left -= n as u64;
        let _ = tx.send(Ok(buf.split_to(n).freeze())).await;
    }
    Ok(())
}

/// One line (without its CRLF or LF), at most `MAX_HEAD` bytes.
async fn read_line<R: AsyncRead>(rd: &mut ReadHalf<R>, buf: &mut BytesMut) -> io::Result<Bytes> {
    loop {
        if let Some(i) = buf.iter().position(|&c| c == b'\n') {
            let mut line = buf.split_to(i + 1);
            line.truncate(i);
            if line.last() == Some(&b'\r') {
                line.truncate(i - 1);
            }
            return Ok(line.freeze());
        }
        if buf.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a chunk line over 64 KiB",
            ));
        }
        fill(rd, buf).await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// Three requests on one connection: written before any response, answered in
    /// order with three framings (length, chunked with a trailer, HEAD), then a body
    /// read to the end of the connection.
    #[tokio::test]
    async fn responses_come_back_in_order_whatever_their_framing() {
        let (client, mut server) = tokio::io::duplex(64 * 1024);
        let p = Pipeline::new(Box::new(client));
        let srv = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut b = [0u8; 4096];
            while got.windows(4).filter(|w| w == b"\r\n\r\n").count() < 4 {
                let n = server.read(&mut b).await.unwrap();
                got.extend_from_slice(&b[..n]);
            }
            // All four requests arrived before any answer was written.
            server
                .write_all(
                    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello\
                      HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nt: 1\r\n\r\n\
                      HTTP/1.1 200 OK\r\ncontent-length: 99\r\n\r\n\
                      HTTP/1.1 404 Not Found\r\n\r\nrest",
                )
                .await
                .unwrap();
            drop(server);
            String::from_utf8(got).unwrap()
        });
        let req =
            |path: &str, m: &str| format!("{m} {path} HTTP/1.1\r\nhost: x\r\n\r\n").into_bytes();
        let (a, b, c, d) = tokio::join!(
            p.request(req("/a", "GET"), b"", false),
            p.request(req("/b", "GET"), b"", false),
            p.request(req("/c", "HEAD"), b"", true),
            p.request(req("/d", "GET"), b"", false),
        );
        let body = |r: Result<(http::response::Parts, Body), ClientError>| async move {
            let (parts, mut b) = r.unwrap();
            let mut v = Vec::new();
            while let Some(c) = b.chunk().await {
                v.extend_from_slice(&c.unwrap());
            }
            (parts.status.as_u16(), String::from_utf8(v).unwrap())
        };
        assert_eq!(body(a).await, (200, "hello".into()));
        assert_eq!(body(b).await, (200, "abcde".into()));
        assert_eq!(body(c).await, (200, String::new()));
        assert_eq!(body(d).await, (404, "rest".into()));
        let sent = srv.await.unwrap();
        let order: Vec<&str> = sent.lines().filter(|l| l.contains(" HTTP/1.1")).collect();
        assert_eq!(
            order,
            [
                "GET /a HTTP/1.1",
                "GET /b HTTP/1.1",
                "HEAD /c HTTP/1.1",
                "GET /d HTTP/1.1"
            ]
        );
        // The connection is gone: a later request fails with a clear error.
        assert!(p.request(req("/e", "GET"), b"", false).await.is_err());
    }

    #[tokio::test]
    async fn a_connection_that_ends_early_fails_every_waiting_request() {
        let (client, mut server) = tokio::io::duplex(4096);
        let p = Pipeline::new(Box::new(client));
        tokio::spawn(async move {
            let mut b = [0u8; 256];
            let _ = server.read(&mut b).await;
            server
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort")
                .await
                .unwrap();
        });
        let req = |p: &str| format!("GET {p} HTTP/1.1\r\nhost: x\r\n\r\n").into_bytes();
        let (a, b) = tokio::join!(
            p.request(req("/a"), b"", false),
            p.request(req("/b"), b"", false)
        );
        let (_, mut body) = a.unwrap();
        let mut err = None;
        while let Some(c) = body.chunk().await {
            if let Err(e) = c {
                err = Some(e);
            }
        }
        assert!(err.is_some(), "a body cut short is an error");
        assert!(b.is_err());
    }
}
