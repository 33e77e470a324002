//! `speedy lab` end to end in network namespaces (needs root): a tiny experiment of two
//! synthesized pages, one emulated network, HTTP/1.1 against SPDY, two runs; then the
//! results file, the HARs, resuming, and the report.

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_speedy");

struct TempDir(PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn runs_a_tiny_experiment_and_writes_the_report() {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir =
        TempDir(std::env::temp_dir().join(format!("speedy-lab-e2e-{}-{n}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
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
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2 * 2 * 2, "pages × variants × runs");
    for r in &rows {
        assert!(
            r["on_load_ms"].as_f64().unwrap() > 20.0,
            "onLoad above one RTT: {r}"
        );
        assert_eq!(r["failed_objects"], 0, "{r}");
        assert!(r["objects"].as_u64().unwrap() >= 3);
        assert!(
            r["bytes_down"].as_u64().unwrap() > 10_000,
            "the link carried the page: {r}"
        );
        assert!(
            out.join(r["har"].as_str().unwrap()).exists(),
            "HAR kept: {r}"
        );
        let want = if r["variant"] == "spdy" {
            "spdy/3.1"
        } else {
            "http/1.1"
        };
        assert_eq!(r["protocol"], want);
    }
    let spdy_conns: Vec<u64> = rows
        .iter()
        .filter(|r| r["variant"] == "spdy")
        .map(|r| r["connections"].as_u64().unwrap())
        .collect();
    let h1_conns: Vec<u64> = rows
        .iter()
        .filter(|r| r["variant"] == "http1")
        .map(|r| r["connections"].as_u64().unwrap())
        .collect();
    assert!(
        spdy_conns.iter().sum::<u64>() < h1_conns.iter().sum::<u64>(),
        "SPDY opens fewer connections: {spdy_conns:?} vs {h1_conns:?}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for needle in ["lan-ish", "http1", "spdy", "20 Mbit/s down"] {
        assert!(html.contains(needle), "report mentions {needle}");
    }
    assert!(html.matches("<svg").count() >= 5, "charts drawn");
    // Running again resumes: nothing left to do, rows unchanged.
    let o = Command::new(BIN)
        .arg("lab")
        .arg(&exp)
        .arg("--out")
        .arg(&out)
        .arg("--no-report")
        .output()
        .unwrap();
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
