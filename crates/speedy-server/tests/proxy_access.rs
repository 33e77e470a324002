//! What `speedy proxy` lets its clients reach, on the wire, in-process: the proxy handler
//! built from a [`ProxySpec`] as `speedy proxy` builds it ([`proxy_options`]) behind
//! `speedy_net::server::serve` on loopback ([`TestServer`]), in front of an origin that
//! answers every request with its host and path. Clients are driven by hand: HTTP/1.1
//! with absolute-form requests and CONNECT on one keep-alive connection, SPDY/3.1 and h2
//! with requests for several origins on one session. (The flags and the start-up lines
//! are the program's: `crates/speedy/tests/proxy_cli.rs`.)

use spdy::session::Event;
use speedy_net::server::{Handler, Request, Response, ResponseFuture, ServerConfig};
use speedy_server::allow::Host;
use speedy_server::proxy::Proxy;
use speedy_server::run::proxy_options;
use speedy_server::spec::ProxySpec;
use speedy_test_support::raw::{h2t, H2Raw, SpdyClient};
use speedy_test_support::TestServer;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long any one exchange may take.
const LIMIT: Duration = Duration::from_secs(10);

/// An origin answering every request with `HOST PATH` (as it received them).
struct Echo;

impl Handler for Echo {
    fn handle(&self, req: Request) -> ResponseFuture {
        let body = format!("{} {}", req.host, req.path);
        Box::pin(async move { Response::new(200, "text/plain", body) })
    }
}

/// The origin, on its own loopback port.
fn origin() -> TestServer {
    TestServer::start(Arc::new(Echo), ServerConfig::default())
}

/// The proxy `speedy proxy` would run for `spec` (its listener aside).
fn proxy(spec: ProxySpec) -> TestServer {
    assert_eq!(spec.check(), Ok(()));
    let opts = proxy_options(&spec).expect("the spec's options");
    TestServer::start(Arc::new(Proxy::new(opts, None)), ServerConfig::default())
}

/// A spec with these `--resolve` and `--allow` entries.
fn spec(resolve: &[String], allow: &[String]) -> ProxySpec {
    ProxySpec {
        resolve: resolve.to_vec(),
        allow: allow.to_vec(),
        ..ProxySpec::default()
    }
}

/// One HTTP/1.1 connection to the proxy, requests answered in turn.
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

    /// Reads until `inbox` holds `n` bytes (or the deadline, or EOF).
    fn fill(&mut self, n: usize, end: Instant) {
        let mut buf = [0u8; 16384];
        while self.inbox.len() < n && Instant::now() < end {
            match self.sock.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => self.inbox.extend_from_slice(&buf[..k]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(e) => panic!("reading from the proxy: {e}"),
            }
        }
    }

    /// Sends `head` (a request without a body) and reads its response: (status, body).
    /// A 2xx answer to CONNECT has no body: what follows is the tunnel's.
    fn ask(&mut self, head: &str) -> (u16, String) {
        self.sock
            .write_all(head.as_bytes())
            .expect("write a request");
        let end = Instant::now() + LIMIT;
        let head_end = loop {
            if let Some(i) = self.inbox.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            assert!(Instant::now() < end, "{head:?}: no response head");
            let n = self.inbox.len() + 1;
            self.fill(n, end);
        };
        let text = String::from_utf8_lossy(&self.inbox[..head_end]).into_owned();
        self.inbox.drain(..head_end);
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
            .unwrap_or_else(|| panic!("{head:?}: no content-length in {text:?}"));
        self.fill(len, end);
        assert!(self.inbox.len() >= len, "{head:?}: body cut short");
        let body = String::from_utf8_lossy(&self.inbox[..len]).into_owned();
        self.inbox.drain(..len);
        (status, body)
    }

    /// `GET URL` in absolute form, keeping the connection.
    fn get(&mut self, url: &str) -> (u16, String) {
        self.ask(&format!("GET {url} HTTP/1.1\r\nHost: x\r\n\r\n"))
    }

    /// `CONNECT TARGET`.
    fn connect_to(&mut self, target: &str) -> (u16, String) {
        self.ask(&format!(
            "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n"
        ))
    }
}

/// The refusal's words for `target` (`HOST:PORT`).
fn refused(target: &str) -> String {
    format!("speedy proxy: {target} is not allowed: allow it with --allow {target} or --resolve")
}

#[test]
fn http1_reaches_allowed_origins_and_gets_403_for_the_others_on_one_connection() {
    let o = origin();
    let port = o.socket_addr().port();
    let p = proxy(spec(
        &[format!("site.example={}", o.addr())],
        &[format!("127.0.0.1:{port}"), "*.allowed.example".into()],
    ));
    let mut c = H1::connect(p.addr());
    // Named by --resolve (any port: the entry's address decides), by --allow as an
    // address at its port; refused elsewhere, each answer on the same connection.
    assert_eq!(
        c.get("http://site.example/a"),
        (200, "site.example /a".into())
    );
    let (st, body) = c.get("http://other.example/b");
    assert_eq!(st, 403, "{body}");
    assert!(body.starts_with(&refused("other.example:80")), "{body}");
    assert!(body.contains("--resolve other.example=IP[:PORT]"), "{body}");
    let own = format!("http://127.0.0.1:{port}/c");
    assert_eq!(c.get(&own), (200, format!("127.0.0.1:{port} /c")));
    // The same address at another port, or spelt as IPv4-mapped IPv6 at that port.
    let (st, body) = c.get("http://127.0.0.1:1/d");
    assert_eq!(st, 403, "{body}");
    assert!(body.starts_with(&refused("127.0.0.1:1")), "{body}");
    let mapped = format!("http://[::ffff:127.0.0.1]:{port}/e");
    assert_eq!(c.get(&mapped).0, 200, "the same address, spelt otherwise");
    // A suffix rule does not name the name itself.
    let (st, body) = c.get("http://allowed.example/f");
    assert_eq!(st, 403, "{body}");
    // Forms a resolver reads as addresses: refused before any rule is consulted.
    for odd in ["http://127.1/", "http://2130706433/", "http://0x7f.0.0.1/"] {
        let (st, body) = c.get(odd);
        assert_eq!(st, 400, "{odd}: {body}");
        assert!(
            body.contains("is not an IP address in its usual form"),
            "{body}"
        );
    }
    assert_eq!(
        c.get("http://SITE.example./g"),
        (200, "SITE.example. /g".into())
    );
}

#[test]
fn connect_is_matched_by_name_address_and_port() {
    let o = origin();
    let port = o.socket_addr().port();
    let p = proxy(spec(
        &[format!("site.example={}", o.addr())],
        &[format!("127.0.0.1:{port}")],
    ));
    // Refused: a name nobody named, the allowed address at another port, an address
    // no rule names (the origin's, spelt as a resolver would read it), a name that
    // --resolve maps to an allowed address.
    for (target, status) in [
        ("other.example:443".to_string(), 403),
        ("127.0.0.1:22".to_string(), 403),
        (format!("127.0.0.2:{port}"), 403),
        (format!("127.1:{port}"), 400),
        (format!("2130706433:{port}"), 400),
        (format!("[::1]:{port}"), 403),
    ] {
        let mut c = H1::connect(p.addr());
        let (st, body) = c.connect_to(&target);
        assert_eq!(st, status, "CONNECT {target}: {body}");
        if status == 403 {
            assert!(body.starts_with(&refused(&target)), "{target}: {body}");
        }
    }
    // Allowed, by address and port, and by a --resolve name (at any port): a tunnel
    // to the origin, which then answers a request sent through it.
    for target in [format!("127.0.0.1:{port}"), "site.example:443".to_string()] {
        let mut c = H1::connect(p.addr());
        assert_eq!(c.connect_to(&target).0, 200, "CONNECT {target}");
        let through = c.ask("GET /t HTTP/1.1\r\nHost: tunnelled.example\r\n\r\n");
        assert_eq!(through, (200, "tunnelled.example /t".into()), "{target}");
    }
}

/// One request on the SPDY session `c` for `http://HOST/PATH`: (status, body).
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
            Event::Reset { id: i, .. } if i == id => panic!("{host}{path}: RST_STREAM"),
            _ => {}
        }
    }
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn spdy_streams_get_403_for_origins_not_allowed_and_the_session_goes_on() {
    let o = origin();
    let p = proxy(spec(
        &[format!("site.example:8080={}", o.addr())],
        &["*.allowed.example:80".into()],
    ));
    let mut c = SpdyClient::connect(p.addr(), spdy::Version::V3_1);
    let (st, body) = spdy_get(&mut c, "other.example", "/a");
    assert_eq!(st, 403, "{body}");
    assert!(body.starts_with(&refused("other.example:80")), "{body}");
    // A --resolve entry with a port allows its host at that port only.
    let (st, body) = spdy_get(&mut c, "site.example", "/b");
    assert_eq!(st, 403, "{body}");
    assert!(body.starts_with(&refused("site.example:80")), "{body}");
    let (st, body) = spdy_get(&mut c, "site.example:8080", "/c");
    assert_eq!((st, body.as_str()), (200, "site.example:8080 /c"));
    // A suffix rule: not the name itself, nor a name under it at another port.
    for (host, target) in [
        ("allowed.example", "allowed.example:80"),
        ("www.allowed.example:81", "www.allowed.example:81"),
    ] {
        let (st, body) = spdy_get(&mut c, host, "/d");
        assert_eq!(st, 403, "{body}");
        assert!(body.starts_with(&refused(target)), "{body}");
    }
    assert!(!c.eof, "the session is still up");
    assert_eq!(spdy_get(&mut c, "site.example:8080", "/e").0, 200);
}

/// A request header block naming `authority` (HPACK literals, no Huffman).
fn h2_block(authority: &str, path: &str) -> Vec<u8> {
    let mut b = Vec::new();
    for (n, v) in [
        (":method", "GET"),
        (":scheme", "http"),
        (":authority", authority),
        (":path", path),
    ] {
        b.push(0x00);
        b.push(n.len() as u8);
        b.extend_from_slice(n.as_bytes());
        b.push(v.len() as u8);
        b.extend_from_slice(v.as_bytes());
    }
    b
}

/// One GET on stream `id` of `c`: (whether the status was 200, the body).
fn h2_get(c: &mut H2Raw, id: u32, authority: &str, path: &str) -> (bool, String) {
    c.frame(h2t::HEADERS, 0x4 | 0x1, id, &h2_block(authority, path));
    let end = Instant::now() + LIMIT;
    let (mut ok, mut body) = (false, Vec::new());
    while let Some((ty, flags, s, p)) = c.next_frame(end.saturating_duration_since(Instant::now()))
    {
        match ty {
            _ if s != id => {}
            // The static table's `:status 200` comes first when the answer is 200.
            h2t::HEADERS => ok = p.first() == Some(&0x88),
            h2t::DATA => body.extend_from_slice(&p),
            h2t::RST_STREAM => panic!("{authority}{path}: RST_STREAM"),
            _ => {}
        }
        if s == id && flags & 1 != 0 && matches!(ty, h2t::HEADERS | h2t::DATA) {
            return (ok, String::from_utf8_lossy(&body).into_owned());
        }
    }
    panic!("{authority}{path} over h2 did not finish");
}

#[test]
fn h2_streams_get_403_for_origins_not_allowed_and_the_connection_goes_on() {
    let o = origin();
    let port = o.socket_addr().port();
    let p = proxy(spec(&[], &[format!("127.0.0.1:{port}")]));
    let mut c = H2Raw::connect(p.addr());
    let own = format!("127.0.0.1:{port}");
    let (ok, body) = h2_get(&mut c, 1, "other.example", "/a");
    assert!(
        !ok && body.starts_with(&refused("other.example:80")),
        "{body}"
    );
    assert_eq!(h2_get(&mut c, 3, &own, "/b"), (true, format!("{own} /b")));
    let (ok, body) = h2_get(&mut c, 5, "127.0.0.1:1", "/c");
    assert!(!ok && body.starts_with(&refused("127.0.0.1:1")), "{body}");
    assert_eq!(h2_get(&mut c, 7, &own, "/d"), (true, format!("{own} /d")));
}

#[test]
fn with_neither_flag_nothing_is_allowed_and_a_star_allows_everything() {
    let o = origin();
    // Safe by default: the message says what to pass.
    let p = proxy(ProxySpec::default());
    let mut c = H1::connect(p.addr());
    let url = format!("http://{}/a", o.addr());
    let (st, body) = c.get(&url);
    assert_eq!(st, 403, "{body}");
    assert!(
        body.contains("--allow") && body.contains("--resolve"),
        "{body}"
    );
    // `--resolve '*=...'` (the lab's cellular proxies): every host, to that address,
    // names and addresses alike.
    let p = proxy(spec(&[format!("*={}", o.addr())], &[]));
    let mut c = H1::connect(p.addr());
    assert_eq!(
        c.get("http://any.example/b"),
        (200, "any.example /b".into())
    );
    assert_eq!(c.get("http://10.9.9.9:7/c"), (200, "10.9.9.9:7 /c".into()));
    assert_eq!(c.connect_to("whatever.example:443").0, 200);
    // `--allow '*'`: every host, reached where it is.
    let p = proxy(spec(&[], &["*".into()]));
    let mut c = H1::connect(p.addr());
    assert_eq!(c.get(&url), (200, format!("{} /a", o.addr())));
}

#[test]
fn resolve_entries_and_allow_rules_combine_as_the_options_say() {
    let o = origin();
    let opts = proxy_options(&spec(
        &[
            format!("a.example={}", o.addr()),
            "B.example:8443=10.0.0.2".into(),
        ],
        &["10.0.0.1:443".into(), "*.c.example".into()],
    ))
    .unwrap();
    let h = |s: &str| Host::parse(s).unwrap();
    assert!(opts.permits(&h("a.example"), 1) && opts.permits(&h("A.EXAMPLE."), 443));
    assert!(opts.permits(&h("b.example"), 8443) && !opts.permits(&h("b.example"), 443));
    assert!(opts.permits(&h("10.0.0.1"), 443) && !opts.permits(&h("10.0.0.1"), 80));
    assert!(opts.permits(&h("x.c.example"), 22) && !opts.permits(&h("c.example"), 22));
    // The addresses --resolve maps names to are not themselves allowed.
    assert!(!opts.permits(&h("10.0.0.2"), 8443));
    let all = proxy_options(&spec(&["*=10.0.0.9:80".into()], &[])).unwrap();
    assert!(all.permits(&h("10.0.0.2"), 1) && all.permits(&h("any.example"), 443));
    // A --resolve or --allow entry that is no host is refused by name.
    let e = proxy_options(&spec(&["127.1=10.0.0.1".into()], &[]))
        .err()
        .unwrap();
    assert!(e.starts_with("--resolve \"127.1=10.0.0.1\""), "{e}");
    let e = proxy_options(&spec(&[], &["a.*".into()])).err().unwrap();
    assert!(e.starts_with("--allow \"a.*\""), "{e}");
}
