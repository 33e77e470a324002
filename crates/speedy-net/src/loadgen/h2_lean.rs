//! The load generator's HTTP/2 connection, on `h2wire`'s frames and HPACK: one task
//! reads what the socket has, handles every frame in it, starts the next requests in
//! the same turn and writes everything it produced in one write. No stream object,
//! channel or waker per request (the `h2` crate's client kept the generator at 100% of
//! its core while the server it measured, h2o, had CPU to spare).
//!
//! It speaks the client side of RFC 9113 that a GET-only generator needs: the preface
//! and SETTINGS (push off, Chromium's receive windows, frames up to 1 MiB), requests as
//! HEADERS with END_STREAM, the peer's SETTINGS acknowledged and its
//! MAX_CONCURRENT_STREAMS and HEADER_TABLE_SIZE obeyed, PINGs answered, receive windows
//! given back at half use, RST_STREAM and GOAWAY ending the streams they name; a frame
//! or HPACK error ends the connection with GOAWAY and the code.

use super::{InFlight, Pace};
use crate::protocol::{H2_SESSION_WINDOW, H2_STREAM_WINDOW};
use crate::transport::io::BoxIo;
use bytes::{Buf, BytesMut};
use h2wire::frame::{
    encode_header_block, encode_settings, encode_settings_ack, Frame, FrameDecoder, GoAway, Ping,
    RstStream, Setting, SettingId, StreamId, WindowUpdate, PREFACE,
};
use h2wire::hpack::{Decoder, Encoder};
use h2wire::{ErrorCode, FrameError};
use spdy::url::Url;
use std::collections::HashMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// SETTINGS_MAX_FRAME_SIZE the generator announces: a server that honours it frames a
/// download in fewer, larger DATA frames (RFC 9113 §6.5.2 allows up to 16 MiB).
pub(super) const MAX_FRAME: u32 = 1 << 20;
/// The window every stream starts with at the peer (RFC 9113 §6.9.2).
const DEFAULT_WINDOW: u32 = 65_535;

/// An HTTP/2 connection not yet driven: its socket and the request it repeats.
pub(super) struct Lean {
    io: BoxIo,
    request: Vec<(String, String)>,
}

impl Lean {
    /// A connection on `io` (TCP, or TLS that chose `h2`) repeating a GET of `url`.
    pub(super) fn new(io: BoxIo, url: &Url) -> Lean {
        let request = [
            (":method", "GET".to_string()),
            (":scheme", url.scheme.clone()),
            (":authority", url.authority()),
            (":path", url.path.clone()),
            ("user-agent", "speedy-bench".to_string()),
            ("accept", "*/*".to_string()),
        ];
        Lean {
            io,
            request: request.map(|(n, v)| (n.to_string(), v)).to_vec(),
        }
    }

    /// Runs the connection until `pace` starts no more requests and every started one
    /// has ended (or the connection has).
    pub(super) async fn drive(self, in_flight: usize, pace: &mut impl Pace) {
        let Lean { mut io, request } = self;
        let mut c = Conn::new(pace, request, in_flight.max(1));
        let mut rbuf = BytesMut::with_capacity(64 * 1024);
        let mut frames = FrameDecoder::new();
        frames.set_max_frame_size(MAX_FRAME);
        c.fill();
        loop {
            if !c.out.is_empty() {
                if io.write_all(&c.out).await.is_err() {
                    break;
                }
                c.out.clear();
            }
            if c.finished() {
                return;
            }
            if rbuf.capacity() - rbuf.len() < 16 * 1024 {
                rbuf.reserve(64 * 1024);
            }
            match io.read_buf(&mut rbuf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if !c.on_bytes(&mut frames, &mut rbuf) {
                // A connection error: its GOAWAY goes out before the connection ends.
                let _ = io.write_all(&c.out).await;
                return;
            }
        }
        c.end_all("connection closed");
    }
}

/// A field block arriving in HEADERS and CONTINUATION frames.
struct Block {
    stream: u32,
    end_stream: bool,
    bytes: Vec<u8>,
}

struct Conn<'p, P: Pace> {
    pace: &'p mut P,
    request: Vec<(String, String)>,
    encoder: Encoder,
    decoder: Decoder,
    /// Requests to keep in flight, and the most the peer allows.
    want: usize,
    peer_max: usize,
    peer_max_frame: u32,
    next_id: u32,
    /// Requests in flight, each with its body bytes not yet given back as window.
    open: HashMap<u32, (InFlight, u32)>,
    block: Option<Block>,
    /// Connection-level DATA not yet given back as window.
    unacked: u32,
    /// The pace said stop, or the peer is going away: no more requests.
    stopped: bool,
    out: Vec<u8>,
}

impl<'p, P: Pace> Conn<'p, P> {
    /// The connection's opening: the preface, our SETTINGS, the session window.
    fn new(pace: &'p mut P, request: Vec<(String, String)>, want: usize) -> Conn<'p, P> {
        let mut out = PREFACE.to_vec();
        let settings = [
            Setting {
                id: SettingId::ENABLE_PUSH,
                value: 0,
            },
            Setting {
                id: SettingId::INITIAL_WINDOW_SIZE,
                value: H2_STREAM_WINDOW,
            },
            Setting {
                id: SettingId::MAX_FRAME_SIZE,
                value: MAX_FRAME,
            },
        ];
        encode_settings(&settings, &mut out);
        WindowUpdate {
            stream_id: StreamId(0),
            increment: H2_SESSION_WINDOW - DEFAULT_WINDOW,
        }
        .encode(&mut out);
        Conn {
            pace,
            request,
            encoder: Encoder::new(),
            decoder: Decoder::new(),
            want,
            peer_max: usize::MAX,
            peer_max_frame: h2wire::frame::DEFAULT_MAX_FRAME_SIZE,
            next_id: 1,
            open: HashMap::with_capacity(want),
            block: None,
            unacked: 0,
            stopped: false,
            out,
        }
    }

    fn finished(&self) -> bool {
        self.stopped && self.open.is_empty()
    }

    /// Starts requests while fewer than asked for (and than the peer allows) are in
    /// flight and the pace says to.
    fn fill(&mut self) {
        while !self.stopped && self.open.len() < self.want.min(self.peer_max) {
            let Some(started) = self.pace.start() else {
                self.stopped = true;
                return;
            };
            if self.next_id > StreamId::MAX.0 {
                self.stopped = true;
                self.pace.done(started, Err("connection closed".into()));
                return;
            }
            let id = self.next_id;
            self.next_id += 2;
            let mut block = Vec::with_capacity(64);
            let fields = self.request.iter().map(|(n, v)| (n.as_str(), v.as_str()));
            self.encoder.encode(fields, &mut block);
            encode_header_block(
                StreamId(id),
                &block,
                true,
                None,
                self.peer_max_frame,
                &mut self.out,
            );
            self.open.insert(id, (InFlight::new(started), 0));
        }
    }

    /// A request ended: told to the pace.
    fn end(&mut self, id: u32, error: Option<String>) {
        let Some((r, _)) = self.open.remove(&id) else {
            return;
        };
        self.pace.done(r.started, r.outcome(error));
    }

    /// Ends every request in flight with `why`; no more start.
    fn end_all(&mut self, why: &str) {
        self.stopped = true;
        let ids: Vec<u32> = self.open.keys().copied().collect();
        for id in ids {
            self.end(id, Some(why.to_string()));
        }
    }

    /// A connection error: GOAWAY with `code`, every request ended.
    fn fail(&mut self, code: ErrorCode) {
        GoAway {
            last_stream_id: StreamId(0),
            code,
            debug_data: &b""[..],
        }
        .encode(&mut self.out);
        self.end_all(&format!("h2: {code}"));
    }

    /// Handles every whole frame in `rbuf` and starts the requests that frees room
    /// for; `false` after a connection error.
    fn on_bytes(&mut self, frames: &mut FrameDecoder, rbuf: &mut BytesMut) -> bool {
        let mut used = 0;
        let ok = loop {
            match frames.decode(&rbuf[used..]) {
                Ok(Some((frame, n))) => {
                    used += n;
                    if !self.on_frame(frame) {
                        break false;
                    }
                }
                Ok(None) => break true,
                Err(FrameError::Stream {
                    stream_id,
                    code,
                    frame_len,
                    ..
                }) => {
                    used += frame_len;
                    RstStream { stream_id, code }.encode(&mut self.out);
                    self.end(stream_id.0, Some("stream reset".into()));
                }
                Err(e) => {
                    self.fail(e.code());
                    break false;
                }
            }
        };
        rbuf.advance(used);
        if ok {
            self.fill();
        }
        ok
    }

    /// Handles one frame; `false` after a connection error.
    fn on_frame(&mut self, frame: Frame<&[u8]>) -> bool {
        match frame {
            Frame::Data(d) => self.on_data(
                d.stream_id.0,
                d.flow_controlled_len(),
                d.data.len(),
                d.end_stream,
            ),
            Frame::Headers(h) => {
                let block = Block {
                    stream: h.stream_id.0,
                    end_stream: h.end_stream,
                    bytes: h.fragment.to_vec(),
                };
                self.block = Some(block);
                if h.end_headers {
                    return self.on_block();
                }
            }
            Frame::Continuation(c) => {
                if let Some(b) = &mut self.block {
                    b.bytes.extend_from_slice(c.fragment);
                }
                if c.end_headers {
                    return self.on_block();
                }
            }
            Frame::Settings(s) if !s.ack => {
                for p in s.iter() {
                    match p.id {
                        SettingId::MAX_CONCURRENT_STREAMS => self.peer_max = p.value as usize,
                        SettingId::HEADER_TABLE_SIZE => {
                            self.encoder.set_peer_table_size(p.value as usize)
                        }
                        SettingId::MAX_FRAME_SIZE => self.peer_max_frame = p.value,
                        _ => {}
                    }
                }
                encode_settings_ack(&mut self.out);
            }
            Frame::Ping(p) if !p.ack => Ping {
                ack: true,
                payload: p.payload,
            }
            .encode(&mut self.out),
            Frame::RstStream(r) => self.end(r.stream_id.0, Some("stream reset".into())),
            Frame::GoAway(g) => {
                self.stopped = true;
                let unprocessed: Vec<u32> = self
                    .open
                    .keys()
                    .copied()
                    .filter(|&id| id > g.last_stream_id.0)
                    .collect();
                for id in unprocessed {
                    self.end(id, Some("stream reset".into()));
                }
            }
            // Push was refused in our SETTINGS (RFC 9113 §8.4).
            Frame::PushPromise(_) => {
                self.fail(ErrorCode::PROTOCOL_ERROR);
                return false;
            }
            _ => {}
        }
        true
    }

    /// DATA of `len` bytes (`window` with padding) on `id`: counted, and windows given
    /// back once half used.
    fn on_data(&mut self, id: u32, window: u32, len: usize, end_stream: bool) {
        self.unacked += window;
        if self.unacked >= H2_SESSION_WINDOW / 2 {
            let increment = std::mem::take(&mut self.unacked);
            WindowUpdate {
                stream_id: StreamId(0),
                increment,
            }
            .encode(&mut self.out);
        }
        if let Some((r, unacked)) = self.open.get_mut(&id) {
            r.bytes += len as u64;
            *unacked += window;
            if *unacked >= H2_STREAM_WINDOW / 2 && !end_stream {
                let increment = std::mem::take(unacked);
                WindowUpdate {
                    stream_id: StreamId(id),
                    increment,
                }
                .encode(&mut self.out);
            }
        }
        if end_stream {
            self.end(id, None);
        }
    }

    /// A whole field block: the response's status (a 1xx head is not the response),
    /// or trailers; decoded whatever its stream, to keep the HPACK table in step.
    fn on_block(&mut self) -> bool {
        let Some(b) = self.block.take() else {
            return true;
        };
        let mut status = None;
        let decoded = self.decoder.decode(&b.bytes, |n, v| {
            if n == b":status" {
                status = std::str::from_utf8(v)
                    .ok()
                    .and_then(|s| s.parse::<u16>().ok());
            }
        });
        if let Err(e) = decoded {
            if e.is_connection_error() {
                self.fail(ErrorCode::COMPRESSION_ERROR);
                return false;
            }
            RstStream {
                stream_id: StreamId(b.stream),
                code: ErrorCode::CANCEL,
            }
            .encode(&mut self.out);
            self.end(b.stream, Some(format!("h2: {e}")));
            return true;
        }
        if let Some((r, _)) = self.open.get_mut(&b.stream) {
            if let Some(s) = status.filter(|s| *s >= 200) {
                r.status = Some(s);
            }
        }
        if b.end_stream {
            self.end(b.stream, None);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use h2wire::frame::{encode_header_block, Data, RstStream};
    use std::time::Instant;
    use tokio::io::DuplexStream;

    /// Starts `n` requests, keeps how each ended.
    struct Collect(usize, Vec<Result<(u16, u64), String>>);

    impl Pace for Collect {
        fn start(&mut self) -> Option<Instant> {
            self.0 = self.0.checked_sub(1)?;
            Some(Instant::now())
        }
        fn done(&mut self, _: Instant, r: Result<(u16, u64), String>) {
            self.1.push(r);
        }
    }

    /// Reads from the peer's end until `want` frames (after the preface) have come;
    /// returns them.
    async fn frames(
        peer: &mut DuplexStream,
        buf: &mut Vec<u8>,
        want: usize,
    ) -> Vec<Frame<Vec<u8>>> {
        let mut dec = FrameDecoder::new();
        let mut got = Vec::new();
        loop {
            let mut used = 0;
            while let Some((f, n)) = dec.decode(&buf[used..]).unwrap() {
                got.push(f.map(|b| b.to_vec()));
                used += n;
            }
            buf.drain(..used);
            if got.len() >= want {
                return got;
            }
            let mut chunk = [0u8; 4096];
            let n = peer.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the generator closed early");
            buf.extend_from_slice(&chunk[..n]);
        }
    }

    #[tokio::test]
    async fn speaks_the_client_side_a_get_generator_needs() {
        let (mine, mut peer) = tokio::io::duplex(1 << 20);
        let url: Url = "http://example.test/x.css".parse().unwrap();
        let lean = Lean::new(Box::new(mine), &url);
        let gen = tokio::spawn(async move {
            let mut pace = Collect(3, vec![]);
            lean.drive(3, &mut pace).await;
            pace.1
        });
        let mut buf = vec![0u8; PREFACE.len()];
        peer.read_exact(&mut buf).await.unwrap();
        assert_eq!(buf, PREFACE);
        buf.clear();
        // SETTINGS, the session's WINDOW_UPDATE, three requests.
        let got = frames(&mut peer, &mut buf, 5).await;
        let Frame::Settings(s) = &got[0] else {
            panic!("{got:?}")
        };
        let push = s
            .iter()
            .find(|p| p.id == SettingId::ENABLE_PUSH)
            .map(|p| p.value);
        assert_eq!(push, Some(0), "push refused");
        assert!(
            matches!(&got[1], Frame::WindowUpdate(w) if w.increment == H2_SESSION_WINDOW - DEFAULT_WINDOW)
        );
        let mut hpack = Decoder::new();
        for (i, f) in got[2..].iter().enumerate() {
            let Frame::Headers(h) = f else {
                panic!("{f:?}")
            };
            assert_eq!(h.stream_id, StreamId(1 + 2 * i as u32));
            assert!(h.end_stream && h.end_headers);
            let fields = hpack.decode_to_vec(&h.fragment).unwrap();
            assert!(
                fields.contains(&(b":path".to_vec(), b"/x.css".to_vec())),
                "{fields:?}"
            );
            assert!(fields.contains(&(b":authority".to_vec(), b"example.test".to_vec())));
        }
        // The peer: its SETTINGS and a PING; stream 1 answered with a head split over
        // CONTINUATION frames and 5 bytes; stream 3 reset; GOAWAY naming stream 3 last.
        let mut out = Vec::new();
        encode_settings(
            &[Setting {
                id: SettingId::MAX_CONCURRENT_STREAMS,
                value: 100,
            }],
            &mut out,
        );
        Ping {
            ack: false,
            payload: *b"pingpong",
        }
        .encode(&mut out);
        let mut block = Vec::new();
        Encoder::new().encode(
            [(":status", "200"), ("content-type", "text/css")],
            &mut block,
        );
        encode_header_block(StreamId(1), &block, false, None, 4, &mut out);
        Data {
            stream_id: StreamId(1),
            end_stream: true,
            data: &b"hello"[..],
            pad_len: None,
        }
        .encode(&mut out);
        RstStream {
            stream_id: StreamId(3),
            code: ErrorCode::REFUSED_STREAM,
        }
        .encode(&mut out);
        GoAway {
            last_stream_id: StreamId(3),
            code: ErrorCode::NO_ERROR,
            debug_data: &b""[..],
        }
        .encode(&mut out);
        peer.write_all(&out).await.unwrap();
        // Our SETTINGS acknowledged, the PING answered with its payload.
        let got = frames(&mut peer, &mut buf, 2).await;
        assert!(matches!(&got[0], Frame::Settings(s) if s.ack), "{got:?}");
        assert!(
            matches!(&got[1], Frame::Ping(p) if p.ack && &p.payload == b"pingpong"),
            "{got:?}"
        );
        let results = gen.await.unwrap();
        assert_eq!(
            results,
            vec![
                Ok((200, 5)),
                Err("stream reset".into()),
                Err("stream reset".into())
            ]
        );
    }

    #[tokio::test]
    async fn a_push_promise_ends_the_connection_with_protocol_error() {
        let (mine, mut peer) = tokio::io::duplex(1 << 20);
        let url: Url = "http://example.test/".parse().unwrap();
        let lean = Lean::new(Box::new(mine), &url);
        let gen = tokio::spawn(async move {
            let mut pace = Collect(1, vec![]);
            lean.drive(1, &mut pace).await;
            pace.1
        });
        let mut buf = vec![0u8; PREFACE.len()];
        peer.read_exact(&mut buf).await.unwrap();
        buf.clear();
        frames(&mut peer, &mut buf, 3).await;
        let mut out = Vec::new();
        h2wire::frame::encode_push_promise_block(
            StreamId(1),
            StreamId(2),
            &[0x82],
            16_384,
            &mut out,
        );
        peer.write_all(&out).await.unwrap();
        let got = frames(&mut peer, &mut buf, 1).await;
        assert!(
            matches!(&got[0], Frame::GoAway(g) if g.code == ErrorCode::PROTOCOL_ERROR),
            "{got:?}"
        );
        assert_eq!(gen.await.unwrap(), vec![Err("h2: PROTOCOL_ERROR".into())]);
    }
}
