//! What the end-to-end tests share: starting `speedy serve` and reading its address,
//! temporary directories, and a child process killed (by pid) on drop.
#![allow(dead_code)]

pub mod interop;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The network namespaces a `speedy link` or `speedy lab` process `pid` made (named
/// `lk<pid>-…`).
pub fn namespaces_of(pid: u32) -> Vec<String> {
    let prefix = format!("lk{pid}-");
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// The program under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_speedy");

/// A running `speedy serve`, killed on drop.
pub struct Server {
    /// The child process.
    pub child: Child,
    /// `IP:PORT` it listens on.
    pub addr: String,
}

impl Server {
    /// Starts `speedy serve --listen 127.0.0.1:0 ARGS...` and waits for its address.
    pub fn start(args: &[&str]) -> Server {
        let mut cmd = Command::new(BIN);
        cmd.args(["serve", "--listen", "127.0.0.1:0"]).args(args);
        Server::spawn(cmd, "listening on ")
    }

    /// Starts `cmd` and waits for its first stdout line, `PREFIX ADDR ...`; `addr` is
    /// ADDR. The rest of stdout is read and dropped; the child is killed on drop.
    pub fn spawn(mut cmd: Command, prefix: &str) -> Server {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("start {cmd:?}: {e}"));
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        out.read_line(&mut line).expect("read the start-up line");
        let addr = line
            .trim()
            .strip_prefix(prefix)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("{cmd:?}: start-up line {line:?}"))
            .to_string();
        // Keep reading stdout so the child never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while out.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
                sink.clear();
            }
        });
        Server { child, addr }
    }

    /// The server's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `sig` (e.g. `libc::SIGTERM`) to the server, by its pid.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
        let r = unsafe { libc::kill(self.child.id() as i32, sig) };
        assert_eq!(r, 0, "kill({}, {sig})", self.child.id());
    }

    /// Waits up to `limit` for the server to exit; its status if it did.
    pub fn wait_exit(&mut self, limit: std::time::Duration) -> Option<std::process::ExitStatus> {
        let end = std::time::Instant::now() + limit;
        while std::time::Instant::now() < end {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                return Some(st);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        None
    }

    /// Asserts the server still runs (did not crash).
    pub fn assert_alive(&mut self) {
        assert!(
            self.child.try_wait().expect("try_wait").is_none(),
            "speedy serve exited"
        );
    }

    /// Open file descriptors of the server (sockets included).
    pub fn fd_count(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A temporary directory, removed on drop (shared with the crates' in-process tests).
#[allow(unused_imports)] // each test binary uses a part of this module (dead_code above)
pub use speedy_test_support::TempDir;

/// A field of `/proc/PID/status` in KiB (`VmRSS`, `VmHWM`).
pub fn proc_status_kib(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc status");
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// Waits (at most `limit`, else panics naming `what`) for `child` to exit, sampling its
/// resident memory every 20 ms; returns its status and the largest sample in KiB. A
/// child that has exited but is not reaped yet has no `VmRSS`: that sample is skipped.
pub fn peak_rss_until_exit(
    child: &mut Child,
    limit: std::time::Duration,
    what: &str,
) -> (std::process::ExitStatus, u64) {
    let end = std::time::Instant::now() + limit;
    let mut peak = 0;
    loop {
        if let Some(st) = child.try_wait().expect("wait") {
            return (st, peak);
        }
        assert!(std::time::Instant::now() < end, "{what} did not end");
        let rss = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            });
        peak = peak.max(rss.unwrap_or(0));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Bytes the process has read through read(2) and friends (`rchar` of `/proc/PID/io`).
pub fn proc_rchar(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/io")).expect("read /proc io");
    s.lines()
        .find_map(|l| l.strip_prefix("rchar:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("rchar in /proc/PID/io")
}

/// Runs `cmd` to its end with stdout and stderr captured; kills it (by its pid) and
/// panics if it is still running after `limit`.
pub fn run_bounded(cmd: &mut Command, limit: std::time::Duration) -> std::process::Output {
    use std::io::Read;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the command");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let t_err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    std::process::Output {
        status,
        stdout: t_out.join().expect("stdout reader"),
        stderr: t_err.join().expect("stderr reader"),
    }
}

/// `speedy ARGS...` in `dir`, bounded by `limit` (see [`run_bounded`]).
pub fn speedy_in(dir: &Path, args: &[&str], limit: std::time::Duration) -> std::process::Output {
    run_bounded(Command::new(BIN).current_dir(dir).args(args), limit)
}

/// A synthesized corpus of `pages` pages (seed 1) in `dir/corpus`.
pub fn synth_corpus(dir: &Path, pages: usize) -> PathBuf {
    let out = speedy_in(
        dir,
        &[
            "corpus",
            "synth",
            "--out",
            "corpus",
            "--pages",
            &pages.to_string(),
            "--seed",
            "1",
        ],
        std::time::Duration::from_secs(120),
    );
    assert!(
        out.status.success(),
        "synth: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("corpus")
}

/// The loads of a lab results file, as `"page" "network" "variant" run` keys (what two
/// runs of one experiment must share, whatever their timings).
pub fn result_keys(results: &Path) -> std::collections::BTreeSet<String> {
    speedy_lab::results::read_rows(results)
        .unwrap_or_else(|e| panic!("results rows: {e}"))
        .iter()
        .map(|r| format!("{:?} {:?} {:?} {}", r.page, r.network, r.variant, r.run))
        .collect()
}

/// A self-signed ECDSA certificate for `localhost` and 127.0.0.1, valid two days, made by
/// the `openssl` program in `dir`: (cert.pem, key.pem, the base64 SHA-256 of its public
/// key, as Chromium's `--ignore-certificate-errors-spki-list` takes it).
pub fn openssl_cert(dir: &Path) -> (PathBuf, PathBuf, String) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(Stdio::null())
        .status()
        .expect("this test needs the openssl program (apt-get install openssl)");
    assert!(made.success(), "openssl req: {made}");
    let spki = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "openssl x509 -in '{}' -pubkey -noout | openssl pkey -pubin -outform der \\
             | openssl dgst -sha256 -binary | base64",
            cert.display()
        ))
        .output()
        .expect("openssl");
    let spki = String::from_utf8(spki.stdout)
        .expect("base64")
        .trim()
        .to_string();
    assert_eq!(spki.len(), 44, "SPKI hash {spki:?}");
    (cert, key, spki)
}

/// Whether namespaces and `speedy link` can run here (root and /dev/net/tun); says
/// SKIPPED on stderr when not.
#[allow(dead_code)]
pub fn can_run_link() -> bool {
    // SAFETY: geteuid has no preconditions.
    let ok = unsafe { libc::geteuid() } == 0 && std::path::Path::new("/dev/net/tun").exists();
    if !ok {
        eprintln!("SKIPPED: needs root and /dev/net/tun");
    }
    ok
}

/// The Chromium program (`SPEEDY_CHROMIUM`, else `chromium`), checked to run: a test that
/// needs it fails (never skips) with how to install it.
pub fn chromium() -> String {
    let prog = std::env::var("SPEEDY_CHROMIUM").unwrap_or_else(|_| "chromium".into());
    match Command::new(&prog)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(st) if st.success() => prog,
        r => panic!(
            "this test needs headless Chromium and could not run `{prog} --version` ({r:?}): \
             install it (Debian: apt-get install chromium) or set SPEEDY_CHROMIUM to the program"
        ),
    }
}

/// Reads an HTTP request head from `c` byte by byte, up to its blank line (or the
/// connection's end or read timeout), and returns it.
pub fn read_request_head(c: &mut std::net::TcpStream) -> String {
    use std::io::Read;
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && c.read(&mut b).is_ok_and(|n| n == 1) {
        head.push(b[0]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// A hostile HTTP server on loopback: a thread that accepts up to `limit` connections
/// and, on a thread each, reads the request head (20 s read timeout) and runs `each`.
/// Returns its address.
#[allow(dead_code)] // not every test file starts one
pub fn hostile_server(limit: usize, each: fn(std::net::TcpStream)) -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("address").to_string();
    std::thread::spawn(move || {
        for c in l.incoming().take(limit) {
            let Ok(mut c) = c else { continue };
            std::thread::spawn(move || {
                c.set_read_timeout(Some(std::time::Duration::from_secs(20)))
                    .ok();
                read_request_head(&mut c);
                each(c);
            });
        }
    });
    addr
}

/// Runs `speedy lab EXPERIMENT --no-report --out OUT` (bounded by `limit`), asserts it
/// succeeded, and returns its result rows and its stderr.
#[allow(dead_code)] // not every test file runs a lab
pub fn run_lab(
    experiment: &Path,
    out: &Path,
    limit: std::time::Duration,
) -> (Vec<speedy_lab::results::Row>, String) {
    let o = run_bounded(
        Command::new(BIN)
            .arg("lab")
            .arg(experiment)
            .arg("--no-report")
            .arg("--out")
            .arg(out),
        limit,
    );
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "speedy lab: {stderr}");
    let rows = speedy_lab::results::read_rows(&out.join("results.jsonl"))
        .unwrap_or_else(|e| panic!("results rows: {e}\nspeedy lab: {stderr}"));
    (rows, stderr)
}

/// Writes files of the given names and sizes (deterministic bytes, different per name)
/// into `dir`, and returns each name with its body's SHA-256 in hex.
#[allow(dead_code)] // not every test file serves a site
pub fn sized_site(dir: &Path, sizes: &[(&str, usize)]) -> Vec<(String, String)> {
    use sha2::{Digest, Sha256};
    sizes
        .iter()
        .map(|&(name, len)| {
            let body: Vec<u8> = (0..len)
                .map(|i| ((i as u32).wrapping_mul(2_654_435_761) >> 11) as u8 ^ name.as_bytes()[0])
                .collect();
            std::fs::write(dir.join(name), &body).expect("write a site file");
            let sum = Sha256::digest(&body)
                .iter()
                .map(|x| format!("{x:02x}"))
                .collect();
            (name.to_string(), sum)
        })
        .collect()
}

/// Checks `speedy fetch`'s JSON lines against `files` (from [`sized_site`]): one line a
/// file, status 200, the same SHA-256, over SPDY/3.1.
#[allow(dead_code)] // not every test file fetches a site
pub fn check_fetched(lines: &[serde_json::Value], files: &[(String, String)], what: &str) {
    assert_eq!(lines.len(), files.len(), "{what}: {lines:?}");
    for (name, sum) in files {
        let v = lines
            .iter()
            .find(|v| {
                v["url"]
                    .as_str()
                    .unwrap_or("")
                    .ends_with(&format!("/{name}"))
            })
            .unwrap_or_else(|| panic!("{what}: no line for {name}: {lines:?}"));
        assert_eq!(v["status"], 200, "{what}: {v}");
        assert_eq!(v["sha256"].as_str(), Some(sum.as_str()), "{what}: {name}");
        assert_eq!(v["protocol"], "spdy/3.1", "{what}: {v}");
    }
}

/// Asserts that load `r` had no failed object, naming each failed one (URL and reason)
/// if it had.
#[allow(dead_code)] // not every test file runs a lab
pub fn assert_no_failed_object(r: &speedy_lab::results::Row) {
    assert_eq!(
        r.failed_objects, 0,
        "{} {}/{} run {}: {:?}",
        r.page, r.variant, r.network, r.run, r.failures
    );
}

/// Asserts that every row loaded the same page whole: no failed object and the first
/// row's object count.
#[allow(dead_code)] // not every test file runs a lab
pub fn assert_same_page_whole(rows: &[speedy_lab::results::Row]) {
    let objects = rows.first().expect("a row").objects;
    for r in rows {
        assert_no_failed_object(r);
        assert_eq!(r.objects, objects, "the same page: {r:?}");
    }
}
