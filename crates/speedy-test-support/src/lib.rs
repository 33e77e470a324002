//! # speedy-test-support: what in-process tests of the servers share
//!
//! The project tests protocol and server behaviour in the crate that owns it, in-process
//! (docs/design.md, rule 11); this crate is the scaffolding those tests share, used only
//! as a dev-dependency (`publish = false`), never by library code:
//!
//! - [`TestServer`]: `speedy_net::server::serve` on `127.0.0.1:0` with a given
//!   [`Handler`](speedy_net::server::Handler) and
//!   [`ServerConfig`](speedy_net::server::ServerConfig) (TLS when the configuration has
//!   it, see [`with_self_signed_tls`]), on its own tokio runtime thread so blocking tests
//!   can drive it; dropping it shuts the server down and waits for it.
//! - [`raw`]: hand-driven peers on blocking sockets (a SPDY client over the sans-IO
//!   session, a minimal HTTP/2 framer, an HTTP/1.1 GET) that show exactly what a server
//!   sends.
//!
//! What only the `speedy` program can show (its command line, exit codes, printed lines,
//! a whole process's memory) stays in `crates/speedy/tests/`.

#![warn(missing_docs)]

pub mod raw;
mod server;
mod tempdir;

pub use server::{with_self_signed_tls, TestServer};
pub use tempdir::TempDir;
