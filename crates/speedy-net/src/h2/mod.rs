//! HTTP/2: the server on this project's sans-IO `h2wire`, the client on the `h2` crate.
//!
//! - `server.rs`: the h2 server (TLS with ALPN `h2`, or h2c with prior knowledge)
//!   answering the same [`Handler`](crate::Handler) as SPDY and HTTP/1.1, its
//!   `h2wire` connection run by the SPDY sessions' loop (`crate::spdy::conn`).
//! - `priority.rs`: RFC 9218's PRIORITY_UPDATE written by the client, which the `h2`
//!   crate does not know; HTTP/3 reads the same `priority` field.

pub(crate) mod priority;
pub(crate) mod server;
