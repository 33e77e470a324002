//! The frame decoder: one complete frame at a time out of a byte buffer, with the
//! per-frame validity rules of RFC 9113 §4 and §6 and the field-block sequencing rule
//! of §4.3 (a HEADERS or PUSH_PROMISE without END_HEADERS is followed only by
//! CONTINUATION frames on the same stream).

use super::{
    flags, Continuation, Data, Frame, FrameHeader, FrameType, GoAway, Headers, Ping, Priority,
    PriorityFrame, PushPromise, RstStream, Setting, Settings, SettingsIter, StreamId, Unknown,
    WindowUpdate, DEFAULT_MAX_FRAME_SIZE, HEADER_LEN, MAX_MAX_FRAME_SIZE,
};
use crate::{ErrorCode, FrameError};
use bytes::{Buf, Bytes, BytesMut};

/// Decodes frames from a byte stream (after the connection preface).
///
/// It holds two pieces of state: the largest payload accepted (the
/// SETTINGS_MAX_FRAME_SIZE this endpoint advertised) and whether a field block is
/// open and awaiting CONTINUATION. Frames come out in arrival order; a frame is
/// decoded only once it is complete, except that an oversized length is rejected as
/// soon as the 9-byte header is in.
///
/// Errors follow RFC 9113 §5.4: after [`FrameError::Connection`] the connection is
/// finished and the decoder must not be used again; after [`FrameError::Stream`] the
/// offending frame has been consumed ([`decode_bytes`](Self::decode_bytes)) or is
/// `frame_len` bytes long ([`decode`](Self::decode)) and decoding goes on.
///
/// Oversized frames are always connection errors (§4.2 allows that for any frame, and
/// a stream error would mean buffering the payload just to skip it). Size errors in
/// DATA are connection errors too, since a DATA frame always counts against the
/// connection's flow-control window.
#[derive(Clone, Debug)]
pub struct FrameDecoder {
    max_frame_size: u32,
    continuation: Option<StreamId>,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder::new()
    }
}

/// A failure inside one frame, before the decoder attaches the frame length.
enum Fail {
    Conn(ErrorCode, &'static str),
    Stream(ErrorCode, &'static str),
}

type Parsed<'a> = Result<Frame<&'a [u8]>, Fail>;

/// What [`FrameDecoder::decode`] yields: a frame borrowing from the input and the
/// number of bytes it took, or `None` if the input does not hold a whole frame yet.
pub type Decoded<'a> = Option<(Frame<&'a [u8]>, usize)>;

/// A possibly padded payload taken apart.
struct Padded<'a> {
    /// The fixed fields before the body (priority fields, promised stream id).
    fixed: &'a [u8],
    /// The body, padding removed.
    body: &'a [u8],
    /// Pad Length, if PADDED was set.
    pad_len: Option<u8>,
}

impl FrameDecoder {
    /// A decoder accepting payloads up to the default 16,384 bytes.
    pub fn new() -> FrameDecoder {
        FrameDecoder {
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            continuation: None,
        }
    }

    /// The largest payload accepted.
    pub fn max_frame_size(&self) -> u32 {
        self.max_frame_size
    }

    /// Sets the largest payload accepted: the SETTINGS_MAX_FRAME_SIZE this endpoint
    /// advertised (apply it once the peer has acknowledged the SETTINGS, or at once if
    /// it grows).
    ///
    /// # Panics
    /// If `size` is outside 16,384..=16,777,215 (RFC 9113 §6.5.2).
    pub fn set_max_frame_size(&mut self, size: u32) {
        assert!(
            (DEFAULT_MAX_FRAME_SIZE..=MAX_MAX_FRAME_SIZE).contains(&size),
            "max frame size {size} out of range"
        );
        self.max_frame_size = size;
    }

    /// The stream whose field block awaits CONTINUATION frames, if any.
    pub fn expecting_continuation(&self) -> Option<StreamId> {
        self.continuation
    }

    /// Decodes the frame at the start of `buf`: `Ok(Some((frame, consumed)))` with
    /// payloads borrowed from `buf`, or `Ok(None)` when `buf` does not yet hold the
    /// whole frame.
    pub fn decode<'a>(&mut self, buf: &'a [u8]) -> Result<Decoded<'a>, FrameError> {
        let Some(head) = self.check_header(buf)? else {
            return Ok(None);
        };
        let total = HEADER_LEN + head.length as usize;
        let Some(payload) = buf.get(HEADER_LEN..total) else {
            return Ok(None);
        };
        self.check_sequence(&head)?;
        let frame = parse(&head, payload).map_err(|fail| match fail {
            Fail::Conn(code, reason) => FrameError::Connection { code, reason },
            Fail::Stream(code, reason) => FrameError::Stream {
                stream_id: head.stream_id,
                code,
                reason,
                frame_len: total,
            },
        })?;
        self.continuation = match &frame {
            Frame::Headers(h) if !h.end_headers => Some(h.stream_id),
            Frame::PushPromise(p) if !p.end_headers => Some(p.stream_id),
            Frame::Continuation(c) if !c.end_headers => Some(c.stream_id),
            _ => None,
        };
        Ok(Some((frame, total)))
    }

    /// Decodes the frame at the start of `buf` and advances `buf` past it. Payloads are
    /// [`Bytes`] slices of `buf` (no copy). `Ok(None)` leaves `buf` untouched; a stream
    /// error advances past the offending frame.
    pub fn decode_bytes(&mut self, buf: &mut Bytes) -> Result<Option<Frame<Bytes>>, FrameError> {
        let (frame, consumed) = match self.decode(buf) {
            Ok(Some((frame, n))) => (frame.map(|s| buf.slice_ref(s)), n),
            Ok(None) => return Ok(None),
            Err(e) => {
                if let FrameError::Stream { frame_len, .. } = e {
                    buf.advance(frame_len);
                }
                return Err(e);
            }
        };
        buf.advance(consumed);
        Ok(Some(frame))
    }

    /// Like [`decode_bytes`](Self::decode_bytes) for a read buffer: the frame's bytes
    /// are split off `buf` and frozen, so payloads share its allocation.
    pub fn decode_bytes_mut(
        &mut self,
        buf: &mut BytesMut,
    ) -> Result<Option<Frame<Bytes>>, FrameError> {
        let Some(head) = self.check_header(buf)? else {
            return Ok(None);
        };
        let total = HEADER_LEN + head.length as usize;
        if buf.len() < total {
            return Ok(None);
        }
        let mut frame = buf.split_to(total).freeze();
        self.decode_bytes(&mut frame)
    }

    /// Parses the header if 9 bytes are in, rejecting a length over the maximum.
    fn check_header(&self, buf: &[u8]) -> Result<Option<FrameHeader>, FrameError> {
        let Some(head) = FrameHeader::parse(buf) else {
            return Ok(None);
        };
        if head.length > self.max_frame_size {
            return Err(FrameError::conn(
                ErrorCode::FRAME_SIZE_ERROR,
                "frame larger than SETTINGS_MAX_FRAME_SIZE",
            ));
        }
        Ok(Some(head))
    }

    /// The field-block rule (§4.3, §6.10): while a block is open only CONTINUATION on
    /// its stream may come; CONTINUATION may come only then.
    fn check_sequence(&self, head: &FrameHeader) -> Result<(), FrameError> {
        let is_continuation = head.kind == FrameType::CONTINUATION;
        match self.continuation {
            Some(id) if !is_continuation || head.stream_id != id => Err(FrameError::conn(
                ErrorCode::PROTOCOL_ERROR,
                "field block interrupted: expected CONTINUATION on the same stream",
            )),
            None if is_continuation => Err(FrameError::conn(
                ErrorCode::PROTOCOL_ERROR,
                "CONTINUATION without an open field block",
            )),
            _ => Ok(()),
        }
    }
}

/// Parses a complete payload according to its type.
fn parse<'a>(h: &FrameHeader, p: &'a [u8]) -> Parsed<'a> {
    match h.kind {
        FrameType::DATA => parse_data(h, p),
        FrameType::HEADERS => parse_headers(h, p),
        FrameType::PRIORITY => parse_priority(h, p),
        FrameType::RST_STREAM => parse_rst_stream(h, p),
        FrameType::SETTINGS => parse_settings(h, p),
        FrameType::PUSH_PROMISE => parse_push_promise(h, p),
        FrameType::PING => parse_ping(h, p),
        FrameType::GOAWAY => parse_goaway(h, p),
        FrameType::WINDOW_UPDATE => parse_window_update(h, p),
        FrameType::CONTINUATION => parse_continuation(h, p),
        kind => Ok(Frame::Unknown(Unknown {
            kind,
            flags: h.flags,
            stream_id: h.stream_id,
            payload: p,
        })),
    }
}

fn protocol(reason: &'static str) -> Fail {
    Fail::Conn(ErrorCode::PROTOCOL_ERROR, reason)
}

fn frame_size(reason: &'static str) -> Fail {
    Fail::Conn(ErrorCode::FRAME_SIZE_ERROR, reason)
}

/// Frames that belong to a stream must not be on stream 0.
fn need_stream(h: &FrameHeader, reason: &'static str) -> Result<(), Fail> {
    if h.stream_id.is_zero() {
        return Err(protocol(reason));
    }
    Ok(())
}

/// Connection-level frames must be on stream 0.
fn need_connection(h: &FrameHeader, reason: &'static str) -> Result<(), Fail> {
    if !h.stream_id.is_zero() {
        return Err(protocol(reason));
    }
    Ok(())
}

/// Splits a possibly padded payload into `fixed` leading bytes (priority or promised
/// stream fields), the body, and the Pad Length (§6.1, §6.2, §6.6).
fn split_padded<'a>(h: &FrameHeader, p: &'a [u8], fixed: usize) -> Result<Padded<'a>, Fail> {
    let (rest, pad) = if h.has(flags::PADDED) {
        match p.split_first() {
            Some((&pad, rest)) => (rest, Some(pad)),
            None => return Err(frame_size("PADDED frame without room for Pad Length")),
        }
    } else {
        (p, None)
    };
    if rest.len() < fixed {
        return Err(frame_size("frame too short for its mandatory fields"));
    }
    let (head, after) = rest.split_at(fixed);
    let pad_bytes = usize::from(pad.unwrap_or(0));
    if pad_bytes > after.len() {
        return Err(protocol("padding as long as the payload or longer"));
    }
    Ok(Padded {
        fixed: head,
        body: &after[..after.len() - pad_bytes],
        pad_len: pad,
    })
}

fn parse_data<'a>(h: &FrameHeader, p: &'a [u8]) -> Parsed<'a> {
    need_stream(h, "DATA on stream 0")?;
    let Padded { body, pad_len, .. } = split_padded(h, p, 0)?;
    Ok(Frame::Data(Data {
        stream_id: h.stream_id,
        end_stream: h.has(flags::END_STREAM),
        data: body,
        pad_len,
    }))
}

fn parse_headers<'a>(h: &FrameHeader, p: &'a [u8]) -> Parsed<'a> {
    need_stream(h, "HEADERS on stream 0")?;
    let has_priority = h.has(flags::PRIORITY);
    let Padded {
        fixed,
        body,
        pad_len,
    } = split_padded(h, p, if has_priority { Priority::LEN } else { 0 })?;
    Ok(Frame::Headers(Headers {
        stream_id: h.stream_id,
        end_stream: h.has(flags::END_STREAM),
        end_headers: h.has(flags::END_HEADERS),
        priority: has_priority.then(|| Priority::parse(fixed)),
        fragment: body,
        pad_len,
    }))
}

fn parse_priority<'a>(h: &FrameHeader, p: &'a [u8]) -> Parsed<'a> {
    need_stream(h, "PRIORITY on stream 0")?;
    if p.len() != Priority::LEN {
        return Err(Fail::Stream(
            ErrorCode::FRAME_SIZE_ERROR,
            "PRIORITY length not 5",
        ));
    }
    let priority = Priority::parse(p);
    if priority.dependency == h.stream_id {
        return Err(Fail::Stream(
            ErrorCode::PROTOCOL_ERROR,
            "stream depends on itself",
        ));
    }
    Ok(Frame::Priority(PriorityFrame {
        stream_id: h.stream_id,
        priority,
    }))
}

fn parse_rst_stream<'a>(h: &FrameHeader, p: &'a [u8]) -> Parsed<'a> {
    need_stream(h, "RST_STREAM on stream 0")?;
    let Ok(code) = <[u8; 4]>::try_from(p) else {
        return Err(frame_size("RST_STREAM length not 4"));
    };
    Ok(Frame::RstStream(RstStream {
        stream_id: h.stream_id,
        code: ErrorCode(u32::from_be_bytes(code)),
    }))
}

fn parse_settings<'a>(h: &FrameHeader, p: &'a [u8]) -> Parsed<'a> {
    need_connection(h, "SETTINGS on a stream")?;
    let ack = h.has(flags::ACK);
    if ack && !p.is_empty() {
        return Err(frame_size("SETTINGS ACK with a payload"));
    }
    if p.len() % Setting::LEN != 0 {
        return Err(frame_size("SETTINGS length not a multiple of 6"));
    }
    for s in SettingsIter::new(p) {
        s.validate().map_err(|e| match e {
            FrameError::Connection { code, reason } | FrameError::Stream { code, reason, .. } => {
                Fail::Conn(code, reason)
            }
        })?;
    }
    Ok(Frame::Settings(Settings { ack, params: p }))
}

fn parse_push_promise<'a>(h: &FrameHeader, p: &'a [u8]) -> Parsed<'a> {
    need_stream(h, "PUSH_PROMISE on stream 0")?;
    let Padded {
        fixed,
        body,
        pad_len,
    } = split_padded(h, p, 4)?;
    Ok(Frame::PushPromise(PushPromise {
        stream_id: h.stream_id,
        promised_id: StreamId::from_be_bytes([fixed[0], fixed[1], fixed[2], fixed[3]]),
        end_headers: h.has(flags::END_HEADERS),
        fragment: body,
        pad_len,
    }))
}

fn parse_ping<'a>(h: &FrameHeader, p: &'a [u8]) -> Parsed<'a> {
    need_connection(h, "PING on a stream")?;
    let Ok(payload) = <[u8; 8]>::try_from(p) else {
        return Err(frame_size("PING length not 8"));
    };
    Ok(Frame::Ping(Ping {
        ack: h.has(flags::ACK),
        payload,
    }))
}

fn parse_goaway<'a>(h: &FrameHeader, p: &'a [u8]) -> Parsed<'a> {
    need_connection(h, "GOAWAY on a stream")?;
    if p.len() < 8 {
        return Err(frame_size("GOAWAY shorter than 8 bytes"));
    }
    Ok(Frame::GoAway(GoAway {
        last_stream_id: StreamId::from_be_bytes([p[0], p[1], p[2], p[3]]),
        code: ErrorCode(u32::from_be_bytes([p[4], p[5], p[6], p[7]])),
        debug_data: &p[8..],
    }))
}

fn parse_window_update<'a>(h: &FrameHeader, p: &'a [u8]) -> Parsed<'a> {
    let Ok(word) = <[u8; 4]>::try_from(p) else {
        return Err(frame_size("WINDOW_UPDATE length not 4"));
    };
    let increment = u32::from_be_bytes(word) & 0x7fff_ffff;
    if increment == 0 {
        let reason = "WINDOW_UPDATE increment 0";
        return Err(if h.stream_id.is_zero() {
            protocol(reason)
        } else {
            Fail::Stream(ErrorCode::PROTOCOL_ERROR, reason)
        });
    }
    Ok(Frame::WindowUpdate(WindowUpdate {
        stream_id: h.stream_id,
        increment,
    }))
}

fn parse_continuation<'a>(h: &FrameHeader, p: &'a [u8]) -> Parsed<'a> {
    need_stream(h, "CONTINUATION on stream 0")?;
    Ok(Frame::Continuation(Continuation {
        stream_id: h.stream_id,
        end_headers: h.has(flags::END_HEADERS),
        fragment: p,
    }))
}
