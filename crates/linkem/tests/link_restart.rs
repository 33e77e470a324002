//! A restarted link starts empty: what the namespaces sent while no link ran (in the lab,
//! the previous load's last packets) is discarded and counted as stale, never delivered
//! ahead of the new link's own traffic.

mod common;

use common::*;
use linkem::{LinkConfig, Side};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
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

#[test]
fn a_link_for_the_clients_new_flows_refuses_connections_from_before_its_start() {
    if !can_run() {
        return;
    }
    let _g = serial();
    let cfg = LinkConfig {
        client_flows_only: true,
        ..delay_only(Duration::from_millis(5))
    };
    let mut t = start(&cfg);
    let tcp_addr = server_addr(&t, 5312);
    let udp_addr = server_addr(&t, 5313);
    let (listener, server_udp) = t
        .spawn_in(Side::Server, move || {
            let l = TcpListener::bind(tcp_addr)?;
            let u = UdpSocket::bind(udp_addr)?;
            u.set_read_timeout(Some(Duration::from_millis(500)))?;
            Ok((l, u))
        })
        .join()
        .unwrap()
        .expect("bind");
    // A connection and a UDP flow of the first link: both work on it.
    let (old_tcp, old_udp) = with_client(&t, move || {
        let s = TcpStream::connect_timeout(&tcp_addr, Duration::from_secs(2))?;
        let u = UdpSocket::bind("0.0.0.0:0")?;
        u.send_to(b"first", udp_addr)?;
        Ok((s, u))
    });
    let (mut accepted, _) = listener.accept().expect("accept");
    accepted
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut buf = [0u8; 64];
    let (n, old_client) = server_udp.recv_from(&mut buf).expect("first datagram");
    assert_eq!(&buf[..n], b"first");

    t.stop_link();
    t.start_link(&cfg).expect("restart");
    // The old connection's data (up) and the server's datagram to the old client port
    // (down) are refused; a new connection and a new flow pass.
    (&old_tcp).write_all(b"old data").unwrap();
    server_udp.send_to(b"to the old port", old_client).unwrap();
    old_udp
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    assert!(
        old_udp.recv_from(&mut buf).is_err(),
        "the server's datagram to a flow from before the start must not arrive"
    );
    assert!(
        accepted.read(&mut buf).is_err(),
        "the old connection's data must not arrive"
    );
    let new_tcp = with_client(&t, move || {
        TcpStream::connect_timeout(&tcp_addr, Duration::from_secs(2))
    });
    (&new_tcp).write_all(b"new").unwrap();
    let (mut fresh, _) = listener.accept().expect("accept the new connection");
    fresh
        .set_read_timeout(Some(Duration::from_millis(2000)))
        .unwrap();
    let n = fresh.read(&mut buf).expect("new data");
    assert_eq!(&buf[..n], b"new");
    // The old UDP socket's next datagram opens its flow again: the reply arrives.
    old_udp.send_to(b"again", udp_addr).unwrap();
    let (_, from) = server_udp
        .recv_from(&mut buf)
        .expect("datagram after restart");
    server_udp.send_to(b"reply", from).unwrap();
    let n = old_udp.recv(&mut buf).expect("reply on the reopened flow");
    assert_eq!(&buf[..n], b"reply");
    let c = t.stop_link();
    assert!(c.up.stale >= 1, "the old data counted as stale up: {c:?}");
    assert!(
        c.down.stale >= 1,
        "the server's datagram counted as stale down: {c:?}"
    );
}
