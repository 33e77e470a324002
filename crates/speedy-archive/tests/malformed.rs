//! Bad input: a malformed HAR, WARC or archive gets an error that names the file and the
//! entry, never a panic.

mod common;
use common::*;
use speedy_archive::export::export_har;
use speedy_archive::import::{import_file, import_har, import_warc, ImportError};
use speedy_archive::warc;
use std::io::Read;
use std::path::Path;

fn err_of(r: Result<speedy_archive::import::Imported, ImportError>) -> String {
    match r {
        Ok(_) => panic!("imported a malformed file"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn malformed_har_files_name_the_file_and_entry() {
    for (file, want) in [
        (
            "bad-content.har",
            "bad-content.har: entries[2].response.content: expected an object, found a string",
        ),
        (
            "bad-date.har",
            "bad-date.har: entries[1].startedDateTime: not an ISO 8601 date: \"yesterday\"",
        ),
        (
            "truncated.har",
            "truncated.har: not JSON: EOF while parsing",
        ),
    ] {
        let e = err_of(import_file(&data(file)));
        assert!(e.contains(want), "{e}\nwanted {want}");
        assert!(e.starts_with(&data(file).display().to_string()), "{e}");
    }
}

fn chromium() -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(data("chromium.har")).unwrap()).unwrap()
}

fn import_value(v: &serde_json::Value) -> Result<speedy_archive::import::Imported, ImportError> {
    import_har(Path::new("page.har"), v.to_string().as_bytes())
}

#[test]
fn broken_fields_of_a_real_har_are_named() {
    type Breaker = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(Breaker, &str)> = vec![
        (
            Box::new(|h| {
                h["log"]["entries"][12]["response"]["content"]["text"] = "%%%not base64".into()
            }),
            "page.har: entries[12].response.content.text: invalid base64",
        ),
        (
            Box::new(|h| {
                h["log"]["entries"][12]["response"]["content"]["encoding"] = "rot13".into()
            }),
            "page.har: entries[12].response.content.encoding: unknown encoding \"rot13\"",
        ),
        (
            Box::new(|h| h["log"]["entries"][4]["pageref"] = "page_9".into()),
            "page.har: entries[4].pageref: \"page_9\" names no page of log.pages",
        ),
        (
            Box::new(|h| h["log"]["entries"][3]["request"]["headers"][0] = "Host: x".into()),
            "page.har: entries[3].request.headers[0]: expected an object, found a string",
        ),
        (
            Box::new(|h| h["log"]["entries"][0]["response"]["status"] = 1000.into()),
            "page.har: entries[0].response.status: 1000 is not an HTTP status",
        ),
        (
            Box::new(|h| h["log"]["entries"][5]["timings"]["wait"] = "soon".into()),
            "page.har: entries[5].timings.wait: expected a number, found \"soon\"",
        ),
        (
            Box::new(|h| {
                h["log"]["entries"][7]["request"]
                    .as_object_mut()
                    .unwrap()
                    .remove("url");
            }),
            "page.har: entries[7].request: missing \"url\"",
        ),
        (
            Box::new(|h| h["log"]["entries"][2]["_priority"] = "Urgent".into()),
            "page.har: entries[2]._priority: \"Urgent\" is not a Chrome priority (VeryHigh, High, Medium, Low, VeryLow)",
        ),
        (
            Box::new(|h| h["log"]["pages"][1]["startedDateTime"] = "1 May".into()),
            "page.har: pages[1].startedDateTime: not an ISO 8601 date",
        ),
        (
            Box::new(|h| h["log"]["entries"] = serde_json::json!({})),
            "page.har: log.entries: expected an array, found an object",
        ),
        (
            Box::new(|h| {
                h.as_object_mut().unwrap().remove("log");
            }),
            "page.har: (top level): missing \"log\"",
        ),
        (
            Box::new(|h| h["log"]["entries"] = serde_json::json!([])),
            "page.har: no page could be imported",
        ),
    ];
    for (break_it, want) in cases {
        let mut h = chromium();
        break_it(&mut h);
        let e = err_of(import_value(&h));
        assert!(e.starts_with(want), "{e}\nwanted {want}");
    }
}

/// Every field of some entries replaced by values of every JSON type: the import either
/// works or names the entry; it never panics.
#[test]
fn any_wrong_type_anywhere_is_an_error_not_a_panic() {
    let fields: [&[&str]; 14] = [
        &["request"],
        &["request", "method"],
        &["request", "headers"],
        &["response"],
        &["response", "headers"],
        &["response", "content"],
        &["response", "content", "size"],
        &["response", "content", "mimeType"],
        &["response", "bodySize"],
        &["timings"],
        &["time"],
        &["_initiator"],
        &["_initiator_detail"],
        &["startedDateTime"],
    ];
    let values = [
        serde_json::json!(null),
        serde_json::json!(-7),
        serde_json::json!(1e300),
        serde_json::json!("x"),
        serde_json::json!([1]),
        serde_json::json!({"a": 1}),
        serde_json::json!(true),
    ];
    let base = chromium();
    for entry in [0usize, 3, 9, 16] {
        for f in fields {
            for v in &values {
                let mut h = base.clone();
                let mut slot = &mut h["log"]["entries"][entry];
                for k in f {
                    slot = &mut slot[*k];
                }
                *slot = v.clone();
                if let Err(e) = import_value(&h) {
                    let e = e.to_string();
                    assert!(
                        e.starts_with(&format!("page.har: entries[{entry}]")),
                        "{f:?} = {v}: {e}"
                    );
                }
            }
        }
    }
    // Cut anywhere: an error.
    let text = base.to_string();
    for k in 1..40 {
        let cut = &text.as_bytes()[..text.len() * k / 40];
        assert!(import_har(Path::new("cut.har"), cut).is_err());
    }
}

fn plain_warc() -> Vec<u8> {
    let gz = std::fs::read(data("wget.warc.gz")).unwrap();
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(&gz[..])
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn serialize(records: &[&warc::WarcRecord]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        out.extend_from_slice(r.version.as_bytes());
        out.extend_from_slice(b"\r\n");
        for (n, v) in &r.fields {
            out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&r.block);
        out.extend_from_slice(b"\r\n\r\n");
    }
    out
}

#[test]
fn malformed_warc_files_name_the_record() {
    let plain = plain_warc();
    let path = Path::new("crawl.warc");
    let records = warc::parse(&plain).unwrap();
    // Cut in the middle of a record's block, and of its header.
    let e = err_of(import_warc(path, &plain[..records[6].offset - 10]));
    assert!(
        e.starts_with(&format!(
            "crawl.warc: record 5 at byte {}: Content-Length ",
            records[5].offset
        )),
        "{e}"
    );
    assert!(e.contains("runs past the end of the file"), "{e}");
    let e = err_of(import_warc(path, &plain[..records[6].offset + 30]));
    assert_eq!(
        e,
        format!(
            "crawl.warc: record 6 at byte {}: the header block does not end (no blank line)",
            records[6].offset
        )
    );
    // Garbage between records.
    let mut bad = serialize(&records.iter().take(3).collect::<Vec<_>>());
    let at = bad.len();
    bad.extend_from_slice(b"HTTP/1.1 200 OK\r\n\r\n");
    bad.extend_from_slice(&serialize(&records.iter().skip(3).collect::<Vec<_>>()));
    let e = err_of(import_warc(path, &bad));
    assert_eq!(
        e,
        format!("crawl.warc: record 3 at byte {at}: expected a \"WARC/\" version line, found \"HTTP/1.1 200 OK\\r\\n\\r\\nW\"")
    );
    // A revisit whose original is not in the file.
    let original = records
        .iter()
        .find(|r| r.kind() == "response" && r.target_uri().unwrap().ends_with("/css/site.css"))
        .unwrap();
    let without: Vec<&warc::WarcRecord> = records
        .iter()
        .filter(|r| r.index != original.index)
        .collect();
    let e = err_of(import_warc(path, &serialize(&without)));
    let revisit_index = without
        .iter()
        .position(|r| r.kind() == "revisit" && r.target_uri().unwrap().ends_with("/css/site.css"))
        .unwrap();
    assert!(
        e.starts_with(&format!(
            "crawl.warc: record {revisit_index} (revisit http://"
        )),
        "{e}"
    );
    assert!(
        e.contains(&format!(
            "revisit of record {}",
            original.record_id().unwrap()
        )),
        "{e}"
    );
    assert!(e.ends_with("which is not in this file"), "{e}");
    // A response record that does not hold an HTTP response.
    let mut broken: Vec<warc::WarcRecord> = records.clone();
    let k = broken.iter().position(|r| r.kind() == "response").unwrap();
    broken[k].block = bytes::Bytes::from_static(b"hello");
    for f in broken[k].fields.iter_mut() {
        if f.0.eq_ignore_ascii_case("Content-Length") {
            f.1 = "5".into();
        }
    }
    let e = err_of(import_warc(
        path,
        &serialize(&broken.iter().collect::<Vec<_>>()),
    ));
    assert!(
        e.starts_with(&format!("crawl.warc: record {k} (response http://")),
        "{e}"
    );
    assert!(e.contains("not an HTTP message"), "{e}");
    // A gzip member cut short.
    let gz = std::fs::read(data("wget.warc.gz")).unwrap();
    let e = err_of(import_warc(
        Path::new("crawl.warc.gz"),
        &gz[..gz.len() - 100],
    ));
    assert!(e.starts_with("crawl.warc.gz: "), "{e}");
}

/// Cut or corrupted anywhere, a WARC gives an error or an archive, never a panic.
#[test]
fn damaged_warcs_never_panic() {
    let plain = plain_warc();
    for k in 1..60 {
        let _ = import_warc(Path::new("x.warc"), &plain[..plain.len() * k / 60]);
    }
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..300 {
        let mut b = plain.clone();
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x % b.len() as u64) as usize;
            b[i] = (x >> 32) as u8;
        }
        if let Err(e) = import_warc(Path::new("x.warc"), &b) {
            assert!(e.to_string().starts_with("x.warc: "), "{e}");
        }
    }
    let gz = std::fs::read(data("wget.warc.gz")).unwrap();
    for k in 1..30 {
        let mut b = gz.clone();
        let i = b.len() * k / 30;
        b[i] ^= 0x55;
        let _ = import_warc(Path::new("x.warc.gz"), &b);
    }
}

#[test]
fn malformed_archives_are_named_by_export() {
    let good = import_file(&data("wget.warc.gz")).unwrap().archive;
    let dir = TempDir::new("bad-archive");
    let out = dir.0.join("out.har");
    // Not JSON.
    std::fs::write(dir.0.join("archive.json"), "{").unwrap();
    let e = export_har(&dir.0, &out).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "{}: not a speedy archive",
            dir.0.join("archive.json").display()
        )),
        "{e}"
    );
    // A parent that does not exist.
    let mut a = good.clone();
    a.objects[3].discovery = speedy_archive::Discovery::Computed {
        parent: 99,
        after_ms: 0,
    };
    a.save(&dir.0).unwrap();
    let e = export_har(&dir.0, &out).unwrap_err().to_string();
    assert!(e.contains("archive.json: objects[3] ("), "{e}");
    assert!(e.contains("parent 99 does not exist"), "{e}");
    // A body file that is gone.
    std::fs::remove_dir_all(&dir.0).unwrap();
    good.save(&dir.0).unwrap();
    let speedy_archive::BodySource::Stored { sha256, .. } = &good.objects[0].body else {
        panic!()
    };
    std::fs::remove_file(dir.0.join("bodies").join(sha256)).unwrap();
    let e = export_har(&dir.0, &out).unwrap_err().to_string();
    assert!(e.contains(&format!("bodies/{sha256}")), "{e}");
    assert!(!out.exists());
}

/// Bodies made of the pieces HTML, CSS and script scanners trip on (unclosed quotes, tags
/// and comments, entities, non-ASCII, NUL): every import works and exports, never panics.
#[test]
fn bodies_of_any_shape_never_panic_the_scanners() {
    let toks = [
        "<",
        ">",
        "\"",
        "'",
        "=",
        "url(",
        "URL(",
        "@import",
        "/*",
        "*/",
        "//",
        "<script>",
        "</script>",
        "<style>",
        "</style",
        "&amp;",
        "&#x41;",
        "&#99999999;",
        "&",
        ";",
        "é",
        "\n",
        " ",
        "src",
        "href",
        "<img ",
        "<link rel=stylesheet ",
        "srcset",
        ",",
        "a.css",
        "../",
        "/x",
        "?",
        "#",
        "http://h/",
        "//",
        "<!--",
        "-->",
        "<base href=",
        "`",
        "\\",
        ")",
        "(",
        "<textarea>",
        "<!x",
        "<?",
        "</",
        "style=",
        "data:",
        "x:y",
        "\u{0}",
        "\r",
    ];
    let mut x = 0x9e3779b97f4a7c15u64;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..600 {
        let n = (rnd() % 60) as usize;
        let mut body = String::new();
        for _ in 0..n {
            body.push_str(toks[(rnd() % toks.len() as u64) as usize]);
        }
        for mime in ["text/html", "text/css", "application/javascript"] {
            let har = serde_json::json!({"log": {"entries": [
                {"startedDateTime": "2024-01-01T00:00:00Z", "request": {"method": "GET", "url": "http://h/p/"}, "response": {"status": 200, "content": {"mimeType": "text/html", "text": body.clone()}}},
                {"startedDateTime": "2024-01-01T00:00:01Z", "request": {"method": "GET", "url": "http://h/p/a.css"}, "response": {"status": 200, "content": {"mimeType": mime, "text": body.clone()}}},
                {"startedDateTime": "2024-01-01T00:00:02Z", "request": {"method": "GET", "url": "http://h/x"}, "response": {"status": 200, "content": {"mimeType": "image/gif", "size": 3}}},
            ]}});
            let r = import_har(Path::new("f.har"), har.to_string().as_bytes());
            let a = r.unwrap_or_else(|e| panic!("round {round}: {e}")).archive;
            a.validate().unwrap();
            let _ = speedy_archive::export::to_har(&a);
        }
    }
}

#[test]
fn random_bytes_say_what_was_expected() {
    let dir = std::env::temp_dir().join(format!("speedy-malformed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Bytes that are neither JSON nor WARC, plain and gzip-wrapped.
    let random: Vec<u8> = (0u32..4096)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &random).unwrap();
    for (name, bytes, what) in [
        ("random.warc", random.clone(), "it starts with bytes"),
        ("random.warc.gz", gz.finish().unwrap(), "gzip data"),
        ("empty.warc", Vec::new(), "the file is empty"),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, &bytes).unwrap();
        let e = err_of(import_file(&p));
        assert!(e.starts_with(&p.display().to_string()), "{e}");
        assert!(e.contains("neither a WARC nor a HAR"), "{e}");
        assert!(e.contains("WARC/1.0") && e.contains(what), "{e}");
        assert!(!e.contains("not JSON"), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
