//! Helpers shared by the server tests: a client scripted with h2wire's own encoders.

#![allow(dead_code)]

use bytes::Bytes;
use h2wire::frame::PREFACE;
use h2wire::frame::{
    encode_header_block, encode_settings, Data, Frame, FrameDecoder, Setting, SettingId, StreamId,
};
use h2wire::hpack::{Decoder, Encoder};
use h2wire::server::{Config, Event, ServerConnection};
use h2wire::ErrorCode;

/// A scripted client: its HPACK state, and a decoder for the server's frames.
pub struct Client {
    pub enc: Encoder,
    pub dec: Decoder,
    pub frames: FrameDecoder,
}

/// The pseudo-header fields of a GET for `path`.
pub fn get(path: &str) -> Vec<(&'static str, String)> {
    vec![
        (":method", "GET".into()),
        (":scheme", "https".into()),
        (":authority", "example.com".into()),
        (":path", path.into()),
    ]
}

/// The pseudo-header fields of a POST to `path`.
pub fn post(path: &str) -> Vec<(&'static str, String)> {
    let mut f = get(path);
    f[0].1 = "POST".into();
    f
}

impl Client {
    pub fn new() -> Client {
        let mut frames = FrameDecoder::new();
        frames.set_max_frame_size(16_777_215);
        Client {
            enc: Encoder::new(),
            dec: Decoder::new(),
            frames,
        }
    }

    pub fn headers(&mut self, id: u32, fields: &[(&str, String)], end: bool) -> Vec<u8> {
        let mut block = Vec::new();
        self.enc
            .encode(fields.iter().map(|(n, v)| (*n, v.as_str())), &mut block);
        let mut out = Vec::new();
        encode_header_block(StreamId(id), &block, end, None, 16_384, &mut out);
        out
    }

    /// Every frame the server has to send now, decoded (header blocks through HPACK).
    pub fn read(&mut self, server: &mut ServerConnection) -> Vec<Frame<Bytes>> {
        let mut wire = Vec::new();
        while server.poll_transmit(&mut wire) > 0 {}
        let mut buf = Bytes::from(wire);
        let mut out = Vec::new();
        while let Some(f) = self.frames.decode_bytes(&mut buf).expect("server frame") {
            out.push(f);
        }
        assert!(buf.is_empty());
        out
    }

    pub fn fields(&mut self, block: &[u8]) -> Vec<(String, String)> {
        self.dec
            .decode_to_vec(block)
            .unwrap()
            .into_iter()
            .map(|(n, v)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
            .collect()
    }
}

/// A DATA frame on the wire.
pub fn data(id: u32, bytes: &[u8], end: bool) -> Vec<u8> {
    let mut out = Vec::new();
    Data {
        stream_id: StreamId(id),
        end_stream: end,
        data: bytes,
        pad_len: None,
    }
    .encode(&mut out);
    out
}

/// A SETTINGS frame on the wire.
pub fn settings(s: &[(SettingId, u32)]) -> Vec<u8> {
    let list: Vec<Setting> = s.iter().map(|&(id, value)| Setting { id, value }).collect();
    let mut out = Vec::new();
    encode_settings(&list, &mut out);
    out
}

/// A server past the handshake, its opening frames read.
pub fn open(cfg: Config, client_settings: &[(SettingId, u32)]) -> (ServerConnection, Client) {
    let mut server = ServerConnection::new(cfg);
    let mut c = Client::new();
    server.recv(PREFACE);
    server.recv(&settings(client_settings));
    let frames = c.read(&mut server);
    assert!(matches!(frames.last(), Some(Frame::Settings(s)) if s.ack));
    (server, c)
}

/// Drains the server's events.
pub fn events(server: &mut ServerConnection) -> Vec<Event> {
    std::iter::from_fn(|| server.poll_event()).collect()
}

/// The code of the first GOAWAY among `frames`.
pub fn goaway_code(frames: &[Frame<Bytes>]) -> Option<ErrorCode> {
    frames.iter().find_map(|f| match f {
        Frame::GoAway(g) => Some(g.code),
        _ => None,
    })
}

/// The code of the RST_STREAM on stream `id` among `frames`.
pub fn rst(frames: &[Frame<Bytes>], id: u32) -> Option<ErrorCode> {
    frames.iter().find_map(|f| match f {
        Frame::RstStream(r) if r.stream_id == StreamId(id) => Some(r.code),
        _ => None,
    })
}

/// Checks that the server failed with `code`: GOAWAY, event, done.
pub fn expect_conn_error(server: &mut ServerConnection, c: &mut Client, code: ErrorCode) {
    let frames = c.read(server);
    assert_eq!(goaway_code(&frames), Some(code), "{frames:?}");
    assert!(events(server)
        .iter()
        .any(|e| matches!(e, Event::ConnectionError(err) if err.code() == code)));
    assert!(server.is_done());
}

/// The stream ids of the DATA frames sent, in order.
pub fn data_order(frames: &[Frame<Bytes>]) -> Vec<u32> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Data(d) => Some(d.stream_id.0),
            _ => None,
        })
        .collect()
}

/// Answers each stream with 200 and `frames_each` full DATA frames' worth of body.
pub fn respond_all(server: &mut ServerConnection, ids: &[u32], frames_each: usize) {
    for &id in ids {
        server
            .send_response(StreamId(id), 200, &[] as &[(&str, &str)], false)
            .unwrap();
        server
            .send_data(
                StreamId(id),
                Bytes::from(vec![0u8; 16_384 * frames_each]),
                true,
            )
            .unwrap();
    }
}
