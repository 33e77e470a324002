//! A sans-IO HTTP/2 server connection (RFC 9113 §3 to §8, RFC 9218 urgencies).
//!
//! Call order, as in the project's SPDY session:
//! 1. [`ServerConnection::new`] (our SETTINGS and the connection WINDOW_UPDATE are
//!    queued at once); then, whenever bytes arrive from the client,
//!    [`ServerConnection::recv`] with them (the client preface may be split anywhere);
//! 2. drain [`ServerConnection::poll_event`] until `None`;
//! 3. act through the commands: [`send_response`](ServerConnection::send_response),
//!    [`send_data`](ServerConnection::send_data), [`push`](ServerConnection::push),
//!    [`reset`](ServerConnection::reset),
//!    [`release_capacity`](ServerConnection::release_capacity),
//!    [`shutdown`](ServerConnection::shutdown);
//! 4. call [`ServerConnection::poll_transmit`] until it returns 0 and write what it
//!    appended to the transport;
//! 5. stop when [`ServerConnection::is_done`] (then close the transport).
//!
//! There is no clock, no IO and no async in here: timeouts (idle, GOAWAY drain) are the
//! caller's, which calls [`shutdown`](ServerConnection::shutdown) or drops the
//! connection.
//!
//! Errors follow RFC 9113 §5.4: a connection error queues GOAWAY with the error code,
//! reports [`Event::ConnectionError`] and ignores further input; a stream error queues
//! RST_STREAM and, if the application knew the stream, reports [`Event::Reset`] with
//! `remote: false`.

mod recv;
mod request;
mod send;

pub use request::{FieldList, RequestHead};

use crate::frame::{
    encode_header_block, encode_push_promise_block, encode_settings, GoAway, RstStream, Setting,
    SettingId, StreamId, WindowUpdate, DEFAULT_MAX_FRAME_SIZE, MAX_WINDOW_SIZE,
};
use crate::hpack::{Decoder, Encoder};
use crate::{ErrorCode, FrameError};
use bytes::{Bytes, BytesMut};
use std::collections::{HashMap, VecDeque};

/// RFC 9218's default urgency (0 is the most urgent, 7 the least).
pub const DEFAULT_URGENCY: u8 = 3;

/// Frame type of RFC 9218's PRIORITY_UPDATE (§7.1).
pub const PRIORITY_UPDATE: u8 = 0x10;

/// What the server announces and enforces.
#[derive(Clone, Debug)]
pub struct Config {
    /// SETTINGS_MAX_CONCURRENT_STREAMS: client streams open at once; HEADERS for one
    /// more are answered with RST_STREAM REFUSED_STREAM (§5.1.2). Default 100.
    pub max_concurrent_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE: each request body's receive window. Default 1 MiB.
    pub initial_window_size: u32,
    /// The connection receive window, raised from 65,535 by a WINDOW_UPDATE right after
    /// our SETTINGS. Default 8 MiB.
    pub connection_window_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE, enforced on every request's decoded field
    /// section (name + value + 32 per field). Default 64 KiB.
    ///
    /// A request head over it is answered by the connection itself with a `431`
    /// response (Request Header Fields Too Large, RFC 6585) carrying END_STREAM, then
    /// RST_STREAM NO_ERROR if the client had not ended the request (§8.1); the
    /// application never sees it. A response rather than a bare RST_STREAM because the
    /// whole block was still decoded (the HPACK state is intact, so the connection
    /// lives on), and because a status says what went wrong where RST_STREAM reads as
    /// a transient failure a client retries. Oversized trailers get RST_STREAM
    /// PROTOCOL_ERROR: a response may already be under way.
    pub max_header_list_size: u32,
    /// SETTINGS_MAX_FRAME_SIZE we accept (16,384..=16,777,215). Default 16,384.
    pub max_frame_size: u32,
    /// CONTINUATION frames allowed after one HEADERS before the connection is closed
    /// with ENHANCE_YOUR_CALM (the CONTINUATION flood). Default 32. Independently, a
    /// field block whose encoded size passes twice `max_header_list_size` plus 16 KiB is
    /// closed the same way.
    pub max_continuation_frames: u32,
    /// Client RST_STREAMs of streams whose response was not finished that the
    /// connection tolerates beyond the responses it finished (each finished response
    /// pays one back). Past it: GOAWAY ENHANCE_YOUR_CALM (rapid reset,
    /// CVE-2023-44487). Default 200.
    pub max_pending_resets: u32,
    /// Bytes [`ServerConnection::poll_transmit`] appends per call, at most (one frame
    /// may overshoot it). Default 64 KiB.
    pub transmit_batch: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_concurrent_streams: 100,
            initial_window_size: 1 << 20,
            connection_window_size: 8 << 20,
            max_header_list_size: 64 << 10,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            max_continuation_frames: 32,
            max_pending_resets: 200,
            transmit_batch: 64 << 10,
        }
    }
}

/// Something the client did, for the application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A valid request head opened `stream`; `end_stream` means there is no body.
    Request {
        /// The new stream.
        stream: StreamId,
        /// The pseudo-header fields and the regular fields.
        head: RequestHead,
        /// END_STREAM came with the head: no request body.
        end_stream: bool,
    },
    /// A chunk of a request body. Every byte must later be handed back with
    /// [`ServerConnection::release_capacity`] or the client runs out of window.
    Data {
        /// The stream.
        stream: StreamId,
        /// The bytes (padding removed), shared with the receive buffer.
        data: Bytes,
        /// The last chunk.
        end_stream: bool,
    },
    /// Trailer fields ending a request body.
    Trailers {
        /// The stream.
        stream: StreamId,
        /// The trailer fields.
        fields: FieldList,
    },
    /// A stream the application knew of was reset: by the client (`remote`) or by this
    /// connection because the client broke a rule on it. Its queued response data is
    /// dropped; request bytes already delivered in [`Event::Data`] must still be
    /// released (they count against the connection window).
    Reset {
        /// The stream.
        stream: StreamId,
        /// The RST_STREAM error code.
        code: ErrorCode,
        /// The client sent the RST_STREAM.
        remote: bool,
    },
    /// An open stream's urgency changed (PRIORITY_UPDATE or PRIORITY frame).
    Priority {
        /// The stream.
        stream: StreamId,
        /// The new urgency, 0..=7.
        urgency: u8,
    },
    /// The client sent GOAWAY: no new streams will come; streams up to
    /// `last_stream_id` (server-initiated ones) may still finish.
    GoAway {
        /// The highest pushed stream the client may have processed.
        last_stream_id: StreamId,
        /// Why.
        code: ErrorCode,
        /// Opaque debug data.
        debug_data: Bytes,
    },
    /// The connection failed; a GOAWAY with the code is queued, every stream is gone
    /// (no [`Event::Reset`] for each), and nothing more is read. Transmit, then close.
    ConnectionError(FrameError),
}

/// Why a command was refused. None of these changes the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// The stream is not open for sending (never opened, closed, reset, or the
    /// response already ended).
    #[error("stream {0} is not open for sending")]
    StreamNotOpen(StreamId),
    /// A response head was already sent on this stream.
    #[error("stream {0} already has a response head")]
    HeadAlreadySent(StreamId),
    /// Data before the response head.
    #[error("stream {0} has no response head yet")]
    NoHead(StreamId),
    /// A field name with uppercase letters or a connection-specific field (§8.2.2).
    #[error("invalid response field")]
    InvalidField,
    /// The status is not 100..=999, is 101 (which HTTP/2 forbids), or is 1xx with
    /// `end_stream`.
    #[error("invalid status {0}")]
    InvalidStatus(u16),
    /// The client disabled push, sent GOAWAY, or has as many pushed streams open as
    /// its SETTINGS_MAX_CONCURRENT_STREAMS allows, or no stream ids are left.
    #[error("push not possible now")]
    PushRefused,
    /// The connection failed, or (for a push) GOAWAY was sent or received.
    #[error("connection closing")]
    Closing,
}

/// Send state of one stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SendState {
    /// No response head yet (open, or reserved(local) for a push).
    Idle,
    /// Head sent, body open.
    Body,
    /// END_STREAM queued (or the stream was reset).
    Done,
}

/// One stream's state.
#[derive(Debug)]
struct Stream {
    /// The client ended its side (END_STREAM received; always for pushed streams).
    recv_closed: bool,
    send: SendState,
    /// Our receive window: what the client may still send.
    recv_window: i64,
    /// Bytes released by the application not yet announced by WINDOW_UPDATE.
    recv_pending: u32,
    /// Bytes delivered in [`Event::Data`] and not yet released.
    unreleased: u32,
    /// The peer's window for us.
    send_window: i64,
    /// content-length of the request, if any, and body bytes received.
    content_length: Option<u64>,
    received: u64,
    /// Response data not yet framed, and whether END_STREAM follows it.
    out: VecDeque<Bytes>,
    out_len: usize,
    out_end: bool,
    /// Trailer fields to send after the data, with END_STREAM.
    trailers: Option<Vec<(Vec<u8>, Vec<u8>)>>,
    /// In a ready queue.
    queued: bool,
    urgency: u8,
}

impl Stream {
    fn new(recv_window: u32, send_window: u32) -> Stream {
        Stream {
            recv_closed: false,
            send: SendState::Idle,
            recv_window: i64::from(recv_window),
            recv_pending: 0,
            unreleased: 0,
            send_window: i64::from(send_window),
            content_length: None,
            received: 0,
            out: VecDeque::new(),
            out_len: 0,
            out_end: false,
            trailers: None,
            queued: false,
            urgency: DEFAULT_URGENCY,
        }
    }
}

/// Where the connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Reading the client preface: this many bytes matched so far.
    Preface(usize),
    /// Preface read; the client's first frame must be SETTINGS.
    FirstSettings,
    /// Running.
    Open,
    /// A connection error: GOAWAY queued, input ignored.
    Failed,
}

/// A field block being collected across HEADERS + CONTINUATION frames.
#[derive(Debug)]
struct PendingBlock {
    stream: StreamId,
    end_stream: bool,
    /// Urgency from the HEADERS priority fields.
    weight_urgency: Option<u8>,
    /// The HEADERS priority fields name the stream itself (§5.3.1).
    self_dependent: bool,
    continuations: u32,
}

/// Streams reset by this side remembered so that frames in flight are ignored.
const RESET_MEMORY: usize = 512;
/// Bytes of queued frames (not yet taken by `poll_transmit`) beyond which a PING or
/// SETTINGS that needs an answer is a connection error ENHANCE_YOUR_CALM.
const CONTROL_BACKLOG: usize = 1 << 20;
/// Urgencies announced for streams not opened yet, remembered at most.
const MAX_EARLY_PRIORITIES: usize = 256;

/// A server's view of one HTTP/2 connection, sans IO. See the [module docs](self)
/// for the call order.
#[derive(Debug)]
pub struct ServerConnection {
    cfg: Config,
    phase: Phase,
    rbuf: BytesMut,
    decoder: crate::frame::FrameDecoder,
    hpack_dec: Decoder,
    hpack_enc: Encoder,
    /// Encoded frames waiting for `poll_transmit`, in order (everything but DATA).
    ctrl: Vec<u8>,
    /// Scratch for encoding a field block.
    block: Vec<u8>,
    /// Field block fragments collected while CONTINUATIONs come.
    collecting: Vec<u8>,
    pending_block: Option<PendingBlock>,
    collector: request::Collector,
    events: VecDeque<Event>,
    streams: HashMap<u32, Stream>,
    /// Client streams in `streams` (for MAX_CONCURRENT_STREAMS).
    client_open: u32,
    /// Pushed streams in `streams` (for the client's MAX_CONCURRENT_STREAMS).
    pushed_open: u32,
    /// Highest client stream id seen (opened, refused or ignored).
    last_client_id: u32,
    /// Highest client stream id handed to the application.
    last_processed_id: u32,
    /// Next push stream id.
    next_push_id: u32,
    recently_reset: VecDeque<u32>,
    early_priorities: HashMap<u32, u8>,
    /// Peer settings in force.
    peer_max_frame_size: u32,
    peer_initial_window: u32,
    peer_enable_push: bool,
    peer_max_streams: Option<u32>,
    /// Connection windows.
    conn_recv_window: i64,
    conn_recv_pending: u32,
    /// Body bytes delivered in [`Event::Data`] and not yet released.
    conn_unreleased: u64,
    conn_send_window: i64,
    /// Our SETTINGS not acknowledged yet.
    settings_unacked: u32,
    /// Per-urgency queues of streams with data to frame.
    ready: [VecDeque<u32>; 8],
    /// Client resets of unfinished streams, less finished responses.
    reset_debt: u32,
    /// GOAWAY sent (graceful or error).
    goaway_sent: bool,
    /// Last stream id in the GOAWAY sent.
    goaway_last: u32,
    /// GOAWAY received.
    goaway_received: bool,
}

impl ServerConnection {
    /// A connection with `cfg`; our SETTINGS and the connection window's
    /// WINDOW_UPDATE are queued for the first [`poll_transmit`](Self::poll_transmit).
    ///
    /// # Panics
    /// If `cfg.max_frame_size` is outside 16,384..=16,777,215 or a window is over
    /// 2^31 - 1.
    pub fn new(cfg: Config) -> ServerConnection {
        assert!(cfg.initial_window_size <= MAX_WINDOW_SIZE);
        assert!(cfg.connection_window_size <= MAX_WINDOW_SIZE);
        let mut decoder = crate::frame::FrameDecoder::new();
        decoder.set_max_frame_size(cfg.max_frame_size);
        let mut hpack_dec = Decoder::new();
        hpack_dec.set_max_header_list_size(cfg.max_header_list_size as usize);
        let mut conn = ServerConnection {
            phase: Phase::Preface(0),
            rbuf: BytesMut::new(),
            decoder,
            hpack_dec,
            hpack_enc: Encoder::new(),
            ctrl: Vec::with_capacity(1024),
            block: Vec::new(),
            collecting: Vec::new(),
            pending_block: None,
            collector: request::Collector::default(),
            events: VecDeque::new(),
            streams: HashMap::new(),
            client_open: 0,
            pushed_open: 0,
            last_client_id: 0,
            last_processed_id: 0,
            next_push_id: 2,
            recently_reset: VecDeque::new(),
            early_priorities: HashMap::new(),
            peer_max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            peer_initial_window: 65_535,
            peer_enable_push: true,
            peer_max_streams: None,
            conn_recv_window: 65_535,
            conn_recv_pending: 0,
            conn_unreleased: 0,
            conn_send_window: 65_535,
            settings_unacked: 1,
            ready: Default::default(),
            reset_debt: 0,
            goaway_sent: false,
            goaway_last: 0,
            goaway_received: false,
            cfg,
        };
        let mut settings = vec![
            Setting {
                id: SettingId::MAX_CONCURRENT_STREAMS,
                value: conn.cfg.max_concurrent_streams,
            },
            Setting {
                id: SettingId::INITIAL_WINDOW_SIZE,
                value: conn.cfg.initial_window_size,
            },
            Setting {
                id: SettingId::MAX_HEADER_LIST_SIZE,
                value: conn.cfg.max_header_list_size,
            },
        ];
        if conn.cfg.max_frame_size != DEFAULT_MAX_FRAME_SIZE {
            settings.push(Setting {
                id: SettingId::MAX_FRAME_SIZE,
                value: conn.cfg.max_frame_size,
            });
        }
        encode_settings(&settings, &mut conn.ctrl);
        let extra = conn.cfg.connection_window_size.saturating_sub(65_535);
        if extra > 0 {
            conn.conn_recv_window += i64::from(extra);
            WindowUpdate {
                stream_id: StreamId::ZERO,
                increment: extra,
            }
            .encode(&mut conn.ctrl);
        }
        conn
    }

    /// The next event, in the order the client's frames caused them.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Whether the connection has nothing left to do: after a connection error, or
    /// after GOAWAY (sent or received) once every stream finished, and with nothing
    /// left to transmit. The caller then closes the transport.
    pub fn is_done(&self) -> bool {
        let over = self.phase == Phase::Failed
            || ((self.goaway_sent || self.goaway_received) && self.streams.is_empty());
        over && self.ctrl.is_empty()
    }

    /// Whether [`poll_transmit`](Self::poll_transmit) may have something to write now
    /// (`false`: it certainly has nothing, so there is no need to call it).
    pub fn wants_transmit(&self) -> bool {
        !self.ctrl.is_empty()
            || (self.conn_send_window > 0 && self.ready.iter().any(|q| !q.is_empty()))
    }

    /// The current urgency of `stream` (0..=7), if it is open.
    pub fn urgency(&self, stream: StreamId) -> Option<u8> {
        self.streams.get(&stream.0).map(|s| s.urgency)
    }

    /// Whether the client acknowledged our SETTINGS (a caller enforcing
    /// SETTINGS_TIMEOUT, §6.5.3, checks this after its timer).
    pub fn settings_acknowledged(&self) -> bool {
        self.settings_unacked == 0
    }

    /// Client streams open now (counted against SETTINGS_MAX_CONCURRENT_STREAMS).
    pub fn open_streams(&self) -> u32 {
        self.client_open
    }

    /// Queues the response head of `stream`: `:status` then `fields` (lowercase
    /// names, no connection-specific fields), as HEADERS plus CONTINUATION frames when
    /// the block is over the client's SETTINGS_MAX_FRAME_SIZE. With `end_stream` the
    /// response has no body.
    pub fn send_response<N, V>(
        &mut self,
        stream: StreamId,
        status: u16,
        fields: &[(N, V)],
        end_stream: bool,
    ) -> Result<(), CommandError>
    where
        N: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let informational = status < 200;
        if !(100..=999).contains(&status) || status == 101 || (informational && end_stream) {
            return Err(CommandError::InvalidStatus(status));
        }
        if self.phase == Phase::Failed {
            return Err(CommandError::Closing);
        }
        let s = self
            .streams
            .get(&stream.0)
            .ok_or(CommandError::StreamNotOpen(stream))?;
        match s.send {
            SendState::Idle => {}
            SendState::Body => return Err(CommandError::HeadAlreadySent(stream)),
            SendState::Done => return Err(CommandError::StreamNotOpen(stream)),
        }
        if !fields
            .iter()
            .all(|(n, _)| request::valid_response_name(n.as_ref()))
        {
            return Err(CommandError::InvalidField);
        }
        let digits = [
            b'0' + (status / 100) as u8,
            b'0' + (status / 10 % 10) as u8,
            b'0' + (status % 10) as u8,
        ];
        self.block.clear();
        let all = std::iter::once((&b":status"[..], &digits[..]))
            .chain(fields.iter().map(|(n, v)| (n.as_ref(), v.as_ref())));
        self.hpack_enc.encode(all, &mut self.block);
        if informational {
            // A 1xx head precedes the final one (§8.1); the stream stays as it was.
            encode_header_block(
                stream,
                &self.block,
                false,
                None,
                self.peer_max_frame_size,
                &mut self.ctrl,
            );
            return Ok(());
        }
        self.queue_head(stream, end_stream);
        Ok(())
    }

    /// Internal: queue an already-validated response head.
    fn queue_head(&mut self, stream: StreamId, end_stream: bool) {
        encode_header_block(
            stream,
            &self.block,
            end_stream,
            None,
            self.peer_max_frame_size,
            &mut self.ctrl,
        );
        let s = self.streams.get_mut(&stream.0).expect("checked by caller");
        if end_stream {
            s.send = SendState::Done;
            self.finished_sending(stream);
        } else {
            s.send = SendState::Body;
        }
    }

    /// Queues response body bytes on `stream`; with `end_stream` the last DATA frame
    /// carries END_STREAM (an empty `data` with `end_stream` sends an empty final
    /// frame). The bytes go out in [`poll_transmit`](Self::poll_transmit) as the
    /// client's windows and the stream's urgency allow.
    pub fn send_data(
        &mut self,
        stream: StreamId,
        data: Bytes,
        end_stream: bool,
    ) -> Result<(), CommandError> {
        let s = self.body_open(stream)?;
        if !data.is_empty() {
            s.out_len += data.len();
            s.out.push_back(data);
        }
        s.out_end = end_stream;
        self.schedule(stream.0);
        Ok(())
    }

    /// Ends the response on `stream` with trailer fields (lowercase names, no
    /// pseudo-headers), sent as a HEADERS frame with END_STREAM after all queued data.
    pub fn send_trailers<N, V>(
        &mut self,
        stream: StreamId,
        fields: &[(N, V)],
    ) -> Result<(), CommandError>
    where
        N: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        if !fields
            .iter()
            .all(|(n, _)| request::valid_response_name(n.as_ref()))
        {
            return Err(CommandError::InvalidField);
        }
        let s = self.body_open(stream)?;
        s.trailers = Some(
            fields
                .iter()
                .map(|(n, v)| (n.as_ref().to_vec(), v.as_ref().to_vec()))
                .collect(),
        );
        s.out_end = true;
        self.schedule(stream.0);
        Ok(())
    }

    /// `stream`, when its response body may still grow: a head sent, no end queued.
    fn body_open(&mut self, stream: StreamId) -> Result<&mut Stream, CommandError> {
        if self.phase == Phase::Failed {
            return Err(CommandError::Closing);
        }
        let s = self
            .streams
            .get_mut(&stream.0)
            .ok_or(CommandError::StreamNotOpen(stream))?;
        match s.send {
            SendState::Idle => Err(CommandError::NoHead(stream)),
            SendState::Body if !s.out_end => Ok(s),
            SendState::Body | SendState::Done => Err(CommandError::StreamNotOpen(stream)),
        }
    }

    /// Response bytes queued on `stream` and not yet framed (for back-pressure: stop
    /// producing while this is large).
    pub fn queued_data(&self, stream: StreamId) -> usize {
        self.streams.get(&stream.0).map_or(0, |s| s.out_len)
    }

    /// Promises a pushed response (§8.4): a PUSH_PROMISE on `associated` carrying the
    /// request fields (`:method`, `:scheme`, `:authority`, `:path` first, as the
    /// caller gives them) and reserves a new even stream, returned. Answer it with
    /// [`send_response`](Self::send_response) and [`send_data`](Self::send_data) as any
    /// stream. The promised request must be safe and cacheable with no body (§8.4;
    /// GET or HEAD), which is the caller's to ensure; field names are checked. The
    /// pushed stream starts at the default urgency.
    pub fn push<N, V>(
        &mut self,
        associated: StreamId,
        request_fields: &[(N, V)],
    ) -> Result<StreamId, CommandError>
    where
        N: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        if self.phase != Phase::Open || self.goaway_sent || self.goaway_received {
            return Err(CommandError::Closing);
        }
        if !self.peer_enable_push
            || self
                .peer_max_streams
                .is_some_and(|max| self.pushed_open >= max)
            || self.next_push_id > StreamId::MAX.0
        {
            return Err(CommandError::PushRefused);
        }
        self.streams
            .get(&associated.0)
            .filter(|s| s.send != SendState::Done && associated.is_client_initiated())
            .ok_or(CommandError::StreamNotOpen(associated))?;
        if !request_fields
            .iter()
            .all(|(n, _)| request::valid_push_name(n.as_ref()))
        {
            return Err(CommandError::InvalidField);
        }
        self.block.clear();
        self.hpack_enc.encode(
            request_fields.iter().map(|(n, v)| (n.as_ref(), v.as_ref())),
            &mut self.block,
        );
        let id = StreamId(self.next_push_id);
        self.next_push_id += 2;
        encode_push_promise_block(
            associated,
            id,
            &self.block,
            self.peer_max_frame_size,
            &mut self.ctrl,
        );
        let mut s = Stream::new(0, self.peer_initial_window);
        s.recv_closed = true;
        self.streams.insert(id.0, s);
        self.pushed_open += 1;
        Ok(id)
    }

    /// Resets `stream` with `code` (RST_STREAM): queued response data is dropped.
    /// Resetting a stream that is already closed does nothing.
    pub fn reset(&mut self, stream: StreamId, code: ErrorCode) {
        if self.phase == Phase::Failed {
            return;
        }
        if self.streams.contains_key(&stream.0) {
            self.reset_stream(stream, code, false);
        }
    }

    /// Hands back `n` bytes of request body the application has consumed. WINDOW_UPDATEs
    /// go out once half a window is pending, for the stream (while the client may
    /// still send on it) and for the connection.
    pub fn release_capacity(&mut self, stream: StreamId, n: usize) {
        // Never more than was delivered: over-crediting could push the client's
        // windows past 2^31-1.
        let n = (n as u64).min(self.conn_unreleased) as u32;
        if self.phase == Phase::Failed || n == 0 {
            return;
        }
        self.conn_unreleased -= u64::from(n);
        if let Some(s) = self.streams.get_mut(&stream.0) {
            let k = n.min(s.unreleased);
            s.unreleased -= k;
            self.release_stream(stream, k);
        }
        self.release_connection(n);
    }

    /// Credits a stream's receive window (while the client may still send on it),
    /// announcing it at half the initial window.
    fn release_stream(&mut self, stream: StreamId, n: u32) {
        let half = (self.cfg.initial_window_size / 2).max(1);
        let Some(s) = self.streams.get_mut(&stream.0) else {
            return;
        };
        if s.recv_closed || n == 0 {
            return;
        }
        s.recv_pending = s.recv_pending.saturating_add(n);
        if s.recv_pending >= half {
            let inc = s.recv_pending;
            s.recv_pending = 0;
            s.recv_window += i64::from(inc);
            WindowUpdate {
                stream_id: stream,
                increment: inc,
            }
            .encode(&mut self.ctrl);
        }
    }

    /// Credits the connection receive window, announcing it at half a window.
    fn release_connection(&mut self, n: u32) {
        self.conn_recv_pending = self.conn_recv_pending.saturating_add(n);
        if self.conn_recv_pending >= (self.cfg.connection_window_size / 2).max(1) {
            let inc = self.conn_recv_pending;
            self.conn_recv_pending = 0;
            self.conn_recv_window += i64::from(inc);
            WindowUpdate {
                stream_id: StreamId::ZERO,
                increment: inc,
            }
            .encode(&mut self.ctrl);
        }
    }

    /// Starts a graceful shutdown: GOAWAY NO_ERROR with the last client stream handed
    /// to the application. Streams up to it finish; later ones are ignored.
    /// [`is_done`](Self::is_done) turns true once they have. Calling it again does
    /// nothing.
    pub fn shutdown(&mut self) {
        if self.goaway_sent || self.phase == Phase::Failed {
            return;
        }
        self.send_goaway(ErrorCode::NO_ERROR, b"");
    }

    fn send_goaway(&mut self, code: ErrorCode, debug: &[u8]) {
        self.goaway_sent = true;
        self.goaway_last = self.last_processed_id;
        GoAway {
            last_stream_id: StreamId(self.last_processed_id),
            code,
            debug_data: debug,
        }
        .encode(&mut self.ctrl);
    }

    /// A connection error: GOAWAY, event, and no more input.
    fn fail(&mut self, err: FrameError) {
        if self.phase == Phase::Failed {
            return;
        }
        self.phase = Phase::Failed;
        self.send_goaway(err.code(), b"");
        self.events.push_back(Event::ConnectionError(err));
        self.streams.clear();
        for q in &mut self.ready {
            q.clear();
        }
    }

    /// RST_STREAM on a stream in the table, removing it.
    fn reset_stream(&mut self, stream: StreamId, code: ErrorCode, report: bool) {
        RstStream {
            stream_id: stream,
            code,
        }
        .encode(&mut self.ctrl);
        self.remember_reset(stream.0);
        if self.remove(stream.0).is_some() && report {
            self.events.push_back(Event::Reset {
                stream,
                code,
                remote: false,
            });
        }
    }

    fn remember_reset(&mut self, id: u32) {
        if self.recently_reset.len() == RESET_MEMORY {
            self.recently_reset.pop_front();
        }
        self.recently_reset.push_back(id);
    }

    /// Removes a stream, keeping the counts.
    fn remove(&mut self, id: u32) -> Option<Stream> {
        let s = self.streams.remove(&id)?;
        if id & 1 == 1 {
            self.client_open -= 1;
        } else {
            self.pushed_open -= 1;
        }
        Some(s)
    }

    /// Our side of `stream` ended normally: pays back a reset and removes the stream
    /// if the client's side is closed too.
    fn finished_sending(&mut self, stream: StreamId) {
        self.reset_debt = self.reset_debt.saturating_sub(1);
        if self
            .streams
            .get(&stream.0)
            .is_some_and(|s| s.recv_closed && s.send == SendState::Done)
        {
            self.remove(stream.0);
        }
    }
}

/// An RFC 7540 weight (1..=256) as an RFC 9218 urgency, the mapping the project's h2
/// server uses (after Chromium's weight to SPDY/3 priority): 256 → 0, 147 → 3, 1 → 7.
pub fn weight_to_urgency(weight: u16) -> u8 {
    let w = u32::from(weight.clamp(1, 256));
    ((7 * (2559 - 10 * (w - 1))) / 2559) as u8
}

/// The urgency in an RFC 9218 Priority field value (`u=N`; other members ignored), or
/// `None` if it has no valid `u`.
pub fn parse_priority_field(v: &[u8]) -> Option<u8> {
    let s = std::str::from_utf8(v).ok()?;
    s.split(',').find_map(|m| {
        let (k, val) = m.trim().split_once('=')?;
        if k.trim() != "u" {
            return None;
        }
        let u: u8 = val.trim().parse().ok()?;
        (u <= 7).then_some(u)
    })
}
