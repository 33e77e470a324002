//! HTTP/2 over one connection with the `h2` crate: ALPN `h2` over TLS, prior knowledge
//! (h2c) on plain TCP. Every request goes out at once; server pushes are accepted.
//!
//! Limits: `h2` 0.4 sends no PRIORITY information, so the loader's priorities do not reach
//! the server over HTTP/2; HPACK's compressed sizes are not exposed, so header bytes are
//! reported uncompressed (RFC 7541 §4.1 sizes: name + value + 32 per field).

use super::{ConnCmd, ConnCounters, ConnCtx, ConnEvent, Driver, ReqId, WireRequest};
use bytes::Bytes;
use speedy_net::io::BoxIo;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// HTTP/2.
pub struct H2 {
    /// Per-stream receive window announced to the server.
    pub initial_window: u32,
    /// Connection receive window.
    pub connection_window: u32,
}

impl Default for H2 {
    /// Chromium's windows.
    fn default() -> Self {
        H2 {
            initial_window: speedy_net::protocol::H2_STREAM_WINDOW,
            connection_window: speedy_net::protocol::H2_SESSION_WINDOW,
        }
    }
}

impl Driver for H2 {
    fn name(&self) -> &'static str {
        "h2"
    }
    fn alpn(&self) -> &'static str {
        "h2"
    }
    fn depth(&self) -> usize {
        usize::MAX
    }
    fn run(&self, io: BoxIo, ctx: ConnCtx) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(drive(io, ctx, self.initial_window, self.connection_window))
    }
}

/// Counts bytes through a transport.
struct Counting {
    inner: BoxIo,
    read: Arc<AtomicU64>,
    written: Arc<AtomicU64>,
}

impl AsyncRead for Counting {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        r
    }
}

impl AsyncWrite for Counting {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &r {
            self.written.fetch_add(*n as u64, Ordering::Relaxed);
        }
        r
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = &r {
            self.written.fetch_add(*n as u64, Ordering::Relaxed);
        }
        r
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Headers an HTTP/2 request must not carry (RFC 7540 §8.1.2.2).
const CONNECTION_SPECIFIC: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "host",
];

fn hpack_size<'a>(it: impl Iterator<Item = (&'a str, &'a [u8])>) -> i64 {
    it.map(|(n, v)| (n.len() + v.len() + 32) as i64).sum()
}

/// A response head's headers (lower-case names) and its size as RFC 7541 §4.1 counts
/// it, `:status` included: what h2 and h3 report as uncompressed header bytes.
pub(crate) fn response_head(parts: &http::response::Parts) -> (Vec<(String, String)>, i64) {
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let raw = hpack_size(headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())))
        + 32
        + ":status".len() as i64
        + 3;
    (headers, raw)
}

/// A request head's size as RFC 7541 §4.1 counts it (name + value + 32 per field, the
/// four pseudo-headers included): the uncompressed header bytes of h2 and h3.
pub(crate) fn request_header_bytes(r: &WireRequest, req: &http::Request<()>) -> i64 {
    hpack_size(
        req.headers()
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_bytes())),
    ) + 4 * 32
        + (r.method.len() + r.scheme.len() + r.authority.len() + r.path.len()) as i64
        + ":method:scheme:authority:path".len() as i64
}

/// The `http` request for `r` (pseudo-headers and connection-specific headers dropped,
/// as h2 and h3 require), with its priority as RFC 9218's `priority` header: Chromium
/// sends it on h2 (`net/spdy/spdy_http_utils.cc`, `CreateSpdyHeadersFromHttpRequest`)
/// and h3, with urgency `HIGHEST - priority` (`net/quic/quic_http_utils.cc`,
/// `ConvertRequestPriorityToQuicPriority`: HIGHEST 0, MEDIUM 1, LOW 2, LOWEST 3, IDLE 4),
/// the numbers the loader already uses as SPDY priorities; left out for urgency 3, the
/// default. (Chromium also adds `, i` for incremental requests; not modelled.)
pub(crate) fn build(r: &WireRequest) -> Result<http::Request<()>, String> {
    let mut b = http::Request::builder()
        .method(r.method.as_str())
        .uri(format!("{}://{}{}", r.scheme, r.authority, r.path));
    if r.priority != 3 && !r.headers.iter().any(|(n, _)| n == "priority") {
        b = b.header("priority", format!("u={}", r.priority.min(7)));
    }
    for (n, v) in &r.headers {
        if n.starts_with(':') || CONNECTION_SPECIFIC.contains(&n.as_str()) {
            continue;
        }
        if n == "te" && v != "trailers" {
            continue;
        }
        b = b.header(n.as_str(), v.as_str());
    }
    b.body(()).map_err(|e| format!("bad request: {e}"))
}

async fn drive(io: BoxIo, mut ctx: ConnCtx, window: u32, conn_window: u32) {
    let read = Arc::new(AtomicU64::new(0));
    let written = Arc::new(AtomicU64::new(0));
    let io = Counting {
        inner: io,
        read: read.clone(),
        written: written.clone(),
    };
    let mut counters = ConnCounters::default();
    let hs = h2::client::Builder::new()
        .initial_window_size(window)
        .initial_connection_window_size(conn_window)
        .enable_push(true)
        // The same bound on a response head as over HTTP/1.1.
        .max_header_list_size(super::http1::MAX_HEAD as u32)
        .handshake::<_, Bytes>(io)
        .await;
    let (mut send, connection) = match hs {
        Ok(x) => x,
        Err(e) => {
            ctx.fail_until_close(format!("HTTP/2 handshake: {e}"), counters)
                .await;
            return;
        }
    };
    let conn_task = tokio::spawn(connection);
    let hdr_raw_sent = Arc::new(AtomicU64::new(0));
    let hdr_raw_recv = Arc::new(AtomicU64::new(0));
    let mut tasks: HashMap<ReqId, tokio::task::AbortHandle> = HashMap::new();
    let events = ctx.events.clone();
    let ids = ctx.ids.clone();
    while let Some(cmd) = ctx.cmds.recv().await {
        match cmd {
            ConnCmd::Send(r) => {
                let id = r.id;
                let req = match build(&r) {
                    Ok(q) => q,
                    Err(error) => {
                        ctx.emit(ConnEvent::Failed {
                            id,
                            at: Instant::now(),
                            error,
                            retry: false,
                        });
                        continue;
                    }
                };
                let raw = request_header_bytes(&r, &req);
                hdr_raw_sent.fetch_add(raw as u64, Ordering::Relaxed);
                let ready = match send.clone().ready().await {
                    Ok(s) => s,
                    Err(e) => {
                        ctx.emit(ConnEvent::Failed {
                            id,
                            at: Instant::now(),
                            error: format!("HTTP/2 connection: {e}"),
                            retry: true,
                        });
                        continue;
                    }
                };
                send = ready;
                match send.send_request(req, true) {
                    Ok((fut, _)) => {
                        ctx.emit(ConnEvent::Sent {
                            id,
                            at: Instant::now(),
                            header_bytes: raw,
                        });
                        let (ev, ids2, hr) = (events.clone(), ids.clone(), hdr_raw_recv.clone());
                        let conn = ctx.conn;
                        let h = tokio::spawn(async move {
                            request_task(fut, id, conn, ev, ids2, hr).await;
                        });
                        tasks.insert(id, h.abort_handle());
                    }
                    Err(e) => ctx.emit(ConnEvent::Failed {
                        id,
                        at: Instant::now(),
                        error: format!("HTTP/2: {e}"),
                        retry: e.is_go_away(),
                    }),
                }
            }
            ConnCmd::Cancel(id) => {
                if let Some(h) = tasks.remove(&id) {
                    h.abort();
                }
            }
            ConnCmd::Close => break,
            ConnCmd::Ping => {}
        }
        tasks.retain(|_, h| !h.is_finished());
    }
    counters.bytes_in = read.load(Ordering::Relaxed);
    counters.bytes_out = written.load(Ordering::Relaxed);
    counters.header_bytes_raw_sent = hdr_raw_sent.load(Ordering::Relaxed);
    counters.header_bytes_raw_received = hdr_raw_recv.load(Ordering::Relaxed);
    ctx.closed(counters);
    for (_, h) in tasks {
        h.abort();
    }
    drop(send);
    conn_task.abort();
}

/// One request: its pushes (promises that arrive before the response headers are
/// reported first, as on the wire), then its response.
async fn request_task(
    mut fut: h2::client::ResponseFuture,
    id: ReqId,
    conn: super::ConnId,
    events: tokio::sync::mpsc::UnboundedSender<ConnEvent>,
    ids: Arc<AtomicU64>,
    hdr_raw: Arc<AtomicU64>,
) {
    let mut pushes = fut.push_promises();
    let mut pushes_open = true;
    let resp = loop {
        tokio::select! {
            biased;
            p = pushes.push_promise(), if pushes_open => match p {
                Some(Ok(pp)) => accept_push(pp, id, conn, &events, &ids, &hdr_raw),
                _ => pushes_open = false,
            },
            r = &mut fut => break r,
        }
    };
    if pushes_open {
        let (ev, ids2, hr) = (events.clone(), ids.clone(), hdr_raw.clone());
        tokio::spawn(async move {
            while let Some(Ok(pp)) = pushes.push_promise().await {
                accept_push(pp, id, conn, &ev, &ids2, &hr);
            }
        });
    }
    receive(std::future::ready(resp), id, events, hdr_raw).await;
}

fn accept_push(
    pp: h2::client::PushPromise,
    assoc: ReqId,
    conn: super::ConnId,
    events: &tokio::sync::mpsc::UnboundedSender<ConnEvent>,
    ids: &Arc<AtomicU64>,
    hdr_raw: &Arc<AtomicU64>,
) {
    let (req, fut) = pp.into_parts();
    let id = ids.fetch_add(1, Ordering::Relaxed);
    let _ = events.send(ConnEvent::Pushed {
        conn,
        id,
        assoc: Some(assoc),
        url: req.uri().to_string(),
        at: Instant::now(),
    });
    tokio::spawn(receive(fut, id, events.clone(), hdr_raw.clone()));
}

async fn receive(
    fut: impl Future<Output = Result<http::Response<h2::RecvStream>, h2::Error>>,
    id: ReqId,
    events: tokio::sync::mpsc::UnboundedSender<ConnEvent>,
    hdr_raw: Arc<AtomicU64>,
) {
    let fail = |error: String, retry: bool| {
        let _ = events.send(ConnEvent::Failed {
            id,
            at: Instant::now(),
            error,
            retry,
        });
    };
    let resp = match fut.await {
        Ok(r) => r,
        Err(e) => {
            let retry = e.is_go_away() || e.reason() == Some(h2::Reason::REFUSED_STREAM);
            return fail(format!("HTTP/2: {e}"), retry);
        }
    };
    let (parts, mut body) = resp.into_parts();
    let (headers, raw) = response_head(&parts);
    hdr_raw.fetch_add(raw as u64, Ordering::Relaxed);
    let _ = events.send(ConnEvent::Head {
        id,
        first_byte: Instant::now(),
        status: parts.status.as_u16(),
        headers,
        header_bytes: raw,
    });
    while let Some(chunk) = body.data().await {
        match chunk {
            Ok(data) => {
                let _ = body.flow_control().release_capacity(data.len());
                let _ = events.send(ConnEvent::Data {
                    id,
                    at: Instant::now(),
                    data,
                });
            }
            Err(e) => return fail(format!("HTTP/2 body: {e}"), false),
        }
    }
    let _ = events.send(ConnEvent::End {
        id,
        at: Instant::now(),
    });
}
