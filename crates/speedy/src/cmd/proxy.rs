//! `speedy proxy`: a forward proxy speaking SPDY/3.1 (TLS with ALPN, as Chrome's SPDY
//! proxy), HTTP/1.1 (absolute-form requests) and h2 to clients, and HTTP/1.1 or SPDY to
//! origins over pooled connections (`speedy_server::proxy`).

use anyhow::{Context, Result};
use clap::Args;
use speedy_net::client::{ClientConfig, Protocol};
use speedy_net::server::ServerConfig;
use speedy_net::tls::Verify;
use speedy_server::proxy::{Proxy, ProxyOptions};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `speedy proxy`.
#[derive(Args, Debug)]
#[command(
    after_help = "Clients: SPDY/3.1, SPDY/3, SPDY/2 and h2 requests name their origin \
in :host/:authority and :scheme; HTTP/1.1 requests use absolute form \
(GET http://host/path HTTP/1.1). Over TLS (--tls-self-signed or --tls-cert/--tls-key), ALPN \
picks the protocol, as Chrome's SPDY proxy. HTTP/1.1 CONNECT host:port opens a tunnel to \
the target (found through --resolve).\n\n\
Origins: reached at the addresses of --resolve (the lab has no DNS), over one pooled \
connection per origin: HTTP/1.1 for http:// (--upstream spdy for SPDY/3.1), ALPN for https://. \
An origin that cannot be reached gives 502, one that does not answer in --timeout 504, each \
with the reason in the body and in x-speedy-proxy-error.\n\n\
--log FILE: one JSON line per request: url, method, status, client_protocol, \
origin_protocol, bytes, first_byte_from_origin_ms, last_byte_from_origin_ms, \
last_byte_to_client_ms (from the request's arrival; the last is when the final chunk was \
handed to the client's connection).\n\n\
Example (./corpus from `speedy corpus synth --out ./corpus`, served by `speedy serve \
--listen 127.0.0.1:8080 --archive ./corpus`):\n  \
speedy proxy --listen 127.0.0.1:3128 --tls-self-signed --resolve '*=127.0.0.1:8080' -k --log proxy.jsonl"
)]
pub struct ProxyArgs {
    /// Address to listen on (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:3128", value_name = "IP:PORT")]
    listen: String,
    /// Serve TLS with this certificate chain (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve TLS with a fresh self-signed certificate.
    #[arg(long, conflicts_with = "tls_cert")]
    tls_self_signed: bool,
    /// Serve TLS with a certificate for the --listen address issued by the lab CA in DIR
    /// (created if missing; loaders trust DIR/ca.pem, as `speedy serve --archive` does).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["tls_cert", "tls_self_signed"])]
    tls_ca_dir: Option<PathBuf>,
    /// Reach HOST at IP (and PORT, default the request's); `*` for every other host
    /// (repeatable).
    #[arg(long, value_name = "HOST=IP[:PORT]")]
    resolve: Vec<String>,
    /// Protocol towards http:// origins: http1 (default) or spdy (SPDY/3.1).
    #[arg(long, value_name = "PROTOCOL")]
    upstream: Option<String>,
    /// Accept any certificate from https:// origins.
    #[arg(short = 'k', long)]
    insecure: bool,
    /// Trust the CA certificates in this PEM file for https:// origins.
    #[arg(long, alias = "ca", value_name = "FILE")]
    cacert: Option<PathBuf>,
    /// Seconds to wait for an origin's response headers before answering 504.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    timeout: u64,
    /// Append one JSON line per request to this file.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Sample the client connections' TCP sender state (cwnd, ssthresh, bytes in flight,
    /// RTT, RTO, retransmissions) into FILE, one JSON line per connection per sample.
    #[arg(long, value_name = "FILE")]
    tcp_series: Option<PathBuf>,
    /// Seconds a client connection may stay idle (no stream open, or no request head
    /// awaited on HTTP/1.1 keep-alive) before the proxy closes it: long, so that a
    /// browsing session's think time does not cost its connections.
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    idle_timeout: u64,
    /// Milliseconds between --tcp-series samples.
    #[arg(long, default_value_t = 10, value_name = "MS", requires = "tcp_series")]
    tcp_interval_ms: u64,
}

/// Runs the proxy until SIGTERM or SIGINT.
pub async fn run(a: ProxyArgs) -> Result<()> {
    if a.timeout == 0 {
        anyhow::bail!("--timeout 0: at least 1 second");
    }
    if let Some(d) = &a.tls_ca_dir {
        super::serve::not_a_file("--tls-ca-dir", d)?;
    }
    let mut resolve = HashMap::new();
    let mut fallback = None;
    for r in &a.resolve {
        let (host, addr) = super::fetch::parse_resolve(r)?;
        if host == "*" {
            fallback = Some(addr);
        } else {
            resolve.insert(host, addr);
        }
    }
    let upstream = match a.upstream.as_deref() {
        None => None,
        Some(p) => match Protocol::parse(p) {
            Ok(p @ (Protocol::Http1 | Protocol::Spdy(_))) => Some(p),
            _ => anyhow::bail!("--upstream {p}: use http1 or spdy (SPDY/3.1)"),
        },
    };
    let verify = if a.insecure {
        Verify::Insecure
    } else if let Some(c) = &a.cacert {
        speedy_net::tls::ca_certs(c).map_err(anyhow::Error::msg)?;
        Verify::CaFile(c.clone())
    } else {
        Verify::System
    };
    let client = ClientConfig {
        verify,
        ..Default::default()
    };
    let log = match &a.log {
        Some(p) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("--log {}", p.display()))?,
        ),
        None => None,
    };
    let proxy = Proxy::new(
        ProxyOptions {
            resolve,
            fallback,
            upstream,
            client,
            timeout: Duration::from_secs(a.timeout),
            max_body: 64 << 20,
        },
        log,
    );
    let mut cfg = ServerConfig {
        tcp_series: super::serve::tcp_series(a.tcp_series.as_deref(), a.tcp_interval_ms)?,
        ..Default::default()
    };
    let idle = Duration::from_secs(a.idle_timeout.max(1));
    cfg.limits.idle_timeout = idle;
    cfg.limits.header_read_timeout = idle;
    super::serve::set_tls(
        &mut cfg,
        a.tls_self_signed,
        a.tls_cert.as_deref(),
        a.tls_key.as_deref(),
    )?;
    if let Some(dir) = &a.tls_ca_dir {
        // The certificate names the host part of --listen (an IP or a name).
        let host = a
            .listen
            .rsplit_once(':')
            .map_or(a.listen.as_str(), |(h, _)| h)
            .trim_matches(['[', ']']);
        let (c, k) = speedy_server::ca::issue(dir, &[host.to_string()])
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("--tls-ca-dir {}", dir.display()))?;
        cfg.tls = Some(
            speedy_net::tls::server_config(c, k, &speedy_net::tls::SERVER_ALPN)
                .map_err(anyhow::Error::msg)?,
        );
    }
    let listener = tokio::net::TcpListener::bind(&a.listen)
        .await
        .with_context(|| format!("--listen {}", a.listen))?;
    // Human line, then the JSON start-up line of `speedy serve` (origins empty).
    let addr = listener.local_addr()?;
    let protocols = speedy_net::tls::SERVER_ALPN;
    let startup = speedy_lab::testbed::ServeStartup::new(addr, cfg.tls.is_some());
    let mode = if cfg.tls.is_some() {
        "tls and plain"
    } else {
        "plain"
    };
    let human = format!(
        "listening on {addr} (proxy; {mode}; {})\n",
        protocols.join(", ")
    );
    startup.announce(&human, std::io::stdout().lock())?;
    super::serve::serve_until_signal(
        vec![listener],
        super::serve::Udp::default(),
        cfg,
        Arc::new(proxy),
        Duration::from_secs(10),
    )
    .await
}
