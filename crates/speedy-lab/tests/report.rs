//! The report from a small synthetic results file with tiny HARs: every section is there,
//! the numbers are those of the statistics, every SVG is well-formed XML, missing data
//! and unreadable HARs are noted instead of failing.

use serde_json::json;
use speedy_lab::report::{render, write_report, ReportOptions};
use speedy_lab::results::{read_rows, Row};
use speedy_lab::stats::Stats;
use std::path::Path;

/// A HAR with `n` objects, each 100 ms after the previous, with every phase set.
fn har(on_load: f64, n: usize) -> serde_json::Value {
    let entries: Vec<_> = (0..n)
        .map(|i| {
            json!({
                "startedDateTime": format!("2026-01-01T00:00:00.{:03}Z", i * 100),
                "time": 60,
                "request": {"method": "GET", "url": format!("http://www.example.test/o{i}.css?a=<b>&c"), "httpVersion": "HTTP/1.1",
                            "cookies": [], "headers": [], "queryString": [], "headersSize": -1, "bodySize": 0},
                "response": {"status": if i == 1 { 404 } else { 200 }, "statusText": "", "httpVersion": "HTTP/1.1",
                             "cookies": [], "headers": [], "content": {"size": 10, "mimeType": "text/css"},
                             "redirectURL": "", "headersSize": -1, "bodySize": 10},
                "cache": {},
                "timings": {"blocked": 10, "dns": if i == 0 { 5 } else { -1 }, "connect": if i == 0 { 15 } else { -1 },
                            "ssl": -1, "send": 1, "wait": 20, "receive": 9},
                "_priority": "High"
            })
        })
        .collect();
    json!({"log": {"version": "1.2", "creator": {"name": "test", "version": "0"},
        "pages": [{"startedDateTime": "2026-01-01T00:00:00.000Z", "id": "page_1", "title": "t",
                   "pageTimings": {"onContentLoad": on_load / 2.0, "onLoad": on_load}}],
        "entries": entries}})
}

#[allow(clippy::too_many_arguments)]
fn row(
    page: &str,
    network: &str,
    variant: &str,
    run: u32,
    ms: f64,
    har: &str,
    sweep: Option<f64>,
) -> Row {
    let base = variant == "http1";
    let mut v = json!({
        "experiment": "tiny", "page": page, "network": network,
        "network_desc": format!("{network}: 2 Mbit/s down, 100 ms RTT"),
        "variant": variant, "baseline": base,
        "protocol": if base { "http/1.1" } else { "spdy/3.1" }, "tls": false, "run": run,
        "on_load_ms": ms, "on_content_load_ms": ms / 2.0, "objects": 3, "failed_objects": 1,
        "bytes_down": 50_000, "bytes_up": 4_000, "packets_down": 40, "packets_up": if base { 30 } else { 20 },
        "link_drops": 0,
        "header_bytes_sent_raw": 1000, "header_bytes_sent_compressed": if base { 1000 } else { 200 },
        "header_bytes_received_raw": 800, "header_bytes_received_compressed": if base { 800 } else { 400 },
        "connections": if base { 6 } else { 1 }, "tcp_retransmissions": 0, "har": har
    });
    if let Some(loss) = sweep {
        v["sweep"] = json!({"sweep": "loss sweep", "param": "loss", "value": loss});
    }
    serde_json::from_value(v).unwrap()
}

/// Two pages × one network × two variants × three runs, plus a two-point loss sweep.
/// HARs: three real ones, one garbage, the rest missing.
fn fixture(dir: &Path) -> Vec<Row> {
    std::fs::create_dir_all(dir.join("hars")).unwrap();
    std::fs::write(dir.join("hars/a-http1.har"), har(1000.0, 3).to_string()).unwrap();
    std::fs::write(dir.join("hars/a-spdy.har"), har(600.0, 3).to_string()).unwrap();
    std::fs::write(dir.join("hars/b-http1.har"), har(2000.0, 2).to_string()).unwrap();
    std::fs::write(dir.join("hars/b-spdy.har"), "this is not json").unwrap();
    let mut rows = Vec::new();
    for run in 0..3u32 {
        let j = run as f64 * 10.0;
        rows.push(row(
            "a",
            "dsl",
            "http1",
            run,
            1000.0 + j,
            "hars/a-http1.har",
            None,
        ));
        rows.push(row(
            "a",
            "dsl",
            "spdy",
            run,
            600.0 + j,
            "hars/a-spdy.har",
            None,
        ));
        let b_har = if run == 2 {
            "hars/gone.har"
        } else {
            "hars/b-http1.har"
        };
        rows.push(row("b", "dsl", "http1", run, 2000.0 + j, b_har, None));
        rows.push(row(
            "b",
            "dsl",
            "spdy",
            run,
            1000.0 + j,
            "hars/b-spdy.har",
            None,
        ));
        for (net, loss) in [("l0", 0.0), ("l2", 0.02)] {
            for v in ["http1", "spdy"] {
                let ms = if v == "http1" { 1500.0 } else { 900.0 } * (1.0 + 10.0 * loss) + j;
                rows.push(row("a", net, v, run, ms, "hars/missing.har", Some(loss)));
            }
        }
    }
    // A load that timed out.
    rows.push(row("a", "dsl", "spdy", 3, -1.0, "hars/a-spdy.har", None));
    let text: String = rows
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(dir.join("results.jsonl"), text).unwrap();
    rows
}

/// Every `<svg …>…</svg>` of the page.
fn svgs(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("<svg ") {
        let j = rest[i..].find("</svg>").expect("unclosed svg") + i + "</svg>".len();
        out.push(&rest[i..j]);
        rest = &rest[j..];
    }
    out
}

#[test]
fn report_has_every_section_the_numbers_and_well_formed_svg() {
    let dir = tempfile::tempdir().unwrap();
    let rows = fixture(dir.path());
    let out = dir.path().join("report.html");
    write_report(&dir.path().join("results.jsonl"), &out).unwrap();
    let html = std::fs::read_to_string(&out).unwrap();

    for id in [
        "summary",
        "pages",
        "scatter",
        "boxes",
        "cdf",
        "sweeps",
        "phases",
        "traffic",
        "headers",
        "waterfalls",
        "limits",
        "notes",
    ] {
        assert!(
            html.contains(&format!(r#"<h2 id="{id}">"#)),
            "section {id} missing"
        );
    }
    // Self-contained: no script, nothing fetched.
    assert!(!html.contains("<script"));
    assert!(!html.contains("src=\"http"));
    assert!(!html.contains("<link"));

    // The numbers are those of the statistics.
    let st = Stats::compute(&read_rows(&dir.path().join("results.jsonl")).unwrap());
    assert_eq!(st.excluded.len(), 1);
    let spdy = st.network_cell("dsl", "spdy").unwrap();
    assert_eq!(spdy.summary.n, 6);
    assert_eq!(spdy.summary.mean, 810.0);
    assert!(
        html.contains(">810<br><span class=\"ci\">"),
        "spdy mean 810 ms in the summary"
    );
    let http1 = st.network_cell("dsl", "http1").unwrap();
    assert!(
        html.contains(">1510<br><span class=\"ci\">"),
        "http1 mean 1510 ms"
    );
    let s = spdy.speedup.as_ref().unwrap();
    let expect = ((1010.0f64 / 610.0) * (2010.0 / 1010.0)).sqrt();
    assert!((s.speedup - expect).abs() < 1e-9);
    assert!(html.contains(&format!("{:.2}×", s.speedup)));
    assert!(html.contains(&format!("[{:.2} – {:.2}]", s.ci.low, s.ci.high)));
    assert!(html.contains(&format!(
        "[{:.0} – {:.0}]",
        http1.summary.ci.low, http1.summary.ci.high
    )));
    // Page speedup of page a: 1010 / 610.
    assert!(html.contains(&format!("{:.2}×", 1010.0 / 610.0)));
    // Header compression: spdy saves 80% of request and 50% of response header bytes.
    assert!(html.contains("80.0%") && html.contains("50.0%"));
    // Sweep table: both loss points and the values in percent.
    assert!(html.contains("loss sweep") && html.contains(">2%<"));
    // Captions say what was run.
    assert!(html.contains(
        "Network: dsl (dsl: 2 Mbit/s down, 100 ms RTT). 2 pages, 3–4 runs per page and variant"
    ));
    assert!(html.contains("spdy = SPDY/3.1 over TCP"));
    // Waterfalls: URL labels (escaped), onLoad lines.
    assert!(html.contains("www.example.test/o0.css?a=&lt;b&gt;&amp;c"));
    assert!(html.contains("onLoad 1000 ms") || html.contains("1000 ms"));
    // Notes: the unreadable HAR, the missing one, the excluded load, failed objects.
    assert!(html.contains("HAR not read: hars/b-spdy.har: not a HAR 1.2 file"));
    assert!(html.contains("HAR not read: hars/gone.har"));
    assert!(html.contains("Load left out of the statistics: a / dsl / spdy / run 3"));
    assert!(html.contains("loads had failed objects"));
    assert!(html.contains("What the lab cannot model"));

    // Every SVG parses as XML and has a root <svg> with a viewBox.
    let all = svgs(&html);
    assert!(all.len() >= 10, "only {} charts", all.len());
    for s in &all {
        let doc = roxmltree::Document::parse(s).unwrap_or_else(|e| panic!("bad SVG: {e}\n{s}"));
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        assert!(doc.root_element().attribute("viewBox").is_some());
        assert!(
            !s.contains("NaN") && !s.contains("inf"),
            "non-finite coordinate in {s}"
        );
    }
    // Every figure has a caption.
    assert_eq!(
        html.matches("<figure>").count(),
        html.matches("<figcaption>").count()
    );
    assert_eq!(rows.len(), 4 * 3 + 4 * 3 + 1);
}

#[test]
fn report_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let rows = fixture(dir.path());
    let a = render(&rows, dir.path(), &ReportOptions::default());
    let mut rev = rows.clone();
    rev.reverse();
    let b = render(&rows, dir.path(), &ReportOptions::default());
    assert_eq!(a, b);
    // The statistics do not depend on the order of the rows.
    assert_eq!(
        Stats::compute(&rows).network_cells,
        Stats::compute(&rev).network_cells
    );
}

#[test]
fn empty_and_baseline_free_results_give_a_report_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let html = render(&[], dir.path(), &ReportOptions::default());
    assert!(html.contains("No data for this chart"));
    for s in svgs(&html) {
        roxmltree::Document::parse(s).unwrap();
    }
    // Only a non-baseline variant, no HARs at all.
    let rows: Vec<Row> = (0..2)
        .map(|r| row("a", "dsl", "spdy", r, 500.0 + r as f64, "", None))
        .collect();
    let html = render(&rows, dir.path(), &ReportOptions::default());
    assert!(html.contains("No baseline loads on network dsl"));
    assert!(html.contains("No data for this chart"));
    for s in svgs(&html) {
        roxmltree::Document::parse(s).unwrap();
    }
}

#[test]
fn unreadable_results_file_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("results.jsonl");
    std::fs::write(&bad, "{not json}\n").unwrap();
    let err = write_report(&bad, &dir.path().join("r.html")).unwrap_err();
    assert!(err.contains("results.jsonl:1"), "{err}");
    assert!(write_report(&dir.path().join("nope.jsonl"), &dir.path().join("r.html")).is_err());
}
