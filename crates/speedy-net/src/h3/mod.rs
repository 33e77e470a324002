//! HTTP/3 (RFC 9114) over QUIC (RFC 9000), on `quinn` (QUIC) and `h3` (the HTTP/3
//! mapping and QPACK): a server that answers the same [`Handler`] as the TCP servers,
//! and the client half of [`crate::Client`]. docs/h3.md says why these crates.
//!
//! - TLS is the listener's own rustls configuration (the same certificate, the lab CA's
//!   or a self-signed one), offered with ALPN `h3` only; QUIC requires TLS 1.3.
//! - Clients reach it by prior knowledge (`speedy fetch --protocol h3`, Chromium's
//!   `--origin-to-force-quic-on`): no Alt-Svc is advertised over TCP.
//! - Request and response bodies stream under QUIC's flow control: the next response
//!   chunk is pulled only once the previous one was taken by the stream, and a request
//!   body is read as the handler asks (at most `max_body` bytes).
//! - Not carried over HTTP/3: server push (the `h3` crate has none), `Response::reset`
//!   becomes a stream reset with H3_REQUEST_CANCELLED.
//! - The server's [`crate::Limits`] hold as on TCP: `max_connections` and
//!   `max_connections_per_ip` (counted at accept; over them QUIC's CONNECTION_REFUSED;
//!   a client whose address is unproven gets a Retry first when half the connections are
//!   in use or its address already holds one, so forged source addresses take neither),
//!   the handshake within `sniff_timeout`, a request's header section within
//!   `header_read_timeout` (then the stream is dropped), a connection with no request
//!   open for `idle_timeout` gets GOAWAY and is closed (H3_NO_ERROR), and the request-body
//!   bytes a connection's handlers have not read are held to `max_buffered` (QUIC's
//!   connection receive window; quinn's default has none). The `h3` crate holds every
//!   frame but DATA whole before it looks at it: on a request or control stream, one that
//!   declares more than the header-section limit is refused as its length arrives
//!   (`quic.rs`: a HEADERS frame gets 431, others H3_EXCESSIVE_LOAD).
//!
//! `quic.rs` binds the `h3` crate's QUIC traits to quinn itself (each response stream's
//! quinn priority from its RFC 9218 urgency, PRIORITY_UPDATE both ways, a ping).

mod quic;
mod tap;

use crate::body::Body;
use crate::h2::priority::parse_priority_field;
use crate::handler::{response_fields, Handler, Request, Response, ServerConfig};
use crate::limits::Limits;
use crate::reply::ClientError;
use crate::server::PerIp;
use crate::transport::dial::{resolve, unspecified_for};
use bytes::{Buf, Bytes};
use quic::{Injector, Priorities};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// The ALPN id of HTTP/3 (RFC 9114 §3.1).
pub const ALPN: &str = "h3";

/// QUIC's idle timeout on both ends: a connection with nothing to say for this long is
/// closed (each end keeps it alive with PINGs while a request is open).
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// After a shutdown, how long a connection whose requests are all answered and
/// acknowledged waits for the client to close it before closing it (H3_NO_ERROR).
const CLOSE_LINGER: Duration = Duration::from_secs(2);

/// A QUIC endpoint bound to a UDP address, accepting HTTP/3 connections.
pub struct H3Listener {
    endpoint: quinn::Endpoint,
    /// Its configuration, whose transport [`serve_h3`] sets from the server's limits.
    config: quinn::ServerConfig,
    cc: QuicCc,
}

impl H3Listener {
    /// Binds UDP `addr` with the listener's TLS configuration `tls` (its certificate; its
    /// ALPN list is replaced by `h3`) and QUIC's congestion control `cc`.
    pub fn bind(
        addr: SocketAddr,
        tls: &rustls::ServerConfig,
        cc: QuicCc,
    ) -> io::Result<H3Listener> {
        let mut tls = tls.clone();
        tls.alpn_protocols = vec![ALPN.as_bytes().to_vec()];
        tls.max_early_data_size = 0;
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
            .map_err(|e| io::Error::other(format!("TLS configuration unfit for QUIC: {e}")))?;
        let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        config.transport_config(Arc::new(server_transport(cc, &Limits::default())));
        let endpoint = quinn::Endpoint::server(config.clone(), addr)?;
        Ok(H3Listener {
            endpoint,
            config,
            cc,
        })
    }

    /// The UDP address it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.endpoint.local_addr()
    }
}

/// A QUIC sender's congestion control: quinn's algorithm and initial window.
#[derive(Clone, Copy, Debug, Default)]
pub struct QuicCc {
    /// `cubic` (quinn's default), `bbr` or `newreno`.
    pub algorithm: QuicCcAlgorithm,
    /// Initial congestion window, bytes (`None`: quinn's, RFC 9002's 14,720).
    pub initial_window: Option<u64>,
}

/// quinn's congestion controllers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QuicCcAlgorithm {
    /// CUBIC (RFC 9438), quinn's default.
    #[default]
    Cubic,
    /// BBR (quinn's version 1).
    Bbr,
    /// NewReno (RFC 9002 §7).
    NewReno,
}

impl QuicCcAlgorithm {
    /// By the name Linux gives the TCP algorithm (`reno` stands for NewReno).
    pub fn parse(s: &str) -> Result<QuicCcAlgorithm, String> {
        match s {
            "cubic" => Ok(QuicCcAlgorithm::Cubic),
            "bbr" => Ok(QuicCcAlgorithm::Bbr),
            "newreno" | "reno" => Ok(QuicCcAlgorithm::NewReno),
            _ => Err(format!("{s:?}: quinn has cubic, bbr and newreno (reno)")),
        }
    }

    /// The name [`QuicCcAlgorithm::parse`] takes.
    pub fn name(self) -> &'static str {
        match self {
            QuicCcAlgorithm::Cubic => "cubic",
            QuicCcAlgorithm::Bbr => "bbr",
            QuicCcAlgorithm::NewReno => "newreno",
        }
    }
}

impl std::fmt::Display for QuicCcAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for QuicCcAlgorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<QuicCcAlgorithm, String> {
        QuicCcAlgorithm::parse(s)
    }
}

impl QuicCc {
    fn factory(&self) -> Arc<dyn quinn::congestion::ControllerFactory + Send + Sync> {
        use quinn::congestion::{BbrConfig, ControllerFactory, CubicConfig, NewRenoConfig};
        /// A factory with its initial window set, when one is given.
        fn with<C: ControllerFactory + Send + Sync + 'static>(
            mut c: C,
            window: Option<u64>,
            set: fn(&mut C, u64) -> &mut C,
        ) -> Arc<dyn ControllerFactory + Send + Sync> {
            if let Some(w) = window {
                set(&mut c, w);
            }
            Arc::new(c)
        }
        let w = self.initial_window;
        match self.algorithm {
            QuicCcAlgorithm::Cubic => with(CubicConfig::default(), w, CubicConfig::initial_window),
            QuicCcAlgorithm::Bbr => with(BbrConfig::default(), w, BbrConfig::initial_window),
            QuicCcAlgorithm::NewReno => {
                with(NewRenoConfig::default(), w, NewRenoConfig::initial_window)
            }
        }
    }
}

/// Transport settings of both ends.
fn transport() -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    t.max_idle_timeout(Some(
        quinn::IdleTimeout::try_from(IDLE_TIMEOUT).expect("30 s is a valid idle timeout"),
    ));
    t.keep_alive_interval(Some(IDLE_TIMEOUT / 3));
    t
}

/// The client's transport settings: no path MTU discovery, as Chromium's QUIC client.
/// QUICHE starts MTU probing only when the connection options MTUH or MTUL are set
/// (`QuicConnection::SetFromConfig`), and Chromium sets neither by default; quinn probes
/// by default, and its probes (up to 1,452 bytes each, several per connection) made the
/// loader's uplink over h3 1.6x Chromium's on the same pages (measured in the lab,
/// whitepaper DSL, 5 web-2010 pages × 2 runs: 119 KB against 75 KB a load; 80 KB
/// without the probes).
///
/// Its loss recovery starts from Chromium's figures too: an RTT of 100 ms before the
/// first sample (QUICHE `kInitialRttMs`, `quic_constants.h`; quinn's default is 333 ms),
/// so a handshake whose reply is late sends its Initial again after ~300 ms as Chromium
/// does, and datagrams of up to 1,250 bytes (QUICHE `kDefaultMaxPacketSize`, Chromium's
/// `QuicParams::max_packet_length`; quinn's default is 1,200). Both measured in the lab
/// (cellular-2013 pages over h3 on the whitepaper's DSL line, `tcpdump` in the client's
/// namespace): Chromium 156's Initial datagrams are 1,250 bytes, and on the congested
/// uplink it resent the ClientHello at 301 ms in most connections, 4 Initial datagrams a
/// connection on average against the loader's 3.3 with quinn's defaults.
fn client_transport() -> quinn::TransportConfig {
    let mut t = transport();
    t.mtu_discovery_config(None);
    t.initial_rtt(CHROMIUM_INITIAL_RTT);
    t.initial_mtu(CHROMIUM_MAX_PACKET);
    t
}

/// Chromium's QUIC RTT before the first sample (QUICHE `kInitialRttMs`).
const CHROMIUM_INITIAL_RTT: Duration = Duration::from_millis(100);

/// Chromium's largest QUIC datagram (QUICHE `kDefaultMaxPacketSize`).
const CHROMIUM_MAX_PACKET: u16 = 1250;

/// The server's transport settings: congestion control `cc`, and a connection receive
/// window of `limits.max_buffered`. quinn's default window is unbounded: a peer uploading
/// on each of its 100 streams to handlers that do not read made the server hold a
/// stream window (1.25 MB) each, 113 MiB on one connection (tests/abuse_h3_proxy.rs).
fn server_transport(cc: QuicCc, limits: &Limits) -> quinn::TransportConfig {
    let mut t = transport();
    t.congestion_controller_factory(cc.factory());
    let window = quinn::VarInt::from_u64(limits.max_buffered as u64).unwrap_or(quinn::VarInt::MAX);
    t.receive_window(window);
    t
}

/// Serves HTTP/3 on `listener` until `cfg.shutdown` is triggered: then it refuses new
/// connections at once (QUIC's CONNECTION_REFUSED), every connection says GOAWAY and
/// closes with H3_NO_ERROR once its requests are done and acknowledged, and this returns
/// after the last (bound the drain with a timeout around this future, as for
/// [`crate::server::serve`]). At most `cfg.limits.max_connections` connections at once,
/// and `cfg.limits.max_connections_per_ip` from one address; more are refused.
pub async fn serve_h3(
    listener: H3Listener,
    cfg: ServerConfig,
    handler: Arc<dyn Handler>,
) -> io::Result<()> {
    let mut config = listener.config.clone();
    config.transport_config(Arc::new(server_transport(listener.cc, &cfg.limits)));
    listener.endpoint.set_server_config(Some(config));
    let slots = Arc::new(Semaphore::new(
        cfg.limits.max_connections.clamp(1, Semaphore::MAX_PERMITS),
    ));
    // Counted at accept, as on TCP. The address is the one the client's first packet
    // came from, which anyone can forge: see `must_prove_address`.
    let per_ip = Arc::new(PerIp::new(cfg.limits.max_connections_per_ip));
    let shutdown = cfg.shutdown.clone();
    let cfg = Arc::new(cfg);
    let mut conns = tokio::task::JoinSet::new();
    let mut draining = false;
    while !(draining && conns.is_empty()) {
        let incoming = tokio::select! {
            i = listener.endpoint.accept() => match i {
                Some(i) => i,
                None => break,
            },
            _ = shutdown.wait(), if !draining => {
                draining = true;
                continue;
            }
            Some(_) = conns.join_next(), if draining => continue,
        };
        if draining {
            tracing::debug!("h3: {} refused: shutting down", incoming.remote_address());
            incoming.refuse();
            continue;
        }
        if must_prove_address(&incoming, &slots, cfg.limits.max_connections, &per_ip) {
            tracing::debug!(
                "h3: {} asked to prove its address",
                incoming.remote_address()
            );
            if incoming.retry().is_err() {
                tracing::debug!("h3: a Retry could not be sent");
            }
            continue;
        }
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            tracing::debug!(
                "h3: {} refused: connection limit",
                incoming.remote_address()
            );
            incoming.refuse();
            continue;
        };
        let Some(held) = per_ip.enter(incoming.remote_address().ip()) else {
            tracing::debug!(
                "h3: {} refused: its address holds its share",
                incoming.remote_address()
            );
            incoming.refuse();
            continue;
        };
        let (cfg, handler) = (cfg.clone(), handler.clone());
        conns.spawn(async move {
            if let Err(e) = serve_connection(incoming, &cfg, handler).await {
                tracing::debug!("h3 connection: {e}");
            }
            drop(held);
            drop(permit);
        });
        while conns.try_join_next().is_some() {}
    }
    while conns.join_next().await.is_some() {}
    listener.endpoint.wait_idle().await;
    Ok(())
}

/// Whether a client's first packet must be answered with a Retry (RFC 9000, 8.1.2)
/// before it may take a slot: when its source address is not proven yet and either half
/// the server's connections are in use or the address holds half its share. A Retry costs
/// the server no state and the client one round trip; only a client that receives at the
/// address it sends from can answer it. Without it, first packets from forged addresses
/// (each held until `sniff_timeout` ends its handshake) could take every slot, or the
/// per-address share of an address they name. Not at the address's first connection: a
/// browser opens one per origin from one address, and a Retry for each after the first
/// cost every one of them a round trip (the lab's replay servers did so to the loader
/// and to Chromium).
fn must_prove_address(
    incoming: &quinn::Incoming,
    slots: &Semaphore,
    max_connections: usize,
    per_ip: &PerIp,
) -> bool {
    if incoming.remote_address_validated() || !incoming.may_retry() {
        return false;
    }
    let busy = slots.available_permits() * 2 <= max_connections;
    busy || per_ip.holds_half(incoming.remote_address().ip())
}

/// The `h3` crate's server side of one connection.
type H3Server = h3::server::Connection<quic::Connection, Bytes>;

/// One QUIC connection: requests each on their own task until the peer closes or the
/// server shuts down. On shutdown: GOAWAY naming the first request not accepted (later
/// ones are rejected with H3_REQUEST_REJECTED), the requests accepted finish, their data
/// is acknowledged, then the connection closes with H3_NO_ERROR.
async fn serve_connection(
    incoming: quinn::Incoming,
    cfg: &ServerConfig,
    handler: Arc<dyn Handler>,
) -> Result<(), String> {
    let conn = tokio::time::timeout(cfg.limits.sniff_timeout, incoming)
        .await
        .map_err(|_| "QUIC handshake timed out".to_string())?
        .map_err(|e| format!("QUIC handshake: {e}"))?;
    let prio = Arc::new(Priorities::default());
    let max_header = cfg.spdy.max_header_block as u64;
    let quic = quic::Connection::new(conn.clone(), prio.clone()).limit_frames(max_header);
    let mut h3c = h3::server::builder()
        .max_field_section_size(max_header)
        .build::<_, Bytes>(quic)
        .await
        .map_err(|e| format!("h3 set-up: {e}"))?;
    // Dropping `h3c` closes the connection: it lives until the end.
    let drained = accept_requests(&mut h3c, cfg, handler, &prio).await;
    if drained {
        // quinn drops unacknowledged stream data on close, and a peer's HTTP/3 layer
        // fails reads of data it holds but has not read yet once the connection is
        // closed: wait for the peer's ACKs (bounded: an idle peer is gone by then
        // anyway), then for the peer to close, up to CLOSE_LINGER.
        let _ = tokio::time::timeout(IDLE_TIMEOUT, prio.acknowledged()).await;
        let _ = tokio::time::timeout(CLOSE_LINGER, conn.closed()).await;
        conn.close(quinn::VarInt::from_u32(0x100), b"shutting down"); // H3_NO_ERROR
    }
    Ok(())
}

/// Accepts requests on `h3c`, each answered on its own task, until the peer closes or,
/// after the server's shutdown (or `idle_timeout` with no request open), until the
/// requests accepted before the GOAWAY are done; `true` in that second case (the
/// connection is then to be closed).
async fn accept_requests(
    h3c: &mut H3Server,
    cfg: &ServerConfig,
    handler: Arc<dyn Handler>,
    prio: &Arc<Priorities>,
) -> bool {
    let mut streams = tokio::task::JoinSet::new();
    // Set with the GOAWAY: the first request stream id not processed.
    let mut goaway: Option<u64> = None;
    // Since when no request has been open (the QUIC keep-alives of either end would
    // otherwise hold an unused connection for ever).
    let mut quiet_since = tokio::time::Instant::now();
    loop {
        let idle = quiet_since + cfg.limits.idle_timeout;
        let next = tokio::select! {
            n = h3c.accept() => n,
            _ = cfg.shutdown.wait(), if goaway.is_none() => {
                goaway = Some(say_goaway(h3c, prio).await);
                if streams.is_empty() {
                    break;
                }
                continue;
            }
            _ = tokio::time::sleep_until(idle), if goaway.is_none() && streams.is_empty() => {
                tracing::debug!("h3 connection: no request for {:?}", cfg.limits.idle_timeout);
                goaway = Some(say_goaway(h3c, prio).await);
                break;
            }
            // (None when there is no task: the branch is then off.)
            Some(_) = streams.join_next() => {
                if streams.is_empty() {
                    if goaway.is_some() {
                        break;
                    }
                    quiet_since = tokio::time::Instant::now();
                }
                continue;
            }
        };
        match next {
            Ok(Some(resolver)) => {
                let handler = handler.clone();
                let prio = prio.clone();
                let max_body = cfg.max_body;
                let read_timeout = cfg.limits.body_read_timeout;
                let head_timeout = cfg.limits.header_read_timeout;
                streams.spawn(async move {
                    // A header section that does not come whole within the time drops the
                    // stream (STOP_SENDING, and its response side finished empty): a peer
                    // cannot hold a request stream open with one never finished.
                    let Ok(resolved) =
                        tokio::time::timeout(head_timeout, resolver.resolve_request()).await
                    else {
                        tracing::debug!("h3 request: no header section in {head_timeout:?}");
                        return;
                    };
                    match resolved {
                        Ok((_, mut stream))
                            if goaway.is_some_and(|g| stream.id().into_inner() >= g) =>
                        {
                            stream.stop_sending(h3::error::Code::H3_REQUEST_REJECTED);
                            stream.stop_stream(h3::error::Code::H3_REQUEST_REJECTED);
                        }
                        Ok((req, stream)) => {
                            let id = stream.id().into_inner();
                            if let Some(u) = req
                                .headers()
                                .get("priority")
                                .and_then(|v| parse_priority_field(v.as_bytes()))
                            {
                                prio.set_default(id, u);
                            }
                            answer(req, stream, handler, max_body, read_timeout).await
                        }
                        Err(e) => tracing::debug!("h3 request: {e}"),
                    }
                });
            }
            Ok(None) => break,
            Err(e) => {
                if !e.is_h3_no_error() {
                    tracing::debug!("h3 connection: {e}");
                }
                break;
            }
        }
    }
    while streams.join_next().await.is_some() {}
    goaway.is_some()
}

/// Sends GOAWAY; returns its id, the first request stream not processed.
async fn say_goaway(h3c: &mut H3Server, prio: &Priorities) -> u64 {
    let id = prio.next_request();
    // GOAWAY(id): `h3` sends the id after the last request it accepted plus one, the
    // same id; it rejects only streams above it, so a stream with this very id is
    // rejected in `accept_requests`.
    if let Err(e) = h3c.shutdown(1).await {
        tracing::debug!("h3 GOAWAY: {e}");
    }
    id
}

type ServerStream = h3::server::RequestStream<quic::BidiStream<Bytes>, Bytes>;

/// Answers one request: the handler's response head, then its body chunk by chunk.
async fn answer(
    req: http::Request<()>,
    stream: ServerStream,
    handler: Arc<dyn Handler>,
    max_body: usize,
    read_timeout: Duration,
) {
    let (mut send, recv) = stream.split();
    let (parts, ()) = req.into_parts();
    let host = parts
        .uri
        .authority()
        .map(|a| a.as_str().to_string())
        .unwrap_or_default();
    let r = Request::from_parts(&parts, host, "https", "h3", |len| {
        recv_body(recv, len, max_body).with_read_timeout(read_timeout)
    });
    if r.body.len().is_some_and(|n| n > max_body as u64) {
        drop(r);
        let head = build(413, &[], Some(0)).expect("plain 413");
        if send.send_response(head).await.is_ok() {
            let _ = send.finish().await;
        }
        return;
    }
    let resp: Response = handler.handle(r).await;
    if resp.reset.is_some() {
        send.stop_stream(h3::error::Code::H3_REQUEST_CANCELLED);
        return;
    }
    let mut body = resp.body;
    let head = match build(resp.status, &resp.headers, resp.head_len.or(body.len())) {
        Ok(h) => h,
        Err(_) => {
            body = Body::empty();
            build(500, &[], Some(0)).expect("plain 500")
        }
    };
    if let Err(e) = send.send_response(head).await {
        tracing::debug!("h3 response head: {e}");
        return;
    }
    if let Some(b) = body.take_full() {
        if !b.is_empty() && send.send_data(b).await.is_err() {
            return;
        }
    } else {
        // `send_data` returns once QUIC's stream took the chunk (its flow control), so
        // the next one is pulled only then.
        while let Some(c) = body.chunk().await {
            match c {
                Ok(c) if c.is_empty() => {}
                Ok(c) => {
                    if send.send_data(c).await.is_err() {
                        return;
                    }
                }
                Err(e) => {
                    tracing::debug!("h3 response body: {e}");
                    send.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
                    return;
                }
            }
        }
    }
    if let Err(e) = send.finish().await {
        tracing::debug!("h3 finish: {e}");
    }
}

/// A request (server) or response (client) body read from an HTTP/3 stream as the reader
/// asks, cut off with an `InvalidData` error past `max` bytes.
/// A response head for the `h3` crate's server: [`response_fields`] on the `http` crate's
/// builder.
fn build(
    status: u16,
    headers: &[(String, String)],
    len: Option<u64>,
) -> Result<http::Response<()>, http::Error> {
    let len = len.map(|n| n.to_string());
    response_fields(headers, len.as_deref())
        .into_iter()
        .fold(http::Response::builder().status(status), |b, (n, v)| {
            b.header(n, v)
        })
        .body(())
}

fn recv_body<S>(rx: h3::server::RequestStream<S, Bytes>, len: Option<u64>, max: usize) -> Body
where
    S: h3::quic::RecvStream + Send + 'static,
{
    let s = futures_util::stream::unfold(Some((rx, max as u64)), |st| async move {
        let (mut rx, left) = st?;
        match rx.recv_data().await {
            Ok(Some(mut b)) => {
                let b = b.copy_to_bytes(b.remaining());
                if b.len() as u64 > left {
                    rx.stop_sending(h3::error::Code::H3_REQUEST_CANCELLED);
                    let e = io::Error::new(io::ErrorKind::InvalidData, "body over its limit");
                    return Some((Err(e), None));
                }
                let left = left - b.len() as u64;
                Some((Ok(b), Some((rx, left))))
            }
            Ok(None) => None,
            Err(e) => Some((Err(io::Error::other(format!("h3: {e}"))), None)),
        }
    });
    Body::stream(s, len)
}

/// The client side of one HTTP/3 connection (cloned per request).
#[derive(Clone)]
pub struct H3Client {
    send: h3::client::SendRequest<quic::OpenStreams, Bytes>,
    /// PRIORITY_UPDATE frames and round trips.
    injector: Injector,
    /// The QUIC connection, for its counters.
    quic: quinn::Connection,
    /// Keeps the endpoint (its UDP socket and driver) alive with the connection.
    _endpoint: quinn::Endpoint,
}

/// Opens a QUIC connection to `host:port` (or `via`), TLS checked by `tls` (whose ALPN
/// is replaced by `h3`), and sets HTTP/3 up on it; also returns a one-line summary for
/// `-v` logs. Errors say `over QUIC` and name the address.
pub async fn connect(
    host: &str,
    port: u16,
    via: Option<SocketAddr>,
    tls: &rustls::ClientConfig,
    max_header_block: usize,
) -> Result<(H3Client, String), ClientError> {
    let addr = resolve(host, port, via).await?;
    let mut tls = tls.clone();
    tls.alpn_protocols = vec![ALPN.as_bytes().to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| ClientError::Connect(format!("TLS configuration unfit for QUIC: {e}")))?;
    let mut qcfg = quinn::ClientConfig::new(Arc::new(crypto));
    qcfg.transport_config(Arc::new(client_transport()));
    let mut endpoint = quinn::Endpoint::client(unspecified_for(addr))
        .map_err(|e| ClientError::Connect(format!("UDP socket: {e}")))?;
    endpoint.set_default_client_config(qcfg);
    let conn = endpoint
        .connect(addr, host)
        .map_err(|e| ClientError::Connect(format!("{host}:{port} over QUIC: {e}")))?
        .await
        .map_err(|e| ClientError::Connect(format!("{host}:{port} over QUIC: {e}")))?;
    let summary = format!(
        "QUIC to {addr}, TLS 1.3, ALPN {}",
        conn.handshake_data()
            .and_then(|d| d.downcast::<quinn::crypto::rustls::HandshakeData>().ok())
            .and_then(|d| d.protocol)
            .map_or("none".into(), |p| String::from_utf8_lossy(&p).into_owned())
    );
    let quic = conn.clone();
    let qc = quic::Connection::new(conn, Arc::default());
    let injector = qc.injector();
    let (mut driver, send) = h3::client::builder()
        .max_field_section_size(max_header_block as u64)
        .build::<_, _, Bytes>(qc)
        .await
        .map_err(|e| ClientError::Connect(format!("h3 set-up with {host}:{port}: {e}")))?;
    tokio::spawn(async move {
        let e = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        if !e.is_h3_no_error() {
            tracing::debug!("h3 client connection: {e}");
        }
    });
    Ok((
        H3Client {
            send,
            injector,
            quic,
            _endpoint: endpoint,
        },
        summary,
    ))
}

impl H3Client {
    /// UDP payload bytes (sent, received) on the connection so far.
    pub fn udp_bytes(&self) -> (u64, u64) {
        let s = self.quic.stats();
        (s.udp_tx.bytes, s.udp_rx.bytes)
    }

    /// The peer's address.
    pub fn peer(&self) -> SocketAddr {
        self.quic.remote_address()
    }

    /// Closes the connection (H3_NO_ERROR).
    pub fn close(&self) {
        self.quic.close(0x100u32.into(), b"");
    }

    /// Asks the server to send request stream `id` at `urgency` from now on (a
    /// PRIORITY_UPDATE frame on the control stream).
    pub fn reprioritize(&self, id: u64, urgency: u8) -> Result<(), ClientError> {
        self.injector
            .priority_update(id, urgency)
            .map_err(ClientError::Protocol)
    }

    /// A round trip to the server and back (see [`Injector::ping`]).
    pub async fn ping(&self) -> Option<Duration> {
        self.injector.ping().await
    }

    /// Sends `req` (head, then `body` if any) and waits for the response head; the body
    /// streams in as it is read (its length from `content-length`, when given). Also
    /// returns the request's stream id.
    pub async fn request(
        &self,
        req: http::Request<()>,
        body: Bytes,
    ) -> Result<(http::response::Parts, Body, u64), ClientError> {
        let h3_err = |e: h3::error::StreamError| ClientError::Http(format!("h3: {e}"));
        let mut send = self.send.clone();
        let mut stream = send.send_request(req).await.map_err(h3_err)?;
        let id = stream.id().into_inner();
        let sent = async {
            if !body.is_empty() {
                stream.send_data(body).await?;
            }
            stream.finish().await
        }
        .await;
        // RFC 9114 §4.1.2: a server may answer before reading the whole request and stop
        // the upload with H3_NO_ERROR (as speedy serve does with 413 for a body over
        // --max-body); the response stands, and the client must not discard it.
        // (h3's `is_h3_no_error` does not cover a stop from the peer: matched here.)
        match sent {
            Err(h3::error::StreamError::RemoteTerminate { code, .. })
                if code == h3::error::Code::H3_NO_ERROR => {}
            r => r.map_err(h3_err)?,
        }
        let (parts, ()) = stream.recv_response().await.map_err(h3_err)?.into_parts();
        let len = parts
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        let (_, recv) = stream.split();
        let s = futures_util::stream::unfold(Some(recv), |st| async move {
            let mut rx = st?;
            match rx.recv_data().await {
                Ok(Some(mut b)) => Some((Ok(b.copy_to_bytes(b.remaining())), Some(rx))),
                Ok(None) => None,
                Err(e) => Some((Err(io::Error::other(format!("h3: {e}"))), None)),
            }
        });
        Ok((parts, Body::stream(s, len), id))
    }
}
