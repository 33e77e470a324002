//! WARC records → records → archive.

use super::body::settle_body;
use super::pages::{build_page, split_pages};
use super::urls::{is_http, resolve};
use super::{finish, invalid, ImportError, Imported, Rec};
use crate::model::{Archive, ObjectType};
use crate::warc::{self, HttpMessage, WarcRecord};
use std::collections::HashMap;
use std::path::Path;
pub(super) fn rec_from_http(
    label: String,
    url: &str,
    msg: &HttpMessage,
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
            "{}: the body is truncated in the WARC; stored as recorded",
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
    let is_response =
        |r: &WarcRecord| r.kind() == "response" && r.target_uri().is_some_and(is_http);
    let http_of = |r: &WarcRecord| -> Result<HttpMessage, ImportError> {
        warc::parse_http(&r.block).map_err(|e| invalid(path, r.describe(), e))
    };
    let original = |r: &WarcRecord| original(path, &records, &by_id, r);
    // Request records, for methods and request headers.
    let mut requests: HashMap<String, usize> = HashMap::new();
    let mut last_request_for: HashMap<String, usize> = HashMap::new();
    for r in &records {
        if r.kind() == "request" {
            if let Some(id) = r.record_id() {
                requests.insert(id.to_string(), r.index);
            }
            if let Some(u) = r.target_uri() {
                last_request_for.insert(u.to_string(), r.index);
            }
        }
    }
    let mut recs = Vec::new();
    let mut revisits = 0;
    for r in &records {
        let kind = r.kind();
        let Some(url) = r.target_uri().filter(|u| is_http(u)) else {
            continue;
        };
        let mut rec = match kind.as_str() {
            "response" => rec_from_http(r.describe(), url, &http_of(r)?, &mut warnings),
            "revisit" => {
                let o = &records[original(r)?];
                if !is_response(o) {
                    return Err(invalid(
                        path,
                        r.describe(),
                        format!("refers to {}, which is not an http response", o.describe()),
                    ));
                }
                let orig = http_of(o)?;
                let own = (!r.block.is_empty())
                    .then(|| warc::parse_http(&r.block))
                    .transpose()
                    .map_err(|e| invalid(path, r.describe(), e))?;
                let profile = r.field("WARC-Profile").unwrap_or("").to_ascii_lowercase();
                let msg = match own {
                    Some(m) if !profile.contains("server-not-modified") && m.status != 304 => {
                        HttpMessage {
                            status: m.status,
                            method: String::new(),
                            headers: m.headers,
                            body: orig.body.clone(),
                            truncated: orig.truncated,
                        }
                    }
                    _ => orig,
                };
                revisits += 1;
                rec_from_http(r.describe(), url, &msg, &mut warnings)
            }
            "resource" => {
                let ct = r
                    .field("Content-Type")
                    .unwrap_or("application/octet-stream")
                    .to_string();
                let msg = HttpMessage {
                    status: 200,
                    method: String::new(),
                    headers: vec![("Content-Type".into(), ct)],
                    body: r.block.clone(),
                    truncated: false,
                };
                rec_from_http(r.describe(), url, &msg, &mut warnings)
            }
            _ => continue,
        };
        let req = r
            .field("WARC-Concurrent-To")
            .and_then(|id| {
                requests
                    .get(warc::strip_brackets(id))
                    .or_else(|| requests.get(id.trim()))
            })
            .or_else(|| last_request_for.get(url))
            .map(|&i| &records[i]);
        if let Some(q) = req {
            if let Ok(m) = warc::parse_http(&q.block) {
                if !m.method.is_empty() {
                    rec.method = m.method.to_ascii_uppercase();
                }
                rec.request_headers = m.headers;
            }
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
