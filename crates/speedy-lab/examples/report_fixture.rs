//! A LAYOUT FIXTURE for the report: writes a synthetic `results.jsonl` with its HAR
//! files and renders `report.html` from them, so the report can be looked at (and its
//! layout checked) without running an experiment.
//!
//! **The numbers are invented** by a crude model below (per-host connection pools for
//! HTTP/1.1, one multiplexed connection per host for SPDY, shared bandwidth, a
//! retransmission timeout now and then under loss); they are not measurements and the
//! report says so in a red banner. One row deliberately names a missing HAR and one
//! load has no onLoad, to show how the report notes them.
//!
//! ```text
//! cargo run -p speedy-lab --example report_fixture -- /tmp/fixture
//! chromium --headless --no-sandbox --screenshot=/tmp/x.png --window-size=1280,4000 file:///tmp/fixture/report.html
//! ```

use serde_json::json;
use speedy_lab::report::{write_report_with, ReportOptions};
use speedy_lab::results::{append_row, Row, SweepPoint};
use speedy_lab::stats::Rng;
use std::path::Path;

/// A network of the fixture.
struct Net {
    name: String,
    desc: String,
    sweep: Option<SweepPoint>,
    /// Downstream rate, bytes per ms.
    down: f64,
    rtt: f64,
    loss: f64,
}

/// A page: (name, hosts, objects).
const PAGES: [(&str, usize, usize); 4] = [
    ("news-portal", 4, 70),
    ("search-results", 2, 18),
    ("photo-gallery", 3, 48),
    ("shop-product", 5, 36),
];

/// A variant: (name, baseline, protocol, tls).
const VARIANTS: [(&str, bool, &str, bool); 3] = [
    ("http1", true, "http/1.1", false),
    ("spdy", false, "spdy/3.1", false),
    ("spdy-tls", false, "spdy/3.1", true),
];

const RUNS: u32 = 5;

fn net(
    name: &str,
    mbit_down: f64,
    kbit_up: f64,
    rtt: f64,
    loss: f64,
    sweep: Option<(&str, &str, f64)>,
) -> Net {
    Net {
        name: name.into(),
        desc: format!(
            "{mbit_down} Mbit/s down, {kbit_up} kbit/s up, {rtt} ms RTT, {}% loss",
            loss * 100.0
        ),
        sweep: sweep.map(|(s, p, v)| SweepPoint {
            sweep: s.into(),
            param: p.into(),
            value: v,
        }),
        down: mbit_down * 1e6 / 8.0 / 1000.0,
        rtt,
        loss,
    }
}

/// ISO 8601 (UTC, ms) of an epoch time in ms.
fn iso(ms: f64) -> String {
    speedy_archive::date::format_ms(ms)
}

fn uniform(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// One simulated object: (url, start, [blocked, dns, connect, ssl, send, wait, receive], size, priority).
type Obj = (String, f64, [f64; 7], f64, &'static str);

/// Simulates one load; returns the objects, onContentLoad, onLoad, connections.
fn simulate(page: usize, v: usize, n: &Net, rng: &mut Rng) -> (Vec<Obj>, f64, f64, u32) {
    let (pname, hosts, count) = PAGES[page];
    let (_, _, proto, tls) = VARIANTS[v];
    let spdy = proto.starts_with("spdy");
    let noise = 0.92 + 0.16 * uniform(rng);
    let rtt = n.rtt * noise;
    let mut objs: Vec<Obj> = Vec::new();
    let mut known_host = vec![false; hosts];
    // Connection pools: per host, the times the connections become free.
    let mut pools: Vec<Vec<f64>> = vec![Vec::new(); hosts];
    let mut conns = 0u32;
    let rto = |rng: &mut Rng| {
        if uniform(rng) < n.loss * 6.0 {
            200.0 + 200.0 * uniform(rng)
        } else {
            0.0
        }
    };
    let mut html_end = 0.0;
    for i in 0..=count {
        let host = if i == 0 { 0 } else { (i * 7) % hosts };
        let size = if i == 0 {
            38_000.0
        } else {
            1_500.0 + 30_000.0 * uniform(rng).powi(2)
        };
        let discovered = if i == 0 {
            0.0
        } else {
            html_end * (0.3 + 0.7 * (i as f64 / count as f64)) + 15.0 * uniform(rng)
        };
        let dns = if known_host[host] {
            -1.0
        } else {
            18.0 + 10.0 * uniform(rng)
        };
        known_host[host] = true;
        let limit = if spdy { 1 } else { 6 };
        let pool = &mut pools[host];
        let (slot, free_at, fresh) = if pool.len() < limit {
            pool.push(0.0);
            (pool.len() - 1, discovered, true)
        } else {
            let (k, t) = pool
                .iter()
                .enumerate()
                .min_by(|a, b| a.1.total_cmp(b.1))
                .map(|(k, t)| (k, *t))
                .unwrap();
            (k, if spdy { discovered } else { t.max(discovered) }, false)
        };
        let blocked = (free_at - discovered).max(0.0) + 0.5 * uniform(rng);
        let (connect, ssl) = if fresh {
            conns += 1;
            let ssl = if tls { 2.0 * rtt } else { -1.0 };
            (rtt + ssl.max(0.0), ssl)
        } else {
            (-1.0, -1.0)
        };
        // Fresh HTTP/1.1 connections start in slow start: their objects arrive slower.
        let slow_start = if fresh && !spdy && i > 0 { 1.6 } else { 1.0 };
        let receive = size / (n.down / 2.5) * slow_start * (0.8 + 0.4 * uniform(rng)) + rto(rng);
        let wait = rtt + 4.0 + 30.0 * uniform(rng) + rto(rng);
        let send = 0.3 + 0.7 * uniform(rng);
        let t = [blocked, dns, connect, ssl, send, wait, receive];
        let total = blocked + dns.max(0.0) + connect.max(0.0) + send + wait + receive;
        let end = discovered + total;
        if !spdy || fresh {
            pools[host][slot] = end;
        }
        if i == 0 {
            html_end = end;
        }
        let url = if i == 0 {
            format!("http://www.{pname}.test/")
        } else {
            let ext = ["css", "js", "png", "jpg", "gif"][i % 5];
            format!(
                "http://{}.{pname}.test/static/asset-{i:03}.{ext}",
                ["www", "img", "cdn", "ads", "api"][host]
            )
        };
        let prio = match i % 5 {
            0 | 1 => "High",
            2 => "Medium",
            _ => "Low",
        };
        objs.push((url, discovered, t, size, prio));
    }
    let last = objs
        .iter()
        .map(|o| {
            o.1 + o
                .2
                .iter()
                .enumerate()
                .filter(|(k, _)| *k != 3)
                .map(|(_, x)| x.max(0.0))
                .sum::<f64>()
        })
        .fold(0.0, f64::max);
    let dcl = html_end + 0.45 * (last - html_end) + 20.0;
    (objs, dcl, last + 5.0, conns)
}

fn main() -> Result<(), String> {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/tmp/speedy-report-fixture".into());
    let out = Path::new(&out);
    std::fs::create_dir_all(out.join("hars")).map_err(|e| e.to_string())?;
    let results = out.join("results.jsonl");
    let _ = std::fs::remove_file(&results);
    let mut nets = vec![
        net("dsl", 2.0, 375.0, 100.0, 0.01, None),
        net("cable", 4.0, 1000.0, 40.0, 0.01, None),
    ];
    for loss in [0.0, 0.01, 0.02, 0.03] {
        let name = format!("cable-loss-{}", loss * 100.0);
        nets.push(net(
            &name,
            4.0,
            1000.0,
            40.0,
            loss,
            Some(("loss sweep (cable)", "loss", loss)),
        ));
    }
    for rtt in [20.0, 80.0, 160.0, 240.0] {
        let name = format!("cable-rtt-{rtt}");
        nets.push(net(
            &name,
            4.0,
            1000.0,
            rtt,
            0.0,
            Some(("RTT sweep (cable)", "rtt_ms", rtt)),
        ));
    }
    let mut rng = Rng::new(2012);
    let mut clock = 1_767_225_600_000.0; // 2026-01-01
    for n in &nets {
        for (p, (pname, _, _)) in PAGES.iter().enumerate() {
            for run in 0..RUNS {
                for (v, (vname, baseline, proto, tls)) in VARIANTS.iter().enumerate() {
                    let (objs, dcl, onload, conns) = simulate(p, v, n, &mut rng);
                    clock += 10_000.0;
                    let har_rel = format!("hars/{}-{pname}-{vname}-{run}.har", n.name);
                    let entries: Vec<_> = objs
                        .iter()
                        .enumerate()
                        .map(|(i, (url, start, t, size, prio))| {
                            let status = if *pname == "shop-product" && i == 17 { 404 } else { 200 };
                            let time: f64 = t.iter().enumerate().filter(|(k, _)| *k != 3).map(|(_, x)| x.max(0.0)).sum();
                            json!({
                                "startedDateTime": iso(clock + start), "time": (time * 1000.0).round() / 1000.0,
                                "request": {"method": "GET", "url": url, "httpVersion": proto, "cookies": [], "headers": [],
                                            "queryString": [], "headersSize": -1, "bodySize": 0},
                                "response": {"status": status, "statusText": "", "httpVersion": proto, "cookies": [],
                                             "headers": [], "content": {"size": *size as i64, "mimeType": ""},
                                             "redirectURL": "", "headersSize": -1, "bodySize": *size as i64},
                                "cache": {},
                                "timings": {"blocked": t[0], "dns": t[1], "connect": t[2], "ssl": t[3],
                                            "send": t[4], "wait": t[5], "receive": t[6]},
                                "_priority": prio
                            })
                        })
                        .collect();
                    let har = json!({"log": {"version": "1.2", "creator": {"name": "report_fixture", "version": "0"},
                        "pages": [{"startedDateTime": iso(clock), "id": "page_1", "title": pname,
                                   "pageTimings": {"onContentLoad": dcl, "onLoad": onload}}],
                        "entries": entries}});
                    // One row names a HAR that is not there, to show the notes section.
                    let missing = n.name == "dsl" && p == 3 && run == 4 && v == 1;
                    if !missing {
                        std::fs::write(out.join(&har_rel), har.to_string())
                            .map_err(|e| e.to_string())?;
                    }
                    let bytes: f64 = objs.iter().map(|o| o.3).sum::<f64>() * 1.04;
                    let reqs = objs.len() as u64;
                    let (hs_raw, hr_raw) = (reqs * 420, reqs * 310);
                    let (hs_c, hr_c) = if proto.starts_with("spdy") {
                        (hs_raw * 12 / 100, hr_raw * 28 / 100)
                    } else {
                        (hs_raw, hr_raw)
                    };
                    let packets_down = (bytes / 1400.0).ceil() as u64 + reqs;
                    let timed_out = n.name == "cable" && p == 0 && run == 2 && v == 0;
                    // Built through JSON so fields the schema adds with defaults need no change here.
                    let row: Row = serde_json::from_value(json!({
                        "experiment": "layout fixture (synthetic numbers)",
                        "page": pname,
                        "network": n.name,
                        "network_desc": n.desc,
                        "sweep": n.sweep,
                        "variant": vname,
                        "baseline": baseline,
                        "protocol": proto,
                        "tls": tls,
                        "run": run,
                        "on_load_ms": if timed_out { -1.0 } else { (onload * 10.0).round() / 10.0 },
                        "on_content_load_ms": (dcl * 10.0).round() / 10.0,
                        "objects": reqs,
                        "failed_objects": u32::from(*pname == "shop-product" && reqs > 17),
                        "bytes_down": bytes as u64 + hr_c,
                        "bytes_up": hs_c + packets_down * 52,
                        "packets_down": packets_down,
                        "packets_up": packets_down / 2 + if *proto == "http/1.1" { reqs } else { reqs / 3 },
                        "link_drops": (packets_down as f64 * n.loss).round() as u64,
                        "header_bytes_sent_raw": hs_raw,
                        "header_bytes_sent_compressed": hs_c,
                        "header_bytes_received_raw": hr_raw,
                        "header_bytes_received_compressed": hr_c,
                        "connections": conns,
                        "tcp_retransmissions": (packets_down as f64 * n.loss * 1.2).round() as u64,
                        "har": har_rel,
                    }))
                    .map_err(|e| e.to_string())?;
                    append_row(&results, &row)?;
                }
            }
        }
    }
    let opts = ReportOptions {
        banner: Some(
            "LAYOUT FIXTURE: every number in this report is synthetic (examples/report_fixture.rs), not a measurement."
                .into(),
        ),
        ..ReportOptions::default()
    };
    let html = out.join("report.html");
    write_report_with(&results, &html, &opts)?;
    println!("{}", html.display());
    Ok(())
}
