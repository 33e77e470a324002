//! Frame encoders: each frame type appends its exact wire form to a [`BufMut`]
//! (`Vec<u8>`, `BytesMut`, …). Encoders do not check the peer's SETTINGS_MAX_FRAME_SIZE
//! except [`encode_header_block`] and [`encode_push_promise_block`], which split a
//! field block to fit it; sending frames that fit is the caller's part. A payload over
//! 2^24 - 1 bytes or a stream id over 2^31 - 1 is a caller bug and panics
//! ([`FrameHeader::encode`]).

use super::{
    flags, padded_len, Continuation, Data, Frame, FrameHeader, FrameType, GoAway, Headers, Ping,
    Priority, PriorityFrame, PushPromise, RstStream, Setting, Settings, StreamId, Unknown,
    WindowUpdate,
};
use bytes::BufMut;

fn header<D: BufMut>(dst: &mut D, length: usize, kind: FrameType, flags: u8, stream_id: StreamId) {
    let length = u32::try_from(length).unwrap_or(u32::MAX);
    FrameHeader {
        length,
        kind,
        flags,
        stream_id,
    }
    .encode(dst);
}

fn flag(on: bool, bit: u8) -> u8 {
    if on {
        bit
    } else {
        0
    }
}

/// Writes Pad Length (if padded), `fixed`, `body`, then the zero padding.
fn put_padded<D: BufMut>(
    dst: &mut D,
    pad_len: Option<u8>,
    fixed: impl FnOnce(&mut D),
    body: &[u8],
) {
    if let Some(p) = pad_len {
        dst.put_u8(p);
    }
    fixed(dst);
    dst.put_slice(body);
    if let Some(p) = pad_len {
        dst.put_bytes(0, usize::from(p));
    }
}

impl<B: AsRef<[u8]>> Data<B> {
    /// Appends this DATA frame.
    pub fn encode<D: BufMut>(&self, dst: &mut D) {
        let data = self.data.as_ref();
        let f =
            flag(self.end_stream, flags::END_STREAM) | flag(self.pad_len.is_some(), flags::PADDED);
        header(
            dst,
            padded_len(data.len(), self.pad_len),
            FrameType::DATA,
            f,
            self.stream_id,
        );
        put_padded(dst, self.pad_len, |_| {}, data);
    }
}

impl<B: AsRef<[u8]>> Headers<B> {
    /// Appends this HEADERS frame (one frame: see [`encode_header_block`] to split a
    /// large field block).
    pub fn encode<D: BufMut>(&self, dst: &mut D) {
        let fragment = self.fragment.as_ref();
        let f = flag(self.end_stream, flags::END_STREAM)
            | flag(self.end_headers, flags::END_HEADERS)
            | flag(self.pad_len.is_some(), flags::PADDED)
            | flag(self.priority.is_some(), flags::PRIORITY);
        let fixed = if self.priority.is_some() {
            Priority::LEN
        } else {
            0
        };
        header(
            dst,
            padded_len(fixed + fragment.len(), self.pad_len),
            FrameType::HEADERS,
            f,
            self.stream_id,
        );
        put_padded(
            dst,
            self.pad_len,
            |d| {
                if let Some(p) = &self.priority {
                    p.encode(d);
                }
            },
            fragment,
        );
    }
}

impl PriorityFrame {
    /// Appends this PRIORITY frame.
    pub fn encode<D: BufMut>(&self, dst: &mut D) {
        header(dst, Priority::LEN, FrameType::PRIORITY, 0, self.stream_id);
        self.priority.encode(dst);
    }
}

impl RstStream {
    /// Appends this RST_STREAM frame.
    pub fn encode<D: BufMut>(&self, dst: &mut D) {
        header(dst, 4, FrameType::RST_STREAM, 0, self.stream_id);
        dst.put_u32(self.code.0);
    }
}

impl<B: AsRef<[u8]>> Settings<B> {
    /// Appends this SETTINGS frame (`params` as they are).
    pub fn encode<D: BufMut>(&self, dst: &mut D) {
        let params = self.params.as_ref();
        header(
            dst,
            params.len(),
            FrameType::SETTINGS,
            flag(self.ack, flags::ACK),
            StreamId::ZERO,
        );
        dst.put_slice(params);
    }
}

/// Appends a SETTINGS frame carrying `settings` in order.
pub fn encode_settings<D: BufMut>(settings: &[Setting], dst: &mut D) {
    header(
        dst,
        settings.len() * Setting::LEN,
        FrameType::SETTINGS,
        0,
        StreamId::ZERO,
    );
    for s in settings {
        dst.put_u16(s.id.0);
        dst.put_u32(s.value);
    }
}

/// Appends a SETTINGS frame with ACK set and no parameters.
pub fn encode_settings_ack<D: BufMut>(dst: &mut D) {
    header(dst, 0, FrameType::SETTINGS, flags::ACK, StreamId::ZERO);
}

impl<B: AsRef<[u8]>> PushPromise<B> {
    /// Appends this PUSH_PROMISE frame (one frame: see [`encode_push_promise_block`]).
    pub fn encode<D: BufMut>(&self, dst: &mut D) {
        let fragment = self.fragment.as_ref();
        let f = flag(self.end_headers, flags::END_HEADERS)
            | flag(self.pad_len.is_some(), flags::PADDED);
        header(
            dst,
            padded_len(4 + fragment.len(), self.pad_len),
            FrameType::PUSH_PROMISE,
            f,
            self.stream_id,
        );
        put_padded(
            dst,
            self.pad_len,
            |d| d.put_u32(self.promised_id.0),
            fragment,
        );
    }
}

impl Ping {
    /// Appends this PING frame.
    pub fn encode<D: BufMut>(&self, dst: &mut D) {
        header(
            dst,
            8,
            FrameType::PING,
            flag(self.ack, flags::ACK),
            StreamId::ZERO,
        );
        dst.put_slice(&self.payload);
    }
}

impl<B: AsRef<[u8]>> GoAway<B> {
    /// Appends this GOAWAY frame.
    pub fn encode<D: BufMut>(&self, dst: &mut D) {
        let debug = self.debug_data.as_ref();
        header(dst, 8 + debug.len(), FrameType::GOAWAY, 0, StreamId::ZERO);
        dst.put_u32(self.last_stream_id.0);
        dst.put_u32(self.code.0);
        dst.put_slice(debug);
    }
}

impl WindowUpdate {
    /// Appends this WINDOW_UPDATE frame.
    pub fn encode<D: BufMut>(&self, dst: &mut D) {
        header(dst, 4, FrameType::WINDOW_UPDATE, 0, self.stream_id);
        dst.put_u32(self.increment & 0x7fff_ffff);
    }
}

impl<B: AsRef<[u8]>> Continuation<B> {
    /// Appends this CONTINUATION frame.
    pub fn encode<D: BufMut>(&self, dst: &mut D) {
        let fragment = self.fragment.as_ref();
        let f = flag(self.end_headers, flags::END_HEADERS);
        header(
            dst,
            fragment.len(),
            FrameType::CONTINUATION,
            f,
            self.stream_id,
        );
        dst.put_slice(fragment);
    }
}

impl<B: AsRef<[u8]>> Unknown<B> {
    /// Appends this frame as it was received.
    pub fn encode<D: BufMut>(&self, dst: &mut D) {
        let payload = self.payload.as_ref();
        header(dst, payload.len(), self.kind, self.flags, self.stream_id);
        dst.put_slice(payload);
    }
}

impl<B: AsRef<[u8]>> Frame<B> {
    /// Appends this frame's wire form.
    pub fn encode<D: BufMut>(&self, dst: &mut D) {
        match self {
            Frame::Data(f) => f.encode(dst),
            Frame::Headers(f) => f.encode(dst),
            Frame::Priority(f) => f.encode(dst),
            Frame::RstStream(f) => f.encode(dst),
            Frame::Settings(f) => f.encode(dst),
            Frame::PushPromise(f) => f.encode(dst),
            Frame::Ping(f) => f.encode(dst),
            Frame::GoAway(f) => f.encode(dst),
            Frame::WindowUpdate(f) => f.encode(dst),
            Frame::Continuation(f) => f.encode(dst),
            Frame::Unknown(f) => f.encode(dst),
        }
    }
}

/// Writes CONTINUATION frames for what is left of a field block after the first frame.
fn continue_block<D: BufMut>(stream_id: StreamId, mut rest: &[u8], max: usize, dst: &mut D) {
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(rest.len().min(max));
        Continuation {
            stream_id,
            end_headers: tail.is_empty(),
            fragment: chunk,
        }
        .encode(dst);
        rest = tail;
    }
}

/// Appends a whole field block as one HEADERS frame followed by as many CONTINUATION
/// frames as needed, none with a payload over `max_frame_size` (the peer's
/// SETTINGS_MAX_FRAME_SIZE). END_HEADERS is set on the last frame; END_STREAM, if
/// asked for, on the HEADERS frame (§8.1).
///
/// # Panics
/// If `max_frame_size` cannot hold the priority fields plus one byte of block.
pub fn encode_header_block<D: BufMut>(
    stream_id: StreamId,
    block: &[u8],
    end_stream: bool,
    priority: Option<Priority>,
    max_frame_size: u32,
    dst: &mut D,
) {
    let max = max_frame_size as usize;
    let room = max.checked_sub(if priority.is_some() { Priority::LEN } else { 0 });
    let room = room
        .filter(|&r| r > 0)
        .expect("max_frame_size too small for a field block");
    let (first, rest) = block.split_at(block.len().min(room));
    let end_headers = rest.is_empty();
    Headers {
        stream_id,
        end_stream,
        end_headers,
        priority,
        fragment: first,
        pad_len: None,
    }
    .encode(dst);
    continue_block(stream_id, rest, max, dst);
}

/// Appends a whole field block as one PUSH_PROMISE frame followed by as many
/// CONTINUATION frames as needed, none over `max_frame_size`.
///
/// # Panics
/// If `max_frame_size` is under 5.
pub fn encode_push_promise_block<D: BufMut>(
    stream_id: StreamId,
    promised_id: StreamId,
    block: &[u8],
    max_frame_size: u32,
    dst: &mut D,
) {
    let max = max_frame_size as usize;
    assert!(max > 4, "max_frame_size too small for a field block");
    let (first, rest) = block.split_at(block.len().min(max - 4));
    let end_headers = rest.is_empty();
    PushPromise {
        stream_id,
        promised_id,
        end_headers,
        fragment: first,
        pad_len: None,
    }
    .encode(dst);
    continue_block(stream_id, rest, max, dst);
}
