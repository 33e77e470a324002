//! Reading HAR 1.1/1.2 files from any tool (Chrome DevTools, chrome-har, WebPageTest,
//! speedy's own export) for import: a tolerant reader that reduces each entry to the
//! record an archive needs ([`HarEntry`]). Pages, timings and `_speedy.discovery` come out
//! as the model's types ([`Page`], [`Timings`], [`SpeedyDiscovery`], -1 for what is not
//! known); the entry, the log and the rest of `_speedy` stay their own records here,
//! because the import needs them in a form the strict model does not have: bodies
//! decoded to bytes, dates as ms, the initiator of either dialect normalised, and
//! `_speedy` fields that the model requires but a hand-edited file may lack. speedy's own HARs are read strictly through
//! the typed model ([`super::Har`]); this reader is for files speedy did not write.
//!
//! The reader walks the JSON by hand so that every error names the entry and field it is
//! about (`entries[12].response.content.text: invalid base64 ...`) and so that the common
//! liberties of real exporters are tolerated: numbers given as strings, `-1` or missing
//! optional fields, `_initiator` as an object (DevTools) or as a URL string (WebPageTest,
//! chrome-har, with `_initiator_type`, `_initiator_line` and `_initiator_detail`).

use super::model::{Page, PageSpeedy, PageTimings, SpeedyDiscovery, Timings};
use base64::Engine;
use serde_json::{Map, Value};

/// A HAR file, parsed.
#[derive(Clone, Debug, Default)]
pub struct HarLog {
    /// `log.version` (`1.1`, `1.2`, …; empty when absent).
    pub version: String,
    /// `log.creator.name`.
    pub creator: String,
    /// `log.pages` (may be empty: pages are optional), in the model's type: an absent
    /// `startedDateTime` is empty, absent or negative `pageTimings` are -1.
    pub pages: Vec<Page>,
    /// `log.entries`, in file order.
    pub entries: Vec<HarEntry>,
}

/// Who discovered a request, as the HAR tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InitiatorKind {
    /// The HTML or CSS parser of `url`.
    Parser,
    /// A script of `url` (the top call frame that has a URL).
    Script,
    /// Anything else (`other`, `preload`, `preflight`, …): the HAR does not say. `unknown`
    /// when the HAR names an initiator URL but not its type.
    Other(String),
}

/// An entry's `_initiator`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HarInitiator {
    /// Parser, script, or other.
    pub kind: InitiatorKind,
    /// Candidate initiator URLs, best first (the parser's document, or each call frame's
    /// script from the top of the stack, then the async parents).
    pub urls: Vec<String>,
    /// 0-based line in the first URL where the reference is, when known.
    pub line: Option<u64>,
}

/// speedy's own `_speedy` entry extension (written by `speedy corpus export-har`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpeedyExt {
    /// `type`: the archive object type.
    pub kind: Option<String>,
    /// `think_ms`.
    pub think_ms: Option<u32>,
    /// `discovery`, as the model types it (its `kind` checked, `parent` required unless
    /// `root`).
    pub discovery: Option<SpeedyDiscovery>,
    /// `encoded_body`: the stored content-encoded bytes (base64 in the file), so that a
    /// round trip keeps them exactly; `content.text` holds them decoded, as HAR wants.
    pub encoded_body: Option<Vec<u8>>,
}

/// One `log.entries[i]`, reduced to what an archive needs.
#[derive(Clone, Debug)]
pub struct HarEntry {
    /// Index in `log.entries`.
    pub index: usize,
    /// `pageref`.
    pub pageref: Option<String>,
    /// `startedDateTime`, ms since the Unix epoch.
    pub started_ms: f64,
    /// `time`, ms (the sum of the timings when absent).
    pub time: f64,
    /// `request.method`.
    pub method: String,
    /// `request.url`.
    pub url: String,
    /// `request.headers`, names as written.
    pub request_headers: Vec<(String, String)>,
    /// `response.status` (0: no response, e.g. blocked or aborted).
    pub status: u16,
    /// `response.headers`, names as written.
    pub response_headers: Vec<(String, String)>,
    /// `response.content.mimeType`.
    pub mime: String,
    /// `response.content.text`, decoded from base64 when `encoding` says so.
    pub body: Option<Vec<u8>>,
    /// `response.content.size` (decoded size), when given (≥ 0).
    pub content_size: Option<u64>,
    /// `response.bodySize` (bytes on the wire, after content encoding), when ≥ 0.
    pub body_size: Option<u64>,
    /// `response.headersSize`, when ≥ 0.
    pub headers_size: Option<u64>,
    /// Chrome's `response._transferSize` (headers + body on the wire), when ≥ 0.
    pub transfer_size: Option<u64>,
    /// `response.redirectURL` (empty when none).
    pub redirect_url: String,
    /// `timings`, in the model's type: -1 where the HAR says -1, a negative number or
    /// nothing.
    pub timings: Timings,
    /// `_initiator` (and WebPageTest's `_initiator_*` fields).
    pub initiator: Option<HarInitiator>,
    /// `_resourceType` (Chrome: document, stylesheet, script, image, font, xhr, fetch, …).
    pub resource_type: Option<String>,
    /// Chrome's `_priority` (one of [`crate::model::PRIORITY_NAMES`]).
    pub priority: Option<String>,
    /// `_speedy`.
    pub speedy: Option<SpeedyExt>,
}

/// Where in the HAR a problem is (`entries[3].response.status`) and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HarError {
    /// JSON path of the offending value.
    pub entry: String,
    /// What is wrong.
    pub reason: String,
}

impl HarError {
    fn new(entry: impl Into<String>, reason: impl Into<String>) -> HarError {
        HarError {
            entry: entry.into(),
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for HarError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.entry.is_empty() {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "{}: {}", self.entry, self.reason)
        }
    }
}

type R<T> = Result<T, HarError>;

pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn obj<'a>(v: &'a Value, path: &str) -> R<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| HarError::new(path, format!("expected an object, found {}", kind_of(v))))
}

fn req<'a>(o: &'a Map<String, Value>, key: &str, path: &str) -> R<&'a Value> {
    match o.get(key) {
        Some(Value::Null) | None => Err(HarError::new(path, format!("missing \"{key}\""))),
        Some(v) => Ok(v),
    }
}

fn string(v: &Value, path: &str) -> R<String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        _ => Err(HarError::new(
            path,
            format!("expected a string, found {}", kind_of(v)),
        )),
    }
}

fn opt_string(o: &Map<String, Value>, key: &str, path: &str) -> R<Option<String>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => string(v, &format!("{path}.{key}")).map(Some),
    }
}

/// A number, also accepted as a numeric string (some exporters write `"time": "12.5"`).
fn number(v: &Value, path: &str) -> R<f64> {
    let n = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match n {
        Some(x) if x.is_finite() => Ok(x),
        _ => Err(HarError::new(
            path,
            format!("expected a number, found {}", show(v)),
        )),
    }
}

fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

fn opt_number(o: &Map<String, Value>, key: &str, path: &str) -> R<Option<f64>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => number(v, &format!("{path}.{key}")).map(Some),
    }
}

/// A time where absent or negative means "not known": HAR's -1.
fn known(v: Option<f64>) -> f64 {
    v.filter(|x| *x >= 0.0).unwrap_or(-1.0)
}

/// A size or timing where negative means "not known".
fn opt_size(o: &Map<String, Value>, key: &str, path: &str) -> R<Option<u64>> {
    Ok(opt_number(o, key, path)?.and_then(|x| (x >= 0.0).then_some(x.round() as u64)))
}

fn headers(v: Option<&Value>, path: &str) -> R<Vec<(String, String)>> {
    let Some(v) = v else { return Ok(Vec::new()) };
    if v.is_null() {
        return Ok(Vec::new());
    }
    let arr = v.as_array().ok_or_else(|| {
        HarError::new(
            path,
            format!("expected an array of headers, found {}", kind_of(v)),
        )
    })?;
    let mut out = Vec::with_capacity(arr.len());
    for (i, h) in arr.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let o = obj(h, &p)?;
        let name = string(req(o, "name", &p)?, &format!("{p}.name"))?;
        let value = match o.get("value") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(v) => {
                return Err(HarError::new(
                    format!("{p}.value"),
                    format!("expected a string, found {}", kind_of(v)),
                ))
            }
        };
        out.push((name, value));
    }
    Ok(out)
}

/// Parses a HAR file.
pub fn parse(data: &[u8]) -> Result<HarLog, HarError> {
    // Some tools write a UTF-8 byte-order mark.
    let data = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data);
    let root: Value =
        serde_json::from_slice(data).map_err(|e| HarError::new("", format!("not JSON: {e}")))?;
    let top = obj(&root, "(top level)")?;
    let log = obj(req(top, "log", "(top level)")?, "log")?;
    let mut out = HarLog {
        version: opt_string(log, "version", "log")?.unwrap_or_default(),
        ..Default::default()
    };
    if let Some(c) = log.get("creator").filter(|c| !c.is_null()) {
        out.creator =
            opt_string(obj(c, "log.creator")?, "name", "log.creator")?.unwrap_or_default();
    }
    if let Some(pages) = log.get("pages").filter(|p| !p.is_null()) {
        let arr = pages.as_array().ok_or_else(|| {
            HarError::new(
                "log.pages",
                format!("expected an array, found {}", kind_of(pages)),
            )
        })?;
        for (i, p) in arr.iter().enumerate() {
            out.pages.push(parse_page(i, p)?);
        }
    }
    let entries = req(log, "entries", "log")?;
    let arr = entries.as_array().ok_or_else(|| {
        HarError::new(
            "log.entries",
            format!("expected an array, found {}", kind_of(entries)),
        )
    })?;
    for (i, e) in arr.iter().enumerate() {
        out.entries.push(parse_entry(i, e)?);
    }
    Ok(out)
}

fn parse_page(i: usize, v: &Value) -> R<Page> {
    let path = format!("pages[{i}]");
    let o = obj(v, &path)?;
    let id = match o.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        None | Some(Value::Null) => return Err(HarError::new(&path, "missing \"id\"")),
        Some(v) => {
            return Err(HarError::new(
                format!("{path}.id"),
                format!("expected a string, found {}", kind_of(v)),
            ))
        }
    };
    let started = opt_string(o, "startedDateTime", &path)?.unwrap_or_default();
    if !started.is_empty() && crate::date::parse_ms(&started).is_none() {
        return Err(HarError::new(
            format!("{path}.startedDateTime"),
            format!("not an ISO 8601 date: {started:?}"),
        ));
    }
    let mut page_timings = PageTimings {
        on_content_load: -1.0,
        on_load: -1.0,
    };
    if let Some(t) = o.get("pageTimings").filter(|t| !t.is_null()) {
        let tp = format!("{path}.pageTimings");
        let t = obj(t, &tp)?;
        let g = |k: &str| -> R<f64> { Ok(known(opt_number(t, k, &tp)?)) };
        page_timings.on_content_load = g("onContentLoad")?;
        page_timings.on_load = g("onLoad")?;
    }
    let speedy = match o.get("_speedy") {
        Some(Value::Object(x)) => {
            opt_string(x, "name", &format!("{path}._speedy"))?.map(|name| PageSpeedy { name })
        }
        _ => None,
    };
    Ok(Page {
        started_date_time: started,
        id,
        title: opt_string(o, "title", &path)?.unwrap_or_default(),
        page_timings,
        protocol: None,
        totals: None,
        connections: None,
        dns_cost_ms: None,
        timed_out: false,
        fcp_ms: None,
        lcp_ms: None,
        speedy,
        extra: Map::new(),
    })
}

/// Reads `log.entries[i]` into a [`HarEntry`]; errors name the entry and field.
fn parse_entry(i: usize, v: &Value) -> R<HarEntry> {
    let path = format!("entries[{i}]");
    let o = obj(v, &path)?;
    let started = string(
        req(o, "startedDateTime", &path)?,
        &format!("{path}.startedDateTime"),
    )?;
    let started_ms = crate::date::parse_ms(&started).ok_or_else(|| {
        HarError::new(
            format!("{path}.startedDateTime"),
            format!("not an ISO 8601 date: {started:?}"),
        )
    })?;
    let pageref = parse_pageref(o, &path)?;

    let rp = format!("{path}.request");
    let rq = obj(req(o, "request", &path)?, &rp)?;
    let method = string(req(rq, "method", &rp)?, &format!("{rp}.method"))?;
    let url = string(req(rq, "url", &rp)?, &format!("{rp}.url"))?;
    let request_headers = headers(rq.get("headers"), &format!("{rp}.headers"))?;

    let sp = format!("{path}.response");
    let rs = obj(req(o, "response", &path)?, &sp)?;
    let status = number(req(rs, "status", &sp)?, &format!("{sp}.status"))?;
    if !(0.0..=999.0).contains(&status) {
        return Err(HarError::new(
            format!("{sp}.status"),
            format!("{status} is not an HTTP status"),
        ));
    }
    let response_headers = headers(rs.get("headers"), &format!("{sp}.headers"))?;
    let content = parse_content(rs, &sp)?;
    let redirect_url = opt_string(rs, "redirectURL", &sp)?.unwrap_or_default();

    let timings = parse_timings(o, &path)?;
    let time = opt_number(o, "time", &path)?
        .filter(|x| *x >= 0.0)
        .unwrap_or_else(|| timings.total());

    Ok(HarEntry {
        index: i,
        pageref,
        started_ms,
        time,
        method,
        url,
        request_headers,
        status: status as u16,
        response_headers,
        mime: content.mime,
        body: content.body,
        content_size: content.size,
        body_size: opt_size(rs, "bodySize", &sp)?,
        headers_size: opt_size(rs, "headersSize", &sp)?,
        transfer_size: opt_size(rs, "_transferSize", &sp)?,
        redirect_url,
        timings,
        initiator: parse_initiator(o, &path)?,
        resource_type: opt_string(o, "_resourceType", &path)?.map(|s| s.to_ascii_lowercase()),
        priority: parse_priority(o, &path)?,
        speedy: match o.get("_speedy") {
            None | Some(Value::Null) => None,
            Some(v) => Some(parse_speedy(v, &format!("{path}._speedy"))?),
        },
    })
}

/// An entry's `pageref`: a string, or a number taken as its decimal text.
fn parse_pageref(o: &Map<String, Value>, path: &str) -> R<Option<String>> {
    match o.get("pageref") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(v) => Err(HarError::new(
            format!("{path}.pageref"),
            format!("expected a string, found {}", kind_of(v)),
        )),
    }
}

/// What an entry's `response.content` says: empty when it is absent.
#[derive(Default)]
struct Content {
    /// `mimeType`.
    mime: String,
    /// `text`, decoded from base64 when so encoded.
    body: Option<Vec<u8>>,
    /// `size`, when known.
    size: Option<u64>,
}

/// Reads `response.content` (`sp` is the response's path): its MIME type, size and text,
/// decoding base64; any other encoding is an error.
fn parse_content(rs: &Map<String, Value>, sp: &str) -> R<Content> {
    let cp = format!("{sp}.content");
    let mut out = Content::default();
    let mut encoding_note = None;
    match rs.get("content") {
        None | Some(Value::Null) => {}
        Some(c) => {
            let c = obj(c, &cp)?;
            out.mime = opt_string(c, "mimeType", &cp)?.unwrap_or_default();
            out.size = opt_size(c, "size", &cp)?;
            let encoding = opt_string(c, "encoding", &cp)?;
            if let Some(text) = opt_string(c, "text", &cp)? {
                out.body = Some(match encoding.as_deref() {
                    Some(e) if e.eq_ignore_ascii_case("base64") => {
                        decode_base64(&text).map_err(|err| {
                            HarError::new(format!("{cp}.text"), format!("invalid base64 ({err})"))
                        })?
                    }
                    None | Some("") => text.into_bytes(),
                    Some(other) => {
                        encoding_note = Some(other.to_string());
                        text.into_bytes()
                    }
                });
            }
        }
    }
    if let Some(e) = encoding_note {
        return Err(HarError::new(
            format!("{cp}.encoding"),
            format!("unknown encoding {e:?} (HAR allows base64 or none)"),
        ));
    }
    Ok(out)
}

/// An entry's `timings` in the model's type: absent or negative phases are -1.
fn parse_timings(o: &Map<String, Value>, path: &str) -> R<Timings> {
    let Some(t) = o.get("timings").filter(|t| !t.is_null()) else {
        return Ok(Timings {
            blocked: -1.0,
            dns: -1.0,
            connect: -1.0,
            send: -1.0,
            wait: -1.0,
            receive: -1.0,
            ssl: -1.0,
        });
    };
    let tp = format!("{path}.timings");
    let t = obj(t, &tp)?;
    let g = |k: &str| -> R<f64> { Ok(known(opt_number(t, k, &tp)?)) };
    Ok(Timings {
        blocked: g("blocked")?,
        dns: g("dns")?,
        connect: g("connect")?,
        ssl: g("ssl")?,
        send: g("send")?,
        wait: g("wait")?,
        receive: g("receive")?,
    })
}

/// An entry's `_priority`, which must be one of Chrome's priority names.
fn parse_priority(o: &Map<String, Value>, path: &str) -> R<Option<String>> {
    match opt_string(o, "_priority", path)? {
        Some(p) if !crate::model::PRIORITY_NAMES.contains(&p.as_str()) => Err(HarError::new(
            format!("{path}._priority"),
            format!(
                "{p:?} is not a Chrome priority ({})",
                crate::model::PRIORITY_NAMES.join(", ")
            ),
        )),
        p => Ok(p),
    }
}

fn decode_base64(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    let clean: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(clean.as_bytes())
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(clean.as_bytes()))
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(clean.as_bytes()))
}

fn initiator_kind(t: &str) -> InitiatorKind {
    match t.to_ascii_lowercase().as_str() {
        "parser" => InitiatorKind::Parser,
        "script" => InitiatorKind::Script,
        other => InitiatorKind::Other(other.to_string()),
    }
}

/// Reads a DevTools `Initiator` object (`{type, url, lineNumber, stack}`).
fn initiator_object(o: &Map<String, Value>, path: &str) -> R<HarInitiator> {
    let kind = initiator_kind(&opt_string(o, "type", path)?.unwrap_or_default());
    let mut urls = Vec::new();
    let mut line = opt_number(o, "lineNumber", path)?.map(|x| x.max(0.0) as u64);
    if let Some(u) = opt_string(o, "url", path)?.filter(|u| !u.is_empty()) {
        urls.push(u);
    }
    // Walk the stack: top frame first, then the async parents.
    let mut stack = o.get("stack");
    let mut sp = format!("{path}.stack");
    while let Some(s) = stack.filter(|s| !s.is_null()) {
        let so = obj(s, &sp)?;
        if let Some(frames) = so.get("callFrames").and_then(Value::as_array) {
            for (k, f) in frames.iter().enumerate() {
                let fp = format!("{sp}.callFrames[{k}]");
                let fo = obj(f, &fp)?;
                if let Some(u) = opt_string(fo, "url", &fp)?.filter(|u| !u.is_empty()) {
                    if urls.is_empty() {
                        line = opt_number(fo, "lineNumber", &fp)?.map(|x| x.max(0.0) as u64);
                    }
                    if !urls.contains(&u) {
                        urls.push(u);
                    }
                }
            }
        }
        stack = so.get("parent");
        sp.push_str(".parent");
    }
    Ok(HarInitiator { kind, urls, line })
}

fn parse_initiator(o: &Map<String, Value>, path: &str) -> R<Option<HarInitiator>> {
    let ip = format!("{path}._initiator");
    match o.get("_initiator") {
        Some(Value::Object(io)) => return initiator_object(io, &ip).map(Some),
        Some(Value::String(u)) if !u.is_empty() => {
            // WebPageTest / chrome-har: a URL, with the details beside it.
            let mut init = match o.get("_initiator_detail") {
                Some(Value::String(d)) => match serde_json::from_str::<Value>(d) {
                    Ok(Value::Object(m)) => {
                        initiator_object(&m, &format!("{path}._initiator_detail"))?
                    }
                    _ => {
                        return Err(HarError::new(
                            format!("{path}._initiator_detail"),
                            "not a JSON object",
                        ))
                    }
                },
                _ => HarInitiator {
                    kind: InitiatorKind::Other("unknown".into()),
                    urls: Vec::new(),
                    line: None,
                },
            };
            if let Some(t) = opt_string(o, "_initiator_type", path)? {
                init.kind = initiator_kind(&t);
            }
            if let Some(l) = opt_number(o, "_initiator_line", path)? {
                // Written 1-based by WebPageTest and chrome-har.
                init.line = Some((l.max(1.0) - 1.0) as u64);
            }
            init.urls.retain(|x| x != u);
            init.urls.insert(0, u.clone());
            return Ok(Some(init));
        }
        Some(Value::String(_)) | None | Some(Value::Null) => {}
        Some(v) => {
            return Err(HarError::new(
                ip,
                format!("expected an object or a URL, found {}", kind_of(v)),
            ))
        }
    }
    if let Some(Value::String(d)) = o.get("_initiator_detail") {
        if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(d) {
            return initiator_object(&m, &format!("{path}._initiator_detail")).map(Some);
        }
    }
    if let Some(t) = opt_string(o, "_initiator_type", path)? {
        return Ok(Some(HarInitiator {
            kind: initiator_kind(&t),
            urls: Vec::new(),
            line: None,
        }));
    }
    Ok(None)
}

fn parse_speedy(v: &Value, path: &str) -> R<SpeedyExt> {
    let o = obj(v, path)?;
    let mut ext = SpeedyExt {
        kind: opt_string(o, "type", path)?,
        think_ms: opt_number(o, "think_ms", path)?.map(|x| x.max(0.0) as u32),
        discovery: None,
        encoded_body: match opt_string(o, "encoded_body", path)? {
            Some(b) => Some(decode_base64(&b).map_err(|e| {
                HarError::new(
                    format!("{path}.encoded_body"),
                    format!("invalid base64 ({e})"),
                )
            })?),
            None => None,
        },
    };
    if let Some(d) = o.get("discovery").filter(|d| !d.is_null()) {
        let dp = format!("{path}.discovery");
        let d = obj(d, &dp)?;
        let kind = string(req(d, "kind", &dp)?, &format!("{dp}.kind"))?;
        if !matches!(kind.as_str(), "root" | "parsed" | "computed") {
            return Err(HarError::new(
                format!("{dp}.kind"),
                format!("{kind:?} is not root, parsed or computed"),
            ));
        }
        let parent = if kind != "root" {
            Some(string(req(d, "parent", &dp)?, &format!("{dp}.parent"))?)
        } else {
            None
        };
        ext.discovery = Some(SpeedyDiscovery {
            kind,
            parent,
            offset: opt_number(d, "offset", &dp)?.map(|x| x.max(0.0) as usize),
            after_ms: opt_number(d, "after_ms", &dp)?.map(|x| x.max(0.0) as u32),
        });
    }
    Ok(ext)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_entry_and_field() {
        let har = br#"{"log":{"version":"1.2","entries":[
            {"startedDateTime":"2024-01-01T00:00:00Z","time":1,
             "request":{"method":"GET","url":"http://a/","headers":[]},
             "response":{"status":200,"headers":[],"content":{"size":1,"mimeType":"text/html","text":"x"}},
             "timings":{"send":0,"wait":1,"receive":0}},
            {"startedDateTime":"2024-01-01T00:00:00Z","time":1,
             "request":{"method":"GET","url":"http://a/b","headers":[]},
             "response":{"status":200,"headers":[],"content":{"size":1,"mimeType":"image/gif","text":"!!!","encoding":"base64"}},
             "timings":{"send":0,"wait":1,"receive":0}}]}}"#;
        let e = parse(har).unwrap_err();
        assert_eq!(e.entry, "entries[1].response.content.text");
        assert!(e.reason.contains("base64"), "{e}");
    }

    #[test]
    fn reads_pages_and_timings_into_the_models_types_tolerantly() {
        let har = br#"{"log":{"pages":[
            {"id":"p1","title":"t","startedDateTime":"2024-01-01T00:00:00Z",
             "pageTimings":{"onContentLoad":"12.5","onLoad":-1},"_speedy":{"name":"home"}},
            {"id":2}],
          "entries":[
            {"startedDateTime":"2024-01-01T00:00:00Z","request":{"method":"GET","url":"http://a/"},
             "response":{"status":200},
             "timings":{"blocked":-1,"dns":"3","connect":10,"ssl":4,"send":1,"wait":20},
             "_speedy":{"type":"document","discovery":{"kind":"root"}}},
            {"startedDateTime":"2024-01-01T00:00:00Z","request":{"method":"GET","url":"http://a/x"},
             "response":{"status":200},
             "_speedy":{"discovery":{"kind":"parsed","parent":"http://a/","offset":7}}}]}}"#;
        let log = parse(har).unwrap();
        let (p1, p2) = (&log.pages[0], &log.pages[1]);
        assert_eq!((p1.id.as_str(), p1.title.as_str()), ("p1", "t"));
        assert_eq!(p1.page_timings.on_content_load, 12.5);
        assert_eq!(p1.page_timings.on_load, -1.0);
        assert_eq!(p1.speedy.as_ref().map(|s| s.name.as_str()), Some("home"));
        assert_eq!((p2.id.as_str(), p2.started_date_time.as_str()), ("2", ""));
        assert_eq!(p2.page_timings.on_load, -1.0);
        let t = log.entries[0].timings;
        assert_eq!((t.blocked, t.dns, t.connect, t.ssl), (-1.0, 3.0, 10.0, 4.0));
        assert_eq!((t.send, t.wait, t.receive), (1.0, 20.0, -1.0));
        assert_eq!((t.to_first_byte(), t.total()), (34.0, 34.0));
        assert_eq!(log.entries[0].time, 34.0);
        assert_eq!(log.entries[1].timings.total(), 0.0);
        let d = |i: usize| log.entries[i].speedy.clone().unwrap().discovery.unwrap();
        assert_eq!((d(0).kind.as_str(), d(0).parent), ("root", None));
        assert_eq!(d(1).parent.as_deref(), Some("http://a/"));
        assert_eq!((d(1).offset, d(1).after_ms), (Some(7), None));
        assert_eq!(log.entries[1].speedy.as_ref().unwrap().kind, None);
    }

    #[test]
    fn page_and_discovery_errors_name_the_field() {
        let e =
            parse(br#"{"log":{"pages":[{"id":"p","startedDateTime":"yesterday"}],"entries":[]}}"#)
                .unwrap_err();
        assert_eq!(e.entry, "pages[0].startedDateTime");
        let e = parse(
            br#"{"log":{"entries":[{"startedDateTime":"2024-01-01T00:00:00Z",
            "request":{"method":"GET","url":"http://a/"},"response":{"status":200},
            "_speedy":{"discovery":{"kind":"parsed"}}}]}}"#,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "entries[0]._speedy.discovery: missing \"parent\""
        );
    }

    #[test]
    fn reads_webpagetest_style_initiators() {
        let har = br#"{"log":{"entries":[
            {"startedDateTime":"2024-01-01T00:00:00Z",
             "request":{"method":"GET","url":"http://a/x.js"},
             "response":{"status":200},
             "_initiator":"http://a/","_initiator_line":"7","_initiator_type":"parser"}]}}"#;
        let log = parse(har).unwrap();
        let i = log.entries[0].initiator.clone().unwrap();
        assert_eq!(i.kind, InitiatorKind::Parser);
        assert_eq!(i.urls, vec!["http://a/".to_string()]);
        assert_eq!(i.line, Some(6));
    }
}
