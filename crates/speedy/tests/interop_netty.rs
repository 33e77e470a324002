//! Interop with Netty's SPDY/3.1 codec (`io.netty:netty-codec-http`, `SpdyFrameCodec` +
//! `SpdySessionHandler`, the peer in `interop/netty`), both directions, over plain TCP
//! and TLS (ALPN `spdy/3.1`), every case of `support/interop.rs`. Netty keeps 64 KiB
//! windows and waits for our session WINDOW_UPDATE before it uploads more than 64 KiB,
//! which is what the plain-TCP 1 MiB POST checks (docs/flow-control.md). The jar is built
//! by the test command (`mvn -q -f interop/netty/pom.xml package -DskipTests`).

mod support;

use support::interop::{combo, run_combo, Side, Transport, Version, CASES};

#[test]
fn netty_client_to_speedy_plain() {
    run_combo(
        &CASES,
        combo(Side::Netty, Side::Speedy, Transport::Plain, Version::V31),
    );
}

#[test]
fn netty_client_to_speedy_tls() {
    run_combo(
        &CASES,
        combo(Side::Netty, Side::Speedy, Transport::Tls, Version::V31),
    );
}

#[test]
fn speedy_fetch_to_netty_plain() {
    run_combo(
        &CASES,
        combo(Side::Speedy, Side::Netty, Transport::Plain, Version::V31),
    );
}

#[test]
fn speedy_fetch_to_netty_tls() {
    run_combo(
        &CASES,
        combo(Side::Speedy, Side::Netty, Transport::Tls, Version::V31),
    );
}

// The peer against itself, so that a failure above can be told apart from a broken
// Netty setup.
#[test]
fn harness_netty_client_to_netty_server() {
    run_combo(
        &CASES,
        combo(Side::Netty, Side::Netty, Transport::Plain, Version::V31),
    );
}
