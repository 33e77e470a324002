//! The typed HAR 1.2 model (serde) that speedy writes and reads back: the loader writes
//! it, `speedy corpus export-har` writes it, the lab reads it.
//!
//! Reading is strict: a field HAR 1.2 requires, or one speedy's own extensions require
//! (a page's `_totals` counters, `pageTimings`), is an error when missing, never a
//! default; the only defaults are those HAR 1.2 itself defines (`timings.blocked`, `dns`,
//! `connect` and `ssl` absent mean -1). Errors of [`Har::read`] name the file.
//!
//! Custom fields start with `_` as the format allows. Per page: `_protocol`, `_totals`
//! ([`Totals`]), `_connections`, `_dns_cost_ms`, `_timed_out` (the loader), `_fcp_ms`
//! and `_lcp_ms` (the lab's Chromium loads) and `_speedy` (the export). Per entry: `_priority`, `_spdy_priority`, `_initiator`,
//! `_resourceType`, `_was_pushed`, `_archive_id`, `_error`, `_connection_id` (the loader)
//! and `_speedy` (the export); `response._transferSize`. Fields of other writers are kept
//! in `extra`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// A HAR file.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Har {
    /// The log.
    pub log: Log,
}

/// The `log` object.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Log {
    /// `"1.2"`.
    pub version: String,
    /// The program that wrote it.
    pub creator: Creator,
    /// The browser (here the loader).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<Creator>,
    /// Pages (optional in HAR 1.2).
    #[serde(default)]
    pub pages: Vec<Page>,
    /// Requests.
    pub entries: Vec<Entry>,
    /// A comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// `_sctp`: a loader's SCTP counters over its whole run (every page of it), written
    /// when it loaded over SCTP: associations, DATA chunks and SACKs received, T3
    /// timeouts, fast retransmissions, delayed-SACK timeouts. Every counter is required
    /// when it is present.
    #[serde(rename = "_sctp", default, skip_serializing_if = "Option::is_none")]
    pub sctp: Option<speedy_records::sctp::Counters>,
}

/// `creator` / `browser`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Creator {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
}

impl Creator {
    /// One of speedy's programs, at this workspace's version.
    pub fn speedy(name: &str) -> Creator {
        Creator {
            name: name.into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// A page.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Page {
    /// ISO 8601 start time.
    #[serde(rename = "startedDateTime")]
    pub started_date_time: String,
    /// Unique id, referenced by entries' `pageref`.
    pub id: String,
    /// Title (the page URL here).
    pub title: String,
    /// onContentLoad / onLoad.
    #[serde(rename = "pageTimings")]
    pub page_timings: PageTimings,
    /// `_protocol`: the protocol the loader spoke (`HTTP/1.1`, `spdy/3.1`, `h2`).
    #[serde(rename = "_protocol", default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// `_totals`: the loader's counters for the page.
    #[serde(rename = "_totals", default, skip_serializing_if = "Option::is_none")]
    pub totals: Option<Totals>,
    /// `_connections`: one object per connection the loader opened (docs/loader.md).
    #[serde(
        rename = "_connections",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub connections: Option<Vec<Value>>,
    /// `_dns_cost_ms`: the cost the loader charged per new host name.
    #[serde(
        rename = "_dns_cost_ms",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub dns_cost_ms: Option<f64>,
    /// `_timed_out`: the load hit its time limit (written only when true).
    #[serde(rename = "_timed_out", default, skip_serializing_if = "is_false")]
    pub timed_out: bool,
    /// `_fcp_ms`: First Contentful Paint, ms from the page start (a browser's HAR, as
    /// the lab writes Chromium's; the loader paints nothing).
    #[serde(rename = "_fcp_ms", default, skip_serializing_if = "Option::is_none")]
    pub fcp_ms: Option<f64>,
    /// `_lcp_ms`: Largest Contentful Paint, ms from the page start (the last candidate
    /// by the end of the load).
    #[serde(rename = "_lcp_ms", default, skip_serializing_if = "Option::is_none")]
    pub lcp_ms: Option<f64>,
    /// `_speedy`: the archive page this page was exported from.
    #[serde(rename = "_speedy", default, skip_serializing_if = "Option::is_none")]
    pub speedy: Option<PageSpeedy>,
    /// Fields of other writers.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A page's `_speedy` (written by `speedy corpus export-har`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PageSpeedy {
    /// The archive page's name.
    pub name: String,
}

/// A page's `_totals`: what the loader counted over the whole load. Every field is
/// required when reading.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Totals {
    /// Requests.
    pub requests: u64,
    /// Failed requests (error or status ≥ 400).
    pub failed: u64,
    /// Pushed responses used.
    pub pushed: u64,
    /// Connections opened (dials that succeeded).
    pub connections: u64,
    /// Bytes written by the connections (above TLS).
    pub bytes_out: u64,
    /// Bytes read by the connections (above TLS).
    pub bytes_in: u64,
    /// Response body bytes as received.
    pub body_bytes: u64,
    /// Request header bytes, uncompressed.
    pub header_bytes_sent_raw: u64,
    /// Request header bytes as sent (compressed for SPDY); absent when a connection of the
    /// load did not measure them (h2's HPACK and h3's QPACK run inside their crates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_bytes_sent: Option<u64>,
    /// Response header bytes, uncompressed.
    pub header_bytes_received_raw: u64,
    /// Response header bytes as received (compressed for SPDY); absent as
    /// `header_bytes_sent` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_bytes_received: Option<u64>,
    /// Segments retransmitted over all connections (TCP_INFO).
    pub retransmits: u64,
    /// The loader's worst event-loop lag during the load, µs (absent in HARs written
    /// before it was measured).
    #[serde(default)]
    pub event_loop_lag_max_us: u64,
}

/// `pageTimings` (ms from the page start; -1 = not available). Both are required here,
/// though HAR 1.2 makes them optional: speedy always writes them, and a reader that
/// took a missing one for -1 would see a time-out where there is a broken file.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PageTimings {
    /// DOMContentLoaded.
    #[serde(rename = "onContentLoad")]
    pub on_content_load: f64,
    /// load.
    #[serde(rename = "onLoad")]
    pub on_load: f64,
}

/// A name/value pair (headers, query string, cookies without attributes).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct NameValue {
    /// Name.
    pub name: String,
    /// Value.
    pub value: String,
}

impl NameValue {
    /// A pair.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> NameValue {
        NameValue {
            name: name.into(),
            value: value.into(),
        }
    }

    /// Pairs from `(name, value)` tuples.
    pub fn list(pairs: &[(String, String)]) -> Vec<NameValue> {
        pairs.iter().map(|(n, v)| NameValue::new(n, v)).collect()
    }
}

/// One request and its response.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    /// The page's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pageref: Option<String>,
    /// ISO 8601 time the request was queued.
    #[serde(rename = "startedDateTime")]
    pub started_date_time: String,
    /// Total ms: the sum of the applicable timings (ssl excluded, it is inside connect).
    pub time: f64,
    /// The request.
    pub request: Request,
    /// The response.
    pub response: Response,
    /// Cache use (empty: none).
    pub cache: Value,
    /// Phases.
    pub timings: Timings,
    /// Server address.
    #[serde(
        rename = "serverIPAddress",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub server_ip_address: Option<String>,
    /// Connection id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<String>,
    /// `_priority`: Chrome's name of the request's priority (`VeryHigh` … `VeryLow`).
    #[serde(rename = "_priority", default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
    /// `_spdy_priority`: the SPDY priority sent (0 highest).
    #[serde(
        rename = "_spdy_priority",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub spdy_priority: Option<u8>,
    /// `_initiator`: who discovered the request (an object, DevTools-style).
    #[serde(
        rename = "_initiator",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub initiator: Option<Value>,
    /// `_resourceType` (document, stylesheet, script, image, font, xhr, other).
    #[serde(
        rename = "_resourceType",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub resource_type: Option<String>,
    /// `_was_pushed`: the response came by server push (written as `1`, read from a
    /// number or a boolean).
    #[serde(
        rename = "_was_pushed",
        default,
        skip_serializing_if = "is_false",
        serialize_with = "flag_out",
        deserialize_with = "flag_in"
    )]
    pub was_pushed: bool,
    /// `_archive_id`: the archive object the replay server answered with.
    #[serde(
        rename = "_archive_id",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub archive_id: Option<u64>,
    /// `_error`: why the request failed.
    #[serde(rename = "_error", default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `_connection_id`: the loader's connection number.
    #[serde(
        rename = "_connection_id",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub connection_id: Option<u64>,
    /// `_speedy`: the archive object's type, think time and discovery (the export).
    #[serde(rename = "_speedy", default, skip_serializing_if = "Option::is_none")]
    pub speedy: Option<EntrySpeedy>,
    /// Fields of other writers.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Entry {
    /// Whether the request failed as the lab counts failures, for the loader's HAR and
    /// Chromium's alike: no response (status 0), a 4xx or 5xx status, or an `_error`.
    pub fn failed(&self) -> bool {
        failed(i64::from(self.response.status), self.error.is_some())
    }
}

/// The lab's one rule for a failed request, whatever holds its fields: no response
/// (status 0), a 4xx or 5xx status, or an error recorded.
pub fn failed(status: i64, error: bool) -> bool {
    status == 0 || status >= 400 || error
}

/// An entry's `_speedy` (written by `speedy corpus export-har`; see docs/archive.md).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct EntrySpeedy {
    /// The archive object type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Server think time, ms.
    pub think_ms: u32,
    /// How a browser finds the object.
    pub discovery: SpeedyDiscovery,
    /// The stored content-encoded body, base64 (when the object has a content encoding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoded_body: Option<String>,
}

/// `_speedy.discovery`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SpeedyDiscovery {
    /// `root`, `parsed` or `computed`.
    pub kind: String,
    /// The parent's URL (not for `root`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// `parsed`: the byte offset in the parent's body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<usize>,
    /// `computed`: ms after the parent completes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_ms: Option<u32>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn flag_out<S: Serializer>(b: &bool, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u8(u8::from(*b))
}

fn flag_in<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    match Value::deserialize(d)? {
        Value::Bool(b) => Ok(b),
        Value::Number(n) => Ok(n.as_f64() != Some(0.0)),
        Value::Null => Ok(false),
        other => Err(serde::de::Error::custom(format!(
            "_was_pushed: expected a number or a boolean, found {other}"
        ))),
    }
}

fn not_applicable() -> f64 {
    -1.0
}

/// `request`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Request {
    /// Method.
    pub method: String,
    /// Absolute URL.
    pub url: String,
    /// `HTTP/1.1`, `spdy/3.1`, `h2`.
    #[serde(rename = "httpVersion")]
    pub http_version: String,
    /// Cookies.
    pub cookies: Vec<NameValue>,
    /// Headers.
    pub headers: Vec<NameValue>,
    /// Query string.
    #[serde(rename = "queryString")]
    pub query_string: Vec<NameValue>,
    /// Header bytes (-1 unknown).
    #[serde(rename = "headersSize")]
    pub headers_size: i64,
    /// Body bytes (-1 unknown).
    #[serde(rename = "bodySize")]
    pub body_size: i64,
}

/// `response`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Response {
    /// Status (0 when no response arrived).
    pub status: u16,
    /// Status text.
    #[serde(rename = "statusText")]
    pub status_text: String,
    /// Protocol.
    #[serde(rename = "httpVersion")]
    pub http_version: String,
    /// Cookies.
    pub cookies: Vec<NameValue>,
    /// Headers.
    pub headers: Vec<NameValue>,
    /// Body.
    pub content: Content,
    /// `location`, or empty.
    #[serde(rename = "redirectURL")]
    pub redirect_url: String,
    /// Header bytes (-1 unknown).
    #[serde(rename = "headersSize")]
    pub headers_size: i64,
    /// Body bytes as transferred (-1 unknown).
    #[serde(rename = "bodySize")]
    pub body_size: i64,
    /// `_transferSize`: header and body bytes on the wire (Chrome's field).
    #[serde(
        rename = "_transferSize",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub transfer_size: Option<u64>,
    /// Fields of other writers.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `response.content`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Content {
    /// Decoded size.
    pub size: i64,
    /// Bytes saved by content encoding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<i64>,
    /// MIME type.
    #[serde(rename = "mimeType")]
    pub mime_type: String,
    /// The body (as received), if kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `base64` when `text` is base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
}

/// `timings` in ms; -1 = does not apply (and what an absent `blocked`, `dns`, `connect`
/// or `ssl` means, as HAR 1.2 defines).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Timings {
    /// Queued, waiting for a connection.
    #[serde(default = "not_applicable")]
    pub blocked: f64,
    /// Name resolution.
    #[serde(default = "not_applicable")]
    pub dns: f64,
    /// TCP (and TLS) connection set-up.
    #[serde(default = "not_applicable")]
    pub connect: f64,
    /// Sending the request.
    pub send: f64,
    /// Waiting for the first response byte.
    pub wait: f64,
    /// Reading the response.
    pub receive: f64,
    /// TLS handshake (included in `connect`).
    #[serde(default = "not_applicable")]
    pub ssl: f64,
}

impl Timings {
    /// ms from the entry's start to its first response byte: the applicable phases up to
    /// `wait`.
    pub fn to_first_byte(&self) -> f64 {
        [self.blocked, self.dns, self.connect, self.send, self.wait]
            .iter()
            .filter(|v| **v >= 0.0)
            .sum()
    }

    /// The entry's `time`: the sum of the applicable phases except `ssl`.
    pub fn total(&self) -> f64 {
        [
            self.blocked,
            self.dns,
            self.connect,
            self.send,
            self.wait,
            self.receive,
        ]
        .iter()
        .filter(|v| **v >= 0.0)
        .sum()
    }
}

/// Rounds ms to microseconds (three decimals), as HAR writers do.
pub fn round_ms(v: f64) -> f64 {
    if v < 0.0 {
        -1.0
    } else {
        (v * 1000.0).round() / 1000.0
    }
}

/// Splits the query of a URL (up to its fragment) into HAR `queryString` pairs.
pub fn query_string(url: &str) -> Vec<NameValue> {
    let url = url.split('#').next().unwrap_or("");
    let Some((_, q)) = url.split_once('?') else {
        return vec![];
    };
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (n, v) = p.split_once('=').unwrap_or((p, ""));
            NameValue::new(n, v)
        })
        .collect()
}

/// Writes a HAR as pretty JSON.
pub fn write(har: &Har, path: &Path) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(har).map_err(std::io::Error::other)?;
    std::fs::write(path, json)
}

/// A HAR file that could not be read: the file, and what is wrong (for a missing or
/// mistyped field, serde's words: which field, at which line and column).
#[derive(Debug)]
pub struct HarFileError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong.
    pub reason: String,
}

impl std::fmt::Display for HarFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

impl std::error::Error for HarFileError {}

/// What the lab reads of a loader's HAR: its page, and the loader's extensions that
/// must be there.
#[derive(Clone, Copy, Debug)]
pub struct LoadedPage<'a> {
    /// `log.pages[0]`.
    pub page: &'a Page,
    /// `log.pages[0]._protocol`.
    pub protocol: &'a str,
    /// `log.pages[0]._totals`.
    pub totals: &'a Totals,
}

impl Har {
    /// A HAR 1.2 document written by speedy (`creator` is `speedy` at this version), with
    /// no browser and no comment.
    pub fn by_speedy(pages: Vec<Page>, entries: Vec<Entry>) -> Har {
        Har {
            log: Log {
                version: "1.2".into(),
                creator: Creator::speedy("speedy"),
                browser: None,
                pages,
                entries,
                comment: None,
                sctp: None,
            },
        }
    }

    /// Parses a HAR document written by speedy (strictly: see the module comment).
    pub fn from_slice(data: &[u8]) -> Result<Har, String> {
        let data = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data);
        serde_json::from_slice(data)
            .map_err(|e| format!("not a HAR 1.2 file as speedy writes it: {e}"))
    }

    /// Reads a HAR file written by speedy; errors name the file.
    pub fn read(path: &Path) -> Result<Har, HarFileError> {
        let err = |reason: String| HarFileError {
            path: path.to_path_buf(),
            reason,
        };
        let data = std::fs::read(path).map_err(|e| err(e.to_string()))?;
        Har::from_slice(&data).map_err(err)
    }

    /// The page of a loader's HAR with its `_protocol` and `_totals` (the last page: a
    /// browsing session's HAR has one per visit, the last the measured one); an error
    /// names the first of them that is missing (`log.pages[0]._totals: missing`).
    pub fn loaded_page(&self) -> Result<LoadedPage<'_>, String> {
        // A browsing session's HAR has a page per visit: the last is the measured one.
        self.loaded_page_at(self.log.pages.len().saturating_sub(1))
    }

    /// Visit `i` of a loader's HAR (a browsing session has a page per visit), with its
    /// `_protocol` and `_totals`; an error names what is missing.
    pub fn loaded_page_at(&self, i: usize) -> Result<LoadedPage<'_>, String> {
        let page = self.log.pages.get(i).ok_or_else(|| {
            format!(
                "log.pages[{i}]: no such page (the HAR has {})",
                self.log.pages.len()
            )
        })?;
        let protocol = page
            .protocol
            .as_deref()
            .ok_or_else(|| format!("log.pages[{i}]._protocol: missing"))?;
        let totals = page
            .totals
            .as_ref()
            .ok_or_else(|| format!("log.pages[{i}]._totals: missing"))?;
        Ok(LoadedPage {
            page,
            protocol,
            totals,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A HAR shaped like the loader's: one page with `_protocol` and `_totals`.
    fn loader_like() -> Value {
        serde_json::json!({"log": {
            "version": "1.2",
            "creator": {"name": "speedy", "version": "0"},
            "browser": {"name": "speedy-browser", "version": "0"},
            "pages": [{"startedDateTime": "2013-05-01T12:00:00.000Z", "id": "page_1",
                "title": "http://a/", "pageTimings": {"onContentLoad": 10.5, "onLoad": 20.0},
                "_protocol": "spdy/3.1", "_dns_cost_ms": 0.0, "_connections": [{"id": 0}],
                "_totals": {"requests": 1, "failed": 0, "pushed": 1, "connections": 1,
                    "bytes_out": 100, "bytes_in": 300, "body_bytes": 3,
                    "header_bytes_sent_raw": 30, "header_bytes_sent": 20,
                    "header_bytes_received_raw": 40, "header_bytes_received": 25,
                    "retransmits": 0, "event_loop_lag_max_us": 1500}}],
            "entries": [{
                "pageref": "page_1", "startedDateTime": "2013-05-01T12:00:00.000Z", "time": 6.0,
                "request": {"method": "GET", "url": "http://a/?x=1", "httpVersion": "spdy/3.1",
                    "cookies": [], "headers": [], "queryString": [{"name": "x", "value": "1"}],
                    "headersSize": 30, "bodySize": 0},
                "response": {"status": 200, "statusText": "OK", "httpVersion": "spdy/3.1",
                    "cookies": [], "headers": [], "content": {"size": 3, "mimeType": "text/html"},
                    "redirectURL": "", "headersSize": 40, "bodySize": 3, "_transferSize": 43},
                "cache": {},
                "timings": {"blocked": 1.0, "dns": -1.0, "connect": 2.0, "ssl": -1.0, "send": 0.0,
                    "wait": 2.0, "receive": 1.0},
                "_priority": "VeryHigh", "_spdy_priority": 0, "_was_pushed": 1,
                "_initiator": {"type": "other"}, "_resourceType": "document",
                "_connection_id": 0, "_chrome_only": "kept"
            }]
        }})
    }

    #[test]
    fn reads_the_loaders_extensions_typed() {
        let h: Har = serde_json::from_value(loader_like()).unwrap();
        let lp = h.loaded_page().unwrap();
        assert_eq!(lp.protocol, "spdy/3.1");
        assert_eq!(lp.totals.header_bytes_sent, Some(20));
        assert_eq!(lp.totals.pushed, 1);
        let e = &h.log.entries[0];
        assert!(e.was_pushed);
        assert_eq!(e.priority.as_deref(), Some("VeryHigh"));
        assert_eq!(e.response.transfer_size, Some(43));
        assert_eq!(e.extra["_chrome_only"], "kept");
        assert_eq!(lp.totals.event_loop_lag_max_us, 1500);
        // Written back, it is the same document (ms as floats, as the loader writes them).
        assert_eq!(serde_json::to_value(&h).unwrap(), loader_like());
        // HARs written before the lag was measured still read, as 0.
        let mut old = loader_like();
        old["log"]["pages"][0]["_totals"]
            .as_object_mut()
            .unwrap()
            .remove("event_loop_lag_max_us");
        let h: Har = serde_json::from_value(old).unwrap();
        assert_eq!(h.loaded_page().unwrap().totals.event_loop_lag_max_us, 0);
    }

    #[test]
    fn a_missing_total_is_an_error_naming_the_file_and_the_field() {
        let dir = std::env::temp_dir().join(format!("speedy-har-model-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("load-run3.har");
        let mut h = loader_like();
        h["log"]["pages"][0]["_totals"]
            .as_object_mut()
            .unwrap()
            .remove("retransmits");
        std::fs::write(&path, h.to_string()).unwrap();
        let e = Har::read(&path).unwrap_err().to_string();
        assert!(e.contains("load-run3.har"), "{e}");
        assert!(e.contains("retransmits"), "{e}");

        // No `_totals` at all: the file parses, the loader's page does not.
        h["log"]["pages"][0]
            .as_object_mut()
            .unwrap()
            .remove("_totals");
        std::fs::write(&path, h.to_string()).unwrap();
        let read = Har::read(&path).unwrap();
        assert_eq!(
            read.loaded_page().unwrap_err(),
            "log.pages[0]._totals: missing"
        );
        // A missing onLoad is an error too, not -1 (which would read as a time-out).
        h["log"]["pages"][0]["pageTimings"]
            .as_object_mut()
            .unwrap()
            .remove("onLoad");
        std::fs::write(&path, h.to_string()).unwrap();
        let e = Har::read(&path).unwrap_err().to_string();
        assert!(e.contains("load-run3.har") && e.contains("onLoad"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn optional_timings_read_as_not_applicable() {
        let mut h = loader_like();
        let t = h["log"]["entries"][0]["timings"].as_object_mut().unwrap();
        for k in ["blocked", "dns", "connect", "ssl"] {
            t.remove(k);
        }
        let h: Har = serde_json::from_value(h).unwrap();
        let t = h.log.entries[0].timings;
        assert_eq!([t.blocked, t.dns, t.connect, t.ssl], [-1.0; 4]);
        assert_eq!(t.total(), 3.0);
    }

    #[test]
    fn query_strings_stop_at_the_fragment() {
        assert_eq!(
            query_string("http://a/p?x=1&y&&z=2#f=3"),
            vec![
                NameValue::new("x", "1"),
                NameValue::new("y", ""),
                NameValue::new("z", "2")
            ]
        );
        assert!(query_string("http://a/p#q?x").is_empty());
    }
}
