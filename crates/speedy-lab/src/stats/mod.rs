//! Statistics over the results file: per-cell summaries with bootstrap confidence
//! intervals, and speedups against the HTTP/1.1 baseline.
//!
//! # Definitions
//!
//! * **Load time** is a row's `on_load_ms`. Loads without an onLoad (negative or not a
//!   finite number, the loader's mark for a load that timed out) are left out of every
//!   statistic and listed in [`Stats::excluded`].
//! * **Page cell** = page × network × variant: the loads of that page on that network
//!   with that variant (one per run). [`Summary`] gives n, mean, median, quartiles and
//!   the 95% percentile-bootstrap confidence interval of the mean ([`RESAMPLES`]
//!   resamples of the runs with replacement).
//! * **Network cell** = network × variant over all pages: the loads of every page pooled.
//!   Its mean is the mean over all those loads, and its confidence interval comes from a
//!   *stratified* bootstrap: each resample draws, for every page, as many loads as that
//!   page has, from that page's loads, so the mix of pages stays the one that was run.
//!   With one load per page (runs = 1) there is nothing to resample within a page; the
//!   interval then resamples the pages.
//! * **Baseline** of a variant on a network: the variant of that network whose rows say
//!   `baseline: true` and that has the same `tls` as the variant; if there is none with
//!   the same `tls`, the first baseline variant of the network. A variant whose rows name
//!   `against` (a factor chain's step) is compared with that variant instead.
//! * **Speedup of a page** = baseline mean onLoad / variant mean onLoad on that page
//!   (`> 1` is faster than the baseline, `2.0` means half the load time). The **percent
//!   reduction** is `100 × (1 − 1/speedup)` = `100 × (baseline − variant) / baseline`.
//!   Its confidence interval resamples the baseline's runs and the variant's runs
//!   independently and takes the percentiles of the ratio of the resampled means.
//! * **Overall speedup** of a variant on a network = geometric mean, over the pages that
//!   have both baseline and variant loads, of the per-page speedups (every page counts
//!   the same, whatever its load time). Its confidence interval is a two-level bootstrap:
//!   each resample draws the pages with replacement, then the runs of each drawn page
//!   with replacement, and takes the geometric mean of the resampled per-page speedups.
//!   The interval therefore covers both page-to-page and run-to-run variation.
//! * **Mean change** of a variant on a network = `100 × (variant mean − baseline mean) /
//!   baseline mean`, from the two network cells' pooled means (negative is faster). Every
//!   load weighs the same there, so the slowest pages dominate it, while the overall
//!   speedup gives every page the same weight: a variant that speeds up most pages but
//!   slows the heaviest ones has a speedup above 1 and a positive mean change. The report
//!   shows both and marks such rows ([`disagree`]). It is left out when the two cells
//!   do not hold the same pages.
//!
//! Every bootstrap is seeded from the names of its cell ([`seed_for`]) with the tiny
//! [`Rng`] below, so a report is identical from one build to the next, whatever the
//! order of the rows in the file.

use crate::results::{Row, SweepPoint};
use std::collections::BTreeMap;

pub mod change;
pub use change::{Change, RunChange, Verdict};

/// Bootstrap resamples per confidence interval.
pub const RESAMPLES: usize = 2000;
/// Confidence level of every interval.
pub const LEVEL: f64 = 0.95;
/// Base seed mixed into every cell's seed.
pub const SEED: u64 = 0x5EED_5BD1_2012_0001;

/// SplitMix64: a small, fast, well-mixed 64-bit generator (Steele, Lea, Flood 2014).
/// Deterministic for a seed; no global state.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform index in `0..n` (`n > 0`), by multiply-shift (bias below 2⁻⁵⁰ for the
    /// sizes used here).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
}

/// A seed derived from names (FNV-1a over the parts, separated) mixed with [`SEED`].
pub fn seed_for(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0xff)) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h ^ SEED
}

/// Arithmetic mean; `None` when empty.
pub fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// Median (mean of the two middle values for an even count); `None` when empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    quantile(xs, 0.5)
}

/// Quantile `q` in `[0, 1]` by linear interpolation between order statistics
/// (Hyndman & Fan type 7, the default of R and NumPy); `None` when empty.
pub fn quantile(xs: &[f64], q: f64) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    Some(quantile_sorted(&s, q))
}

/// [`quantile`] of already sorted, non-empty data.
fn quantile_sorted(s: &[f64], q: f64) -> f64 {
    let h = (s.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    s[lo] + (h - lo as f64) * (s[hi] - s[lo])
}

/// Geometric mean of positive values; `None` when empty or when a value is not positive.
pub fn geometric_mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|&x| x <= 0.0 || !x.is_finite()) {
        return None;
    }
    Some((xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

/// Sample standard deviation (n − 1); 0 for fewer than two values.
pub fn std_dev(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = xs.iter().sum::<f64>() / xs.len() as f64;
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
}

/// A confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ci {
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
}

impl Ci {
    /// Whether `x` lies in the interval (bounds included).
    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }
}

/// Percentile bootstrap: evaluates `stat` on [`RESAMPLES`] resamples (it draws its own
/// resample from the generator it is given) and returns the (1−[`LEVEL`])/2 and
/// (1+[`LEVEL`])/2 quantiles of the values. Non-finite values are skipped; if none is
/// left the interval is `NaN..NaN`.
pub fn bootstrap<F: FnMut(&mut Rng) -> f64>(seed: u64, mut stat: F) -> Ci {
    let mut rng = Rng::new(seed);
    let mut vals: Vec<f64> = (0..RESAMPLES)
        .map(|_| stat(&mut rng))
        .filter(|v| v.is_finite())
        .collect();
    if vals.is_empty() {
        return Ci {
            low: f64::NAN,
            high: f64::NAN,
        };
    }
    vals.sort_by(f64::total_cmp);
    let a = (1.0 - LEVEL) / 2.0;
    Ci {
        low: quantile_sorted(&vals, a),
        high: quantile_sorted(&vals, 1.0 - a),
    }
}

/// Mean of a resample (with replacement, same size) of `xs` (non-empty).
fn resampled_mean(xs: &[f64], rng: &mut Rng) -> f64 {
    let mut s = 0.0;
    for _ in 0..xs.len() {
        s += xs[rng.below(xs.len())];
    }
    s / xs.len() as f64
}

/// 95% percentile-bootstrap confidence interval of the mean; `None` when empty.
/// A single value gives the degenerate interval `[x, x]`.
pub fn bootstrap_mean_ci(xs: &[f64], seed: u64) -> Option<Ci> {
    if xs.is_empty() {
        return None;
    }
    Some(bootstrap(seed, |rng| resampled_mean(xs, rng)))
}

/// Summary of one sample (load times in ms).
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// 95% bootstrap confidence interval of the mean.
    pub ci: Ci,
    /// Sample standard deviation.
    pub sd: f64,
    /// Smallest value.
    pub min: f64,
    /// First quartile.
    pub q1: f64,
    /// Third quartile.
    pub q3: f64,
    /// Largest value.
    pub max: f64,
}

/// Summarizes a sample; `None` when empty. The CI is [`bootstrap_mean_ci`] with `seed`.
pub fn summarize(xs: &[f64], seed: u64) -> Option<Summary> {
    let ci = bootstrap_mean_ci(xs, seed)?;
    Some(describe(xs, ci))
}

/// Summarizes the pooled values of several groups (pages); the CI comes from a
/// stratified bootstrap (every group resampled within itself), or, when every group holds
/// one value, from resampling the groups. `None` when all are empty.
pub fn summarize_pooled(groups: &[Vec<f64>], seed: u64) -> Option<Summary> {
    let groups: Vec<&Vec<f64>> = groups.iter().filter(|g| !g.is_empty()).collect();
    let all: Vec<f64> = groups.iter().flat_map(|g| g.iter().copied()).collect();
    if all.is_empty() {
        return None;
    }
    if groups.iter().all(|g| g.len() == 1) {
        // One load per page: there is no run-to-run spread to resample within a page, and
        // the stratified interval would have no width; resample the pages instead.
        return summarize(&all, seed);
    }
    let ci = bootstrap(seed, |rng| {
        let mut s = 0.0;
        for g in &groups {
            for _ in 0..g.len() {
                s += g[rng.below(g.len())];
            }
        }
        s / all.len() as f64
    });
    Some(describe(&all, ci))
}

fn describe(xs: &[f64], ci: Ci) -> Summary {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    Summary {
        n: s.len(),
        mean: s.iter().sum::<f64>() / s.len() as f64,
        median: quantile_sorted(&s, 0.5),
        ci,
        sd: std_dev(&s),
        min: s[0],
        q1: quantile_sorted(&s, 0.25),
        q3: quantile_sorted(&s, 0.75),
        max: s[s.len() - 1],
    }
}

/// A speedup against the baseline (see the module documentation for the definitions).
#[derive(Clone, Debug, PartialEq)]
pub struct Speedup {
    /// Baseline mean / variant mean (per page), or their geometric mean over pages.
    pub speedup: f64,
    /// `100 × (1 − 1/speedup)`: how much shorter the load time is, in percent.
    pub reduction_pct: f64,
    /// 95% bootstrap confidence interval of the speedup.
    pub ci: Ci,
    /// Pages the speedup is computed over (1 for a page's speedup).
    pub pages: usize,
}

/// Percent reduction of load time for a speedup.
pub fn reduction_pct(speedup: f64) -> f64 {
    100.0 * (1.0 - 1.0 / speedup)
}

/// Mean change in percent: `100 × (variant − baseline) / baseline` (negative: the
/// variant's mean is lower, i.e. faster). `None` when the baseline's mean is not positive
/// or a mean is not finite.
pub fn mean_change_pct(baseline_mean: f64, variant_mean: f64) -> Option<f64> {
    (baseline_mean > 0.0 && baseline_mean.is_finite() && variant_mean.is_finite())
        .then(|| 100.0 * (variant_mean - baseline_mean) / baseline_mean)
}

/// Below this distance from 1, a speedup counts as no change for [`disagree`]: it shows
/// as `1.00×` in the report (two decimals).
pub const SPEEDUP_NEUTRAL: f64 = 0.005;
/// Below this absolute mean change (percent), the change counts as none for
/// [`disagree`]: it shows as `+0.0%` in the report (one decimal).
pub const MEAN_CHANGE_NEUTRAL_PCT: f64 = 0.05;

/// Whether a speedup (above 1: faster) and a mean change (negative: faster) point in
/// opposite directions. Values that would show as no change (see [`SPEEDUP_NEUTRAL`],
/// [`MEAN_CHANGE_NEUTRAL_PCT`]) never disagree.
pub fn disagree(speedup: f64, mean_change_pct: f64) -> bool {
    let faster_by_pages = speedup > 1.0 + SPEEDUP_NEUTRAL;
    let slower_by_pages = speedup < 1.0 - SPEEDUP_NEUTRAL;
    let faster_by_mean = mean_change_pct < -MEAN_CHANGE_NEUTRAL_PCT;
    let slower_by_mean = mean_change_pct > MEAN_CHANGE_NEUTRAL_PCT;
    (faster_by_pages && slower_by_mean) || (slower_by_pages && faster_by_mean)
}

/// Speedup of a variant on one page: `mean(baseline) / mean(variant)`, with its
/// bootstrap CI (both samples resampled independently). `None` when a sample is empty
/// or the variant's mean is not positive.
pub fn page_speedup(baseline: &[f64], variant: &[f64], seed: u64) -> Option<Speedup> {
    let b = mean(baseline)?;
    let v = mean(variant)?;
    if v <= 0.0 || b <= 0.0 {
        return None;
    }
    let ci = bootstrap(seed, |rng| {
        resampled_mean(baseline, rng) / resampled_mean(variant, rng)
    });
    Some(Speedup {
        speedup: b / v,
        reduction_pct: reduction_pct(b / v),
        ci,
        pages: 1,
    })
}

/// Overall speedup over pages: geometric mean of the per-page speedups, with the
/// two-level bootstrap CI (pages, then runs). `pairs` holds, per page, the baseline's
/// and the variant's load times; pages where either is empty or a mean is not positive
/// are left out. `None` when no page is left.
pub fn overall_speedup(pairs: &[(Vec<f64>, Vec<f64>)], seed: u64) -> Option<Speedup> {
    let pairs = usable_pairs(pairs);
    let ratios: Vec<f64> = pairs
        .iter()
        .map(|(b, v)| mean(b).unwrap() / mean(v).unwrap())
        .collect();
    let g = geometric_mean(&ratios)?;
    let ci = bootstrap(seed, |rng| {
        let mut log_sum = 0.0;
        for _ in 0..pairs.len() {
            let (b, v) = pairs[rng.below(pairs.len())];
            log_sum += (resampled_mean(b, rng) / resampled_mean(v, rng)).ln();
        }
        (log_sum / pairs.len() as f64).exp()
    });
    Some(Speedup {
        speedup: g,
        reduction_pct: reduction_pct(g),
        ci,
        pages: pairs.len(),
    })
}

/// The pages of `pairs` whose two samples both have a positive mean (the others have no
/// ratio to compare).
fn usable_pairs(pairs: &[(Vec<f64>, Vec<f64>)]) -> Vec<&(Vec<f64>, Vec<f64>)> {
    pairs
        .iter()
        .filter(|(b, v)| matches!((mean(b), mean(v)), (Some(mb), Some(mv)) if mb > 0.0 && mv > 0.0))
        .collect()
}

/// A variant as the rows describe it.
#[derive(Clone, Debug, PartialEq)]
pub struct VariantInfo {
    /// Variant name.
    pub name: String,
    /// Marked as a baseline.
    pub baseline: bool,
    /// Wire protocol.
    pub protocol: speedy_net::Protocol,
    /// Over TLS.
    pub tls: bool,
    /// The variant its speedup is computed against, when the rows name one.
    pub against: Option<String>,
    /// `sctp` when its sessions ran over SCTP (TCP, or QUIC for h3, otherwise).
    pub transport: Option<speedy_net::Carrier>,
    /// How its pages were fetched and served, when the rows record it (rows written
    /// before they did: `None`).
    pub setup: Option<Setup>,
    /// Who loaded its pages: the loader or headless Chromium.
    pub client: crate::experiment::Client,
}

/// A variant's fetching and serving set-up, as its rows record it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setup {
    /// One SPDY/h2 session for every origin.
    pub single_domain: bool,
    /// The server's push policy.
    pub push: speedy_server::PushPolicy,
    /// Server hint on.
    pub hint: bool,
    /// Client prefetch on.
    pub prefetch: bool,
}

impl Setup {
    /// The set-up a row records, if it records all of it.
    fn of(r: &Row) -> Option<Setup> {
        Some(Setup {
            single_domain: r.spdy_domains? == speedy_browser::Domains::Single,
            push: r.push?,
            hint: r.hint?,
            prefetch: r.prefetch?,
        })
    }
}

impl VariantInfo {
    /// Whether its pages came encrypted: over TLS, or HTTP/3 (QUIC always is).
    pub fn encrypted(&self) -> bool {
        self.tls || self.protocol == speedy_net::Protocol::H3
    }

    /// What the protocol ran over, for captions: `QUIC` (h3), `SCTP`, `TLS` or `TCP`.
    pub fn carrier(&self) -> &'static str {
        if self.protocol == speedy_net::Protocol::H3 {
            "QUIC"
        } else if self.transport == Some(speedy_net::Carrier::Sctp) {
            "SCTP"
        } else if self.tls {
            "TLS"
        } else {
            "TCP"
        }
    }
}

/// A network as the rows describe it.
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkInfo {
    /// Network name.
    pub name: String,
    /// Human description.
    pub desc: String,
    /// The sweep point, when the network belongs to a sweep.
    pub sweep: Option<SweepPoint>,
}

/// Statistics of one page × network × variant.
#[derive(Clone, Debug, PartialEq)]
pub struct PageCell {
    /// Page.
    pub page: String,
    /// Network.
    pub network: String,
    /// Variant.
    pub variant: String,
    /// onLoad summary over the runs.
    pub summary: Summary,
    /// Speedup against the baseline on this page (`None` for the baseline itself or
    /// when the baseline has no loads of the page).
    pub speedup: Option<Speedup>,
}

/// Statistics of one network × variant over all pages.
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkCell {
    /// Network.
    pub network: String,
    /// Variant.
    pub variant: String,
    /// Pages with at least one load.
    pub pages: usize,
    /// Runs per page (the largest count of loads of one page).
    pub runs: usize,
    /// onLoad summary, pooled over pages (stratified bootstrap CI).
    pub summary: Summary,
    /// onContentLoad summary, pooled the same way (`None` if no load has one).
    pub content_load: Option<Summary>,
    /// The baseline variant the speedup is against (`None` for a baseline).
    pub baseline: Option<String>,
    /// Overall speedup (geometric mean over pages).
    pub speedup: Option<Speedup>,
    /// Mean change against the baseline over the pages both loaded, with its interval
    /// ([`change::mean_change`]; read it through [`Stats::mean_change_ci`], which also
    /// checks that the two cells hold the same pages).
    pub change: Option<Change>,
}

/// A load left out of the statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct Excluded {
    /// Page.
    pub page: String,
    /// Network.
    pub network: String,
    /// Variant.
    pub variant: String,
    /// Run.
    pub run: u32,
    /// Why.
    pub reason: String,
}

/// One sweep: the networks of one sweep name, ordered by the swept value.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// Sweep name.
    pub name: String,
    /// `loss` or `rtt_ms`.
    pub param: String,
    /// (value, network name), ascending value.
    pub points: Vec<(f64, String)>,
}

/// All statistics of a results file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// Variants: baselines first, then in order of first appearance.
    pub variants: Vec<VariantInfo>,
    /// Networks: in order of first appearance, sweep points after the others
    /// (by sweep name, then value).
    pub networks: Vec<NetworkInfo>,
    /// Pages in order of first appearance.
    pub pages: Vec<String>,
    /// Page cells (only those with loads).
    pub page_cells: Vec<PageCell>,
    /// Network cells (only those with loads).
    pub network_cells: Vec<NetworkCell>,
    /// Loads left out (no onLoad).
    pub excluded: Vec<Excluded>,
}

/// Whether a row has a usable onLoad.
pub fn has_on_load(r: &Row) -> bool {
    r.on_load_ms.is_finite() && r.on_load_ms >= 0.0
}

type Key3 = (String, String, String);

/// The key of the page cell `page` × `network` × `variant`.
fn key(page: &str, network: &str, variant: &str) -> Key3 {
    (page.to_string(), network.to_string(), variant.to_string())
}

/// The load times of every page cell, each ordered by run so that the order of the file
/// does not matter.
struct LoadTimes {
    /// onLoad of every load with one, ms.
    on_load: BTreeMap<Key3, Vec<f64>>,
    /// onContentLoad of those loads, ms, where they have a usable one.
    content: BTreeMap<Key3, Vec<f64>>,
}

impl LoadTimes {
    /// Groups the rows' load times by page cell; the loads without an onLoad come back
    /// as the excluded ones, in the order of the rows.
    fn of(rows: &[Row]) -> (LoadTimes, Vec<Excluded>) {
        let mut excluded = Vec::new();
        let mut cells: BTreeMap<Key3, Vec<(u32, f64, f64)>> = BTreeMap::new();
        for r in rows {
            if !has_on_load(r) {
                excluded.push(Excluded {
                    page: r.page.clone(),
                    network: r.network.clone(),
                    variant: r.variant.clone(),
                    run: r.run,
                    reason: format!("no onLoad (on_load_ms = {})", r.on_load_ms),
                });
                continue;
            }
            cells
                .entry(key(&r.page, &r.network, &r.variant))
                .or_default()
                .push((r.run, r.on_load_ms, r.on_content_load_ms));
        }
        let mut times = LoadTimes {
            on_load: BTreeMap::new(),
            content: BTreeMap::new(),
        };
        for (k, mut v) in cells {
            v.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
            times
                .on_load
                .insert(k.clone(), v.iter().map(|x| x.1).collect());
            times.content.insert(
                k,
                v.iter()
                    .map(|x| x.2)
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .collect(),
            );
        }
        (times, excluded)
    }
}

/// The variants of the rows: baselines first, then the experiment's order where the rows
/// record it; stable sorts keep first-appearance order otherwise.
pub(crate) fn variants_of(rows: &[Row]) -> Vec<VariantInfo> {
    let mut variants: Vec<VariantInfo> = Vec::new();
    for r in rows {
        if !variants.iter().any(|v| v.name == r.variant) {
            variants.push(VariantInfo {
                name: r.variant.clone(),
                baseline: r.baseline,
                protocol: r.protocol,
                tls: r.tls,
                against: r.against.clone(),
                transport: r.transport,
                setup: Setup::of(r),
                client: r.client,
            });
        }
    }
    let order = |name: &str| {
        rows.iter()
            .find(|r| r.variant == name)
            .and_then(|r| r.variant_index)
            .unwrap_or(u32::MAX)
    };
    variants.sort_by_key(|v| (!v.baseline, order(&v.name)));
    variants
}

/// The networks of the rows: in order of first appearance, sweep points after the others
/// (by sweep name, then value).
pub(crate) fn networks_of(rows: &[Row]) -> Vec<NetworkInfo> {
    let mut networks: Vec<NetworkInfo> = Vec::new();
    for r in rows {
        if !networks.iter().any(|n| n.name == r.network) {
            networks.push(NetworkInfo {
                name: r.network.clone(),
                desc: r.network_desc.clone(),
                sweep: r.sweep.clone(),
            });
        }
    }
    networks.sort_by(|a, b| match (&a.sweep, &b.sweep) {
        (None, None) => std::cmp::Ordering::Equal,
        (None, Some(_)) => std::cmp::Ordering::Less,
        (Some(_), None) => std::cmp::Ordering::Greater,
        (Some(x), Some(y)) => x.sweep.cmp(&y.sweep).then(x.value.total_cmp(&y.value)),
    });
    networks
}

/// The pages of the rows in order of first appearance.
fn pages_of(rows: &[Row]) -> Vec<String> {
    let mut pages: Vec<String> = Vec::new();
    for r in rows {
        if !pages.contains(&r.page) {
            pages.push(r.page.clone());
        }
    }
    pages
}

impl Stats {
    /// Computes every statistic from the rows.
    pub fn compute(rows: &[Row]) -> Stats {
        let (times, excluded) = LoadTimes::of(rows);
        let mut st = Stats {
            variants: variants_of(rows),
            networks: networks_of(rows),
            pages: pages_of(rows),
            excluded,
            ..Stats::default()
        };
        for net in &st.networks {
            for var in &st.variants {
                let (page_cells, network_cell) = st.cells_of(&net.name, var, &times);
                st.page_cells.extend(page_cells);
                st.network_cells.extend(network_cell);
            }
        }
        st
    }

    /// The page cells of `network` × `var` (pages in name order, those with loads) and
    /// its network cell (`None` when it has no loads), each speedup against the
    /// variant's baseline on the network.
    fn cells_of(
        &self,
        network: &str,
        var: &VariantInfo,
        times: &LoadTimes,
    ) -> (Vec<PageCell>, Option<NetworkCell>) {
        let baseline = if let Some(a) = &var.against {
            Some(a.clone())
        } else if var.baseline {
            None
        } else {
            self.baseline_among(network, var, &times.on_load)
        };
        let mut page_cells = Vec::new();
        let mut groups = Vec::new();
        let mut cgroups = Vec::new();
        let mut pairs = Vec::new();
        // Bootstrap groups in page-name order, whatever the order of the file.
        let mut by_name: Vec<&String> = self.pages.iter().collect();
        by_name.sort();
        for page in by_name {
            let k = key(page, network, &var.name);
            let Some(xs) = times.on_load.get(&k) else {
                continue;
            };
            let base = baseline
                .as_ref()
                .and_then(|b| times.on_load.get(&key(page, network, b)));
            let speedup = base.and_then(|b| {
                page_speedup(b, xs, seed_for(&["page-speedup", page, network, &var.name]))
            });
            if let Some(b) = base {
                pairs.push((b.clone(), xs.clone()));
            }
            page_cells.push(PageCell {
                page: page.clone(),
                network: network.to_string(),
                variant: var.name.clone(),
                summary: summarize(xs, seed_for(&["page", page, network, &var.name]))
                    .expect("cells are non-empty"),
                speedup,
            });
            groups.push(xs.clone());
            cgroups.push(times.content[&k].clone());
        }
        let network_cell = summarize_pooled(&groups, seed_for(&["network", network, &var.name]))
            .map(|summary| NetworkCell {
                network: network.to_string(),
                variant: var.name.clone(),
                pages: groups.len(),
                runs: groups.iter().map(Vec::len).max().unwrap_or(0),
                summary,
                content_load: summarize_pooled(
                    &cgroups,
                    seed_for(&["content", network, &var.name]),
                ),
                speedup: baseline.as_ref().and_then(|_| {
                    overall_speedup(&pairs, seed_for(&["speedup", network, &var.name]))
                }),
                change: baseline.as_ref().and_then(|_| {
                    change::mean_change(&pairs, seed_for(&["change", network, &var.name]))
                }),
                baseline,
            });
        (page_cells, network_cell)
    }

    /// The baseline a variant is compared against on a network (see the module doc).
    fn baseline_among(
        &self,
        network: &str,
        var: &VariantInfo,
        times: &BTreeMap<Key3, Vec<f64>>,
    ) -> Option<String> {
        let present: Vec<&VariantInfo> = self
            .variants
            .iter()
            .filter(|v| {
                v.baseline
                    && self.pages.iter().any(|p| {
                        times.contains_key(&(p.clone(), network.to_string(), v.name.clone()))
                    })
            })
            .collect();
        present
            .iter()
            .find(|v| v.tls == var.tls)
            .or(present.first())
            .map(|v| v.name.clone())
    }

    /// The page cell of `page` × `network` × `variant`.
    pub fn page_cell(&self, page: &str, network: &str, variant: &str) -> Option<&PageCell> {
        self.page_cells
            .iter()
            .find(|c| c.page == page && c.network == network && c.variant == variant)
    }

    /// The network cell of `network` × `variant`.
    pub fn network_cell(&self, network: &str, variant: &str) -> Option<&NetworkCell> {
        self.network_cells
            .iter()
            .find(|c| c.network == network && c.variant == variant)
    }

    /// The mean change of `network` × `variant` against its baseline's network cell on
    /// the same network ([`mean_change_pct`]). `None` for a baseline, when either cell
    /// is missing, or when the two cells do not hold the same pages (every page of each
    /// is one the speedup compares): pooled means of different pages are not comparable.
    pub fn mean_change(&self, network: &str, variant: &str) -> Option<f64> {
        let cell = self.network_cell(network, variant)?;
        let base = self.network_cell(network, cell.baseline.as_deref()?)?;
        let compared = cell.speedup.as_ref()?.pages;
        if compared != cell.pages || compared != base.pages {
            return None;
        }
        mean_change_pct(base.summary.mean, cell.summary.mean)
    }

    /// The mean change of `network` × `variant` with its 95% interval; `None` where
    /// [`Stats::mean_change`] is.
    pub fn mean_change_ci(&self, network: &str, variant: &str) -> Option<Change> {
        self.mean_change(network, variant)?;
        self.network_cell(network, variant)?.change
    }

    /// Whether the overall speedup of `network` × `variant` and its mean change point
    /// in opposite directions ([`disagree`]); `false` when either is missing.
    pub fn disagrees(&self, network: &str, variant: &str) -> bool {
        let speedup = self
            .network_cell(network, variant)
            .and_then(|c| c.speedup.as_ref());
        match (speedup, self.mean_change(network, variant)) {
            (Some(s), Some(m)) => disagree(s.speedup, m),
            _ => false,
        }
    }

    /// The networks that are not points of a sweep, in order (all networks when every
    /// network is a sweep point): the report's per-page charts and the summary use them.
    pub fn main_networks(&self) -> Vec<String> {
        let main: Vec<String> = self
            .networks
            .iter()
            .filter(|n| n.sweep.is_none())
            .map(|n| n.name.clone())
            .collect();
        if main.is_empty() {
            self.networks.iter().map(|n| n.name.clone()).collect()
        } else {
            main
        }
    }

    /// The variant named `name`.
    pub fn variant(&self, name: &str) -> Option<&VariantInfo> {
        self.variants.iter().find(|v| v.name == name)
    }

    /// The sweeps, in order of name, each with its points by ascending value.
    pub fn sweeps(&self) -> Vec<Sweep> {
        let mut out: Vec<Sweep> = Vec::new();
        for n in &self.networks {
            let Some(sp) = &n.sweep else { continue };
            match out.iter_mut().find(|s| s.name == sp.sweep) {
                Some(s) => s.points.push((sp.value, n.name.clone())),
                None => out.push(Sweep {
                    name: sp.sweep.clone(),
                    param: sp.param.clone(),
                    points: vec![(sp.value, n.name.clone())],
                }),
            }
        }
        for s in &mut out {
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        out
    }
}

#[cfg(test)]
mod tests;
