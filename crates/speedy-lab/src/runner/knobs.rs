//! A variant's TCP knobs inside the namespaces: congestion control (by sysctl, or per
//! route where the host does not let namespaces make it their default), metrics cache,
//! slow start after idle, RACK and TLP, and the per-route initcwnd, initrwnd and rto_min.

use crate::experiment::{Experiment, Variant};
use linkem::{Side, Topology};

/// The server routes' initial congestion window, segments, when a variant sets none
/// (Linux's default since 2.6.39, set explicitly so no earlier variant's stays).
pub(super) const DEFAULT_INITCWND: u32 = 10;

/// The congestion control a variant runs, and how it is set.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Cc {
    /// The algorithm (`reno`, `cubic`, `bbr`).
    pub name: String,
    /// Set on the namespaces' routes (`ip route ... congctl NAME`) rather than as their
    /// default: Linux lets a namespace other than the host's make only the algorithms in
    /// `net.ipv4.tcp_allowed_congestion_control` its default, but a route's `congctl`
    /// may name any algorithm the kernel has (`tcp_available_congestion_control`), and
    /// every connection over that route runs it.
    pub per_route: bool,
}

/// The congestion control each variant uses: the first of its preference the kernel has
/// (`None`: the namespaces' default). An algorithm the host does not allow namespaces to
/// make their default is set per route, and said once; an algorithm the kernel lacks
/// falls back along the preference, said too; none at all is refused.
pub(super) fn resolve_cc(
    exp: &Experiment,
    allowed: &str,
    available: &str,
) -> Result<Vec<Option<Cc>>, String> {
    let allowed_list: Vec<&str> = allowed.split_whitespace().collect();
    let available_list: Vec<&str> = available.split_whitespace().collect();
    let mut out = Vec::new();
    let mut notes: Vec<(String, Vec<String>)> = Vec::new();
    let mut note = |what: String, variant: &str| match notes.iter_mut().find(|(k, _)| *k == what) {
        Some((_, vs)) => vs.push(variant.to_string()),
        None => notes.push((what, vec![variant.to_string()])),
    };
    for v in &exp.variants {
        let prefs: Vec<&str> = v.cc_preference.iter().map(|c| c.name()).collect();
        if prefs.is_empty() {
            out.push(None);
            continue;
        }
        let first = prefs[0];
        let Some(&pick) = prefs
            .iter()
            .find(|c| allowed_list.contains(c) || available_list.contains(c))
        else {
            return Err(format!(
                "variant {}: this kernel has none of cc = {:?} \
                 (net.ipv4.tcp_available_congestion_control = {available:?}); load the \
                 module (modprobe tcp_{first}) on the host",
                v.name, prefs
            ));
        };
        if pick != first {
            note(
                format!("congestion control {first} → {pick} (the kernel has no {first})"),
                &v.name,
            );
        }
        let per_route = !allowed_list.contains(&pick);
        if per_route {
            note(
                format!(
                    "congestion control {pick} set per route (congctl): namespaces here may \
                     only make {allowed:?} their default"
                ),
                &v.name,
            );
        }
        out.push(Some(Cc {
            name: pick.to_string(),
            per_route,
        }));
    }
    for (what, variants) in notes {
        eprintln!("speedy lab: {what}, for {}", variants.join(", "));
    }
    Ok(out)
}

/// Runs `prog args` in one side's namespace and returns its stdout; a failure says
/// what ran and what it printed.
pub(super) fn sh(topo: &Topology, side: Side, prog: &str, args: &[&str]) -> Result<String, String> {
    let o = topo
        .command(side, prog)
        .args(args)
        .output()
        .map_err(|e| format!("{prog}: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "{prog} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// What a variant sets inside the namespaces: sysctls under `net.ipv4` (both sides) and
/// per-route options of each side, computed before anything is applied so a lane can
/// tell whether the previous load left them so already.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Knobs {
    /// `(name under net.ipv4, value)`, set in both namespaces.
    sysctls: Vec<(&'static str, String)>,
    /// Per side (client, server): `(route option, value)`, `None` clearing it.
    routes: [Vec<(&'static str, Option<String>)>; 2],
}

impl Knobs {
    /// The knobs of variant `v`: `cc` is the algorithm [`resolve_cc`] picked for it.
    pub(super) fn of(v: &Variant, cc: Option<&Cc>, default_cc: &str) -> Knobs {
        // The congestion control is always set: a variant without `cc` gets the
        // namespaces' default back, not the previous variant's choice (the value is
        // recorded in each row).
        let default = match cc {
            Some(c) if !c.per_route => &c.name,
            _ => default_cc,
        };
        let congctl = cc.filter(|c| c.per_route).map(|c| c.name.clone());
        Knobs {
            sysctls: vec![
                ("tcp_no_metrics_save", (v.no_metrics_save as u8).to_string()),
                (
                    "tcp_slow_start_after_idle",
                    (v.slow_start_after_idle.unwrap_or(true) as u8).to_string(),
                ),
                // RACK (bit 1 of tcp_recovery) and TLP (tcp_early_retrans 3, the
                // kernel's default) on, or both off.
                ("tcp_recovery", (v.rack_tlp as u8).to_string()),
                ("tcp_early_retrans", (3 * v.rack_tlp as u8).to_string()),
                ("tcp_congestion_control", default.to_string()),
            ],
            routes: [
                vec![
                    ("congctl", congctl.clone()),
                    ("initrwnd", v.initrwnd.map(|w| w.to_string())),
                ],
                vec![
                    ("congctl", congctl),
                    (
                        "initcwnd",
                        Some(v.initcwnd.unwrap_or(DEFAULT_INITCWND).to_string()),
                    ),
                    ("rto_min", v.rto_min_ms.map(|ms| format!("{ms}ms"))),
                ],
            ],
        }
    }
}

/// Applies `knobs` inside both namespaces (never on the host), unless `applied` says the
/// namespaces have them already; `applied` then holds them (`None` after a failure, so
/// the next load sets everything again). Sysctls are written by a thread in each
/// namespace, each side's routes changed by one `ip -batch`: no process per setting.
pub(super) fn apply_tcp_knobs(
    topo: &Topology,
    knobs: Knobs,
    applied: &mut Option<Knobs>,
) -> Result<(), String> {
    if applied.as_ref() == Some(&knobs) {
        return Ok(());
    }
    *applied = None;
    for (i, side) in [Side::Client, Side::Server].into_iter().enumerate() {
        write_sysctls(topo, side, &knobs.sysctls)?;
        set_route_options(topo, side, &knobs.routes[i])?;
    }
    *applied = Some(knobs);
    Ok(())
}

/// Writes `net.ipv4` sysctls in one side's namespace, from a thread in it.
fn write_sysctls(
    topo: &Topology,
    side: Side,
    set: &[(&'static str, String)],
) -> Result<(), String> {
    let set = set.to_vec();
    topo.spawn_in(side, move || {
        for (name, value) in &set {
            std::fs::write(format!("/proc/sys/net/ipv4/{name}"), value).map_err(|e| {
                std::io::Error::new(e.kind(), format!("sysctl net.ipv4.{name}={value}: {e}"))
            })?;
        }
        Ok(())
    })
    .join()
    .map_err(|_| "the sysctl thread panicked".to_string())?
    .map_err(|e| e.to_string())
}

/// Sets (or, with `None`, clears) per-route options (`congctl`, `initcwnd`, `initrwnd`,
/// `rto_min`) on every route of one namespace. `ip route show` prints a locked metric as
/// `rto_min lock 3s`, which `ip route replace` does not take back: `lock` words are
/// dropped (the lab locks nothing else), and each option's old value goes.
fn set_route_options(
    topo: &Topology,
    side: Side,
    options: &[(&'static str, Option<String>)],
) -> Result<(), String> {
    let routes = sh(topo, side, "ip", &["route", "show"])?;
    let mut batch = String::new();
    for r in routes.lines().filter(|l| !l.trim().is_empty()) {
        let mut words: Vec<&str> = r.split_whitespace().filter(|w| *w != "lock").collect();
        for (knob, _) in options {
            if let Some(i) = words.iter().position(|w| w == knob) {
                words.drain(i..(i + 2).min(words.len()));
            }
        }
        batch += "route replace ";
        batch += &words.join(" ");
        for (knob, value) in options {
            if let Some(v) = value {
                batch += &format!(" {knob} {v}");
            }
        }
        batch.push('\n');
    }
    sh_stdin(topo, side, "ip", &["-batch", "-"], &batch).map(|_| ())
}

/// Runs `prog args` in one side's namespace with `stdin`, and returns its stdout; a
/// failure says what ran and what it printed.
fn sh_stdin(
    topo: &Topology,
    side: Side,
    prog: &str,
    args: &[&str],
    stdin: &str,
) -> Result<String, String> {
    use std::io::Write;
    let mut child = topo
        .command(side, prog)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("{prog}: {e}"))?;
    let fed = child
        .stdin
        .take()
        .expect("piped")
        .write_all(stdin.as_bytes());
    let o = child
        .wait_with_output()
        .map_err(|e| format!("{prog}: {e}"))?;
    if !o.status.success() || fed.is_err() {
        return Err(format!(
            "{prog} {} <<< {:?}: {}",
            args.join(" "),
            stdin.trim(),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}
