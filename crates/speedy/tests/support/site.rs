//! A small "live site" for recording tests, on loopback addresses only: three hosts
//! (`www.site.test` on 127.0.0.2, `static.site.test` on 127.0.0.3, `api.site.test` on
//! 127.0.0.4, each on a free port), HTTP and HTTPS on the same port, TLS with a leaf
//! from a CA made here (its `ca.pem` is what a client must trust). It logs every response
//! it serves, body as sent, so a test can compare a recording with what was live.
//!
//! The pages:
//! - `http://www.site.test/` redirects (301) to `https://www.site.test/index.html`;
//! - `index.html` links `/style.css` (which draws `https://static.site.test/bg.png`),
//!   shows `https://static.site.test/logo.png`, a ~1 MB `https://static.site.test/big.bmp`
//!   and `/missing.png` (404), and runs `/app.js`;
//! - `app.js` fetches `https://api.site.test/data.json` (served gzip-encoded, with CORS)
//!   and adds an image `https://static.site.test/pixel.gif?t=<Date.now()>` (a
//!   cache-busting parameter made at run time);
//! - `https://www.site.test/about.html`, a second page: `/style.css` again (and so
//!   `bg.png`), `logo.png` again and `https://static.site.test/team.png`;
//! - `/` of any host outside `site.test` is a small HTML page (what the `--help`
//!   examples' `example.com` meets when every host goes to `www.site.test`'s server);
//! - anything else is 404 (Chromium's `/favicon.ico`).

use flate2::write::GzEncoder;
use speedy_net::server::{Handler, Request, Response, ResponseFuture, ServerConfig};
use speedy_test_support::TestServer;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The hosts and their loopback addresses.
pub const HOSTS: [(&str, &str); 3] = [
    ("www.site.test", "127.0.0.2"),
    ("static.site.test", "127.0.0.3"),
    ("api.site.test", "127.0.0.4"),
];

/// The page to record.
pub const PAGE: &str = "http://www.site.test/";

/// A second page, sharing some objects with the first.
pub const ABOUT: &str = "https://www.site.test/about.html";

const ABOUT_HTML: &str = r#"<!doctype html>
<html><head><title>about site.test</title>
<link rel="stylesheet" href="/style.css">
</head><body>
<h1>About</h1>
<img src="https://static.site.test/logo.png" alt="logo">
<img src="https://static.site.test/team.png" alt="team">
</body></html>
"#;

const INDEX: &str = r#"<!doctype html>
<html><head><title>site.test</title>
<link rel="stylesheet" href="/style.css">
</head><body>
<h1>A live site</h1>
<img src="https://static.site.test/logo.png" alt="logo">
<img src="https://static.site.test/big.bmp" alt="big">
<img src="/missing.png" alt="gone">
<script src="/app.js"></script>
</body></html>
"#;

const STYLE: &str =
    "body { font-family: sans-serif; background: url(https://static.site.test/bg.png); }\n";

const APP: &str = r#"fetch('https://api.site.test/data.json')
  .then((r) => r.json())
  .then((d) => { document.title = d.title; });
const img = new Image();
img.src = 'https://static.site.test/pixel.gif?t=' + Date.now();
document.body.appendChild(img);
"#;

/// One response the site served.
#[derive(Clone, Debug)]
pub struct Served {
    /// `GET`, …
    pub method: String,
    /// `scheme://host/path?query` (no port).
    pub url: String,
    /// Status.
    pub status: u16,
    /// The body as sent (content-encoded where the response says so).
    pub body: Vec<u8>,
}

/// The site's handler: its content and the log of what it served.
struct Site {
    big: Vec<u8>,
    data_gz: Vec<u8>,
    log: Arc<Mutex<Vec<Served>>>,
}

/// Deterministic filler bytes.
/// A valid 24-bit BMP image of `w` × `h` pixels of noise (`w` a multiple of 4, so rows
/// need no padding): an image Chromium decodes, so it downloads the whole of it. (Noise
/// under a `.jpg` name was taken for a broken image after its first 16 KiB and cancelled,
/// which left the rest of it in flight ahead of the page's later responses, a race that
/// made onLoad bimodal.)
fn bmp(w: u32, h: u32, seed: u64) -> Vec<u8> {
    let pixels = (w * h * 3) as usize;
    let mut b = Vec::with_capacity(54 + pixels);
    b.extend_from_slice(b"BM");
    b.extend_from_slice(&(54 + pixels as u32).to_le_bytes());
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&54u32.to_le_bytes());
    b.extend_from_slice(&40u32.to_le_bytes());
    b.extend_from_slice(&w.to_le_bytes());
    b.extend_from_slice(&h.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&24u16.to_le_bytes());
    b.extend_from_slice(&[0; 24]);
    b.extend(filler(pixels, seed));
    b
}

fn filler(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

impl Site {
    /// Status, headers and body for `host` and `path` (with query).
    fn answer(
        &self,
        scheme: &str,
        host: &str,
        path: &str,
    ) -> (u16, Vec<(String, String)>, Vec<u8>) {
        let h = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect()
        };
        let bare = path.split('?').next().unwrap_or(path);
        match (scheme, host, bare) {
            ("http", "www.site.test", "/") => (
                301,
                h(&[
                    ("location", "https://www.site.test/index.html"),
                    ("content-type", "text/html"),
                ]),
                b"<a href=https://www.site.test/index.html>moved</a>".to_vec(),
            ),
            (_, "www.site.test", "/index.html") => (
                200,
                h(&[("content-type", "text/html; charset=utf-8")]),
                INDEX.into(),
            ),
            (_, "www.site.test", "/about.html") => (
                200,
                h(&[("content-type", "text/html; charset=utf-8")]),
                ABOUT_HTML.into(),
            ),
            (_, "static.site.test", "/team.png") => {
                (200, h(&[("content-type", "image/png")]), filler(5_000, 5))
            }
            (_, "www.site.test", "/style.css") => {
                (200, h(&[("content-type", "text/css")]), STYLE.into())
            }
            (_, "www.site.test", "/app.js") => {
                (200, h(&[("content-type", "text/javascript")]), APP.into())
            }
            (_, "static.site.test", "/logo.png") => {
                (200, h(&[("content-type", "image/png")]), filler(2_000, 1))
            }
            (_, "static.site.test", "/bg.png") => {
                (200, h(&[("content-type", "image/png")]), filler(700, 2))
            }
            (_, "static.site.test", "/big.bmp") => {
                (200, h(&[("content-type", "image/bmp")]), self.big.clone())
            }
            (_, "static.site.test", "/pixel.gif") => (
                200,
                h(&[("content-type", "image/gif"), ("cache-control", "no-store")]),
                filler(43, 3),
            ),
            (_, "api.site.test", "/data.json") => (
                200,
                h(&[
                    ("content-type", "application/json"),
                    ("content-encoding", "gzip"),
                    ("access-control-allow-origin", "https://www.site.test"),
                    ("vary", "accept-encoding"),
                ]),
                self.data_gz.clone(),
            ),
            // Any other host's front page (the `--help` examples' example.com).
            (_, other, "/") if !other.ends_with("site.test") => (
                200,
                h(&[("content-type", "text/html")]),
                format!("<!doctype html><title>{other}</title><p>{other} stands in here</p>\n")
                    .into_bytes(),
            ),
            _ => (
                404,
                h(&[("content-type", "text/plain")]),
                format!("no {path} on {host}\n").into_bytes(),
            ),
        }
    }
}

impl Handler for Site {
    fn handle(&self, req: Request) -> ResponseFuture {
        let host = req
            .host
            .split(':')
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        let (status, headers, body) = self.answer(&req.scheme, &host, &req.path);
        self.log.lock().unwrap().push(Served {
            method: req.method.clone(),
            url: format!("{}://{host}{}", req.scheme, req.path),
            status,
            body: body.clone(),
        });
        Box::pin(async move {
            Response {
                status,
                headers,
                body: body.into(),
                ..Default::default()
            }
        })
    }
}

/// The running site: one server per host, and what they served.
pub struct LiveSite {
    servers: Vec<(String, TestServer)>,
    log: Arc<Mutex<Vec<Served>>>,
}

impl LiveSite {
    /// Makes the test CA in `dir` (`ca.pem`, and the leaf's files) and starts the three
    /// servers on their loopback addresses.
    pub fn start(dir: &Path) -> LiveSite {
        let ips: Vec<String> = HOSTS.iter().map(|(_, ip)| ip.to_string()).collect();
        LiveSite::start_at(dir, &ips)
    }

    /// [`LiveSite::start`] with the hosts at `ips` (in the order of [`HOSTS`]), e.g. a
    /// test namespace's addresses (the listening sockets are made on the calling thread,
    /// so in its network namespace).
    pub fn start_at(dir: &Path, ips: &[String]) -> LiveSite {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::default();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "speedy test site CA");
        let ca = ca.self_signed(&ca_key).unwrap();
        // The `--help` examples' hosts too, which the tests send here.
        let mut names: Vec<String> = HOSTS.iter().map(|(h, _)| h.to_string()).collect();
        names.extend(["example.com".to_string(), "example.org".to_string()]);
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(names)
            .unwrap()
            .signed_by(&leaf_key, &ca, &ca_key)
            .unwrap();
        std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
        let (cert, key) = (dir.join("site.pem"), dir.join("site-key.pem"));
        std::fs::write(&cert, format!("{}{}", leaf.pem(), ca.pem())).unwrap();
        std::fs::write(&key, leaf_key.serialize_pem()).unwrap();
        let (certs, key) = speedy_net::tls::load_pem(&cert, &key).unwrap();
        let tls = speedy_net::tls::server_config(certs, key, &["h2", "http/1.1"]).unwrap();
        let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(br#"{"title": "recorded", "items": [1, 2, 3], "text": "compressible compressible compressible"}"#)
            .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let site = Arc::new(Site {
            big: bmp(512, 682, 4),
            data_gz: gz.finish().unwrap(),
            log: log.clone(),
        });
        let servers = HOSTS
            .iter()
            .zip(ips)
            .map(|((host, _), ip)| {
                let cfg = ServerConfig {
                    tls: Some(tls.clone()),
                    ..ServerConfig::default()
                };
                let s = TestServer::start_on(&format!("{ip}:0"), site.clone(), cfg);
                (host.to_string(), s)
            })
            .collect();
        LiveSite { servers, log }
    }

    /// `HOST=IP:PORT` for each host, as `--resolve` takes them.
    pub fn resolve(&self) -> Vec<String> {
        self.servers
            .iter()
            .map(|(h, s)| format!("{h}={}", s.socket_addr()))
            .collect()
    }

    /// The address serving `host`.
    pub fn addr_of(&self, host: &str) -> SocketAddr {
        self.servers
            .iter()
            .find(|(h, _)| h == host)
            .map(|(_, s)| s.socket_addr())
            .unwrap_or_else(|| panic!("no server for {host}"))
    }

    /// Everything served so far, in order.
    pub fn served(&self) -> Vec<Served> {
        self.log.lock().unwrap().clone()
    }
}
