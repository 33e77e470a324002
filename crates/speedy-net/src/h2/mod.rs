//! HTTP/2 beside the `h2` crate, which does the framing, HPACK and flow control.
//!
//! - `server.rs`: the h2 server (TLS with ALPN `h2`, or h2c with prior knowledge)
//!   answering the same [`Handler`](crate::Handler) as SPDY and HTTP/1.1.
//! - `priority.rs`: the priorities the crate drops or does not know (PRIORITY frames,
//!   RFC 9218's PRIORITY_UPDATE): a tap and a scheduler on the server, PRIORITY_UPDATE
//!   written by the client; HTTP/3 reads the same `priority` field.

pub(crate) mod priority;
pub(crate) mod server;
