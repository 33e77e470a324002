//! Ordinary operation: requests and responses, chunked delivery, DATA frame sizes, read buffers.

mod support;

use spdy::frame::{Frame, StreamId};
use spdy::session::{Event, Role};
use spdy::{http, Headers, Version};
use support::{cfg, pattern, request, response, Hostile, Pair, ALL};

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
