//! `speedy lab validate` in network namespaces (needs root and Chromium): one synthesized
//! page, one fast emulated network, one run; headless Chromium and the loader each load
//! the page over HTTP/1.1 and HTTP/2, and validate.json and the table carry both onLoads
//! and their ratio. Fails (never skips) without Chromium: `apt-get install chromium`.

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
    assert!(
        stderr.contains("3 protocols") && stderr.contains("[6/6]"),
        "progress: {stderr}"
    );
    assert!(
        stdout.contains("Chromium onLoad ms") && stdout.contains("ratio"),
        "table: {stdout}"
    );
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("validate.json")).unwrap()).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let protocols: Vec<&str> = rows
        .iter()
        .map(|r| r["protocol"].as_str().unwrap())
        .collect();
    assert_eq!(protocols, ["http/1.1", "h2", "h3"], "{v}");
    // Both clients and both protocols of a page's run met one loss sequence: the link
    // was restarted with the same seed for each of the four loads.
    let seeds: Vec<u64> = rows
        .iter()
        .map(|r| r["runs"][0]["link_seed"].as_u64().unwrap())
        .collect();
    assert!(
        seeds[0] != 0 && seeds.iter().all(|s| *s == seeds[0]),
        "{seeds:?}"
    );
    for r in rows {
        let (b, l, ratio) = (
            r["chromium_on_load_ms"].as_f64(),
            r["loader_on_load_ms"].as_f64(),
            r["ratio"].as_f64(),
        );
        let (Some(b), Some(l), Some(ratio)) = (b, l, ratio) else {
            panic!("a load failed: {r}");
        };
        // Above one RTT of the link, and the same page within an order of magnitude.
        assert!(b > 20.0 && l > 20.0, "{r}");
        assert!(
            (ratio - l / b).abs() < 1e-9 && (0.1..10.0).contains(&ratio),
            "{r}"
        );
        let run = &r["runs"][0];
        assert!(run["chromium_objects"].as_u64().unwrap() >= 3, "{r}");
        assert!(out.join(run["har"].as_str().unwrap()).exists(), "{r}");
        assert!(stdout.contains(&format!("{:.2}", ratio)), "{stdout}");
    }
}
