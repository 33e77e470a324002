//! The hand-written HARs of tests/data (made by tests/data-tools/make-edge-hars.py): a HAR
//! with neither bodies nor initiators, base64 and content-encoded bodies, and HAR 1.1
//! without pages.

mod common;
use common::*;
use speedy_archive::import::import_file;
use speedy_archive::{BodySource, Discovery, ObjectType};
use std::io::Read;

fn parsed_at(d: &Discovery) -> Option<usize> {
    match d {
        Discovery::Parsed { offset, .. } => Some(*offset),
        _ => None,
    }
}

fn after(d: &Discovery) -> Option<u32> {
    match d {
        Discovery::Computed { after_ms, .. } => Some(*after_ms),
        _ => None,
    }
}

#[test]
fn timings_alone_give_parents_delays_and_think_times() {
    let im = import_file(&data("timings-only.har")).unwrap();
    let a = &im.archive;
    check_structure(a);
    assert!(im.warnings.is_empty(), "{:?}", im.warnings);
    assert_eq!(a.pages.len(), 1);
    let p = &a.pages[0];
    let by = |u: &str| {
        p.objects
            .iter()
            .map(|&i| &a.objects[i])
            .find(|o| o.url == u)
            .unwrap_or_else(|| panic!("{u}"))
    };
    let purl = |o: &speedy_archive::Object| o.discovery.parent().map(|x| a.objects[x].url.as_str());
    // The redirect is the root; the document it points to follows it 3 ms after it ends.
    let redirect = by("http://example.test/");
    assert_eq!((redirect.status, p.root), (301, redirect.id));
    let root = by("https://www.example.test/");
    assert_eq!(purl(root), Some("http://example.test/"));
    assert_eq!(after(&root.discovery), Some(3));
    // Requested while the root streamed in (first byte 145, end 245, 9000 bytes on the
    // wire): parsed 25% and 35% into it.
    let css = by("https://www.example.test/style.css");
    assert_eq!(purl(css), Some("https://www.example.test/"));
    assert_eq!(parsed_at(&css.discovery), Some(2250));
    assert_eq!(
        parsed_at(&by("https://www.example.test/app.js").discovery),
        Some(3150)
    );
    // 5 ms after the style sheet (HTML does not load fonts): from the style sheet.
    let font = by("https://www.example.test/font.woff2");
    assert_eq!(purl(font), Some("https://www.example.test/style.css"));
    // Right after the root ends: found at its end.
    for u in [
        "https://img.example.test/hero.jpg",
        "https://ads.example.net/ad.js",
    ] {
        assert_eq!(purl(by(u)), Some("https://www.example.test/"), "{u}");
        assert_eq!(parsed_at(&by(u).discovery), Some(9000), "{u}");
    }
    // Late ones: the latest script's compute, with the measured delay.
    let gif = by("https://ads.example.net/ad.gif");
    assert_eq!(
        (purl(gif), after(&gif.discovery)),
        (Some("https://ads.example.net/ad.js"), Some(65))
    );
    let json = by("https://www.example.test/api/data.json");
    assert_eq!(
        (purl(json), after(&json.discovery)),
        (Some("https://ads.example.net/ad.js"), Some(265))
    );
    assert_eq!(json.kind, ObjectType::Xhr);
    // Think time: the wait beyond the host's round trip (connect − ssl = 20 ms).
    assert_eq!(root.think_ms, 30);
    assert_eq!(by("https://img.example.test/hero.jpg").think_ms, 5);
    // No bodies: synthetic ones of the wire size; gzip is dropped with the recorded bytes,
    // as are content-length and hop-by-hop headers.
    assert_eq!(root.body, BodySource::Synthetic { size: 9000 });
    assert_eq!(root.content_encoding, None);
    let names: Vec<&str> = root
        .response_headers
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(names, ["content-type", "set-cookie"]);
    assert_eq!(
        redirect.response_headers,
        [(
            "location".to_string(),
            "https://www.example.test/".to_string()
        )]
    );
    assert_eq!(a.body(font.id).len(), 25000);
}

#[test]
fn base64_and_encoded_bodies_are_stored_as_the_wire_carried_them() {
    let im = import_file(&data("base64-bodies.har")).unwrap();
    let a = &im.archive;
    check_structure(a);
    assert!(im.warnings.is_empty(), "{:?}", im.warnings);
    let p = &a.pages[0];
    let gif = obj(a, p, "logo.gif");
    assert_eq!(&a.body(gif.id)[..], &site_file("img/logo.gif")[..]);
    assert_eq!(gif.body.size(), site_file("img/logo.gif").len());
    // Given gzip-encoded (base64 of the gzip bytes): kept byte for byte, encoding kept.
    let css = obj(a, p, "style.css");
    assert_eq!(css.content_encoding.as_deref(), Some("gzip"));
    let har: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data("base64-bodies.har")).unwrap()).unwrap();
    let b64 = har["log"]["entries"][1]["response"]["content"]["text"]
        .as_str()
        .unwrap();
    use base64::Engine;
    let given = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    assert_eq!(&a.body(css.id)[..], &given[..]);
    // Given decoded with content-encoding gzip: stored gzip-encoded again.
    let js = obj(a, p, "app.js");
    assert_eq!(js.content_encoding.as_deref(), Some("gzip"));
    let mut plain = String::new();
    flate2::read::GzDecoder::new(&a.body(js.id)[..])
        .read_to_string(&mut plain)
        .unwrap();
    assert_eq!(plain, "document.title='base64 fixture';\n");
    assert!(js
        .response_headers
        .contains(&("content-encoding".into(), "gzip".into())));
    // References are found in the bodies (the gzip one decoded).
    for path in ["style.css", "app.js", "logo.gif"] {
        assert_eq!(parent(a, obj(a, p, path)).as_deref(), Some(""), "{path}");
    }
    assert_eq!(im.sources.get("body"), Some(&3));
}

#[test]
fn har_1_1_without_pages_is_split_at_each_navigation() {
    let im = import_file(&data("har11-no-pages.har")).unwrap();
    let a = &im.archive;
    check_structure(a);
    assert_eq!(a.pages.len(), 2, "{:?}", a.pages);
    assert_eq!(paths(a, &a.pages[0]), ["a.css", "a.html", "frame.html"]);
    assert_eq!(paths(a, &a.pages[1]), ["b.html", "b.png"]);
    assert_eq!(
        parent(a, obj(a, &a.pages[0], "frame.html")).as_deref(),
        Some("a.html")
    );
    assert_eq!(
        parent(a, obj(a, &a.pages[1], "b.png")).as_deref(),
        Some("b.html")
    );
    // The data: URL and the request without a response are skipped, and said so.
    assert_eq!(im.warnings.len(), 2, "{:?}", im.warnings);
    assert!(im
        .warnings
        .iter()
        .any(|w| w.starts_with("entries[3]: data:")));
    assert!(im
        .warnings
        .iter()
        .any(|w| w.starts_with("entries[4]: no response")));
    assert!(a.source.contains("HAR 1.1"), "{}", a.source);
}
