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

/// A page of fourteen `<img>` on its own host, and their paths.
fn fourteen_images() -> (Site, Vec<String>) {
    let mut html = String::from("<html><head></head><body>");
    let mut objs = Vec::new();
    for i in 0..14 {
        html.push_str(&format!(r#"<img src="/i{i}.gif">"#));
        objs.push(format!("/i{i}.gif"));
    }
    html.push_str("</body></html>");
    let images: Vec<(String, ObjectType)> = objs
        .iter()
        .map(|p| (p.clone(), ObjectType::Image))
        .collect();
    (flat_site(&html, &images, "GIF"), objs)
}

/// How many of `objs` the browser's schedulers let through with the page (at 200 ms).
fn released_with_the_page(r: &Run, objs: &[String]) -> usize {
    objs.iter()
        .filter(|p| r.ms(r.req(p).released.unwrap()) == 200)
        .count()
}

#[test]
fn http1_delayable_requests_are_limited_to_ten_in_flight() {
    let (site, objs) = fourteen_images();
    let mut c = cfg(Proto::Http1);
    c.per_host = 100; // only the scheduler's limits bind
    let mut r = Run::new(&c, &site.archive, http1());
    r.run();
    // Six per host (kMaxNumDelayableRequestsPerHostPerClient): all on a.test.
    assert_eq!(released_with_the_page(&r, &objs), 6);
}

#[test]
fn h3_by_prior_knowledge_is_held_by_the_delayable_limits_and_h2_is_not() {
    // The per-host limit of six binds over HTTP/3 reached by prior knowledge (no server
    // property says it has request priorities), not over h2.
    let (site, objs) = fourteen_images();
    for (proto, at_once) in [(Proto::H3, 6), (Proto::H2, 14)] {
        let c = cfg(proto);
        let mut r = Run::new(&c, &site.archive, h2());
        r.run();
        assert_eq!(released_with_the_page(&r, &objs), at_once, "{proto:?}");
    }
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

/// The hosts dialled, in order.
fn dialled(r: &Run, host: &str) -> Vec<ConnId> {
    r.dials
        .iter()
        .filter(|(_, h)| h == host)
        .map(|(c, _)| *c)
        .collect()
}

mod pools;
