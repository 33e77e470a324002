//! Importing HAR 1.1/1.2 and WARC files into archives.
//!
//! Both formats are first reduced to records (URL, method, status, headers, body when
//! recorded, timings when recorded, initiator when recorded), split into pages, and each
//! page is turned into archive objects by the same rules: which headers are kept, how a
//! body is stored, and how every object's parent and discovery are found — from speedy's
//! own `_speedy` extension, from redirects, from `_initiator`, from references in the
//! recorded bodies, and, when a HAR has neither bodies nor initiators, from the recorded
//! timings. `docs/archive.md` states the rules; this module implements them.

use crate::har::{self, HarEntry, HarInitiator, HarLog, InitiatorKind};
use crate::model::{Archive, BodySource, Discovery, Object, ObjectType, Page};
use crate::warc::{self, HttpMessage, WarcRecord};
use bytes::Bytes;
use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// A request made this long (ms) after the object that last completed before it is taken
/// as that object's direct consequence; later requests are put on the latest script.
pub const QUICK_MS: f64 = 30.0;

/// Decoded bodies larger than this are not scanned for references (and not inflated).
const MAX_DECODED: usize = 64 << 20;

/// An imported archive and what was left out or guessed, one line per matter.
#[derive(Debug)]
pub struct Imported {
    /// The archive (bodies in memory; `save` writes it).
    pub archive: Archive,
    /// Entries skipped or repaired, each naming the entry.
    pub warnings: Vec<String>,
    /// How many objects got their discovery from each source: `_speedy`, `redirect`,
    /// `initiator`, `body`, `timings`, `none` (roots are not counted).
    pub sources: std::collections::BTreeMap<&'static str, usize>,
}

/// Why a file could not be imported: the file and the entry it is about.
#[derive(Debug)]
pub enum ImportError {
    /// The file could not be read.
    Io {
        /// File.
        path: PathBuf,
        /// Error.
        err: std::io::Error,
    },
    /// The file is not a valid HAR or WARC.
    Invalid {
        /// File.
        path: PathBuf,
        /// The entry (`entries[12].response.content`, `record 3 at byte 1200`), or empty.
        entry: String,
        /// What is wrong.
        reason: String,
    },
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImportError::Io { path, err } => write!(f, "{}: {err}", path.display()),
            ImportError::Invalid {
                path,
                entry,
                reason,
            } if entry.is_empty() => write!(f, "{}: {reason}", path.display()),
            ImportError::Invalid {
                path,
                entry,
                reason,
            } => write!(f, "{}: {entry}: {reason}", path.display()),
        }
    }
}

impl std::error::Error for ImportError {}

fn invalid(path: &Path, entry: impl Into<String>, reason: impl Into<String>) -> ImportError {
    ImportError::Invalid {
        path: path.to_path_buf(),
        entry: entry.into(),
        reason: reason.into(),
    }
}

/// The input formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// HAR 1.1 or 1.2 (JSON).
    Har,
    /// WARC, plain or gzip.
    Warc,
}

/// Tells a WARC (plain or gzip) from anything else, which is read as HAR.
pub fn detect(data: &[u8]) -> Format {
    if warc::looks_like_warc(data) {
        Format::Warc
    } else {
        Format::Har
    }
}

/// Imports a HAR or WARC file (the format is told by its content).
pub fn import_file(path: &Path) -> Result<Imported, ImportError> {
    let data = std::fs::read(path).map_err(|err| ImportError::Io {
        path: path.to_path_buf(),
        err,
    })?;
    match detect(&data) {
        Format::Warc => import_warc(path, &data),
        Format::Har => import_har(path, &data),
    }
}

// ---------------------------------------------------------------------------------------
// Records: what both formats reduce to.

/// One recorded exchange, before it becomes an archive object.
#[derive(Clone, Debug)]
struct Rec {
    /// `entries[3]`, `record 7`: names the entry in warnings and errors.
    label: String,
    url: String,
    method: String,
    status: u16,
    request_headers: Vec<(String, String)>,
    response_headers: Vec<(String, String)>,
    content_type: String,
    kind: ObjectType,
    /// The bytes to store (content-encoded when `encoding` is set); `None`: not recorded.
    stored: Option<Bytes>,
    /// The content encoding of `stored`.
    encoding: Option<String>,
    /// The identity bytes, for finding references (`None` if unknown or undecodable).
    decoded: Option<Bytes>,
    /// Body size when `stored` is `None` (what the synthetic body will be).
    size: usize,
    /// Absolute times, ms: request start, first response byte, last byte (HAR only).
    start: Option<f64>,
    first_byte: Option<f64>,
    end: Option<f64>,
    /// `timings.wait`, and the connection set-up RTT (`connect` − `ssl`), when recorded.
    wait: Option<f64>,
    rtt: Option<f64>,
    initiator: Option<HarInitiator>,
    speedy: Option<har::SpeedyExt>,
    /// The absolute redirect target of a 3xx.
    redirect: Option<String>,
}

impl Default for Rec {
    fn default() -> Rec {
        Rec {
            label: String::new(),
            url: String::new(),
            method: "GET".into(),
            status: 0,
            request_headers: Vec::new(),
            response_headers: Vec::new(),
            content_type: String::new(),
            kind: ObjectType::Other,
            stored: None,
            encoding: None,
            decoded: None,
            size: 0,
            start: None,
            first_byte: None,
            end: None,
            wait: None,
            rtt: None,
            initiator: None,
            speedy: None,
            redirect: None,
        }
    }
}

impl Rec {
    fn body_len(&self) -> usize {
        match &self.decoded {
            Some(d) => d.len(),
            None => self.stored.as_ref().map_or(self.size, Bytes::len),
        }
    }
    fn is_html(&self) -> bool {
        let ct = self.content_type.to_ascii_lowercase();
        ct.contains("html") || (ct.is_empty() && self.kind == ObjectType::Document)
    }
    fn is_css(&self) -> bool {
        let ct = self.content_type.to_ascii_lowercase();
        ct.contains("css") || (!ct.contains("html") && self.kind == ObjectType::Stylesheet)
    }
    fn is_js(&self) -> bool {
        let ct = self.content_type.to_ascii_lowercase();
        ct.contains("javascript")
            || ct.contains("ecmascript")
            || (!ct.contains("html") && self.kind == ObjectType::Script)
    }
    /// Parsers find references in it (as opposed to scripts).
    fn parsed(&self) -> bool {
        self.is_html() || self.is_css()
    }
}

/// Lower-case names; exact repeats of a name and value dropped (Chrome's exports list
/// some request headers twice, once from each of two DevTools events).
fn lower_headers(h: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::with_capacity(h.len());
    for (n, v) in h {
        let pair = (n.trim().to_ascii_lowercase(), v.clone());
        if !out.contains(&pair) {
            out.push(pair);
        }
    }
    out
}

fn header<'a>(h: &'a [(String, String)], name: &str) -> Option<&'a str> {
    h.iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Hop-by-hop and connection-level headers, never replayed.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-authenticate",
    "proxy-authorization",
];

fn keep_response_header(name: &str) -> bool {
    !(name.starts_with(':') || name == "content-length" || HOP_BY_HOP.contains(&name))
}

fn keep_request_header(name: &str) -> bool {
    !(name.starts_with(':')
        || name == "content-length"
        || name == "host"
        || HOP_BY_HOP.contains(&name))
}

/// The content encoding named by the headers, if any other than identity.
fn content_encoding(h: &[(String, String)]) -> Option<String> {
    header(h, "content-encoding")
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| !e.is_empty() && e != "identity")
}

/// Undoes gzip or deflate (zlib or raw); `None` for other codings or bad data.
fn decode_body(data: &[u8], enc: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let ok = match enc {
        "gzip" | "x-gzip" => flate2::read::MultiGzDecoder::new(data)
            .take(MAX_DECODED as u64)
            .read_to_end(&mut out)
            .is_ok(),
        "deflate" => {
            flate2::read::ZlibDecoder::new(data)
                .take(MAX_DECODED as u64)
                .read_to_end(&mut out)
                .is_ok()
                || {
                    out.clear();
                    flate2::read::DeflateDecoder::new(data)
                        .take(MAX_DECODED as u64)
                        .read_to_end(&mut out)
                        .is_ok()
                }
        }
        _ => false,
    };
    ok.then_some(out)
}

/// Encodes identity bytes with gzip or deflate (zlib), level 6.
fn encode_body(data: &[u8], enc: &str) -> Vec<u8> {
    let level = flate2::Compression::new(6);
    if enc == "deflate" {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), level);
        e.write_all(data).expect("in memory");
        e.finish().expect("in memory")
    } else {
        let mut e = flate2::GzBuilder::new().mtime(0).write(Vec::new(), level);
        e.write_all(data).expect("in memory");
        e.finish().expect("in memory")
    }
}

/// Does `data` look content-encoded with `enc` (rather than already decoded)?
fn looks_encoded(data: &[u8], enc: &str) -> bool {
    match enc {
        "gzip" | "x-gzip" => data.starts_with(&[0x1f, 0x8b]),
        "deflate" => {
            data.len() >= 2 && decode_body(data, "deflate").is_some() && {
                // A zlib header (CMF/FLG check) or raw deflate that decodes; text is not that.
                (data[0] & 0x0f == 8 && (u16::from(data[0]) << 8 | u16::from(data[1])) % 31 == 0)
                    || std::str::from_utf8(data).is_err()
            }
        }
        _ => false,
    }
}

/// Sets `stored`, `encoding`, `decoded` and `size` of a record and rewrites its
/// `content-encoding` header, by the rules of docs/archive.md ("Bodies and encodings").
fn settle_body(
    r: &mut Rec,
    body: Option<Vec<u8>>,
    given_encoded: bool,
    wire_size: Option<usize>,
    decoded_size: Option<usize>,
    warnings: &mut Vec<String>,
) {
    let enc = content_encoding(&r.response_headers);
    let set_header = |r: &mut Rec, value: Option<&str>| {
        r.response_headers
            .retain(|(n, _)| !n.eq_ignore_ascii_case("content-encoding"));
        if let Some(v) = value {
            r.response_headers
                .push(("content-encoding".into(), v.to_string()));
        }
    };
    match (body, enc) {
        (Some(b), None) => {
            let b = Bytes::from(b);
            r.decoded = Some(b.clone());
            r.stored = Some(b);
        }
        (Some(b), Some(e)) if given_encoded || looks_encoded(&b, &e) => {
            r.decoded = decode_body(&b, &e).map(Bytes::from);
            if r.decoded.is_none() {
                warnings.push(format!(
                    "{}: {e}-encoded body kept as recorded; its references were not scanned",
                    r.label
                ));
            }
            r.stored = Some(Bytes::from(b));
            r.encoding = Some(e);
        }
        (Some(b), Some(e)) => {
            // The HAR holds the decoded text: store it encoded again, as on the wire.
            let use_enc = if e == "gzip" || e == "x-gzip" || e == "deflate" {
                e.clone()
            } else {
                warnings.push(format!(
                    "{}: recorded with content-encoding {e}; the decoded body is stored gzip-encoded",
                    r.label
                ));
                "gzip".to_string()
            };
            let enc_bytes = encode_body(&b, &use_enc);
            r.decoded = Some(Bytes::from(b));
            r.stored = Some(Bytes::from(enc_bytes));
            set_header(r, Some(&use_enc));
            r.encoding = Some(use_enc);
        }
        (None, Some(_)) => {
            // Synthetic filler does not compress: replay the recorded wire size unencoded.
            set_header(r, None);
            r.size = wire_size.or(decoded_size).unwrap_or(0);
        }
        (None, None) => {
            r.size = decoded_size.or(wire_size).unwrap_or(0);
        }
    }
}

// ---------------------------------------------------------------------------------------
// URLs.

/// Lower-case scheme and host, no default port, no fragment, `/` for an empty path.
fn normalize(url: &str) -> String {
    let url = url.split('#').next().unwrap_or("");
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let scheme = scheme.to_ascii_lowercase();
    let i = rest.find(['/', '?']).unwrap_or(rest.len());
    let mut host = rest[..i].to_ascii_lowercase();
    if let Some(at) = host.rfind('@') {
        host = host[at + 1..].to_string();
    }
    if (scheme == "http" && host.ends_with(":80")) || (scheme == "https" && host.ends_with(":443"))
    {
        host.truncate(host.rfind(':').unwrap_or(host.len()));
    }
    let path = &rest[i..];
    let path = if path.is_empty() {
        "/".to_string()
    } else if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    format!("{scheme}://{host}{path}")
}

fn remove_dots(path: &str) -> String {
    let (p, q) = match path.find('?') {
        Some(i) => (&path[..i], &path[i..]),
        None => (path, ""),
    };
    let mut out: Vec<&str> = Vec::new();
    let segs: Vec<&str> = p.split('/').collect();
    for (k, s) in segs.iter().enumerate() {
        let last = k + 1 == segs.len();
        match *s {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 {
                    out.pop();
                }
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let mut r = out.join("/");
    if !r.starts_with('/') {
        r.insert(0, '/');
    }
    r + q
}

/// Resolves a reference against an absolute http(s) base; `None` for other schemes.
fn resolve(base: &str, rel: &str) -> Option<String> {
    let rel = rel.trim_matches(|c: char| c.is_ascii_whitespace());
    if rel.is_empty() || rel.starts_with('#') {
        return None;
    }
    let rel = rel.split('#').next().unwrap_or("");
    if let Some(colon) = rel.find(':') {
        let scheme = &rel[..colon];
        if !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
        {
            let s = scheme.to_ascii_lowercase();
            return ((s == "http" || s == "https") && rel[colon..].starts_with("://"))
                .then(|| rel.to_string());
        }
    }
    let (scheme, authority, path) = crate::model::split_url(base)?;
    if let Some(r) = rel.strip_prefix("//") {
        return (!r.is_empty()).then(|| format!("{scheme}://{r}"));
    }
    let base_path = path.split('#').next().unwrap_or("/");
    let joined = if rel.starts_with('/') {
        rel.to_string()
    } else if rel.starts_with('?') {
        format!("{}{rel}", base_path.split('?').next().unwrap_or("/"))
    } else {
        let dir = base_path.split('?').next().unwrap_or("/");
        let dir = &dir[..dir.rfind('/').map_or(0, |i| i + 1)];
        format!("{}{rel}", if dir.is_empty() { "/" } else { dir })
    };
    Some(format!("{scheme}://{authority}{}", remove_dots(&joined)))
}

fn host_of(url: &str) -> String {
    crate::model::split_url(url)
        .map(|(_, h, _)| h.to_ascii_lowercase())
        .unwrap_or_default()
}

fn is_http(url: &str) -> bool {
    let l = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    (l.starts_with("http://") || l.starts_with("https://"))
        && crate::model::split_url(url).is_some()
}

// ---------------------------------------------------------------------------------------
// References in bodies.

/// A reference found in a body.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Ref {
    /// Normalized absolute URL.
    url: String,
    /// `Some(end offset)`: found by a parser (HTML attribute, CSS url()/@import); `None`:
    /// a string in a script.
    offset: Option<usize>,
}

fn find_ci(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || from >= hay.len() || hay.len() - from < needle.len() {
        return None;
    }
    (from..=hay.len() - needle.len())
        .find(|&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

fn find_b(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if from >= hay.len() || hay.len() - from < needle.len() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest[1..].find(';').map(|e| e + 1).filter(|&e| e <= 10);
        let Some(end) = end else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let ent = &rest[1..end];
        let ch = match ent {
            "amp" => Some('&'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "lt" => Some('<'),
            "gt" => Some('>'),
            _ if ent.starts_with("#x") || ent.starts_with("#X") => {
                u32::from_str_radix(&ent[2..], 16)
                    .ok()
                    .and_then(char::from_u32)
            }
            _ if ent.starts_with('#') => ent[1..].parse().ok().and_then(char::from_u32),
            _ => None,
        };
        match ch {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// url() and @import references of CSS; offsets are where each reference ends.
fn scan_css(css: &[u8], base: &str, shift: usize, out: &mut Vec<Ref>) {
    let mut i = 0;
    let n = css.len();
    while i < n {
        let c = css[i];
        if c == b'/' && css.get(i + 1) == Some(&b'*') {
            i = find_b(css, b"*/", i + 2).map_or(n, |e| e + 2);
            continue;
        }
        if (c == b'u' || c == b'U')
            && css.len() >= i + 4
            && css[i..i + 4].eq_ignore_ascii_case(b"url(")
        {
            let mut j = i + 4;
            while j < n && css[j].is_ascii_whitespace() {
                j += 1;
            }
            let (value, after) = if j < n && (css[j] == b'"' || css[j] == b'\'') {
                let q = css[j];
                let end = css[j + 1..]
                    .iter()
                    .position(|&x| x == q || x == b'\n')
                    .map_or(n, |p| j + 1 + p);
                (&css[j + 1..end], end + 1)
            } else {
                let end = css[j..]
                    .iter()
                    .position(|&x| x == b')')
                    .map_or(n, |p| j + p);
                (&css[j..end], end)
            };
            let close = css[after.min(n)..]
                .iter()
                .position(|&x| x == b')')
                .map_or(n, |p| after + p + 1);
            let v = String::from_utf8_lossy(value);
            if let Some(u) = resolve(base, v.trim()) {
                out.push(Ref {
                    url: normalize(&u),
                    offset: Some(shift + close.min(n)),
                });
            }
            i = close.max(i + 1);
            continue;
        }
        if c == b'@' && css.len() >= i + 7 && css[i..i + 7].eq_ignore_ascii_case(b"@import") {
            let mut j = i + 7;
            while j < n && css[j].is_ascii_whitespace() {
                j += 1;
            }
            if j < n && (css[j] == b'"' || css[j] == b'\'') {
                let q = css[j];
                let end = css[j + 1..]
                    .iter()
                    .position(|&x| x == q || x == b'\n')
                    .map_or(n, |p| j + 1 + p);
                let v = String::from_utf8_lossy(&css[j + 1..end]);
                if let Some(u) = resolve(base, v.trim()) {
                    out.push(Ref {
                        url: normalize(&u),
                        offset: Some(shift + (end + 1).min(n)),
                    });
                }
                i = end + 1;
                continue;
            }
            i = j;
            continue;
        }
        if c == b'"' || c == b'\'' {
            // Skip other strings (a "url(" inside one is not a reference).
            i = css[i + 1..]
                .iter()
                .position(|&x| x == c || x == b'\n')
                .map_or(n, |p| i + 2 + p);
            continue;
        }
        i += 1;
    }
}

/// String literals of a script that resolve to http(s) URLs (comments skipped).
fn scan_js(js: &[u8], bases: &[&str], out: &mut Vec<Ref>) {
    let n = js.len();
    let mut i = 0;
    let mut seen = HashSet::new();
    while i < n {
        let c = js[i];
        if c == b'/' && js.get(i + 1) == Some(&b'/') {
            i = js[i..]
                .iter()
                .position(|&x| x == b'\n')
                .map_or(n, |p| i + p + 1);
            continue;
        }
        if c == b'/' && js.get(i + 1) == Some(&b'*') {
            i = find_b(js, b"*/", i + 2).map_or(n, |e| e + 2);
            continue;
        }
        if c == b'"' || c == b'\'' || c == b'`' {
            let mut j = i + 1;
            let mut s = Vec::new();
            while j < n && js[j] != c && (c == b'`' || js[j] != b'\n') {
                if js[j] == b'\\' && j + 1 < n {
                    j += 1;
                }
                s.push(js[j]);
                j += 1;
            }
            if !s.is_empty() && s.len() < 2048 && !s.iter().any(|b| b.is_ascii_whitespace()) {
                let lit = String::from_utf8_lossy(&s);
                for b in bases {
                    if let Some(u) = resolve(b, &lit) {
                        let u = normalize(&u);
                        if seen.insert(u.clone()) {
                            out.push(Ref {
                                url: u,
                                offset: None,
                            });
                        }
                    }
                }
            }
            i = j + 1;
            continue;
        }
        i += 1;
    }
}

/// (attribute, is a list like srcset) pairs that load something, per element.
fn loading_attrs(tag: &str) -> &'static [(&'static str, bool)] {
    match tag {
        "script" | "iframe" | "frame" | "embed" | "audio" | "track" => &[("src", false)],
        "img" => &[("src", false), ("srcset", true)],
        "source" => &[("src", false), ("srcset", true)],
        "video" => &[("src", false), ("poster", false)],
        "input" => &[("src", false)],
        "object" => &[("data", false)],
        "body" | "table" | "td" | "th" => &[("background", false)],
        _ => &[],
    }
}

/// References of an HTML document: attributes that load something (at the end of their
/// tag), CSS in `style` attributes and elements (parsed), strings in inline scripts.
fn scan_html(html: &[u8], url: &str, out: &mut Vec<Ref>) {
    let n = html.len();
    let mut base = url.to_string();
    let mut i = 0;
    while let Some(lt) = html[i..].iter().position(|&c| c == b'<').map(|p| p + i) {
        if html[lt..].starts_with(b"<!--") {
            i = find_b(html, b"-->", lt + 4).map_or(n, |e| e + 3);
            continue;
        }
        let next = html.get(lt + 1).copied().unwrap_or(0);
        if next == b'!' || next == b'?' || next == b'/' {
            i = html[lt..]
                .iter()
                .position(|&c| c == b'>')
                .map_or(n, |p| lt + p + 1);
            continue;
        }
        if !next.is_ascii_alphabetic() {
            i = lt + 1;
            continue;
        }
        // Tag name and attributes.
        let mut j = lt + 1;
        while j < n && (html[j].is_ascii_alphanumeric() || html[j] == b'-' || html[j] == b':') {
            j += 1;
        }
        let tag = String::from_utf8_lossy(&html[lt + 1..j]).to_ascii_lowercase();
        let mut attrs: Vec<(String, String)> = Vec::new();
        loop {
            while j < n && (html[j].is_ascii_whitespace() || html[j] == b'/') {
                j += 1;
            }
            if j >= n || html[j] == b'>' {
                break;
            }
            let ns = j;
            while j < n && !html[j].is_ascii_whitespace() && !matches!(html[j], b'=' | b'>' | b'/')
            {
                j += 1;
            }
            let name = String::from_utf8_lossy(&html[ns..j]).to_ascii_lowercase();
            while j < n && html[j].is_ascii_whitespace() {
                j += 1;
            }
            let mut value = String::new();
            if j < n && html[j] == b'=' {
                j += 1;
                while j < n && html[j].is_ascii_whitespace() {
                    j += 1;
                }
                if j < n && (html[j] == b'"' || html[j] == b'\'') {
                    let q = html[j];
                    let e = html[j + 1..]
                        .iter()
                        .position(|&c| c == q)
                        .map_or(n, |p| j + 1 + p);
                    value = String::from_utf8_lossy(&html[j + 1..e]).into_owned();
                    j = (e + 1).min(n);
                } else {
                    let s = j;
                    while j < n && !html[j].is_ascii_whitespace() && html[j] != b'>' {
                        j += 1;
                    }
                    value = String::from_utf8_lossy(&html[s..j]).into_owned();
                }
            }
            if ns == j {
                j += 1;
            }
            attrs.push((name, decode_entities(&value)));
        }
        let tag_end = (j + 1).min(n);
        let attr = |name: &str| {
            attrs
                .iter()
                .find(|(a, _)| a == name)
                .map(|(_, v)| v.as_str())
        };
        let push = |v: &str, out: &mut Vec<Ref>| {
            if let Some(u) = resolve(&base, v) {
                out.push(Ref {
                    url: normalize(&u),
                    offset: Some(tag_end),
                });
            }
        };
        match tag.as_str() {
            "base" => {
                if let Some(u) = attr("href").and_then(|h| resolve(&base, h)) {
                    base = u;
                }
            }
            "link" => {
                let rel = attr("rel").unwrap_or("").to_ascii_lowercase();
                let loads = rel.split_ascii_whitespace().any(|r| {
                    matches!(
                        r,
                        "stylesheet"
                            | "icon"
                            | "preload"
                            | "modulepreload"
                            | "prefetch"
                            | "manifest"
                    ) || r.starts_with("apple-touch-icon")
                });
                if loads {
                    if let Some(h) = attr("href") {
                        push(h, out);
                    }
                }
            }
            t => {
                for (a, list) in loading_attrs(t) {
                    let Some(v) = attr(a) else { continue };
                    if *list {
                        for cand in v.split(',') {
                            if let Some(u) = cand.split_ascii_whitespace().next() {
                                push(u, out);
                            }
                        }
                    } else {
                        push(v, out);
                    }
                }
            }
        }
        if let Some(style) = attr("style") {
            let mut found = Vec::new();
            scan_css(style.as_bytes(), &base, 0, &mut found);
            for mut r in found {
                r.offset = Some(tag_end);
                out.push(r);
            }
        }
        // Raw-text elements.
        let raw_end = |name: &[u8]| -> (usize, usize) {
            let mut close = Vec::from(&b"</"[..]);
            close.extend_from_slice(name);
            match find_ci(html, &close, tag_end) {
                Some(c) => (
                    c,
                    html[c..]
                        .iter()
                        .position(|&x| x == b'>')
                        .map_or(n, |p| c + p + 1),
                ),
                None => (n, n),
            }
        };
        i = tag_end;
        match tag.as_str() {
            "script" => {
                let (c, after) = raw_end(b"script");
                if attr("src").is_none() {
                    scan_js(&html[tag_end..c], &[base.as_str()], out);
                }
                i = after;
            }
            "style" => {
                let (c, after) = raw_end(b"style");
                scan_css(&html[tag_end..c], &base, tag_end, out);
                i = after;
            }
            "textarea" | "title" | "xmp" | "noscript" | "template" => {
                i = raw_end(tag.as_bytes()).1;
            }
            _ => {}
        }
        if i <= lt {
            i = lt + 1;
        }
    }
}

/// Every reference in a record's (decoded) body; `doc` is the base for script strings.
fn scan(r: &Rec, doc: &str) -> Vec<Ref> {
    let Some(body) = r.decoded.as_ref().filter(|b| b.len() <= MAX_DECODED) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if r.is_html() {
        scan_html(body, &r.url, &mut out);
    } else if r.is_css() {
        scan_css(body, &r.url, 0, &mut out);
    } else if r.is_js() {
        let bases = if doc == r.url {
            vec![doc]
        } else {
            vec![doc, r.url.as_str()]
        };
        scan_js(body, &bases, &mut out);
    }
    out
}

/// The byte offset where 0-based `line` of `body` ends.
fn line_end(body: &[u8], line: u64) -> Option<usize> {
    let mut seen = 0;
    for (i, &b) in body.iter().enumerate() {
        if b == b'\n' {
            if seen == line {
                return Some(i);
            }
            seen += 1;
        }
    }
    (seen == line).then_some(body.len())
}

// ---------------------------------------------------------------------------------------
// Pages.

/// Does `r` start a new page after `page` (HAR without pages, WARC)?
fn starts_page(page: &[Rec], refs: &HashSet<String>, r: &Rec, use_time: bool) -> bool {
    if page.is_empty() || !(r.is_html() || r.kind == ObjectType::Document) {
        return false;
    }
    if !(200..400).contains(&r.status) {
        return false;
    }
    let me = normalize(&r.url);
    if refs.contains(&me) {
        return false;
    }
    if page
        .iter()
        .any(|p| p.redirect.as_deref().map(normalize).as_deref() == Some(me.as_str()))
    {
        return false;
    }
    if let Some(init) = &r.initiator {
        if !matches!(init.kind, InitiatorKind::Other(ref k) if k != "unknown")
            && init
                .urls
                .iter()
                .any(|u| page.iter().any(|p| normalize(&p.url) == normalize(u)))
        {
            return false;
        }
    }
    if use_time {
        let busy_until = page.iter().filter_map(|p| p.end).fold(f64::MIN, f64::max);
        if let Some(s) = r.start {
            if s < busy_until {
                return false;
            }
        }
    }
    true
}

/// Splits records (in time or file order) into pages by the rules of docs/archive.md.
fn split_pages(recs: Vec<Rec>, use_time: bool) -> Vec<Vec<Rec>> {
    let mut pages: Vec<Vec<Rec>> = Vec::new();
    let mut cur: Vec<Rec> = Vec::new();
    let mut refs: HashSet<String> = HashSet::new();
    for r in recs {
        if starts_page(&cur, &refs, &r, use_time) {
            pages.push(std::mem::take(&mut cur));
            refs.clear();
        }
        let doc = cur.first().map_or(r.url.clone(), |f| f.url.clone());
        refs.extend(scan(&r, &doc).into_iter().map(|x| x.url));
        cur.push(r);
    }
    if !cur.is_empty() {
        pages.push(cur);
    }
    pages
}

fn page_name(index: usize, root_url: &str) -> String {
    let host: String = host_of(root_url)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{index:02}-{host}")
}

fn gap(parent: &Rec, child: &Rec) -> u32 {
    match (parent.end, child.start) {
        (Some(e), Some(s)) => (s - e).max(0.0).round() as u32,
        _ => 0,
    }
}

/// Where a parser of `parent` finds `child`: the reference in its body, the initiator's
/// line, the bytes received when the child was requested, or the end of the body.
fn parsed_offset(parent: &Rec, prefs: &[Ref], child: &Rec, line: Option<u64>) -> usize {
    let me = normalize(&child.url);
    if let Some(o) = prefs.iter().find(|r| r.url == me).and_then(|r| r.offset) {
        return o;
    }
    let size = parent.body_len();
    if let (Some(l), Some(body)) = (line, parent.decoded.as_ref()) {
        if let Some(o) = line_end(body, l) {
            return o;
        }
    }
    if let (Some(fb), Some(end), Some(s)) = (parent.first_byte, parent.end, child.start) {
        if s >= fb && s < end && end > fb {
            return ((size as f64) * (s - fb) / (end - fb))
                .round()
                .clamp(0.0, size as f64) as usize;
        }
    }
    size
}

/// Infers one object's discovery from the page's earlier records (local indices).
fn infer(
    recs: &[Rec],
    refs: &[Vec<Ref>],
    by_url: &HashMap<String, usize>,
    i: usize,
) -> (Discovery, &'static str) {
    let r = &recs[i];
    let earlier = |u: &str| by_url.get(&normalize(u)).copied().filter(|&j| j < i);
    let parsed = |j: usize, line: Option<u64>| Discovery::Parsed {
        parent: j,
        offset: parsed_offset(&recs[j], &refs[j], r, line),
    };
    let computed = |j: usize| Discovery::Computed {
        parent: j,
        after_ms: gap(&recs[j], r),
    };
    // 1. speedy's own record of the discovery.
    if let Some(ext) = &r.speedy {
        if let Some(j) = ext.parent.as_deref().and_then(earlier) {
            match ext.discovery.as_deref() {
                Some("parsed") => {
                    let offset = ext.offset.unwrap_or_else(|| recs[j].body_len());
                    return (Discovery::Parsed { parent: j, offset }, "_speedy");
                }
                Some("computed") => {
                    let after_ms = ext.after_ms.unwrap_or_else(|| gap(&recs[j], r));
                    return (
                        Discovery::Computed {
                            parent: j,
                            after_ms,
                        },
                        "_speedy",
                    );
                }
                _ => {}
            }
        }
    }
    // 2. The target of an earlier redirect.
    let me = normalize(&r.url);
    if let Some(j) = (0..i)
        .rev()
        .find(|&j| recs[j].redirect.as_deref().map(normalize).as_deref() == Some(me.as_str()))
    {
        return (computed(j), "redirect");
    }
    // 3. The recorded initiator.
    if let Some(init) = &r.initiator {
        let usable = !matches!(&init.kind, InitiatorKind::Other(k) if k != "unknown");
        if usable {
            for (k, u) in init.urls.iter().enumerate() {
                let Some(j) = earlier(u) else { continue };
                let line = if k == 0 { init.line } else { None };
                let by_parser = match init.kind {
                    InitiatorKind::Parser => recs[j].parsed(),
                    InitiatorKind::Script => false,
                    InitiatorKind::Other(_) => recs[j].parsed(),
                };
                return if by_parser {
                    (parsed(j, line), "initiator")
                } else {
                    (computed(j), "initiator")
                };
            }
        }
    }
    // 4. A reference in an earlier body: a parser's first, else a script's.
    let mut script_ref = None;
    for (j, found) in refs.iter().enumerate().take(i) {
        for x in found {
            if x.url == me {
                match x.offset {
                    Some(offset) => return (Discovery::Parsed { parent: j, offset }, "body"),
                    None if script_ref.is_none() => script_ref = Some(j),
                    None => {}
                }
            }
        }
    }
    if let Some(j) = script_ref {
        return (computed(j), "body");
    }
    // 5. The recorded timings.
    if let Some(d) = r.start {
        // Requested while a document streamed in: its parser (the earliest such document).
        let streaming = (0..i).find(|&j| {
            let p = &recs[j];
            p.is_html()
                && can_reference(p, r)
                && matches!((p.first_byte, p.end), (Some(fb), Some(e)) if fb <= d && d < e)
        });
        if let Some(j) = streaming {
            return (parsed(j, None), "timings");
        }
        let done: Vec<usize> = (0..i)
            .filter(|&j| can_reference(&recs[j], r) && recs[j].end.is_some_and(|e| e <= d + 1.0))
            .collect();
        let latest = |it: &mut dyn Iterator<Item = usize>| {
            it.max_by(|&a, &b| {
                recs[a]
                    .end
                    .partial_cmp(&recs[b].end)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(a.cmp(&b))
            })
        };
        if let Some(p) = latest(&mut done.iter().copied()) {
            let g = d - recs[p].end.unwrap_or(d);
            let script = latest(&mut done.iter().copied().filter(|&j| recs[j].is_js()));
            let at_end = Discovery::Parsed {
                parent: p,
                offset: recs[p].body_len(),
            };
            return match (recs[p].is_js(), g <= QUICK_MS, script) {
                // Right after a script: that script.
                (true, true, _) => (computed(p), "timings"),
                // Right after a document or style sheet, or late with no script to blame
                // (the parser was slow): found by the parser at the end of it.
                (false, true, _) | (false, false, None) => (at_end, "timings"),
                // Late: the latest script's compute.
                (_, false, Some(s)) => (computed(s), "timings"),
                (true, false, None) => (computed(p), "timings"),
            };
        }
        if recs[0].parsed() {
            return (
                Discovery::Parsed {
                    parent: 0,
                    offset: 0,
                },
                "timings",
            );
        }
    }
    // 6. Nothing known: after the root completes.
    (
        Discovery::Computed {
            parent: 0,
            after_ms: 0,
        },
        "none",
    )
}

/// Can an object like `parent` reference one like `child` (timing inference only)?
fn can_reference(parent: &Rec, child: &Rec) -> bool {
    let (html, css, js) = (parent.is_html(), parent.is_css(), parent.is_js());
    match child.kind {
        ObjectType::Document | ObjectType::Script => html || js,
        ObjectType::Xhr => js,
        ObjectType::Font | ObjectType::Other => css || js,
        ObjectType::Stylesheet | ObjectType::Image => html || css || js,
    }
}

fn object_type(r: &Rec, resource_type: Option<&str>) -> ObjectType {
    if let Some(k) = r.speedy.as_ref().and_then(|s| s.kind.as_deref()) {
        if let Ok(t) =
            serde_json::from_value::<ObjectType>(serde_json::Value::String(k.to_string()))
        {
            return t;
        }
    }
    match resource_type {
        Some("document") => ObjectType::Document,
        Some("stylesheet") => ObjectType::Stylesheet,
        Some("script") => ObjectType::Script,
        Some("font") => ObjectType::Font,
        Some("xhr") | Some("fetch") | Some("eventsource") => ObjectType::Xhr,
        Some("image") => ObjectType::Image,
        _ => ObjectType::guess(&r.content_type, &r.url),
    }
}

/// Turns one page's records into archive objects; `None` if none is left.
fn build_page(
    a: &mut Archive,
    index: usize,
    name: Option<&str>,
    mut recs: Vec<Rec>,
    warnings: &mut Vec<String>,
    sources: &mut std::collections::BTreeMap<&'static str, usize>,
) -> Option<Page> {
    // Only http(s), one object per method and URL.
    let mut seen = HashSet::new();
    recs.retain(|r| {
        if !is_http(&r.url) {
            warnings.push(format!(
                "{}: {} is not http(s); skipped",
                r.label,
                short(&r.url)
            ));
            return false;
        }
        if !seen.insert((r.method.clone(), normalize(&r.url))) {
            warnings.push(format!(
                "{}: {} {} was already recorded on this page; the later copy is skipped",
                r.label, r.method, r.url
            ));
            return false;
        }
        true
    });
    if recs.iter().all(|r| r.start.is_some()) {
        recs.sort_by(|x, y| {
            x.start
                .partial_cmp(&y.start)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    }
    let root = recs.iter().position(|r| {
        r.is_html() || r.kind == ObjectType::Document || (300..400).contains(&r.status)
    })?;
    let root_rec = recs.remove(root);
    recs.insert(0, root_rec);

    let by_url: HashMap<String, usize> = recs
        .iter()
        .enumerate()
        .map(|(i, r)| (normalize(&r.url), i))
        .collect();
    // Discovery, in order; a script's strings resolve against its document.
    let n = recs.len();
    let mut disc = Vec::with_capacity(n);
    let mut docs: Vec<String> = Vec::with_capacity(n);
    let mut refs: Vec<Vec<Ref>> = Vec::with_capacity(n);
    for i in 0..n {
        let d = if i == 0 {
            Discovery::Root
        } else {
            let (d, how) = infer(&recs, &refs, &by_url, i);
            *sources.entry(how).or_default() += 1;
            d
        };
        let doc = match d.parent() {
            _ if recs[i].is_html() => recs[i].url.clone(),
            Some(p) => docs[p].clone(),
            None => recs[i].url.clone(),
        };
        refs.push(scan(&recs[i], &doc));
        docs.push(doc);
        disc.push(d);
    }
    // Server think time: the wait beyond the host's round trip.
    let mut rtt: HashMap<String, f64> = HashMap::new();
    for r in &recs {
        let est = r.rtt.filter(|x| *x > 0.0).or(r.wait);
        if let Some(e) = est {
            let h = rtt.entry(host_of(&r.url)).or_insert(f64::MAX);
            *h = h.min(e);
        }
    }
    let base = a.objects.len();
    let mut ids = Vec::with_capacity(n);
    for (i, r) in recs.into_iter().enumerate() {
        let think_ms = match r.speedy.as_ref().and_then(|s| s.think_ms) {
            Some(t) => t,
            None => match (r.wait, rtt.get(&host_of(&r.url))) {
                (Some(w), Some(&m)) if m < f64::MAX => (w - m).max(0.0).round() as u32,
                _ => 0,
            },
        };
        let discovery = match disc[i] {
            Discovery::Root => Discovery::Root,
            Discovery::Parsed { parent, offset } => Discovery::Parsed {
                parent: base + parent,
                offset,
            },
            Discovery::Computed { parent, after_ms } => Discovery::Computed {
                parent: base + parent,
                after_ms,
            },
        };
        let o = Object {
            id: 0,
            url: r.url.clone(),
            method: r.method.clone(),
            status: r.status,
            request_headers: lower_headers(&r.request_headers)
                .into_iter()
                .filter(|(n, _)| keep_request_header(n))
                .collect(),
            response_headers: lower_headers(&r.response_headers)
                .into_iter()
                .filter(|(n, _)| keep_response_header(n))
                .collect(),
            body: BodySource::Synthetic { size: r.size },
            content_type: r.content_type.clone(),
            content_encoding: r.encoding.clone(),
            think_ms,
            kind: r.kind,
            discovery,
        };
        ids.push(a.add_object(o, r.stored.clone()));
    }
    Some(Page {
        name: name.map_or_else(|| page_name(index, &a.objects[base].url), str::to_string),
        root: base,
        objects: ids,
    })
}

fn short(u: &str) -> String {
    if u.chars().count() > 60 {
        format!("{}…", u.chars().take(60).collect::<String>())
    } else {
        u.to_string()
    }
}

fn finish(a: &mut Archive, path: &Path) -> Result<(), ImportError> {
    if a.pages.is_empty() {
        return Err(invalid(
            path,
            "",
            "no page could be imported (no http(s) response with a document)",
        ));
    }
    a.validate()
        .map_err(|e| invalid(path, "", format!("imported archive is inconsistent: {e}")))
}

// ---------------------------------------------------------------------------------------
// HAR.

fn rec_from_har(e: &HarEntry, warnings: &mut Vec<String>) -> Rec {
    let label = format!("entries[{}]", e.index);
    let content_type = header(&e.response_headers, "content-type")
        .map(str::to_string)
        .unwrap_or_else(|| e.mime.clone());
    let t = &e.timings;
    let first_byte = e.started_ms + t.to_first_byte();
    let end = e.started_ms
        + if e.time > 0.0 {
            e.time.max(t.to_first_byte())
        } else {
            t.total()
        };
    let mut r = Rec {
        label,
        url: e.url.clone(),
        method: e.method.to_ascii_uppercase(),
        status: e.status,
        request_headers: e.request_headers.clone(),
        response_headers: e.response_headers.clone(),
        content_type,
        start: Some(e.started_ms),
        first_byte: Some(first_byte),
        end: Some(end),
        wait: t.wait,
        rtt: t
            .connect
            .map(|c| c - t.ssl.unwrap_or(0.0))
            .filter(|x| *x > 0.0),
        initiator: e.initiator.clone(),
        speedy: e.speedy.clone(),
        ..Default::default()
    };
    let loc = header(&e.response_headers, "location")
        .map(str::to_string)
        .or_else(|| (!e.redirect_url.is_empty()).then(|| e.redirect_url.clone()));
    if (300..400).contains(&e.status) {
        r.redirect = loc.and_then(|l| resolve(&e.url, &l));
    }
    r.kind = object_type(&r, e.resource_type.as_deref());
    let wire = e
        .body_size
        .filter(|&b| b > 0)
        .or_else(|| match (e.transfer_size, e.headers_size) {
            (Some(t), Some(h)) if t > h => Some(t - h),
            (Some(t), None) => Some(t),
            _ => None,
        })
        .map(|x| x as usize);
    let no_body = e.method.eq_ignore_ascii_case("HEAD")
        || matches!(e.status, 204 | 304)
        || (100..200).contains(&e.status);
    let encoded_body = e.speedy.as_ref().and_then(|s| s.encoded_body.clone());
    let given_encoded = encoded_body.is_some() && content_encoding(&e.response_headers).is_some();
    let body = if no_body {
        None
    } else if given_encoded {
        encoded_body
    } else {
        e.body.clone()
    };
    let (wire, decoded) = if no_body {
        (Some(0), Some(0))
    } else {
        (wire, e.content_size.map(|x| x as usize))
    };
    settle_body(&mut r, body, given_encoded, wire, decoded, warnings);
    if r.decoded.is_none() && r.stored.is_some() {
        // An encoding speedy cannot undo: the HAR's decoded text still shows references.
        r.decoded = e.body.clone().map(Bytes::from);
    }
    r
}

/// Imports a HAR file's bytes; `path` names it in errors.
pub fn import_har(path: &Path, data: &[u8]) -> Result<Imported, ImportError> {
    let log: HarLog = har::parse(data).map_err(|e| invalid(path, e.entry, e.reason))?;
    let mut warnings = Vec::new();
    let mut sources = Default::default();
    let mut a = Archive::new(&format!(
        "{} (HAR {}{})",
        path.file_name().map_or_else(
            || path.display().to_string(),
            |f| f.to_string_lossy().into_owned()
        ),
        if log.version.is_empty() {
            "?"
        } else {
            &log.version
        },
        if log.creator.is_empty() {
            String::new()
        } else {
            format!(", {}", log.creator)
        }
    ));
    let mut recs: Vec<(Option<usize>, Rec)> = Vec::new();
    for e in &log.entries {
        if e.status == 0 {
            warnings.push(format!(
                "entries[{}]: no response (status 0) for {}; skipped",
                e.index,
                short(&e.url)
            ));
            continue;
        }
        let page = if log.pages.is_empty() {
            None
        } else {
            Some(match &e.pageref {
                Some(p) => log.pages.iter().position(|x| &x.id == p).ok_or_else(|| {
                    invalid(
                        path,
                        format!("entries[{}].pageref", e.index),
                        format!("{p:?} names no page of log.pages"),
                    )
                })?,
                None if log.pages.len() == 1 => 0,
                None => log
                    .pages
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.started_ms.is_some_and(|s| s <= e.started_ms))
                    .max_by(|x, y| {
                        x.1.started_ms
                            .partial_cmp(&y.1.started_ms)
                            .unwrap_or(std::cmp::Ordering::Equal)
                    })
                    .map_or(0, |(i, _)| i),
            })
        };
        recs.push((page, rec_from_har(e, &mut warnings)));
    }
    let groups: Vec<(Option<String>, Vec<Rec>)> = if log.pages.is_empty() {
        let mut all: Vec<Rec> = recs.into_iter().map(|(_, r)| r).collect();
        all.sort_by(|x, y| {
            x.start
                .partial_cmp(&y.start)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        split_pages(all, true)
            .into_iter()
            .map(|g| (None, g))
            .collect()
    } else {
        let mut g: Vec<Vec<Rec>> = vec![Vec::new(); log.pages.len()];
        for (p, r) in recs {
            g[p.unwrap_or(0)].push(r);
        }
        for (i, x) in g.iter().enumerate() {
            if x.is_empty() {
                warnings.push(format!(
                    "pages[{i}] ({}): no entries; skipped",
                    log.pages[i].id
                ));
            }
        }
        log.pages
            .iter()
            .map(|p| p.speedy_name.clone())
            .zip(g)
            .collect()
    };
    for (name, g) in groups.into_iter().filter(|g| !g.1.is_empty()) {
        let first = g[0].label.clone();
        let idx = a.pages.len();
        // A recorded name is kept unless another page has it already.
        let name = name.filter(|n| !n.is_empty() && a.page(n).is_none());
        match build_page(&mut a, idx, name.as_deref(), g, &mut warnings, &mut sources) {
            Some(p) => a.pages.push(p),
            None => warnings.push(format!(
                "{first}: page without a document or redirect; skipped"
            )),
        }
    }
    finish(&mut a, path)?;
    Ok(Imported {
        archive: a,
        warnings,
        sources,
    })
}

// ---------------------------------------------------------------------------------------
// WARC.

fn rec_from_http(label: String, url: &str, msg: &HttpMessage, warnings: &mut Vec<String>) -> Rec {
    let content_type = msg.header("content-type").unwrap_or("").to_string();
    let mut r = Rec {
        label,
        url: url.to_string(),
        method: "GET".into(),
        status: msg.status,
        response_headers: msg.headers.clone(),
        content_type,
        ..Default::default()
    };
    if (300..400).contains(&msg.status) {
        r.redirect = msg.header("location").and_then(|l| resolve(url, l));
    }
    r.kind = ObjectType::guess(&r.content_type, url);
    if msg.truncated {
        warnings.push(format!(
            "{}: the body is truncated in the WARC; stored as recorded",
            r.label
        ));
    }
    let wire = msg.body.len();
    settle_body(
        &mut r,
        Some(msg.body.to_vec()),
        true,
        Some(wire),
        None,
        warnings,
    );
    r
}

/// Imports a WARC file's bytes (gzip or not); `path` names it in errors.
pub fn import_warc(path: &Path, data: &[u8]) -> Result<Imported, ImportError> {
    let plain = warc::decompress(data).map_err(|e| invalid(path, e.entry, e.reason))?;
    let records = warc::parse(&plain).map_err(|e| invalid(path, e.entry, e.reason))?;
    let mut warnings = Vec::new();
    let by_id: HashMap<&str, usize> = records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.record_id().map(|id| (id, i)))
        .collect();
    let is_response =
        |r: &WarcRecord| r.kind() == "response" && r.target_uri().is_some_and(is_http);
    let http_of = |r: &WarcRecord| -> Result<HttpMessage, ImportError> {
        warc::parse_http(&r.block).map_err(|e| invalid(path, r.describe(), e))
    };
    // The response a revisit stands for (following revisits of revisits).
    let original = |r: &WarcRecord| -> Result<usize, ImportError> {
        let mut cur = r;
        for _ in 0..16 {
            let by_ref = cur
                .field("WARC-Refers-To")
                .map(warc::strip_brackets)
                .and_then(|id| {
                    by_id
                        .get(id)
                        .or_else(|| by_id.get(format!("<{id}>").as_str()))
                        .copied()
                });
            let target = cur
                .field("WARC-Refers-To-Target-URI")
                .map(warc::strip_brackets)
                .or(cur.target_uri());
            let by_digest = || {
                let d = cur.field("WARC-Payload-Digest")?;
                let same = |x: &&WarcRecord| {
                    x.field("WARC-Payload-Digest") == Some(d) && x.kind() == "response"
                };
                records
                    .iter()
                    .filter(same)
                    .find(|x| x.target_uri() == target)
                    .or_else(|| records.iter().find(same))
                    .map(|x| x.index)
            };
            let Some(i) = by_ref.or_else(by_digest) else {
                let what = cur
                    .field("WARC-Refers-To")
                    .map(|id| format!("record {id}"))
                    .or_else(|| {
                        cur.field("WARC-Payload-Digest")
                            .map(|d| format!("payload digest {d}"))
                    })
                    .unwrap_or_else(|| {
                        "no record (neither WARC-Refers-To nor WARC-Payload-Digest)".into()
                    });
                return Err(invalid(
                    path,
                    r.describe(),
                    format!("revisit of {what}, which is not in this file"),
                ));
            };
            if records[i].kind() != "revisit" {
                return Ok(i);
            }
            if i == cur.index {
                break;
            }
            cur = &records[i];
        }
        Err(invalid(
            path,
            r.describe(),
            "revisit chain does not end in a response",
        ))
    };
    // Request records, for methods and request headers.
    let mut requests: HashMap<String, usize> = HashMap::new();
    let mut last_request_for: HashMap<String, usize> = HashMap::new();
    for r in &records {
        if r.kind() == "request" {
            if let Some(id) = r.record_id() {
                requests.insert(id.to_string(), r.index);
            }
            if let Some(u) = r.target_uri() {
                last_request_for.insert(u.to_string(), r.index);
            }
        }
    }
    let mut recs = Vec::new();
    let mut revisits = 0;
    for r in &records {
        let kind = r.kind();
        let Some(url) = r.target_uri().filter(|u| is_http(u)) else {
            continue;
        };
        let mut rec = match kind.as_str() {
            "response" => rec_from_http(r.describe(), url, &http_of(r)?, &mut warnings),
            "revisit" => {
                let o = &records[original(r)?];
                if !is_response(o) {
                    return Err(invalid(
                        path,
                        r.describe(),
                        format!("refers to {}, which is not an http response", o.describe()),
                    ));
                }
                let orig = http_of(o)?;
                let own = (!r.block.is_empty())
                    .then(|| warc::parse_http(&r.block))
                    .transpose()
                    .map_err(|e| invalid(path, r.describe(), e))?;
                let profile = r.field("WARC-Profile").unwrap_or("").to_ascii_lowercase();
                let msg = match own {
                    Some(m) if !profile.contains("server-not-modified") && m.status != 304 => {
                        HttpMessage {
                            status: m.status,
                            method: String::new(),
                            headers: m.headers,
                            body: orig.body.clone(),
                            truncated: orig.truncated,
                        }
                    }
                    _ => orig,
                };
                revisits += 1;
                rec_from_http(r.describe(), url, &msg, &mut warnings)
            }
            "resource" => {
                let ct = r
                    .field("Content-Type")
                    .unwrap_or("application/octet-stream")
                    .to_string();
                let msg = HttpMessage {
                    status: 200,
                    method: String::new(),
                    headers: vec![("Content-Type".into(), ct)],
                    body: r.block.clone(),
                    truncated: false,
                };
                rec_from_http(r.describe(), url, &msg, &mut warnings)
            }
            _ => continue,
        };
        let req = r
            .field("WARC-Concurrent-To")
            .and_then(|id| {
                requests
                    .get(warc::strip_brackets(id))
                    .or_else(|| requests.get(id.trim()))
            })
            .or_else(|| last_request_for.get(url))
            .map(|&i| &records[i]);
        if let Some(q) = req {
            if let Ok(m) = warc::parse_http(&q.block) {
                if !m.method.is_empty() {
                    rec.method = m.method.to_ascii_uppercase();
                }
                rec.request_headers = m.headers;
            }
        }
        recs.push(rec);
    }
    let mut sources = Default::default();
    let mut a = Archive::new(&format!(
        "{} (WARC, {} records, {revisits} revisits)",
        path.file_name().map_or_else(
            || path.display().to_string(),
            |f| f.to_string_lossy().into_owned()
        ),
        records.len()
    ));
    for g in split_pages(recs, false) {
        let first = g[0].label.clone();
        let idx = a.pages.len();
        match build_page(&mut a, idx, None, g, &mut warnings, &mut sources) {
            Some(p) => a.pages.push(p),
            None => warnings.push(format!("{first}: responses before any document; skipped")),
        }
    }
    finish(&mut a, path)?;
    Ok(Imported {
        archive: a,
        warnings,
        sources,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_references() {
        let b = "http://a.example/dir/page.html?q=1";
        assert_eq!(
            resolve(b, "x.css").as_deref(),
            Some("http://a.example/dir/x.css")
        );
        assert_eq!(
            resolve(b, "../img/a.gif").as_deref(),
            Some("http://a.example/img/a.gif")
        );
        assert_eq!(resolve(b, "/r").as_deref(), Some("http://a.example/r"));
        assert_eq!(
            resolve(b, "//cdn.example/x").as_deref(),
            Some("http://cdn.example/x")
        );
        assert_eq!(
            resolve(b, "?z").as_deref(),
            Some("http://a.example/dir/page.html?z")
        );
        assert_eq!(
            resolve(b, "https://b.example/y#f").as_deref(),
            Some("https://b.example/y")
        );
        assert_eq!(
            resolve(b, "./a/./b/../c").as_deref(),
            Some("http://a.example/dir/a/c")
        );
        assert_eq!(resolve(b, "data:image/gif;base64,AAAA"), None);
        assert_eq!(resolve(b, "javascript:void(0)"), None);
        assert_eq!(resolve(b, "#top"), None);
        assert_eq!(normalize("HTTP://A.example:80"), "http://a.example/");
        assert_eq!(
            normalize("https://a.example:443/x?y#z"),
            "https://a.example/x?y"
        );
    }

    #[test]
    fn finds_html_references_at_the_end_of_their_tags() {
        let html = br#"<!doctype html><html><head><base href="/sub/">
<link rel="stylesheet" href="a.css"><!-- <img src="no.gif"> -->
<script>var u = '/late.gif'; // 'no2.gif'
</script><style>body{background:url(bg.png)}</style></head>
<body style="background-image:url('/s.gif')"><img src="i.gif?x=1&amp;y=2" srcset="i2.gif 2x, i3.gif 3x">
<textarea><img src="no3.gif"></textarea></body></html>"#;
        let mut out = Vec::new();
        scan_html(html, "http://h/p.html", &mut out);
        let text = std::str::from_utf8(html).unwrap();
        let get = |u: &str| out.iter().find(|r| r.url == u).cloned();
        let css = get("http://h/sub/a.css").unwrap();
        assert!(text[..css.offset.unwrap()].ends_with("href=\"a.css\">"));
        assert_eq!(get("http://h/late.gif").unwrap().offset, None);
        let bg = get("http://h/sub/bg.png").unwrap();
        assert!(text[..bg.offset.unwrap()].ends_with("url(bg.png)"));
        assert!(get("http://h/s.gif").is_some());
        assert!(get("http://h/sub/i.gif?x=1&y=2").is_some());
        assert!(get("http://h/sub/i3.gif").is_some());
        for no in ["no.gif", "no2.gif", "no3.gif"] {
            assert!(out.iter().all(|r| !r.url.ends_with(no)), "{no} in {out:?}");
        }
    }

    #[test]
    fn finds_css_references() {
        let css = br#"@import "x.css"; @import url(y.css);
/* url(no.gif) */ .a{background:url( "../i.gif" )} .b{content:"url(no2.gif)"}"#;
        let mut out = Vec::new();
        scan_css(css, "http://h/c/s.css", 0, &mut out);
        let urls: Vec<&str> = out.iter().map(|r| r.url.as_str()).collect();
        assert_eq!(
            urls,
            ["http://h/c/x.css", "http://h/c/y.css", "http://h/i.gif"]
        );
        let text = std::str::from_utf8(css).unwrap();
        assert!(text[..out[2].offset.unwrap()].ends_with("\"../i.gif\" )"));
    }

    #[test]
    fn re_encodes_decoded_bodies_and_keeps_encoded_ones() {
        let mut w = Vec::new();
        let mut r = Rec {
            label: "x".into(),
            response_headers: vec![("Content-Encoding".into(), "gzip".into())],
            ..Default::default()
        };
        settle_body(
            &mut r,
            Some(b"hello hello hello".to_vec()),
            false,
            None,
            None,
            &mut w,
        );
        assert_eq!(r.encoding.as_deref(), Some("gzip"));
        assert_eq!(r.decoded.as_deref(), Some(&b"hello hello hello"[..]));
        let enc = r.stored.clone().unwrap();
        let mut r2 = Rec {
            label: "y".into(),
            response_headers: vec![("content-encoding".into(), "gzip".into())],
            ..Default::default()
        };
        settle_body(&mut r2, Some(enc.to_vec()), false, None, None, &mut w);
        assert_eq!(r2.stored.as_deref(), Some(&enc[..]), "kept as given");
        assert_eq!(r2.decoded.as_deref(), Some(&b"hello hello hello"[..]));
        let mut r3 = Rec {
            label: "z".into(),
            response_headers: vec![("content-encoding".into(), "br".into())],
            ..Default::default()
        };
        settle_body(&mut r3, None, false, Some(700), Some(2000), &mut w);
        assert_eq!((r3.size, r3.encoding.clone()), (700, None));
        assert!(r3.response_headers.is_empty());
        assert!(w.is_empty(), "{w:?}");
    }
}
