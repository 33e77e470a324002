//! Load-time sections: summary, speedup per page, scatter, box plots, CDFs, sweeps.

use super::charts::{self, Bar, Bars, Point};
use super::html::{self, figure, table, with_ci, Cell};
use super::svg;
use super::{dist, Ctx};
use crate::stats::{has_on_load, Speedup, Stats};

const CI_NOTE: &str = "Error bars: 95% percentile-bootstrap confidence interval of the mean.";

/// The reading guide shown above the summary table (and, shortened, under the text
/// summary of `speedy lab`).
pub const READING_GUIDE: &str = "Speedup is the typical page's gain (baseline ÷ variant per page, \
     geometric mean over pages; above 1× is faster). Mean change is the shift of the average load \
     time over all loads, which the slowest pages dominate (minus is faster). Where they disagree (⚠), \
     most pages moved one way and the heaviest the other.";

/// Tooltip of the ⚠ marker.
const DISAGREE_TITLE: &str = "Speedup and mean change point in opposite directions: most pages \
     moved one way, while the slowest pages, which dominate the average, moved the other.";

/// The ⚠ marker (HTML) for a row whose speedup and mean change disagree.
fn disagree_mark() -> String {
    format!(
        r#" <span class="warn" title="{}">⚠ disagree</span>"#,
        svg::esc(DISAGREE_TITLE)
    )
}

/// `+4.0%` / `−12.3%`: a signed percentage with a true minus sign.
pub(super) fn signed_pct(v: f64) -> String {
    let s = format!("{v:+.1}%");
    if s == "-0.0%" {
        "+0.0%".into()
    } else {
        s.replacen('-', "−", 1)
    }
}

/// The mean change of a network cell against its baseline, marked when it disagrees
/// with the speedup; `–` for a baseline.
fn mean_change_cell(stats: &Stats, network: &str, variant: &str) -> Cell {
    match stats.mean_change(network, variant) {
        None => Cell::num("–"),
        Some(m) => {
            let mut h = svg::esc(&signed_pct(m));
            if stats.disagrees(network, variant) {
                h.push_str(&disagree_mark());
            }
            Cell::raw(h, "")
        }
    }
}

/// [`speedup_cell`] of a network cell, with the ⚠ marker when its speedup and its mean
/// change point in opposite directions (for tables that show the means beside it).
pub(super) fn network_speedup_cell(stats: &Stats, network: &str, variant: &str) -> Cell {
    let mut c = speedup_cell(
        stats
            .network_cell(network, variant)
            .and_then(|c| c.speedup.as_ref()),
    );
    if stats.disagrees(network, variant) {
        c.html.push_str(&disagree_mark());
    }
    c
}

/// `1.52×` with its CI in small print, coloured when the CI excludes 1.
pub(super) fn speedup_cell(s: Option<&Speedup>) -> Cell {
    match s {
        None => Cell::num("–"),
        Some(s) => Cell::raw(
            with_ci(
                &format!("{:.2}×", s.speedup),
                &format!("{:.2}", s.ci.low),
                &format!("{:.2}", s.ci.high),
            ),
            if s.ci.low > 1.0 {
                "good"
            } else if s.ci.high < 1.0 {
                "bad"
            } else {
                ""
            },
        ),
    }
}

pub(super) fn reduction_cell(s: Option<&Speedup>) -> Cell {
    match s {
        None => Cell::num("–"),
        Some(s) => Cell::num(format!("{:+.1}%", -s.reduction_pct)),
    }
}

/// Mean ± CI and speedup per network × variant, as a table and a bar chart.
pub fn summary(cx: &mut Ctx) -> String {
    if cx.stats.network_cells.is_empty() {
        return charts::no_data("no load has an onLoad time");
    }
    let mut out = String::new();
    let mut rows = Vec::new();
    for net in &cx.main_networks {
        let mut first = true;
        for v in &cx.stats.variants {
            let Some(c) = cx.stats.network_cell(net, &v.name) else {
                continue;
            };
            let s = &c.summary;
            rows.push((
                vec![
                    Cell::text(if first { net.as_str() } else { "" }),
                    Cell::raw(
                        html::swatch(cx.style(&v.name).colour, &cx.variant_label(&v.name)),
                        "l",
                    ),
                    Cell::num(c.pages.to_string()),
                    Cell::num(s.n.to_string()),
                    Cell::raw(
                        with_ci(&svg::ms(s.mean), &svg::ms(s.ci.low), &svg::ms(s.ci.high)),
                        "",
                    ),
                    Cell::num(svg::ms(s.median)),
                    Cell::num(
                        c.content_load
                            .as_ref()
                            .map_or("–".into(), |x| svg::ms(x.mean)),
                    ),
                    Cell::text(c.baseline.as_deref().unwrap_or(if v.baseline {
                        "(baseline)"
                    } else {
                        "–"
                    })),
                    speedup_cell(c.speedup.as_ref()),
                    mean_change_cell(&cx.stats, net, &v.name),
                ],
                first,
            ));
            first = false;
        }
    }
    out.push_str(&format!(
        r#"<p class="guide"><b>How to read:</b> {}</p>"#,
        svg::esc(READING_GUIDE)
    ));
    out.push_str(&table(
        &[
            ("Network", true),
            ("Variant", true),
            ("Pages", false),
            ("Loads", false),
            ("Mean onLoad (ms) [95% CI]", false),
            ("Median (ms)", false),
            ("Mean onContentLoad (ms)", false),
            ("Against", true),
            ("Speedup [95% CI]", false),
            ("Mean change", false),
        ],
        &rows,
    ));
    out.push_str(&html::p(
        "Speedup = baseline mean onLoad ÷ variant mean onLoad per page, then the geometric mean over pages; \
         its interval resamples pages, then runs. Green: the whole interval is above 1; red: below 1. \
         Mean change = (variant mean onLoad − baseline mean onLoad) ÷ baseline mean onLoad, both over all loads \
         of all pages (the Mean onLoad column).",
    ));
    let variants: Vec<String> = cx.stats.variants.iter().map(|v| v.name.clone()).collect();
    let values: Vec<Vec<Option<Bar>>> = cx
        .main_networks
        .iter()
        .map(|n| {
            variants
                .iter()
                .map(|v| {
                    cx.stats.network_cell(n, v).map(|c| Bar {
                        value: c.summary.mean,
                        ci: Some((c.summary.ci.low, c.summary.ci.high)),
                        upper: None,
                        title: format!(
                            "{n} · {v}: mean {} ms [{} – {}], n={}",
                            svg::ms(c.summary.mean),
                            svg::ms(c.summary.ci.low),
                            svg::ms(c.summary.ci.high),
                            c.summary.n
                        ),
                    })
                })
                .collect()
        })
        .collect();
    let chart = charts::bars(&Bars {
        label: "Mean page load time per network and variant".into(),
        groups: cx.main_networks.clone(),
        series: variants.iter().map(|v| cx.series(v)).collect(),
        values,
        y_title: "mean onLoad (ms)".into(),
        fmt: svg::num,
        stack_names: None,
        y_max: None,
    });
    let cap = cx.caption(
        &cx.main_networks.clone(),
        None,
        &format!("Mean onLoad over all loads of all pages. {CI_NOTE}"),
    );
    out.push_str(&figure(&chart, &cap));
    if cx.main_networks.len() < cx.stats.networks.len() {
        out.push_str(&html::p(
            "Networks that are points of a sweep are in the Sweeps section.",
        ));
    }
    out
}

/// Per network: a table of pages × variants (mean onLoad and speedup).
pub fn per_page(cx: &mut Ctx) -> String {
    let mut out = String::new();
    for net in cx.main_networks.clone() {
        let vars: Vec<String> = cx
            .stats
            .variants
            .iter()
            .filter(|v| cx.stats.network_cell(&net, &v.name).is_some())
            .map(|v| v.name.clone())
            .collect();
        if vars.is_empty() {
            continue;
        }
        let mut header: Vec<(String, bool)> = vec![("Page".into(), true)];
        for v in &vars {
            header.push((format!("{v}: mean ms"), false));
            if !cx.stats.variant(v).is_some_and(|x| x.baseline) {
                header.push((format!("{v}: speedup"), false));
            }
        }
        let mut rows = Vec::new();
        for page in &cx.stats.pages {
            let mut cells = vec![Cell::text(page)];
            for v in &vars {
                let c = cx.stats.page_cell(page, &net, v);
                cells.push(match c {
                    Some(c) => Cell::raw(
                        with_ci(
                            &svg::ms(c.summary.mean),
                            &svg::ms(c.summary.ci.low),
                            &svg::ms(c.summary.ci.high),
                        ),
                        "",
                    ),
                    None => Cell::num("–"),
                });
                if !cx.stats.variant(v).is_some_and(|x| x.baseline) {
                    cells.push(speedup_cell(c.and_then(|c| c.speedup.as_ref())));
                }
            }
            rows.push((cells, false));
        }
        let hdr: Vec<(&str, bool)> = header.iter().map(|(s, l)| (s.as_str(), *l)).collect();
        let open = if cx.stats.pages.len() <= 12 {
            " open"
        } else {
            ""
        };
        out.push_str(&format!(
            "<details{open}><summary>{}</summary>{}{}</details>",
            svg::esc(&format!("{net}: {} pages", cx.stats.pages.len())),
            table(&hdr, &rows),
            html::p(&cx.caption(std::slice::from_ref(&net), None, "Mean onLoad per page with its 95% bootstrap CI; speedup against the baseline with its CI."))
        ));
    }
    if out.is_empty() {
        return charts::no_data("no page has loads");
    }
    out
}

/// Per network: baseline mean per page (x) against each other variant's mean (y).
pub fn scatter(cx: &mut Ctx) -> String {
    let mut out = String::new();
    for net in cx.main_networks.clone() {
        let mut series = Vec::new();
        let mut bases = Vec::new();
        for v in cx.stats.variants.iter().filter(|v| !v.baseline) {
            let Some(nc) = cx.stats.network_cell(&net, &v.name) else {
                continue;
            };
            let Some(base) = nc.baseline.clone() else {
                continue;
            };
            let mut pts = Vec::new();
            for page in &cx.stats.pages {
                if let (Some(b), Some(c)) = (
                    cx.stats.page_cell(page, &net, &base),
                    cx.stats.page_cell(page, &net, &v.name),
                ) {
                    pts.push((
                        b.summary.mean,
                        c.summary.mean,
                        format!(
                            "{page}: {base} {} ms, {} {} ms",
                            svg::ms(b.summary.mean),
                            v.name,
                            svg::ms(c.summary.mean)
                        ),
                    ));
                }
            }
            if !pts.is_empty() {
                if !bases.contains(&base) {
                    bases.push(base.clone());
                }
                series.push((cx.series(&v.name), pts));
            }
        }
        out.push_str(&html::h3(&format!("Network {net}")));
        if series.is_empty() {
            out.push_str(&charts::no_data(&format!(
                "network {net} has no pair of baseline and non-baseline loads of the same page"
            )));
            continue;
        }
        let x_title = format!("{} mean onLoad per page (ms)", bases.join(" / "));
        let chart = charts::scatter(
            &format!("Per-page load time, baseline against each variant, {net}"),
            &series,
            &x_title,
            "variant mean onLoad per page (ms)",
        );
        let extra = format!(
            "One point per page and variant: x = mean onLoad of the baseline ({}), y = mean onLoad of the variant. \
             Points under the solid diagonal loaded faster than with the baseline; TLS variants are compared with the TLS baseline when there is one.",
            bases.join(", ")
        );
        out.push_str(&figure(
            &chart,
            &cx.caption(std::slice::from_ref(&net), None, &extra),
        ));
    }
    out
}

/// Per network: box plots of onLoad per page, one box per variant.
pub fn boxes(cx: &mut Ctx) -> String {
    let mut out = String::new();
    let series: Vec<charts::Series> = cx
        .stats
        .variants
        .iter()
        .map(|v| cx.series(&v.name))
        .collect();
    for net in cx.main_networks.clone() {
        let mut groups = Vec::new();
        for page in &cx.stats.pages {
            let mut boxes = Vec::new();
            for (i, v) in cx.stats.variants.iter().enumerate() {
                let vals: Vec<f64> = cx
                    .rows
                    .iter()
                    .filter(|r| {
                        &r.page == page && r.network == net && r.variant == v.name && has_on_load(r)
                    })
                    .map(|r| r.on_load_ms)
                    .collect();
                if !vals.is_empty() {
                    boxes.push((i, vals));
                }
            }
            if !boxes.is_empty() {
                groups.push((page.clone(), boxes));
            }
        }
        out.push_str(&html::h3(&format!("Network {net}")));
        if groups.is_empty() {
            out.push_str(&charts::no_data(&format!(
                "network {net} has no loads with an onLoad"
            )));
            continue;
        }
        let chart = dist::box_plots(
            &format!("onLoad per page and variant, {net}"),
            &series,
            &groups,
            "onLoad (ms)",
        );
        let extra =
            "Box: quartiles; thick line: median; whiskers: minimum and maximum; dots: every load.";
        out.push_str(&figure(
            &chart,
            &cx.caption(std::slice::from_ref(&net), None, extra),
        ));
    }
    if out.is_empty() {
        return charts::no_data("no main network");
    }
    out
}

/// Per network: the CDF of onLoad over all loads of all pages, one line per variant.
pub fn cdfs(cx: &mut Ctx) -> String {
    let mut out = String::new();
    for net in cx.main_networks.clone() {
        let mut series = Vec::new();
        for v in &cx.stats.variants {
            let vals: Vec<f64> = cx
                .rows
                .iter()
                .filter(|r| r.network == net && r.variant == v.name && has_on_load(r))
                .map(|r| r.on_load_ms)
                .collect();
            if !vals.is_empty() {
                series.push((cx.series(&v.name), vals));
            }
        }
        out.push_str(&html::h3(&format!("Network {net}")));
        if series.is_empty() {
            out.push_str(&charts::no_data(&format!(
                "network {net} has no loads with an onLoad"
            )));
            continue;
        }
        let chart = dist::cdfs(&format!("CDF of onLoad, {net}"), &series, "onLoad (ms)");
        let extra = "Every load of every page is one step; further left is faster. The marker sits at the median.";
        out.push_str(&figure(
            &chart,
            &cx.caption(std::slice::from_ref(&net), None, extra),
        ));
    }
    if out.is_empty() {
        return charts::no_data("no main network");
    }
    out
}

fn param_axis(param: &str) -> (&'static str, fn(f64) -> String) {
    match param {
        "loss" => ("packet loss rate (%)", |v| {
            format!("{}%", svg::num(v * 100.0))
        }),
        "rtt_ms" => ("round-trip time (ms)", |v| format!("{} ms", svg::num(v))),
        _ => ("value", svg::num),
    }
}

/// Per sweep: a table (value × variant) and the load time against the swept value.
pub fn sweeps(cx: &mut Ctx) -> String {
    let sweeps = cx.stats.sweeps();
    if sweeps.is_empty() {
        return html::p("This experiment has no sweep (no row carries a sweep point).");
    }
    let mut out = String::new();
    for sw in sweeps {
        let (x_title, x_fmt) = param_axis(&sw.param);
        out.push_str(&html::h3(&format!(
            "{} — onLoad against {}",
            sw.name, x_title
        )));
        let nets: Vec<String> = sw.points.iter().map(|p| p.1.clone()).collect();
        let vars: Vec<String> = cx
            .stats
            .variants
            .iter()
            .filter(|v| {
                nets.iter()
                    .any(|n| cx.stats.network_cell(n, &v.name).is_some())
            })
            .map(|v| v.name.clone())
            .collect();
        let mut header: Vec<String> = vec![x_title.to_string(), "Network".into()];
        for v in &vars {
            header.push(format!("{v}: mean ms [CI]"));
            if !cx.stats.variant(v).is_some_and(|x| x.baseline) {
                header.push(format!("{v}: speedup"));
            }
        }
        let mut rows = Vec::new();
        for (val, net) in &sw.points {
            let mut cells = vec![Cell::num(x_fmt(*val)), Cell::text(net)];
            for v in &vars {
                let c = cx.stats.network_cell(net, v);
                cells.push(match c {
                    Some(c) => Cell::raw(
                        with_ci(
                            &svg::ms(c.summary.mean),
                            &svg::ms(c.summary.ci.low),
                            &svg::ms(c.summary.ci.high),
                        ),
                        "",
                    ),
                    None => Cell::num("–"),
                });
                if !cx.stats.variant(v).is_some_and(|x| x.baseline) {
                    cells.push(network_speedup_cell(&cx.stats, net, v));
                }
            }
            rows.push((cells, false));
        }
        let hdr: Vec<(&str, bool)> = header
            .iter()
            .enumerate()
            .map(|(i, s)| (s.as_str(), i == 1))
            .collect();
        out.push_str(&table(&hdr, &rows));
        out.push_str(&html::p(
            "Speedup: geometric mean over pages of the per-page ratios, as in the Summary; \
             ⚠ marks a speedup that points the other way from the change of the means beside it.",
        ));
        let series: Vec<(charts::Series, Vec<Point>)> = vars
            .iter()
            .map(|v| {
                let pts = sw
                    .points
                    .iter()
                    .filter_map(|(val, net)| {
                        cx.stats.network_cell(net, v).map(|c| Point {
                            x: *val,
                            y: c.summary.mean,
                            ci: Some((c.summary.ci.low, c.summary.ci.high)),
                            title: format!(
                                "{v} at {}: {} ms [{} – {}]",
                                x_fmt(*val),
                                svg::ms(c.summary.mean),
                                svg::ms(c.summary.ci.low),
                                svg::ms(c.summary.ci.high)
                            ),
                        })
                    })
                    .collect();
                (cx.series(v), pts)
            })
            .collect();
        let chart = charts::lines(
            &format!("{}: mean onLoad against {x_title}", sw.name),
            &series,
            x_title,
            "mean onLoad over all pages (ms)",
            &x_fmt,
        );
        let extra = format!("Mean onLoad over all loads of all pages at each point. {CI_NOTE}");
        out.push_str(&figure(&chart, &cx.caption(&nets, None, &extra)));
    }
    out
}
