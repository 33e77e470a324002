//! The kernel's view of TCP connections (`getsockopt(TCP_INFO)`): a snapshot per
//! connection ([`TcpInfo`], what the loader reports at a connection's end) and a
//! sender-side time series of a server's connections ([`TcpSeries`]: congestion window,
//! slow-start threshold, bytes in flight, RTT and RTO, retransmissions, sampled every few
//! milliseconds), the figures of the cellular study's Figs 10-12 and 17.
//!
//! The series samples sockets it does not own: it keeps each one's descriptor number and
//! inode, and drops a socket as soon as the descriptor no longer names that inode (the
//! connection closed and the number may have been reused), so it never holds a
//! connection open and never reports another socket under its name.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A snapshot of one connection, as the loader reports it at a connection's end.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct TcpInfo {
    /// Smoothed RTT, µs.
    pub rtt_us: u32,
    /// RTT variance, µs.
    pub rttvar_us: u32,
    /// Minimum RTT seen, µs.
    pub min_rtt_us: u32,
    /// Congestion window, segments.
    pub snd_cwnd: u32,
    /// Slow-start threshold, segments.
    pub snd_ssthresh: u32,
    /// Sender MSS, bytes.
    pub snd_mss: u32,
    /// Segments retransmitted over the connection's life.
    pub total_retrans: u32,
    /// Segments currently considered lost.
    pub lost: u32,
    /// Bytes acknowledged by the peer.
    pub bytes_acked: u64,
    /// Bytes received.
    pub bytes_received: u64,
    /// Segments sent.
    pub segs_out: u32,
    /// Segments received.
    pub segs_in: u32,
}

/// `getsockopt(TCP_INFO)` on a descriptor.
#[cfg(target_os = "linux")]
fn raw(fd: RawFd) -> Option<libc::tcp_info> {
    // SAFETY: tcp_info is plain old data; getsockopt writes at most `len` bytes into it.
    // A descriptor that is not (or no longer) a TCP socket makes the call fail.
    let mut ti: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut ti as *mut libc::tcp_info as *mut libc::c_void,
            &mut len,
        )
    };
    (r == 0).then_some(ti)
}

#[cfg(not(target_os = "linux"))]
fn raw(_fd: RawFd) -> Option<()> {
    None
}

/// Reads TCP_INFO of a socket.
pub fn tcp_info(fd: &impl AsRawFd) -> Option<TcpInfo> {
    #[cfg(target_os = "linux")]
    {
        raw(fd.as_raw_fd()).map(|ti| TcpInfo::from_raw(&ti))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = raw(fd.as_raw_fd());
        None
    }
}

#[cfg(target_os = "linux")]
impl TcpInfo {
    fn from_raw(ti: &libc::tcp_info) -> TcpInfo {
        TcpInfo {
            rtt_us: ti.tcpi_rtt,
            rttvar_us: ti.tcpi_rttvar,
            min_rtt_us: ti.tcpi_min_rtt,
            snd_cwnd: ti.tcpi_snd_cwnd,
            snd_ssthresh: ti.tcpi_snd_ssthresh,
            snd_mss: ti.tcpi_snd_mss,
            total_retrans: ti.tcpi_total_retrans,
            lost: ti.tcpi_lost,
            bytes_acked: ti.tcpi_bytes_acked,
            bytes_received: ti.tcpi_bytes_received,
            segs_out: ti.tcpi_segs_out,
            segs_in: ti.tcpi_segs_in,
        }
    }

    /// A `struct tcp_info` as the kernel wrote it (a `sock_diag` attribute, which may
    /// be shorter or longer than this build's struct: missing fields read as 0).
    pub fn from_kernel_bytes(b: &[u8]) -> TcpInfo {
        // SAFETY: tcp_info is plain old data (all-zero valid); at most its size is copied.
        let mut ti: libc::tcp_info = unsafe { std::mem::zeroed() };
        let n = b.len().min(std::mem::size_of::<libc::tcp_info>());
        unsafe {
            std::ptr::copy_nonoverlapping(b.as_ptr(), (&mut ti as *mut libc::tcp_info).cast(), n)
        };
        TcpInfo::from_raw(&ti)
    }
}

/// One sample of a connection's sender state: one JSON line of a `--tcp-series` file,
/// which `speedy serve` and `speedy proxy` write and the lab's report reads. Every field
/// is required when reading but `version` (absent in lines from before it: 1).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TcpSample {
    /// Milliseconds since the series started.
    pub t_ms: f64,
    /// The connection's number in this series (in accept order).
    pub conn: u64,
    /// The peer's address.
    pub peer: String,
    /// Congestion window, segments.
    pub cwnd: u32,
    /// Slow-start threshold, segments (2^31-1 before the first loss).
    pub ssthresh: u32,
    /// Segments sent and not yet acknowledged.
    pub unacked: u32,
    /// Bytes in flight (`unacked` × MSS).
    pub in_flight_bytes: u64,
    /// Smoothed RTT, µs.
    pub rtt_us: u32,
    /// Retransmission timeout, µs.
    pub rto_us: u32,
    /// Retransmissions of the segment being retransmitted now (back-off count).
    pub retransmits: u8,
    /// Segments retransmitted over the connection's life.
    pub total_retrans: u32,
    /// Congestion-avoidance state (0 open, 1 disorder, 2 CWR, 3 recovery, 4 loss).
    pub ca_state: u8,
    /// Bytes acknowledged by the peer.
    pub bytes_acked: u64,
    /// The line's format version ([`TCP_SAMPLE_VERSION`]).
    #[serde(default = "speedy_records::version::first")]
    pub version: u32,
}

/// The format version of [`TcpSample`] this build writes.
pub const TCP_SAMPLE_VERSION: u32 = 1;

impl speedy_records::version::Versioned for TcpSample {
    const NAME: &'static str = "a TCP series line";
    const CURRENT: u32 = TCP_SAMPLE_VERSION;
    fn version(&self) -> u32 {
        self.version
    }
}

struct Watched {
    fd: RawFd,
    inode: u64,
    conn: u64,
    peer: String,
}

/// A sender-side TCP time series of a server's connections, written as JSON lines
/// ([`TcpSample`]) by a task sampling every `interval`.
pub struct TcpSeries {
    watched: Mutex<Vec<Watched>>,
    next: Mutex<u64>,
}

fn inode(fd: RawFd) -> Option<u64> {
    // SAFETY: fstat writes into a plain struct; a bad descriptor makes it fail.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some(st.st_ino as u64)
}

impl TcpSeries {
    /// Starts sampling every `interval` into `out` (one JSON line per sample) on a task
    /// of the current runtime.
    pub fn start(mut out: impl Write + Send + 'static, interval: Duration) -> Arc<TcpSeries> {
        let s = Arc::new(TcpSeries {
            watched: Mutex::new(Vec::new()),
            next: Mutex::new(0),
        });
        let me = Arc::downgrade(&s);
        let t0 = Instant::now();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tick.tick().await;
                let Some(me) = me.upgrade() else { break };
                let lines = me.sample(t0);
                for l in lines {
                    let _ = writeln!(out, "{l}");
                }
                let _ = out.flush();
            }
        });
        s
    }

    /// Adds a connection to the series (until it closes).
    pub fn watch(&self, sock: &impl AsRawFd, peer: std::net::SocketAddr) {
        let fd = sock.as_raw_fd();
        let Some(inode) = inode(fd) else { return };
        let conn = {
            let mut n = self.next.lock().expect("not poisoned");
            *n += 1;
            *n
        };
        self.watched.lock().expect("not poisoned").push(Watched {
            fd,
            inode,
            conn,
            peer: peer.to_string(),
        });
    }

    /// One sample of every live connection, as JSON lines; closed ones are dropped.
    fn sample(&self, t0: Instant) -> Vec<String> {
        let t_ms = (t0.elapsed().as_secs_f64() * 1e6).round() / 1e3;
        let mut lines = Vec::new();
        let mut w = self.watched.lock().expect("not poisoned");
        w.retain(|c| {
            if inode(c.fd) != Some(c.inode) {
                return false;
            }
            #[cfg(target_os = "linux")]
            {
                let Some(ti) = raw(c.fd) else { return false };
                // TCP_CLOSE (7) and later closing states: the connection is over.
                if ti.tcpi_state == 7 {
                    return false;
                }
                let s = TcpSample {
                    t_ms,
                    conn: c.conn,
                    peer: c.peer.clone(),
                    cwnd: ti.tcpi_snd_cwnd,
                    ssthresh: ti.tcpi_snd_ssthresh,
                    unacked: ti.tcpi_unacked,
                    in_flight_bytes: u64::from(ti.tcpi_unacked) * u64::from(ti.tcpi_snd_mss),
                    rtt_us: ti.tcpi_rtt,
                    rto_us: ti.tcpi_rto,
                    retransmits: ti.tcpi_retransmits,
                    total_retrans: ti.tcpi_total_retrans,
                    ca_state: ti.tcpi_ca_state,
                    bytes_acked: ti.tcpi_bytes_acked,
                    version: TCP_SAMPLE_VERSION,
                };
                if let Ok(l) = serde_json::to_string(&s) {
                    lines.push(l);
                }
            }
            true
        });
        lines
    }
}

/// Sets TCP_NOTSENT_LOWAT on `sock` (Linux; best effort: a kernel without it keeps
/// its default).
pub fn set_notsent_lowat(sock: &impl std::os::fd::AsRawFd, bytes: u32) {
    let v = bytes as libc::c_int;
    // SAFETY: a valid socket descriptor and a c_int option value of the size given.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{TcpSample, TCP_SAMPLE_VERSION};

    #[test]
    fn a_series_line_round_trips_and_a_missing_field_is_an_error() {
        let s = TcpSample {
            t_ms: 12.5,
            conn: 2,
            peer: "10.0.0.1:40000".into(),
            cwnd: 10,
            ssthresh: i32::MAX as u32,
            unacked: 3,
            in_flight_bytes: 4380,
            rtt_us: 100_000,
            rto_us: 300_000,
            retransmits: 0,
            total_retrans: 1,
            ca_state: 0,
            bytes_acked: 65_000,
            version: TCP_SAMPLE_VERSION,
        };
        let line = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<TcpSample>(&line).unwrap(), s);
        let without = line.replace(",\"bytes_acked\":65000", "");
        let e = serde_json::from_str::<TcpSample>(&without).unwrap_err();
        assert!(e.to_string().contains("bytes_acked"), "{e}");
        // A line from before the version field reads as version 1; a newer one is refused.
        let old = line.replace(",\"version\":1", "");
        assert_ne!(old, line);
        let o: TcpSample = speedy_records::version::read(&old).unwrap();
        assert_eq!(o.version, 1);
        let newer = line.replace("\"version\":1", "\"version\":9");
        let e = speedy_records::version::read::<TcpSample>(&newer).unwrap_err();
        assert!(e.contains("a TCP series line of version 9"), "{e}");
    }
}
