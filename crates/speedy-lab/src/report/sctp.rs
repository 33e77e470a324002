//! SPDY over SCTP against SPDY over TCP in the form of the "SPDY-over-SCTP vs
//! SPDY-over-TCP" note: per network and SCTP variant, each page's mean onLoad over TCP
//! minus over SCTP (positive: SCTP faster), their mean, and the counts of pages more than
//! 5% faster, more than 5% slower and within 5% over SCTP. The TCP side is the network's
//! baseline variant when it runs over TCP.

use super::html::{self, Cell};
use super::Ctx;
use crate::results::Row;
use crate::stats::{mean, VariantInfo};

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

/// A load's recovery counts: (timeouts on the server, on the loader, retransmissions on
/// the server, on the loader), from SCTP's own counters over SCTP and the kernel's TCP
/// counters otherwise; `None` where the row has none.
fn recovery_counts(r: &Row) -> [Option<f64>; 4] {
    let n = |x: u64| Some(x as f64);
    if r.transport == Some(speedy_net::Carrier::Sctp) {
        let (s, l) = (r.server_sctp, r.loader_sctp);
        [
            s.and_then(|c| n(c.t3_timeouts)),
            l.and_then(|c| n(c.t3_timeouts)),
            s.and_then(|c| n(c.fast_retransmissions)),
            l.and_then(|c| n(c.fast_retransmissions)),
        ]
    } else {
        [
            n(r.server_rto_timeouts),
            r.loader_rto_timeouts.and_then(n),
            n(r.server_retransmissions),
            r.loader_retransmissions.and_then(n),
        ]
    }
}

/// A figure of one load, where it has one.
type PerLoad = dyn Fn(&Row) -> Option<f64>;

/// The mean of a per-load figure over the loads of `rs` that have it.
fn mean_per_load(rs: &[&Row], f: &dyn Fn(&Row) -> Option<f64>) -> Option<f64> {
    mean(&rs.iter().filter_map(|r| f(r)).collect::<Vec<f64>>())
}

/// A counter summed over a load's two ends, over SCTP with both recorded.
fn both_ends(r: &Row, f: fn(&speedy_net::sctp::counters::Counters) -> u64) -> Option<f64> {
    Some((f(&r.server_sctp?) + f(&r.loader_sctp?)) as f64)
}

/// When the network's loads ran on both SCTP stacks: the first SCTP variant of each (in
/// the experiment's order) side by side, per load, mechanism by mechanism, from the
/// stacks' counters, and which mechanisms differ by more than a quarter. Empty otherwise.
fn between_stacks(on_net: &[&Row], variants: &[VariantInfo]) -> String {
    use speedy_net::sctp::SctpStack;
    let first_on = |stack: SctpStack| {
        variants.iter().find_map(|v| {
            let rs: Vec<&Row> = on_net
                .iter()
                .copied()
                .filter(|r| {
                    r.variant == v.name
                        && r.transport == Some(speedy_net::Carrier::Sctp)
                        && r.sctp_stack.unwrap_or_default() == stack
                })
                .collect();
            (!rs.is_empty()).then_some((v.name.as_str(), rs))
        })
    };
    let (Some(a), Some(b)) = (first_on(SctpStack::SctpProto), first_on(SctpStack::Usrsctp)) else {
        return String::new();
    };
    let counts =
        |f: fn(&speedy_net::sctp::counters::Counters) -> u64| move |r: &Row| both_ends(r, f);
    let mechanisms: [(&str, &PerLoad); 5] = [
        ("onLoad (ms)", &|r: &Row| Some(r.on_load_ms)),
        ("T3-rtx timeouts", &counts(|c| c.t3_timeouts)),
        (
            "fast-retransmitted chunks",
            &counts(|c| c.fast_retransmissions),
        ),
        (
            "delayed-SACK timer expirations",
            &counts(|c| c.delayed_sack_timeouts),
        ),
        ("SACKs received", &counts(|c| c.sacks_in)),
    ];
    let (mut rows, mut differ, mut alike) = (Vec::new(), Vec::new(), Vec::new());
    for (name, f) in mechanisms {
        let (x, y) = (mean_per_load(&a.1, f), mean_per_load(&b.1, f));
        let ratio = match (x, y) {
            (Some(x), Some(y)) if x > 0.0 => Some(y / x),
            _ => None,
        };
        if name != "onLoad (ms)" {
            match (x, y, ratio) {
                (_, _, Some(q)) if !(0.75..=1.0 / 0.75).contains(&q) => {
                    differ.push(format!("{name} ({q:.2}×)"))
                }
                (Some(x), Some(y), _) if x == 0.0 && y > 0.0 => {
                    differ.push(format!("{name} (none on {})", SctpStack::SctpProto))
                }
                (Some(_), Some(_), _) => alike.push(name.to_string()),
                _ => {}
            }
        }
        let fmt = |v: Option<f64>| Cell::num(v.map_or("–".into(), |v| format!("{v:.2}")));
        rows.push((
            vec![
                Cell::text(name),
                fmt(x),
                fmt(y),
                Cell::num(ratio.map_or("–".into(), |q| format!("{q:.2}×"))),
            ],
            false,
        ));
    }
    let mut out = html::p(&format!(
        "The two SCTP stacks, per load at both ends ({} on sctp-proto, {} on usrsctp), \
         from each stack's own counters. They differ by more than a quarter in: {}; within \
         a quarter: {}.",
        a.0,
        b.0,
        if differ.is_empty() {
            "nothing".to_string()
        } else {
            differ.join(", ")
        },
        if alike.is_empty() {
            "nothing".to_string()
        } else {
            alike.join(", ")
        },
    ));
    let (ha, hb) = (
        format!("{} (sctp-proto)", a.0),
        format!("{} (usrsctp)", b.0),
    );
    out.push_str(&html::table(
        &[
            ("per load", true),
            (&ha, false),
            (&hb, false),
            ("usrsctp / sctp-proto", false),
        ],
        &rows,
    ));
    out
}

/// Per variant on `net`, how its loads recovered from loss: the mean per load of the
/// link's drops and of [`recovery_counts`], and a sentence on what the timeouts cost
/// when SCTP took more of them. Empty when no load on `net` lost a packet on the link or
/// timed out.
fn recovery(rows: &[Row], net: &str, variants: &[VariantInfo]) -> String {
    let on_net: Vec<&Row> = rows.iter().filter(|r| r.network == net).collect();
    let timed_out = |r: &Row| {
        recovery_counts(r)[..2]
            .iter()
            .any(|t| t.unwrap_or(0.0) > 0.0)
    };
    let dropped = on_net.iter().any(|r| r.link_drops > 0);
    if !dropped && !on_net.iter().any(|r| timed_out(r)) {
        return String::new();
    }
    let cell = |x: Option<f64>, digits: usize| {
        Cell::num(x.map_or("–".to_string(), |x| format!("{x:.digits$}")))
    };
    let mut table_rows = Vec::new();
    // (variant, over SCTP, mean timeouts a load on both sides, when both are known)
    let mut timeouts: Vec<(&str, bool, f64)> = Vec::new();
    for v in variants {
        let rs: Vec<&Row> = on_net
            .iter()
            .copied()
            .filter(|r| r.variant == v.name)
            .collect();
        if rs.is_empty() {
            continue;
        }
        let sctp = rs[0].transport == Some(speedy_net::Carrier::Sctp);
        let over = if sctp {
            format!("SCTP ({})", rs[0].sctp_stack.unwrap_or_default())
        } else {
            "TCP".to_string()
        };
        let [st, lt, sr, lr] =
            std::array::from_fn(|i| mean_per_load(&rs, &|r: &Row| recovery_counts(r)[i]));
        if let (Some(a), Some(b)) = (st, lt) {
            timeouts.push((v.name.as_str(), sctp, a + b));
        }
        table_rows.push((
            vec![
                Cell::text(&v.name),
                Cell::text(&over),
                cell(mean_per_load(&rs, &|r| Some(r.on_load_ms)), 0),
                cell(mean_per_load(&rs, &|r| Some(r.link_drops as f64)), 1),
                cell(st, 2),
                cell(lt, 2),
                cell(sr, 1),
                cell(lr, 1),
                cell(
                    mean_per_load(&rs, &|r| both_ends(r, |c| c.delayed_sack_timeouts)),
                    2,
                ),
            ],
            false,
        ));
    }
    let mut out = html::h3(&format!("{net}: how the loads recovered from loss"));
    out.push_str(&html::p(
        "Means per load. Timeouts: TCP's retransmission timeouts (TCPTimeouts of each \
         namespace's kernel), SCTP's T3-rtx expirations (the stacks' own counters); the \
         server's recover the downloads, the loader's its requests and acknowledgements. \
         Retransmissions: TCP's retransmitted segments (RetransSegs), SCTP's DATA chunks \
         fast-retransmitted (a T3 timeout's resent chunks are not counted). Delayed SACKs: \
         expirations of SCTP's delayed-SACK timer at both ends (a packet acknowledged on \
         its own, late, rather than with DATA going the other way). – : not recorded \
         (results of an older speedy, a loader that visited more than one page, or TCP).",
    ));
    out.push_str(&html::table(
        &[
            ("variant", true),
            ("over", true),
            ("onLoad (ms)", false),
            ("link drops", false),
            ("timeouts, server", false),
            ("timeouts, loader", false),
            ("retransmissions, server", false),
            ("retransmissions, loader", false),
            ("delayed SACKs", false),
        ],
        &table_rows,
    ));
    out.push_str(&between_stacks(&on_net, variants));
    // The SCTP variants against the network's baseline over TCP, as in the tables above.
    let base = on_net
        .iter()
        .find(|r| r.baseline && r.transport.is_none())
        .map(|r| r.variant.as_str());
    let tcp = timeouts.iter().find(|t| Some(t.0) == base);
    let more: Vec<String> = timeouts
        .iter()
        .filter(|s| s.1 && tcp.is_some_and(|t| s.2 > t.2))
        .map(|s| format!("{:.2} ({})", s.2, s.0))
        .collect();
    if let (Some(t), false) = (tcp, more.is_empty()) {
        out.push_str(&html::p(&format!(
            "Over SCTP the loads waited out {} retransmission timeouts a load, against {:.2} \
             for {}. After a timeout both start again from a window of one packet, but an \
             SCTP timeout lasts at least RTO.Min, 1 s (RFC 4960's, and Linux's \
             net.sctp.rto_min), where Linux's TCP waits about the smoothed round trip plus \
             200 ms; and SCTP repairs fewer losses without one: it retransmits a chunk \
             early only once and only after three gap reports, where Linux's TCP also \
             detects losses by time (RACK) and probes a lost tail (docs/sctp.md).",
            more.join(", "),
            t.2,
            t.0
        )));
    }
    if !dropped {
        out.push_str(&html::p(
            "The link dropped no packet on this network, so every timeout here was \
             spurious: the round trip outgrew the timeout while the link's queue filled. \
             Linux's TCP can tell a spurious timeout and undo its window cut (F-RTO, RFC \
             5682, on by default: net.ipv4.tcp_frto = 2); SCTP has no such check and starts \
             again from one packet.",
        ));
    }
    out
}

/// The section; empty when no row ran over SCTP.
pub(crate) fn section(cx: &mut Ctx) -> String {
    let rows = cx.rows;
    if !rows
        .iter()
        .any(|r| r.transport == Some(speedy_net::Carrier::Sctp))
    {
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
        // In the experiment's order (rows come in the order their loads finished).
        let sctp_variants: Vec<&str> = cx
            .stats
            .variants
            .iter()
            .filter(|v| {
                on_net()
                    .any(|r| r.variant == v.name && r.transport == Some(speedy_net::Carrier::Sctp))
            })
            .map(|v| v.name.as_str())
            .collect();
        let desc = on_net().next().map_or("", |r| r.network_desc.as_str());
        for v in sctp_variants {
            if let Some(t) = comparison(cx, (net, desc), &tcp, v, &pages) {
                out.push_str(&t);
                any = true;
            }
        }
        out.push_str(&recovery(rows, net, &cx.stats.variants));
    }
    out.push_str(&published_note());
    if !any {
        return String::new();
    }
    out
}

/// The note's table for SCTP variant `v` against the TCP variant `tcp` on the network
/// (name, description): per page the mean onLoad of each, their difference, then the
/// mean difference and the counts of pages by [`BAND`]. `None` when no page has loads of
/// both.
fn comparison(
    cx: &Ctx,
    (net, desc): (&str, &str),
    tcp: &str,
    v: &str,
    pages: &[&str],
) -> Option<String> {
    // Mean onLoad of a page over its runs, as the report's statistics have it.
    let mean = |page: &str, variant: &str| {
        cx.stats
            .page_cell(page, net, variant)
            .map(|c| c.summary.mean)
    };
    let pairs: Vec<(&str, f64, f64)> = pages
        .iter()
        .filter_map(|p| Some((*p, mean(p, tcp)?, mean(p, v)?)))
        .collect();
    if pairs.is_empty() {
        return None;
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
    let mut out = html::h3(&format!("{net} ({desc}): {tcp} (TCP) against {v} (SCTP)"));
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
    Some(out)
}

/// The note's own figures ([`PUBLISHED`]), for comparison.
fn published_note() -> String {
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
    html::p(&format!(
        "For comparison only (nothing here is tuned to it): the note, on its own 23 pages \
         with Linux's kernel SCTP, reported {}. Its SCTP could not put data in the COOKIE \
         ECHO's packet (the -nobundle variant here).",
        published.join("; ")
    ))
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
