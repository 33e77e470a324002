//! End-to-end tests of `speedy link` (issue 4): the real binary, real namespaces.

mod support;
use serde_json::Value;
use speedy_net::transport::sockinfo::TcpSample;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{can_run_link as can_run, namespaces_of};

const BIN: &str = env!("CARGO_BIN_EXE_speedy");

/// Deletes a namespace this test created, even if the test fails.
struct NsGuard(String);
impl Drop for NsGuard {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.0])
            .stderr(Stdio::null())
            .status();
    }
}

#[test]
fn profiles_lists_every_network_with_its_source() {
    let out = Command::new(BIN)
        .args(["link", "--profiles"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for name in [
        "whitepaper-dsl",
        "whitepaper-cable",
        "whitepaper-loss-2.5",
        "whitepaper-rtt-200",
        "spdy-chart",
        "sctp-loss-1",
        "sctp-loss-2",
        "home-broadband",
        "wpt-cable",
        "wpt-dsl",
        "wpt-fios",
        "wpt-dial",
        "wpt-lte",
        "wpt-3g",
        "wpt-3gfast",
        "wpt-3gslow",
        "wpt-3g-em",
        "wpt-edge",
        "wpt-2g",
        "lighthouse-slow4g",
        "3g",
        "lte",
    ] {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "{name} missing:\n{text}"
        );
    }
    assert!(text.contains("SPDY whitepaper, Table 1"));
    assert!(text.contains("WebPageTest"));
    assert!(text.contains("Lighthouse"));
}

#[test]
fn bad_values_get_a_clear_message() {
    for (args, needle) in [
        (vec!["--down", "2mbps"], "ambiguous"),
        (vec!["--up", "fast"], "not a number"),
        (vec!["--down", "2furlong"], "unknown unit"),
        (vec!["--loss", "5"], "percentage"),
        (vec!["--queue", "droptail"], "needs a size"),
        (vec!["--radio", "5g"], "3g or lte"),
        (vec!["--profile", "nope"], "--profiles"),
    ] {
        let out = Command::new(BIN)
            .arg("link")
            .args(&args)
            .args(["--", "true"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn runs_the_command_in_the_client_namespace_with_server_addresses() {
    if !can_run() {
        return;
    }
    let out = Command::new(BIN)
        .args(["link", "--rtt", "20", "--down", "10mbit", "--server-addrs", "3", "--"])
        .args([
            "sh",
            "-c",
            "echo \"$SPEEDY_SERVER_ADDR|$SPEEDY_SERVER_ADDRS|$(readlink /proc/self/ns/net)\"; exit 7",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let parts: Vec<&str> = text.trim().split('|').collect();
    assert_eq!(parts[0], "100.65.0.1");
    assert_eq!(parts[1], "100.65.0.1 100.65.0.2 100.65.0.3");
    let own = std::fs::read_link("/proc/self/ns/net").unwrap();
    assert_ne!(
        parts[2],
        own.to_string_lossy(),
        "command ran in its own namespace"
    );
}

#[test]
fn tears_down_on_sigterm_and_sigint() {
    if !can_run() {
        return;
    }
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let mut child = Command::new(BIN)
            .args(["link", "--", "sleep", "30"])
            .spawn()
            .unwrap();
        let pid = child.id();
        let start = Instant::now();
        while namespaces_of(pid).len() < 2 && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(namespaces_of(pid).len(), 2, "namespaces created");
        // SAFETY: signalling the child this test spawned, by pid.
        unsafe { libc::kill(pid as i32, sig) };
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("speedy link did not exit on signal {sig}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(128 + sig));
        assert!(
            namespaces_of(pid).is_empty(),
            "namespaces removed after signal {sig}"
        );
    }
}

#[test]
fn removes_debris_of_a_crashed_run() {
    if !can_run() {
        return;
    }
    // A pid that is certainly gone: a child we started and reaped.
    let mut c = Command::new("true").spawn().unwrap();
    let dead = c.id();
    c.wait().unwrap();
    let name = format!("lk{dead}-0c");
    let _guard = NsGuard(name.clone());
    assert!(Command::new("ip")
        .args(["netns", "add", &name])
        .status()
        .unwrap()
        .success());
    let out = Command::new(BIN)
        .args(["link", "--", "true"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !std::path::Path::new(&format!("/run/netns/{name}")).exists(),
        "stale namespace removed"
    );
}

/// A page, `think_ms` of idle, the same page again over one SPDY session, behind a 3G
/// radio whose DCH tail is scaled to 200 ms (FACH→DCH promotion 1.5 s as measured), the
/// server sampling its TCP every 5 ms; optionally with keep-alive PINGs during the idle.
/// Returns the loader's two summaries and the server's samples.
fn radio_session(keepalive_ms: Option<u32>) -> Option<(Vec<Value>, Vec<TcpSample>)> {
    if !can_run() {
        return None;
    }
    let dir = std::env::temp_dir().join(format!(
        "speedy-radio-{}-{}",
        std::process::id(),
        keepalive_ms.unwrap_or(0)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let st = Command::new(BIN)
        .args(["corpus", "synth", "--pages", "1", "--seed", "7", "--out"])
        .arg(&dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let archive = speedy_archive::Archive::load(&dir).unwrap();
    let root = archive.objects[archive.pages[0].root].url.clone();
    let series = dir.join("series.jsonl");
    let server = format!(
        "exec {BIN} serve --listen 0.0.0.0:8080 --archive {} --plain --no-think-time \
         --tcp-series {} --tcp-interval-ms 5",
        dir.display(),
        series.display()
    );
    let keepalive = keepalive_ms.map_or(String::new(), |k| format!(" --keepalive-ms {k}"));
    let client = format!(
        "exec {BIN} load {root} --then {root} --think-ms 800{keepalive} --archive {} \
         --protocol spdy --plain --spdy-domains single \
         --resolve \"*=$SPEEDY_SERVER_ADDR:8080\"",
        dir.display()
    );
    let out = Command::new(BIN)
        .args([
            "link",
            "--rtt",
            "40",
            "--radio",
            "3g:dch_tail=200ms,fach_tail=60s",
        ])
        .args(["--server-wait", "1000", "--server-cmd", &server])
        .args(["--", "sh", "-c", &client])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The server's start-up lines share stdout: keep the loader's summaries.
    let visits: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("onLoad_ms").is_some())
        .collect();
    assert_eq!(visits.len(), 2, "{text}");
    let samples: Vec<TcpSample> = std::fs::read_to_string(&series)
        .unwrap()
        .lines()
        .map(|l| speedy_records::version::read::<TcpSample>(l).unwrap())
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    // The first SYN waits for the radio's promotion, longer than the loader's backup
    // connect job waits (250 ms), so a second connection may come up beside the
    // session's and close unused: follow the session's, the one most bytes went over.
    let session = samples.iter().max_by_key(|s| s.bytes_acked).map(|s| s.conn);
    let samples: Vec<TcpSample> = (samples.into_iter())
        .filter(|s| Some(s.conn) == session)
        .collect();
    assert!(samples.len() > 10);
    Some((visits, samples))
}

fn retrans(s: &TcpSample) -> u64 {
    u64::from(s.total_retrans)
}

/// The cellular study's mechanism, tiny: a SPDY session idle longer than the radio's DCH
/// tail finds the radio in FACH; the server's next response waits for the FACH→DCH
/// promotion, longer than its retransmission timeout, so it retransmits although
/// nothing was lost (the link drops nothing). The server's sender-side series shows it:
/// retransmissions rise after the idle period (before it, only the first SYN's IDLE→DCH
/// promotion may have cost one), and the window collapses.
#[test]
fn a_radio_promotion_after_idle_shows_a_spurious_retransmission_in_the_sender_series() {
    let Some((_, samples)) = radio_session(None) else {
        return;
    };
    let t = |s: &TcpSample| s.t_ms;
    let acked = |s: &TcpSample| s.bytes_acked;
    // The think time: the first stretch of ≥ 500 ms in which nothing more was acked.
    let mut changed_at = t(&samples[0]);
    let mut gap = None;
    for w in samples.windows(2) {
        if acked(&w[1]) != acked(&w[0]) {
            changed_at = t(&w[1]);
        } else if t(&w[1]) - changed_at >= 500.0 {
            gap = Some(t(&w[1]));
            break;
        }
    }
    let gap = gap.expect("an idle period between the visits");
    let before = samples
        .iter()
        .filter(|s| t(s) <= gap)
        .map(retrans)
        .max()
        .unwrap();
    let after: Vec<&TcpSample> = samples.iter().filter(|s| t(s) > gap).collect();
    let last = after.last().expect("samples after the idle period");
    eprintln!(
        "retransmissions: {before} before the idle period (the first SYN's promotion), {} after",
        retrans(last)
    );
    assert!(
        retrans(last) > before,
        "the response after the idle period was retransmitted: {last:?}"
    );
    assert!(
        after.iter().any(|s| s.cwnd <= 2),
        "the retransmission timeout collapsed the window"
    );
}

/// The study's keep-alive mitigation on the same set-up: a PING every 100 ms during the
/// idle period (under the 200 ms DCH tail) holds the radio in DCH, and the server sends
/// the second visit's responses without a single retransmission more.
#[test]
fn a_keepalive_ping_during_think_time_prevents_the_spurious_retransmission() {
    let Some((_, samples)) = radio_session(Some(100)) else {
        return;
    };
    let first = retrans(&samples[0]);
    let last = samples.last().unwrap();
    eprintln!(
        "retransmissions with keep-alive: {first} at the start, {} at the end",
        retrans(last)
    );
    assert_eq!(
        retrans(last),
        first,
        "no retransmission after the idle period: {last:?}"
    );
}

/// Accuracy tests: `scripts/test` runs them after everything else, one at a time
/// (`cargo test -p speedy --test link_cli -- --test-threads=1 accuracy::`); the bound
/// below comes from the noise measured that way.
mod accuracy {
    use super::*;

    #[test]
    fn server_command_is_reachable_through_the_link() {
        if !can_run() || Command::new("python3").arg("-V").output().is_err() {
            eprintln!("SKIPPED: needs python3 for the echo server");
            return;
        }
        let server = "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); \
                      s.bind(('0.0.0.0', 9000)); s.settimeout(5)\n\
                      while True:\n d, a = s.recvfrom(2048); s.sendto(d, a)";
        let client =
            "import socket, os, time; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); \
                      s.settimeout(3); s.connect((os.environ['SPEEDY_SERVER_ADDR'], 9000)); r=[]\n\
                      for i in range(20):\n t=time.monotonic(); s.send(b'x'*32); s.recv(64); \
                      r.append((time.monotonic()-t)*1000); time.sleep(0.01)\n\
                      r.sort(); print(r[len(r)//2])";
        let out = Command::new(BIN)
            .args(["link", "--rtt", "60", "--server-cmd"])
            .arg(format!("exec python3 -c \"{server}\""))
            .args(["--", "python3", "-c", client])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let median: f64 = String::from_utf8(out.stdout)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        eprintln!("median RTT through speedy link --rtt 60: {median:.3} ms");
        // Noise, measured in scripts/test's configuration (debug build, alone,
        // --test-threads=1), 31 runs on the 2-core VM: +0.30 to +0.75 ms. The bound
        // (unchanged) is 2.7x that; a missing or doubled delay still fails.
        assert!((median - 60.0).abs() < 2.0, "median RTT {median} ms");
    }
}

/// Whether `pid` is a live process (not gone, not a zombie).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let state = s.rsplit_once(')')?.1.split_whitespace().next()?.to_string();
            Some(state != "Z" && state != "X")
        })
        .unwrap_or(false)
}

/// The pids a `--server-cmd` of this test wrote, killed (by pid) on drop if a failed
/// check left them running.
struct ServerPids(std::path::PathBuf);

impl ServerPids {
    fn read(&self) -> Vec<i32> {
        std::fs::read_to_string(&self.0)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }
}

impl Drop for ServerPids {
    fn drop(&mut self) {
        for pid in self.read() {
            let ours = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| c.starts_with(b"sleep") || c.starts_with(b"sh"))
                .unwrap_or(false);
            if alive(pid) && ours {
                // SAFETY: a process the server command of this test started, by pid.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn server_cmd_and_its_children_end_on_every_exit_path() {
    if !can_run() {
        return;
    }
    // (what, trap in the server command, COMMAND, signal sent to link)
    let cases: [(&str, &str, &[&str], Option<i32>); 5] = [
        ("COMMAND exits", "", &["sleep", "1"], None),
        ("COMMAND not found", "", &["/nonexistent/speedy-test"], None),
        ("SIGTERM", "", &["sleep", "30"], Some(libc::SIGTERM)),
        ("SIGINT", "", &["sleep", "30"], Some(libc::SIGINT)),
        // A server that ignores SIGTERM (its children inherit that) gets SIGKILL.
        (
            "SIGTERM ignored",
            "trap '' TERM; ",
            &["sleep", "30"],
            Some(libc::SIGTERM),
        ),
    ];
    for (i, (what, trap, command, sig)) in cases.into_iter().enumerate() {
        let file =
            std::env::temp_dir().join(format!("speedy-link-pids-{}-{i}", std::process::id()));
        let _ = std::fs::remove_file(&file);
        let pids = ServerPids(file.clone());
        // The shell forks a child and waits for it; both pids go to the file.
        let server_cmd = format!(
            "{trap}sleep 300 & echo $! >> {f}; echo $$ >> {f}; wait",
            f = file.display()
        );
        let mut child = Command::new(BIN)
            .args([
                "link",
                "--server-wait",
                "500",
                "--server-cmd",
                &server_cmd,
                "--",
            ])
            .args(command)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let link = child.id();
        let _ns: Vec<NsGuard> = ["c", "s"]
            .iter()
            .map(|s| NsGuard(format!("lk{link}-0{s}")))
            .collect();
        let start = Instant::now();
        while pids.read().len() < 2 && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let started = pids.read();
        assert_eq!(started.len(), 2, "{what}: the server command started");
        assert!(started.iter().all(|&p| alive(p)), "{what}: running");
        if let Some(sig) = sig {
            // SAFETY: signalling the child this test spawned, by pid.
            unsafe { libc::kill(link as i32, sig) };
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what}: speedy link did not exit");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        match sig {
            Some(s) => assert_eq!(status.code(), Some(128 + s), "{what}"),
            None if command[0] == "sleep" => assert_eq!(status.code(), Some(0), "{what}"),
            None => assert_eq!(status.code(), Some(127), "{what}"),
        }
        for p in started {
            assert!(
                !alive(p),
                "{what}: pid {p} of the server command survived link"
            );
        }
        assert!(namespaces_of(link).is_empty(), "{what}: namespaces removed");
    }
}

#[test]
fn a_shell_without_a_command_shows_the_link_in_its_prompt() {
    if !can_run() {
        return;
    }
    // The shell reads its commands from stdin (a file), as a user would type them.
    let script = std::env::temp_dir().join(format!("speedy-link-prompt-{}", std::process::id()));
    std::fs::write(
        &script,
        "echo \"P=$PS1\"\necho \"L=$SPEEDY_LINK\"\nexit 3\n",
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .args(["link", "--profile", "3g"])
        .env("SHELL", "/bin/sh")
        .env_remove("PS1")
        .stdin(std::fs::File::open(&script).unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("speedy link still running");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    let _ = std::fs::remove_file(&script);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "the shell's status: {out}");
    assert!(out.contains("P=[link --profile 3g] "), "{out}");
    assert!(out.contains("L=--profile 3g"), "{out}");
}
