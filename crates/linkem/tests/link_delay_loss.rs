//! Delay and loss accuracy through real kernel UDP in namespaces (issue 4, "Must show").

mod common;
use common::*;
use linkem::{DropCause, LinkConfig, LossModel, Side};
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

// How much the median and the 99th percentile of the echo RTTs may exceed the configured
// RTT (below it: 1 and 2 ms; nothing arrives early, the lowest RTT measured was +0.10 ms).
// Noise measured in scripts/test's configuration (release, alone, --test-threads=1), 34
// runs on the 2-core VM (docs/linkem.md, "Accuracy"); 19 of them with other processes
// using < 15 % of the CPUs:
//   median excess: +0.22 to +0.35 ms (10 ms RTT), +0.31 to +0.41 ms (100 ms RTT);
//   p99 excess:    +0.36 to +1.78 ms (10 ms),     +0.47 to +2.27 ms (100 ms);
//   (a debug run in the main step once gave +2.9 ms, issue 9).
// With other processes busy on both cores (15-98 %) the p99 reached +13.6 ms: the host
// then stalls even real-time threads for up to 34 ms, which no bound here can absorb.
// Bounds: median 1 ms (2.4x the largest), p99 5 ms (2.2x the largest on an idle host,
// 1.7x issue 9's). Still fails: a missing delay stage (-10 / -100 ms), a doubled delay,
// a forwarder that sleeps through deadlines (up to MAX_SLEEP, 20 ms, late).
// Since `ping` measures the network path alone (kernel receive timestamps, less the echo
// thread's wait), three idle runs gave median +0.14..+0.16 / +0.37..+0.43 ms.
const MEDIAN_LATE_MS: f64 = 1.0;
const P99_LATE_MS: f64 = 5.0;

fn echo_rtts(rtt_ms: u64, pings: u32, checks: &mut Checks) {
    let mut cfg = LinkConfig::default();
    cfg.down.delay = Duration::from_millis(rtt_ms / 2);
    cfg.up.delay = Duration::from_millis(rtt_ms - rtt_ms / 2);
    let t = start(&cfg);
    let server = udp_echo_server(&t, 7000, Duration::from_millis(500));
    let addr = server_addr(&t, 7000);
    let mut rtts = with_client(&t, move || {
        realtime();
        let s = UdpSocket::bind("0.0.0.0:0")?;
        s.connect(addr)?;
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        let mut v = Vec::new();
        for i in 0..pings {
            v.push(ping(&s, i, 64)?);
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(v)
    });
    server.join().unwrap().unwrap();
    // What the link's owner reads while it runs agrees with the thread's own figures, and
    // each take starts the largest lateness again.
    let taken = t.take_lateness();
    let again = t.take_lateness();
    let mut t = t;
    t.stop_link();
    let fs = t.forward_stats();
    assert!(
        taken.written >= 2 * rtts.len() as u64,
        "{taken:?}: two packets per ping"
    );
    assert!(
        taken.late_max > Duration::ZERO,
        "{taken:?}: no packet leaves on the ns"
    );
    // (A stray packet may cross between the takes and the stop.)
    assert!(
        fs.written >= taken.written
            && fs.late_sum >= taken.late_sum
            && fs.late_max >= taken.late_max,
        "{taken:?} against {fs:?}"
    );
    if again.written == taken.written {
        assert_eq!(
            again.late_max,
            Duration::ZERO,
            "the second take starts again"
        );
        assert_eq!(again.mean_since(&taken), Duration::ZERO);
    }
    eprintln!(
        "forwarder: {} packets written, mean lateness {:?}, max {:?}",
        fs.written,
        fs.late_sum / fs.written.max(1) as u32,
        fs.late_max
    );
    let median = percentile(&mut rtts, 0.5);
    let p90 = percentile(&mut rtts, 0.9);
    let p95 = percentile(&mut rtts, 0.95);
    let p99 = percentile(&mut rtts, 0.99);
    let min = rtts[0];
    eprintln!(
        "RTT {rtt_ms} ms: min {min:.3} median {median:.3} p90 {p90:.3} p95 {p95:.3} p99 {p99:.3} max {:.3} ms over {} pings",
        rtts[rtts.len() - 1],
        rtts.len()
    );
    let want = rtt_ms as f64;
    checks.within(
        &format!("RTT {rtt_ms} ms median"),
        median,
        want,
        1.0,
        MEDIAN_LATE_MS,
    );
    checks.within(&format!("RTT {rtt_ms} ms p99"), p99, want, 2.0, P99_LATE_MS);
}

/// Sends `n` datagrams one way, paced, and returns how many arrived.
fn blast(t: &linkem::Topology, from: Side, n: u32, port: u16) -> u32 {
    let (to_side, dst) = match from {
        Side::Client => (Side::Server, server_addr(t, port)),
        Side::Server => (Side::Client, (t.client_addr(), port).into()),
    };
    let bound = std::sync::Arc::new(std::sync::Barrier::new(2));
    let b2 = bound.clone();
    let rx = t.spawn_in(to_side, move || {
        realtime();
        let s = UdpSocket::bind(dst);
        b2.wait();
        let s = s?;
        set_rcvbuf(s.as_raw_fd(), 32 << 20);
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        let mut buf = [0u8; 256];
        let mut got = 0u32;
        // Ends at the first end marker, after 2 s without packets, or after n + 20 packets.
        for _ in 0..n + 20 {
            match s.recv(&mut buf) {
                Ok(1) | Err(_) => break,
                Ok(_) => got += 1,
            }
        }
        Ok(got)
    });
    bound.wait();
    t.spawn_in(from, move || {
        realtime();
        let s = UdpSocket::bind("0.0.0.0:0")?;
        s.connect(dst)?;
        let msg = [7u8; 64];
        let start = Instant::now();
        for i in 0..n {
            s.send(&msg)?;
            // Pace at 40,000 packets/s so no kernel queue overflows.
            if i % 40 == 39 {
                let due = Duration::from_micros((i as u64 + 1) * 25);
                if let Some(w) = due.checked_sub(start.elapsed()) {
                    std::thread::sleep(w);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
        for _ in 0..20 {
            s.send(&[0])?;
        }
        Ok(())
    })
    .join()
    .unwrap()
    .expect("sender");
    rx.join().unwrap().expect("receiver")
}

fn check_interval(lost: u32, n: u32, p: f64, what: &str) {
    let mean = n as f64 * p;
    let half = 2.576 * (n as f64 * p * (1.0 - p)).sqrt();
    eprintln!(
        "loss {what}: {lost} of {n} lost ({:.3}%), 99% interval [{:.0}, {:.0}] for p = {p}",
        lost as f64 * 100.0 / n as f64,
        mean - half,
        mean + half
    );
    assert!(
        (lost as f64 - mean).abs() <= half,
        "{what}: {lost} lost, expected {mean:.0} ± {half:.0}"
    );
}

/// Accuracy tests: `scripts/test` runs them after everything else, one at a time, in a
/// release build (`cargo test --release -p linkem --test 'link_*' -- --test-threads=1
/// accuracy::`); the bounds below come from the noise measured that way.
mod accuracy {
    use super::*;

    #[test]
    fn udp_echo_rtt_matches_configured_delay() {
        if !can_run() {
            return;
        }
        let _g = serial();
        for (rtt_ms, pings) in [(10, 300), (100, 200)] {
            let mut checks = Checks::default();
            echo_rtts(rtt_ms, pings, &mut checks);
            if !checks.passed() {
                // A host that stalls the VM shifts one series (CI once: median +1.05 ms at
                // 100 ms, forwarder on time); the errors this test is for (a missing or
                // doubled delay stage, a forwarder sleeping through deadlines) fail every
                // series. So a failed series is measured once more and that one decides.
                eprintln!("RTT {rtt_ms} ms: a check failed; measuring a second series");
                checks = Checks::default();
                echo_rtts(rtt_ms, pings, &mut checks);
            }
            checks.finish();
        }
    }

    #[test]
    fn measured_loss_falls_in_the_binomial_interval_per_direction() {
        if !can_run() {
            return;
        }
        let _g = serial();
        let n = 100_000;
        let mut cfg = LinkConfig::default();
        cfg.up.loss = LossModel::Bernoulli { p: 0.01 };
        cfg.down.loss = LossModel::Bernoulli { p: 0.03 };
        cfg.seed = 20240601;
        let t = start(&cfg);
        let got_up = blast(&t, Side::Client, n, 7100);
        let got_down = blast(&t, Side::Server, n, 7101);
        let c = t.counters();
        let k: Vec<_> = [Side::Client, Side::Server]
            .iter()
            .map(|s| t.tun_stats(*s).unwrap())
            .collect();
        eprintln!("counters:\n{c}kernel TUN stats: {k:?}");
        // The end markers may be lost too; only the n data packets count.
        check_interval(n - got_up, n, 0.01, "up");
        check_interval(n - got_down, n, 0.03, "down");
        // No loss other than the emulated one: every drop is counted as such.
        for d in [&c.up, &c.down] {
            assert_eq!(d.dropped(DropCause::TunWrite), 0);
            assert_eq!(d.dropped_total(), d.dropped(DropCause::Loss));
        }
        assert!(k
            .iter()
            .all(|s| s.queued_dropped == 0 && s.written_dropped == 0));
    }
}
