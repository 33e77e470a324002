//! The stream multiplexer end to end over loopback TCP: many streams at once carrying
//! bodies both ways, a stream reset by the peer, and streams refused after close.

use bytes::Bytes;
use spdy::{Headers, Role, RstStatus, Version};
use speedy_net::spdy::mux::Mux;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

/// A deterministic body: reordering or loss changes it.
fn body(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

/// Server: echoes every stream, except those opened with `reset: yes`.
async fn echo_server(listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let (tcp, _) = listener.accept().await?;
    let mut mux = Mux::start(
        Box::new(tcp),
        spdy::Config::new(Role::Server, Version::V3_1),
    );
    while let Some(s) = mux.accept().await {
        if s.headers().get("reset").is_some() {
            s.reset(RstStatus::CANCEL);
            continue;
        }
        s.reply(Headers::new(), false)?;
        tokio::spawn(async move {
            let (send, mut recv) = s.split();
            while let Some(c) = recv.recv().await {
                send.send(c?).await?;
            }
            send.finish();
            Ok::<(), std::io::Error>(())
        });
    }
    Ok(())
}

async fn client() -> (Mux, tokio::task::JoinHandle<std::io::Result<()>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(echo_server(listener));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mux = Mux::start(
        Box::new(tcp),
        spdy::Config::new(Role::Client, Version::V3_1),
    );
    (mux, server)
}

#[tokio::test]
async fn carries_many_streams_both_ways_at_once() {
    let (mux, server) = client().await;
    let mut tasks = Vec::new();
    for i in 0..40u8 {
        let s = mux.open(Headers::new(), false).await.unwrap();
        tasks.push(tokio::spawn(async move {
            let data = body(512 * 1024 + i as usize, i);
            let (send, mut recv) = s.split();
            let expect = data.clone();
            let writer = tokio::spawn(async move {
                send.send(Bytes::from(data)).await.unwrap();
                send.finish();
            });
            let mut got = Vec::new();
            while let Some(c) = recv.recv().await {
                got.extend_from_slice(&c.unwrap());
            }
            writer.await.unwrap();
            assert_eq!(got.len(), expect.len(), "stream {i}");
            assert!(got == expect, "stream {i}: bytes differ");
        }));
    }
    tokio::time::timeout(LIMIT, async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await
    .expect("the streams finished");
    mux.close().await.unwrap();
    server.abort();
}

#[tokio::test]
async fn reports_a_stream_the_peer_reset() {
    let (mux, server) = client().await;
    let mut s = mux
        .open(Headers::from_pairs([("reset", "yes")]), false)
        .await
        .unwrap();
    let r = tokio::time::timeout(LIMIT, s.reply_headers())
        .await
        .unwrap();
    let e = r.expect_err("a reset stream has no reply");
    assert!(e.to_string().contains("CANCEL"), "{e}");
    // The session is still good for other streams.
    let mut ok = mux.open(Headers::new(), false).await.unwrap();
    ok.reply_headers().await.unwrap();
    ok.send(Bytes::from_static(b"ping")).await.unwrap();
    ok.finish();
    let c = ok.recv().await.unwrap().unwrap();
    assert_eq!(&c[..], b"ping");
    mux.close().await.unwrap();
    server.abort();
}
