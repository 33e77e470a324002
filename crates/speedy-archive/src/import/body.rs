//! Which headers are kept and how a body is stored (docs/archive.md, "Bodies and
//! encodings").

use super::{Rec, MAX_DECODED};
use bytes::Bytes;
use std::io::{Read, Write};
/// Lower-case names; exact repeats of a name and value dropped (Chrome's exports list
/// some request headers twice, once from each of two DevTools events).
pub(super) fn lower_headers(h: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::with_capacity(h.len());
    for (n, v) in h {
        let pair = (n.trim().to_ascii_lowercase(), v.clone());
        if !out.contains(&pair) {
            out.push(pair);
        }
    }
    out
}

pub(super) fn header<'a>(h: &'a [(String, String)], name: &str) -> Option<&'a str> {
    h.iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Hop-by-hop and connection-level headers, never replayed.
pub(super) const HOP_BY_HOP: [&str; 9] = [
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

pub(super) fn keep_response_header(name: &str) -> bool {
    !(name.starts_with(':') || name == "content-length" || HOP_BY_HOP.contains(&name))
}

pub(super) fn keep_request_header(name: &str) -> bool {
    !(name.starts_with(':')
        || name == "content-length"
        || name == "host"
        || HOP_BY_HOP.contains(&name))
}

/// The content encoding named by the headers, if any other than identity.
pub(super) fn content_encoding(h: &[(String, String)]) -> Option<String> {
    header(h, "content-encoding")
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| !e.is_empty() && e != "identity")
}

/// Undoes gzip or deflate (zlib or raw); `None` for other codings or bad data.
pub(super) fn decode_body(data: &[u8], enc: &str) -> Option<Vec<u8>> {
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
pub(super) fn encode_body(data: &[u8], enc: &str) -> Vec<u8> {
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
pub(super) fn looks_encoded(data: &[u8], enc: &str) -> bool {
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
pub(super) fn settle_body(
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

#[cfg(test)]
mod tests {
    use super::*;

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
