//! A small site as a record-and-replay tool would have captured it, for the Mahimahi and
//! WPR tests: four hosts, a redirect, a 404, a gzip-encoded style sheet, a chunked
//! script, a 1 MB image and the HTML page that references them. Each exchange says what
//! went over the wire and what the archive must hold.
#![allow(dead_code)]

use std::io::Write;

/// One recorded exchange.
pub struct Exchange {
    /// `http` or `https`.
    pub scheme: &'static str,
    /// The `Host` header.
    pub host: &'static str,
    /// The server's recorded address and port.
    pub ip: &'static str,
    pub port: u16,
    /// The request line.
    pub request_line: &'static str,
    /// Request headers after `Host`.
    pub request_headers: Vec<(&'static str, &'static str)>,
    /// The status line.
    pub status_line: &'static str,
    /// Response headers in wire order.
    pub response_headers: Vec<(String, String)>,
    /// The body bytes on the wire (chunk framing included).
    pub wire_body: Vec<u8>,
    /// What the archive must store (transfer coding undone, content coding kept).
    pub stored: Vec<u8>,
    /// The URL the archive must have.
    pub url: &'static str,
    /// The status the archive must have.
    pub status: u16,
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// 1 MiB of incompressible-looking bytes after a JPEG-like start.
fn big_image() -> Vec<u8> {
    let mut v = vec![0xff, 0xd8, 0xff, 0xe0];
    let mut x = 0x2545_f491_4f6c_dd1du64;
    while v.len() < 1 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push((x >> 24) as u8);
    }
    v
}

fn h(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

/// Chunk framing of `data` in pieces of `size` bytes, with a chunk extension on the first.
fn chunked(data: &[u8], size: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, c) in data.chunks(size).enumerate() {
        let ext = if i == 0 { ";note=first" } else { "" };
        out.extend_from_slice(format!("{:x}{ext}\r\n", c.len()).as_bytes());
        out.extend_from_slice(c);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

pub const HTML: &str = "<!doctype html>\n<html><head>\n\
<link rel=\"stylesheet\" href=\"https://static.example.test/site.css\">\n\
<script src=\"/app.js\"></script>\n</head><body>\n\
<img src=\"https://img.example.test/big.jpg\" alt=\"big\">\n\
<img src=\"/missing.png\">\n</body></html>\n";

pub const CSS: &str = "body { background: url(https://img.example.test/bg.png) }\n";

pub const JS: &str = "document.title = 'recorded';\nconsole.log('a script sent in chunks');\n";

/// The site's exchanges, in no particular order.
pub fn exchanges() -> Vec<Exchange> {
    let css_gz = gzip(CSS.as_bytes());
    let img = big_image();
    let png = b"\x89PNG\r\n\x1a\n-a-tiny-background-".to_vec();
    let not_found = b"<html><body>not here</body></html>".to_vec();
    let ua = ("User-Agent", "Mozilla/5.0 (recorder)");
    vec![
        Exchange {
            scheme: "https",
            host: "img.example.test",
            ip: "192.0.2.30",
            port: 443,
            request_line: "GET /big.jpg HTTP/1.1",
            request_headers: vec![ua, ("Accept", "image/*")],
            status_line: "HTTP/1.1 200 OK",
            response_headers: h(&[
                ("Content-Type", "image/jpeg"),
                ("Content-Length", &img.len().to_string()),
                ("Cache-Control", "max-age=3600"),
            ]),
            wire_body: img.clone(),
            stored: img,
            url: "https://img.example.test/big.jpg",
            status: 200,
        },
        Exchange {
            scheme: "http",
            host: "example.test",
            ip: "192.0.2.10",
            port: 80,
            request_line: "GET / HTTP/1.1",
            request_headers: vec![ua],
            status_line: "HTTP/1.1 301 Moved Permanently",
            response_headers: h(&[
                ("Location", "https://www.example.test/"),
                ("Content-Length", "0"),
            ]),
            wire_body: Vec::new(),
            stored: Vec::new(),
            url: "http://example.test/",
            status: 301,
        },
        Exchange {
            scheme: "https",
            host: "static.example.test",
            ip: "192.0.2.20",
            port: 443,
            request_line: "GET /site.css HTTP/1.1",
            request_headers: vec![ua, ("Accept-Encoding", "gzip")],
            status_line: "HTTP/1.1 200 OK",
            response_headers: h(&[
                ("Content-Type", "text/css"),
                ("Content-Encoding", "gzip"),
                ("Content-Length", &css_gz.len().to_string()),
                ("Vary", "Accept-Encoding"),
            ]),
            wire_body: css_gz.clone(),
            stored: css_gz,
            url: "https://static.example.test/site.css",
            status: 200,
        },
        Exchange {
            scheme: "https",
            host: "www.example.test",
            ip: "192.0.2.11",
            port: 443,
            request_line: "GET /app.js HTTP/1.1",
            request_headers: vec![ua],
            status_line: "HTTP/1.1 200 OK",
            response_headers: h(&[
                ("Content-Type", "application/javascript"),
                ("Transfer-Encoding", "chunked"),
            ]),
            wire_body: chunked(JS.as_bytes(), 17),
            stored: JS.as_bytes().to_vec(),
            url: "https://www.example.test/app.js",
            status: 200,
        },
        Exchange {
            scheme: "https",
            host: "www.example.test",
            ip: "192.0.2.11",
            port: 443,
            request_line: "GET / HTTP/1.1",
            request_headers: vec![ua, ("Accept", "text/html"), ("Cookie", "a=1")],
            status_line: "HTTP/1.1 200 OK",
            response_headers: h(&[
                ("Content-Type", "text/html; charset=utf-8"),
                ("Content-Length", &HTML.len().to_string()),
                ("Set-Cookie", "b=2"),
                ("Set-Cookie", "c=3"),
            ]),
            wire_body: HTML.as_bytes().to_vec(),
            stored: HTML.as_bytes().to_vec(),
            url: "https://www.example.test/",
            status: 200,
        },
        Exchange {
            scheme: "https",
            host: "www.example.test",
            ip: "192.0.2.11",
            port: 443,
            request_line: "GET /missing.png HTTP/1.1",
            request_headers: vec![ua],
            status_line: "HTTP/1.1 404 Not Found",
            response_headers: h(&[
                ("Content-Type", "text/html"),
                ("Content-Length", &not_found.len().to_string()),
            ]),
            wire_body: not_found.clone(),
            stored: not_found,
            url: "https://www.example.test/missing.png",
            status: 404,
        },
        Exchange {
            scheme: "https",
            host: "img.example.test",
            ip: "192.0.2.30",
            port: 443,
            request_line: "GET /bg.png HTTP/1.1",
            request_headers: vec![ua],
            status_line: "HTTP/1.1 200 OK",
            response_headers: h(&[
                ("Content-Type", "image/png"),
                ("Content-Length", &png.len().to_string()),
            ]),
            wire_body: png.clone(),
            stored: png,
            url: "https://img.example.test/bg.png",
            status: 200,
        },
    ]
}

/// The exchange's request as HTTP/1.1 bytes.
pub fn request_bytes(x: &Exchange) -> Vec<u8> {
    let mut s = format!("{}\r\nHost: {}\r\n", x.request_line, x.host);
    for (n, v) in &x.request_headers {
        s.push_str(&format!("{n}: {v}\r\n"));
    }
    s.push_str("\r\n");
    s.into_bytes()
}

/// The exchange's response as HTTP/1.1 bytes.
pub fn response_bytes(x: &Exchange) -> Vec<u8> {
    let mut s = format!("{}\r\n", x.status_line);
    for (n, v) in &x.response_headers {
        s.push_str(&format!("{n}: {v}\r\n"));
    }
    s.push_str("\r\n");
    let mut b = s.into_bytes();
    b.extend_from_slice(&x.wire_body);
    b
}

/// Response headers as the archive keeps them: lower-case names, no framing headers.
pub fn kept_response_headers(x: &Exchange) -> Vec<(String, String)> {
    x.response_headers
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
        .filter(|(n, _)| n != "content-length" && n != "transfer-encoding")
        .collect()
}

/// Request headers as the archive keeps them: lower-case names, no `Host`.
pub fn kept_request_headers(x: &Exchange) -> Vec<(String, String)> {
    x.request_headers
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v.to_string()))
        .collect()
}

/// Checks that archive `a` holds every exchange as it should: URL, method, status,
/// headers, the stored body byte for byte; one page rooted at the redirect, the style
/// sheet parsed from the page and the background from the style sheet.
pub fn check_site(a: &speedy_archive::Archive) {
    let xs = exchanges();
    assert_eq!(a.objects.len(), xs.len(), "{:#?}", a.objects);
    for x in &xs {
        let o = a
            .objects
            .iter()
            .find(|o| o.url == x.url)
            .unwrap_or_else(|| panic!("{} is missing", x.url));
        assert_eq!(o.method, "GET", "{}", x.url);
        assert_eq!(o.status, x.status, "{}", x.url);
        assert_eq!(o.response_headers, kept_response_headers(x), "{}", x.url);
        assert_eq!(o.request_headers, kept_request_headers(x), "{}", x.url);
        assert_eq!(a.body(o.id).as_ref(), &x.stored[..], "{}: body", x.url);
        assert_eq!(o.body.size(), x.stored.len(), "{}", x.url);
    }
    let by_url = |u: &str| a.objects.iter().find(|o| o.url == u).unwrap();
    assert_eq!(a.pages.len(), 1, "{:?}", a.pages);
    assert_eq!(a.objects[a.pages[0].root].url, "http://example.test/");
    assert_eq!(a.pages[0].objects.len(), xs.len());
    let parent = |u: &str| {
        by_url(u)
            .discovery
            .parent()
            .map(|p| a.objects[p].url.clone())
    };
    assert_eq!(
        parent("https://www.example.test/").as_deref(),
        Some("http://example.test/")
    );
    for child in [
        "https://static.example.test/site.css",
        "https://www.example.test/app.js",
        "https://img.example.test/big.jpg",
        "https://www.example.test/missing.png",
    ] {
        assert_eq!(
            parent(child).as_deref(),
            Some("https://www.example.test/"),
            "{child}"
        );
    }
    assert_eq!(
        parent("https://img.example.test/bg.png").as_deref(),
        Some("https://static.example.test/site.css")
    );
    let css = by_url("https://static.example.test/site.css");
    assert_eq!(css.content_encoding.as_deref(), Some("gzip"));
}
