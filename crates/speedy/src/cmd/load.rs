//! `speedy load`: loads a page like a browser (HTTP/1.1, SPDY or HTTP/2) and writes HAR.

use anyhow::{bail, Context, Result};
use clap::Args;
use speedy_browser::config::{DnsCost, Domains, LoadConfig, Priorities, Proto, Transport};
use speedy_browser::net::Target;
use speedy_browser::{har, loader, prefetch, report};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Exit status: the load completed (failed subresources are reported on stderr).
pub const EXIT_OK: u8 = 0;
/// Exit status: the page's root document failed, or the load timed out.
pub const EXIT_PAGE_FAILED: u8 = 1;
/// Exit status: with `--fail`, some subresource failed.
pub const EXIT_PARTIAL: u8 = 3;

const AFTER_HELP: &str = "\
Prints one JSON line: onContentLoad/onLoad (ms), totals, failed, missing and unexpected URLs.

Exit status:
  0  the page loaded (failed subresources are listed on stderr, and are not fatal)
  1  the page's root document failed (connection refused, no address for the host,
     untrusted certificate, HTTP status >= 400, ...) or the load timed out
  2  bad arguments or files (start-up error)
  3  with --fail: some subresource failed

TLS: with --archive DIR, DIR/lab-ca/ca.pem (the CA `speedy serve --archive DIR` signs with)
is trusted when it exists, unless --cacert or -k is given.

Example (after `speedy corpus synth --out ./corpus` and
`speedy serve --listen 127.0.0.1:8080 --archive ./corpus`):
  speedy load https://www.site0.example/ --archive ./corpus --protocol spdy \\
      --resolve '*=127.0.0.1:8080' --har out.har";

/// Arguments of `speedy load`.
#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct LoadArgs {
    /// The page URL (an archived page's root URL).
    url: String,
    /// Then visit this page too, on the same connections (a browsing session;
    /// repeatable, in order). One HAR page and one summary line per visit.
    #[arg(long, value_name = "URL")]
    then: Vec<String>,
    /// Think time between the visits of a session, ms (from one page's end to the next
    /// page's start).
    #[arg(long, default_value_t = 0, value_name = "MS", requires = "then")]
    think_ms: u64,
    /// During the think time, a SPDY PING on every open connection every MS ms (the
    /// cellular study's keep-alive that holds the radio in its high-power state).
    #[arg(long, value_name = "MS", requires = "then")]
    keepalive_ms: Option<u64>,
    /// Archive directory (object types, recorded request headers, script-initiated requests).
    #[arg(long, value_name = "DIR")]
    archive: Option<PathBuf>,
    /// Protocol: http1 (= http/1.1), spdy (= spdy/3.1), h2 (= http2) or h3 (= http3: over
    /// QUIC, always encrypted).
    #[arg(long, default_value = "http1", value_name = "PROTO")]
    protocol: String,
    /// SPDY/h2: one connection per origin, or one for all origins (to the page's address).
    #[arg(long, default_value = "per-origin", value_name = "per-origin|single")]
    spdy_domains: String,
    /// TLS on every connection (whatever the URL scheme).
    #[arg(long, conflicts_with = "plain")]
    tls: bool,
    /// Plain TCP on every connection (SPDY and h2 by prior knowledge).
    #[arg(long)]
    plain: bool,
    /// tcp, or sctp: SPDY sessions over SCTP over UDP to the same port numbers (plain
    /// SPDY only: with --protocol spdy and --plain; `speedy serve --sctp` answers;
    /// docs/sctp.md).
    #[arg(long, default_value = "tcp", value_name = "tcp|sctp")]
    transport: super::fetch::Transport,
    /// With --transport sctp: each session's first request after the COOKIE ACK, as
    /// Linux's SCTP sends it, instead of in the COOKIE ECHO's packet.
    #[arg(long)]
    no_cookie_bundling: bool,
    /// With --transport sctp: SCTP's RTO.Initial in ms (default 3000, as Linux; RFC 9260
    /// says 1000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u32).range(1..=60_000))]
    sctp_rto_initial_ms: Option<u32>,
    /// Map a host to an address: HOST=IP[:PORT]; HOST `*` matches every other host.
    #[arg(long, value_name = "HOST=IP[:PORT]")]
    resolve: Vec<String>,
    /// Send everything through the proxy at URL (`http://IP:PORT`, or `https://` for
    /// TLS to it, as Chrome's SPDY proxy): SPDY and h2 over one session for every origin,
    /// HTTP/1.1 with absolute-form requests (`speedy proxy`).
    #[arg(long, value_name = "URL")]
    proxy: Option<String>,
    /// Cost of resolving each new host: `Nms` or `Nrtt` (RTT from --rtt-ms, or measured).
    #[arg(long, default_value = "0ms", value_name = "COST")]
    dns_cost: String,
    /// Round-trip time for --dns-cost in RTTs.
    #[arg(long, value_name = "MS")]
    rtt_ms: Option<f64>,
    /// Trust the CA certificates in this PEM file (e.g. the lab CA, DIR/lab-ca/ca.pem).
    #[arg(long, alias = "ca", value_name = "FILE", conflicts_with = "insecure")]
    cacert: Option<PathBuf>,
    /// Do not check server certificates.
    #[arg(short = 'k', long)]
    insecure: bool,
    /// Exit with status 3 when some subresource failed (the root document failing is
    /// always fatal).
    #[arg(long)]
    fail: bool,
    /// HTTP/1.1 connections per host.
    #[arg(long, default_value_t = 6, value_name = "N")]
    connections_per_host: usize,
    /// HTTP/1.1 connections in all.
    #[arg(long, default_value_t = 32, value_name = "N")]
    max_connections: usize,
    /// HTTP/1.1 pipelining depth (1 = none).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pipeline: usize,
    /// SPDY and h2 sessions per origin (or to the proxy): up to N, opened as requests
    /// wait, each request on the ready one with the fewest in flight.
    #[arg(long, default_value_t = 1, value_name = "N")]
    sessions: usize,
    /// The TLS ClientHello: chromium (a post-quantum key share and GREASE ECH, ~1.7 KB,
    /// as Chromium sends) or plain (rustls's own, ~255 bytes; browsers before 2023).
    #[arg(long, default_value = "chromium", value_name = "SHAPE", value_parser = speedy_net::tls::Hello::parse)]
    tls_hello: speedy_net::tls::Hello,
    /// Act as a browser that already knows each server speaks SPDY/h2: one connection
    /// per session from the start. Without it the loader is a fresh profile, as
    /// Chromium's: until a host's first session is up, each waiting request starts a
    /// connection of its own (up to --connections-per-host), and the losers close.
    #[arg(long)]
    known_servers: bool,
    /// One connection pool per origin for every frame, as browsers before 2020. Without
    /// it a cross-site frame's requests use connections of their own (Chromium's
    /// network partitioning).
    #[arg(long)]
    no_partition: bool,
    /// Priorities by type, e.g. `image=2,other=5`, instead of Chromium's per request
    /// (without the browser model the defaults are document=0, stylesheet=1, script=1,
    /// font=2, xhr=2, image=3, other=4).
    #[arg(long, value_name = "TYPE=N,...")]
    priorities: Option<String>,
    /// Request the URLs of an `X-Subresources` response header at once.
    #[arg(long)]
    hint: bool,
    /// Client prefetch: request what earlier loads of this page fetched (from FILE, a
    /// store this option keeps up to date, or a HAR) as soon as the HTML request is sent.
    #[arg(long, value_name = "FILE")]
    prefetch: Option<PathBuf>,
    /// Do not fetch archive objects that the parser failed to find.
    #[arg(long)]
    no_archive_fallback: bool,
    /// Request every reference when it is found, instead of loading as Chromium does
    /// (its priorities and request schedulers, parser-blocking scripts; docs/loader.md).
    #[arg(long)]
    no_browser_model: bool,
    /// Script execution cost, ms per KiB of source, where the archive records none.
    #[arg(long, value_name = "MS", default_value_t = speedy_browser::config::SCRIPT_MS_PER_KB)]
    script_ms_per_kb: f64,
    /// Write HAR 1.2 here.
    #[arg(long, value_name = "FILE")]
    har: Option<PathBuf>,
    /// Keep response bodies in the HAR (content.text, base64).
    #[arg(long)]
    har_bodies: bool,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 60.0, value_name = "S")]
    timeout: f64,
    /// SPDY request header compression: crime-safe (cookies kept apart), zlib (one shared
    /// context, as Chrome before 2012) or none.
    #[arg(long, default_value = "crime-safe", value_name = "MODE")]
    header_compression: String,
}

fn config(a: &LoadArgs) -> Result<LoadConfig> {
    // Each URL's fault in words (a bad port, no host) before anything is dialled.
    for u in std::iter::once(&a.url).chain(&a.then) {
        u.parse::<spdy::url::Url>()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let named = speedy_net::Protocol::parse(&a.protocol)
        .map_err(|e| anyhow::anyhow!("--protocol {}: {e}", a.protocol))?;
    let proto = Proto::from_protocol(named)
        .map_err(|e| anyhow::anyhow!("--protocol {}: {e}", a.protocol))?;
    let mut cfg = LoadConfig::new(&a.url, proto);
    cfg.domains = match a.spdy_domains.as_str() {
        "per-origin" => Domains::PerOrigin,
        "single" => Domains::Single,
        o => bail!("--spdy-domains {o}: use per-origin or single"),
    };
    cfg.transport = if a.tls {
        Transport::Tls
    } else if a.plain {
        Transport::Plain
    } else {
        Transport::Auto
    };
    cfg.sctp = super::fetch::sctp_config(a.transport, a.no_cookie_bundling, a.sctp_rto_initial_ms)?;
    if cfg.proto == Proto::H3 && (a.plain || a.proxy.is_some()) {
        bail!("--protocol h3: QUIC is always encrypted and goes to the origin (not with --plain or --proxy)");
    }
    if cfg.sctp.is_some() && (cfg.proto != Proto::Spdy || !a.plain || a.proxy.is_some()) {
        bail!("--transport sctp: SPDY over plain connections only (--protocol spdy --plain, no --proxy)");
    }
    for r in &a.resolve {
        let (h, t) = super::fetch::split_resolve(r)?;
        let t =
            Target::parse(t).with_context(|| format!("--resolve {r}: {t:?} is not IP[:PORT]"))?;
        cfg.resolve.insert(h, t);
    }
    cfg.keepalive = a
        .keepalive_ms
        .map(|ms| std::time::Duration::from_millis(ms.max(1)));
    if let Some(p) = &a.proxy {
        let u: spdy::url::Url = p.parse().map_err(|e| anyhow::anyhow!("--proxy: {e}"))?;
        if u.path != "/" {
            bail!("--proxy {p}: a proxy URL has no path (http://IP:PORT or https://IP:PORT)");
        }
        cfg.proxy = Some(speedy_browser::config::ProxyTarget {
            host: u.host_bare().to_string(),
            port: u.port_or_default(),
            tls: u.scheme == "https",
        });
    }
    cfg.dns_cost = DnsCost::parse(&a.dns_cost)
        .with_context(|| format!("--dns-cost {}: use e.g. 20ms or 1rtt", a.dns_cost))?;
    cfg.rtt = match a.rtt_ms {
        Some(ms) if ms >= 0.0 => Some(Duration::from_secs_f64(ms / 1000.0)),
        Some(ms) => bail!("--rtt-ms {ms}: must be ≥ 0"),
        None => None,
    };
    cfg.verify = if a.insecure {
        speedy_net::tls::Verify::Insecure
    } else if let Some(ca) = a.cacert.clone().or_else(|| archive_ca(a)) {
        speedy_net::tls::Verify::CaFile(ca)
    } else {
        speedy_net::tls::Verify::System
    };
    if a.connections_per_host == 0 || a.max_connections == 0 || a.pipeline == 0 || a.sessions == 0 {
        bail!(
            "--connections-per-host, --max-connections, --pipeline and --sessions must be at \
             least 1"
        );
    }
    cfg.sessions_per_pool = a.sessions;
    cfg.tls_hello = a.tls_hello;
    cfg.race_connections = !a.known_servers;
    cfg.partition_frames = !a.no_partition;
    cfg.per_host = a.connections_per_host;
    cfg.max_connections = a.max_connections;
    cfg.pipeline = a.pipeline;
    if let Some(p) = &a.priorities {
        cfg.priorities =
            Some(Priorities::parse(p).map_err(|e| anyhow::anyhow!("--priorities {p}: {e}"))?);
    }
    cfg.hint = a.hint;
    if let Some(p) = &a.prefetch {
        cfg.prefetch =
            prefetch::learned(p, &a.url).map_err(|e| anyhow::anyhow!("--prefetch {e}"))?;
    }
    cfg.archive_fallback = !a.no_archive_fallback;
    cfg.browser_model = !a.no_browser_model;
    if !(a.script_ms_per_kb >= 0.0 && a.script_ms_per_kb.is_finite()) {
        anyhow::bail!(
            "--script-ms-per-kb {}: must be a finite number ≥ 0",
            a.script_ms_per_kb
        );
    }
    cfg.script_ms_per_kb = a.script_ms_per_kb;
    cfg.keep_bodies = a.har_bodies;
    if a.timeout.is_nan() || a.timeout <= 0.0 {
        bail!("--timeout {}: must be > 0", a.timeout);
    }
    cfg.timeout = Duration::from_secs_f64(a.timeout);
    cfg.header_compression = spdy::HeaderCompression::parse(&a.header_compression)
        .map_err(|e| anyhow::anyhow!("--header-compression {e}"))?;
    Ok(cfg)
}

/// The lab CA of `--archive DIR` (`DIR/lab-ca/ca.pem`), when it exists.
fn archive_ca(a: &LoadArgs) -> Option<PathBuf> {
    let ca = a.archive.as_ref()?.join("lab-ca").join("ca.pem");
    ca.is_file().then_some(ca)
}

/// The exit status of a finished load (see [`EXIT_OK`] and the others), with what went
/// wrong said on stderr.
fn outcome(res: &loader::LoadResult, fail: bool) -> u8 {
    let root = res
        .reqs
        .iter()
        .find(|r| matches!(r.initiator, loader::Initiator::Root));
    let why = |r: &loader::Req| match (&r.error, r.status) {
        (Some(e), _) => e.clone(),
        (None, 0) => "no response".to_string(),
        (None, s) => format!("HTTP status {s}"),
    };
    match root {
        Some(r) if !r.done() && res.timed_out => {
            eprintln!(
                "speedy load: the load timed out (see --timeout) before the root document {} \
                 arrived",
                r.url_s
            );
            return EXIT_PAGE_FAILED;
        }
        Some(r) if r.failed() => {
            eprintln!(
                "speedy load: the page's root document failed: {}: {}",
                r.url_s,
                why(r)
            );
            return EXIT_PAGE_FAILED;
        }
        None => {
            eprintln!("speedy load: the page's root document was never requested");
            return EXIT_PAGE_FAILED;
        }
        Some(_) => {}
    }
    if res.timed_out {
        eprintln!("speedy load: the load timed out (see --timeout)");
        return EXIT_PAGE_FAILED;
    }
    let failed: Vec<&loader::Req> = res.reqs.iter().filter(|r| r.failed()).collect();
    if failed.is_empty() {
        return EXIT_OK;
    }
    eprintln!(
        "speedy load: {} of {} requests failed{}",
        failed.len(),
        res.reqs.len(),
        if fail { " (fatal with --fail)" } else { "" }
    );
    for r in failed.iter().take(10) {
        eprintln!("  {}: {}", r.url_s, why(r));
    }
    if failed.len() > 10 {
        eprintln!("  ... and {} more (see the JSON line)", failed.len() - 10);
    }
    if fail {
        EXIT_PARTIAL
    } else {
        EXIT_OK
    }
}

/// Runs one load; returns the exit status (see the `EXIT_*` constants).
pub async fn run(a: LoadArgs) -> Result<u8> {
    let cfg = config(&a)?;
    let archive = match &a.archive {
        Some(dir) => Some(speedy_archive::Archive::load(dir).map_err(anyhow::Error::msg)?),
        None => None,
    };
    for url in std::iter::once(&a.url).chain(&a.then) {
        let Some(ar) = &archive else { break };
        let want = speedy_browser::url::Url::parse(url).map(|u| u.to_string());
        let known = ar.pages.iter().any(|p| {
            ar.objects
                .get(p.root)
                .and_then(|o| speedy_browser::url::Url::parse(&o.url))
                .map(|u| u.to_string())
                == want
        });
        if !known {
            eprintln!(
                "speedy load: warning: {} is not the root of a page of the archive; \
                 loading without the page's object list",
                url
            );
        }
    }
    let mut urls = vec![a.url.clone()];
    urls.extend(a.then.iter().cloned());
    let think = std::time::Duration::from_millis(a.think_ms);
    let pages = loader::load_session(&cfg, archive.as_ref(), &urls, think).await?;
    if let Some(out) = &a.har {
        let mut h = report::session_har(&pages);
        if a.transport == super::fetch::Transport::Sctp {
            h.log.sctp = Some(serde_json::to_value(speedy_net::sctp::counters::totals())?);
        }
        har::write(&h, out).with_context(|| format!("--har {}", out.display()))?;
    }
    if let Some(p) = &a.prefetch {
        prefetch::remember(p, &pages[0]).map_err(anyhow::Error::msg)?;
    }
    let mut out = std::io::stdout().lock();
    for res in &pages {
        writeln!(out, "{}", serde_json::to_string(&report::summary(res))?)?;
    }
    out.flush()?;
    // The worst outcome of the visits: a failed page before a partial one.
    let codes: Vec<u8> = pages.iter().map(|r| outcome(r, a.fail)).collect();
    Ok([EXIT_PAGE_FAILED, EXIT_PARTIAL]
        .into_iter()
        .find(|c| codes.contains(c))
        .unwrap_or(EXIT_OK))
}
