//! `speedy serve --h3` and `speedy proxy` under abuse (issue 41), through the real
//! programs on loopback, as tests/abuse.rs does for the TCP side of `speedy serve`. Each
//! probe checks a stated bound on the program's peak RSS (VmHWM), that a normal request
//! succeeds during and after, and that the process survives, and prints
//! `probe: bound X, peak Y, served during/after: yes`. Timeouts are shortened with the
//! flags so the file runs in seconds.
//!
//! HTTP/3 (quinn as the abusive client, hand-written HTTP/3 frames; `speedy fetch
//! --protocol h3` as the normal one), each under [`H3_RSS_LIMIT_KIB`]:
//! - connection flood: 300 QUIC connections from one address held idle; then
//!   `--idle-timeout` closes them (H3_NO_ERROR), and `--max-connections-per-ip` refuses a
//!   fifth connection of one address (QUIC's CONNECTION_REFUSED) while another address
//!   is served.
//! - forged source addresses: 44 clients' Initials sent from 44 addresses that never
//!   answer (four of them ports of the normal client's address): with
//!   `--max-connections 8 --max-connections-per-ip 4` the normal client is still served
//!   (unproven addresses get a Retry once half the slots are used or their address holds
//!   one).
//! - stream flood: the 100 request streams QUIC lets one connection open, half with a
//!   header section never finished (ended after `--header-read-timeout`), half uploading
//!   to `--echo-upload` without reading the echo (the connection's QUIC receive window,
//!   8 MiB, holds what the server has not read).
//! - header sections past the limit: HEADERS frames declaring 16 MiB get 431 as soon as
//!   their length is read, and their reading stops (no more than a window goes in); a
//!   small HEADERS frame whose QPACK static references decode past 64 KiB gets 431.
//! - unread responses: 20 streams of a 24 MiB file never read: QUIC's flow control
//!   holds the server.
//!
//! `speedy proxy` (in-test origins on loopback: a `speedy serve` for the normal requests,
//! tokio servers for the rest), each under [`PROXY_RSS_LIMIT_KIB`]:
//! - endless uploads: 4 clients POST endless chunked bodies; the proxy reads bodies whole
//!   before forwarding, and all of them together hold at most `--max-body` (64 MiB):
//!   413 past it alone, 503 past it together.
//! - a silent origin (accepts, reads, never answers): 504 after `--timeout` for 20
//!   requests at once.
//! - an endless origin (chunks of 1 MiB) to 8 clients that do not read: the buffer
//!   between each and the origin (64 pieces of at most 16 KiB) stops reading the
//!   origin.
//! - a thousand CONNECT tunnels held open.
//!
//! A CONNECT to a target not allowed gets 403 with the reason: tests/proxy_cli.rs
//! (`it_serves_what_allow_and_resolve_name_and_refuses_the_rest`).

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{proc_status_kib, run_bounded, Server, TempDir, BIN};

const MIB: usize = 1 << 20;
const T: Duration = Duration::from_secs(10);

/// Peak RSS of `speedy serve --h3` through any one HTTP/3 probe. It starts near 13 MiB;
/// without the limits, the stream flood took it to 125 MiB (50 uploads of QUIC's 1.25 MB
/// stream window each, left unread) and each HEADERS frame of 16 MiB was taken whole.
const H3_RSS_LIMIT_KIB: u64 = 64 * 1024;

/// Peak RSS of `speedy proxy` through any one proxy probe: the request bodies it may hold
/// at once (`--max-body`, 64 MiB) and 32 MiB for the rest (it starts near 10 MiB).
/// Without the limits, 4 endless uploads took it to 183 MiB (64 MiB each) and 8 unread
/// endless responses to 171 MiB (64 of the origin's chunks each, whatever their size).
const PROXY_RSS_LIMIT_KIB: u64 = 96 * 1024;

/// Checks and reports a probe's peak RSS against its bound.
fn report(srv: &mut Server, probe: &str, bound_kib: u64) {
    srv.assert_alive();
    let peak = proc_status_kib(srv.pid(), "VmHWM");
    eprintln!("{probe}: bound {bound_kib} KiB, peak {peak} KiB, served during/after: yes");
    assert!(
        peak < bound_kib,
        "{probe}: peak RSS {peak} KiB over {bound_kib} KiB"
    );
}

/// A tokio runtime whose one worker drives the QUIC endpoints and the in-test origins
/// while the test's thread blocks.
fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime")
}

// =======================================================================================
// HTTP/3.

/// A site with a small page and a file past the server's 16 MiB cache (streamed).
fn h3_site() -> TempDir {
    let d = TempDir::new("abuse-h3");
    std::fs::write(d.join("index.html"), b"<p>hello</p>\n").expect("write index");
    std::fs::write(d.join("big.bin"), vec![7u8; 24 * MIB]).expect("write big.bin");
    d
}

/// `speedy serve --root SITE --tls-self-signed --h3`, plus `extra`.
fn start_h3(site: &TempDir, extra: &[&str]) -> Server {
    let root = site.to_str().expect("utf-8 path").to_string();
    let mut args = vec!["--root", &root, "--tls-self-signed", "--h3"];
    args.extend_from_slice(extra);
    Server::start(&args)
}

/// The QUIC address: the TCP one's, on UDP.
fn quic_addr(srv: &Server) -> SocketAddr {
    srv.addr.parse().expect("IP:PORT")
}

/// A normal GET over HTTP/3 by `speedy fetch` succeeds.
fn h3_fetch_ok(srv: &Server) {
    let port = quic_addr(srv).port();
    let out = run_bounded(
        Command::new(BIN).args([
            "fetch",
            "-k",
            "--protocol",
            "h3",
            &format!("https://localhost:{port}/index.html"),
        ]),
        T,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line: serde_json::Value = stdout
        .lines()
        .find(|l| l.starts_with('{'))
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "speedy fetch --protocol h3: no result: {stdout} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    assert_eq!(line["status"], 200, "{line}");
    assert_eq!(line["bytes"], 13, "{line}");
}

/// A QUIC client endpoint bound to `bind` (ALPN h3, any certificate), on `rt`.
fn endpoint(rt: &tokio::runtime::Runtime, bind: &str) -> quinn::Endpoint {
    let _in = rt.enter();
    let tls = speedy_net::tls::client_config(&speedy_net::tls::Verify::Insecure, &["h3"])
        .expect("client TLS");
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).expect("QUIC TLS");
    let mut cfg = quinn::ClientConfig::new(Arc::new(crypto));
    let mut t = quinn::TransportConfig::default();
    t.max_idle_timeout(Some(Duration::from_secs(30).try_into().expect("idle")));
    cfg.transport_config(Arc::new(t));
    let mut ep = quinn::Endpoint::client(bind.parse().expect("bind address")).expect("endpoint");
    ep.set_default_client_config(cfg);
    ep
}

/// An HTTP/3 connection: QUIC, and the client's control stream (kept open: closing it
/// is a connection error).
struct H3 {
    conn: quinn::Connection,
    _control: quinn::SendStream,
}

async fn h3_connect(ep: &quinn::Endpoint, addr: SocketAddr) -> H3 {
    let conn = ep
        .connect(addr, "localhost")
        .expect("connect")
        .await
        .expect("QUIC handshake");
    let mut control = conn.open_uni().await.expect("control stream");
    // Stream type 0x00 (control), then an empty SETTINGS frame.
    control
        .write_all(&[0x00, 0x04, 0x00])
        .await
        .expect("SETTINGS");
    H3 {
        conn,
        _control: control,
    }
}

/// Appends `v` as a QUIC variable-length integer (RFC 9000 §16).
fn varint(out: &mut Vec<u8>, v: u64) {
    if v < 1 << 6 {
        out.push(v as u8);
    } else if v < 1 << 14 {
        out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes());
    } else if v < 1 << 30 {
        out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// Reads a varint at `b[i..]`: (value, next index).
fn read_varint(b: &[u8], i: usize) -> Option<(u64, usize)> {
    let first = *b.get(i)?;
    let len = 1usize << (first >> 6);
    let bytes = b.get(i..i + len)?;
    let v = bytes[1..]
        .iter()
        .fold(u64::from(first & 0x3f), |v, &x| v << 8 | u64::from(x));
    Some((v, i + len))
}

/// An HTTP/3 frame: type, length, payload.
fn frame(ty: u64, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    varint(&mut f, ty);
    varint(&mut f, payload.len() as u64);
    f.extend_from_slice(payload);
    f
}

/// A QPACK prefixed integer (RFC 9204 §4.1.1): `flags` above a `bits`-bit prefix.
fn prefix_int(out: &mut Vec<u8>, bits: u8, flags: u8, v: u64) {
    let mask = (1u64 << bits) - 1;
    let flags = flags << bits;
    if v < mask {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | mask as u8);
    let mut v = v - mask;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

/// Reads a QPACK prefixed integer at `b[i..]`: (value, next index).
fn read_int(b: &[u8], i: usize, bits: u8) -> Option<(u64, usize)> {
    let mask = (1u64 << bits) - 1;
    let mut v = u64::from(*b.get(i)?) & mask;
    let mut i = i + 1;
    if v < mask {
        return Some((v, i));
    }
    let mut shift = 0;
    loop {
        let x = *b.get(i)?;
        i += 1;
        v += u64::from(x & 0x7f) << shift;
        shift += 7;
        if x & 0x80 == 0 {
            return Some((v, i));
        }
    }
}

/// The encoded field section of a request to https://localhost`path` (QPACK's static
/// table only, literals without Huffman).
fn request_fields(method: &str, path: &str) -> Vec<u8> {
    // Required Insert Count 0, Delta Base 0.
    let mut b = vec![0, 0];
    let m = match method {
        "GET" => 17,
        "POST" => 20,
        _ => panic!("method {method}"),
    };
    prefix_int(&mut b, 6, 0b11, m); // indexed, static: :method
    prefix_int(&mut b, 6, 0b11, 23); // :scheme https
    for (name, value) in [(0, "localhost"), (1, path)] {
        // Literal with a static name reference (:authority, :path).
        prefix_int(&mut b, 4, 0b0101, name);
        prefix_int(&mut b, 7, 0, value.len() as u64);
        b.extend_from_slice(value.as_bytes());
    }
    b
}

/// QPACK's static `:status` entries (RFC 9204 Appendix A).
const STATUSES: [(u64, u16); 14] = [
    (24, 103),
    (25, 200),
    (26, 304),
    (27, 404),
    (28, 503),
    (63, 100),
    (64, 204),
    (65, 206),
    (66, 302),
    (67, 400),
    (68, 403),
    (69, 421),
    (70, 425),
    (71, 500),
];

/// The status of a response's encoded field section (its first field line: a static
/// `:status` entry, or a literal with a `:status` name reference).
fn status_of(fields: &[u8]) -> Option<u16> {
    let (_, i) = read_int(fields, 0, 8)?;
    let (_, i) = read_int(fields, i, 7)?;
    let first = *fields.get(i)?;
    if first & 0xc0 == 0xc0 {
        let (idx, _) = read_int(fields, i, 6)?;
        return STATUSES.iter().find(|s| s.0 == idx).map(|s| s.1);
    }
    if first & 0xd0 == 0x50 {
        let (idx, j) = read_int(fields, i, 4)?;
        STATUSES.iter().find(|s| s.0 == idx)?;
        let huffman = fields.get(j)? & 0x80 != 0;
        let (len, k) = read_int(fields, j, 7)?;
        let v = fields.get(k..k + len as usize)?;
        let text = if huffman {
            huffman_digits(v)?
        } else {
            String::from_utf8(v.to_vec()).ok()?
        };
        return text.parse().ok();
    }
    None
}

/// Decodes a Huffman-coded string of digits (RFC 7541 Appendix B: '0'-'2' in 5 bits,
/// '3'-'9' in 6, padded with ones).
fn huffman_digits(v: &[u8]) -> Option<String> {
    let bits: Vec<u8> = v
        .iter()
        .flat_map(|b| (0..8).rev().map(move |i| (b >> i) & 1))
        .collect();
    let code = |from: usize, n: usize| bits[from..from + n].iter().fold(0u8, |a, b| a << 1 | b);
    let (mut out, mut i) = (String::new(), 0);
    while bits.len() - i >= 5 {
        let five = code(i, 5);
        if five <= 2 {
            out.push(char::from(b'0' + five));
            i += 5;
        } else if five == 0b11111 || bits.len() - i < 6 {
            break;
        } else {
            let six = code(i, 6);
            if !(0x19..=0x1f).contains(&six) {
                return None;
            }
            out.push(char::from(b'3' + six - 0x19));
            i += 6;
        }
    }
    Some(out)
}

/// Reads a response stream to its end (within `limit`): the status of its first HEADERS
/// frame (`None` if there was none) and the number of DATA bytes; an error if the
/// stream was reset or the time ran out.
async fn response(
    recv: &mut quinn::RecvStream,
    limit: Duration,
) -> Result<(Option<u16>, usize), String> {
    let all = tokio::time::timeout(limit, recv.read_to_end(64 * MIB))
        .await
        .map_err(|_| format!("no end in {limit:?}"))?
        .map_err(|e| e.to_string())?;
    let (mut i, mut status, mut body) = (0, None, 0);
    while i < all.len() {
        let (ty, j) = read_varint(&all, i).ok_or("a cut frame type")?;
        let (len, k) = read_varint(&all, j).ok_or("a cut frame length")?;
        let payload = all.get(k..k + len as usize).ok_or("a cut frame")?;
        match ty {
            0x00 => body += payload.len(),
            0x01 if status.is_none() => status = status_of(payload),
            _ => {}
        }
        i = k + len as usize;
    }
    Ok((status, body))
}

/// A GET on `conn` by hand: (status, body length).
async fn raw_get(conn: &quinn::Connection, path: &str) -> Result<(Option<u16>, usize), String> {
    let (mut send, mut recv) = tokio::time::timeout(T, conn.open_bi())
        .await
        .map_err(|_| format!("no stream in {T:?}"))?
        .map_err(|e| e.to_string())?;
    send.write_all(&frame(0x01, &request_fields("GET", path)))
        .await
        .map_err(|e| e.to_string())?;
    send.finish().map_err(|e| e.to_string())?;
    response(&mut recv, T).await
}

#[test]
fn h3_connection_flood_is_bounded_and_idles_out() {
    let site = h3_site();
    // One address opens them all: no cap per address here (the next test has one).
    let mut srv = start_h3(
        &site,
        &["--max-connections-per-ip", "0", "--idle-timeout", "3"],
    );
    let addr = quic_addr(&srv);
    let rt = rt();
    let ep = endpoint(&rt, "127.0.0.1:0");
    let t0 = Instant::now();
    let conns: Vec<quinn::Connection> = rt.block_on(async {
        // 20 handshakes at a time: 300 at once overflow the UDP socket buffers on
        // loopback, and the handshakes then wait for their retransmissions.
        let mut conns = Vec::new();
        for _ in 0..15 {
            let mut set = tokio::task::JoinSet::new();
            for _ in 0..20 {
                set.spawn(ep.connect(addr, "localhost").expect("connect"));
            }
            while let Some(c) = set.join_next().await {
                conns.push(c.expect("join").expect("QUIC handshake"));
            }
        }
        conns
    });
    let opened = t0.elapsed();
    // During: a normal request on a connection of its own.
    h3_fetch_ok(&srv);
    let rss = proc_status_kib(srv.pid(), "VmRSS");
    eprintln!("300 QUIC connections open in {opened:?}: server RSS {rss} KiB");
    // No request on them: --idle-timeout (3 s) closes each with H3_NO_ERROR.
    let closed = rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for c in &conns {
            let c = c.clone();
            set.spawn(
                async move { tokio::time::timeout(Duration::from_secs(10), c.closed()).await },
            );
        }
        let mut n = 0;
        while let Some(r) = set.join_next().await {
            match r.expect("join") {
                Ok(quinn::ConnectionError::ApplicationClosed(a))
                    if a.error_code == quinn::VarInt::from_u32(0x100) =>
                {
                    n += 1
                }
                other => panic!("an idle connection: {other:?}"),
            }
        }
        n
    });
    assert_eq!(closed, 300);
    let idle = t0.elapsed();
    eprintln!("300 idle QUIC connections closed {idle:?} after the first opened");
    assert!(
        idle >= Duration::from_secs(3),
        "closed before --idle-timeout"
    );
    h3_fetch_ok(&srv);
    report(&mut srv, "h3 connection flood", H3_RSS_LIMIT_KIB);
}

#[test]
fn h3_one_address_cannot_take_every_slot() {
    let site = h3_site();
    let mut srv = start_h3(
        &site,
        &["--max-connections", "16", "--max-connections-per-ip", "4"],
    );
    let addr = quic_addr(&srv);
    let rt = rt();
    let ep = endpoint(&rt, "127.0.0.1:0");
    // 127.0.0.1 holds its four; a fifth from it is refused at once.
    let held: Vec<H3> = rt.block_on(async {
        let mut v = Vec::new();
        for _ in 0..4 {
            v.push(h3_connect(&ep, addr).await);
        }
        v
    });
    let fifth = rt.block_on(async {
        tokio::time::timeout(T, ep.connect(addr, "localhost").expect("connect"))
            .await
            .expect("an answer to the fifth connection")
    });
    match fifth {
        Err(quinn::ConnectionError::ConnectionClosed(c))
            if c.error_code == quinn::TransportErrorCode::CONNECTION_REFUSED => {}
        other => panic!("a fifth connection from one address: {other:?}"),
    }
    // During: another address (Linux routes all of 127/8 to loopback) is served.
    let other = endpoint(&rt, "127.0.0.2:0");
    let got = rt.block_on(async {
        let c = h3_connect(&other, addr).await;
        raw_get(&c.conn, "/index.html").await
    });
    assert_eq!(got, Ok((Some(200), 13)));
    // The held four still serve.
    let got = rt.block_on(raw_get(&held[0].conn, "/index.html"));
    assert_eq!(got, Ok((Some(200), 13)));
    // Once the first address lets go, it is served again.
    for c in &held {
        c.conn.close(0x100u32.into(), b"");
    }
    drop(held);
    std::thread::sleep(Duration::from_millis(300));
    h3_fetch_ok(&srv);
    report(&mut srv, "h3 connections per address", H3_RSS_LIMIT_KIB);
}

/// `n` real clients' first QUIC datagrams (Initials, each a ClientHello for "localhost"
/// with a connection ID of its own), caught on a socket that never answers.
fn initials(rt: &tokio::runtime::Runtime, n: usize) -> Vec<Vec<u8>> {
    let catcher = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind catcher");
    catcher.set_read_timeout(Some(T)).expect("timeout");
    let to = catcher.local_addr().expect("catcher address");
    let ep = endpoint(rt, "127.0.0.1:0");
    let mut got: Vec<Vec<u8>> = Vec::new();
    let mut connecting = Vec::new();
    let mut buf = vec![0u8; 65536];
    while got.len() < n {
        connecting.push({
            let _in = rt.enter();
            ep.connect(to, "localhost").expect("connect")
        });
        // The new attempt's Initial (retransmissions of earlier ones are skipped).
        loop {
            let len = catcher.recv(&mut buf).expect("a client's Initial");
            let p = &buf[..len];
            assert!(
                len >= 1200 && p[0] & 0xf0 == 0xc0,
                "not a QUIC Initial: {len} bytes"
            );
            let dcid = &p[6..6 + p[5] as usize];
            if !got.iter().any(|g| &g[6..6 + g[5] as usize] == dcid) {
                got.push(p.to_vec());
                break;
            }
        }
    }
    got
}

#[test]
fn h3_forged_source_addresses_take_no_slot() {
    let site = h3_site();
    let mut srv = start_h3(
        &site,
        &[
            "--max-connections",
            "8",
            "--max-connections-per-ip",
            "4",
            "--sniff-timeout",
            "30",
        ],
    );
    let addr = quic_addr(&srv);
    let rt = rt();
    let initials = initials(&rt, 44);
    // Initials from 40 addresses that never answer (a forger's), then from four
    // ports of 127.0.0.1, the address the normal client below uses. Each is a new
    // connection attempt whose handshake could only end after --sniff-timeout.
    let mut forged = Vec::new();
    for i in 0..40u8 {
        forged.push(std::net::UdpSocket::bind(format!("127.0.1.{}:0", i + 1)).expect("bind"));
    }
    for _ in 0..4 {
        forged.push(std::net::UdpSocket::bind("127.0.0.1:0").expect("bind"));
    }
    for (s, initial) in forged.iter().zip(&initials) {
        s.send_to(initial, addr).expect("send a forged Initial");
    }
    std::thread::sleep(Duration::from_millis(300));
    // During: the normal client is asked to prove its address and then served, from the
    // address the forger named and from another.
    h3_fetch_ok(&srv);
    let other = endpoint(&rt, "127.0.0.2:0");
    let got = rt.block_on(async {
        let c = h3_connect(&other, addr).await;
        raw_get(&c.conn, "/index.html").await
    });
    assert_eq!(got, Ok((Some(200), 13)));
    eprintln!("{} forged Initials: normal clients served", forged.len());
    drop(forged);
    h3_fetch_ok(&srv);
    report(&mut srv, "h3 forged source addresses", H3_RSS_LIMIT_KIB);
}

#[test]
fn h3_stream_flood_on_one_connection_is_bounded() {
    let site = h3_site();
    let mut srv = start_h3(&site, &["--echo-upload", "--header-read-timeout", "1"]);
    let addr = quic_addr(&srv);
    let rt = rt();
    let ep = endpoint(&rt, "127.0.0.1:0");
    let h3 = rt.block_on(h3_connect(&ep, addr));
    let conn = h3.conn.clone();
    // 50 streams: a HEADERS frame declaring 40,000 bytes, 20,000 of them sent (valid field
    // lines: `age: 0` by its static index), the rest never.
    let partial = rt.block_on(async {
        let mut v = Vec::new();
        for _ in 0..50 {
            let (mut send, recv) = conn.open_bi().await.expect("open");
            let mut f = Vec::new();
            varint(&mut f, 0x01);
            varint(&mut f, 40_000);
            f.extend_from_slice(&request_fields("GET", "/index.html"));
            f.resize(20_000, 0xc2);
            send.write_all(&f).await.expect("write");
            v.push((send, recv, Instant::now()));
        }
        v
    });
    // 50 streams: POST /echo, a DATA frame declaring 1 GiB, its bytes pushed for 3 s while
    // the echo is never read.
    let pushed = Arc::new(AtomicU64::new(0));
    let pushers: Vec<_> = (0..50)
        .map(|_| {
            let (conn, pushed) = (conn.clone(), pushed.clone());
            rt.spawn(async move {
                let (mut send, recv) = conn.open_bi().await.expect("open");
                let mut head = frame(0x01, &request_fields("POST", "/echo"));
                varint(&mut head, 0x00);
                varint(&mut head, 1 << 30);
                let chunk = vec![b'x'; 64 * 1024];
                // Until flow control stops it (even the head, once the connection's
                // window is taken), or 3 s.
                let push = async {
                    if send.write_all(&head).await.is_ok() {
                        while send.write_all(&chunk).await.is_ok() {
                            pushed.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                        }
                    }
                };
                let _ = tokio::time::timeout(Duration::from_secs(3), push).await;
                (send, recv)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    // During: a normal request on another connection.
    h3_fetch_ok(&srv);
    let held: Vec<_> = pushers
        .into_iter()
        .map(|p| rt.block_on(p).expect("pusher"))
        .collect();
    let rss = proc_status_kib(srv.pid(), "VmRSS");
    eprintln!(
        "50 unread uploads took {} MiB; server RSS {rss} KiB",
        pushed.load(Ordering::Relaxed) >> 20
    );
    // The unfinished header sections were ended after --header-read-timeout (1 s).
    for (i, (_send, mut recv, opened)) in partial.into_iter().enumerate() {
        let ended = rt.block_on(response(&mut recv, Duration::from_secs(5)));
        let after = opened.elapsed();
        assert!(
            ended.as_ref().map_or(true, |(status, _)| status.is_none()),
            "stream {i}: {ended:?}"
        );
        assert!(
            after < Duration::from_secs(8),
            "stream {i} still open after {after:?}"
        );
    }
    // Letting the uploads go frees their streams; the connection serves on.
    for (mut send, mut recv) in held {
        let _ = send.reset(0x10c_u32.into()); // H3_REQUEST_CANCELLED
        let _ = recv.stop(0x10c_u32.into());
    }
    let got = rt.block_on(raw_get(&conn, "/index.html"));
    assert_eq!(got, Ok((Some(200), 13)));
    h3_fetch_ok(&srv);
    report(&mut srv, "h3 stream flood", H3_RSS_LIMIT_KIB);
}

#[test]
fn h3_header_sections_past_the_limit_are_refused_unbuffered() {
    let site = h3_site();
    let mut srv = start_h3(&site, &[]);
    let addr = quic_addr(&srv);
    let rt = rt();
    let ep = endpoint(&rt, "127.0.0.1:0");
    let h3 = rt.block_on(h3_connect(&ep, addr));
    let conn = h3.conn.clone();
    // 20 streams: a HEADERS frame declaring 16 MiB of valid field lines, pushed for up to
    // 3 s.
    let floods: Vec<_> = (0..20)
        .map(|_| {
            let conn = conn.clone();
            rt.spawn(async move {
                let t = Instant::now();
                let (mut send, mut recv) = conn.open_bi().await.expect("open");
                let mut head = Vec::new();
                varint(&mut head, 0x01);
                varint(&mut head, 16 << 20);
                head.extend_from_slice(&request_fields("GET", "/index.html"));
                let chunk = vec![0xc2u8; 64 * 1024];
                let mut sent = 0;
                // The frame until the server stops it, flow control holds it, or 3 s;
                // meanwhile the answer.
                let push = async {
                    if send.write_all(&head).await.is_ok() {
                        sent = head.len();
                        while sent < 16 << 20 && send.write_all(&chunk).await.is_ok() {
                            sent += chunk.len();
                        }
                    }
                };
                let answer = async {
                    let got = response(&mut recv, T).await;
                    (got, t.elapsed())
                };
                let (_, (got, took)) =
                    tokio::join!(tokio::time::timeout(Duration::from_secs(3), push), answer);
                (sent, got, took)
            })
        })
        .collect();
    // One more: 4,000 bytes of `age: 0` references, which decode to 144,000 bytes (32 per
    // field line over the name and value), past the 64 KiB limit.
    let mut small = request_fields("GET", "/index.html");
    small.resize(small.len() + 4000, 0xc2);
    let got = rt.block_on(async {
        let (mut send, mut recv) = conn.open_bi().await.expect("open");
        send.write_all(&frame(0x01, &small)).await.expect("write");
        let _ = send.finish();
        response(&mut recv, T).await
    });
    assert_eq!(got, Ok((Some(431), 0)), "a section decoding past the limit");
    // During: a normal request on another connection.
    h3_fetch_ok(&srv);
    for f in floods {
        let (sent, got, took) = rt.block_on(f).expect("flood");
        eprintln!("HEADERS declaring 16 MiB: {sent} bytes went out, {got:?} after {took:?}");
        assert_eq!(got, Ok((Some(431), 0)), "a HEADERS frame declaring 16 MiB");
        assert!(
            sent < 4 * MIB,
            "{sent} bytes of a 16 MiB HEADERS frame went out"
        );
    }
    // The connection still serves.
    let got = rt.block_on(raw_get(&conn, "/index.html"));
    assert_eq!(got, Ok((Some(200), 13)));
    h3_fetch_ok(&srv);
    report(
        &mut srv,
        "h3 header sections past the limit",
        H3_RSS_LIMIT_KIB,
    );
}

#[test]
fn h3_unread_responses_are_held_by_flow_control() {
    let site = h3_site();
    let mut srv = start_h3(&site, &[]);
    let addr = quic_addr(&srv);
    let rt = rt();
    let ep = endpoint(&rt, "127.0.0.1:0");
    let h3 = rt.block_on(h3_connect(&ep, addr));
    let conn = h3.conn.clone();
    // 20 streams GET the 24 MiB file and are never read.
    let mut streams = rt.block_on(async {
        let mut v = Vec::new();
        for _ in 0..20 {
            let (mut send, recv) = conn.open_bi().await.expect("open");
            send.write_all(&frame(0x01, &request_fields("GET", "/big.bin")))
                .await
                .expect("write");
            send.finish().expect("finish");
            v.push((send, recv));
        }
        v
    });
    std::thread::sleep(Duration::from_secs(2));
    // During: a normal request on another connection.
    h3_fetch_ok(&srv);
    let rss = proc_status_kib(srv.pid(), "VmRSS");
    eprintln!("20 unread 24 MiB responses: server RSS {rss} KiB");
    // Read, one of them comes whole.
    let (_, mut recv) = streams.pop().expect("a stream");
    let got = rt.block_on(response(&mut recv, Duration::from_secs(30)));
    assert_eq!(got, Ok((Some(200), 24 * MIB)));
    for (_, mut recv) in streams {
        let _ = recv.stop(0x10c_u32.into()); // H3_REQUEST_CANCELLED
    }
    let got = rt.block_on(raw_get(&conn, "/index.html"));
    assert_eq!(got, Ok((Some(200), 13)));
    h3_fetch_ok(&srv);
    report(&mut srv, "h3 unread responses", H3_RSS_LIMIT_KIB);
}

// =======================================================================================
// speedy proxy.

/// The origin of the normal requests: `speedy serve` with a small page.
fn good_origin() -> (TempDir, Server) {
    let d = TempDir::new("abuse-proxy");
    std::fs::write(d.join("index.html"), b"<p>hello</p>\n").expect("write index");
    let root = d.to_str().expect("utf-8 path").to_string();
    let srv = Server::start(&["--root", &root]);
    (d, srv)
}

/// `speedy proxy` on a free port that lets clients reach 127.0.0.1 (any port), plus
/// `extra`.
fn start_proxy(extra: &[&str]) -> Server {
    let mut cmd = Command::new(BIN);
    cmd.args(["proxy", "--listen", "127.0.0.1:0", "--allow", "127.0.0.1"])
        .args(extra);
    Server::spawn(cmd, "listening on ")
}

/// Sends `head` to the proxy on a new connection; the status of the answer and the rest
/// of what came until the proxy closed (or `limit` passed).
fn proxy_ask(proxy: &Server, head: &str, limit: Duration) -> (u16, String) {
    let mut s = TcpStream::connect(&proxy.addr).expect("connect to the proxy");
    s.set_read_timeout(Some(limit)).unwrap();
    s.write_all(head.as_bytes()).expect("write");
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got).into_owned();
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

/// A normal GET through the proxy to `origin` succeeds.
fn proxy_get_ok(proxy: &Server, origin: &str) {
    let head = format!(
        "GET http://{origin}/index.html HTTP/1.1\r\nHost: {origin}\r\nConnection: close\r\n\r\n"
    );
    let (status, text) = proxy_ask(proxy, &head, T);
    assert!(
        status == 200 && text.ends_with("<p>hello</p>\n"),
        "a normal request through the proxy: {text:?}"
    );
}

/// Reads an HTTP/1.1 response head (up to the blank line) within `limit`.
fn read_head(s: &mut TcpStream, limit: Duration) -> String {
    let end = Instant::now() + limit;
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut got = Vec::new();
    let mut b = [0u8; 1];
    while Instant::now() < end && !got.ends_with(b"\r\n\r\n") {
        match s.read(&mut b) {
            Ok(0) => break,
            Ok(_) => got.push(b[0]),
            Err(_) => {}
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// What an in-test origin does with each connection.
#[derive(Clone, Copy)]
enum Behaviour {
    /// Reads everything, never writes.
    Silent,
    /// Reads the request head, then sends a chunked body that never ends, in chunks of
    /// 1 MiB.
    Endless,
}

/// A TCP origin on loopback, served by its own runtime: dropping it ends the accept loop
/// and every connection's task with the runtime, closing their sockets.
struct Origin {
    _rt: tokio::runtime::Runtime,
    addr: String,
    /// Bytes it has written.
    sent: Arc<AtomicU64>,
    /// Connections it has accepted.
    accepted: Arc<AtomicU64>,
}

impl Origin {
    fn start(behaviour: Behaviour) -> Origin {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let rt = rt();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind an origin");
        let addr = listener.local_addr().expect("addr").to_string();
        let sent = Arc::new(AtomicU64::new(0));
        let accepted = Arc::new(AtomicU64::new(0));
        let (s, a) = (sent.clone(), accepted.clone());
        rt.spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                a.fetch_add(1, Ordering::Relaxed);
                let sent = s.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    if let Behaviour::Endless = behaviour {
                        let mut head = Vec::new();
                        while !head.ends_with(b"\r\n\r\n") {
                            match sock.read(&mut buf[..1]).await {
                                Ok(1) => head.push(buf[0]),
                                _ => return,
                            }
                        }
                        let mut out = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
                        loop {
                            out.extend_from_slice(b"100000\r\n");
                            out.resize(out.len() + 0x100000, b'y');
                            out.extend_from_slice(b"\r\n");
                            if sock.write_all(&out).await.is_err() {
                                return;
                            }
                            sent.fetch_add(out.len() as u64, Ordering::Relaxed);
                            out.clear();
                        }
                    }
                    while let Ok(n) = sock.read(&mut buf).await {
                        if n == 0 {
                            return;
                        }
                    }
                });
            }
        });
        Origin {
            _rt: rt,
            addr,
            sent,
            accepted,
        }
    }
}

#[test]
fn proxy_endless_uploads_are_bounded() {
    let (_site, origin) = good_origin();
    let mut proxy = start_proxy(&[]);
    // 4 clients POST chunked bodies that never end, 1 MiB chunks for up to 5 s each.
    let uploads: Vec<_> = (0..4)
        .map(|_| {
            let (paddr, oaddr) = (proxy.addr.clone(), origin.addr.clone());
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(&paddr).expect("connect to the proxy");
                write!(
                    s,
                    "POST http://{oaddr}/upload HTTP/1.1\r\nHost: {oaddr}\r\nTransfer-Encoding: chunked\r\n\r\n"
                )
                .unwrap();
                s.set_write_timeout(Some(Duration::from_millis(500))).unwrap();
                let chunk = format!("{:x}\r\n{}\r\n", MIB, "x".repeat(MIB));
                let end = Instant::now() + Duration::from_secs(5);
                let mut sent = 0;
                while Instant::now() < end && s.write_all(chunk.as_bytes()).is_ok() {
                    sent += 1;
                }
                (sent, read_head(&mut s, T))
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    // During: a normal request.
    proxy_get_ok(&proxy, &origin.addr);
    for u in uploads {
        let (sent, head) = u.join().expect("upload");
        eprintln!(
            "endless upload: {sent} MiB went out, then {:?}",
            head.lines().next()
        );
        assert!(
            head.starts_with("HTTP/1.1 413") || head.starts_with("HTTP/1.1 503"),
            "an endless upload: {head:?}"
        );
    }
    proxy_get_ok(&proxy, &origin.addr);
    report(&mut proxy, "proxy endless uploads", PROXY_RSS_LIMIT_KIB);
}

#[test]
fn proxy_answers_504_for_an_origin_that_never_answers() {
    let (_site, origin) = good_origin();
    let silent = Origin::start(Behaviour::Silent);
    let mut proxy = start_proxy(&["--timeout", "1"]);
    let t0 = Instant::now();
    let asks: Vec<_> = (0..20)
        .map(|i| {
            let (paddr, saddr) = (proxy.addr.clone(), silent.addr.clone());
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(&paddr).expect("connect to the proxy");
                write!(
                    s,
                    "GET http://{saddr}/{i} HTTP/1.1\r\nHost: {saddr}\r\nConnection: close\r\n\r\n"
                )
                .unwrap();
                let head = read_head(&mut s, T);
                (head, t0.elapsed())
            })
        })
        .collect();
    // During: a normal request to another origin.
    proxy_get_ok(&proxy, &origin.addr);
    for a in asks {
        let (head, took) = a.join().expect("ask");
        assert!(head.starts_with("HTTP/1.1 504"), "{head:?}");
        assert!(
            head.contains("x-speedy-proxy-error: gateway timeout"),
            "{head:?}"
        );
        assert!(
            took >= Duration::from_millis(900) && took < Duration::from_secs(8),
            "504 after {took:?}"
        );
    }
    eprintln!(
        "20 requests to a silent origin: 504 each within {:?}; the origin took {} connections",
        t0.elapsed(),
        silent.accepted.load(Ordering::Relaxed)
    );
    // Again, on whatever the proxy keeps of the first ones.
    let head = format!(
        "GET http://{}/again HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        silent.addr
    );
    assert_eq!(proxy_ask(&proxy, &head, T).0, 504);
    drop(silent);
    proxy_get_ok(&proxy, &origin.addr);
    report(&mut proxy, "proxy silent origin", PROXY_RSS_LIMIT_KIB);
}

#[test]
fn proxy_endless_responses_to_clients_that_do_not_read_are_bounded() {
    let (_site, origin) = good_origin();
    let endless = Origin::start(Behaviour::Endless);
    // The origin under 8 names: the proxy keeps one HTTP/1.1 connection per origin, and a
    // request waits there while the body before it is unfinished.
    let resolve: Vec<String> = (0..8)
        .map(|i| format!("e{i}.test={}", endless.addr))
        .collect();
    let mut args = Vec::new();
    for r in &resolve {
        args.extend(["--resolve", r.as_str()]);
    }
    let mut proxy = start_proxy(&args);
    // 8 clients ask for the endless body, read the head, then stop reading.
    let mut clients: Vec<TcpStream> = (0..8)
        .map(|i| {
            let mut s = TcpStream::connect(&proxy.addr).expect("connect to the proxy");
            write!(
                s,
                "GET http://e{i}.test/ HTTP/1.1\r\nHost: e{i}.test\r\n\r\n"
            )
            .unwrap();
            let head = read_head(&mut s, T);
            assert!(head.starts_with("HTTP/1.1 200"), "client {i}: {head:?}");
            s
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let at_2s = endless.sent.load(Ordering::Relaxed);
    // During: a normal request.
    proxy_get_ok(&proxy, &origin.addr);
    std::thread::sleep(Duration::from_secs(1));
    let at_3s = endless.sent.load(Ordering::Relaxed);
    eprintln!(
        "8 unread endless responses: the origin wrote {} MiB in 2 s, {} KiB more in the next",
        at_2s >> 20,
        (at_3s - at_2s) >> 10
    );
    // Held: what moved in the third second is at most a socket buffer's worth.
    assert!(
        at_3s - at_2s < 8 * MIB as u64,
        "the origin is still read: {} bytes in a second",
        at_3s - at_2s
    );
    // Reading again, the body flows.
    let mut b = vec![0u8; 64 * 1024];
    clients[0].set_read_timeout(Some(T)).unwrap();
    let mut got = 0;
    while got < 4 * MIB {
        match clients[0].read(&mut b) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    assert!(got >= 4 * MIB, "the body stopped after {got} bytes");
    drop(clients);
    drop(endless);
    proxy_get_ok(&proxy, &origin.addr);
    report(&mut proxy, "proxy endless responses", PROXY_RSS_LIMIT_KIB);
}

#[test]
fn proxy_holds_a_thousand_tunnels_in_bounded_memory() {
    let (_site, origin) = good_origin();
    let target = Origin::start(Behaviour::Silent);
    let mut proxy = start_proxy(&[]);
    let base = proc_status_kib(proxy.pid(), "VmRSS");
    let t0 = Instant::now();
    let tunnels: Vec<TcpStream> = (0..1000)
        .map(|_| {
            let mut s = TcpStream::connect(&proxy.addr).expect("connect to the proxy");
            write!(s, "CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n\r\n", target.addr).unwrap();
            let head = read_head(&mut s, T);
            assert!(head.starts_with("HTTP/1.1 200"), "{head:?}");
            s.write_all(b"hello through the tunnel").unwrap();
            s
        })
        .collect();
    let opened = t0.elapsed();
    // During: a normal request.
    proxy_get_ok(&proxy, &origin.addr);
    let rss = proc_status_kib(proxy.pid(), "VmRSS");
    eprintln!(
        "1,000 tunnels open in {opened:?}: proxy RSS {base} KiB before, {rss} KiB with them ({} KiB each)",
        (rss.saturating_sub(base)) / 1000
    );
    assert_eq!(target.accepted.load(Ordering::Relaxed), 1000);
    let fds = std::fs::read_dir(format!("/proc/{}/fd", proxy.pid()))
        .map(|d| d.count())
        .unwrap_or(0);
    drop(tunnels);
    // The tunnels end with their clients: the proxy's sockets go back.
    let end = Instant::now() + T;
    let mut now = fds;
    while now > 100 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
        now = std::fs::read_dir(format!("/proc/{}/fd", proxy.pid()))
            .map(|d| d.count())
            .unwrap_or(0);
    }
    eprintln!("proxy fds: {fds} with the tunnels, {now} after");
    assert!(now <= 100, "{now} fds left after the tunnels closed");
    proxy_get_ok(&proxy, &origin.addr);
    report(&mut proxy, "proxy 1,000 tunnels", PROXY_RSS_LIMIT_KIB);
}
