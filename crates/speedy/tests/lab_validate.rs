//! `speedy lab validate` in network namespaces (needs root and Chromium): one synthesized
//! page, one fast emulated network, one run; the experiment's variant is replaced by the
//! pairs, so headless Chromium and the loader each load the page over HTTP/1.1, h2 and
//! h3 through the lab's runner, and the agreement table, validate.json and the report
//! carry each protocol's loader/Chromium onLoad ratio, computed from the rows. Fails
//! (never skips) without Chromium: `apt-get install chromium`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_speedy");

struct TempDir(PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn validate_compares_chromium_and_the_loader_on_one_page() {
    let chromium = std::env::var("SPEEDY_CHROMIUM").unwrap_or_else(|_| "chromium".into());
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = TempDir(
        std::env::temp_dir().join(format!("speedy-lab-validate-{}-{n}", std::process::id())),
    );
    std::fs::create_dir_all(&dir.0).unwrap();
    let exp = dir.0.join("fast.toml");
    std::fs::write(
        &exp,
        r#"name = "fast"
runs = 1
seed = 3
timeout_s = 30
[pages]
synth = 1
[[network]]
name = "fast"
down = "20mbit"
up = "5mbit"
rtt_ms = 20
[[variant]]
name = "http1"
protocol = "http1"
"#,
    )
    .unwrap();
    let out = dir.0.join("out");
    // speedy kills its own children (and the kernel does if it dies: PR_SET_PDEATHSIG).
    let mut child = Command::new(BIN)
        .args(["lab", "validate"])
        .arg(&exp)
        .arg("--out")
        .arg(&out)
        .args(["--chromium", &chromium])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("speedy lab validate did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(
        o.status.success(),
        "speedy lab validate failed (needs root and Chromium: apt-get install chromium):\n{stderr}"
    );
    assert!(stderr.contains("[6/6]"), "progress: {stderr}");
    assert!(
        stdout.contains("onLoad ratio (geomean)") && stdout.contains("within goal"),
        "table: {stdout}"
    );
    let v: speedy_lab::validate::agreement::Agreement =
        serde_json::from_slice(&std::fs::read(out.join("validate.json")).unwrap()).unwrap();
    assert_eq!(
        v.version,
        speedy_lab::validate::agreement::AGREEMENT_VERSION,
        "{v:?}"
    );
    let protocols: Vec<String> = v.cells.iter().map(|c| c.protocol.to_string()).collect();
    assert_eq!(protocols, ["http/1.1", "h2", "h3"], "{v:?}");
    let rows = speedy_lab::results::read_rows(&out.join("results.jsonl")).unwrap();
    assert_eq!(rows.len(), 6);
    // Both clients of the page's run met one loss sequence: one seed per (page, run).
    for c in &v.cells {
        let of = |name: &str| rows.iter().find(|r| r.variant == name).unwrap();
        let (l, b) = (of(&c.loader), of(&c.chromium));
        assert_eq!(b.client, speedy_lab::experiment::Client::Chromium);
        // Above one RTT of the link, and the same page within an order of magnitude.
        assert!(b.on_load_ms > 20.0 && l.on_load_ms > 20.0, "{c:?}");
        let ratio = c.ratio;
        assert!(
            (ratio - l.on_load_ms / b.on_load_ms).abs() < 1e-9 && (0.1..10.0).contains(&ratio),
            "{c:?}"
        );
        // What each client put on the wire is its row's: both clients' TCP connections
        // counted the same way, in the client namespace.
        let w = c.wire.expect("the cell's wire");
        let opens = |r: &speedy_lab::results::Row| r.client_tcp_opens.map(|n| n as f64);
        assert_eq!(w.tcp_opens, (opens(l), opens(b)), "{c:?}");
        assert_eq!(w.bytes_up, (l.bytes_up as f64, b.bytes_up as f64));
        if c.protocol != speedy_net::Protocol::H3 {
            let (lo, bo) = (w.tcp_opens.0.unwrap(), w.tcp_opens.1.unwrap());
            assert!(
                lo >= 1.0 && bo >= 1.0,
                "each client opened a connection: {c:?}"
            );
        }
        assert!(b.fcp_ms.is_some(), "Chromium's row has its paint timings");
        assert!(out.join(&b.har).exists() && out.join(&l.har).exists());
        assert!(stdout.contains(&format!("{ratio:.2}")), "{stdout}");
    }
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        report.contains("The loader against Chromium"),
        "the report's agreement section"
    );
}
