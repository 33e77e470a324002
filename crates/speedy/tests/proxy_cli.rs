//! `speedy proxy` is safe by default, as its users meet it: what it says on stderr at
//! start (a listener other machines can reach, nothing allowed), which origins and
//! CONNECT targets a real `speedy proxy` serves or refuses (403, the reason in the body)
//! over HTTP/1.1 and SPDY, and `--allow` through a spec file. How the handler matches
//! is tested in-process: `crates/speedy-server/tests/proxy_access.rs`.

mod support;
use spdy::session::Event;
use speedy_test_support::raw::SpdyClient;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::*;

/// How long any one step may take.
const LIMIT: Duration = Duration::from_secs(20);

/// A running `speedy proxy` (killed by pid on drop), its address and its stderr lines as
/// they come.
struct Proxy {
    child: Child,
    addr: String,
    stderr: mpsc::Receiver<String>,
}

impl Proxy {
    /// `speedy proxy ARGS...` (give `--listen`); waits for its start-up line.
    fn start(args: &[&str]) -> Proxy {
        let mut child = Command::new(BIN)
            .arg("proxy")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start speedy proxy");
        let stderr = lines(child.stderr.take().expect("stderr"));
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        out.read_line(&mut line).expect("the start-up line");
        let addr = line
            .strip_prefix("listening on ")
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("{args:?}: start-up line {line:?}"))
            .to_string();
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = out.read_to_end(&mut sink);
        });
        Proxy {
            child,
            addr,
            stderr,
        }
    }

    /// Where a client on this machine reaches it (`0.0.0.0` as 127.0.0.1).
    fn local(&self) -> String {
        self.addr.replace("0.0.0.0:", "127.0.0.1:")
    }

    /// The stderr lines so far, once the proxy has answered a request (it writes them
    /// before it serves), ending with what it wrote within `settle` after that.
    fn said(&self) -> Vec<String> {
        // Port 1 of this machine: refused (403), or allowed and closed (502): no lookup.
        let ask = "GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: x\r\n\r\n";
        let (st, _) = H1::connect(&self.local()).ask(ask);
        assert!(st == 403 || st == 502, "the proxy answers: {st}");
        let mut got = Vec::new();
        while let Ok(l) = self.stderr.recv_timeout(Duration::from_millis(300)) {
            got.push(l);
        }
        got
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // Our own child, by pid.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The lines of `err`, read on a thread, as they come.
fn lines(err: ChildStderr) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}

/// One HTTP/1.1 connection, requests answered in turn.
struct H1 {
    sock: TcpStream,
    inbox: Vec<u8>,
}

impl H1 {
    fn connect(addr: &str) -> H1 {
        let sock = TcpStream::connect(addr).expect("connect to the proxy");
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        H1 {
            sock,
            inbox: Vec::new(),
        }
    }

    /// Sends `head` and reads the response: (status, body). A 2xx answer to CONNECT
    /// has no body (what follows is the tunnel's).
    fn ask(&mut self, head: &str) -> (u16, String) {
        self.sock
            .write_all(head.as_bytes())
            .expect("write a request");
        let end = Instant::now() + LIMIT;
        let mut buf = [0u8; 16384];
        let mut read = |inbox: &mut Vec<u8>| {
            assert!(Instant::now() < end, "{head:?}: no whole response");
            match self.sock.read(&mut buf) {
                Ok(0) => panic!("{head:?}: the proxy closed"),
                Ok(n) => inbox.extend_from_slice(&buf[..n]),
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock) => {}
                Err(e) if matches!(e.kind(), std::io::ErrorKind::TimedOut) => {}
                Err(e) => panic!("{head:?}: {e}"),
            }
        };
        let at = loop {
            match self.inbox.windows(4).position(|w| w == b"\r\n\r\n") {
                Some(i) => break i + 4,
                None => read(&mut self.inbox),
            }
        };
        let text = String::from_utf8_lossy(&self.inbox[..at]).into_owned();
        self.inbox.drain(..at);
        let status: u16 = text[9..12].parse().expect("a status");
        if head.starts_with("CONNECT") && status / 100 == 2 {
            return (status, String::new());
        }
        let len: usize = text
            .lines()
            .find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or_else(|| panic!("{head:?}: no content-length: {text}"));
        while self.inbox.len() < len {
            read(&mut self.inbox);
        }
        let body = String::from_utf8_lossy(&self.inbox[..len]).into_owned();
        self.inbox.drain(..len);
        (status, body)
    }
}

/// A directory served by `speedy serve --root`: `index.html` says `hello`.
fn origin(dir: &std::path::Path) -> Server {
    std::fs::write(dir.join("index.html"), "hello").unwrap();
    Server::start(&["--root", &dir.to_string_lossy()])
}

/// The start of a refusal's body for `target`.
fn refused(target: &str) -> String {
    format!("speedy proxy: {target} is not allowed: allow it with --allow {target} or --resolve")
}

#[test]
fn a_listener_other_machines_can_reach_is_announced_on_stderr() {
    let p = Proxy::start(&["--listen", "0.0.0.0:0", "--allow", "127.0.0.1:1"]);
    assert!(p.addr.starts_with("0.0.0.0:"), "{}", p.addr);
    let said = p.said();
    let want = format!(
        "speedy proxy: listening on {}, reachable from other machines: ",
        p.addr
    );
    let hits: Vec<_> = said.iter().filter(|l| l.starts_with(&want)).collect();
    assert_eq!(hits.len(), 1, "one line: {said:?}");
    assert!(hits[0].contains("--listen 127.0.0.1:PORT"), "{}", hits[0]);
    assert!(
        !said.iter().any(|l| l.contains("nothing is allowed")),
        "{said:?}"
    );
    // On loopback, with something allowed: nothing to say.
    let p = Proxy::start(&["--listen", "127.0.0.1:0", "--allow", "127.0.0.1:1"]);
    assert_eq!(p.said(), Vec::<String>::new());
    // `--allow '*'` beyond loopback: an open proxy, in those words.
    let p = Proxy::start(&["--listen", "0.0.0.0:0", "--allow", "*"]);
    let said = p.said();
    assert!(said.iter().any(|l| l.contains("an open proxy")), "{said:?}");
    // --quiet (the lab's proxies, reached only from their own namespace): no warning.
    let p = Proxy::start(&["--listen", "0.0.0.0:0", "--quiet"]);
    assert_eq!(p.said(), Vec::<String>::new());
}

#[test]
fn with_neither_allow_nor_resolve_it_refuses_everything_and_says_so() {
    let dir = TempDir::new("proxy-nothing");
    let o = origin(&dir);
    // The default listener: only the port is ours.
    let p = Proxy::start(&["--listen", "127.0.0.1:0"]);
    assert!(p.addr.starts_with("127.0.0.1:"), "{}", p.addr);
    let said = p.said();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("speedy proxy: nothing is allowed: every request gets 403")
            && said[0].contains("--allow HOST[:PORT]")
            && said[0].contains("--resolve HOST=IP[:PORT]"),
        "{said:?}"
    );
    let mut c = H1::connect(&p.addr);
    let (st, body) = c.ask(&format!(
        "GET http://{}/index.html HTTP/1.1\r\nHost: x\r\n\r\n",
        o.addr
    ));
    assert_eq!(st, 403, "{body}");
    assert!(body.starts_with(&refused(&o.addr)), "{body}");
}

/// One GET for `http://HOST/PATH` on the SPDY session `c`: (status, body).
fn spdy_get(c: &mut SpdyClient, host: &str, path: &str) -> (u16, String) {
    let v = c.s.version();
    let h = spdy::http::request_headers(v, "GET", "http", host, path, &spdy::Headers::new());
    let id = c.s.open(h, 0, true).expect("open a stream");
    c.flush();
    let (events, done) = c.pump_until(
        LIMIT,
        |e| matches!(e, Event::Closed { id: i } | Event::Reset { id: i, .. } if *i == id),
    );
    assert!(done, "{host}{path} over SPDY did not finish");
    let (mut status, mut body) = (0, Vec::new());
    for e in events {
        match e {
            Event::Reply { id: i, headers, .. } if i == id => {
                status = spdy::http::parse_status(v, &headers).expect("a status")
            }
            Event::Data { id: i, data, .. } if i == id => body.extend_from_slice(&data),
            _ => {}
        }
    }
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn it_serves_what_allow_and_resolve_name_and_refuses_the_rest() {
    let dir = TempDir::new("proxy-allow");
    let o = origin(&dir);
    let port = o.addr.rsplit_once(':').unwrap().1.to_string();
    let resolve = format!("site.example={}", o.addr);
    let allow = format!("127.0.0.1:{port}");
    let p = Proxy::start(&[
        "--listen",
        "127.0.0.1:0",
        "--resolve",
        &resolve,
        "--allow",
        &allow,
    ]);
    assert_eq!(p.said(), Vec::<String>::new(), "nothing to say");
    // HTTP/1.1, absolute form, one connection: allowed by name and by address, refused
    // for another name and for the address at another port.
    let mut c = H1::connect(&p.addr);
    let get = |c: &mut H1, url: &str| c.ask(&format!("GET {url} HTTP/1.1\r\nHost: x\r\n\r\n"));
    assert_eq!(
        get(&mut c, "http://site.example/index.html"),
        (200, "hello".into())
    );
    let (st, body) = get(&mut c, "http://example.org/");
    assert_eq!(
        (st, body.starts_with(&refused("example.org:80"))),
        (403, true),
        "{body}"
    );
    let own = format!("http://127.0.0.1:{port}/index.html");
    assert_eq!(get(&mut c, &own), (200, "hello".into()));
    let (st, body) = get(&mut c, "http://127.0.0.1:22/");
    assert_eq!(
        (st, body.starts_with(&refused("127.0.0.1:22"))),
        (403, true),
        "{body}"
    );
    // SPDY/3.1, one session: a refused stream, then an allowed one.
    let mut s = SpdyClient::connect(&p.addr, spdy::Version::V3_1);
    let (st, body) = spdy_get(&mut s, "example.org", "/");
    assert_eq!(
        (st, body.starts_with(&refused("example.org:80"))),
        (403, true),
        "{body}"
    );
    assert_eq!(
        spdy_get(&mut s, "site.example", "/index.html"),
        (200, "hello".into())
    );
    // CONNECT: refused by name, by address at another port, by an address no rule
    // names, and for an address spelt as a resolver would read it; allowed by address
    // and port, and by a --resolve name, a request going through each tunnel.
    for (target, want) in [
        ("example.org:443".to_string(), 403),
        ("127.0.0.1:22".to_string(), 403),
        (format!("127.0.0.2:{port}"), 403),
        (format!("127.1:{port}"), 400),
        (allow.clone(), 200),
        ("site.example:443".to_string(), 200),
    ] {
        let mut c = H1::connect(&p.addr);
        let (st, body) = c.ask(&format!(
            "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n"
        ));
        assert_eq!(st, want, "CONNECT {target}: {body}");
        match want {
            403 => assert!(body.starts_with(&refused(&target)), "{target}: {body}"),
            200 => {
                let inside = c.ask("GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n");
                assert_eq!(inside, (200, "hello".into()), "through {target}");
            }
            _ => {}
        }
    }
}

#[test]
fn allow_goes_through_a_spec_file_and_a_bad_one_is_named() {
    let dir = TempDir::new("proxy-spec");
    let print = |args: &[&str]| {
        let o = speedy_in(
            &dir,
            &[&["proxy"][..], args, &["--print-spec"]].concat(),
            LIMIT,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    // The default spec: loopback, nothing allowed.
    let v: serde_json::Value = serde_json::from_str(&print(&[])).unwrap();
    assert_eq!(v["listen"], "127.0.0.1:3128");
    assert_eq!(v["allow"], serde_json::json!([]));
    // The flags' spec, written to a file and run from it: the rules hold (port 1 of
    // this machine allowed, so dialled and found closed: 502; another port: 403).
    let flags = ["--listen", "127.0.0.1:0", "--allow", "*.example.com"];
    let spec = print(&[&flags[..], &["--allow", "127.0.0.1:1"]].concat());
    let v: serde_json::Value = serde_json::from_str(&spec).unwrap();
    assert_eq!(
        v["allow"],
        serde_json::json!(["*.example.com", "127.0.0.1:1"])
    );
    let file = dir.join("proxy.json");
    std::fs::write(&file, &spec).unwrap();
    let p = Proxy::start(&["--spec", &file.to_string_lossy()]);
    assert_eq!(p.said(), Vec::<String>::new(), "something is allowed");
    let mut c = H1::connect(&p.addr);
    let get = |c: &mut H1, url: &str| c.ask(&format!("GET {url} HTTP/1.1\r\nHost: x\r\n\r\n")).0;
    assert_eq!(get(&mut c, "http://127.0.0.1:1/"), 502);
    assert_eq!(get(&mut c, "http://127.0.0.1:2/"), 403);
    // A spec file with an entry that is no rule: refused at start, by name.
    std::fs::write(
        dir.join("bad.json"),
        r#"{"version":1,"listen":"127.0.0.1:0","allow":["a.*.com"]}"#,
    )
    .unwrap();
    let o = speedy_in(&dir, &["proxy", "--spec", "bad.json"], LIMIT);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("--allow \"a.*.com\""), "{err}");
}
