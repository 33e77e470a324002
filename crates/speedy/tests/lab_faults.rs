//! The lab under faults, end to end in network namespaces (needs root): a replay server
//! killed mid-experiment is started again and the experiment completes with every row
//! once; a lab killed with SIGKILL leaves its namespaces, which `speedy lab clean`
//! removes, and the same `--out` resumes to every row once; `speedy lab clean` leaves the
//! namespaces of labs that still run; an object that fails in a load is named, with its
//! reason, in its row and progress line. Every process is started here and killed by pid.

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{namespaces_of, TempDir, BIN};

/// The tests of this file one at a time: `lab clean` in one must not remove the
/// namespaces another has just made stale on purpose.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Loads of [`EXPERIMENT`]: 2 pages × 2 variants × 3 runs.
const LOADS: usize = 12;

const EXPERIMENT: &str = r#"name = "faults"
runs = 3
seed = 5
timeout_s = 60
[pages]
synth = 2
[[network]]
name = "fast"
down = "20mbit"
up = "5mbit"
rtt_ms = 20
[[variant]]
name = "http1"
protocol = "http1"
baseline = true
[[variant]]
name = "h2"
protocol = "h2"
tls = true
"#;

/// A lab run in the background (its stderr in a file), killed by pid on drop.
struct Lab {
    child: Child,
    stderr: PathBuf,
}

impl Lab {
    fn start(exp: &Path, out: &Path) -> Lab {
        std::fs::create_dir_all(out).unwrap();
        let stderr = out.with_extension("stderr");
        let child = Command::new(BIN)
            .arg("lab")
            .arg(exp)
            .arg("--out")
            .arg(out)
            .args(["--lanes", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        Lab { child, stderr }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits for the lab to end (at most `limit`); its exit status.
    fn wait(&mut self, limit: Duration) -> std::process::ExitStatus {
        let end = Instant::now() + limit;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            assert!(
                Instant::now() < end,
                "the lab did not finish in {limit:?}: {}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Rows in `out/results.jsonl` (complete lines only).
fn rows_in(out: &Path) -> usize {
    std::fs::read_to_string(out.join("results.jsonl"))
        .map(|t| t.lines().filter(|l| l.ends_with('}')).count())
        .unwrap_or(0)
}

/// Waits until `out` has at least `n` rows (at most two minutes).
fn wait_rows(lab: &Lab, out: &Path, n: usize) {
    let end = Instant::now() + Duration::from_secs(120);
    while rows_in(out) < n {
        assert!(
            Instant::now() < end,
            "no {n} rows in two minutes: {}",
            lab.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every row's load once: the keys, checked unique, and their number.
fn unique_keys(out: &Path) -> BTreeSet<String> {
    let rows = speedy_lab::results::read_rows(&out.join("results.jsonl")).unwrap();
    let keys: BTreeSet<String> = rows
        .iter()
        .map(|r| format!("{} {} {} {}", r.page, r.network, r.variant, r.run))
        .collect();
    assert_eq!(keys.len(), rows.len(), "a load has two rows: {rows:?}");
    keys
}

/// The pids of the children of `parent` whose command line has `word`.
fn children_running(parent: u32, word: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // pid (comm) state ppid ...: the fields after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let has = cmdline.split(|b| *b == 0).any(|a| a == word.as_bytes());
        if ppid == Some(parent) && has {
            out.push(pid);
        }
    }
    out
}

#[test]
fn a_killed_replay_server_is_started_again_and_every_load_has_one_row() {
    let _one_at_a_time = serial();
    let dir = TempDir::new("lab-faults-server");
    let exp = dir.0.join("faults.toml");
    std::fs::write(&exp, EXPERIMENT).unwrap();
    let out = dir.0.join("out");
    let mut lab = Lab::start(&exp, &out);
    wait_rows(&lab, &out, 2);
    let servers = children_running(lab.pid(), "serve");
    assert_eq!(servers.len(), 1, "one replay server: {servers:?}");
    // SAFETY: kill(2) of the replay server the lab (our child) started.
    unsafe { libc::kill(servers[0] as i32, libc::SIGKILL) };
    let st = lab.wait(Duration::from_secs(180));
    let stderr = lab.stderr();
    assert!(st.success(), "the lab failed: {stderr}");
    assert!(
        stderr.contains("the replay server ended (signal: 9 (SIGKILL))")
            && stderr.contains("starting it again"),
        "{stderr}"
    );
    assert_eq!(unique_keys(&out).len(), LOADS, "{stderr}");
    // A load the kill cut short is listed with its reason and was loaded again.
    let failed = speedy_lab::results::read_failures(&out.join("failures.jsonl")).unwrap();
    assert!(failed.len() <= 1, "{failed:?}");
    for f in &failed {
        assert!(
            f.reason.contains("a replay server ended during the load") && !f.retry,
            "{f:?}"
        );
    }
    eprintln!(
        "replay server killed after 2 rows: {} rows, {} failed load(s) retried",
        LOADS,
        failed.len()
    );
}

#[test]
fn a_lab_killed_with_sigkill_is_cleaned_up_and_resumes() {
    let _one_at_a_time = serial();
    let dir = TempDir::new("lab-faults-sigkill");
    let exp = dir.0.join("faults.toml");
    std::fs::write(&exp, EXPERIMENT).unwrap();
    let out = dir.0.join("out");
    let mut lab = Lab::start(&exp, &out);
    wait_rows(&lab, &out, 3);
    let pid = lab.pid();
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    lab.wait(Duration::from_secs(10));
    let before = unique_keys(&out);
    assert!(before.len() >= 3 && before.len() < LOADS, "{before:?}");
    // SIGKILL gives the lab no chance to remove its namespaces; `lab clean` does.
    let left = namespaces_of(pid);
    assert!(!left.is_empty(), "a killed lab leaves its namespaces");
    let o = Command::new(BIN).args(["lab", "clean"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for n in &left {
        assert!(text.contains(&format!("removed {n}\n")), "{n}: {text}");
    }
    assert!(namespaces_of(pid).is_empty(), "{text}");
    // The same --out resumes: the rows kept, every load once.
    let mut again = Lab::start(&exp, &out);
    let st = again.wait(Duration::from_secs(180));
    assert!(st.success(), "the resumed lab failed: {}", again.stderr());
    assert!(again.stderr().contains("already done, resuming"));
    let after = unique_keys(&out);
    assert_eq!(after.len(), LOADS);
    assert!(before.is_subset(&after));
    eprintln!(
        "lab SIGKILLed after {} rows; clean removed {} namespaces; resumed to {} rows",
        before.len(),
        left.len(),
        after.len()
    );
}

#[test]
fn clean_leaves_the_namespaces_of_running_labs() {
    let _one_at_a_time = serial();
    // One named as a running process's (this test's) and one as a finished one's.
    let mut gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    gone.wait().unwrap();
    let me = std::process::id();
    let (live, dead) = (format!("lk{me}-9990s"), format!("lk{gone_pid}-9990c"));
    for n in [&live, &dead] {
        let st = Command::new("ip")
            .args(["netns", "add", n])
            .status()
            .unwrap();
        assert!(st.success(), "ip netns add {n}");
    }
    let o = Command::new(BIN).args(["lab", "clean"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    for n in [&live, &dead] {
        // The dead one is gone already, unless `clean` failed.
        let _ = Command::new("ip")
            .args(["netns", "del", n])
            .stderr(Stdio::null())
            .status();
    }
    assert!(o.status.success(), "{text}");
    assert!(text.contains(&format!("removed {dead}\n")), "{text}");
    assert!(
        text.contains(&format!("left {live}: its lab (pid {me}) is running")),
        "{text}"
    );
}

#[test]
fn an_object_that_fails_is_named_with_its_reason_in_its_row_and_progress_line() {
    let _one_at_a_time = serial();
    let dir = TempDir::new("lab-faults-object");
    // A recorded 404: an image of the page answers so, in every load.
    let corpus = support::synth_corpus(&dir.0, 1);
    let mut archive = speedy_archive::model::Archive::load(&corpus).unwrap();
    let image = (archive.objects.iter_mut())
        .find(|o| o.kind == speedy_archive::model::ObjectType::Image)
        .expect("the page has an image");
    image.status = 404;
    let url = image.url.clone();
    archive.save(&corpus).unwrap();
    let exp = dir.0.join("one.toml");
    std::fs::write(
        &exp,
        format!(
            "name = \"object-fails\"\nruns = 1\nseed = 5\ntimeout_s = 60\n[pages]\n\
             archive = {:?}\n[[network]]\nname = \"fast\"\ndown = \"20mbit\"\nup = \"5mbit\"\n\
             rtt_ms = 20\n[[variant]]\nname = \"h2\"\nprotocol = \"h2\"\ntls = true\n",
            corpus.display().to_string()
        ),
    )
    .unwrap();
    let out = dir.0.join("out");
    let mut lab = Lab::start(&exp, &out);
    let st = lab.wait(Duration::from_secs(120));
    let stderr = lab.stderr();
    assert!(st.success(), "the lab failed: {stderr}");
    let rows = speedy_lab::results::read_rows(&out.join("results.jsonl")).unwrap();
    assert_eq!(rows.len(), 1, "{stderr}");
    let failed = speedy_browser::report::FailedRequest {
        url: url.clone(),
        status: 404,
        error: None,
    };
    assert_eq!(rows[0].failed_objects, 1, "{:?}", rows[0]);
    assert_eq!(rows[0].failures, Some(vec![failed]), "{:?}", rows[0]);
    let line = format!("1 failed object (first {url}: HTTP status 404)");
    assert!(stderr.contains(&line), "no «{line}» in: {stderr}");
}
