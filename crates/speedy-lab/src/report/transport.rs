//! Protocol-level sections: object time split by HAR phase, packets and bytes, header
//! compression, waterfalls; and the closing sections (limits, notes).

use super::charts::{self, Bar, Bars};
use super::html::{self, figure, table, Cell};
use super::svg::{self, PHASE_COLOURS, PHASE_NAMES};
use super::waterfall::waterfall;
use super::Ctx;
use crate::results::Row;
use crate::stats::{has_on_load, median, seed_for, summarize_pooled};

/// Per network: mean time per object in each HAR phase, per variant.
pub fn phases(cx: &mut Ctx) -> String {
    let mut out = String::new();
    for net in cx.main_networks.clone() {
        let mut bars = Vec::new();
        let mut rows = Vec::new();
        let mut hars_used = 0usize;
        for v in cx.stats.variants.clone() {
            let mut sum = [0.0f64; 5];
            let mut objects = 0usize;
            let mut loads = 0usize;
            let todo: Vec<&Row> = cx
                .rows
                .iter()
                .filter(|r| r.network == net && r.variant == v.name)
                .collect();
            for r in todo {
                let Some(l) = cx.har(r) else { continue };
                loads += 1;
                for o in &l.objects {
                    for (k, p) in o.phases.iter().enumerate() {
                        sum[k] += p;
                    }
                    objects += 1;
                }
            }
            if objects == 0 {
                continue;
            }
            hars_used += loads;
            let per: Vec<f64> = sum.iter().map(|s| s / objects as f64).collect();
            let label = cx.variant_label(&v.name);
            let total: f64 = per.iter().sum();
            bars.push((
                label.clone(),
                per.clone(),
                format!(
                    "{label}: {objects} objects in {loads} HARs, {} ms per object",
                    svg::ms(total)
                ),
            ));
            let mut cells = vec![
                Cell::raw(html::swatch(cx.style(&v.name).colour, &label), "l"),
                Cell::num(loads.to_string()),
                Cell::num(objects.to_string()),
            ];
            for p in &per {
                cells.push(Cell::num(format!(
                    "{} ({:.0}%)",
                    svg::ms(*p),
                    if total > 0.0 { 100.0 * p / total } else { 0.0 }
                )));
            }
            cells.push(Cell::num(svg::ms(total)));
            rows.push((cells, false));
        }
        out.push_str(&html::h3(&format!("Network {net}")));
        if bars.is_empty() {
            out.push_str(&charts::no_data(&format!(
                "no readable HAR with entries for network {net}"
            )));
            continue;
        }
        let chart = charts::stacked_hbars(
            &format!("Mean time per object by phase, {net}"),
            &bars,
            &PHASE_NAMES,
            &PHASE_COLOURS,
            "mean time per object (ms)",
        );
        let extra = format!(
            "From the HAR timings of {hars_used} loads: the mean over all objects of each phase \
             (HAR 1.2 phases; not-applicable −1 counts as 0; connect includes DNS and the TLS handshake). \
             Objects overlap in time, so these are not shares of the page load time."
        );
        out.push_str(&figure(
            &chart,
            &cx.caption(std::slice::from_ref(&net), None, &extra),
        ));
        let mut header: Vec<(&str, bool)> =
            vec![("Variant", true), ("HARs", false), ("Objects", false)];
        header.extend(PHASE_NAMES.iter().map(|n| (*n, false)));
        header.push(("Total ms / object", false));
        out.push_str(&format!(
            "<details><summary>Table: ms per object by phase, {}</summary>{}</details>",
            svg::esc(&net),
            table(&header, &rows)
        ));
    }
    out
}

fn mean_of(rows: &[&Row], f: impl Fn(&Row) -> f64) -> f64 {
    if rows.is_empty() {
        return f64::NAN;
    }
    rows.iter().map(|r| f(r)).sum::<f64>() / rows.len() as f64
}

/// The mean of a counter only some clients report (the loader's TCP_INFO, not
/// Chromium's), over the rows that have it, one decimal; `–` when none has it.
fn opt_mean(rows: &[&Row], f: fn(&Row) -> Option<u64>) -> String {
    let have: Vec<u64> = rows.iter().filter_map(|r| f(r)).collect();
    if have.is_empty() {
        return "–".into();
    }
    format!("{:.1}", have.iter().sum::<u64>() as f64 / have.len() as f64)
}

/// The columns of the packets and bytes table: (title, left-aligned).
const TRAFFIC_COLUMNS: [(&str, bool); 16] = [
    ("Network", true),
    ("Variant", true),
    ("Loads", false),
    ("Packets down", false),
    ("Packets up", false),
    ("kB down", false),
    ("kB up", false),
    ("Connections", false),
    ("Client retrans.", false),
    ("Server retrans.", false),
    ("Server RTOs", false),
    ("Server final cwnd", false),
    ("Server RTT (ms)", false),
    ("Link drops", false),
    ("Objects", false),
    ("Failed objects", false),
];

/// Packets and bytes per load per network × variant: table and two stacked bar charts.
pub fn traffic(cx: &mut Ctx) -> String {
    let nets = cx.main_networks.clone();
    let vars: Vec<String> = cx.stats.variants.iter().map(|v| v.name.clone()).collect();
    if cx.rows_of(&nets, None).is_empty() {
        return charts::no_data("no loads");
    }
    let mut rows = Vec::new();
    let mut pk: Vec<Vec<Option<Bar>>> = Vec::new();
    let mut by: Vec<Vec<Option<Bar>>> = Vec::new();
    for net in &nets {
        let mut first = true;
        let mut pk_g = Vec::new();
        let mut by_g = Vec::new();
        for v in &vars {
            let rs: Vec<&Row> = cx
                .rows
                .iter()
                .filter(|r| &r.network == net && &r.variant == v)
                .collect();
            if rs.is_empty() {
                pk_g.push(None);
                by_g.push(None);
                continue;
            }
            let (packets, bytes) = traffic_bars(cx, net, v, &rs);
            pk_g.push(Some(packets));
            by_g.push(Some(bytes));
            let shown_net = if first { net.as_str() } else { "" };
            rows.push((traffic_cells(cx, shown_net, v, &rs), first));
            first = false;
        }
        pk.push(pk_g);
        by.push(by_g);
    }
    let mut out = table(&TRAFFIC_COLUMNS, &rows);
    out.push_str(&html::p(
        "Means per load. Packets and bytes are IP packets through the emulated link (emulator counters); \
         kB = 1000 bytes. Client retransmissions: TCP_INFO of the loader's connections (they carry the \
         requests); server retransmissions and retransmission timeouts: the server namespace's TCP \
         counters (RetransSegs, TCPTimeouts) over the load, the sender's side of every download. \
         Final cwnd (segments) and smoothed RTT: the last `ss -ti` sample of each server connection \
         that carried data, averaged over connections, then over loads.",
    ));
    out.push_str(&traffic_charts(cx, &nets, &vars, [pk, by]));
    out
}

/// Mean packets down, packets up, kB down and kB up per load of `rows`.
fn traffic_means(rows: &[&Row]) -> [f64; 4] {
    [
        mean_of(rows, |r| r.packets_down as f64),
        mean_of(rows, |r| r.packets_up as f64),
        mean_of(rows, |r| r.bytes_down as f64 / 1000.0),
        mean_of(rows, |r| r.bytes_up as f64 / 1000.0),
    ]
}

/// The packets bar and the bytes bar of `net` × `v` (loads `rs`): down, up stacked on it,
/// and the CI of the mean total per load.
fn traffic_bars(cx: &Ctx, net: &str, v: &str, rs: &[&Row]) -> (Bar, Bar) {
    let [pd, pu, bd, bu] = traffic_means(rs);
    // Totals per load grouped by page: the CI resamples loads within each page.
    let mut pages: Vec<&String> = cx.stats.pages.iter().collect();
    pages.sort();
    let by_page = |f: &dyn Fn(&Row) -> f64| -> Vec<Vec<f64>> {
        pages
            .iter()
            .map(|p| rs.iter().filter(|r| &&r.page == p).map(|r| f(r)).collect())
            .collect()
    };
    let tot_p = by_page(&|r| (r.packets_down + r.packets_up) as f64);
    let tot_b = by_page(&|r| (r.bytes_down + r.bytes_up) as f64 / 1000.0);
    let ci = |g: &[Vec<f64>], what: &str| {
        summarize_pooled(g, seed_for(&[what, net, v])).map(|s| (s.ci.low, s.ci.high))
    };
    let (cp, cb) = (ci(&tot_p, "packets"), ci(&tot_b, "bytes"));
    (
        Bar {
            value: pd,
            ci: cp,
            upper: Some(pu),
            title: format!(
                "{net} · {v}: {} packets down, {} up per load",
                svg::num(pd),
                svg::num(pu)
            ),
        },
        Bar {
            value: bd,
            ci: cb,
            upper: Some(bu),
            title: format!(
                "{net} · {v}: {} kB down, {} kB up per load",
                svg::num(bd),
                svg::num(bu)
            ),
        },
    )
}

/// The table row of variant `v` (loads `rs`) under the network cell `net` (empty for
/// every row of a network but its first): the means per load of [`TRAFFIC_COLUMNS`].
fn traffic_cells(cx: &Ctx, net: &str, v: &str, rs: &[&Row]) -> Vec<Cell> {
    let [pd, pu, bd, bu] = traffic_means(rs);
    let one = |f: fn(&Row) -> f64| format!("{:.1}", mean_of(rs, f));
    vec![
        Cell::text(net),
        Cell::raw(html::swatch(cx.style(v).colour, &cx.variant_label(v)), "l"),
        Cell::num(rs.len().to_string()),
        Cell::num(svg::num(pd)),
        Cell::num(svg::num(pu)),
        Cell::num(svg::num(bd)),
        Cell::num(svg::num(bu)),
        Cell::num(one(|r| r.connections as f64)),
        Cell::num(opt_mean(rs, |r| r.tcp_retransmissions)),
        Cell::num(one(|r| r.server_retransmissions as f64)),
        Cell::num(format!(
            "{:.2}",
            mean_of(rs, |r| r.server_rto_timeouts as f64)
        )),
        Cell::num(server_conn_mean(rs, |c| c.cwnd as f64)),
        Cell::num(server_conn_mean(rs, |c| c.rtt_ms)),
        Cell::num(one(|r| r.link_drops as f64)),
        Cell::num(one(|r| r.objects as f64)),
        Cell::num(format!("{:.2}", mean_of(rs, |r| r.failed_objects as f64))),
    ]
}

/// The packets chart and the bytes chart: per network (group) one bar per variant,
/// from `[packets, bytes]` as `values[network][variant]`.
fn traffic_charts(
    cx: &Ctx,
    nets: &[String],
    vars: &[String],
    [pk, by]: [Vec<Vec<Option<Bar>>>; 2],
) -> String {
    let series: Vec<charts::Series> = vars.iter().map(|v| cx.series(v)).collect();
    let stack = Some((
        "down (server → client)".to_string(),
        "up (client → server)".to_string(),
    ));
    let extra = "Solid: server → client; light: client → server. Error bars: 95% bootstrap CI of the mean total per load (loads resampled within each page).";
    let cap = cx.caption(nets, None, extra);
    let mut out = String::new();
    for (what, values, unit) in [
        ("Packets", pk, "packets per load"),
        ("Bytes", by, "kB per load"),
    ] {
        let chart = charts::bars(&Bars {
            label: format!("{what} per load per network and variant"),
            groups: nets.to_vec(),
            series: series.clone(),
            values,
            y_title: unit.into(),
            fmt: svg::num,
            stack_names: stack.clone(),
            y_max: None,
        });
        out.push_str(&html::h3(&format!("{what} per load")));
        out.push_str(&figure(&chart, &cap));
    }
    out
}

/// Header compression: 1 − compressed/raw header bytes, sent and received, per variant.
pub fn headers(cx: &mut Ctx) -> String {
    let nets = cx.main_networks.clone();
    let mut rows = Vec::new();
    let mut groups = Vec::new();
    let mut values = Vec::new();
    let ratio = |raw: u64, comp: u64| (raw > 0).then(|| 100.0 * (1.0 - comp as f64 / raw as f64));
    for v in cx.stats.variants.clone() {
        // Only the loader counts header bytes (Chromium's rows have none): its rows.
        let rs: Vec<&Row> = cx
            .rows
            .iter()
            .filter(|r| nets.contains(&r.network) && r.variant == v.name)
            .filter(|r| r.header_bytes_sent_raw.is_some())
            .collect();
        if rs.is_empty() {
            continue;
        }
        // A sum over every row, or `None` when a row did not measure it (h2 and h3 have
        // no on-the-wire header sizes).
        let sum = |f: fn(&Row) -> Option<u64>| -> Option<u64> { rs.iter().map(|r| f(r)).sum() };
        let sr = sum(|r| r.header_bytes_sent_raw).unwrap_or(0);
        let sc = sum(|r| r.header_bytes_sent_compressed);
        let rr = sum(|r| r.header_bytes_received_raw).unwrap_or(0);
        let rc = sum(|r| r.header_bytes_received_compressed);
        let (s, r) = (sc.and_then(|c| ratio(sr, c)), rc.and_then(|c| ratio(rr, c)));
        let n = rs.len() as f64;
        let per_load =
            |x: Option<u64>| x.map_or("not measured".to_string(), |x| svg::num(x as f64 / n));
        let pct = |x: Option<f64>| x.map_or("–".to_string(), |x| format!("{x:.1}%"));
        rows.push((
            vec![
                Cell::raw(
                    html::swatch(cx.style(&v.name).colour, &cx.variant_label(&v.name)),
                    "l",
                ),
                Cell::num(rs.len().to_string()),
                Cell::num(svg::num(sr as f64 / n)),
                Cell::num(per_load(sc)),
                Cell::num(pct(s)),
                Cell::num(svg::num(rr as f64 / n)),
                Cell::num(per_load(rc)),
                Cell::num(pct(r)),
            ],
            false,
        ));
        groups.push(cx.variant_label(&v.name));
        let bar = |x: Option<f64>, dir: &str| {
            x.map(|x| Bar {
                value: x.max(0.0),
                ci: None,
                upper: None,
                title: format!("{}: {dir} headers {x:.1}% smaller", v.name),
            })
        };
        values.push(vec![bar(s, "request"), bar(r, "response")]);
    }
    if rows.is_empty() {
        return charts::no_data("no loads");
    }
    let mut out = table(
        &[
            ("Variant", true),
            ("Loads", false),
            ("Request headers raw B/load", false),
            ("on the wire B/load", false),
            ("Saved (sent)", false),
            ("Response headers raw B/load", false),
            ("on the wire B/load", false),
            ("Saved (received)", false),
        ],
        &rows,
    );
    let chart = charts::bars(&Bars {
        label: "Header compression ratio per variant".into(),
        groups,
        series: vec![
            charts::Series {
                name: "request headers (sent)".into(),
                style: svg::style(2),
            },
            charts::Series {
                name: "response headers (received)".into(),
                style: svg::style(1),
            },
        ],
        values,
        y_title: "header bytes saved (%)".into(),
        fmt: |v| format!("{v:.0}%"),
        stack_names: None,
        y_max: Some(100.0),
    });
    let extra = "Ratio = 1 − (header bytes on the wire ÷ header bytes before compression), summed over all loads. \
                 HTTP/1.1 sends headers as text, so its ratio is 0.";
    out.push_str(&figure(&chart, &cx.caption(&nets, None, extra)));
    out
}

/// One waterfall per page and variant, for the run nearest the cell's median onLoad.
pub fn waterfalls(cx: &mut Ctx) -> String {
    let net = match &cx.opts.waterfall_network {
        Some(n) => n.clone(),
        None => match cx.main_networks.first() {
            Some(n) => n.clone(),
            None => return charts::no_data("no network"),
        },
    };
    let desc = cx
        .stats
        .networks
        .iter()
        .find(|n| n.name == net)
        .map(|n| n.desc.clone())
        .unwrap_or_default();
    let mut out = html::p(&format!(
        "Network {net} ({desc}). For each page and variant, the run whose onLoad is closest to the median of its runs. \
         Bars start at the object's start (ms after navigation start) and show its phases; ⇡ marks a pushed object; \
         hover a bar for the URL and timings. The waterfalls of one page share the time axis; tall ones \
         repeat it at the bottom. Each heading links the load's HAR file when it is on disk."
    ));
    let mut any = false;
    for (pi, page) in cx.stats.pages.clone().iter().enumerate() {
        let mut loads = Vec::new();
        for v in cx.stats.variants.clone() {
            let rs: Vec<&Row> = cx
                .rows
                .iter()
                .filter(|r| {
                    &r.page == page && r.network == net && r.variant == v.name && has_on_load(r)
                })
                .collect();
            let times: Vec<f64> = rs.iter().map(|r| r.on_load_ms).collect();
            let Some(med) = median(&times) else { continue };
            let pick = rs
                .iter()
                .min_by(|a, b| {
                    (a.on_load_ms - med)
                        .abs()
                        .total_cmp(&(b.on_load_ms - med).abs())
                        .then(a.run.cmp(&b.run))
                })
                .copied()
                .unwrap();
            let har = cx.har(pick);
            loads.push((v.name.clone(), pick, rs.len(), med, har));
        }
        if loads.is_empty() {
            continue;
        }
        any = true;
        let x_max = loads
            .iter()
            .filter_map(|l| l.4.as_ref())
            .flat_map(|h| {
                h.objects
                    .iter()
                    .map(|o| o.start + o.phases.iter().sum::<f64>())
                    .chain(h.on_load)
            })
            .chain(loads.iter().map(|l| l.1.on_load_ms))
            .fold(1.0, f64::max);
        let mut inner = String::new();
        for (v, row, n, med, har) in &loads {
            let label = cx.variant_label(v);
            let link = cx.har_href(row).map_or(String::new(), |h| {
                format!(
                    r#" · <a class="har" href="{}" title="{}">HAR</a>"#,
                    svg::esc(&h),
                    svg::esc(&format!("the HAR file of this load: {}", row.har))
                )
            });
            inner.push_str(&format!(
                r#"<h4 style="margin:14px 0 2px">{}{}{link}</h4>"#,
                html::swatch(cx.style(v).colour, ""),
                svg::esc(&format!(
                    "{label} — run {}, onLoad {} ms",
                    row.run,
                    svg::ms(row.on_load_ms)
                ))
            ));
            let chart = match har {
                Some(h) => waterfall(
                    &format!("Waterfall of {page}, {v}, {net}, run {}", row.run),
                    h,
                    x_max,
                    cx.opts.max_waterfall_objects,
                ),
                None => charts::no_data(&format!(
                    "the HAR of this load ({}) could not be read; see Notes",
                    row.har
                )),
            };
            let vi = cx.stats.variant(v);
            let cap = format!(
                "Network: {net} ({desc}). Page: {page}. Variant: {v} = {} over {}. Run {} of the {n} runs, \
                 chosen because its onLoad ({} ms) is closest to their median ({} ms). Green dashed line: onContentLoad; \
                 vermillion dashed line: onLoad.",
                vi.map_or(String::new(), |x| super::proto_name(x.protocol)),
                vi.map_or("", |x| x.carrier()),
                row.run,
                svg::ms(row.on_load_ms),
                svg::ms(*med),
            );
            inner.push_str(&figure(&chart, &cap));
        }
        out.push_str(&format!(
            "<details{}><summary>{}</summary>{inner}</details>",
            if pi == 0 { " open" } else { "" },
            svg::esc(&format!("{page} ({} variants)", loads.len()))
        ));
    }
    if !any {
        out.push_str(&charts::no_data(&format!(
            "no load with an onLoad on network {net}"
        )));
    }
    out
}

/// What the lab does not model.
pub fn limits(_cx: &mut Ctx) -> String {
    let items = [
        "JavaScript execution, style and layout, and painting are not performed: the loader discovers what scripts \
         and style sheets request from the recorded page graph, after the compute delay recorded for them. \
         onLoad is the moment no request is outstanding and no recorded compute delay is pending.",
        "No cache: every load starts cold (no HTTP cache, no TLS session resumption, no reuse of connections between \
         loads); repeat visits are not modelled.",
        "Names resolve from a fixed map with a fixed cost per new host, not through a real resolver.",
        "The network is an emulated link with a fixed rate, delay, random (independent) loss and queue; real paths \
         have cross traffic, bursty loss, reordering and changing rates.",
        "Servers replay recorded responses from memory with the recorded think time; real server load and \
         back-end latency are not reproduced.",
        "Client and server run on one machine (separate network namespaces); CPU contention between them can \
         add noise at high rates.",
    ];
    let mut o = String::from(r#"<ul class="limits">"#);
    for i in items {
        o.push_str(&format!("<li>{}</li>", svg::esc(i)));
    }
    o.push_str("</ul>");
    o
}

/// Notes: unreadable HARs, loads without onLoad, failed objects, missing baselines.
pub fn notes(cx: &Ctx) -> String {
    let mut items: Vec<String> = Vec::new();
    for (path, e) in &cx.har_errors {
        items.push(format!("HAR not read: {path}: {e}"));
    }
    for x in &cx.stats.excluded {
        items.push(format!(
            "Load left out of the statistics: {} / {} / {} / run {}: {}",
            x.page, x.network, x.variant, x.run, x.reason
        ));
    }
    let failed: Vec<&Row> = cx.rows.iter().filter(|r| r.failed_objects > 0).collect();
    if !failed.is_empty() {
        let objs: u64 = failed.iter().map(|r| r.failed_objects as u64).sum();
        items.push(format!(
            "{} loads had failed objects ({objs} objects in all); they are kept in the statistics. First: {} / {} / {} / run {}.",
            failed.len(),
            failed[0].page,
            failed[0].network,
            failed[0].variant,
            failed[0].run
        ));
    }
    if let Some(line) = replay_note(cx.rows) {
        items.push(line);
    }
    // The lab's own headroom: how late the emulator and the loader ran (recorded per load;
    // the bounds are runner::HEADROOM).
    let measured: Vec<&Row> = cx.rows.iter().filter(|r| r.link_late_max_us > 0).collect();
    if !measured.is_empty() {
        let worst = |f: fn(&Row) -> u64| measured.iter().map(|r| f(r)).max().unwrap_or(0);
        let h = crate::runner::HEADROOM;
        items.push(format!(
            "CPU headroom: link emulator lateness at worst {} µs mean and {} ms max per load, \
             loader event-loop lag at worst {} ms (bounds {} µs, {} ms, {} ms).",
            worst(|r| r.link_late_mean_us),
            worst(|r| r.link_late_max_us) / 1000,
            worst(|r| r.loader_lag_max_us.unwrap_or(0)) / 1000,
            h.link_late_mean.as_micros(),
            h.link_late_max.as_millis(),
            h.loader_lag_max.as_millis()
        ));
    }
    let short: Vec<&Row> = cx.rows.iter().filter(|r| r.headroom.is_some()).collect();
    if !short.is_empty() {
        items.push(format!(
            "{} of {} loads ran with less CPU headroom than the bounds allow (kept, as measured; \
             rerun with fewer --lanes). First: {} / {} / {} / run {}: {}.",
            short.len(),
            cx.rows.len(),
            short[0].page,
            short[0].network,
            short[0].variant,
            short[0].run,
            short[0].headroom.as_deref().unwrap_or_default()
        ));
    }
    for c in &cx.stats.network_cells {
        let v = cx.stats.variant(&c.variant);
        if c.baseline.is_none() && !v.is_some_and(|v| v.baseline) {
            items.push(format!(
                "No baseline loads on network {}: no speedup for {}.",
                c.network, c.variant
            ));
        }
    }
    items.extend(cx.notes.iter().cloned());
    if items.is_empty() {
        return html::p("Nothing to report: every HAR was read and every load has an onLoad.");
    }
    let mut o = String::from(r#"<ul class="notes">"#);
    for i in items {
        o.push_str(&format!("<li>{}</li>", svg::esc(&i)));
    }
    o.push_str("</ul>");
    o
}

/// Mean over loads of the mean over a load's server connections that carried data of
/// `f`; `–` when no load has a sample.
fn server_conn_mean(rows: &[&Row], f: impl Fn(&crate::tcpinfo::ConnSample) -> f64) -> String {
    let per_load: Vec<f64> = rows
        .iter()
        .filter_map(|r| {
            let cs: Vec<f64> = r
                .server_connections
                .iter()
                .filter(|c| c.bytes_acked > 1)
                .map(&f)
                .collect();
            (!cs.is_empty()).then(|| cs.iter().sum::<f64>() / cs.len() as f64)
        })
        .collect();
    if per_load.is_empty() {
        "–".into()
    } else {
        format!(
            "{:.1}",
            per_load.iter().sum::<f64>() / per_load.len() as f64
        )
    }
}

/// How the replay server matched the loads' requests (rows that counted it): said only
/// when a request was not matched exactly.
fn replay_note(rows: &[Row]) -> Option<String> {
    let counted: Vec<&Row> = rows.iter().filter(|r| r.replay.is_some()).collect();
    let sum = |f: fn(&crate::results::ReplayMatches) -> u32| -> u64 {
        counted
            .iter()
            .filter_map(|r| r.replay.as_ref())
            .map(|m| u64::from(f(m)))
            .sum()
    };
    let (query, other, missed) = (sum(|m| m.query), sum(|m| m.other_host), sum(|m| m.missed));
    if query + other + missed == 0 {
        return None;
    }
    let requests: u64 = counted.iter().map(|r| u64::from(r.objects)).sum();
    let loads = counted
        .iter()
        .filter(|r| {
            r.replay
                .is_some_and(|m| m.query + m.other_host + m.missed > 0)
        })
        .count();
    Some(format!(
        "Replay: of {requests} requests in {} loads, {query} were answered with a record of \
         the same path and another query, {other} with the same path on another host, and \
         {missed} had no record (404), in {loads} loads; the rest matched their recorded URL \
         exactly.",
        counted.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::replay_note;
    use crate::results::{ReplayMatches, Row};

    fn row(objects: u32, replay: Option<ReplayMatches>) -> Row {
        let mut r: Row = serde_json::from_value(serde_json::json!({
            "experiment": "t", "page": "p", "network": "n", "network_desc": "d",
            "variant": "v", "baseline": true, "protocol": "http/1.1", "tls": false,
            "run": 0, "on_load_ms": 1.0, "on_content_load_ms": 1.0, "objects": objects,
            "failed_objects": 0, "bytes_down": 0, "bytes_up": 0, "packets_down": 0,
            "packets_up": 0, "link_drops": 0, "connections": 1, "har": "h"
        }))
        .unwrap();
        r.replay = replay;
        r
    }

    #[test]
    fn the_notes_count_requests_not_matched_exactly_and_say_nothing_otherwise() {
        let exact = Some(ReplayMatches::default());
        assert_eq!(replay_note(&[row(10, exact), row(5, None)]), None);
        let fuzzy = Some(ReplayMatches {
            query: 2,
            other_host: 0,
            missed: 1,
        });
        let note = replay_note(&[row(10, exact), row(20, fuzzy), row(7, None)]).unwrap();
        assert!(
            note.starts_with("Replay: of 30 requests in 2 loads, 2 were answered"),
            "{note}"
        );
        assert!(note.contains("1 had no record (404), in 1 loads"), "{note}");
    }
}
