//! The page loader: one event loop that discovers subresources, queues them per
//! connection pool, and records every phase of every request.
//!
//! ```text
//!  discover(url) ─► Req (queued) ─► pool queue (priority, then discovery order)
//!      ▲                                 │ schedule(): HTTP/1.1 idle conn / new conn (≤ 6 per
//!      │                                 │ host, ≤ cap in all) / pipelining; SPDY, h2: at once
//!      │                                 ▼
//!  HtmlScanner ◄─ Data ◄─ connection task (driver) ─► Sent, Head, Data, End, Failed, Pushed
//!  scan_css at End; archive Computed children after their delay (timers)
//! ```
//!
//! Milestones: `onContentLoad` when the root document has arrived and every classic
//! (non-async) script it references, and every style sheet before its last such script,
//! has arrived; `onLoad` after that, once nothing discovered is outstanding and no
//! script/style compute delay is pending (each resource discovered before it is done).

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
    /// Effect on DOMContentLoaded (for references of the root document).
    pub blocking: Blocking,
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
    tx: mpsc::UnboundedSender<ConnCmd>,
    inflight: usize,
    used: bool,
    closing: bool,
}

impl ConnRecord {
    fn live(&self) -> bool {
        !self.closed && self.error.is_none() && !self.closing
    }
}

struct Pool {
    host: String,
    port: Option<u16>,
    tls: bool,
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
}

enum Timer {
    /// Discover an archive object (Computed child) of a parent.
    Computed {
        child: usize,
        parent: ReqId,
        after_ms: u32,
    },
}

struct Engine<'a> {
    cfg: &'a LoadConfig,
    archive: Option<&'a Archive>,
    /// Normalized URL → archive id (objects of the page).
    index: HashMap<String, usize>,
    /// Archive id → its children, by discovery.
    children: HashMap<usize, Vec<usize>>,
    page_objects: Vec<usize>,
    driver: Arc<dyn Driver>,
    tls: Option<Arc<rustls::ClientConfig>>,
    resolver: Arc<Resolver>,
    ids: Arc<AtomicU64>,
    ev_tx: mpsc::UnboundedSender<ConnEvent>,
    reqs: HashMap<ReqId, Req>,
    by_url: HashMap<String, ReqId>,
    conns: Vec<ConnRecord>,
    pools: HashMap<String, Pool>,
    pool_order: Vec<String>,
    timers: BinaryHeap<Reverse<(Instant, u64)>>,
    timer_actions: HashMap<u64, Timer>,
    timer_seq: u64,
    outstanding: usize,
    root: ReqId,
    root_sent: bool,
    dcl: Option<Instant>,
    onload: Option<Instant>,
    discovered_archive: HashSet<usize>,
    missed_by_parser: Vec<String>,
    /// `<base href>` of documents.
    bases: HashMap<ReqId, Url>,
    /// References of the root document (id, offset) for DOMContentLoaded.
    dcl_refs: Vec<(ReqId, usize)>,
}

/// Loads a page. The archive (if any) supplies recorded request headers, resource types,
/// and what scripts and style sheets request after they run.
pub async fn load(cfg: &LoadConfig, archive: Option<&Archive>) -> Result<LoadResult, LoadError> {
    let root_url = Url::parse(&cfg.url).ok_or_else(|| LoadError::BadUrl(cfg.url.clone()))?;
    let driver: Arc<dyn Driver> = match cfg.proto {
        Proto::Http1 => Arc::new(conn::http1::Http1 {
            pipeline: cfg.pipeline.max(1),
        }),
        Proto::Spdy => Arc::new(conn::spdy::Spdy::v31()),
        Proto::H2 => Arc::new(conn::h2::H2::default()),
    };
    let needs_tls = match cfg.transport {
        Transport::Tls => true,
        Transport::Plain => false,
        Transport::Auto => true, // built lazily below only if some origin is https
    };
    let tls = if needs_tls {
        Some(
            speedy_net::tls::client_config(&cfg.verify, &[driver.alpn()])
                .map_err(LoadError::Tls)?,
        )
    } else {
        None
    };
    // The DNS cost.
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
    let dns_cost = match cfg.dns_cost {
        crate::config::DnsCost::Ms(ms) => Duration::from_secs_f64(ms / 1000.0),
        crate::config::DnsCost::Rtts(n) => rtt.mul_f64(n),
    };
    let resolver = Arc::new(Resolver::new(cfg.resolve.clone(), dns_cost));
    let (ev_tx, mut ev_rx) = mpsc::unbounded_channel();
    let mut e = Engine {
        cfg,
        archive,
        index: HashMap::new(),
        children: HashMap::new(),
        page_objects: Vec::new(),
        driver,
        tls,
        resolver,
        ids: Arc::new(AtomicU64::new(1)),
        ev_tx,
        reqs: HashMap::new(),
        by_url: HashMap::new(),
        conns: Vec::new(),
        pools: HashMap::new(),
        pool_order: Vec::new(),
        timers: BinaryHeap::new(),
        timer_actions: HashMap::new(),
        timer_seq: 0,
        outstanding: 0,
        root: 0,
        root_sent: false,
        dcl: None,
        onload: None,
        discovered_archive: HashSet::new(),
        missed_by_parser: Vec::new(),
        bases: HashMap::new(),
        dcl_refs: Vec::new(),
    };
    e.index_archive(&root_url);
    let started = SystemTime::now();
    let start = Instant::now();
    let deadline = start + cfg.timeout;
    e.root = e
        .discover(
            root_url.clone(),
            ObjectType::Document,
            Initiator::Root,
            Blocking::None,
            start,
        )
        .expect("first request");
    let mut timed_out = false;
    loop {
        e.schedule();
        if e.onload.is_some() {
            break;
        }
        let next_timer = e.timers.peek().map(|Reverse((t, _))| *t);
        let wake = next_timer.map_or(deadline, |t| t.min(deadline));
        tokio::select! {
            ev = ev_rx.recv() => {
                if let Some(ev) = ev {
                    e.on_event(ev);
                    while let Ok(ev) = ev_rx.try_recv() {
                        e.on_event(ev);
                    }
                }
            }
            _ = tokio::time::sleep_until(wake.into()) => {
                if Instant::now() >= deadline {
                    timed_out = true;
                    break;
                }
                e.fire_timers();
            }
        }
        e.check_milestones();
    }
    if timed_out {
        let now = Instant::now();
        let open: Vec<ReqId> = e
            .reqs
            .values()
            .filter(|r| !r.done())
            .map(|r| r.id)
            .collect();
        for id in open {
            e.fail(id, now, "timed out".into());
        }
    }
    // Close every connection; collect TCP_INFO (bounded wait).
    for c in &mut e.conns {
        if !c.closed {
            let _ = c.tx.send(ConnCmd::Close);
        }
    }
    let close_deadline = Instant::now() + Duration::from_secs(3);
    while e
        .conns
        .iter()
        .any(|c| !c.closed && c.error.is_none() && c.times.is_some())
    {
        match tokio::time::timeout_at(close_deadline.into(), ev_rx.recv()).await {
            Ok(Some(ev)) => e.on_event(ev),
            _ => break,
        }
    }
    Ok(e.finish(started, start, timed_out, dns_cost))
}

fn normalize(url: &str) -> Option<String> {
    Url::parse(url).map(|u| u.to_string())
}

impl Engine<'_> {
    fn index_archive(&mut self, root: &Url) {
        let Some(a) = self.archive else { return };
        let key = root.to_string();
        let page = a.pages.iter().find(|p| {
            a.objects
                .get(p.root)
                .and_then(|o| normalize(&o.url))
                .as_deref()
                == Some(key.as_str())
        });
        let objects: Vec<usize> = match page {
            Some(p) => p.objects.clone(),
            None => (0..a.objects.len()).collect(),
        };
        for &id in &objects {
            let o = &a.objects[id];
            if let Some(k) = normalize(&o.url) {
                self.index.entry(k).or_insert(id);
            }
            if let Some(p) = o.discovery.parent() {
                self.children.entry(p).or_default().push(id);
            }
        }
        self.page_objects = if page.is_some() { objects } else { Vec::new() };
    }

    fn now_priority(&self, kind: ObjectType) -> u8 {
        self.cfg.priorities.of(kind)
    }

    fn pool_key(&self, u: &Url) -> String {
        match (self.cfg.proto, self.cfg.domains) {
            (Proto::Spdy | Proto::H2, Domains::Single) => "*".into(),
            _ => u.origin(),
        }
    }

    /// Queues a request for `url` unless one exists; returns its id if new.
    fn discover(
        &mut self,
        url: Url,
        kind: ObjectType,
        initiator: Initiator,
        blocking: Blocking,
        now: Instant,
    ) -> Option<ReqId> {
        let key = url.to_string();
        if self.by_url.contains_key(&key) {
            return None;
        }
        let archive_id = self.index.get(&key).copied();
        let kind = match (archive_id, self.archive) {
            (Some(a), Some(ar)) => ar.objects[a].kind,
            _ => kind,
        };
        if let Some(a) = archive_id {
            self.discovered_archive.insert(a);
        }
        let id = self.ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let referer = initiator
            .parent()
            .and_then(|p| self.reqs.get(&p))
            .map(|p| p.url_s.clone());
        let req_headers = self.request_headers(archive_id, kind, referer);
        let pool = self.pool_key(&url);
        if !self.pools.contains_key(&pool) {
            let (host, port, scheme) = if pool == "*" {
                let root = Url::parse(&self.cfg.url).expect("checked");
                (root.host.clone(), root.port, root.scheme.clone())
            } else {
                (url.host.clone(), url.port, url.scheme.clone())
            };
            // In single-domain mode the page's scheme decides TLS for the one connection.
            let tls = match self.cfg.transport {
                Transport::Tls => true,
                Transport::Plain => false,
                Transport::Auto => scheme == "https",
            };
            self.pools.insert(
                pool.clone(),
                Pool {
                    host,
                    port,
                    tls,
                    queue: Vec::new(),
                    conns: Vec::new(),
                    error: None,
                },
            );
            self.pool_order.push(pool.clone());
        }
        let priority = self.now_priority(kind);
        let req = Req {
            id,
            url_s: key.clone(),
            url,
            kind,
            priority,
            initiator,
            blocking,
            archive_id,
            req_headers,
            req_header_bytes: -1,
            queued: now,
            assigned: None,
            conn: None,
            fresh: false,
            sent: None,
            first_byte: None,
            end: None,
            status: 0,
            resp_headers: Vec::new(),
            resp_header_bytes: -1,
            body_bytes: 0,
            decoded_bytes: 0,
            body: None,
            error: None,
            pushed: false,
            attempts: 0,
            parse: Parse::None,
            pool: pool.clone(),
        };
        self.by_url.insert(key, id);
        self.reqs.insert(id, req);
        self.outstanding += 1;
        self.enqueue(id);
        Some(id)
    }

    fn enqueue(&mut self, id: ReqId) {
        let (pool, prio) = {
            let r = &self.reqs[&id];
            (r.pool.clone(), r.priority)
        };
        let reqs = &self.reqs;
        let p = self.pools.get_mut(&pool).expect("pool exists");
        // Highest priority first; discovery order within a priority.
        let at = p
            .queue
            .iter()
            .position(|q| {
                let o = &reqs[q];
                o.priority > prio || (o.priority == prio && o.id > id)
            })
            .unwrap_or(p.queue.len());
        p.queue.insert(at, id);
    }

    fn request_headers(
        &self,
        archive_id: Option<usize>,
        kind: ObjectType,
        referer: Option<String>,
    ) -> Vec<(String, String)> {
        if let (Some(a), Some(ar)) = (archive_id, self.archive) {
            let rec = &ar.objects[a].request_headers;
            if !rec.is_empty() {
                return rec
                    .iter()
                    .filter(|(n, _)| {
                        !n.starts_with(':')
                            && !matches!(
                                n.to_ascii_lowercase().as_str(),
                                "host"
                                    | "connection"
                                    | "keep-alive"
                                    | "content-length"
                                    | "transfer-encoding"
                                    | "proxy-connection"
                                    | "upgrade"
                            )
                    })
                    .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
                    .collect();
            }
        }
        let accept = match kind {
            ObjectType::Document => {
                "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
            }
            ObjectType::Stylesheet => "text/css,*/*;q=0.1",
            ObjectType::Image => "image/webp,image/*,*/*;q=0.8",
            _ => "*/*",
        };
        let mut h = vec![
            (
                "user-agent".to_string(),
                concat!(
                    "Mozilla/5.0 (X11; Linux x86_64) speedy-browser/",
                    env!("CARGO_PKG_VERSION")
                )
                .to_string(),
            ),
            ("accept".into(), accept.into()),
            ("accept-encoding".into(), "gzip, deflate".into()),
            ("accept-language".into(), "en-US,en;q=0.8".into()),
        ];
        if let Some(r) = referer {
            h.push(("referer".into(), r));
        }
        h
    }

    // ---- scheduling ---------------------------------------------------------------

    fn schedule(&mut self) {
        let keys: Vec<String> = self
            .pool_order
            .iter()
            .filter(|k| !self.pools[*k].queue.is_empty())
            .cloned()
            .collect();
        for key in keys {
            if self.driver.depth() == usize::MAX {
                self.schedule_multiplexed(&key);
            } else {
                self.schedule_http1(&key);
            }
        }
    }

    fn schedule_multiplexed(&mut self, key: &str) {
        let live = self.pools[key]
            .conns
            .iter()
            .copied()
            .find(|c| self.conns[*c as usize].live());
        match live {
            None => {
                self.open_conn(key);
            }
            Some(c) if self.conns[c as usize].times.is_some() => {
                let queue = std::mem::take(&mut self.pools.get_mut(key).expect("pool").queue);
                for id in queue {
                    self.assign(id, c);
                }
            }
            Some(_) => {} // connecting
        }
    }

    fn schedule_http1(&mut self, key: &str) {
        let depth = self.driver.depth();
        // 1. Idle ready connections.
        loop {
            let Some(&head) = self.pools[key].queue.first() else {
                return;
            };
            let idle = self.pools[key].conns.iter().copied().find(|c| {
                let c = &self.conns[*c as usize];
                c.live() && c.times.is_some() && c.inflight == 0
            });
            let Some(c) = idle else { break };
            self.pools.get_mut(key).expect("pool").queue.remove(0);
            self.assign(head, c);
        }
        // 2. New connections for what is left (connecting ones count).
        let connecting = self.pools[key]
            .conns
            .iter()
            .filter(|c| {
                let c = &self.conns[**c as usize];
                c.live() && c.times.is_none()
            })
            .count();
        let mut need = self.pools[key].queue.len().saturating_sub(connecting);
        while need > 0 {
            let here = self.pools[key]
                .conns
                .iter()
                .filter(|c| self.conns[**c as usize].live())
                .count();
            if here >= self.cfg.per_host.max(1) {
                break;
            }
            let total = self.conns.iter().filter(|c| c.live()).count();
            if total >= self.cfg.max_connections.max(1) && !self.close_an_idle_connection(key) {
                break;
            }
            self.open_conn(key);
            need -= 1;
        }
        // 3. Pipelining onto busy connections.
        if depth > 1 {
            loop {
                let Some(&head) = self.pools[key].queue.first() else {
                    return;
                };
                let c = self.pools[key]
                    .conns
                    .iter()
                    .copied()
                    .filter(|c| {
                        let c = &self.conns[*c as usize];
                        c.live() && c.times.is_some() && c.inflight < depth
                    })
                    .min_by_key(|c| self.conns[*c as usize].inflight);
                let Some(c) = c else { break };
                self.pools.get_mut(key).expect("pool").queue.remove(0);
                self.assign(head, c);
            }
        }
    }

    /// Frees a slot under the total cap by closing an idle connection of another pool.
    fn close_an_idle_connection(&mut self, except: &str) -> bool {
        let victim = self
            .conns
            .iter()
            .position(|c| c.live() && c.times.is_some() && c.inflight == 0 && c.pool != except);
        match victim {
            Some(i) => {
                let c = &mut self.conns[i];
                c.closing = true;
                let _ = c.tx.send(ConnCmd::Close);
                true
            }
            None => false,
        }
    }

    fn open_conn(&mut self, key: &str) -> ConnId {
        let id = self.conns.len() as ConnId;
        let (tx, rx) = mpsc::unbounded_channel();
        let p = self.pools.get_mut(key).expect("pool");
        p.conns.push(id);
        let host = p.host.clone();
        let port = p.port;
        let tls = if p.tls { self.tls.clone() } else { None };
        let use_tls = p.tls;
        self.conns.push(ConnRecord {
            id,
            pool: key.to_string(),
            host: host.clone(),
            times: None,
            peer: None,
            error: None,
            requests: 0,
            tcp_info: None,
            counters: ConnCounters::default(),
            closed: false,
            opened: Instant::now(),
            tx,
            inflight: 0,
            used: false,
            closing: false,
        });
        let resolver = self.resolver.clone();
        let driver = self.driver.clone();
        let events = self.ev_tx.clone();
        let ids = self.ids.clone();
        tokio::spawn(async move {
            if use_tls && tls.is_none() {
                let _ = events.send(ConnEvent::DialFailed {
                    conn: id,
                    error: "TLS is not configured".into(),
                });
                return;
            }
            let d = net::dial(
                &resolver,
                DialSpec {
                    host: &host,
                    url_port: port,
                    tls,
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
        id
    }

    fn assign(&mut self, id: ReqId, conn: ConnId) {
        let now = Instant::now();
        let c = &mut self.conns[conn as usize];
        let fresh = !c.used;
        c.used = true;
        c.inflight += 1;
        c.requests += 1;
        let r = self.reqs.get_mut(&id).expect("req");
        r.assigned = Some(now);
        r.conn = Some(conn);
        r.fresh = fresh;
        r.attempts += 1;
        let w = WireRequest {
            id,
            method: "GET".into(),
            scheme: r.url.scheme.clone(),
            authority: r.url.authority(),
            path: r.url.path.clone(),
            headers: r.req_headers.clone(),
            priority: r.priority,
        };
        if c.tx.send(ConnCmd::Send(w)).is_err() {
            // The task is gone; its Closed event will requeue the request.
        }
    }

    // ---- events -------------------------------------------------------------------

    fn on_event(&mut self, ev: ConnEvent) {
        match ev {
            ConnEvent::Ready { conn, times, peer } => {
                let c = &mut self.conns[conn as usize];
                c.times = Some(times);
                c.peer = Some(peer);
            }
            ConnEvent::DialFailed { conn, error } => {
                let c = &mut self.conns[conn as usize];
                c.error = Some(error.clone());
                c.closed = true;
                let key = c.pool.clone();
                let p = self.pools.get_mut(&key).expect("pool");
                p.error = Some(error.clone());
                let others = p.conns.iter().any(|o| self.conns[*o as usize].live());
                if !others {
                    let queue = std::mem::take(&mut self.pools.get_mut(&key).expect("pool").queue);
                    let now = Instant::now();
                    for id in queue {
                        self.fail(id, now, error.clone());
                    }
                }
            }
            ConnEvent::Sent {
                id,
                at,
                header_bytes,
            } => {
                let is_root = id == self.root;
                if let Some(r) = self.reqs.get_mut(&id) {
                    r.sent = Some(at);
                    r.req_header_bytes = header_bytes;
                }
                if is_root && !self.root_sent {
                    self.root_sent = true;
                    self.prefetch(at);
                }
            }
            ConnEvent::Head {
                id,
                first_byte,
                status,
                headers,
                header_bytes,
            } => self.on_head(id, first_byte, status, headers, header_bytes),
            ConnEvent::Data { id, at, data } => self.on_data(id, at, data),
            ConnEvent::End { id, at } => self.on_end(id, at),
            ConnEvent::Failed {
                id,
                at,
                error,
                retry,
            } => {
                let Some(r) = self.reqs.get_mut(&id) else {
                    return;
                };
                if r.done() {
                    return;
                }
                if let Some(c) = r.conn.take() {
                    let c = &mut self.conns[c as usize];
                    c.inflight = c.inflight.saturating_sub(1);
                }
                if retry && r.attempts < 3 && !r.pushed && r.first_byte.is_none() {
                    r.assigned = None;
                    r.sent = None;
                    r.fresh = false;
                    self.enqueue(id);
                } else {
                    self.fail(id, at, error);
                }
            }
            ConnEvent::Pushed {
                conn,
                id,
                assoc,
                url,
                at,
            } => self.on_push(conn, id, assoc, url, at),
            ConnEvent::Closed {
                conn,
                at,
                tcp_info,
                counters,
            } => {
                let c = &mut self.conns[conn as usize];
                c.closed = true;
                c.tcp_info = tcp_info;
                c.counters = counters;
                // Requests still on it go elsewhere (their Failed events came first).
                let stuck: Vec<ReqId> = self
                    .reqs
                    .values()
                    .filter(|r| r.conn == Some(conn) && !r.done())
                    .map(|r| r.id)
                    .collect();
                for id in stuck {
                    let r = self.reqs.get_mut(&id).expect("req");
                    r.conn = None;
                    if r.first_byte.is_none() && r.attempts < 3 && !r.pushed {
                        r.assigned = None;
                        r.sent = None;
                        self.enqueue(id);
                    } else {
                        self.fail(id, at, "connection closed".into());
                    }
                }
                self.conns[conn as usize].inflight = 0;
            }
        }
    }

    fn prefetch(&mut self, at: Instant) {
        let learned = self.cfg.prefetch.clone();
        for (u, kind) in learned {
            if let Some(url) = Url::parse(&u) {
                self.discover(url, kind, Initiator::Prefetch, Blocking::None, at);
            }
        }
    }

    fn on_push(&mut self, conn: ConnId, id: ReqId, assoc: Option<ReqId>, url: String, at: Instant) {
        let Some(mut u) = Url::parse(&url) else {
            let _ = self.conns[conn as usize].tx.send(ConnCmd::Cancel(id));
            return;
        };
        // A server on a forced transport (e.g. plain TCP for https origins) names pushes
        // with its own scheme: match them to the page's URLs.
        if self.cfg.transport != Transport::Auto {
            let known = |k: &str| self.by_url.contains_key(k) || self.index.contains_key(k);
            if !known(&u.to_string()) {
                let mut alt = u.clone();
                alt.scheme = if u.scheme == "http" { "https" } else { "http" }.into();
                if alt.port.is_none() || alt.port == Some(u.port_or_default()) {
                    alt.port = None;
                }
                if known(&alt.to_string()) {
                    u = alt;
                }
            }
        }
        let key = u.to_string();
        if self.by_url.contains_key(&key) {
            // Already requested: refuse the duplicate.
            let _ = self.conns[conn as usize].tx.send(ConnCmd::Cancel(id));
            return;
        }
        let archive_id = self.index.get(&key).copied();
        if let Some(a) = archive_id {
            self.discovered_archive.insert(a);
        }
        let kind = match (archive_id, self.archive) {
            (Some(a), Some(ar)) => ar.objects[a].kind,
            _ => ObjectType::guess("", &key),
        };
        let pool = self.pool_key(&u);
        self.by_url.insert(key.clone(), id);
        self.outstanding += 1;
        self.conns[conn as usize].requests += 1;
        self.reqs.insert(
            id,
            Req {
                id,
                url_s: key,
                url: u,
                kind,
                priority: self.cfg.priorities.of(kind),
                initiator: Initiator::Push { parent: assoc },
                blocking: Blocking::None,
                archive_id,
                req_headers: Vec::new(),
                req_header_bytes: -1,
                queued: at,
                assigned: Some(at),
                conn: Some(conn),
                fresh: false,
                sent: Some(at),
                first_byte: None,
                end: None,
                status: 0,
                resp_headers: Vec::new(),
                resp_header_bytes: -1,
                body_bytes: 0,
                decoded_bytes: 0,
                body: None,
                error: None,
                pushed: true,
                attempts: 1,
                parse: Parse::None,
                pool,
            },
        );
    }

    fn on_head(
        &mut self,
        id: ReqId,
        first_byte: Instant,
        status: u16,
        headers: Vec<(String, String)>,
        header_bytes: i64,
    ) {
        let keep = self.cfg.keep_bodies;
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        if r.done() {
            return;
        }
        r.first_byte = Some(first_byte);
        r.status = status;
        r.resp_headers = headers;
        r.resp_header_bytes = header_bytes;
        if keep {
            r.body = Some(BytesMut::new());
        }
        let ct = r.content_type().unwrap_or("").to_ascii_lowercase();
        let enc = r.header("content-encoding").unwrap_or("").to_string();
        let ok = (200..300).contains(&status);
        let html = ct.contains("html") || (ct.is_empty() && r.kind == ObjectType::Document);
        let css = ct.contains("css") || (ct.is_empty() && r.kind == ObjectType::Stylesheet);
        let decoder = Decoder::for_encoding(&enc);
        r.parse = match (ok, html, css, decoder) {
            (true, true, _, Some(d)) => Parse::Html(Box::new(HtmlScanner::new()), d),
            (true, false, true, Some(d)) => Parse::Css(Vec::new(), d),
            (true, _, _, _) => {
                // Not parseable here: the archive's offsets stand in for a parser.
                let mut offs: Vec<(usize, usize)> = Vec::new();
                if let (Some(a), Some(ar)) = (r.archive_id, self.archive) {
                    for &ch in self.children.get(&a).map(Vec::as_slice).unwrap_or(&[]) {
                        if let Discovery::Parsed { offset, .. } = ar.objects[ch].discovery {
                            offs.push((offset, ch));
                        }
                    }
                }
                offs.sort();
                if offs.is_empty() {
                    Parse::None
                } else {
                    Parse::Offsets(offs, 0)
                }
            }
            _ => Parse::None,
        };
        if self.cfg.hint && id == self.root {
            let hinted: Vec<(String, Option<String>)> = r
                .resp_headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("x-subresources"))
                .flat_map(|(_, v)| parse_hint(v))
                .collect();
            let base = r.url.clone();
            for (h, ty) in hinted {
                if let Some(u) = base.join(&h) {
                    let kind = ObjectType::guess(ty.as_deref().unwrap_or(""), &u.to_string());
                    self.discover(
                        u,
                        kind,
                        Initiator::Hint { parent: id },
                        Blocking::None,
                        first_byte,
                    );
                }
            }
        }
    }

    fn on_data(&mut self, id: ReqId, at: Instant, data: Bytes) {
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        if r.done() {
            return;
        }
        r.body_bytes += data.len() as u64;
        if let Some(b) = &mut r.body {
            b.extend_from_slice(&data);
        }
        let mut found: Vec<HtmlRef> = Vec::new();
        let mut offsets: Vec<(usize, usize)> = Vec::new();
        match &mut r.parse {
            Parse::None => r.decoded_bytes += data.len() as u64,
            Parse::Html(scanner, dec) => {
                let plain = match dec {
                    Some(d) => Bytes::from(d.push(&data)),
                    None => data,
                };
                r.decoded_bytes += plain.len() as u64;
                found = scanner.feed(&plain);
            }
            Parse::Css(buf, dec) => {
                match dec {
                    Some(d) => buf.extend_from_slice(&d.push(&data)),
                    None => buf.extend_from_slice(&data),
                }
                r.decoded_bytes = buf.len() as u64;
            }
            Parse::Offsets(list, next) => {
                r.decoded_bytes += data.len() as u64;
                while *next < list.len() && list[*next].0 <= r.body_bytes as usize {
                    offsets.push(list[*next]);
                    *next += 1;
                }
            }
        }
        if !found.is_empty() {
            self.on_html_refs(id, found, at);
        }
        for (offset, child) in offsets {
            self.discover_archive_child(child, Initiator::ArchiveOffset { parent: id, offset }, at);
        }
    }

    fn discover_archive_child(&mut self, child: usize, init: Initiator, at: Instant) {
        let Some(ar) = self.archive else { return };
        let o = &ar.objects[child];
        if let Some(u) = Url::parse(&o.url) {
            self.discover(u, o.kind, init, Blocking::None, at);
        }
    }

    /// Handles references found by a document's parser (`<base>` changes its base).
    fn on_html_refs(&mut self, parent: ReqId, refs: Vec<HtmlRef>, at: Instant) {
        let mut base = self.reqs[&parent].url.clone();
        if let Some(b) = self.base_of(parent) {
            base = b;
        }
        let is_root = parent == self.root;
        for r in refs {
            let Some(kind) = r.kind else {
                if let Some(b) = base.join(&r.url) {
                    base = b.clone();
                    self.bases.insert(parent, b);
                }
                continue;
            };
            let Some(u) = base.join(&r.url) else { continue };
            let blocking = if is_root { r.blocking } else { Blocking::None };
            let init = if r.tag == "style" {
                Initiator::Css {
                    parent,
                    offset: r.end,
                }
            } else {
                Initiator::Parser {
                    parent,
                    offset: r.end,
                    tag: r.tag,
                }
            };
            let key = u.to_string();
            if let Some(&existing) = self.by_url.get(&key) {
                // Found again (e.g. hinted or pushed first): it still holds up DCL.
                if is_root {
                    let e = self.reqs.get_mut(&existing).expect("req");
                    if e.blocking == Blocking::None {
                        e.blocking = blocking;
                        self.dcl_refs.push((existing, r.end));
                    }
                }
                continue;
            }
            if let Some(id) = self.discover(u, kind, init, blocking, at) {
                if is_root {
                    self.dcl_refs.push((id, r.end));
                }
            }
        }
    }

    fn on_end(&mut self, id: ReqId, at: Instant) {
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        if r.done() {
            return;
        }
        r.end = Some(at);
        self.outstanding -= 1;
        if let Some(c) = r.conn {
            let c = &mut self.conns[c as usize];
            c.inflight = c.inflight.saturating_sub(1);
        }
        let parse = std::mem::replace(&mut r.parse, Parse::None);
        let status = r.status;
        let base = r.url.clone();
        let archive_id = r.archive_id;
        let location = r.header("location").map(str::to_string);
        let kind = r.kind;
        match parse {
            Parse::Html(mut scanner, mut dec) => {
                let mut refs = Vec::new();
                if let Some(d) = &mut dec {
                    let rest = d.push(&[]);
                    refs.extend(scanner.feed(&rest));
                }
                refs.extend(scanner.finish());
                if !refs.is_empty() {
                    self.on_html_refs(id, refs, at);
                }
            }
            Parse::Css(buf, _) => {
                for c in scan_css(&buf) {
                    if let Some(u) = base.join(&c.url) {
                        self.discover(
                            u,
                            c.kind,
                            Initiator::Css {
                                parent: id,
                                offset: c.end,
                            },
                            Blocking::None,
                            at,
                        );
                    }
                }
            }
            Parse::Offsets(list, next) => {
                for &(offset, child) in &list[next..] {
                    self.discover_archive_child(
                        child,
                        Initiator::ArchiveOffset { parent: id, offset },
                        at,
                    );
                }
            }
            Parse::None => {}
        }
        if (200..300).contains(&status) {
            if let (Some(a), Some(ar)) = (archive_id, self.archive) {
                let kids = self.children.get(&a).cloned().unwrap_or_default();
                for ch in kids {
                    match ar.objects[ch].discovery {
                        Discovery::Computed { after_ms, .. } => {
                            self.timer_seq += 1;
                            let when = at + Duration::from_millis(after_ms as u64);
                            self.timers.push(Reverse((when, self.timer_seq)));
                            self.timer_actions.insert(
                                self.timer_seq,
                                Timer::Computed {
                                    child: ch,
                                    parent: id,
                                    after_ms,
                                },
                            );
                        }
                        Discovery::Parsed { .. } if self.cfg.archive_fallback => {
                            if !self.discovered_archive.contains(&ch) {
                                let url = ar.objects[ch].url.clone();
                                if let Some(k) = normalize(&url) {
                                    if !self.by_url.contains_key(&k) {
                                        self.missed_by_parser.push(k);
                                    }
                                }
                                self.discover_archive_child(
                                    ch,
                                    Initiator::ArchiveFallback { parent: id },
                                    at,
                                );
                            }
                        }
                        _ => {}
                    }
                }
            }
        } else if (300..400).contains(&status) {
            if let Some(u) = location.and_then(|l| base.join(&l)) {
                self.discover(
                    u,
                    kind,
                    Initiator::Redirect { parent: id },
                    Blocking::None,
                    at,
                );
            }
        }
    }

    fn fail(&mut self, id: ReqId, at: Instant, error: String) {
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        if r.done() {
            return;
        }
        r.error = Some(error);
        r.end = Some(at);
        r.parse = Parse::None;
        self.outstanding -= 1;
        if let Some(c) = r.conn {
            let c = &mut self.conns[c as usize];
            c.inflight = c.inflight.saturating_sub(1);
        }
        // Take it out of its queue, if it waits there.
        let pool = r.pool.clone();
        if let Some(p) = self.pools.get_mut(&pool) {
            p.queue.retain(|q| *q != id);
        }
    }

    fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some(Reverse((t, seq))) = self.timers.peek().copied() {
            if t > now {
                break;
            }
            self.timers.pop();
            if let Some(Timer::Computed {
                child,
                parent,
                after_ms,
            }) = self.timer_actions.remove(&seq)
            {
                self.discover_archive_child(child, Initiator::Script { parent, after_ms }, t);
            }
        }
    }

    fn check_milestones(&mut self) {
        let now = Instant::now();
        if self.dcl.is_none() {
            let root = &self.reqs[&self.root];
            if let Some(root_end) = root.end {
                // The last classic script's offset: style sheets before it block too.
                let last_script = self
                    .dcl_refs
                    .iter()
                    .filter(|(id, _)| {
                        matches!(
                            self.reqs[id].blocking,
                            Blocking::SyncScript | Blocking::DeferScript
                        )
                    })
                    .map(|(_, off)| *off)
                    .max();
                let mut t = root_end;
                let mut waiting = false;
                for (id, off) in &self.dcl_refs {
                    let r = &self.reqs[id];
                    let blocks = match r.blocking {
                        Blocking::SyncScript | Blocking::DeferScript => true,
                        Blocking::Stylesheet => last_script.is_some_and(|l| *off < l),
                        _ => false,
                    };
                    if blocks {
                        match r.end {
                            Some(e) => t = t.max(e),
                            None => waiting = true,
                        }
                    }
                }
                if !waiting {
                    self.dcl = Some(t);
                }
            }
        }
        if self.dcl.is_some()
            && self.onload.is_none()
            && self.outstanding == 0
            && self.timers.is_empty()
        {
            let last = self
                .reqs
                .values()
                .filter_map(|r| r.end)
                .max()
                .unwrap_or(now);
            self.onload = Some(last.max(self.dcl.expect("set")));
        }
    }

    fn base_of(&self, parent: ReqId) -> Option<Url> {
        self.bases.get(&parent).cloned()
    }

    fn finish(
        self,
        started: SystemTime,
        start: Instant,
        timed_out: bool,
        dns_cost: Duration,
    ) -> LoadResult {
        let mut reqs: Vec<Req> = self.reqs.into_values().collect();
        reqs.sort_by_key(|r| (r.queued, r.id));
        let fetched: HashSet<&str> = reqs.iter().map(|r| r.url_s.as_str()).collect();
        let mut missing = Vec::new();
        let mut expected = HashSet::new();
        if let Some(ar) = self.archive {
            for &id in &self.page_objects {
                if let Some(k) = normalize(&ar.objects[id].url) {
                    if !fetched.contains(k.as_str()) {
                        missing.push(k.clone());
                    }
                    expected.insert(k);
                }
            }
        }
        let unexpected = if self.page_objects.is_empty() {
            Vec::new()
        } else {
            reqs.iter()
                .filter(|r| !expected.contains(&r.url_s))
                .map(|r| r.url_s.clone())
                .collect()
        };
        LoadResult {
            url: self.cfg.url.clone(),
            protocol: self.driver.name(),
            started,
            start,
            reqs,
            conns: self.conns,
            on_content_load: self.dcl.map(|t| t.saturating_duration_since(start)),
            on_load: self.onload.map(|t| t.saturating_duration_since(start)),
            timed_out,
            missing,
            unexpected,
            missed_by_parser: self.missed_by_parser,
            dns_cost,
        }
    }
}

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
