//! HTTP/2 frames (RFC 9113 §4 and §6): typed frames that borrow their payloads, a
//! decoder ([`FrameDecoder`]) and encoders that append to a [`bytes::BufMut`].
//!
//! Every frame type is generic over its payload buffer `B`: decoding a `&[u8]` gives
//! `Frame<&[u8]>` (no copy), decoding a [`bytes::Bytes`] gives `Frame<Bytes>` (no copy
//! either: the payloads are `Bytes` slices of the input). [`Frame::map`] converts one
//! into the other.

mod decode;
mod encode;
mod settings;

pub use decode::{Decoded, FrameDecoder};
pub use encode::{
    encode_header_block, encode_push_promise_block, encode_settings, encode_settings_ack,
};
pub use settings::{ConnSettings, Setting, SettingId, SettingsIter};

use crate::ErrorCode;
use bytes::BufMut;
use std::fmt;

/// The client connection preface (RFC 9113 §3.4), sent before the first SETTINGS.
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Length of the frame header (RFC 9113 §4.1).
pub const HEADER_LEN: usize = 9;

/// Initial SETTINGS_MAX_FRAME_SIZE, and the smallest value it may take (§6.5.2).
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 16_384;

/// Largest SETTINGS_MAX_FRAME_SIZE (2^24 - 1, the largest 24-bit length; §6.5.2).
pub const MAX_MAX_FRAME_SIZE: u32 = 16_777_215;

/// Largest flow-control window and window increment (2^31 - 1; §6.9, §6.9.1).
pub const MAX_WINDOW_SIZE: u32 = 0x7fff_ffff;

/// A 31-bit stream identifier (RFC 9113 §5.1.1). 0 is the connection.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct StreamId(pub u32);

impl StreamId {
    /// Stream 0: frames that apply to the whole connection.
    pub const ZERO: StreamId = StreamId(0);
    /// The largest stream identifier, 2^31 - 1.
    pub const MAX: StreamId = StreamId(0x7fff_ffff);

    /// Whether this is stream 0 (the connection).
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// Whether a client opened it (odd identifiers, §5.1.1).
    pub fn is_client_initiated(self) -> bool {
        self.0 & 1 == 1
    }

    /// Whether a server opened it (even, non-zero identifiers, §5.1.1).
    pub fn is_server_initiated(self) -> bool {
        self.0 != 0 && self.0 & 1 == 0
    }

    /// Reads a stream id from 4 bytes, ignoring the reserved high bit (§4.1).
    fn from_be_bytes(b: [u8; 4]) -> StreamId {
        StreamId(u32::from_be_bytes(b) & 0x7fff_ffff)
    }
}

impl fmt::Debug for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A frame type (RFC 9113 §6, §11.2). Unknown types are kept as their byte.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameType(pub u8);

impl FrameType {
    /// DATA (0x0, §6.1).
    pub const DATA: FrameType = FrameType(0x0);
    /// HEADERS (0x1, §6.2).
    pub const HEADERS: FrameType = FrameType(0x1);
    /// PRIORITY (0x2, §6.3).
    pub const PRIORITY: FrameType = FrameType(0x2);
    /// RST_STREAM (0x3, §6.4).
    pub const RST_STREAM: FrameType = FrameType(0x3);
    /// SETTINGS (0x4, §6.5).
    pub const SETTINGS: FrameType = FrameType(0x4);
    /// PUSH_PROMISE (0x5, §6.6).
    pub const PUSH_PROMISE: FrameType = FrameType(0x5);
    /// PING (0x6, §6.7).
    pub const PING: FrameType = FrameType(0x6);
    /// GOAWAY (0x7, §6.8).
    pub const GOAWAY: FrameType = FrameType(0x7);
    /// WINDOW_UPDATE (0x8, §6.9).
    pub const WINDOW_UPDATE: FrameType = FrameType(0x8);
    /// CONTINUATION (0x9, §6.10).
    pub const CONTINUATION: FrameType = FrameType(0x9);

    /// The RFC 9113 name of the type, or `None` for an extension or unknown type.
    pub fn name(self) -> Option<&'static str> {
        const NAMES: [&str; 10] = [
            "DATA",
            "HEADERS",
            "PRIORITY",
            "RST_STREAM",
            "SETTINGS",
            "PUSH_PROMISE",
            "PING",
            "GOAWAY",
            "WINDOW_UPDATE",
            "CONTINUATION",
        ];
        NAMES.get(usize::from(self.0)).copied()
    }
}

impl fmt::Debug for FrameType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "FrameType({:#x})", self.0),
        }
    }
}

/// Frame flag bits (RFC 9113 §6). Which bits mean what depends on the frame type;
/// undefined bits are ignored on receipt and sent as zero.
pub mod flags {
    /// DATA, HEADERS: the last frame the sender sends on this stream.
    pub const END_STREAM: u8 = 0x1;
    /// SETTINGS, PING: this frame acknowledges the peer's.
    pub const ACK: u8 = 0x1;
    /// HEADERS, PUSH_PROMISE, CONTINUATION: the field block ends in this frame.
    pub const END_HEADERS: u8 = 0x4;
    /// DATA, HEADERS, PUSH_PROMISE: a Pad Length byte and padding are present.
    pub const PADDED: u8 = 0x8;
    /// HEADERS: the Exclusive, Stream Dependency and Weight fields are present.
    pub const PRIORITY: u8 = 0x20;
}

/// The 9-byte frame header (RFC 9113 §4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// Payload length (24 bits; the header is not counted).
    pub length: u32,
    /// Frame type.
    pub kind: FrameType,
    /// Flag bits, see [`flags`].
    pub flags: u8,
    /// Stream identifier, reserved bit cleared.
    pub stream_id: StreamId,
}

impl FrameHeader {
    /// Parses the first 9 bytes of `buf`, or `None` if it is shorter.
    pub fn parse(buf: &[u8]) -> Option<FrameHeader> {
        let h: &[u8; HEADER_LEN] = buf.get(..HEADER_LEN)?.try_into().ok()?;
        Some(FrameHeader {
            length: u32::from_be_bytes([0, h[0], h[1], h[2]]),
            kind: FrameType(h[3]),
            flags: h[4],
            stream_id: StreamId::from_be_bytes([h[5], h[6], h[7], h[8]]),
        })
    }

    /// Appends the 9 header bytes to `dst`.
    ///
    /// # Panics
    /// If `length` does not fit in 24 bits or `stream_id` in 31 bits.
    pub fn encode<D: BufMut>(&self, dst: &mut D) {
        assert!(
            self.length <= MAX_MAX_FRAME_SIZE,
            "frame payload over 2^24 - 1 bytes"
        );
        assert!(self.stream_id <= StreamId::MAX, "stream id over 2^31 - 1");
        let len = self.length.to_be_bytes();
        dst.put_slice(&[len[1], len[2], len[3], self.kind.0, self.flags]);
        dst.put_u32(self.stream_id.0);
    }

    /// Whether flag bit(s) `flag` are set.
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag == flag
    }
}

/// Stream priority fields of HEADERS and PRIORITY (RFC 9113 §5.3.2, §6.3; the RFC 7540
/// scheme, deprecated by RFC 9113 but still on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priority {
    /// The Exclusive flag.
    pub exclusive: bool,
    /// The stream this one depends on.
    pub dependency: StreamId,
    /// The weight as sent: 0..=255 stands for weights 1..=256.
    pub weight: u8,
}

impl Priority {
    /// Length of the priority fields on the wire.
    pub const LEN: usize = 5;

    fn parse(b: &[u8]) -> Priority {
        let word = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        Priority {
            exclusive: word >> 31 == 1,
            dependency: StreamId(word & 0x7fff_ffff),
            weight: b[4],
        }
    }

    fn encode<D: BufMut>(&self, dst: &mut D) {
        dst.put_u32(self.dependency.0 | if self.exclusive { 1 << 31 } else { 0 });
        dst.put_u8(self.weight);
    }
}

/// DATA (RFC 9113 §6.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Data<B> {
    /// The stream (never 0).
    pub stream_id: StreamId,
    /// END_STREAM: the sender's last frame on this stream.
    pub end_stream: bool,
    /// The application data, padding removed.
    pub data: B,
    /// Pad Length if PADDED was set (the padding itself is dropped on decode, zeros
    /// on encode).
    pub pad_len: Option<u8>,
}

impl<B: AsRef<[u8]>> Data<B> {
    /// The frame's payload length, which is what flow control counts (§6.9.1): data
    /// plus Pad Length field plus padding.
    pub fn flow_controlled_len(&self) -> u32 {
        padded_len(self.data.as_ref().len(), self.pad_len) as u32
    }
}

/// HEADERS (RFC 9113 §6.2): opens a stream and carries the first field-block fragment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Headers<B> {
    /// The stream (never 0).
    pub stream_id: StreamId,
    /// END_STREAM.
    pub end_stream: bool,
    /// END_HEADERS: no CONTINUATION follows.
    pub end_headers: bool,
    /// The priority fields if the PRIORITY flag was set.
    pub priority: Option<Priority>,
    /// The field-block fragment (HPACK), padding removed.
    pub fragment: B,
    /// Pad Length if PADDED was set.
    pub pad_len: Option<u8>,
}

impl<B> Headers<B> {
    /// Whether the priority fields make the stream depend on itself, a stream error of
    /// type PROTOCOL_ERROR (§5.3.1). The decoder does not reject this itself: the field
    /// block must still go through the HPACK decoder to keep its state in step.
    pub fn is_self_dependent(&self) -> bool {
        self.priority
            .is_some_and(|p| p.dependency == self.stream_id)
    }
}

/// PRIORITY (RFC 9113 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PriorityFrame {
    /// The stream whose priority changes (never 0).
    pub stream_id: StreamId,
    /// The new priority.
    pub priority: Priority,
}

/// RST_STREAM (RFC 9113 §6.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RstStream {
    /// The stream to terminate (never 0).
    pub stream_id: StreamId,
    /// Why.
    pub code: ErrorCode,
}

/// SETTINGS (RFC 9113 §6.5). The parameters stay in their wire form (6 bytes each,
/// already validated by the decoder); [`Settings::iter`] reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings<B> {
    /// ACK: acknowledges the peer's SETTINGS (then there are no parameters).
    pub ack: bool,
    /// The parameters as on the wire: a multiple of 6 bytes.
    pub params: B,
}

impl<B: AsRef<[u8]>> Settings<B> {
    /// The parameters in wire order (unknown identifiers included; §6.5.2 says the
    /// receiver ignores them).
    pub fn iter(&self) -> SettingsIter<'_> {
        SettingsIter::new(self.params.as_ref())
    }
}

/// PUSH_PROMISE (RFC 9113 §6.6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushPromise<B> {
    /// The stream the promise is associated with (never 0).
    pub stream_id: StreamId,
    /// The stream the server reserves.
    pub promised_id: StreamId,
    /// END_HEADERS: no CONTINUATION follows.
    pub end_headers: bool,
    /// The field-block fragment (the promised request's header fields), padding removed.
    pub fragment: B,
    /// Pad Length if PADDED was set.
    pub pad_len: Option<u8>,
}

/// PING (RFC 9113 §6.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ping {
    /// ACK: this is the response to a PING.
    pub ack: bool,
    /// Opaque data, echoed in the response.
    pub payload: [u8; 8],
}

/// GOAWAY (RFC 9113 §6.8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoAway<B> {
    /// The highest peer-initiated stream the sender may have processed.
    pub last_stream_id: StreamId,
    /// Why the connection is closing.
    pub code: ErrorCode,
    /// Opaque diagnostic data.
    pub debug_data: B,
}

/// WINDOW_UPDATE (RFC 9113 §6.9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowUpdate {
    /// The stream, or 0 for the connection window.
    pub stream_id: StreamId,
    /// The window increment, 1..=2^31-1.
    pub increment: u32,
}

/// CONTINUATION (RFC 9113 §6.10).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Continuation<B> {
    /// The stream of the HEADERS or PUSH_PROMISE being continued.
    pub stream_id: StreamId,
    /// END_HEADERS: the field block ends here.
    pub end_headers: bool,
    /// The next field-block fragment.
    pub fragment: B,
}

/// A frame of a type this crate does not know (an extension, §5.5). A receiver that
/// does not implement the extension ignores it; the decoder hands it over so that one
/// that does can act on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unknown<B> {
    /// The frame type.
    pub kind: FrameType,
    /// The flag bits.
    pub flags: u8,
    /// The stream identifier.
    pub stream_id: StreamId,
    /// The whole payload.
    pub payload: B,
}

/// An HTTP/2 frame, payloads of type `B` (`&[u8]` or [`bytes::Bytes`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame<B> {
    /// DATA.
    Data(Data<B>),
    /// HEADERS.
    Headers(Headers<B>),
    /// PRIORITY.
    Priority(PriorityFrame),
    /// RST_STREAM.
    RstStream(RstStream),
    /// SETTINGS.
    Settings(Settings<B>),
    /// PUSH_PROMISE.
    PushPromise(PushPromise<B>),
    /// PING.
    Ping(Ping),
    /// GOAWAY.
    GoAway(GoAway<B>),
    /// WINDOW_UPDATE.
    WindowUpdate(WindowUpdate),
    /// CONTINUATION.
    Continuation(Continuation<B>),
    /// Any other type.
    Unknown(Unknown<B>),
}

impl<B> Frame<B> {
    /// The frame's stream identifier (0 for connection-level frames).
    pub fn stream_id(&self) -> StreamId {
        match self {
            Frame::Data(f) => f.stream_id,
            Frame::Headers(f) => f.stream_id,
            Frame::Priority(f) => f.stream_id,
            Frame::RstStream(f) => f.stream_id,
            Frame::PushPromise(f) => f.stream_id,
            Frame::WindowUpdate(f) => f.stream_id,
            Frame::Continuation(f) => f.stream_id,
            Frame::Unknown(f) => f.stream_id,
            Frame::Settings(_) | Frame::Ping(_) | Frame::GoAway(_) => StreamId::ZERO,
        }
    }

    /// The frame's type.
    pub fn kind(&self) -> FrameType {
        match self {
            Frame::Data(_) => FrameType::DATA,
            Frame::Headers(_) => FrameType::HEADERS,
            Frame::Priority(_) => FrameType::PRIORITY,
            Frame::RstStream(_) => FrameType::RST_STREAM,
            Frame::Settings(_) => FrameType::SETTINGS,
            Frame::PushPromise(_) => FrameType::PUSH_PROMISE,
            Frame::Ping(_) => FrameType::PING,
            Frame::GoAway(_) => FrameType::GOAWAY,
            Frame::WindowUpdate(_) => FrameType::WINDOW_UPDATE,
            Frame::Continuation(_) => FrameType::CONTINUATION,
            Frame::Unknown(f) => f.kind,
        }
    }

    /// Converts the payload buffers, e.g. `&[u8]` into `Bytes` with
    /// `frame.map(|s| bytes.slice_ref(s))`.
    pub fn map<C>(self, mut f: impl FnMut(B) -> C) -> Frame<C> {
        match self {
            Frame::Data(d) => Frame::Data(Data {
                stream_id: d.stream_id,
                end_stream: d.end_stream,
                data: f(d.data),
                pad_len: d.pad_len,
            }),
            Frame::Headers(h) => Frame::Headers(Headers {
                stream_id: h.stream_id,
                end_stream: h.end_stream,
                end_headers: h.end_headers,
                priority: h.priority,
                fragment: f(h.fragment),
                pad_len: h.pad_len,
            }),
            Frame::Priority(p) => Frame::Priority(p),
            Frame::RstStream(r) => Frame::RstStream(r),
            Frame::Settings(s) => Frame::Settings(Settings {
                ack: s.ack,
                params: f(s.params),
            }),
            Frame::PushPromise(p) => Frame::PushPromise(PushPromise {
                stream_id: p.stream_id,
                promised_id: p.promised_id,
                end_headers: p.end_headers,
                fragment: f(p.fragment),
                pad_len: p.pad_len,
            }),
            Frame::Ping(p) => Frame::Ping(p),
            Frame::GoAway(g) => Frame::GoAway(GoAway {
                last_stream_id: g.last_stream_id,
                code: g.code,
                debug_data: f(g.debug_data),
            }),
            Frame::WindowUpdate(w) => Frame::WindowUpdate(w),
            Frame::Continuation(c) => Frame::Continuation(Continuation {
                stream_id: c.stream_id,
                end_headers: c.end_headers,
                fragment: f(c.fragment),
            }),
            Frame::Unknown(u) => Frame::Unknown(Unknown {
                kind: u.kind,
                flags: u.flags,
                stream_id: u.stream_id,
                payload: f(u.payload),
            }),
        }
    }
}

/// Payload length of a possibly padded body of `body` bytes.
fn padded_len(body: usize, pad_len: Option<u8>) -> usize {
    body + pad_len.map_or(0, |p| 1 + usize::from(p))
}
