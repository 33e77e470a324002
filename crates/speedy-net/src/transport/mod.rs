//! What the protocols run over: byte streams and sockets, below HTTP and SPDY.
//!
//! - `io.rs`: the boxed byte stream every connection is ([`io::BoxIo`]), a reader that
//!   replays sniffed bytes, vectored writes that still flush TLS when output runs dry,
//!   and the rate a socket takes bytes at.
//! - `dial.rs`: resolving an origin, dialling TCP and TLS (for the client, HTTP/3, SCTP
//!   and the load generator).
//! - `tls.rs`: rustls configuration, servers and clients (ALPN ids, the loader's
//!   Chromium-shaped ClientHello).
//! - `sctp/`: SPDY over SCTP in user space over UDP, as a byte stream for the SPDY loop.
//! - `sockinfo.rs`: TCP_INFO, a connection's snapshot and a server's time series;
//!   `sock_diag.rs`: every connection of a namespace with its TCP_INFO, over netlink.
//! - `udp_get.rs`: one datagram each way, the bare UDP baseline (`serve --udp-get`).

pub(crate) mod dial;
pub mod io;
pub mod sctp;
pub mod sock_diag;
pub mod sockinfo;
pub mod tls;
pub mod udp_get;
