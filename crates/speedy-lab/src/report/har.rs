//! What the report draws of a load's HAR 1.2 file (page timings, and per entry its
//! start, phases, URL, status), read through the one HAR model
//! ([`speedy_archive::har`]): a file that is not a HAR as speedy writes it (a required
//! field missing, a wrong type) is an error string, noted by the report.

use speedy_archive::date::parse_ms;
use speedy_archive::har::Har;
use std::path::Path;

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
    /// Failed as the lab counts it ([`speedy_archive::har::failed`]).
    pub fn failed(&self) -> bool {
        speedy_archive::har::failed(self.status, self.error.is_some())
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

fn phase(v: f64) -> f64 {
    if v.is_finite() && v > 0.0 {
        v
    } else {
        0.0
    }
}

/// Parses HAR text.
pub fn parse(text: &str) -> Result<Load, String> {
    let f = Har::from_slice(text.as_bytes())?;
    let page = f.log.pages.first();
    let page_start = page.and_then(|p| parse_ms(&p.started_date_time));
    let starts: Vec<Option<f64>> = f
        .log
        .entries
        .iter()
        .map(|e| parse_ms(&e.started_date_time))
        .collect();
    let first_entry = starts.iter().flatten().copied().reduce(f64::min);
    let origin = match (page_start, first_entry) {
        (Some(p), Some(e)) => p.min(e),
        (Some(p), None) => p,
        (None, Some(e)) => e,
        (None, None) => 0.0,
    };
    let ok = |v: f64| Some(v).filter(|x| x.is_finite() && *x >= 0.0);
    let mut objects: Vec<Object> = f
        .log
        .entries
        .iter()
        .zip(&starts)
        .map(|(e, s)| {
            let t = &e.timings;
            Object {
                url: e.request.url.clone(),
                status: i64::from(e.response.status),
                start: s.map_or(0.0, |s| s - origin),
                phases: [
                    phase(t.blocked),
                    phase(t.dns) + phase(t.connect),
                    phase(t.send),
                    phase(t.wait),
                    phase(t.receive),
                ],
                time: e.time,
                priority: e.priority.clone(),
                pushed: e.was_pushed,
                error: e.error.clone(),
            }
        })
        .collect();
    objects.sort_by(|a, b| a.start.total_cmp(&b.start));
    Ok(Load {
        on_content_load: page.and_then(|p| ok(p.page_timings.on_content_load)),
        on_load: page.and_then(|p| ok(p.page_timings.on_load)),
        objects,
    })
}

/// Reads and parses a HAR file; errors name the problem (not the path).
pub fn read(path: &Path) -> Result<Load, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    parse(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_entries_and_phases() {
        // Complete HAR 1.2 entries: request and response as the model requires them.
        let entry = |start: &str, time: f64, url: &str, status: u16, timings: &str, ext: &str| {
            format!(
                r#"{{"startedDateTime":"{start}","time":{time},
                "request":{{"method":"GET","url":"{url}","httpVersion":"HTTP/1.1","cookies":[],
                  "headers":[],"queryString":[],"headersSize":-1,"bodySize":0}},
                "response":{{"status":{status},"statusText":"","httpVersion":"HTTP/1.1",
                  "cookies":[],"headers":[],"content":{{"size":0,"mimeType":""}},
                  "redirectURL":"","headersSize":-1,"bodySize":0}},
                "cache":{{}},"timings":{timings}{ext}}}"#
            )
        };
        let text = format!(
            r#"{{"log":{{"version":"1.2","creator":{{"name":"t","version":"0"}},
          "pages":[{{"startedDateTime":"2026-01-01T00:00:00.000Z",
          "id":"p","title":"t","pageTimings":{{"onContentLoad":-1,"onLoad":300}}}}],
          "entries":[{},{}]}}}}"#,
            entry(
                "2026-01-01T00:00:00.100Z",
                50.0,
                "http://b/",
                404,
                r#"{"blocked":1,"dns":-1,"connect":10,"ssl":5,"send":1,"wait":30,"receive":8}"#,
                r#","_priority":"High","_was_pushed":1"#
            ),
            entry(
                "2026-01-01T00:00:00.000Z",
                20.0,
                "http://a/",
                200,
                r#"{"blocked":-1,"send":0,"wait":15,"receive":5}"#,
                ""
            )
        );
        let text = text.as_str();
        let l = parse(text).unwrap();
        assert_eq!((l.on_load, l.on_content_load), (Some(300.0), None));
        assert_eq!(l.objects[0].url, "http://a/");
        let b = &l.objects[1];
        assert_eq!(b.start, 100.0);
        assert_eq!(b.phases, [1.0, 10.0, 1.0, 30.0, 8.0]);
        assert!(b.pushed && b.failed());
        assert_eq!(b.priority.as_deref(), Some("High"));
        assert!(parse("{}").is_err());
        // A required field missing is an error that names it, not a default.
        let e = parse(&text.replacen(r#""method":"GET","#, "", 1)).unwrap_err();
        assert!(e.contains("method"), "{e}");
    }
}
