//! A forward proxy as a [`Handler`]: whatever protocol the client spoke to us (SPDY/3.1
//! as Chrome's SPDY proxy, HTTP/1.1 with absolute-form requests, h2), each request goes
//! to its origin over a pooled, persistent connection (HTTP/1.1 by default, SPDY/3.1 on
//! request; ALPN over TLS), and the response streams back as it arrives.
//!
//! Per request it records the times of the cellular study's Fig 8 (Erman et al.),
//! relative to the request's arrival: the first byte from the origin (response headers),
//! the last byte from the origin, and the last byte handed to the client's connection
//! (queued for sending, not acknowledged). They go to a JSON-lines log.
//!
//! Bodies: responses stream through a bounded buffer ([`BUFFER_CHUNKS`] pieces of at
//! most [`PIECE`] bytes, 1 MiB) filled
//! by a task that reads the origin as fast as it sends, so the origin-side times are
//! the origin's and a slow client holds the origin back by flow control. Request bodies
//! are read whole before forwarding (page loads upload little), and `max_body` bounds
//! what they hold, each alone (over it: 413) and all of them at once (a request whose
//! body would take the total past it gets 503): four clients uploading endless bodies
//! made the proxy hold 64 MiB each (tests/abuse_h3_proxy.rs).
//!
//! Access: every request's target (host and port; CONNECT's as much as an origin's) must
//! be allowed first ([`ProxyOptions::permits`]: a `--resolve` entry or an `--allow` rule,
//! [`crate::allow`]); any other gets 403 with the reason in its body, on its own stream
//! (SPDY, h2: the connection goes on serving the others). A host that is not a plain
//! name or an address in its usual form gets 400.
//!
//! CONNECT (HTTP/1.1; how a browser reaches an https origin through an HTTP proxy)
//! opens a TCP connection to the target, found as any origin is, and
//! copies bytes both ways through the same bounded buffer until either side ends. A
//! tunnel's log line has method `CONNECT`, the target as `url`, origin protocol `tcp`,
//! and the time the target accepted the connection as its first byte from the origin.
//!
//! Recording ([`Proxy::recording`], `--record`): every exchange is written by a
//! [`Recorder`], and CONNECT is no blind tunnel: the proxy answers 200, terminates the
//! client's TLS itself with a certificate for the target from the recording CA, and
//! forwards the requests inside as any other ([`crate::recorder`]).

use crate::allow::{refusal, Allow, Host};
use crate::recorder::{Answered, Asked, Capture, Recorder};
use bytes::Bytes;
use speedy_net::client::{Client, ClientConfig, ClientError, ClientRequest, Protocol};
use speedy_net::server::{Handler, Request, Response, ResponseFuture};
use speedy_net::Body;
use speedy_net::ResponseStream;
use std::collections::HashMap;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Chunks of a response held between the origin and the client.
pub const BUFFER_CHUNKS: usize = 64;

/// The largest piece of a response in that buffer: an origin's body comes in chunks as
/// large as its connection's reads (hyper's grow to hundreds of KiB), so whole chunks
/// made the buffer of a client that does not read hold 20 MiB (tests/abuse_h3_proxy.rs:
/// 8 such clients, 171 MiB); in pieces it holds at most 1 MiB.
pub const PIECE: usize = 16 * 1024;

/// How the proxy reaches origins, and which it may reach.
#[derive(Clone)]
pub struct ProxyOptions {
    /// (host, port if the entry names one) → address, the port defaulting to the
    /// request's (`--resolve HOST[:PORT]=IP[:PORT]`). Every host named here is allowed
    /// (at the entry's port, if it names one).
    pub resolve: HashMap<(Host, Option<u16>), (IpAddr, Option<u16>)>,
    /// Where every host not in `resolve` goes (`--resolve '*=IP:PORT'`); with it every
    /// host is allowed (the lab's proxies: there is nowhere else to go).
    pub fallback: Option<(IpAddr, Option<u16>)>,
    /// The `--allow` rules: hosts allowed besides those of `resolve`. One that `resolve`
    /// does not name is looked up with the system's resolver (an address: as it is).
    pub allow: Allow,
    /// Protocol towards plain-http origins (default HTTP/1.1); TLS origins use ALPN
    /// unless this forces one.
    pub upstream: Option<Protocol>,
    /// Client settings for the origin connections (certificate checking, SPDY settings).
    pub client: ClientConfig,
    /// No response headers from the origin within this: 504.
    pub timeout: Duration,
    /// Largest request body forwarded, and the most request-body bytes all requests
    /// together hold at once (see the module doc).
    pub max_body: usize,
}

impl ProxyOptions {
    /// Whether a client may reach `host` at `port`: `resolve` names it (or has a `*`
    /// entry), or an `allow` rule does.
    pub fn permits(&self, host: &Host, port: u16) -> bool {
        self.fallback.is_some()
            || self.resolve.contains_key(&(host.clone(), Some(port)))
            || self.resolve.contains_key(&(host.clone(), None))
            || self.allow.permits(host, port)
    }

    /// The `resolve` entry for `host` at `port`: the one naming that port first.
    fn resolved(&self, host: &Host, port: u16) -> Option<(IpAddr, Option<u16>)> {
        let key = (host.clone(), Some(port));
        self.resolve
            .get(&key)
            .or_else(|| self.resolve.get(&(key.0, None)))
            .copied()
    }
}

/// A request's target once allowed: the host as the request spelled it (what the
/// origin connection names: SNI, `Host`), in its normal form, and the port.
struct Target {
    name: String,
    host: Host,
    port: u16,
}

/// The proxy handler; see the module doc.
pub struct Proxy(Arc<Inner>);

struct Inner {
    opts: ProxyOptions,
    /// Request-body bytes held now, out of `opts.max_body` (one permit a byte).
    bodies: Arc<tokio::sync::Semaphore>,
    /// Origin connections and the address each was dialled at, by `scheme://host:port`.
    pool: tokio::sync::Mutex<HashMap<String, (Arc<Client>, SocketAddr)>>,
    log: Option<Mutex<std::fs::File>>,
    record: Option<Arc<Recorder>>,
}

impl Proxy {
    /// A proxy with `opts`, appending one JSON line per request to `log` if given.
    pub fn new(opts: ProxyOptions, log: Option<std::fs::File>) -> Proxy {
        Proxy::recording(opts, log, None)
    }

    /// [`Proxy::new`] that, given a recorder, records every exchange and terminates
    /// CONNECT tunnels to record what goes through them (see the module doc).
    pub fn recording(
        opts: ProxyOptions,
        log: Option<std::fs::File>,
        record: Option<Arc<Recorder>>,
    ) -> Proxy {
        let budget = opts.max_body.min(tokio::sync::Semaphore::MAX_PERMITS);
        Proxy(Arc::new(Inner {
            bodies: Arc::new(tokio::sync::Semaphore::new(budget)),
            opts,
            pool: tokio::sync::Mutex::new(HashMap::new()),
            log: log.map(Mutex::new),
            record,
        }))
    }
}

/// An origin's response head, and where and when it came from.
struct Got {
    upstream: ResponseStream,
    protocol: &'static str,
    addr: SocketAddr,
    /// When the request went to the origin.
    sent: Instant,
}

impl Inner {
    /// Appends one line to the log, if there is one.
    fn log(&self, line: String) {
        if let Some(f) = &self.log {
            if let Ok(mut f) = f.lock() {
                let _ = writeln!(f, "{line}");
            }
        }
    }

    /// Where an allowed target is reached: its `--resolve` entry, the `*` entry, its
    /// address, or what the system's resolver says of its name.
    async fn address(&self, t: &Target) -> Result<SocketAddr, String> {
        if let Some((ip, p)) = self.opts.resolved(&t.host, t.port).or(self.opts.fallback) {
            return Ok(SocketAddr::new(ip, p.unwrap_or(t.port)));
        }
        match &t.host {
            Host::Ip(ip) => Ok(SocketAddr::new(*ip, t.port)),
            Host::Name(n) => tokio::net::lookup_host((n.as_str(), t.port))
                .await
                .map_err(|e| format!("no address for {n}: {e}"))?
                .next()
                .ok_or_else(|| format!("no address for {n}")),
        }
    }

    /// Checks a request's target and hands it to [`Inner::tunnel`] (CONNECT) or
    /// [`Inner::forward`]: 400 for a target that names no host (or, for CONNECT, no
    /// port) or not a plain one, 403 for one not allowed.
    async fn route(self: Arc<Self>, req: Request) -> Response {
        let connect = req.method == "CONNECT";
        let default_port = match (connect, req.scheme.as_str()) {
            (true, _) => 0,
            (false, "https") => 443,
            (false, _) => 80,
        };
        let (name, port) = split_host(&req.host, default_port);
        if connect && (name.is_empty() || port == 0) {
            return error(400, "CONNECT needs a host:port target");
        }
        if name.is_empty() {
            return error(400, "the request names no host (absolute-form or :host)");
        }
        let host = match Host::parse(&name) {
            Ok(h) => h,
            Err(e) => return error(400, &format!("bad target: {e}")),
        };
        if !self.opts.permits(&host, port) {
            return error(403, &refusal(&host, port));
        }
        let target = Target { name, host, port };
        if connect {
            self.tunnel(req, target).await
        } else {
            self.forward(req, target).await
        }
    }

    /// The pooled connection to an origin and its address, dialled if there is none
    /// (`fresh`: replace the pooled one, which failed).
    async fn client(
        &self,
        scheme: &str,
        t: &Target,
        fresh: bool,
    ) -> Result<(Arc<Client>, SocketAddr), String> {
        let (host, port) = (t.name.as_str(), t.port);
        let key = format!("{scheme}://{host}:{port}");
        let mut pool = self.pool.lock().await;
        if !fresh {
            if let Some(c) = pool.get(&key) {
                return Ok(c.clone());
            }
        }
        let addr = self.address(t).await?;
        let mut cfg = self.opts.client.clone();
        cfg.connect_to = Some(addr);
        cfg.protocol = match (scheme, self.opts.upstream) {
            (_, Some(p)) => Some(p),
            ("http", None) => Some(Protocol::Http1),
            _ => None,
        };
        let c = Arc::new(
            Client::connect(scheme, host, port, &cfg)
                .await
                .map_err(|e| format!("{key} ({addr}): {e}"))?,
        );
        pool.insert(key, (c.clone(), addr));
        Ok((c, addr))
    }

    /// A request to an origin; see the module doc.
    async fn forward(self: Arc<Self>, mut req: Request, target: Target) -> Response {
        let t0 = Instant::now();
        let scheme = req.scheme.clone();
        let url = format!("{scheme}://{}{}", req.host, req.path);
        let asked = (self.record.as_ref())
            .map(|_| Asked::new(&req.method, &url, &req.headers, req.protocol));
        let fail = |status: u16, why: String| {
            if let (Some(r), Some(a)) = (&self.record, &asked) {
                r.failed(a, status, &why);
            }
            error(status, &why)
        };
        let body = std::mem::take(&mut req.body);
        // Held until the origin has answered: the request has gone by then.
        let (body, _held) = match self.collect(body).await {
            Ok(b) => b,
            Err((status, why)) => return fail(status, why),
        };
        let creq = ClientRequest {
            method: req.method.clone(),
            path: req.path.clone(),
            headers: end_to_end(&req.headers),
            body,
            priority: req.priority.unwrap_or(3),
        };
        let got = match self.exchange(&scheme, &target, creq, &url).await {
            Ok(g) => g,
            Err((status, why)) => return fail(status, why),
        };
        let first_byte = t0.elapsed();
        let Got {
            upstream,
            protocol,
            addr,
            sent,
        } = got;
        let status = upstream.status;
        let len = upstream.body.len();
        let headers = response_headers(&upstream.headers);
        let capture = match (&self.record, &asked) {
            (Some(r), Some(a)) => {
                let answered = Answered {
                    status,
                    headers: &upstream.headers,
                    addr,
                    protocol,
                    first_byte: sent.elapsed(),
                };
                Some(Capture::new(r.clone(), a, answered))
            }
            _ => None,
        };
        // The origin is read by its own task into a bounded buffer; the client's side
        // pulls from it.
        let (tx, rx) = mpsc::channel::<std::io::Result<Bytes>>(BUFFER_CHUNKS);
        let record = Record {
            url,
            method: req.method.clone(),
            status,
            client_protocol: req.protocol,
            origin_protocol: protocol,
            first_byte,
            t0,
        };
        let origin_done = Arc::new(OriginProgress::default());
        tokio::spawn(pump(upstream.body, tx, origin_done.clone(), t0, capture));
        // The line is written when the client's side is done with the body: at its end,
        // or when the server drops it (HTTP/1.1 stops at content-length).
        let guard = LogOnDrop {
            record,
            origin: origin_done,
            proxy: self.clone(),
        };
        Response {
            status,
            headers,
            body: Body::stream(logged(rx, guard), len),
            ..Default::default()
        }
    }

    /// Reads a request body whole, its bytes counted against what all requests may hold
    /// at once (see the module doc); an error is the status and words the client gets:
    /// 413 for a body over `max_body` alone, 503 for one the others leave no room for,
    /// 408 for one that stalls.
    async fn collect(
        &self,
        mut body: Body,
    ) -> Result<(Bytes, Option<tokio::sync::OwnedSemaphorePermit>), (u16, String)> {
        let max = self.opts.max_body;
        let too_large = || (413, format!("request body: over the limit of {max} bytes"));
        let mut held: Option<tokio::sync::OwnedSemaphorePermit> = None;
        let mut hold = |n: usize| {
            let p = u32::try_from(n)
                .ok()
                .and_then(|n| self.bodies.clone().try_acquire_many_owned(n).ok())
                .ok_or_else(|| {
                    let why = format!(
                        "busy: the request bodies held at once are at their limit of {max} bytes"
                    );
                    (503, why)
                })?;
            match &mut held {
                Some(h) => h.merge(p),
                None => held = Some(p),
            }
            Ok::<_, (u16, String)>(())
        };
        if let Some(b) = body.take_full() {
            if b.len() > max {
                return Err(too_large());
            }
            hold(b.len())?;
            return Ok((b, held));
        }
        let declared = body.len().unwrap_or(0);
        if declared > max as u64 {
            return Err(too_large());
        }
        let mut out = bytes::BytesMut::with_capacity(declared as usize);
        while let Some(c) = body.chunk().await {
            let c = match c {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    return Err((408, format!("request body: {e}")))
                }
                Err(e) => return Err((413, format!("request body: {e}"))),
            };
            if out.len() + c.len() > max {
                return Err(too_large());
            }
            hold(c.len())?;
            out.extend_from_slice(&c);
        }
        Ok((out.freeze(), held))
    }

    /// Sends a request to its origin on the pooled connection (once more on a new one
    /// when the pooled one turns out closed) and waits for the response's head; an
    /// error is the status and words the client gets.
    async fn exchange(
        &self,
        scheme: &str,
        target: &Target,
        creq: ClientRequest,
        url: &str,
    ) -> Result<Got, (u16, String)> {
        let (host, port) = (target.name.as_str(), target.port);
        let mut fresh = false;
        loop {
            let (client, addr) = self
                .client(scheme, target, fresh)
                .await
                .map_err(|e| (502, format!("bad gateway: {e}")))?;
            let sent = Instant::now();
            match tokio::time::timeout(self.opts.timeout, client.request(creq.clone())).await {
                Err(_) => {
                    let t = self.opts.timeout;
                    let why = format!("gateway timeout: no response from {host}:{port} in {t:?}");
                    return Err((504, why));
                }
                // A pooled connection the origin closed: once more on a new one.
                Ok(Err(ClientError::Closed | ClientError::NotProcessed)) if !fresh => {
                    fresh = true;
                }
                Ok(Err(e)) => return Err((502, format!("bad gateway: {url}: {e}"))),
                Ok(Ok(upstream)) => {
                    return Ok(Got {
                        upstream,
                        protocol: client.protocol(),
                        addr,
                        sent,
                    })
                }
            }
        }
    }

    /// A CONNECT tunnel; see the module doc.
    async fn tunnel(self: Arc<Self>, mut req: Request, target: Target) -> Response {
        use tokio::io::AsyncReadExt;
        if let Some(rec) = &self.record {
            let handler: Arc<dyn Handler> = Arc::new(Proxy(self.clone()));
            let up = std::mem::take(&mut req.body);
            return match rec.intercept(&target.name, up, handler) {
                Ok(body) => Response {
                    status: 200,
                    body,
                    ..Default::default()
                },
                Err(e) => error(502, &format!("recording {}: {e}", target.name)),
            };
        }
        let t0 = Instant::now();
        let (host, port) = (target.name.as_str(), target.port);
        let addr = match self.address(&target).await {
            Ok(a) => a,
            Err(e) => return error(502, &format!("bad gateway: {e}")),
        };
        let connect = tokio::net::TcpStream::connect(addr);
        let sock = match tokio::time::timeout(self.opts.timeout, connect).await {
            Err(_) => {
                return error(
                    504,
                    &format!(
                        "gateway timeout: {host}:{port} ({addr}) did not accept in {:?}",
                        self.opts.timeout
                    ),
                )
            }
            Ok(Err(e)) => return error(502, &format!("bad gateway: {host}:{port} ({addr}): {e}")),
            Ok(Ok(s)) => s,
        };
        let _ = sock.set_nodelay(true);
        let connected = t0.elapsed();
        let (mut rd, mut wr) = sock.into_split();
        let up = std::mem::take(&mut req.body);
        tokio::spawn(async move {
            let _ = up.copy_to(&mut wr).await;
        });
        let (tx, rx) = mpsc::channel::<std::io::Result<Bytes>>(BUFFER_CHUNKS);
        let origin = Arc::new(OriginProgress::default());
        let done = origin.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                let c = match rd.read(&mut buf).await {
                    Ok(0) => break,
                    Ok(n) => {
                        done.chunk(n, t0.elapsed());
                        Ok(Bytes::copy_from_slice(&buf[..n]))
                    }
                    Err(e) => Err(e),
                };
                let failed = c.is_err();
                if tx.send(c).await.is_err() || failed {
                    break;
                }
            }
            done.chunk(0, t0.elapsed());
        });
        let guard = LogOnDrop {
            record: Record {
                url: format!("{host}:{port}"),
                method: req.method.clone(),
                status: 200,
                client_protocol: req.protocol,
                origin_protocol: "tcp",
                first_byte: connected,
                t0,
            },
            origin,
            proxy: self.clone(),
        };
        Response {
            status: 200,
            headers: Vec::new(),
            body: Body::stream(logged(rx, guard), None),
            ..Default::default()
        }
    }
}

/// Reads an origin's response body into `tx` (the client's side) as fast as the client
/// takes it, noting progress in `done` (times after `t0`) and handing each piece to the
/// recording's `capture`, finished when the body ends. A client that gives up on the
/// body (a browser cancels an image it cannot decode) ends the reading, except while
/// recording: the recording takes the body whole, as the origin sends it.
async fn pump(
    mut body: Body,
    tx: mpsc::Sender<std::io::Result<Bytes>>,
    done: Arc<OriginProgress>,
    t0: Instant,
    mut capture: Option<Capture>,
) {
    let head = Instant::now();
    let (mut ended, mut failed, mut client) = (false, false, true);
    loop {
        let Some(c) = body.chunk().await else {
            ended = true;
            break;
        };
        // The last chunk's arrival so far: a client that stops at content-length may
        // drop its side before this task sees the origin's end.
        match &c {
            Ok(b) => {
                done.chunk(b.len(), t0.elapsed());
                if let Some(cap) = &mut capture {
                    cap.push(b);
                }
            }
            Err(_) => failed = true,
        }
        if client {
            client = match c {
                Ok(mut b) => loop {
                    if b.is_empty() {
                        break true;
                    }
                    let piece = b.split_to(b.len().min(PIECE));
                    if tx.send(Ok(piece)).await.is_err() {
                        break false;
                    }
                },
                Err(e) => tx.send(Err(e)).await.is_ok(),
            };
        }
        if !client && capture.as_ref().is_none_or(Capture::full) {
            break;
        }
    }
    done.chunk(0, t0.elapsed());
    if let Some(cap) = capture {
        cap.finish(ended && !failed, head.elapsed());
    }
}

/// The response headers that travel back to the client: no pseudo-headers, no
/// hop-by-hop ones.
fn response_headers(h: &spdy::Headers) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    for (n, v) in h.iter() {
        let n = String::from_utf8_lossy(n).into_owned();
        if n.starts_with(':') || spdy::http::HOP_BY_HOP.contains(&n.as_str()) {
            continue;
        }
        headers.push((n, String::from_utf8_lossy(v).into_owned()));
    }
    headers
}

/// The chunks of `rx` as a body stream whose log line is written when it ends or is
/// dropped.
fn logged(
    rx: mpsc::Receiver<std::io::Result<Bytes>>,
    guard: LogOnDrop,
) -> impl futures_util::Stream<Item = std::io::Result<Bytes>> + Send + 'static {
    futures_util::stream::unfold((rx, Some(guard)), |(mut rx, mut guard)| async move {
        match rx.recv().await {
            Some(c) => Some((c, (rx, guard))),
            None => {
                drop(guard.take());
                None
            }
        }
    })
}

/// Writes a request's log line when the response body is finished with.
struct LogOnDrop {
    record: Record,
    origin: Arc<OriginProgress>,
    proxy: Arc<Inner>,
}

/// How far the origin's body has come: bytes so far and when the last of them (or its
/// end) arrived, µs after the request; written by the task reading the origin, read
/// when the log line is written (no lock on the body's path).
#[derive(Default)]
struct OriginProgress {
    bytes: AtomicU64,
    /// 0 until something arrived; then the time + 1 µs.
    at_us: AtomicU64,
}

impl OriginProgress {
    fn chunk(&self, n: usize, at: Duration) {
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        self.at_us
            .store(at.as_micros() as u64 + 1, Ordering::Relaxed);
    }

    fn get(&self) -> Option<(Duration, u64)> {
        match self.at_us.load(Ordering::Relaxed) {
            0 => None,
            t => Some((
                Duration::from_micros(t - 1),
                self.bytes.load(Ordering::Relaxed),
            )),
        }
    }
}

impl Drop for LogOnDrop {
    fn drop(&mut self) {
        let origin = self.origin.get();
        let r = &self.record;
        self.proxy.log(r.line(origin, r.t0.elapsed()));
    }
}

/// What is known of one request when its response ends.
struct Record {
    url: String,
    method: String,
    status: u16,
    client_protocol: &'static str,
    origin_protocol: &'static str,
    first_byte: Duration,
    t0: Instant,
}

impl Record {
    fn line(&self, origin: Option<(Duration, u64)>, to_client: Duration) -> String {
        let ms = |d: Duration| (d.as_secs_f64() * 1e6).round() / 1e3;
        serde_json::json!({
            "url": self.url,
            "method": self.method,
            "status": self.status,
            "client_protocol": self.client_protocol,
            "origin_protocol": self.origin_protocol,
            "bytes": origin.map(|o| o.1),
            "first_byte_from_origin_ms": ms(self.first_byte),
            "last_byte_from_origin_ms": origin.map(|o| ms(o.0)),
            "last_byte_to_client_ms": ms(to_client),
        })
        .to_string()
    }
}

impl Handler for Proxy {
    fn handle(&self, req: Request) -> ResponseFuture {
        Box::pin(self.0.clone().route(req))
    }
}

fn error(status: u16, why: &str) -> Response {
    let mut r = Response::new(status, "text/plain", format!("speedy proxy: {why}\n"));
    r.headers.push(("x-speedy-proxy-error".into(), why.into()));
    r
}

/// `host[:port]` → (host, port).
fn split_host(authority: &str, default_port: u16) -> (String, u16) {
    if let Some(rest) = authority.strip_prefix('[') {
        // [v6]:port
        if let Some((h, p)) = rest.split_once(']') {
            let port = p.strip_prefix(':').and_then(|p| p.parse().ok());
            return (format!("[{h}]"), port.unwrap_or(default_port));
        }
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => {
            (h.to_string(), p.parse().unwrap_or(default_port))
        }
        _ => (authority.to_string(), default_port),
    }
}

/// The request headers that travel on to the origin: no pseudo-headers, no hop-by-hop
/// ones, no `host` (the client sets it), no `content-length` (recomputed).
fn end_to_end(h: &spdy::Headers) -> Vec<(String, String)> {
    h.iter()
        .filter_map(|(n, v)| {
            let n = String::from_utf8_lossy(n).into_owned();
            let skip = n.starts_with(':')
                || spdy::http::HOP_BY_HOP.contains(&n.as_str())
                || n == "host"
                || n == "content-length"
                || n == "proxy-authorization";
            (!skip).then(|| (n, String::from_utf8_lossy(v).into_owned()))
        })
        .collect()
}
