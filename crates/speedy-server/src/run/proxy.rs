//! `speedy proxy` from its [`ProxySpec`]: the forward proxy ([`crate::proxy`]) on one
//! TCP port, plain and TLS.

use super::bind::{bind_tcp, set_tls, tcp_series, use_pair, Udp};
use super::serve::local_addr;
use super::{named, not_a_file, Serving};
use crate::allow::{split_port, Allow, Host};
use crate::proxy::{Proxy, ProxyOptions};
use crate::recorder::Recorder;
use crate::spec::ProxySpec;
use crate::startup::ServeStartup;
use speedy_net::client::{ClientConfig, Protocol};
use speedy_net::server::ServerConfig;
use speedy_net::tls::Verify;
use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// How long the proxy's streams have to finish after SIGTERM/SIGINT.
const DRAIN: Duration = Duration::from_secs(10);

/// Runs `speedy proxy` as `spec` asks: checks it, binds `listen`, writes the start-up
/// lines (those of `speedy serve`, origins empty) to `out`, and serves until
/// SIGTERM/SIGINT and the drain after it; returns early only on a start-up error.
pub async fn proxy(spec: &ProxySpec, out: impl Write) -> Result<(), String> {
    spec.check()?;
    if let Some(d) = &spec.tls_ca_dir {
        not_a_file("--tls-ca-dir", d)?;
    }
    let opts = proxy_options(spec)?;
    let recorder = open_record(spec)?;
    let recording = recorder.clone();
    let handler = Arc::new(Proxy::recording(opts.clone(), open_log(spec)?, recorder));
    let mut cfg = ServerConfig {
        tcp_series: tcp_series(spec.tcp_series.as_deref(), spec.tcp_interval_ms)?,
        // A declared length over it is refused before the proxy sees the request.
        max_body: spec.max_body,
        ..Default::default()
    };
    let idle = Duration::from_secs(spec.idle_timeout.max(1));
    cfg.limits.idle_timeout = idle;
    cfg.limits.header_read_timeout = idle;
    set_tls(
        &mut cfg,
        spec.tls_self_signed,
        spec.tls_cert.as_deref(),
        spec.tls_key.as_deref(),
    )?;
    if let Some(dir) = &spec.tls_ca_dir {
        // The certificate names the host part of `listen` (an IP or a name).
        let host = spec
            .listen
            .rsplit_once(':')
            .map_or(spec.listen.as_str(), |(h, _)| h)
            .trim_matches(['[', ']']);
        let pair = crate::ca::issue(dir, &[host.to_string()])
            .map_err(|e| format!("--tls-ca-dir {}: {e}", dir.display()))?;
        use_pair(&mut cfg, pair, |e| e)?;
    }
    let listeners = bind_tcp(std::slice::from_ref(&spec.listen), |b| {
        format!("--listen {b}")
    })
    .await?;
    // Human line, then the JSON start-up line of `speedy serve` (origins empty).
    let addr = local_addr(&listeners[0])?;
    let startup = ServeStartup::new(addr, cfg.tls.is_some());
    let mode = if cfg.tls.is_some() {
        "tls and plain"
    } else {
        "plain"
    };
    let human = format!(
        "listening on {addr} (proxy; {mode}; {}{})\n",
        speedy_net::tls::SERVER_ALPN.join(", "),
        if recording.is_some() {
            "; recording"
        } else {
            ""
        }
    );
    startup
        .announce(&human, out)
        .map_err(|e| super::with_causes(&e))?;
    for line in warnings(spec, &opts, addr) {
        eprintln!("speedy proxy: {line}");
    }
    let serving = Serving {
        listeners,
        udp: Udp::default(),
        cfg,
        handler,
        drain: DRAIN,
    };
    let served = serving.until_signal().await;
    if let Some(r) = recording {
        // Bodies the origins were still sending when their clients had gone.
        if !r.settle(DRAIN).await {
            eprintln!("speedy proxy: --record: some exchanges were still unfinished; not written");
        }
    }
    served
}

/// How the proxy reaches origins, and which: `resolve`, `allow`, `upstream`,
/// certificate checking, timeout (what `speedy proxy` serves with; in-process tests
/// build their proxies from a spec with it too).
pub fn proxy_options(spec: &ProxySpec) -> Result<ProxyOptions, String> {
    let mut resolve = HashMap::new();
    let mut fallback = None;
    for r in &spec.resolve {
        let (host, addr) = speedy_net::client::parse_resolve(r)?;
        if host == "*" {
            fallback = Some(addr);
            continue;
        }
        let key = split_port(&host)
            .and_then(|(h, port)| Ok((Host::parse(h)?, port)))
            .map_err(|e| format!("--resolve {r:?}: HOST[:PORT]: {e}"))?;
        resolve.insert(key, addr);
    }
    let upstream = match spec.upstream.as_deref() {
        None => None,
        Some(p) => match Protocol::parse(p) {
            Ok(p @ (Protocol::Http1 | Protocol::Spdy(_))) => Some(p),
            _ => return Err(format!("--upstream {p}: use http1 or spdy (SPDY/3.1)")),
        },
    };
    let verify = if spec.insecure {
        Verify::Insecure
    } else if let Some(c) = &spec.cacert {
        speedy_net::tls::ca_certs(c)?;
        Verify::CaFile(c.clone())
    } else {
        Verify::System
    };
    Ok(ProxyOptions {
        resolve,
        fallback,
        allow: Allow::parse(&spec.allow)?,
        upstream,
        client: ClientConfig {
            verify,
            ..Default::default()
        },
        timeout: Duration::from_secs(spec.timeout),
        max_body: spec.max_body,
    })
}

/// What the proxy says on standard error at start: that nothing is allowed (every
/// request will get 403), and that it listens where other machines can reach it (not a
/// loopback address), with what they can reach through it. One line each; none when the
/// spec says `quiet`.
fn warnings(spec: &ProxySpec, opts: &ProxyOptions, addr: SocketAddr) -> Vec<String> {
    let mut out = Vec::new();
    if spec.quiet {
        return out;
    }
    if spec.allows_nothing() {
        out.push(
            "nothing is allowed: every request gets 403; pass --allow HOST[:PORT] (repeatable; \
             '*.example.com', or '*' for every host) or --resolve HOST=IP[:PORT]"
                .into(),
        );
    }
    if !addr.ip().to_canonical().is_loopback() {
        let reach = if let Some((ip, port)) = opts.fallback {
            let at = port.map_or(ip.to_string(), |p| SocketAddr::new(ip, p).to_string());
            format!("{at} under any host name (--resolve '*=...')")
        } else if opts.allow.is_everything() {
            "any host at any port (--allow '*': an open proxy)".into()
        } else if spec.allows_nothing() {
            "nothing yet (nothing is allowed)".into()
        } else {
            "the hosts --allow and --resolve name".into()
        };
        out.push(format!(
            "listening on {addr}, reachable from other machines: whoever can connect can use \
             it to reach {reach} (--listen 127.0.0.1:PORT keeps it to this machine)"
        ));
    }
    out
}

/// `record`: the recorder, its log opened for appending and its CA loaded or made.
fn open_record(spec: &ProxySpec) -> Result<Option<Arc<Recorder>>, String> {
    let (Some(file), Some(ca)) = (&spec.record, spec.record_ca_dir()) else {
        return Ok(None);
    };
    not_a_file("--record-ca", &ca)?;
    if file.is_dir() {
        return Err(format!(
            "--record {}: a directory, not a file",
            file.display()
        ));
    }
    let r = Recorder::open(file, &ca).map_err(|e| format!("--record {}: {e}", file.display()))?;
    Ok(Some(Arc::new(r)))
}

/// `log`: the request log, opened for appending.
fn open_log(spec: &ProxySpec) -> Result<Option<std::fs::File>, String> {
    let Some(p) = &spec.log else { return Ok(None) };
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(p)
        .map(Some)
        .map_err(|e| named(format!("--log {}", p.display()), &e))
}
