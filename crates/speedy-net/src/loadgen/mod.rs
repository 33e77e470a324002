//! Load-generator connections (what `speedy bench` drives): one connection to one URL
//! that repeats a GET of it, keeping as many in flight as asked, paced by the caller
//! ([`Pace`]: whether to start another request, and each one's end). SPDY runs a lean
//! owner of the one connection loop (`spdy_lean.rs`: the session's events answered in the
//! loop's own task, no channel or task per request), h2 a lean connection on `h2wire`'s
//! frames and HPACK (`h2_lean.rs`), HTTP/3 the [`Client`], HTTP/1.1 a lean keep-alive
//! connection with one request in flight, as h2load's (`h1.rs`). Timing, counting and reporting belong to the
//! caller; each request ends with the status and the body's length or a short error
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
    /// The others, a future a request.
    Each(Box<Each>),
}

/// A connection whose GETs are futures of their own, shared by the requests in flight.
struct Each {
    path: String,
    via: Via,
}

enum Via {
    /// HTTP/3, through the [`Client`].
    Client(Client),
    H1(tokio::sync::Mutex<H1>),
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
        let via = match protocol {
            Protocol::H2 => {
                let io = open(url, verify, "h2").await?;
                let lean = h2_lean::Lean::new(io, url);
                return Ok(LoadConn {
                    inner: Inner::H2(lean),
                });
            }
            Protocol::Http1 => {
                let io = open(url, verify, "http/1.1").await?;
                Via::H1(tokio::sync::Mutex::new(H1::new(io, url)))
            }
            Protocol::Spdy(version) => {
                let io = open(url, verify, protocol.alpn()).await?;
                let lean = spdy_lean::Lean::new(io, version, url);
                return Ok(LoadConn {
                    inner: Inner::Spdy(Box::new(lean)),
                });
            }
            Protocol::H3 => {
                let cfg = ClientConfig {
                    protocol: Some(protocol),
                    verify: verify.clone(),
                    read_timeout: None,
                    ..Default::default()
                };
                let (host, port) = (url.host_bare(), url.port_or_default());
                Via::Client(Client::connect(&url.scheme, host, port, &cfg).await?)
            }
        };
        let each = Each {
            path: url.path.clone(),
            via,
        };
        Ok(LoadConn {
            inner: Inner::Each(Box::new(each)),
        })
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
            Inner::Spdy(lean) => Some(lean.drive(in_flight, pace).await),
            Inner::H2(lean) => {
                lean.drive(in_flight, pace).await;
                None
            }
            Inner::Each(each) => {
                each.drive(in_flight, pace).await;
                None
            }
        }
    }
}

impl Each {
    /// Keeps up to `in_flight` GETs running as futures of this task.
    async fn drive(&self, in_flight: usize, pace: &mut impl Pace) {
        let mut running = FuturesUnordered::new();
        for _ in 0..in_flight.max(1) {
            match pace.start() {
                Some(t) => running.push(self.timed(t)),
                None => break,
            }
        }
        while let Some((t, r)) = running.next().await {
            pace.done(t, r);
            if let Some(t) = pace.start() {
                running.push(self.timed(t));
            }
        }
    }

    /// One GET, with the time it was started at.
    async fn timed(&self, t: Instant) -> (Instant, Result<(u16, u64), String>) {
        (t, self.get().await)
    }

    /// GETs the URL once and reads the whole body.
    async fn get(&self) -> Result<(u16, u64), String> {
        match &self.via {
            Via::Client(cl) => {
                let resp = cl
                    .request(ClientRequest::get(&self.path))
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
            Via::H1(h1) => h1.lock().await.roundtrip().await,
        }
    }
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
