//! Random loss: Bernoulli (independent) and Gilbert-Elliott (bursty).

use super::{DropCause, Dropped, Drops, Stage};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Time;
use std::collections::VecDeque;

/// How packets are lost.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum LossModel {
    /// No loss.
    None,
    /// Each packet is lost independently with probability `p`.
    Bernoulli {
        /// Loss probability per packet, in `[0, 1]`.
        p: f64,
    },
    /// Gilbert-Elliott two-state model, one transition per packet.
    ///
    /// ```text
    ///            p (good -> bad)
    ///   +------+ ------------> +-----+
    ///   | GOOD |               | BAD |
    ///   +------+ <------------ +-----+
    ///   loses       r (bad -> good)   loses
    ///   loss_good                     loss_bad
    /// ```
    ///
    /// The long-run loss rate is `(r * loss_good + p * loss_bad) / (p + r)` and the mean
    /// burst (stay in BAD) lasts `1 / r` packets.
    GilbertElliott {
        /// Probability of going from GOOD to BAD at each packet.
        p: f64,
        /// Probability of going from BAD to GOOD at each packet.
        r: f64,
        /// Loss probability in GOOD.
        loss_good: f64,
        /// Loss probability in BAD.
        loss_bad: f64,
    },
}

impl LossModel {
    /// The long-run fraction of packets lost.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                if p + r == 0.0 {
                    loss_good
                } else {
                    (r * loss_good + p * loss_bad) / (p + r)
                }
            }
        }
    }
}

/// Drops packets according to a [`LossModel`]; the others pass at once.
pub struct Loss {
    model: LossModel,
    rng: Rng,
    bad: bool,
    queue: VecDeque<(Time, Packet)>,
}

impl Loss {
    /// A loss stage drawing from a generator seeded with `seed`.
    pub fn new(model: LossModel, seed: u64) -> Loss {
        Loss {
            model,
            rng: Rng::new(seed),
            bad: false,
            queue: VecDeque::new(),
        }
    }

    fn lose(&mut self) -> bool {
        match self.model {
            LossModel::None => false,
            LossModel::Bernoulli { p } => self.rng.chance(p),
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                let flip = if self.bad { r } else { p };
                if self.rng.chance(flip) {
                    self.bad = !self.bad;
                }
                let l = if self.bad { loss_bad } else { loss_good };
                self.rng.chance(l)
            }
        }
    }
}

impl Stage for Loss {
    fn enqueue(&mut self, at: Time, packet: Packet, drops: &mut Drops) {
        if self.lose() {
            drops.push(Dropped {
                at,
                cause: DropCause::Loss,
                packet,
            });
        } else {
            self.queue.push_back((at, packet));
        }
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
    use crate::stage::testutil::pkt;

    fn run(model: LossModel, n: u32, seed: u64) -> (Vec<bool>, usize) {
        let mut l = Loss::new(model, seed);
        let mut drops = Vec::new();
        let mut kept = Vec::new();
        for i in 0..n {
            let before = drops.len();
            l.enqueue(Time::from_micros(i as u64), pkt(i, 64), &mut drops);
            kept.push(drops.len() == before);
            while l.dequeue(Time::from_micros(i as u64), &mut drops).is_some() {}
        }
        let lost = drops.len();
        assert!(drops.iter().all(|d| d.cause == DropCause::Loss));
        (kept, lost)
    }

    #[test]
    fn bernoulli_rate_in_99_percent_interval() {
        let n = 100_000;
        let p = 0.02;
        let (_, lost) = run(LossModel::Bernoulli { p }, n, 1);
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        assert!((lost as f64 - n as f64 * p).abs() < 2.576 * sd, "{lost}");
    }

    #[test]
    fn no_loss_and_total_loss() {
        assert_eq!(run(LossModel::None, 1000, 1).1, 0);
        assert_eq!(run(LossModel::Bernoulli { p: 1.0 }, 1000, 1).1, 1000);
    }

    #[test]
    fn gilbert_elliott_is_bursty_with_the_stationary_mean() {
        let model = LossModel::GilbertElliott {
            p: 0.01,
            r: 0.25,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        let n = 200_000;
        let (kept, lost) = run(model, n, 3);
        let mean = model.mean_loss();
        let rate = lost as f64 / n as f64;
        assert!((rate - mean).abs() < 0.1 * mean, "{rate} vs {mean}");
        // Mean burst length is 1/r = 4 packets, far above Bernoulli's ~1.04.
        let mut bursts = 0;
        let mut in_burst = false;
        for k in &kept {
            if !k && !in_burst {
                bursts += 1;
            }
            in_burst = !k;
        }
        let mean_burst = lost as f64 / bursts as f64;
        assert!(mean_burst > 3.0 && mean_burst < 5.0, "{mean_burst}");
    }
}
