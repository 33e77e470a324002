//! Experiment files (TOML) and the built-in experiments.
//!
//! ```toml
//! name = "quick"            # used for the output directory and the report
//! runs = 3                  # loads per page × network × variant
//! seed = 1                  # corpus and link randomness
//! think_time_ms = 0         # pause between loads
//! # revisit_after_ms = 20000  # each load visits its page twice on the same connections,
//! #                           # this long apart, and measures the second visit (the
//! #                           # cellular study's think time, the radio idling meanwhile)
//! # session_think_ms = 20000  # each load is a browsing session: every page once, in one
//! #                           # fixed random order, this long apart, on the same
//! #                           # connections; a row per visit (the cellular study's 20
//! #                           # sites; not with revisit_after_ms)
//!
//! [pages]
//! synth = 3                 # synthesized pages, or
//! # calibration = "web-2010" # their page statistics: cellular-2013 (default), web-2010, web-2025
//! # archive = "corpus/"     # an archive made by `speedy corpus`
//! # select = ["00-news"]    # only these pages of it
//!
//! [[network]]
//! profile = "whitepaper-dsl"   # any `speedy link --profiles` name, or:
//! # name = "slow"; down = "2mbit"; up = "375kbit"; rtt_ms = 100; loss = 0.01
//! # radio = "3g"; queue = "droptail:100"
//! # trace = "tmobile-umts"   # capacity over time from a Mahimahi trace pair: built-in
//! #                          # tmobile-umts or verizon-lte, or P for files P.down and P.up
//! # variants = ["http1", "spdy"]   # only these variants run on this network
//!
//! [[sweep]]                 # expands into one network per value
//! base = "whitepaper-cable"
//! rtt_ms = 100
//! loss = [0.0, 0.01, 0.02]  # or rtt_ms = [20, 40, 80]
//! # variants = ["http1", "spdy"]
//!
//! [[variant]]
//! name = "http1"
//! protocol = "http1"        # http1 | spdy | h2 | h3 (h3: over QUIC, TLS implied)
//! baseline = true           # speedups are computed against this one
//! [[variant]]
//! name = "spdy"
//! protocol = "spdy"
//! tls = true                # default false (plain TCP)
//! # spdy_domains = "single" # one session for all origins
//! # push = "subresources"   # server push policy (none, subresources, all)
//! # hint = true             # server hint (x-subresources)
//! # prefetch = true         # client prefetch from an earlier load
//! # cc = "bbr"; initcwnd = 10; slow_start_after_idle = false; no_metrics_save = true
//! # cc = ["cubic", "reno"]  # the first the host allows (recorded per row)
//! # rack_tlp = false        # TCP loss recovery without RACK and tail loss probes: the
//! #                         # duplicate-ACK threshold and the RTO, as RFC 5681/6675
//! #                         # (and SCTP's RFC 4960) recover
//! # rto_min_ms = 3000        # the server namespace's minimum RTO (per route)
//! # keepalive_ms = 4000      # with revisit_after_ms or session_think_ms: SPDY PINGs
//! #                          # during the pauses
//! # proxy = "spdy"          # through `speedy proxy` across the link: "spdy" (one SPDY
//! #                         # session to it, protocol spdy) or "http" (protocol http1);
//! #                         # with proxy = "spdy", tls = true is TLS to the proxy (as
//! #                         # Chrome's SPDY proxy), the proxy's origins plain
//! # initrwnd = 10           # the client's initial receive window (segments)
//! # header_compression = "zlib"   # SPDY headers: crime-safe (default), zlib, none
//! # connections_per_host = 6      # HTTP/1.1 connections per host (the loader's default 6)
//! # max_connections = 32          # HTTP/1.1 connections in all (the loader's default 32)
//! # sessions = 20           # SPDY/h2 sessions per origin, or to the proxy (default 1)
//! # tls_hello = "plain"     # the loader's TLS ClientHello: chromium (default: a
//! #                         # post-quantum key share, GREASE ECH) or plain (before 2023)
//! # known_servers = true    # the loader knows the servers speak SPDY/h2: one connection
//! #                         # per session (default false: a fresh profile races one
//! #                         # connection per waiting request until the first is up)
//! # partition = false       # one connection pool per origin for every frame (default
//! #                         # true: a cross-site frame's own, as Chromium since 2020)
//! # transport = "sctp"      # SPDY over SCTP over UDP (plain spdy only; docs/sctp.md)
//! # cookie_bundling = false # with sctp: the first request after the COOKIE ACK, as
//! #                         # Linux's SCTP (default true: in the COOKIE ECHO's packet)
//! # sctp_rto_initial_ms = 1000  # with sctp: RTO.Initial at both ends (default 3000,
//! #                         # Linux's; RFC 9260's is 1000)
//! # calibration = "web-2025"      # this variant's own synthesized pages
//! # against = "http1-2025"        # the variant its speedup is computed against
//! ```
//!
//! Unknown keys and impossible values are refused before anything runs, with the line.

use linkem::{LinkConfig, LossModel, Server};
use serde::Deserialize;
use spdy::HeaderCompression;
use speedy_archive::synth::{calibration, Calibration};
use speedy_net::Protocol;
use speedy_server::PushPolicy;
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

/// One protocol variant.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// Name (unique).
    pub name: String,
    /// The protocol the loader speaks: HTTP/1.1, SPDY/3.1, h2 or h3 (named in the
    /// experiment file with the one vocabulary of [`speedy_net::protocol`]).
    pub protocol: Protocol,
    /// Over TLS.
    pub tls: bool,
    /// One SPDY session for all origins.
    pub single_domain: bool,
    /// Server push policy.
    pub push: PushPolicy,
    /// Server hint.
    pub hint: bool,
    /// Client prefetch.
    pub prefetch: bool,
    /// The baseline for speedups.
    pub baseline: bool,
    /// Initial congestion window (segments) on the server's routes, if set.
    pub initcwnd: Option<u32>,
    /// net.ipv4.tcp_slow_start_after_idle, if set.
    pub slow_start_after_idle: Option<bool>,
    /// Linux's RACK loss detection and tail loss probes (net.ipv4.tcp_recovery,
    /// net.ipv4.tcp_early_retrans): on (the kernel's defaults) unless set false.
    pub rack_tlp: bool,
    /// net.ipv4.tcp_no_metrics_save (default true: runs do not learn from each other).
    pub no_metrics_save: bool,
    /// TCP congestion control in order of preference: the first the host allows is used.
    pub cc_preference: Vec<String>,
    /// The client's initial receive window (segments) on its routes, if set.
    pub initrwnd: Option<u32>,
    /// SPDY header compression of requests and responses.
    pub header_compression: HeaderCompression,
    /// HTTP/1.1 connections per host (the loader's default when `None`).
    pub connections_per_host: Option<usize>,
    /// HTTP/1.1 connections in all (the loader's default when `None`).
    pub max_connections: Option<usize>,
    /// This variant's own synthesized pages (the experiment's when `None`).
    pub calibration: Option<&'static Calibration>,
    /// The variant this one's speedup is computed against (the baseline when `None`).
    pub against: Option<String>,
    /// Through `speedy proxy` in the server namespace: `spdy` or `http` (the protocol
    /// the loader speaks to it).
    pub proxy: Option<String>,
    /// A minimum retransmission timeout on the server namespace's routes, ms (`ip route
    /// ... rto_min`): the cellular study's recommendation of an RTO that outlasts the
    /// radio's promotion delay. Linux applies it to every RTO of those routes, not only
    /// after idle periods.
    pub rto_min_ms: Option<u32>,
    /// With `revisit_after_ms` or `session_think_ms`: a SPDY PING on every open
    /// connection this often during the pauses (the study's keep-alive).
    pub keepalive_ms: Option<u32>,
    /// SPDY or h2 sessions per pool (to the proxy: all of them), the loader's
    /// `--sessions` (the study's 20 SPDY connections).
    pub sessions: Option<u32>,
    /// The loader's TLS ClientHello (`plain` for browsers before 2023; the loader's
    /// default is Chromium's).
    pub tls_hello: Option<speedy_net::tls::Hello>,
    /// The loader knows each server speaks SPDY/h2 (`--known-servers`).
    pub known_servers: Option<bool>,
    /// Cross-site frames get connections of their own (`false`: `--no-partition`).
    pub partition: Option<bool>,
    /// SPDY over SCTP instead of TCP (`transport = "sctp"`).
    pub sctp: bool,
    /// With `sctp`: the first DATA in the COOKIE ECHO's packet (`cookie_bundling`,
    /// default true).
    pub cookie_bundling: bool,
    /// With `sctp`: RTO.Initial at both ends, ms (`sctp_rto_initial_ms`; the stack's 3 s
    /// when `None`).
    pub sctp_rto_initial_ms: Option<u32>,
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VariantSpec {
    name: String,
    protocol: String,
    tls: Option<bool>,
    spdy_domains: Option<String>,
    push: Option<String>,
    hint: Option<bool>,
    prefetch: Option<bool>,
    baseline: Option<bool>,
    cc: Option<OneOrManyStr>,
    initcwnd: Option<u32>,
    initrwnd: Option<u32>,
    slow_start_after_idle: Option<bool>,
    rack_tlp: Option<bool>,
    no_metrics_save: Option<bool>,
    header_compression: Option<String>,
    connections_per_host: Option<usize>,
    max_connections: Option<usize>,
    calibration: Option<String>,
    against: Option<String>,
    proxy: Option<String>,
    rto_min_ms: Option<u32>,
    keepalive_ms: Option<u32>,
    sessions: Option<u32>,
    tls_hello: Option<String>,
    known_servers: Option<bool>,
    partition: Option<bool>,
    transport: Option<String>,
    cookie_bundling: Option<bool>,
    sctp_rto_initial_ms: Option<u32>,
}

#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum OneOrManyStr {
    One(String),
    Many(Vec<String>),
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
    let ps = spec.pages.get_ref();
    let pages = match (ps.synth, &ps.archive) {
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
    };
    if spec.revisit_after_ms.is_some() && spec.session_think_ms.is_some() {
        return Err(format!(
            "{origin}: revisit_after_ms and session_think_ms: a load either revisits its page \
             or browses every page; choose one"
        ));
    }
    let networks = networks_of(&spec, origin, base_dir, &at)?;
    let mut variants = Vec::new();
    for v in &spec.variant {
        let var = variant(v.get_ref()).map_err(|e| at(v.span(), e))?;
        if variants.iter().any(|x: &Variant| x.name == var.name) {
            return Err(at(
                v.span(),
                format!("two variants are named {:?}", var.name),
            ));
        }
        variants.push(var);
    }
    if variants.is_empty() {
        return Err(format!("{origin}: no [[variant]]"));
    }
    if variants.iter().any(|v| v.sctp) && variants.iter().any(|v| v.protocol == Protocol::H3) {
        return Err(format!(
            "{origin}: SCTP and h3 variants both need the replay server's UDP port: run them \
             in separate experiments"
        ));
    }
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

    for v in &variants {
        if let Some(a) = &v.against {
            let Some(b) = variants.iter().find(|x| &x.name == a) else {
                return Err(format!(
                    "{origin}: variant {:?} is against {a:?}, which no [[variant]] defines",
                    v.name
                ));
            };
            if b.calibration.map(|c| c.name) != v.calibration.map(|c| c.name) {
                return Err(format!(
                    "{origin}: variant {:?} is against {a:?}, which loads other pages (calibration)",
                    v.name
                ));
            }
        }
        if v.calibration.is_some() && !matches!(pages, Pages::Synth(..)) {
            return Err(format!(
                "{origin}: variant {:?} has a calibration, which needs [pages] synth = N",
                v.name
            ));
        }
    }
    if variants.iter().filter(|v| v.baseline).count() > 1 {
        return Err(format!(
            "{origin}: more than one variant has baseline = true"
        ));
    }
    if !variants.iter().any(|v| v.baseline) {
        if let Some(v) = variants.iter_mut().find(|v| v.protocol == Protocol::Http1) {
            v.baseline = true;
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
        pages,
        networks,
        variants,
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

fn network(
    n: &NetSpec,
    sweep: Option<(String, String, f64)>,
    base_dir: &Path,
) -> Result<Network, String> {
    let mut link = LinkConfig::default();
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
    let mut desc = match &n.trace {
        Some(t) => format!(
            "trace {t} ({} down, {} up on average)",
            fmt_rate(down.unwrap_or(0)),
            fmt_rate(up.unwrap_or(0))
        ),
        None => format!(
            "{} down, {} up",
            fmt_rate(down.unwrap_or(0)),
            fmt_rate(up.unwrap_or(0))
        ),
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
    if let Some(r) = &radio {
        desc.push_str(&format!(", {r} radio"));
    }
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

fn variant(v: &VariantSpec) -> Result<Variant, String> {
    // One vocabulary with every other command (speedy_net::protocol); the loader speaks
    // HTTP/1.1, SPDY/3.1, h2 and h3.
    let protocol = match Protocol::parse(&v.protocol) {
        Ok(
            p @ (Protocol::Http1
            | Protocol::Spdy(spdy::Version::V3_1)
            | Protocol::H2
            | Protocol::H3),
        ) => p,
        Ok(_) => {
            return Err(format!(
                "protocol = {:?}: the loader speaks http1, spdy (SPDY/3.1), h2 and h3",
                v.protocol
            ))
        }
        Err(e) => return Err(format!("protocol = {:?}: {e}", v.protocol)),
    };
    const SPDY: Protocol = Protocol::Spdy(spdy::Version::V3_1);
    let single_domain = match v.spdy_domains.as_deref() {
        None | Some("per-origin") => false,
        Some("single") => true,
        Some(x) => return Err(format!("spdy_domains = {x:?}: per-origin or single")),
    };
    let push: PushPolicy = match &v.push {
        None => PushPolicy::None,
        Some(p) => p
            .parse()
            .map_err(|_| format!("push = {p:?}: none, subresources or all"))?,
    };
    if protocol == Protocol::Http1 && (push != PushPolicy::None || single_domain) {
        return Err("push and spdy_domains need protocol spdy or h2".into());
    }
    let cc_preference = match &v.cc {
        None => vec![],
        Some(OneOrManyStr::One(c)) => vec![c.clone()],
        Some(OneOrManyStr::Many(cs)) if cs.is_empty() => {
            return Err("cc = []: name at least one of reno, cubic, bbr".into())
        }
        Some(OneOrManyStr::Many(cs)) => cs.clone(),
    };
    for cc in &cc_preference {
        if !matches!(cc.as_str(), "reno" | "cubic" | "bbr") {
            return Err(format!("cc = {cc:?}: reno, cubic or bbr"));
        }
    }
    for (w, name) in [(v.initcwnd, "initcwnd"), (v.initrwnd, "initrwnd")] {
        if let Some(w) = w {
            if !(1..=1000).contains(&w) {
                return Err(format!("{name} = {w}: between 1 and 1000 segments"));
            }
        }
    }
    let header_compression = match &v.header_compression {
        None => HeaderCompression::CrimeSafe,
        Some(h) => HeaderCompression::parse(h).map_err(|e| format!("header_compression = {e}"))?,
    };
    if v.connections_per_host == Some(0) || v.max_connections == Some(0) || v.sessions == Some(0) {
        return Err("connections_per_host, max_connections and sessions: at least 1".into());
    }
    if v.sessions.is_some() && protocol == Protocol::Http1 {
        return Err(
            "sessions = N is for SPDY and h2 sessions; HTTP/1.1 has connections_per_host".into(),
        );
    }
    let calibration = match &v.calibration {
        None => None,
        Some(c) => Some(calibration(c).map_err(|e| format!("calibration: {e}"))?),
    };
    match (v.proxy.as_deref(), protocol) {
        (None, _) | (Some("spdy"), SPDY) | (Some("http"), Protocol::Http1) => {}
        (Some(p @ ("spdy" | "http")), _) => {
            return Err(format!(
                "proxy = {p:?} needs protocol = {:?}",
                if p == "spdy" { "spdy" } else { "http1" }
            ))
        }
        (Some(p), _) => return Err(format!("proxy = {p:?}: spdy or http")),
    }
    if v.proxy.is_some() && (single_domain || push != PushPolicy::None) {
        return Err("proxy: without spdy_domains or push (the proxy decides those)".into());
    }
    if v.proxy.as_deref() == Some("http") && v.tls == Some(true) {
        return Err(
            "proxy = \"http\" with tls: Chrome's HTTP proxy is plain; tls = true is TLS to the \
             SPDY proxy"
                .into(),
        );
    }
    if let Some(ms) = v.rto_min_ms {
        if !(1..=120_000).contains(&ms) {
            return Err(format!("rto_min_ms = {ms}: between 1 and 120000"));
        }
    }
    let sctp = match v.transport.as_deref() {
        None | Some("tcp") => false,
        Some("sctp") => true,
        Some(t) => return Err(format!("transport = {t:?}: tcp or sctp")),
    };
    if sctp && (protocol != SPDY || v.tls == Some(true) || v.proxy.is_some()) {
        return Err(
            "transport = \"sctp\": protocol = \"spdy\", without tls or proxy (SCTP carries \
             plain SPDY)"
                .into(),
        );
    }
    if protocol == Protocol::H3 && (v.tls == Some(false) || v.proxy.is_some() || sctp) {
        return Err(
            "protocol = \"h3\": HTTP/3 runs over QUIC, always encrypted (tls is implied), \
             without proxy or sctp"
                .into(),
        );
    }
    if v.cookie_bundling.is_some() && !sctp {
        return Err("cookie_bundling: only with transport = \"sctp\"".into());
    }
    if let Some(ms) = v.sctp_rto_initial_ms {
        if !sctp {
            return Err("sctp_rto_initial_ms: only with transport = \"sctp\"".into());
        }
        if !(1..=60_000).contains(&ms) {
            return Err(format!("sctp_rto_initial_ms = {ms}: between 1 and 60000"));
        }
    }
    if v.name.is_empty() || v.name.contains(['/', ' ']) {
        return Err(format!(
            "variant name {:?}: non-empty, no '/' or spaces",
            v.name
        ));
    }
    Ok(Variant {
        name: v.name.clone(),
        protocol,
        tls: v.tls.unwrap_or(protocol == Protocol::H3),
        single_domain,
        push,
        hint: v.hint.unwrap_or(false),
        prefetch: v.prefetch.unwrap_or(false),
        baseline: v.baseline.unwrap_or(false),
        initcwnd: v.initcwnd,
        slow_start_after_idle: v.slow_start_after_idle,
        rack_tlp: v.rack_tlp.unwrap_or(true),
        no_metrics_save: v.no_metrics_save.unwrap_or(true),
        cc_preference,
        initrwnd: v.initrwnd,
        header_compression,
        connections_per_host: v.connections_per_host,
        max_connections: v.max_connections,
        calibration,
        against: v.against.clone(),
        proxy: v.proxy.clone(),
        rto_min_ms: v.rto_min_ms,
        keepalive_ms: v.keepalive_ms,
        sessions: v.sessions,
        tls_hello: v
            .tls_hello
            .as_deref()
            .map(speedy_net::tls::Hello::parse)
            .transpose()
            .map_err(|e| format!("tls_hello = {e}"))?,
        known_servers: v.known_servers,
        partition: v.partition,
        sctp,
        cookie_bundling: v.cookie_bundling.unwrap_or(true),
        sctp_rto_initial_ms: v.sctp_rto_initial_ms,
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
    BuiltIn { name: "quick", about: "the default: 3 web-2010 pages, whitepaper DSL, HTTP/1.1 against SPDY under the whitepaper's conditions (and HTTP/3 over QUIC beside them), 3 runs", toml: include_str!("../experiments/quick.toml") },
    BuiltIn {
        name: "cellular",
        about: "the cellular study: HTTP/1.1 proxy against SPDY proxy across 3G and LTE radios (constant rate and real traces), browsing sessions of 20 cellular-2013 pages in one fixed random order 20 s apart on the same connections, 3 runs; mitigations: no slow start after idle, Reno vs CUBIC, a 3 s minimum RTO (the paper's recommendation, per route), TCP metrics caching, a keep-alive ping, 20 SPDY connections; the proxy's cwnd over time",
        toml: include_str!("../experiments/cellular.toml"),
    },
    BuiltIn {
        name: "whitepaper",
        about: "the SPDY whitepaper under its own conditions (web-2010 pages, CUBIC, initcwnd 3, zlib headers): Table 1's seven rows on DSL and cable (and HTTP/3 over QUIC beside them), the loss and RTT sweeps, 25 pages, 10 runs; its tables beside the published ones",
        toml: include_str!("../experiments/whitepaper.toml"),
    },
    BuiltIn {
        name: "factors",
        about: "where SPDY's advantage went: from the whitepaper's conditions to today's one factor at a time (pages 2010 → 2013 → 2025, initcwnd 3 → 10, CUBIC → BBR, zlib → CRIME-safe, 32 → 256 connections), SPDY against HTTP/1.1 after each step, DSL",
        toml: include_str!("../experiments/factors.toml"),
    },
    BuiltIn {
        name: "chart",
        about: "\"Visualizing SPDY vs HTTP\": 300 web-2010 pages at 2 Mbit/s / 386 kbit/s, 100 ms, no loss, HTTP/1.1 against SPDY, one point per page, repeated over the whitepaper's networks and loss rates",
        toml: include_str!("../experiments/chart.toml"),
    },
    BuiltIn {
        name: "sctp",
        about: "the SPDY-over-SCTP note: SPDY/3.1 over TCP (CUBIC, initcwnd 10; and Reno, initcwnd 3: SCTP's congestion control) against SPDY over SCTP (user space, over UDP), with and without the first request in the COOKIE ECHO's packet, with RTO.Initial 3 s (Linux) and 1 s (RFC 9260), 5 Mbit/s, 100 ms, 0%/1%/2% loss, 23 cellular-2013 pages, 3 runs; per page TCP minus SCTP onLoad and the counts of pages >5% faster, >5% slower, within",
        toml: include_str!("../experiments/sctp.toml"),
    },
    BuiltIn {
        name: "h3",
        about: "what SPDY's successors change: HTTP/1.1, SPDY/3.1, h2 and HTTP/3 over QUIC, all encrypted, on the whitepaper's DSL and cable networks (100 ms, 1% loss), CUBIC with a 10-segment initial window on both TCP and QUIC, 10 web-2025 pages, 3 runs",
        toml: include_str!("../experiments/h3.toml"),
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

    /// A rough wall time of the whole experiment over `lanes` lanes: each load takes its
    /// page's bytes at the network's downlink rate, six round trips and 0.3 s of set-up
    /// (pages: their calibration's mean size; an archive's pages are taken as 1 MB), twice
    /// plus the pause with `revisit_after`.
    /// Measured on this lab's loads, not a promise: CPU contention and loss add to it.
    pub fn estimate(&self, pages: usize, lanes: usize) -> Duration {
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
                secs += per_load * (pages * self.runs as usize) as f64;
            }
        }
        Duration::from_secs_f64(secs / lanes.max(1) as f64)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Experiment, String> {
        parse(s, "x.toml", Path::new("."))
    }

    #[test]
    fn built_ins_parse() {
        for b in BUILT_INS {
            let e =
                parse(b.toml, b.name, Path::new(".")).unwrap_or_else(|e| panic!("{}: {e}", b.name));
            assert!(e.variants.iter().any(|v| v.baseline), "{}", b.name);
        }
        let w = parse(built_in("whitepaper").unwrap().toml, "w", Path::new(".")).unwrap();
        assert_eq!(w.runs, 10);
        assert!(w.networks.iter().filter(|n| n.sweep.is_some()).count() >= 13);
        // The whitepaper's own conditions on every variant (h3: its initial window;
        // QUIC has its own CUBIC and QPACK).
        assert!(matches!(w.pages, Pages::Synth(25, c) if c.name == "web-2010"));
        for v in &w.variants {
            assert_eq!(v.initcwnd, Some(3), "{}", v.name);
            if v.protocol != Protocol::H3 {
                assert_eq!(v.cc_preference, ["cubic", "reno"], "{}", v.name);
                assert_eq!(v.header_compression, HeaderCompression::Zlib, "{}", v.name);
                assert!(
                    !v.rack_tlp,
                    "{}: the era's Linux had no RACK or TLP",
                    v.name
                );
            }
        }
        // The factor chain: every SPDY step is against its own HTTP/1.1, on its pages;
        // RACK and TLP come on in the last step only.
        let f = parse(built_in("factors").unwrap().toml, "f", Path::new(".")).unwrap();
        let spdy: Vec<&Variant> = f
            .variants
            .iter()
            .filter(|v| v.protocol == Protocol::Spdy(spdy::Version::V3_1))
            .collect();
        assert_eq!(spdy.len(), 8);
        for v in &spdy {
            let a = v.against.as_deref().unwrap();
            assert_eq!(a, v.name.replace("spdy-", "http1-"));
        }
        let on: Vec<&str> = f
            .variants
            .iter()
            .filter(|v| v.rack_tlp)
            .map(|v| v.name.as_str())
            .collect();
        assert_eq!(on, ["http1-rack-tlp", "spdy-rack-tlp"]);
    }

    #[test]
    fn refuses_unknown_keys_with_the_line() {
        let e = p("runs = 2\n[pages]\nsynth = 1\n[[network]]\nprofile = \"whitepaper-dsl\"\nbogus = 3\n[[variant]]\nname=\"a\"\nprotocol=\"spdy\"\n").unwrap_err();
        assert!(
            e.starts_with("x.toml:4:") || e.starts_with("x.toml:6:"),
            "{e}"
        );
        assert!(e.contains("bogus"), "{e}");
    }

    #[test]
    fn refuses_impossible_values_with_the_line() {
        let base = "[pages]\nsynth = 1\n[[network]]\nprofile = \"whitepaper-dsl\"\n";
        let e = p(&format!(
            "{base}[[variant]]\nname=\"a\"\nprotocol=\"spdy/9\"\n"
        ))
        .unwrap_err();
        assert!(e.starts_with("x.toml:5:") && e.contains("protocol"), "{e}");
        let e = p("[pages]\nsynth = 1\n[[network]]\ndown=\"2mbit\"\nup=\"1mbit\"\nloss = 1.5\n[[variant]]\nname=\"a\"\nprotocol=\"spdy\"\n").unwrap_err();
        assert!(e.starts_with("x.toml:3:") && e.contains("loss"), "{e}");
        let e = p("runs = 0\n[pages]\nsynth = 1\n").unwrap_err();
        assert!(e.starts_with("x.toml:1:"), "{e}");
        let e = p("[pages]\narchive = \"/nonexistent/dir\"\n[[network]]\nprofile=\"whitepaper-dsl\"\n[[variant]]\nname=\"a\"\nprotocol=\"spdy\"\n").unwrap_err();
        assert!(
            e.contains("/nonexistent/dir") && e.starts_with("x.toml:1:"),
            "{e}"
        );
    }

    #[test]
    fn checks_proxy_variants_and_the_revisit() {
        let base = "revisit_after_ms = 2000\n[pages]\nsynth = 1\n[[network]]\nprofile = \"wpt-3g\"\nradio = \"3g\"\n";
        let e = p(&format!(
            "{base}[[variant]]\nname=\"h\"\nprotocol=\"http1\"\nproxy=\"http\"\n[[variant]]\nname=\"s\"\nprotocol=\"spdy\"\nproxy=\"spdy\"\n"
        ))
        .unwrap();
        assert_eq!(e.revisit_after, Some(Duration::from_secs(2)));
        assert_eq!(e.variants[1].proxy.as_deref(), Some("spdy"));
        for (variant, want) in [
            ("protocol=\"http1\"\nproxy=\"spdy\"", "needs protocol"),
            ("protocol=\"spdy\"\nproxy=\"socks\"", "spdy or http"),
            ("protocol=\"spdy\"\nproxy=\"spdy\"\npush=\"all\"", "without"),
            ("protocol=\"http1\"\nproxy=\"http\"\ntls=true", "is plain"),
        ] {
            let err = p(&format!("{base}[[variant]]\nname=\"a\"\n{variant}\n")).unwrap_err();
            assert!(err.contains(want), "{variant}: {err}");
        }
        let c = parse(built_in("cellular").unwrap().toml, "c", Path::new(".")).unwrap();
        assert!(c.session_think.is_some() && c.variants.iter().all(|v| v.proxy.is_some()));
        assert!(
            c.networks
                .iter()
                .any(|n| n.desc.starts_with("trace tmobile-umts")),
            "the real 3G trace is one of the networks"
        );
    }

    #[test]
    fn sessions_visit_every_page_once_in_one_fixed_order() {
        let base = "[pages]\nsynth = 5\n[[network]]\nprofile = \"wpt-3g\"\n[[variant]]\nname=\"h\"\nprotocol=\"http1\"\n";
        let e = p(&format!("session_think_ms = 1000\n{base}")).unwrap();
        assert_eq!(e.session_think, Some(Duration::from_secs(1)));
        let order = e.session_order(20);
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, (0..20).collect::<Vec<_>>(), "every page once");
        assert_ne!(order, sorted, "shuffled");
        assert_eq!(order, e.session_order(20), "fixed");
        let err = p(&format!(
            "session_think_ms = 1000\nrevisit_after_ms = 1000\n{base}"
        ))
        .unwrap_err();
        assert!(err.contains("choose one"), "{err}");
    }

    #[test]
    fn takes_a_trace_pair_as_a_network() {
        let e = p("[pages]\nsynth = 1\n[[network]]\nname = \"u\"\nprofile = \"wpt-3g\"\ntrace = \"tmobile-umts\"\n[[variant]]\nname=\"h\"\nprotocol=\"http1\"\n").unwrap();
        let n = &e.networks[0];
        assert!(
            matches!(n.link.down.server, Server::Trace(_)),
            "{:?}",
            n.desc
        );
        assert!(
            n.desc
                .starts_with("trace tmobile-umts (2.02 Mbit/s down, 943 kbit/s up")
                && n.desc.contains("300 ms RTT"),
            "{}",
            n.desc
        );
        let err = p("[pages]\nsynth = 1\n[[network]]\ntrace = \"nope\"\n[[variant]]\nname=\"h\"\nprotocol=\"http1\"\n").unwrap_err();
        assert!(
            err.starts_with("x.toml:3:") && err.contains("verizon-lte"),
            "{err}"
        );
        let err = p("[pages]\nsynth = 1\n[[network]]\ntrace = \"verizon-lte\"\ndown = \"1mbit\"\n[[variant]]\nname=\"h\"\nprotocol=\"http1\"\n").unwrap_err();
        assert!(err.contains("drop down and up"), "{err}");
    }

    #[test]
    fn expands_sweeps_and_picks_the_http1_baseline() {
        let e = p("[pages]\nsynth = 1\n[[sweep]]\nbase = \"whitepaper-cable\"\nrtt_ms = 100\nloss = [0.0, 0.01]\n[[variant]]\nname=\"h\"\nprotocol=\"http1\"\n[[variant]]\nname=\"s\"\nprotocol=\"spdy\"\n").unwrap();
        assert_eq!(e.networks.len(), 2);
        assert_eq!(e.networks[1].sweep.as_ref().unwrap().2, 0.01);
        assert!(
            e.networks[1].desc.contains("100 ms RTT") && e.networks[1].desc.contains("1% loss"),
            "{}",
            e.networks[1].desc
        );
        assert!(e.variants[0].baseline && !e.variants[1].baseline);
    }
}
