//! The bottleneck: a [`Queue`] drained by a server that is unlimited, a constant rate, or a
//! Mahimahi trace.

use super::queue::{Queue, QueueSpec};
use super::trace::{Trace, TraceCursor};
use super::{Drops, Stage};
use crate::packet::Packet;
use crate::time::{transmission_time, Time};
use std::collections::VecDeque;
use std::sync::Arc;

/// What drains the bottleneck queue.
#[derive(Clone, Debug)]
pub enum Server {
    /// Packets leave as soon as they arrive.
    Unlimited,
    /// A constant rate in bits per second (IP bytes count; no framing overhead).
    Rate(u64),
    /// Delivery opportunities from a Mahimahi trace.
    Trace(Arc<Trace>),
}

/// A queue and the link that drains it.
///
/// With a constant rate, a packet starts when the link is free and it is at the head, and
/// leaves `size * 8 / rate` later. With a trace, see [`super::trace`]. Packets that have
/// started service are no longer in the queue, so queue limits count waiting packets only.
pub struct Bottleneck {
    queue: Queue,
    server: Server,
    cursor: Option<TraceCursor>,
    /// Packet whose transmission spans trace opportunities, with bytes still to send.
    partial: Option<(Packet, usize)>,
    busy_until: Time,
    out: VecDeque<(Time, Packet)>,
}

impl Bottleneck {
    /// A bottleneck with the given queue and server.
    pub fn new(queue: QueueSpec, server: Server) -> Bottleneck {
        let cursor = match &server {
            Server::Trace(t) => Some(TraceCursor::new(t.clone())),
            _ => None,
        };
        Bottleneck {
            queue: Queue::new(queue),
            server,
            cursor,
            partial: None,
            busy_until: Time::ZERO,
            out: VecDeque::new(),
        }
    }

    /// Packets waiting in the queue (not yet in service).
    pub fn queued_packets(&self) -> usize {
        self.queue.len()
    }

    /// Bytes waiting in the queue (not yet in service).
    pub fn queued_bytes(&self) -> usize {
        self.queue.bytes()
    }

    /// Starts service of every packet whose service starts at or before `t`.
    fn advance(&mut self, t: Time, drops: &mut Drops) {
        match &self.server {
            Server::Unlimited => self.advance_rate(t, None, drops),
            Server::Rate(bps) => {
                let bps = *bps;
                self.advance_rate(t, Some(bps), drops)
            }
            Server::Trace(_) => self.advance_trace(t, drops),
        }
    }

    fn advance_rate(&mut self, t: Time, bps: Option<u64>, drops: &mut Drops) {
        while let Some(enq) = self.queue.front_time() {
            let start = self.busy_until.max(enq);
            if start > t {
                break;
            }
            let Some((enq, p)) = self.queue.pop(start, drops) else {
                break;
            };
            let start = start.max(enq);
            let finish = match bps {
                Some(bps) => start + transmission_time(p.len(), bps),
                None => start,
            };
            self.busy_until = finish;
            self.out.push_back((finish, p));
        }
    }

    fn advance_trace(&mut self, t: Time, drops: &mut Drops) {
        let cursor = self.cursor.as_mut().expect("trace server has a cursor");
        loop {
            if self.partial.is_none() {
                let Some(enq) = self.queue.front_time() else {
                    break;
                };
                // Opportunities before the packet arrived went unused: they are lost.
                if cursor.time() < enq {
                    cursor.seek(enq);
                }
            }
            let opp = cursor.time();
            if opp > t {
                break;
            }
            let mut budget = super::trace::OPPORTUNITY_BYTES;
            while budget > 0 {
                if self.partial.is_none() {
                    match self.queue.front_time() {
                        Some(e) if e <= opp => {}
                        _ => break,
                    }
                    match self.queue.pop(opp, drops) {
                        Some((_, p)) => {
                            let cost = p.len() + super::trace::PER_PACKET_OVERHEAD;
                            self.partial = Some((p, cost));
                        }
                        None => break,
                    }
                }
                let (_, rem) = self.partial.as_mut().expect("set above");
                let take = budget.min(*rem);
                budget -= take;
                *rem -= take;
                if *rem == 0 {
                    let (p, _) = self.partial.take().expect("set above");
                    self.out.push_back((opp, p));
                }
            }
            cursor.step();
        }
    }
}

impl Stage for Bottleneck {
    fn enqueue(&mut self, at: Time, packet: Packet, drops: &mut Drops) {
        self.advance(at, drops);
        self.queue.push(at, packet, drops);
        self.advance(at, drops);
    }

    fn dequeue(&mut self, now: Time, drops: &mut Drops) -> Option<(Time, Packet)> {
        self.advance(now, drops);
        match self.out.front() {
            Some((t, _)) if *t <= now => self.out.pop_front(),
            _ => None,
        }
    }

    fn next_wakeup(&self) -> Option<Time> {
        if let Some((t, _)) = self.out.front() {
            return Some(*t);
        }
        match &self.cursor {
            Some(c) => {
                if self.partial.is_some() {
                    Some(c.time())
                } else {
                    self.queue
                        .front_time()
                        .map(|e| c.time().max(c.first_at_or_after(e)))
                }
            }
            None => self.queue.front_time().map(|e| e.max(self.busy_until)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage::queue::Limit;
    use crate::stage::testutil::{drain, id, pkt};
    use std::time::Duration;

    #[test]
    fn constant_rate_spaces_packets_exactly() {
        let mut b = Bottleneck::new(QueueSpec::Infinite, Server::Rate(12_000_000));
        let mut drops = Vec::new();
        for i in 0..10 {
            b.enqueue(Time::ZERO, pkt(i, 1500), &mut drops);
        }
        let out = drain(&mut b, Time::from_secs(1), &mut drops);
        let times: Vec<_> = out.iter().map(|(t, _)| t.as_nanos() / 1_000_000).collect();
        assert_eq!(times, (1..=10).collect::<Vec<_>>());
        assert!(out.iter().enumerate().all(|(i, (_, p))| id(p) == i as u32));
    }

    #[test]
    fn idle_link_starts_at_arrival() {
        let mut b = Bottleneck::new(QueueSpec::Infinite, Server::Rate(8_000_000));
        let mut drops = Vec::new();
        b.enqueue(Time::from_millis(100), pkt(1, 1000), &mut drops);
        assert_eq!(b.next_wakeup(), Some(Time::from_millis(101)));
        let (t, _) = b.dequeue(Time::from_millis(200), &mut drops).unwrap();
        assert_eq!(t, Time::from_millis(101));
    }

    #[test]
    fn long_run_rate_is_exact_at_many_rates() {
        for &bps in &[1_000_000u64, 2_000_000, 10_000_000, 100_000_000, 375_000] {
            let mut b = Bottleneck::new(QueueSpec::Infinite, Server::Rate(bps));
            let mut drops = Vec::new();
            let n = 2000;
            for i in 0..n {
                b.enqueue(Time::ZERO, pkt(i, 1500), &mut drops);
            }
            let out = drain(&mut b, Time::MAX, &mut drops);
            let secs = out.last().unwrap().0.as_secs_f64();
            let rate = n as f64 * 1500.0 * 8.0 / secs;
            assert!((rate / bps as f64 - 1.0).abs() < 1e-6, "{bps}: {rate}");
        }
    }

    #[test]
    fn droptail_queue_counts_waiting_packets_only() {
        let mut b = Bottleneck::new(
            QueueSpec::DropTail(Limit::Packets(2)),
            Server::Rate(12_000_000),
        );
        let mut drops = Vec::new();
        for i in 0..5 {
            b.enqueue(Time::ZERO, pkt(i, 1500), &mut drops);
        }
        // One in service, two waiting, two dropped.
        assert_eq!(drops.len(), 2);
        assert_eq!(b.queued_packets(), 2);
        // After 1 ms the first has left and one more fits.
        b.enqueue(Time::from_millis(1), pkt(5, 1500), &mut drops);
        assert_eq!(drops.len(), 2);
    }

    #[test]
    fn unlimited_passes_at_once() {
        let mut b = Bottleneck::new(QueueSpec::Infinite, Server::Unlimited);
        let mut drops = Vec::new();
        b.enqueue(Time::from_micros(7), pkt(1, 1500), &mut drops);
        assert_eq!(
            b.dequeue(Time::from_micros(7), &mut drops).unwrap().0,
            Time::from_micros(7)
        );
        assert_eq!(b.next_wakeup(), None);
        let _ = Duration::ZERO;
    }
}
