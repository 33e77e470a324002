//! HAR 1.2: the model (serde), a writer, and a validator that checks a document against
//! the HAR 1.2 schema (required fields, types, timing rules).
//!
//! Custom fields start with `_` as the format allows: per entry `_priority`,
//! `_initiator`, `_was_pushed`, `_connection_id`, `_protocol`, `_error`; per page the
//! load's totals (`_bytes`, `_connections`, …). The lab reads the same types back.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// Pages.
    #[serde(default)]
    pub pages: Vec<Page>,
    /// Requests.
    pub entries: Vec<Entry>,
}

/// `creator` / `browser`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Creator {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
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
    /// Extra fields (`_bytes`, `_connections`, …).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

/// `pageTimings` (ms from the page start; -1 = not available).
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
    /// Extra fields (`_priority`, `_initiator`, …).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
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
    /// Extra fields.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
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

/// `timings` in ms; -1 = does not apply.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Timings {
    /// Queued, waiting for a connection.
    pub blocked: f64,
    /// Name resolution.
    pub dns: f64,
    /// TCP (and TLS) connection set-up.
    pub connect: f64,
    /// Sending the request.
    pub send: f64,
    /// Waiting for the first response byte.
    pub wait: f64,
    /// Reading the response.
    pub receive: f64,
    /// TLS handshake (included in `connect`).
    pub ssl: f64,
}

impl Timings {
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

/// Formats a time as ISO 8601 UTC with milliseconds (`2013-05-01T12:00:00.123Z`).
pub fn iso8601(t: std::time::SystemTime) -> String {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let ms = d.subsec_millis();
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let dd = doy - (153 * mp + 2) / 5 + 1;
    let mm = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if mm <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{mm:02}-{dd:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Splits the query of a URL into HAR `queryString` pairs.
pub fn query_string(url: &str) -> Vec<NameValue> {
    let Some((_, q)) = url.split_once('?') else {
        return vec![];
    };
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (n, v) = p.split_once('=').unwrap_or((p, ""));
            NameValue {
                name: n.into(),
                value: v.into(),
            }
        })
        .collect()
}

/// Writes a HAR as pretty JSON.
pub fn write(har: &Har, path: &std::path::Path) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(har).map_err(std::io::Error::other)?;
    std::fs::write(path, json)
}

// ---- validation -----------------------------------------------------------------------

struct Check<'a> {
    errors: &'a mut Vec<String>,
}

impl Check<'_> {
    fn obj<'v>(&mut self, v: &'v Value, path: &str) -> Option<&'v serde_json::Map<String, Value>> {
        match v.as_object() {
            Some(o) => Some(o),
            None => {
                self.errors.push(format!("{path}: must be an object"));
                None
            }
        }
    }

    fn field<'v>(
        &mut self,
        o: &'v serde_json::Map<String, Value>,
        path: &str,
        name: &str,
    ) -> Option<&'v Value> {
        let v = o.get(name);
        if v.is_none() {
            self.errors.push(format!("{path}.{name}: required"));
        }
        v
    }

    fn string(
        &mut self,
        o: &serde_json::Map<String, Value>,
        path: &str,
        name: &str,
    ) -> Option<String> {
        let v = self.field(o, path, name)?;
        match v.as_str() {
            Some(s) => Some(s.to_string()),
            None => {
                self.errors.push(format!("{path}.{name}: must be a string"));
                None
            }
        }
    }

    fn number(
        &mut self,
        o: &serde_json::Map<String, Value>,
        path: &str,
        name: &str,
    ) -> Option<f64> {
        let v = self.field(o, path, name)?;
        match v.as_f64() {
            Some(n) => Some(n),
            None => {
                self.errors.push(format!("{path}.{name}: must be a number"));
                None
            }
        }
    }

    fn opt_number(
        &mut self,
        o: &serde_json::Map<String, Value>,
        path: &str,
        name: &str,
    ) -> Option<f64> {
        match o.get(name) {
            None => None,
            Some(v) => match v.as_f64() {
                Some(n) => Some(n),
                None => {
                    self.errors.push(format!("{path}.{name}: must be a number"));
                    None
                }
            },
        }
    }

    fn array<'v>(
        &mut self,
        o: &'v serde_json::Map<String, Value>,
        path: &str,
        name: &str,
    ) -> &'v [Value] {
        match self.field(o, path, name) {
            Some(Value::Array(a)) => a,
            Some(_) => {
                self.errors.push(format!("{path}.{name}: must be an array"));
                &[]
            }
            None => &[],
        }
    }

    fn name_values(&mut self, o: &serde_json::Map<String, Value>, path: &str, name: &str) {
        for (i, nv) in self.array(o, path, name).iter().enumerate() {
            let p = format!("{path}.{name}[{i}]");
            if let Some(nv) = self.obj(nv, &p) {
                self.string(nv, &p, "name");
                self.string(nv, &p, "value");
            }
        }
    }

    fn date(&mut self, o: &serde_json::Map<String, Value>, path: &str, name: &str) {
        if let Some(s) = self.string(o, path, name) {
            if !is_iso8601(&s) {
                self.errors
                    .push(format!("{path}.{name}: {s:?} is not an ISO 8601 date-time"));
            }
        }
    }
}

fn is_iso8601(s: &str) -> bool {
    // YYYY-MM-DDThh:mm:ss(.s+)?(Z|±hh:mm), as the HAR schema's pattern.
    let b = s.as_bytes();
    if b.len() < 20 {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if !(digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10))
        || b[10] != b'T'
        || !(digits(11..13) && b[13] == b':' && digits(14..16) && b[16] == b':' && digits(17..19))
    {
        return false;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == st {
            return false;
        }
    }
    match &b[i..] {
        b"Z" => true,
        [s, h1, h2, b':', m1, m2] if (*s == b'+' || *s == b'-') => {
            [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit())
        }
        _ => false,
    }
}

/// Checks a HAR document against the HAR 1.2 schema: every required field with its type,
/// ISO 8601 dates, `pageref`s that name a page, timings that are -1 or non-negative
/// (`send`, `wait`, `receive` never -1), and `time` equal to the sum of the phases
/// (within `tolerance_ms`). Returns every problem found.
pub fn validate(har: &Value, tolerance_ms: f64) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    let mut c = Check {
        errors: &mut errors,
    };
    let Some(root) = c.obj(har, "$") else {
        return Err(errors);
    };
    let Some(log) = c.field(root, "$", "log").and_then(|l| c.obj(l, "log")) else {
        return Err(errors);
    };
    if let Some(v) = c.string(log, "log", "version") {
        if v != "1.2" && v != "1.1" {
            c.errors.push(format!("log.version: {v:?} (want 1.2)"));
        }
    }
    for who in ["creator", "browser"] {
        if who == "browser" && !log.contains_key("browser") {
            continue;
        }
        if let Some(cr) = c.field(log, "log", who).and_then(|x| c.obj(x, who)) {
            c.string(cr, &format!("log.{who}"), "name");
            c.string(cr, &format!("log.{who}"), "version");
        }
    }
    let mut page_ids = std::collections::HashSet::new();
    if log.contains_key("pages") {
        for (i, p) in c.array(log, "log", "pages").iter().enumerate() {
            let path = format!("log.pages[{i}]");
            let Some(p) = c.obj(p, &path) else { continue };
            c.date(p, &path, "startedDateTime");
            if let Some(id) = c.string(p, &path, "id") {
                if !page_ids.insert(id.clone()) {
                    c.errors.push(format!("{path}.id: {id:?} is not unique"));
                }
            }
            c.string(p, &path, "title");
            if let Some(pt) = c
                .field(p, &path, "pageTimings")
                .and_then(|x| c.obj(x, &path))
            {
                let tp = format!("{path}.pageTimings");
                for n in ["onContentLoad", "onLoad"] {
                    if let Some(v) = c.opt_number(pt, &tp, n) {
                        if v < 0.0 && v != -1.0 {
                            c.errors.push(format!("{tp}.{n}: {v} (must be -1 or ≥ 0)"));
                        }
                    }
                }
            }
        }
    }
    for (i, e) in c.array(log, "log", "entries").iter().enumerate() {
        let path = format!("log.entries[{i}]");
        let Some(e) = c.obj(e, &path) else { continue };
        if let Some(pr) = e.get("pageref") {
            match pr.as_str() {
                Some(s) if page_ids.contains(s) => {}
                _ => c.errors.push(format!("{path}.pageref: {pr} names no page")),
            }
        }
        c.date(e, &path, "startedDateTime");
        let time = c.number(e, &path, "time");
        if let Some(rq) = c.field(e, &path, "request").and_then(|x| c.obj(x, &path)) {
            let p = format!("{path}.request");
            c.string(rq, &p, "method");
            c.string(rq, &p, "url");
            c.string(rq, &p, "httpVersion");
            c.name_values(rq, &p, "cookies");
            c.name_values(rq, &p, "headers");
            c.name_values(rq, &p, "queryString");
            c.number(rq, &p, "headersSize");
            c.number(rq, &p, "bodySize");
        }
        if let Some(rs) = c.field(e, &path, "response").and_then(|x| c.obj(x, &path)) {
            let p = format!("{path}.response");
            c.number(rs, &p, "status");
            c.string(rs, &p, "statusText");
            c.string(rs, &p, "httpVersion");
            c.name_values(rs, &p, "cookies");
            c.name_values(rs, &p, "headers");
            if let Some(ct) = c.field(rs, &p, "content").and_then(|x| c.obj(x, &p)) {
                let cp = format!("{p}.content");
                c.number(ct, &cp, "size");
                c.string(ct, &cp, "mimeType");
            }
            c.string(rs, &p, "redirectURL");
            c.number(rs, &p, "headersSize");
            c.number(rs, &p, "bodySize");
        }
        if let Some(ca) = c.field(e, &path, "cache") {
            c.obj(ca, &format!("{path}.cache"));
        }
        if let Some(t) = c.field(e, &path, "timings").and_then(|x| c.obj(x, &path)) {
            let p = format!("{path}.timings");
            let mut sum = 0.0;
            for n in [
                "blocked", "dns", "connect", "send", "wait", "receive", "ssl",
            ] {
                let required = matches!(n, "send" | "wait" | "receive");
                let v = if required {
                    c.number(t, &p, n)
                } else {
                    c.opt_number(t, &p, n)
                };
                if let Some(v) = v {
                    if required && v < 0.0 {
                        c.errors.push(format!("{p}.{n}: {v} (must be ≥ 0)"));
                    } else if v < 0.0 && v != -1.0 {
                        c.errors.push(format!("{p}.{n}: {v} (must be -1 or ≥ 0)"));
                    }
                    if n != "ssl" && v > 0.0 {
                        sum += v;
                    }
                }
            }
            if let (Some(ssl), Some(conn)) =
                (c.opt_number(t, &p, "ssl"), c.opt_number(t, &p, "connect"))
            {
                if ssl > 0.0 && ssl > conn + tolerance_ms {
                    c.errors.push(format!(
                        "{p}: ssl {ssl} > connect {conn} (ssl is part of connect)"
                    ));
                }
            }
            if let Some(time) = time {
                if (time - sum).abs() > tolerance_ms {
                    c.errors
                        .push(format!("{path}.time: {time} ≠ sum of timings {sum}"));
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_dates() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_367_409_600_123);
        assert_eq!(iso8601(t), "2013-05-01T12:00:00.123Z");
        assert_eq!(iso8601(std::time::UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = std::time::UNIX_EPOCH + std::time::Duration::from_secs(951_782_400);
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00.000Z");
        assert!(is_iso8601("2013-05-01T12:00:00.123+02:00"));
        assert!(!is_iso8601("2013-05-01 12:00:00"));
    }

    fn sample() -> Value {
        serde_json::json!({"log": {
            "version": "1.2",
            "creator": {"name": "speedy", "version": "0.1"},
            "pages": [{"startedDateTime": "2013-05-01T12:00:00.000Z", "id": "page_1",
                       "title": "x", "pageTimings": {"onContentLoad": 10.5, "onLoad": 20}}],
            "entries": [{
                "pageref": "page_1", "startedDateTime": "2013-05-01T12:00:00.000Z", "time": 6.0,
                "request": {"method": "GET", "url": "http://a/", "httpVersion": "HTTP/1.1",
                    "cookies": [], "headers": [{"name": "host", "value": "a"}], "queryString": [],
                    "headersSize": 30, "bodySize": 0},
                "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                    "cookies": [], "headers": [], "content": {"size": 3, "mimeType": "text/html"},
                    "redirectURL": "", "headersSize": 40, "bodySize": 3},
                "cache": {},
                "timings": {"blocked": 1, "dns": -1, "connect": 2, "ssl": 1, "send": 0, "wait": 2, "receive": 1}
            }]
        }})
    }

    #[test]
    fn accepts_a_valid_har() {
        validate(&sample(), 0.001).unwrap();
    }

    #[test]
    fn reports_every_problem() {
        let mut h = sample();
        h["log"]["entries"][0]["time"] = serde_json::json!(7.0);
        h["log"]["entries"][0]["pageref"] = serde_json::json!("nope");
        h["log"]["entries"][0]["timings"]["wait"] = serde_json::json!(-1);
        h["log"]["entries"][0]["request"]
            .as_object_mut()
            .unwrap()
            .remove("headers");
        h["log"]["pages"][0]["startedDateTime"] = serde_json::json!("yesterday");
        let errs = validate(&h, 0.001).unwrap_err();
        let all = errs.join("\n");
        for want in [
            "time: 7",
            "pageref",
            "timings.wait",
            "request.headers: required",
            "pages[0].startedDateTime",
        ] {
            assert!(all.contains(want), "missing {want:?} in\n{all}");
        }
    }

    #[test]
    fn round_trips_through_the_model() {
        let h: Har = serde_json::from_value(sample()).unwrap();
        let back = serde_json::to_value(&h).unwrap();
        validate(&back, 0.001).unwrap();
        assert_eq!(h.log.entries[0].timings.total(), 6.0);
    }
}
