//! Import of the HAR that headless Chromium recorded (tests/data/chromium.har, made by
//! tests/data-tools/capture-har.mjs with chrome-har): pages, objects, bodies and parents
//! are checked against what the fixture site really references.

mod common;
use common::*;
use speedy_archive::import::{import_file, import_har};
use speedy_archive::{Discovery, ObjectType};

/// (path, parent path, parsed?, minimum compute delay) of what each page really loads.
type Expect = (&'static str, &'static str, bool, u32);

/// Page 1: index.html links site.css (which @imports base.css and sets hero.gif), app.js
/// (which makes late.gif after 150 ms and fetches info.json after 300 ms) and logo.gif;
/// base.css sets bg.gif. Chromium also asks for favicon.ico on its own (a 404).
const PAGE1: [Expect; 8] = [
    ("css/site.css", "index.html", true, 0),
    ("js/app.js", "index.html", true, 0),
    ("img/logo.gif", "index.html", true, 0),
    ("css/base.css", "css/site.css", true, 0),
    ("img/hero.gif", "css/site.css", true, 0),
    ("img/bg.gif", "css/base.css", true, 0),
    ("img/late.gif", "js/app.js", false, 150),
    ("data/info.json", "js/app.js", false, 300),
];

/// Page 2: page2.html links site.css and logo.gif and frames frame.html, which shows
/// photo.gif; no .hero element, so no hero.gif.
const PAGE2: [Expect; 6] = [
    ("css/site.css", "page2.html", true, 0),
    ("img/logo.gif", "page2.html", true, 0),
    ("frame.html", "page2.html", true, 0),
    ("css/base.css", "css/site.css", true, 0),
    ("img/bg.gif", "css/base.css", true, 0),
    ("img/photo.gif", "frame.html", true, 0),
];

fn check_page(a: &speedy_archive::Archive, page: usize, root: &str, expect: &[Expect]) {
    let p = &a.pages[page];
    assert_eq!(rel(&a.objects[p.root].url), root);
    for &(path, par, parsed, min_ms) in expect {
        let o = obj(a, p, path);
        assert_eq!(parent(a, o).as_deref(), Some(par), "{path} of {root}");
        match o.discovery {
            Discovery::Parsed { parent, offset } => {
                assert!(parsed, "{path}: parsed, expected computed");
                // The reference ends at the offset: the parent's text up to it names the child.
                let body = a.body(parent);
                let upto = String::from_utf8_lossy(&body[..offset]);
                let name = path.rsplit('/').next().unwrap();
                let tail = &upto[upto.len().saturating_sub(60)..];
                assert!(tail.contains(name), "{path}: ...{tail:?} at {offset}");
            }
            Discovery::Computed { after_ms, .. } => {
                assert!(!parsed, "{path}: computed, expected parsed");
                assert!(after_ms >= min_ms, "{path}: after {after_ms} ms < {min_ms}");
                assert!(after_ms < min_ms + 1000, "{path}: after {after_ms} ms");
            }
            Discovery::Root => panic!("{path} is a root"),
        }
    }
}

#[test]
fn chromium_har_gives_the_pages_objects_bodies_and_parents_the_site_has() {
    let im = import_file(&data("chromium.har")).unwrap();
    let a = &im.archive;
    check_structure(a);
    assert!(im.warnings.is_empty(), "{:?}", im.warnings);
    assert_eq!(a.pages.len(), 2);
    assert_eq!(
        paths(a, &a.pages[0]),
        [
            "css/base.css",
            "css/site.css",
            "data/info.json",
            "favicon.ico",
            "img/bg.gif",
            "img/hero.gif",
            "img/late.gif",
            "img/logo.gif",
            "index.html",
            "js/app.js"
        ]
    );
    assert_eq!(
        paths(a, &a.pages[1]),
        [
            "css/base.css",
            "css/site.css",
            "frame.html",
            "img/bg.gif",
            "img/logo.gif",
            "img/photo.gif",
            "page2.html"
        ]
    );
    check_page(a, 0, "index.html", &PAGE1);
    check_page(a, 1, "page2.html", &PAGE2);
    // Bodies are the files the server sent, byte for byte (base64 ones included).
    for p in &a.pages {
        for &id in &p.objects {
            let o = &a.objects[id];
            let path = rel(&o.url);
            if path == "favicon.ico" {
                assert_eq!(o.status, 404);
                continue;
            }
            assert_eq!(o.status, 200, "{path}");
            assert_eq!(&a.body(id)[..], &site_file(&path)[..], "{path}");
            assert_eq!(o.body.size(), site_file(&path).len(), "{path}");
        }
    }
    // Types from Chrome's _resourceType, headers cleaned.
    let p0 = &a.pages[0];
    assert_eq!(obj(a, p0, "data/info.json").kind, ObjectType::Xhr);
    assert_eq!(obj(a, p0, "img/late.gif").kind, ObjectType::Image);
    assert_eq!(obj(a, p0, "css/base.css").content_type, "text/css");
    for o in &a.objects {
        for (n, _) in o.response_headers.iter().chain(&o.request_headers) {
            assert_eq!(n, &n.to_ascii_lowercase());
            assert!(
                !["content-length", "connection", "host"].contains(&n.as_str()),
                "{n}"
            );
        }
        let ua = o
            .request_headers
            .iter()
            .filter(|(n, _)| n == "user-agent")
            .count();
        assert_eq!(ua, 1, "{}: Chrome's doubled headers are merged", o.url);
    }
    assert_eq!(im.sources.get("initiator"), Some(&13));
    // Chrome's _priority is kept, and exported again.
    assert_eq!(
        obj(a, p0, "index.html").priority.as_deref(),
        Some("VeryHigh")
    );
    assert_eq!(
        obj(a, p0, "css/site.css").priority.as_deref(),
        Some("VeryHigh")
    );
    assert_eq!(obj(a, p0, "js/app.js").priority.as_deref(), Some("High"));
    assert_eq!(obj(a, p0, "img/logo.gif").priority.as_deref(), Some("Low"));
    let text = serde_json::to_string(&speedy_archive::export::to_har(a)).unwrap();
    assert_eq!(
        text.matches("\"_priority\":\"VeryHigh\"").count(),
        a.objects
            .iter()
            .filter(|o| o.priority.as_deref() == Some("VeryHigh"))
            .count()
    );
}

/// The same HAR without bodies keeps its initiators: parents are unchanged, objects are
/// synthetic of the recorded size.
#[test]
fn without_bodies_the_initiators_still_give_the_parents() {
    let mut har: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data("chromium.har")).unwrap()).unwrap();
    for e in har["log"]["entries"].as_array_mut().unwrap() {
        let c = e["response"]["content"].as_object_mut().unwrap();
        c.remove("text");
        c.remove("encoding");
    }
    let im = import_har(
        std::path::Path::new("nobodies.har"),
        har.to_string().as_bytes(),
    )
    .unwrap();
    let a = &im.archive;
    check_structure(a);
    assert!(a.bodies.is_empty());
    for (i, exp) in [&PAGE1[..], &PAGE2[..]].iter().enumerate() {
        for &(path, par, _, _) in exp.iter() {
            // late.gif has no usable initiator (Chromium says "other"): timings decide.
            if path == "img/late.gif" {
                continue;
            }
            let o = obj(a, &a.pages[i], path);
            assert_eq!(parent(a, o).as_deref(), Some(par), "{path}");
        }
    }
    let late = obj(a, &a.pages[0], "img/late.gif");
    assert!(
        matches!(late.discovery, Discovery::Computed { after_ms, .. } if after_ms >= 150),
        "{:?}",
        late.discovery
    );
}

/// Neither bodies nor initiators, as many HARs are: parents and delays come from the
/// timings. What timing alone can tell is checked: documents' direct children, the frame's
/// image, and the script-initiated objects with their compute delays.
#[test]
fn without_bodies_or_initiators_the_timings_give_parents_and_delays() {
    let mut har: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data("chromium.har")).unwrap()).unwrap();
    for e in har["log"]["entries"].as_array_mut().unwrap() {
        e.as_object_mut()
            .unwrap()
            .retain(|k, _| !k.starts_with("_initiator"));
        e["response"]["content"]
            .as_object_mut()
            .unwrap()
            .remove("text");
    }
    let im = import_har(std::path::Path::new("bare.har"), har.to_string().as_bytes()).unwrap();
    let a = &im.archive;
    check_structure(a);
    assert_eq!(im.sources.get("timings"), Some(&15), "{:?}", im.sources);
    let (p0, p1) = (&a.pages[0], &a.pages[1]);
    for path in ["css/site.css", "js/app.js"] {
        let o = obj(a, p0, path);
        assert_eq!(parent(a, o).as_deref(), Some("index.html"), "{path}");
        assert!(matches!(o.discovery, Discovery::Parsed { .. }), "{path}");
    }
    for path in ["css/site.css", "img/logo.gif", "frame.html"] {
        assert_eq!(
            parent(a, obj(a, p1, path)).as_deref(),
            Some("page2.html"),
            "{path}"
        );
    }
    assert_eq!(
        parent(a, obj(a, p1, "img/photo.gif")).as_deref(),
        Some("frame.html")
    );
    assert_eq!(
        parent(a, obj(a, p1, "css/base.css")).as_deref(),
        Some("css/site.css")
    );
    for (path, min) in [("img/late.gif", 150), ("data/info.json", 300)] {
        let o = obj(a, p0, path);
        assert_eq!(parent(a, o).as_deref(), Some("js/app.js"), "{path}");
        match o.discovery {
            Discovery::Computed { after_ms, .. } => {
                assert!((min..min + 500).contains(&after_ms), "{path}: {after_ms}")
            }
            ref d => panic!("{path}: {d:?}"),
        }
    }
    // Every inferred parent can reference its child and started before it.
    for o in &a.objects {
        if let Some(p) = o.discovery.parent() {
            let pk = a.objects[p].kind;
            assert!(
                matches!(
                    pk,
                    ObjectType::Document | ObjectType::Stylesheet | ObjectType::Script
                ),
                "{} from a {pk:?}",
                o.url
            );
        }
    }
}
