//! Frame layouts byte for byte, round trips through every decoding entry point,
//! partial input, and field blocks split over CONTINUATION frames.

use bytes::{Bytes, BytesMut};
use h2wire::frame::{
    encode_header_block, encode_push_promise_block, encode_settings, encode_settings_ack, flags,
    ConnSettings, Continuation, Data, Frame, FrameDecoder, FrameHeader, FrameType, GoAway, Headers,
    Ping, Priority, PriorityFrame, PushPromise, RstStream, Setting, SettingId, Settings, StreamId,
    Unknown, WindowUpdate, DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE, PREFACE,
};
use h2wire::ErrorCode;

fn encoded(frame: &Frame<&[u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    frame.encode(&mut out);
    out
}

/// One of every frame type, with every optional part used somewhere.
fn samples() -> Vec<Frame<&'static [u8]>> {
    let prio = Priority {
        exclusive: true,
        dependency: StreamId(3),
        weight: 200,
    };
    vec![
        Frame::Data(Data {
            stream_id: StreamId(1),
            end_stream: false,
            data: b"hello",
            pad_len: None,
        }),
        Frame::Data(Data {
            stream_id: StreamId(1),
            end_stream: true,
            data: b"",
            pad_len: Some(3),
        }),
        Frame::Headers(Headers {
            stream_id: StreamId(5),
            end_stream: true,
            end_headers: true,
            priority: Some(prio),
            fragment: b"\x82\x86",
            pad_len: Some(2),
        }),
        Frame::Headers(Headers {
            stream_id: StreamId(7),
            end_stream: false,
            end_headers: true,
            priority: None,
            fragment: b"\x82",
            pad_len: None,
        }),
        Frame::Priority(PriorityFrame {
            stream_id: StreamId(9),
            priority: prio,
        }),
        Frame::RstStream(RstStream {
            stream_id: StreamId(9),
            code: ErrorCode(0xdead),
        }),
        Frame::Settings(Settings {
            ack: false,
            params: b"\x00\x04\x00\x01\x00\x00\x00\x99\x00\x00\x00\x07",
        }),
        Frame::Settings(Settings {
            ack: true,
            params: b"",
        }),
        Frame::PushPromise(PushPromise {
            stream_id: StreamId(1),
            promised_id: StreamId(2),
            end_headers: true,
            fragment: b"\x82\x84",
            pad_len: Some(1),
        }),
        Frame::Ping(Ping {
            ack: true,
            payload: *b"12345678",
        }),
        Frame::GoAway(GoAway {
            last_stream_id: StreamId(7),
            code: ErrorCode::ENHANCE_YOUR_CALM,
            debug_data: b"calm",
        }),
        Frame::WindowUpdate(WindowUpdate {
            stream_id: StreamId::ZERO,
            increment: 0x7fff_ffff,
        }),
        Frame::Unknown(Unknown {
            kind: FrameType(0xbb),
            flags: 0xff,
            stream_id: StreamId(4),
            payload: b"ext",
        }),
    ]
}

#[test]
fn preface_is_the_rfc_9113_string() {
    assert_eq!(PREFACE, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    assert_eq!(PREFACE.len(), 24);
}

#[test]
fn layouts_are_byte_exact() {
    let s = samples();
    assert_eq!(encoded(&s[0]), b"\x00\x00\x05\x00\x00\x00\x00\x00\x01hello");
    assert_eq!(
        encoded(&s[1]),
        b"\x00\x00\x04\x00\x09\x00\x00\x00\x01\x03\x00\x00\x00"
    );
    assert_eq!(
        encoded(&s[2]),
        b"\x00\x00\x0a\x01\x2d\x00\x00\x00\x05\x02\x80\x00\x00\x03\xc8\x82\x86\x00\x00"
    );
    assert_eq!(
        encoded(&s[4]),
        b"\x00\x00\x05\x02\x00\x00\x00\x00\x09\x80\x00\x00\x03\xc8"
    );
    assert_eq!(
        encoded(&s[5]),
        b"\x00\x00\x04\x03\x00\x00\x00\x00\x09\x00\x00\xde\xad"
    );
    assert_eq!(encoded(&s[7]), b"\x00\x00\x00\x04\x01\x00\x00\x00\x00");
    assert_eq!(
        encoded(&s[8]),
        b"\x00\x00\x08\x05\x0c\x00\x00\x00\x01\x01\x00\x00\x00\x02\x82\x84\x00"
    );
    assert_eq!(
        encoded(&s[9]),
        b"\x00\x00\x08\x06\x01\x00\x00\x00\x0012345678"
    );
    assert_eq!(
        encoded(&s[10]),
        b"\x00\x00\x0c\x07\x00\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00\x0bcalm"
    );
    assert_eq!(
        encoded(&s[11]),
        b"\x00\x00\x04\x08\x00\x00\x00\x00\x00\x7f\xff\xff\xff"
    );
}

#[test]
fn every_frame_type_round_trips_through_a_slice() {
    for frame in samples() {
        let wire = encoded(&frame);
        let (decoded, used) = FrameDecoder::new().decode(&wire).unwrap().unwrap();
        assert_eq!(used, wire.len());
        assert_eq!(decoded, frame);
    }
}

#[test]
fn every_frame_type_round_trips_through_bytes_without_copying() {
    let mut wire = Vec::new();
    for frame in samples() {
        frame.encode(&mut wire);
    }
    let mut buf = Bytes::from(wire);
    let range = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.len();
    let mut dec = FrameDecoder::new();
    for frame in samples() {
        let got = dec.decode_bytes(&mut buf).unwrap().unwrap();
        if let Frame::Data(d) = &got {
            if !d.data.is_empty() {
                assert!(
                    range.contains(&(d.data.as_ptr() as usize)),
                    "DATA payload was copied"
                );
            }
        }
        assert_eq!(got, frame.map(Bytes::from_static));
    }
    assert!(buf.is_empty());
    assert_eq!(dec.decode_bytes(&mut buf), Ok(None));
}

#[test]
fn decode_bytes_mut_splits_frames_off_a_read_buffer() {
    let mut buf = BytesMut::new();
    for frame in samples() {
        frame.encode(&mut buf);
    }
    buf.extend_from_slice(&[0, 0]); // the start of a next frame
    let mut dec = FrameDecoder::new();
    for frame in samples() {
        assert_eq!(
            dec.decode_bytes_mut(&mut buf).unwrap().unwrap(),
            frame.map(Bytes::from_static)
        );
    }
    assert_eq!(dec.decode_bytes_mut(&mut buf), Ok(None));
    assert_eq!(&buf[..], [0, 0]);
}

#[test]
fn incomplete_frames_need_more_bytes() {
    for frame in samples() {
        let wire = encoded(&frame);
        for cut in 0..wire.len() {
            assert_eq!(
                FrameDecoder::new().decode(&wire[..cut]),
                Ok(None),
                "{frame:?} cut at {cut}"
            );
            let mut bytes = Bytes::copy_from_slice(&wire[..cut]);
            assert_eq!(FrameDecoder::new().decode_bytes(&mut bytes), Ok(None));
            assert_eq!(bytes.len(), cut, "nothing consumed");
        }
    }
}

#[test]
fn frame_of_exactly_the_max_size_is_accepted_and_the_max_can_grow() {
    let payload = vec![7u8; DEFAULT_MAX_FRAME_SIZE as usize];
    let mut wire = Vec::new();
    Data {
        stream_id: StreamId(1),
        end_stream: false,
        data: &payload[..],
        pad_len: None,
    }
    .encode(&mut wire);
    assert!(FrameDecoder::new().decode(&wire).unwrap().is_some());

    let big = vec![7u8; 100_000];
    wire.clear();
    Data {
        stream_id: StreamId(1),
        end_stream: false,
        data: &big[..],
        pad_len: None,
    }
    .encode(&mut wire);
    let mut dec = FrameDecoder::new();
    dec.set_max_frame_size(MAX_MAX_FRAME_SIZE);
    let (frame, _) = dec.decode(&wire).unwrap().unwrap();
    assert!(matches!(frame, Frame::Data(d) if d.data.len() == 100_000));
}

#[test]
fn reserved_bit_and_undefined_flags_are_ignored() {
    // PING with every flag bit set and the stream id's reserved bit set.
    let mut wire = vec![0, 0, 8, 6, 0xff, 0x80, 0, 0, 0];
    wire.extend_from_slice(b"abcdefgh");
    let (frame, _) = FrameDecoder::new().decode(&wire).unwrap().unwrap();
    assert_eq!(
        frame,
        Frame::Ping(Ping {
            ack: true,
            payload: *b"abcdefgh"
        })
    );
    let head = FrameHeader::parse(&wire).unwrap();
    assert_eq!(head.stream_id, StreamId::ZERO);
    assert!(head.has(flags::ACK));
}

#[test]
fn unknown_frame_types_are_handed_over_and_decoding_goes_on() {
    let mut wire = Vec::new();
    Unknown {
        kind: FrameType(0x10),
        flags: 0,
        stream_id: StreamId(0),
        payload: &b"origin"[..],
    }
    .encode(&mut wire);
    Ping {
        ack: false,
        payload: [0; 8],
    }
    .encode(&mut wire);
    let mut dec = FrameDecoder::new();
    let (first, used) = dec.decode(&wire).unwrap().unwrap();
    assert_eq!(first.kind(), FrameType(0x10));
    assert!(matches!(first, Frame::Unknown(_)));
    let (second, _) = dec.decode(&wire[used..]).unwrap().unwrap();
    assert_eq!(second.kind(), FrameType::PING);
}

#[test]
fn data_flow_control_counts_padding() {
    let d = Data {
        stream_id: StreamId(1),
        end_stream: false,
        data: &b"abc"[..],
        pad_len: Some(10),
    };
    assert_eq!(d.flow_controlled_len(), 14);
    let d = Data {
        stream_id: StreamId(1),
        end_stream: false,
        data: &b"abc"[..],
        pad_len: None,
    };
    assert_eq!(d.flow_controlled_len(), 3);
}

#[test]
fn headers_may_depend_on_themselves_at_this_layer() {
    let mut wire = Vec::new();
    Headers {
        stream_id: StreamId(3),
        end_stream: false,
        end_headers: true,
        priority: Some(Priority {
            exclusive: false,
            dependency: StreamId(3),
            weight: 15,
        }),
        fragment: &b"\x82"[..],
        pad_len: None,
    }
    .encode(&mut wire);
    let (frame, _) = FrameDecoder::new().decode(&wire).unwrap().unwrap();
    let Frame::Headers(h) = frame else {
        panic!("{frame:?}")
    };
    assert!(
        h.is_self_dependent(),
        "left to the session, after HPACK decoding"
    );
}

/// Decodes a HEADERS/PUSH_PROMISE + CONTINUATION sequence, checking each frame's size
/// and flags, and returns the joined block.
fn reassemble(wire: &[u8], max: u32) -> (Vec<Frame<&[u8]>>, Vec<u8>) {
    let mut dec = FrameDecoder::new();
    dec.set_max_frame_size(max.max(DEFAULT_MAX_FRAME_SIZE));
    let mut pos = 0;
    let mut frames = Vec::new();
    let mut block = Vec::new();
    while pos < wire.len() {
        let head = FrameHeader::parse(&wire[pos..]).unwrap();
        assert!(head.length <= max);
        let (frame, used) = dec.decode(&wire[pos..]).unwrap().unwrap();
        match &frame {
            Frame::Headers(h) => block.extend_from_slice(h.fragment),
            Frame::PushPromise(p) => block.extend_from_slice(p.fragment),
            Frame::Continuation(c) => block.extend_from_slice(c.fragment),
            other => panic!("unexpected {other:?}"),
        }
        frames.push(frame);
        pos += used;
    }
    assert_eq!(dec.expecting_continuation(), None);
    (frames, block)
}

#[test]
fn large_header_block_is_split_into_continuations_at_the_max_frame_size() {
    let block: Vec<u8> = (0..40_000u32).map(|i| i as u8).collect();
    let prio = Priority {
        exclusive: false,
        dependency: StreamId(1),
        weight: 9,
    };
    let mut wire = Vec::new();
    encode_header_block(
        StreamId(3),
        &block,
        true,
        Some(prio),
        DEFAULT_MAX_FRAME_SIZE,
        &mut wire,
    );
    let (frames, joined) = reassemble(&wire, DEFAULT_MAX_FRAME_SIZE);
    assert_eq!(joined, block);
    assert_eq!(frames.len(), 3);
    let Frame::Headers(h) = &frames[0] else {
        panic!()
    };
    assert!(h.end_stream && !h.end_headers);
    assert_eq!(h.fragment.len(), 16_384 - 5);
    assert_eq!(h.priority, Some(prio));
    assert!(
        matches!(&frames[1], Frame::Continuation(c) if !c.end_headers && c.fragment.len() == 16_384)
    );
    assert!(matches!(&frames[2], Frame::Continuation(c) if c.end_headers));
}

#[test]
fn small_and_empty_header_blocks_take_one_frame() {
    for block in [&b""[..], &b"\x82\x86\x84"[..]] {
        let mut wire = Vec::new();
        encode_header_block(
            StreamId(1),
            block,
            false,
            None,
            DEFAULT_MAX_FRAME_SIZE,
            &mut wire,
        );
        let (frames, joined) = reassemble(&wire, DEFAULT_MAX_FRAME_SIZE);
        assert_eq!(joined, block);
        assert!(matches!(&frames[..], [Frame::Headers(h)] if h.end_headers && !h.end_stream));
    }
}

#[test]
fn block_of_exactly_one_frame_needs_no_continuation() {
    let block = vec![0x82; 16_384];
    let mut wire = Vec::new();
    encode_header_block(
        StreamId(1),
        &block,
        false,
        None,
        DEFAULT_MAX_FRAME_SIZE,
        &mut wire,
    );
    assert_eq!(wire.len(), 9 + 16_384);
}

#[test]
fn push_promise_block_is_split_too() {
    let block = vec![0x84u8; 20_000];
    let mut wire = Vec::new();
    encode_push_promise_block(
        StreamId(1),
        StreamId(2),
        &block,
        DEFAULT_MAX_FRAME_SIZE,
        &mut wire,
    );
    let (frames, joined) = reassemble(&wire, DEFAULT_MAX_FRAME_SIZE);
    assert_eq!(joined, block);
    assert!(
        matches!(&frames[0], Frame::PushPromise(p) if p.promised_id == StreamId(2) && p.fragment.len() == 16_380)
    );
    assert_eq!(frames.len(), 2);
}

#[test]
fn settings_are_encoded_in_order_and_iterated_back() {
    let list = [
        Setting {
            id: SettingId::HEADER_TABLE_SIZE,
            value: 0,
        },
        Setting {
            id: SettingId::ENABLE_PUSH,
            value: 0,
        },
        Setting {
            id: SettingId(0xabcd),
            value: 42,
        },
    ];
    let mut wire = Vec::new();
    encode_settings(&list, &mut wire);
    encode_settings_ack(&mut wire);
    assert_eq!(&wire[..9], [0, 0, 18, 4, 0, 0, 0, 0, 0]);
    let mut dec = FrameDecoder::new();
    let (frame, used) = dec.decode(&wire).unwrap().unwrap();
    let Frame::Settings(s) = frame else { panic!() };
    assert_eq!(s.iter().collect::<Vec<_>>(), list);
    let (ack, _) = dec.decode(&wire[used..]).unwrap().unwrap();
    assert_eq!(
        ack,
        Frame::Settings(Settings {
            ack: true,
            params: &b""[..]
        })
    );

    let mut conn = ConnSettings::default();
    for setting in s.iter() {
        conn.apply(setting).unwrap();
    }
    assert_eq!(conn.header_table_size, 0);
    assert!(!conn.enable_push);
    assert_eq!(conn.changes(), list[..2]);
}

#[test]
fn continuation_frames_encode_and_decode_inside_a_block() {
    let mut wire = Vec::new();
    Headers {
        stream_id: StreamId(1),
        end_stream: false,
        end_headers: false,
        priority: None,
        fragment: &b"\x82"[..],
        pad_len: None,
    }
    .encode(&mut wire);
    Continuation {
        stream_id: StreamId(1),
        end_headers: true,
        fragment: &b"\x84"[..],
    }
    .encode(&mut wire);
    assert_eq!(&wire[10..], b"\x00\x00\x01\x09\x04\x00\x00\x00\x01\x84");
    let (_, joined) = reassemble(&wire, DEFAULT_MAX_FRAME_SIZE);
    assert_eq!(joined, b"\x82\x84");
}
