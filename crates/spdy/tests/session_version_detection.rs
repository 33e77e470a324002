//! SPDY/3 versus 3.1: a plain SPDY/3 server detecting a 3.1 peer by its session window.

mod support;

use spdy::codes::GoAwayStatus;
use spdy::frame::{Frame, StreamId};
use spdy::session::{Config, Event, Role, Violation};
use spdy::Version;
use support::{cfg, pattern, request, response, Pair};

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
