//! HTTP/2 through the `h2` crate (TLS with ALPN `h2`, or h2c with prior knowledge on the
//! plain port), answering with the same [`Handler`] as SPDY and HTTP/1.1. Pushes are
//! sent as PUSH_PROMISEs ahead of the response.

use crate::body::Body;
use crate::handler::{Handler, Request, Response};
use crate::io::BoxIo;
use bytes::Bytes;
use std::sync::Arc;

/// Serves one HTTP/2 connection.
pub(crate) async fn serve(
    io: BoxIo,
    scheme: &'static str,
    handler: Arc<dyn Handler>,
) -> std::io::Result<()> {
    let mut conn = h2::server::Builder::new()
        .max_concurrent_streams(100)
        .initial_window_size(1 << 20)
        .initial_connection_window_size(8 << 20)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(std::io::Error::other)?;
    while let Some(next) = conn.accept().await {
        let (req, respond) = match next {
            Ok(x) => x,
            Err(e) => {
                tracing::debug!("h2: {e}");
                break;
            }
        };
        let handler = handler.clone();
        tokio::spawn(async move {
            if let Err(e) = answer(req, respond, scheme, handler).await {
                tracing::debug!("h2 stream: {e}");
            }
        });
    }
    Ok(())
}

async fn answer(
    req: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    scheme: &'static str,
    handler: Arc<dyn Handler>,
) -> Result<(), h2::Error> {
    let (parts, body) = req.into_parts();
    let host = parts
        .uri
        .authority()
        .map(|a| a.as_str().to_string())
        .unwrap_or_default();
    let r = Request::from_parts(&parts, host.clone(), scheme, "h2", |len| {
        Body::h2(body, len)
    });
    let resp: Response = handler.handle(r).await;
    if resp.reset.is_some() {
        respond.send_reset(h2::Reason::CANCEL);
        return Ok(());
    }
    for p in &resp.pushes {
        let uri = format!(
            "{}://{}{}",
            parts.uri.scheme_str().unwrap_or(scheme),
            host,
            p.path
        );
        let Ok(preq) = http::Request::builder().method("GET").uri(uri).body(()) else {
            continue;
        };
        let Ok(mut pushed) = respond.push_request(preq) else {
            break;
        };
        let Ok(presp) = build(p.status, &p.headers, Some(p.body.len() as u64)) else {
            continue;
        };
        if let Ok(mut s) = pushed.send_response(presp, p.body.is_empty()) {
            if !p.body.is_empty() {
                let _ = s.send_data(p.body.clone(), true);
            }
        }
    }
    let mut body = resp.body;
    let head = match build(resp.status, &resp.headers, body.len()) {
        Ok(h) => h,
        Err(_) => {
            body = Body::empty();
            build(500, &[], Some(0)).expect("plain 500")
        }
    };
    let empty = body.is_empty();
    let mut send = respond.send_response(head, empty)?;
    if empty {
        return Ok(());
    }
    if let Some(b) = body.take_full() {
        return send.send_data(b, true);
    }
    // Pull the next chunk only once the peer's window took the previous one: h2 would
    // otherwise buffer whatever it is given.
    while let Some(c) = body.chunk().await {
        let mut c = match c {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!("h2 response body: {e}");
                send.send_reset(h2::Reason::INTERNAL_ERROR);
                return Ok(());
            }
        };
        while !c.is_empty() {
            send.reserve_capacity(c.len());
            let cap = match std::future::poll_fn(|cx| send.poll_capacity(cx)).await {
                Some(cap) => cap?,
                None => return Ok(()), // stream gone
            };
            let part = c.split_to(cap.min(c.len()));
            send.send_data(part, false)?;
        }
    }
    send.send_data(Bytes::new(), true)
}

fn build(
    status: u16,
    headers: &[(String, String)],
    len: Option<u64>,
) -> Result<http::Response<()>, http::Error> {
    let mut b = http::Response::builder().status(status);
    for (n, v) in headers {
        if spdy::http::HOP_BY_HOP.contains(&n.as_str()) || n == "content-length" || n == "host" {
            continue;
        }
        b = b.header(n.as_str(), v.as_str());
    }
    match len {
        Some(n) => b.header("content-length", n.to_string()).body(()),
        None => b.body(()),
    }
}
