//! Writing an archive as a Mahimahi recording (`speedy corpus export --format mahimahi`)
//! or a Web Page Replay archive (`--format wpr`), one record per object, in object order
//! (docs/archive.md, "Mahimahi and Web Page Replay").
//!
//! Every object becomes an HTTP/1.1 exchange: the request line `METHOD /path HTTP/1.1`
//! with a `Host` header and the recorded request headers; the status line with the
//! standard reason phrase, the recorded response headers and a `content-length` of the
//! body. Bodies are the stored bytes as they are (content coding kept, as the
//! `content-encoding` header says) or the synthetic filler. Mahimahi records carry the
//! recorded server address (`Object::recorded`), else a made-up one; WPR archives carry
//! the recorded protocol per host in `NegotiatedProtocol` and an empty `Certs`.

use crate::mahimahi::{Message, RequestResponse, Scheme};
use crate::model::{Archive, ArchiveError, Object};
use crate::url::Url;
use crate::wpr::{WprArchive, WprRecord};
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

/// What an export wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    /// Records (files of a Mahimahi folder, records of a WPR archive).
    pub records: usize,
    /// Distinct hosts (`host[:port]`).
    pub hosts: usize,
}

/// Header text safe to put on one line (CR and LF become spaces).
fn one_line(s: &str) -> String {
    s.replace(['\r', '\n'], " ")
}

/// The request line and headers of object `o` (URL `u`): `Host` first, then the recorded
/// request headers.
fn request_head(o: &Object, u: &Url) -> (String, Vec<(String, String)>) {
    let mut h = vec![("host".to_string(), u.authority())];
    h.extend(
        o.request_headers
            .iter()
            .filter(|(n, _)| !n.eq_ignore_ascii_case("host"))
            .map(|(n, v)| (one_line(n), one_line(v))),
    );
    (format!("{} {} HTTP/1.1", one_line(&o.method), u.path), h)
}

/// The status line and headers of object `o` with a body of `len` bytes: the recorded
/// headers and `content-length` (left out for 1xx, 204 and 304, which have no body).
fn response_head(o: &Object, len: usize) -> (String, Vec<(String, String)>) {
    let mut h: Vec<(String, String)> = o
        .response_headers
        .iter()
        .filter(|(n, _)| {
            !n.eq_ignore_ascii_case("content-length")
                && !n.eq_ignore_ascii_case("transfer-encoding")
        })
        .map(|(n, v)| (one_line(n), one_line(v)))
        .collect();
    if !(o.status < 200 || o.status == 204 || o.status == 304) {
        h.push(("content-length".into(), len.to_string()));
    }
    let reason = spdy::http::reason_phrase(o.status);
    let line = if reason.is_empty() {
        format!("HTTP/1.1 {}", o.status)
    } else {
        format!("HTTP/1.1 {} {reason}", o.status)
    };
    (line, h)
}

/// HTTP/1.1 message bytes: the first line, the headers, a blank line, the body.
fn message_bytes(first: &str, headers: &[(String, String)], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(first.len() + body.len() + 64 * headers.len() + 4);
    out.extend_from_slice(first.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (n, v) in headers {
        out.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

/// A stable made-up address for a host without a recorded one: 10.x.y.z from the host
/// name's SHA-256 (z never 0 or 255).
pub fn made_up_ip(host: &str) -> Ipv4Addr {
    let d = Sha256::digest(host.as_bytes());
    Ipv4Addr::new(10, d[0], d[1], 1 + d[2] % 254)
}

/// The objects of an archive with their parsed URLs (an archive's URLs are checked
/// absolute http(s) when it is loaded).
fn objects(a: &Archive) -> impl Iterator<Item = (&Object, Url)> {
    a.objects
        .iter()
        .filter_map(|o| Url::parse(&o.url).map(|u| (o, u)))
}

/// The Mahimahi records of an archive, each with its file name (`save.000042`: object
/// 42, zero-padded so that names sort in object order).
pub fn to_mahimahi(a: &Archive) -> Vec<(String, RequestResponse)> {
    let width = a.objects.len().saturating_sub(1).to_string().len().max(6);
    objects(a)
        .map(|(o, u)| {
            let body = a.body(o.id);
            let (req_line, req_headers) = request_head(o, &u);
            let (resp_line, resp_headers) = response_head(o, body.len());
            let bytes = |h: Vec<(String, String)>| {
                h.into_iter()
                    .map(|(n, v)| (n.into_bytes(), v.into_bytes()))
                    .collect()
            };
            let (ip, port) = match o.recorded.as_ref().and_then(|r| r.addr) {
                Some(addr) => (addr.ip(), addr.port()),
                None => (IpAddr::V4(made_up_ip(&u.host)), u.port_or_default()),
            };
            let rr = RequestResponse {
                ip: Some(ip.to_string()),
                port: Some(u32::from(port)),
                scheme: Some(if u.scheme == "https" {
                    Scheme::Https
                } else {
                    Scheme::Http
                }),
                request: Some(Message {
                    first_line: Some(req_line.into_bytes()),
                    headers: bytes(req_headers),
                    body: Some(Vec::new()),
                }),
                response: Some(Message {
                    first_line: Some(resp_line.into_bytes()),
                    headers: bytes(resp_headers),
                    body: Some(body.to_vec()),
                }),
            };
            (format!("save.{:0width$}", o.id), rr)
        })
        .collect()
}

/// The WPR archive of an archive: `Requests[host][url]` in object order, and
/// `NegotiatedProtocol` from the first recorded protocol of each host.
pub fn to_wpr(a: &Archive) -> WprArchive {
    let mut w = WprArchive::default();
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    for (o, u) in objects(a) {
        let body = a.body(o.id);
        let (req_line, req_headers) = request_head(o, &u);
        let (resp_line, resp_headers) = response_head(o, body.len());
        let host = u.authority();
        if let Some(p) = o.recorded.as_ref().and_then(|r| r.protocol.clone()) {
            w.negotiated.entry(host.clone()).or_insert(p);
        }
        let n = seen.entry((host.clone(), o.url.clone())).or_default();
        let index = *n;
        *n += 1;
        w.records.push(WprRecord {
            host,
            url: o.url.clone(),
            index,
            request: message_bytes(&req_line, &req_headers, b""),
            response: message_bytes(&resp_line, &resp_headers, &body),
        });
    }
    w
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ArchiveError + '_ {
    move |err| ArchiveError::Io {
        path: path.to_path_buf(),
        err,
    }
}

fn hosts<'a>(urls: impl Iterator<Item = &'a str>) -> usize {
    urls.filter_map(|u| Url::parse(u).map(|u| u.authority()))
        .collect::<BTreeSet<_>>()
        .len()
}

/// Loads the archive in `dir` and writes it as a Mahimahi recording: folder `out` (new or
/// empty) with one file per object.
pub fn export_mahimahi(dir: &Path, out: &Path) -> Result<Written, ArchiveError> {
    let a = Archive::load(dir)?;
    if out.exists() {
        let mut entries = std::fs::read_dir(out).map_err(io_err(out))?;
        if entries.next().is_some() {
            return Err(ArchiveError::Invalid {
                path: out.to_path_buf(),
                reason: "the directory is not empty (a Mahimahi recording is every file of \
                         its directory); give a new or empty one"
                    .into(),
            });
        }
    }
    std::fs::create_dir_all(out).map_err(io_err(out))?;
    let records = to_mahimahi(&a);
    for (name, rr) in &records {
        let p = out.join(name);
        std::fs::write(&p, rr.encode()).map_err(io_err(&p))?;
    }
    Ok(Written {
        records: records.len(),
        hosts: hosts(a.objects.iter().map(|o| o.url.as_str())),
    })
}

/// Loads the archive in `dir` and writes it as a WPR archive (`.wprgo`) to `out`.
pub fn export_wpr(dir: &Path, out: &Path) -> Result<Written, ArchiveError> {
    let a = Archive::load(dir)?;
    let w = to_wpr(&a);
    std::fs::write(out, w.to_gzip()).map_err(io_err(out))?;
    Ok(Written {
        records: w.records.len(),
        hosts: hosts(w.records.iter().map(|r| r.url.as_str())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{synthesize, SynthOptions};

    #[test]
    fn every_object_becomes_one_record() {
        let a = synthesize(SynthOptions { pages: 1, seed: 2 });
        let m = to_mahimahi(&a);
        assert_eq!(m.len(), a.objects.len());
        assert_eq!(m[0].0, "save.000000");
        let rr = crate::mahimahi::decode(&m[0].1.encode()).unwrap();
        let req = rr.request.unwrap();
        assert!(req.first_line.unwrap().ends_with(b" HTTP/1.1"));
        assert_eq!(req.headers[0].0, b"host");
        assert!(rr.ip.unwrap().starts_with("10."));
        let w = to_wpr(&a);
        assert_eq!(w.records.len(), a.objects.len());
        assert!(w.negotiated.is_empty());
        assert_eq!(made_up_ip("a.test"), made_up_ip("a.test"));
    }
}
