//! Scheduling: priority order, round robin, PRIORITY frames and concurrent-stream limits.

mod support;

use spdy::codes::{RstStatus, SettingId};
use spdy::frame::{Frame, Setting, StreamId};
use spdy::session::Role;
use spdy::Version;
use support::{cfg, pattern, request, response, rst, Hostile, Pair, ALL, REFUSED_STREAM};

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
