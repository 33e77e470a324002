//! Experiment files (TOML) and the built-in experiments.
//!
//! An experiment file names its pages (`[pages]`), networks (`[[network]]`, `[[sweep]]`)
//! and protocol variants (`[[variant]]`); every key, with an example of each, is in
//! docs/lab.md ("Experiment files"), the one list of them. A variant's keys are read,
//! checked and applied to the loader's and the server's specs in `experiment/variant.rs`.
//!
//! Unknown keys and impossible values are refused before anything runs, with the line.

mod variant;

use variant::VariantSpec;
pub use variant::{CcName, Client, ProxyKind, Transport, Variant};

use linkem::{LinkConfig, LossModel, Server};
use serde::Deserialize;
use speedy_archive::synth::{calibration, Calibration};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;

/// A parsed, validated experiment.
#[derive(Clone, Debug)]
pub struct Experiment {
    /// Name.
    pub name: String,
    /// Runs per cell.
    pub runs: u32,
    /// Seed.
    pub seed: u64,
    /// Pause between loads.
    pub think_time: Duration,
    /// Per-load timeout.
    pub timeout: Duration,
    /// Visit each page twice on the same connections, this long apart, and measure the
    /// second visit.
    pub revisit_after: Option<Duration>,
    /// Make each load a browsing session over every page (in [`Experiment::session_order`]),
    /// this long apart, each visit measured.
    pub session_think: Option<Duration>,
    /// Where the pages come from.
    pub pages: Pages,
    /// `[pages] recorded_think_time = true`: the replay servers also wait, before each
    /// response, the server think time its recording saw (`speedy serve
    /// --recorded-think-time`); off by default, as in Mahimahi.
    pub recorded_think_time: bool,
    /// Networks, sweeps expanded.
    pub networks: Vec<Network>,
    /// Protocol variants.
    pub variants: Vec<Variant>,
}

/// Page source.
#[derive(Clone, Debug)]
pub enum Pages {
    /// Synthesize this many pages with the experiment's seed, from a calibration.
    Synth(usize, &'static Calibration),
    /// An archive directory, optionally only some pages.
    Archive(PathBuf, Option<Vec<String>>),
}

/// One emulated network.
#[derive(Clone, Debug)]
pub struct Network {
    /// Name (unique in the experiment).
    pub name: String,
    /// One line for captions.
    pub desc: String,
    /// The link.
    pub link: LinkConfig,
    /// Set for sweep points: (sweep name, parameter, value).
    pub sweep: Option<(String, String, f64)>,
    /// Only these variants run on this network (all when `None`).
    pub variants: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    name: Option<String>,
    runs: Option<Spanned<u32>>,
    seed: Option<u64>,
    think_time_ms: Option<u64>,
    revisit_after_ms: Option<u64>,
    session_think_ms: Option<u64>,
    timeout_s: Option<Spanned<f64>>,
    pages: Spanned<PagesSpec>,
    #[serde(default)]
    network: Vec<Spanned<NetSpec>>,
    #[serde(default)]
    sweep: Vec<Spanned<SweepSpec>>,
    #[serde(default)]
    variant: Vec<Spanned<VariantSpec>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PagesSpec {
    synth: Option<usize>,
    calibration: Option<String>,
    archive: Option<PathBuf>,
    select: Option<Vec<String>>,
    recorded_think_time: Option<bool>,
}

#[derive(Deserialize, Clone, Default)]
#[serde(deny_unknown_fields)]
struct NetSpec {
    name: Option<String>,
    profile: Option<String>,
    down: Option<String>,
    up: Option<String>,
    rtt_ms: Option<f64>,
    loss: Option<f64>,
    loss_down: Option<f64>,
    loss_up: Option<f64>,
    radio: Option<String>,
    queue: Option<String>,
    trace: Option<String>,
    variants: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepSpec {
    name: Option<String>,
    base: String,
    rtt_ms: Option<OneOrMany>,
    loss: Option<OneOrMany>,
    variants: Option<Vec<String>>,
}

#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum OneOrMany {
    One(f64),
    Many(Vec<f64>),
}

fn line_of(text: &str, span: Range<usize>) -> usize {
    text[..span.start.min(text.len())].matches('\n').count() + 1
}

/// Parses and validates an experiment; `origin` names it in errors (a file name).
/// Relative archive paths are taken from `base_dir`.
pub fn parse(text: &str, origin: &str, base_dir: &Path) -> Result<Experiment, String> {
    let spec: FileSpec = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| format!(":{}", line_of(text, s)))
            .unwrap_or_default();
        // serde lists every allowed key; a line names the wrong one and where to look.
        let msg = e.message();
        let msg = match msg.split_once(", expected one of") {
            Some((head, _)) => format!("{head} (the keys of each table: docs/lab.md)"),
            None => msg.to_string(),
        };
        format!("{origin}{line}: {msg}")
    })?;
    let at = |span: Range<usize>, msg: String| format!("{origin}:{}: {msg}", line_of(text, span));
    let runs = spec.runs.as_ref().map_or(Ok(3), |r| {
        if *r.get_ref() == 0 {
            Err(at(r.span(), "runs must be at least 1".into()))
        } else {
            Ok(*r.get_ref())
        }
    })?;
    let timeout = match &spec.timeout_s {
        Some(t) if !(*t.get_ref() > 0.0 && t.get_ref().is_finite()) => {
            return Err(at(t.span(), "timeout_s must be a positive number".into()))
        }
        Some(t) => Duration::from_secs_f64(*t.get_ref()),
        None => Duration::from_secs(120),
    };
    let pages = pages_of(&spec, base_dir, &at)?;
    if spec.revisit_after_ms.is_some() && spec.session_think_ms.is_some() {
        return Err(format!(
            "{origin}: revisit_after_ms and session_think_ms: a load either revisits its page \
             or browses every page; choose one"
        ));
    }
    let networks = networks_of(&spec, origin, base_dir, &at)?;
    let variants = variant::variants_of(&spec.variant, origin, &pages, &at)?;
    variant::check_experiment_wide(
        &variants,
        spec.revisit_after_ms.is_some(),
        spec.session_think_ms.is_some(),
    )
    .map_err(|e| format!("{origin}: {e}"))?;
    for n in &networks {
        for v in n.variants.iter().flatten() {
            if !variants.iter().any(|x: &Variant| &x.name == v) {
                return Err(format!(
                    "{origin}: network {:?} lists variant {v:?}, which no [[variant]] defines",
                    n.name
                ));
            }
        }
    }

    Ok(Experiment {
        name: spec.name.unwrap_or_else(|| {
            origin
                .trim_end_matches(".toml")
                .rsplit('/')
                .next()
                .unwrap_or("experiment")
                .to_string()
        }),
        runs,
        seed: spec.seed.unwrap_or(1),
        think_time: Duration::from_millis(spec.think_time_ms.unwrap_or(0)),
        revisit_after: spec.revisit_after_ms.map(Duration::from_millis),
        session_think: spec.session_think_ms.map(Duration::from_millis),
        timeout,
        recorded_think_time: spec.pages.get_ref().recorded_think_time.unwrap_or(false),
        pages,
        networks,
        variants,
    })
}

/// `[pages]`: synthesized pages of a calibration, or an archive's (relative to
/// `base_dir`).
fn pages_of(
    spec: &FileSpec,
    base_dir: &Path,
    at: &dyn Fn(Range<usize>, String) -> String,
) -> Result<Pages, String> {
    let ps = spec.pages.get_ref();
    if ps.synth.is_some() && ps.recorded_think_time.is_some() {
        return Err(at(
            spec.pages.span(),
            "pages.recorded_think_time applies to an archive (of a recording), not to \
             synth = N"
                .into(),
        ));
    }
    Ok(match (ps.synth, &ps.archive) {
        (Some(0), _) => {
            return Err(at(
                spec.pages.span(),
                "pages.synth must be at least 1".into(),
            ))
        }
        (Some(n), None) => Pages::Synth(
            n,
            calibration(ps.calibration.as_deref().unwrap_or("cellular-2013"))
                .map_err(|e| at(spec.pages.span(), format!("pages.calibration: {e}")))?,
        ),
        (None, Some(_)) if ps.calibration.is_some() => {
            return Err(at(
                spec.pages.span(),
                "pages.calibration applies to synth = N, not to an archive".into(),
            ))
        }
        (None, Some(dir)) => {
            let dir = if dir.is_absolute() {
                dir.clone()
            } else {
                base_dir.join(dir)
            };
            if !dir.join("archive.json").is_file() {
                return Err(at(
                    spec.pages.span(),
                    format!(
                        "pages.archive: {} has no archive.json (make one with `speedy corpus`)",
                        dir.display()
                    ),
                ));
            }
            Pages::Archive(dir, ps.select.clone())
        }
        _ => {
            return Err(at(
                spec.pages.span(),
                "[pages] needs exactly one of synth = N or archive = \"DIR\"".into(),
            ))
        }
    })
}

/// The experiment's networks: each `[[network]]`, then each `[[sweep]]` expanded into
/// one network per value; names must be unique.
fn networks_of(
    spec: &FileSpec,
    origin: &str,
    base_dir: &Path,
    at: &dyn Fn(Range<usize>, String) -> String,
) -> Result<Vec<Network>, String> {
    let mut networks = Vec::new();
    for n in &spec.network {
        networks.push(network(n.get_ref(), None, base_dir).map_err(|e| at(n.span(), e))?);
    }
    for s in &spec.sweep {
        let sw = s.get_ref();
        let base = NetSpec {
            profile: Some(sw.base.clone()),
            variants: sw.variants.clone(),
            ..Default::default()
        };
        let sweep_name = sw
            .name
            .clone()
            .unwrap_or_else(|| format!("sweep over {}", sw.base));
        let list = |v: &Option<OneOrMany>| match v {
            None => vec![],
            Some(OneOrMany::One(x)) => vec![*x],
            Some(OneOrMany::Many(xs)) => xs.clone(),
        };
        let (losses, rtts) = (list(&sw.loss), list(&sw.rtt_ms));
        let (param, values) = match (losses.len() > 1, rtts.len() > 1) {
            (true, false) => ("loss", losses.clone()),
            (false, true) => ("rtt_ms", rtts.clone()),
            _ => return Err(at(s.span(), "a sweep varies exactly one of loss = [..] or rtt_ms = [..] (the other may be one fixed value)".into())),
        };
        for v in values {
            let mut spec = base.clone();
            spec.loss = if param == "loss" {
                Some(v)
            } else {
                losses.first().copied()
            };
            spec.rtt_ms = if param == "rtt_ms" {
                Some(v)
            } else {
                rtts.first().copied()
            };
            let label = if param == "loss" {
                format!("{}% loss", v * 100.0)
            } else {
                format!("{v} ms RTT")
            };
            spec.name = Some(format!("{} {label}", sw.base));
            networks.push(
                network(
                    &spec,
                    Some((sweep_name.clone(), param.to_string(), v)),
                    base_dir,
                )
                .map_err(|e| at(s.span(), e))?,
            );
        }
    }
    if networks.is_empty() {
        return Err(format!("{origin}: no [[network]] or [[sweep]]"));
    }
    for (i, n) in networks.iter().enumerate() {
        if networks[..i].iter().any(|m| m.name == n.name) {
            return Err(format!("{origin}: two networks are named {:?}", n.name));
        }
    }
    Ok(networks)
}

fn fmt_rate(bps: u64) -> String {
    if bps >= 1_000_000 {
        format!("{} Mbit/s", (bps as f64 / 1e4).round() / 100.0)
    } else {
        format!("{} kbit/s", (bps as f64 / 1e3).round())
    }
}

/// A network in words: `2 Mbit/s down, 375 kbit/s up, 100 ms RTT, 1% loss`.
fn describe(
    trace: Option<&str>,
    (down, up): (u64, u64),
    rtt: Option<f64>,
    loss: (f64, f64),
    radio: Option<&str>,
) -> String {
    let mut desc = match trace {
        Some(t) => format!(
            "trace {t} ({} down, {} up on average)",
            fmt_rate(down),
            fmt_rate(up)
        ),
        None => format!("{} down, {} up", fmt_rate(down), fmt_rate(up)),
    };
    desc.push_str(&match rtt {
        Some(r) => format!(", {r} ms RTT"),
        None => ", no added RTT".into(),
    });
    if loss.0 == loss.1 {
        desc.push_str(&format!(", {}% loss", loss.0 * 100.0));
    } else {
        desc.push_str(&format!(
            ", {}% loss down, {}% up",
            loss.0 * 100.0,
            loss.1 * 100.0
        ));
    }
    if let Some(r) = radio {
        desc.push_str(&format!(", {r} radio"));
    }
    desc
}

/// The network's loss rates (down, up): `loss` for both, then `loss_down` and `loss_up`
/// over `profile`'s, each a fraction in [0, 1).
fn loss_of(n: &NetSpec, profile: (f64, f64)) -> Result<(f64, f64), String> {
    let mut loss = profile;
    for (v, name) in [
        (n.loss, "loss"),
        (n.loss_down, "loss_down"),
        (n.loss_up, "loss_up"),
    ] {
        if let Some(x) = v {
            if !(0.0..1.0).contains(&x) {
                return Err(format!(
                    "{name} = {x}: a fraction in [0, 1), e.g. 0.01 for 1%"
                ));
            }
        }
    }
    if let Some(l) = n.loss {
        loss = (l, l);
    }
    if let Some(l) = n.loss_down {
        loss.0 = l;
    }
    if let Some(l) = n.loss_up {
        loss.1 = l;
    }
    Ok(loss)
}

/// How the lab describes a network of `linkem`'s profile `name` (the `network_desc` of
/// its rows), for finding that network among results by its conditions, whatever it was
/// called.
pub fn profile_desc(name: &str) -> Option<String> {
    let spec = NetSpec {
        profile: Some(name.to_string()),
        ..NetSpec::default()
    };
    network(&spec, None, Path::new(".")).ok().map(|n| n.desc)
}

fn network(
    n: &NetSpec,
    sweep: Option<(String, String, f64)>,
    base_dir: &Path,
) -> Result<Network, String> {
    // Each load is a fresh client: nothing of an earlier load's connections may cross.
    let mut link = LinkConfig {
        client_flows_only: true,
        ..LinkConfig::default()
    };
    let mut rtt = None;
    let mut loss = (0.0, 0.0);
    let mut radio = None;
    let (mut down, mut up) = (None, None);
    if let Some(p) = &n.profile {
        let p = linkem::config::find_profile(p)?;
        down = Some(p.down);
        up = Some(p.up);
        rtt = p.rtt_ms.map(|r| r as f64);
        loss = (p.loss, p.loss);
        radio = p.radio.map(str::to_string);
    }
    if let Some(d) = &n.down {
        down = Some(linkem::parse_rate(d).map_err(|e| format!("down: {e}"))?);
    }
    if let Some(u) = &n.up {
        up = Some(linkem::parse_rate(u).map_err(|e| format!("up: {e}"))?);
    }
    if let Some(r) = n.rtt_ms {
        if !(0.0..=10_000.0).contains(&r) {
            return Err(format!("rtt_ms = {r}: must be between 0 and 10000"));
        }
        rtt = Some(r);
    }
    loss = loss_of(n, loss)?;
    if let Some(r) = &n.radio {
        radio = Some(r.clone());
    }
    let trace = match &n.trace {
        Some(_) if n.down.is_some() || n.up.is_some() => {
            return Err("trace gives both directions' capacity: drop down and up".into())
        }
        Some(t) => Some(linkem::stage::trace::trace_pair(t, base_dir)?),
        None => None,
    };
    if let Some((d, u)) = &trace {
        down = Some(d.mean_rate_bps() as u64);
        up = Some(u.mean_rate_bps() as u64);
    }
    if down.is_none() || up.is_none() {
        return Err("a network needs a profile, a trace, or both down and up rates".into());
    }
    link.down.server = Server::Rate(down.unwrap_or(0));
    link.up.server = Server::Rate(up.unwrap_or(0));
    if let Some((d, u)) = trace {
        link.down.server = Server::Trace(std::sync::Arc::new(d));
        link.up.server = Server::Trace(std::sync::Arc::new(u));
    }
    if let Some(r) = rtt {
        let half = Duration::from_secs_f64(r / 2000.0);
        link.down.delay = half;
        link.up.delay = half;
    }
    let lm = |p: f64| {
        if p > 0.0 {
            LossModel::Bernoulli { p }
        } else {
            LossModel::None
        }
    };
    link.down.loss = lm(loss.0);
    link.up.loss = lm(loss.1);
    if let Some(q) = &n.queue {
        let q = linkem::QueueSpec::parse(q).map_err(|e| format!("queue: {e}"))?;
        link.down.queue = q;
        link.up.queue = q;
    }
    if let Some(r) = &radio {
        link.radio = Some(linkem::RadioSpec::parse(r).map_err(|e| format!("radio: {e}"))?);
    }
    let desc = describe(
        n.trace.as_deref(),
        (down.unwrap_or(0), up.unwrap_or(0)),
        rtt,
        loss,
        radio.as_deref(),
    );
    let name = n
        .name
        .clone()
        .or_else(|| n.profile.clone())
        .unwrap_or_else(|| desc.clone());
    Ok(Network {
        name,
        desc,
        link,
        sweep,
        variants: n.variants.clone(),
    })
}

/// A built-in experiment: name, one-line description, TOML text.
pub struct BuiltIn {
    /// Name for `speedy lab NAME`.
    pub name: &'static str,
    /// What it runs.
    pub about: &'static str,
    /// The experiment file.
    pub toml: &'static str,
}

/// The built-in experiments.
pub const BUILT_INS: &[BuiltIn] = &[
    BuiltIn { name: "quick", about: "the default: 24 web-2010 pages, whitepaper DSL, HTTP/1.1 against SPDY under the whitepaper's conditions, and HTTP/3 over QUIC against HTTP/1.1 over TLS beside them, 4 runs (384 loads, about 2 minutes on 2 cores)", toml: include_str!("../../experiments/quick.toml") },
    BuiltIn {
        name: "cellular",
        about: "the cellular study: HTTP/1.1 proxy against SPDY proxy across 3G and LTE radios (constant rate and real traces), browsing sessions of 20 cellular-2013 pages in one fixed random order 20 s apart on the same connections, 3 runs; mitigations: no slow start after idle, Reno vs CUBIC, a 3 s minimum RTO (the paper's recommendation, per route), TCP metrics caching, a keep-alive ping, 20 SPDY connections; the proxy's cwnd over time",
        toml: include_str!("../../experiments/cellular.toml"),
    },
    BuiltIn {
        name: "whitepaper",
        about: "the SPDY whitepaper under its own conditions (web-2010 pages, CUBIC, initcwnd 3, zlib headers): Table 1's seven rows on DSL and cable (and HTTP/3 over QUIC beside them), the loss and RTT sweeps, 25 pages, 10 runs; its tables beside the published ones",
        toml: include_str!("../../experiments/whitepaper.toml"),
    },
    BuiltIn {
        name: "factors",
        about: "where SPDY's advantage went: from the whitepaper's conditions to today's one factor at a time (pages 2010 → 2013 → 2025, initcwnd 3 → 10, CUBIC → BBR, zlib → CRIME-safe, 32 → 256 connections), SPDY against HTTP/1.1 after each step, DSL",
        toml: include_str!("../../experiments/factors.toml"),
    },
    BuiltIn {
        name: "chart",
        about: "\"Visualizing SPDY vs HTTP\": 300 web-2010 pages at 2 Mbit/s / 386 kbit/s, 100 ms, no loss, HTTP/1.1 against SPDY, one point per page, repeated over the whitepaper's networks and loss rates",
        toml: include_str!("../../experiments/chart.toml"),
    },
    BuiltIn {
        name: "sctp",
        about: "the SPDY-over-SCTP note: SPDY/3.1 over TCP (CUBIC, initcwnd 10; and Reno, initcwnd 3: SCTP's congestion control) against SPDY over SCTP (user space, over UDP) on two stacks (sctp-proto, with and without the first request in the COOKIE ECHO's packet, with RTO.Initial 3 s (Linux) and 1 s (RFC 9260); and usrsctp), 5 Mbit/s, 100 ms, 0%/1%/2% loss, 23 cellular-2013 pages, 3 runs; per page TCP minus SCTP onLoad and the counts of pages >5% faster, >5% slower, within",
        toml: include_str!("../../experiments/sctp.toml"),
    },
    BuiltIn {
        name: "validate",
        about: "the fidelity check across the lab's space (`speedy lab validate all`): the loader against headless Chromium over HTTP/1.1, h2 and h3 (all encrypted), pages of 2010, 2013 and 2025, on the whitepaper's DSL (1% loss) and cable (2% loss) lines, 3G with its radio and the Verizon LTE trace with its radio, 5 pages × 3 runs per cell; the report's agreement table",
        toml: include_str!("../../experiments/validate.toml"),
    },
    BuiltIn {
        name: "h3",
        about: "what SPDY's successors change: HTTP/1.1, SPDY/3.1, h2 and HTTP/3 over QUIC, all encrypted, on the whitepaper's DSL and cable networks (100 ms, 1% loss), CUBIC with a 10-segment initial window on both TCP and QUIC, 10 web-2025 pages, 3 runs",
        toml: include_str!("../../experiments/h3.toml"),
    },
];

/// Finds a built-in experiment by name.
pub fn built_in(name: &str) -> Option<&'static BuiltIn> {
    BUILT_INS.iter().find(|b| b.name == name)
}

impl Experiment {
    /// Whether `variant` runs on `network`.
    pub fn runs_on(&self, network: usize, variant: usize) -> bool {
        match &self.networks[network].variants {
            None => true,
            Some(list) => list.contains(&self.variants[variant].name),
        }
    }

    /// A rough wall time of the whole experiment over `lanes` lanes, of which Chromium's
    /// loads get `chromium_lanes` (they run fewer at once: the runner's CPU shares): each
    /// load takes its page's bytes at the network's downlink rate, six round trips and
    /// 0.3 s of set-up (pages: their calibration's mean size; an archive's pages are taken
    /// as 1 MB), twice plus the pause with `revisit_after`.
    /// Measured on this lab's loads, not a promise: CPU contention and loss add to it.
    pub fn estimate(&self, pages: usize, lanes: usize, chromium_lanes: usize) -> Duration {
        let mut secs = 0.0;
        for (ni, net) in self.networks.iter().enumerate() {
            let bps = match &net.link.down.server {
                Server::Rate(r) if *r > 0 => *r as f64,
                _ => 2e6,
            };
            let rtt = (net.link.down.delay + net.link.up.delay).as_secs_f64();
            for (vi, v) in self.variants.iter().enumerate() {
                if !self.runs_on(ni, vi) {
                    continue;
                }
                let kb = match (&self.pages, v.calibration) {
                    (_, Some(c)) => c.means().1,
                    (Pages::Synth(_, c), None) => c.means().1,
                    (Pages::Archive(..), None) => 1024.0,
                };
                let visit = kb * 1024.0 * 8.0 / bps + 6.0 * rtt + 0.3;
                let per_load = match (self.revisit_after, self.session_think) {
                    (Some(after), _) => 2.0 * visit + after.as_secs_f64(),
                    (None, Some(think)) => visit + think.as_secs_f64(),
                    (None, None) => visit,
                };
                let at_once = match v.client {
                    Client::Loader => lanes,
                    Client::Chromium => chromium_lanes,
                };
                secs += per_load * (pages * self.runs as usize) as f64 / at_once.max(1) as f64;
            }
        }
        Duration::from_secs_f64(secs)
    }

    /// The order a browsing session visits `pages` pages in: one random order from the
    /// experiment's seed, the same for every run, network and variant (the study's "fixed
    /// random order").
    pub fn session_order(&self, pages: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..pages).collect();
        let mut x = self.seed ^ 0x9e37_79b9_7f4a_7c15;
        for i in (1..pages).rev() {
            // xorshift64*: enough for a shuffle that only needs to be fixed.
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
            order.swap(i, (r % (i as u64 + 1)) as usize);
        }
        order
    }

    /// Number of loads the experiment runs (with `session_think_ms`, page visits).
    pub fn loads(&self, pages: usize) -> usize {
        let cells: usize = (0..self.networks.len())
            .map(|n| {
                (0..self.variants.len())
                    .filter(|&v| self.runs_on(n, v))
                    .count()
            })
            .sum();
        pages * cells * self.runs as usize
    }
}

/// A built-in experiment by name, or an experiment file.
pub fn named(name: &str) -> Result<Experiment, String> {
    if let Some(b) = built_in(name) {
        return parse(b.toml, b.name, Path::new("."));
    }
    let p = PathBuf::from(name);
    if !p.exists() {
        return Err(format!(
            "{name}: no such built-in experiment or file (see `speedy lab list`)"
        ));
    }
    let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    let base = p.parent().unwrap_or(Path::new(".")).to_path_buf();
    parse(&text, name, &base)
}

/// The table `speedy lab list` prints: each built-in experiment's loads, expected
/// duration over `lanes` lanes, `chromium_lanes` of them for Chromium's loads (the caller
/// gives those `--lanes auto` starts with; it opens more when the machine keeps up), and
/// description.
pub fn built_ins_table(lanes: usize, chromium_lanes: usize) -> Result<String, String> {
    let mut out = format!(
        "{:<12} {:>7} {:>12}  description\n",
        "name",
        "loads",
        format!("{lanes} lanes")
    );
    for b in BUILT_INS {
        let e = parse(b.toml, b.name, Path::new("."))?;
        let pages = match e.pages {
            Pages::Synth(n, _) => n,
            _ => 0,
        };
        let secs = e.estimate(pages, lanes, chromium_lanes).as_secs_f64();
        out.push_str(&format!(
            "{:<12} {:>7} {:>12}  {}\n",
            b.name,
            e.loads(pages),
            fmt_duration(secs),
            b.about
        ));
    }
    Ok(out)
}

/// Seconds as `~1h05m` or `~12m`.
fn fmt_duration(s: f64) -> String {
    let s = s as u64;
    if s >= 3600 {
        format!("~{}h{:02}m", s / 3600, s % 3600 / 60)
    } else {
        format!("~{}m", s.div_ceil(60))
    }
}
#[cfg(test)]
mod tests;
