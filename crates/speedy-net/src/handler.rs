//! The contract between the protocol servers and what answers requests: [`Handler`]
//! gets a [`Request`] (headers complete, body streaming in) and answers with a
//! [`Response`] (headers, then a body pulled as the peer takes it). HTTP/1.1, h2 and
//! SPDY servers all speak it; the listener's settings are a [`ServerConfig`].

use crate::body::Body;
use crate::limits::{Limits, Shutdown};
use bytes::Bytes;
use spdy::{Headers, RstStatus, Version};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A request, as a handler sees it (SPDY, h2 or HTTP/1.1 alike): complete headers and a
/// body that streams in as the handler reads it.
#[derive(Debug)]
pub struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// Path and query.
    pub path: String,
    /// `host[:port]`.
    pub host: String,
    /// `http` or `https`.
    pub scheme: String,
    /// All headers, lower-case names (SPDY pseudo-headers included for SPDY requests).
    pub headers: Headers,
    /// The request body, streaming: read it with [`Body::chunk`] or [`Body::collect`]
    /// (the peer gets flow-control credit back as it is read).
    pub body: Body,
    /// `spdy/3.1`, `spdy/3`, `spdy/2` or `http/1.1`.
    pub protocol: &'static str,
    /// The SPDY priority the client gave the stream (0 highest); `None` over HTTP/1.1
    /// and h2.
    pub priority: Option<u8>,
}

impl Request {
    /// A request from an `http` crate head (h2, HTTP/1.1): `host` is the authority the
    /// protocol names (`:authority` or `Host`), `scheme` the transport's unless the URI
    /// carries one; `make_body` gets the `content-length`, if any.
    pub(crate) fn from_parts(
        parts: &http::request::Parts,
        host: String,
        scheme: &str,
        protocol: &'static str,
        make_body: impl FnOnce(Option<u64>) -> Body,
    ) -> Request {
        let mut headers = Headers::new();
        for (n, v) in parts.headers.iter() {
            headers.add(n.as_str(), v.as_bytes());
        }
        let len = parts
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        Request {
            method: parts.method.as_str().to_string(),
            path: parts
                .uri
                .path_and_query()
                .map_or("/".to_string(), |p| p.as_str().to_string()),
            host,
            scheme: parts.uri.scheme_str().unwrap_or(scheme).to_string(),
            headers,
            body: make_body(len),
            protocol,
            priority: None,
        }
    }
}

/// A resource to push with a response (SPDY only).
#[derive(Clone, Debug)]
pub struct Push {
    /// Path on the same origin.
    pub path: String,
    /// Response status.
    pub status: u16,
    /// Response headers (lower-case names).
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Bytes,
}

/// A handler's answer: headers first, then a body that is pulled as the peer takes it.
#[derive(Debug, Default)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers (lower-case names; hop-by-hop ones and `content-length` are dropped: the
    /// body's known length is sent as `content-length`).
    pub headers: Vec<(String, String)>,
    /// Body: bytes in memory, or a stream pulled under the peer's flow control.
    pub body: Body,
    /// Resources to push first (SPDY).
    pub pushes: Vec<Push>,
    /// Answer with RST_STREAM instead (SPDY; HTTP/1.1 closes the connection).
    pub reset: Option<RstStatus>,
    /// The answer to a HEAD: the length the body of a GET would have, sent as
    /// `content-length` with no body (RFC 9110 §9.3.2) instead of the empty body's 0.
    pub head_len: Option<u64>,
}

impl Response {
    /// A response with a body and a content type.
    pub fn new(status: u16, content_type: &str, body: impl Into<Body>) -> Response {
        Response {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.into(),
            ..Default::default()
        }
    }
}

/// A response head's regular fields for HTTP/2 and HTTP/3: hop-by-hop ones and any
/// handler-set `content-length` or `host` dropped, `len` (the body's known length, as
/// text) sent as `content-length`.
pub(crate) fn response_fields<'a>(
    headers: &'a [(String, String)],
    len: Option<&'a str>,
) -> Vec<(&'a str, &'a str)> {
    let mut out: Vec<(&str, &str)> = headers
        .iter()
        .filter(|(n, _)| {
            !(spdy::http::HOP_BY_HOP.contains(&n.as_str()) || n == "content-length" || n == "host")
        })
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    out.extend(len.map(|n| ("content-length", n)));
    out
}

/// A boxed response future.
pub type ResponseFuture = Pin<Box<dyn Future<Output = Response> + Send>>;

/// An answer known at once: status 200, a content type and a body held in memory.
#[derive(Clone, Debug)]
pub struct Ready {
    /// The `content-type` value.
    pub content_type: &'static str,
    /// The body (a HEAD gets its length only).
    pub body: Bytes,
}

/// The ready answer ([`Handler::ready`]) to a bodiless request of `method` for `target`:
/// `(head_only, answer)` when it is a GET or HEAD of an origin-form target of characters
/// RFC 3986 allows in a path and query, unescaped (anything else is left to the full
/// path, whose URI parsing may refuse it). The one rule of every protocol's ready path
/// (`http1/ready.rs`, `spdy/server.rs`, `h2/server.rs`).
pub(crate) fn ready_for(
    handler: &dyn Handler,
    method: &str,
    target: &str,
) -> Option<(bool, Ready)> {
    let head_only = match method {
        "GET" => false,
        "HEAD" => true,
        _ => return None,
    };
    let plain = target.starts_with('/')
        && target
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=:@/?".contains(&b));
    if !plain {
        return None;
    }
    handler.ready(target).map(|r| (head_only, r))
}

/// What answers requests.
pub trait Handler: Send + Sync + 'static {
    /// Answers one request (its body may still be arriving).
    fn handle(&self, req: Request) -> ResponseFuture;

    /// The answer to a GET or HEAD of `path` (path and query, as the request names it)
    /// when it is known at once and does not depend on anything else in the request,
    /// such as a file held in memory: exactly what [`Handler::handle`] would answer,
    /// with status 200, a `content-type` as its only header and no push. `None` (the default):
    /// the request goes to `handle`. HTTP/1.1 (`http1/ready.rs`), SPDY
    /// (`spdy/server.rs`) and h2 (`h2/server.rs`, bodies of one frame) answer such
    /// requests without building a [`Request`]; a wrapper
    /// that must see every request (a log) keeps the default.
    fn ready(&self, _path: &str) -> Option<Ready> {
        None
    }
}

/// Server settings.
#[derive(Clone)]
pub struct ServerConfig {
    /// TLS, if any (ALPN decides the protocol). Clients may still connect without TLS on
    /// the same port: the first byte tells a ClientHello (0x16) from anything else.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// SPDY session settings template (role and version are set per connection).
    pub spdy: spdy::Config,
    /// Largest request body accepted. A declared larger length is refused before the
    /// handler sees the request (HTTP/1.1 413 and close, h2 413, SPDY RST_STREAM
    /// REFUSED_STREAM); a body that grows past it is cut off (the handler reads an
    /// error; SPDY RST_STREAM CANCEL, h2 RST_STREAM CANCEL, HTTP/1.1 close).
    pub max_body: usize,
    /// Memory, time and connection limits (see [`crate::limits`]).
    pub limits: Limits,
    /// Graceful shutdown: once triggered, [`crate::server::serve`] stops accepting,
    /// sessions drain, and it returns when the last connection is done.
    pub shutdown: Shutdown,
    /// Sub-protocols accepted on an HTTP/1.1 `Upgrade: SPDY/3.1` request
    /// (`X-Stream-Protocol-Version`, see [`crate::spdy::upgrade`]); a request that offers
    /// none is upgraded whatever this says.
    pub stream_protocols: Vec<String>,
    /// Sample every accepted connection's TCP sender state into this series.
    pub tcp_series: Option<Arc<crate::transport::sockinfo::TcpSeries>>,
    /// TCP_NOTSENT_LOWAT on accepted connections: the kernel holds at most about this
    /// many bytes not yet sent, so the server's scheduler (priorities, a
    /// reprioritization) decides what goes out next instead of a deep socket buffer
    /// written earlier. `None`: the kernel's default (no limit).
    pub notsent_lowat: Option<u32>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            tls: None,
            spdy: spdy::Config {
                // Kubernetes' peers (moby/spdystream) have no flow control; a peer that
                // shows any is still held to it (docs/flow-control.md).
                flow_control: spdy::session::FlowControl::Lenient,
                ..spdy::Config::new(spdy::Role::Server, Version::V3_1)
            },
            max_body: 64 << 20,
            limits: Limits::default(),
            shutdown: Shutdown::new(),
            stream_protocols: Vec::new(),
            tcp_series: None,
            notsent_lowat: None,
        }
    }
}
