//! `speedy fetch`'s ways of using HTTP/1.1 connections, through the real program against
//! a server written here that records what arrives on each connection (and against
//! `speedy serve` for the bytes): `--pipeline` (all requests on one connection before
//! any answer), `--connection-per-request` (one connection and `Connection: close` per
//! request), and `--after-first` (nothing else asked before the first response is
//! whole).

mod support;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{run_bounded, Server, TempDir, BIN};

/// A request head as this server saw it: connection number, request line, whether it
/// said `Connection: close`, and when it arrived.
#[derive(Clone, Debug)]
struct Seen {
    conn: usize,
    line: String,
    close: bool,
    at: Instant,
}

/// Serves `/N` with N bytes. `answer_after`: how many request heads a connection must
/// have received before it answers any (pipelining: all of them). `delay`: waits this
/// long before answering a connection's first request.
fn raw_server(answer_after: usize, delay: Duration) -> (u16, Arc<Mutex<Vec<Seen>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for (n, s) in l.incoming().enumerate().take(64) {
            let Ok(s) = s else { return };
            let log = log.clone();
            std::thread::spawn(move || serve_conn(n, s, answer_after, delay, log));
        }
    });
    (port, seen)
}

fn serve_conn(
    n: usize,
    mut s: TcpStream,
    after: usize,
    delay: Duration,
    log: Arc<Mutex<Vec<Seen>>>,
) {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = Vec::new();
    let mut heads: Vec<(String, bool)> = Vec::new();
    let mut b = [0u8; 4096];
    let mut answered = 0;
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            buf.drain(..end + 4);
            let line = head.lines().next().unwrap_or("").to_string();
            let close = head.to_ascii_lowercase().contains("\r\nconnection: close");
            log.lock().unwrap().push(Seen {
                conn: n,
                line: line.clone(),
                close,
                at: Instant::now(),
            });
            heads.push((line, close));
        }
        if heads.len() >= after || (answered > 0 && heads.len() > answered) {
            while answered < heads.len() {
                if answered == 0 {
                    std::thread::sleep(delay);
                }
                let (line, close) = &heads[answered];
                let len: usize = line
                    .split(' ')
                    .nth(1)
                    .and_then(|p| p.trim_start_matches('/').parse().ok())
                    .unwrap_or(0);
                let body: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
                let mut r = format!("HTTP/1.1 200 OK\r\ncontent-length: {len}\r\n").into_bytes();
                if *close {
                    r.extend_from_slice(b"connection: close\r\n");
                }
                r.extend_from_slice(b"\r\n");
                r.extend_from_slice(&body);
                if s.write_all(&r).is_err() {
                    return;
                }
                answered += 1;
                if *close {
                    return;
                }
            }
        }
        match s.read(&mut b) {
            Ok(0) | Err(_) => return,
            Ok(k) => buf.extend_from_slice(&b[..k]),
        }
    }
}

fn fetch(port: u16, args: &[&str], paths: &[&str]) -> Vec<Value> {
    let urls: Vec<String> = paths
        .iter()
        .map(|p| format!("http://127.0.0.1:{port}{p}"))
        .collect();
    let o = run_bounded(
        Command::new(BIN)
            .args(["fetch", "--protocol", "http1", "--read-timeout", "10"])
            .args(args)
            .args(&urls),
        Duration::from_secs(30),
    );
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), paths.len(), "{lines:?}");
    for l in &lines {
        let want: u64 = l["url"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(l["status"], 200, "{l}");
        assert_eq!(l["bytes"], want, "{l}");
    }
    lines
}

/// A server that answers nothing until it has all eight requests on one connection:
/// only a client that pipelines gets its answers. They arrive in the order of the URLs.
#[test]
fn pipeline_sends_every_request_before_any_answer_on_one_connection() {
    let paths = ["/100", "/70000", "/0", "/5", "/300000", "/6", "/7", "/8"];
    let (port, seen) = raw_server(paths.len(), Duration::ZERO);
    fetch(port, &["--pipeline"], &paths);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), paths.len());
    assert!(
        seen.iter().all(|s| s.conn == seen[0].conn && !s.close),
        "{seen:?}"
    );
    let lines: Vec<&str> = seen.iter().map(|s| s.line.as_str()).collect();
    let want: Vec<String> = paths.iter().map(|p| format!("GET {p} HTTP/1.1")).collect();
    assert_eq!(lines, want);
}

/// Four requests, two at a time: four connections, each request saying `Connection:
/// close`.
#[test]
fn connection_per_request_opens_one_connection_per_request() {
    let (port, seen) = raw_server(1, Duration::ZERO);
    fetch(
        port,
        &["--connection-per-request", "--concurrency", "2"],
        &["/10", "/20", "/30", "/40"],
    );
    let seen = seen.lock().unwrap();
    let mut conns: Vec<usize> = seen.iter().map(|s| s.conn).collect();
    conns.sort();
    conns.dedup();
    assert_eq!(conns.len(), 4, "{seen:?}");
    assert!(seen.iter().all(|s| s.close), "{seen:?}");
}

/// The first response is held back 300 ms: no other request arrives before it.
#[test]
fn after_first_asks_for_the_rest_once_the_first_is_whole() {
    let delay = Duration::from_millis(300);
    let (port, seen) = raw_server(1, delay);
    fetch(port, &["--after-first"], &["/1000", "/2", "/3", "/4"]);
    let seen = seen.lock().unwrap();
    let first = seen
        .iter()
        .find(|s| s.line.starts_with("GET /1000 "))
        .unwrap();
    for s in seen.iter().filter(|s| !s.line.starts_with("GET /1000 ")) {
        assert!(
            s.at >= first.at + delay,
            "{} arrived {:?} after the first request, before its answer",
            s.line,
            s.at - first.at
        );
    }
}

/// Against `speedy serve`: pipelined and per-request bodies byte for byte, and the
/// options refused by name where they cannot work.
#[test]
fn pipelined_bodies_from_speedy_serve_are_byte_identical() {
    let dir = TempDir::new("pipeline");
    let mut want = Vec::new();
    for (i, n) in [0usize, 1, 16_384, 200_000, 1_000_000].iter().enumerate() {
        let body: Vec<u8> = (0..*n).map(|k| (k * 31 + i) as u8).collect();
        std::fs::write(dir.0.join(format!("{i}.bin")), &body).unwrap();
        want.push(format!("{:x}", sha2_hex(&body)));
    }
    let root = dir.0.to_str().unwrap();
    let srv = Server::start(&["--root", root]);
    let port: u16 = srv.addr.rsplit(':').next().unwrap().parse().unwrap();
    for mode in [&["--pipeline"][..], &["--connection-per-request"][..]] {
        let urls: Vec<String> = (0..5)
            .map(|i| format!("http://127.0.0.1:{port}/{i}.bin"))
            .collect();
        let o = run_bounded(
            Command::new(BIN)
                .args(["fetch", "--protocol", "http1"])
                .args(mode)
                .args(&urls),
            Duration::from_secs(30),
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        for l in String::from_utf8_lossy(&o.stdout).lines() {
            let v: Value = serde_json::from_str(l).unwrap();
            let i: usize = v["url"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .trim_end_matches(".bin")
                .parse()
                .unwrap();
            assert_eq!(v["sha256"].as_str().unwrap(), want[i], "{mode:?} {l}");
        }
    }
    for (args, says) in [
        (
            vec!["--pipeline"],
            "--pipeline: HTTP/1.1 only (add --protocol http1)",
        ),
        (
            vec!["--protocol", "h2", "--connection-per-request"],
            "--connection-per-request: HTTP/1.1 only",
        ),
    ] {
        let o = run_bounded(
            Command::new(BIN)
                .arg("fetch")
                .args(&args)
                .arg(format!("http://127.0.0.1:{port}/0.bin")),
            Duration::from_secs(10),
        );
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{args:?}"
        );
    }
}

fn sha2_hex(b: &[u8]) -> impl std::fmt::LowerHex {
    use sha2::Digest;
    sha2::Sha256::digest(b)
}
