//! The client-side session driver: one task owns the session; [`SpdyHandle`]s send it
//! requests over a channel and get streaming responses back.

use crate::client::{Body, ClientError, FrameLog, ResponseStream};
use crate::io::{write_or_flush, write_some, BoxIo};
use bytes::{Bytes, BytesMut};
use spdy::session::{Event, OutBuf};
use spdy::{Headers, RstStatus, Session, StreamId, Version};
use std::collections::HashMap;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

pub(crate) enum Cmd {
    Request {
        headers: Headers,
        body: Bytes,
        priority: u8,
        reply: oneshot::Sender<Result<ResponseStream, ClientError>>,
    },
    Release(StreamId, usize),
    Cancel(StreamId),
    Ping(oneshot::Sender<std::time::Duration>),
}

struct Waiting {
    reply: Option<oneshot::Sender<Result<ResponseStream, ClientError>>>,
    body: Option<mpsc::UnboundedSender<Result<Bytes, ClientError>>>,
}

/// A handle on a client session.
#[derive(Clone)]
pub(crate) struct SpdyHandle {
    pub tx: mpsc::UnboundedSender<Cmd>,
    pub version: Version,
}

pub(crate) fn spawn(
    io: BoxIo,
    cfg: spdy::Config,
    log: Option<FrameLog>,
) -> (
    SpdyHandle,
    mpsc::UnboundedReceiver<ResponseStream>,
    tokio::task::JoinHandle<()>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (push_tx, push_rx) = mpsc::unbounded_channel();
    let version = cfg.version;
    let handle = SpdyHandle {
        tx: tx.clone(),
        version,
    };
    let task = tokio::spawn(drive(io, cfg, rx, tx, push_tx, log));
    (handle, push_rx, task)
}

async fn drive(
    io: BoxIo,
    cfg: spdy::Config,
    mut cmds: mpsc::UnboundedReceiver<Cmd>,
    self_tx: mpsc::UnboundedSender<Cmd>,
    pushes: mpsc::UnboundedSender<ResponseStream>,
    log: Option<FrameLog>,
) {
    let mut cfg = cfg;
    cfg.log_frames = log.is_some();
    let version = cfg.version;
    let mut session = Session::new(cfg);
    let (mut rd, mut wr) = tokio::io::split(io);
    let mut rbuf = BytesMut::with_capacity(16 * 1024);
    let mut out = OutBuf::new();
    let mut streams: HashMap<StreamId, Waiting> = HashMap::new();
    let mut pings: Vec<oneshot::Sender<std::time::Duration>> = Vec::new();
    let mut cmds_open = true;
    let mut failure: Option<ClientError> = None;
    let mut unflushed = false;
    loop {
        while let Some(ev) = session.poll_event() {
            match ev {
                Event::Reply { id, headers, fin } => {
                    let Some(w) = streams.get_mut(&id) else {
                        continue;
                    };
                    let (btx, brx) = mpsc::unbounded_channel();
                    let resp = ResponseStream {
                        status: spdy::http::parse_status(version, &headers).unwrap_or(0),
                        headers,
                        protocol: version.alpn(),
                        pushed_url: None,
                        body: Body::spdy(id, brx, self_tx.clone()),
                    };
                    if let Some(r) = w.reply.take() {
                        if r.send(Ok(resp)).is_err() {
                            session.reset(id, RstStatus::CANCEL);
                            streams.remove(&id);
                            continue;
                        }
                    }
                    if !fin {
                        w.body = Some(btx);
                    }
                }
                Event::Stream {
                    id,
                    headers,
                    associated: Some(_),
                    fin,
                    ..
                } => {
                    let (btx, brx) = mpsc::unbounded_channel();
                    let resp = ResponseStream {
                        status: spdy::http::parse_status(version, &headers).unwrap_or(0),
                        pushed_url: spdy::http::push_url(version, &headers),
                        headers,
                        protocol: version.alpn(),
                        body: Body::spdy(id, brx, self_tx.clone()),
                    };
                    if pushes.send(resp).is_err() {
                        session.reset(id, RstStatus::CANCEL);
                    } else if !fin {
                        streams.insert(
                            id,
                            Waiting {
                                reply: None,
                                body: Some(btx),
                            },
                        );
                    }
                }
                Event::Data { id, data, fin } => {
                    let n = data.len();
                    let mut gone = true;
                    if let Some(w) = streams.get_mut(&id) {
                        if let Some(b) = &w.body {
                            gone = b.send(Ok(data)).is_err();
                        }
                        if fin {
                            streams.remove(&id);
                        }
                    }
                    if gone {
                        session.release(id, n);
                        if !fin && streams.remove(&id).is_some() {
                            session.reset(id, RstStatus::CANCEL);
                        }
                    }
                }
                Event::Headers { id, fin: true, .. } => {
                    streams.remove(&id);
                }
                Event::Reset { id, status, remote } => {
                    let who = if remote {
                        "server"
                    } else {
                        "client (protocol error)"
                    };
                    fail(&mut streams, id, ClientError::Reset(status, who));
                }
                Event::GoAway { unprocessed, .. } => {
                    for id in unprocessed {
                        fail(&mut streams, id, ClientError::NotProcessed);
                    }
                }
                Event::Error { violation, .. } => {
                    failure = Some(ClientError::Protocol(violation.to_string()))
                }
                Event::Frame { sent, summary } => {
                    if let Some(l) = &log {
                        l(sent, &summary);
                    }
                }
                Event::Pong { rtt, .. } => {
                    for p in pings.drain(..) {
                        let _ = p.send(rtt);
                    }
                }
                _ => {}
            }
        }
        if let Some(e) = failure.take() {
            let ids: Vec<StreamId> = streams.keys().copied().collect();
            for id in ids {
                fail(&mut streams, id, e.clone());
            }
        }
        while out.len() < 256 * 1024 && session.poll_transmit(&mut out) {}
        if out.is_empty() && (session.is_done() || (!cmds_open && streams.is_empty())) {
            if !session.is_done() {
                session.goaway(spdy::GoAwayStatus::OK);
                while session.poll_transmit(&mut out) {}
                while !out.is_empty() {
                    if write_some(&mut wr, &mut out).await.is_err() {
                        break;
                    }
                }
            }
            break;
        }
        tokio::select! {
            r = rd.read_buf(&mut rbuf) => {
                match r {
                    Ok(0) | Err(_) => {
                        let ids: Vec<StreamId> = streams.keys().copied().collect();
                        for id in ids {
                            fail(&mut streams, id, ClientError::Closed);
                        }
                        // Fail later requests at once.
                        while let Ok(c) = cmds.try_recv() {
                            if let Cmd::Request { reply, .. } = c {
                                let _ = reply.send(Err(ClientError::Closed));
                            }
                        }
                        break;
                    }
                    Ok(_) => session.recv(&mut rbuf, Instant::now()),
                }
                if rbuf.capacity() - rbuf.len() < 4096 {
                    rbuf.reserve(64 * 1024);
                }
            }
            c = cmds.recv(), if cmds_open => match c {
                None => cmds_open = false,
                Some(Cmd::Request { headers, body, priority, reply }) => {
                    match session.open(headers, priority, body.is_empty()) {
                        Ok(id) => {
                            if !body.is_empty() {
                                let _ = session.send_data(id, body, true);
                            }
                            streams.insert(id, Waiting { reply: Some(reply), body: None });
                        }
                        Err(e) => {
                            let _ = reply.send(Err(ClientError::Protocol(format!("cannot open a stream: {e}"))));
                        }
                    }
                }
                Some(Cmd::Release(id, n)) => session.release(id, n),
                Some(Cmd::Cancel(id)) => {
                    if streams.remove(&id).is_some() {
                        session.reset(id, RstStatus::CANCEL);
                    }
                }
                Some(Cmd::Ping(tx)) => {
                    pings.push(tx);
                    session.ping(Instant::now());
                }
            },
            r = write_or_flush(&mut wr, &mut out, &mut unflushed), if !out.is_empty() || unflushed => {
                if r.is_err() {
                    let ids: Vec<StreamId> = streams.keys().copied().collect();
                    for id in ids {
                        fail(&mut streams, id, ClientError::Closed);
                    }
                    break;
                }
            }
        }
    }
    let _ = wr.shutdown().await;
}

fn fail(streams: &mut HashMap<StreamId, Waiting>, id: StreamId, e: ClientError) {
    if let Some(mut w) = streams.remove(&id) {
        if let Some(r) = w.reply.take() {
            let _ = r.send(Err(e.clone()));
        }
        if let Some(b) = w.body.take() {
            let _ = b.send(Err(e));
        }
    }
}
