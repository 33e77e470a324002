//! The recording proxy in-process (`speedy proxy --record`): the handler built from a
//! [`ProxySpec`] as `speedy proxy` builds it, behind `speedy_net::server::serve` on
//! loopback, in front of an origin over plain HTTP and TLS. A plain absolute-form
//! request and a request inside a CONNECT that the proxy terminates (the client checks
//! the proxy's leaf against the recording CA) each become one exchange line, the body
//! stored as the origin sent it (gzip kept). End to end with Chromium:
//! `crates/speedy/tests/corpus_record.rs`.

use speedy_archive::record::{read_body, read_log, Exchange};
use speedy_net::server::{Handler, Request, Response, ResponseFuture, ServerConfig};
use speedy_server::proxy::Proxy;
use speedy_server::recorder::Recorder;
use speedy_server::run::proxy_options;
use speedy_server::spec::ProxySpec;
use speedy_test_support::{with_self_signed_tls, TempDir, TestServer};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The gzip-encoded body the origin sends (its bytes as they are: not decoded here).
const GZ: &[u8] = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03not really gzip, but sent as such";

/// An origin answering `/z` with [`GZ`] (content-encoding gzip) and anything else with
/// its host and path.
struct Origin;

impl Handler for Origin {
    fn handle(&self, req: Request) -> ResponseFuture {
        let resp = if req.path.starts_with("/z") {
            let mut r = Response::new(200, "application/json", GZ.to_vec());
            r.headers.push(("content-encoding".into(), "gzip".into()));
            r.headers.push(("x-order".into(), "last".into()));
            r
        } else {
            Response::new(200, "text/plain", format!("{} {}", req.host, req.path))
        };
        Box::pin(async move { resp })
    }
}

/// Reads `sock` until it ends (or 10 s).
fn read_all(sock: &mut impl Read) -> Vec<u8> {
    let mut out = Vec::new();
    let end = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 16384];
    while Instant::now() < end {
        match sock.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break,
        }
    }
    out
}

/// The exchanges in `log` once `n` are written (or 10 s).
fn exchanges(log: &std::path::Path, n: usize) -> Vec<Exchange> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let got = read_log(log).unwrap().exchanges;
        if got.len() >= n || Instant::now() > end {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn records_plain_and_terminated_tls_exchanges_with_their_bodies() {
    let dir = TempDir::new("proxy-record");
    let plain = TestServer::start(Arc::new(Origin), ServerConfig::default());
    let tls = TestServer::start(
        Arc::new(Origin),
        with_self_signed_tls(ServerConfig::default()),
    );
    let log = dir.join("rec").join("exchanges.jsonl");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let spec = ProxySpec {
        resolve: vec![
            format!("www.plain.test={}", plain.socket_addr()),
            format!("www.tls.test={}", tls.socket_addr()),
        ],
        insecure: true,
        record: Some(log.clone()),
        ..ProxySpec::default()
    };
    assert_eq!(spec.check(), Ok(()));
    let ca = spec.record_ca_dir().unwrap();
    let recorder = Arc::new(Recorder::open(&log, &ca).unwrap());
    let handler = Proxy::recording(proxy_options(&spec).unwrap(), None, Some(recorder));
    let proxy = TestServer::start(Arc::new(handler), ServerConfig::default());

    // Plain: an absolute-form request.
    let mut s = TcpStream::connect(proxy.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    s.write_all(b"GET http://www.plain.test/z?q=1 HTTP/1.1\r\nhost: www.plain.test\r\nuser-agent: t\r\naccept: */*\r\nconnection: close\r\n\r\n")
        .unwrap();
    let got = read_all(&mut s);
    assert!(got.ends_with(GZ), "{}", String::from_utf8_lossy(&got));

    // CONNECT, then TLS to the proxy itself (its leaf from the recording CA).
    let mut s = TcpStream::connect(proxy.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"CONNECT www.tls.test:443 HTTP/1.1\r\nhost: www.tls.test:443\r\n\r\n")
        .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut b).unwrap(), 1, "the proxy closed after CONNECT");
        head.push(b[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    let verify = speedy_net::tls::Verify::CaFile(ca.join("ca.pem"));
    let cfg = speedy_net::tls::client_config(&verify, &["http/1.1"]).unwrap();
    let name = rustls::pki_types::ServerName::try_from("www.tls.test").unwrap();
    let conn = rustls::ClientConnection::new(cfg, name).unwrap();
    let mut tls_sock = rustls::StreamOwned::new(conn, s);
    tls_sock
        .write_all(b"GET /z HTTP/1.1\r\nhost: www.tls.test\r\nconnection: close\r\n\r\n")
        .unwrap();
    let got = read_all(&mut tls_sock);
    // Chunked (the origin's protocol gave no length): the bytes are there whole.
    assert!(got.windows(GZ.len()).any(|w| w == GZ), "{got:?}");

    let ex = exchanges(&log, 2);
    assert_eq!(ex.len(), 2, "{ex:?}");
    let plain_ex = ex
        .iter()
        .find(|e| e.url == "http://www.plain.test/z?q=1")
        .unwrap();
    let tls_ex = ex
        .iter()
        .find(|e| e.url == "https://www.tls.test/z")
        .unwrap();
    for (e, origin) in [(plain_ex, &plain), (tls_ex, &tls)] {
        assert_eq!((e.method.as_str(), e.status), ("GET", 200));
        assert_eq!(e.addr, Some(origin.socket_addr()));
        assert!(e.protocol.is_some() && e.first_byte_ms.is_some() && e.transfer_ms.is_some());
        let body = e.body.as_ref().unwrap();
        assert!(body.complete);
        assert_eq!(&read_body(log.parent().unwrap(), body).unwrap()[..], GZ);
        let names: Vec<&str> = e.response_headers.iter().map(|(n, _)| n.as_str()).collect();
        let at = |n: &str| names.iter().position(|x| *x == n).unwrap();
        assert!(at("content-encoding") < at("x-order"), "{names:?}");
        assert_eq!(e.error, None);
    }
    assert_eq!(plain_ex.protocol.as_deref(), Some("http/1.1"));
    assert_eq!(tls_ex.client_protocol, "http/1.1");
    let names: Vec<&str> = plain_ex
        .request_headers
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(names[..3], ["host", "user-agent", "accept"], "{names:?}");
}

#[test]
fn a_request_the_proxy_answers_itself_is_recorded_with_its_reason() {
    let dir = TempDir::new("proxy-record-fail");
    let log = dir.join("exchanges.jsonl");
    let spec = ProxySpec {
        resolve: vec!["gone.test=127.0.0.1:1".into()],
        record: Some(log.clone()),
        ..ProxySpec::default()
    };
    let recorder = Arc::new(Recorder::open(&log, &spec.record_ca_dir().unwrap()).unwrap());
    let handler = Proxy::recording(proxy_options(&spec).unwrap(), None, Some(recorder));
    let proxy = TestServer::start(Arc::new(handler), ServerConfig::default());
    let mut s = TcpStream::connect(proxy.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    s.write_all(b"GET http://gone.test/ HTTP/1.1\r\nhost: gone.test\r\nconnection: close\r\n\r\n")
        .unwrap();
    let got = read_all(&mut s);
    assert!(
        got.starts_with(b"HTTP/1.1 502"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    let ex = exchanges(&log, 1);
    assert_eq!(ex.len(), 1);
    assert_eq!((ex[0].status, ex[0].body.as_ref()), (502, None));
    assert!(
        ex[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("gone.test")),
        "{:?}",
        ex[0]
    );
}
