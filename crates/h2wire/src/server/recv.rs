//! The receiving half: the preface, then each frame against the stream states of RFC
//! 9113 §5.1, flow control (§6.9) and the request rules of §8.

use super::{
    weight_to_urgency, Event, PendingBlock, Phase, SendState, ServerConnection, Stream,
    CONTROL_BACKLOG, MAX_EARLY_PRIORITIES, PRIORITY_UPDATE,
};
use crate::frame::{
    encode_header_block, encode_settings_ack, Continuation, Data, Frame, Headers, Ping,
    PriorityFrame, RstStream, SettingId, Settings, StreamId, Unknown, WindowUpdate,
    MAX_WINDOW_SIZE, PREFACE,
};
use crate::{ErrorCode, FrameError};
use bytes::{Buf, Bytes, BytesMut};

fn conn_err(code: ErrorCode, reason: &'static str) -> FrameError {
    FrameError::Connection { code, reason }
}

/// How a field block's decoding went.
enum BlockOutcome {
    Ok,
    TooLarge,
}

impl ServerConnection {
    /// Consumes bytes from the client: the 24-byte preface first (split anywhere), then
    /// frames, which may also be split anywhere. Events come out of
    /// [`poll_event`](Self::poll_event); frames to send (ACKs, RST_STREAMs, GOAWAY) are
    /// queued for [`poll_transmit`](Self::poll_transmit). After a connection error,
    /// input is ignored.
    pub fn recv(&mut self, bytes: &[u8]) {
        let mut buf = std::mem::take(&mut self.rbuf);
        buf.extend_from_slice(bytes);
        self.recv_buf(&mut buf);
        self.rbuf = buf;
    }

    /// As [`recv`](Self::recv), from the caller's own read buffer, without copying it:
    /// takes every whole frame off the front of `buf` and leaves an unfinished one
    /// there for the caller to complete with its next read (payloads handed out in
    /// events share `buf`'s memory). Use this or `recv` on a connection, not both.
    pub fn recv_buf(&mut self, buf: &mut BytesMut) {
        if let Phase::Preface(done) = self.phase {
            let take = (PREFACE.len() - done).min(buf.len());
            if buf[..take] != PREFACE[done..done + take] {
                self.fail(conn_err(
                    ErrorCode::PROTOCOL_ERROR,
                    "invalid connection preface",
                ));
                buf.clear();
                return;
            }
            buf.advance(take);
            if done + take < PREFACE.len() {
                self.phase = Phase::Preface(done + take);
                return;
            }
            self.phase = Phase::FirstSettings;
        }
        if self.phase == Phase::Failed {
            buf.clear();
            return;
        }
        while self.phase != Phase::Failed {
            match self.decoder.decode_bytes_mut(buf) {
                Ok(None) => break,
                Ok(Some(frame)) => self.on_frame(frame),
                Err(e @ FrameError::Connection { .. }) => self.fail(e),
                Err(
                    e @ FrameError::Stream {
                        stream_id, code, ..
                    },
                ) => {
                    if self.phase == Phase::FirstSettings {
                        self.fail(conn_err(code, "client preface not followed by SETTINGS"));
                    } else if self.streams.contains_key(&stream_id.0) {
                        self.reset_stream(stream_id, code, true);
                    } else if self.is_idle(stream_id) {
                        // RST_STREAM must not be sent on an idle stream (§6.4).
                        self.fail(e);
                    }
                }
            }
        }
        if self.phase == Phase::Failed {
            buf.clear();
        }
    }

    /// Whether `id` names a stream that was never opened (§5.1 "idle").
    fn is_idle(&self, id: StreamId) -> bool {
        if id.is_client_initiated() {
            id.0 > self.last_client_id
        } else {
            id.0 >= self.next_push_id
        }
    }

    fn on_frame(&mut self, frame: Frame<Bytes>) {
        if self.phase == Phase::FirstSettings {
            match &frame {
                Frame::Settings(s) if !s.ack => self.phase = Phase::Open,
                _ => {
                    return self.fail(conn_err(
                        ErrorCode::PROTOCOL_ERROR,
                        "client preface not followed by SETTINGS",
                    ))
                }
            }
        }
        match frame {
            Frame::Data(d) => self.on_data(d),
            Frame::Headers(h) => self.on_headers(h),
            Frame::Priority(p) => self.on_priority(p),
            Frame::RstStream(r) => self.on_rst_stream(r),
            Frame::Settings(s) => self.on_settings(s),
            Frame::PushPromise(_) => self.fail(conn_err(
                ErrorCode::PROTOCOL_ERROR,
                "PUSH_PROMISE from a client",
            )),
            Frame::Ping(p) => {
                if !p.ack && self.backlog_ok() {
                    Ping {
                        ack: true,
                        payload: p.payload,
                    }
                    .encode(&mut self.ctrl);
                }
            }
            Frame::GoAway(g) => {
                self.goaway_received = true;
                self.events.push_back(Event::GoAway {
                    last_stream_id: g.last_stream_id,
                    code: g.code,
                    debug_data: g.debug_data,
                });
            }
            Frame::WindowUpdate(w) => self.on_window_update(w),
            Frame::Continuation(c) => self.on_continuation(c),
            Frame::Unknown(u) => self.on_unknown(u),
        }
    }

    fn on_settings(&mut self, s: Settings<Bytes>) {
        if s.ack {
            self.settings_unacked = self.settings_unacked.saturating_sub(1);
            return;
        }
        for p in s.iter() {
            match p.id {
                SettingId::HEADER_TABLE_SIZE => {
                    self.hpack_enc.set_peer_table_size(p.value as usize)
                }
                SettingId::ENABLE_PUSH => self.peer_enable_push = p.value == 1,
                SettingId::MAX_CONCURRENT_STREAMS => self.peer_max_streams = Some(p.value),
                SettingId::MAX_FRAME_SIZE => self.peer_max_frame_size = p.value,
                SettingId::INITIAL_WINDOW_SIZE => {
                    // §6.9.2: the change applies to every stream's send window.
                    let delta = i64::from(p.value) - i64::from(self.peer_initial_window);
                    self.peer_initial_window = p.value;
                    let mut overflow = false;
                    for s in self.streams.values_mut() {
                        s.send_window += delta;
                        overflow |= s.send_window > i64::from(MAX_WINDOW_SIZE);
                    }
                    if overflow {
                        return self.fail(conn_err(
                            ErrorCode::FLOW_CONTROL_ERROR,
                            "SETTINGS_INITIAL_WINDOW_SIZE change overflows a stream window",
                        ));
                    }
                    if delta > 0 {
                        let ids: Vec<u32> = self.streams.keys().copied().collect();
                        for id in ids {
                            self.schedule(id);
                        }
                    }
                }
                _ => {}
            }
        }
        if self.backlog_ok() {
            encode_settings_ack(&mut self.ctrl);
        }
    }

    /// Whether the frames queued for the client are under [`CONTROL_BACKLOG`]; if not,
    /// the client makes us answer faster than it reads (a PING or SETTINGS flood):
    /// connection error ENHANCE_YOUR_CALM.
    fn backlog_ok(&mut self) -> bool {
        if self.ctrl.len() <= CONTROL_BACKLOG {
            return true;
        }
        self.fail(conn_err(
            ErrorCode::ENHANCE_YOUR_CALM,
            "too many frames to answer queued: the client does not read",
        ));
        false
    }

    fn on_data(&mut self, d: Data<Bytes>) {
        let id = d.stream_id;
        let len = d.flow_controlled_len();
        self.conn_recv_window -= i64::from(len);
        if self.conn_recv_window < 0 {
            return self.fail(conn_err(
                ErrorCode::FLOW_CONTROL_ERROR,
                "DATA beyond the connection window",
            ));
        }
        let Some(s) = self.streams.get_mut(&id.0) else {
            if self.is_idle(id) {
                return self.fail(conn_err(
                    ErrorCode::PROTOCOL_ERROR,
                    "DATA on an idle stream",
                ));
            }
            if self.was_reset_or_ignored(id.0) {
                // In flight when we reset it: not the client's fault (§5.1 closed).
                self.release_connection(len);
                return;
            }
            return self.fail(conn_err(
                ErrorCode::STREAM_CLOSED,
                "DATA on a closed stream",
            ));
        };
        if !id.is_client_initiated() && s.send == SendState::Idle {
            return self.fail(conn_err(
                ErrorCode::PROTOCOL_ERROR,
                "DATA on a reserved (pushed) stream",
            ));
        }
        if s.recv_closed {
            // Half-closed (remote), which pushed streams are from the start (§5.1).
            self.reset_stream(id, ErrorCode::STREAM_CLOSED, true);
            self.release_connection(len);
            return;
        }
        s.recv_window -= i64::from(len);
        if s.recv_window < 0 {
            self.reset_stream(id, ErrorCode::FLOW_CONTROL_ERROR, true);
            self.release_connection(len);
            return;
        }
        s.received += d.data.len() as u64;
        if let Some(cl) = s.content_length {
            if s.received > cl || (d.end_stream && s.received != cl) {
                self.reset_stream(id, ErrorCode::PROTOCOL_ERROR, true);
                self.release_connection(len);
                return;
            }
        }
        let padding = len as usize - d.data.len();
        if d.end_stream {
            s.recv_closed = true;
        }
        let done = d.end_stream && s.send == SendState::Done;
        s.unreleased += d.data.len() as u32;
        self.conn_unreleased += d.data.len() as u64;
        self.events.push_back(Event::Data {
            stream: id,
            data: d.data,
            end_stream: d.end_stream,
        });
        if padding > 0 {
            self.release_stream(id, padding as u32);
            self.release_connection(padding as u32);
        }
        if done {
            self.remove(id.0);
        }
    }

    /// A stream this side reset (frames may still be in flight), or one opened after
    /// our GOAWAY and ignored.
    fn was_reset_or_ignored(&self, id: u32) -> bool {
        (self.goaway_sent && id > self.goaway_last) || self.recently_reset.contains(&id)
    }

    fn on_headers(&mut self, h: Headers<Bytes>) {
        let pb = PendingBlock {
            stream: h.stream_id,
            end_stream: h.end_stream,
            weight_urgency: h
                .priority
                .map(|p| weight_to_urgency(u16::from(p.weight) + 1)),
            self_dependent: h.is_self_dependent(),
            continuations: 0,
        };
        if h.end_headers {
            self.on_block(pb, &h.fragment);
        } else {
            self.collecting.clear();
            self.collecting.extend_from_slice(&h.fragment);
            self.pending_block = Some(pb);
        }
    }

    fn on_continuation(&mut self, c: Continuation<Bytes>) {
        let Some(pb) = self.pending_block.as_mut() else {
            // The frame decoder enforces the sequence; this cannot happen.
            return self.fail(conn_err(ErrorCode::PROTOCOL_ERROR, "stray CONTINUATION"));
        };
        pb.continuations += 1;
        self.collecting.extend_from_slice(&c.fragment);
        let max_bytes = 2 * self.cfg.max_header_list_size as usize + 16_384;
        if pb.continuations > self.cfg.max_continuation_frames || self.collecting.len() > max_bytes
        {
            return self.fail(conn_err(
                ErrorCode::ENHANCE_YOUR_CALM,
                "too many CONTINUATION frames or too large a field block",
            ));
        }
        if c.end_headers {
            let pb = self.pending_block.take().expect("checked above");
            let block = std::mem::take(&mut self.collecting);
            self.on_block(pb, &block);
            self.collecting = block;
        }
    }

    /// Decodes a whole field block into the collector: every block must go through
    /// the HPACK decoder, whatever becomes of its stream. `None` after a connection
    /// error.
    fn decode_block(&mut self, block: &[u8], trailers: bool) -> Option<BlockOutcome> {
        let mut c = std::mem::take(&mut self.collector);
        c.reset(trailers);
        let r = self.hpack_dec.decode(block, |n, v| c.field(n, v));
        self.collector = c;
        match r {
            Ok(()) => Some(BlockOutcome::Ok),
            Err(e) if e.is_connection_error() => {
                self.fail(conn_err(
                    ErrorCode::COMPRESSION_ERROR,
                    "HPACK field block could not be decoded",
                ));
                None
            }
            Err(_) => Some(BlockOutcome::TooLarge),
        }
    }

    fn on_block(&mut self, pb: PendingBlock, block: &[u8]) {
        let id = pb.stream;
        if !id.is_client_initiated() && !self.streams.contains_key(&id.0) {
            return self.fail(conn_err(
                ErrorCode::PROTOCOL_ERROR,
                "HEADERS on a server-initiated stream id",
            ));
        }
        let existing = self.streams.contains_key(&id.0);
        if !id.is_client_initiated() && self.streams[&id.0].send == SendState::Idle {
            // Reserved (local): only RST_STREAM, PRIORITY, WINDOW_UPDATE (§5.1).
            return self.fail(conn_err(
                ErrorCode::PROTOCOL_ERROR,
                "HEADERS on a reserved (pushed) stream",
            ));
        }
        let Some(outcome) = self.decode_block(block, existing) else {
            return;
        };
        if existing {
            return self.on_trailers(pb, outcome);
        }
        if id.0 <= self.last_client_id {
            if self.was_reset_or_ignored(id.0) {
                return;
            }
            // A new stream's id must exceed every earlier one (§5.1.1); this one is
            // closed (used before, or skipped).
            return self.fail(conn_err(
                ErrorCode::PROTOCOL_ERROR,
                "HEADERS on a closed stream: stream ids must increase",
            ));
        }
        self.last_client_id = id.0;
        if self.goaway_sent {
            // Opened after our GOAWAY: ignored (§6.8); the client retries elsewhere.
            return;
        }
        if self.client_open >= self.cfg.max_concurrent_streams {
            return self.refuse(id, ErrorCode::REFUSED_STREAM);
        }
        if let BlockOutcome::TooLarge = outcome {
            return self.too_large(id, pb.end_stream);
        }
        if pb.self_dependent {
            return self.refuse(id, ErrorCode::PROTOCOL_ERROR);
        }
        let head = match self.collector.finish_request() {
            Ok(h) => h,
            Err(_) => return self.refuse(id, ErrorCode::PROTOCOL_ERROR),
        };
        if pb.end_stream && head.content_length().is_some_and(|n| n != 0) {
            return self.refuse(id, ErrorCode::PROTOCOL_ERROR);
        }
        let mut s = Stream::new(self.cfg.initial_window_size, self.peer_initial_window);
        s.recv_closed = pb.end_stream;
        s.content_length = head.content_length();
        let from_frame = self.early_priorities.remove(&id.0).or(pb.weight_urgency);
        s.urgency = from_frame
            .or(head.priority_urgency())
            .unwrap_or(super::DEFAULT_URGENCY);
        self.streams.insert(id.0, s);
        self.client_open += 1;
        self.last_processed_id = id.0;
        self.events.push_back(Event::Request {
            stream: id,
            head,
            end_stream: pb.end_stream,
        });
    }

    /// A second field block on an open stream: trailers, which must end the stream.
    fn on_trailers(&mut self, pb: PendingBlock, outcome: BlockOutcome) {
        let id = pb.stream;
        let s = self.streams.get_mut(&id.0).expect("checked by caller");
        if s.recv_closed {
            return self.reset_stream(id, ErrorCode::STREAM_CLOSED, true);
        }
        let fields = match (outcome, pb.end_stream) {
            (BlockOutcome::Ok, true) => self.collector.finish_trailers(),
            _ => Err("trailers without END_STREAM or over the size limit"),
        };
        let length_ok = s.content_length.is_none_or(|n| n == s.received);
        let Ok(fields) = fields.and_then(|f| {
            if length_ok {
                Ok(f)
            } else {
                Err("body shorter than content-length")
            }
        }) else {
            return self.reset_stream(id, ErrorCode::PROTOCOL_ERROR, true);
        };
        s.recv_closed = true;
        let done = s.send == SendState::Done;
        self.events
            .push_back(Event::Trailers { stream: id, fields });
        if done {
            self.remove(id.0);
        }
    }

    /// Resets a stream the application never saw.
    fn refuse(&mut self, id: StreamId, code: ErrorCode) {
        if !self.backlog_ok() {
            return;
        }
        RstStream {
            stream_id: id,
            code,
        }
        .encode(&mut self.ctrl);
        self.remember_reset(id.0);
    }

    /// A request head over `max_header_list_size`: answered here with 431 (Request
    /// Header Fields Too Large, RFC 6585) and END_STREAM, plus RST_STREAM NO_ERROR if
    /// the client had more to send (§8.1). An answer rather than a bare reset because
    /// the HPACK state is intact (the whole block was decoded), the connection lives on,
    /// and a status tells the client what went wrong where RST_STREAM would read as a
    /// transient failure to retry. The application never sees the request.
    fn too_large(&mut self, id: StreamId, end_stream: bool) {
        self.block.clear();
        self.hpack_enc
            .encode([(&b":status"[..], &b"431"[..])], &mut self.block);
        encode_header_block(
            id,
            &self.block,
            true,
            None,
            self.peer_max_frame_size,
            &mut self.ctrl,
        );
        self.last_processed_id = id.0;
        if end_stream {
            return;
        }
        self.refuse(id, ErrorCode::NO_ERROR);
    }

    fn on_rst_stream(&mut self, r: RstStream) {
        let id = r.stream_id;
        if self.is_idle(id) {
            return self.fail(conn_err(
                ErrorCode::PROTOCOL_ERROR,
                "RST_STREAM on an idle stream",
            ));
        }
        let Some(s) = self.remove(id.0) else {
            return;
        };
        if s.send != SendState::Done {
            self.reset_debt += 1;
            if self.reset_debt > self.cfg.max_pending_resets {
                return self.fail(conn_err(
                    ErrorCode::ENHANCE_YOUR_CALM,
                    "too many streams reset by the client (rapid reset)",
                ));
            }
        }
        self.events.push_back(Event::Reset {
            stream: id,
            code: r.code,
            remote: true,
        });
    }

    fn on_window_update(&mut self, w: WindowUpdate) {
        let inc = i64::from(w.increment);
        if w.stream_id.is_zero() {
            self.conn_send_window += inc;
            if self.conn_send_window > i64::from(MAX_WINDOW_SIZE) {
                self.fail(conn_err(
                    ErrorCode::FLOW_CONTROL_ERROR,
                    "connection window over 2^31-1",
                ));
            }
            return;
        }
        let id = w.stream_id;
        if let Some(s) = self.streams.get_mut(&id.0) {
            s.send_window += inc;
            if s.send_window > i64::from(MAX_WINDOW_SIZE) {
                return self.reset_stream(id, ErrorCode::FLOW_CONTROL_ERROR, true);
            }
            self.schedule(id.0);
        } else if self.is_idle(id) {
            self.fail(conn_err(
                ErrorCode::PROTOCOL_ERROR,
                "WINDOW_UPDATE on an idle stream",
            ));
        }
    }

    fn on_priority(&mut self, p: PriorityFrame) {
        let u = weight_to_urgency(u16::from(p.priority.weight) + 1);
        self.set_urgency(p.stream_id, u);
    }

    fn on_unknown(&mut self, u: Unknown<Bytes>) {
        if u.kind.0 != PRIORITY_UPDATE {
            return; // Unknown extension frames are ignored (§5.5).
        }
        // RFC 9218 §7.1: on stream 0, a 4-byte prioritized stream id, then the field
        // value.
        if !u.stream_id.is_zero() {
            return self.fail(conn_err(
                ErrorCode::PROTOCOL_ERROR,
                "PRIORITY_UPDATE on a stream",
            ));
        }
        let Some((id, value)) = u.payload.split_first_chunk::<4>() else {
            return self.fail(conn_err(
                ErrorCode::FRAME_SIZE_ERROR,
                "PRIORITY_UPDATE shorter than 4 bytes",
            ));
        };
        let id = StreamId(u32::from_be_bytes(*id) & 0x7fff_ffff);
        if id.is_zero() || !id.is_client_initiated() {
            return self.fail(conn_err(
                ErrorCode::PROTOCOL_ERROR,
                "PRIORITY_UPDATE for stream 0 or a pushed stream",
            ));
        }
        if let Some(urgency) = super::parse_priority_field(value) {
            self.set_urgency(id, urgency);
        }
    }

    /// An urgency from a frame: for an open stream now (overriding its `priority`
    /// field), for an idle client stream when it opens (a bounded memory).
    fn set_urgency(&mut self, id: StreamId, urgency: u8) {
        if let Some(s) = self.streams.get_mut(&id.0) {
            if s.urgency != urgency {
                s.urgency = urgency;
                self.events.push_back(Event::Priority {
                    stream: id,
                    urgency,
                });
            }
        } else if id.is_client_initiated()
            && self.is_idle(id)
            && (self.early_priorities.len() < MAX_EARLY_PRIORITIES
                || self.early_priorities.contains_key(&id.0))
        {
            self.early_priorities.insert(id.0, urgency);
        }
    }
}
