//! The programs of this crate as types: [`ServeSpec`] (`speedy serve`) and [`ProxySpec`]
//! (`speedy proxy`). The command lines' flags are their fields (`clap`), a spec file is
//! the same fields as JSON or TOML (`--spec FILE`), and the lab builds them and hands
//! them over whole: nobody spells these programs' flags by hand. Defaults live in the
//! flag attributes and nowhere else (`Default` reads them from there).

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use speedy_net::server::ServerConfig;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The version of the specs' format this build writes and reads.
pub const SPEC_VERSION: u32 = 1;

/// Everything `speedy serve` is asked to do. Field names are the flags' names with `_`
/// for `-`.
#[derive(Clone, Debug, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeSpec {
    /// The spec format's version ([`SPEC_VERSION`]).
    #[arg(skip = SPEC_VERSION)]
    pub version: u32,
    /// Address to listen on; port 0 picks a free port. The chosen address is printed.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR:PORT")]
    pub listen: String,
    /// Directory to serve (this or --archive).
    #[arg(long, value_name = "DIR", conflicts_with = "archive")]
    pub root: Option<PathBuf>,
    /// Replay a page archive (from `speedy corpus`) from memory, every origin at once
    /// (this or --root).
    #[arg(long, value_name = "DIR")]
    pub archive: Option<PathBuf>,
    /// Archive: what HTML responses push over SPDY and HTTP/2 (none, subresources, all).
    #[arg(
        long,
        default_value = "none",
        value_name = "POLICY",
        requires = "archive"
    )]
    #[serde(with = "speedy_net::text::by_name")]
    pub push: crate::PushPolicy,
    /// Archive: add `x-subresources` (the document's subresources) to HTML responses.
    #[arg(long, requires = "archive")]
    pub hint: bool,
    /// Archive: answer at once instead of waiting each object's recorded think time.
    #[arg(long, requires = "archive")]
    pub no_think_time: bool,
    /// Archive of a recording: also wait, before each response, the server think time the
    /// recording saw (the time to its first byte beyond the quickest of its host's).
    /// Off by default, as in Mahimahi's and Web Page Replay's replays.
    #[arg(long, requires = "archive")]
    pub recorded_think_time: bool,
    /// Archive: serve https origins without TLS too (TLS is otherwise on, from the lab CA).
    #[arg(long, requires = "archive")]
    pub plain: bool,
    /// Append one line per request to FILE, as it arrives: `METHOD HOST PATH PROTOCOL`
    /// (host as the client sent it, path with its query, protocol `http/1.1`, `h2`,
    /// `h3`, `spdy/3.1`, ...).
    #[arg(long, value_name = "FILE")]
    pub log_requests: Option<PathBuf>,
    /// Archive: directory of the lab CA (created if missing; loaders trust DIR/ca.pem).
    /// Default: ARCHIVE/lab-ca.
    #[arg(long, value_name = "DIR", requires = "archive")]
    pub ca_dir: Option<PathBuf>,
    /// Archive: bind these addresses (comma-separated), origins assigned to them in turn,
    /// all on the --listen port; prints `origin HOST IP:PORT` for each origin.
    #[arg(
        long,
        value_name = "IP,IP,...",
        value_delimiter = ',',
        requires = "archive"
    )]
    pub bind_origins: Vec<String>,
    /// PEM certificate chain for TLS (with --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for TLS (with --tls-cert).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// TLS with a certificate made up at start for localhost and 127.0.0.1.
    #[arg(long, conflicts_with = "tls_cert")]
    pub tls_self_signed: bool,
    /// File of lines `PATH: PUSHED_PATH ...`: requests for PATH push those files (SPDY).
    #[arg(long, value_name = "FILE")]
    pub push_map: Option<PathBuf>,
    /// Answer POST and PUT with the request body.
    #[arg(long)]
    pub echo_upload: bool,
    /// Answer requests for PATH with RST_STREAM CANCEL (fault injection for clients).
    #[arg(long, value_name = "PATH")]
    pub reset_path: Vec<String>,
    /// Streams a client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS).
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub max_concurrent_streams: u32,
    /// Header compression level 0-9 for responses.
    #[arg(long, default_value_t = 9, value_name = "0-9")]
    pub header_level: u32,
    /// SPDY response header compression: crime-safe (set-cookie kept apart), zlib (one
    /// shared context) or none (stored blocks).
    #[arg(long, default_value = "crime-safe", value_name = "MODE")]
    #[serde(with = "speedy_net::text::by_name")]
    pub header_compression: spdy::HeaderCompression,
    /// Code SPDY response header blocks with deflate's fixed Huffman codes and speedy's
    /// own match finder instead of zlib: the same stream format (any SPDY client reads
    /// it), a few percent larger, without the Huffman trees zlib builds for every block
    /// (docs/serve.md).
    #[arg(long)]
    pub fixed_header_codes: bool,
    /// SPDY window overruns: lenient accepts them from a peer that never sent a
    /// WINDOW_UPDATE (moby/spdystream, Kubernetes) and stops waiting for its credit;
    /// strict resets the stream (docs/flow-control.md).
    #[arg(long, default_value = "lenient", value_name = "strict|lenient")]
    #[serde(with = "speedy_net::text::by_name")]
    pub flow_control: spdy::session::FlowControl,
    /// Accept this sub-protocol on an HTTP/1.1 `Upgrade: SPDY/3.1` request
    /// (`X-Stream-Protocol-Version`, repeatable); a request offering only others gets 403.
    #[arg(long, value_name = "PROTOCOL")]
    pub stream_protocol: Vec<String>,
    /// Largest request body accepted, in bytes (suffixes K, M, G: binary units).
    #[arg(long, default_value = "64M", value_name = "BYTES", value_parser = crate::spec::parse_size)]
    pub max_body: usize,
    /// TCP_NOTSENT_LOWAT on accepted TCP connections: keep at most about BYTES unsent in
    /// the kernel, so priorities and reprioritizations act within a round trip instead of
    /// behind a socket buffer of seconds on a slow link (e.g. 16K; default: the
    /// kernel's, no limit).
    #[arg(long, value_name = "BYTES", value_parser = crate::spec::parse_size)]
    pub notsent_lowat: Option<usize>,
    /// Connections served at once; more wait in the kernel's accept queue. HTTP/3's QUIC
    /// connections are counted apart (as many again; more are refused).
    #[arg(long, default_value_t = 4096, value_name = "N")]
    pub max_connections: usize,
    /// Connections from one address (IPv6: one /64) at once, on TCP and on QUIC each; more
    /// are closed (QUIC: refused) as they are accepted, so one peer cannot take every
    /// slot. Default: a quarter of --max-connections; 0: no limit per address.
    #[arg(long, value_name = "N")]
    pub max_connections_per_ip: Option<usize>,
    /// Seconds a new connection has to send its first bytes (protocol sniffing), and a
    /// QUIC handshake to end.
    #[arg(long, default_value = "10", value_name = "SECS", value_parser = crate::spec::parse_secs)]
    #[serde(with = "speedy_net::text::secs")]
    pub sniff_timeout: Duration,
    /// Seconds a TLS handshake may take.
    #[arg(long, default_value = "10", value_name = "SECS", value_parser = crate::spec::parse_secs)]
    #[serde(with = "speedy_net::text::secs")]
    pub tls_handshake_timeout: Duration,
    /// Seconds for an HTTP/1.1 request head, and between requests on a keep-alive
    /// connection; for an HTTP/3 request's header section.
    #[arg(long, default_value = "30", value_name = "SECS", value_parser = crate::spec::parse_secs)]
    #[serde(with = "speedy_net::text::secs")]
    pub header_read_timeout: Duration,
    /// Seconds a handler waits for the next bytes of a request body before its read
    /// fails (a peer trickling or stalling a body).
    #[arg(long, default_value = "30", value_name = "SECS", value_parser = crate::spec::parse_secs)]
    #[serde(with = "speedy_net::text::secs")]
    pub body_read_timeout: Duration,
    /// Seconds a SPDY, h2 or HTTP/3 connection may have no open stream before it gets
    /// GOAWAY and is closed.
    #[arg(long, default_value = "120", value_name = "SECS", value_parser = crate::spec::parse_secs)]
    #[serde(with = "speedy_net::text::secs")]
    pub idle_timeout: Duration,
    /// Seconds a SPDY session may stay quiet (no open stream, nothing to write) before
    /// it gives back the memory it can rebuild: its zlib contexts shrink to their
    /// histories and its empty read buffer is freed (about 27 KiB of a session's 31).
    #[arg(long, default_value = "1", value_name = "SECS", value_parser = crate::spec::parse_secs)]
    #[serde(with = "speedy_net::text::secs")]
    pub park_after: Duration,
    /// Seconds streams have to finish after SIGTERM/SIGINT before the server exits
    /// anyway.
    #[arg(long, default_value = "30", value_name = "SECS", value_parser = crate::spec::parse_secs)]
    #[serde(with = "speedy_net::text::secs")]
    pub drain_timeout: Duration,
    /// Sample every connection's TCP sender state (cwnd, ssthresh, bytes in flight, RTT,
    /// RTO, retransmissions) into FILE, one JSON line per connection per sample.
    #[arg(long, value_name = "FILE")]
    pub tcp_series: Option<PathBuf>,
    /// Milliseconds between --tcp-series samples.
    #[arg(long, default_value_t = 10, value_name = "MS", requires = "tcp_series")]
    pub tcp_interval_ms: u64,
    /// Also accept SPDY over SCTP (SCTP over UDP, RFC 6951 framing) on the same
    /// addresses and port numbers, over UDP (docs/sctp.md); --sctp-port moves it to a
    /// port of its own. Associations, handshakes included, are held to --max-connections
    /// (more INITs are dropped) and --max-connections-per-ip (more get an ABORT).
    #[arg(long)]
    pub sctp: bool,
    /// With --sctp: SCTP's UDP port at every address, instead of the --listen port (so
    /// that --h3 or --udp-get can have that one); 0 picks a free port, the same at every
    /// address. The start-up line tells where it is (`listeners`). Clients dial it with
    /// `--sctp-port`.
    #[arg(long, value_name = "PORT", requires = "sctp")]
    pub sctp_port: Option<u16>,
    /// With --sctp: SCTP's RTO.Initial in ms, the timeout before an association's first
    /// round trip is measured (default 3000, as Linux; RFC 9260 says 1000).
    #[arg(long, value_name = "MS", requires = "sctp", value_parser = clap::value_parser!(u32).range(1..=60_000))]
    pub sctp_rto_initial_ms: Option<u32>,
    /// With --sctp: keep FILE holding this process's SCTP counters as JSON (associations,
    /// DATA chunks and SACKs received, T3 timeouts, fast retransmissions, delayed-SACK
    /// timeouts, all since start), rewritten within 20 ms of a change: the lab reads it
    /// around each load, as it reads the kernel's TCP counters.
    #[arg(long, value_name = "FILE", requires = "sctp")]
    pub sctp_counters: Option<PathBuf>,
    /// With --sctp: the SCTP stack that answers, sctp-proto (the default) or usrsctp
    /// (libusrsctp, FreeBSD's SCTP: its own statistics feed --sctp-counters); clients on
    /// either stack are served, e.g. `speedy serve --root ./site --sctp --sctp-stack
    /// usrsctp`.
    #[arg(long, default_value = "sctp-proto", value_name = "sctp-proto|usrsctp")]
    #[serde(with = "speedy_net::text::by_name")]
    pub sctp_stack: speedy_net::sctp::SctpStack,
    /// Also accept HTTP/3 over QUIC on UDP at the same addresses and port numbers, with
    /// the TLS certificate of the TCP side (so it needs TLS: --tls-self-signed,
    /// --tls-cert, or an archive of https origins). With --sctp, SCTP needs a port of
    /// its own (--sctp-port).
    #[arg(long)]
    pub h3: bool,
    /// With --h3: QUIC's initial congestion window in bytes (quinn's CUBIC; default
    /// 14720, RFC 9002's), as `ip route ... initcwnd` sets TCP's.
    #[arg(long, value_name = "BYTES", requires = "h3", value_parser = clap::value_parser!(u64).range(1200..=100_000_000))]
    pub quic_initial_window: Option<u64>,
    /// With --h3: QUIC's congestion control, quinn's cubic (default), bbr or newreno
    /// (also `reno`): e.g. the algorithm the TCP side runs, for a like-for-like
    /// comparison.
    #[arg(long, value_name = "NAME", requires = "h3", value_parser = speedy_net::h3::QuicCcAlgorithm::parse)]
    #[serde(with = "speedy_net::text::opt_by_name")]
    pub quic_cc: Option<speedy_net::h3::QuicCcAlgorithm>,
    /// Also answer one-datagram GETs on UDP at the same addresses and port numbers: a
    /// datagram holding a path gets the file back in one datagram (at most 65,506
    /// bytes), SST's Fig 7 UDP baseline (`speedy fetch --protocol udp`). It amplifies
    /// (a small datagram gets up to 64 KiB back): labs and loopback only. Not with
    /// --h3; with --sctp, SCTP needs a port of its own (--sctp-port).
    #[arg(long, conflicts_with = "h3")]
    pub udp_get: bool,
}

/// Everything `speedy proxy` is asked to do. Field names are the flags' names with `_`
/// for `-`.
#[derive(Clone, Debug, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProxySpec {
    /// The spec format's version ([`SPEC_VERSION`]).
    #[arg(skip = SPEC_VERSION)]
    pub version: u32,
    /// Address to listen on (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:3128", value_name = "IP:PORT")]
    pub listen: String,
    /// Serve TLS with this certificate chain (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve TLS with a fresh self-signed certificate.
    #[arg(long, conflicts_with = "tls_cert")]
    pub tls_self_signed: bool,
    /// Serve TLS with a certificate for the --listen address issued by the lab CA in DIR
    /// (created if missing; loaders trust DIR/ca.pem, as `speedy serve --archive` does).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["tls_cert", "tls_self_signed"])]
    pub tls_ca_dir: Option<PathBuf>,
    /// Reach HOST at IP (and PORT, default the request's); `*` for every other host
    /// (repeatable). A host named here is allowed (at any port; at PORT only when
    /// written HOST:PORT=...); a `*` entry allows every host.
    #[arg(long, value_name = "HOST=IP[:PORT]")]
    pub resolve: Vec<String>,
    /// Let clients reach HOST (at PORT only, if given; IPv6 as [ADDR]:PORT), CONNECT
    /// included: a name, an address, `*.example.com` (every name under example.com),
    /// `*:443` (every host at port 443) or `*` (every host: an open proxy). Repeatable.
    /// Hosts of --resolve are allowed too; with neither flag nothing is, and every
    /// request gets 403. A host not in --resolve is looked up with the system's
    /// resolver.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub allow: Vec<String>,
    /// Protocol towards http:// origins: http1 (default) or spdy (SPDY/3.1).
    #[arg(long, value_name = "PROTOCOL")]
    pub upstream: Option<String>,
    /// Accept any certificate from https:// origins.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Trust the CA certificates in this PEM file for https:// origins.
    #[arg(long, alias = "ca", value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Seconds to wait for an origin's response headers before answering 504.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub timeout: u64,
    /// Largest request body forwarded, in bytes (suffixes K, M, G: binary units). Bodies
    /// are read whole before they go to the origin, and all of them at once are held to
    /// this too: a body over it gets 413, one the others leave no room for 503.
    #[arg(long, default_value = "64M", value_name = "BYTES", value_parser = crate::spec::parse_size)]
    pub max_body: usize,
    /// Append one JSON line per request to this file.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Sample the client connections' TCP sender state (cwnd, ssthresh, bytes in flight,
    /// RTT, RTO, retransmissions) into FILE, one JSON line per connection per sample.
    #[arg(long, value_name = "FILE")]
    pub tcp_series: Option<PathBuf>,
    /// Seconds a client connection may stay idle (no stream open, or no request head
    /// awaited on HTTP/1.1 keep-alive) before the proxy closes it: long, so that a
    /// browsing session's think time does not cost its connections.
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    pub idle_timeout: u64,
    /// Milliseconds between --tcp-series samples.
    #[arg(long, default_value_t = 10, value_name = "MS", requires = "tcp_series")]
    pub tcp_interval_ms: u64,
    /// Record every exchange: one JSON line per request and response appended to FILE,
    /// each body as delivered in bodies/SHA256 beside it. CONNECT is then no blind
    /// tunnel: the proxy terminates the client's TLS with a certificate from
    /// --record-ca and records the requests inside too (docs/proxy.md, "Recording").
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// With --record: the CA that signs the certificates of CONNECT hosts (created if
    /// missing; clients trust DIR/ca.pem). Default: lab-ca beside --record's FILE.
    #[arg(long, value_name = "DIR", requires = "record")]
    pub record_ca: Option<PathBuf>,
    /// No start-up warnings (that nothing is allowed, that other machines can reach the
    /// proxy): for a proxy whose network only its own clients reach, as the lab's, each
    /// in a namespace across the emulated link from its loader.
    #[arg(long)]
    pub quiet: bool,
}

/// The defaults of a spec's flag attributes: its command with no options.
fn flag_defaults<T: clap::Args>() -> T {
    let cmd = T::augment_args(clap::Command::new("defaults"));
    let m = cmd
        .try_get_matches_from(["defaults"])
        .expect("every option of a spec has a default");
    <T as clap::FromArgMatches>::from_arg_matches(&m).expect("defaults make a spec")
}

impl Default for ServeSpec {
    fn default() -> ServeSpec {
        flag_defaults()
    }
}

impl Default for ProxySpec {
    fn default() -> ProxySpec {
        flag_defaults()
    }
}

/// Reads a spec file: JSON, or TOML when the name ends in `.toml`; `-` reads JSON from
/// standard input. Unknown keys and another format version are errors naming the file.
pub fn read_spec<T: DeserializeOwned + Versioned>(path: &Path) -> Result<T, String> {
    speedy_net::text::read_spec(path, SPEC_VERSION, |s: &T| s.version())
}

/// A spec with a format version.
pub trait Versioned {
    /// The version the spec says it is written in.
    fn version(&self) -> u32;
}

impl Versioned for ServeSpec {
    fn version(&self) -> u32 {
        self.version
    }
}

impl Versioned for ProxySpec {
    fn version(&self) -> u32 {
        self.version
    }
}

/// `64M`, `512K`, `1G`, `1000`: bytes, binary units.
pub fn parse_size(s: &str) -> Result<usize, String> {
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
pub fn parse_secs(s: &str) -> Result<Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() && x < 1e9 => Ok(Duration::from_secs_f64(x)),
        _ => Err(format!("{s:?}: expected seconds above 0, like 30 or 0.5")),
    }
}

impl ServeSpec {
    /// Checks what the command line's own rules do not cover for a spec file (one of
    /// `root` and `archive`, the options that need another), naming the option at fault.
    pub fn check(&self) -> Result<(), String> {
        match (&self.root, &self.archive) {
            (None, None) => return Err("one of --root and --archive is needed".into()),
            (Some(_), Some(_)) => return Err("--root and --archive: one or the other".into()),
            _ => {}
        }
        if self.max_connections == 0 {
            return Err("--max-connections 0: at least 1".into());
        }
        if self.header_level > 9 {
            return Err(format!(
                "--header-level {}: must be 0 to 9",
                self.header_level
            ));
        }
        self.check_udp_ports()?;
        if !self.sctp
            && (self.sctp_rto_initial_ms.is_some()
                || self.sctp_counters.is_some()
                || self.sctp_port.is_some()
                || self.sctp_stack != speedy_net::sctp::SctpStack::default())
        {
            return Err(
                "--sctp-rto-initial-ms, --sctp-counters, --sctp-port and --sctp-stack: \
                 only with --sctp"
                    .into(),
            );
        }
        if !self.h3 && (self.quic_initial_window.is_some() || self.quic_cc.is_some()) {
            return Err("--quic-initial-window and --quic-cc: only with --h3".into());
        }
        if self.tcp_interval_ms == 0 {
            return Err("--tcp-interval-ms 0: at least 1".into());
        }
        Ok(())
    }

    /// The UDP listeners on distinct ports: --h3 and --udp-get both take the --listen
    /// port, and --sctp does too unless --sctp-port gives it another (0: a free one).
    fn check_udp_ports(&self) -> Result<(), String> {
        if self.h3 && self.udp_get {
            return Err("--h3 and --udp-get share the --listen port on UDP: one of them".into());
        }
        let other = match (self.h3, self.udp_get) {
            (true, _) => "--h3",
            (_, true) => "--udp-get",
            _ => return Ok(()),
        };
        if !self.sctp {
            return Ok(());
        }
        let listen_port = self
            .listen
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse::<u16>().ok());
        match self.sctp_port {
            None => Err(format!(
                "--sctp and {other} both take the --listen port on UDP: give SCTP a port of                  its own with --sctp-port PORT (0: any free port)"
            )),
            Some(p) if p != 0 && Some(p) == listen_port => Err(format!(
                "--sctp-port {p} is the --listen port, which {other} takes on UDP: give SCTP                  another port (0: any free port)"
            )),
            Some(_) => Ok(()),
        }
    }

    /// QUIC's congestion control from `quic_cc` and `quic_initial_window`.
    pub fn quic_cc(&self) -> speedy_net::h3::QuicCc {
        speedy_net::h3::QuicCc {
            algorithm: self.quic_cc.unwrap_or_default(),
            initial_window: self.quic_initial_window,
        }
    }

    /// The limits and timeouts, on a server configuration.
    pub fn apply_limits(&self, cfg: &mut ServerConfig) {
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

    /// The SPDY session settings.
    pub fn apply_spdy(&self, cfg: &mut ServerConfig) {
        cfg.spdy.max_concurrent_streams = self.max_concurrent_streams;
        cfg.spdy.compression.level = self.header_level;
        cfg.spdy.compression.fixed_codes = self.fixed_header_codes;
        cfg.spdy.flow_control = self.flow_control;
        cfg.stream_protocols = self.stream_protocol.clone();
        self.header_compression.apply(&mut cfg.spdy.compression);
    }
}

impl ProxySpec {
    /// Checks what the command line's own rules do not cover for a spec file.
    pub fn check(&self) -> Result<(), String> {
        if self.timeout == 0 {
            return Err("--timeout 0: at least 1 second".into());
        }
        if self.tcp_interval_ms == 0 {
            return Err("--tcp-interval-ms 0: at least 1".into());
        }
        if self.insecure && self.cacert.is_some() {
            return Err("--insecure and --cacert: one or the other".into());
        }
        if self.record.is_none() && self.record_ca.is_some() {
            return Err("--record-ca: only with --record FILE".into());
        }
        crate::allow::Allow::parse(&self.allow)?;
        Ok(())
    }

    /// With `record`: the recording CA's directory (`record_ca`, else `lab-ca` beside
    /// the record file).
    pub fn record_ca_dir(&self) -> Option<PathBuf> {
        let file = self.record.as_ref()?;
        Some(self.record_ca.clone().unwrap_or_else(|| {
            file.parent()
                .map_or_else(|| PathBuf::from("lab-ca"), |d| d.join("lab-ca"))
        }))
    }

    /// Whether neither `--allow` nor `--resolve` lets anything through: every request
    /// gets 403.
    pub fn allows_nothing(&self) -> bool {
        self.allow.is_empty() && self.resolve.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_come_from_the_flags_and_specs_round_trip() {
        let d = ServeSpec::default();
        assert_eq!(d.version, SPEC_VERSION);
        assert_eq!(d.listen, "127.0.0.1:8080");
        assert_eq!(d.max_body, 64 << 20);
        assert_eq!(d.idle_timeout, Duration::from_secs(120));
        assert_eq!(d.flow_control, spdy::session::FlowControl::Lenient);
        let mut s = d.clone();
        s.archive = Some(PathBuf::from("/tmp/a"));
        s.h3 = true;
        s.quic_cc = Some(speedy_net::h3::QuicCcAlgorithm::Bbr);
        s.park_after = Duration::from_millis(500);
        s.push = crate::PushPolicy::All;
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<ServeSpec>(&json).unwrap(), s);
        assert_eq!(
            toml::from_str::<ServeSpec>(&toml::to_string(&s).unwrap()).unwrap(),
            s
        );
        let p = ProxySpec::default();
        assert_eq!(p.listen, "127.0.0.1:3128");
        assert_eq!(p.timeout, 30);
        assert!(p.allow.is_empty() && p.allows_nothing(), "safe by default");
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<ProxySpec>(&json).unwrap(), p);
    }

    #[test]
    fn the_proxy_allow_list_round_trips_and_is_checked() {
        let p = ProxySpec {
            allow: vec![
                "*.example.com".into(),
                "10.0.0.1:443".into(),
                "[::1]:8443".into(),
            ],
            ..ProxySpec::default()
        };
        assert_eq!(p.check(), Ok(()));
        assert!(!p.allows_nothing());
        let json = serde_json::to_string(&p).unwrap();
        assert!(json.contains(r#""allow":["*.example.com","10.0.0.1:443","[::1]:8443"]"#));
        assert_eq!(serde_json::from_str::<ProxySpec>(&json).unwrap(), p);
        let toml_text = toml::to_string(&p).unwrap();
        assert_eq!(toml::from_str::<ProxySpec>(&toml_text).unwrap(), p);
        // A spec file without the key: nothing allowed (the flag's default).
        let old: ProxySpec = serde_json::from_str(r#"{"version":1}"#).unwrap();
        assert!(old.allows_nothing());
        let bad = ProxySpec {
            allow: vec!["a.*.com".into()],
            ..ProxySpec::default()
        };
        assert!(bad.check().unwrap_err().contains("--allow \"a.*.com\""));
    }

    #[test]
    fn recording_round_trips_and_its_ca_defaults_beside_the_log() {
        let p = ProxySpec {
            record: Some(PathBuf::from("/tmp/rec/exchanges.jsonl")),
            allow: vec!["*".into()],
            ..ProxySpec::default()
        };
        assert_eq!(p.check(), Ok(()));
        assert_eq!(p.record_ca_dir(), Some(PathBuf::from("/tmp/rec/lab-ca")));
        let json = serde_json::to_string(&p).unwrap();
        assert!(
            json.contains(r#""record":"/tmp/rec/exchanges.jsonl""#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<ProxySpec>(&json).unwrap(), p);
        let p = ProxySpec {
            record_ca: Some(PathBuf::from("/tmp/ca")),
            ..p
        };
        assert_eq!(p.record_ca_dir(), Some(PathBuf::from("/tmp/ca")));
        let toml_text = toml::to_string(&p).unwrap();
        assert_eq!(toml::from_str::<ProxySpec>(&toml_text).unwrap(), p);
        let alone = ProxySpec { record: None, ..p };
        assert!(alone.check().unwrap_err().contains("--record-ca"));
        assert_eq!(alone.record_ca_dir(), None);
    }

    #[test]
    fn checks_name_the_option() {
        let mut s = ServeSpec::default();
        assert!(s.check().unwrap_err().contains("--root"));
        s.root = Some(PathBuf::from("."));
        s.quic_cc = Some(speedy_net::h3::QuicCcAlgorithm::Bbr);
        assert!(s.check().unwrap_err().contains("--quic-cc"));
        let e = serde_json::from_str::<ServeSpec>(r#"{"rooot":"."}"#).unwrap_err();
        assert!(e.to_string().contains("rooot"), "{e}");
    }

    #[test]
    fn h3_and_sctp_go_together_on_distinct_udp_ports_only() {
        let mut s = ServeSpec {
            root: Some(PathBuf::from(".")),
            listen: "10.0.0.1:8443".into(),
            sctp: true,
            h3: true,
            ..ServeSpec::default()
        };
        // Both on the --listen port: refused, naming the flags and the way out.
        let e = s.check().unwrap_err();
        assert!(
            e.contains("--sctp") && e.contains("--h3") && e.contains("--sctp-port"),
            "{e}"
        );
        // SCTP at the --listen port named explicitly: the same port, refused.
        s.sctp_port = Some(8443);
        let e = s.check().unwrap_err();
        assert!(
            e.contains("--sctp-port 8443") && e.contains("--listen") && e.contains("--h3"),
            "{e}"
        );
        // A port of its own, or any free one: accepted.
        for p in [9443, 0] {
            s.sctp_port = Some(p);
            assert_eq!(s.check(), Ok(()), "--sctp-port {p}");
        }
        // The same with --udp-get; --h3 and --udp-get still cannot share.
        (s.h3, s.udp_get, s.sctp_port) = (false, true, None);
        assert!(s.check().unwrap_err().contains("--udp-get"));
        s.sctp_port = Some(9443);
        assert_eq!(s.check(), Ok(()));
        s.h3 = true;
        assert!(s.check().unwrap_err().contains("--h3 and --udp-get"));
        // --sctp-port without --sctp, by name; the spec round-trips with it.
        (s.h3, s.udp_get, s.sctp) = (true, false, false);
        assert!(s.check().unwrap_err().contains("--sctp-port"));
        s.sctp = true;
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains(r#""sctp_port":9443"#), "{json}");
        assert_eq!(serde_json::from_str::<ServeSpec>(&json).unwrap(), s);
        // The command line says the same (clap accepts both; check refuses the clash).
        let cli = |args: &[&str]| {
            let cmd = <ServeSpec as clap::Args>::augment_args(clap::Command::new("serve"));
            let m = cmd.try_get_matches_from(args).unwrap();
            <ServeSpec as clap::FromArgMatches>::from_arg_matches(&m).unwrap()
        };
        let s = cli(&[
            "serve",
            "--root",
            ".",
            "--sctp",
            "--h3",
            "--sctp-port",
            "9443",
        ]);
        assert_eq!((s.sctp, s.h3, s.sctp_port), (true, true, Some(9443)));
        assert_eq!(s.check(), Ok(()));
        let s = cli(&["serve", "--root", ".", "--sctp", "--h3"]);
        assert!(s.check().unwrap_err().contains("--sctp-port"));
    }
}
