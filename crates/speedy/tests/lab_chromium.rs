//! `speedy lab` with headless Chromium as a client beside the loader (needs root,
//! network namespaces and Chromium): two synthesized pages, one run, a fast network,
//! h2 and h3 each loaded by the loader and by Chromium, all over TLS. Every row has an
//! onLoad; Chromium's rows say so, carry First and Largest Contentful Paint and leave
//! out what only the loader counts; their HARs read through the one HAR model; the
//! report and the export take them. Fails (never skips) without Chromium: `apt-get
//! install chromium`.

mod support;

use speedy_archive::har::Har;
use speedy_lab::experiment::Client;
use speedy_lab::results::read_rows;
use std::process::Command;
use std::time::Duration;
use support::{run_bounded, TempDir, BIN};

const EXPERIMENT: &str = r#"name = "chromium-beside"
runs = 1
seed = 3
timeout_s = 30
[pages]
synth = 2
calibration = "web-2010"
[[network]]
name = "fast"
down = "20mbit"
up = "5mbit"
rtt_ms = 20
[[variant]]
name = "h2"
protocol = "h2"
tls = true
baseline = true
[[variant]]
name = "h2-chromium"
protocol = "h2"
tls = true
client = "chromium"
[[variant]]
name = "h3"
protocol = "h3"
[[variant]]
name = "h3-chromium"
protocol = "h3"
client = "chromium"
"#;

#[test]
fn chromium_loads_pages_beside_the_loader() {
    let chromium = std::env::var("SPEEDY_CHROMIUM").unwrap_or_else(|_| "chromium".into());
    let dir = TempDir::new("lab-chromium");
    let exp = dir.join("beside.toml");
    std::fs::write(&exp, EXPERIMENT).unwrap();
    let out = dir.join("out");
    // speedy kills its own children by pid and process group (and the kernel does if it
    // dies: PR_SET_PDEATHSIG); run_bounded kills speedy by its pid past the bound.
    let o = run_bounded(
        Command::new(BIN)
            .arg("lab")
            .arg(&exp)
            .arg("--out")
            .arg(&out)
            .args(["--chromium", &chromium]),
        Duration::from_secs(300),
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(
        o.status.success(),
        "speedy lab failed (needs root and Chromium: apt-get install chromium):\n{stderr}"
    );
    assert!(stderr.contains("[8/8]"), "progress: {stderr}");
    assert!(
        stderr.contains("a Chromium load takes")
            && (stderr.contains("Chromium load at once")
                || stderr.contains("Chromium loads at once")),
        "what the lanes do about Chromium's CPU, said at the start: {stderr}"
    );
    assert!(
        stderr.contains("fixed: a variant loads with Chromium"),
        "--lanes auto keeps the lanes fixed with Chromium: {stderr}"
    );
    let rows = read_rows(&out.join("results.jsonl")).unwrap();
    assert_eq!(rows.len(), 2 * 4, "pages × variants");
    for r in &rows {
        assert!(r.on_load_ms > 20.0, "an onLoad above one RTT: {r:?}");
        let chromium = r.variant.ends_with("-chromium");
        assert_eq!(
            r.client,
            if chromium {
                Client::Chromium
            } else {
                Client::Loader
            },
            "{r:?}"
        );
        let want = if r.variant.starts_with("h2") {
            "h2"
        } else {
            "h3"
        };
        assert_eq!(r.protocol.to_string(), want, "{r:?}");
        assert!(r.bytes_down > 10_000, "the link carried the page: {r:?}");
        // Both clients get every object: the corpus answers its scripts' cross-origin
        // fetches with the CORS headers Chromium checks.
        assert_eq!(r.failed_objects, 0, "{r:?}");
        let har = Har::read(&out.join(&r.har)).unwrap_or_else(|e| panic!("{e}"));
        assert!(har.log.entries.len() >= 3, "{}: entries", r.har);
        assert_eq!(har.log.entries.len(), r.objects as usize, "{r:?}");
        if chromium {
            let (fcp, lcp) = (r.fcp_ms.unwrap(), r.lcp_ms.unwrap());
            // Both painted, and before the load ended (a paint may come in the frame
            // after the load event: a little slack).
            assert!(fcp > 0.0 && lcp >= fcp, "{r:?}");
            assert!(lcp <= r.on_load_ms + 100.0, "{r:?}");
            assert!(r.connections >= 1, "{r:?}");
            // What only the loader counts is absent, never a 0.
            assert!(r.header_bytes_sent_raw.is_none() && r.tcp_retransmissions.is_none());
            assert!(
                r.loader_lag_max_us.is_none() && r.tls_hello.is_none(),
                "{r:?}"
            );
            let page = &har.log.pages[0];
            assert_eq!(page.page_timings.on_load, r.on_load_ms);
            assert_eq!((page.fcp_ms, page.lcp_ms), (r.fcp_ms, r.lcp_ms));
            assert_eq!(har.log.browser.as_ref().unwrap().name, "Chromium");
            let doc = &har.log.entries[0];
            assert_eq!(doc.response.status, 200, "{}", r.har);
            assert_eq!(doc.response.http_version, want, "{}", r.har);
            assert!(doc.timings.wait >= 0.0 && doc.time > 0.0, "{}", r.har);
        } else {
            assert!(r.fcp_ms.is_none() && r.lcp_ms.is_none(), "{r:?}");
            assert!(r.header_bytes_sent_raw.is_some_and(|b| b > 0), "{r:?}");
            // HPACK's and QPACK's sizes are not measured: absent, not 0.
            assert!(r.header_bytes_sent_compressed.is_none(), "{r:?}");
        }
    }
    // The summary and the report name the client.
    assert!(
        stdout.contains("h2-chromium (Chromium)"),
        "summary table: {stdout}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("h2-chromium (HTTP/2, TLS, Chromium)"),
        "variant label"
    );
    assert!(html.contains("Paint timings (Chromium)") && html.contains("LCP mean ms"));
    // The export takes Chromium's rows and HARs: a client column, paint timings.
    let x = run_bounded(
        Command::new(BIN).args(["lab", "export"]).arg(&out),
        Duration::from_secs(60),
    );
    assert!(x.status.success(), "{}", String::from_utf8_lossy(&x.stderr));
    let loads = std::fs::read_to_string(out.join("export/loads.csv")).unwrap();
    let header: Vec<&str> = loads.lines().next().unwrap().split(',').collect();
    for col in ["client", "fcp_ms", "lcp_ms"] {
        assert!(header.contains(&col), "{col} in {header:?}");
    }
    assert!(loads.contains(",chromium,"), "{loads}");
}
