//! `speedy fetch`: fetch URLs over one session per origin (like curl or spdycat) and
//! print one JSON line per response. The engine is [`speedy_net::fetch`]; this file
//! turns the flags into its options and prints what it reports.

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use clap::Args;
use speedy_net::client::{ClientConfig, Http1Mode, LogKind, Protocol};
use speedy_net::fetch::{self, FetchError, FetchOptions, Out, Outcome, Report, Schedule, Sink};
use speedy_net::fetch_record::FetchLine;
use speedy_net::sctp;
use speedy_net::tls::Verify;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// Parses `HOST=IP[:PORT]` (IPv6 as `[::1]:443` or a bare address).
pub fn parse_resolve(s: &str) -> Result<(String, (std::net::IpAddr, Option<u16>))> {
    speedy_net::client::parse_resolve(s).map_err(anyhow::Error::msg)
}

/// Runs the command; returns the exit status (see the help).
pub async fn run(a: FetchArgs) -> Result<u8> {
    let opts = options(&a)?;
    let head = a.head;
    let json_to_stderr = head || a.output.iter().any(|p| p.as_os_str() == "-");
    let sink: Sink = Arc::new(move |r| print(r, head, json_to_stderr));
    match fetch::fetch(opts, sink).await {
        Ok(Outcome::TimedOut(t)) => {
            eprintln!("speedy fetch: --max-time {t:?} ran out");
            Ok(28)
        }
        Ok(Outcome::Done { all_whole, not_2xx }) => Ok(match (all_whole, a.fail && not_2xx) {
            (false, _) => 1,
            (true, true) => 22,
            (true, false) => 0,
        }),
        Err(e @ FetchError::UpgradeNeedsHttp(_)) => Err(anyhow!("--upgrade: {e}")),
        Err(FetchError::Progress(e)) => Err(e).context("--progress"),
    }
}

/// Prints a report: a JSON line (on stderr when stdout carries content), a head, a note.
fn print(r: Report<'_>, head: bool, json_to_stderr: bool) {
    let lossy = String::from_utf8_lossy;
    let json = |l: &FetchLine| serde_json::to_string(l).expect("a fetch line serializes");
    match r {
        Report::Line(line) if json_to_stderr => eprintln!("{}", json(&line)),
        Report::Line(line) => println!("{}", json(&line)),
        Report::Head(protocol, status, headers) if head => {
            let lines = headers
                .iter()
                .map(|(n, v)| format!("{}: {}\n", lossy(n), lossy(v)));
            println!("{protocol} {status}\n{}", lines.collect::<String>());
        }
        Report::Head(..) => {}
        Report::Upgraded(o, p) => eprintln!("* {o}: upgraded to SPDY/3.1, stream protocol {p}"),
        Report::ReprioritizeFailed(e) => eprintln!("speedy fetch: --reprioritize: {e}"),
    }
}

/// The engine's options, the flags (and files they name) checked in order.
fn options(a: &FetchArgs) -> Result<FetchOptions> {
    let mut opts = FetchOptions::default();
    let protocol;
    (protocol, opts.udp) = match &a.protocol {
        Some(p) => fetch::protocol(p, &a.urls).map_err(|e| anyhow!("--protocol {p}: {e}"))?,
        None => (None, false),
    };
    let (n, o) = (a.urls.len(), a.output.len());
    if o > n {
        bail!("{o} -o files for {n} URLs: give at most one -o per URL");
    }
    if a.output.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
        bail!("-o -: only one body can go to stdout");
    }
    let method = fetch::method(a.method.as_deref(), a.head, a.data.is_some());
    opts.method = method.map_err(|e| anyhow!("-X {e}"))?;
    if let Some(c) = &a.cacert {
        speedy_net::tls::ca_certs(c).map_err(|e| anyhow!("--cacert: {e}"))?;
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
    if let Some(p) = &a.data {
        let data = std::fs::read(p).with_context(|| format!("--data {}", p.display()))?;
        opts.body = Bytes::from(data);
    }
    for h in &a.headers {
        let header = fetch::parse_header(h).map_err(|e| anyhow!("--header {h:?}: {e}"))?;
        opts.headers.push(header);
    }
    check_files(a)?;
    let resolve = a.resolve.iter().map(|r| parse_resolve(r));
    opts.resolve = resolve.collect::<Result<_>>()?;
    let outs: Vec<Out> = a.output.iter().map(|o| Out::from_arg(o)).collect();
    opts.origins = fetch::origins(&a.urls, &outs)?;
    let read_timeout = secs(a.read_timeout, "--read-timeout")?;
    opts.max_time = a.max_time.map(|t| secs(t, "--max-time")).transpose()?;
    opts.client = client(a, protocol, read_timeout)?;
    opts.schedule = schedule(a, opts.origins.len())?;
    if let Some(p) = &a.progress {
        let file =
            std::fs::File::create(p).with_context(|| format!("--progress {}", p.display()))?;
        opts.progress = Some(file);
    }
    opts.upgrade = a.upgrade.then(|| a.stream_protocol.clone());
    (opts.concurrency, opts.after_first, opts.priority) =
        (a.concurrency, a.after_first, a.priority);
    opts.out_dir = a.output_dir.clone();
    Ok(opts)
}

/// Creates the -O directory and checks that each -o file's directory exists.
fn check_files(a: &FetchArgs) -> Result<()> {
    if let Some(d) = &a.output_dir {
        super::serve::not_a_file("-O", d)?;
        std::fs::create_dir_all(d).with_context(|| format!("-O {}", d.display()))?;
    }
    for o in a.output.iter().filter(|o| o.as_os_str() != "-") {
        let missing = |p: &&Path| !p.as_os_str().is_empty() && !p.is_dir();
        if let Some(p) = o.parent().filter(missing) {
            bail!("-o {}: {} is not a directory", o.display(), p.display());
        }
    }
    Ok(())
}

/// A flag's seconds: above 0, at most a day.
fn secs(v: f64, flag: &str) -> Result<Duration> {
    match v.is_finite() && v > 0.0 && v <= 86_400.0 {
        true => Ok(Duration::from_secs_f64(v)),
        false => bail!("{flag} {v}: seconds, above 0 and at most 86400"),
    }
}

/// The client's settings, and with -v a log of frames and heads on stderr.
fn client(a: &FetchArgs, protocol: Option<Protocol>, read: Duration) -> Result<ClientConfig> {
    let mut cfg = ClientConfig::default();
    (cfg.protocol, cfg.read_timeout) = (protocol, Some(read));
    cfg.verify = match a.insecure {
        true => Verify::Insecure,
        false => a.cacert.clone().map_or(Verify::System, Verify::CaFile),
    };
    cfg.spdy.compression.level = a.header_level;
    cfg.spdy.compression.crime_safe = !a.no_crime_safe;
    cfg.spdy.flow_control = a.flow_control;
    let sctp = sctp::client_config(a.transport, !a.no_cookie_bundling, a.sctp_rto_initial_ms);
    cfg.sctp = sctp.map_err(anyhow::Error::msg)?;
    let (flag, mode) = match (a.pipeline, a.connection_per_request) {
        (true, _) => ("--pipeline", Http1Mode::Pipelined),
        (false, true) => ("--connection-per-request", Http1Mode::ConnectionPerRequest),
        (false, false) => ("", cfg.http1_mode),
    };
    if !flag.is_empty() && protocol != Some(Protocol::Http1) {
        bail!("{flag}: HTTP/1.1 only (add --protocol http1)");
    }
    cfg.http1_mode = mode;
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
    Ok(cfg)
}

/// `--priority-of`, `--start` and `--reprioritize`, checked against the URLs and origins.
fn schedule(a: &FetchArgs, origins: usize) -> Result<Schedule> {
    type Add = fn(&mut Schedule, &str, usize) -> Result<(), String>;
    let lists: [(&str, &[String], Add); 3] = [
        ("--priority-of", &a.priority_of, Schedule::add_priority),
        ("--start", &a.start, Schedule::add_start),
        ("--reprioritize", &a.reprioritize, Schedule::add_change),
    ];
    let mut sch = Schedule::default();
    for (flag, values, add) in lists {
        for v in values {
            add(&mut sch, v, a.urls.len()).map_err(|e| anyhow!("{flag} {v}: {e}"))?;
        }
    }
    if origins > 1 && sch.is_timed() {
        bail!(
            "--start and --reprioritize time requests on one connection: give URLs of one origin"
        );
    }
    Ok(sch)
}
