//! The loader's engine, sans IO: it never reads a clock, opens a socket or spawns a task.
//! Inputs are connection events and timer expiries, each with `now`
//! ([`Engine::handle_event`], [`Engine::handle_timeout`]); outputs are [`Action`]s (dial,
//! send, cancel, close; [`Engine::poll_action`]) and the next timer
//! ([`Engine::poll_timeout`]). The async shell in `loader/mod.rs` only does the IO, and the
//! tests in `engine_tests.rs` drive the same engine over a fake network on a virtual clock.
//!
//! This file holds the engine's state, its inputs and outputs; each concern is a
//! submodule. In the order a request meets them:
//! - discovery: the HTML parser and preload scanner (the parser model is in
//!   [`super::chromium::DocParser`]; `advance_parsers`, in `engine/script.rs`), style
//!   sheets, scripts when they run, the archive's graph (`engine/archive.rs`), hints,
//!   pushes, redirects;
//! - the request lifecycle (`discover`, `fail`, in `engine/requests.rs`);
//! - the browser's schedulers (`release`, in `engine/pools.rs`): Blink's tight mode for
//!   the main frame and, over HTTP/1.1 and h3, the network service's delayable limits
//!   ([`super::chromium`]);
//! - connection pools (`schedule`, in `engine/pools.rs`): six connections per host and a
//!   total cap for HTTP/1.1, one session per origin (or one in all) for SPDY and HTTP/2;
//! - connection events (`engine/events.rs`) and responses: heads, bodies and ends
//!   (`engine/responses.rs`);
//! - script execution (`run_script`, `on_timer`, in `engine/script.rs`): a cost per
//!   script, children requested at run time plus their recorded delay;
//! - milestones (`check_milestones`, in `engine/script.rs`): `DOMContentLoaded` and `load`
//!   as Chromium fires them; the page's result (`engine/result.rs`).

use super::chromium::{self, BlinkGate, DocParser, NetGate, Origin, Step};
use super::*;
use std::collections::VecDeque;

mod archive;
mod events;
mod pools;
mod requests;
mod responses;
mod result;
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
    /// A pool's backup connect job is due (`Engine::backup_job`).
    Backup { pool: String },
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
        if e.preconnects() {
            let pool = e.reqs[&e.root].pool.clone();
            e.preconnect(&pool, chromium::PRECONNECT_SOCKETS);
        }
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
}
