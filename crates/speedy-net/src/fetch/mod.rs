//! The fetch engine behind `speedy fetch` (as curl or spdycat): [`origins`] groups the
//! URLs by origin and [`fetch`] fetches them origin after origin, each over one
//! [`Client`](crate::Client) connection (or, for `udp`, one datagram each way per URL),
//! as its [`FetchOptions`] say: requests in flight at once and started in URL order,
//! HTTP/1.1 pipelining or a connection per request (the client config's mode), pushed
//! streams, a [`Schedule`] of priorities, delayed starts and reprioritizations, a progress
//! file of [`ProgressLine`]s, and bodies hashed (SHA-256) and saved as they arrive. What
//! happens goes to a [`Sink`] as [`Report`]s, among them one [`FetchLine`] per response
//! as it ends; printing them is the caller's business.
//!
//! `origin.rs` runs one connection's requests, `response.rs` reads one response to its
//! end, `schedule.rs` holds the [`Schedule`], `spec.rs` the command's [`FetchSpec`] that
//! makes the [`FetchOptions`].

mod origin;
mod response;
mod schedule;
mod spec;

pub use schedule::Schedule;
pub use spec::{FetchSpec, FETCH_SPEC_VERSION};

use crate::client::{ClientConfig, ClientError, Http1Mode, Protocol};
use crate::fetch_record::{FetchLine, ProgressLine};
use bytes::Bytes;
use spdy::url::{Url, UrlError};
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Where a response body goes besides its hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Out {
    /// Standard output.
    Stdout,
    /// This file, created anew.
    File(PathBuf),
}

impl Out {
    /// A command line's output file: `-` is standard output (as curl's).
    pub fn from_arg(p: &std::path::Path) -> Out {
        match p.as_os_str() == "-" {
            true => Out::Stdout,
            false => Out::File(p.to_path_buf()),
        }
    }
}

/// One URL to fetch.
#[derive(Debug)]
struct Target {
    url: String,
    /// Where its body goes, if not to the output directory or nowhere.
    out: Option<Out>,
    scheme: String,
    host: String,
    port: u16,
    path: String,
}

fn parse_url(u: &str) -> Result<Target, UrlError> {
    let url: Url = u.parse()?;
    Ok(Target {
        out: None,
        url: u.to_string(),
        host: url.host_bare().to_string(),
        port: url.port_or_default(),
        scheme: url.scheme,
        path: url.path,
    })
}

/// The URLs of one origin (scheme, host and port), in the order given; they share one
/// connection.
#[derive(Debug)]
pub struct Origin {
    scheme: String,
    host: String,
    port: u16,
    targets: Vec<Target>,
}

/// Parses `urls` and groups them by origin, in the order each origin first appears; the
/// body of the URL in position i goes to `outs[i]`, if there is one.
pub fn origins(urls: &[String], outs: &[Out]) -> Result<Vec<Origin>, UrlError> {
    let mut targets = urls
        .iter()
        .map(|u| parse_url(u))
        .collect::<Result<Vec<_>, _>>()?;
    for (t, o) in targets.iter_mut().zip(outs) {
        t.out = Some(o.clone());
    }
    let mut origins: Vec<Origin> = Vec::new();
    for t in targets {
        match origins
            .iter_mut()
            .find(|o| o.scheme == t.scheme && o.host == t.host && o.port == t.port)
        {
            Some(o) => o.targets.push(t),
            None => origins.push(Origin {
                scheme: t.scheme.clone(),
                host: t.host.clone(),
                port: t.port,
                targets: vec![t],
            }),
        }
    }
    Ok(origins)
}

/// Whether `s` is an HTTP token (RFC 9110 §5.6.2): a method or a header name.
pub fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The request method: `explicit` if given (not a token is an error), else HEAD when
/// only heads are wanted, POST when there is data to send, else GET.
pub fn method(explicit: Option<&str>, head: bool, post: bool) -> Result<String, String> {
    match explicit {
        Some(m) if !is_token(m) => Err(format!("{m:?}: not an HTTP method token")),
        Some(m) => Ok(m.to_string()),
        None if head => Ok("HEAD".into()),
        None if post => Ok("POST".into()),
        None => Ok("GET".into()),
    }
}

/// Parses a protocol name: a [`Protocol`] to connect with, or `udp` (`None`, and true),
/// one datagram each way per URL, which needs http:// URLs (they name host, port and
/// path).
pub fn protocol(name: &str, urls: &[String]) -> Result<(Option<Protocol>, bool), String> {
    if name == "udp" {
        return match urls.iter().find(|u| !u.starts_with("http://")) {
            Some(u) => Err(format!(
                "{u}: http:// URLs only (they name host, port and path)"
            )),
            None => Ok((None, true)),
        };
    }
    Protocol::parse(name)
        .map(|p| (Some(p), false))
        .map_err(|e| e.to_string())
}

/// Parses an extra request header `Name: value` into the lower-cased name and the trimmed
/// value, or says what is wrong with it.
pub fn parse_header(h: &str) -> Result<(String, String), String> {
    let (n, v) = h.split_once(':').ok_or("expected `Name: value`")?;
    let n = n.trim();
    if !is_token(n) {
        return Err(format!(
            "{n:?} is not a header name (letters, digits and -_!#$%&'*+.^`|~)"
        ));
    }
    Ok((n.to_ascii_lowercase(), v.trim().to_string()))
}

/// What to fetch and how.
pub struct FetchOptions {
    /// The URLs, by origin ([`origins`]); fetched one origin after the other.
    pub origins: Vec<Origin>,
    /// How to connect: protocol, TLS, timeouts, HTTP/1.1 mode, SCTP. Its HTTP/1.1
    /// connections per origin are set from `concurrency`: all of it with a connection
    /// per request, else at most 6 (as browsers).
    pub client: ClientConfig,
    /// Hosts (lower-case) to dial at this address, and port if given, instead of
    /// resolving them.
    pub resolve: HashMap<String, (IpAddr, Option<u16>)>,
    /// Reach SPDY/3.1 with an HTTP/1.1 Upgrade (plain http:// only) offering these
    /// stream protocols, most preferred first.
    pub upgrade: Option<Vec<String>>,
    /// One datagram each way per URL ([`crate::transport::udp_get`]) instead of a
    /// connection.
    pub udp: bool,
    /// Requests in flight at once on a connection.
    pub concurrency: usize,
    /// The other URLs of an origin are requested once the first one's response is whole.
    pub after_first: bool,
    /// The request method.
    pub method: String,
    /// Extra request headers (lower-case names).
    pub headers: Vec<(String, String)>,
    /// The request body sent with every request.
    pub body: Bytes,
    /// The requests' SPDY priority (0 highest), unless the schedule gives one.
    pub priority: u8,
    /// Per-URL priorities, start times and reprioritizations.
    pub schedule: Schedule,
    /// Where the [`ProgressLine`]s go, if anywhere.
    pub progress: Option<std::fs::File>,
    /// Save every body not sent elsewhere into this directory ([`Out`] for one URL).
    pub out_dir: Option<PathBuf>,
    /// How long the whole fetch may take.
    pub max_time: Option<Duration>,
}

impl Default for FetchOptions {
    /// Nothing to fetch yet; GET at priority 3, 100 requests in flight, the client's
    /// defaults.
    fn default() -> FetchOptions {
        FetchOptions {
            origins: Vec::new(),
            client: ClientConfig::default(),
            resolve: HashMap::new(),
            upgrade: None,
            udp: false,
            concurrency: 100,
            after_first: false,
            method: "GET".into(),
            headers: Vec::new(),
            body: Bytes::new(),
            priority: 3,
            schedule: Schedule::default(),
            progress: None,
            out_dir: None,
            max_time: None,
        }
    }
}

/// What a fetch tells its [`Sink`] as it goes.
pub enum Report<'a> {
    /// A response's head arrived (the protocol it came over, its status and headers);
    /// its body is read next.
    Head(&'static str, u16, &'a spdy::Headers),
    /// A response ended, or a request got none: its line.
    Line(FetchLine),
    /// An origin (`scheme://host:port`) reached through an HTTP/1.1 Upgrade runs this
    /// stream protocol (the server's choice of `X-Stream-Protocol-Version`).
    Upgraded(String, &'a str),
    /// A reprioritization of the schedule could not be sent.
    ReprioritizeFailed(ClientError),
}

/// Where a fetch's [`Report`]s go; called from its tasks as things happen.
pub type Sink = Arc<dyn Fn(Report<'_>) + Send + Sync>;

/// How a fetch ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every URL was tried.
    Done {
        /// Every request got a whole response (whatever its status).
        all_whole: bool,
        /// Some response's status was not 2xx.
        not_2xx: bool,
    },
    /// The options' `max_time` ran out first.
    TimedOut(Duration),
}

/// Why a fetch stopped short of its [`Outcome`].
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// An Upgrade was asked for on an origin that is not plain http.
    #[error("{0}:// URL; an Upgrade to SPDY/3.1 needs plain http://")]
    UpgradeNeedsHttp(String),
    /// The progress file could not be written.
    #[error("writing the progress file: {0}")]
    Progress(#[source] std::io::Error),
}

/// What the tasks of one fetch share.
struct Ctx {
    schedule: Schedule,
    progress: Option<Mutex<BufWriter<std::fs::File>>>,
    /// When the (one) connection was up: the zero of the schedule and the progress lines.
    up: OnceLock<Instant>,
    out_dir: Option<PathBuf>,
    body: Bytes,
    extra: Vec<(String, String)>,
    priority: u8,
    method: String,
    after_first: bool,
    /// Some response's status was not 2xx.
    not_2xx: AtomicBool,
    sink: Sink,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Ctx {
    /// Appends a progress line, with `t` set to now.
    fn progress(&self, mut line: ProgressLine) {
        let (Some(p), Some(up)) = (&self.progress, self.up.get()) else {
            return;
        };
        line.t = (up.elapsed().as_secs_f64() * 1e6).round() / 1e6;
        let text = serde_json::to_string(&line).expect("a progress line serializes");
        // A full disk shows when the file is flushed at the end.
        let _ = writeln!(lock(p), "{text}");
    }

    /// Reports a response's line.
    fn line(&self, line: FetchLine) {
        (self.sink)(Report::Line(line));
    }
}

/// Fetches every URL of `opts`, telling `sink` what happens; the progress file is
/// flushed at the end (not when `max_time` runs out).
pub async fn fetch(mut opts: FetchOptions, sink: Sink) -> Result<Outcome, FetchError> {
    opts.client.http1_connections = match opts.client.http1_mode {
        Http1Mode::ConnectionPerRequest => opts.concurrency,
        _ => opts.concurrency.min(6),
    };
    let ctx = Arc::new(Ctx {
        schedule: opts.schedule,
        progress: opts.progress.map(|f| Mutex::new(BufWriter::new(f))),
        up: OnceLock::new(),
        out_dir: opts.out_dir,
        body: opts.body,
        extra: opts.headers,
        priority: opts.priority,
        method: opts.method,
        after_first: opts.after_first,
        not_2xx: AtomicBool::new(false),
        sink,
    });
    let how = How {
        cfg: &opts.client,
        resolve: &opts.resolve,
        upgrade: opts.upgrade.as_deref(),
        udp: opts.udp,
        concurrency: opts.concurrency,
    };
    let all = fetch_all(opts.origins, how, &ctx);
    let ok = match opts.max_time {
        None => all.await?,
        Some(t) => match tokio::time::timeout(t, all).await {
            Ok(r) => r?,
            Err(_) => return Ok(Outcome::TimedOut(t)),
        },
    };
    if let Some(p) = &ctx.progress {
        lock(p).flush().map_err(FetchError::Progress)?;
    }
    Ok(Outcome::Done {
        all_whole: ok,
        not_2xx: ctx.not_2xx.load(Ordering::Relaxed),
    })
}

/// How every origin is reached.
#[derive(Clone, Copy)]
struct How<'a> {
    cfg: &'a ClientConfig,
    resolve: &'a HashMap<String, (IpAddr, Option<u16>)>,
    upgrade: Option<&'a [String]>,
    udp: bool,
    concurrency: usize,
}

/// Fetches every origin's URLs in turn; whether all got whole responses.
async fn fetch_all(origins: Vec<Origin>, how: How<'_>, ctx: &Arc<Ctx>) -> Result<bool, FetchError> {
    let mut ok = true;
    for o in origins {
        let mut cfg = how.cfg.clone();
        cfg.connect_to = how
            .resolve
            .get(&o.host.to_ascii_lowercase())
            .map(|&(ip, p)| SocketAddr::new(ip, p.unwrap_or(o.port)));
        if let Some(stream_protocols) = how.upgrade {
            if o.scheme != "http" {
                return Err(FetchError::UpgradeNeedsHttp(o.scheme));
            }
            cfg.upgrade = Some(crate::spdy::upgrade::UpgradeRequest {
                method: "GET".into(),
                path: o.targets[0].path.clone(),
                stream_protocols: stream_protocols.to_vec(),
            });
        }
        ok &= match how.udp {
            true => origin::fetch_udp(o, &cfg, ctx).await,
            false => origin::fetch_origin(o, &cfg, how.concurrency, ctx).await,
        };
    }
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let t = parse_url("https://localhost:8443/a/b?c").unwrap();
        assert_eq!(
            (t.scheme.as_str(), t.host.as_str(), t.port, t.path.as_str()),
            ("https", "localhost", 8443, "/a/b?c")
        );
        let t = parse_url("http://[::1]/").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 80));
        assert!(parse_url("ftp://x/").is_err());
        assert!(parse_url("http://x:99999/").is_err());
        assert!(parse_url("nope").is_err());
    }

    #[test]
    fn groups_urls_by_origin_in_order() {
        let urls = ["http://a/1", "http://b/1", "http://a:80/2", "https://a/3"].map(String::from);
        let o = origins(&urls, &[Out::Stdout]).unwrap();
        let paths: Vec<Vec<&str>> = o
            .iter()
            .map(|o| o.targets.iter().map(|t| t.path.as_str()).collect())
            .collect();
        assert_eq!(paths, [vec!["/1", "/2"], vec!["/1"], vec!["/3"]]);
        assert_eq!(o[0].targets[0].out, Some(Out::Stdout));
        assert_eq!(o[0].targets[1].out, None);
    }

    #[test]
    fn parses_headers() {
        assert_eq!(
            parse_header("X-A:  b c ").unwrap(),
            ("x-a".to_string(), "b c".to_string())
        );
        assert_eq!(parse_header("x").unwrap_err(), "expected `Name: value`");
        assert!(parse_header("a b: c")
            .unwrap_err()
            .contains("not a header name"));
        assert!(is_token("DELETE") && !is_token("GE T") && !is_token(""));
        assert_eq!(method(None, true, true).unwrap(), "HEAD");
        assert_eq!(method(None, false, true).unwrap(), "POST");
        assert_eq!(
            method(Some("GE T"), false, false).unwrap_err(),
            "\"GE T\": not an HTTP method token"
        );
        let urls = ["http://a/".to_string(), "https://b/".to_string()];
        assert_eq!(protocol("h2", &urls).unwrap(), (Some(Protocol::H2), false));
        assert_eq!(protocol("udp", &urls[..1]).unwrap(), (None, true));
        assert!(protocol("udp", &urls)
            .unwrap_err()
            .starts_with("https://b/: http:// URLs only"));
        assert!(protocol("gopher", &urls).is_err());
    }
}
