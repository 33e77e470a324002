//! The HTTP/2 server (TLS with ALPN `h2`, or h2c with prior knowledge on the plain
//! port): this project's sans-IO connection ([`h2wire::server::ServerConnection`]) run by
//! the one connection loop (`crate::spdy::conn`) as SPDY's sessions are, answering the
//! same [`Handler`]. Requests go to the handler as soon as their head is complete (a body
//! streams in behind it, its window given back as the handler reads); answers come back
//! as a head plus a body pulled chunk by chunk while the stream's queue is short; pushes
//! are PUSH_PROMISEs ahead of the response; response DATA goes out by RFC 9218 urgency
//! (the `priority` field, PRIORITY_UPDATE, or RFC 7540 weights), round-robin within a
//! level, as `h2wire` schedules it.
//!
//! Limits: a declared `content-length` over `max_body` gets 413 before the handler sees
//! the request; a body that grows past it is cut off with RST_STREAM CANCEL; request-body
//! bytes held for handlers are bounded per connection (`max_buffered`): the connection is
//! not read while half of it waits. A connection with no open stream for `idle_timeout`,
//! or told to shut down, says GOAWAY and closes once its streams are done (one more
//! `idle_timeout` at most after an idle GOAWAY).

use crate::answering::{Answering, Delivery, Ready};
use crate::body::Body;
use crate::handler::{
    ready_for, response_fields as fields, Handler, Request, Response, ServerConfig,
};
use crate::limits::Shutdown;
use crate::spdy::conn::{self, Owner, Tuning, Wire};
use bytes::{Bytes, BytesMut};
use h2wire::frame::StreamId;
use h2wire::server::{Config, Event, RequestHead, ServerConnection};
use h2wire::ErrorCode;
use spdy::session::OutBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// A handler's answer: the stream, its authority (for pushes), the response.
type Answer = (StreamId, String, Response);

/// Serves one HTTP/2 connection on `io` until the client goes away.
pub(crate) async fn serve(
    io: crate::transport::io::BoxIo,
    scheme: &'static str,
    cfg: &ServerConfig,
    handler: Arc<dyn Handler>,
) -> std::io::Result<()> {
    let mut wire = H2 {
        conn: ServerConnection::new(Config {
            max_concurrent_streams: 100,
            initial_window_size: 1 << 20,
            connection_window_size: 8 << 20,
            // One bound for both protocols' header lists.
            max_header_list_size: cfg.spdy.max_header_block as u32,
            ..Config::default()
        }),
    };
    let limits = cfg.limits;
    let mut owner = H2Owner {
        scheme,
        handler,
        work: Answering::new(cfg),
        idle_timeout: limits.idle_timeout,
        // Before the first request: the client preface and SETTINGS get the sniffing time.
        idle_at: Instant::now() + limits.sniff_timeout.min(limits.idle_timeout),
        close_by: None,
        shutdown: cfg.shutdown.clone(),
        draining: false,
        peer_closed: false,
    };
    let tuning = Tuning {
        park_after: Some(limits.park_after),
        ..Tuning::SERVER
    };
    match conn::run(io, &mut wire, &mut owner, tuning).await {
        (conn::End::WriteFailed(e), _) => Err(e),
        _ => Ok(()),
    }
}

/// The connection as the loop drives it.
struct H2 {
    conn: ServerConnection,
}

impl Wire for H2 {
    type Event = Event;

    fn recv(&mut self, buf: &mut BytesMut, _now: std::time::Instant) {
        self.conn.recv_buf(buf);
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.conn.poll_event()
    }

    fn poll_transmit(&mut self, out: &mut OutBuf) -> bool {
        let mut wrote = 0;
        out.append_with(|tail| wrote = self.conn.poll_transmit(tail));
        wrote > 0
    }

    fn open_streams(&self) -> usize {
        self.conn.open_streams() as usize
    }
}

enum Input {
    Work(Ready<Answer>),
    /// The idle deadline passed (the connection decides whether it is idle).
    Idle,
    /// An idle GOAWAY was sent this long ago and the client has not finished.
    CloseBy,
    /// The server is shutting down.
    Shutdown,
}

struct H2Owner {
    scheme: &'static str,
    handler: Arc<dyn Handler>,
    /// Handlers, request and response bodies of the streams being answered.
    work: Answering<Answer>,
    idle_timeout: Duration,
    /// When the connection is looked at for idleness next; pushed back by every event.
    idle_at: Instant,
    /// After an idle GOAWAY: when the connection is closed whatever is left.
    close_by: Option<Instant>,
    shutdown: Shutdown,
    /// GOAWAY sent (idle or shutdown): streams finish, then the connection ends.
    draining: bool,
    peer_closed: bool,
}

/// Whether `stream` is still open on `conn` (not reset, not finished).
fn open(conn: &ServerConnection, stream: StreamId) -> bool {
    conn.urgency(stream).is_some()
}

impl H2Owner {
    fn on_request(
        &mut self,
        conn: &mut ServerConnection,
        id: StreamId,
        head: RequestHead,
        end: bool,
    ) {
        if self.work.too_long(head.content_length()) {
            // Refused unread; the rest of the body is not wanted (RFC 9113 §8.1).
            tracing::debug!("h2 stream {id}: declared body over --max-body: 413");
            let _ = conn.send_response(id, 413, &[("content-length", "0")], true);
            if !end {
                conn.reset(id, ErrorCode::NO_ERROR);
            }
            return;
        }
        if end && self.answer_ready(conn, id, &head) {
            return;
        }
        let body = match end {
            true => Body::empty(),
            false => self.work.upload(id.0, head.content_length()),
        };
        let text = |b: Option<&[u8]>| String::from_utf8_lossy(b.unwrap_or_default()).into_owned();
        let mut headers = spdy::Headers::new();
        for (n, v) in head.fields().iter() {
            headers.add(std::str::from_utf8(n).unwrap_or_default(), v);
        }
        let host = match head.authority() {
            Some(a) => text(Some(a)),
            None => text(head.fields().get(b"host")),
        };
        let req = Request {
            method: text(Some(head.method())),
            // CONNECT has no `:path`: "/", as the `http` crate's URI gave it.
            path: head
                .path()
                .map_or_else(|| "/".to_string(), |p| text(Some(p))),
            host: host.clone(),
            scheme: head
                .scheme()
                .map_or(self.scheme.to_string(), |s| text(Some(s))),
            headers,
            body,
            protocol: "h2",
            priority: None,
        };
        let handler = self.handler.clone();
        self.work
            .answer(async move { (id, host, handler.handle(req).await) });
    }

    /// Answers a bodiless GET or HEAD whose answer the handler knows already
    /// ([`Handler::ready`]) with the head and body the handler path would send, without a
    /// [`Request`] or a handler future; `false`: not such a request.
    fn answer_ready(
        &mut self,
        conn: &mut ServerConnection,
        id: StreamId,
        head: &RequestHead,
    ) -> bool {
        let (Ok(method), Some(Ok(path))) = (
            std::str::from_utf8(head.method()),
            head.path().map(std::str::from_utf8),
        ) else {
            return false;
        };
        let Some((head_only, r)) = ready_for(self.handler.as_ref(), method, path) else {
            return false;
        };
        let len = r.body.len().to_string();
        let fields = [
            ("content-type", r.content_type),
            ("content-length", len.as_str()),
        ];
        let empty = head_only || r.body.is_empty();
        if conn.send_response(id, 200, &fields, empty).is_ok() && !empty {
            let _ = conn.send_data(id, r.body, true);
        }
        true
    }

    fn on_data(&mut self, conn: &mut ServerConnection, id: StreamId, data: Bytes, end: bool) {
        match self.work.on_data(id.0, data, end) {
            Delivery::Taken => {}
            Delivery::Release(n) => conn.release_capacity(id, n),
            Delivery::Refuse(n) => {
                conn.release_capacity(id, n);
                conn.reset(id, ErrorCode::CANCEL);
            }
        }
    }

    /// Turns a handler's response into frames: pushes first (their PUSH_PROMISEs precede
    /// the response's HEADERS), then the head and the body.
    fn answer(&mut self, conn: &mut ServerConnection, id: StreamId, host: &str, resp: Response) {
        if !open(conn, id) {
            return; // reset meanwhile
        }
        if resp.reset.is_some() {
            conn.reset(id, ErrorCode::CANCEL);
            return;
        }
        for p in &resp.pushes {
            let req = [
                (":method", "GET"),
                (":scheme", self.scheme),
                (":authority", host),
                (":path", p.path.as_str()),
            ];
            let Ok(pid) = conn.push(id, &req) else {
                break;
            };
            let len = p.body.len().to_string();
            let head = fields(&p.headers, Some(&len));
            if conn
                .send_response(pid, p.status, &head, p.body.is_empty())
                .is_ok()
                && !p.body.is_empty()
            {
                let _ = conn.send_data(pid, p.body.clone(), true);
            }
        }
        let mut body = resp.body;
        let len = resp.head_len.or(body.len()).map(|n| n.to_string());
        let head = fields(&resp.headers, len.as_deref());
        let empty = body.is_empty();
        if conn.send_response(id, resp.status, &head, empty).is_err() {
            // A status or field HTTP/2 cannot carry: the handler's mistake, a 500.
            tracing::debug!("h2 stream {id}: response head refused: 500");
            let _ = conn.send_response(id, 500, &[("content-length", "0")], true);
            return;
        }
        if empty {
            return;
        }
        match body.take_full() {
            Some(b) => {
                let _ = conn.send_data(id, b, true);
            }
            None => self.work.pull(id.0, body),
        }
    }

    fn on_chunk(
        &mut self,
        conn: &mut ServerConnection,
        id: StreamId,
        body: Body,
        c: Option<std::io::Result<Bytes>>,
    ) {
        if !open(conn, id) {
            return; // reset by the client: the body is dropped
        }
        match c {
            Some(Ok(c)) => {
                if conn.send_data(id, c, false).is_ok() {
                    self.work.sent(id.0, body, conn.queued_data(id));
                }
            }
            None => {
                let _ = conn.send_data(id, Bytes::new(), true);
            }
            Some(Err(e)) => {
                tracing::debug!("h2 response body of stream {id}: {e}");
                conn.reset(id, ErrorCode::INTERNAL_ERROR);
            }
        }
    }

    fn goaway(&mut self, conn: &mut ServerConnection) {
        self.draining = true;
        conn.shutdown();
    }
}

impl Owner for H2Owner {
    type Wire = H2;
    type Input = Input;

    fn on_park(&mut self) {
        self.work.shrink();
    }

    fn on_event(&mut self, wire: &mut H2, ev: Event) {
        let conn = &mut wire.conn;
        self.idle_at = Instant::now() + self.idle_timeout;
        match ev {
            Event::Request {
                stream,
                head,
                end_stream,
            } => self.on_request(conn, stream, head, end_stream),
            Event::Data {
                stream,
                data,
                end_stream,
            } => self.on_data(conn, stream, data, end_stream),
            // Trailers end the request body.
            Event::Trailers { stream, .. } => self.work.end_upload(stream.0),
            Event::Reset { stream, .. } => self.work.forget(stream.0),
            Event::ConnectionError(e) => tracing::debug!("h2 connection error: {e}"),
            Event::Priority { .. } | Event::GoAway { .. } => {}
        }
    }

    fn after_transmit(&mut self, wire: &mut H2) {
        let conn = &wire.conn;
        self.work.resume(|id| conn.queued_data(StreamId(id)));
    }

    fn wants_read(&self) -> bool {
        self.work.wants_read()
    }

    fn wants_input(&self) -> bool {
        true // the idle timer and the shutdown signal are always armed
    }

    async fn next_input(&mut self) -> Option<Input> {
        let close_by = self.close_by;
        let close_by = async {
            match close_by {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            w = self.work.next() => Some(Input::Work(w)),
            _ = self.shutdown.wait(), if !self.draining => Some(Input::Shutdown),
            _ = tokio::time::sleep_until(self.idle_at), if !self.draining => Some(Input::Idle),
            _ = close_by => Some(Input::CloseBy),
        }
    }

    fn on_input(&mut self, wire: &mut H2, input: Input) {
        let conn = &mut wire.conn;
        match input {
            Input::Work(Ready::Answer((id, host, resp))) => self.answer(conn, id, &host, resp),
            Input::Work(Ready::Chunk(id, body, c)) => self.on_chunk(conn, StreamId(id), body, c),
            Input::Work(Ready::Release(id, n)) => {
                self.work.released(n);
                conn.release_capacity(StreamId(id), n);
            }
            Input::Idle if conn.open_streams() > 0 => {
                self.idle_at = Instant::now() + self.idle_timeout;
            }
            Input::Idle => {
                tracing::debug!("h2: idle for {:?}: GOAWAY", self.idle_timeout);
                self.goaway(conn);
                self.close_by = Some(Instant::now() + self.idle_timeout);
            }
            Input::CloseBy => {
                tracing::debug!("h2: did not close after GOAWAY: dropped");
                self.close_by = None;
                self.peer_closed = true;
                self.work.abandon();
            }
            Input::Shutdown => self.goaway(conn),
        }
    }

    fn on_peer_closed(&mut self, _wire: &mut H2) -> bool {
        self.peer_closed = true;
        true
    }

    fn finished(&self, wire: &H2) -> bool {
        // Once the client is gone, bodies parked on its windows can never move.
        wire.conn.is_done() || (self.peer_closed && self.work.is_idle())
    }
}
