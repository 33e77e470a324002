//! `speedy serve --root`'s file server on the wire, in-process: a [`FileServer`] behind
//! `speedy_net::server::serve` on loopback ([`TestServer`]), configured as `speedy serve`
//! configures it, driven by hand over raw sockets. (Moved from the binary's
//! `crates/speedy/tests/serve_fetch.rs`, which keeps what needs `speedy fetch`.) The
//! root's confinement is checked here too, over SPDY and HTTP/1.1.

use speedy_net::client::{Client, ClientConfig, ClientRequest};
use speedy_net::server::{Handler, Request, ResponseFuture};
use speedy_net::Protocol;
use speedy_server::files::FileServer;
use speedy_server::run::files_config;
use speedy_server::spec::ServeSpec;
use speedy_test_support::raw::{http1_get, http1_get_ok, SpdyClient};
use speedy_test_support::{TempDir, TestServer};
use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The site `serve_fetch.rs` serves: a page, a style sheet, a script in a folder and a
/// 300 KB binary.
fn site() -> TempDir {
    let site = TempDir::new("files");
    let dir = site.to_path_buf();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("index.html"), "<html>hi</html>").unwrap();
    std::fs::write(dir.join("a.css"), "body{}").unwrap();
    std::fs::write(dir.join("sub/b.js"), "x=1").unwrap();
    let big: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(dir.join("big.bin"), big).unwrap();
    site
}

/// What `speedy serve --root ROOT` runs, in-process: the file server (no push map, echo
/// or reset paths) with the command's default limits and SPDY settings.
fn serve(root: &Path) -> TestServer {
    let cfg = files_config(&ServeSpec::default()).unwrap();
    let root = root.canonicalize().unwrap();
    let files = FileServer::new(root, HashMap::new(), false, HashSet::new());
    TestServer::start(Arc::new(files), cfg)
}

#[test]
fn raw_http1_and_spdy_share_the_port() {
    let root = site();
    let srv = serve(&root);
    let mut s = std::net::TcpStream::connect(srv.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    assert!(resp.ends_with("<html>hi</html>"));
}

/// Splits HTTP/1.1 responses read to the end of the connection: (head lines, body) each;
/// a response to HEAD (`heads[i]`) has no body whatever its `content-length` says.
fn split_responses(mut raw: &[u8], heads: &[bool]) -> Vec<(Vec<String>, Vec<u8>)> {
    let mut out = Vec::new();
    for &head_only in heads {
        let end = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("response {} incomplete", out.len()));
        let lines: Vec<String> = String::from_utf8(raw[..end].to_vec())
            .unwrap()
            .split("\r\n")
            .map(str::to_string)
            .collect();
        let len: usize = lines
            .iter()
            .find_map(|l| l.strip_prefix("content-length: "))
            .map_or(0, |v| v.parse().unwrap());
        let body_len = if head_only { 0 } else { len };
        out.push((lines, raw[end + 4..end + 4 + body_len].to_vec()));
        raw = &raw[end + 4 + body_len..];
    }
    assert!(
        raw.is_empty(),
        "{} bytes after the last response",
        raw.len()
    );
    out
}

#[test]
fn http1_answers_files_from_memory_and_hands_the_rest_to_hyper_in_order() {
    let root = site();
    let srv = serve(&root);
    let mut s = std::net::TcpStream::connect(srv.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // Pipelined in one write: four requests answered from memory (one a HEAD, one a
    // 300 KB body), then ones that are not (a body, a POST, Connection: close).
    let reqs = "GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n\
                HEAD /a.css HTTP/1.1\r\nHost: x\r\n\r\n\
                GET /sub/b.js?v=1 HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n\
                GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n\
                GET /index.html HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n\
                POST /a.css HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi\
                GET /a.css HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    s.write_all(reqs.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let r = split_responses(&raw, &[false, true, false, false, false, false, false]);
    let status: Vec<&str> = r.iter().map(|(h, _)| h[0].as_str()).collect();
    assert_eq!(
        status,
        [
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 405 Method Not Allowed",
            "HTTP/1.1 200 OK"
        ]
    );
    let file = |p: &str| std::fs::read(root.join(p)).unwrap();
    assert_eq!(r[0].1, file("index.html"));
    assert!(
        r[1].0.contains(&"content-length: 6".to_string()),
        "{:?}",
        r[1].0
    );
    assert_eq!(r[2].1, file("sub/b.js"));
    assert_eq!(r[3].1, file("big.bin"));
    assert_eq!(r[4].1, file("index.html"));
    assert_eq!(r[6].1, file("a.css"));
    // The same answer from memory (0) and from hyper (4): the same head but the date.
    let undated = |h: &[String]| -> Vec<String> {
        h.iter()
            .map(|l| match l.strip_prefix("date: ") {
                Some(_) => "date: …".to_string(),
                None => l.clone(),
            })
            .collect()
    };
    assert_eq!(undated(&r[0].0), undated(&r[4].0));
    assert_eq!(r[0].0.len(), 4, "{:?}", r[0].0);
}

#[test]
fn never_serves_files_outside_the_root() {
    let root = site();
    let dir = root.to_path_buf();
    // A secret beside the root (`..` from the root reaches it) and a link to it inside.
    let name = format!("{}-secret", dir.file_name().unwrap().to_str().unwrap());
    let secret = dir.parent().unwrap().join(&name);
    std::fs::write(&secret, "secret").unwrap();
    std::os::unix::fs::symlink(&secret, dir.join("link")).unwrap();
    let srv = serve(&root);
    let limit = Duration::from_secs(10);
    let paths = [
        format!("/../{name}"),
        format!("/%2e%2e/{name}"),
        "/link".to_string(),
        "/sub/../../x".to_string(),
        format!("/sub/%2e%2e/%2e%2e/{name}"),
    ];
    for path in &paths {
        let mut spdy = SpdyClient::connect(srv.addr(), spdy::Version::V3_1);
        let (status, body) = spdy.get(path, limit);
        assert!(
            matches!(status, Some(400) | Some(404)),
            "SPDY {path}: {status:?}"
        );
        assert!(!body.ends_with(b"secret"), "SPDY {path}");
        let raw = http1_get(srv.addr(), path, limit);
        let head = String::from_utf8_lossy(&raw[..raw.len().min(12)]).to_string();
        assert!(
            head == "HTTP/1.1 400" || head == "HTTP/1.1 404",
            "HTTP/1.1 {path}: {head:?}"
        );
        assert!(!raw.ends_with(b"secret"), "HTTP/1.1 {path}");
    }
    // The same server serves what is inside.
    let ok = http1_get_ok(srv.addr(), "/sub/b.js", limit);
    assert!(ok.ends_with(b"x=1"));
    let _ = std::fs::remove_file(secret);
}

/// The file server with its ready answers hidden: every request goes through
/// [`Handler::handle`], as through a wrapper that must see every request.
struct HandleOnly(FileServer);

impl Handler for HandleOnly {
    fn handle(&self, req: Request) -> ResponseFuture {
        self.0.handle(req)
    }
}

/// One request over SPDY `v`: the reply's headers (sorted) and the body.
fn spdy_exchange(addr: &str, v: spdy::Version, method: &str, path: &str) -> (Vec<String>, Vec<u8>) {
    let mut c = SpdyClient::connect(addr, v);
    let h = c.request(method, path, &[]);
    let id = c.s.open(h, 0, true).expect("open");
    c.flush();
    let (events, done) = c.pump_until(Duration::from_secs(10), |e| {
        matches!(e, spdy::session::Event::Closed { id: i } | spdy::session::Event::Reset { id: i, .. } if *i == id)
    });
    assert!(done, "{method} {path} over {v:?} did not finish");
    let (mut head, mut body) = (Vec::new(), Vec::new());
    for e in events {
        match e {
            spdy::session::Event::Reply { id: i, headers, .. } if i == id => {
                for (n, val) in headers.iter() {
                    head.push(format!(
                        "{}: {}",
                        String::from_utf8_lossy(n),
                        String::from_utf8_lossy(val)
                    ));
                }
            }
            spdy::session::Event::Data { id: i, data, .. } if i == id => {
                body.extend_from_slice(&data)
            }
            _ => {}
        }
    }
    head.sort();
    (head, body)
}

/// The file server on `root` twice: as `speedy serve` runs it, and with its ready
/// answers hidden ([`HandleOnly`]).
fn ready_and_handled(root: &Path) -> (TestServer, TestServer) {
    let cfg = files_config(&ServeSpec::default()).unwrap();
    let files = FileServer::new(
        root.canonicalize().unwrap(),
        HashMap::new(),
        false,
        HashSet::new(),
    );
    assert!(
        files.ready("/a.css").is_some(),
        "the file server answers /a.css at once"
    );
    let handled = TestServer::start(Arc::new(HandleOnly(files)), cfg);
    (serve(root), handled)
}

#[test]
fn spdy_answers_files_from_memory_exactly_as_its_handler_would() {
    // The ready path (GETs and HEADs the file server knows at once, answered where the
    // SYN_STREAM is read) against the same server with every request handled: the same
    // reply headers and body, on SPDY/3.1, 3 and 2 (whose header names differ).
    let root = site();
    let (ready, handled) = ready_and_handled(&root);
    for v in [spdy::Version::V3_1, spdy::Version::V3, spdy::Version::V2] {
        for (method, path) in [
            ("GET", "/a.css"),
            ("HEAD", "/a.css"),
            ("GET", "/index.html"),
            ("GET", "/sub/b.js?x=1"),
            ("GET", "/missing.png"),
            ("POST", "/a.css"),
        ] {
            let a = spdy_exchange(ready.addr(), v, method, path);
            let b = spdy_exchange(handled.addr(), v, method, path);
            assert_eq!(a, b, "{method} {path} over {v:?}");
            if (method, path) == ("GET", "/a.css") {
                assert_eq!(a.1, b"body{}", "{v:?}");
                assert!(
                    a.0.iter().any(|h| h.ends_with("content-length: 6")),
                    "{v:?}: {:?}",
                    a.0
                );
            }
            if method == "HEAD" {
                assert!(a.1.is_empty(), "{v:?}: a HEAD has no body");
            }
        }
    }
}

/// One request over h2 (prior knowledge) with speedy-net's client: status, headers
/// (sorted, without `date`) and body.
async fn h2_exchange(addr: &str, method: &str, path: &str) -> (u16, Vec<String>, Vec<u8>) {
    let sa: std::net::SocketAddr = addr.parse().unwrap();
    let cfg = ClientConfig {
        protocol: Some(Protocol::H2),
        ..Default::default()
    };
    let c = Client::connect("http", "127.0.0.1", sa.port(), &cfg)
        .await
        .unwrap();
    let mut req = ClientRequest::get(path);
    req.method = method.to_string();
    let mut resp = c.request(req).await.unwrap();
    let mut head: Vec<String> = resp
        .headers
        .iter()
        .map(|(n, v)| {
            format!(
                "{}: {}",
                String::from_utf8_lossy(n),
                String::from_utf8_lossy(v)
            )
        })
        .filter(|h| !h.starts_with("date:"))
        .collect();
    head.sort();
    let mut body = Vec::new();
    while let Some(c) = resp.body.chunk().await {
        body.extend_from_slice(&c.unwrap());
    }
    (resp.status, head, body)
}

#[test]
fn h2_answers_files_from_memory_exactly_as_its_handler_would() {
    // As over SPDY: GETs and HEADs the file server knows at once (bodies of one frame)
    // are answered without the handler, with the same head and body as through it; a
    // body over one frame (300 KB) goes through the handler and its scheduler.
    let root = site();
    let (ready, handled) = ready_and_handled(&root);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        for (method, path) in [
            ("GET", "/a.css"),
            ("HEAD", "/a.css"),
            ("GET", "/index.html"),
            ("GET", "/sub/b.js?x=1"),
            ("GET", "/big.bin"),
            ("GET", "/missing.png"),
            ("POST", "/a.css"),
        ] {
            let a = h2_exchange(ready.addr(), method, path).await;
            let b = h2_exchange(handled.addr(), method, path).await;
            assert_eq!(a, b, "{method} {path} over h2");
            if (method, path) == ("GET", "/a.css") {
                assert_eq!((a.0, a.2.as_slice()), (200, &b"body{}"[..]));
                assert!(a.1.contains(&"content-length: 6".to_string()), "{:?}", a.1);
            }
            if method == "HEAD" {
                assert!(a.2.is_empty(), "a HEAD has no body");
            }
        }
    });
}
