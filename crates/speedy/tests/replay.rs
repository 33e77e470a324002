//! `speedy serve --archive`: a synthesized corpus replayed from memory for every origin,
//! fetched back byte for byte over SPDY, HTTP/2-capable TLS and HTTP/1.1, with push,
//! hints, the lab CA and per-origin addresses.

use sha2::{Digest, Sha256};
use speedy_archive::synth::{synthesize, SynthOptions};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_speedy");

struct Guard(Child, PathBuf);
impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

fn tmp(tag: &str) -> PathBuf {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir().join(format!("speedy-replay-{tag}-{}-{n}", std::process::id()))
}

/// Starts the replay server; returns it and the origin → address map it printed.
fn start(dir: &PathBuf, extra: &[&str]) -> (Guard, HashMap<String, String>) {
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--archive"])
        .arg(dir)
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with("listening on "), "{line}");
    let n: usize = line
        .split(", ")
        .last()
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let mut origins = HashMap::new();
    for _ in 0..n {
        line.clear();
        out.read_line(&mut line).unwrap();
        let parts: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(parts[0], "origin", "{line}");
        origins.insert(parts[1].to_string(), parts[2].to_string());
    }
    (Guard(child, dir.clone()), origins)
}

fn fetch(args: &[String]) -> Vec<serde_json::Value> {
    let mut child = Command::new(BIN)
        .arg("fetch")
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("fetch timed out");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut s = String::new();
    child.stdout.take().unwrap().read_to_string(&mut s).unwrap();
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn replays_every_object_of_every_origin_byte_for_byte() {
    let dir = tmp("all");
    let archive = synthesize(SynthOptions { pages: 2, seed: 9 });
    archive.save(&dir).unwrap();
    let (_srv, origins) = start(&dir, &["--no-think-time"]);
    let ca = dir.join("lab-ca/ca.pem");
    assert!(ca.exists(), "the lab CA is written for loaders to trust");
    for (scheme, proto) in [
        ("https", "spdy/3.1"),
        ("https", "http/1.1"),
        ("http", "spdy/3"),
        ("https", "spdy/2"),
    ] {
        let mut args = vec![
            "--cacert".to_string(),
            ca.to_string_lossy().into(),
            "--protocol".into(),
            proto.into(),
        ];
        for (h, a) in &origins {
            args.push("--resolve".into());
            args.push(format!("{h}={a}"));
        }
        let mut want = HashMap::new();
        for o in &archive.objects {
            let url = o.url.replacen("https://", &format!("{scheme}://"), 1);
            want.insert(url.clone(), hex(&Sha256::digest(archive.body(o.id))));
            args.push(url);
        }
        let lines = fetch(&args);
        let got: usize = lines.iter().filter(|l| l["pushed"] == false).count();
        assert_eq!(got, archive.objects.len(), "{scheme} {proto}");
        for l in lines.iter().filter(|l| l["pushed"] == false) {
            let url = l["url"].as_str().unwrap();
            assert_eq!(l["status"], 200, "{scheme} {proto} {l}");
            assert_eq!(
                l["sha256"].as_str(),
                want.get(url).map(|s| s.as_str()),
                "{scheme} {proto} {url}"
            );
        }
    }
}

#[test]
fn pushes_and_hints_with_the_html_and_404s_the_unknown() {
    let dir = tmp("push");
    let archive = synthesize(SynthOptions { pages: 1, seed: 4 });
    archive.save(&dir).unwrap();
    let (_srv, origins) = start(
        &dir,
        &[
            "--no-think-time",
            "--push",
            "subresources",
            "--hint",
            "--plain",
        ],
    );
    let root = &archive.objects[archive.pages[0].root];
    let host = root.url.split('/').nth(2).unwrap();
    let url = root.url.replacen("https://", "http://", 1);
    let missing = format!("http://{host}/definitely-missing");
    let lines = fetch(&[
        "--resolve".into(),
        format!("{host}={}", origins[host]),
        url,
        missing.clone(),
    ]);
    let pushed: Vec<_> = lines.iter().filter(|l| l["pushed"] == true).collect();
    assert!(
        !pushed.is_empty(),
        "the HTML pushes its same-origin subresources: {lines:?}"
    );
    for p in &pushed {
        let u = p["url"]
            .as_str()
            .unwrap()
            .replacen("http://", "https://", 1);
        let o = archive
            .objects
            .iter()
            .find(|o| o.url == u)
            .unwrap_or_else(|| panic!("pushed {u} is not in the archive"));
        assert_eq!(p["sha256"], hex(&Sha256::digest(archive.body(o.id))));
    }
    let m = lines.iter().find(|l| l["url"] == missing.as_str()).unwrap();
    assert_eq!(m["status"], 404);
}

/// One HTTP/1.1 GET of `path` with `Host: host` to `addr`; the response head and body.
fn raw_get(addr: &str, host: &str, path: &str) -> (String, Vec<u8>) {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    let end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&got[..end]).to_lowercase();
    (head, got[end + 4..].to_vec())
}

#[test]
fn matches_requests_as_web_page_replay_does_and_says_how() {
    let dir = tmp("match");
    let archive = synthesize(SynthOptions { pages: 1, seed: 4 });
    archive.save(&dir).unwrap();
    let (_srv, origins) = start(&dir, &["--no-think-time", "--plain"]);
    let o = archive
        .objects
        .iter()
        .find(|o| !o.url.contains('?') && o.status == 200 && archive.body(o.id).len() > 100)
        .unwrap();
    let (host, path) = {
        let rest = o.url.split_once("://").unwrap().1;
        let (h, p) = rest.split_once('/').unwrap();
        (h.to_string(), format!("/{p}"))
    };
    let addr = &origins[&host];
    let body = archive.body(o.id).to_vec();
    // Exact: the recorded headers and nothing else.
    let (head, got) = raw_get(addr, &host, &path);
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(!head.contains("x-speedy-replay"), "{head}");
    assert_eq!(got, body, "the exact match serves the recorded body");
    // A cache-busting query: the same object, said to be a query match.
    let (head, _) = raw_get(addr, &host, &format!("{path}?t=1700000000"));
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("x-speedy-replay: query"), "{head}");
    // The same path on a host the archive does not have.
    let (head, _) = raw_get(addr, "elsewhere.test", &path);
    assert!(head.contains("x-speedy-replay: other-host"), "{head}");
    // Nothing like it: a miss.
    let (head, got) = raw_get(addr, &host, "/definitely/not/recorded");
    assert!(head.starts_with("http/1.1 404"), "{head}");
    assert!(head.contains("x-speedy-replay: miss"), "{head}");
    assert!(String::from_utf8_lossy(&got).contains("not in the archive"));
}

#[test]
fn gives_each_origin_its_own_address_when_asked() {
    let dir = tmp("bind");
    synthesize(SynthOptions { pages: 1, seed: 6 })
        .save(&dir)
        .unwrap();
    let (_srv, origins) = start(&dir, &["--bind-origins", "127.0.0.2,127.0.0.3", "--plain"]);
    let ips: std::collections::HashSet<&str> = origins
        .values()
        .map(|a| a.split(':').next().unwrap())
        .collect();
    assert!(
        origins.len() < 2 || ips.len() == 2,
        "origins spread over both addresses: {origins:?}"
    );
}

#[test]
fn refuses_a_broken_archive_naming_the_file() {
    let dir = tmp("bad");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("archive.json"),
        "{\"format\": 1, \"pages\": [{\"name\":\"x\",\"root\":5,\"objects\":[]}], \"objects\": []}",
    )
    .unwrap();
    let o = Command::new(BIN)
        .args(["serve", "--archive"])
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("archive.json") && err.contains("pages[0]"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
