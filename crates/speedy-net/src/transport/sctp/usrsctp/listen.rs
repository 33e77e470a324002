//! A listener on the usrsctp stack: one tokio UDP socket whose datagrams are fed to the
//! stack under one AF_CONN address per remote UDP address, each with a usrsctp socket
//! listening on that address alone; an association accepted there is handed to the
//! listener's owner as the sctp-proto path's are ([`super::super::SctpListener`]).

use super::super::listener::ip_key;
use super::super::{grow_buffers, packet, pair, SctpConfig};
use super::{assoc::Assoc, ffi, Addr, Sock, LINGER};
use crate::transport::io::BoxIo;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How long a new remote address has to complete a handshake (INIT to COOKIE ECHO; the
/// stack answers an INIT without keeping state). A client whose INIT ACK or COOKIE ECHO
/// is lost past this sends its INIT again (T1-init, RFC 9260 §5.1), which takes a new
/// slot. 60 s let one datagram hold a slot for a minute: 256 spoofed INITs a minute
/// filled the listener.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

/// Accepted associations: the session's byte stream and the peer's address.
type Accepted = mpsc::UnboundedReceiver<(BoxIo, SocketAddr)>;

/// Binds a UDP socket at `addr` and accepts associations on it over usrsctp: what
/// accepts, the UDP address, and the task that ends once nothing accepts and every
/// association has ended.
pub(in super::super) async fn bind(
    addr: SocketAddr,
    cfg: &SctpConfig,
) -> io::Result<(Accepted, SocketAddr, JoinHandle<()>)> {
    let udp = UdpSocket::bind(addr).await?;
    grow_buffers(&udp);
    let local = udp.local_addr()?;
    super::stack()?;
    let (tx, rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(serve(Arc::new(udp), tx, *cfg));
    Ok((rx, local, task))
}

/// The remote addresses a listener knows, and how many from each IP (IPv6: /64).
#[derive(Default)]
struct Peers {
    by_addr: HashMap<SocketAddr, Addr>,
    per_ip: HashMap<IpAddr, usize>,
}

impl Peers {
    /// Whether a new remote address `from` may start a handshake.
    fn admit(&self, from: SocketAddr, cfg: &SctpConfig) -> bool {
        let per_ip = cfg.max_associations_per_ip;
        let full_ip = per_ip > 0
            && self
                .per_ip
                .get(&ip_key(from.ip()))
                .is_some_and(|&n| n >= per_ip);
        !full_ip && self.by_addr.len() < cfg.max_associations.max(1)
    }

    fn remove(&mut self, from: SocketAddr) {
        if self.by_addr.remove(&from).is_some() {
            let k = ip_key(from.ip());
            if let Some(n) = self.per_ip.get_mut(&k) {
                *n -= 1;
                if *n == 0 {
                    self.per_ip.remove(&k);
                }
            }
        }
    }
}

/// The listener's task: datagrams to the stack; a new remote address whose datagram is an
/// INIT gets an AF_CONN address and a listening socket of its own (at most [`SctpConfig::max_associations`]
/// at once, [`SctpConfig::max_associations_per_ip`] from one address; beyond, its
/// datagrams are dropped and its INIT goes unanswered).
async fn serve(
    udp: Arc<UdpSocket>,
    accept: mpsc::UnboundedSender<(BoxIo, SocketAddr)>,
    cfg: SctpConfig,
) {
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<SocketAddr>();
    let mut peers = Peers::default();
    let mut buf = vec![0u8; 65536];
    let mut accepting = true;
    while accepting || !peers.by_addr.is_empty() {
        tokio::select! {
            r = udp.recv_from(&mut buf) => {
                let Ok((n, from)) = r else { continue };
                if !peers.by_addr.contains_key(&from) {
                    // Only an INIT (alone in its packet, RFC 9260 §6.10) opens a slot:
                    // stray and forged datagrams from unknown addresses take none.
                    let init = packet::first_chunk(&buf[..n]) == Some(packet::chunk::INIT);
                    if !init || !accepting || !peers.admit(from, &cfg) {
                        continue;
                    }
                    match open_peer(&udp, from, &cfg) {
                        Ok((addr, listening)) => {
                            *peers.per_ip.entry(ip_key(from.ip())).or_insert(0) += 1;
                            peers.by_addr.insert(from, addr);
                            let (accept, done) = (accept.clone(), done_tx.clone());
                            tokio::spawn(run_peer(listening, from, cfg, accept, done));
                        }
                        Err(e) => {
                            tracing::debug!("usrsctp listener for {from}: {e}");
                            continue;
                        }
                    }
                }
                if let Some(a) = peers.by_addr.get(&from) {
                    a.input(&buf[..n]);
                }
            }
            Some(from) = done_rx.recv() => peers.remove(from),
            _ = accept.closed(), if accepting => accepting = false,
        }
    }
}

/// An AF_CONN address for `from` and a socket listening on it.
fn open_peer(udp: &UdpSocket, from: SocketAddr, cfg: &SctpConfig) -> io::Result<(Addr, Sock)> {
    let addr = Addr::new(udp, from, false)?;
    let sock = Sock::new(cfg)?;
    sock.bind(&addr)?;
    // SAFETY: a live, bound socket.
    if unsafe { ffi::usrsctp_listen(sock.so, 1) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((addr, sock))
}

/// One remote address: its association accepted (within [`HANDSHAKE_LIMIT`]) and run,
/// then, after [`LINGER`], the address given up.
async fn run_peer(
    listening: Sock,
    from: SocketAddr,
    cfg: SctpConfig,
    accept: mpsc::UnboundedSender<(BoxIo, SocketAddr)>,
    done: mpsc::UnboundedSender<SocketAddr>,
) {
    let accepted = tokio::time::timeout(HANDSHAKE_LIMIT, async {
        loop {
            if let Some(s) = listening.accept() {
                return s;
            }
            listening.waker.notified().await;
        }
    })
    .await;
    drop(listening);
    if let Ok(sock) = accepted {
        match sock.and_then(|s| s.per_message().map(|()| s)) {
            Ok(sock) => {
                let (io, ours, fate) = pair();
                if accept.send((io, from)).is_ok() {
                    Assoc::new(sock, false, &cfg, fate, from)
                        .run(ours, None)
                        .await;
                }
            }
            Err(e) => tracing::debug!("usrsctp association from {from}: {e}"),
        }
    }
    tokio::time::sleep(LINGER).await;
    let _ = done.send(from);
}
