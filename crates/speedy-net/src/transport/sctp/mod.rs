//! SPDY over SCTP, in user space over UDP (RFC 6951: an SCTP packet is a UDP datagram's
//! payload), on the sans-IO SCTP stack of the `sctp-proto` crate.
//!
//! Each association is one task that owns the [`sctp_proto::Association`] and hands
//! the SPDY connection loop an ordinary byte stream ([`BoxIo`]): the session runs on
//! [`crate::spdy::conn::run`] unchanged, and [`route::Router`] maps its frames onto SCTP
//! streams (control frames on stream 0, each SPDY stream's DATA on its own stream) and
//! back. The mapping is specified in `docs/sctp.md`. A server's [`SctpListener`] is one
//! UDP socket and one endpoint task that routes datagrams to the association tasks; a
//! client's [`dial`] is one socket and one task.
//!
//! Timers are the stack's defaults, which are also Linux's SCTP defaults
//! (`net.sctp.rto_initial` 3 s, `rto_min` 1 s, `rto_max` 60 s); RTO.Initial can be set
//! ([`SctpConfig::rto_initial`]: RFC 9260 lowered it to 1 s). With
//! [`SctpConfig::bundle_cookie_echo`] (the default) the first DATA travels in the
//! COOKIE ECHO's packet ([`packet::Bundler`]); without it, as with Linux's SCTP, data
//! waits for the COOKIE ACK, one round trip more.

pub mod counters;
mod guard;
mod listener;
pub mod packet;
pub mod route;
mod stack;
mod stream;
mod usrsctp;

pub use listener::SctpListener;
use listener::ToEndpoint;
pub use stack::SctpStack;
use stream::{grow_buffers, pair, Fate};

use crate::transport::io::BoxIo;
use bytes::{Buf, Bytes};
use sctp_proto::{
    Association, AssociationHandle, ClientConfig, DatagramEvent, Endpoint, EndpointConfig,
    EndpointEvent, Event, Payload, PayloadProtocolIdentifier, StreamEvent, TransportConfig,
};
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, WriteHalf};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

/// SCTP settings of one end.
#[derive(Clone, Copy, Debug)]
pub struct SctpConfig {
    /// Client: send the first DATA in the COOKIE ECHO's packet (the default). `false`:
    /// data waits for the COOKIE ACK, as with Linux's SCTP.
    pub bundle_cookie_echo: bool,
    /// Streams offered each way (at least 2: stream 0 carries control frames).
    pub streams: u16,
    /// RTO.Initial: the retransmission timeout before the first round trip is measured
    /// (INIT, COOKIE ECHO, the first DATA). Default 3 s, RFC 4960's and Linux's
    /// (`net.sctp.rto_initial`); RFC 9260 lowered it to 1 s.
    pub rto_initial: Duration,
    /// Client: the server's SCTP (UDP) port, where it differs from the TCP port a URL or
    /// `--resolve` names (`--sctp-port`; `speedy serve --sctp-port`); `None`: the same
    /// port. [`dial`] takes its address as given: callers apply this ([`SctpConfig::peer`]).
    pub port: Option<u16>,
    /// Server: associations at once, handshakes included (`speedy serve` sets its
    /// `--max-connections`); an INIT beyond is dropped, as a SYN to a full backlog (the
    /// peer sends it again). sctp-proto keeps state from the INIT on (it has no
    /// stateless cookie), so without this an INIT flood of 5,000 took 5,000 associations
    /// and 235 MB, and kept them.
    pub max_associations: usize,
    /// Server: associations from one address (IPv6: one /64) at once (`speedy serve`'s
    /// `--max-connections-per-ip`); an INIT beyond gets an ABORT. 0: no limit.
    pub max_associations_per_ip: usize,
    /// Which SCTP stack carries the associations (`--sctp-stack`): sctp-proto (the
    /// default) or usrsctp. The two interoperate: each end chooses its own.
    pub stack: SctpStack,
}

impl SctpConfig {
    /// This config with RTO.Initial set to `ms` milliseconds, when given (the command
    /// lines' `--sctp-rto-initial-ms`).
    pub fn with_rto_initial_ms(mut self, ms: Option<u32>) -> SctpConfig {
        if let Some(ms) = ms {
            self.rto_initial = Duration::from_millis(ms.into());
        }
        self
    }

    /// Where a client dials SCTP for a server at `tcp` (its TCP address): `tcp` itself, or
    /// its IP at [`SctpConfig::port`].
    pub fn peer(&self, tcp: SocketAddr) -> SocketAddr {
        SocketAddr::new(tcp.ip(), self.port.unwrap_or(tcp.port()))
    }
}

/// The SCTP settings of a client that asked for `carrier`: `None` over TCP, where the
/// SCTP options must be left at their defaults (bundling on, no RTO.Initial, no port),
/// else an error naming the option given without `sctp`; port 0 is refused by name.
pub fn client_config(
    carrier: crate::protocol::Carrier,
    cookie_bundling: bool,
    rto_initial_ms: Option<u32>,
    port: Option<u16>,
) -> Result<Option<SctpConfig>, String> {
    if carrier != crate::protocol::Carrier::Sctp {
        let unused = match (cookie_bundling, rto_initial_ms, port) {
            (false, _, _) => "--no-cookie-bundling",
            (_, Some(_), _) => "--sctp-rto-initial-ms",
            (_, _, Some(_)) => "--sctp-port",
            _ => return Ok(None),
        };
        return Err(format!("{unused}: only with --transport sctp"));
    }
    if port == Some(0) {
        return Err("--sctp-port 0: the server's SCTP port, 1 to 65535".into());
    }
    let cfg = SctpConfig {
        bundle_cookie_echo: cookie_bundling,
        port,
        ..Default::default()
    };
    Ok(Some(cfg.with_rto_initial_ms(rto_initial_ms)))
}

impl Default for SctpConfig {
    fn default() -> Self {
        SctpConfig {
            bundle_cookie_echo: true,
            streams: 256,
            rto_initial: Duration::from_secs(3),
            port: None,
            max_associations: crate::limits::Limits::default().max_connections,
            max_associations_per_ip: crate::limits::Limits::default().max_connections_per_ip,
            stack: SctpStack::default(),
        }
    }
}

/// Payload protocol identifier on every DATA chunk (no number is assigned to SPDY; this
/// is the one for binary messages).
const PPI: PayloadProtocolIdentifier = PayloadProtocolIdentifier::Binary;
/// The largest message: the largest SPDY frame.
const MAX_MESSAGE: u32 = (spdy::frame::HEADER_LEN + spdy::frame::MAX_PAYLOAD) as u32;
/// The receive buffer the association advertises.
const RECEIVE_BUFFER: u32 = 4 << 20;
/// Stop reading the session's output while this much waits in SCTP's send queues.
const SEND_HIGH: usize = 1 << 20;
/// Stop reading SCTP streams while this much waits for the session to read it.
const RECEIVE_HIGH: usize = 1 << 20;
/// Early DATA held for its stream's opening frame at most (see [`route::Router`]).
const HOLD_LIMIT: usize = 16 << 20;
/// The byte stream between the session and the association task.
const DUPLEX: usize = 256 << 10;
/// How long an association may take to be established (INIT retransmissions included:
/// the client gives up earlier).
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(300);
/// How long a closing association may take to finish its SHUTDOWN exchange.
const LINGER: Duration = Duration::from_secs(30);
/// Retransmission timeouts in a row with no SACK from the peer before the association is
/// given up: RFC 9260's Association.Max.Retrans (10; Linux's
/// `net.sctp.association_max_retrans`). sctp-proto never gives up on DATA (with a limit
/// set it only stops retransmitting), so a peer that stopped acknowledging (gone, or
/// hostile) kept its association, and what waits to be sent to it, for good. With RTO.Min
/// 1 s and RTO.Max 60 s ten timeouts take about five minutes. A peer that answers with
/// SACKs (a zero window included) is kept, as TCP keeps one that answers its probes.
const MAX_DATA_RETRANSMITS: u64 = 10;
/// The SHUTDOWN COMPLETE chunk's type (RFC 9260 §3.3.13).
const SHUTDOWN_COMPLETE: u8 = 14;
/// UDP socket buffers (a burst of a fast sender fits).
const SOCKET_BUFFER: libc::c_int = 4 << 20;

/// The most user data in one DATA chunk: what fills a 1,500-byte IP packet over UDP
/// (1,500 - 20 IPv4 - 8 UDP - 12 SCTP common header - 16 DATA chunk header; over IPv6
/// such a packet is fragmented), as Linux's SCTP fills the path MTU. sctp-proto's own
/// 1,200 (WebRTC's cautious size) cost SCTP about a third of its deficit against TCP
/// under loss (docs/sctp.md): congestion avoidance grows the window by one packet per
/// round trip, whatever the packet's size.
const DATA_PAYLOAD: u32 = 1444;

/// Diagnostics for experiments on where SCTP loses time (docs/sctp.md), not options:
/// read from the environment once, each ignored outside its range.
struct Diagnostics {
    /// `SPEEDY_SCTP_PAYLOAD`: user data per DATA chunk, 500 to [`DATA_PAYLOAD`].
    payload: u32,
    /// `SPEEDY_SCTP_RTO_MIN_MS`: RTO.Min, RFC 4960's and Linux's 1 s otherwise.
    rto_min_ms: u64,
    /// `SPEEDY_SCTP_RTO_MAX_MS`: RTO.Max, RFC 4960's 60 s otherwise (tests that wait
    /// for a stack to give a silent peer up hold the doubling timeouts under it).
    rto_max_ms: u64,
    /// `SPEEDY_SCTP_SEND_HIGH` and `SPEEDY_SCTP_DUPLEX`: how much of the session's output
    /// may wait below its scheduler, in SCTP's send queues ([`SEND_HIGH`]) and in the
    /// byte stream ([`DUPLEX`]); 4 KiB to 16 MiB.
    send_high: usize,
    duplex: usize,
    /// `SPEEDY_SCTP_SACK_IMMEDIATELY`: the last DATA chunk of each burst carries RFC
    /// 7053's I bit.
    sack_immediately: bool,
    /// `SPEEDY_SCTP_STATS`: each association prints its counters on stderr when it is
    /// dropped, ended or still open.
    stats: bool,
}

static DIAG: std::sync::LazyLock<Diagnostics> = std::sync::LazyLock::new(|| {
    let set = |name: &str| std::env::var_os(name).is_some();
    Diagnostics {
        payload: env_in("SPEEDY_SCTP_PAYLOAD", 500..=DATA_PAYLOAD, DATA_PAYLOAD),
        rto_min_ms: env_in("SPEEDY_SCTP_RTO_MIN_MS", 1..=60_000, 1000),
        rto_max_ms: env_in("SPEEDY_SCTP_RTO_MAX_MS", 1..=60_000, 60_000),
        send_high: env_in("SPEEDY_SCTP_SEND_HIGH", 4096..=16 << 20, SEND_HIGH),
        duplex: env_in("SPEEDY_SCTP_DUPLEX", 4096..=16 << 20, DUPLEX),
        sack_immediately: set("SPEEDY_SCTP_SACK_IMMEDIATELY"),
        stats: set("SPEEDY_SCTP_STATS"),
    }
});

/// The number in environment variable `name`, if it parses and is in `range`.
fn env_in<T: std::str::FromStr + PartialOrd>(
    name: &str,
    range: std::ops::RangeInclusive<T>,
    default: T,
) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<T>().ok())
        .filter(|n| range.contains(n))
        .unwrap_or(default)
}

/// The endpoint's settings: DATA chunks of at most [`DATA_PAYLOAD`] bytes.
fn endpoint_config() -> Arc<EndpointConfig> {
    let mut c = EndpointConfig::new();
    c.max_payload_size(DIAG.payload);
    Arc::new(c)
}

/// `session` as a SPDY session over SCTP runs it: every DATA frame fits one DATA chunk.
/// SCTP hands a message over only when all of it has arrived, so a frame cut into
/// chunks reaches the application a round trip late whenever its last chunk is in the
/// next flight (an 8 KiB frame is six chunks; slow start's first flight holds three);
/// a frame per chunk is delivered as it arrives, as bytes over TCP are.
pub fn spdy_config(session: &spdy::Config) -> spdy::Config {
    let frame = DIAG.payload as usize - spdy::frame::HEADER_LEN;
    spdy::Config {
        max_data_frame: session.max_data_frame.min(frame),
        lone_data_frame: session.lone_data_frame.min(frame),
        ..session.clone()
    }
}

fn transport(cfg: &SctpConfig) -> Arc<TransportConfig> {
    let streams = cfg.streams.max(2);
    Arc::new(
        TransportConfig::default()
            .with_rto_min_ms(DIAG.rto_min_ms)
            .with_rto_max_ms(DIAG.rto_max_ms)
            .with_max_num_outbound_streams(streams)
            .with_max_num_inbound_streams(streams)
            .with_max_send_message_size(MAX_MESSAGE)
            .with_max_receive_message_size(MAX_MESSAGE)
            .with_max_receive_buffer_size(RECEIVE_BUFFER)
            .with_rto_initial_ms(cfg.rto_initial.as_millis().clamp(1, 60_000) as u64),
    )
}

/// Opens an association to `addr` and returns the session's byte stream at once, before
/// the handshake: what the session writes first is sent as soon as the association
/// allows (in the COOKIE ECHO's packet with bundling). A handshake that fails ends the
/// stream with the reason as the read error.
pub async fn dial(addr: SocketAddr, cfg: &SctpConfig) -> io::Result<BoxIo> {
    if cfg.stack == SctpStack::Usrsctp {
        return usrsctp::dial(addr, cfg).await;
    }
    let sock = UdpSocket::bind(crate::transport::dial::unspecified_for(addr)).await?;
    sock.connect(addr).await?;
    grow_buffers(&sock);
    let mut endpoint = Endpoint::new(endpoint_config(), None);
    let mut client = ClientConfig::new();
    client.transport = transport(cfg);
    let (ch, assoc) = endpoint
        .connect(client, addr)
        .map_err(|e| io::Error::other(format!("SCTP association to {addr}: {e}")))?;
    let (io, ours, fate) = pair();
    let feed = Feed::Client {
        endpoint: Box::new(endpoint),
        bundler: cfg.bundle_cookie_echo.then(packet::Bundler::default),
    };
    let conn = Conn::new(assoc, ch, true, cfg, fate);
    tokio::spawn(conn.run(feed, Arc::new(sock), ours));
    Ok(io)
}

/// A received datagram as the SCTP stack gets it: a multihomed peer's INIT or INIT ACK
/// without its address list ([`packet::strip_addresses`]).
fn incoming(datagram: &[u8]) -> Bytes {
    match packet::strip_addresses(datagram) {
        Some(p) => p.into(),
        None => Bytes::copy_from_slice(datagram),
    }
}

/// One datagram for an association, as the endpoint decoded it.
struct Datagram(sctp_proto::AssociationEvent);

/// What arrived for an association: a client's raw datagram, a server's decoded one.
enum In {
    Packet(Bytes),
    Event(sctp_proto::AssociationEvent),
}

/// Where an association's datagrams come from.
enum Feed {
    /// A client: its own socket (connected to the server) and endpoint.
    Client {
        endpoint: Box<Endpoint>,
        bundler: Option<packet::Bundler>,
    },
    /// A server's association: datagrams from the endpoint task.
    Server {
        rx: mpsc::UnboundedReceiver<Datagram>,
        done: mpsc::UnboundedSender<ToEndpoint>,
    },
}

async fn send_transmit(sock: &UdpSocket, t: sctp_proto::Transmit, connected: bool) {
    if let Payload::RawEncode(packets) = t.payload {
        for p in packets {
            send_packet(sock, &p, t.remote, connected).await;
        }
    }
}

async fn send_packet(sock: &UdpSocket, p: &[u8], to: SocketAddr, connected: bool) {
    let r = if connected {
        sock.send(p).await
    } else {
        sock.send_to(p, to).await
    };
    if let Err(e) = r {
        // Like a packet lost on the way: SCTP retransmits.
        tracing::debug!("SCTP send to {to}: {e}");
    }
}

/// Where an association's packets go: its UDP socket (a client's is connected) and the
/// peer's address.
#[derive(Clone)]
struct Peer {
    sock: Arc<UdpSocket>,
    remote: SocketAddr,
    connected: bool,
}

impl Peer {
    /// Sends one packet to the peer ([`send_packet`]).
    async fn send(&self, p: &[u8]) {
        send_packet(&self.sock, p, self.remote, self.connected).await;
    }
}

/// The next thing that arrives for an association: a datagram on a client's own
/// socket (read into `datagram`; INITs are dropped, [`packet::client_takes`]), or an
/// event the endpoint task decoded for a server's.
async fn next_in(feed: &mut Feed, sock: &UdpSocket, datagram: &mut [u8]) -> io::Result<In> {
    match feed {
        Feed::Client { .. } => loop {
            let n = sock.recv(datagram).await?;
            if packet::client_takes(&datagram[..n]) {
                return Ok(In::Packet(incoming(&datagram[..n])));
            }
        },
        Feed::Server { rx, .. } => match rx.recv().await {
            Some(Datagram(ev)) => Ok(In::Event(ev)),
            None => Err(io::Error::other("the SCTP endpoint stopped")),
        },
    }
}

/// One association and its session's byte stream.
struct Conn {
    assoc: Association,
    ch: AssociationHandle,
    router: route::Router,
    /// Stream ids this end has written to (for the send-queue total).
    written: Vec<u16>,
    /// Frames for SCTP that wait for the association (handshake, full send queues).
    to_sctp: VecDeque<(u16, Bytes)>,
    /// Frames for the session not yet written to it.
    to_app: VecDeque<Bytes>,
    to_app_bytes: usize,
    /// Streams with messages left unread while `to_app` was full.
    unread: Vec<u16>,
    established: bool,
    /// The session closed its side: shut the association down once `to_sctp` is sent.
    app_done: bool,
    shutdown_at: Option<Instant>,
    fate: Fate,
    /// The first T1-cookie timeout of a bundled COOKIE ECHO ([`SctpConfig::rto_initial`]).
    rto_initial: Duration,
    /// The first 8 bytes of the last packet sent (ports, the peer's tag), the socket and
    /// the peer: enough to send an ABORT if the task is dropped mid-association (the
    /// process exits), so the peer does not hold the association until it times out.
    last_header: Option<[u8; 8]>,
    abort_to: Option<Peer>,
    /// The session stopped reading its byte stream: what was for it is dropped.
    app_gone: bool,
    /// This association's share of the process's [`counters::totals`].
    tally: counters::Tally,
    /// Ours is the client's end.
    client: bool,
    /// When the association was made (for [`HANDSHAKE_LIMIT`]).
    born: Instant,
    /// The peer's DATA, held to bounds before the stack sees it ([`guard`]); a server's
    /// endpoint task filters with it, a client's task itself.
    guard: Arc<Mutex<guard::DataGuard>>,
    /// SACKs received so far, and the T3 timeouts counted when the last one came
    /// ([`MAX_DATA_RETRANSMITS`]).
    sacks_seen: u64,
    t3_at_last_sack: u64,
}

impl Drop for Conn {
    /// Sends the ABORT described at `last_header`, and prints the counters under
    /// `SPEEDY_SCTP_STATS`: here, so that an association whose task is dropped (the
    /// process exits with it open, as `speedy load` does) reports too.
    fn drop(&mut self) {
        self.tally.update(self.assoc.stats());
        if DIAG.stats {
            let remote = self.assoc.remote_addr();
            let open = if self.assoc.is_closed() {
                "ended"
            } else {
                "dropped open"
            };
            let rto = self.assoc.rtt();
            let c = counters::of_association(self.assoc.stats());
            eprintln!(
                "SCTP association with {remote} {open}: {} DATA chunks in, {} SACKs in, {} T3 \
                 timeouts, {} fast retransmissions, {} delayed-ACK timeouts, RTO {rto:?}",
                c.data_chunks_in,
                c.sacks_in,
                c.t3_timeouts,
                c.fast_retransmissions,
                c.delayed_sack_timeouts,
            );
        }
        if let (false, Some(h), Some(peer)) =
            (self.assoc.is_closed(), self.last_header, &self.abort_to)
        {
            let p = packet::abort(&h);
            let _ = if peer.connected {
                peer.sock.try_send(&p)
            } else {
                peer.sock.try_send_to(&p, peer.remote)
            };
        }
    }
}

impl Conn {
    fn new(
        assoc: Association,
        ch: AssociationHandle,
        client: bool,
        cfg: &SctpConfig,
        fate: Fate,
    ) -> Conn {
        Conn {
            assoc,
            ch,
            router: route::Router::new(client, cfg.streams.max(2), HOLD_LIMIT),
            written: Vec::new(),
            to_sctp: VecDeque::new(),
            to_app: VecDeque::new(),
            to_app_bytes: 0,
            unread: Vec::new(),
            established: false,
            app_done: false,
            shutdown_at: None,
            fate,
            rto_initial: cfg.rto_initial,
            last_header: None,
            abort_to: None,
            app_gone: false,
            tally: counters::Tally::default(),
            client,
            born: Instant::now(),
            guard: Default::default(),
            sacks_seen: 0,
            t3_at_last_sack: 0,
        }
    }

    /// Sends the peer an ABORT for the association (as [`Drop`] does for one still open).
    fn abort_peer(&self) {
        if let (Some(h), Some(peer)) = (self.last_header, &self.abort_to) {
            let p = packet::abort(&h);
            let _ = if peer.connected {
                peer.sock.try_send(&p)
            } else {
                peer.sock.try_send_to(&p, peer.remote)
            };
        }
    }

    fn fail(&self, kind: io::ErrorKind, msg: String) {
        tracing::debug!("SCTP association: {msg}");
        let mut f = self.fate.lock().expect("fate");
        f.get_or_insert((kind, msg));
    }

    /// The association's events: establishment, readable streams, the end.
    fn poll_events(&mut self) -> Result<(), ()> {
        while let Some(ev) = self.assoc.poll() {
            match ev {
                Event::Connected => self.established = true,
                Event::HandshakeFailed { reason } => {
                    self.fail(
                        io::ErrorKind::ConnectionRefused,
                        format!("SCTP handshake failed: {reason}"),
                    );
                    return Err(());
                }
                Event::AssociationLost { reason } => {
                    if !self.app_done {
                        self.fail(
                            io::ErrorKind::ConnectionAborted,
                            format!("SCTP association lost: {reason}"),
                        );
                    }
                    return Err(());
                }
                Event::Stream(StreamEvent::Readable { id }) if !self.unread.contains(&id) => {
                    self.unread.push(id);
                }
                Event::Stream(StreamEvent::Opened { .. }) => {
                    while self.assoc.accept_stream().is_some() {}
                }
                _ => {}
            }
        }
        self.read_streams()
    }

    /// Reads whole messages from readable streams into `to_app` while it has room, or
    /// all of them once a shutdown began (no more will come, and the stack discards
    /// what is unread when the association closes).
    fn read_streams(&mut self) -> Result<(), ()> {
        let mut frames = Vec::new();
        while self.to_app_bytes < RECEIVE_HIGH || self.assoc.is_closing() {
            let Some(&id) = self.unread.first() else {
                break;
            };
            let msg = match self.assoc.stream(id).and_then(|mut s| s.read_sctp()) {
                Ok(Some(chunks)) => {
                    let mut v = vec![0; chunks.len()];
                    chunks.read(&mut v).map_err(|_| ())?;
                    self.guard.lock().expect("guard").delivered(v.len());
                    v
                }
                _ => {
                    self.unread.remove(0);
                    continue;
                }
            };
            if let Err(e) = self.router.incoming(id, msg.into(), &mut frames) {
                self.fail(io::ErrorKind::InvalidData, e.to_string());
                let _ = self.assoc.close();
                return Err(());
            }
            for f in frames.drain(..) {
                self.to_app_bytes += f.len();
                self.to_app.push_back(f);
            }
        }
        Ok(())
    }

    /// Bytes waiting in SCTP's send queues.
    fn queued(&mut self) -> usize {
        let Conn { assoc, written, .. } = self;
        written
            .iter()
            .filter_map(|&id| assoc.stream(id).and_then(|s| s.buffered_amount()).ok())
            .sum()
    }

    /// Hands waiting frames to their SCTP streams while the send queues have room.
    fn flush_to_sctp(&mut self) -> Result<(), ()> {
        if !self.established {
            return Ok(());
        }
        // The queues' total once, then what this flush adds to it.
        let mut queued = self.queued();
        while !self.to_sctp.is_empty() && queued < DIAG.send_high {
            let (id, frame) = self.to_sctp.pop_front().expect("non-empty");
            queued += frame.len();
            if !self.written.contains(&id) {
                if self.assoc.stream(id).is_err() {
                    if let Err(e) = self.assoc.open_stream(id, PPI) {
                        self.fail(io::ErrorKind::Other, format!("SCTP stream {id}: {e}"));
                        return Err(());
                    }
                }
                self.written.push(id);
            }
            let r = self
                .assoc
                .stream(id)
                .and_then(|mut s| s.write_sctp(&frame, PPI));
            if let Err(e) = r {
                self.fail(io::ErrorKind::Other, format!("SCTP stream {id}: {e}"));
                return Err(());
            }
        }
        // SHUTDOWN only once the send queues are empty: the stack sends it at once when
        // nothing is in flight, stranding messages written but not yet sent.
        if self.app_done && self.to_sctp.is_empty() && self.shutdown_at.is_none() && queued == 0 {
            self.shutdown_at = Some(Instant::now());
            if self.assoc.shutdown().is_err() {
                let _ = self.assoc.close();
            }
        }
        Ok(())
    }

    /// Runs the association until it closes and the session has read everything.
    async fn run(mut self, mut feed: Feed, sock: Arc<UdpSocket>, io: DuplexStream) {
        let (mut rd, mut wr) = tokio::io::split(io);
        let mut from_app = vec![0u8; 64 << 10];
        // Only a client reads its own socket (a server's endpoint task reads for all).
        let mut datagram = vec![0u8; if self.client { 65536 } else { 0 }];
        let mut outgoing = Vec::new();
        let peer = Peer {
            sock,
            remote: self.assoc.remote_addr(),
            connected: matches!(feed, Feed::Client { .. }),
        };
        self.abort_to = Some(peer.clone());
        let mut dead = false;
        loop {
            let now = Instant::now();
            self.tally.update(self.assoc.stats());
            dead |= self.poll_events().is_err() || self.flush_to_sctp().is_err();
            let inject = self.transmit(&mut feed, &peer, now).await;
            // The association's endpoint events say "drained" already when a shutdown
            // starts; the endpoint hears it only when the association is done, so that the
            // SHUTDOWN exchange still reaches it.
            while self.assoc.poll_endpoint_event().is_some() {}
            if let (Some(ack), Feed::Client { endpoint, .. }) = (inject, &mut feed) {
                if let Some((_, DatagramEvent::AssociationEvent(ev))) =
                    endpoint.handle(now, peer.remote, None, None, ack)
                {
                    self.assoc.handle_event(ev);
                }
                continue;
            }
            // A server's association is in the closed state until the COOKIE ECHO.
            let closed = dead || (self.assoc.is_closed() && self.established);
            if self.should_stop(now, closed) {
                break;
            }
            let deadline = self.deadline(&feed);
            let sleep = async move {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            let want_app = !self.app_done && !closed && self.to_sctp.len() < 1024;
            let next = next_in(&mut feed, &peer.sock, &mut datagram);
            tokio::select! {
                r = next, if !closed => {
                    if self.on_in(r, &mut feed, peer.remote).is_break() {
                        break;
                    }
                }
                _ = sleep, if !closed => {
                    if self.on_timeout(&mut feed, &peer).await.is_break() {
                        break;
                    }
                }
                r = rd.read(&mut from_app), if want_app => match r {
                    Ok(0) | Err(_) => self.app_done = true,
                    Ok(n) => {
                        self.router.outgoing(&from_app[..n], &mut outgoing);
                        self.to_sctp.extend(outgoing.drain(..));
                    }
                },
                r = wr.write(self.to_app.front().map_or(&[][..], |b| &b[..])), if !self.to_app.is_empty() && !self.app_gone => {
                    if self.on_written(r).is_break() {
                        break;
                    }
                }
                else => break,
            }
        }
        self.finish(feed, &peer, &mut wr).await;
    }

    /// Sends the packets the association has for the peer now (a client's bundler may
    /// hold or merge the COOKIE ECHO; the last DATA may ask for an immediate SACK) and
    /// notes the last one's header for an ABORT; returns the COOKIE ACK the bundler wants
    /// fed to the association, if any.
    async fn transmit(&mut self, feed: &mut Feed, peer: &Peer, now: Instant) -> Option<Bytes> {
        let mut packets = Vec::new();
        while let Some(t) = self.assoc.poll_transmit(now) {
            if let Payload::RawEncode(p) = t.payload {
                packets.extend(p);
            }
        }
        let mut inject = None;
        if let Feed::Client {
            bundler: Some(b), ..
        } = feed
        {
            let out = b.outgoing(packets, now, self.rto_initial);
            packets = out.send;
            inject = out.inject;
        }
        if let Some(h) = packets.last().and_then(|p| p.get(..8)) {
            self.last_header = h.try_into().ok();
        }
        if let Some(cum) = packets.iter().filter_map(|p| guard::sack_cum(p)).last() {
            self.guard.lock().expect("guard").acked(cum);
        }
        if DIAG.sack_immediately {
            // The end of what the association can send now: its last DATA asks for
            // an immediate SACK rather than the peer's delayed one (200 ms).
            if let Some(p) = packets.last_mut() {
                let mut v = p.to_vec();
                if packet::sack_immediately(&mut v) {
                    *p = Bytes::from(v);
                }
            }
        }
        for p in &packets {
            peer.send(p).await;
        }
        // The end that sent SHUTDOWN sends SHUTDOWN COMPLETE last: its association is
        // over. sctp-proto says so (`gather_outbound`'s flag) but `poll_transmit` drops
        // the flag, leaving the association in SHUTDOWN-SENT with no timer running, so a
        // server that shut an association down (an idle session, --sniff-timeout,
        // SIGTERM) kept its task, its state and its place in the per-address count until
        // some packet came.
        if packets
            .iter()
            .any(|p| packet::first_chunk(p) == Some(SHUTDOWN_COMPLETE))
        {
            let _ = self.assoc.close();
        }
        inject
    }

    /// Whether the task is done: the handshake took too long (a failure), the association
    /// is `closed` with nothing left for the session, or a shutdown lingered too long.
    fn should_stop(&mut self, now: Instant, closed: bool) -> bool {
        if !self.established && now >= self.born + HANDSHAKE_LIMIT {
            self.fail(
                io::ErrorKind::TimedOut,
                "SCTP handshake: no COOKIE ECHO".into(),
            );
            return true;
        }
        let mut st = self.assoc.stats();
        let (sacks, t3) = (st.get_num_sacks(), st.get_num_t3timeouts());
        if sacks != self.sacks_seen {
            (self.sacks_seen, self.t3_at_last_sack) = (sacks, t3);
        }
        if t3 >= self.t3_at_last_sack + MAX_DATA_RETRANSMITS {
            self.fail(
                io::ErrorKind::TimedOut,
                format!("SCTP: no SACK through {MAX_DATA_RETRANSMITS} retransmission timeouts"),
            );
            let _ = self.assoc.close();
            self.abort_peer();
            return true;
        }
        // A server's session gave up on an association that never completed its
        // handshake (its first frame did not come within --sniff-timeout, or its address
        // holds its share): it ends now, with an ABORT, where it used to wait for a packet
        // that never came, holding its task, buffers and the stack's state for good.
        if !self.client && self.app_done && !self.established {
            self.fail(
                io::ErrorKind::TimedOut,
                "SCTP handshake: the session ended first".into(),
            );
            self.abort_peer();
            return true;
        }
        if closed && (self.to_app.is_empty() || self.app_gone) {
            return true;
        }
        if let Some(at) = self.shutdown_at {
            if now >= at + LINGER {
                let _ = self.assoc.close();
                return true;
            }
        }
        false
    }

    /// The next timer: the association's, or a client's COOKIE ECHO resend if earlier.
    fn deadline(&self, feed: &Feed) -> Option<Instant> {
        let mut deadline = self.assoc.poll_timeout();
        if !self.established {
            // Wake for the handshake limit even when the stack has no timer running (a
            // server's association waiting for a COOKIE ECHO has none).
            let limit = self.born + HANDSHAKE_LIMIT;
            deadline = Some(deadline.map_or(limit, |d| d.min(limit)));
        }
        if let Some(at) = self.shutdown_at {
            // And for the shutdown's linger limit, whatever the stack's timers say.
            let limit = at + LINGER;
            deadline = Some(deadline.map_or(limit, |d| d.min(limit)));
        }
        match feed {
            Feed::Client {
                bundler: Some(b), ..
            } => match (deadline, b.deadline()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            _ => deadline,
        }
    }

    /// Hands what arrived to the association (a client's datagram through its endpoint,
    /// which tells the bundler the peer was heard); `Break` when receiving failed.
    fn on_in(&mut self, r: io::Result<In>, feed: &mut Feed, remote: SocketAddr) -> ControlFlow<()> {
        match r {
            Ok(In::Packet(mut bytes)) => {
                {
                    let mut g = self.guard.lock().expect("guard");
                    match guard::initiation(&bytes) {
                        Some((_, tsn)) => g.start(tsn),
                        None => {
                            if let Some(p) = g.filter(&bytes) {
                                bytes = p.into();
                            }
                        }
                    }
                }
                if let Feed::Client { endpoint, bundler } = feed {
                    if let Some(b) = bundler {
                        b.heard();
                    }
                    if let Some((_, DatagramEvent::AssociationEvent(ev))) =
                        endpoint.handle(Instant::now(), remote, None, None, bytes)
                    {
                        self.assoc.handle_event(ev);
                    }
                }
            }
            Ok(In::Event(ev)) => self.assoc.handle_event(ev),
            Err(e) => {
                self.fail(e.kind(), format!("SCTP to {remote}: {e}"));
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    /// A timer fired: the association's timers run, and a client's bundler resends its
    /// COOKIE ECHO or gives up (`Break`, the association failed).
    async fn on_timeout(&mut self, feed: &mut Feed, peer: &Peer) -> ControlFlow<()> {
        let now = Instant::now();
        self.assoc.handle_timeout(now);
        if let Feed::Client {
            bundler: Some(b), ..
        } = feed
        {
            match b.on_deadline(now) {
                packet::Cookie::Resend(cookie) => peer.send(&cookie).await,
                packet::Cookie::Wait => {}
                packet::Cookie::GiveUp => {
                    let remote = peer.remote;
                    self.fail(
                        io::ErrorKind::TimedOut,
                        format!("SCTP to {remote}: COOKIE ECHO unanswered"),
                    );
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    }

    /// The session took `r` bytes of `to_app`: streams are read again once it drained
    /// below half ([`RECEIVE_HIGH`]); `Break` when that fails. A session that stopped
    /// reading gets nothing more, and its side counts as done.
    fn on_written(&mut self, r: io::Result<usize>) -> ControlFlow<()> {
        match r {
            Ok(n) => {
                self.to_app_bytes -= n;
                let front = self.to_app.front_mut().expect("non-empty");
                front.advance(n);
                if front.is_empty() {
                    self.to_app.pop_front();
                }
                if self.to_app_bytes < RECEIVE_HIGH / 2 && self.read_streams().is_err() {
                    return ControlFlow::Break(());
                }
            }
            Err(_) => {
                self.app_gone = true;
                self.to_app.clear();
                self.to_app_bytes = 0;
                self.app_done = true;
            }
        }
        ControlFlow::Continue(())
    }

    /// Closes the association if it is still open (sending what that takes), shuts the
    /// session's byte stream, and tells the endpoint the association is gone.
    async fn finish(&mut self, feed: Feed, peer: &Peer, wr: &mut WriteHalf<DuplexStream>) {
        if !self.assoc.is_closed() {
            let _ = self.assoc.close();
            let now = Instant::now();
            while let Some(t) = self.assoc.poll_transmit(now) {
                send_transmit(&peer.sock, t, peer.connected).await;
            }
        }
        let _ = wr.shutdown().await;
        match feed {
            Feed::Client { mut endpoint, .. } => {
                endpoint.handle_event(self.ch, EndpointEvent::drained());
            }
            Feed::Server { done, .. } => {
                let _ = done.send((self.ch, None));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spdy_data_frame_over_sctp_fits_one_data_chunk() {
        let mut session = spdy::Config::new(spdy::Role::Server, spdy::Version::V3_1);
        session.lone_data_frame = 64 << 10;
        let c = spdy_config(&session);
        assert_eq!(
            c.max_data_frame + spdy::frame::HEADER_LEN,
            DATA_PAYLOAD as usize
        );
        assert_eq!(c.lone_data_frame, c.max_data_frame);
        // Smaller frames stay as they were; nothing else changes.
        session.max_data_frame = 100;
        session.lone_data_frame = 0;
        let c = spdy_config(&session);
        assert_eq!((c.max_data_frame, c.lone_data_frame), (100, 0));
        assert_eq!(c.initial_window, session.initial_window);
    }
}
