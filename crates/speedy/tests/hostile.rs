//! speedy's clients against hostile servers (issue 19, item 7), through the real
//! program on loopback: a server that never answers, one that stalls mid-body, one whose
//! response head never ends, one that streams an endless style sheet. `speedy fetch` must
//! fail the request with a reason within its timeouts (and `--max-time` end the command
//! with status 28); `speedy load` must fail the object with a reason and keep its memory
//! bounded. Each server is a thread on its own listener; it ends with the test process.

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};
use support::{hostile_server, peak_rss_until_exit, read_request_head, run_bounded, BIN};

/// A server thread that runs `each` on every accepted connection (up to 64) after
/// reading the request head; returns its address.
fn hostile(each: fn(TcpStream)) -> String {
    hostile_server(64, each)
}

fn silent(c: TcpStream) {
    std::thread::sleep(Duration::from_secs(20));
    drop(c);
}

fn stalls_mid_body(mut c: TcpStream) {
    let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nabc");
    std::thread::sleep(Duration::from_secs(20));
}

fn endless_head(mut c: TcpStream) {
    let _ = c.write_all(b"HTTP/1.1 200 OK\r\n");
    let line = format!("x-pad: {}\r\n", "a".repeat(1000));
    let end = Instant::now() + Duration::from_secs(15);
    while Instant::now() < end && c.write_all(line.as_bytes()).is_ok() {}
}

fn page_with_endless_css(mut c: TcpStream) {
    // The root links a style sheet; the same server answers the style sheet with an
    // endless body (every request after the first on this connection is the sheet's).
    let html = b"<html><head><link rel=\"stylesheet\" href=\"/s.css\"></head><body>x</body></html>";
    let _ = write!(
        c,
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n",
        html.len()
    );
    let _ = c.write_all(html);
    read_request_head(&mut c);
    let _ = c.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/css\r\nContent-Length: 100000000000\r\n\r\n",
    );
    let chunk = "a{color:red}\n".repeat(5000);
    let end = Instant::now() + Duration::from_secs(15);
    while Instant::now() < end && c.write_all(chunk.as_bytes()).is_ok() {}
}

fn fetch(args: &[&str], limit: Duration) -> (Option<i32>, String, String, Duration) {
    let t = Instant::now();
    let o = run_bounded(
        std::process::Command::new(BIN).arg("fetch").args(args),
        limit,
    );
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        t.elapsed(),
    )
}

#[test]
fn fetch_gives_up_on_silent_and_stalling_servers() {
    let quiet = hostile(silent);
    let (code, out, err, took) = fetch(
        &[
            "--protocol",
            "http1",
            "--read-timeout",
            "1",
            &format!("http://{quiet}/"),
        ],
        Duration::from_secs(15),
    );
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("no response within 1s"), "{out}{err}");
    assert!(took < Duration::from_secs(8), "{took:?}");

    let stall = hostile(stalls_mid_body);
    let (code, out, err, took) = fetch(
        &[
            "--protocol",
            "http1",
            "--read-timeout",
            "1",
            &format!("http://{stall}/"),
        ],
        Duration::from_secs(15),
    );
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("nothing from the peer for 1s"), "{out}{err}");
    assert!(took < Duration::from_secs(8), "{took:?}");

    // --max-time bounds the whole command, whatever the read timeout.
    let (code, out, err, took) = fetch(
        &[
            "--protocol",
            "http1",
            "--max-time",
            "1",
            &format!("http://{quiet}/"),
        ],
        Duration::from_secs(15),
    );
    assert_eq!(code, Some(28), "{out}{err}");
    assert!(err.contains("--max-time"), "{err}");
    assert!(took < Duration::from_secs(8), "{took:?}");
}

#[test]
fn the_loader_bounds_endless_heads_and_style_sheets() {
    // A root whose response head never ends: the root fails with the reason, at once.
    let head = hostile(endless_head);
    let o = run_bounded(
        std::process::Command::new(BIN).args([
            "load",
            "http://evil.example/",
            "--protocol",
            "http1",
            "--resolve",
            &format!("evil.example={head}"),
            "--timeout",
            "10",
        ]),
        Duration::from_secs(30),
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("response head over 64 KiB"), "{text}");

    // An endless style sheet: the load times out with the sheet failed, and the loader's
    // memory stays bounded while gigabytes arrive.
    let css = hostile(page_with_endless_css);
    let mut child = std::process::Command::new(BIN)
        .args([
            "load",
            "http://evil.example/",
            "--protocol",
            "http1",
            "--resolve",
            &format!("evil.example={css}"),
            "--timeout",
            "4",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (status, peak) = peak_rss_until_exit(&mut child, Duration::from_secs(30), "the loader");
    eprintln!("endless style sheet: loader peak RSS {peak} KiB, {status}");
    assert!(peak < 128 * 1024, "loader RSS reached {peak} KiB");
}

/// One HTTP/2 frame: length, type, flags, stream id, payload.
fn h2_frame(ty: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let n = payload.len();
    let mut f = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, ty, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// Starts an h2c (prior knowledge) server thread: for every connection (up to 16) it
/// reads the client's preface, then discards whatever the client sends while `each`
/// writes: the server's SETTINGS and ACK are sent first. Returns its address.
fn hostile_h2(each: fn(TcpStream)) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for c in l.incoming().take(16) {
            let Ok(mut c) = c else { continue };
            std::thread::spawn(move || {
                let mut preface = [0u8; 24];
                if c.read_exact(&mut preface).is_err() {
                    return;
                }
                if let Ok(mut r) = c.try_clone() {
                    std::thread::spawn(move || {
                        let mut sink = [0u8; 4096];
                        while r.read(&mut sink).is_ok_and(|n| n > 0) {}
                    });
                }
                let _ = c.write_all(&h2_frame(4, 0, 0, &[]));
                let _ = c.write_all(&h2_frame(4, 1, 0, &[]));
                each(c);
            });
        }
    });
    addr
}

fn h2_silent(c: TcpStream) {
    std::thread::sleep(Duration::from_secs(20));
    drop(c);
}

/// A response HEADERS frame for stream 1 without END_HEADERS, then CONTINUATION frames of
/// 100-byte literal headers for as long as the client reads them.
fn h2_continuation_flood(mut c: TcpStream) {
    // HPACK literal without indexing, new name: `x-pad: a × 100`.
    let mut literal = vec![0x00, 5];
    literal.extend_from_slice(b"x-pad");
    literal.push(100);
    literal.extend_from_slice(&[b'a'; 100]);
    let mut block = vec![0x88]; // :status 200 (static table index 8)
    while block.len() + literal.len() < 16_000 {
        block.extend_from_slice(&literal);
    }
    let _ = c.write_all(&h2_frame(1, 0, 1, &block));
    let cont = h2_frame(9, 0, 1, &block[1..]);
    let end = Instant::now() + Duration::from_secs(15);
    while Instant::now() < end && c.write_all(&cont).is_ok() {}
}

#[test]
fn fetch_over_h2_gives_up_on_silence_and_a_continuation_flood() {
    let quiet = hostile_h2(h2_silent);
    let (code, out, err, took) = fetch(
        &[
            "--protocol",
            "h2",
            "--read-timeout",
            "1",
            &format!("http://{quiet}/"),
        ],
        Duration::from_secs(15),
    );
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("no response within 1s"), "{out}{err}");
    assert!(took < Duration::from_secs(8), "{took:?}");

    // A response head that never ends: the request fails with the h2 library's reason
    // (the head is over the client's header-list bound), at once, memory bounded.
    let flood = hostile_h2(h2_continuation_flood);
    let mut child = std::process::Command::new(BIN)
        .args(["fetch", "--protocol", "h2", &format!("http://{flood}/")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (status, peak) =
        peak_rss_until_exit(&mut child, Duration::from_secs(30), "fetch under the flood");
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    eprintln!("h2 CONTINUATION flood: fetch peak RSS {peak} KiB, {status}: {out}");
    assert_eq!(status.code(), Some(1), "{out}");
    assert!(out.contains("\"error\""), "{out}");
    assert!(peak < 64 * 1024, "fetch RSS reached {peak} KiB");
}
