//! Which flows a link carries when it is set to carry only the client's new ones
//! ([`crate::LinkConfig::client_flows_only`]).
//!
//! A flow is opened by the client side: a TCP connection by its first SYN going up, a
//! UDP flow by its first datagram going up. Afterwards both directions of the flow pass,
//! as do ICMP errors that quote one of its packets and ICMP messages that are not errors.
//! Everything else belongs to a connection from before the link started (in the lab, the
//! previous load's: the client kernel's retransmitted FINs and resets, the server's data
//! and FINs to a client that is gone, a QUIC server's probes) and is refused. Packets
//! this module cannot read (other protocols, IPv6 extension headers, fragments after
//! the first) pass.

use crate::Direction;
use std::collections::HashSet;

const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;
const ICMPV6: u8 = 58;
const TCP_SYN: u8 = 0x02;
const TCP_ACK: u8 = 0x10;

/// A flow as the client sees it: protocol, the client's address and port, the server's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Flow {
    proto: u8,
    client: ([u8; 16], u16),
    server: ([u8; 16], u16),
}

impl Flow {
    /// The flow of a packet of `proto` from `src` to `dst`, sent by the client side when
    /// `by_client`.
    fn of(proto: u8, src: ([u8; 16], u16), dst: ([u8; 16], u16), by_client: bool) -> Flow {
        let (client, server) = if by_client { (src, dst) } else { (dst, src) };
        Flow {
            proto,
            client,
            server,
        }
    }
}

/// What the filter reads of one IP packet.
#[derive(Debug, PartialEq)]
enum Parsed {
    /// A TCP or UDP packet: its protocol, source and destination, and the TCP flags (0
    /// for UDP).
    Ports {
        proto: u8,
        src: ([u8; 16], u16),
        dst: ([u8; 16], u16),
        tcp_flags: u8,
    },
    /// An ICMP error about the packet whose header starts at this offset.
    IcmpError(usize),
    /// Anything else: passes.
    Other,
}

fn addr(b: &[u8]) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[..b.len()].copy_from_slice(b);
    a
}

/// Reads the IP header of `p` and the transport header after it.
fn parse(p: &[u8]) -> Parsed {
    let Some(&first) = p.first() else {
        return Parsed::Other;
    };
    let (proto, src, dst, l4) = match first >> 4 {
        4 if p.len() >= 20 => {
            let ihl = usize::from(first & 0x0f) * 4;
            let frag_offset = u16::from_be_bytes([p[6], p[7]]) & 0x1fff;
            if ihl < 20 || frag_offset != 0 {
                return Parsed::Other;
            }
            (p[9], addr(&p[12..16]), addr(&p[16..20]), ihl)
        }
        6 if p.len() >= 40 => (p[6], addr(&p[8..24]), addr(&p[24..40]), 40),
        _ => return Parsed::Other,
    };
    let t = &p[l4.min(p.len())..];
    match proto {
        TCP | UDP if t.len() >= 4 => {
            let sport = u16::from_be_bytes([t[0], t[1]]);
            let dport = u16::from_be_bytes([t[2], t[3]]);
            let tcp_flags = if proto == TCP {
                t.get(13).copied().unwrap_or(0)
            } else {
                0
            };
            Parsed::Ports {
                proto,
                src: (src, sport),
                dst: (dst, dport),
                tcp_flags,
            }
        }
        // ICMP errors: destination unreachable, source quench, redirect, time exceeded,
        // parameter problem; the quoted packet follows the 8-byte ICMP header.
        ICMP if matches!(t.first(), Some(3 | 4 | 5 | 11 | 12)) => Parsed::IcmpError(l4 + 8),
        // ICMPv6 errors are types 1-4 (RFC 4443 §2.1); 128 and above are informational.
        ICMPV6 if matches!(t.first(), Some(1..=4)) => Parsed::IcmpError(l4 + 8),
        _ => Parsed::Other,
    }
}

/// The flows a link has seen the client open since it started.
#[derive(Debug, Default)]
pub struct FlowFilter {
    open: HashSet<Flow>,
}

impl FlowFilter {
    /// A filter that knows no flow yet.
    pub fn new() -> FlowFilter {
        FlowFilter::default()
    }

    /// Whether `packet`, going `dir`, belongs to a flow the client opened since the
    /// filter was made (opening it if the packet is a client's SYN or UDP datagram).
    pub fn admit(&mut self, dir: Direction, packet: &[u8]) -> bool {
        match parse(packet) {
            Parsed::Other => true,
            Parsed::Ports {
                proto,
                src,
                dst,
                tcp_flags,
            } => {
                let flow = Flow::of(proto, src, dst, dir == Direction::Up);
                let opens = dir == Direction::Up
                    && (proto == UDP || tcp_flags & (TCP_SYN | TCP_ACK) == TCP_SYN);
                if opens {
                    self.open.insert(flow);
                    true
                } else {
                    self.open.contains(&flow)
                }
            }
            // An error about a packet the other side sent: the quoted packet went the
            // opposite way.
            Parsed::IcmpError(at) => match parse(packet.get(at..).unwrap_or(&[])) {
                Parsed::Ports {
                    proto, src, dst, ..
                } => self
                    .open
                    .contains(&Flow::of(proto, src, dst, dir == Direction::Down)),
                _ => true,
            },
        }
    }

    /// How many flows are open.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// True if no flow is open.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Direction::{Down, Up};

    const C: [u8; 4] = [100, 64, 0, 1];
    const S: [u8; 4] = [100, 65, 0, 1];

    /// An IPv4 packet of `proto` from `src:sport` to `dst:dport` with TCP `flags`.
    fn v4(
        proto: u8,
        (src, sport): ([u8; 4], u16),
        (dst, dport): ([u8; 4], u16),
        flags: u8,
    ) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[9] = proto;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&dport.to_be_bytes());
        p[33] = flags;
        p
    }

    fn v6_udp(src: u16, dst: u16) -> Vec<u8> {
        let mut p = vec![0u8; 48];
        p[0] = 0x60;
        p[6] = UDP;
        p[8..24].copy_from_slice(&[0xfd; 16]);
        p[24..40].copy_from_slice(&[0xfe; 16]);
        p[40..42].copy_from_slice(&src.to_be_bytes());
        p[42..44].copy_from_slice(&dst.to_be_bytes());
        p
    }

    /// An ICMPv4 error of `kind` sent from `from` to `to`, quoting `quoted`.
    fn icmp(kind: u8, from: [u8; 4], to: [u8; 4], quoted: &[u8]) -> Vec<u8> {
        let mut p = v4(ICMP, (from, 0), (to, 0), 0);
        p.truncate(28);
        p[20] = kind;
        p[21..24].fill(0);
        p.extend_from_slice(&quoted[..28]);
        p
    }

    #[test]
    fn a_tcp_connection_opens_with_the_clients_syn_only() {
        let mut f = FlowFilter::new();
        let old_fin = v4(TCP, (C, 40000), (S, 443), 0x11);
        let old_data_down = v4(TCP, (S, 443), (C, 40000), 0x18);
        assert!(!f.admit(Up, &old_fin), "a FIN of a connection from before");
        assert!(!f.admit(Down, &old_data_down), "the server's data to it");
        assert!(
            !f.admit(Up, &v4(TCP, (C, 40000), (S, 443), 0x04)),
            "a reset"
        );
        // The server cannot open one, nor a SYN-ACK stand in for a SYN.
        assert!(!f.admit(Down, &v4(TCP, (S, 443), (C, 40001), TCP_SYN)));
        assert!(!f.admit(Up, &v4(TCP, (C, 40001), (S, 443), TCP_SYN | TCP_ACK)));
        assert!(f.is_empty());
        assert!(f.admit(Up, &v4(TCP, (C, 40002), (S, 443), TCP_SYN)));
        assert!(f.admit(Down, &v4(TCP, (S, 443), (C, 40002), TCP_SYN | TCP_ACK)));
        assert!(f.admit(Up, &v4(TCP, (C, 40002), (S, 443), TCP_ACK)));
        // Another port of the same server is another flow.
        assert!(!f.admit(Down, &v4(TCP, (S, 8443), (C, 40002), TCP_ACK)));
        assert_eq!(f.len(), 1);
    }

    #[test]
    fn a_udp_flow_opens_with_the_clients_first_datagram() {
        let mut f = FlowFilter::new();
        // A QUIC server's probe to a client port from before the start.
        assert!(!f.admit(Down, &v4(UDP, (S, 443), (C, 50000), 0)));
        assert!(f.admit(Up, &v4(UDP, (C, 50000), (S, 443), 0)));
        assert!(f.admit(Down, &v4(UDP, (S, 443), (C, 50000), 0)));
        assert!(!f.admit(Down, &v6_udp(443, 50001)));
        assert!(f.admit(Up, &v6_udp(50001, 443)));
        assert!(f.admit(Down, &{
            let mut p = v6_udp(443, 50001);
            p[8..24].copy_from_slice(&[0xfe; 16]);
            p[24..40].copy_from_slice(&[0xfd; 16]);
            p
        }));
    }

    #[test]
    fn icmp_errors_pass_for_open_flows_only_and_the_rest_passes() {
        let mut f = FlowFilter::new();
        let old = v4(UDP, (S, 443), (C, 50000), 0);
        // The client's port unreachable about the server's datagram to a gone port.
        assert!(!f.admit(Up, &icmp(3, C, S, &old)));
        assert!(f.admit(Up, &v4(UDP, (C, 50000), (S, 443), 0)));
        assert!(f.admit(Up, &icmp(3, C, S, &old)));
        // Fragmentation needed, from the server side, about a client packet.
        assert!(f.admit(Down, &icmp(3, S, C, &v4(UDP, (C, 50000), (S, 443), 0))));
        // An echo request is not an error; nor is what cannot be read.
        assert!(f.admit(Up, &icmp(8, C, S, &old)));
        assert!(f.admit(Up, &[]));
        assert!(f.admit(Down, &[0x45, 0, 0]));
        let mut frag = v4(TCP, (S, 443), (C, 1), 0);
        frag[7] = 1;
        assert!(
            f.admit(Down, &frag),
            "a fragment after the first has no ports"
        );
    }
}
