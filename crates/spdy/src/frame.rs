//! Typed SPDY frames and their byte-exact wire layouts (digest §1-§2).
//!
//! [`FrameHeader::parse`] reads the common 8-byte header; [`decode_control`] turns a
//! complete control frame into a [`Frame`], inflating its header block through the
//! session's shared [`HeaderDecompressor`]; [`Frame::encode`] writes a frame, compressing
//! header blocks at that moment (wire order).

use crate::codes::{flags, frame_type as ft, GoAwayStatus, RstStatus, SettingId};
use crate::compress::{DecompressError, HeaderCompressor, HeaderDecompressor};
use crate::headers::Headers;
use crate::zlib::InflateError;
use crate::Version;
use bytes::{Buf, Bytes};
use std::fmt;

/// Size of every frame header.
pub const HEADER_LEN: usize = 8;
/// Largest payload the 24-bit length can express.
pub const MAX_PAYLOAD: usize = (1 << 24) - 1;

/// A 31-bit stream id. Client streams are odd, server (push) streams even, 0 is none.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct StreamId(pub u32);

impl StreamId {
    /// The largest stream id.
    pub const MAX: StreamId = StreamId(0x7fff_ffff);
    /// Whether a client opened it (odd).
    pub fn is_client_initiated(self) -> bool {
        self.0 & 1 == 1
    }
    /// Whether a server opened it (even, non-zero).
    pub fn is_server_initiated(self) -> bool {
        self.0 != 0 && self.0 & 1 == 0
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

/// One SETTINGS entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    /// Which setting.
    pub id: SettingId,
    /// Entry flags (PERSIST_VALUE, PERSISTED).
    pub flags: u8,
    /// The value.
    pub value: u32,
}

/// A SYN_STREAM frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SynStream {
    /// The new stream.
    pub stream_id: StreamId,
    /// The client stream a push belongs to, or 0.
    pub assoc_id: StreamId,
    /// 0 (highest) ..= 7 (SPDY/2: 3).
    pub priority: u8,
    /// CREDENTIAL slot (SPDY/3; 0 otherwise).
    pub slot: u8,
    /// The sender half-closes at once.
    pub fin: bool,
    /// The recipient may not send on this stream (server push).
    pub unidirectional: bool,
    /// The header block.
    pub headers: Headers,
}

/// A SPDY frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// DATA.
    Data {
        /// Stream.
        stream_id: StreamId,
        /// FLAG_FIN.
        fin: bool,
        /// Payload.
        data: Bytes,
    },
    /// SYN_STREAM.
    SynStream(SynStream),
    /// SYN_REPLY.
    SynReply {
        /// Stream.
        stream_id: StreamId,
        /// FLAG_FIN.
        fin: bool,
        /// Header block.
        headers: Headers,
    },
    /// RST_STREAM.
    RstStream {
        /// Stream.
        stream_id: StreamId,
        /// Status code.
        status: RstStatus,
    },
    /// SETTINGS.
    Settings {
        /// FLAG_SETTINGS_CLEAR_SETTINGS.
        clear: bool,
        /// Entries in wire order.
        entries: Vec<Setting>,
    },
    /// NOOP (SPDY/2).
    Noop,
    /// PING.
    Ping {
        /// Opaque id: odd from clients, even from servers.
        id: u32,
    },
    /// GOAWAY.
    GoAway {
        /// Highest peer-initiated stream the sender accepted.
        last_good: StreamId,
        /// Status (always OK in SPDY/2, which has no status field).
        status: GoAwayStatus,
    },
    /// HEADERS.
    Headers {
        /// Stream.
        stream_id: StreamId,
        /// FLAG_FIN.
        fin: bool,
        /// Header block.
        headers: Headers,
    },
    /// WINDOW_UPDATE (stream 0 = session window, SPDY/3.1).
    WindowUpdate {
        /// Stream, or 0 for the session.
        stream_id: StreamId,
        /// Credit in bytes, 1 ..= 2^31-1.
        delta: u32,
    },
    /// PRIORITY (speedy's extension, `frame_type::PRIORITY`): the sender asks that
    /// `stream_id` be scheduled at `priority` from now on. Payload: the stream id (31
    /// bits), then one byte with the priority in its top bits as in SYN_STREAM, then
    /// three zero bytes.
    Priority {
        /// Stream.
        stream_id: StreamId,
        /// New priority, 0 (highest) to the version's lowest.
        priority: u8,
    },
    /// CREDENTIAL (SPDY/3 only); decoded and ignored by sessions.
    Credential {
        /// Slot.
        slot: u16,
        /// Proof.
        proof: Bytes,
        /// DER certificates, leaf first.
        certificates: Vec<Bytes>,
    },
    /// A control frame of a type this version does not define; skipped by sessions.
    Unknown {
        /// Version field.
        version: u16,
        /// Type.
        frame_type: u16,
        /// Flags.
        flags: u8,
        /// Payload.
        payload: Bytes,
    },
}

/// The common 8-byte frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameHeader {
    /// A control frame.
    Control {
        /// Version field (2 or 3).
        version: u16,
        /// Frame type.
        frame_type: u16,
        /// Flags.
        flags: u8,
        /// Payload length.
        len: usize,
    },
    /// A DATA frame.
    Data {
        /// Stream.
        stream_id: StreamId,
        /// Flags.
        flags: u8,
        /// Payload length.
        len: usize,
    },
}

impl FrameHeader {
    /// Parses the first 8 bytes of a frame.
    pub fn parse(b: &[u8; HEADER_LEN]) -> FrameHeader {
        let flags = b[4];
        let len = u32::from_be_bytes([0, b[5], b[6], b[7]]) as usize;
        if b[0] & 0x80 != 0 {
            FrameHeader::Control {
                version: u16::from_be_bytes([b[0] & 0x7f, b[1]]),
                frame_type: u16::from_be_bytes([b[2], b[3]]),
                flags,
                len,
            }
        } else {
            FrameHeader::Data {
                stream_id: StreamId(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
                flags,
                len,
            }
        }
    }

    /// Payload length.
    pub fn len(&self) -> usize {
        match *self {
            FrameHeader::Control { len, .. } | FrameHeader::Data { len, .. } => len,
        }
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why a frame could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The frame's layout is wrong (length, counts): a session error.
    Malformed {
        /// Frame type.
        frame_type: u16,
        /// What is wrong.
        reason: &'static str,
    },
    /// The shared header context failed: a session error.
    Compression(InflateError),
    /// A header block was too large or invalid (context still in sync): a stream error.
    HeaderBlock {
        /// Frame type.
        frame_type: u16,
        /// Stream.
        stream_id: StreamId,
        /// Whether it was too large (`true`) or invalid.
        too_large: bool,
        /// Details.
        reason: String,
    },
    /// A control frame carries another SPDY version.
    WrongVersion {
        /// Version seen.
        version: u16,
        /// Frame type.
        frame_type: u16,
        /// For SYN_STREAM, its stream id (to answer UNSUPPORTED_VERSION).
        stream_id: Option<StreamId>,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Malformed { frame_type, reason } => {
                write!(f, "malformed frame type {frame_type}: {reason}")
            }
            FrameError::Compression(e) => write!(f, "header decompression failed: {}", e.0),
            FrameError::HeaderBlock {
                frame_type,
                stream_id,
                reason,
                ..
            } => {
                write!(
                    f,
                    "bad header block in frame type {frame_type} on stream {stream_id}: {reason}"
                )
            }
            FrameError::WrongVersion {
                version,
                frame_type,
                ..
            } => {
                write!(f, "control frame type {frame_type} with version {version}")
            }
        }
    }
}

impl std::error::Error for FrameError {}

fn malformed(frame_type: u16, reason: &'static str) -> FrameError {
    FrameError::Malformed { frame_type, reason }
}

fn sid(b: &[u8]) -> StreamId {
    StreamId(u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & 0x7fff_ffff)
}

/// Inflates the header block `b` of a `frame_type` frame on `stream_id` (an empty block
/// is an empty set), telling a broken shared context (a session error) from a block that
/// is too large or invalid (a stream error).
fn inflate_block(
    dec: &mut HeaderDecompressor,
    frame_type: u16,
    stream_id: StreamId,
    b: &[u8],
) -> Result<Headers, FrameError> {
    if b.is_empty() {
        return Ok(Headers::new());
    }
    dec.decompress(b).map_err(|e| match e {
        DecompressError::Zlib(z) => FrameError::Compression(z),
        DecompressError::TooLarge => FrameError::HeaderBlock {
            frame_type,
            stream_id,
            too_large: true,
            reason: "header block too large after decompression".into(),
        },
        DecompressError::Invalid(h) => FrameError::HeaderBlock {
            frame_type,
            stream_id,
            too_large: false,
            reason: h.to_string(),
        },
    })
}

/// Checks that a fixed-size `frame_type` payload is exactly `n` bytes long.
fn expect_len(frame_type: u16, n: usize, p: &Bytes) -> Result<(), FrameError> {
    if p.len() == n {
        Ok(())
    } else {
        Err(malformed(frame_type, "wrong length"))
    }
}

/// The second 32-bit word of an 8-byte payload (a status, a delta).
fn second_u32(p: &[u8]) -> u32 {
    u32::from_be_bytes([p[4], p[5], p[6], p[7]])
}

/// Decodes a SYN_STREAM payload (priority in 2 bits and no slot in SPDY/2, 3 bits and a
/// CREDENTIAL slot in SPDY/3), inflating its header block.
fn decode_syn_stream(
    v2: bool,
    fl: u8,
    p: &Bytes,
    dec: &mut HeaderDecompressor,
) -> Result<Frame, FrameError> {
    if p.len() < 10 {
        return Err(malformed(ft::SYN_STREAM, "shorter than 10 bytes"));
    }
    let stream_id = sid(p);
    let assoc_id = sid(&p[4..]);
    let (priority, slot) = if v2 {
        (p[8] >> 6, 0)
    } else {
        (p[8] >> 5, p[9])
    };
    let headers = inflate_block(dec, ft::SYN_STREAM, stream_id, &p[10..])?;
    Ok(Frame::SynStream(SynStream {
        stream_id,
        assoc_id,
        priority,
        slot,
        fin: fl & flags::FIN != 0,
        unidirectional: fl & flags::UNIDIRECTIONAL != 0,
        headers,
    }))
}

/// Decodes a SYN_REPLY or HEADERS payload (`frame_type` says which): a stream id (and
/// two unused bytes in SPDY/2), then the header block, inflated.
fn decode_reply_or_headers(
    v2: bool,
    frame_type: u16,
    fl: u8,
    p: &Bytes,
    dec: &mut HeaderDecompressor,
) -> Result<Frame, FrameError> {
    let skip = if v2 { 6 } else { 4 };
    if p.len() < skip {
        return Err(malformed(frame_type, "too short"));
    }
    let stream_id = sid(p);
    let headers = inflate_block(dec, frame_type, stream_id, &p[skip..])?;
    let fin = fl & flags::FIN != 0;
    Ok(if frame_type == ft::SYN_REPLY {
        Frame::SynReply {
            stream_id,
            fin,
            headers,
        }
    } else {
        Frame::Headers {
            stream_id,
            fin,
            headers,
        }
    })
}

/// Decodes a SETTINGS payload: an entry count that must match the length, then 8-byte
/// entries (SPDY/2's id is little-endian with the flags after it, SPDY/3's big-endian
/// with the flags before it).
fn decode_settings(v2: bool, fl: u8, mut p: Bytes) -> Result<Frame, FrameError> {
    if p.len() < 4 {
        return Err(malformed(ft::SETTINGS, "shorter than 4 bytes"));
    }
    let n = p.get_u32() as usize;
    if n.checked_mul(8) != Some(p.len()) {
        return Err(malformed(ft::SETTINGS, "entry count does not match length"));
    }
    let entries = p
        .chunks_exact(8)
        .map(|e| {
            let (id, flags) = if v2 {
                (u32::from_le_bytes([e[0], e[1], e[2], 0]), e[3])
            } else {
                (u32::from_be_bytes([0, e[1], e[2], e[3]]), e[0])
            };
            Setting {
                id: SettingId(id),
                flags,
                value: u32::from_be_bytes([e[4], e[5], e[6], e[7]]),
            }
        })
        .collect();
    Ok(Frame::Settings {
        clear: fl & flags::CLEAR_SETTINGS != 0,
        entries,
    })
}

/// Decodes a GOAWAY payload: 8 bytes with a status, or in SPDY/2 also 4 bytes without
/// one (status OK).
fn decode_goaway(v2: bool, p: &Bytes) -> Result<Frame, FrameError> {
    // SPDY/2 GOAWAY is 4 bytes, but node-spdy (spdy-transport) sends the 8-byte
    // SPDY/3 layout, with a status, in every version: accept both in SPDY/2.
    if !(p.len() == 8 || (v2 && p.len() == 4)) {
        return Err(malformed(ft::GOAWAY, "wrong length"));
    }
    let last_good = sid(p);
    let status = if p.len() == 8 {
        GoAwayStatus(second_u32(p))
    } else {
        GoAwayStatus::OK
    };
    Ok(Frame::GoAway { last_good, status })
}

/// Decodes a CREDENTIAL payload (SPDY/3): slot, length-prefixed proof, then
/// length-prefixed certificates to the end; any truncation is malformed.
fn decode_credential(mut p: Bytes) -> Result<Frame, FrameError> {
    let bad = || malformed(ft::CREDENTIAL, "truncated CREDENTIAL");
    if p.len() < 6 {
        return Err(bad());
    }
    let slot = p.get_u16();
    let plen = p.get_u32() as usize;
    if p.len() < plen {
        return Err(bad());
    }
    let proof = p.split_to(plen);
    let mut certificates = Vec::new();
    while !p.is_empty() {
        if p.len() < 4 {
            return Err(bad());
        }
        let clen = p.get_u32() as usize;
        if p.len() < clen {
            return Err(bad());
        }
        certificates.push(p.split_to(clen));
    }
    Ok(Frame::Credential {
        slot,
        proof,
        certificates,
    })
}

/// Decodes a complete control frame's payload. Header blocks are always inflated, even
/// when the frame is then rejected, so the shared context stays in sync (DESIGN rule 8).
pub fn decode_control(
    version: Version,
    frame_type: u16,
    wire_version: u16,
    fl: u8,
    mut p: Bytes,
    dec: &mut HeaderDecompressor,
) -> Result<Frame, FrameError> {
    let v2 = version == Version::V2;
    if wire_version != version.wire() {
        let stream_id = (frame_type == ft::SYN_STREAM && p.len() >= 4).then(|| sid(&p));
        return Err(FrameError::WrongVersion {
            version: wire_version,
            frame_type,
            stream_id,
        });
    }
    Ok(match frame_type {
        ft::SYN_STREAM => decode_syn_stream(v2, fl, &p, dec)?,
        ft::SYN_REPLY | ft::HEADERS => decode_reply_or_headers(v2, frame_type, fl, &p, dec)?,
        ft::RST_STREAM => {
            expect_len(frame_type, 8, &p)?;
            Frame::RstStream {
                stream_id: sid(&p),
                status: RstStatus(second_u32(&p)),
            }
        }
        ft::SETTINGS => decode_settings(v2, fl, p)?,
        ft::NOOP if v2 => {
            expect_len(frame_type, 0, &p)?;
            Frame::Noop
        }
        ft::PING => {
            expect_len(frame_type, 4, &p)?;
            Frame::Ping { id: p.get_u32() }
        }
        ft::GOAWAY => decode_goaway(v2, &p)?,
        ft::WINDOW_UPDATE if !v2 => {
            expect_len(frame_type, 8, &p)?;
            Frame::WindowUpdate {
                stream_id: sid(&p),
                delta: second_u32(&p) & 0x7fff_ffff,
            }
        }
        ft::PRIORITY => {
            expect_len(frame_type, 8, &p)?;
            Frame::Priority {
                stream_id: sid(&p),
                priority: if v2 { p[4] >> 6 } else { p[4] >> 5 },
            }
        }
        ft::CREDENTIAL if !v2 => decode_credential(p)?,
        _ => Frame::Unknown {
            version: wire_version,
            frame_type,
            flags: fl,
            payload: p,
        },
    })
}

fn put_control(out: &mut Vec<u8>, version: Version, frame_type: u16, fl: u8, len: usize) {
    let v = version.wire();
    out.extend_from_slice(&[0x80 | (v >> 8) as u8, v as u8]);
    out.extend_from_slice(&frame_type.to_be_bytes());
    put_flags_len(out, fl, len);
}

fn put_flags_len(out: &mut Vec<u8>, fl: u8, len: usize) {
    debug_assert!(len <= MAX_PAYLOAD);
    let l = (len as u32).to_be_bytes();
    out.extend_from_slice(&[fl, l[1], l[2], l[3]]);
}

/// Writes the 8-byte header of a DATA frame whose payload follows separately.
pub fn encode_data_header(stream_id: StreamId, fin: bool, len: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(&(stream_id.0 & 0x7fff_ffff).to_be_bytes());
    put_flags_len(out, if fin { flags::FIN } else { 0 }, len);
}

/// Writes one control frame's fields in a version's layout, compressing header blocks
/// through the session's shared compressor as it goes.
struct Writer<'a> {
    version: Version,
    comp: &'a mut HeaderCompressor,
    out: &'a mut Vec<u8>,
}

impl Writer<'_> {
    /// Whether the layout is SPDY/2's.
    fn v2(&self) -> bool {
        self.version == Version::V2
    }

    /// Writes a control frame header (a header-block frame's length is patched later).
    fn control(&mut self, frame_type: u16, fl: u8, len: usize) {
        put_control(self.out, self.version, frame_type, fl, len);
    }

    /// Writes a big-endian 32-bit word.
    fn u32(&mut self, x: u32) {
        self.out.extend_from_slice(&x.to_be_bytes());
    }

    /// Writes a stream id (31 bits, the reserved bit clear).
    fn stream_id(&mut self, id: StreamId) {
        self.u32(id.0 & 0x7fff_ffff);
    }

    /// Writes a SYN_STREAM: ids, priority (2 bits and an unused byte in SPDY/2, 3 bits
    /// and the CREDENTIAL slot in SPDY/3), then the compressed header block.
    fn syn_stream(&mut self, s: &SynStream) {
        let fl = fin_flag(s.fin)
            | if s.unidirectional {
                flags::UNIDIRECTIONAL
            } else {
                0
            };
        self.control(ft::SYN_STREAM, fl, 0);
        self.stream_id(s.stream_id);
        self.stream_id(s.assoc_id);
        if self.v2() {
            self.out.extend_from_slice(&[(s.priority & 3) << 6, 0]);
        } else {
            self.out.extend_from_slice(&[(s.priority & 7) << 5, s.slot]);
        }
        self.comp.compress(&s.headers, self.out);
    }

    /// Writes a SYN_REPLY or HEADERS (`frame_type`): the stream id (and two unused bytes
    /// in SPDY/2), then the compressed header block.
    fn header_frame(&mut self, frame_type: u16, stream_id: StreamId, fin: bool, h: &Headers) {
        self.control(frame_type, fin_flag(fin), 0);
        self.stream_id(stream_id);
        if self.v2() {
            self.out.extend_from_slice(&[0, 0]);
        }
        self.comp.compress(h, self.out);
    }

    /// Writes a SETTINGS frame: the count, then each entry (SPDY/2: id little-endian
    /// with the flags after it; SPDY/3: flags, then the id big-endian) and its value.
    fn settings(&mut self, clear: bool, entries: &[Setting]) {
        let fl = if clear { flags::CLEAR_SETTINGS } else { 0 };
        self.control(ft::SETTINGS, fl, 4 + 8 * entries.len());
        self.u32(entries.len() as u32);
        for e in entries {
            if self.v2() {
                let id = e.id.0.to_le_bytes();
                self.out.extend_from_slice(&[id[0], id[1], id[2], e.flags]);
            } else {
                let id = e.id.0.to_be_bytes();
                self.out.extend_from_slice(&[e.flags, id[1], id[2], id[3]]);
            }
            self.u32(e.value);
        }
    }

    /// Writes speedy's PRIORITY frame: the stream id, then the priority (capped at the
    /// version's lowest) in the top bits of a byte, then three zero bytes.
    fn priority(&mut self, stream_id: StreamId, priority: u8) {
        self.control(ft::PRIORITY, 0, 8);
        self.stream_id(stream_id);
        let bits = if self.v2() { 6 } else { 5 };
        let p = priority.min(self.version.lowest_priority()) << bits;
        self.out.extend_from_slice(&[p, 0, 0, 0]);
    }

    /// Writes a CREDENTIAL frame: slot, length-prefixed proof, length-prefixed
    /// certificates.
    fn credential(&mut self, slot: u16, proof: &Bytes, certificates: &[Bytes]) {
        let len = 6 + proof.len() + certificates.iter().map(|c| 4 + c.len()).sum::<usize>();
        self.control(ft::CREDENTIAL, 0, len);
        self.out.extend_from_slice(&slot.to_be_bytes());
        self.u32(proof.len() as u32);
        self.out.extend_from_slice(proof);
        for c in certificates {
            self.u32(c.len() as u32);
            self.out.extend_from_slice(c);
        }
    }
}

/// The FIN flag bit when `fin`.
fn fin_flag(fin: bool) -> u8 {
    if fin {
        flags::FIN
    } else {
        0
    }
}

impl Frame {
    /// Encodes the frame in `version`'s layout, compressing any header block now.
    pub fn encode(&self, version: Version, comp: &mut HeaderCompressor, out: &mut Vec<u8>) {
        let start = out.len();
        let mut w = Writer { version, comp, out };
        match self {
            Frame::Data {
                stream_id,
                fin,
                data,
            } => {
                encode_data_header(*stream_id, *fin, data.len(), w.out);
                w.out.extend_from_slice(data);
                return;
            }
            Frame::SynStream(s) => w.syn_stream(s),
            Frame::SynReply {
                stream_id,
                fin,
                headers,
            } => w.header_frame(ft::SYN_REPLY, *stream_id, *fin, headers),
            Frame::Headers {
                stream_id,
                fin,
                headers,
            } => w.header_frame(ft::HEADERS, *stream_id, *fin, headers),
            Frame::RstStream { stream_id, status } => {
                w.control(ft::RST_STREAM, 0, 8);
                w.stream_id(*stream_id);
                w.u32(status.0);
            }
            Frame::Settings { clear, entries } => w.settings(*clear, entries),
            Frame::Noop => w.control(ft::NOOP, 0, 0),
            Frame::Ping { id } => {
                w.control(ft::PING, 0, 4);
                w.u32(*id);
            }
            Frame::GoAway { last_good, status } => {
                let v2 = w.v2();
                w.control(ft::GOAWAY, 0, if v2 { 4 } else { 8 });
                w.stream_id(*last_good);
                if !v2 {
                    w.u32(status.0);
                }
            }
            Frame::WindowUpdate { stream_id, delta } => {
                w.control(ft::WINDOW_UPDATE, 0, 8);
                w.stream_id(*stream_id);
                w.u32(delta & 0x7fff_ffff);
            }
            Frame::Priority {
                stream_id,
                priority,
            } => w.priority(*stream_id, *priority),
            Frame::Credential {
                slot,
                proof,
                certificates,
            } => w.credential(*slot, proof, certificates),
            Frame::Unknown {
                version: wv,
                frame_type,
                flags: fl,
                payload,
            } => {
                w.out
                    .extend_from_slice(&[0x80 | (wv >> 8) as u8, *wv as u8]);
                w.out.extend_from_slice(&frame_type.to_be_bytes());
                put_flags_len(w.out, *fl, payload.len());
                w.out.extend_from_slice(payload);
            }
        }
        // Header-block frames: patch the length now that the block is compressed.
        let len = out.len() - start - HEADER_LEN;
        let l = (len as u32).to_be_bytes();
        out[start + 5..start + 8].copy_from_slice(&l[1..]);
    }

    /// Decodes one complete frame from the front of `buf`; `Ok(None)` if more bytes are
    /// needed. DATA payloads are zero-copy slices of `buf`.
    pub fn decode(
        version: Version,
        buf: &mut Bytes,
        dec: &mut HeaderDecompressor,
    ) -> Result<Option<Frame>, FrameError> {
        if buf.len() < HEADER_LEN {
            return Ok(None);
        }
        let hdr = FrameHeader::parse(buf[..HEADER_LEN].try_into().expect("8 bytes"));
        if buf.len() < HEADER_LEN + hdr.len() {
            return Ok(None);
        }
        buf.advance(HEADER_LEN);
        let payload = buf.split_to(hdr.len());
        match hdr {
            FrameHeader::Data {
                stream_id,
                flags: fl,
                ..
            } => Ok(Some(Frame::Data {
                stream_id,
                fin: fl & flags::FIN != 0,
                data: payload,
            })),
            FrameHeader::Control {
                version: wv,
                frame_type,
                flags: fl,
                ..
            } => decode_control(version, frame_type, wv, fl, payload, dec).map(Some),
        }
    }
}
