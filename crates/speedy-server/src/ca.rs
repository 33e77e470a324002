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
    let ca_key = load_or_create_key(&key_path)?;
    // Re-signing the same name with the same key gives a certificate that verifies
    // exactly like the one loaders already trust; any server may (re)write ca.pem.
    let ca_cert = ca_params()
        .self_signed(&ca_key)
        .map_err(|e| e.to_string())?;
    if !cert_path.exists() {
        write_atomically(&cert_path, ca_cert.pem().as_bytes())?;
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

/// Loads the CA key, or creates it when missing. Several servers may start at once (one
/// per lane in the lab): the key is published with a no-replace hard link, so exactly one
/// key ever exists and every loser of the race loads the winner's.
fn load_or_create_key(path: &Path) -> Result<rcgen::KeyPair, String> {
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    if !path.exists() {
        let k = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
        let tmp = unique_tmp(path);
        std::fs::write(&tmp, k.serialize_pem()).map_err(err)?;
        let linked = std::fs::hard_link(&tmp, path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => return Ok(k),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(err(e)),
        }
    }
    let pem = std::fs::read_to_string(path).map_err(err)?;
    rcgen::KeyPair::from_pem(&pem).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes a file through a temporary name and a rename, so readers never see half of it.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = unique_tmp(path);
    std::fs::write(&tmp, bytes).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// A temporary name beside `path`, unique per process and call (servers in one process,
/// as in tests, must not share one either).
fn unique_tmp(path: &Path) -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    path.with_extension(format!("tmp{}-{n}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_starting_together_share_one_ca_key() {
        let dir = std::env::temp_dir().join(format!("speedy-ca-race-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let keys: Vec<String> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        issue(&dir, &["a.example".into()]).unwrap();
                        std::fs::read_to_string(dir.join("ca-key.pem")).unwrap()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(keys.windows(2).all(|w| w[0] == w[1]), "one key for all");
        let leftovers = std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .to_string_lossy()
                    .contains(".tmp")
            })
            .count();
        assert_eq!(leftovers, 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
