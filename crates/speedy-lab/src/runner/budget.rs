//! The CPU the lanes share, when an experiment has Chromium variants: a Chromium load
//! takes one of [`ChromiumSplit::at_once`] places and a loader load one of
//! [`ChromiumSplit::loaders`], each for as long as it runs. The two kinds wait in
//! separate lines, so loader loads run beside a Chromium load without holding it back
//! and a stream of loader loads never starves it: the core kept for each Chromium load
//! is not in the loaders' count (measured: docs/lab.md, "CPU and lanes"). Within a line
//! places are handed out first come, first served.

use super::ChromiumSplit;
use crate::experiment::Client;
use std::sync::{Condvar, Mutex};

/// Places for loads of one kind.
struct Line {
    /// Places in all.
    total: usize,
    /// (places taken, next ticket to hand out, ticket being served).
    state: Mutex<(usize, u64, u64)>,
    /// Signalled when a place comes back or the served ticket moves.
    changed: Condvar,
}

impl Line {
    fn new(total: usize) -> Line {
        Line {
            total: total.max(1),
            state: Mutex::new((0, 0, 0)),
            changed: Condvar::new(),
        }
    }

    /// Takes a place, waiting for one and for the takers that came before.
    fn take(&self) -> Taken<'_> {
        let mut s = self.state.lock().expect("lock");
        let ticket = s.1;
        s.1 += 1;
        while s.2 != ticket || s.0 >= self.total {
            s = self.changed.wait(s).expect("lock");
        }
        s.0 += 1;
        s.2 += 1;
        self.changed.notify_all();
        Taken { line: self }
    }
}

/// The places of a run: one line for loader loads, one for Chromium loads.
pub(super) struct Budget {
    loader: Line,
    chromium: Line,
}

/// A place taken, given back on drop.
pub(super) struct Taken<'a> {
    line: &'a Line,
}

impl Budget {
    /// The places of a run on `lanes` lanes: all of them for loader loads when no variant
    /// loads with Chromium (`split` is `None`), else `split`'s.
    pub fn new(lanes: usize, split: Option<ChromiumSplit>) -> Budget {
        let (loaders, at_once) = split.map_or((lanes, 1), |s| (s.loaders, s.at_once));
        Budget {
            loader: Line::new(loaders),
            chromium: Line::new(at_once),
        }
    }

    /// Takes a place for a load by `client`, waiting for it.
    pub fn take(&self, client: Client) -> Taken<'_> {
        match client {
            Client::Loader => self.loader.take(),
            Client::Chromium => self.chromium.take(),
        }
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        let mut s = self.line.state.lock().expect("lock");
        s.0 -= 1;
        self.line.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn loader_loads_run_beside_chromium_and_neither_kind_exceeds_its_places() {
        let b = Budget::new(
            8,
            Some(ChromiumSplit {
                at_once: 1,
                loaders: 4,
            }),
        );
        let (loaders, chromium) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let (loader_peak, chromium_peak) = (AtomicUsize::new(0), AtomicUsize::new(0));
        // Loader loads seen running while a Chromium load ran.
        let beside = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for lane in 0..8 {
                let (b, loaders, chromium) = (&b, &loaders, &chromium);
                let (loader_peak, chromium_peak, beside) = (&loader_peak, &chromium_peak, &beside);
                s.spawn(move || {
                    for i in 0..20 {
                        let is_chromium = (lane + i) % 2 == 0;
                        let (client, n, peak) = if is_chromium {
                            (Client::Chromium, chromium, chromium_peak)
                        } else {
                            (Client::Loader, loaders, loader_peak)
                        };
                        let _t = b.take(client);
                        peak.fetch_max(n.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                        if !is_chromium && chromium.load(Ordering::SeqCst) > 0 {
                            beside.fetch_add(1, Ordering::SeqCst);
                        }
                        std::thread::sleep(Duration::from_micros(300));
                        n.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            }
        });
        assert_eq!(
            chromium_peak.load(Ordering::SeqCst),
            1,
            "one Chromium load at once"
        );
        assert!(loader_peak.load(Ordering::SeqCst) <= 4);
        assert!(
            beside.load(Ordering::SeqCst) > 0,
            "loader loads ran beside a Chromium load"
        );
    }

    #[test]
    fn without_chromium_every_lane_runs_a_loader_load() {
        let b = Budget::new(3, None);
        let held: Vec<_> = (0..3).map(|_| b.take(Client::Loader)).collect();
        assert_eq!(b.loader.state.lock().unwrap().0, 3);
        drop(held);
        assert_eq!(b.loader.state.lock().unwrap().0, 0);
    }
}
