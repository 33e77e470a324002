//! SPDY on tokio: the one connection loop ([`conn::run`], and the [`conn::Owner`] trait
//! behind which its users differ) and what runs on it.
//!
//! - `conn.rs`: the loop; the client, the server, the multiplexer and the page loader's
//!   SPDY driver all drive their sessions through it, over TCP, TLS or SCTP.
//! - `server.rs`, `client.rs`: the server and client sides of a session (the protocol
//!   servers are reached through [`crate::server`], the client through [`crate::Client`]).
//! - `upgrade.rs`: HTTP/1.1 `Upgrade: SPDY/3.1`, both ends.
//! - `mux.rs`: a stream multiplexer (raw streams with headers, as moby/spdystream).
//! - `kube.rs`: Kubernetes' exec and port-forward clients on the multiplexer;
//!   `kube_double.rs` (feature `kube-double`) a kubelet-like test double.

pub(crate) mod client;
pub mod conn;
pub mod kube;
#[cfg(feature = "kube-double")]
pub mod kube_double;
pub mod mux;
pub(crate) mod server;
pub mod upgrade;
