//! Hostile frames: malformed or oversized frames, zlib errors, bad header blocks, unknown types.

mod support;

use bytes::Bytes;
use spdy::codes::RstStatus;
use spdy::compress::{CompressionConfig, HeaderCompressor};
use spdy::frame::{Frame, StreamId, SynStream};
use spdy::session::{Event, Role, Violation};
use spdy::{Headers, Version};
use support::{
    assert_alive, assert_dead, cfg, code, goaway, pattern, request, rst, Hostile, Pair, ALL,
    FRAME_TOO_LARGE, PROTOCOL_ERROR, UNSUPPORTED_VERSION,
};

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
                fixed_codes: false,
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
