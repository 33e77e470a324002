//! End-to-end tests of `speedy corpus synth/import/export/export-har` through the real program.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_speedy");

/// A temporary directory removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("speedy-corpus-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../speedy-archive/tests/data")
        .join(name)
}

fn speedy(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run speedy")
}

fn ok(args: &[&str]) -> String {
    let o = speedy(args);
    assert!(
        o.status.success(),
        "speedy {args:?}: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn fail(args: &[&str]) -> String {
    let o = speedy(args);
    assert_eq!(o.status.code(), Some(2), "speedy {args:?} should fail");
    assert!(o.stdout.is_empty());
    String::from_utf8(o.stderr).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn archive_json(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("archive.json")).unwrap()).unwrap()
}

#[test]
fn synth_export_import_round_trip_through_the_program() {
    let d = Dir::new("synth");
    let (a, har, b) = (d.0.join("a"), d.0.join("a.har"), d.0.join("b"));
    let out = ok(&[
        "corpus",
        "synth",
        "--out",
        s(&a),
        "--pages",
        "3",
        "--seed",
        "4",
    ]);
    assert!(
        out.starts_with(&format!("{}: 3 pages, ", a.display())),
        "{out}"
    );
    assert!(out.trim_end().ends_with(" domains"), "{out}");
    // Deterministic for a seed.
    let again = d.0.join("again");
    ok(&[
        "corpus",
        "synth",
        "--out",
        s(&again),
        "--pages",
        "3",
        "--seed",
        "4",
    ]);
    assert_eq!(archive_json(&a), archive_json(&again));
    let out = ok(&["corpus", "export-har", s(&a), "--out", s(&har)]);
    let ja = archive_json(&a);
    let n = ja["objects"].as_array().unwrap().len();
    assert_eq!(
        out.trim(),
        format!("{}: HAR 1.2, 3 pages, {n} entries", har.display())
    );
    let h: serde_json::Value = serde_json::from_slice(&std::fs::read(&har).unwrap()).unwrap();
    assert_eq!(h["log"]["version"], "1.2");
    assert_eq!(h["log"]["creator"]["name"], "speedy");
    let out = ok(&["corpus", "import", s(&har), "--out", s(&b)]);
    assert!(
        out.contains(&format!("(discovery from: {} _speedy)", n - 3)),
        "{out}"
    );
    // Same pages, URLs, statuses, sizes and parents; bodies byte for byte.
    let jb = archive_json(&b);
    let key = |j: &serde_json::Value| {
        let objs = j["objects"].as_array().unwrap();
        let mut v: Vec<String> = objs
            .iter()
            .map(|o| {
                let parent = o["discovery"]["parent"]
                    .as_u64()
                    .map(|p| objs[p as usize]["url"].as_str().unwrap().to_string());
                format!(
                    "{} {} {} {:?} {}",
                    o["url"], o["status"], o["body"]["size"], parent, o["body"]["sha256"]
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(key(&ja), key(&jb));
    // The default page count is 25.
    let def = d.0.join("default");
    let out = ok(&["corpus", "synth", "--out", s(&def)]);
    assert!(out.contains(": 25 pages, "), "{out}");
}

#[test]
fn import_of_the_real_tools_files() {
    let d = Dir::new("import");
    let (h, w) = (d.0.join("h"), d.0.join("w"));
    let out = ok(&[
        "corpus",
        "import",
        s(&fixture("chromium.har")),
        "--out",
        s(&h),
    ]);
    assert_eq!(
        out.trim(),
        format!("{}: 2 pages, 17 objects, 2795 bytes, 1 domains (discovery from: 1 body, 13 initiator, 1 timings)", h.display())
    );
    let out = ok(&[
        "corpus",
        "import",
        s(&fixture("wget.warc.gz")),
        "--out",
        s(&w),
    ]);
    assert!(out.contains(": 2 pages, 15 objects, "), "{out}");
    // Every stored body is on disk under its sha256.
    for dir in [&h, &w] {
        let j = archive_json(dir);
        for o in j["objects"].as_array().unwrap() {
            if o["body"]["kind"] == "stored" {
                let p = dir
                    .join("bodies")
                    .join(o["body"]["sha256"].as_str().unwrap());
                assert_eq!(
                    std::fs::metadata(&p).unwrap().len(),
                    o["body"]["size"].as_u64().unwrap()
                );
            }
        }
    }
    // Warnings go to stderr, naming the entries; --quiet drops them.
    let o = speedy(&[
        "corpus",
        "import",
        s(&fixture("har11-no-pages.har")),
        "--out",
        s(&d.0.join("o")),
    ]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("har11-no-pages.har: entries[3]: data:"),
        "{err}"
    );
    let o = speedy(&[
        "corpus",
        "import",
        "--quiet",
        s(&fixture("har11-no-pages.har")),
        "--out",
        s(&d.0.join("q")),
    ]);
    assert!(o.status.success() && o.stderr.is_empty());
}

#[test]
fn bad_input_is_named_and_exits_2() {
    let d = Dir::new("bad");
    let f = fixture("bad-content.har");
    let err = fail(&["corpus", "import", s(&f), "--out", s(&d.0.join("x"))]);
    assert_eq!(
        err.trim(),
        format!("speedy corpus import: {}: entries[2].response.content: expected an object, found a string", f.display())
    );
    assert!(!d.0.join("x").exists(), "nothing written for a bad file");
    let missing = d.0.join("missing.har");
    let err = fail(&["corpus", "import", s(&missing), "--out", s(&d.0.join("x"))]);
    assert!(
        err.contains(&format!("{}: No such file", missing.display())),
        "{err}"
    );
    let err = fail(&[
        "corpus",
        "export-har",
        s(&d.0),
        "--out",
        s(&d.0.join("y.har")),
    ]);
    assert!(err.contains("archive.json"), "{err}");
    // Usage errors are clap's (exit 2 with a usage line).
    let o = speedy(&["corpus", "synth"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--out <DIR>"));
    let o = speedy(&[
        "corpus",
        "synth",
        "--out",
        s(&d.0.join("z")),
        "--pages",
        "many",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

/// A gzip bomb under a WARC's and a WPR archive's name (300 gzip members of 1 MiB of
/// zeros, 300 MiB inflated from about 300 KiB) is refused by name, nothing written, the
/// process never near its size in memory.
#[test]
fn gzip_bombs_are_refused() {
    use std::io::Write;
    let d = Dir::new("bomb");
    let member = |data: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    };
    let zeros = member(&vec![0u8; 1 << 20]);
    for (name, head) in [
        ("bomb.warc.gz", &b"WARC/1.1\r\n"[..]),
        ("bomb.wprgo", b"{\"Requests\": {"),
    ] {
        let mut file = member(head);
        for _ in 0..300 {
            file.extend_from_slice(&zeros);
        }
        let path = d.0.join(name);
        std::fs::write(&path, &file).unwrap();
        let out = d.0.join(format!("{name}-out"));
        let err = fail(&["corpus", "import", s(&path), "--out", s(&out)]);
        assert!(
            err.contains("gzip bomb") && err.contains(&format!("{} compressed bytes", file.len())),
            "{name}: {err}"
        );
        assert!(!out.exists(), "{name}: nothing written");
    }
}

// ---------------------------------------------------------------------------------------
// Mahimahi and Web Page Replay: import, export, import again, then replay and fetch.

/// One exchange of the recorded site: scheme, host, recorded address, request line,
/// status line, response headers, the body on the wire, the body the archive keeps.
struct Exchange {
    scheme: &'static str,
    host: &'static str,
    addr: &'static str,
    request_line: &'static str,
    status_line: &'static str,
    headers: Vec<(&'static str, String)>,
    wire: Vec<u8>,
    body: Vec<u8>,
}

fn site() -> Vec<Exchange> {
    let html = b"<html><head><link rel=stylesheet href=\"https://cdn.example.test/s.css\">\
<script src=\"/app.js\"></script></head><body><img src=\"https://cdn.example.test/photo.jpg\">\
<img src=\"/gone.png\"></body></html>"
        .to_vec();
    let css = b"body { background: url(bg.png) }".to_vec();
    let js = b"console.log('chunked');".to_vec();
    let mut chunked = format!("{:x}\r\n", 10).into_bytes();
    chunked.extend_from_slice(&js[..10]);
    chunked.extend_from_slice(format!("\r\n{:x}\r\n", js.len() - 10).as_bytes());
    chunked.extend_from_slice(&js[10..]);
    chunked.extend_from_slice(b"\r\n0\r\n\r\n");
    let photo: Vec<u8> = (0u32..300_000)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
        .collect();
    let len = |b: &[u8]| ("Content-Length", b.len().to_string());
    let x =
        |scheme, host, addr, request_line, status_line, headers, wire: Vec<u8>, body| Exchange {
            scheme,
            host,
            addr,
            request_line,
            status_line,
            headers,
            wire,
            body,
        };
    vec![
        x(
            "https",
            "cdn.example.test",
            "192.0.2.7:443",
            "GET /photo.jpg HTTP/1.1",
            "HTTP/1.1 200 OK",
            vec![("Content-Type", "image/jpeg".into()), len(&photo)],
            photo.clone(),
            photo,
        ),
        x(
            "http",
            "example.test",
            "192.0.2.5:80",
            "GET / HTTP/1.1",
            "HTTP/1.1 302 Found",
            vec![
                ("Location", "https://www.example.test/".into()),
                ("Content-Length", "0".into()),
            ],
            vec![],
            vec![],
        ),
        x(
            "https",
            "www.example.test",
            "192.0.2.6:443",
            "GET / HTTP/1.1",
            "HTTP/1.1 200 OK",
            vec![("Content-Type", "text/html".into()), len(&html)],
            html.clone(),
            html,
        ),
        x(
            "https",
            "www.example.test",
            "192.0.2.6:443",
            "GET /app.js HTTP/1.1",
            "HTTP/1.1 200 OK",
            vec![
                ("Content-Type", "application/javascript".into()),
                ("Transfer-Encoding", "chunked".into()),
            ],
            chunked,
            js,
        ),
        x(
            "https",
            "cdn.example.test",
            "192.0.2.7:443",
            "GET /s.css HTTP/1.1",
            "HTTP/1.1 200 OK",
            vec![("Content-Type", "text/css".into()), len(&css)],
            css.clone(),
            css,
        ),
        x(
            "https",
            "cdn.example.test",
            "192.0.2.7:443",
            "GET /bg.png HTTP/1.1",
            "HTTP/1.1 200 OK",
            vec![
                ("Content-Type", "image/png".into()),
                ("Content-Length", "3".into()),
            ],
            b"png".to_vec(),
            b"png".to_vec(),
        ),
        x(
            "https",
            "www.example.test",
            "192.0.2.6:443",
            "GET /gone.png HTTP/1.1",
            "HTTP/1.1 404 Not Found",
            vec![
                ("Content-Type", "text/plain".into()),
                ("Content-Length", "4".into()),
            ],
            b"gone".to_vec(),
            b"gone".to_vec(),
        ),
    ]
}

fn url_of(x: &Exchange) -> String {
    let path = x.request_line.split(' ').nth(1).unwrap();
    format!("{}://{}{path}", x.scheme, x.host)
}

/// The site as a Mahimahi folder (records built with speedy's protobuf codec from the
/// format's fields; the crate's tests check the codec against a writer of their own).
fn write_mahimahi(dir: &Path) {
    use speedy_archive::mahimahi::{Message, RequestResponse, Scheme};
    std::fs::create_dir_all(dir).unwrap();
    for (i, x) in site().iter().enumerate() {
        let (ip, port) = x.addr.split_once(':').unwrap();
        let b = |s: &str| s.as_bytes().to_vec();
        let rr = RequestResponse {
            ip: Some(ip.into()),
            port: Some(port.parse().unwrap()),
            scheme: Some(if x.scheme == "https" {
                Scheme::Https
            } else {
                Scheme::Http
            }),
            request: Some(Message {
                first_line: Some(b(x.request_line)),
                headers: vec![(b("Host"), b(x.host)), (b("Accept"), b("*/*"))],
                body: Some(Vec::new()),
            }),
            response: Some(Message {
                first_line: Some(b(x.status_line)),
                headers: x.headers.iter().map(|(n, v)| (b(n), b(v))).collect(),
                body: Some(x.wire.clone()),
            }),
        };
        // Names that do not sort in the page's order.
        std::fs::write(
            dir.join(format!("save.{:06x}", (i * 7919) % 65521)),
            rr.encode(),
        )
        .unwrap();
    }
}

/// The site as a WPR archive (the request and response as HTTP/1.1 bytes).
fn write_wpr(path: &Path) {
    use speedy_archive::wpr::{WprArchive, WprRecord};
    let mut w = WprArchive::default();
    for x in site() {
        let mut resp = format!("{}\r\n", x.status_line).into_bytes();
        for (n, v) in &x.headers {
            resp.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
        resp.extend_from_slice(b"\r\n");
        resp.extend_from_slice(&x.wire);
        w.records.push(WprRecord {
            host: x.host.into(),
            url: url_of(&x),
            index: 0,
            request: format!(
                "{}\r\nHost: {}\r\nAccept: */*\r\n\r\n",
                x.request_line, x.host
            )
            .into_bytes(),
            response: resp,
        });
    }
    w.negotiated.insert("www.example.test".into(), "h2".into());
    std::fs::write(path, w.to_gzip()).unwrap();
}

/// The objects of an archive.json without ids, sorted by URL, and its pages.
fn objects_of(dir: &Path) -> (Vec<serde_json::Value>, serde_json::Value) {
    let mut j = archive_json(dir);
    let mut objs: Vec<serde_json::Value> = j["objects"].as_array().unwrap().clone();
    objs.sort_by_key(|o| o["url"].as_str().unwrap().to_string());
    (objs, j["pages"].take())
}

/// Starts `speedy serve --archive DIR`; returns it and its origin → address map.
fn serve(dir: &Path) -> (Running, std::collections::HashMap<String, String>) {
    serve_with(dir, &["--no-think-time"])
}

/// [`serve`] with `flags` instead of `--no-think-time`.
fn serve_with(dir: &Path, flags: &[&str]) -> (Running, std::collections::HashMap<String, String>) {
    use std::io::BufRead;
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(flags)
        .arg("--archive")
        .arg(dir)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let running = Running(child);
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
    let mut origins = std::collections::HashMap::new();
    for _ in 0..n {
        line.clear();
        out.read_line(&mut line).unwrap();
        let parts: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(parts[0], "origin", "{line}");
        origins.insert(parts[1].to_string(), parts[2].to_string());
    }
    (running, origins)
}

/// A child process killed (by its own handle) on drop.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn mahimahi_and_wpr_import_export_import_and_replay_byte_for_byte() {
    let d = Dir::new("replayfmt");
    let (rec, wprgo) = (d.0.join("rec"), d.0.join("site.wprgo"));
    write_mahimahi(&rec);
    write_wpr(&wprgo);
    let n = site().len();
    for (input, format, exported) in [
        (&rec, "mahimahi", d.0.join("rec-out")),
        (&wprgo, "wpr", d.0.join("out.wprgo")),
    ] {
        let a = d.0.join(format!("{format}-a"));
        let b = d.0.join(format!("{format}-b"));
        let out = ok(&["corpus", "import", s(input), "--out", s(&a)]);
        assert!(
            out.starts_with(&format!("{}: 1 pages, {n} objects, ", a.display())),
            "{out}"
        );
        assert!(out.contains("3 domains (discovery from: "), "{out}");
        let out = ok(&[
            "corpus",
            "export",
            s(&a),
            "--format",
            format,
            "--out",
            s(&exported),
        ]);
        assert!(out.contains(&format!("{n} records, 3 hosts")), "{out}");
        ok(&["corpus", "import", s(&exported), "--out", s(&b)]);
        let ((oa, pa), (ob, pb)) = (objects_of(&a), objects_of(&b));
        assert_eq!(oa, ob, "{format}: the same objects after export and import");
        assert_eq!(pa, pb, "{format}: the same pages");
        let proto = |objs: &[serde_json::Value], u: &str| {
            objs.iter().find(|o| o["url"] == u).unwrap()["recorded"].clone()
        };
        if format == "mahimahi" {
            assert_eq!(
                proto(&ob, "https://cdn.example.test/s.css")["addr"],
                "192.0.2.7:443"
            );
        } else {
            assert_eq!(
                proto(&ob, "https://www.example.test/app.js")["protocol"],
                "h2"
            );
        }
        // Every body is what went over the wire, transfer coding undone.
        for x in site() {
            let o = ob.iter().find(|o| o["url"] == url_of(&x).as_str()).unwrap();
            let stored =
                std::fs::read(b.join("bodies").join(o["body"]["sha256"].as_str().unwrap()))
                    .unwrap();
            assert_eq!(stored, x.body, "{}", url_of(&x));
        }
        // HAR export of the same archive still works.
        ok(&[
            "corpus",
            "export",
            s(&b),
            "--format",
            "har",
            "--out",
            s(&d.0.join(format!("{format}.har"))),
        ]);

        // Replayed: every object fetched back byte for byte, with its recorded status.
        let (_srv, origins) = serve(&b);
        let mut args = vec![
            "fetch".to_string(),
            "--cacert".into(),
            s(&b.join("lab-ca/ca.pem")).into(),
        ];
        for (h, addr) in &origins {
            args.push("--resolve".into());
            args.push(format!("{h}={addr}"));
        }
        args.extend(site().iter().map(url_of));
        let o = Command::new(BIN).args(&args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|l: &serde_json::Value| l["pushed"] == false)
            .collect();
        assert_eq!(lines.len(), n, "{lines:?}");
        for x in site() {
            let u = url_of(&x);
            let l = lines
                .iter()
                .find(|l| l["url"] == u.as_str())
                .unwrap_or_else(|| panic!("{u}: {lines:?}"));
            let o = ob.iter().find(|o| o["url"] == u.as_str()).unwrap();
            assert_eq!(l["status"], o["status"], "{u}");
            assert_eq!(l["sha256"], o["body"]["sha256"], "{format} {u}");
        }
    }
}

/// `speedy serve --recorded-think-time`: a recording's server think time (its time to
/// first byte beyond the quickest of its host's) is waited before the response only
/// when asked; the importer leaves `think_ms` at 0 for recorded objects.
#[test]
fn recorded_think_time_is_replayed_only_when_asked() {
    let d = Dir::new("recthink");
    let (rec, a) = (d.0.join("rec"), d.0.join("a"));
    write_mahimahi(&rec);
    ok(&["corpus", "import", s(&rec), "--out", s(&a)]);
    let mut j = archive_json(&a);
    for o in j["objects"].as_array_mut().unwrap() {
        assert_eq!(
            o["think_ms"], 0,
            "a recording's think time stays in `recorded`"
        );
        let fb = match o["url"].as_str().unwrap() {
            "https://cdn.example.test/photo.jpg" => 605,
            "https://cdn.example.test/s.css" => 5,
            _ => continue,
        };
        o["recorded"]["first_byte_ms"] = fb.into();
    }
    std::fs::write(a.join("archive.json"), serde_json::to_vec(&j).unwrap()).unwrap();
    let fetch = |flag: &[&str]| -> Vec<(String, f64)> {
        let (_srv, origins) = serve_with(&a, flag);
        let mut args = vec![
            "fetch".to_string(),
            "--cacert".into(),
            s(&a.join("lab-ca/ca.pem")).into(),
            "--resolve".into(),
            format!("cdn.example.test={}", origins["cdn.example.test"]),
        ];
        args.extend(["s.css", "photo.jpg"].map(|p| format!("https://cdn.example.test/{p}")));
        let o = Command::new(BIN).args(&args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| {
                speedy_records::version::read::<speedy_net::fetch_record::FetchLine>(l).unwrap()
            })
            .map(|l| (l.url, l.elapsed_ms.unwrap()))
            .collect()
    };
    let took =
        |lines: &[(String, f64)], p: &str| lines.iter().find(|(u, _)| u.ends_with(p)).unwrap().1;
    let on = fetch(&["--recorded-think-time"]);
    assert!(took(&on, "photo.jpg") >= 600.0, "{on:?}");
    let off = fetch(&[]);
    assert!(took(&off, "photo.jpg") < 600.0, "{off:?}");
    // The quickest of the host waits nothing either way.
    assert!(took(&on, "s.css") < 600.0, "{on:?}");
}

/// A HAR entry that claims a body of 50 GB and records none is imported with its filler
/// cut to `MAX_SYNTHETIC` and a warning; an archive that asks for more filler than that is
/// refused by the server at start, naming the object.
#[test]
fn huge_claimed_bodies_are_cut_or_refused() {
    let d = Dir::new("huge");
    let mut har: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("timings-only.har")).unwrap()).unwrap();
    let entries = har["log"]["entries"].as_array_mut().unwrap();
    let last = entries.last_mut().unwrap();
    let url = last["request"]["url"].as_str().unwrap().to_string();
    let content = last["response"]["content"].as_object_mut().unwrap();
    content.remove("text");
    content.insert("size".into(), 50_000_000_000u64.into());
    let path = d.0.join("huge.har");
    std::fs::write(&path, serde_json::to_vec(&har).unwrap()).unwrap();
    let a = d.0.join("a");
    let o = speedy(&["corpus", "import", s(&path), "--out", s(&a)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let max = speedy_archive::model::MAX_SYNTHETIC;
    assert!(
        err.contains(&format!(
            "{url}: 50000000000 bytes claimed and none recorded; its filler is cut to {max} bytes"
        )),
        "{err}"
    );
    let mut j = archive_json(&a);
    let o = j["objects"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|o| o["url"] == url.as_str())
        .unwrap();
    assert_eq!(o["body"]["size"], max);
    o["body"]["size"] = (max + 1).into();
    std::fs::write(a.join("archive.json"), serde_json::to_vec(&j).unwrap()).unwrap();
    let err = fail(&["serve", "--listen", "127.0.0.1:0", "--archive", s(&a)]);
    assert!(
        err.contains(&format!("{url}): a synthetic body of {} bytes", max + 1)),
        "{err}"
    );
}
