//! A real browser against the loader: headless Chromium (Debian's `chromium`) loads each
//! page of a synthesized corpus from `speedy serve --archive` on loopback, and must
//! request exactly the URLs that `speedy load` requests for the same page.
//!
//! Chromium's requests are taken on the server side (`speedy serve --log-requests`): every
//! host is mapped to the server (`--host-resolver-rules`), and `--virtual-time-budget`
//! lets the page run to its end, timers included, so script-initiated requests are seen.
//! `/favicon.ico` (the browser's own) and requests to Chromium's own services are not
//! part of the page and are ignored. The loader's requests come from its HAR.
//!
//! The test fails (it never skips) when Chromium is missing: install it with
//! `apt-get install chromium`, or point `SPEEDY_CHROMIUM` at the program.

mod support;

use speedy_archive::synth::{synthesize, SynthOptions};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::chromium;

const BIN: &str = env!("CARGO_BIN_EXE_speedy");

/// Hosts of Chromium's own background services (update checks, sign-in, time), which the
/// resolver rules also send to the replay server.
const BROWSER_SERVICE_SUFFIXES: [&str; 4] =
    ["google.com", "googleapis.com", "gstatic.com", "gvt1.com"];

/// Removes a directory on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child we started, in its own process group: on drop the group (the child and the
/// processes it started, such as Chromium's renderers) is killed and the child reaped.
struct Kid(Child);

impl Kid {
    fn spawn(cmd: &mut Command) -> std::io::Result<Kid> {
        cmd.process_group(0).spawn().map(Kid)
    }

    /// Waits at most `limit`; on time-out kills the group and fails with `what`.
    fn wait(&mut self, limit: Duration, what: &str) -> std::process::ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(st) = self.0.try_wait().unwrap() {
                return st;
            }
            if Instant::now() > deadline {
                self.kill();
                panic!("{what} did not finish within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn kill(&mut self) {
        // The group id is the child's pid (process_group(0)); only our processes are in it.
        let pid = self.0.id() as libc::pid_t;
        // SAFETY: kill has no memory-safety preconditions.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Kid {
    fn drop(&mut self) {
        // Only while the leader is unreaped is its pid (the group id) surely still ours.
        if self.0.try_wait().ok().flatten().is_none() {
            self.kill();
        }
    }
}

/// `host path` of a URL (port dropped), as the server log has it.
fn host_path(url: &str) -> String {
    let u = spdy::url::Url::parse(url).unwrap_or_else(|| panic!("{url}: not an http(s) URL"));
    format!("{} {}", u.host, u.path)
}

fn bare_host(h: &str) -> String {
    let h = h.to_ascii_lowercase();
    match h.rsplit_once(':') {
        Some((x, p)) if p.chars().all(|c| c.is_ascii_digit()) => x.to_string(),
        _ => h,
    }
}

/// The page's requests in the server log from byte `from` on: `host path` of each GET.
fn logged_requests(log: &Path, from: usize) -> BTreeSet<String> {
    let text = std::fs::read_to_string(log).unwrap();
    text[from..]
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let [method, host, path, _proto] = f.as_slice() else {
                panic!("bad --log-requests line {l:?}");
            };
            let host = bare_host(host);
            let service = BROWSER_SERVICE_SUFFIXES
                .iter()
                .any(|s| host == *s || host.ends_with(&format!(".{s}")));
            (*method == "GET" && !service && *path != "/favicon.ico")
                .then(|| format!("{host} {path}"))
        })
        .collect()
}

fn loader_requests(har: &Path) -> BTreeSet<String> {
    let h: serde_json::Value = serde_json::from_slice(&std::fs::read(har).unwrap()).unwrap();
    h["log"]["entries"]
        .as_array()
        .expect("HAR entries")
        .iter()
        .map(|e| host_path(e["request"]["url"].as_str().expect("request.url")))
        .filter(|u| !u.ends_with(" /favicon.ico"))
        .collect()
}

fn list(s: &BTreeSet<String>) -> String {
    s.iter()
        .map(|u| format!("  {u}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn chromium_requests_the_urls_the_loader_requests() {
    let chromium = chromium();
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir =
        TempDir(std::env::temp_dir().join(format!("speedy-chromium-{}-{n}", std::process::id())));
    let corpus = dir.0.join("corpus");
    let archive = synthesize(SynthOptions { pages: 3, seed: 11 });
    archive.save(&corpus).unwrap();
    let log = dir.0.join("requests.log");

    let mut server = Kid::spawn(
        Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--no-think-time"])
            .arg("--archive")
            .arg(&corpus)
            .arg("--log-requests")
            .arg(&log)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit()),
    )
    .expect("start speedy serve");
    let mut out = BufReader::new(server.0.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let port = line
        .strip_prefix("listening on ")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|a| a.rsplit_once(':'))
        .map(|(_, p)| p.to_string())
        .unwrap_or_else(|| panic!("speedy serve did not start: {line:?}"));
    // The `origin HOST ADDR` lines, drained so the server never blocks on its stdout.
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = out.read_to_string(&mut sink);
    });
    let ca = corpus.join("lab-ca").join("ca.pem");
    for _ in 0..200 {
        if ca.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }

    let mut failures = Vec::new();
    for (i, page) in archive.pages.iter().enumerate() {
        let url = archive.objects[page.root].url.clone();

        // Chromium, one fresh profile per page.
        let from = std::fs::metadata(&log).map_or(0, |m| m.len() as usize);
        let profile = dir.0.join(format!("profile{i}"));
        let mut browser = Kid::spawn(
            Command::new(&chromium)
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--disable-extensions",
                    "--ignore-certificate-errors",
                    "--virtual-time-budget=10000",
                    "--dump-dom",
                ])
                .arg(format!("--host-resolver-rules=MAP * 127.0.0.1:{port}"))
                .arg(format!("--user-data-dir={}", profile.display()))
                .arg(&url)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .expect("start chromium");
        let st = browser.wait(Duration::from_secs(60), &format!("chromium loading {url}"));
        drop(browser);
        assert!(st.success(), "chromium loading {url}: {st}");
        let browser_urls = logged_requests(&log, from);

        // The loader, HTTP/1.1 over TLS like Chromium's first connections.
        let har = dir.0.join(format!("page{i}.har"));
        let mut loader = Kid::spawn(
            Command::new(BIN)
                .arg("load")
                .arg(&url)
                .arg("--archive")
                .arg(&corpus)
                .args(["--protocol", "http1", "--tls", "--timeout", "60"])
                .arg("--resolve")
                .arg(format!("*=127.0.0.1:{port}"))
                .arg("--ca")
                .arg(&ca)
                .arg("--har")
                .arg(&har)
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        )
        .expect("start speedy load");
        let st = loader.wait(Duration::from_secs(75), &format!("speedy load {url}"));
        let mut err = String::new();
        let _ = loader.0.stderr.take().unwrap().read_to_string(&mut err);
        assert!(st.success(), "speedy load {url}: {st}: {err}");
        let loader_urls = loader_requests(&har);

        let page_urls: BTreeSet<String> = page
            .objects
            .iter()
            .map(|&o| host_path(&archive.objects[o].url))
            .collect();
        assert!(
            browser_urls.contains(&host_path(&url)),
            "chromium never requested {url}; its requests:\n{}",
            list(&browser_urls)
        );
        eprintln!(
            "{}: chromium {} URLs, loader {} URLs, archive {} objects",
            page.name,
            browser_urls.len(),
            loader_urls.len(),
            page_urls.len()
        );
        if browser_urls != loader_urls {
            failures.push(format!(
                "{} ({url}): chromium and speedy load requested different URLs\n\
                 only chromium:\n{}\nonly the loader:\n{}\n\
                 chromium ({}):\n{}\nthe loader ({}):\n{}",
                page.name,
                list(&browser_urls.difference(&loader_urls).cloned().collect()),
                list(&loader_urls.difference(&browser_urls).cloned().collect()),
                browser_urls.len(),
                list(&browser_urls),
                loader_urls.len(),
                list(&loader_urls)
            ));
        }
    }
    drop(server);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
