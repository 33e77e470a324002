//! Importing HAR 1.1/1.2 files, WARC files, Web Page Replay archives (`.wprgo`) and
//! Mahimahi recordings (folders of `RequestResponse` files) into archives.
//!
//! Every format is first reduced to records (URL, method, status, headers, body when
//! recorded, timings when recorded, initiator when recorded, the server's address or
//! protocol when recorded), split into pages, and each page is turned into archive
//! objects by the same rules: which headers are kept, how a body is stored, and how every
//! object's parent and discovery are found — from speedy's own `_speedy` extension, from
//! redirects, from `_initiator`, from references in the recorded bodies, and, when a HAR
//! has neither bodies nor initiators, from the recorded timings. HAR pages come from the
//! HAR or from time order, WARC pages from file order; Mahimahi and WPR recordings have no
//! order that means anything, so their pages are grouped by what references what
//! ([`recording`]). `docs/archive.md` states the rules; this module implements them, one
//! topic per file: [`body`] (headers and encodings), [`urls`], [`scan`] (references in
//! bodies), [`pages`] (page splitting and discovery inference), [`recording`] (pages of
//! recordings), and the four readers ([`from_har`], [`from_warc`], [`from_wpr`],
//! [`from_mahimahi`]). [`import_file`] tells the format by content.

mod body;
mod from_har;
mod from_mahimahi;
mod from_record;
mod from_warc;
mod from_wpr;
mod pages;
mod recording;
mod scan;
mod urls;

pub use from_har::import_har;
pub use from_mahimahi::{import_mahimahi, import_mahimahi_files};
pub use from_record::{import_visits, BrowserRequest, PageVisits, Visit};
pub use from_warc::import_warc;
pub use from_wpr::import_wpr;

use crate::har::{self, HarInitiator};
use crate::model::{Archive, ObjectType, Recorded};
use crate::{warc, wpr};
use bytes::Bytes;
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
    /// A Web Page Replay archive: gzip-compressed JSON with `Requests` (or the JSON).
    Wpr,
    /// A Mahimahi recording: a directory of `RequestResponse` files.
    Mahimahi,
}

/// Tells the format of a file's bytes: WARC (plain or gzip); WPR (other gzip data that
/// holds JSON, or a JSON object with `Requests` and no `log`); anything else is read as
/// HAR. (A directory is a Mahimahi recording; [`import_file`] tells that.)
pub fn detect(data: &[u8]) -> Format {
    if warc::looks_like_warc(data) {
        Format::Warc
    } else if (wpr::is_gzip(data) && wpr::gzip_holds_json(data))
        || (looks_like_json(data) && wpr::json_is_wpr(data))
    {
        Format::Wpr
    } else {
        Format::Har
    }
}

/// Imports a HAR, WARC or WPR file or a Mahimahi folder (the format is told by content).
pub fn import_file(path: &Path) -> Result<Imported, ImportError> {
    if path.is_dir() {
        return import_mahimahi(path);
    }
    let data = std::fs::read(path).map_err(|err| ImportError::Io {
        path: path.to_path_buf(),
        err,
    })?;
    match detect(&data) {
        Format::Warc => import_warc(path, &data),
        Format::Wpr => import_wpr(path, &data),
        Format::Mahimahi => import_mahimahi(path),
        Format::Har if !looks_like_json(&data) => Err(ImportError::Invalid {
            path: path.to_path_buf(),
            entry: String::new(),
            reason: neither_reason(&data),
        }),
        Format::Har => import_har(path, &data),
    }
}

/// Whether the first byte past a UTF-8 byte-order mark and white space opens a JSON
/// object or array (a HAR is an object; the array gets the HAR reader's own message).
fn looks_like_json(data: &[u8]) -> bool {
    let data = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data);
    matches!(
        data.iter().find(|b| !b.is_ascii_whitespace()),
        Some(b'{') | Some(b'[')
    )
}

/// Says what a file that is none of the formats should have looked like.
fn neither_reason(data: &[u8]) -> String {
    let head: Vec<String> = data.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let what = if data.is_empty() {
        "the file is empty".to_string()
    } else if data.starts_with(&[0x1f, 0x8b]) {
        "it is gzip data holding neither `WARC/` nor JSON".to_string()
    } else {
        format!("it starts with bytes {}", head.join(" "))
    };
    format!(
        "neither a WARC nor a HAR file, nor a WPR archive: expected WARC records (`WARC/1.0`, \
         plain or gzip), HAR JSON (`{{\"log\": ...}}`), WPR JSON (`{{\"Requests\": ...}}`, gzip \
         or plain) or a Mahimahi directory, but {what}"
    )
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
    /// Chrome's `_priority`, when recorded.
    priority: Option<String>,
    speedy: Option<har::SpeedyExt>,
    /// The absolute redirect target of a 3xx.
    redirect: Option<String>,
    /// Where it was recorded (Mahimahi's server address, WPR's negotiated protocol).
    recorded: Option<Recorded>,
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
            priority: None,
            speedy: None,
            redirect: None,
            recorded: None,
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
