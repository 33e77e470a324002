//! The forwarding-ceiling benchmark behind `speedy link --bench`: blasts 1500-byte UDP
//! packets, then one bulk TCP stream, from the client to the server namespace through the
//! running link, and reports the delivered rate, the forwarding thread's CPU time per
//! packet and every drop (emulator and kernel TUN queues).

use crate::io::topology::{Side, Topology};
use crate::stage::DropCause;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// One measurement.
#[derive(Clone, Debug, Default)]
pub struct Measurement {
    /// What was sent.
    pub name: String,
    /// Seconds measured at the receiver.
    pub secs: f64,
    /// IP packets the link forwarded (uplink).
    pub packets: u64,
    /// Uplink packets per read from the client's device (above 1 when the link carries
    /// TCP super-packets).
    pub packets_per_read: f64,
    /// IP bytes the link forwarded (uplink), per second, as Mbit/s.
    pub link_mbit: f64,
    /// Application bytes received, as Mbit/s.
    pub goodput_mbit: f64,
    /// Forwarding-thread CPU time per forwarded packet (both directions), µs.
    pub cpu_us_per_packet: f64,
    /// Forwarding-thread CPU use, fraction of one core.
    pub cpu_share: f64,
    /// Packets the kernel dropped at the client TUN (emulator too slow to read).
    pub kernel_tun_drops: u64,
    /// Packets the emulator failed to write to a TUN device.
    pub tun_write_drops: u64,
}

/// Results of [`run`].
#[derive(Clone, Debug, Default)]
pub struct BenchReport {
    /// UDP blast then TCP bulk.
    pub results: Vec<Measurement>,
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<14} {:>6} {:>10} {:>9} {:>11} {:>11} {:>10} {:>8} {:>11} {:>10}",
            "test",
            "secs",
            "packets",
            "pkts/read",
            "link Mbit/s",
            "goodput",
            "CPU µs/pkt",
            "CPU %",
            "kernel drop",
            "tun-write"
        )?;
        for m in &self.results {
            writeln!(
                f,
                "{:<14} {:>6.2} {:>10} {:>9.1} {:>11.1} {:>11.1} {:>10.2} {:>7.0}% {:>11} {:>10}",
                m.name,
                m.secs,
                m.packets,
                m.packets_per_read,
                m.link_mbit,
                m.goodput_mbit,
                m.cpu_us_per_packet,
                m.cpu_share * 100.0,
                m.kernel_tun_drops,
                m.tun_write_drops
            )?;
        }
        Ok(())
    }
}

fn set_rcvbuf(fd: i32, bytes: i32) {
    // SAFETY: setsockopt with a valid int option value.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&bytes as *const i32).cast(),
            std::mem::size_of::<i32>() as u32,
        );
    }
}

fn measure(
    topo: &Topology,
    name: &str,
    body: impl FnOnce() -> io::Result<(f64, u64)>,
) -> io::Result<Measurement> {
    let c0 = topo.counters();
    let cpu0 = topo.forward_cpu_time().unwrap_or_default();
    let k0 = topo.tun_stats(Side::Client)?;
    let t0 = Instant::now();
    let (secs, app_bytes) = body()?;
    let wall = t0.elapsed().as_secs_f64();
    let c1 = topo.counters();
    let cpu1 = topo.forward_cpu_time().unwrap_or_default();
    let k1 = topo.tun_stats(Side::Client)?;
    let up_pkts = c1.up.packets_out - c0.up.packets_out;
    let all_pkts = up_pkts + c1.down.packets_out - c0.down.packets_out;
    let cpu = (cpu1 - cpu0).as_secs_f64();
    let tun_write = |c: &crate::Counters| {
        c.up.dropped(DropCause::TunWrite) + c.down.dropped(DropCause::TunWrite)
    };
    Ok(Measurement {
        name: name.into(),
        secs,
        packets: up_pkts,
        packets_per_read: (c1.up.packets_in - c0.up.packets_in) as f64
            / (c1.up.reads - c0.up.reads).max(1) as f64,
        link_mbit: (c1.up.bytes_out - c0.up.bytes_out) as f64 * 8.0 / wall / 1e6,
        goodput_mbit: app_bytes as f64 * 8.0 / secs / 1e6,
        cpu_us_per_packet: cpu * 1e6 / all_pkts.max(1) as f64,
        cpu_share: cpu / wall,
        kernel_tun_drops: k1.queued_dropped - k0.queued_dropped,
        tun_write_drops: tun_write(&c1) - tun_write(&c0),
    })
}

/// Runs the UDP and TCP measurements, `each` long, through `topo`'s running link.
pub fn run(topo: &mut Topology, each: Duration, stop: fn() -> bool) -> io::Result<BenchReport> {
    let server: SocketAddr = (topo.server_addrs()[0], 5201).into();
    let mut report = BenchReport::default();

    let udp = measure(topo, "udp-1500", || {
        let rx = topo.spawn_in(Side::Server, move || {
            let s = UdpSocket::bind(server)?;
            set_rcvbuf(s.as_raw_fd(), 16 << 20);
            s.set_read_timeout(Some(Duration::from_millis(300)))?;
            let mut buf = [0u8; 2048];
            let mut bytes = 0u64;
            let mut first: Option<Instant> = None;
            let mut last = Instant::now();
            // With a rate limit the queue may hold more than can drain: stop anyway.
            let give_up = Instant::now() + each + Duration::from_secs(1);
            while let Ok(n) = s.recv(&mut buf) {
                if n == 1 || Instant::now() > give_up {
                    break;
                }
                first.get_or_insert_with(Instant::now);
                last = Instant::now();
                bytes += n as u64;
            }
            let secs = first.map_or(0.0, |f| (last - f).as_secs_f64());
            Ok((secs, bytes))
        });
        std::thread::sleep(Duration::from_millis(100));
        let tx = topo.spawn_in(Side::Client, move || {
            let s = UdpSocket::bind("0.0.0.0:0")?;
            s.connect(server)?;
            let payload = [0u8; 1472];
            let end = Instant::now() + each;
            while Instant::now() < end && !stop() {
                for _ in 0..64 {
                    let _ = s.send(&payload);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
            for _ in 0..5 {
                let _ = s.send(&[0]);
            }
            Ok(())
        });
        tx.join()
            .map_err(|_| io::Error::other("sender panicked"))??;
        rx.join()
            .map_err(|_| io::Error::other("receiver panicked"))?
    })?;
    report.results.push(udp);

    let tcp = measure(topo, "tcp-bulk", || {
        let listener = topo.spawn_in(Side::Server, move || TcpListener::bind(server));
        let listener = listener
            .join()
            .map_err(|_| io::Error::other("bind panicked"))??;
        let rx = std::thread::spawn(move || -> io::Result<(f64, u64)> {
            let (mut c, _) = listener.accept()?;
            let mut buf = vec![0u8; 256 * 1024];
            let mut bytes = 0u64;
            let start = Instant::now();
            loop {
                let n = c.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                bytes += n as u64;
            }
            Ok((start.elapsed().as_secs_f64(), bytes))
        });
        let tx = topo.spawn_in(Side::Client, move || {
            let mut c = TcpStream::connect(server)?;
            let buf = vec![0u8; 256 * 1024];
            let end = Instant::now() + each;
            while Instant::now() < end && !stop() {
                c.write_all(&buf)?;
            }
            Ok(())
        });
        tx.join()
            .map_err(|_| io::Error::other("sender panicked"))??;
        rx.join()
            .map_err(|_| io::Error::other("receiver panicked"))?
    })?;
    report.results.push(tcp);
    Ok(report)
}
