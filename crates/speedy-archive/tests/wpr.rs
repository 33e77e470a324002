//! Web Page Replay archives: a `.wprgo` written here from the format's definition (JSON
//! text of the test's own, base64 messages, gzip) imports with every object and every
//! body byte for byte; import → export → import gives the same archive; broken archives
//! are errors naming the file and the entry, never a panic.

mod common;
mod recorded_site;
use base64::Engine;
use common::*;
use recorded_site::*;
use speedy_archive::export_replay::export_wpr;
use speedy_archive::import::{detect, import_file, import_wpr, Format, ImportError, Imported};
use std::io::Write;
use std::path::Path;

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A JSON string literal (the URLs and hosts here need no escapes beyond these).
fn q(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The site as WPR's JSON, written as text: `Requests` host → URL → records, with a
/// record that failed (empty response), `Certs` and `NegotiatedProtocol`.
fn site_json() -> String {
    let xs = exchanges();
    let mut hosts: Vec<&str> = xs.iter().map(|x| x.host).collect();
    hosts.sort();
    hosts.dedup();
    let mut by_host = Vec::new();
    for h in &hosts {
        let mut urls = Vec::new();
        for x in xs.iter().filter(|x| x.host == *h) {
            urls.push(format!(
                "{}: [{{\"SerializedRequest\": {}, \"SerializedResponse\": {}}}]",
                q(x.url),
                q(&b64(&request_bytes(x))),
                q(&b64(&response_bytes(x)))
            ));
        }
        if *h == "www.example.test" {
            let req = b"GET /beacon HTTP/1.1\r\nHost: www.example.test\r\n\r\n";
            urls.push(format!(
                "\"https://www.example.test/beacon\": [{{\"SerializedRequest\": {}, \"SerializedResponse\": \"\"}}]",
                q(&b64(req))
            ));
        }
        by_host.push(format!("{}: {{{}}}", q(h), urls.join(",\n")));
    }
    format!(
        "{{\"Requests\": {{{}}},\n\"Certs\": {{\"www.example.test\": \"MIIBfakeDER\"}},\n\
         \"NegotiatedProtocol\": {{\"www.example.test\": \"h2\", \"static.example.test\": \"http/1.1\"}},\n\
         \"DeterministicTimeSeedMs\": 1700000000000}}",
        by_host.join(",\n")
    )
}

fn ok(r: Result<Imported, ImportError>) -> Imported {
    r.unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn another_programs_archive_imports_every_object_byte_for_byte() {
    let t = TempDir::new("wpr-import");
    let p = t.0.join("site.wprgo");
    std::fs::write(&p, gzip(site_json().as_bytes())).unwrap();
    assert_eq!(detect(&std::fs::read(&p).unwrap()), Format::Wpr);
    let im = ok(import_file(&p));
    let a = &im.archive;
    check_structure(a);
    check_site(a);
    assert_eq!(
        im.warnings,
        [
            "Requests[\"www.example.test\"][\"https://www.example.test/beacon\"][0]: no response recorded (the request failed); skipped"
        ]
    );
    assert!(
        a.source.contains("(WPR, 8 records, 4 hosts)"),
        "{}",
        a.source
    );
    let proto = |u: &str| {
        let o = a.objects.iter().find(|o| o.url == u).unwrap();
        o.recorded.as_ref().and_then(|r| r.protocol.clone())
    };
    assert_eq!(proto("https://www.example.test/").as_deref(), Some("h2"));
    assert_eq!(
        proto("https://www.example.test/app.js").as_deref(),
        Some("h2")
    );
    assert_eq!(
        proto("https://static.example.test/site.css").as_deref(),
        Some("http/1.1")
    );
    assert_eq!(proto("https://img.example.test/big.jpg"), None);
    // Uncompressed JSON is read too.
    let plain = t.0.join("site.json");
    std::fs::write(&plain, site_json()).unwrap();
    assert_eq!(detect(site_json().as_bytes()), Format::Wpr);
    let b = ok(import_file(&plain)).archive;
    assert_eq!(b.objects, a.objects);
}

#[test]
fn import_export_import_gives_the_same_archive() {
    let t = TempDir::new("wpr-round");
    let (arch, out) = (t.0.join("arch"), t.0.join("out.wprgo"));
    let first = ok(import_wpr(
        Path::new("site.wprgo"),
        &gzip(site_json().as_bytes()),
    ))
    .archive;
    first.save(&arch).unwrap();
    let w = export_wpr(&arch, &out).unwrap();
    assert_eq!((w.records, w.hosts), (7, 4));
    let data = std::fs::read(&out).unwrap();
    assert_eq!(&data[..2], &[0x1f, 0x8b], "gzip");
    let second = ok(import_file(&out));
    assert!(second.warnings.is_empty(), "{:?}", second.warnings);
    let second = second.archive;
    check_site(&second);
    assert_eq!(second.objects, first.objects);
    assert_eq!(second.pages, first.pages);
    for o in &first.objects {
        assert_eq!(second.body(o.id), first.body(o.id), "{}", o.url);
    }
    // The JSON has what WPR reads: Requests, Certs, NegotiatedProtocol.
    let mut json = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&data[..]), &mut json).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["NegotiatedProtocol"]["www.example.test"], "h2");
    assert_eq!(v["Certs"], serde_json::json!({}));
    let rec = &v["Requests"]["www.example.test"]["https://www.example.test/"][0];
    let req = base64::engine::general_purpose::STANDARD
        .decode(rec["SerializedRequest"].as_str().unwrap())
        .unwrap();
    assert!(
        req.starts_with(b"GET / HTTP/1.1\r\nhost: www.example.test\r\n"),
        "{}",
        String::from_utf8_lossy(&req)
    );
    let resp = base64::engine::general_purpose::STANDARD
        .decode(rec["SerializedResponse"].as_str().unwrap())
        .unwrap();
    let want = format!("content-length: {}\r\n\r\n{HTML}", HTML.len());
    assert!(resp.starts_with(b"HTTP/1.1 200 OK\r\n") && resp.ends_with(want.as_bytes()));
}

fn err_of(name: &str, data: &[u8]) -> String {
    let t = TempDir::new(&format!("wpr-bad-{}", name.replace('.', "-")));
    let p = t.0.join(name);
    std::fs::write(&p, data).unwrap();
    let e = match import_file(&p) {
        Ok(_) => panic!("{name}: imported a broken archive"),
        Err(e) => e.to_string(),
    };
    assert!(e.starts_with(&format!("{}: ", p.display())), "{e}");
    e
}

#[test]
fn broken_archives_name_the_file_and_entry() {
    let one = |resp: &str| {
        format!(
            "{{\"Requests\": {{\"a.test\": {{\"http://a.test/\": [{{\"SerializedRequest\": {}, \"SerializedResponse\": {resp}}}]}}}}}}",
            q(&b64(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"))
        )
    };
    let entry = "Requests[\"a.test\"][\"http://a.test/\"][0].SerializedResponse";
    let random: Vec<u8> = (0u32..3000)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let cases: Vec<(&str, Vec<u8>, String)> = vec![
        (
            "noise.wprgo",
            random.clone(),
            "neither a WARC nor a HAR file, nor a WPR archive".into(),
        ),
        (
            "gz-noise.wprgo",
            gzip(&random),
            "it is gzip data holding neither `WARC/` nor JSON".into(),
        ),
        (
            "cut.wprgo",
            gzip(site_json().as_bytes())[..500].to_vec(),
            "gzip: ".into(),
        ),
        (
            "notjson.wprgo",
            gzip(b"{\"Requests\": {\"a\": "),
            "not JSON: EOF while parsing".into(),
        ),
        (
            "norequests.wprgo",
            gzip(b"{\"Certs\": {}}"),
            "not a WPR archive: the JSON object has no `Requests`".into(),
        ),
        (
            "base64.wprgo",
            gzip(one("\"%%%\"").as_bytes()),
            format!("{entry}: invalid base64"),
        ),
        (
            "http.wprgo",
            gzip(one(&q(&b64(b"\x00\x01binary junk"))).as_bytes()),
            format!("{entry}: not an HTTP message (first line"),
        ),
        (
            "status.wprgo",
            gzip(one(&q(&b64(b"HTTP/1.1 2OO OK\r\n\r\n"))).as_bytes()),
            format!("{entry}: bad HTTP status line"),
        ),
        (
            "type.wprgo",
            gzip(one("42").as_bytes()),
            format!("{entry}: expected a base64 string, found a number"),
        ),
        (
            "array.wprgo",
            gzip(b"{\"Requests\": {\"a.test\": {\"http://a.test/\": {}}}}"),
            "Requests[\"a.test\"][\"http://a.test/\"]: expected an array, found an object".into(),
        ),
        (
            "proto.wprgo",
            gzip(br#"{"Requests": {}, "NegotiatedProtocol": {"a.test": 2}}"#),
            "NegotiatedProtocol[\"a.test\"]: expected a string, found a number".into(),
        ),
        (
            "empty.wprgo",
            gzip(b"{\"Requests\": {}}"),
            "no page could be imported".into(),
        ),
    ];
    for (name, data, want) in cases {
        let e = err_of(name, &data);
        assert!(e.contains(&want), "{name}: {e}\nwanted {want}");
    }
    // A request where the response should be.
    let e = err_of(
        "swap.wprgo",
        &gzip(one(&q(&b64(b"GET / HTTP/1.1\r\n\r\n"))).as_bytes()),
    );
    assert!(
        e.contains(&format!("{entry}: a request, not a response")),
        "{e}"
    );
}

#[test]
fn every_cut_of_an_archive_is_an_error_or_an_archive_never_a_panic() {
    let json = site_json();
    let gz = gzip(json.as_bytes());
    for cut in (0..gz.len()).step_by(gz.len() / 40).chain(0..300) {
        let _ = import_wpr(Path::new("cut.wprgo"), &gz[..cut]);
    }
    for cut in (0..json.len()).step_by(json.len() / 40).chain(0..300) {
        let _ = import_wpr(Path::new("cut.json"), &json.as_bytes()[..cut]);
    }
}
