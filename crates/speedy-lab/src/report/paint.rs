//! Paint timings: First and Largest Contentful Paint of the variants headless Chromium
//! loaded (`client = "chromium"`), per main network, beside their onLoad. The loader
//! renders nothing, so its rows have none and the section is left out without them.

use super::html::{self, table, with_ci, Cell};
use super::svg;
use super::Ctx;
use crate::results::Row;
use crate::stats::{summarize, SEED};

/// The section: a table of FCP, LCP and onLoad per network × variant with paint
/// timings (means with 95% intervals, medians); empty when no row has them.
pub fn section(cx: &mut Ctx) -> String {
    let mut rows: Vec<(Vec<Cell>, bool)> = Vec::new();
    for net in &cx.main_networks {
        let mut first = true;
        for v in &cx.stats.variants {
            let rs: Vec<&Row> = cx
                .rows
                .iter()
                .filter(|r| &r.network == net && r.variant == v.name)
                .filter(|r| r.fcp_ms.is_some() || r.lcp_ms.is_some())
                .collect();
            if rs.is_empty() {
                continue;
            }
            let mut cells = vec![
                Cell::text(if first { net.as_str() } else { "" }),
                Cell::raw(
                    html::swatch(cx.style(&v.name).colour, &cx.variant_label(&v.name)),
                    "l",
                ),
                Cell::num(rs.len().to_string()),
            ];
            let on_load: Vec<f64> = rs
                .iter()
                .map(|r| r.on_load_ms)
                .filter(|x| *x >= 0.0)
                .collect();
            for xs in [
                rs.iter().filter_map(|r| r.fcp_ms).collect::<Vec<f64>>(),
                rs.iter().filter_map(|r| r.lcp_ms).collect(),
                on_load,
            ] {
                cells.extend(mean_and_median(&xs, &[net, &v.name]));
            }
            rows.push((cells, first));
            first = false;
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    let mut out = table(
        &[
            ("Network", true),
            ("Variant", true),
            ("Loads", false),
            ("FCP mean ms", false),
            ("FCP median", false),
            ("LCP mean ms", false),
            ("LCP median", false),
            ("onLoad mean ms", false),
            ("onLoad median", false),
        ],
        &rows,
    );
    out.push_str(&html::p(
        "First Contentful Paint (Paint Timing's first-contentful-paint) and Largest \
         Contentful Paint (the last largest-contentful-paint candidate by the end of the \
         load, read after onLoad and the frames after it), ms from navigation start, as \
         headless Chromium measured them; means with their 95% bootstrap intervals. Only \
         Chromium's loads have them: the loader runs no layout or paint.",
    ));
    out
}

/// The mean (with its 95% interval) and the median of `xs`, as two cells (`–` when
/// empty).
fn mean_and_median(xs: &[f64], seed_of: &[&str]) -> [Cell; 2] {
    let seed = seed_of.iter().flat_map(|s| s.bytes()).fold(SEED, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    match summarize(xs, seed) {
        Some(s) => [
            Cell::raw(
                with_ci(&svg::ms(s.mean), &svg::ms(s.ci.low), &svg::ms(s.ci.high)),
                "",
            ),
            Cell::num(svg::ms(s.median)),
        ],
        None => [Cell::num("–"), Cell::num("–")],
    }
}
