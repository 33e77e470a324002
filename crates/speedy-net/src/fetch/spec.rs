//! [`FetchSpec`]: everything `speedy fetch` is asked to do, as one type. The command
//! line's flags are its fields (`clap`), a spec file is the same fields as JSON or TOML
//! (`speedy fetch --spec FILE`), and whoever runs a fetch builds one and hands it over
//! whole: nobody spells the fetch's flags by hand. Defaults live in the flag attributes
//! below and nowhere else ([`FetchSpec::default`] reads them from there).
//!
//! [`FetchSpec::options`] checks a spec and turns it into the engine's [`FetchOptions`];
//! every error names the option (`--priority 8: must be 0 to 7`).

use super::{FetchOptions, Out, Schedule};
use crate::client::{ClientConfig, Http1Mode, Protocol};
use crate::sctp::SctpStack;
use crate::tls::Verify;
use crate::Carrier;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The version of the spec's format this build writes and reads.
pub const FETCH_SPEC_VERSION: u32 = 1;

/// One run of `speedy fetch`. Field names are the flags' long names with `_` for `-`
/// (`"request"` for -X, `"header"` for -H, `"output"` for -o, `"output_dir"` for -O);
/// negative flags are positive fields (`"crime_safe": false` for --no-crime-safe).
#[derive(Clone, Debug, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FetchSpec {
    /// The spec format's version ([`FETCH_SPEC_VERSION`]).
    #[arg(skip = FETCH_SPEC_VERSION)]
    pub version: u32,
    /// The URLs (the command line's positional arguments).
    #[arg(skip)]
    pub urls: Vec<String>,
    /// Seconds to wait for a connection, a response head, or the next piece of a body
    /// before that request fails.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    pub read_timeout: f64,
    /// Seconds the whole command may take (exit status 28 when it runs out, as curl's).
    #[arg(long, value_name = "SECS")]
    pub max_time: Option<f64>,
    /// spdy (= spdy/3.1), spdy/3, spdy/2, h2 (= http2; h2c with prior knowledge on
    /// http://), http1 (= http/1.1) or h3 (= http3: HTTP/3 over QUIC on UDP, https://
    /// only, by prior knowledge) or udp (one datagram each way to `speedy serve
    /// --udp-get`, SST's Fig 7 baseline: http:// URLs, one at a time, nothing resent).
    /// Default: ALPN over TLS (SPDY, then h2, then HTTP/1.1), spdy/3.1 on plain TCP.
    #[arg(long, value_name = "PROTOCOL")]
    pub protocol: Option<String>,
    /// Request method (as curl's -X), e.g. DELETE; default GET, or POST with --data.
    #[arg(short = 'X', long = "request", value_name = "METHOD")]
    pub request: Option<String>,
    /// HEAD requests; print each response's status line and headers on stdout (as curl -I).
    #[arg(short = 'I', long = "head", conflicts_with_all = ["request", "data"])]
    pub head: bool,
    /// Write the body of the URL in the same position to FILE (repeatable, as curl's -o);
    /// `-` writes it to stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Vec<PathBuf>,
    /// Exit with status 22 when some response's status is not 2xx (like curl -f).
    #[arg(short = 'f', long)]
    pub fail: bool,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub concurrency: usize,
    /// HTTP/1.1 (--protocol http1): a new connection for every request, closed after
    /// its response (`Connection: close`, HTTP/1.0's way), --concurrency at a time.
    #[arg(long)]
    pub connection_per_request: bool,
    /// HTTP/1.1 (--protocol http1): pipeline the requests on one connection per origin
    /// (RFC 9112 §9.3.2): each is sent without waiting for the responses before it,
    /// which come back in order.
    #[arg(long, conflicts_with = "connection_per_request")]
    pub pipeline: bool,
    /// Request the other URLs of an origin only once the first one's response is whole
    /// (a page, then what it embeds).
    #[arg(long)]
    pub after_first: bool,
    /// POST this file's contents to every URL.
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
    /// SPDY priority of the requests, 0 (highest) to 7.
    #[arg(long, default_value_t = 3, value_name = "0-7")]
    pub priority: u8,
    /// Priority of the URL in position N (from 1), overriding --priority (repeatable),
    /// e.g. `--priority-of 3=0`.
    #[arg(long, value_name = "N=PRIORITY")]
    pub priority_of: Vec<String>,
    /// Request the URL in position N SECS seconds after the connection is up instead of
    /// at once (repeatable), e.g. `--start 3=5`. URLs of one origin only.
    #[arg(long, value_name = "N=SECS")]
    pub start: Vec<String>,
    /// SECS seconds after the connection is up, ask the server to send the URL in
    /// position N at PRIORITY from then on, and time a PING sent with it (repeatable),
    /// e.g. `--reprioritize 10:2=0`. SPDY: speedy's PRIORITY extension frame
    /// (docs/spdy-priority.md); h2 and h3: RFC 9218's PRIORITY_UPDATE (h3's "PING" is a
    /// reserved-type stream the server stops). URLs of one origin only.
    #[arg(long, value_name = "SECS:N=PRIORITY")]
    pub reprioritize: Vec<String>,
    /// Write a JSON line to FILE for each piece of a body received (`t`: seconds since
    /// the connection was up, `url`: position, `bytes`: received so far), each
    /// reprioritization (`event: "reprioritize"`) and its PING's answer (`event: "pong"`,
    /// `rtt_ms`).
    #[arg(long, value_name = "FILE")]
    pub progress: Option<PathBuf>,
    /// Extra request header `Name: value` (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub header: Vec<String>,
    /// Save bodies into this directory.
    #[arg(short = 'O', long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// On stderr, with seconds since start: connecting, TLS version, cipher and ALPN (*),
    /// every SPDY frame or HTTP/1.1 and h2 head sent (>) and received (<).
    #[arg(short, long)]
    pub verbose: bool,
    /// Accept any TLS certificate.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Trust the CA certificates in this PEM file.
    #[arg(long, alias = "ca", value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Header compression level 0-9 for requests.
    #[arg(long, default_value_t = 9, value_name = "0-9")]
    pub header_level: u32,
    /// Connect to IP (and PORT, default the URL's) for HOST instead of resolving it
    /// (repeatable), e.g. `--resolve www.a.example=127.0.0.1:8443`.
    #[arg(long, value_name = "HOST=IP[:PORT]")]
    pub resolve: Vec<String>,
    /// Turn off CRIME-safe header compression (cookies share the zlib context).
    #[arg(long = "no-crime-safe", action = clap::ArgAction::SetFalse)]
    pub crime_safe: bool,
    /// SPDY window overruns: lenient accepts them from a server that never sent a
    /// WINDOW_UPDATE (moby/spdystream) and stops waiting for its credit; strict resets
    /// the stream with FLOW_CONTROL_ERROR (docs/flow-control.md).
    #[arg(long, default_value = "lenient", value_name = "strict|lenient")]
    #[serde(with = "crate::text::by_name")]
    pub flow_control: spdy::session::FlowControl,
    /// Plain http:// only: reach SPDY/3.1 with an HTTP/1.1 `Upgrade: SPDY/3.1` request
    /// for the first URL of each origin (as Kubernetes does) instead of prior knowledge.
    #[arg(long)]
    pub upgrade: bool,
    /// With --upgrade: offer this sub-protocol in `X-Stream-Protocol-Version`
    /// (repeatable, most preferred first); the chosen one is printed on stderr.
    #[arg(long, value_name = "PROTOCOL", requires = "upgrade")]
    pub stream_protocol: Vec<String>,
    /// tcp, or sctp: SPDY over SCTP over UDP to the same port number, or to
    /// --sctp-port (plain http:// SPDY only; `speedy serve --sctp` answers;
    /// docs/sctp.md).
    #[arg(long, default_value = "tcp", value_name = "tcp|sctp")]
    #[serde(with = "crate::text::by_name")]
    pub transport: Carrier,
    /// With --transport sctp: send the first request after the COOKIE ACK, as Linux's
    /// SCTP does, instead of in the COOKIE ECHO's packet (one round trip later).
    #[arg(long = "no-cookie-bundling", action = clap::ArgAction::SetFalse)]
    pub cookie_bundling: bool,
    /// With --transport sctp: SCTP's RTO.Initial in ms, the timeout before the first
    /// round trip is measured (default 3000, as Linux; RFC 9260 says 1000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u32).range(1..=60_000))]
    pub sctp_rto_initial_ms: Option<u32>,
    /// With --transport sctp: the servers' SCTP port on UDP, when `speedy serve
    /// --sctp-port` put it apart from the TCP port (default: the URL's port).
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub sctp_port: Option<u16>,
    /// With --transport sctp: this end's SCTP stack, sctp-proto (the default) or usrsctp
    /// (libusrsctp, FreeBSD's SCTP); either talks to a server on either, e.g.
    /// `speedy fetch --transport sctp --sctp-stack usrsctp http://127.0.0.1:8080/`.
    #[arg(long, default_value = "sctp-proto", value_name = "sctp-proto|usrsctp")]
    #[serde(with = "crate::text::by_name")]
    pub sctp_stack: SctpStack,
}

impl Default for FetchSpec {
    /// The defaults of the flags' attributes: `speedy fetch URL` with no options (and no
    /// URL).
    fn default() -> FetchSpec {
        #[derive(clap::Parser)]
        struct Bare {
            #[command(flatten)]
            spec: FetchSpec,
        }
        <Bare as clap::Parser>::try_parse_from(["fetch"])
            .expect("every option of FetchSpec has a default")
            .spec
    }
}

impl FetchSpec {
    /// A spec fetching `urls`, everything else at its default.
    pub fn new(urls: &[&str]) -> FetchSpec {
        FetchSpec {
            urls: urls.iter().map(|u| u.to_string()).collect(),
            ..FetchSpec::default()
        }
    }

    /// Reads a spec file: JSON, or TOML when the name ends in `.toml`; `-` reads JSON
    /// from standard input. Unknown keys are errors naming the key.
    pub fn read(path: &Path) -> Result<FetchSpec, String> {
        let spec = crate::text::read_spec(path, FETCH_SPEC_VERSION, |s: &FetchSpec| s.version)?;
        if spec.urls.is_empty() {
            return Err(format!("--spec {}: no urls", path.display()));
        }
        Ok(spec)
    }

    /// Whether the JSON lines go to stderr: stdout carries content (`-o -` or -I).
    pub fn json_to_stderr(&self) -> bool {
        self.head || self.output.iter().any(|p| p.as_os_str() == "-")
    }

    /// Checks the spec and makes the engine's options of it, in the order the flags were
    /// always checked: it reads the --data file, creates the -O directory and the
    /// --progress file. The client's log (-v) is the caller's to set. Errors name the
    /// option at fault.
    pub fn options(&self) -> Result<FetchOptions, String> {
        self.check_alone()?;
        let mut opts = FetchOptions::default();
        let protocol;
        (protocol, opts.udp) = match &self.protocol {
            Some(p) => {
                super::protocol(p, &self.urls).map_err(|e| format!("--protocol {p}: {e}"))?
            }
            None => (None, false),
        };
        let (n, o) = (self.urls.len(), self.output.len());
        if o > n {
            return Err(format!(
                "{o} -o files for {n} URLs: give at most one -o per URL"
            ));
        }
        if self.output.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
            return Err("-o -: only one body can go to stdout".into());
        }
        let method = super::method(self.request.as_deref(), self.head, self.data.is_some());
        opts.method = method.map_err(|e| format!("-X {e}"))?;
        if let Some(c) = &self.cacert {
            crate::tls::ca_certs(c).map_err(|e| format!("--cacert: {e}"))?;
        }
        if self.priority > 7 {
            return Err(format!("--priority {}: must be 0 to 7", self.priority));
        }
        if self.header_level > 9 {
            return Err(format!(
                "--header-level {}: must be 0 to 9",
                self.header_level
            ));
        }
        if self.concurrency == 0 {
            return Err("--concurrency must be at least 1".into());
        }
        if let Some(p) = &self.data {
            let data = std::fs::read(p).map_err(|e| format!("--data {}: {e}", p.display()))?;
            opts.body = Bytes::from(data);
        }
        for h in &self.header {
            let header = super::parse_header(h).map_err(|e| format!("--header {h:?}: {e}"))?;
            opts.headers.push(header);
        }
        self.check_files()?;
        let resolve = self.resolve.iter().map(|r| crate::client::parse_resolve(r));
        opts.resolve = resolve.collect::<Result<_, _>>()?;
        let outs: Vec<Out> = self.output.iter().map(|o| Out::from_arg(o)).collect();
        opts.origins = super::origins(&self.urls, &outs).map_err(|e| e.to_string())?;
        let read_timeout = secs(self.read_timeout, "--read-timeout")?;
        opts.max_time = self.max_time.map(|t| secs(t, "--max-time")).transpose()?;
        opts.client = self.client(protocol, read_timeout)?;
        opts.schedule = self.schedule(opts.origins.len())?;
        if let Some(p) = &self.progress {
            let file =
                std::fs::File::create(p).map_err(|e| format!("--progress {}: {e}", p.display()))?;
            opts.progress = Some(file);
        }
        opts.upgrade = self.upgrade.then(|| self.stream_protocol.clone());
        (opts.concurrency, opts.after_first, opts.priority) =
            (self.concurrency, self.after_first, self.priority);
        opts.out_dir = self.output_dir.clone();
        Ok(opts)
    }

    /// What the command line's own rules (required, conflicting and ranged options)
    /// refuse before a spec gets here, checked again for a spec file.
    fn check_alone(&self) -> Result<(), String> {
        if self.urls.is_empty() {
            return Err("no URL to fetch".into());
        }
        if self.head && (self.request.is_some() || self.data.is_some()) {
            return Err("-I/--head: not with -X/--request or --data".into());
        }
        if self.pipeline && self.connection_per_request {
            return Err("--pipeline and --connection-per-request: one or the other".into());
        }
        if !self.upgrade && !self.stream_protocol.is_empty() {
            return Err("--stream-protocol: only with --upgrade".into());
        }
        match self.sctp_rto_initial_ms {
            Some(ms) if !(1..=60_000).contains(&ms) => {
                Err(format!("--sctp-rto-initial-ms {ms}: must be 1 to 60000"))
            }
            _ => Ok(()),
        }
    }

    /// Creates the -O directory and checks that each -o file's directory exists.
    fn check_files(&self) -> Result<(), String> {
        if let Some(d) = &self.output_dir {
            if d.exists() && !d.is_dir() {
                return Err(format!("-O {}: not a directory", d.display()));
            }
            std::fs::create_dir_all(d).map_err(|e| format!("-O {}: {e}", d.display()))?;
        }
        for o in self.output.iter().filter(|o| o.as_os_str() != "-") {
            let missing = |p: &&Path| !p.as_os_str().is_empty() && !p.is_dir();
            if let Some(p) = o.parent().filter(missing) {
                return Err(format!(
                    "-o {}: {} is not a directory",
                    o.display(),
                    p.display()
                ));
            }
        }
        Ok(())
    }

    /// The client's settings (without a log).
    fn client(&self, protocol: Option<Protocol>, read: Duration) -> Result<ClientConfig, String> {
        let mut cfg = ClientConfig::default();
        (cfg.protocol, cfg.read_timeout) = (protocol, Some(read));
        cfg.verify = match self.insecure {
            true => Verify::Insecure,
            false => self.cacert.clone().map_or(Verify::System, Verify::CaFile),
        };
        cfg.spdy.compression.level = self.header_level;
        cfg.spdy.compression.crime_safe = self.crime_safe;
        cfg.spdy.flow_control = self.flow_control;
        cfg.sctp = self.sctp_stack.client(crate::sctp::client_config(
            self.transport,
            self.cookie_bundling,
            self.sctp_rto_initial_ms,
            self.sctp_port,
        )?)?;
        if !self.cookie_bundling && self.sctp_stack == SctpStack::Usrsctp {
            return Err(
                "--no-cookie-bundling: sctp-proto only (usrsctp bundles as it will)".into(),
            );
        }
        let (flag, mode) = match (self.pipeline, self.connection_per_request) {
            (true, _) => ("--pipeline", Http1Mode::Pipelined),
            (false, true) => ("--connection-per-request", Http1Mode::ConnectionPerRequest),
            (false, false) => ("", cfg.http1_mode),
        };
        if !flag.is_empty() && protocol != Some(Protocol::Http1) {
            return Err(format!("{flag}: HTTP/1.1 only (add --protocol http1)"));
        }
        cfg.http1_mode = mode;
        Ok(cfg)
    }

    /// `--priority-of`, `--start` and `--reprioritize`, checked against the URLs and
    /// origins.
    fn schedule(&self, origins: usize) -> Result<Schedule, String> {
        type Add = fn(&mut Schedule, &str, usize) -> Result<(), String>;
        let lists: [(&str, &[String], Add); 3] = [
            ("--priority-of", &self.priority_of, Schedule::add_priority),
            ("--start", &self.start, Schedule::add_start),
            ("--reprioritize", &self.reprioritize, Schedule::add_change),
        ];
        let mut sch = Schedule::default();
        for (flag, values, add) in lists {
            for v in values {
                add(&mut sch, v, self.urls.len()).map_err(|e| format!("{flag} {v}: {e}"))?;
            }
        }
        if origins > 1 && sch.is_timed() {
            return Err(
                "--start and --reprioritize time requests on one connection: give URLs of one \
                 origin"
                    .into(),
            );
        }
        Ok(sch)
    }
}

/// A flag's seconds: above 0, at most a day.
fn secs(v: f64, flag: &str) -> Result<Duration, String> {
    match v.is_finite() && v > 0.0 && v <= 86_400.0 {
        true => Ok(Duration::from_secs_f64(v)),
        false => Err(format!("{flag} {v}: seconds, above 0 and at most 86400")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_flags_defaults_and_round_trip_through_json_and_toml() {
        let d = FetchSpec::default();
        assert_eq!(d.version, FETCH_SPEC_VERSION);
        assert!(d.urls.is_empty());
        assert_eq!(d.read_timeout, 30.0);
        assert_eq!((d.concurrency, d.priority, d.header_level), (100, 3, 9));
        assert!(d.crime_safe && d.cookie_bundling);
        assert_eq!(d.flow_control, spdy::session::FlowControl::Lenient);
        assert_eq!(d.transport, Carrier::Tcp);
        assert_eq!((d.protocol.as_deref(), d.max_time), (None, None));
        // The engine's own defaults agree with the flags'.
        let e = FetchOptions::default();
        assert_eq!((e.concurrency, e.priority), (d.concurrency, d.priority));
        let mut s = FetchSpec::new(&["http://a.example/1", "http://a.example/2"]);
        s.protocol = Some("h2".into());
        s.max_time = Some(2.5);
        s.header = vec!["X-A: b".into()];
        s.output = vec![PathBuf::from("-")];
        s.crime_safe = false;
        s.transport = Carrier::Sctp;
        s.sctp_rto_initial_ms = Some(1000);
        s.sctp_port = Some(9443);
        s.sctp_stack = SctpStack::Usrsctp;
        s.flow_control = spdy::session::FlowControl::Strict;
        s.reprioritize = vec!["1:2=0".into()];
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains(r#""transport":"sctp""#), "{json}");
        assert!(json.contains(r#""sctp_stack":"usrsctp""#), "{json}");
        assert_eq!(serde_json::from_str::<FetchSpec>(&json).unwrap(), s);
        let toml_text = toml::to_string(&s).unwrap();
        assert_eq!(toml::from_str::<FetchSpec>(&toml_text).unwrap(), s);
        // A file with only the URLs is the defaults.
        let min: FetchSpec = serde_json::from_str(r#"{"urls":["http://a.example/"]}"#).unwrap();
        assert_eq!(min, FetchSpec::new(&["http://a.example/"]));
    }

    #[test]
    fn refuses_unknown_keys_and_bad_values_by_name() {
        let e = serde_json::from_str::<FetchSpec>(r#"{"urls":["http://a/"],"concurency":3}"#)
            .unwrap_err();
        assert!(e.to_string().contains("concurency"), "{e}");
        let e =
            toml::from_str::<FetchSpec>("urls = [\"http://a/\"]\nprotcol = \"h2\"\n").unwrap_err();
        assert!(e.to_string().contains("protcol"), "{e}");
        let e = serde_json::from_str::<FetchSpec>(r#"{"urls":["http://a/"],"transport":"x"}"#)
            .unwrap_err();
        assert!(e.to_string().contains("\"x\""), "{e}");
        let err = |s: &FetchSpec| s.options().err().unwrap();
        let mut s = FetchSpec::new(&["http://a.example/"]);
        s.priority = 8;
        assert_eq!(err(&s), "--priority 8: must be 0 to 7");
        s.priority = 3;
        s.pipeline = true;
        assert_eq!(err(&s), "--pipeline: HTTP/1.1 only (add --protocol http1)");
        s.pipeline = false;
        s.cookie_bundling = false;
        assert!(err(&s).contains("--no-cookie-bundling"));
        s.cookie_bundling = true;
        s.read_timeout = 0.0;
        assert!(err(&s).starts_with("--read-timeout 0"));
        s.read_timeout = 30.0;
        s.stream_protocol = vec!["v4.channel.k8s.io".into()];
        assert!(err(&s).contains("--upgrade"));
        s.stream_protocol.clear();
        s.sctp_port = Some(9443);
        assert_eq!(err(&s), "--sctp-port: only with --transport sctp");
        s.transport = Carrier::Sctp;
        s.sctp_port = Some(0);
        assert!(err(&s).starts_with("--sctp-port 0"), "{}", err(&s));
        (s.transport, s.sctp_port) = (Carrier::Tcp, None);
        s.sctp_stack = SctpStack::Usrsctp;
        assert_eq!(err(&s), "--sctp-stack: only with --transport sctp");
        s.transport = Carrier::Sctp;
        s.cookie_bundling = false;
        assert!(err(&s).starts_with("--no-cookie-bundling: sctp-proto only"));
        (s.transport, s.cookie_bundling) = (Carrier::Tcp, true);
        s.sctp_stack = SctpStack::SctpProto;
        assert!(s.options().is_ok());
        let e = serde_json::from_str::<FetchSpec>(r#"{"urls":["http://a/"],"sctp_stack":"x"}"#)
            .unwrap_err();
        assert!(e.to_string().contains("sctp-proto or usrsctp"), "{e}");
        assert!(err(&FetchSpec::default()).contains("no URL"));
    }
}
