//! Flow control: stream and SPDY/3.1 session windows, lenient peers, window violations.

mod support;

use spdy::codes::{RstStatus, SettingId};
use spdy::frame::{Frame, Setting, StreamId};
use spdy::session::{Event, FlowControl, Role, Violation};
use spdy::Version;
use support::{
    assert_alive, cfg, goaway, pattern, request, response, rst, Hostile, Pair, FLOW_CONTROL_ERROR,
    PROTOCOL_ERROR,
};

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
