//! Radio promotion delays through real kernel UDP in namespaces (issue 4, "Must show":
//! radio). Timers are scaled down (they are parameters) so the test takes seconds.

mod common;
use common::*;
use linkem::{LinkConfig, LteParams, RadioSpec, UmtsParams};
use std::net::UdpSocket;
use std::time::Duration;

const RTT: f64 = 20.0;

fn cfg(radio: RadioSpec) -> LinkConfig {
    let mut c = LinkConfig::default();
    c.up.delay = Duration::from_millis(10);
    c.down.delay = Duration::from_millis(10);
    c.radio = Some(radio);
    c
}

/// Runs `script` (sleep ms before the ping, ping size) and returns the RTTs.
fn pings(t: &linkem::Topology, port: u16, script: Vec<(u64, usize)>) -> Vec<f64> {
    let server = udp_echo_server(t, port, Duration::from_millis(1500));
    let addr = server_addr(t, port);
    let v = with_client(t, move || {
        realtime();
        let s = UdpSocket::bind("0.0.0.0:0")?;
        s.connect(addr)?;
        s.set_read_timeout(Some(Duration::from_secs(3)))?;
        let mut v = Vec::new();
        for (i, (sleep, size)) in script.into_iter().enumerate() {
            std::thread::sleep(Duration::from_millis(sleep));
            v.push(ping(&s, i as u32, size)?);
        }
        Ok(v)
    });
    server.join().unwrap().unwrap();
    v
}

// Bounds on one ping's RTT (ms) around what the radio model predicts. Noise measured in
// scripts/test's configuration (release, alone, --test-threads=1), 34 runs on the 2-core
// VM (docs/linkem.md, "Accuracy"); 21 of them with other processes using < 15 % of the
// CPUs: every ping +0.16 to +2.27 ms late (840 pings while active, 105 around
// promotions), medians of the 20 pings while active +0.19 to +0.47 ms; nothing early
// (lowest +0.11 ms). Issue 9 saw one ping +2.4 ms (debug build, main step). With other
// processes busy on both cores single pings reached +11 ms (the host stalls real-time
// threads). Bounds: 1 ms early, 5 ms late (2.2x the largest on an idle host, 2.1x issue
// 9's); the median of the active pings within 1 ms (2.1x). Still fails: a promotion while
// active (+150 ms LTE, +200/+300 ms UMTS), a missing or wrong promotion (they differ by
// 100 ms or more), a missing delay stage (-20 ms), DRX waits while active (median).
const EARLY_MS: f64 = 1.0;
const LATE_MS: f64 = 5.0;
/// Bound on how far the median of the pings while active may be from the link's RTT.
const ACTIVE_MEDIAN_MS: f64 = 1.0;
/// The first packet's late bound (it also pays first-use costs; measured up to +1.65 ms
/// idle, +4.0 ms busy; unchanged from before).
const FIRST_LATE_MS: f64 = 10.0;

fn near(c: &mut Checks, x: f64, want: f64, what: &str) {
    c.within(what, x, want, EARLY_MS, LATE_MS);
}

/// The pings while the radio is active: each near the RTT, and their median closer still.
fn active(c: &mut Checks, r: &[f64]) {
    for (i, x) in r.iter().enumerate() {
        near(c, *x, RTT, &format!("active ping {i}"));
    }
    let median = percentile(&mut r.to_vec(), 0.5);
    c.within(
        "active median",
        median,
        RTT,
        ACTIVE_MEDIAN_MS,
        ACTIVE_MEDIAN_MS,
    );
}

/// Accuracy tests: `scripts/test` runs them after everything else, one at a time, in a
/// release build (`cargo test --release -p linkem --test 'link_*' -- --test-threads=1
/// accuracy::`); the bounds below come from the noise measured that way.
mod accuracy {
    use super::*;

    #[test]
    fn umts_promotions_wait_and_dch_adds_nothing() {
        if !can_run() {
            return;
        }
        let _g = serial();
        let p = UmtsParams {
            dch_tail: Duration::from_millis(150),
            fach_tail: Duration::from_millis(200),
            idle_to_dch: Duration::from_millis(300),
            fach_to_dch: Duration::from_millis(200),
            ..Default::default()
        };
        let t = start(&cfg(RadioSpec::Umts(p)));
        let mut script = vec![(0, 64)]; // IDLE → DCH
        script.extend(std::iter::repeat_n((10, 64), 20)); // active in DCH
        script.push((500, 64)); // tails expired (150 + 200 ms): IDLE → DCH again
        script.push((10, 64));
        script.push((200, 1000)); // DCH tail expired, in FACH: 1000 B > 543 B → FACH → DCH
        let r = pings(&t, 7200, script);
        // The very first packet also pays the process's first-use costs (socket, page faults,
        // scheduler set-up): checked more loosely; the requirement is the one after the tails.
        let c = &mut Checks::default();
        c.within(
            "first packet from IDLE",
            r[0],
            RTT + 300.0,
            EARLY_MS,
            FIRST_LATE_MS,
        );
        active(c, &r[1..21]);
        near(c, r[21], RTT + 300.0, "after tail timers, IDLE → DCH");
        near(c, r[23], RTT + 200.0, "large packet in FACH, FACH → DCH");
        c.finish();
        assert_eq!(t.counters().promotions, 3);
    }

    #[test]
    fn lte_promotion_after_tail_and_none_while_active() {
        if !can_run() {
            return;
        }
        let _g = serial();
        let p = LteParams {
            promotion: Duration::from_millis(150),
            tail: Duration::from_millis(400),
            ..Default::default()
        };
        let t = start(&cfg(RadioSpec::Lte(p)));
        let mut script = vec![(0, 64)];
        script.extend(std::iter::repeat_n((10, 64), 20));
        script.push((600, 64));
        let r = pings(&t, 7201, script);
        let c = &mut Checks::default();
        c.within(
            "first packet from RRC_IDLE",
            r[0],
            RTT + 150.0,
            EARLY_MS,
            FIRST_LATE_MS,
        );
        active(c, &r[1..21]);
        near(c, r[21], RTT + 150.0, "after the tail, IDLE → CONNECTED");
        c.finish();
    }
}
