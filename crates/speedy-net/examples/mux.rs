//! A client and a server SPDY/3.1 multiplexer (`speedy_net::spdy::mux`) over loopback
//! TCP: the client opens three streams at once, sends each a message and half-closes; the
//! server answers each stream with its bytes reversed.
//!
//!     cargo run -p speedy-net --example mux

use bytes::Bytes;
use spdy::{Headers, Role, Version};
use speedy_net::spdy::mux::Mux;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await?;
        let mut mux = Mux::start(
            Box::new(tcp),
            spdy::Config::new(Role::Server, Version::V3_1),
        );
        while let Some(mut s) = mux.accept().await {
            s.reply(Headers::from_pairs([("status", "ok")]), false)?;
            tokio::spawn(async move {
                let mut got = Vec::new();
                while let Some(c) = s.recv().await {
                    got.extend_from_slice(&c?);
                }
                got.reverse();
                s.send(Bytes::from(got)).await?;
                s.finish();
                Ok::<(), std::io::Error>(())
            });
        }
        Ok::<(), std::io::Error>(())
    });

    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let mux = Mux::start(
        Box::new(tcp),
        spdy::Config::new(Role::Client, Version::V3_1),
    );
    let mut tasks = Vec::new();
    for name in ["alpha", "beta", "gamma"] {
        let mut s = mux
            .open(Headers::from_pairs([("name", name)]), false)
            .await?;
        tasks.push(tokio::spawn(async move {
            let reply = s.reply_headers().await?;
            s.send(Bytes::from(format!("hello from {name}"))).await?;
            s.finish();
            let mut answer = Vec::new();
            while let Some(c) = s.recv().await {
                answer.extend_from_slice(&c?);
            }
            println!(
                "stream {} ({name}): reply {:?}, answer {:?}",
                s.id().0,
                reply.get("status").map(String::from_utf8_lossy),
                String::from_utf8_lossy(&answer)
            );
            Ok::<(), std::io::Error>(())
        }));
    }
    for t in tasks {
        t.await.map_err(std::io::Error::other)??;
    }
    mux.close().await?;
    server.abort();
    Ok(())
}
