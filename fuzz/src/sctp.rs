//! SPDY over SCTP: speedy's own packet code (`transport::sctp::packet`: chunk walking,
//! address stripping, COOKIE ECHO bundling), its frame-to-stream mapping
//! (`transport::sctp::route`), and an `sctp-proto` association fed by a peer that
//! delivers, drops, reorders, corrupts and forges packets.

use crate::Input;
use bytes::Bytes;
use sctp_proto::{
    Association, AssociationHandle, ClientConfig, DatagramEvent, Endpoint, EndpointConfig,
    EndpointEvent, Event, Payload, PayloadProtocolIdentifier, ServerConfig, StreamEvent,
    TransportConfig,
};
use spdy::frame::{FrameHeader, HEADER_LEN};
use speedy_net::sctp::packet::{self, chunk, Bundler, Cookie};
use speedy_net::sctp::route::{data_stream, Router, CONTROL_STREAM};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The common header's length.
const COMMON: usize = 12;

/// A packet through everything `packet` offers: chunks, streams, checksums, address
/// stripping (what it returns is a sealed INIT or INIT ACK without address parameters
/// and nothing left to strip), the SACK-immediately bit, bundling and ABORTs.
fn one_packet(p: &[u8], mtu: usize) {
    let walked: Vec<_> = packet::chunks(p).take(p.len() + 1).collect();
    assert!(
        walked.len() <= p.len() / 4,
        "more chunks than the packet holds"
    );
    let _ = (packet::data_streams(p), packet::first_chunk(p));
    let ok = packet::checksum_ok(p);
    if let Some(out) = packet::strip_addresses(p) {
        assert!(ok, "stripped a packet whose checksum is wrong");
        assert!(packet::checksum_ok(&out), "a stripped packet is sealed");
        assert_eq!(packet::first_chunk(&out), packet::first_chunk(p));
        assert!(out.len() < p.len(), "stripping removes bytes");
        assert!(
            packet::strip_addresses(&out).is_none(),
            "left something to strip"
        );
        assert_eq!(packet::chunks(&out).count(), 1, "one chunk after stripping");
    }
    if p.len() >= COMMON {
        let mut sealed = p.to_vec();
        packet::seal(&mut sealed);
        assert!(packet::checksum_ok(&sealed));
        let _ = packet::strip_addresses(&sealed);
        // It walks on past a chunk that runs over the end, where `chunks` stops.
        let has_data = packet::chunks(&sealed).any(|(t, _, _)| t == chunk::DATA);
        let mut marked = sealed.clone();
        let set = packet::sack_immediately(&mut marked);
        assert!(set || !has_data, "DATA left without the I bit");
        if set {
            assert!(packet::checksum_ok(&marked));
        } else {
            assert_eq!(marked, sealed, "a packet without DATA is left alone");
        }
        let header: [u8; 8] = p[..8].try_into().expect("8 bytes");
        let abort = packet::abort(&header);
        assert!(packet::checksum_ok(&abort));
        assert_eq!(packet::first_chunk(&abort), Some(chunk::ABORT));
        let half = p.len() / 2;
        if let Some(b) = packet::bundle(&p[..half.max(COMMON)], p, mtu) {
            assert!(b.len() <= mtu, "a bundle over the MTU");
            assert!(packet::checksum_ok(&b));
        }
    }
}

/// The client's COOKIE ECHO bundler through bursts of fuzzed packets, deadlines and
/// answers: what it sends is what it was given (one COOKIE ECHO may be held, bundled or
/// resent), its resends stop after [`packet::MAX_COOKIE_RESENDS`].
fn bundler(inp: &mut Input) {
    let mut b = Bundler::default();
    let t0 = Instant::now();
    let mut now = t0;
    let rto = Duration::from_millis(1 + u64::from(inp.u16()) % 60_000);
    let mut resends = 0;
    while !inp.is_empty() {
        match inp.byte() % 4 {
            0 => {
                let mut burst = Vec::new();
                for _ in 0..inp.byte() % 4 {
                    let kind = inp.byte();
                    let n = inp.byte() as usize;
                    let mut p = inp.bytes(n).to_vec();
                    if kind & 1 == 1 && p.len() >= COMMON + 4 {
                        // A packet of one of the kinds the bundler looks at.
                        p[COMMON] =
                            [chunk::INIT, chunk::COOKIE_ECHO, chunk::DATA][kind as usize / 2 % 3];
                    }
                    burst.push(Bytes::from(p));
                }
                let given = burst.len();
                let out = b.outgoing(burst, now, rto);
                assert!(out.send.len() <= given + 1, "more packets than given");
                if let Some(ack) = out.inject {
                    assert_eq!(packet::first_chunk(&ack), Some(chunk::COOKIE_ACK));
                    assert!(packet::checksum_ok(&ack));
                }
            }
            1 => b.heard(),
            2 => now += Duration::from_millis(u64::from(inp.u16()) * 4),
            _ => {
                if b.deadline().is_some_and(|d| d <= now) {
                    match b.on_deadline(now) {
                        Cookie::Resend(c) => {
                            resends += 1;
                            assert_eq!(packet::first_chunk(&c), Some(chunk::COOKIE_ECHO));
                        }
                        Cookie::GiveUp => {
                            assert_eq!(resends, packet::MAX_COOKIE_RESENDS);
                            return;
                        }
                        Cookie::Wait => {}
                    }
                }
            }
        }
    }
}

/// speedy's SCTP packet code. First byte: 0 or 1, packets (the rest as one, and the
/// rest cut at each 0xff byte, as up to 16 more) with an MTU for bundling from the
/// second byte; 2, the COOKIE ECHO bundler.
pub fn sctp_packet(data: &[u8]) {
    let mut inp = Input::new(data);
    match inp.byte() % 3 {
        2 => bundler(&mut inp),
        _ => {
            let mtu = [0usize, 16, 100, 1452, 65_535][(inp.byte() % 5) as usize];
            let rest = inp.rest();
            one_packet(rest, mtu);
            for p in rest
                .split(|&b| b == 0xff)
                .filter(|p| !p.is_empty())
                .take(16)
            {
                one_packet(p, mtu);
            }
        }
    }
}

// =======================================================================================

/// A SPDY frame of `len` payload bytes: DATA (`kind` 0) or a control frame of type
/// `kind`, with `flags`, naming stream `id`.
fn frame(kind: u16, flags: u8, id: u32, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(HEADER_LEN + len.max(4));
    if kind == 0 {
        f.extend_from_slice(&(id & 0x7fff_ffff).to_be_bytes());
    } else {
        f.extend_from_slice(&[0x80, 3]);
        f.extend_from_slice(&kind.to_be_bytes());
    }
    f.push(flags);
    let len = if kind == 0 { len } else { len.max(4) };
    f.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    if kind != 0 {
        f.extend_from_slice(&(id & 0x7fff_ffff).to_be_bytes());
        f.resize(HEADER_LEN + len, 0);
    } else {
        f.resize(HEADER_LEN + len, 0xd0);
    }
    f
}

/// A frame the fuzzer describes: DATA or one of the control frames the router looks
/// at (SYN_STREAM, SYN_REPLY, RST_STREAM, HEADERS) or another, for a small or an
/// interesting stream id.
fn described_frame(inp: &mut Input) -> Vec<u8> {
    let kind = [0u16, 0, 1, 2, 3, 8, 9, 4][(inp.byte() % 8) as usize];
    let flags = inp.byte() & 3;
    let b = inp.byte();
    let id = match b % 4 {
        0 => 0,
        3 => inp.u32(),
        _ => u32::from(b / 4 % 16),
    };
    frame(kind, flags, id, (inp.byte() % 32) as usize)
}

/// The router both ways: the session's output (well-formed frames and raw bytes in
/// any cutting) becomes whole frames on the right SCTP streams, and messages from the
/// peer are handed on, held or refused: each accepted message goes to the session
/// exactly once unless its stream is reset while it is held, held bytes stay within
/// the limit, and a message that is not one frame is refused.
pub fn sctp_route(data: &[u8]) {
    let mut inp = Input::new(data);
    let client = inp.byte() & 1 == 1;
    let streams = [0u16, 1, 2, 3, 17, 256, u16::MAX][(inp.byte() % 7) as usize];
    let hold_limit = [0usize, 20, 100, 1000, 16 << 20][(inp.byte() % 5) as usize];
    let mut r = Router::new(client, streams, hold_limit);
    let (mut out, mut frames) = (Vec::new(), Vec::new());
    let (mut accepted, mut delivered) = (0usize, 0usize);
    let mut resets = false;
    let mut steps = 0;
    while !inp.is_empty() && steps < 4096 {
        steps += 1;
        match inp.byte() % 4 {
            0 | 1 => {
                let bytes = if inp.byte() & 1 == 0 {
                    described_frame(&mut inp)
                } else {
                    let n = inp.byte() as usize;
                    inp.bytes(n).to_vec()
                };
                r.outgoing(&bytes, &mut out);
                for (s, f) in out.drain(..) {
                    let head: [u8; HEADER_LEN] = f[..HEADER_LEN].try_into().expect("a header");
                    let h = FrameHeader::parse(&head);
                    assert_eq!(f.len(), HEADER_LEN + h.len(), "not one whole frame");
                    match h {
                        FrameHeader::Control { .. } => assert_eq!(s, CONTROL_STREAM),
                        FrameHeader::Data { stream_id, .. } => {
                            assert_eq!(s, data_stream(stream_id.0, streams));
                            assert!(s >= 1 && s < streams.max(2));
                        }
                    }
                }
            }
            _ => {
                let sctp_stream = inp.u16() % 8;
                let msg = if inp.byte() & 3 != 0 {
                    described_frame(&mut inp)
                } else {
                    let n = inp.byte() as usize;
                    inp.bytes(n).to_vec()
                };
                let whole = msg.len() >= HEADER_LEN && {
                    let head: [u8; HEADER_LEN] = msg[..HEADER_LEN].try_into().expect("8");
                    HEADER_LEN + FrameHeader::parse(&head).len() == msg.len()
                };
                resets |= whole && msg[0] == 0x80 && msg[2..4] == [0, 3];
                let len = msg.len();
                match r.incoming(sctp_stream, Bytes::from(msg), &mut frames) {
                    Ok(()) => {
                        assert!(whole, "a message that is not one frame was accepted");
                        accepted += len;
                    }
                    Err(e) => {
                        assert!(!whole, "one whole frame refused: {e}");
                        assert_eq!((e.sctp_stream, e.len), (sctp_stream, len));
                    }
                }
                delivered += frames.drain(..).map(|f| f.len()).sum::<usize>();
                assert!(r.held_bytes() <= hold_limit, "held more than the limit");
                if resets {
                    assert!(delivered + r.held_bytes() <= accepted);
                } else {
                    assert_eq!(delivered + r.held_bytes(), accepted, "a message was lost");
                }
            }
        }
    }
}

// =======================================================================================

const CLIENT_ADDR: &str = "10.0.0.1:5000";
const SERVER_ADDR: &str = "10.0.0.2:5000";
/// Packets in flight towards one side at most (older ones are lost).
const MAX_IN_FLIGHT: usize = 64;
/// Associations the server keeps at most (further INITs are dropped).
const MAX_ASSOCIATIONS: usize = 4;
/// Bytes the harness writes into streams at most.
const MAX_WRITTEN: usize = 1 << 20;

/// The transport settings of speedy's SCTP (`transport::sctp`): 256 streams each way,
/// SPDY-frame-sized messages, a 4 MiB receive buffer, RTO.Min 1 s and RTO.Initial 3 s.
fn transport() -> Arc<TransportConfig> {
    let message = (HEADER_LEN + spdy::frame::MAX_PAYLOAD) as u32;
    Arc::new(
        TransportConfig::default()
            .with_rto_min_ms(1000)
            .with_max_num_outbound_streams(256)
            .with_max_num_inbound_streams(256)
            .with_max_send_message_size(message)
            .with_max_receive_message_size(message)
            .with_max_receive_buffer_size(4 << 20)
            .with_rto_initial_ms(3000),
    )
}

fn endpoint_config() -> Arc<EndpointConfig> {
    let mut c = EndpointConfig::new();
    c.max_payload_size(1444);
    Arc::new(c)
}

/// One end: its endpoint, associations (each with speedy's router), the packets on
/// the way to it, and the header of the last one (to forge packets it accepts).
struct End {
    addr: SocketAddr,
    endpoint: Endpoint,
    assocs: Vec<(AssociationHandle, Association, Router)>,
    inbox: VecDeque<Bytes>,
    last_header: [u8; 8],
    client: bool,
}

impl End {
    fn new(addr: &str, server: bool) -> End {
        let server_config = server.then(|| {
            let mut s = ServerConfig::new();
            s.transport = transport();
            Arc::new(s)
        });
        End {
            addr: addr.parse().expect("an address"),
            endpoint: Endpoint::new(endpoint_config(), server_config),
            assocs: Vec::new(),
            inbox: VecDeque::new(),
            last_header: [0; 8],
            client: !server,
        }
    }

    /// A packet arrives, as speedy hands it to the stack (an INIT or INIT ACK without
    /// its address list; a client takes no INIT).
    fn receive(&mut self, p: Bytes, from: SocketAddr, now: Instant) {
        if self.client && !packet::client_takes(&p) {
            return;
        }
        let data = match packet::strip_addresses(&p) {
            Some(s) => Bytes::from(s),
            None => p,
        };
        match self.endpoint.handle(now, from, None, None, data) {
            Some((ch, DatagramEvent::NewAssociation(a))) => {
                if self.assocs.len() < MAX_ASSOCIATIONS {
                    self.assocs
                        .push((ch, a, Router::new(self.client, 256, 1 << 20)));
                } else {
                    self.endpoint.handle_event(ch, EndpointEvent::drained());
                }
            }
            Some((ch, DatagramEvent::AssociationEvent(ev))) => {
                if let Some((_, a, _)) = self.assocs.iter_mut().find(|(h, _, _)| *h == ch) {
                    a.handle_event(ev);
                }
            }
            None => {}
        }
    }

    /// Runs every association's events: streams are accepted and read through the
    /// router (a message that is not one frame closes the association, as speedy does),
    /// and closed associations are forgotten.
    fn events(&mut self) {
        let mut frames = Vec::new();
        for (_, a, router) in &mut self.assocs {
            let mut readable = Vec::new();
            while let Some(ev) = a.poll() {
                match ev {
                    Event::Stream(StreamEvent::Readable { id }) => readable.push(id),
                    Event::Stream(StreamEvent::Opened { .. }) => {
                        while a.accept_stream().is_some() {}
                    }
                    _ => {}
                }
            }
            while a.poll_endpoint_event().is_some() {}
            for id in readable {
                for _ in 0..64 {
                    let msg = match a.stream(id).and_then(|mut s| s.read_sctp()) {
                        Ok(Some(chunks)) => {
                            let mut v = vec![0; chunks.len()];
                            let n = chunks.read(&mut v).expect("room for the message");
                            assert_eq!(n, v.len());
                            v
                        }
                        _ => break,
                    };
                    if router.incoming(id, msg.into(), &mut frames).is_err() {
                        let _ = a.close();
                        break;
                    }
                    frames.clear();
                }
            }
        }
        let endpoint = &mut self.endpoint;
        self.assocs.retain(|(ch, a, _)| {
            let gone = a.is_closed() && !a.is_handshaking();
            if gone {
                endpoint.handle_event(*ch, EndpointEvent::drained());
            }
            !gone
        });
    }

    /// Everything this end sends now, for `to`'s inbox (through the bundler on the
    /// client); a COOKIE ACK the bundler makes is fed back at once.
    fn transmit(&mut self, to: &mut VecDeque<Bytes>, bundler: Option<&mut Bundler>, now: Instant) {
        let mut packets = Vec::new();
        while let Some(t) = self.endpoint.poll_transmit() {
            if let Payload::RawEncode(p) = t.payload {
                packets.extend(p);
            }
        }
        for (_, a, _) in &mut self.assocs {
            while let Some(t) = a.poll_transmit(now) {
                if let Payload::RawEncode(p) = t.payload {
                    packets.extend(p);
                }
            }
        }
        let mut inject = None;
        if let Some(b) = bundler {
            let out = b.outgoing(packets, now, Duration::from_secs(3));
            packets = out.send;
            inject = out.inject;
        }
        to.extend(packets);
        while to.len() > MAX_IN_FLIGHT {
            to.pop_front();
        }
        if let Some(ack) = inject {
            let server = SERVER_ADDR.parse().expect("an address");
            self.receive(ack, server, now);
        }
    }

    /// Writes `len` bytes on stream `id` of the first association: a frame through the
    /// router (`framed`), or raw bytes as one message.
    fn write(&mut self, id: u16, len: usize, framed: bool) {
        let Some((_, a, router)) = self.assocs.first_mut() else {
            return;
        };
        let mut msgs = Vec::new();
        if framed {
            router.outgoing(&frame(0, 0, u32::from(id) * 2 + 1, len), &mut msgs);
        } else {
            msgs.push((id, Bytes::from(vec![0x5a; len])));
        }
        for (id, m) in msgs {
            if a.stream(id).is_err()
                && a.open_stream(id, PayloadProtocolIdentifier::Binary)
                    .is_err()
            {
                return;
            }
            let _ = a
                .stream(id)
                .and_then(|mut s| s.write_sctp(&m, PayloadProtocolIdentifier::Binary));
        }
    }

    fn timeout(&mut self, now: Instant) {
        for (_, a, _) in &mut self.assocs {
            if a.poll_timeout().is_some_and(|t| t <= now) {
                a.handle_timeout(now);
            }
        }
    }
}

/// A packet to forge: the header of the last packet the receiving end got (its ports
/// and verification tag: the end takes it for its peer's) or fuzzer bytes, then chunks
/// from the fuzzer; sealed unless the fuzzer says not to.
fn forged(inp: &mut Input, header: [u8; 8]) -> Bytes {
    let how = inp.byte();
    let mut p = Vec::with_capacity(COMMON + 256);
    if how & 1 == 0 {
        p.extend_from_slice(&header);
    } else {
        p.extend_from_slice(inp.bytes(8));
    }
    p.resize(COMMON, 0);
    let n = inp.byte() as usize;
    p.extend_from_slice(inp.bytes(n));
    if how & 2 == 0 {
        packet::seal(&mut p);
    }
    p.into()
}

/// Flips one byte of the first packet of `q` (and seals it again when the fuzzer says).
fn corrupt(inp: &mut Input, q: &mut VecDeque<Bytes>) {
    let (at, x, seal) = (inp.u16() as usize, inp.byte() | 1, inp.byte() & 1 == 1);
    if let Some(p) = q.front_mut() {
        let mut v = p.to_vec();
        if !v.is_empty() {
            let i = at % v.len();
            v[i] ^= x;
        }
        if seal && v.len() >= COMMON {
            packet::seal(&mut v);
        }
        *p = v.into();
    }
}

/// An SCTP association of the `sctp-proto` stack, set up as speedy's (bundling client,
/// address stripping, the router reading streams, speedy's transport settings), between
/// a client and a server whose packets the fuzzer delivers, drops, reorders, corrupts
/// (resealed or not) and forges (with the tags the receiver expects, so forged chunks
/// reach an established association), while both ends write and time passes.
pub fn sctp_association(data: &[u8]) {
    let mut inp = Input::new(data);
    let t0 = Instant::now();
    let mut now = t0;
    let (mut c, mut s) = (End::new(CLIENT_ADDR, false), End::new(SERVER_ADDR, true));
    let mut client = ClientConfig::new();
    client.transport = transport();
    let (ch, a) = c
        .endpoint
        .connect(client, s.addr)
        .expect("an association to start");
    c.assocs.push((ch, a, Router::new(true, 256, 1 << 20)));
    let mut bundler = (inp.byte() & 1 == 0).then(Bundler::default);
    let mut written = 0usize;
    let mut steps = 0;
    let mut quiet = 0;
    while steps < 1024 && quiet < 32 {
        steps += 1;
        if inp.is_empty() {
            // The end: deliver everything, time passing, until both sides are quiet.
            quiet += 1;
            now += Duration::from_millis(500);
            while let Some(p) = s.inbox.pop_front() {
                s.receive(p, c.addr, now);
            }
            while let Some(p) = c.inbox.pop_front() {
                c.receive(p, s.addr, now);
            }
        } else {
            step(
                &mut inp,
                &mut c,
                &mut s,
                &mut bundler,
                &mut now,
                &mut written,
            );
        }
        c.timeout(now);
        s.timeout(now);
        if let Some(b) = &mut bundler {
            if b.deadline().is_some_and(|d| d <= now) {
                match b.on_deadline(now) {
                    Cookie::Resend(p) => s.inbox.push_back(p),
                    Cookie::GiveUp => {
                        for (_, a, _) in &mut c.assocs {
                            let _ = a.close();
                        }
                    }
                    Cookie::Wait => {}
                }
            }
        }
        c.events();
        s.events();
        c.transmit(&mut s.inbox, bundler.as_mut(), now);
        s.transmit(&mut c.inbox, None, now);
        if let Some(p) = s.inbox.back() {
            s.last_header = p.get(..8).and_then(|h| h.try_into().ok()).unwrap_or([0; 8]);
        }
        if let Some(p) = c.inbox.back() {
            c.last_header = p.get(..8).and_then(|h| h.try_into().ok()).unwrap_or([0; 8]);
        }
        if inp.is_empty() && s.inbox.is_empty() && c.inbox.is_empty() && quiet > 2 {
            break;
        }
    }
}

/// One fuzzer-chosen step of [`sctp_association`].
fn step(
    inp: &mut Input,
    c: &mut End,
    s: &mut End,
    bundler: &mut Option<Bundler>,
    now: &mut Instant,
    written: &mut usize,
) {
    match inp.byte() % 14 {
        0 => {
            if let Some(p) = s.inbox.pop_front() {
                s.receive(p, c.addr, *now);
            }
        }
        1 => {
            if let Some(p) = c.inbox.pop_front() {
                if let Some(b) = bundler {
                    b.heard();
                }
                c.receive(p, s.addr, *now);
            }
        }
        2 => {
            s.inbox.pop_front();
        }
        3 => {
            c.inbox.pop_front();
        }
        4 => corrupt(inp, &mut s.inbox),
        5 => corrupt(inp, &mut c.inbox),
        6 => {
            let p = forged(inp, s.last_header);
            s.receive(p, c.addr, *now);
        }
        7 => {
            let p = forged(inp, c.last_header);
            c.receive(p, s.addr, *now);
        }
        8 => {
            let ms = [1u64, 10, 200, 1000, 3000, 60_000][(inp.byte() % 6) as usize];
            *now += Duration::from_millis(ms);
        }
        9 | 10 => {
            let end = if inp.byte() & 1 == 0 {
                &mut *c
            } else {
                &mut *s
            };
            let id = u16::from(inp.byte() % 6);
            let len = [0usize, 1, 100, 1436, 1445, 5000, 70_000][(inp.byte() % 7) as usize];
            if *written + len <= MAX_WRITTEN {
                *written += len;
                end.write(id, len, inp.byte() & 1 == 0);
            }
        }
        11 => {
            let end = if inp.byte() & 1 == 0 {
                &mut *c
            } else {
                &mut *s
            };
            let abort = inp.byte() & 1 == 0;
            if let Some((_, a, _)) = end.assocs.first_mut() {
                let _ = if abort { a.close() } else { a.shutdown() };
            }
        }
        12 => {
            let q = if inp.byte() & 1 == 0 {
                &mut s.inbox
            } else {
                &mut c.inbox
            };
            if q.len() >= 2 {
                q.swap(0, 1);
            }
        }
        _ => {
            let q = if inp.byte() & 1 == 0 {
                &mut s.inbox
            } else {
                &mut c.inbox
            };
            if let Some(p) = q.front().cloned() {
                q.push_back(p);
            }
        }
    }
}
