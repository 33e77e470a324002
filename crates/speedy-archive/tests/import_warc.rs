//! Import of the WARC that GNU wget wrote (tests/data/wget.warc.gz, made by
//! tests/data-tools/make-warc.sh): bodies byte for byte, revisit records resolved to the
//! responses they repeat, gzip or not.

mod common;
use common::*;
use speedy_archive::import::{import_file, import_warc, Format};
use speedy_archive::warc;
use speedy_archive::Discovery;
use std::io::Read;

fn plain_warc() -> Vec<u8> {
    let gz = std::fs::read(data("wget.warc.gz")).unwrap();
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(&gz[..])
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[test]
fn wget_warc_bodies_are_the_files_byte_for_byte() {
    let im = import_file(&data("wget.warc.gz")).unwrap();
    let a = &im.archive;
    check_structure(a);
    assert!(im.warnings.is_empty(), "{:?}", im.warnings);
    assert_eq!(a.pages.len(), 2);
    // wget -p fetches requisites one level deep (not base.css's bg.gif) and runs no
    // script: late.gif and info.json were named on its command line.
    assert_eq!(
        paths(a, &a.pages[0]),
        [
            "css/base.css",
            "css/site.css",
            "data/info.json",
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
            "img/hero.gif",
            "img/logo.gif",
            "img/photo.gif",
            "page2.html"
        ]
    );
    for p in &a.pages {
        for &id in &p.objects {
            let o = &a.objects[id];
            let path = rel(&o.url);
            assert_eq!(o.status, 200, "{path}");
            assert_eq!(o.method, "GET");
            assert_eq!(&a.body(id)[..], &site_file(&path)[..], "{path}");
            // Request headers come from the request records.
            assert!(
                o.request_headers
                    .iter()
                    .any(|(n, v)| n == "user-agent" && v.starts_with("Wget/")),
                "{path}: {:?}",
                o.request_headers
            );
            assert!(o
                .response_headers
                .iter()
                .all(|(n, _)| n != "content-length"));
        }
    }
    // Parents from the bodies: parsers for HTML and CSS, the script for what it loads.
    let (p0, p1) = (&a.pages[0], &a.pages[1]);
    for (page, path, par) in [
        (p0, "css/site.css", "index.html"),
        (p0, "css/base.css", "css/site.css"),
        (p0, "img/hero.gif", "css/site.css"),
        (p1, "frame.html", "page2.html"),
        (p1, "img/photo.gif", "frame.html"),
        (p1, "img/hero.gif", "css/site.css"),
    ] {
        let o = obj(a, page, path);
        assert_eq!(parent(a, o).as_deref(), Some(par), "{path}");
        assert!(matches!(o.discovery, Discovery::Parsed { .. }), "{path}");
    }
    for path in ["img/late.gif", "data/info.json"] {
        let o = obj(a, p0, path);
        assert_eq!(parent(a, o).as_deref(), Some("js/app.js"), "{path}");
        assert!(matches!(o.discovery, Discovery::Computed { .. }), "{path}");
    }
}

#[test]
fn revisit_records_take_the_payload_of_the_record_they_refer_to() {
    let records = warc::parse(&plain_warc()).unwrap();
    let revisits: Vec<&warc::WarcRecord> =
        records.iter().filter(|r| r.kind() == "revisit").collect();
    let mut revisited: Vec<String> = revisits
        .iter()
        .map(|r| rel(r.target_uri().unwrap()))
        .collect();
    revisited.sort();
    assert_eq!(
        revisited,
        [
            "css/base.css",
            "css/site.css",
            "img/hero.gif",
            "img/logo.gif"
        ]
    );
    for r in &revisits {
        // wget's revisits hold the HTTP head only.
        let m = warc::parse_http(&r.block).unwrap();
        assert!(m.body.is_empty(), "{}", r.describe());
        assert!(r.field("WARC-Refers-To").is_some());
    }
    let a = import_file(&data("wget.warc.gz")).unwrap().archive;
    assert!(a.source.contains("4 revisits"), "{}", a.source);
    for path in revisited {
        let o = obj(&a, &a.pages[1], &path);
        assert_eq!(&a.body(o.id)[..], &site_file(&path)[..], "{path}");
        let first = obj(&a, &a.pages[0], &path);
        assert_eq!(
            o.body, first.body,
            "{path}: same stored body as the original"
        );
    }
}

#[test]
fn plain_and_gzip_warcs_give_the_same_archive() {
    let plain = plain_warc();
    let gz = std::fs::read(data("wget.warc.gz")).unwrap();
    assert_eq!(speedy_archive::import::detect(&plain), Format::Warc);
    assert_eq!(speedy_archive::import::detect(&gz), Format::Warc);
    let p = import_warc(std::path::Path::new("wget.warc"), &plain)
        .unwrap()
        .archive;
    let g = import_warc(std::path::Path::new("wget.warc"), &gz)
        .unwrap()
        .archive;
    assert_eq!(p.objects, g.objects);
    assert_eq!(p.pages, g.pages);
    assert_eq!(p.bodies, g.bodies);
    // And the whole file gzip-compressed as one member reads the same too.
    let mut one = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut one, &plain).unwrap();
    let one = import_warc(std::path::Path::new("one.warc.gz"), &one.finish().unwrap())
        .unwrap()
        .archive;
    assert_eq!(one.objects, p.objects);
}

#[test]
fn archives_save_and_load_unchanged() {
    let a = import_file(&data("wget.warc.gz")).unwrap().archive;
    let dir = TempDir::new("warc-save");
    a.save(&dir.0).unwrap();
    let b = speedy_archive::Archive::load(&dir.0).unwrap();
    assert_eq!(a.objects, b.objects);
    assert_eq!(a.pages, b.pages);
    assert_eq!(a.bodies, b.bodies);
    // The object list alone (what `speedy load` reads): the same pages and objects, no
    // bodies, and a damaged body goes unread where a whole load refuses it.
    let objects = speedy_archive::Archive::load_objects(&dir.0).unwrap();
    assert_eq!((&objects.objects, &objects.pages), (&a.objects, &a.pages));
    assert!(objects.bodies.is_empty() && !a.bodies.is_empty());
    let body = std::fs::read_dir(dir.0.join("bodies"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&body, b"damaged").unwrap();
    let e = speedy_archive::Archive::load(&dir.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not match its sha256"), "{e}");
    assert!(speedy_archive::Archive::load_objects(&dir.0).is_ok());
}
