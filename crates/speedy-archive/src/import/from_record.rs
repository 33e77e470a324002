//! Recordings made through the recording proxy (`speedy corpus record`) → records →
//! archive: one page per recorded URL, from one or more visits of it.
//!
//! Each visit brings the proxy's exchanges ([`crate::record`]) and, when a browser made
//! it, the browser's own list of the page's requests with their initiators. With that
//! list, a page's records are the browser's requests in its order, each joined with the
//! exchange of the same method and URL (exchanges the page did not make, such as the
//! browser's own background requests, are left out); without it (the loader), every
//! exchange of the visit is the page's. Visits after the first add only what the page
//! has not recorded yet (by method and URL), so a script that picks other URLs on each
//! visit still finds them all on replay. Times are kept relative to each visit's first
//! request, so the visits' records interleave as they happened within a load.
//!
//! One correction to Chromium's initiators ([`reattribute`]): a request a script causes
//! once its own stack has unwound (an image whose `src` it set, loaded from a microtask)
//! is reported as the parser's, at the line of the `<script>` element then running. When
//! the document does not reference such a URL and an external script was requested from
//! that very line, the request is put on that script; when no script's element is at
//! that line, on the document's script that ended last before the request started.

use super::body::{header, settle_body};
use super::pages::{build_page, object_type};
use super::scan::scan;
use super::urls::{is_http, normalize, resolve};
use super::{finish, short, ImportError, Imported, Rec};
use crate::har::{HarInitiator, InitiatorKind};
use crate::model::{Archive, Recorded};
use crate::record::{read_body, Exchange, Log};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;

/// A request the browser made while loading a page, as its DevTools reported it.
#[derive(Clone, Debug, PartialEq)]
pub struct BrowserRequest {
    /// The URL (without a fragment).
    pub url: String,
    /// The method.
    pub method: String,
    /// Who asked for it.
    pub initiator: Option<HarInitiator>,
    /// DevTools' resource type (`Document`, `Stylesheet`, `Script`, `Image`, `Fetch`, …).
    pub resource_type: Option<String>,
    /// Chromium's priority when it asked (`VeryHigh` … `VeryLow`).
    pub priority: Option<String>,
}

/// One load of a page through the recording proxy.
#[derive(Clone, Debug)]
pub struct Visit {
    /// What the proxy recorded meanwhile.
    pub log: Log,
    /// The browser's requests in the order it made them, the navigation first; `None`
    /// when the page's loader made every exchange of the log (`speedy load`).
    pub requests: Option<Vec<BrowserRequest>>,
}

/// The visits of one recorded URL.
#[derive(Clone, Debug)]
pub struct PageVisits {
    /// The URL asked for: the page's root is its navigation (redirects followed).
    pub url: String,
    /// Its visits, in order.
    pub visits: Vec<Visit>,
}

/// Builds the archive of recorded pages, one page per entry of `pages` (in order);
/// `source` says where it came from (`archive.json`'s `source`). A page whose root was
/// not recorded is left out with a warning; none left is an error.
pub fn import_visits(source: &str, pages: &[PageVisits]) -> Result<Imported, ImportError> {
    let mut warnings = Vec::new();
    let mut sources = Default::default();
    let mut a = Archive::new(source);
    for p in pages {
        let recs = page_records(p, &mut warnings);
        if recs.is_empty() {
            warnings.push(format!("{}: nothing was recorded; skipped", short(&p.url)));
            continue;
        }
        let idx = a.pages.len();
        match build_page(&mut a, idx, None, recs, &mut warnings, &mut sources) {
            Some(page) => a.pages.push(page),
            None => warnings.push(format!(
                "{}: no document or redirect was recorded; skipped",
                short(&p.url)
            )),
        }
    }
    finish(&mut a, Path::new(source))?;
    Ok(Imported {
        archive: a,
        warnings,
        sources,
    })
}

/// The records of one page: every visit's exchanges that the page made, each URL once
/// (the first visit's copy), the navigation first.
fn page_records(p: &PageVisits, warnings: &mut Vec<String>) -> Vec<Rec> {
    let mut recs = Vec::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for (v, visit) in p.visits.iter().enumerate() {
        let label = |i: usize| format!("{} visit {} request {i}", short(&p.url), v + 1);
        let pairs = joined(visit, |m| warnings.push(format!("{}: {m}", label(0))));
        let Some(t0) = pairs.iter().map(|(e, _)| e.started_ms).reduce(f64::min) else {
            continue;
        };
        for (i, (e, req)) in pairs.into_iter().enumerate() {
            if !seen.insert((e.method.clone(), normalize(&e.url))) {
                continue;
            }
            if let Some(why) = &e.error {
                warnings.push(format!(
                    "{}: {} {} was not recorded: {why}; left out",
                    label(i),
                    e.method,
                    short(&e.url)
                ));
                continue;
            }
            let r = rec_from_exchange(label(i), e, &visit.log.dir, req, t0, warnings);
            recs.push(r);
        }
    }
    reattribute(&mut recs);
    recs
}

/// Puts on a script what Chromium reports as its document parser's at the line of that
/// script's element, when the document does not reference it (see the module doc).
fn reattribute(recs: &mut [Rec]) {
    let parser_at = |r: &Rec| -> Option<(String, u64)> {
        let init = r
            .initiator
            .as_ref()
            .filter(|i| i.kind == InitiatorKind::Parser)?;
        Some((normalize(init.urls.first()?), init.line?))
    };
    // (document, line) → the external script its parser requested there.
    let scripts: HashMap<(String, u64), String> = recs
        .iter()
        .filter(|r| r.is_js())
        .filter_map(|r| Some((parser_at(r)?, r.url.clone())))
        .collect();
    // Each document's external scripts with the time their bodies ended.
    let ended: Vec<(String, String, f64)> = recs
        .iter()
        .filter(|r| r.is_js())
        .filter_map(|r| Some((parser_at(r)?.0, r.url.clone(), r.end?)))
        .collect();
    let mut refs: HashMap<String, HashSet<String>> = HashMap::new();
    for i in 0..recs.len() {
        let Some((doc, line)) = parser_at(&recs[i]) else {
            continue;
        };
        // The script whose element is at that line; else (Chromium does not always say
        // the script's line) the document's script that ended last before this request
        // started: a parser-blocking script runs as soon as it has come.
        let by_time = || {
            let start = recs[i].start?;
            ended
                .iter()
                .filter(|(d, u, end)| *d == doc && *end <= start && *u != recs[i].url)
                .max_by(|a, b| a.2.total_cmp(&b.2))
                .map(|(_, u, _)| u)
        };
        let Some(script) = scripts.get(&(doc.clone(), line)).or_else(by_time) else {
            continue;
        };
        let found = refs.entry(doc.clone()).or_insert_with(|| {
            recs.iter()
                .find(|d| normalize(&d.url) == doc)
                .map(|d| scan(d, &d.url).into_iter().map(|x| x.url).collect())
                .unwrap_or_default()
        });
        let me = normalize(&recs[i].url);
        if !found.contains(&me) && normalize(script) != me {
            recs[i].initiator = Some(HarInitiator {
                kind: InitiatorKind::Script,
                urls: vec![script.clone()],
                line: None,
            });
        }
    }
}

/// The visit's exchanges that belong to the page, with the browser's request of each
/// when there is a list: in the browser's order, each joined with the first unused
/// exchange of its method and URL (by start), then the CORS preflights (`OPTIONS`) of
/// the URLs joined, which DevTools may not list. `note` hears of requests the proxy
/// never saw.
fn joined(
    visit: &Visit,
    mut note: impl FnMut(String),
) -> Vec<(&Exchange, Option<&BrowserRequest>)> {
    let mut by_start: Vec<&Exchange> = visit.log.exchanges.iter().collect();
    by_start.sort_by(|x, y| x.started_ms.total_cmp(&y.started_ms));
    let Some(requests) = &visit.requests else {
        return by_start.into_iter().map(|e| (e, None)).collect();
    };
    let mut queues: HashMap<(String, String), VecDeque<&Exchange>> = HashMap::new();
    for e in by_start {
        queues
            .entry((e.method.clone(), normalize(&e.url)))
            .or_default()
            .push_back(e);
    }
    let mut out = Vec::new();
    for q in requests.iter().filter(|q| is_http(&q.url)) {
        let key = (q.method.to_ascii_uppercase(), normalize(&q.url));
        match queues.get_mut(&key).and_then(VecDeque::pop_front) {
            Some(e) => out.push((e, Some(q))),
            None => note(format!(
                "the browser requested {} {} but the proxy saw no such request (served from \
                 its cache, or cancelled first)",
                q.method,
                short(&q.url)
            )),
        }
    }
    let urls: HashSet<String> = out.iter().map(|(e, _)| normalize(&e.url)).collect();
    for ((method, url), q) in queues.iter_mut() {
        if method == "OPTIONS" && urls.contains(url) {
            out.extend(q.drain(..).map(|e| (e, None)));
        }
    }
    out
}

/// The record of exchange `e` (its body read from `dir`), with the browser's request
/// `req`; times relative to `t0` (ms since the epoch).
fn rec_from_exchange(
    label: String,
    e: &Exchange,
    dir: &Path,
    req: Option<&BrowserRequest>,
    t0: f64,
    warnings: &mut Vec<String>,
) -> Rec {
    let content_type = header(&e.response_headers, "content-type")
        .unwrap_or("")
        .to_string();
    let start = e.started_ms - t0;
    let first_byte = start + e.first_byte_ms.unwrap_or(0.0);
    let end = first_byte + e.transfer_ms.unwrap_or(0.0);
    let ms = |x: Option<f64>| x.map(|x| x.max(0.0).round().min(u32::MAX as f64) as u32);
    let mut r = Rec {
        label,
        url: e.url.clone(),
        method: e.method.to_ascii_uppercase(),
        status: e.status,
        request_headers: e.request_headers.clone(),
        response_headers: e.response_headers.clone(),
        content_type,
        start: Some(start),
        first_byte: Some(first_byte),
        end: Some(end),
        wait: e.first_byte_ms,
        initiator: req.and_then(|q| q.initiator.clone()),
        priority: req.and_then(|q| q.priority.clone()),
        recorded: Some(Recorded {
            addr: e.addr,
            protocol: e.protocol.clone(),
            first_byte_ms: ms(e.first_byte_ms),
            transfer_ms: ms(e.transfer_ms),
        }),
        ..Default::default()
    };
    if (300..400).contains(&e.status) {
        r.redirect = header(&e.response_headers, "location").and_then(|l| resolve(&e.url, l));
    }
    let kind = req.and_then(|q| q.resource_type.as_deref().map(str::to_ascii_lowercase));
    r.kind = object_type(&r, kind.as_deref());
    let body = match &e.body {
        Some(b) => {
            if !b.complete {
                warnings.push(format!(
                    "{}: the body of {} is not whole ({} bytes came); stored as it came",
                    r.label,
                    short(&e.url),
                    b.size
                ));
            }
            match read_body(dir, b) {
                Ok(bytes) => Some(bytes.to_vec()),
                Err(why) => {
                    warnings.push(format!("{}: {why}; an empty body is stored", r.label));
                    Some(Vec::new())
                }
            }
        }
        None => Some(Vec::new()),
    };
    let size = body.as_ref().map(Vec::len);
    settle_body(&mut r, body, true, size, None, warnings);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::har::InitiatorKind;
    use crate::model::Discovery;
    use crate::record::{store_body, StoredBody, RECORD_VERSION};

    fn exchange(dir: &Path, at: f64, url: &str, ct: &str, body: &[u8]) -> Exchange {
        let sha = store_body(dir, body).unwrap();
        Exchange {
            version: RECORD_VERSION,
            started_ms: at,
            method: "GET".into(),
            url: url.into(),
            request_headers: vec![("user-agent".into(), "test".into())],
            client_protocol: "h2".into(),
            status: 200,
            response_headers: vec![("content-type".into(), ct.into())],
            body: Some(StoredBody {
                sha256: sha,
                size: body.len() as u64,
                complete: true,
            }),
            addr: Some("127.0.0.2:443".parse().unwrap()),
            protocol: Some("h2".into()),
            first_byte_ms: Some(10.0),
            transfer_ms: Some(2.0),
            error: None,
        }
    }

    fn request(url: &str, kind: &str, init: Option<(InitiatorKind, &str)>) -> BrowserRequest {
        BrowserRequest {
            url: url.into(),
            method: "GET".into(),
            initiator: init.map(|(kind, u)| HarInitiator {
                kind,
                urls: vec![u.into()],
                line: None,
            }),
            resource_type: Some(kind.into()),
            priority: Some("High".into()),
        }
    }

    #[test]
    fn visits_become_one_page_with_initiators_and_every_url_of_every_visit() {
        let dir = std::env::temp_dir().join(format!("speedy-from-record-{}", std::process::id()));
        let page = "https://www.site.test/";
        let html = b"<html><script src=/app.js></script></html>";
        let visit = |t: f64, busted: &str| {
            let url = format!("https://api.site.test/data?t={busted}");
            Visit {
                log: Log {
                    dir: dir.clone(),
                    exchanges: vec![
                        // Finished out of order; the browser's background request too.
                        exchange(
                            &dir,
                            t + 20.0,
                            "https://www.site.test/app.js",
                            "text/javascript",
                            b"fetch('/data')",
                        ),
                        exchange(&dir, t, page, "text/html", html),
                        exchange(
                            &dir,
                            t + 5.0,
                            "https://update.example/check",
                            "text/plain",
                            b"x",
                        ),
                        exchange(&dir, t + 40.0, &url, "application/json", busted.as_bytes()),
                    ],
                },
                requests: Some(vec![
                    request(
                        page,
                        "Document",
                        Some((InitiatorKind::Other("other".into()), "")),
                    ),
                    request(
                        "https://www.site.test/app.js",
                        "Script",
                        Some((InitiatorKind::Parser, page)),
                    ),
                    request(
                        &url,
                        "Fetch",
                        Some((InitiatorKind::Script, "https://www.site.test/app.js")),
                    ),
                    request("https://cached.site.test/x.png", "Image", None),
                ]),
            }
        };
        let pages = [PageVisits {
            url: page.into(),
            visits: vec![visit(1000.0, "1"), visit(9000.0, "2")],
        }];
        let imp = import_visits("test", &pages).unwrap();
        let a = &imp.archive;
        let urls: Vec<&str> = a.objects.iter().map(|o| o.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                page,
                "https://www.site.test/app.js",
                "https://api.site.test/data?t=1",
                "https://api.site.test/data?t=2"
            ]
        );
        assert_eq!(a.pages.len(), 1);
        assert_eq!(a.objects[0].discovery, Discovery::Root);
        assert!(matches!(
            a.objects[1].discovery,
            Discovery::Parsed { parent: 0, .. }
        ));
        for o in &a.objects[2..] {
            assert!(
                matches!(o.discovery, Discovery::Computed { parent: 1, .. }),
                "{o:?}"
            );
        }
        let rec = a.objects[0].recorded.clone().unwrap();
        assert_eq!(rec.addr, Some("127.0.0.2:443".parse().unwrap()));
        assert_eq!(
            (rec.protocol.as_deref(), rec.first_byte_ms, rec.transfer_ms),
            (Some("h2"), Some(10), Some(2))
        );
        assert_eq!(&a.body(0)[..], html);
        assert_eq!(a.objects[1].priority.as_deref(), Some("High"));
        let cached = imp
            .warnings
            .iter()
            .filter(|w| w.contains("cached.site.test"))
            .count();
        assert_eq!(cached, 2, "{:?}", imp.warnings);
        assert!(!imp.warnings.iter().any(|w| w.contains("update.example")));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_scripts_late_request_that_chromium_gives_the_parser_goes_to_the_script() {
        let dir = std::env::temp_dir().join(format!("speedy-from-record-r-{}", std::process::id()));
        let page = "https://www.site.test/";
        let html = b"<html>\n<img src=/a.png>\n<script src=/app.js></script>\n</html>";
        let at = |line| Some((InitiatorKind::Parser, page, line));
        let req = |url: &str, kind: &str, init: Option<(InitiatorKind, &str, u64)>| {
            let mut r = request(url, kind, init.as_ref().map(|(k, u, _)| (k.clone(), *u)));
            if let (Some(i), Some((_, _, l))) = (r.initiator.as_mut(), init) {
                i.line = Some(l);
            }
            r
        };
        let url = |p: &str| format!("https://www.site.test{p}");
        let visit = Visit {
            log: Log {
                dir: dir.clone(),
                exchanges: vec![
                    exchange(&dir, 0.0, page, "text/html", html),
                    exchange(&dir, 1.0, &url("/a.png"), "image/png", b"a"),
                    exchange(
                        &dir,
                        2.0,
                        &url("/app.js"),
                        "text/javascript",
                        b"new Image().src = '/b.png'",
                    ),
                    exchange(&dir, 3.0, &url("/b.png"), "image/png", b"b"),
                ],
            },
            requests: Some(vec![
                req(page, "Document", None),
                req(&url("/a.png"), "Image", at(1)),
                req(&url("/app.js"), "Script", at(2)),
                // Set by the script, reported at the line of its element.
                req(&url("/b.png"), "Image", at(2)),
            ]),
        };
        let pages = [PageVisits {
            url: page.into(),
            visits: vec![visit],
        }];
        let a = import_visits("test", &pages).unwrap().archive;
        assert!(matches!(
            a.objects[1].discovery,
            Discovery::Parsed { parent: 0, .. }
        ));
        assert!(
            matches!(
                a.objects[3].discovery,
                Discovery::Computed { parent: 2, .. }
            ),
            "{:?}",
            a.objects[3]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn without_a_request_list_every_exchange_is_the_pages_and_failures_are_said() {
        let dir = std::env::temp_dir().join(format!("speedy-from-record-l-{}", std::process::id()));
        let page = "http://www.site.test/";
        let mut gone = exchange(&dir, 3.0, "http://static.site.test/a.css", "text/css", b"");
        (gone.status, gone.body, gone.error) = (502, None, Some("no address".into()));
        let mut moved = exchange(&dir, 1.0, page, "text/html", b"");
        moved.status = 301;
        moved
            .response_headers
            .push(("location".into(), "https://www.site.test/".into()));
        let html = exchange(
            &dir,
            2.0,
            "https://www.site.test/",
            "text/html",
            b"<link rel=stylesheet href=http://static.site.test/a.css>",
        );
        let pages = [PageVisits {
            url: page.into(),
            visits: vec![Visit {
                log: Log {
                    dir: dir.clone(),
                    exchanges: vec![html, gone, moved],
                },
                requests: None,
            }],
        }];
        let imp = import_visits("test", &pages).unwrap();
        let a = &imp.archive;
        assert_eq!(a.objects.len(), 2);
        assert_eq!(
            (a.objects[0].status, a.objects[0].url.as_str()),
            (301, page)
        );
        assert!(matches!(
            a.objects[1].discovery,
            Discovery::Computed { parent: 0, .. }
        ));
        assert!(
            imp.warnings
                .iter()
                .any(|w| w.contains("a.css was not recorded: no address")),
            "{:?}",
            imp.warnings
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
