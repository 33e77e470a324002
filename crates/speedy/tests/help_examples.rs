//! Every example of the `--help` of `corpus`, `serve`, `fetch`, `bench`, `proxy`, `load`,
//! `completions` and `man` runs (issue 18; `kube port-forward`'s needs a kubelet, which
//! `interop_kube.rs` provides):
//! the examples are read from the real program's help text, not copied here, and run in
//! a fresh directory in the order a new user would: synthesize a corpus, serve it (and a
//! directory), fetch, load, import the HAR and export it again.
//!
//! The only liberty taken: the fixed ports of the examples (8080, 8443) become free
//! ports, chosen by the servers (`--listen 127.0.0.1:0`), in every later example.

mod support;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use support::*;

const LIMIT: Duration = Duration::from_secs(120);

/// The example command lines of `speedy ARGS --help`: lines starting with `speedy ` after
/// the first line starting with `Example`, with `\` continuations joined, split into
/// words as a shell would (quotes removed), without the leading `speedy`.
fn examples(args: &[&str]) -> Vec<Vec<String>> {
    let out = Command::new(BIN).args(args).arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let Some(start) = text.lines().position(|l| l.starts_with("Example")) else {
        return Vec::new();
    };
    let mut joined: Vec<String> = Vec::new();
    let mut cont = false;
    for line in text.lines().skip(start + 1) {
        let t = line.trim();
        if cont {
            let last = joined.last_mut().expect("continued line");
            last.push(' ');
            last.push_str(t.trim_end_matches('\\').trim());
        } else if t.starts_with("speedy ") {
            joined.push(t.trim_end_matches('\\').trim().to_string());
        }
        cont = (cont || t.starts_with("speedy ")) && t.ends_with('\\');
    }
    joined.iter().map(|l| words(l)[1..].to_vec()).collect()
}

/// Splits a command line into words: white space separates, single and double quotes
/// group (no escapes inside; the examples need none).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                cur.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => out.extend(cur.take()),
            (None, c) => cur.get_or_insert_with(String::new).push(c),
        }
    }
    assert!(quote.is_none(), "unbalanced quote in {line:?}");
    out.extend(cur);
    out
}

/// A started example server, killed (by pid) on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a `serve` example with its `--listen` port replaced by 0; returns the server
/// and (the example's address, the address it got).
fn start_server(dir: &Path, ex: &[String]) -> (Running, String, String) {
    let at = ex.iter().position(|w| w == "--listen").expect("--listen") + 1;
    let wanted = ex[at].clone();
    let mut args = ex.to_vec();
    args[at] = format!("{}:0", wanted.rsplit_once(':').unwrap().0);
    let mut child = Command::new(BIN)
        .current_dir(dir)
        .args(&args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let running = Running(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(out);
        let mut line = String::new();
        let _ = r.read_line(&mut line);
        let _ = tx.send(line);
        // Keep draining so the server never blocks on a full pipe.
        let mut sink = String::new();
        while r.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
            sink.clear();
        }
    });
    let line = rx
        .recv_timeout(LIMIT)
        .unwrap_or_else(|_| panic!("speedy {args:?}: no start-up line"));
    let got = line
        .strip_prefix("listening on ")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("speedy {args:?}: start-up line {line:?}"))
        .to_string();
    (running, wanted, got)
}

/// Runs an example to its end (bounded) and returns its output, after checking it exited 0.
fn run_ok(dir: &Path, ex: &[String]) -> std::process::Output {
    let o = run_bounded(Command::new(BIN).current_dir(dir).args(ex), LIMIT);
    assert!(
        o.status.success(),
        "speedy {}: {}\n{}",
        ex.join(" "),
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn json_lines(o: &std::process::Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// The JSON lines among other output (stderr of fetch with -I or `-o -`).
fn json_lines_in(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[test]
fn every_help_example_runs() {
    let dir = TempDir::new("help-examples");
    let mut ran = 0;

    // 1. A corpus.
    let synth = examples(&["corpus", "synth"]);
    assert!(!synth.is_empty(), "corpus synth has an example");
    for ex in &synth {
        run_ok(&dir, ex);
        ran += 1;
    }
    assert!(dir.join("corpus/archive.json").is_file());

    // 2. Servers: the directory the examples name, then every serve example.
    let site = dir.join("site");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(
        site.join("index.html"),
        "<html><link rel=stylesheet href=b.css>",
    )
    .unwrap();
    std::fs::write(site.join("a.html"), "<html>a</html>").unwrap();
    std::fs::write(site.join("b.css"), "body {}").unwrap();
    let serve = examples(&["serve"]);
    assert!(
        serve.len() >= 2,
        "serve has a directory and an archive example"
    );
    let mut servers = Vec::new();
    let mut ports: Vec<(String, String)> = Vec::new();
    for ex in &serve {
        let (s, wanted, got) = start_server(&dir, ex);
        servers.push(s);
        ports.push((wanted, got));
        ran += 1;
    }
    let rewrite = |ex: &[String]| -> Vec<String> {
        ex.iter()
            .map(|w| {
                let mut w = w.clone();
                for (wanted, got) in &ports {
                    let (want_port, got_port) = (
                        wanted.rsplit_once(':').unwrap().1,
                        got.rsplit_once(':').unwrap().1,
                    );
                    w = w.replace(wanted, got).replace(
                        &format!("localhost:{want_port}"),
                        &format!("localhost:{got_port}"),
                    );
                }
                w
            })
            .collect()
    };

    // 3. fetch: every response whole and 200 (its JSON lines on stderr when stdout
    // carries content: -I, -o -).
    let fetch = examples(&["fetch"]);
    assert!(!fetch.is_empty());
    for ex in &fetch {
        let o = run_ok(&dir, &rewrite(ex));
        let to_stdout =
            ex.iter().any(|w| w == "-I") || ex.windows(2).any(|w| w[0] == "-o" && w[1] == "-");
        let lines = if to_stdout {
            json_lines_in(&o.stderr)
        } else {
            json_lines(&o)
        };
        assert!(!lines.is_empty(), "{ex:?}");
        for l in &lines {
            assert_eq!(l["status"], 200, "{ex:?}: {l}");
        }
        if ex.iter().any(|w| w == "-I") {
            let head = String::from_utf8_lossy(&o.stdout);
            assert!(
                head.contains(" 200\n") && head.contains("content-type:"),
                "{ex:?}: {head}"
            );
        }
        ran += 1;
    }
    // 3b. bench: no errors, every response 2xx.
    let bench = examples(&["bench"]);
    assert!(bench.len() >= 2, "bench has examples");
    for ex in &bench {
        let o = run_ok(&dir, &rewrite(ex));
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            text.contains("status codes: ") && text.contains(" 0 4xx, 0 5xx"),
            "{ex:?}: {text}"
        );
        // A run of seconds says how it goes once a second.
        assert!(
            !ex.iter().any(|w| w == "-D")
                || String::from_utf8_lossy(&o.stderr).contains("progress: "),
            "{ex:?}"
        );
        ran += 1;
    }

    // 3c. proxy: starts in front of the archive server it names (its port rewritten).
    let proxy = examples(&["proxy"]);
    assert!(!proxy.is_empty(), "proxy has an example");
    for ex in &proxy {
        let (p, _, got) = start_server(&dir, &rewrite(ex));
        assert!(got.starts_with("127.0.0.1:"), "{ex:?}: {got}");
        servers.push(p);
        ran += 1;
    }

    // 4. load: the page loads with nothing failed, and the HAR is written.
    let load = examples(&["load"]);
    assert!(!load.is_empty());
    for ex in &load {
        let o = run_ok(&dir, &rewrite(ex));
        let summary = &json_lines(&o)[0];
        assert_eq!(summary["failed"], Value::Array(vec![]), "{ex:?}: {summary}");
        assert_eq!(
            summary["missing"],
            Value::Array(vec![]),
            "{ex:?}: {summary}"
        );
        ran += 1;
    }
    assert!(dir.join("out.har").is_file());
    drop(servers);

    // 5. import (the HAR of a page: the one the load example wrote; a WARC, the fixture
    // wget wrote; a WPR archive and a Mahimahi recording of the corpus), then export.
    std::fs::copy(dir.join("out.har"), dir.join("page.har")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../speedy-archive/tests/data/wget.warc.gz"),
        dir.join("crawl.warc.gz"),
    )
    .unwrap();
    for (format, out) in [("wpr", "page.wprgo"), ("mahimahi", "recording")] {
        let args = [
            "corpus", "export", "corpus", "--format", format, "--out", out,
        ];
        run_ok(&dir, &args.map(String::from));
    }
    for cmd in ["import", "export-har", "export"] {
        let list = examples(&["corpus", cmd]);
        assert!(!list.is_empty(), "corpus {cmd} has an example");
        for ex in &list {
            run_ok(&dir, ex);
            ran += 1;
        }
    }
    assert!(dir.join("archive/archive.json").is_file());

    // 6. completions and man: the command before the shell's `>` or `|`, with a system
    // directory made a directory of the test's.
    for cmd in ["completions", "man"] {
        let list = examples(&[cmd]);
        assert!(!list.is_empty(), "{cmd} has an example");
        for ex in &list {
            let words: Vec<String> = ex
                .iter()
                .take_while(|w| *w != ">" && *w != "|")
                .map(|w| {
                    w.strip_prefix('/')
                        .map_or(w.clone(), |p| p.replace('/', "_"))
                })
                .collect();
            let o = run_ok(&dir, &words);
            let out_dir = words
                .windows(2)
                .find(|w| w[0] == "--out-dir")
                .map(|w| w[1].clone());
            match out_dir {
                Some(d) => assert!(dir.join(&d).join("speedy.1").is_file(), "{words:?}"),
                None => assert!(o.stdout.len() > 1000, "{words:?}"),
            }
            ran += 1;
        }
    }
    let har: Value =
        serde_json::from_slice(&std::fs::read(dir.join("archive.har")).unwrap()).unwrap();
    assert!(!har["log"]["entries"].as_array().unwrap().is_empty());
    assert!(ran >= 17, "{ran} examples ran");
}

#[test]
fn words_split_like_a_shell() {
    assert_eq!(
        words("load x --resolve '*=127.0.0.1:8080' \"a b\""),
        ["load", "x", "--resolve", "*=127.0.0.1:8080", "a b"]
    );
}
