//! The sections that tie a run to its conditions: what each variant ran under (pages,
//! congestion control, windows, header compression, connection limits) and how that
//! differs from the SPDY whitepaper's; the whitepaper's Tables 1-3 in its own layout with
//! the published figures beside the measured ones; and the factor chain ("where SPDY's
//! advantage went"), each step's speedup against its own HTTP/1.1 with its CI.
//!
//! The published figures are printed for comparison only: nothing in the lab reads them.

use super::charts::{self, Point};
use super::html::{self, table, with_ci, Cell};
use super::sections::{network_speedup_cell, reduction_cell};
use super::svg;
use super::Ctx;
use crate::results::Row;
use crate::stats::VariantInfo;
use speedy_net::Protocol;
use speedy_server::PushPolicy;

/// Where the published figures come from.
const SOURCE: &str = "SPDY whitepaper, \"SPDY: An experimental protocol for a faster web\" \
(chromium.org/spdy/spdy-whitepaper, 2009), Tables 1-3: 25 of the top 100 sites, 10 loads each, \
average page load time; its \"speedup\" is the reduction of the average, 100 × (1 − SPDY / HTTP)";

/// A whitepaper variant by what it ran, not what it is called: HTTP is the experiment's
/// baseline; each SPDY row is the variant compared with the baseline (no `against`) whose
/// rows record that protocol, TLS and set-up. Rows written before the set-up was recorded
/// are matched by the name `speedy lab whitepaper` gives the variant (`legacy`), which
/// the table also shows when no variant ran the row.
#[derive(Clone, Copy)]
struct Role {
    protocol: Protocol,
    tls: bool,
    single_domain: bool,
    push: bool,
    hint: bool,
    prefetch: bool,
    legacy: &'static str,
}

/// SPDY/3.1, the SPDY of the whitepaper's rows.
const SPDY: Protocol = Protocol::Spdy(spdy::Version::V3_1);
/// The whitepaper's HTTP: the baseline.
const HTTP: Role = Role {
    protocol: Protocol::Http1,
    tls: false,
    single_domain: false,
    push: false,
    hint: false,
    prefetch: false,
    legacy: "http1",
};
/// SPDY basic, one session per origin, over TCP.
const SPDY_BASIC: Role = Role {
    protocol: SPDY,
    legacy: "spdy",
    ..HTTP
};
/// SPDY basic, one session for every origin, over TCP.
const SPDY_SINGLE: Role = Role {
    single_domain: true,
    legacy: "spdy-single",
    ..SPDY_BASIC
};
/// SPDY single-domain with server push.
const SPDY_PUSH: Role = Role {
    push: true,
    legacy: "spdy-single-push",
    ..SPDY_SINGLE
};
/// SPDY single-domain with server hint.
const SPDY_HINT: Role = Role {
    hint: true,
    legacy: "spdy-single-hint",
    ..SPDY_SINGLE
};
/// SPDY single-domain over TLS.
const SPDY_TLS: Role = Role {
    tls: true,
    legacy: "spdy-single-tls",
    ..SPDY_SINGLE
};
/// SPDY single-domain over TLS with client prefetch.
const SPDY_PREFETCH: Role = Role {
    prefetch: true,
    legacy: "spdy-single-prefetch-tls",
    ..SPDY_TLS
};

impl Role {
    /// Whether `v` ran this row.
    fn fits(&self, v: &VariantInfo) -> bool {
        if self.protocol == Protocol::Http1 {
            return v.baseline && v.protocol == Protocol::Http1;
        }
        if v.against.is_some() || v.transport.is_some() || v.protocol != self.protocol {
            return false;
        }
        match v.setup {
            Some(s) => {
                v.tls == self.tls
                    && s.single_domain == self.single_domain
                    && (s.push != PushPolicy::None) == self.push
                    && s.hint == self.hint
                    && s.prefetch == self.prefetch
            }
            None => v.name == self.legacy,
        }
    }

    /// The name of the first variant that ran this row.
    fn variant<'a>(&self, cx: &'a Ctx) -> Option<&'a str> {
        cx.stats
            .variants
            .iter()
            .find(|v| self.fits(v))
            .map(|v| v.name.as_str())
    }
}

/// The network of the rows run under `linkem`'s profile `profile`, found by its
/// conditions (its description), not by its name.
fn network_of<'a>(cx: &'a Ctx, profile: &str) -> Option<&'a str> {
    let desc = crate::experiment::profile_desc(profile)?;
    cx.stats
        .networks
        .iter()
        .find(|n| n.sweep.is_none() && n.desc == desc)
        .map(|n| n.name.as_str())
}

/// Table 1: (row label, the variant that runs it, DSL average ms, DSL speedup %, cable
/// average ms, cable speedup %).
const TABLE1: [(&str, Role, f64, f64, f64, f64); 7] = [
    ("HTTP", HTTP, 3111.916, 0.0, 2348.188, 0.0),
    (
        "SPDY basic multi-domain connection / TCP",
        SPDY_BASIC,
        2242.756,
        27.93,
        1325.46,
        43.55,
    ),
    (
        "SPDY basic single-domain connection / TCP",
        SPDY_SINGLE,
        1695.72,
        45.51,
        933.836,
        60.23,
    ),
    (
        "SPDY single-domain + server push / TCP",
        SPDY_PUSH,
        1671.28,
        46.29,
        950.764,
        59.51,
    ),
    (
        "SPDY single-domain + server hint / TCP",
        SPDY_HINT,
        1608.928,
        48.30,
        856.356,
        63.53,
    ),
    (
        "SPDY basic single-domain / SSL",
        SPDY_TLS,
        1899.744,
        38.95,
        1099.444,
        53.18,
    ),
    (
        "SPDY single-domain + client prefetch / SSL",
        SPDY_PREFETCH,
        1781.864,
        42.74,
        1047.308,
        55.40,
    ),
];

/// Table 2 (cable, by loss): loss fraction, HTTP ms, SPDY basic (TCP) ms, speedup %.
const TABLE2: [(f64, f64, f64, f64); 6] = [
    (0.0, 1152.0, 1016.0, 11.81),
    (0.005, 1638.0, 1105.0, 32.54),
    (0.01, 2060.0, 1200.0, 41.75),
    (0.015, 2372.0, 1394.0, 41.23),
    (0.02, 2904.0, 1537.0, 47.7),
    (0.025, 3028.0, 1707.0, 43.63),
];

/// Table 3 (cable, by RTT): RTT ms, HTTP ms, SPDY basic (TCP) ms, speedup %.
const TABLE3: [(f64, f64, f64, f64); 7] = [
    (20.0, 1240.0, 1087.0, 12.34),
    (40.0, 1571.0, 1279.0, 18.59),
    (60.0, 1909.0, 1526.0, 20.06),
    (80.0, 2268.0, 1727.0, 23.85),
    (120.0, 2927.0, 2240.0, 23.47),
    (160.0, 3650.0, 2772.0, 24.05),
    (200.0, 4498.0, 3293.0, 26.79),
];

/// The conditions a row ran under, as (name, value) pairs in a fixed order. Settings
/// of Linux's TCP are `–` (not compared) for a load that did not run over TCP: QUIC (h3)
/// has its own loss recovery (RFC 9002's time threshold and probe timeout) and takes
/// only the congestion control and initial window from the variant; SCTP has its own
/// congestion control, window and recovery (RFC 4960).
fn conditions(r: &Row) -> Vec<(&'static str, String)> {
    let quic = r.protocol == speedy_net::Protocol::H3;
    let sctp = r.transport == Some(speedy_net::Carrier::Sctp);
    let tcp_only = |v: String| if quic || sctp { "–".to_string() } else { v };
    let not_sctp = |v: String| if sctp { "–".to_string() } else { v };
    let or_dash = |s: &str| {
        if s.is_empty() {
            "–".to_string()
        } else {
            s.to_string()
        }
    };
    let num = |n: u32| {
        if n == 0 {
            "–".to_string()
        } else {
            n.to_string()
        }
    };
    // Header compression: SPDY's setting for SPDY; the others compress (or not) their own
    // way, which the whitepaper's SPDY column does not compare.
    let headers = match r.protocol {
        speedy_net::Protocol::Spdy(_) => or_dash(&r.header_compression),
        speedy_net::Protocol::H2 => "– (HPACK)".into(),
        speedy_net::Protocol::H3 => "– (QPACK)".into(),
        _ => "–".into(),
    };
    // QUIC's congestion control is quinn's on the server, not the namespaces' TCP one.
    let cc = if quic {
        r.quic_cc.map_or("–".into(), |c| format!("{c} (quinn)"))
    } else {
        not_sctp(or_dash(&r.tcp_cc))
    };
    vec![
        ("pages", or_dash(&r.calibration)),
        ("congestion control", cc),
        ("initcwnd", not_sctp(num(r.initcwnd))),
        (
            "initrwnd",
            tcp_only(r.initrwnd.map_or("kernel".into(), |w| w.to_string())),
        ),
        (
            "slow start after idle",
            tcp_only(if r.slow_start_after_idle { "on" } else { "off" }.into()),
        ),
        (
            "TCP RACK and tail loss probes",
            tcp_only(if r.rack_tlp { "on" } else { "off" }.into()),
        ),
        (
            "TCP metrics cache",
            tcp_only(if r.no_metrics_save { "off" } else { "on" }.into()),
        ),
        ("SPDY headers", headers),
        ("HTTP/1.1 conns per host", num(r.connections_per_host)),
        ("HTTP/1.1 conns in all", num(r.max_connections)),
    ]
}

/// The whitepaper's conditions in the same order (lab-facts §6; `?` where it is silent).
const WHITEPAPER: [(&str, &str); 10] = [
    ("pages", "web-2010"),
    ("congestion control", "cubic"),
    ("initcwnd", "3"),
    ("initrwnd", "kernel"),
    ("slow start after idle", "on"),
    // Linux had neither when the whitepaper was measured (2009): tail loss probes came
    // with commit 6ba8a3b19e76 (March 2013, Linux 3.10), RACK with 4f41b1c58a32
    // (October 2015, Linux 4.4).
    ("TCP RACK and tail loss probes", "off"),
    // Not stated by the whitepaper (Linux of 2009 cached metrics by default; the lab
    // turns the cache off so that loads do not learn from each other): not compared.
    ("TCP metrics cache", "?"),
    ("SPDY headers", "zlib"),
    ("HTTP/1.1 conns per host", "6"),
    ("HTTP/1.1 conns in all", "32"),
];

/// Each variant's conditions, one value per condition (`a / b` when its rows differ).
fn variant_conditions(cx: &Ctx, variant: &str) -> Vec<(&'static str, String)> {
    let rows: Vec<&Row> = cx.rows.iter().filter(|r| r.variant == variant).collect();
    let mut out: Vec<(&'static str, Vec<String>)> = Vec::new();
    for r in rows {
        for (k, v) in conditions(r) {
            match out.iter_mut().find(|(n, _)| *n == k) {
                Some((_, vs)) if !vs.contains(&v) => vs.push(v),
                Some(_) => {}
                None => out.push((k, vec![v])),
            }
        }
    }
    out.into_iter().map(|(k, v)| (k, v.join(" / "))).collect()
}

/// What each variant ran under, and where that differs from the whitepaper.
pub fn conditions_section(cx: &mut Ctx) -> String {
    if cx.rows.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = WHITEPAPER.iter().map(|(k, _)| *k).collect();
    let mut header: Vec<(&str, bool)> = vec![("Variant", true)];
    header.extend(names.iter().map(|n| (*n, true)));
    // The whitepaper's own conditions first, so each column reads against them.
    let mut wp = vec![Cell::raw("<i>the whitepaper</i>".into(), "l")];
    wp.extend(WHITEPAPER.iter().map(|(_, v)| Cell::text(v)));
    let mut rows = vec![(wp, false)];
    let mut notes = Vec::new();
    for (i, v) in cx.stats.variants.iter().enumerate() {
        let conds = variant_conditions(cx, &v.name);
        let mut cells = vec![Cell::raw(
            html::swatch(cx.style(&v.name).colour, &cx.variant_label(&v.name)),
            "l",
        )];
        let mut differs = Vec::new();
        for (k, want) in WHITEPAPER {
            let got = conds
                .iter()
                .find(|(n, _)| *n == k)
                .map_or("–".to_string(), |(_, v)| v.clone());
            // `–…`: not recorded, or a setting the load did not use; `cubic (quinn)` is
            // compared as `cubic`.
            let cmp = got.trim_end_matches(" (quinn)");
            if cmp != want && !got.starts_with('–') && want != "?" {
                differs.push(format!("{k} {got}"));
            }
            cells.push(Cell::text(got));
        }
        if !differs.is_empty() {
            notes.push(format!(
                "<li><b>{}</b>: {}</li>",
                svg::esc(&v.name),
                svg::esc(&differs.join(", "))
            ));
        }
        rows.push((cells, i == 0));
    }
    let mut out = table(&header, &rows);
    if notes.is_empty() {
        out.push_str(&html::p("Not as in the whitepaper: nothing."));
    } else {
        out.push_str(&format!(
            "<p class=\"note\">Not as in the whitepaper:</p><ul class=\"notes\">{}</ul>",
            notes.join("")
        ));
    }
    out.push_str(&html::p(
        "Recorded per load in results.jsonl. The whitepaper's conditions (lab-facts §6): pages \
         of its era (web-2010: 320 KB, 44 resources, 7 hosts), CUBIC with the RFC 3390 initial \
         window of 3 segments and Linux's loss recovery of 2009 (no RACK, no tail loss probes), \
         SPDY headers in one zlib context (before CRIME), Chrome's 6 connections per host. When the host does not let namespaces use CUBIC the lab runs the \
         next algorithm the variant names and says so before any load; the list under the \
         table shows every such difference. – : not recorded, or a TCP setting that a load over QUIC \
         (h3: its own loss recovery, the variant's congestion control and initial window) or \
         SCTP (its own congestion control and recovery) does not use.",
    ));
    out
}

/// Mean onLoad of a variant on a network.
fn mean_ms(cx: &Ctx, network: &str, variant: &str) -> Option<f64> {
    cx.stats
        .network_cell(network, variant)
        .map(|c| c.summary.mean)
}

fn pct(http: f64, spdy: f64) -> String {
    format!("{:.1}%", 100.0 * (1.0 - spdy / http))
}

/// The sweep points of `param` (`loss` or `rtt_ms`): (value, network), by value.
fn sweep_points(cx: &Ctx, param: &str) -> Vec<(f64, String)> {
    let mut v: Vec<(f64, String)> = cx
        .stats
        .networks
        .iter()
        .filter_map(|n| {
            n.sweep
                .as_ref()
                .filter(|s| s.param == param)
                .map(|s| (s.value, n.name.clone()))
        })
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// Tables 1-3 in the whitepaper's layout, measured beside published.
pub fn whitepaper_section(cx: &mut Ctx) -> String {
    let (losses, rtts) = (sweep_points(cx, "loss"), sweep_points(cx, "rtt_ms"));
    // The tables compare the whitepaper's HTTP with SPDY basic: without those two
    // variants there is nothing to print.
    if HTTP.variant(cx).is_none() || SPDY_BASIC.variant(cx).is_none() {
        return String::new();
    }
    let nets = [
        network_of(cx, "whitepaper-dsl"),
        network_of(cx, "whitepaper-cable"),
    ];
    if nets == [None, None] && losses.is_empty() && rtts.is_empty() {
        return String::new();
    }
    let mut out = html::p(&format!(
        "Measured here beside the published figures ({SOURCE}). \"Reduction\" is computed as the \
         whitepaper computes it, from the average load times; the speedup with its 95% CI is the \
         lab's own (geometric mean of per-page ratios, see Summary). Published figures are shown \
         for comparison only; nothing is tuned to them."
    ));
    out.push_str(&table1(cx));
    out.push_str(&sweep_table(
        cx,
        "Table 2: by packet loss (cable)",
        &losses,
        &TABLE2,
        |v| format!("{}%", v * 100.0),
    ));
    out.push_str(&sweep_table(
        cx,
        "Table 3: by RTT (cable)",
        &rtts,
        &TABLE3,
        |v| format!("{v} ms"),
    ));
    out
}

/// Table 1 (DSL and cable, 1% loss): each of its rows measured on the whitepaper's two
/// networks beside the published average and reduction.
fn table1(cx: &Ctx) -> String {
    let mut rows = Vec::new();
    let http = HTTP.variant(cx).unwrap_or(HTTP.legacy);
    for (label, role, dsl, dsl_pct, cable, cable_pct) in TABLE1 {
        let var = role.variant(cx).unwrap_or(role.legacy);
        // The variant under the whitepaper's row name, to keep the table narrow.
        let mut cells = vec![Cell::raw(
            format!(
                r#"{}<br><span class="ci">{}</span>"#,
                svg::esc(label),
                svg::esc(var)
            ),
            "l",
        )];
        for (profile, ms, p) in [
            ("whitepaper-dsl", dsl, dsl_pct),
            ("whitepaper-cable", cable, cable_pct),
        ] {
            // A network the rows lack gives dashes, as a variant they lack does.
            let net = network_of(cx, profile).unwrap_or(profile);
            let measured = mean_ms(cx, net, var);
            let base = mean_ms(cx, net, http);
            cells.push(Cell::num(measured.map_or("–".into(), svg::ms)));
            cells.push(Cell::num(match (measured, base) {
                (Some(m), Some(h)) if role.protocol != Protocol::Http1 => pct(h, m),
                _ => "–".into(),
            }));
            cells.push(network_speedup_cell(&cx.stats, net, var));
            cells.push(Cell::num(if p > 0.0 {
                format!("{ms:.0} ({p:.1}%)")
            } else {
                format!("{ms:.0}")
            }));
        }
        rows.push((cells, false));
    }
    let mut out = html::h3("Table 1: average page load times (1% loss)");
    out.push_str(&table(
        &[
            ("Whitepaper row (variant)", true),
            ("DSL ms", false),
            ("DSL reduction", false),
            ("DSL speedup [CI]", false),
            ("DSL published ms (reduction)", false),
            ("Cable ms", false),
            ("Cable reduction", false),
            ("Cable speedup [CI]", false),
            ("Cable published ms (reduction)", false),
        ],
        &rows,
    ));
    out
}

/// Table 2 or 3 (`title`): HTTP and SPDY basic at each sweep point (value, network),
/// the value written by `fmt`, beside the `published` row of the same value (value,
/// HTTP ms, SPDY ms, reduction %). Empty without points.
fn sweep_table(
    cx: &Ctx,
    title: &str,
    points: &[(f64, String)],
    published: &[(f64, f64, f64, f64)],
    fmt: fn(f64) -> String,
) -> String {
    if points.is_empty() {
        return String::new();
    }
    let http = HTTP.variant(cx).unwrap_or(HTTP.legacy);
    let spdy = SPDY_BASIC.variant(cx).unwrap_or(SPDY_BASIC.legacy);
    let mut out = html::h3(title);
    let mut rows = Vec::new();
    for (value, net) in points.iter() {
        let (h, s) = (mean_ms(cx, net, http), mean_ms(cx, net, spdy));
        let pubd = published.iter().find(|p| (p.0 - value).abs() < 1e-9);
        rows.push((
            vec![
                Cell::text(fmt(*value)),
                Cell::num(h.map_or("–".into(), svg::ms)),
                Cell::num(s.map_or("–".into(), svg::ms)),
                Cell::num(match (h, s) {
                    (Some(h), Some(s)) => pct(h, s),
                    _ => "–".into(),
                }),
                network_speedup_cell(&cx.stats, net, spdy),
                Cell::num(pubd.map_or("–".into(), |p| format!("{:.0}", p.1))),
                Cell::num(pubd.map_or("–".into(), |p| format!("{:.0}", p.2))),
                Cell::num(pubd.map_or("–".into(), |p| format!("{:.1}%", p.3))),
            ],
            false,
        ));
    }
    out.push_str(&table(
        &[
            ("", true),
            ("HTTP ms", false),
            ("SPDY ms", false),
            ("Reduction", false),
            ("Speedup [CI]", false),
            ("HTTP ms (published)", false),
            ("SPDY ms (published)", false),
            ("Reduction (published)", false),
        ],
        &rows,
    ));
    out
}

/// The factor chain: every SPDY variant that names the HTTP/1.1 variant it is against, in
/// order (other comparisons with `against`, such as h3 against HTTP/1.1 over TLS, are
/// not steps of SPDY's chain).
pub fn factors_section(cx: &mut Ctx) -> String {
    let http1 = |name: &str| {
        cx.stats
            .variant(name)
            .is_some_and(|v| v.protocol == speedy_net::Protocol::Http1)
    };
    let steps: Vec<(String, String)> = cx
        .stats
        .variants
        .iter()
        .filter(|v| matches!(v.protocol, speedy_net::Protocol::Spdy(_)))
        .filter_map(|v| v.against.clone().map(|a| (v.name.clone(), a)))
        .filter(|(_, a)| http1(a))
        .collect();
    if steps.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for net in cx.main_networks.clone() {
        let chain = factor_chain(cx, &net, &steps);
        if chain.rows.is_empty() {
            continue;
        }
        out.push_str(&html::h3(&net));
        out.push_str(&factor_chart(cx, &net, &chain));
        out.push_str(&table(
            &[
                ("Step", false),
                ("Variant", true),
                ("Changed from the step before", true),
                ("Its HTTP/1.1 mean (ms)", false),
                ("SPDY mean (ms) [CI]", false),
                ("Speedup [95% CI]", false),
                ("Load time change", false),
            ],
            &chain.rows,
        ));
    }
    out
}

/// The factor chain on one network: its table's rows and its chart's points.
struct FactorChain {
    /// One row per step with loads on the network.
    rows: Vec<(Vec<Cell>, bool)>,
    /// One point per step with a speedup, at the step's index.
    points: Vec<Point>,
    /// The variant of each point.
    labels: Vec<String>,
}

/// The factor chain on `net` from `steps` (variant, the variant it is against): each
/// step with loads there, what changed from the step before, its baseline's mean, its
/// mean and its speedup.
fn factor_chain(cx: &Ctx, net: &str, steps: &[(String, String)]) -> FactorChain {
    let mut chain = FactorChain {
        rows: Vec::new(),
        points: Vec::new(),
        labels: Vec::new(),
    };
    let mut previous: Option<Vec<(&'static str, String)>> = None;
    for (i, (v, against)) in steps.iter().enumerate() {
        let Some(cell) = cx.stats.network_cell(net, v) else {
            continue;
        };
        let conds = variant_conditions(cx, v);
        let changed = changed_from(&conds, previous.as_deref());
        previous = Some(conds);
        let base = mean_ms(cx, net, against);
        let sp = cell.speedup.as_ref();
        if let Some(s) = sp {
            chain.points.push(Point {
                x: i as f64,
                y: s.speedup,
                ci: Some((s.ci.low, s.ci.high)),
                title: format!("{v}: {:.2}× [{:.2}, {:.2}]", s.speedup, s.ci.low, s.ci.high),
            });
            chain.labels.push(v.clone());
        }
        chain.rows.push((
            vec![
                Cell::text(format!("{}", i + 1)),
                Cell::text(v),
                Cell::text(changed),
                Cell::num(base.map_or("–".into(), svg::ms)),
                Cell::raw(
                    with_ci(
                        &svg::ms(cell.summary.mean),
                        &svg::ms(cell.summary.ci.low),
                        &svg::ms(cell.summary.ci.high),
                    ),
                    "",
                ),
                network_speedup_cell(&cx.stats, net, v),
                reduction_cell(sp),
            ],
            false,
        ));
    }
    chain
}

/// What a step changed from the step before (`previous`'s conditions): `(start)` for the
/// first step, `nothing`, or each changed condition with its old and new value.
fn changed_from(
    conds: &[(&'static str, String)],
    previous: Option<&[(&'static str, String)]>,
) -> String {
    let Some(p) = previous else {
        return "(start)".to_string();
    };
    let d: Vec<String> = conds
        .iter()
        .zip(p)
        .filter(|(a, b)| a.1 != b.1)
        .map(|(a, b)| format!("{} {} → {}", a.0, b.1, a.1))
        .collect();
    if d.is_empty() {
        "nothing".into()
    } else {
        d.join("; ")
    }
}

/// The factor chain's chart on `net`: SPDY's speedup at each step with a speedup (one
/// after another on the x axis, labelled by variant), with its CI.
fn factor_chart(cx: &Ctx, net: &str, chain: &FactorChain) -> String {
    let label_of = |x: f64| -> String {
        chain
            .labels
            .get(x.round().max(0.0) as usize)
            .cloned()
            .unwrap_or_default()
    };
    let series = charts::Series {
        name: "SPDY speedup over its step's HTTP/1.1".into(),
        style: svg::style(1),
    };
    html::figure(
        &charts::lines(
            "factor chain",
            &[(
                series,
                chain
                    .points
                    .iter()
                    .enumerate()
                    .map(|(k, p)| Point {
                        x: k as f64,
                        ..p.clone()
                    })
                    .collect(),
            )],
            "step (one factor changed from the step before)",
            "speedup (> 1: SPDY faster)",
            &label_of,
        ),
        &cx.caption(
            &[net.to_string()],
            None,
            "Where SPDY's advantage went: each step changes one condition from the step \
             before (the table says which) and compares SPDY with HTTP/1.1 under the same \
             conditions, pages and link; error bars are 95% bootstrap CIs over pages and runs.",
        ),
    )
}
