//! HTTP/2 through the `h2` crate (TLS with ALPN `h2`, or h2c with prior knowledge on the
//! plain port), answering with the same [`Handler`] as SPDY and HTTP/1.1. Pushes are
//! sent as PUSH_PROMISEs ahead of the response.

use crate::body::Body;
use crate::h2::priority::{parse_priority_field, FrameTap, Scheduler};
use crate::handler::{ready_for, Handler, Ready, Request, Response, ServerConfig};
use crate::transport::io::{BoxIo, LazyFlush};
use bytes::Bytes;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use tokio::time::Instant;

/// Serves one HTTP/2 connection. Header lists are bounded by the SPDY header-block
/// limit (one number for both); a connection with no open stream for
/// `idle_timeout`, or told to shut down, gets GOAWAY and drains its streams (a peer
/// that does not let it finish is dropped one `idle_timeout` after an idle GOAWAY).
/// The h2 crate writes each frame with its own system call (one per 16 KiB DATA frame
/// at the default frame size); frames it produces in one turn are gathered up to this
/// many bytes and written together, as the SPDY loop does
/// (`crate::spdy::conn::OUT_HIGH`).
const H2_WRITE_BATCH: usize = 128 * 1024;
/// One frame at the default SETTINGS_MAX_FRAME_SIZE.
const FRAME: usize = 16 * 1024;
/// The most a stream sending alone may have handed the crate and not yet seen written
/// (it may have what the socket took in the last 10 ms, between `CONTENDED` and this):
/// large enough on a fast link for the crate to write large frames to a peer that
/// allows them (`speedy bench` asks for 1 MiB) and to batch writes.
const ALONE: usize = 4 * H2_WRITE_BATCH;
/// Data a stream may have handed the crate and not yet seen written to the socket
/// while others send too (counted by the `FrameTap` below the crate's write buffer):
/// two frames, so a priority change shows within two frames of each stream.
const CONTENDED: usize = 2 * FRAME;

pub(crate) async fn serve(
    io: BoxIo,
    scheme: &'static str,
    cfg: &ServerConfig,
    handler: Arc<dyn Handler>,
) -> std::io::Result<()> {
    let limits = cfg.limits;
    let max_body = cfg.max_body;
    let body_read_timeout = cfg.limits.body_read_timeout;
    let sched = Arc::new(Scheduler::new(CONTENDED, ALONE));
    let io = LazyFlush::new(tokio::io::BufWriter::with_capacity(
        H2_WRITE_BATCH,
        FrameTap::new(io, sched.clone()),
    ));
    // Held while the loop answers requests the connection has already read.
    let hold = io.holder();
    let handshake = h2::server::Builder::new()
        .max_concurrent_streams(100)
        .initial_window_size(1 << 20)
        .initial_connection_window_size(8 << 20)
        .max_header_list_size(cfg.spdy.max_header_block as u32)
        .max_send_buffer_size(2 * ALONE)
        .handshake::<_, Bytes>(io);
    // Over TLS the preface was not sniffed yet: it gets the sniffing time.
    let mut conn = tokio::time::timeout(limits.sniff_timeout, handshake)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "h2 preface"))?
        .map_err(std::io::Error::other)?;
    let active = Arc::new(AtomicUsize::new(0));
    let shutdown = cfg.shutdown.clone();
    let mut idle_at = Instant::now() + limits.idle_timeout;
    // When a GOAWAY was sent because of idleness: the connection is dropped if it has
    // not finished by then.
    let mut close_by: Option<Instant> = None;
    let mut draining = false;
    // A request the connection had read already, taken without waiting.
    let mut ready = None;
    let mut in_a_row = 0;
    loop {
        let next = if let Some(n) = ready.take() {
            n
        } else {
            hold.store(false, Ordering::Relaxed);
            in_a_row = 0;
            tokio::select! {
            n = conn.accept() => n,
            _ = shutdown.wait(), if !draining => {
                draining = true;
                conn.graceful_shutdown();
                continue;
            }
            _ = tokio::time::sleep_until(idle_at), if close_by.is_none() => {
                if active.load(Ordering::Acquire) > 0 || draining {
                    idle_at = Instant::now() + limits.idle_timeout;
                } else {
                    tracing::debug!("h2: idle for {:?}: GOAWAY", limits.idle_timeout);
                    draining = true;
                    conn.graceful_shutdown();
                    close_by = Some(Instant::now() + limits.idle_timeout);
                }
                continue;
            }
            _ = sleep_until_opt(close_by) => {
                tracing::debug!("h2: did not close after GOAWAY: dropped");
                break;
            }
            }
        };
        let Some(next) = next else { break };
        let (req, respond) = match next {
            Ok(x) => x,
            Err(e) => {
                tracing::debug!("h2: {e}");
                break;
            }
        };
        idle_at = Instant::now() + limits.idle_timeout;
        let guard = Active::new(&active);
        dispatch(
            answer(
                req,
                respond,
                scheme,
                max_body,
                body_read_timeout,
                handler.clone(),
                sched.clone(),
            ),
            guard,
        );
        // The next request if the connection has read it already, answered before
        // anything is flushed: a batch of requests gets its answers in one write. Polled
        // with this task's own waker, which the connection keeps to be woken by the
        // streams' tasks (a no-op waker there would leave their data unsent).
        in_a_row += 1;
        if in_a_row < MAX_HELD && !draining {
            hold.store(true, Ordering::Relaxed);
            ready = match std::future::poll_fn(|cx| Poll::Ready(conn.poll_accept(cx))).await {
                Poll::Ready(n) => Some(n),
                Poll::Pending => None,
            };
        }
    }
    Ok(())
}

/// Requests answered in a row before their answers are flushed whatever else the
/// connection has read.
const MAX_HELD: usize = 64;

/// Answers one stream: at once, in the connection's own task, when the handler has the
/// response at once (a cached file, an archived object): no task per stream, and it goes
/// out with the connection's next write instead of after every other stream's task has
/// run. Anything that waits (a body to read, a file to stream) gets its own task, whose
/// first poll registers the wakers this one could not. `guard` counts the stream active
/// until then.
fn dispatch(
    answering: impl std::future::Future<Output = Result<(), h2::Error>> + Send + 'static,
    guard: Active,
) {
    let mut answering = Box::pin(answering);
    match futures_util::FutureExt::now_or_never(answering.as_mut()) {
        Some(r) => {
            if let Err(e) = r {
                tracing::debug!("h2 stream: {e}");
            }
            drop(guard);
        }
        None => {
            tokio::spawn(async move {
                if let Err(e) = answering.await {
                    tracing::debug!("h2 stream: {e}");
                }
                drop(guard);
            });
        }
    }
}

/// Sleeps until `at`, or forever when there is no deadline.
async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Counts a stream being answered while it lives.
struct Active(Arc<AtomicUsize>);

impl Active {
    fn new(n: &Arc<AtomicUsize>) -> Active {
        n.fetch_add(1, Ordering::AcqRel);
        Active(n.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

async fn answer(
    req: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    scheme: &'static str,
    max_body: usize,
    body_read_timeout: std::time::Duration,
    handler: Arc<dyn Handler>,
    sched: Arc<Scheduler>,
) -> Result<(), h2::Error> {
    let (parts, body) = req.into_parts();
    let id: u32 = respond.stream_id().into();
    if let Some(u) = parts
        .headers
        .get("priority")
        .and_then(|v| parse_priority_field(v.as_bytes()))
    {
        sched.set_default(id, u);
    }
    if let Some((head_only, r)) = ready(&parts, body.is_end_stream(), handler.as_ref()) {
        return send_ready(respond, head_only, r);
    }
    let host = parts
        .uri
        .authority()
        .map(|a| a.as_str().to_string())
        .unwrap_or_default();
    let r = Request::from_parts(&parts, host.clone(), scheme, "h2", |len| {
        Body::h2(body, len, max_body).with_read_timeout(body_read_timeout)
    });
    if r.body.len().is_some_and(|n| n > max_body as u64) {
        // Refused unread: h2 follows the 413 with RST_STREAM NO_ERROR once the request
        // body is dropped (RFC 9113 §8.1).
        drop(r);
        let head = build(413, &[], Some(0)).expect("plain 413");
        respond.send_response(head, true)?;
        return Ok(());
    }
    let resp: Response = handler.handle(r).await;
    if resp.reset.is_some() {
        respond.send_reset(h2::Reason::CANCEL);
        return Ok(());
    }
    for p in &resp.pushes {
        let uri = format!(
            "{}://{}{}",
            parts.uri.scheme_str().unwrap_or(scheme),
            host,
            p.path
        );
        let Ok(preq) = http::Request::builder().method("GET").uri(uri).body(()) else {
            continue;
        };
        let Ok(mut pushed) = respond.push_request(preq) else {
            break;
        };
        let Ok(presp) = build(p.status, &p.headers, Some(p.body.len() as u64)) else {
            continue;
        };
        if let Ok(mut s) = pushed.send_response(presp, p.body.is_empty()) {
            if !p.body.is_empty() {
                let _ = s.send_data(p.body.clone(), true);
            }
        }
    }
    let mut body = resp.body;
    let head = match build(resp.status, &resp.headers, resp.head_len.or(body.len())) {
        Ok(h) => h,
        Err(_) => {
            body = Body::empty();
            build(500, &[], Some(0)).expect("plain 500")
        }
    };
    let empty = body.is_empty();
    let mut send = respond.send_response(head, empty)?;
    if empty {
        return Ok(());
    }
    let mut full = body.take_full();
    if let Some(b) = full.take_if(|b| b.len() <= FRAME) {
        // One frame: no turn to wait for.
        return send.send_data(b, true);
    }
    // A frame's worth at a time, each when the scheduler says it is this stream's turn
    // and the peer's window took the previous one: h2 would otherwise buffer whatever
    // it is given, and send it round-robin whatever the priorities.
    let _sending = sched.sending(id);
    loop {
        let mut c = match full.take() {
            Some(b) => b,
            None => match body.chunk().await {
                Some(Ok(c)) => c,
                Some(Err(e)) => {
                    tracing::debug!("h2 response body: {e}");
                    send.send_reset(h2::Reason::INTERNAL_ERROR);
                    return Ok(());
                }
                None => break,
            },
        };
        while !c.is_empty() {
            sched.turn(id).await;
            let want = c.len().min(sched.allowance(id).max(1));
            send.reserve_capacity(want);
            let cap = match std::future::poll_fn(|cx| send.poll_capacity(cx)).await {
                Some(cap) => cap?,
                None => return Ok(()), // stream gone
            };
            if !sched.is_turn(id) {
                // A more urgent stream came while this one waited for the window.
                send.reserve_capacity(0);
                continue;
            }
            let part = c.split_to(cap.min(want));
            sched.handed(id, part.len());
            send.send_data(part, false)?;
        }
    }
    send.send_data(Bytes::new(), true)
}

/// A bodiless GET or HEAD (`true`) whose answer the handler knows already
/// ([`Handler::ready`]) and that fits one frame: answered without a [`Request`], a
/// handler future or the scheduler (nothing to schedule).
fn ready(
    parts: &http::request::Parts,
    bodiless: bool,
    handler: &dyn Handler,
) -> Option<(bool, Ready)> {
    if !bodiless {
        return None;
    }
    let (head_only, r) = ready_for(
        handler,
        parts.method.as_str(),
        parts.uri.path_and_query()?.as_str(),
    )?;
    (head_only || r.body.len() <= FRAME).then_some((head_only, r))
}

/// Sends a ready answer with the head the handler path builds for it.
fn send_ready(
    mut respond: h2::server::SendResponse<Bytes>,
    head_only: bool,
    r: Ready,
) -> Result<(), h2::Error> {
    let ct = [("content-type".to_string(), r.content_type.to_string())];
    let head = build(200, &ct, Some(r.body.len() as u64)).expect("plain head");
    let empty = head_only || r.body.is_empty();
    let mut send = respond.send_response(head, empty)?;
    match empty {
        true => Ok(()),
        false => send.send_data(r.body, true),
    }
}

/// A response head for the `http` crate's h2 and h3 servers: hop-by-hop headers and any
/// handler-set `content-length` dropped, `len` (when known) sent as `content-length`.
pub(crate) fn build(
    status: u16,
    headers: &[(String, String)],
    len: Option<u64>,
) -> Result<http::Response<()>, http::Error> {
    let mut b = http::Response::builder().status(status);
    for (n, v) in headers {
        if spdy::http::HOP_BY_HOP.contains(&n.as_str()) || n == "content-length" || n == "host" {
            continue;
        }
        b = b.header(n.as_str(), v.as_str());
    }
    match len {
        Some(n) => b.header("content-length", n.to_string()).body(()),
        None => b.body(()),
    }
}
