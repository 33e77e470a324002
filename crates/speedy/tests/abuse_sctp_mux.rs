//! Abuse probes for the surfaces beside SPDY over TCP (issue 41, item 1), through the
//! real program on loopback: `speedy serve --sctp`, `speedy kube port-forward` (the SPDY
//! stream multiplexer) and `speedy fetch --pipeline` (the HTTP/1.1 pipelining client).
//! Each probe is bounded in time and count, prints one line `PROBE: bound X, peak Y,
//! served during/after: yes`, and checks that the program stays up and keeps serving.
//!
//! SPDY over SCTP (hand-made SCTP packets over UDP, [`raw`]; normal requests by `speedy
//! fetch --transport sctp`):
//!
//! - **INIT flood** (`sctp_init_flood_is_capped_and_handshakes_end`): 6,000 INITs from one
//!   address, then 12,000 from eight more. Bound: at most `--max-connections-per-ip` (64)
//!   associations from one address and `--max-connections` (256) in all, handshakes
//!   included (INITs beyond: ABORT, or dropped while the endpoint is full), each ended
//!   (ABORT) once its session's `--sniff-timeout` passed with no first frame; server peak
//!   RSS under 64 MiB.
//! - **COOKIE ECHO floods and association limits**
//!   (`sctp_cookie_floods_and_association_limits`): 20,000 forged COOKIE ECHOs (no
//!   association, no answer), one valid COOKIE ECHO replayed 5,000 times (still one
//!   association, which still serves), 40 completed associations from one address (at
//!   most `--max-connections-per-ip`, 16, get in; the idle ones are shut down after
//!   `--sniff-timeout` and their address gets in again). Bound: 64 MiB.
//! - **A peer that never acknowledges** (`sctp_peer_that_never_acknowledges`): four
//!   associations each GET a 64 MiB file with 1 GiB SPDY windows and never SACK. Bound:
//!   what waits for the peer (SCTP's send queues, the byte stream, the session) stays
//!   under 64 MiB of server RSS, and each association is given up after 10 retransmission
//!   timeouts with no SACK (RFC 9260's Association.Max.Retrans).
//! - **Endless and huge messages** (`sctp_endless_and_huge_messages_are_bounded`): one
//!   SCTP message that never ends (42 MB of fragments, ignoring the receive window); one
//!   chunk far ahead in TSNs and 40,000 chunks (56 MB) filling in below it; a 17 MiB
//!   message (over the largest SPDY frame); 24 MiB of DATA frames for a stream never
//!   opened. Bound: per association, 5 MiB taken and not delivered (the receive window
//!   and 1 MiB) plus 16 MiB of early DATA held for its SYN_STREAM; server peak RSS under
//!   64 MiB.
//!
//! The same probes of a peer that never acknowledges and of endless and huge messages run
//! against the usrsctp stack (`--sctp-stack usrsctp`, tests `usrsctp_*`), and one of its
//! own listener (`usrsctp_new_addresses_take_bounded_slots`): it gives each new remote
//! UDP address a usrsctp socket, so 200 INITs from the ports of one IP, 200 stray
//! datagrams and 60 INITs from six more IPs must take at most `--max-connections-per-ip`
//! (8) slots an IP and `--max-connections` (32) in all, only for an INIT, each freed
//! 10 s after an unfinished handshake.
//!
//! The stream multiplexer (`speedy kube port-forward`):
//!
//! - **Stream flood** (`kube_port_forward_survives_a_push_flood`): a hostile kubelet
//!   pushes 30,000 streams (SYN_STREAM with 4 KiB of headers, then RST_STREAM) at the
//!   client while a forwarded connection echoes. Bound: streams waiting for `accept` are
//!   held to the session's concurrent-stream limit (100), later ones refused; client peak
//!   RSS under 64 MiB (210 MB before the bound).
//! - **One stream stalled** (`kube_port_forward_bounds_a_stalled_stream`): against the
//!   kubelet double, one forwarded connection writes and never reads its echo while a
//!   second echoes 16 MiB. Bound: the stalled one gets at most 48 MiB in (windows and
//!   socket buffers) and the client's peak RSS stays under 64 MiB; the other finishes.
//!
//! The HTTP/1.1 pipelining client (`speedy fetch --protocol http1 --pipeline`;
//! `pipelined_fetch_against_hostile_servers`): a response head that never ends (fails at
//! 64 KiB), an endless body (`--max-time` ends it, status 28), endless `100 Continue`
//! heads and a server that never answers (`--read-timeout` ends them), and a response for
//! a request never sent (ignored: the fetch ends with the answer it asked for). Bound:
//! each ends within 10 s, peak RSS under 64 MiB.

mod support;

use spdy::session::{Config, Event, OutBuf, Role, Session};
use spdy::{Headers, RstStatus, Version};
use speedy_net::sctp::packet::{self, chunk};
use std::collections::{BTreeSet, HashMap};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{
    peak_rss_until_exit, proc_status_kib, read_request_head, run_bounded, Server, TempDir, BIN,
};

/// Peak RSS of the program under any one probe.
const RSS_LIMIT_KIB: u64 = 64 * 1024;
const MIB: usize = 1 << 20;
const T: Duration = Duration::from_secs(10);

/// The probe's one line of results; the peak must be under [`RSS_LIMIT_KIB`].
fn report(probe: &str, bound: &str, peak_kib: u64) {
    println!("{probe}: bound {bound}, peak {peak_kib} KiB, served during/after: yes");
    assert!(
        peak_kib < RSS_LIMIT_KIB,
        "{probe}: peak RSS {peak_kib} KiB over {RSS_LIMIT_KIB} KiB"
    );
}

/// A hand-driven SCTP endpoint over UDP (RFC 9260 on RFC 6951 framing): just enough to
/// open an association and then misbehave (never acknowledge, send messages that never
/// end, jump ahead in TSNs, replay or forge cookies).
mod raw {
    use super::*;

    /// SCTP port at both ends (speedy's, as sctp-proto's: 5000).
    const PORT: u16 = 5000;
    /// DATA chunk flags (RFC 9260 §3.3.1).
    pub const B: u8 = 2;
    pub const E: u8 = 1;
    /// SHUTDOWN, SHUTDOWN ACK, SHUTDOWN COMPLETE.
    const SHUTDOWN: u8 = 7;
    const SHUTDOWN_ACK: u8 = 8;
    const SHUTDOWN_COMPLETE: u8 = 14;

    static TAGS: AtomicU32 = AtomicU32::new(1);

    /// A fresh, non-zero tag.
    pub fn tag() -> u32 {
        let n = TAGS.fetch_add(1, Ordering::Relaxed);
        (std::process::id() << 20) ^ n.wrapping_mul(2_654_435_761) | 1
    }

    /// One chunk, padded to 4 bytes.
    pub fn chunk(ty: u8, flags: u8, value: &[u8]) -> Vec<u8> {
        let len = 4 + value.len();
        let mut c = vec![ty, flags, (len >> 8) as u8, len as u8];
        c.extend_from_slice(value);
        while c.len() % 4 != 0 {
            c.push(0);
        }
        c
    }

    /// A packet of `chunks` under verification tag `vtag`, checksummed.
    pub fn packet(vtag: u32, chunks: &[Vec<u8>]) -> Vec<u8> {
        let mut p = Vec::with_capacity(1500);
        p.extend_from_slice(&PORT.to_be_bytes());
        p.extend_from_slice(&PORT.to_be_bytes());
        p.extend_from_slice(&vtag.to_be_bytes());
        p.extend_from_slice(&[0; 4]);
        for c in chunks {
            p.extend_from_slice(c);
        }
        packet::seal(&mut p);
        p
    }

    /// An INIT with Initiate Tag `tag` (and initial TSN `tag`).
    pub fn init(tag: u32) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&tag.to_be_bytes());
        v.extend_from_slice(&(4u32 << 20).to_be_bytes()); // a_rwnd
        v.extend_from_slice(&256u16.to_be_bytes()); // OS
        v.extend_from_slice(&256u16.to_be_bytes()); // MIS
        v.extend_from_slice(&tag.to_be_bytes()); // initial TSN
        packet(0, &[chunk(chunk::INIT, 0, &v)])
    }

    /// The first chunk's type and the packet's verification tag.
    pub fn kind(p: &[u8]) -> Option<(u8, u32)> {
        let t = packet::first_chunk(p)?;
        Some((t, u32::from_be_bytes(p.get(4..8)?.try_into().ok()?)))
    }

    /// From an INIT ACK: the peer's tag, its initial TSN and the State Cookie.
    pub fn init_ack(p: &[u8]) -> Option<(u32, u32, Vec<u8>)> {
        let (ty, _, v) = packet::chunks(p).next()?;
        if ty != chunk::INIT_ACK || v.len() < 16 {
            return None;
        }
        let tag = u32::from_be_bytes(v[0..4].try_into().ok()?);
        let tsn = u32::from_be_bytes(v[12..16].try_into().ok()?);
        let mut at = 16;
        while at + 4 <= v.len() {
            let ty = u16::from_be_bytes([v[at], v[at + 1]]);
            let len = usize::from(u16::from_be_bytes([v[at + 2], v[at + 3]]));
            if len < 4 || at + len > v.len() {
                break;
            }
            if ty == 7 {
                return Some((tag, tsn, v[at + 4..at + len].to_vec()));
            }
            at += (len + 3) & !3;
        }
        None
    }

    /// A UDP socket at `ip` (a 4 MiB receive buffer), connected to `server`, whose reads
    /// time out after 20 ms.
    pub fn socket(ip: &str, server: SocketAddr) -> UdpSocket {
        use std::os::fd::AsRawFd;
        let s = UdpSocket::bind((ip, 0)).expect("bind UDP");
        s.connect(server).expect("connect UDP");
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let size: libc::c_int = 4 << 20;
        // SAFETY: a valid socket and a c_int option of the right size.
        unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
        s
    }

    /// Sends `p` and waits (sending it again every 500 ms, up to `limit`) for a packet
    /// whose first chunk is `want`; `None` on an ABORT or silence.
    fn exchange(s: &UdpSocket, p: &[u8], want: u8, limit: Duration) -> Option<Vec<u8>> {
        let end = Instant::now() + limit;
        let mut buf = vec![0u8; 65536];
        while Instant::now() < end {
            let _ = s.send(p);
            let again = Instant::now() + Duration::from_millis(500);
            while Instant::now() < again.min(end) {
                if let Ok(n) = s.recv(&mut buf) {
                    match kind(&buf[..n]) {
                        Some((t, _)) if t == want => return Some(buf[..n].to_vec()),
                        Some((chunk::ABORT, _)) => return None,
                        _ => {}
                    }
                }
            }
        }
        None
    }

    /// An established association, driven by hand.
    pub struct Assoc {
        pub sock: UdpSocket,
        pub peer_tag: u32,
        pub next_tsn: u32,
        ssn: [u16; 256],
        /// The peer's cumulative TSN as we acknowledge it, and TSNs above it.
        cum: u32,
        above: BTreeSet<u32>,
        /// Our COOKIE ECHO packet (to replay).
        pub cookie_echo: Vec<u8>,
        /// DATA chunks received; packets received; the peer aborted (or completed a
        /// shutdown); the peer sent SHUTDOWN.
        pub data_in: u64,
        pub packets_in: u64,
        pub aborted: bool,
        pub shut_down: bool,
    }

    impl Assoc {
        /// INIT, INIT ACK, COOKIE ECHO, COOKIE ACK from `ip` to `server`; `None` if the
        /// server refused (ABORT) or did not answer within `limit`.
        pub fn open(ip: &str, server: SocketAddr, limit: Duration) -> Option<Assoc> {
            let sock = socket(ip, server);
            let my_tag = tag();
            let ack = exchange(&sock, &init(my_tag), chunk::INIT_ACK, limit)?;
            let (peer_tag, peer_tsn, cookie) = init_ack(&ack)?;
            let cookie_echo = packet(peer_tag, &[chunk(chunk::COOKIE_ECHO, 0, &cookie)]);
            exchange(&sock, &cookie_echo, chunk::COOKIE_ACK, limit)?;
            Some(Assoc {
                sock,
                peer_tag,
                next_tsn: my_tag,
                ssn: [0; 256],
                cum: peer_tsn.wrapping_sub(1),
                above: BTreeSet::new(),
                cookie_echo,
                data_in: 0,
                packets_in: 0,
                aborted: false,
                shut_down: false,
            })
        }

        /// A DATA chunk at TSN `tsn` on `stream` with SSN `ssn` and `flags`.
        pub fn data_chunk(tsn: u32, stream: u16, ssn: u16, flags: u8, data: &[u8]) -> Vec<u8> {
            let mut v = Vec::with_capacity(12 + data.len());
            v.extend_from_slice(&tsn.to_be_bytes());
            v.extend_from_slice(&stream.to_be_bytes());
            v.extend_from_slice(&ssn.to_be_bytes());
            v.extend_from_slice(&53u32.to_be_bytes());
            v.extend_from_slice(data);
            chunk(chunk::DATA, flags, &v)
        }

        /// Sends chunks in one packet.
        pub fn send(&self, chunks: &[Vec<u8>]) {
            let _ = self.sock.send(&packet(self.peer_tag, chunks));
        }

        /// Sends one SCTP message on `stream`, in chunks of at most 1,444 bytes.
        pub fn message(&mut self, stream: u16, msg: &[u8]) {
            let ssn = self.ssn[stream as usize];
            self.ssn[stream as usize] = ssn.wrapping_add(1);
            let pieces: Vec<&[u8]> = msg.chunks(1444).collect();
            for (i, piece) in pieces.iter().enumerate() {
                let mut flags = 0;
                if i == 0 {
                    flags |= B;
                }
                if i + 1 == pieces.len() {
                    flags |= E;
                }
                let c = Assoc::data_chunk(self.next_tsn, stream, ssn, flags, piece);
                self.next_tsn = self.next_tsn.wrapping_add(1);
                self.send(&[c]);
                if i % 256 == 255 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }

        /// Sends SPDY bytes as speedy maps them (docs/sctp.md): one message per frame,
        /// control frames on stream 0, DATA of SPDY stream n on 1 + (n / 2) mod 255.
        pub fn spdy(&mut self, mut bytes: &[u8]) {
            while bytes.len() >= 8 {
                let len = 8 + (u32::from_be_bytes([0, bytes[5], bytes[6], bytes[7]]) as usize);
                let (frame, rest) = bytes.split_at(len.min(bytes.len()));
                let stream = if frame[0] & 0x80 != 0 {
                    0
                } else {
                    let id = u32::from_be_bytes(frame[..4].try_into().unwrap()) & 0x7fff_ffff;
                    1 + ((id / 2) % 255) as u16
                };
                self.message(stream, frame);
                bytes = rest;
            }
        }

        /// A SACK for what was received so far.
        fn sack(&self) -> Vec<u8> {
            let mut v = Vec::new();
            v.extend_from_slice(&self.cum.to_be_bytes());
            v.extend_from_slice(&(4u32 << 20).to_be_bytes());
            v.extend_from_slice(&[0; 4]);
            chunk(chunk::SACK, 0, &v)
        }

        /// Reads for `limit`, counting what arrives; acknowledges DATA when `ack`; answers
        /// a SHUTDOWN with SHUTDOWN ACK.
        pub fn pump(&mut self, limit: Duration, ack: bool) {
            let end = Instant::now() + limit;
            let mut buf = vec![0u8; 65536];
            while Instant::now() < end && !self.aborted {
                let Ok(n) = self.sock.recv(&mut buf) else {
                    continue;
                };
                self.packets_in += 1;
                let mut got = false;
                for (t, _, v) in packet::chunks(&buf[..n]) {
                    match t {
                        chunk::DATA if v.len() >= 12 => {
                            self.data_in += 1;
                            let tsn = u32::from_be_bytes(v[..4].try_into().unwrap());
                            if tsn.wrapping_sub(self.cum) as i32 > 0 {
                                self.above.insert(tsn);
                            }
                            got = true;
                        }
                        chunk::ABORT => self.aborted = true,
                        SHUTDOWN => {
                            self.shut_down = true;
                            self.send(&[chunk(SHUTDOWN_ACK, 0, &[])]);
                        }
                        SHUTDOWN_COMPLETE => self.aborted = true,
                        _ => {}
                    }
                }
                while self.above.remove(&self.cum.wrapping_add(1)) {
                    self.cum = self.cum.wrapping_add(1);
                }
                if got && ack {
                    self.send(&[self.sack()]);
                }
            }
        }

        /// Ends the association (ABORT).
        pub fn abort(&self) {
            self.send(&[chunk(chunk::ABORT, 0, &[])]);
        }
    }
}

/// A site with a small page and a 64 MiB file.
fn site() -> TempDir {
    let d = TempDir::new("abuse-sctp");
    std::fs::write(d.join("index.html"), b"<p>hello</p>\n").expect("write index");
    let f = std::fs::File::create(d.join("big.bin")).expect("create big.bin");
    f.set_len(64 << 20).expect("size big.bin");
    d
}

/// `speedy serve --root SITE --sctp ARGS...` with `env` set.
fn start_sctp(site: &TempDir, args: &[&str], env: &[(&str, &str)]) -> Server {
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--sctp", "--root"])
        .arg(site.to_str().expect("utf-8 path"))
        .args(args)
        .envs(env.iter().copied());
    Server::spawn(cmd, "listening on ")
}

/// `speedy fetch --transport sctp` of the small page must succeed (from 127.0.0.1).
fn sctp_fetch_ok(srv: &Server, when: &str) {
    let out = run_bounded(
        std::process::Command::new(BIN).args([
            "fetch",
            "--transport",
            "sctp",
            "--read-timeout",
            "10",
            &format!("http://{}/index.html", srv.addr),
        ]),
        Duration::from_secs(30),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("\"status\":200"),
        "SCTP fetch {when}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The server's SCTP associations so far (its `--sctp-counters` file).
fn associations(counters: &std::path::Path) -> u64 {
    let text = std::fs::read_to_string(counters).unwrap_or_default();
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["associations"].as_u64())
        .unwrap_or(0)
}

/// SPDY/3.1 client bytes: the session's opening frames (windows of `window` bytes) and a
/// GET of `path`.
fn spdy_get(path: &str, window: u32) -> Vec<u8> {
    let mut cfg = Config::new(Role::Client, Version::V3_1);
    cfg.initial_window = window;
    cfg.session_window = window;
    let mut s = Session::new(cfg);
    let h = spdy::http::request_headers(
        Version::V3_1,
        "GET",
        "http",
        "localhost",
        path,
        &Headers::new(),
    );
    s.open(h, 0, true).expect("open");
    let mut out = OutBuf::new();
    while s.poll_transmit(&mut out) {}
    out.take_all()
}

/// What came back for the INITs of a flood: (when, which address, tag, chunk type).
type Heard = Arc<Mutex<Vec<(Instant, usize, u32, u8)>>>;

/// Reads `sock` (flood address `i`) into `heard` until `until`.
fn listen(sock: UdpSocket, i: usize, heard: Heard, until: Instant) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        while Instant::now() < until {
            if let Ok(n) = sock.recv(&mut buf) {
                if let Some((t, tag)) = raw::kind(&buf[..n]) {
                    heard.lock().unwrap().push((Instant::now(), i, tag, t));
                }
            }
        }
    })
}

/// From a flood's answers: the most associations held at once from each address and in
/// all (an INIT ACK opens one, the ABORT for the same tag ends it), the tags that got an
/// INIT ACK, and those of them that got an ABORT.
fn held(heard: &[(Instant, usize, u32, u8)]) -> (Vec<usize>, usize, usize, usize) {
    let mut ev = heard.to_vec();
    ev.sort_by_key(|e| e.0);
    let mut open: HashMap<u32, usize> = HashMap::new();
    let (mut now, mut most) = (
        HashMap::<usize, usize>::new(),
        HashMap::<usize, usize>::new(),
    );
    let (mut total, mut most_total, mut acked, mut ended) = (0, 0, 0, 0);
    for (_, i, tag, t) in ev {
        match t {
            chunk::INIT_ACK if !open.contains_key(&tag) => {
                open.insert(tag, i);
                acked += 1;
                let n = now.entry(i).or_default();
                *n += 1;
                let m = most.entry(i).or_default();
                *m = (*m).max(*n);
                total += 1;
                most_total = most_total.max(total);
            }
            chunk::ABORT => {
                if let Some(i) = open.remove(&tag) {
                    ended += 1;
                    *now.get_mut(&i).unwrap() -= 1;
                    total -= 1;
                }
            }
            _ => {}
        }
    }
    let mut per: Vec<usize> = most.into_values().collect();
    per.sort_unstable();
    (per, most_total, acked, ended)
}

#[test]
fn sctp_init_flood_is_capped_and_handshakes_end() {
    let site = site();
    // 256 associations in all, 64 per address; a handshake ends with its session's
    // first-frame wait (3 s).
    let mut srv = start_sctp(
        &site,
        &["--max-connections", "256", "--sniff-timeout", "3"],
        &[],
    );
    let server: SocketAddr = srv.addr.parse().unwrap();
    let heard: Heard = Default::default();
    let until = Instant::now() + Duration::from_secs(25);
    let mut socks = Vec::new();
    let mut readers = Vec::new();
    for i in 0..9 {
        let s = raw::socket(&format!("127.0.1.{}", i + 1), server);
        readers.push(listen(s.try_clone().unwrap(), i, heard.clone(), until));
        socks.push(s);
    }
    // One address: 6,000 INITs.
    let t = Instant::now();
    for n in 0..6000 {
        let _ = socks[0].send(&raw::init(raw::tag()));
        if n % 100 == 99 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    // During: a normal request from another address is served.
    sctp_fetch_ok(&srv, "during an INIT flood from one address");
    // Eight more addresses: 1,500 INITs each.
    for n in 0..1500 {
        for s in &socks[1..] {
            let _ = s.send(&raw::init(raw::tag()));
        }
        if n % 20 == 19 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let flood_took = t.elapsed();
    // Every association the flood got is ended once its handshake's time is up.
    let end = Instant::now() + Duration::from_secs(12);
    loop {
        let (_, _, acked, ended) = held(&heard.lock().unwrap());
        if acked == ended || Instant::now() > end {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let (per, most, acked, ended) = held(&heard.lock().unwrap());
    let refused = heard
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.3 == chunk::ABORT)
        .count()
        - ended;
    eprintln!(
        "INIT flood (18,000 INITs in {flood_took:?}): {acked} associations, at most {most} at \
         once ({per:?} per address), {ended} ended by ABORT, {refused} INITs refused"
    );
    assert!(acked > 0, "no INIT was answered");
    assert!(*per.last().unwrap() <= 64, "per address: {per:?}");
    assert!(most <= 256, "{most} associations at once");
    assert!(refused > 0, "no INIT over the per-address cap was refused");
    assert_eq!(acked, ended, "associations left after their handshake time");
    srv.assert_alive();
    sctp_fetch_ok(&srv, "after an INIT flood");
    let peak = proc_status_kib(srv.pid(), "VmHWM");
    report(
        "SCTP INIT flood",
        "64 associations per address, 256 in all, each ended after --sniff-timeout",
        peak,
    );
    drop(socks);
    for r in readers {
        r.join().unwrap();
    }
}

#[test]
fn sctp_cookie_floods_and_association_limits() {
    let site = site();
    let dir = TempDir::new("abuse-sctp-counters");
    let counters = dir.join("counters.json");
    let mut srv = start_sctp(
        &site,
        &[
            "--max-connections",
            "64",
            "--sniff-timeout",
            "2",
            "--sctp-counters",
            counters.to_str().unwrap(),
        ],
        &[],
    );
    let server: SocketAddr = srv.addr.parse().unwrap();

    // Forged COOKIE ECHOs (random tags and cookies): nothing answers, nothing is made.
    let s = raw::socket("127.0.2.1", server);
    let mut answers = 0;
    let mut buf = vec![0u8; 65536];
    for i in 0..20_000u32 {
        let cookie: Vec<u8> = (0..300).map(|j| (i.wrapping_mul(31) ^ j) as u8).collect();
        let c = raw::chunk(chunk::COOKIE_ECHO, 0, &cookie);
        let _ = s.send(&raw::packet(raw::tag(), &[c]));
        if i % 200 == 199 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    while s.recv(&mut buf).is_ok() {
        answers += 1;
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(answers, 0, "forged COOKIE ECHOs were answered");
    assert_eq!(
        associations(&counters),
        0,
        "forged COOKIE ECHOs made associations"
    );

    // One valid COOKIE ECHO replayed 5,000 times: still one association, which serves.
    let mut a = raw::Assoc::open("127.0.2.2", server, T).expect("an association");
    for i in 0..5000 {
        let _ = a.sock.send(&a.cookie_echo);
        if i % 200 == 199 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    a.pump(Duration::from_millis(300), true);
    a.spdy(&spdy_get("/index.html", 1 << 20));
    a.pump(Duration::from_secs(1), true);
    assert!(
        a.data_in > 0,
        "the replayed association did not answer its request"
    );
    assert_eq!(
        associations(&counters),
        1,
        "a replayed COOKIE ECHO made another"
    );
    a.abort();

    // 40 completed associations from one address: at most 16 (a quarter of 64) get in,
    // the rest are refused at their INIT.
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..40 {
        match raw::Assoc::open("127.0.2.3", server, Duration::from_secs(2)) {
            Some(a) => held.push(a),
            None => refused += 1,
        }
    }
    eprintln!(
        "40 associations from one address: {} in, {refused} refused",
        held.len()
    );
    assert!(
        !held.is_empty() && held.len() <= 16,
        "{} got in",
        held.len()
    );
    // During: another address is served.
    sctp_fetch_ok(&srv, "while one address holds its share of associations");
    // Idle (no SPDY frame): each is shut down after --sniff-timeout.
    let t = Instant::now();
    for a in held.iter_mut() {
        while !(a.shut_down || a.aborted) && t.elapsed() < Duration::from_secs(8) {
            a.pump(Duration::from_millis(200), true);
        }
        assert!(a.shut_down || a.aborted, "an idle association was kept");
        // Let the SHUTDOWN exchange finish.
        a.pump(Duration::from_millis(100), true);
    }
    eprintln!("idle associations shut down after {:?}", t.elapsed());
    // After: the address gets in again (the shut-down associations are gone).
    std::thread::sleep(Duration::from_millis(300));
    let again = raw::Assoc::open("127.0.2.3", server, T).expect("the address gets in again");
    again.abort();
    srv.assert_alive();
    sctp_fetch_ok(&srv, "after the cookie floods");
    let peak = proc_status_kib(srv.pid(), "VmHWM");
    report(
        "SCTP COOKIE ECHO floods and association limits",
        "no association for a forged or replayed cookie, 16 per address",
        peak,
    );
}

#[test]
fn sctp_peer_that_never_acknowledges() {
    never_acknowledges("sctp-proto", "127.0.3.1");
}

#[test]
fn usrsctp_peer_that_never_acknowledges() {
    never_acknowledges("usrsctp", "127.0.3.2");
}

/// Four associations on `stack` from `ip` that never acknowledge a 64 MiB file.
fn never_acknowledges(stack: &str, ip: &str) {
    let site = site();
    // RTO.Initial and RTO.Min of 10 ms and RTO.Max of 2 s (the latter two diagnostics)
    // so that ten doubling retransmission timeouts take seconds rather than minutes,
    // whatever round-trip time a loaded machine measured in the handshake (from an RTO
    // of 18 ms they took 18.5 s; from 50 ms they would take 51 s without the cap).
    let mut srv = start_sctp(
        &site,
        &["--sctp-stack", stack, "--sctp-rto-initial-ms", "10"],
        &[
            ("SPEEDY_SCTP_RTO_MIN_MS", "10"),
            ("SPEEDY_SCTP_RTO_MAX_MS", "2000"),
        ],
    );
    let server: SocketAddr = srv.addr.parse().unwrap();
    let base = proc_status_kib(srv.pid(), "VmRSS");
    let mut peers = Vec::new();
    for _ in 0..4 {
        let mut a = raw::Assoc::open(ip, server, T).expect("an association");
        a.spdy(&spdy_get("/big.bin", 1 << 30));
        peers.push(a);
    }
    for a in peers.iter_mut() {
        a.pump(Duration::from_millis(500), false);
    }
    let got: u64 = peers.iter().map(|a| a.data_in).sum();
    // During: served.
    sctp_fetch_ok(&srv, "while four peers never acknowledge");
    let rss = proc_status_kib(srv.pid(), "VmRSS");
    eprintln!(
        "{stack}: 4 peers that never acknowledge a 64 MiB file: {got} DATA chunks sent to \
         them, server RSS {base} -> {rss} KiB"
    );
    // The server gives each up after 10 retransmission timeouts with no SACK, and says so
    // with an ABORT. The peers stay silent: a DATA chunk from the peer is no SACK, but
    // usrsctp takes it as a sign of life (a PING every 2 s kept its association over
    // 60 s).
    let t = Instant::now();
    for (i, a) in peers.iter_mut().enumerate() {
        while !a.aborted {
            assert!(
                t.elapsed() < Duration::from_secs(50),
                "association {i} still kept after {:?}",
                t.elapsed()
            );
            a.pump(Duration::from_millis(500), false);
        }
    }
    eprintln!("given up after {:?} more", t.elapsed());
    srv.assert_alive();
    sctp_fetch_ok(&srv, "after peers that never acknowledge");
    let peak = proc_status_kib(srv.pid(), "VmHWM");
    report(
        &format!("SCTP ({stack}) peer that never acknowledges"),
        "what waits for the peer (the stack's send queue, the byte stream's 1 MiB + 1,024 \
         frames + 256 KiB), given up after 10 retransmission timeouts",
        peak,
    );
}

#[test]
fn sctp_endless_and_huge_messages_are_bounded() {
    endless_and_huge_messages("sctp-proto", "127.0.4");
}

#[test]
fn usrsctp_endless_and_huge_messages_are_bounded() {
    endless_and_huge_messages("usrsctp", "127.0.6");
}

/// Endless, far-ahead, huge and unclaimed messages at a server on `stack`, from four
/// addresses under `net` (`net.1` to `net.4`).
fn endless_and_huge_messages(stack: &str, net: &str) {
    let site = site();
    let mut srv = start_sctp(&site, &["--sctp-stack", stack], &[]);
    let server: SocketAddr = srv.addr.parse().unwrap();
    let piece = vec![0u8; 1400];
    let rss = |srv: &Server| proc_status_kib(srv.pid(), "VmRSS");
    let base = rss(&srv);

    // One message that never ends (no E bit), 42 MB of it, whatever the window says.
    let mut a = raw::Assoc::open(&format!("{net}.1"), server, T).expect("an association");
    a.spdy(&spdy_get("/index.html", 1 << 20));
    for i in 0..30_000u32 {
        let flags = if i == 0 { raw::B } else { 0 };
        let c = raw::Assoc::data_chunk(a.next_tsn, 1, 0, flags, &piece);
        a.next_tsn = a.next_tsn.wrapping_add(1);
        a.send(&[c]);
        if i % 256 == 255 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    a.pump(Duration::from_millis(500), true);
    let endless = rss(&srv);

    // One chunk 100,000 TSNs ahead, then 40,000 chunks (56 MB) in order from the first
    // TSN, each the start of a message of its own: the stack takes them as "missing"
    // whatever its buffer holds, unless the DATA guard stops them.
    let mut b = raw::Assoc::open(&format!("{net}.2"), server, T).expect("an association");
    let first = b.next_tsn;
    b.send(&[raw::Assoc::data_chunk(
        first.wrapping_add(100_000),
        2,
        9,
        raw::B,
        &piece,
    )]);
    for i in 0..40_000u32 {
        let stream = 3 + (i % 200) as u16;
        let c = raw::Assoc::data_chunk(
            first.wrapping_add(i),
            stream,
            (i / 200) as u16,
            raw::B,
            &piece,
        );
        b.send(&[c]);
        if i % 256 == 255 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    b.pump(Duration::from_millis(500), true);
    let gap = rss(&srv);

    // A 17 MiB message (over the largest SPDY frame).
    let mut c = raw::Assoc::open(&format!("{net}.3"), server, T).expect("an association");
    c.message(1, &vec![0u8; 17 * MIB]);
    c.pump(Duration::from_millis(500), true);
    let huge = rss(&srv);

    // 24 MiB of DATA frames for a stream never opened (stream 101), acknowledged as they
    // arrive: held for its SYN_STREAM up to 16 MiB, then the session judges them.
    let mut d = raw::Assoc::open(&format!("{net}.4"), server, T).expect("an association");
    let mut frame = vec![0, 0, 0, 101, 0, 0, 0x05, 0x9c];
    frame.resize(8 + 1436, b'd');
    for i in 0..(24 * MIB / 1436) {
        d.message(1 + 50, &frame);
        if i % 64 == 63 {
            d.pump(Duration::from_millis(1), true);
        }
    }
    d.pump(Duration::from_millis(500), true);
    let early = rss(&srv);
    eprintln!(
        "{stack}: server RSS {base} KiB; after an endless message {endless}, a TSN gap filled {gap}, \
         a 17 MiB message {huge}, 24 MiB of DATA for a stream never opened {early}"
    );
    // During: served while the four are open.
    sctp_fetch_ok(&srv, "while endless and huge messages are held");
    for p in [&a, &b, &c, &d] {
        p.abort();
    }
    srv.assert_alive();
    sctp_fetch_ok(&srv, "after endless and huge messages");
    let peak = proc_status_kib(srv.pid(), "VmHWM");
    report(
        &format!("SCTP ({stack}) endless and huge messages"),
        if stack == "usrsctp" {
            "usrsctp's receive buffer + 16 MiB of early DATA per association"
        } else {
            "5 MiB taken and not delivered (the DATA guard) + 16 MiB of early DATA per \
             association"
        },
        peak,
    );
}

/// For each socket, the first chunk type of each datagram queued for it (read without
/// waiting).
fn heard_on(socks: &[UdpSocket]) -> Vec<Vec<u8>> {
    let mut buf = vec![0u8; 65536];
    socks
        .iter()
        .map(|s| {
            s.set_nonblocking(true).unwrap();
            let mut kinds = Vec::new();
            while let Ok(n) = s.recv(&mut buf) {
                // 255: a datagram that is no SCTP packet (still an answer).
                kinds.push(raw::kind(&buf[..n]).map_or(255, |k| k.0));
            }
            s.set_nonblocking(false).unwrap();
            kinds
        })
        .collect()
}

/// For each socket, whether an INIT ACK has come back.
fn init_acked(socks: &[UdpSocket]) -> Vec<bool> {
    heard_on(socks)
        .iter()
        .map(|k| k.contains(&chunk::INIT_ACK))
        .collect()
}

/// `n` sockets at `ip`, each sending one INIT to `server`.
fn inits_from(ip: &str, n: usize, server: SocketAddr) -> Vec<UdpSocket> {
    (0..n)
        .map(|_| {
            let s = raw::socket(ip, server);
            let _ = s.send(&raw::init(raw::tag()));
            s
        })
        .collect()
}

#[test]
fn usrsctp_new_addresses_take_bounded_slots() {
    // The usrsctp listener gives each new remote UDP address a socket of its own (an
    // AF_CONN address) from its first INIT until its handshake completes or 10 s pass.
    let site = site();
    let mut srv = start_sctp(
        &site,
        &[
            "--sctp-stack",
            "usrsctp",
            "--max-connections",
            "32",
            "--max-connections-per-ip",
            "8",
        ],
        &[],
    );
    let server: SocketAddr = srv.addr.parse().unwrap();
    // 200 addresses (ports) of 127.0.5.2 send DATA for no association: no slot, no answer.
    let stray: Vec<UdpSocket> = (0..200)
        .map(|_| {
            let s = raw::socket("127.0.5.2", server);
            let _ = s.send(&raw::packet(
                raw::tag(),
                &[raw::Assoc::data_chunk(1, 1, 0, raw::B | raw::E, b"x")],
            ));
            s
        })
        .collect();
    // 200 addresses of 127.0.5.1 send an INIT each: 8 are answered.
    let one_ip = inits_from("127.0.5.1", 200, server);
    std::thread::sleep(Duration::from_millis(500));
    let got_one: usize = init_acked(&one_ip).iter().filter(|&&a| a).count();
    let stray_answered = heard_on(&stray).iter().filter(|k| !k.is_empty()).count();
    // The stray datagrams took none of 127.0.5.2's slots: a handshake from it completes.
    let from_stray_ip = raw::Assoc::open("127.0.5.2", server, T);
    sctp_fetch_ok(&srv, "during a flood of new addresses");
    // Six more IPs, 10 addresses each: the 32 in all hold.
    let many: Vec<UdpSocket> = (3..9)
        .flat_map(|i| inits_from(&format!("127.0.5.{i}"), 10, server))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let got_many: usize = init_acked(&many).iter().filter(|&&a| a).count();
    let flood_end = Instant::now();
    eprintln!(
        "usrsctp: INITs from 200 ports of one IP: {got_one} answered; 200 stray datagrams: \
         {stray_answered} answered; then 60 INITs from 6 IPs: {got_many} answered"
    );
    assert_eq!(got_one, 8, "answers to one IP's 200 INITs");
    assert_eq!(stray_answered, 0, "stray datagrams answered");
    assert!(
        from_stray_ip.is_some(),
        "an INIT after the stray datagrams was refused"
    );
    // 32 in all, less 127.0.5.1's 8 and 127.0.5.2's association: at most 23 (the fetch's
    // may still hold one).
    assert!(
        got_many > 0 && got_many <= 23,
        "answers to 60 INITs: {got_many}"
    );
    // The slots of handshakes never completed are freed (10 s, then 5 s of linger).
    std::thread::sleep(Duration::from_secs(16).saturating_sub(flood_end.elapsed()));
    let again = inits_from("127.0.5.1", 1, server);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        init_acked(&again),
        [true],
        "127.0.5.1 still refused after 16 s"
    );
    srv.assert_alive();
    sctp_fetch_ok(&srv, "after a flood of new addresses");
    let peak = proc_status_kib(srv.pid(), "VmHWM");
    report(
        "SCTP (usrsctp) INITs from new addresses",
        "8 addresses per IP, 32 in all, a slot only for an INIT, each freed after 10 s",
        peak,
    );
}

// ---- The stream multiplexer: `speedy kube port-forward` ----

/// A kubelet that upgrades to SPDY/3.1, answers every stream and echoes `data`
/// streams; once the client has a data stream open it pushes `flood` streams tied to it,
/// each with 4 KiB of headers and reset at once. Returns its address and the count of
/// pushes sent so far.
fn hostile_kubelet(flood: usize) -> (String, Arc<AtomicU32>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let sent = Arc::new(AtomicU32::new(0));
    let count = sent.clone();
    std::thread::spawn(move || {
        let Ok((mut c, _)) = l.accept() else { return };
        read_request_head(&mut c);
        c.write_all(
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\
              X-Stream-Protocol-Version: portforward.k8s.io\r\n\r\n",
        )
        .unwrap();
        c.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
        let mut s = Session::new(Config::new(Role::Server, Version::V3_1));
        let mut inbox = bytes::BytesMut::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut data_streams = Vec::new();
        let pad = "p".repeat(4096);
        let mut pushed = 0;
        let end = Instant::now() + Duration::from_secs(60);
        while Instant::now() < end {
            match c.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    inbox.extend_from_slice(&buf[..n]);
                    s.recv(&mut inbox, Instant::now());
                }
                Err(_) => {}
            }
            while let Some(e) = s.poll_event() {
                match e {
                    Event::Stream { id, headers, .. } => {
                        let _ = s.reply(id, Headers::new(), false);
                        if headers.get("streamtype") == Some(&b"data"[..]) {
                            data_streams.push(id);
                        }
                    }
                    Event::Data { id, data, fin } => {
                        s.release(id, data.len());
                        if data_streams.contains(&id) {
                            let _ = s.send_data(id, data, fin);
                        }
                    }
                    _ => {}
                }
            }
            // The flood, a batch at a time, tied to the first data stream.
            if let Some(&assoc) = data_streams.first() {
                for _ in 0..200.min(flood - pushed) {
                    let h = Headers::from_pairs([
                        (":scheme", "http"),
                        (":host", "localhost"),
                        (":path", &format!("/push/{pushed}")),
                        (":status", "200"),
                        (":version", "HTTP/1.1"),
                        ("x-pad", &pad),
                    ]);
                    let Ok(id) = s.push(assoc, h, 0) else { break };
                    // The SYN_STREAM goes out before its RST_STREAM.
                    let mut out = OutBuf::new();
                    while s.poll_transmit(&mut out) {}
                    if c.write_all(&out.take_all()).is_err() {
                        return;
                    }
                    s.reset(id, RstStatus::CANCEL);
                    pushed += 1;
                    count.store(pushed as u32, Ordering::Relaxed);
                }
            }
            let mut out = OutBuf::new();
            while s.poll_transmit(&mut out) {}
            if c.write_all(&out.take_all()).is_err() {
                return;
            }
        }
    });
    (addr, sent)
}

/// Echoes `len` bytes through the forwarded port at `addr` in one connection.
fn echo_through(addr: &str, len: usize) {
    let mut c = TcpStream::connect(addr).expect("connect to the forwarded port");
    c.set_read_timeout(Some(T)).unwrap();
    let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
    let mut w = c.try_clone().unwrap();
    let sent = data.clone();
    let writer = std::thread::spawn(move || w.write_all(&sent).unwrap());
    let mut got = vec![0u8; len];
    c.read_exact(&mut got).expect("the echo");
    writer.join().unwrap();
    assert!(got == data, "the echo differs");
}

#[test]
fn kube_port_forward_survives_a_push_flood() {
    let (kubelet, pushed) = hostile_kubelet(30_000);
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["kube", "port-forward"])
        .arg(format!("http://{kubelet}/portforward"))
        .arg("0:80");
    let mut fwd = Server::spawn(cmd, "forwarding ");
    // The first connection opens the data stream the pushes are tied to; it echoes
    // during the flood.
    let mut c = TcpStream::connect(&fwd.addr).expect("connect to the forwarded port");
    c.set_read_timeout(Some(T)).unwrap();
    let t = Instant::now();
    let mut rounds = 0;
    while pushed.load(Ordering::Relaxed) < 30_000 && t.elapsed() < Duration::from_secs(40) {
        let msg = format!("round {rounds}\n");
        c.write_all(msg.as_bytes()).unwrap();
        let mut got = vec![0u8; msg.len()];
        c.read_exact(&mut got).expect("an echo during the flood");
        assert_eq!(got, msg.as_bytes());
        rounds += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    let n = pushed.load(Ordering::Relaxed);
    eprintln!(
        "push flood: {n} pushes (each reset at once) in {:?}, {rounds} echoes during",
        t.elapsed()
    );
    assert_eq!(n, 30_000, "the flood did not get through");
    // After: a new forwarded connection works (and the flood's last frames are read).
    echo_through(&fwd.addr, 256 * 1024);
    assert!(
        fwd.child.try_wait().unwrap().is_none(),
        "port-forward exited"
    );
    let peak = proc_status_kib(fwd.pid(), "VmHWM");
    report(
        "kube port-forward push flood",
        "streams waiting for accept held to the concurrent-stream limit (100)",
        peak,
    );
    drop(c);
}

/// The kubelet double (exec and port-forward echo) on a thread of its own.
fn start_double() -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap().to_string()).unwrap();
            let _ = speedy_net::spdy::kube_double::serve(l).await;
        });
    });
    rx.recv_timeout(T).expect("the double started")
}

#[test]
fn kube_port_forward_bounds_a_stalled_stream() {
    let double = start_double();
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["kube", "port-forward"])
        .arg(format!("http://{double}/portforward"))
        .arg("0:80");
    let mut fwd = Server::spawn(cmd, "forwarding ");
    // A: writes up to 256 MiB and never reads its echo.
    let a = TcpStream::connect(&fwd.addr).expect("connect A");
    let mut aw = a.try_clone().unwrap();
    aw.set_write_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = vec![b'a'; 64 * 1024];
        let mut sent = 0usize;
        let mut last = Instant::now();
        let end = Instant::now() + Duration::from_secs(20);
        while sent < 256 * MIB && Instant::now() < end && last.elapsed() < Duration::from_secs(3) {
            if let Ok(n) = aw.write(&chunk) {
                sent += n;
                last = Instant::now();
            }
        }
        sent
    });
    std::thread::sleep(Duration::from_millis(500));
    // B: 16 MiB echoed meanwhile.
    let t = Instant::now();
    echo_through(&fwd.addr, 16 * MIB);
    let b_took = t.elapsed();
    let sent = writer.join().unwrap();
    eprintln!(
        "stalled stream: A got {:.1} MiB in before it stopped; B echoed 16 MiB in {b_took:?}",
        sent as f64 / MIB as f64
    );
    assert!(sent < 48 * MIB, "A could send {sent} bytes without reading");
    // After: another connection is served.
    echo_through(&fwd.addr, 256 * 1024);
    assert!(
        fwd.child.try_wait().unwrap().is_none(),
        "port-forward exited"
    );
    let peak = proc_status_kib(fwd.pid(), "VmHWM");
    report(
        "kube port-forward stalled stream",
        "48 MiB taken from a connection that never reads (windows and socket buffers)",
        peak,
    );
    drop(a);
}

// ---- The HTTP/1.1 pipelining client ----

/// A server thread that, per accepted connection (up to 8), reads one request head and
/// runs `each`; returns its address.
fn hostile_http(each: fn(TcpStream)) -> String {
    support::hostile_server(8, each)
}

/// Writes `head`, then `piece` over and over for up to 15 s (until the client goes).
fn forever(mut c: TcpStream, head: &[u8], piece: &[u8]) {
    if c.write_all(head).is_err() {
        return;
    }
    let end = Instant::now() + Duration::from_secs(15);
    while Instant::now() < end && c.write_all(piece).is_ok() {}
}

fn endless_head(c: TcpStream) {
    // One header whose value never ends: no line for httparse to count.
    forever(c, b"HTTP/1.1 200 OK\r\nx-pad: ", &[b'a'; 4096]);
}

fn endless_body(c: TcpStream) {
    forever(
        c,
        b"HTTP/1.1 200 OK\r\nContent-Length: 100000000000\r\n\r\n",
        &[b'b'; 64 * 1024],
    );
}

fn endless_interim(c: TcpStream) {
    forever(c, b"", b"HTTP/1.1 100 Continue\r\n\r\n");
}

fn silent(c: TcpStream) {
    std::thread::sleep(Duration::from_secs(15));
    drop(c);
}

/// Answers the request, then a second, endless response nobody asked for.
fn unasked(c: TcpStream) {
    forever(
        c,
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello\
          HTTP/1.1 200 OK\r\nContent-Length: 100000000000\r\n\r\n",
        &[b'u'; 64 * 1024],
    );
}

/// `speedy fetch --protocol http1 --pipeline ARGS URL...`: exit code, stdout and stderr,
/// time taken and peak RSS.
fn pipelined_fetch(args: &[&str], urls: &[String]) -> (Option<i32>, String, Duration, u64) {
    let t = Instant::now();
    let mut child = std::process::Command::new(BIN)
        .args(["fetch", "--protocol", "http1", "--pipeline"])
        .args(args)
        .args(urls)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start speedy fetch");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let (status, peak) = peak_rss_until_exit(&mut child, Duration::from_secs(30), "speedy fetch");
    let text = format!("{}{}", o.join().unwrap(), e.join().unwrap());
    (status.code(), text, t.elapsed(), peak)
}

#[test]
fn pipelined_fetch_against_hostile_servers() {
    let two = |addr: &str| vec![format!("http://{addr}/a"), format!("http://{addr}/b")];
    let mut peak = 0;
    let mut check = |what: &str, each: fn(TcpStream), args: &[&str], code: i32, says: &str| {
        let addr = hostile_http(each);
        let (got, text, took, rss) = pipelined_fetch(args, &two(&addr));
        eprintln!("pipelined fetch, {what}: exit {got:?} in {took:?}, peak RSS {rss} KiB");
        assert_eq!(got, Some(code), "{what}: {text}");
        assert!(text.contains(says), "{what}: {text}");
        assert!(took < Duration::from_secs(10), "{what}: took {took:?}");
        peak = peak.max(rss);
    };
    check(
        "endless head",
        endless_head,
        &[],
        1,
        "response head over 64 KiB",
    );
    check(
        "endless body",
        endless_body,
        &["--max-time", "2"],
        28,
        "--max-time",
    );
    check(
        "endless 100 Continue",
        endless_interim,
        &["--read-timeout", "1"],
        1,
        "no response within 1s",
    );
    check(
        "silent",
        silent,
        &["--read-timeout", "1"],
        1,
        "no response within 1s",
    );
    // A response for a request never sent: one URL; the second, endless response is
    // never read as anyone's.
    let addr = hostile_http(unasked);
    let (got, text, took, rss) = pipelined_fetch(&[], &[format!("http://{addr}/a")]);
    eprintln!("pipelined fetch, unasked response: exit {got:?} in {took:?}, peak RSS {rss} KiB");
    assert_eq!(got, Some(0), "{text}");
    assert!(text.contains("\"status\":200"), "{text}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    peak = peak.max(rss);
    // After: a well-behaved server is fetched as usual (each fetch is a process of its
    // own: "during" is the answers above, each ended by its bound).
    let good = hostile_http(|mut c| {
        let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        std::thread::sleep(Duration::from_millis(200));
    });
    let (got, text, _, _) = pipelined_fetch(&[], &[format!("http://{good}/a")]);
    assert_eq!(got, Some(0), "{text}");
    assert!(text.contains("\"status\":200"), "{text}");
    report(
        "pipelined fetch against hostile servers",
        "64 KiB response head, --read-timeout, --max-time",
        peak,
    );
}
