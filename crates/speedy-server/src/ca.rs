//! The lab certificate authority: one CA key kept in a directory; the server issues one
//! leaf certificate for all the archive's hosts from it at start. Loaders trust
//! `DIR/ca.pem`.

use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;

fn ca_params() -> rcgen::CertificateParams {
    let mut p = rcgen::CertificateParams::default();
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.distinguished_name
        .push(rcgen::DnType::CommonName, "speedy lab CA");
    p.distinguished_name
        .push(rcgen::DnType::OrganizationName, "speedy");
    p.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    p
}

/// Loads (or creates) the CA in `dir` and issues a leaf certificate for `hosts`.
/// Returns the chain (leaf, CA) and the leaf's key.
pub fn issue(
    dir: &Path,
    hosts: &[String],
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let key_path = dir.join("ca-key.pem");
    let cert_path = dir.join("ca.pem");
    let ca_key = if key_path.exists() {
        let pem = std::fs::read_to_string(&key_path)
            .map_err(|e| format!("{}: {e}", key_path.display()))?;
        rcgen::KeyPair::from_pem(&pem).map_err(|e| format!("{}: {e}", key_path.display()))?
    } else {
        let k = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
        std::fs::write(&key_path, k.serialize_pem())
            .map_err(|e| format!("{}: {e}", key_path.display()))?;
        k
    };
    // Re-signing the same name with the same key gives a certificate that verifies
    // exactly like the one loaders already trust.
    let ca_cert = ca_params()
        .self_signed(&ca_key)
        .map_err(|e| e.to_string())?;
    if !cert_path.exists() {
        std::fs::write(&cert_path, ca_cert.pem())
            .map_err(|e| format!("{}: {e}", cert_path.display()))?;
    }
    let mut names: Vec<String> = vec!["localhost".into(), "127.0.0.1".into()];
    names.extend(hosts.iter().cloned());
    let mut leaf = rcgen::CertificateParams::new(names).map_err(|e| e.to_string())?;
    leaf.distinguished_name
        .push(rcgen::DnType::CommonName, "speedy replay");
    let leaf_key = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
    let cert = leaf
        .signed_by(&leaf_key, &ca_cert, &ca_key)
        .map_err(|e| e.to_string())?;
    let key = PrivateKeyDer::try_from(leaf_key.serialize_der()).map_err(|e| e.to_string())?;
    Ok((vec![cert.der().clone(), ca_cert.der().clone()], key))
}
