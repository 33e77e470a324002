//! The sans-IO session: streams, flow control, priorities, settings, ping, goaway, push.
//!
//! Call order (DESIGN rule 3):
//! 1. [`Session::new`]; then, whenever bytes arrive, [`Session::recv`] with them and the
//!    current time;
//! 2. drain [`Session::poll_event`] until `None`;
//! 3. act through the commands ([`Session::open`], [`Session::reply`],
//!    [`Session::send_data`], [`Session::push`], [`Session::release`], …);
//! 4. drain [`Session::poll_transmit`] into an [`OutBuf`] and write it to the transport;
//! 5. stop when [`Session::is_done`].
//!
//! The session reads no clock: `now` is a parameter wherever time matters.

mod error;
mod flow;
mod recv;
mod send;
mod stream;

pub use error::{Action, Violation};
pub use flow::{FlowControl, DEFAULT_WINDOW, MAX_WINDOW};
pub use send::OutBuf;

use crate::codes::{GoAwayStatus, RstStatus, SettingId};
use crate::compress::{CompressionConfig, HeaderCompressor, HeaderDecompressor};
use crate::frame::{Frame, Setting, StreamId, SynStream};
use crate::headers::Headers;
use crate::ids::IdMap;
use crate::Version;
use bytes::Bytes;
use flow::{PeerFlow, RecvWindow, Window};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};
use stream::{Out, Stream};

/// Which end of the connection this session is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Opens odd streams; receives pushes.
    Client,
    /// Opens even (pushed) streams.
    Server,
}

/// Session settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Client or server.
    pub role: Role,
    /// Protocol version.
    pub version: Version,
    /// Streams the peer may have open towards us at once (announced in SETTINGS).
    pub max_concurrent_streams: u32,
    /// Our per-stream receive window (announced as SETTINGS_INITIAL_WINDOW_SIZE).
    pub initial_window: u32,
    /// Our session receive window (SPDY/3.1; raised from 64 KiB by WINDOW_UPDATE 0).
    pub session_window: u32,
    /// Largest DATA payload we send in one frame; the scheduler re-decides after each.
    pub max_data_frame: usize,
    /// Largest DATA payload while one stream alone has data to send, when larger than
    /// `max_data_frame` (0: no different). Fewer frames for a lone download; as soon as
    /// another stream has data, frames are `max_data_frame` again.
    pub lone_data_frame: usize,
    /// Largest control frame we buffer (header-bearing ones beyond it are inflated and
    /// discarded, then refused with RST_STREAM FRAME_TOO_LARGE). At least 8192.
    pub max_control_frame: usize,
    /// Largest header block after decompression, and the most header bytes one stream
    /// may receive in all (its SYN_STREAM or SYN_REPLY plus every HEADERS): beyond it the
    /// stream is reset FRAME_TOO_LARGE (SPDY/2: PROTOCOL_ERROR). The h2 server uses the
    /// same number as its max header list size.
    pub max_header_block: usize,
    /// Header compression settings.
    pub compression: CompressionConfig,
    /// Client: accept server pushes.
    pub accept_push: bool,
    /// Emit [`Event::Frame`] for every frame sent and received.
    pub log_frames: bool,
    /// Server on plain TCP with `version` SPDY/3, where framing cannot tell 3 from 3.1:
    /// the session starts undecided and settles by what the peer does (the table on
    /// `flow::PeerFlow`, digest §5.2: a session WINDOW_UPDATE means 3.1, as
    /// spdy-transport's autoSpdy31 has it).
    pub auto_spdy31: bool,
    /// How strictly window overruns by the peer are treated.
    pub flow_control: FlowControl,
}

impl Config {
    /// Defaults for `role` and `version`.
    pub fn new(role: Role, version: Version) -> Config {
        Config {
            role,
            version,
            max_concurrent_streams: 100,
            initial_window: 1 << 20,
            session_window: 8 << 20,
            max_data_frame: 8192,
            lone_data_frame: 0,
            max_control_frame: 64 * 1024,
            max_header_block: 64 * 1024,
            compression: CompressionConfig::default(),
            accept_push: true,
            log_frames: false,
            auto_spdy31: false,
            flow_control: FlowControl::Strict,
        }
    }
}

/// Something that happened on the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The peer opened a stream: a request (server), or a push (client; `associated` set).
    Stream {
        /// Stream.
        id: StreamId,
        /// Headers of the SYN_STREAM.
        headers: Headers,
        /// Priority 0 (highest) ..= 7.
        priority: u8,
        /// The peer already half-closed it.
        fin: bool,
        /// For pushes, the request stream they belong to.
        associated: Option<StreamId>,
    },
    /// SYN_REPLY on one of our streams.
    Reply {
        /// Stream.
        id: StreamId,
        /// Headers.
        headers: Headers,
        /// The peer half-closed.
        fin: bool,
    },
    /// HEADERS on a stream.
    Headers {
        /// Stream.
        id: StreamId,
        /// Headers.
        headers: Headers,
        /// The peer half-closed.
        fin: bool,
    },
    /// DATA (possibly part of a frame); call [`Session::release`] once consumed.
    Data {
        /// Stream.
        id: StreamId,
        /// Payload.
        data: Bytes,
        /// The peer half-closed.
        fin: bool,
    },
    /// The stream ended with RST_STREAM: from the peer (`remote`), or sent by us because
    /// the peer broke the protocol on it.
    Reset {
        /// Stream.
        id: StreamId,
        /// Status.
        status: RstStatus,
        /// Whether the peer sent it.
        remote: bool,
    },
    /// Both halves closed normally.
    Closed {
        /// Stream.
        id: StreamId,
    },
    /// The peer's SETTINGS.
    Settings(Vec<Setting>),
    /// Answer to our PING.
    Pong {
        /// Ping id.
        id: u32,
        /// Round-trip time.
        rtt: Duration,
    },
    /// The peer sent GOAWAY. Our streams above `last_good` were never processed and are
    /// closed here; they can be retried on another session.
    GoAway {
        /// Highest of our streams the peer accepted.
        last_good: StreamId,
        /// Status.
        status: GoAwayStatus,
        /// Our streams that were not processed.
        unprocessed: Vec<StreamId>,
    },
    /// The peer broke the protocol; we queued GOAWAY and stopped reading.
    Error {
        /// What was wrong.
        violation: Violation,
        /// The GOAWAY status sent.
        status: GoAwayStatus,
    },
    /// A frame was sent or received (only with [`Config::log_frames`]).
    Frame {
        /// Sent (`true`) or received.
        sent: bool,
        /// One-line description.
        summary: String,
    },
}

/// Why a command could not be carried out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SendError {
    /// No such stream (never opened, closed or reset).
    UnknownStream(StreamId),
    /// We already sent (or queued) FIN on it, or it is a push towards us.
    StreamClosed(StreamId),
    /// Not allowed in this role (e.g. a client pushing).
    WrongRole,
    /// GOAWAY was sent or received: no new streams.
    GoingAway,
    /// Stream ids are exhausted.
    IdsExhausted,
    /// A push's associated stream is finished or unknown.
    BadAssociation(StreamId),
    /// The peer's stream limit does not allow another push now.
    PushLimit,
    /// SYN_REPLY already sent, or the stream is ours.
    AlreadyReplied(StreamId),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

impl std::error::Error for SendError {}

/// Counters for reports and the lab.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Frames written.
    pub frames_sent: u64,
    /// Frames read.
    pub frames_received: u64,
    /// Uncompressed name/value bytes we sent.
    pub header_bytes_raw_sent: u64,
    /// Compressed header-block bytes we sent.
    pub header_bytes_compressed_sent: u64,
    /// Uncompressed name/value bytes we received.
    pub header_bytes_raw_received: u64,
    /// Compressed header-block bytes we received.
    pub header_bytes_compressed_received: u64,
    /// DATA payload bytes written.
    pub data_bytes_sent: u64,
    /// DATA payload bytes read.
    pub data_bytes_received: u64,
    /// DATA bytes accepted beyond our windows from a peer without flow control
    /// ([`FlowControl::Lenient`]).
    pub window_overrun_bytes: u64,
}

/// A SPDY session (one connection, one end). See the module docs for the call order.
pub struct Session {
    cfg: Config,
    version: Version,
    comp: HeaderCompressor,
    decomp: HeaderDecompressor,
    streams: IdMap<u32, Stream>,
    /// Next id for streams we open.
    next_local_id: u32,
    /// Highest id the peer opened (GOAWAY's last-good).
    last_peer_id: u32,
    /// Peer-initiated streams currently open.
    peer_streams: u32,
    /// Our streams whose SYN_STREAM is written and that are not closed.
    local_streams: u32,
    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS.
    peer_max_streams: u32,
    /// The peer's SETTINGS_INITIAL_WINDOW_SIZE (our initial send window).
    peer_initial_window: u32,
    /// Our session credit (enforced in SPDY/3.1, counted always).
    session_send: Window,
    /// The peer's session credit (enforced in SPDY/3.1, counted always).
    session_recv: RecvWindow,
    /// The session credit beyond 64 KiB was granted (once: at the start in SPDY/3.1, or
    /// when an undecided plain-TCP session needed it).
    session_granted: bool,
    /// What the peer's flow control turned out to be.
    peer_flow: PeerFlow,
    /// A stream with DATA queued was parked for lack of credit.
    window_blocked: bool,
    /// PING answers, sent before anything else.
    urgent: VecDeque<Frame>,
    /// Other control frames, FIFO.
    control: VecDeque<Frame>,
    /// SYN_STREAMs of our streams, in id order (ids must reach the wire increasing).
    syn_queue: VecDeque<(StreamId, Headers, bool)>,
    /// Ready queues per priority, round-robin within a level.
    ready: [VecDeque<StreamId>; 8],
    events: VecDeque<Event>,
    pings: HashMap<u32, Instant>,
    next_ping_id: u32,
    goaway_sent: bool,
    goaway_received: Option<StreamId>,
    failed: bool,
    recv_state: recv::RecvState,
    stats: Stats,
    scratch: Vec<u8>,
}

impl Session {
    /// Creates a session and queues its opening SETTINGS (and, in SPDY/3.1, the session
    /// WINDOW_UPDATE).
    pub fn new(cfg: Config) -> Session {
        let version = cfg.version;
        let mut s = Session {
            comp: HeaderCompressor::new(version, cfg.compression),
            decomp: HeaderDecompressor::new(version, cfg.max_header_block),
            version,
            streams: IdMap::default(),
            next_local_id: if cfg.role == Role::Client { 1 } else { 2 },
            last_peer_id: 0,
            peer_streams: 0,
            local_streams: 0,
            peer_max_streams: u32::MAX,
            peer_initial_window: DEFAULT_WINDOW,
            session_send: Window::new(DEFAULT_WINDOW),
            session_recv: RecvWindow::new(DEFAULT_WINDOW),
            session_granted: false,
            peer_flow: PeerFlow::new(cfg.flow_control, cfg.auto_spdy31 && version == Version::V3),
            window_blocked: false,
            urgent: VecDeque::new(),
            control: VecDeque::new(),
            syn_queue: VecDeque::new(),
            ready: Default::default(),
            events: VecDeque::new(),
            pings: HashMap::new(),
            next_ping_id: if cfg.role == Role::Client { 1 } else { 2 },
            goaway_sent: false,
            goaway_received: None,
            failed: false,
            recv_state: recv::RecvState::default(),
            stats: Stats::default(),
            scratch: Vec::new(),
            cfg,
        };
        let mut entries = vec![Setting {
            id: SettingId::MAX_CONCURRENT_STREAMS,
            flags: 0,
            value: s.cfg.max_concurrent_streams,
        }];
        if version.has_stream_flow_control() {
            entries.push(Setting {
                id: SettingId::INITIAL_WINDOW_SIZE,
                flags: 0,
                value: s.cfg.initial_window,
            });
        } else {
            // SPDY/2 has no flow control, but node-spdy applies a 64 KiB window in SPDY/2
            // too and stalls waiting for WINDOW_UPDATEs; announcing the largest window
            // lets it send freely (a SPDY/2 peer without flow control ignores id 7).
            entries.push(Setting {
                id: SettingId::INITIAL_WINDOW_SIZE,
                flags: 0,
                value: MAX_WINDOW as u32,
            });
        }
        s.control.push_back(Frame::Settings {
            clear: false,
            entries,
        });
        if version.has_session_flow_control() {
            s.grant_session_window();
        }
        s
    }

    /// The protocol version.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The role.
    pub fn role(&self) -> Role {
        self.cfg.role
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Opens a stream (a request). Its SYN_STREAM waits while the peer's stream limit is
    /// reached; ids reach the wire in increasing order.
    pub fn open(
        &mut self,
        headers: Headers,
        priority: u8,
        fin: bool,
    ) -> Result<StreamId, SendError> {
        if self.cfg.role != Role::Client {
            return Err(SendError::WrongRole);
        }
        if self.goaway_sent || self.goaway_received.is_some() || self.failed {
            return Err(SendError::GoingAway);
        }
        let id = self.alloc_id()?;
        let mut st = Stream::new(
            id,
            priority.min(self.version.lowest_priority()),
            self.peer_initial_window,
            self.cfg.initial_window,
        );
        st.opened = false;
        st.fin_queued = fin;
        self.streams.insert(id.0, st);
        self.syn_queue.push_back((id, headers, fin));
        Ok(id)
    }

    fn alloc_id(&mut self) -> Result<StreamId, SendError> {
        if self.next_local_id > StreamId::MAX.0 {
            return Err(SendError::IdsExhausted);
        }
        let id = StreamId(self.next_local_id);
        self.next_local_id += 2;
        Ok(id)
    }

    /// Server: answers a peer's stream with SYN_REPLY.
    pub fn reply(&mut self, id: StreamId, headers: Headers, fin: bool) -> Result<(), SendError> {
        let st = self
            .streams
            .get_mut(&id.0)
            .ok_or(SendError::UnknownStream(id))?;
        if st.replied || st.pushed || is_local(self.cfg.role, id) {
            return Err(SendError::AlreadyReplied(id));
        }
        if !st.local_open || st.fin_queued {
            return Err(SendError::StreamClosed(id));
        }
        st.replied = true;
        st.fin_queued = fin;
        st.outq.push_back(Out::Headers {
            reply: true,
            headers,
            fin,
        });
        self.make_ready(id);
        Ok(())
    }

    /// Sends HEADERS on a stream (e.g. trailers, or late push response headers).
    pub fn send_headers(
        &mut self,
        id: StreamId,
        headers: Headers,
        fin: bool,
    ) -> Result<(), SendError> {
        let st = self.writable(id)?;
        st.fin_queued = fin;
        st.outq.push_back(Out::Headers {
            reply: false,
            headers,
            fin,
        });
        self.make_ready(id);
        Ok(())
    }

    /// Queues DATA; the scheduler cuts it into frames within the flow-control windows.
    /// An empty `data` with `fin` sends a bare FIN.
    pub fn send_data(&mut self, id: StreamId, data: Bytes, fin: bool) -> Result<(), SendError> {
        let st = self.writable(id)?;
        if !data.is_empty() {
            st.queued_bytes += data.len();
            st.outq.push_back(Out::Data(data));
        }
        if fin {
            st.fin_queued = true;
            st.outq.push_back(Out::Fin);
        }
        self.make_ready(id);
        Ok(())
    }

    fn writable(&mut self, id: StreamId) -> Result<&mut Stream, SendError> {
        let st = self
            .streams
            .get_mut(&id.0)
            .ok_or(SendError::UnknownStream(id))?;
        if !st.local_open || st.fin_queued {
            return Err(SendError::StreamClosed(id));
        }
        Ok(st)
    }

    /// Bytes queued on a stream and not yet written (for backpressure).
    pub fn queued(&self, id: StreamId) -> usize {
        self.streams.get(&id.0).map_or(0, |s| s.queued_bytes)
    }

    /// The current send window of a stream (flow control), if it exists.
    pub fn send_window(&self, id: StreamId) -> Option<i64> {
        self.streams.get(&id.0).map(|s| s.send.get())
    }

    /// Server: pushes a resource tied to the request `assoc`. `headers` must carry
    /// `:scheme`, `:host`, `:path` (SPDY/2: an absolute `url`) and the response headers
    /// (`:status`, `:version`, …). The SYN_STREAM is queued ahead of all stream data, so
    /// it reaches the wire before `assoc`'s FIN as long as this is called before that FIN
    /// is queued.
    pub fn push(
        &mut self,
        assoc: StreamId,
        headers: Headers,
        priority: u8,
    ) -> Result<StreamId, SendError> {
        if self.cfg.role != Role::Server {
            return Err(SendError::WrongRole);
        }
        if self.goaway_sent || self.goaway_received.is_some() || self.failed {
            return Err(SendError::GoingAway);
        }
        match self.streams.get(&assoc.0) {
            Some(a) if !a.pushed && a.local_open && !a.fin_queued => {}
            _ => return Err(SendError::BadAssociation(assoc)),
        }
        if self.local_streams >= self.peer_max_streams {
            return Err(SendError::PushLimit);
        }
        let id = self.alloc_id()?;
        let mut st = Stream::new(
            id,
            priority.min(self.version.lowest_priority()),
            self.peer_initial_window,
            0,
        );
        st.pushed = true;
        st.replied = true;
        st.remote_open = false;
        st.assoc = assoc;
        self.streams.insert(id.0, st);
        self.local_streams += 1;
        let syn = SynStream {
            stream_id: id,
            assoc_id: assoc,
            priority: priority.min(self.version.lowest_priority()),
            slot: 0,
            fin: false,
            unidirectional: true,
            headers,
        };
        self.control.push_back(Frame::SynStream(syn));
        Ok(id)
    }

    /// Schedules `id`'s frames at `priority` (clamped to the version's range) from the
    /// next frame on; our own sending only. Unknown ids are ignored: a reprioritization
    /// may cross the stream's end.
    pub fn set_priority(&mut self, id: StreamId, priority: u8) {
        let priority = priority.min(self.version.lowest_priority());
        let Some(st) = self.streams.get_mut(&id.0) else {
            return;
        };
        let old = st.priority;
        if old == priority {
            return;
        }
        st.priority = priority;
        if st.in_ready {
            let q = &mut self.ready[old as usize];
            if let Some(i) = q.iter().position(|&x| x == id) {
                q.remove(i);
            }
            self.ready[priority as usize].push_back(id);
        }
    }

    /// Asks the peer to send `id` at `priority` from now on, with speedy's PRIORITY
    /// extension frame (`codes::frame_type::PRIORITY`, docs/spdy-priority.md; a peer
    /// without it skips the frame), and applies it to our own sending too. A stream
    /// whose SYN_STREAM is still queued just gets the new priority in it.
    pub fn reprioritize(&mut self, id: StreamId, priority: u8) -> Result<(), SendError> {
        let st = self
            .streams
            .get(&id.0)
            .ok_or(SendError::UnknownStream(id))?;
        let opened = st.opened;
        self.set_priority(id, priority);
        if opened {
            self.control.push_back(Frame::Priority {
                stream_id: id,
                priority: priority.min(self.version.lowest_priority()),
            });
        }
        Ok(())
    }

    /// Resets a stream (e.g. a client cancelling a push, or a server refusing a request).
    /// A request still waiting for the peer's stream limit is dropped without a frame:
    /// the peer never saw its id.
    pub fn reset(&mut self, id: StreamId, status: RstStatus) {
        if let Some(st) = self.remove_stream(id) {
            if st.opened {
                self.control.push_back(Frame::RstStream {
                    stream_id: id,
                    status,
                });
            }
        }
    }

    /// Tells the session the application consumed `n` bytes of a stream's DATA; credit
    /// goes back to the peer with WINDOW_UPDATE once half a window has been consumed
    /// (the policy is in `session/flow.rs`, `RecvWindow::release`).
    pub fn release(&mut self, id: StreamId, n: usize) {
        if n == 0 {
            return;
        }
        self.release_session(n);
        if !self.version.has_stream_flow_control() {
            return;
        }
        if let Some(st) = self.streams.get_mut(&id.0) {
            // No WINDOW_UPDATE after the peer's FIN (§5.1).
            if let Some(delta) = st.recv.release(n, self.cfg.initial_window, st.remote_open) {
                self.control.push_back(Frame::WindowUpdate {
                    stream_id: id,
                    delta,
                });
            }
        }
    }

    /// Our session receive window as the peer has it: every SPDY/3.1 session window
    /// starts at 64 KiB and only grows, so a [`Config::session_window`] below that is 64
    /// KiB (credit goes back per half of it, never per byte).
    fn session_window(&self) -> u32 {
        self.cfg.session_window.max(DEFAULT_WINDOW)
    }

    /// Returns session credit for `n` consumed (or ignored) bytes.
    fn release_session(&mut self, n: usize) {
        // Counted in SPDY/3 too, in case the peer turns out to speak 3.1.
        let live = self.version.has_session_flow_control() || self.session_granted;
        if !live
            && self.peer_flow.undecided()
            && self.session_recv.unreturned().saturating_add(n as u32) >= DEFAULT_WINDOW / 2
        {
            // Undecided plain TCP: a 3.1 peer that waits for our credit has used half of
            // its 64 KiB; grant before it stalls (a pure SPDY/3 peer sees this frame only
            // after uploading 32 KiB, and the peers tested ignore it: docs/flow-control.md).
            let _ = self.session_recv.release(n, self.session_window(), false);
            return self.grant_session_window();
        }
        if let Some(delta) = self.session_recv.release(n, self.session_window(), live) {
            self.control.push_back(Frame::WindowUpdate {
                stream_id: StreamId(0),
                delta,
            });
        }
    }

    /// Session flow control starts (SPDY/3.1 at the opening, on the upgrade from 3, or
    /// when an undecided session needs it): raises the peer's session credit to
    /// [`Config::session_window`] (plus what was released meanwhile) with a
    /// WINDOW_UPDATE for stream 0, once.
    fn grant_session_window(&mut self) {
        if std::mem::replace(&mut self.session_granted, true) {
            return;
        }
        if let Some(delta) = self.session_recv.grant(self.cfg.session_window) {
            self.control.push_back(Frame::WindowUpdate {
                stream_id: StreamId(0),
                delta,
            });
        }
    }

    /// Whether our sending is stalled on windows that the peer may never open: on a
    /// plain-TCP session still undecided between SPDY/3 and 3.1, or on a peer that may
    /// have no flow control at all ([`FlowControl::Lenient`], no WINDOW_UPDATE from it
    /// yet). The IO loop then starts its stall timer and, when it expires, calls
    /// [`Session::flow_stall_expired`].
    pub fn flow_stall_pending(&self) -> bool {
        self.window_blocked && self.peer_flow.stall_may_expire()
    }

    /// The stall timer expired with no WINDOW_UPDATE: an undecided session is SPDY/3
    /// (no session window); otherwise the peer has no flow control (moby/spdystream)
    /// and our send windows are not enforced until it sends a WINDOW_UPDATE.
    pub fn flow_stall_expired(&mut self) {
        self.peer_flow.stall_expired();
        self.unpark_all();
    }

    /// Puts every stream with queued output back on the ready queues (after a change
    /// that may give parked streams credit).
    fn unpark_all(&mut self) {
        self.window_blocked = false;
        let ids: Vec<StreamId> = self
            .streams
            .values()
            .filter(|s| !s.outq.is_empty())
            .map(|s| s.id)
            .collect();
        for id in ids {
            self.make_ready(id);
        }
    }

    /// Sends a PING; its [`Event::Pong`] carries the round-trip time.
    pub fn ping(&mut self, now: Instant) -> u32 {
        let id = self.next_ping_id;
        self.next_ping_id = self.next_ping_id.wrapping_add(2) & 0x7fff_ffff;
        if self.next_ping_id == 0 {
            self.next_ping_id = if self.cfg.role == Role::Client { 1 } else { 2 };
        }
        self.pings.insert(id, now);
        self.urgent.push_back(Frame::Ping { id });
        id
    }

    /// Starts a graceful shutdown: GOAWAY(status) with the last peer stream we accepted;
    /// open streams finish, new ones are ignored.
    pub fn goaway(&mut self, status: GoAwayStatus) {
        if !self.goaway_sent {
            self.goaway_sent = true;
            self.control.push_back(Frame::GoAway {
                last_good: StreamId(self.last_peer_id),
                status,
            });
        }
    }

    /// Sends our SETTINGS (in addition to the opening ones).
    ///
    /// What we announce is what we enforce from then on: MAX_CONCURRENT_STREAMS replaces
    /// [`Config::max_concurrent_streams`], and INITIAL_WINDOW_SIZE replaces
    /// [`Config::initial_window`] for new streams. A larger window also raises the receive
    /// windows of open streams (the peer adds the difference to its send windows, §5.1);
    /// a smaller one is not applied to open streams, so DATA the peer sent before it saw
    /// the SETTINGS is still accepted.
    pub fn send_settings(&mut self, entries: Vec<Setting>) {
        // A hash set: a SETTINGS frame may carry thousands of ids (linear, not n²).
        let mut seen = std::collections::HashSet::with_capacity(entries.len());
        for e in &entries {
            if !seen.insert(e.id.0) {
                continue; // the peer keeps the first one (§2.4)
            }
            match e.id {
                SettingId::MAX_CONCURRENT_STREAMS => self.cfg.max_concurrent_streams = e.value,
                SettingId::INITIAL_WINDOW_SIZE if self.version.has_stream_flow_control() => {
                    let Some(delta) = flow::initial_window_delta(self.cfg.initial_window, e.value)
                    else {
                        continue;
                    };
                    self.cfg.initial_window = e.value;
                    for st in self.streams.values_mut() {
                        st.recv.apply_initial_delta(delta);
                    }
                }
                _ => {}
            }
        }
        self.control.push_back(Frame::Settings {
            clear: false,
            entries,
        });
    }

    /// Whether the session is finished: it failed, or GOAWAY went one way and no stream is
    /// left. Write out whatever [`Session::poll_transmit`] still gives, then close.
    pub fn is_done(&self) -> bool {
        self.failed
            || ((self.goaway_sent || self.goaway_received.is_some()) && self.streams.is_empty())
    }

    /// Whether the peer has sent GOAWAY.
    pub fn goaway_received(&self) -> bool {
        self.goaway_received.is_some()
    }

    /// Gives back memory an idle session can rebuild when it is needed: both zlib
    /// contexts shrink to their histories (about 4 KiB instead of 29 KiB at Chromium's
    /// settings) and empty queues and buffers are freed. Nothing on the wire changes. A
    /// server holding many keep-alive sessions calls this once one has been quiet for a
    /// while; it is safe at any time, only slower when the session is busy.
    pub fn park(&mut self) {
        self.comp.park();
        self.decomp.park();
        self.scratch = Vec::new();
        if self.streams.is_empty() {
            self.streams = IdMap::default();
        }
        if self.pings.is_empty() {
            self.pings = HashMap::new();
        }
        for q in [&mut self.urgent, &mut self.control] {
            if q.is_empty() {
                *q = VecDeque::new();
            }
        }
        if self.events.is_empty() {
            self.events = VecDeque::new();
        }
        if self.syn_queue.is_empty() {
            self.syn_queue = VecDeque::new();
        }
        for q in &mut self.ready {
            if q.is_empty() {
                *q = VecDeque::new();
            }
        }
    }

    /// Number of open streams.
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Whether `id` is a stream this session knows (open or half-closed).
    pub fn has_stream(&self, id: StreamId) -> bool {
        self.streams.contains_key(&id.0)
    }

    fn make_ready(&mut self, id: StreamId) {
        if let Some(st) = self.streams.get_mut(&id.0) {
            if st.opened && !st.in_ready && !st.outq.is_empty() {
                st.in_ready = true;
                self.ready[st.priority as usize].push_back(id);
            }
        }
    }

    /// Removes a stream from every structure; returns it.
    fn remove_stream(&mut self, id: StreamId) -> Option<Stream> {
        let st = self.streams.remove(&id.0)?;
        if st.in_ready {
            let q = &mut self.ready[st.priority as usize];
            if let Some(i) = q.iter().position(|&x| x == id) {
                q.remove(i);
            }
        }
        if is_local(self.cfg.role, id) {
            if st.opened {
                self.local_streams = self.local_streams.saturating_sub(1);
            } else if let Some(i) = self.syn_queue.iter().position(|(x, _, _)| *x == id) {
                self.syn_queue.remove(i);
            }
        } else {
            self.peer_streams = self.peer_streams.saturating_sub(1);
        }
        Some(st)
    }

    /// Removes a stream whose halves are both closed, with an [`Event::Closed`].
    fn maybe_close(&mut self, id: StreamId) {
        if let Some(st) = self.streams.get(&id.0) {
            if !st.local_open && !st.remote_open && st.outq.is_empty() {
                self.remove_stream(id);
                self.events.push_back(Event::Closed { id });
            }
        }
    }

    /// Applies a violation's [`Action`] (see [`Violation::action`]).
    fn violation(&mut self, v: Violation) {
        match v.action(self.version) {
            Action::GoAway(status) => {
                if !self.failed {
                    self.failed = true;
                    if !self.goaway_sent {
                        self.goaway_sent = true;
                        self.control.push_back(Frame::GoAway {
                            last_good: StreamId(self.last_peer_id),
                            status,
                        });
                    }
                    self.events.push_back(Event::Error {
                        violation: v,
                        status,
                    });
                }
            }
            Action::Reset(id, status) => {
                let known = self.remove_stream(id).is_some();
                self.control.push_back(Frame::RstStream {
                    stream_id: id,
                    status,
                });
                if known {
                    self.events.push_back(Event::Reset {
                        id,
                        status,
                        remote: false,
                    });
                }
            }
            Action::Ignore => {}
        }
    }
}

fn is_local(role: Role, id: StreamId) -> bool {
    match role {
        Role::Client => id.is_client_initiated(),
        Role::Server => id.is_server_initiated(),
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("role", &self.cfg.role)
            .field("version", &self.version)
            .field("streams", &self.streams.len())
            .field("failed", &self.failed)
            .finish()
    }
}
