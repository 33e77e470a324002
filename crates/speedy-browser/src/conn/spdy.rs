//! SPDY over one connection: the loader's session driver. One task owns the
//! [`spdy::Session`] (DESIGN rule 2) and maps its events straight onto loader events, so
//! each request's `:host` can name any origin (single-domain mode), pushes arrive with
//! fresh ids, and the session's header byte counters (raw and compressed) are reported.

use super::{ConnCmd, ConnCounters, ConnCtx, ConnEvent, Driver, ReqId};
use bytes::BytesMut;
use spdy::session::{Event, OutBuf};
use spdy::{Headers, RstStatus, Session, StreamId, Version};
use speedy_net::io::BoxIo;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

async fn drive(io: BoxIo, cfg: spdy::Config, mut ctx: ConnCtx) {
    let version = cfg.version;
    let mut session = Session::new(cfg);
    let (mut rd, mut wr) = tokio::io::split(io);
    let mut rbuf = BytesMut::with_capacity(64 * 1024);
    let mut out = OutBuf::new();
    let mut streams: HashMap<StreamId, StreamState> = HashMap::new();
    let mut by_req: HashMap<ReqId, StreamId> = HashMap::new();
    let mut counters = ConnCounters::default();
    let mut closing = false;
    let mut dead = false;
    let mut unflushed = false;
    loop {
        while let Some(ev) = session.poll_event() {
            on_event(ev, version, &mut session, &mut streams, &mut by_req, &ctx);
        }
        while out.len() < 256 * 1024 && session.poll_transmit(&mut out) {}
        if dead || (closing && out.is_empty()) || (session.is_done() && out.is_empty()) {
            break;
        }
        tokio::select! {
            r = rd.read_buf(&mut rbuf), if !closing => {
                match r {
                    Ok(0) | Err(_) => {
                        dead = true;
                    }
                    Ok(n) => {
                        counters.bytes_in += n as u64;
                        session.recv(&mut rbuf, Instant::now());
                        if rbuf.capacity() - rbuf.len() < 8192 {
                            rbuf.reserve(64 * 1024);
                        }
                    }
                }
            }
            c = ctx.cmds.recv(), if !closing => match c {
                None | Some(ConnCmd::Close) => {
                    closing = true;
                    session.goaway(spdy::GoAwayStatus::OK);
                }
                Some(ConnCmd::Send(r)) => {
                    let mut extra = Headers::new();
                    for (n, v) in &r.headers {
                        if !n.starts_with(':') && n != "host" {
                            extra.add(n, v.as_bytes());
                        }
                    }
                    let h = spdy::http::request_headers(version, &r.method, &r.scheme, &r.authority, &r.path, &extra);
                    let raw = h.encoded_len(version) as i64;
                    match session.open(h, r.priority, true) {
                        Ok(sid) => {
                            streams.insert(sid, StreamState { id: r.id, head: false });
                            by_req.insert(r.id, sid);
                            ctx.emit(ConnEvent::Sent { id: r.id, at: Instant::now(), header_bytes: raw });
                        }
                        Err(e) => ctx.emit(ConnEvent::Failed {
                            id: r.id,
                            at: Instant::now(),
                            error: format!("cannot open a stream: {e}"),
                            retry: true,
                        }),
                    }
                }
                Some(ConnCmd::Cancel(id)) => {
                    if let Some(sid) = by_req.remove(&id) {
                        if streams.remove(&sid).is_some() {
                            session.reset(sid, RstStatus::CANCEL);
                        }
                    }
                }
            },
            // TLS keeps records it could not write yet until the next write or flush: a
            // WINDOW_UPDATE left there would stall the server.
            r = speedy_net::io::write_or_flush(&mut wr, &mut out, &mut unflushed), if !out.is_empty() || unflushed => {
                match r {
                    Ok(n) => counters.bytes_out += n as u64,
                    Err(_) => dead = true,
                }
            }
        }
    }
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
    counters.header_bytes_raw_sent = s.header_bytes_raw_sent;
    counters.header_bytes_sent = s.header_bytes_compressed_sent;
    counters.header_bytes_raw_received = s.header_bytes_raw_received;
    counters.header_bytes_received = s.header_bytes_compressed_received;
    counters.frames_sent = s.frames_sent;
    counters.frames_received = s.frames_received;
    ctx.closed(counters);
    let _ = wr.shutdown().await;
}

fn on_event(
    ev: Event,
    version: Version,
    session: &mut Session,
    streams: &mut HashMap<StreamId, StreamState>,
    by_req: &mut HashMap<ReqId, StreamId>,
    ctx: &ConnCtx,
) {
    let now = Instant::now();
    let finish = |streams: &mut HashMap<StreamId, StreamState>,
                  by_req: &mut HashMap<ReqId, StreamId>,
                  sid: StreamId| {
        if let Some(st) = streams.remove(&sid) {
            by_req.remove(&st.id);
            ctx.emit(ConnEvent::End { id: st.id, at: now });
        }
    };
    match ev {
        Event::Reply { id, headers, fin } | Event::Headers { id, headers, fin } => {
            let Some(st) = streams.get_mut(&id) else {
                return;
            };
            if !st.head {
                if let Some(status) = spdy::http::parse_status(version, &headers) {
                    st.head = true;
                    ctx.emit(ConnEvent::Head {
                        id: st.id,
                        first_byte: now,
                        status,
                        header_bytes: headers.encoded_len(version) as i64,
                        headers: to_pairs(&headers),
                    });
                }
            }
            if fin {
                finish(streams, by_req, id);
            }
        }
        Event::Stream {
            id,
            headers,
            associated: Some(assoc),
            fin,
            ..
        } => {
            let rid = ctx.next_id();
            let assoc_req = streams.get(&assoc).map(|s| s.id);
            let url = spdy::http::push_url(version, &headers).unwrap_or_default();
            ctx.emit(ConnEvent::Pushed {
                conn: ctx.conn,
                id: rid,
                assoc: assoc_req,
                url,
                at: now,
            });
            let mut st = StreamState {
                id: rid,
                head: false,
            };
            // SPDY/2 (and some servers) put the status in the SYN_STREAM itself.
            if let Some(status) = spdy::http::parse_status(version, &headers) {
                st.head = true;
                ctx.emit(ConnEvent::Head {
                    id: rid,
                    first_byte: now,
                    status,
                    header_bytes: headers.encoded_len(version) as i64,
                    headers: to_pairs(&headers),
                });
            }
            streams.insert(id, st);
            by_req.insert(rid, id);
            if fin {
                finish(streams, by_req, id);
            }
        }
        Event::Stream { id, .. } => {
            // A client does not accept requests.
            session.reset(id, RstStatus::PROTOCOL_ERROR);
        }
        Event::Data { id, data, fin } => {
            let n = data.len();
            session.release(id, n);
            if let Some(st) = streams.get_mut(&id) {
                if !st.head {
                    // DATA before a status: treat as 200 (lenient).
                    st.head = true;
                    ctx.emit(ConnEvent::Head {
                        id: st.id,
                        first_byte: now,
                        status: 200,
                        header_bytes: -1,
                        headers: vec![],
                    });
                }
                if n > 0 {
                    ctx.emit(ConnEvent::Data {
                        id: st.id,
                        at: now,
                        data,
                    });
                }
            }
            if fin {
                finish(streams, by_req, id);
            }
        }
        Event::Closed { id } => finish(streams, by_req, id),
        Event::Reset { id, status, remote } => {
            if let Some(st) = streams.remove(&id) {
                by_req.remove(&st.id);
                let who = if remote { "server" } else { "client" };
                ctx.emit(ConnEvent::Failed {
                    id: st.id,
                    at: now,
                    error: format!("stream reset by {who}: {status}"),
                    retry: remote && status == RstStatus::REFUSED_STREAM,
                });
            }
        }
        Event::GoAway { unprocessed, .. } => {
            for sid in unprocessed {
                if let Some(st) = streams.remove(&sid) {
                    by_req.remove(&st.id);
                    ctx.emit(ConnEvent::Failed {
                        id: st.id,
                        at: now,
                        error: "not processed (GOAWAY)".into(),
                        retry: true,
                    });
                }
            }
        }
        Event::Error { violation, .. } => {
            for (_, st) in streams.drain() {
                by_req.remove(&st.id);
                ctx.emit(ConnEvent::Failed {
                    id: st.id,
                    at: now,
                    error: format!("session error: {violation}"),
                    retry: false,
                });
            }
        }
        _ => {}
    }
}
