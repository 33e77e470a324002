//! Exit codes, defaults and messages of the client commands (issue 18), through the real
//! program against `speedy serve` on loopback: one test per exit-code rule and default.

mod support;
use serde_json::Value;
use std::net::TcpListener;
use std::path::Path;
use std::process::Output;
use std::time::Duration;
use support::*;

const LIMIT: Duration = Duration::from_secs(90);

fn speedy(dir: &Path, args: &[&str]) -> Output {
    speedy_in(dir, args, LIMIT)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// The root URL of the archive's first page.
fn first_root(corpus: &Path) -> String {
    let a: Value =
        serde_json::from_slice(&std::fs::read(corpus.join("archive.json")).unwrap()).unwrap();
    let root = a["pages"][0]["root"].as_u64().unwrap() as usize;
    a["objects"][root]["url"].as_str().unwrap().to_string()
}

/// A one-page synthesized corpus served with `speedy serve --archive` (TLS from its lab CA).
struct Replay {
    dir: TempDir,
    server: Server,
    root: String,
}

impl Replay {
    fn start(tag: &str) -> Replay {
        let dir = TempDir::new(tag);
        let corpus = synth_corpus(&dir, 1);
        let server = Server::start(&["--archive", corpus.to_str().unwrap(), "--no-think-time"]);
        Replay {
            root: first_root(&corpus),
            dir,
            server,
        }
    }

    fn resolve(&self) -> String {
        format!("*={}", self.server.addr)
    }

    /// `speedy load URL --archive corpus --resolve *=ADDR EXTRA...`
    fn load(&self, url: &str, extra: &[&str]) -> Output {
        let resolve = self.resolve();
        let mut args = vec!["load", url, "--archive", "corpus", "--resolve", &resolve];
        args.extend_from_slice(extra);
        speedy(&self.dir, &args)
    }
}

/// A directory server: `a.html` (with a stylesheet and an image that is missing), `b.css`.
fn site(tag: &str, tls: bool) -> (TempDir, Server) {
    let dir = TempDir::new(tag);
    let site = dir.join("site");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(
        site.join("a.html"),
        "<html><head><link rel=stylesheet href=/b.css></head>\
         <body><img src=/missing.png></body></html>",
    )
    .unwrap();
    std::fs::write(site.join("b.css"), "body { color: red }").unwrap();
    std::fs::write(site.join("index.html"), "<html>index</html>").unwrap();
    let mut args = vec!["--root", site.to_str().unwrap()];
    if tls {
        args.push("--tls-self-signed");
    }
    let server = Server::start(&args);
    (dir, server)
}

// ---------------------------------------------------------------------------------------
// speedy load: the root document decides the exit status.

#[test]
fn load_of_an_archived_page_exits_0_trusting_the_archives_lab_ca_by_default() {
    let r = Replay::start("exit-load-ok");
    assert!(r.root.starts_with("https://"), "{}", r.root);
    assert!(r.dir.join("corpus/lab-ca/ca.pem").is_file());
    let o = r.load(&r.root, &["--protocol", "spdy"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let line = &json_lines(&o)[0];
    assert_eq!(line["failed"], Value::Array(vec![]), "{line}");
    assert!(
        line["totals"]["requests"].as_u64().unwrap_or(0) > 1,
        "{line}"
    );
}

#[test]
fn load_with_an_untrusted_certificate_exits_1() {
    // Without --archive nothing says which CA to trust: the lab's certificate is refused.
    let r = Replay::start("exit-load-untrusted");
    let resolve = r.resolve();
    let o = speedy(&r.dir, &["load", &r.root, "--resolve", &resolve]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("root document failed"), "{e}");
    assert!(e.contains("not signed by a trusted CA"), "{e}");
    // The same load with the CA given by hand (the old `--ca` spelling still works).
    let ca = r.dir.join("corpus/lab-ca/ca.pem");
    for opt in ["--cacert", "--ca"] {
        let o = speedy(
            &r.dir,
            &[
                "load",
                &r.root,
                "--resolve",
                &resolve,
                opt,
                ca.to_str().unwrap(),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{opt}: {}", stderr(&o));
    }
}

#[test]
fn load_of_a_url_not_in_the_archive_exits_1() {
    let r = Replay::start("exit-load-404");
    let url = format!("{}no-such-page.html", r.root);
    let o = r.load(&url, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("not the root of a page of the archive"), "{e}");
    assert!(
        e.contains("root document failed") && e.contains("404"),
        "{e}"
    );
}

#[test]
fn load_without_an_address_for_the_host_exits_1() {
    let dir = TempDir::new("exit-load-dns");
    let o = speedy(
        &dir,
        &[
            "load",
            "http://no-such-host.speedy-test.invalid/",
            "--timeout",
            "20",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("root document failed") && e.contains("--resolve"),
        "{e}"
    );
}

#[test]
fn load_from_a_closed_port_exits_1() {
    let dir = TempDir::new("exit-load-closed");
    // A port that was free a moment ago, now closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/");
    let o = speedy(&dir, &["load", &url]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("root document failed"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn load_that_times_out_exits_1() {
    let dir = TempDir::new("exit-load-timeout");
    // Accepts connections and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", silent.local_addr().unwrap());
    let held = std::thread::spawn(move || {
        let (s, _) = silent.accept().unwrap();
        std::thread::sleep(Duration::from_secs(5));
        drop(s);
    });
    let o = speedy(&dir, &["load", &url, "--timeout", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("timed out"), "{}", stderr(&o));
    assert_eq!(json_lines(&o)[0]["timed_out"], true);
    held.join().unwrap();
}

#[test]
fn load_with_failed_subresources_exits_0_and_3_with_fail() {
    let (dir, srv) = site("exit-load-partial", false);
    let url = format!("http://{}/a.html", srv.addr);
    let o = speedy(&dir, &["load", &url]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("1 of 3 requests failed"), "{e}");
    assert!(e.contains("/missing.png: HTTP status 404"), "{e}");
    let o = speedy(&dir, &["load", &url, "--fail"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("fatal with --fail"), "{}", stderr(&o));
    // A page without failures passes --fail.
    let css = format!("http://{}/index.html", srv.addr);
    let o = speedy(&dir, &["load", &css, "--fail"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

// ---------------------------------------------------------------------------------------
// speedy fetch: like curl, HTTP statuses are fatal only with -f/--fail.

#[test]
fn fetch_exits_0_on_any_status_and_22_on_non_2xx_with_fail() {
    let (dir, srv) = site("exit-fetch", false);
    let ok = format!("http://{}/a.html", srv.addr);
    let missing = format!("http://{}/nope", srv.addr);
    let o = speedy(&dir, &["fetch", &ok, &missing]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines = json_lines(&o);
    assert!(lines.iter().any(|l| l["status"] == 404), "{lines:?}");
    for fail in ["-f", "--fail"] {
        let o = speedy(&dir, &["fetch", fail, &ok, &missing]);
        assert_eq!(o.status.code(), Some(22), "{fail}: {}", stderr(&o));
        let o = speedy(&dir, &["fetch", fail, &ok]);
        assert_eq!(o.status.code(), Some(0), "{fail}: {}", stderr(&o));
    }
}

#[test]
fn fetch_without_a_response_exits_1() {
    let dir = TempDir::new("exit-fetch-closed");
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let o = speedy(&dir, &["fetch", &format!("http://127.0.0.1:{port}/x")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn fetch_from_its_printed_spec_fetches_what_the_flags_do() {
    let (dir, srv) = site("fetch-spec", true);
    let base = format!("https://{}", srv.addr);
    let (a, b) = (format!("{base}/a.html"), format!("{base}/b.css"));
    let flags = [
        "-k",
        "--protocol",
        "h2",
        "--concurrency",
        "2",
        "--no-crime-safe",
        "-o",
        "a.out",
        &a,
        &b,
    ];
    // What the lines say of the responses, without the timing, in URL order (they come
    // as the responses end).
    let what = |o: &Output| -> Vec<String> {
        let mut w: Vec<String> = json_lines(o)
            .iter()
            .map(|l| {
                let keys = ["url", "status", "protocol", "bytes", "sha256"];
                keys.map(|k| l[k].to_string()).join(" ")
            })
            .collect();
        w.sort();
        w
    };
    let by_flags = speedy(&dir, &[&["fetch"][..], &flags].concat());
    assert_eq!(by_flags.status.code(), Some(0), "{}", stderr(&by_flags));
    let body = std::fs::read(dir.join("a.out")).unwrap();
    std::fs::remove_file(dir.join("a.out")).unwrap();
    // --print-spec prints the spec and fetches nothing.
    let printed = speedy(&dir, &[&["fetch"][..], &flags, &["--print-spec"]].concat());
    assert_eq!(printed.status.code(), Some(0), "{}", stderr(&printed));
    assert!(!dir.join("a.out").exists());
    let spec: Value = serde_json::from_slice(&printed.stdout).unwrap();
    assert_eq!(spec["urls"], serde_json::json!([a, b]), "{spec}");
    assert_eq!(
        (&spec["protocol"], &spec["crime_safe"]),
        (&Value::from("h2"), &Value::from(false))
    );
    std::fs::write(dir.join("f.json"), &printed.stdout).unwrap();
    let by_spec = speedy(&dir, &["fetch", "--spec", "f.json"]);
    assert_eq!(by_spec.status.code(), Some(0), "{}", stderr(&by_spec));
    assert_eq!(what(&by_spec), what(&by_flags));
    assert_eq!(what(&by_spec).len(), 2);
    assert_eq!(std::fs::read(dir.join("a.out")).unwrap(), body);
    // --spec goes alone.
    let o = speedy(&dir, &["fetch", "--spec", "f.json", &a]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // A misspelt key: exit 2, the key named.
    let text =
        String::from_utf8_lossy(&printed.stdout).replace("\"concurrency\"", "\"concurency\"");
    std::fs::write(dir.join("bad.json"), text).unwrap();
    let o = speedy(&dir, &["fetch", "--spec", "bad.json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--spec bad.json"), "{}", stderr(&o));
    assert!(stderr(&o).contains("concurency"), "{}", stderr(&o));
}

#[test]
fn https_to_a_plain_port_says_so_in_words() {
    let (dir, srv) = site("plain-port", false);
    let url = format!("https://{}/a.html", srv.addr);
    let want = format!(
        "the server at {} did not answer TLS (is it plain HTTP? try http://)",
        srv.addr
    );
    let o = speedy(&dir, &["fetch", &url]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&want), "{out}");
    let o = speedy(&dir, &["load", &url]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
}

// ---------------------------------------------------------------------------------------
// fetch: curl's habits (-o, -o -, -I, -X, -v) on every protocol.

#[test]
fn fetch_writes_bodies_heads_and_verbose_lines_as_curl_does() {
    let (dir, srv) = site("fetch-curl", true);
    let base = format!("https://{}", srv.addr);
    let (a, b) = (format!("{base}/index.html"), format!("{base}/b.css"));
    for p in ["spdy/3.1", "h2", "http1"] {
        // -o FILE for the first URL, -o - (stdout) for the second: the JSON lines move to
        // stderr, the files hold the exact bodies.
        let out = format!("a-{}.html", p.replace('/', "_"));
        let o = speedy(
            &dir,
            &[
                "fetch",
                "-k",
                "--protocol",
                p,
                "-o",
                &out,
                "-o",
                "-",
                &a,
                &b,
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{p}: {}", stderr(&o));
        assert_eq!(o.stdout, b"body { color: red }", "{p}");
        assert_eq!(
            std::fs::read(dir.join(&out)).unwrap(),
            b"<html>index</html>",
            "{p}"
        );
        let lines: Vec<Value> = stderr(&o)
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{p}: {}", stderr(&o));
        // -I: a HEAD, the status line and headers on stdout, no body.
        let o = speedy(&dir, &["fetch", "-k", "--protocol", p, "-I", &a]);
        assert_eq!(o.status.code(), Some(0), "{p}: {}", stderr(&o));
        let head = String::from_utf8_lossy(&o.stdout);
        let proto = if p == "http1" { "http/1.1" } else { p };
        assert!(head.starts_with(&format!("{proto} 200\n")), "{p}: {head}");
        assert!(head.contains("content-type: text/html"), "{p}: {head}");
        // The length a GET would have (RFC 9110 §9.3.2), not the empty body's 0.
        assert!(head.contains("content-length: 18\n"), "{p}: {head}");
        assert!(stderr(&o).contains("\"bytes\":0"), "{p}: {}", stderr(&o));
        // -X: the method goes out as given (the file server allows GET and HEAD only).
        let o = speedy(
            &dir,
            &["fetch", "-k", "--protocol", p, "-X", "DELETE", "-v", &a],
        );
        assert_eq!(o.status.code(), Some(0), "{p}: {}", stderr(&o));
        assert_eq!(json_lines(&o)[0]["status"], 405, "{p}");
        let v = stderr(&o);
        // -v: seconds since start, the connection, TLS and ALPN, what went out and came in.
        assert!(v.contains("] * connecting to "), "{p}: {v}");
        assert!(
            v.contains(&format!(
                "ALPN {}",
                if p == "http1" { "http/1.1" } else { p }
            )),
            "{p}: {v}"
        );
        assert!(v.contains("] > ") && v.contains("] < "), "{p}: {v}");
        assert!(v.contains("DELETE"), "{p}: {v}");
        assert!(v.contains("405"), "{p}: {v}");
    }
    // Without --protocol, ALPN picks SPDY/3.1 (speedy's first choice) from the offer.
    let o = speedy(&dir, &["fetch", "-k", &a]);
    assert_eq!(json_lines(&o)[0]["protocol"], "spdy/3.1");
    // Bad uses are named.
    for (args, want) in [
        (vec!["-o", "x", "-o", "y"], "2 -o files for 1 URLs"),
        (vec!["-X", "GE T"], "not an HTTP method token"),
    ] {
        let mut all = vec!["fetch", "-k"];
        all.extend(args);
        all.push(&a);
        let o = speedy(&dir, &all);
        assert_eq!(o.status.code(), Some(2), "{all:?}");
        assert!(stderr(&o).contains(want), "{all:?}: {}", stderr(&o));
    }
}

// ---------------------------------------------------------------------------------------
// One vocabulary, one set of TLS options.

#[test]
fn every_client_takes_the_one_protocol_vocabulary() {
    let (dir, srv) = site("vocabulary", false);
    let page = format!("http://{}/index.html", srv.addr);
    for p in ["http1", "http/1.1", "spdy", "spdy/3.1", "h2", "http2"] {
        let o = speedy(&dir, &["load", &page, "--plain", "--protocol", p]);
        assert_eq!(o.status.code(), Some(0), "load {p}: {}", stderr(&o));
    }
    for p in ["spdy/3", "spdy/2"] {
        let o = speedy(&dir, &["load", &page, "--protocol", p]);
        assert_eq!(o.status.code(), Some(2), "load {p}");
        assert!(
            stderr(&o).contains("speaks http1, spdy/3.1, h2 and h3, not"),
            "{}",
            stderr(&o)
        );
    }
    for (p, got) in [
        ("http1", "http/1.1"),
        ("http/1.1", "http/1.1"),
        ("spdy", "spdy/3.1"),
        ("spdy/3.1", "spdy/3.1"),
        ("spdy/3", "spdy/3"),
        ("spdy/2", "spdy/2"),
        ("h2", "h2"),
        ("http2", "h2"),
    ] {
        let o = speedy(&dir, &["fetch", &page, "--protocol", p]);
        assert_eq!(o.status.code(), Some(0), "fetch {p}: {}", stderr(&o));
        assert_eq!(json_lines(&o)[0]["status"], 200, "fetch {p}");
        assert_eq!(json_lines(&o)[0]["protocol"], got, "fetch {p}");
    }
    for p in [
        "spdy", "spdy/3.1", "spdy/3", "spdy/2", "http1", "http/1.1", "h2", "http2",
    ] {
        let o = speedy(
            &dir,
            &[
                "bench",
                &page,
                "-n",
                "3",
                "-c",
                "1",
                "--warmup",
                "0s",
                "--protocol",
                p,
            ],
        );
        assert_eq!(o.status.code(), Some(0), "bench {p}: {}", stderr(&o));
    }
    for cmd in ["load", "fetch", "bench"] {
        let o = speedy(&dir, &[cmd, &page, "--protocol", "spdy/4"]);
        assert_eq!(o.status.code(), Some(2), "{cmd}");
        let e = stderr(&o);
        assert!(
            e.contains("unknown protocol \"spdy/4\"")
                && e.contains(
                    "http1 (= http/1.1), spdy (= spdy/3.1), spdy/3.1, spdy/3, spdy/2, h2"
                ),
            "{cmd}: {e}"
        );
    }
}

#[test]
fn bench_over_spdy_counts_every_request_byte_and_status() {
    // Every request of the budget answered once, bytes and statuses counted, header
    // compression reported, failures counted by kind, on every SPDY version.
    let (dir, srv) = site("bench-spdy", false);
    let size = "<html>index</html>".len();
    let bench = |path: &str, p: &str, n: &str| {
        let url = format!("http://{}/{path}", srv.addr);
        let o = speedy(
            &dir,
            &[
                "bench",
                &url,
                "-n",
                n,
                "-c",
                "2",
                "-m",
                "5",
                "--warmup",
                "0s",
                "--json",
                "--protocol",
                p,
            ],
        );
        let v: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("bench --json {p}: {e}: {}", stderr(&o)));
        (o.status.code(), v)
    };
    for p in ["spdy/3.1", "spdy/3", "spdy/2"] {
        let (code, b) = bench("index.html", p, "300");
        assert_eq!(code, Some(0), "{p}: {b}");
        assert_eq!(b["requests"], 300, "{p}: {b}");
        assert_eq!(b["errors"], 0, "{p}: {b}");
        assert_eq!(b["bytes"], 300 * size, "{p}: {b}");
        assert_eq!(b["status_codes"]["2xx"], 300, "{p}: {b}");
        let h = &b["header_bytes"];
        let (raw, wire) = (h["raw_sent"].as_u64(), h["wire_sent"].as_u64());
        assert!(
            raw.zip(wire).is_some_and(|(r, w)| w > 0 && w < r),
            "{p}: header bytes {h}"
        );
        // A missing page: every request fails as http 404, none is lost.
        let (code, b) = bench("missing.png", p, "40");
        assert_eq!(code, Some(1), "{p}: {b}");
        assert_eq!(b["requests"], 0, "{p}: {b}");
        assert_eq!(b["errors_by_kind"]["http 404"], 40, "{p}: {b}");
        assert_eq!(b["status_codes"]["4xx"], 40, "{p}: {b}");
    }
}

/// A CA and a `localhost` certificate it signed, made with the openssl program: returns
/// (CA file, certificate, key). The openssl program is required (`.ci/run` installs it):
/// a missing tool fails the test rather than skipping it.
fn openssl_ca(dir: &Path) -> Option<(String, String, String)> {
    let run = |args: &[&str]| {
        let o = run_bounded(
            std::process::Command::new("openssl")
                .current_dir(dir)
                .args(args),
            LIMIT,
        );
        assert!(o.status.success(), "openssl {args:?}: {}", stderr(&o));
    };
    if std::process::Command::new("openssl")
        .arg("version")
        .output()
        .is_err()
    {
        panic!("this test needs the openssl program (apt-get install openssl)");
    }
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut a = vec!["req", "-x509", "-days", "2", "-subj", "/CN=speedy test CA"];
    a.extend_from_slice(&ec);
    a.extend_from_slice(&["-keyout", "ca.key", "-out", "ca.pem"]);
    run(&a);
    let mut a = vec!["req", "-subj", "/CN=localhost"];
    a.extend_from_slice(&ec);
    a.extend_from_slice(&["-keyout", "leaf.key", "-out", "leaf.csr"]);
    run(&a);
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-days",
        "2",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-extfile",
        "leaf.ext",
        "-out",
        "leaf.pem",
    ]);
    let p = |f: &str| dir.join(f).to_string_lossy().into_owned();
    Some((p("ca.pem"), p("leaf.pem"), p("leaf.key")))
}

#[test]
fn every_client_takes_k_and_cacert() {
    let dir = TempDir::new("tls-options");
    let Some((ca, cert, key)) = openssl_ca(&dir) else {
        return;
    };
    let site = dir.join("site");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(site.join("index.html"), "<html>hi</html>").unwrap();
    let srv = Server::start(&[
        "--root",
        site.to_str().unwrap(),
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
    ]);
    let port = srv.addr.rsplit(':').next().unwrap();
    let page = format!("https://localhost:{port}/index.html");
    for (cmd, extra) in [
        ("fetch", vec![]),
        ("load", vec![]),
        ("bench", vec!["-n", "2", "-c", "1", "--warmup", "0s"]),
    ] {
        let with = |tls: &[&str]| {
            let mut args = vec![cmd, page.as_str()];
            args.extend_from_slice(tls);
            args.extend_from_slice(&extra);
            speedy(&dir, &args)
        };
        for tls in [&["-k"][..], &["--insecure"], &["--cacert", &ca]] {
            let o = with(tls);
            assert_eq!(o.status.code(), Some(0), "{cmd} {tls:?}: {}", stderr(&o));
        }
        // Without either, the certificate is refused (fetch and load in words).
        let o = with(&[]);
        assert_ne!(o.status.code(), Some(0), "{cmd} without -k or --cacert");
        if cmd != "bench" {
            let said = format!("{}{}", stderr(&o), String::from_utf8_lossy(&o.stdout));
            assert!(said.contains("not signed by a trusted CA"), "{cmd}: {said}");
        }
    }
}

#[test]
fn a_ca_file_without_a_certificate_is_refused_by_name() {
    let (dir, srv) = site("empty-ca", true);
    let page = format!("https://{}/index.html", srv.addr);
    let empty = dir.join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let e = empty.to_str().unwrap();
    for (cmd, opt) in [
        ("fetch", "--cacert"),
        ("load", "--cacert"),
        ("load", "--ca"),
        ("bench", "--cacert"),
    ] {
        let o = speedy(&dir, &[cmd, &page, opt, e]);
        assert_eq!(o.status.code(), Some(2), "{cmd} {opt}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("CA file {e}: no certificate in it")),
            "{cmd} {opt}: {err}"
        );
    }
    // The archive's default CA is checked the same way.
    let r = Replay::start("empty-lab-ca");
    std::fs::write(r.dir.join("corpus/lab-ca/ca.pem"), "").unwrap();
    let o = r.load(&r.root, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("lab-ca/ca.pem: no certificate in it"),
        "{}",
        stderr(&o)
    );
}

// ---------------------------------------------------------------------------------------
// Clear messages for bad input.

#[test]
fn bad_inputs_get_a_message_that_names_the_problem() {
    let dir = TempDir::new("bad-inputs");
    let o = speedy(&dir, &["corpus", "synth", "--out", "c", "--pages", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--pages 0"), "{}", stderr(&o));
    assert!(!dir.join("c").exists(), "nothing written");

    let o = speedy(&dir, &["bench", "http://127.0.0.1:1/", "-n", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("-n 0"), "{}", stderr(&o));

    // h2load's habits: -d was the duration before -D; it is pointed to -D by name.
    let o = speedy(&dir, &["bench", "http://127.0.0.1:1/", "-d", "5s"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the duration is -D 5s"),
        "{}",
        stderr(&o)
    );

    let o = speedy(&dir, &["serve", "--listen", "127.0.0.1:0"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("--root") && e.contains("--archive"), "{e}");

    let noise: Vec<u8> = (0u32..2048)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    std::fs::write(dir.join("noise.warc"), noise).unwrap();
    let o = speedy(&dir, &["corpus", "import", "noise.warc", "--out", "a"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("noise.warc: neither a WARC nor a HAR"), "{e}");
    assert!(!e.contains("not JSON"), "{e}");
}

#[test]
fn serve_lists_what_it_speaks_in_help_and_banner() {
    let dir = TempDir::new("serve-banner");
    let help = speedy(&dir, &["serve", "--help"]);
    let h = String::from_utf8_lossy(&help.stdout);
    assert!(h.contains("HTTP/2 (h2)"), "{h}");
    let top = speedy(&dir, &["--help"]);
    let t = String::from_utf8_lossy(&top.stdout);
    let serve_line = t
        .lines()
        .find(|l| l.trim_start().starts_with("serve"))
        .unwrap();
    assert!(serve_line.contains("HTTP/2"), "{serve_line}");
    // The banner: the human line and the JSON line both name h2, which the server speaks.
    std::fs::create_dir_all(dir.join("site")).unwrap();
    std::fs::write(dir.join("site/index.html"), "hi").unwrap();
    let mut child = std::process::Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(dir.join("site"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut r = std::io::BufReader::new(child.stdout.take().unwrap());
    let (mut human, mut json) = (String::new(), String::new());
    use std::io::BufRead;
    r.read_line(&mut human).unwrap();
    r.read_line(&mut json).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(human.contains("h2"), "{human}");
    let v: Value = serde_json::from_str(&json).unwrap();
    assert!(
        v["protocols"].as_array().unwrap().contains(&"h2".into()),
        "{v}"
    );
}
