//! The forwarding loop: one thread moves packets between the client's and the server's
//! TUN devices through a [`Link`], driven by the monotonic clock.
//!
//! Each turn: deliver every packet due now, publish the counters, sleep in `ppoll(2)` until
//! the link's next wake-up or a packet arrives, read arrived packets in bursts. The thread's
//! timer slack is set to 1 ns. The loop learns how late the kernel (or hypervisor) wakes it
//! (a moving average, at most [`MAX_EARLY`]), sleeps that much less and polls without
//! sleeping for the rest, but for at most a fifth of every [`SPIN_WINDOW`]; deadlines
//! closer than [`SPIN_BELOW`] are always met that way.

use super::tun::Tun;
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

/// Shared between the forwarding thread and its owner.
#[derive(Default)]
pub struct Shared {
    /// Set to ask the thread to stop.
    pub stop: AtomicBool,
    /// Counters, published every turn.
    pub counters: Mutex<Counters>,
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
/// the downlink's departures; `server` the reverse.
pub fn run(
    mut link: Link,
    client: &Tun,
    server: &Tun,
    mtu: usize,
    shared: &Shared,
) -> (Link, ForwardStats) {
    // SAFETY: prctl on the calling thread only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let start = Instant::now();
    let cpu0 = thread_cpu_time();
    let now = || Time::from_nanos(start.elapsed().as_nanos() as u64);
    let mut pool = BufferPool::new(mtu.max(1500) + 64, 4096);
    let mut stats = ForwardStats::default();
    let mut fds = [
        libc::pollfd {
            fd: client.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: server.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let mut last_published = Counters::default();
    let mut early = Duration::ZERO;
    let mut window_start = Time::ZERO;
    let mut spun = Duration::ZERO;
    while !shared.stop.load(Ordering::Relaxed) {
        stats.turns += 1;
        let t = now();
        for (dir, out) in [(Direction::Up, server), (Direction::Down, client)] {
            while let Some((due, p)) = link.dequeue(dir, t) {
                let late = now().since(due);
                stats.written += 1;
                stats.late_sum += late;
                stats.late_max = stats.late_max.max(late);
                match out.write(&p.data) {
                    Ok(_) => pool.put(p.data),
                    Err(_) => link.tun_write_failed(dir, t, p),
                }
            }
        }
        for p in link.take_dropped() {
            pool.put(p.data);
        }
        if *link.counters() != last_published {
            last_published = *link.counters();
            *shared.counters.lock().unwrap_or_else(|e| e.into_inner()) = last_published;
        }

        let t = now();
        if t.since(window_start) >= SPIN_WINDOW {
            window_start = t;
            spun = Duration::ZERO;
        }
        // Spinning is rationed so a busy link does not keep a CPU busy polling.
        let margin = if spun < SPIN_WINDOW / 5 {
            early
        } else {
            Duration::ZERO
        };
        let deadline = link.next_wakeup();
        let wait = match deadline {
            // Wake early by the usual oversleep and spin the rest of the way.
            Some(w) => w.since(t + margin).min(MAX_SLEEP),
            None => MAX_SLEEP,
        };
        let ts = if wait < SPIN_BELOW {
            libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            }
        } else {
            libc::timespec {
                tv_sec: wait.as_secs() as _,
                tv_nsec: wait.subsec_nanos() as _,
            }
        };
        // SAFETY: ppoll on two valid pollfds with a valid timeout and no signal mask.
        let n = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
        if n == 0 && wait < SPIN_BELOW {
            spun += now().since(t);
        }
        if n == 0 && wait >= SPIN_BELOW && wait < MAX_SLEEP {
            // Timed out: learn how late the kernel woke us (EWMA, 1/8 gain), capped.
            let target = t + wait;
            let over = now().since(target).min(MAX_EARLY);
            early = (early * 7 + over) / 8;
        }
        if n <= 0 {
            continue;
        }
        for (i, dir) in [(0, Direction::Up), (1, Direction::Down)] {
            if fds[i].revents & libc::POLLIN == 0 {
                continue;
            }
            let tun = if i == 0 { client } else { server };
            for _ in 0..READ_BURST {
                let mut buf = pool.get();
                match tun.read_into(&mut buf) {
                    Ok(_) => link.enqueue(dir, now(), Packet::new(buf)),
                    Err(e) => {
                        pool.put(buf);
                        if e.kind() != io::ErrorKind::WouldBlock {
                            stats.read_errors += 1;
                        }
                        break;
                    }
                }
            }
        }
    }
    *shared.counters.lock().unwrap_or_else(|e| e.into_inner()) = *link.counters();
    let _ = link.flush_logs();
    stats.cpu = thread_cpu_time() - cpu0;
    stats.wall = start.elapsed();
    (link, stats)
}

/// Keeps `Arc<Shared>` nameable for owners.
pub type SharedRef = Arc<Shared>;
