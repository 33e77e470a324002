//! Hostile stream-state violations and the table mapping every Violation to its answer.

mod support;

use spdy::codes::{GoAwayStatus, RstStatus};
use spdy::frame::{Frame, StreamId};
use spdy::session::{Event, Violation};
use spdy::{Headers, Version};
use support::{
    assert_alive, assert_dead, client_with_request, code, goaway, push_headers, request, response,
    rst, Hostile, ALL, FLOW_CONTROL_ERROR, FRAME_TOO_LARGE, INVALID_STREAM, PROTOCOL_ERROR,
    REFUSED_STREAM, STREAM_ALREADY_CLOSED, STREAM_IN_USE, UNSUPPORTED_VERSION,
};

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

/// The mapping table of `session/error.rs`, checked variant by variant. The `match` has
/// no wildcard: a new Violation does not compile until it is listed here (and tested
/// through a real session in the `session_*` test files).
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
