//! HTTP/1.1 through hyper, answering with the same [`Handler`] as SPDY. Bodies stream
//! both ways: hyper pulls the response body as the socket takes it.

use crate::body::Body;
use crate::handler::{Handler, Request};
use crate::io::BoxIo;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Arc;

/// Serves HTTP/1.1 (keep-alive) on one connection.
pub(crate) async fn serve(
    io: BoxIo,
    _peer: SocketAddr,
    scheme: &'static str,
    handler: Arc<dyn Handler>,
) -> std::io::Result<()> {
    let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        let handler = handler.clone();
        async move {
            let (parts, body) = req.into_parts();
            let host = parts
                .headers
                .get(hyper::header::HOST)
                .and_then(|h| h.to_str().ok())
                .or_else(|| parts.uri.authority().map(|a| a.as_str()))
                .unwrap_or("")
                .to_string();
            let r = Request::from_parts(&parts, host, scheme, "http/1.1", |len| {
                Body::http1(body, len)
            });
            let resp = handler.handle(r).await;
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
            Ok::<_, hyper::Error>(b.body(resp.body).unwrap_or_else(|_| {
                let mut r = hyper::Response::new(Body::from("bad response headers\n"));
                *r.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
                r
            }))
        }
    });
    hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(io), svc)
        .await
        .map_err(std::io::Error::other)
}
