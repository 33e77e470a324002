//! Graceful shutdown of `speedy serve` on its UDP listeners (issue 41): SIGTERM in the
//! middle of a download over HTTP/3 (QUIC) and over SPDY on SCTP, as `shutdown.rs` does
//! for the TCP protocols. The download completes intact (size and SHA-256), a new
//! connection after the signal is refused (QUIC: CONNECTION_REFUSED; SCTP: an ABORT
//! for the INIT), the server shuts its SCTP association down with SHUTDOWN (never
//! ABORT), and exits 0 well within the drain timeout.

mod support;

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::net::{SocketAddr, UdpSocket};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{run_bounded, Server, TempDir, BIN};

/// SIGTERM once this much of the body is on disk.
const SIGNAL_AT: u64 = 2 << 20;
const DRAIN_SECS: &str = "60";

/// A site with a sparse file of `size` bytes (no disk used).
fn site(tag: &str, size: u64) -> TempDir {
    let d = TempDir::new(tag);
    let f = std::fs::File::create(d.join("big.bin")).expect("create");
    f.set_len(size).expect("set_len");
    d
}

/// The SHA-256 of `size` zero bytes, hex.
fn zeros_sha256(size: u64) -> String {
    let mut h = Sha256::new();
    let block = vec![0u8; 1 << 20];
    let mut left = size;
    while left > 0 {
        let n = left.min(block.len() as u64) as usize;
        h.update(&block[..n]);
        left -= n as u64;
    }
    hex::encode(h.finalize())
}

/// Runs `speedy fetch ARGS` (bounded to 90 s) on a thread; its output when joined.
fn fetch_in_background(args: Vec<String>) -> std::thread::JoinHandle<std::process::Output> {
    std::thread::spawn(move || {
        run_bounded(
            Command::new(BIN).arg("fetch").args(&args),
            Duration::from_secs(90),
        )
    })
}

/// Waits (up to 60 s) until `file` holds `SIGNAL_AT` bytes, then sends SIGTERM.
fn signal_midway(srv: &Server, file: &std::path::Path) {
    let end = Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(file).map_or(0, |m| m.len()) < SIGNAL_AT {
        assert!(
            Instant::now() < end,
            "the download never reached {SIGNAL_AT} bytes"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    srv.signal(libc::SIGTERM);
}

/// The in-flight download's one JSON line: complete, intact, exit 0.
fn assert_intact(o: &std::process::Output, size: u64) {
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    let line: Value = serde_json::from_str(out.lines().next().unwrap_or(""))
        .unwrap_or_else(|e| panic!("fetch output {out:?} ({e}); stderr {err}"));
    assert_eq!(line["status"], 200, "{line}");
    assert_eq!(line["bytes"], size, "{line}");
    assert_eq!(line["sha256"], zeros_sha256(size), "{line}");
    assert!(o.status.success(), "fetch {:?}: {line} {err}", o.status);
}

/// A fetch started after the signal fails to connect; returns what it said.
fn refused(args: &[&str]) -> String {
    let t = Instant::now();
    let o = run_bounded(
        Command::new(BIN).arg("fetch").args(args),
        Duration::from_secs(30),
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        !o.status.success(),
        "a fetch after SIGTERM succeeded: {said}"
    );
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "refusal took {:?}: {said}",
        t.elapsed()
    );
    said
}

/// The server exits 0 soon after the download.
fn exits_zero(srv: &mut Server) {
    let st = srv
        .wait_exit(Duration::from_secs(15))
        .expect("server still running 15 s after the download (drain is 60 s)");
    assert!(st.success(), "exit status {st:?}");
}

#[test]
fn sigterm_lets_an_h3_download_finish_and_refuses_new_connections() {
    const SIZE: u64 = 64 << 20;
    let dir = site("shutdown-h3", SIZE);
    let mut srv = Server::start(&[
        "--root",
        dir.to_str().expect("utf-8"),
        "--tls-self-signed",
        "--h3",
        "--drain-timeout",
        DRAIN_SECS,
    ]);
    let port = srv.addr.rsplit(':').next().expect("port").to_string();
    let url = format!("https://localhost:{port}/big.bin");
    let out = dir.join("got.bin");
    let out_s = out.to_str().expect("utf-8").to_string();
    let args = ["-k", "--protocol", "h3", "-o", &out_s, &url];
    let download = fetch_in_background(args.iter().map(|s| s.to_string()).collect());
    signal_midway(&srv, &out);
    let said = refused(&["-k", "--protocol", "h3", "-o", "/dev/null", &url]);
    assert!(said.contains("refused"), "{said}");
    let o = download.join().expect("fetch thread");
    assert_intact(&o, SIZE);
    assert_eq!(std::fs::metadata(&out).expect("output").len(), SIZE);
    exits_zero(&mut srv);
}

/// SCTP chunk types (RFC 9260 §3.2) the relay watches for.
const ABORT: u8 = 6;
const SHUTDOWN: u8 = 7;

/// A UDP relay between one SCTP client and `server` that records the chunk types each
/// side sends, in order (`true`: from the server). Stops when dropped.
struct Relay {
    addr: SocketAddr,
    chunks: Arc<Mutex<Vec<(bool, u8)>>>,
    stop: Arc<AtomicBool>,
}

impl Relay {
    fn start(server: SocketAddr) -> Relay {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
        sock.set_read_timeout(Some(Duration::from_millis(5)))
            .expect("timeout");
        let addr = sock.local_addr().expect("addr");
        let chunks = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen, s2) = (chunks.clone(), stop.clone());
        std::thread::spawn(move || {
            let t0 = Instant::now();
            let mut client = None;
            let mut buf = vec![0u8; 65536];
            while !s2.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(120) {
                let Ok((n, from)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                let p = &buf[..n];
                let from_server = from == server;
                let types = chunk_types(p).into_iter().map(|t| (from_server, t));
                seen.lock().expect("lock").extend(types);
                let to = if from_server {
                    client
                } else {
                    client = Some(from);
                    Some(server)
                };
                if let Some(to) = to {
                    let _ = sock.send_to(p, to);
                }
            }
        });
        Relay { addr, chunks, stop }
    }

    /// Where the first chunk of type `ty` from the server (or the client) is in the log.
    fn first(&self, from_server: bool, ty: u8) -> Option<usize> {
        let log = self.chunks.lock().expect("lock");
        log.iter().position(|&c| c == (from_server, ty))
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The types of a packet's chunks, other than DATA and SACK.
fn chunk_types(p: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = 12;
    while at + 4 <= p.len() {
        let len = u16::from_be_bytes([p[at + 2], p[at + 3]]) as usize;
        if p[at] > 3 {
            out.push(p[at]);
        }
        if len < 4 {
            break;
        }
        at += (len + 3) & !3;
    }
    out
}

#[test]
fn sigterm_lets_a_spdy_download_over_sctp_finish_then_shuts_the_association_down() {
    const SIZE: u64 = 16 << 20;
    let dir = site("shutdown-sctp", SIZE);
    let mut srv = Server::start(&[
        "--root",
        dir.to_str().expect("utf-8"),
        "--sctp",
        "--drain-timeout",
        DRAIN_SECS,
    ]);
    // SCTP listens on the TCP port's number, on UDP.
    let server: SocketAddr = srv.addr.parse().expect("addr");
    let relay = Relay::start(server);
    let url = format!("http://{}/big.bin", srv.addr);
    let out = dir.join("got.bin");
    let (out_s, relay_port) = (out.to_str().expect("utf-8"), relay.addr.port().to_string());
    let args = [
        "--transport",
        "sctp",
        "--sctp-port",
        &relay_port,
        "-o",
        out_s,
        &url,
    ];
    let download = fetch_in_background(args.iter().map(|s| s.to_string()).collect());
    signal_midway(&srv, &out);
    let said = refused(&["--transport", "sctp", "-o", "/dev/null", &url]);
    assert!(
        said.contains("aborted") || said.contains("refused"),
        "{said}"
    );
    let o = download.join().expect("fetch thread");
    assert_intact(&o, SIZE);
    exits_zero(&mut srv);
    assert_eq!(
        relay.first(true, ABORT),
        None,
        "the server aborted the association"
    );
    // The server shuts the association down once its last DATA is acknowledged; but
    // `speedy fetch` ABORTs its association when it exits with the whole body, and when
    // that comes first there is no association left for the server to shut down.
    let (shutdown, client_abort) = (relay.first(true, SHUTDOWN), relay.first(false, ABORT));
    assert!(
        shutdown.is_some() || client_abort.is_some(),
        "neither a SHUTDOWN from the server nor an ABORT from the client"
    );
}
