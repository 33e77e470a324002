//! The TCP sockets of the calling thread's network namespace, with each one's
//! `TCP_INFO` and congestion control, asked of the kernel over netlink (`sock_diag(7)`,
//! `SOCK_DIAG_BY_FAMILY` dumps of IPv4 and IPv6): what `ss -tin` prints, without starting
//! a process and parsing its text, and aborts the ones picked ([`abort_tcp`], what `ss -K`
//! does). The lab samples its server namespace with it while a load runs, and before a
//! load aborts the server's ends of the previous load's connections.

use super::sockinfo::TcpInfo;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

const NETLINK_SOCK_DIAG: libc::c_int = 4;
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// Asks the kernel to abort one socket (`CONFIG_INET_DIAG_DESTROY`).
const SOCK_DESTROY: u16 = 21;
const NLM_F_ACK: u16 = 4;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
const INET_DIAG_INFO: u16 = 2;
const INET_DIAG_CONG: u16 = 4;
/// `struct nlmsghdr`.
const NLMSG_HDR: usize = 16;
/// `struct inet_diag_msg`: family, state, timer, retrans, the 48-byte socket id,
/// expires, rqueue, wqueue, uid, inode.
const DIAG_MSG: usize = 72;
/// `struct inet_diag_req_v2`: family, protocol, extensions, pad, states, socket id.
const DIAG_REQ: usize = 56;
/// `struct inet_diag_sockid`: sport, dport, src[16], dst[16], interface, cookie[2].
const SOCK_ID: usize = 48;
/// The states of a connection with a sender state to report, and the ones it can be
/// aborted in: `TCP_ESTABLISHED`, `TCP_SYN_SENT`, `TCP_FIN_WAIT1`, `TCP_FIN_WAIT2`,
/// `TCP_CLOSE_WAIT`, `TCP_LAST_ACK`, `TCP_CLOSING`. Not `TCP_LISTEN`, `TCP_CLOSE`,
/// `TCP_TIME_WAIT`, `TCP_SYN_RECV`, `TCP_NEW_SYN_RECV`, and above all not
/// `TCP_BOUND_INACTIVE` (13): asking for it makes the kernel (6.5 and later) walk the
/// host's whole bind hash table, shared by every namespace (65,536 buckets here), on each
/// dump; with it the lab's samples spent 3.5% of the machine's CPU in `tcp_diag_dump`.
const CONNECTED: u32 = (1 << 1) | (1 << 2) | (1 << 4) | (1 << 5) | (1 << 8) | (1 << 9) | (1 << 11);

/// One connected TCP socket as the kernel reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiagSocket {
    /// The socket's own address.
    pub local: SocketAddr,
    /// The peer's address.
    pub peer: SocketAddr,
    /// Its `TCP_INFO`, when the kernel gave one.
    pub info: Option<TcpInfo>,
    /// Its congestion control (`cubic`, `bbr`, ...), when the kernel gave one.
    pub cc: Option<String>,
}

/// Every connected TCP socket (established or closing, not listening, time-wait or
/// half-open) of the calling thread's network namespace: IPv4, then IPv6 when `ipv6`
/// (each family is one walk of the namespace's whole connection table).
pub fn connected_tcp(ipv6: bool) -> io::Result<Vec<DiagSocket>> {
    let fd = open()?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let families = [(1u32, libc::AF_INET as u8), (2, libc::AF_INET6 as u8)];
    let ext = (1u8 << (INET_DIAG_INFO - 1)) | (1u8 << (INET_DIAG_CONG - 1));
    for &(seq, family) in &families[..1 + usize::from(ipv6)] {
        let req = request(
            SOCK_DIAG_BY_FAMILY,
            NLM_F_DUMP,
            seq,
            family,
            ext,
            CONNECTED,
            None,
        );
        send(&fd, &req)?;
        read_dump(&fd, &mut buf, &mut |body| {
            if let Some(s) = parse_socket(body) {
                out.push(s);
            }
        })?;
    }
    Ok(out)
}

/// Aborts the IPv4 TCP connections of the calling thread's network namespace that
/// `which(local, peer)` picks, as `ss -K` does (`SOCK_DESTROY`): each is closed at once,
/// its owner's next call fails with `ECONNABORTED`, and the peer is sent a reset.
/// Listening, time-wait and half-open sockets are left alone, and so are orphans (sockets
/// whose process closed them: the kernel does not abort those). Returns how many were
/// aborted. Needs `CAP_NET_ADMIN` in the namespace and a kernel built with
/// `CONFIG_INET_DIAG_DESTROY` (`EOPNOTSUPP` otherwise).
pub fn abort_tcp(which: impl Fn(SocketAddr, SocketAddr) -> bool) -> io::Result<usize> {
    let fd = open()?;
    let mut buf = vec![0u8; 64 * 1024];
    let family = libc::AF_INET as u8;
    let req = request(
        SOCK_DIAG_BY_FAMILY,
        NLM_F_DUMP,
        1,
        family,
        0,
        CONNECTED,
        None,
    );
    send(&fd, &req)?;
    let mut picked: Vec<[u8; SOCK_ID]> = Vec::new();
    read_dump(&fd, &mut buf, &mut |body| {
        if let Some(s) = parse_socket(body) {
            if which(s.local, s.peer) {
                picked.push(body[4..4 + SOCK_ID].try_into().expect("a whole message"));
            }
        }
    })?;
    let mut aborted = 0;
    for (seq, id) in (2u32..).zip(&picked) {
        let req = request(SOCK_DESTROY, NLM_F_ACK, seq, family, 0, CONNECTED, Some(id));
        send(&fd, &req)?;
        match read_ack(&fd, &mut buf) {
            Ok(()) => aborted += 1,
            // Closed meanwhile.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(aborted)
}

/// A netlink socket for `sock_diag`.
fn open() -> io::Result<std::os::fd::OwnedFd> {
    // SAFETY: a plain socket(2) call; the descriptor is owned below.
    let raw = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            NETLINK_SOCK_DIAG,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor nothing else owns.
    Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) })
}

/// A request of `kind` about `family`'s TCP sockets in `states` (a bit per state),
/// asking for the attributes in `ext`: of every such socket when `id` is `None` (a
/// dump), else of the one socket `id` names.
fn request(
    kind: u16,
    flags: u16,
    seq: u32,
    family: u8,
    ext: u8,
    states: u32,
    id: Option<&[u8; SOCK_ID]>,
) -> Vec<u8> {
    let len = NLMSG_HDR + DIAG_REQ;
    let mut req = Vec::with_capacity(len);
    req.extend_from_slice(&(len as u32).to_ne_bytes());
    req.extend_from_slice(&kind.to_ne_bytes());
    req.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
    req.extend_from_slice(&seq.to_ne_bytes());
    req.extend_from_slice(&0u32.to_ne_bytes());
    // struct inet_diag_req_v2: family, protocol, extensions, pad, states, the socket id.
    req.extend_from_slice(&[family, libc::IPPROTO_TCP as u8, ext, 0]);
    req.extend_from_slice(&states.to_ne_bytes());
    if let Some(id) = id {
        req.extend_from_slice(id);
    }
    req.resize(len, 0);
    req
}

/// Sends one request to the kernel.
fn send(fd: &impl std::os::fd::AsRawFd, req: &[u8]) -> io::Result<()> {
    // SAFETY: sockaddr_nl is plain data; all-zero is the kernel's address.
    let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    kernel.nl_family = libc::AF_NETLINK as u16;
    // SAFETY: sendto(2) reads the request and the address, both alive through the call.
    let n = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            req.as_ptr().cast(),
            req.len(),
            0,
            (&kernel as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as u32,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads one datagram into `buf`, retrying when interrupted.
fn recv(fd: &impl std::os::fd::AsRawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: recv(2) writes at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Reads the kernel's acknowledgement of one request: an error message whose code is
/// 0 for success, else the error.
fn read_ack(fd: &impl std::os::fd::AsRawFd, buf: &mut [u8]) -> io::Result<()> {
    let n = recv(fd, buf)?;
    let m = &buf[..n];
    if n < NLMSG_HDR + 4 || u16::from_ne_bytes([m[4], m[5]]) != NLMSG_ERROR {
        return Err(io::Error::other("sock_diag: no acknowledgement"));
    }
    match i32::from_ne_bytes(m[NLMSG_HDR..NLMSG_HDR + 4].try_into().expect("4 bytes")) {
        0 => Ok(()),
        c => Err(io::Error::from_raw_os_error(-c)),
    }
}

/// Reads the dump's datagrams until `NLMSG_DONE`, handing each socket message's body to
/// `on_socket`.
fn read_dump(
    fd: &impl std::os::fd::AsRawFd,
    buf: &mut [u8],
    on_socket: &mut dyn FnMut(&[u8]),
) -> io::Result<()> {
    // A dump of a namespace's sockets ends in a few datagrams; the bound only guards
    // against a kernel that never says it is done.
    for _ in 0..100_000 {
        let n = recv(fd, buf)?;
        if parse_messages(&buf[..n], on_socket)? {
            return Ok(());
        }
    }
    Err(io::Error::other("sock_diag: the dump did not end"))
}

/// Parses one datagram of netlink messages, handing each socket message's body to
/// `on_socket`; `true` once the dump is done.
fn parse_messages(mut data: &[u8], on_socket: &mut dyn FnMut(&[u8])) -> io::Result<bool> {
    while data.len() >= NLMSG_HDR {
        let len = u32::from_ne_bytes(data[0..4].try_into().expect("4 bytes")) as usize;
        let kind = u16::from_ne_bytes([data[4], data[5]]);
        if len < NLMSG_HDR || len > data.len() {
            return Err(io::Error::other("sock_diag: truncated message"));
        }
        let body = &data[NLMSG_HDR..len];
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let code = body
                    .get(..4)
                    .map(|b| i32::from_ne_bytes(b.try_into().expect("4 bytes")))
                    .unwrap_or(0);
                return Err(match code {
                    0 => io::Error::other("sock_diag: empty error"),
                    c => io::Error::from_raw_os_error(-c),
                });
            }
            SOCK_DIAG_BY_FAMILY if body.len() >= DIAG_MSG => on_socket(body),
            _ => {}
        }
        data = &data[len.next_multiple_of(4).min(data.len())..];
    }
    Ok(false)
}

/// One `inet_diag_msg` and its attributes.
fn parse_socket(body: &[u8]) -> Option<DiagSocket> {
    if body.len() < DIAG_MSG {
        return None;
    }
    let family = body[0];
    let port = |at: usize| u16::from_be_bytes([body[at], body[at + 1]]);
    let addr = |at: usize| -> Option<IpAddr> {
        let b = &body[at..at + 16];
        match i32::from(family) {
            libc::AF_INET => Some(Ipv4Addr::new(b[0], b[1], b[2], b[3]).into()),
            libc::AF_INET6 => Some(Ipv6Addr::from(<[u8; 16]>::try_from(b).ok()?).into()),
            _ => None,
        }
    };
    // The socket id: sport, dport (network order), src[16], dst[16], interface, cookie.
    let local = SocketAddr::new(addr(8)?, port(4));
    let peer = SocketAddr::new(addr(24)?, port(6));
    let mut sock = DiagSocket {
        local,
        peer,
        info: None,
        cc: None,
    };
    let mut attrs = &body[DIAG_MSG..];
    while attrs.len() >= 4 {
        let len = usize::from(u16::from_ne_bytes([attrs[0], attrs[1]]));
        let kind = u16::from_ne_bytes([attrs[2], attrs[3]]);
        if len < 4 || len > attrs.len() {
            break;
        }
        let payload = &attrs[4..len];
        match kind {
            INET_DIAG_INFO => sock.info = Some(TcpInfo::from_kernel_bytes(payload)),
            INET_DIAG_CONG => {
                let name = payload.split(|&b| b == 0).next().unwrap_or_default();
                sock.cc = Some(String::from_utf8_lossy(name).into_owned());
            }
            _ => {}
        }
        attrs = &attrs[len.next_multiple_of(4).min(attrs.len())..];
    }
    Some(sock)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn finds_a_connection_with_its_sender_state() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        s.write_all(&[7; 50_000]).unwrap();
        let mut got = vec![0; 50_000];
        c.read_exact(&mut got).unwrap();
        let all = connected_tcp(true).unwrap();
        assert!(connected_tcp(false).unwrap().len() <= all.len());
        let server_side = all
            .iter()
            .find(|d| d.local == s.local_addr().unwrap() && d.peer == c.local_addr().unwrap())
            .unwrap_or_else(|| panic!("the accepted socket is listed: {all:?}"));
        let info = server_side.info.expect("TCP_INFO");
        assert!(info.snd_cwnd > 0 && info.rtt_us > 0, "{info:?}");
        assert!(info.bytes_acked >= 50_000, "{info:?}");
        assert!(server_side.cc.as_deref().is_some_and(|c| !c.is_empty()));
        // The listener is not a connection.
        assert!(!all
            .iter()
            .any(|d| d.local == l.local_addr().unwrap() && d.peer.port() == 0));
    }

    #[test]
    fn aborts_the_connections_it_picks_and_no_other() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let mut client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut server, _) = l.accept().unwrap();
        let mut kept = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut kept_server, _) = l.accept().unwrap();
        let target = client.local_addr().unwrap();
        // The server's end, as the lab picks it: its peer is the client.
        let n = abort_tcp(|local, peer| local.port() == port && peer == target).unwrap();
        assert_eq!(n, 1);
        let mut b = [0u8; 1];
        let err = server.read(&mut b).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ECONNABORTED), "{err}");
        // The client was sent a reset.
        let err = client.read(&mut b).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ECONNRESET), "{err}");
        // The other connection and the listener still work.
        kept_server.write_all(b"x").unwrap();
        kept.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"x");
        let _again = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        l.accept().unwrap();
        // Nothing left to pick.
        assert_eq!(abort_tcp(|_, peer| peer == target).unwrap(), 0);
    }

    #[test]
    fn malformed_replies_are_errors_not_panics() {
        let mut out: Vec<DiagSocket> = Vec::new();
        let mut push = |b: &[u8]| out.extend(parse_socket(b));
        // A length beyond the datagram.
        let mut m = vec![0u8; 16];
        m[0..4].copy_from_slice(&64u32.to_ne_bytes());
        assert!(parse_messages(&m, &mut push).is_err());
        // An error message carrying EPERM.
        let mut e = vec![0u8; 20];
        e[0..4].copy_from_slice(&20u32.to_ne_bytes());
        e[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        e[16..20].copy_from_slice(&(-libc::EPERM).to_ne_bytes());
        let err = parse_messages(&e, &mut push).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EPERM));
        // A short socket message is skipped.
        let mut s = vec![0u8; 30];
        s[0..4].copy_from_slice(&30u32.to_ne_bytes());
        s[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        assert!(!parse_messages(&s, &mut push).unwrap());
        assert!(out.is_empty());
    }
}
