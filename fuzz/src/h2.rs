//! `h2wire`'s server connection (the HTTP/2 side of `speedy serve`) against a client
//! that writes arbitrary bytes, optionally after a valid preface and SETTINGS, in
//! arbitrary chunkings, while the application answers every request (small bodies,
//! pushes, resets, trailers) and gives request-body windows back. It must never panic
//! or hang, and everything it writes must be well-formed HTTP/2: each frame decodes with
//! `h2wire`'s own decoder (any payload size up to the largest frame; CONTINUATION only
//! where it belongs).

use bytes::Bytes;
use h2wire::frame::{FrameDecoder, StreamId, MAX_MAX_FRAME_SIZE, PREFACE};
use h2wire::server::{Config, Event, ServerConnection};
use h2wire::ErrorCode;

/// Reads and transmit turns at most per input (the bytes bound it anyway).
const MAX_CHUNKS: usize = 512;

/// Runs one input: knob byte, chunk byte, then the client's bytes.
pub fn h2_server(data: &[u8]) {
    let (knobs, chunk, body) = match data {
        [k, c, rest @ ..] => (*k, usize::from(*c % 64) + 1, rest),
        _ => return,
    };
    let mut conn = ServerConnection::new(Config {
        max_concurrent_streams: [100, 1, 3, 0][usize::from(knobs & 3)],
        max_header_list_size: [65_536, 64, 1024, 16_384][usize::from((knobs >> 2) & 3)],
        max_pending_resets: [200, 2][usize::from((knobs >> 6) & 1)],
        ..Config::default()
    });
    let mut wire = Vec::new();
    if knobs & 0x10 != 0 {
        wire.extend_from_slice(PREFACE);
        wire.extend_from_slice(&[0, 0, 0, 0x4, 0, 0, 0, 0, 0]);
    }
    wire.extend_from_slice(body);
    let mut out = Vec::new();
    let mut check = FrameDecoder::new();
    check.set_max_frame_size(MAX_MAX_FRAME_SIZE);
    let mut checked = 0;
    for piece in wire.chunks(chunk).take(MAX_CHUNKS) {
        conn.recv(piece);
        answer(&mut conn, knobs);
        for _ in 0..1000 {
            if conn.poll_transmit(&mut out) == 0 {
                break;
            }
        }
        // Whole frames written so far must decode.
        while let Some((_, used)) = check
            .decode(&out[checked..])
            .unwrap_or_else(|e| panic!("the server wrote a bad frame: {e:?}"))
        {
            checked += used;
        }
        if conn.is_done() {
            break;
        }
    }
}

/// Answers what the client asked: every request gets a head and a body (or a push
/// before it, a reset, trailers, as `knobs` says); request data is released.
fn answer(conn: &mut ServerConnection, knobs: u8) {
    while let Some(ev) = conn.poll_event() {
        match ev {
            Event::Request { stream, .. } => match stream.0 % 4 {
                1 if knobs & 0x20 != 0 => {
                    let req = [
                        (":method", "GET"),
                        (":scheme", "https"),
                        (":authority", "a"),
                        (":path", "/p"),
                    ];
                    if let Ok(p) = conn.push(stream, &req) {
                        let _ = conn.send_response(p, 200, &[("content-length", "3")], false);
                        let _ = conn.send_data(p, Bytes::from_static(b"abc"), true);
                    }
                    respond(conn, stream, 20_000);
                }
                3 if knobs & 0x80 != 0 => conn.reset(stream, ErrorCode::CANCEL),
                _ => respond(conn, stream, 10),
            },
            Event::Data { stream, data, .. } => conn.release_capacity(stream, data.len()),
            _ => {}
        }
    }
}

fn respond(conn: &mut ServerConnection, stream: StreamId, len: usize) {
    if conn
        .send_response(stream, 200, &[("content-type", "text/plain")], false)
        .is_ok()
    {
        let _ = conn.send_data(stream, Bytes::from(vec![b'x'; len]), false);
        let _ = conn.send_trailers(stream, &[("x-end", "1")]);
    }
}
