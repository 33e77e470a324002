//! Every frame the decoder must reject (RFC 9113 §4-§6), with the error code and the
//! connection-or-stream classification the RFC gives.

use bytes::Bytes;
use h2wire::frame::{FrameDecoder, FrameHeader, FrameType, StreamId, DEFAULT_MAX_FRAME_SIZE};
use h2wire::{ErrorCode, FrameError};

/// A frame with an arbitrary header and payload.
fn raw(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    FrameHeader {
        length: payload.len() as u32,
        kind: FrameType(kind),
        flags,
        stream_id: StreamId(stream),
    }
    .encode(&mut out);
    out.extend_from_slice(payload);
    out
}

fn decode(wire: &[u8]) -> Result<(), FrameError> {
    FrameDecoder::new()
        .decode(wire)
        .map(|r| assert!(r.is_some(), "frame incomplete"))
}

fn connection_error(wire: &[u8], code: ErrorCode) {
    match decode(wire) {
        Err(FrameError::Connection { code: got, .. }) => assert_eq!(got, code),
        other => panic!("expected connection error {code}, got {other:?}"),
    }
}

fn stream_error(wire: &[u8], stream: u32, code: ErrorCode) {
    match decode(wire) {
        Err(FrameError::Stream {
            stream_id,
            code: got,
            frame_len,
            ..
        }) => {
            assert_eq!(
                (stream_id, got, frame_len),
                (StreamId(stream), code, wire.len())
            );
        }
        other => panic!("expected stream error {code}, got {other:?}"),
    }
}

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const PRIORITY: u8 = 0x2;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PUSH_PROMISE: u8 = 0x5;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;
const PADDED: u8 = 0x8;
const PRIO_FLAG: u8 = 0x20;
const END_HEADERS: u8 = 0x4;

#[test]
fn frame_over_max_frame_size_is_frame_size_error_from_the_header_alone() {
    let head = &raw(DATA, 0, 1, &vec![0; DEFAULT_MAX_FRAME_SIZE as usize + 1])[..9];
    let err = FrameDecoder::new().decode(head).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FRAME_SIZE_ERROR);
    assert!(err.is_connection_error());
    let mut bytes = bytes::BytesMut::from(head);
    assert_eq!(FrameDecoder::new().decode_bytes_mut(&mut bytes), Err(err));
}

#[test]
fn frames_of_stream_types_on_stream_zero_are_protocol_errors() {
    connection_error(&raw(DATA, 0, 0, b"x"), ErrorCode::PROTOCOL_ERROR);
    connection_error(
        &raw(HEADERS, END_HEADERS, 0, b"\x82"),
        ErrorCode::PROTOCOL_ERROR,
    );
    connection_error(
        &raw(PRIORITY, 0, 0, &[0, 0, 0, 1, 0]),
        ErrorCode::PROTOCOL_ERROR,
    );
    connection_error(
        &raw(RST_STREAM, 0, 0, &[0, 0, 0, 8]),
        ErrorCode::PROTOCOL_ERROR,
    );
    connection_error(
        &raw(PUSH_PROMISE, END_HEADERS, 0, &[0, 0, 0, 2]),
        ErrorCode::PROTOCOL_ERROR,
    );
    connection_error(
        &raw(CONTINUATION, END_HEADERS, 0, b""),
        ErrorCode::PROTOCOL_ERROR,
    );
}

#[test]
fn frames_of_connection_types_on_a_stream_are_protocol_errors() {
    connection_error(&raw(SETTINGS, 0, 1, b""), ErrorCode::PROTOCOL_ERROR);
    connection_error(&raw(PING, 0, 1, &[0; 8]), ErrorCode::PROTOCOL_ERROR);
    connection_error(&raw(GOAWAY, 0, 1, &[0; 8]), ErrorCode::PROTOCOL_ERROR);
}

#[test]
fn settings_length_not_a_multiple_of_six_is_frame_size_error() {
    connection_error(
        &raw(SETTINGS, 0, 0, &[0, 3, 0, 0, 0]),
        ErrorCode::FRAME_SIZE_ERROR,
    );
    connection_error(&raw(SETTINGS, 0, 0, &[0; 7]), ErrorCode::FRAME_SIZE_ERROR);
}

#[test]
fn settings_ack_with_a_payload_is_frame_size_error() {
    connection_error(
        &raw(SETTINGS, 0x1, 0, &[0, 3, 0, 0, 0, 1]),
        ErrorCode::FRAME_SIZE_ERROR,
    );
}

#[test]
fn settings_enable_push_other_than_0_or_1_is_protocol_error() {
    connection_error(
        &raw(SETTINGS, 0, 0, &[0, 2, 0, 0, 0, 2]),
        ErrorCode::PROTOCOL_ERROR,
    );
    assert!(decode(&raw(SETTINGS, 0, 0, &[0, 2, 0, 0, 0, 1])).is_ok());
}

#[test]
fn settings_initial_window_size_over_2_pow_31_minus_1_is_flow_control_error() {
    connection_error(
        &raw(SETTINGS, 0, 0, &[0, 4, 0x80, 0, 0, 0]),
        ErrorCode::FLOW_CONTROL_ERROR,
    );
    assert!(decode(&raw(SETTINGS, 0, 0, &[0, 4, 0x7f, 0xff, 0xff, 0xff])).is_ok());
}

#[test]
fn settings_max_frame_size_out_of_range_is_protocol_error() {
    connection_error(
        &raw(SETTINGS, 0, 0, &[0, 5, 0, 0, 0x3f, 0xff]),
        ErrorCode::PROTOCOL_ERROR,
    );
    connection_error(
        &raw(SETTINGS, 0, 0, &[0, 5, 0x01, 0, 0, 0]),
        ErrorCode::PROTOCOL_ERROR,
    );
    assert!(decode(&raw(SETTINGS, 0, 0, &[0, 5, 0, 0, 0x40, 0])).is_ok());
    assert!(decode(&raw(SETTINGS, 0, 0, &[0, 5, 0, 0xff, 0xff, 0xff])).is_ok());
}

#[test]
fn settings_with_unknown_ids_are_accepted() {
    assert!(decode(&raw(SETTINGS, 0, 0, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff])).is_ok());
}

#[test]
fn ping_length_other_than_8_is_frame_size_error() {
    connection_error(&raw(PING, 0, 0, &[0; 7]), ErrorCode::FRAME_SIZE_ERROR);
    connection_error(&raw(PING, 0, 0, &[0; 9]), ErrorCode::FRAME_SIZE_ERROR);
}

#[test]
fn goaway_shorter_than_8_is_frame_size_error() {
    connection_error(&raw(GOAWAY, 0, 0, &[0; 7]), ErrorCode::FRAME_SIZE_ERROR);
}

#[test]
fn rst_stream_length_other_than_4_is_frame_size_error() {
    connection_error(&raw(RST_STREAM, 0, 1, &[0; 3]), ErrorCode::FRAME_SIZE_ERROR);
    connection_error(&raw(RST_STREAM, 0, 1, &[0; 5]), ErrorCode::FRAME_SIZE_ERROR);
}

#[test]
fn priority_length_other_than_5_is_a_stream_frame_size_error() {
    stream_error(
        &raw(PRIORITY, 0, 3, &[0; 4]),
        3,
        ErrorCode::FRAME_SIZE_ERROR,
    );
    stream_error(
        &raw(PRIORITY, 0, 3, &[0; 6]),
        3,
        ErrorCode::FRAME_SIZE_ERROR,
    );
}

#[test]
fn priority_depending_on_its_own_stream_is_a_stream_protocol_error() {
    stream_error(
        &raw(PRIORITY, 0, 3, &[0, 0, 0, 3, 16]),
        3,
        ErrorCode::PROTOCOL_ERROR,
    );
}

#[test]
fn window_update_increment_zero_is_a_stream_error_on_a_stream() {
    stream_error(
        &raw(WINDOW_UPDATE, 0, 5, &[0; 4]),
        5,
        ErrorCode::PROTOCOL_ERROR,
    );
    // The reserved bit does not count towards the increment.
    stream_error(
        &raw(WINDOW_UPDATE, 0, 5, &[0x80, 0, 0, 0]),
        5,
        ErrorCode::PROTOCOL_ERROR,
    );
}

#[test]
fn window_update_increment_zero_is_a_connection_error_on_stream_zero() {
    connection_error(
        &raw(WINDOW_UPDATE, 0, 0, &[0; 4]),
        ErrorCode::PROTOCOL_ERROR,
    );
}

#[test]
fn window_update_length_other_than_4_is_frame_size_error() {
    connection_error(
        &raw(WINDOW_UPDATE, 0, 1, &[0, 0, 1]),
        ErrorCode::FRAME_SIZE_ERROR,
    );
}

#[test]
fn padding_as_long_as_the_payload_is_protocol_error() {
    // Payload of 5: Pad Length 5 leaves -1 bytes of data.
    connection_error(
        &raw(DATA, PADDED, 1, &[5, 0, 0, 0, 0]),
        ErrorCode::PROTOCOL_ERROR,
    );
    // Pad Length 4 leaves 0 bytes of data: fine.
    assert!(decode(&raw(DATA, PADDED, 1, &[4, 0, 0, 0, 0])).is_ok());
}

#[test]
fn headers_padding_longer_than_what_follows_the_priority_fields_is_protocol_error() {
    // Pad Length 2, 5 priority bytes, then only 1 byte left.
    let payload = [2, 0, 0, 0, 1, 16, 0];
    connection_error(
        &raw(HEADERS, PADDED | PRIO_FLAG | END_HEADERS, 3, &payload),
        ErrorCode::PROTOCOL_ERROR,
    );
}

#[test]
fn push_promise_padding_longer_than_the_fragment_is_protocol_error() {
    connection_error(
        &raw(PUSH_PROMISE, PADDED | END_HEADERS, 1, &[3, 0, 0, 0, 2, 0]),
        ErrorCode::PROTOCOL_ERROR,
    );
}

#[test]
fn padded_frame_without_room_for_pad_length_is_frame_size_error() {
    connection_error(&raw(DATA, PADDED, 1, b""), ErrorCode::FRAME_SIZE_ERROR);
    connection_error(
        &raw(HEADERS, PADDED | END_HEADERS, 1, b""),
        ErrorCode::FRAME_SIZE_ERROR,
    );
}

#[test]
fn headers_too_short_for_its_priority_fields_is_frame_size_error() {
    connection_error(
        &raw(HEADERS, PRIO_FLAG | END_HEADERS, 1, &[0, 0, 0]),
        ErrorCode::FRAME_SIZE_ERROR,
    );
}

#[test]
fn push_promise_too_short_for_the_promised_stream_is_frame_size_error() {
    connection_error(
        &raw(PUSH_PROMISE, END_HEADERS, 1, &[0, 0, 2]),
        ErrorCode::FRAME_SIZE_ERROR,
    );
}

#[test]
fn continuation_without_an_open_field_block_is_protocol_error() {
    connection_error(
        &raw(CONTINUATION, END_HEADERS, 1, b"\x82"),
        ErrorCode::PROTOCOL_ERROR,
    );
}

/// Decodes `first` (opening a field block) then expects `second` to be rejected.
fn interrupted(second: &[u8]) {
    let mut dec = FrameDecoder::new();
    let first = raw(HEADERS, 0, 1, b"\x82");
    assert!(dec.decode(&first).unwrap().is_some());
    assert_eq!(dec.expecting_continuation(), Some(StreamId(1)));
    let err = dec.decode(second).unwrap_err();
    assert_eq!(err.code(), ErrorCode::PROTOCOL_ERROR);
    assert!(err.is_connection_error());
}

#[test]
fn any_frame_inside_an_open_field_block_is_protocol_error() {
    interrupted(&raw(DATA, 0, 1, b"x"));
    interrupted(&raw(PING, 0, 0, &[0; 8]));
    interrupted(&raw(HEADERS, END_HEADERS, 3, b"\x82"));
}

#[test]
fn continuation_on_another_stream_is_protocol_error() {
    interrupted(&raw(CONTINUATION, END_HEADERS, 3, b"\x82"));
}

#[test]
fn unknown_frame_inside_an_open_field_block_is_protocol_error() {
    interrupted(&raw(0x42, 0, 1, b"ext"));
}

#[test]
fn continuation_sequence_without_end_headers_keeps_the_block_open() {
    let mut dec = FrameDecoder::new();
    dec.decode(&raw(PUSH_PROMISE, 0, 1, &[0, 0, 0, 2, 0x82]))
        .unwrap()
        .unwrap();
    dec.decode(&raw(CONTINUATION, 0, 1, b"\x84"))
        .unwrap()
        .unwrap();
    assert_eq!(dec.expecting_continuation(), Some(StreamId(1)));
    dec.decode(&raw(CONTINUATION, END_HEADERS, 1, b"\x86"))
        .unwrap()
        .unwrap();
    assert_eq!(dec.expecting_continuation(), None);
    assert!(dec.decode(&raw(DATA, 0, 1, b"x")).unwrap().is_some());
}

#[test]
fn stream_error_consumes_the_frame_and_decoding_goes_on() {
    let mut wire = raw(PRIORITY, 0, 3, &[0; 4]);
    wire.extend(raw(PING, 0, 0, &[1; 8]));
    let mut buf = Bytes::from(wire);
    let mut dec = FrameDecoder::new();
    let err = dec.decode_bytes(&mut buf).unwrap_err();
    assert!(!err.is_connection_error());
    assert_eq!(err.code(), ErrorCode::FRAME_SIZE_ERROR);
    assert_eq!(buf.len(), 17, "only the PING is left");
    assert!(dec.decode_bytes(&mut buf).unwrap().is_some());
}
