//! The summary's mean change and its ⚠ marker, the text summary, and the waterfalls'
//! HAR links, on small fixtures.

use super::*;
use serde_json::json;
use speedy_net::h3::QuicCcAlgorithm;

/// A load of `page` with onLoad `ms`; the baseline is `http1`.
fn row(page: &str, variant: &str, run: u32, ms: f64, har: &str) -> Row {
    let base = variant == "http1";
    serde_json::from_value(json!({
        "experiment": "t", "page": page, "network": "dsl", "network_desc": "dsl desc",
        "variant": variant, "baseline": base,
        "protocol": if base { "http/1.1" } else { "spdy/3.1" }, "tls": false, "run": run,
        "on_load_ms": ms, "on_content_load_ms": ms / 2.0, "objects": 1, "failed_objects": 0,
        "bytes_down": 0, "bytes_up": 0, "packets_down": 0, "packets_up": 0, "link_drops": 0,
        "header_bytes_sent_raw": 0, "header_bytes_sent_compressed": 0,
        "header_bytes_received_raw": 0, "header_bytes_received_compressed": 0,
        "connections": 1, "tcp_retransmissions": 0, "har": har
    }))
    .unwrap()
}

/// Two pages where the variant halves the light page's load time and slows the heavy
/// one by 20%: per page 2× and 0.83×, geometric mean 1.29× (faster), while the mean
/// goes from 5500 to 6250 ms (+13.6%, slower).
fn disagreeing() -> Vec<Row> {
    let mut rows = Vec::new();
    for run in 0..2 {
        rows.push(row("light", "http1", run, 1000.0, ""));
        rows.push(row("light", "spdy", run, 500.0, ""));
        rows.push(row("heavy", "http1", run, 10_000.0, ""));
        rows.push(row("heavy", "spdy", run, 12_000.0, ""));
    }
    rows
}

/// The summary section of a report.
fn summary_of(html: &str) -> &str {
    let a = html.find(r#"<h2 id="summary">"#).unwrap();
    let end = html[a + 4..].find("<h2 ").map_or(html.len(), |i| a + 4 + i);
    &html[a..end]
}

#[test]
fn mean_change_is_the_change_of_the_pooled_means() {
    let st = Stats::compute(&disagreeing());
    let m = st.mean_change("dsl", "spdy").unwrap();
    assert!((m - 100.0 * (6250.0 - 5500.0) / 5500.0).abs() < 1e-9, "{m}");
    assert_eq!(st.mean_change("dsl", "http1"), None, "a baseline has none");
    let s = st
        .network_cell("dsl", "spdy")
        .unwrap()
        .speedup
        .clone()
        .unwrap();
    assert!((s.speedup - (2.0f64 * 10_000.0 / 12_000.0).sqrt()).abs() < 1e-9);
    assert!(s.speedup > 1.0 && m > 0.0);
    assert!(st.disagrees("dsl", "spdy"));
    assert!(!st.disagrees("dsl", "http1"));
}

#[test]
fn summary_shows_mean_change_guide_and_marks_disagreement() {
    let dir = tempfile::tempdir().unwrap();
    let html = render(&disagreeing(), dir.path(), &ReportOptions::default());
    let sum = summary_of(&html);
    assert!(sum.contains("<th>Mean change</th>"), "{sum}");
    assert!(sum.contains("<th>Speedup [95% CI]</th>"));
    assert!(sum.contains("1.29×"));
    assert!(sum.contains("+13.6%"), "{sum}");
    assert!(sum.contains("⚠ disagree"));
    // The reading guide comes before the table.
    let guide = sum.find("How to read:").expect("reading guide");
    assert!(guide < sum.find("<table>").unwrap());

    // When both point the same way there is no marker, and faster reads with a minus.
    let mut agree = disagreeing();
    for r in &mut agree {
        if r.page == "heavy" && r.variant == "spdy" {
            r.on_load_ms = 8000.0;
        }
    }
    let html = render(&agree, dir.path(), &ReportOptions::default());
    let sum = summary_of(&html);
    assert!(!sum.contains("⚠ disagree"), "{sum}");
    // (500 + 8000) / 2 = 4250 against 5500: −22.7%.
    assert!(sum.contains("−22.7%"), "{sum}");
}

#[test]
fn text_summary_has_one_line_per_network_and_variant() {
    let st = Stats::compute(&disagreeing());
    let t = summary_text(&st);
    let lines: Vec<&str> = t.lines().collect();
    assert!(lines[0].starts_with("network  variant"), "{t}");
    assert!(lines[0].contains("mean onLoad (ms)") && lines[0].contains("mean change"));
    assert!(lines[1].starts_with("dsl") && lines[1].contains("http1"));
    assert!(lines[1].contains("baseline"), "{t}");
    assert!(lines[2].contains("spdy") && lines[2].contains("1.29×"));
    assert!(
        lines[2].contains("6250") && lines[2].contains("+13.6% (") && lines[2].contains("⚠"),
        "{t}"
    );
    // Every speedup and change carries its interval, and a verdict follows from it.
    assert!(lines[0].contains("speedup (95% CI)") && lines[0].contains("verdict"));
    let s = st
        .network_cell("dsl", "spdy")
        .unwrap()
        .speedup
        .clone()
        .unwrap();
    assert!(
        lines[2].contains(&format!("({:.2}–{:.2})", s.ci.low, s.ci.high)),
        "{t}"
    );
    assert!(lines[2].contains(s.verdict().text()), "{t}");
    assert!(t.contains("⚠ speedup and mean change point opposite ways"));
    // Columns line up: every row is as wide as the widest up to its last column.
    assert_eq!(
        lines[1].find("http1").unwrap(),
        lines[2].find("spdy").unwrap()
    );
}

#[test]
fn header_bytes_not_measured_are_said_so_not_shown_as_saved() {
    let mut rows = Vec::new();
    for (variant, protocol, wire) in [("spdy", "spdy/3.1", Some(300)), ("h2", "h2", None)] {
        let mut r = row("a", variant, 0, 1000.0, "");
        r.protocol = speedy_net::Protocol::parse(protocol).unwrap();
        r.header_bytes_sent_raw = Some(1000);
        r.header_bytes_sent_compressed = wire;
        r.header_bytes_received_raw = Some(2000);
        r.header_bytes_received_compressed = wire;
        rows.push(r);
    }
    let html = render(&rows, Path::new("."), &ReportOptions::default());
    let a = html.find(r#"<h2 id="headers">"#).expect("a header section");
    let sec = &html[a..];
    let h2 = &sec[sec.find(">h2<").unwrap()..];
    let h2 = &h2[..h2.find("</tr>").unwrap()];
    assert!(
        h2.contains("not measured") && !h2.contains("100.0%"),
        "{h2}"
    );
    assert!(sec.contains("70.0%"), "SPDY's saving still shown: {sec}");
}

#[test]
fn one_load_a_side_gives_no_verdict() {
    let rows = vec![
        row("light", "http1", 0, 1000.0, ""),
        row("light", "spdy", 0, 500.0, ""),
    ];
    let t = summary_text(&Stats::compute(&rows));
    let spdy = t.lines().find(|l| l.contains("spdy")).unwrap();
    assert!(spdy.ends_with("too few loads to tell"), "{t}");
}

#[test]
fn text_summary_marks_an_encrypted_variant_against_a_plain_baseline() {
    let mut rows = disagreeing();
    for r in rows.iter_mut().filter(|r| r.variant == "spdy") {
        r.variant = "h3".into();
        r.protocol = speedy_net::Protocol::H3;
        r.tls = true;
    }
    let t = summary_text(&Stats::compute(&rows));
    assert!(t.contains("http1 †"), "{t}");
    assert!(
        t.contains("† h3 and its baseline http1 differ in encryption"),
        "{t}"
    );
    // Both plain: no mark.
    assert!(!summary_text(&Stats::compute(&disagreeing())).contains('†'));
}

/// The smallest HAR the report reads.
fn har_text() -> String {
    json!({"log": {"version": "1.2", "creator": {"name": "t", "version": "0"},
        "pages": [{"startedDateTime": "2026-01-01T00:00:00.000Z", "id": "page_1", "title": "t",
                   "pageTimings": {"onContentLoad": 200, "onLoad": 400}}],
        "entries": []}})
    .to_string()
}

#[test]
fn waterfalls_link_their_har_only_when_it_exists() {
    let dir = tempfile::tempdir().unwrap();
    let res = dir.path().join("res");
    std::fs::create_dir_all(res.join("hars/dsl")).unwrap();
    std::fs::write(res.join("hars/dsl/light http1.har"), har_text()).unwrap();
    let rows = vec![
        row("light", "http1", 0, 400.0, "hars/dsl/light http1.har"),
        row("light", "spdy", 0, 300.0, "hars/dsl/light-spdy.har"),
    ];
    // Report beside the results: links relative to that directory.
    let html = render(&rows, &res, &ReportOptions::default());
    assert!(
        html.contains(r#"<a class="har" href="hars/dsl/light%20http1.har""#),
        "{html}"
    );
    assert!(
        !html.contains("light-spdy.har\""),
        "no link to a missing HAR"
    );
    assert_eq!(html.matches(r#"<a class="har""#).count(), 1);

    // Report written elsewhere: the link climbs to the results' directory.
    let text: String = rows
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(res.join("results.jsonl"), text).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    write_report(&res.join("results.jsonl"), &out.join("r.html")).unwrap();
    let html = std::fs::read_to_string(out.join("r.html")).unwrap();
    assert!(
        html.contains(r#"href="../res/hars/dsl/light%20http1.har""#),
        "{html}"
    );
    assert_eq!(html.matches(r#"<a class="har""#).count(), 1);
}

#[test]
fn the_sctp_section_compares_each_page_with_tcp_in_the_notes_form() {
    let mut rows = Vec::new();
    for run in 0..2 {
        // Over SCTP: page a 10% faster, b 2% slower (within 5%), c 20% slower.
        for (page, tcp, sctp) in [
            ("a", 2000.0, 1800.0),
            ("b", 1000.0, 1020.0),
            ("c", 1500.0, 1800.0),
        ] {
            rows.push(row(page, "http1", run, tcp, ""));
            // A second SCTP variant, second in the experiment but first to finish.
            let mut r = row(page, "spdy-nobundle", run, sctp + 500.0, "");
            r.transport = Some(speedy_net::Carrier::Sctp);
            r.variant_index = Some(2);
            rows.push(r);
            let mut r = row(page, "spdy", run, sctp, "");
            r.transport = Some(speedy_net::Carrier::Sctp);
            r.variant_index = Some(1);
            rows.push(r);
        }
    }
    let html = render(&rows, Path::new("."), &ReportOptions::default());
    let a = html.find(r#"<h2 id="sctp">"#).expect("an SCTP section");
    let end = html[a + 4..].find("<h2 ").map_or(html.len(), |i| a + 4 + i);
    let sec = &html[a..end];
    // Its tables in the experiment's order, and captions that say what carried them.
    let first = sec.find("against spdy (SCTP)").expect("spdy's table");
    let second = sec
        .find("against spdy-nobundle (SCTP)")
        .expect("spdy-nobundle's table");
    assert!(first < second, "{sec}");
    assert!(html.contains("spdy = SPDY/3.1 over SCTP"), "{html}");
    assert!(!html.contains("spdy = SPDY/3.1 over TCP"), "{html}");
    // Mean of +200, -20 and -300.
    assert!(
        sec.contains("3 pages: 1 more than 5% faster over SCTP, 1 more than 5% slower, 1 within 5%; mean TCP − SCTP onLoad -40 ms"),
        "{sec}"
    );
    assert!(sec.contains("+200") && sec.contains("-300"), "{sec}");
    // Without SCTP rows there is no section.
    let html = render(&disagreeing(), Path::new("."), &ReportOptions::default());
    assert!(!html.contains(r#"<h2 id="sctp">"#));
}

#[test]
fn the_sctp_section_counts_each_sides_timeouts_and_says_what_they_cost() {
    use speedy_net::sctp::counters::Counters;
    let sctp = |t3: u64, fr: u64| Counters {
        t3_timeouts: t3,
        fast_retransmissions: fr,
        ..Counters::default()
    };
    let mut rows = Vec::new();
    for run in 0..2 {
        let mut r = row("a", "http1", run, 2000.0, "");
        r.link_drops = 20;
        (r.server_rto_timeouts, r.loader_rto_timeouts) = (1, Some(0));
        (r.server_retransmissions, r.loader_retransmissions) = (20, Some(4));
        rows.push(r);
        let mut r = row("a", "spdy", run, 2400.0, "");
        r.transport = Some(speedy_net::Carrier::Sctp);
        r.link_drops = 18;
        // Loads 0 and 1: 2 and 3 T3 timeouts on the server, 1 on the loader each.
        r.server_sctp = Some(sctp(2 + u64::from(run), 10));
        r.loader_sctp = Some(sctp(1, 0));
        // The kernel's TCP counters of an SCTP load are not SCTP's and are not shown.
        r.server_rto_timeouts = 7;
        rows.push(r);
    }
    let html = render(&rows, Path::new("."), &ReportOptions::default());
    let a = html.find(r#"<h2 id="sctp">"#).expect("an SCTP section");
    let sec = &html[a..];
    assert!(
        sec.contains("dsl: how the loads recovered from loss"),
        "{sec}"
    );
    // spdy: 2.5 timeouts on the server and 1 on the loader a load; http1: 1 and 0.
    let spdy = sec
        .find(r#"<td class="l">spdy</td><td class="l">SCTP"#)
        .expect("spdy's row");
    let cells = &sec[spdy..spdy + sec[spdy..].find("</tr>").unwrap()];
    for want in [
        "SCTP (sctp-proto)",
        "2400",
        "18.0",
        "2.50",
        "1.00",
        "10.0",
        "0.0",
    ] {
        assert!(cells.contains(&format!(">{want}<")), "{want} in {cells}");
    }
    assert!(
        sec.contains(
            "waited out 3.50 (spdy) retransmission timeouts a load, against 1.00 for http1"
        ),
        "{sec}"
    );
    assert!(!sec.contains("spurious"), "{sec}");
    // One stack only: no comparison of stacks.
    assert!(!sec.contains("The two SCTP stacks"), "{sec}");
    // The same loads on usrsctp too (3x the T3 timeouts on the server, the same fast
    // retransmissions, 1 delayed SACK a load where sctp-proto had none): compared
    // mechanism by mechanism.
    let mut both = rows.clone();
    for run in 0..2 {
        let mut r = row("a", "spdy-usrsctp", run, 2600.0, "");
        r.transport = Some(speedy_net::Carrier::Sctp);
        r.sctp_stack = Some(speedy_net::sctp::SctpStack::Usrsctp);
        r.link_drops = 18;
        r.server_sctp = Some(Counters {
            delayed_sack_timeouts: 1,
            ..sctp(3 * (2 + u64::from(run)) + 2, 10)
        });
        r.loader_sctp = Some(sctp(1, 0));
        both.push(r);
    }
    let html = render(&both, Path::new("."), &ReportOptions::default());
    let sec = &html[html.find(r#"<h2 id="sctp">"#).unwrap()..];
    assert!(
        sec.contains(
            "They differ by more than a quarter in: T3-rtx timeouts (3.00×), \
             delayed-SACK timer expirations (none on sctp-proto); within a quarter: \
             fast-retransmitted chunks, SACKs received."
        ),
        "{sec}"
    );
    assert!(
        sec.contains("<td>3.50</td><td>10.50</td><td>3.00×</td>"),
        "{sec}"
    );
    // Rows of an older speedy have no loader counters: shown as –, and no sentence.
    let mut old = rows.clone();
    for r in old.iter_mut().filter(|r| r.variant == "http1") {
        (r.loader_rto_timeouts, r.loader_retransmissions) = (None, None);
    }
    let html = render(&old, Path::new("."), &ReportOptions::default());
    let at = html
        .find(r#"<td class="l">http1</td><td class="l">TCP"#)
        .unwrap();
    let cells = &html[at..at + html[at..].find("</tr>").unwrap()];
    // (and TCP has no delayed-SACK counter)
    assert_eq!(cells.matches("<td>–</td>").count(), 3, "{cells}");
    assert!(!html.contains("waited out"), "{html}");
    // Without losses on the link, the timeouts were spurious, and the report says so.
    for r in &mut rows {
        r.link_drops = 0;
    }
    let html = render(&rows, Path::new("."), &ReportOptions::default());
    assert!(html.contains("how the loads recovered from loss"), "{html}");
    assert!(html.contains("every timeout here was spurious"), "{html}");
    // Without losses or timeouts, no recovery table.
    for r in &mut rows {
        (r.server_rto_timeouts, r.loader_rto_timeouts) = (0, Some(0));
        r.server_sctp = Some(sctp(0, 0));
        r.loader_sctp = Some(sctp(0, 0));
    }
    let html = render(&rows, Path::new("."), &ReportOptions::default());
    assert!(
        !html.contains("how the loads recovered from loss"),
        "{html}"
    );
}

#[test]
fn tcp_settings_are_not_compared_for_loads_over_quic_or_sctp() {
    let mut rows = Vec::new();
    for (variant, protocol, transport) in [
        ("http1", "http/1.1", None),
        ("spdy", "spdy/3.1", None),
        ("quic", "h3", None),
        ("sctp", "spdy/3.1", Some("sctp")),
    ] {
        let mut r = row("a", variant, 0, 1000.0, "");
        r.protocol = speedy_net::Protocol::parse(protocol).unwrap();
        r.transport = transport.map(|t| t.parse().unwrap());
        r.tcp_cc = "cubic".into();
        r.initcwnd = 10;
        r.rack_tlp = true;
        rows.push(r);
    }
    let html = render(&rows, Path::new("."), &ReportOptions::default());
    let a = html
        .find(r#"<h2 id="conditions">"#)
        .expect("a conditions section");
    let end = html[a + 4..].find("<h2 ").map_or(html.len(), |i| a + 4 + i);
    let sec = &html[a..end];
    // The list under the table: how each variant differs from the whitepaper.
    // (None listed: no difference.)
    let differs = |variant: &str| {
        let Some(i) = sec.find(&format!("<li><b>{variant}</b>")) else {
            return String::new();
        };
        let end = sec[i..].find("</li>").map_or(sec.len(), |j| i + j);
        sec[i..end].to_string()
    };
    // Over TCP: the initial window and RACK/TLP differ from 2009's.
    assert!(differs("spdy").contains("initcwnd 10"), "{sec}");
    assert!(
        differs("spdy").contains("TCP RACK and tail loss probes on"),
        "{sec}"
    );
    // QUIC takes its window from the variant, not the TCP knobs, and its congestion
    // control is quinn's (none recorded here: not compared); QPACK is not SPDY's zlib.
    assert!(differs("quic").contains("initcwnd 10"), "{sec}");
    assert!(!differs("quic").contains("congestion control"), "{sec}");
    assert!(!differs("quic").contains("headers"), "{sec}");
    assert!(sec.contains("– (QPACK)"), "{sec}");
    assert!(!differs("quic").contains("RACK"), "{sec}");
    // SCTP takes neither.
    assert!(!differs("sctp").contains("initcwnd"), "{sec}");
    assert!(!differs("sctp").contains("RACK"), "{sec}");
}

#[test]
fn quic_loads_show_quinns_congestion_control_not_the_namespaces_tcp_one() {
    let mut rows = Vec::new();
    for (variant, cc) in [
        ("h3-cubic", QuicCcAlgorithm::Cubic),
        ("h3-bbr", QuicCcAlgorithm::Bbr),
    ] {
        let mut r = row("a", variant, 0, 1000.0, "");
        r.protocol = speedy_net::Protocol::H3;
        r.tls = true;
        r.tcp_cc = "bbr".into(); // the namespaces' default, which QUIC does not use
        r.quic_cc = Some(cc);
        r.initcwnd = 3;
        rows.push(r);
    }
    let html = render(&rows, Path::new("."), &ReportOptions::default());
    let a = html.find(r#"<h2 id="conditions">"#).unwrap();
    let sec = &html[a..];
    assert!(
        sec.contains("cubic (quinn)") && sec.contains("bbr (quinn)"),
        "{sec}"
    );
    // CUBIC is the whitepaper's; BBR is listed as a difference.
    assert!(!sec.contains("<li><b>h3-cubic</b>"), "{sec}");
    assert!(
        sec.contains("<li><b>h3-bbr</b>: congestion control bbr (quinn)"),
        "{sec}"
    );
}

#[test]
fn the_whitepaper_tables_find_their_rows_by_conditions_not_names() {
    // A baseline and three SPDY variants with names of their own, on a network named
    // after nothing whose conditions are the whitepaper's DSL line.
    let desc = crate::experiment::profile_desc("whitepaper-dsl").unwrap();
    let mut rows = Vec::new();
    for run in 0..2 {
        for (variant, ms, single, push) in [
            ("plain-http", 3000.0, false, "none"),
            ("mux", 2000.0, false, "none"),
            ("mux-one", 1800.0, true, "none"),
            ("mux-one-pushing", 1700.0, true, "subresources"),
        ] {
            let mut r = row("p", variant, run, ms, "");
            r.baseline = variant == "plain-http";
            if r.baseline {
                r.protocol = speedy_net::Protocol::Http1;
            }
            r.network = "home".into();
            r.network_desc = desc.clone();
            r.spdy_domains = Some(if single {
                speedy_browser::Domains::Single
            } else {
                speedy_browser::Domains::PerOrigin
            });
            r.push = Some(push.parse().unwrap());
            r.hint = Some(false);
            r.prefetch = Some(false);
            rows.push(r);
        }
    }
    let html = render(&rows, Path::new("."), &ReportOptions::default());
    let t1 = &html[html
        .find("Table 1")
        .expect("the whitepaper section is there")..];
    let row_of = |label: &str| {
        let i = t1.find(label).unwrap_or_else(|| panic!("{label}"));
        &t1[i..i + t1[i..].find("</tr>").unwrap()]
    };
    assert!(
        row_of("SPDY basic multi-domain").contains(">mux<"),
        "{}",
        row_of("SPDY basic multi-domain")
    );
    assert!(row_of("SPDY basic multi-domain").contains(">mux</span></td><td>2000<"));
    assert!(row_of("SPDY basic single-domain connection").contains(">mux-one<"));
    assert!(row_of("server push").contains(">mux-one-pushing<"));
    assert!(row_of("server push").contains(">mux-one-pushing</span></td><td>1700<"));
    // No variant ran the hint row: it names the built-in's variant, with dashes.
    assert!(
        row_of("server hint").contains(">spdy-single-hint</span></td><td>–<"),
        "{}",
        row_of("server hint")
    );
}
