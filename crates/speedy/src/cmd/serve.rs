//! `speedy serve`: files from a directory, or a page archive, over SPDY/3.1, 3, 2, HTTP/2
//! and HTTP/1.1 on one port.

use anyhow::{bail, Context, Result};
use clap::Args;
use speedy_net::h3::{H3Listener, QuicCc};
use speedy_net::sctp::{SctpConfig, SctpListener};
use speedy_net::server::{serve, serve_sctp, Handler, Request, ResponseFuture, ServerConfig};
use speedy_server::spec::{read_spec, ServeSpec};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Arguments of `speedy serve`.
#[derive(Args, Debug)]
#[command(
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
    /// Read every option from FILE instead of flags: JSON (TOML for a `.toml` name; `-`
    /// reads JSON from standard input), keys named as the flags with `_` for `-`
    /// (`"archive": "DIR"`, `"h3": true`); `--print-spec` writes one.
    #[arg(long, value_name = "FILE", exclusive = true)]
    spec: Option<PathBuf>,
    /// Print the server's spec as JSON (every option, defaults filled in) and exit.
    #[arg(long)]
    print_spec: bool,
    #[command(flatten)]
    opts: ServeSpec,
}

impl ServeArgs {
    /// The server asked for: the spec file, or the flags.
    fn spec(&self) -> Result<ServeSpec> {
        match &self.spec {
            Some(p) => read_spec(p).map_err(anyhow::Error::msg),
            None => Ok(self.opts.clone()),
        }
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

pub async fn run(args: ServeArgs) -> Result<()> {
    let a = args.spec()?;
    if args.print_spec {
        println!("{}", serde_json::to_string_pretty(&a)?);
        return Ok(());
    }
    // Every value is checked before anything starts, whichever mode uses it.
    a.check().map_err(anyhow::Error::msg)?;
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
    a.apply_spdy(&mut cfg);
    cfg.tcp_series = tcp_series(a.tcp_series.as_deref(), a.tcp_interval_ms)?;
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
    let startup = speedy_server::startup::ServeStartup {
        root: Some(root.display().to_string()),
        sctp: !sctp.is_empty(),
        h3: !h3.is_empty(),
        ..speedy_server::startup::ServeStartup::new(addr, cfg.tls.is_some())
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

async fn run_archive(a: ServeSpec, dir: &Path) -> Result<()> {
    use speedy_server::{PushPolicy, Replay, ReplayOptions};
    let archive = speedy_archive::Archive::load(dir).map_err(anyhow::Error::msg)?;
    let push: PushPolicy = a.push;
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
    a.apply_spdy(&mut cfg);
    cfg.tcp_series = tcp_series(a.tcp_series.as_deref(), a.tcp_interval_ms)?;
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
    let startup = speedy_server::startup::ServeStartup {
        archive: Some(dir.display().to_string()),
        origins,
        sctp: !sctp.is_empty(),
        h3: !h3.is_empty(),
        ..speedy_server::startup::ServeStartup::new(addrs[0], cfg.tls.is_some())
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
