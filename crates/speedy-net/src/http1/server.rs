//! HTTP/1.1 through hyper, answering with the same [`Handler`] as SPDY (requests the
//! handler answers at once, from memory, are answered before hyper sees the connection:
//! [`crate::http1::ready`]). Bodies stream
//! both ways: hyper pulls the response body as the socket takes it, and reads the
//! request body only as the handler does (a handler that does not read it makes the
//! client wait). A declared body over `max_body` is answered 413 with
//! `Connection: close` before the handler sees it, without reading the body; a request
//! head must arrive within `header_read_timeout`. On shutdown the response in flight is
//! finished and the connection closed (`Connection: close` on responses not yet begun).
//! A request with `Upgrade: SPDY/3.1` switches the connection to SPDY
//! ([`crate::spdy::upgrade`]).
//! A CONNECT request becomes a tunnel when the handler answers 2xx ([`tunnel`]).

use crate::body::Body;
use crate::handler::{Handler, Request, ServerConfig};
use crate::transport::io::BoxIo;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::sync::Arc;

/// Serves HTTP/1.1 (keep-alive) on one connection: requests the handler answers at once
/// in [`crate::http1::ready`], from the first one that is not, through hyper.
pub(crate) async fn serve(
    io: BoxIo,
    _peer: SocketAddr,
    scheme: &'static str,
    cfg: &ServerConfig,
    handler: Arc<dyn Handler>,
) -> std::io::Result<()> {
    let io = match crate::http1::ready::serve(io, cfg, &handler).await? {
        crate::http1::ready::Outcome::Done => return Ok(()),
        crate::http1::ready::Outcome::Hyper(io) => io,
    };
    let max_body = cfg.max_body;
    let body_read_timeout = cfg.limits.body_read_timeout;
    let upgrade_cfg = cfg.clone();
    let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        let handler = handler.clone();
        let upgrade_cfg =
            crate::spdy::upgrade::requested(req.headers()).then(|| upgrade_cfg.clone());
        async move {
            if req.method() == hyper::Method::CONNECT {
                return Ok(tunnel(req, scheme, handler).await);
            }
            if let Some(cfg) = upgrade_cfg {
                return Ok(crate::spdy::upgrade::accept(req, scheme, cfg, handler));
            }
            let (parts, body) = req.into_parts();
            // An absolute-form target's authority wins over Host (RFC 9112 §3.2.2):
            // that is how a proxy is asked for another origin.
            let host = parts
                .uri
                .authority()
                .map(|a| a.as_str())
                .or_else(|| {
                    parts
                        .headers
                        .get(hyper::header::HOST)
                        .and_then(|h| h.to_str().ok())
                })
                .unwrap_or("")
                .to_string();
            let r = Request::from_parts(&parts, host, scheme, "http/1.1", |len| {
                Body::http1(body, len, max_body).with_read_timeout(body_read_timeout)
            });
            if r.body.len().is_some_and(|n| n > max_body as u64) {
                // Refused unread: the connection closes after the 413.
                let mut resp = hyper::Response::new(Body::from(format!(
                    "request body over {max_body} bytes\n"
                )));
                *resp.status_mut() = hyper::StatusCode::PAYLOAD_TOO_LARGE;
                resp.headers_mut().insert(
                    hyper::header::CONNECTION,
                    hyper::header::HeaderValue::from_static("close"),
                );
                return Ok(resp);
            }
            let resp = handler.handle(r).await;
            Ok::<_, hyper::Error>(to_hyper(resp))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(cfg.limits.header_read_timeout);
    let conn = builder
        .serve_connection(TokioIo::new(io), svc)
        .with_upgrades();
    tokio::pin!(conn);
    let shutdown = cfg.shutdown.clone();
    tokio::select! {
        r = conn.as_mut() => return r.map_err(std::io::Error::other),
        _ = shutdown.wait() => {}
    }
    // Finish the response in flight, then close (no further requests are read).
    conn.as_mut().graceful_shutdown();
    conn.await.map_err(std::io::Error::other)
}

/// A handler's response as hyper sends it (hop-by-hop headers and `content-length`
/// dropped: hyper frames the body; a reset closes the connection after it).
fn to_hyper(resp: crate::handler::Response) -> hyper::Response<Body> {
    let mut b = hyper::Response::builder().status(resp.status);
    for (n, v) in &resp.headers {
        if spdy::http::HOP_BY_HOP.contains(&n.as_str()) || n == "content-length" {
            continue;
        }
        b = b.header(n.as_str(), v.as_str());
    }
    if resp.reset.is_some() {
        b = b.header("connection", "close");
    }
    if let Some(n) = resp.head_len {
        b = b.header("content-length", n);
    }
    b.body(resp.body).unwrap_or_else(|_| {
        let mut r = hyper::Response::new(Body::from("bad response headers\n"));
        *r.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
        r
    })
}

/// A CONNECT request (RFC 9110 §9.3.6): the handler gets a request for the target
/// `host:port` whose body is whatever the client sends once the tunnel is up, and answers
/// with the body to send back. A 2xx answer is sent as a head alone, after which hyper
/// hands the connection over and both directions are copied until each ends; any other
/// answer is an ordinary response. The copying is bounded: a few chunks each way, read
/// only as the other side takes them.
async fn tunnel(
    mut req: hyper::Request<hyper::body::Incoming>,
    scheme: &'static str,
    handler: Arc<dyn Handler>,
) -> hyper::Response<Body> {
    use tokio::io::AsyncReadExt;
    let on_upgrade = hyper::upgrade::on(&mut req);
    let (parts, _) = req.into_parts();
    let target = parts
        .uri
        .authority()
        .map(|a| a.as_str().to_string())
        .unwrap_or_default();
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<bytes::Bytes>>(4);
    let up =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    let r = Request::from_parts(&parts, target, scheme, "http/1.1", |_| {
        Body::stream(up, None)
    });
    let mut resp = handler.handle(r).await;
    if !(200..300).contains(&resp.status) {
        return to_hyper(resp);
    }
    let down = std::mem::take(&mut resp.body);
    tokio::spawn(async move {
        let Ok(io) = on_upgrade.await else { return };
        let (mut rd, mut wr) = tokio::io::split(TokioIo::new(io));
        let to_target = async move {
            let mut buf = vec![0u8; 16 * 1024];
            while let Ok(n @ 1..) = rd.read(&mut buf).await {
                let chunk = bytes::Bytes::copy_from_slice(&buf[..n]);
                if tx.send(Ok(chunk)).await.is_err() {
                    break;
                }
            }
        };
        let to_client = async move {
            let _ = down.copy_to(&mut wr).await;
        };
        tokio::join!(to_target, to_client);
    });
    to_hyper(resp)
}
