//! Reading WARC files (ISO 28500, WARC/0.17 to 1.1), gzip-compressed (one member per
//! record, or the whole file) or not, and the HTTP messages their records carry.

use bytes::Bytes;
use std::io::Read;

/// One WARC record.
#[derive(Clone, Debug)]
pub struct WarcRecord {
    /// 0-based position in the file.
    pub index: usize,
    /// Byte offset of the record in the (decompressed) file.
    pub offset: usize,
    /// `WARC/1.0`, `WARC/1.1`, …
    pub version: String,
    /// Named fields in file order (names as written).
    pub fields: Vec<(String, String)>,
    /// The record block (`Content-Length` bytes).
    pub block: Bytes,
}

impl WarcRecord {
    /// The first field named `name` (case-insensitive).
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// `WARC-Type`, lower-case.
    pub fn kind(&self) -> String {
        self.field("WARC-Type").unwrap_or("").to_ascii_lowercase()
    }

    /// `WARC-Target-URI` without the angle brackets some writers put around it.
    pub fn target_uri(&self) -> Option<&str> {
        self.field("WARC-Target-URI").map(strip_brackets)
    }

    /// `WARC-Record-ID`.
    pub fn record_id(&self) -> Option<&str> {
        self.field("WARC-Record-ID").map(str::trim)
    }

    /// A name for messages: `record 7 (response http://a/x)`.
    pub fn describe(&self) -> String {
        match self.target_uri() {
            Some(u) => format!("record {} ({} {u})", self.index, self.kind()),
            None => format!("record {} ({})", self.index, self.kind()),
        }
    }
}

/// Strips `<…>` around a URI or record id.
pub fn strip_brackets(s: &str) -> &str {
    let s = s.trim();
    s.strip_prefix('<')
        .and_then(|x| x.strip_suffix('>'))
        .unwrap_or(s)
}

/// Where in the WARC a problem is and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WarcError {
    /// The record (`record 3 at byte 1200`), or empty for the whole file.
    pub entry: String,
    /// What is wrong.
    pub reason: String,
}

impl std::fmt::Display for WarcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.entry.is_empty() {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "{}: {}", self.entry, self.reason)
        }
    }
}

fn err(entry: String, reason: impl Into<String>) -> WarcError {
    WarcError {
        entry,
        reason: reason.into(),
    }
}

/// True if `data` starts like a WARC file (plain or gzip).
pub fn looks_like_warc(data: &[u8]) -> bool {
    if data.starts_with(&[0x1f, 0x8b]) {
        let mut head = [0u8; 5];
        let mut d = flate2::read::GzDecoder::new(data);
        return d.read_exact(&mut head).is_ok() && &head == b"WARC/";
    }
    data.starts_with(b"WARC/")
}

/// Decompresses a gzip WARC (every member, within [`crate::inflate::limit`]), or returns
/// plain data as it is.
pub fn decompress(data: &[u8]) -> Result<Vec<u8>, WarcError> {
    if !data.starts_with(&[0x1f, 0x8b]) {
        return Ok(data.to_vec());
    }
    crate::inflate::gunzip(data).map_err(|e| err("the compressed file".to_string(), e))
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if from >= hay.len() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Parses every record of a (decompressed) WARC.
pub fn parse(data: &[u8]) -> Result<Vec<WarcRecord>, WarcError> {
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        // Records are separated by CRLF CRLF; tolerate any run of blank lines.
        while pos < data.len() && (data[pos] == b'\r' || data[pos] == b'\n') {
            pos += 1;
        }
        if pos >= data.len() {
            break;
        }
        let index = out.len();
        let here = || format!("record {index} at byte {pos}");
        if !data[pos..].starts_with(b"WARC/") {
            return Err(err(
                here(),
                format!(
                    "expected a \"WARC/\" version line, found {:?}",
                    String::from_utf8_lossy(&data[pos..(pos + 20).min(data.len())])
                ),
            ));
        }
        let head_end = find(data, b"\r\n\r\n", pos)
            .map(|i| (i, 4))
            .or_else(|| find(data, b"\n\n", pos).map(|i| (i, 2)))
            .ok_or_else(|| err(here(), "the header block does not end (no blank line)"))?;
        let head = std::str::from_utf8(&data[pos..head_end.0])
            .map_err(|_| err(here(), "the header block is not UTF-8"))?;
        let mut lines = head.split('\n').map(|l| l.trim_end_matches('\r'));
        let version = lines.next().unwrap_or("").trim().to_string();
        let mut fields: Vec<(String, String)> = Vec::new();
        for line in lines {
            if line.starts_with([' ', '\t']) {
                // A continuation line (WARC allows folded fields).
                if let Some(last) = fields.last_mut() {
                    last.1.push(' ');
                    last.1.push_str(line.trim());
                    continue;
                }
            }
            let (n, v) = line
                .split_once(':')
                .ok_or_else(|| err(here(), format!("bad header line {line:?}")))?;
            fields.push((n.trim().to_string(), v.trim().to_string()));
        }
        let len_field = fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("Content-Length"))
            .map(|(_, v)| v.clone())
            .ok_or_else(|| err(here(), "no Content-Length"))?;
        let len: usize = len_field.parse().map_err(|_| {
            err(
                here(),
                format!("Content-Length {len_field:?} is not a number"),
            )
        })?;
        let start = head_end.0 + head_end.1;
        if start + len > data.len() {
            return Err(err(
                here(),
                format!(
                    "Content-Length {len} runs past the end of the file ({} bytes left)",
                    data.len() - start
                ),
            ));
        }
        out.push(WarcRecord {
            index,
            offset: pos,
            version,
            fields,
            block: Bytes::copy_from_slice(&data[start..start + len]),
        });
        pos = start + len;
    }
    Ok(out)
}

/// An HTTP response (or request) as a WARC record block holds it.
#[derive(Clone, Debug, Default)]
pub struct HttpMessage {
    /// Status code (responses) — 0 for requests.
    pub status: u16,
    /// Method (requests) — empty for responses.
    pub method: String,
    /// Request target as written (`/a?b`, or an absolute URL) — empty for responses.
    pub target: String,
    /// Headers, names as written.
    pub headers: Vec<(String, String)>,
    /// The body after undoing `Transfer-Encoding: chunked` (content encoding kept).
    pub body: Bytes,
    /// True if the block ended before the body did.
    pub truncated: bool,
}

impl HttpMessage {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the first line of an HTTP/1.x message says: a response's status, or a request's
/// method and target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FirstLine {
    /// `HTTP/1.1 200 OK`.
    Status(u16),
    /// `GET /a HTTP/1.1`: the method and the target.
    Request(String, String),
}

/// Reads a status line or a request line.
pub fn parse_first_line(first: &str) -> Result<FirstLine, String> {
    let words: Vec<&str> = first.split_whitespace().take(4).collect();
    let shown: String = first.chars().take(80).collect();
    let first = if shown.len() < first.len() {
        format!("{shown}…")
    } else {
        shown
    };
    if first.starts_with("HTTP/") {
        let code = words.get(1).copied().unwrap_or("");
        return code
            .parse()
            .ok()
            .filter(|c| (100..=999).contains(c))
            .map(FirstLine::Status)
            .ok_or_else(|| format!("bad HTTP status line {first:?}"));
    }
    if words.len() == 3 && words[2].starts_with("HTTP/") {
        return Ok(FirstLine::Request(
            words[0].to_string(),
            words[1].to_string(),
        ));
    }
    Err(format!("not an HTTP message (first line {first:?})"))
}

/// The body of a message with `headers` from the bytes after its head: chunked transfer
/// coding undone; and whether it is cut short (no last chunk, or fewer bytes than
/// `Content-Length`).
pub fn message_body(headers: &[(String, String)], raw: &[u8]) -> (Bytes, bool) {
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let chunked =
        header("Transfer-Encoding").is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
    if chunked {
        let (body, complete) = dechunk(raw);
        (Bytes::from(body), !complete)
    } else {
        let declared = header("Content-Length").and_then(|l| l.trim().parse::<usize>().ok());
        (
            Bytes::copy_from_slice(raw),
            declared.is_some_and(|l| raw.len() < l),
        )
    }
}

/// Parses an HTTP/1.x message head and body from a record block.
pub fn parse_http(block: &[u8]) -> Result<HttpMessage, String> {
    let (head_end, sep) = find(block, b"\r\n\r\n", 0)
        .map(|i| (i, 4))
        .or_else(|| find(block, b"\n\n", 0).map(|i| (i, 2)))
        .unwrap_or((block.len(), 0));
    let head = String::from_utf8_lossy(&block[..head_end]);
    let mut lines = head.split('\n').map(|l| l.trim_end_matches('\r'));
    let first = lines.next().unwrap_or("");
    let mut msg = HttpMessage::default();
    match parse_first_line(first)? {
        FirstLine::Status(s) => msg.status = s,
        FirstLine::Request(m, t) => (msg.method, msg.target) = (m, t),
    }
    for line in lines {
        if line.is_empty() {
            continue;
        }
        if let Some((n, v)) = line.split_once(':') {
            msg.headers
                .push((n.trim().to_string(), v.trim().to_string()));
        }
    }
    let raw = &block[(head_end + sep).min(block.len())..];
    (msg.body, msg.truncated) = message_body(&msg.headers, raw);
    Ok(msg)
}

/// Undoes chunked transfer coding; returns the body and whether the last chunk was seen.
fn dechunk(mut raw: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::with_capacity(raw.len());
    loop {
        let Some(eol) = find(raw, b"\n", 0) else {
            return (out, false);
        };
        let line = String::from_utf8_lossy(&raw[..eol]);
        let size_hex = line
            .trim()
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        let Ok(size) = usize::from_str_radix(&size_hex, 16) else {
            return (out, false);
        };
        raw = &raw[eol + 1..];
        if size == 0 {
            return (out, true);
        }
        if raw.len() < size {
            out.extend_from_slice(raw);
            return (out, false);
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[size..];
        if raw.starts_with(b"\r\n") {
            raw = &raw[2..];
        } else if raw.starts_with(b"\n") {
            raw = &raw[1..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: &str, uri: &str, block: &[u8]) -> Vec<u8> {
        let mut v = format!(
            "WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Target-URI: <{uri}>\r\nContent-Length: {}\r\n\r\n",
            block.len()
        )
        .into_bytes();
        v.extend_from_slice(block);
        v.extend_from_slice(b"\r\n\r\n");
        v
    }

    #[test]
    fn parses_records_and_chunked_bodies() {
        let mut f = record("warcinfo", "x", b"software: test\r\n");
        f.extend(record(
            "response",
            "http://a/",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
        ));
        let recs = parse(&f).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[1].target_uri(), Some("http://a/"));
        let m = parse_http(&recs[1].block).unwrap();
        assert_eq!(
            (m.status, &m.body[..], m.truncated),
            (200, &b"abcde"[..], false)
        );
    }

    #[test]
    fn a_short_record_names_itself() {
        let mut f = record("warcinfo", "x", b"a");
        f.extend_from_slice(b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: 99\r\n\r\nshort");
        let e = parse(&f).unwrap_err();
        assert!(e.entry.starts_with("record 1 at byte "), "{e}");
        assert!(e.reason.contains("past the end"), "{e}");
    }
}
