//! Web Page Replay's archive file (`.wprgo`, the Go version): gzip-compressed JSON with
//! `Requests` (host → absolute URL → records of base64 HTTP/1.1 request and response
//! bytes), `Certs` and `NegotiatedProtocol` (docs/archive.md, "Mahimahi and Web Page
//! Replay"). This module reads and writes the file; `import::from_wpr` and
//! `export_replay` turn it into an archive and back.

use crate::har::read::kind_of;
use base64::Engine;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::io::{Read, Write};

/// One recorded exchange of `Requests[host][url][index]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WprRecord {
    /// The `Requests` key it is under (the request's `Host`).
    pub host: String,
    /// The absolute URL key.
    pub url: String,
    /// Its position among the records of the URL.
    pub index: usize,
    /// `SerializedRequest`: the request as HTTP/1.1 bytes.
    pub request: Vec<u8>,
    /// `SerializedResponse`: the response as HTTP/1.1 bytes; empty when the request
    /// failed when recorded.
    pub response: Vec<u8>,
}

impl WprRecord {
    /// `Requests["host"]["url"][i]`: names the record in messages.
    pub fn describe(&self) -> String {
        format!("Requests[{:?}][{:?}][{}]", self.host, self.url, self.index)
    }
}

/// A WPR archive: its records (hosts and URLs in key order, records in array order) and
/// the negotiated protocol per host. `Certs` are not kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WprArchive {
    /// Every record.
    pub records: Vec<WprRecord>,
    /// `NegotiatedProtocol`: host → ALPN id.
    pub negotiated: BTreeMap<String, String>,
    /// How many hosts `Certs` had (they are not kept).
    pub certs: usize,
}

/// Where in the file a problem is (`Requests["a.test"]["http://a.test/"][0]
/// .SerializedResponse`, empty for the whole file) and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WprError {
    /// The JSON path, or empty.
    pub entry: String,
    /// What is wrong.
    pub reason: String,
}

fn err(entry: impl Into<String>, reason: impl Into<String>) -> WprError {
    WprError {
        entry: entry.into(),
        reason: reason.into(),
    }
}

/// Whether `data` is gzip.
pub fn is_gzip(data: &[u8]) -> bool {
    data.starts_with(&[0x1f, 0x8b])
}

/// Whether the first non-blank byte (past a UTF-8 byte-order mark) opens a JSON object.
pub fn opens_object(data: &[u8]) -> bool {
    let data = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data);
    data.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// Whether gzip data decompresses to something that opens a JSON object (read from the
/// first 4 KiB only).
pub fn gzip_holds_json(data: &[u8]) -> bool {
    let mut head = Vec::new();
    let _ = flate2::read::MultiGzDecoder::new(data)
        .take(4096)
        .read_to_end(&mut head);
    opens_object(&head)
}

/// Whether a JSON object has a top-level `Requests` key and no `log` (which a HAR has).
pub fn json_is_wpr(data: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Keys {
        #[serde(rename = "Requests")]
        requests: Option<serde::de::IgnoredAny>,
        log: Option<serde::de::IgnoredAny>,
    }
    let data = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data);
    matches!(
        serde_json::from_slice::<Keys>(data),
        Ok(Keys {
            requests: Some(_),
            log: None
        })
    )
}

/// Reads a WPR archive: gzip-compressed JSON, or the JSON itself.
pub fn read(data: &[u8]) -> Result<WprArchive, WprError> {
    let plain;
    let json: &[u8] = if is_gzip(data) {
        plain = crate::inflate::gunzip(data).map_err(|e| err("", e))?;
        &plain
    } else {
        data
    };
    let json = json.strip_prefix(b"\xef\xbb\xbf").unwrap_or(json);
    let v: Value = serde_json::from_slice(json).map_err(|e| err("", format!("not JSON: {e}")))?;
    let Value::Object(top) = v else {
        return Err(err("", "not a WPR archive: expected a JSON object"));
    };
    let Some(requests) = top.get("Requests") else {
        return Err(err(
            "",
            "not a WPR archive: the JSON object has no `Requests` (host → URL → records)",
        ));
    };
    let mut a = WprArchive {
        records: records(object(requests, "Requests")?)?,
        ..Default::default()
    };
    if let Some(n) = top.get("NegotiatedProtocol").filter(|n| !n.is_null()) {
        for (host, p) in object(n, "NegotiatedProtocol")? {
            let entry = || format!("NegotiatedProtocol[{host:?}]");
            let p = p
                .as_str()
                .ok_or_else(|| err(entry(), format!("expected a string, found {}", kind_of(p))))?;
            a.negotiated.insert(host.clone(), p.to_string());
        }
    }
    if let Some(c) = top.get("Certs").filter(|c| !c.is_null()) {
        a.certs = object(c, "Certs")?.len();
    }
    Ok(a)
}

fn object<'a>(v: &'a Value, entry: &str) -> Result<&'a Map<String, Value>, WprError> {
    v.as_object()
        .ok_or_else(|| err(entry, format!("expected an object, found {}", kind_of(v))))
}

/// The records of `Requests`.
fn records(requests: &Map<String, Value>) -> Result<Vec<WprRecord>, WprError> {
    let mut out = Vec::new();
    for (host, urls) in requests {
        let urls = object(urls, &format!("Requests[{host:?}]"))?;
        for (url, list) in urls {
            let entry = format!("Requests[{host:?}][{url:?}]");
            let list = list.as_array().ok_or_else(|| {
                err(
                    &entry,
                    format!("expected an array, found {}", kind_of(list)),
                )
            })?;
            for (index, r) in list.iter().enumerate() {
                let mut rec = WprRecord {
                    host: host.clone(),
                    url: url.clone(),
                    index,
                    ..Default::default()
                };
                let here = rec.describe();
                let r = object(r, &here)?;
                rec.request = bytes(r, &here, "SerializedRequest")?;
                rec.response = bytes(r, &here, "SerializedResponse")?;
                out.push(rec);
            }
        }
    }
    Ok(out)
}

/// The bytes of base64 field `name` of record `here`; empty when absent or null.
fn bytes(r: &Map<String, Value>, here: &str, name: &str) -> Result<Vec<u8>, WprError> {
    let entry = || format!("{here}.{name}");
    match r.get(name) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => base64::engine::general_purpose::STANDARD
            .decode(s.as_bytes())
            .map_err(|e| err(entry(), format!("invalid base64: {e}"))),
        Some(v) => Err(err(
            entry(),
            format!("expected a base64 string, found {}", kind_of(v)),
        )),
    }
}

impl WprArchive {
    /// The archive as JSON: `Requests`, `Certs` (empty: speedy keeps no certificates) and
    /// `NegotiatedProtocol`.
    pub fn to_json(&self) -> Value {
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let mut requests: BTreeMap<&str, BTreeMap<&str, Vec<Value>>> = BTreeMap::new();
        for r in &self.records {
            requests
                .entry(&r.host)
                .or_default()
                .entry(&r.url)
                .or_default()
                .push(json!({
                    "SerializedRequest": b64(&r.request),
                    "SerializedResponse": b64(&r.response),
                }));
        }
        json!({
            "Requests": requests,
            "Certs": {},
            "NegotiatedProtocol": self.negotiated,
        })
    }

    /// The `.wprgo` bytes: the JSON, gzip-compressed.
    pub fn to_gzip(&self) -> Vec<u8> {
        let json = serde_json::to_vec(&self.to_json()).expect("JSON serializes");
        let mut e = flate2::GzBuilder::new()
            .mtime(0)
            .write(Vec::new(), flate2::Compression::new(6));
        e.write_all(&json).expect("in memory");
        e.finish().expect("in memory")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_reads_back() {
        let a = WprArchive {
            records: vec![WprRecord {
                host: "a.test".into(),
                url: "http://a.test/".into(),
                index: 0,
                request: b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n".to_vec(),
                response: b"HTTP/1.1 200 OK\r\n\r\nhi".to_vec(),
            }],
            negotiated: [("a.test".to_string(), "h2".to_string())].into(),
            certs: 0,
        };
        let gz = a.to_gzip();
        assert!(is_gzip(&gz) && gzip_holds_json(&gz));
        assert_eq!(read(&gz).unwrap(), a);
        let plain = serde_json::to_vec(&a.to_json()).unwrap();
        assert!(json_is_wpr(&plain));
        assert_eq!(read(&plain).unwrap(), a);
        assert!(!json_is_wpr(br#"{"log": {}, "Requests": {}}"#));
    }

    #[test]
    fn bad_files_name_the_entry() {
        let e = read(br#"{"Requests": {"a": {"http://a/": [{"SerializedResponse": "%%"}]}}}"#)
            .unwrap_err();
        assert_eq!(
            e.entry,
            r#"Requests["a"]["http://a/"][0].SerializedResponse"#
        );
        assert!(e.reason.starts_with("invalid base64"), "{e:?}");
        assert!(read(b"{}").unwrap_err().reason.contains("no `Requests`"));
        assert!(read(b"{").unwrap_err().reason.starts_with("not JSON"));
        let e = read(br#"{"Requests": {"a": []}}"#).unwrap_err();
        assert_eq!(e.entry, r#"Requests["a"]"#);
    }
}
