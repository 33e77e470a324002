//! HTTP/1.1 `Upgrade: SPDY/3.1`, both ends: how Kubernetes reaches SPDY (kubectl exec,
//! port-forward; `k8s.io/apimachinery/pkg/util/httpstream`).
//!
//! The client sends an HTTP/1.1 request with `Connection: Upgrade`, `Upgrade: SPDY/3.1`
//! and zero or more `X-Stream-Protocol-Version` headers (the sub-protocols it speaks,
//! most preferred first). The server answers `101 Switching Protocols` with the same
//! `Connection` and `Upgrade` and the first offered sub-protocol it accepts in
//! `X-Stream-Protocol-Version`; when it accepts none of the offered ones it answers 403
//! with `X-Accepted-Stream-Protocol-Versions` listing its own. A request that offers none
//! is upgraded without the header (apimachinery's `Handshake` does the same). After the
//! 101 the connection carries SPDY/3.1 frames, the client's SYN_STREAMs first.

use crate::body::Body;
use crate::handler::{Handler, ServerConfig};
use crate::reply::ClientError;
use crate::transport::io::{BoxIo, Prefixed};
use bytes::Bytes;
use hyper_util::rt::TokioIo;
use spdy::Version;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The `Upgrade` token for SPDY/3.1.
pub const SPDY31: &str = "SPDY/3.1";
/// The request header offering sub-protocols (repeatable, or comma-separated).
pub const STREAM_PROTOCOL: &str = "x-stream-protocol-version";
/// The 403 answer's header listing the sub-protocols the server accepts.
pub const ACCEPTED_STREAM_PROTOCOLS: &str = "x-accepted-stream-protocol-versions";
/// The largest response head the client reads before giving up.
const MAX_HEAD: usize = 16 * 1024;

/// Whether a header value (a comma-separated token list) contains `token`, ignoring case.
fn has_token(value: &str, token: &str) -> bool {
    value
        .split(',')
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// Whether an HTTP/1.1 request asks to switch to SPDY/3.1.
pub(crate) fn requested(h: &hyper::HeaderMap) -> bool {
    let any = |name: hyper::header::HeaderName, token: &str| {
        h.get_all(name)
            .iter()
            .any(|v| v.to_str().is_ok_and(|v| has_token(v, token)))
    };
    any(hyper::header::UPGRADE, SPDY31) && any(hyper::header::CONNECTION, "upgrade")
}

/// The sub-protocols a request offers, in its order.
fn offered(h: &hyper::HeaderMap) -> Vec<String> {
    h.get_all(STREAM_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

/// The offer and the server's list share no sub-protocol (answered with 403).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoCommonProtocol;

/// The sub-protocol to answer with: `Ok(None)` when none was offered, the first offered
/// one that `accepted` lists, or [`NoCommonProtocol`].
pub fn negotiate(
    offered: &[String],
    accepted: &[String],
) -> Result<Option<String>, NoCommonProtocol> {
    if offered.is_empty() {
        return Ok(None);
    }
    offered
        .iter()
        .find(|o| accepted.iter().any(|a| a == *o))
        .map(|o| Some(o.clone()))
        .ok_or(NoCommonProtocol)
}

/// Server: answers an upgrade request (see [`requested`]). On success the answer is the
/// 101, and a task waits for hyper to hand over the connection and runs a SPDY/3.1
/// server session on it with `handler`.
pub(crate) fn accept(
    mut req: hyper::Request<hyper::body::Incoming>,
    scheme: &'static str,
    cfg: ServerConfig,
    handler: Arc<dyn Handler>,
) -> hyper::Response<Body> {
    let chosen = match negotiate(&offered(req.headers()), &cfg.stream_protocols) {
        Ok(c) => c,
        Err(NoCommonProtocol) => {
            let list = cfg.stream_protocols.join(", ");
            let mut r = hyper::Response::new(Body::from(format!(
                "none of the offered stream protocols is accepted; accepted: {list}\n"
            )));
            *r.status_mut() = hyper::StatusCode::FORBIDDEN;
            if let Ok(v) = hyper::header::HeaderValue::from_str(&list) {
                r.headers_mut().insert(ACCEPTED_STREAM_PROTOCOLS, v);
            }
            return r;
        }
    };
    let on = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        match on.await {
            Ok(up) => {
                let io: BoxIo = Box::new(TokioIo::new(up));
                let r = crate::spdy::server::run(io, Version::V3_1, false, scheme, &cfg, handler);
                if let Err(e) = r.await {
                    tracing::debug!("upgraded SPDY/3.1 session: {e}");
                }
            }
            Err(e) => tracing::debug!("upgrade to SPDY/3.1 failed: {e}"),
        }
    });
    let mut r = hyper::Response::new(Body::empty());
    *r.status_mut() = hyper::StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("Upgrade"),
    );
    h.insert(
        hyper::header::UPGRADE,
        hyper::header::HeaderValue::from_static(SPDY31),
    );
    if let Some(v) = chosen.and_then(|c| hyper::header::HeaderValue::from_str(&c).ok()) {
        h.insert(STREAM_PROTOCOL, v);
    }
    r
}

/// Client side of the handshake: what to ask for.
#[derive(Clone, Debug, Default)]
pub struct UpgradeRequest {
    /// Method of the HTTP/1.1 request (Kubernetes uses POST for exec, GET otherwise).
    pub method: String,
    /// Path and query of the HTTP/1.1 request.
    pub path: String,
    /// Sub-protocols to offer, most preferred first (`X-Stream-Protocol-Version`).
    pub stream_protocols: Vec<String>,
}

/// Client: sends the upgrade request on `io` and reads the answer. Returns the
/// connection, ready for SPDY/3.1 (bytes that followed the 101 are replayed first), and
/// the sub-protocol the server chose.
pub async fn client_handshake(
    mut io: BoxIo,
    authority: &str,
    up: &UpgradeRequest,
) -> Result<(BoxIo, Option<String>), ClientError> {
    let method = if up.method.is_empty() {
        "GET"
    } else {
        &up.method
    };
    let mut head = format!(
        "{method} {} HTTP/1.1\r\nHost: {authority}\r\nConnection: Upgrade\r\nUpgrade: {SPDY31}\r\n",
        if up.path.is_empty() { "/" } else { &up.path }
    );
    for p in &up.stream_protocols {
        head.push_str(&format!("X-Stream-Protocol-Version: {p}\r\n"));
    }
    if method == "POST" || method == "PUT" {
        head.push_str("Content-Length: 0\r\n");
    }
    head.push_str("\r\n");
    let fail = |what: String| ClientError::Connect(format!("Upgrade: {SPDY31}: {what}"));
    io.write_all(head.as_bytes())
        .await
        .map_err(|e| fail(e.to_string()))?;
    io.flush().await.map_err(|e| fail(e.to_string()))?;
    let (text, rest) = read_head(&mut io).await.map_err(fail)?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| fail(format!("bad status line {status_line:?}")))?;
    let header = |name: &str| {
        text.split("\r\n").skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    if status != 101 {
        let accepted = header(ACCEPTED_STREAM_PROTOCOLS)
            .map(|a| format!(" (the server accepts: {a})"))
            .unwrap_or_default();
        return Err(fail(format!(
            "the server answered {status_line:?}{accepted}"
        )));
    }
    if !header("upgrade").is_some_and(|u| has_token(&u, SPDY31)) {
        return Err(fail("101 without Upgrade: SPDY/3.1".into()));
    }
    let chosen = header(STREAM_PROTOCOL);
    Ok((Box::new(Prefixed::new(rest, io)), chosen))
}

/// What [`server_handshake`] read: the request and the chosen sub-protocol.
#[derive(Clone, Debug)]
pub struct Upgraded {
    /// Request method.
    pub method: String,
    /// Request path and query.
    pub path: String,
    /// The sub-protocol answered in `X-Stream-Protocol-Version`, if any.
    pub stream_protocol: Option<String>,
}

/// Server side of the handshake on a raw connection (for a server that is not
/// `speedy serve`, e.g. one running [`crate::spdy::mux::Mux`]): reads one HTTP/1.1
/// request head, answers 101 and returns the connection ready for SPDY/3.1; answers 400
/// (not an upgrade to SPDY/3.1) or 403 (no accepted sub-protocol) and fails otherwise.
pub async fn server_handshake(
    mut io: BoxIo,
    accepted: &[String],
) -> std::io::Result<(BoxIo, Upgraded)> {
    let (head, rest) = read_head(&mut io)
        .await
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split_whitespace();
    let (method, path) = (
        first.next().unwrap_or("").to_string(),
        first.next().unwrap_or("/").to_string(),
    );
    let mut h = hyper::HeaderMap::new();
    for l in lines {
        if let Some((n, v)) = l.split_once(':') {
            if let (Ok(n), Ok(v)) = (
                hyper::header::HeaderName::from_bytes(n.trim().as_bytes()),
                hyper::header::HeaderValue::from_str(v.trim()),
            ) {
                h.append(n, v);
            }
        }
    }
    let refuse = |status: &str, extra: String, why: String| {
        format!(
            "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{why}",
            why.len()
        )
    };
    if !requested(&h) {
        let why = format!("expected Connection: Upgrade and Upgrade: {SPDY31}\n");
        io.write_all(refuse("400 Bad Request", String::new(), why.clone()).as_bytes())
            .await?;
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, why));
    }
    let chosen = match negotiate(&offered(&h), accepted) {
        Ok(c) => c,
        Err(NoCommonProtocol) => {
            let list = accepted.join(", ");
            let why = format!("no accepted stream protocol; accepted: {list}\n");
            let extra = format!("X-Accepted-Stream-Protocol-Versions: {list}\r\n");
            io.write_all(refuse("403 Forbidden", extra, why.clone()).as_bytes())
                .await?;
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                why,
            ));
        }
    };
    let mut answer =
        format!("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: {SPDY31}\r\n");
    if let Some(c) = &chosen {
        answer.push_str(&format!("X-Stream-Protocol-Version: {c}\r\n"));
    }
    answer.push_str("\r\n");
    io.write_all(answer.as_bytes()).await?;
    io.flush().await?;
    let up = Upgraded {
        method,
        path,
        stream_protocol: chosen,
    };
    Ok((Box::new(Prefixed::new(rest, io)), up))
}

/// Reads an HTTP/1.1 head (up to the blank line, at most [`MAX_HEAD`] bytes): the head
/// as text and the bytes that followed it.
async fn read_head(io: &mut BoxIo) -> Result<(String, Bytes), String> {
    let mut buf = Vec::with_capacity(1024);
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > MAX_HEAD {
            return Err(format!("HTTP head over {MAX_HEAD} bytes"));
        }
        let mut chunk = [0u8; 2048];
        let n = io.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the peer closed the connection".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end - 4]).into_owned();
    Ok((head, Bytes::copy_from_slice(&buf[end..])))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn picks_the_first_offered_protocol_the_server_accepts() {
        let accepted = v(&["v4.channel.k8s.io", "channel.k8s.io"]);
        let offer = v(&["v5.channel.k8s.io", "channel.k8s.io", "v4.channel.k8s.io"]);
        assert_eq!(
            negotiate(&offer, &accepted),
            Ok(Some("channel.k8s.io".into()))
        );
        assert_eq!(negotiate(&[], &accepted), Ok(None));
        assert_eq!(negotiate(&v(&["v9"]), &accepted), Err(NoCommonProtocol));
        assert_eq!(negotiate(&v(&["v9"]), &[]), Err(NoCommonProtocol));
    }

    #[test]
    fn reads_upgrade_and_stream_protocol_headers() {
        let mut h = hyper::HeaderMap::new();
        h.insert("connection", "keep-alive, Upgrade".parse().unwrap());
        h.insert("upgrade", "spdy/3.1".parse().unwrap());
        h.append(
            STREAM_PROTOCOL,
            "v4.channel.k8s.io, v3.channel.k8s.io".parse().unwrap(),
        );
        h.append(STREAM_PROTOCOL, "channel.k8s.io".parse().unwrap());
        assert!(requested(&h));
        assert_eq!(
            offered(&h),
            v(&["v4.channel.k8s.io", "v3.channel.k8s.io", "channel.k8s.io"])
        );
        h.insert("upgrade", "websocket".parse().unwrap());
        assert!(!requested(&h));
    }
}
