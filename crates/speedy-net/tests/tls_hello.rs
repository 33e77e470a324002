//! The Chromium-shaped ClientHello keeps its shape on resumed handshakes: rustls alone
//! would send only the key share of the group the server chose last time.
//! Client and server run in memory (rustls without sockets).

use rustls::pki_types::ServerName;
use rustls::{ClientConnection, ServerConnection};
use speedy_net::tls::{self, Hello, Verify};
use std::sync::Arc;

/// Moves bytes both ways until neither side has anything to say.
fn pump(c: &mut ClientConnection, s: &mut ServerConnection) {
    for _ in 0..100 {
        let mut moved = false;
        let mut buf = Vec::new();
        while c.wants_write() {
            c.write_tls(&mut buf).unwrap();
        }
        let mut rd = &buf[..];
        while !rd.is_empty() {
            moved = true;
            s.read_tls(&mut rd).unwrap();
            s.process_new_packets().unwrap();
        }
        buf.clear();
        while s.wants_write() {
            s.write_tls(&mut buf).unwrap();
        }
        let mut rd = &buf[..];
        while !rd.is_empty() {
            moved = true;
            c.read_tls(&mut rd).unwrap();
            c.process_new_packets().unwrap();
        }
        if !moved {
            return;
        }
    }
    panic!("the handshake did not settle");
}

/// The first ClientHello record a config sends after one full handshake with the server
/// (so a session ticket and the server's group are known).
fn second_hello(hello: Hello) -> Vec<u8> {
    let (certs, key) = tls::self_signed(&[]).unwrap();
    let server = tls::server_config(certs, key, &["h2"]).unwrap();
    let client = tls::client_config_with(&Verify::Insecure, &["h2"], hello).unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let mut c = ClientConnection::new(client.clone(), name.clone()).unwrap();
    let mut s = ServerConnection::new(Arc::clone(&server)).unwrap();
    pump(&mut c, &mut s);
    assert!(!c.is_handshaking() && !s.is_handshaking());
    let mut c2 = ClientConnection::new(client, name).unwrap();
    let mut out = Vec::new();
    while c2.wants_write() {
        c2.write_tls(&mut out).unwrap();
    }
    assert_eq!(out[0], 22, "a handshake record");
    let len = u16::from_be_bytes([out[3], out[4]]) as usize;
    out.truncate(5 + len);
    out
}

fn has(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn a_resumed_chromium_hello_still_carries_the_post_quantum_share() {
    let h = second_hello(Hello::Chromium);
    // pre_shared_key (41): it resumes.
    assert!(has(&h, &[0x00, 0x29]), "no PSK offered");
    // A key share entry for X25519MLKEM768 (0x11ec, 1,216 bytes) and one for X25519.
    assert!(
        has(&h, &[0x11, 0xec, 0x04, 0xc0]),
        "no X25519MLKEM768 share"
    );
    assert!(has(&h, &[0x00, 0x1d, 0x00, 0x20]), "no X25519 share");
    assert!(h.len() > 1_700, "{} bytes", h.len());
    // rustls's own shape resumes with one small share.
    let plain = second_hello(Hello::Plain);
    assert!(plain.len() < 700, "{} bytes", plain.len());
}
