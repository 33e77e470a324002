//! HTTP/1.1 pipelining (RFC 9112 §9.3.2) on one connection: each request is written as
//! soon as it is asked for, without waiting for earlier responses, and responses are
//! read back in the order the requests went out. This is what `speedy fetch --pipeline`
//! and SST's Fig 8 ("HTTP/1.1 pipelined") use; hyper's client does not pipeline.
//!
//! A writer task connects, sends the requests and hands each one's reply slot, in
//! order, to a reader task, which parses the response head, gives the caller its body
//! as a stream, and reads that body (by `Content-Length`, chunked coding, or to the end
//! of the connection) before the next response. A body nobody reads is still read, so the
//! responses behind it are not stuck; one that is read slowly holds them up, as
//! pipelining does. When the connection fails, every request still waiting fails.

use crate::body::Body;
use crate::http1::response::{parse_head, BodyDecoder, Framing, Piece, ResponseHead};
use crate::reply::ClientError;
use crate::transport::io::BoxIo;
use bytes::{Bytes, BytesMut};
use futures_util::future::BoxFuture;
use std::future::Future;
use std::io;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadHalf};
use tokio::sync::{mpsc, oneshot};

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
    /// Starts the writer task, which makes the connection (`connect`: TCP, and TLS if
    /// any) and then its reader task. Requests may be queued at once: they go out in the
    /// order they were queued once the connection is up, and all fail with the
    /// connection's error if it cannot be made.
    pub fn new(connect: BoxFuture<'static, Result<BoxIo, ClientError>>) -> Pipeline {
        let (jobs, mut rx) = mpsc::unbounded_channel::<Job>();
        tokio::spawn(async move {
            let io = match connect.await {
                Ok(io) => io,
                Err(e) => {
                    while let Some(job) = rx.recv().await {
                        let _ = job.waiting.reply.send(Err(e.clone()));
                    }
                    return;
                }
            };
            let (rd, mut wr) = tokio::io::split(io);
            let (order_tx, order_rx) = mpsc::unbounded_channel::<Waiting>();
            tokio::spawn(read_responses(rd, order_rx));
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
        Pipeline { jobs }
    }

    /// Queues a request now (`head`: the request line and headers, ending with the blank
    /// line; `body`: its body, already announced in the head), so that requests go out
    /// in the order of these calls; the future waits for its response head.
    /// `head_only`: a HEAD request, whose response has no body.
    pub fn request(
        &self,
        head: Vec<u8>,
        body: &[u8],
        head_only: bool,
    ) -> impl Future<Output = Result<(http::response::Parts, Body), ClientError>> + use<> {
        let (reply, rx) = oneshot::channel();
        let mut bytes = head;
        bytes.extend_from_slice(body);
        let queued = self.jobs.send(Job {
            bytes,
            waiting: Waiting { head_only, reply },
        });
        async move {
            queued.map_err(|_| ClientError::Closed)?;
            rx.await.map_err(|_| ClientError::Closed)?
        }
    }
}

async fn read_responses<R: AsyncRead>(
    mut rd: ReadHalf<R>,
    mut order: mpsc::UnboundedReceiver<Waiting>,
) {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    while let Some(w) = order.recv().await {
        let head = loop {
            match read_head(&mut rd, &mut buf, w.head_only).await {
                Ok(h) if h.is_interim() => continue,
                Ok(h) => break h,
                Err(e) => {
                    let _ = w.reply.send(Err(ClientError::Http(e.to_string())));
                    fail_rest(&mut order).await;
                    return;
                }
            }
        };
        let parts = match response_parts(&head) {
            Ok(p) => p,
            Err(e) => {
                let _ = w.reply.send(Err(ClientError::Http(e)));
                fail_rest(&mut order).await;
                return;
            }
        };
        let len = match head.framing {
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
        if let Err(e) = read_body(&mut rd, &mut buf, head.framing, &tx).await {
            let _ = tx.send(Err(io::Error::new(e.kind(), e.to_string()))).await;
            fail_rest(&mut order).await;
            return;
        }
        if !head.keep_alive() {
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

/// Reads more bytes into `buf`; `false` at the end of the stream.
async fn fill<R: AsyncRead>(rd: &mut ReadHalf<R>, buf: &mut BytesMut) -> io::Result<bool> {
    buf.reserve(16 * 1024);
    Ok(rd.read_buf(buf).await? > 0)
}

async fn read_head<R: AsyncRead>(
    rd: &mut ReadHalf<R>,
    buf: &mut BytesMut,
    head_only: bool,
) -> io::Result<ResponseHead> {
    loop {
        if let Some(h) = parse_head(buf, head_only)? {
            return Ok(h);
        }
        if !fill(rd, buf).await? {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed by the server",
            ));
        }
    }
}

/// The head as `http`'s response parts.
fn response_parts(head: &ResponseHead) -> Result<http::response::Parts, String> {
    let mut b = http::Response::builder().status(head.status);
    for (n, v) in &head.headers {
        b = b.header(n.as_str(), v.as_slice());
    }
    b.body(())
        .map(|r| r.into_parts().0)
        .map_err(|e| format!("bad response head: {e}"))
}

/// Passes one body to `tx` (dropped when the reader is gone: a body nobody reads is
/// still read off the connection), leaving the bytes after it in `buf`.
async fn read_body<R: AsyncRead>(
    rd: &mut ReadHalf<R>,
    buf: &mut BytesMut,
    framing: Framing,
    tx: &mpsc::Sender<io::Result<Bytes>>,
) -> io::Result<()> {
    let mut dec = BodyDecoder::new(framing);
    loop {
        match dec.decode(buf)? {
            Some(Piece::Data(d)) => {
                let _ = tx.send(Ok(d)).await;
            }
            Some(Piece::End) => return Ok(()),
            None => {
                if !fill(rd, buf).await? {
                    return dec.eof();
                }
            }
        }
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
        let io: BoxIo = Box::new(client);
        let p = Pipeline::new(Box::pin(async move { Ok(io) }));
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
        let io: BoxIo = Box::new(client);
        let p = Pipeline::new(Box::pin(async move { Ok(io) }));
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
