//! One load by the loader: the [`LoadSpec`] a variant asks for, and `speedy load` run
//! with it in the client namespace, sampled while it runs.

use super::plan::PageInfo;
use super::{RunOptions, SS_EVERY};
use crate::experiment::{Experiment, Variant};
use crate::testbed::ReplayServer;
use linkem::{Side, Topology};
use speedy_browser::LoadSpec;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Where one load goes and what it may use, besides its variant.
pub(super) struct Target<'a> {
    /// The pages it visits: one, or a browsing session's every page.
    pub visits: &'a [&'a PageInfo],
    /// The archive the pages come from (the loader reads its object list).
    pub archive: &'a Path,
    /// The lab CA's directory (the loader trusts its `ca.pem`).
    pub ca_dir: &'a Path,
    /// The replay server: every origin's address, and its SCTP port when it has SCTP
    /// (both from its start-up line).
    pub server: &'a ReplayServer,
    /// The proxy to load through, if the variant has one.
    pub proxy: Option<SocketAddr>,
    /// Where the HAR goes.
    pub har: &'a Path,
    /// The HAR of this page's previous load in the lane (client prefetch learns from it).
    pub earlier: Option<&'a PathBuf>,
}

/// The loader's spec for one load of `v` on `to`.
pub(super) fn spec(exp: &Experiment, v: &Variant, to: &Target) -> LoadSpec {
    let page = to.visits[0];
    let mut spec = LoadSpec::new(&page.url, v.protocol);
    spec.archive = Some(to.archive.to_path_buf());
    if let Some(p) = to.proxy {
        // tls = true with a proxy: TLS to the proxy; its origins stay plain (below).
        let scheme = if v.tls { "https" } else { "http" };
        spec.proxy = Some(format!("{scheme}://{p}"));
    }
    // The pages after the first, and the pause before each.
    let (then, pause): (Vec<&PageInfo>, Option<Duration>) = match exp.revisit_after {
        Some(after) => (vec![page], Some(after)),
        None => (to.visits[1..].to_vec(), exp.session_think),
    };
    if let (false, Some(pause)) = (then.is_empty(), pause) {
        spec.then = then.iter().map(|p| p.url.clone()).collect();
        spec.think_ms = pause.as_millis() as u64;
        spec.keepalive_ms = v.keepalive_ms.map(u64::from);
    }
    spec.tls = v.tls && to.proxy.is_none();
    spec.plain = !spec.tls;
    if v.prefetch {
        spec.prefetch = to.earlier.cloned();
    }
    let resolve = to.server.resolve();
    spec.resolve = resolve.iter().map(|(h, a)| format!("{h}={a}")).collect();
    spec.cacert = Some(to.ca_dir.join("ca.pem"));
    v.configure_load(&mut spec);
    if v.is_sctp() {
        spec.sctp_port = to.server.sctp_port();
    }
    spec.har = Some(to.har.to_path_buf());
    spec.timeout = exp.timeout.as_secs_f64();
    spec
}

/// Runs `speedy load` with `spec` in the client namespace, calling `sample` every
/// [`SS_EVERY`] until it exits; returns its exit status. It is killed (by pid) if it
/// outlasts its timeout per visit, the pauses between visits and 15 s more. Its stderr
/// goes to a file beside the HAR, kept when not empty (warnings, and diagnostics such as
/// SPEEDY_SCTP_STATS): a pipe read only at the end would stall a loader that wrote more
/// than the pipe holds.
pub(super) fn run(
    topo: &Topology,
    opts: &RunOptions,
    spec: &LoadSpec,
    sample: &mut dyn FnMut(),
) -> Result<String, String> {
    let har = spec.har.as_deref().expect("the lab's loads write a HAR");
    let log_path = har.with_extension("stderr.txt");
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("creating {}: {e}", log_path.display()))?;
    let mut cmd = topo.command(Side::Client, &opts.speedy);
    cmd.stdout(Stdio::null()).stderr(log);
    crate::testbed::die_with_parent(&mut cmd);
    let mut child = crate::testbed::spawn_load(cmd, spec)?;
    let timeout = Duration::from_secs_f64(spec.timeout);
    let then = spec.then.len() as u32;
    let deadline = Instant::now()
        + timeout * (then + 1)
        + Duration::from_millis(spec.think_ms) * then
        + Duration::from_secs(15);
    let mut next_sample = Instant::now() + SS_EVERY;
    loop {
        if Instant::now() >= next_sample {
            sample();
            next_sample = Instant::now() + SS_EVERY;
        }
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            if std::fs::metadata(&log_path).is_ok_and(|m| m.len() == 0) {
                let _ = std::fs::remove_file(&log_path);
            }
            if !har.exists() {
                let err = std::fs::read_to_string(&log_path).unwrap_or_default();
                return Err(format!("the loader wrote no HAR ({st}): {}", err.trim()));
            }
            return Ok(st.to_string());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the loader did not finish {} within {timeout:?}",
                spec.url
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
