//! The archive model and its on-disk form: `DIR/archive.json` plus `DIR/bodies/<sha256>`.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The format version written to `archive.json`.
pub const FORMAT_VERSION: u32 = 1;

/// What kind of resource an object is (decides the loader's request priority).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ObjectType {
    /// An HTML document.
    Document,
    /// CSS.
    Stylesheet,
    /// JavaScript.
    Script,
    /// A font.
    Font,
    /// XHR / fetch.
    Xhr,
    /// An image.
    Image,
    /// Anything else.
    Other,
}

impl ObjectType {
    /// Guesses the type from a content type and a URL.
    pub fn guess(content_type: &str, url: &str) -> ObjectType {
        let ct = content_type.to_ascii_lowercase();
        let path = url
            .split(['?', '#'])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        if ct.contains("html") {
            ObjectType::Document
        } else if ct.contains("css") || path.ends_with(".css") {
            ObjectType::Stylesheet
        } else if ct.contains("javascript") || ct.contains("ecmascript") || path.ends_with(".js") {
            ObjectType::Script
        } else if ct.starts_with("image/") {
            ObjectType::Image
        } else if ct.contains("font")
            || [".woff", ".woff2", ".ttf", ".otf"]
                .iter()
                .any(|e| path.ends_with(e))
        {
            ObjectType::Font
        } else if ct.contains("json") || ct.contains("xml") {
            ObjectType::Xhr
        } else {
            ObjectType::Other
        }
    }
}

/// How the browser discovers an object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Discovery {
    /// The page's root document.
    Root,
    /// A parser finds it once `offset` bytes of the parent's body have arrived.
    Parsed {
        /// Parent object id.
        parent: usize,
        /// Byte offset in the parent's body where the reference ends.
        offset: usize,
    },
    /// Requested `after_ms` after the parent completes (script or style compute).
    Computed {
        /// Parent object id.
        parent: usize,
        /// Compute time in ms.
        after_ms: u32,
    },
}

impl Discovery {
    /// The parent, if any.
    pub fn parent(&self) -> Option<usize> {
        match *self {
            Discovery::Root => None,
            Discovery::Parsed { parent, .. } | Discovery::Computed { parent, .. } => Some(parent),
        }
    }
}

/// Where an object's body comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum BodySource {
    /// Recorded bytes in `bodies/<sha256>`.
    Stored {
        /// Hex SHA-256 of the bytes (the file name).
        sha256: String,
        /// Size in bytes.
        size: usize,
    },
    /// Deterministic filler of the recorded size (bodies were not recorded).
    Synthetic {
        /// Size in bytes.
        size: usize,
    },
}

impl BodySource {
    /// The body size.
    pub fn size(&self) -> usize {
        match *self {
            BodySource::Stored { size, .. } | BodySource::Synthetic { size } => size,
        }
    }
}

/// One recorded request/response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Object {
    /// Index in [`Archive::objects`].
    pub id: usize,
    /// Absolute URL.
    pub url: String,
    /// Request method.
    pub method: String,
    /// Response status.
    pub status: u16,
    /// Recorded request headers (lower-case names), sent by the loader.
    #[serde(default)]
    pub request_headers: Vec<(String, String)>,
    /// Recorded response headers (lower-case names), replayed by the server.
    pub response_headers: Vec<(String, String)>,
    /// Response body.
    pub body: BodySource,
    /// Content type.
    pub content_type: String,
    /// Content encoding of the stored body (`gzip`, `br`, …), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_encoding: Option<String>,
    /// Server think time before the response, ms.
    #[serde(default)]
    pub think_ms: u32,
    /// Resource type.
    #[serde(rename = "type")]
    pub kind: ObjectType,
    /// Scripts: how long running it takes a browser, ms (the loader's `script_ms_per_kb`
    /// stands in when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_ms: Option<u32>,
    /// Chrome's priority for it as recorded (HAR `_priority`: `VeryHigh`, `High`,
    /// `Medium`, `Low`, `VeryLow`); the loader's Chromium model uses it instead of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
    /// How it is discovered.
    pub discovery: Discovery,
    /// Where and how it was recorded, when the source says (`speedy corpus record`,
    /// Mahimahi, Web Page Replay): replay puts each recorded origin on its own address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded: Option<Recorded>,
}

/// What a recording knows of the server that answered an object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recorded {
    /// The server's address and port as recorded (Mahimahi's `ip`/`port`, the address the
    /// recording proxy connected to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<std::net::SocketAddr>,
    /// The protocol negotiated with it, as an ALPN id (`http/1.1`, `h2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Time from sending the request to the response's first byte at the recorder, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_ms: Option<u32>,
    /// Time from the response's first byte to its last at the recorder, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer_ms: Option<u32>,
}

/// The names Chrome's HAR `_priority` takes, highest first.
pub const PRIORITY_NAMES: [&str; 5] = ["VeryHigh", "High", "Medium", "Low", "VeryLow"];

/// A page: a root document and the objects it loads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page {
    /// Short name.
    pub name: String,
    /// The root object id.
    pub root: usize,
    /// Every object of the page (root included), in discovery order.
    pub objects: Vec<usize>,
}

/// Pages and their objects.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Archive {
    /// Format version ([`FORMAT_VERSION`]).
    pub format: u32,
    /// Where it came from (`synth seed=…`, a HAR file name, …).
    #[serde(default)]
    pub source: String,
    /// Pages.
    pub pages: Vec<Page>,
    /// All objects; ids are indices.
    pub objects: Vec<Object>,
    /// Bodies in memory (loaded or generated), by object id.
    #[serde(skip)]
    pub bodies: HashMap<usize, Bytes>,
}

/// Why an archive could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// File system error.
    #[error("{path}: {err}")]
    Io {
        /// File.
        path: PathBuf,
        /// Error.
        err: std::io::Error,
    },
    /// The file is not a valid archive.
    #[error("{path}: {reason}")]
    Invalid {
        /// File.
        path: PathBuf,
        /// What is wrong (names the entry).
        reason: String,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ArchiveError + '_ {
    move |err| ArchiveError::Io {
        path: path.to_path_buf(),
        err,
    }
}

/// The largest body made of filler ([`BodySource::Synthetic`]): a replay server makes each
/// one whole in memory per response, so a size claimed by a file from elsewhere (a HAR
/// entry of a 50 GB "video" with no body) must not become an allocation. Importers cap
/// what they are told with a warning; an archive with more is refused.
pub const MAX_SYNTHETIC: usize = 256 << 20;

/// Deterministic filler bytes for a synthetic body (same size and id → same bytes).
pub fn synthetic_body(id: usize, size: usize) -> Bytes {
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (id as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let mut v = Vec::with_capacity(size);
    while v.len() < size {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let take = (size - v.len()).min(8);
        v.extend_from_slice(&x.to_le_bytes()[..take]);
    }
    Bytes::from(v)
}

impl Archive {
    /// An empty archive.
    pub fn new(source: &str) -> Archive {
        Archive {
            format: FORMAT_VERSION,
            source: source.into(),
            ..Default::default()
        }
    }

    /// Adds an object (its id is set here) with its body; returns the id.
    pub fn add_object(&mut self, mut o: Object, body: Option<Bytes>) -> usize {
        let id = self.objects.len();
        o.id = id;
        if let Some(b) = body {
            o.body = BodySource::Stored {
                sha256: hex::encode(Sha256::digest(&b)),
                size: b.len(),
            };
            self.bodies.insert(id, b);
        }
        self.objects.push(o);
        id
    }

    /// The body of an object (stored bytes, or synthetic filler).
    pub fn body(&self, id: usize) -> Bytes {
        if let Some(b) = self.bodies.get(&id) {
            return b.clone();
        }
        synthetic_body(id, self.objects[id].body.size())
    }

    /// Finds a page by name.
    pub fn page(&self, name: &str) -> Option<&Page> {
        self.pages.iter().find(|p| p.name == name)
    }

    /// Writes `DIR/archive.json` and `DIR/bodies/`.
    pub fn save(&self, dir: &Path) -> Result<(), ArchiveError> {
        let bodies = dir.join("bodies");
        std::fs::create_dir_all(&bodies).map_err(io_err(&bodies))?;
        for (id, b) in &self.bodies {
            if let BodySource::Stored { sha256, .. } = &self.objects[*id].body {
                let p = bodies.join(sha256);
                if !p.exists() {
                    std::fs::write(&p, b).map_err(io_err(&p))?;
                }
            }
        }
        let p = dir.join("archive.json");
        let json = serde_json::to_vec_pretty(self).map_err(|e| ArchiveError::Invalid {
            path: p.clone(),
            reason: e.to_string(),
        })?;
        std::fs::write(&p, json).map_err(io_err(&p))
    }

    /// Reads an archive and its stored bodies, checking every reference.
    pub fn load(dir: &Path) -> Result<Archive, ArchiveError> {
        let mut a = Archive::load_objects(dir)?;
        for o in &a.objects {
            if let BodySource::Stored { sha256, size } = &o.body {
                let bp = dir.join("bodies").join(sha256);
                let b = std::fs::read(&bp).map_err(io_err(&bp))?;
                if b.len() != *size || hex::encode(Sha256::digest(&b)) != *sha256 {
                    return Err(ArchiveError::Invalid {
                        path: bp,
                        reason: format!(
                            "object {} ({}): body does not match its sha256/size",
                            o.id, o.url
                        ),
                    });
                }
                a.bodies.insert(o.id, Bytes::from(b));
            }
        }
        Ok(a)
    }

    /// Reads an archive's pages and objects, checking every reference, but not its
    /// stored bodies ([`Archive::bodies`] stays empty): what a client that only needs the
    /// object list (the loader) reads. A lab's corpus holds every page's bodies (13 MB
    /// for the whitepaper's 25 pages); reading and hashing all of them cost each load
    /// tens of milliseconds of CPU.
    pub fn load_objects(dir: &Path) -> Result<Archive, ArchiveError> {
        let p = dir.join("archive.json");
        let text = std::fs::read(&p).map_err(io_err(&p))?;
        let bad = |reason: String| ArchiveError::Invalid {
            path: p.clone(),
            reason,
        };
        let a: Archive =
            serde_json::from_slice(&text).map_err(|e| bad(format!("not a speedy archive: {e}")))?;
        if a.format != FORMAT_VERSION {
            return Err(bad(format!(
                "format {} (this speedy reads {FORMAT_VERSION})",
                a.format
            )));
        }
        a.validate().map_err(bad)?;
        Ok(a)
    }

    /// Checks ids, parents and pages; the error names the entry.
    pub fn validate(&self) -> Result<(), String> {
        for (i, o) in self.objects.iter().enumerate() {
            if o.id != i {
                return Err(format!("objects[{i}] has id {}", o.id));
            }
            if !(o.url.starts_with("http://") || o.url.starts_with("https://")) {
                return Err(format!(
                    "objects[{i}]: url {:?} is not absolute http(s)",
                    o.url
                ));
            }
            if let BodySource::Synthetic { size } = o.body {
                if size > MAX_SYNTHETIC {
                    return Err(format!(
                        "objects[{i}] ({}): a synthetic body of {size} bytes (filler is made \
                         whole for each response: at most {MAX_SYNTHETIC} bytes)",
                        o.url
                    ));
                }
            }
            if let Some(p) = o.discovery.parent() {
                if p >= self.objects.len() || p == i {
                    return Err(format!(
                        "objects[{i}] ({}): parent {p} does not exist",
                        o.url
                    ));
                }
            }
        }
        for (pi, page) in self.pages.iter().enumerate() {
            if page.root >= self.objects.len() {
                return Err(format!(
                    "pages[{pi}] ({}): root {} does not exist",
                    page.name, page.root
                ));
            }
            if let Some(bad) = page.objects.iter().find(|&&o| o >= self.objects.len()) {
                return Err(format!(
                    "pages[{pi}] ({}): object {bad} does not exist",
                    page.name
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_bodies_are_deterministic() {
        assert_eq!(synthetic_body(3, 1000), synthetic_body(3, 1000));
        assert_ne!(synthetic_body(3, 1000), synthetic_body(4, 1000));
        assert_eq!(synthetic_body(5, 13).len(), 13);
    }
}
