//! `speedy lab` end to end in network namespaces (needs root): a tiny experiment of two
//! synthesized pages, one emulated network, HTTP/1.1 against SPDY, two runs; then the
//! results file, the HARs, resuming, and the report.

mod support;

use speedy_lab::results::{read_rows, Row};
use speedy_net::transport::sockinfo::TcpSample;
use speedy_net::Protocol;
use std::process::Command;
use support::{result_keys as keys, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_speedy");

#[test]
fn runs_a_tiny_experiment_and_writes_the_report() {
    let dir = TempDir::new("lab-e2e");
    let exp = dir.0.join("tiny.toml");
    std::fs::write(
        &exp,
        r#"name = "tiny"
runs = 2
seed = 3
timeout_s = 60
[pages]
synth = 2
[[network]]
name = "lan-ish"
down = "20mbit"
up = "5mbit"
rtt_ms = 20
[[variant]]
name = "http1"
protocol = "http1"
[[variant]]
name = "spdy"
protocol = "spdy"
notsent_lowat = 16384
"#,
    )
    .unwrap();
    let out = dir.0.join("out");
    let o = Command::new(BIN)
        .arg("lab")
        .arg(&exp)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "speedy lab failed: {stderr}");
    assert!(stderr.contains("[8/8]"), "progress lines: {stderr}");
    assert!(
        stderr.contains("lanes at first, then as many as the machine keeps up with"),
        "--lanes auto (the default) says it follows the machine: {stderr}"
    );
    let rows = read_rows(&out.join("results.jsonl")).unwrap();
    assert_eq!(rows.len(), 2 * 2 * 2, "pages × variants × runs");
    for r in &rows {
        assert!(r.on_load_ms > 20.0, "onLoad above one RTT: {r:?}");
        support::assert_no_failed_object(r);
        assert!(r.objects >= 3, "{r:?}");
        // A variant's server option is recorded in its rows, and only in them.
        let lowat = if r.variant == "spdy" {
            Some(16384)
        } else {
            None
        };
        assert_eq!(r.notsent_lowat, lowat, "{r:?}");
        assert!(r.bytes_down > 10_000, "the link carried the page: {r:?}");
        let har = out.join(&r.har);
        assert!(har.exists(), "HAR kept: {r:?}");
        // The loader's stderr beside its HAR, only when it said something.
        let log = har.with_extension("stderr.txt");
        assert!(
            !log.exists() || std::fs::metadata(&log).unwrap().len() > 0,
            "an empty {} was kept",
            log.display()
        );
        let want = if r.variant == "spdy" {
            Protocol::Spdy(spdy::Version::V3_1)
        } else {
            Protocol::Http1
        };
        assert_eq!(r.protocol, want, "{r:?}");
    }
    let spdy_conns: Vec<u32> = rows
        .iter()
        .filter(|r| r.variant == "spdy")
        .map(|r| r.connections)
        .collect();
    let h1_conns: Vec<u32> = rows
        .iter()
        .filter(|r| r.variant == "http1")
        .map(|r| r.connections)
        .collect();
    assert!(
        spdy_conns.iter().sum::<u32>() < h1_conns.iter().sum::<u32>(),
        "SPDY opens fewer connections: {spdy_conns:?} vs {h1_conns:?}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for needle in ["lan-ish", "http1", "spdy", "20 Mbit/s down"] {
        assert!(html.contains(needle), "report mentions {needle}");
    }
    assert!(html.matches("<svg").count() >= 5, "charts drawn");
    // The summary with its reading guide, and each waterfall links its HAR.
    assert!(html.contains("How to read:") && html.contains("Mean change"));
    assert!(html.contains(r#"<a class="har" href="hars/"#), "HAR links");
    // The run ends with a summary table and the report's file:// URL.
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("network  variant") && stdout.contains("mean change"),
        "summary table: {stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("lan-ish") && l.contains("http1")),
        "{stdout}"
    );
    let url = format!(
        "report: file://{}",
        out.join("report.html").canonicalize().unwrap().display()
    );
    assert!(stdout.contains(&url), "{url} in {stdout}");
    // Running again resumes: nothing left to do, rows unchanged.
    // The same experiment and --out again, with `extra` arguments.
    let again = |extra: &[&str]| {
        Command::new(BIN)
            .arg("lab")
            .arg(&exp)
            .arg("--out")
            .arg(&out)
            .arg("--no-report")
            .args(extra)
            .output()
            .unwrap()
    };
    let resume = || again(&[]);
    let o = resume();
    assert!(o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("0 loads to run"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(out.join("results.jsonl"))
            .unwrap()
            .lines()
            .count(),
        8
    );
    // The same --out with another seed (other pages, other loss) is refused, rows kept.
    let o = again(&["--seed", "424242"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("seed") && err.contains("424242"),
        "{err}"
    );
    assert_eq!(keys(&out.join("results.jsonl")).len(), 8);
    // --network: a name the experiment lacks is refused with the names it has; its own
    // network alone resumes with nothing to do.
    let o = again(&["--network", "lte-trace"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("--network lte-trace") && err.contains("lan-ish"),
        "{err}"
    );
    let o = again(&["--network", "lan-ish"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && err.contains("0 loads to run"),
        "{err}"
    );
    // A run stopped in the middle of writing its last row: the report still reads the
    // rest and says so, and a resumed run loads that one again on a line of its own.
    let results = out.join("results.jsonl");
    let text = std::fs::read_to_string(&results).unwrap();
    let cut = text.trim_end().rfind('\n').unwrap() + 1 + 40;
    std::fs::write(&results, &text[..cut]).unwrap();
    let o = Command::new(BIN)
        .args(["lab", "report"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("unfinished"), "{err}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("report: file://"),
        "lab report prints the URL too"
    );
    let o = resume();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && err.contains("1 loads to run"),
        "{err}"
    );
    assert_eq!(keys(&results).len(), 8, "every row whole again");
    // The same experiment as a Slurm array of two tasks (ids 1 and 2, the shard read from
    // the environment), merged: the same loads as the unsharded run; one shard alone is
    // refused by name.
    let sharded = dir.0.join("sharded");
    for id in ["1", "2"] {
        let o = Command::new(BIN)
            .arg("lab")
            .arg(&exp)
            .arg("--out")
            .arg(&sharded)
            .env("SLURM_ARRAY_TASK_ID", id)
            .env("SLURM_ARRAY_TASK_MIN", "1")
            .env("SLURM_ARRAY_TASK_COUNT", "2")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "shard {id}: {err}");
        assert!(err.contains("from SLURM_ARRAY_TASK_ID"), "{err}");
    }
    let merged = dir.0.join("merged");
    let o = Command::new(BIN)
        .args(["lab", "merge"])
        .arg(&sharded)
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        keys(&merged.join("results.jsonl")),
        keys(&out.join("results.jsonl"))
    );
    // The merged shards against the unsharded run: every network × variant compared over
    // both pages, the builds equal, as text and as JSON.
    let o = Command::new(BIN)
        .args(["lab", "compare"])
        .arg(&out)
        .arg(&merged)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("change B vs A (95% CI)"), "{text}");
    assert!(!text.contains("build:"), "one build made both: {text}");
    assert!(
        text.lines()
            .any(|l| l.contains("spdy") && l.contains("4/4")),
        "{text}"
    );
    let o = Command::new(BIN)
        .args(["lab", "compare", "--json"])
        .arg(&out)
        .arg(&merged)
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["cells"].as_array().unwrap().len(), 2, "{j}");
    assert_eq!(j["cells"][0]["pages"], 2, "{j}");
    // The run as flat tables, both formats, read back by the docs' DuckDB example, whose
    // means must be the rows' own.
    let tables = dir.0.join("tables");
    for format in ["csv", "parquet"] {
        let o = Command::new(BIN)
            .args(["lab", "export"])
            .arg(&out)
            .args(["--format", format, "--out"])
            .arg(&tables)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(said.contains("8 loads →"), "{said}");
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join("docs/examples/.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test, or python3 -m venv docs/examples/.venv && \
         docs/examples/.venv/bin/pip install -r docs/examples/requirements.txt",
        python.display()
    );
    let o = Command::new(&python)
        .arg(root.join("docs/examples/export_duckdb.py"))
        .arg(&tables)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(said.contains("CSV and Parquet agree"), "{said}");
    let rows = read_rows(&out.join("results.jsonl")).unwrap();
    for v in ["http1", "spdy"] {
        let ms: Vec<f64> = rows
            .iter()
            .filter(|r| r.variant == v)
            .map(|r| r.on_load_ms)
            .collect();
        let mean = ms.iter().sum::<f64>() / ms.len() as f64;
        let line = said
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(v))
            .unwrap_or_else(|| panic!("{v} in {said}"));
        assert!(line.contains(&format!("{mean:.1}")), "{mean:.1} in {line}");
    }
    std::fs::remove_file(sharded.join("results-shard1of2.jsonl")).unwrap();
    let o = Command::new(BIN)
        .args(["lab", "merge"])
        .arg(&sharded)
        .arg("--out")
        .arg(dir.0.join("merged2"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("results-shard1of2.jsonl"),
        "{err}"
    );
}

/// The cellular study's set-up, tiny: browsing sessions of 3 pages through `speedy
/// proxy` across a real LTE trace with a 3G radio whose tails are scaled down (the pages
/// 1.5 s apart, past the DCH tail), the proxy's TCP series kept per session and drawn in
/// the report.
#[test]
fn runs_sessions_through_the_proxy_across_a_traced_radio_and_keeps_its_tcp_series() {
    let dir = TempDir::new("lab-cellular");
    let exp = dir.0.join("cell.toml");
    std::fs::write(
        &exp,
        r#"name = "cell"
runs = 2
seed = 4
timeout_s = 60
session_think_ms = 1500
[pages]
synth = 3
calibration = "cellular-2013"
[[network]]
name = "lte-trace"
trace = "verizon-lte"
rtt_ms = 60
radio = "3g:dch_tail=300ms,fach_tail=60s"
[[variant]]
name = "http-proxy"
protocol = "http1"
proxy = "http"
baseline = true
[[variant]]
name = "spdy-proxy"
protocol = "spdy"
proxy = "spdy"
tls = true
rto_min_ms = 3000
"#,
    )
    .unwrap();
    let out = dir.0.join("out");
    let o = Command::new(BIN)
        .arg("lab")
        .arg(&exp)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "speedy lab failed: {stderr}");
    let rows = read_rows(&out.join("results.jsonl")).unwrap();
    // 3 pages × 2 variants × 2 runs: a row per visit. Two runs: the lane sets rto_min for
    // one variant and clears it for the other.
    assert_eq!(rows.len(), 12);
    let mut order: Vec<Option<String>> = vec![None; 3];
    let mut sessions: std::collections::BTreeMap<String, Vec<&Row>> = Default::default();
    for r in &rows {
        support::assert_no_failed_object(r);
        assert_eq!(r.session_think_ms, Some(1500), "{r:?}");
        assert!(r.network_desc.starts_with("trace verizon-lte"), "{r:?}");
        assert!(r.bytes_down > 10_000, "{r:?}");
        // One fixed order: a visit's place always holds the same page.
        let visit = r.session_visit.expect("a session's visit") as usize;
        let page = r.page.clone();
        let slot = order[visit].get_or_insert(page.clone());
        assert_eq!(*slot, page, "visit {visit}");
        sessions.entry(r.har.clone()).or_default().push(r);
    }
    assert_eq!(sessions.len(), 4, "one HAR per session");
    for (har, visits) in &sessions {
        assert_eq!(visits.len(), 3, "{har}");
        let h: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join(har)).unwrap()).unwrap();
        assert_eq!(h["log"]["pages"].as_array().unwrap().len(), 3, "{har}");
        // Each visit's link counters cover that visit: at least the bodies the loader
        // received in it, and not its neighbours' too (each page is hundreds of KB).
        for v in visits {
            let i = v.session_visit.expect("a session's visit") as usize;
            let read = h["log"]["pages"][i]["_totals"]["body_bytes"]
                .as_u64()
                .unwrap();
            let link = v.bytes_down;
            assert!(
                read <= link && link <= read * 13 / 10 + 100_000,
                "{har} visit {i}: the page's bodies are {read} B, the link carried {link} B"
            );
        }
        let rel = visits[0]
            .tcp_series
            .as_deref()
            .expect("a series per proxied session");
        assert!(
            visits.iter().all(|v| v.tcp_series.as_deref() == Some(rel)),
            "{har}"
        );
        let samples = std::fs::read_to_string(out.join(rel))
            .unwrap()
            .lines()
            .count();
        assert!(samples > 10, "{rel}: {samples} samples");
    }
    let spdy = rows.iter().find(|r| r.variant == "spdy-proxy").unwrap();
    assert_eq!(spdy.proxy.as_deref(), Some("spdy"), "{spdy:?}");
    // TLS to the SPDY proxy, its certificate from the lab CA: the handshake is timed.
    assert!(spdy.tls, "{spdy:?}");
    let h: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join(&spdy.har)).unwrap()).unwrap();
    let conn = &h["log"]["pages"][0]["_connections"][0];
    assert!(conn["ssl_ms"].as_f64().unwrap() > 0.0, "{conn}");
    // rto_min reached the proxy's sockets (per route in the server namespace) for that
    // variant only: its smallest RTO is 3 s, the other variant's is below.
    for r in &rows {
        let rel = r
            .tcp_series
            .as_deref()
            .expect("a series per proxied session");
        let min_rto = std::fs::read_to_string(out.join(rel))
            .unwrap()
            .lines()
            .map(|l| {
                speedy_records::version::read::<TcpSample>(l)
                    .unwrap()
                    .rto_us
            })
            .min()
            .unwrap();
        if r.variant == "spdy-proxy" {
            assert!(min_rto >= 3_000_000, "{r:?}: {min_rto} us");
        } else {
            assert!(
                min_rto < 3_000_000,
                "rto_min cleared for {}: {min_rto} us",
                r.variant
            );
        }
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("id=\"proxy-tcp\""), "the proxy's TCP section");
}

#[test]
fn refuses_a_bad_experiment_before_running_anything() {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir =
        TempDir(std::env::temp_dir().join(format!("speedy-lab-bad-{}-{n}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let exp = dir.0.join("bad.toml");
    std::fs::write(&exp, "[pages]\nsynth = 1\n[[network]]\nprofile = \"whitepaper-dsl\"\n[[variant]]\nname = \"x\"\nprotocol = \"quic\"\n").unwrap();
    let o = Command::new(BIN)
        .arg("lab")
        .arg(&exp)
        .arg("--out")
        .arg(dir.0.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("bad.toml:5:") && err.contains("quic"), "{err}");
    assert!(!dir.0.join("out").exists(), "nothing ran");
}

/// The whitepaper's conditions and a two-step factor chain, for real: an era pair
/// (web-2010 pages, CUBIC (per route where the host allows namespaces only reno and bbr as
/// their default) or the next algorithm the kernel has, initcwnd 3, zlib headers) and a
/// today pair (web-2025 pages, BBR, initcwnd 10, CRIME-safe headers) whose SPDY is against
/// its own HTTP/1.1, on the whitepaper's DSL line. Every row must say what it ran under,
/// the server's own retransmissions must be counted, and the report must carry the
/// conditions, the whitepaper's tables and the chain.
#[test]
fn runs_the_whitepaper_conditions_and_a_factor_chain() {
    let dir = TempDir::new("lab-era");
    let exp = dir.0.join("era.toml");
    let era =
        "cc = [\"cubic\", \"reno\"]\ninitcwnd = 3\ninitrwnd = 10\nheader_compression = \"zlib\"\n";
    let today = "calibration = \"web-2025\"\ncc = \"bbr\"\ninitcwnd = 10\nheader_compression = \"crime-safe\"\nmax_connections = 256\n";
    std::fs::write(
        &exp,
        format!(
            "name = \"era\"\nruns = 1\nseed = 5\ntimeout_s = 90\n[pages]\nsynth = 1\ncalibration = \"web-2010\"\n\
[[network]]\nprofile = \"whitepaper-dsl\"\n\
[[variant]]\nname = \"http1\"\nprotocol = \"http1\"\n{era}\
[[variant]]\nname = \"spdy\"\nprotocol = \"spdy\"\n{era}\
[[variant]]\nname = \"http1-today\"\nprotocol = \"http1\"\n{today}\
[[variant]]\nname = \"spdy-today\"\nprotocol = \"spdy\"\nagainst = \"http1-today\"\n{today}"
        ),
    )
    .unwrap();
    let out = dir.0.join("out");
    let o = Command::new(BIN)
        .arg("lab")
        .arg(&exp)
        .args(["--lanes", "2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "speedy lab failed: {stderr}");
    let sysctl = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/net/ipv4/{name}")).unwrap_or_default()
    };
    let has = |list: &str| sysctl(list).split_whitespace().any(|a| a == "cubic");
    let era_cc = if has("tcp_allowed_congestion_control") {
        "cubic"
    } else if has("tcp_available_congestion_control") {
        assert!(
            stderr.contains("congestion control cubic set per route"),
            "the route is said before any load: {stderr}"
        );
        "cubic"
    } else {
        assert!(
            stderr.contains("congestion control cubic → reno"),
            "the fall-back is said before any load: {stderr}"
        );
        "reno"
    };
    let rows = read_rows(&out.join("results.jsonl")).unwrap();
    assert_eq!(rows.len(), 4);
    let mut server_retrans = 0;
    for r in &rows {
        let today = r.variant.ends_with("today");
        let want = if today {
            ("web-2025", "bbr", 10, "crime-safe", 256)
        } else {
            ("web-2010", era_cc, 3, "zlib", 32)
        };
        assert_eq!(r.calibration, want.0, "{r:?}");
        assert_eq!(r.tcp_cc, want.1, "{r:?}");
        assert_eq!(r.initcwnd, want.2, "{r:?}");
        assert_eq!(r.header_compression, want.3, "{r:?}");
        assert_eq!(r.max_connections, want.4, "{r:?}");
        assert_eq!(r.connections_per_host, 6, "{r:?}");
        if !today {
            assert_eq!(r.initrwnd, Some(10), "{r:?}");
        }
        support::assert_no_failed_object(r);
        assert!(
            r.server_segments_out > r.packets_down / 2,
            "the server namespace's counters saw the download: {r:?}"
        );
        server_retrans += r.server_retransmissions;
        assert!(
            r.link_late_max_us > 0 && r.loader_lag_max_us.is_some_and(|l| l > 0),
            "the lab's own lateness is measured per load: {r:?}"
        );
        let conns = &r.server_connections;
        assert!(!conns.is_empty(), "ss samples of the server: {r:?}");
        assert!(
            conns.iter().any(|c| c.cwnd > 0 && c.rtt_ms >= 90.0),
            "a sampled server connection with its cwnd and the line's 100 ms RTT: {r:?}"
        );
        assert!(
            conns.iter().all(|c| c.cc == want.1),
            "every sampled server connection ran the row's {}: {r:?}",
            want.1
        );
        let objects = r.objects;
        assert!(
            if today {
                objects > 55
            } else {
                (30..60).contains(&objects)
            },
            "pages of the calibration: {r:?}"
        );
    }
    assert!(
        server_retrans > 0,
        "1% loss over ~3 MB of downloads: the server retransmits"
    );
    let spdy_today = rows.iter().find(|r| r.variant == "spdy-today").unwrap();
    assert_eq!(
        spdy_today.against.as_deref(),
        Some("http1-today"),
        "{spdy_today:?}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for needle in [
        "id=\"conditions\"",
        "id=\"whitepaper\"",
        "3112",
        "id=\"factors\"",
        "Changed from the step before",
        "Server retrans.",
        "Server final cwnd",
    ] {
        assert!(html.contains(needle), "report has {needle}");
    }
}

/// The processes whose parent is `pid`, with their start times (field 22 of
/// `/proc/PID/stat`), so that a reused pid is not taken for a survivor.
fn children_of(pid: u32) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rsplit_once(')').map(|x| x.1) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.get(1).and_then(|x| x.parse::<u32>().ok()) == Some(pid) && f[0] != "Z" {
            out.push((p, f[19].to_string()));
        }
    }
    out
}

fn alive(p: &(u32, String)) -> bool {
    std::fs::read_to_string(format!("/proc/{}/stat", p.0)).is_ok_and(|s| {
        let f: Vec<String> = s
            .rsplit_once(')')
            .map(|x| x.1)
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_string)
            .collect();
        f.len() > 19 && f[19] == p.1 && f[0] != "Z"
    })
}

#[test]
fn a_signal_mid_run_tears_everything_down_and_the_run_resumes() {
    let dir = TempDir::new("lab-signal");
    let exp = dir.0.join("tiny.toml");
    std::fs::write(
        &exp,
        r#"name = "tiny-signal"
runs = 2
seed = 5
timeout_s = 60
[pages]
synth = 2
[[network]]
name = "slow"
down = "2mbit"
up = "1mbit"
rtt_ms = 80
[[variant]]
name = "http1"
protocol = "http1"
[[variant]]
name = "spdy"
protocol = "spdy"
"#,
    )
    .unwrap();
    let out = dir.0.join("out");
    let log = dir.0.join("stderr.txt");
    // One lane: after the first row the next load is under way. With a lane per load
    // all eight run at once and, being alike, may all end between the first row and the
    // signal (seen once: every load took 23.6 s and the run exited 0 first).
    let mut child = Command::new(BIN)
        .arg("lab")
        .arg(&exp)
        .arg("--out")
        .arg(&out)
        .arg("--no-report")
        .args(["--lanes", "1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id();
    let ours = || support::namespaces_of(pid);
    // Wait (bounded) until a load is under way: namespaces up, the replay server and a
    // loader running under the lab, and at least one row written.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let mut kids = Vec::new();
    while std::time::Instant::now() < deadline {
        let rows = std::fs::read_to_string(out.join("results.jsonl"))
            .map(|s| s.lines().count())
            .unwrap_or(0);
        kids = children_of(pid);
        if rows >= 1 && kids.len() >= 2 && ours().len() >= 2 {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the lab ended early: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(kids.len() >= 2, "server and loader seen: {kids:?}");
    assert!(ours().len() >= 2, "namespaces seen");
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(std::time::Instant::now() < deadline, "the lab did not stop");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let said = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(128 + 15), "{said}");
    let removed: usize = said
        .split("SIGTERM: stopped; removed ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the teardown is said: {said}"));
    assert!(removed >= 2, "{said}");
    assert!(ours().is_empty(), "namespaces left: {:?}", ours());
    // The kernel ends the server and the loader with the lab (bounded wait).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while kids.iter().any(alive) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let left: Vec<_> = kids.iter().filter(|k| alive(k)).collect();
    assert!(left.is_empty(), "children outlived the lab: {left:?}");
    // Started again with the same --out, the run resumes and finishes every load.
    let o = Command::new(BIN)
        .arg("lab")
        .arg(&exp)
        .arg("--out")
        .arg(&out)
        .arg("--no-report")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = read_rows(&out.join("results.jsonl")).unwrap();
    assert_eq!(rows.len(), 2 * 2 * 2, "pages × variants × runs");
}
