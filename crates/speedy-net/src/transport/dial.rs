//! What every client transport needs to dial: resolving an origin, the local address of
//! a UDP socket (SCTP, QUIC), a TCP connection and a TLS one with what its handshake
//! settled. The client ([`crate::client`]) and the transports it drives (HTTP/3, SCTP,
//! the HTTP/1.1 `Upgrade`, the pipelined HTTP/1.1 connection) and the load generator
//! take these from here; nothing here reaches back up to the client.

use crate::reply::ClientError;
use crate::transport::io::BoxIo;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpStream;

/// Opens a TCP connection to `host:port` (or to `via`), with Nagle's algorithm off.
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

/// The local address to bind a UDP socket to for talking to `peer`: any address of its
/// family, any port.
pub(crate) fn unspecified_for(peer: SocketAddr) -> SocketAddr {
    match peer {
        SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    }
}

/// The address to dial for `host:port` over UDP (SCTP, QUIC): `via` when given, else the
/// first address the system resolver gives.
pub async fn resolve(
    host: &str,
    port: u16,
    via: Option<SocketAddr>,
) -> Result<SocketAddr, ClientError> {
    if let Some(a) = via {
        return Ok(a);
    }
    tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| ClientError::Connect(format!("{host}:{port}: {e}")))?
        .next()
        .ok_or_else(|| ClientError::Connect(format!("{host}: no address")))
}

/// What a TLS handshake settled: the ALPN protocol and a one-line summary (version,
/// cipher suite, ALPN) for `-v`.
pub(crate) struct TlsInfo {
    pub(crate) alpn: Option<String>,
    pub(crate) summary: String,
}

/// Opens a TCP connection to `host:port` (or to `via`) and completes a TLS handshake on
/// it with `tls`, naming `host` as the server.
pub(crate) async fn tls_dial(
    host: &str,
    port: u16,
    via: Option<SocketAddr>,
    tls: Arc<rustls::ClientConfig>,
) -> Result<(BoxIo, TlsInfo), ClientError> {
    let tcp = dial(host, port, via).await?;
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| ClientError::Connect(e.to_string()))?;
    let s = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .map_err(|e| {
            ClientError::Connect(crate::transport::tls::explain_handshake_error(
                host, port, &e,
            ))
        })?;
    let conn = s.get_ref().1;
    let alpn = conn
        .alpn_protocol()
        .map(|a| String::from_utf8_lossy(a).into_owned());
    let summary = format!(
        "TLS {} {}, ALPN {}",
        conn.protocol_version()
            .map_or("?".into(), |v| format!("{v:?}").replace("TLSv1_", "1.")),
        conn.negotiated_cipher_suite()
            .map_or("?".into(), |c| format!("{:?}", c.suite())),
        alpn.as_deref().unwrap_or("none")
    );
    Ok((Box::new(s), TlsInfo { alpn, summary }))
}
