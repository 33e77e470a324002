//! What a load is asked to do: protocol and connection policy, name resolution, priorities,
//! hints and prefetching.

use crate::net::Target;
use speedy_archive::ObjectType;
use speedy_net::tls::Verify;
use std::collections::HashMap;
use std::time::Duration;

/// The protocol every connection of a load speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// HTTP/1.1: persistent connections, several per host.
    Http1,
    /// SPDY/3.1: one session per origin (or one for all).
    Spdy,
    /// HTTP/2: one connection per origin (or one for all).
    H2,
    /// HTTP/3 over QUIC: one connection per origin (or one for all), always encrypted.
    H3,
}

impl Proto {
    /// Parses a name of the one vocabulary ([`speedy_net::protocol::VOCABULARY`]) that the
    /// loader speaks: `http1`/`http/1.1`, `spdy`/`spdy/3.1`, `h2`/`http2`, `h3`/`http3`.
    pub fn parse(s: &str) -> Option<Proto> {
        speedy_net::Protocol::parse(s)
            .ok()
            .and_then(|p| Proto::from_protocol(p).ok())
    }

    /// The loader's protocol for a protocol of the one vocabulary; SPDY/3 and SPDY/2 are
    /// refused by name (the loader speaks SPDY/3.1 only).
    pub fn from_protocol(p: speedy_net::Protocol) -> Result<Proto, String> {
        match p {
            speedy_net::Protocol::Http1 => Ok(Proto::Http1),
            speedy_net::Protocol::Spdy(spdy::Version::V3_1) => Ok(Proto::Spdy),
            speedy_net::Protocol::H2 => Ok(Proto::H2),
            speedy_net::Protocol::H3 => Ok(Proto::H3),
            other => Err(format!(
                "the page loader speaks http1, spdy/3.1, h2 and h3, not {other}"
            )),
        }
    }
}

/// How multiplexed protocols map origins onto connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Domains {
    /// One connection per origin (what a browser does).
    PerOrigin,
    /// One connection for every origin, to the page's address; `:host` names the origin.
    Single,
}

impl std::fmt::Display for Domains {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Domains::PerOrigin => "per-origin",
            Domains::Single => "single",
        })
    }
}

impl std::str::FromStr for Domains {
    type Err = String;
    /// `per-origin` or `single`.
    fn from_str(s: &str) -> Result<Domains, String> {
        match s {
            "per-origin" => Ok(Domains::PerOrigin),
            "single" => Ok(Domains::Single),
            _ => Err(format!("{s:?}: use per-origin or single")),
        }
    }
}

/// A proxy every connection goes to (`speedy load --proxy URL`): SPDY and h2 loads
/// use one session to it for every origin, as Chrome's SPDY proxy (`:host` names the
/// origin); HTTP/1.1 loads send absolute-form requests to it, per-host and total limits
/// as without a proxy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyTarget {
    /// Host name or address of the proxy (resolved with `--resolve` like any host).
    pub host: String,
    /// Its port.
    pub port: u16,
    /// TLS to the proxy (`https://` proxy URL; ALPN picks the protocol).
    pub tls: bool,
}

/// Whether connections use TLS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// As the URL's scheme says.
    Auto,
    /// TLS for every connection.
    Tls,
    /// Plain TCP for every connection (SPDY and h2 by prior knowledge).
    Plain,
}

impl Transport {
    /// Whether a connection for a URL of `scheme` uses TLS.
    pub fn tls_for(self, scheme: &str) -> bool {
        match self {
            Transport::Tls => true,
            Transport::Plain => false,
            Transport::Auto => scheme == "https",
        }
    }
}

/// The cost of resolving a new host name.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DnsCost {
    /// A fixed time.
    Ms(f64),
    /// A number of round trips (of `--rtt-ms`, or measured with one TCP handshake).
    Rtts(f64),
}

impl DnsCost {
    /// Parses `0`, `20ms`, `1rtt`, `1.5rtt`.
    pub fn parse(s: &str) -> Option<DnsCost> {
        let s = s.trim().to_ascii_lowercase();
        if let Some(v) = s.strip_suffix("rtts").or_else(|| s.strip_suffix("rtt")) {
            let v: f64 = v.trim().parse().ok()?;
            return (v >= 0.0).then_some(DnsCost::Rtts(v));
        }
        let v: f64 = s.strip_suffix("ms").unwrap_or(&s).trim().parse().ok()?;
        (v >= 0.0).then_some(DnsCost::Ms(v))
    }
}

/// Request priority per resource type, 0 (highest) ..= 7.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Priorities(pub HashMap<ObjectType, u8>);

impl Default for Priorities {
    /// Document 0, stylesheet and script 1, font and XHR 2, image 3, other 4.
    fn default() -> Self {
        use ObjectType::*;
        Priorities(
            [
                (Document, 0),
                (Stylesheet, 1),
                (Script, 1),
                (Font, 2),
                (Xhr, 2),
                (Image, 3),
                (Other, 4),
            ]
            .into_iter()
            .collect(),
        )
    }
}

impl Priorities {
    /// The priority of a type.
    pub fn of(&self, t: ObjectType) -> u8 {
        self.0.get(&t).copied().unwrap_or(4)
    }

    /// Parses `type=N,...` over the defaults (`image=2,other=5`).
    pub fn parse(s: &str) -> Result<Priorities, String> {
        let mut p = Priorities::default();
        for part in s.split(',').filter(|x| !x.trim().is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("{part:?}: expected TYPE=N"))?;
            let t = type_from_name(k.trim()).ok_or_else(|| {
                format!("{k:?}: not a type (document, stylesheet, script, font, xhr, image, other)")
            })?;
            let n: u8 = v
                .trim()
                .parse()
                .ok()
                .filter(|n| *n <= 7)
                .ok_or_else(|| format!("{v:?}: priority must be 0 to 7"))?;
            p.0.insert(t, n);
        }
        Ok(p)
    }
}

/// A type from its archive name (`document`, `stylesheet`, …).
pub fn type_from_name(s: &str) -> Option<ObjectType> {
    use ObjectType::*;
    Some(match s.to_ascii_lowercase().as_str() {
        "document" | "html" => Document,
        "stylesheet" | "css" | "style" => Stylesheet,
        "script" | "js" => Script,
        "font" => Font,
        "xhr" | "fetch" => Xhr,
        "image" | "img" => Image,
        "other" => Other,
        _ => return None,
    })
}

/// The archive name of a type.
pub fn type_name(t: ObjectType) -> &'static str {
    use ObjectType::*;
    match t {
        Document => "document",
        Stylesheet => "stylesheet",
        Script => "script",
        Font => "font",
        Xhr => "xhr",
        Image => "image",
        Other => "other",
    }
}

/// Everything a load needs besides the archive.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// The page URL.
    pub url: String,
    /// Protocol.
    pub proto: Proto,
    /// Origins → connections for SPDY and HTTP/2.
    pub domains: Domains,
    /// TLS or not.
    pub transport: Transport,
    /// `--resolve` map (`*` = any other host).
    pub resolve: HashMap<String, Target>,
    /// Cost of each new host name.
    pub dns_cost: DnsCost,
    /// The path's round-trip time, for costs in RTTs (measured if `None`).
    pub rtt: Option<Duration>,
    /// Certificate checking.
    pub verify: Verify,
    /// The TLS ClientHello's shape: Chromium's by default (its post-quantum key share
    /// and GREASE ECH make it ~1.7 KB larger than rustls's own, which on a slow uplink
    /// delays every new connection; `speedy lab validate` measured it).
    pub tls_hello: speedy_net::tls::Hello,
    /// HTTP/1.1 connections per host.
    pub per_host: usize,
    /// HTTP/1.1 connections in all.
    pub max_connections: usize,
    /// HTTP/1.1 pipelining depth (1 = none).
    pub pipeline: usize,
    /// SPDY and h2 sessions per pool (1, as Chrome): with more, a pool opens up to this
    /// many as requests wait and gives each request to the ready session with the fewest
    /// in flight (the cellular study's 20 SPDY connections to the proxy).
    pub sessions_per_pool: usize,
    /// Before a SPDY/h2 pool's first session over TLS is up (the protocol is learned by
    /// ALPN), open a connection for each waiting request (up to `per_host`), as Chromium does for a server it does not yet know to
    /// speak HTTP/2 (its `HttpStreamFactory::Job::ShouldThrottleConnectForSpdy` holds
    /// back only servers its `HttpServerProperties` knows; a fresh profile knows none);
    /// the connections that lose the race close once connected. Off (`--known-servers`):
    /// one connection per session from the start.
    pub race_connections: bool,
    /// Chromium's backup connect jobs: 250 ms after a pool's first dial, if the oldest
    /// dial has no TCP connection yet and requests wait, one more dial starts beside it
    /// (`loader::chromium::BACKUP_JOB_AFTER`); never over QUIC.
    pub backup_connect_jobs: bool,
    /// Requests made by a cross-site frame use connections of their own, as Chromium's
    /// socket pools are keyed by network anonymization key (top-frame site, cross-site
    /// flag; `ClientSocketPool::GroupId`, `SpdySessionKey`). Browsers before 2020 shared
    /// one pool per origin (`--no-partition`). With the browser model, the key also
    /// carries the request's privacy mode (`loader::chromium::Privacy`).
    pub partition_frames: bool,
    /// Chromium's preconnects, with the browser model: two sockets to the page's origin
    /// as its navigation starts, one credentialed socket to each cross-site frame's
    /// origin as the frame navigates (`loader::chromium::PRECONNECT_SOCKETS`); never over
    /// QUIC or through a proxy.
    pub preconnect: bool,
    /// Priorities by type, for every request; `None`: Chromium's per request with the
    /// browser model, else [`Priorities::default`].
    pub priorities: Option<Priorities>,
    /// Request the URLs of an `X-Subresources` header at once.
    pub hint: bool,
    /// Subresources learned from an earlier load, requested as soon as the HTML request
    /// is sent (client prefetch).
    pub prefetch: Vec<(String, ObjectType)>,
    /// Fetch archive objects of a parsed parent that the parser did not find, at the
    /// parent's end (counted as `missed_by_parser`).
    pub archive_fallback: bool,
    /// Keep response bodies (HAR `content.text`).
    pub keep_bodies: bool,
    /// Give up after this long.
    pub timeout: Duration,
    /// How SPDY request headers are compressed (CRIME-safe by default; plain zlib is what
    /// Chrome sent before 2012).
    pub header_compression: spdy::HeaderCompression,
    /// Load as Chromium does (`loader/chromium.rs`: its priorities, Blink's tight mode
    /// until `<body>`, the HTTP/1.1 delayable limits, parser-blocking scripts, frames
    /// requested by the parser only). Off: every reference is requested when found.
    pub browser_model: bool,
    /// Script execution cost per KiB of decoded source, for scripts whose archive object
    /// records no `exec_ms`.
    pub script_ms_per_kb: f64,
    /// Send everything through this proxy.
    pub proxy: Option<ProxyTarget>,
    /// During a browsing session's think time, a SPDY PING on every open connection this
    /// often (the cellular study's keep-alive, holding the radio in DCH).
    pub keepalive: Option<Duration>,
    /// SPDY over SCTP instead of TCP (plain connections only; `docs/sctp.md`).
    pub sctp: Option<speedy_net::sctp::SctpConfig>,
}

/// Default script execution cost, ms per KiB (see `docs/loader.md`, "Script cost").
pub const SCRIPT_MS_PER_KB: f64 = 0.1;

impl LoadConfig {
    /// Browser defaults for `url` over `proto`: the defaults of `speedy load`'s options
    /// ([`crate::LoadSpec::default`], the one place they are set).
    pub fn new(url: &str, proto: Proto) -> LoadConfig {
        let d = crate::LoadSpec::default();
        LoadConfig {
            url: url.to_string(),
            proto,
            domains: d.spdy_domains,
            transport: Transport::Auto,
            resolve: HashMap::new(),
            dns_cost: DnsCost::parse(&d.dns_cost).expect("the default DNS cost parses"),
            rtt: None,
            verify: Verify::System,
            per_host: d.connections_per_host,
            max_connections: d.max_connections,
            sessions_per_pool: d.sessions,
            race_connections: !d.known_servers,
            backup_connect_jobs: true,
            partition_frames: d.partition,
            preconnect: d.preconnect,
            tls_hello: d.tls_hello,
            pipeline: d.pipeline,
            priorities: None,
            hint: d.hint,
            prefetch: Vec::new(),
            archive_fallback: d.archive_fallback,
            keep_bodies: d.har_bodies,
            timeout: Duration::from_secs_f64(d.timeout),
            header_compression: d.header_compression,
            browser_model: d.browser_model,
            script_ms_per_kb: d.script_ms_per_kb,
            proxy: None,
            keepalive: None,
            sctp: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_options() {
        assert_eq!(DnsCost::parse("20ms"), Some(DnsCost::Ms(20.0)));
        assert_eq!(DnsCost::parse("0"), Some(DnsCost::Ms(0.0)));
        assert_eq!(DnsCost::parse("1.5rtt"), Some(DnsCost::Rtts(1.5)));
        assert_eq!(DnsCost::parse("x"), None);
        let p = Priorities::parse("image=2, other=7").unwrap();
        assert_eq!(p.of(ObjectType::Image), 2);
        assert_eq!(p.of(ObjectType::Document), 0);
        assert!(Priorities::parse("image=9").is_err());
        assert!(Priorities::parse("bogus=1").is_err());
        assert_eq!(Proto::parse("spdy/3.1"), Some(Proto::Spdy));
        assert_eq!(Proto::parse("http/1.1"), Some(Proto::Http1));
        assert_eq!(Proto::parse("http2"), Some(Proto::H2));
        assert_eq!(Proto::parse("spdy/3"), None);
        let e = Proto::from_protocol(speedy_net::Protocol::parse("spdy/2").unwrap()).unwrap_err();
        assert!(e.contains("spdy/2"), "{e}");
    }
}
