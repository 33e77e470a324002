//! The client: one connection to an origin, speaking SPDY or HTTP/2 (one session, all
//! requests multiplexed) or HTTP/1.1 (a small pool of keep-alive connections).

use crate::body::Body;
pub use crate::reply::{ClientError, FrameLog, LogKind, ResponseStream};
use crate::spdy::client::{Cmd, SpdyHandle};
pub use crate::transport::dial::resolve;
use crate::transport::dial::{dial, tls_dial};
use crate::transport::io::BoxIo;
use crate::transport::tls::{client_config, Verify};
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use spdy::{Headers, Version};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, Mutex};

pub use crate::protocol::Protocol;

/// Client settings.
#[derive(Clone)]
pub struct ClientConfig {
    /// Force a protocol. `None`: ALPN over TLS (SPDY preferred, then h2, then HTTP/1.1),
    /// SPDY/3.1 on plain TCP. [`Protocol::H2`] on plain TCP is h2c with prior knowledge.
    pub protocol: Option<Protocol>,
    /// Certificate checking for TLS.
    pub verify: Verify,
    /// SPDY session settings (role and version are set on connect).
    pub spdy: spdy::Config,
    /// HTTP/1.1: connections to open at most.
    pub http1_connections: usize,
    /// HTTP/1.1: how requests use connections.
    pub http1_mode: Http1Mode,
    /// The `-v` log: SPDY frames, HTTP/1.1 and h2 heads, connection facts.
    pub log: Option<FrameLog>,
    /// Plain TCP: reach SPDY/3.1 through an HTTP/1.1 `Upgrade` request (as Kubernetes
    /// does) instead of prior knowledge.
    pub upgrade: Option<crate::spdy::upgrade::UpgradeRequest>,
    /// Connect to this address instead of resolving the host (the host still names the
    /// origin: TLS server name, `:host`).
    pub connect_to: Option<SocketAddr>,
    /// How long to wait for a connection, a response head, and then each next piece of
    /// its body: a server that stalls cannot hold a request longer than this at a time.
    /// `None` (load generators, whose run has its own duration): no timer per request.
    pub read_timeout: Option<std::time::Duration>,
    /// Carry the SPDY session over SCTP (over UDP, `docs/sctp.md`) instead of TCP: plain
    /// `http` SPDY only.
    pub sctp: Option<crate::transport::sctp::SctpConfig>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            protocol: None,
            verify: Verify::System,
            spdy: spdy::Config {
                flow_control: spdy::session::FlowControl::Lenient,
                // The receive windows Chromium announces (as for h2, which shares its
                // session code with SPDY/3.1 in Chromium's net/spdy).
                initial_window: crate::protocol::H2_STREAM_WINDOW,
                session_window: crate::protocol::H2_SESSION_WINDOW,
                ..spdy::Config::new(spdy::Role::Client, Version::V3_1)
            },
            http1_connections: 6,
            http1_mode: Http1Mode::Persistent,
            log: None,
            connect_to: None,
            upgrade: None,
            read_timeout: Some(std::time::Duration::from_secs(30)),
            sctp: None,
        }
    }
}

/// How HTTP/1.1 requests use connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Http1Mode {
    /// Keep-alive connections (at most `http1_connections`), one request at a time on
    /// each.
    #[default]
    Persistent,
    /// A new connection for every request, closed after its response (`Connection:
    /// close`: HTTP/1.0's way).
    ConnectionPerRequest,
    /// One connection with the requests pipelined ([`crate::http1::pipeline`]).
    Pipelined,
}

/// A request to send.
#[derive(Clone, Debug)]
pub struct ClientRequest {
    /// Method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Extra headers (lower-case names).
    pub headers: Vec<(String, String)>,
    /// Body (empty: none).
    pub body: Bytes,
    /// SPDY priority 0 (highest) ..= 7.
    pub priority: u8,
}

impl ClientRequest {
    /// A GET for `path`.
    pub fn get(path: &str) -> ClientRequest {
        ClientRequest {
            method: "GET".into(),
            path: path.into(),
            headers: vec![],
            body: Bytes::new(),
            priority: 3,
        }
    }
}

/// A connection to one origin.
pub struct Client {
    scheme: String,
    authority: String,
    inner: Inner,
    pushes: Option<mpsc::UnboundedReceiver<ResponseStream>>,
    stream_protocol: Option<String>,
    read_timeout: Option<std::time::Duration>,
    /// The `-v` log, for HTTP/1.1 and h2 heads (SPDY logs its frames itself).
    log: Option<FrameLog>,
}

enum Inner {
    Spdy(SpdyHandle),
    Http1(Arc<Http1Pool>),
    /// One h2 connection (the h2 crate's handle; cloned per request).
    H2(
        h2::client::SendRequest<Bytes>,
        crate::h2::priority::Injector,
        Option<Arc<tokio::sync::Mutex<h2::PingPong>>>,
    ),
    /// One HTTP/3 connection over QUIC.
    H3(crate::h3::H3Client),
}

struct Http1Pool {
    connect: Box<
        dyn Fn() -> futures_util::future::BoxFuture<'static, Result<BoxIo, ClientError>>
            + Send
            + Sync,
    >,
    idle: Mutex<Vec<hyper::client::conn::http1::SendRequest<Full<Bytes>>>>,
    slots: tokio::sync::Semaphore,
    mode: Http1Mode,
    /// [`Http1Mode::Pipelined`]: the connection, once opened.
    pipe: std::sync::Mutex<Option<Arc<crate::http1::pipeline::Pipeline>>>,
}

/// The `user-agent` speedy's requests carry.
const USER_AGENT: &str = concat!("speedy/", env!("CARGO_PKG_VERSION"));

/// Logs an [`LogKind::Info`] line when `-v` asked for a log.
fn info(log: &Option<FrameLog>, line: impl FnOnce() -> String) {
    if let Some(l) = log {
        l(LogKind::Info, &line());
    }
}

/// Logs a request or response head (HTTP/1.1, h2) line by line.
fn log_head<'a>(
    log: &Option<FrameLog>,
    kind: LogKind,
    first: &str,
    headers: impl Iterator<Item = (&'a str, &'a [u8])>,
) {
    if let Some(l) = log {
        l(kind, first);
        for (n, v) in headers {
            l(kind, &format!("{n}: {}", String::from_utf8_lossy(v)));
        }
    }
}

impl Client {
    /// Connects to `scheme://host:port` (TCP, TLS, any Upgrade), giving up after the
    /// config's `read_timeout`.
    pub async fn connect(
        scheme: &str,
        host: &str,
        port: u16,
        cfg: &ClientConfig,
    ) -> Result<Client, ClientError> {
        let Some(limit) = cfg.read_timeout else {
            return Client::connect_now(scheme, host, port, cfg).await;
        };
        tokio::time::timeout(limit, Client::connect_now(scheme, host, port, cfg))
            .await
            .unwrap_or_else(|_| {
                let over = if cfg.protocol == Some(Protocol::H3) {
                    " over QUIC"
                } else {
                    ""
                };
                Err(ClientError::Connect(format!(
                    "{scheme}://{host}:{port}{over}: not connected within {limit:?}"
                )))
            })
    }

    /// Connects with no time limit: dials the transport the config and the scheme call
    /// for, then starts the protocol chosen on it.
    async fn connect_now(
        scheme: &str,
        host: &str,
        port: u16,
        cfg: &ClientConfig,
    ) -> Result<Client, ClientError> {
        info(&cfg.log, || match cfg.connect_to {
            Some(a) => format!("connecting to {host}:{port} at {a}"),
            None => format!("connecting to {host}:{port}"),
        });
        let origin = Origin::new(scheme, host, port, cfg);
        if cfg.protocol == Some(Protocol::H3) {
            let h = origin.connect_h3().await?;
            return Ok(origin.client(Inner::H3(h), None, None));
        }
        let Dialled {
            io,
            proto,
            stream_protocol,
        } = if let Some(sctp) = &cfg.sctp {
            origin.dial_sctp(sctp).await?
        } else if scheme == "https" {
            origin.dial_tls().await?
        } else {
            origin.dial_tcp().await?
        };
        let (inner, pushes) = match proto {
            Protocol::Spdy(v) => {
                let (h, pushes) = origin.start_spdy(io.expect("dialled"), v);
                (Inner::Spdy(h), Some(pushes))
            }
            Protocol::H2 => (origin.start_h2(io.expect("dialled")).await?, None),
            Protocol::Http1 => (Inner::Http1(Arc::new(origin.http1_pool(io))), None),
            Protocol::H3 => unreachable!("HTTP/3 connected above"),
        };
        Ok(origin.client(inner, pushes, stream_protocol))
    }

    /// The protocol in use (`spdy/3.1`, …, `http/1.1`).
    pub fn protocol(&self) -> &'static str {
        match &self.inner {
            Inner::Spdy(h) => h.version.alpn(),
            Inner::Http1(_) => "http/1.1",
            Inner::H2(..) => "h2",
            Inner::H3(_) => "h3",
        }
    }

    /// The sub-protocol the server chose in an Upgrade handshake
    /// (`X-Stream-Protocol-Version`), if any.
    pub fn stream_protocol(&self) -> Option<&str> {
        self.stream_protocol.as_deref()
    }

    /// Pushed responses (SPDY), once; later calls return `None`.
    pub fn take_pushes(&mut self) -> Option<mpsc::UnboundedReceiver<ResponseStream>> {
        self.pushes.take()
    }

    /// Measures a round trip with PING (SPDY and h2), or over h3 with a stream the
    /// server stops at once (`H3Client::ping`); `None` over HTTP/1.1.
    pub async fn ping(&self) -> Option<std::time::Duration> {
        let h = match &self.inner {
            Inner::Spdy(h) => h,
            Inner::H2(_, _, Some(pings)) => {
                let mut p = pings.lock().await;
                let t = std::time::Instant::now();
                p.ping(h2::Ping::opaque()).await.ok()?;
                return Some(t.elapsed());
            }
            Inner::H3(h) => return h.ping().await,
            _ => return None,
        };
        let (tx, rx) = oneshot::channel();
        h.tx.send(Cmd::Ping(tx)).ok()?;
        rx.await.ok()
    }

    /// The SPDY session's counters (header bytes raw and compressed, frames, data);
    /// `None` over HTTP/1.1 and h2 or once the session has ended.
    pub async fn session_stats(&self) -> Option<spdy::session::Stats> {
        let Inner::Spdy(h) = &self.inner else {
            return None;
        };
        let (tx, rx) = oneshot::channel();
        h.tx.send(Cmd::Stats(tx)).ok()?;
        rx.await.ok()
    }

    /// Asks the server to send stream `stream_id` (from [`ResponseStream::stream_id`])
    /// at `priority` (0 most urgent .. 7) from now on: speedy's PRIORITY extension frame
    /// over SPDY (docs/spdy-priority.md), RFC 9218's PRIORITY_UPDATE over h2 and h3.
    /// HTTP/1.1 cannot say it: an error.
    pub fn reprioritize(&self, stream_id: u32, priority: u8) -> Result<(), ClientError> {
        match &self.inner {
            Inner::Spdy(h) => {
                h.tx.send(Cmd::Reprioritize(spdy::StreamId(stream_id), priority))
                    .map_err(|_| h.gone())
            }
            Inner::H2(_, injector, _) => {
                injector.priority_update(stream_id, priority);
                Ok(())
            }
            Inner::H3(h) => h.reprioritize(u64::from(stream_id), priority),
            _ => Err(ClientError::Protocol(format!(
                "{} has no way to reprioritize a request in flight",
                self.protocol()
            ))),
        }
    }

    /// Sends a request; resolves when the response headers arrive.
    pub async fn request(&self, req: ClientRequest) -> Result<ResponseStream, ClientError> {
        let Some(limit) = self.read_timeout else {
            return self.send(req).await;
        };
        let mut resp = tokio::time::timeout(limit, self.send(req))
            .await
            .map_err(|_| ClientError::Timeout(limit))??;
        resp.body = std::mem::take(&mut resp.body).with_read_timeout(limit);
        Ok(resp)
    }

    async fn send(&self, req: ClientRequest) -> Result<ResponseStream, ClientError> {
        match &self.inner {
            Inner::Spdy(h) => {
                let mut extra = Headers::new();
                extra.add("user-agent", USER_AGENT);
                extra.add("accept", "*/*");
                for (n, v) in &req.headers {
                    extra.set(n, v.as_bytes());
                }
                if !req.body.is_empty() {
                    extra.set("content-length", req.body.len().to_string());
                }
                let headers = spdy::http::request_headers(
                    h.version,
                    &req.method,
                    &self.scheme,
                    &self.authority,
                    &req.path,
                    &extra,
                );
                let (tx, rx) = oneshot::channel();
                h.tx.send(Cmd::Request {
                    headers,
                    body: req.body,
                    priority: req.priority,
                    reply: tx,
                })
                .map_err(|_| h.gone())?;
                rx.await.map_err(|_| h.gone())?
            }
            Inner::Http1(pool) => pool.request(&self.authority, req, &self.log).await,
            Inner::H2(send, ..) => self.h2_request(send.clone(), req).await,
            Inner::H3(h) => self.h3_request(h, req).await,
        }
    }

    /// The `http` request head of `req` for h2 and h3 (`:authority` from the origin, our
    /// user-agent and accept, then the request's own headers; `content-length` when asked
    /// and there is a body), logged under `-v`.
    fn http_head(
        &self,
        req: &ClientRequest,
        protocol: &str,
        content_length: bool,
    ) -> Result<http::Request<()>, ClientError> {
        let uri = format!("{}://{}{}", self.scheme, self.authority, req.path);
        let mut b = hyper::Request::builder()
            .method(req.method.as_str())
            .uri(uri.as_str())
            .header("user-agent", USER_AGENT)
            .header("accept", "*/*");
        for (n, v) in &req.headers {
            b = b.header(n.as_str(), v.as_str());
        }
        if content_length && !req.body.is_empty() {
            b = b.header("content-length", req.body.len());
        }
        let hreq = b.body(()).map_err(|e| ClientError::Http(e.to_string()))?;
        log_head(
            &self.log,
            LogKind::Sent,
            &format!("{} {uri} {protocol}", req.method),
            hreq.headers()
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_bytes())),
        );
        Ok(hreq)
    }

    async fn h3_request(
        &self,
        h: &crate::h3::H3Client,
        req: ClientRequest,
    ) -> Result<ResponseStream, ClientError> {
        let mut hreq = self.http_head(&req, "h3", true)?;
        priority_header(&mut hreq, req.priority);
        let (parts, body, id) = h.request(hreq, req.body).await?;
        let mut r = response_from(&self.log, parts, "h3", |_| body);
        r.stream_id = u32::try_from(id).ok();
        Ok(r)
    }

    async fn h2_request(
        &self,
        send: h2::client::SendRequest<Bytes>,
        req: ClientRequest,
    ) -> Result<ResponseStream, ClientError> {
        let h2_err = |e: h2::Error| ClientError::Http(format!("h2: {e}"));
        let mut hreq = self.http_head(&req, "h2", false)?;
        priority_header(&mut hreq, req.priority);
        let mut send = send.ready().await.map_err(h2_err)?;
        let (fut, mut body_tx) = send
            .send_request(hreq, req.body.is_empty())
            .map_err(h2_err)?;
        let id: u32 = fut.stream_id().into();
        if !req.body.is_empty() {
            body_tx.send_data(req.body, true).map_err(h2_err)?;
        }
        let resp = fut.await.map_err(h2_err)?;
        let (parts, body) = resp.into_parts();
        let mut r = response_from(&self.log, parts, "h2", |len| {
            Body::h2(body, len, usize::MAX)
        });
        r.stream_id = Some(id);
        Ok(r)
    }
}

/// The origin a [`Client`] connects to, and the settings it connects with.
struct Origin<'a> {
    scheme: &'a str,
    host: &'a str,
    port: u16,
    /// `host`, with `:port` unless the port is the scheme's default.
    authority: String,
    cfg: &'a ClientConfig,
}

/// A connection dialled for a [`Client`], before a session starts on it.
struct Dialled {
    /// The transport; `None` for HTTP/1.1 over plain TCP (its pool dials when asked).
    io: Option<BoxIo>,
    /// The protocol to speak on it.
    proto: Protocol,
    /// The sub-protocol an Upgrade handshake chose (`X-Stream-Protocol-Version`).
    stream_protocol: Option<String>,
}

impl<'a> Origin<'a> {
    /// `scheme://host:port`, connected to with `cfg`.
    fn new(scheme: &'a str, host: &'a str, port: u16, cfg: &'a ClientConfig) -> Origin<'a> {
        let authority = if (scheme == "http" && port == 80) || (scheme == "https" && port == 443) {
            host.to_string()
        } else {
            format!("{host}:{port}")
        };
        Origin {
            scheme,
            host,
            port,
            authority,
            cfg,
        }
    }

    /// The client for a connection with session `inner`.
    fn client(
        self,
        inner: Inner,
        pushes: Option<mpsc::UnboundedReceiver<ResponseStream>>,
        stream_protocol: Option<String>,
    ) -> Client {
        Client {
            scheme: self.scheme.into(),
            authority: self.authority,
            inner,
            pushes,
            stream_protocol,
            read_timeout: self.cfg.read_timeout,
            log: self.cfg.log.clone(),
        }
    }

    /// Connects HTTP/3 over QUIC; refuses `http://`, SCTP and an Upgrade, which QUIC
    /// cannot carry.
    async fn connect_h3(&self) -> Result<crate::h3::H3Client, ClientError> {
        let (scheme, host, port, cfg) = (self.scheme, self.host, self.port, self.cfg);
        if scheme != "https" || cfg.sctp.is_some() || cfg.upgrade.is_some() {
            return Err(ClientError::Connect(format!(
                "HTTP/3 runs over QUIC, which is always encrypted and has no Upgrade: \
                 use https:// with no SCTP, not {scheme}://"
            )));
        }
        let tls = client_config(&cfg.verify, &[crate::h3::ALPN]).map_err(ClientError::Connect)?;
        let (h, summary) =
            crate::h3::connect(host, port, cfg.connect_to, &tls, cfg.spdy.max_header_block).await?;
        info(&cfg.log, || format!("{host}:{port}: {summary}"));
        Ok(h)
    }

    /// Opens an SCTP association for plain SPDY (SPDY/3.1 unless the config forces
    /// another version); refuses `https://`, other protocols and an Upgrade.
    async fn dial_sctp(
        &self,
        sctp: &crate::transport::sctp::SctpConfig,
    ) -> Result<Dialled, ClientError> {
        let (scheme, host, port, cfg) = (self.scheme, self.host, self.port, self.cfg);
        let proto = cfg.protocol.unwrap_or(Protocol::Spdy(Version::V3_1));
        if scheme != "http" || !matches!(proto, Protocol::Spdy(_)) || cfg.upgrade.is_some() {
            return Err(ClientError::Connect(format!(
                "SCTP carries plain SPDY only (http://, no Upgrade), not {scheme}:// {}",
                proto.alpn()
            )));
        }
        let addr = sctp.peer(resolve(host, port, cfg.connect_to).await?);
        let io = crate::transport::sctp::dial(addr, sctp)
            .await
            .map_err(|e| ClientError::Connect(format!("{host}:{port} over SCTP ({addr}): {e}")))?;
        Ok(Dialled {
            io: Some(io),
            proto,
            stream_protocol: None,
        })
    }

    /// Opens a TLS connection offering the forced protocol (else SPDY, h2, HTTP/1.1 by
    /// ALPN) and takes the protocol the server chose; an error when it is not the forced
    /// one or not known.
    async fn dial_tls(&self) -> Result<Dialled, ClientError> {
        let (host, port, cfg) = (self.host, self.port, self.cfg);
        let offer: Vec<&str> = match cfg.protocol {
            Some(p) => vec![p.alpn()],
            None => crate::transport::tls::CLIENT_ALPN.to_vec(),
        };
        let tls = client_config(&cfg.verify, &offer).map_err(ClientError::Connect)?;
        let (io, tls) = tls_dial(host, port, cfg.connect_to, tls).await?;
        info(&cfg.log, || format!("{host}:{port}: {}", tls.summary));
        let proto = match tls.alpn.as_deref() {
            Some(a) => Protocol::from_name(a).ok_or_else(|| {
                ClientError::Connect(format!("server chose unknown protocol {a}"))
            })?,
            None => cfg.protocol.unwrap_or(Protocol::Http1),
        };
        if let Some(want) = cfg.protocol {
            if want != proto {
                return Err(ClientError::Connect(format!(
                    "server does not speak {} (ALPN chose {})",
                    want.alpn(),
                    proto.alpn()
                )));
            }
        }
        Ok(Dialled {
            io: Some(io),
            proto,
            stream_protocol: None,
        })
    }

    /// Plain TCP: SPDY/3.1 (or the forced protocol) by prior knowledge, or through an
    /// HTTP/1.1 Upgrade when the config asks (SPDY/3.1 only); HTTP/1.1 dials later, in
    /// its pool.
    async fn dial_tcp(&self) -> Result<Dialled, ClientError> {
        let (host, port, cfg) = (self.host, self.port, self.cfg);
        let proto = cfg.protocol.unwrap_or(Protocol::Spdy(Version::V3_1));
        let mut stream_protocol = None;
        let io = match proto {
            Protocol::Spdy(_) if cfg.upgrade.is_some() => {
                if proto != Protocol::Spdy(Version::V3_1) {
                    return Err(ClientError::Connect(format!(
                        "an Upgrade reaches SPDY/3.1 only, not {}",
                        proto.alpn()
                    )));
                }
                let io = Box::new(dial(host, port, cfg.connect_to).await?) as BoxIo;
                let up = cfg.upgrade.as_ref().expect("checked");
                let (io, chosen) =
                    crate::spdy::upgrade::client_handshake(io, &self.authority, up).await?;
                stream_protocol = chosen;
                Some(io)
            }
            Protocol::Spdy(_) | Protocol::H2 => {
                Some(Box::new(dial(host, port, cfg.connect_to).await?) as BoxIo)
            }
            Protocol::Http1 => None,
            Protocol::H3 => unreachable!("HTTP/3 connected above"),
        };
        Ok(Dialled {
            io,
            proto,
            stream_protocol,
        })
    }

    /// Starts a SPDY `version` client session on `io` (with SCTP's frame sizes over
    /// SCTP); returns its handle and its pushed responses.
    fn start_spdy(
        &self,
        io: BoxIo,
        version: Version,
    ) -> (SpdyHandle, mpsc::UnboundedReceiver<ResponseStream>) {
        let cfg = self.cfg;
        let mut scfg = match cfg.sctp {
            Some(_) => crate::transport::sctp::spdy_config(&cfg.spdy),
            None => cfg.spdy.clone(),
        };
        scfg.role = spdy::Role::Client;
        scfg.version = version;
        let (h, pushes, _task) = crate::spdy::client::spawn(io, scfg, cfg.log.clone());
        (h, pushes)
    }

    /// Completes the h2 handshake on `io` (no push, the SPDY header-block bound,
    /// Chromium's windows) and drives the connection in a task.
    async fn start_h2(&self, io: BoxIo) -> Result<Inner, ClientError> {
        let (cfg, authority) = (self.cfg, &self.authority);
        let (injecting, injector) = crate::h2::priority::FrameInjector::new(io);
        let (send, conn) = h2::client::Builder::new()
            .enable_push(false)
            // A response head is held to the SPDY header-block bound.
            .max_header_list_size(cfg.spdy.max_header_block as u32)
            .initial_window_size(crate::protocol::H2_STREAM_WINDOW)
            .initial_connection_window_size(crate::protocol::H2_SESSION_WINDOW)
            .handshake(injecting)
            .await
            .map_err(|e| ClientError::Connect(format!("h2 handshake with {authority}: {e}")))?;
        let mut conn = conn;
        let pings = conn
            .ping_pong()
            .map(|p| Arc::new(tokio::sync::Mutex::new(p)));
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Inner::H2(send, injector, pings))
    }

    /// The HTTP/1.1 pool: its first connection is `first` when one was dialled (TLS),
    /// the others are dialled as needed, over TLS for `https`.
    fn http1_pool(&self, first: Option<BoxIo>) -> Http1Pool {
        let cfg = self.cfg;
        let (host2, scheme2, verify) = (
            self.host.to_string(),
            self.scheme.to_string(),
            cfg.verify.clone(),
        );
        let first = std::sync::Mutex::new(first);
        let (port, via) = (self.port, cfg.connect_to);
        let connect = Box::new(move || {
            let (host, scheme, verify) = (host2.clone(), scheme2.clone(), verify.clone());
            let reuse = first.lock().expect("not poisoned").take();
            Box::pin(async move {
                if let Some(io) = reuse {
                    return Ok(io);
                }
                if scheme == "https" {
                    let tls =
                        client_config(&verify, &["http/1.1"]).map_err(ClientError::Connect)?;
                    Ok(tls_dial(&host, port, via, tls).await?.0)
                } else {
                    Ok(Box::new(dial(&host, port, via).await?) as BoxIo)
                }
            }) as futures_util::future::BoxFuture<'static, Result<BoxIo, ClientError>>
        });
        Http1Pool {
            connect,
            idle: Mutex::new(Vec::new()),
            slots: tokio::sync::Semaphore::new(cfg.http1_connections.max(1)),
            mode: cfg.http1_mode,
            pipe: std::sync::Mutex::new(None),
        }
    }
}

/// Adds RFC 9218's `priority` header for a request at `urgency` (the default, 3, is
/// left unsaid, as §5 allows).
fn priority_header(req: &mut http::Request<()>, urgency: u8) {
    if urgency != crate::h2::priority::DEFAULT_URGENCY {
        let v = format!("u={}", urgency.min(7));
        req.headers_mut()
            .insert("priority", v.parse().expect("ascii"));
    }
}

/// A [`ResponseStream`] from an HTTP/1.1 or h2 response head, logged under `-v`.
fn response_from(
    log: &Option<FrameLog>,
    parts: hyper::http::response::Parts,
    protocol: &'static str,
    body: impl FnOnce(Option<u64>) -> Body,
) -> ResponseStream {
    log_head(
        log,
        LogKind::Received,
        &format!("{protocol} {}", parts.status),
        parts
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_bytes())),
    );
    let len = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let mut headers = Headers::new();
    for (n, v) in parts.headers.iter() {
        headers.add(n.as_str(), v.as_bytes());
    }
    ResponseStream {
        status: parts.status.as_u16(),
        headers,
        protocol,
        pushed_url: None,
        stream_id: None,
        body: body(len),
    }
}

impl Http1Pool {
    async fn request(
        self: &Arc<Self>,
        authority: &str,
        req: ClientRequest,
        log: &Option<FrameLog>,
    ) -> Result<ResponseStream, ClientError> {
        if self.mode == Http1Mode::Pipelined {
            return self.pipelined(authority, req, log).await;
        }
        let close = self.mode == Http1Mode::ConnectionPerRequest;
        let permit = self
            .slots
            .acquire()
            .await
            .map_err(|_| ClientError::Closed)?;
        let existing = match close {
            true => None,
            false => self.idle.lock().await.pop(),
        };
        let mut sender = match existing {
            Some(s) if !s.is_closed() => s,
            _ => {
                let io = (self.connect)().await?;
                let (s, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
                    .await
                    .map_err(|e| ClientError::Http(e.to_string()))?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                s
            }
        };
        sender
            .ready()
            .await
            .map_err(|e| ClientError::Http(e.to_string()))?;
        let mut b = hyper::Request::builder()
            .method(req.method.as_str())
            .uri(req.path.as_str())
            .header("host", authority);
        b = b.header("user-agent", USER_AGENT).header("accept", "*/*");
        if close {
            b = b.header("connection", "close");
        }
        for (n, v) in &req.headers {
            b = b.header(n.as_str(), v.as_str());
        }
        let hreq = b
            .body(Full::new(req.body))
            .map_err(|e| ClientError::Http(e.to_string()))?;
        log_head(
            log,
            LogKind::Sent,
            &format!("{} {} HTTP/1.1", req.method, req.path),
            hreq.headers()
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_bytes())),
        );
        let resp = sender
            .send_request(hreq)
            .await
            .map_err(|e| ClientError::Http(e.to_string()))?;
        let (parts, body) = resp.into_parts();
        // The connection goes back to the pool once the body has been read: hyper
        // queues the next request on it until then.
        if !close {
            self.idle.lock().await.push(sender);
        }
        drop(permit);
        Ok(response_from(log, parts, "http/1.1", |len| {
            Body::http1(body, len, usize::MAX)
        }))
    }

    /// A request on the pool's one pipelined connection (opened by the first).
    async fn pipelined(
        &self,
        authority: &str,
        req: ClientRequest,
        log: &Option<FrameLog>,
    ) -> Result<ResponseStream, ClientError> {
        // Nothing here waits before the request is queued: requests go out in the
        // order of the first polls of their futures (the connection is made in the
        // pipeline's task, and they wait there for it).
        let pipe = self
            .pipe
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(|| {
                Arc::new(crate::http1::pipeline::Pipeline::new((self.connect)()))
            })
            .clone();
        let mut headers = vec![
            ("host".to_string(), authority.to_string()),
            ("user-agent".into(), USER_AGENT.into()),
            ("accept".into(), "*/*".into()),
        ];
        headers.extend(req.headers.iter().cloned());
        if !req.body.is_empty() {
            headers.push(("content-length".into(), req.body.len().to_string()));
        }
        let line = format!("{} {} HTTP/1.1", req.method, req.path);
        let unsafe_text = |s: &str| s.bytes().any(|c| c == b'\r' || c == b'\n' || c == 0);
        if unsafe_text(&line)
            || headers
                .iter()
                .any(|(n, v)| unsafe_text(n) || unsafe_text(v))
        {
            return Err(ClientError::Http(
                "a request line or header with CR, LF or NUL in it".into(),
            ));
        }
        log_head(
            log,
            LogKind::Sent,
            &line,
            headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())),
        );
        let mut head = line.into_bytes();
        head.extend_from_slice(b"\r\n");
        for (n, v) in &headers {
            head.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
        }
        head.extend_from_slice(b"\r\n");
        let (parts, body) = pipe
            .request(head, &req.body, req.method.eq_ignore_ascii_case("HEAD"))
            .await?;
        Ok(response_from(log, parts, "http/1.1", |_| body))
    }
}

/// Splits `HOST=ADDR` (the command lines' `--resolve`) into the lower-cased host (`*` for
/// every other host) and the address text.
pub fn split_resolve(s: &str) -> Result<(String, &str), String> {
    let (h, a) = s
        .split_once('=')
        .ok_or_else(|| format!("--resolve {s:?}: expected HOST=IP[:PORT]"))?;
    let h = h.trim();
    if h.is_empty() {
        return Err(format!(
            "--resolve {s:?}: no HOST before '=' (HOST=IP[:PORT], or *=IP[:PORT] for every host)"
        ));
    }
    Ok((h.to_ascii_lowercase(), a.trim()))
}

/// Parses `HOST=IP[:PORT]` (IPv6 as `[::1]:443` or a bare address).
pub fn parse_resolve(s: &str) -> Result<(String, (std::net::IpAddr, Option<u16>)), String> {
    let (h, a) = split_resolve(s)?;
    let addr = if let Ok(sa) = a.parse::<std::net::SocketAddr>() {
        (sa.ip(), Some(sa.port()))
    } else {
        let ip = a
            .trim_matches(['[', ']'])
            .parse()
            .map_err(|_| format!("--resolve {s:?}: {a:?} is not IP or IP:PORT"))?;
        (ip, None)
    };
    Ok((h, addr))
}
