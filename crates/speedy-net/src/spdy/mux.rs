//! A SPDY/3.1 stream multiplexer: raw bidirectional streams with headers, the way
//! moby/spdystream and Kubernetes use SPDY (exec, attach, port-forward), on the one
//! connection loop and with real flow control.
//!
//! The client opens streams ([`Mux::open`]) with a header block and gets the peer's
//! SYN_REPLY headers from [`MuxStream::reply_headers`]; the server takes them from
//! [`Mux::accept`] and answers with [`MuxStream::reply`]. Either end then
//! [`MuxStream::send`]s bytes, [`MuxStream::finish`]es its half, and
//! [`MuxStream::recv`]s until `None` (the peer's FIN). [`MuxStream::split`] gives a
//! sending and a receiving half for copying both ways at once.
//!
//! Backpressure both ways: `send` waits while more than [`SEND_BUFFER`] bytes of the
//! stream are queued in the session (so a slow peer holds the writer back), and credit
//! goes back to the peer only as `recv` hands bytes out (the peer's windows hold it back;
//! a peer without flow control is held back by the loop reading less, see
//! `docs/flow-control.md`). Streams the peer opens wait for [`Mux::accept`] in a queue of
//! the session's `max_concurrent_streams`; a stream that finds it full is refused
//! (RST_STREAM REFUSED_STREAM), so a peer that opens and resets streams, or pushes to a
//! client that never accepts, cannot grow it.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use speedy_net::spdy::mux::Mux;
//! use spdy::{Headers, Role, Version};
//! let tcp = tokio::net::TcpStream::connect("127.0.0.1:8080").await?;
//! let mux = Mux::start(Box::new(tcp), spdy::Config::new(Role::Client, Version::V3_1));
//! let mut s = mux.open(Headers::from_pairs([("streamtype", "data")]), false).await?;
//! s.reply_headers().await?;
//! s.send(bytes::Bytes::from_static(b"hello")).await?;
//! s.finish();
//! while let Some(chunk) = s.recv().await {
//!     println!("{} bytes", chunk?.len());
//! }
//! # Ok(()) }
//! ```

use crate::spdy::conn::{self, Owner, Tuning};
use crate::transport::io::BoxIo;
use bytes::Bytes;
use spdy::session::Event;
use spdy::{Headers, Role, RstStatus, Session, StreamId};
use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, Semaphore};

/// Bytes one stream may have queued in the session before [`MuxStream::send`] waits.
pub const SEND_BUFFER: usize = 256 * 1024;
/// Received bytes held for readers (all streams) before the loop stops reading.
const RECV_BUFFER: usize = 16 << 20;
/// Largest piece handed to the session at once.
const PIECE: usize = 64 * 1024;

type Chunk = io::Result<Bytes>;

/// What the handles ask of the loop.
enum Cmd {
    Open {
        headers: Headers,
        fin: bool,
        answer: oneshot::Sender<io::Result<MuxStream>>,
    },
    Reply(StreamId, Headers, bool),
    Data(StreamId, Bytes, bool),
    Release(StreamId, usize),
    Reset(StreamId, RstStatus),
    /// The [`Mux`] handle was dropped: end once the streams are done.
    Close,
}

/// A SPDY session carrying raw streams; see the module doc.
pub struct Mux {
    cmds: mpsc::UnboundedSender<Cmd>,
    incoming: mpsc::Receiver<MuxStream>,
    done: Option<tokio::task::JoinHandle<io::Result<()>>>,
}

impl Mux {
    /// Runs a session over `io` (its role and version come from `cfg`) on a new task.
    pub fn start(io: BoxIo, cfg: spdy::Config) -> Mux {
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        // Streams the peer opened that wait for `accept`: no more than it may have open
        // at once. Past that a stream is refused (see `on_event`).
        let (in_tx, in_rx) = mpsc::channel(cfg.max_concurrent_streams.max(1) as usize);
        let tuning = if cfg.role == Role::Client {
            Tuning::CLIENT
        } else {
            Tuning::SERVER
        };
        let mut owner = MuxOwner {
            cmds: cmd_rx,
            cmd_tx: cmd_tx.clone(),
            closing: false,
            incoming: Some(in_tx),
            streams: HashMap::new(),
            buffered: 0,
        };
        let done = tokio::spawn(async move {
            let mut session = Session::new(cfg);
            let (end, _) = conn::run(io, &mut session, &mut owner, tuning).await;
            owner.fail_all("the SPDY session ended");
            match end {
                conn::End::WriteFailed(e) => Err(e),
                _ => Ok(()),
            }
        });
        Mux {
            cmds: cmd_tx,
            incoming: in_rx,
            done: Some(done),
        }
    }

    /// Client: opens a stream with `headers` (FIN at once with `fin`). Returns once the
    /// SYN_STREAM is queued; [`MuxStream::reply_headers`] waits for the answer.
    pub async fn open(&self, headers: Headers, fin: bool) -> io::Result<MuxStream> {
        let (tx, rx) = oneshot::channel();
        self.cmds
            .send(Cmd::Open {
                headers,
                fin,
                answer: tx,
            })
            .map_err(|_| gone())?;
        rx.await.unwrap_or_else(|_| Err(gone()))
    }

    /// Server: the next stream the peer opened, `None` once the session ended.
    pub async fn accept(&mut self) -> Option<MuxStream> {
        self.incoming.recv().await
    }

    /// Ends the session: every stream's sending half is finished (FIN), and once that
    /// and everything queued before it is written, GOAWAY and the connection closes,
    /// whatever halves the peer still has open. Waits for it.
    pub async fn close(mut self) -> io::Result<()> {
        let _ = self.cmds.send(Cmd::Close);
        match self.done.take() {
            Some(t) => t.await.map_err(io::Error::other)?,
            None => Ok(()),
        }
    }
}

impl Drop for Mux {
    fn drop(&mut self) {
        let _ = self.cmds.send(Cmd::Close);
    }
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the SPDY session ended")
}

/// One stream of a [`Mux`]; see the module doc.
pub struct MuxStream {
    id: StreamId,
    headers: Headers,
    reply: Option<oneshot::Receiver<io::Result<Headers>>>,
    send: MuxSend,
    recv: MuxRecv,
}

/// The sending half of a [`MuxStream`].
pub struct MuxSend {
    id: StreamId,
    cmds: mpsc::UnboundedSender<Cmd>,
    room: Arc<Semaphore>,
}

/// The receiving half of a [`MuxStream`].
pub struct MuxRecv {
    id: StreamId,
    cmds: mpsc::UnboundedSender<Cmd>,
    rx: mpsc::UnboundedReceiver<Chunk>,
}

impl MuxStream {
    /// The stream id.
    pub fn id(&self) -> StreamId {
        self.id
    }

    /// The headers the peer opened the stream with (server side); empty on the client.
    pub fn headers(&self) -> &Headers {
        &self.headers
    }

    /// Client: waits for the peer's SYN_REPLY and returns its headers.
    pub async fn reply_headers(&mut self) -> io::Result<Headers> {
        match self.reply.take() {
            Some(rx) => rx.await.unwrap_or_else(|_| Err(gone())),
            None => Err(io::Error::other("no reply to wait for")),
        }
    }

    /// Server: answers the stream with SYN_REPLY (FIN with `fin`).
    pub fn reply(&self, headers: Headers, fin: bool) -> io::Result<()> {
        self.send
            .cmds
            .send(Cmd::Reply(self.id, headers, fin))
            .map_err(|_| gone())
    }

    /// See [`MuxSend::send`].
    pub async fn send(&self, data: Bytes) -> io::Result<()> {
        self.send.send(data).await
    }

    /// See [`MuxSend::finish`].
    pub fn finish(&self) {
        self.send.finish()
    }

    /// See [`MuxRecv::recv`].
    pub async fn recv(&mut self) -> Option<io::Result<Bytes>> {
        self.recv.recv().await
    }

    /// Ends the stream both ways with RST_STREAM `status`.
    pub fn reset(&self, status: RstStatus) {
        let _ = self.send.cmds.send(Cmd::Reset(self.id, status));
    }

    /// The two halves, to send and receive from different tasks.
    pub fn split(self) -> (MuxSend, MuxRecv) {
        (self.send, self.recv)
    }
}

impl MuxSend {
    /// Queues `data` on the stream, waiting while [`SEND_BUFFER`] bytes are queued.
    /// Fails once the stream was reset or the session ended.
    pub async fn send(&self, mut data: Bytes) -> io::Result<()> {
        while !data.is_empty() {
            let piece = data.split_to(data.len().min(PIECE));
            let permits = self
                .room
                .acquire_many(piece.len() as u32)
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "stream closed"))?;
            permits.forget();
            self.cmds
                .send(Cmd::Data(self.id, piece, false))
                .map_err(|_| gone())?;
        }
        Ok(())
    }

    /// Half-closes our side (DATA with FIN).
    pub fn finish(&self) {
        let _ = self.cmds.send(Cmd::Data(self.id, Bytes::new(), true));
    }
}

impl MuxRecv {
    /// The next bytes from the peer; `None` after its FIN; an error if the stream was
    /// reset or the session ended first. Credit goes back to the peer as bytes are read.
    pub async fn recv(&mut self) -> Option<io::Result<Bytes>> {
        let c = self.rx.recv().await?;
        if let Ok(b) = &c {
            let _ = self.cmds.send(Cmd::Release(self.id, b.len()));
        }
        Some(c)
    }
}

impl Drop for MuxRecv {
    fn drop(&mut self) {
        // Bytes nobody will read still count against the windows: give them back.
        self.rx.close();
        let mut unread = 0;
        while let Ok(c) = self.rx.try_recv() {
            unread += c.map_or(0, |b| b.len());
        }
        if unread > 0 {
            let _ = self.cmds.send(Cmd::Release(self.id, unread));
        }
    }
}

/// The loop's side of one stream.
struct Slot {
    data: Option<mpsc::UnboundedSender<Chunk>>,
    reply: Option<oneshot::Sender<io::Result<Headers>>>,
    room: Arc<Semaphore>,
    /// Bytes handed to the session whose permits have not come back yet.
    queued: usize,
}

impl Slot {
    fn fail(&mut self, why: &str) {
        if let Some(d) = self.data.take() {
            let _ = d.send(Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                why.to_string(),
            )));
        }
        if let Some(r) = self.reply.take() {
            let _ = r.send(Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                why.to_string(),
            )));
        }
        self.room.close();
    }
}

struct MuxOwner {
    cmds: mpsc::UnboundedReceiver<Cmd>,
    cmd_tx: mpsc::UnboundedSender<Cmd>,
    closing: bool,
    incoming: Option<mpsc::Sender<MuxStream>>,
    streams: HashMap<StreamId, Slot>,
    buffered: usize,
}

impl MuxOwner {
    /// A new stream's handle and the loop's slot for it.
    fn pair(
        &self,
        id: StreamId,
        headers: Headers,
    ) -> (MuxStream, Slot, oneshot::Sender<io::Result<Headers>>) {
        let (dtx, drx) = mpsc::unbounded_channel();
        let (rtx, rrx) = oneshot::channel();
        let room = Arc::new(Semaphore::new(SEND_BUFFER));
        let stream = MuxStream {
            id,
            headers,
            reply: Some(rrx),
            send: MuxSend {
                id,
                cmds: self.cmd_tx.clone(),
                room: room.clone(),
            },
            recv: MuxRecv {
                id,
                cmds: self.cmd_tx.clone(),
                rx: drx,
            },
        };
        let slot = Slot {
            data: Some(dtx),
            reply: None,
            room,
            queued: 0,
        };
        (stream, slot, rtx)
    }

    fn fail_all(&mut self, why: &str) {
        for (_, mut s) in self.streams.drain() {
            s.fail(why);
        }
    }
}

impl Owner for MuxOwner {
    type Wire = Session;
    type Input = Cmd;

    fn on_event(&mut self, session: &mut Session, ev: Event) {
        match ev {
            Event::Stream {
                id, headers, fin, ..
            } => {
                let (stream, mut slot, _) = self.pair(id, headers);
                if fin {
                    slot.data = None;
                }
                // The queue for `accept` is bounded: the session bounds the streams open at
                // once, but one the peer reset stays queued until accepted, so a peer that
                // opens and resets streams (or pushes to a client that never accepts, as
                // `speedy kube` does not) grew it without bound: 30,000 pushes with 4 KiB
                // of headers took `speedy kube port-forward` past 64 MiB. Once
                // `max_concurrent_streams` wait, a new stream is refused.
                let refused = match &self.incoming {
                    Some(tx) => tx.try_send(stream).is_err(),
                    None => true,
                };
                if refused {
                    session.reset(id, RstStatus::REFUSED_STREAM);
                } else {
                    self.streams.insert(id, slot);
                }
            }
            Event::Reply { id, headers, fin } => {
                if let Some(s) = self.streams.get_mut(&id) {
                    if let Some(r) = s.reply.take() {
                        let _ = r.send(Ok(headers));
                    }
                    if fin {
                        s.data = None;
                    }
                }
            }
            Event::Headers { id, fin: true, .. } => {
                if let Some(s) = self.streams.get_mut(&id) {
                    s.data = None;
                }
            }
            Event::Data { id, data, fin } => {
                let n = data.len();
                let mut taken = false;
                if let Some(s) = self.streams.get_mut(&id) {
                    if let Some(d) = &s.data {
                        taken = n == 0 || d.send(Ok(data)).is_ok();
                    }
                    if fin {
                        s.data = None;
                    }
                }
                if taken {
                    self.buffered += n;
                } else {
                    session.release(id, n);
                }
            }
            Event::Reset { id, status, .. } => {
                if let Some(mut s) = self.streams.remove(&id) {
                    s.fail(&format!("stream reset: {status}"));
                }
            }
            Event::Closed { id } => {
                if let Some(s) = self.streams.remove(&id) {
                    s.room.close();
                }
            }
            Event::GoAway { unprocessed, .. } => {
                for id in unprocessed {
                    if let Some(mut s) = self.streams.remove(&id) {
                        s.fail("not processed by the peer (GOAWAY)");
                    }
                }
            }
            Event::Error { violation, .. } => self.fail_all(&violation.to_string()),
            _ => {}
        }
    }

    fn after_transmit(&mut self, session: &mut Session) {
        for (id, s) in self.streams.iter_mut().filter(|(_, s)| s.queued > 0) {
            let left = session.queued(*id);
            if left < s.queued {
                s.room.add_permits(s.queued - left);
                s.queued = left;
            }
        }
    }

    fn wants_read(&self) -> bool {
        self.buffered < RECV_BUFFER
    }

    fn wants_input(&self) -> bool {
        true // cmd_tx lives in self: the channel never closes
    }

    async fn next_input(&mut self) -> Option<Cmd> {
        self.cmds.recv().await
    }

    fn on_input(&mut self, session: &mut Session, cmd: Cmd) {
        match cmd {
            Cmd::Open {
                headers,
                fin,
                answer,
            } => {
                let r = session
                    .open(headers, 3, fin)
                    .map_err(|e| io::Error::other(format!("{e:?}")));
                let _ = answer.send(r.map(|id| {
                    let (stream, mut slot, rtx) = self.pair(id, Headers::default());
                    slot.reply = Some(rtx);
                    self.streams.insert(id, slot);
                    stream
                }));
            }
            Cmd::Reply(id, headers, fin) => {
                let _ = session.reply(id, headers, fin);
            }
            Cmd::Data(id, data, fin) => {
                let n = data.len();
                if session.send_data(id, data, fin).is_ok() {
                    if let Some(s) = self.streams.get_mut(&id) {
                        s.queued += n;
                    }
                } else if let Some(s) = self.streams.get_mut(&id) {
                    s.room.add_permits(n);
                }
            }
            Cmd::Release(id, n) => {
                self.buffered = self.buffered.saturating_sub(n);
                session.release(id, n);
            }
            Cmd::Reset(id, status) => {
                session.reset(id, status);
                if let Some(mut s) = self.streams.remove(&id) {
                    s.fail("stream reset by us");
                }
            }
            Cmd::Close => {
                // Our halves end here (a FIN where none was sent); the session ends
                // once that is written, whatever halves the peer keeps open.
                self.closing = true;
                self.incoming = None;
                for id in self.streams.keys() {
                    let _ = session.send_data(*id, Bytes::new(), true);
                }
            }
        }
    }

    fn on_peer_closed(&mut self, _session: &mut Session) -> bool {
        false
    }

    fn finished(&self, session: &Session) -> bool {
        session.is_done()
            || (self.closing && self.streams.keys().all(|id| session.queued(*id) == 0))
    }

    fn on_finish(&mut self, session: &mut Session) {
        session.goaway(spdy::GoAwayStatus::OK);
    }
}
