//! Name resolution from a map (with a cost per new host), dialling TCP and TLS (or QUIC)
//! with the time of each phase, and the kernel's TCP_INFO of a connection.

use speedy_net::io::BoxIo;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::sync::OnceCell;

/// An address a host name maps to; without a port, the URL's port (or 80/443) is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// IP address.
    pub ip: IpAddr,
    /// Port override.
    pub port: Option<u16>,
}

impl Target {
    /// Parses `IP`, `IP:PORT`, `[IPv6]` or `[IPv6]:PORT`.
    pub fn parse(s: &str) -> Option<Target> {
        if let Ok(ip) = s.parse::<IpAddr>() {
            return Some(Target { ip, port: None });
        }
        if let Ok(sa) = s.parse::<SocketAddr>() {
            return Some(Target {
                ip: sa.ip(),
                port: Some(sa.port()),
            });
        }
        let inner = s.strip_prefix('[')?.strip_suffix(']')?;
        Some(Target {
            ip: inner.parse().ok()?,
            port: None,
        })
    }
}

/// One host's look-up, shared by everyone asking for it.
type Lookup = Arc<OnceCell<Result<Target, String>>>;

/// The loader's name resolver: a fixed map (`--resolve HOST=IP[:PORT]`, `*` for every
/// other host), each new host costing `cost` once (later look-ups are cached, concurrent
/// ones wait for the first). Hosts that are IP literals resolve at no cost. A host not in
/// the map falls back to the system resolver, timed as it happens.
pub struct Resolver {
    map: HashMap<String, Target>,
    wildcard: Option<Target>,
    cost: Duration,
    cache: Mutex<HashMap<String, Lookup>>,
}

impl Resolver {
    /// A resolver over `map` (host → target; the key `*` matches any host).
    pub fn new(map: HashMap<String, Target>, cost: Duration) -> Resolver {
        let mut map: HashMap<String, Target> = map
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        let wildcard = map.remove("*");
        Resolver {
            map,
            wildcard,
            cost,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The configured cost of a new host.
    pub fn cost(&self) -> Duration {
        self.cost
    }

    /// Resolves `host` (no port); waits for the cost on the first look-up of a host.
    pub async fn lookup(&self, host: &str) -> Result<Target, String> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            if !self.map.contains_key(host) {
                return Ok(Target { ip, port: None });
            }
        }
        let cell = self
            .cache
            .lock()
            .expect("not poisoned")
            .entry(host.to_string())
            .or_default()
            .clone();
        cell.get_or_init(|| async {
            if let Some(t) = self.map.get(host).or(self.wildcard.as_ref()) {
                if !self.cost.is_zero() {
                    tokio::time::sleep(self.cost).await;
                }
                return Ok(*t);
            }
            let mut addrs = tokio::net::lookup_host((host, 0))
                .await
                .map_err(|e| format!("resolving {host}: {e} (no --resolve entry)"))?;
            addrs
                .next()
                .map(|a| Target {
                    ip: a.ip(),
                    port: None,
                })
                .ok_or_else(|| format!("resolving {host}: no address"))
        })
        .await
        .clone()
    }
}

/// Times of one connection's set-up.
#[derive(Clone, Copy, Debug)]
pub struct DialTimes {
    /// Dialling began.
    pub start: Instant,
    /// Name resolution done.
    pub dns_end: Instant,
    /// TCP handshake done.
    pub tcp_end: Instant,
    /// TLS handshake done (= `tcp_end` without TLS); the connection is ready.
    pub ready: Instant,
    /// Whether TLS was used.
    pub tls: bool,
}

/// A connected transport.
pub struct Dialed {
    /// The byte stream (TCP or TLS over it).
    pub io: BoxIo,
    /// A duplicate of the socket's descriptor, for TCP_INFO.
    pub fd: Option<OwnedFd>,
    /// Phase times.
    pub times: DialTimes,
    /// The address connected to.
    pub peer: SocketAddr,
    /// The protocol ALPN chose, over TLS.
    pub alpn: Option<String>,
}

/// How far a dial has got, before it is ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DialPhase {
    /// The host resolved; the transport is connecting.
    Resolved,
    /// The transport connected (TCP, a proxy's tunnel, or the SCTP socket); TLS may
    /// follow.
    Connected,
}

/// What to dial.
pub struct DialSpec<'a> {
    /// Host name (for resolution and SNI).
    pub host: &'a str,
    /// The URL's port, if explicit.
    pub url_port: Option<u16>,
    /// TLS config when TLS is used.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// `host` is an HTTP proxy: ask it to CONNECT to this `host:port`, then speak TLS
    /// (SNI and certificate: this host) inside the tunnel.
    pub tunnel: Option<(&'a str, u16)>,
    /// SCTP over UDP instead of TCP (no TLS, no tunnel). The association's handshake
    /// is not waited for: the session's first frames go with it (the COOKIE ECHO's
    /// packet, when bundling), so its time shows in the first request's wait, and the
    /// connect phase is only the socket's set-up.
    pub sctp: Option<speedy_net::sctp::SctpConfig>,
    /// Told of each [`DialPhase`] the dial reaches.
    pub progress: &'a (dyn Fn(DialPhase) + Send + Sync),
}

/// Resolves and connects, timing each phase.
pub async fn dial(resolver: &Resolver, spec: DialSpec<'_>) -> Result<Dialed, String> {
    let start = Instant::now();
    let target = resolver.lookup(spec.host).await?;
    let dns_end = Instant::now();
    (spec.progress)(DialPhase::Resolved);
    let port = target
        .port
        .or(spec.url_port)
        .unwrap_or(if spec.tls.is_some() { 443 } else { 80 });
    let peer = SocketAddr::new(target.ip, port);
    if let Some(sctp) = &spec.sctp {
        if spec.tls.is_some() || spec.tunnel.is_some() {
            return Err(format!("{}: SCTP carries plain SPDY only", spec.host));
        }
        // At the server's SCTP port (`--sctp-port`), where it has one of its own.
        let peer = sctp.peer(peer);
        let io = speedy_net::sctp::dial(peer, sctp)
            .await
            .map_err(|e| format!("SCTP association to {peer} for {}: {e}", spec.host))?;
        let ready = Instant::now();
        (spec.progress)(DialPhase::Connected);
        return Ok(Dialed {
            io,
            fd: None,
            times: DialTimes {
                start,
                dns_end,
                tcp_end: ready,
                ready,
                tls: false,
            },
            peer,
            alpn: None,
        });
    }
    let mut tcp = TcpStream::connect(peer)
        .await
        .map_err(|e| format!("connecting to {peer} for {}: {e}", spec.host))?;
    let _ = tcp.set_nodelay(true);
    let fd = tcp.as_fd().try_clone_to_owned().ok();
    // Through a tunnel, its set-up is part of the connect phase (as a browser's HAR
    // shows it) and TLS names the target.
    let host = match spec.tunnel {
        Some((h, p)) => {
            connect_tunnel(&mut tcp, h, p)
                .await
                .map_err(|e| format!("proxy {} ({peer}): CONNECT {h}:{p}: {e}", spec.host))?;
            h
        }
        None => spec.host,
    };
    let tcp_end = Instant::now();
    (spec.progress)(DialPhase::Connected);
    let Some(tls) = spec.tls else {
        return Ok(Dialed {
            io: Box::new(tcp),
            fd,
            times: DialTimes {
                start,
                dns_end,
                tcp_end,
                ready: tcp_end,
                tls: false,
            },
            peer,
            alpn: None,
        });
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let name = rustls::pki_types::ServerName::try_from(bare.to_string())
        .map_err(|e| format!("{host}: {e}"))?;
    let s = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .map_err(|e| {
            let why = speedy_net::tls::explain_handshake_error(bare, peer.port(), &e);
            format!("{why} (connected to {peer})")
        })?;
    let alpn = s
        .get_ref()
        .1
        .alpn_protocol()
        .map(|a| String::from_utf8_lossy(a).into_owned());
    Ok(Dialed {
        io: Box::new(s),
        fd,
        times: DialTimes {
            start,
            dns_end,
            tcp_end,
            ready: Instant::now(),
            tls: true,
        },
        peer,
        alpn,
    })
}

/// Resolves `host` and opens a QUIC connection with HTTP/3 on it (TLS 1.3 inside the QUIC
/// handshake, checked by `tls`), timing each phase: the handshake is the connect and TLS
/// phases at once (`tcp_end` = `ready`, as a browser's HAR shows a QUIC connection).
pub async fn dial_quic(
    resolver: &Resolver,
    host: &str,
    url_port: Option<u16>,
    tls: &rustls::ClientConfig,
) -> Result<(speedy_net::h3::H3Client, DialTimes), String> {
    let start = Instant::now();
    let target = resolver.lookup(host).await?;
    let dns_end = Instant::now();
    let peer = SocketAddr::new(target.ip, target.port.or(url_port).unwrap_or(443));
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    // The same bound on a response head as over HTTP/1.1 and h2.
    let max_head = crate::conn::http1::MAX_HEAD;
    let (conn, _) = speedy_net::h3::connect(bare, peer.port(), Some(peer), tls, max_head)
        .await
        .map_err(|e| format!("{e} (for {host})"))?;
    let ready = Instant::now();
    Ok((
        conn,
        DialTimes {
            start,
            dns_end,
            tcp_end: ready,
            ready,
            tls: true,
        },
    ))
}

/// Asks the HTTP proxy on `tcp` for a tunnel to `host:port` and reads its answer's head:
/// a 2xx opens the tunnel, anything else is an error quoting the status line.
async fn connect_tunnel(tcp: &mut TcpStream, host: &str, port: u16) -> Result<(), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let req = format!("CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n");
    tcp.write_all(req.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    // Byte by byte up to the blank line: nothing of the tunnel is read ahead.
    let mut head = Vec::with_capacity(256);
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 16 * 1024 {
            return Err("the proxy's answer has no end of head in 16 KiB".into());
        }
        let b = tcp.read_u8().await.map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => "the proxy closed the connection".to_string(),
            _ => e.to_string(),
        })?;
        head.push(b);
    }
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut resp = httparse::Response::new(&mut headers);
    resp.parse(&head).map_err(|e| format!("bad answer: {e}"))?;
    match resp.code {
        Some(200..=299) => Ok(()),
        _ => {
            let line = String::from_utf8_lossy(&head);
            Err(format!(
                "refused: {}",
                line.lines().next().unwrap_or_default().trim()
            ))
        }
    }
}

pub use speedy_net::transport::sockinfo::{tcp_info, TcpInfo};

/// Measures one round trip to `addr` as the time of a TCP handshake (for costs given in
/// RTTs when no RTT is configured). The connection is closed at once.
pub async fn probe_rtt(addr: SocketAddr) -> Option<Duration> {
    let t = Instant::now();
    let s = tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(addr))
        .await
        .ok()?
        .ok()?;
    let d = t.elapsed();
    drop(s);
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_targets() {
        let t = Target::parse("127.0.0.1:8443").unwrap();
        assert_eq!(t.port, Some(8443));
        assert_eq!(Target::parse("10.0.0.1").unwrap().port, None);
        assert_eq!(
            Target::parse("[::1]").unwrap().ip,
            "::1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(Target::parse("[::1]:80").unwrap().port, Some(80));
        assert_eq!(Target::parse("nope"), None);
    }

    #[tokio::test]
    async fn charges_the_cost_once_per_host() {
        let mut m = HashMap::new();
        m.insert("a.example".to_string(), Target::parse("127.0.0.1").unwrap());
        m.insert("*".to_string(), Target::parse("127.0.0.2:81").unwrap());
        let r = Arc::new(Resolver::new(m, Duration::from_millis(50)));
        let t = Instant::now();
        let (x, y) = tokio::join!(r.lookup("a.example"), r.lookup("a.example"));
        assert_eq!(x, y);
        assert!(t.elapsed() >= Duration::from_millis(50));
        let t = Instant::now();
        r.lookup("a.example").await.unwrap();
        assert!(t.elapsed() < Duration::from_millis(40));
        assert_eq!(r.lookup("other.example").await.unwrap().port, Some(81));
        let t = Instant::now();
        r.lookup("127.0.0.9").await.unwrap();
        assert!(t.elapsed() < Duration::from_millis(40));
    }
}
