//! The SPDY/3.1 stream multiplexer of `speedy-net` (`spdy::mux`, the moby/spdystream and
//! Kubernetes way of using SPDY) on its connection loop, against a scripted peer over
//! an in-memory byte stream, with an application that opens, answers, reads (or stops
//! reading), echoes, finishes and resets streams. Time is tokio's paused clock: waits
//! for a peer that never answers cost nothing.

use crate::{app_headers, interesting_u32, peer_frame, Input};
use bytes::{Bytes, BytesMut};
use spdy::compress::{CompressionConfig, HeaderCompressor, HeaderDecompressor};
use spdy::frame::Frame;
use spdy::{Headers, Role, RstStatus, Version};
use speedy_net::spdy::mux::{Mux, MuxStream};
use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const V: Version = Version::V3_1;
/// How long (paused time) anything may wait before the harness stops waiting.
const PATIENCE: Duration = Duration::from_secs(120);
/// Streams the application handles at most.
const MAX_STREAMS: usize = 16;
/// Bytes the peer writes at most.
const MAX_WRITTEN: usize = 1 << 20;

/// What the peer has seen of the multiplexer's output.
#[derive(Default)]
struct Seen {
    /// Streams the multiplexer opened (client) or pushed, and streams it was opened on.
    ids: Vec<u32>,
    /// Streams the multiplexer ended its side of (FIN sent).
    fin: HashSet<u32>,
    /// The multiplexer sent GOAWAY.
    goaway: bool,
}

/// Reads and decodes everything the multiplexer writes: it must be valid SPDY/3.1, and
/// nothing may follow a stream's FIN on that stream but RST_STREAM.
async fn tap(mut rd: tokio::io::ReadHalf<tokio::io::DuplexStream>, seen: Rc<RefCell<Seen>>) {
    let mut dec = HeaderDecompressor::new(V, usize::MAX);
    let mut buf = BytesMut::new();
    loop {
        match tokio::time::timeout(PATIENCE, rd.read_buf(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => {}
            _ => return,
        }
        let mut bytes = buf.split().freeze();
        loop {
            let before = bytes.len();
            match Frame::decode(V, &mut bytes, &mut dec) {
                Ok(Some(f)) => note(&mut seen.borrow_mut(), f),
                Ok(None) => break,
                Err(e) => panic!("the multiplexer wrote a bad frame: {e:?}"),
            }
            assert!(bytes.len() < before);
        }
        buf.extend_from_slice(&bytes);
    }
}

fn note(s: &mut Seen, f: Frame) {
    let (id, fin) = match f {
        Frame::SynStream(syn) => {
            s.ids.push(syn.stream_id.0);
            (syn.stream_id.0, syn.fin)
        }
        Frame::SynReply { stream_id, fin, .. }
        | Frame::Headers { stream_id, fin, .. }
        | Frame::Data { stream_id, fin, .. } => (stream_id.0, fin),
        Frame::GoAway { .. } => {
            s.goaway = true;
            return;
        }
        _ => return,
    };
    assert!(!s.fin.contains(&id), "a frame on stream {id} after its FIN");
    if fin {
        s.fin.insert(id);
    }
}

/// The peer: frames from the script (one at a time, written as the multiplexer takes
/// them), pauses, and the end of its output.
async fn peer(
    mut wr: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    mut inp: Input<'_>,
    seen: Rc<RefCell<Seen>>,
    role: Role,
) {
    let mut comp = HeaderCompressor::new(V, CompressionConfig::default());
    let mut next_peer: u32 = if role == Role::Server { 1 } else { 2 };
    // Streams the peer opened, besides those the multiplexer did.
    let mut own = Vec::new();
    let (mut steps, mut written) = (0, 0);
    while !inp.is_empty() && steps < 256 && written < MAX_WRITTEN {
        steps += 1;
        let op = inp.byte();
        let mut pending = Vec::new();
        match op % 16 {
            12 => {
                tokio::time::sleep(Duration::from_millis(u64::from(inp.byte()) * 8)).await;
                continue;
            }
            13 => break,
            _ => {
                let ids = [&seen.borrow().ids[..], &own[..]].concat();
                if let Some(f) = peer_frame(&mut inp, V, op, &ids, &mut next_peer, &mut pending) {
                    if let Frame::SynStream(syn) = &f {
                        own.push(syn.stream_id.0);
                    }
                    f.encode(V, &mut comp, &mut pending);
                }
            }
        }
        written += pending.len();
        let write = wr.write_all(&pending);
        if !matches!(tokio::time::timeout(PATIENCE, write).await, Ok(Ok(()))) {
            break;
        }
        tokio::task::yield_now().await;
    }
    let _ = wr.shutdown().await;
}

/// How the application treats a stream, from one byte of the input.
#[derive(Clone, Copy)]
struct Manner(u8);

impl Manner {
    fn replies(self) -> bool {
        self.0 & 1 != 0
    }
    fn reply_fin(self) -> bool {
        self.0 & 2 != 0
    }
    fn echoes(self) -> bool {
        self.0 & 4 != 0
    }
    fn reads(self) -> bool {
        self.0 & 8 == 0
    }
    fn resets(self) -> bool {
        self.0 & 0x30 == 0x30
    }
    fn splits(self) -> bool {
        self.0 & 0x40 != 0
    }
}

/// One stream, handled as `m` says: answered, read to its end (or not read at all:
/// a reader that stops), echoed back, finished, reset after the first piece.
async fn handle(s: MuxStream, m: Manner, server: bool) {
    if server && m.replies() {
        let _ = s.reply(Headers::from_pairs([("streamtype", "data")]), m.reply_fin());
    }
    if !m.reads() {
        tokio::time::sleep(PATIENCE).await;
        return;
    }
    if m.splits() {
        let (tx, mut rx) = s.split();
        let mut n = 0;
        while let Ok(Some(Ok(b))) = tokio::time::timeout(PATIENCE, rx.recv()).await {
            n += b.len();
            if m.echoes() && tokio::time::timeout(PATIENCE, tx.send(b)).await.is_err() {
                break;
            }
        }
        let _ = tokio::time::timeout(PATIENCE, tx.send(Bytes::from(n.to_string()))).await;
        tx.finish();
        return;
    }
    let mut s = s;
    let mut first = true;
    while let Ok(Some(Ok(b))) = tokio::time::timeout(PATIENCE, s.recv()).await {
        if m.resets() && first {
            s.reset(RstStatus::CANCEL);
            return;
        }
        first = false;
        if m.echoes() && tokio::time::timeout(PATIENCE, s.send(b)).await.is_err() {
            break;
        }
    }
    s.finish();
}

/// The application: accepts streams the peer opens and, as a client, opens some of its
/// own first; each handled by [`handle`] in the manner the input gives.
async fn app(mux: &mut Mux, inp: &mut Input<'_>, role: Role) {
    let tasks = tokio::task::LocalSet::new();
    let manners: Vec<Manner> = (0..MAX_STREAMS).map(|_| Manner(inp.byte())).collect();
    if role == Role::Client {
        let ids = Vec::new();
        for (i, m) in manners.iter().take(inp.byte() as usize % 4).enumerate() {
            let headers = app_headers(V, inp, &ids);
            let opened = tokio::time::timeout(PATIENCE, mux.open(headers, i % 2 == 1)).await;
            let Ok(Ok(mut s)) = opened else { break };
            let m = *m;
            tasks.spawn_local(async move {
                let _ = tokio::time::timeout(PATIENCE, s.reply_headers()).await;
                let _ = tokio::time::timeout(PATIENCE, s.send(Bytes::from_static(b"hello"))).await;
                handle(s, m, false).await;
            });
        }
    }
    let mut accepted = 0;
    tasks
        .run_until(async {
            while let Ok(Some(s)) = tokio::time::timeout(PATIENCE, mux.accept()).await {
                let m = manners[accepted % MAX_STREAMS];
                accepted += 1;
                let server = role == Role::Server;
                tokio::task::spawn_local(handle(s, m, server));
            }
        })
        .await;
    let _ = tokio::time::timeout(PATIENCE, tasks).await;
}

/// The multiplexer as a server or client (first byte), with small or odd windows and
/// stream limits (second byte and on), against a scripted peer: the application's
/// manners (16 bytes), then the peer's script.
pub fn spdy_mux(data: &[u8]) {
    let mut inp = Input::new(data);
    let knobs = inp.byte();
    let role = if knobs & 1 == 0 {
        Role::Server
    } else {
        Role::Client
    };
    let mut cfg = spdy::Config::new(role, V);
    if knobs & 2 != 0 {
        cfg.initial_window = interesting_u32(&mut inp);
        cfg.session_window = interesting_u32(&mut inp);
        cfg.max_concurrent_streams = u32::from(inp.byte() % 4);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let (ours, theirs) = tokio::io::duplex(64 << 10);
        let (rd, wr) = tokio::io::split(theirs);
        let mut mux = Mux::start(Box::new(ours), cfg);
        let seen = Rc::new(RefCell::new(Seen::default()));
        let mut app_inp = Input::new(inp.bytes(MAX_STREAMS + 1 + 64));
        let script = Input::new(inp.rest());
        let app = app(&mut mux, &mut app_inp, role);
        tokio::join!(
            tap(rd, seen.clone()),
            peer(wr, script, seen.clone(), role),
            app
        );
        let _ = tokio::time::timeout(PATIENCE, mux.close()).await;
    });
}
