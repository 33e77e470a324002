//! Harnesses for the page-archive importers of `speedy-archive`: files people download
//! from elsewhere. Every importer takes a path for its messages and the bytes; a fixed
//! fake path is passed. Whatever the bytes, an import is an archive or an error, never a
//! panic; an archive it makes is consistent ([`Archive::validate`]), and what the
//! exporters make of it reads back (see [`check_imported`]).

use crate::Input;
use speedy_archive::import::{self, ImportError, Imported};
use speedy_archive::protobuf::{Reader, Value};
use speedy_archive::{export, export_replay, mahimahi, warc, wpr, Archive};
use std::io::Write;
use std::path::Path;

/// Archives whose bodies (recorded or synthetic filler of a recorded size) add up to
/// more than this are not exported: an importer keeps a size a file states without its
/// bytes, and the exporters write filler of that size.
const MAX_EXPORT: usize = 1 << 20;

/// What every import must give: an error that prints, or a consistent archive whose
/// in-memory exports read back (HAR through the HAR importer, Mahimahi records through
/// the record decoder, the WPR archive's JSON through the WPR reader: `wpr_import`
/// fuzzes its gzip form).
fn check_imported(r: Result<Imported, ImportError>) {
    let imp = match r {
        Ok(imp) => imp,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let a = &imp.archive;
    if let Err(e) = a.validate() {
        panic!("an imported archive is inconsistent: {e}");
    }
    let total = a
        .objects
        .iter()
        .fold(0usize, |n, o| n.saturating_add(o.body.size()));
    if total > MAX_EXPORT {
        return;
    }
    check_exports(a);
}

/// The archive's HAR, Mahimahi and WPR exports, in memory, read back.
fn check_exports(a: &Archive) {
    let har = serde_json::to_vec(&export::to_har(a)).expect("a HAR serializes");
    if let Err(e) = import::import_har(Path::new("export.har"), &har) {
        let _ = e.to_string();
    }
    for (name, rr) in export_replay::to_mahimahi(a) {
        let back = mahimahi::decode(&rr.encode())
            .unwrap_or_else(|e| panic!("{name}: an exported record does not decode: {e}"));
        assert_eq!(
            back, rr,
            "{name}: a record changes through encode and decode"
        );
    }
    let w = export_replay::to_wpr(a);
    let json = serde_json::to_vec(&w.to_json()).expect("JSON serializes");
    let back = wpr::read(&json).expect("an exported WPR archive reads back");
    // The file keeps hosts and URLs in key order, the export makes them in object order.
    assert_eq!(
        sorted(back.records),
        sorted(w.records),
        "WPR records change in the file"
    );
    assert_eq!(back.negotiated, w.negotiated);
}

fn sorted(mut records: Vec<wpr::WprRecord>) -> Vec<wpr::WprRecord> {
    records.sort_by(|a, b| (&a.host, &a.url, a.index).cmp(&(&b.host, &b.url, b.index)));
    records
}

/// A HAR file's bytes through the HAR importer (its reader, page splitting and discovery
/// inference).
pub fn har_import(data: &[u8]) {
    let _ = import::detect(data);
    check_imported(import::import_har(Path::new("fuzz.har"), data));
}

/// A WARC file's bytes (plain or gzip) through the WARC importer; the records of the
/// plain bytes through the HTTP message reader.
pub fn warc_import(data: &[u8]) {
    let _ = import::detect(data);
    if !data.starts_with(&[0x1f, 0x8b]) {
        if let Ok(records) = warc::parse(data) {
            for r in &records {
                let _ = (r.describe(), r.record_id(), r.kind());
                if let Ok(m) = warc::parse_http(&r.block) {
                    assert!(
                        m.body.len() <= r.block.len(),
                        "a body larger than its block"
                    );
                }
            }
        }
    }
    check_imported(import::import_warc(Path::new("fuzz.warc"), data));
}

/// Records of one fuzz input: split at this marker (an input without it is one record).
pub const RECORD_SEPARATOR: &[u8] = b"MMRECSEP";

/// Walks a protobuf message and, up to `depth` levels, every length-delimited value as
/// an embedded message: every field read lies inside the buffer.
fn walk(buf: &[u8], base: usize, depth: usize) {
    let mut r = Reader::new(buf, base);
    let mut fields = 0;
    while let Ok(Some(f)) = r.next_field() {
        fields += 1;
        assert!(fields <= buf.len(), "more fields than bytes");
        assert!(f.offset >= base && f.value_offset <= base + buf.len());
        if let (Value::Len(b), true) = (f.value, depth > 0) {
            assert!(f.value_offset + b.len() <= base + buf.len());
            walk(b, f.value_offset, depth - 1);
        }
    }
}

/// A Mahimahi recording: the input is split into record files at
/// [`RECORD_SEPARATOR`]; each goes through the wire codec and the record decoder (a
/// decoded record re-encodes to one that decodes the same), and the folder, built in
/// memory, through the importer.
pub fn mahimahi_import(data: &[u8]) {
    let mut files = Vec::new();
    let mut rest = data;
    while files.len() < 64 {
        let (rec, next) = match rest
            .windows(RECORD_SEPARATOR.len())
            .position(|w| w == RECORD_SEPARATOR)
        {
            Some(i) => (&rest[..i], Some(&rest[i + RECORD_SEPARATOR.len()..])),
            None => (rest, None),
        };
        walk(rec, 0, 4);
        let _ = mahimahi::looks_like_bulk_message(rec);
        if let Ok(rr) = mahimahi::decode(rec) {
            let again = mahimahi::decode(&rr.encode()).expect("a re-encoded record decodes");
            assert_eq!(again, rr, "a record changes through encode and decode");
        }
        files.push((format!("save.{:03}", files.len()), rec.to_vec()));
        match next {
            Some(n) => rest = n,
            None => break,
        }
    }
    check_imported(import::import_mahimahi_files(
        Path::new("/fuzz/recording"),
        files,
    ));
}

/// A Web Page Replay archive. The first byte picks the form: the rest as the JSON
/// (0), gzip-compressed here first so that the JSON is read through the gzip path (1),
/// or as gzip data itself (2: corrupt streams, several members, bombs; the input's
/// `-max_len` bounds what it inflates to, about a thousand times its size). An archive
/// read re-serializes to one that reads the same.
pub fn wpr_import(data: &[u8]) {
    let mut inp = Input::new(data);
    let mode = inp.byte() % 3;
    let rest = inp.rest();
    let bytes = match mode {
        0 => rest.to_vec(),
        1 => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(rest).expect("in memory");
            e.finish().expect("in memory")
        }
        _ => [&[0x1f, 0x8b][..], rest].concat(),
    };
    let _ = import::detect(&bytes);
    let _ = (wpr::gzip_holds_json(&bytes), wpr::json_is_wpr(&bytes));
    if let Ok(w) = wpr::read(&bytes) {
        let json = serde_json::to_vec(&w.to_json()).expect("JSON serializes");
        let back = wpr::read(&json).expect("a re-serialized archive reads");
        assert_eq!(sorted(back.records), sorted(w.records));
        assert_eq!(back.negotiated, w.negotiated);
    }
    check_imported(import::import_wpr(Path::new("fuzz.wprgo"), &bytes));
}
