//! Helpers for the namespace tests: serialisation, topology set-up, TCP bulk transfer and
//! UDP echo, all with bounded loops.
#![allow(dead_code)]

use linkem::{LinkConfig, Side, Topology, TopologyConfig};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

/// Namespace tests run one at a time: they measure timing.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// True if this process can build namespaces (root and /dev/net/tun).
pub fn can_run() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let ok = root && std::path::Path::new("/dev/net/tun").exists();
    if !ok {
        eprintln!("SKIPPED: namespace tests need root and /dev/net/tun");
    }
    ok
}

/// A topology with a running link; dropped (and torn down) even if the test panics.
pub fn start(cfg: &LinkConfig) -> Topology {
    let mut t = Topology::create(&TopologyConfig::default()).expect("create topology");
    t.start_link(cfg).expect("start link");
    t
}

pub fn server_addr(t: &Topology, port: u16) -> SocketAddr {
    (t.server_addrs()[0], port).into()
}

pub fn set_rcvbuf(fd: i32, bytes: i32) {
    // SAFETY: setsockopt with a valid int value.
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

fn tcp_maxseg(s: &TcpStream) -> u32 {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes one int.
    unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_MAXSEG,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        );
    }
    v as u32
}

/// Result of a bulk transfer: IP-level rate in bit/s over the window, and details.
pub struct Bulk {
    pub ip_bps: f64,
    pub goodput_bps: f64,
    pub mss: u32,
    pub window_secs: f64,
}

/// A bulk TCP transfer server → client (downlink) or client → server (uplink); the
/// receiver measures from `warmup` to `total` after its first byte and then closes.
pub fn bulk_tcp(t: &Topology, down: bool, port: u16, warmup: Duration, total: Duration) -> Bulk {
    let addr = server_addr(t, port);
    let (send_side, recv_side) = if down {
        (Side::Server, Side::Client)
    } else {
        (Side::Client, Side::Server)
    };
    let listener = t
        .spawn_in(Side::Server, move || TcpListener::bind(addr))
        .join()
        .unwrap()
        .expect("bind");
    let listener = std::sync::Arc::new(listener);
    let connect = move || -> io::Result<TcpStream> {
        let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        s.set_nodelay(true)?;
        Ok(s)
    };
    let l2 = listener.clone();
    let accept = move || -> io::Result<TcpStream> {
        l2.set_nonblocking(false)?;
        Ok(l2.accept()?.0)
    };
    // The sender: writes until the receiver closes (bounded by a deadline anyway).
    let deadline = total + Duration::from_secs(10);
    let sender = t.spawn_in(send_side, move || {
        let mut s = if down { accept()? } else { connect()? };
        let buf = vec![0x5au8; 128 * 1024];
        let end = Instant::now() + deadline;
        while Instant::now() < end {
            if s.write_all(&buf).is_err() {
                break;
            }
        }
        Ok(())
    });
    let l3 = listener.clone();
    let receiver = t.spawn_in(recv_side, move || {
        let mut s = if down {
            connect()?
        } else {
            l3.set_nonblocking(false)?;
            l3.accept()?.0
        };
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        let mut buf = vec![0u8; 256 * 1024];
        let mut total_bytes = 0u64;
        let mut first: Option<Instant> = None;
        let mut mark: Option<(Instant, u64)> = None;
        let mut last = (Instant::now(), 0u64);
        loop {
            let n = s.read(&mut buf)?;
            if n == 0 {
                break;
            }
            let now = Instant::now();
            total_bytes += n as u64;
            let f = *first.get_or_insert(now);
            if mark.is_none() && now - f >= warmup {
                mark = Some((now, total_bytes));
            }
            last = (now, total_bytes);
            if now - f >= total {
                break;
            }
        }
        let mss = tcp_maxseg(&s);
        drop(s);
        let (t1, b1) = mark.expect("transfer lasted past the warm-up");
        let secs = (last.0 - t1).as_secs_f64();
        Ok(((last.1 - b1) as f64 * 8.0 / secs, secs, mss))
    });
    let (goodput, secs, mss) = receiver.join().unwrap().expect("receiver");
    sender.join().unwrap().expect("sender");
    // Every full segment is MSS payload + 20 IP + 20 TCP + 12 timestamp option bytes.
    let ip = goodput * (mss as f64 + 52.0) / mss as f64;
    Bulk {
        ip_bps: ip,
        goodput_bps: goodput,
        mss,
        window_secs: secs,
    }
}

/// Most datagrams an echo server answers before it stops on its own.
pub const ECHO_MAX_PACKETS: u64 = 100_000;

/// Starts a UDP echo server on the server side; it stops after `idle` without packets
/// (or after [`ECHO_MAX_PACKETS`]).
pub fn udp_echo_server(
    t: &Topology,
    port: u16,
    idle: Duration,
) -> std::thread::JoinHandle<io::Result<u64>> {
    let addr = server_addr(t, port);
    let bound = std::sync::Arc::new(std::sync::Barrier::new(2));
    let b2 = bound.clone();
    let h = t.spawn_in(Side::Server, move || {
        realtime();
        let s = UdpSocket::bind(addr);
        b2.wait();
        let s = s?;
        s.set_read_timeout(Some(idle))?;
        let mut buf = [0u8; 2048];
        let mut n = 0;
        while n < ECHO_MAX_PACKETS {
            let Ok((len, from)) = s.recv_from(&mut buf) else {
                break;
            };
            s.send_to(&buf[..len], from)?;
            n += 1;
        }
        Ok(n)
    });
    bound.wait();
    h
}

/// A UDP client socket in the client namespace, connected to `addr`.
pub fn with_client<T: Send + 'static>(
    t: &Topology,
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> T {
    t.spawn_in(Side::Client, f).join().unwrap().expect("client")
}

/// Real-time priority for a measuring thread, so the test's own scheduling delays do not
/// pollute what it measures (best effort).
pub fn realtime() {
    let _ = linkem::io::forward::make_realtime(40);
}

/// One echo round trip of `size` bytes, in milliseconds. Answers to earlier pings are
/// skipped; an error after 3 s (or 1,000 stray answers) without this one's.
pub fn ping(s: &UdpSocket, seq: u32, size: usize) -> io::Result<f64> {
    let mut msg = vec![0u8; size.max(4)];
    msg[..4].copy_from_slice(&seq.to_be_bytes());
    let t0 = Instant::now();
    s.send(&msg)?;
    let mut buf = [0u8; 2048];
    for _ in 0..1000 {
        let n = s.recv(&mut buf)?;
        if n >= 4 && buf[..4] == seq.to_be_bytes() {
            return Ok(t0.elapsed().as_secs_f64() * 1e3);
        }
        if t0.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        format!("no answer to ping {seq}"),
    ))
}

pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let idx = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[idx]
}

/// Every check of a test, so that all measured values are printed before it fails.
#[derive(Default)]
pub struct Checks(Vec<String>);

impl Checks {
    /// `x` must lie in `[want - below, want + above]`.
    pub fn within(&mut self, what: &str, x: f64, want: f64, below: f64, above: f64) {
        let ok = x >= want - below && x <= want + above;
        let line = format!("{what}: {x:.3} (want {want} -{below}/+{above})");
        eprintln!("{line}{}", if ok { "" } else { "  FAIL" });
        if !ok {
            self.0.push(line);
        }
    }

    /// Fails the test, listing every failed check.
    pub fn finish(&self) {
        assert!(self.0.is_empty(), "failed checks:\n{}", self.0.join("\n"));
    }
}
