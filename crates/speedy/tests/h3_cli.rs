//! HTTP/3 through the real program: `speedy serve --h3` answered by `speedy fetch
//! --protocol h3` (objects byte for byte, HEAD, errors, a body over --max-body), options
//! that cannot work refused by name, and headless Chromium (an independent HTTP/3 and
//! QUIC stack) loading a page from `speedy serve --h3` by prior knowledge.

mod support;

use sha2::{Digest, Sha256};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{run_bounded, speedy_in, Server, TempDir};

fn json_lines(o: &std::process::Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Pseudo-random bytes (a fixed LCG): content a compressor cannot shortcut.
fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) as u8
        })
        .collect()
}

fn site(tag: &str) -> (TempDir, Vec<(String, Vec<u8>)>) {
    let dir = TempDir::new(tag);
    let root = dir.0.join("www");
    std::fs::create_dir_all(&root).unwrap();
    // Sizes: empty, one packet, many, and past the 16 MiB in-memory cache (streamed
    // from disk in chunks).
    let files = vec![
        ("empty.bin".to_string(), Vec::new()),
        ("small.txt".to_string(), b"hello over QUIC\n".to_vec()),
        ("mid.bin".to_string(), bytes(300_000, 1)),
        ("big.bin".to_string(), bytes(3 << 20, 2)),
        ("huge.bin".to_string(), bytes(17 << 20, 3)),
    ];
    for (name, data) in &files {
        std::fs::write(root.join(name), data).unwrap();
    }
    (dir, files)
}

#[test]
fn fetch_over_h3_gets_every_object_byte_for_byte() {
    let (dir, files) = site("h3-fetch");
    let root = dir.0.join("www");
    let srv = Server::start(&[
        "--root",
        root.to_str().unwrap(),
        "--tls-self-signed",
        "--h3",
        "--max-body",
        "1K",
    ]);
    let port = srv.addr.rsplit(':').next().unwrap().to_string();
    let base = format!("https://localhost:{port}");
    let mut args = vec!["fetch", "-k", "--protocol", "h3"];
    let urls: Vec<String> = files
        .iter()
        .map(|(n, _)| format!("{base}/{n}"))
        .chain([format!("{base}/missing.bin")])
        .collect();
    args.extend(urls.iter().map(String::as_str));
    let o = speedy_in(&dir.0, &args, Duration::from_secs(60));
    let lines = json_lines(&o);
    assert_eq!(lines.len(), files.len() + 1, "{}", stderr(&o));
    // Lines come as responses finish: find each by its URL.
    let line = |url: &str| {
        lines
            .iter()
            .find(|l| l["url"] == url)
            .unwrap_or_else(|| panic!("no line for {url}: {lines:?}"))
    };
    for (i, (name, data)) in files.iter().enumerate() {
        let l = line(&urls[i]);
        assert_eq!(l["protocol"], "h3", "{name}: {l}");
        assert_eq!(l["status"], 200, "{name}: {l}");
        assert_eq!(l["bytes"], data.len() as u64, "{name}: {l}");
        assert_eq!(
            l["sha256"],
            hex::encode(Sha256::digest(data)),
            "{name}: {l}"
        );
    }
    assert_eq!(line(&urls[files.len()])["status"], 404);

    // HEAD: the length of the body a GET would get, and no body.
    let o = speedy_in(
        &dir.0,
        &[
            "fetch",
            "-k",
            "--protocol",
            "h3",
            "-I",
            &format!("{base}/mid.bin"),
        ],
        Duration::from_secs(30),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.starts_with("h3 200") && out.contains("content-length: 300000"),
        "{out}\n{}",
        stderr(&o)
    );

    // A body over --max-body is refused unread with 413.
    let big = dir.0.join("big-upload.bin");
    std::fs::write(&big, bytes(4096, 9)).unwrap();
    let o = speedy_in(
        &dir.0,
        &[
            "fetch",
            "-k",
            "--protocol",
            "h3",
            "--data",
            big.to_str().unwrap(),
            &format!("{base}/small.txt"),
        ],
        Duration::from_secs(30),
    );
    assert_eq!(json_lines(&o)[0]["status"], 413, "{}", stderr(&o));

    // The load generator over h3: every request answered, none failed.
    let o = speedy_in(
        &dir.0,
        &[
            "bench",
            "-k",
            "--protocol",
            "h3",
            "-c",
            "2",
            "-m",
            "4",
            "-n",
            "200",
            "--warmup",
            "0s",
            "--json",
            &format!("{base}/small.txt"),
        ],
        Duration::from_secs(60),
    );
    let b: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("bench --json: {e}: {}", stderr(&o)));
    assert_eq!(b["errors"], 0, "{b}");
    assert_eq!(b["requests"], 200, "{b}");
    assert_eq!(b["bytes"], 200 * 16, "{b}");

    // -v says the connection was QUIC and ALPN chose h3.
    let o = speedy_in(
        &dir.0,
        &[
            "fetch",
            "-k",
            "--protocol",
            "h3",
            "-v",
            &format!("{base}/small.txt"),
        ],
        Duration::from_secs(30),
    );
    assert!(stderr(&o).contains("ALPN h3"), "{}", stderr(&o));
}

#[test]
fn h3_options_that_cannot_work_are_refused_by_name() {
    let (dir, _) = site("h3-refuse");
    let root = dir.0.join("www");
    let root = root.to_str().unwrap();
    // No TLS, no QUIC.
    let o = speedy_in(
        &dir.0,
        &["serve", "--listen", "127.0.0.1:0", "--root", root, "--h3"],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--h3: HTTP/3 needs TLS"),
        "{}",
        stderr(&o)
    );
    // SCTP and QUIC would both want the UDP port.
    let o = speedy_in(
        &dir.0,
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--root",
            root,
            "--tls-self-signed",
            "--h3",
            "--sctp",
        ],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--sctp"), "{}", stderr(&o));
    // QUIC is always encrypted.
    let o = speedy_in(
        &dir.0,
        &["fetch", "--protocol", "h3", "http://127.0.0.1:9/x"],
        Duration::from_secs(10),
    );
    let e = json_lines(&o)[0]["error"].to_string();
    assert!(
        e.contains("HTTP/3 runs over QUIC") && e.contains("https://"),
        "{e}"
    );
    // The loader's h3 is QUIC: never plain.
    let o = speedy_in(
        &dir.0,
        &[
            "load",
            "--protocol",
            "h3",
            "--plain",
            "https://127.0.0.1:9/x",
        ],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("QUIC is always encrypted"),
        "{}",
        stderr(&o)
    );
    // Nothing answers QUIC there: a connection error, not a hang.
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = sock.local_addr().unwrap().port();
    drop(sock);
    let o = speedy_in(
        &dir.0,
        &[
            "fetch",
            "-k",
            "--protocol",
            "h3",
            "--read-timeout",
            "3",
            &format!("https://127.0.0.1:{port}/x"),
        ],
        Duration::from_secs(30),
    );
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = json_lines(&o)[0]["error"].to_string();
    assert!(e.contains("over QUIC: not connected within 3s"), "{e}");
}

/// Headless Chromium's own QUIC and HTTP/3 (an independent implementation) loading a
/// page and its objects from `speedy serve --h3`, forced onto QUIC for that origin by
/// `--origin-to-force-quic-on`; the server's request log shows which protocol carried
/// each request.
#[test]
fn chromium_loads_a_page_over_h3_from_speedy_serve() {
    let chromium = std::env::var("SPEEDY_CHROMIUM").unwrap_or_else(|_| "chromium".into());
    if let Err(e) = Command::new(&chromium).arg("--version").output() {
        panic!("this test needs headless Chromium (apt-get install chromium, or set SPEEDY_CHROMIUM): {e}");
    }
    let dir = TempDir::new("h3-chromium");
    let root = dir.0.join("www");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join("index.html"),
        "<!doctype html><html><head><link rel=stylesheet href=a.css></head>\
         <body><img src=b.png><script src=c.js></script><p id=done>over h3</p></body></html>",
    )
    .unwrap();
    std::fs::write(root.join("a.css"), "p { color: green }").unwrap();
    std::fs::write(root.join("b.png"), bytes(40_000, 7)).unwrap();
    std::fs::write(root.join("c.js"), "document.title = 'ran';").unwrap();
    // Chromium's QUIC ignores --ignore-certificate-errors; it accepts a certificate whose
    // public key hash it is given (--ignore-certificate-errors-spki-list).
    let (cert, key, spki) = support::openssl_cert(&dir.0);
    let log = dir.0.join("requests.log");
    let srv = Server::start(&[
        "--root",
        root.to_str().unwrap(),
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
        "--h3",
        "--log-requests",
        log.to_str().unwrap(),
    ]);
    let origin = srv.addr.clone();
    let profile = dir.0.join("profile");
    let started = Instant::now();
    let o = run_bounded(
        Command::new(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--enable-quic",
                "--virtual-time-budget=10000",
                "--dump-dom",
            ])
            .arg(format!("--origin-to-force-quic-on={origin}"))
            .arg(format!("--ignore-certificate-errors-spki-list={spki}"))
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!("https://{origin}/index.html"))
            .stdin(Stdio::null()),
        Duration::from_secs(90),
    );
    let dom = String::from_utf8_lossy(&o.stdout);
    assert!(
        dom.contains("over h3"),
        "chromium did not get the page ({:?}): {dom}\n{}",
        started.elapsed(),
        stderr(&o)
    );
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    for path in ["/index.html", "/a.css", "/b.png", "/c.js"] {
        let line = logged
            .lines()
            .find(|l| l.split_whitespace().nth(2) == Some(path))
            .unwrap_or_else(|| panic!("{path} not requested: {logged}"));
        assert!(line.ends_with(" h3"), "{path} not over h3: {line}");
    }
    drop(srv);
}

/// The page loader over HTTP/3: a synthesized page replayed by `speedy serve --archive
/// --h3`, every object loaded over h3 (HAR `httpVersion` h3), the same objects as over h2.
#[test]
fn the_loader_loads_an_archived_page_over_h3() {
    let dir = TempDir::new("h3-load");
    let corpus = support::synth_corpus(&dir.0, 1);
    let ca = dir.0.join("ca");
    let srv = Server::start(&[
        "--archive",
        corpus.to_str().unwrap(),
        "--ca-dir",
        ca.to_str().unwrap(),
        "--h3",
        "--no-think-time",
    ]);
    let archive: serde_json::Value =
        serde_json::from_slice(&std::fs::read(corpus.join("archive.json")).unwrap()).unwrap();
    let root = archive["pages"][0]["root"].as_u64().unwrap() as usize;
    let url = archive["objects"][root]["url"]
        .as_str()
        .unwrap()
        .to_string();
    let mut objects = Vec::new();
    for proto in ["h2", "h3"] {
        let har = dir.0.join(format!("{proto}.har"));
        let o = speedy_in(
            &dir.0,
            &[
                "load",
                &url,
                "--archive",
                corpus.to_str().unwrap(),
                "--protocol",
                proto,
                "--resolve",
                &format!("*={}", srv.addr),
                "--har",
                har.to_str().unwrap(),
                "--cacert",
                ca.join("ca.pem").to_str().unwrap(),
            ],
            Duration::from_secs(60),
        );
        assert_eq!(o.status.code(), Some(0), "load {proto}: {}", stderr(&o));
        let summary = &json_lines(&o)[0];
        assert_eq!(summary["protocol"], proto, "{summary}");
        assert_eq!(summary["failed"].as_array().unwrap().len(), 0, "{summary}");
        assert_eq!(summary["missing"].as_array().unwrap().len(), 0, "{summary}");
        let har: serde_json::Value = serde_json::from_slice(&std::fs::read(&har).unwrap()).unwrap();
        let entries = har["log"]["entries"].as_array().unwrap();
        assert!(entries.len() > 5, "{proto}: {} entries", entries.len());
        for e in entries {
            assert_eq!(
                e["response"]["httpVersion"], proto,
                "{}",
                e["request"]["url"]
            );
        }
        let mut urls: Vec<String> = entries
            .iter()
            .map(|e| e["request"]["url"].as_str().unwrap().to_string())
            .collect();
        urls.sort();
        objects.push(urls);
    }
    assert_eq!(objects[0], objects[1], "h2 and h3 loaded the same objects");
}

/// A lab experiment with an h3 variant beside h2, in namespaces through the emulated
/// link: the replay server gets --h3, the loader --protocol h3, and both rows load the
/// whole page. `protocol = "h3"` with `tls = false` is refused by name.
#[test]
fn a_lab_experiment_compares_h3_with_h2_through_the_link() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "this test needs root (namespaces, TUN)"
    );
    let dir = TempDir::new("h3-lab");
    let exp = dir.0.join("h3.toml");
    let toml = |extra: &str| {
        format!(
            "name = \"h3lab\"\nruns = 1\nseed = 5\ntimeout_s = 60\n[pages]\nsynth = 1\n\
             [[network]]\nname = \"dsl\"\ndown = \"5mbit\"\nup = \"1mbit\"\nrtt_ms = 40\nloss = 0.01\n\
             [[variant]]\nname = \"h2\"\nprotocol = \"h2\"\ntls = true\nbaseline = true\n\
             [[variant]]\nname = \"h3\"\nprotocol = \"h3\"\n{extra}"
        )
    };
    std::fs::write(&exp, toml("tls = false\n")).unwrap();
    let o = speedy_in(
        &dir.0,
        &["lab", exp.to_str().unwrap()],
        Duration::from_secs(30),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("protocol = \"h3\""), "{}", stderr(&o));

    std::fs::write(&exp, toml("")).unwrap();
    let out = dir.0.join("out");
    let o = run_bounded(
        Command::new(support::BIN)
            .args(["lab", exp.to_str().unwrap(), "--out"])
            .arg(&out),
        Duration::from_secs(300),
    );
    assert!(o.status.success(), "speedy lab: {}", stderr(&o));
    let rows = speedy_lab::results::read_rows(&out.join("results.jsonl")).unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    support::assert_same_page_whole(&rows);
    for r in &rows {
        assert!(r.on_load_ms > 40.0, "{r:?}");
        let want = if r.variant == "h3" {
            speedy_net::Protocol::H3
        } else {
            speedy_net::Protocol::H2
        };
        assert_eq!(r.protocol, want, "{r:?}");
    }
}

/// `speedy serve --quic-initial-window` sets QUIC's initial congestion window: through
/// `speedy link` (50 Mbit/s, 200 ms), a 100 KB response takes at least two round trips
/// longer from a 3-segment window (4,380 bytes: slow start needs about five round
/// trips) than from a 120 KB one (one round trip). Refused without --h3.
#[test]
fn the_quic_initial_window_is_the_servers_to_set() {
    if !support::can_run_link() {
        return;
    }
    let (dir, _) = site("h3-iw");
    std::fs::write(dir.0.join("www/100k.bin"), bytes(100_000, 9)).unwrap();
    let root = dir.0.join("www");
    let mut ms = Vec::new();
    for w in ["4380", "120000"] {
        let server = format!(
            "exec {} serve --listen 0.0.0.0:9000 --root {} --tls-self-signed --h3 --quic-initial-window {w}",
            support::BIN,
            root.display()
        );
        let fetch = format!(
            "exec {} fetch -k --protocol h3 https://$SPEEDY_SERVER_ADDR:9000/100k.bin",
            support::BIN
        );
        let o = run_bounded(
            Command::new(support::BIN).args([
                "link",
                "--rtt",
                "200",
                "--down",
                "50mbit",
                "--up",
                "50mbit",
                "--server-cmd",
                &server,
                "--",
                "sh",
                "-c",
                &fetch,
            ]),
            Duration::from_secs(60),
        );
        assert!(o.status.success(), "{w}: {}", stderr(&o));
        let line = json_lines(&o)
            .into_iter()
            .find(|l| l["url"].is_string())
            .unwrap_or_else(|| panic!("{w}: no response line"));
        assert_eq!(line["bytes"], 100_000, "{line}");
        ms.push(line["elapsed_ms"].as_f64().unwrap());
    }
    eprintln!(
        "100 KB over h3: {:.0} ms from 4,380 bytes, {:.0} ms from 120,000",
        ms[0], ms[1]
    );
    assert!(ms[0] >= ms[1] + 400.0, "{ms:?}");
    let serve = ["serve", "--listen", "127.0.0.1:0", "--root", "www"];
    for (extra, says) in [
        (&["--quic-initial-window", "4380"][..], "--h3"),
        (
            &["--tls-self-signed", "--h3", "--quic-cc", "vegas"][..],
            "quinn has cubic, bbr and newreno",
        ),
    ] {
        let args: Vec<&str> = serve.iter().chain(extra).copied().collect();
        let o = speedy_in(&dir.0, &args, Duration::from_secs(10));
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        assert!(stderr(&o).contains(says), "{extra:?}: {}", stderr(&o));
    }
}
