//! # speedy-net: SPDY and HTTP/1.1 over TCP and TLS, on tokio
//!
//! One driver task owns each [`spdy::Session`] (DESIGN rule 2); handles talk to it over
//! channels. Servers tell SPDY from HTTP/1.1 by the first bytes on plain TCP and by ALPN
//! over TLS; HTTP/1.1 goes through hyper. The same [`Handler`] answers both.

pub mod body;
pub mod client;
mod h2_server;
mod http1;
pub mod io;
pub mod server;
mod spdy_client;
pub mod spdy_conn;
mod spdy_server;
pub mod tls;

pub use body::Body;
pub use client::{Client, ClientConfig, ClientError, Protocol, ResponseStream};
pub use server::{Handler, Push, Request, Response, ServerConfig};
