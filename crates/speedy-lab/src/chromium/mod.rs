//! Headless Chromium as a client of the lab: started in the client namespace for one
//! load with a fresh profile, pointed at the replay server's addresses, driven over the
//! DevTools protocol on a pipe ([`cdp`]), and read back as typed events ([`events`]) and
//! a HAR 1.2 ([`har`]), for the runner's Chromium variants (`client = "chromium"`),
//! the fidelity check's among them.
//!
//! How Chromium is set up:
//! - every archive host is mapped to its origin's address with `--host-resolver-rules`
//!   (any other name fails at once, so nothing else crosses the link);
//! - certificate checks are skipped (`--ignore-certificate-errors`: the lab CA is not in
//!   its store); over HTTP/3 it also gets the lab CA's key hash
//!   (`--ignore-certificate-errors-spki-list`), since its QUIC ignores that flag, and
//!   `--origin-to-force-quic-on` for every origin (QUIC by prior knowledge, as the
//!   loader has it);
//! - over HTTP/1.1 it gets `--disable-http2`; over h2 ALPN picks h2 (no Alt-Svc is
//!   advertised, so it never moves to QUIC on its own);
//! - a new profile directory for every load: no cache, no connection or TLS-session
//!   reuse between loads.
//!
//! onLoad and DOMContentLoaded are Navigation Timing's `loadEventStart` and
//! `domContentLoadedEventStart` (ms from navigation start); the document must have come
//! over the intended protocol (`nextHopProtocol`).

pub(crate) mod cdp;
pub(crate) mod events;
pub(crate) mod har;

use cdp::{Cdp, Event};
use events::PageTimings;
use linkem::{Side, Topology};
use serde::Deserialize;
use serde_json::json;
use speedy_net::Protocol;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// How to start Chromium for one load.
pub(crate) struct Launch<'a> {
    /// The Chromium program.
    pub program: &'a Path,
    /// (host, address) of every origin (the replay server's start-up line).
    pub origins: &'a [(String, String)],
    /// The lab CA's key hash ([`ca_spki_hash`]), for QUIC.
    pub ca_spki: &'a str,
    /// The protocol it must load the page over: HTTP/1.1, h2 or h3.
    pub protocol: Protocol,
    /// A directory for the load's profile, made empty before and removed after.
    pub profile: &'a Path,
    /// Wait for the frames after the load and read the paint timings then (the runner);
    /// otherwise the timings are read at the load event (the fidelity check).
    pub after_paint: bool,
}

/// One load by Chromium.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The page's timings (all zero but `protocol` when the load timed out before the
    /// page could be asked).
    pub timings: PageTimings,
    /// The load event did not come within the time allowed.
    pub timed_out: bool,
    /// The `Network` events of the page, in order.
    pub events: Vec<events::NetworkEvent>,
}

/// The Chromium version (`chromium --version`), or an error saying how to install it.
pub(crate) fn version(chromium: &Path, what: &str) -> Result<String, String> {
    let o = std::process::Command::new(chromium)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            format!(
                "{}: {e}; {what} needs headless Chromium (Debian: apt-get install chromium; \
                 or --chromium PROGRAM)",
                chromium.display()
            )
        })?;
    if !o.status.success() {
        return Err(format!(
            "{} --version: {}",
            chromium.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// The base64 SHA-256 of the lab CA's SubjectPublicKeyInfo (from `ca_dir/ca-key.pem`),
/// as `--ignore-certificate-errors-spki-list` takes it: Chromium's QUIC does not honour
/// `--ignore-certificate-errors`, but accepts a chain holding a key of that list.
pub(crate) fn ca_spki_hash(ca_dir: &Path) -> Result<String, String> {
    use base64::Engine;
    use sha2::Digest;
    let path = ca_dir.join("ca-key.pem");
    let pem = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let key = rcgen::KeyPair::from_pem(&pem).map_err(|e| format!("{}: {e}", path.display()))?;
    let hash = sha2::Sha256::digest(key.public_key_der());
    Ok(base64::engine::general_purpose::STANDARD.encode(hash))
}

/// Starts `cmd` in its own process group (so that [`Group`] can kill it with whatever it
/// starts), and has the kernel kill it if this process dies first (an interrupted run
/// leaves no browser or loader behind: Ctrl-C does not reach other process groups).
pub(crate) fn own_group(cmd: &mut std::process::Command) {
    cmd.process_group(0);
    crate::testbed::die_with_parent(cmd);
}

/// A child in its own process group; dropping it kills the group (the child and every
/// process it started, e.g. Chromium's renderers) while the child is not yet reaped.
pub(crate) struct Group(pub Child);

impl Group {
    /// Kills the group (by the child's pid, its group id) if the child still runs.
    pub(crate) fn kill(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            // The group id is the child's pid (process_group(0)), still ours while the
            // child is unreaped; only processes we started are in it.
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe {
                libc::kill(-(self.0.id() as libc::pid_t), libc::SIGKILL);
            }
            let _ = self.0.wait();
        }
    }

    /// Waits for the child until `deadline`; `None` if it is still running then.
    pub(crate) fn wait_until(&mut self, deadline: Instant) -> Option<std::process::ExitStatus> {
        loop {
            if let Ok(Some(st)) = self.0.try_wait() {
                return Some(st);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The flags every headless Chromium of speedy's gets: no sandbox or GPU, none of its
/// own services, DevTools over the pipe ([`cdp`]).
pub(crate) const HEADLESS: [&str; 12] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-breakpad",
    "--remote-debugging-pipe",
];

/// Chromium's command line for a load of `l`, in the client namespace of `topo`.
fn command(topo: &Topology, l: &Launch) -> std::process::Command {
    let mut rules: Vec<String> = l
        .origins
        .iter()
        .map(|(h, a)| format!("MAP {h} {a}"))
        .collect();
    rules.push("MAP * ~NOTFOUND".into());
    let mut cmd = topo.command(Side::Client, l.program);
    cmd.args(HEADLESS)
        .arg("--ignore-certificate-errors")
        .arg(format!("--host-resolver-rules={}", rules.join(", ")));
    match l.protocol {
        Protocol::Http1 => {
            cmd.arg("--disable-http2");
        }
        Protocol::H3 => {
            // QUIC to every origin from the first request (prior knowledge, as the
            // loader has it); the origins are the URLs' (port 443 unless they name one).
            let quic: Vec<String> = l
                .origins
                .iter()
                .map(|(h, _)| match h.rsplit_once(':') {
                    Some((_, p)) if p.parse::<u16>().is_ok() => h.clone(),
                    _ => format!("{h}:443"),
                })
                .collect();
            cmd.arg(format!("--origin-to-force-quic-on={}", quic.join(",")))
                .arg(format!(
                    "--ignore-certificate-errors-spki-list={}",
                    l.ca_spki
                ));
        }
        _ => {}
    }
    cmd.arg(format!("--user-data-dir={}", l.profile.display()))
        .arg("about:blank");
    cmd
}

/// What a load waits for and checks, beside its load event.
pub(crate) struct Expect<'a> {
    /// The protocol the document must come over (`nextHopProtocol`), if any.
    pub protocol: Option<&'a str>,
    /// Read the paint timings after the frames that follow the load ([`Launch`]).
    pub after_paint: bool,
    /// After the load event, wait until no request has been in flight for this long.
    pub quiet: Duration,
}

/// Loads `url` with Chromium as `l` says, in the client namespace of `topo`; the load
/// event must come within `timeout` (else the load is returned `timed_out`). `tick` is
/// called every `every` meanwhile (the runner's samplers). The profile directory is
/// made afresh and removed afterwards.
pub(crate) fn load(
    topo: &Topology,
    l: &Launch,
    url: &str,
    timeout: Duration,
    tick: (Duration, &mut dyn FnMut()),
) -> Result<Loaded, String> {
    let expect = Expect {
        protocol: Some(l.protocol.alpn()),
        after_paint: l.after_paint,
        quiet: SETTLE_QUIET,
    };
    drive(command(topo, l), l.profile, url, timeout, &expect, tick)
}

/// One page load by Chromium, as [`load_page`] returns it.
#[derive(Clone, Debug)]
pub struct PageLoad {
    /// onLoad (`loadEventStart`), ms from navigation start.
    pub on_load_ms: f64,
    /// DOMContentLoaded (`domContentLoadedEventStart`), ms.
    pub dom_content_loaded_ms: f64,
    /// The protocol the document came over (`nextHopProtocol`).
    pub protocol: String,
    /// Every URL the page requested (redirects' targets included), in order.
    pub requested: Vec<String>,
    /// The load as a HAR 1.2, as the runner keeps for its Chromium rows.
    pub har: speedy_archive::har::Har,
}

/// Loads `url` once with headless Chromium (`program`, a fresh profile under
/// `profile`) in the client namespace of `topo`, every host of `origins` mapped to its
/// `IP:PORT` and any other name unresolvable, over `protocol` as the lab's Chromium
/// variants load (`ca_spki`: the hash of the key Chromium's QUIC must trust, h3 only).
/// For what the runner does not cover, such as loading a live site and its replay
/// through the same link. A load whose event does not come within `timeout` is an error.
pub fn load_page(
    program: &Path,
    topo: &Topology,
    origins: &[(String, String)],
    (protocol, ca_spki): (Protocol, &str),
    profile: &Path,
    url: &str,
    timeout: Duration,
) -> Result<PageLoad, String> {
    let launch = Launch {
        program,
        origins,
        ca_spki,
        protocol,
        profile,
        after_paint: false,
    };
    let loaded = load(
        topo,
        &launch,
        url,
        timeout,
        (Duration::from_secs(3600), &mut || {}),
    )?;
    if loaded.timed_out {
        return Err(format!("{url}: no load event within {timeout:?}"));
    }
    let requested = loaded
        .events
        .iter()
        .filter_map(|e| match e {
            events::NetworkEvent::Request(r) => Some(r.request.url.clone()),
            _ => None,
        })
        .collect();
    Ok(PageLoad {
        har: har::build(url, &loaded, "chromium"),
        on_load_ms: loaded.timings.load,
        dom_content_loaded_ms: loaded.timings.dcl,
        protocol: loaded.timings.protocol.clone(),
        requested,
    })
}

/// Loads `url` with the Chromium `cmd` starts (its flags set, among them
/// `--user-data-dir=PROFILE`, made afresh here and removed afterwards), waiting for
/// what `expect` says; the load event must come within `timeout` (else the load is
/// returned `timed_out`). `tick` is called every `every` meanwhile.
pub(crate) fn drive(
    mut cmd: std::process::Command,
    profile: &Path,
    url: &str,
    timeout: Duration,
    expect: &Expect,
    (every, tick): (Duration, &mut dyn FnMut()),
) -> Result<Loaded, String> {
    let _ = std::fs::remove_dir_all(profile);
    std::fs::create_dir_all(profile).map_err(|e| format!("{}: {e}", profile.display()))?;
    let log = profile.join("chromium.log");
    let stderr = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    let res = match Cdp::launch(cmd) {
        Ok((mut cdp, mut child)) => {
            cdp.set_tick(every, tick);
            let res = navigate(&mut cdp, expect, url, timeout);
            // Close the browser politely, then make sure the whole group is gone.
            let _ = cdp.send(None, "Browser.close", json!({}));
            if child
                .wait_until(Instant::now() + Duration::from_secs(10))
                .is_none()
            {
                child.kill();
            }
            res
        }
        Err(e) => Err(e),
    };
    let res = res.map_err(|e| with_log_tail(e, &log));
    let _ = std::fs::remove_dir_all(profile);
    res
}

/// `e`, with the last lines Chromium wrote on stderr (its own account of a failure).
fn with_log_tail(e: String, log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let tail: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("dbus"))
        .rev()
        .take(3)
        .collect();
    if tail.is_empty() {
        e
    } else {
        format!("{e} (chromium: {})", tail.join(" | "))
    }
}

/// `Target.getTargets`' result.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Targets {
    target_infos: Vec<TargetInfo>,
}

/// One target.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TargetInfo {
    #[serde(rename = "type")]
    kind: String,
    target_id: String,
}

/// `Target.attachToTarget`'s result.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Attached {
    session_id: String,
}

/// `Page.navigate`'s result.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Navigated {
    #[serde(default)]
    error_text: Option<String>,
}

/// Attaches to Chromium's first tab (waiting for it to exist); returns the session.
fn attach(cdp: &mut Cdp, deadline: Instant) -> Result<String, String> {
    let target = loop {
        let t: Targets = cdp.call(None, "Target.getTargets", json!({}), deadline)?;
        if let Some(p) = t.target_infos.into_iter().find(|i| i.kind == "page") {
            break p.target_id;
        }
        if Instant::now() >= deadline {
            return Err("no page target".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let a: Attached = cdp.call(
        None,
        "Target.attachToTarget",
        json!({"targetId": target, "flatten": true}),
        deadline,
    )?;
    Ok(a.session_id)
}

/// Navigates Chromium's first tab to `url`, waits for the load event (at most
/// `timeout` after the navigation starts) and reads the page's timings; checks that the
/// document came over the intended protocol, if `expect` names one.
fn navigate(
    cdp: &mut Cdp,
    expect: &Expect,
    url: &str,
    timeout: Duration,
) -> Result<Loaded, String> {
    // Starting the browser is not part of the load: a generous bound of its own.
    let setup = Instant::now() + Duration::from_secs(30);
    let session = attach(cdp, setup)?;
    let s = Some(session.as_str());
    cdp.call::<serde_json::Value>(s, "Page.enable", json!({}), setup)?;
    cdp.call::<serde_json::Value>(s, "Network.enable", json!({}), setup)?;
    // Cross-site frames run in processes (and targets) of their own: their requests too.
    cdp.auto_attach(&session, setup)?;
    cdp.call::<serde_json::Value>(
        s,
        "Page.addScriptToEvaluateOnNewDocument",
        json!({"source": events::BEFORE_PAGE}),
        setup,
    )?;
    let deadline = Instant::now() + timeout;
    let nav: Navigated = cdp.call(s, "Page.navigate", json!({"url": url}), deadline)?;
    if let Some(e) = nav.error_text.filter(|e| !e.is_empty()) {
        return Err(format!("navigating to {url}: {e}"));
    }
    let timed_out = match cdp.wait_event(s, "Page.loadEventFired", deadline) {
        Ok(_) => false,
        // No load event in the time allowed: the load timed out (as the loader's does).
        Err(_) if Instant::now() >= deadline => true,
        Err(e) => return Err(e),
    };
    // The page answers at once, but a little grace after a time-out.
    let grace = Instant::now() + Duration::from_secs(10);
    let script = if expect.after_paint && !timed_out {
        events::TIMINGS_AFTER_PAINT
    } else {
        events::TIMINGS_NOW
    };
    let timings: PageTimings = match cdp.evaluate(s, script, true, grace) {
        Ok(t) => t,
        Err(_) if timed_out => PageTimings::default(),
        Err(e) => return Err(e),
    };
    if let Some(want) = expect
        .protocol
        .filter(|w| !timed_out && timings.protocol != *w)
    {
        return Err(format!(
            "the document came over {:?}, not {want:?}",
            timings.protocol
        ));
    }
    if !timed_out && timings.load <= 0.0 {
        return Err(format!("no loadEventStart: {timings:?}"));
    }
    if !timed_out {
        settle(cdp, &session, deadline, expect.quiet)?;
    }
    let all: Vec<Event> = cdp.take_events();
    Ok(Loaded {
        timings,
        timed_out,
        events: events::NetworkEvent::of_sessions(&all, &cdp.sessions(&session))?,
    })
}

/// How long no request of the page may be in flight before its load counts as settled.
const SETTLE_QUIET: Duration = Duration::from_millis(300);

/// Receives Chromium's events after the load until every request of the page and its
/// frames has ended and none has started for `quiet` ([`SETTLE_QUIET`] for the lab's
/// loads), or until `deadline`.
/// Scripts' timers start requests after the load event (the synthesized pages' within
/// 100 ms of their script), which the loader fetches whole: so does the HAR here, rather
/// than holding them as unfinished.
fn settle(cdp: &mut Cdp, session: &str, deadline: Instant, quiet: Duration) -> Result<(), String> {
    let mut calm_since = Instant::now();
    let mut open = std::collections::HashSet::new();
    // Events already counted: each is read once, as it arrives.
    let mut seen = 0;
    loop {
        let sessions = cdp.sessions(session);
        let queued = cdp.queued();
        for e in events::NetworkEvent::of_sessions(&queued[seen..], &sessions)? {
            match e {
                events::NetworkEvent::Request(r) => {
                    open.insert(r.request_id);
                }
                events::NetworkEvent::Finished(f) => {
                    open.remove(&f.request_id);
                }
                events::NetworkEvent::Failed(f) => {
                    open.remove(&f.request_id);
                }
                _ => {}
            }
        }
        seen = queued.len();
        let now = Instant::now();
        if !open.is_empty() {
            calm_since = now;
        } else if now >= calm_since + quiet {
            return Ok(());
        }
        if now >= deadline || !cdp.pump(deadline.min(now + Duration::from_millis(50))) {
            return Ok(());
        }
    }
}
