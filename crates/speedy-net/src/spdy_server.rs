//! The server-side session driver: one task owns the session, reads frames, runs
//! handlers (polled in the same task) and writes their answers.

use crate::io::{write_or_flush, BoxIo};
use crate::server::{Handler, Request, Response, ServerConfig};
use bytes::BytesMut;
use futures_util::stream::{FuturesUnordered, StreamExt};
use spdy::session::{Event, OutBuf};
use spdy::{Headers, Role, RstStatus, Session, StreamId, Version};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Pending {
    headers: Headers,
    priority: u8,
    body: BytesMut,
}

type Answer = Pin<Box<dyn Future<Output = (StreamId, u8, String, Response)> + Send>>;

/// Runs a SPDY server session on `io` until the peer goes away.
pub(crate) async fn run(
    io: BoxIo,
    version: Version,
    auto_spdy31: bool,
    scheme: &'static str,
    cfg: &ServerConfig,
    handler: Arc<dyn Handler>,
) -> std::io::Result<()> {
    let mut scfg = cfg.spdy.clone();
    scfg.role = Role::Server;
    scfg.version = version;
    scfg.auto_spdy31 = auto_spdy31;
    let mut session = Session::new(scfg);
    let (mut rd, mut wr) = tokio::io::split(io);
    let mut rbuf = BytesMut::with_capacity(8 * 1024);
    let mut out = OutBuf::new();
    let mut pending: HashMap<StreamId, Pending> = HashMap::new();
    let mut answers: FuturesUnordered<Answer> = FuturesUnordered::new();
    let mut read_closed = false;
    let mut unflushed = false;
    loop {
        while let Some(ev) = session.poll_event() {
            match ev {
                Event::Stream {
                    id,
                    headers,
                    priority,
                    fin,
                    ..
                } => {
                    let p = Pending {
                        headers,
                        priority,
                        body: BytesMut::new(),
                    };
                    if fin {
                        answers.push(dispatch(id, p, &session, scheme, &handler));
                    } else {
                        pending.insert(id, p);
                    }
                }
                Event::Data { id, data, fin } => {
                    session.release(id, data.len());
                    let Some(p) = pending.get_mut(&id) else {
                        continue;
                    };
                    if p.body.len() + data.len() > cfg.max_body {
                        pending.remove(&id);
                        session.reset(id, RstStatus::REFUSED_STREAM);
                        continue;
                    }
                    p.body.extend_from_slice(&data);
                    if fin {
                        let p = pending.remove(&id).expect("present");
                        answers.push(dispatch(id, p, &session, scheme, &handler));
                    }
                }
                Event::Headers { id, headers, fin } => {
                    if let Some(p) = pending.get_mut(&id) {
                        for (n, v) in headers.iter() {
                            p.headers.add(&String::from_utf8_lossy(n), v);
                        }
                    }
                    if fin {
                        if let Some(p) = pending.remove(&id) {
                            answers.push(dispatch(id, p, &session, scheme, &handler));
                        }
                    }
                }
                Event::Reset { id, .. } | Event::Closed { id } => {
                    pending.remove(&id);
                }
                Event::Error { violation, status } => {
                    tracing::debug!("session error {status}: {violation}")
                }
                _ => {}
            }
        }
        while out.len() < 256 * 1024 && session.poll_transmit(&mut out) {}
        if out.is_empty()
            && !unflushed
            && (session.is_done() || (read_closed && answers.is_empty()))
        {
            break;
        }
        tokio::select! {
            r = rd.read_buf(&mut rbuf), if !read_closed => {
                match r {
                    Ok(0) | Err(_) => read_closed = true,
                    Ok(_) => session.recv(&mut rbuf, Instant::now()),
                }
                if rbuf.capacity() - rbuf.len() < 4096 {
                    rbuf.reserve(16 * 1024);
                }
            }
            Some((id, priority, host, resp)) = answers.next(), if !answers.is_empty() => {
                answer(&mut session, id, priority, scheme, &host, resp);
            }
            r = write_or_flush(&mut wr, &mut out, &mut unflushed), if !out.is_empty() || unflushed => {
                r?;
            }
        }
    }
    let _ = wr.shutdown().await;
    Ok(())
}

fn dispatch(
    id: StreamId,
    p: Pending,
    session: &Session,
    scheme: &'static str,
    handler: &Arc<dyn Handler>,
) -> Answer {
    let version = session.version();
    let priority = p.priority;
    let head = spdy::http::parse_request(version, &p.headers);
    let handler = handler.clone();
    let body = p.body.freeze();
    let headers = p.headers;
    Box::pin(async move {
        match head {
            Err(missing) => {
                let resp = Response::new(400, "text/plain", format!("missing {missing}\n"));
                (id, priority, String::new(), resp)
            }
            Ok(h) => {
                let host = h.host.clone();
                let req = Request {
                    method: h.method,
                    path: h.path,
                    host: h.host,
                    scheme: if h.scheme.is_empty() {
                        scheme.to_string()
                    } else {
                        h.scheme
                    },
                    headers,
                    body,
                    protocol: version.alpn(),
                };
                (id, priority, host, handler.handle(req).await)
            }
        }
    })
}

fn to_headers(list: &[(String, String)]) -> Headers {
    let mut h = Headers::new();
    for (n, v) in list {
        h.add(n, v.as_bytes());
    }
    h
}

/// Turns a handler's response into frames: pushes first (their SYN_STREAMs precede
/// anything of the parent), then SYN_REPLY and DATA.
fn answer(
    session: &mut Session,
    id: StreamId,
    priority: u8,
    scheme: &str,
    host: &str,
    resp: Response,
) {
    if !session.has_stream(id) {
        return; // reset meanwhile
    }
    if let Some(status) = resp.reset {
        session.reset(id, status);
        return;
    }
    let v = session.version();
    for p in &resp.pushes {
        let mut extra = to_headers(&p.headers);
        extra.set("content-length", p.body.len().to_string());
        let h = spdy::http::push_headers(v, scheme, host, &p.path, p.status, &extra);
        let prio = (priority + 1).min(v.lowest_priority());
        if let Ok(pid) = session.push(id, h, prio) {
            let _ = session.send_data(pid, p.body.clone(), true);
        }
    }
    let mut extra = to_headers(&resp.headers);
    extra.set("content-length", resp.body.len().to_string());
    let h = spdy::http::response_headers(v, resp.status, &extra);
    let empty = resp.body.is_empty();
    if session.reply(id, h, empty).is_ok() && !empty {
        let _ = session.send_data(id, resp.body, true);
    }
}
