//! Load-generator connections (what `speedy bench` drives): one connection to one URL
//! that repeats a GET of it, keeping as many in flight as asked, paced by the caller
//! ([`Pace`]: whether to start another request, and each one's end). SPDY runs a lean
//! owner of the one connection loop (`spdy_lean.rs`: the session's events answered in the
//! loop's own task, no channel or task per request), h2 a lean connection on `h2wire`'s
//! frames and HPACK (`h2_lean.rs`), HTTP/3 the [`Client`], HTTP/1.1 a lean keep-alive
//! connection with one request in flight, as h2load's (`h1.rs`). Timing, counting and
//! reporting belong to the caller; each request ends with the status and the body's length or a short error
//! kind to count by.
//!
//! ```no_run
//! # async fn f() -> Result<(), speedy_net::ClientError> {
//! use speedy_net::{loadgen::{LoadConn, Pace}, Protocol};
//! struct Ten(u32);
//! impl Pace for Ten {
//!     fn start(&mut self) -> Option<std::time::Instant> {
//!         self.0 += 1;
//!         (self.0 <= 10).then(std::time::Instant::now)
//!     }
//!     fn done(&mut self, _: std::time::Instant, r: Result<(u16, u64), String>) {
//!         println!("{r:?}");
//!     }
//! }
//! let url = "http://127.0.0.1:8080/a.html".parse().unwrap();
//! let conn = LoadConn::connect(&url, Protocol::H2, &speedy_net::tls::Verify::System).await?;
//! conn.drive(4, &mut Ten(0)).await;
//! # Ok(()) }
//! ```

mod h1;
mod h2_lean;
mod spdy_lean;

use crate::client::{Client, ClientConfig, ClientError, ClientRequest};
use crate::protocol::Protocol;
use crate::transport::dial::{dial, tls_dial};
use crate::transport::io::BoxIo;
use crate::transport::tls::{client_config, Verify};
use ::spdy::url::Url;
use futures_util::stream::{FuturesUnordered, StreamExt};
use h1::H1;
use std::time::Instant;

/// How a driven connection paces its requests: asked before each request whether to
/// start it, told of each one's end. One per connection, called from its task only.
pub trait Pace: Send {
    /// Whether to start another request now; `Some(t)`: start it, its latency timed
    /// from `t`. Once it says `None` the connection starts no more.
    fn start(&mut self) -> Option<Instant>;

    /// A request started at `started` ended: `Ok` with the status (below 400) and the
    /// body's length, or `Err` with a short error kind (`http 404`, `stream reset`,
    /// `connection closed`, `h2: …`).
    fn done(&mut self, started: Instant, result: Result<(u16, u64), String>);
}

/// One open load connection to one URL, driven by [`LoadConn::drive`].
pub struct LoadConn {
    inner: Inner,
}

enum Inner {
    /// SPDY: the socket and the session, driven by `spdy_lean.rs`.
    Spdy(Box<spdy_lean::Lean>),
    /// HTTP/2: the socket, driven by `h2_lean.rs`.
    H2(h2_lean::Lean),
    /// HTTP/1.1: one request at a time.
    H1(Box<H1>),
    /// HTTP/3, through the [`Client`]: a future a request.
    H3(Box<Client>, String),
}

/// A request in flight on a multiplexed connection: when it started, its status once
/// its head came, its body bytes.
struct InFlight {
    started: Instant,
    status: Option<u16>,
    bytes: u64,
}

impl InFlight {
    fn new(started: Instant) -> InFlight {
        InFlight {
            started,
            status: None,
            bytes: 0,
        }
    }

    /// How it ended: `error` if the stream or connection failed, else by its status.
    fn outcome(&self, error: Option<String>) -> Result<(u16, u64), String> {
        match (error, self.status) {
            (Some(e), _) => Err(e),
            (None, Some(s)) if s < 400 => Ok((s, self.bytes)),
            (None, Some(s)) => Err(format!("http {s}")),
            (None, None) => Err("no status".into()),
        }
    }
}

impl LoadConn {
    /// Opens a connection to `url`'s origin (TCP with `TCP_NODELAY`, TLS for `https`)
    /// and, for HTTP/3, the QUIC handshake through the [`Client`]; SPDY and h2 (by prior
    /// knowledge on plain TCP, ALPN over TLS) and HTTP/1.1 speak when driven. Errors
    /// name the address.
    pub async fn connect(
        url: &Url,
        protocol: Protocol,
        verify: &Verify,
    ) -> Result<LoadConn, ClientError> {
        let inner = match protocol {
            Protocol::H2 => Inner::H2(h2_lean::Lean::new(open(url, verify, "h2").await?, url)),
            Protocol::Http1 => {
                Inner::H1(Box::new(H1::new(open(url, verify, "http/1.1").await?, url)))
            }
            Protocol::Spdy(version) => {
                let io = open(url, verify, protocol.alpn()).await?;
                Inner::Spdy(Box::new(spdy_lean::Lean::new(io, version, url)))
            }
            Protocol::H3 => {
                let cfg = ClientConfig {
                    protocol: Some(protocol),
                    verify: verify.clone(),
                    read_timeout: None,
                    ..Default::default()
                };
                let (host, port) = (url.host_bare(), url.port_or_default());
                let client = Client::connect(&url.scheme, host, port, &cfg).await?;
                Inner::H3(Box::new(client), url.path.clone())
            }
        };
        Ok(LoadConn { inner })
    }

    /// GETs the URL over and over, up to `in_flight` at once (one at a time over
    /// HTTP/1.1), as long as `pace` says to start another; returns once every started
    /// request has ended. Over SPDY it returns the session's header bytes, raw and as
    /// sent on the wire (`None` over HTTP/1.1, which has no compression, and h2 and h3,
    /// whose crates do not report theirs).
    pub async fn drive(
        self,
        in_flight: usize,
        pace: &mut impl Pace,
    ) -> Option<::spdy::session::Stats> {
        match self.inner {
            Inner::Spdy(lean) => return Some(lean.drive(in_flight, pace).await),
            Inner::H2(lean) => lean.drive(in_flight, pace).await,
            Inner::H1(mut h1) => {
                while let Some(t) = pace.start() {
                    let r = h1.roundtrip().await;
                    pace.done(t, r);
                }
            }
            Inner::H3(client, path) => h3_drive(&client, &path, in_flight, pace).await,
        }
        None
    }
}

/// Keeps up to `in_flight` GETs of `path` running on an HTTP/3 client, each a future of
/// this task.
async fn h3_drive(client: &Client, path: &str, in_flight: usize, pace: &mut impl Pace) {
    let mut running = FuturesUnordered::new();
    let get = |t: Instant| async move { (t, h3_get(client, path).await) };
    for _ in 0..in_flight.max(1) {
        match pace.start() {
            Some(t) => running.push(get(t)),
            None => break,
        }
    }
    while let Some((t, r)) = running.next().await {
        pace.done(t, r);
        if let Some(t) = pace.start() {
            running.push(get(t));
        }
    }
}

/// One GET over HTTP/3, its whole body read.
async fn h3_get(client: &Client, path: &str) -> Result<(u16, u64), String> {
    let resp = client
        .request(ClientRequest::get(path))
        .await
        .map_err(|e| kind(&e.to_string()))?;
    if resp.status >= 400 {
        return Err(format!("http {}", resp.status));
    }
    let mut body = resp.body;
    let mut n = 0u64;
    while let Some(c) = body.chunk().await {
        n += c.map_err(|e| kind(&e.to_string()))?.len() as u64;
    }
    Ok((resp.status, n))
}

/// The error kind of a client error's text: the few kinds a load test tells apart, else
/// the text up to its first `:`.
fn kind(e: &str) -> String {
    if e.contains("reset") {
        "stream reset".into()
    } else if e.contains("closed") {
        "connection closed".into()
    } else if e.contains("connect") {
        "connect".into()
    } else {
        e.split(':').next().unwrap_or(e).to_string()
    }
}

/// TCP (no delay) to `url`'s host and port, then TLS offering `alpn` for `https`.
async fn open(url: &Url, verify: &Verify, alpn: &str) -> Result<BoxIo, ClientError> {
    let (host, port) = (url.host_bare(), url.port_or_default());
    if url.scheme == "https" {
        let tls = client_config(verify, &[alpn]).map_err(ClientError::Connect)?;
        Ok(tls_dial(host, port, None, tls).await?.0)
    } else {
        Ok(Box::new(dial(host, port, None).await?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_error_kinds() {
        assert_eq!(kind("stream reset by peer: REFUSED_STREAM"), "stream reset");
        assert_eq!(kind("connection closed"), "connection closed");
        assert_eq!(kind("connect: 127.0.0.1:1: refused"), "connect");
        assert_eq!(kind("protocol error: bad frame"), "protocol error");
    }
}
