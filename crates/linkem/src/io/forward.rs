//! The forwarding loop: one thread moves packets between the client's and the server's
//! TUN devices through a [`Link`], driven by the monotonic clock.
//!
//! Each turn: deliver every packet due now, publish the counters, sleep in `ppoll(2)` until
//! the link's next wake-up or a packet arrives, read arrived packets in bursts. The thread's
//! timer slack is set to 1 ns. The loop learns how late the kernel (or hypervisor) wakes it
//! (a moving average, at most [`MAX_EARLY`]), sleeps that much less and polls without
//! sleeping for the rest, but for at most a fifth of every [`SPIN_WINDOW`]; deadlines
//! closer than [`SPIN_BELOW`] are always met that way.

use super::tun::{Tun, MAX_OFFLOADED};
use crate::counters::Counters;
use crate::link::Link;
use crate::packet::{BufferPool, Packet};
use crate::time::Time;
use crate::Direction;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Deadlines closer than this are awaited by polling without sleeping.
pub const SPIN_BELOW: Duration = Duration::from_micros(20);
/// Upper bound of the learned early wake-up (the part of a wait spent spinning).
pub const MAX_EARLY: Duration = Duration::from_micros(300);
/// Spinning is limited to a fifth of each window of this length.
pub const SPIN_WINDOW: Duration = Duration::from_millis(100);
/// Longest sleep, so a stop request is seen promptly.
pub const MAX_SLEEP: Duration = Duration::from_millis(20);
/// Packets read from one device per turn, at most.
pub const READ_BURST: usize = 64;

/// What the forwarding thread measured about itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct ForwardStats {
    /// CPU time of the forwarding thread.
    pub cpu: Duration,
    /// Wall-clock time it ran.
    pub wall: Duration,
    /// Loop turns.
    pub turns: u64,
    /// Reads that failed with an error other than "would block".
    pub read_errors: u64,
    /// Packets written, and the sum and maximum of how late they were written compared
    /// with their emulated departure time.
    pub written: u64,
    /// Sum of write lateness.
    pub late_sum: Duration,
    /// Largest write lateness.
    pub late_max: Duration,
}

/// How late the forwarding thread wrote packets, as its owner reads it while the link
/// runs: totals since the link started, and the largest lateness since the owner last
/// took it ([`crate::Topology::take_lateness`]), so that a stretch of a long run (a
/// visit of a browsing session) is judged on its own packets.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Lateness {
    /// Packets written since the link started.
    pub written: u64,
    /// Sum of their lateness.
    pub late_sum: Duration,
    /// Largest lateness of a packet written since the last take.
    pub late_max: Duration,
}

impl Lateness {
    /// The mean lateness of the packets written between `earlier` and `self` (two takes
    /// of the same link).
    pub fn mean_since(&self, earlier: &Lateness) -> Duration {
        let n = self.written.saturating_sub(earlier.written);
        let sum = self.late_sum.saturating_sub(earlier.late_sum);
        match u32::try_from(n) {
            Ok(0) => Duration::ZERO,
            Ok(n) => sum / n,
            Err(_) => Duration::from_secs_f64(sum.as_secs_f64() / n as f64),
        }
    }
}

/// Shared between the forwarding thread and its owner.
#[derive(Default)]
pub struct Shared {
    /// Set to ask the thread to stop.
    pub stop: AtomicBool,
    /// Counters, published every turn.
    pub counters: Mutex<Counters>,
    /// Write lateness, published every turn that wrote packets.
    pub lateness: Mutex<Lateness>,
}

fn thread_cpu_time() -> Duration {
    // SAFETY: clock_gettime writes one timespec.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Gives the calling thread real-time (SCHED_FIFO) priority `prio`, so timing holds while
/// other processes keep the CPUs busy. Needs root; the kernel's RT throttling still leaves
/// other tasks 5% of each CPU.
pub fn make_realtime(prio: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: changes the calling thread's own scheduling policy.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Runs the loop until `shared.stop` is set. `client` carries the uplink's arrivals and
/// the downlink's departures; `server` the reverse. With `offload` the devices hand over
/// TCP super-packets (see [`Tun::set_offload`]), so buffers take 64 KiB.
pub fn run(
    link: Link,
    client: &Tun,
    server: &Tun,
    mtu: usize,
    offload: bool,
    shared: &Shared,
) -> (Link, ForwardStats) {
    // SAFETY: prctl on the calling thread only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let start = Instant::now();
    let cpu0 = thread_cpu_time();
    let mut f = Forwarder {
        link,
        client,
        server,
        start,
        pool: match offload {
            true => BufferPool::new(MAX_OFFLOADED, 512),
            false => BufferPool::new(mtu.max(1500) + 64, 4096),
        },
        stats: ForwardStats::default(),
        turn_late_max: Duration::ZERO,
    };
    let mut fds = [readable(client), readable(server)];
    let mut last_published = Counters::default();
    let mut published_written = 0;
    let mut pacer = Pacer::default();
    while !shared.stop.load(Ordering::Relaxed) {
        f.stats.turns += 1;
        let t = f.now();
        f.deliver_due(t);
        if *f.link.counters() != last_published {
            last_published = *f.link.counters();
            *shared.counters.lock().unwrap_or_else(|e| e.into_inner()) = last_published;
        }
        if f.stats.written != published_written {
            let mut l = shared.lateness.lock().unwrap_or_else(|e| e.into_inner());
            l.written = f.stats.written;
            l.late_sum = f.stats.late_sum;
            l.late_max = l.late_max.max(f.turn_late_max);
            published_written = f.stats.written;
            f.turn_late_max = Duration::ZERO;
        }

        let t = f.now();
        let wait = pacer.wait(t, f.link.next_wakeup());
        let ts = poll_timeout(wait);
        // SAFETY: ppoll on two valid pollfds with a valid timeout and no signal mask.
        let n = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
        pacer.polled(n, t, wait, || f.now());
        if n <= 0 {
            continue;
        }
        f.read_arrivals(&fds);
    }
    *shared.counters.lock().unwrap_or_else(|e| e.into_inner()) = *f.link.counters();
    let _ = f.link.flush_logs();
    f.stats.cpu = thread_cpu_time() - cpu0;
    f.stats.wall = start.elapsed();
    (f.link, f.stats)
}

/// A `pollfd` that waits for `tun` to be readable.
fn readable(tun: &Tun) -> libc::pollfd {
    libc::pollfd {
        fd: tun.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }
}

/// `ppoll`'s timeout for a wait: zero (poll without sleeping) below [`SPIN_BELOW`].
fn poll_timeout(wait: Duration) -> libc::timespec {
    if wait < SPIN_BELOW {
        libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        }
    } else {
        libc::timespec {
            tv_sec: wait.as_secs() as _,
            tv_nsec: wait.subsec_nanos() as _,
        }
    }
}

/// What the loop moves packets with: the link, the two devices, the buffers, and what it
/// measures about itself.
struct Forwarder<'a> {
    link: Link,
    /// The uplink's arrivals, the downlink's departures.
    client: &'a Tun,
    /// The downlink's arrivals, the uplink's departures.
    server: &'a Tun,
    /// The link's clock starts here.
    start: Instant,
    pool: BufferPool,
    stats: ForwardStats,
    /// The largest lateness since the last publication of [`Lateness`].
    turn_late_max: Duration,
}

impl Forwarder<'_> {
    /// The link's time now.
    fn now(&self) -> Time {
        Time::from_nanos(self.start.elapsed().as_nanos() as u64)
    }

    /// Writes every packet due by `t` to its device (noting how late it is; a failed write
    /// goes back to the link as a drop) and takes back the buffers of dropped packets.
    fn deliver_due(&mut self, t: Time) {
        for (dir, out) in [(Direction::Up, self.server), (Direction::Down, self.client)] {
            while let Some((due, p)) = self.link.dequeue(dir, t) {
                let late = self.now().since(due);
                self.stats.written += 1;
                self.stats.late_sum += late;
                self.stats.late_max = self.stats.late_max.max(late);
                self.turn_late_max = self.turn_late_max.max(late);
                match out.write(&p.data, p.offload) {
                    Ok(_) => self.pool.put(p.data),
                    Err(_) => self.link.tun_write_failed(dir, t, p),
                }
            }
        }
        for p in self.link.take_dropped() {
            self.pool.put(p.data);
        }
    }

    /// Reads up to [`READ_BURST`] packets from each device `fds` found readable (the
    /// client's first) into the link, counting failed reads other than "would block".
    fn read_arrivals(&mut self, fds: &[libc::pollfd; 2]) {
        for (i, dir) in [(0, Direction::Up), (1, Direction::Down)] {
            if fds[i].revents & libc::POLLIN == 0 {
                continue;
            }
            let tun = if i == 0 { self.client } else { self.server };
            for _ in 0..READ_BURST {
                let mut buf = self.pool.get();
                match tun.read_into(&mut buf) {
                    Ok((_, offload)) => {
                        let now = self.now();
                        let p = Packet {
                            offload,
                            ..Packet::new(buf)
                        };
                        self.link.enqueue(dir, now, p);
                    }
                    Err(e) => {
                        self.pool.put(buf);
                        if e.kind() != io::ErrorKind::WouldBlock {
                            self.stats.read_errors += 1;
                        }
                        break;
                    }
                }
            }
        }
    }
}

/// How long the loop sleeps: it learns how late the kernel wakes it and wakes that much
/// early to spin the rest, with spinning rationed per [`SPIN_WINDOW`].
#[derive(Default)]
struct Pacer {
    /// The learned early wake-up (a moving average of oversleep, at most [`MAX_EARLY`]).
    early: Duration,
    /// Start of the current spin window.
    window_start: Time,
    /// Time spent spinning in the current window.
    spun: Duration,
}

impl Pacer {
    /// How long to wait at `t` for the link's next wake-up `deadline`: until the usual
    /// oversleep before it (just until it once a fifth of the window was spun), at most
    /// [`MAX_SLEEP`].
    fn wait(&mut self, t: Time, deadline: Option<Time>) -> Duration {
        if t.since(self.window_start) >= SPIN_WINDOW {
            self.window_start = t;
            self.spun = Duration::ZERO;
        }
        // Spinning is rationed so a busy link does not keep a CPU busy polling.
        let margin = if self.spun < SPIN_WINDOW / 5 {
            self.early
        } else {
            Duration::ZERO
        };
        match deadline {
            // Wake early by the usual oversleep and spin the rest of the way.
            Some(w) => w.since(t + margin).min(MAX_SLEEP),
            None => MAX_SLEEP,
        }
    }

    /// After `ppoll` (started at `t` for `wait`) returned `n`: when it timed out, counts a
    /// spin, or learns how late a sleep woke; `now` reads the clock.
    fn polled(&mut self, n: i32, t: Time, wait: Duration, now: impl FnOnce() -> Time) {
        if n != 0 {
            return;
        }
        if wait < SPIN_BELOW {
            self.spun += now().since(t);
        } else if wait < MAX_SLEEP {
            // Timed out: learn how late the kernel woke us (EWMA, 1/8 gain), capped.
            let target = t + wait;
            let over = now().since(target).min(MAX_EARLY);
            self.early = (self.early * 7 + over) / 8;
        }
    }
}

/// Keeps `Arc<Shared>` nameable for owners.
pub type SharedRef = Arc<Shared>;
