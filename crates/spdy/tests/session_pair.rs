//! A client [`Session`] and a server [`Session`] in memory, with a virtual clock.
//!
//! Bytes are pumped between the two ends (optionally in small chunks); everything each
//! end writes is also decoded by a tap so tests can assert the order of frames on the
//! wire. The second half feeds hand-crafted hostile frames to one session and checks the
//! exact RST_STREAM / GOAWAY bytes it answers with, for every [`Violation`].

use bytes::{Bytes, BytesMut};
use spdy::codes::{GoAwayStatus, RstStatus, SettingId};
use spdy::compress::{CompressionConfig, HeaderCompressor, HeaderDecompressor};
use spdy::frame::{Frame, Setting, StreamId, SynStream};
use spdy::session::{Config, Event, FlowControl, OutBuf, Role, SendError, Session, Violation};
use spdy::{http, Headers, Version};
use std::time::{Duration, Instant};

const ALL: [Version; 3] = [Version::V2, Version::V3, Version::V3_1];

fn cfg(role: Role, v: Version) -> Config {
    Config::new(role, v)
}

fn request(v: Version, path: &str) -> Headers {
    let extra = Headers::from_pairs([("user-agent", "session-pair/1.0"), ("accept", "*/*")]);
    http::request_headers(v, "GET", "https", "example.com", path, &extra)
}

fn response(v: Version) -> Headers {
    let extra = Headers::from_pairs([("content-type", "text/html"), ("set-cookie", "a=b")]);
    http::response_headers(v, 200, &extra)
}

/// A body whose bytes depend on their offset, so reordering would be noticed.
fn pattern(n: usize, seed: u8) -> Bytes {
    Bytes::from(
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect::<Vec<u8>>(),
    )
}

/// One end of the connection plus a tap decoding every frame it writes.
struct End {
    s: Session,
    events: Vec<Event>,
    /// Call `release` for every DATA event as it arrives.
    auto_release: bool,
    inbox: BytesMut,
    tap: HeaderDecompressor,
    version: Version,
    sent: Vec<Frame>,
}

impl End {
    fn new(cfg: Config) -> End {
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
    fn transmit(&mut self) -> Vec<u8> {
        let mut out = OutBuf::new();
        while self.s.poll_transmit(&mut out) {}
        let bytes = out.take_all();
        self.tap(&bytes);
        self.drain_events(); // writing a FIN can close a stream
        bytes
    }

    /// Exactly one frame, if the session has one to write.
    fn transmit_one(&mut self) -> Option<Vec<u8>> {
        let mut out = OutBuf::new();
        if !self.s.poll_transmit(&mut out) {
            return None;
        }
        let bytes = out.take_all();
        self.tap(&bytes);
        self.drain_events();
        Some(bytes)
    }

    fn receive(&mut self, bytes: &[u8], now: Instant, chunk: usize) {
        for c in bytes.chunks(chunk.max(1)) {
            self.inbox.extend_from_slice(c);
            self.s.recv(&mut self.inbox, now);
            self.drain_events();
        }
    }

    fn drain_events(&mut self) {
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
    fn body(&self, id: StreamId) -> Vec<u8> {
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
    fn opened(&self) -> Vec<(StreamId, Headers, Option<StreamId>)> {
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

    fn closed(&self, id: StreamId) -> bool {
        self.events.contains(&Event::Closed { id })
    }

    fn resets(&self) -> Vec<(StreamId, RstStatus, bool)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Reset { id, status, remote } => Some((*id, *status, *remote)),
                _ => None,
            })
            .collect()
    }

    /// DATA frames written since frame index `from`: (stream, length, fin).
    fn data_sent_since(&self, from: usize) -> Vec<(u32, usize, bool)> {
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

    fn errors(&self) -> Vec<&Event> {
        self.events
            .iter()
            .filter(|e| matches!(e, Event::Error { .. }))
            .collect()
    }
}

/// Client and server in memory with a virtual clock.
struct Pair {
    c: End,
    s: End,
    t0: Instant,
    at: Duration,
    /// Bytes are delivered in pieces of this size (partial frames on every call).
    chunk: usize,
}

impl Pair {
    fn new(client: Config, server: Config) -> Pair {
        Pair {
            c: End::new(client),
            s: End::new(server),
            t0: Instant::now(),
            at: Duration::ZERO,
            chunk: usize::MAX,
        }
    }

    fn of(v: Version) -> Pair {
        Pair::new(cfg(Role::Client, v), cfg(Role::Server, v))
    }

    fn now(&self) -> Instant {
        self.t0 + self.at
    }

    fn advance(&mut self, d: Duration) {
        self.at += d;
    }

    fn c2s(&mut self) -> bool {
        let b = self.c.transmit();
        let now = self.now();
        self.s.receive(&b, now, self.chunk);
        !b.is_empty()
    }

    fn s2c(&mut self) -> bool {
        let b = self.s.transmit();
        let now = self.now();
        self.c.receive(&b, now, self.chunk);
        !b.is_empty()
    }

    /// Exchanges bytes until neither end has anything to write.
    fn pump(&mut self) {
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
    fn serve_all(&mut self, answered: &mut Vec<StreamId>, size: usize) {
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

// =======================================================================================
// Ordinary operation.

#[test]
fn completes_a_request_and_response_in_every_version() {
    for v in ALL {
        let mut p = Pair::of(v);
        let id = p.c.s.open(request(v, "/index.html"), 0, true).unwrap();
        assert_eq!(id, StreamId(1));
        p.pump();
        let opened = p.s.opened();
        assert_eq!(opened.len(), 1, "{v}");
        assert_eq!(opened[0].0, id);
        let req = http::parse_request(v, &opened[0].1).unwrap();
        assert_eq!(
            (req.method.as_str(), req.path.as_str()),
            ("GET", "/index.html")
        );
        assert_eq!(req.host, "example.com");

        let body = pattern(100_000, 7);
        p.s.s.reply(id, response(v), false).unwrap();
        p.s.s.send_data(id, body.clone(), true).unwrap();
        p.pump();

        let reply =
            p.c.events
                .iter()
                .find_map(|e| match e {
                    Event::Reply {
                        id: i,
                        headers,
                        fin,
                    } if *i == id => Some((headers.clone(), *fin)),
                    _ => None,
                })
                .expect("a reply");
        assert_eq!(reply, (response(v), false), "{v}");
        assert_eq!(p.c.body(id), body, "{v}");
        assert!(p.c.closed(id), "{v}: {:?}", p.c.events);
        assert!(p.s.closed(id), "{v}: {:?}", p.s.events);
        assert_eq!((p.c.s.open_streams(), p.s.s.open_streams()), (0, 0), "{v}");
        assert!(p.c.errors().is_empty() && p.s.errors().is_empty());
        // The opening frames: SETTINGS, plus the session window in SPDY/3.1.
        let settings = |f: &Frame| matches!(f, Frame::Settings { .. });
        assert!(settings(&p.c.sent[0]) && settings(&p.s.sent[0]), "{v}");
        assert_eq!(
            p.c.sent[1]
                == (Frame::WindowUpdate {
                    stream_id: StreamId(0),
                    delta: (8 << 20) - 65_536
                }),
            v == Version::V3_1,
            "{v}"
        );
    }
}

#[test]
fn delivers_the_same_stream_whatever_the_chunking() {
    for chunk in [1, 2, 3, 7, 8, 9, 100, 4096] {
        let v = Version::V3_1;
        let mut p = Pair::of(v);
        p.chunk = chunk;
        let id = p.c.s.open(request(v, "/a"), 3, false).unwrap();
        p.c.s.send_data(id, pattern(20_000, 1), true).unwrap();
        p.pump();
        assert_eq!(p.s.body(id), pattern(20_000, 1), "chunk {chunk}");
        p.s.s.reply(id, response(v), false).unwrap();
        p.s.s.send_data(id, pattern(30_000, 2), false).unwrap();
        p.s.s
            .send_headers(id, Headers::from_pairs([("x-trailer", "done")]), true)
            .unwrap();
        p.pump();
        assert_eq!(p.c.body(id), pattern(30_000, 2), "chunk {chunk}");
        assert!(p.c.events.contains(&Event::Headers {
            id,
            headers: Headers::from_pairs([("x-trailer", "done")]),
            fin: true
        }));
        assert!(p.c.closed(id), "chunk {chunk}: {:?}", p.c.events);
        assert!(p.s.closed(id), "chunk {chunk}: {:?}", p.s.events);
    }
}

#[test]
fn cuts_data_into_frames_no_larger_than_max_data_frame() {
    let v = Version::V3;
    let mut s = cfg(Role::Server, v);
    s.max_data_frame = 1000;
    let mut p = Pair::new(cfg(Role::Client, v), s);
    let id = p.c.s.open(request(v, "/"), 0, true).unwrap();
    p.pump();
    let mark = p.s.sent.len();
    p.s.s.reply(id, response(v), false).unwrap();
    p.s.s.send_data(id, pattern(10_500, 0), true).unwrap();
    p.pump();
    let sizes: Vec<usize> = p.s.data_sent_since(mark).iter().map(|d| d.1).collect();
    assert_eq!(
        sizes,
        [1000; 10].iter().copied().chain([500]).collect::<Vec<_>>()
    );
    assert!(
        p.s.data_sent_since(mark).last().unwrap().2,
        "FIN folded into the last frame"
    );
}

#[test]
fn a_lone_stream_gets_larger_frames_until_another_has_data() {
    let v = Version::V3;
    let mut s = cfg(Role::Server, v);
    s.max_data_frame = 1000;
    s.lone_data_frame = 4000;
    let mut p = Pair::new(cfg(Role::Client, v), s);
    let a = p.c.s.open(request(v, "/a"), 0, true).unwrap();
    let b = p.c.s.open(request(v, "/b"), 0, true).unwrap();
    p.pump();
    // Alone: 4,000-byte frames.
    let mark = p.s.sent.len();
    p.s.s.reply(a, response(v), false).unwrap();
    p.s.s.send_data(a, pattern(10_500, 0), false).unwrap();
    p.pump();
    let sizes: Vec<usize> = p.s.data_sent_since(mark).iter().map(|d| d.1).collect();
    assert_eq!(sizes, [4000, 4000, 2500]);
    // Two streams with data: 1,000-byte frames, taking turns, until one is done.
    let mark = p.s.sent.len();
    p.s.s.reply(b, response(v), false).unwrap();
    p.s.s.send_data(a, pattern(3000, 1), true).unwrap();
    p.s.s.send_data(b, pattern(3000, 2), true).unwrap();
    p.pump();
    let frames = p.s.data_sent_since(mark);
    assert_eq!(frames.len(), 6, "{frames:?}");
    assert!(frames.iter().all(|f| f.1 == 1000), "{frames:?}");
    assert_eq!(p.c.body(a).len(), 13_500);
    assert_eq!(p.c.body(b).len(), 3000);
}

// =======================================================================================
// Flow control.

/// A client with a small stream window that does not consume its data by itself.
fn stalled_pair(v: Version, window: u32, body: usize) -> (Pair, StreamId) {
    let mut c = cfg(Role::Client, v);
    c.initial_window = window;
    let mut p = Pair::new(c, cfg(Role::Server, v));
    p.c.auto_release = false;
    let id = p.c.s.open(request(v, "/big"), 0, true).unwrap();
    p.pump();
    p.s.s.reply(id, response(v), false).unwrap();
    p.s.s.send_data(id, pattern(body, 9), true).unwrap();
    p.pump();
    (p, id)
}

#[test]
fn stalls_on_the_stream_window_and_resumes_on_window_update() {
    let (mut p, id) = stalled_pair(Version::V3, 16_384, 100_000);
    assert_eq!(p.c.body(id).len(), 16_384);
    assert_eq!(p.s.s.send_window(id), Some(0));
    assert_eq!(p.s.s.queued(id), 100_000 - 16_384);
    assert!(p.s.transmit().is_empty(), "nothing may be sent at window 0");

    // Credit goes back once half a window is consumed.
    p.c.s.release(id, 8_191);
    assert!(p.c.transmit().is_empty());
    p.c.s.release(id, 1);
    let mark = p.c.sent.len();
    p.pump();
    assert_eq!(
        p.c.sent[mark..],
        [Frame::WindowUpdate {
            stream_id: id,
            delta: 8_192
        }]
    );
    assert_eq!(p.c.body(id).len(), 16_384 + 8_192);
    assert_eq!(p.s.s.send_window(id), Some(0));

    // Consume everything from now on.
    p.c.auto_release = true;
    p.c.s.release(id, 16_384);
    p.pump();
    assert_eq!(p.c.body(id), pattern(100_000, 9));
    assert!(p.c.closed(id), "{:?}", p.c.events);
    assert!(p.s.closed(id), "{:?}", p.s.events);
    assert!(p.c.errors().is_empty() && p.c.resets().is_empty());
}

#[test]
fn applies_a_smaller_initial_window_to_open_streams_even_below_zero() {
    let (mut p, id) = stalled_pair(Version::V3, 16_384, 100_000);
    assert_eq!(p.s.s.send_window(id), Some(0));
    p.c.s.send_settings(vec![Setting {
        id: SettingId::INITIAL_WINDOW_SIZE,
        flags: 0,
        value: 4_096,
    }]);
    p.pump();
    assert_eq!(p.s.s.send_window(id), Some(4_096 - 16_384));

    // 8 KiB of credit leaves the window at -4096: still nothing may flow.
    p.c.s.release(id, 8_192);
    p.pump();
    assert_eq!(p.s.s.send_window(id), Some(-4_096));
    assert_eq!(p.c.body(id).len(), 16_384);
    // Another 8 KiB: the window is 4096, and exactly that much arrives.
    p.c.s.release(id, 8_192);
    p.pump();
    assert_eq!(p.c.body(id).len(), 16_384 + 4_096);
    assert_eq!(p.s.s.send_window(id), Some(0));

    // A stream opened afterwards starts with the new window.
    let id2 = p.c.s.open(request(Version::V3, "/two"), 0, true).unwrap();
    p.pump();
    p.s.s.reply(id2, response(Version::V3), false).unwrap();
    p.s.s.send_data(id2, pattern(10_000, 3), true).unwrap();
    p.pump();
    assert_eq!(p.c.body(id2).len(), 4_096);
    assert!(p.c.errors().is_empty() && p.c.resets().is_empty());
}

#[test]
fn applies_a_larger_initial_window_to_open_streams_without_window_update() {
    let (mut p, id) = stalled_pair(Version::V3, 16_384, 100_000);
    p.c.s.send_settings(vec![Setting {
        id: SettingId::INITIAL_WINDOW_SIZE,
        flags: 0,
        value: 32_768,
    }]);
    p.pump();
    // The stalled stream got 16 KiB more credit from the SETTINGS alone, and the client
    // (which announced it) accepts it.
    assert_eq!(p.c.body(id).len(), 32_768);
    assert_eq!(p.s.s.send_window(id), Some(0));
    assert!(
        p.c.resets().is_empty() && p.s.resets().is_empty(),
        "{:?}",
        p.c.resets()
    );
    assert!(!p
        .c
        .sent
        .iter()
        .any(|f| matches!(f, Frame::WindowUpdate { .. })));
}

#[test]
fn stalls_on_the_spdy31_session_window() {
    let v = Version::V3_1;
    let mut c = cfg(Role::Client, v);
    c.session_window = 65_536; // the default: no opening WINDOW_UPDATE
    let mut p = Pair::new(c, cfg(Role::Server, v));
    p.c.auto_release = false;
    let ids: Vec<StreamId> = (0..3)
        .map(|i| p.c.s.open(request(v, &format!("/{i}")), 0, true).unwrap())
        .collect();
    p.pump();
    let mut answered = vec![];
    p.serve_all(&mut answered, 40_000);
    p.pump();
    let total = |p: &Pair| ids.iter().map(|&i| p.c.body(i).len()).sum::<usize>();
    assert_eq!(total(&p), 65_536);
    for &id in &ids {
        assert!(
            p.s.s.send_window(id).unwrap() > 0,
            "the stream windows are open"
        );
    }
    assert!(p.s.transmit().is_empty());

    // Half the session window consumed: WINDOW_UPDATE on stream 0.
    let mark = p.c.sent.len();
    p.c.s.release(ids[0], 32_768);
    p.pump();
    assert_eq!(
        p.c.sent[mark..],
        [Frame::WindowUpdate {
            stream_id: StreamId(0),
            delta: 32_768
        }]
    );
    assert_eq!(total(&p), 65_536 + 32_768);

    p.c.auto_release = true;
    p.c.s.release(ids[1], 65_536);
    p.pump();
    for &id in &ids {
        assert_eq!(p.c.body(id), pattern(40_000, id.0 as u8));
    }
}

#[test]
fn never_announces_a_session_window_past_the_maximum() {
    // A session_window above 2^31-1 is granted only up to 2^31-1: the peer's window
    // must not overflow (it would answer GOAWAY).
    let v = Version::V3_1;
    let mut c = cfg(Role::Client, v);
    c.session_window = 0x8000_0000;
    let mut p = Pair::new(c, cfg(Role::Server, v));
    let id = p.c.s.open(request(v, "/"), 0, true).unwrap();
    p.pump();
    assert!(p.c.sent.contains(&Frame::WindowUpdate {
        stream_id: StreamId(0),
        delta: 0x7fff_ffff - 65_536
    }));
    p.s.s.reply(id, response(v), false).unwrap();
    p.s.s.send_data(id, pattern(100_000, 0), true).unwrap();
    p.pump();
    assert_eq!(p.c.body(id), pattern(100_000, 0));
    assert!(p.c.errors().is_empty() && p.s.errors().is_empty());
}

#[test]
fn a_session_window_set_below_64_kib_still_returns_credit_per_half_window() {
    // Every SPDY/3.1 session window starts at 64 KiB and only grows, so a configured
    // window below it (0 here) is 64 KiB: credit goes back per 32 KiB consumed, not per
    // byte (a fuzzed input had a session send one WINDOW_UPDATE per DATA byte received).
    let v = Version::V3_1;
    let mut c = cfg(Role::Client, v);
    c.session_window = 0;
    let mut p = Pair::new(c, cfg(Role::Server, v));
    let id = p.c.s.open(request(v, "/"), 0, true).unwrap();
    p.pump();
    p.s.s.reply(id, response(v), false).unwrap();
    p.s.s.send_data(id, pattern(200_000, 3), true).unwrap();
    p.pump();
    assert_eq!(p.c.body(id), pattern(200_000, 3));
    let updates =
        p.c.sent
            .iter()
            .filter(|f| {
                matches!(
                    f,
                    Frame::WindowUpdate {
                        stream_id: StreamId(0),
                        ..
                    }
                )
            })
            .count();
    assert!(
        updates <= 200_000 / 32_768 + 1,
        "{updates} session WINDOW_UPDATEs"
    );
    assert!(p.c.errors().is_empty() && p.s.errors().is_empty());
}

#[test]
fn spdy3_has_no_session_window() {
    let v = Version::V3;
    let mut p = Pair::of(v);
    p.c.auto_release = false;
    let ids: Vec<StreamId> = (0..3)
        .map(|i| p.c.s.open(request(v, &format!("/{i}")), 0, true).unwrap())
        .collect();
    p.pump();
    p.serve_all(&mut vec![], 40_000);
    p.pump();
    assert_eq!(
        ids.iter().map(|&i| p.c.body(i).len()).sum::<usize>(),
        120_000
    );
}

#[test]
fn spdy2_sessions_have_no_flow_control() {
    let v = Version::V2;
    let mut c = cfg(Role::Client, v);
    c.initial_window = 1_024; // not announced, not enforced
    let mut p = Pair::new(c, cfg(Role::Server, v));
    p.c.auto_release = false;
    let id = p.c.s.open(request(v, "/big"), 0, true).unwrap();
    p.pump();
    p.s.s.reply(id, response(v), false).unwrap();
    p.s.s.send_data(id, pattern(300_000, 4), true).unwrap();
    p.pump();
    assert_eq!(p.c.body(id), pattern(300_000, 4));
    assert!(p.c.closed(id));
    let wu = |f: &&Frame| matches!(f, Frame::WindowUpdate { .. });
    assert_eq!(p.c.sent.iter().filter(wu).count(), 0);
    assert_eq!(p.s.sent.iter().filter(wu).count(), 0);
    // SPDY/2 SETTINGS announce the largest window (whatever initial_window says), so
    // peers that apply SPDY/3 flow control in SPDY/2 anyway (node-spdy) never stall.
    let Frame::Settings { entries, .. } = &p.c.sent[0] else {
        panic!("first frame {:?}", p.c.sent[0]);
    };
    assert!(entries
        .iter()
        .any(|e| e.id == SettingId::INITIAL_WINDOW_SIZE && e.value == 0x7fff_ffff));
    assert!(entries
        .iter()
        .any(|e| e.id == SettingId::MAX_CONCURRENT_STREAMS && e.value == 100));
}

// =======================================================================================
// Priorities.

#[test]
fn sends_higher_priority_data_first_and_round_robins_within_a_level() {
    let v = Version::V3;
    let mut s = cfg(Role::Server, v);
    s.max_data_frame = 1_024;
    let mut p = Pair::new(cfg(Role::Client, v), s);
    // ids 1, 3, 5, 7 with priorities 7, 3, 3, 0
    let pris = [7u8, 3, 3, 0];
    let ids: Vec<StreamId> = pris
        .iter()
        .map(|&pri| p.c.s.open(request(v, "/"), pri, true).unwrap())
        .collect();
    p.pump();
    let mark = p.s.sent.len();
    for &id in &ids {
        p.s.s.reply(id, response(v), false).unwrap();
        p.s.s.send_data(id, pattern(4_096, 0), true).unwrap();
    }
    p.pump();
    let order: Vec<u32> = p.s.data_sent_since(mark).iter().map(|d| d.0).collect();
    assert_eq!(order, [7, 7, 7, 7, 3, 5, 3, 5, 3, 5, 3, 5, 1, 1, 1, 1]);
    // SYN_REPLYs follow the same order as the streams' data.
    let replies: Vec<u32> = p.s.sent[mark..]
        .iter()
        .filter_map(|f| match f {
            Frame::SynReply { stream_id, .. } => Some(stream_id.0),
            _ => None,
        })
        .collect();
    assert_eq!(replies, [7, 3, 5, 1]);
}

#[test]
fn gives_reopened_session_window_to_the_highest_priority_first() {
    let v = Version::V3_1;
    let mut c = cfg(Role::Client, v);
    c.session_window = 65_536;
    let mut s = cfg(Role::Server, v);
    s.max_data_frame = 1_024;
    let mut p = Pair::new(c, s);
    p.c.auto_release = false;
    // A low-priority download fills the session window.
    let low = p.c.s.open(request(v, "/low"), 7, true).unwrap();
    p.pump();
    p.s.s.reply(low, response(v), false).unwrap();
    p.s.s.send_data(low, pattern(200_000, 0), true).unwrap();
    p.pump();
    assert_eq!(p.c.body(low).len(), 65_536);
    // Then a high and two middle-priority requests arrive; all wait for the window.
    let high = p.c.s.open(request(v, "/high"), 0, true).unwrap();
    let m1 = p.c.s.open(request(v, "/m1"), 3, true).unwrap();
    let m2 = p.c.s.open(request(v, "/m2"), 3, true).unwrap();
    p.pump();
    for id in [high, m1, m2] {
        p.s.s.reply(id, response(v), false).unwrap();
        p.s.s.send_data(id, pattern(4_096, 1), true).unwrap();
    }
    p.pump();
    assert_eq!(p.c.body(high).len(), 0, "stalled on the session window");
    let mark = p.s.sent.len();
    p.c.s.release(low, 32_768);
    p.pump();
    let order: Vec<u32> = p.s.data_sent_since(mark).iter().map(|d| d.0).collect();
    assert_eq!(order.len(), 32, "32 KiB of credit in 1 KiB frames");
    assert_eq!(order[..4], [high.0; 4]);
    let middle = &order[4..12];
    assert_eq!(middle.iter().filter(|&&x| x == m1.0).count(), 4);
    assert_eq!(middle.iter().filter(|&&x| x == m2.0).count(), 4);
    assert!(
        middle.windows(2).all(|w| w[0] != w[1]),
        "round robin: {middle:?}"
    );
    assert!(order[12..].iter().all(|&x| x == low.0));
}

#[test]
fn a_priority_frame_moves_a_stream_ahead_from_the_next_frame() {
    for v in [Version::V2, Version::V3, Version::V3_1] {
        let mut s = cfg(Role::Server, v);
        s.max_data_frame = 1_000;
        let mut p = Pair::new(cfg(Role::Client, v), s);
        let a = p.c.s.open(request(v, "/a"), 2, true).unwrap();
        let b = p.c.s.open(request(v, "/b"), 2, true).unwrap();
        p.pump();
        for id in [a, b] {
            p.s.s.reply(id, response(v), false).unwrap();
            p.s.s
                .send_data(id, pattern(20_000, id.0 as u8), true)
                .unwrap();
        }
        for _ in 0..6 {
            let b = p.s.transmit_one().unwrap();
            let now = p.now();
            p.c.receive(&b, now, usize::MAX);
        }
        let before = p.s.data_sent_since(0);
        assert!(
            before.iter().any(|d| d.0 == a.0) && before.iter().any(|d| d.0 == b.0),
            "{v:?}: equal priorities share the link: {before:?}"
        );
        // The client raises b; the server's next DATA frames are all b's until it ends.
        p.c.s.reprioritize(b, 0).unwrap();
        let wire = p.c.transmit();
        assert_eq!(&wire[2..4], &[0, 0xF0], "{v:?}: the extension's frame type");
        let now = p.now();
        p.s.receive(&wire, now, usize::MAX);
        let mark = p.s.sent.len();
        while let Some(b) = p.s.transmit_one() {
            let now = p.now();
            p.c.receive(&b, now, usize::MAX);
        }
        let after = p.s.data_sent_since(mark);
        let first_a = after.iter().position(|d| d.0 == a.0).unwrap();
        assert!(
            after[..first_a].iter().all(|d| d.0 == b.0) && after[first_a - 1].2,
            "{v:?}: b's remaining frames all go before a's next: {after:?}"
        );
        p.pump();
        assert!(p.c.body(a) == pattern(20_000, a.0 as u8), "{v:?}: a's body");
        assert!(p.c.body(b) == pattern(20_000, b.0 as u8), "{v:?}: b's body");
        // A reprioritization of a stream that has ended is not an error for either end.
        p.c.s.reprioritize(a, 1).unwrap_err();
        assert!(p.c.errors().is_empty() && p.s.errors().is_empty());
    }
}

#[test]
fn newly_ready_high_priority_data_waits_for_at_most_one_frame() {
    let v = Version::V3_1;
    let mut s = cfg(Role::Server, v);
    s.max_data_frame = 1_024;
    let mut p = Pair::new(cfg(Role::Client, v), s);
    let low = p.c.s.open(request(v, "/low"), 7, true).unwrap();
    p.pump();
    p.s.s.reply(low, response(v), false).unwrap();
    p.s.s.send_data(low, pattern(50_000, 0), true).unwrap();
    // The low stream is mid-transfer: its SYN_REPLY and one DATA frame are out.
    for _ in 0..2 {
        let b = p.s.transmit_one().unwrap();
        let now = p.now();
        p.c.receive(&b, now, usize::MAX);
    }
    let high = p.c.s.open(request(v, "/high"), 0, true).unwrap();
    p.c2s();
    p.s.s.reply(high, response(v), false).unwrap();
    p.s.s.send_data(high, pattern(3_000, 1), true).unwrap();
    let mark = p.s.sent.len();
    for _ in 0..4 {
        p.s.transmit_one().unwrap();
    }
    let next: Vec<String> = p.s.sent[mark..]
        .iter()
        .map(|f| match f {
            Frame::SynReply { stream_id, .. } => format!("reply {stream_id}"),
            Frame::Data {
                stream_id, data, ..
            } => format!("data {stream_id} {}", data.len()),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        next,
        ["reply 3", "data 3 1024", "data 3 1024", "data 3 952"],
        "the high-priority stream overtakes at once"
    );
    assert!(
        p.s.data_sent_since(mark).last().unwrap().2,
        "FIN on the last frame"
    );
}

// =======================================================================================
// Concurrent stream limits.

#[test]
fn queues_syn_streams_until_the_peers_limit_allows_in_id_order() {
    let v = Version::V3;
    let mut s = cfg(Role::Server, v);
    s.max_concurrent_streams = 2;
    let mut p = Pair::new(cfg(Role::Client, v), s);
    p.pump(); // the client learns the limit
    let ids: Vec<StreamId> = [7u8, 0, 3, 0, 7]
        .iter()
        .map(|&pri| p.c.s.open(request(v, "/"), pri, true).unwrap())
        .collect();
    assert_eq!(
        ids,
        [1, 3, 5, 7, 9].map(StreamId).to_vec(),
        "ids are allocated at open"
    );
    p.c2s();
    assert_eq!(p.s.opened().len(), 2, "only two SYN_STREAMs are written");
    let mut answered = vec![];
    for _ in 0..10 {
        p.serve_all(&mut answered, 100);
        p.pump();
        assert!(p.s.s.open_streams() <= 2);
    }
    let syns: Vec<u32> =
        p.c.sent
            .iter()
            .filter_map(|f| match f {
                Frame::SynStream(s) => Some(s.stream_id.0),
                _ => None,
            })
            .collect();
    assert_eq!(
        syns,
        [1, 3, 5, 7, 9],
        "ids reach the wire in increasing order"
    );
    for id in ids {
        assert_eq!(p.c.body(id), pattern(100, id.0 as u8));
    }
    assert!(p.s.resets().is_empty() && p.c.resets().is_empty());
}

#[test]
fn cancelling_a_queued_request_puts_nothing_on_the_wire() {
    let v = Version::V3_1;
    let mut s = cfg(Role::Server, v);
    s.max_concurrent_streams = 1;
    let mut p = Pair::new(cfg(Role::Client, v), s);
    p.pump();
    let a = p.c.s.open(request(v, "/a"), 0, true).unwrap();
    let b = p.c.s.open(request(v, "/b"), 0, true).unwrap();
    let c = p.c.s.open(request(v, "/c"), 0, true).unwrap();
    p.c.s.reset(b, RstStatus::CANCEL);
    let mut answered = vec![];
    for _ in 0..4 {
        p.pump();
        p.serve_all(&mut answered, 10);
    }
    p.pump();
    let ids: Vec<StreamId> = p.s.opened().iter().map(|o| o.0).collect();
    assert_eq!(ids, [a, c]);
    assert!(
        !p.c.sent
            .iter()
            .any(|f| matches!(f, Frame::RstStream { .. })),
        "no RST_STREAM for a stream the peer never saw: {:?}",
        p.c.sent
    );
}

#[test]
fn refuses_streams_beyond_max_concurrent_streams() {
    for v in ALL {
        let mut s = cfg(Role::Server, v);
        s.max_concurrent_streams = 2;
        let mut h = Hostile::with(s);
        for id in [1, 3, 5] {
            h.syn_stream(id, false);
        }
        assert_eq!(h.answers(), [rst(v, 5, 3)], "{v}");
        assert_eq!(h.opened(), [1, 3]);
        // Once one finishes, a new stream fits again.
        h.s.reset(StreamId(1), RstStatus::CANCEL);
        h.answers();
        h.syn_stream(7, false);
        assert!(h.answers().is_empty());
        assert_eq!(h.opened(), [1, 3, 7]);
    }
}

// =======================================================================================
// Server push.

fn push_headers(v: Version, path: &str) -> Headers {
    http::push_headers(
        v,
        "https",
        "example.com",
        path,
        200,
        &Headers::from_pairs([("content-type", "text/css")]),
    )
}

#[test]
fn delivers_an_accepted_push_before_the_associated_stream_ends() {
    for v in ALL {
        let mut p = Pair::of(v);
        let id = p.c.s.open(request(v, "/page.html"), 0, true).unwrap();
        p.pump();
        let push = p.s.s.push(id, push_headers(v, "/style.css"), 2).unwrap();
        assert_eq!(push, StreamId(2));
        p.s.s.send_data(push, pattern(5_000, 5), true).unwrap();
        p.s.s.reply(id, response(v), false).unwrap();
        p.s.s.send_data(id, pattern(7_000, 6), true).unwrap();
        p.pump();

        let opened = p.c.opened();
        assert_eq!(opened.len(), 1, "{v}");
        let (pid, headers, assoc) = &opened[0];
        assert_eq!((*pid, *assoc), (push, Some(id)));
        assert_eq!(
            http::push_url(v, headers).as_deref(),
            Some("https://example.com/style.css")
        );
        assert_eq!(p.c.body(push), pattern(5_000, 5), "{v}");
        assert_eq!(p.c.body(id), pattern(7_000, 6), "{v}");
        assert!(p.c.closed(push) && p.c.closed(id), "{v}: {:?}", p.c.events);
        assert!(p.s.closed(push), "{v}: {:?}", p.s.events);

        // On the wire: a unidirectional SYN_STREAM tied to stream 1, before its FIN.
        let syn_at =
            p.s.sent
                .iter()
                .position(|f| matches!(f, Frame::SynStream(s) if s.stream_id == push))
                .unwrap();
        let Frame::SynStream(syn) = &p.s.sent[syn_at] else {
            unreachable!()
        };
        assert!(syn.unidirectional && syn.assoc_id == id && !syn.fin);
        let fin_at = p
            .s
            .sent
            .iter()
            .position(|f| matches!(f, Frame::Data { stream_id, fin: true, .. } if *stream_id == id))
            .unwrap();
        assert!(syn_at < fin_at);
        // No SYN_REPLY on a pushed stream, and the client never writes on it.
        assert!(!p
            .s
            .sent
            .iter()
            .any(|f| matches!(f, Frame::SynReply { stream_id, .. } if *stream_id == push)));
    }
}

#[test]
fn refuses_pushes_when_accept_push_is_off() {
    for v in ALL {
        let mut c = cfg(Role::Client, v);
        c.accept_push = false;
        let mut p = Pair::new(c, cfg(Role::Server, v));
        let id = p.c.s.open(request(v, "/page.html"), 0, true).unwrap();
        p.pump();
        let push = p.s.s.push(id, push_headers(v, "/style.css"), 2).unwrap();
        p.s.s.send_data(push, pattern(5_000, 5), false).unwrap(); // still open
        p.pump();
        assert!(p.c.opened().is_empty(), "{v}");
        assert!(p.c.body(push).is_empty());
        assert!(p.c.sent.contains(&Frame::RstStream {
            stream_id: push,
            status: RstStatus::REFUSED_STREAM
        }));
        assert_eq!(p.s.resets(), [(push, RstStatus::REFUSED_STREAM, true)]);
        assert_eq!(
            p.s.s.send_data(push, Bytes::from_static(b"more"), true),
            Err(SendError::UnknownStream(push))
        );
        // The request itself is unaffected.
        p.s.s.reply(id, response(v), false).unwrap();
        p.s.s.send_data(id, pattern(100, 1), true).unwrap();
        p.pump();
        assert_eq!(p.c.body(id), pattern(100, 1));
        assert!(p.c.errors().is_empty() && p.s.errors().is_empty());
    }
}

#[test]
fn stops_a_push_the_client_cancels() {
    let v = Version::V3_1;
    let mut c = cfg(Role::Client, v);
    c.initial_window = 16_384; // the push stalls after 16 KiB
    let mut p = Pair::new(c, cfg(Role::Server, v));
    let id = p.c.s.open(request(v, "/page.html"), 0, true).unwrap();
    p.pump();
    let push = p.s.s.push(id, push_headers(v, "/big.js"), 2).unwrap();
    p.s.s.send_data(push, pattern(100_000, 5), true).unwrap();
    p.s.s.reply(id, response(v), false).unwrap();
    p.s.s.send_data(id, pattern(1_000, 6), false).unwrap();
    p.s2c();
    assert_eq!(p.c.opened()[0].0, push);
    assert_eq!(
        p.c.s.send_data(push, Bytes::from_static(b"x"), false),
        Err(SendError::StreamClosed(push)),
        "a client never writes on a push"
    );
    p.c.s.reset(push, RstStatus::CANCEL);
    p.pump();
    assert_eq!(p.s.resets(), [(push, RstStatus::CANCEL, true)]);
    assert!(!p.s.s.has_stream(push));
    assert!(p.c.body(push).len() <= 16_384);
    // Window credit for the parent stream still flows; the push sends nothing more.
    let mark = p.s.sent.len();
    p.s.s.send_data(id, pattern(1_000, 7), true).unwrap();
    p.pump();
    assert!(p.s.data_sent_since(mark).iter().all(|d| d.0 == id.0));
    assert!(p.c.closed(id));
    assert!(!p
        .c
        .sent
        .iter()
        .any(|f| matches!(f, Frame::RstStream { stream_id, .. } if *stream_id == id)));
}

#[test]
fn cancelling_the_associated_stream_cancels_its_pushes() {
    let v = Version::V3;
    let mut c = cfg(Role::Client, v);
    c.initial_window = 8_192;
    let mut p = Pair::new(c, cfg(Role::Server, v));
    p.c.auto_release = false;
    let id = p.c.s.open(request(v, "/page.html"), 0, true).unwrap();
    let other = p.c.s.open(request(v, "/other.html"), 0, true).unwrap();
    p.pump();
    let push1 = p.s.s.push(id, push_headers(v, "/a.css"), 2).unwrap();
    let push2 = p.s.s.push(id, push_headers(v, "/b.css"), 2).unwrap();
    let push_other = p.s.s.push(other, push_headers(v, "/c.css"), 2).unwrap();
    for s in [push1, push2, push_other] {
        p.s.s.send_data(s, pattern(50_000, 1), true).unwrap();
    }
    p.s.s.reply(id, response(v), false).unwrap();
    p.s.s.send_data(id, pattern(50_000, 2), true).unwrap();
    p.pump();
    p.c.s.reset(id, RstStatus::CANCEL);
    p.pump();
    let mut server_resets = p.s.resets();
    server_resets.sort_by_key(|r| r.0);
    assert_eq!(
        server_resets,
        [
            (id, RstStatus::CANCEL, true),
            (push1, RstStatus::CANCEL, false),
            (push2, RstStatus::CANCEL, false),
        ]
    );
    for push in [push1, push2] {
        assert!(p.s.sent.contains(&Frame::RstStream {
            stream_id: push,
            status: RstStatus::CANCEL
        }));
        assert!(p.c.resets().contains(&(push, RstStatus::CANCEL, true)));
    }
    assert!(
        p.s.s.has_stream(push_other),
        "other requests keep their pushes"
    );
    assert!(p.s.s.has_stream(other));
}

#[test]
fn refuses_to_push_on_a_finished_request_or_as_a_client() {
    let v = Version::V3;
    let mut p = Pair::of(v);
    let id = p.c.s.open(request(v, "/"), 0, true).unwrap();
    p.pump();
    p.s.s.reply(id, response(v), true).unwrap();
    assert_eq!(
        p.s.s.push(id, push_headers(v, "/x"), 0),
        Err(SendError::BadAssociation(id))
    );
    assert_eq!(
        p.c.s.push(id, push_headers(v, "/x"), 0),
        Err(SendError::WrongRole)
    );
}

// =======================================================================================
// GOAWAY, PING, version detection.

#[test]
fn drains_streams_up_to_last_good_after_goaway() {
    for v in ALL {
        let mut p = Pair::of(v);
        let a = p.c.s.open(request(v, "/a"), 0, true).unwrap();
        let b = p.c.s.open(request(v, "/b"), 0, true).unwrap();
        p.pump();
        // Two more requests cross the server's GOAWAY on the wire.
        let c = p.c.s.open(request(v, "/c"), 0, true).unwrap();
        let d = p.c.s.open(request(v, "/d"), 0, true).unwrap();
        let late = p.c.transmit();
        p.s.s.goaway(GoAwayStatus::OK);
        let goaway = p.s.transmit();
        let now = p.now();
        p.s.receive(&late, now, usize::MAX);
        p.c.receive(&goaway, now, usize::MAX);
        assert_eq!(
            p.s.opened().len(),
            2,
            "{v}: streams after GOAWAY are ignored"
        );
        assert!(p.s.resets().is_empty());
        assert!(p.c.events.contains(&Event::GoAway {
            last_good: b,
            status: GoAwayStatus::OK,
            unprocessed: vec![c, d],
        }));
        assert_eq!(
            p.c.s.open(request(v, "/e"), 0, true),
            Err(SendError::GoingAway)
        );
        assert!(!p.c.s.is_done() && !p.s.s.is_done());
        let mut answered = vec![];
        p.serve_all(&mut answered, 20_000);
        p.pump();
        assert_eq!(answered, [a, b]);
        assert_eq!(p.c.body(a).len(), 20_000);
        assert_eq!(p.c.body(b).len(), 20_000);
        assert!(p.c.s.is_done() && p.s.s.is_done(), "{v}");
        let expected_goaway = Frame::GoAway {
            last_good: b,
            status: GoAwayStatus::OK,
        };
        assert!(p.s.sent.contains(&expected_goaway));
    }
}

#[test]
fn measures_ping_round_trips_on_the_virtual_clock() {
    let mut p = Pair::of(Version::V3_1);
    p.pump();
    let id = p.c.s.ping(p.now());
    assert_eq!(id % 2, 1, "client pings are odd");
    let out = p.c.transmit();
    p.advance(Duration::from_millis(30));
    let now = p.now();
    p.s.receive(&out, now, usize::MAX);
    let echo = p.s.transmit();
    assert_eq!(echo.len(), 12);
    assert_eq!(echo[8..], out[8..], "the id is echoed");
    p.advance(Duration::from_millis(40));
    let now = p.now();
    p.c.receive(&echo, now, usize::MAX);
    assert!(p.c.events.contains(&Event::Pong {
        id,
        rtt: Duration::from_millis(70)
    }));

    let sid = p.s.s.ping(p.now());
    assert_eq!(sid % 2, 0, "server pings are even");
    p.c2s();
    p.s2c();
    p.advance(Duration::from_micros(250));
    p.c2s();
    assert!(p.s.events.contains(&Event::Pong {
        id: sid,
        rtt: Duration::from_micros(250)
    }));
    let id2 = p.c.s.ping(p.now());
    assert_ne!(id2, id, "ping ids are not reused");
}

#[test]
fn answers_ping_ahead_of_queued_data() {
    let v = Version::V3_1;
    let mut p = Pair::of(v);
    let id = p.c.s.open(request(v, "/"), 0, true).unwrap();
    p.pump();
    // Control frames are queued too: the echo overtakes them as well.
    p.s.s.push(id, push_headers(v, "/a.css"), 0).unwrap();
    p.s.s.send_settings(vec![Setting {
        id: SettingId::MAX_CONCURRENT_STREAMS,
        flags: 0,
        value: 10,
    }]);
    p.s.s.reply(id, response(v), false).unwrap();
    p.s.s.send_data(id, pattern(100_000, 0), true).unwrap();
    p.c.s.ping(p.now());
    p.c2s();
    let mark = p.s.sent.len();
    p.s.transmit_one().unwrap();
    assert!(
        matches!(p.s.sent[mark], Frame::Ping { id: 1 }),
        "{:?}",
        p.s.sent[mark]
    );
}

#[test]
fn upgrades_a_plain_spdy3_server_to_31_on_a_session_window_update() {
    let mut c = cfg(Role::Client, Version::V3_1);
    c.session_window = 131_072;
    let mut s = cfg(Role::Server, Version::V3);
    s.auto_spdy31 = true;
    let mut p = Pair::new(c, s);
    p.c.auto_release = false;
    let id = p.c.s.open(request(Version::V3_1, "/"), 0, true).unwrap();
    p.pump();
    assert_eq!(p.s.s.version(), Version::V3_1);
    assert!(p.s.sent.contains(&Frame::WindowUpdate {
        stream_id: StreamId(0),
        delta: (8 << 20) - 65_536
    }));
    p.s.s.reply(id, response(Version::V3), false).unwrap();
    p.s.s.send_data(id, pattern(200_000, 0), true).unwrap();
    p.pump();
    assert_eq!(
        p.c.body(id).len(),
        131_072,
        "the server honours the client's session window"
    );
    assert!(p.c.errors().is_empty());
}

#[test]
fn a_plain_spdy3_server_overruns_a_spdy31_clients_session_window() {
    // Without auto_spdy31 the server ignores stream-0 WINDOW_UPDATEs and the session
    // window; the 3.1 client sees its session window overrun: GOAWAY PROTOCOL_ERROR.
    let mut c = cfg(Role::Client, Version::V3_1);
    c.session_window = 131_072;
    let mut p = Pair::new(c, cfg(Role::Server, Version::V3));
    p.c.auto_release = false;
    let id = p.c.s.open(request(Version::V3_1, "/"), 0, true).unwrap();
    p.pump();
    assert_eq!(p.s.s.version(), Version::V3);
    p.s.s.reply(id, response(Version::V3), false).unwrap();
    p.s.s.send_data(id, pattern(200_000, 0), true).unwrap();
    p.pump();
    assert!(p.c.events.contains(&Event::Error {
        violation: Violation::SessionFlowControl,
        status: GoAwayStatus::PROTOCOL_ERROR
    }));
    assert!(p.c.s.is_done());
}

/// A SPDY/3.1 client that, like Netty, keeps the 64 KiB session window and never sends
/// a session WINDOW_UPDATE before it has received DATA.
fn netty_like_client() -> Config {
    let mut c = cfg(Role::Client, Version::V3_1);
    c.session_window = 65_536;
    c.initial_window = 65_536;
    c
}

fn undecided_server() -> Config {
    let mut s = cfg(Role::Server, Version::V3);
    s.auto_spdy31 = true;
    s
}

#[test]
fn an_undecided_plain_server_grants_session_credit_to_a_31_peer_that_waits_for_it() {
    let mut p = Pair::new(netty_like_client(), undecided_server());
    let id =
        p.c.s
            .open(request(Version::V3_1, "/echo"), 0, false)
            .unwrap();
    p.c.s.send_data(id, pattern(1 << 20, 7), true).unwrap();
    p.pump();
    let got = p.s.body(id);
    assert_eq!(got.len(), 1 << 20, "the upload did not stall at 64 KiB");
    assert_eq!(got, pattern(1 << 20, 7));
    assert!(p.s.sent.iter().any(|f| matches!(
        f,
        Frame::WindowUpdate {
            stream_id: StreamId(0),
            ..
        }
    )));
    assert!(p.c.errors().is_empty() && p.s.errors().is_empty());
}

#[test]
fn an_undecided_plain_server_keeps_a_31_peers_session_window_before_it_hears_from_it() {
    let mut p = Pair::new(netty_like_client(), undecided_server());
    p.c.auto_release = false;
    let id = p.c.s.open(request(Version::V3_1, "/"), 0, true).unwrap();
    p.pump();
    p.s.s.reply(id, response(Version::V3), false).unwrap();
    p.s.s.send_data(id, pattern(1 << 20, 1), true).unwrap();
    p.pump();
    assert_eq!(
        p.c.body(id).len(),
        65_536,
        "stopped at the 3.1 session window"
    );
    assert!(p.c.errors().is_empty(), "{:?}", p.c.errors());
    // The client consumes: its session WINDOW_UPDATE settles the server as 3.1.
    p.c.auto_release = true;
    p.c.s.release(id, 65_536);
    p.pump();
    assert_eq!(p.s.s.version(), Version::V3_1);
    assert_eq!(p.c.body(id), pattern(1 << 20, 1));
    assert!(p.c.errors().is_empty() && p.s.errors().is_empty());
}

#[test]
fn an_undecided_plain_server_settles_as_spdy3_on_stream_credit_alone() {
    // A true SPDY/3 client: 64 KiB stream windows, no session window, never a stream-0
    // WINDOW_UPDATE. The server must not wait for session credit forever.
    let mut c = cfg(Role::Client, Version::V3);
    c.initial_window = 65_536;
    let mut p = Pair::new(c, undecided_server());
    let id = p.c.s.open(request(Version::V3, "/"), 0, true).unwrap();
    p.pump();
    p.s.s.reply(id, response(Version::V3), false).unwrap();
    p.s.s.send_data(id, pattern(300_000, 2), true).unwrap();
    p.pump();
    assert_eq!(p.c.body(id), pattern(300_000, 2));
    assert_eq!(p.s.s.version(), Version::V3);
    assert!(!p.c.sent.iter().any(|f| matches!(
        f,
        Frame::WindowUpdate {
            stream_id: StreamId(0),
            ..
        }
    )));
    assert!(p.c.errors().is_empty() && p.s.errors().is_empty());
}

#[test]
fn an_undecided_plain_server_settles_as_spdy3_when_a_large_window_peer_stalls_it() {
    // node-spdy's SPDY/3 client: 1 MiB stream windows, credit back only after 512 KiB.
    let mut p = Pair::new(cfg(Role::Client, Version::V3), undecided_server());
    let id = p.c.s.open(request(Version::V3, "/"), 0, true).unwrap();
    p.pump();
    p.s.s.reply(id, response(Version::V3), false).unwrap();
    p.s.s.send_data(id, pattern(300_000, 4), true).unwrap();
    p.pump();
    assert_eq!(
        p.c.body(id).len(),
        65_536,
        "the 3.1 session window holds at first"
    );
    assert!(p.s.s.flow_stall_pending());
    p.s.s.flow_stall_expired(); // the IO loop's timer
    p.pump();
    assert_eq!(p.c.body(id), pattern(300_000, 4));
    assert!(!p.s.s.flow_stall_pending());
    assert!(p.c.errors().is_empty() && p.s.errors().is_empty());
}

/// A peer without flow control (moby/spdystream): its DATA ignores our windows.
fn overrun_client(mode: FlowControl) -> (Hostile, u32) {
    let mut c = cfg(Role::Client, Version::V3_1);
    c.initial_window = 65_536;
    c.session_window = 65_536;
    c.flow_control = mode;
    let mut h = Hostile::with(c);
    let id = h.s.open(request(Version::V3_1, "/big"), 0, true).unwrap();
    h.answers();
    h.reply(id.0, false);
    h.data(id.0, 60_000, false);
    h.data(id.0, 60_000, true);
    (h, id.0)
}

#[test]
fn a_strict_end_resets_a_stream_that_overruns_its_window() {
    let (h, _) = overrun_client(FlowControl::Strict);
    assert!(
        h.violation().is_some() || h.events.iter().any(|e| matches!(e, Event::Reset { .. })),
        "an overrun is an error when strict"
    );
}

#[test]
fn a_lenient_end_accepts_overruns_from_a_peer_without_flow_control() {
    let (h, id) = overrun_client(FlowControl::Lenient);
    assert_eq!(h.violation(), None);
    let body: usize = h
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Data { id: i, data, .. } if i.0 == id => Some(data.len()),
            _ => None,
        })
        .sum();
    assert_eq!(body, 120_000);
    assert!(h.s.stats().window_overrun_bytes > 0);
}

#[test]
fn a_lenient_end_is_strict_with_a_peer_that_sent_a_window_update() {
    let mut c = cfg(Role::Client, Version::V3_1);
    c.initial_window = 65_536;
    c.flow_control = FlowControl::Lenient;
    let mut h = Hostile::with(c);
    let id = h.s.open(request(Version::V3_1, "/big"), 0, true).unwrap();
    h.answers();
    h.send(Frame::WindowUpdate {
        stream_id: StreamId(0),
        delta: 1000,
    });
    h.reply(id.0, false);
    h.data(id.0, 60_000, false);
    h.data(id.0, 60_000, true);
    assert!(
        h.events.iter().any(|e| matches!(e, Event::Reset { .. })),
        "a peer that does flow control is held to it: {:?}",
        h.events
    );
}

#[test]
fn a_lenient_end_parked_on_a_peers_windows_goes_on_once_that_peer_overruns_ours() {
    // A port-forward echo: our sending parks at 64 KiB, the peer keeps sending past our
    // window (moby/spdystream); it will never open ours, so the parked stream goes on.
    let mut c = cfg(Role::Client, Version::V3_1);
    c.initial_window = 65_536;
    c.flow_control = FlowControl::Lenient;
    let mut h = Hostile::with(c);
    let id = h.s.open(request(Version::V3_1, "/echo"), 0, false).unwrap();
    h.s.send_data(id, pattern(200_000, 5), true).unwrap();
    h.answers();
    assert_eq!(h.s.stats().data_bytes_sent, 65_536);
    h.reply(id.0, false);
    h.data(id.0, 60_000, false);
    h.data(id.0, 60_000, false);
    h.answers();
    assert_eq!(h.s.stats().data_bytes_sent, 200_000);
}

#[test]
fn a_lenient_end_stops_waiting_for_a_peer_that_never_sends_window_updates() {
    let mut c = cfg(Role::Client, Version::V3_1);
    c.flow_control = FlowControl::Lenient;
    let mut h = Hostile::with(c);
    let id = h.s.open(request(Version::V3_1, "/up"), 0, false).unwrap();
    h.s.send_data(id, pattern(200_000, 3), true).unwrap();
    h.answers();
    assert!(
        h.s.flow_stall_pending(),
        "stalled at 64 KiB, waiting for credit"
    );
    h.s.flow_stall_expired();
    h.answers();
    assert!(!h.s.flow_stall_pending());
    assert_eq!(h.s.stats().data_bytes_sent, 200_000);
    // Strict: stalled, and never told to stop waiting.
    let mut h = Hostile::with(cfg(Role::Client, Version::V3_1));
    let id = h.s.open(request(Version::V3_1, "/up"), 0, false).unwrap();
    h.s.send_data(id, pattern(200_000, 3), true).unwrap();
    h.answers();
    assert!(!h.s.flow_stall_pending());
    assert_eq!(h.s.stats().data_bytes_sent, 65_536);
}

// =======================================================================================
// Hostile peers: every Violation and the exact bytes of the answer.

/// A session under test and a hand-driven peer with its own header compressor (so the
/// zlib context of the hostile frames stays valid) and a decompressor for the answers.
struct Hostile {
    s: Session,
    v: Version,
    comp: HeaderCompressor,
    dec: HeaderDecompressor,
    inbox: BytesMut,
    now: Instant,
    events: Vec<Event>,
}

impl Hostile {
    fn server(v: Version) -> Hostile {
        Hostile::with(cfg(Role::Server, v))
    }

    fn client(v: Version) -> Hostile {
        Hostile::with(cfg(Role::Client, v))
    }

    fn with(cfg: Config) -> Hostile {
        Hostile::with_compression(
            cfg,
            CompressionConfig {
                crime_safe: false,
                ..CompressionConfig::default()
            },
        )
    }

    fn with_compression(cfg: Config, comp: CompressionConfig) -> Hostile {
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

    fn send(&mut self, f: Frame) {
        let mut out = Vec::new();
        f.encode(self.v, &mut self.comp, &mut out);
        self.send_raw(&out);
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        self.inbox.extend_from_slice(bytes);
        self.s.recv(&mut self.inbox, self.now);
        while let Some(e) = self.s.poll_event() {
            self.events.push(e);
        }
    }

    /// A request (client → server) or a plain SYN_STREAM.
    fn syn_stream(&mut self, id: u32, fin: bool) {
        let h = request(self.v, "/");
        self.syn_stream_with(id, 0, fin, false, h);
    }

    fn syn_stream_with(&mut self, id: u32, assoc: u32, fin: bool, uni: bool, headers: Headers) {
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

    fn data(&mut self, id: u32, len: usize, fin: bool) {
        self.send(Frame::Data {
            stream_id: StreamId(id),
            fin,
            data: pattern(len, 0),
        });
    }

    fn reply(&mut self, id: u32, fin: bool) {
        let h = response(self.v);
        self.send(Frame::SynReply {
            stream_id: StreamId(id),
            fin,
            headers: h,
        });
    }

    /// Every frame the session writes now, as hex, one string per frame.
    fn answers(&mut self) -> Vec<String> {
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
    fn opened(&self) -> Vec<u32> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Stream { id, .. } => Some(id.0),
                _ => None,
            })
            .collect()
    }

    fn violation(&self) -> Option<&Violation> {
        self.events.iter().find_map(|e| match e {
            Event::Error { violation, .. } => Some(violation),
            _ => None,
        })
    }
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// RST_STREAM written out by hand: `80 0v 00 03 00 00 00 08 | id | status`.
fn rst(v: Version, id: u32, status: u32) -> String {
    format!("80{:02x}000300000008{id:08x}{status:08x}", v.wire())
}

/// GOAWAY by hand; SPDY/2's has no status field.
fn goaway(v: Version, last_good: u32, status: u32) -> String {
    if v == Version::V2 {
        format!("8002000700000004{last_good:08x}")
    } else {
        format!("8003000700000008{last_good:08x}{status:08x}")
    }
}

const PROTOCOL_ERROR: u32 = 1;
const INVALID_STREAM: u32 = 2;
const REFUSED_STREAM: u32 = 3;
const UNSUPPORTED_VERSION: u32 = 4;
const FLOW_CONTROL_ERROR: u32 = 7;
const STREAM_IN_USE: u32 = 8;
const STREAM_ALREADY_CLOSED: u32 = 9;
const FRAME_TOO_LARGE: u32 = 11;

/// SPDY/2 has RST codes 1-7 only; later ones become PROTOCOL_ERROR.
fn code(v: Version, c: u32) -> u32 {
    if v == Version::V2 && c > 7 {
        PROTOCOL_ERROR
    } else {
        c
    }
}

/// After a session error nothing more is read or answered.
fn assert_dead(h: &mut Hostile) {
    assert!(h.s.is_done());
    h.send(Frame::Ping { id: 2 });
    assert!(h.answers().is_empty(), "a failed session answers nothing");
}

/// After a stream error the session still works: a new request is answered.
fn assert_alive(h: &mut Hostile, next_id: u32) {
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

#[test]
fn rejects_fixed_size_frames_of_the_wrong_length() {
    for (v, wire) in [
        (Version::V3, "80030003 00000007 00000001 000000"),
        (Version::V3, "80030006 00000005 00000001 00"),
        (Version::V3_1, "80030009 00000004 00000001"),
        (Version::V3_1, "80030007 00000004 00000000"),
        (Version::V3, "80030004 0000000c 00000002 00000007 00000001"),
        (Version::V2, "80020007 00000005 00000000 00"),
        (Version::V2, "80020005 00000001 00"),
        (Version::V2, "80020003 00000004 00000001"),
    ] {
        let mut h = Hostile::server(v);
        h.syn_stream(1, false);
        let wire: String = wire.split_whitespace().collect();
        let bytes: Vec<u8> = (0..wire.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&wire[i..i + 2], 16).unwrap())
            .collect();
        h.send_raw(&bytes);
        assert_eq!(h.answers(), [goaway(v, 1, PROTOCOL_ERROR)], "{v} {wire}");
        assert!(matches!(h.violation(), Some(Violation::MalformedFrame(_))));
        assert_dead(&mut h);
    }
}

#[test]
fn rejects_zlib_garbage_with_goaway() {
    for v in ALL {
        let mut h = Hostile::server(v);
        h.syn_stream(1, true);
        // A SYN_STREAM whose header block continues the zlib stream with a deflate block
        // of the reserved type 3 (first byte 0b110): "invalid block type".
        let mut f = vec![
            0x80,
            v.wire() as u8,
            0,
            1,
            0,
            0,
            0,
            20,
            0,
            0,
            0,
            3,
            0,
            0,
            0,
            0,
            0,
            0,
        ];
        f.extend([0x06, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x11, 0x22]);
        h.send_raw(&f);
        assert_eq!(h.answers(), [goaway(v, 1, PROTOCOL_ERROR)], "{v}");
        assert!(matches!(h.violation(), Some(Violation::Compression(_))));
        assert_dead(&mut h);
    }
}

#[test]
fn refuses_a_zlib_bomb_and_keeps_working() {
    for v in ALL {
        for chunk in [usize::MAX, 1, 5] {
            let mut h = Hostile::server(v);
            // 240 KB of headers that deflate to well under a kilobyte.
            let mut bomb = request(v, "/");
            for i in 0..4 {
                bomb.add(&format!("x-bomb-{i}"), vec![b'A'; 60_000]);
            }
            let mut f = Vec::new();
            Frame::SynStream(SynStream {
                stream_id: StreamId(1),
                assoc_id: StreamId(0),
                priority: 0,
                slot: 0,
                fin: true,
                unidirectional: false,
                headers: bomb,
            })
            .encode(v, &mut h.comp, &mut f);
            assert!(f.len() < 2_000, "{}", f.len());
            for c in f.chunks(chunk) {
                h.send_raw(c);
            }
            assert_eq!(h.answers(), [rst(v, 1, code(v, FRAME_TOO_LARGE))], "{v}");
            assert!(h.opened().is_empty());
            assert_alive(&mut h, 3);
        }
    }
}

#[test]
fn refuses_a_header_frame_larger_than_max_control_frame_and_keeps_working() {
    for v in ALL {
        // Stored (level 0) blocks: 70 KB of headers make a 70 KB frame.
        let mut h = Hostile::with_compression(
            cfg(Role::Server, v),
            CompressionConfig {
                level: 0,
                window_bits: 11,
                mem_level: 1,
                crime_safe: false,
            },
        );
        let mut big = request(v, "/");
        big.add("x-big-1", vec![b'a'; 35_000]);
        big.add("x-big-2", vec![b'b'; 35_000]);
        let mut f = Vec::new();
        Frame::SynStream(SynStream {
            stream_id: StreamId(1),
            assoc_id: StreamId(0),
            priority: 0,
            slot: 0,
            fin: true,
            unidirectional: false,
            headers: big,
        })
        .encode(v, &mut h.comp, &mut f);
        assert!(f.len() > 70_000);
        for c in f.chunks(4_000) {
            h.send_raw(c);
        }
        assert_eq!(h.answers(), [rst(v, 1, code(v, FRAME_TOO_LARGE))], "{v}");
        assert_alive(&mut h, 3);
    }
}

#[test]
fn rejects_an_oversized_control_frame_without_header_block_with_goaway() {
    for v in ALL {
        let mut h = Hostile::server(v);
        // SETTINGS claiming 70,000 bytes (more than the 64 KiB max_control_frame).
        let mut f = vec![0x80, v.wire() as u8, 0x00, 0x04, 0x00, 0x01, 0x11, 0x70];
        f.extend(((70_000 - 4) / 8u32).to_be_bytes());
        h.send_raw(&f);
        assert_eq!(h.answers(), [goaway(v, 0, PROTOCOL_ERROR)], "{v}");
        assert_eq!(h.violation(), Some(&Violation::ControlFrameTooLarge(4)));
        assert_dead(&mut h);
    }
}

#[test]
fn skips_unknown_frame_types_even_large_ones() {
    for v in ALL {
        let mut h = Hostile::server(v);
        h.send(Frame::Unknown {
            version: v.wire(),
            frame_type: 0xf000,
            flags: 0,
            payload: Bytes::from_static(&[0, 0, 0, 4, 10, 0, 0, 1]),
        });
        h.send(Frame::Unknown {
            version: v.wire(),
            frame_type: 0x00ff,
            flags: 0xff,
            payload: pattern(100_000, 0),
        });
        if v == Version::V2 {
            h.send(Frame::Noop);
        } else {
            h.send(Frame::Credential {
                slot: 1,
                proof: Bytes::from_static(b"p"),
                certificates: vec![Bytes::from_static(b"c")],
            });
        }
        h.send(Frame::Ping { id: 7 });
        assert_eq!(
            h.answers(),
            [format!("80{:02x}00060000000400000007", v.wire())],
            "{v}: only the PING is answered"
        );
        assert!(h.violation().is_none());
        assert_alive(&mut h, 1);
    }
}

#[test]
fn rejects_bad_stream_ids_with_goaway() {
    for v in ALL {
        // id 0, a server (even) id from a client, an id below the last one.
        for (ids, last) in [(&[0u32][..], 0), (&[2], 0), (&[5, 3], 5)] {
            let mut h = Hostile::server(v);
            for &id in ids {
                h.syn_stream(id, true);
            }
            assert_eq!(
                h.answers(),
                [goaway(v, last, PROTOCOL_ERROR)],
                "{v} {ids:?}"
            );
            assert!(matches!(h.violation(), Some(Violation::BadStreamId(_))));
            assert_dead(&mut h);
        }
        // The id of a stream that has finished is not reusable.
        let mut h = Hostile::server(v);
        h.syn_stream(1, true);
        h.s.reply(StreamId(1), response(v), true).unwrap();
        assert_eq!(h.answers().len(), 1);
        h.syn_stream(1, true);
        assert_eq!(h.answers(), [goaway(v, 1, PROTOCOL_ERROR)], "{v}");
        assert_eq!(h.violation(), Some(&Violation::BadStreamId(StreamId(1))));
        // A client receiving an odd (client-space) push id.
        let mut h = Hostile::client(v);
        h.s.open(request(v, "/"), 0, true).unwrap();
        h.answers();
        h.syn_stream_with(3, 1, false, true, push_headers(v, "/x"));
        assert_eq!(h.answers(), [goaway(v, 0, PROTOCOL_ERROR)], "{v}");
    }
}

#[test]
fn resets_a_duplicate_syn_stream() {
    for v in ALL {
        let mut h = Hostile::server(v);
        h.syn_stream(1, false);
        h.syn_stream(1, false);
        assert_eq!(h.answers(), [rst(v, 1, PROTOCOL_ERROR)], "{v}");
        assert_eq!(h.violation(), None);
        assert!(h.events.contains(&Event::Reset {
            id: StreamId(1),
            status: RstStatus::PROTOCOL_ERROR,
            remote: false
        }));
        assert_alive(&mut h, 3);
    }
}

#[test]
fn rejects_data_on_stream_zero_with_goaway() {
    for v in ALL {
        let mut h = Hostile::server(v);
        h.data(0, 4, false);
        assert_eq!(h.answers(), [goaway(v, 0, PROTOCOL_ERROR)], "{v}");
        assert_eq!(h.violation(), Some(&Violation::DataOnStreamZero));
    }
}

#[test]
fn rejects_data_beyond_the_session_window_with_goaway() {
    let v = Version::V3_1;
    let mut c = cfg(Role::Server, v);
    c.session_window = 65_536;
    let mut h = Hostile::with(c);
    h.syn_stream(1, false);
    h.data(1, 65_536, false);
    assert!(h.answers().is_empty(), "exactly the window is fine");
    h.syn_stream(3, false);
    h.data(3, 1, false);
    assert_eq!(h.answers(), [goaway(v, 3, PROTOCOL_ERROR)]);
    assert_eq!(h.violation(), Some(&Violation::SessionFlowControl));
}

#[test]
fn returns_session_credit_for_data_it_drops() {
    // DATA for a stream we reset is dropped, but it used the peer's session window, so
    // the credit is given back at once (digest §5.2) and the two ends do not drift.
    let v = Version::V3_1;
    let mut c = cfg(Role::Server, v);
    c.session_window = 65_536;
    let mut h = Hostile::with(c);
    h.syn_stream(1, false);
    h.s.reset(StreamId(1), RstStatus::CANCEL);
    assert_eq!(h.answers(), [rst(v, 1, 5)]);
    h.data(1, 40_000, false); // crossed our RST
    assert_eq!(h.answers(), ["80030009000000080000000000009c40"]);
    assert!(h.events.iter().all(|e| !matches!(e, Event::Data { .. })));
    // The credit is real: 65,536 more bytes fit, one more does not.
    h.syn_stream(3, false);
    h.data(3, 65_536, false);
    assert!(h.answers().is_empty());
    h.data(3, 1, false);
    assert_eq!(h.answers(), [goaway(v, 3, PROTOCOL_ERROR)]);
}

#[test]
fn rejects_a_session_window_overflow_with_goaway() {
    let v = Version::V3_1;
    let mut h = Hostile::server(v);
    h.send(Frame::WindowUpdate {
        stream_id: StreamId(0),
        delta: 0x7fff_ffff - 65_536,
    });
    assert!(h.answers().is_empty(), "up to 2^31-1 is fine");
    h.send(Frame::WindowUpdate {
        stream_id: StreamId(0),
        delta: 1,
    });
    assert_eq!(h.answers(), [goaway(v, 0, PROTOCOL_ERROR)]);
    assert_eq!(h.violation(), Some(&Violation::SessionWindowOverflow));
}

#[test]
fn rejects_a_zero_window_delta() {
    for v in [Version::V3, Version::V3_1] {
        let mut h = Hostile::server(v);
        h.syn_stream(1, false);
        h.send(Frame::WindowUpdate {
            stream_id: StreamId(1),
            delta: 0,
        });
        assert_eq!(h.answers(), [rst(v, 1, FLOW_CONTROL_ERROR)], "{v}");
        assert_alive(&mut h, 3);
        h.send(Frame::WindowUpdate {
            stream_id: StreamId(0),
            delta: 0,
        });
        assert_eq!(h.answers(), [goaway(v, 3, PROTOCOL_ERROR)], "{v}");
        assert_eq!(
            h.violation(),
            Some(&Violation::ZeroWindowDelta(StreamId(0)))
        );
    }
}

#[test]
fn rejects_a_stream_window_overflow() {
    for v in [Version::V3, Version::V3_1] {
        let mut h = Hostile::server(v);
        h.syn_stream(1, false);
        h.send(Frame::WindowUpdate {
            stream_id: StreamId(1),
            delta: 0x7fff_ffff - 65_536,
        });
        assert!(h.answers().is_empty());
        h.send(Frame::WindowUpdate {
            stream_id: StreamId(1),
            delta: 1,
        });
        assert_eq!(h.answers(), [rst(v, 1, FLOW_CONTROL_ERROR)], "{v}");
        // The same overflow reached through SETTINGS_INITIAL_WINDOW_SIZE.
        h.syn_stream(3, false);
        h.send(Frame::WindowUpdate {
            stream_id: StreamId(3),
            delta: 0x7fff_ffff - 65_536,
        });
        h.send(Frame::Settings {
            clear: false,
            entries: vec![Setting {
                id: SettingId::INITIAL_WINDOW_SIZE,
                flags: 0,
                value: 65_537,
            }],
        });
        assert_eq!(h.answers(), [rst(v, 3, FLOW_CONTROL_ERROR)], "{v}");
    }
}

#[test]
fn rejects_data_beyond_the_stream_window() {
    for v in [Version::V3, Version::V3_1] {
        let mut c = cfg(Role::Server, v);
        c.initial_window = 4_096;
        let mut h = Hostile::with(c);
        h.syn_stream(1, false);
        h.data(1, 4_096, false);
        assert!(h.answers().is_empty());
        h.data(1, 1, false);
        assert_eq!(h.answers(), [rst(v, 1, FLOW_CONTROL_ERROR)], "{v}");
        assert!(h.events.contains(&Event::Reset {
            id: StreamId(1),
            status: RstStatus::FLOW_CONTROL_ERROR,
            remote: false
        }));
        assert_alive(&mut h, 3);
    }
}

#[test]
fn rejects_data_after_fin() {
    for v in ALL {
        let mut h = Hostile::server(v);
        h.syn_stream(1, true);
        h.data(1, 10, false);
        assert_eq!(
            h.answers(),
            [rst(v, 1, code(v, STREAM_ALREADY_CLOSED))],
            "{v}"
        );
        assert_alive(&mut h, 3);
    }
}

#[test]
fn rejects_headers_after_fin() {
    for v in ALL {
        let mut h = Hostile::server(v);
        h.syn_stream(1, false);
        h.data(1, 10, true);
        h.send(Frame::Headers {
            stream_id: StreamId(1),
            fin: false,
            headers: Headers::from_pairs([("x-late", "1")]),
        });
        assert_eq!(
            h.answers(),
            [rst(v, 1, code(v, STREAM_ALREADY_CLOSED))],
            "{v}"
        );
    }
}

#[test]
fn rejects_data_on_a_stream_never_opened() {
    for v in ALL {
        let mut h = Hostile::server(v);
        h.data(9, 10, false);
        assert_eq!(h.answers(), [rst(v, 9, INVALID_STREAM)], "{v}");
        // DATA for a stream that existed and was reset is dropped without an answer.
        h.syn_stream(11, false);
        h.s.reset(StreamId(11), RstStatus::CANCEL);
        assert_eq!(h.answers(), [rst(v, 11, 5)]);
        h.data(11, 10, true);
        assert!(h.answers().is_empty(), "no RST storms");
    }
}

#[test]
fn rejects_compressed_data() {
    for v in ALL {
        let mut h = Hostile::server(v);
        h.syn_stream(1, false);
        h.send_raw(&[0, 0, 0, 1, 0x02, 0, 0, 3, 1, 2, 3]);
        assert_eq!(h.answers(), [rst(v, 1, PROTOCOL_ERROR)], "{v}");
        assert_eq!(
            h.events.last(),
            Some(&Event::Reset {
                id: StreamId(1),
                status: RstStatus::PROTOCOL_ERROR,
                remote: false
            })
        );
        assert_alive(&mut h, 3);
    }
}

#[test]
fn resets_an_invalid_header_block_and_stays_in_sync() {
    for v in ALL {
        let mut h = Hostile::server(v);
        let mut bad = request(v, "/");
        bad.add("x-ctl", b"a\x01b"); // a control character in a value
        h.syn_stream_with(1, 0, true, false, bad);
        assert_eq!(h.answers(), [rst(v, 1, PROTOCOL_ERROR)], "{v}");
        let mut bad = request(v, "/");
        bad.add("x-nul", b"\0edge");
        h.syn_stream_with(3, 0, true, false, bad);
        assert_eq!(h.answers(), [rst(v, 3, PROTOCOL_ERROR)], "{v}");
        assert_eq!(h.violation(), None);
        assert_alive(&mut h, 5);
    }
}

#[test]
fn answers_a_syn_stream_of_another_version_with_unsupported_version() {
    let mut h = Hostile::server(Version::V3);
    let mut c2 = HeaderCompressor::new(Version::V2, CompressionConfig::default());
    let mut f = Vec::new();
    Frame::SynStream(SynStream {
        stream_id: StreamId(1),
        assoc_id: StreamId(0),
        priority: 0,
        slot: 0,
        fin: true,
        unidirectional: false,
        headers: request(Version::V2, "/"),
    })
    .encode(Version::V2, &mut c2, &mut f);
    h.send_raw(&f);
    assert_eq!(h.answers(), [rst(Version::V3, 1, UNSUPPORTED_VERSION)]);
    // Other frames of another version are ignored.
    h.send_raw(&[0x80, 0x02, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1]);
    assert!(h.answers().is_empty());
    assert_alive(&mut h, 3);
}

#[test]
fn resets_a_push_like_syn_stream_from_a_client() {
    for v in ALL {
        let mut h = Hostile::server(v);
        h.syn_stream(1, false);
        h.syn_stream_with(3, 1, false, false, request(v, "/"));
        assert_eq!(h.answers(), [rst(v, 3, PROTOCOL_ERROR)], "{v}: assoc set");
        h.syn_stream_with(5, 0, false, true, request(v, "/"));
        assert_eq!(
            h.answers(),
            [rst(v, 5, PROTOCOL_ERROR)],
            "{v}: unidirectional"
        );
        assert_eq!(h.opened(), [1]);
        assert_alive(&mut h, 7);
    }
}

/// A client with stream 1 open, talking to a hand-driven server.
fn client_with_request(v: Version) -> Hostile {
    let mut h = Hostile::client(v);
    h.s.open(request(v, "/"), 0, false).unwrap();
    let a = h.answers();
    assert_eq!(a.len(), 1, "the SYN_STREAM");
    h
}

#[test]
fn handles_a_push_without_associated_stream_per_version() {
    for v in ALL {
        let mut h = client_with_request(v);
        h.syn_stream_with(2, 0, false, true, push_headers(v, "/x"));
        // SPDY/3: session error; SPDY/2: RST INVALID_STREAM (digest §3.3). The push id was
        // read (ids must increase) before it was judged, hence last-good 2.
        let want = if v == Version::V2 {
            rst(v, 2, INVALID_STREAM)
        } else {
            goaway(v, 2, PROTOCOL_ERROR)
        };
        assert_eq!(h.answers(), [want], "{v}");
    }
}

#[test]
fn resets_a_push_for_a_stream_that_is_not_open() {
    for v in ALL {
        let mut h = client_with_request(v);
        h.syn_stream_with(2, 7, false, true, push_headers(v, "/x"));
        assert_eq!(h.answers(), [rst(v, 2, INVALID_STREAM)], "{v}");
        // Nor after the associated stream's FIN.
        h.reply(1, true);
        h.syn_stream_with(4, 1, false, true, push_headers(v, "/y"));
        assert_eq!(h.answers(), [rst(v, 4, INVALID_STREAM)], "{v}");
    }
}

#[test]
fn resets_a_push_without_a_url() {
    for v in ALL {
        let mut h = client_with_request(v);
        let no_url = http::response_headers(v, 200, &Headers::new());
        h.syn_stream_with(2, 1, false, true, no_url);
        assert_eq!(h.answers(), [rst(v, 2, PROTOCOL_ERROR)], "{v}");
    }
}

#[test]
fn accepts_a_push_without_the_unidirectional_flag() {
    // node-spdy pushes without FLAG_UNIDIRECTIONAL (digest §10.2 #5).
    for v in ALL {
        let mut h = client_with_request(v);
        h.syn_stream_with(2, 1, false, false, push_headers(v, "/x"));
        assert!(h.answers().is_empty(), "{v}");
        assert_eq!(h.opened(), [2]);
    }
}

#[test]
fn refuses_pushes_beyond_the_clients_stream_limit_or_when_disabled() {
    for v in ALL {
        let mut c = cfg(Role::Client, v);
        c.max_concurrent_streams = 1;
        let mut h = Hostile::with(c);
        h.s.open(request(v, "/"), 0, false).unwrap();
        h.answers();
        h.syn_stream_with(2, 1, false, true, push_headers(v, "/a"));
        h.syn_stream_with(4, 1, false, true, push_headers(v, "/b"));
        assert_eq!(h.answers(), [rst(v, 4, REFUSED_STREAM)], "{v}");
        assert_eq!(h.opened(), [2]);

        let mut c = cfg(Role::Client, v);
        c.accept_push = false;
        let mut h = Hostile::with(c);
        h.s.open(request(v, "/"), 0, false).unwrap();
        h.answers();
        h.syn_stream_with(2, 1, false, true, push_headers(v, "/a"));
        assert_eq!(h.answers(), [rst(v, 2, REFUSED_STREAM)], "{v}");
        assert!(h.opened().is_empty());
    }
}

#[test]
fn resets_a_duplicate_syn_reply() {
    for v in ALL {
        let mut h = client_with_request(v);
        h.reply(1, false);
        assert!(h.answers().is_empty());
        h.reply(1, false);
        assert_eq!(h.answers(), [rst(v, 1, code(v, STREAM_IN_USE))], "{v}");
        assert_eq!(
            h.events.last(),
            Some(&Event::Reset {
                id: StreamId(1),
                status: RstStatus(code(v, STREAM_IN_USE)),
                remote: false
            })
        );
    }
}

#[test]
fn resets_a_syn_reply_for_an_unknown_stream() {
    for v in ALL {
        let mut h = client_with_request(v);
        h.reply(5, false);
        assert_eq!(h.answers(), [rst(v, 5, INVALID_STREAM)], "{v}");
    }
}

#[test]
fn resets_a_syn_reply_on_a_stream_the_peer_opened() {
    for v in ALL {
        // A client "replying" to a server's push, and to a stream it opened itself.
        let mut h = client_with_request(v);
        h.syn_stream_with(2, 1, false, true, push_headers(v, "/x"));
        h.reply(2, false);
        assert_eq!(h.answers(), [rst(v, 2, PROTOCOL_ERROR)], "{v}");
        let mut h = Hostile::server(v);
        h.syn_stream(1, false);
        h.reply(1, false);
        assert_eq!(h.answers(), [rst(v, 1, PROTOCOL_ERROR)], "{v}");
    }
}

#[test]
fn resets_data_before_syn_reply() {
    for v in ALL {
        let mut h = client_with_request(v);
        h.data(1, 5, false);
        assert_eq!(h.answers(), [rst(v, 1, PROTOCOL_ERROR)], "{v}");
    }
}

#[test]
fn never_answers_rst_stream_with_rst_stream() {
    for v in ALL {
        let mut h = Hostile::server(v);
        h.send(Frame::RstStream {
            stream_id: StreamId(1),
            status: RstStatus::CANCEL,
        });
        h.syn_stream(3, false);
        h.send(Frame::RstStream {
            stream_id: StreamId(3),
            status: RstStatus::CANCEL,
        });
        h.send(Frame::RstStream {
            stream_id: StreamId(3),
            status: RstStatus::CANCEL,
        });
        assert!(h.answers().is_empty(), "{v}");
        assert_eq!(
            h.events.last(),
            Some(&Event::Reset {
                id: StreamId(3),
                status: RstStatus::CANCEL,
                remote: true
            })
        );
    }
}

#[test]
fn ignores_pings_that_claim_to_be_ours_and_echoes_the_peers() {
    let v = Version::V3;
    let mut h = client_with_request(v);
    h.send(Frame::Ping { id: 1 }); // odd: a client id we never sent
    assert!(h.answers().is_empty());
    assert!(!h.events.iter().any(|e| matches!(e, Event::Pong { .. })));
    h.send(Frame::Ping { id: 2 });
    assert_eq!(h.answers(), ["800300060000000400000002"]);
}

#[test]
fn ignores_new_streams_after_sending_goaway() {
    for v in ALL {
        let mut h = Hostile::server(v);
        h.syn_stream(1, false);
        h.s.goaway(GoAwayStatus::OK);
        assert_eq!(h.answers(), [goaway(v, 1, 0)], "{v}");
        h.syn_stream(3, false);
        assert!(h.answers().is_empty());
        assert_eq!(h.opened(), [1]);
        // The stream before last-good still completes.
        h.data(1, 5, true);
        h.s.reply(StreamId(1), response(v), true).unwrap();
        assert_eq!(h.answers().len(), 1);
        assert!(h.s.is_done());
    }
}

#[test]
fn enforces_a_stream_limit_announced_later() {
    let v = Version::V3_1;
    let mut h = Hostile::server(v);
    h.s.send_settings(vec![Setting {
        id: SettingId::MAX_CONCURRENT_STREAMS,
        flags: 0,
        value: 1,
    }]);
    assert_eq!(h.answers(), ["800300040000000c000000010000000400000001"]);
    h.syn_stream(1, false);
    h.syn_stream(3, false);
    assert_eq!(h.answers(), [rst(v, 3, REFUSED_STREAM)]);
}

/// The mapping table of `session/error.rs`, checked variant by variant. The `match` has
/// no wildcard: a new Violation does not compile until it is listed here (and tested
/// above through a real session).
#[test]
fn maps_every_violation_to_the_digests_answer() {
    use spdy::session::Action;
    let id = StreamId(5);
    let all = [
        Violation::MalformedFrame("x".into()),
        Violation::Compression("x".into()),
        Violation::ControlFrameTooLarge(4),
        Violation::BadStreamId(id),
        Violation::DuplicateStream(id),
        Violation::DataOnStreamZero,
        Violation::SessionFlowControl,
        Violation::SessionWindowOverflow,
        Violation::ZeroWindowDelta(id),
        Violation::ZeroWindowDelta(StreamId(0)),
        Violation::PushWithoutAssociation(id),
        Violation::TooManyStreams(id),
        Violation::InvalidHeaders(id),
        Violation::HeadersTooLarge(id),
        Violation::DuplicateReply(id),
        Violation::ReplyUnknownStream(id),
        Violation::ReplyOnPeerStream(id),
        Violation::DataBeforeReply(id),
        Violation::AfterFin(id),
        Violation::UnknownStream(id),
        Violation::StreamFlowControl(id),
        Violation::StreamWindowOverflow(id),
        Violation::PushFromClient(id),
        Violation::PushInvalidAssociation(id),
        Violation::PushMissingUrl(id),
        Violation::PushRefused(id),
        Violation::UnsupportedVersion(id),
        Violation::CompressedData(id),
    ];
    for v in ALL {
        for violation in &all {
            let goaway = Action::GoAway(GoAwayStatus::PROTOCOL_ERROR);
            let r = |c: u32| Action::Reset(id, RstStatus(code(v, c)));
            let want = match violation {
                Violation::MalformedFrame(_)
                | Violation::Compression(_)
                | Violation::ControlFrameTooLarge(_)
                | Violation::BadStreamId(_)
                | Violation::DataOnStreamZero
                | Violation::SessionFlowControl
                | Violation::SessionWindowOverflow => goaway,
                Violation::ZeroWindowDelta(s) if s.0 == 0 => goaway,
                Violation::ZeroWindowDelta(_) => r(FLOW_CONTROL_ERROR),
                Violation::PushWithoutAssociation(_) if v == Version::V2 => r(INVALID_STREAM),
                Violation::PushWithoutAssociation(_) => goaway,
                Violation::TooManyStreams(_) | Violation::PushRefused(_) => r(REFUSED_STREAM),
                Violation::DuplicateStream(_)
                | Violation::InvalidHeaders(_)
                | Violation::ReplyOnPeerStream(_)
                | Violation::DataBeforeReply(_)
                | Violation::PushFromClient(_)
                | Violation::PushMissingUrl(_)
                | Violation::CompressedData(_) => r(PROTOCOL_ERROR),
                Violation::HeadersTooLarge(_) => r(FRAME_TOO_LARGE),
                Violation::DuplicateReply(_) => r(STREAM_IN_USE),
                Violation::ReplyUnknownStream(_)
                | Violation::UnknownStream(_)
                | Violation::PushInvalidAssociation(_) => r(INVALID_STREAM),
                Violation::AfterFin(_) => r(STREAM_ALREADY_CLOSED),
                Violation::StreamFlowControl(_) | Violation::StreamWindowOverflow(_) => {
                    r(FLOW_CONTROL_ERROR)
                }
                Violation::UnsupportedVersion(_) => r(UNSUPPORTED_VERSION),
            };
            assert_eq!(violation.action(v), want, "{v} {violation}");
        }
    }
}

#[test]
fn makes_progress_with_a_zero_max_data_frame() {
    // A nonsensical max_data_frame of 0 must not turn into endless empty DATA frames.
    let v = Version::V3_1;
    let mut s = cfg(Role::Server, v);
    s.max_data_frame = 0;
    let mut p = Pair::new(cfg(Role::Client, v), s);
    let id = p.c.s.open(request(v, "/"), 0, true).unwrap();
    p.pump();
    p.s.s.reply(id, response(v), false).unwrap();
    p.s.s.send_data(id, pattern(10, 0), true).unwrap();
    let mut frames = 0;
    while let Some(b) = p.s.transmit_one() {
        frames += 1;
        assert!(
            frames <= 11,
            "poll_transmit keeps writing: {:?}",
            p.s.sent.last()
        );
        let now = p.now();
        p.c.receive(&b, now, usize::MAX);
    }
    assert_eq!(p.c.body(id), pattern(10, 0));
    assert!(p.c.closed(id));
}

#[test]
fn resets_a_stream_whose_headers_frames_add_up_past_the_block_limit() {
    for v in ALL {
        let mut p = Pair::of(v);
        let id = p.c.s.open(request(v, "/"), 0, false).unwrap();
        p.pump();
        // 20 HEADERS of ~4 KB each: every one is small, together they are over 64 KiB.
        let value = "v".repeat(4000);
        for i in 0..20 {
            let h = Headers::from_pairs([(format!("x-h{i}"), value.as_str())]);
            if p.c.s.send_headers(id, h, false).is_err() {
                break; // the server's RST_STREAM arrived
            }
            p.pump();
        }
        let want = if v == Version::V2 {
            RstStatus::PROTOCOL_ERROR
        } else {
            RstStatus::FRAME_TOO_LARGE
        };
        assert!(
            p.s.events.iter().any(|e| matches!(e,
                Event::Reset { id: i, status, remote: false } if *i == id && *status == want)),
            "{v}: {:?}",
            p.s.events
        );
        let delivered =
            p.s.events
                .iter()
                .filter(|e| matches!(e, Event::Headers { .. }))
                .count();
        assert!(
            (14..17).contains(&delivered),
            "{v}: {delivered} HEADERS delivered"
        );
        assert!(
            p.s.errors().is_empty(),
            "{v}: a stream error, not a session one"
        );
    }
}

#[test]
fn small_data_is_copied_out_of_the_read_buffer_and_large_data_is_not() {
    // A small DATA payload held by its reader must not keep the read buffer: the next
    // read reuses it in place instead of allocating another (many small responses).
    // A large one is handed over without a copy, sharing the buffer.
    let v = Version::V3_1;
    let mut h = Hostile::server(v);
    h.syn_stream(1, false);
    h.inbox.reserve(64 * 1024);
    h.data(1, 1000, false);
    assert!(matches!(h.events.last(), Some(Event::Data { data, .. }) if data.len() == 1000));
    assert!(h.inbox.is_empty());
    // More than is free behind the empty view: only the buffer's front can give it.
    let more = h.inbox.capacity() + 1;
    assert!(
        h.inbox.try_reclaim(more),
        "a 1,000-byte DATA payload pins the read buffer"
    );
    h.data(1, 8192, false);
    assert!(matches!(h.events.last(), Some(Event::Data { data, .. }) if data.len() == 8192));
    let more = h.inbox.capacity() + 1;
    assert!(
        !h.inbox.try_reclaim(more),
        "an 8 KiB DATA payload was copied"
    );
}
