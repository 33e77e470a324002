//! The engine's connection pools on the virtual clock: sessions per pool, the race to
//! servers not yet known to speak HTTP/2, backup connect jobs, partitioned and privacy-mode
//! pools, and Chromium's preconnects.

use super::*;

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
    let mut site = Site::new(&[
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
    // Cookies recorded for the style sheet, the font and the third-party image: with the
    // browser model only the credentialed request (the style sheet) sends its own, among
    // Chromium's headers; the font (pm) and the image (pmpsa) go without.
    for o in &mut site.archive.objects[1..] {
        o.request_headers = vec![("cookie".into(), "k=v".into())];
    }
    {
        let c = cfg(Proto::H2);
        let mut r = Run::new(&c, &site.archive, h2());
        r.run();
        let header = |p: &str, name: &str| -> Option<String> {
            (r.req(p).req_headers.iter())
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let sheet = "https://static.a.test/s.css";
        let font = "https://static.a.test/f.woff2";
        let img = "https://img.cdn.test/c.gif";
        assert_eq!(header(sheet, "cookie").as_deref(), Some("k=v"));
        assert_eq!(header(font, "cookie"), None);
        assert_eq!(header(img, "cookie"), None);
        assert_eq!(
            header(sheet, "sec-fetch-site").as_deref(),
            Some("same-site")
        );
        assert_eq!(header(img, "sec-fetch-site").as_deref(), Some("cross-site"));
        // The font's referrer is its style sheet; the image's the page.
        assert_eq!(header(font, "referer").as_deref(), Some(sheet));
        assert_eq!(header(font, "origin").as_deref(), Some("https://a.test"));
        assert_eq!(header(img, "referer").as_deref(), Some("https://a.test/"));
    }
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

#[test]
fn the_pools_of_the_most_urgent_requests_dial_first() {
    // An async script (Low) found before a style sheet (VeryHigh), each on a host of its
    // own: with the browser model the style sheet's host is dialled first.
    let html = r#"<html><head><script async src="https://s.test/a.js"></script><link rel="stylesheet" href="https://c.test/s.css"></head><body></body></html>"#;
    let site = Site::new(&[
        ("/", ObjectType::Document, html, Discovery::Root),
        ("https://s.test/a.js", ObjectType::Script, "1", parsed(0)),
        (
            "https://c.test/s.css",
            ObjectType::Stylesheet,
            "p{}",
            parsed(0),
        ),
    ]);
    for (model, first) in [(true, "c.test"), (false, "s.test")] {
        let mut c = cfg(Proto::Http1);
        c.browser_model = model;
        let mut r = Run::new(&c, &site.archive, http1());
        r.run();
        let order: Vec<&str> = (r.dials.iter())
            .map(|(_, h)| h.as_str())
            .filter(|h| *h != "a.test")
            .collect();
        assert_eq!(order[0], first, "browser model {model}: {order:?}");
    }
}
