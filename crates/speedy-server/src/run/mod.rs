//! The programs of this crate, run: `speedy serve` ([`serve`]) and `speedy proxy`
//! ([`proxy`]) from their specs ([`crate::spec`]). Each checks its spec, sets up TLS and
//! its handler, binds every listener (TCP, and SCTP, QUIC or UDP-GET beside it), writes
//! the start-up lines ([`crate::startup`]) and serves until a signal (SIGTERM or SIGINT, then a drain).
//!
//! Errors are the words the command line prints after `speedy serve: `: the option at
//! fault first, then what went wrong (with its causes, `: `-separated).

mod bind;
mod proxy;
mod serve;
mod signal;

pub use proxy::{proxy, proxy_options};
pub use serve::{files_config, serve};
use signal::Serving;

use std::path::Path;

/// A directory option that names something else is refused by name (it would otherwise
/// fail later in words about a file inside it): `FLAG PATH: not a directory`.
pub fn not_a_file(flag: &str, p: &Path) -> Result<(), String> {
    if p.exists() && !p.is_dir() {
        return Err(format!("{flag} {}: not a directory", p.display()));
    }
    Ok(())
}

/// `what: error: cause: cause ...`: an error after the option or action it concerns,
/// with the chain of its sources.
fn named(what: impl std::fmt::Display, e: &dyn std::error::Error) -> String {
    format!("{what}: {}", with_causes(e))
}

/// An error's message followed by those of its sources, `: `-separated.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut next = e.source();
    while let Some(c) = next {
        s.push_str(": ");
        s.push_str(&c.to_string());
        next = c.source();
    }
    s
}
