//! HTTP/2 through the `h2` crate (TLS with ALPN `h2`, or h2c with prior knowledge on the
//! plain port), answering with the same [`Handler`] as SPDY and HTTP/1.1. Pushes are
//! sent as PUSH_PROMISEs ahead of the response.

use crate::io::BoxIo;
use crate::server::{Handler, Request, Response};
use bytes::{Bytes, BytesMut};
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
    let (parts, mut body) = req.into_parts();
    let mut data = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    let mut headers = spdy::Headers::new();
    for (n, v) in parts.headers.iter() {
        headers.add(n.as_str(), v.as_bytes());
    }
    let host = parts
        .uri
        .authority()
        .map(|a| a.as_str().to_string())
        .unwrap_or_default();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/".to_string(), |p| p.as_str().to_string());
    let r = Request {
        method: parts.method.as_str().to_string(),
        path,
        host: host.clone(),
        scheme: parts.uri.scheme_str().unwrap_or(scheme).to_string(),
        headers,
        body: data.freeze(),
        protocol: "h2",
    };
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
        let Ok(presp) = build(p.status, &p.headers, p.body.len()) else {
            continue;
        };
        if let Ok(mut s) = pushed.send_response(presp, p.body.is_empty()) {
            if !p.body.is_empty() {
                let _ = s.send_data(p.body.clone(), true);
            }
        }
    }
    let head = match build(resp.status, &resp.headers, resp.body.len()) {
        Ok(h) => h,
        Err(_) => build(500, &[], 0).expect("plain 500"),
    };
    let empty = resp.body.is_empty();
    let mut send = respond.send_response(head, empty)?;
    if !empty {
        send.send_data(resp.body, true)?;
    }
    Ok(())
}

fn build(
    status: u16,
    headers: &[(String, String)],
    len: usize,
) -> Result<http::Response<()>, http::Error> {
    let mut b = http::Response::builder().status(status);
    for (n, v) in headers {
        if spdy::http::HOP_BY_HOP.contains(&n.as_str()) || n == "content-length" || n == "host" {
            continue;
        }
        b = b.header(n.as_str(), v.as_str());
    }
    b.header("content-length", len.to_string()).body(())
}
