//! The CPU the lanes share: a load takes its share before it starts and gives it back
//! when it ends. A loader load takes one lane's share; a Chromium load takes
//! [`super::chromium_share`] (two cores' worth, measured: docs/lab.md, "Chromium as a client"), so that
//! Chromium loads beside each other or beside loader loads do not run short of CPU and
//! time the CPU rather than the network. Shares are handed out first come, first served:
//! a Chromium load waiting for its share holds back the loads behind it, so it is never
//! starved by a stream of smaller ones.

use std::sync::{Condvar, Mutex};

/// Shares of the CPU, one per lane.
pub(super) struct Budget {
    /// Shares in all.
    total: usize,
    /// Shares a Chromium load takes.
    pub chromium: usize,
    /// (shares taken, next ticket to hand out, ticket being served).
    state: Mutex<(usize, u64, u64)>,
    /// Signalled when shares come back or the served ticket moves.
    changed: Condvar,
}

/// Shares taken, given back on drop.
pub(super) struct Taken<'a> {
    budget: &'a Budget,
    shares: usize,
}

impl Budget {
    /// A budget of `total` shares (at least one), of which a Chromium load takes
    /// `chromium`.
    pub fn new(total: usize, chromium: usize) -> Budget {
        Budget {
            total: total.max(1),
            chromium,
            state: Mutex::new((0, 0, 0)),
            changed: Condvar::new(),
        }
    }

    /// Takes `shares` (at most all of them), waiting for them and for the takers that
    /// came before.
    pub fn take(&self, shares: usize) -> Taken<'_> {
        let shares = shares.clamp(1, self.total);
        let mut s = self.state.lock().expect("lock");
        let ticket = s.1;
        s.1 += 1;
        while s.2 != ticket || s.0 + shares > self.total {
            s = self.changed.wait(s).expect("lock");
        }
        s.0 += shares;
        s.2 += 1;
        self.changed.notify_all();
        Taken {
            budget: self,
            shares,
        }
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        let mut s = self.budget.state.lock().expect("lock");
        s.0 -= self.shares;
        self.budget.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn never_hands_out_more_than_it_has_and_serves_in_order() {
        let b = Budget::new(8, 4);
        let in_use = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let big_at_once = AtomicUsize::new(0);
        let big_peak = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for lane in 0..8 {
                let (b, in_use, peak) = (&b, &in_use, &peak);
                let (big_at_once, big_peak) = (&big_at_once, &big_peak);
                s.spawn(move || {
                    for i in 0..20 {
                        let big = (lane + i) % 3 == 0;
                        let n = if big { 4 } else { 1 };
                        let _t = b.take(n);
                        let now = in_use.fetch_add(n, Ordering::SeqCst) + n;
                        peak.fetch_max(now, Ordering::SeqCst);
                        if big {
                            let k = big_at_once.fetch_add(1, Ordering::SeqCst) + 1;
                            big_peak.fetch_max(k, Ordering::SeqCst);
                        }
                        std::thread::sleep(Duration::from_micros(300));
                        if big {
                            big_at_once.fetch_sub(1, Ordering::SeqCst);
                        }
                        in_use.fetch_sub(n, Ordering::SeqCst);
                    }
                });
            }
        });
        assert!(peak.load(Ordering::SeqCst) <= 8);
        assert!(
            big_peak.load(Ordering::SeqCst) <= 2,
            "at most two 4-share loads at once"
        );
        // More than the budget is clamped to all of it, not a deadlock.
        let _all = b.take(100);
    }
}
