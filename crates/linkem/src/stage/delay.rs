//! One-way delay, with optional jitter that never reorders packets.

use super::{Drops, Stage};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Time;
use std::collections::VecDeque;
use std::time::Duration;

/// Holds every packet for `delay` plus a uniform random extra in `[0, jitter)`.
///
/// A packet never leaves before the one ahead of it: when jitter would reorder two packets,
/// the later one leaves together with the earlier one. Jitter therefore only ever adds
/// delay; its mean addition is about `jitter / 2`.
pub struct Delay {
    delay: Duration,
    jitter: Duration,
    rng: Rng,
    queue: VecDeque<(Time, Packet)>,
    last_out: Time,
}

impl Delay {
    /// A constant delay.
    pub fn fixed(delay: Duration) -> Delay {
        Delay::with_jitter(delay, Duration::ZERO, 0)
    }

    /// A delay with jitter drawn from a generator seeded with `seed`.
    pub fn with_jitter(delay: Duration, jitter: Duration, seed: u64) -> Delay {
        Delay {
            delay,
            jitter,
            rng: Rng::new(seed),
            queue: VecDeque::new(),
            last_out: Time::ZERO,
        }
    }
}

impl Stage for Delay {
    fn enqueue(&mut self, at: Time, packet: Packet, _drops: &mut Drops) {
        let mut out = at + self.delay;
        if !self.jitter.is_zero() {
            let extra = self.rng.next_f64() * self.jitter.as_nanos() as f64;
            out += Duration::from_nanos(extra as u64);
        }
        let out = out.max(self.last_out);
        self.last_out = out;
        self.queue.push_back((out, packet));
    }

    fn dequeue(&mut self, now: Time, _drops: &mut Drops) -> Option<(Time, Packet)> {
        match self.queue.front() {
            Some((t, _)) if *t <= now => self.queue.pop_front(),
            _ => None,
        }
    }

    fn next_wakeup(&self) -> Option<Time> {
        self.queue.front().map(|(t, _)| *t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage::testutil::{drain, id, pkt};

    #[test]
    fn fixed_delay_is_exact() {
        let mut d = Delay::fixed(Duration::from_millis(20));
        let mut drops = Vec::new();
        d.enqueue(Time::from_micros(100), pkt(1, 100), &mut drops);
        d.enqueue(Time::from_micros(300), pkt(2, 100), &mut drops);
        assert!(d.dequeue(Time::from_millis(20), &mut drops).is_none());
        assert_eq!(d.next_wakeup(), Some(Time::from_micros(20_100)));
        let out = drain(&mut d, Time::from_secs(1), &mut drops);
        let times: Vec<_> = out.iter().map(|(t, _)| t.as_nanos()).collect();
        assert_eq!(times, vec![20_100_000, 20_300_000]);
    }

    #[test]
    fn late_poll_keeps_exact_departure_time() {
        let mut d = Delay::fixed(Duration::from_millis(5));
        let mut drops = Vec::new();
        d.enqueue(Time::ZERO, pkt(1, 60), &mut drops);
        let (t, _) = d.dequeue(Time::from_millis(9), &mut drops).unwrap();
        assert_eq!(t, Time::from_millis(5));
    }

    #[test]
    fn jitter_never_reorders_and_stays_in_bounds() {
        let mut d = Delay::with_jitter(Duration::from_millis(10), Duration::from_millis(4), 42);
        let mut drops = Vec::new();
        for i in 0..1000u32 {
            d.enqueue(Time::from_micros(i as u64 * 500), pkt(i, 100), &mut drops);
        }
        let out = drain(&mut d, Time::from_secs(10), &mut drops);
        assert_eq!(out.len(), 1000);
        let mut extra_sum = 0.0;
        for (i, (t, p)) in out.iter().enumerate() {
            assert_eq!(id(p), i as u32, "order kept");
            let sent = Time::from_micros(i as u64 * 500);
            let d = (*t - sent).as_secs_f64() * 1e3;
            assert!((10.0..14.0 + 0.5).contains(&d), "delay {d} ms");
            extra_sum += d - 10.0;
        }
        let mean_extra = extra_sum / 1000.0;
        assert!(mean_extra > 1.5 && mean_extra < 3.0, "{mean_extra}");
        for w in out.windows(2) {
            assert!(w[0].0 <= w[1].0);
        }
    }
}
