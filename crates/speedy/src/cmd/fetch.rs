//! `speedy fetch`: fetch URLs over one session per origin (like curl or spdycat) and
//! print one JSON line per response.

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use clap::Args;
use sha2::{Digest, Sha256};
use spdy::url::Url;
use speedy_net::client::{
    Client, ClientConfig, ClientRequest, Http1Mode, LogKind, Protocol, ResponseStream,
};
use speedy_net::fetch_record::{FetchLine, ProgressEvent, ProgressLine};
use speedy_net::tls::Verify;
use speedy_net::Body;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Arguments of `speedy fetch`.
#[derive(Args, Debug)]
#[command(
    after_help = "Prints one JSON line per response: url, status, protocol, bytes, sha256, pushed, \
elapsed_ms (or url and error). When stdout carries response content (`-o -` or -I), the \
JSON lines go to stderr instead.\n\n\
Exit status (as curl's):\n  \
0   every request got a whole response, whatever its HTTP status\n  \
1   some request got none (connection refused, TLS, stream reset, body cut short, no \
progress within --read-timeout)\n  \
2   bad arguments or files\n  \
22  with -f/--fail: some response's status was not 2xx\n  \
28  --max-time ran out\n\n\
Examples (against the servers of `speedy serve --help`'s examples):\n  \
speedy fetch -k https://localhost:8443/a.html https://localhost:8443/b.css\n  \
speedy fetch -k --protocol spdy/3 https://localhost:8443/ -v\n  \
speedy fetch -k --protocol h2 -I https://localhost:8443/a.html\n  \
speedy fetch -k --protocol h3 https://localhost:8443/a.html\n  \
speedy fetch -k --protocol http1 --pipeline --after-first https://localhost:8443/a.html https://localhost:8443/b.css\n  \
speedy fetch -k -o a.html -o - https://localhost:8443/a.html https://localhost:8443/b.css\n  \
speedy fetch --cacert ./corpus/lab-ca/ca.pem \\\n      \
--resolve www.site0.example=127.0.0.1:8080 https://www.site0.example/\n  \
speedy fetch --upgrade http://localhost:8443/a.html"
)]
pub struct FetchArgs {
    /// URLs to fetch (http:// or https://); those of one origin share one session.
    #[arg(required = true, value_name = "URL")]
    urls: Vec<String>,
    /// Seconds to wait for a connection, a response head, or the next piece of a body
    /// before that request fails.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    read_timeout: f64,
    /// Seconds the whole command may take (exit status 28 when it runs out, as curl's).
    #[arg(long, value_name = "SECS")]
    max_time: Option<f64>,
    /// spdy (= spdy/3.1), spdy/3, spdy/2, h2 (= http2; h2c with prior knowledge on
    /// http://), http1 (= http/1.1) or h3 (= http3: HTTP/3 over QUIC on UDP, https://
    /// only, by prior knowledge) or udp (one datagram each way to `speedy serve
    /// --udp-get`, SST's Fig 7 baseline: http:// URLs, one at a time, nothing resent).
    /// Default: ALPN over TLS (SPDY, then h2, then HTTP/1.1), spdy/3.1 on plain TCP.
    #[arg(long, value_name = "PROTOCOL")]
    protocol: Option<String>,
    /// Request method (as curl's -X), e.g. DELETE; default GET, or POST with --data.
    #[arg(short = 'X', long = "request", value_name = "METHOD")]
    method: Option<String>,
    /// HEAD requests; print each response's status line and headers on stdout (as curl -I).
    #[arg(short = 'I', long = "head", conflicts_with_all = ["method", "data"])]
    head: bool,
    /// Write the body of the URL in the same position to FILE (repeatable, as curl's -o);
    /// `-` writes it to stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Vec<PathBuf>,
    /// Exit with status 22 when some response's status is not 2xx (like curl -f).
    #[arg(short = 'f', long)]
    fail: bool,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 100, value_name = "N")]
    concurrency: usize,
    /// HTTP/1.1 (--protocol http1): a new connection for every request, closed after
    /// its response (`Connection: close`, HTTP/1.0's way), --concurrency at a time.
    #[arg(long)]
    connection_per_request: bool,
    /// HTTP/1.1 (--protocol http1): pipeline the requests on one connection per origin
    /// (RFC 9112 §9.3.2): each is sent without waiting for the responses before it,
    /// which come back in order.
    #[arg(long, conflicts_with = "connection_per_request")]
    pipeline: bool,
    /// Request the other URLs of an origin only once the first one's response is whole
    /// (a page, then what it embeds).
    #[arg(long)]
    after_first: bool,
    /// POST this file's contents to every URL.
    #[arg(long, value_name = "FILE")]
    data: Option<PathBuf>,
    /// SPDY priority of the requests, 0 (highest) to 7.
    #[arg(long, default_value_t = 3, value_name = "0-7")]
    priority: u8,
    /// Priority of the URL in position N (from 1), overriding --priority (repeatable),
    /// e.g. `--priority-of 3=0`.
    #[arg(long, value_name = "N=PRIORITY")]
    priority_of: Vec<String>,
    /// Request the URL in position N SECS seconds after the connection is up instead of
    /// at once (repeatable), e.g. `--start 3=5`. URLs of one origin only.
    #[arg(long, value_name = "N=SECS")]
    start: Vec<String>,
    /// SECS seconds after the connection is up, ask the server to send the URL in
    /// position N at PRIORITY from then on, and time a PING sent with it (repeatable),
    /// e.g. `--reprioritize 10:2=0`. SPDY: speedy's PRIORITY extension frame
    /// (docs/spdy-priority.md); h2 and h3: RFC 9218's PRIORITY_UPDATE (h3's "PING" is a
    /// reserved-type stream the server stops). URLs of one origin only.
    #[arg(long, value_name = "SECS:N=PRIORITY")]
    reprioritize: Vec<String>,
    /// Write a JSON line to FILE for each piece of a body received (`t`: seconds since
    /// the connection was up, `url`: position, `bytes`: received so far), each
    /// reprioritization (`event: "reprioritize"`) and its PING's answer (`event: "pong"`,
    /// `rtt_ms`).
    #[arg(long, value_name = "FILE")]
    progress: Option<PathBuf>,
    /// Extra request header `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Save bodies into this directory.
    #[arg(short = 'O', long = "output-dir", value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// On stderr, with seconds since start: connecting, TLS version, cipher and ALPN (*),
    /// every SPDY frame or HTTP/1.1 and h2 head sent (>) and received (<).
    #[arg(short, long)]
    verbose: bool,
    /// Accept any TLS certificate.
    #[arg(short = 'k', long)]
    insecure: bool,
    /// Trust the CA certificates in this PEM file.
    #[arg(long, alias = "ca", value_name = "FILE")]
    cacert: Option<PathBuf>,
    /// Header compression level 0-9 for requests.
    #[arg(long, default_value_t = 9, value_name = "0-9")]
    header_level: u32,
    /// Connect to IP (and PORT, default the URL's) for HOST instead of resolving it
    /// (repeatable), e.g. `--resolve www.a.example=127.0.0.1:8443`.
    #[arg(long, value_name = "HOST=IP[:PORT]")]
    resolve: Vec<String>,
    /// Turn off CRIME-safe header compression (cookies share the zlib context).
    #[arg(long)]
    no_crime_safe: bool,
    /// SPDY window overruns: lenient accepts them from a server that never sent a
    /// WINDOW_UPDATE (moby/spdystream) and stops waiting for its credit; strict resets
    /// the stream with FLOW_CONTROL_ERROR (docs/flow-control.md).
    #[arg(long, default_value = "lenient", value_name = "strict|lenient")]
    flow_control: spdy::session::FlowControl,
    /// Plain http:// only: reach SPDY/3.1 with an HTTP/1.1 `Upgrade: SPDY/3.1` request
    /// for the first URL of each origin (as Kubernetes does) instead of prior knowledge.
    #[arg(long)]
    upgrade: bool,
    /// With --upgrade: offer this sub-protocol in `X-Stream-Protocol-Version`
    /// (repeatable, most preferred first); the chosen one is printed on stderr.
    #[arg(long, value_name = "PROTOCOL", requires = "upgrade")]
    stream_protocol: Vec<String>,
    /// tcp, or sctp: SPDY over SCTP over UDP to the same port number (plain http://
    /// SPDY only; `speedy serve --sctp` answers; docs/sctp.md).
    #[arg(long, default_value = "tcp", value_name = "tcp|sctp")]
    transport: speedy_net::Carrier,
    /// With --transport sctp: send the first request after the COOKIE ACK, as Linux's
    /// SCTP does, instead of in the COOKIE ECHO's packet (one round trip later).
    #[arg(long)]
    no_cookie_bundling: bool,
    /// With --transport sctp: SCTP's RTO.Initial in ms, the timeout before the first
    /// round trip is measured (default 3000, as Linux; RFC 9260 says 1000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u32).range(1..=60_000))]
    sctp_rto_initial_ms: Option<u32>,
}

struct Target {
    url: String,
    /// Where its body goes (`-o`), if not to `--output-dir` or nowhere.
    out: Option<Out>,
    scheme: String,
    host: String,
    port: u16,
    path: String,
}

fn parse_url(u: &str) -> Result<Target> {
    let url: Url = u.parse()?;
    Ok(Target {
        out: None,
        url: u.to_string(),
        host: url.host_bare().to_string(),
        port: url.port_or_default(),
        scheme: url.scheme,
        path: url.path,
    })
}

/// Whether `s` is an HTTP token (RFC 9110 §5.6.2): a method or a header name.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Where `-o` sends a body.
#[derive(Clone, Debug)]
enum Out {
    Stdout,
    File(PathBuf),
}

/// Parses `HOST=IP[:PORT]` (IPv6 as `[::1]:443` or a bare address).
pub fn parse_resolve(s: &str) -> Result<(String, (std::net::IpAddr, Option<u16>))> {
    speedy_net::client::parse_resolve(s).map_err(anyhow::Error::msg)
}

/// Runs the command; returns the exit status (see the help).
pub async fn run(a: FetchArgs) -> Result<u8> {
    let udp = a.protocol.as_deref() == Some("udp");
    let protocol = match &a.protocol {
        Some(p) if udp => {
            if let Some(u) = a.urls.iter().find(|u| !u.starts_with("http://")) {
                bail!("--protocol {p}: {u}: http:// URLs only (they name host, port and path)");
            }
            None
        }
        Some(p) => Some(Protocol::parse(p).map_err(|e| anyhow::anyhow!("--protocol {p}: {e}"))?),
        None => None,
    };
    if a.output.len() > a.urls.len() {
        bail!(
            "{} -o files for {} URLs: give at most one -o per URL",
            a.output.len(),
            a.urls.len()
        );
    }
    if a.output.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
        bail!("-o -: only one body can go to stdout");
    }
    let method = match (&a.method, a.head, a.data.is_some()) {
        (Some(m), _, _) => {
            if !is_token(m) {
                bail!("-X {m:?}: not an HTTP method token");
            }
            m.clone()
        }
        (None, true, _) => "HEAD".into(),
        (None, false, true) => "POST".into(),
        (None, false, false) => "GET".into(),
    };
    if let Some(c) = &a.cacert {
        speedy_net::tls::ca_certs(c).map_err(|e| anyhow::anyhow!("--cacert: {e}"))?;
    }
    if a.priority > 7 {
        bail!("--priority {}: must be 0 to 7", a.priority);
    }
    if a.header_level > 9 {
        bail!("--header-level {}: must be 0 to 9", a.header_level);
    }
    if a.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    let body = match &a.data {
        Some(p) => {
            Bytes::from(std::fs::read(p).with_context(|| format!("--data {}", p.display()))?)
        }
        None => Bytes::new(),
    };
    let mut extra = Vec::new();
    for h in &a.headers {
        let (n, v) = h
            .split_once(':')
            .with_context(|| format!("--header {h:?}: expected `Name: value`"))?;
        let n = n.trim();
        if !is_token(n) {
            bail!(
                "--header {h:?}: {n:?} is not a header name (letters, digits and -_!#$%&'*+.^`|~)"
            );
        }
        extra.push((n.to_ascii_lowercase(), v.trim().to_string()));
    }
    if let Some(d) = &a.output_dir {
        super::serve::not_a_file("-O", d)?;
        std::fs::create_dir_all(d).with_context(|| format!("-O {}", d.display()))?;
    }
    for o in a.output.iter().filter(|o| o.as_os_str() != "-") {
        let parent = o.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(p) = parent {
            if !p.is_dir() {
                bail!("-o {}: {} is not a directory", o.display(), p.display());
            }
        }
    }
    let mut resolve = std::collections::HashMap::new();
    for r in &a.resolve {
        let (h, addr) = parse_resolve(r)?;
        resolve.insert(h, addr);
    }
    let mut targets = a
        .urls
        .iter()
        .map(|u| parse_url(u))
        .collect::<Result<Vec<_>>>()?;
    for (t, o) in targets.iter_mut().zip(&a.output) {
        t.out = Some(if o.as_os_str() == "-" {
            Out::Stdout
        } else {
            Out::File(o.clone())
        });
    }
    let mut origins: Vec<(String, String, u16, Vec<Target>)> = Vec::new();
    for t in targets {
        match origins
            .iter_mut()
            .find(|o| o.0 == t.scheme && o.1 == t.host && o.2 == t.port)
        {
            Some(o) => o.3.push(t),
            None => origins.push((t.scheme.clone(), t.host.clone(), t.port, vec![t])),
        }
    }
    let secs = |v: f64, flag: &str| {
        if v.is_finite() && v > 0.0 && v <= 86_400.0 {
            Ok(std::time::Duration::from_secs_f64(v))
        } else {
            Err(anyhow::anyhow!(
                "{flag} {v}: seconds, above 0 and at most 86400"
            ))
        }
    };
    let mut cfg = ClientConfig {
        protocol,
        read_timeout: Some(secs(a.read_timeout, "--read-timeout")?),
        ..Default::default()
    };
    let max_time = a.max_time.map(|t| secs(t, "--max-time")).transpose()?;
    cfg.verify = if a.insecure {
        Verify::Insecure
    } else if let Some(c) = &a.cacert {
        Verify::CaFile(c.clone())
    } else {
        Verify::System
    };
    cfg.spdy.compression.level = a.header_level;
    cfg.spdy.compression.crime_safe = !a.no_crime_safe;
    cfg.spdy.flow_control = a.flow_control;
    cfg.sctp =
        speedy_net::sctp::client_config(a.transport, !a.no_cookie_bundling, a.sctp_rto_initial_ms)
            .map_err(anyhow::Error::msg)?;
    cfg.http1_connections = a.concurrency.min(6);
    if a.connection_per_request || a.pipeline {
        let flag = match a.pipeline {
            true => "--pipeline",
            false => "--connection-per-request",
        };
        if protocol != Some(Protocol::Http1) {
            bail!("{flag}: HTTP/1.1 only (add --protocol http1)");
        }
        cfg.http1_mode = match a.pipeline {
            true => Http1Mode::Pipelined,
            false => Http1Mode::ConnectionPerRequest,
        };
        if a.connection_per_request {
            cfg.http1_connections = a.concurrency;
        }
    }
    if a.verbose {
        let t0 = Instant::now();
        cfg.log = Some(Arc::new(move |kind, line| {
            let mark = match kind {
                LogKind::Sent => ">",
                LogKind::Received => "<",
                LogKind::Info => "*",
            };
            eprintln!("[{:8.3}] {mark} {line}", t0.elapsed().as_secs_f64())
        }));
    }
    let schedule = Schedule::parse(&a, origins.len())?;
    let progress = match &a.progress {
        Some(p) => Some(Mutex::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("--progress {}", p.display()))?,
        ))),
        None => None,
    };
    let ctx = Arc::new(Ctx {
        schedule,
        progress,
        up: std::sync::OnceLock::new(),
        out_dir: a.output_dir.clone(),
        body,
        extra,
        priority: a.priority,
        method,
        print_head: a.head,
        after_first: a.after_first,
        udp,
        json_to_stderr: a.head || targets_to_stdout(&a.output),
        not_2xx: std::sync::atomic::AtomicBool::new(false),
    });
    let all = fetch_all(origins, &resolve, &cfg, &a, &ctx);
    let ok = match max_time {
        None => all.await?,
        Some(t) => match tokio::time::timeout(t, all).await {
            Ok(r) => r?,
            Err(_) => {
                eprintln!("speedy fetch: --max-time {t:?} ran out");
                return Ok(28);
            }
        },
    };
    if let Some(p) = &ctx.progress {
        use std::io::Write;
        lock(p).flush().context("--progress")?;
    }
    let not_2xx = ctx.not_2xx.load(std::sync::atomic::Ordering::Relaxed);
    Ok(if !ok {
        1
    } else if a.fail && not_2xx {
        22
    } else {
        0
    })
}

/// Fetches every origin's URLs in turn; whether all got whole responses.
async fn fetch_all(
    origins: Vec<(String, String, u16, Vec<Target>)>,
    resolve: &std::collections::HashMap<String, (std::net::IpAddr, Option<u16>)>,
    cfg: &ClientConfig,
    a: &FetchArgs,
    ctx: &Arc<Ctx>,
) -> Result<bool> {
    let mut ok = true;
    for (scheme, host, port, list) in origins {
        let mut cfg = cfg.clone();
        cfg.connect_to = resolve.get(&host.to_ascii_lowercase()).map(
            |&(ip, p): &(std::net::IpAddr, Option<u16>)| {
                std::net::SocketAddr::new(ip, p.unwrap_or(port))
            },
        );
        if a.upgrade {
            if scheme != "http" {
                bail!("--upgrade: {scheme}:// URL; an Upgrade to SPDY/3.1 needs plain http://");
            }
            cfg.upgrade = Some(speedy_net::upgrade::UpgradeRequest {
                method: "GET".into(),
                path: list[0].path.clone(),
                stream_protocols: a.stream_protocol.clone(),
            });
        }
        ok &= match ctx.udp {
            true => fetch_udp(&host, port, list, &cfg, ctx).await,
            false => fetch_origin(&scheme, &host, port, list, &cfg, a.concurrency, ctx).await,
        };
    }
    Ok(ok)
}

/// `--protocol udp`: each URL as one datagram each way (`speedy_net::udp_get`), one
/// at a time; whether all got their bodies.
async fn fetch_udp(
    host: &str,
    port: u16,
    list: Vec<Target>,
    cfg: &ClientConfig,
    ctx: &Arc<Ctx>,
) -> bool {
    let timeout = cfg.read_timeout.unwrap_or(Duration::from_secs(30));
    // Once per origin, as the other protocols connect once.
    let addr = speedy_net::client::resolve(host, port, cfg.connect_to).await;
    let mut ok = true;
    for (pos, t) in list.into_iter().enumerate() {
        let t0 = Instant::now();
        let r = match &addr {
            Ok(addr) => speedy_net::udp_get::get(*addr, &t.path, timeout)
                .await
                .map(|b| ResponseStream {
                    status: 200,
                    headers: spdy::Headers::new(),
                    protocol: "udp",
                    pushed_url: None,
                    stream_id: None,
                    body: Body::full(b),
                }),
            Err(e) => Err(e.clone()),
        };
        ok &= finish(t.url, Some(pos), t.out, r, t0, "udp", false, ctx.clone()).await;
    }
    ok
}

/// `--priority-of`, `--start` and `--reprioritize`, by URL position (from 0).
#[derive(Default)]
struct Schedule {
    priority: HashMap<usize, u8>,
    start: HashMap<usize, Duration>,
    /// (when, position, priority).
    changes: Vec<(Duration, usize, u8)>,
}

impl Schedule {
    fn parse(a: &FetchArgs, origins: usize) -> Result<Schedule> {
        let n = a.urls.len();
        let pos = |flag: &str, v: &str, s: &str| -> Result<usize> {
            match s.trim().parse::<usize>() {
                Ok(i) if (1..=n).contains(&i) => Ok(i - 1),
                _ => bail!("{flag} {v}: {s:?} is not a URL position (1 to {n})"),
            }
        };
        let prio = |flag: &str, v: &str, s: &str| -> Result<u8> {
            match s.trim().parse::<u8>() {
                Ok(p) if p <= 7 => Ok(p),
                _ => bail!("{flag} {v}: {s:?} is not a priority (0 to 7)"),
            }
        };
        let secs = |flag: &str, v: &str, s: &str| -> Result<Duration> {
            match s.trim().parse::<f64>() {
                Ok(t) if t.is_finite() && (0.0..=86_400.0).contains(&t) => {
                    Ok(Duration::from_secs_f64(t))
                }
                _ => bail!("{flag} {v}: {s:?} is not seconds (0 to 86400)"),
            }
        };
        let mut sch = Schedule::default();
        for v in &a.priority_of {
            let (i, p) = v
                .split_once('=')
                .with_context(|| format!("--priority-of {v}: expected N=PRIORITY"))?;
            sch.priority
                .insert(pos("--priority-of", v, i)?, prio("--priority-of", v, p)?);
        }
        for v in &a.start {
            let (i, t) = v
                .split_once('=')
                .with_context(|| format!("--start {v}: expected N=SECS"))?;
            sch.start
                .insert(pos("--start", v, i)?, secs("--start", v, t)?);
        }
        for v in &a.reprioritize {
            let (t, rest) = v
                .split_once(':')
                .and_then(|(t, r)| Some((t, r.split_once('=')?)))
                .with_context(|| format!("--reprioritize {v}: expected SECS:N=PRIORITY"))?;
            sch.changes.push((
                secs("--reprioritize", v, t)?,
                pos("--reprioritize", v, rest.0)?,
                prio("--reprioritize", v, rest.1)?,
            ));
        }
        if origins > 1 && (!sch.start.is_empty() || !sch.changes.is_empty()) {
            bail!("--start and --reprioritize time requests on one connection: give URLs of one origin");
        }
        Ok(sch)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct Ctx {
    schedule: Schedule,
    /// `--progress`: JSON lines.
    progress: Option<Mutex<std::io::BufWriter<std::fs::File>>>,
    /// When the (one) connection was up: the zero of `--start`, `--reprioritize` and
    /// `--progress`.
    up: std::sync::OnceLock<Instant>,
    out_dir: Option<PathBuf>,
    body: Bytes,
    extra: Vec<(String, String)>,
    priority: u8,
    method: String,
    /// `-I`: print each response head on stdout.
    print_head: bool,
    /// `--after-first`: the other URLs of an origin wait for the first's response.
    after_first: bool,
    /// `--protocol udp`.
    udp: bool,
    /// Stdout carries response content: the JSON lines go to stderr.
    json_to_stderr: bool,
    /// Some response's status was not 2xx (`--fail`).
    not_2xx: std::sync::atomic::AtomicBool,
}

fn targets_to_stdout(outputs: &[PathBuf]) -> bool {
    outputs.iter().any(|p| p.as_os_str() == "-")
}

impl Ctx {
    /// Appends a `--progress` line, with `t` set to now.
    fn progress(&self, mut line: ProgressLine) {
        let (Some(p), Some(up)) = (&self.progress, self.up.get()) else {
            return;
        };
        use std::io::Write;
        line.t = (up.elapsed().as_secs_f64() * 1e6).round() / 1e6;
        let text = serde_json::to_string(&line).expect("a progress line serializes");
        // A full disk shows when the file is flushed at the end.
        let _ = writeln!(lock(p), "{text}");
    }

    /// Prints a response's JSON line where the content does not go.
    fn print_line(&self, line: FetchLine) {
        let v = serde_json::to_string(&line).expect("a fetch line serializes");
        if self.json_to_stderr {
            eprintln!("{v}");
        } else {
            println!("{v}");
        }
    }
}

async fn fetch_origin(
    scheme: &str,
    host: &str,
    port: u16,
    list: Vec<Target>,
    cfg: &ClientConfig,
    concurrency: usize,
    ctx: &Arc<Ctx>,
) -> bool {
    let mut client = match Client::connect(scheme, host, port, cfg).await {
        Ok(c) => c,
        Err(e) => {
            for t in &list {
                ctx.print_line(FetchLine {
                    url: t.url.clone(),
                    error: Some(e.to_string()),
                    ..Default::default()
                });
            }
            return false;
        }
    };
    let protocol = client.protocol();
    if let Some(p) = client.stream_protocol() {
        eprintln!("* {scheme}://{host}:{port}: upgraded to SPDY/3.1, stream protocol {p}");
    }
    let start = Instant::now();
    let _ = ctx.up.set(start);
    // Pushed streams are read as they arrive, so they never stall flow control.
    let (done_tx, mut done_rx) = tokio::sync::watch::channel(false);
    let push_task = client.take_pushes().map(|mut rx| {
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let mut tasks = Vec::new();
            loop {
                tokio::select! {
                    p = rx.recv() => match p {
                        Some(p) => tasks.push(tokio::spawn(finish(p.pushed_url.clone().unwrap_or_default(), None, None, Ok(p), start, protocol, true, ctx.clone()))),
                        None => break,
                    },
                    _ = done_rx.changed() => {
                        while let Ok(p) = rx.try_recv() {
                            tasks.push(tokio::spawn(finish(p.pushed_url.clone().unwrap_or_default(), None, None, Ok(p), start, protocol, true, ctx.clone())));
                        }
                        break;
                    }
                }
            }
            let mut ok = true;
            for t in tasks {
                ok &= t.await.unwrap_or(false);
            }
            ok
        })
    });
    let client = Arc::new(client);
    let sem = Arc::new(Semaphore::new(concurrency));
    // Stream ids of the responses so far, by URL position, for --reprioritize.
    let (ids_tx, ids_rx) = tokio::sync::watch::channel(HashMap::<usize, u32>::new());
    let ids_tx = Arc::new(ids_tx);
    let mut tasks: Vec<tokio::task::JoinHandle<bool>> = Vec::new();
    let mut first_ok = true;
    // Unscheduled requests are started in URL order: each task polls its request once
    // (which queues it: a SPDY stream opened, a pipelined request written in turn) only
    // after the one before it has; the runtime's threads would otherwise race.
    let mut turn: Option<tokio::sync::oneshot::Receiver<()>> = None;
    for (pos, t) in list.into_iter().enumerate() {
        if pos == 1 && ctx.after_first {
            if let Some(first) = tasks.pop() {
                first_ok = first.await.unwrap_or(false);
            }
        }
        let client = client.clone();
        let ctx = ctx.clone();
        let sem = sem.clone();
        let ids_tx = ids_tx.clone();
        let at = ctx.schedule.start.get(&pos).copied();
        // Unscheduled requests take their turn in the order given, as before.
        let now = match at {
            None => Some(sem.clone().acquire_owned().await.expect("semaphore open")),
            Some(_) => None,
        };
        let my_turn = match at {
            None => {
                let (tx, rx) = tokio::sync::oneshot::channel::<()>();
                Some((turn.replace(rx), tx))
            }
            Some(_) => None,
        };
        tasks.push(tokio::spawn(async move {
            let permit = match (now, at) {
                (Some(p), _) => p,
                (None, at) => {
                    tokio::time::sleep_until((start + at.unwrap_or_default()).into()).await;
                    sem.acquire_owned().await.expect("semaphore open")
                }
            };
            let t0 = Instant::now();
            let mut req = ClientRequest::get(&t.path);
            req.priority = ctx
                .schedule
                .priority
                .get(&pos)
                .copied()
                .unwrap_or(ctx.priority);
            req.headers = ctx.extra.clone();
            req.method = ctx.method.clone();
            req.body = ctx.body.clone();
            let r = match my_turn {
                None => client.request(req).await,
                Some((wait, done)) => {
                    if let Some(w) = wait {
                        let _ = w.await;
                    }
                    let mut fut = std::pin::pin!(client.request(req));
                    let first = std::future::poll_fn(|cx| {
                        std::task::Poll::Ready(std::future::Future::poll(fut.as_mut(), cx))
                    })
                    .await;
                    let _ = done.send(());
                    match first {
                        std::task::Poll::Ready(r) => r,
                        std::task::Poll::Pending => fut.await,
                    }
                }
            };
            if let Some(id) = r.as_ref().ok().and_then(|r| r.stream_id) {
                ids_tx.send_modify(|m| {
                    m.insert(pos, id);
                });
            }
            let ok = finish(t.url, Some(pos), t.out, r, t0, protocol, false, ctx).await;
            drop(permit);
            ok
        }));
    }
    for &(at, pos, priority) in &ctx.schedule.changes {
        let client = client.clone();
        let ctx = ctx.clone();
        let mut ids = ids_rx.clone();
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until((start + at).into()).await;
            let Ok(id) = ids
                .wait_for(|m| m.contains_key(&pos))
                .await
                .map(|m| m[&pos])
            else {
                return false;
            };
            if let Err(e) = client.reprioritize(id, priority) {
                eprintln!("speedy fetch: --reprioritize: {e}");
                return false;
            }
            ctx.progress(ProgressLine {
                event: Some(ProgressEvent::Reprioritize),
                priority: Some(priority),
                ..ProgressLine::at(pos + 1)
            });
            if let Some(rtt) = client.ping().await {
                let ms = (rtt.as_secs_f64() * 1e6).round() / 1e3;
                ctx.progress(ProgressLine {
                    event: Some(ProgressEvent::Pong),
                    rtt_ms: Some(ms),
                    ..ProgressLine::at(pos + 1)
                });
            }
            true
        }));
    }
    drop(ids_rx);
    let mut ok = first_ok;
    for t in tasks {
        ok &= t.await.unwrap_or(false);
    }
    let _ = done_tx.send(true);
    if let Some(p) = push_task {
        ok &= p.await.unwrap_or(false);
    }
    ok
}

#[allow(clippy::too_many_arguments)]
async fn finish(
    url: String,
    pos: Option<usize>,
    out: Option<Out>,
    r: Result<ResponseStream, speedy_net::ClientError>,
    t0: Instant,
    protocol: &'static str,
    pushed: bool,
    ctx: Arc<Ctx>,
) -> bool {
    let resp = match r {
        Ok(r) => r,
        Err(e) => {
            ctx.print_line(FetchLine {
                url,
                protocol: Some(protocol.to_string()),
                pushed: Some(pushed),
                error: Some(e.to_string()),
                ..Default::default()
            });
            return false;
        }
    };
    let status = resp.status;
    if ctx.print_head {
        let mut head = format!("{protocol} {status}\n");
        for (n, v) in resp.headers.iter() {
            head.push_str(&format!(
                "{}: {}\n",
                String::from_utf8_lossy(n),
                String::from_utf8_lossy(v)
            ));
        }
        println!("{head}");
    }
    let body: Body = resp.body;
    // Streamed: hashed and written as it arrives, never held whole.
    let out = out.or_else(|| {
        ctx.out_dir
            .as_ref()
            .map(|dir| Out::File(dir.join(file_name(&url))))
    });
    let report = |n: u64| {
        if let Some(pos) = pos {
            ctx.progress(ProgressLine {
                bytes: Some(n),
                ..ProgressLine::at(pos + 1)
            });
        }
    };
    match drain(body, out.as_ref(), report).await {
        Ok((n, sha)) => {
            let ms = t0.elapsed().as_secs_f64() * 1000.0;
            ctx.print_line(FetchLine {
                url,
                status: Some(status),
                protocol: Some(protocol.to_string()),
                bytes: Some(n),
                sha256: Some(sha),
                pushed: Some(pushed),
                elapsed_ms: Some((ms * 1000.0).round() / 1000.0),
                error: None,
            });
            if !(200..300).contains(&status) {
                ctx.not_2xx
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
            true
        }
        Err(e) => {
            ctx.print_line(FetchLine {
                url,
                status: Some(status),
                protocol: Some(protocol.to_string()),
                pushed: Some(pushed),
                error: Some(e.to_string()),
                ..Default::default()
            });
            false
        }
    }
}

/// The file name a URL's body is saved under in `--output-dir`.
fn file_name(url: &str) -> String {
    let path = Url::parse(url).map_or_else(|| "/".to_string(), |u| u.path);
    let name = path
        .split('?')
        .next()
        .unwrap_or("")
        .trim_start_matches('/')
        .replace('/', "_");
    if name.is_empty() || name.starts_with('.') {
        format!("index{name}.html")
    } else {
        name
    }
}

/// Reads a body to its end, hashing it and writing it where `save` says; returns its
/// length and SHA-256 (hex).
async fn drain(
    mut body: Body,
    save: Option<&Out>,
    progress: impl Fn(u64),
) -> Result<(u64, String), String> {
    use tokio::io::{AsyncWrite, AsyncWriteExt};
    let name = |o: &Out| match o {
        Out::Stdout => "stdout".to_string(),
        Out::File(p) => p.display().to_string(),
    };
    let mut sink: Option<std::pin::Pin<Box<dyn AsyncWrite + Send>>> = match save {
        Some(Out::Stdout) => Some(Box::pin(tokio::io::stdout())),
        Some(Out::File(p)) => Some(Box::pin(
            tokio::fs::File::create(p)
                .await
                .map_err(|e| format!("writing {}: {e}", p.display()))?,
        )),
        None => None,
    };
    let mut sha = Sha256::new();
    let mut n = 0u64;
    while let Some(c) = body.chunk().await {
        let c = c.map_err(|e| e.to_string())?;
        n += c.len() as u64;
        progress(n);
        sha.update(&c);
        if let (Some(f), Some(o)) = (&mut sink, save) {
            f.write_all(&c)
                .await
                .map_err(|e| format!("writing {}: {e}", name(o)))?;
        }
    }
    if let (Some(f), Some(o)) = (&mut sink, save) {
        f.flush()
            .await
            .map_err(|e| format!("writing {}: {e}", name(o)))?;
    }
    Ok((n, hex::encode(sha.finalize())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let t = parse_url("https://localhost:8443/a/b?c").unwrap();
        assert_eq!(
            (t.scheme.as_str(), t.host.as_str(), t.port, t.path.as_str()),
            ("https", "localhost", 8443, "/a/b?c")
        );
        let t = parse_url("http://[::1]/").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 80));
        assert!(parse_url("ftp://x/").is_err());
        assert!(parse_url("http://x:99999/").is_err());
        assert!(parse_url("nope").is_err());
    }
}
