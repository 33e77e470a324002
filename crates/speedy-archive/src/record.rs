//! What a recording proxy keeps of each exchange (`speedy proxy --record FILE`): one
//! [`Exchange`] per request and its response, one JSON line each in FILE, and each body,
//! as the origin delivered it (transfer coding removed, content coding kept), in
//! `bodies/<sha256>` beside FILE, the archive's own layout. The proxy (speedy-server)
//! writes them and `speedy corpus record` (the import, [`crate::import::import_visits`])
//! reads them: the type is defined here, below both (docs/contract.md).
//!
//! A line is versioned ([`RECORD_VERSION`]; a line without a version reads as 1, a newer
//! one is refused by name). Times are milliseconds: `started_ms` of the wall clock (since
//! the Unix epoch), the others durations measured by the proxy.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use speedy_records::version::{self, Versioned};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The version of [`Exchange`] lines this build writes and the newest it reads.
pub const RECORD_VERSION: u32 = 1;

/// One request and its response, as a recording proxy saw them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// The line's format version ([`RECORD_VERSION`]).
    #[serde(default = "version::first")]
    pub version: u32,
    /// When the request arrived at the proxy, ms since the Unix epoch.
    pub started_ms: f64,
    /// The request method.
    pub method: String,
    /// The absolute URL (`https://` for requests inside a CONNECT the proxy terminated).
    pub url: String,
    /// The request's headers (lower-case names, no pseudo-headers), in the order the
    /// client's connection gave them.
    pub request_headers: Vec<(String, String)>,
    /// How the client spoke to the proxy (`http/1.1`, `h2`, `spdy/3.1`).
    pub client_protocol: String,
    /// The response status (the proxy's own when `error` is set).
    pub status: u16,
    /// The origin's response headers (lower-case names, no pseudo-headers), in the order
    /// they came.
    pub response_headers: Vec<(String, String)>,
    /// The body as delivered; absent when the origin sent no response (`error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<StoredBody>,
    /// The origin's address and port the proxy connected to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<SocketAddr>,
    /// The protocol negotiated with the origin, as an ALPN id (`http/1.1`, `h2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// From sending the request to the origin to its response's first byte (the head).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_ms: Option<f64>,
    /// From the response's first byte to its last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer_ms: Option<f64>,
    /// Set when the proxy answered itself (no address, refused, timed out): why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A recorded body: the file `bodies/<sha256>` beside the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredBody {
    /// Hex SHA-256 of the bytes (the file's name).
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
    /// Whether the body is whole: false when the origin's connection failed before its
    /// end, the client gave up on it, or it was larger than the proxy keeps.
    pub complete: bool,
}

impl Versioned for Exchange {
    const NAME: &'static str = "a recorded exchange";
    const CURRENT: u32 = RECORD_VERSION;
    fn version(&self) -> u32 {
        self.version
    }
}

impl Exchange {
    /// The line as written (JSON, no newline).
    pub fn line(&self) -> String {
        serde_json::to_string(self).expect("an exchange is plain data")
    }
}

/// Writes `bytes` to `dir/bodies/<sha256>` unless that file is there already (through a
/// temporary name, so a reader never sees half of it); returns the hex SHA-256.
pub fn store_body(dir: &Path, bytes: &[u8]) -> std::io::Result<String> {
    let sha = hex::encode(Sha256::digest(bytes));
    let bodies = dir.join("bodies");
    let path = bodies.join(&sha);
    if path.exists() {
        return Ok(sha);
    }
    std::fs::create_dir_all(&bodies)?;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = bodies.join(format!(".{sha}.{}-{n}", std::process::id()));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    drop(f);
    std::fs::rename(&tmp, &path)?;
    Ok(sha)
}

/// Reads the body `b` from `dir/bodies/`, checking its size and hash.
pub fn read_body(dir: &Path, b: &StoredBody) -> Result<Bytes, String> {
    let path = dir.join("bodies").join(&b.sha256);
    let data = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    if data.len() as u64 != b.size || hex::encode(Sha256::digest(&data)) != b.sha256 {
        return Err(format!(
            "{}: the file does not match its recorded sha256 and size ({} bytes)",
            path.display(),
            b.size
        ));
    }
    Ok(Bytes::from(data))
}

/// A recording's log read whole: its exchanges in the order written, and the directory
/// their bodies are under.
#[derive(Clone, Debug)]
pub struct Log {
    /// The directory of the log (bodies in `bodies/` there).
    pub dir: PathBuf,
    /// The exchanges, in the order the proxy finished them.
    pub exchanges: Vec<Exchange>,
}

/// Reads a log of exchange lines; an error names the file and the line (1-based). A
/// missing file is an empty log (a proxy that saw no request writes none).
pub fn read_log(path: &Path) -> Result<Log, String> {
    let dir = path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut exchanges = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let e: Exchange =
            version::read(line).map_err(|e| format!("{}: line {}: {e}", path.display(), i + 1))?;
        exchanges.push(e);
    }
    Ok(Log { dir, exchanges })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Exchange {
        Exchange {
            version: RECORD_VERSION,
            started_ms: 1_700_000_000_123.5,
            method: "GET".into(),
            url: "https://www.site.test/app.js?v=2".into(),
            request_headers: vec![
                ("user-agent".into(), "HeadlessChrome".into()),
                ("accept".into(), "*/*".into()),
            ],
            client_protocol: "h2".into(),
            status: 200,
            response_headers: vec![
                ("content-type".into(), "text/javascript".into()),
                ("content-encoding".into(), "gzip".into()),
            ],
            body: Some(StoredBody {
                sha256: "00".repeat(32),
                size: 1234,
                complete: true,
            }),
            addr: Some("127.0.0.2:8443".parse().unwrap()),
            protocol: Some("h2".into()),
            first_byte_ms: Some(12.25),
            transfer_ms: Some(3.5),
            error: None,
        }
    }

    #[test]
    fn exchange_lines_round_trip_and_keep_header_order() {
        let e = sample();
        let line = e.line();
        assert!(!line.contains('\n'));
        let back: Exchange = version::read(&line).unwrap();
        assert_eq!(back, e);
        let pos = |n: &str| line.find(n).unwrap();
        assert!(pos("user-agent") < pos("\"accept\""), "{line}");
        // A proxy's own answer: no body, address or protocol; the reason kept.
        let failed = Exchange {
            status: 502,
            body: None,
            addr: None,
            protocol: None,
            first_byte_ms: None,
            transfer_ms: None,
            response_headers: Vec::new(),
            error: Some("no address for www.site.test".into()),
            ..sample()
        };
        let back: Exchange = version::read(&failed.line()).unwrap();
        assert_eq!(back, failed);
        assert!(!failed.line().contains("\"addr\""));
    }

    #[test]
    fn versions_are_checked_and_lines_named() {
        let mut v = serde_json::to_value(sample()).unwrap();
        v.as_object_mut().unwrap().remove("version");
        let old: Exchange = version::read(&v.to_string()).unwrap();
        assert_eq!(old.version, 1);
        v["version"] = 2.into();
        let e = version::read::<Exchange>(&v.to_string()).unwrap_err();
        assert!(e.contains("a recorded exchange of version 2"), "{e}");
        let dir = std::env::temp_dir().join(format!("speedy-record-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("exchanges.jsonl");
        std::fs::write(&p, format!("{}\n{{\"url\":1}}\n", sample().line())).unwrap();
        let e = read_log(&p).unwrap_err();
        assert!(
            e.contains("exchanges.jsonl: line 2: a recorded exchange"),
            "{e}"
        );
        assert!(read_log(&dir.join("none.jsonl"))
            .unwrap()
            .exchanges
            .is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bodies_are_stored_once_by_hash_and_checked_when_read() {
        let dir = std::env::temp_dir().join(format!("speedy-record-body-{}", std::process::id()));
        let sha = store_body(&dir, b"hello").unwrap();
        assert_eq!(sha, store_body(&dir, b"hello").unwrap());
        let b = StoredBody {
            sha256: sha.clone(),
            size: 5,
            complete: true,
        };
        assert_eq!(&read_body(&dir, &b).unwrap()[..], b"hello");
        std::fs::write(dir.join("bodies").join(&sha), b"hellO").unwrap();
        assert!(read_body(&dir, &b).unwrap_err().contains("does not match"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
