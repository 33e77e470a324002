//! The client: one connection to an origin, speaking SPDY (one session, all requests
//! multiplexed) or HTTP/1.1 (a small pool of keep-alive connections).

use crate::body::Body;
use crate::io::BoxIo;
pub use crate::reply::{ClientError, FrameLog, ResponseStream};
use crate::spdy_client::{Cmd, SpdyHandle};
use crate::tls::{client_config, Verify};
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use spdy::{Headers, Version};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, Mutex};

pub use crate::protocol::Protocol;

/// Client settings.
#[derive(Clone)]
pub struct ClientConfig {
    /// Force a protocol. `None`: ALPN over TLS (SPDY preferred), SPDY/3.1 on plain TCP.
    /// [`Protocol::H2`] is refused by [`Client::connect`]: this client has no HTTP/2 yet.
    pub protocol: Option<Protocol>,
    /// Certificate checking for TLS.
    pub verify: Verify,
    /// SPDY session settings (role and version are set on connect).
    pub spdy: spdy::Config,
    /// HTTP/1.1: connections to open at most.
    pub http1_connections: usize,
    /// Frame log (SPDY `-v`).
    pub log: Option<FrameLog>,
    /// Plain TCP: reach SPDY/3.1 through an HTTP/1.1 `Upgrade` request (as Kubernetes
    /// does) instead of prior knowledge.
    pub upgrade: Option<crate::upgrade::UpgradeRequest>,
    /// Connect to this address instead of resolving the host (the host still names the
    /// origin: TLS server name, `:host`).
    pub connect_to: Option<SocketAddr>,
    /// How long to wait for a connection, a response head, and then each next piece of
    /// its body: a server that stalls cannot hold a request longer than this at a time.
    /// `None` (load generators, whose run has its own duration): no timer per request.
    pub read_timeout: Option<std::time::Duration>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            protocol: None,
            verify: Verify::System,
            spdy: spdy::Config {
                flow_control: spdy::session::FlowControl::Lenient,
                ..spdy::Config::new(spdy::Role::Client, Version::V3_1)
            },
            http1_connections: 6,
            log: None,
            connect_to: None,
            upgrade: None,
            read_timeout: Some(std::time::Duration::from_secs(30)),
        }
    }
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
}

enum Inner {
    Spdy(SpdyHandle),
    Http1(Arc<Http1Pool>),
}

struct Http1Pool {
    connect: Box<
        dyn Fn() -> futures_util::future::BoxFuture<'static, Result<BoxIo, ClientError>>
            + Send
            + Sync,
    >,
    idle: Mutex<Vec<hyper::client::conn::http1::SendRequest<Full<Bytes>>>>,
    slots: tokio::sync::Semaphore,
}

pub(crate) async fn dial(
    host: &str,
    port: u16,
    via: Option<SocketAddr>,
) -> Result<TcpStream, ClientError> {
    let s = match via {
        Some(a) => TcpStream::connect(a).await,
        None => TcpStream::connect((host, port)).await,
    }
    .map_err(|e| ClientError::Connect(format!("{host}:{port}: {e}")))?;
    let _ = s.set_nodelay(true);
    Ok(s)
}

pub(crate) async fn tls_dial(
    host: &str,
    port: u16,
    via: Option<SocketAddr>,
    tls: Arc<rustls::ClientConfig>,
) -> Result<(BoxIo, Option<String>), ClientError> {
    let tcp = dial(host, port, via).await?;
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| ClientError::Connect(e.to_string()))?;
    let s = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .map_err(|e| ClientError::Connect(crate::tls::explain_handshake_error(host, port, &e)))?;
    let alpn = s
        .get_ref()
        .1
        .alpn_protocol()
        .map(|a| String::from_utf8_lossy(a).into_owned());
    Ok((Box::new(s), alpn))
}

fn no_h2() -> ClientError {
    ClientError::Connect(
        "HTTP/2 is not supported by this client (spdy/3.1, spdy/3, spdy/2, http/1.1 are)".into(),
    )
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
                Err(ClientError::Connect(format!(
                    "{scheme}://{host}:{port}: not connected within {limit:?}"
                )))
            })
    }

    async fn connect_now(
        scheme: &str,
        host: &str,
        port: u16,
        cfg: &ClientConfig,
    ) -> Result<Client, ClientError> {
        if cfg.protocol == Some(Protocol::H2) {
            return Err(no_h2());
        }
        let authority = if (scheme == "http" && port == 80) || (scheme == "https" && port == 443) {
            host.to_string()
        } else {
            format!("{host}:{port}")
        };
        let mut stream_protocol = None;
        let (io, proto): (Option<BoxIo>, Protocol) = if scheme == "https" {
            let offer: Vec<&str> = match cfg.protocol {
                Some(p) => vec![p.alpn()],
                None => crate::tls::CLIENT_ALPN.to_vec(),
            };
            let tls = client_config(&cfg.verify, &offer).map_err(ClientError::Connect)?;
            let (io, alpn) = tls_dial(host, port, cfg.connect_to, tls).await?;
            let proto = match alpn.as_deref() {
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
            (Some(io), proto)
        } else {
            let proto = cfg.protocol.unwrap_or(Protocol::Spdy(Version::V3_1));
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
                    let (io, chosen) = crate::upgrade::client_handshake(io, &authority, up).await?;
                    stream_protocol = chosen;
                    Some(io)
                }
                Protocol::Spdy(_) => {
                    Some(Box::new(dial(host, port, cfg.connect_to).await?) as BoxIo)
                }
                Protocol::Http1 => None,
                Protocol::H2 => return Err(no_h2()),
            };
            (io, proto)
        };
        match proto {
            Protocol::Spdy(v) => {
                let mut scfg = cfg.spdy.clone();
                scfg.role = spdy::Role::Client;
                scfg.version = v;
                let (h, pushes, _task) =
                    crate::spdy_client::spawn(io.expect("dialled"), scfg, cfg.log.clone());
                Ok(Client {
                    scheme: scheme.into(),
                    authority,
                    inner: Inner::Spdy(h),
                    pushes: Some(pushes),
                    stream_protocol,
                    read_timeout: cfg.read_timeout,
                })
            }
            Protocol::H2 => Err(no_h2()),
            Protocol::Http1 => {
                let (host2, scheme2, verify) =
                    (host.to_string(), scheme.to_string(), cfg.verify.clone());
                let first = std::sync::Mutex::new(io);
                let via = cfg.connect_to;
                let connect = Box::new(move || {
                    let (host, scheme, verify) = (host2.clone(), scheme2.clone(), verify.clone());
                    let reuse = first.lock().expect("not poisoned").take();
                    Box::pin(async move {
                        if let Some(io) = reuse {
                            return Ok(io);
                        }
                        if scheme == "https" {
                            let tls = client_config(&verify, &["http/1.1"])
                                .map_err(ClientError::Connect)?;
                            Ok(tls_dial(&host, port, via, tls).await?.0)
                        } else {
                            Ok(Box::new(dial(&host, port, via).await?) as BoxIo)
                        }
                    })
                        as futures_util::future::BoxFuture<'static, Result<BoxIo, ClientError>>
                });
                let pool = Http1Pool {
                    connect,
                    idle: Mutex::new(Vec::new()),
                    slots: tokio::sync::Semaphore::new(cfg.http1_connections.max(1)),
                };
                Ok(Client {
                    scheme: scheme.into(),
                    authority,
                    inner: Inner::Http1(Arc::new(pool)),
                    pushes: None,
                    stream_protocol,
                    read_timeout: cfg.read_timeout,
                })
            }
        }
    }

    /// The protocol in use (`spdy/3.1`, …, `http/1.1`).
    pub fn protocol(&self) -> &'static str {
        match &self.inner {
            Inner::Spdy(h) => h.version.alpn(),
            Inner::Http1(_) => "http/1.1",
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

    /// Measures a round trip with PING (SPDY only).
    pub async fn ping(&self) -> Option<std::time::Duration> {
        let Inner::Spdy(h) = &self.inner else {
            return None;
        };
        let (tx, rx) = oneshot::channel();
        h.tx.send(Cmd::Ping(tx)).ok()?;
        rx.await.ok()
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
                extra.add("user-agent", concat!("speedy/", env!("CARGO_PKG_VERSION")));
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
                .map_err(|_| ClientError::Closed)?;
                rx.await.map_err(|_| ClientError::Closed)?
            }
            Inner::Http1(pool) => pool.request(&self.authority, req).await,
        }
    }
}

impl Http1Pool {
    async fn request(
        self: &Arc<Self>,
        authority: &str,
        req: ClientRequest,
    ) -> Result<ResponseStream, ClientError> {
        let permit = self
            .slots
            .acquire()
            .await
            .map_err(|_| ClientError::Closed)?;
        let existing = self.idle.lock().await.pop();
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
        b = b
            .header("user-agent", concat!("speedy/", env!("CARGO_PKG_VERSION")))
            .header("accept", "*/*");
        for (n, v) in &req.headers {
            b = b.header(n.as_str(), v.as_str());
        }
        let hreq = b
            .body(Full::new(req.body))
            .map_err(|e| ClientError::Http(e.to_string()))?;
        let resp = sender
            .send_request(hreq)
            .await
            .map_err(|e| ClientError::Http(e.to_string()))?;
        let (parts, body) = resp.into_parts();
        let len = parts
            .headers
            .get(hyper::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        let mut headers = Headers::new();
        for (n, v) in parts.headers.iter() {
            headers.add(n.as_str(), v.as_bytes());
        }
        // The connection goes back to the pool once the body has been read: hyper
        // queues the next request on it until then.
        self.idle.lock().await.push(sender);
        drop(permit);
        Ok(ResponseStream {
            status: parts.status.as_u16(),
            headers,
            protocol: "http/1.1",
            pushed_url: None,
            body: Body::http1(body, len, usize::MAX),
        })
    }
}
