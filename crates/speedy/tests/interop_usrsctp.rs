//! speedy's SCTP (sctp-proto over UDP, `speedy_net::sctp`) against an independent SCTP
//! implementation: usrsctp (Debian's libusrsctp, the stack of Firefox's and Chromium's
//! data channels) through the small C peer in `interop/usrsctp/` (built by
//! `scripts/test`), both speaking RFC 6951's SCTP over UDP on loopback.
//!
//! - speedy dials usrsctp (with DATA bundled in the COOKIE ECHO's packet, and without):
//!   SPDY frames from 0 bytes to 1 MiB on eight SCTP streams and PINGs on stream 0 come
//!   back byte for byte from usrsctp's echo; a relay on the way checks that the COOKIE
//!   ECHO's packet carries DATA (or not) and that usrsctp acknowledges that DATA;
//! - usrsctp dials speedy's listener, with its first DATA in its COOKIE ECHO's packet
//!   (eight 500-byte frames; usrsctp bundles those that fit beside the cookie) and
//!   without (eight 100 KB frames): every SPDY DATA frame, one per stream, comes back
//!   byte for byte.

use speedy_net::sctp::{self, packet, SctpConfig, SctpListener};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn peer_bin() -> PathBuf {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop/usrsctp/bin/usrsctp-peer");
    assert!(
        p.is_file(),
        "{} is missing: run `sh interop/usrsctp/build.sh` (needs gcc and libusrsctp-dev; \
         the test command does this)",
        p.display()
    );
    p
}

/// A free UDP port on loopback (bound, read, released).
fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The usrsctp echo server, killed (by its pid) on drop.
struct UsrsctpServer {
    child: Child,
    port: u16,
}

impl UsrsctpServer {
    fn start() -> UsrsctpServer {
        let port = free_udp_port();
        let mut child = Command::new(peer_bin())
            .args(["server", &port.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start usrsctp-peer");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), format!("listening udp={port}"));
        UsrsctpServer { child, port }
    }
}

impl Drop for UsrsctpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One SPDY frame: DATA for stream `id` with `len` patterned bytes, or a PING.
fn data_frame(id: u32, len: usize) -> Vec<u8> {
    let mut f = Vec::new();
    spdy::frame::encode_data_header(spdy::StreamId(id), false, len, &mut f);
    f.extend((0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).wrapping_add(id) as u8));
    f
}

fn ping(id: u32) -> Vec<u8> {
    let mut f = vec![0x80, 3, 0, 6, 0, 0, 0, 4];
    f.extend_from_slice(&id.to_be_bytes());
    f
}

/// Reads whole frames from `io` until `n` have arrived.
async fn read_frames(io: &mut speedy_net::io::BoxIo, n: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while out.len() < n {
        let mut head = [0u8; 8];
        io.read_exact(&mut head).await.expect("a frame header");
        let len = u32::from_be_bytes([0, head[5], head[6], head[7]]) as usize;
        let mut f = head.to_vec();
        f.resize(8 + len, 0);
        io.read_exact(&mut f[8..]).await.expect("a frame body");
        out.push(f);
    }
    out
}

/// Every datagram a relay passed: (from the server, bytes).
type Log = Arc<Mutex<Vec<(bool, Vec<u8>)>>>;

/// A UDP relay between one client and `server` that keeps every datagram; stops after
/// 60 s at most.
fn recording_relay(server: SocketAddr) -> (SocketAddr, Log) {
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let addr = sock.local_addr().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let kept = log.clone();
    std::thread::spawn(move || {
        let t0 = std::time::Instant::now();
        let mut client = None;
        let mut buf = vec![0u8; 65536];
        while t0.elapsed() < Duration::from_secs(60) {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                continue;
            };
            let from_server = from == server;
            if !from_server {
                client = Some(from);
            }
            let to = if from_server { client } else { Some(server) };
            kept.lock().unwrap().push((from_server, buf[..n].to_vec()));
            if let Some(to) = to {
                let _ = sock.send_to(&buf[..n], to);
            }
        }
    });
    (addr, log)
}

/// The TSNs of a packet's DATA chunks and its SACK's cumulative TSN, if any.
fn tsns_and_sack(p: &[u8]) -> (Vec<u32>, Option<u32>) {
    let (mut tsns, mut sack) = (Vec::new(), None);
    for (kind, _, v) in packet::chunks(p) {
        if v.len() >= 4 {
            let n = u32::from_be_bytes([v[0], v[1], v[2], v[3]]);
            match kind {
                packet::chunk::DATA => tsns.push(n),
                packet::chunk::SACK => sack = Some(n),
                _ => {}
            }
        }
    }
    (tsns, sack)
}

async fn speedy_to_usrsctp(bundle: bool) {
    let server = UsrsctpServer::start();
    let (addr, log) = recording_relay(([127, 0, 0, 1], server.port).into());
    let cfg = SctpConfig {
        bundle_cookie_echo: bundle,
        ..SctpConfig::default()
    };
    let mut io = sctp::dial(addr, &cfg).await.unwrap();
    // Own (odd) SPDY streams with no SYN_STREAM sent: their echoed DATA goes straight
    // back to us (docs/sctp.md). Sizes from empty to 1 MiB (fragmented by SCTP).
    let sizes = [0usize, 1, 100, 1_400, 5_000, 70_000, 300_000, 1 << 20];
    let mut sent: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| data_frame(2 * i as u32 + 1, n))
        .collect();
    sent.extend((1..=3).map(ping));
    for f in &sent {
        io.write_all(f).await.unwrap();
    }
    io.flush().await.unwrap();
    let mut got = read_frames(&mut io, sent.len()).await;
    got.sort();
    sent.sort();
    assert!(got == sent, "usrsctp's echo differs (bundle {bundle})");
    // On the wire: with bundling our COOKIE ECHO's packet carries DATA and usrsctp's
    // first answer acknowledges it (it accepted the bundle); without, it carries none.
    let log = log.lock().unwrap().clone();
    let cookie = log
        .iter()
        .find(|(s, p)| !s && packet::first_chunk(p) == Some(packet::chunk::COOKIE_ECHO))
        .expect("a COOKIE ECHO");
    let (tsns, _) = tsns_and_sack(&cookie.1);
    if bundle {
        assert!(!tsns.is_empty(), "no DATA in the COOKIE ECHO's packet");
        let answer = log
            .iter()
            .find(|(s, p)| *s && packet::first_chunk(p) == Some(packet::chunk::COOKIE_ACK))
            .expect("usrsctp's COOKIE ACK");
        let acked = tsns_and_sack(&answer.1).1.or_else(|| {
            // The SACK may follow in a packet of its own.
            log.iter()
                .filter(|(s, _)| *s)
                .find_map(|(_, p)| tsns_and_sack(p).1)
        });
        assert!(
            acked.is_some_and(|c| c.wrapping_sub(tsns[tsns.len() - 1]) < 1 << 31),
            "usrsctp did not acknowledge the DATA bundled with the COOKIE ECHO: {acked:?}, {tsns:?}"
        );
    } else {
        assert!(
            tsns.is_empty(),
            "DATA in the COOKIE ECHO's packet without bundling"
        );
    }
}

#[tokio::test]
async fn speedy_dials_usrsctp_with_data_in_the_cookie_echo() {
    tokio::time::timeout(Duration::from_secs(30), speedy_to_usrsctp(true))
        .await
        .expect("done within 30 s");
}

#[tokio::test]
async fn speedy_dials_usrsctp_with_data_after_the_cookie_ack() {
    tokio::time::timeout(Duration::from_secs(30), speedy_to_usrsctp(false))
        .await
        .expect("done within 30 s");
}

async fn usrsctp_to_speedy(early: bool) {
    let mut l = SctpListener::bind("127.0.0.1:0".parse().unwrap(), &SctpConfig::default())
        .await
        .unwrap();
    let port = l.local_addr().port();
    // Echo every frame of the first association back.
    let echo = tokio::spawn(async move {
        let (mut io, _) = l.accept().await.unwrap();
        let frames = read_frames(&mut io, 8).await;
        for f in frames {
            io.write_all(&f).await.unwrap();
        }
        io.flush().await.unwrap();
        // Hold the association until the client has read everything and closed.
        let mut rest = Vec::new();
        let _ = io.read_to_end(&mut rest).await;
    });
    let out = tokio::task::spawn_blocking(move || {
        Command::new(peer_bin())
            .args([
                "client",
                &free_udp_port().to_string(),
                "127.0.0.1",
                &port.to_string(),
                "8",
                // Small enough for usrsctp to put the first ones beside its cookie.
                if early { "500" } else { "100000" },
            ])
            .env("USRSCTP_PEER_SPDY_FRAMES", "1")
            .env("USRSCTP_PEER_EARLY_DATA", if early { "1" } else { "0" })
            .env("USRSCTP_PEER_TIMEOUT", "20")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim() == "ok 8 messages",
        "usrsctp client: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = tokio::time::timeout(Duration::from_secs(5), echo).await;
}

#[tokio::test]
async fn usrsctp_dials_speedy_with_data_in_its_cookie_echo() {
    tokio::time::timeout(Duration::from_secs(40), usrsctp_to_speedy(true))
        .await
        .expect("done within 40 s");
}

#[tokio::test]
async fn usrsctp_dials_speedy_with_data_after_the_cookie_ack() {
    tokio::time::timeout(Duration::from_secs(40), usrsctp_to_speedy(false))
        .await
        .expect("done within 40 s");
}
