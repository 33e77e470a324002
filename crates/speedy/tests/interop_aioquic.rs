//! Interop over HTTP/3: `speedy fetch --protocol h3` against aioquic (a QUIC and HTTP/3
//! stack written independently, in Python), whose server is `interop/aioquic/h3_server.py`.
//! scripts/test makes its virtualenv (`interop/aioquic/.venv`, from `requirements.txt`).
//! The other direction, an independent client against `speedy serve --h3`, is headless
//! Chromium in `tests/h3_cli.rs`.

mod support;

use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use support::{speedy_in, Server, TempDir};

fn python() -> PathBuf {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop/aioquic/.venv/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run scripts/test, or python3 -m venv interop/aioquic/.venv && \
         interop/aioquic/.venv/bin/pip install -r interop/aioquic/requirements.txt",
        p.display()
    );
    p
}

/// The server's bytes for `/bytes/N`.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

#[test]
fn speedy_fetch_over_h3_from_an_aioquic_server() {
    let dir = TempDir::new("aioquic");
    let (cert, key, _) = support::openssl_cert(&dir.0);
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop/aioquic/h3_server.py");
    let mut cmd = Command::new(python());
    cmd.arg(script).arg(&cert).arg(&key).arg("0");
    let srv = Server::spawn(cmd, "listening ");
    let base = format!("https://{}", srv.addr);
    let sizes = [0usize, 1, 1200, 65_536, 3_000_000];
    let urls: Vec<String> = sizes.iter().map(|n| format!("{base}/bytes/{n}")).collect();
    let mut args = vec!["fetch", "-k", "--protocol", "h3"];
    args.extend(urls.iter().map(String::as_str));
    args.push("-v");
    let o = speedy_in(&dir.0, &args, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("ALPN h3") && err.contains("server: aioquic"),
        "{err}"
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (n, url) in sizes.iter().zip(&urls) {
        let l = lines
            .iter()
            .find(|l| l["url"] == url.as_str())
            .unwrap_or_else(|| panic!("no response for {url}: {lines:?}"));
        assert_eq!(l["status"], 200, "{l}");
        assert_eq!(l["protocol"], "h3", "{l}");
        assert_eq!(l["bytes"], *n as u64, "{l}");
        assert_eq!(l["sha256"], hex::encode(Sha256::digest(pattern(*n))), "{l}");
    }

    // A request body, echoed back byte for byte.
    let body: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let upload = dir.0.join("upload.bin");
    std::fs::write(&upload, &body).unwrap();
    let o = speedy_in(
        &dir.0,
        &[
            "fetch",
            "-k",
            "--protocol",
            "h3",
            "--data",
            upload.to_str().unwrap(),
            &format!("{base}/echo"),
        ],
        Duration::from_secs(30),
    );
    let l: serde_json::Value = serde_json::from_str(String::from_utf8_lossy(&o.stdout).trim())
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    assert_eq!(l["status"], 200, "{l}");
    assert_eq!(l["sha256"], hex::encode(Sha256::digest(&body)), "{l}");

    // Its 404 comes through as a status, not an error.
    let o = speedy_in(
        &dir.0,
        &[
            "fetch",
            "-k",
            "--protocol",
            "h3",
            &format!("{base}/nothing"),
        ],
        Duration::from_secs(30),
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("\"status\":404"));
}
