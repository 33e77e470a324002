//! The recording proxy's half of its work (`speedy proxy --record FILE`): terminating TLS
//! inside CONNECT tunnels with certificates from a lab CA, and writing every exchange.
//!
//! - **CONNECT**: instead of a blind tunnel the proxy answers 200 and becomes the origin
//!   to the client ([`Recorder::intercept`]): a TLS server (ALPN `h2`, `http/1.1`) whose
//!   certificate names the CONNECT host, issued by the CA in `--record-ca` (one leaf per
//!   host, made once and kept), serving the requests inside with the same handler as
//!   plain proxied ones (`speedy_net::server::serve_tls`).
//! - **Exchanges**: each request's [`Capture`] keeps the response body as the origin
//!   delivers it (transfer coding removed by the client, content coding kept) while the
//!   body streams on to the client; when the origin's body ends, the body goes to
//!   `bodies/<sha256>` beside the log and the line ([`Exchange`]) is appended.

use bytes::Bytes;
use speedy_archive::record::{store_body, Exchange, StoredBody, RECORD_VERSION};
use speedy_net::server::{Handler, ServerConfig};
use speedy_net::Body;
use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// The largest body kept whole; past it the rest streams on unrecorded and the body is
/// marked not whole.
pub const MAX_RECORDED_BODY: usize = 256 << 20;

/// The protocols offered to clients inside a terminated CONNECT, preferred first (what a
/// browser meets at a real https origin).
const INNER_ALPN: [&str; 2] = ["h2", "http/1.1"];

/// Where exchanges are written and how CONNECT tunnels are terminated.
pub struct Recorder {
    log: Mutex<std::fs::File>,
    /// The log's directory: bodies go under `bodies/` there.
    dir: PathBuf,
    ca_dir: PathBuf,
    /// One TLS server configuration per CONNECT host (its leaf certificate).
    leaves: Mutex<HashMap<String, Arc<rustls::ServerConfig>>>,
    /// The settings of the connections served inside tunnels.
    server: ServerConfig,
    /// Exchanges begun and not yet written.
    inflight: Arc<AtomicUsize>,
}

/// An exchange being recorded, counted in [`Recorder::inflight`] until dropped.
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Recorder {
    /// Opens (appends to) the log `path`, creates `bodies/` beside it and loads (or
    /// creates) the CA in `ca_dir`. Errors name the file or directory.
    pub fn open(path: &Path, ca_dir: &Path) -> Result<Recorder, String> {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let bodies = dir.join("bodies");
        std::fs::create_dir_all(&bodies).map_err(|e| format!("{}: {e}", bodies.display()))?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // The CA now, so that a bad directory is said at start, not at the first CONNECT.
        crate::ca::issue(ca_dir, &[]).map_err(|e| format!("{}: {e}", ca_dir.display()))?;
        Ok(Recorder {
            log: Mutex::new(log),
            dir,
            ca_dir: ca_dir.to_path_buf(),
            leaves: Mutex::new(HashMap::new()),
            server: ServerConfig::default(),
            inflight: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Waits (at most `limit`) until every exchange begun is written: the bodies that
    /// the origins were still sending when the clients had gone. True if none is left.
    pub async fn settle(&self, limit: Duration) -> bool {
        let end = tokio::time::Instant::now() + limit;
        while self.inflight.load(Ordering::Acquire) > 0 {
            if tokio::time::Instant::now() >= end {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }

    /// The TLS server configuration for `host` (a leaf from the CA, made on first use).
    fn tls_for(&self, host: &str) -> Result<Arc<rustls::ServerConfig>, String> {
        let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
        let mut leaves = self
            .leaves
            .lock()
            .map_err(|_| "the certificate cache failed")?;
        if let Some(c) = leaves.get(&host) {
            return Ok(c.clone());
        }
        let (certs, key) = crate::ca::issue(&self.ca_dir, std::slice::from_ref(&host))?;
        let cfg = speedy_net::tls::server_config(certs, key, &INNER_ALPN)?;
        leaves.insert(host, cfg.clone());
        Ok(cfg)
    }

    /// Terminates a CONNECT tunnel to `host`: `up` is what the client sends once it has
    /// the 200, the returned body what goes back to it. The TLS server inside answers
    /// with `handler` (the proxy itself) until either side closes.
    pub fn intercept(
        self: &Arc<Self>,
        host: &str,
        up: Body,
        handler: Arc<dyn Handler>,
    ) -> Result<Body, String> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let tls = self.tls_for(host)?;
        let (inside, outside) = tokio::io::duplex(64 * 1024);
        let me = self.clone();
        tokio::spawn(async move {
            let peer = SocketAddr::from(([127, 0, 0, 1], 0));
            // A client that goes away mid-handshake or mid-stream is no news here.
            let _ = speedy_net::server::serve_tls(inside, peer, tls, &me.server, handler).await;
        });
        let (mut rd, mut wr) = tokio::io::split(outside);
        tokio::spawn(async move {
            let _ = up.copy_to(&mut wr).await;
            let _ = wr.shutdown().await;
        });
        let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Bytes>>(16);
        tokio::spawn(async move {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                match rd.read(&mut buf).await {
                    Ok(0) => break,
                    Ok(n) => {
                        if tx
                            .send(Ok(Bytes::copy_from_slice(&buf[..n])))
                            .await
                            .is_err()
                        {
                            break;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        break;
                    }
                }
            }
        });
        let stream =
            futures_util::stream::unfold(
                rx,
                |mut rx| async move { rx.recv().await.map(|c| (c, rx)) },
            );
        Ok(Body::stream(stream, None))
    }

    /// Appends one exchange's line.
    fn write(&self, e: &Exchange) {
        let line = e.line();
        match self.log.lock() {
            Ok(mut f) => {
                if let Err(err) = writeln!(f, "{line}") {
                    eprintln!("speedy proxy: --record: {}: {err}", e.url);
                }
            }
            Err(_) => eprintln!("speedy proxy: --record: {}: the log failed", e.url),
        }
    }

    /// Records a request the proxy answered itself (`status`, `why`): no origin response.
    pub fn failed(&self, asked: &Asked, status: u16, why: &str) {
        let mut e = asked.exchange(status);
        e.error = Some(why.to_string());
        self.write(&e);
    }
}

/// What is known of a request when it arrives.
#[derive(Clone, Debug)]
pub struct Asked {
    started: SystemTime,
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    client_protocol: &'static str,
}

impl Asked {
    /// The request `method url` with `headers` (pseudo-headers are left out), arriving
    /// now over `client_protocol`.
    pub fn new(
        method: &str,
        url: &str,
        headers: &spdy::Headers,
        client_protocol: &'static str,
    ) -> Asked {
        let headers = headers
            .iter()
            .filter(|(n, _)| !n.starts_with(b":"))
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect();
        Asked {
            started: SystemTime::now(),
            method: method.to_string(),
            url: url.to_string(),
            headers,
            client_protocol,
        }
    }

    /// The exchange so far: the request, and `status`.
    fn exchange(&self, status: u16) -> Exchange {
        let started_ms = self
            .started
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1e3);
        Exchange {
            version: RECORD_VERSION,
            started_ms,
            method: self.method.clone(),
            url: self.url.clone(),
            request_headers: self.headers.clone(),
            client_protocol: self.client_protocol.to_string(),
            status,
            response_headers: Vec::new(),
            body: None,
            addr: None,
            protocol: None,
            first_byte_ms: None,
            transfer_ms: None,
            error: None,
        }
    }
}

/// One exchange being recorded while its response body streams through.
pub struct Capture {
    recorder: Arc<Recorder>,
    exchange: Exchange,
    body: Vec<u8>,
    overflow: bool,
    _inflight: InFlight,
}

/// What the origin's response said, for [`Capture::new`].
pub struct Answered<'a> {
    /// Status.
    pub status: u16,
    /// The origin's headers, as they came.
    pub headers: &'a spdy::Headers,
    /// The origin's address.
    pub addr: SocketAddr,
    /// The protocol negotiated with it.
    pub protocol: &'static str,
    /// From sending the request to the response's head.
    pub first_byte: Duration,
}

impl Capture {
    /// Starts recording the response `r` to `asked`.
    pub fn new(recorder: Arc<Recorder>, asked: &Asked, r: Answered) -> Capture {
        let mut exchange = asked.exchange(r.status);
        exchange.response_headers = r
            .headers
            .iter()
            .filter(|(n, _)| !n.starts_with(b":"))
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect();
        exchange.addr = Some(r.addr);
        exchange.protocol = Some(r.protocol.to_string());
        exchange.first_byte_ms = Some(ms(r.first_byte));
        recorder.inflight.fetch_add(1, Ordering::AcqRel);
        let inflight = InFlight(recorder.inflight.clone());
        Capture {
            recorder,
            exchange,
            body: Vec::new(),
            overflow: false,
            _inflight: inflight,
        }
    }

    /// Whether the body went past [`MAX_RECORDED_BODY`]: nothing more is kept.
    pub fn full(&self) -> bool {
        self.overflow
    }

    /// A piece of the body, as it came.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.body.len() + chunk.len() > MAX_RECORDED_BODY {
            self.overflow = true;
            return;
        }
        self.body.extend_from_slice(chunk);
    }

    /// The body ended (`complete`: the origin's end, not a failure or the client giving
    /// up) `transfer` after its first byte: stores it and writes the line, off the
    /// runtime's threads.
    pub fn finish(mut self, complete: bool, transfer: Duration) {
        self.exchange.transfer_ms = Some(ms(transfer));
        tokio::task::spawn_blocking(move || {
            let rec = &self.recorder;
            match store_body(&rec.dir, &self.body) {
                Ok(sha256) => {
                    self.exchange.body = Some(StoredBody {
                        sha256,
                        size: self.body.len() as u64,
                        complete: complete && !self.overflow,
                    })
                }
                Err(e) => {
                    self.exchange.error = Some(format!("storing the body: {e}"));
                }
            }
            rec.write(&self.exchange);
        });
    }
}

/// Milliseconds, to the microsecond.
fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}
