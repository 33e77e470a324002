//! `speedy lab compare A B`: how the load times of one result set changed in another,
//! per network × variant, with intervals and a test (as `benchstat` compares two runs of
//! Go benchmarks), and which of the conditions the rows record differ between the two.
//! The statistics are [`crate::stats::change`]'s.

use crate::report::summary::{change_with_ci, wrap};
use crate::report::text_table;
use crate::results::{read_rows, Row};
use crate::stats::change::{run_change, Pair};
use crate::stats::{mean, Verdict};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One result set: a results file, or a directory holding `results.jsonl`.
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    /// The results file read.
    pub path: PathBuf,
    /// The experiments its rows name.
    pub experiments: Vec<String>,
    /// Loads (rows) in it.
    pub loads: usize,
}

/// A condition whose recorded values differ between the two sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    /// The condition (a field of the rows: `build`, `kernel`, `initcwnd`, ...).
    pub condition: String,
    /// The variant it differs for, for a variant's condition (`None`: the whole run's).
    pub variant: Option<String>,
    /// Its values in A.
    pub a: Vec<String>,
    /// Its values in B.
    pub b: Vec<String>,
}

/// The change of one network × variant from A to B.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    /// Network.
    pub network: String,
    /// Variant.
    pub variant: String,
    /// Pages both sides loaded (the change is over these).
    pub pages: usize,
    /// Loads of those pages in A.
    pub loads_a: usize,
    /// Loads of those pages in B.
    pub loads_b: usize,
    /// A's mean onLoad over those pages, ms.
    pub mean_a_ms: f64,
    /// B's, ms.
    pub mean_b_ms: f64,
    /// Change of load time, percent (geometric mean over pages; negative: B is faster).
    pub change_pct: f64,
    /// Its 95% interval, percent.
    pub ci_low_pct: f64,
    /// See `ci_low_pct`.
    pub ci_high_pct: f64,
    /// Two-sided p-value of the stratified permutation test.
    pub p: f64,
    /// `faster`, `slower` or `no detectable difference` (from the interval).
    pub verdict: String,
}

/// The comparison of two result sets.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// The first set (the reference).
    pub a: Side,
    /// The second.
    pub b: Side,
    /// Conditions that differ.
    pub differences: Vec<Difference>,
    /// Network × variant cells both sides ran, in A's order.
    pub cells: Vec<Cell>,
    /// Network × variant cells only one side ran: (`A` or `B`, network, variant).
    pub unpaired: Vec<(String, String, String)>,
}

/// The results file of `p`: `p` itself, or `p/results.jsonl` for a directory.
fn results_file(p: &Path) -> Result<PathBuf, String> {
    if p.is_dir() {
        Ok(p.join("results.jsonl"))
    } else if p.exists() {
        Ok(p.to_path_buf())
    } else {
        Err(format!(
            "{}: no such results directory or file (a directory holding results.jsonl, \
             or a results file)",
            p.display()
        ))
    }
}

/// A condition of the whole run, read off a row.
type Cond = (&'static str, fn(&Row) -> String);

/// Conditions of the whole run.
const RUN_CONDITIONS: &[Cond] = &[
    ("build", |r| opt(&r.build)),
    ("seed", |r| opt(&r.seed)),
    ("kernel", |r| opt(&r.kernel)),
];

/// Conditions of a variant's loads.
const VARIANT_CONDITIONS: &[Cond] = &[
    ("client", |r| r.client.to_string()),
    ("protocol", |r| r.protocol.to_string()),
    ("tls", |r| r.tls.to_string()),
    ("transport", |r| opt(&r.transport)),
    ("network", |r| format!("{}: {}", r.network, r.network_desc)),
    ("calibration", |r| r.calibration.clone()),
    ("congestion control", |r| r.tcp_cc.clone()),
    ("initcwnd", |r| r.initcwnd.to_string()),
    ("initrwnd", |r| opt(&r.initrwnd)),
    ("rack_tlp", |r| r.rack_tlp.to_string()),
    ("slow_start_after_idle", |r| {
        r.slow_start_after_idle.to_string()
    }),
    ("no_metrics_save", |r| r.no_metrics_save.to_string()),
    ("rto_min_ms", |r| opt(&r.rto_min_ms)),
    ("notsent_lowat", |r| opt(&r.notsent_lowat)),
    ("header_compression", |r| r.header_compression.clone()),
    ("connections_per_host", |r| {
        r.connections_per_host.to_string()
    }),
    ("max_connections", |r| r.max_connections.to_string()),
    ("sessions", |r| opt(&r.sessions)),
    ("spdy_domains", |r| opt(&r.spdy_domains)),
    ("push", |r| opt(&r.push)),
    ("hint", |r| opt(&r.hint)),
    ("prefetch", |r| opt(&r.prefetch)),
    ("partition", |r| opt(&r.partition)),
    ("known_servers", |r| opt(&r.known_servers)),
    ("tls_hello", |r| opt(&r.tls_hello)),
    ("proxy", |r| opt(&r.proxy)),
    ("keepalive_ms", |r| opt(&r.keepalive_ms)),
    ("revisit_after_ms", |r| opt(&r.revisit_after_ms)),
    ("session_think_ms", |r| opt(&r.session_think_ms)),
    ("cookie_bundling", |r| opt(&r.cookie_bundling)),
    ("sctp_rto_initial_ms", |r| opt(&r.sctp_rto_initial_ms)),
    ("sctp_stack", |r| opt(&r.sctp_stack)),
    ("against", |r| opt(&r.against)),
];

/// An optional value as the comparison prints it (`unset` when absent).
fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map_or("unset".into(), |x| x.to_string())
}

/// The distinct values of `cond` over `rows`, sorted.
fn values<'a>(rows: impl Iterator<Item = &'a Row>, cond: fn(&Row) -> String) -> Vec<String> {
    rows.map(cond)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The conditions that differ between `a` and `b`: the run's, then each variant's (for
/// the variants both ran).
fn differences(a: &[Row], b: &[Row]) -> Vec<Difference> {
    let mut out = Vec::new();
    for (name, f) in RUN_CONDITIONS {
        let (va, vb) = (values(a.iter(), *f), values(b.iter(), *f));
        if va != vb {
            out.push(Difference {
                condition: name.to_string(),
                variant: None,
                a: va,
                b: vb,
            });
        }
    }
    for v in variant_names(a) {
        if !b.iter().any(|r| r.variant == v) {
            continue;
        }
        for (name, f) in VARIANT_CONDITIONS {
            let of = |rows: &[Row]| values(rows.iter().filter(|r| r.variant == v), *f);
            let (va, vb) = (of(a), of(b));
            if va != vb {
                out.push(Difference {
                    condition: name.to_string(),
                    variant: Some(v.clone()),
                    a: va,
                    b: vb,
                });
            }
        }
    }
    out
}

/// The variants of `rows` in the order the statistics give them (baselines first, then
/// the experiment's order).
fn variant_names(rows: &[Row]) -> Vec<String> {
    crate::stats::variants_of(rows)
        .into_iter()
        .map(|v| v.name)
        .collect()
}

/// (network, variant) → page → onLoad times ordered by run, of the loads with an onLoad.
type Times = BTreeMap<(String, String), BTreeMap<String, Vec<(u32, f64)>>>;

fn times(rows: &[Row]) -> Times {
    let mut t: Times = BTreeMap::new();
    for r in rows.iter().filter(|r| crate::stats::has_on_load(r)) {
        t.entry((r.network.clone(), r.variant.clone()))
            .or_default()
            .entry(r.page.clone())
            .or_default()
            .push((r.run, r.on_load_ms));
    }
    for pages in t.values_mut() {
        for v in pages.values_mut() {
            v.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)));
        }
    }
    t
}

/// Compares the result sets at `a` and `b` (directories or results files). Different
/// experiments are refused unless `any_experiment`.
pub fn compare(a: &Path, b: &Path, any_experiment: bool) -> Result<Comparison, String> {
    let (fa, fb) = (results_file(a)?, results_file(b)?);
    let ra = read_rows(&fa)?;
    let rb = read_rows(&fb)?;
    for (f, rows) in [(&fa, &ra), (&fb, &rb)] {
        if rows.is_empty() {
            return Err(format!("{}: no loads", f.display()));
        }
    }
    let exps = |rows: &[Row]| values(rows.iter(), |r| r.experiment.clone());
    let side = |path: PathBuf, rows: &[Row]| Side {
        path,
        experiments: exps(rows),
        loads: rows.len(),
    };
    let (sa, sb) = (side(fa, &ra), side(fb, &rb));
    if sa.experiments != sb.experiments && !any_experiment {
        return Err(format!(
            "A ran experiment {} and B ran {}: pass --any-experiment to compare them anyway",
            sa.experiments.join(", "),
            sb.experiments.join(", ")
        ));
    }
    let (ta, tb) = (times(&ra), times(&rb));
    let mut cells = Vec::new();
    let mut unpaired = Vec::new();
    // Networks and variants in the order the statistics give them.
    let variants = variant_names(&ra);
    let keys: Vec<(String, String)> = crate::stats::networks_of(&ra)
        .into_iter()
        .flat_map(|n| variants.iter().map(move |v| (n.name.clone(), v.clone())))
        .filter(|k| ta.contains_key(k))
        .collect();
    for k in &keys {
        let (pa, Some(pb)) = (&ta[k], tb.get(k)) else {
            unpaired.push(("A".into(), k.0.clone(), k.1.clone()));
            continue;
        };
        if let Some(c) = cell(k, pa, pb) {
            cells.push(c);
        } else {
            unpaired.push(("A".into(), k.0.clone(), k.1.clone()));
        }
    }
    for k in tb.keys().filter(|k| !ta.contains_key(*k)) {
        unpaired.push(("B".into(), k.0.clone(), k.1.clone()));
    }
    Ok(Comparison {
        differences: differences(&ra, &rb),
        a: sa,
        b: sb,
        cells,
        unpaired,
    })
}

/// The cell of `k` over the pages both sides loaded; `None` when they share none.
fn cell(
    k: &(String, String),
    pa: &BTreeMap<String, Vec<(u32, f64)>>,
    pb: &BTreeMap<String, Vec<(u32, f64)>>,
) -> Option<Cell> {
    let ms = |v: &Vec<(u32, f64)>| v.iter().map(|x| x.1).collect::<Vec<f64>>();
    let pairs: Vec<(Vec<f64>, Vec<f64>)> = pa
        .iter()
        .filter_map(|(page, a)| pb.get(page).map(|b| (ms(a), ms(b))))
        .collect();
    let rc = run_change(&pairs, &[&k.0, &k.1])?;
    let all = |side: fn(&Pair) -> &Vec<f64>| {
        pairs
            .iter()
            .flat_map(|p| side(p).iter().copied())
            .collect::<Vec<f64>>()
    };
    let (xa, xb) = (all(|p| &p.0), all(|p| &p.1));
    Some(Cell {
        network: k.0.clone(),
        variant: k.1.clone(),
        pages: rc.pages,
        loads_a: xa.len(),
        loads_b: xb.len(),
        mean_a_ms: mean(&xa).unwrap_or(f64::NAN),
        mean_b_ms: mean(&xb).unwrap_or(f64::NAN),
        change_pct: rc.change.pct,
        ci_low_pct: rc.change.ci.low,
        ci_high_pct: rc.change.ci.high,
        p: rc.p,
        verdict: if xa.len() < 2 || xb.len() < 2 {
            "too few loads to tell".to_string()
        } else {
            Verdict::of_change(&rc.change.ci).text().to_string()
        },
    })
}

impl Comparison {
    /// The comparison as plain text: the two sides, the conditions that differ, one line
    /// per network × variant, and how to read it.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (n, s) in [("A", &self.a), ("B", &self.b)] {
            out.push_str(&format!(
                "{n}: {} ({}, {} loads)\n",
                s.path.display(),
                s.experiments.join(", "),
                s.loads
            ));
        }
        if self.differences.is_empty() {
            out.push_str("conditions: none of those recorded differ\n");
        } else {
            out.push_str("conditions that differ:\n");
            out.push_str(&self.differences_text());
        }
        out.push('\n');
        out.push_str(&self.table());
        for (side, net, var) in &self.unpaired {
            out.push_str(&format!("only in {side}: {net} × {var}\n"));
        }
        out.push_str(&wrap(
            "change: B's mean onLoad over A's per page, geometric mean over the pages both \
             ran (minus: B is faster), with its 95% bootstrap interval over pages and runs; \
             p: stratified permutation test (loads shuffled between A and B within each \
             page); verdict: faster or slower when the interval excludes 0, else no \
             detectable difference.",
        ));
        out
    }

    /// One line per differing condition; a change made alike to every compared variant
    /// is said once, as `(every variant)`.
    fn differences_text(&self) -> String {
        let variants: BTreeSet<&str> = self.cells.iter().map(|c| c.variant.as_str()).collect();
        let mut out = String::new();
        let mut said: Vec<(&str, &[String], &[String])> = Vec::new();
        for d in &self.differences {
            let key = (d.condition.as_str(), d.a.as_slice(), d.b.as_slice());
            let alike = self
                .differences
                .iter()
                .filter(|e| {
                    e.variant.is_some()
                        && (e.condition.as_str(), e.a.as_slice(), e.b.as_slice()) == key
                })
                .count();
            let every = d.variant.is_some() && variants.len() > 1 && alike == variants.len();
            if every && said.contains(&key) {
                continue;
            }
            let who = match &d.variant {
                _ if every => {
                    said.push(key);
                    " (every variant)".to_string()
                }
                Some(v) => format!(" ({v})"),
                None => String::new(),
            };
            out.push_str(&format!(
                "  {}{who}: A {} | B {}\n",
                d.condition,
                d.a.join(", "),
                d.b.join(", ")
            ));
        }
        out
    }

    fn table(&self) -> String {
        let header = [
            "network",
            "variant",
            "pages",
            "loads A/B",
            "A mean (ms)",
            "B mean (ms)",
            "change B vs A (95% CI)",
            "p",
            "verdict",
        ];
        let left = [true, true, false, false, false, false, false, false, true];
        let mut lines = Vec::new();
        let mut last_net = "";
        for c in &self.cells {
            let change = crate::stats::Change {
                pct: c.change_pct,
                ci: crate::stats::Ci {
                    low: c.ci_low_pct,
                    high: c.ci_high_pct,
                },
            };
            lines.push(vec![
                if c.network == last_net {
                    String::new()
                } else {
                    c.network.clone()
                },
                c.variant.clone(),
                c.pages.to_string(),
                format!("{}/{}", c.loads_a, c.loads_b),
                format!("{:.0}", c.mean_a_ms),
                format!("{:.0}", c.mean_b_ms),
                change_with_ci(&change),
                if c.p < 0.001 {
                    "<0.001".into()
                } else {
                    format!("{:.3}", c.p)
                },
                c.verdict.clone(),
            ]);
            last_net = &c.network;
        }
        if lines.is_empty() {
            return "no network × variant has loads of the same pages in both\n".into();
        }
        text_table(&header, &left, &lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::append_row;

    fn row(exp: &str, page: &str, variant: &str, run: u32, ms: f64, initcwnd: u32) -> Row {
        let mut r: Row = serde_json::from_value(serde_json::json!({
            "experiment": exp, "page": page, "network": "dsl", "network_desc": "d",
            "variant": variant, "baseline": variant == "http1",
            "protocol": if variant == "http1" { "http/1.1" } else { "spdy/3.1" },
            "tls": false, "run": run, "on_load_ms": ms, "on_content_load_ms": ms / 2.0,
            "objects": 1, "failed_objects": 0, "bytes_down": 1, "bytes_up": 1,
            "packets_down": 1, "packets_up": 1, "link_drops": 0,
            "header_bytes_sent_raw": 0, "header_bytes_sent_compressed": 0,
            "header_bytes_received_raw": 0, "header_bytes_received_compressed": 0,
            "connections": 1, "tcp_retransmissions": 0, "har": "h"
        }))
        .unwrap();
        r.initcwnd = initcwnd;
        r.kernel = Some("6.1.0".into());
        r
    }

    /// A results file of `exp` with 6 pages × 4 runs of http1 and spdy; spdy's load
    /// times are scaled by `spdy_scale`, its initcwnd is `spdy_initcwnd`.
    fn results(dir: &Path, exp: &str, spdy_scale: f64, spdy_initcwnd: u32, jitter: f64) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let f = dir.join("results.jsonl");
        for p in 0..6 {
            for run in 0..4 {
                let base = 1000.0 + 300.0 * p as f64 + jitter * ((run * 7 + p * 3) % 5) as f64;
                let page = format!("p{p}");
                append_row(&f, &row(exp, &page, "http1", run, base, 10)).unwrap();
                let spdy = row(exp, &page, "spdy", run, base * spdy_scale, spdy_initcwnd);
                append_row(&f, &spdy).unwrap();
            }
        }
        f
    }

    #[test]
    fn the_same_run_twice_shows_no_difference_and_a_changed_knob_shows_with_its_condition() {
        let d = tempfile::tempdir().unwrap();
        let a = results(&d.path().join("a"), "quick", 1.0, 10, 40.0);
        let same = results(&d.path().join("same"), "quick", 1.0, 10, 45.0);
        let c = compare(&a, &same, false).unwrap();
        assert!(c.differences.is_empty(), "{:?}", c.differences);
        assert_eq!(c.cells.len(), 2);
        for cell in &c.cells {
            assert_eq!(cell.verdict, "no detectable difference", "{cell:?}");
            assert!(cell.p > 0.05, "{cell:?}");
            assert_eq!((cell.pages, cell.loads_a, cell.loads_b), (6, 24, 24));
        }
        let t = c.text();
        assert!(
            t.contains("conditions: none of those recorded differ"),
            "{t}"
        );
        // B's spdy takes 25% longer with initcwnd 3: detected, and the knob is named.
        let slow = results(&d.path().join("slow"), "quick", 1.25, 3, 40.0);
        let c = compare(a.parent().unwrap(), &slow, false).unwrap();
        assert_eq!(
            c.differences,
            vec![Difference {
                condition: "initcwnd".into(),
                variant: Some("spdy".into()),
                a: vec!["10".into()],
                b: vec!["3".into()],
            }]
        );
        let spdy = c.cells.iter().find(|c| c.variant == "spdy").unwrap();
        assert!((spdy.change_pct - 25.0).abs() < 0.01, "{spdy:?}");
        assert!(spdy.ci_low_pct > 20.0 && spdy.p < 0.01, "{spdy:?}");
        assert_eq!(spdy.verdict, "slower");
        let t = c.text();
        assert!(t.contains("initcwnd (spdy): A 10 | B 3"), "{t}");
        assert!(t.contains("+25.0% ("), "{t}");
        assert!(
            t.contains("<0.001"),
            "the smallest p the test can give: {t}"
        );
        // The same change to every variant is said once.
        let mut both = c.clone();
        both.differences.push(Difference {
            variant: Some("http1".into()),
            ..c.differences[0].clone()
        });
        let t = both.text();
        assert!(t.contains("initcwnd (every variant): A 10 | B 3"), "{t}");
        assert_eq!(t.matches("initcwnd").count(), 1, "{t}");
    }

    #[test]
    fn different_experiments_are_refused_unless_asked_and_missing_cells_are_named() {
        let d = tempfile::tempdir().unwrap();
        let a = results(&d.path().join("a"), "quick", 1.0, 10, 40.0);
        let b = results(&d.path().join("b"), "cellular", 1.0, 10, 40.0);
        let e = compare(&a, &b, false).unwrap_err();
        assert!(
            e.contains("A ran experiment quick and B ran cellular"),
            "{e}"
        );
        assert!(e.contains("--any-experiment"), "{e}");
        assert!(compare(&a, &b, true).is_ok());
        // B without spdy: the cell is listed as A's only.
        let only = d.path().join("only");
        std::fs::create_dir_all(&only).unwrap();
        let f = only.join("results.jsonl");
        append_row(&f, &row("quick", "p0", "http1", 0, 1000.0, 10)).unwrap();
        let c = compare(&a, &only, false).unwrap();
        assert_eq!(c.unpaired, vec![("A".into(), "dsl".into(), "spdy".into())]);
        assert!(c.text().contains("only in A: dsl × spdy"));
        let empty = d.path().join("empty.jsonl");
        std::fs::write(&empty, "").unwrap();
        assert!(compare(&a, &empty, false).unwrap_err().contains("no loads"));
    }
}
