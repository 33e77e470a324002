//! Files from a directory: the handler behind `speedy serve --root`.
//!
//! A URL path maps to a file under the root and never outside it (`..`, NUL, symlinks
//! leading out are refused). Files up to [`CACHE_MAX_FILE`] are kept in memory once read
//! and sent zero-copy; larger ones stream from disk in [`FILE_CHUNK`] pieces as the peer
//! takes them, so serving a file never holds it whole.
//!
//! As nginx's `open_file_cache`: a URL path that named a cached file is answered from
//! memory without touching the file system for [`REVALIDATE`] (the checks — directory,
//! symlinks out of the root, size and modification time — cost five system calls per
//! request otherwise); after that it is looked up again, so a changed file is served
//! stale for at most that long.

use bytes::Bytes;
use speedy_net::server::{Handler, Push, Ready, Request, Response, ResponseFuture};
use speedy_net::Body;
use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// Files up to this size are kept in memory once read.
pub const CACHE_MAX_FILE: u64 = 16 << 20;
/// Larger files are read in pieces of this size.
pub const FILE_CHUNK: usize = 256 * 1024;
/// How long a URL path's lookup of a cached file is trusted before it is checked again.
pub const REVALIDATE: Duration = Duration::from_secs(1);

/// Serves the files under a root directory.
pub struct FileServer {
    root: PathBuf,
    push_map: HashMap<String, Vec<String>>,
    echo: bool,
    reset: HashSet<String>,
    cache: Mutex<HashMap<PathBuf, (SystemTime, u64, Bytes)>>,
    /// URL path → (when it was looked up, content type, body): lookups of cached files
    /// trusted for [`REVALIDATE`]. Holds only paths that named files, so it is bounded by
    /// the files under the root.
    fresh: Mutex<HashMap<String, (Instant, &'static str, Bytes)>>,
}

/// What a URL path names.
enum Lookup {
    /// A file held in memory: its content type and bytes.
    Cached(&'static str, Bytes),
    /// A file too large to hold: streamed.
    Large(PathBuf, u64),
    Missing,
    Bad,
}

impl FileServer {
    /// Serves `root` (a canonical directory). `push_map`: requests for a path push those
    /// paths (SPDY, h2). `echo`: POST and PUT are answered with their body, streamed
    /// back. `reset`: paths answered with RST_STREAM CANCEL (fault injection).
    pub fn new(
        root: PathBuf,
        push_map: HashMap<String, Vec<String>>,
        echo: bool,
        reset: HashSet<String>,
    ) -> FileServer {
        FileServer {
            root,
            push_map,
            echo,
            reset,
            cache: Mutex::new(HashMap::new()),
            fresh: Mutex::new(HashMap::new()),
        }
    }

    /// [`FileServer::resolve`], answered from the recent lookups when they are fresh.
    fn lookup(&self, url_path: &str) -> Lookup {
        let now = Instant::now();
        if let Some((at, ct, body)) = self.fresh.lock().expect("not poisoned").get(url_path) {
            if now.duration_since(*at) < REVALIDATE {
                return Lookup::Cached(ct, body.clone());
            }
        }
        let found = self.resolve(url_path);
        if let Lookup::Cached(ct, body) = &found {
            self.fresh
                .lock()
                .expect("not poisoned")
                .insert(url_path.to_string(), (now, ct, body.clone()));
        }
        found
    }

    /// Maps a URL path to a file under the root, never outside it.
    fn resolve(&self, url_path: &str) -> Lookup {
        let path = url_path.split(['?', '#']).next().unwrap_or("/");
        let Some(decoded) = percent_decode(path) else {
            return Lookup::Bad;
        };
        let rel = Path::new(decoded.trim_start_matches('/'));
        if decoded.contains('\0') || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Lookup::Bad;
        }
        let mut full = self.root.join(rel);
        if full.is_dir() {
            full = full.join("index.html");
        }
        // Symlinks must not lead out of the root either.
        let Ok(real) = full.canonicalize() else {
            return Lookup::Missing;
        };
        if !real.starts_with(&self.root) || !real.is_file() {
            return Lookup::Missing;
        }
        let Ok(meta) = std::fs::metadata(&real) else {
            return Lookup::Missing;
        };
        if meta.len() > CACHE_MAX_FILE {
            return Lookup::Large(real, meta.len());
        }
        let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        if let Some((t, len, b)) = self.cache.lock().expect("not poisoned").get(&real) {
            if *t == mtime && *len == meta.len() {
                return Lookup::Cached(content_type(&real), b.clone());
            }
        }
        match std::fs::read(&real) {
            Ok(v) => {
                let b = Bytes::from(v);
                self.cache
                    .lock()
                    .expect("not poisoned")
                    .insert(real.clone(), (mtime, meta.len(), b.clone()));
                Lookup::Cached(content_type(&real), b)
            }
            Err(_) => Lookup::Missing,
        }
    }

    fn respond(&self, req: Request) -> ResponseFuture {
        let ready = |r: Response| -> ResponseFuture { Box::pin(async move { r }) };
        let path_only = req.path.split('?').next().unwrap_or("/").to_string();
        if self.reset.contains(&path_only) {
            return ready(Response {
                reset: Some(spdy::RstStatus::CANCEL),
                ..Default::default()
            });
        }
        if self.echo && (req.method == "POST" || req.method == "PUT") {
            return ready(Response::new(200, "application/octet-stream", req.body));
        }
        if req.method != "GET" && req.method != "HEAD" {
            let mut r = Response::new(405, "text/plain", "method not allowed\n");
            r.headers.push(("allow".into(), "GET, HEAD".into()));
            return ready(r);
        }
        let head = req.method == "HEAD";
        match self.lookup(&req.path) {
            Lookup::Bad => ready(Response::new(400, "text/plain", "bad path\n")),
            Lookup::Missing => ready(Response::new(
                404,
                "text/plain",
                format!("not found: {path_only}\n"),
            )),
            Lookup::Large(file, len) => Box::pin(async move {
                let ct = content_type(&file);
                if head {
                    let mut r = Response::new(200, ct, Body::empty());
                    r.head_len = Some(len);
                    return r;
                }
                match tokio::task::spawn_blocking(move || std::fs::File::open(file))
                    .await
                    .unwrap_or_else(|e| Err(std::io::Error::other(e)))
                {
                    Ok(f) => Response::new(200, ct, Body::file(f, len, FILE_CHUNK)),
                    Err(_) => Response::new(404, "text/plain", format!("not found: {path_only}\n")),
                }
            }),
            Lookup::Cached(ct, body) => {
                let head_len = head.then_some(body.len() as u64);
                let body = if head { Bytes::new() } else { body };
                let mut r = Response::new(200, ct, body);
                r.head_len = head_len;
                for p in self.push_map.get(&path_only).into_iter().flatten() {
                    if let Lookup::Cached(ct, b) = self.lookup(p) {
                        let headers = vec![("content-type".to_string(), ct.to_string())];
                        r.pushes.push(Push {
                            path: p.clone(),
                            status: 200,
                            headers,
                            body: b,
                        });
                    }
                }
                ready(r)
            }
        }
    }
}

impl Handler for FileServer {
    /// A file held in memory, unless its path is one to reset or one with pushes (SPDY
    /// and h2 answer ready requests without them).
    fn ready(&self, path: &str) -> Option<Ready> {
        let path_only = path.split('?').next().unwrap_or("/");
        if self.reset.contains(path_only) || self.push_map.contains_key(path_only) {
            return None;
        }
        match self.lookup(path) {
            Lookup::Cached(content_type, body) => Some(Ready { content_type, body }),
            _ => None,
        }
    }

    fn handle(&self, req: Request) -> ResponseFuture {
        self.respond(req)
    }
}

/// Decodes `%XX` escapes; `None` for a bad escape or a result that is not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(h, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A content type from the file extension.
pub fn content_type(p: &Path) -> &'static str {
    match p.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css",
        "js" | "mjs" => "application/javascript",
        "json" => "application/json",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_percent_escapes() {
        assert_eq!(percent_decode("/a%20b").as_deref(), Some("/a b"));
        assert_eq!(percent_decode("/%2e%2e/x").as_deref(), Some("/../x"));
        assert_eq!(percent_decode("/%zz"), None);
    }

    #[test]
    fn trusts_a_lookup_for_revalidate_then_checks_again() {
        let dir = std::env::temp_dir().join(format!("speedy-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let root = dir.canonicalize().unwrap();
        std::fs::write(root.join("a.txt"), "one").unwrap();
        let fs = FileServer::new(root.clone(), HashMap::new(), false, HashSet::new());
        let body = |l: Lookup| match l {
            Lookup::Cached(ct, b) => (ct, b),
            _ => panic!("not cached"),
        };
        assert_eq!(
            body(fs.lookup("/a.txt")),
            ("text/plain; charset=utf-8", Bytes::from("one"))
        );
        // Changed on disk: served from the trusted lookup until REVALIDATE has passed.
        std::fs::write(root.join("a.txt"), "two!").unwrap();
        assert_eq!(body(fs.lookup("/a.txt")).1, "one");
        std::thread::sleep(REVALIDATE + Duration::from_millis(50));
        assert_eq!(body(fs.lookup("/a.txt")).1, "two!");
        // A missing file is not remembered: created, it is found at once.
        assert!(matches!(fs.lookup("/b.txt"), Lookup::Missing));
        std::fs::write(root.join("b.txt"), "b").unwrap();
        assert_eq!(body(fs.lookup("/b.txt")).1, "b");
        // A path that leaves the root is refused whatever was looked up before.
        assert!(matches!(fs.lookup("/../a.txt"), Lookup::Bad));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
