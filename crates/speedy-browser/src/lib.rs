//! # speedy-browser: a browser-like page loader
//!
//! Loads a page the way a browser does, over HTTP/1.1, SPDY/3.1 or HTTP/2, and writes
//! HAR 1.2:
//!
//! - **discovery** ([`discover`]): a streaming HTML scanner (lol_html) finds references
//!   as the document arrives; style sheets are scanned for `url()` and `@import` once
//!   complete; what scripts and style sheets request after they run comes from the
//!   archive's graph, after its compute delay ([`loader`]);
//! - **connections** ([`conn`]): HTTP/1.1 with 6 persistent connections per host and a
//!   total cap (pipelining optional); SPDY and HTTP/2 with one connection per origin, or
//!   one for all origins, every request sent at once with a priority by type;
//! - **names** ([`net`]): a fixed map with a cost per new host, TCP_INFO per connection;
//! - **records** ([`har`], [`report`]): HAR phases per request, page milestones,
//!   byte and header counters, connections.
//!
//! ```no_run
//! # async fn f() {
//! use speedy_browser::{config::{LoadConfig, Proto}, loader, report};
//! let cfg = LoadConfig::new("http://example.test/", Proto::Spdy);
//! let res = loader::load(&cfg, None).await.unwrap();
//! let har = report::to_har(&res);
//! # let _ = har;
//! # }
//! ```
//! See `docs/loader.md` for the model and its limits.

pub mod config;
pub mod conn;
pub mod discover;
pub mod loader;
pub mod net;
pub mod prefetch;
pub mod report;
pub mod spec;

/// Absolute http(s) URLs: the workspace's one type, from the `spdy` crate.
pub use spdy::url;
/// The HAR 1.2 model the loader writes: the workspace's one, from `speedy-archive`.
pub use speedy_archive::har;

pub use config::{Domains, LoadConfig, Proto, Transport};
pub use loader::{load, load_session, LoadResult};
pub use spec::LoadSpec;
