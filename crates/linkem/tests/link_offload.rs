//! Segmentation offload: a link that only delays carries TCP super-packets whole (one read
//! and one write for a train of segments), every byte arriving intact and the counters
//! counting the segments; a shaping link still sees one packet per read.

mod common;

use common::*;
use linkem::{DirectionConfig, LinkConfig, Server, Side, Topology};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// The byte at `offset` of the test stream (251 is prime: no alignment with segments).
fn pattern(offset: u64) -> u8 {
    (offset % 251) as u8
}

/// Sends `bytes` of the pattern one way over TCP and checks every byte on arrival.
fn verified_transfer(t: &Topology, down: bool, port: u16, bytes: u64) {
    let addr = server_addr(t, port);
    let listener = t
        .spawn_in(Side::Server, move || TcpListener::bind(addr))
        .join()
        .unwrap()
        .expect("bind");
    let (send_side, recv_side) = match down {
        true => (Side::Server, Side::Client),
        false => (Side::Client, Side::Server),
    };
    let listener = std::sync::Arc::new(listener);
    let open = move |l: &TcpListener, accept: bool| -> std::io::Result<TcpStream> {
        let s = match accept {
            true => l.accept()?.0,
            false => TcpStream::connect_timeout(&addr, Duration::from_secs(5))?,
        };
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.set_write_timeout(Some(Duration::from_secs(5)))?;
        Ok(s)
    };
    let l1 = listener.clone();
    let sender = t.spawn_in(send_side, move || {
        let mut s = open(&l1, down)?;
        let mut buf = vec![0u8; 200_000];
        let mut sent = 0u64;
        while sent < bytes {
            let n = (bytes - sent).min(buf.len() as u64) as usize;
            for (i, b) in buf[..n].iter_mut().enumerate() {
                *b = pattern(sent + i as u64);
            }
            s.write_all(&buf[..n])?;
            sent += n as u64;
        }
        Ok(())
    });
    let l2 = listener.clone();
    let receiver = t.spawn_in(recv_side, move || {
        let mut s = open(&l2, !down)?;
        let mut buf = vec![0u8; 256 * 1024];
        let mut got = 0u64;
        loop {
            let n = s.read(&mut buf)?;
            if n == 0 {
                break;
            }
            if let Some(i) = (0..n).find(|&i| buf[i] != pattern(got + i as u64)) {
                return Err(std::io::Error::other(format!(
                    "byte {} corrupted",
                    got + i as u64
                )));
            }
            got += n as u64;
        }
        Ok(got)
    });
    sender.join().unwrap().expect("sender");
    let got = receiver.join().unwrap().expect("receiver");
    assert_eq!(got, bytes, "every byte arrived");
}

#[test]
fn a_delay_only_link_carries_super_packets_intact_both_ways() {
    if !can_run() {
        return;
    }
    let _g = serial();
    let cfg = delay_only(Duration::from_millis(2));
    assert!(cfg.is_transparent());
    let mut t = start(&cfg);
    verified_transfer(&t, false, 5301, 64 << 20);
    verified_transfer(&t, true, 5302, 64 << 20);
    // The closing segments still in the delay line get out.
    std::thread::sleep(Duration::from_millis(200));
    let c = t.stop_link();
    for (name, d) in [("up", c.up), ("down", c.down)] {
        // Super-packets came: well over one packet a read in the bulk direction.
        assert!(
            d.packets_in > 2 * d.reads,
            "{name}: {} packets in {} reads",
            d.packets_in,
            d.reads
        );
        // Segments counted with their headers: more wire bytes than payload.
        assert!(d.bytes_in > 64 << 20, "{name}: {} bytes", d.bytes_in);
        assert_eq!(d.packets_in, d.packets_out, "{name}: nothing lost or held");
        assert_eq!(d.dropped_total(), 0, "{name}");
    }
}

#[test]
fn a_shaping_link_sees_one_packet_a_read() {
    if !can_run() {
        return;
    }
    let _g = serial();
    let cfg = LinkConfig {
        up: DirectionConfig {
            server: Server::Rate(200_000_000),
            ..Default::default()
        },
        ..Default::default()
    };
    assert!(!cfg.is_transparent());
    let mut t = start(&cfg);
    verified_transfer(&t, false, 5303, 16 << 20);
    let c = t.stop_link();
    assert_eq!(c.up.packets_in, c.up.reads);
    assert_eq!(c.down.packets_in, c.down.reads);
    // 16 MiB in segments of at most 1448 payload bytes.
    assert!(c.up.packets_in > (16 << 20) / 1448, "{}", c.up.packets_in);
}
