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

/// A link that only delays, `delay` each way.
pub fn delay_only(delay: Duration) -> LinkConfig {
    let dir = linkem::DirectionConfig {
        delay,
        ..Default::default()
    };
    LinkConfig {
        up: dir.clone(),
        down: dir,
        ..Default::default()
    }
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
        kernel_timestamps(&s)?;
        let mut buf = [0u8; 2048];
        let mut n = 0;
        while n < ECHO_MAX_PACKETS {
            let Ok((len, from, arrived)) = recv_stamped(&s, &mut buf) else {
                break;
            };
            // How long the datagram waited for this thread: the client takes it off its
            // round trip, which is then the network path's alone.
            if len >= 12 {
                buf[4..12].copy_from_slice(&(realtime_ns() - arrived).to_be_bytes());
            }
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

/// One echo round trip of `size` bytes (at least 12), in milliseconds, as the network path
/// took it: from just before the send to the kernel's receive time of the answer, less the
/// time the answer's datagram waited for the echo thread. The measuring threads' own
/// wake-ups are host noise, not the link's: on this VM they added 0.4-0.8 ms to a 100 ms
/// round trip (docs/linkem.md, "Accuracy"). Answers to earlier pings are skipped; an error
/// after 3 s (or 1,000 stray answers) without this one's.
pub fn ping(s: &UdpSocket, seq: u32, size: usize) -> io::Result<f64> {
    kernel_timestamps(s)?;
    let mut msg = vec![0u8; size.max(12)];
    msg[..4].copy_from_slice(&seq.to_be_bytes());
    let t0 = Instant::now();
    let sent = realtime_ns();
    s.send(&msg)?;
    let mut buf = [0u8; 2048];
    for _ in 0..1000 {
        let (n, _, arrived) = recv_stamped(s, &mut buf)?;
        if n >= 12 && buf[..4] == seq.to_be_bytes() {
            let held = i64::from_be_bytes(buf[4..12].try_into().unwrap());
            return Ok((arrived - sent - held) as f64 / 1e6);
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

/// CLOCK_REALTIME in nanoseconds, the clock of the kernel's receive timestamps.
fn realtime_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Asks the kernel to stamp each datagram `s` receives with its arrival time.
fn kernel_timestamps(s: &UdpSocket) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket and option value of the size given.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &on as *const _ as *const libc::c_void,
            std::mem::size_of_val(&on) as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One datagram, its sender and its kernel arrival time (CLOCK_REALTIME ns); the read
/// timeout set on `s` applies.
fn recv_stamped(s: &UdpSocket, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, i64)> {
    // SAFETY: zeroed sockaddr_storage, msghdr and control buffer are valid initial values;
    // recvmsg writes within the lengths given; CMSG_* walk the control buffer it filled.
    unsafe {
        let mut from: libc::sockaddr_storage = std::mem::zeroed();
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        let mut control = [0u64; 16];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_name = &mut from as *mut _ as *mut libc::c_void;
        msg.msg_namelen = std::mem::size_of_val(&from) as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&control);
        let n = libc::recvmsg(s.as_raw_fd(), &mut msg, 0);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut arrived = None;
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                arrived = Some(ts.tv_sec * 1_000_000_000 + ts.tv_nsec);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        let arrived = arrived.ok_or_else(|| io::Error::other("datagram without a timestamp"))?;
        let addr = match from.ss_family as libc::c_int {
            libc::AF_INET => {
                let a = &*(&from as *const _ as *const libc::sockaddr_in);
                SocketAddr::from((
                    u32::from_be(a.sin_addr.s_addr).to_be_bytes(),
                    u16::from_be(a.sin_port),
                ))
            }
            f => return Err(io::Error::other(format!("address family {f}"))),
        };
        Ok((n as usize, addr, arrived))
    }
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

    /// Whether every check so far passed.
    pub fn passed(&self) -> bool {
        self.0.is_empty()
    }

    /// Fails the test, listing every failed check.
    pub fn finish(&self) {
        assert!(self.0.is_empty(), "failed checks:\n{}", self.0.join("\n"));
    }
}
