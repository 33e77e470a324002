//! `speedy corpus record`: live pages recorded into a speedy archive, as Mahimahi's
//! RecordShell and Web Page Replay record them. For each URL and each visit, a fresh
//! `speedy proxy --record` ([`proxy`]) stands between a client ([`client`]: headless
//! Chromium, or speedy's loader) and the web; it terminates TLS inside CONNECT with
//! certificates from the archive's CA (`OUT/lab-ca`, which Chromium is told to trust by
//! its key hash and `speedy serve --archive OUT` signs with later) and writes every
//! exchange with its body. The exchanges and Chromium's requests (with their initiators)
//! then become the archive through the importer
//! ([`speedy_archive::import::import_visits`]): one page per URL, its root the
//! navigation (redirects followed), its objects' discovery from the initiators, every
//! object's `recorded` (address, protocol, first byte, transfer) from the proxy.
//!
//! The recording itself goes to `OUT/.speedy-recording/` (a log per visit, bodies shared), made
//! afresh and removed at the end unless kept.

mod client;
mod proxy;

pub use proxy::Upstream;

use speedy_archive::import::{import_visits, Imported, PageVisits, Visit};
use speedy_archive::record::{read_log, Exchange, Log};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Who loads the pages.
#[derive(Clone, Debug)]
pub enum Recorder {
    /// Headless Chromium, this program.
    Chromium(PathBuf),
    /// `speedy load` (no scripts run).
    Loader,
}

/// What `speedy corpus record` is asked to do.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// The pages, absolute http(s) URLs.
    pub urls: Vec<String>,
    /// The archive directory to write.
    pub out: PathBuf,
    /// Loads of each URL, merged (at least 1).
    pub visits: usize,
    /// Who loads them.
    pub client: Recorder,
    /// How the proxy reaches origins.
    pub upstream: Upstream,
    /// The `speedy` program (for `speedy proxy` and `speedy load`).
    pub speedy: PathBuf,
    /// Longest wait for a page's load event.
    pub timeout: Duration,
    /// After the load event, how long no request may be in flight before the visit ends.
    pub quiet: Duration,
    /// Keep `OUT/.speedy-recording/` (the proxy's logs and bodies).
    pub keep_recording: bool,
}

/// What a recording made.
#[derive(Debug)]
pub struct Recording {
    /// The archive (written to `out`), with the import's warnings and discovery sources.
    pub imported: Imported,
    /// Exchanges the proxies recorded over every visit (the browser's own included).
    pub exchanges: usize,
    /// The client's requests for the pages over every visit (the loader's: its
    /// exchanges).
    pub requests: usize,
}

/// Records every URL of `o`, writes the archive to `o.out` and returns it; `progress`
/// hears one line per visit. Errors name what failed: the URL that could not be reached
/// (and why, as the proxy saw it), a missing Chromium, an output directory that cannot
/// be written.
pub fn record(o: &RecordOptions, progress: &mut dyn FnMut(&str)) -> Result<Recording, String> {
    check(o)?;
    let work = o.out.join(".speedy-recording");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("--out: {}: {e}", work.display()))?;
    let ca_dir = o.out.join("lab-ca");
    speedy_server::ca::issue(&ca_dir, &[]).map_err(|e| format!("--out: the CA: {e}"))?;
    let result =
        record_all(o, &work, &ca_dir, progress).and_then(|(pages, exchanges, requests)| {
            let source = match &o.client {
                Recorder::Chromium(p) => format!("speedy corpus record ({})", p.display()),
                Recorder::Loader => "speedy corpus record --loader".to_string(),
            };
            let imported = import_visits(&source, &pages).map_err(|e| e.to_string())?;
            imported
                .archive
                .save(&o.out)
                .map_err(|e| format!("--out: writing the archive: {e}"))?;
            Ok(Recording {
                imported,
                exchanges,
                requests,
            })
        });
    if !o.keep_recording {
        let _ = std::fs::remove_dir_all(&work);
    }
    result
}

/// The checks before anything starts: the URLs, the visits, the output directory, the
/// browser.
fn check(o: &RecordOptions) -> Result<(), String> {
    if o.urls.is_empty() {
        return Err("no URL to record".into());
    }
    for u in &o.urls {
        if speedy_archive::url::Url::parse(u).is_none() {
            return Err(format!("{u:?}: not an absolute http:// or https:// URL"));
        }
    }
    if o.visits == 0 {
        return Err("--visits 0: at least 1".into());
    }
    if let Recorder::Chromium(p) = &o.client {
        crate::chromium::version(p, "speedy corpus record (without --loader)")?;
    }
    writable(&o.out)
}

/// Makes `dir` and checks that a file can be written in it.
fn writable(dir: &Path) -> Result<(), String> {
    let named = |e: std::io::Error| format!("--out {}: {e}", dir.display());
    if dir.exists() && !dir.is_dir() {
        return Err(format!("--out {}: not a directory", dir.display()));
    }
    std::fs::create_dir_all(dir).map_err(named)?;
    let probe = dir.join(format!(".speedy-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .map_err(|e| format!("--out {}: not writable: {e}", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Every visit of every URL: (pages, exchanges, client requests).
fn record_all(
    o: &RecordOptions,
    work: &Path,
    ca_dir: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<(Vec<PageVisits>, usize, usize), String> {
    let spki = match &o.client {
        Recorder::Chromium(_) => crate::chromium::ca_spki_hash(ca_dir)?,
        Recorder::Loader => String::new(),
    };
    let (mut pages, mut exchanges, mut requests) = (Vec::new(), 0, 0);
    for (p, url) in o.urls.iter().enumerate() {
        let mut visits = Vec::new();
        for v in 0..o.visits {
            let t = Instant::now();
            let at = VisitAt {
                work,
                ca_dir,
                spki: &spki,
                log: work.join(format!("page{p:02}-visit{}.jsonl", v + 1)),
            };
            let (visit, notes) = visit(o, &at, url)?;
            let asked = visit
                .requests
                .as_ref()
                .map_or(visit.log.exchanges.len(), Vec::len);
            exchanges += visit.log.exchanges.len();
            requests += asked;
            progress(&format!(
                "[{}/{}] {url} visit {}/{}: {asked} requests, {} exchanges recorded in {:.1} s{}",
                p + 1,
                o.urls.len(),
                v + 1,
                o.visits,
                visit.log.exchanges.len(),
                t.elapsed().as_secs_f64(),
                notes.map(|n| format!(" ({n})")).unwrap_or_default()
            ));
            visits.push(visit);
        }
        pages.push(PageVisits {
            url: url.clone(),
            visits,
        });
    }
    Ok((pages, exchanges, requests))
}

/// Where one visit records.
struct VisitAt<'a> {
    work: &'a Path,
    ca_dir: &'a Path,
    /// The CA's key hash, for Chromium.
    spki: &'a str,
    /// The proxy's log for this visit.
    log: PathBuf,
}

/// One load of `url` through a fresh recording proxy: what was recorded, and a note
/// when the load did not end well (timed out, the loader's failure). An error when the
/// page itself could not be had.
fn visit(o: &RecordOptions, at: &VisitAt, url: &str) -> Result<(Visit, Option<String>), String> {
    let proxy = proxy::RecordingProxy::start(&o.speedy, &at.log, at.ca_dir, &o.upstream)?;
    let loaded = match &o.client {
        Recorder::Chromium(program) => {
            let profile = at.work.join("profile");
            client::chromium_visit(
                program,
                proxy.addr,
                at.spki,
                &profile,
                url,
                (o.timeout, o.quiet),
            )
            .map(|b| {
                let note = b
                    .timed_out
                    .then(|| format!("no load event within {:?}", o.timeout));
                (Some(b.requests), note)
            })
        }
        Recorder::Loader => {
            let har = at.log.with_extension("har");
            let ca = at.ca_dir.join("ca.pem");
            client::loader_visit(&o.speedy, proxy.addr, &ca, url, o.timeout, &har)
                .map(|note| (None, note))
        }
    };
    let stopped = proxy.stop();
    let log = read_log(&at.log)?;
    let (requests, note) = match loaded {
        Ok(x) => x,
        // The browser's own words, and what the proxy knows of the page.
        Err(e) => return Err(unreachable(url, &log).unwrap_or(e)),
    };
    stopped?;
    if let Some(why) = unreachable(url, &log) {
        return Err(why);
    }
    Ok((Visit { log, requests }, note))
}

/// Why `url` could not be recorded, if it was not: no exchange for it, or the proxy's
/// own answer (no address, refused, timed out) for it or a redirect target of it.
fn unreachable(url: &str, log: &Log) -> Option<String> {
    let key = |u: &str| speedy_archive::url::Url::parse(u).map(|x| x.to_string());
    let find = |u: &str| -> Option<&Exchange> {
        let k = key(u)?;
        (log.exchanges.iter())
            .filter(|e| key(&e.url).as_ref() == Some(&k))
            .min_by(|a, b| a.started_ms.total_cmp(&b.started_ms))
    };
    let mut at = url.to_string();
    for _ in 0..10 {
        let Some(e) = find(&at) else {
            return Some(format!(
                "{url}: unreachable: the recording proxy saw no request for {at}"
            ));
        };
        if let Some(why) = &e.error {
            return Some(format!("{url}: unreachable: {why}"));
        }
        let next = e
            .response_headers
            .iter()
            .find(|(n, _)| n == "location")
            .filter(|_| (300..400).contains(&e.status))
            .and_then(|(_, l)| speedy_archive::url::Url::parse(&at)?.join(l))
            .map(|u| u.to_string());
        match next {
            Some(n) => at = n,
            None => return None,
        }
    }
    None
}
