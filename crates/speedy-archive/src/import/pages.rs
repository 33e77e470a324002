//! Splitting records into pages, inferring each object's parent and discovery, and
//! building the archive objects of a page.

use super::body::{keep_request_header, keep_response_header, lower_headers};
use super::scan::{line_end, scan, Ref};
use super::urls::{host_of, is_http, normalize};
use super::{short, Rec, QUICK_MS};
use crate::har::InitiatorKind;
use crate::model::{Archive, BodySource, Discovery, Object, ObjectType, Page};
use std::collections::{HashMap, HashSet};
/// Does `r` start a new page after `page` (HAR without pages, WARC)?
pub(super) fn starts_page(page: &[Rec], refs: &HashSet<String>, r: &Rec, use_time: bool) -> bool {
    if page.is_empty() || !(r.is_html() || r.kind == ObjectType::Document) {
        return false;
    }
    if !(200..400).contains(&r.status) {
        return false;
    }
    let me = normalize(&r.url);
    if refs.contains(&me) {
        return false;
    }
    if page
        .iter()
        .any(|p| p.redirect.as_deref().map(normalize).as_deref() == Some(me.as_str()))
    {
        return false;
    }
    if let Some(init) = &r.initiator {
        if !matches!(init.kind, InitiatorKind::Other(ref k) if k != "unknown")
            && init
                .urls
                .iter()
                .any(|u| page.iter().any(|p| normalize(&p.url) == normalize(u)))
        {
            return false;
        }
    }
    if use_time {
        let busy_until = page.iter().filter_map(|p| p.end).fold(f64::MIN, f64::max);
        if let Some(s) = r.start {
            if s < busy_until {
                return false;
            }
        }
    }
    true
}

/// Splits records (in time or file order) into pages by the rules of docs/archive.md.
pub(super) fn split_pages(recs: Vec<Rec>, use_time: bool) -> Vec<Vec<Rec>> {
    let mut pages: Vec<Vec<Rec>> = Vec::new();
    let mut cur: Vec<Rec> = Vec::new();
    let mut refs: HashSet<String> = HashSet::new();
    for r in recs {
        if starts_page(&cur, &refs, &r, use_time) {
            pages.push(std::mem::take(&mut cur));
            refs.clear();
        }
        let doc = cur.first().map_or(r.url.clone(), |f| f.url.clone());
        refs.extend(scan(&r, &doc).into_iter().map(|x| x.url));
        cur.push(r);
    }
    if !cur.is_empty() {
        pages.push(cur);
    }
    pages
}

pub(super) fn page_name(index: usize, root_url: &str) -> String {
    let host: String = host_of(root_url)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{index:02}-{host}")
}

pub(super) fn gap(parent: &Rec, child: &Rec) -> u32 {
    match (parent.end, child.start) {
        (Some(e), Some(s)) => (s - e).max(0.0).round() as u32,
        _ => 0,
    }
}

/// Where a parser of `parent` finds `child`: the reference in its body, the initiator's
/// line, the bytes received when the child was requested, or the end of the body.
pub(super) fn parsed_offset(parent: &Rec, prefs: &[Ref], child: &Rec, line: Option<u64>) -> usize {
    let me = normalize(&child.url);
    if let Some(o) = prefs.iter().find(|r| r.url == me).and_then(|r| r.offset) {
        return o;
    }
    let size = parent.body_len();
    if let (Some(l), Some(body)) = (line, parent.decoded.as_ref()) {
        if let Some(o) = line_end(body, l) {
            return o;
        }
    }
    if let (Some(fb), Some(end), Some(s)) = (parent.first_byte, parent.end, child.start) {
        if s >= fb && s < end && end > fb {
            return ((size as f64) * (s - fb) / (end - fb))
                .round()
                .clamp(0.0, size as f64) as usize;
        }
    }
    size
}

/// Infers one object's discovery from the page's earlier records (local indices).
pub(super) fn infer(
    recs: &[Rec],
    refs: &[Vec<Ref>],
    by_url: &HashMap<String, usize>,
    i: usize,
) -> (Discovery, &'static str) {
    let r = &recs[i];
    let earlier = |u: &str| by_url.get(&normalize(u)).copied().filter(|&j| j < i);
    let parsed = |j: usize, line: Option<u64>| Discovery::Parsed {
        parent: j,
        offset: parsed_offset(&recs[j], &refs[j], r, line),
    };
    let computed = |j: usize| Discovery::Computed {
        parent: j,
        after_ms: gap(&recs[j], r),
    };
    // 1. speedy's own record of the discovery.
    if let Some(d) = r.speedy.as_ref().and_then(|ext| ext.discovery.as_ref()) {
        if let Some(j) = d.parent.as_deref().and_then(earlier) {
            match d.kind.as_str() {
                "parsed" => {
                    let offset = d.offset.unwrap_or_else(|| recs[j].body_len());
                    return (Discovery::Parsed { parent: j, offset }, "_speedy");
                }
                "computed" => {
                    let after_ms = d.after_ms.unwrap_or_else(|| gap(&recs[j], r));
                    return (
                        Discovery::Computed {
                            parent: j,
                            after_ms,
                        },
                        "_speedy",
                    );
                }
                _ => {}
            }
        }
    }
    // 2. The target of an earlier redirect.
    let me = normalize(&r.url);
    if let Some(j) = (0..i)
        .rev()
        .find(|&j| recs[j].redirect.as_deref().map(normalize).as_deref() == Some(me.as_str()))
    {
        return (computed(j), "redirect");
    }
    // 3. The recorded initiator.
    if let Some(init) = &r.initiator {
        let usable = !matches!(&init.kind, InitiatorKind::Other(k) if k != "unknown");
        if usable {
            for (k, u) in init.urls.iter().enumerate() {
                let Some(j) = earlier(u) else { continue };
                let line = if k == 0 { init.line } else { None };
                let by_parser = match init.kind {
                    InitiatorKind::Parser => recs[j].parsed(),
                    InitiatorKind::Script => false,
                    InitiatorKind::Other(_) => recs[j].parsed(),
                };
                return if by_parser {
                    (parsed(j, line), "initiator")
                } else {
                    (computed(j), "initiator")
                };
            }
        }
    }
    // 4. A reference in an earlier body: a parser's first, else a script's.
    let mut script_ref = None;
    for (j, found) in refs.iter().enumerate().take(i) {
        for x in found {
            if x.url == me {
                match x.offset {
                    Some(offset) => return (Discovery::Parsed { parent: j, offset }, "body"),
                    None if script_ref.is_none() => script_ref = Some(j),
                    None => {}
                }
            }
        }
    }
    if let Some(j) = script_ref {
        return (computed(j), "body");
    }
    // 5. The recorded timings.
    if let Some(d) = r.start {
        // Requested while a document streamed in: its parser (the earliest such document).
        let streaming = (0..i).find(|&j| {
            let p = &recs[j];
            p.is_html()
                && can_reference(p, r)
                && matches!((p.first_byte, p.end), (Some(fb), Some(e)) if fb <= d && d < e)
        });
        if let Some(j) = streaming {
            return (parsed(j, None), "timings");
        }
        let done: Vec<usize> = (0..i)
            .filter(|&j| can_reference(&recs[j], r) && recs[j].end.is_some_and(|e| e <= d + 1.0))
            .collect();
        let latest = |it: &mut dyn Iterator<Item = usize>| {
            it.max_by(|&a, &b| {
                recs[a]
                    .end
                    .partial_cmp(&recs[b].end)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(a.cmp(&b))
            })
        };
        if let Some(p) = latest(&mut done.iter().copied()) {
            let g = d - recs[p].end.unwrap_or(d);
            let script = latest(&mut done.iter().copied().filter(|&j| recs[j].is_js()));
            let at_end = Discovery::Parsed {
                parent: p,
                offset: recs[p].body_len(),
            };
            return match (recs[p].is_js(), g <= QUICK_MS, script) {
                // Right after a script: that script.
                (true, true, _) => (computed(p), "timings"),
                // Right after a document or style sheet, or late with no script to blame
                // (the parser was slow): found by the parser at the end of it.
                (false, true, _) | (false, false, None) => (at_end, "timings"),
                // Late: the latest script's compute.
                (_, false, Some(s)) => (computed(s), "timings"),
                (true, false, None) => (computed(p), "timings"),
            };
        }
        if recs[0].parsed() {
            return (
                Discovery::Parsed {
                    parent: 0,
                    offset: 0,
                },
                "timings",
            );
        }
    }
    // 6. Nothing known: after the root completes.
    (
        Discovery::Computed {
            parent: 0,
            after_ms: 0,
        },
        "none",
    )
}

/// Can an object like `parent` reference one like `child` (timing inference only)?
pub(super) fn can_reference(parent: &Rec, child: &Rec) -> bool {
    let (html, css, js) = (parent.is_html(), parent.is_css(), parent.is_js());
    match child.kind {
        ObjectType::Document | ObjectType::Script => html || js,
        ObjectType::Xhr => js,
        ObjectType::Font | ObjectType::Other => css || js,
        ObjectType::Stylesheet | ObjectType::Image => html || css || js,
    }
}

pub(super) fn object_type(r: &Rec, resource_type: Option<&str>) -> ObjectType {
    if let Some(k) = r.speedy.as_ref().and_then(|s| s.kind.as_deref()) {
        if let Ok(t) =
            serde_json::from_value::<ObjectType>(serde_json::Value::String(k.to_string()))
        {
            return t;
        }
    }
    match resource_type {
        Some("document") => ObjectType::Document,
        Some("stylesheet") => ObjectType::Stylesheet,
        Some("script") => ObjectType::Script,
        Some("font") => ObjectType::Font,
        Some("xhr") | Some("fetch") | Some("eventsource") => ObjectType::Xhr,
        Some("image") => ObjectType::Image,
        _ => ObjectType::guess(&r.content_type, &r.url),
    }
}

/// Turns one page's records into archive objects; `None` if none is left.
pub(super) fn build_page(
    a: &mut Archive,
    index: usize,
    name: Option<&str>,
    mut recs: Vec<Rec>,
    warnings: &mut Vec<String>,
    sources: &mut std::collections::BTreeMap<&'static str, usize>,
) -> Option<Page> {
    // Only http(s), one object per method and URL.
    let mut seen = HashSet::new();
    recs.retain(|r| {
        if !is_http(&r.url) {
            warnings.push(format!(
                "{}: {} is not http(s); skipped",
                r.label,
                short(&r.url)
            ));
            return false;
        }
        if !seen.insert((r.method.clone(), normalize(&r.url))) {
            warnings.push(format!(
                "{}: {} {} was already recorded on this page; the later copy is skipped",
                r.label, r.method, r.url
            ));
            return false;
        }
        true
    });
    if recs.iter().all(|r| r.start.is_some()) {
        recs.sort_by(|x, y| {
            x.start
                .partial_cmp(&y.start)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    }
    let root = recs.iter().position(|r| {
        r.is_html() || r.kind == ObjectType::Document || (300..400).contains(&r.status)
    })?;
    let root_rec = recs.remove(root);
    recs.insert(0, root_rec);

    let by_url: HashMap<String, usize> = recs
        .iter()
        .enumerate()
        .map(|(i, r)| (normalize(&r.url), i))
        .collect();
    // Discovery, in order; a script's strings resolve against its document.
    let n = recs.len();
    let mut disc = Vec::with_capacity(n);
    let mut docs: Vec<String> = Vec::with_capacity(n);
    let mut refs: Vec<Vec<Ref>> = Vec::with_capacity(n);
    for i in 0..n {
        let d = if i == 0 {
            Discovery::Root
        } else {
            let (d, how) = infer(&recs, &refs, &by_url, i);
            *sources.entry(how).or_default() += 1;
            d
        };
        let doc = match d.parent() {
            _ if recs[i].is_html() => recs[i].url.clone(),
            Some(p) => docs[p].clone(),
            None => recs[i].url.clone(),
        };
        refs.push(scan(&recs[i], &doc));
        docs.push(doc);
        disc.push(d);
    }
    // Server think time: the wait beyond the host's round trip.
    let mut rtt: HashMap<String, f64> = HashMap::new();
    for r in &recs {
        let est = r.rtt.filter(|x| *x > 0.0).or(r.wait);
        if let Some(e) = est {
            let h = rtt.entry(host_of(&r.url)).or_insert(f64::MAX);
            *h = h.min(e);
        }
    }
    let base = a.objects.len();
    let mut ids = Vec::with_capacity(n);
    for (i, r) in recs.into_iter().enumerate() {
        let think_ms = match r.speedy.as_ref().and_then(|s| s.think_ms) {
            Some(t) => t,
            None => match (r.wait, rtt.get(&host_of(&r.url))) {
                (Some(w), Some(&m)) if m < f64::MAX => (w - m).max(0.0).round() as u32,
                _ => 0,
            },
        };
        let discovery = match disc[i] {
            Discovery::Root => Discovery::Root,
            Discovery::Parsed { parent, offset } => Discovery::Parsed {
                parent: base + parent,
                offset,
            },
            Discovery::Computed { parent, after_ms } => Discovery::Computed {
                parent: base + parent,
                after_ms,
            },
        };
        let o = Object {
            id: 0,
            url: r.url.clone(),
            method: r.method.clone(),
            status: r.status,
            request_headers: lower_headers(&r.request_headers)
                .into_iter()
                .filter(|(n, _)| keep_request_header(n))
                .collect(),
            response_headers: lower_headers(&r.response_headers)
                .into_iter()
                .filter(|(n, _)| keep_response_header(n))
                .collect(),
            body: BodySource::Synthetic { size: r.size },
            content_type: r.content_type.clone(),
            content_encoding: r.encoding.clone(),
            think_ms,
            kind: r.kind,
            discovery,
            exec_ms: None,
            priority: r.priority.clone(),
        };
        ids.push(a.add_object(o, r.stored.clone()));
    }
    Some(Page {
        name: name.map_or_else(|| page_name(index, &a.objects[base].url), str::to_string),
        root: base,
        objects: ids,
    })
}
