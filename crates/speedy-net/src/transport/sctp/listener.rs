//! A server's side of SCTP: [`SctpListener`], one UDP socket and one endpoint task that
//! routes datagrams to the association tasks, and its graceful close
//! ([`SctpListener::close`]): no new association is accepted (an INIT gets an ABORT, RFC
//! 9260 §8.4), the associations already accepted finish (their sessions end, then each
//! is shut down with the SHUTDOWN exchange), and the endpoint task ends after the last.

use super::guard::{self, DataGuard};
use super::packet::{self, chunk};
use super::{
    endpoint_config, grow_buffers, incoming, pair, send_packet, send_transmit, transport, Conn,
    Datagram, Feed, SctpConfig,
};
use crate::transport::io::BoxIo;
use sctp_proto::{AssociationHandle, DatagramEvent, Endpoint, EndpointEvent, ServerConfig};
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

/// Accepts SCTP associations on one UDP socket.
pub struct SctpListener {
    accepted: mpsc::UnboundedReceiver<(BoxIo, SocketAddr)>,
    local: SocketAddr,
    /// The endpoint task: it ends once the listener is gone and every association with it.
    endpoint: tokio::task::JoinHandle<()>,
}

impl SctpListener {
    /// Binds a UDP socket at `addr` and starts accepting associations on it. Dropping the
    /// listener stops accepting (as [`SctpListener::close`] does); associations already
    /// accepted carry on.
    pub async fn bind(addr: SocketAddr, cfg: &SctpConfig) -> io::Result<SctpListener> {
        if cfg.stack == super::SctpStack::Usrsctp {
            let (accepted, local, endpoint) = super::usrsctp::bind(addr, cfg).await?;
            return Ok(SctpListener {
                accepted,
                local,
                endpoint,
            });
        }
        let sock = UdpSocket::bind(addr).await?;
        grow_buffers(&sock);
        let local = sock.local_addr()?;
        let mut server = ServerConfig::new();
        server.transport = transport(cfg);
        let endpoint = Endpoint::new(endpoint_config(), Some(Arc::new(server)));
        let (tx, accepted) = mpsc::unbounded_channel();
        let endpoint = tokio::spawn(serve_endpoint(Arc::new(sock), endpoint, tx, *cfg));
        Ok(SctpListener {
            accepted,
            local,
            endpoint,
        })
    }

    /// The next association: the session's byte stream and the peer's address.
    pub async fn accept(&mut self) -> io::Result<(BoxIo, SocketAddr)> {
        self.accepted
            .recv()
            .await
            .ok_or_else(|| io::Error::other("the SCTP endpoint stopped"))
    }

    /// The UDP address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Stops accepting at once (an INIT from now on is answered with an ABORT) and
    /// returns what completes when the endpoint is done: every association already
    /// accepted has ended, gracefully (SHUTDOWN) once its session closed its byte stream,
    /// and the UDP socket is closed. Bound the wait with a timeout: a peer that neither
    /// reads nor answers holds its association until the association's own limits.
    pub fn close(self) -> impl Future<Output = ()> + Send + 'static {
        drop(self.accepted);
        let endpoint = self.endpoint;
        async move {
            let _ = endpoint.await;
        }
    }
}

/// What the endpoint task hears from an association task: its endpoint events, and
/// `None` when it is done.
pub(super) type ToEndpoint = (AssociationHandle, Option<EndpointEvent>);

/// One association as the endpoint task knows it.
struct Route {
    tx: mpsc::UnboundedSender<Datagram>,
    /// Its [`DataGuard`], shared with the association's task (which notes its SACKs and
    /// what it delivers).
    guard: Arc<Mutex<DataGuard>>,
    /// The peer's address as counted ([`ip_key`]), the Initiate Tag of its INIT, and
    /// the verification tag its packets carry once seen.
    ip: IpAddr,
    init_tag: u32,
    vtag: Option<u32>,
}

/// The address a peer is counted under: IPv4, or an IPv6 /64 (as `server.rs` counts
/// TCP connections).
pub(super) fn ip_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.into(),
            None => {
                let s = v6.segments();
                std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0).into()
            }
        },
        v4 => v4,
    }
}

/// The associations of one endpoint: routes, and the indexes that cap and filter them.
#[derive(Default)]
struct Routes {
    by_handle: HashMap<AssociationHandle, Route>,
    /// Associations per address ([`ip_key`]).
    per_ip: HashMap<IpAddr, usize>,
    /// The peer's INIT Initiate Tag: its retransmitted INIT is not a new association.
    by_init: HashMap<u32, AssociationHandle>,
    /// Our verification tag (on the peer's packets) → the association.
    by_vtag: HashMap<u32, AssociationHandle>,
}

impl Routes {
    fn insert(&mut self, ch: AssociationHandle, route: Route) {
        *self.per_ip.entry(route.ip).or_insert(0) += 1;
        self.by_init.insert(route.init_tag, ch);
        self.by_handle.insert(ch, route);
    }

    fn remove(&mut self, ch: AssociationHandle) -> bool {
        let Some(r) = self.by_handle.remove(&ch) else {
            return false;
        };
        if let Some(n) = self.per_ip.get_mut(&r.ip) {
            *n -= 1;
            if *n == 0 {
                self.per_ip.remove(&r.ip);
            }
        }
        if self.by_init.get(&r.init_tag) == Some(&ch) {
            self.by_init.remove(&r.init_tag);
        }
        if let Some(v) = r.vtag {
            self.by_vtag.remove(&v);
        }
        true
    }

    /// Whether an INIT with Initiate Tag `tag` from `ip` may make a new association:
    /// `Err(true)` refuse it with an ABORT (its address holds its share), `Err(false)`
    /// drop it (the endpoint is full; the peer sends it again).
    fn admit(&self, tag: u32, ip: IpAddr, cfg: &SctpConfig) -> Result<(), bool> {
        if self.by_init.contains_key(&tag) {
            return Ok(()); // a retransmission, for the association it made
        }
        let per_ip = cfg.max_associations_per_ip;
        if per_ip > 0 && self.per_ip.get(&ip_key(ip)).is_some_and(|&n| n >= per_ip) {
            return Err(true);
        }
        if self.by_handle.len() >= cfg.max_associations.max(1) {
            return Err(false);
        }
        Ok(())
    }
}

/// A server's endpoint task: datagrams in, routed to their associations; new
/// associations spawned and handed to the listener, at most
/// [`SctpConfig::max_associations`] at once and [`SctpConfig::max_associations_per_ip`]
/// from one address. The peer's DATA goes through its association's [`DataGuard`] first.
/// Once the listener is gone it refuses new associations and ends with the last one.
async fn serve_endpoint(
    sock: Arc<UdpSocket>,
    mut endpoint: Endpoint,
    accept: mpsc::UnboundedSender<(BoxIo, SocketAddr)>,
    cfg: SctpConfig,
) {
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<ToEndpoint>();
    let mut routes = Routes::default();
    let mut buf = vec![0u8; 65536];
    let mut accepting = true;
    while accepting || !routes.by_handle.is_empty() {
        tokio::select! {
            r = sock.recv_from(&mut buf) => {
                let Ok((n, from)) = r else { continue };
                if !accepting {
                    if let Some(abort) = refusal(&buf[..n]) {
                        send_packet(&sock, &abort, from, false).await;
                        continue;
                    }
                }
                let p = &buf[..n];
                let vtag = p.get(4..8).map_or(0, |v| u32::from_be_bytes(v.try_into().expect("4")));
                let init = match packet::first_chunk(p) {
                    Some(chunk::INIT) if vtag == 0 => guard::initiation(p),
                    _ => None,
                };
                if let Some((tag, _)) = init {
                    if let Err(abort) = routes.admit(tag, from.ip(), &cfg) {
                        if let Some(a) = refusal(p).filter(|_| abort) {
                            send_packet(&sock, &a, from, false).await;
                        }
                        continue;
                    }
                }
                let filtered = routes
                    .by_vtag
                    .get(&vtag)
                    .and_then(|ch| routes.by_handle.get(ch))
                    .and_then(|r| r.guard.lock().expect("guard").filter(p));
                let data = match filtered {
                    Some(f) => f.into(),
                    None => incoming(p),
                };
                match endpoint.handle(Instant::now(), from, None, None, data) {
                    Some((ch, DatagramEvent::NewAssociation(assoc))) => {
                        let (io, ours, fate) = pair();
                        if !accepting || accept.send((io, from)).is_err() {
                            endpoint.handle_event(ch, EndpointEvent::drained());
                            continue;
                        }
                        let (tx, rx) = mpsc::unbounded_channel();
                        let feed = Feed::Server { rx, done: done_tx.clone() };
                        let conn = Conn::new(assoc, ch, false, &cfg, fate);
                        let (init_tag, tsn) = init.unwrap_or_default();
                        conn.guard.lock().expect("guard").start(tsn);
                        routes.insert(ch, Route {
                            tx,
                            guard: conn.guard.clone(),
                            ip: ip_key(from.ip()),
                            init_tag,
                            vtag: None,
                        });
                        tokio::spawn(conn.run(feed, sock.clone(), ours));
                    }
                    Some((ch, DatagramEvent::AssociationEvent(ev))) => {
                        if let Some(r) = routes.by_handle.get_mut(&ch) {
                            let _ = r.tx.send(Datagram(ev));
                            if vtag != 0 && r.vtag.is_none() {
                                r.vtag = Some(vtag);
                                routes.by_vtag.insert(vtag, ch);
                            }
                        }
                    }
                    None => {}
                }
                while let Some(t) = endpoint.poll_transmit() {
                    send_transmit(&sock, t, false).await;
                }
            }
            Some((ch, _)) = done_rx.recv() => {
                if routes.remove(ch) {
                    endpoint.handle_event(ch, EndpointEvent::drained());
                }
            }
            _ = accept.closed(), if accepting => {
                accepting = false;
                endpoint.reject_new_associations();
            }
        }
    }
}

/// The ABORT that refuses `packet` when it is an INIT (RFC 9260 §8.4, 3: the INIT's
/// Initiate Tag as the verification tag, the T bit clear, the ports swapped); `None` for
/// any other packet, or one whose checksum is wrong.
fn refusal(packet: &[u8]) -> Option<Vec<u8>> {
    if packet.len() < 20
        || packet::first_chunk(packet) != Some(chunk::INIT)
        || !packet::checksum_ok(packet)
    {
        return None;
    }
    let mut header = [0u8; 8];
    header[..2].copy_from_slice(&packet[2..4]);
    header[2..4].copy_from_slice(&packet[..2]);
    header[4..].copy_from_slice(&packet[16..20]);
    Some(packet::abort(&header))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An INIT from port 5000 to 9443 with Initiate Tag 0x01020304.
    fn init() -> Vec<u8> {
        let mut p = vec![0x13, 0x88, 0x24, 0xe3, 0, 0, 0, 0, 0, 0, 0, 0];
        p.extend_from_slice(&[chunk::INIT, 0, 0, 20, 1, 2, 3, 4]);
        p.extend_from_slice(&[0, 0, 0x10, 0, 0, 10, 0, 10, 0, 0, 0, 1]);
        packet::seal(&mut p);
        p
    }

    #[test]
    fn an_init_is_refused_with_an_abort_under_its_initiate_tag() {
        let a = refusal(&init()).expect("an ABORT");
        assert_eq!(&a[..8], &[0x24, 0xe3, 0x13, 0x88, 1, 2, 3, 4]);
        assert_eq!(packet::first_chunk(&a), Some(chunk::ABORT));
        assert_eq!(a[13] & 1, 0, "T bit clear");
        assert!(packet::checksum_ok(&a));
    }

    #[test]
    fn other_packets_and_bad_checksums_are_not_answered() {
        let mut p = init();
        p[12] = chunk::COOKIE_ECHO;
        packet::seal(&mut p);
        assert!(refusal(&p).is_none());
        let mut p = init();
        p[8] ^= 1;
        assert!(refusal(&p).is_none());
        assert!(refusal(&[0; 8]).is_none());
    }
}
