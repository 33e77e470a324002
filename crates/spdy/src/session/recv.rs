//! Input: bytes → frames → state changes and events.

use super::flow::{self, Scope};
use super::{is_local, Event, Role, Session, Stream, Violation};
use crate::codes::{frame_type as ft, RstStatus, SettingId};
use crate::frame::{
    decode_control, Frame, FrameError, FrameHeader, StreamId, SynStream, HEADER_LEN,
};
use crate::Version;
use bytes::{Buf, Bytes, BytesMut};
use std::ops::ControlFlow;
use std::time::Instant;

/// DATA pieces smaller than this are copied out of the read buffer; larger ones are split
/// off it without a copy. A piece split off keeps the whole read buffer (64 KiB on a
/// client) allocated for as long as its reader holds it, and the next read needs a new
/// one: a reader holding small bodies held a read buffer for every few of them.
const ZERO_COPY_DATA_MIN: usize = 4096;

/// Where the frame reader is.
#[derive(Debug, Default)]
pub(crate) enum RecvState {
    /// Waiting for an 8-byte frame header.
    #[default]
    Header,
    /// Inside a DATA payload, delivered as it arrives.
    Data {
        id: StreamId,
        remaining: usize,
        fin: bool,
        ignore: bool,
    },
    /// Inside a control payload that is too large to buffer.
    Skip {
        frame_type: u16,
        remaining: usize,
        fixed: usize,
        inflate: bool,
    },
}

impl Session {
    /// Feeds received bytes. Whole frames (and DATA payload as far as it has arrived) are
    /// taken from the front of `buf`; a partial frame header or control frame is left in
    /// it for the next call. DATA payloads are zero-copy slices of `buf`.
    pub fn recv(&mut self, buf: &mut BytesMut, now: Instant) {
        loop {
            if self.failed {
                buf.clear();
                return;
            }
            let next = match std::mem::take(&mut self.recv_state) {
                RecvState::Header => self.recv_header(buf, now),
                RecvState::Data {
                    id,
                    remaining,
                    fin,
                    ignore,
                } => self.recv_data(buf, id, remaining, fin, ignore),
                RecvState::Skip {
                    frame_type,
                    remaining,
                    fixed,
                    inflate,
                } => self.recv_skip(buf, frame_type, remaining, fixed, inflate),
            };
            if next.is_break() {
                return;
            }
        }
    }

    /// Reads a frame header from `buf` and starts its frame: a DATA frame's payload is
    /// read as it comes, a control frame too large to buffer is skipped, any other is
    /// handled once all of it is in `buf`. `Break`: more bytes are needed.
    fn recv_header(&mut self, buf: &mut BytesMut, now: Instant) -> ControlFlow<()> {
        if buf.len() < HEADER_LEN {
            return ControlFlow::Break(());
        }
        let hdr = FrameHeader::parse(buf[..HEADER_LEN].try_into().expect("8 bytes"));
        match hdr {
            FrameHeader::Data {
                stream_id,
                flags,
                len,
            } => {
                buf.advance(HEADER_LEN);
                self.start_data(stream_id, flags, len);
            }
            FrameHeader::Control {
                version,
                frame_type,
                flags,
                len,
            } => {
                if len > self.cfg.max_control_frame.max(8192) {
                    buf.advance(HEADER_LEN);
                    self.start_skip(frame_type, len);
                    return ControlFlow::Continue(());
                }
                if buf.len() < HEADER_LEN + len {
                    buf.reserve(HEADER_LEN + len - buf.len());
                    return ControlFlow::Break(());
                }
                buf.advance(HEADER_LEN);
                let payload = buf.split_to(len).freeze();
                self.stats.frames_received += 1;
                let r = decode_control(
                    self.version,
                    frame_type,
                    version,
                    flags,
                    payload,
                    &mut self.decomp,
                );
                match r {
                    Ok(f) => self.on_frame(f, len, now),
                    Err(e) => self.on_frame_error(e),
                }
            }
        }
        ControlFlow::Continue(())
    }

    /// Delivers as much of a DATA payload as `buf` holds (small pieces copied, large ones
    /// split off), keeping the frame's place while `remaining` bytes of it are still to
    /// come. `Break`: `buf` is empty and the payload is not done.
    fn recv_data(
        &mut self,
        buf: &mut BytesMut,
        id: StreamId,
        remaining: usize,
        fin: bool,
        ignore: bool,
    ) -> ControlFlow<()> {
        let n = remaining.min(buf.len());
        if n == 0 && remaining > 0 {
            self.recv_state = RecvState::Data {
                id,
                remaining,
                fin,
                ignore,
            };
            return ControlFlow::Break(());
        }
        let chunk = if n < ZERO_COPY_DATA_MIN {
            let c = Bytes::copy_from_slice(&buf[..n]);
            buf.advance(n);
            c
        } else {
            buf.split_to(n).freeze()
        };
        let remaining = remaining - n;
        let ignore = self.on_data(id, chunk, fin && remaining == 0, ignore);
        if remaining > 0 {
            self.recv_state = RecvState::Data {
                id,
                remaining,
                fin,
                ignore,
            };
        }
        ControlFlow::Continue(())
    }

    /// Skips a control frame too large to buffer: first its `fixed` part (the stream id,
    /// whose stream is refused), then the rest, inflated and discarded when `inflate`
    /// (a header block, to keep the shared context in sync). `Break`: more bytes are
    /// needed.
    fn recv_skip(
        &mut self,
        buf: &mut BytesMut,
        frame_type: u16,
        remaining: usize,
        fixed: usize,
        inflate: bool,
    ) -> ControlFlow<()> {
        if fixed > 0 {
            // Read the fixed part (stream id etc.) before the header block.
            if buf.len() < fixed {
                self.recv_state = RecvState::Skip {
                    frame_type,
                    remaining,
                    fixed,
                    inflate,
                };
                return ControlFlow::Break(());
            }
            let id = StreamId(u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) & 0x7fff_ffff);
            buf.advance(fixed);
            self.on_oversized_headers(frame_type, id);
            if !self.failed {
                self.recv_state = RecvState::Skip {
                    frame_type,
                    remaining: remaining - fixed,
                    fixed: 0,
                    inflate,
                };
            }
            return ControlFlow::Continue(());
        }
        let n = remaining.min(buf.len());
        let part = buf.split_to(n);
        if inflate {
            if let Err(e) = self.decomp.skip(&part) {
                self.violation(Violation::Compression(format!("{e:?}")));
                return ControlFlow::Continue(());
            }
        }
        if remaining > n {
            self.recv_state = RecvState::Skip {
                frame_type,
                remaining: remaining - n,
                fixed: 0,
                inflate,
            };
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    /// Convenience for tests and simple drivers: feeds a slice (copied).
    pub fn recv_slice(&mut self, data: &[u8], now: Instant) -> usize {
        let mut b = BytesMut::from(data);
        self.recv(&mut b, now);
        data.len() - b.len()
    }

    fn start_skip(&mut self, frame_type: u16, len: usize) {
        let fixed = match frame_type {
            ft::SYN_STREAM => 10,
            ft::SYN_REPLY | ft::HEADERS if self.version == Version::V2 => 6,
            ft::SYN_REPLY | ft::HEADERS => 4,
            _ => 0,
        };
        let known = matches!(
            frame_type,
            ft::SETTINGS | ft::RST_STREAM | ft::PING | ft::GOAWAY | ft::PRIORITY
        ) || (frame_type == ft::WINDOW_UPDATE && self.version != Version::V2);
        if fixed > 0 && len >= fixed {
            self.recv_state = RecvState::Skip {
                frame_type,
                remaining: len,
                fixed,
                inflate: true,
            };
        } else if known || fixed > 0 {
            self.violation(Violation::ControlFrameTooLarge(frame_type));
        } else {
            // Unknown types and CREDENTIAL are skipped by length (digest §2.11).
            self.recv_state = RecvState::Skip {
                frame_type,
                remaining: len,
                fixed: 0,
                inflate: false,
            };
        }
    }

    /// A header-bearing frame too large to buffer: its block is being inflated and
    /// discarded; the stream is refused with FRAME_TOO_LARGE (digest §3.3).
    fn on_oversized_headers(&mut self, frame_type: u16, id: StreamId) {
        self.stats.frames_received += 1;
        if frame_type == ft::SYN_STREAM && !self.accept_new_peer_id(id) {
            return;
        }
        self.violation(Violation::HeadersTooLarge(id));
    }

    /// Checks and records a new peer stream id (ids must increase, with the peer's parity).
    fn accept_new_peer_id(&mut self, id: StreamId) -> bool {
        let peer_parity = if self.cfg.role == Role::Server {
            id.is_client_initiated()
        } else {
            id.is_server_initiated()
        };
        if id.0 == 0 || !peer_parity || id.0 <= self.last_peer_id {
            if self.streams.contains_key(&id.0) {
                self.violation(Violation::DuplicateStream(id));
            } else {
                self.violation(Violation::BadStreamId(id));
            }
            return false;
        }
        self.last_peer_id = id.0;
        true
    }

    fn start_data(&mut self, id: StreamId, flags: u8, len: usize) {
        self.stats.frames_received += 1;
        let fin = flags & crate::codes::flags::FIN != 0;
        if self.cfg.log_frames {
            let f = if fin { " fin" } else { "" };
            self.events.push_back(Event::Frame {
                sent: false,
                summary: format!("DATA stream={id} len={len}{f}"),
            });
        }
        if id.0 == 0 {
            self.violation(Violation::DataOnStreamZero);
            return;
        }
        let mut ignore = false;
        match self.streams.get(&id.0) {
            None => {
                let never_opened = if is_local(self.cfg.role, id) {
                    id.0 >= self.next_local_id
                } else {
                    id.0 > self.last_peer_id
                };
                if never_opened && !self.goaway_sent {
                    self.violation(Violation::UnknownStream(id));
                }
                // Otherwise recently closed or reset: drop quietly (no RST storms, §10.2).
                ignore = true;
            }
            Some(st) => {
                let v = if flags & 0x02 != 0 {
                    Some(Violation::CompressedData(id))
                } else if !st.remote_open {
                    Some(Violation::AfterFin(id))
                } else if is_local(self.cfg.role, id) && !st.replied {
                    Some(Violation::DataBeforeReply(id))
                } else {
                    None
                };
                if let Some(v) = v {
                    self.violation(v);
                    ignore = true;
                }
            }
        }
        if self.failed {
            return;
        }
        if len == 0 {
            self.on_data(id, bytes::Bytes::new(), fin, ignore);
        } else {
            self.recv_state = RecvState::Data {
                id,
                remaining: len,
                fin,
                ignore,
            };
        }
    }

    /// Accounts and delivers one piece of DATA; returns whether the rest of the frame is
    /// to be ignored.
    fn on_data(&mut self, id: StreamId, data: bytes::Bytes, fin: bool, mut ignore: bool) -> bool {
        let n = data.len();
        self.stats.data_bytes_received += n as u64;
        // Every byte counts against the session window, even for ignored streams (§5.2).
        if let Err(e) = self.session_recv.receive(n) {
            if self.version.has_session_flow_control() && !self.tolerate_overrun() {
                self.violation(e.at(Scope::Session));
                return true;
            }
        }
        if !ignore && !self.streams.contains_key(&id.0) {
            ignore = true;
        }
        if ignore {
            self.release_session(n);
            return true;
        }
        let st = self.streams.get_mut(&id.0).expect("checked");
        if let Err(e) = st.recv.receive(n) {
            if self.version.has_stream_flow_control() {
                if self.tolerate_overrun() {
                    self.stats.window_overrun_bytes += n as u64;
                } else {
                    self.violation(e.at(Scope::Stream(id)));
                    self.release_session(n);
                    return true;
                }
            }
        }
        if fin {
            if let Some(st) = self.streams.get_mut(&id.0) {
                st.remote_open = false;
            }
        }
        if n > 0 || fin {
            self.events.push_back(Event::Data { id, data, fin });
        }
        if fin {
            self.maybe_close(id);
        }
        false
    }

    fn on_frame_error(&mut self, e: FrameError) {
        match e {
            FrameError::Malformed { .. } => {
                self.violation(Violation::MalformedFrame(e.to_string()))
            }
            FrameError::Compression(z) => self.violation(Violation::Compression(z.0)),
            FrameError::HeaderBlock {
                frame_type,
                stream_id,
                too_large,
                ..
            } => {
                if frame_type == ft::SYN_STREAM && !self.accept_new_peer_id(stream_id) {
                    return;
                }
                if too_large {
                    self.violation(Violation::HeadersTooLarge(stream_id));
                } else {
                    self.violation(Violation::InvalidHeaders(stream_id));
                }
            }
            FrameError::WrongVersion {
                stream_id: Some(id),
                ..
            } => self.violation(Violation::UnsupportedVersion(id)),
            FrameError::WrongVersion { .. } => {}
        }
    }

    fn on_frame(&mut self, f: Frame, len: usize, now: Instant) {
        if self.cfg.log_frames {
            self.events.push_back(Event::Frame {
                sent: false,
                summary: super::send::summarize(&f),
            });
        }
        match f {
            Frame::SynStream(s) => {
                self.note_headers_received(&s.headers, len - 10);
                self.on_syn_stream(s)
            }
            Frame::SynReply {
                stream_id,
                fin,
                headers,
            } => {
                self.note_headers_received(
                    &headers,
                    len - if self.version == Version::V2 { 6 } else { 4 },
                );
                self.on_reply(stream_id, fin, headers)
            }
            Frame::Headers {
                stream_id,
                fin,
                headers,
            } => {
                self.note_headers_received(
                    &headers,
                    len - if self.version == Version::V2 { 6 } else { 4 },
                );
                self.on_headers(stream_id, fin, headers)
            }
            Frame::RstStream { stream_id, status } => self.on_rst(stream_id, status),
            Frame::Settings { entries, .. } => self.on_settings(entries),
            Frame::Ping { id } => {
                let ours = if self.cfg.role == Role::Client {
                    id & 1 == 1
                } else {
                    id & 1 == 0
                };
                if !ours {
                    self.urgent.push_back(Frame::Ping { id });
                } else if let Some(sent) = self.pings.remove(&id) {
                    self.events.push_back(Event::Pong {
                        id,
                        rtt: now.saturating_duration_since(sent),
                    });
                }
            }
            Frame::GoAway { last_good, status } => self.on_goaway(last_good, status),
            Frame::WindowUpdate { stream_id, delta } => self.on_window_update(stream_id, delta),
            // speedy's extension: a stream the peer no longer has is not an error.
            Frame::Priority {
                stream_id,
                priority,
            } => self.set_priority(stream_id, priority),
            Frame::Noop | Frame::Credential { .. } | Frame::Unknown { .. } | Frame::Data { .. } => {
            }
        }
    }

    fn note_headers_received(&mut self, h: &crate::Headers, compressed: usize) {
        self.stats.header_bytes_raw_received += h.encoded_len(self.version) as u64;
        self.stats.header_bytes_compressed_received += compressed as u64;
    }

    fn on_syn_stream(&mut self, s: SynStream) {
        let id = s.stream_id;
        if !self.accept_new_peer_id(id) {
            return;
        }
        if self.goaway_sent {
            return; // After GOAWAY new streams are ignored (§2.6); the block was inflated.
        }
        let v2 = self.version == Version::V2;
        let assoc = if self.cfg.role == Role::Server {
            if s.assoc_id.0 != 0 || s.unidirectional {
                return self.violation(Violation::PushFromClient(id));
            }
            None
        } else {
            if s.assoc_id.0 == 0 {
                return self.violation(Violation::PushWithoutAssociation(id));
            }
            match self.streams.get(&s.assoc_id.0) {
                Some(a) if is_local(Role::Client, s.assoc_id) && a.remote_open => {}
                _ => return self.violation(Violation::PushInvalidAssociation(id)),
            }
            let has_url = if v2 {
                s.headers.contains("url")
            } else {
                s.headers.contains(":scheme")
                    && s.headers.contains(":host")
                    && s.headers.contains(":path")
            };
            if !has_url {
                return self.violation(Violation::PushMissingUrl(id));
            }
            if !self.cfg.accept_push {
                return self.violation(Violation::PushRefused(id));
            }
            Some(s.assoc_id)
        };
        if self.peer_streams >= self.cfg.max_concurrent_streams {
            return self.violation(if assoc.is_some() {
                Violation::PushRefused(id)
            } else {
                Violation::TooManyStreams(id)
            });
        }
        let mut st = Stream::new(
            id,
            s.priority,
            self.peer_initial_window,
            self.cfg.initial_window,
        );
        st.remote_open = !s.fin;
        st.header_bytes = s.headers.encoded_len(self.version);
        if let Some(a) = assoc {
            st.pushed = true;
            st.replied = true;
            st.local_open = false;
            st.assoc = a;
        }
        self.streams.insert(id.0, st);
        self.peer_streams += 1;
        self.events.push_back(Event::Stream {
            id,
            headers: s.headers,
            priority: s.priority,
            fin: s.fin,
            associated: assoc,
        });
        self.maybe_close(id);
    }

    fn on_reply(&mut self, id: StreamId, fin: bool, headers: crate::Headers) {
        let v = match self.streams.get(&id.0) {
            None if !is_local(self.cfg.role, id) => Some(Violation::ReplyOnPeerStream(id)),
            None if id.0 >= self.next_local_id => Some(Violation::ReplyUnknownStream(id)),
            None => return, // a stream we closed; the reply crossed our RST
            Some(st) if !is_local(self.cfg.role, id) || st.pushed => {
                Some(Violation::ReplyOnPeerStream(id))
            }
            Some(st) if st.replied => Some(Violation::DuplicateReply(id)),
            Some(st) if !st.remote_open => Some(Violation::AfterFin(id)),
            Some(_) => None,
        };
        if let Some(v) = v {
            return self.violation(v);
        }
        let st = self.streams.get_mut(&id.0).expect("checked");
        st.replied = true;
        st.header_bytes = headers.encoded_len(self.version);
        if fin {
            st.remote_open = false;
        }
        self.events.push_back(Event::Reply { id, headers, fin });
        self.maybe_close(id);
    }

    fn on_headers(&mut self, id: StreamId, fin: bool, headers: crate::Headers) {
        let v = match self.streams.get(&id.0) {
            None => {
                let never = if is_local(self.cfg.role, id) {
                    id.0 >= self.next_local_id
                } else {
                    id.0 > self.last_peer_id
                };
                if never {
                    Some(Violation::UnknownStream(id))
                } else {
                    return;
                }
            }
            Some(st) if !st.remote_open => Some(Violation::AfterFin(id)),
            Some(_) => None,
        };
        if let Some(v) = v {
            return self.violation(v);
        }
        let st = self.streams.get_mut(&id.0).expect("checked");
        // One limit for a stream's headers however they are split: HEADERS frames add
        // up, so a peer cannot make us hold more than one block's worth per stream.
        st.header_bytes = st
            .header_bytes
            .saturating_add(headers.encoded_len(self.version));
        if st.header_bytes > self.cfg.max_header_block {
            return self.violation(Violation::HeadersTooLarge(id));
        }
        if fin {
            st.remote_open = false;
        }
        self.events.push_back(Event::Headers { id, headers, fin });
        self.maybe_close(id);
    }

    fn on_rst(&mut self, id: StreamId, status: RstStatus) {
        // Never answer RST_STREAM with RST_STREAM (§2.3).
        if self.remove_stream(id).is_none() {
            return;
        }
        self.events.push_back(Event::Reset {
            id,
            status,
            remote: true,
        });
        if self.cfg.role == Role::Server {
            // A cancelled request takes its pushes with it (spdylay, §6).
            let pushes: Vec<StreamId> = self
                .streams
                .values()
                .filter(|s| s.pushed && s.assoc == id)
                .map(|s| s.id)
                .collect();
            for p in pushes {
                self.reset(p, RstStatus::CANCEL);
                self.events.push_back(Event::Reset {
                    id: p,
                    status: RstStatus::CANCEL,
                    remote: false,
                });
            }
        }
    }

    fn on_settings(&mut self, entries: Vec<crate::frame::Setting>) {
        // A hash set: a SETTINGS frame may carry thousands of ids (linear, not n²).
        let mut seen = std::collections::HashSet::with_capacity(entries.len());
        for e in &entries {
            if !seen.insert(e.id.0) {
                continue; // first one wins (§2.4)
            }
            match e.id {
                SettingId::MAX_CONCURRENT_STREAMS => self.peer_max_streams = e.value,
                SettingId::INITIAL_WINDOW_SIZE if self.version.has_stream_flow_control() => {
                    self.peer_flow.on_window_setting();
                    // Values ≥ 2^31 are ignored, as spdylay does (§5.1).
                    let Some(delta) = flow::initial_window_delta(self.peer_initial_window, e.value)
                    else {
                        continue;
                    };
                    self.peer_initial_window = e.value;
                    let ids: Vec<StreamId> = self
                        .streams
                        .values()
                        .filter(|s| s.local_open)
                        .map(|s| s.id)
                        .collect();
                    for id in ids {
                        let st = self.streams.get_mut(&id.0).expect("listed");
                        match st.send.adjust(delta) {
                            Ok(()) => self.make_ready(id),
                            Err(e) => self.violation(e.at(Scope::Stream(id))),
                        }
                    }
                }
                _ => {}
            }
        }
        self.events.push_back(Event::Settings(entries));
    }

    fn on_goaway(&mut self, last_good: StreamId, status: crate::GoAwayStatus) {
        if self.goaway_received.is_some() {
            return;
        }
        self.goaway_received = Some(last_good);
        let mut unprocessed: Vec<StreamId> = self
            .streams
            .keys()
            .map(|&k| StreamId(k))
            .filter(|&id| is_local(self.cfg.role, id) && id.0 > last_good.0)
            .collect();
        unprocessed.sort();
        for &id in &unprocessed {
            self.remove_stream(id);
        }
        self.events.push_back(Event::GoAway {
            last_good,
            status,
            unprocessed,
        });
    }

    fn on_window_update(&mut self, id: StreamId, delta: u32) {
        let scope = Scope::of(id);
        if let Err(e) = flow::check_delta(delta) {
            return self.violation(e.at(scope));
        }
        match scope {
            Scope::Session => {
                self.peer_flow.on_session_update();
                if self.version == Version::V3 && self.cfg.auto_spdy31 {
                    self.upgrade_to_spdy31();
                }
                if !self.version.has_session_flow_control() {
                    return;
                }
                if let Err(e) = self.session_send.increase(delta) {
                    self.violation(e.at(scope));
                }
                // Streams waiting for session credit never left their ready queues.
            }
            Scope::Stream(_) => {
                if self.peer_flow.on_stream_update(delta) {
                    // Settled as SPDY/3: streams waiting for session credit may go.
                    self.unpark_all();
                }
                // Unknown or closed: a WINDOW_UPDATE may cross our FIN or RST (§5.1).
                let Some(st) = self.streams.get_mut(&id.0) else {
                    return;
                };
                match st.send.increase(delta) {
                    Ok(()) => self.make_ready(id),
                    Err(e) => self.violation(e.at(scope)),
                }
            }
        }
    }

    /// Whether an overrun by the peer is accepted (`FlowControl::Lenient`, a peer
    /// that never showed flow control); our streams parked on its windows go again,
    /// since such a peer will not open them.
    fn tolerate_overrun(&mut self) -> bool {
        let was_enforcing = self.peer_flow.enforce_send();
        let ok = self.peer_flow.tolerate_overrun();
        if ok && was_enforcing {
            self.unpark_all();
        }
        ok
    }

    /// A plain-TCP server cannot tell SPDY/3 from 3.1 by framing; a session WINDOW_UPDATE
    /// from the peer says 3.1 (spdy-transport's autoSpdy31, digest §5.2). The windows
    /// were tracked all along; from now on they are enforced, and the peer gets the
    /// session credit it would have had.
    fn upgrade_to_spdy31(&mut self) {
        self.version = Version::V3_1;
        self.grant_session_window();
    }
}
