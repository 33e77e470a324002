//! The clients that load a page through the recording proxy: headless Chromium (its
//! requests and their initiators from DevTools), or speedy's own loader (`speedy load
//! --proxy`, no browser needed; it runs no scripts, so what scripts would request is
//! not recorded).

use crate::chromium::{self, Expect};
use speedy_archive::import::BrowserRequest;
use speedy_browser::LoadSpec;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What Chromium did on one visit.
pub(super) struct BrowserVisit {
    /// Its requests for the page (its frames' included), in order.
    pub requests: Vec<BrowserRequest>,
    /// The load event did not come in time (what came until then is kept).
    pub timed_out: bool,
}

/// Chromium's command line for a visit: headless, a fresh profile, everything through
/// the proxy at `proxy` (loopback names included), trusting the key `spki` (the
/// recording CA's) for every https origin, and no upgrade of http:// navigations.
fn command(program: &Path, proxy: SocketAddr, spki: &str, profile: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(chromium::HEADLESS)
        .arg(format!("--proxy-server=http://{proxy}"))
        .arg("--proxy-bypass-list=<-loopback>")
        .arg(format!("--ignore-certificate-errors-spki-list={spki}"))
        .arg("--disable-features=HttpsUpgrades")
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("about:blank");
    cmd
}

/// Loads `url` with Chromium through the proxy: waits for the load event (at most
/// `timeout`) and then until no request has been in flight for `quiet`.
pub(super) fn chromium_visit(
    program: &Path,
    proxy: SocketAddr,
    spki: &str,
    profile: &Path,
    url: &str,
    (timeout, quiet): (Duration, Duration),
) -> Result<BrowserVisit, String> {
    let expect = Expect {
        protocol: None,
        after_paint: false,
        quiet,
    };
    let cmd = command(program, proxy, spki, profile);
    let mut nothing = || {};
    let loaded = chromium::drive(
        cmd,
        profile,
        url,
        timeout,
        &expect,
        (Duration::from_secs(3600), &mut nothing),
    )?;
    let requests = loaded
        .events
        .iter()
        .filter_map(|e| match e {
            chromium::events::NetworkEvent::Request(r) => Some(BrowserRequest {
                url: r.request.url.clone(),
                method: r.request.method.clone(),
                initiator: Some(r.initiator.to_har()),
                resource_type: r.kind.clone(),
                priority: r.request.initial_priority.clone(),
            }),
            _ => None,
        })
        .collect();
    Ok(BrowserVisit {
        requests,
        timed_out: loaded.timed_out,
    })
}

/// Loads `url` with `speedy load` through the proxy (HTTP/1.1; https through CONNECT,
/// trusting `ca_pem`), its HAR into `har` and its standard error beside it; killed (by
/// pid) after `timeout` and 15 s more. Returns how it ended when not well (its exit
/// status and last words), for the visit's notes.
pub(super) fn loader_visit(
    speedy: &Path,
    proxy: SocketAddr,
    ca_pem: &Path,
    url: &str,
    timeout: Duration,
    har: &Path,
) -> Result<Option<String>, String> {
    let spec = LoadSpec {
        url: url.to_string(),
        proxy: Some(format!("http://{proxy}")),
        cacert: Some(ca_pem.to_path_buf()),
        har: Some(har.to_path_buf()),
        timeout: timeout.as_secs_f64(),
        ..LoadSpec::default()
    };
    let err_path = har.with_extension("stderr.txt");
    let err = std::fs::File::create(&err_path)
        .map_err(|e| format!("creating {}: {e}", err_path.display()))?;
    let mut cmd = Command::new(speedy);
    cmd.stdout(Stdio::null()).stderr(err);
    chromium::own_group(&mut cmd);
    let mut child = chromium::Group(crate::testbed::spawn_load(cmd, &spec)?);
    let Some(st) = child.wait_until(Instant::now() + timeout + Duration::from_secs(15)) else {
        child.kill();
        return Ok(Some(format!(
            "the loader did not finish within {timeout:?}"
        )));
    };
    if st.success() {
        return Ok(None);
    }
    let words = std::fs::read_to_string(&err_path).unwrap_or_default();
    let last = words.lines().last().unwrap_or("").trim().to_string();
    Ok(Some(format!("the loader ended with {st}: {last}")))
}
