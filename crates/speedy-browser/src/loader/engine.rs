//! The loader's engine, sans IO: it never reads a clock, opens a socket or spawns a task.
//! Inputs are connection events and timer expiries, each with `now`
//! ([`Engine::handle_event`], [`Engine::handle_timeout`]); outputs are [`Action`]s (dial,
//! send, cancel, close; [`Engine::poll_action`]) and the next timer
//! ([`Engine::poll_timeout`]). The async shell in `loader/mod.rs` only does the IO, and the
//! tests in `engine_tests.rs` drive the same engine over a fake network on a virtual clock.
//!
//! Concerns, in the order a request meets them:
//! - discovery: the HTML parser and preload scanner (the parser model is in
//!   [`super::chromium::DocParser`]; `advance_parser` here), style sheets, scripts when
//!   they run, the archive's graph, hints, pushes, redirects;
//! - the browser's schedulers (`release`, in `engine/pools.rs`): Blink's tight mode for
//!   the main frame and, over HTTP/1.1, the network service's delayable limits
//!   ([`super::chromium`]);
//! - connection pools (`schedule`, in `engine/pools.rs`): six connections per host and a
//!   total cap for HTTP/1.1, one session per origin (or one in all) for SPDY and HTTP/2;
//! - script execution (`run_script`, `on_timer`): a cost per script, children requested
//!   at run time plus their recorded delay;
//! - milestones (`check_milestones`): `DOMContentLoaded` and `load` as Chromium fires them.

use super::chromium::{self, BlinkGate, DocParser, NetGate, Origin, Step};
use super::*;
use std::collections::VecDeque;

mod pools;
mod script;

/// What the engine asks the shell to do.
#[derive(Debug)]
pub enum Action {
    /// Open connection `conn` to `host` (TLS or not) and report `Ready` or `DialFailed`.
    Dial {
        /// The new connection's id.
        conn: ConnId,
        /// Host name.
        host: String,
        /// Port from the URL, if any.
        port: Option<u16>,
        /// Over TLS.
        tls: bool,
        /// CONNECT to this `host:port` through the proxy first (TLS then goes to it).
        tunnel: Option<(String, u16)>,
    },
    /// Send a request on a connection.
    Send {
        /// Connection.
        conn: ConnId,
        /// The request.
        req: WireRequest,
    },
    /// Abandon a request or refuse a push.
    Cancel {
        /// Connection.
        conn: ConnId,
        /// Request or pushed stream.
        id: ReqId,
    },
    /// Close a connection (it reports `Closed` with its TCP_INFO).
    Close {
        /// Connection.
        conn: ConnId,
    },
}

enum Timer {
    /// Discover an archive object (Computed child) of a parent.
    Computed {
        child: usize,
        parent: ReqId,
        after_ms: u32,
    },
    /// A script finished running.
    Ran { script: ReqId },
}

/// A reference the parser will request when it gets there (the preload scanner does not
/// fetch it: iframes).
struct PendingRef {
    url: Url,
    kind: ObjectType,
    tag: &'static str,
    end: usize,
}

/// A style sheet's `url()` that waits for `<body>` (style recalc needs the elements).
struct StyleRef {
    url: Url,
    kind: ObjectType,
    parent: ReqId,
    offset: usize,
}

/// The loader's state for one page load.
pub struct Engine<'a> {
    cfg: &'a LoadConfig,
    archive: Option<&'a Archive>,
    /// Normalized URL → archive id (objects of the page).
    index: HashMap<String, usize>,
    /// Archive id → its children, by discovery.
    children: HashMap<usize, Vec<usize>>,
    page_objects: Vec<usize>,
    driver: Arc<dyn Driver>,
    ids: Arc<AtomicU64>,
    /// The time of the input being handled.
    now: Instant,
    actions: VecDeque<Action>,
    reqs: HashMap<ReqId, Req>,
    by_url: HashMap<String, ReqId>,
    /// Requests each request initiated (for style sheets' imports).
    kids: HashMap<ReqId, Vec<ReqId>>,
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
    /// Whether Chromium's model applies (off: every request goes out when found).
    chromium: bool,
    /// Requests the browser's schedulers hold, in discovery order.
    held: Vec<ReqId>,
    blink: BlinkGate,
    net: NetGate,
    /// The parser of each HTML document.
    parsers: HashMap<ReqId, DocParser>,
    pending_refs: Vec<Option<PendingRef>>,
    style_refs: Vec<StyleRef>,
    /// Images each document's parser has met (Blink's image boost, late-body scripts).
    doc_images: HashMap<ReqId, usize>,
    /// Scripts running or queued to run.
    running: HashSet<ReqId>,
}

fn normalize(url: &str) -> Option<String> {
    Url::parse(url).map(|u| u.to_string())
}

/// A style sheet is parsed for its references only up to this size (decoded): a server
/// sending an endless one cannot make the loader hold it.
const MAX_CSS_BYTES: usize = 16 << 20;

/// The connections a browsing session carries from one page to the next: they stay open
/// during the think time and the next page's requests use them (one SPDY session for a
/// whole visit sequence, as a browser keeps its sockets).
pub struct Carry {
    conns: Vec<ConnRecord>,
    pools: HashMap<String, Pool>,
    pool_order: Vec<String>,
}

impl<'a> Engine<'a> {
    /// A new load of `root_url` at `now`: the root document is requested at once.
    pub fn new(
        cfg: &'a LoadConfig,
        archive: Option<&'a Archive>,
        driver: Arc<dyn Driver>,
        ids: Arc<AtomicU64>,
        root_url: Url,
        now: Instant,
    ) -> Engine<'a> {
        Engine::after(cfg, archive, driver, ids, root_url, now, None)
    }

    /// Like [`Engine::new`], for the next page of a browsing session: the previous
    /// page's connections (`carry`, from [`Engine::finish_page`]) are reused.
    pub fn after(
        cfg: &'a LoadConfig,
        archive: Option<&'a Archive>,
        driver: Arc<dyn Driver>,
        ids: Arc<AtomicU64>,
        root_url: Url,
        now: Instant,
        carry: Option<Carry>,
    ) -> Engine<'a> {
        let mut e = Engine {
            cfg,
            archive,
            index: HashMap::new(),
            children: HashMap::new(),
            page_objects: Vec::new(),
            driver,
            ids,
            now,
            actions: VecDeque::new(),
            reqs: HashMap::new(),
            by_url: HashMap::new(),
            kids: HashMap::new(),
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
            chromium: cfg.browser_model,
            held: Vec::new(),
            blink: BlinkGate::default(),
            net: NetGate::default(),
            parsers: HashMap::new(),
            pending_refs: Vec::new(),
            style_refs: Vec::new(),
            doc_images: HashMap::new(),
            running: HashSet::new(),
        };
        if let Some(c) = carry {
            e.conns = c.conns;
            e.pools = c.pools;
            e.pool_order = c.pool_order;
        }
        e.index_archive(&root_url);
        e.root = e
            .discover(
                root_url,
                ObjectType::Document,
                Initiator::Root,
                Blocking::None,
                now,
            )
            .expect("first request");
        e.schedule();
        e
    }

    /// A connection event, at `now`.
    pub fn handle_event(&mut self, ev: ConnEvent, now: Instant) {
        self.now = now;
        self.on_event(ev);
        self.after_input();
    }

    /// Timers due at `now` fire.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.now = now;
        while let Some(Reverse((t, seq))) = self.timers.peek().copied() {
            if t > now {
                break;
            }
            self.timers.pop();
            if let Some(timer) = self.timer_actions.remove(&seq) {
                self.now = t;
                self.on_timer(timer, t);
            }
        }
        self.now = now;
        self.after_input();
    }

    /// The next thing for the shell to do.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When [`Engine::handle_timeout`] should be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.peek().map(|Reverse((t, _))| *t)
    }

    /// `onLoad`, once it has fired.
    pub fn on_load(&self) -> Option<Instant> {
        self.onload
    }

    /// `DOMContentLoaded`, once it has fired.
    pub fn on_content_load(&self) -> Option<Instant> {
        self.dcl
    }

    /// The load is over: `onLoad` fired and nothing is outstanding or pending (requests
    /// that do not delay `onLoad`, such as `fetch()`, are still waited for so that the
    /// page's whole URL set is fetched).
    pub fn settled(&self) -> bool {
        self.onload.is_some() && self.outstanding == 0 && self.timers.is_empty()
    }

    /// A request by id.
    pub fn request(&self, id: ReqId) -> Option<&Req> {
        self.reqs.get(&id)
    }

    /// The id of the request for `url`, if made.
    pub fn request_for(&self, url: &str) -> Option<ReqId> {
        normalize(url).and_then(|k| self.by_url.get(&k).copied())
    }

    /// Fails every request not yet done (the load ran out of time).
    pub fn fail_open(&mut self, now: Instant, why: &str) {
        self.now = now;
        let open: Vec<ReqId> = self
            .reqs
            .values()
            .filter(|r| !r.done())
            .map(|r| r.id)
            .collect();
        for id in open {
            self.fail(id, now, why.into());
        }
    }

    /// Asks every open connection to close.
    pub fn close_all(&mut self) {
        for c in &mut self.conns {
            if !c.closed && c.error.is_none() {
                self.actions.push_back(Action::Close { conn: c.id });
            }
        }
    }

    /// Connections still open (dialled, not yet reported closed).
    pub fn open_connections(&self) -> usize {
        self.conns
            .iter()
            .filter(|c| !c.closed && c.error.is_none() && c.times.is_some())
            .count()
    }

    fn after_input(&mut self) {
        self.advance_parsers();
        self.release();
        self.schedule();
        self.check_milestones();
    }

    fn push_timer(&mut self, when: Instant, t: Timer) {
        self.timer_seq += 1;
        self.timers.push(Reverse((when, self.timer_seq)));
        self.timer_actions.insert(self.timer_seq, t);
    }

    fn pool_key(&self, u: &Url, cross_site: bool) -> String {
        let single = self.cfg.domains == Domains::Single || self.cfg.proxy.is_some();
        match self.cfg.proto {
            Proto::Spdy | Proto::H2 | Proto::H3 if single => "*".into(),
            _ if cross_site && self.cfg.partition_frames => {
                format!("{} (cross-site frame)", u.origin())
            }
            _ => u.origin(),
        }
    }

    /// Whether a request for `url` of `kind` with this `parent` is made in (or, for a
    /// frame's document, navigates) a frame of another site than the page's.
    fn cross_site(&self, url: &Url, kind: ObjectType, parent: Option<ReqId>) -> bool {
        let Some(p) = parent.and_then(|p| self.reqs.get(&p)) else {
            return false;
        };
        if kind == ObjectType::Document {
            let root = self.reqs.get(&self.root).map(|r| &r.url);
            return root.is_some_and(|r| chromium::site(&r.host) != chromium::site(&url.host));
        }
        p.cross_site
    }

    /// The priority a request goes out with, and Chromium's for it.
    fn priorities_for(
        &self,
        kind: ObjectType,
        initiator: &Initiator,
        blocking: Blocking,
    ) -> (u8, chromium::Priority) {
        let doc_images = initiator
            .parent()
            .and_then(|p| self.doc_images.get(&p).copied())
            .unwrap_or(0);
        let origin = match initiator {
            Initiator::Parser { .. }
            | Initiator::ArchiveOffset { .. }
            | Initiator::ArchiveFallback { .. } => Origin::Parser {
                async_or_defer: matches!(blocking, Blocking::AsyncScript | Blocking::DeferScript),
                after_first_image: doc_images > 0,
            },
            Initiator::Css { .. } => Origin::Css,
            Initiator::Script { .. } => Origin::Script,
            _ => Origin::Other,
        };
        let cp = chromium::priority(kind, origin, doc_images);
        let wire = match &self.cfg.priorities {
            Some(table) => table.of(kind),
            None if self.chromium => cp.spdy(),
            None => crate::config::Priorities::default().of(kind),
        };
        (wire, cp)
    }

    /// Queues a request for `url` unless one exists; returns its id if new.
    pub(super) fn discover(
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
        let parent = initiator.parent();
        let referer = parent
            .and_then(|p| self.reqs.get(&p))
            .map(|p| p.url_s.clone());
        let req_headers = self.request_headers(archive_id, kind, referer);
        let cross_site = self.cross_site(&url, kind, parent);
        let pool = self.pool_key(&url, cross_site);
        self.ensure_pool(&pool, &url);
        let (mut priority, mut chromium_priority) = self.priorities_for(kind, &initiator, blocking);
        // A priority Chrome recorded for this object (HAR `_priority`) stands for the model's.
        let recorded = archive_id
            .zip(self.archive)
            .and_then(|(a, ar)| ar.objects[a].priority.as_deref())
            .and_then(chromium::Priority::from_name);
        if let Some(p) = recorded.filter(|_| self.chromium) {
            chromium_priority = p;
            if self.cfg.priorities.is_none() {
                priority = p.spdy();
            }
        }
        // The main frame: the root, and what the root's subresources (not its frames) ask for.
        let main_frame = match parent.and_then(|p| self.reqs.get(&p)) {
            None => true,
            Some(p) => p.main_frame && !(p.kind == ObjectType::Document && p.id != self.root),
        };
        let delays_load = !(kind == ObjectType::Xhr
            || (kind == ObjectType::Other && matches!(initiator, Initiator::Script { .. })));
        if let Some(p) = parent {
            self.kids.entry(p).or_default().push(id);
        }
        let req = Req {
            id,
            url_s: key.clone(),
            url,
            kind,
            priority,
            initiator,
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
            chromium_priority,
            released: None,
            executed: None,
            delays_load,
            main_frame,
            cross_site,
            parse: Parse::None,
            pool,
        };
        self.by_url.insert(key, id);
        self.reqs.insert(id, req);
        self.outstanding += 1;
        self.held.push(id);
        self.release();
        Some(id)
    }

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

    // ---- events -------------------------------------------------------------------

    fn on_event(&mut self, ev: ConnEvent) {
        match ev {
            ConnEvent::Ready { conn, times, peer } => {
                let c = &mut self.conns[conn as usize];
                c.times = Some(times);
                c.peer = Some(peer);
                self.close_if_surplus(conn);
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
                    for id in queue {
                        self.fail(id, self.now, error.clone());
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
            self.actions.push_back(Action::Cancel { conn, id });
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
            self.actions.push_back(Action::Cancel { conn, id });
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
        let cross_site = assoc
            .and_then(|a| self.reqs.get(&a))
            .is_some_and(|a| a.cross_site);
        let pool = self.pool_key(&u, cross_site);
        self.by_url.insert(key.clone(), id);
        self.outstanding += 1;
        self.conns[conn as usize].requests += 1;
        let init = Initiator::Push { parent: assoc };
        let (priority, chromium_priority) = self.priorities_for(kind, &init, Blocking::None);
        self.reqs.insert(
            id,
            Req {
                id,
                url_s: key,
                url: u,
                kind,
                priority,
                initiator: init,
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
                chromium_priority,
                released: Some(at),
                executed: None,
                delays_load: true,
                main_frame: true,
                cross_site,
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
        let is_html = ok && html && decoder.is_some();
        r.parse = match (ok, html, css, decoder) {
            (true, true, _, Some(d)) => Parse::Html(Box::default(), d),
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
        if is_html {
            self.parsers.entry(id).or_default();
        }
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
        let mut html = false;
        match &mut r.parse {
            Parse::None => r.decoded_bytes += data.len() as u64,
            Parse::Html(scanner, dec) => {
                let plain = match dec {
                    Some(d) => Bytes::from(d.push(&data)),
                    None => data,
                };
                r.decoded_bytes += plain.len() as u64;
                found = scanner.feed(&plain);
                html = true;
            }
            Parse::Css(buf, dec) => {
                match dec {
                    Some(d) => buf.extend_from_slice(&d.push(&data)),
                    None => buf.extend_from_slice(&data),
                }
                r.decoded_bytes = buf.len() as u64;
                if buf.len() > MAX_CSS_BYTES {
                    // Past any real style sheet: stop holding it (its references are
                    // not looked for), keep counting it.
                    r.parse = Parse::None;
                }
            }
            Parse::Offsets(list, next) => {
                r.decoded_bytes += data.len() as u64;
                while *next < list.len() && list[*next].0 <= r.body_bytes as usize {
                    offsets.push(list[*next]);
                    *next += 1;
                }
            }
        }
        let decoded = r.decoded_bytes as usize;
        if !found.is_empty() {
            self.on_html_refs(id, found, at);
        }
        if html {
            self.parsers.entry(id).or_default().arrived = decoded;
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
        self.blink.finish(id);
        self.net.finish(id);
        let r = self.reqs.get_mut(&id).expect("req");
        let parse = std::mem::replace(&mut r.parse, Parse::None);
        let (status, base, archive_id, kind) = (r.status, r.url.clone(), r.archive_id, r.kind);
        let decoded = r.decoded_bytes as usize;
        let location = r.header("location").map(str::to_string);
        let main_frame = r.main_frame;
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
                let p = self.parsers.entry(id).or_default();
                p.arrived = decoded.max(p.arrived);
                p.complete = true;
            }
            Parse::Css(buf, _) => {
                for c in scan_css(&buf) {
                    let Some(u) = base.join(&c.url) else { continue };
                    let wait = self.chromium
                        && main_frame
                        && !self.blink.loosened // `<body>` not yet reached
                        && c.kind != ObjectType::Stylesheet;
                    if wait {
                        self.style_refs.push(StyleRef {
                            url: u,
                            kind: c.kind,
                            parent: id,
                            offset: c.end,
                        });
                        continue;
                    }
                    let init = Initiator::Css {
                        parent: id,
                        offset: c.end,
                    };
                    self.discover(u, c.kind, init, Blocking::None, at);
                }
            }
            Parse::Offsets(list, next) => {
                for &(offset, child) in &list[next..] {
                    let init = Initiator::ArchiveOffset { parent: id, offset };
                    self.discover_archive_child(child, init, at);
                }
            }
            Parse::None => {}
        }
        if (200..300).contains(&status) {
            if kind == ObjectType::Script {
                // A script the parser does not run (async, inserted, pushed) runs now.
                let parser_runs = self.parsers.values().any(|p| p.runs_script(id));
                if !parser_runs {
                    self.run_script(id);
                }
            } else if let Some(a) = archive_id {
                self.schedule_computed(a, id, at);
            }
            self.archive_fallback(archive_id, id, at);
        } else if (300..400).contains(&status) {
            if let Some(u) = location.and_then(|l| base.join(&l)) {
                let init = Initiator::Redirect { parent: id };
                self.discover(u, kind, init, Blocking::None, at);
            }
        }
    }

    /// The archive's children of `parent` that its code requests after a delay (for a
    /// script: from when it ran; otherwise from its end).
    fn schedule_computed(&mut self, archive_id: usize, parent: ReqId, from: Instant) {
        let Some(ar) = self.archive else { return };
        for ch in self.children.get(&archive_id).cloned().unwrap_or_default() {
            if let Discovery::Computed { after_ms, .. } = ar.objects[ch].discovery {
                let when = from + Duration::from_millis(after_ms as u64);
                self.push_timer(
                    when,
                    Timer::Computed {
                        child: ch,
                        parent,
                        after_ms,
                    },
                );
            }
        }
    }

    /// Archive children a parser should have found and did not: fetched at the parent's
    /// end (counted as `missed_by_parser`).
    fn archive_fallback(&mut self, archive_id: Option<usize>, parent: ReqId, at: Instant) {
        let (Some(a), Some(ar)) = (archive_id, self.archive) else {
            return;
        };
        if !self.cfg.archive_fallback {
            return;
        }
        for ch in self.children.get(&a).cloned().unwrap_or_default() {
            if !matches!(ar.objects[ch].discovery, Discovery::Parsed { .. })
                || self.discovered_archive.contains(&ch)
            {
                continue;
            }
            // A reference held for `<body>` or for the parser is found, not missed.
            if let Some(k) = normalize(&ar.objects[ch].url) {
                let held = self.style_refs.iter().any(|s| s.url.to_string() == k)
                    || self
                        .pending_refs
                        .iter()
                        .flatten()
                        .any(|p| p.url.to_string() == k);
                if held {
                    continue;
                }
                if !self.by_url.contains_key(&k) {
                    self.missed_by_parser.push(k);
                }
            }
            self.discover_archive_child(ch, Initiator::ArchiveFallback { parent }, at);
        }
    }

    pub(super) fn fail(&mut self, id: ReqId, at: Instant, error: String) {
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
        self.held.retain(|q| *q != id);
        self.blink.finish(id);
        self.net.finish(id);
        if let Some(p) = self.parsers.get_mut(&id) {
            p.complete = true;
        }
    }

    fn base_of(&self, parent: ReqId) -> Option<Url> {
        self.bases.get(&parent).cloned()
    }

    /// The load's record (requests, connections, milestones, what the archive expected).
    pub fn finish(
        self,
        started: SystemTime,
        start: Instant,
        timed_out: bool,
        dns_cost: Duration,
    ) -> LoadResult {
        self.finish_page(started, start, timed_out, dns_cost).0
    }

    /// The page's result, and the connections for the session's next page (open ones
    /// stay open; the result lists every connection of the session so far).
    pub fn finish_page(
        mut self,
        started: SystemTime,
        start: Instant,
        timed_out: bool,
        dns_cost: Duration,
    ) -> (LoadResult, Carry) {
        for p in self.pools.values_mut() {
            p.queue.clear();
        }
        // The next page starts its own account of the connections it inherits: what a
        // connection already closed reported, and the requests each carried, stay with
        // this page (a connection still open reports its counters when it closes, to the
        // page it closes in).
        let carry = Carry {
            conns: self
                .conns
                .iter()
                .cloned()
                .map(|mut c| {
                    c.counters = ConnCounters::default();
                    c.tcp_info = None;
                    c.requests = 0;
                    c
                })
                .collect(),
            pools: std::mem::take(&mut self.pools),
            pool_order: std::mem::take(&mut self.pool_order),
        };
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
        let result = LoadResult {
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
            event_loop_lag_max: Duration::ZERO,
        };
        (result, carry)
    }
}
