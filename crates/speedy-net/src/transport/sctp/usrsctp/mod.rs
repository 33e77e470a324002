//! The second SCTP stack: usrsctp (FreeBSD's SCTP in user space, the one browsers use for
//! WebRTC data channels), through Debian's libusrsctp, carrying SPDY with the same
//! frame↔stream mapping as the sctp-proto path ([`super::route::Router`]).
//!
//! **How it is driven: AF_CONN, not usrsctp's own UDP encapsulation.** usrsctp is one
//! stack per process. Its own encapsulation (`usrsctp_init(port, …)`) opens one UDP socket
//! for the whole process at one port, plus raw IPPROTO_SCTP sockets when run as root, and
//! its receive threads: every listener and client of the process would share that one
//! port, where the sctp-proto path gives each listener and each dial a UDP socket of its
//! own (`speedy serve` binds one per origin address; the lab runs several). With AF_CONN
//! the stack sees only opaque addresses and hands its packets to a callback: each
//! listener and dial keeps its own tokio UDP socket, exactly as on the sctp-proto path,
//! and feeds what arrives with `usrsctp_conninput`. It is started with
//! `usrsctp_init_nothreads` (no receive threads, no raw sockets) and its timers are run by
//! one thread of ours every 10 ms ([`stack`]).
//!
//! An AF_CONN address here is a number ([`Link`]'s id, never a pointer the stack could
//! follow), one per UDP peer: a client's dial, or one remote address of a listener. The
//! stack passes it back to [`conn_output`], which looks the link up and sends the packet
//! with a non-blocking send (a full socket buffer is a lost packet, which SCTP repairs).
//! A listener opens, for each new remote address, a usrsctp socket listening on that
//! address only (SCTP port 5000, as the sctp-proto path), so that several listeners in
//! one process never contend for a port.
//!
//! Sockets are non-blocking; their upcalls (called on whichever thread runs the stack:
//! ours for timers, a tokio worker for input) only wake the association's task
//! ([`Waker`]), which does all reading and writing ([`assoc`]).

mod assoc;
mod ffi;
mod listen;

pub(super) use listen::bind;

use super::SctpConfig;
use crate::transport::io::BoxIo;
use libc::{c_int, c_void};
use speedy_records::sctp::Counters;
use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket as StdUdp};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// SCTP's port at both ends (sctp-proto's and `interop/usrsctp`'s).
const SCTP_PORT: u16 = 5000;
/// How long an address stays routed after its association's socket is closed: the
/// SHUTDOWN exchange's last packets.
const LINGER: Duration = Duration::from_secs(5);
/// How often our thread runs the stack's timers (usrsctp's own timer thread's tick).
const TICK: Duration = Duration::from_millis(10);

/// Where one AF_CONN address's packets go: a UDP socket (a client's is connected) and the
/// peer's UDP address.
struct Link {
    sock: StdUdp,
    remote: SocketAddr,
    connected: bool,
}

/// The links by id; ids are never reused, so a late packet for a link that is gone is
/// dropped, never sent to another peer.
static LINKS: OnceLock<Mutex<HashMap<usize, Arc<Link>>>> = OnceLock::new();
/// The wakers of sockets' tasks by id (the upcall's argument).
static WAKERS: OnceLock<Mutex<HashMap<usize, Arc<Notify>>>> = OnceLock::new();
/// The next id for a link or a waker (0 is never used: AF_CONN's null address).
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

fn links() -> &'static Mutex<HashMap<usize, Arc<Link>>> {
    LINKS.get_or_init(Default::default)
}

fn wakers() -> &'static Mutex<HashMap<usize, Arc<Notify>>> {
    WAKERS.get_or_init(Default::default)
}

/// Starts the process's usrsctp stack once: AF_CONN only, no threads of its own, our
/// timer thread. Fails, saying why, where the usrsctp library is not installed.
fn stack() -> io::Result<()> {
    ffi::load().map_err(io::Error::other)?;
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        // SAFETY: called once per process, before any other usrsctp call; the callback
        // has the signature `usrsctp.h` gives `conn_output`.
        unsafe {
            ffi::usrsctp_init_nothreads(0, Some(conn_output), None);
            // Over AF_CONN every packet's source and destination address are the same,
            // which usrsctp takes for loopback and would not check the CRC32c of.
            ffi::usrsctp_sysctl_set_sctp_no_csum_on_loopback(0);
            ffi::usrsctp_sysctl_set_sctp_ecn_enable(0);
            ffi::usrsctp_sysctl_set_sctp_nr_incoming_streams_default(256);
            ffi::usrsctp_sysctl_set_sctp_nr_outgoing_streams_default(256);
        }
        STATS_ON.store(true, Ordering::Release);
        std::thread::Builder::new()
            .name("usrsctp-timers".into())
            .spawn(|| {
                let mut last = Instant::now();
                loop {
                    std::thread::sleep(TICK);
                    let now = Instant::now();
                    let ms = now.duration_since(last).as_millis() as u32;
                    if ms > 0 {
                        last += Duration::from_millis(ms.into());
                        // SAFETY: the stack was initialized above; usrsctp locks its own
                        // state, and this thread holds none of ours.
                        unsafe { ffi::usrsctp_handle_timers(ms) };
                    }
                }
            })
            .expect("usrsctp timer thread");
    });
    Ok(())
}

/// usrsctp's packet output for AF_CONN: the id in `addr` names the [`Link`].
unsafe extern "C" fn conn_output(
    addr: *mut c_void,
    buffer: *mut c_void,
    length: usize,
    _tos: u8,
    _set_df: u8,
) -> c_int {
    let link = links()
        .lock()
        .ok()
        .and_then(|l| l.get(&(addr as usize)).cloned());
    let Some(link) = link else { return 0 };
    // SAFETY: usrsctp passes a buffer of `length` bytes valid for this call.
    let p = unsafe { std::slice::from_raw_parts(buffer as *const u8, length) };
    let _ = if link.connected {
        link.sock.send(p)
    } else {
        link.sock.send_to(p, link.remote)
    };
    0
}

/// A socket's upcall: wakes its task (the id in `arg`).
unsafe extern "C" fn upcall(_sock: *mut ffi::Socket, arg: *mut c_void, _flags: c_int) {
    let w = wakers()
        .lock()
        .ok()
        .and_then(|w| w.get(&(arg as usize)).cloned());
    if let Some(w) = w {
        w.notify_one();
    }
}

/// An AF_CONN address of ours, registered with the stack and routed to a UDP peer; it
/// goes (deregistered, unrouted) when dropped.
struct Addr(usize);

impl Addr {
    /// A new address whose packets go out on `sock` to `remote`.
    fn new(sock: &tokio::net::UdpSocket, remote: SocketAddr, connected: bool) -> io::Result<Addr> {
        stack()?;
        let sock = clone_nonblocking(sock)?;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let link = Link {
            sock,
            remote,
            connected,
        };
        links().lock().expect("links").insert(id, Arc::new(link));
        // SAFETY: the stack is started; the address is an opaque number it never follows.
        unsafe { ffi::usrsctp_register_address(id as *mut c_void) };
        Ok(Addr(id))
    }

    fn ptr(&self) -> *mut c_void {
        self.0 as *mut c_void
    }

    /// `sockaddr_conn` for this address at SCTP port 5000.
    fn sockaddr(&self) -> ffi::SockaddrConn {
        ffi::SockaddrConn {
            sconn_family: ffi::AF_CONN as u16,
            sconn_port: SCTP_PORT.to_be(),
            sconn_addr: self.ptr(),
        }
    }

    /// Hands the stack a datagram that came from this address's peer.
    fn input(&self, datagram: &[u8]) {
        // SAFETY: the buffer is valid for its length during the call, which copies it;
        // the address is registered.
        unsafe { ffi::usrsctp_conninput(self.ptr(), datagram.as_ptr().cast(), datagram.len(), 0) };
    }
}

impl Drop for Addr {
    fn drop(&mut self) {
        // SAFETY: the address was registered by `Addr::new`.
        unsafe { ffi::usrsctp_deregister_address(self.ptr()) };
        links().lock().expect("links").remove(&self.0);
    }
}

/// A second handle on a tokio UDP socket for [`conn_output`], which sends from whatever
/// thread runs the stack, without a runtime.
fn clone_nonblocking(sock: &tokio::net::UdpSocket) -> io::Result<StdUdp> {
    use std::os::fd::AsFd;
    let fd = sock.as_fd().try_clone_to_owned()?;
    let s = StdUdp::from(fd);
    s.set_nonblocking(true)?;
    Ok(s)
}

/// A usrsctp socket, closed when dropped, with its task's waker registered for its
/// upcalls.
struct Sock {
    so: *mut ffi::Socket,
    waker_id: usize,
    waker: Arc<Notify>,
}

// SAFETY: usrsctp sockets may be used from any thread (the stack locks its own state);
// `Sock` is used by one task at a time.
unsafe impl Send for Sock {}
// SAFETY: what `&Sock` offers (options, accept, events) is usrsctp calls, which lock the
// socket's state themselves.
unsafe impl Sync for Sock {}

impl Sock {
    /// A new non-blocking one-to-one SCTP socket on AF_CONN with `cfg`'s streams and
    /// RTO.Initial, no Nagle delay, and each message's stream reported.
    fn new(cfg: &SctpConfig) -> io::Result<Sock> {
        stack()?;
        // SAFETY: the stack is started; no callbacks (upcalls are set below).
        let so = unsafe {
            ffi::usrsctp_socket(
                ffi::AF_CONN,
                libc::SOCK_STREAM,
                ffi::IPPROTO_SCTP,
                std::ptr::null(),
                std::ptr::null(),
                0,
                std::ptr::null_mut(),
            )
        };
        if so.is_null() {
            return Err(io::Error::last_os_error());
        }
        let s = Sock::wrap(so)?;
        s.per_message()?;
        let streams = cfg.streams.max(2);
        let init = ffi::InitMsg {
            sinit_num_ostreams: streams,
            sinit_max_instreams: streams,
            ..Default::default()
        };
        s.setopt(ffi::SCTP_INITMSG, &init)?;
        let rto = ffi::RtoInfo {
            srto_initial: cfg.rto_initial.as_millis().clamp(1, 60_000) as u32,
            srto_min: super::DIAG.rto_min_ms as u32,
            srto_max: super::DIAG.rto_max_ms as u32,
            ..Default::default()
        };
        s.setopt(ffi::SCTP_RTOINFO, &rto)?;
        // The path MTU of a 1,500-byte IP packet over UDP (less 20 IPv4 and 8 UDP), so a
        // DATA chunk carries the sctp-proto path's 1,444 bytes and a SPDY DATA frame of
        // `spdy_config` is one chunk; usrsctp's own MTU for AF_CONN cut each in two.
        let path = ffi::PaddrParams {
            spp_pathmtu: super::DIAG.payload + 28,
            spp_flags: ffi::SPP_PMTUD_DISABLE,
            ..Default::default()
        };
        s.setopt(ffi::SCTP_PEER_ADDR_PARAMS, &path)?;
        Ok(s)
    }

    /// Takes ownership of `so` (an accepted socket): non-blocking, with an upcall.
    fn wrap(so: *mut ffi::Socket) -> io::Result<Sock> {
        let waker_id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let waker = Arc::new(Notify::new());
        wakers()
            .lock()
            .expect("wakers")
            .insert(waker_id, waker.clone());
        let s = Sock {
            so,
            waker_id,
            waker,
        };
        // SAFETY: `so` is a live socket this `Sock` now owns; the upcall's argument is a
        // number looked up in `WAKERS`, never dereferenced.
        unsafe {
            ffi::usrsctp_set_non_blocking(so, 1);
            ffi::usrsctp_set_upcall(so, Some(upcall), waker_id as *mut c_void);
        }
        // Anything that happened before the upcall was set is looked at on the first pass.
        s.waker.notify_one();
        Ok(s)
    }

    /// No Nagle delay (a frame goes at once) and each message's stream reported.
    fn per_message(&self) -> io::Result<()> {
        let on: c_int = 1;
        self.setopt(ffi::SCTP_NODELAY, &on)?;
        self.setopt(ffi::SCTP_RECVRCVINFO, &on)
    }

    /// Sets an `IPPROTO_SCTP` option.
    fn setopt<T>(&self, name: c_int, v: &T) -> io::Result<()> {
        // SAFETY: `v` is a live value of the type `usrsctp.h` gives the option.
        let r = unsafe {
            ffi::usrsctp_setsockopt(
                self.so,
                ffi::IPPROTO_SCTP,
                name,
                (v as *const T).cast(),
                std::mem::size_of::<T>() as libc::socklen_t,
            )
        };
        match r {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }

    /// Binds to `addr` at port 5000.
    fn bind(&self, addr: &Addr) -> io::Result<()> {
        let mut sa = addr.sockaddr();
        // SAFETY: a valid `sockaddr_conn` of the size given.
        let r = unsafe {
            ffi::usrsctp_bind(
                self.so,
                (&mut sa as *mut ffi::SockaddrConn).cast(),
                std::mem::size_of::<ffi::SockaddrConn>() as libc::socklen_t,
            )
        };
        match r {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }

    /// An association accepted on this listening socket, if one is ready.
    fn accept(&self) -> Option<io::Result<Sock>> {
        // SAFETY: a live listening socket; null name pointers are allowed.
        let so =
            unsafe { ffi::usrsctp_accept(self.so, std::ptr::null_mut(), std::ptr::null_mut()) };
        (!so.is_null()).then(|| Sock::wrap(so))
    }

    /// Whether the stack reports an error on the socket (a failed or aborted association).
    fn failed(&self) -> bool {
        // SAFETY: a live socket.
        unsafe { ffi::usrsctp_get_events(self.so) & ffi::SCTP_EVENT_ERROR != 0 }
    }
}

impl Drop for Sock {
    fn drop(&mut self) {
        // SAFETY: the socket is ours and used no more; after this no upcall finds the
        // waker (removed first).
        wakers().lock().expect("wakers").remove(&self.waker_id);
        unsafe {
            ffi::usrsctp_set_upcall(self.so, None, std::ptr::null_mut());
            ffi::usrsctp_close(self.so);
        }
    }
}

/// Opens an association to `addr` over usrsctp and returns the session's byte stream at
/// once, as [`super::dial`] does; a handshake that fails ends the stream with the reason.
pub(super) async fn dial(addr: SocketAddr, cfg: &SctpConfig) -> io::Result<BoxIo> {
    let udp = tokio::net::UdpSocket::bind(crate::transport::dial::unspecified_for(addr)).await?;
    udp.connect(addr).await?;
    super::grow_buffers(&udp);
    let local = Addr::new(&udp, addr, true)?;
    let sock = Sock::new(cfg)?;
    sock.bind(&local)?;
    let mut sa = local.sockaddr();
    // SAFETY: a valid `sockaddr_conn` of the size given; non-blocking, so this returns
    // at once (EINPROGRESS).
    let r = unsafe {
        ffi::usrsctp_connect(
            sock.so,
            (&mut sa as *mut ffi::SockaddrConn).cast(),
            std::mem::size_of::<ffi::SockaddrConn>() as libc::socklen_t,
        )
    };
    let e = io::Error::last_os_error();
    if r != 0 && e.raw_os_error() != Some(libc::EINPROGRESS) {
        return Err(io::Error::new(e.kind(), format!("SCTP to {addr}: {e}")));
    }
    let (io, ours, fate) = super::pair();
    let a = assoc::Assoc::new(sock, true, cfg, fate, addr);
    tokio::spawn(a.run(ours, Some((udp, local))));
    Ok(io)
}

/// Whether usrsctp has run in this process (its statistics are then worth reading).
static STATS_ON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The stack's statistics as [`Counters`], since the process started it (usrsctp counts
/// for the whole process, every association together); zero if it never ran.
pub(super) fn counters() -> Counters {
    if !STATS_ON.load(Ordering::Acquire) {
        return Counters::default();
    }
    let mut st: ffi::Stat = [0; 256];
    // SAFETY: the stack is started; the buffer is larger than `struct sctpstat`.
    unsafe { ffi::usrsctp_get_stat(&mut st) };
    let n = |i: usize| u64::from(st[i]);
    Counters {
        associations: n(ffi::STAT_ACTIVEESTAB) + n(ffi::STAT_PASSIVEESTAB),
        data_chunks_in: n(ffi::STAT_RECVDATA),
        sacks_in: n(ffi::STAT_RECVSACKS),
        t3_timeouts: n(ffi::STAT_TIMODATA),
        fast_retransmissions: n(ffi::STAT_SENDFASTRETRANS),
        delayed_sack_timeouts: n(ffi::STAT_TIMOSACK),
    }
}
