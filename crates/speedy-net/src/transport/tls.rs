//! TLS configuration (rustls): servers with a given or self-signed certificate, clients
//! that verify against the system roots, a CA file, or (insecure) nothing.

use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use std::path::Path;
use std::sync::Arc;

/// ALPN ids a speedy server accepts, most preferred first (rustls picks the first of
/// these that the client offers).
pub const SERVER_ALPN: [&str; 5] = ["spdy/3.1", "spdy/3", "spdy/2", "h2", "http/1.1"];
/// ALPN ids the [`crate::Client`] offers when no protocol is forced.
pub const CLIENT_ALPN: [&str; 5] = ["spdy/3.1", "spdy/3", "spdy/2", "h2", "http/1.1"];

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A self-signed certificate for `localhost`, `127.0.0.1` and `::1` plus `names`.
pub fn self_signed(
    names: &[String],
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let mut sans = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    sans.extend(names.iter().cloned());
    let ck = rcgen::generate_simple_self_signed(sans)
        .map_err(|e| format!("generating a certificate: {e}"))?;
    let key = PrivateKeyDer::try_from(ck.key_pair.serialize_der()).map_err(|e| e.to_string())?;
    Ok((vec![ck.cert.der().clone()], key))
}

/// Reads a PEM certificate chain and private key.
pub fn load_pem(
    cert: &Path,
    key: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let cf = std::fs::read(cert).map_err(|e| format!("{}: {e}", cert.display()))?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut &cf[..])
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no PEM certificate found", cert.display()));
    }
    let kf = std::fs::read(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let key = rustls_pemfile::private_key(&mut &kf[..])
        .map_err(|e| format!("{}: {e}", key.display()))?
        .ok_or_else(|| format!("{}: no PEM private key found", key.display()))?;
    Ok((certs, key))
}

/// A server config offering `alpn` (ALPN ids, preferred first).
pub fn server_config(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    alpn: &[&str],
) -> Result<Arc<rustls::ServerConfig>, String> {
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => {
                "the private key does not belong to the certificate".to_string()
            }
            e => format!("certificate/key: {e}"),
        })?;
    cfg.alpn_protocols = alpn.iter().map(|a| a.as_bytes().to_vec()).collect();
    Ok(Arc::new(cfg))
}

/// How a client checks server certificates.
#[derive(Clone, Debug, Default)]
pub enum Verify {
    /// The system's root store.
    #[default]
    System,
    /// Certificates from a PEM file.
    CaFile(std::path::PathBuf),
    /// No verification (for self-signed lab servers).
    Insecure,
}

/// Reads the certificates of a CA file (PEM); a file that holds none is an error naming
/// it, so a wrong file is never taken silently for an empty trust store.
pub fn ca_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let f = std::fs::read(path).map_err(|e| format!("CA file {}: {e}", path.display()))?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut &f[..])
        .collect::<Result<_, _>>()
        .map_err(|e| format!("CA file {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "CA file {}: no certificate in it (expected PEM `-----BEGIN CERTIFICATE-----` blocks)",
            path.display()
        ));
    }
    Ok(certs)
}

/// A sentence for a failed client TLS handshake with `host:port`: a peer that answers
/// without TLS (a plain HTTP port) and an untrusted certificate are said in words, other
/// errors keep rustls's text.
pub fn explain_handshake_error(host: &str, port: u16, e: &std::io::Error) -> String {
    use rustls::{CertificateError, Error as TlsError};
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<TlsError>());
    match inner {
        Some(TlsError::InvalidMessage(_)) | Some(TlsError::InappropriateMessage { .. }) => {
            format!(
                "the server at {host}:{port} did not answer TLS (is it plain HTTP? try http://)"
            )
        }
        Some(TlsError::InvalidCertificate(CertificateError::UnknownIssuer)) => format!(
            "the certificate of {host}:{port} is not signed by a trusted CA \
             (trust its CA with --cacert FILE, or skip the check with -k)"
        ),
        Some(TlsError::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        )) => format!("the certificate of {host}:{port} is not for the name {host}"),
        Some(TlsError::InvalidCertificate(
            CertificateError::Expired | CertificateError::ExpiredContext { .. },
        )) => format!("the certificate of {host}:{port} has expired"),
        // webpki's CaUsedAsEndEntity reaches rustls only as an opaque `Other`.
        Some(TlsError::InvalidCertificate(c @ CertificateError::Other(_)))
            if format!("{c:?}").contains("CaUsedAsEndEntity") =>
        {
            format!(
                "the certificate of {host}:{port} is a CA certificate, not a server's \
                 (the server was given its CA as its own certificate)"
            )
        }
        Some(TlsError::InvalidCertificate(c)) => {
            format!("the certificate of {host}:{port} was refused: {c}")
        }
        _ if e.kind() == std::io::ErrorKind::UnexpectedEof => format!(
            "the server at {host}:{port} closed the connection during the TLS handshake \
             (is it plain HTTP? try http://)"
        ),
        _ => format!("TLS with {host}:{port}: {e}"),
    }
}

/// The ClientHello a client sends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hello {
    /// rustls's own with the ring provider: one X25519 key share (255 bytes measured).
    #[default]
    Plain,
    /// Shaped as Chromium's (1,913-2,093 bytes measured from Chromium 156 in the lab): a
    /// post-quantum X25519MLKEM768 key share (1,216 bytes) beside X25519, and a GREASE
    /// Encrypted Client Hello extension, both as Chromium sends them. Not reproduced:
    /// Chromium's trust_anchors extension (186 bytes) and its GREASE values.
    Chromium,
}

impl Hello {
    /// Parses `plain` or `chromium`.
    pub fn parse(s: &str) -> Result<Hello, String> {
        match s {
            "plain" => Ok(Hello::Plain),
            "chromium" => Ok(Hello::Chromium),
            _ => Err(format!("{s:?}: plain or chromium")),
        }
    }

    /// The name [`Hello::parse`] takes.
    pub fn name(self) -> &'static str {
        match self {
            Hello::Plain => "plain",
            Hello::Chromium => "chromium",
        }
    }
}

impl std::fmt::Display for Hello {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Hello {
    type Err = String;
    fn from_str(s: &str) -> Result<Hello, String> {
        Hello::parse(s)
    }
}

/// A client config offering `alpn`.
pub fn client_config(verify: &Verify, alpn: &[&str]) -> Result<Arc<rustls::ClientConfig>, String> {
    client_config_with(verify, alpn, Hello::Plain)
}

/// A client config offering `alpn`, its ClientHello shaped as `hello` says.
pub fn client_config_with(
    verify: &Verify,
    alpn: &[&str],
    hello: Hello,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = match hello {
        Hello::Plain => provider(),
        // aws-lc-rs with `prefer-post-quantum` puts X25519MLKEM768 first, and rustls then
        // sends its share and an X25519 one.
        Hello::Chromium => Arc::new(rustls::crypto::aws_lc_rs::default_provider()),
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone());
    let builder = match hello {
        Hello::Plain => builder.with_safe_default_protocol_versions(),
        Hello::Chromium => {
            use rustls::client::{EchGreaseConfig, EchMode};
            use rustls::crypto::hpke::{Hpke, HpkePublicKey};
            let suite: &'static dyn Hpke =
                rustls::crypto::aws_lc_rs::hpke::DH_KEM_X25519_HKDF_SHA256_AES_128;
            // A placeholder key: GREASE ECH only has to look like ECH on the wire.
            let (placeholder, _) = suite.generate_key_pair().map_err(|e| e.to_string())?;
            let grease = EchGreaseConfig::new(suite, HpkePublicKey(placeholder.0));
            builder.with_ech(EchMode::Grease(grease))
        }
    }
    .map_err(|e| e.to_string())?;
    let mut cfg = match verify {
        Verify::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
            .with_no_client_auth(),
        Verify::System | Verify::CaFile(_) => {
            let mut roots = rustls::RootCertStore::empty();
            if let Verify::CaFile(p) = verify {
                for c in ca_certs(p)? {
                    roots.add(c).map_err(|e| format!("{}: {e}", p.display()))?;
                }
            } else {
                for c in rustls_native_certs::load_native_certs().certs {
                    let _ = roots.add(c);
                }
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    cfg.alpn_protocols = alpn.iter().map(|a| a.as_bytes().to_vec()).collect();
    if hello == Hello::Chromium {
        // rustls remembers the group a server chose and then sends only that share;
        // BoringSSL always sends both, resumed or not (the loader's resumed ClientHellos
        // were 864-869 bytes against Chromium's ~2,040 in `speedy lab validate`, where a
        // third of the loader's handshakes resumed).
        let cache = rustls::client::ClientSessionMemoryCache::new(256);
        cfg.resumption = rustls::client::Resumption::store(Arc::new(EveryShare(cache)));
    }
    Ok(Arc::new(cfg))
}

/// A session store that forgets which key-exchange group each server chose, so every
/// ClientHello carries the full set of key shares (as Chromium's do).
#[derive(Debug)]
struct EveryShare(rustls::client::ClientSessionMemoryCache);

impl rustls::client::ClientSessionStore for EveryShare {
    fn set_kx_hint(&self, _: ServerName<'static>, _: rustls::NamedGroup) {}
    fn kx_hint(&self, _: &ServerName<'_>) -> Option<rustls::NamedGroup> {
        None
    }
    fn set_tls12_session(
        &self,
        name: ServerName<'static>,
        value: rustls::client::Tls12ClientSessionValue,
    ) {
        self.0.set_tls12_session(name, value)
    }
    fn tls12_session(
        &self,
        name: &ServerName<'_>,
    ) -> Option<rustls::client::Tls12ClientSessionValue> {
        self.0.tls12_session(name)
    }
    fn remove_tls12_session(&self, name: &ServerName<'static>) {
        self.0.remove_tls12_session(name)
    }
    fn insert_tls13_ticket(
        &self,
        name: ServerName<'static>,
        value: rustls::client::Tls13ClientSessionValue,
    ) {
        self.0.insert_tls13_ticket(name, value)
    }
    fn take_tls13_ticket(
        &self,
        name: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        self.0.take_tls13_ticket(name)
    }
}

#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
