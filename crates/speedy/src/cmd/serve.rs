//! `speedy serve`: files from a directory, or a page archive, over SPDY/3.1, 3, 2, HTTP/2
//! and HTTP/1.1 on one port.

use anyhow::{bail, Context, Result};
use clap::{ArgGroup, Args};
use speedy_net::h3::{H3Listener, QuicCc, QuicCcAlgorithm};
use speedy_net::sctp::{SctpConfig, SctpListener};
use speedy_net::server::{serve, serve_sctp, Handler, Request, ResponseFuture, ServerConfig};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Arguments of `speedy serve`.
#[derive(Args, Debug)]
#[command(
    group(ArgGroup::new("source").required(true).args(["root", "archive"])),
    after_help = "Speaks SPDY/3.1, SPDY/3, SPDY/2, HTTP/2 (h2) and HTTP/1.1. Plain TCP: SPDY, HTTP/2 (prior knowledge) and HTTP/1.1 are told apart by the \
first bytes, and an HTTP/1.1 request with `Connection: Upgrade` and `Upgrade: SPDY/3.1` switches \
its connection to SPDY/3.1 (101; --stream-protocol for Kubernetes' X-Stream-Protocol-Version). \
TLS: by ALPN (spdy/3.1, spdy/3, spdy/2, h2, http/1.1). With --h3, HTTP/3 over QUIC too, on UDP \
at the same address and port, with the same certificate (clients by prior knowledge: no Alt-Svc).\n\n\
Start-up lines (stdout, once every address is bound): `listening on IP:PORT (...)`, with \
--archive one `origin HOST IP:PORT` per origin, then one JSON line for programs:\n  \
{\"listening\":\"IP:PORT\",\"tls\":BOOL,\"plain\":BOOL,\"protocols\":[\"spdy/3.1\",\"spdy/3\",\
\"spdy/2\",\"h2\",\"http/1.1\"],\"root\":DIR | \"archive\":DIR,\"origins\":[{\"host\":HOST,\"addr\":\"IP:PORT\"},...],\"sctp\":BOOL,\"h3\":BOOL}\n\
`tls`/`plain`: which connections the port accepts (an archive with https origins: both); \
`origins` is empty with --root. Read the first line that starts with `{`; fields may be \
added, so ignore unknown ones. Details: docs/serve.md.\n\n\
Limits: request bodies over --max-body are refused unread (HTTP/1.1 413 and close, h2 413, \
SPDY RST_STREAM REFUSED_STREAM; past it mid-body: CANCEL); a handler that does not read a \
body makes the client wait; SPDY header blocks, all frames of a stream together, and h2 \
header lists are bounded at 64 KiB; unread request-body bytes at 8 MiB per connection (reading pauses at half of it).\n\n\
Shutdown: SIGTERM or SIGINT stops accepting, sends GOAWAY (SPDY, h2) or closes after the \
response in flight (HTTP/1.1, `Connection: close` on responses not yet begun), lets open \
streams finish for up to --drain-timeout, then exits 0. A second signal exits at once \
with status 130.\n\n\
Examples (./corpus from `speedy corpus synth --out ./corpus`):\n  \
speedy serve --listen 127.0.0.1:8443 --root ./site --tls-self-signed --h3\n  \
speedy serve --listen 127.0.0.1:8080 --archive ./corpus"
)]
pub struct ServeArgs {
    /// Address to listen on; port 0 picks a free port. The chosen address is printed.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR:PORT")]
    listen: String,
    /// Directory to serve (this or --archive).
    #[arg(long, value_name = "DIR", conflicts_with = "archive")]
    root: Option<PathBuf>,
    /// Replay a page archive (from `speedy corpus`) from memory, every origin at once
    /// (this or --root).
    #[arg(long, value_name = "DIR")]
    archive: Option<PathBuf>,
    /// Archive: what HTML responses push over SPDY and HTTP/2 (none, subresources, all).
    #[arg(
        long,
        default_value = "none",
        value_name = "POLICY",
        requires = "archive"
    )]
    push: String,
    /// Archive: add `x-subresources` (the document's subresources) to HTML responses.
    #[arg(long, requires = "archive")]
    hint: bool,
    /// Archive: answer at once instead of waiting each object's recorded think time.
    #[arg(long, requires = "archive")]
    no_think_time: bool,
    /// Archive: serve https origins without TLS too (TLS is otherwise on, from the lab CA).
    #[arg(long, requires = "archive")]
    plain: bool,
    /// Append one line per request to FILE, as it arrives: `METHOD HOST PATH PROTOCOL`
    /// (host as the client sent it, path with its query, protocol `http/1.1`, `h2`,
    /// `h3`, `spdy/3.1`, ...).
    #[arg(long, value_name = "FILE")]
    log_requests: Option<PathBuf>,
    /// Archive: directory of the lab CA (created if missing; loaders trust DIR/ca.pem).
    /// Default: ARCHIVE/lab-ca.
    #[arg(long, value_name = "DIR", requires = "archive")]
    ca_dir: Option<PathBuf>,
    /// Archive: bind these addresses (comma-separated), origins assigned to them in turn,
    /// all on the --listen port; prints `origin HOST IP:PORT` for each origin.
    #[arg(
        long,
        value_name = "IP,IP,...",
        value_delimiter = ',',
        requires = "archive"
    )]
    bind_origins: Vec<String>,
    /// PEM certificate chain for TLS (with --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key for TLS (with --tls-cert).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// TLS with a certificate made up at start for localhost and 127.0.0.1.
    #[arg(long, conflicts_with = "tls_cert")]
    tls_self_signed: bool,
    /// File of lines `PATH: PUSHED_PATH ...`: requests for PATH push those files (SPDY).
    #[arg(long, value_name = "FILE")]
    push_map: Option<PathBuf>,
    /// Answer POST and PUT with the request body.
    #[arg(long)]
    echo_upload: bool,
    /// Answer requests for PATH with RST_STREAM CANCEL (fault injection for clients).
    #[arg(long, value_name = "PATH")]
    reset_path: Vec<String>,
    /// Streams a client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS).
    #[arg(long, default_value_t = 100, value_name = "N")]
    max_concurrent_streams: u32,
    /// Header compression level 0-9 for responses.
    #[arg(long, default_value_t = 9, value_name = "0-9")]
    header_level: u32,
    /// SPDY response header compression: crime-safe (set-cookie kept apart), zlib (one
    /// shared context) or none (stored blocks).
    #[arg(long, default_value = "crime-safe", value_name = "MODE")]
    header_compression: String,
    /// SPDY window overruns: lenient accepts them from a peer that never sent a
    /// WINDOW_UPDATE (moby/spdystream, Kubernetes) and stops waiting for its credit;
    /// strict resets the stream (docs/flow-control.md).
    #[arg(long, default_value = "lenient", value_name = "strict|lenient")]
    flow_control: spdy::session::FlowControl,
    /// Accept this sub-protocol on an HTTP/1.1 `Upgrade: SPDY/3.1` request
    /// (`X-Stream-Protocol-Version`, repeatable); a request offering only others gets 403.
    #[arg(long, value_name = "PROTOCOL")]
    stream_protocol: Vec<String>,
    /// Largest request body accepted, in bytes (suffixes K, M, G: binary units).
    #[arg(long, default_value = "64M", value_name = "BYTES", value_parser = parse_size)]
    max_body: usize,
    /// TCP_NOTSENT_LOWAT on accepted TCP connections: keep at most about BYTES unsent in
    /// the kernel, so priorities and reprioritizations act within a round trip instead of
    /// behind a socket buffer of seconds on a slow link (e.g. 16K; default: the
    /// kernel's, no limit).
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    notsent_lowat: Option<usize>,
    /// Connections served at once; more wait in the kernel's accept queue.
    #[arg(long, default_value_t = 4096, value_name = "N")]
    max_connections: usize,
    /// Connections from one address (IPv6: one /64) at once; more are closed as they are
    /// accepted, so one peer cannot take every slot. Default: a quarter of
    /// --max-connections; 0: no limit per address.
    #[arg(long, value_name = "N")]
    max_connections_per_ip: Option<usize>,
    /// Seconds a new connection has to send its first bytes (protocol sniffing).
    #[arg(long, default_value = "10", value_name = "SECS", value_parser = parse_secs)]
    sniff_timeout: Duration,
    /// Seconds a TLS handshake may take.
    #[arg(long, default_value = "10", value_name = "SECS", value_parser = parse_secs)]
    tls_handshake_timeout: Duration,
    /// Seconds for an HTTP/1.1 request head, and between requests on a keep-alive
    /// connection.
    #[arg(long, default_value = "30", value_name = "SECS", value_parser = parse_secs)]
    header_read_timeout: Duration,
    /// Seconds a handler waits for the next bytes of a request body before its read
    /// fails (a peer trickling or stalling a body).
    #[arg(long, default_value = "30", value_name = "SECS", value_parser = parse_secs)]
    body_read_timeout: Duration,
    /// Seconds a SPDY or h2 session may have no open stream before it gets GOAWAY and
    /// is closed.
    #[arg(long, default_value = "120", value_name = "SECS", value_parser = parse_secs)]
    idle_timeout: Duration,
    /// Seconds a SPDY session may stay quiet (no open stream, nothing to write) before
    /// it gives back the memory it can rebuild: its zlib contexts shrink to their
    /// histories and its empty read buffer is freed (about 27 KiB of a session's 31).
    #[arg(long, default_value = "1", value_name = "SECS", value_parser = parse_secs)]
    park_after: Duration,
    /// Seconds streams have to finish after SIGTERM/SIGINT before the server exits
    /// anyway.
    #[arg(long, default_value = "30", value_name = "SECS", value_parser = parse_secs)]
    drain_timeout: Duration,
    /// Sample every connection's TCP sender state (cwnd, ssthresh, bytes in flight, RTT,
    /// RTO, retransmissions) into FILE, one JSON line per connection per sample.
    #[arg(long, value_name = "FILE")]
    tcp_series: Option<PathBuf>,
    /// Milliseconds between --tcp-series samples.
    #[arg(long, default_value_t = 10, value_name = "MS", requires = "tcp_series")]
    tcp_interval_ms: u64,
    /// Also accept SPDY over SCTP (SCTP over UDP, RFC 6951 framing) on the same
    /// addresses and port numbers, over UDP (docs/sctp.md).
    #[arg(long)]
    sctp: bool,
    /// With --sctp: SCTP's RTO.Initial in ms, the timeout before an association's first
    /// round trip is measured (default 3000, as Linux; RFC 9260 says 1000).
    #[arg(long, value_name = "MS", requires = "sctp", value_parser = clap::value_parser!(u32).range(1..=60_000))]
    sctp_rto_initial_ms: Option<u32>,
    /// With --sctp: keep FILE holding this process's SCTP counters as JSON (associations,
    /// DATA chunks and SACKs received, T3 timeouts, fast retransmissions, delayed-SACK
    /// timeouts, all since start), rewritten within 20 ms of a change: the lab reads it
    /// around each load, as it reads the kernel's TCP counters.
    #[arg(long, value_name = "FILE", requires = "sctp")]
    sctp_counters: Option<PathBuf>,
    /// Also accept HTTP/3 over QUIC on UDP at the same addresses and port numbers, with
    /// the TLS certificate of the TCP side (so it needs TLS: --tls-self-signed,
    /// --tls-cert, or an archive of https origins). UDP's port is SCTP's too: not with
    /// --sctp.
    #[arg(long, conflicts_with = "sctp")]
    h3: bool,
    /// With --h3: QUIC's initial congestion window in bytes (quinn's CUBIC; default
    /// 14720, RFC 9002's), as `ip route ... initcwnd` sets TCP's.
    #[arg(long, value_name = "BYTES", requires = "h3", value_parser = clap::value_parser!(u64).range(1200..=100_000_000))]
    quic_initial_window: Option<u64>,
    /// With --h3: QUIC's congestion control, quinn's cubic (default), bbr or newreno
    /// (also `reno`): e.g. the algorithm the TCP side runs, for a like-for-like
    /// comparison.
    #[arg(long, value_name = "NAME", requires = "h3", value_parser = QuicCcAlgorithm::parse)]
    quic_cc: Option<QuicCcAlgorithm>,
    /// Also answer one-datagram GETs on UDP at the same addresses and port numbers: a
    /// datagram holding a path gets the file back in one datagram (at most 65,506
    /// bytes), SST's Fig 7 UDP baseline (`speedy fetch --protocol udp`). It amplifies
    /// (a small datagram gets up to 64 KiB back): labs and loopback only.
    #[arg(long, conflicts_with_all = ["sctp", "h3"])]
    udp_get: bool,
}

/// `64M`, `512K`, `1G`, `1000`: bytes, binary units.
fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1usize << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("{s:?}: expected bytes like 1048576, 512K, 64M or 1G"))
}

/// Seconds, fractions allowed (`0.5`); more than zero.
fn parse_secs(s: &str) -> Result<Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() && x < 1e9 => Ok(Duration::from_secs_f64(x)),
        _ => Err(format!("{s:?}: expected seconds above 0, like 30 or 0.5")),
    }
}

impl ServeArgs {
    /// QUIC's congestion control from --quic-cc and --quic-initial-window.
    fn quic_cc(&self) -> QuicCc {
        QuicCc {
            algorithm: self.quic_cc.unwrap_or_default(),
            initial_window: self.quic_initial_window,
        }
    }

    /// The limits and the shutdown signal, on a server configuration.
    fn apply_limits(&self, cfg: &mut ServerConfig) {
        cfg.max_body = self.max_body;
        cfg.notsent_lowat = self.notsent_lowat.map(|n| n.min(u32::MAX as usize) as u32);
        cfg.limits.max_connections = self.max_connections;
        cfg.limits.max_connections_per_ip = self
            .max_connections_per_ip
            .unwrap_or((self.max_connections / 4).max(1));
        cfg.limits.sniff_timeout = self.sniff_timeout;
        cfg.limits.tls_handshake_timeout = self.tls_handshake_timeout;
        cfg.limits.header_read_timeout = self.header_read_timeout;
        cfg.limits.body_read_timeout = self.body_read_timeout;
        cfg.limits.idle_timeout = self.idle_timeout;
        cfg.limits.park_after = self.park_after;
    }

    /// The SPDY session settings of the command line (and the TCP series, if asked).
    fn apply_spdy(&self, cfg: &mut ServerConfig) -> Result<()> {
        cfg.tcp_series = tcp_series(self.tcp_series.as_deref(), self.tcp_interval_ms)?;
        cfg.spdy.max_concurrent_streams = self.max_concurrent_streams;
        cfg.spdy.compression.level = self.header_level;
        cfg.spdy.flow_control = self.flow_control;
        cfg.stream_protocols = self.stream_protocol.clone();
        if self.header_level > 9 {
            bail!("--header-level {}: must be 0 to 9", self.header_level);
        }
        spdy::HeaderCompression::parse(&self.header_compression)
            .map_err(|e| anyhow::anyhow!("--header-compression {e}"))?
            .apply(&mut cfg.spdy.compression);
        Ok(())
    }
}

/// The TLS side of a listener: a fresh self-signed pair, or a certificate chain and its
/// key (PEM), offering every protocol by ALPN; neither leaves `cfg` plain TCP only.
pub(crate) fn set_tls(
    cfg: &mut ServerConfig,
    self_signed: bool,
    cert: Option<&Path>,
    key: Option<&Path>,
) -> Result<()> {
    let pair = if self_signed {
        Some(speedy_net::tls::self_signed(&[]).map_err(anyhow::Error::msg)?)
    } else if let (Some(c), Some(k)) = (cert, key) {
        Some(speedy_net::tls::load_pem(c, k).map_err(anyhow::Error::msg)?)
    } else {
        None
    };
    if let Some((c, k)) = pair {
        let named = |e: String| match (cert, key) {
            (Some(c), Some(k)) => anyhow::anyhow!(
                "--tls-cert {} / --tls-key {}: {e}",
                c.display(),
                k.display()
            ),
            _ => anyhow::anyhow!(e),
        };
        cfg.tls = Some(
            speedy_net::tls::server_config(c, k, &speedy_net::tls::SERVER_ALPN).map_err(named)?,
        );
    }
    Ok(())
}

/// Starts a sender-side TCP series into `path` (created or truncated), if given.
pub(crate) fn tcp_series(
    path: Option<&Path>,
    interval_ms: u64,
) -> Result<Option<Arc<speedy_net::sockinfo::TcpSeries>>> {
    let Some(p) = path else { return Ok(None) };
    if interval_ms == 0 {
        bail!("--tcp-interval-ms 0: at least 1");
    }
    let f = std::fs::File::create(p).with_context(|| format!("--tcp-series {}", p.display()))?;
    let interval = Duration::from_millis(interval_ms);
    Ok(Some(speedy_net::sockinfo::TcpSeries::start(
        std::io::BufWriter::new(f),
        interval,
    )))
}

/// Serves on every listener until SIGTERM or SIGINT, then drains for up to `drain`; a
/// second signal exits the process at once (status 130).
pub(crate) async fn serve_until_signal(
    listeners: Vec<tokio::net::TcpListener>,
    udp: Udp,
    cfg: ServerConfig,
    handler: Arc<dyn Handler>,
    drain: Duration,
) -> Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).context("SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("SIGINT handler")?;
    let shutdown = cfg.shutdown.clone();
    let mut tasks = tokio::task::JoinSet::new();
    for l in listeners {
        tasks.spawn(serve(l, cfg.clone(), handler.clone()));
    }
    for l in udp.sctp {
        tasks.spawn(serve_sctp(l, cfg.clone(), handler.clone()));
    }
    if let Some(path) = udp.sctp_counters {
        let mut held = None;
        keep_sctp_counters(&path, &mut held)?;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                if let Err(e) = keep_sctp_counters(&path, &mut held) {
                    eprintln!("speedy serve: --sctp-counters: {e:#}");
                    return;
                }
            }
        });
    }
    for l in udp.h3 {
        tasks.spawn(speedy_net::h3::serve_h3(l, cfg.clone(), handler.clone()));
    }
    for s in udp.udp_get {
        tasks.spawn(speedy_net::udp_get::serve_udp_get(
            s,
            cfg.clone(),
            handler.clone(),
        ));
    }
    let all_done = async {
        while let Some(r) = tasks.join_next().await {
            r??;
        }
        anyhow::Ok(())
    };
    tokio::pin!(all_done);
    let name = tokio::select! {
        r = &mut all_done => return r,
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    eprintln!("speedy serve: {name}: draining (up to {drain:?}; a second signal exits now)");
    shutdown.trigger();
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        eprintln!("speedy serve: second signal: exiting now");
        std::process::exit(130);
    });
    match tokio::time::timeout(drain, &mut all_done).await {
        Ok(r) => r?,
        Err(_) => eprintln!("speedy serve: drain timeout: closing the connections left"),
    }
    Ok(())
}

/// Serves until SIGTERM/SIGINT and the drain after it; returns early only on a start-up
/// error.
/// A directory option that names something else is refused by name (it would otherwise
/// fail later in words about a file inside it).
pub(crate) fn not_a_file(flag: &str, p: &Path) -> Result<()> {
    if p.exists() && !p.is_dir() {
        bail!("{flag} {}: not a directory", p.display());
    }
    Ok(())
}

/// The SPDY DATA frame size for a stream alone on its session, serving `--root`.
const LONE_DATA_FRAME: usize = 64 * 1024;

pub async fn run(a: ServeArgs) -> Result<()> {
    // Every value is checked before anything starts, whichever mode uses it.
    a.push
        .parse::<speedy_server::PushPolicy>()
        .map_err(|e| anyhow::anyhow!("--push {}: {e}", a.push))?;
    if a.max_connections == 0 {
        bail!("--max-connections 0: at least 1");
    }
    if let Some(d) = &a.ca_dir {
        not_a_file("--ca-dir", d)?;
    }
    if let Some(dir) = a.archive.clone() {
        return run_archive(a, &dir).await;
    }
    let root_arg = a.root.clone().expect("clap requires --root or --archive");
    let root = root_arg
        .canonicalize()
        .with_context(|| format!("--root {}", root_arg.display()))?;
    if !root.is_dir() {
        bail!("--root {}: not a directory", root.display());
    }
    let push_map = match &a.push_map {
        Some(p) => parse_push_map(p)?,
        None => HashMap::new(),
    };
    let mut cfg = ServerConfig::default();
    a.apply_limits(&mut cfg);
    a.apply_spdy(&mut cfg)?;
    // Files: a download alone on its session goes out in 64 KiB DATA frames (8 KiB once
    // another stream has data). Archive replay keeps 8 KiB throughout, as the lab's
    // SPDY loads have always been framed.
    cfg.spdy.lone_data_frame = LONE_DATA_FRAME;
    set_tls(
        &mut cfg,
        a.tls_self_signed,
        a.tls_cert.as_deref(),
        a.tls_key.as_deref(),
    )?;
    let listener = tokio::net::TcpListener::bind(&a.listen)
        .await
        .with_context(|| format!("--listen {}", a.listen))?;
    let addr = listener.local_addr()?;
    let sctp = bind_sctp(a.sctp, a.sctp_rto_initial_ms, &[addr]).await?;
    let h3 = bind_h3(a.h3, a.quic_cc(), &cfg, &[addr])?;
    let udp_get = bind_udp_get(a.udp_get, &[addr]).await?;
    let mode = if cfg.tls.is_some() { "tls" } else { "plain" };
    // Human line, then the JSON start-up line (see after_help).
    let protocols = speedy_net::tls::SERVER_ALPN;
    let startup = speedy_lab::testbed::ServeStartup {
        root: Some(root.display().to_string()),
        sctp: !sctp.is_empty(),
        h3: !h3.is_empty(),
        ..speedy_lab::testbed::ServeStartup::new(addr, cfg.tls.is_some())
    };
    let human = format!(
        "listening on {addr} ({mode}; {}; root {}){}{}\n",
        protocols.join(", "),
        root.display(),
        sctp_note(&sctp),
        h3_note(&h3)
    );
    startup.announce(&human, std::io::stdout().lock())?;
    let handler = with_request_log(
        Arc::new(speedy_server::files::FileServer::new(
            root,
            push_map,
            a.echo_upload,
            a.reset_path.into_iter().collect(),
        )),
        a.log_requests.as_deref(),
    )?;
    let udp = Udp {
        sctp,
        sctp_counters: a.sctp_counters.clone(),
        h3,
        udp_get,
    };
    serve_until_signal(vec![listener], udp, cfg, handler, a.drain_timeout).await
}

/// What a server accepts over UDP beside its TCP listeners.
#[derive(Default)]
pub(crate) struct Udp {
    /// `--sctp`: SPDY over SCTP.
    pub(crate) sctp: Vec<SctpListener>,
    /// `--sctp-counters`: where the SCTP counters are kept.
    pub(crate) sctp_counters: Option<PathBuf>,
    /// `--h3`: HTTP/3 over QUIC.
    pub(crate) h3: Vec<H3Listener>,
    /// `--udp-get`: one datagram each way.
    pub(crate) udp_get: Vec<tokio::net::UdpSocket>,
}

/// Writes the process's SCTP counters to `path` when they differ from `held`, what it
/// holds (through a temporary file and a rename: a reader never sees half of it).
fn keep_sctp_counters(
    path: &Path,
    held: &mut Option<speedy_net::sctp::counters::Counters>,
) -> Result<()> {
    let now = speedy_net::sctp::counters::totals();
    if *held == Some(now) {
        return Ok(());
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_string(&now)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    *held = Some(now);
    Ok(())
}

/// With `--udp-get`: a UDP socket at each of `addrs`.
async fn bind_udp_get(
    on: bool,
    addrs: &[std::net::SocketAddr],
) -> Result<Vec<tokio::net::UdpSocket>> {
    let mut v = Vec::new();
    for a in addrs.iter().filter(|_| on) {
        let s = tokio::net::UdpSocket::bind(a)
            .await
            .with_context(|| format!("--udp-get: binding UDP {a}"))?;
        v.push(s);
    }
    Ok(v)
}

/// With `--h3`: a QUIC endpoint on UDP at each of `addrs`, with the TLS configuration of
/// `cfg` (refused by name without one).
fn bind_h3(
    on: bool,
    cc: QuicCc,
    cfg: &ServerConfig,
    addrs: &[std::net::SocketAddr],
) -> Result<Vec<H3Listener>> {
    if !on {
        return Ok(Vec::new());
    }
    let Some(tls) = &cfg.tls else {
        bail!("--h3: HTTP/3 needs TLS (--tls-self-signed, --tls-cert, or an archive of https origins)");
    };
    addrs
        .iter()
        .map(|a| H3Listener::bind(*a, tls, cc).with_context(|| format!("--h3: binding UDP {a}")))
        .collect()
}

/// The human start-up line's note on HTTP/3.
fn h3_note(h3: &[H3Listener]) -> String {
    if h3.is_empty() {
        String::new()
    } else {
        "; h3 over QUIC on UDP, same port".into()
    }
}

/// With `--sctp`: an SCTP endpoint on UDP at each of `addrs`.
async fn bind_sctp(
    on: bool,
    rto_initial_ms: Option<u32>,
    addrs: &[std::net::SocketAddr],
) -> Result<Vec<SctpListener>> {
    let cfg = SctpConfig::default().with_rto_initial_ms(rto_initial_ms);
    let mut out = Vec::new();
    if on {
        for a in addrs {
            let l = SctpListener::bind(*a, &cfg)
                .await
                .with_context(|| format!("--sctp: binding UDP {a}"))?;
            out.push(l);
        }
    }
    Ok(out)
}

/// The human start-up line's note on SCTP.
fn sctp_note(sctp: &[SctpListener]) -> String {
    if sctp.is_empty() {
        String::new()
    } else {
        "; SPDY over SCTP on UDP, same port".into()
    }
}

async fn run_archive(a: ServeArgs, dir: &Path) -> Result<()> {
    use speedy_server::{PushPolicy, Replay, ReplayOptions};
    let archive = speedy_archive::Archive::load(dir).map_err(anyhow::Error::msg)?;
    let push: PushPolicy = a.push.parse().map_err(|e| anyhow::anyhow!("--push: {e}"))?;
    let https = archive
        .objects
        .iter()
        .any(|o| o.url.starts_with("https://"));
    let replay = Replay::new(
        Arc::new(archive),
        ReplayOptions {
            push,
            hint: a.hint,
            think_time: !a.no_think_time,
        },
    );
    let hosts = replay.hosts();
    let mut cfg = ServerConfig::default();
    a.apply_limits(&mut cfg);
    a.apply_spdy(&mut cfg)?;
    if https && !a.plain {
        let ca_dir = a.ca_dir.clone().unwrap_or_else(|| dir.join("lab-ca"));
        let (c, k) = speedy_server::ca::issue(&ca_dir, &hosts).map_err(anyhow::Error::msg)?;
        cfg.tls = Some(
            speedy_net::tls::server_config(c, k, &speedy_net::tls::SERVER_ALPN)
                .map_err(anyhow::Error::msg)?,
        );
    }
    let handler = with_request_log(Arc::new(replay), a.log_requests.as_deref())?;
    let mode = if cfg.tls.is_some() {
        "tls+plain"
    } else {
        "plain"
    };
    let port = a
        .listen
        .rsplit_once(':')
        .map(|(_, p)| p.to_string())
        .unwrap_or_else(|| "0".into());
    let binds: Vec<String> = if a.bind_origins.is_empty() {
        vec![a.listen.clone()]
    } else {
        a.bind_origins
            .iter()
            .map(|ip| {
                if ip.contains(':') {
                    format!("[{ip}]:{port}")
                } else {
                    format!("{ip}:{port}")
                }
            })
            .collect()
    };
    let mut listeners = Vec::new();
    for b in &binds {
        let l = tokio::net::TcpListener::bind(b)
            .await
            .with_context(|| format!("binding {b}"))?;
        listeners.push(l);
    }
    let addrs: Vec<std::net::SocketAddr> = listeners
        .iter()
        .map(|l| l.local_addr())
        .collect::<std::io::Result<_>>()?;
    let sctp = bind_sctp(a.sctp, a.sctp_rto_initial_ms, &addrs).await?;
    let h3 = bind_h3(a.h3, a.quic_cc(), &cfg, &addrs)?;
    let udp_get = bind_udp_get(a.udp_get, &addrs).await?;
    // Human lines, then the JSON start-up line (see after_help).
    let protocols = speedy_net::tls::SERVER_ALPN;
    let origins: Vec<speedy_lab::testbed::ServedOrigin> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| speedy_lab::testbed::ServedOrigin {
            host: h.to_string(),
            addr: addrs[i % addrs.len()],
        })
        .collect();
    let mut human = format!(
        "listening on {} ({mode}; {}; archive {}, {} origins){}{}\n",
        addrs[0],
        protocols.join(", "),
        dir.display(),
        hosts.len(),
        sctp_note(&sctp),
        h3_note(&h3)
    );
    for o in &origins {
        human.push_str(&format!("origin {} {}\n", o.host, o.addr));
    }
    let startup = speedy_lab::testbed::ServeStartup {
        archive: Some(dir.display().to_string()),
        origins,
        sctp: !sctp.is_empty(),
        h3: !h3.is_empty(),
        ..speedy_lab::testbed::ServeStartup::new(addrs[0], cfg.tls.is_some())
    };
    startup.announce(&human, std::io::stdout().lock())?;
    let udp = Udp {
        sctp,
        sctp_counters: a.sctp_counters.clone(),
        h3,
        udp_get,
    };
    serve_until_signal(listeners, udp, cfg, handler, a.drain_timeout).await
}

/// `handler`, wrapped in a [`RequestLog`] appending to `log` when one is given.
fn with_request_log(handler: Arc<dyn Handler>, log: Option<&Path>) -> Result<Arc<dyn Handler>> {
    let Some(p) = log else { return Ok(handler) };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(p)
        .with_context(|| format!("--log-requests {}", p.display()))?;
    Ok(Arc::new(RequestLog {
        inner: handler,
        file: Mutex::new(file),
    }))
}

/// Wraps a handler and writes `METHOD HOST PATH PROTOCOL` per request (`--log-requests`).
struct RequestLog {
    inner: Arc<dyn Handler>,
    file: Mutex<std::fs::File>,
}

impl Handler for RequestLog {
    fn handle(&self, req: Request) -> ResponseFuture {
        let line = format!(
            "{} {} {} {}\n",
            req.method, req.host, req.path, req.protocol
        );
        // One write per line, so concurrent connections never interleave within a line.
        let _ = self
            .file
            .lock()
            .expect("not poisoned")
            .write_all(line.as_bytes());
        self.inner.handle(req)
    }
}

/// Reads a push map: `PATH: PUSHED_PATH ...` per line, `#` comments.
fn parse_push_map(p: &Path) -> Result<HashMap<String, Vec<String>>> {
    let text = std::fs::read_to_string(p).with_context(|| format!("--push-map {}", p.display()))?;
    let mut map = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let Some((k, v)) = line.split_once(':') else {
            bail!(
                "{}:{}: expected `PATH: PUSHED_PATH ...`, got {line:?}",
                p.display(),
                i + 1
            );
        };
        let k = k.trim();
        let pushed: Vec<String> = v.split_whitespace().map(str::to_string).collect();
        if !k.starts_with('/') || pushed.iter().any(|x| !x.starts_with('/')) {
            bail!("{}:{}: paths must start with '/'", p.display(), i + 1);
        }
        map.entry(k.to_string())
            .or_insert_with(Vec::new)
            .extend(pushed);
    }
    Ok(map)
}
