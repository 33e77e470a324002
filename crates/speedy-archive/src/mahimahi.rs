//! Mahimahi's record of one exchange: the proto2 message `RequestResponse` that
//! RecordShell writes, one per file of a recording folder (docs/archive.md, "Mahimahi and
//! Web Page Replay"). Field numbers are the format's:
//!
//! ```text
//! RequestResponse { 1 ip: string, 2 port: uint32, 3 scheme: enum (HTTP 1, HTTPS 2),
//!                   4 request: HTTPMessage, 5 response: HTTPMessage }
//! HTTPMessage     { 1 first_line: bytes, 2 header: repeated HTTPHeader, 3 body: bytes }
//! HTTPHeader      { 1 key: bytes, 2 value: bytes }
//! ```
//!
//! Unknown fields are skipped, whatever their wire type; a known field with the wrong
//! wire type is an error. An embedded message given twice is merged (proto2's rule:
//! later scalars win, repeated headers add up). Errors name the field
//! (`response.header[3].value`) and the byte offset in the file.

use crate::protobuf::{wire_type_name, Field, Reader, Value, WireError, Writer, LEN, VARINT};

/// `RequestResponse.scheme`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// `HTTP = 1`.
    Http,
    /// `HTTPS = 2`.
    Https,
}

/// `HTTPMessage`: a request or a response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    /// The request line or status line, without CRLF.
    pub first_line: Option<Vec<u8>>,
    /// `(key, value)` of each header, in wire order.
    pub headers: Vec<(Vec<u8>, Vec<u8>)>,
    /// The body as it went on the wire (transfer coding included).
    pub body: Option<Vec<u8>>,
}

/// `RequestResponse`: one recorded exchange.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestResponse {
    /// The server's address as recorded (dotted quad).
    pub ip: Option<String>,
    /// The server's port.
    pub port: Option<u32>,
    /// The scheme; `None` when absent or a value the format does not define.
    pub scheme: Option<Scheme>,
    /// The request.
    pub request: Option<Message>,
    /// The response.
    pub response: Option<Message>,
}

/// Why a record could not be read: the field (`response.header[3]`, empty for the record
/// itself) and what is wrong, with the byte offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// The field path, empty for the top level.
    pub entry: String,
    /// What is wrong (`truncated varint at byte 812`).
    pub reason: String,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.entry.is_empty() {
            f.write_str(&self.reason)
        } else {
            write!(f, "{}: {}", self.entry, self.reason)
        }
    }
}

/// The error of reading message `path`; `name` names its fields by number.
fn wire(path: &str, e: WireError, name: impl Fn(u32) -> &'static str) -> DecodeError {
    let entry = match e.field {
        Some(n) => match name(n) {
            "" => join(path, &format!("field {n}")),
            f => join(path, f),
        },
        None => path.to_string(),
    };
    DecodeError {
        entry,
        reason: e.to_string(),
    }
}

fn top_field(n: u32) -> &'static str {
    ["", "ip", "port", "scheme", "request", "response"]
        .get(n as usize)
        .copied()
        .unwrap_or("")
}

fn header_field(n: u32) -> &'static str {
    ["", "key", "value"].get(n as usize).copied().unwrap_or("")
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// Checks that field `f` (named `entry`) has wire type `want`.
fn expect(f: &Field<'_>, entry: &str, want: u8) -> Result<(), DecodeError> {
    let got = f.value.wire_type();
    if got == want {
        return Ok(());
    }
    Err(DecodeError {
        entry: entry.to_string(),
        reason: format!(
            "field {} has wire type {} ({}), expected {} ({}) at byte {}",
            f.number,
            got,
            wire_type_name(got),
            want,
            wire_type_name(want),
            f.offset
        ),
    })
}

fn bytes_of<'a>(f: &Field<'a>, entry: &str) -> Result<&'a [u8], DecodeError> {
    expect(f, entry, LEN)?;
    match f.value {
        Value::Len(b) => Ok(b),
        _ => unreachable!("checked above"),
    }
}

fn varint_of(f: &Field<'_>, entry: &str) -> Result<u64, DecodeError> {
    expect(f, entry, VARINT)?;
    match f.value {
        Value::Varint(v) => Ok(v),
        _ => unreachable!("checked above"),
    }
}

/// Reads a `RequestResponse` from the bytes of one recording file.
pub fn decode(buf: &[u8]) -> Result<RequestResponse, DecodeError> {
    let mut r = Reader::new(buf, 0);
    let mut rr = RequestResponse::default();
    while let Some(f) = r.next_field().map_err(|e| wire("", e, top_field))? {
        match f.number {
            1 => rr.ip = Some(String::from_utf8_lossy(bytes_of(&f, "ip")?).into_owned()),
            2 => {
                let v = varint_of(&f, "port")?;
                let port = u32::try_from(v).map_err(|_| DecodeError {
                    entry: "port".into(),
                    reason: format!("{v} does not fit a uint32 at byte {}", f.value_offset),
                })?;
                rr.port = Some(port);
            }
            3 => {
                rr.scheme = match varint_of(&f, "scheme")? {
                    1 => Some(Scheme::Http),
                    2 => Some(Scheme::Https),
                    _ => None,
                }
            }
            4 => merge_message(
                &f,
                "request",
                rr.request.get_or_insert_with(Default::default),
            )?,
            5 => merge_message(
                &f,
                "response",
                rr.response.get_or_insert_with(Default::default),
            )?,
            _ => {}
        }
    }
    Ok(rr)
}

/// Whether `buf` reads as Mahimahi's `BulkMessage` (field 2: repeated `HTTPMessage`, the
/// bulk-response extension) rather than a `RequestResponse` (whose field 2 is a varint).
pub fn looks_like_bulk_message(buf: &[u8]) -> bool {
    let mut r = Reader::new(buf, 0);
    let mut bulk = false;
    while let Ok(Some(f)) = r.next_field() {
        match (f.number, f.value) {
            (2, Value::Len(_)) => bulk = true,
            (4 | 5, _) => return false,
            _ => {}
        }
    }
    bulk
}

/// Merges the `HTTPMessage` in field `f` (named `path`) into `m`.
fn merge_message(f: &Field<'_>, path: &str, m: &mut Message) -> Result<(), DecodeError> {
    bytes_of(f, path)?;
    let mut r = Reader::nested(f).expect("a length-delimited field");
    let name = |n: u32| match n {
        1 => "first_line",
        3 => "body",
        _ => "",
    };
    let err = |e: WireError, m: &Message| match e.field {
        Some(2) => wire(
            &join(path, &format!("header[{}]", m.headers.len())),
            WireError { field: None, ..e },
            name,
        ),
        _ => wire(path, e, name),
    };
    while let Some(g) = r.next_field().map_err(|e| err(e, m))? {
        match g.number {
            1 => m.first_line = Some(bytes_of(&g, &join(path, "first_line"))?.to_vec()),
            2 => {
                let entry = join(path, &format!("header[{}]", m.headers.len()));
                bytes_of(&g, &entry)?;
                m.headers.push(header(&g, &entry)?);
            }
            3 => m.body = Some(bytes_of(&g, &join(path, "body"))?.to_vec()),
            _ => {}
        }
    }
    Ok(())
}

/// The `HTTPHeader` in field `f` (named `entry`).
fn header(f: &Field<'_>, entry: &str) -> Result<(Vec<u8>, Vec<u8>), DecodeError> {
    let mut r = Reader::nested(f).expect("a length-delimited field");
    let (mut key, mut value) = (Vec::new(), Vec::new());
    while let Some(g) = r.next_field().map_err(|e| wire(entry, e, header_field))? {
        match g.number {
            1 => key = bytes_of(&g, &join(entry, "key"))?.to_vec(),
            2 => value = bytes_of(&g, &join(entry, "value"))?.to_vec(),
            _ => {}
        }
    }
    Ok((key, value))
}

fn encode_message(m: &Message) -> Writer {
    let mut w = Writer::new();
    if let Some(l) = &m.first_line {
        w.bytes(1, l);
    }
    for (k, v) in &m.headers {
        let mut h = Writer::new();
        h.bytes(1, k).bytes(2, v);
        w.message(2, &h);
    }
    if let Some(b) = &m.body {
        w.bytes(3, b);
    }
    w
}

impl RequestResponse {
    /// The record's bytes, fields in number order.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        if let Some(ip) = &self.ip {
            w.bytes(1, ip.as_bytes());
        }
        if let Some(p) = self.port {
            w.varint(2, u64::from(p));
        }
        if let Some(s) = self.scheme {
            w.varint(3, if s == Scheme::Https { 2 } else { 1 });
        }
        if let Some(m) = &self.request {
            w.message(4, &encode_message(m));
        }
        if let Some(m) = &self.response {
            w.message(5, &encode_message(m));
        }
        w.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RequestResponse {
        RequestResponse {
            ip: Some("10.1.2.3".into()),
            port: Some(443),
            scheme: Some(Scheme::Https),
            request: Some(Message {
                first_line: Some(b"GET / HTTP/1.1".to_vec()),
                headers: vec![(b"Host".to_vec(), b"a.test".to_vec())],
                body: Some(Vec::new()),
            }),
            response: Some(Message {
                first_line: Some(b"HTTP/1.1 200 OK".to_vec()),
                headers: vec![
                    (b"Content-Type".to_vec(), b"text/html".to_vec()),
                    (b"X".to_vec(), b"1".to_vec()),
                ],
                body: Some(b"<html>".to_vec()),
            }),
        }
    }

    #[test]
    fn encodes_and_decodes() {
        let rr = sample();
        assert_eq!(decode(&rr.encode()).unwrap(), rr);
    }

    #[test]
    fn errors_name_the_field_and_byte() {
        let buf = sample().encode();
        // Cut inside the response's second header.
        let cut = buf.len() - 12;
        let e = decode(&buf[..cut]).unwrap_err();
        assert_eq!(e.entry, "response", "its length runs past the end: {e}");
        assert!(e.reason.starts_with("truncated field"), "{e}");
        // A wrong wire type for a known field.
        let e = decode(&[(2 << 3) | 2, 0]).unwrap_err();
        assert_eq!(e.entry, "port");
        assert!(e.reason.contains("expected 0 (varint)"), "{e}");
        // Inside a header.
        let mut h = Writer::new();
        h.bytes(1, b"k");
        let mut hb = h.into_bytes();
        hb.extend_from_slice(&[(2 << 3) | 2, 9, b'v']);
        let mut m = Writer::new();
        m.bytes(1, b"HTTP/1.1 200 OK").bytes(2, b"").bytes(2, &hb);
        let mut top = Writer::new();
        top.message(5, &m);
        let e = decode(top.as_bytes()).unwrap_err();
        assert_eq!(e.entry, "response.header[1].value");
        assert!(e.reason.contains("truncated field"), "{e}");
    }
}
