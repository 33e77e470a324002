//! SPDY over SCTP against SPDY over TCP in the form of the "SPDY-over-SCTP vs
//! SPDY-over-TCP" note: per network and SCTP variant, each page's mean onLoad over TCP
//! minus over SCTP (positive: SCTP faster), their mean, and the counts of pages more than
//! 5% faster, more than 5% slower and within 5% over SCTP. The TCP side is the network's
//! baseline variant when it runs over TCP.

use super::html::{self, Cell};
use super::Ctx;

/// A page more than this fraction faster or slower (of its TCP onLoad) is counted so.
const BAND: f64 = 0.05;

/// The note's own figures (23 pages, 5 Mbit/s, 100 ms): loss → (mean TCP − SCTP onLoad
/// in s, pages >5% faster, pages >5% slower), as the note states them.
const PUBLISHED: &[(f64, &str, u32, u32)] =
    &[(0.01, "about 0.5 s", 8, 4), (0.02, "nearly 1.5 s", 15, 1)];

/// Counts of pages (faster, slower, within) given (TCP, SCTP) onLoads.
fn counts(pairs: &[(f64, f64)]) -> (usize, usize, usize) {
    let faster = pairs.iter().filter(|(t, s)| t - s > BAND * t).count();
    let slower = pairs.iter().filter(|(t, s)| s - t > BAND * t).count();
    (faster, slower, pairs.len() - faster - slower)
}

/// The section; empty when no row ran over SCTP.
pub(crate) fn section(cx: &mut Ctx) -> String {
    let rows = cx.rows;
    if !rows.iter().any(|r| r.transport.as_deref() == Some("sctp")) {
        return String::new();
    }
    let mut networks: Vec<&str> = Vec::new();
    for r in rows {
        if !networks.contains(&r.network.as_str()) {
            networks.push(&r.network);
        }
    }
    let mut out = html::p(
        "Each page's mean onLoad over TCP minus over SCTP (positive: SCTP faster), and how \
         many pages loaded more than 5% faster, more than 5% slower or within 5% over SCTP, \
         against the network's baseline over TCP, as the SPDY-over-SCTP note tabulates them.",
    );
    let mut any = false;
    for net in networks {
        let on_net = || rows.iter().filter(move |r| r.network == net);
        let Some(tcp) = on_net()
            .find(|r| r.baseline && r.transport.is_none())
            .map(|r| r.variant.clone())
        else {
            continue;
        };
        let mut pages: Vec<&str> = on_net().map(|r| r.page.as_str()).collect();
        pages.sort();
        pages.dedup();
        // Mean onLoad of a page over its runs, as the report's statistics have it.
        let mean = |page: &str, variant: &str| {
            cx.stats
                .page_cell(page, net, variant)
                .map(|c| c.summary.mean)
        };
        // In the experiment's order (rows come in the order their loads finished).
        let sctp_variants: Vec<&str> = cx
            .stats
            .variants
            .iter()
            .filter(|v| {
                on_net().any(|r| r.variant == v.name && r.transport.as_deref() == Some("sctp"))
            })
            .map(|v| v.name.as_str())
            .collect();
        let desc = on_net().next().map_or("", |r| r.network_desc.as_str());
        for v in sctp_variants {
            let pairs: Vec<(&str, f64, f64)> = pages
                .iter()
                .filter_map(|p| Some((*p, mean(p, &tcp)?, mean(p, v)?)))
                .collect();
            if pairs.is_empty() {
                continue;
            }
            let tp: Vec<(f64, f64)> = pairs.iter().map(|(_, t, s)| (*t, *s)).collect();
            let (faster, slower, within) = counts(&tp);
            let mean = tp.iter().map(|(t, s)| t - s).sum::<f64>() / tp.len() as f64;
            let mut table_rows: Vec<(Vec<Cell>, bool)> = pairs
                .iter()
                .map(|(p, t, s)| {
                    (
                        vec![
                            Cell::text(*p),
                            Cell::num(format!("{t:.0}")),
                            Cell::num(format!("{s:.0}")),
                            Cell::num(format!("{:+.0}", t - s)),
                            Cell::num(format!("{:+.1}%", (t - s) / t * 100.0)),
                        ],
                        false,
                    )
                })
                .collect();
            table_rows.push((
                vec![
                    Cell::text("mean"),
                    Cell::num(""),
                    Cell::num(""),
                    Cell::num(format!("{mean:+.0}")),
                    Cell::num(""),
                ],
                true,
            ));
            out.push_str(&html::h3(&format!(
                "{net} ({desc}): {tcp} (TCP) against {v} (SCTP)"
            )));
            out.push_str(&html::p(&format!(
                "{} pages: {faster} more than 5% faster over SCTP, {slower} more than 5% \
                 slower, {within} within 5%; mean TCP − SCTP onLoad {mean:+.0} ms.",
                tp.len()
            )));
            out.push_str(&html::table(
                &[
                    ("page", true),
                    ("TCP onLoad (ms)", false),
                    ("SCTP onLoad (ms)", false),
                    ("TCP − SCTP (ms)", false),
                    ("of TCP's", false),
                ],
                &table_rows,
            ));
            any = true;
        }
    }
    let published: Vec<String> = PUBLISHED
        .iter()
        .map(|(loss, mean, f, s)| {
            format!(
                "at {:.0}% loss SCTP {mean} faster on average, {f} pages more than 5% faster, \
                 {s} more than 5% slower",
                loss * 100.0
            )
        })
        .collect();
    out.push_str(&html::p(&format!(
        "For comparison only (nothing here is tuned to it): the note, on its own 23 pages \
         with Linux's kernel SCTP, reported {}. Its SCTP could not put data in the COOKIE \
         ECHO's packet (the -nobundle variant here).",
        published.join("; ")
    )));
    if !any {
        return String::new();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_counted_by_the_five_percent_band_of_their_tcp_onload() {
        // 1000 → 940 is 6% faster; 1000 → 1040 4% slower (within); 2000 → 2200 10% slower.
        let pairs = [
            (1000.0, 940.0),
            (1000.0, 1040.0),
            (2000.0, 2200.0),
            (500.0, 500.0),
        ];
        assert_eq!(counts(&pairs), (1, 1, 2));
    }
}
