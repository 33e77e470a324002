//! Fuzz harnesses for the `spdy` crate, shared by the cargo-fuzz targets in
//! `fuzz_targets/`. Each must never panic or hang, whatever the input.
//!
//! - [`frame_decode`]: a byte stream through `Frame::decode`; every frame decoded must
//!   survive encode → decode unchanged.
//! - [`header_block`]: raw name/value blocks, compressed blocks fed to a decompressor,
//!   and compress → decompress round trips under arbitrary compressor settings, with
//!   either context parked between blocks when the fuzzer says so.
//! - [`session`]: a server or client `Session` fed by a peer that either writes raw bytes
//!   or runs a script of real frames (encoded with its own compressor, so header blocks
//!   are valid zlib), corrupts some of them, and drives the session's own API. Bytes are
//!   delivered in arbitrary chunkings (at most 256 reads a step), with the session parked
//!   (idle memory given back, `Session::park`) between reads when the fuzzer says so. The
//!   bounds keep an input's cost near its bytes' (see `session`): 2,000 executions a
//!   second and more, where 1-byte reads of header bombs held it to a few hundred. Everything the session
//!   writes must decode cleanly, its stream ids must increase, no DATA frame may exceed
//!   `max_data_frame` (`lone_data_frame` when larger) or overdraw the stream window, and
//!   a session error must end with GOAWAY.
//!
//! The other crates' parsers, each in its module:
//!
//! - [`archive`]: the page-archive importers of `speedy-archive` (HAR, WARC, Mahimahi,
//!   Web Page Replay), with their readers and what the exporters make of an import.
//! - [`h2`]: `h2wire`'s HTTP/2 server connection, whose output must stay well-formed.
//! - [`http1`]: `speedy-net`'s HTTP/1.1 response decoder (heads, body framing).
//! - [`mux`]: `speedy-net`'s SPDY stream multiplexer on its connection loop.
//! - [`sctp`]: `speedy-net`'s SCTP packet code and frame router, and an `sctp-proto`
//!   association set up as speedy's, fed packets delivered, lost, reordered, corrupted
//!   and forged.

pub mod archive;
pub mod h2;
pub mod http1;
pub mod mux;
pub mod sctp;

pub use archive::{har_import, mahimahi_import, warc_import, wpr_import};
pub use http1::http1_response;
pub use mux::spdy_mux;
pub use sctp::{sctp_association, sctp_packet, sctp_route};

use bytes::{Bytes, BytesMut};
use spdy::codes::{GoAwayStatus, RstStatus, SettingId};
use spdy::compress::{CompressionConfig, HeaderCompressor, HeaderDecompressor};
use spdy::frame::{Frame, Setting, StreamId, SynStream};
use spdy::session::{Config, Event, OutBuf, Role, Session};
use spdy::{http, Headers, Version};
use std::time::{Duration, Instant};

/// Reads fuzzer bytes; returns zeros once exhausted, so every input is a valid script.
pub struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    /// Wraps the fuzzer's input.
    pub fn new(data: &'a [u8]) -> Input<'a> {
        Input { data, pos: 0 }
    }
    /// Whether everything was read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }
    /// One byte (0 when exhausted).
    pub fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    /// A big-endian u16.
    pub fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.byte(), self.byte()])
    }
    /// A big-endian u32.
    pub fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }
    /// Up to `n` bytes.
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let start = self.pos.min(self.data.len());
        let end = start.saturating_add(n).min(self.data.len());
        self.pos = end;
        &self.data[start..end]
    }
    /// The rest of the input.
    pub fn rest(&mut self) -> &'a [u8] {
        let start = self.pos.min(self.data.len());
        self.pos = self.data.len();
        &self.data[start..]
    }
}

fn version(b: u8) -> Version {
    [Version::V2, Version::V3, Version::V3_1][(b % 3) as usize]
}

fn compression(inp: &mut Input) -> CompressionConfig {
    let level = (inp.byte() % 12) as u32;
    let window_bits = inp.byte() % 17;
    // Each time zlib slides its window it rehashes its whole hash table, so a byte costs
    // about 2^(memLevel + 7 - windowBits) hash updates: 128 at window 9, memLevel 9,
    // where a 240 KB header bomb took 80 ms of the harness's time. memLevel does not
    // show in the stream (the window and level do), so it is held to at most 8 updates
    // a byte; values out of zlib's range still reach the clamps.
    let mem_level = (inp.byte() % 11).min(window_bits.clamp(9, 15) - 4);
    let modes = inp.byte();
    CompressionConfig {
        level,
        window_bits,
        mem_level,
        crime_safe: modes & 1 == 1,
        fixed_codes: modes & 2 == 2,
    }
}

/// The scripted peer's settings: levels above 3 (zlib's lazy matching) and hash tables
/// larger than the window cost the harness half its time on header bombs and give the
/// session nothing new to inflate (the same literals, lengths and distances; every block
/// type still comes from levels 0-3).
fn peer_compression(inp: &mut Input) -> CompressionConfig {
    let cfg = compression(inp);
    CompressionConfig {
        level: cfg.level.min(3),
        mem_level: cfg.mem_level.min(cfg.window_bits.clamp(9, 15) - 7),
        ..cfg
    }
}

/// Interesting 32-bit values for windows, settings and ids.
fn interesting_u32(inp: &mut Input) -> u32 {
    match inp.byte() % 12 {
        0 => 0,
        1 => 1,
        2 => 65_535,
        3 => 65_536,
        4 => 0x7fff_ffff,
        5 => 0x8000_0000,
        6 => u32::MAX,
        7 => 16_384,
        8 => 100,
        9 => 2,
        _ => inp.u32(),
    }
}

/// Headers in a form that compares equal after a CRIME-safe compressor moved the
/// sensitive pairs to the end of the block.
fn sorted(h: &Headers) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v: Vec<_> = h.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect();
    v.sort();
    v
}

// =======================================================================================

/// A byte stream through `Frame::decode` (first byte: version and decompression limit).
pub fn frame_decode(data: &[u8]) {
    let mut inp = Input::new(data);
    let v = version(inp.byte());
    let limit = [0usize, 16, 1024, 65_536][(inp.byte() % 4) as usize];
    let mut dec = HeaderDecompressor::new(v, limit);
    let mut buf = Bytes::copy_from_slice(inp.rest());
    let mut comp = HeaderCompressor::new(
        v,
        CompressionConfig {
            crime_safe: false,
            ..CompressionConfig::default()
        },
    );
    let mut dec2 = HeaderDecompressor::new(v, usize::MAX);
    loop {
        let before = buf.len();
        match Frame::decode(v, &mut buf, &mut dec) {
            Ok(Some(f)) => {
                assert!(buf.len() < before, "a decoded frame consumes bytes");
                // Round trip through a second, healthy context pair.
                let mut out = Vec::new();
                f.encode(v, &mut comp, &mut out);
                let mut b = Bytes::from(out);
                let back = Frame::decode(v, &mut b, &mut dec2)
                    .expect("our own encoding decodes")
                    .expect("a whole frame");
                assert!(b.is_empty());
                let want = match f {
                    // SPDY/2 GOAWAY is written without the status node-spdy sends.
                    Frame::GoAway { last_good, .. } if v == Version::V2 => Frame::GoAway {
                        last_good,
                        status: GoAwayStatus::OK,
                    },
                    f => f,
                };
                assert_eq!(back, want);
            }
            Ok(None) => {
                assert_eq!(buf.len(), before, "an incomplete frame is left in place");
                return;
            }
            // A failed shared context stays failed; other errors skip one frame.
            Err(spdy::frame::FrameError::Compression(_)) => return,
            Err(_) => {}
        }
    }
}

// =======================================================================================

/// Name/value blocks: raw decoding, compressed blocks, and compressor round trips.
pub fn header_block(data: &[u8]) {
    let mut inp = Input::new(data);
    let v = version(inp.byte());
    match inp.byte() % 3 {
        0 => {
            // A raw uncompressed block: a valid one re-encodes to the same bytes.
            let raw = inp.rest();
            if let Ok(h) = Headers::decode(v, raw) {
                assert_eq!(h.encoded_len(v), raw.len());
                let mut out = Vec::new();
                h.encode(v, &mut out);
                assert_eq!(out, raw);
            }
        }
        1 => {
            // Arbitrary bytes as a sequence of compressed blocks of one context.
            let limit = [0usize, 64, 4096, 65_536][(inp.byte() % 4) as usize];
            let mut dec = HeaderDecompressor::new(v, limit);
            while !inp.is_empty() {
                let n = inp.u16() as usize;
                let block = inp.bytes(n & 0x7fff);
                // Park between blocks (or mid-block: then it must refuse).
                if n & 0x8000 != 0 {
                    dec.park();
                }
                if matches!(
                    dec.decompress(block),
                    Err(spdy::compress::DecompressError::Zlib(_))
                ) {
                    // The context is dead from now on, and says so.
                    assert!(dec.decompress(b"\x00").is_err());
                    return;
                }
            }
        }
        _ => {
            // Blocks built from fuzzer names and values, compressed with arbitrary
            // settings, must decompress to what the raw block decodes to.
            let cfg = compression(&mut inp);
            let mut comp = HeaderCompressor::new(v, cfg);
            let mut dec = HeaderDecompressor::new(v, 1 << 20);
            while !inp.is_empty() {
                let mut h = Headers::new();
                for _ in 0..inp.byte() % 8 {
                    let nlen = (inp.byte() % 12) as usize;
                    let name: String =
                        inp.bytes(nlen)
                            .iter()
                            .map(|&b| match b % 4 {
                                0 => ["cookie", "set-cookie", "authorization", ":path"]
                                    [(b / 4 % 4) as usize],
                                _ => ["a", "b", "x-", "-", "c", "\u{1}", " ", "Z"]
                                    [(b / 4 % 8) as usize],
                            })
                            .collect();
                    let vlen = match inp.byte() {
                        255 => 70_000,
                        254 => 5_000,
                        n => (n % 40) as usize,
                    };
                    let value: Vec<u8> = match inp.byte() % 3 {
                        0 => inp.bytes(vlen).to_vec(),
                        1 => vec![b'q'; vlen],
                        _ => (0..vlen).map(|i| b"abc=; \0"[i % 7]).collect(),
                    };
                    h.add(&name, value);
                }
                // SPDY/2 lengths are 16-bit: longer values cannot be written.
                if v == Version::V2 && h.iter().any(|(_, val)| val.len() > 0xffff) {
                    continue;
                }
                if inp.byte() & 1 == 1 {
                    comp.park();
                    dec.park();
                }
                let mut raw = Vec::new();
                h.encode(v, &mut raw);
                let expected = Headers::decode(v, &raw);
                let mut block = Vec::new();
                comp.compress(&h, &mut block);
                match (dec.decompress(&block), expected) {
                    (Ok(got), Ok(want)) => assert_eq!(sorted(&got), sorted(&want)),
                    (Err(spdy::compress::DecompressError::Invalid(_)), Err(_)) => {}
                    (Err(spdy::compress::DecompressError::TooLarge), _) => {
                        assert!(raw.len() > 1 << 20)
                    }
                    (got, want) => panic!("compressed {got:?}, raw {want:?}"),
                }
            }
        }
    }
}

// =======================================================================================

/// The peer of the session under test: encodes frames with its own header context.
struct Peer {
    v: Version,
    comp: HeaderCompressor,
    /// Bytes written towards the session, not yet delivered.
    pending: Vec<u8>,
}

/// Checks everything the session under test writes.
struct Tap {
    v: Version,
    role: Role,
    dec: HeaderDecompressor,
    last_own_syn: u32,
    saw_goaway: bool,
    max_data_frame: usize,
}

impl Tap {
    fn check(&mut self, s: &Session, bytes: &[u8]) {
        let mut b = Bytes::copy_from_slice(bytes);
        while !b.is_empty() {
            let f = Frame::decode(self.v, &mut b, &mut self.dec)
                .unwrap_or_else(|e| panic!("the session wrote a bad frame: {e}"))
                .expect("the session wrote a partial frame");
            match f {
                Frame::SynStream(syn) => {
                    let own = match self.role {
                        Role::Client => syn.stream_id.is_client_initiated(),
                        Role::Server => syn.stream_id.is_server_initiated(),
                    };
                    assert!(own, "SYN_STREAM with the peer's parity: {syn:?}");
                    assert!(
                        syn.stream_id.0 > self.last_own_syn,
                        "stream ids must increase: {} after {}",
                        syn.stream_id,
                        self.last_own_syn
                    );
                    self.last_own_syn = syn.stream_id.0;
                }
                Frame::Data {
                    stream_id, data, ..
                } => {
                    assert!(data.len() <= self.max_data_frame.max(1), "DATA too large");
                    if !data.is_empty() && self.v != Version::V2 {
                        if let Some(w) = s.send_window(stream_id) {
                            assert!(w >= 0, "stream {stream_id} overdrawn: window {w}");
                        }
                    }
                }
                Frame::GoAway { .. } => self.saw_goaway = true,
                _ => {}
            }
        }
    }
}

fn script_headers(v: Version, inp: &mut Input, ids: &[u32]) -> Headers {
    let path = format!("/{}", inp.byte());
    match inp.byte() % 8 {
        0 | 1 => {
            let extra = Headers::from_pairs([("cookie", "sid=secret"), ("accept", "*/*")]);
            http::request_headers(v, "GET", "https", "example.com", &path, &extra)
        }
        2 => http::response_headers(v, 200, &Headers::from_pairs([("set-cookie", "a=b")])),
        3 => http::push_headers(v, "https", "example.com", &path, 200, &Headers::new()),
        4 => Headers::new(),
        5 => {
            // A compressible bomb.
            let mut h = Headers::new();
            // Two of the largest pass every limit the harness sets (64 KiB at most).
            let n = [100usize, 10_000, 34_000][(inp.byte() % 3) as usize];
            for i in 0..1 + inp.byte() % 4 {
                h.add(&format!("x-bomb-{i}"), vec![b'A'; n]);
            }
            h
        }
        6 => {
            // Invalid values (control bytes, edge NULs) and fuzzer bytes.
            let mut h = Headers::new();
            let n = (inp.byte() % 16) as usize;
            h.add("x-raw", inp.bytes(n));
            h.add("x-ids", format!("{ids:?}"));
            h
        }
        _ => {
            let mut h = Headers::new();
            h.add(":status", "200");
            h.add(":version", "HTTP/1.1");
            h.add("x-path", path);
            h
        }
    }
}

/// An id: one of the streams seen so far, or an interesting value.
fn pick_id(inp: &mut Input, ids: &[u32], next_peer: u32) -> u32 {
    let b = inp.byte();
    match b % 8 {
        0..=3 if !ids.is_empty() => ids[(b as usize / 8) % ids.len()],
        4 => next_peer,
        5 => [0, 1, 2, 3, 0x7fff_ffff, 0x7fff_fffe][(b as usize / 8) % 6],
        6 => next_peer.wrapping_sub(2),
        _ => interesting_u32(inp) & 0x7fff_ffff,
    }
}

/// Reads per step at most (see the delivery loop in [`session`]).
const MAX_READS: usize = 256;
/// Reads after which a step parks at each one; later parks are spread.
const MAX_PARKS: usize = 16;

/// A server or client session against a raw or scripted peer.
pub fn session(role: Role, data: &[u8]) {
    let mut inp = Input::new(data);
    let v = version(inp.byte());
    let mut cfg = Config::new(role, v);
    let knobs = inp.byte();
    if knobs & 1 != 0 {
        cfg.max_concurrent_streams = (inp.byte() % 4) as u32;
        cfg.initial_window = interesting_u32(&mut inp);
        cfg.session_window = interesting_u32(&mut inp);
        cfg.max_data_frame = [0usize, 1, 100, 8192][(inp.byte() % 4) as usize];
        cfg.lone_data_frame = [0usize, 50, 1000, 65_536][(inp.byte() % 4) as usize];
        cfg.max_control_frame = [0usize, 8192, 65_536][(inp.byte() % 3) as usize];
        cfg.max_header_block = [0usize, 100, 16_384, 65_536][(inp.byte() % 4) as usize];
        cfg.compression = compression(&mut inp);
    }
    cfg.accept_push = knobs & 2 == 0;
    cfg.auto_spdy31 = knobs & 4 != 0;
    cfg.log_frames = knobs & 8 != 0;
    // The largest DATA frame the session may write (a lone stream may use the larger).
    let max_data_frame = cfg.max_data_frame.max(cfg.lone_data_frame);
    let small_frame = cfg.max_data_frame.max(1);
    let mut s = Session::new(cfg);
    let t0 = Instant::now();
    let mut now = t0;
    let mut tap = Tap {
        v,
        role,
        dec: HeaderDecompressor::new(v, usize::MAX),
        last_own_syn: 0,
        saw_goaway: false,
        max_data_frame,
    };
    let mut peer = Peer {
        v,
        comp: HeaderCompressor::new(v, peer_compression(&mut inp)),
        pending: Vec::new(),
    };
    let mut inbox = BytesMut::new();
    let mut ids: Vec<u32> = Vec::new();
    let mut failed = false;
    // DATA the application may still queue (keeps legitimate inputs fast): 1 MiB, or
    // 128 Ki frames' worth when frames are tiny (still twice the default window).
    let mut budget_bytes: usize = (1 << 20).min(small_frame * (128 << 10));
    // The peer's next stream id (server peers push even ids, client peers open odd ones).
    let mut next_peer: u32 = if role == Role::Server { 1 } else { 2 };

    let raw_mode = inp.byte() & 1 == 0;
    let mut steps = 0;
    while !inp.is_empty() && steps < 2_000 {
        steps += 1;
        if raw_mode {
            let n = 1 + inp.byte() as usize % 64;
            peer.pending.extend_from_slice(inp.bytes(n));
        } else {
            script_step(
                &mut inp,
                &mut s,
                &mut peer,
                &mut ids,
                &mut next_peer,
                &mut now,
                &mut budget_bytes,
            );
        }
        // Deliver what the peer wrote, in a fuzzer-chosen chunking, in at most
        // MAX_READS reads: a frame of up to that many bytes (every script step writes
        // one) can be split at each byte, a larger one (a header bomb, 64 KiB of DATA)
        // into that many pieces, so a step costs its bytes, not bytes times a read's
        // fixed work.
        let chunking = inp.byte();
        let pending = std::mem::take(&mut peer.pending);
        let chunk = (1 + (chunking >> 1) as usize * 74).max(pending.len().div_ceil(MAX_READS));
        // Parks (each frees zlib's state and the next read rebuilds it) come after each
        // of the first MAX_PARKS reads, then spread: at most 2 × MAX_PARKS a step.
        let reads = pending.len().div_ceil(chunk);
        let park_every = reads.div_ceil(MAX_PARKS).max(1);
        for (i, c) in pending.chunks(chunk).enumerate() {
            inbox.extend_from_slice(c);
            s.recv(&mut inbox, now);
            // An idle-memory park may come at any point between reads.
            if chunking & 1 == 1 && (i < MAX_PARKS || i % park_every == 0) {
                s.park();
            }
        }
        if chunking & 1 == 1 {
            peer.comp.park();
            tap.dec.park();
        }
        while let Some(e) = s.poll_event() {
            match e {
                Event::Stream { id, .. } => ids.push(id.0),
                Event::Data { id, data, .. } => {
                    if inp.byte() & 3 != 0 {
                        s.release(id, data.len());
                    }
                }
                Event::Error { .. } => failed = true,
                _ => {}
            }
        }
        // Write out one frame at a time so each DATA frame is checked against its window.
        let mut frames = 0;
        let budget = 1 + inp.byte() as usize * 4;
        loop {
            let mut out = OutBuf::new();
            if frames >= budget || !s.poll_transmit(&mut out) {
                break;
            }
            frames += 1;
            tap.check(&s, &out.take_all());
        }
    }
    // Drain everything: must terminate.
    let mut out = OutBuf::new();
    let mut n = 0;
    while s.poll_transmit(&mut out) {
        n += 1;
        // The application queued at most 1 MiB of DATA (`budget_bytes`), which may go
        // out one byte a frame (`max_data_frame` 1): more frames than that is a loop.
        assert!(n < 2_100_000, "poll_transmit never runs dry");
        if out.len() > 1 << 20 {
            tap.check(&s, &out.take_all());
        }
    }
    tap.check(&s, &out.take_all());
    while let Some(e) = s.poll_event() {
        if matches!(e, Event::Error { .. }) {
            failed = true;
        }
    }
    if failed {
        assert!(tap.saw_goaway, "a session error is answered with GOAWAY");
        assert!(s.is_done());
    }
}

fn script_step(
    inp: &mut Input,
    s: &mut Session,
    peer: &mut Peer,
    ids: &mut Vec<u32>,
    next_peer: &mut u32,
    now: &mut Instant,
    budget_bytes: &mut usize,
) {
    let v = peer.v;
    let op = inp.byte();
    let frame = match op % 16 {
        0..=11 => peer_frame(inp, v, op, ids, next_peer, &mut peer.pending),
        12 => {
            *now += Duration::from_millis(inp.byte() as u64);
            None
        }
        13 | 14 => {
            app_step(inp, s, ids, *now, budget_bytes);
            None
        }
        _ => {
            // Corrupt one byte of the next frame.
            let mut tmp = Vec::new();
            let f = Frame::Ping { id: inp.u32() };
            f.encode(v, &mut peer.comp, &mut tmp);
            let at = inp.byte() as usize % tmp.len();
            tmp[at] ^= inp.byte() | 1;
            peer.pending.extend_from_slice(&tmp);
            None
        }
    };
    if let Some(f) = frame {
        let start = peer.pending.len();
        f.encode(v, &mut peer.comp, &mut peer.pending);
        if op & 0xc0 == 0xc0 && peer.pending.len() > start {
            // Flip a byte inside it (header blocks included: zlib garbage).
            let span = peer.pending.len() - start;
            let at = start + inp.byte() as usize % span;
            peer.pending[at] ^= inp.byte() | 1;
        }
    }
}

/// The frame a scripted peer sends for `op` (0 to 11: SYN_STREAM, SYN_REPLY, RST_STREAM,
/// SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE, DATA, raw bytes straight into
/// `pending`, NOOP, CREDENTIAL and unknown frames), naming the streams in `ids` or new
/// ones from `next_peer` on.
pub(crate) fn peer_frame(
    inp: &mut Input,
    v: Version,
    op: u8,
    ids: &[u32],
    next_peer: &mut u32,
    pending: &mut Vec<u8>,
) -> Option<Frame> {
    match op % 16 {
        0 | 1 => {
            let id = if op & 0x10 != 0 {
                pick_id(inp, ids, *next_peer)
            } else {
                *next_peer
            };
            if id >= *next_peer {
                *next_peer = id.saturating_add(2) & 0x7fff_ffff;
            }
            let assoc = if op & 0x20 != 0 {
                pick_id(inp, ids, *next_peer)
            } else {
                0
            };
            let fl = inp.byte();
            Some(Frame::SynStream(SynStream {
                stream_id: StreamId(id),
                assoc_id: StreamId(assoc),
                priority: fl >> 5,
                slot: inp.byte(),
                fin: fl & 1 != 0,
                unidirectional: fl & 2 != 0,
                headers: script_headers(v, inp, ids),
            }))
        }
        2 => Some(Frame::SynReply {
            stream_id: StreamId(pick_id(inp, ids, *next_peer)),
            fin: op & 0x10 != 0,
            headers: script_headers(v, inp, ids),
        }),
        3 => Some(Frame::RstStream {
            stream_id: StreamId(pick_id(inp, ids, *next_peer)),
            status: RstStatus((inp.byte() % 13) as u32),
        }),
        4 => {
            let entries = (0..inp.byte() % 4)
                .map(|_| Setting {
                    id: SettingId((inp.byte() % 10) as u32),
                    flags: inp.byte() % 4,
                    value: interesting_u32(inp),
                })
                .collect();
            Some(Frame::Settings {
                clear: op & 0x10 != 0,
                entries,
            })
        }
        5 => Some(Frame::Ping {
            id: interesting_u32(inp),
        }),
        6 => Some(Frame::GoAway {
            last_good: StreamId(pick_id(inp, ids, *next_peer)),
            status: GoAwayStatus((inp.byte() % 4) as u32),
        }),
        7 => Some(Frame::Headers {
            stream_id: StreamId(pick_id(inp, ids, *next_peer)),
            fin: op & 0x10 != 0,
            headers: script_headers(v, inp, ids),
        }),
        8 => Some(Frame::WindowUpdate {
            stream_id: StreamId(pick_id(inp, ids, *next_peer)),
            delta: interesting_u32(inp) & 0x7fff_ffff,
        }),
        9 => {
            let len = [0usize, 1, 100, 8192, 65_537][(inp.byte() % 5) as usize];
            Some(Frame::Data {
                stream_id: StreamId(pick_id(inp, ids, *next_peer)),
                fin: op & 0x10 != 0,
                data: Bytes::from(vec![0x5a; len]),
            })
        }
        10 => {
            let n = inp.byte() as usize;
            pending.extend_from_slice(inp.bytes(n));
            None
        }
        11 => Some(match inp.byte() % 4 {
            0 => Frame::Noop,
            1 => Frame::Credential {
                slot: inp.u16(),
                proof: Bytes::from_static(b"proof"),
                certificates: vec![Bytes::from_static(b"cert")],
            },
            2 => Frame::Unknown {
                version: v.wire(),
                frame_type: inp.u16(),
                flags: inp.byte(),
                payload: Bytes::from(vec![1; (inp.byte() as usize) * 300]),
            },
            _ => Frame::Unknown {
                version: inp.byte() as u16 % 4,
                frame_type: (inp.byte() % 11) as u16,
                flags: inp.byte(),
                payload: Bytes::from(inp.bytes(12).to_vec()),
            },
        }),
        _ => None,
    }
}

/// Headers the application hands to the session: only valid ones (the session sends
/// what it is given; validating outgoing headers is the application's job).
fn app_headers(v: Version, inp: &mut Input, ids: &[u32]) -> Headers {
    let h = script_headers(v, inp, ids);
    let mut raw = Vec::new();
    h.encode(v, &mut raw);
    if Headers::decode(v, &raw).is_ok() {
        h
    } else {
        http::response_headers(v, 204, &Headers::new())
    }
}

/// The application acting on the session under test.
fn app_step(
    inp: &mut Input,
    s: &mut Session,
    ids: &mut Vec<u32>,
    now: Instant,
    budget_bytes: &mut usize,
) {
    let v = s.version();
    let id = StreamId(pick_id(inp, ids, 1));
    let b = inp.byte();
    let fin = b & 0x80 != 0;
    match b % 10 {
        0 => {
            if let Ok(id) = s.open(app_headers(v, inp, ids), inp.byte() % 9, fin) {
                ids.push(id.0);
            }
        }
        1 => {
            let _ = s.reply(id, http::response_headers(v, 200, &Headers::new()), fin);
        }
        2 => {
            if let Ok(p) = s.push(id, app_headers(v, inp, ids), inp.byte() % 9) {
                ids.push(p.0);
            }
        }
        3 => {
            let n = [0usize, 1, 1000, 70_000][(inp.byte() % 4) as usize].min(*budget_bytes);
            *budget_bytes -= n;
            let _ = s.send_data(id, Bytes::from(vec![0xa5; n]), fin);
        }
        4 => {
            let _ = s.send_headers(id, app_headers(v, inp, ids), fin);
        }
        5 => s.reset(id, RstStatus((inp.byte() % 12) as u32)),
        6 => s.release(id, inp.u32() as usize),
        7 => {
            s.ping(now);
        }
        8 => s.goaway(GoAwayStatus((inp.byte() % 3) as u32)),
        _ => s.send_settings(vec![Setting {
            id: SettingId((inp.byte() % 9) as u32),
            flags: 0,
            value: interesting_u32(inp),
        }]),
    }
    let _ = (s.queued(id), s.send_window(id), s.has_stream(id), s.stats());
}
