//! Splitting records into pages, inferring each object's parent and discovery, and
//! building the archive objects of a page.

use super::body::{keep_request_header, keep_response_header, lower_headers};
use super::scan::{line_end, scan, Ref};
use super::urls::{host_of, is_http, normalize};
use super::{short, Rec, QUICK_MS};
use crate::har::InitiatorKind;
use crate::model::{Archive, BodySource, Discovery, Object, ObjectType, Page, MAX_SYNTHETIC};
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
    let x = Inference {
        recs,
        refs,
        by_url,
        i,
    };
    // 1. speedy's own record of the discovery.
    if let Some(d) = x.by_speedy() {
        return (d, "_speedy");
    }
    let me = normalize(&recs[i].url);
    // 2. The target of an earlier redirect.
    if let Some(d) = x.by_redirect(&me) {
        return (d, "redirect");
    }
    // 3. The recorded initiator.
    if let Some(d) = x.by_initiator() {
        return (d, "initiator");
    }
    // 4. A reference in an earlier body: a parser's first, else a script's.
    if let Some(d) = x.by_body(&me) {
        return (d, "body");
    }
    // 5. The recorded timings.
    if let Some(d) = x.by_timings() {
        return (d, "timings");
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

/// Record `i` of a page whose discovery [`infer`] is looking for, with the page's records,
/// the references found in their bodies, and their indices by normalized URL.
struct Inference<'a> {
    recs: &'a [Rec],
    refs: &'a [Vec<Ref>],
    by_url: &'a HashMap<String, usize>,
    i: usize,
}

impl Inference<'_> {
    /// The record whose discovery is inferred.
    fn rec(&self) -> &Rec {
        &self.recs[self.i]
    }

    /// The index of the record of URL `u`, if it comes before this one.
    fn earlier(&self, u: &str) -> Option<usize> {
        self.by_url
            .get(&normalize(u))
            .copied()
            .filter(|&j| j < self.i)
    }

    /// Found by the parser of record `j`, where [`parsed_offset`] places it.
    fn parsed(&self, j: usize, line: Option<u64>) -> Discovery {
        Discovery::Parsed {
            parent: j,
            offset: parsed_offset(&self.recs[j], &self.refs[j], self.rec(), line),
        }
    }

    /// Requested by record `j`'s compute, after the recorded gap.
    fn computed(&self, j: usize) -> Discovery {
        Discovery::Computed {
            parent: j,
            after_ms: gap(&self.recs[j], self.rec()),
        }
    }

    /// Step 1: the discovery `_speedy` recorded, when its parent is an earlier record.
    fn by_speedy(&self) -> Option<Discovery> {
        let r = self.rec();
        let d = r.speedy.as_ref().and_then(|ext| ext.discovery.as_ref())?;
        let j = d.parent.as_deref().and_then(|u| self.earlier(u))?;
        match d.kind.as_str() {
            "parsed" => {
                let offset = d.offset.unwrap_or_else(|| self.recs[j].body_len());
                Some(Discovery::Parsed { parent: j, offset })
            }
            "computed" => {
                let after_ms = d.after_ms.unwrap_or_else(|| gap(&self.recs[j], r));
                Some(Discovery::Computed {
                    parent: j,
                    after_ms,
                })
            }
            _ => None,
        }
    }

    /// Step 2: computed by the latest earlier record that redirects to `me`.
    fn by_redirect(&self, me: &str) -> Option<Discovery> {
        (0..self.i)
            .rev()
            .find(|&j| self.recs[j].redirect.as_deref().map(normalize).as_deref() == Some(me))
            .map(|j| self.computed(j))
    }

    /// Step 3: the first recorded initiator URL that is an earlier record: its parser's
    /// (at the initiator's line) or its script's, by the initiator's kind.
    fn by_initiator(&self) -> Option<Discovery> {
        let init = self.rec().initiator.as_ref()?;
        if matches!(&init.kind, InitiatorKind::Other(k) if k != "unknown") {
            return None;
        }
        for (k, u) in init.urls.iter().enumerate() {
            let Some(j) = self.earlier(u) else { continue };
            let line = if k == 0 { init.line } else { None };
            let by_parser = match init.kind {
                InitiatorKind::Parser => self.recs[j].parsed(),
                InitiatorKind::Script => false,
                InitiatorKind::Other(_) => self.recs[j].parsed(),
            };
            return Some(if by_parser {
                self.parsed(j, line)
            } else {
                self.computed(j)
            });
        }
        None
    }

    /// Step 4: the first earlier body a parser finds `me` in, else the first script that
    /// names it.
    fn by_body(&self, me: &str) -> Option<Discovery> {
        let mut script_ref = None;
        for (j, found) in self.refs.iter().enumerate().take(self.i) {
            for x in found {
                if x.url == me {
                    match x.offset {
                        Some(offset) => return Some(Discovery::Parsed { parent: j, offset }),
                        None if script_ref.is_none() => script_ref = Some(j),
                        None => {}
                    }
                }
            }
        }
        script_ref.map(|j| self.computed(j))
    }

    /// Step 5: from the recorded timings, the document streaming in when the request was
    /// made, else what completed just before it (or the latest script, when late), else
    /// the root's parser at its start.
    fn by_timings(&self) -> Option<Discovery> {
        let (recs, i, r) = (self.recs, self.i, self.rec());
        let d = r.start?;
        // Requested while a document streamed in: its parser (the earliest such document).
        let streaming = (0..i).find(|&j| {
            let p = &recs[j];
            p.is_html()
                && can_reference(p, r)
                && matches!((p.first_byte, p.end), (Some(fb), Some(e)) if fb <= d && d < e)
        });
        if let Some(j) = streaming {
            return Some(self.parsed(j, None));
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
            return Some(match (recs[p].is_js(), g <= QUICK_MS, script) {
                // Right after a script: that script.
                (true, true, _) => self.computed(p),
                // Right after a document or style sheet, or late with no script to blame
                // (the parser was slow): found by the parser at the end of it.
                (false, true, _) | (false, false, None) => at_end,
                // Late: the latest script's compute.
                (_, false, Some(s)) => self.computed(s),
                (true, false, None) => self.computed(p),
            });
        }
        recs[0].parsed().then_some(Discovery::Parsed {
            parent: 0,
            offset: 0,
        })
    }
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
    keep_http_once(&mut recs, warnings);
    root_first(&mut recs)?;
    let disc = discover(&recs, sources);
    let rtt = host_rtts(&recs);
    let base = a.objects.len();
    let mut ids = Vec::with_capacity(recs.len());
    for (r, d) in recs.into_iter().zip(disc) {
        let mut o = to_object(&r, d, base, &rtt);
        if let BodySource::Synthetic { size } = &mut o.body {
            if *size > MAX_SYNTHETIC {
                warnings.push(format!(
                    "{}: {} bytes claimed and none recorded; its filler is cut to {} bytes",
                    r.url, size, MAX_SYNTHETIC
                ));
                *size = MAX_SYNTHETIC;
            }
        }
        ids.push(a.add_object(o, r.stored.clone()));
    }
    Some(Page {
        name: name.map_or_else(|| page_name(index, &a.objects[base].url), str::to_string),
        root: base,
        objects: ids,
    })
}

/// Keeps only http(s) records, one per method and URL (the first), warning about each
/// one dropped.
fn keep_http_once(recs: &mut Vec<Rec>, warnings: &mut Vec<String>) {
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
}

/// Orders the records by start time (when all have one) and moves the root (the first
/// document or redirect) to the front; `None` if there is no root.
fn root_first(recs: &mut Vec<Rec>) -> Option<()> {
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
    Some(())
}

/// Every record's discovery (local indices), in order, counting each non-root one's
/// source in `sources`; a script's strings resolve against its document.
fn discover(
    recs: &[Rec],
    sources: &mut std::collections::BTreeMap<&'static str, usize>,
) -> Vec<Discovery> {
    let by_url: HashMap<String, usize> = recs
        .iter()
        .enumerate()
        .map(|(i, r)| (normalize(&r.url), i))
        .collect();
    let n = recs.len();
    let mut disc = Vec::with_capacity(n);
    let mut docs: Vec<String> = Vec::with_capacity(n);
    let mut refs: Vec<Vec<Ref>> = Vec::with_capacity(n);
    for i in 0..n {
        let d = if i == 0 {
            Discovery::Root
        } else {
            let (d, how) = infer(recs, &refs, &by_url, i);
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
    disc
}

/// Each host's round trip: the least connect time (else wait) among its records.
fn host_rtts(recs: &[Rec]) -> HashMap<String, f64> {
    let mut rtt: HashMap<String, f64> = HashMap::new();
    for r in recs {
        let est = r.rtt.filter(|x| *x > 0.0).or(r.wait);
        if let Some(e) = est {
            let h = rtt.entry(host_of(&r.url)).or_insert(f64::MAX);
            *h = h.min(e);
        }
    }
    rtt
}

/// The archive object of record `r` with discovery `d` (local indices, shifted by `base`)
/// and server think time: the `_speedy` one, else none for a recording (whose timings
/// stay in `recorded`, replayed only when asked: `speedy serve --recorded-think-time`),
/// else the wait beyond the host's round trip.
fn to_object(r: &Rec, d: Discovery, base: usize, rtt: &HashMap<String, f64>) -> Object {
    let think_ms = match r.speedy.as_ref().and_then(|s| s.think_ms) {
        Some(t) => t,
        None if r.recorded.is_some() => 0,
        None => match (r.wait, rtt.get(&host_of(&r.url))) {
            (Some(w), Some(&m)) if m < f64::MAX => (w - m).max(0.0).round() as u32,
            _ => 0,
        },
    };
    let discovery = match d {
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
    Object {
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
        recorded: r.recorded.clone(),
    }
}
