//! One datagram each way: the UDP request/response that SST's Fig 7 measures beside
//! TCP and structured streams (`speedy serve --udp-get`, `speedy fetch --protocol
//! udp`). No handshake, no retransmission, no congestion control: a lost datagram is a
//! failed request, and a response must fit in one UDP datagram (IP fragments it past
//! the path's MTU).
//!
//! The request is a datagram holding the path (`/a.bin`, UTF-8). The response is one
//! datagram: a status byte, 0 and then the body ([`MAX_BODY`] bytes at most), or 1 and
//! then a message saying why not (not found, too large, a bad request).
//!
//! A server of this answers a small datagram with up to 64 KiB to whatever source
//! address the datagram claims: an amplifier. It is for labs and loopback, not for a
//! public address.

use crate::body::Body;
use crate::handler::{Handler, Request, ServerConfig};
use crate::reply::ClientError;
use crate::transport::dial::unspecified_for;
use bytes::{BufMut, Bytes, BytesMut};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::UdpSocket;

/// The largest body a response carries: a UDP datagram's 65,507 bytes over IPv4, less
/// the status byte.
pub const MAX_BODY: usize = 65_507 - 1;
/// Requests answered at once; more wait (the socket's buffer holds them).
const IN_FLIGHT: usize = 64;

/// Answers path datagrams on `sock` from `handler` until `cfg.shutdown` fires.
pub async fn serve_udp_get(
    sock: UdpSocket,
    cfg: ServerConfig,
    handler: Arc<dyn Handler>,
) -> io::Result<()> {
    let sock = Arc::new(sock);
    let host = sock.local_addr()?.to_string();
    let slots = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
    let mut buf = vec![0u8; 2048];
    loop {
        let (n, peer) = tokio::select! {
            r = sock.recv_from(&mut buf) => r?,
            _ = cfg.shutdown.wait() => return Ok(()),
        };
        let path = std::str::from_utf8(&buf[..n]).ok().map(str::to_string);
        let permit = slots.clone().acquire_owned().await.expect("never closed");
        let (sock, handler, host) = (sock.clone(), handler.clone(), host.clone());
        tokio::spawn(async move {
            let reply = answer(path, host, handler).await;
            if let Err(e) = sock.send_to(&reply, peer).await {
                tracing::debug!("udp-get reply to {peer}: {e}");
            }
            drop(permit);
        });
    }
}

async fn answer(path: Option<String>, host: String, handler: Arc<dyn Handler>) -> Bytes {
    let fail = |why: String| {
        let mut b = BytesMut::with_capacity(1 + why.len());
        b.put_u8(1);
        b.extend_from_slice(why.as_bytes());
        b.freeze()
    };
    let Some(path) = path.filter(|p| p.starts_with('/') && !p.contains(['\r', '\n', '\0'])) else {
        return fail("bad request: a datagram holding a path, such as /a.bin".into());
    };
    let req = Request {
        method: "GET".into(),
        path,
        host,
        scheme: "http".into(),
        headers: spdy::Headers::new(),
        body: Body::empty(),
        protocol: "udp",
        priority: None,
    };
    let resp = handler.handle(req).await;
    if resp.status != 200 {
        return fail(format!("status {}", resp.status));
    }
    match resp.body.collect(MAX_BODY).await {
        Ok(body) => {
            let mut b = BytesMut::with_capacity(1 + body.len());
            b.put_u8(0);
            b.extend_from_slice(&body);
            b.freeze()
        }
        Err(e) if e.kind() == io::ErrorKind::InvalidData => fail(format!(
            "the body is over {MAX_BODY} bytes, more than one UDP datagram holds"
        )),
        Err(e) => fail(format!("reading the body: {e}")),
    }
}

/// Asks `addr` for `path` and waits at most `timeout` for the one datagram of its
/// answer; returns the body.
pub async fn get(addr: SocketAddr, path: &str, timeout: Duration) -> Result<Bytes, ClientError> {
    let sock = UdpSocket::bind(unspecified_for(addr))
        .await
        .map_err(|e| ClientError::Connect(format!("UDP socket: {e}")))?;
    sock.connect(addr)
        .await
        .map_err(|e| ClientError::Connect(format!("{addr} over UDP: {e}")))?;
    sock.send(path.as_bytes())
        .await
        .map_err(|e| ClientError::Connect(format!("{addr} over UDP: {e}")))?;
    let mut buf = vec![0u8; MAX_BODY + 2];
    let n = match tokio::time::timeout(timeout, sock.recv(&mut buf)).await {
        Ok(r) => r.map_err(|e| ClientError::Http(format!("{addr} over UDP: {e}")))?,
        Err(_) => {
            return Err(ClientError::Http(format!(
            "no answer from {addr} over UDP within {timeout:?} (a lost datagram is not sent again)"
        )))
        }
    };
    match buf[..n].split_first() {
        Some((0, body)) => Ok(Bytes::copy_from_slice(body)),
        Some((1, why)) => Err(ClientError::Http(format!(
            "{addr} over UDP: {}",
            String::from_utf8_lossy(why)
        ))),
        _ => Err(ClientError::Http(format!(
            "{addr} over UDP: not a udp-get answer"
        ))),
    }
}
