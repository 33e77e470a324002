//! The sans-IO server against protocol violations (RFC 9113 §3.4, §5, §6, §8.3) and
//! abuse bounds, driven by a client scripted with h2wire's own encoders.

mod server_common;

use h2wire::frame::*;
use h2wire::server::{Config, Event, ServerConnection};
use h2wire::ErrorCode;
use server_common::*;

#[test]
fn preface_and_settings_split_at_every_byte() {
    let mut server = ServerConnection::new(Config::default());
    let mut input = PREFACE.to_vec();
    input.extend(settings(&[(SettingId::MAX_FRAME_SIZE, 20_000)]));
    input.extend(Client::new().headers(1, &get("/"), true));
    for b in &input {
        server.recv(std::slice::from_ref(b));
    }
    let frames = Client::new().read(&mut server);
    let Frame::Settings(ours) = &frames[0] else {
        panic!("{frames:?}")
    };
    let ours: Vec<_> = ours.iter().map(|s| (s.id, s.value)).collect();
    assert!(ours.contains(&(SettingId::MAX_CONCURRENT_STREAMS, 100)));
    assert!(ours.contains(&(SettingId::INITIAL_WINDOW_SIZE, 1 << 20)));
    assert!(
        matches!(&frames[1], Frame::WindowUpdate(w) if w.stream_id.is_zero() && w.increment == (8 << 20) - 65_535)
    );
    assert!(matches!(&frames[2], Frame::Settings(s) if s.ack));
    let ev = events(&mut server);
    let Event::Request {
        stream,
        head,
        end_stream,
    } = &ev[0]
    else {
        panic!("{ev:?}")
    };
    assert_eq!((*stream, *end_stream), (StreamId(1), true));
    assert_eq!(head.method(), b"GET");
    assert_eq!(head.scheme(), Some(&b"https"[..]));
    assert_eq!(head.authority(), Some(&b"example.com"[..]));
    assert_eq!(head.path(), Some(&b"/"[..]));
}

#[test]
fn bad_preface_is_a_protocol_error() {
    let mut server = ServerConnection::new(Config::default());
    server.recv(b"PRI * HTTP/2.0\r\n\r\nXX");
    expect_conn_error(&mut server, &mut Client::new(), ErrorCode::PROTOCOL_ERROR);
    server.recv(b"more bytes are ignored");
    assert!(server.poll_event().is_none());
}

#[test]
fn first_frame_must_be_settings() {
    let mut server = ServerConnection::new(Config::default());
    server.recv(PREFACE);
    let mut ping = Vec::new();
    Ping {
        ack: false,
        payload: [1; 8],
    }
    .encode(&mut ping);
    server.recv(&ping);
    expect_conn_error(&mut server, &mut Client::new(), ErrorCode::PROTOCOL_ERROR);
}

#[test]
fn ping_is_acknowledged_with_its_payload() {
    let (mut server, mut c) = open(Config::default(), &[]);
    let mut ping = Vec::new();
    Ping {
        ack: false,
        payload: *b"12345678",
    }
    .encode(&mut ping);
    server.recv(&ping);
    let frames = c.read(&mut server);
    assert_eq!(
        frames,
        vec![Frame::Ping(Ping {
            ack: true,
            payload: *b"12345678"
        })]
    );
}

#[test]
fn invalid_requests_are_reset_with_protocol_error() {
    let base = get("/");
    let mut cases: Vec<Vec<(&str, String)>> = Vec::new();
    cases.push(base[1..].to_vec()); // no :method
    cases.push(base[..3].to_vec()); // no :path
    let mut v = base.clone();
    v.push((":path", "/again".into()));
    cases.push(v); // duplicate pseudo
    let mut v = base.clone();
    v.insert(2, ("accept", "*/*".into()));
    cases.push(v); // pseudo after regular
    let mut v = base.clone();
    v.push(("Accept", "*/*".into()));
    cases.push(v); // uppercase
    let mut v = base.clone();
    v.push(("connection", "keep-alive".into()));
    cases.push(v);
    let mut v = base.clone();
    v.push(("te", "gzip".into()));
    cases.push(v);
    let mut v = base.clone();
    v.push((":status", "200".into()));
    cases.push(v); // response pseudo-header
    let mut v = base.clone();
    v[3].1 = String::new();
    cases.push(v); // empty :path
    let mut v = base.clone();
    v.push(("x", " padded".into()));
    cases.push(v); // leading whitespace in a value
    let mut v = base.clone();
    v.push(("content-length", "12a".into()));
    cases.push(v);
    let connect = vec![
        (":method", "CONNECT".into()),
        (":authority", "example.com:443".into()),
        (":path", "/".into()),
    ];
    cases.push(connect);
    let (mut server, mut c) = open(Config::default(), &[]);
    for (i, case) in cases.iter().enumerate() {
        let id = 2 * i as u32 + 1;
        server.recv(&c.headers(id, case, true));
        let frames = c.read(&mut server);
        assert_eq!(
            rst(&frames, id),
            Some(ErrorCode::PROTOCOL_ERROR),
            "case {i}: {case:?}"
        );
        assert!(events(&mut server).is_empty(), "case {i}");
    }
    // Valid ones pass: te: trailers, and CONNECT with only :method and :authority.
    let mut v = base.clone();
    v.push(("te", "trailers".into()));
    server.recv(&c.headers(101, &v, true));
    let connect = vec![
        (":method", "CONNECT".into()),
        (":authority", "example.com:443".into()),
    ];
    server.recv(&c.headers(103, &connect, false));
    let ev = events(&mut server);
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert!(ev.iter().all(|e| matches!(e, Event::Request { .. })));
}

#[test]
fn stream_ids_must_increase_and_idle_streams_get_no_frames() {
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&c.headers(5, &get("/"), true));
    server.recv(&c.headers(3, &get("/"), true));
    expect_conn_error(&mut server, &mut c, ErrorCode::PROTOCOL_ERROR);

    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&data(1, b"x", false));
    expect_conn_error(&mut server, &mut c, ErrorCode::PROTOCOL_ERROR);

    let (mut server, mut c) = open(Config::default(), &[]);
    let mut w = Vec::new();
    WindowUpdate {
        stream_id: StreamId(9),
        increment: 1,
    }
    .encode(&mut w);
    server.recv(&w);
    expect_conn_error(&mut server, &mut c, ErrorCode::PROTOCOL_ERROR);

    let (mut server, mut c) = open(Config::default(), &[]);
    let mut r = Vec::new();
    RstStream {
        stream_id: StreamId(1),
        code: ErrorCode::CANCEL,
    }
    .encode(&mut r);
    server.recv(&r);
    expect_conn_error(&mut server, &mut c, ErrorCode::PROTOCOL_ERROR);

    // A client may not send HEADERS on an even id, nor PUSH_PROMISE.
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&c.headers(2, &get("/"), true));
    expect_conn_error(&mut server, &mut c, ErrorCode::PROTOCOL_ERROR);
}

#[test]
fn data_on_half_closed_and_closed_streams() {
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&c.headers(1, &get("/"), true));
    events(&mut server);
    // Half-closed (remote): stream error STREAM_CLOSED.
    server.recv(&data(1, b"late", false));
    let frames = c.read(&mut server);
    assert_eq!(rst(&frames, 1), Some(ErrorCode::STREAM_CLOSED));
    assert!(matches!(
        &events(&mut server)[..],
        [Event::Reset {
            code: ErrorCode::STREAM_CLOSED,
            remote: false,
            ..
        }]
    ));
    // A stream we reset: frames in flight are ignored.
    server.recv(&data(1, b"late", false));
    assert!(c.read(&mut server).is_empty());

    // Closed after both ends finished: connection error STREAM_CLOSED.
    server.recv(&c.headers(3, &get("/"), true));
    events(&mut server);
    server
        .send_response(StreamId(3), 204, &[] as &[(&str, &str)], true)
        .unwrap();
    c.read(&mut server);
    server.recv(&data(3, b"late", false));
    expect_conn_error(&mut server, &mut c, ErrorCode::STREAM_CLOSED);
}

#[test]
fn window_update_overflow() {
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&c.headers(1, &get("/"), true));
    events(&mut server);
    let mut w = Vec::new();
    WindowUpdate {
        stream_id: StreamId(1),
        increment: 0x7fff_ffff,
    }
    .encode(&mut w);
    server.recv(&w);
    assert_eq!(
        rst(&c.read(&mut server), 1),
        Some(ErrorCode::FLOW_CONTROL_ERROR)
    );
    let mut w = Vec::new();
    WindowUpdate {
        stream_id: StreamId(0),
        increment: 0x7fff_ffff,
    }
    .encode(&mut w);
    server.recv(&w);
    expect_conn_error(&mut server, &mut c, ErrorCode::FLOW_CONTROL_ERROR);
}

#[test]
fn receive_flow_control_violations() {
    let cfg = Config {
        initial_window_size: 100,
        ..Config::default()
    };
    let (mut server, mut c) = open(cfg, &[]);
    let post = post("/");
    server.recv(&c.headers(1, &post, false));
    server.recv(&data(1, &[0; 100], false));
    assert!(c.read(&mut server).is_empty());
    server.recv(&data(1, &[0; 1], false));
    assert_eq!(
        rst(&c.read(&mut server), 1),
        Some(ErrorCode::FLOW_CONTROL_ERROR)
    );

    let cfg = Config {
        connection_window_size: 65_535,
        ..Config::default()
    };
    let (mut server, mut c) = open(cfg, &[]);
    server.recv(&c.headers(1, &post, false));
    for _ in 0..4 {
        server.recv(&data(1, &[0; 16_383], false));
    }
    server.recv(&data(1, &[0; 3], false));
    assert!(goaway_code(&c.read(&mut server)).is_none());
    server.recv(&data(1, &[0; 1], false));
    expect_conn_error(&mut server, &mut c, ErrorCode::FLOW_CONTROL_ERROR);
}

#[test]
fn streams_past_the_limit_are_refused_and_hpack_stays_in_step() {
    let cfg = Config {
        max_concurrent_streams: 2,
        ..Config::default()
    };
    let (mut server, mut c) = open(cfg, &[]);
    let mut h = get("/");
    h.push(("x-custom", "indexed-value".into()));
    server.recv(&c.headers(1, &h, true));
    server.recv(&c.headers(3, &h, true));
    server.recv(&c.headers(5, &h, true));
    assert_eq!(
        rst(&c.read(&mut server), 5),
        Some(ErrorCode::REFUSED_STREAM)
    );
    assert_eq!(events(&mut server).len(), 2);
    server
        .send_response(StreamId(1), 200, &[] as &[(&str, &str)], true)
        .unwrap();
    // Stream 7 uses the dynamic table entries stream 5's block added.
    server.recv(&c.headers(7, &h, true));
    let ev = events(&mut server);
    let [Event::Request { stream, head, .. }] = &ev[..] else {
        panic!("{ev:?}")
    };
    assert_eq!(stream.0, 7);
    assert_eq!(head.fields().get(b"x-custom"), Some(&b"indexed-value"[..]));
}

#[test]
fn header_list_over_the_limit_gets_431() {
    let cfg = Config {
        max_header_list_size: 1000,
        ..Config::default()
    };
    let (mut server, mut c) = open(cfg, &[]);
    let mut h = get("/");
    h.push(("x-big", "v".repeat(2000)));
    server.recv(&c.headers(1, &h, true));
    server.recv(&c.headers(3, &h, false));
    let frames = c.read(&mut server);
    let statuses: Vec<_> = frames
        .iter()
        .filter_map(|f| match f {
            Frame::Headers(h) => Some((h.stream_id.0, h.end_stream, c.fields(&h.fragment))),
            _ => None,
        })
        .collect();
    assert_eq!(statuses.len(), 2);
    for (_, end, fields) in &statuses {
        assert!(*end);
        assert_eq!(fields[0], (":status".into(), "431".into()));
    }
    assert_eq!(rst(&frames, 1), None);
    assert_eq!(rst(&frames, 3), Some(ErrorCode::NO_ERROR));
    assert!(events(&mut server).is_empty());
    // The connection goes on.
    server.recv(&c.headers(5, &get("/"), true));
    assert!(matches!(&events(&mut server)[..], [Event::Request { .. }]));
}

#[test]
fn rapid_reset_is_answered_with_enhance_your_calm() {
    let cfg = Config {
        max_pending_resets: 10,
        ..Config::default()
    };
    let (mut server, mut c) = open(cfg, &[]);
    for i in 0..11u32 {
        let id = 2 * i + 1;
        server.recv(&c.headers(id, &get("/"), true));
        let mut r = Vec::new();
        RstStream {
            stream_id: StreamId(id),
            code: ErrorCode::CANCEL,
        }
        .encode(&mut r);
        server.recv(&r);
        if i < 10 {
            assert!(goaway_code(&c.read(&mut server)).is_none());
        }
    }
    let frames = c.read(&mut server);
    assert_eq!(goaway_code(&frames), Some(ErrorCode::ENHANCE_YOUR_CALM));
}

#[test]
fn finished_responses_pay_back_resets() {
    let cfg = Config {
        max_pending_resets: 2,
        ..Config::default()
    };
    let (mut server, mut c) = open(cfg, &[]);
    for i in 0..20u32 {
        let id = 4 * i + 1;
        server.recv(&c.headers(id, &get("/"), true));
        server
            .send_response(StreamId(id), 200, &[] as &[(&str, &str)], true)
            .unwrap();
        server.recv(&c.headers(id + 2, &get("/"), true));
        let mut r = Vec::new();
        RstStream {
            stream_id: StreamId(id + 2),
            code: ErrorCode::CANCEL,
        }
        .encode(&mut r);
        server.recv(&r);
    }
    assert!(goaway_code(&c.read(&mut server)).is_none());
}

#[test]
fn continuation_frames_join_and_a_flood_is_stopped() {
    let (mut server, mut c) = open(Config::default(), &[]);
    let mut block = Vec::new();
    c.enc
        .encode(get("/").iter().map(|(n, v)| (*n, v.as_str())), &mut block);
    // A block split over HEADERS + 2 CONTINUATION frames.
    let mut wire = Vec::new();
    encode_header_block(StreamId(1), &block, true, None, 16, &mut wire);
    server.recv(&wire);
    assert!(matches!(&events(&mut server)[..], [Event::Request { .. }]));

    // Endless empty CONTINUATION frames.
    let mut wire = Vec::new();
    let mut block = Vec::new();
    c.enc
        .encode(get("/").iter().map(|(n, v)| (*n, v.as_str())), &mut block);
    h2wire::frame::Headers {
        stream_id: StreamId(3),
        end_stream: true,
        end_headers: false,
        priority: None,
        fragment: &block[..],
        pad_len: None,
    }
    .encode(&mut wire);
    for _ in 0..100 {
        Continuation {
            stream_id: StreamId(3),
            end_headers: false,
            fragment: &b""[..],
        }
        .encode(&mut wire);
    }
    server.recv(&wire);
    expect_conn_error(&mut server, &mut c, ErrorCode::ENHANCE_YOUR_CALM);
}

#[test]
fn hpack_errors_are_compression_errors() {
    let (mut server, mut c) = open(Config::default(), &[]);
    let mut wire = Vec::new();
    // Indexed field 0 is invalid (RFC 7541 §6.1).
    encode_header_block(StreamId(1), &[0x80], true, None, 16_384, &mut wire);
    server.recv(&wire);
    expect_conn_error(&mut server, &mut c, ErrorCode::COMPRESSION_ERROR);
}

#[test]
fn a_ping_flood_that_is_never_read_ends_the_connection() {
    let (mut server, mut c) = open(Config::default(), &[]);
    assert!(!server.settings_acknowledged());
    server.recv(&[0, 0, 0, 4, 1, 0, 0, 0, 0]); // SETTINGS ACK
    assert!(server.settings_acknowledged());
    let mut ping = Vec::new();
    Ping {
        ack: false,
        payload: [0; 8],
    }
    .encode(&mut ping);
    let flood = ping.repeat(1000);
    for _ in 0..100 {
        server.recv(&flood);
    }
    let frames = c.read(&mut server);
    assert_eq!(goaway_code(&frames), Some(ErrorCode::ENHANCE_YOUR_CALM));
}

#[test]
fn request_body_and_content_length() {
    let (mut server, mut c) = open(Config::default(), &[]);
    let mut post = post("/up");
    post.push(("content-length", "5".into()));
    server.recv(&c.headers(1, &post, false));
    server.recv(&data(1, b"hel", false));
    server.recv(&data(1, b"lo", true));
    let ev = events(&mut server);
    assert!(
        matches!(&ev[0], Event::Request { head, end_stream: false, .. } if head.content_length() == Some(5))
    );
    assert!(matches!(&ev[1], Event::Data { data, end_stream: false, .. } if &data[..] == b"hel"));
    assert!(matches!(&ev[2], Event::Data { data, end_stream: true, .. } if &data[..] == b"lo"));
    // Shorter than announced.
    server.recv(&c.headers(3, &post, false));
    server.recv(&data(3, b"hel", true));
    // Longer than announced.
    server.recv(&c.headers(5, &post, false));
    server.recv(&data(5, b"hello!", false));
    // END_STREAM on the head with a non-zero content-length.
    server.recv(&c.headers(7, &post, true));
    let frames = c.read(&mut server);
    for id in [3, 5, 7] {
        assert_eq!(rst(&frames, id), Some(ErrorCode::PROTOCOL_ERROR), "{id}");
    }
    let ev = events(&mut server);
    assert!(ev.iter().any(|e| matches!(e, Event::Reset { stream, code: ErrorCode::PROTOCOL_ERROR, remote: false } if stream.0 == 3)));
    assert!(!ev
        .iter()
        .any(|e| matches!(e, Event::Request { stream, .. } if stream.0 == 7)));
}

#[test]
fn request_trailers() {
    let (mut server, mut c) = open(Config::default(), &[]);
    let mut post = post("/");
    post.push(("content-length", "2".into()));
    server.recv(&c.headers(1, &post, false));
    server.recv(&data(1, b"ok", false));
    server.recv(&c.headers(1, &[("grpc-status", "0".into())], true));
    let ev = events(&mut server);
    let Some(Event::Trailers { stream, fields }) = ev.last() else {
        panic!("{ev:?}")
    };
    assert_eq!(stream.0, 1);
    assert_eq!(fields.get(b"grpc-status"), Some(&b"0"[..]));
    // Trailers without END_STREAM, and trailers with a pseudo-header field.
    server.recv(&c.headers(3, &post, false));
    server.recv(&data(3, b"ok", false));
    server.recv(&c.headers(3, &[("x", "1".into())], false));
    server.recv(&c.headers(5, &post, false));
    server.recv(&data(5, b"ok", false));
    server.recv(&c.headers(5, &[(":path", "/".into())], true));
    let frames = c.read(&mut server);
    assert_eq!(rst(&frames, 3), Some(ErrorCode::PROTOCOL_ERROR));
    assert_eq!(rst(&frames, 5), Some(ErrorCode::PROTOCOL_ERROR));
    // Trailers on a half-closed (remote) stream.
    server.recv(&c.headers(7, &get("/"), true));
    server.recv(&c.headers(7, &[("x", "1".into())], true));
    assert_eq!(rst(&c.read(&mut server), 7), Some(ErrorCode::STREAM_CLOSED));
}

/// A PRIORITY_UPDATE frame (type 0x10) on `stream` with `payload`.
fn priority_update(stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    FrameHeader {
        length: payload.len() as u32,
        kind: FrameType(0x10),
        flags: 0,
        stream_id: StreamId(stream),
    }
    .encode(&mut out);
    out.extend_from_slice(payload);
    out
}

#[test]
fn malformed_priority_updates() {
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&priority_update(1, b"\0\0\0\x01u=1"));
    expect_conn_error(&mut server, &mut c, ErrorCode::PROTOCOL_ERROR);
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&priority_update(0, b"\0\0"));
    expect_conn_error(&mut server, &mut c, ErrorCode::FRAME_SIZE_ERROR);
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&priority_update(0, b"\0\0\0\0u=1"));
    expect_conn_error(&mut server, &mut c, ErrorCode::PROTOCOL_ERROR);
    // An invalid field value is ignored; other unknown frame types too.
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&priority_update(0, b"\0\0\0\x01u=9"));
    let mut unknown = priority_update(0, b"whatever");
    unknown[3] = 0xfa;
    server.recv(&unknown);
    assert!(c.read(&mut server).is_empty());
    assert!(events(&mut server).is_empty());
}

#[test]
fn push_promise_from_a_client_is_a_protocol_error() {
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&c.headers(1, &get("/"), true));
    let mut wire = Vec::new();
    PushPromise {
        stream_id: StreamId(1),
        promised_id: StreamId(2),
        end_headers: true,
        fragment: &[0x82][..],
        pad_len: None,
    }
    .encode(&mut wire);
    server.recv(&wire);
    expect_conn_error(&mut server, &mut c, ErrorCode::PROTOCOL_ERROR);
}

#[test]
fn frames_on_a_reserved_pushed_stream() {
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&c.headers(1, &get("/"), true));
    events(&mut server);
    let fields = [(":method", "GET"), (":path", "/p")];
    let pushed = server.push(StreamId(1), &fields).unwrap();
    c.read(&mut server);
    // WINDOW_UPDATE and PRIORITY are fine while reserved (local)...
    let mut w = Vec::new();
    WindowUpdate {
        stream_id: pushed,
        increment: 10,
    }
    .encode(&mut w);
    server.recv(&w);
    assert!(c.read(&mut server).is_empty());
    // ...HEADERS is not.
    server.recv(&c.headers(2, &get("/"), true));
    expect_conn_error(&mut server, &mut c, ErrorCode::PROTOCOL_ERROR);
    // Once answered, the pushed stream is half-closed (remote): DATA is a stream error.
    let (mut server, mut c) = open(Config::default(), &[]);
    server.recv(&c.headers(1, &get("/"), true));
    let pushed = server.push(StreamId(1), &fields).unwrap();
    server
        .send_response(pushed, 200, &[] as &[(&str, &str)], false)
        .unwrap();
    c.read(&mut server);
    server.recv(&data(2, b"x", false));
    assert_eq!(rst(&c.read(&mut server), 2), Some(ErrorCode::STREAM_CLOSED));
}
