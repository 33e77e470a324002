//! The engine on a virtual clock over a fake network: one test per rule of Chromium's
//! model (`chromium.rs`). The network answers every request `latency` after it is sent
//! (per URL when given), connections are ready one round trip after they are dialled,
//! and nothing else takes time except what the engine itself schedules.

use super::*;
use crate::net::DialPhase;
use speedy_archive::{BodySource, Object, Page};
use std::collections::BTreeMap;

const RTT: Duration = Duration::from_millis(100);

/// A page built in code: (path, type, body, discovery) with `/` first.
struct Site {
    archive: Archive,
}

impl Site {
    fn new(objects: &[(&str, ObjectType, &str, Discovery)]) -> Site {
        let mut a = Archive {
            format: speedy_archive::model::FORMAT_VERSION,
            ..Default::default()
        };
        let mut ids = Vec::new();
        for (path, kind, body, discovery) in objects {
            let ct = match kind {
                ObjectType::Document => "text/html",
                ObjectType::Stylesheet => "text/css",
                ObjectType::Script => "application/javascript",
                ObjectType::Image => "image/gif",
                _ => "application/octet-stream",
            };
            let o = Object {
                id: 0,
                url: if path.starts_with("https://") {
                    path.to_string()
                } else {
                    format!("https://a.test{path}")
                },
                method: "GET".into(),
                status: 200,
                request_headers: Vec::new(),
                response_headers: vec![("content-type".into(), ct.into())],
                body: BodySource::Synthetic { size: body.len() },
                content_type: ct.into(),
                content_encoding: None,
                think_ms: 0,
                kind: *kind,
                exec_ms: None,
                priority: None,
                recorded: None,
                discovery: discovery.clone(),
            };
            ids.push(a.add_object(o, Some(Bytes::from(body.to_string()))));
        }
        a.pages.push(Page {
            name: "t".into(),
            root: ids[0],
            objects: ids,
        });
        Site { archive: a }
    }
}

/// The fake network and the clock.
struct Run<'a> {
    e: Engine<'a>,
    site: &'a Archive,
    t0: Instant,
    now: Instant,
    /// Pending deliveries, by time.
    queue: BTreeMap<(Instant, u64), ConnEvent>,
    seq: u64,
    latency: HashMap<String, Duration>,
    /// (conn, host) dialled.
    dials: Vec<(ConnId, String)>,
    /// When each connection was dialled.
    dialled_at: HashMap<ConnId, Instant>,
    /// Hosts whose TCP connect takes this long (reported as `Dialing` phases), then one
    /// RTT of TLS; others are ready one RTT after the dial, with no phases reported.
    slow_connect: HashMap<String, Duration>,
    /// Request id → when it was sent on a connection.
    sent: HashMap<ReqId, Instant>,
    /// Connections the engine closed.
    closed: Vec<ConnId>,
}

impl<'a> Run<'a> {
    fn new(cfg: &'a LoadConfig, site: &'a Archive, driver: Arc<dyn Driver>) -> Run<'a> {
        let t0 = Instant::now();
        let url = Url::parse(&cfg.url).unwrap();
        let e = Engine::new(
            cfg,
            Some(site),
            driver,
            Arc::new(AtomicU64::new(1)),
            url,
            t0,
        );
        Run {
            e,
            site,
            t0,
            now: t0,
            queue: BTreeMap::new(),
            seq: 0,
            latency: HashMap::new(),
            dials: Vec::new(),
            dialled_at: HashMap::new(),
            slow_connect: HashMap::new(),
            sent: HashMap::new(),
            closed: Vec::new(),
        }
    }

    fn at(&mut self, t: Instant, ev: ConnEvent) {
        self.seq += 1;
        self.queue.insert((t, self.seq), ev);
    }

    fn actions(&mut self) {
        while let Some(a) = self.e.poll_action() {
            match a {
                Action::Dial { conn, host, .. } => {
                    self.dialled_at.insert(conn, self.now);
                    let mut ready = self.now + RTT;
                    if let Some(connect) = self.slow_connect.get(&host).copied() {
                        let (now, phase) = (self.now, DialPhase::Resolved);
                        self.at(now, ConnEvent::Dialing { conn, phase });
                        let phase = DialPhase::Connected;
                        self.at(now + connect, ConnEvent::Dialing { conn, phase });
                        ready = now + connect + RTT;
                    }
                    self.dials.push((conn, host));
                    let peer: SocketAddr = "127.0.0.1:443".parse().unwrap();
                    let times = DialTimes {
                        start: self.now,
                        dns_end: self.now,
                        tcp_end: ready,
                        ready,
                        tls: true,
                    };
                    self.at(ready, ConnEvent::Ready { conn, times, peer });
                }
                Action::Send { req, .. } => {
                    let url = format!("{}://{}{}", req.scheme, req.authority, req.path);
                    let obj = self.site.objects.iter().find(|o| o.url == url).unwrap();
                    let body = self.site.bodies[&obj.id].clone();
                    let lat = self.latency.get(&req.path).copied().unwrap_or(RTT);
                    let (id, now) = (req.id, self.now);
                    self.sent.insert(id, now);
                    self.at(
                        now,
                        ConnEvent::Sent {
                            id,
                            at: now,
                            header_bytes: 100,
                        },
                    );
                    let headers = obj.response_headers.clone();
                    let first_byte = now + lat;
                    self.at(
                        first_byte,
                        ConnEvent::Head {
                            id,
                            first_byte,
                            status: 200,
                            headers,
                            header_bytes: 100,
                        },
                    );
                    self.at(
                        first_byte,
                        ConnEvent::Data {
                            id,
                            at: first_byte,
                            data: body,
                        },
                    );
                    self.at(first_byte, ConnEvent::End { id, at: first_byte });
                }
                Action::Close { conn } => self.closed.push(conn),
                Action::Cancel { .. } => {}
            }
        }
    }

    /// Runs until the load settles (or 60 virtual seconds).
    fn run(&mut self) {
        for _ in 0..100_000 {
            self.actions();
            if self.e.settled() {
                return;
            }
            let next_ev = self.queue.keys().next().map(|k| k.0);
            let next_timer = self.e.poll_timeout();
            let t = match (next_ev, next_timer) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => panic!("stuck: nothing pending and the load has not settled"),
            };
            assert!(
                t - self.t0 < Duration::from_secs(60),
                "ran out of virtual time"
            );
            self.now = t;
            if next_timer == Some(t) {
                self.e.handle_timeout(t);
            } else {
                let k = *self.queue.keys().next().unwrap();
                let ev = self.queue.remove(&k).unwrap();
                self.e.handle_event(ev, t);
            }
        }
        panic!("did not settle");
    }

    fn req(&self, path: &str) -> &Req {
        let url = if path.starts_with("https://") {
            path.to_string()
        } else {
            format!("https://a.test{path}")
        };
        let id = self
            .e
            .request_for(&url)
            .unwrap_or_else(|| panic!("{path} was never requested"));
        self.e.request(id).unwrap()
    }

    /// ms after the start.
    fn ms(&self, t: Instant) -> u64 {
        (t - self.t0).as_millis() as u64
    }
    fn queued(&self, path: &str) -> u64 {
        self.ms(self.req(path).queued)
    }
    fn sent(&self, path: &str) -> u64 {
        self.ms(self.sent[&self.req(path).id])
    }
    fn end(&self, path: &str) -> u64 {
        self.ms(self.req(path).end.unwrap())
    }
}

/// A root `html` and, found in it by the parser, `objects` (path, type) with `body`.
fn flat_site(html: &str, objects: &[(String, ObjectType)], body: &str) -> Site {
    let mut spec = vec![("/", ObjectType::Document, html, Discovery::Root)];
    for (p, k) in objects {
        spec.push((p.as_str(), *k, body, parsed(0)));
    }
    Site::new(&spec)
}

/// A page whose head links `n` style sheets `/c0.css` …, and their paths.
fn style_sheets(n: usize) -> (Site, Vec<String>) {
    let mut html = String::from("<html><head>");
    let mut objs = Vec::new();
    for i in 0..n {
        html.push_str(&format!(r#"<link rel="stylesheet" href="/c{i}.css">"#));
        objs.push(format!("/c{i}.css"));
    }
    html.push_str("</head><body></body></html>");
    let sheets: Vec<(String, ObjectType)> = objs
        .iter()
        .map(|p| (p.clone(), ObjectType::Stylesheet))
        .collect();
    (flat_site(&html, &sheets, "p{}"), objs)
}

fn parsed(offset: usize) -> Discovery {
    Discovery::Parsed { parent: 0, offset }
}

fn h2() -> Arc<dyn Driver> {
    Arc::new(conn::h2::H2::default())
}

fn http1() -> Arc<dyn Driver> {
    Arc::new(conn::http1::Http1 { pipeline: 1 })
}

/// The defaults, less script cost and Chromium's preconnects (their own test below), so
/// that each test counts only the dials of the rule it is about.
fn cfg(proto: Proto) -> LoadConfig {
    let mut c = LoadConfig::new("https://a.test/", proto);
    c.script_ms_per_kb = 0.0;
    c.preconnect = false;
    c
}

#[test]
fn an_iframe_after_a_blocking_script_is_requested_after_the_script_runs() {
    let html = r#"<html><head><script src="/s.js"></script></head><body><img src="/i.gif"><iframe src="/f.html"></iframe></body></html>"#;
    let site = Site::new(&[
        ("/", ObjectType::Document, html, Discovery::Root),
        ("/s.js", ObjectType::Script, "var x=1;", parsed(0)),
        ("/i.gif", ObjectType::Image, "GIF", parsed(0)),
        ("/f.html", ObjectType::Document, "<p>frame</p>", parsed(0)),
    ]);
    let c = cfg(Proto::H2);
    let mut r = Run::new(&c, &site.archive, h2());
    r.latency.insert("/s.js".into(), Duration::from_millis(500));
    r.run();
    // Root: dial 100 + 100. The preload scanner finds the script and the image at once.
    assert_eq!(r.queued("/s.js"), 200);
    assert_eq!(
        r.queued("/i.gif"),
        200,
        "the preload scanner fetches images ahead"
    );
    // The frame only when the parser gets there: after the script arrived and ran.
    assert_eq!(r.end("/s.js"), 700);
    assert_eq!(r.queued("/f.html"), 700);
    assert!(r.e.on_content_load().is_some());
}

#[test]
fn a_script_runs_after_the_style_sheets_before_it_and_its_children_follow_its_run() {
    let html = r#"<html><head><link rel="stylesheet" href="/a.css"><script src="/s.js"></script></head><body></body></html>"#;
    let site = Site::new(&[
        ("/", ObjectType::Document, html, Discovery::Root),
        ("/a.css", ObjectType::Stylesheet, "p{color:red}", parsed(0)),
        (
            "/s.js",
            ObjectType::Script,
            &"x".repeat(10 * 1024),
            parsed(0),
        ),
        (
            "/later.gif",
            ObjectType::Image,
            "GIF",
            Discovery::Computed {
                parent: 2,
                after_ms: 30,
            },
        ),
    ]);
    let mut c = cfg(Proto::H2);
    c.script_ms_per_kb = 2.0; // 10 KiB: 20 ms
    let mut r = Run::new(&c, &site.archive, h2());
    r.latency
        .insert("/a.css".into(), Duration::from_millis(400));
    r.run();
    assert_eq!(r.end("/s.js"), 300);
    assert_eq!(r.end("/a.css"), 600);
    let ran = r.ms(r.req("/s.js").executed.unwrap());
    assert_eq!(
        ran, 620,
        "runs when the style sheet before it is in, for 20 ms"
    );
    assert_eq!(r.queued("/later.gif"), 650, "its child: 30 ms after it ran");
    assert_eq!(r.ms(r.e.on_content_load().unwrap()), 620);
}

#[test]
fn low_priority_requests_wait_for_body_in_tight_mode() {
    let mut html =
        String::from(r#"<html><head><script src="/s.js"></script><script src="/t.js"></script>"#);
    let mut objs = vec![
        ("/s.js".to_string(), ObjectType::Script),
        ("/t.js".to_string(), ObjectType::Script),
    ];
    // Seven images after the head: five are boosted to Medium, two are Low.
    html.push_str("</head><body>");
    for i in 0..7 {
        html.push_str(&format!(r#"<img src="/i{i}.gif">"#));
        objs.push((format!("/i{i}.gif"), ObjectType::Image));
    }
    html.push_str("</body></html>");
    let site = flat_site(&html, &objs, "x");
    let c = cfg(Proto::H2);
    let mut r = Run::new(&c, &site.archive, h2());
    r.latency
        .insert("/s.js".into(), Duration::from_millis(1000));
    r.latency
        .insert("/t.js".into(), Duration::from_millis(1000));
    r.run();
    // The parser waits for the scripts until 1200; images were all found at 200.
    for i in 0..7 {
        assert_eq!(r.queued(&format!("/i{i}.gif")), 200);
    }
    let p = |i: usize| r.req(&format!("/i{i}.gif")).chromium_priority;
    assert_eq!(p(4), chromium::Priority::Medium);
    assert_eq!(p(5), chromium::Priority::Low);
    // Two Medium ones go at once (tight mode's medium allowance), the others wait for
    // them; the Low ones wait while two requests (the scripts) run, i.e. for <body>.
    assert_eq!(r.sent("/i0.gif"), 200);
    assert_eq!(r.sent("/i1.gif"), 200);
    assert!(
        r.sent("/i2.gif") >= 300,
        "a third Medium waits for one to finish"
    );
    assert!(r.sent("/i5.gif") >= 1200, "Low waits for <body>");
    assert!(r.sent("/i6.gif") >= 1200);
}

#[test]
fn http1_opens_at_most_six_connections_per_host() {
    let (site, objs) = style_sheets(10);
    let c = cfg(Proto::Http1);
    let mut r = Run::new(&c, &site.archive, http1());
    r.run();
    assert_eq!(
        r.dials.len(),
        6,
        "one for the page, five more: six to a.test"
    );
    // Ten style sheets over six connections: the last four wait for a free one.
    let mut sent: Vec<u64> = objs.iter().map(|p| r.sent(p)).collect();
    sent.sort();
    assert_eq!(&sent[..6], &[200, 300, 300, 300, 300, 300]);
    assert!(sent[6] >= 300 && sent[9] >= 400);
}

#[test]
fn http1_delayable_requests_are_limited_to_ten_in_flight() {
    let mut html = String::from("<html><head></head><body>");
    let mut objs = Vec::new();
    for i in 0..14 {
        // Fourteen hosts would each have room; the client-wide limit of 10 binds.
        html.push_str(&format!(r#"<img src="/i{i}.gif">"#));
        objs.push(format!("/i{i}.gif"));
    }
    html.push_str("</body></html>");
    let images: Vec<(String, ObjectType)> = objs
        .iter()
        .map(|p| (p.clone(), ObjectType::Image))
        .collect();
    let site = flat_site(&html, &images, "GIF");
    let mut c = cfg(Proto::Http1);
    c.per_host = 100; // only the scheduler's limits bind
    let mut r = Run::new(&c, &site.archive, http1());
    r.run();
    let released_at_once = objs
        .iter()
        .filter(|p| r.ms(r.req(p).released.unwrap()) == 200)
        .count();
    // Six per host (kMaxNumDelayableRequestsPerHostPerClient): all on a.test.
    assert_eq!(released_at_once, 6);
}

#[test]
fn fetch_does_not_delay_onload_but_is_still_fetched() {
    let html = r#"<html><head><script src="/s.js"></script></head><body></body></html>"#;
    let site = Site::new(&[
        ("/", ObjectType::Document, html, Discovery::Root),
        ("/s.js", ObjectType::Script, "x", parsed(0)),
        (
            "/api.json",
            ObjectType::Xhr,
            "{}",
            Discovery::Computed {
                parent: 1,
                after_ms: 0,
            },
        ),
    ]);
    let c = cfg(Proto::H2);
    let mut r = Run::new(&c, &site.archive, h2());
    r.latency
        .insert("/api.json".into(), Duration::from_millis(2000));
    r.run();
    assert_eq!(r.ms(r.e.on_load().unwrap()), 300);
    assert_eq!(
        r.end("/api.json"),
        2300,
        "the load waits for it before it ends"
    );
}

#[test]
fn style_sheet_images_wait_for_body_and_imports_block_scripts() {
    let html = r#"<html><head><link rel="stylesheet" href="/a.css"><script src="/s.js"></script></head><body><div class="x"></div></body></html>"#;
    let site = Site::new(&[
        ("/", ObjectType::Document, html, Discovery::Root),
        (
            "/a.css",
            ObjectType::Stylesheet,
            r#"@import url("/b.css"); .x{background:url("/bg.gif")}"#,
            parsed(0),
        ),
        ("/s.js", ObjectType::Script, "x", parsed(0)),
        (
            "/b.css",
            ObjectType::Stylesheet,
            "p{}",
            Discovery::Parsed {
                parent: 1,
                offset: 20,
            },
        ),
        (
            "/bg.gif",
            ObjectType::Image,
            "GIF",
            Discovery::Parsed {
                parent: 1,
                offset: 50,
            },
        ),
    ]);
    let c = cfg(Proto::H2);
    let mut r = Run::new(&c, &site.archive, h2());
    r.latency
        .insert("/b.css".into(), Duration::from_millis(300));
    r.run();
    assert_eq!(r.end("/a.css"), 300);
    assert_eq!(r.queued("/b.css"), 300, "@import when the sheet is parsed");
    assert_eq!(r.end("/b.css"), 600);
    assert_eq!(
        r.ms(r.req("/s.js").executed.unwrap()),
        600,
        "the script waits for the imported sheet too"
    );
    assert_eq!(
        r.queued("/bg.gif"),
        600,
        "url() images at style recalc after <body>"
    );
    assert!(r
        .e
        .finish(SystemTime::now(), r.t0, false, Duration::ZERO)
        .missed_by_parser
        .is_empty());
}

#[test]
fn without_the_browser_model_everything_goes_out_when_found() {
    let html = r#"<html><head><script src="/s.js"></script></head><body><iframe src="/f.html"></iframe></body></html>"#;
    let site = Site::new(&[
        ("/", ObjectType::Document, html, Discovery::Root),
        ("/s.js", ObjectType::Script, "x", parsed(0)),
        ("/f.html", ObjectType::Document, "<p>f</p>", parsed(0)),
    ]);
    let mut c = cfg(Proto::H2);
    c.browser_model = false;
    let mut r = Run::new(&c, &site.archive, h2());
    r.latency.insert("/s.js".into(), Duration::from_millis(500));
    r.run();
    assert_eq!(r.queued("/f.html"), 200);
}

#[test]
fn a_page_without_a_body_tag_still_gets_its_style_sheet_images() {
    let html = r#"<html><head><link rel="stylesheet" href="/a.css"></head></html>"#;
    let site = Site::new(&[
        ("/", ObjectType::Document, html, Discovery::Root),
        (
            "/a.css",
            ObjectType::Stylesheet,
            r#".x{background:url("/bg.gif")}"#,
            parsed(0),
        ),
        (
            "/bg.gif",
            ObjectType::Image,
            "GIF",
            Discovery::Parsed {
                parent: 1,
                offset: 28,
            },
        ),
    ]);
    let c = cfg(Proto::H2);
    let mut r = Run::new(&c, &site.archive, h2());
    r.latency.insert("/a.css".into(), Duration::from_millis(50));
    r.run();
    // The parser ends at 200 (an implied <body>); the sheet is in at 250.
    assert_eq!(r.queued("/bg.gif"), 250);
    assert_eq!(r.end("/bg.gif"), 350);
}

#[test]
fn more_sessions_per_pool_spread_requests_over_them() {
    let (site, objs) = style_sheets(12);
    for (sessions, want) in [(1, 1), (4, 4)] {
        let mut c = cfg(Proto::H2);
        c.sessions_per_pool = sessions;
        let mut r = Run::new(&c, &site.archive, h2());
        r.run();
        assert_eq!(r.dials.len(), want, "{sessions} per pool");
        let mut per_conn: HashMap<ConnId, usize> = HashMap::new();
        for p in &objs {
            *per_conn.entry(r.req(p).conn.unwrap()).or_default() += 1;
        }
        assert_eq!(per_conn.len(), want, "{sessions} per pool: {per_conn:?}");
        // Each ready session takes its share of what waits, the rest wait for the sessions
        // still connecting: a near-even spread (12 over 4: 2 to 4 each).
        let even = 12 / want;
        assert!(
            per_conn.values().all(|&n| n + 1 >= even && n <= even + 1),
            "{sessions} per pool: {per_conn:?}"
        );
    }
}

/// The hosts dialled, in order.
fn dialled(r: &Run, host: &str) -> Vec<ConnId> {
    r.dials
        .iter()
        .filter(|(_, h)| h == host)
        .map(|(c, _)| *c)
        .collect()
}

#[test]
fn a_fresh_profile_races_a_connection_per_request_until_the_first_session_is_up() {
    // Eight style sheets on another host, found together: a browser that does not yet
    // know the host speaks h2 starts a connect per request, up to six.
    let mut html = String::from("<html><head>");
    let mut spec = Vec::new();
    let paths: Vec<String> = (0..8).map(|i| format!("https://b.test/c{i}.css")).collect();
    for p in &paths {
        html.push_str(&format!(r#"<link rel="stylesheet" href="{p}">"#));
    }
    html.push_str("</head><body></body></html>");
    spec.push(("/", ObjectType::Document, html.as_str(), Discovery::Root));
    for p in &paths {
        spec.push((p.as_str(), ObjectType::Stylesheet, "p{}", parsed(0)));
    }
    let site = Site::new(&spec);
    for (race, want) in [(true, 6), (false, 1)] {
        let mut c = cfg(Proto::H2);
        c.race_connections = race;
        let mut r = Run::new(&c, &site.archive, h2());
        r.run();
        let b = dialled(&r, "b.test");
        assert_eq!(b.len(), want, "race {race}: {:?}", r.dials);
        // Every request on the first session up; the others close once connected.
        let used: HashSet<ConnId> = paths.iter().map(|p| r.req(p).conn.unwrap()).collect();
        assert_eq!(used.len(), 1, "race {race}");
        let winner = *used.iter().next().unwrap();
        let mut losers: Vec<ConnId> = b.iter().copied().filter(|c| *c != winner).collect();
        losers.sort();
        let mut closed = r.closed.clone();
        closed.sort();
        assert_eq!(closed, losers, "race {race}");
        // All sent when the first connection is up: dial at 200 ms, ready at 300.
        for p in &paths {
            assert_eq!(r.sent(p), 300, "{p}");
        }
    }
    // Over plain TCP the protocol is prior knowledge: one connection.
    let mut c = cfg(Proto::H2);
    c.transport = Transport::Plain;
    let mut r = Run::new(&c, &site.archive, h2());
    r.run();
    assert_eq!(dialled(&r, "b.test").len(), 1, "plain TCP");
    // Over HTTP/1.1 the race changes nothing: six connections either way.
    for race in [true, false] {
        let mut c = cfg(Proto::Http1);
        c.race_connections = race;
        let mut r = Run::new(&c, &site.archive, http1());
        r.run();
        assert_eq!(dialled(&r, "b.test").len(), 6, "http/1.1, race {race}");
        assert!(r.closed.is_empty());
    }
}

#[test]
fn a_cross_site_frame_gets_connections_of_its_own() {
    let html = r#"<html><body><img src="https://img.cdn.test/a.gif"><iframe src="https://ads.other.test/f.html"></iframe></body></html>"#;
    let frame = r#"<html><body><img src="https://img.cdn.test/b.gif"></body></html>"#;
    let site = Site::new(&[
        ("/", ObjectType::Document, html, Discovery::Root),
        (
            "https://img.cdn.test/a.gif",
            ObjectType::Image,
            "GIF",
            parsed(0),
        ),
        (
            "https://ads.other.test/f.html",
            ObjectType::Document,
            frame,
            parsed(0),
        ),
        (
            "https://img.cdn.test/b.gif",
            ObjectType::Image,
            "GIF",
            Discovery::Parsed {
                parent: 2,
                offset: 0,
            },
        ),
    ]);
    for (partition, conns) in [(true, 2), (false, 1)] {
        let mut c = cfg(Proto::H2);
        c.partition_frames = partition;
        let mut r = Run::new(&c, &site.archive, h2());
        r.run();
        let a = r.req("https://img.cdn.test/a.gif").conn.unwrap();
        let b = r.req("https://img.cdn.test/b.gif").conn.unwrap();
        assert_eq!(
            dialled(&r, "img.cdn.test").len(),
            conns,
            "partition {partition}"
        );
        assert_eq!(a != b, partition, "partition {partition}");
    }
    // A frame of the page's own site shares the page's connections.
    assert_eq!(chromium::site("www.site0.example"), "site0.example");
    assert_eq!(chromium::site("static.site0.example"), "site0.example");
    assert_ne!(
        chromium::site("img.site0-cdn.example"),
        chromium::site("www.site0.example")
    );
    assert_eq!(chromium::site("localhost"), "localhost");
    assert_eq!(chromium::site("10.0.0.1"), "10.0.0.1");
}

#[test]
fn style_sheet_images_are_not_held_by_the_delayable_limits() {
    // Twelve <img> fill the network service's delayable slots (six per host); the style
    // sheet's image, raised to High as visible, goes out as soon as it is found.
    let mut html = String::from(
        r#"<html><head><link rel="stylesheet" href="/a.css"></head><body><div class="x"></div>"#,
    );
    let mut spec: Vec<(String, ObjectType, String, Discovery)> = vec![(
        "/a.css".into(),
        ObjectType::Stylesheet,
        r#".x{background:url("/bg.gif")}"#.into(),
        parsed(0),
    )];
    for i in 0..12 {
        html.push_str(&format!(r#"<img src="/i{i}.gif">"#));
        spec.push((
            format!("/i{i}.gif"),
            ObjectType::Image,
            "GIF".into(),
            parsed(0),
        ));
    }
    html.push_str("</body></html>");
    spec.push((
        "/bg.gif".into(),
        ObjectType::Image,
        "GIF".into(),
        Discovery::Parsed {
            parent: 1,
            offset: 5,
        },
    ));
    let mut all = vec![("/", ObjectType::Document, html.as_str(), Discovery::Root)];
    for (p, k, b, d) in &spec {
        all.push((p.as_str(), *k, b.as_str(), d.clone()));
    }
    let site = Site::new(&all);
    let mut c = cfg(Proto::Http1);
    c.per_host = 100;
    let mut r = Run::new(&c, &site.archive, http1());
    for i in 0..12 {
        r.latency
            .insert(format!("/i{i}.gif"), Duration::from_millis(1000));
    }
    r.run();
    assert_eq!(r.req("/bg.gif").chromium_priority, chromium::Priority::High);
    let found = r.queued("/bg.gif");
    assert_eq!(r.ms(r.req("/bg.gif").released.unwrap()), found);
    // The sixth image onwards waited for a slot; the style sheet image did not.
    assert!(r.ms(r.req("/i11.gif").released.unwrap()) > found);
}

#[test]
fn a_priority_chrome_recorded_stands_for_the_models() {
    let html = r#"<html><body><img src="/a.gif"><img src="/b.gif"></body></html>"#;
    let mut site = Site::new(&[
        ("/", ObjectType::Document, html, Discovery::Root),
        ("/a.gif", ObjectType::Image, "GIF", parsed(0)),
        ("/b.gif", ObjectType::Image, "GIF", parsed(0)),
    ]);
    site.archive.objects[2].priority = Some("VeryHigh".into());
    let c = cfg(Proto::H2);
    let mut r = Run::new(&c, &site.archive, h2());
    r.run();
    // The first images get the model's Medium; the recorded one keeps Chrome's.
    assert_eq!(
        r.req("/a.gif").chromium_priority,
        chromium::Priority::Medium
    );
    assert_eq!(
        r.req("/b.gif").chromium_priority,
        chromium::Priority::VeryHigh
    );
    assert_eq!(r.req("/b.gif").priority, 0, "SPDY/h2 priority of VeryHigh");
}

#[test]
fn a_dial_without_a_tcp_connection_after_250_ms_gets_a_backup_dial() {
    // One image on b.test; its TCP connect takes `connect`, then one RTT of TLS.
    let (site, objs) = {
        let html = r#"<html><body><img src="https://b.test/i.png"></body></html>"#;
        let spec = vec![
            ("/", ObjectType::Document, html, Discovery::Root),
            (
                "https://b.test/i.png",
                ObjectType::Image,
                "GIF89a",
                parsed(0),
            ),
        ];
        (Site::new(&spec), ["https://b.test/i.png"])
    };
    for proto in [Proto::Http1, Proto::H2] {
        let driver = if proto == Proto::H2 { h2() } else { http1() };
        for (connect_ms, backups, want) in [(400, true, 2), (100, true, 1), (400, false, 1)] {
            let mut c = cfg(proto);
            c.backup_connect_jobs = backups;
            let mut r = Run::new(&c, &site.archive, driver.clone());
            let connect = Duration::from_millis(connect_ms);
            r.slow_connect.insert("b.test".into(), connect);
            // The image takes a second, so the load is still on when the backup is up.
            r.latency.insert("/i.png".into(), Duration::from_secs(1));
            r.run();
            let b = dialled(&r, "b.test");
            let what = format!("{proto:?}, connect {connect_ms} ms, backups {backups}");
            assert_eq!(b.len(), want, "{what}: {:?}", r.dials);
            if want == 2 {
                // The backup 250 ms after the first dial; the request on the first
                // connection up (the first dial's).
                let gap = r.dialled_at[&b[1]] - r.dialled_at[&b[0]];
                assert_eq!(gap, Duration::from_millis(250), "{what}");
                assert_eq!(r.req(objs[0]).conn, Some(b[0]), "{what}");
                // Over h2 the backup, up after the session, closes unused; over
                // HTTP/1.1 it stays for the requests to come.
                let closed: Vec<ConnId> = (r.closed.iter().copied())
                    .filter(|c| b.contains(c))
                    .collect();
                let want_closed = if proto == Proto::H2 {
                    vec![b[1]]
                } else {
                    vec![]
                };
                assert_eq!(closed, want_closed, "{what}");
            }
        }
    }
    // Over plain TCP (the protocol known, no race) an h2 backup closes unused too.
    let mut c = cfg(Proto::H2);
    c.transport = Transport::Plain;
    let mut r = Run::new(&c, &site.archive, h2());
    r.slow_connect
        .insert("b.test".into(), Duration::from_millis(400));
    r.latency.insert("/i.png".into(), Duration::from_secs(1));
    r.run();
    let b = dialled(&r, "b.test");
    assert_eq!(b.len(), 2, "{:?}", r.dials);
    assert!(r.closed.contains(&b[1]) && !r.closed.contains(&b[0]));
    // Dials of the page's own host (no phases reported: still resolving, for the
    // engine) start no backup: the timer waits, and the connection is up in one RTT.
    let c = cfg(Proto::Http1);
    let mut r = Run::new(&c, &site.archive, http1());
    r.run();
    assert_eq!(dialled(&r, "a.test").len(), 1);
}

#[test]
fn chromium_preconnects_two_sockets_to_the_page_and_one_unused_to_a_cross_site_frame() {
    let html = r#"<html><body><img src="/i.gif"><iframe src="https://ads.other.test/f.html"></iframe></body></html>"#;
    let frame = r#"<html><body><img src="https://ads.other.test/b.gif"></body></html>"#;
    let site = Site::new(&[
        ("/", ObjectType::Document, html, Discovery::Root),
        ("/i.gif", ObjectType::Image, "GIF", parsed(0)),
        (
            "https://ads.other.test/f.html",
            ObjectType::Document,
            frame,
            parsed(0),
        ),
        (
            "https://ads.other.test/b.gif",
            ObjectType::Image,
            "GIF",
            Discovery::Parsed {
                parent: 2,
                offset: 0,
            },
        ),
    ]);
    for proto in [Proto::Http1, Proto::H2] {
        let driver = if proto == Proto::H2 { h2() } else { http1() };
        let run = |preconnect: bool| {
            let mut c = cfg(proto);
            c.preconnect = preconnect;
            // The root takes a second, so its first connection is busy when the image
            // is found.
            let mut r = Run::new(&c, &site.archive, driver.clone());
            r.latency.insert("/".into(), Duration::from_secs(1));
            r.run();
            let conns = |p: &str| r.req(p).conn.unwrap();
            let used: Vec<ConnId> = ["/", "/i.gif", "https://ads.other.test/f.html"]
                .iter()
                .chain(&["https://ads.other.test/b.gif"])
                .map(|p| conns(p))
                .collect();
            let frame_found = r.queued("https://ads.other.test/f.html");
            let at: HashMap<ConnId, u64> =
                r.dialled_at.iter().map(|(c, t)| (*c, r.ms(*t))).collect();
            let frame_pool = r.req("https://ads.other.test/f.html").pool.clone();
            (
                dialled(&r, "a.test"),
                dialled(&r, "ads.other.test"),
                used,
                r.closed.clone(),
                frame_found,
                at,
                frame_pool,
            )
        };
        let what = format!("{proto:?}");
        let (a0, ads0, used0, ..) = run(false);
        let unused = |ads: &[ConnId], used: &[ConnId]| -> Vec<ConnId> {
            ads.iter().copied().filter(|c| !used.contains(c)).collect()
        };
        // Without: over HTTP/1.1 the image, found while the root still loads, dials a
        // second connection then; over h2 it shares the session.
        assert_eq!(
            a0.len(),
            if proto == Proto::Http1 { 2 } else { 1 },
            "{what}"
        );
        let (a, ads, used, closed, frame_found, at, frame_pool) = run(true);
        // Two dials to the page's origin as the load starts; the root on the first.
        assert_eq!(a.len(), 2, "{what}");
        assert!(a.iter().all(|c| at[c] == 0), "{what}");
        assert_eq!(used[0], a[0], "{what}");
        if proto == Proto::Http1 {
            // The image takes up the second, idle since the start.
            assert_eq!(used[1], a[1], "{what}");
            assert!(closed.is_empty(), "{what}");
        } else {
            // Over h2 the second is a surplus session and closes unused.
            assert_eq!(used[1], a[0], "{what}");
            assert!(closed.contains(&a[1]), "{what}");
        }
        // The frame's origin: one dial more than without, made as the frame is found
        // (the credentialed preconnect), and no request on it: the frame's requests are
        // pmpsa, in a group of their own. (Over HTTP/1.1 both runs also have a dial the
        // frame's image asked for and then found the frame's connection free.)
        assert_eq!(ads.len(), ads0.len() + 1, "{what}");
        let spare = unused(&ads, &used);
        assert_eq!(spare.len(), unused(&ads0, &used0).len() + 1, "{what}");
        let at_frame = |s: &[ConnId]| s.iter().filter(|c| at[c] == frame_found).count();
        assert_eq!(
            at_frame(&spare),
            1,
            "{what}: {spare:?} {at:?} {frame_found}"
        );
        assert!(frame_pool.ends_with(" pmpsa"), "{what}: {frame_pool}");
    }
}

#[test]
fn a_cross_origin_font_and_third_party_requests_go_out_in_groups_of_their_own() {
    let html = r#"<html><head><link rel="stylesheet" href="https://static.a.test/s.css"></head><body><p>x</p><img src="https://img.cdn.test/c.gif"></body></html>"#;
    let css =
        r#"@font-face{font-family:F;src:url("https://static.a.test/f.woff2")} p{font-family:F}"#;
    let site = Site::new(&[
        ("/", ObjectType::Document, html, Discovery::Root),
        (
            "https://static.a.test/s.css",
            ObjectType::Stylesheet,
            css,
            parsed(0),
        ),
        (
            "https://img.cdn.test/c.gif",
            ObjectType::Image,
            "GIF",
            parsed(0),
        ),
        (
            "https://static.a.test/f.woff2",
            ObjectType::Font,
            "wOF2",
            Discovery::Parsed {
                parent: 1,
                offset: 0,
            },
        ),
    ]);
    for (partition, want) in [(true, 2), (false, 1)] {
        let mut c = cfg(Proto::H2);
        c.partition_frames = partition;
        let mut r = Run::new(&c, &site.archive, h2());
        r.run();
        // The style sheet (same site, with cookies) and the font (cross-origin, CORS
        // without credentials) to one host: two sessions when privacy mode keys the pool.
        let what = format!("partition {partition}");
        assert_eq!(
            dialled(&r, "static.a.test").len(),
            want,
            "{what}: {:?}",
            r.dials
        );
        let sheet = r.req("https://static.a.test/s.css");
        let font = r.req("https://static.a.test/f.woff2");
        assert_eq!(sheet.conn != font.conn, partition, "{what}");
        let img = &r.req("https://img.cdn.test/c.gif").pool;
        if partition {
            assert_eq!(sheet.pool, "https://static.a.test");
            assert_eq!(font.pool, "https://static.a.test pm");
            assert_eq!(img, "https://img.cdn.test pmpsa");
        } else {
            assert_eq!(img, "https://img.cdn.test");
        }
    }
    let top = "www.site0.example";
    let of =
        |kind, origin: &str, host, doc: &str| chromium::Privacy::of(kind, origin, host, doc, top);
    use chromium::Privacy::*;
    let page = "https://www.site0.example";
    assert_eq!(of(ObjectType::Font, page, top, page), Credentialed);
    assert_eq!(
        of(
            ObjectType::Image,
            "https://img.site0.example",
            "img.site0.example",
            page
        ),
        Credentialed
    );
    assert_eq!(
        of(
            ObjectType::Font,
            "https://img.site0.example",
            "img.site0.example",
            page
        ),
        Anonymous
    );
    assert_eq!(
        of(
            ObjectType::Script,
            "https://cdn.other.example",
            "cdn.other.example",
            page
        ),
        Partitioned
    );
}
