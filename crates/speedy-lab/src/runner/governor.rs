//! How many lanes take loads, chosen while the run goes by what the machine is doing
//! (`--lanes auto`), or fixed (`--lanes N`, and any run with a Chromium variant, whose CPU
//! shares were measured at a fixed count: [`super::chromium_share`]).
//!
//! A lane takes its next load only while its index is below the governor's target. Every
//! [`TICK`] a thread of the governor reads the machine: the CPU's busy share
//! (`/proc/stat`), how late a thread of ordinary priority wakes from 10 ms sleeps (what
//! the emulator's writes and the loader's event loop meet when the CPU is short), and the
//! worst share of [`super::HEADROOM`] that a load which ended meanwhile used. It opens a
//! quarter more lanes when all of that stayed low for [`SETTLE_TICKS`] ticks in a row
//! since its last change, and closes a quarter when any of it comes near a bound
//! ([`next_target`]).
//! A lane closed finishes the load it has; its namespaces and servers stay up until the
//! run ends, so opening it again costs nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How often the governor reads the machine.
pub const TICK: Duration = Duration::from_secs(2);

/// Ticks after a change before lanes open again, all of which must have stayed low: long
/// enough for the new lanes' set-up and first loads to show in what the governor reads.
pub const SETTLE_TICKS: usize = 5;

/// What the machine did over a stretch of time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Reading {
    /// Share of the CPU busy (all cores, 0-1).
    pub cpu_busy: f64,
    /// Mean lateness of the probe's wake-ups (µs).
    pub wake_late_mean_us: f64,
    /// Largest lateness of one wake-up (µs).
    pub wake_late_max_us: f64,
    /// The largest share of [`super::HEADROOM`] a load that ended used (0 when none
    /// ended; 1 is a flagged load).
    pub worst_load: f64,
}

/// The lanes to run next after `tick`: `target` less a quarter (at least one) when it
/// came near a bound (a load used 60% of a headroom bound, wake-ups 25 ms late at worst
/// or 500 µs on average, the CPU 85% busy); a quarter more (at least one, at most `max`)
/// when it and the ticks before it since the last change stayed low, [`SETTLE_TICKS`] in
/// a row (loads under 30% of the bounds, wake-ups under 10 ms and 150 µs, the CPU under
/// 65%); else `target`. The CPU bounds sit where wake-ups grow late: in the whitepaper
/// matrix a network of short loads (cable at 20 ms) ran the CPU from 41% to 86% busy at
/// the lanes a slower network had been calm at, and a load's packets left 0.8 ms late on
/// average. The loads' bound is loose because one packet's lateness has a long tail even
/// on an idle machine (1% of `quick`'s loads at 12 lanes wrote one 8-12 ms late): at 20%
/// (4 ms) two ticks in three were not calm and the lanes never grew. `calm` counts the low ticks in a row since the last change before
/// this one; returns the target and the new count.
pub fn next_target(target: usize, max: usize, tick: &Reading, calm: usize) -> (usize, usize) {
    let step = (target / 4).max(1);
    let near = tick.worst_load >= 0.6
        || tick.wake_late_max_us >= 25_000.0
        || tick.wake_late_mean_us >= 500.0
        || tick.cpu_busy >= 0.85;
    let low = tick.worst_load < 0.3
        && tick.wake_late_max_us < 10_000.0
        && tick.wake_late_mean_us < 150.0
        && tick.cpu_busy < 0.65;
    let calm = if low { calm + 1 } else { 0 };
    if near {
        (target.saturating_sub(step).max(1), calm)
    } else if calm >= SETTLE_TICKS {
        ((target + step).min(max.max(1)), calm)
    } else {
        (target, calm)
    }
}

/// What the lanes and the governor's thread share.
#[derive(Debug)]
struct State {
    /// Lanes taking loads now.
    target: usize,
    /// The worst headroom use of loads ended since the last tick.
    worst: f64,
    /// Set by [`Governor::brace`]: the calm ticks start again.
    braced: bool,
    /// When the lanes were last cut (by a tick or [`Governor::brace`]).
    cut_at: Option<Instant>,
}

/// The lanes a run may use and how many take loads now.
pub(super) struct Governor {
    /// Whether the target follows the machine (`--lanes auto`).
    adapt: bool,
    /// The most lanes.
    max: usize,
    state: Mutex<State>,
    /// Signalled when the target changes.
    changed: Condvar,
    /// Set when the run is over (the ticking thread ends).
    over: AtomicBool,
}

impl Governor {
    /// `lanes` lanes, always.
    pub fn fixed(lanes: usize) -> Governor {
        Governor::new(false, lanes, lanes)
    }

    /// Starts at `start` lanes and follows the machine, up to `max`.
    pub fn adaptive(start: usize, max: usize) -> Governor {
        Governor::new(true, start, max)
    }

    fn new(adapt: bool, start: usize, max: usize) -> Governor {
        let max = max.max(1);
        Governor {
            adapt,
            max,
            state: Mutex::new(State {
                target: start.clamp(1, max),
                worst: 0.0,
                braced: false,
                cut_at: None,
            }),
            changed: Condvar::new(),
            over: AtomicBool::new(false),
        }
    }

    /// The most lanes the run may open.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Lanes taking loads now.
    pub fn target(&self) -> usize {
        self.state.lock().expect("lock").target
    }

    /// Waits until lane `lane` may take a load (`true`), or until `no_more_work` says there
    /// is nothing left to take (`false`).
    pub fn admit(&self, lane: usize, no_more_work: &dyn Fn() -> bool) -> bool {
        let mut s = self.state.lock().expect("lock");
        loop {
            if no_more_work() {
                return false;
            }
            if lane < s.target {
                return true;
            }
            s = self
                .changed
                .wait_timeout(s, Duration::from_millis(250))
                .expect("lock")
                .0;
        }
    }

    /// Notes a load that began at `started` and ended having used `usage` of the
    /// headroom bounds. A load that began before the lanes were last cut ran partly
    /// beside more lanes than run now, which the cut already answered: it is left out.
    /// Without that, a browsing session (ten minutes, its visits reported when it ends)
    /// went on cutting the lanes for as long as sessions begun before the first cut kept
    /// ending: the `cellular` study went from 32 lanes to 2.
    pub fn report(&self, usage: f64, started: Instant) {
        let mut s = self.state.lock().expect("lock");
        if s.cut_at.is_some_and(|cut| started < cut) {
            return;
        }
        s.worst = s.worst.max(usage);
    }

    /// Closes a quarter of the lanes at once (at least one) when the first load of a
    /// network after the first starts (`network` names it): its loads may weigh more
    /// than the last network's, and the lanes move to it within a load's time, before a
    /// tick could see it. In the whitepaper matrix the 16 lanes a cable line at 200 ms had
    /// been calm at moved to the same line at 20 ms (loads a quarter as long) and ran the
    /// CPU 87% busy: 7 of the run's 8 flagged loads. The next step up waits for
    /// [`SETTLE_TICKS`] calm ticks. A fixed governor is left alone.
    pub fn brace(&self, network: &str) {
        if !self.adapt {
            return;
        }
        let mut s = self.state.lock().expect("lock");
        let next = s.target.saturating_sub((s.target / 4).max(1)).max(1);
        if next != s.target {
            eprintln!(
                "speedy lab: {next} lanes take loads (were {}): {network} begins, its loads' \
                 weight not seen yet",
                s.target
            );
            s.target = next;
            s.cut_at = Some(Instant::now());
        }
        s.braced = true;
        self.changed.notify_all();
    }

    /// Ends [`Governor::follow`].
    pub fn finish(&self) {
        self.over.store(true, Ordering::Relaxed);
    }

    /// Reads the machine every [`TICK`] and moves the target (saying so on stderr) until
    /// [`Governor::finish`]; returns at once for a fixed governor.
    pub fn follow(&self) {
        if !self.adapt {
            return;
        }
        // The probe measures the scheduler, not the timer's slack (50 µs by default).
        // SAFETY: PR_SET_TIMERSLACK only changes this thread's timer slack.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
        // Low ticks in a row since the last change.
        let mut calm = 0;
        while !self.over.load(Ordering::Relaxed) {
            let mut tick = Accumulator::new();
            let end = Instant::now() + TICK;
            while Instant::now() < end && !self.over.load(Ordering::Relaxed) {
                let asleep = Instant::now();
                std::thread::sleep(PROBE);
                tick.wake(asleep.elapsed().saturating_sub(PROBE));
            }
            let mut s = self.state.lock().expect("lock");
            tick.worst = std::mem::take(&mut s.worst);
            if std::mem::take(&mut s.braced) {
                calm = 0;
            }
            let t = tick.reading();
            let (next, now_calm) = next_target(s.target, self.max, &t, calm);
            calm = now_calm;
            if next != s.target {
                eprintln!(
                    "speedy lab: {next} lanes take loads (were {}): CPU {:.0}% busy, wake-ups \
                     {:.0} µs late on average and {:.1} ms at worst, loads used {:.0}% of the \
                     headroom at most",
                    s.target,
                    t.cpu_busy * 100.0,
                    t.wake_late_mean_us,
                    t.wake_late_max_us / 1000.0,
                    t.worst_load * 100.0
                );
                if next < s.target {
                    s.cut_at = Some(Instant::now());
                }
                s.target = next;
                self.changed.notify_all();
                calm = 0;
            }
        }
    }
}

/// The lanes that open together at the run's start: each makes its namespaces, link
/// and servers, then waits for the others, so that no load is timed while the others
/// set up (16 lanes setting up beside the first loads of a network wrote those loads'
/// packets up to 37 ms late). Lanes opened later, when the governor opens more, set up
/// one at a time ([`Gate::one_by_one`]) beside the running loads.
pub(super) struct Gate {
    /// How many lanes open together.
    together: usize,
    /// Lanes still setting up.
    left: Mutex<usize>,
    opened: Condvar,
    /// Held by a lane opened later while it sets up.
    later: Mutex<()>,
}

impl Gate {
    /// A gate for the first `together` lanes.
    pub fn new(together: usize) -> Gate {
        Gate {
            together,
            left: Mutex::new(together),
            opened: Condvar::new(),
            later: Mutex::new(()),
        }
    }

    /// How long lane `lane` of the gate waits before its first job when jobs are browsing
    /// sessions with `think` between visits: the lanes' starts spread evenly over one
    /// think time. Started together, every lane's visits would fall at the same moments
    /// all session long (the think times are equal): 27 lanes of `cellular` on its LTE
    /// network loaded their pages at once every 20 s and wrote packets up to 46 ms late.
    pub fn stagger(&self, lane: usize, think: Duration) -> Duration {
        if self.holds(lane) {
            think.mul_f64(lane as f64 / self.together as f64)
        } else {
            Duration::ZERO
        }
    }

    /// Runs `open` (a lane's set-up) when no other lane opened later is setting up: the
    /// governor opens a quarter more lanes at once, and their set-ups together (namespaces,
    /// servers reading the corpus) delayed running loads' packets.
    pub fn one_by_one<T>(&self, open: impl FnOnce() -> T) -> T {
        let _alone = self.later.lock().unwrap_or_else(|e| e.into_inner());
        open()
    }

    /// Whether lane `lane` is one of the lanes that open together.
    pub fn holds(&self, lane: usize) -> bool {
        lane < self.together
    }

    /// Says one lane has set up (or failed to), and waits (at most a minute) for the
    /// others.
    pub fn arrive(&self) {
        let mut left = self.left.lock().expect("lock");
        *left = left.saturating_sub(1);
        self.opened.notify_all();
        let end = Instant::now() + Duration::from_secs(60);
        while *left > 0 && Instant::now() < end {
            left = self
                .opened
                .wait_timeout(left, Duration::from_millis(100))
                .expect("lock")
                .0;
        }
    }
}

/// The probe's sleep.
const PROBE: Duration = Duration::from_millis(10);

/// A [`Reading`] in the making.
struct Accumulator {
    cpu_from: Option<(u64, u64)>,
    wakes: u64,
    late_sum: Duration,
    late_max: Duration,
    worst: f64,
}

impl Accumulator {
    fn new() -> Accumulator {
        Accumulator {
            cpu_from: cpu_times(),
            wakes: 0,
            late_sum: Duration::ZERO,
            late_max: Duration::ZERO,
            worst: 0.0,
        }
    }

    fn wake(&mut self, late: Duration) {
        self.wakes += 1;
        self.late_sum += late;
        self.late_max = self.late_max.max(late);
    }

    /// What was read since [`Accumulator::new`]; a CPU that cannot be read counts as
    /// busy, so the lanes do not grow blind.
    fn reading(&self) -> Reading {
        let cpu_busy = match (self.cpu_from, cpu_times()) {
            (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => (b1 - b0) as f64 / (t1 - t0) as f64,
            _ => 1.0,
        };
        Reading {
            cpu_busy,
            wake_late_mean_us: self.late_sum.as_micros() as f64 / self.wakes.max(1) as f64,
            wake_late_max_us: self.late_max.as_micros() as f64,
            worst_load: self.worst,
        }
    }
}

/// The machine's (busy, total) CPU time in clock ticks, from the first line of
/// `/proc/stat` (idle and iowait are not busy).
fn cpu_times() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_cpu_line(stat.lines().next()?)
}

/// (busy, total) from `/proc/stat`'s `cpu` line: user nice system idle iowait irq softirq
/// steal (guest time is already inside user).
fn parse_cpu_line(line: &str) -> Option<(u64, u64)> {
    let mut f = line.split_whitespace();
    if f.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = f.take(8).map(|x| x.parse().ok()).collect::<Option<_>>()?;
    if v.len() < 5 {
        return None;
    }
    let total: u64 = v.iter().sum();
    Some((total - v[3] - v[4], total))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calm() -> Reading {
        Reading {
            cpu_busy: 0.4,
            wake_late_mean_us: 40.0,
            wake_late_max_us: 900.0,
            worst_load: 0.1,
        }
    }

    /// The target after `ticks`, starting from `target` with no calm tick yet.
    fn after(target: usize, max: usize, ticks: &[Reading]) -> usize {
        let (mut t, mut calm) = (target, 0);
        for r in ticks {
            let (next, c) = next_target(t, max, r, calm);
            calm = if next != t { 0 } else { c };
            t = next;
        }
        t
    }

    #[test]
    fn opens_a_quarter_more_only_when_the_last_ticks_all_stayed_low() {
        let c = calm();
        let settled = vec![c; SETTLE_TICKS];
        assert_eq!(after(8, 32, &settled), 10);
        assert_eq!(after(2, 32, &settled), 3, "at least one");
        assert_eq!(after(30, 32, &settled), 32, "capped at max");
        assert_eq!(
            after(8, 32, &settled[1..]),
            8,
            "too few ticks since the last change"
        );
        assert_eq!(after(8, 32, &[]), 8);
        for busy in [
            Reading { cpu_busy: 0.8, ..c },
            Reading { cpu_busy: 0.7, ..c },
            Reading {
                worst_load: 0.35,
                ..c
            },
            Reading {
                wake_late_max_us: 12_000.0,
                ..c
            },
            Reading {
                wake_late_mean_us: 200.0,
                ..c
            },
        ] {
            let mut r = settled.clone();
            r[1] = busy;
            assert_eq!(after(8, 32, &r), 8, "{busy:?} within the window");
            // Once out of the window, it no longer holds the lanes back.
            r.extend(vec![c; SETTLE_TICKS - 1]);
            assert_eq!(after(8, 32, &r), 10, "{busy:?} before the window");
        }
        // After a change the count starts again: five more calm ticks for the next step.
        assert_eq!(after(8, 32, &vec![c; 2 * SETTLE_TICKS - 1]), 10);
        assert_eq!(after(8, 32, &vec![c; 2 * SETTLE_TICKS]), 12);
    }

    #[test]
    fn closes_a_quarter_when_anything_comes_near_a_bound() {
        let c = calm();
        for near in [
            Reading {
                worst_load: 0.6,
                ..c
            },
            Reading {
                wake_late_max_us: 30_000.0,
                ..c
            },
            Reading {
                wake_late_mean_us: 600.0,
                ..c
            },
            Reading {
                cpu_busy: 0.86,
                ..c
            },
        ] {
            let mut r = vec![c; SETTLE_TICKS - 1];
            r.push(near);
            assert_eq!(after(12, 32, &r), 9, "{near:?}");
            assert_eq!(after(1, 32, &r), 1, "never below one");
        }
    }

    #[test]
    fn a_new_network_closes_a_quarter_at_once_but_not_a_fixed_count() {
        let g = Governor::adaptive(16, 32);
        g.brace("cable 20 ms");
        assert_eq!(g.target(), 12);
        assert!(g.state.lock().unwrap().braced);
        let g = Governor::adaptive(1, 32);
        g.brace("cable 20 ms");
        assert_eq!(g.target(), 1, "never below one");
        let g = Governor::fixed(8);
        g.brace("cable 20 ms");
        assert_eq!(g.target(), 8);
    }

    #[test]
    fn a_load_begun_before_the_last_cut_is_left_out() {
        let g = Governor::adaptive(16, 32);
        let before = Instant::now();
        g.report(0.5, before);
        assert_eq!(g.state.lock().unwrap().worst, 0.5, "no cut yet: counted");
        g.brace("lte");
        g.report(2.0, before);
        assert_eq!(g.state.lock().unwrap().worst, 0.5, "begun before the cut");
        g.report(0.7, Instant::now());
        assert_eq!(g.state.lock().unwrap().worst, 0.7, "begun after it");
    }

    #[test]
    fn a_fixed_governor_admits_its_lanes_and_no_more() {
        let g = Governor::fixed(3);
        assert!(g.admit(2, &|| false));
        assert!(!g.admit(3, &|| true), "no more work: the lane ends");
        g.follow(); // returns at once
    }

    #[test]
    fn a_closed_lane_waits_until_the_target_reaches_it() {
        let g = Governor::adaptive(1, 4);
        std::thread::scope(|s| {
            let waiting = s.spawn(|| g.admit(2, &|| false));
            std::thread::sleep(Duration::from_millis(50));
            assert!(!waiting.is_finished());
            g.state.lock().unwrap().target = 3;
            g.changed.notify_all();
            assert!(waiting.join().unwrap());
        });
    }

    #[test]
    fn the_lanes_of_a_gate_leave_it_together() {
        let g = Gate::new(3);
        assert!(g.holds(2) && !g.holds(3));
        let t0 = Instant::now();
        let left: Vec<Duration> = std::thread::scope(|s| {
            let lanes: Vec<_> = (0..3u32)
                .map(|i| {
                    let g = &g;
                    s.spawn(move || {
                        std::thread::sleep(Duration::from_millis(40) * i);
                        g.arrive();
                        t0.elapsed()
                    })
                })
                .collect();
            lanes.into_iter().map(|h| h.join().unwrap()).collect()
        });
        // The last arrives after 80 ms; nobody leaves before it.
        assert!(
            left.iter().all(|&t| t >= Duration::from_millis(80)),
            "{left:?}"
        );
    }

    #[test]
    fn sessions_of_the_lanes_opened_together_start_spread_over_a_think_time() {
        let g = Gate::new(4);
        let think = Duration::from_secs(20);
        let starts: Vec<_> = (0..5).map(|l| g.stagger(l, think)).collect();
        assert_eq!(
            starts,
            [0, 5, 10, 15, 0].map(Duration::from_secs),
            "lane 4 opens later, at its own time"
        );
    }

    #[test]
    fn reads_proc_stat() {
        assert_eq!(
            parse_cpu_line("cpu  100 5 50 800 20 3 2 0 0 0"),
            Some((160, 980))
        );
        assert_eq!(parse_cpu_line("cpu0 1 2 3 4 5"), None);
        assert_eq!(parse_cpu_line("cpu 1 x 3 4 5"), None);
        assert!(cpu_times().is_some(), "this machine's /proc/stat");
    }
}
