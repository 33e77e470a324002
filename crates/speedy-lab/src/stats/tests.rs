//! Tests of the statistics: the estimators, the bootstrap, and the cells of [`Stats::compute`].

use super::*;

#[test]
fn one_load_per_page_still_has_an_interval() {
    let groups: Vec<Vec<f64>> = [900.0, 1000.0, 1100.0, 1300.0]
        .iter()
        .map(|x| vec![*x])
        .collect();
    let s = summarize_pooled(&groups, 7).unwrap();
    assert!(s.ci.low < s.mean && s.mean < s.ci.high, "{:?}", s.ci);
    let two: Vec<Vec<f64>> = vec![vec![1000.0, 1000.0], vec![1200.0, 1200.0]];
    let t = summarize_pooled(&two, 7).unwrap();
    assert_eq!(
        (t.ci.low, t.ci.high),
        (1100.0, 1100.0),
        "no spread within pages"
    );
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn median_odd_and_even() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    assert_eq!(median(&[7.0]), Some(7.0));
    assert_eq!(median(&[]), None);
}

#[test]
fn quantiles_type7() {
    let xs = [1.0, 2.0, 3.0, 4.0, 5.0];
    assert_eq!(quantile(&xs, 0.25), Some(2.0));
    assert_eq!(quantile(&xs, 0.75), Some(4.0));
    assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.25), Some(1.75));
    assert_eq!(quantile(&xs, 0.0), Some(1.0));
    assert_eq!(quantile(&xs, 1.0), Some(5.0));
}

#[test]
fn mean_sd_geomean() {
    assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
    assert_eq!(mean(&[]), None);
    assert!(close(
        std_dev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]),
        2.138089935299395
    ));
    assert!(close(geometric_mean(&[2.0, 8.0]).unwrap(), 4.0));
    assert_eq!(geometric_mean(&[1.0, 0.0]), None);
}

#[test]
fn rng_is_deterministic_and_uniform_enough() {
    let a: Vec<u64> = {
        let mut r = Rng::new(42);
        (0..5).map(|_| r.next_u64()).collect()
    };
    let b: Vec<u64> = {
        let mut r = Rng::new(42);
        (0..5).map(|_| r.next_u64()).collect()
    };
    assert_eq!(a, b);
    // Known first output of SplitMix64 for seed 0.
    assert_eq!(Rng::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
    let mut r = Rng::new(7);
    let mut counts = [0usize; 10];
    for _ in 0..100_000 {
        counts[r.below(10)] += 1;
    }
    for c in counts {
        assert!((9_500..10_500).contains(&c), "{counts:?}");
    }
}

#[test]
fn bootstrap_ci_contains_mean_and_is_deterministic() {
    let xs = [980.0, 1010.0, 1200.0, 950.0, 1105.0, 1020.0, 990.0, 1500.0];
    let m = mean(&xs).unwrap();
    let a = bootstrap_mean_ci(&xs, 1).unwrap();
    let b = bootstrap_mean_ci(&xs, 1).unwrap();
    let c = bootstrap_mean_ci(&xs, 2).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert!(a.contains(m), "{a:?} vs {m}");
    assert!(a.low >= 950.0 && a.high <= 1500.0);
    assert!(a.high - a.low > 10.0);
    // Constant data: the interval is the value.
    let k = bootstrap_mean_ci(&[5.0; 6], 3).unwrap();
    assert_eq!((k.low, k.high), (5.0, 5.0));
    assert_eq!(bootstrap_mean_ci(&[], 3), None);
}

#[test]
fn bootstrap_ci_of_normal_sample_is_close_to_t_interval() {
    // 1..=20: mean 10.5, sd 5.916; normal-theory half width ≈ 1.96·5.916/√20 ≈ 2.59.
    let xs: Vec<f64> = (1..=20).map(f64::from).collect();
    let ci = bootstrap_mean_ci(&xs, 9).unwrap();
    let half = (ci.high - ci.low) / 2.0;
    assert!((2.2..2.9).contains(&half), "{ci:?}");
    assert!((ci.low + ci.high) / 2.0 > 10.0 && (ci.low + ci.high) / 2.0 < 11.0);
}

#[test]
fn summary_fields() {
    let s = summarize(&[4.0, 1.0, 3.0, 2.0], 5).unwrap();
    assert_eq!(
        (s.n, s.mean, s.median, s.min, s.max),
        (4, 2.5, 2.5, 1.0, 4.0)
    );
    assert_eq!((s.q1, s.q3), (1.75, 3.25));
    let p = summarize_pooled(&[vec![1.0, 2.0], vec![], vec![3.0, 4.0]], 5).unwrap();
    assert_eq!((p.n, p.mean, p.median), (4, 2.5, 2.5));
    assert!(p.ci.contains(2.5));
    assert_eq!(summarize_pooled(&[vec![], vec![]], 5), None);
}

#[test]
fn speedup_of_identical_data_is_one() {
    let xs = vec![1000.0, 1100.0, 900.0, 1050.0];
    let s = page_speedup(&xs, &xs, 11).unwrap();
    assert_eq!(s.speedup, 1.0);
    assert_eq!(s.reduction_pct, 0.0);
    assert!(s.ci.contains(1.0));
    let o = overall_speedup(&[(xs.clone(), xs.clone()), (xs.clone(), xs)], 11).unwrap();
    assert!(close(o.speedup, 1.0));
    assert_eq!(o.pages, 2);
    assert!(o.ci.contains(1.0));
}

#[test]
fn speedup_known_answers() {
    // Twice as fast: speedup 2, 50% shorter.
    let s = page_speedup(&[2000.0, 2000.0], &[1000.0, 1000.0], 1).unwrap();
    assert_eq!((s.speedup, s.reduction_pct), (2.0, 50.0));
    assert_eq!((s.ci.low, s.ci.high), (2.0, 2.0));
    // Pages with speedups 2 and 8: geometric mean 4, 75% shorter.
    let o = overall_speedup(
        &[
            (vec![200.0], vec![100.0]),
            (vec![800.0], vec![100.0]),
            (vec![], vec![100.0]),
        ],
        1,
    )
    .unwrap();
    assert!(close(o.speedup, 4.0));
    assert!(close(o.reduction_pct, 75.0));
    assert_eq!(o.pages, 2);
    assert!(o.ci.low >= 2.0 - 1e-9 && o.ci.high <= 8.0 + 1e-9);
    assert!(o.ci.contains(4.0));
    assert_eq!(overall_speedup(&[(vec![], vec![1.0])], 1), None);
    assert_eq!(page_speedup(&[], &[1.0], 1), None);
}

fn row(page: &str, net: &str, var: &str, base: bool, tls: bool, run: u32, ms: f64) -> Row {
    // Through JSON so that fields added to the schema with defaults need no change here.
    serde_json::from_value(serde_json::json!({
        "experiment": "t", "page": page, "network": net, "network_desc": format!("{net} desc"),
        "variant": var, "baseline": base,
        "protocol": if base { "http/1.1" } else { "spdy/3.1" }, "tls": tls, "run": run,
        "on_load_ms": ms, "on_content_load_ms": ms / 2.0, "objects": 10, "failed_objects": 0,
        "bytes_down": 0, "bytes_up": 0, "packets_down": 0, "packets_up": 0, "link_drops": 0,
        "header_bytes_sent_raw": 0, "header_bytes_sent_compressed": 0,
        "header_bytes_received_raw": 0, "header_bytes_received_compressed": 0,
        "connections": 1, "tcp_retransmissions": 0, "har": ""
    }))
    .unwrap()
}

#[test]
fn compute_cells_baselines_and_order() {
    let mut rows = vec![];
    for run in 0..3 {
        let j = run as f64;
        rows.push(row("a", "dsl", "spdy", false, false, run, 500.0 + j));
        rows.push(row("a", "dsl", "http1", true, false, run, 1000.0 + j));
        rows.push(row("b", "dsl", "spdy", false, false, run, 400.0 + j));
        rows.push(row("b", "dsl", "http1", true, false, run, 1600.0 + j));
        rows.push(row("a", "dsl", "http1-tls", true, true, run, 1200.0));
        rows.push(row("a", "dsl", "spdy-tls", false, true, run, 600.0));
    }
    rows.push(row("b", "dsl", "spdy", false, false, 3, -1.0));
    let st = Stats::compute(&rows);
    let names: Vec<&str> = st.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["http1", "http1-tls", "spdy", "spdy-tls"]);
    assert_eq!(st.pages, ["a", "b"]);
    assert_eq!(st.excluded.len(), 1);
    let c = st.page_cell("a", "dsl", "spdy").unwrap();
    assert_eq!(
        (c.summary.n, c.summary.mean, c.summary.median),
        (3, 501.0, 501.0)
    );
    assert!(close(c.speedup.as_ref().unwrap().speedup, 1001.0 / 501.0));
    assert!(st.page_cell("a", "dsl", "http1").unwrap().speedup.is_none());
    let n = st.network_cell("dsl", "spdy").unwrap();
    assert_eq!((n.pages, n.runs, n.summary.n), (2, 3, 6));
    assert_eq!(n.summary.mean, 451.0);
    assert_eq!(n.baseline.as_deref(), Some("http1"));
    let expect = f64::sqrt((1001.0 / 501.0) * (1601.0 / 401.0));
    assert!(close(n.speedup.as_ref().unwrap().speedup, expect));
    assert!(n.content_load.as_ref().unwrap().mean > 0.0);
    // TLS variants compare with the TLS baseline.
    let t = st.network_cell("dsl", "spdy-tls").unwrap();
    assert_eq!(t.baseline.as_deref(), Some("http1-tls"));
    assert_eq!(t.speedup.as_ref().unwrap().speedup, 2.0);
    // Row order does not change anything.
    let mut rev = rows.clone();
    rev.reverse();
    let st2 = Stats::compute(&rev);
    assert_eq!(
        st2.network_cell("dsl", "spdy"),
        st.network_cell("dsl", "spdy")
    );
}

#[test]
fn mean_change_and_disagreement() {
    assert!(close(mean_change_pct(1000.0, 877.0).unwrap(), -12.3));
    assert!(close(mean_change_pct(1000.0, 1040.0).unwrap(), 4.0));
    assert_eq!(mean_change_pct(0.0, 10.0), None);
    // Faster by pages, slower by the mean (and the other way round) disagree.
    assert!(disagree(1.07, 4.0));
    assert!(disagree(0.9, -3.0));
    assert!(!disagree(1.07, -4.0));
    assert!(!disagree(0.9, 3.0));
    // What shows as no change never disagrees.
    assert!(!disagree(1.004, 2.0));
    assert!(!disagree(1.2, 0.04));
    // Two pages: 2× on the light one, 0.8× on the heavy one.
    let mut rows = vec![];
    for run in 0..2 {
        rows.push(row("light", "dsl", "http1", true, false, run, 1000.0));
        rows.push(row("light", "dsl", "spdy", false, false, run, 500.0));
        rows.push(row("heavy", "dsl", "http1", true, false, run, 10_000.0));
        rows.push(row("heavy", "dsl", "spdy", false, false, run, 12_500.0));
    }
    let st = Stats::compute(&rows);
    let sp = st
        .network_cell("dsl", "spdy")
        .unwrap()
        .speedup
        .clone()
        .unwrap();
    assert!(close(sp.speedup, (2.0f64 * 0.8).sqrt()));
    let m = st.mean_change("dsl", "spdy").unwrap();
    assert!(close(m, 100.0 * (6500.0 - 5500.0) / 5500.0));
    assert!(st.disagrees("dsl", "spdy"));
    assert_eq!(st.mean_change("dsl", "http1"), None);
    // A page only the variant loaded: the pooled means weigh different pages.
    rows.push(row("extra", "dsl", "spdy", false, false, 0, 100.0));
    let st = Stats::compute(&rows);
    assert_eq!(st.mean_change("dsl", "spdy"), None);
    assert!(!st.disagrees("dsl", "spdy"));
}

#[test]
fn sweeps_are_grouped_and_sorted() {
    let mut rows = vec![];
    for (net, v) in [("l2", 0.02), ("l0", 0.0), ("l1", 0.01)] {
        let mut r = row("a", net, "http1", true, false, 0, 100.0);
        r.sweep = Some(SweepPoint {
            sweep: "loss".into(),
            param: "loss".into(),
            value: v,
        });
        rows.push(r);
    }
    rows.push(row("a", "cable", "http1", true, false, 0, 100.0));
    let st = Stats::compute(&rows);
    let nets: Vec<&str> = st.networks.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(nets, ["cable", "l0", "l1", "l2"]);
    let sw = st.sweeps();
    assert_eq!(sw.len(), 1);
    let pts: Vec<&str> = sw[0].points.iter().map(|p| p.1.as_str()).collect();
    assert_eq!(pts, ["l0", "l1", "l2"]);
}
