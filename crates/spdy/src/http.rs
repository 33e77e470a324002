//! The HTTP mapping of SPDY header blocks (digest §9): request and response
//! pseudo-headers per version, and the hop-by-hop headers SPDY must not carry.

use crate::{Headers, Version};
use bytes::Bytes;

/// Headers that must not travel in SPDY (hop-by-hop); `host` becomes `:host` in SPDY/3.
pub const HOP_BY_HOP: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// A request's essentials, read from a SYN_STREAM's headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHead {
    /// Method (`GET`).
    pub method: String,
    /// Path and query, starting with `/` (SPDY/2 `url` may be absolute; its path is used).
    pub path: String,
    /// `host[:port]`.
    pub host: String,
    /// `http` or `https`.
    pub scheme: String,
}

/// Builds request headers for `version`: pseudo-headers plus `extra` (hop-by-hop removed).
pub fn request_headers(
    version: Version,
    method: &str,
    scheme: &str,
    host: &str,
    path: &str,
    extra: &Headers,
) -> Headers {
    let mut h = Headers::new();
    if version == Version::V2 {
        h.add("method", method);
        h.add("url", path);
        h.add("version", "HTTP/1.1");
        h.add("scheme", scheme);
        h.add("host", host);
    } else {
        h.add(":method", method);
        h.add(":path", path);
        h.add(":version", "HTTP/1.1");
        h.add(":scheme", scheme);
        h.add(":host", host);
    }
    copy_extra(version, &mut h, extra);
    h
}

/// Builds response headers for `version`: status, version and `extra`.
pub fn response_headers(version: Version, status: u16, extra: &Headers) -> Headers {
    // Room for the two pairs most answers add (content type and length).
    let mut h = Headers::with_capacity(4 + extra.len());
    let (s, v) = if version == Version::V2 {
        ("status", "version")
    } else {
        (":status", ":version")
    };
    h.add_static(s, status_bytes(status));
    h.add_static(v, Bytes::from_static(b"HTTP/1.1"));
    copy_extra(version, &mut h, extra);
    h
}

/// [`status_line`] as bytes, without allocating: every line of 100-599 is made once (at
/// first use) and kept for the process, so an answer's `:status` shares it.
fn status_bytes(status: u16) -> Bytes {
    static LINES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    let lines = LINES.get_or_init(|| {
        (100..600)
            .map(|s| &*Box::leak(status_line(s).into_boxed_str()))
            .collect()
    });
    match status.checked_sub(100).and_then(|k| lines.get(k as usize)) {
        Some(line) => Bytes::from_static(line.as_bytes()),
        None => Bytes::from(status_line(status)),
    }
}

/// Headers of a pushed resource: the URL (`:scheme :host :path`, SPDY/2 absolute `url`),
/// `:method GET` and the response headers, all in the SYN_STREAM (digest §6).
pub fn push_headers(
    version: Version,
    scheme: &str,
    host: &str,
    path: &str,
    status: u16,
    extra: &Headers,
) -> Headers {
    let mut h = Headers::new();
    if version == Version::V2 {
        // `url` alone names the push (digest §6); node-spdy also requires `method` on
        // every SYN_STREAM and kills the session without it.
        h.add("url", format!("{scheme}://{host}{path}"));
        h.add("method", "GET");
        h.add("scheme", scheme);
        h.add("host", host);
        h.add("status", status_line(status));
        h.add("version", "HTTP/1.1");
    } else {
        h.add(":scheme", scheme);
        h.add(":host", host);
        h.add(":path", path);
        h.add(":method", "GET");
        h.add(":status", status_line(status));
        h.add(":version", "HTTP/1.1");
    }
    copy_extra(version, &mut h, extra);
    h
}

fn copy_extra(version: Version, h: &mut Headers, extra: &Headers) {
    for (n, v) in extra.iter() {
        let name = String::from_utf8_lossy(n);
        if HOP_BY_HOP.contains(&name.as_ref())
            || (version != Version::V2 && name == "host")
            || name.starts_with(':')
        {
            continue;
        }
        h.add(&name, v);
    }
}

/// `200` → `200 OK` (both forms are seen; peers parse the leading digits).
pub fn status_line(status: u16) -> String {
    match reason_phrase(status) {
        "" => status.to_string(),
        reason => format!("{status} {reason}"),
    }
}

/// The standard reason phrase of a status code (`""` when unknown).
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// Reads a request's pseudo-headers; `Err(name)` names the first missing one (the
/// server answers 400, digest §3.3).
pub fn parse_request(version: Version, h: &Headers) -> Result<RequestHead, &'static str> {
    let get = |n: &'static str| h.get_str(n).map(str::to_string).ok_or(n);
    if version == Version::V2 {
        let url = get("url")?;
        let path = match crate::url::split_url(&url) {
            Some((_, _, path)) => crate::url::path_from_root(path),
            None => url,
        };
        Ok(RequestHead {
            method: get("method")?,
            path,
            host: get("host")?,
            scheme: get("scheme").unwrap_or_else(|_| "http".into()),
        })
    } else {
        Ok(RequestHead {
            method: get(":method")?,
            path: get(":path")?,
            host: get(":host")?,
            scheme: get(":scheme")?,
        })
    }
}

/// Reads the status code of a response (`200` or `200 OK`).
pub fn parse_status(version: Version, h: &Headers) -> Option<u16> {
    let name = if version == Version::V2 {
        "status"
    } else {
        ":status"
    };
    let s = h.get_str(name)?;
    s.get(..3)?.parse().ok()
}

/// The URL of a pushed stream from its headers.
pub fn push_url(version: Version, h: &Headers) -> Option<String> {
    if version == Version::V2 {
        return h.get_str("url").map(str::to_string);
    }
    Some(format!(
        "{}://{}{}",
        h.get_str(":scheme")?,
        h.get_str(":host")?,
        h.get_str(":path")?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_bytes_are_the_status_line_for_every_code() {
        for status in 0..1000 {
            assert_eq!(
                status_bytes(status),
                status_line(status).as_bytes(),
                "{status}"
            );
        }
        let h = response_headers(Version::V3_1, 404, &Headers::from_pairs([("Server", "x")]));
        assert_eq!(h.get_str(":status"), Some("404 Not Found"));
        assert_eq!(h.get_str(":version"), Some("HTTP/1.1"));
        assert_eq!(h.get_str("server"), Some("x"));
    }

    #[test]
    fn add_static_joins_a_repeated_name_and_lower_cases_as_add_does() {
        let mut h = Headers::new();
        h.add_static("vary", Bytes::from_static(b"a"));
        h.add_static("vary", Bytes::from_static(b"b"));
        h.add_static("X-Up", Bytes::from_static(b"c"));
        assert_eq!(h.len(), 2);
        assert_eq!(h.get("vary"), Some(&b"a\0b"[..]));
        assert_eq!(h.get_str("x-up"), Some("c"));
    }

    #[test]
    fn reads_the_path_of_a_spdy2_absolute_url() {
        let head = |url: &str| {
            let mut h = Headers::new();
            h.add("method", "GET");
            h.add("url", url);
            h.add("host", "a.example");
            parse_request(Version::V2, &h).unwrap().path
        };
        assert_eq!(head("http://a.example/x/y?z"), "/x/y?z");
        assert_eq!(head("http://a.example"), "/");
        assert_eq!(head("http://a.example?q"), "/?q");
        assert_eq!(head("/rel?q"), "/rel?q");
    }
}
