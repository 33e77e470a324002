//! The drawings of SST's figures (`crate::sst`): Fig 7's transaction times, Fig 8's
//! page loads, Fig 9's bytes received over time per request.

use super::charts::{lines, Point, Series};
use super::svg;
use crate::sst::Fig9Run;

/// Points drawn per request at most (a progress file has one per body piece).
const MAX_POINTS: usize = 400;

/// One chart: a line per request, cumulative kB against seconds since the connection
/// was up.
pub fn fig9_chart(r: &Fig9Run, third_at: f64, swap_at: f64) -> String {
    let names = [
        "request 1 (priority 3)".to_string(),
        format!("request 2 (priority 3, raised to 0 at {swap_at} s)"),
        format!("request 3 (priority 0 from {third_at} s, 3 from {swap_at} s)"),
    ];
    let series: Vec<(Series, Vec<Point>)> = r
        .traces
        .iter()
        .zip(names)
        .enumerate()
        .map(|(i, (tr, name))| {
            let step = tr.len().div_ceil(MAX_POINTS).max(1);
            let mut pts: Vec<Point> = tr
                .iter()
                .enumerate()
                .filter(|(k, _)| k % step == 0 || *k + 1 == tr.len())
                .map(|(_, &(t, b))| Point {
                    x: t,
                    y: b as f64 / 1000.0,
                    ci: None,
                    title: format!("{t:.2} s: {:.0} kB", b as f64 / 1000.0),
                })
                .collect();
            if i == 2 {
                // Request 3 had nothing before it started.
                pts.insert(
                    0,
                    Point {
                        x: third_at,
                        y: 0.0,
                        ci: None,
                        title: "start".into(),
                    },
                );
            } else {
                pts.insert(
                    0,
                    Point {
                        x: 0.0,
                        y: 0.0,
                        ci: None,
                        title: "start".into(),
                    },
                );
            }
            (
                Series {
                    name,
                    style: svg::style(i),
                },
                pts,
            )
        })
        .collect();
    lines(
        &format!("SST Fig 9 over {}", r.protocol),
        &series,
        "seconds since the connection was up",
        "kB received",
        &|v| format!("{v:.0}"),
    )
}

/// Escapes text for HTML content.
pub fn escape(s: &str) -> String {
    svg::esc(s)
}

/// SST's Fig 7: median transaction time against response size (log scale), a line
/// per variant.
pub fn fig7_chart(r: &crate::sst::Fig7Result) -> String {
    let series: Vec<(Series, Vec<Point>)> = r
        .iter()
        .enumerate()
        .map(|(i, (v, by_size))| {
            let pts = by_size
                .iter()
                .map(|(&n, &ms)| Point {
                    x: (n as f64).log10(),
                    y: ms,
                    ci: None,
                    title: format!("{v}, {}: {ms:.0} ms", crate::sst::size_label(n)),
                })
                .collect();
            (
                Series {
                    name: v.clone(),
                    style: svg::style(i),
                },
                pts,
            )
        })
        .collect();
    lines(
        "SST Fig 7: transaction time against size",
        &series,
        "response size (log scale)",
        "ms, request to last byte (median)",
        &|x| crate::sst::size_label(10f64.powf(x).round() as usize),
    )
}

/// SST Fig 8: page load time against the page's size, a line per flavour (pages in
/// order of size).
pub fn fig8_chart(r: &crate::sst::Fig8Result) -> String {
    let series: Vec<(Series, Vec<Point>)> = crate::sst::FLAVOURS
        .iter()
        .filter_map(|name| Some((*name, r.times.get(*name)?)))
        .enumerate()
        .map(|(i, (name, times))| {
            let mut pts: Vec<Point> = r
                .pages
                .iter()
                .zip(times)
                .map(|(p, &ms)| Point {
                    x: p.bytes as f64 / 1e3,
                    y: ms,
                    ci: None,
                    title: format!(
                        "{name}: {} objects, {:.0} KB: {ms:.0} ms",
                        p.objects,
                        p.bytes as f64 / 1e3
                    ),
                })
                .collect();
            pts.sort_by(|a, b| a.x.total_cmp(&b.x));
            (
                Series {
                    name: name.to_string(),
                    style: svg::style(i),
                },
                pts,
            )
        })
        .collect();
    lines(
        "SST Fig 8: page load time against page size",
        &series,
        "page size, KB",
        "ms, page load",
        &|x| format!("{x:.0}"),
    )
}
