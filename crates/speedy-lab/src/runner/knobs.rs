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

/// Applies a variant's TCP knobs inside both namespaces (never on the host): `cc` is
/// the algorithm [`resolve_cc`] picked for it.
pub(super) fn apply_tcp_knobs(
    topo: &Topology,
    v: &Variant,
    cc: Option<&Cc>,
    default_cc: &str,
) -> Result<(), String> {
    // The congestion control is always set: a variant without `cc` gets the namespaces'
    // default back, not the previous variant's choice (the value is recorded in each row).
    let default = match cc {
        Some(c) if !c.per_route => &c.name,
        _ => default_cc,
    };
    let set = [
        format!("net.ipv4.tcp_no_metrics_save={}", v.no_metrics_save as u8),
        format!(
            "net.ipv4.tcp_slow_start_after_idle={}",
            v.slow_start_after_idle.unwrap_or(true) as u8
        ),
        // RACK (bit 1 of tcp_recovery) and TLP (tcp_early_retrans 3, the kernel's
        // default) on, or both off.
        format!("net.ipv4.tcp_recovery={}", v.rack_tlp as u8),
        format!("net.ipv4.tcp_early_retrans={}", 3 * v.rack_tlp as u8),
        format!("net.ipv4.tcp_congestion_control={default}"),
    ];
    let args: Vec<&str> = ["-q", "-w"]
        .into_iter()
        .chain(set.iter().map(String::as_str))
        .collect();
    for side in [Side::Client, Side::Server] {
        // One process per namespace and load, all five settings in it.
        sh(topo, side, "sysctl", &args)?;
        set_route_option(
            topo,
            side,
            "congctl",
            cc.filter(|c| c.per_route).map(|c| c.name.clone()),
        )?;
    }
    set_route_option(
        topo,
        Side::Server,
        "initcwnd",
        Some(v.initcwnd.unwrap_or(DEFAULT_INITCWND).to_string()),
    )?;
    set_route_option(
        topo,
        Side::Client,
        "initrwnd",
        v.initrwnd.map(|w| w.to_string()),
    )?;
    set_route_option(
        topo,
        Side::Server,
        "rto_min",
        v.rto_min_ms.map(|ms| format!("{ms}ms")),
    )?;
    Ok(())
}

/// Sets (or, with `None`, clears) a per-route option (`initcwnd`, `initrwnd`,
/// `rto_min`) on every route of one namespace. `ip route show` prints a locked metric as
/// `rto_min lock 3s`, which `ip route replace` does not take back: `lock` words are
/// dropped (the lab locks nothing else), and the old value of `knob` goes.
fn set_route_option(
    topo: &Topology,
    side: Side,
    knob: &str,
    value: Option<String>,
) -> Result<(), String> {
    let routes = sh(topo, side, "ip", &["route", "show"])?;
    for r in routes.lines().filter(|l| !l.trim().is_empty()) {
        let mut words: Vec<&str> = r.split_whitespace().filter(|w| *w != "lock").collect();
        if let Some(i) = words.iter().position(|w| *w == knob) {
            words.drain(i..(i + 2).min(words.len()));
        }
        let mut args = vec!["route", "replace"];
        args.extend(words.iter());
        if let Some(v) = &value {
            args.extend([knob, v.as_str()]);
        }
        sh(topo, side, "ip", &args)?;
    }
    Ok(())
}
