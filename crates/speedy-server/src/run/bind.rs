//! Setting up a server's listeners: TLS on the server configuration, the TCP sender-side
//! series, and the UDP listeners that share the TCP ports (SPDY over SCTP, HTTP/3 over
//! QUIC, one-datagram GETs).

use super::named;
use crate::spec::ServeSpec;
use crate::startup::{Listener, ListenerKind};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use speedy_net::h3::{H3Listener, QuicCc};
use speedy_net::sctp::{SctpConfig, SctpListener};
use speedy_net::server::ServerConfig;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A certificate chain and its private key.
pub(super) type KeyPair = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// The TLS side of a listener: a fresh self-signed pair, or a certificate chain and its
/// key (PEM), offering every protocol by ALPN; neither leaves `cfg` plain TCP only.
pub(super) fn set_tls(
    cfg: &mut ServerConfig,
    self_signed: bool,
    cert: Option<&Path>,
    key: Option<&Path>,
) -> Result<(), String> {
    let pair = if self_signed {
        Some(speedy_net::tls::self_signed(&[])?)
    } else if let (Some(c), Some(k)) = (cert, key) {
        Some(speedy_net::tls::load_pem(c, k)?)
    } else {
        None
    };
    if let Some(pair) = pair {
        use_pair(cfg, pair, |e| match (cert, key) {
            (Some(c), Some(k)) => format!(
                "--tls-cert {} / --tls-key {}: {e}",
                c.display(),
                k.display()
            ),
            _ => e,
        })?;
    }
    Ok(())
}

/// TLS on `cfg` with `pair`, offering every protocol by ALPN; `named` words a refusal.
pub(super) fn use_pair(
    cfg: &mut ServerConfig,
    (certs, key): KeyPair,
    named: impl FnOnce(String) -> String,
) -> Result<(), String> {
    cfg.tls = Some(
        speedy_net::tls::server_config(certs, key, &speedy_net::tls::SERVER_ALPN).map_err(named)?,
    );
    Ok(())
}

/// Starts a sender-side TCP series into `path` (created or truncated), if given.
pub(super) fn tcp_series(
    path: Option<&Path>,
    interval_ms: u64,
) -> Result<Option<Arc<speedy_net::transport::sockinfo::TcpSeries>>, String> {
    let Some(p) = path else { return Ok(None) };
    if interval_ms == 0 {
        return Err("--tcp-interval-ms 0: at least 1".into());
    }
    let f =
        std::fs::File::create(p).map_err(|e| named(format!("--tcp-series {}", p.display()), &e))?;
    let interval = Duration::from_millis(interval_ms);
    Ok(Some(speedy_net::transport::sockinfo::TcpSeries::start(
        std::io::BufWriter::new(f),
        interval,
    )))
}

/// A TCP listener at each of `binds`, in order; errors say `what` failed to bind.
pub(super) async fn bind_tcp(
    binds: &[String],
    what: impl Fn(&str) -> String,
) -> Result<Vec<tokio::net::TcpListener>, String> {
    let mut listeners = Vec::new();
    for b in binds {
        let l = tokio::net::TcpListener::bind(b)
            .await
            .map_err(|e| named(what(b), &e))?;
        listeners.push(l);
    }
    Ok(listeners)
}

/// What a server accepts over UDP beside its TCP listeners.
#[derive(Default)]
pub(super) struct Udp {
    /// `--sctp`: SPDY over SCTP.
    pub(super) sctp: Vec<SctpListener>,
    /// `--sctp-counters`: where the SCTP counters are kept.
    pub(super) sctp_counters: Option<PathBuf>,
    /// `--h3`: HTTP/3 over QUIC.
    pub(super) h3: Vec<H3Listener>,
    /// `--udp-get`: one datagram each way.
    pub(super) udp_get: Vec<tokio::net::UdpSocket>,
}

impl Udp {
    /// Binds what `spec` asks for on UDP at each of `addrs` (the TCP listeners'
    /// addresses), HTTP/3 with the TLS configuration of `cfg`.
    pub(super) async fn bind(
        spec: &ServeSpec,
        cfg: &ServerConfig,
        addrs: &[SocketAddr],
    ) -> Result<Udp, String> {
        // The listeners on the TCP ports first, so that SCTP's free port (--sctp-port 0)
        // is none of theirs.
        let h3 = bind_h3(spec.h3, spec.quic_cc(), cfg, addrs)?;
        let udp_get = bind_udp_get(spec.udp_get, addrs).await?;
        Ok(Udp {
            sctp: bind_sctp(spec, &cfg.limits, addrs).await?,
            sctp_counters: spec.sctp_counters.clone(),
            h3,
            udp_get,
        })
    }

    /// Every UDP listener and its address, for the start-up line.
    pub(super) fn listeners(&self) -> Result<Vec<Listener>, String> {
        let mut out = Vec::new();
        for l in &self.sctp {
            out.push((ListenerKind::Sctp, l.local_addr()));
        }
        for l in &self.h3 {
            let addr = l.local_addr().map_err(|e| named("--h3", &e))?;
            out.push((ListenerKind::H3, addr));
        }
        for s in &self.udp_get {
            let addr = s.local_addr().map_err(|e| named("--udp-get", &e))?;
            out.push((ListenerKind::UdpGet, addr));
        }
        Ok(out
            .into_iter()
            .map(|(kind, addr)| Listener { kind, addr })
            .collect())
    }

    /// The human start-up line's notes on SCTP and HTTP/3 (empty without them).
    pub(super) fn notes(&self, tcp_port: u16) -> String {
        let mut s = String::new();
        if let Some(l) = self.sctp.first() {
            match l.local_addr().port() {
                p if p == tcp_port => s.push_str("; SPDY over SCTP on UDP, same port"),
                p => s.push_str(&format!("; SPDY over SCTP on UDP port {p}")),
            }
        }
        if !self.h3.is_empty() {
            s.push_str("; h3 over QUIC on UDP, same port");
        }
        s
    }
}

/// With `--udp-get`: a UDP socket at each of `addrs`.
async fn bind_udp_get(
    on: bool,
    addrs: &[SocketAddr],
) -> Result<Vec<tokio::net::UdpSocket>, String> {
    let mut v = Vec::new();
    for a in addrs.iter().filter(|_| on) {
        let s = tokio::net::UdpSocket::bind(a)
            .await
            .map_err(|e| named(format!("--udp-get: binding UDP {a}"), &e))?;
        v.push(s);
    }
    Ok(v)
}

/// With `--h3`: a QUIC endpoint on UDP at each of `addrs`, with the TLS configuration of
/// `cfg` (refused by name without one).
fn bind_h3(
    on: bool,
    cc: QuicCc,
    cfg: &ServerConfig,
    addrs: &[SocketAddr],
) -> Result<Vec<H3Listener>, String> {
    if !on {
        return Ok(Vec::new());
    }
    let Some(tls) = &cfg.tls else {
        return Err("--h3: HTTP/3 needs TLS (--tls-self-signed, --tls-cert, or an archive of https origins)".into());
    };
    addrs
        .iter()
        .map(|a| {
            H3Listener::bind(*a, tls, cc).map_err(|e| named(format!("--h3: binding UDP {a}"), &e))
        })
        .collect()
}

/// With `--sctp`: an SCTP endpoint on UDP at each of `addrs`, at their ports or at
/// `--sctp-port` (0: the free port the first bind picks, then the same at every address).
/// Each endpoint holds at most `--max-connections` associations, handshakes included, and
/// `--max-connections-per-ip` from one address.
async fn bind_sctp(
    spec: &ServeSpec,
    limits: &speedy_net::Limits,
    addrs: &[SocketAddr],
) -> Result<Vec<SctpListener>, String> {
    let cfg = SctpConfig {
        max_associations: limits.max_connections,
        max_associations_per_ip: limits.max_connections_per_ip,
        stack: spec.sctp_stack,
        ..SctpConfig::default().with_rto_initial_ms(spec.sctp_rto_initial_ms)
    };
    let mut port = spec.sctp_port;
    let mut out = Vec::new();
    for a in addrs.iter().filter(|_| spec.sctp) {
        let at = SocketAddr::new(a.ip(), port.unwrap_or(a.port()));
        let l = SctpListener::bind(at, &cfg).await.map_err(|e| {
            let flag = match spec.sctp_port {
                Some(p) => format!("--sctp-port {p}"),
                None => "--sctp".into(),
            };
            named(format!("{flag}: binding UDP {at}"), &e)
        })?;
        if port == Some(0) {
            port = Some(l.local_addr().port());
        }
        out.push(l);
    }
    Ok(out)
}
