//! `speedy proxy` from its [`ProxySpec`]: the forward proxy ([`crate::proxy`]) on one
//! TCP port, plain and TLS.

use super::bind::{bind_tcp, set_tls, tcp_series, use_pair, Udp};
use super::serve::local_addr;
use super::{named, not_a_file, Serving};
use crate::proxy::{Proxy, ProxyOptions};
use crate::spec::ProxySpec;
use crate::startup::ServeStartup;
use speedy_net::client::{ClientConfig, Protocol};
use speedy_net::server::ServerConfig;
use speedy_net::tls::Verify;
use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

/// How long the proxy's streams have to finish after SIGTERM/SIGINT.
const DRAIN: Duration = Duration::from_secs(10);

/// The largest request body the proxy forwards.
const MAX_BODY: usize = 64 << 20;

/// Runs `speedy proxy` as `spec` asks: checks it, binds `listen`, writes the start-up
/// lines (those of `speedy serve`, origins empty) to `out`, and serves until
/// SIGTERM/SIGINT and the drain after it; returns early only on a start-up error.
pub async fn proxy(spec: &ProxySpec, out: impl Write) -> Result<(), String> {
    spec.check()?;
    if let Some(d) = &spec.tls_ca_dir {
        not_a_file("--tls-ca-dir", d)?;
    }
    let handler = Arc::new(Proxy::new(options(spec)?, open_log(spec)?));
    let mut cfg = ServerConfig {
        tcp_series: tcp_series(spec.tcp_series.as_deref(), spec.tcp_interval_ms)?,
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
        "listening on {addr} (proxy; {mode}; {})\n",
        speedy_net::tls::SERVER_ALPN.join(", ")
    );
    startup
        .announce(&human, out)
        .map_err(|e| super::with_causes(&e))?;
    let serving = Serving {
        listeners,
        udp: Udp::default(),
        cfg,
        handler,
        drain: DRAIN,
    };
    serving.until_signal().await
}

/// How the proxy reaches origins: `resolve`, `upstream`, certificate checking, timeout.
fn options(spec: &ProxySpec) -> Result<ProxyOptions, String> {
    let mut resolve = HashMap::new();
    let mut fallback = None;
    for r in &spec.resolve {
        let (host, addr) = speedy_net::client::parse_resolve(r)?;
        if host == "*" {
            fallback = Some(addr);
        } else {
            resolve.insert(host, addr);
        }
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
        upstream,
        client: ClientConfig {
            verify,
            ..Default::default()
        },
        timeout: Duration::from_secs(spec.timeout),
        max_body: MAX_BODY,
    })
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
