//! Rate accuracy through real kernel TCP in namespaces (issue 4, "Must show": rate).

mod common;
use common::*;
use linkem::{LinkConfig, Server, Trace};
use std::sync::Arc;
use std::time::Duration;

// Largest relative error of the measured IP-level rate (unchanged). Noise measured in
// scripts/test's configuration (release, alone, --test-threads=1), 34 runs on the 2-core
// VM; 19 with other processes using < 15 % of the CPUs: 1, 2, 10 Mbit/s and the trace
// within -0.03 to +0.03 %, 100 Mbit/s -0.94 to 0.00 % (3.2x margin). With other
// processes busy on both cores 10 Mbit/s reached -4.1 % and 100 Mbit/s -3.1 %. A 2x rate
// error (+100 or -50 %) still fails.
const RATE_ERR: f64 = 0.03;

fn check_rate(checks: &mut Checks, bps: u64, down: bool, warmup: f64, total: f64) {
    let mut cfg = LinkConfig::default();
    if down {
        cfg.down.server = Server::Rate(bps);
    } else {
        cfg.up.server = Server::Rate(bps);
    }
    cfg.down.delay = Duration::from_millis(5);
    cfg.up.delay = Duration::from_millis(5);
    let t = start(&cfg);
    let b = bulk_tcp(
        &t,
        down,
        5001,
        Duration::from_secs_f64(warmup),
        Duration::from_secs_f64(total),
    );
    let c = t.counters();
    let err = b.ip_bps / bps as f64 - 1.0;
    eprintln!(
        "rate {} Mbit/s {}: measured {:.4} Mbit/s IP ({:.4} goodput, mss {}) over {:.2} s: error {:+.2}%; counters:\n{c}",
        bps as f64 / 1e6,
        if down { "down" } else { "up" },
        b.ip_bps / 1e6,
        b.goodput_bps / 1e6,
        b.mss,
        b.window_secs,
        err * 100.0
    );
    let what = format!("rate error (%) at {bps} bit/s");
    checks.within(&what, err * 100.0, 0.0, RATE_ERR * 100.0, RATE_ERR * 100.0);
}

/// Accuracy tests: `scripts/test` runs them after everything else, one at a time, in a
/// release build (`cargo test --release -p linkem --test 'link_*' -- --test-threads=1
/// accuracy::`); the bounds below come from the noise measured that way.
mod accuracy {
    use super::*;

    #[test]
    fn tcp_bulk_reaches_configured_rate_1_2_10_100_mbit() {
        if !can_run() {
            return;
        }
        let _g = serial();
        let c = &mut Checks::default();
        check_rate(c, 1_000_000, true, 1.5, 6.5);
        check_rate(c, 2_000_000, false, 1.0, 4.0);
        check_rate(c, 10_000_000, true, 1.0, 3.5);
        check_rate(c, 100_000_000, true, 1.0, 3.5);
        c.finish();
    }

    #[test]
    fn tcp_bulk_through_a_trace_reaches_its_mean_rate() {
        if !can_run() {
            return;
        }
        let _g = serial();
        let text = include_str!("../testdata/bursty.trace");
        let trace = Trace::parse(text).unwrap();
        let mean = trace.mean_rate_bps();
        let mut cfg = LinkConfig::default();
        cfg.down.server = Server::Trace(Arc::new(trace));
        cfg.down.delay = Duration::from_millis(5);
        cfg.up.delay = Duration::from_millis(5);
        let t = start(&cfg);
        // The window is a whole number of trace periods (1 s) so bursts average out.
        let b = bulk_tcp(
            &t,
            true,
            5002,
            Duration::from_secs(1),
            Duration::from_secs(4),
        );
        let err = b.ip_bps / mean - 1.0;
        eprintln!(
            "trace mean {:.3} Mbit/s: measured {:.3} Mbit/s over {:.2} s: error {:+.2}%",
            mean / 1e6,
            b.ip_bps / 1e6,
            b.window_secs,
            err * 100.0
        );
        let c = &mut Checks::default();
        c.within(
            "trace rate error (%)",
            err * 100.0,
            0.0,
            RATE_ERR * 100.0,
            RATE_ERR * 100.0,
        );
        c.finish();
    }
}
