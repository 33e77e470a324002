//! Shared helpers for the `session_*` tests: a client and a server [`Session`] in memory
//! with a virtual clock ([`Pair`]), and a session facing a hand-driven hostile peer
//! ([`Hostile`]) with the exact RST_STREAM / GOAWAY bytes it should answer with.
//!
//! Bytes are pumped between the two ends of a [`Pair`] (optionally in small chunks);
//! everything each end writes is also decoded by a tap so tests can assert the order of
//! frames on the wire.

// Every `tests/session_*.rs` file is its own crate and uses only some of these helpers;
// the rest would be reported as dead code in that crate.
#![allow(dead_code)]

use bytes::{Bytes, BytesMut};
use spdy::codes::RstStatus;
use spdy::compress::{CompressionConfig, HeaderCompressor, HeaderDecompressor};
use spdy::frame::{Frame, StreamId, SynStream};
use spdy::session::{Config, Event, OutBuf, Role, Session, Violation};
use spdy::{http, Headers, Version};
use std::time::{Duration, Instant};

/// Every SPDY version the sessions speak.
pub const ALL: [Version; 3] = [Version::V2, Version::V3, Version::V3_1];

/// The default session configuration for `role` speaking `v`.
pub fn cfg(role: Role, v: Version) -> Config {
    Config::new(role, v)
}

/// GET request headers for `https://example.com{path}`.
pub fn request(v: Version, path: &str) -> Headers {
    let extra = Headers::from_pairs([("user-agent", "session-pair/1.0"), ("accept", "*/*")]);
    http::request_headers(v, "GET", "https", "example.com", path, &extra)
}

/// 200 response headers with a content type and a cookie.
pub fn response(v: Version) -> Headers {
    let extra = Headers::from_pairs([("content-type", "text/html"), ("set-cookie", "a=b")]);
    http::response_headers(v, 200, &extra)
}

/// A body whose bytes depend on their offset, so reordering would be noticed.
pub fn pattern(n: usize, seed: u8) -> Bytes {
    Bytes::from(
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect::<Vec<u8>>(),
    )
}

/// One end of the connection plus a tap decoding every frame it writes.
pub struct End {
    /// The session under test.
    pub s: Session,
    /// Every event the session reported, in order.
    pub events: Vec<Event>,
    /// Call `release` for every DATA event as it arrives.
    pub auto_release: bool,
    inbox: BytesMut,
    tap: HeaderDecompressor,
    version: Version,
    /// Every frame the session wrote, decoded by the tap.
    pub sent: Vec<Frame>,
}

impl End {
    /// A fresh session with `cfg`, releasing received DATA automatically.
    pub fn new(cfg: Config) -> End {
        let version = cfg.version;
        End {
            s: Session::new(cfg),
            events: Vec::new(),
            auto_release: true,
            inbox: BytesMut::new(),
            tap: HeaderDecompressor::new(version, 1 << 24),
            version,
            sent: Vec::new(),
        }
    }

    /// Decodes bytes the session wrote into `sent`; they must be whole frames.
    fn tap(&mut self, bytes: &[u8]) {
        let mut b = Bytes::copy_from_slice(bytes);
        while let Some(f) =
            Frame::decode(self.version, &mut b, &mut self.tap).expect("sessions write valid frames")
        {
            self.sent.push(f);
        }
        assert!(b.is_empty(), "poll_transmit wrote a partial frame");
    }

    /// Everything the session can write now.
    pub fn transmit(&mut self) -> Vec<u8> {
        let mut out = OutBuf::new();
        while self.s.poll_transmit(&mut out) {}
        let bytes = out.take_all();
        self.tap(&bytes);
        self.drain_events(); // writing a FIN can close a stream
        bytes
    }

    /// Exactly one frame, if the session has one to write.
    pub fn transmit_one(&mut self) -> Option<Vec<u8>> {
        let mut out = OutBuf::new();
        if !self.s.poll_transmit(&mut out) {
            return None;
        }
        let bytes = out.take_all();
        self.tap(&bytes);
        self.drain_events();
        Some(bytes)
    }

    /// Feeds `bytes` to the session at `now`, `chunk` bytes per `recv` call.
    pub fn receive(&mut self, bytes: &[u8], now: Instant, chunk: usize) {
        for c in bytes.chunks(chunk.max(1)) {
            self.inbox.extend_from_slice(c);
            self.s.recv(&mut self.inbox, now);
            self.drain_events();
        }
    }

    /// Moves the session's pending events to `events`, releasing DATA if `auto_release`.
    pub fn drain_events(&mut self) {
        while let Some(e) = self.s.poll_event() {
            if self.auto_release {
                if let Event::Data { id, data, .. } = &e {
                    self.s.release(*id, data.len());
                }
            }
            self.events.push(e);
        }
    }

    /// The body received so far on a stream.
    pub fn body(&self, id: StreamId) -> Vec<u8> {
        let mut b = Vec::new();
        for e in &self.events {
            if let Event::Data { id: i, data, .. } = e {
                if *i == id {
                    b.extend_from_slice(data);
                }
            }
        }
        b
    }

    /// Streams the peer opened, in order, with their headers.
    pub fn opened(&self) -> Vec<(StreamId, Headers, Option<StreamId>)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Stream {
                    id,
                    headers,
                    associated,
                    ..
                } => Some((*id, headers.clone(), *associated)),
                _ => None,
            })
            .collect()
    }

    /// Whether the session reported stream `id` as closed.
    pub fn closed(&self, id: StreamId) -> bool {
        self.events.contains(&Event::Closed { id })
    }

    /// Resets the session reported: (stream, status, sent by the peer).
    pub fn resets(&self) -> Vec<(StreamId, RstStatus, bool)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Reset { id, status, remote } => Some((*id, *status, *remote)),
                _ => None,
            })
            .collect()
    }

    /// DATA frames written since frame index `from`: (stream, length, fin).
    pub fn data_sent_since(&self, from: usize) -> Vec<(u32, usize, bool)> {
        self.sent[from..]
            .iter()
            .filter_map(|f| match f {
                Frame::Data {
                    stream_id,
                    fin,
                    data,
                } => Some((stream_id.0, data.len(), *fin)),
                _ => None,
            })
            .collect()
    }

    /// The session errors (`Event::Error`) reported.
    pub fn errors(&self) -> Vec<&Event> {
        self.events
            .iter()
            .filter(|e| matches!(e, Event::Error { .. }))
            .collect()
    }
}

/// Client and server in memory with a virtual clock.
pub struct Pair {
    /// The client end.
    pub c: End,
    /// The server end.
    pub s: End,
    t0: Instant,
    at: Duration,
    /// Bytes are delivered in pieces of this size (partial frames on every call).
    pub chunk: usize,
}

impl Pair {
    /// A client with `client` and a server with `server`, whole-buffer delivery, time 0.
    pub fn new(client: Config, server: Config) -> Pair {
        Pair {
            c: End::new(client),
            s: End::new(server),
            t0: Instant::now(),
            at: Duration::ZERO,
            chunk: usize::MAX,
        }
    }

    /// A client and a server with the default configuration for `v`.
    pub fn of(v: Version) -> Pair {
        Pair::new(cfg(Role::Client, v), cfg(Role::Server, v))
    }

    /// The current virtual time.
    pub fn now(&self) -> Instant {
        self.t0 + self.at
    }

    /// Moves the virtual clock forward by `d`.
    pub fn advance(&mut self, d: Duration) {
        self.at += d;
    }

    /// Delivers everything the client can write now to the server; false if nothing.
    pub fn c2s(&mut self) -> bool {
        let b = self.c.transmit();
        let now = self.now();
        self.s.receive(&b, now, self.chunk);
        !b.is_empty()
    }

    /// Delivers everything the server can write now to the client; false if nothing.
    pub fn s2c(&mut self) -> bool {
        let b = self.s.transmit();
        let now = self.now();
        self.c.receive(&b, now, self.chunk);
        !b.is_empty()
    }

    /// Exchanges bytes until neither end has anything to write.
    pub fn pump(&mut self) {
        for _ in 0..10_000 {
            let a = self.c2s();
            let b = self.s2c();
            if !a && !b {
                return;
            }
        }
        panic!("the sessions never went quiet");
    }

    /// Server: answers every stream it has seen and not yet answered with a reply and a
    /// body of `size` bytes.
    pub fn serve_all(&mut self, answered: &mut Vec<StreamId>, size: usize) {
        let v = self.s.version;
        for (id, _, assoc) in self.s.opened() {
            if assoc.is_none() && !answered.contains(&id) && self.s.s.has_stream(id) {
                answered.push(id);
                self.s.s.reply(id, response(v), false).unwrap();
                self.s
                    .s
                    .send_data(id, pattern(size, id.0 as u8), true)
                    .unwrap();
            }
        }
    }
}

/// Push headers for `https://example.com{path}`: status 200, `text/css`.
pub fn push_headers(v: Version, path: &str) -> Headers {
    http::push_headers(
        v,
        "https",
        "example.com",
        path,
        200,
        &Headers::from_pairs([("content-type", "text/css")]),
    )
}

/// A session under test and a hand-driven peer with its own header compressor (so the
/// zlib context of the hostile frames stays valid) and a decompressor for the answers.
pub struct Hostile {
    /// The session under test.
    pub s: Session,
    /// The version both sides speak.
    pub v: Version,
    /// The peer's header compressor for the frames it sends.
    pub comp: HeaderCompressor,
    dec: HeaderDecompressor,
    /// The session's read buffer.
    pub inbox: BytesMut,
    now: Instant,
    /// Every event the session reported, in order.
    pub events: Vec<Event>,
}

impl Hostile {
    /// A server with the default configuration for `v`, its opening frames read.
    pub fn server(v: Version) -> Hostile {
        Hostile::with(cfg(Role::Server, v))
    }

    /// A client with the default configuration for `v`, its opening frames read.
    pub fn client(v: Version) -> Hostile {
        Hostile::with(cfg(Role::Client, v))
    }

    /// A session with `cfg`; the peer compresses without the CRIME-safe split.
    pub fn with(cfg: Config) -> Hostile {
        Hostile::with_compression(
            cfg,
            CompressionConfig {
                crime_safe: false,
                ..CompressionConfig::default()
            },
        )
    }

    /// A session with `cfg` and a peer compressing with `comp`; checks that the session
    /// opens with SETTINGS.
    pub fn with_compression(cfg: Config, comp: CompressionConfig) -> Hostile {
        let v = cfg.version;
        let mut h = Hostile {
            s: Session::new(cfg),
            v,
            comp: HeaderCompressor::new(v, comp),
            dec: HeaderDecompressor::new(v, 1 << 24),
            inbox: BytesMut::new(),
            now: Instant::now(),
            events: vec![],
        };
        let opening = h.answers();
        assert!(opening[0].starts_with(&format!("80{:02x}0004", v.wire())));
        h
    }

    /// Encodes `f` with the peer's compressor and feeds it to the session.
    pub fn send(&mut self, f: Frame) {
        let mut out = Vec::new();
        f.encode(self.v, &mut self.comp, &mut out);
        self.send_raw(&out);
    }

    /// Feeds raw bytes to the session and collects the events.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.inbox.extend_from_slice(bytes);
        self.s.recv(&mut self.inbox, self.now);
        while let Some(e) = self.s.poll_event() {
            self.events.push(e);
        }
    }

    /// A request (client → server) or a plain SYN_STREAM.
    pub fn syn_stream(&mut self, id: u32, fin: bool) {
        let h = request(self.v, "/");
        self.syn_stream_with(id, 0, fin, false, h);
    }

    /// Sends a SYN_STREAM with the given associated stream, flags and headers.
    pub fn syn_stream_with(&mut self, id: u32, assoc: u32, fin: bool, uni: bool, headers: Headers) {
        self.send(Frame::SynStream(SynStream {
            stream_id: StreamId(id),
            assoc_id: StreamId(assoc),
            priority: 0,
            slot: 0,
            fin,
            unidirectional: uni,
            headers,
        }));
    }

    /// Sends `len` bytes of DATA on stream `id`.
    pub fn data(&mut self, id: u32, len: usize, fin: bool) {
        self.send(Frame::Data {
            stream_id: StreamId(id),
            fin,
            data: pattern(len, 0),
        });
    }

    /// Sends a SYN_REPLY with response headers on stream `id`.
    pub fn reply(&mut self, id: u32, fin: bool) {
        let h = response(self.v);
        self.send(Frame::SynReply {
            stream_id: StreamId(id),
            fin,
            headers: h,
        });
    }

    /// Every frame the session writes now, as hex, one string per frame.
    pub fn answers(&mut self) -> Vec<String> {
        let mut out = OutBuf::new();
        while self.s.poll_transmit(&mut out) {}
        let bytes = out.take_all();
        let mut frames = Vec::new();
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let len = u32::from_be_bytes([0, rest[5], rest[6], rest[7]]) as usize + 8;
            frames.push(to_hex(&rest[..len]));
            rest = &rest[len..];
        }
        // Keep the answer decompressor in step (replies carry header blocks).
        let mut b = Bytes::from(bytes);
        while Frame::decode(self.v, &mut b, &mut self.dec)
            .expect("valid answer")
            .is_some()
        {}
        frames
    }

    /// Ids of the streams the session reported as opened.
    pub fn opened(&self) -> Vec<u32> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Stream { id, .. } => Some(id.0),
                _ => None,
            })
            .collect()
    }

    /// The violation of the first session error reported, if any.
    pub fn violation(&self) -> Option<&Violation> {
        self.events.iter().find_map(|e| match e {
            Event::Error { violation, .. } => Some(violation),
            _ => None,
        })
    }
}

/// Lower-case hex of `b`, without separators.
pub fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// RST_STREAM written out by hand: `80 0v 00 03 00 00 00 08 | id | status`.
pub fn rst(v: Version, id: u32, status: u32) -> String {
    format!("80{:02x}000300000008{id:08x}{status:08x}", v.wire())
}

/// GOAWAY by hand; SPDY/2's has no status field.
pub fn goaway(v: Version, last_good: u32, status: u32) -> String {
    if v == Version::V2 {
        format!("8002000700000004{last_good:08x}")
    } else {
        format!("8003000700000008{last_good:08x}{status:08x}")
    }
}

/// RST_STREAM status code PROTOCOL_ERROR.
pub const PROTOCOL_ERROR: u32 = 1;
/// RST_STREAM status code INVALID_STREAM.
pub const INVALID_STREAM: u32 = 2;
/// RST_STREAM status code REFUSED_STREAM.
pub const REFUSED_STREAM: u32 = 3;
/// RST_STREAM status code UNSUPPORTED_VERSION.
pub const UNSUPPORTED_VERSION: u32 = 4;
/// RST_STREAM status code FLOW_CONTROL_ERROR.
pub const FLOW_CONTROL_ERROR: u32 = 7;
/// RST_STREAM status code STREAM_IN_USE.
pub const STREAM_IN_USE: u32 = 8;
/// RST_STREAM status code STREAM_ALREADY_CLOSED.
pub const STREAM_ALREADY_CLOSED: u32 = 9;
/// RST_STREAM status code FRAME_TOO_LARGE.
pub const FRAME_TOO_LARGE: u32 = 11;

/// SPDY/2 has RST codes 1-7 only; later ones become PROTOCOL_ERROR.
pub fn code(v: Version, c: u32) -> u32 {
    if v == Version::V2 && c > 7 {
        PROTOCOL_ERROR
    } else {
        c
    }
}

/// After a session error nothing more is read or answered.
pub fn assert_dead(h: &mut Hostile) {
    assert!(h.s.is_done());
    h.send(Frame::Ping { id: 2 });
    assert!(h.answers().is_empty(), "a failed session answers nothing");
}

/// After a stream error the session still works: a new request is answered.
pub fn assert_alive(h: &mut Hostile, next_id: u32) {
    h.syn_stream(next_id, true);
    assert!(
        h.opened().contains(&next_id),
        "stream {next_id} was not opened"
    );
    h.s.reply(StreamId(next_id), response(h.v), true).unwrap();
    let a = h.answers();
    assert_eq!(a.len(), 1);
    assert!(
        a[0].starts_with(&format!("80{:02x}0002", h.v.wire())),
        "{a:?}"
    );
}

/// A client with stream 1 open, talking to a hand-driven server.
pub fn client_with_request(v: Version) -> Hostile {
    let mut h = Hostile::client(v);
    h.s.open(request(v, "/"), 0, false).unwrap();
    let a = h.answers();
    assert_eq!(a.len(), 1, "the SYN_STREAM");
    h
}
