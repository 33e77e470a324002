//! A Chromium load as a HAR 1.2 file, through speedy's one HAR model
//! ([`speedy_archive::har`]): one page (Navigation Timing's onLoad and DOMContentLoaded,
//! `_protocol` from `nextHopProtocol`, `_fcp_ms` and `_lcp_ms`) and one entry per request
//! of the DevTools `Network` events (a redirect ends one entry and starts the next).
//!
//! What DevTools gives is written; what it does not is HAR's "unknown" (-1) or left out,
//! never a made-up 0: header sizes are -1 (Chromium's renderer does not see them),
//! `bodySize` is -1 and `_transferSize` is `loadingFinished`'s encoded length (headers
//! and body as they came), `content.size` the decoded bytes of `dataReceived`. There is
//! no `_totals`: that is the loader's own count. A request still open when the load
//! ended gets `_error`. A cross-site frame's requests come from its own target (the
//! events of every session of the page are read together, by request id); Chromium's
//! own request for the tab's icon (`/favicon.ico`) is left out.
//!
//! Times: entries start at `requestWillBeSent`; the page starts at navigation start,
//! placed on the document request's clock at Navigation Timing's `fetchStart` (both are
//! monotonic clocks; only the origin differs). Phases come from the response's
//! `timing`, as DevTools' own HAR export reads them: `blocked` is the queueing before
//! `requestTime` plus the wait before the first of DNS, connect and send; `connect`
//! includes `ssl`.

use super::events::{NetworkEvent, RequestWillBeSent, ResourceTiming, Response};
use super::Loaded;
use speedy_archive::date::format_ms;
use speedy_archive::har::{
    self, query_string, round_ms, Content, Creator, Entry, Har, NameValue, Page, Timings,
};
use std::collections::{BTreeMap, HashMap};

/// One request while its events are gathered.
struct Pending {
    /// `requestWillBeSent` (or the request after a redirect).
    req: RequestWillBeSent,
    /// The response, when one came.
    response: Option<Response>,
    /// Decoded body bytes (`dataReceived`).
    data: u64,
    /// When it ended (s, monotonic) and how: its encoded length, or why it failed.
    end: Option<(f64, Result<f64, String>)>,
}

/// The HAR of a Chromium load of `url` (Chromium `browser`, its `--version`).
pub(crate) fn build(url: &str, loaded: &Loaded, browser: &str) -> Har {
    let t = &loaded.timings;
    let pending = gather(&loaded.events);
    // Navigation start on the events' clocks: the document's request is at fetchStart.
    let doc = pending
        .iter()
        .find(|p| p.req.kind.as_deref() == Some("Document"))
        .or(pending.first());
    let (base_ts, base_wall) = match doc {
        Some(d) => (
            d.req.timestamp - t.fetch / 1000.0,
            d.req.wall_time - t.fetch / 1000.0,
        ),
        None => (0.0, 0.0),
    };
    let page_id = "page_1".to_string();
    let known = |v: f64| if v > 0.0 { round_ms(v) } else { -1.0 };
    let protocol = match (t.protocol.is_empty(), doc.and_then(|d| d.response.as_ref())) {
        (false, _) => Some(t.protocol.clone()),
        (true, Some(r)) => r.protocol.clone(),
        (true, None) => None,
    };
    let page = Page {
        started_date_time: format_ms(base_wall * 1000.0),
        id: page_id.clone(),
        title: url.to_string(),
        page_timings: har::PageTimings {
            on_content_load: known(t.dcl),
            on_load: if loaded.timed_out {
                -1.0
            } else {
                known(t.load)
            },
        },
        protocol,
        totals: None,
        connections: None,
        dns_cost_ms: None,
        timed_out: loaded.timed_out,
        fcp_ms: t.fcp.map(round_ms),
        lcp_ms: t.lcp.map(round_ms),
        speedy: None,
        extra: Default::default(),
    };
    let entries = pending
        .iter()
        .map(|p| entry(p, &page_id, (base_ts, base_wall)))
        .collect();
    let mut h = Har::by_speedy(vec![page], entries);
    h.log.browser = Some(Creator {
        name: "Chromium".into(),
        version: browser_version(browser),
    });
    h
}

/// Whether `r` is Chromium's own request for the tab's icon (`/favicon.ico`, asked for
/// by no page), which the HAR leaves out: the page did not load it.
fn browsers_own(r: &RequestWillBeSent) -> bool {
    r.kind.as_deref() == Some("Other")
        && r.initiator.kind == "other"
        && r.request.url.ends_with("/favicon.ico")
}

/// `156.0.8078.108` of `Chromium 156.0.8078.108 built on Debian…` (the whole line when
/// it has no such word).
fn browser_version(v: &str) -> String {
    v.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .unwrap_or(v)
        .to_string()
}

/// The requests of `events`, in the order they were asked for (a redirect's next
/// request after the one it ends).
fn gather(events: &[NetworkEvent]) -> Vec<Pending> {
    let mut list: Vec<Pending> = Vec::new();
    let mut current: HashMap<&str, usize> = HashMap::new();
    for ev in events {
        match ev {
            NetworkEvent::Request(r) if browsers_own(r) => {}
            NetworkEvent::Request(r) => {
                if let Some(&i) = current.get(r.request_id.as_str()) {
                    let Some(redirect) = &r.redirect_response else {
                        continue; // the same request again: keep the first
                    };
                    let p = &mut list[i];
                    p.response = Some(redirect.clone());
                    p.end = Some((r.timestamp, Ok(-1.0)));
                }
                current.insert(&r.request_id, list.len());
                list.push(Pending {
                    req: r.clone(),
                    response: None,
                    data: 0,
                    end: None,
                });
            }
            NetworkEvent::Response(r) => {
                if let Some(&i) = current.get(r.request_id.as_str()) {
                    list[i].response = Some(r.response.clone());
                }
            }
            NetworkEvent::Data(d) => {
                if let Some(&i) = current.get(d.request_id.as_str()) {
                    list[i].data += d.data_length;
                }
            }
            NetworkEvent::Finished(f) => {
                if let Some(&i) = current.get(f.request_id.as_str()) {
                    list[i].end = Some((f.timestamp, Ok(f.encoded_data_length)));
                }
            }
            NetworkEvent::Failed(f) => {
                if let Some(&i) = current.get(f.request_id.as_str()) {
                    list[i].end = Some((f.timestamp, Err(f.error_text.clone())));
                }
            }
        }
    }
    list
}

/// The HAR entry of one request; `base` is navigation start (s, monotonic; s since the
/// epoch).
fn entry(p: &Pending, page_id: &str, (base_ts, base_wall): (f64, f64)) -> Entry {
    let start = p.req.timestamp;
    let timings = phases(p);
    let (status, mut error) = match (&p.response, &p.end) {
        (_, Some((_, Err(e)))) => (p.response.as_ref().map_or(0, |r| r.status), Some(e)),
        (Some(r), _) => (r.status, None),
        (None, _) => (0, None),
    };
    let unfinished = "not finished when the load ended".to_string();
    if p.end.is_none() {
        error = Some(&unfinished);
    }
    let r = p.response.as_ref();
    let version = r.and_then(|r| r.protocol.clone()).unwrap_or_default();
    let headers = |h: &BTreeMap<String, String>| -> Vec<NameValue> {
        h.iter().map(|(n, v)| NameValue::new(n, v)).collect()
    };
    let resp_headers = r.map(|r| headers(&r.headers)).unwrap_or_default();
    let location = resp_headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("location"))
        .map_or(String::new(), |h| h.value.clone());
    let connection = r
        .and_then(|r| r.connection_id)
        .filter(|c| *c > 0.0)
        .map(|c| c as u64);
    Entry {
        pageref: Some(page_id.to_string()),
        started_date_time: format_ms((base_wall + (start - base_ts)) * 1000.0),
        time: round_ms(timings.total()),
        request: har::Request {
            method: p.req.request.method.clone(),
            url: p.req.request.url.clone(),
            http_version: version.clone(),
            cookies: vec![],
            headers: headers(&p.req.request.headers),
            query_string: query_string(&p.req.request.url),
            headers_size: -1,
            body_size: if p.req.request.method == "GET" { 0 } else { -1 },
        },
        response: har::Response {
            status,
            status_text: r.map(|r| r.status_text.clone()).unwrap_or_default(),
            http_version: version,
            cookies: vec![],
            headers: resp_headers,
            content: Content {
                size: p.data as i64,
                compression: None,
                mime_type: r
                    .map(|r| r.mime_type.clone())
                    .filter(|m| !m.is_empty())
                    .unwrap_or_else(|| "x-unknown".into()),
                text: None,
                encoding: None,
            },
            redirect_url: location,
            headers_size: -1,
            body_size: -1,
            transfer_size: match &p.end {
                Some((_, Ok(n))) if *n >= 0.0 => Some(*n as u64),
                _ => None,
            },
            extra: Default::default(),
        },
        cache: serde_json::json!({}),
        timings,
        server_ip_address: r.and_then(|r| r.remote_ip_address.clone()),
        connection: connection.map(|c| c.to_string()),
        priority: p.req.request.initial_priority.clone(),
        spdy_priority: None,
        initiator: serde_json::to_value(&p.req.initiator).ok(),
        resource_type: p.req.kind.as_ref().map(|k| k.to_ascii_lowercase()),
        was_pushed: false,
        archive_id: None,
        error: error.cloned(),
        connection_id: connection,
        speedy: None,
        extra: Default::default(),
    }
}

/// The least of `vs` that is not negative.
fn first_of(vs: &[f64]) -> Option<f64> {
    vs.iter().copied().filter(|v| *v >= 0.0).reduce(f64::min)
}

/// A request's phases (ms), from its response's `timing` when it has one; without one,
/// all of it is `wait` up to the response and `receive` after.
fn phases(p: &Pending) -> Timings {
    let start = p.req.timestamp * 1000.0;
    let end = p.end.as_ref().map(|(t, _)| t * 1000.0);
    let d = |a: f64, b: f64| if a >= 0.0 && b >= a { b - a } else { -1.0 };
    let timing: Option<&ResourceTiming> = p.response.as_ref().and_then(|r| r.timing.as_ref());
    let Some(t) = timing else {
        return Timings {
            blocked: -1.0,
            dns: -1.0,
            connect: -1.0,
            send: 0.0,
            wait: round_ms(end.map_or(0.0, |e| (e - start).max(0.0))),
            receive: 0.0,
            ssl: -1.0,
        };
    };
    let request_ms = t.request_time * 1000.0;
    let queued = (request_ms - start).max(0.0);
    // Each phase runs from the end of the one before, so that they add up (DevTools'
    // export does the same): DNS from the end of blocking, connect from the end of DNS,
    // send from the end of connect.
    let first = first_of(&[t.dns_start, t.connect_start, t.send_start]).unwrap_or(0.0);
    let dns = d(first, t.dns_end);
    let connect = d(t.dns_end.max(first), t.connect_end);
    let sent_from = t.connect_end.max(t.dns_end).max(first);
    let send_end = t.send_end.max(sent_from);
    let headers_at = request_ms + t.receive_headers_end;
    Timings {
        blocked: round_ms(queued + first),
        dns: round_ms(if t.dns_start >= 0.0 { dns } else { -1.0 }),
        connect: round_ms(if t.connect_start >= 0.0 {
            connect
        } else {
            -1.0
        }),
        send: round_ms(send_end - sent_from),
        wait: round_ms((t.receive_headers_end - send_end).max(0.0)),
        receive: round_ms(end.map_or(0.0, |e| (e - headers_at).max(0.0))),
        ssl: round_ms(d(t.ssl_start, t.ssl_end)),
    }
}

/// The row's counts from a Chromium HAR: (objects, failed objects, connections): every
/// entry, those that failed ([`Entry::failed`](speedy_archive::har::Entry::failed)), and the distinct connections responses came over.
pub(crate) fn counts(h: &Har) -> (u32, u32, u32) {
    let e = &h.log.entries;
    let failed = e.iter().filter(|x| x.failed()).count();
    let conns: std::collections::BTreeSet<u64> = e.iter().filter_map(|x| x.connection_id).collect();
    (e.len() as u32, failed as u32, conns.len() as u32)
}

#[cfg(test)]
mod tests {
    use super::super::cdp::Event;
    use super::super::events::PageTimings;
    use super::*;

    /// What Chromium 156 sent for a page of a document, a style sheet, an image that
    /// redirects and a script that fails (abridged: fields the lab does not read left
    /// out), in the order it sent them.
    const EVENTS: &[&str] = &[
        r#"{"method":"Network.requestWillBeSent","sessionId":"S","params":{"requestId":"D","loaderId":"D","documentURL":"https://www.site0.example/","request":{"url":"https://www.site0.example/","method":"GET","headers":{"Upgrade-Insecure-Requests":"1","User-Agent":"Mozilla/5.0 HeadlessChrome/156"},"initialPriority":"VeryHigh"},"timestamp":1000.000,"wallTime":1700000000.000,"initiator":{"type":"other"},"type":"Document"}}"#,
        r#"{"method":"Network.responseReceived","sessionId":"S","params":{"requestId":"D","timestamp":1000.120,"type":"Document","response":{"url":"https://www.site0.example/","status":200,"statusText":"","headers":{"content-type":"text/html"},"mimeType":"text/html","protocol":"h2","remoteIPAddress":"10.9.0.2","remotePort":443,"connectionId":17,"encodedDataLength":120,"timing":{"requestTime":1000.002,"proxyStart":-1,"proxyEnd":-1,"dnsStart":0.5,"dnsEnd":1.0,"connectStart":1.0,"connectEnd":60.0,"sslStart":21.0,"sslEnd":60.0,"workerStart":-1,"workerReady":-1,"sendStart":60.5,"sendEnd":61.0,"pushStart":0,"pushEnd":0,"receiveHeadersStart":110.0,"receiveHeadersEnd":118.0}}}}"#,
        r#"{"method":"Network.requestWillBeSent","sessionId":"S","params":{"requestId":"C","request":{"url":"https://static.site0.example/a.css?v=2","method":"GET","headers":{},"initialPriority":"VeryHigh"},"timestamp":1000.130,"wallTime":1700000000.130,"initiator":{"type":"parser","url":"https://www.site0.example/"},"type":"Stylesheet"}}"#,
        r#"{"method":"Network.dataReceived","sessionId":"S","params":{"requestId":"D","timestamp":1000.125,"dataLength":3000,"encodedDataLength":1000}}"#,
        r#"{"method":"Network.dataReceived","sessionId":"S","params":{"requestId":"D","timestamp":1000.135,"dataLength":2000,"encodedDataLength":700}}"#,
        r#"{"method":"Network.loadingFinished","sessionId":"S","params":{"requestId":"D","timestamp":1000.140,"encodedDataLength":1820}}"#,
        r#"{"method":"Network.requestWillBeSent","sessionId":"S","params":{"requestId":"I","request":{"url":"https://www.site0.example/old.png","method":"GET","headers":{},"initialPriority":"Low"},"timestamp":1000.150,"wallTime":1700000000.150,"initiator":{"type":"parser"},"type":"Image"}}"#,
        r#"{"method":"Network.responseReceived","sessionId":"S","params":{"requestId":"C","timestamp":1000.200,"response":{"url":"https://static.site0.example/a.css?v=2","status":200,"statusText":"","headers":{"content-type":"text/css"},"mimeType":"text/css","protocol":"h2","remoteIPAddress":"10.9.0.3","connectionId":18,"timing":{"requestTime":1000.131,"dnsStart":-1,"dnsEnd":-1,"connectStart":0.2,"connectEnd":50.0,"sslStart":10.0,"sslEnd":50.0,"sendStart":50.1,"sendEnd":50.3,"receiveHeadersEnd":68.0}}}}"#,
        r#"{"method":"Network.requestWillBeSent","sessionId":"S","params":{"requestId":"I","request":{"url":"https://www.site0.example/new.png","method":"GET","headers":{},"initialPriority":"Low"},"timestamp":1000.190,"wallTime":1700000000.190,"initiator":{"type":"parser"},"type":"Image","redirectResponse":{"url":"https://www.site0.example/old.png","status":301,"statusText":"","headers":{"location":"/new.png"},"mimeType":"","protocol":"h2","connectionId":17,"timing":{"requestTime":1000.150,"dnsStart":-1,"dnsEnd":-1,"connectStart":-1,"connectEnd":-1,"sslStart":-1,"sslEnd":-1,"sendStart":0.1,"sendEnd":0.2,"receiveHeadersEnd":39.0}}}}"#,
        r#"{"method":"Network.loadingFinished","sessionId":"S","params":{"requestId":"C","timestamp":1000.210,"encodedDataLength":900}}"#,
        r#"{"method":"Page.frameStartedLoading","sessionId":"S","params":{"frameId":"F"}}"#,
        r#"{"method":"Network.requestWillBeSent","sessionId":"OTHER","params":{"requestId":"X","request":{"url":"https://elsewhere.example/","method":"GET","headers":{}},"timestamp":1000.3,"wallTime":1700000000.3,"initiator":{"type":"other"},"type":"Document"}}"#,
        r#"{"method":"Network.requestWillBeSent","sessionId":"S","params":{"requestId":"F1","request":{"url":"https://ads.adnet0.example/frame.html","method":"GET","headers":{},"initialPriority":"VeryHigh"},"timestamp":1000.215,"wallTime":1700000000.215,"initiator":{"type":"parser"},"type":"Document"}}"#,
        r#"{"method":"Network.responseReceived","sessionId":"F","params":{"requestId":"F1","timestamp":1000.230,"response":{"url":"https://ads.adnet0.example/frame.html","status":200,"headers":{},"mimeType":"text/html","protocol":"h2","connectionId":19}}}"#,
        r#"{"method":"Network.loadingFinished","sessionId":"F","params":{"requestId":"F1","timestamp":1000.240,"encodedDataLength":300}}"#,
        r#"{"method":"Network.requestWillBeSent","sessionId":"S","params":{"requestId":"FAV","request":{"url":"https://www.site0.example/favicon.ico","method":"GET","headers":{}},"timestamp":1000.5,"wallTime":1700000000.5,"initiator":{"type":"other"},"type":"Other"}}"#,
        r#"{"method":"Network.requestWillBeSent","sessionId":"S","params":{"requestId":"J","request":{"url":"https://cdn.site0.example/app.js","method":"GET","headers":{},"initialPriority":"Medium"},"timestamp":1000.220,"wallTime":1700000000.220,"initiator":{"type":"script"},"type":"Script"}}"#,
        r#"{"method":"Network.loadingFailed","sessionId":"S","params":{"requestId":"J","timestamp":1000.260,"type":"Script","errorText":"net::ERR_CONNECTION_RESET","canceled":false}}"#,
    ];

    fn loaded(timed_out: bool) -> Loaded {
        let events: Vec<Event> = EVENTS.iter().map(|t| Event::parse(t).unwrap()).collect();
        Loaded {
            timings: PageTimings {
                load: 480.5,
                dcl: 300.25,
                protocol: "h2".into(),
                fetch: 4.0,
                resources: 3,
                fcp: Some(210.0),
                lcp: Some(350.0),
            },
            timed_out,
            events: NetworkEvent::of_sessions(&events, &["S".into(), "F".into()]).unwrap(),
        }
    }

    #[test]
    fn builds_a_har_from_devtools_network_events() {
        let h = build(
            "https://www.site0.example/",
            &loaded(false),
            "Chromium 156.0.8078.108 built on Debian",
        );
        // It round-trips through the one model, as the lab reads it back.
        let text = serde_json::to_vec(&h).unwrap();
        let h = Har::from_slice(&text).unwrap();
        assert_eq!(h.log.browser.as_ref().unwrap().version, "156.0.8078.108");
        let p = &h.log.pages[0];
        assert_eq!(p.page_timings.on_load, 480.5);
        assert_eq!(p.page_timings.on_content_load, 300.25);
        assert_eq!((p.fcp_ms, p.lcp_ms), (Some(210.0), Some(350.0)));
        assert_eq!(p.protocol.as_deref(), Some("h2"));
        assert!(
            p.totals.is_none(),
            "no _totals: the loader's count, not Chromium's"
        );
        // Navigation start: 4 ms (fetchStart) before the document's request.
        assert_eq!(p.started_date_time, "2023-11-14T22:13:19.996Z");
        let urls: Vec<&str> = h
            .log
            .entries
            .iter()
            .map(|e| e.request.url.as_str())
            .collect();
        assert_eq!(
            urls,
            [
                "https://www.site0.example/",
                "https://static.site0.example/a.css?v=2",
                "https://www.site0.example/old.png",
                "https://www.site0.example/new.png",
                "https://ads.adnet0.example/frame.html",
                "https://cdn.site0.example/app.js",
            ],
            "in request order, the redirect's second request after its first, the frame's \
             (answered in its own session), another page's request and the icon left out"
        );
        let doc = &h.log.entries[0];
        assert_eq!(doc.started_date_time, "2023-11-14T22:13:20.000Z");
        assert_eq!(
            (doc.response.status, doc.request.method.as_str()),
            (200, "GET")
        );
        assert_eq!(doc.response.http_version, "h2");
        assert_eq!(
            doc.response.content.size, 5000,
            "decoded bytes of dataReceived"
        );
        assert_eq!(doc.response.transfer_size, Some(1820));
        assert_eq!(
            (doc.response.headers_size, doc.response.body_size),
            (-1, -1)
        );
        assert_eq!(doc.server_ip_address.as_deref(), Some("10.9.0.2"));
        assert_eq!(doc.connection_id, Some(17));
        assert_eq!(doc.priority.as_deref(), Some("VeryHigh"));
        assert_eq!(doc.resource_type.as_deref(), Some("document"));
        let t = doc.timings;
        // Queued 2 ms before requestTime, then 0.5 ms before DNS.
        assert_eq!((t.blocked, t.dns, t.connect, t.ssl), (2.5, 0.5, 59.0, 39.0));
        assert_eq!((t.send, t.wait), (1.0, 57.0));
        // Headers at 1000.002 s + 118 ms = 1000.120 s; finished at 1000.140 s.
        assert!((t.receive - 20.0).abs() < 1e-6, "{t:?}");
        assert!((doc.time - t.total()).abs() < 1e-6);
        assert!((doc.time - 140.0).abs() < 0.01, "{}", doc.time);
        let css = &h.log.entries[1];
        assert_eq!(css.request.query_string, [NameValue::new("v", "2")]);
        assert_eq!(css.timings.dns, -1.0);
        assert_eq!(
            css.initiator.as_ref().unwrap()["url"],
            "https://www.site0.example/"
        );
        let (old, new) = (&h.log.entries[2], &h.log.entries[3]);
        assert_eq!(
            (old.response.status, old.response.redirect_url.as_str()),
            (301, "/new.png")
        );
        assert!(old.error.is_none() && old.response.transfer_size.is_none());
        assert_eq!(new.response.status, 0);
        assert_eq!(
            new.error.as_deref(),
            Some("not finished when the load ended")
        );
        let frame = &h.log.entries[4];
        assert_eq!((frame.response.status, frame.error.as_ref()), (200, None));
        assert!(
            frame.timings.wait > 14.0,
            "no timing: the wait is all of it"
        );
        let js = &h.log.entries[5];
        assert_eq!(js.error.as_deref(), Some("net::ERR_CONNECTION_RESET"));
        assert_eq!(js.response.status, 0);
        assert_eq!(
            counts(&h),
            (6, 2, 3),
            "objects, failed, connections 17, 18, 19"
        );
    }

    #[test]
    fn a_timed_out_load_has_no_onload() {
        let h = build("https://www.site0.example/", &loaded(true), "Chromium 156");
        let p = &h.log.pages[0];
        assert!(p.timed_out);
        assert_eq!(p.page_timings.on_load, -1.0);
        assert_eq!(h.log.entries.len(), 6);
    }

    #[test]
    fn a_network_event_that_does_not_read_is_an_error_naming_it() {
        let bad = Event::parse(
            r#"{"method":"Network.loadingFinished","sessionId":"S","params":{"requestId":"D"}}"#,
        )
        .unwrap();
        let e = NetworkEvent::of_sessions(&[bad], &["S".into()]).unwrap_err();
        assert!(
            e.contains("Network.loadingFinished") && e.contains("timestamp"),
            "{e}"
        );
    }
}
