//! A restarted link starts empty: what the namespaces sent while no link ran (in the lab,
//! the previous load's last packets) is discarded and counted as stale, never delivered
//! ahead of the new link's own traffic.

mod common;

use common::*;
use linkem::Side;
use std::net::UdpSocket;
use std::time::Duration;

#[test]
fn packets_sent_while_the_link_was_stopped_are_discarded_and_counted_as_stale() {
    if !can_run() {
        return;
    }
    let _g = serial();
    let cfg = delay_only(Duration::from_millis(5));
    let mut t = start(&cfg);
    let addr = server_addr(&t, 5311);
    let server = t
        .spawn_in(Side::Server, move || {
            let s = UdpSocket::bind(addr)?;
            s.set_read_timeout(Some(Duration::from_millis(500)))?;
            Ok(s)
        })
        .join()
        .unwrap()
        .expect("bind");
    t.stop_link();
    // Sent while no link runs: they wait at the client's TUN device.
    const OLD: u64 = 20;
    with_client(&t, move || {
        let s = UdpSocket::bind("0.0.0.0:0")?;
        for i in 0..OLD {
            s.send_to(format!("old {i}").as_bytes(), addr)?;
        }
        Ok(())
    });
    t.start_link(&cfg).expect("restart");
    with_client(&t, move || {
        UdpSocket::bind("0.0.0.0:0")?.send_to(b"new", addr)?;
        Ok(())
    });
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    // Bounded: the socket times out 500 ms after the last datagram.
    while got.len() < 2 * OLD as usize {
        match server.recv_from(&mut buf) {
            Ok((n, _)) => got.push(String::from_utf8_lossy(&buf[..n]).into_owned()),
            Err(_) => break,
        }
    }
    assert_eq!(got, ["new"], "only the new link's datagram arrives");
    let c = t.stop_link();
    // The kernel may queue its own packets too (none are expected on these devices).
    assert!(
        (OLD..OLD + 5).contains(&c.up.stale),
        "stale up: {}",
        c.up.stale
    );
    assert_eq!(
        c.up.packets_in, 1,
        "the link itself saw only the new datagram"
    );
}
