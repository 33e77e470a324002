//! The load generator's connections against the crate's own server, over every protocol,
//! plain and TLS, paced by the caller: bodies counted, several GETs at once, errors by
//! kind, SPDY's header compression reported.

use spdy::url::Url;
use speedy_net::loadgen::{LoadConn, Pace};
use speedy_net::server::{serve, Handler, Request, Response, ResponseFuture, ServerConfig};
use speedy_net::tls::{self, Verify};
use speedy_net::Protocol;
use std::sync::Arc;
use std::time::Instant;

const BODY: usize = 70_000;

struct Files;

impl Handler for Files {
    fn handle(&self, req: Request) -> ResponseFuture {
        Box::pin(async move {
            match req.path.as_str() {
                "/file?x=1" => Response::new(200, "text/plain", vec![b'x'; BODY]),
                _ => Response::new(404, "text/plain", "not found"),
            }
        })
    }
}

async fn server(tls: bool) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut cfg = ServerConfig::default();
    if tls {
        let (certs, key) = tls::self_signed(&[]).unwrap();
        let alpn = ["h2", "spdy/3.1", "spdy/3", "spdy/2", "http/1.1"];
        cfg.tls = Some(tls::server_config(certs, key, &alpn).unwrap());
    }
    tokio::spawn(serve(listener, cfg, Arc::new(Files)));
    addr
}

/// Starts `n` requests and keeps what each one ended with.
struct Collect {
    left: usize,
    got: Vec<Result<(u16, u64), String>>,
}

impl Collect {
    fn new(n: usize) -> Collect {
        Collect {
            left: n,
            got: vec![],
        }
    }
}

impl Pace for Collect {
    fn start(&mut self) -> Option<Instant> {
        self.left = self.left.checked_sub(1)?;
        Some(Instant::now())
    }

    fn done(&mut self, _: Instant, result: Result<(u16, u64), String>) {
        self.got.push(result);
    }
}

async fn exercise(scheme: &str, addr: std::net::SocketAddr) {
    for name in ["http/1.1", "h2", "spdy/3.1", "spdy/3", "spdy/2"] {
        let proto = Protocol::parse(name).unwrap();
        let url: Url = format!("{scheme}://{addr}/file?x=1").parse().unwrap();
        let conn = LoadConn::connect(&url, proto, &Verify::Insecure)
            .await
            .unwrap_or_else(|e| panic!("{scheme} {name}: {e}"));
        // 12 requests, 4 at a time: each body whole.
        let mut pace = Collect::new(12);
        let stats = conn.drive(4, &mut pace).await;
        assert_eq!(
            pace.got,
            vec![Ok((200, BODY as u64)); 12],
            "{scheme} {name}"
        );
        // SPDY reports its header compression; the others have none to report.
        assert_eq!(stats.is_some(), name.starts_with("spdy"), "{scheme} {name}");
        if let Some(s) = stats {
            assert!(s.header_bytes_compressed_sent > 0, "{scheme} {name}");
            assert!(
                s.header_bytes_compressed_sent < s.header_bytes_raw_sent,
                "{scheme} {name}: {s:?}"
            );
        }
        let missing: Url = format!("{scheme}://{addr}/nope").parse().unwrap();
        let conn = LoadConn::connect(&missing, proto, &Verify::Insecure)
            .await
            .unwrap();
        // Two in turn: the connection stays usable after an error status.
        let mut pace = Collect::new(2);
        conn.drive(1, &mut pace).await;
        assert_eq!(
            pace.got,
            vec![Err("http 404".to_string()); 2],
            "{scheme} {name}"
        );
    }
}

#[tokio::test]
async fn gets_over_every_protocol_on_plain_tcp() {
    exercise("http", server(false).await).await;
}

#[tokio::test]
async fn gets_over_every_protocol_over_tls() {
    exercise("https", server(true).await).await;
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error_naming_the_address() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let url: Url = format!("http://{addr}/").parse().unwrap();
    for proto in [Protocol::Http1, Protocol::H2] {
        let e = match LoadConn::connect(&url, proto, &Verify::Insecure).await {
            Err(e) => e.to_string(),
            Ok(_) => panic!("connected to a closed port"),
        };
        assert!(e.contains(&addr.to_string()), "{e}");
    }
}
