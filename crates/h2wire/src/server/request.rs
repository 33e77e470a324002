//! Request heads and trailers: collected from the HPACK decoder's callback into one
//! buffer, and checked against RFC 9113 §8.2 and §8.3 as they come.

use bytes::Bytes;
use std::fmt;

/// A list of fields sharing one buffer: names and values are slices of it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct FieldList {
    buf: Bytes,
    /// Per field: name start, name end (= value start), value end.
    spans: Vec<[u32; 3]>,
}

impl FieldList {
    /// The fields in arrival order, as `(name, value)`.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.spans.iter().map(|&[a, b, c]| {
            (
                &self.buf[a as usize..b as usize],
                &self.buf[b as usize..c as usize],
            )
        })
    }

    /// The value of the first field called `name` (lowercase), if any.
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The number of fields.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether there are no fields.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

impl fmt::Debug for FieldList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            }))
            .finish()
    }
}

/// A validated request head (RFC 9113 §8.3.1): the pseudo-header fields and the
/// regular fields, all in one shared buffer.
#[derive(Clone, PartialEq, Eq)]
pub struct RequestHead {
    buf: Bytes,
    method: [u32; 2],
    scheme: Option<[u32; 2]>,
    authority: Option<[u32; 2]>,
    path: Option<[u32; 2]>,
    fields: FieldList,
    content_length: Option<u64>,
    urgency: Option<u8>,
}

impl RequestHead {
    fn span(&self, s: [u32; 2]) -> &[u8] {
        &self.buf[s[0] as usize..s[1] as usize]
    }

    /// `:method`.
    pub fn method(&self) -> &[u8] {
        self.span(self.method)
    }

    /// `:scheme` (absent only for CONNECT).
    pub fn scheme(&self) -> Option<&[u8]> {
        self.scheme.map(|s| self.span(s))
    }

    /// `:authority`, if sent (always for CONNECT).
    pub fn authority(&self) -> Option<&[u8]> {
        self.authority.map(|s| self.span(s))
    }

    /// `:path` (absent only for CONNECT).
    pub fn path(&self) -> Option<&[u8]> {
        self.path.map(|s| self.span(s))
    }

    /// The regular fields (no pseudo-headers), in order.
    pub fn fields(&self) -> &FieldList {
        &self.fields
    }

    /// The `content-length` the request announced, if any; the body is held to it.
    pub fn content_length(&self) -> Option<u64> {
        self.content_length
    }

    /// The urgency in the `priority` field (RFC 9218 §5), if one was valid.
    pub fn priority_urgency(&self) -> Option<u8> {
        self.urgency
    }
}

impl fmt::Debug for RequestHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = |b: Option<&[u8]>| b.map(|b| String::from_utf8_lossy(b).into_owned());
        f.debug_struct("RequestHead")
            .field("method", &String::from_utf8_lossy(self.method()))
            .field("scheme", &s(self.scheme()))
            .field("authority", &s(self.authority()))
            .field("path", &s(self.path()))
            .field("fields", &self.fields)
            .finish()
    }
}

/// Collects one field section, recording the first rule it breaks.
#[derive(Default, Debug)]
pub(super) struct Collector {
    buf: Vec<u8>,
    spans: Vec<[u32; 3]>,
    method: Option<[u32; 2]>,
    scheme: Option<[u32; 2]>,
    authority: Option<[u32; 2]>,
    path: Option<[u32; 2]>,
    regular_seen: bool,
    trailers: bool,
    content_length: Option<u64>,
    urgency: Option<u8>,
    /// The first violation.
    pub(super) error: Option<&'static str>,
}

/// Whether `b` may appear in a field name (a lowercase token character, §8.2.1 and
/// RFC 9110 §5.6.2).
fn name_byte(b: u8) -> bool {
    matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'!' | b'#' | b'$' | b'%' | b'&' | b'\''
        | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~')
}

/// Fields that only mean something to one HTTP/1.1 connection (§8.2.2).
fn connection_specific(name: &[u8]) -> bool {
    matches!(
        name,
        b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
    )
}

/// Whether a response field name is acceptable to send: lowercase token, not
/// connection-specific, not a pseudo-header.
pub(super) fn valid_response_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| name_byte(b)) && !connection_specific(name)
}

/// Whether a promised request's field name is acceptable: a request pseudo-header or a
/// valid regular name.
pub(super) fn valid_push_name(name: &[u8]) -> bool {
    matches!(name, b":method" | b":scheme" | b":authority" | b":path") || valid_response_name(name)
}

/// Whether a value is acceptable (§8.2.1): no NUL, CR or LF, no leading or trailing
/// space or tab.
fn valid_value(v: &[u8]) -> bool {
    let edge = |b: Option<&u8>| matches!(b, Some(b' ' | b'\t'));
    !edge(v.first()) && !edge(v.last()) && !v.iter().any(|&b| matches!(b, 0 | b'\r' | b'\n'))
}

impl Collector {
    /// Starts over for a request head (`trailers` false) or a trailer section.
    pub(super) fn reset(&mut self, trailers: bool) {
        self.buf.clear();
        self.spans.clear();
        self.method = None;
        self.scheme = None;
        self.authority = None;
        self.path = None;
        self.regular_seen = false;
        self.trailers = trailers;
        self.content_length = None;
        self.urgency = None;
        self.error = None;
    }

    fn fail(&mut self, why: &'static str) {
        if self.error.is_none() {
            self.error = Some(why);
        }
    }

    fn push(&mut self, b: &[u8]) -> u32 {
        self.buf.extend_from_slice(b);
        self.buf.len() as u32
    }

    /// One decoded field.
    pub(super) fn field(&mut self, name: &[u8], value: &[u8]) {
        if self.error.is_some() {
            return;
        }
        if !valid_value(value) {
            return self.fail("invalid character or whitespace in a field value");
        }
        if let Some(pseudo) = name.strip_prefix(b":") {
            if self.trailers {
                return self.fail("pseudo-header field in trailers");
            }
            if self.regular_seen {
                return self.fail("pseudo-header field after a regular field");
            }
            let start = self.buf.len() as u32;
            let slot = match pseudo {
                b"method" => &mut self.method,
                b"scheme" => &mut self.scheme,
                b"authority" => &mut self.authority,
                b"path" => &mut self.path,
                _ => return self.fail("unknown or response pseudo-header field"),
            };
            if slot.is_some() {
                return self.fail("duplicate pseudo-header field");
            }
            self.buf.extend_from_slice(value);
            let end = self.buf.len() as u32;
            *slot = Some([start, end]);
            return;
        }
        self.regular_seen = true;
        if name.is_empty() || !name.iter().all(|&b| name_byte(b)) {
            return self.fail("field name empty, uppercase or not a token");
        }
        if connection_specific(name) {
            return self.fail("connection-specific field");
        }
        if name == b"te" && value != b"trailers" {
            return self.fail("te field other than \"trailers\"");
        }
        if name == b"content-length" && !self.trailers {
            let n = std::str::from_utf8(value)
                .ok()
                .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|s| s.parse::<u64>().ok());
            match (n, self.content_length) {
                (None, _) => return self.fail("invalid content-length"),
                (Some(a), Some(b)) if a != b => return self.fail("conflicting content-length"),
                (Some(a), _) => self.content_length = Some(a),
            }
        }
        if name == b"priority" && !self.trailers {
            if let Some(u) = super::parse_priority_field(value) {
                self.urgency = Some(u);
            }
        }
        let a = self.buf.len() as u32;
        let b = self.push(name);
        let c = self.push(value);
        self.spans.push([a, b, c]);
    }

    /// The request head, or the first violation (§8.3.1).
    pub(super) fn finish_request(&mut self) -> Result<RequestHead, &'static str> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let Some(method) = self.method else {
            return Err("missing :method");
        };
        let is_connect = &self.buf[method[0] as usize..method[1] as usize] == b"CONNECT";
        if is_connect {
            if self.authority.is_none() || self.scheme.is_some() || self.path.is_some() {
                return Err("CONNECT needs :authority and no :scheme or :path");
            }
        } else {
            if self.scheme.is_none() {
                return Err("missing :scheme");
            }
            match self.path {
                None => return Err("missing :path"),
                Some([a, b]) if a == b => return Err("empty :path"),
                Some(_) => {}
            }
        }
        let buf = Bytes::copy_from_slice(&self.buf);
        Ok(RequestHead {
            buf: buf.clone(),
            method,
            scheme: self.scheme,
            authority: self.authority,
            path: self.path,
            fields: FieldList {
                buf,
                spans: std::mem::take(&mut self.spans),
            },
            content_length: self.content_length,
            urgency: self.urgency,
        })
    }

    /// The trailer fields, or the first violation.
    pub(super) fn finish_trailers(&mut self) -> Result<FieldList, &'static str> {
        if let Some(e) = self.error {
            return Err(e);
        }
        Ok(FieldList {
            buf: Bytes::copy_from_slice(&self.buf),
            spans: std::mem::take(&mut self.spans),
        })
    }
}
