//! Reading the HAR 1.2 files of the loads: only what the report draws (page timings,
//! and per entry its start, phases, URL, status). Unknown fields are ignored, missing
//! optional ones tolerated; a file that is not HAR at all is an error string.

use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

#[derive(Deserialize)]
struct File {
    log: Log,
}

#[derive(Deserialize)]
struct Log {
    #[serde(default)]
    pages: Vec<Page>,
    #[serde(default)]
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct Page {
    #[serde(rename = "startedDateTime", default)]
    started: String,
    #[serde(rename = "pageTimings", default)]
    timings: PageTimings,
}

#[derive(Deserialize, Default)]
struct PageTimings {
    #[serde(rename = "onContentLoad", default)]
    on_content_load: Option<f64>,
    #[serde(rename = "onLoad", default)]
    on_load: Option<f64>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "startedDateTime")]
    started: String,
    #[serde(default)]
    time: f64,
    request: Request,
    #[serde(default)]
    response: Response,
    timings: Timings,
    #[serde(rename = "_priority", default)]
    priority: Option<Value>,
    #[serde(rename = "_was_pushed", default)]
    pushed: Option<Value>,
    #[serde(rename = "_error", default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Request {
    url: String,
}

#[derive(Deserialize, Default)]
struct Response {
    #[serde(default)]
    status: i64,
}

#[derive(Deserialize)]
struct Timings {
    #[serde(default)]
    blocked: Option<f64>,
    #[serde(default)]
    dns: Option<f64>,
    #[serde(default)]
    connect: Option<f64>,
    #[serde(default)]
    send: Option<f64>,
    #[serde(default)]
    wait: Option<f64>,
    #[serde(default)]
    receive: Option<f64>,
}

/// One object of a load.
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    /// Request URL.
    pub url: String,
    /// Response status (0 when there was no response).
    pub status: i64,
    /// Start, ms after the page's start.
    pub start: f64,
    /// Phases in ms: blocked, connect (DNS + connect; HAR 1.2 counts TLS inside
    /// connect), send, wait, receive. `-1` (not applicable) reads as 0.
    pub phases: [f64; 5],
    /// Entry `time` (ms).
    pub time: f64,
    /// `_priority`, when present.
    pub priority: Option<String>,
    /// Pushed by the server (`_was_pushed`).
    pub pushed: bool,
    /// `_error`, when present.
    pub error: Option<String>,
}

impl Object {
    /// Whether the object failed (no response, 4xx/5xx, or an error recorded).
    pub fn failed(&self) -> bool {
        self.status == 0 || self.status >= 400 || self.error.is_some()
    }
}

/// A load as its HAR tells it.
#[derive(Clone, Debug, PartialEq)]
pub struct Load {
    /// onContentLoad, ms (`None` when absent or −1).
    pub on_content_load: Option<f64>,
    /// onLoad, ms.
    pub on_load: Option<f64>,
    /// Objects in start order.
    pub objects: Vec<Object>,
}

fn phase(v: Option<f64>) -> f64 {
    v.filter(|x| x.is_finite() && *x > 0.0).unwrap_or(0.0)
}

fn value_str(v: &Option<Value>) -> Option<String> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    }
}

/// Parses HAR text.
pub fn parse(text: &str) -> Result<Load, String> {
    let f: File = serde_json::from_str(text).map_err(|e| format!("not a HAR 1.2 file: {e}"))?;
    let page = f.log.pages.first();
    let page_start = page.and_then(|p| parse_time_ms(&p.started));
    let starts: Vec<Option<f64>> = f
        .log
        .entries
        .iter()
        .map(|e| parse_time_ms(&e.started))
        .collect();
    let first_entry = starts.iter().flatten().copied().reduce(f64::min);
    let origin = match (page_start, first_entry) {
        (Some(p), Some(e)) => p.min(e),
        (Some(p), None) => p,
        (None, Some(e)) => e,
        (None, None) => 0.0,
    };
    let ok = |v: Option<f64>| v.filter(|x| x.is_finite() && *x >= 0.0);
    let mut objects: Vec<Object> = f
        .log
        .entries
        .iter()
        .zip(&starts)
        .map(|(e, s)| {
            let t = &e.timings;
            Object {
                url: e.request.url.clone(),
                status: e.response.status,
                start: s.map_or(0.0, |s| s - origin),
                phases: [
                    phase(t.blocked),
                    phase(t.dns) + phase(t.connect),
                    phase(t.send),
                    phase(t.wait),
                    phase(t.receive),
                ],
                time: e.time,
                priority: value_str(&e.priority),
                pushed: matches!(&e.pushed, Some(Value::Bool(true)))
                    || matches!(&e.pushed, Some(Value::Number(n)) if n.as_f64() != Some(0.0)),
                error: value_str(&e.error),
            }
        })
        .collect();
    objects.sort_by(|a, b| a.start.total_cmp(&b.start));
    Ok(Load {
        on_content_load: page.and_then(|p| ok(p.timings.on_content_load)),
        on_load: page.and_then(|p| ok(p.timings.on_load)),
        objects,
    })
}

/// Reads and parses a HAR file; errors name the problem (not the path).
pub fn read(path: &Path) -> Result<Load, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    parse(&text)
}

/// Milliseconds since the Unix epoch of an ISO 8601 date-time
/// (`2026-01-02T03:04:05.678Z`, fraction and offset `±hh:mm` optional).
pub fn parse_time_ms(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (h, mi, sec) = (n(11..13)?, n(14..16)?, n(17..19)?);
    let mut i = 19;
    let mut frac = 0.0;
    if b.get(i) == Some(&b'.') {
        let st = i + 1;
        i = st;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        frac = format!("0.{}", &s[st..i]).parse::<f64>().ok()?;
    }
    let offset_min = match b.get(i) {
        None | Some(b'Z') | Some(b'z') => 0,
        Some(b'+') | Some(b'-') => {
            let sign = if b[i] == b'-' { -1 } else { 1 };
            let oh = n(i + 1..i + 3)?;
            let om = if b.get(i + 3) == Some(&b':') {
                n(i + 4..i + 6)?
            } else {
                n(i + 3..i + 5).unwrap_or(0)
            };
            sign * (oh * 60 + om)
        }
        _ => return None,
    };
    // Days from civil (Howard Hinnant).
    let yy = if mo <= 2 { y - 1 } else { y };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_min * 60;
    Some(secs as f64 * 1000.0 + frac * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times() {
        assert_eq!(parse_time_ms("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(parse_time_ms("1970-01-01T00:00:01.250Z"), Some(1250.0));
        assert_eq!(
            parse_time_ms("2000-03-01T00:00:00Z"),
            Some(951_868_800_000.0)
        );
        assert_eq!(parse_time_ms("1970-01-01T01:00:00+01:00"), Some(0.0));
        assert_eq!(parse_time_ms("nonsense"), None);
    }

    #[test]
    fn parses_entries_and_phases() {
        let text = r#"{"log":{"version":"1.2","pages":[{"startedDateTime":"2026-01-01T00:00:00.000Z",
          "id":"p","title":"t","pageTimings":{"onContentLoad":-1,"onLoad":300}}],
          "entries":[{"startedDateTime":"2026-01-01T00:00:00.100Z","time":50,
            "request":{"url":"http://b/"},"response":{"status":404},
            "timings":{"blocked":1,"dns":-1,"connect":10,"ssl":5,"send":1,"wait":30,"receive":8},
            "_priority":"High","_was_pushed":1},
           {"startedDateTime":"2026-01-01T00:00:00.000Z","time":20,
            "request":{"url":"http://a/"},"response":{"status":200},
            "timings":{"blocked":-1,"send":0,"wait":15,"receive":5}}]}}"#;
        let l = parse(text).unwrap();
        assert_eq!((l.on_load, l.on_content_load), (Some(300.0), None));
        assert_eq!(l.objects[0].url, "http://a/");
        let b = &l.objects[1];
        assert_eq!(b.start, 100.0);
        assert_eq!(b.phases, [1.0, 10.0, 1.0, 30.0, 8.0]);
        assert!(b.pushed && b.failed());
        assert_eq!(b.priority.as_deref(), Some("High"));
        assert!(parse("{}").is_err());
    }
}
