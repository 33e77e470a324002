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
