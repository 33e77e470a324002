//! The DevTools events and values the lab reads, as types: the `Network` domain's
//! request lifecycle (`requestWillBeSent`, `responseReceived`, `dataReceived`,
//! `loadingFinished`, `loadingFailed`) and the page's timings ([`PageTimings`]), read
//! with a script after the load. Field names are the protocol's (camelCase); times are
//! the protocol's: `timestamp` in seconds of a monotonic clock, `wallTime` in seconds
//! since the epoch, a response's `timing` in ms after its `requestTime`.

use super::cdp::Event;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A request as `requestWillBeSent` describes it.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Request {
    /// URL (without the fragment).
    pub url: String,
    /// Method.
    pub method: String,
    /// Headers, name → value (the renderer's; HTTP/2's pseudo-headers are not among
    /// them).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Chromium's priority when it asked (`VeryHigh` … `VeryLow`).
    #[serde(default)]
    pub initial_priority: Option<String>,
}

/// Who asked for a request.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Initiator {
    /// `parser`, `script`, `preload`, `other`, …
    #[serde(rename = "type")]
    pub kind: String,
    /// The initiating document or script, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The line of `url` (0-based) that asked, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_number: Option<f64>,
    /// The script's call stack when a script asked: the top frame first, then the
    /// asynchronous parents (a timer's, a promise's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<Box<StackTrace>>,
}

/// A script's call stack (`Runtime.StackTrace`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StackTrace {
    /// The frames, the innermost first.
    #[serde(default)]
    pub call_frames: Vec<CallFrame>,
    /// The stack that scheduled this one (an asynchronous parent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<Box<StackTrace>>,
}

/// One frame of a [`StackTrace`].
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallFrame {
    /// The script's URL (empty for code without one, such as `eval`).
    #[serde(default)]
    pub url: String,
    /// The line (0-based).
    #[serde(default)]
    pub line_number: f64,
}

impl Initiator {
    /// As the archive's importer reads initiators: its kind, the candidate URLs (the
    /// initiator's own, then each frame's script from the top of the stack, then the
    /// asynchronous parents'), and the line in the first of them.
    pub(crate) fn to_har(&self) -> speedy_archive::har::HarInitiator {
        use speedy_archive::har::{HarInitiator, InitiatorKind};
        let kind = match self.kind.as_str() {
            "parser" => InitiatorKind::Parser,
            "script" => InitiatorKind::Script,
            other => InitiatorKind::Other(other.to_string()),
        };
        let mut urls: Vec<String> = Vec::new();
        let mut line = None;
        if let Some(u) = self.url.as_ref().filter(|u| !u.is_empty()) {
            urls.push(u.clone());
            line = self.line_number;
        }
        let mut stack = self.stack.as_deref();
        while let Some(s) = stack {
            for f in s.call_frames.iter().filter(|f| !f.url.is_empty()) {
                if urls.is_empty() {
                    line = Some(f.line_number);
                }
                if !urls.contains(&f.url) {
                    urls.push(f.url.clone());
                }
            }
            stack = s.parent.as_deref();
        }
        HarInitiator {
            kind,
            urls,
            line: line.map(|l| l.max(0.0) as u64),
        }
    }
}

/// `Network.requestWillBeSent`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequestWillBeSent {
    /// The request's id (a redirect keeps it).
    pub request_id: String,
    /// The request.
    pub request: Request,
    /// When, s (monotonic).
    pub timestamp: f64,
    /// When, s since the epoch.
    pub wall_time: f64,
    /// Who asked.
    #[serde(default)]
    pub initiator: Initiator,
    /// `Document`, `Stylesheet`, `Script`, `Image`, `Font`, `Fetch`, …
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// Set when this request follows a redirect: the response that redirected.
    #[serde(default)]
    pub redirect_response: Option<Response>,
}

/// A response's phases, ms after `request_time` (-1: did not happen).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResourceTiming {
    /// When the request started on the network stack, s (monotonic).
    pub request_time: f64,
    /// Name resolution.
    pub dns_start: f64,
    /// See `dns_start`.
    pub dns_end: f64,
    /// Connection set-up (TLS included).
    pub connect_start: f64,
    /// See `connect_start`.
    pub connect_end: f64,
    /// TLS handshake.
    pub ssl_start: f64,
    /// See `ssl_start`.
    pub ssl_end: f64,
    /// Sending the request.
    pub send_start: f64,
    /// See `send_start`.
    pub send_end: f64,
    /// The response's headers had arrived.
    pub receive_headers_end: f64,
}

/// A response.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Response {
    /// Status.
    pub status: u16,
    /// Status text (empty over h2 and h3).
    #[serde(default)]
    pub status_text: String,
    /// Headers, name → value.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// MIME type.
    #[serde(default)]
    pub mime_type: String,
    /// `http/1.1`, `h2`, `h3`, …
    #[serde(default)]
    pub protocol: Option<String>,
    /// The server's address.
    #[serde(default, rename = "remoteIPAddress")]
    pub remote_ip_address: Option<String>,
    /// The server's port.
    #[serde(default)]
    pub remote_port: Option<u16>,
    /// The connection's id (0 or absent when none was used).
    #[serde(default)]
    pub connection_id: Option<f64>,
    /// The phases.
    #[serde(default)]
    pub timing: Option<ResourceTiming>,
}

/// `Network.responseReceived`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResponseReceived {
    /// The request's id.
    pub request_id: String,
    /// When, s (monotonic).
    pub timestamp: f64,
    /// The response.
    pub response: Response,
}

/// `Network.dataReceived`: a piece of the body.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DataReceived {
    /// The request's id.
    pub request_id: String,
    /// Decoded bytes.
    pub data_length: u64,
}

/// `Network.loadingFinished`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LoadingFinished {
    /// The request's id.
    pub request_id: String,
    /// When, s (monotonic).
    pub timestamp: f64,
    /// Bytes received for it in all (headers and body, as they came over the network).
    pub encoded_data_length: f64,
}

/// `Network.loadingFailed`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LoadingFailed {
    /// The request's id.
    pub request_id: String,
    /// When, s (monotonic).
    pub timestamp: f64,
    /// Why (`net::ERR_…`).
    pub error_text: String,
}

/// One event of a request's lifecycle.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum NetworkEvent {
    /// `requestWillBeSent`.
    Request(RequestWillBeSent),
    /// `responseReceived`.
    Response(ResponseReceived),
    /// `dataReceived`.
    Data(DataReceived),
    /// `loadingFinished`.
    Finished(LoadingFinished),
    /// `loadingFailed`.
    Failed(LoadingFailed),
}

impl NetworkEvent {
    /// The `Network` events of `sessions` (the page's and its frames') among `events`,
    /// in order; an event of these kinds that does not read is an error naming it.
    pub(crate) fn of_sessions(
        events: &[Event],
        sessions: &[String],
    ) -> Result<Vec<NetworkEvent>, String> {
        let mut out = Vec::new();
        let ours = |e: &&Event| e.session.as_ref().is_some_and(|s| sessions.contains(s));
        for e in events.iter().filter(ours) {
            out.push(match e.method.as_str() {
                "Network.requestWillBeSent" => NetworkEvent::Request(e.params()?),
                "Network.responseReceived" => NetworkEvent::Response(e.params()?),
                "Network.dataReceived" => NetworkEvent::Data(e.params()?),
                "Network.loadingFinished" => NetworkEvent::Finished(e.params()?),
                "Network.loadingFailed" => NetworkEvent::Failed(e.params()?),
                _ => continue,
            });
        }
        Ok(out)
    }
}

/// The page's timings, read with a script after the load: Navigation Timing (ms from
/// navigation start), Paint Timing's First Contentful Paint, and the last Largest
/// Contentful Paint candidate an observer registered before the page ran saw.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PageTimings {
    /// `loadEventStart` (0: the load event has not happened).
    pub load: f64,
    /// `domContentLoadedEventStart`.
    pub dcl: f64,
    /// The document's `nextHopProtocol` (`http/1.1`, `h2`, `h3`).
    pub protocol: String,
    /// `fetchStart`: when the document's request began, after navigation start.
    pub fetch: f64,
    /// Resource Timing entries (the document's subresources).
    pub resources: u64,
    /// First Contentful Paint (`null`: none yet).
    #[serde(default)]
    pub fcp: Option<f64>,
    /// Largest Contentful Paint's last candidate (`null`: none yet).
    #[serde(default)]
    pub lcp: Option<f64>,
}

/// Run in every document before its own scripts: a Resource Timing buffer large enough
/// for the largest pages (it keeps 250 entries by default), and an observer of Largest
/// Contentful Paint candidates (they are not in the performance timeline, only
/// observable).
pub(crate) const BEFORE_PAGE: &str = "performance.setResourceTimingBufferSize(100000);
try {
  new PerformanceObserver((list) => {
    const all = list.getEntries();
    if (all.length) { window.__speedyLcp = all[all.length - 1].startTime; }
  }).observe({ type: 'largest-contentful-paint', buffered: true });
} catch (e) {}";

/// The script reading the page's timings ([`PageTimings`]), as an expression.
macro_rules! read_timings {
    () => {
        "(() => {
  const n = performance.getEntriesByType('navigation')[0];
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  return {
    load: n.loadEventStart, dcl: n.domContentLoadedEventStart, protocol: n.nextHopProtocol,
    fetch: n.fetchStart, resources: performance.getEntriesByType('resource').length,
    fcp: fcp ? fcp.startTime : null,
    lcp: typeof window.__speedyLcp === 'number' ? window.__speedyLcp : null,
  };
})()"
    };
}

/// The page's timings ([`PageTimings`]) once the frames after the load have been drawn
/// (two animation frames, or 250 ms at most: a paint after the load event counts as
/// Chromium would show it).
pub(crate) const TIMINGS_AFTER_PAINT: &str = concat!(
    "new Promise((done) => {
  const t = setTimeout(done, 250);
  requestAnimationFrame(() => requestAnimationFrame(() => { clearTimeout(t); done(); }));
}).then(() => ",
    read_timings!(),
    ")"
);

/// The page's timings at once (the fidelity check reads them at the load event).
pub(crate) const TIMINGS_NOW: &str = read_timings!();

#[cfg(test)]
mod tests {
    use super::*;
    use speedy_archive::har::InitiatorKind;

    #[test]
    fn initiators_read_with_their_stacks_top_frame_first() {
        // As Chromium 156 sends it for a fetch() in a timer's callback.
        let json = r#"{"type":"script","stack":{"callFrames":[
            {"functionName":"","scriptId":"12","url":"","lineNumber":0,"columnNumber":1},
            {"functionName":"load","scriptId":"9","url":"https://a.test/app.js","lineNumber":4,"columnNumber":2}],
            "parent":{"description":"setTimeout","callFrames":[
            {"functionName":"","scriptId":"8","url":"https://a.test/boot.js","lineNumber":1,"columnNumber":0},
            {"functionName":"","scriptId":"9","url":"https://a.test/app.js","lineNumber":9,"columnNumber":0}]}}}"#;
        let i: Initiator = serde_json::from_str(json).unwrap();
        let h = i.to_har();
        assert_eq!(h.kind, InitiatorKind::Script);
        assert_eq!(h.urls, ["https://a.test/app.js", "https://a.test/boot.js"]);
        assert_eq!(h.line, Some(4));
        let p: Initiator =
            serde_json::from_str(r#"{"type":"parser","url":"https://a.test/","lineNumber":7}"#)
                .unwrap();
        let h = p.to_har();
        assert_eq!(
            (h.kind, h.urls, h.line),
            (
                InitiatorKind::Parser,
                vec!["https://a.test/".to_string()],
                Some(7)
            )
        );
        let o: Initiator = serde_json::from_str(r#"{"type":"other"}"#).unwrap();
        assert_eq!(o.to_har().kind, InitiatorKind::Other("other".into()));
        // Written back into a HAR's `_initiator` as the HAR reader takes it.
        let v = serde_json::to_value(&i).unwrap();
        assert!(
            v["stack"]["parent"]["callFrames"][0]["url"] == "https://a.test/boot.js",
            "{v}"
        );
    }
}
