//! The interop harness: one matrix of cases run between speedy and an independent SPDY
//! peer, in either direction.
//!
//! Every peer program speaks one command-line contract (the node-spdy peers'
//! `interop/client.js` and `interop/server.js` define it): a server prints
//! `listening on IP:PORT` and serves `--root` (GET files, POST echo, `--reset-path` reset
//! with RST_STREAM CANCEL, `--push PAGE=P` pushes); a client fetches its URL arguments over
//! one session and prints one JSON line per response (`url`, `status`, `bytes`, `sha256`,
//! `pushed`) or failure (`url`, `error`). The cases:
//!
//! * one small file,
//! * a 5 MiB file of random bytes,
//! * 200 files with 100 streams in flight (`--concurrency 100`),
//! * a 1 MiB POST echoed back,
//! * a server push (reported with `"pushed":true` and the right hash),
//! * a stream reset by the server (an error for that URL while the other URLs
//!   on the same session succeed).
//!
//! Bodies are checked by length and SHA-256 against the files, computed here. A peer
//! that is not installed fails the test with the command that installs it (the test
//! command runs them all). Every child process is bounded in time and killed (by its
//! own handle) when it overruns or when the test ends. Everything listens on 127.0.0.1.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use sha2::{Digest, Sha256};

/// How long a server may take to print its `listening on` line.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long one client run may take before it is killed.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);
/// The node client's own deadline (it reports unfinished requests itself).
const NODE_CLIENT_TIMEOUT_SECS: &str = "50";
/// The verbose re-run of a failed case only needs to show where it stalls.
const VERBOSE_RERUN_TIMEOUT: Duration = Duration::from_secs(15);

const BIG_LEN: usize = 5 * 1024 * 1024;
const POST_LEN: usize = 1024 * 1024;
const MANY_FILES: usize = 200;
const MANY_CONCURRENCY: usize = 100;
const PUSH_PAGE: &str = "/pushed-page.html";
const PUSHED: &str = "/push.css";
const RESET_PATH: &str = "/reset";

// ---------------------------------------------------------------------------
// Matrix
// ---------------------------------------------------------------------------

/// Plain TCP (prior knowledge) or TLS (ALPN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Plain,
    Tls,
}

impl Transport {
    fn scheme(self) -> &'static str {
        match self {
            Transport::Plain => "http",
            Transport::Tls => "https",
        }
    }
    fn name(self) -> &'static str {
        match self {
            Transport::Plain => "plain",
            Transport::Tls => "tls",
        }
    }
}

/// The SPDY version both ends are told to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V31,
    V3,
    V2,
}

impl Version {
    fn proto(self) -> &'static str {
        match self {
            Version::V31 => "spdy/3.1",
            Version::V3 => "spdy/3",
            Version::V2 => "spdy/2",
        }
    }
}

/// One end of a combination: speedy or an independent peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// `speedy serve` / `speedy fetch`.
    Speedy,
    /// node-spdy (npm `spdy`), `interop/server.js` and `client.js`.
    Node,
    /// Netty's SPDY codec (Maven `io.netty:netty-codec-http`), `interop/netty`.
    Netty,
    /// moby/spdystream, the multiplexer under Kubernetes, `interop/go`.
    Spdystream,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Node => "node-spdy",
            Side::Speedy => "speedy",
            Side::Netty => "netty",
            Side::Spdystream => "spdystream",
        }
    }

    /// The peer program and its leading arguments (the node-spdy contract follows).
    fn peer(self, role: &str) -> Command {
        match self {
            Side::Node => {
                let mut c = Command::new("node");
                c.arg(interop_dir().join(format!("{role}.js")));
                c
            }
            Side::Netty => {
                let mut c = Command::new("java");
                c.arg("-jar").arg(netty_jar()).arg(role);
                c
            }
            Side::Spdystream => {
                let mut c = Command::new(spdystream_bin());
                c.arg(role);
                c
            }
            Side::Speedy => unreachable!("speedy is driven through its own CLI"),
        }
    }

    /// Fails (never skips) when the peer is not installed.
    fn require(self) {
        match self {
            Side::Speedy => {}
            Side::Node => require_node_setup(),
            Side::Netty => require_file(
                &netty_jar(),
                "mvn -q -f interop/netty/pom.xml package -DskipTests",
            ),
            Side::Spdystream => require_file(
                &spdystream_bin(),
                "cd interop/go && go build -o bin/ ./cmd/...",
            ),
        }
    }
}

fn netty_jar() -> PathBuf {
    interop_dir().join("netty/target/netty-peer.jar")
}

fn spdystream_bin() -> PathBuf {
    interop_dir().join("go/bin/spdystream-peer")
}

fn require_file(path: &Path, build: &str) {
    if !path.is_file() {
        panic!(
            "{} is missing: build it in the repository root with `{build}` \
             (the test command does this)",
            path.display()
        );
    }
}

// ---------------------------------------------------------------------------
// Paths, temp dirs, fixtures
// ---------------------------------------------------------------------------

pub fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop")
}

/// Fails (never skips) when the node side is not installed.
pub fn require_node_setup() {
    let dir = interop_dir();
    let spdy = dir.join("node_modules/spdy/package.json");
    let transport = dir.join("node_modules/spdy-transport/package.json");
    if !spdy.is_file() || !transport.is_file() {
        panic!(
            "node-spdy is not installed: {} is missing.\n\
             Run `npm ci --prefix interop` in the repository root first \
             (the test command does this).",
            dir.join("node_modules").display()
        );
    }
    match Command::new("node").arg("--version").output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "`node --version` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!("cannot run `node` (Node.js 18+ must be on PATH): {e}"),
    }
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "speedy-interop-{tag}-{}-{nanos}-{n}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// xorshift64*: deterministic "random" bytes without another dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len + 8);
        while v.len() < len {
            v.extend_from_slice(&self.next().to_le_bytes());
        }
        v.truncate(len);
        v
    }
}

pub fn sha256_hex(data: &[u8]) -> String {
    let digest = Sha256::digest(data);
    let mut s = String::with_capacity(64);
    for b in digest {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[derive(Clone, Debug)]
struct Expect {
    len: u64,
    sha256: String,
}

struct Fixture {
    /// Removed on drop.
    _dir: TempDir,
    root: PathBuf,
    post_file: PathBuf,
    post: Expect,
    push_map: PathBuf,
    /// URL path -> expected body.
    files: HashMap<String, Expect>,
    many: Vec<String>,
}

impl Fixture {
    fn new(tag: &str, seed: u64) -> Fixture {
        let dir = TempDir::new(tag);
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        let mut rng = Rng(seed | 1);
        let mut files = HashMap::new();
        let mut put = |name: &str, data: Vec<u8>| {
            std::fs::write(root.join(name), &data).unwrap();
            files.insert(
                format!("/{name}"),
                Expect {
                    len: data.len() as u64,
                    sha256: sha256_hex(&data),
                },
            );
        };
        put(
            "small.txt",
            b"hello from the speedy interop test\n".to_vec(),
        );
        put("big.bin", rng.bytes(BIG_LEN));
        put(
            "pushed-page.html",
            b"<!doctype html><link rel=stylesheet href=/push.css><p>pushed page</p>\n".to_vec(),
        );
        put(
            "push.css",
            b"body { color: #123456; }\n/* pushed by the server */\n".to_vec(),
        );
        let mut many = Vec::new();
        for i in 0..MANY_FILES {
            let name = format!("f{i:03}.bin");
            let len = 64 + (rng.next() % 6000) as usize;
            put(&name, rng.bytes(len));
            many.push(format!("/{name}"));
        }
        let post_data = rng.bytes(POST_LEN);
        let post_file = dir.path().join("post.bin");
        std::fs::write(&post_file, &post_data).unwrap();
        let post = Expect {
            len: post_data.len() as u64,
            sha256: sha256_hex(&post_data),
        };
        let push_map = dir.path().join("push-map.txt");
        std::fs::write(&push_map, format!("{PUSH_PAGE}: {PUSHED}\n")).unwrap();
        Fixture {
            _dir: dir,
            root,
            post_file,
            post,
            push_map,
            files,
            many,
        }
    }

    fn expect(&self, path: &str) -> &Expect {
        self.files
            .get(path)
            .unwrap_or_else(|| panic!("no fixture file {path}"))
    }
}

// ---------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------

fn spawn_reader<R: Read + Send + 'static>(
    r: R,
    buf: Arc<Mutex<Vec<u8>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut r = r;
        let mut chunk = [0u8; 8192];
        loop {
            match r.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => buf.lock().unwrap().extend_from_slice(&chunk[..n]),
            }
        }
    })
}

fn describe_cmd(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        let a = a.to_string_lossy();
        if a.contains(' ') {
            let _ = write!(s, " '{a}'");
        } else {
            let _ = write!(s, " {a}");
        }
    }
    s
}

/// A long-running server child; killed (by its own handle) on drop.
struct Server {
    child: Child,
    addr: SocketAddr,
    /// stderr, plus stdout after the first line.
    log: Arc<Mutex<Vec<u8>>>,
    cmdline: String,
}

impl Server {
    fn start(mut cmd: Command) -> Result<Server, String> {
        let cmdline = describe_cmd(&cmd);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start `{cmdline}`: {e}"))?;
        let log = Arc::new(Mutex::new(Vec::new()));
        spawn_reader(child.stderr.take().unwrap(), log.clone());
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel::<String>();
        let log2 = log.clone();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout);
            let mut first = String::new();
            if lines.read_line(&mut first).unwrap_or(0) > 0 {
                let _ = tx.send(first);
            }
            drop(tx);
            let mut chunk = [0u8; 8192];
            loop {
                match lines.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => log2.lock().unwrap().extend_from_slice(&chunk[..n]),
                }
            }
        });
        let first = rx.recv_timeout(SERVER_START_TIMEOUT);
        let fail = |child: &mut Child, why: String| {
            let _ = child.kill();
            let _ = child.wait();
            std::thread::sleep(Duration::from_millis(50));
            let l = String::from_utf8_lossy(&log.lock().unwrap()).into_owned();
            Err(format!(
                "server `{cmdline}` {why}\n--- server output ---\n{}",
                tail(&l, 60)
            ))
        };
        let line = match first {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return fail(
                    &mut child,
                    format!("printed no line within {SERVER_START_TIMEOUT:?}"),
                )
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = child.try_wait().ok().flatten();
                return fail(
                    &mut child,
                    format!("exited before listening (status {status:?})"),
                );
            }
        };
        match parse_listening(&line) {
            Some(addr) => Ok(Server {
                child,
                addr,
                log,
                cmdline,
            }),
            None => fail(
                &mut child,
                format!("printed {line:?}, not `listening on IP:PORT`"),
            ),
        }
    }

    fn alive(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(st)) => Err(format!("server `{}` has exited ({st})", self.cmdline)),
            Err(e) => Err(format!("server `{}`: {e}", self.cmdline)),
        }
    }

    fn log_len(&self) -> usize {
        self.log.lock().unwrap().len()
    }

    fn log_since(&self, from: usize) -> String {
        let l = self.log.lock().unwrap();
        String::from_utf8_lossy(&l[from.min(l.len())..]).into_owned()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `listening on IP:PORT`, possibly followed by ` (…)`.
fn parse_listening(line: &str) -> Option<SocketAddr> {
    let rest = line.trim().strip_prefix("listening on ")?;
    let token = rest.split_whitespace().next()?;
    token.parse().ok()
}

struct RunOutput {
    cmdline: String,
    status: Option<ExitStatus>,
    stdout: String,
    stderr: String,
    timed_out: bool,
    elapsed: Duration,
}

impl RunOutput {
    fn success(&self) -> bool {
        !self.timed_out && self.status.map(|s| s.success()).unwrap_or(false)
    }
    fn describe(&self) -> String {
        format!(
            "command: {}\nexit: {}{} after {:.1} s\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.cmdline,
            self.status
                .map(|s| s.to_string())
                .unwrap_or_else(|| "none".into()),
            if self.timed_out {
                " (KILLED: timeout)"
            } else {
                ""
            },
            self.elapsed.as_secs_f64(),
            head(&self.stdout, 30),
            tail(&self.stderr, 40)
        )
    }
}

/// Runs a child to completion, killing it after `timeout`.
fn run_bounded(mut cmd: Command, timeout: Duration) -> RunOutput {
    let cmdline = describe_cmd(&cmd);
    let start = Instant::now();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return RunOutput {
                cmdline,
                status: None,
                stdout: String::new(),
                stderr: format!("cannot start: {e}"),
                timed_out: false,
                elapsed: start.elapsed(),
            }
        }
    };
    let out = Arc::new(Mutex::new(Vec::new()));
    let err = Arc::new(Mutex::new(Vec::new()));
    let t1 = spawn_reader(child.stdout.take().unwrap(), out.clone());
    let t2 = spawn_reader(child.stderr.take().unwrap(), err.clone());
    let deadline = start + timeout;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) => {}
            Err(_) => break None,
        }
        if Instant::now() >= deadline {
            timed_out = true;
            let _ = child.kill();
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = t1.join();
    let _ = t2.join();
    let stdout = String::from_utf8_lossy(&out.lock().unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&err.lock().unwrap()).into_owned();
    RunOutput {
        cmdline,
        status,
        stdout,
        stderr,
        timed_out,
        elapsed: start.elapsed(),
    }
}

fn head(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    if lines.len() <= n {
        return s.to_string();
    }
    format!(
        "{}\n… ({} more lines)",
        lines[..n].join("\n"),
        lines.len() - n
    )
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    if lines.len() <= n {
        return s.to_string();
    }
    format!(
        "… ({} lines before)\n{}",
        lines.len() - n,
        lines[lines.len() - n..].join("\n")
    )
}

// ---------------------------------------------------------------------------
// Servers and clients of both kinds
// ---------------------------------------------------------------------------

fn start_server(
    side: Side,
    transport: Transport,
    version: Version,
    fx: &Fixture,
) -> Result<Server, String> {
    let cmd = match side {
        Side::Speedy => {
            let mut c = Command::new(env!("CARGO_BIN_EXE_speedy"));
            c.arg("serve")
                .args(["--listen", "127.0.0.1:0", "--root"])
                .arg(&fx.root)
                .arg("--push-map")
                .arg(&fx.push_map)
                .arg("--echo-upload")
                .args(["--reset-path", RESET_PATH]);
            if transport == Transport::Tls {
                c.arg("--tls-self-signed");
            }
            c
        }
        peer => {
            let mut c = peer.peer("server");
            c.args(["--host", "127.0.0.1", "--port", "0", "--root"])
                .arg(&fx.root)
                .args(["--reset-path", RESET_PATH])
                .args(["--push", &format!("{PUSH_PAGE}={PUSHED}")])
                .arg("--verbose");
            match transport {
                Transport::Tls => {
                    c.arg("--tls");
                }
                Transport::Plain => {
                    c.arg("--plain");
                    // A cleartext node-spdy server only speaks 3.1 (session
                    // flow control) with `autoSpdy31`; without it a version-3
                    // first frame means SPDY/3.
                    if version == Version::V31 {
                        c.arg("--auto-spdy31");
                    }
                }
            }
            c
        }
    };
    Server::start(cmd)
}

#[derive(Default, Clone)]
struct ClientOpts {
    concurrency: Option<usize>,
    post: Option<PathBuf>,
    expect_error: Vec<String>,
    verbose: bool,
}

fn client_command(
    side: Side,
    transport: Transport,
    version: Version,
    urls: &[String],
    o: &ClientOpts,
) -> Command {
    match side {
        peer @ (Side::Node | Side::Netty | Side::Spdystream) => {
            let mut c = peer.peer("client");
            c.args(urls).args([
                "--protocol",
                version.proto(),
                "--timeout",
                NODE_CLIENT_TIMEOUT_SECS,
            ]);
            if let Some(n) = o.concurrency {
                c.args(["--concurrency", &n.to_string()]);
            }
            if let Some(p) = &o.post {
                c.arg("--post").arg(p);
            }
            for u in &o.expect_error {
                c.args(["--expect-error", u]);
            }
            if o.verbose {
                c.arg("--verbose");
            }
            c
        }
        Side::Speedy => {
            let mut c = Command::new(env!("CARGO_BIN_EXE_speedy"));
            c.arg("fetch")
                .args(urls)
                .args(["--protocol", version.proto()]);
            if let Some(n) = o.concurrency {
                c.args(["--concurrency", &n.to_string()]);
            }
            if let Some(p) = &o.post {
                c.arg("--data").arg(p);
            }
            if transport == Transport::Tls {
                c.arg("-k");
            }
            if o.verbose {
                c.arg("-v");
            }
            c
        }
    }
}

// ---------------------------------------------------------------------------
// Checking the JSON lines
// ---------------------------------------------------------------------------

fn json_lines(stdout: &str) -> Result<Vec<Value>, String> {
    let mut v = Vec::new();
    for line in stdout.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(val) if val.is_object() => v.push(val),
            _ => return Err(format!("stdout line is not a JSON object: {line:?}")),
        }
    }
    Ok(v)
}

fn is_pushed(v: &Value) -> bool {
    v.get("pushed").and_then(Value::as_bool).unwrap_or(false)
}

fn url_of(v: &Value) -> &str {
    v.get("url").and_then(Value::as_str).unwrap_or("")
}

/// The one non-pushed line for `url`.
fn line_for<'a>(lines: &'a [Value], url: &str) -> Result<&'a Value, String> {
    let found: Vec<&Value> = lines
        .iter()
        .filter(|v| !is_pushed(v) && url_of(v) == url)
        .collect();
    match found.len() {
        1 => Ok(found[0]),
        0 => Err(format!("no line for {url}")),
        n => Err(format!("{n} lines for {url}")),
    }
}

/// A successful response line with the expected body and protocol.
fn check_ok(line: &Value, expect: &Expect, version: Version) -> Result<(), String> {
    if let Some(e) = line.get("error") {
        return Err(format!("{} failed: {e}", url_of(line)));
    }
    let status = line.get("status").and_then(Value::as_u64);
    if status != Some(200) {
        return Err(format!(
            "{}: status {:?}, expected 200 (line {line})",
            url_of(line),
            line.get("status")
        ));
    }
    let bytes = line.get("bytes").and_then(Value::as_u64);
    if bytes != Some(expect.len) {
        return Err(format!(
            "{}: {bytes:?} bytes, expected {} (line {line})",
            url_of(line),
            expect.len
        ));
    }
    let sha = line.get("sha256").and_then(Value::as_str).unwrap_or("");
    if !sha.eq_ignore_ascii_case(&expect.sha256) {
        return Err(format!(
            "{}: sha256 {sha}, expected {} (line {line})",
            url_of(line),
            expect.sha256
        ));
    }
    if let Some(p) = line.get("protocol").and_then(Value::as_str) {
        if p != version.proto() {
            return Err(format!(
                "{}: protocol {p:?}, expected {:?} (line {line})",
                url_of(line),
                version.proto()
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The six cases
// ---------------------------------------------------------------------------

/// One interop case (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    Small,
    Big,
    Many,
    Post,
    Push,
    Reset,
}

/// Every case.
pub const CASES: [Case; 6] = [
    Case::Small,
    Case::Big,
    Case::Many,
    Case::Post,
    Case::Push,
    Case::Reset,
];

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::Small => "small file",
            Case::Big => "5 MiB file",
            Case::Many => "200 files, 100 in flight",
            Case::Post => "1 MiB POST echoed",
            Case::Push => "server push",
            Case::Reset => "stream reset by the server",
        }
    }
}

/// Who is the client, who the server, over what.
pub struct Combo {
    client: Side,
    server: Side,
    transport: Transport,
    version: Version,
}

impl Combo {
    fn label(&self) -> String {
        format!(
            "{} client -> {} server, {}, {}",
            self.client.name(),
            self.server.name(),
            self.transport.name(),
            self.version.proto()
        )
    }
}

fn case_request(case: Case, fx: &Fixture, origin: &str) -> (Vec<String>, ClientOpts) {
    let u = |p: &str| format!("{origin}{p}");
    match case {
        Case::Small => (vec![u("/small.txt")], ClientOpts::default()),
        Case::Big => (vec![u("/big.bin")], ClientOpts::default()),
        Case::Many => (
            fx.many.iter().map(|p| u(p)).collect(),
            ClientOpts {
                concurrency: Some(MANY_CONCURRENCY),
                ..Default::default()
            },
        ),
        Case::Post => (
            vec![u("/echo")],
            ClientOpts {
                post: Some(fx.post_file.clone()),
                ..Default::default()
            },
        ),
        Case::Push => (vec![u(PUSH_PAGE)], ClientOpts::default()),
        Case::Reset => {
            // Small bodies only, so that this case does not depend on flow
            // control (the 5 MiB and POST cases cover that).
            let urls = vec![
                u("/small.txt"),
                u(RESET_PATH),
                u("/f001.bin"),
                u("/f002.bin"),
                u("/f003.bin"),
            ];
            (
                urls,
                ClientOpts {
                    concurrency: Some(5),
                    expect_error: vec![u(RESET_PATH)],
                    ..Default::default()
                },
            )
        }
    }
}

fn check_case(
    case: Case,
    combo: &Combo,
    fx: &Fixture,
    origin: &str,
    urls: &[String],
    out: &RunOutput,
) -> Result<(), String> {
    if out.timed_out {
        return Err(format!("client killed after {CLIENT_TIMEOUT:?}"));
    }
    let lines = json_lines(&out.stdout)?;
    let version = combo.version;
    let path_of = |url: &str| url.strip_prefix(origin).unwrap_or(url).to_string();
    let mut errs = Vec::new();
    match case {
        Case::Small | Case::Big | Case::Many => {
            for url in urls {
                match line_for(&lines, url)
                    .and_then(|l| check_ok(l, fx.expect(&path_of(url)), version))
                {
                    Ok(()) => {}
                    Err(e) => errs.push(e),
                }
            }
            if !out.success() {
                errs.push("client exit status is not 0".into());
            }
        }
        Case::Post => {
            if let Err(e) = line_for(&lines, &urls[0]).and_then(|l| check_ok(l, &fx.post, version))
            {
                errs.push(e);
            }
            if !out.success() {
                errs.push("client exit status is not 0".into());
            }
        }
        Case::Push => {
            if let Err(e) =
                line_for(&lines, &urls[0]).and_then(|l| check_ok(l, fx.expect(PUSH_PAGE), version))
            {
                errs.push(e);
            }
            // Matched by path: node-spdy announces pushes with `:scheme: https`
            // even on cleartext sessions, so the scheme of the reported URL
            // is the pusher's business.
            let pushed: Vec<&Value> = lines
                .iter()
                .filter(|v| is_pushed(v) && url_of(v).ends_with(PUSHED))
                .collect();
            match pushed.len() {
                0 => errs.push(format!(
                    "no pushed line for {PUSHED} (expected {{\"url\":\"…{PUSHED}\",\"pushed\":true,…}})"
                )),
                1 => {
                    if let Err(e) = check_ok(pushed[0], fx.expect(PUSHED), version) {
                        errs.push(format!("pushed stream: {e}"));
                    }
                }
                n => errs.push(format!("{n} pushed lines for {PUSHED}")),
            }
            if !out.success() {
                errs.push("client exit status is not 0".into());
            }
        }
        Case::Reset => {
            let reset_url = format!("{origin}{RESET_PATH}");
            match line_for(&lines, &reset_url) {
                Ok(l) => {
                    if l.get("error").and_then(Value::as_str).is_none() {
                        errs.push(format!("{reset_url} was reset by the server but is not reported as an error: {l}"));
                    }
                }
                Err(e) => errs.push(e),
            }
            for url in urls.iter().filter(|u| **u != reset_url) {
                if let Err(e) = line_for(&lines, url)
                    .and_then(|l| check_ok(l, fx.expect(&path_of(url)), version))
                {
                    errs.push(format!("on the session with the reset stream: {e}"));
                }
            }
            match combo.client {
                // speedy fetch: non-zero exit because one request failed.
                Side::Speedy => {
                    if out.timed_out || out.status.map(|s| s.success()).unwrap_or(true) {
                        errs.push("speedy fetch exited 0 although a request failed".into());
                    }
                }
                // peer clients: the reset URL is passed as --expect-error.
                _ => {
                    if !out.success() {
                        errs.push("client exit status is not 0".into());
                    }
                }
            }
        }
    }
    if errs.is_empty() {
        return Ok(());
    }
    const SHOWN: usize = 8;
    let more = errs.len().saturating_sub(SHOWN);
    errs.truncate(SHOWN);
    if more > 0 {
        errs.push(format!("… and {more} more"));
    }
    Err(errs.join("\n"))
}

/// Runs the six cases of one combination against one server (restarted if it
/// dies), and fails with a report of every failing case.
pub fn run_combo(cases: &[Case], combo: Combo) {
    combo.client.require();
    combo.server.require();
    let label = combo.label();
    let tag = format!(
        "{}-{}-{}-{}",
        combo.client.name(),
        combo.server.name(),
        combo.transport.name(),
        combo.version.proto().replace(['/', '.'], "")
    );
    let seed = tag.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let fx = Fixture::new(&tag, seed);
    let started = Instant::now();

    let mut server: Option<Server> = None;
    let mut failures: Vec<String> = Vec::new();
    let mut passed: Vec<&str> = Vec::new();

    for &case in cases {
        // (Re)start the server when needed.
        if let Some(s) = server.as_mut() {
            if let Err(e) = s.alive() {
                let log = s.log_since(0);
                failures.push(format!(
                    "[{}] before this case: {e}\n--- server output ---\n{}",
                    case.name(),
                    tail(&log, 40)
                ));
                server = None;
            }
        }
        if server.is_none() {
            match start_server(combo.server, combo.transport, combo.version, &fx) {
                Ok(s) => server = Some(s),
                Err(e) => {
                    failures.push(format!(
                        "[{}] {e}\n(the remaining cases were not run)",
                        case.name()
                    ));
                    break;
                }
            }
        }
        let srv = server.as_mut().unwrap();
        let origin = format!(
            "{}://127.0.0.1:{}",
            combo.transport.scheme(),
            srv.addr.port()
        );
        let (urls, opts) = case_request(case, &fx, &origin);
        let log_mark = srv.log_len();
        let out = run_bounded(
            client_command(combo.client, combo.transport, combo.version, &urls, &opts),
            CLIENT_TIMEOUT,
        );
        match check_case(case, &combo, &fx, &origin, &urls, &out) {
            Ok(()) => {
                println!(
                    "PASS [{label}] {} ({:.2} s)",
                    case.name(),
                    out.elapsed.as_secs_f64()
                );
                passed.push(case.name());
            }
            Err(why) => {
                let mut msg = format!(
                    "[{}] FAILED:\n{why}\n{}\n--- server output during the case ---\n{}",
                    case.name(),
                    out.describe(),
                    tail(&srv.log_since(log_mark), 40)
                );
                // A verbose re-run (frames) for the report, unless the server died.
                if srv.alive().is_ok() && case_allows_verbose_rerun(case) {
                    let mark = srv.log_len();
                    let vopts = ClientOpts {
                        verbose: true,
                        ..opts.clone()
                    };
                    let vout = run_bounded(
                        client_command(combo.client, combo.transport, combo.version, &urls, &vopts),
                        VERBOSE_RERUN_TIMEOUT,
                    );
                    let _ = write!(
                        msg,
                        "\n--- verbose re-run: exit {:?}{} ---\n{}\n{}\n--- server output during the re-run ---\n{}",
                        vout.status,
                        if vout.timed_out { " (KILLED: timeout)" } else { "" },
                        tail(&vout.stderr, 80),
                        head(&vout.stdout, 20),
                        tail(&srv.log_since(mark), 60)
                    );
                }
                println!("FAIL [{label}] {}", case.name());
                failures.push(msg);
            }
        }
    }
    drop(server);
    let secs = started.elapsed().as_secs_f64();
    drop(fx);
    if !failures.is_empty() {
        panic!(
            "interop [{label}]: {} of {} cases failed ({:.1} s); passed: {:?}\n\n{}",
            failures.len(),
            cases.len(),
            secs,
            passed,
            failures.join("\n\n==========\n\n")
        );
    }
    println!(
        "interop [{label}]: all {} cases passed ({secs:.1} s)",
        cases.len()
    );
}

/// The 200-file case would print too much with -v; the others are small.
fn case_allows_verbose_rerun(case: Case) -> bool {
    !matches!(case, Case::Many | Case::Big)
}

/// A combination.
pub fn combo(client: Side, server: Side, transport: Transport, version: Version) -> Combo {
    Combo {
        client,
        server,
        transport,
        version,
    }
}
