//! The client side of a SPDY session, as an [`Owner`] of the one connection loop; [`SpdyHandle`]s send it
//! requests over a channel and get streaming responses back.

use crate::body::{Body, Credit, CreditTx};
use crate::reply::{ClientError, FrameLog, ResponseStream};
use crate::spdy::conn::{self, End, Owner, Tuning};
use crate::transport::io::BoxIo;
use bytes::Bytes;
use spdy::session::Event;
use spdy::{Headers, RstStatus, Session, StreamId, Version};
use std::collections::HashMap;
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};

pub(crate) enum Cmd {
    Request {
        headers: Headers,
        body: Bytes,
        priority: u8,
        reply: oneshot::Sender<Result<ResponseStream, ClientError>>,
    },
    Ping(oneshot::Sender<std::time::Duration>),
    /// The session's counters (frames, header bytes raw and compressed, data).
    Stats(oneshot::Sender<spdy::session::Stats>),
    /// A new priority for a stream (speedy's PRIORITY extension frame).
    Reprioritize(StreamId, u8),
}

struct Waiting {
    reply: Option<oneshot::Sender<Result<ResponseStream, ClientError>>>,
    body: Option<mpsc::UnboundedSender<std::io::Result<Bytes>>>,
}

/// A handle on a client session.
#[derive(Clone)]
pub(crate) struct SpdyHandle {
    pub tx: mpsc::UnboundedSender<Cmd>,
    pub version: Version,
    /// Why the session ended, once it has: a request that finds it gone gets this.
    pub ended: std::sync::Arc<std::sync::OnceLock<ClientError>>,
}

impl SpdyHandle {
    /// The error for a request the session can no longer take.
    pub fn gone(&self) -> ClientError {
        self.ended.get().cloned().unwrap_or(ClientError::Closed)
    }
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
    let ended = std::sync::Arc::new(std::sync::OnceLock::new());
    let handle = SpdyHandle {
        tx,
        version,
        ended: ended.clone(),
    };
    let task = tokio::spawn(drive(io, cfg, rx, push_tx, log, ended));
    (handle, push_rx, task)
}

async fn drive(
    io: BoxIo,
    cfg: spdy::Config,
    cmds: mpsc::UnboundedReceiver<Cmd>,
    pushes: mpsc::UnboundedSender<ResponseStream>,
    log: Option<FrameLog>,
    ended: std::sync::Arc<std::sync::OnceLock<ClientError>>,
) {
    let (credit_tx, credit_rx) = mpsc::unbounded_channel();
    let mut cfg = cfg;
    cfg.log_frames = log.is_some();
    let mut session = Session::new(cfg);
    let mut owner = ClientOwner {
        version: session.version(),
        cmds,
        cmds_open: true,
        credit_tx,
        credit_rx,
        pushes,
        log,
        streams: HashMap::new(),
        pings: Vec::new(),
        failure: None,
        buffered: 0,
    };
    let (end, traffic) = conn::run(io, &mut session, &mut owner, Tuning::CLIENT).await;
    let why = || match &end {
        // Nothing ever came: the connection was never made (an SCTP association the
        // peer refused or never answered; whichever of reading and writing notices first).
        End::ReadFailed(e) | End::WriteFailed(e) if traffic.bytes_in == 0 => {
            ClientError::Connect(e.to_string())
        }
        _ => ClientError::Closed,
    };
    if !matches!(end, End::Finished) {
        let _ = ended.set(why());
        owner.fail_all(why());
        // Fail later requests at once.
        while let Ok(c) = owner.cmds.try_recv() {
            if let Cmd::Request { reply, .. } = c {
                let _ = reply.send(Err(why()));
            }
        }
    }
}

struct ClientOwner {
    version: Version,
    cmds: mpsc::UnboundedReceiver<Cmd>,
    cmds_open: bool,
    /// Bodies give flow-control credit back (and cancel) through this.
    credit_tx: CreditTx,
    credit_rx: mpsc::UnboundedReceiver<Credit>,
    pushes: mpsc::UnboundedSender<ResponseStream>,
    log: Option<FrameLog>,
    streams: HashMap<StreamId, Waiting>,
    pings: Vec<oneshot::Sender<std::time::Duration>>,
    failure: Option<ClientError>,
    /// Response bytes handed to bodies and not yet read: reading the socket pauses
    /// above [`MAX_BUFFERED`].
    buffered: usize,
}

/// Response bytes a client holds for its readers before it stops reading the socket;
/// with a peer that honours our windows it is never reached (the windows are smaller).
const MAX_BUFFERED: usize = 16 << 20;

impl ClientOwner {
    fn fail_all(&mut self, e: ClientError) {
        let ids: Vec<StreamId> = self.streams.keys().copied().collect();
        for id in ids {
            fail(&mut self.streams, id, e.clone());
        }
    }

    fn response(
        &self,
        id: StreamId,
        headers: Headers,
        brx: BodyRx,
        pushed: bool,
    ) -> ResponseStream {
        ResponseStream {
            status: spdy::http::parse_status(self.version, &headers).unwrap_or(0),
            pushed_url: if pushed {
                spdy::http::push_url(self.version, &headers)
            } else {
                None
            },
            headers,
            protocol: self.version.alpn(),
            stream_id: Some(id.0),
            body: Body::fed(brx, id.0, self.credit_tx.clone(), true, None),
        }
    }
}

type BodyRx = mpsc::UnboundedReceiver<std::io::Result<Bytes>>;

/// What the client's loop waits for besides the socket.
enum Input {
    Cmd(Cmd),
    Credit(Credit),
}

impl Owner for ClientOwner {
    type Wire = Session;
    type Input = Input;

    fn on_event(&mut self, session: &mut Session, ev: Event) {
        match ev {
            Event::Reply { id, headers, fin } => {
                if !self.streams.contains_key(&id) {
                    return;
                }
                let (btx, brx) = mpsc::unbounded_channel();
                let resp = self.response(id, headers, brx, false);
                let w = self.streams.get_mut(&id).expect("present");
                if let Some(r) = w.reply.take() {
                    if r.send(Ok(resp)).is_err() {
                        session.reset(id, RstStatus::CANCEL);
                        self.streams.remove(&id);
                        return;
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
                let resp = self.response(id, headers, brx, true);
                if self.pushes.send(resp).is_err() {
                    session.reset(id, RstStatus::CANCEL);
                } else if !fin {
                    let w = Waiting {
                        reply: None,
                        body: Some(btx),
                    };
                    self.streams.insert(id, w);
                }
            }
            Event::Data { id, data, fin } => {
                let n = data.len();
                let mut gone = true;
                if let Some(w) = self.streams.get_mut(&id) {
                    if let Some(b) = &w.body {
                        gone = b.send(Ok(data)).is_err();
                        if !gone {
                            self.buffered += n;
                        }
                    }
                    if fin {
                        self.streams.remove(&id);
                    }
                }
                if gone {
                    session.release(id, n);
                    if !fin && self.streams.remove(&id).is_some() {
                        session.reset(id, RstStatus::CANCEL);
                    }
                }
            }
            Event::Headers { id, fin: true, .. } => {
                self.streams.remove(&id);
            }
            Event::Reset { id, status, remote } => {
                let who = if remote {
                    "server"
                } else {
                    "client (protocol error)"
                };
                fail(&mut self.streams, id, ClientError::Reset(status, who));
            }
            Event::GoAway { unprocessed, .. } => {
                for id in unprocessed {
                    fail(&mut self.streams, id, ClientError::NotProcessed);
                }
            }
            Event::Error { violation, .. } => {
                self.failure = Some(ClientError::Protocol(violation.to_string()))
            }
            Event::Frame { sent, summary } => {
                if let Some(l) = &self.log {
                    let kind = if sent {
                        crate::reply::LogKind::Sent
                    } else {
                        crate::reply::LogKind::Received
                    };
                    l(kind, &summary);
                }
            }
            Event::Pong { rtt, .. } => {
                for p in self.pings.drain(..) {
                    let _ = p.send(rtt);
                }
            }
            _ => {}
        }
    }

    fn after_events(&mut self, _session: &mut Session) {
        if let Some(e) = self.failure.take() {
            self.fail_all(e);
        }
    }

    fn wants_read(&self) -> bool {
        self.buffered < MAX_BUFFERED
    }

    fn wants_input(&self) -> bool {
        true // the credit channel's sender lives in self: it never closes
    }

    async fn next_input(&mut self) -> Option<Input> {
        let cmds_open = self.cmds_open;
        tokio::select! {
            c = self.cmds.recv(), if cmds_open => match c {
                Some(c) => Some(Input::Cmd(c)),
                None => {
                    self.cmds_open = false;
                    None
                }
            },
            Some(c) = self.credit_rx.recv() => Some(Input::Credit(c)),
        }
    }

    fn on_input(&mut self, session: &mut Session, input: Input) {
        let cmd = match input {
            Input::Cmd(c) => c,
            Input::Credit(Credit::Release(id, n)) => {
                self.buffered = self.buffered.saturating_sub(n);
                return session.release(StreamId(id), n);
            }
            Input::Credit(Credit::Cancel(id)) => {
                let id = StreamId(id);
                if self.streams.remove(&id).is_some() {
                    session.reset(id, RstStatus::CANCEL);
                }
                return;
            }
        };
        match cmd {
            Cmd::Request {
                headers,
                body,
                priority,
                reply,
            } => match session.open(headers, priority, body.is_empty()) {
                Ok(id) => {
                    if !body.is_empty() {
                        let _ = session.send_data(id, body, true);
                    }
                    let w = Waiting {
                        reply: Some(reply),
                        body: None,
                    };
                    self.streams.insert(id, w);
                }
                Err(e) => {
                    let e = ClientError::Protocol(format!("cannot open a stream: {e}"));
                    let _ = reply.send(Err(e));
                }
            },
            Cmd::Ping(tx) => {
                self.pings.push(tx);
                session.ping(Instant::now());
            }
            Cmd::Stats(tx) => {
                let _ = tx.send(session.stats());
            }
            Cmd::Reprioritize(id, priority) => {
                // A stream that has ended has nothing left to schedule.
                let _ = session.reprioritize(id, priority);
            }
        }
    }

    fn on_peer_closed(&mut self, _session: &mut Session) -> bool {
        false
    }

    fn finished(&self, session: &Session) -> bool {
        session.is_done() || (!self.cmds_open && self.streams.is_empty())
    }

    fn on_finish(&mut self, session: &mut Session) {
        session.goaway(spdy::GoAwayStatus::OK);
    }
}

fn fail(streams: &mut HashMap<StreamId, Waiting>, id: StreamId, e: ClientError) {
    if let Some(mut w) = streams.remove(&id) {
        if let Some(r) = w.reply.take() {
            let _ = r.send(Err(e.clone()));
        }
        if let Some(b) = w.body.take() {
            let _ = b.send(Err(std::io::Error::other(e)));
        }
    }
}
