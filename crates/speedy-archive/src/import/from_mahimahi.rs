//! Mahimahi recordings (a folder of `RequestResponse` files, `crate::mahimahi`) →
//! records → archive.

use super::body::header;
use super::from_warc::rec_from_http;
use super::recording::import_recording;
use super::urls::is_http;
use super::{invalid, ImportError, Imported, Rec};
use crate::mahimahi::{self, Message, RequestResponse, Scheme};
use crate::model::Recorded;
use crate::warc::{self, FirstLine, HttpMessage};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

/// Imports the Mahimahi recording in folder `dir`: every regular file in it is one
/// record, read in file-name order (hidden files, subfolders and `BulkMessage` files are
/// skipped with a warning).
pub fn import_mahimahi(dir: &Path) -> Result<Imported, ImportError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |err| ImportError::Io { path, err }
    };
    let mut warnings = Vec::new();
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io(dir))? {
        let e = e.map_err(io(dir))?;
        let (name, p) = (e.file_name().to_string_lossy().into_owned(), e.path());
        if name.starts_with('.') {
            warnings.push(format!("{name}: a hidden file; skipped"));
        } else if std::fs::metadata(&p).map_err(io(&p))?.is_file() {
            files.push((name, p));
        } else {
            warnings.push(format!("{name}: not a regular file; skipped"));
        }
    }
    files.sort();
    let count = files.len();
    let read = files
        .into_iter()
        .map(|(name, p)| std::fs::read(&p).map(|data| (name, data)).map_err(io(&p)));
    import_records(dir, count, read, warnings)
}

/// Imports a Mahimahi recording held in memory: `files` are the (file name, bytes) of
/// folder `dir`'s records, which [`import_mahimahi`] would read from disk (`dir` only
/// names the recording and its files in messages). Records are read in file-name
/// order, as there.
pub fn import_mahimahi_files(
    dir: &Path,
    mut files: Vec<(String, Vec<u8>)>,
) -> Result<Imported, ImportError> {
    files.sort();
    let count = files.len();
    import_records(dir, count, files.into_iter().map(Ok), Vec::new())
}

/// The records of `files` (`count` of them, in order), each the name and bytes of one
/// file of folder `dir`.
fn import_records(
    dir: &Path,
    count: usize,
    files: impl Iterator<Item = Result<(String, Vec<u8>), ImportError>>,
    mut warnings: Vec<String>,
) -> Result<Imported, ImportError> {
    if count == 0 {
        return Err(invalid(
            dir,
            "",
            "a directory without files: a Mahimahi recording is a directory of \
             RequestResponse files (save.*), one per exchange",
        ));
    }
    let mut recs = Vec::with_capacity(count);
    for file in files {
        let (name, data) = file?;
        let (name, p) = (&name, &dir.join(&name));
        if mahimahi::looks_like_bulk_message(&data) {
            warnings.push(format!(
                "{name}: a BulkMessage (the bulk-response extension), not a RequestResponse; skipped"
            ));
            continue;
        }
        let rr = mahimahi::decode(&data).map_err(|e| invalid(p, e.entry, e.reason))?;
        if let Some(r) = rec_of(p, name, rr, &mut warnings)? {
            recs.push(r);
        }
    }
    let source = format!(
        "{} (Mahimahi, {} records)",
        dir.file_name().map_or_else(
            || dir.display().to_string(),
            |f| f.to_string_lossy().into_owned()
        ),
        count
    );
    import_recording(dir, &source, recs, warnings)
}

/// Headers as text (bytes that are not UTF-8 are replaced), names trimmed.
fn text_headers(m: &Message) -> Vec<(String, String)> {
    m.headers
        .iter()
        .map(|(k, v)| {
            (
                String::from_utf8_lossy(k).trim().to_string(),
                String::from_utf8_lossy(v).trim().to_string(),
            )
        })
        .collect()
}

fn first_line(m: &Message) -> String {
    String::from_utf8_lossy(m.first_line.as_deref().unwrap_or_default()).into_owned()
}

/// The record of file `name` (at `p`); `None` (with a warning) when it has no response or
/// names no http(s) URL; an error naming the field when a line is not HTTP.
fn rec_of(
    p: &Path,
    name: &str,
    rr: RequestResponse,
    warnings: &mut Vec<String>,
) -> Result<Option<Rec>, ImportError> {
    let Some(req) = &rr.request else {
        return Err(invalid(
            p,
            "request",
            "missing (field 4): not a Mahimahi RequestResponse",
        ));
    };
    let Some(resp) = rr.response.as_ref().filter(|m| m.first_line.is_some()) else {
        warnings.push(format!("{name}: no response recorded; skipped"));
        return Ok(None);
    };
    let line = first_line(req);
    let (method, target) = match warc::parse_first_line(&line) {
        Ok(FirstLine::Request(m, t)) => (m, t),
        Ok(FirstLine::Status(_)) => {
            return Err(invalid(
                p,
                "request.first_line",
                format!("a status line, not a request line: {line:?}"),
            ))
        }
        Err(e) => return Err(invalid(p, "request.first_line", e)),
    };
    let request_headers = text_headers(req);
    let scheme = match (rr.scheme, rr.port) {
        (Some(Scheme::Https), _) | (None, Some(443)) => "https",
        _ => "http",
    };
    let url = match url_of(scheme, &target, header(&request_headers, "host"), &rr) {
        Ok(u) => u,
        Err(why) => {
            warnings.push(format!("{name}: {why}; skipped"));
            return Ok(None);
        }
    };
    let line = first_line(resp);
    let status = match warc::parse_first_line(&line) {
        Ok(FirstLine::Status(s)) => s,
        Ok(FirstLine::Request(..)) => {
            return Err(invalid(
                p,
                "response.first_line",
                format!("a request line, not a status line: {line:?}"),
            ))
        }
        Err(e) => return Err(invalid(p, "response.first_line", e)),
    };
    let headers = text_headers(resp);
    let (body, truncated) = warc::message_body(&headers, resp.body.as_deref().unwrap_or_default());
    let msg = HttpMessage {
        status,
        headers,
        body,
        truncated,
        ..Default::default()
    };
    let mut rec = rec_from_http(name.to_string(), &url, &msg, "recording", warnings);
    rec.method = method.to_ascii_uppercase();
    rec.request_headers = request_headers;
    rec.recorded = addr_of(&rr, scheme, name, warnings).map(|addr| Recorded {
        addr: Some(addr),
        ..Default::default()
    });
    Ok(Some(rec))
}

/// The absolute URL of a request target: as it is when absolute, else the scheme, the
/// `Host` header (the recorded address when there is none) and the path.
fn url_of(
    scheme: &str,
    target: &str,
    host: Option<&str>,
    rr: &RequestResponse,
) -> Result<String, String> {
    if is_http(target) {
        return Ok(target.to_string());
    }
    if !target.starts_with('/') {
        return Err(format!(
            "request target {target:?} is neither a path nor an http(s) URL"
        ));
    }
    let host = match (host.filter(|h| !h.is_empty()), &rr.ip) {
        (Some(h), _) => h.to_string(),
        (None, Some(ip)) => match rr.port {
            Some(p) if p != 80 && p != 443 => format!("{ip}:{p}"),
            _ => ip.clone(),
        },
        (None, None) => return Err("no Host header and no recorded address".into()),
    };
    let url = format!("{scheme}://{host}{target}");
    if is_http(&url) {
        Ok(url)
    } else {
        Err(format!("{url:?} is not an http(s) URL"))
    }
}

/// The recorded server address (`ip`, `port` or the scheme's), when it is one.
fn addr_of(
    rr: &RequestResponse,
    scheme: &str,
    name: &str,
    warnings: &mut Vec<String>,
) -> Option<SocketAddr> {
    let ip = rr.ip.as_deref()?;
    let Ok(ip) = ip.trim().parse::<IpAddr>() else {
        warnings.push(format!("{name}: ip {ip:?} is not an address; not kept"));
        return None;
    };
    let port = rr.port.unwrap_or(if scheme == "https" { 443 } else { 80 });
    match u16::try_from(port) {
        Ok(port) => Some(SocketAddr::new(ip, port)),
        Err(_) => {
            warnings.push(format!(
                "{name}: port {port} is not a port; the address is not kept"
            ));
            None
        }
    }
}
