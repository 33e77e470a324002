//! Issue 18's bad-input table: every subcommand given bad files, bad values, bad ports and
//! addresses, and bad certificates, as a new user would give them. Each case must
//!
//! - exit non-zero, with the code its `--help` documents where it documents one (fetch,
//!   bench, load, kube exec: 2 for bad arguments or files, 1 when no response came);
//! - name the problem (the flag, the file or the value) in its message: on stderr, or for
//!   fetch's per-URL failures in the JSON line on stdout, where `fetch --help` puts them;
//! - say it in a short first line, with no panic and no Rust debug output;
//! - leave nothing behind where it would have written (`--out` directories, HAR files).
//!
//! `inputs_that_once_had_unclear_messages_are_named` holds the 34 cases this table found
//! unclear when it was written (values accepted, wrong reasons, Rust debug output), each
//! with what its message must now contain.

mod support;
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use support::*;

/// Time a case may take (they all fail at once; a hang is a failure).
const LIMIT: Duration = Duration::from_secs(25);
/// Time for the cases known to hang (in the ignored table).
const HANG: Duration = Duration::from_secs(5);
/// Longest first line of a message.
const MAX_LINE: usize = 300;
/// What a message must not hold: a panic, or Rust's debug output of errors.
const NOISE: &[&str] = &[
    "panicked",
    "RUST_BACKTRACE",
    "Os { code",
    "Custom {",
    "kind:",
    "OtherError",
    "Context {",
    "DnsName(",
    "KeyMismatch",
];

/// Exit code expected: any non-zero (the command's --help documents none).
const ANY: Option<i32> = None;
/// Exit code 2: bad arguments or files (fetch, bench, load, kube exec document it).
const BAD: Option<i32> = Some(2);
/// Exit code 1: no response (fetch, load, kube exec).
const FAILED: Option<i32> = Some(1);

/// Where a case's message is.
#[derive(Clone, Copy, PartialEq)]
enum Said {
    Stderr,
    /// fetch's JSON line of a failed URL (`fetch --help`: one JSON line per response, url
    /// and error).
    Stdout,
}

/// One bad input: `speedy ARGS...` in the fixture's directory.
struct Case {
    args: Vec<String>,
    code: Option<i32>,
    /// Substrings the message must hold, each naming the problem.
    names: Vec<String>,
    said: Said,
    /// Paths (relative to the directory) that must not exist afterwards.
    absent: Vec<String>,
    limit: Duration,
}

fn case<S: AsRef<str>>(args: &[S], code: Option<i32>, names: &[&str]) -> Case {
    Case {
        args: args.iter().map(|s| s.as_ref().to_string()).collect(),
        code,
        names: names.iter().map(|s| s.to_string()).collect(),
        said: Said::Stderr,
        absent: Vec::new(),
        limit: LIMIT,
    }
}

impl Case {
    fn on_stdout(mut self) -> Case {
        self.said = Said::Stdout;
        self
    }

    fn leaves_no(mut self, path: &str) -> Case {
        self.absent.push(path.to_string());
        self
    }

    fn within(mut self, limit: Duration) -> Case {
        self.limit = limit;
        self
    }

    fn command_line(&self) -> String {
        let words: Vec<String> = self
            .args
            .iter()
            .map(|a| {
                if a.is_empty() || a.contains([' ', '*', '"', '\'']) {
                    format!("'{a}'")
                } else {
                    a.clone()
                }
            })
            .collect();
        format!("speedy {}", words.join(" "))
    }
}

/// Runs one case; what is wrong with its answer, if anything.
fn check(dir: &Path, c: &Case) -> Result<(), String> {
    let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        speedy_in(dir, &args, c.limit)
    }))
    .map_err(|_| format!("still running after {:?} (killed)", c.limit))?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let said = match c.said {
        Said::Stderr => &stderr,
        Said::Stdout => &stdout,
    };
    let mut problems = Vec::new();
    match out.status.code() {
        None => problems.push(format!("ended by a signal ({:?})", out.status)),
        Some(0) => problems.push("exit 0 on a bad input".to_string()),
        Some(n) => {
            if let Some(want) = c.code {
                if n != want {
                    problems.push(format!("exit {n}, its --help documents {want}"));
                }
            }
        }
    }
    for name in &c.names {
        if !said.contains(name.as_str()) {
            problems.push(format!("does not name {name:?}"));
        }
    }
    let first = said.lines().next().unwrap_or("");
    if first.trim().is_empty() {
        problems.push("no message on its first line".to_string());
    } else if first.chars().count() > MAX_LINE {
        problems.push(format!(
            "first line is {} characters (at most {MAX_LINE})",
            first.chars().count()
        ));
    }
    if let Some(line) = c
        .names
        .first()
        .and_then(|n| said.lines().find(|l| l.contains(n.as_str())))
    {
        if line.chars().count() > MAX_LINE {
            problems.push(format!(
                "the line naming it is {} characters (at most {MAX_LINE})",
                line.chars().count()
            ));
        }
    }
    for noise in NOISE {
        if stderr.contains(noise) || stdout.contains(noise) {
            problems.push(format!("panic or Rust debug output ({noise:?})"));
        }
    }
    for p in &c.absent {
        if dir.join(p).exists() {
            problems.push(format!("left {p} behind"));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    let shown: String = said.lines().take(3).collect::<Vec<_>>().join(" | ");
    let shown: String = shown.chars().take(400).collect();
    Err(format!(
        "exit {:?}; said: {shown:?}\n      {}",
        out.status.code(),
        problems.join("; ")
    ))
}

/// Runs every case of a table and fails listing all that failed.
fn run_table(dir: &Path, kind: &str, cases: &[Case]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            check(dir, c)
                .err()
                .map(|e| format!("  {}\n      {e}", c.command_line()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{kind}: {} of {} bad inputs without a clear message:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// The fixture: bad files of every sort, a plain and a TLS (self-signed) server, a lab CA,
// a port in use.

/// Bytes that are no format at all (deterministic).
fn noise(n: u32) -> Vec<u8> {
    (0..n)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect()
}

const GOOD_TOML: &str = "name=\"t\"\nruns=1\n[pages]\nsynth=1\n[[network]]\n\
                         profile=\"whitepaper-dsl\"\n[[variant]]\nname=\"a\"\nprotocol=\"http1\"\n";

/// A lab CA (`DIR/ca.pem`, `DIR/ca-key.pem`) made by `speedy proxy --tls-ca-dir DIR`.
fn make_ca(dir: &Path, name: &str) {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir)
        .args(["proxy", "--listen", "127.0.0.1:0", "--tls-ca-dir", name]);
    drop(Server::spawn(cmd, "listening on "));
    assert!(dir.join(name).join("ca.pem").exists(), "{name}/ca.pem");
    assert!(
        dir.join(name).join("ca-key.pem").exists(),
        "{name}/ca-key.pem"
    );
}

struct Fx {
    dir: TempDir,
    /// `serve --root site` (plain).
    plain: Server,
    /// `serve --root site --tls-self-signed` (a certificate no client trusts).
    tls: Server,
    /// A port in use, held open for the fixture's life.
    busy: TcpListener,
}

impl Fx {
    fn new(tag: &str) -> Fx {
        let dir = TempDir::new(tag);
        let w = |name: &str, bytes: &[u8]| {
            let p = dir.join(name);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).unwrap();
            }
            std::fs::write(p, bytes).unwrap();
        };
        std::fs::create_dir_all(dir.join("adir")).unwrap();
        w("site/index.html", b"<html>hi</html>");
        w("regular", b"a regular file\n");
        w("empty.txt", b"");
        w("random.bin", &noise(300));
        w("json.json", b"{\"a\": 1}\n");
        w("trunc.json", b"{\"log\": {\"entries\": [\n");
        w("nothar.har", b"{\"hello\": \"world\"}\n");
        w(
            "noentries.har",
            b"{\"log\": {\"version\": \"1.2\", \"entries\": []}}\n",
        );
        w(
            "badentry.har",
            b"{\"log\": {\"version\": \"1.2\", \"entries\": [{\"request\": {}}]}}\n",
        );
        w(
            "trunc.warc",
            b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: 99999\r\n\r\nabc",
        );
        let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
        gz.extend_from_slice(&noise(64));
        w("noise.warc.gz", &gz);
        // A symlink loop: a path that exists as a name but cannot be read (root reads
        // files of any mode, so permissions would not do).
        std::os::unix::fs::symlink("loop2", dir.join("loop1")).unwrap();
        std::os::unix::fs::symlink("loop1", dir.join("loop2")).unwrap();

        // Experiment files.
        w("good.toml", GOOD_TOML.as_bytes());
        w(
            "unknown.toml",
            GOOD_TOML
                .replacen("runs=1\n", "runs=1\nbogus_key=3\n", 1)
                .as_bytes(),
        );
        w(
            "badval.toml",
            GOOD_TOML.replace("\"http1\"", "\"quic\"").as_bytes(),
        );
        w(
            "badtype.toml",
            GOOD_TOML.replace("runs=1", "runs=\"many\"").as_bytes(),
        );
        w(
            "zeroruns.toml",
            GOOD_TOML.replace("runs=1", "runs=0").as_bytes(),
        );
        w(
            "badprofile.toml",
            GOOD_TOML
                .replace("whitepaper-dsl", "nosuchprofile")
                .as_bytes(),
        );
        let no_variant = GOOD_TOML.split("[[variant]]").next().unwrap().to_string();
        w("novariants.toml", no_variant.as_bytes());
        w(
            "dup.toml",
            format!("{GOOD_TOML}[[variant]]\nname=\"a\"\nprotocol=\"spdy\"\n").as_bytes(),
        );
        w(
            "nonet.toml",
            b"name=\"t\"\nruns=1\n[pages]\nsynth=1\n[[variant]]\nname=\"a\"\nprotocol=\"http1\"\n",
        );
        w(
            "badarchive.toml",
            GOOD_TOML
                .replace("synth=1", "archive=\"nonexist\"")
                .as_bytes(),
        );
        w(
            "badagainst.toml",
            format!("{GOOD_TOML}against=\"zzz\"\n").as_bytes(),
        );
        w(
            "badrate.toml",
            GOOD_TOML
                .replace(
                    "profile=\"whitepaper-dsl\"",
                    "down=\"fastmbit\"\nup=\"1mbit\"\nrtt_ms=10",
                )
                .as_bytes(),
        );
        w(
            "varkey.toml",
            format!("{GOOD_TOML}colour=\"red\"\n").as_bytes(),
        );
        w("syntax.toml", b"name = \"t\n");

        // Results directories for lab report and merge.
        w("emptyres/results.jsonl", b"");
        w("garbres/results.jsonl", &noise(200));
        w("jsonres/results.jsonl", b"{\"a\":1}\n");
        w("truncres/results.jsonl", b"{\"page\":\"x\",\"net\n");

        // A corpus, a HAR of it, and broken archives.
        synth_corpus(&dir, 1);
        let o = speedy_in(
            &dir,
            &["corpus", "export-har", "corpus", "--out", "good.har"],
            LIMIT,
        );
        assert!(o.status.success(), "export-har: {o:?}");
        w("badarch/archive.json", &noise(100));
        w("emptyarch/archive.json", b"");
        std::fs::create_dir_all(dir.join("nobodies")).unwrap();
        std::fs::copy(
            dir.join("corpus/archive.json"),
            dir.join("nobodies/archive.json"),
        )
        .unwrap();
        // A copy of the corpus whose lab CA file holds no certificate.
        std::fs::create_dir_all(dir.join("badca/lab-ca")).unwrap();
        std::fs::copy(
            dir.join("corpus/archive.json"),
            dir.join("badca/archive.json"),
        )
        .unwrap();
        std::os::unix::fs::symlink(dir.join("corpus/bodies"), dir.join("badca/bodies")).unwrap();
        w("badca/lab-ca/ca.pem", b"");

        make_ca(&dir, "ca-a");

        let site = dir.join("site");
        let plain = Server::start(&["--root", site.to_str().unwrap()]);
        let tls = Server::start(&["--root", site.to_str().unwrap(), "--tls-self-signed"]);
        let busy = TcpListener::bind("127.0.0.1:0").expect("bind a port");
        Fx {
            dir,
            plain,
            tls,
            busy,
        }
    }

    /// `http://ADDR/index.html` of the plain server.
    fn plain_url(&self) -> String {
        format!("http://{}/index.html", self.plain.addr)
    }

    /// `https://127.0.0.1:PORT/index.html` of the self-signed server.
    fn tls_url(&self) -> String {
        format!("https://{}/index.html", self.tls.addr)
    }

    /// `127.0.0.1:PORT` of the port in use.
    fn busy_addr(&self) -> String {
        self.busy.local_addr().unwrap().to_string()
    }

    /// The root URL of the corpus's page.
    fn corpus_root(&self) -> String {
        let a: serde_json::Value =
            serde_json::from_slice(&std::fs::read(self.dir.join("corpus/archive.json")).unwrap())
                .unwrap();
        let root = a["pages"][0]["root"].as_u64().unwrap() as usize;
        a["objects"][root]["url"].as_str().unwrap().to_string()
    }
}

// ---------------------------------------------------------------------------------------
// The tables.

/// Missing files, directories for files, empty files, random bytes, wrong formats,
/// unreadable paths, outputs that cannot be created.
fn bad_file_cases(fx: &Fx) -> Vec<Case> {
    let p = fx.plain_url();
    let p = p.as_str();
    let l0 = ["--listen", "127.0.0.1:0"];
    let serve = |extra: &[&str]| {
        let mut a = vec!["serve"];
        a.extend_from_slice(&l0);
        a.extend_from_slice(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<String>>()
    };
    let root_site = |extra: &[&str]| {
        let mut a = vec!["--root", "site"];
        a.extend_from_slice(extra);
        serve(&a)
    };
    let proxy = |extra: &[&str]| {
        let mut a = vec!["proxy", "--listen", "127.0.0.1:0"];
        a.extend_from_slice(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<String>>()
    };
    let rates = ["--down", "1mbit", "--up", "1mbit"];
    vec![
        // serve
        case(
            &serve(&["--root", "missing"]),
            ANY,
            &["--root missing", "No such file"],
        ),
        case(
            &serve(&["--root", "regular"]),
            ANY,
            &["--root", "regular", "not a directory"],
        ),
        case(&serve(&["--root", "loop1"]), ANY, &["--root loop1"]),
        case(
            &serve(&["--archive", "missing"]),
            ANY,
            &["missing/archive.json"],
        ),
        case(&serve(&["--archive", "adir"]), ANY, &["adir/archive.json"]),
        case(
            &serve(&["--archive", "regular"]),
            ANY,
            &["regular/archive.json"],
        ),
        case(
            &serve(&["--archive", "badarch"]),
            ANY,
            &["badarch/archive.json"],
        ),
        case(
            &root_site(&["--push-map", "missing"]),
            ANY,
            &["--push-map missing"],
        ),
        case(
            &root_site(&["--push-map", "random.bin"]),
            ANY,
            &["--push-map random.bin"],
        ),
        case(
            &root_site(&["--push-map", "json.json"]),
            ANY,
            &["json.json:1"],
        ),
        case(
            &root_site(&["--push-map", "/proc/self/mem"]),
            ANY,
            &["--push-map /proc/self/mem"],
        ),
        case(
            &root_site(&["--tcp-series", "regular/x"]),
            ANY,
            &["--tcp-series regular/x"],
        ),
        case(
            &serve(&["--archive", "corpus", "--log-requests", "regular/x"]),
            ANY,
            &["--log-requests regular/x"],
        ),
        // fetch
        case(&["fetch", p, "--data", "missing"], BAD, &["--data missing"]),
        case(&["fetch", p, "--data", "adir"], BAD, &["--data adir"]),
        case(&["fetch", p, "--data", "loop1"], BAD, &["--data loop1"]),
        // proxy
        case(&proxy(&["--log", "regular/x"]), ANY, &["--log regular/x"]),
        case(&proxy(&["--log", "adir"]), ANY, &["--log adir"]),
        case(
            &proxy(&["--tcp-series", "regular/x"]),
            ANY,
            &["--tcp-series regular/x"],
        ),
        // kube
        case(
            &[
                "kube",
                "exec",
                "http://127.0.0.1:1/exec",
                "--stdin",
                "missing",
            ],
            BAD,
            &["--stdin missing"],
        ),
        case(
            &[
                "kube",
                "exec",
                "http://127.0.0.1:1/exec",
                "--stdin",
                "loop1",
            ],
            BAD,
            &["--stdin loop1"],
        ),
        // link (files read before any namespace is made)
        case(
            &[
                "link",
                "--down-trace",
                "missing",
                "--up",
                "1mbit",
                "--",
                "true",
            ],
            ANY,
            &["missing"],
        ),
        case(
            &[
                "link",
                "--down-trace",
                "random.bin",
                "--up",
                "1mbit",
                "--",
                "true",
            ],
            ANY,
            &["random.bin"],
        ),
        case(
            &[
                "link",
                "--down-trace",
                "empty.txt",
                "--up",
                "1mbit",
                "--",
                "true",
            ],
            ANY,
            &["empty.txt", "empty"],
        ),
        case(
            &["link", "--trace", "nosuchtrace", "--", "true"],
            ANY,
            &["nosuchtrace"],
        ),
        case(
            &[
                &["link", "--log-up", "regular/x"][..],
                &rates,
                &["--", "true"],
            ]
            .concat(),
            ANY,
            &["regular/x"],
        ),
        // lab: experiment files
        case(&["lab", "missing.toml"], ANY, &["missing.toml"]),
        case(&["lab", "adir"], ANY, &["adir", "directory"]),
        case(&["lab", "empty.txt"], ANY, &["empty.txt", "pages"]),
        case(&["lab", "random.bin"], ANY, &["random.bin", "UTF-8"]),
        case(&["lab", "json.json"], ANY, &["json.json:1"]),
        case(&["lab", "syntax.toml"], ANY, &["syntax.toml:1"]),
        case(
            &["lab", "unknown.toml"],
            ANY,
            &["unknown.toml:3", "bogus_key"],
        ),
        case(&["lab", "badval.toml"], ANY, &["badval.toml", "quic"]),
        case(&["lab", "badtype.toml"], ANY, &["badtype.toml:2", "many"]),
        case(&["lab", "zeroruns.toml"], ANY, &["zeroruns.toml", "runs"]),
        case(
            &["lab", "novariants.toml"],
            ANY,
            &["novariants.toml", "[[variant]]"],
        ),
        case(&["lab", "nonet.toml"], ANY, &["nonet.toml", "[[network]]"]),
        case(
            &["lab", "dup.toml"],
            ANY,
            &["dup.toml", "two variants are named"],
        ),
        case(
            &["lab", "badprofile.toml"],
            ANY,
            &["badprofile.toml", "nosuchprofile"],
        ),
        case(&["lab", "badrate.toml"], ANY, &["badrate.toml", "fastmbit"]),
        case(
            &["lab", "badagainst.toml"],
            ANY,
            &["badagainst.toml", "zzz"],
        ),
        case(
            &["lab", "badarchive.toml"],
            ANY,
            &["pages.archive", "nonexist"],
        ),
        case(&["lab", "validate", "missing.toml"], ANY, &["missing.toml"]),
        case(
            &["lab", "validate", "unknown.toml"],
            ANY,
            &["unknown.toml:3", "bogus_key"],
        ),
        case(
            &["lab", "validate", "dup.toml"],
            ANY,
            &["dup.toml", "two variants are named"],
        ),
        // lab report and merge: results files
        case(
            &["lab", "report", "missing"],
            ANY,
            &["missing/results.jsonl"],
        ),
        case(
            &["lab", "report", "regular"],
            ANY,
            &["regular/results.jsonl"],
        ),
        case(
            &["lab", "report", "garbres"],
            ANY,
            &["garbres/results.jsonl", "UTF-8"],
        ),
        case(
            &["lab", "report", "jsonres"],
            ANY,
            &["jsonres/results.jsonl:1", "experiment"],
        ),
        case(
            &["lab", "report", "truncres"],
            ANY,
            &["truncres/results.jsonl:1"],
        ),
        case(
            &["lab", "merge", "--out", "m1", "missing"],
            ANY,
            &["missing"],
        ),
        case(
            &["lab", "merge", "--out", "m3", "garbres"],
            ANY,
            &["garbres/results.jsonl"],
        ),
        case(
            &["lab", "merge", "--out", "m5", "random.bin"],
            ANY,
            &["random.bin"],
        ),
        case(
            &["lab", "merge", "--out", "m8", "truncres"],
            ANY,
            &["truncres/results.jsonl:1"],
        ),
        case(
            &["lab", "merge", "--out", "regular/x", "truncres"],
            ANY,
            &["regular/x"],
        ),
        // lab compare and export: results directories and files
        case(
            &["lab", "compare", "missing", "truncres"],
            ANY,
            &["missing", "no such results directory or file"],
        ),
        case(
            &["lab", "compare", "garbres", "truncres"],
            ANY,
            &["garbres/results.jsonl", "UTF-8"],
        ),
        case(
            &["lab", "compare", "jsonres", "jsonres"],
            ANY,
            &["jsonres/results.jsonl:1", "experiment"],
        ),
        case(
            &["lab", "export", "missing"],
            ANY,
            &["missing/results.jsonl"],
        ),
        case(
            &["lab", "export", "truncres", "--format", "xlsx"],
            ANY,
            &["xlsx", "csv or parquet"],
        ),
        case(
            &["lab", "export", "jsonres"],
            ANY,
            &["jsonres/results.jsonl:1"],
        ),
        // load
        case(
            &["load", p, "--archive", "missing"],
            BAD,
            &["missing/archive.json"],
        ),
        case(
            &["load", p, "--archive", "regular"],
            BAD,
            &["regular/archive.json"],
        ),
        case(
            &["load", p, "--archive", "badarch"],
            BAD,
            &["badarch/archive.json"],
        ),
        case(
            &["load", p, "--prefetch", "random.bin"],
            BAD,
            &["random.bin", "not JSON"],
        ),
        case(
            &["load", p, "--prefetch", "trunc.json"],
            BAD,
            &["trunc.json", "not JSON"],
        ),
        case(&["load", p, "--prefetch", "adir"], BAD, &["adir"]),
        case(
            &["load", p, "--har", "regular/x"],
            BAD,
            &["--har regular/x"],
        ),
        case(&["load", p, "--har", "adir"], BAD, &["--har adir"]),
        // corpus synth: outputs that cannot be made
        case(
            &["corpus", "synth", "--out", "regular", "--pages", "1"],
            ANY,
            &["regular", "Not a directory"],
        ),
        case(
            &["corpus", "synth", "--out", "regular/x", "--pages", "1"],
            ANY,
            &["regular/x"],
        ),
        // corpus import
        case(
            &["corpus", "import", "missing.har", "--out", "i1"],
            ANY,
            &["missing.har"],
        )
        .leaves_no("i1"),
        case(&["corpus", "import", "adir", "--out", "i2"], ANY, &["adir"]).leaves_no("i2"),
        case(
            &["corpus", "import", "empty.txt", "--out", "i3"],
            ANY,
            &["empty.txt", "empty"],
        )
        .leaves_no("i3"),
        case(
            &["corpus", "import", "random.bin", "--out", "i4"],
            ANY,
            &["random.bin", "neither a WARC nor a HAR"],
        )
        .leaves_no("i4"),
        case(
            &["corpus", "import", "nothar.har", "--out", "i5"],
            ANY,
            &["nothar.har", "log"],
        )
        .leaves_no("i5"),
        case(
            &["corpus", "import", "json.json", "--out", "i6"],
            ANY,
            &["json.json", "log"],
        )
        .leaves_no("i6"),
        case(
            &["corpus", "import", "trunc.json", "--out", "i7"],
            ANY,
            &["trunc.json", "not JSON"],
        )
        .leaves_no("i7"),
        case(
            &["corpus", "import", "noentries.har", "--out", "i8"],
            ANY,
            &["noentries.har", "no page"],
        )
        .leaves_no("i8"),
        case(
            &["corpus", "import", "badentry.har", "--out", "i9"],
            ANY,
            &["badentry.har", "entries[0]"],
        )
        .leaves_no("i9"),
        case(
            &["corpus", "import", "trunc.warc", "--out", "i10"],
            ANY,
            &["trunc.warc", "Content-Length"],
        )
        .leaves_no("i10"),
        case(
            &["corpus", "import", "noise.warc.gz", "--out", "i11"],
            ANY,
            &["noise.warc.gz", "gzip"],
        )
        .leaves_no("i11"),
        case(
            &["corpus", "import", "loop1", "--out", "i12"],
            ANY,
            &["loop1"],
        )
        .leaves_no("i12"),
        case(
            &["corpus", "import", "/proc/self/mem", "--out", "i13"],
            ANY,
            &["/proc/self/mem"],
        )
        .leaves_no("i13"),
        case(
            &["corpus", "import", "good.har", "--out", "regular"],
            ANY,
            &["regular"],
        ),
        // corpus export-har
        case(
            &["corpus", "export-har", "missing", "--out", "e1.har"],
            ANY,
            &["missing/archive.json"],
        )
        .leaves_no("e1.har"),
        case(
            &["corpus", "export-har", "adir", "--out", "e2.har"],
            ANY,
            &["adir/archive.json"],
        )
        .leaves_no("e2.har"),
        case(
            &["corpus", "export-har", "badarch", "--out", "e3.har"],
            ANY,
            &["badarch/archive.json", "not a speedy archive"],
        )
        .leaves_no("e3.har"),
        case(
            &["corpus", "export-har", "emptyarch", "--out", "e4.har"],
            ANY,
            &["emptyarch/archive.json"],
        )
        .leaves_no("e4.har"),
        case(
            &["corpus", "export-har", "nobodies", "--out", "e5.har"],
            ANY,
            &["nobodies/bodies/"],
        )
        .leaves_no("e5.har"),
        case(
            &["corpus", "export-har", "corpus", "--out", "regular/x.har"],
            ANY,
            &["regular/x.har"],
        ),
        case(
            &["corpus", "export-har", "corpus", "--out", "adir"],
            ANY,
            &["adir"],
        ),
        // man
        case(
            &["man", "--out-dir", "regular/x"],
            ANY,
            &["--out-dir regular/x"],
        ),
    ]
}

/// Numbers, durations, rates, protocol and enum names, URLs, `--resolve` and header
/// forms, conflicting flags.
fn bad_value_cases(fx: &Fx) -> Vec<Case> {
    let p = fx.plain_url();
    let p = p.as_str();
    let closed = "http://127.0.0.1:1/";
    let serve = |extra: &[&str]| {
        let mut a = vec!["serve", "--listen", "127.0.0.1:0", "--root", "site"];
        a.extend_from_slice(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<String>>()
    };
    let proxy = |extra: &[&str]| {
        let mut a = vec!["proxy", "--listen", "127.0.0.1:0"];
        a.extend_from_slice(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<String>>()
    };
    let link = |extra: &[&str]| {
        [&["link"][..], extra, &["--", "true"]]
            .concat()
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<String>>()
    };
    let bench = |extra: &[&str]| {
        [&["bench", p][..], extra]
            .concat()
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<String>>()
    };
    let load = |extra: &[&str]| {
        [&["load", p][..], extra]
            .concat()
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<String>>()
    };
    let fetch = |extra: &[&str]| {
        [&["fetch", closed][..], extra]
            .concat()
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<String>>()
    };
    let synth = |out: &str, extra: &[&str]| {
        let mut a = vec!["corpus", "synth", "--out"];
        a.push(out);
        a.extend_from_slice(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<String>>()
    };
    let pf = "http://127.0.0.1:1/portforward";
    vec![
        // serve
        case(
            &serve(&["--header-level", "10"]),
            ANY,
            &["--header-level 10"],
        ),
        case(&serve(&["--header-level", "-1"]), ANY, &["'-1'"]),
        case(&serve(&["--max-body", "5Q"]), ANY, &["--max-body", "5Q"]),
        case(&serve(&["--max-body", "-5"]), ANY, &["'-5'"]),
        case(
            &serve(&["--sniff-timeout", "abc"]),
            ANY,
            &["--sniff-timeout", "abc"],
        ),
        case(
            &serve(&["--sniff-timeout", "99999999999"]),
            ANY,
            &["99999999999"],
        ),
        case(
            &serve(&["--idle-timeout", "0"]),
            ANY,
            &["--idle-timeout", "'0'"],
        ),
        case(
            &serve(&["--max-concurrent-streams", "x"]),
            ANY,
            &["--max-concurrent-streams"],
        ),
        case(
            &serve(&["--flow-control", "maybe"]),
            ANY,
            &["--flow-control", "maybe"],
        ),
        case(
            &serve(&["--header-compression", "gzip"]),
            ANY,
            &["--header-compression", "gzip"],
        ),
        case(
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--archive",
                "corpus",
                "--push",
                "bogus",
            ],
            ANY,
            &["--push", "bogus"],
        ),
        case(
            &serve(&["--archive", "corpus"]),
            ANY,
            &["--root", "--archive"],
        ),
        case(
            &["serve", "--listen", "127.0.0.1:0"],
            ANY,
            &["--root", "--archive"],
        ),
        case(
            &serve(&[
                "--tls-self-signed",
                "--tls-cert",
                "ca-a/ca.pem",
                "--tls-key",
                "ca-a/ca-key.pem",
            ]),
            ANY,
            &["--tls-self-signed", "--tls-cert"],
        ),
        // fetch
        case(
            &["fetch", "example.com/"],
            BAD,
            &["example.com/", "absolute URL"],
        ),
        case(
            &["fetch", "ftp://127.0.0.1/x"],
            BAD,
            &["ftp://127.0.0.1/x", "http or https"],
        ),
        case(
            &["fetch", "http://127.0.0.1:99999/"],
            BAD,
            &["99999", "port"],
        ),
        case(&["fetch", "http:///x"], BAD, &["http:///x", "no host"]),
        case(&["fetch"], BAD, &["<URL>"]),
        case(&fetch(&["--bogus"]), BAD, &["--bogus"]),
        case(
            &fetch(&["--protocol", "spdy/4"]),
            BAD,
            &["--protocol", "spdy/4"],
        ),
        case(
            &fetch(&["--protocol", ""]),
            BAD,
            &["--protocol", "unknown protocol"],
        ),
        case(&fetch(&["-H", "novalue"]), BAD, &["novalue", "Name: value"]),
        case(
            &fetch(&["--resolve", "foo"]),
            BAD,
            &["--resolve", "foo", "HOST=IP"],
        ),
        case(
            &fetch(&["--resolve", "foo=bar"]),
            BAD,
            &["--resolve", "bar"],
        ),
        case(
            &fetch(&["--resolve", "foo=127.0.0.1:99999"]),
            BAD,
            &["127.0.0.1:99999"],
        ),
        case(&fetch(&["--read-timeout", "0"]), BAD, &["--read-timeout 0"]),
        case(
            &fetch(&["--read-timeout", "abc"]),
            BAD,
            &["--read-timeout", "abc"],
        ),
        case(&fetch(&["--read-timeout", "-1"]), BAD, &["'-1'"]),
        case(&fetch(&["--max-time", "5h"]), BAD, &["--max-time", "5h"]),
        case(&fetch(&["--max-time", "0"]), BAD, &["--max-time 0"]),
        case(&fetch(&["--concurrency", "0"]), BAD, &["--concurrency"]),
        case(
            &fetch(&["--concurrency", "99999999999999999999"]),
            BAD,
            &["--concurrency", "99999999999999999999"],
        ),
        case(&fetch(&["--priority", "8"]), BAD, &["--priority 8"]),
        case(&fetch(&["--priority", "x"]), BAD, &["--priority", "'x'"]),
        case(
            &fetch(&["--header-level", "10"]),
            BAD,
            &["--header-level 10"],
        ),
        case(&fetch(&["-X", "BAD METHOD"]), BAD, &["-X", "BAD METHOD"]),
        case(
            &fetch(&["--flow-control", "maybe"]),
            BAD,
            &["--flow-control", "maybe"],
        ),
        case(&fetch(&["-o", "a", "-o", "b"]), BAD, &["-o"]),
        case(
            &["fetch", "https://127.0.0.1:1/", "--upgrade"],
            BAD,
            &["--upgrade", "http://"],
        ),
        case(&fetch(&["--stream-protocol", "x"]), BAD, &["--upgrade"]),
        // proxy
        case(&proxy(&["--resolve", "foo"]), ANY, &["--resolve", "foo"]),
        case(&proxy(&["--resolve", "*=bar"]), ANY, &["--resolve", "bar"]),
        case(&proxy(&["--upstream", "h3"]), ANY, &["--upstream h3"]),
        case(
            &proxy(&["--allow", "a.*.com"]),
            ANY,
            &["--allow", "a.*.com"],
        ),
        case(
            &proxy(&["--allow", "127.1:443"]),
            ANY,
            &["--allow", "127.1"],
        ),
        case(
            &proxy(&["--allow", "x.example:0"]),
            ANY,
            &["--allow", "x.example:0"],
        ),
        case(&proxy(&["--timeout", "abc"]), ANY, &["--timeout", "abc"]),
        case(
            &proxy(&["--tls-self-signed", "--tls-ca-dir", "ca-a"]),
            ANY,
            &["--tls-self-signed", "--tls-ca-dir"],
        ),
        // kube
        case(
            &["kube", "exec", "example.com/exec"],
            BAD,
            &["example.com/exec"],
        ),
        case(
            &["kube", "exec", "ftp://127.0.0.1/exec"],
            BAD,
            &["ftp://127.0.0.1/exec"],
        ),
        case(
            &["kube", "exec", "https://127.0.0.1:1/exec"],
            BAD,
            &["https://", "http://"],
        ),
        case(
            &["kube", "exec", "http://127.0.0.1:99999/exec"],
            BAD,
            &["99999", "port"],
        ),
        case(
            &["kube", "port-forward", pf, "8080"],
            ANY,
            &["8080", "LOCAL:REMOTE"],
        ),
        case(
            &["kube", "port-forward", pf, "99999:80"],
            ANY,
            &["99999:80"],
        ),
        case(&["kube", "port-forward", pf, "a:b"], ANY, &["a:b"]),
        case(
            &["kube", "port-forward", pf, "0:80", "--connections", "x"],
            ANY,
            &["--connections"],
        ),
        case(&["kube", "bogus"], ANY, &["bogus"]),
        // link (refused while parsing, before any namespace)
        case(&link(&["--down", "fastmbit"]), ANY, &["--down", "fastmbit"]),
        case(&link(&["--down", "0"]), ANY, &["--down", "'0'"]),
        case(
            &link(&["--down", "999999999999999999999mbit"]),
            ANY,
            &["--down", "above"],
        ),
        case(&link(&["--up", "-5mbit"]), ANY, &["'-5'"]),
        case(&link(&["--rtt", "abc"]), ANY, &["--rtt", "abc"]),
        case(&link(&["--rtt", "-1"]), ANY, &["'-1'"]),
        case(&link(&["--delay-down", "5h"]), ANY, &["--delay-down", "5h"]),
        case(&link(&["--jitter", "x"]), ANY, &["--jitter", "'x'"]),
        case(&link(&["--loss", "2"]), ANY, &["--loss", "'2'"]),
        case(&link(&["--loss", "150%"]), ANY, &["--loss", "150%"]),
        case(&link(&["--loss", "ge:p=x"]), ANY, &["--loss", "'x'"]),
        case(&link(&["--queue", "fifo"]), ANY, &["--queue", "fifo"]),
        case(&link(&["--radio", "5g"]), ANY, &["--radio", "5g"]),
        case(
            &link(&["--radio", "3g:dch_tail=abc"]),
            ANY,
            &["--radio", "abc"],
        ),
        case(&link(&["--profile", "nosuch"]), ANY, &["nosuch", "profile"]),
        case(&link(&["--server-addrs", "0"]), ANY, &["--server-addrs"]),
        case(&link(&["--seed", "x"]), ANY, &["--seed", "'x'"]),
        case(&["link", "--bench", "x"], ANY, &["--bench", "'x'"]),
        case(
            &link(&["--down", "1mbit", "--down-trace", "regular"]),
            ANY,
            &["--down", "--down-trace"],
        ),
        // bench
        case(
            &["bench", "example.com/"],
            BAD,
            &["example.com/", "absolute URL"],
        ),
        case(&["bench", "ftp://127.0.0.1/"], BAD, &["ftp://127.0.0.1/"]),
        case(
            &["bench", "http://127.0.0.1:99999/"],
            BAD,
            &["99999", "port"],
        ),
        case(&["bench", "http:///x"], BAD, &["no host"]),
        case(&bench(&["-c", "0", "-n", "5"]), BAD, &["-c"]),
        case(&bench(&["-m", "0", "-n", "5"]), BAD, &["-m"]),
        case(&bench(&["-n", "0"]), BAD, &["-n 0"]),
        case(&bench(&["-n", "-1"]), BAD, &["'-1'"]),
        case(&bench(&["-n", "abc"]), BAD, &["--requests", "abc"]),
        case(
            &bench(&["-c", "99999999999999999999"]),
            BAD,
            &["99999999999999999999"],
        ),
        case(&bench(&["-D", "5h"]), BAD, &["5h"]),
        case(&bench(&["-D", "abc"]), BAD, &["abc"]),
        case(&bench(&["-D", "-1s"]), BAD, &["'-1'"]),
        case(&bench(&["--warmup", "abc", "-n", "5"]), BAD, &["abc"]),
        case(
            &bench(&["--protocol", "quic", "-n", "5"]),
            BAD,
            &["--protocol", "quic"],
        ),
        case(&bench(&["--idle", "2", "--hold", "abc"]), BAD, &["abc"]),
        case(
            &bench(&["-n", "5", "-D", "1s"]),
            BAD,
            &["--requests", "--duration"],
        ),
        // lab
        case(&["lab", "good.toml", "--lanes", "0"], ANY, &["--lanes 0"]),
        case(
            &["lab", "good.toml", "--lanes", "lots"],
            ANY,
            &["--lanes lots"],
        ),
        case(
            &["lab", "good.toml", "--shard", "3/2"],
            ANY,
            &["--shard 3/2"],
        ),
        case(
            &["lab", "good.toml", "--shard", "0/0"],
            ANY,
            &["--shard 0/0"],
        ),
        case(
            &["lab", "good.toml", "--shard", "1"],
            ANY,
            &["--shard 1", "I/N"],
        ),
        case(&["lab", "good.toml", "--shard", "a/b"], ANY, &["--shard"]),
        case(&["lab", "good.toml", "--runs", "0"], ANY, &["--runs"]),
        case(&["lab", "good.toml", "--runs", "-1"], ANY, &["'-1'"]),
        case(&["lab", "good.toml", "--pages", "0"], ANY, &["--pages"]),
        case(
            &["lab", "validate", "good.toml", "--runs", "0"],
            ANY,
            &["--runs"],
        ),
        case(&["lab", "list", "extra"], ANY, &["extra"]),
        case(&["lab", "merge", "--out", "m6"], ANY, &["<DIR>"]),
        // load
        case(&["load", "example.com/"], BAD, &["example.com/"]),
        case(&["load", "ftp://127.0.0.1/"], BAD, &["ftp://127.0.0.1/"]),
        case(
            &load(&["--protocol", "gopher"]),
            BAD,
            &["--protocol", "gopher"],
        ),
        case(
            &load(&["--spdy-domains", "both"]),
            BAD,
            &["--spdy-domains", "both"],
        ),
        case(&load(&["--tls", "--plain"]), BAD, &["--tls", "--plain"]),
        case(
            &load(&["--resolve", "foo"]),
            BAD,
            &["--resolve", "foo", "HOST=IP"],
        ),
        case(&load(&["--resolve", "foo=bar"]), BAD, &["--resolve", "bar"]),
        case(
            &load(&["--proxy", "ftp://1.2.3.4"]),
            BAD,
            &["--proxy", "ftp://1.2.3.4"],
        ),
        case(
            &load(&["--proxy", "127.0.0.1:3128"]),
            BAD,
            &["--proxy", "127.0.0.1:3128"],
        ),
        case(&load(&["--dns-cost", "5h"]), BAD, &["--dns-cost 5h"]),
        case(&load(&["--rtt-ms", "abc"]), BAD, &["--rtt-ms", "abc"]),
        case(
            &load(&["--connections-per-host", "0"]),
            BAD,
            &["--connections-per-host"],
        ),
        case(&load(&["--sessions", "0"]), BAD, &["--sessions"]),
        case(&load(&["--pipeline", "0"]), BAD, &["--pipeline"]),
        case(
            &load(&["--tls-hello", "firefox"]),
            BAD,
            &["--tls-hello", "firefox"],
        ),
        case(
            &load(&["--priorities", "image=9"]),
            BAD,
            &["--priorities image=9"],
        ),
        case(
            &load(&["--priorities", "bogus"]),
            BAD,
            &["--priorities bogus"],
        ),
        case(&load(&["--script-ms-per-kb", "-1"]), BAD, &["'-1'"]),
        case(&load(&["--timeout", "0"]), BAD, &["--timeout 0"]),
        case(&load(&["--timeout", "abc"]), BAD, &["--timeout", "abc"]),
        case(
            &load(&["--header-compression", "gzip"]),
            BAD,
            &["--header-compression", "gzip"],
        ),
        case(&load(&["--think-ms", "abc"]), BAD, &["--think-ms", "abc"]),
        case(&load(&["--keepalive-ms", "100"]), BAD, &["--then"]),
        case(&load(&["--then", "ftp://x/"]), BAD, &["ftp://x/"]),
        // corpus synth: nothing written
        case(&synth("s1", &["--pages", "0"]), ANY, &["--pages 0"]).leaves_no("s1"),
        case(&synth("s2", &["--pages", "-3"]), ANY, &["'-3'"]).leaves_no("s2"),
        case(&synth("s3", &["--pages", "abc"]), ANY, &["--pages", "abc"]).leaves_no("s3"),
        case(
            &synth("s4", &["--pages", "99999999999999999999"]),
            ANY,
            &["--pages"],
        )
        .leaves_no("s4"),
        case(&synth("s5", &["--seed", "x"]), ANY, &["--seed", "'x'"]).leaves_no("s5"),
        case(
            &synth("s6", &["--calibration", "web-1999"]),
            ANY,
            &["--calibration", "web-1999"],
        )
        .leaves_no("s6"),
        case(&["corpus", "synth", "--pages", "1"], ANY, &["--out"]),
        case(&["corpus", "import", "good.har"], ANY, &["--out"]),
        case(&["corpus", "export-har", "corpus"], ANY, &["--out"]),
        // completions, man, the program
        case(&["completions", "powershell"], ANY, &["powershell"]),
        case(&["completions"], ANY, &["<SHELL>"]),
        case(&["completions", "bash", "extra"], ANY, &["extra"]),
        case(&["man", "extra"], ANY, &["extra"]),
        case(&["man", "--out-dir", ""], ANY, &["--out-dir"]),
        case(&["bogus"], ANY, &["bogus"]),
    ]
}

/// `--listen` with a bad port, a host that does not parse, a port in use; connecting to a
/// closed port; TLS to a plain port.
fn bad_port_cases(fx: &Fx) -> Vec<Case> {
    let busy = fx.busy_addr();
    let busy = busy.as_str();
    let busy_port = busy.rsplit(':').next().unwrap();
    let busy_pf = format!("{busy_port}:80");
    let p = fx.plain_url();
    let p = p.as_str();
    let https_to_plain = format!("https://{}/index.html", fx.plain.addr);
    let https_to_plain = https_to_plain.as_str();
    let serve = |listen: &str| {
        vec![
            "serve".to_string(),
            "--root".into(),
            "site".into(),
            "--listen".into(),
            listen.into(),
        ]
    };
    let s = |v: Vec<String>| v;
    let c = |args: Vec<String>, code, names: &[&str]| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        case(&a, code, names)
    };
    let _ = s;
    vec![
        c(
            serve("127.0.0.1:99999"),
            ANY,
            &["--listen 127.0.0.1:99999", "port"],
        ),
        c(
            serve("127.0.0.1:http"),
            ANY,
            &["--listen 127.0.0.1:http", "port"],
        ),
        c(serve("127.0.0.1"), ANY, &["--listen 127.0.0.1"]),
        c(serve("[zz]:80"), ANY, &["--listen [zz]:80"]),
        c(serve(""), ANY, &["--listen"]),
        c(serve(busy), ANY, &["--listen", busy, "in use"]),
        case(
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--archive",
                "corpus",
                "--bind-origins",
                "192.0.2.1",
            ],
            ANY,
            &["192.0.2.1"],
        ),
        case(
            &["proxy", "--listen", "127.0.0.1:99999"],
            ANY,
            &["--listen 127.0.0.1:99999", "port"],
        ),
        case(&["proxy", "--listen", "nohost"], ANY, &["--listen nohost"]),
        case(
            &["proxy", "--listen", "[zz]:80"],
            ANY,
            &["--listen [zz]:80"],
        ),
        case(
            &["proxy", "--listen", busy],
            ANY,
            &["--listen", busy, "in use"],
        ),
        case(
            &["kube", "port-forward", "http://127.0.0.1:1/pf", &busy_pf],
            ANY,
            &[busy, "in use"],
        ),
        // Closed ports: fetch says it in its JSON line (stdout), the others on stderr.
        case(
            &["fetch", "http://127.0.0.1:1/"],
            FAILED,
            &["127.0.0.1:1", "refused"],
        )
        .on_stdout(),
        case(
            &["fetch", "https://127.0.0.1:1/"],
            FAILED,
            &["127.0.0.1:1", "refused"],
        )
        .on_stdout(),
        case(
            &[
                "fetch",
                "http://x.example/",
                "--resolve",
                "x.example=127.0.0.1:1",
            ],
            FAILED,
            &["x.example", "refused"],
        )
        .on_stdout(),
        case(
            &["load", "http://127.0.0.1:1/"],
            FAILED,
            &["127.0.0.1:1", "refused"],
        ),
        case(
            &["load", p, "--proxy", "http://127.0.0.1:1"],
            FAILED,
            &["127.0.0.1:1", "refused"],
        ),
        case(
            &["bench", "http://127.0.0.1:1/", "-n", "5"],
            BAD,
            &["127.0.0.1:1", "refused"],
        ),
        case(
            &["kube", "exec", "http://127.0.0.1:1/exec"],
            FAILED,
            &["127.0.0.1:1", "refused"],
        ),
        case(
            &["kube", "port-forward", "http://127.0.0.1:1/pf", "0:80"],
            ANY,
            &["127.0.0.1:1", "refused"],
        ),
        // TLS to a plain port.
        case(&["fetch", https_to_plain], FAILED, &["did not answer TLS"]).on_stdout(),
        case(&["load", https_to_plain], FAILED, &["did not answer TLS"]),
        case(
            &["bench", https_to_plain, "-n", "2", "--warmup", "0s"],
            BAD,
            &["did not answer TLS"],
        ),
    ]
}

/// CA files that are not PEM, hold no certificate or are missing; serve's and proxy's
/// certificate and key options; a server certificate no one trusts.
fn bad_certificate_cases(fx: &Fx) -> Vec<Case> {
    let t = fx.tls_url();
    let t = t.as_str();
    let p = fx.plain_url();
    let p = p.as_str();
    let root = fx.corpus_root();
    let resolve = format!("*={}", fx.plain.addr);
    let serve = |extra: &[&str]| {
        [
            &["serve", "--listen", "127.0.0.1:0", "--root", "site"][..],
            extra,
        ]
        .concat()
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<String>>()
    };
    let proxy = |extra: &[&str]| {
        [&["proxy", "--listen", "127.0.0.1:0"][..], extra]
            .concat()
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<String>>()
    };
    let (cert, key) = ("ca-a/ca.pem", "ca-a/ca-key.pem");
    let mut cases = Vec::new();
    // The client's CA file, in each client.
    for (cmd, code, extra) in [
        ("fetch", BAD, &[][..]),
        ("load", BAD, &[][..]),
        ("bench", BAD, &["-n", "2", "--warmup", "0s"][..]),
    ] {
        let with = |ca: &str| {
            [&[cmd, p, "--cacert", ca][..], extra]
                .concat()
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<String>>()
        };
        cases.push(case(
            &with("random.bin"),
            code,
            &["CA file random.bin", "no certificate"],
        ));
        cases.push(case(
            &with(key),
            code,
            &["CA file ca-a/ca-key.pem", "no certificate"],
        ));
        cases.push(case(
            &with("empty.txt"),
            code,
            &["CA file empty.txt", "no certificate"],
        ));
        cases.push(case(
            &with("missing.pem"),
            code,
            &["CA file missing.pem", "No such file"],
        ));
    }
    cases.extend([
        case(&["fetch", p, "--cacert", "adir"], BAD, &["CA file adir"]),
        case(&["fetch", p, "--cacert", "loop1"], BAD, &["CA file loop1"]),
        case(
            &["load", p, "--cacert", "/proc/self/mem"],
            BAD,
            &["CA file /proc/self/mem"],
        ),
        case(
            &proxy(&["--cacert", "random.bin"]),
            ANY,
            &["CA file random.bin", "no certificate"],
        ),
        case(
            &proxy(&["--cacert", "missing.pem"]),
            ANY,
            &["CA file missing.pem"],
        ),
        // The archive's own lab CA holds no certificate.
        case(
            &["load", &root, "--archive", "badca", "--resolve", &resolve],
            BAD,
            &["badca/lab-ca/ca.pem", "no certificate"],
        ),
        // A certificate signed by no trusted CA (self-signed), and by another CA.
        case(&["fetch", t], FAILED, &["not signed by a trusted CA"]).on_stdout(),
        case(&["load", t], FAILED, &["not signed by a trusted CA"]),
        case(
            &["bench", t, "-n", "2", "--warmup", "0s"],
            BAD,
            &["not signed by a trusted CA"],
        ),
        case(
            &["fetch", t, "--cacert", cert],
            FAILED,
            &["not signed by a trusted CA"],
        )
        .on_stdout(),
        case(
            &["load", t, "--cacert", cert],
            FAILED,
            &["not signed by a trusted CA"],
        ),
        case(
            &["bench", t, "--cacert", cert, "-n", "2", "--warmup", "0s"],
            BAD,
            &["not signed by a trusted CA"],
        ),
        // serve's certificate and key.
        case(&serve(&["--tls-cert", cert]), ANY, &["--tls-key"]),
        case(&serve(&["--tls-key", key]), ANY, &["--tls-cert"]),
        case(
            &serve(&["--tls-cert", "random.bin", "--tls-key", key]),
            ANY,
            &["random.bin", "no PEM certificate"],
        ),
        case(
            &serve(&["--tls-cert", key, "--tls-key", key]),
            ANY,
            &["ca-a/ca-key.pem", "no PEM certificate"],
        ),
        case(
            &serve(&["--tls-cert", cert, "--tls-key", "random.bin"]),
            ANY,
            &["random.bin", "no PEM private key"],
        ),
        case(
            &serve(&["--tls-cert", cert, "--tls-key", cert]),
            ANY,
            &["ca-a/ca.pem", "no PEM private key"],
        ),
        case(
            &serve(&["--tls-cert", cert, "--tls-key", "empty.txt"]),
            ANY,
            &["empty.txt", "no PEM private key"],
        ),
        case(
            &serve(&["--tls-cert", "missing.pem", "--tls-key", key]),
            ANY,
            &["missing.pem", "No such file"],
        ),
        case(
            &serve(&["--tls-cert", cert, "--tls-key", "missing.pem"]),
            ANY,
            &["missing.pem", "No such file"],
        ),
        case(
            &serve(&["--tls-cert", "adir", "--tls-key", key]),
            ANY,
            &["adir", "directory"],
        ),
        // proxy's.
        case(&proxy(&["--tls-cert", cert]), ANY, &["--tls-key"]),
        case(
            &proxy(&["--tls-cert", "random.bin", "--tls-key", key]),
            ANY,
            &["random.bin", "no PEM certificate"],
        ),
        case(
            &proxy(&["--tls-cert", cert, "--tls-key", "random.bin"]),
            ANY,
            &["random.bin", "no PEM private key"],
        ),
        case(
            &proxy(&["--tls-cert", cert, "--tls-key", "missing.pem"]),
            ANY,
            &["missing.pem"],
        ),
    ]);
    cases
}

#[test]
fn bad_files_are_named() {
    let fx = Fx::new("bad-files");
    run_table(&fx.dir, "bad files", &bad_file_cases(&fx));
}

#[test]
fn bad_values_are_named() {
    let fx = Fx::new("bad-values");
    run_table(&fx.dir, "bad values", &bad_value_cases(&fx));
}

#[test]
fn bad_ports_and_addresses_are_named() {
    let fx = Fx::new("bad-ports");
    run_table(&fx.dir, "bad ports and addresses", &bad_port_cases(&fx));
}

#[test]
fn bad_certificates_are_named() {
    let fx = Fx::new("bad-certs");
    run_table(&fx.dir, "bad certificates", &bad_certificate_cases(&fx));
}

#[test]
fn the_table_covers_every_subcommand_and_issue_18s_104_inputs() {
    let fx = Fx::new("bad-coverage");
    let all: Vec<Case> = [
        bad_file_cases(&fx),
        bad_value_cases(&fx),
        bad_port_cases(&fx),
        bad_certificate_cases(&fx),
        unclear_cases(&fx),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert!(all.len() >= 104, "{} cases", all.len());
    let starts = |words: &[&str]| {
        all.iter()
            .any(|c| c.args.len() >= words.len() && c.args[..words.len()] == *words)
    };
    for cmd in [
        &["serve"][..],
        &["fetch"],
        &["proxy"],
        &["kube", "exec"],
        &["kube", "port-forward"],
        &["link"],
        &["bench"],
        &["lab", "good.toml"],
        &["lab", "list"],
        &["lab", "merge"],
        &["lab", "report"],
        &["lab", "validate"],
        &["load"],
        &["corpus", "synth"],
        &["corpus", "import"],
        &["corpus", "export-har"],
        &["completions"],
        &["man"],
    ] {
        assert!(
            starts(cmd),
            "no bad-input case for speedy {}",
            cmd.join(" ")
        );
    }
}

// ---------------------------------------------------------------------------------------
// Messages not clear yet (issue 18): what each must say once fixed.

/// The cases whose answer is not clear yet; each holds what a clear answer must be.
fn unclear_cases(fx: &Fx) -> Vec<Case> {
    let p = fx.plain_url();
    let p = p.as_str();
    let serve = |extra: &[&str]| {
        [
            &["serve", "--listen", "127.0.0.1:0", "--root", "site"][..],
            extra,
        ]
        .concat()
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<String>>()
    };
    let proxy = |extra: &[&str]| {
        [&["proxy", "--listen", "127.0.0.1:0"][..], extra]
            .concat()
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<String>>()
    };
    vec![
        // Bad values accepted: the program runs (or exits 0) instead of refusing them.
        case(&serve(&["--push", "bogus"]), ANY, &["--push", "bogus"]).within(HANG),
        case(
            &serve(&["--max-connections", "0"]),
            ANY,
            &["--max-connections 0"],
        )
        .within(HANG),
        case(
            &serve(&["--tcp-series", "t.jsonl", "--tcp-interval-ms", "0"]),
            ANY,
            &["--tcp-interval-ms 0"],
        )
        .within(HANG),
        case(&proxy(&["--timeout", "0"]), ANY, &["--timeout 0"]).within(HANG),
        case(
            &proxy(&["--tcp-series", "t.jsonl", "--tcp-interval-ms", "0"]),
            ANY,
            &["--tcp-interval-ms 0"],
        )
        .within(HANG),
        case(&["fetch", p, "-H", ": x"], BAD, &["--header", ": x"]),
        case(&["fetch", p, "-H", "a b: x"], BAD, &["--header", "a b: x"]),
        case(
            &["fetch", p, "--resolve", "=127.0.0.1"],
            BAD,
            &["--resolve", "=127.0.0.1"],
        ),
        case(
            &["load", p, "--resolve", "=127.0.0.1"],
            BAD,
            &["--resolve", "=127.0.0.1"],
        ),
        case(&["bench", p, "-D", "0s"], BAD, &["-D 0s"]),
        case(&["bench", p, "-t", "0", "-n", "5"], BAD, &["-t 0"]),
        case(&["bench", p, "--idle", "0"], BAD, &["--idle 0"]).within(HANG),
        case(
            &["bench", p, "-c", "1000000", "-n", "5"],
            BAD,
            &["-c 1000000"],
        )
        .within(HANG),
        // A file that is neither a HAR nor a prefetch store is overwritten, exit 0.
        case(
            &["load", p, "--prefetch", "nothar.har"],
            BAD,
            &["--prefetch", "nothar.har"],
        ),
        // An empty results file gives an empty report, exit 0.
        case(
            &["lab", "report", "emptyres"],
            ANY,
            &["emptyres/results.jsonl"],
        )
        .leaves_no("emptyres/report.html"),
        // Bad URLs that load calls "not an absolute http(s) URL".
        case(
            &["load", "http://127.0.0.1:99999/"],
            BAD,
            &["99999", "port"],
        ),
        case(&["load", "http:///x"], BAD, &["http:///x", "host"]),
        // Wrong reasons or wrong names.
        case(
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--archive",
                "corpus",
                "--ca-dir",
                "regular",
            ],
            ANY,
            &["--ca-dir regular", "not a directory"],
        ),
        case(
            &proxy(&["--tls-ca-dir", "regular"]),
            ANY,
            &["--tls-ca-dir regular", "not a directory"],
        ),
        case(
            &["fetch", p, "-O", "regular"],
            BAD,
            &["-O regular", "not a directory"],
        ),
        case(
            &["man", "--out-dir", "regular"],
            ANY,
            &["--out-dir regular", "not a directory"],
        ),
        case(
            &["lab", "merge", "--out", "m2", "adir"],
            ANY,
            &["adir", "results"],
        )
        .leaves_no("m2"),
        case(
            &["lab", "merge", "--out", "m7", "emptyres"],
            ANY,
            &["emptyres"],
        )
        .leaves_no("m7"),
        case(
            &["lab", "merge", "--out", "merged", "missing"],
            ANY,
            &["missing"],
        )
        .leaves_no("merged"),
        case(
            &["kube", "exec", "http://127.0.0.1:1/exec", "--stdin", "adir"],
            BAD,
            &["--stdin adir"],
        ),
        // Refused before anything is fetched.
        case(&["fetch", p, "-o", "regular/x"], BAD, &["regular/x"]),
        // Too long: the first line lists every field.
        case(&["lab", "varkey.toml"], ANY, &["varkey.toml", "colour"]),
        // Rust debug output for certificates: a key that does not match, a CA certificate
        // used as a server's, a certificate for another name.
        case(
            &serve(&["--tls-cert", "ca-a/ca.pem", "--tls-key", "ca-b/ca-key.pem"]),
            ANY,
            &["--tls-key", "ca-b/ca-key.pem"],
        ),
        case(
            &proxy(&["--tls-cert", "ca-a/ca.pem", "--tls-key", "ca-b/ca-key.pem"]),
            ANY,
            &["--tls-key", "ca-b/ca-key.pem"],
        ),
    ]
}

#[test]
fn inputs_that_once_had_unclear_messages_are_named() {
    let fx = Fx::new("bad-unclear");
    make_ca(&fx.dir, "ca-b");
    let mut cases = unclear_cases(&fx);
    // Certificates a client refuses with Rust debug output.
    let dir = &fx.dir;
    let ca_leaf = Server::start(&[
        "--root",
        dir.join("site").to_str().unwrap(),
        "--tls-cert",
        dir.join("ca-a/ca.pem").to_str().unwrap(),
        "--tls-key",
        dir.join("ca-a/ca-key.pem").to_str().unwrap(),
    ]);
    let archive = Server::start(&[
        "--archive",
        dir.join("corpus").to_str().unwrap(),
        "--ca-dir",
        dir.join("ca-a").to_str().unwrap(),
        "--no-think-time",
    ]);
    let port = ca_leaf.addr.rsplit(':').next().unwrap();
    let leaf_url = format!("https://localhost:{port}/index.html");
    let host = format!("localhost:{port}");
    let wrong = format!("wrong.example={}", archive.addr);
    cases.extend([
        case(
            &["fetch", &leaf_url, "--cacert", "ca-a/ca.pem"],
            FAILED,
            &[&host, "CA"],
        )
        .on_stdout(),
        case(
            &["load", &leaf_url, "--cacert", "ca-a/ca.pem"],
            FAILED,
            &[&host, "CA"],
        ),
        case(
            &[
                "bench",
                &leaf_url,
                "--cacert",
                "ca-a/ca.pem",
                "-n",
                "2",
                "--warmup",
                "0s",
            ],
            BAD,
            &[&host, "CA"],
        ),
        case(
            &[
                "fetch",
                "https://wrong.example/",
                "--resolve",
                &wrong,
                "--cacert",
                "ca-a/ca.pem",
            ],
            FAILED,
            &["wrong.example"],
        )
        .on_stdout(),
        case(
            &[
                "load",
                "https://wrong.example/",
                "--resolve",
                &wrong,
                "--cacert",
                "ca-a/ca.pem",
            ],
            FAILED,
            &["wrong.example"],
        ),
    ]);
    run_table(dir, "unclear messages", &cases);
}
