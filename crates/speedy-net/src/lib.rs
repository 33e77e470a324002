//! # speedy-net: SPDY, HTTP/2 and HTTP/1.1 over TCP and TLS, on tokio
//!
//! One task owns each [`spdy::Session`] (DESIGN rule 2) and runs it through the one
//! connection loop, [`spdy_conn::run`]; the client, the server and the page loader are
//! its [`spdy_conn::Owner`]s. Servers tell SPDY, h2c and HTTP/1.1 apart by the first
//! bytes on plain TCP and by ALPN over TLS (h2 through the `h2` crate, HTTP/1.1 through
//! hyper). The same [`Handler`] answers all of them, with streaming [`Body`]s both ways;
//! an HTTP/1.1 `Upgrade: SPDY/3.1` switches a connection to SPDY ([`upgrade`]).
//! [`mux`] is a SPDY/3.1 stream multiplexer (raw streams with headers, as moby/spdystream
//! offers) and [`kube`] Kubernetes' exec and port-forward protocols on it.
//! [`sockinfo`] reads TCP_INFO (a snapshot, and a server's sender-side time series).
//! [`h3`] is HTTP/3 over QUIC (quinn and h3): the same handlers, over UDP.
//! [`loadgen`] holds the load generator's lean connections (`speedy bench`).
//! [`fetch`] is `speedy fetch`'s engine: URLs by origin, requests in order, pushes,
//! reprioritizations and bodies saved, reported as [`fetch_record`] lines.

pub mod bench;
pub mod body;
pub mod client;
mod dial;
pub mod fetch;
pub mod fetch_record;
pub mod h2_priority;
mod h2_server;
pub mod h3;
pub mod h3_quic;
pub mod handler;
mod http1;
pub mod http1_pipeline;
mod http1_ready;
pub mod http1_response;
pub mod io;
pub mod kube;
#[cfg(feature = "kube-double")]
pub mod kube_double;
pub mod limits;
pub mod loadgen;
pub mod mux;
pub mod protocol;
mod reply;
pub mod sctp;
pub mod server;
pub mod sockinfo;
mod spdy_client;
pub mod spdy_conn;
mod spdy_server;
pub mod text;
pub mod tls;
pub mod udp_get;
pub mod upgrade;

pub use body::Body;
pub use client::{Client, ClientConfig, ClientError, Http1Mode, ResponseStream};
pub use limits::{Limits, Shutdown};
pub use protocol::{Carrier, Protocol};
pub use server::{Handler, Push, Request, Response, ServerConfig};
