//! Interop with node-spdy (npm `spdy` 4.x, protocol engine `spdy-transport`), both
//! directions — the node-spdy client (`interop/client.js`) against `speedy serve`, and
//! `speedy fetch` against the node-spdy server (`interop/server.js`) — over plain TCP and
//! TLS, in SPDY/3.1, SPDY/3 and SPDY/2, every case of `support/interop.rs`. The node
//! side needs `npm ci --prefix interop` (run by the test command).

mod support;

use support::interop::{combo, run_combo, Side, Transport, Version, CASES};

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

// node-spdy client -> speedy serve
#[test]
fn node_client_to_speedy_plain_spdy31() {
    run_combo(
        &CASES,
        combo(Side::Node, Side::Speedy, Transport::Plain, Version::V31),
    );
}
#[test]
fn node_client_to_speedy_plain_spdy3() {
    run_combo(
        &CASES,
        combo(Side::Node, Side::Speedy, Transport::Plain, Version::V3),
    );
}
#[test]
fn node_client_to_speedy_plain_spdy2() {
    run_combo(
        &CASES,
        combo(Side::Node, Side::Speedy, Transport::Plain, Version::V2),
    );
}
#[test]
fn node_client_to_speedy_tls_spdy31() {
    run_combo(
        &CASES,
        combo(Side::Node, Side::Speedy, Transport::Tls, Version::V31),
    );
}
#[test]
fn node_client_to_speedy_tls_spdy3() {
    run_combo(
        &CASES,
        combo(Side::Node, Side::Speedy, Transport::Tls, Version::V3),
    );
}
#[test]
fn node_client_to_speedy_tls_spdy2() {
    run_combo(
        &CASES,
        combo(Side::Node, Side::Speedy, Transport::Tls, Version::V2),
    );
}

// speedy fetch -> node-spdy server
#[test]
fn speedy_fetch_to_node_plain_spdy31() {
    run_combo(
        &CASES,
        combo(Side::Speedy, Side::Node, Transport::Plain, Version::V31),
    );
}
#[test]
fn speedy_fetch_to_node_plain_spdy3() {
    run_combo(
        &CASES,
        combo(Side::Speedy, Side::Node, Transport::Plain, Version::V3),
    );
}
#[test]
fn speedy_fetch_to_node_plain_spdy2() {
    run_combo(
        &CASES,
        combo(Side::Speedy, Side::Node, Transport::Plain, Version::V2),
    );
}
#[test]
fn speedy_fetch_to_node_tls_spdy31() {
    run_combo(
        &CASES,
        combo(Side::Speedy, Side::Node, Transport::Tls, Version::V31),
    );
}
#[test]
fn speedy_fetch_to_node_tls_spdy3() {
    run_combo(
        &CASES,
        combo(Side::Speedy, Side::Node, Transport::Tls, Version::V3),
    );
}
#[test]
fn speedy_fetch_to_node_tls_spdy2() {
    run_combo(
        &CASES,
        combo(Side::Speedy, Side::Node, Transport::Tls, Version::V2),
    );
}

// The harness itself: node-spdy client -> node-spdy server, so that a failure
// above can be told apart from a broken node setup.
#[test]
fn harness_node_client_to_node_server() {
    for transport in [Transport::Plain, Transport::Tls] {
        for version in [Version::V31, Version::V3, Version::V2] {
            run_combo(&CASES, combo(Side::Node, Side::Node, transport, version));
        }
    }
}

// A session quiet for longer than `--park-after` gives back its zlib contexts (kept as
// their histories) and resumes them on the next request: node-spdy's inflater must read
// the resumed deflate stream, and speedy's must go on inflating node's. Headers repeat
// across the pause, so back-references into the kept history are exercised (node's
// client compresses its headers only when asked: `--header-compression`).
#[test]
fn node_client_across_a_parked_session() {
    across_a_parked_session(&[]);
}

// The same with response header blocks from speedy's own deflate encoder (fixed Huffman
// codes, docs/serve.md): node's zlib must read them, across the parked pause too.
#[test]
fn node_client_reads_fixed_header_codes_across_a_parked_session() {
    across_a_parked_session(&["--fixed-header-codes", "--header-level", "1"]);
}

fn across_a_parked_session(serve_args: &[&str]) {
    support::interop::require_node_setup();
    let dir = support::TempDir::new("park");
    let files: Vec<(String, Vec<u8>)> = (0..4)
        .map(|i| {
            let body: Vec<u8> = (0..3000 + i * 777).map(|j| (j * 7 + i) as u8).collect();
            (format!("f{i}.bin"), body)
        })
        .collect();
    for (name, body) in &files {
        std::fs::write(dir.0.join(name), body).unwrap();
    }
    let root = dir.0.to_str().unwrap();
    let mut args = vec!["--root", root, "--park-after", "0.2"];
    args.extend_from_slice(serve_args);
    let server = support::Server::start(&args);
    for version in ["spdy/3.1", "spdy/3", "spdy/2"] {
        let urls: Vec<String> = files
            .iter()
            .map(|(n, _)| format!("http://{}/{n}", server.addr))
            .collect();
        let mut cmd = std::process::Command::new("node");
        cmd.arg(support::interop::interop_dir().join("client.js"))
            .args(&urls)
            .args([
                "--protocol",
                version,
                "--pause-after",
                "2",
                "--pause",
                "0.8",
            ])
            .args(["--timeout", "30", "--header-compression"]);
        let t0 = std::time::Instant::now();
        let out = support::run_bounded(&mut cmd, std::time::Duration::from_secs(40));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{version}: node client failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            t0.elapsed() >= std::time::Duration::from_millis(800),
            "{version}: the client paused"
        );
        let lines: Vec<serde_json::Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), files.len(), "{version}: {stdout}");
        for (name, body) in &files {
            let line = lines
                .iter()
                .find(|l| l["url"].as_str().unwrap().ends_with(&format!("/{name}")))
                .unwrap_or_else(|| panic!("{version}: no line for {name}: {stdout}"));
            assert_eq!(line["status"], 200, "{version} {name}: {line}");
            let want = support::interop::sha256_hex(body);
            assert_eq!(
                line["sha256"].as_str(),
                Some(want.as_str()),
                "{version} {name}"
            );
        }
    }
}
