//! Streaming through `speedy serve`: a 1 GiB file goes out over SPDY/3.1, h2 and
//! HTTP/1.1 without the server ever holding it (its peak RSS stays under 64 MiB), and a
//! reader that stops reading holds the server back (it stops reading the file) instead of
//! making it buffer. Files above the in-memory cache size (16 MiB) arrive intact.

mod support;

use sha2::{Digest, Sha256};
use speedy_net::client::{Client, ClientConfig, ClientRequest, Protocol};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{proc_rchar, proc_status_kib, Server, TempDir};

const GIB: u64 = 1 << 30;
/// The server's peak RSS while streaming must stay under this (the bound).
const RSS_LIMIT_KIB: u64 = 64 * 1024;
/// Without backpressure a stalled reader lets the server read the whole 1 GiB file in
/// seconds. With it, what the server may read is bounded by the stream's flow-control
/// window (1 MiB for our client; curl's h2 window is 32 MiB), the socket buffers on
/// loopback (a few MiB each way) and the per-stream queue (128 KiB): 64 MiB leaves room
/// for all of them and is still 16 times less than the file.
const STALLED_READ_LIMIT: u64 = 64 << 20;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A site with a sparse 1 GiB file (no disk used; reads return zeros).
fn gib_site() -> TempDir {
    let d = TempDir::new("stream");
    let f = std::fs::File::create(d.join("big.bin")).expect("create");
    f.set_len(GIB).expect("set_len");
    d
}

fn port(addr: &str) -> u16 {
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

/// Downloads `path` over SPDY/3.1 with speedy's client; returns (bytes, sha256 hex).
fn spdy_download(addr: &str, path: &str) -> (u64, String) {
    runtime().block_on(async {
        let cfg = ClientConfig {
            protocol: Some(Protocol::Spdy(spdy::Version::V3_1)),
            ..Default::default()
        };
        let c = Client::connect("http", "127.0.0.1", port(addr), &cfg)
            .await
            .expect("connect");
        let mut r = c.request(ClientRequest::get(path)).await.expect("request");
        assert_eq!(r.status, 200);
        let mut n = 0u64;
        let mut h = Sha256::new();
        while let Some(chunk) = r.body.chunk().await {
            let chunk = chunk.expect("body chunk");
            n += chunk.len() as u64;
            h.update(&chunk);
        }
        (n, hex::encode(h.finalize()))
    })
}

/// Runs curl (`--http1.1` or `--http2-prior-knowledge`) on `path` with `extra` options;
/// returns its standard output, failing the test if curl failed.
fn curl(addr: &str, path: &str, proto_flag: &str, extra: &[&str]) -> Vec<u8> {
    let out = Command::new("curl")
        .args(["-sS", "--fail", proto_flag])
        .args(extra)
        .arg(format!("http://{addr}{path}"))
        .output()
        .expect("run curl");
    assert!(
        out.status.success(),
        "curl {proto_flag}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Downloads with curl, returning the bytes.
fn curl_download(addr: &str, path: &str, proto_flag: &str) -> Vec<u8> {
    curl(addr, path, proto_flag, &["-o", "-"])
}

/// Counts the bytes curl downloads without keeping them.
fn curl_count(addr: &str, path: &str, proto_flag: &str) -> u64 {
    let out = curl(
        addr,
        path,
        proto_flag,
        &["-o", "/dev/null", "-w", "%{size_download}"],
    );
    String::from_utf8_lossy(&out)
        .trim()
        .parse()
        .expect("size_download")
}

#[test]
fn one_gib_streams_over_every_protocol_in_bounded_memory() {
    let site = gib_site();
    let s = Server::start(&["--root", site.to_str().unwrap()]);
    let (n, _) = spdy_download(&s.addr, "/big.bin");
    assert_eq!(n, GIB, "SPDY/3.1 bytes");
    assert_eq!(
        curl_count(&s.addr, "/big.bin", "--http2-prior-knowledge"),
        GIB,
        "h2 bytes"
    );
    assert_eq!(
        curl_count(&s.addr, "/big.bin", "--http1.1"),
        GIB,
        "HTTP/1.1 bytes"
    );
    let peak = proc_status_kib(s.pid(), "VmHWM");
    eprintln!("server peak RSS after 3 GiB streamed: {peak} KiB");
    assert!(
        peak < RSS_LIMIT_KIB,
        "server peak RSS {peak} KiB ≥ {RSS_LIMIT_KIB} KiB"
    );
}

/// Starts a download that reads `first` bytes and then stops reading; returns how much
/// the server read (files and sockets) in the 2 s after the reader stalled.
fn stalled_reader_lets_server_read(s: &Server, start: impl FnOnce() -> Box<dyn FnOnce()>) -> u64 {
    let finish = start();
    std::thread::sleep(Duration::from_millis(500));
    let before = proc_rchar(s.pid());
    std::thread::sleep(Duration::from_secs(2));
    let after = proc_rchar(s.pid());
    finish();
    after - before
}

#[test]
fn a_reader_that_stops_holds_the_server_back() {
    let site = gib_site();
    let s = Server::start(&["--root", site.to_str().unwrap()]);
    let addr = s.addr.clone();

    // HTTP/1.1: a raw socket that sends the request and never reads.
    let a = addr.clone();
    let read_h1 = stalled_reader_lets_server_read(&s, move || {
        let mut sock = std::net::TcpStream::connect(&a).unwrap();
        write!(sock, "GET /big.bin HTTP/1.1\r\nHost: {a}\r\n\r\n").unwrap();
        let mut first = [0u8; 4096];
        let _ = sock.read(&mut first).unwrap();
        Box::new(move || drop(sock))
    });

    // h2: curl limited to 64 KiB/s (it stops reading between slices).
    let a = addr.clone();
    let read_h2 = stalled_reader_lets_server_read(&s, move || {
        let mut child = Command::new("curl")
            .args([
                "-sS",
                "--http2-prior-knowledge",
                "--limit-rate",
                "64K",
                "-o",
                "/dev/null",
            ])
            .arg(format!("http://{a}/big.bin"))
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        Box::new(move || {
            let _ = child.kill();
            let _ = child.wait();
        })
    });

    // SPDY/3.1: speedy's client reads 1 MiB of the body, then stops consuming it (no
    // WINDOW_UPDATE goes back).
    let a = addr.clone();
    let read_spdy = stalled_reader_lets_server_read(&s, move || {
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            runtime().block_on(async {
                let cfg = ClientConfig {
                    protocol: Some(Protocol::Spdy(spdy::Version::V3_1)),
                    ..Default::default()
                };
                let c = Client::connect("http", "127.0.0.1", port(&a), &cfg)
                    .await
                    .unwrap();
                let mut r = c.request(ClientRequest::get("/big.bin")).await.unwrap();
                let mut got = 0;
                while got < (1 << 20) {
                    got += r.body.chunk().await.unwrap().unwrap().len();
                }
                let deadline = Instant::now() + Duration::from_secs(10);
                while stop_rx.try_recv().is_err() && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                drop(r);
            })
        });
        Box::new(move || {
            let _ = stop_tx.send(());
            t.join().unwrap();
        })
    });

    eprintln!("server reads while the reader stalled: http/1.1 {read_h1} B, h2 {read_h2} B, spdy/3.1 {read_spdy} B");
    for (p, n) in [
        ("http/1.1", read_h1),
        ("h2", read_h2),
        ("spdy/3.1", read_spdy),
    ] {
        assert!(
            n < STALLED_READ_LIMIT,
            "{p}: server read {n} bytes while the reader stalled"
        );
    }
    let peak = proc_status_kib(s.pid(), "VmHWM");
    assert!(
        peak < RSS_LIMIT_KIB,
        "server peak RSS {peak} KiB ≥ {RSS_LIMIT_KIB} KiB"
    );
}

#[test]
fn files_above_the_cache_size_stream_intact() {
    let site = TempDir::new("stream-intact");
    // 20 MiB + 123 bytes of a pattern: larger than the 16 MiB cache, not a chunk multiple.
    let data: Vec<u8> = (0..(20u32 << 20) + 123)
        .map(|i| (i.wrapping_mul(2654435761) >> 11) as u8)
        .collect();
    std::fs::File::create(site.join("f.bin"))
        .unwrap()
        .write_all(&data)
        .unwrap();
    let want = hex::encode(Sha256::digest(&data));
    let s = Server::start(&["--root", site.to_str().unwrap()]);
    let (n, got) = spdy_download(&s.addr, "/f.bin");
    assert_eq!(
        (n, got.as_str()),
        (data.len() as u64, want.as_str()),
        "spdy/3.1"
    );
    for flag in ["--http2-prior-knowledge", "--http1.1"] {
        let body = curl_download(&s.addr, "/f.bin", flag);
        assert_eq!(body.len(), data.len(), "{flag}");
        assert!(body == data, "{flag}: body differs");
    }
}
