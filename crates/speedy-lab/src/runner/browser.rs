//! One load by headless Chromium (a variant with `client = "chromium"`): started in the
//! client namespace with a fresh profile ([`crate::chromium`]), pointed at the replay
//! server's addresses, sampled while it runs as the loader is, and its DevTools events
//! written as the load's HAR.

use super::plan::PageInfo;
use super::SS_EVERY;
use crate::chromium::{self, har};
use crate::experiment::Variant;
use crate::testbed::ReplayServer;
use linkem::Topology;
use std::path::Path;
use std::time::Duration;

/// Chromium's HTTP/1.1 connection limits, which its rows record as the loader's are:
/// sockets per host (`max_sockets_per_group`) and in all (`max_sockets_per_pool`) of
/// its normal socket pool.
pub(crate) const CHROMIUM_HTTP1_LIMITS: (u32, u32) = (6, 256);

/// What a Chromium load needs besides its variant.
pub(super) struct Target<'a> {
    /// The Chromium program.
    pub program: &'a Path,
    /// Its `--version`, for the HAR's `browser`.
    pub version: &'a str,
    /// The page.
    pub page: &'a PageInfo,
    /// The replay server: every origin's address.
    pub server: &'a ReplayServer,
    /// The lab CA's key hash (for QUIC).
    pub ca_spki: &'a str,
    /// The profile directory (the lane's; made afresh for each load).
    pub profile: &'a Path,
    /// Where the HAR goes.
    pub har: &'a Path,
    /// The load event must come within this.
    pub timeout: Duration,
}

/// Loads `to.page` with Chromium over `v`'s protocol, calling `sample` every
/// [`SS_EVERY`] meanwhile, and writes the load's HAR; returns what to say of how it
/// ended (as the loader's exit status is said).
pub(super) fn run(
    topo: &Topology,
    v: &Variant,
    to: &Target,
    sample: &mut dyn FnMut(),
) -> Result<String, String> {
    let origins = to.server.resolve();
    let launch = chromium::Launch {
        program: to.program,
        origins: &origins,
        ca_spki: to.ca_spki,
        protocol: v.protocol,
        profile: to.profile,
        after_paint: true,
    };
    let loaded = chromium::load(topo, &launch, &to.page.url, to.timeout, (SS_EVERY, sample))
        .map_err(|e| format!("chromium loading {}: {e}", to.page.url))?;
    let h = har::build(&to.page.url, &loaded, to.version);
    speedy_archive::har::write(&h, to.har).map_err(|e| format!("{}: {e}", to.har.display()))?;
    Ok(if loaded.timed_out {
        format!("chromium: no load event within {:?}", to.timeout)
    } else {
        "chromium: loaded".into()
    })
}
