//! `speedy proxy`: a forward proxy speaking SPDY/3.1 (TLS with ALPN, as Chrome's SPDY
//! proxy), HTTP/1.1 (absolute-form requests) and h2 to clients, and HTTP/1.1 or SPDY to
//! origins over pooled connections (`speedy_server::proxy`).

use anyhow::{Context, Result};
use clap::Args;
use speedy_net::client::{ClientConfig, Protocol};
use speedy_net::server::ServerConfig;
use speedy_net::tls::Verify;
use speedy_server::proxy::{Proxy, ProxyOptions};
use speedy_server::spec::{read_spec, ProxySpec};
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
    /// Read every option from FILE instead of flags: JSON (TOML for a `.toml` name; `-`
    /// reads JSON from standard input), keys named as the flags with `_` for `-`;
    /// `--print-spec` writes one.
    #[arg(long, value_name = "FILE", exclusive = true)]
    spec: Option<PathBuf>,
    /// Print the proxy's spec as JSON (every option, defaults filled in) and exit.
    #[arg(long)]
    print_spec: bool,
    #[command(flatten)]
    opts: ProxySpec,
}

/// Runs the proxy until SIGTERM or SIGINT.
pub async fn run(args: ProxyArgs) -> Result<()> {
    let a = match &args.spec {
        Some(p) => read_spec::<ProxySpec>(p).map_err(anyhow::Error::msg)?,
        None => args.opts.clone(),
    };
    if args.print_spec {
        println!("{}", serde_json::to_string_pretty(&a)?);
        return Ok(());
    }
    a.check().map_err(anyhow::Error::msg)?;
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
    let startup = speedy_server::startup::ServeStartup::new(addr, cfg.tls.is_some());
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
