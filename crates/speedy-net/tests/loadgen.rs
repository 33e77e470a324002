//! The load generator's connections against the crate's own server, over every protocol,
//! plain and TLS: bodies counted, several GETs at once, errors by kind.

use spdy::url::Url;
use speedy_net::loadgen::LoadConn;
use speedy_net::server::{serve, Handler, Request, Response, ResponseFuture, ServerConfig};
use speedy_net::tls::{self, Verify};
use speedy_net::Protocol;
use std::sync::Arc;

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

async fn exercise(scheme: &str, addr: std::net::SocketAddr) {
    for name in ["http/1.1", "h2", "spdy/3.1", "spdy/3", "spdy/2"] {
        let proto = Protocol::parse(name).unwrap();
        let url: Url = format!("{scheme}://{addr}/file?x=1").parse().unwrap();
        let conn = Arc::new(
            LoadConn::connect(&url, proto, &Verify::Insecure)
                .await
                .unwrap_or_else(|e| panic!("{scheme} {name}: {e}")),
        );
        let tasks: Vec<_> = (0..4)
            .map(|_| {
                let c = conn.clone();
                tokio::spawn(async move {
                    let mut got = vec![];
                    for _ in 0..3 {
                        got.push(c.get().await);
                    }
                    got
                })
            })
            .collect();
        for t in tasks {
            for r in t.await.unwrap() {
                assert_eq!(r, Ok((200, BODY as u64)), "{scheme} {name}");
            }
        }
        let missing: Url = format!("{scheme}://{addr}/nope").parse().unwrap();
        let conn = LoadConn::connect(&missing, proto, &Verify::Insecure)
            .await
            .unwrap();
        assert_eq!(conn.get().await, Err("http 404".into()), "{scheme} {name}");
        // The connection stays usable after an error status.
        assert_eq!(conn.get().await, Err("http 404".into()), "{scheme} {name}");
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
