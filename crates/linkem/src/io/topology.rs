//! The public topology API: a client namespace and a server namespace, each with a TUN
//! device, and a forwarding thread between them.
//!
//! ```text
//!   namespace lk<pid>-<n>c                         namespace lk<pid>-<n>s
//!   client 100.64.0.1 ── tun ══╗            ╔══ tun ── 100.65.0.1, 100.65.0.2, …
//!                              ╚═ forwarder ═╝         (one address per origin)
//!                               (this process: up = client → server,
//!                                              down = server → client)
//! ```

use super::forward::{self, ForwardStats, Lateness, Shared};
use super::netns::{self, Netns};
use super::tun::Tun;
use crate::counters::Counters;
use crate::link::{Link, LinkConfig};
use std::io;
use std::net::Ipv4Addr;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// At most this many packets are discarded from each device as a link starts (a TUN
/// device queues at most its `txqueuelen`, 1,000 here, so this bound is never reached).
const MAX_STALE: u64 = 100_000;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// One end of the topology.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Side {
    /// The client namespace (browser, load generator).
    Client,
    /// The server namespace (origins).
    Server,
}

/// How to build a [`Topology`].
#[derive(Clone, Debug)]
pub struct TopologyConfig {
    /// Addresses on the server side, one per origin (at least 1, and at least as many as
    /// `preferred_addrs` names).
    pub server_addrs: usize,
    /// Addresses to give the server side, by position: entry `i`, when it is `Some` and
    /// free in the namespace ([`usable_server_addr`]), is the `i`-th server address; the
    /// others are fresh ones from 100.65.0.0/16. A replay gives each origin the address
    /// it was recorded at this way, as Mahimahi's ReplayShell does.
    pub preferred_addrs: Vec<Option<Ipv4Addr>>,
    /// MTU of both TUN devices.
    pub mtu: u32,
    /// Kernel queue length of both TUN devices, in packets.
    pub txqueuelen: u32,
    /// Real-time (SCHED_FIFO) priority of the forwarding thread, 0 for none. With it the
    /// emulator keeps sub-millisecond timing while builds or other tests load the CPUs.
    pub realtime_priority: i32,
    /// Whether a link that [carries super-packets](Link::carries_super_packets) gets
    /// them: the devices' checksum and TCP segmentation offloads are turned on while it
    /// runs. Links that shape always see one packet at a time.
    pub offload: bool,
}

impl Default for TopologyConfig {
    fn default() -> Self {
        TopologyConfig {
            server_addrs: 1,
            preferred_addrs: Vec::new(),
            mtu: 1500,
            txqueuelen: 1000,
            realtime_priority: 50,
            offload: true,
        }
    }
}

/// Kernel-side statistics of a TUN device (`/proc/net/dev`), where the kernel counts the
/// packets it could not hand to the emulator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TunStats {
    /// Packets the emulator wrote (kernel "rx").
    pub written: u64,
    /// Written packets the kernel dropped.
    pub written_dropped: u64,
    /// Packets the kernel queued for the emulator (kernel "tx").
    pub queued: u64,
    /// Packets dropped because the emulator did not read fast enough.
    pub queued_dropped: u64,
}

struct Running {
    shared: Arc<Shared>,
    thread: JoinHandle<(Link, ForwardStats, Tun, Tun)>,
}

/// A client namespace and a server namespace joined by an emulated link.
///
/// Dropping it stops the link and deletes both namespaces (which removes their devices
/// and addresses). Creating one first deletes namespaces left by crashed runs.
pub struct Topology {
    client: Netns,
    server: Netns,
    tuns: Option<(Tun, Tun)>,
    client_addr: Ipv4Addr,
    server_addrs: Vec<Ipv4Addr>,
    mtu: u32,
    realtime_priority: i32,
    offload: bool,
    running: Option<Running>,
    last_stats: ForwardStats,
}

static SEQ: AtomicU32 = AtomicU32::new(0);

fn server_addr(i: usize) -> Ipv4Addr {
    let base = u32::from(Ipv4Addr::new(100, 65, 0, 0));
    Ipv4Addr::from(base + 1 + i as u32 + (i as u32 / 254) * 2)
}

/// Whether `a` can be a server address inside the topology's own namespace: anything a
/// host could have on the internet or a private network, but not loopback, link-local,
/// multicast, broadcast, unspecified, "this network" (0.0.0.0/8), reserved (240.0.0.0/4),
/// or the shared address space 100.64.0.0/10 the topology numbers its own ends from.
pub fn usable_server_addr(a: Ipv4Addr) -> bool {
    let o = a.octets();
    !(a.is_loopback()
        || a.is_link_local()
        || a.is_multicast()
        || a.is_broadcast()
        || o[0] == 0
        || o[0] >= 240
        || (o[0] == 100 && (64..128).contains(&o[1])))
}

/// The server addresses of `cfg`: the usable preferred ones in their places, fresh ones
/// (from 100.65.0.1 on) elsewhere, no address twice.
fn server_addrs_of(cfg: &TopologyConfig) -> Vec<Ipv4Addr> {
    let n = cfg.server_addrs.max(cfg.preferred_addrs.len()).max(1);
    let mut taken: std::collections::HashSet<Ipv4Addr> = std::collections::HashSet::new();
    let mut placed: Vec<Option<Ipv4Addr>> = (0..n)
        .map(|i| {
            cfg.preferred_addrs
                .get(i)
                .copied()
                .flatten()
                .filter(|a| usable_server_addr(*a) && taken.insert(*a))
        })
        .collect();
    let mut fresh = (0..).map(server_addr).filter(|a| !taken.contains(a));
    for p in &mut placed {
        if p.is_none() {
            *p = fresh.next();
        }
    }
    placed.into_iter().flatten().collect()
}

fn create_tun_in(ns: &Netns, name: &str) -> io::Result<Tun> {
    let fd = ns.fd();
    let name = name.to_string();
    std::thread::scope(|s| {
        s.spawn(move || {
            netns::enter(fd)?;
            // No IPv6 chatter (router solicitations, MLD) on the emulated link.
            let _ = std::fs::write("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
            let _ = std::fs::write("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
            Tun::create(&name)
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("TUN creation thread panicked")))
    })
}

impl Topology {
    /// Builds both namespaces, their TUN devices, addresses and routes.
    pub fn create(cfg: &TopologyConfig) -> io::Result<Topology> {
        netns::remove_stale();
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}{}-{n}", netns::PREFIX, std::process::id());
        let client = Netns::create(&format!("{id}c"))?;
        let server = Netns::create(&format!("{id}s"))?;
        let ctun = create_tun_in(&client, &format!("{id}c"))?;
        let stun = create_tun_in(&server, &format!("{id}s"))?;
        let client_addr = Ipv4Addr::new(100, 64, 0, 1);
        let server_addrs = server_addrs_of(cfg);
        let dev_up = |dev: &str| {
            format!(
                "link set lo up\nlink set dev {dev} mtu {} txqueuelen {} up\n",
                cfg.mtu, cfg.txqueuelen
            )
        };
        client.ip_batch(&format!(
            "{}addr add {client_addr}/32 dev {}\nroute add default dev {} src {client_addr}\n",
            dev_up(ctun.name()),
            ctun.name(),
            ctun.name()
        ))?;
        let mut s = dev_up(stun.name());
        for a in &server_addrs {
            s += &format!("addr add {a}/32 dev {}\n", stun.name());
        }
        s += &format!(
            "route add default dev {} src {}\n",
            stun.name(),
            server_addrs[0]
        );
        server.ip_batch(&s)?;
        Ok(Topology {
            client,
            server,
            tuns: Some((ctun, stun)),
            client_addr,
            server_addrs,
            mtu: cfg.mtu,
            realtime_priority: cfg.realtime_priority,
            offload: cfg.offload,
            running: None,
            last_stats: ForwardStats::default(),
        })
    }

    fn ns(&self, side: Side) -> &Netns {
        match side {
            Side::Client => &self.client,
            Side::Server => &self.server,
        }
    }

    /// The namespace name of `side` (for `ip netns exec`).
    pub fn netns_name(&self, side: Side) -> &str {
        self.ns(side).name()
    }

    /// The client's address.
    pub fn client_addr(&self) -> Ipv4Addr {
        self.client_addr
    }

    /// The server side's addresses, one per origin.
    pub fn server_addrs(&self) -> &[Ipv4Addr] {
        &self.server_addrs
    }

    /// A command that runs `program` inside `side`'s namespace. Spawn it while the
    /// topology exists.
    pub fn command(&self, side: Side, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        let fd = self.ns(side).fd();
        // SAFETY: the closure only calls setns(2), which is async-signal-safe.
        unsafe {
            cmd.pre_exec(move || netns::enter(fd));
        }
        cmd
    }

    /// Runs `f` on a new thread inside `side`'s namespace: sockets it opens live there.
    pub fn spawn_in<F, T>(&self, side: Side, f: F) -> JoinHandle<io::Result<T>>
    where
        F: FnOnce() -> io::Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let ns_file = std::fs::File::open(format!("/run/netns/{}", self.ns(side).name()));
        std::thread::spawn(move || {
            use std::os::fd::AsRawFd;
            let file = ns_file?;
            netns::enter(file.as_raw_fd())?;
            f()
        })
    }

    /// Starts forwarding through a link built from `cfg`.
    pub fn start_link(&mut self, cfg: &LinkConfig) -> io::Result<()> {
        self.start(Link::new(cfg))
    }

    /// Starts forwarding through `link` (e.g. one with packet logs attached). The link
    /// starts empty: packets the namespaces sent while no link ran (a previous load's
    /// last retransmissions, resets and data) are discarded, counted as stale, rather
    /// than queued ahead of the new link's first packets.
    pub fn start(&mut self, mut link: Link) -> io::Result<()> {
        let (ctun, stun) = self
            .tuns
            .take()
            .ok_or_else(|| io::Error::other("link already running"))?;
        // Offloads on only for a link that forwards super-packets as it would their
        // segments; off otherwise (a previous link may have turned them on).
        let offload = self.offload && link.carries_super_packets();
        if let Err(e) = ctun
            .set_offload(offload)
            .and_then(|()| stun.set_offload(offload))
        {
            self.tuns = Some((ctun, stun));
            return Err(io::Error::other(format!("TUN offloads: {e}")));
        }
        let stale = ctun
            .discard_queued(MAX_STALE)
            .and_then(|up| Ok((up, stun.discard_queued(MAX_STALE)?)));
        match stale {
            Ok((up, down)) => link.count_stale(up, down),
            Err(e) => {
                self.tuns = Some((ctun, stun));
                return Err(io::Error::other(format!("emptying the TUN devices: {e}")));
            }
        }
        let shared = Arc::new(Shared::default());
        let sh = shared.clone();
        let mtu = self.mtu as usize;
        let prio = self.realtime_priority;
        let thread = std::thread::Builder::new()
            .name("linkem-forward".into())
            .spawn(move || {
                if prio > 0 {
                    // Best effort: without the privilege the link still runs, less precisely.
                    let _ = forward::make_realtime(prio);
                }
                let (link, stats) = forward::run(link, &ctun, &stun, mtu, offload, &sh);
                (link, stats, ctun, stun)
            })?;
        self.running = Some(Running { shared, thread });
        Ok(())
    }

    /// The counters so far (zero if no link ever ran).
    pub fn counters(&self) -> Counters {
        match &self.running {
            Some(r) => *r.shared.counters.lock().unwrap_or_else(|e| e.into_inner()),
            None => Counters::default(),
        }
    }

    /// How late the running link wrote packets: totals since it started, and the largest
    /// lateness since the previous call, which starts again from zero (default if no
    /// link runs). One reader per link: each call takes the maximum from the next.
    pub fn take_lateness(&self) -> Lateness {
        match &self.running {
            Some(r) => {
                let mut l = r.shared.lateness.lock().unwrap_or_else(|e| e.into_inner());
                let now = *l;
                l.late_max = Duration::ZERO;
                now
            }
            None => Lateness::default(),
        }
    }

    /// Stops the link and returns its final counters (default if none was running).
    pub fn stop_link(&mut self) -> Counters {
        let Some(r) = self.running.take() else {
            return Counters::default();
        };
        r.shared.stop.store(true, Ordering::Relaxed);
        match r.thread.join() {
            Ok((link, stats, c, s)) => {
                self.tuns = Some((c, s));
                self.last_stats = stats;
                *link.counters()
            }
            Err(_) => *r.shared.counters.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// CPU time used so far by the running forwarding thread.
    pub fn forward_cpu_time(&self) -> Option<Duration> {
        use std::os::unix::thread::JoinHandleExt;
        let r = self.running.as_ref()?;
        let mut clock: libc::clockid_t = 0;
        // SAFETY: the thread is alive (joined only in stop_link); both calls write one value.
        unsafe {
            if libc::pthread_getcpuclockid(r.thread.as_pthread_t(), &mut clock) != 0 {
                return None;
            }
            let mut ts: libc::timespec = std::mem::zeroed();
            if libc::clock_gettime(clock, &mut ts) != 0 {
                return None;
            }
            Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
        }
    }

    /// What the forwarding thread measured about itself in its last run.
    pub fn forward_stats(&self) -> ForwardStats {
        self.last_stats
    }

    /// Kernel statistics of `side`'s TUN device.
    pub fn tun_stats(&self, side: Side) -> io::Result<TunStats> {
        let dev = format!("{}:", self.ns(side).name());
        let text = self
            .spawn_in(side, || {
                std::fs::read_to_string("/proc/thread-self/net/dev")
            })
            .join()
            .map_err(|_| io::Error::other("stats thread panicked"))??;
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(&dev))
            .ok_or_else(|| io::Error::other(format!("device {dev} not found")))?;
        let v: Vec<u64> = line
            .split_once(':')
            .map(|x| x.1)
            .unwrap_or("")
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        if v.len() < 16 {
            return Err(io::Error::other("short /proc/net/dev line"));
        }
        Ok(TunStats {
            written: v[1],
            written_dropped: v[3],
            queued: v[9],
            queued_dropped: v[11],
        })
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        self.stop_link();
        self.tuns = None;
        // The namespaces are deleted by their own Drop.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_addresses_skip_network_and_broadcast_bytes() {
        assert_eq!(server_addr(0), Ipv4Addr::new(100, 65, 0, 1));
        assert_eq!(server_addr(253), Ipv4Addr::new(100, 65, 0, 254));
        assert_eq!(server_addr(254), Ipv4Addr::new(100, 65, 1, 1));
    }

    #[test]
    fn preferred_addresses_take_their_places_when_usable() {
        let a = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        let cfg = TopologyConfig {
            server_addrs: 2,
            preferred_addrs: vec![
                Some(a("203.0.113.5")),
                None,
                Some(a("127.0.0.2")),
                Some(a("100.65.0.1")),
                Some(a("203.0.113.5")),
                Some(a("10.1.2.3")),
            ],
            ..Default::default()
        };
        // Loopback, the lab's own range and a repeat get fresh addresses, skipping none
        // that is already placed.
        assert_eq!(
            server_addrs_of(&cfg),
            vec![
                a("203.0.113.5"),
                a("100.65.0.1"),
                a("100.65.0.2"),
                a("100.65.0.3"),
                a("100.65.0.4"),
                a("10.1.2.3"),
            ]
        );
        let plain = TopologyConfig {
            server_addrs: 3,
            ..Default::default()
        };
        assert_eq!(server_addrs_of(&plain).len(), 3);
        for bad in [
            "169.254.1.1",
            "224.0.0.1",
            "255.255.255.255",
            "0.1.2.3",
            "100.100.0.1",
        ] {
            assert!(!usable_server_addr(a(bad)), "{bad}");
        }
        assert!(usable_server_addr(a("142.250.1.1")) && usable_server_addr(a("192.168.1.1")));
    }
}
