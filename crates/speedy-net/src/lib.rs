//! # speedy-net: SPDY, HTTP/2 and HTTP/1.1 over TCP and TLS, on tokio
//!
//! One task owns each session of the `spdy` crate (DESIGN rule 2) and runs it through
//! the one connection loop, [`spdy::conn::run`]; the client, the server and the page
//! loader are its [`spdy::conn::Owner`]s, and so is the HTTP/2 server, whose connection
//! is `h2wire`'s. Servers tell SPDY, h2c and HTTP/1.1 apart by the first bytes on plain
//! TCP and by ALPN over TLS (HTTP/1.1 through hyper). The same [`Handler`] answers all of them, with streaming
//! [`Body`]s both ways.
//!
//! - [`spdy`]: the connection loop and what runs on it: the SPDY server and client
//!   sides, HTTP/1.1 `Upgrade: SPDY/3.1` ([`spdy::upgrade`]), a stream multiplexer
//!   ([`spdy::mux`]: raw streams with headers, as moby/spdystream offers) and
//!   Kubernetes' exec and port-forward protocols on it ([`spdy::kube`]).
//! - `h2`: the HTTP/2 server (on `h2wire`) and the client's PRIORITY_UPDATE (its
//!   connection is the `h2` crate's, which leaves them out). What the SPDY and h2
//!   servers keep for the streams they answer is one `answering::Answering`.
//! - [`h3`]: HTTP/3 over QUIC (quinn and h3): the same handlers, over UDP.
//! - [`http1`]: the HTTP/1.1 server (hyper, behind answers from memory), pipelining, and
//!   responses read sans IO ([`http1::response`]).
//! - [`transport`]: what those run over: byte streams ([`io`]), dialling, [`tls`], SPDY
//!   over [`sctp`], TCP_INFO ([`transport::sockinfo`]), one datagram each way
//!   ([`transport::udp_get`]).
//! - Here: the listener and protocol sniffing ([`server`]), the client of every protocol
//!   ([`Client`]), the [`Handler`] contract, [`Body`], [`limits`], the protocol names
//!   ([`protocol`], [`text`]), `speedy fetch`'s engine ([`fetch`], reported as
//!   [`fetch_record`] lines) and `speedy bench`'s ([`bench`], on [`loadgen`]'s lean
//!   connections).

mod answering;
pub mod bench;
mod body;
pub mod client;
pub mod fetch;
pub mod fetch_record;
mod h2;
pub mod h3;
mod handler;
pub mod http1;
pub mod limits;
pub mod loadgen;
pub mod protocol;
mod reply;
pub mod server;
pub mod spdy;
pub mod text;
pub mod transport;

pub use body::Body;
pub use client::{Client, ClientConfig, ClientError, Http1Mode, ResponseStream};
pub use limits::{Limits, Shutdown};
pub use protocol::{Carrier, Protocol};
pub use server::{Handler, Push, Request, Response, ServerConfig};
pub use transport::{io, sctp, tls};
