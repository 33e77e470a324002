//! Server push: delivery, refusal and cancellation, and the answers to malformed pushes.

mod support;

use bytes::Bytes;
use spdy::codes::RstStatus;
use spdy::frame::{Frame, StreamId};
use spdy::session::{Role, SendError};
use spdy::{http, Headers, Version};
use support::{
    assert_alive, cfg, client_with_request, goaway, pattern, push_headers, request, response, rst,
    Hostile, Pair, ALL, INVALID_STREAM, PROTOCOL_ERROR, REFUSED_STREAM,
};

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
