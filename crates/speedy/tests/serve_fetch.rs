//! End-to-end tests of `speedy serve` and `speedy fetch` through the real program, on
//! loopback: every protocol over TCP and TLS, push, echo, errors and safety of the root.
//! The file server's answers to raw HTTP/1.1 are tested in-process, in
//! `crates/speedy-server/tests/serve_files.rs`.

use serde_json::Value;
use sha2::{Digest, Sha256};
use speedy_test_support::TempDir;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_speedy");

struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn site() -> TempDir {
    let site = TempDir::new("e2e");
    let dir = site.to_path_buf();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("index.html"), "<html>hi</html>").unwrap();
    std::fs::write(dir.join("a.css"), "body{}").unwrap();
    std::fs::write(dir.join("sub/b.js"), "x=1").unwrap();
    let big: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(dir.join("big.bin"), big).unwrap();
    std::fs::write(
        dir.join("push.map"),
        "# comment\n/index.html: /a.css /sub/b.js\n",
    )
    .unwrap();
    site
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn serve(root: &Path, extra: &[&str]) -> Server {
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(root)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start speedy serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .strip_prefix("listening on ")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("bad first line {line:?}"));
    Server {
        addr: addr.to_string(),
        child,
    }
}

/// Runs `speedy fetch` with a deadline; returns (exit code, JSON lines, stderr).
fn fetch(args: &[String]) -> (i32, Vec<Value>, String) {
    let mut child = Command::new(BIN)
        .arg("fetch")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let mut out = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut out)
                .unwrap();
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            let lines = out
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
                .collect();
            return (st.code().unwrap_or(-1), lines, err);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("speedy fetch {args:?} did not finish in 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sha(p: &Path) -> String {
    hex(&Sha256::digest(std::fs::read(p).unwrap()))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn find<'a>(lines: &'a [Value], suffix: &str, pushed: bool) -> &'a Value {
    lines
        .iter()
        .find(|l| l["url"].as_str().unwrap().ends_with(suffix) && l["pushed"] == pushed)
        .unwrap_or_else(|| panic!("no line for {suffix} (pushed {pushed}) in {lines:?}"))
}

#[test]
fn serves_every_protocol_over_tcp_and_tls_with_push() {
    let root = site();
    let plain = serve(
        &root,
        &["--push-map", root.join("push.map").to_str().unwrap()],
    );
    let tls = serve(
        &root,
        &[
            "--push-map",
            root.join("push.map").to_str().unwrap(),
            "--tls-self-signed",
        ],
    );
    for (srv, scheme) in [(&plain, "http"), (&tls, "https")] {
        for proto in ["spdy/3.1", "spdy/3", "spdy/2", "http/1.1"] {
            let urls = ["/index.html", "/big.bin", "/sub/b.js"]
                .map(|p| format!("{scheme}://{}{p}", srv.addr));
            let mut args = vec!["-k".to_string(), "--protocol".into(), proto.into()];
            args.extend(urls);
            let (code, lines, err) = fetch(&args);
            assert_eq!(code, 0, "{scheme} {proto}: {err} {lines:?}");
            for (suffix, file) in [
                ("/index.html", "index.html"),
                ("/big.bin", "big.bin"),
                ("/sub/b.js", "sub/b.js"),
            ] {
                let l = find(&lines, suffix, false);
                assert_eq!(l["status"], 200);
                assert_eq!(l["protocol"], proto);
                assert_eq!(
                    l["sha256"],
                    sha(&root.join(file)),
                    "{scheme} {proto} {suffix}"
                );
            }
            if proto == "http/1.1" {
                assert!(
                    lines.iter().all(|l| l["pushed"] == false),
                    "no push over HTTP/1.1"
                );
            } else {
                let p = find(&lines, "/a.css", true);
                assert_eq!(
                    p["sha256"],
                    sha(&root.join("a.css")),
                    "{scheme} {proto} push"
                );
                find(&lines, "/sub/b.js", true);
            }
        }
    }
}

#[test]
fn fixed_header_codes_are_read_by_every_spdy_version() {
    // Response header blocks from speedy's own deflate encoder (fixed Huffman codes),
    // plain and CRIME-safe, inflated by the client's stock zlib: many responses on one
    // session, so later blocks refer back into earlier ones.
    let root = site();
    for mode in ["zlib", "crime-safe"] {
        let srv = serve(
            &root,
            &[
                "--fixed-header-codes",
                "--header-level",
                "1",
                "--header-compression",
                mode,
            ],
        );
        for proto in ["spdy/3.1", "spdy/3", "spdy/2"] {
            let mut args = vec!["--protocol".to_string(), proto.into()];
            for i in 0..40 {
                let p = ["/index.html", "/a.css", "/sub/b.js", "/big.bin"][i % 4];
                args.push(format!("http://{}{p}?{i}", srv.addr));
            }
            let (code, lines, err) = fetch(&args);
            assert_eq!(code, 0, "{mode} {proto}: {err} {lines:?}");
            assert_eq!(lines.len(), 40, "{mode} {proto}");
            for l in &lines {
                assert_eq!(l["status"], 200, "{mode} {proto}: {l}");
            }
            let l = find(&lines, "/big.bin?39", false);
            assert_eq!(l["sha256"], sha(&root.join("big.bin")), "{mode} {proto}");
        }
    }
}

#[test]
fn echoes_uploads_and_reports_resets_and_missing_files() {
    let root = site();
    let srv = serve(&root, &["--echo-upload", "--reset-path", "/boom"]);
    let body = root.join("big.bin");
    let (code, lines, _) = fetch(&[
        format!("http://{}/up", srv.addr),
        "--data".into(),
        body.to_string_lossy().into(),
    ]);
    assert_eq!(code, 0);
    assert_eq!(lines[0]["sha256"], sha(&body));
    assert_eq!(lines[0]["bytes"], 300_000);
    let (code, lines, _) = fetch(&[
        format!("http://{}/boom", srv.addr),
        format!("http://{}/index.html", srv.addr),
        format!("http://{}/nope", srv.addr),
    ]);
    assert_eq!(
        code, 1,
        "a reset (no response) makes the exit status 1; a 404 alone does not"
    );
    assert!(find(&lines, "/boom", false)["error"]
        .as_str()
        .unwrap()
        .contains("CANCEL"));
    assert_eq!(
        find(&lines, "/index.html", false)["status"],
        200,
        "other streams of the session still succeed"
    );
    assert_eq!(find(&lines, "/nope", false)["status"], 404);
}

#[test]
fn upgrades_http1_to_spdy31_with_a_stream_protocol() {
    let root = site();
    let srv = serve(
        &root,
        &[
            "--stream-protocol",
            "v4.channel.k8s.io",
            "--stream-protocol",
            "channel.k8s.io",
        ],
    );
    let url = |p: &str| format!("http://{}{p}", srv.addr);
    let offer = |p: &str| ["--stream-protocol".to_string(), p.to_string()];
    // The first offered protocol the server accepts is chosen and reported.
    let mut args = vec!["--upgrade".to_string()];
    args.extend(offer("v5.channel.k8s.io"));
    args.extend(offer("channel.k8s.io"));
    args.extend([url("/index.html"), url("/big.bin")]);
    let (code, lines, err) = fetch(&args);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("stream protocol channel.k8s.io"), "{err}");
    for l in &lines {
        assert_eq!(l["protocol"], "spdy/3.1", "{l}");
        assert_eq!(l["status"], 200, "{l}");
    }
    assert_eq!(
        find(&lines, "/big.bin", false)["sha256"],
        sha(&root.join("big.bin"))
    );
    // No common protocol: 403 naming what the server accepts.
    let mut args = vec!["--upgrade".to_string()];
    args.extend(offer("v9.example"));
    args.push(url("/index.html"));
    let (code, lines, _) = fetch(&args);
    assert_eq!(code, 1);
    let e = lines[0]["error"].as_str().unwrap();
    assert!(
        e.contains("403") && e.contains("v4.channel.k8s.io, channel.k8s.io"),
        "{e}"
    );
    // An upgrade that offers nothing is accepted without the header.
    let (code, _, err) = fetch(&["--upgrade".into(), url("/a.css")]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("stream protocol"), "{err}");
}

#[test]
fn samples_the_sender_side_tcp_series_of_each_connection() {
    let root = site();
    let big: Vec<u8> = (0..16_000_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.join("big4.bin"), big).unwrap();
    let series = root.join("series.jsonl");
    let srv = serve(
        &root,
        &[
            "--tcp-series",
            series.to_str().unwrap(),
            "--tcp-interval-ms",
            "2",
        ],
    );
    let (code, lines, err) = fetch(&[format!("http://{}/big4.bin", srv.addr)]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(lines[0]["bytes"], 16_000_000);
    // Give the sampler a few intervals to see the close, then the series must stop.
    std::thread::sleep(Duration::from_millis(300));
    let read = || -> Vec<Value> {
        std::fs::read_to_string(&series)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let samples = read();
    assert!(samples.len() >= 2, "{} samples", samples.len());
    let mut last_t = -1.0;
    let mut acked = 0;
    for s in &samples {
        assert_eq!(s["conn"], 1, "one connection: {s}");
        let t = s["t_ms"].as_f64().unwrap();
        assert!(t > last_t, "time goes forward: {s}");
        last_t = t;
        assert!(s["cwnd"].as_u64().unwrap() > 0, "{s}");
        acked = s["bytes_acked"].as_u64().unwrap();
    }
    assert!(
        acked > 3_000_000,
        "the last sample saw the download acknowledged: {acked}"
    );
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        read().len(),
        samples.len(),
        "no samples after the connection closed"
    );
}

#[test]
fn verbose_fetch_prints_frames() {
    let root = site();
    let srv = serve(&root, &[]);
    let out_dir = root.join("out");
    let (code, _, err) = fetch(&[
        "-v".into(),
        "-O".into(),
        out_dir.to_string_lossy().into(),
        format!("http://{}/sub/b.js", srv.addr),
    ]);
    assert_eq!(code, 0);
    assert!(err.contains("> SYN_STREAM stream=1"), "{err}");
    assert!(err.contains("< SYN_REPLY stream=1"), "{err}");
    assert!(err.contains("< DATA stream=1 len=3 fin"), "{err}");
    assert_eq!(std::fs::read(out_dir.join("sub_b.js")).unwrap(), b"x=1");
}

#[test]
fn refuses_bad_command_lines_with_a_message() {
    let run = |args: &[&str]| Command::new(BIN).args(args).output().unwrap();
    let o = run(&["fetch", "--protocol", "spdy/9", "http://127.0.0.1:1/"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown protocol \"spdy/9\""));
    let o = run(&["fetch", "ftp://x/"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("scheme must be http or https"));
    let o = run(&["serve", "--root", "/definitely/not/here"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/definitely/not/here"));
    let bad_map = std::env::temp_dir().join(format!("speedy-badmap-{}", rand_suffix()));
    std::fs::write(&bad_map, "/ok: /x\nno colon here\n").unwrap();
    let o = run(&[
        "serve",
        "--root",
        ".",
        "--push-map",
        bad_map.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_file(&bad_map);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(":2:"),
        "names the line: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = run(&["fetch", "http://127.0.0.1:1/x"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"error\""));
}

#[test]
fn speaks_http2_to_curl_over_h2c_and_tls() {
    let root = site();
    let plain = serve(&root, &[]);
    let tls = serve(&root, &["--tls-self-signed"]);
    let out = root.join("curl.out");
    for (flags, url) in [
        (
            vec!["--http2-prior-knowledge"],
            format!("http://{}/big.bin", plain.addr),
        ),
        (
            vec!["-k", "--http2"],
            format!("https://{}/big.bin", tls.addr),
        ),
    ] {
        let o = Command::new("curl")
            .args(["-s", "--max-time", "20", "-o"])
            .arg(&out)
            .args(["-w", "%{http_version} %{http_code}"])
            .args(&flags)
            .arg(&url)
            .output()
            .expect("curl is needed for this test (apt-get install curl)");
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "2 200",
            "{url} {flags:?}"
        );
        assert_eq!(sha(&out), sha(&root.join("big.bin")));
    }
}
