//! The cellular study's view of a load through a proxy (Erman et al., Figs 10-12 and 17):
//! the proxy's congestion window, slow-start threshold and retransmissions over time, for
//! one load per proxy variant and network, from the sender-side series the lab keeps per
//! load (`Row::tcp_series`); and a table of what the proxy's TCP did per variant.

use super::html::{self, Cell};
use super::svg::{self, x_axis, y_axis, y_title, Marker, Scale, Svg};
use super::Ctx;
use crate::results::Row;
use std::collections::BTreeMap;

/// One sample of the proxy's series, the fields the figure needs.
struct Sample {
    t_ms: f64,
    conn: u64,
    cwnd: f64,
    ssthresh: Option<f64>,
    in_flight_kb: f64,
    unacked: f64,
    bytes_acked: u64,
    total_retrans: u64,
}

fn read_series(path: &std::path::Path) -> Result<Vec<Sample>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let v: speedy_net::transport::sockinfo::TcpSample = speedy_records::version::read(line)
            .map_err(|e| format!("{} line {}: {e}", path.display(), i + 1))?;
        out.push(Sample {
            t_ms: v.t_ms,
            conn: v.conn,
            cwnd: f64::from(v.cwnd),
            // 2^31-1: no loss seen yet, no threshold to draw.
            ssthresh: Some(f64::from(v.ssthresh)).filter(|s| *s < 1e9),
            in_flight_kb: v.in_flight_bytes as f64 / 1024.0,
            unacked: f64::from(v.unacked),
            bytes_acked: v.bytes_acked,
            total_retrans: u64::from(v.total_retrans),
        });
    }
    Ok(out)
}

/// The figure of one load: cwnd per connection (solid), ssthresh (dashed) and
/// retransmissions (a cross where a connection's count rises), time from the first sample.
fn figure(samples: &[Sample], label: &str) -> String {
    const W: f64 = 760.0;
    const ML: f64 = 64.0;
    const MR: f64 = 20.0;
    let mut s = Svg::new(W, 300.0, label);
    let (y0, y1) = (16.0, 236.0);
    let t0 = samples.first().map_or(0.0, |x| x.t_ms);
    let tmax = samples.last().map_or(1.0, |x| x.t_ms - t0).max(1.0) / 1000.0;
    let hi = samples
        .iter()
        .map(|x| x.cwnd.max(x.ssthresh.unwrap_or(0.0)))
        .fold(1.0, f64::max);
    let xs = Scale::new(0.0, tmax, ML, W - MR);
    let yt = svg::ticks(0.0, hi * 1.05, 5);
    let ys = Scale::new(0.0, *yt.last().expect("ticks"), y1, y0);
    y_axis(&mut s, &ys, &yt, ML, W - MR, &|v| svg::num(v));
    let xt = svg::ticks(0.0, tmax, 8);
    x_axis(&mut s, &xs, &xt, y0, y1, &|v| format!("{v:.0}"));
    y_title(&mut s, 16.0, (y0 + y1) / 2.0, "segments");
    svg::x_title(
        &mut s,
        (ML + W - MR) / 2.0,
        y1 + 34.0,
        "seconds into the load (its visits; the think time between them is the flat stretches)",
    );
    let mut by_conn: BTreeMap<u64, Vec<&Sample>> = BTreeMap::new();
    for x in samples {
        by_conn.entry(x.conn).or_default().push(x);
    }
    for (i, all) in by_conn.values().enumerate() {
        // Flat stretches need only their ends (a 20 s think time is 2,000 samples).
        let pts: Vec<&Sample> = all
            .iter()
            .enumerate()
            .filter(|(k, x)| {
                let (prev, next) = (k.checked_sub(1).map(|j| all[j]), all.get(k + 1));
                let same = |o: Option<&&Sample>| {
                    o.is_some_and(|o| {
                        o.cwnd == x.cwnd
                            && o.ssthresh == x.ssthresh
                            && o.unacked == x.unacked
                            && o.total_retrans == x.total_retrans
                    })
                };
                !(same(prev.as_ref()) && same(next))
            })
            .map(|(_, x)| *x)
            .collect();
        let colour = svg::style(i).colour;
        let at = |x: &Sample, v: f64| (xs.at((x.t_ms - t0) / 1000.0), ys.at(v));
        let cw: Vec<(f64, f64)> = pts.iter().map(|x| at(x, x.cwnd)).collect();
        s.polyline(&cw, colour, 1.6, "");
        let ss: Vec<(f64, f64)> = pts
            .iter()
            .filter_map(|x| x.ssthresh.map(|v| at(x, v)))
            .collect();
        if ss.len() > 1 {
            s.polyline(&ss, colour, 1.0, "4 3");
        }
        let fl: Vec<(f64, f64)> = pts.iter().map(|x| at(x, x.unacked)).collect();
        s.polyline(&fl, colour, 0.8, "1 2");
        for w in pts.windows(2) {
            if w[1].total_retrans > w[0].total_retrans {
                let (x, y) = at(w[1], w[1].cwnd);
                let tip = format!(
                    "retransmission at {:.2} s (cwnd {}, {:.0} KiB in flight)",
                    (w[1].t_ms - t0) / 1000.0,
                    w[1].cwnd,
                    w[1].in_flight_kb
                );
                s.marker(Marker::Cross, x, y, 5.0, "#C00", Some(&tip));
            }
        }
    }
    s.set_height(y1 + 46.0);
    s.finish()
}

/// Throughput per second of the load, Mbit/s: the bytes the client acknowledged in each
/// second, over all connections (the study's Fig 9).
fn throughput(samples: &[Sample]) -> String {
    const W: f64 = 760.0;
    const ML: f64 = 64.0;
    const MR: f64 = 20.0;
    let t0 = samples.first().map_or(0.0, |x| x.t_ms);
    let mut last: BTreeMap<u64, u64> = BTreeMap::new();
    let mut per_sec: BTreeMap<u64, u64> = BTreeMap::new();
    for x in samples {
        let prev = last.insert(x.conn, x.bytes_acked).unwrap_or(x.bytes_acked);
        let sec = ((x.t_ms - t0) / 1000.0).max(0.0) as u64;
        *per_sec.entry(sec).or_default() += x.bytes_acked.saturating_sub(prev);
    }
    let n = per_sec.keys().last().map_or(1, |k| k + 1);
    let mbit: Vec<f64> = (0..n)
        .map(|k| per_sec.get(&k).copied().unwrap_or(0) as f64 * 8.0 / 1e6)
        .collect();
    let hi = mbit.iter().copied().fold(0.1, f64::max);
    let mut s = Svg::new(W, 200.0, "throughput per second");
    let (y0, y1) = (10.0, 140.0);
    let xs = Scale::new(0.0, n as f64, ML, W - MR);
    let yt = svg::ticks(0.0, hi * 1.05, 4);
    let ys = Scale::new(0.0, *yt.last().expect("ticks"), y1, y0);
    y_axis(&mut s, &ys, &yt, ML, W - MR, &|v| svg::num(v));
    let xt = svg::ticks(0.0, n as f64, 8);
    x_axis(&mut s, &xs, &xt, y0, y1, &|v| format!("{v:.0}"));
    y_title(&mut s, 16.0, (y0 + y1) / 2.0, "Mbit/s");
    for (k, v) in mbit.iter().enumerate() {
        let (x0, x1) = (xs.at(k as f64), xs.at(k as f64 + 1.0));
        let tip = format!("second {k}: {v:.2} Mbit/s acknowledged");
        let w = (x1 - x0 - 1.0).max(0.5);
        s.rect(
            x0 + 0.5,
            ys.at(*v),
            w,
            y1 - ys.at(*v),
            "#4C78A8",
            Some(&tip),
        );
    }
    svg::x_title(
        &mut s,
        (ML + W - MR) / 2.0,
        y1 + 32.0,
        "seconds into the load: bytes the client acknowledged per second, all connections",
    );
    s.set_height(y1 + 44.0);
    s.finish()
}

/// The first row (by page, then run) of each proxy variant on each network.
fn chosen(rows: &[Row]) -> Vec<&Row> {
    let mut best: BTreeMap<(String, u32, String), &Row> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.tcp_series.is_some()) {
        let k = (
            r.network.clone(),
            r.variant_index.unwrap_or(0),
            r.variant.clone(),
        );
        let better = best
            .get(&k)
            .is_none_or(|b| (&r.page, r.run) < (&b.page, b.run));
        if better {
            best.insert(k, r);
        }
    }
    best.into_values().collect()
}

/// The section (empty when no load went through a proxy).
pub(crate) fn section(cx: &mut Ctx) -> String {
    let rows: Vec<&Row> = cx.rows.iter().filter(|r| r.proxy.is_some()).collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = html::p(
        "The proxy's side of the radio link, as the cellular study plots it: its congestion \
         window (solid), slow-start threshold (dashed, once there is one), segments in flight \
         (dotted) and retransmissions (red crosses) over time, with the throughput per second \
         under each, sampled every 10 ms from TCP_INFO on the proxy's \
         connections to the client, one colour per connection. The link drops nothing \
         beyond the network's stated loss; a retransmission right after the think time is \
         the radio's promotion delay outlasting the proxy's retransmission timeout.",
    );
    if let Some(after) = rows.iter().find_map(|r| r.revisit_after_ms) {
        out.push_str(&html::p(&format!(
            "Each load visited its page twice on the same connections, {:.0} s apart, and \
             the rows measure the second visit; link and server counters cover both.",
            after as f64 / 1000.0
        )));
    }
    if let Some(think) = rows.iter().find_map(|r| r.session_think_ms) {
        out.push_str(&html::p(&format!(
            "Each load was a browsing session, as the study's: every page once, in one fixed \
             random order, {:.0} s of think time apart, on the same connections to the proxy; \
             each row is one visit, its link and server counters running from its start to \
             the next visit's. The figures below show one whole session per variant and \
             network. A think time shorter than the study's 60 s stands for it only while it \
             outlasts the radio's tails (unscaled: 3G 5 s DCH + 12 s FACH, LTE 11.5 s), so \
             that each visit after the first starts from an idle radio.",
            think as f64 / 1000.0
        )));
    }
    // What the proxy's TCP did per variant and network (the study's Table 2 in kind).
    let mut cells: BTreeMap<(String, u32, String), Vec<&Row>> = BTreeMap::new();
    for r in &rows {
        cells
            .entry((
                r.network.clone(),
                r.variant_index.unwrap_or(0),
                r.variant.clone(),
            ))
            .or_default()
            .push(r);
    }
    let mut trs = Vec::new();
    for ((net, _, var), rs) in &cells {
        let n = rs.len() as f64;
        let mut on: Vec<f64> = rs.iter().map(|r| r.on_load_ms).collect();
        on.sort_by(f64::total_cmp);
        let m = on.len() / 2;
        let median = if on.len().is_multiple_of(2) {
            (on[m - 1] + on[m]) / 2.0
        } else {
            on[m]
        };
        let mean = |f: &dyn Fn(&Row) -> f64| rs.iter().map(|r| f(r)).sum::<f64>() / n;
        trs.push((
            vec![
                Cell::text(net),
                Cell::text(var),
                Cell::text(&rs[0].tcp_cc),
                Cell::num(format!("{}", rs.len())),
                Cell::num(svg::ms(median)),
                Cell::num(format!("{:.1}", mean(&|r| r.server_retransmissions as f64))),
                Cell::num(format!("{:.1}", mean(&|r| r.server_rto_timeouts as f64))),
            ],
            false,
        ));
    }
    out.push_str(&html::table(
        &[
            ("network", false),
            ("variant", false),
            ("cc", false),
            ("loads", true),
            ("median onLoad", true),
            ("retransmitted segments (mean)", true),
            ("RTO timeouts (mean)", true),
        ],
        &trs,
    ));
    for r in chosen(cx.rows) {
        let path = cx.har_dir.join(r.tcp_series.as_deref().expect("filtered"));
        // A session's series covers all its visits: it is named by the session.
        let load = match r.session_think_ms {
            Some(_) => format!("session run {}", r.run),
            None => format!("{} run {}", r.page, r.run),
        };
        let caption = format!(
            "{} · {} · {load}: the proxy's cwnd and ssthresh over the load",
            r.network, r.variant
        );
        match read_series(&path) {
            Ok(s) if !s.is_empty() => {
                out.push_str(&html::figure(&figure(&s, &caption), &caption));
                let caption = format!(
                    "{} · {} · {load}: throughput per second",
                    r.network, r.variant
                );
                out.push_str(&html::figure(&throughput(&s), &caption));
            }
            Ok(_) => cx.notes.push(format!("{}: no samples", path.display())),
            Err(e) => cx.notes.push(e),
        }
    }
    out
}
