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

fn near(x: f64, want: f64, tol: f64, what: &str) {
    eprintln!("{what}: {x:.3} ms (want {want} ± {tol})");
    assert!(
        (x - want).abs() <= tol,
        "{what}: {x:.3} ms, want {want} ± {tol}"
    );
}

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
    near(r[0], RTT + 300.0, 10.0, "first packet from IDLE");
    for (i, x) in r[1..21].iter().enumerate() {
        near(*x, RTT, 2.0, &format!("active ping {i}"));
    }
    near(r[21], RTT + 300.0, 5.0, "after tail timers, IDLE → DCH");
    near(r[23], RTT + 200.0, 5.0, "large packet in FACH, FACH → DCH");
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
    near(r[0], RTT + 150.0, 10.0, "first packet from RRC_IDLE");
    for (i, x) in r[1..21].iter().enumerate() {
        near(*x, RTT, 2.0, &format!("active ping {i}"));
    }
    near(r[21], RTT + 150.0, 5.0, "after the tail, IDLE → CONNECTED");
}
