//! SPDY over one connection: the loader's session driver, an owner of
//! `speedy_net::spdy::conn`'s one connection loop. It maps the session's events straight
//! onto loader events, so
//! each request's `:host` can name any origin (single-domain mode), pushes arrive with
//! fresh ids, and the session's header byte counters (raw and compressed) are reported.

use super::{ConnCmd, ConnCounters, ConnCtx, ConnEvent, Driver, ReqId};
use spdy::session::Event;
use spdy::{Headers, RstStatus, Session, StreamId, Version};
use speedy_net::io::BoxIo;
use speedy_net::spdy::conn::{self, Owner, Tuning};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

/// SPDY of a version (3.1 by default), over TLS (ALPN) or prior knowledge on TCP.
pub struct Spdy {
    /// The version.
    pub version: Version,
    /// Session settings (role and version are set here).
    pub config: spdy::Config,
}

impl Spdy {
    /// SPDY/3.1 with the library's defaults.
    pub fn v31() -> Spdy {
        Spdy {
            version: Version::V3_1,
            config: spdy::Config::new(spdy::Role::Client, Version::V3_1),
        }
    }
}

impl Driver for Spdy {
    fn name(&self) -> &'static str {
        self.version.alpn()
    }
    fn alpn(&self) -> &'static str {
        self.version.alpn()
    }
    fn depth(&self) -> usize {
        usize::MAX
    }
    fn run(&self, io: BoxIo, ctx: ConnCtx) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let mut cfg = self.config.clone();
        cfg.role = spdy::Role::Client;
        cfg.version = self.version;
        cfg.accept_push = true;
        Box::pin(drive(io, cfg, ctx))
    }
}

struct StreamState {
    id: ReqId,
    /// Response headers reported.
    head: bool,
}

fn to_pairs(h: &Headers) -> Vec<(String, String)> {
    h.iter()
        .map(|(n, v)| {
            (
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
        .collect()
}

async fn drive(io: BoxIo, cfg: spdy::Config, ctx: ConnCtx) {
    let mut session = Session::new(cfg);
    let mut owner = LoaderOwner {
        version: session.version(),
        ctx,
        streams: HashMap::new(),
        by_req: HashMap::new(),
        closing: false,
    };
    let (_, traffic) = conn::run(io, &mut session, &mut owner, Tuning::CLIENT).await;
    let LoaderOwner {
        ctx, mut streams, ..
    } = owner;
    // Anything still open is lost with the connection.
    for (_, st) in streams.drain() {
        ctx.emit(ConnEvent::Failed {
            id: st.id,
            at: Instant::now(),
            error: "connection closed".into(),
            retry: !st.head,
        });
    }
    let s = session.stats();
    let counters = ConnCounters {
        bytes_in: traffic.bytes_in,
        bytes_out: traffic.bytes_out,
        header_bytes_raw_sent: s.header_bytes_raw_sent,
        header_bytes_sent: s.header_bytes_compressed_sent,
        header_bytes_raw_received: s.header_bytes_raw_received,
        header_bytes_received: s.header_bytes_compressed_received,
        wire_headers: true,
        frames_sent: s.frames_sent,
        frames_received: s.frames_received,
    };
    ctx.closed(counters);
}

/// The loader's side of a SPDY session, on the one connection loop.
struct LoaderOwner {
    version: Version,
    ctx: ConnCtx,
    streams: HashMap<StreamId, StreamState>,
    by_req: HashMap<ReqId, StreamId>,
    closing: bool,
}

impl Owner for LoaderOwner {
    type Wire = Session;
    type Input = Option<ConnCmd>;

    fn on_event(&mut self, session: &mut Session, ev: Event) {
        let mut e = Events {
            version: self.version,
            ctx: &self.ctx,
            streams: &mut self.streams,
            by_req: &mut self.by_req,
            now: Instant::now(),
        };
        e.on_event(session, ev);
    }

    fn wants_input(&self) -> bool {
        !self.closing
    }

    async fn next_input(&mut self) -> Option<Option<ConnCmd>> {
        Some(self.ctx.cmds.recv().await)
    }

    fn on_input(&mut self, session: &mut Session, cmd: Option<ConnCmd>) {
        match cmd {
            None | Some(ConnCmd::Close) => {
                self.closing = true;
                session.goaway(spdy::GoAwayStatus::OK);
            }
            Some(ConnCmd::Send(r)) => self.send(session, r),
            Some(ConnCmd::Ping) => {
                session.ping(std::time::Instant::now());
            }
            Some(ConnCmd::Cancel(id)) => {
                if let Some(sid) = self.by_req.remove(&id) {
                    if self.streams.remove(&sid).is_some() {
                        session.reset(sid, RstStatus::CANCEL);
                    }
                }
            }
        }
    }

    fn on_peer_closed(&mut self, _session: &mut Session) -> bool {
        false
    }

    fn finished(&self, session: &Session) -> bool {
        self.closing || session.is_done()
    }
}

impl LoaderOwner {
    fn send(&mut self, session: &mut Session, r: super::WireRequest) {
        let version = self.version;
        let mut extra = Headers::new();
        for (n, v) in &r.headers {
            if !n.starts_with(':') && n != "host" {
                extra.add(n, v.as_bytes());
            }
        }
        let h = spdy::http::request_headers(
            version,
            &r.method,
            &r.scheme,
            &r.authority,
            &r.path,
            &extra,
        );
        let raw = h.encoded_len(version) as i64;
        match session.open(h, r.priority, true) {
            Ok(sid) => {
                let st = StreamState {
                    id: r.id,
                    head: false,
                };
                self.streams.insert(sid, st);
                self.by_req.insert(r.id, sid);
                self.ctx.emit(ConnEvent::Sent {
                    id: r.id,
                    at: Instant::now(),
                    header_bytes: raw,
                });
            }
            Err(e) => self.ctx.emit(ConnEvent::Failed {
                id: r.id,
                at: Instant::now(),
                error: format!("cannot open a stream: {e}"),
                retry: true,
            }),
        }
    }
}

/// The session's events, mapped onto the loader's: the clock is read once per event and
/// every event the session's event causes is stamped with it.
struct Events<'a> {
    version: Version,
    ctx: &'a ConnCtx,
    streams: &'a mut HashMap<StreamId, StreamState>,
    by_req: &'a mut HashMap<ReqId, StreamId>,
    now: Instant,
}

impl Events<'_> {
    /// Maps one session event onto the loader's events (and resets a stream a client
    /// does not accept).
    fn on_event(&mut self, session: &mut Session, ev: Event) {
        match ev {
            Event::Reply { id, headers, fin } | Event::Headers { id, headers, fin } => {
                self.on_headers(id, &headers, fin)
            }
            Event::Stream {
                id,
                headers,
                associated: Some(assoc),
                fin,
                ..
            } => self.on_push(id, assoc, &headers, fin),
            Event::Stream { id, .. } => {
                // A client does not accept requests.
                session.reset(id, RstStatus::PROTOCOL_ERROR);
            }
            Event::Data { id, data, fin } => {
                session.release(id, data.len());
                self.on_data(id, data, fin);
            }
            Event::Closed { id } => self.finish(id),
            Event::Reset { id, status, remote } => {
                let who = if remote { "server" } else { "client" };
                let retry = remote && status == RstStatus::REFUSED_STREAM;
                self.fail(id, || format!("stream reset by {who}: {status}"), retry);
            }
            Event::GoAway { unprocessed, .. } => {
                for sid in unprocessed {
                    self.fail(sid, || "not processed (GOAWAY)".into(), true);
                }
            }
            Event::Error { violation, .. } => self.fail_all(&format!("session error: {violation}")),
            _ => {}
        }
    }

    /// Reports the response head (status and headers) of request `id`.
    fn emit_head(&self, id: ReqId, status: u16, headers: &Headers) {
        self.ctx.emit(ConnEvent::Head {
            id,
            first_byte: self.now,
            status,
            header_bytes: headers.encoded_len(self.version) as i64,
            headers: to_pairs(headers),
        });
    }

    /// Stream `sid` ended: its request ends (`End`), if it is still open.
    fn finish(&mut self, sid: StreamId) {
        if let Some(st) = self.streams.remove(&sid) {
            self.by_req.remove(&st.id);
            self.ctx.emit(ConnEvent::End {
                id: st.id,
                at: self.now,
            });
        }
    }

    /// SYN_REPLY or HEADERS on stream `id`: the first block with a status is the
    /// response's head; `fin` ends the stream.
    fn on_headers(&mut self, id: StreamId, headers: &Headers, fin: bool) {
        let Some(st) = self.streams.get_mut(&id) else {
            return;
        };
        if !st.head {
            if let Some(status) = spdy::http::parse_status(self.version, headers) {
                st.head = true;
                let rid = st.id;
                self.emit_head(rid, status, headers);
            }
        }
        if fin {
            self.finish(id);
        }
    }

    /// A pushed stream `id` associated with stream `assoc`: reported as `Pushed` under a
    /// fresh request id, with its head if the SYN_STREAM carries a status.
    fn on_push(&mut self, id: StreamId, assoc: StreamId, headers: &Headers, fin: bool) {
        let rid = self.ctx.next_id();
        let assoc_req = self.streams.get(&assoc).map(|s| s.id);
        let url = spdy::http::push_url(self.version, headers).unwrap_or_default();
        self.ctx.emit(ConnEvent::Pushed {
            conn: self.ctx.conn,
            id: rid,
            assoc: assoc_req,
            url,
            at: self.now,
        });
        let mut st = StreamState {
            id: rid,
            head: false,
        };
        // SPDY/2 (and some servers) put the status in the SYN_STREAM itself.
        if let Some(status) = spdy::http::parse_status(self.version, headers) {
            st.head = true;
            self.emit_head(rid, status, headers);
        }
        self.streams.insert(id, st);
        self.by_req.insert(rid, id);
        if fin {
            self.finish(id);
        }
    }

    /// DATA on stream `id`: a head first if none came (status 200, lenient), then the
    /// bytes (if any); `fin` ends the stream.
    fn on_data(&mut self, id: StreamId, data: bytes::Bytes, fin: bool) {
        if let Some(st) = self.streams.get_mut(&id) {
            if !st.head {
                // DATA before a status: treat as 200 (lenient).
                st.head = true;
                self.ctx.emit(ConnEvent::Head {
                    id: st.id,
                    first_byte: self.now,
                    status: 200,
                    header_bytes: -1,
                    headers: vec![],
                });
            }
            if !data.is_empty() {
                self.ctx.emit(ConnEvent::Data {
                    id: st.id,
                    at: self.now,
                    data,
                });
            }
        }
        if fin {
            self.finish(id);
        }
    }

    /// Stream `sid` will not complete: its request fails (`Failed`, with the error and
    /// whether another attempt may succeed), if it is still open.
    fn fail(&mut self, sid: StreamId, error: impl FnOnce() -> String, retry: bool) {
        if let Some(st) = self.streams.remove(&sid) {
            self.by_req.remove(&st.id);
            self.ctx.emit(ConnEvent::Failed {
                id: st.id,
                at: self.now,
                error: error(),
                retry,
            });
        }
    }

    /// The session failed: every open request fails, not to be retried.
    fn fail_all(&mut self, error: &str) {
        for (_, st) in self.streams.drain() {
            self.by_req.remove(&st.id);
            self.ctx.emit(ConnEvent::Failed {
                id: st.id,
                at: self.now,
                error: error.to_string(),
                retry: false,
            });
        }
    }
}
