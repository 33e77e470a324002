//! HAR entries → records → archive.

use super::body::{content_encoding, header, settle_body};
use super::pages::{build_page, object_type, split_pages};
use super::urls::resolve;
use super::{finish, invalid, short, ImportError, Imported, Rec};
use crate::har::{self, HarEntry, HarLog};
use crate::model::Archive;
use bytes::Bytes;
use std::path::Path;
pub(super) fn rec_from_har(e: &HarEntry, warnings: &mut Vec<String>) -> Rec {
    let label = format!("entries[{}]", e.index);
    let content_type = header(&e.response_headers, "content-type")
        .map(str::to_string)
        .unwrap_or_else(|| e.mime.clone());
    let t = &e.timings;
    let first_byte = e.started_ms + t.to_first_byte();
    let end = e.started_ms
        + if e.time > 0.0 {
            e.time.max(t.to_first_byte())
        } else {
            t.total()
        };
    let mut r = Rec {
        label,
        url: e.url.clone(),
        method: e.method.to_ascii_uppercase(),
        status: e.status,
        request_headers: e.request_headers.clone(),
        response_headers: e.response_headers.clone(),
        content_type,
        start: Some(e.started_ms),
        first_byte: Some(first_byte),
        end: Some(end),
        wait: (t.wait >= 0.0).then_some(t.wait),
        rtt: (t.connect >= 0.0)
            .then(|| t.connect - t.ssl.max(0.0))
            .filter(|x| *x > 0.0),
        initiator: e.initiator.clone(),
        priority: e.priority.clone(),
        speedy: e.speedy.clone(),
        ..Default::default()
    };
    let loc = header(&e.response_headers, "location")
        .map(str::to_string)
        .or_else(|| (!e.redirect_url.is_empty()).then(|| e.redirect_url.clone()));
    if (300..400).contains(&e.status) {
        r.redirect = loc.and_then(|l| resolve(&e.url, &l));
    }
    r.kind = object_type(&r, e.resource_type.as_deref());
    let wire = e
        .body_size
        .filter(|&b| b > 0)
        .or_else(|| match (e.transfer_size, e.headers_size) {
            (Some(t), Some(h)) if t > h => Some(t - h),
            (Some(t), None) => Some(t),
            _ => None,
        })
        .map(|x| x as usize);
    let no_body = e.method.eq_ignore_ascii_case("HEAD")
        || matches!(e.status, 204 | 304)
        || (100..200).contains(&e.status);
    let encoded_body = e.speedy.as_ref().and_then(|s| s.encoded_body.clone());
    let given_encoded = encoded_body.is_some() && content_encoding(&e.response_headers).is_some();
    let body = if no_body {
        None
    } else if given_encoded {
        encoded_body
    } else {
        e.body.clone()
    };
    let (wire, decoded) = if no_body {
        (Some(0), Some(0))
    } else {
        (wire, e.content_size.map(|x| x as usize))
    };
    settle_body(&mut r, body, given_encoded, wire, decoded, warnings);
    if r.decoded.is_none() && r.stored.is_some() {
        // An encoding speedy cannot undo: the HAR's decoded text still shows references.
        r.decoded = e.body.clone().map(Bytes::from);
    }
    r
}

/// Imports a HAR file's bytes; `path` names it in errors.
pub fn import_har(path: &Path, data: &[u8]) -> Result<Imported, ImportError> {
    let log: HarLog = har::parse(data).map_err(|e| invalid(path, e.entry, e.reason))?;
    let mut warnings = Vec::new();
    let mut sources = Default::default();
    let mut a = Archive::new(&format!(
        "{} (HAR {}{})",
        path.file_name().map_or_else(
            || path.display().to_string(),
            |f| f.to_string_lossy().into_owned()
        ),
        if log.version.is_empty() {
            "?"
        } else {
            &log.version
        },
        if log.creator.is_empty() {
            String::new()
        } else {
            format!(", {}", log.creator)
        }
    ));
    // Pages' start times, ms (the reader checked every date it found).
    let page_start: Vec<Option<f64>> = log
        .pages
        .iter()
        .map(|p| crate::date::parse_ms(&p.started_date_time))
        .collect();
    let mut recs: Vec<(Option<usize>, Rec)> = Vec::new();
    for e in &log.entries {
        if e.status == 0 {
            warnings.push(format!(
                "entries[{}]: no response (status 0) for {}; skipped",
                e.index,
                short(&e.url)
            ));
            continue;
        }
        let page = if log.pages.is_empty() {
            None
        } else {
            Some(match &e.pageref {
                Some(p) => log.pages.iter().position(|x| &x.id == p).ok_or_else(|| {
                    invalid(
                        path,
                        format!("entries[{}].pageref", e.index),
                        format!("{p:?} names no page of log.pages"),
                    )
                })?,
                None if log.pages.len() == 1 => 0,
                None => page_start
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.is_some_and(|s| s <= e.started_ms))
                    .max_by(|x, y| x.1.partial_cmp(y.1).unwrap_or(std::cmp::Ordering::Equal))
                    .map_or(0, |(i, _)| i),
            })
        };
        recs.push((page, rec_from_har(e, &mut warnings)));
    }
    let groups: Vec<(Option<String>, Vec<Rec>)> = if log.pages.is_empty() {
        let mut all: Vec<Rec> = recs.into_iter().map(|(_, r)| r).collect();
        all.sort_by(|x, y| {
            x.start
                .partial_cmp(&y.start)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        split_pages(all, true)
            .into_iter()
            .map(|g| (None, g))
            .collect()
    } else {
        let mut g: Vec<Vec<Rec>> = vec![Vec::new(); log.pages.len()];
        for (p, r) in recs {
            g[p.unwrap_or(0)].push(r);
        }
        for (i, x) in g.iter().enumerate() {
            if x.is_empty() {
                warnings.push(format!(
                    "pages[{i}] ({}): no entries; skipped",
                    log.pages[i].id
                ));
            }
        }
        log.pages
            .iter()
            .map(|p| p.speedy.as_ref().map(|s| s.name.clone()))
            .zip(g)
            .collect()
    };
    for (name, g) in groups.into_iter().filter(|g| !g.1.is_empty()) {
        let first = g[0].label.clone();
        let idx = a.pages.len();
        // A recorded name is kept unless another page has it already.
        let name = name.filter(|n| !n.is_empty() && a.page(n).is_none());
        match build_page(&mut a, idx, name.as_deref(), g, &mut warnings, &mut sources) {
            Some(p) => a.pages.push(p),
            None => warnings.push(format!(
                "{first}: page without a document or redirect; skipped"
            )),
        }
    }
    finish(&mut a, path)?;
    Ok(Imported {
        archive: a,
        warnings,
        sources,
    })
}
