//! GOAWAY draining and PING: round trips on the virtual clock, echo order and ping ids.

mod support;

use spdy::codes::{GoAwayStatus, SettingId};
use spdy::frame::{Frame, Setting, StreamId};
use spdy::session::{Event, SendError};
use spdy::Version;
use std::time::Duration;
use support::{
    client_with_request, goaway, pattern, push_headers, request, response, Hostile, Pair, ALL,
};

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
