//! Interop with moby/spdystream, the SPDY/3.1 multiplexer under Kubernetes (the peer in
//! `interop/go`, built by the test command), both directions over plain TCP, every case
//! of `support/interop.rs` (spdystream can push with an associated stream, though without
//! FLAG_UNIDIRECTIONAL, and reads a push only after answering it with SYN_REPLY, which
//! speedy tolerates; `interop/go/README.md`). spdystream has no flow control: it never sends SETTINGS or WINDOW_UPDATE and writes DATA regardless of
//! windows, so the 5 MiB and POST cases are where speedy's lenient flow control
//! (docs/flow-control.md) is exercised.

mod support;

use support::interop::{combo, run_combo, Side, Transport, Version, CASES};

#[test]
fn spdystream_client_to_speedy() {
    run_combo(
        &CASES,
        combo(
            Side::Spdystream,
            Side::Speedy,
            Transport::Plain,
            Version::V31,
        ),
    );
}

#[test]
fn speedy_fetch_to_spdystream() {
    run_combo(
        &CASES,
        combo(
            Side::Speedy,
            Side::Spdystream,
            Transport::Plain,
            Version::V31,
        ),
    );
}

// The peer against itself, so that a failure above can be told apart from a broken
// Go setup.
#[test]
fn harness_spdystream_client_to_spdystream_server() {
    run_combo(
        &CASES,
        combo(
            Side::Spdystream,
            Side::Spdystream,
            Transport::Plain,
            Version::V31,
        ),
    );
}
