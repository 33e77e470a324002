//! The sans-IO server's normal operation: requests and responses, flow control,
//! urgency scheduling, push and shutdown, driven by a client scripted with h2wire's
//! own encoders.

mod server_common;

use bytes::Bytes;
use h2wire::frame::*;
use h2wire::server::{CommandError, Config, Event};
use h2wire::ErrorCode;
use server_common::*;

#[test]
fn get_with_a_response_body() {
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&c.headers(1, &get("/a"), true));
    assert!(matches!(&events(&mut server)[0], Event::Request { stream, .. } if stream.0 == 1));
    server
        .send_response(StreamId(1), 200, &[("content-type", "text/plain")], false)
        .unwrap();
    server
        .send_data(StreamId(1), Bytes::from_static(b"hello"), true)
        .unwrap();
    let frames = c.read(&mut server);
    let Frame::Headers(h) = &frames[0] else {
        panic!()
    };
    assert!(h.end_headers && !h.end_stream);
    let fields = c.fields(&h.fragment);
    assert_eq!(fields[0], (":status".into(), "200".into()));
    assert_eq!(fields[1], ("content-type".into(), "text/plain".into()));
    assert!(matches!(&frames[1], Frame::Data(d) if d.end_stream && &d.data[..] == b"hello"));
    assert_eq!(server.open_streams(), 0);
    assert_eq!(
        server.send_data(StreamId(1), Bytes::new(), true),
        Err(CommandError::StreamNotOpen(StreamId(1)))
    );
}

#[test]
fn settings_initial_window_changes_adjust_send_windows() {
    let (mut server, mut c) = open(Config::default(), &[(SettingId::INITIAL_WINDOW_SIZE, 10)]);
    server.recv(&c.headers(1, &get("/"), true));
    events(&mut server);
    server
        .send_response(StreamId(1), 200, &[] as &[(&str, &str)], false)
        .unwrap();
    server
        .send_data(StreamId(1), Bytes::from(vec![7u8; 100]), true)
        .unwrap();
    let sent = |frames: &[Frame<Bytes>]| -> usize {
        frames
            .iter()
            .map(|f| match f {
                Frame::Data(d) => d.data.len(),
                _ => 0,
            })
            .sum()
    };
    assert_eq!(sent(&c.read(&mut server)), 10);
    // 10 → 50: the stream may send 40 more (§6.9.2).
    server.recv(&settings(&[(SettingId::INITIAL_WINDOW_SIZE, 50)]));
    let frames = c.read(&mut server);
    assert!(matches!(&frames[0], Frame::Settings(s) if s.ack));
    assert_eq!(sent(&frames), 40);
    // 50 → 0: the window goes to -50, nothing more goes.
    server.recv(&settings(&[(SettingId::INITIAL_WINDOW_SIZE, 0)]));
    assert_eq!(sent(&c.read(&mut server)), 0);
    let mut w = Vec::new();
    WindowUpdate {
        stream_id: StreamId(1),
        increment: 60,
    }
    .encode(&mut w);
    server.recv(&w);
    // Window was 50 - 50 (sent) - 50 (settings change) = -50; +60 leaves 10.
    assert_eq!(sent(&c.read(&mut server)), 10);
    // Raising the initial window so that a stream window passes 2^31-1.
    let mut w = Vec::new();
    WindowUpdate {
        stream_id: StreamId(1),
        increment: 0x7fff_0000,
    }
    .encode(&mut w);
    server.recv(&w);
    server.recv(&settings(&[(SettingId::INITIAL_WINDOW_SIZE, 0x10_0000)]));
    expect_conn_error(&mut server, &mut c, ErrorCode::FLOW_CONTROL_ERROR);
}

#[test]
fn released_capacity_is_announced_at_half_a_window() {
    let cfg = Config {
        initial_window_size: 1000,
        connection_window_size: 4000,
        ..Config::default()
    };
    let (mut server, mut c) = open(cfg, &[]);
    let post = post("/");
    server.recv(&c.headers(1, &post, false));
    server.recv(&data(1, &[0; 1000], false));
    server.release_capacity(StreamId(1), 499);
    assert!(c.read(&mut server).is_empty());
    server.release_capacity(StreamId(1), 1);
    assert_eq!(
        c.read(&mut server),
        vec![Frame::WindowUpdate(WindowUpdate {
            stream_id: StreamId(1),
            increment: 500
        })]
    );
    server.release_capacity(StreamId(1), 500);
    server.recv(&data(1, &[0; 1000], false));
    server.release_capacity(StreamId(1), 1000);
    let frames = c.read(&mut server);
    assert!(frames.contains(&Frame::WindowUpdate(WindowUpdate {
        stream_id: StreamId(0),
        increment: 2000
    })));
    // Padding counts against the windows and is released at once.
    let mut padded = Vec::new();
    Data {
        stream_id: StreamId(1),
        end_stream: false,
        data: &[1u8; 10][..],
        pad_len: Some(200),
    }
    .encode(&mut padded);
    server.recv(&padded);
    let ev = events(&mut server);
    assert!(matches!(ev.last(), Some(Event::Data { data, .. }) if data.len() == 10));
}

#[test]
fn goaway_from_the_client() {
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&c.headers(1, &get("/"), true));
    let mut g = Vec::new();
    h2wire::frame::GoAway {
        last_stream_id: StreamId(0),
        code: ErrorCode::NO_ERROR,
        debug_data: &b"bye"[..],
    }
    .encode(&mut g);
    server.recv(&g);
    let ev = events(&mut server);
    assert!(
        matches!(&ev[1], Event::GoAway { code: ErrorCode::NO_ERROR, debug_data, .. } if &debug_data[..] == b"bye")
    );
    assert!(!server.is_done());
    assert_eq!(
        server.push(StreamId(1), &[(":method", "GET")]),
        Err(CommandError::Closing)
    );
    server
        .send_response(StreamId(1), 200, &[] as &[(&str, &str)], true)
        .unwrap();
    c.read(&mut server);
    assert!(server.is_done());
}

#[test]
fn graceful_shutdown_finishes_streams_in_flight() {
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&c.headers(1, &get("/"), true));
    events(&mut server);
    server.shutdown();
    let frames = c.read(&mut server);
    assert!(
        matches!(&frames[..], [Frame::GoAway(g)] if g.code == ErrorCode::NO_ERROR && g.last_stream_id.0 == 1)
    );
    // A stream opened after the GOAWAY is ignored.
    server.recv(&c.headers(3, &get("/"), true));
    assert!(events(&mut server).is_empty());
    assert!(!server.is_done());
    server
        .send_response(StreamId(1), 200, &[] as &[(&str, &str)], false)
        .unwrap();
    server
        .send_data(StreamId(1), Bytes::from_static(b"bye"), true)
        .unwrap();
    let frames = c.read(&mut server);
    assert_eq!(frames.len(), 2);
    assert!(server.is_done());
}

#[test]
fn large_response_heads_use_continuation() {
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&c.headers(1, &get("/"), true));
    events(&mut server);
    let big = "x".repeat(40_000);
    server
        .send_response(StreamId(1), 200, &[("x-big", big.as_str())], true)
        .unwrap();
    let frames = c.read(&mut server);
    assert!(frames.len() >= 3);
    let mut block = Vec::new();
    for f in &frames {
        match f {
            Frame::Headers(h) => block.extend_from_slice(&h.fragment),
            Frame::Continuation(k) => block.extend_from_slice(&k.fragment),
            _ => panic!(),
        }
    }
    assert_eq!(c.fields(&block)[1].1, big);
    server.recv(&c.headers(3, &get("/"), true));
    for bad in ["Bad", "connection", ":status", ""] {
        assert_eq!(
            server.send_response(StreamId(3), 200, &[(bad, "x")], true),
            Err(CommandError::InvalidField)
        );
    }
    assert_eq!(
        server.send_response(StreamId(3), 101, &[] as &[(&str, &str)], true),
        Err(CommandError::InvalidStatus(101))
    );
}

#[test]
fn data_goes_by_urgency_then_round_robin() {
    let (mut server, mut c) = open(
        Config::default(),
        &[(SettingId::INITIAL_WINDOW_SIZE, 1 << 20)],
    );
    let mut w = Vec::new();
    WindowUpdate {
        stream_id: StreamId(0),
        increment: 1 << 20,
    }
    .encode(&mut w);
    server.recv(&w);
    let with = |u: &str| {
        let mut h = get("/");
        h.push(("priority", format!("u={u}, i")));
        h
    };
    server.recv(&c.headers(1, &with("7"), true));
    server.recv(&c.headers(3, &get("/"), true));
    server.recv(&c.headers(5, &get("/"), true));
    server.recv(&c.headers(7, &with("0"), true));
    events(&mut server);
    assert_eq!(server.urgency(StreamId(1)), Some(7));
    respond_all(&mut server, &[1, 3, 5, 7], 2);
    let order = data_order(&c.read(&mut server));
    assert_eq!(order, vec![7, 7, 3, 5, 3, 5, 1, 1]);
}

#[test]
fn priority_frames_change_urgency() {
    let (mut server, mut c) = open(
        Config::default(),
        &[(SettingId::INITIAL_WINDOW_SIZE, 1 << 20)],
    );
    // PRIORITY_UPDATE for stream 3 before it opens: u=1.
    let mut pu = Vec::new();
    FrameHeader {
        length: 7,
        kind: FrameType(0x10),
        flags: 0,
        stream_id: StreamId(0),
    }
    .encode(&mut pu);
    pu.extend_from_slice(&3u32.to_be_bytes());
    pu.extend_from_slice(b"u=1");
    server.recv(&pu);
    // Stream 1 with HEADERS priority weight 1 → urgency 7.
    let mut block = Vec::new();
    c.enc
        .encode(get("/").iter().map(|(n, v)| (*n, v.as_str())), &mut block);
    let prio = Priority {
        exclusive: false,
        dependency: StreamId(0),
        weight: 0,
    };
    let mut wire = Vec::new();
    encode_header_block(StreamId(1), &block, true, Some(prio), 16_384, &mut wire);
    server.recv(&wire);
    server.recv(&c.headers(3, &get("/"), true));
    events(&mut server);
    assert_eq!(server.urgency(StreamId(1)), Some(7));
    assert_eq!(server.urgency(StreamId(3)), Some(1));
    // A PRIORITY frame with weight 256 makes stream 1 most urgent.
    let mut p = Vec::new();
    PriorityFrame {
        stream_id: StreamId(1),
        priority: Priority {
            weight: 255,
            ..prio
        },
    }
    .encode(&mut p);
    server.recv(&p);
    assert_eq!(
        events(&mut server),
        vec![Event::Priority {
            stream: StreamId(1),
            urgency: 0
        }]
    );
    respond_all(&mut server, &[1, 3], 1);
    assert_eq!(data_order(&c.read(&mut server)), vec![1, 3]);
    assert_eq!(h2wire::server::weight_to_urgency(147), 3);
}

#[test]
fn push_promise_and_pushed_response() {
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&c.headers(1, &get("/"), true));
    events(&mut server);
    let pushed = server
        .push(
            StreamId(1),
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", "example.com"),
                (":path", "/style.css"),
            ],
        )
        .unwrap();
    assert_eq!(pushed, StreamId(2));
    server
        .send_response(StreamId(1), 200, &[] as &[(&str, &str)], true)
        .unwrap();
    server
        .send_response(pushed, 200, &[("content-type", "text/css")], false)
        .unwrap();
    server
        .send_data(pushed, Bytes::from_static(b"body{}"), true)
        .unwrap();
    let frames = c.read(&mut server);
    let Frame::PushPromise(pp) = &frames[0] else {
        panic!("{frames:?}")
    };
    assert_eq!((pp.stream_id.0, pp.promised_id.0), (1, 2));
    assert_eq!(c.fields(&pp.fragment)[3].1, "/style.css");
    assert!(matches!(&frames[1], Frame::Headers(h) if h.stream_id.0 == 1 && h.end_stream));
    assert!(matches!(&frames[2], Frame::Headers(h) if h.stream_id.0 == 2 && !h.end_stream));
    assert!(matches!(&frames[3], Frame::Data(d) if d.stream_id.0 == 2 && d.end_stream));
    assert!(server.open_streams() == 0);

    // A client that disabled push gets none.
    let (mut server, mut c) = open(Config::default(), &[(SettingId::ENABLE_PUSH, 0)]);
    server.recv(&c.headers(1, &get("/"), true));
    assert_eq!(
        server.push(StreamId(1), &[(":method", "GET")]),
        Err(CommandError::PushRefused)
    );
}

#[test]
fn client_reset_drops_queued_data() {
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&c.headers(1, &get("/"), true));
    events(&mut server);
    respond_all(&mut server, &[1], 3);
    let mut r = Vec::new();
    RstStream {
        stream_id: StreamId(1),
        code: ErrorCode::CANCEL,
    }
    .encode(&mut r);
    server.recv(&r);
    assert_eq!(
        events(&mut server),
        vec![Event::Reset {
            stream: StreamId(1),
            code: ErrorCode::CANCEL,
            remote: true
        }]
    );
    let frames = c.read(&mut server);
    assert!(data_order(&frames).is_empty(), "{frames:?}");
    assert_eq!(server.queued_data(StreamId(1)), 0);
}

#[test]
fn informational_response_before_the_final_one() {
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&c.headers(1, &get("/"), true));
    events(&mut server);
    server
        .send_response(
            StreamId(1),
            103,
            &[("link", "</s.css>; rel=preload")],
            false,
        )
        .unwrap();
    assert_eq!(
        server.send_data(StreamId(1), Bytes::new(), true),
        Err(CommandError::NoHead(StreamId(1)))
    );
    server
        .send_response(StreamId(1), 200, &[] as &[(&str, &str)], true)
        .unwrap();
    let frames = c.read(&mut server);
    let statuses: Vec<_> = frames
        .iter()
        .map(|f| match f {
            Frame::Headers(h) => (c.fields(&h.fragment)[0].1.clone(), h.end_stream),
            f => panic!("{f:?}"),
        })
        .collect();
    assert_eq!(statuses, vec![("103".into(), false), ("200".into(), true)]);
    assert_eq!(
        server.send_response(StreamId(3), 100, &[] as &[(&str, &str)], true),
        Err(CommandError::InvalidStatus(100))
    );
}

#[test]
fn releasing_more_than_was_delivered_is_clamped() {
    let cfg = Config {
        initial_window_size: 1000,
        connection_window_size: 2000,
        ..Config::default()
    };
    let (mut server, mut c) = open(cfg, &[]);
    let post = post("/");
    server.recv(&c.headers(1, &post, false));
    server.recv(&data(1, &[0; 600], false));
    server.release_capacity(StreamId(1), 1_000_000);
    let frames = c.read(&mut server);
    assert_eq!(
        frames,
        vec![Frame::WindowUpdate(WindowUpdate {
            stream_id: StreamId(1),
            increment: 600
        })]
    );
    server.release_capacity(StreamId(1), 1_000_000);
    assert!(c.read(&mut server).is_empty());
}

#[test]
fn response_trailers_follow_the_data() {
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&c.headers(1, &get("/"), true));
    server.recv(&c.headers(3, &get("/"), true));
    events(&mut server);
    respond_all(&mut server, &[1], 2);
    server.send_data(StreamId(1), Bytes::new(), false).ok();
    assert_eq!(
        server.send_trailers(StreamId(1), &[("grpc-status", "0")]),
        Err(CommandError::StreamNotOpen(StreamId(1)))
    );
    server
        .send_response(StreamId(3), 200, &[] as &[(&str, &str)], false)
        .unwrap();
    server
        .send_data(StreamId(3), Bytes::from_static(b"abc"), false)
        .unwrap();
    server
        .send_trailers(StreamId(3), &[("grpc-status", "0")])
        .unwrap();
    assert_eq!(
        server.send_data(StreamId(3), Bytes::new(), true),
        Err(CommandError::StreamNotOpen(StreamId(3)))
    );
    let frames = c.read(&mut server);
    let on3: Vec<_> = frames
        .iter()
        .filter(|f| f.stream_id().0 == 3)
        .cloned()
        .collect();
    assert!(matches!(&on3[1], Frame::Data(d) if !d.end_stream && &d.data[..] == b"abc"));
    assert!(matches!(&on3[2], Frame::Headers(t) if t.end_stream));
    // Decode the blocks in wire order to keep the HPACK state in step.
    let mut trailer = None;
    for f in &frames {
        if let Frame::Headers(h) = f {
            let fields = c.fields(&h.fragment);
            if h.stream_id.0 == 3 && h.end_stream {
                trailer = Some(fields);
            }
        }
    }
    assert_eq!(
        trailer.unwrap(),
        vec![("grpc-status".to_string(), "0".to_string())]
    );
    assert_eq!(server.open_streams(), 0);
}

#[test]
fn weights_map_to_urgencies_as_chromium_maps_them_to_spdy_priorities() {
    // QUICHE's spdy_protocol_test.cc expectations for Http2WeightToSpdy3Priority.
    for (w, u) in [
        (256, 0),
        (221, 0),
        (220, 1),
        (184, 1),
        (183, 2),
        (148, 2),
        (147, 3),
        (1, 7),
    ] {
        assert_eq!(h2wire::server::weight_to_urgency(w), u, "weight {w}");
    }
    let p = h2wire::server::parse_priority_field;
    assert_eq!(
        (p(b"u=0"), p(b"i, u=5"), p(b"u=9"), p(b"i")),
        (Some(0), Some(5), None, None)
    );
}

#[test]
fn recv_buf_takes_whole_frames_and_leaves_the_rest_in_the_callers_buffer() {
    let mut server = h2wire::server::ServerConnection::new(Config::default());
    let mut c = Client::new();
    let mut wire = PREFACE.to_vec();
    wire.extend(settings(&[]));
    wire.extend(c.headers(1, &get("/a"), true));
    // All but the request's last byte: the preface and SETTINGS are taken, the
    // unfinished HEADERS stays in the buffer, unread.
    let mut buf = bytes::BytesMut::from(&wire[..wire.len() - 1]);
    server.recv_buf(&mut buf);
    assert!(events(&mut server).is_empty());
    let head_len = wire.len() - PREFACE.len() - settings(&[]).len();
    assert_eq!(
        buf.len(),
        head_len - 1,
        "the partial frame is left where it was"
    );
    buf.extend_from_slice(&wire[wire.len() - 1..]);
    server.recv_buf(&mut buf);
    assert!(buf.is_empty());
    let ev = events(&mut server);
    assert!(
        matches!(&ev[..], [Event::Request { stream, end_stream: true, .. }] if stream.0 == 1),
        "{ev:?}"
    );
}
