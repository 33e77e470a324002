//! End to end: `speedy load` against `speedy serve --archive` on loopback. A corpus
//! made by `speedy corpus synth` is served; every page is loaded over HTTP/1.1, SPDY and HTTP/2, plain and TLS
//! (the lab CA), per-origin and single-domain. Each load must fetch exactly the page's
//! archived objects, with byte-identical bodies, and write a valid HAR 1.2 whose timings
//! add up to each entry's time.

use serde_json::Value;
use speedy_archive::synth::{synthesize, SynthOptions};
use speedy_archive::Archive;
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_speedy");

/// A child process killed (by its handle) and a directory removed on drop.
struct Guard(Option<Child>, PathBuf);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

fn tmp(tag: &str) -> PathBuf {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let d = std::env::temp_dir().join(format!("speedy-load-{tag}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Starts `speedy serve --archive DIR` on loopback; returns the address.
fn serve(dir: &Path, extra: &[&str], guard: &mut Guard) -> String {
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--archive"])
        .arg(dir)
        .args(extra);
    listening(cmd, guard)
}

/// Starts `cmd` (a server printing `listening on ADDR ...` first), leaves it to
/// `guard`, and returns ADDR; the rest of its output is drained in the background.
fn listening(mut cmd: Command, guard: &mut Guard) -> String {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("start {cmd:?}: {e}"));
    let mut out = BufReader::new(child.stdout.take().unwrap());
    guard.0 = Some(child);
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr = line
        .strip_prefix("listening on ")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("bad first line {line:?}"))
        .to_string();
    // Drain the rest of its output in the background (origin lines).
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = out.read_to_string(&mut sink);
    });
    addr
}

/// Runs `speedy load` with a deadline; returns (exit code, summary, stderr).
fn load(args: &[String]) -> (i32, Value, String) {
    let mut child = Command::new(BIN)
        .arg("load")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
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
            let v = out
                .lines()
                .last()
                .and_then(|l| serde_json::from_str(l).ok())
                .unwrap_or(Value::Null);
            return (st.code().unwrap_or(-1), v, err);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("speedy load {args:?} did not finish in time");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn b64(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("bad base64 {c}"),
        }
    };
    let b: Vec<u8> = s.bytes().filter(|c| *c != b'=').collect();
    let mut out = Vec::with_capacity(b.len() * 3 / 4);
    for ch in b.chunks(4) {
        let mut n = 0u32;
        for (i, c) in ch.iter().enumerate() {
            n |= val(*c) << (18 - 6 * i);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..ch.len() - 1]);
    }
    out
}

/// Checks one load's summary and HAR against the archive's page.
fn check(what: &str, archive: &Archive, page: usize, code: i32, summary: &Value, har: &Path) {
    assert_eq!(code, 0, "{what}: exit code; summary {summary}");
    for k in ["missing", "unexpected", "failed", "missed_by_parser"] {
        assert_eq!(
            summary[k].as_array().map(Vec::len),
            Some(0),
            "{what}: {k}: {}",
            summary[k]
        );
    }
    assert!(summary["onLoad_ms"].as_f64().is_some(), "{what}: {summary}");
    let text = std::fs::read(har).unwrap();
    let h: Value = serde_json::from_slice(&text).unwrap();
    if let Err(e) = speedy_browser::har::validate(&h, 0.0011) {
        panic!("{what}: invalid HAR:\n{}", e.join("\n"));
    }
    let log = &h["log"];
    assert_eq!(log["version"], "1.2");
    assert_eq!(log["creator"]["name"], "speedy");
    let pt = &log["pages"][0]["pageTimings"];
    assert!(pt["onContentLoad"].as_f64().unwrap() >= 0.0, "{what}");
    assert!(pt["onLoad"].as_f64().unwrap() >= pt["onContentLoad"].as_f64().unwrap());
    let want: HashMap<&str, usize> = archive.pages[page]
        .objects
        .iter()
        .map(|&o| (archive.objects[o].url.as_str(), o))
        .collect();
    let entries = log["entries"].as_array().unwrap();
    let mut seen = HashSet::new();
    for e in entries {
        let url = e["request"]["url"].as_str().unwrap();
        let &id = want
            .get(url)
            .unwrap_or_else(|| panic!("{what}: fetched {url}, not in the page"));
        assert!(seen.insert(url), "{what}: {url} fetched twice");
        assert_eq!(e["response"]["status"], 200, "{what}: {url}");
        let body = b64(e["response"]["content"]["text"].as_str().unwrap());
        assert!(
            body[..] == archive.body(id)[..],
            "{what}: body of {url} differs"
        );
        // The phases add up to the entry's time.
        let t = &e["timings"];
        let sum: f64 = ["blocked", "dns", "connect", "send", "wait", "receive"]
            .iter()
            .map(|k| t[k].as_f64().unwrap().max(0.0))
            .sum();
        assert!(
            (sum - e["time"].as_f64().unwrap()).abs() < 0.0011,
            "{what}: {url}: timings {t} vs time {}",
            e["time"]
        );
        assert!(e["_priority"].is_string() && e["_initiator"].is_object());
    }
    assert_eq!(seen.len(), want.len(), "{what}: every object fetched once");
}

#[test]
fn loads_every_page_over_every_protocol() {
    let dir = tmp("corpus");
    let mut guard = Guard(None, dir.clone());
    // The corpus comes from the real command, as the lab makes it.
    let st = Command::new(BIN)
        .args(["corpus", "synth", "--pages", "2", "--seed", "3", "--out"])
        .arg(&dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "speedy corpus synth");
    let archive = Archive::load(&dir).unwrap();
    let plain_addr = serve(&dir, &["--plain", "--no-think-time"], &mut guard);
    let mut tls_guard = Guard(None, PathBuf::new());
    let tls_addr = serve(&dir, &["--no-think-time"], &mut tls_guard);
    let ca = dir.join("lab-ca/ca.pem");
    let hosts: HashSet<String> = archive
        .objects
        .iter()
        .filter_map(|o| spdy::url::Url::parse(&o.url).map(|u| u.authority()))
        .collect();
    let out = tmp("out");
    let _out_guard = Guard(None, out.clone());
    let combos: [(&str, &str, &str); 10] = [
        ("http1", "--plain", "per-origin"),
        ("http1", "--tls", "per-origin"),
        ("spdy", "--plain", "per-origin"),
        ("spdy", "--tls", "per-origin"),
        ("spdy", "--plain", "single"),
        ("spdy", "--tls", "single"),
        ("h2", "--plain", "per-origin"),
        ("h2", "--tls", "per-origin"),
        ("h2", "--plain", "single"),
        ("h2", "--tls", "single"),
    ];
    for (pi, page) in archive.pages.iter().enumerate() {
        let url = &archive.objects[page.root].url;
        for (proto, transport, domains) in combos {
            let what = format!("{} {proto} {transport} {domains}", page.name);
            let har = out.join(format!("{pi}-{proto}{transport}-{domains}.har"));
            let mut args: Vec<String> = vec![
                url.clone(),
                "--archive".into(),
                dir.to_string_lossy().into(),
                "--protocol".into(),
                proto.into(),
                "--spdy-domains".into(),
                domains.into(),
                transport.into(),
                // One connection per origin is checked below: no race to new servers,
                // no partitioned pools, no preconnects (all in the engine's tests).
                "--known-servers".into(),
                "--no-partition".into(),
                "--no-preconnect".into(),
                "--ca".into(),
                ca.to_string_lossy().into(),
                "--har".into(),
                har.to_string_lossy().into(),
                "--har-bodies".into(),
                "--timeout".into(),
                "60".into(),
            ];
            let addr = if transport == "--tls" {
                &tls_addr
            } else {
                &plain_addr
            };
            for h in &hosts {
                args.push("--resolve".into());
                args.push(format!("{h}={addr}"));
            }
            let (code, summary, err) = load(&args);
            assert!(err.is_empty() || code == 0, "{what}: {err}");
            check(&what, &archive, pi, code, &summary, &har);
            let conns = summary["totals"]["connections"].as_u64().unwrap();
            if domains == "single" {
                assert_eq!(conns, 1, "{what}: one connection for all origins");
            } else if proto != "http1" {
                let origins: HashSet<String> = page
                    .objects
                    .iter()
                    .filter_map(|&o| {
                        spdy::url::Url::parse(&archive.objects[o].url).map(|u| u.authority())
                    })
                    .collect();
                assert_eq!(conns as usize, origins.len(), "{what}: one per origin");
            }
        }
    }
}

#[test]
fn a_missing_object_is_a_recorded_failure_and_the_load_completes() {
    let dir = tmp("missing");
    let mut guard = Guard(None, dir.clone());
    let mut archive = synthesize(SynthOptions { pages: 1, seed: 4 });
    // The server's copy lacks one image the HTML references.
    let img = *archive.pages[0]
        .objects
        .iter()
        .find(|&&o| archive.objects[o].kind == speedy_archive::ObjectType::Image)
        .unwrap();
    let url = archive.objects[img].url.clone();
    let mut served = archive.clone();
    served.objects[img].url.push_str("-moved");
    served.save(&dir).unwrap();
    let addr = serve(&dir, &["--plain", "--no-think-time"], &mut guard);
    // The loader's copy has it.
    let mine = tmp("missing-mine");
    let _g2 = Guard(None, mine.clone());
    archive.pages.truncate(1);
    archive.save(&mine).unwrap();
    let har = mine.join("out.har");
    let root = archive.objects[archive.pages[0].root].url.clone();
    for proto in ["http1", "spdy"] {
        let (code, summary, _) = load(&[
            root.clone(),
            "--archive".into(),
            mine.to_string_lossy().into(),
            "--protocol".into(),
            proto.into(),
            "--plain".into(),
            "--resolve".into(),
            format!("*={addr}"),
            "--har".into(),
            har.to_string_lossy().into(),
        ]);
        assert_eq!(code, 0, "{proto}: the load completes: {summary}");
        let failed = summary["failed"].as_array().unwrap();
        assert_eq!(failed.len(), 1, "{proto}: {summary}");
        assert_eq!(failed[0]["url"], url.as_str());
        assert_eq!(failed[0]["status"], 404);
        let h: Value = serde_json::from_slice(&std::fs::read(&har).unwrap()).unwrap();
        speedy_browser::har::validate(&h, 0.0011).unwrap();
        let e = h["log"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["request"]["url"] == url.as_str())
            .expect("the failed object has an entry");
        assert_eq!(e["response"]["status"], 404);
    }
}

/// Starts `speedy proxy` with `args`; returns its address.
fn proxy(args: &[String], guard: &mut Guard) -> String {
    let mut cmd = Command::new(BIN);
    cmd.args(["proxy", "--listen", "127.0.0.1:0"]).args(args);
    listening(cmd, guard)
}

/// A synthesized corpus of `pages` pages served by `speedy serve --archive`, and
/// `speedy proxy` in front of it (TLS self-signed and plain on one port, the lab CA
/// trusted towards the origins, `extra` arguments added). The guards stop both.
struct ProxiedCorpus {
    dir: PathBuf,
    archive: Archive,
    proxy: String,
    _origin: Guard,
    _proxy: Guard,
}

fn proxied_corpus(tag: &str, pages: usize, seed: u64, extra: &[String]) -> ProxiedCorpus {
    let dir = tmp(tag);
    let mut origin_guard = Guard(None, dir.clone());
    let st = Command::new(BIN)
        .args(["corpus", "synth", "--pages", &pages.to_string()])
        .args(["--seed", &seed.to_string(), "--out"])
        .arg(&dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let archive = Archive::load(&dir).unwrap();
    let origin = serve(&dir, &["--no-think-time"], &mut origin_guard);
    let mut proxy_guard = Guard(None, PathBuf::new());
    let mut args: Vec<String> = vec![
        "--tls-self-signed".into(),
        "--resolve".into(),
        format!("*={origin}"),
        "--cacert".into(),
        dir.join("lab-ca/ca.pem").to_string_lossy().into(),
    ];
    args.extend(extra.iter().cloned());
    let addr = proxy(&args, &mut proxy_guard);
    ProxiedCorpus {
        dir,
        archive,
        proxy: addr,
        _origin: origin_guard,
        _proxy: proxy_guard,
    }
}

#[test]
fn loads_a_page_through_the_proxy_over_spdy_and_http1() {
    // The proxy reaches every origin at the replay server and trusts the lab CA; it
    // speaks TLS (self-signed) and plain on one port.
    let tmp_log = tmp("proxy-log");
    let _log_guard = Guard(None, tmp_log.clone());
    let log = tmp_log.join("proxy.jsonl");
    let pc = proxied_corpus(
        "proxy",
        1,
        5,
        &["--log".into(), log.to_string_lossy().into()],
    );
    let (dir, archive, addr) = (&pc.dir, &pc.archive, &pc.proxy);
    let root = archive.objects[archive.pages[0].root].url.clone();
    let n = archive.pages[0].objects.len();
    // (protocol, proxy URL, SPDY sessions, origins): Chrome's SPDY proxy (TLS), an HTTP/1.1
    // proxy tunnelling to the https origins (CONNECT) or asked for plain-http ones in
    // absolute form, SPDY in clear, and the cellular study's variant with several SPDY
    // sessions.
    for (proto, url, sessions, origins) in [
        ("spdy", format!("https://{addr}"), 1, "--tls"),
        ("http1", format!("http://{addr}"), 1, "--tls"),
        ("http1", format!("http://{addr}"), 1, "--plain"),
        ("spdy", format!("http://{addr}"), 1, "--tls"),
        ("spdy", format!("https://{addr}"), 4, "--tls"),
    ] {
        let what = format!("{proto} via {url}, {sessions} sessions, origins {origins}");
        let har = dir.join(format!("{proto}-{}-{sessions}{origins}.har", url.len()));
        let before = std::fs::read_to_string(&log).map_or(0, |t| t.lines().count());
        let (code, summary, err) = load(&[
            root.clone(),
            "--archive".into(),
            dir.to_string_lossy().into(),
            "--protocol".into(),
            proto.into(),
            "--proxy".into(),
            url.clone(),
            "-k".into(),
            "--har".into(),
            har.to_string_lossy().into(),
            "--har-bodies".into(),
            "--sessions".into(),
            sessions.to_string(),
            origins.into(),
        ]);
        assert!(code == 0, "{what}: {err}");
        check(&what, archive, 0, code, &summary, &har);
        let conns = summary["totals"]["connections"].as_u64().unwrap();
        if proto == "spdy" {
            assert_eq!(
                conns, sessions,
                "{what}: that many SPDY sessions to the proxy, for every origin"
            );
        }
        // One log line per object, with the study's times in order; through tunnels, one
        // per tunnel (a connection), its bytes the TLS records.
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .skip(before)
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let tunnelled = proto == "http1" && origins == "--tls";
        if tunnelled {
            assert_eq!(lines.len() as u64, conns, "{what}: a log line per tunnel");
            for l in &lines {
                assert_eq!(l["method"], "CONNECT", "{what}: {l}");
                assert!(l["url"].as_str().unwrap().ends_with(":443"), "{what}: {l}");
            }
        } else {
            assert_eq!(lines.len(), n, "{what}: log lines");
        }
        for l in &lines {
            let first = l["first_byte_from_origin_ms"].as_f64().unwrap();
            let origin_last = l["last_byte_from_origin_ms"].as_f64().unwrap();
            let client_last = l["last_byte_to_client_ms"].as_f64().unwrap();
            assert!(
                first <= origin_last && origin_last <= client_last,
                "{what}: {l}"
            );
            let client = if proto == "spdy" {
                "spdy/3.1"
            } else {
                "http/1.1"
            };
            assert_eq!(l["client_protocol"], client, "{what}: {l}");
        }
    }
}

#[test]
fn a_browsing_session_of_three_pages_keeps_one_spdy_session_to_the_proxy() {
    let pc = proxied_corpus("session", 3, 6, &[]);
    let (dir, archive, addr) = (&pc.dir, &pc.archive, &pc.proxy);
    let roots: Vec<String> = archive
        .pages
        .iter()
        .map(|p| archive.objects[p.root].url.clone())
        .collect();
    let har = dir.join("session.har");
    let think_ms = 300.0;
    let mut child = Command::new(BIN)
        .arg("load")
        .arg(&roots[0])
        .args([
            "--then",
            &roots[1],
            "--then",
            &roots[2],
            "--think-ms",
            "300",
        ])
        .arg("--archive")
        .arg(dir)
        .args([
            "--protocol",
            "spdy",
            "--proxy",
            &format!("https://{addr}"),
            "-k",
        ])
        .arg("--har")
        .arg(&har)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(child.wait().unwrap().success(), "{out}");
    let summaries: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(summaries.len(), 3, "one summary line per visit");
    for (k, v) in summaries.iter().enumerate() {
        assert_eq!(v["url"], roots[k].as_str());
        for key in ["missing", "unexpected", "failed"] {
            assert_eq!(
                v[key].as_array().map(Vec::len),
                Some(0),
                "page {k}: {key}: {v}"
            );
        }
        assert!(v["onLoad_ms"].as_f64().unwrap() > 0.0);
    }
    let h: Value = serde_json::from_slice(&std::fs::read(&har).unwrap()).unwrap();
    speedy_browser::har::validate(&h, 0.0011).unwrap();
    let log = &h["log"];
    let pages = log["pages"].as_array().unwrap();
    assert_eq!(pages.len(), 3);
    // One connection, the same one, for the whole session; opened by the first visit,
    // carrying each visit's own requests.
    for (k, p) in pages.iter().enumerate() {
        let conns = p["_connections"].as_array().unwrap();
        assert_eq!(conns.len(), 1, "{}", p["id"]);
        assert_eq!(conns[0]["id"], 0);
        assert_eq!(
            conns[0]["requests"],
            archive.pages[k].objects.len(),
            "{}",
            p["id"]
        );
        assert_eq!(p["_totals"]["connections"], (k == 0) as u64, "{}", p["id"]);
    }
    // The connection's counters arrive when it closes, at the session's end: counted
    // once, on the last visit.
    let bytes_in: Vec<u64> = pages
        .iter()
        .map(|p| p["_totals"]["bytes_in"].as_u64().unwrap())
        .collect();
    assert!(
        bytes_in[0] == 0 && bytes_in[1] == 0 && bytes_in[2] > 0,
        "{bytes_in:?}"
    );
    // Each visit's entries refer to it, and carry exactly its page's objects.
    for (k, page) in archive.pages.iter().enumerate() {
        let id = format!("page_{}", k + 1);
        let n = log["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["pageref"] == id.as_str())
            .count();
        assert_eq!(n, page.objects.len(), "{id}");
    }
    // The think time separates the visits: page k+1 starts at least think_ms after page
    // k began plus its onLoad.
    let start =
        |p: &Value| speedy_archive::date::parse_ms(p["startedDateTime"].as_str().unwrap()).unwrap();
    for k in 0..2 {
        let gap = start(&pages[k + 1]) - start(&pages[k]);
        let on_load = pages[k]["pageTimings"]["onLoad"].as_f64().unwrap();
        assert!(gap >= on_load + think_ms - 1.0, "visit {k}: gap {gap} ms");
    }
}

#[test]
fn the_proxy_answers_502_and_504_with_a_reason() {
    // An origin that accepts connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let hold = std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in silent.incoming().take(1) {
            held.push(c);
            std::thread::sleep(Duration::from_secs(5));
        }
    });
    // A port nothing listens on.
    let closed_addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut guard = Guard(None, tmp("proxy-errors"));
    let addr = proxy(
        &[
            "--resolve".into(),
            format!("silent.example={silent_addr}"),
            "--resolve".into(),
            format!("closed.example={closed_addr}"),
            "--timeout".into(),
            "1".into(),
        ],
        &mut guard,
    );
    // HTTP/1.1 absolute-form requests; the whole answer is read (the proxy closes after
    // it with Connection: close).
    let ask = |url: &str| {
        use std::io::Write;
        let mut c = std::net::TcpStream::connect(&addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(
            c,
            "GET {url} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        let _ = c.read_to_string(&mut text);
        text
    };
    let t = ask("http://closed.example/a");
    assert!(t.starts_with("HTTP/1.1 502"), "{t}");
    assert!(t.contains("bad gateway: http://closed.example/a"), "{t}");
    // A host no --resolve (or --allow) names is refused before anything is dialled.
    let t = ask("http://nowhere.example/a");
    assert!(t.starts_with("HTTP/1.1 403"), "{t}");
    assert!(t.contains("nowhere.example:80 is not allowed"), "{t}");
    let t = ask("http://silent.example/a");
    assert!(t.starts_with("HTTP/1.1 504"), "{t}");
    assert!(t.contains("no response from silent.example"), "{t}");
    drop(hold);
}

#[test]
fn the_proxy_tunnels_connect_both_ways_and_refuses_what_it_cannot_reach() {
    use std::io::Write;
    // The target: answers each line it reads with the line reversed, then closes when the
    // client does.
    let target = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let target_addr = target.local_addr().unwrap();
    let echo = std::thread::spawn(move || {
        let (c, _) = target.accept().unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut w = c.try_clone().unwrap();
        for line in std::io::BufRead::lines(std::io::BufReader::new(c)).take(2) {
            let l: String = line.unwrap().chars().rev().collect();
            writeln!(w, "{l}").unwrap();
        }
    });
    let mut guard = Guard(None, tmp("proxy-connect"));
    let addr = proxy(
        &["--resolve".into(), format!("echo.example={target_addr}")],
        &mut guard,
    );
    let head = |c: &mut std::net::TcpStream| {
        let mut h = Vec::new();
        let mut b = [0u8; 1];
        while !h.ends_with(b"\r\n\r\n") && c.read(&mut b).unwrap() == 1 {
            h.push(b[0]);
        }
        String::from_utf8(h).unwrap()
    };
    let mut c = std::net::TcpStream::connect(&addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        c,
        "CONNECT echo.example:7 HTTP/1.1\r\nHost: echo.example:7\r\n\r\n"
    )
    .unwrap();
    let h = head(&mut c);
    assert!(h.starts_with("HTTP/1.1 200"), "{h}");
    // Bytes both ways, several exchanges on the one tunnel.
    let mut r = std::io::BufReader::new(c.try_clone().unwrap());
    for word in ["tunnel", "speedy"] {
        writeln!(c, "{word}").unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut r, &mut line).unwrap();
        assert_eq!(line.trim_end(), word.chars().rev().collect::<String>());
    }
    echo.join().unwrap();
    // The target closed: so does the tunnel.
    let mut rest = Vec::new();
    assert_eq!(r.read_to_end(&mut rest).unwrap(), 0, "{rest:?}");
    // A target no --resolve (or --allow) names, and one without a port.
    for (req, want) in [
        ("CONNECT nowhere.example:443", "HTTP/1.1 403"),
        ("CONNECT echo.example", "HTTP/1.1 400"),
    ] {
        let mut c = std::net::TcpStream::connect(&addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(c, "{req} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let h = head(&mut c);
        assert!(h.starts_with(want), "{req}: {h}");
        assert!(h.contains("x-speedy-proxy-error"), "{req}: {h}");
    }
}

#[test]
fn rejects_bad_command_lines() {
    // Each message names the option or value at fault: ours say `speedy load: ...`, the
    // command line's parser `invalid value ... for '--option'`.
    for (args, names) in [
        (
            vec!["http://a.example/", "--protocol", "gopher"],
            "'--protocol <PROTO>'",
        ),
        (
            vec!["http://a.example/", "--spdy-domains", "some"],
            "'--spdy-domains",
        ),
        (
            vec!["http://a.example/", "--resolve", "a.example"],
            "speedy load: --resolve",
        ),
        (
            vec!["http://a.example/", "--dns-cost", "soon"],
            "speedy load: --dns-cost soon",
        ),
        (
            vec!["http://a.example/", "--priorities", "image=12"],
            "speedy load: --priorities",
        ),
        (vec!["not a url"], "speedy load: not a url"),
    ] {
        let args: Vec<String> = args.into_iter().map(String::from).collect();
        let (code, _, err) = load(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(names), "{args:?}: {err}");
    }
    // A spec file with a misspelt key, and one that is not there.
    let dir = std::env::temp_dir().join(format!("speedy-load-spec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("load.json");
    std::fs::write(&spec, r#"{"url": "http://a.example/", "protocl": "h2"}"#).unwrap();
    for (file, names) in [
        (&spec, "unknown field `protocl`"),
        (&dir.join("none.json"), "none.json"),
    ] {
        let args = vec!["--spec".to_string(), file.display().to_string()];
        let (code, _, err) = load(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains("speedy load: --spec") && err.contains(names),
            "{args:?}: {err}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
