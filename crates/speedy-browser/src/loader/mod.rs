//! The page loader: discovers a page's subresources as Chromium would, queues them per
//! connection pool, and records every phase of every request.
//!
//! ```text
//!  Engine (engine.rs, sans IO)                         shell (load(), here)
//!  discover(url) ─► held ─► release(): Blink's tight mode, delayable limits (h1, h3)
//!      ▲              (chromium.rs)   ─► pool queue (priority, then discovery order)
//!      │                                 │ schedule(): HTTP/1.1 idle conn / new conn (≤ 6 per
//!      │                                 │ host, ≤ cap in all) / pipelining; SPDY, h2: at once
//!      │                                 ▼
//!      │                  Action::Dial / Send / Cancel / Close ─► connection tasks (drivers)
//!  parser, preload scanner,                                              │
//!  scripts run, milestones  ◄── handle_event(ConnEvent, now) ◄── Sent, Head, Data, End, …
//!  (engine/script.rs)       ◄── handle_timeout(now): script runs end, script children
//! ```
//!
//! Milestones are Chromium's: `onContentLoad` once the root's parser has passed the whole
//! document (every blocking script run) and its defer scripts have run; `onLoad` once no
//! script runs and nothing that delays the load event is outstanding (`fetch()` and
//! timers do not; the load still waits for them before it ends). See `docs/loader.md`.

use crate::config::{Domains, LoadConfig, Proto, Transport};
use crate::conn::{
    self, ConnCmd, ConnCounters, ConnCtx, ConnEvent, ConnId, Driver, ReqId, WireRequest,
};
use crate::discover::{scan_css, Blocking, HtmlRef, HtmlScanner};
use crate::net::{self, DialSpec, DialTimes, Resolver, TcpInfo};
use crate::url::Url;
use bytes::{Bytes, BytesMut};
use speedy_archive::{Archive, Discovery, ObjectType};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;

/// Who discovered a request.
#[derive(Clone, Debug, PartialEq)]
pub enum Initiator {
    /// The page itself.
    Root,
    /// The HTML parser of a document, at a byte offset.
    Parser {
        /// The document.
        parent: ReqId,
        /// Offset where the tag ends.
        offset: usize,
        /// The element.
        tag: &'static str,
    },
    /// A style sheet's `url()` / `@import`.
    Css {
        /// The style sheet.
        parent: ReqId,
        /// Offset of the reference's end.
        offset: usize,
    },
    /// A script or style sheet after it ran (the archive's graph).
    Script {
        /// The parent.
        parent: ReqId,
        /// Compute delay, ms.
        after_ms: u32,
    },
    /// The archive's graph at a byte offset of a body the loader does not parse.
    ArchiveOffset {
        /// The parent.
        parent: ReqId,
        /// Offset.
        offset: usize,
    },
    /// The archive's graph: a parsed child the parser did not find, at the parent's end.
    ArchiveFallback {
        /// The parent.
        parent: ReqId,
    },
    /// An `X-Subresources` hint.
    Hint {
        /// The document that carried it.
        parent: ReqId,
    },
    /// Client prefetch (learned from an earlier load).
    Prefetch,
    /// A redirect.
    Redirect {
        /// The redirecting response.
        parent: ReqId,
    },
    /// Pushed by the server.
    Push {
        /// The request it came with.
        parent: Option<ReqId>,
    },
}

impl Initiator {
    /// The parent request, if any.
    pub fn parent(&self) -> Option<ReqId> {
        match *self {
            Initiator::Parser { parent, .. }
            | Initiator::Css { parent, .. }
            | Initiator::Script { parent, .. }
            | Initiator::ArchiveOffset { parent, .. }
            | Initiator::ArchiveFallback { parent }
            | Initiator::Hint { parent }
            | Initiator::Redirect { parent } => Some(parent),
            Initiator::Push { parent } => parent,
            Initiator::Root | Initiator::Prefetch => None,
        }
    }
}

/// How a response body is examined for references.
enum Parse {
    None,
    Html(Box<HtmlScanner>, Option<Decoder>),
    Css(Vec<u8>, Option<Decoder>),
    /// Archive offsets over the raw body: (offset, archive id) sorted, next index.
    Offsets(Vec<(usize, usize)>, usize),
}

/// Content decoding of a streamed body.
enum Decoder {
    Gzip(flate2::write::GzDecoder<Vec<u8>>),
    Deflate(flate2::write::ZlibDecoder<Vec<u8>>),
}

impl Decoder {
    fn for_encoding(enc: &str) -> Option<Option<Decoder>> {
        match enc.trim().to_ascii_lowercase().as_str() {
            "" | "identity" | "none" => Some(None),
            "gzip" | "x-gzip" => Some(Some(Decoder::Gzip(flate2::write::GzDecoder::new(
                Vec::new(),
            )))),
            "deflate" => Some(Some(Decoder::Deflate(flate2::write::ZlibDecoder::new(
                Vec::new(),
            )))),
            _ => None,
        }
    }

    /// Decodes a piece; returns what came out (empty on a decoding error).
    fn push(&mut self, data: &[u8]) -> Vec<u8> {
        match self {
            Decoder::Gzip(d) => {
                let _ = d.write_all(data);
                std::mem::take(d.get_mut())
            }
            Decoder::Deflate(d) => {
                let _ = d.write_all(data);
                std::mem::take(d.get_mut())
            }
        }
    }
}

/// One request of the load, with everything the HAR needs.
pub struct Req {
    /// Id.
    pub id: ReqId,
    /// URL.
    pub url: Url,
    /// URL as text (the key).
    pub url_s: String,
    /// Type.
    pub kind: ObjectType,
    /// Priority sent.
    pub priority: u8,
    /// Who found it.
    pub initiator: Initiator,
    /// The archive object, if the archive has this URL.
    pub archive_id: Option<usize>,
    /// Request headers sent (as the protocol carried them, before pseudo-headers).
    pub req_headers: Vec<(String, String)>,
    /// Request header bytes (-1 unknown).
    pub req_header_bytes: i64,
    /// When it was discovered (queued).
    pub queued: Instant,
    /// When a connection took it.
    pub assigned: Option<Instant>,
    /// The connection.
    pub conn: Option<ConnId>,
    /// Whether it was the first request on a new connection (gets dns/connect/ssl).
    pub fresh: bool,
    /// Written.
    pub sent: Option<Instant>,
    /// First response byte.
    pub first_byte: Option<Instant>,
    /// Complete (or failed).
    pub end: Option<Instant>,
    /// Status (0 = none).
    pub status: u16,
    /// Response headers.
    pub resp_headers: Vec<(String, String)>,
    /// Response header bytes (-1 unknown).
    pub resp_header_bytes: i64,
    /// Body bytes as received (before content decoding).
    pub body_bytes: u64,
    /// Body bytes after content decoding (what parsers saw; = body_bytes if unencoded).
    pub decoded_bytes: u64,
    /// The body, when kept.
    pub body: Option<BytesMut>,
    /// Failure.
    pub error: Option<String>,
    /// Pushed by the server.
    pub pushed: bool,
    /// Attempts made.
    pub attempts: u32,
    /// Chromium's priority for it (the wire priority unless `--priorities` overrides).
    pub chromium_priority: chromium::Priority,
    /// When the browser's schedulers let it go to a connection pool.
    pub released: Option<Instant>,
    /// When it ran (scripts).
    pub executed: Option<Instant>,
    /// Whether it holds up `onLoad` (`fetch()`/XHR do not).
    pub delays_load: bool,
    /// Requested for the main frame (Blink's per-frame scheduler applies).
    main_frame: bool,
    /// Made by (or, for a frame's document, navigating) a frame whose site is not the
    /// page's: its connections are partitioned from the page's own.
    cross_site: bool,
    parse: Parse,
    pool: String,
}

impl Req {
    /// Finished (complete or failed).
    pub fn done(&self) -> bool {
        self.end.is_some()
    }

    /// Failed: an error, or an HTTP status ≥ 400.
    pub fn failed(&self) -> bool {
        self.error.is_some() || self.status >= 400 || self.status == 0
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.resp_headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The response content type.
    pub fn content_type(&self) -> Option<&str> {
        self.header("content-type")
    }
}

/// One connection of the load.
#[derive(Clone)]
pub struct ConnRecord {
    /// Id.
    pub id: ConnId,
    /// The pool (origin, or `*` in single-domain mode).
    pub pool: String,
    /// Host dialled.
    pub host: String,
    /// Set-up times, once ready.
    pub times: Option<DialTimes>,
    /// Peer.
    pub peer: Option<SocketAddr>,
    /// Dial error.
    pub error: Option<String>,
    /// Requests it carried.
    pub requests: u32,
    /// TCP_INFO at its end.
    pub tcp_info: Option<TcpInfo>,
    /// Counters at its end.
    pub counters: ConnCounters,
    /// Closed.
    pub closed: bool,
    /// When it was opened.
    pub opened: Instant,
    /// How far its dial has got (`None`: resolving), until it is ready.
    dialing: Option<net::DialPhase>,
    inflight: usize,
    used: bool,
    closing: bool,
}

impl ConnRecord {
    fn live(&self) -> bool {
        !self.closed && self.error.is_none() && !self.closing
    }
}

#[derive(Clone)]
struct Pool {
    host: String,
    port: Option<u16>,
    tls: bool,
    /// Through an HTTP proxy to an https origin: CONNECT to this `host:port` first, then
    /// TLS to it inside the tunnel.
    tunnel: Option<(String, u16)>,
    queue: Vec<ReqId>,
    conns: Vec<ConnId>,
    /// The last dial error (fails the queue when no connection is left).
    error: Option<String>,
}

/// Why a load could not start.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The URL is not an absolute http(s) URL.
    #[error("{0:?} is not an absolute http(s) URL")]
    BadUrl(String),
    /// TLS configuration.
    #[error("TLS: {0}")]
    Tls(String),
}

/// The outcome of a load.
pub struct LoadResult {
    /// The page URL.
    pub url: String,
    /// Protocol name (`HTTP/1.1`, `spdy/3.1`, `h2`).
    pub protocol: &'static str,
    /// Wall-clock start.
    pub started: SystemTime,
    /// Monotonic start.
    pub start: Instant,
    /// Requests, by id.
    pub reqs: Vec<Req>,
    /// Connections, by id.
    pub conns: Vec<ConnRecord>,
    /// DOMContentLoaded after the start.
    pub on_content_load: Option<Duration>,
    /// load after the start.
    pub on_load: Option<Duration>,
    /// The load ran out of time.
    pub timed_out: bool,
    /// Archive objects of the page that were not fetched (URLs).
    pub missing: Vec<String>,
    /// Fetched URLs the archive's page does not list.
    pub unexpected: Vec<String>,
    /// Objects fetched through the archive fallback (the parser missed them).
    pub missed_by_parser: Vec<String>,
    /// The DNS cost applied per new host.
    pub dns_cost: Duration,
    /// How late the loader's runtime woke a timer, at worst, during the load (see
    /// [`LagProbe`]): a loaded CPU shows here before it shows in the timings.
    pub event_loop_lag_max: Duration,
}

/// Measures the loader's event-loop lag: a task that sleeps [`LagProbe::TICK`] at a time
/// and records the largest overshoot of its wake-up. The timings of a load whose lag
/// reached tens of milliseconds say as much about the CPU as about the network.
pub struct LagProbe {
    max_us: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl LagProbe {
    /// The probe's sleep.
    pub const TICK: Duration = Duration::from_millis(5);

    /// Starts the probe on the current runtime.
    pub fn start() -> LagProbe {
        let max_us = Arc::new(AtomicU64::new(0));
        let m = max_us.clone();
        let task = tokio::spawn(async move {
            loop {
                let t = Instant::now();
                tokio::time::sleep(Self::TICK).await;
                let late = t.elapsed().saturating_sub(Self::TICK);
                m.fetch_max(
                    late.as_micros() as u64,
                    std::sync::atomic::Ordering::Relaxed,
                );
            }
        });
        LagProbe { max_us, task }
    }

    /// Stops the probe; the largest lag seen.
    pub fn stop(self) -> Duration {
        self.task.abort();
        Duration::from_micros(self.max_us.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// Loads a page. The archive (if any) supplies recorded request headers, resource types,
/// and what scripts and style sheets request after they run.
///
/// This is the IO shell around [`Engine`]: it dials what the engine asks for, runs one
/// task per connection, and feeds the engine their events and the clock.
pub async fn load(cfg: &LoadConfig, archive: Option<&Archive>) -> Result<LoadResult, LoadError> {
    let mut pages =
        load_session(cfg, archive, std::slice::from_ref(&cfg.url), Duration::ZERO).await?;
    Ok(pages.remove(0))
}

/// A browsing session: `urls` loaded one after the other, `think` apart (from one page's
/// end to the next page's start), with the connections kept and reused across pages as a
/// browser keeps its sockets (one SPDY session, or one to the proxy, for the whole
/// sequence). One result per page, each with its own milestones; connections are closed
/// at the end of the last page.
pub async fn load_session(
    cfg: &LoadConfig,
    archive: Option<&Archive>,
    urls: &[String],
    think: Duration,
) -> Result<Vec<LoadResult>, LoadError> {
    let first = urls
        .first()
        .ok_or_else(|| LoadError::BadUrl(String::new()))?;
    let root_url = Url::parse(first).ok_or_else(|| LoadError::BadUrl(first.clone()))?;
    for u in urls {
        Url::parse(u).ok_or_else(|| LoadError::BadUrl(u.clone()))?;
    }
    let driver = driver_for(cfg);
    let tls = tls_for(cfg, driver.as_ref())?;
    let dns_cost = dns_cost(cfg, &root_url).await;
    let resolver = Arc::new(Resolver::new(cfg.resolve.clone(), dns_cost));
    let (ev_tx, mut ev_rx) = mpsc::unbounded_channel();
    let ids = Arc::new(AtomicU64::new(1));
    let mut shell = Shell {
        driver: driver.clone(),
        tls,
        sctp: cfg.sctp,
        resolver,
        events: ev_tx,
        ids: ids.clone(),
        conns: HashMap::new(),
    };
    let mut results = Vec::new();
    let mut carry = None;
    for (k, url) in urls.iter().enumerate() {
        let mut page_cfg = cfg.clone();
        page_cfg.url = url.clone();
        let root = Url::parse(url).expect("checked");
        let started = SystemTime::now();
        let start = Instant::now();
        let deadline = start + cfg.timeout;
        let lag = LagProbe::start();
        let mut e = Engine::after(
            &page_cfg,
            archive,
            driver.clone(),
            ids.clone(),
            root,
            start,
            carry.take(),
        );
        let timed_out = run_page(&mut e, &mut shell, &mut ev_rx, deadline).await;
        let last = k + 1 == urls.len();
        if last {
            close_connections(&mut e, &mut shell, &mut ev_rx).await;
        } else {
            think_time(&mut e, &mut shell, &mut ev_rx, think, cfg.keepalive).await;
        }
        let (mut res, next) = e.finish_page(started, start, timed_out, dns_cost);
        res.event_loop_lag_max = lag.stop();
        results.push(res);
        carry = Some(next);
    }
    Ok(results)
}

/// The connection driver for the configured protocol (SPDY with the configured header
/// compression, HTTP/1.1 with its pipeline depth).
fn driver_for(cfg: &LoadConfig) -> Arc<dyn Driver> {
    match cfg.proto {
        Proto::Http1 => Arc::new(conn::http1::Http1 {
            pipeline: cfg.pipeline.max(1),
        }),
        Proto::Spdy => {
            let mut spdy = conn::spdy::Spdy::v31();
            cfg.header_compression.apply(&mut spdy.config.compression);
            Arc::new(spdy)
        }
        Proto::H2 => Arc::new(conn::h2::H2::default()),
        Proto::H3 => Arc::new(conn::h3::H3),
    }
}

/// The TLS client configuration (offering `driver`'s ALPN), or none when every
/// connection is plain: `--plain` is about the origins, so TLS to a proxy is still set up.
fn tls_for(
    cfg: &LoadConfig,
    driver: &dyn Driver,
) -> Result<Option<Arc<rustls::ClientConfig>>, LoadError> {
    Ok(match cfg.transport {
        Transport::Plain if !cfg.proxy.as_ref().is_some_and(|p| p.tls) => None,
        _ => Some(
            speedy_net::tls::client_config_with(&cfg.verify, &[driver.alpn()], cfg.tls_hello)
                .map_err(LoadError::Tls)?,
        ),
    })
}

/// Runs one page's load: carries out the engine's actions and feeds it connection events
/// and its timers until it settles or `deadline` passes (then every open request fails).
/// Returns whether the load timed out before `onLoad`.
async fn run_page(
    e: &mut Engine<'_>,
    shell: &mut Shell,
    ev_rx: &mut mpsc::UnboundedReceiver<ConnEvent>,
    deadline: Instant,
) -> bool {
    loop {
        while let Some(a) = e.poll_action() {
            shell.perform(a);
        }
        if e.settled() {
            return false;
        }
        let wake = e.poll_timeout().map_or(deadline, |t| t.min(deadline));
        tokio::select! {
            ev = ev_rx.recv() => {
                if let Some(ev) = ev {
                    e.handle_event(ev, Instant::now());
                    while let Ok(ev) = ev_rx.try_recv() {
                        e.handle_event(ev, Instant::now());
                    }
                }
            }
            _ = tokio::time::sleep_until(wake.into()) => {
                let now = Instant::now();
                if now >= deadline {
                    let timed_out = e.on_load().is_none();
                    e.fail_open(now, "timed out");
                    return timed_out;
                }
                e.handle_timeout(now);
            }
        }
    }
}

/// Think time between two pages (`think` long): the connections stay open and this
/// page's engine keeps taking what they report (a server closing an idle connection), so
/// the next page does not send on a connection that is gone; every `keepalive`, a PING
/// on each connection still open.
async fn think_time(
    e: &mut Engine<'_>,
    shell: &mut Shell,
    ev_rx: &mut mpsc::UnboundedReceiver<ConnEvent>,
    think: Duration,
    keepalive: Option<Duration>,
) {
    let think_end = Instant::now() + think;
    let mut next_ping = keepalive.map(|k| Instant::now() + k);
    loop {
        let wake = next_ping.map_or(think_end, |p| p.min(think_end));
        tokio::select! {
            ev = ev_rx.recv() => match ev {
                Some(ev) => e.handle_event(ev, Instant::now()),
                None => break,
            },
            _ = tokio::time::sleep_until(wake.into()) => {
                if Instant::now() >= think_end {
                    break;
                }
                // Keep-alive: a PING on every connection still open.
                for tx in shell.conns.values() {
                    let _ = tx.send(ConnCmd::Ping);
                }
                next_ping = keepalive.map(|k| Instant::now() + k);
            }
        }
    }
    while let Some(a) = e.poll_action() {
        shell.perform(a);
    }
}

/// The session's end: every connection is asked to close, and their `Closed` reports
/// (with TCP_INFO) are collected for up to three seconds.
async fn close_connections(
    e: &mut Engine<'_>,
    shell: &mut Shell,
    ev_rx: &mut mpsc::UnboundedReceiver<ConnEvent>,
) {
    e.close_all();
    while let Some(a) = e.poll_action() {
        shell.perform(a);
    }
    let close_deadline = Instant::now() + Duration::from_secs(3);
    while e.open_connections() > 0 {
        match tokio::time::timeout_at(close_deadline.into(), ev_rx.recv()).await {
            Ok(Some(ev)) => e.handle_event(ev, Instant::now()),
            _ => break,
        }
    }
}

/// The cost charged for each new host name: fixed, or in round trips of `--rtt-ms` or of
/// one TCP handshake to the page's address.
async fn dns_cost(cfg: &LoadConfig, root_url: &Url) -> Duration {
    let rtt = match (cfg.dns_cost, cfg.rtt) {
        (crate::config::DnsCost::Rtts(_), None) => {
            let r0 = Resolver::new(cfg.resolve.clone(), Duration::ZERO);
            let port_default = if root_url.scheme == "https" && cfg.transport != Transport::Plain {
                443
            } else {
                80
            };
            match r0.lookup(&root_url.host).await {
                Ok(t) => {
                    let addr =
                        SocketAddr::new(t.ip, t.port.or(root_url.port).unwrap_or(port_default));
                    net::probe_rtt(addr).await.unwrap_or(Duration::ZERO)
                }
                Err(_) => Duration::ZERO,
            }
        }
        (_, r) => r.unwrap_or(Duration::ZERO),
    };
    match cfg.dns_cost {
        crate::config::DnsCost::Ms(ms) => Duration::from_secs_f64(ms / 1000.0),
        crate::config::DnsCost::Rtts(n) => rtt.mul_f64(n),
    }
}

/// What the shell needs to carry out the engine's [`Action`]s.
struct Shell {
    driver: Arc<dyn Driver>,
    tls: Option<Arc<rustls::ClientConfig>>,
    /// SPDY over SCTP ([`LoadConfig::sctp`](crate::config::LoadConfig)).
    sctp: Option<speedy_net::sctp::SctpConfig>,
    resolver: Arc<Resolver>,
    events: mpsc::UnboundedSender<ConnEvent>,
    ids: Arc<AtomicU64>,
    /// Each connection task's command channel.
    conns: HashMap<ConnId, mpsc::UnboundedSender<ConnCmd>>,
}

impl Shell {
    fn perform(&mut self, a: Action) {
        let cmd = match a {
            Action::Dial {
                conn,
                host,
                port,
                tls,
                tunnel,
            } => {
                let (tx, rx) = mpsc::unbounded_channel();
                self.conns.insert(conn, tx);
                self.dial(conn, host, port, tls, tunnel, rx);
                return;
            }
            Action::Send { conn, req } => (conn, ConnCmd::Send(req)),
            Action::Cancel { conn, id } => (conn, ConnCmd::Cancel(id)),
            Action::Close { conn } => (conn, ConnCmd::Close),
        };
        if let Some(tx) = self.conns.get(&cmd.0) {
            // A task that is gone reports Closed; its requests are requeued then.
            let _ = tx.send(cmd.1);
        }
    }

    fn dial(
        &self,
        id: ConnId,
        host: String,
        port: Option<u16>,
        use_tls: bool,
        tunnel: Option<(String, u16)>,
        rx: mpsc::UnboundedReceiver<ConnCmd>,
    ) {
        let tls = if use_tls { self.tls.clone() } else { None };
        let sctp = self.sctp;
        let resolver = self.resolver.clone();
        let driver = self.driver.clone();
        let events = self.events.clone();
        let ids = self.ids.clone();
        tokio::spawn(async move {
            if use_tls && tls.is_none() {
                let _ = events.send(ConnEvent::DialFailed {
                    conn: id,
                    error: "TLS is not configured".into(),
                });
                return;
            }
            if driver.quic() {
                let dialed = match (&tls, &tunnel) {
                    (Some(tls), None) => net::dial_quic(&resolver, &host, port, tls).await,
                    (None, _) => Err(format!(
                        "{host}: HTTP/3 runs over QUIC, which is always encrypted (not --plain)"
                    )),
                    (Some(_), Some(_)) => {
                        Err(format!("{host}: HTTP/3 is not carried through a proxy"))
                    }
                };
                match dialed {
                    Ok((conn, times)) => {
                        let _ = events.send(ConnEvent::Ready {
                            conn: id,
                            times,
                            peer: conn.peer(),
                        });
                        let ctx = ConnCtx {
                            conn: id,
                            cmds: rx,
                            events,
                            ids,
                            fd: None,
                        };
                        driver.run_quic(conn, ctx).await;
                    }
                    Err(error) => {
                        let _ = events.send(ConnEvent::DialFailed { conn: id, error });
                    }
                }
                return;
            }
            let progress = |phase| {
                let _ = events.send(ConnEvent::Dialing { conn: id, phase });
            };
            let d = net::dial(
                &resolver,
                DialSpec {
                    host: &host,
                    url_port: port,
                    tls,
                    tunnel: tunnel.as_ref().map(|(h, p)| (h.as_str(), *p)),
                    sctp,
                    progress: &progress,
                },
            )
            .await;
            match d {
                Ok(d) => {
                    if use_tls {
                        let want = driver.alpn();
                        let ok = match d.alpn.as_deref() {
                            Some(a) => a == want,
                            None => want == "http/1.1",
                        };
                        if !ok {
                            let _ = events.send(ConnEvent::DialFailed {
                                conn: id,
                                error: format!(
                                    "{host}: server does not speak {want} (ALPN chose {:?})",
                                    d.alpn
                                ),
                            });
                            return;
                        }
                    }
                    let _ = events.send(ConnEvent::Ready {
                        conn: id,
                        times: d.times,
                        peer: d.peer,
                    });
                    let ctx = ConnCtx {
                        conn: id,
                        cmds: rx,
                        events,
                        ids,
                        fd: d.fd,
                    };
                    driver.run(d.io, ctx).await;
                }
                Err(error) => {
                    let _ = events.send(ConnEvent::DialFailed { conn: id, error });
                }
            }
        });
    }
}

mod chromium;
mod chromium_headers;
mod engine;
#[cfg(test)]
mod engine_tests;

pub use chromium::Priority as ChromiumPriority;
pub use engine::{Action, Carry, Engine};

/// Parses an `X-Subresources` value into (URL, content type if given). Accepts the
/// replay server's `TYPE; URL; TYPE; URL …` form and plain comma- or semicolon-separated
/// URL lists (each optionally in `<…>`): a token is a URL when it starts with
/// `http://`, `https://` or `/`; a token before a URL is its content type.
pub fn parse_hint(v: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut ty: Option<String> = None;
    for tok in v.split([';', ',']) {
        let t = tok
            .trim()
            .trim_start_matches('<')
            .trim_end_matches('>')
            .trim();
        if t.is_empty() {
            continue;
        }
        let lower = t.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") || t.starts_with('/') {
            out.push((t.to_string(), ty.take()));
        } else if t.contains('/') && !t.contains('=') {
            ty = Some(lower);
        } else {
            ty = None;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hints() {
        assert_eq!(
            parse_hint("text/css; https://a.example/x.css; image/gif; https://b.example/y.gif"),
            vec![
                (
                    "https://a.example/x.css".to_string(),
                    Some("text/css".to_string())
                ),
                (
                    "https://b.example/y.gif".to_string(),
                    Some("image/gif".to_string())
                ),
            ]
        );
        assert_eq!(
            parse_hint("</a.js>; rel=preload, /b.png"),
            vec![("/a.js".to_string(), None), ("/b.png".to_string(), None)]
        );
    }
}
