//! WARC records → records → archive.

use super::body::settle_body;
use super::pages::{build_page, split_pages};
use super::urls::{is_http, resolve};
use super::{finish, invalid, ImportError, Imported, Rec};
use crate::model::{Archive, ObjectType};
use crate::warc::{self, HttpMessage, WarcRecord};
use std::collections::HashMap;
use std::path::Path;
/// The record of response `msg` for `url` (method GET, no request headers: the caller
/// sets them when it has the request); `label` names it, `format` the file's format in
/// warnings (`WARC`).
pub(super) fn rec_from_http(
    label: String,
    url: &str,
    msg: &HttpMessage,
    format: &str,
    warnings: &mut Vec<String>,
) -> Rec {
    let content_type = msg.header("content-type").unwrap_or("").to_string();
    let mut r = Rec {
        label,
        url: url.to_string(),
        method: "GET".into(),
        status: msg.status,
        response_headers: msg.headers.clone(),
        content_type,
        ..Default::default()
    };
    if (300..400).contains(&msg.status) {
        r.redirect = msg.header("location").and_then(|l| resolve(url, l));
    }
    r.kind = ObjectType::guess(&r.content_type, url);
    if msg.truncated {
        warnings.push(format!(
            "{}: the body is truncated in the {format}; stored as recorded",
            r.label
        ));
    }
    let wire = msg.body.len();
    settle_body(
        &mut r,
        Some(msg.body.to_vec()),
        true,
        Some(wire),
        None,
        warnings,
    );
    r
}

/// The index of the response a revisit stands for (following revisits of revisits).
fn original(
    path: &Path,
    records: &[WarcRecord],
    by_id: &HashMap<&str, usize>,
    r: &WarcRecord,
) -> Result<usize, ImportError> {
    let mut cur = r;
    for _ in 0..16 {
        let by_ref = cur
            .field("WARC-Refers-To")
            .map(warc::strip_brackets)
            .and_then(|id| {
                by_id
                    .get(id)
                    .or_else(|| by_id.get(format!("<{id}>").as_str()))
                    .copied()
            });
        let target = cur
            .field("WARC-Refers-To-Target-URI")
            .map(warc::strip_brackets)
            .or(cur.target_uri());
        let by_digest = || {
            let d = cur.field("WARC-Payload-Digest")?;
            let same = |x: &&WarcRecord| {
                x.field("WARC-Payload-Digest") == Some(d) && x.kind() == "response"
            };
            records
                .iter()
                .filter(same)
                .find(|x| x.target_uri() == target)
                .or_else(|| records.iter().find(same))
                .map(|x| x.index)
        };
        let Some(i) = by_ref.or_else(by_digest) else {
            let what = cur
                .field("WARC-Refers-To")
                .map(|id| format!("record {id}"))
                .or_else(|| {
                    cur.field("WARC-Payload-Digest")
                        .map(|d| format!("payload digest {d}"))
                })
                .unwrap_or_else(|| {
                    "no record (neither WARC-Refers-To nor WARC-Payload-Digest)".into()
                });
            return Err(invalid(
                path,
                r.describe(),
                format!("revisit of {what}, which is not in this file"),
            ));
        };
        if records[i].kind() != "revisit" {
            return Ok(i);
        }
        if i == cur.index {
            break;
        }
        cur = &records[i];
    }
    Err(invalid(
        path,
        r.describe(),
        "revisit chain does not end in a response",
    ))
}

/// Imports a WARC file's bytes (gzip or not); `path` names it in errors.
pub fn import_warc(path: &Path, data: &[u8]) -> Result<Imported, ImportError> {
    let plain = warc::decompress(data).map_err(|e| invalid(path, e.entry, e.reason))?;
    let records = warc::parse(&plain).map_err(|e| invalid(path, e.entry, e.reason))?;
    let mut warnings = Vec::new();
    let by_id: HashMap<&str, usize> = records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.record_id().map(|id| (id, i)))
        .collect();
    let requests = Requests::of(&records);
    let mut recs = Vec::new();
    let mut revisits = 0;
    for r in &records {
        let kind = r.kind();
        let Some(url) = r.target_uri().filter(|u| is_http(u)) else {
            continue;
        };
        let msg = match kind.as_str() {
            "response" => http_of(path, r)?,
            "revisit" => {
                let msg = revisit_message(path, &records, &by_id, r)?;
                revisits += 1;
                msg
            }
            "resource" => resource_message(r),
            _ => continue,
        };
        let mut rec = rec_from_http(r.describe(), url, &msg, "WARC", &mut warnings);
        if let Some(q) = requests.of_response(r, url) {
            apply_request(&mut rec, &records[q]);
        }
        recs.push(rec);
    }
    let mut sources = Default::default();
    let mut a = Archive::new(&format!(
        "{} (WARC, {} records, {revisits} revisits)",
        path.file_name().map_or_else(
            || path.display().to_string(),
            |f| f.to_string_lossy().into_owned()
        ),
        records.len()
    ));
    for g in split_pages(recs, false) {
        let first = g[0].label.clone();
        let idx = a.pages.len();
        match build_page(&mut a, idx, None, g, &mut warnings, &mut sources) {
            Some(p) => a.pages.push(p),
            None => warnings.push(format!("{first}: responses before any document; skipped")),
        }
    }
    finish(&mut a, path)?;
    Ok(Imported {
        archive: a,
        warnings,
        sources,
    })
}

/// The HTTP message in record `r`'s block; an error names the record.
fn http_of(path: &Path, r: &WarcRecord) -> Result<HttpMessage, ImportError> {
    warc::parse_http(&r.block).map_err(|e| invalid(path, r.describe(), e))
}

/// The response a revisit record `r` stands for: the original's, with the revisit's own
/// status and headers when it records a changed (not 304, not server-not-modified)
/// response. An error when the original is missing or not an http response.
fn revisit_message(
    path: &Path,
    records: &[WarcRecord],
    by_id: &HashMap<&str, usize>,
    r: &WarcRecord,
) -> Result<HttpMessage, ImportError> {
    let o = &records[original(path, records, by_id, r)?];
    if !(o.kind() == "response" && o.target_uri().is_some_and(is_http)) {
        return Err(invalid(
            path,
            r.describe(),
            format!("refers to {}, which is not an http response", o.describe()),
        ));
    }
    let orig = http_of(path, o)?;
    let own = (!r.block.is_empty())
        .then(|| warc::parse_http(&r.block))
        .transpose()
        .map_err(|e| invalid(path, r.describe(), e))?;
    let profile = r.field("WARC-Profile").unwrap_or("").to_ascii_lowercase();
    Ok(match own {
        Some(m) if !profile.contains("server-not-modified") && m.status != 304 => HttpMessage {
            status: m.status,
            method: String::new(),
            target: String::new(),
            headers: m.headers,
            body: orig.body.clone(),
            truncated: orig.truncated,
        },
        _ => orig,
    })
}

/// A `resource` record as a 200 response of its block, typed by its `Content-Type`.
fn resource_message(r: &WarcRecord) -> HttpMessage {
    let ct = r
        .field("Content-Type")
        .unwrap_or("application/octet-stream")
        .to_string();
    HttpMessage {
        status: 200,
        method: String::new(),
        target: String::new(),
        headers: vec![("Content-Type".into(), ct)],
        body: r.block.clone(),
        truncated: false,
    }
}

/// The request records of a WARC (for methods and request headers), by record id and
/// by target URI (the last one for each).
struct Requests {
    by_id: HashMap<String, usize>,
    last_for: HashMap<String, usize>,
}

impl Requests {
    /// Indexes the request records of `records`.
    fn of(records: &[WarcRecord]) -> Requests {
        let mut by_id: HashMap<String, usize> = HashMap::new();
        let mut last_for: HashMap<String, usize> = HashMap::new();
        for r in records {
            if r.kind() == "request" {
                if let Some(id) = r.record_id() {
                    by_id.insert(id.to_string(), r.index);
                }
                if let Some(u) = r.target_uri() {
                    last_for.insert(u.to_string(), r.index);
                }
            }
        }
        Requests { by_id, last_for }
    }

    /// The request of response `r` for `url`: the one it is `WARC-Concurrent-To`, else
    /// the last request for the URL.
    fn of_response(&self, r: &WarcRecord, url: &str) -> Option<usize> {
        r.field("WARC-Concurrent-To")
            .and_then(|id| {
                self.by_id
                    .get(warc::strip_brackets(id))
                    .or_else(|| self.by_id.get(id.trim()))
            })
            .or_else(|| self.last_for.get(url))
            .copied()
    }
}

/// Takes the method and headers of request record `q` into `rec`, when it parses.
fn apply_request(rec: &mut Rec, q: &WarcRecord) {
    if let Ok(m) = warc::parse_http(&q.block) {
        if !m.method.is_empty() {
            rec.method = m.method.to_ascii_uppercase();
        }
        rec.request_headers = m.headers;
    }
}
