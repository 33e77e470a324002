//! SPDY over SCTP (over UDP on loopback) between the crate's own client and server:
//! bodies both ways byte for byte on every SPDY version, several streams at once, with
//! and without DATA bundled on the COOKIE ECHO, and a refused association's error.

use bytes::Bytes;
use spdy::Version;
use speedy_net::client::{Client, ClientConfig, ClientRequest};
use speedy_net::sctp::{SctpConfig, SctpListener};
use speedy_net::server::{serve_sctp, Handler, Request, Response, ResponseFuture, ServerConfig};
use speedy_net::Protocol;
use std::sync::Arc;
use std::time::Duration;

/// A body whose every byte depends on its offset and on `seed`.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0] ^ seed)
        .collect()
}

struct Echo;

impl Handler for Echo {
    fn handle(&self, req: Request) -> ResponseFuture {
        Box::pin(async move {
            if req.method == "POST" {
                let body = req.body.collect(16 << 20).await.expect("request body");
                return Response::new(200, "application/octet-stream", body);
            }
            let n: usize = req.path.trim_start_matches("/bytes/").parse().unwrap_or(0);
            Response::new(200, "application/octet-stream", pattern(n, n as u8))
        })
    }
}

async fn server(cfg: SctpConfig) -> std::net::SocketAddr {
    let l = SctpListener::bind("127.0.0.1:0".parse().unwrap(), &cfg)
        .await
        .unwrap();
    let addr = l.local_addr();
    tokio::spawn(serve_sctp(l, ServerConfig::default(), Arc::new(Echo)));
    addr
}

fn client_cfg(addr: std::net::SocketAddr, v: Version, bundle: bool) -> ClientConfig {
    ClientConfig {
        protocol: Some(Protocol::Spdy(v)),
        connect_to: Some(addr),
        sctp: Some(SctpConfig {
            bundle_cookie_echo: bundle,
            ..SctpConfig::default()
        }),
        read_timeout: Some(Duration::from_secs(20)),
        ..ClientConfig::default()
    }
}

async fn exchange(addr: std::net::SocketAddr, v: Version, bundle: bool) {
    let cfg = client_cfg(addr, v, bundle);
    let client = Arc::new(
        Client::connect("http", "localhost", addr.port(), &cfg)
            .await
            .unwrap(),
    );
    let sizes = [0usize, 1, 1_000, 70_000, 1_500_000];
    let mut tasks = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        let c = client.clone();
        tasks.push(tokio::spawn(async move {
            let r = c.request(ClientRequest::get(&format!("/bytes/{n}"))).await;
            let r = r.unwrap_or_else(|e| panic!("{v:?} GET {n}: {e}"));
            assert_eq!(r.status, 200);
            let body = r.body.collect(4 << 20).await.unwrap();
            assert!(
                body[..] == pattern(n, n as u8)[..],
                "{v:?} GET {n}: {} bytes differ",
                body.len()
            );
            i
        }));
    }
    let upload = pattern(300_000, 9);
    let mut post = ClientRequest::get("/echo");
    post.method = "POST".into();
    post.body = Bytes::from(upload.clone());
    let r = client.request(post).await.unwrap();
    let back = r.body.collect(1 << 20).await.unwrap();
    assert!(back[..] == upload[..], "{v:?} POST echo differs");
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test]
async fn every_spdy_version_carries_bodies_both_ways_over_sctp() {
    let addr = server(SctpConfig::default()).await;
    for v in [Version::V3_1, Version::V3, Version::V2] {
        tokio::time::timeout(Duration::from_secs(30), exchange(addr, v, true))
            .await
            .unwrap_or_else(|_| panic!("{v:?} over SCTP did not finish in 30 s"));
    }
}

#[tokio::test]
async fn data_waits_for_the_cookie_ack_when_bundling_is_off() {
    let addr = server(SctpConfig::default()).await;
    tokio::time::timeout(
        Duration::from_secs(30),
        exchange(addr, Version::V3_1, false),
    )
    .await
    .expect("finished");
}

#[tokio::test]
async fn an_association_nobody_answers_fails_with_the_reason() {
    // A UDP port with nobody on it: the kernel's ICMP port unreachable ends the dial.
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    drop(sock);
    let cfg = client_cfg(addr, Version::V3_1, true);
    let client = Client::connect("http", "localhost", addr.port(), &cfg)
        .await
        .unwrap();
    let r = tokio::time::timeout(
        Duration::from_secs(10),
        client.request(ClientRequest::get("/bytes/1")),
    )
    .await
    .expect("an answer within 10 s");
    let e = r.err().expect("no response from nobody").to_string();
    assert!(e.to_lowercase().contains("refused"), "{e}");
}

#[test]
fn a_client_that_goes_away_mid_association_aborts_it() {
    // The server side: a listener on its own runtime; the client on another runtime that
    // is then dropped, as when `speedy fetch` exits. The peer's ABORT ends the server's
    // byte stream at once (without it, the association would sit idle).
    let server_rt = tokio::runtime::Runtime::new().unwrap();
    let mut l = server_rt
        .block_on(SctpListener::bind(
            "127.0.0.1:0".parse().unwrap(),
            &SctpConfig::default(),
        ))
        .unwrap();
    let addr = l.local_addr();
    let client_rt = tokio::runtime::Runtime::new().unwrap();
    let mut io = client_rt
        .block_on(speedy_net::sctp::dial(addr, &SctpConfig::default()))
        .unwrap();
    let ping = [0x80u8, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1];
    client_rt.block_on(async {
        use tokio::io::AsyncWriteExt;
        io.write_all(&ping).await.unwrap();
    });
    use tokio::io::AsyncReadExt;
    let mut s = server_rt.block_on(async {
        let (mut s, _) = l.accept().await.unwrap();
        let mut got = [0u8; 12];
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(got, ping);
        s
    });
    drop(client_rt);
    server_rt.block_on(async {
        let mut rest = Vec::new();
        let r = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await;
        let e = r
            .expect("the server's stream ended within 5 s")
            .expect_err("an error");
        assert!(e.to_string().contains("lost"), "{e}");
    });
}
