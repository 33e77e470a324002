//! Turns a [`LoadResult`] into HAR 1.2 and a one-line summary.

use crate::config::type_name;
use crate::conn::ConnCounters;
use crate::har::{
    self, Content, Creator, Entry, Har, NameValue, Page, PageTimings, Timings, Totals,
};
use crate::loader::{ConnRecord, Initiator, LoadResult, Req};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn since(a: Instant, b: Instant) -> f64 {
    ms(b.saturating_duration_since(a))
}

/// The HAR phases of a request. They partition `[queued, end]` exactly:
/// `blocked + dns + connect + send + wait + receive = end − queued` (`ssl` lies inside
/// `connect`). Only the first request on a new connection carries dns/connect/ssl; the
/// others have -1 there.
pub fn timings(r: &Req, conns: &[ConnRecord]) -> Timings {
    let t0 = r.queued;
    let end = r.end.unwrap_or(t0);
    let mut t = Timings {
        blocked: 0.0,
        dns: -1.0,
        connect: -1.0,
        send: 0.0,
        wait: 0.0,
        receive: 0.0,
        ssl: -1.0,
    };
    let Some(assigned) = r.assigned else {
        // Never reached a connection.
        t.blocked = since(t0, end);
        return t;
    };
    let conn_times = r
        .conn
        .and_then(|c| conns.get(c as usize))
        .and_then(|c| c.times);
    match (r.fresh, conn_times) {
        (true, Some(d)) => {
            let a = t0.max(d.start);
            let b = t0.max(d.dns_end);
            let c = t0.max(d.ready);
            t.blocked = since(t0, a) + since(c, assigned);
            t.dns = since(a, b);
            t.connect = since(b, c);
            t.ssl = if d.tls {
                since(t0.max(d.tcp_end), c)
            } else {
                -1.0
            };
        }
        _ => t.blocked = since(t0, assigned),
    }
    let sent = r.sent.unwrap_or(assigned).min(end);
    t.send = since(assigned, sent);
    match r.first_byte {
        Some(fb) => {
            let fb = fb.max(sent).min(end);
            t.wait = since(sent, fb);
            t.receive = since(fb, end);
        }
        None => t.wait = since(sent, end),
    }
    Timings {
        blocked: har::round_ms(t.blocked),
        dns: har::round_ms(t.dns),
        connect: har::round_ms(t.connect),
        send: har::round_ms(t.send),
        wait: har::round_ms(t.wait),
        receive: har::round_ms(t.receive),
        ssl: har::round_ms(t.ssl),
    }
}

fn priority_name(p: u8) -> &'static str {
    match p {
        0 => "VeryHigh",
        1 => "High",
        2 => "Medium",
        3 => "Low",
        _ => "VeryLow",
    }
}

fn cookies(pairs: &[(String, String)], header: &str) -> Vec<NameValue> {
    let mut out = Vec::new();
    for (n, v) in pairs {
        if !n.eq_ignore_ascii_case(header) {
            continue;
        }
        if header == "cookie" {
            for c in v.split(';') {
                if let Some((a, b)) = c.split_once('=') {
                    out.push(NameValue::new(a.trim(), b.trim()));
                }
            }
        } else if let Some((a, b)) = v.split(';').next().unwrap_or("").split_once('=') {
            out.push(NameValue::new(a.trim(), b.trim()));
        }
    }
    out
}

fn initiator(r: &Req, by_id: &HashMap<u64, &Req>) -> Value {
    let url_of = |p: u64| by_id.get(&p).map(|r| r.url_s.clone()).unwrap_or_default();
    match &r.initiator {
        Initiator::Root => json!({"type": "other"}),
        Initiator::Parser {
            parent,
            offset,
            tag,
        } => {
            json!({"type": "parser", "url": url_of(*parent), "offset": offset, "tag": tag})
        }
        Initiator::Css { parent, offset } => {
            json!({"type": "parser", "url": url_of(*parent), "offset": offset, "tag": "css"})
        }
        Initiator::Script { parent, after_ms } => {
            json!({"type": "script", "url": url_of(*parent), "after_ms": after_ms})
        }
        Initiator::ArchiveOffset { parent, offset } => {
            json!({"type": "parser", "url": url_of(*parent), "offset": offset, "source": "archive"})
        }
        Initiator::ArchiveFallback { parent } => {
            json!({"type": "other", "url": url_of(*parent), "source": "archive-fallback"})
        }
        Initiator::Hint { parent } => {
            json!({"type": "other", "url": url_of(*parent), "reason": "hint"})
        }
        Initiator::Prefetch => json!({"type": "other", "reason": "prefetch"}),
        Initiator::Redirect { parent } => {
            json!({"type": "redirect", "url": url_of(*parent)})
        }
        Initiator::Push { parent } => {
            let mut v = json!({"type": "push"});
            if let Some(p) = parent {
                v["url"] = json!(url_of(*p));
            }
            v
        }
    }
}

/// A browsing session as one HAR: one page per visit (`page_1`, `page_2`, …), each
/// entry referring to its page.
pub fn session_har(pages: &[LoadResult]) -> Har {
    let mut all: Option<Har> = None;
    for (k, res) in pages.iter().enumerate() {
        let mut h = to_har(res);
        let id = format!("page_{}", k + 1);
        for p in &mut h.log.pages {
            p.id = id.clone();
        }
        for e in &mut h.log.entries {
            e.pageref = Some(id.clone());
        }
        match &mut all {
            None => all = Some(h),
            Some(a) => {
                a.log.pages.append(&mut h.log.pages);
                a.log.entries.append(&mut h.log.entries);
            }
        }
    }
    all.unwrap_or_else(|| to_har(&pages[0]))
}

/// Sums a load's counters.
pub fn totals(res: &LoadResult) -> Totals {
    let mut t = Totals {
        requests: res.reqs.len() as u64,
        failed: res.reqs.iter().filter(|r| r.failed()).count() as u64,
        pushed: res.reqs.iter().filter(|r| r.pushed).count() as u64,
        // Opened during this page (a browsing session's later pages inherit the rest).
        connections: res
            .conns
            .iter()
            .filter(|c| c.times.is_some() && c.opened >= res.start)
            .count() as u64,
        body_bytes: res.reqs.iter().map(|r| r.body_bytes).sum(),
        event_loop_lag_max_us: res.event_loop_lag_max.as_micros() as u64,
        ..Default::default()
    };
    // Header bytes on the wire only where every connection measured them.
    let wire = |f: fn(&ConnCounters) -> u64| -> Option<u64> {
        res.conns
            .iter()
            .map(|c| c.counters.wire_headers.then(|| f(&c.counters)))
            .sum()
    };
    t.header_bytes_sent = wire(|k| k.header_bytes_sent);
    t.header_bytes_received = wire(|k| k.header_bytes_received);
    for c in &res.conns {
        let k = &c.counters;
        t.bytes_out += k.bytes_out;
        t.bytes_in += k.bytes_in;
        t.header_bytes_sent_raw += k.header_bytes_raw_sent;
        t.header_bytes_received_raw += k.header_bytes_raw_received;
        t.retransmits += c.tcp_info.map_or(0, |i| i.total_retrans as u64);
    }
    t
}

fn conn_json(c: &ConnRecord, start: Instant) -> Value {
    let mut v = json!({
        "id": c.id,
        "pool": c.pool,
        "host": c.host,
        "requests": c.requests,
        "counters": c.counters,
        "opened_ms": har::round_ms(since(start, c.opened)),
    });
    if let Some(p) = c.peer {
        v["peer"] = json!(p.to_string());
    }
    if let Some(d) = c.times {
        v["dns_ms"] = json!(har::round_ms(since(d.start, d.dns_end)));
        v["connect_ms"] = json!(har::round_ms(since(d.dns_end, d.ready)));
        v["ssl_ms"] = json!(if d.tls {
            har::round_ms(since(d.tcp_end, d.ready))
        } else {
            -1.0
        });
    }
    if let Some(e) = &c.error {
        v["error"] = json!(e);
    }
    if let Some(i) = c.tcp_info {
        v["tcp_info"] = json!(i);
    }
    v
}

/// Builds the HAR of a load (one page, one entry per request, sorted by start).
pub fn to_har(res: &LoadResult) -> Har {
    let by_id: HashMap<u64, &Req> = res.reqs.iter().map(|r| (r.id, r)).collect();
    let wall = |t: Instant| -> std::time::SystemTime {
        res.started + t.saturating_duration_since(res.start)
    };
    let page_id = "page_1".to_string();
    let page = Page {
        started_date_time: speedy_archive::date::format_system_time(res.started),
        id: page_id.clone(),
        title: res.url.clone(),
        page_timings: PageTimings {
            on_content_load: res.on_content_load.map_or(-1.0, |d| har::round_ms(ms(d))),
            on_load: res.on_load.map_or(-1.0, |d| har::round_ms(ms(d))),
        },
        protocol: Some(res.protocol.to_string()),
        totals: Some(totals(res)),
        connections: Some(res.conns.iter().map(|c| conn_json(c, res.start)).collect()),
        dns_cost_ms: Some(har::round_ms(ms(res.dns_cost))),
        timed_out: res.timed_out,
        fcp_ms: None,
        lcp_ms: None,
        speedy: None,
        extra: Map::new(),
    };
    let mut entries = Vec::with_capacity(res.reqs.len());
    for r in &res.reqs {
        let t = timings(r, &res.conns);
        let mut req_headers = Vec::new();
        if res.protocol == "HTTP/1.1" {
            req_headers.push(("Host".to_string(), r.url.authority()));
        }
        req_headers.extend(r.req_headers.iter().cloned());
        let ct = r.content_type().unwrap_or("").to_string();
        let header_bytes = r.resp_header_bytes.max(0) as u64;
        let text = r
            .body
            .as_ref()
            .map(|b| base64::engine::general_purpose::STANDARD.encode(b));
        let compression =
            (r.decoded_bytes != r.body_bytes).then(|| r.decoded_bytes as i64 - r.body_bytes as i64);
        entries.push(Entry {
            pageref: Some(page_id.clone()),
            started_date_time: speedy_archive::date::format_system_time(wall(r.queued)),
            time: har::round_ms(t.total()),
            request: har::Request {
                method: "GET".into(),
                url: r.url_s.clone(),
                http_version: res.protocol.into(),
                cookies: cookies(&r.req_headers, "cookie"),
                headers: NameValue::list(&req_headers),
                query_string: har::query_string(&r.url_s),
                headers_size: r.req_header_bytes,
                body_size: 0,
            },
            response: har::Response {
                status: r.status,
                status_text: spdy::http::reason_phrase(r.status).into(),
                http_version: res.protocol.into(),
                cookies: cookies(&r.resp_headers, "set-cookie"),
                headers: NameValue::list(&r.resp_headers),
                content: Content {
                    size: r.decoded_bytes as i64,
                    compression,
                    mime_type: if ct.is_empty() {
                        "x-unknown".into()
                    } else {
                        ct
                    },
                    encoding: text.as_ref().map(|_| "base64".to_string()),
                    text,
                },
                redirect_url: r
                    .resp_headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case("location"))
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default(),
                headers_size: r.resp_header_bytes,
                body_size: if r.status == 0 {
                    -1
                } else {
                    r.body_bytes as i64
                },
                transfer_size: Some(if r.status == 0 {
                    0
                } else {
                    header_bytes + r.body_bytes
                }),
                extra: Map::new(),
            },
            cache: json!({}),
            timings: t,
            server_ip_address: r
                .conn
                .and_then(|c| res.conns.get(c as usize))
                .and_then(|c| c.peer)
                .map(|p| p.ip().to_string()),
            connection: r.conn.map(|c| c.to_string()),
            priority: Some(priority_name(r.priority).into()),
            spdy_priority: Some(r.priority),
            initiator: Some(initiator(r, &by_id)),
            resource_type: Some(type_name(r.kind).into()),
            was_pushed: r.pushed,
            archive_id: r.archive_id.map(|a| a as u64),
            error: r.error.clone(),
            connection_id: r.conn,
            speedy: None,
            extra: Map::new(),
        });
    }
    let mut har = Har::by_speedy(vec![page], entries);
    har.log.browser = Some(Creator::speedy("speedy-browser"));
    har
}

/// The one-line JSON summary `speedy load` prints per visit: the record `speedy lab
/// validate` reads back. Fields may be added; none is renamed or dropped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The page URL.
    pub url: String,
    /// The protocol the page's connections spoke (`http/1.1`, `spdy/3.1`, `h2`, `h3`).
    pub protocol: String,
    /// DOMContentLoaded, ms from the start (`None`: never fired).
    #[serde(rename = "onContentLoad_ms")]
    pub on_content_load_ms: Option<f64>,
    /// load, ms from the start (`None`: never fired).
    #[serde(rename = "onLoad_ms")]
    pub on_load_ms: Option<f64>,
    /// The load hit its timeout.
    pub timed_out: bool,
    /// What the loader counted, as in the HAR's `_totals`.
    pub totals: Totals,
    /// The requests that failed.
    pub failed: Vec<FailedRequest>,
    /// Archive objects of the page that were never requested.
    pub missing: Vec<String>,
    /// Requests for URLs the archive does not hold.
    pub unexpected: Vec<String>,
    /// Archive objects the parser did not find (fetched at their parent's end).
    pub missed_by_parser: Vec<String>,
    /// The line's format version ([`SUMMARY_VERSION`]; absent before it: 1).
    #[serde(default = "speedy_records::version::first")]
    pub version: u32,
}

/// The format version of [`Summary`] this build writes.
pub const SUMMARY_VERSION: u32 = 1;

impl speedy_records::version::Versioned for Summary {
    const NAME: &'static str = "a load's summary line";
    const CURRENT: u32 = SUMMARY_VERSION;
    fn version(&self) -> u32 {
        self.version
    }
}

/// A request of [`Summary::failed`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailedRequest {
    /// Its URL.
    pub url: String,
    /// The HTTP status (0: no response).
    pub status: u16,
    /// What went wrong, when it was not an HTTP status.
    pub error: Option<String>,
}

impl FailedRequest {
    /// The failure of request `r`.
    pub fn of(r: &crate::loader::Req) -> FailedRequest {
        FailedRequest {
            url: r.url_s.clone(),
            status: r.status,
            error: r.error.clone(),
        }
    }

    /// Why it failed, in words: the client's error, `no response`, or `HTTP status N`.
    pub fn reason(&self) -> String {
        match (&self.error, self.status) {
            (Some(e), _) => e.clone(),
            (None, 0) => "no response".to_string(),
            (None, s) => format!("HTTP status {s}"),
        }
    }
}

/// The summary of a load.
pub fn summary(res: &LoadResult) -> Summary {
    Summary {
        url: res.url.clone(),
        protocol: res.protocol.to_string(),
        on_content_load_ms: res.on_content_load.map(|d| har::round_ms(ms(d))),
        on_load_ms: res.on_load.map(|d| har::round_ms(ms(d))),
        timed_out: res.timed_out,
        totals: totals(res),
        failed: res
            .reqs
            .iter()
            .filter(|r| r.failed())
            .map(FailedRequest::of)
            .collect(),
        missing: res.missing.clone(),
        unexpected: res.unexpected.clone(),
        missed_by_parser: res.missed_by_parser.clone(),
        version: SUMMARY_VERSION,
    }
}
