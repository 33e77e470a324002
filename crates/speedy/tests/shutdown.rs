//! Graceful shutdown of `speedy serve` (issue 19): SIGTERM in the middle of a 200 MB
//! download over SPDY/3.1, h2 and HTTP/1.1. The download completes, the client sees
//! GOAWAY (SPDY, h2) or the connection closed after the body (HTTP/1.1), new connections
//! are refused, and the server exits 0 within the drain timeout. A second signal exits at
//! once (status 130).

mod support;

use spdy::session::Event;
use spdy::Version;
use speedy_test_support::raw::{closed_within, connect, h2t, H2Raw, SpdyClient};
use std::io::{Read, Write};
use std::time::{Duration, Instant};
use support::{Server, TempDir};

const SIZE: u64 = 200_000_000;
/// SIGTERM once this much of the body has arrived.
const SIGNAL_AT: u64 = 8 << 20;
const DRAIN_SECS: u64 = 60;
/// The whole download must finish well within this (debug builds on 2 cores included).
const LIMIT: Duration = Duration::from_secs(DRAIN_SECS);

/// A site with a sparse 200 MB file (no disk used).
fn big_site() -> TempDir {
    let d = TempDir::new("shutdown");
    let f = std::fs::File::create(d.join("big.bin")).expect("create");
    f.set_len(SIZE).expect("set_len");
    d
}

fn start(site: &TempDir) -> Server {
    let drain = DRAIN_SECS.to_string();
    Server::start(&[
        "--root",
        site.to_str().expect("utf-8"),
        "--drain-timeout",
        &drain,
    ])
}

/// After the signal: new connections are refused (the listener is closed).
fn refuses_new_connections(addr: &str) {
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        if std::net::TcpStream::connect(addr).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{addr} still accepts connections after SIGTERM");
}

/// The server exits 0 soon after its last stream finished.
/// Sends SIGTERM once `SIGNAL_AT` bytes of the download are in (once), and checks that
/// the draining server refuses new connections.
fn signal_midway(srv: &mut Server, got: u64, signalled: &mut bool) {
    if !*signalled && got >= SIGNAL_AT {
        srv.signal(libc::SIGTERM);
        *signalled = true;
        refuses_new_connections(&srv.addr);
    }
}

fn exits_zero(srv: &mut Server) {
    let st = srv
        .wait_exit(Duration::from_secs(10))
        .expect("server still running after the drain");
    assert!(st.success(), "exit status {st:?}");
}

#[test]
fn sigterm_lets_a_spdy_download_finish_with_goaway() {
    let site = big_site();
    let mut srv = start(&site);
    let mut c = SpdyClient::connect(&srv.addr, Version::V3_1);
    c.keep_data = false;
    let h = c.request("GET", "/big.bin", &[]);
    let id = c.s.open(h, 0, true).unwrap();
    c.flush();
    let (mut got, mut signalled, mut goaway, mut closed) = (0u64, false, false, false);
    let end = Instant::now() + LIMIT;
    while !closed && Instant::now() < end && !c.eof {
        let (ev, _) = c.pump_until(Duration::from_millis(100), |e| {
            if let Event::Data { id: i, data, .. } = e {
                if *i == id {
                    got += data.len() as u64;
                }
            }
            false
        });
        for e in ev {
            match e {
                Event::GoAway { .. } => goaway = true,
                Event::Closed { id: i } if i == id => closed = true,
                Event::Reset { id: i, status, .. } if i == id => panic!("reset {status:?}"),
                _ => {}
            }
        }
        signal_midway(&mut srv, got, &mut signalled);
    }
    assert!(
        signalled && closed,
        "signalled {signalled}, closed {closed}, {got} bytes"
    );
    assert_eq!(got, SIZE);
    assert!(goaway, "no GOAWAY");
    assert!(closed_within(&mut c.sock, Duration::from_secs(5)));
    exits_zero(&mut srv);
}

#[test]
fn sigterm_lets_an_h2_download_finish_with_goaway() {
    let site = big_site();
    let mut srv = start(&site);
    let mut c = H2Raw::connect(&srv.addr);
    let block = H2Raw::request_block("GET", "/big.bin", &[]);
    c.frame(h2t::HEADERS, 0x4 | 0x1, 1, &block);
    let (mut got, mut signalled, mut goaway, mut done) = (0u64, false, false, false);
    let end = Instant::now() + LIMIT;
    while !done && Instant::now() < end {
        let Some((ty, flags, s, p)) = c.next_frame(Duration::from_secs(5)) else {
            break;
        };
        match ty {
            h2t::GOAWAY => goaway = true,
            h2t::DATA if s == 1 => {
                got += p.len() as u64;
                done = flags & 1 != 0;
            }
            h2t::RST_STREAM => panic!("RST_STREAM {p:?}"),
            _ => {}
        }
        signal_midway(&mut srv, got, &mut signalled);
    }
    assert!(
        signalled && done,
        "signalled {signalled}, done {done}, {got} bytes"
    );
    assert_eq!(got, SIZE);
    assert!(goaway, "no GOAWAY");
    while c.next_frame(Duration::from_secs(5)).is_some() {}
    assert!(c.eof, "h2 connection left open after the drain");
    exits_zero(&mut srv);
}

/// Reads an HTTP/1.1 response head; returns it and what followed it.
fn head_and_rest(s: &mut std::net::TcpStream) -> (String, Vec<u8>) {
    let end = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    let mut b = [0u8; 65536];
    while Instant::now() < end {
        if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = got.split_off(i + 4);
            return (String::from_utf8_lossy(&got).into_owned(), rest);
        }
        if let Ok(n) = s.read(&mut b) {
            assert!(n > 0, "closed before the head");
            got.extend_from_slice(&b[..n]);
        }
    }
    panic!("no response head");
}

#[test]
fn sigterm_lets_an_http1_download_finish_then_closes() {
    let site = big_site();
    let mut srv = start(&site);
    let mut s = connect(&srv.addr);
    // Keep-alive: the close after the body is the server's doing.
    write!(s, "GET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let (head, rest) = head_and_rest(&mut s);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let mut got = rest.len() as u64;
    let mut signalled = false;
    let end = Instant::now() + LIMIT;
    let mut b = vec![0u8; 1 << 16];
    while got < SIZE && Instant::now() < end {
        match s.read(&mut b) {
            Ok(0) => break,
            Ok(n) => got += n as u64,
            Err(_) => {}
        }
        signal_midway(&mut srv, got, &mut signalled);
    }
    assert!(signalled);
    assert_eq!(got, SIZE);
    assert!(
        closed_within(&mut s, Duration::from_secs(5)),
        "keep-alive connection not closed after the body"
    );
    exits_zero(&mut srv);
}

#[test]
fn a_second_signal_exits_at_once() {
    let site = big_site();
    let mut srv = start(&site);
    let mut s = connect(&srv.addr);
    write!(s, "GET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let (head, _) = head_and_rest(&mut s);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // The client stops reading: the drain cannot finish by itself.
    srv.signal(libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(300));
    srv.assert_alive();
    let t = Instant::now();
    srv.signal(libc::SIGINT);
    let st = srv
        .wait_exit(Duration::from_secs(2))
        .expect("still running after the second signal");
    assert_eq!(st.code(), Some(130), "{st:?}");
    eprintln!("exited {:?} after the second signal", t.elapsed());
}

#[test]
fn the_drain_timeout_bounds_a_stalled_download() {
    let site = big_site();
    let mut srv = Server::start(&[
        "--root",
        site.to_str().expect("utf-8"),
        "--drain-timeout",
        "1",
    ]);
    let mut s = connect(&srv.addr);
    write!(s, "GET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let (head, _) = head_and_rest(&mut s);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // The client never reads the rest: the drain gives up after --drain-timeout.
    let t = Instant::now();
    srv.signal(libc::SIGTERM);
    let st = srv
        .wait_exit(Duration::from_secs(5))
        .expect("still running 5 s after SIGTERM with --drain-timeout 1");
    assert!(st.success(), "{st:?}");
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(900), "exited after {took:?}");
}
