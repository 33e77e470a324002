//! Writing an archive as HAR 1.2 (`speedy corpus export-har`).
//!
//! An archive records what a page is, not how one load of it went, so the timings of the
//! exported HAR come from a stated model (docs/archive.md, "Export"): one 10 ms round trip
//! per request plus the object's think time to the first byte, 10 Mbit/s to receive it,
//! no queueing, a new host costing a 1 ms DNS look-up and a 10 ms connect. Children start
//! where their discovery puts them in that model. Each entry also carries the exact
//! discovery and think time in a `_speedy` field, Chrome-style `_initiator` and
//! `_resourceType` fields, and the body (text, or base64 for binary content) when the
//! archive stores one, so `speedy corpus import` gives the archive back.

use crate::har::{
    self, Content, Entry, EntrySpeedy, Har, NameValue, PageSpeedy, PageTimings, SpeedyDiscovery,
    Timings,
};
use crate::model::{Archive, BodySource, Discovery, Object, ObjectType};
use base64::Engine;
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;

/// Round trip of the export's timing model, ms.
pub const MODEL_RTT_MS: f64 = 10.0;
/// Receive rate of the export's timing model, bytes per ms (10 Mbit/s).
pub const MODEL_BYTES_PER_MS: f64 = 1250.0;
/// Start of the first exported page (2013-03-05T10:00:00Z), ms since the epoch; page `i`
/// starts `i` minutes later.
pub const MODEL_EPOCH_MS: f64 = 1_362_477_600_000.0;

fn type_name(t: ObjectType) -> &'static str {
    match t {
        ObjectType::Document => "document",
        ObjectType::Stylesheet => "stylesheet",
        ObjectType::Script => "script",
        ObjectType::Font => "font",
        ObjectType::Xhr => "xhr",
        ObjectType::Image => "image",
        ObjectType::Other => "other",
    }
}

/// The identity bytes of a stored body, if they can be had (gzip and deflate are undone).
fn decoded(o: &Object, stored: &[u8]) -> Option<Vec<u8>> {
    match o.content_encoding.as_deref().map(str::to_ascii_lowercase) {
        None => Some(stored.to_vec()),
        Some(e) if e == "identity" => Some(stored.to_vec()),
        Some(e) if e == "gzip" || e == "x-gzip" => {
            let mut out = Vec::new();
            flate2::read::MultiGzDecoder::new(stored)
                .read_to_end(&mut out)
                .ok()
                .map(|_| out)
        }
        Some(e) if e == "deflate" => {
            let mut out = Vec::new();
            if flate2::read::ZlibDecoder::new(stored)
                .read_to_end(&mut out)
                .is_ok()
            {
                return Some(out);
            }
            out.clear();
            flate2::read::DeflateDecoder::new(stored)
                .read_to_end(&mut out)
                .ok()
                .map(|_| out)
        }
        _ => None,
    }
}

fn textual(ct: &str) -> bool {
    let ct = ct.to_ascii_lowercase();
    ct.starts_with("text/")
        || [
            "json",
            "javascript",
            "ecmascript",
            "xml",
            "css",
            "html",
            "svg",
        ]
        .iter()
        .any(|k| ct.contains(k))
}

/// Times of one object in the export's model, ms from the page start.
#[derive(Clone, Copy, Default)]
struct Times {
    start: f64,
    dns: f64,
    connect: f64,
    wait: f64,
    receive: f64,
}

impl Times {
    fn first_byte(&self) -> f64 {
        self.start + self.dns + self.connect + self.wait
    }
    fn end(&self) -> f64 {
        self.first_byte() + self.receive
    }
}

/// Builds the HAR 1.2 document of an archive, as JSON.
pub fn to_har(a: &Archive) -> Value {
    serde_json::to_value(har_of(a)).expect("a HAR serializes")
}

/// Builds the HAR 1.2 document of an archive.
pub fn har_of(a: &Archive) -> Har {
    let mut pages = Vec::new();
    let mut entries: Vec<(f64, Entry)> = Vec::new();
    for (pi, page) in a.pages.iter().enumerate() {
        let t0 = MODEL_EPOCH_MS + pi as f64 * 60_000.0;
        let page_id = format!("page_{}", pi + 1);
        let in_page: HashSet<usize> = page.objects.iter().copied().collect();
        // Model times, parents before children (discovery order, then repeat until fixed).
        let mut times: HashMap<usize, Times> = HashMap::new();
        let mut hosts: HashSet<String> = HashSet::new();
        let mut pending: Vec<usize> = page.objects.clone();
        if !pending.contains(&page.root) {
            pending.insert(0, page.root);
        }
        while !pending.is_empty() {
            let before = pending.len();
            pending.retain(|&id| {
                let o = &a.objects[id];
                let parent = o.discovery.parent().filter(|p| in_page.contains(p));
                let start = match (o.discovery.clone(), parent) {
                    (_, None) => 0.0,
                    (Discovery::Parsed { parent, offset }, Some(_)) => {
                        let Some(p) = times.get(&parent) else {
                            return true;
                        };
                        let po = &a.objects[parent];
                        if po.kind == ObjectType::Document && po.body.size() > 0 {
                            // The HTML parser finds it as the body streams in.
                            let frac = (offset as f64 / po.body.size() as f64).min(1.0);
                            (p.first_byte() + p.receive * frac).round()
                        } else {
                            p.end()
                        }
                    }
                    (Discovery::Computed { parent, after_ms }, Some(_)) => {
                        let Some(p) = times.get(&parent) else {
                            return true;
                        };
                        p.end() + f64::from(after_ms)
                    }
                    (Discovery::Root, Some(_)) => 0.0,
                };
                let host = crate::url::Url::parse(&o.url).map_or(String::new(), |u| u.origin());
                let new_host = hosts.insert(host);
                let size = o.body.size() as f64;
                times.insert(
                    id,
                    Times {
                        start,
                        dns: if new_host { 1.0 } else { 0.0 },
                        connect: if new_host { MODEL_RTT_MS } else { 0.0 },
                        wait: MODEL_RTT_MS + f64::from(o.think_ms),
                        receive: (size / MODEL_BYTES_PER_MS).ceil(),
                    },
                );
                false
            });
            if pending.len() == before {
                // A parent outside the page or a cycle: start the rest with the root.
                for &id in &pending {
                    times.insert(
                        id,
                        Times {
                            wait: MODEL_RTT_MS,
                            ..Default::default()
                        },
                    );
                }
                pending.clear();
            }
        }
        let root_end = times.get(&page.root).map_or(0.0, Times::end);
        let on_load = times.values().map(Times::end).fold(0.0, f64::max);
        let root_url = a.objects.get(page.root).map_or("", |o| o.url.as_str());
        pages.push(har::Page {
            started_date_time: crate::date::format_ms(t0),
            id: page_id.clone(),
            title: root_url.to_string(),
            page_timings: PageTimings {
                on_content_load: round3(root_end),
                on_load: round3(on_load),
            },
            protocol: None,
            totals: None,
            connections: None,
            dns_cost_ms: None,
            timed_out: false,
            fcp_ms: None,
            lcp_ms: None,
            speedy: Some(PageSpeedy {
                name: page.name.clone(),
            }),
            extra: Map::new(),
        });
        for &id in &page.objects {
            let o = &a.objects[id];
            let t = times.get(&id).copied().unwrap_or_default();
            entries.push((t0 + t.start, entry(a, o, &page_id, t0, &t)));
        }
    }
    // Entries sorted by start time (stable: same-time entries keep page order).
    entries.sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
    let mut har = Har::by_speedy(pages, entries.into_iter().map(|(_, e)| e).collect());
    har.log.comment = Some(format!(
        "exported from a speedy archive ({}); timings follow the model of docs/archive.md",
        a.source
    ));
    har
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// `response.content` of an object: the decoded text when speedy can undo the stored
/// encoding (base64 for binary bodies); none with an encoding speedy cannot undo (HAR
/// text is decoded; the stored bytes are in `_speedy.encoded_body` either way).
fn content(o: &Object, stored: Option<&[u8]>) -> Content {
    let wire = o.body.size();
    let mut c = Content {
        size: wire as i64,
        compression: None,
        mime_type: o.content_type.clone(),
        text: None,
        encoding: None,
    };
    if let Some(plain) = stored.and_then(|bytes| decoded(o, bytes)) {
        c.size = plain.len() as i64;
        if o.content_encoding.is_some() {
            c.compression = Some(plain.len() as i64 - wire as i64);
        }
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        match String::from_utf8(plain) {
            Ok(s) if textual(&o.content_type) => c.text = Some(s),
            Ok(s) => (c.text, c.encoding) = (Some(b64(s.as_bytes())), Some("base64".into())),
            Err(e) => (c.text, c.encoding) = (Some(b64(e.as_bytes())), Some("base64".into())),
        }
    }
    c
}

/// An object's `_speedy.discovery` and Chrome-style `_initiator`.
fn discovery(a: &Archive, o: &Object) -> (SpeedyDiscovery, Value) {
    let mut d = SpeedyDiscovery {
        kind: "root".into(),
        parent: None,
        offset: None,
        after_ms: None,
    };
    let mut initiator = json!({"type": "other"});
    match o.discovery {
        Discovery::Root => {}
        Discovery::Parsed { parent, offset } => {
            let pu = &a.objects[parent].url;
            (d.kind, d.parent, d.offset) = ("parsed".into(), Some(pu.clone()), Some(offset));
            let line = a
                .bodies
                .get(&parent)
                .map(|b| {
                    b[..offset.min(b.len())]
                        .iter()
                        .filter(|&&c| c == b'\n')
                        .count()
                })
                .unwrap_or(0);
            initiator = json!({"type": "parser", "url": pu, "lineNumber": line});
        }
        Discovery::Computed { parent, after_ms } => {
            let pu = &a.objects[parent].url;
            (d.kind, d.parent, d.after_ms) = ("computed".into(), Some(pu.clone()), Some(after_ms));
            initiator = json!({"type": "script", "stack": {"callFrames": [
                {"functionName": "", "scriptId": "0", "url": pu, "lineNumber": 0, "columnNumber": 0}
            ]}});
        }
    }
    (d, initiator)
}

fn entry(a: &Archive, o: &Object, page_id: &str, t0: f64, t: &Times) -> Entry {
    let stored = match o.body {
        BodySource::Stored { .. } => a.bodies.get(&o.id).map(|b| b.to_vec()),
        BodySource::Synthetic { .. } => None,
    };
    let (discovery, initiator) = discovery(a, o);
    let location = o
        .response_headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("location"))
        .map_or("", |(_, v)| v.as_str());
    let encoded_body = match (&stored, &o.content_encoding) {
        (Some(bytes), Some(_)) => Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
        _ => None,
    };
    let or_na = |x: f64| if x > 0.0 { x } else { -1.0 };
    Entry {
        pageref: Some(page_id.to_string()),
        started_date_time: crate::date::format_ms(t0 + t.start),
        time: round3(t.dns + t.connect + t.wait + t.receive),
        request: har::Request {
            method: o.method.clone(),
            url: o.url.clone(),
            http_version: "HTTP/1.1".into(),
            cookies: vec![],
            headers: NameValue::list(&o.request_headers),
            query_string: har::query_string(&o.url),
            headers_size: -1,
            body_size: if o.method == "GET" || o.method == "HEAD" {
                0
            } else {
                -1
            },
        },
        response: har::Response {
            status: o.status,
            status_text: spdy::http::reason_phrase(o.status).into(),
            http_version: "HTTP/1.1".into(),
            cookies: vec![],
            headers: NameValue::list(&o.response_headers),
            content: content(o, stored.as_deref()),
            redirect_url: location.to_string(),
            headers_size: -1,
            body_size: o.body.size() as i64,
            transfer_size: None,
            extra: Map::new(),
        },
        cache: json!({}),
        timings: Timings {
            blocked: 0.0,
            dns: or_na(t.dns),
            connect: or_na(t.connect),
            ssl: -1.0,
            send: 0.0,
            wait: round3(t.wait),
            receive: round3(t.receive),
        },
        server_ip_address: None,
        connection: None,
        priority: o.priority.clone(),
        spdy_priority: None,
        initiator: Some(initiator),
        resource_type: Some(type_name(o.kind).into()),
        was_pushed: false,
        archive_id: None,
        error: None,
        connection_id: None,
        speedy: Some(EntrySpeedy {
            kind: type_name(o.kind).into(),
            think_ms: o.think_ms,
            discovery,
            encoded_body,
        }),
        extra: Map::new(),
    }
}

/// Loads the archive in `dir` and writes it as HAR 1.2 to `out`.
pub fn export_har(dir: &Path, out: &Path) -> Result<Value, crate::model::ArchiveError> {
    let a = Archive::load(dir)?;
    let har = to_har(&a);
    let text =
        serde_json::to_vec_pretty(&har).map_err(|e| crate::model::ArchiveError::Invalid {
            path: out.to_path_buf(),
            reason: e.to_string(),
        })?;
    std::fs::write(out, text).map_err(|err| crate::model::ArchiveError::Io {
        path: out.to_path_buf(),
        err,
    })?;
    Ok(har)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{synthesize, SynthOptions};

    #[test]
    fn the_export_is_valid_har_and_reads_back_through_the_model() {
        let a = synthesize(SynthOptions { pages: 2, seed: 3 });
        let har = har_of(&a);
        let json = serde_json::to_vec(&har).unwrap();
        crate::har::validate(&serde_json::from_slice(&json).unwrap(), 0.0011).unwrap();
        assert_eq!(Har::from_slice(&json).unwrap(), har);
        assert_eq!(
            har.log.pages[0].started_date_time,
            "2013-03-05T10:00:00.000Z"
        );
        assert_eq!(
            har.log.pages[1].started_date_time,
            "2013-03-05T10:01:00.000Z"
        );
    }
}
