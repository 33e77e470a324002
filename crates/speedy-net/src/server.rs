//! The server: one listener speaking SPDY (2, 3, 3.1), HTTP/2 and HTTP/1.1, over TCP or
//! TLS.
//!
//! Plain TCP: the first bytes decide (`80 02` → SPDY/2, `80 03` → SPDY/3, upgraded to
//! 3.1 semantics when the client sends a session WINDOW_UPDATE; the HTTP/2 preface →
//! h2c; anything else → HTTP/1.1). TLS: ALPN decides (`h2`, `spdy/3.1`, `spdy/3`,
//! `spdy/2`, `http/1.1`; no ALPN → HTTP/1.1).

pub use crate::handler::{Handler, Push, Ready, Request, Response, ResponseFuture, ServerConfig};
use crate::transport::io::{BoxIo, Prefixed};
use crate::transport::sctp::SctpListener;
use bytes::Bytes;
use spdy::Version;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// The HTTP/2 connection preface (RFC 9113 §3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Accepts connections, each on its own task, at most
/// [`Limits::max_connections`](crate::limits::Limits) at once (accepting waits for a
/// free slot, so the kernel's backlog holds the rest). Runs until `cfg.shutdown` is
/// triggered; then it stops accepting, and returns once every connection has drained
/// (sessions say GOAWAY, HTTP/1.1 closes after the response in flight). Bound the drain
/// with a timeout around this future.
pub async fn serve(
    listener: TcpListener,
    cfg: ServerConfig,
    handler: Arc<dyn Handler>,
) -> std::io::Result<()> {
    serve_on(Listener::Tcp(listener), cfg, handler).await
}

/// [`serve`] for SPDY over SCTP: the same limits, shutdown and drain, on associations
/// from an [`SctpListener`] (SPDY/2, 3 and 3.1, told apart by the first frame).
pub async fn serve_sctp(
    listener: SctpListener,
    mut cfg: ServerConfig,
    handler: Arc<dyn Handler>,
) -> std::io::Result<()> {
    cfg.spdy = crate::transport::sctp::spdy_config(&cfg.spdy);
    serve_on(Listener::Sctp(listener), cfg, handler).await
}

/// Where connections come from.
enum Listener {
    Tcp(TcpListener),
    Sctp(SctpListener),
}

/// One accepted connection.
enum Accepted {
    Tcp(TcpStream),
    Sctp(BoxIo),
}

impl Listener {
    /// Stops accepting at once; what it returns completes when the transport is done
    /// with every connection (TCP: at once; SCTP: [`SctpListener::close`]).
    fn close(self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        match self {
            Listener::Tcp(l) => {
                drop(l);
                Box::pin(std::future::ready(()))
            }
            Listener::Sctp(l) => Box::pin(l.close()),
        }
    }

    async fn accept(&mut self) -> std::io::Result<(Accepted, SocketAddr)> {
        match self {
            Listener::Tcp(l) => l.accept().await.map(|(s, a)| (Accepted::Tcp(s), a)),
            Listener::Sctp(l) => l.accept().await.map(|(s, a)| (Accepted::Sctp(s), a)),
        }
    }
}

async fn serve_on(
    mut listener: Listener,
    cfg: ServerConfig,
    handler: Arc<dyn Handler>,
) -> std::io::Result<()> {
    let cap = cfg.limits.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let slots = Arc::new(Semaphore::new(cap));
    let shutdown = cfg.shutdown.clone();
    let cfg = Arc::new(cfg);
    let closed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let trimmer = tokio::spawn(trim_after_closes(closed.clone()));
    let per_ip = Arc::new(PerIp::new(cfg.limits.max_connections_per_ip));
    loop {
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => p.expect("never closed"),
            _ = shutdown.wait() => break,
        };
        let (sock, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // EMFILE and friends: back off briefly rather than spin.
                    tracing::warn!("accept: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
            _ = shutdown.wait() => break,
        };
        let Some(held) = per_ip.enter(peer.ip()) else {
            tracing::debug!("connection {peer}: its address holds its share; closed");
            drop(sock);
            continue;
        };
        let cfg = cfg.clone();
        let handler = handler.clone();
        let closed = closed.clone();
        tokio::spawn(async move {
            let served = match sock {
                Accepted::Tcp(sock) => serve_connection(sock, peer, &cfg, handler).await,
                Accepted::Sctp(io) => serve_sctp_connection(io, &cfg, handler).await,
            };
            if let Err(e) = served {
                tracing::debug!("connection {peer}: {e}");
            }
            closed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            drop(held);
            drop(permit);
        });
    }
    let closed = listener.close();
    // Every slot back: every connection is done.
    let _ = slots.acquire_many(cap as u32).await;
    trimmer.abort();
    // SCTP: the associations' SHUTDOWN exchanges too.
    closed.await;
    Ok(())
}

/// Open connections per peer address (IPv6 per /64, the block one subscriber gets), held
/// to a cap: the per-IP fairness of [`Limits::max_connections_per_ip`]
/// (crate::limits::Limits). One lock per accept and per close. Also HTTP/3's
/// (`crate::h3::serve_h3`).
pub(crate) struct PerIp {
    cap: usize,
    open: std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>,
}

/// A connection counted against its address until dropped.
pub(crate) struct Held {
    key: Option<std::net::IpAddr>,
    table: Arc<PerIp>,
}

impl PerIp {
    pub(crate) fn new(cap: usize) -> PerIp {
        PerIp {
            cap,
            open: Default::default(),
        }
    }

    /// The address a peer is counted under.
    fn key(ip: std::net::IpAddr) -> std::net::IpAddr {
        match ip {
            std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => v4.into(),
                None => {
                    let s = v6.segments();
                    std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0).into()
                }
            },
            v4 => v4,
        }
    }

    /// Whether `ip`'s address holds at least half its cap now (never without a cap).
    pub(crate) fn holds_half(&self, ip: std::net::IpAddr) -> bool {
        let open = self.open.lock().expect("not poisoned");
        let n = open.get(&PerIp::key(ip)).copied().unwrap_or(0);
        self.cap > 0 && n * 2 >= self.cap
    }

    /// Counts a new connection from `ip`, or `None` when its address holds the cap.
    pub(crate) fn enter(self: &Arc<Self>, ip: std::net::IpAddr) -> Option<Held> {
        if self.cap == 0 {
            return Some(Held {
                key: None,
                table: self.clone(),
            });
        }
        let key = PerIp::key(ip);
        let mut open = self.open.lock().expect("not poisoned");
        let n = open.entry(key).or_insert(0);
        if *n >= self.cap {
            return None;
        }
        *n += 1;
        Some(Held {
            key: Some(key),
            table: self.clone(),
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(key) = self.key else { return };
        let mut open = self.table.open.lock().expect("not poisoned");
        if let Some(n) = open.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                open.remove(&key);
            }
        }
    }
}

/// Connections that must have closed (or sessions parked) since the last trim before the
/// next one.
const TRIM_AFTER_CLOSED: usize = 64;

/// Gives the heap that closed connections freed back to the system. glibc's malloc keeps
/// freed memory in its per-thread arenas: after 10,000 idle sessions closed, the server
/// stayed at 400 MB resident (`bench/soak.sh`). Sessions that park (`spdy::conn`'s
/// `park_after`) free most of their memory the same way: 10,000 sessions that went quiet
/// together left holes that stayed resident. Once a burst of closes and parks is over
/// (at least [`TRIM_AFTER_CLOSED`] since the last trim, and none in the last 2 s),
/// `malloc_trim(0)` runs on a blocking thread: never while connections keep turning
/// over, when the freed memory is about to be reused anyway.
async fn trim_after_closes(closed: Arc<std::sync::atomic::AtomicUsize>) {
    let mut tick = tokio::time::interval(Duration::from_secs(2));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut seen, mut trimmed) = (0, 0);
    loop {
        tick.tick().await;
        let now = closed.load(std::sync::atomic::Ordering::Relaxed)
            + crate::spdy::conn::PARKS.load(std::sync::atomic::Ordering::Relaxed);
        let quiet = now == seen;
        seen = now;
        if !quiet || now - trimmed < TRIM_AFTER_CLOSED {
            continue;
        }
        trimmed = now;
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        let _ = tokio::task::spawn_blocking(|| {
            // SAFETY: malloc_trim only releases free memory; it has no preconditions.
            unsafe { libc::malloc_trim(0) }
        })
        .await;
    }
}

/// Runs `f`, or fails with `TimedOut` naming `what` after `limit`.
async fn within<T>(
    limit: Duration,
    what: &str,
    f: impl std::future::Future<Output = std::io::Result<T>>,
) -> std::io::Result<T> {
    match tokio::time::timeout(limit, f).await {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("{what}: no progress within {limit:?}"),
        )),
    }
}

/// Serves one accepted connection.
pub async fn serve_connection(
    sock: TcpStream,
    peer: SocketAddr,
    cfg: &ServerConfig,
    handler: Arc<dyn Handler>,
) -> std::io::Result<()> {
    let _ = sock.set_nodelay(true);
    if let Some(n) = cfg.notsent_lowat {
        crate::transport::sockinfo::set_notsent_lowat(&sock, n);
    }
    if let Some(series) = &cfg.tcp_series {
        series.watch(&sock, peer);
    }
    let limits = cfg.limits;
    // A connection that has not said which protocol it speaks has nothing to drain.
    let sniffing = within(limits.sniff_timeout, "protocol sniff", sniff(sock));
    let sniffed = tokio::select! {
        r = sniffing => r?,
        _ = cfg.shutdown.wait() => None,
    };
    let Some((sock, first, sniffed)) = sniffed else {
        return Ok(());
    };
    // A TLS ClientHello starts with record type 0x16: TLS and plain share the port.
    if let (Some(tls), 0x16) = (&cfg.tls, first[0]) {
        let io = Prefixed::new(Bytes::from(sniffed), sock);
        return serve_tls(io, peer, tls.clone(), cfg, handler).await;
    }
    let is_h2 = sniffed == H2_PREFACE;
    let io: BoxIo = Box::new(Prefixed::new(Bytes::from(sniffed), sock));
    if is_h2 {
        return crate::h2::server::serve(io, "http", cfg, handler).await;
    }
    match first {
        [0x80, 2] => crate::spdy::server::run(io, Version::V2, false, "http", cfg, handler).await,
        [0x80, 3] => crate::spdy::server::run(io, Version::V3, true, "http", cfg, handler).await,
        _ => crate::http1::server::serve(io, peer, "http", cfg, handler).await,
    }
}

/// Serves one connection over TLS with `tls`, the handshake still to come: ALPN decides
/// the protocol (`h2`, `spdy/3.1`, `spdy/3`, `spdy/2`; anything else HTTP/1.1), as on a
/// listener's TLS connections. `io` may be any byte stream: an accepted socket, or the
/// inside of a CONNECT tunnel that a recording proxy terminates itself. The handshake is
/// bounded by the limits of `cfg`; `peer` is who is served (HTTP/1.1's logs).
pub async fn serve_tls(
    io: impl crate::transport::io::Io,
    peer: SocketAddr,
    tls: Arc<rustls::ServerConfig>,
    cfg: &ServerConfig,
    handler: Arc<dyn Handler>,
) -> std::io::Result<()> {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let handshake = within(
        cfg.limits.tls_handshake_timeout,
        "TLS handshake",
        acceptor.accept(io),
    );
    let stream = tokio::select! {
        r = handshake => r?,
        _ = cfg.shutdown.wait() => return Ok(()),
    };
    let alpn = stream
        .get_ref()
        .1
        .alpn_protocol()
        .map(|a| String::from_utf8_lossy(a).into_owned());
    let io: BoxIo = Box::new(stream);
    if alpn.as_deref() == Some("h2") {
        return crate::h2::server::serve(io, "https", cfg, handler).await;
    }
    match alpn.as_deref().and_then(Version::from_name) {
        Some(v) => crate::spdy::server::run(io, v, false, "https", cfg, handler).await,
        None => crate::http1::server::serve(io, peer, "https", cfg, handler).await,
    }
}

/// Serves one SCTP association: SPDY only, its version from the first frame.
async fn serve_sctp_connection(
    mut io: BoxIo,
    cfg: &ServerConfig,
    handler: Arc<dyn Handler>,
) -> std::io::Result<()> {
    let mut first = [0u8; 2];
    let read = within(
        cfg.limits.sniff_timeout,
        "first frame",
        io.read_exact(&mut first),
    );
    tokio::select! {
        r = read => { r?; }
        _ = cfg.shutdown.wait() => return Ok(()),
    }
    let version = match first {
        [0x80, 2] => Version::V2,
        [0x80, 3] => Version::V3,
        _ => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("over SCTP only SPDY is spoken; the first bytes were {first:02x?}"),
            ))
        }
    };
    let io: BoxIo = Box::new(Prefixed::new(Bytes::copy_from_slice(&first), io));
    crate::spdy::server::run(io, version, version == Version::V3, "http", cfg, handler).await
}

/// Reads the first bytes of a connection: two (a TLS record type or a SPDY control
/// frame's version), and for `PR` as much of the HTTP/2 preface as matches. `None`: the
/// peer closed first.
async fn sniff(mut sock: TcpStream) -> std::io::Result<Option<(TcpStream, [u8; 2], Vec<u8>)>> {
    let mut first = [0u8; 2];
    let mut got = 0;
    while got < 2 {
        let n = sock.read(&mut first[got..]).await?;
        if n == 0 {
            return Ok(None);
        }
        got += n;
    }
    let mut sniffed = first.to_vec();
    if first == *b"PR" {
        // Maybe the HTTP/2 connection preface (h2c with prior knowledge).
        while sniffed.len() < H2_PREFACE.len() && H2_PREFACE.starts_with(&sniffed) {
            let mut more = [0u8; 24];
            let want = H2_PREFACE.len() - sniffed.len();
            let n = sock.read(&mut more[..want]).await?;
            if n == 0 {
                return Ok(None);
            }
            sniffed.extend_from_slice(&more[..n]);
        }
    }
    Ok(Some((sock, first, sniffed)))
}
