//! Heap bytes per idle server session, zlib included.
//!
//!     cargo run --release -p spdy --example session_memory [N]
//!
//! Creates N (default 1000) server sessions; each receives a real client's opening bytes
//! (SETTINGS, in SPDY/3.1 the session WINDOW_UPDATE, and a SYN_STREAM with a browser-like
//! request header block), answers it (SYN_REPLY, a small body, FIN) and writes everything
//! out. The sessions are then idle: no stream open, both zlib contexts alive. A counting
//! global allocator measures the live heap they hold; zlib allocates through Rust's global
//! allocator in this crate (src/zlib.rs), so its state is counted. Target: ≤ 64 KiB.
//! Then each session is parked (`Session::park`, what a server does to a session quiet
//! for a while) and the heap is counted again.

use bytes::{Bytes, BytesMut};
use spdy::compress::{CompressionConfig, HeaderCompressor, HeaderDecompressor};
use spdy::session::{Config, Event, OutBuf, Role, Session};
use spdy::{http, Headers, Version};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

/// Counts live heap bytes.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            LIVE.fetch_add(l.size(), Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(l);
        if !p.is_null() {
            LIVE.fetch_add(l.size(), Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        LIVE.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = System.realloc(p, l, new);
        if !q.is_null() {
            LIVE.fetch_sub(l.size(), Relaxed);
            LIVE.fetch_add(new, Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> usize {
    LIVE.load(Relaxed)
}

fn request(v: Version) -> Headers {
    let extra = Headers::from_pairs([
        (
            "user-agent",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/31.0.1650.63 Safari/537.36",
        ),
        ("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
        ("accept-encoding", "gzip,deflate,sdch"),
        ("accept-language", "en-US,en;q=0.8"),
        ("cookie", "PREF=ID=4f2a9c1e5b2d8f4a:FF=0:TM=1386950211; NID=67=a8Bz3kQ9xYwP"),
    ]);
    http::request_headers(v, "GET", "https", "www.example.com", "/index.html", &extra)
}

/// What a fresh client writes for one request (identical for every fresh client).
fn client_opening(v: Version) -> Vec<u8> {
    let mut c = Session::new(Config::new(Role::Client, v));
    c.open(request(v), 0, true).unwrap();
    let mut out = OutBuf::new();
    while c.poll_transmit(&mut out) {}
    out.take_all()
}

/// A server session that handled one request and is now idle.
fn idle_server(v: Version, opening: &[u8], body: &Bytes) -> Session {
    let mut s = Session::new(Config::new(Role::Server, v));
    let now = Instant::now();
    let mut inbox = BytesMut::from(opening);
    s.recv(&mut inbox, now);
    let mut streams = 0;
    while let Some(e) = s.poll_event() {
        if let Event::Stream { id, .. } = e {
            let extra = Headers::from_pairs([
                ("content-type", "text/html; charset=utf-8"),
                ("content-length", "1024"),
                ("cache-control", "private, max-age=0"),
                ("date", "Fri, 13 Dec 2013 16:05:11 GMT"),
                ("server", "speedy"),
            ]);
            s.reply(id, http::response_headers(v, 200, &extra), false)
                .unwrap();
            s.send_data(id, body.clone(), true).unwrap();
            streams += 1;
        }
    }
    assert_eq!(streams, 1, "the request arrived");
    let mut out = OutBuf::new();
    while s.poll_transmit(&mut out) {}
    drop(out);
    while s.poll_event().is_some() {}
    assert_eq!(s.open_streams(), 0, "the session is idle");
    s
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("N"))
        .unwrap_or(1000);
    let body = Bytes::from(vec![b'x'; 1024]);
    println!("heap held by idle server sessions (each answered one request), N = {n}");
    for v in [Version::V3_1, Version::V3, Version::V2] {
        let opening = client_opening(v);
        let before = live();
        let mut sessions: Vec<Session> = (0..n).map(|_| idle_server(v, &opening, &body)).collect();
        let per = (live() - before) / n;
        sessions.iter_mut().for_each(Session::park);
        let parked = (live() - before) / n;
        println!(
            "  {:<8} {:>7} bytes per idle session ({:.1} KiB; target 64 KiB: {}), \
             {parked} bytes parked ({:.1} KiB)",
            v.to_string(),
            per,
            per as f64 / 1024.0,
            if per <= 64 * 1024 { "ok" } else { "OVER" },
            parked as f64 / 1024.0,
        );
        drop(sessions);
    }

    // For reference: the two zlib contexts alone, after one block each.
    let v = Version::V3_1;
    let before = live();
    let mut comp = HeaderCompressor::new(v, CompressionConfig::default());
    let mut block = Vec::new();
    comp.compress(&request(v), &mut block);
    let deflate = live() - before - block.capacity();
    let before = live();
    let mut dec = HeaderDecompressor::new(v, 64 * 1024);
    // A peer compressing like Chromium (windowBits 11).
    dec.decompress(&block).unwrap();
    let inflate = live() - before;
    println!(
        "  of which the header compressor (zlib deflate level 9, windowBits 11, memLevel 1, \
         plus its scratch buffer) holds {deflate} bytes"
    );
    println!(
        "  and the header decompressor (zlib inflate of a windowBits-11 peer, plus its \
         scratch buffer) holds {inflate} bytes"
    );
}
