//! Reordering: some packets are held back so that the ones behind them overtake them.

use super::{Drops, Stage};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Time;
use std::collections::VecDeque;
use std::time::Duration;

/// Holds each packet back by `hold` with probability `p` (independently); every other
/// packet goes on at once, ahead of any held one that arrived earlier. Packets leave in
/// the order of their departure times, ties in arrival order.
pub struct Reorder {
    p: f64,
    hold: Duration,
    rng: Rng,
    /// (departure, arrival number, packet), sorted by departure then arrival.
    queue: VecDeque<(Time, u64, Packet)>,
    arrivals: u64,
}

impl Reorder {
    /// Reordering of probability `p` by `hold`, seeded with `seed`.
    pub fn new(p: f64, hold: Duration, seed: u64) -> Reorder {
        Reorder {
            p,
            hold,
            rng: Rng::new(seed),
            queue: VecDeque::new(),
            arrivals: 0,
        }
    }
}

impl Stage for Reorder {
    fn enqueue(&mut self, at: Time, packet: Packet, _drops: &mut Drops) {
        let out = if self.rng.next_f64() < self.p {
            at + self.hold
        } else {
            at
        };
        self.arrivals += 1;
        let key = (out, self.arrivals);
        let i = self.queue.partition_point(|(t, n, _)| (*t, *n) < key);
        self.queue.insert(i, (out, self.arrivals, packet));
    }

    fn dequeue(&mut self, now: Time, _drops: &mut Drops) -> Option<(Time, Packet)> {
        match self.queue.front() {
            Some((t, _, _)) if *t <= now => self.queue.pop_front().map(|(t, _, p)| (t, p)),
            _ => None,
        }
    }

    fn next_wakeup(&self) -> Option<Time> {
        self.queue.front().map(|(t, _, _)| *t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage::testutil::{drain, id, pkt};

    #[test]
    fn held_packets_are_overtaken_and_none_is_lost() {
        let mut r = Reorder::new(0.1, Duration::from_millis(10), 7);
        let mut drops = Vec::new();
        for i in 0..2000u32 {
            r.enqueue(Time::from_micros(i as u64 * 1000), pkt(i, 100), &mut drops);
        }
        let out = drain(&mut r, Time::from_secs(10), &mut drops);
        assert_eq!(out.len(), 2000);
        let ids: Vec<u32> = out.iter().map(|(_, p)| id(p)).collect();
        let late = ids.windows(2).filter(|w| w[0] > w[1]).count();
        // About 10% held; each held one is overtaken by the ~10 sent in its 10 ms.
        assert!((150..250).contains(&late), "{late} packets out of order");
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, (0..2000).collect::<Vec<_>>());
        for (t, p) in &out {
            let sent = Time::from_micros(id(p) as u64 * 1000);
            let d = (*t - sent).as_nanos();
            assert!(d == 0 || d == 10_000_000, "a packet left after {d} ns");
        }
        for w in out.windows(2) {
            assert!(w[0].0 <= w[1].0, "departures in time order");
        }
    }

    #[test]
    fn without_probability_nothing_moves() {
        let mut r = Reorder::new(0.0, Duration::from_millis(10), 7);
        let mut drops = Vec::new();
        for i in 0..100u32 {
            r.enqueue(Time::from_micros(i as u64), pkt(i, 60), &mut drops);
        }
        let out = drain(&mut r, Time::from_secs(1), &mut drops);
        let ids: Vec<u32> = out.iter().map(|(_, p)| id(p)).collect();
        assert_eq!(ids, (0..100).collect::<Vec<_>>());
    }
}
