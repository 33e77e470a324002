//! Byte vectors and round trips for every frame of SPDY/2, SPDY/3 and SPDY/3.1.
//!
//! Vectors marked "digest §10.1" are Chromium's 2012 `spdy_framer_test.cc` vectors as
//! listed in the wire digest; vectors marked "node-spdy" were captured from a real
//! node-spdy 4.0.2 / spdy-transport 3.0.0 client and server with
//! `tests/capture/node_capture.js` (see that file for the exact command).

use bytes::Bytes;
use spdy::codes::{frame_type, GoAwayStatus, RstStatus, SettingId};
use spdy::compress::{CompressionConfig, HeaderCompressor, HeaderDecompressor};
use spdy::frame::{Frame, FrameError, FrameHeader, Setting, StreamId, SynStream, HEADER_LEN};
use spdy::headers::Headers;
use spdy::Version;

const ALL: [Version; 3] = [Version::V2, Version::V3, Version::V3_1];

/// Chromium's 2012 compressor settings, without the CRIME-safe split.
fn chromium() -> CompressionConfig {
    CompressionConfig {
        level: 9,
        window_bits: 11,
        mem_level: 1,
        crime_safe: false,
        fixed_codes: false,
    }
}

/// spdy-transport's compressor: level 0 (stored), windowBits 11.
fn node() -> CompressionConfig {
    CompressionConfig {
        level: 0,
        window_bits: 11,
        mem_level: 8,
        crime_safe: false,
        fixed_codes: false,
    }
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    assert!(s.len() & 1 == 0, "odd hex string");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Encodes one frame as the first frame of a fresh compression context.
fn encode_fresh(v: Version, cfg: CompressionConfig, f: &Frame) -> Vec<u8> {
    let mut c = HeaderCompressor::new(v, cfg);
    let mut out = Vec::new();
    f.encode(v, &mut c, &mut out);
    out
}

/// Decodes exactly one frame with a fresh decompression context; the input must be
/// consumed entirely.
fn decode_one(v: Version, bytes: &[u8]) -> Result<Frame, FrameError> {
    let mut d = HeaderDecompressor::new(v, 1 << 16);
    let mut buf = Bytes::copy_from_slice(bytes);
    let f = Frame::decode(v, &mut buf, &mut d)?.expect("a complete frame");
    assert!(buf.is_empty(), "{} bytes left over", buf.len());
    Ok(f)
}

fn bar_foo() -> Headers {
    Headers::from_pairs([("bar", "foo"), ("foo", "bar")])
}

/// One frame of every type the version defines, with non-default field values.
fn every_frame(v: Version) -> Vec<Frame> {
    let v2 = v == Version::V2;
    let mut frames = vec![
        Frame::Data {
            stream_id: StreamId(1),
            fin: false,
            data: Bytes::from_static(b"hello"),
        },
        Frame::Data {
            stream_id: StreamId(0x7fff_fffe),
            fin: true,
            data: Bytes::new(),
        },
        Frame::SynStream(SynStream {
            stream_id: StreamId(3),
            assoc_id: StreamId(0),
            priority: 2,
            slot: 0,
            fin: true,
            unidirectional: false,
            headers: Headers::from_pairs([(":method", "GET"), (":path", "/a?b=c")]),
        }),
        Frame::SynStream(SynStream {
            stream_id: StreamId(2),
            assoc_id: StreamId(3),
            priority: v.lowest_priority(),
            slot: if v2 { 0 } else { 5 },
            fin: false,
            unidirectional: true,
            headers: Headers::from_pairs([("url", "http://h/x.css"), ("multi", "a\0b")]),
        }),
        Frame::SynReply {
            stream_id: StreamId(3),
            fin: false,
            headers: Headers::from_pairs([(":status", "200 OK"), (":version", "HTTP/1.1")]),
        },
        Frame::SynReply {
            stream_id: StreamId(5),
            fin: true,
            headers: Headers::new(),
        },
        Frame::RstStream {
            stream_id: StreamId(3),
            status: RstStatus::CANCEL,
        },
        Frame::RstStream {
            stream_id: StreamId(7),
            status: RstStatus(0x1234), // unknown codes survive
        },
        Frame::Settings {
            clear: true,
            entries: vec![
                Setting {
                    id: SettingId::MAX_CONCURRENT_STREAMS,
                    flags: 0x01,
                    value: 100,
                },
                Setting {
                    id: SettingId::INITIAL_WINDOW_SIZE,
                    flags: 0x02,
                    value: 0x7fff_ffff,
                },
                Setting {
                    id: SettingId(0x00ab_cdef),
                    flags: 0,
                    value: 0xffff_ffff,
                },
            ],
        },
        Frame::Settings {
            clear: false,
            entries: vec![],
        },
        Frame::Ping { id: 0xdead_beef },
        Frame::GoAway {
            last_good: StreamId(41),
            // SPDY/2 GOAWAY has no status: it always decodes as OK.
            status: if v2 {
                GoAwayStatus::OK
            } else {
                GoAwayStatus::INTERNAL_ERROR
            },
        },
        Frame::Headers {
            stream_id: StreamId(3),
            fin: true,
            headers: Headers::from_pairs([("grpc-status", "0"), ("x-trailer", "")]),
        },
        Frame::Unknown {
            version: v.wire(),
            frame_type: 0xf000, // node-spdy's private X_FORWARDED_FOR
            flags: 0x7,
            payload: Bytes::from_static(b"\x00\x00\x00\x04\x0a\x00\x00\x01"),
        },
    ];
    frames.push(Frame::Priority {
        stream_id: StreamId(5),
        priority: v.lowest_priority(),
    });
    if v2 {
        frames.push(Frame::Noop);
    } else {
        frames.push(Frame::WindowUpdate {
            stream_id: StreamId(3),
            delta: 0x7fff_ffff,
        });
        frames.push(Frame::WindowUpdate {
            stream_id: StreamId(if v == Version::V3_1 { 0 } else { 1 }),
            delta: 1,
        });
        frames.push(Frame::Credential {
            slot: 1,
            proof: Bytes::from_static(b"proof"),
            certificates: vec![Bytes::from_static(b"leaf-der"), Bytes::new()],
        });
    }
    frames
}

#[test]
fn round_trips_every_frame_in_every_version_through_one_context() {
    for v in ALL {
        let frames = every_frame(v);
        // All frames through one compressor and one decompressor, as on a session.
        let mut c = HeaderCompressor::new(v, CompressionConfig::default());
        let mut wire = Vec::new();
        for f in &frames {
            f.encode(v, &mut c, &mut wire);
        }
        let mut d = HeaderDecompressor::new(v, 1 << 16);
        let mut buf = Bytes::from(wire);
        let mut decoded = Vec::new();
        while let Some(f) = Frame::decode(v, &mut buf, &mut d).unwrap() {
            decoded.push(f);
        }
        assert!(buf.is_empty(), "{v}: bytes left over");
        assert_eq!(decoded, frames, "{v}");
    }
}

#[test]
fn reencodes_every_frame_to_identical_bytes() {
    for v in ALL {
        for f in every_frame(v) {
            for cfg in [chromium(), node(), CompressionConfig::default()] {
                let once = encode_fresh(v, cfg, &f);
                let back = decode_one(v, &once).unwrap();
                assert_eq!(back, f, "{v}");
                assert_eq!(encode_fresh(v, cfg, &back), once, "{v} {f:?}");
            }
        }
    }
}

#[test]
fn waits_for_a_complete_frame() {
    for v in ALL {
        for f in every_frame(v) {
            let bytes = encode_fresh(v, chromium(), &f);
            for cut in 0..bytes.len() {
                let mut d = HeaderDecompressor::new(v, 1 << 16);
                let mut buf = Bytes::copy_from_slice(&bytes[..cut]);
                assert_eq!(
                    Frame::decode(v, &mut buf, &mut d),
                    Ok(None),
                    "{v} cut {cut}"
                );
                assert_eq!(buf.len(), cut, "a partial frame is not consumed");
            }
        }
    }
}

#[test]
fn encodes_the_wire_version_and_header_of_every_control_frame() {
    for v in ALL {
        for f in every_frame(v) {
            let bytes = encode_fresh(v, chromium(), &f);
            let hdr = FrameHeader::parse(bytes[..HEADER_LEN].try_into().unwrap());
            assert_eq!(hdr.len(), bytes.len() - HEADER_LEN, "{v} {f:?}");
            match (&f, hdr) {
                (Frame::Data { stream_id, .. }, FrameHeader::Data { stream_id: s, .. }) => {
                    assert_eq!(*stream_id, s)
                }
                (Frame::Data { .. }, h) => panic!("DATA encoded as {h:?}"),
                (_, FrameHeader::Control { version, .. }) => assert_eq!(version, v.wire()),
                (_, h) => panic!("control frame encoded as {h:?}"),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Digest §10.1: Chromium's byte vectors.

/// Uncompressed SYN_STREAM, SPDY/3, sid = assoc = 0x7fffffff, pri 1, FIN,
/// headers {bar: foo, foo: ""}.
#[test]
fn decodes_chromium_uncompressed_syn_stream_v3() {
    let wire = hex(
        "80 03 00 01  01 00 00 27  7f ff ff ff  7f ff ff ff  20 00 00 00  00 02 00 00
         00 03 62 61  72 00 00 00  03 66 6f 6f  00 00 00 03  66 6f 6f 00  00 00 00",
    );
    check_uncompressed_syn_stream(Version::V3, &wire, 0x20);
}

/// The SPDY/2 form of the same frame: 16-bit lengths, priority 1 is `0x40`.
#[test]
fn decodes_chromium_uncompressed_syn_stream_v2() {
    let wire = hex(
        "80 02 00 01  01 00 00 1d  7f ff ff ff  7f ff ff ff  40 00 00 02  00 03 62 61
         72 00 03 66  6f 6f 00 03  66 6f 6f 00  00",
    );
    check_uncompressed_syn_stream(Version::V2, &wire, 0x40);
}

fn check_uncompressed_syn_stream(v: Version, wire: &[u8], pri_byte: u8) {
    let want = Headers::from_pairs([("bar", "foo"), ("foo", "")]);
    // Frame::encode always compresses, so the name/value block is checked on its own.
    let hdr = FrameHeader::parse(wire[..8].try_into().unwrap());
    assert_eq!(
        hdr,
        FrameHeader::Control {
            version: v.wire(),
            frame_type: frame_type::SYN_STREAM,
            flags: 0x01,
            len: wire.len() - 8
        }
    );
    let nv = &wire[18..];
    assert_eq!(Headers::decode(v, nv).unwrap(), want);
    let mut ours = Vec::new();
    want.encode(v, &mut ours);
    assert_eq!(to_hex(&ours), to_hex(nv));
    // The fixed part (ids, priority, slot) is what Frame::encode writes.
    let f = Frame::SynStream(SynStream {
        stream_id: StreamId::MAX,
        assoc_id: StreamId::MAX,
        priority: 1,
        slot: 0,
        fin: true,
        unidirectional: false,
        headers: want.clone(),
    });
    let enc = encode_fresh(v, chromium(), &f);
    assert_eq!(enc[..5], wire[..5]);
    assert_eq!(enc[8..18], wire[8..18]);
    assert_eq!(enc[16], pri_byte);
    assert_eq!(decode_one(v, &enc).unwrap(), f);
}

/// Compressed SYN_STREAM, SPDY/3: sid 1, pri 4, zlib 9/11/1 — Chromium's exact bytes.
#[test]
fn encodes_chromium_compressed_syn_stream_v3() {
    let want = hex("80 03 00 01 00 00 00 27 00 00 00 01 00 00 00 00 80 00
         38 ea e3 c6 a7 c2 02 e5 0e 50 c2 4b 4a 04 e5 0b e6 b4 fc 7c 24 0a 28 08 00 00 00 ff ff");
    let f = Frame::SynStream(SynStream {
        stream_id: StreamId(1),
        assoc_id: StreamId(0),
        priority: 4,
        slot: 0,
        fin: false,
        unidirectional: false,
        headers: bar_foo(),
    });
    assert_eq!(
        to_hex(&encode_fresh(Version::V3, chromium(), &f)),
        to_hex(&want)
    );
    assert_eq!(decode_one(Version::V3, &want).unwrap(), f);
    // SPDY/3.1 frames are byte-identical to SPDY/3 ones.
    assert_eq!(
        to_hex(&encode_fresh(Version::V3_1, chromium(), &f)),
        to_hex(&want)
    );
}

/// Compressed SYN_STREAM, SPDY/2: sid 1, pri 2 (`0x80`), v2 dictionary.
#[test]
fn encodes_chromium_compressed_syn_stream_v2() {
    let want = hex("80 02 00 01 00 00 00 25 00 00 00 01 00 00 00 00 80 00
         38 ea df a2 51 b2 62 60 62 60 4e 4a 2c 62 60 4e cb cf 87 12 40 2e 00 00 00 ff ff");
    let f = Frame::SynStream(SynStream {
        stream_id: StreamId(1),
        assoc_id: StreamId(0),
        priority: 2,
        slot: 0,
        fin: false,
        unidirectional: false,
        headers: bar_foo(),
    });
    assert_eq!(
        to_hex(&encode_fresh(Version::V2, chromium(), &f)),
        to_hex(&want)
    );
    assert_eq!(decode_one(Version::V2, &want).unwrap(), f);
}

const CHROMIUM_V3_BLOCK: &str =
    "38 ea e3 c6 a7 c2 02 e5 0e 50 c2 4b 4a 04 e5 0b e6 b4 fc 7c 24 0a 28 08 00 00 00 ff ff";

/// SYN_REPLY and HEADERS, SPDY/3, sid 1, first block of a context.
#[test]
fn encodes_chromium_compressed_syn_reply_and_headers_v3() {
    for (t, f) in [
        (
            "02",
            Frame::SynReply {
                stream_id: StreamId(1),
                fin: false,
                headers: bar_foo(),
            },
        ),
        (
            "08",
            Frame::Headers {
                stream_id: StreamId(1),
                fin: false,
                headers: bar_foo(),
            },
        ),
    ] {
        let want = hex(&format!(
            "80 03 00 {t} 00 00 00 21 00 00 00 01 {CHROMIUM_V3_BLOCK}"
        ));
        assert_eq!(
            to_hex(&encode_fresh(Version::V3, chromium(), &f)),
            to_hex(&want)
        );
        assert_eq!(decode_one(Version::V3, &want).unwrap(), f);
    }
}

/// SPDY/2 SYN_REPLY: 2 unused bytes after the stream id, then the v2 block.
#[test]
fn encodes_compressed_syn_reply_v2_with_the_unused_field() {
    let want = hex("80 02 00 02 00 00 00 21 00 00 00 01 00 00
         38 ea df a2 51 b2 62 60 62 60 4e 4a 2c 62 60 4e cb cf 87 12 40 2e 00 00 00 ff ff");
    let f = Frame::SynReply {
        stream_id: StreamId(1),
        fin: false,
        headers: bar_foo(),
    };
    assert_eq!(
        to_hex(&encode_fresh(Version::V2, chromium(), &f)),
        to_hex(&want)
    );
    assert_eq!(decode_one(Version::V2, &want).unwrap(), f);
}

/// HEADERS with an uncompressed {bar: foo, foo: bar} block, SPDY/3 and SPDY/2.
#[test]
fn decodes_chromium_uncompressed_headers_blocks() {
    let v3 = hex(
        "80 03 00 08 00 00 00 24 00 00 00 01 00 00 00 02 00 00 00 03 62 61 72 00 00 00 03
         66 6f 6f 00 00 00 03 66 6f 6f 00 00 00 03 62 61 72",
    );
    let v2 = hex(
        "80 02 00 08 00 00 00 1c 00 00 00 01 00 00 00 02 00 03 62 61 72
         00 03 66 6f 6f 00 03 66 6f 6f 00 03 62 61 72",
    );
    for (v, wire, fixed) in [(Version::V3, v3, 12), (Version::V2, v2, 14)] {
        assert_eq!(Headers::decode(v, &wire[fixed..]).unwrap(), bar_foo());
        let mut nv = Vec::new();
        bar_foo().encode(v, &mut nv);
        assert_eq!(nv, wire[fixed..]);
        let f = Frame::Headers {
            stream_id: StreamId(1),
            fin: false,
            headers: bar_foo(),
        };
        let enc = encode_fresh(v, chromium(), &f);
        assert_eq!(enc[..5], wire[..5], "{v}");
        assert_eq!(enc[8..fixed], wire[8..fixed], "{v}");
    }
}

fn check_fixed(v: Version, f: Frame, wire: &str) {
    let want = hex(wire);
    assert_eq!(
        to_hex(&encode_fresh(v, chromium(), &f)),
        to_hex(&want),
        "{f:?}"
    );
    assert_eq!(decode_one(v, &want).unwrap(), f);
}

#[test]
fn encodes_chromium_fixed_size_frames() {
    check_fixed(
        Version::V3,
        Frame::RstStream {
            stream_id: StreamId(1),
            status: RstStatus::PROTOCOL_ERROR,
        },
        "80 03 00 03 00 00 00 08 00 00 00 01 00 00 00 01",
    );
    check_fixed(
        Version::V3,
        Frame::Settings {
            clear: false,
            entries: vec![],
        },
        "80 03 00 04 00 00 00 04 00 00 00 00",
    );
    check_fixed(
        Version::V3,
        Frame::Ping { id: 0x1234_5678 },
        "80 03 00 06 00 00 00 04 12 34 56 78",
    );
    check_fixed(
        Version::V3,
        Frame::GoAway {
            last_good: StreamId(0),
            status: GoAwayStatus::OK,
        },
        "80 03 00 07 00 00 00 08 00 00 00 00 00 00 00 00",
    );
    check_fixed(
        Version::V3,
        Frame::GoAway {
            last_good: StreamId::MAX,
            status: GoAwayStatus::INTERNAL_ERROR,
        },
        "80 03 00 07 00 00 00 08 7f ff ff ff 00 00 00 02",
    );
    check_fixed(
        Version::V2,
        Frame::GoAway {
            last_good: StreamId(0),
            status: GoAwayStatus::OK,
        },
        "80 02 00 07 00 00 00 04 00 00 00 00",
    );
    check_fixed(
        Version::V3,
        Frame::WindowUpdate {
            stream_id: StreamId(1),
            delta: 1,
        },
        "80 03 00 09 00 00 00 08 00 00 00 01 00 00 00 01",
    );
    check_fixed(Version::V2, Frame::Noop, "80 02 00 05 00 00 00 00");
}

/// id 0x030201, flags 0x04, value 0x0a0b0c0d: the SPDY/2 id is little-endian and comes
/// before the flags byte (digest §2.4).
#[test]
fn encodes_settings_ids_little_endian_in_spdy2_only() {
    let f = Frame::Settings {
        clear: false,
        entries: vec![Setting {
            id: SettingId(0x030201),
            flags: 0x04,
            value: 0x0a0b_0c0d,
        }],
    };
    check_fixed(
        Version::V3,
        f.clone(),
        "80 03 00 04 00 00 00 0c 00 00 00 01 04 03 02 01 0a 0b 0c 0d",
    );
    check_fixed(
        Version::V3_1,
        f.clone(),
        "80 03 00 04 00 00 00 0c 00 00 00 01 04 03 02 01 0a 0b 0c 0d",
    );
    check_fixed(
        Version::V2,
        f,
        "80 02 00 04 00 00 00 0c 00 00 00 01 01 02 03 04 0a 0b 0c 0d",
    );
}

#[test]
fn encodes_the_settings_clear_flag() {
    check_fixed(
        Version::V3,
        Frame::Settings {
            clear: true,
            entries: vec![],
        },
        "80 03 00 04 01 00 00 04 00 00 00 00",
    );
}

#[test]
fn encodes_priority_bits_per_version() {
    for (v, pri, byte) in [
        (Version::V3, 0, 0x00),
        (Version::V3, 7, 0xe0),
        (Version::V3_1, 5, 0xa0),
        (Version::V2, 0, 0x00),
        (Version::V2, 3, 0xc0),
    ] {
        let f = Frame::SynStream(SynStream {
            stream_id: StreamId(1),
            assoc_id: StreamId(0),
            priority: pri,
            slot: 0,
            fin: false,
            unidirectional: false,
            headers: bar_foo(),
        });
        let enc = encode_fresh(v, chromium(), &f);
        assert_eq!(enc[16], byte, "{v} priority {pri}");
        assert_eq!(decode_one(v, &enc).unwrap(), f);
    }
}

#[test]
fn writes_unidirectional_and_fin_flags_on_syn_stream() {
    let f = Frame::SynStream(SynStream {
        stream_id: StreamId(2),
        assoc_id: StreamId(1),
        priority: 0,
        slot: 0,
        fin: true,
        unidirectional: true,
        headers: bar_foo(),
    });
    let enc = encode_fresh(Version::V3, chromium(), &f);
    assert_eq!(enc[4], 0x03);
    assert_eq!(enc[8..16], hex("00 00 00 02 00 00 00 01")[..]);
}

#[test]
fn writes_data_frame_headers() {
    let f = Frame::Data {
        stream_id: StreamId(0x0102_0304),
        fin: true,
        data: Bytes::from_static(&[0xaa; 0x0105]),
    };
    let enc = encode_fresh(Version::V3, chromium(), &f);
    assert_eq!(enc[..8], hex("01 02 03 04 01 00 01 05")[..]);
    let mut header = Vec::new();
    spdy::frame::encode_data_header(StreamId(0x0102_0304), true, 0x0105, &mut header);
    assert_eq!(header, enc[..8]);
}

// ---------------------------------------------------------------------------------------
// Reserved bits, unknown types, malformed frames.

#[test]
fn masks_reserved_bits_on_receipt() {
    let rst = decode_one(
        Version::V3,
        &hex("80 03 00 03 00 00 00 08 ff ff ff ff 00 00 00 05"),
    )
    .unwrap();
    assert_eq!(
        rst,
        Frame::RstStream {
            stream_id: StreamId::MAX,
            status: RstStatus::CANCEL
        }
    );
    let wu = decode_one(
        Version::V3,
        &hex("80 03 00 09 00 00 00 08 80 00 00 03 80 00 00 10"),
    )
    .unwrap();
    assert_eq!(
        wu,
        Frame::WindowUpdate {
            stream_id: StreamId(3),
            delta: 16
        }
    );
    let goaway = decode_one(Version::V2, &hex("80 02 00 07 00 00 00 04 80 00 00 07")).unwrap();
    assert_eq!(
        goaway,
        Frame::GoAway {
            last_good: StreamId(7),
            status: GoAwayStatus::OK
        }
    );
}

#[test]
fn decodes_types_a_version_lacks_as_unknown() {
    // NOOP in SPDY/3, WINDOW_UPDATE and CREDENTIAL in SPDY/2, a private type anywhere.
    for (v, wire) in [
        (Version::V3, "80 03 00 05 00 00 00 00"),
        (
            Version::V2,
            "80 02 00 09 00 00 00 08 00 00 00 01 00 00 00 01",
        ),
        (Version::V2, "80 02 00 0a 00 00 00 02 00 01"),
        (Version::V3_1, "80 03 f0 00 00 00 00 03 01 02 03"),
    ] {
        let bytes = hex(wire);
        let f = decode_one(v, &bytes).unwrap();
        let Frame::Unknown {
            version,
            frame_type,
            payload,
            ..
        } = &f
        else {
            panic!("{v}: {wire} decoded as {f:?}");
        };
        assert_eq!(*version, v.wire());
        assert_eq!(*frame_type, u16::from_be_bytes([bytes[2], bytes[3]]));
        assert_eq!(payload[..], bytes[8..]);
        assert_eq!(
            encode_fresh(v, chromium(), &f),
            bytes,
            "unknown frames re-encode as read"
        );
    }
}

fn assert_malformed(v: Version, wire: &str) {
    match decode_one(v, &hex(wire)) {
        Err(FrameError::Malformed { .. }) => {}
        other => panic!("{v}: {wire}: expected Malformed, got {other:?}"),
    }
}

#[test]
fn rejects_fixed_size_frames_of_the_wrong_length() {
    for v in [Version::V3, Version::V3_1] {
        assert_malformed(v, "80 03 00 03 00 00 00 07 00 00 00 01 00 00 00");
        assert_malformed(v, "80 03 00 03 00 00 00 09 00 00 00 01 00 00 00 01 00");
        assert_malformed(v, "80 03 00 06 00 00 00 03 00 00 01");
        assert_malformed(v, "80 03 00 06 00 00 00 05 00 00 00 01 00");
        assert_malformed(v, "80 03 00 07 00 00 00 04 00 00 00 00");
        assert_malformed(v, "80 03 00 09 00 00 00 04 00 00 00 01");
        assert_malformed(v, "80 03 00 04 00 00 00 03 00 00 00");
        assert_malformed(
            v,
            "80 03 00 04 00 00 00 0c 00 00 00 02 00 00 00 07 00 00 00 01",
        );
        assert_malformed(v, "80 03 00 04 00 00 00 08 00 00 00 00 00 00 00 07");
        assert_malformed(v, "80 03 00 01 00 00 00 09 00 00 00 01 00 00 00 00 00");
        assert_malformed(v, "80 03 00 02 00 00 00 03 00 00 00");
        assert_malformed(v, "80 03 00 08 00 00 00 02 00 00");
        assert_malformed(v, "80 03 00 0a 00 00 00 05 00 01 00 00 00");
        assert_malformed(v, "80 03 00 0a 00 00 00 07 00 01 00 00 00 02 00");
    }
    assert_malformed(Version::V2, "80 02 00 07 00 00 00 05 00 00 00 00 00");
    assert_malformed(Version::V2, "80 02 00 05 00 00 00 01 00");
    assert_malformed(Version::V2, "80 02 00 02 00 00 00 05 00 00 00 01 00");
    assert_malformed(Version::V2, "80 02 00 08 00 00 00 04 00 00 00 01");
}

#[test]
fn reports_control_frames_of_another_version() {
    // A SPDY/2 SYN_STREAM on a SPDY/3 session carries its stream id for the RST.
    let v2_syn = encode_fresh(
        Version::V2,
        chromium(),
        &Frame::SynStream(SynStream {
            stream_id: StreamId(9),
            assoc_id: StreamId(0),
            priority: 0,
            slot: 0,
            fin: true,
            unidirectional: false,
            headers: bar_foo(),
        }),
    );
    assert_eq!(
        decode_one(Version::V3, &v2_syn),
        Err(FrameError::WrongVersion {
            version: 2,
            frame_type: frame_type::SYN_STREAM,
            stream_id: Some(StreamId(9))
        })
    );
    assert_eq!(
        decode_one(Version::V2, &hex("80 03 00 06 00 00 00 04 00 00 00 01")),
        Err(FrameError::WrongVersion {
            version: 3,
            frame_type: frame_type::PING,
            stream_id: None
        })
    );
}

#[test]
fn rejects_garbage_header_blocks_as_compression_errors() {
    let wire = hex("80 03 00 02 00 00 00 0a 00 00 00 01 01 02 03 04 05 06");
    assert!(matches!(
        decode_one(Version::V3, &wire),
        Err(FrameError::Compression(_))
    ));
}

#[test]
fn rejects_invalid_name_value_blocks_as_stream_errors() {
    // A well-formed zlib block holding an upper-case name (Headers would lower-case it,
    // so the name/value bytes are written by hand and stored uncompressed).
    let mut wire = hex("80 03 00 02 00 00 00 00 00 00 00 05");
    let mut nv = Vec::new();
    nv.extend(1u32.to_be_bytes());
    nv.extend(4u32.to_be_bytes());
    nv.extend(b"Host");
    nv.extend(1u32.to_be_bytes());
    nv.extend(b"x");
    wire.extend(compress_raw(Version::V3, &nv));
    let len = (wire.len() - 8) as u32;
    wire[5..8].copy_from_slice(&len.to_be_bytes()[1..]);
    match decode_one(Version::V3, &wire) {
        Err(FrameError::HeaderBlock {
            stream_id,
            too_large: false,
            ..
        }) => assert_eq!(stream_id, StreamId(5)),
        other => panic!("expected a header-block error, got {other:?}"),
    }
}

/// Compresses arbitrary bytes as a header block (level 0: the block is stored verbatim,
/// so the raw bytes can be anything a hostile peer wants).
fn compress_raw(v: Version, raw: &[u8]) -> Vec<u8> {
    // A stored zlib stream: header with FDICT and the dictionary id, then one stored
    // block without BFINAL, then an empty stored block (the sync flush marker).
    let (cmf_flg, dictid): ([u8; 2], u32) = ([0x38, 0x30], dict_id(v));
    let mut out = cmf_flg.to_vec();
    out.extend(dictid.to_be_bytes());
    out.push(0x00);
    out.extend((raw.len() as u16).to_le_bytes());
    out.extend((!(raw.len() as u16)).to_le_bytes());
    out.extend(raw);
    out.extend([0x00, 0x00, 0x00, 0xff, 0xff]);
    out
}

fn dict_id(v: Version) -> u32 {
    if v == Version::V2 {
        0xdfa2_51b2
    } else {
        0xe3c6_a7c2
    }
}

#[test]
fn stored_blocks_built_by_hand_match_a_level_zero_compressor() {
    // Guards compress_raw (used for hostile blocks) against drifting from real zlib.
    for v in ALL {
        let h = Headers::from_pairs([(":method", "GET"), ("accept", "*/*")]);
        let mut nv = Vec::new();
        h.encode(v, &mut nv);
        let mut c = HeaderCompressor::new(v, node());
        let mut real = Vec::new();
        c.compress(&h, &mut real);
        assert_eq!(to_hex(&compress_raw(v, &nv)), to_hex(&real), "{v}");
    }
}

#[test]
fn refuses_header_blocks_beyond_the_decompressed_limit() {
    let mut big = Headers::new();
    big.add("x-big", vec![b'z'; 40_000]);
    let f = Frame::SynReply {
        stream_id: StreamId(1),
        fin: false,
        headers: big,
    };
    let wire = encode_fresh(Version::V3, chromium(), &f);
    assert!(wire.len() < 1000, "zlib squeezes it: {}", wire.len());
    let mut d = HeaderDecompressor::new(Version::V3, 16 * 1024);
    let mut buf = Bytes::from(wire);
    match Frame::decode(Version::V3, &mut buf, &mut d) {
        Err(FrameError::HeaderBlock {
            too_large: true,
            stream_id,
            ..
        }) => assert_eq!(stream_id, StreamId(1)),
        other => panic!("expected too_large, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// node-spdy vectors, captured with
//   node crates/spdy/tests/capture/node_capture.js spdy/3.1   (and spdy/2)
// i.e. interop/client.js GET http://127.0.0.1:PORT/hello.txt through a recording relay
// to interop/server.js (node-spdy 4.0.2, spdy-transport 3.0.0, Node 20, cleartext). The
// header blocks are compressed at zlib level 0 with windowBits 11, as spdy-transport
// does by default: `38 30` + DICTID, one stored block, and the sync-flush marker.

/// SPDY/3.1 SYN_STREAM from the node-spdy client (relay port 37317).
const NODE_V3_SYN_STREAM: &str = "80030001010000ca000000010000000060003830e3c6a7c200b0004fff\
    0000000700000006616363657074000000032a2f2a0000000a757365722d6167656e74000000186e6f64652d\
    7370647920696e7465726f7020636c69656e74000000073a6d6574686f6400000003474554000000083a7665\
    7273696f6e00000008485454502f312e31000000053a706174680000000a2f68656c6c6f2e74787400000007\
    3a736368656d65000000056874747073000000053a686f73740000000f3132372e302e302e313a3337333137\
    000000ffff";

/// SPDY/3.1 SYN_REPLY from the node-spdy server, for the request above.
const NODE_V3_SYN_REPLY: &str = "8003000200000097000000013830e3c6a7c20083007cff000000050000\
    000c636f6e74656e742d747970650000000a746578742f706c61696e0000000e636f6e74656e742d6c656e67\
    74680000000232310000000e782d737064792d76657273696f6e00000006737064792f33000000073a737461\
    74757300000006323030204f4b000000083a76657273696f6e00000008485454502f312e31000000ffff";

/// SPDY/2 SYN_STREAM from the node-spdy client (relay port 36197).
const NODE_V2_SYN_STREAM: &str = "80020001010000a6000000010000000060003830dfa251b2008c0073ff\
    0007000661636365707400032a2f2a000a757365722d6167656e7400186e6f64652d7370647920696e746572\
    6f7020636c69656e7400066d6574686f640003474554000776657273696f6e0008485454502f312e31000375\
    726c000a2f68656c6c6f2e7478740006736368656d65000568747470730004686f7374000f3132372e302e30\
    2e313a3336313937000000ffff";

/// SPDY/2 SYN_REPLY from the node-spdy server.
const NODE_V2_SYN_REPLY: &str = "80020002000000810000000100003830dfa251b2006b0094ff0005000c\
    636f6e74656e742d74797065000a746578742f706c61696e000e636f6e74656e742d6c656e67746800023231\
    000e782d737064792d76657273696f6e0006737064792f3200067374617475730006323030204f4b00077665\
    7273696f6e0008485454502f312e31000000ffff";

fn node_request(v: Version, port: &str) -> Headers {
    let host = format!("127.0.0.1:{port}");
    if v == Version::V2 {
        Headers::from_pairs([
            ("accept", "*/*"),
            ("user-agent", "node-spdy interop client"),
            ("method", "GET"),
            ("version", "HTTP/1.1"),
            ("url", "/hello.txt"),
            ("scheme", "https"),
            ("host", host.as_str()),
        ])
    } else {
        Headers::from_pairs([
            ("accept", "*/*"),
            ("user-agent", "node-spdy interop client"),
            (":method", "GET"),
            (":version", "HTTP/1.1"),
            (":path", "/hello.txt"),
            (":scheme", "https"),
            (":host", host.as_str()),
        ])
    }
}

/// interop/server.js names the wire version in `x-spdy-version` ("spdy/3" on 3.1 too).
fn node_response(v: Version) -> Headers {
    let p = if v == Version::V2 { "" } else { ":" };
    Headers::from_pairs([
        ("content-type", "text/plain".to_string()),
        ("content-length", "21".to_string()),
        ("x-spdy-version", format!("spdy/{}", v.wire())),
        (&format!("{p}status"), "200 OK".to_string()),
        (&format!("{p}version"), "HTTP/1.1".to_string()),
    ])
}

#[test]
fn decodes_node_spdy_syn_stream_and_syn_reply() {
    for (v, syn, reply, port, pri) in [
        (
            Version::V3_1,
            NODE_V3_SYN_STREAM,
            NODE_V3_SYN_REPLY,
            "37317",
            3,
        ),
        // node-spdy writes SPDY/2 priorities as `pri << 5`, so its 3 reads back as 1.
        (
            Version::V2,
            NODE_V2_SYN_STREAM,
            NODE_V2_SYN_REPLY,
            "36197",
            1,
        ),
    ] {
        let want_syn = Frame::SynStream(SynStream {
            stream_id: StreamId(1),
            assoc_id: StreamId(0),
            priority: pri,
            slot: 0,
            fin: true,
            unidirectional: false,
            headers: node_request(v, port),
        });
        assert_eq!(decode_one(v, &hex(syn)).unwrap(), want_syn, "{v}");
        let want_reply = Frame::SynReply {
            stream_id: StreamId(1),
            fin: false,
            headers: node_response(v),
        };
        assert_eq!(decode_one(v, &hex(reply)).unwrap(), want_reply, "{v}");
    }
}

#[test]
fn reproduces_node_spdy_level_zero_blocks_byte_for_byte() {
    for (v, syn, reply, port) in [
        (
            Version::V3_1,
            NODE_V3_SYN_STREAM,
            NODE_V3_SYN_REPLY,
            "37317",
        ),
        (Version::V2, NODE_V2_SYN_STREAM, NODE_V2_SYN_REPLY, "36197"),
    ] {
        let syn = hex(syn);
        let mut c = HeaderCompressor::new(v, node());
        let mut block = Vec::new();
        c.compress(&node_request(v, port), &mut block);
        assert_eq!(to_hex(&block), to_hex(&syn[18..]), "{v} request block");
        let reply = hex(reply);
        let fixed = if v == Version::V2 { 14 } else { 12 };
        let f = Frame::SynReply {
            stream_id: StreamId(1),
            fin: false,
            headers: node_response(v),
        };
        assert_eq!(to_hex(&encode_fresh(v, node(), &f)), to_hex(&reply), "{v}");
        assert_eq!(reply[..fixed], encode_fresh(v, node(), &f)[..fixed]);
    }
}

/// node-spdy's opening frames: SETTINGS with FLAG_SETTINGS_PERSIST_VALUE on the entry
/// (also from the client), the 3.1 session WINDOW_UPDATE, and its GOAWAY — which is 8
/// bytes long with a status in SPDY/2 too.
#[test]
fn decodes_node_spdy_settings_window_update_and_goaway() {
    let persist_window = || Frame::Settings {
        clear: false,
        entries: vec![Setting {
            id: SettingId::INITIAL_WINDOW_SIZE,
            flags: 0x01,
            value: 1 << 20,
        }],
    };
    for (v, wire) in [
        (Version::V3_1, "800300040000000c000000010100000700100000"),
        (Version::V2, "800200040000000c000000010700000100100000"),
    ] {
        assert_eq!(decode_one(v, &hex(wire)).unwrap(), persist_window(), "{v}");
    }
    assert_eq!(
        decode_one(Version::V3_1, &hex("800300090000000800000000000f0000")).unwrap(),
        Frame::WindowUpdate {
            stream_id: StreamId(0),
            delta: 983_040
        }
    );
    for (v, wire) in [
        (Version::V3_1, "80030007000000080000000100000000"),
        (Version::V2, "80020007000000080000000100000000"),
    ] {
        assert_eq!(
            decode_one(v, &hex(wire)).unwrap(),
            Frame::GoAway {
                last_good: StreamId(1),
                status: GoAwayStatus::OK
            },
            "{v}"
        );
    }
}

/// The 2026 advisory against moby/spdystream ≤ 0.5.0: counts and lengths read from a
/// peer's frame were trusted before allocating. Here each is checked against the bytes
/// actually present first; header blocks are also bounded after inflation (see
/// `compress.rs`, `refuses_zlib_bombs_and_stays_in_sync`).
#[test]
fn bounds_counts_and_lengths_before_allocating() {
    // SETTINGS claiming 2^32-1 entries in a 12-byte payload.
    let wire = [
        0x80, 3, 0, 4, 0, 0, 0, 12, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 1,
    ];
    assert!(matches!(
        decode_one(Version::V3, &wire),
        Err(FrameError::Malformed { .. })
    ));
    use spdy::headers::HeaderError;
    let d = |b: &[u8]| Headers::decode(Version::V3, b);
    // A header count that cannot fit in the block.
    assert_eq!(
        d(&[0x7f, 0xff, 0xff, 0xff, 0, 0]),
        Err(HeaderError::TooManyPairs)
    );
    // A name length, then a value length, far past the end of the block.
    assert!(d(&[0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff, b'a']).is_err());
    assert!(d(&[0, 0, 0, 1, 0, 0, 0, 1, b'a', 0x7f, 0xff, 0xff, 0xff, b'x']).is_err());
}

#[test]
fn the_priority_extension_frame_is_byte_exact() {
    let mut c = HeaderCompressor::new(Version::V3_1, CompressionConfig::default());
    let mut wire = Vec::new();
    Frame::Priority {
        stream_id: StreamId(3),
        priority: 1,
    }
    .encode(Version::V3_1, &mut c, &mut wire);
    assert_eq!(
        wire,
        b"\x80\x03\x00\xf0\x00\x00\x00\x08\x00\x00\x00\x03\x20\x00\x00\x00"
    );
    let mut wire = Vec::new();
    Frame::Priority {
        stream_id: StreamId(3),
        priority: 1,
    }
    .encode(Version::V2, &mut c, &mut wire);
    assert_eq!(&wire[..4], b"\x80\x02\x00\xf0");
    assert_eq!(wire[12], 0x40, "SPDY/2 priorities are two bits");
}
