//! Experiment files (TOML) and the built-in experiments.
//!
//! ```toml
//! name = "quick"            # used for the output directory and the report
//! runs = 3                  # loads per page × network × variant
//! seed = 1                  # corpus and link randomness
//! think_time_ms = 0         # pause between loads
//!
//! [pages]
//! synth = 3                 # synthesized pages (lab-facts §4), or
//! # archive = "corpus/"     # an archive made by `speedy corpus`
//! # select = ["00-news"]    # only these pages of it
//!
//! [[network]]
//! profile = "whitepaper-dsl"   # any `speedy link --profiles` name, or:
//! # name = "slow"; down = "2mbit"; up = "375kbit"; rtt_ms = 100; loss = 0.01
//! # radio = "3g"; queue = "droptail:100"
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
//! protocol = "http1"        # http1 | spdy | h2
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
//! ```
//!
//! Unknown keys and impossible values are refused before anything runs, with the line.

use linkem::{LinkConfig, LossModel, Server};
use serde::Deserialize;
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
    /// Synthesize this many pages with the experiment's seed.
    Synth(usize),
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
    /// `http1`, `spdy` or `h2`.
    pub protocol: String,
    /// Over TLS.
    pub tls: bool,
    /// One SPDY session for all origins.
    pub single_domain: bool,
    /// Server push policy.
    pub push: String,
    /// Server hint.
    pub hint: bool,
    /// Client prefetch.
    pub prefetch: bool,
    /// The baseline for speedups.
    pub baseline: bool,
    /// TCP congestion control (reno, cubic, bbr), if set.
    pub cc: Option<String>,
    /// Initial congestion window (segments) on the server's routes, if set.
    pub initcwnd: Option<u32>,
    /// net.ipv4.tcp_slow_start_after_idle, if set.
    pub slow_start_after_idle: Option<bool>,
    /// net.ipv4.tcp_no_metrics_save (default true: runs do not learn from each other).
    pub no_metrics_save: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    name: Option<String>,
    runs: Option<Spanned<u32>>,
    seed: Option<u64>,
    think_time_ms: Option<u64>,
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
    cc: Option<String>,
    initcwnd: Option<u32>,
    slow_start_after_idle: Option<bool>,
    no_metrics_save: Option<bool>,
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
        format!("{origin}{line}: {}", e.message())
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
        (Some(n), None) => Pages::Synth(n),
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
    let mut networks = Vec::new();
    for n in &spec.network {
        networks.push(network(n.get_ref(), None).map_err(|e| at(n.span(), e))?);
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
                network(&spec, Some((sweep_name.clone(), param.to_string(), v)))
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

    if variants.iter().filter(|v| v.baseline).count() > 1 {
        return Err(format!(
            "{origin}: more than one variant has baseline = true"
        ));
    }
    if !variants.iter().any(|v| v.baseline) {
        if let Some(v) = variants.iter_mut().find(|v| v.protocol == "http1") {
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
        timeout,
        pages,
        networks,
        variants,
    })
}

fn fmt_rate(bps: u64) -> String {
    if bps >= 1_000_000 {
        format!("{} Mbit/s", bps as f64 / 1e6)
    } else {
        format!("{} kbit/s", bps as f64 / 1e3)
    }
}

fn network(n: &NetSpec, sweep: Option<(String, String, f64)>) -> Result<Network, String> {
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
    if down.is_none() || up.is_none() {
        return Err("a network needs a profile or both down and up rates".into());
    }
    link.down.server = Server::Rate(down.unwrap_or(0));
    link.up.server = Server::Rate(up.unwrap_or(0));
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
    let mut desc = format!(
        "{} down, {} up",
        fmt_rate(down.unwrap_or(0)),
        fmt_rate(up.unwrap_or(0))
    );
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
    if !matches!(v.protocol.as_str(), "http1" | "spdy" | "h2") {
        return Err(format!(
            "protocol = {:?}: one of http1, spdy, h2",
            v.protocol
        ));
    }
    let single_domain = match v.spdy_domains.as_deref() {
        None | Some("per-origin") => false,
        Some("single") => true,
        Some(x) => return Err(format!("spdy_domains = {x:?}: per-origin or single")),
    };
    let push = v.push.clone().unwrap_or_else(|| "none".into());
    if !matches!(push.as_str(), "none" | "subresources" | "all") {
        return Err(format!("push = {push:?}: none, subresources or all"));
    }
    if v.protocol == "http1" && (push != "none" || single_domain) {
        return Err("push and spdy_domains need protocol spdy or h2".into());
    }
    if let Some(cc) = &v.cc {
        if !matches!(cc.as_str(), "reno" | "cubic" | "bbr") {
            return Err(format!("cc = {cc:?}: reno, cubic or bbr"));
        }
    }
    if let Some(w) = v.initcwnd {
        if !(1..=1000).contains(&w) {
            return Err(format!("initcwnd = {w}: between 1 and 1000 segments"));
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
        protocol: v.protocol.clone(),
        tls: v.tls.unwrap_or(false),
        single_domain,
        push,
        hint: v.hint.unwrap_or(false),
        prefetch: v.prefetch.unwrap_or(false),
        baseline: v.baseline.unwrap_or(false),
        cc: v.cc.clone(),
        initcwnd: v.initcwnd,
        slow_start_after_idle: v.slow_start_after_idle,
        no_metrics_save: v.no_metrics_save.unwrap_or(true),
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
    BuiltIn { name: "quick", about: "the default: 3 synthesized pages, whitepaper DSL, HTTP/1.1 against SPDY, 3 runs", toml: include_str!("../experiments/quick.toml") },
    BuiltIn {
        name: "whitepaper",
        about: "the SPDY whitepaper's matrix: DSL and cable at 1% loss with every SPDY variant over TCP and TLS, the loss sweep and the RTT sweep, 25 pages, 10 runs",
        toml: include_str!("../experiments/whitepaper.toml"),
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

    /// Number of loads the experiment runs.
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
