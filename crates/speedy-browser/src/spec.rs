//! [`LoadSpec`]: everything `speedy load` is asked to do, as one type. The command line's
//! flags are its fields (`clap`), a spec file is the same fields as JSON or TOML
//! (`speedy load --spec FILE`), and the lab builds one per load and hands it to the
//! loader whole: nobody spells the loader's flags by hand. Defaults live in the flag
//! attributes below and nowhere else ([`LoadSpec::default`] reads them from there).
//!
//! [`LoadSpec::config`] checks a spec and turns it into the loader's [`LoadConfig`]; every
//! error names the option (`--protocol h3: ...`).

use crate::config::{DnsCost, Domains, LoadConfig, Priorities, Proto, ProxyTarget, Transport};
use crate::net::Target;
use serde::{Deserialize, Serialize};
use speedy_net::sctp::SctpStack;
use speedy_net::{Carrier, Protocol};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The version of the spec's format this build writes and reads.
pub const LOAD_SPEC_VERSION: u32 = 1;

/// One load (or browsing session) of `speedy load`. Field names are the flags' names
/// with `_` for `-`; negative flags (`--no-partition`) are positive fields
/// (`partition = false`).
#[derive(Clone, Debug, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadSpec {
    /// The spec format's version ([`LOAD_SPEC_VERSION`]).
    #[arg(skip = LOAD_SPEC_VERSION)]
    pub version: u32,
    /// The page URL (the command line's positional argument).
    #[arg(skip)]
    pub url: String,
    /// Then visit this page too, on the same connections (a browsing session;
    /// repeatable, in order). One HAR page and one summary line per visit.
    #[arg(long, value_name = "URL")]
    pub then: Vec<String>,
    /// Think time between the visits of a session, ms (from one page's end to the next
    /// page's start).
    #[arg(long, default_value_t = 0, value_name = "MS", requires = "then")]
    pub think_ms: u64,
    /// During the think time, a SPDY PING on every open connection every MS ms (the
    /// cellular study's keep-alive that holds the radio in its high-power state).
    #[arg(long, value_name = "MS", requires = "then")]
    pub keepalive_ms: Option<u64>,
    /// Archive directory (object types, recorded request headers, script-initiated
    /// requests).
    #[arg(long, value_name = "DIR")]
    pub archive: Option<PathBuf>,
    /// Protocol: http1 (= http/1.1), spdy (= spdy/3.1), h2 (= http2) or h3 (= http3: over
    /// QUIC, always encrypted).
    #[arg(long, default_value = "http1", value_name = "PROTO")]
    #[serde(with = "speedy_net::text::by_name")]
    pub protocol: Protocol,
    /// SPDY/h2: one connection per origin, or one for all origins (to the page's address).
    #[arg(long, default_value = "per-origin", value_name = "per-origin|single")]
    #[serde(with = "speedy_net::text::by_name")]
    pub spdy_domains: Domains,
    /// TLS on every connection (whatever the URL scheme).
    #[arg(long, conflicts_with = "plain")]
    pub tls: bool,
    /// Plain TCP on every connection (SPDY and h2 by prior knowledge).
    #[arg(long)]
    pub plain: bool,
    /// tcp, or sctp: SPDY sessions over SCTP over UDP to the same port numbers, or to
    /// --sctp-port (plain SPDY only: with --protocol spdy and --plain; `speedy serve
    /// --sctp` answers; docs/sctp.md).
    #[arg(long, default_value = "tcp", value_name = "tcp|sctp")]
    #[serde(with = "speedy_net::text::by_name")]
    pub transport: Carrier,
    /// With --transport sctp: each session's first request after the COOKIE ACK, as
    /// Linux's SCTP sends it, instead of in the COOKIE ECHO's packet.
    #[arg(long = "no-cookie-bundling", action = clap::ArgAction::SetFalse)]
    pub cookie_bundling: bool,
    /// With --transport sctp: SCTP's RTO.Initial in ms (default 3000, as Linux; RFC 9260
    /// says 1000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u32).range(1..=60_000))]
    pub sctp_rto_initial_ms: Option<u32>,
    /// With --transport sctp: the servers' SCTP port on UDP, when `speedy serve
    /// --sctp-port` put it apart from the TCP port (default: each server's TCP port, from
    /// the URL or --resolve); the address stays the one --resolve gives.
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub sctp_port: Option<u16>,
    /// With --transport sctp: the loader's SCTP stack, sctp-proto (the default) or
    /// usrsctp (libusrsctp); either loads from a server on either, e.g. `--transport sctp
    /// --sctp-stack usrsctp`.
    #[arg(long, default_value = "sctp-proto", value_name = "sctp-proto|usrsctp")]
    #[serde(with = "speedy_net::text::by_name")]
    pub sctp_stack: SctpStack,
    /// Map a host to an address: HOST=IP[:PORT]; HOST `*` matches every other host.
    #[arg(long, value_name = "HOST=IP[:PORT]")]
    pub resolve: Vec<String>,
    /// Send everything through the proxy at URL (`http://IP:PORT`, or `https://` for
    /// TLS to it, as Chrome's SPDY proxy): SPDY and h2 over one session for every origin,
    /// HTTP/1.1 with absolute-form requests (`speedy proxy`).
    #[arg(long, value_name = "URL")]
    pub proxy: Option<String>,
    /// Cost of resolving each new host: `Nms` or `Nrtt` (RTT from --rtt-ms, or measured).
    #[arg(long, default_value = "0ms", value_name = "COST")]
    pub dns_cost: String,
    /// Round-trip time for --dns-cost in RTTs.
    #[arg(long, value_name = "MS")]
    pub rtt_ms: Option<f64>,
    /// Trust the CA certificates in this PEM file (e.g. the lab CA, DIR/lab-ca/ca.pem).
    #[arg(long, alias = "ca", value_name = "FILE", conflicts_with = "insecure")]
    pub cacert: Option<PathBuf>,
    /// Do not check server certificates.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Exit with status 3 when some subresource failed (the root document failing is
    /// always fatal).
    #[arg(long)]
    pub fail: bool,
    /// HTTP/1.1 connections per host.
    #[arg(long, default_value_t = 6, value_name = "N")]
    pub connections_per_host: usize,
    /// HTTP/1.1 connections in all.
    #[arg(long, default_value_t = 32, value_name = "N")]
    pub max_connections: usize,
    /// HTTP/1.1 pipelining depth (1 = none).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub pipeline: usize,
    /// SPDY and h2 sessions per origin (or to the proxy): up to N, opened as requests
    /// wait, each request on the ready one with the fewest in flight.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub sessions: usize,
    /// The TLS ClientHello: chromium (a post-quantum key share and GREASE ECH, ~1.7 KB,
    /// as Chromium sends) or plain (rustls's own, ~255 bytes; browsers before 2023).
    #[arg(long, default_value = "chromium", value_name = "SHAPE")]
    #[serde(with = "speedy_net::text::by_name")]
    pub tls_hello: speedy_net::tls::Hello,
    /// Act as a browser that already knows each server speaks SPDY/h2: one connection
    /// per session from the start. Without it the loader is a fresh profile, as
    /// Chromium's: until a host's first session is up, each waiting request starts a
    /// connection of its own (up to --connections-per-host), and the losers close.
    #[arg(long)]
    pub known_servers: bool,
    /// One connection pool per origin for every frame, as browsers before 2020. Without
    /// it a cross-site frame's requests use connections of their own (Chromium's
    /// network partitioning).
    #[arg(long = "no-partition", action = clap::ArgAction::SetFalse)]
    pub partition: bool,
    /// No preconnects. Without it the loader preconnects as Chromium does: two sockets
    /// to the page's origin as the load starts, and one (which no request uses) to each
    /// cross-site frame's origin as the frame navigates.
    #[arg(long = "no-preconnect", action = clap::ArgAction::SetFalse)]
    pub preconnect: bool,
    /// Priorities by type, e.g. `image=2,other=5`, instead of Chromium's per request
    /// (without the browser model the defaults are document=0, stylesheet=1, script=1,
    /// font=2, xhr=2, image=3, other=4).
    #[arg(long, value_name = "TYPE=N,...")]
    pub priorities: Option<String>,
    /// Request the URLs of an `X-Subresources` response header at once.
    #[arg(long)]
    pub hint: bool,
    /// Client prefetch: request what earlier loads of this page fetched (from FILE, a
    /// store this option keeps up to date, or a HAR) as soon as the HTML request is sent.
    #[arg(long, value_name = "FILE")]
    pub prefetch: Option<PathBuf>,
    /// Do not fetch archive objects that the parser failed to find.
    #[arg(long = "no-archive-fallback", action = clap::ArgAction::SetFalse)]
    pub archive_fallback: bool,
    /// Request every reference when it is found, instead of loading as Chromium does
    /// (its priorities and request schedulers, parser-blocking scripts; docs/loader.md).
    #[arg(long = "no-browser-model", action = clap::ArgAction::SetFalse)]
    pub browser_model: bool,
    /// Script execution cost, ms per KiB of source, where the archive records none.
    #[arg(long, value_name = "MS", default_value_t = crate::config::SCRIPT_MS_PER_KB)]
    pub script_ms_per_kb: f64,
    /// Write HAR 1.2 here.
    #[arg(long, value_name = "FILE")]
    pub har: Option<PathBuf>,
    /// Keep response bodies in the HAR (content.text, base64).
    #[arg(long)]
    pub har_bodies: bool,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 60.0, value_name = "S")]
    pub timeout: f64,
    /// SPDY request header compression: crime-safe (cookies kept apart), zlib (one shared
    /// context, as Chrome before 2012) or none.
    #[arg(long, default_value = "crime-safe", value_name = "MODE")]
    #[serde(with = "speedy_net::text::by_name")]
    pub header_compression: spdy::HeaderCompression,
}

impl Default for LoadSpec {
    /// The defaults of the flags' attributes: `speedy load URL` with no options.
    fn default() -> LoadSpec {
        #[derive(clap::Parser)]
        struct Bare {
            #[command(flatten)]
            spec: LoadSpec,
        }
        <Bare as clap::Parser>::try_parse_from(["load"])
            .expect("every option of LoadSpec has a default")
            .spec
    }
}

impl LoadSpec {
    /// A spec for loading `url` over `protocol`, everything else at its default.
    pub fn new(url: &str, protocol: Protocol) -> LoadSpec {
        LoadSpec {
            url: url.to_string(),
            protocol,
            ..LoadSpec::default()
        }
    }

    /// Reads a spec file: JSON, or TOML when the name ends in `.toml`; `-` reads JSON
    /// from standard input. Unknown keys are errors naming the key.
    pub fn read(path: &Path) -> Result<LoadSpec, String> {
        let spec = speedy_net::text::read_spec(path, LOAD_SPEC_VERSION, |s: &LoadSpec| s.version)?;
        if spec.url.is_empty() {
            return Err(format!("--spec {}: no url", path.display()));
        }
        Ok(spec)
    }

    /// The URLs of the visits, in order: [`LoadSpec::url`], then [`LoadSpec::then`].
    pub fn urls(&self) -> Vec<String> {
        std::iter::once(&self.url)
            .chain(&self.then)
            .cloned()
            .collect()
    }

    /// The lab CA of `archive` (`DIR/lab-ca/ca.pem`), when it exists: trusted unless
    /// `cacert` or `insecure` says otherwise.
    pub fn archive_ca(&self) -> Option<PathBuf> {
        let ca = self.archive.as_ref()?.join("lab-ca").join("ca.pem");
        ca.is_file().then_some(ca)
    }

    /// Checks the spec and makes the loader's configuration of it (reading the
    /// `prefetch` store, if any). Errors name the option at fault.
    pub fn config(&self) -> Result<LoadConfig, String> {
        // Each URL's fault in words (a bad port, no host) before anything is dialled.
        for u in self.urls() {
            u.parse::<spdy::url::Url>().map_err(|e| e.to_string())?;
        }
        if self.think_ms > 0 && self.then.is_empty()
            || self.keepalive_ms.is_some() && self.then.is_empty()
        {
            return Err(
                "--think-ms and --keepalive-ms: only with --then (a browsing session)".into(),
            );
        }
        let proto = Proto::from_protocol(self.protocol)
            .map_err(|e| format!("--protocol {}: {e}", self.protocol))?;
        let mut cfg = LoadConfig::new(&self.url, proto);
        cfg.domains = self.spdy_domains;
        if self.tls && self.plain {
            return Err("--tls and --plain: one or the other".into());
        }
        cfg.transport = match (self.tls, self.plain) {
            (true, _) => Transport::Tls,
            (_, true) => Transport::Plain,
            _ => Transport::Auto,
        };
        cfg.sctp = self.sctp_stack.client(speedy_net::sctp::client_config(
            self.transport,
            self.cookie_bundling,
            self.sctp_rto_initial_ms,
            self.sctp_port,
        )?)?;
        if cfg.proto == Proto::H3 && (self.plain || self.proxy.is_some()) {
            return Err("--protocol h3: QUIC is always encrypted and goes to the origin (not with --plain or --proxy)".into());
        }
        if cfg.sctp.is_some() && (cfg.proto != Proto::Spdy || !self.plain || self.proxy.is_some()) {
            return Err("--transport sctp: SPDY over plain connections only (--protocol spdy --plain, no --proxy)".into());
        }
        for r in &self.resolve {
            let (h, t) = speedy_net::client::split_resolve(r)?;
            let t =
                Target::parse(t).ok_or_else(|| format!("--resolve {r}: {t:?} is not IP[:PORT]"))?;
            cfg.resolve.insert(h, t);
        }
        cfg.keepalive = self.keepalive_ms.map(|ms| Duration::from_millis(ms.max(1)));
        if let Some(p) = &self.proxy {
            let u: spdy::url::Url = p.parse().map_err(|e| format!("--proxy: {e}"))?;
            if u.path != "/" {
                return Err(format!(
                    "--proxy {p}: a proxy URL has no path (http://IP:PORT or https://IP:PORT)"
                ));
            }
            cfg.proxy = Some(ProxyTarget {
                host: u.host_bare().to_string(),
                port: u.port_or_default(),
                tls: u.scheme == "https",
            });
        }
        cfg.dns_cost = DnsCost::parse(&self.dns_cost)
            .ok_or_else(|| format!("--dns-cost {}: use e.g. 20ms or 1rtt", self.dns_cost))?;
        cfg.rtt = match self.rtt_ms {
            Some(ms) if ms >= 0.0 && ms.is_finite() => Some(Duration::from_secs_f64(ms / 1000.0)),
            Some(ms) => return Err(format!("--rtt-ms {ms}: must be ≥ 0")),
            None => None,
        };
        cfg.verify = if self.insecure {
            speedy_net::tls::Verify::Insecure
        } else if let Some(ca) = self.cacert.clone().or_else(|| self.archive_ca()) {
            speedy_net::tls::Verify::CaFile(ca)
        } else {
            speedy_net::tls::Verify::System
        };
        if self.connections_per_host == 0
            || self.max_connections == 0
            || self.pipeline == 0
            || self.sessions == 0
        {
            return Err(
                "--connections-per-host, --max-connections, --pipeline and --sessions must be at \
                 least 1"
                    .into(),
            );
        }
        cfg.sessions_per_pool = self.sessions;
        cfg.tls_hello = self.tls_hello;
        cfg.race_connections = !self.known_servers;
        cfg.partition_frames = self.partition;
        cfg.preconnect = self.preconnect;
        cfg.per_host = self.connections_per_host;
        cfg.max_connections = self.max_connections;
        cfg.pipeline = self.pipeline;
        if let Some(p) = &self.priorities {
            cfg.priorities =
                Some(Priorities::parse(p).map_err(|e| format!("--priorities {p}: {e}"))?);
        }
        cfg.hint = self.hint;
        if let Some(p) = &self.prefetch {
            cfg.prefetch =
                crate::prefetch::learned(p, &self.url).map_err(|e| format!("--prefetch {e}"))?;
        }
        cfg.archive_fallback = self.archive_fallback;
        cfg.browser_model = self.browser_model;
        if !(self.script_ms_per_kb >= 0.0 && self.script_ms_per_kb.is_finite()) {
            return Err(format!(
                "--script-ms-per-kb {}: must be a finite number ≥ 0",
                self.script_ms_per_kb
            ));
        }
        cfg.script_ms_per_kb = self.script_ms_per_kb;
        cfg.keep_bodies = self.har_bodies;
        if !(self.timeout > 0.0 && self.timeout.is_finite()) {
            return Err(format!("--timeout {}: must be > 0", self.timeout));
        }
        cfg.timeout = Duration::from_secs_f64(self.timeout);
        cfg.header_compression = self.header_compression;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_flags_defaults_and_round_trip_through_json_and_toml() {
        let d = LoadSpec::default();
        assert_eq!(d.version, LOAD_SPEC_VERSION);
        assert_eq!(d.protocol, Protocol::Http1);
        assert_eq!(d.connections_per_host, 6);
        assert_eq!(d.max_connections, 32);
        assert!(
            d.partition
                && d.preconnect
                && d.archive_fallback
                && d.browser_model
                && d.cookie_bundling
        );
        assert_eq!(d.timeout, 60.0);
        let mut s = LoadSpec::new("https://a.example/", Protocol::H2);
        s.resolve = vec!["*=10.0.0.1:443".into()];
        s.partition = false;
        s.sctp_rto_initial_ms = Some(1000);
        s.sctp_port = Some(9443);
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<LoadSpec>(&json).unwrap(), s);
        let toml_text = toml::to_string(&s).unwrap();
        assert_eq!(toml::from_str::<LoadSpec>(&toml_text).unwrap(), s);
        // A file with only a URL is the defaults.
        let min: LoadSpec = serde_json::from_str(r#"{"url":"http://a.example/"}"#).unwrap();
        assert_eq!(min, LoadSpec::new("http://a.example/", Protocol::Http1));
    }

    #[test]
    fn refuses_unknown_keys_and_bad_values_by_name() {
        let e =
            serde_json::from_str::<LoadSpec>(r#"{"url":"http://a/","protocl":"h2"}"#).unwrap_err();
        assert!(e.to_string().contains("protocl"), "{e}");
        let e = serde_json::from_str::<LoadSpec>(r#"{"url":"http://a/","protocol":"gopher"}"#)
            .unwrap_err();
        assert!(e.to_string().contains("gopher"), "{e}");
        let mut s = LoadSpec::new("http://a.example/", Protocol::H3);
        s.plain = true;
        assert!(s.config().unwrap_err().contains("--protocol h3"));
        let mut s = LoadSpec::new("http://a.example/", Protocol::Http1);
        s.sessions = 0;
        assert!(s.config().unwrap_err().contains("--sessions"));
        s.sessions = 1;
        s.cookie_bundling = false;
        assert!(s.config().unwrap_err().contains("--no-cookie-bundling"));
        s.cookie_bundling = true;
        s.sctp_port = Some(9443);
        assert_eq!(
            s.config().unwrap_err(),
            "--sctp-port: only with --transport sctp"
        );
        s.transport = Carrier::Sctp;
        (s.protocol, s.plain) = (Protocol::Spdy(spdy::Version::V3_1), true);
        assert_eq!(s.config().unwrap().sctp.unwrap().port, Some(9443));
        s.sctp_port = Some(0);
        assert!(s.config().unwrap_err().starts_with("--sctp-port 0"));
    }
}
