//! Raw SCTP packets (RFC 9260 §3): just enough to see chunk types, to take from a
//! multihomed peer's INIT and INIT ACK the address lists the SCTP stack cannot parse
//! ([`strip_addresses`]), and to bundle the first DATA with the COOKIE ECHO, which the
//! stack itself does not do.
//!
//! The client's handshake without bundling is INIT → INIT ACK → COOKIE ECHO → COOKIE
//! ACK → DATA: the first request leaves two round trips after the connect. RFC 9260
//! §5.1 lets the COOKIE ECHO carry DATA, making it one, as on TCP. [`Bundler`] does that
//! around the stack: when the stack sends the COOKIE ECHO, the association is told the
//! cookie was acknowledged (a COOKIE ACK made here, addressed to it) so that it
//! releases its queued DATA at once; the first DATA packet's chunks are appended to the
//! COOKIE ECHO's packet. Until anything comes back from the peer, the COOKIE ECHO is
//! sent again on its own with a doubling timeout, the T1-cookie timer the stack no
//! longer runs.

use bytes::Bytes;
use std::time::{Duration, Instant};

/// Chunk type numbers (RFC 9260 §3.2).
pub mod chunk {
    /// DATA.
    pub const DATA: u8 = 0;
    /// INIT.
    pub const INIT: u8 = 1;
    /// INIT ACK.
    pub const INIT_ACK: u8 = 2;
    /// SACK.
    pub const SACK: u8 = 3;
    /// ABORT.
    pub const ABORT: u8 = 6;
    /// COOKIE ECHO.
    pub const COOKIE_ECHO: u8 = 10;
    /// COOKIE ACK.
    pub const COOKIE_ACK: u8 = 11;
}

/// The common header's length.
const COMMON: usize = 12;

/// The largest bundled packet: a 1500-byte link's payload under an IPv6 and a UDP
/// header.
const BUNDLE_MTU: usize = 1500 - 40 - 8;

const CRC32C: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);

/// The chunks of a packet: (type, flags, value), padding skipped; stops at the first
/// malformed chunk.
pub fn chunks(packet: &[u8]) -> impl Iterator<Item = (u8, u8, &[u8])> {
    let mut at = COMMON.min(packet.len());
    std::iter::from_fn(move || {
        let head = packet.get(at..at + 4)?;
        let len = usize::from(u16::from_be_bytes([head[2], head[3]]));
        let value = packet.get(at + 4..at + len.max(4))?;
        at += (len.max(4) + 3) & !3;
        Some((head[0], head[1], value))
    })
}

/// The SCTP streams of a packet's DATA chunks, in order.
pub fn data_streams(packet: &[u8]) -> Vec<u16> {
    chunks(packet)
        .filter(|(t, _, v)| *t == chunk::DATA && v.len() >= 8)
        .map(|(_, _, v)| u16::from_be_bytes([v[4], v[5]]))
        .collect()
}

/// Sets the I bit (RFC 7053: SACK immediately) on the last DATA chunk of `packet` and
/// reseals it; `false` when it carries no DATA.
pub fn sack_immediately(packet: &mut [u8]) -> bool {
    let mut at = COMMON;
    let mut last = None;
    while let Some(head) = packet.get(at..at + 4) {
        let len = usize::from(u16::from_be_bytes([head[2], head[3]])).max(4);
        if head[0] == chunk::DATA {
            last = Some(at);
        }
        at += (len + 3) & !3;
    }
    let Some(at) = last else { return false };
    packet[at + 1] |= DATA_FLAG_I;
    seal(packet);
    true
}

/// The I bit of a DATA chunk's flags (RFC 7053 §3).
const DATA_FLAG_I: u8 = 0x08;

/// The type of a packet's first chunk.
pub fn first_chunk(packet: &[u8]) -> Option<u8> {
    chunks(packet).next().map(|(t, _, _)| t)
}

/// Whether a client's endpoint may be handed `packet`: anything but an INIT. A client
/// accepts no association, and the SCTP stack's endpoint without a server configuration
/// panics on an INIT that is not for one of its associations (`sctp-proto` 0.10,
/// `Endpoint::handle_first_packet` unwraps the configuration; an INIT's verification
/// tag is 0, so that is every INIT): one datagram from the server's address would end
/// the client's association task.
pub fn client_takes(packet: &[u8]) -> bool {
    first_chunk(packet) != Some(chunk::INIT)
}

/// Writes the CRC32c of `packet` into its common header (RFC 9260 Appendix A).
pub fn seal(packet: &mut [u8]) {
    packet[8..12].fill(0);
    let sum = CRC32C.checksum(packet);
    packet[8..12].copy_from_slice(&sum.to_le_bytes());
}

/// Whether a packet's checksum is right.
pub fn checksum_ok(packet: &[u8]) -> bool {
    if packet.len() < COMMON {
        return false;
    }
    let mut copy = packet.to_vec();
    seal(&mut copy);
    copy[8..12] == packet[8..12]
}

/// Parameter types a single-homed endpoint over UDP has no use for and the SCTP stack
/// refuses: IPv4 (5) and IPv6 (6) Address, Cookie Preservative (9). RFC 9260 §3.3.2
/// lets an INIT or INIT ACK list every address of a multihomed peer (usrsctp and
/// Linux's SCTP always do); `sctp-proto` knows none of these and, their type's top bit
/// being 0, drops the whole chunk, so no association with such a peer would ever form.
const STRIPPED_PARAMS: [u16; 3] = [5, 6, 9];

/// A received INIT or INIT ACK without the parameters of [`STRIPPED_PARAMS`] (the
/// association then uses the address the packet came from, as a single-homed endpoint
/// must), checksummed again; `None` when there is nothing to strip or the packet's
/// own checksum is wrong (it is left for the stack to drop).
pub fn strip_addresses(packet: &[u8]) -> Option<Vec<u8>> {
    let (kind, _, value) = chunks(packet).next()?;
    if !matches!(kind, chunk::INIT | chunk::INIT_ACK) || value.len() < 16 {
        return None;
    }
    let mut params = Vec::with_capacity(value.len());
    let mut stripped = false;
    let mut at = 16;
    while at + 4 <= value.len() {
        let ty = u16::from_be_bytes([value[at], value[at + 1]]);
        let len = usize::from(u16::from_be_bytes([value[at + 2], value[at + 3]]));
        if len < 4 || at + len > value.len() {
            return None;
        }
        let end = (at + ((len + 3) & !3)).min(value.len());
        if STRIPPED_PARAMS.contains(&ty) {
            stripped = true;
        } else {
            params.extend_from_slice(&value[at..end]);
        }
        at = end;
    }
    if !stripped || !checksum_ok(packet) {
        return None;
    }
    let chunk_len = 4 + 16 + params.len();
    let mut out = Vec::with_capacity(COMMON + chunk_len);
    out.extend_from_slice(&packet[..COMMON]);
    out.extend_from_slice(&packet[COMMON..COMMON + 2]);
    out.extend_from_slice(&(chunk_len as u16).to_be_bytes());
    out.extend_from_slice(&value[..16]);
    out.extend_from_slice(&params);
    // Chunks bundled after an INIT or INIT ACK are not allowed (RFC 9260 §6.10).
    seal(&mut out);
    Some(out)
}

/// An ABORT for the association whose packets start with `header` (ports and the
/// peer's verification tag, as in any packet we sent it): what an endpoint sends when it
/// goes away without the SHUTDOWN exchange (RFC 9260 §9.1).
pub fn abort(header: &[u8; 8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(COMMON + 4);
    p.extend_from_slice(header);
    p.extend_from_slice(&[0; 4]);
    p.extend_from_slice(&[chunk::ABORT, 0, 0, 4]);
    seal(&mut p);
    p
}

/// A COOKIE ACK from `from_port` to `to_port` with verification tag `tag`.
fn cookie_ack(from_port: u16, to_port: u16, tag: u32) -> Bytes {
    let mut p = Vec::with_capacity(COMMON + 4);
    p.extend_from_slice(&from_port.to_be_bytes());
    p.extend_from_slice(&to_port.to_be_bytes());
    p.extend_from_slice(&tag.to_be_bytes());
    p.extend_from_slice(&[0; 4]);
    p.extend_from_slice(&[chunk::COOKIE_ACK, 0, 0, 4]);
    seal(&mut p);
    p.into()
}

/// `cookie` (a COOKIE ECHO packet) with the chunks of `data` (a packet of the same
/// association starting with DATA) appended, if the result fits in `mtu` bytes.
pub fn bundle(cookie: &[u8], data: &[u8], mtu: usize) -> Option<Vec<u8>> {
    if cookie.len() < COMMON || data.len() <= COMMON || cookie[..8] != data[..8] {
        return None;
    }
    let padded = (cookie.len() + 3) & !3;
    if padded + data.len() - COMMON > mtu {
        return None;
    }
    let mut p = Vec::with_capacity(padded + data.len() - COMMON);
    p.extend_from_slice(cookie);
    p.resize(padded, 0);
    p.extend_from_slice(&data[COMMON..]);
    seal(&mut p);
    Some(p)
}

/// What [`Bundler::outgoing`] decided about one burst of packets.
pub struct Outgoing {
    /// Packets to send now.
    pub send: Vec<Bytes>,
    /// A COOKIE ACK to feed the association as if it came from the peer.
    pub inject: Option<Bytes>,
}

/// The client side of DATA bundled with COOKIE ECHO (module docs).
#[derive(Default)]
pub struct Bundler {
    /// The verification tag the peer uses towards us: our INIT's Initiate Tag.
    own_tag: Option<u32>,
    /// The COOKIE ECHO packet, held until the next burst (to bundle) and kept until the
    /// peer is heard from (to resend).
    cookie: Option<Bytes>,
    /// Whether the held COOKIE ECHO went out.
    sent: bool,
    /// When to send it again, and after how long the time after that.
    resend: Option<(Instant, Duration)>,
    resends: u32,
    /// Whether a packet bundled DATA with the COOKIE ECHO (for logs and tests).
    pub bundled: bool,
}

/// What to do about the COOKIE ECHO at a deadline.
#[derive(Debug, PartialEq, Eq)]
pub enum Cookie {
    /// Nothing yet.
    Wait,
    /// Send it again.
    Resend(Bytes),
    /// Unanswered too often: the association failed.
    GiveUp,
}

/// How many times the COOKIE ECHO is sent again before the association is given up
/// (RFC 9260 §16: Max.Init.Retransmits).
pub const MAX_COOKIE_RESENDS: u32 = 8;

impl Bundler {
    /// Looks at one burst of the association's packets: notes the INIT's tag, holds the
    /// COOKIE ECHO (and asks for the COOKIE ACK to be injected), and bundles a held COOKIE
    /// ECHO with the burst's first DATA packet.
    pub fn outgoing(&mut self, packets: Vec<Bytes>, now: Instant, rto: Duration) -> Outgoing {
        let mut out = Outgoing {
            send: Vec::with_capacity(packets.len() + 1),
            inject: None,
        };
        for p in packets {
            match first_chunk(&p) {
                Some(chunk::INIT) if p.len() >= COMMON + 8 => {
                    self.own_tag = Some(u32::from_be_bytes([p[16], p[17], p[18], p[19]]));
                    out.send.push(p);
                }
                Some(chunk::COOKIE_ECHO) if self.cookie.is_none() => {
                    if let Some(tag) = self.own_tag {
                        let from = u16::from_be_bytes([p[2], p[3]]);
                        let to = u16::from_be_bytes([p[0], p[1]]);
                        out.inject = Some(cookie_ack(from, to, tag));
                        self.cookie = Some(p);
                    } else {
                        out.send.push(p);
                    }
                }
                Some(chunk::DATA) if self.cookie.is_some() && !self.sent => {
                    let cookie = self.cookie.as_ref().expect("held");
                    match bundle(cookie, &p, BUNDLE_MTU) {
                        Some(b) => {
                            self.bundled = true;
                            out.send.push(b.into());
                        }
                        None => {
                            out.send.push(cookie.clone());
                            out.send.push(p);
                        }
                    }
                    self.sent = true;
                    self.resend = Some((now + rto, rto * 2));
                }
                _ => out.send.push(p),
            }
        }
        // A burst with the cookie held but no DATA to go with it: the cookie goes alone.
        if out.inject.is_none() && !self.sent {
            if let Some(cookie) = &self.cookie {
                out.send.insert(0, cookie.clone());
                self.sent = true;
                self.resend = Some((now + rto, rto * 2));
            }
        }
        out
    }

    /// Whether the held COOKIE ECHO waits for a burst to go out with.
    pub fn holding(&self) -> bool {
        self.cookie.is_some() && !self.sent
    }

    /// Something arrived from the peer after the COOKIE ECHO went out: it has the cookie.
    pub fn heard(&mut self) {
        if self.sent {
            self.resend = None;
            self.cookie = None;
        }
    }

    /// When the COOKIE ECHO is due again.
    pub fn deadline(&self) -> Option<Instant> {
        self.resend.map(|(at, _)| at)
    }

    /// At the deadline: the COOKIE ECHO to send again, or give up once it has been sent
    /// [`MAX_COOKIE_RESENDS`] more times unanswered.
    pub fn on_deadline(&mut self, now: Instant) -> Cookie {
        match (self.resend, &self.cookie) {
            (Some((at, next)), Some(cookie)) if now >= at => {
                if self.resends >= MAX_COOKIE_RESENDS {
                    return Cookie::GiveUp;
                }
                self.resends += 1;
                self.resend = Some((now + next, (next * 2).min(Duration::from_secs(60))));
                Cookie::Resend(cookie.clone())
            }
            _ => Cookie::Wait,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(tag: u32, chunks_: &[(u8, &[u8])]) -> Bytes {
        let mut p = vec![0x13, 0x88, 0x13, 0x89];
        p.extend_from_slice(&tag.to_be_bytes());
        p.extend_from_slice(&[0; 4]);
        for (t, v) in chunks_ {
            p.extend_from_slice(&[*t, 0]);
            p.extend_from_slice(&((4 + v.len()) as u16).to_be_bytes());
            p.extend_from_slice(v);
            p.resize((p.len() + 3) & !3, 0);
        }
        seal(&mut p);
        p.into()
    }

    #[test]
    fn the_checksum_is_crc32c_little_endian_as_rfc_9260_appendix_a() {
        // CRC-32C check value of "123456789" is 0xE3069283 (RFC 3720 B.4's algorithm).
        assert_eq!(CRC32C.checksum(b"123456789"), 0xe306_9283);
        let p = packet(7, &[(chunk::COOKIE_ACK, &[])]);
        assert!(checksum_ok(&p));
        let mut bad = p.to_vec();
        bad[15] ^= 1;
        assert!(!checksum_ok(&bad));
    }

    #[test]
    fn the_cookie_echo_is_held_acked_locally_and_bundled_with_the_first_data() {
        let mut b = Bundler::default();
        let now = Instant::now();
        let rto = Duration::from_secs(1);
        let mut init = vec![0u8; 16];
        init[..4].copy_from_slice(&0xfeed_f00du32.to_be_bytes());
        let out = b.outgoing(vec![packet(0, &[(chunk::INIT, &init)])], now, rto);
        assert_eq!(out.send.len(), 1);
        let cookie = packet(0x55, &[(chunk::COOKIE_ECHO, b"cookie!")]);
        let out = b.outgoing(vec![cookie.clone()], now, rto);
        assert!(out.send.is_empty(), "held for the data");
        let ack = out.inject.expect("a COOKIE ACK to inject");
        assert!(checksum_ok(&ack));
        assert_eq!(&ack[4..8], &0xfeed_f00du32.to_be_bytes(), "our tag");
        assert_eq!((&ack[0..2], &ack[2..4]), (&cookie[2..4], &cookie[0..2]));
        assert_eq!(first_chunk(&ack), Some(chunk::COOKIE_ACK));
        assert!(b.holding());
        let mut dv = vec![0u8; 12];
        dv[4..6].copy_from_slice(&3u16.to_be_bytes());
        dv.extend_from_slice(b"SPDY");
        let data = packet(0x55, &[(chunk::DATA, &dv)]);
        let out = b.outgoing(vec![data], now, rto);
        assert_eq!(out.send.len(), 1);
        let types: Vec<u8> = chunks(&out.send[0]).map(|(t, _, _)| t).collect();
        assert_eq!(types, vec![chunk::COOKIE_ECHO, chunk::DATA]);
        assert_eq!(data_streams(&out.send[0]), vec![3]);
        assert!(checksum_ok(&out.send[0]));
        assert!(b.bundled);
        // Unanswered, it goes again alone after the RTO, doubling.
        assert_eq!(b.on_deadline(now), Cookie::Wait);
        assert_eq!(b.on_deadline(now + rto), Cookie::Resend(cookie.clone()));
        assert_eq!(b.deadline(), Some(now + rto * 3));
        b.heard();
        assert_eq!(b.deadline(), None);
    }

    #[test]
    fn the_i_bit_goes_on_the_last_data_chunk_only_and_the_packet_is_resealed() {
        let p = packet(
            7,
            &[
                (chunk::SACK, &[0u8; 12]),
                (chunk::DATA, &[1u8; 13]),
                (chunk::DATA, &[2u8; 16]),
            ],
        );
        let mut v = p.to_vec();
        assert!(sack_immediately(&mut v));
        assert!(checksum_ok(&v));
        let flags: Vec<(u8, u8)> = chunks(&v).map(|(t, f, _)| (t, f)).collect();
        assert_eq!(
            flags,
            [
                (chunk::SACK, 0),
                (chunk::DATA, 0),
                (chunk::DATA, DATA_FLAG_I)
            ]
        );
        let mut sack_only = packet(7, &[(chunk::SACK, &[0u8; 12])]).to_vec();
        assert!(!sack_immediately(&mut sack_only));
    }

    #[test]
    fn an_abort_carries_the_associations_ports_and_tag() {
        let data = packet(0xabcd, &[(chunk::DATA, &[0u8; 16])]);
        let a = abort(data[..8].try_into().unwrap());
        assert_eq!(&a[..8], &data[..8]);
        assert!(checksum_ok(&a));
        assert_eq!(first_chunk(&a), Some(chunk::ABORT));
    }

    #[test]
    fn address_parameters_are_stripped_from_an_init_ack_and_the_rest_kept() {
        // INIT ACK: fixed part, Forward-TSN (0xc000), IPv4 192.0.2.2, IPv4 127.0.0.1,
        // a 6-byte state cookie (padded), as usrsctp 0.9.5 sends them (shortened).
        let mut v = vec![0u8; 16];
        v[..4].copy_from_slice(&0x1234_5678u32.to_be_bytes());
        v.extend_from_slice(&[0xc0, 0, 0, 4]);
        v.extend_from_slice(&[0, 5, 0, 8, 192, 0, 2, 2]);
        v.extend_from_slice(&[0, 5, 0, 8, 127, 0, 0, 1]);
        v.extend_from_slice(&[0, 7, 0, 10, 1, 2, 3, 4, 5, 6, 0, 0]);
        let p = packet(9, &[(chunk::INIT_ACK, &v)]);
        let s = strip_addresses(&p).expect("stripped");
        assert!(checksum_ok(&s));
        let (t, _, value) = chunks(&s).next().unwrap();
        assert_eq!(t, chunk::INIT_ACK);
        assert_eq!(&value[..16], &v[..16]);
        assert_eq!(
            &value[16..],
            &[0xc0, 0, 0, 4, 0, 7, 0, 10, 1, 2, 3, 4, 5, 6, 0, 0]
        );
        assert_eq!(s.len(), p.len() - 16);
        // Nothing to strip, not an INIT, or a bad checksum: left alone.
        let plain = packet(9, &[(chunk::INIT_ACK, &v[..20])]);
        assert_eq!(strip_addresses(&plain), None);
        assert_eq!(strip_addresses(&packet(9, &[(chunk::DATA, &v)])), None);
        let mut bad = p.to_vec();
        bad[8] ^= 1;
        assert_eq!(strip_addresses(&bad), None);
    }

    #[test]
    fn a_client_takes_no_init_which_the_stack_would_panic_on() {
        // Found by the fuzz target sctp_association: a forged INIT to the client.
        let mut fixed = vec![0u8; 16];
        fixed[..4].copy_from_slice(&0x0102_0304u32.to_be_bytes());
        let init = packet(0, &[(chunk::INIT, &fixed)]);
        assert!(!client_takes(&init));
        for other in [
            packet(0, &[(chunk::INIT_ACK, &fixed)]),
            packet(7, &[(chunk::COOKIE_ACK, &[])]),
            packet(7, &[(chunk::DATA, &[0u8; 16])]),
            Bytes::from_static(b"short"),
        ] {
            assert!(client_takes(&other));
        }
        // Why: the stack's client endpoint panics on it (when it stops, this may go).
        let mut endpoint = sctp_proto::Endpoint::new(Default::default(), None);
        let server: std::net::SocketAddr = "127.0.0.1:9443".parse().unwrap();
        let _association = endpoint.connect(sctp_proto::ClientConfig::new(), server);
        let handled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            endpoint.handle(Instant::now(), server, None, None, init.clone())
        }));
        assert!(
            handled.is_err(),
            "sctp-proto took an INIT on a client endpoint"
        );
    }

    #[test]
    fn a_cookie_with_no_data_to_carry_goes_alone_and_gives_up_after_max_resends() {
        let mut b = Bundler::default();
        let now = Instant::now();
        let rto = Duration::from_millis(10);
        let mut init = vec![0u8; 16];
        init[..4].copy_from_slice(&9u32.to_be_bytes());
        b.outgoing(vec![packet(0, &[(chunk::INIT, &init)])], now, rto);
        let cookie = packet(3, &[(chunk::COOKIE_ECHO, b"c")]);
        assert!(b.outgoing(vec![cookie.clone()], now, rto).inject.is_some());
        let out = b.outgoing(vec![], now, rto);
        assert_eq!(out.send, vec![cookie]);
        let mut t = now;
        for _ in 0..MAX_COOKIE_RESENDS {
            t = b.deadline().unwrap();
            assert!(matches!(b.on_deadline(t), Cookie::Resend(_)));
        }
        assert_eq!(b.on_deadline(b.deadline().unwrap().max(t)), Cookie::GiveUp);
        assert!(!b.bundled);
    }
}
