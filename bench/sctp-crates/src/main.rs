//! Both candidate SCTP crates over the same virtual link (one-way delay 50 ms, random
//! loss p each way, no rate limit): the client sends N messages of S bytes on stream 1;
//! prints the virtual time until the server has read them all (median and max of 20
//! seeds) and the CPU time the 20 runs took.
use bytes::Bytes;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Lcg(u64);
impl Lcg {
    fn f(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}
type Wire = BinaryHeap<Reverse<(Instant, u64, bool, Vec<u8>)>>;
const D: Duration = Duration::from_millis(50);

fn proto(loss: f64, seed: u64, n: usize, size: usize) -> Option<Duration> {
    use sctp_proto::*;
    let t0 = Instant::now();
    let mut now = t0;
    let mut rng = Lcg(seed);
    let ca: SocketAddr = "10.0.0.1:5000".parse().unwrap();
    let sa: SocketAddr = "10.0.0.2:5000".parse().unwrap();
    let mut cep = Endpoint::new(Arc::new(EndpointConfig::new()), None);
    let mut sep = Endpoint::new(
        Arc::new(EndpointConfig::new()),
        Some(Arc::new(ServerConfig::new())),
    );
    let (_h, mut c) = cep.connect(ClientConfig::new(), sa).unwrap();
    let mut s: Option<Association> = None;
    let mut wire: Wire = BinaryHeap::new();
    let (mut seq, mut sent, mut got) = (0u64, false, 0usize);
    let msg = Bytes::from(vec![7u8; size]);
    loop {
        while let Some(ev) = c.poll() {
            if matches!(ev, Event::Connected) && !sent {
                sent = true;
                let mut st = c.open_stream(1, PayloadProtocolIdentifier::Binary).unwrap();
                for _ in 0..n {
                    st.write_sctp(&msg, PayloadProtocolIdentifier::Binary)
                        .unwrap();
                }
            }
        }
        while c.poll_endpoint_event().is_some() {}
        if let Some(a) = s.as_mut() {
            while let Some(ev) = a.poll() {
                if let Event::Stream(StreamEvent::Readable { id }) = ev {
                    while let Ok(Some(_)) = a.stream(id).and_then(|mut x| x.read_sctp()) {
                        got += 1;
                    }
                }
            }
            while a.accept_stream().is_some() {}
            while a.poll_endpoint_event().is_some() {}
            if got >= n {
                return Some(now - t0);
            }
        }
        let mut outs = Vec::new();
        while let Some(t) = c.poll_transmit(now) {
            if let Payload::RawEncode(v) = t.payload {
                outs.extend(v.into_iter().map(|p| (true, p.to_vec())));
            }
        }
        if let Some(a) = s.as_mut() {
            while let Some(t) = a.poll_transmit(now) {
                if let Payload::RawEncode(v) = t.payload {
                    outs.extend(v.into_iter().map(|p| (false, p.to_vec())));
                }
            }
        }
        for (to_s, p) in outs {
            if rng.f() >= loss {
                seq += 1;
                wire.push(Reverse((now + D, seq, to_s, p)));
            }
        }
        let mut next = wire.peek().map(|Reverse((t, ..))| *t);
        for t in [c.poll_timeout(), s.as_ref().and_then(|a| a.poll_timeout())]
            .into_iter()
            .flatten()
        {
            next = Some(next.map_or(t, |x| x.min(t)));
        }
        now = now.max(next?);
        if now - t0 > Duration::from_secs(600) {
            return None;
        }
        while wire.peek().is_some_and(|Reverse((at, ..))| *at <= now) {
            let Reverse((_, _, to_s, p)) = wire.pop().unwrap();
            if to_s {
                match sep.handle(now, ca, None, None, Bytes::from(p)) {
                    Some((_, DatagramEvent::NewAssociation(a))) => s = Some(a),
                    Some((_, DatagramEvent::AssociationEvent(e))) => {
                        if let Some(a) = s.as_mut() {
                            a.handle_event(e);
                        }
                    }
                    None => {}
                }
                while sep.poll_transmit().is_some() {}
            } else if let Some((_, DatagramEvent::AssociationEvent(e))) =
                cep.handle(now, sa, None, None, Bytes::from(p))
            {
                c.handle_event(e);
            }
        }
        c.handle_timeout(now);
        if let Some(a) = s.as_mut() {
            a.handle_timeout(now);
        }
    }
}

fn rtc(loss: f64, seed: u64, n: usize, size: usize) -> Option<Duration> {
    use rtc_sctp::*;
    use rtc_shared::TransportProtocol;
    let t0 = Instant::now();
    let mut now = t0;
    let mut rng = Lcg(seed);
    let ca: SocketAddr = "10.0.0.1:5000".parse().unwrap();
    let sa: SocketAddr = "10.0.0.2:5000".parse().unwrap();
    let mut cep = Endpoint::new(
        ca,
        TransportProtocol::UDP,
        Arc::new(EndpointConfig::new()),
        None,
    );
    let mut sep = Endpoint::new(
        sa,
        TransportProtocol::UDP,
        Arc::new(EndpointConfig::new()),
        Some(Arc::new(ServerConfig::new(TransportConfig::default()))),
    );
    let (_h, mut c) = cep
        .connect(now, ClientConfig::new(TransportConfig::default()), sa)
        .unwrap();
    let mut s: Option<Association> = None;
    let mut wire: Wire = BinaryHeap::new();
    let (mut seq, mut sent, mut got) = (0u64, false, 0usize);
    let msg = Bytes::from(vec![7u8; size]);
    loop {
        while let Some(ev) = c.poll() {
            if matches!(ev, Event::Connected) && !sent {
                sent = true;
                let mut st = c.open_stream(1, PayloadProtocolIdentifier::Binary).unwrap();
                for _ in 0..n {
                    st.write_sctp(now, &msg, PayloadProtocolIdentifier::Binary)
                        .unwrap();
                }
            }
        }
        while c.poll_endpoint_event().is_some() {}
        if let Some(a) = s.as_mut() {
            while let Some(ev) = a.poll() {
                if let Event::Stream(StreamEvent::Readable { id }) = ev {
                    while let Ok(Some(_)) = a.stream(id).and_then(|mut x| x.read_sctp()) {
                        got += 1;
                    }
                }
            }
            while a.accept_stream().is_some() {}
            while a.poll_endpoint_event().is_some() {}
            if got >= n {
                return Some(now - t0);
            }
        }
        let mut outs = Vec::new();
        while let Some(t) = c.poll_transmit(now) {
            if let Payload::RawEncode(v) = t.message {
                outs.extend(v.into_iter().map(|p| (true, p.to_vec())));
            }
        }
        if let Some(a) = s.as_mut() {
            while let Some(t) = a.poll_transmit(now) {
                if let Payload::RawEncode(v) = t.message {
                    outs.extend(v.into_iter().map(|p| (false, p.to_vec())));
                }
            }
        }
        for (to_s, p) in outs {
            if rng.f() >= loss {
                seq += 1;
                wire.push(Reverse((now + D, seq, to_s, p)));
            }
        }
        let mut next = wire.peek().map(|Reverse((t, ..))| *t);
        for t in [c.poll_timeout(), s.as_ref().and_then(|a| a.poll_timeout())]
            .into_iter()
            .flatten()
        {
            next = Some(next.map_or(t, |x| x.min(t)));
        }
        now = now.max(next?);
        if now - t0 > Duration::from_secs(600) {
            return None;
        }
        while wire.peek().is_some_and(|Reverse((at, ..))| *at <= now) {
            let Reverse((_, _, to_s, p)) = wire.pop().unwrap();
            if to_s {
                match sep.handle(now, ca, None, Bytes::from(p)) {
                    Some((_, DatagramEvent::NewAssociation(a))) => s = Some(a),
                    Some((_, DatagramEvent::AssociationEvent(e))) => {
                        if let Some(a) = s.as_mut() {
                            a.handle_event(e);
                        }
                    }
                    _ => {}
                }
            } else if let Some((_, DatagramEvent::AssociationEvent(e))) =
                cep.handle(now, sa, None, Bytes::from(p))
            {
                c.handle_event(e);
            }
        }
        c.handle_timeout(now);
        if let Some(a) = s.as_mut() {
            a.handle_timeout(now);
        }
    }
}

fn main() {
    let stats = |f: &dyn Fn(u64) -> Option<Duration>| {
        let wall = Instant::now();
        let mut v: Vec<f64> = (1..=20u64)
            .map(|s| f(s).map_or(f64::INFINITY, |d| d.as_secs_f64() * 1e3))
            .collect();
        let cpu = wall.elapsed();
        v.sort_by(f64::total_cmp);
        (v[10], v[19], cpu)
    };
    for loss in [0.0, 0.01, 0.02] {
        let a = stats(&|s| proto(loss, s, 60, 8000));
        let b = stats(&|s| rtc(loss, s, 60, 8000));
        println!("loss {:.0}%: sctp-proto median {:.0} ms, max {:.0} ms, CPU {:.2?} | rtc-sctp median {:.0} ms, max {:.0} ms, CPU {:.2?}", loss * 100.0, a.0, a.1, a.2, b.0, b.1, b.2);
    }
}
