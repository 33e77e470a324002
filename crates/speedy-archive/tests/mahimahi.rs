//! Mahimahi recordings: a folder written here byte by byte from the format's definition
//! (a protobuf writer of the test's own, not speedy's) imports with every object and every
//! body byte for byte; import → export → import gives the same archive; broken records
//! are errors naming the file, the field and the byte, never a panic.

mod common;
mod recorded_site;
use common::*;
use recorded_site::*;
use speedy_archive::export_replay::export_mahimahi;
use speedy_archive::import::{import_file, import_mahimahi, import_mahimahi_files};
use std::net::SocketAddr;
use std::path::Path;

// A protobuf writer of the test's own: varint keys, varint and length-delimited values.

fn varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn len_field(out: &mut Vec<u8>, number: u64, data: &[u8]) {
    varint(out, number << 3 | 2);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

fn varint_field(out: &mut Vec<u8>, number: u64, v: u64) {
    varint(out, number << 3);
    varint(out, v);
}

/// `HTTPMessage { first_line = 1, header = 2 {key = 1, value = 2}, body = 3 }`, with an
/// unknown fixed32 field (9) and an unknown varint field inside a header (7) that a
/// reader must skip.
fn http_message(first: &str, headers: &[(String, String)], body: &[u8]) -> Vec<u8> {
    let mut m = Vec::new();
    len_field(&mut m, 1, first.as_bytes());
    for (k, v) in headers {
        let mut hdr = Vec::new();
        len_field(&mut hdr, 1, k.as_bytes());
        varint_field(&mut hdr, 7, 12345);
        len_field(&mut hdr, 2, v.as_bytes());
        len_field(&mut m, 2, &hdr);
    }
    varint(&mut m, 9 << 3 | 5);
    m.extend_from_slice(&[1, 2, 3, 4]);
    len_field(&mut m, 3, body);
    m
}

/// The `RequestResponse` bytes of an exchange (scheme enum HTTP = 1, HTTPS = 2).
fn record(x: &Exchange) -> Vec<u8> {
    let mut req_headers = vec![("Host".to_string(), x.host.to_string())];
    req_headers.extend(
        x.request_headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string())),
    );
    let mut out = Vec::new();
    len_field(&mut out, 1, x.ip.as_bytes());
    varint_field(&mut out, 2, u64::from(x.port));
    varint_field(&mut out, 3, if x.scheme == "https" { 2 } else { 1 });
    len_field(
        &mut out,
        4,
        &http_message(x.request_line, &req_headers, b""),
    );
    len_field(
        &mut out,
        5,
        &http_message(x.status_line, &x.response_headers, &x.wire_body),
    );
    out
}

/// Writes the site as a Mahimahi folder, under names that sort in no useful order.
fn write_site(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let names = [
        "save.Qk3x9A",
        "save.0pZr1c",
        "save.zz81Lm",
        "save.B7yTq2",
        "save.mN4e0P",
        "save.4hJd8s",
        "save.aa19Kf",
    ];
    for (x, name) in exchanges().iter().zip(names) {
        std::fs::write(dir.join(name), record(x)).unwrap();
    }
}

#[test]
fn another_programs_folder_imports_every_object_byte_for_byte() {
    let t = TempDir::new("mm-import");
    let dir = t.0.join("www.example.test");
    write_site(&dir);
    let im = import_file(&dir).unwrap();
    assert!(im.warnings.is_empty(), "{:?}", im.warnings);
    let a = &im.archive;
    check_structure(a);
    check_site(a);
    assert!(a.source.contains("Mahimahi, 7 records"), "{}", a.source);
    for x in exchanges() {
        let o = a.objects.iter().find(|o| o.url == x.url).unwrap();
        let want: SocketAddr = format!("{}:{}", x.ip, x.port).parse().unwrap();
        assert_eq!(
            o.recorded.as_ref().and_then(|r| r.addr),
            Some(want),
            "{}",
            x.url
        );
    }
    // The style sheet's background was found in its gzip-decoded body.
    assert_eq!(im.sources.get("body"), Some(&5), "{:?}", im.sources);
    assert_eq!(im.sources.get("redirect"), Some(&1), "{:?}", im.sources);
}

#[test]
fn a_recording_in_memory_imports_as_its_folder_does() {
    let t = TempDir::new("mm-memory");
    let dir = t.0.join("www.example.test");
    write_site(&dir);
    let from_disk = import_mahimahi(&dir).unwrap();
    let files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    let in_memory = import_mahimahi_files(&dir, files).unwrap();
    assert_eq!(in_memory.archive.source, from_disk.archive.source);
    assert_eq!(in_memory.archive.objects, from_disk.archive.objects);
    assert_eq!(in_memory.archive.pages, from_disk.archive.pages);
    assert_eq!(in_memory.warnings, from_disk.warnings);
    let e = import_mahimahi_files(&dir, Vec::new())
        .unwrap_err()
        .to_string();
    assert!(e.contains("without files"), "{e}");
}

#[test]
fn import_export_import_gives_the_same_archive() {
    let t = TempDir::new("mm-round");
    let (rec, arch, out, again) = (
        t.0.join("rec"),
        t.0.join("arch"),
        t.0.join("out"),
        t.0.join("again"),
    );
    write_site(&rec);
    let first = import_mahimahi(&rec).unwrap().archive;
    first.save(&arch).unwrap();
    let w = export_mahimahi(&arch, &out).unwrap();
    assert_eq!((w.records, w.hosts), (7, 4));
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| n.starts_with("save.")), "{names:?}");
    let second = import_mahimahi(&out).unwrap();
    assert!(second.warnings.is_empty(), "{:?}", second.warnings);
    let second = second.archive;
    check_site(&second);
    assert_eq!(second.objects, first.objects);
    assert_eq!(second.pages, first.pages);
    for o in &first.objects {
        assert_eq!(second.body(o.id), first.body(o.id), "{}", o.url);
    }
    // A second export of it is the same files, byte for byte.
    second.save(&again).unwrap();
    let out2 = t.0.join("out2");
    export_mahimahi(&again, &out2).unwrap();
    for n in &names {
        assert_eq!(
            std::fs::read(out.join(n)).unwrap(),
            std::fs::read(out2.join(n)).unwrap(),
            "{n}"
        );
    }
    // The export refuses a folder that already holds files.
    let e = export_mahimahi(&arch, &out).unwrap_err().to_string();
    assert!(e.contains("not empty"), "{e}");
}

#[test]
fn synthetic_archives_export_with_made_up_addresses() {
    let t = TempDir::new("mm-synth");
    let a = speedy_archive::synth::synthesize(speedy_archive::synth::SynthOptions {
        pages: 2,
        seed: 5,
    });
    a.save(&t.0.join("a")).unwrap();
    export_mahimahi(&t.0.join("a"), &t.0.join("mm")).unwrap();
    let b = import_mahimahi(&t.0.join("mm")).unwrap().archive;
    check_structure(&b);
    assert_eq!(b.objects.len(), a.objects.len());
    for o in &a.objects {
        let got = b
            .objects
            .iter()
            .find(|x| x.url == o.url && x.method == o.method)
            .unwrap();
        assert_eq!(b.body(got.id), a.body(o.id), "{}", o.url);
        assert_eq!(got.status, o.status);
        let addr = got.recorded.as_ref().and_then(|r| r.addr).unwrap();
        assert!(addr.to_string().starts_with("10."), "{addr}");
        let port = if o.url.starts_with("https:") { 443 } else { 80 };
        assert_eq!(addr.port(), port);
    }
}

fn err_of(dir: &Path) -> String {
    match import_mahimahi(dir) {
        Ok(_) => panic!("imported a broken recording"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn broken_records_name_the_file_field_and_byte() {
    let t = TempDir::new("mm-bad");
    let good = record(&exchanges()[2]);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        // Cut in the middle of the response: the response's length runs past the end.
        (
            "save.cut",
            good[..good.len() - 100].to_vec(),
            "response: truncated field (length-delimited value of",
        ),
        // A port varint of 11 bytes.
        (
            "save.long",
            {
                let mut v = vec![2 << 3];
                v.extend_from_slice(&[0x80; 10]);
                v.push(0);
                v
            },
            "port: varint longer than 10 bytes at byte 1",
        ),
        // A header whose value's length runs past the header.
        (
            "save.hdr",
            {
                let mut hdr = Vec::new();
                len_field(&mut hdr, 1, b"Content-Type");
                hdr.extend_from_slice(&[2 << 3 | 2, 50, b't']);
                let mut m = Vec::new();
                len_field(&mut m, 1, b"HTTP/1.1 200 OK");
                len_field(&mut m, 2, b"");
                len_field(&mut m, 2, b"");
                len_field(&mut m, 2, b"");
                len_field(&mut m, 2, &hdr);
                let mut out = Vec::new();
                len_field(&mut out, 4, &http_message("GET / HTTP/1.1", &[], b""));
                len_field(&mut out, 5, &m);
                out
            },
            "response.header[3].value: truncated field (length-delimited value of 50 bytes, 1 left) at byte 66",
        ),
        // A length of 2^62 bytes.
        (
            "save.huge",
            {
                let mut v = vec![1 << 3 | 2];
                varint(&mut v, 1 << 62);
                v.push(b'x');
                v
            },
            "ip: truncated field (length-delimited value of 4611686018427387904 bytes, 1 left) at byte 0",
        ),
        // Field 4 as a varint.
        (
            "save.type",
            vec![4 << 3, 1],
            "request: field 4 has wire type 0 (varint), expected 2",
        ),
        // No request at all.
        ("save.empty", Vec::new(), "request: missing (field 4)"),
        // A request line that is not one.
        (
            "save.line",
            {
                let mut out = Vec::new();
                len_field(&mut out, 4, &http_message("hello", &[], b""));
                len_field(&mut out, 5, &http_message("HTTP/1.1 200 OK", &[], b""));
                out
            },
            "request.first_line: not an HTTP message (first line \"hello\")",
        ),
        // A status line that is not one.
        (
            "save.status",
            {
                let mut out = Vec::new();
                len_field(
                    &mut out,
                    4,
                    &http_message("GET / HTTP/1.1", &[("Host".into(), "a.test".into())], b""),
                );
                len_field(&mut out, 5, &http_message("HTTP/1.1 abc", &[], b""));
                out
            },
            "response.first_line: bad HTTP status line",
        ),
    ];
    for (name, bytes, want) in cases {
        let dir = t.0.join(name.replace('.', "-"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), &bytes).unwrap();
        let e = err_of(&dir);
        let file = dir.join(name).display().to_string();
        assert!(e.starts_with(&format!("{file}: ")), "{e}");
        assert!(e.contains(want), "{e}\nwanted {want}");
    }
    // An empty folder.
    let empty = t.0.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert!(err_of(&empty).contains("a directory without files"));
}

#[test]
fn every_cut_of_a_record_is_an_error_or_a_record_never_a_panic() {
    let t = TempDir::new("mm-cuts");
    let xs = exchanges();
    let good = record(&xs[4]);
    for cut in 0..good.len() {
        let dir = t.0.join(format!("c{cut}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("save.x"), &good[..cut]).unwrap();
        let _ = import_mahimahi(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
    }
    // Bytes flipped one at a time in a shorter record.
    let small = record(&xs[1]);
    for i in 0..small.len() {
        for flip in [0x80u8, 0xff, 0x07] {
            let mut b = small.clone();
            b[i] ^= flip;
            let _ = speedy_archive::mahimahi::decode(&b);
        }
    }
}

#[test]
fn a_recording_is_told_by_being_a_directory_and_skips_what_is_not_a_record() {
    let t = TempDir::new("mm-detect");
    let dir = t.0.join("rec");
    write_site(&dir);
    std::fs::write(dir.join(".DS_Store"), b"junk").unwrap();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    // A record whose response is missing (the request failed when recorded).
    let mut failed = Vec::new();
    len_field(
        &mut failed,
        4,
        &http_message(
            "GET /gone HTTP/1.1",
            &[("Host".into(), "www.example.test".into())],
            b"",
        ),
    );
    std::fs::write(dir.join("save.failed"), failed).unwrap();
    // A BulkMessage (field 2: repeated HTTPMessage).
    let mut bulk = Vec::new();
    len_field(&mut bulk, 2, &http_message("HTTP/1.1 200 OK", &[], b"x"));
    len_field(&mut bulk, 2, &http_message("HTTP/1.1 200 OK", &[], b"y"));
    std::fs::write(dir.join("save.bulk"), bulk).unwrap();
    let im = import_file(&dir).unwrap();
    check_site(&im.archive);
    let w = im.warnings.join("\n");
    assert!(w.contains(".DS_Store: a hidden file; skipped"), "{w}");
    assert!(w.contains("sub: not a regular file; skipped"), "{w}");
    assert!(
        w.contains("save.failed: no response recorded; skipped"),
        "{w}"
    );
}
