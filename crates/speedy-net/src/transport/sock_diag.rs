//! The TCP sockets of the calling thread's network namespace, with each one's
//! `TCP_INFO` and congestion control, asked of the kernel over netlink (`sock_diag(7)`,
//! `SOCK_DIAG_BY_FAMILY` dumps of IPv4 and IPv6): what `ss -tin` prints, without starting
//! a process and parsing its text. The lab samples its server namespace with it while a
//! load runs.

use super::sockinfo::TcpInfo;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

const NETLINK_SOCK_DIAG: libc::c_int = 4;
const SOCK_DIAG_BY_FAMILY: u16 = 20;
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
/// `TCP_LISTEN`, `TCP_CLOSE`, `TCP_TIME_WAIT`, `TCP_SYN_RECV`, `TCP_NEW_SYN_RECV`: no
/// connection with a sender state to report.
const SKIPPED_STATES: [u32; 5] = [10, 7, 6, 3, 12];

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
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) };
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let families = [(1u32, libc::AF_INET as u8), (2, libc::AF_INET6 as u8)];
    for &(seq, family) in &families[..1 + usize::from(ipv6)] {
        send_request(&fd, seq, family)?;
        read_dump(&fd, &mut buf, &mut out)?;
    }
    Ok(out)
}

/// Sends a dump request for `family`'s TCP sockets in every state but
/// [`SKIPPED_STATES`], asking for `TCP_INFO` and the congestion control.
fn send_request(fd: &impl std::os::fd::AsRawFd, seq: u32, family: u8) -> io::Result<()> {
    let states = SKIPPED_STATES.iter().fold(0xffff_u32, |m, s| m & !(1 << s));
    let mut req = Vec::with_capacity(NLMSG_HDR + 56);
    req.extend_from_slice(&((NLMSG_HDR + 56) as u32).to_ne_bytes());
    req.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    req.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    req.extend_from_slice(&seq.to_ne_bytes());
    req.extend_from_slice(&0u32.to_ne_bytes());
    // struct inet_diag_req_v2: family, protocol, extensions, pad, states, a zero id.
    let ext = (1u8 << (INET_DIAG_INFO - 1)) | (1u8 << (INET_DIAG_CONG - 1));
    req.extend_from_slice(&[family, libc::IPPROTO_TCP as u8, ext, 0]);
    req.extend_from_slice(&states.to_ne_bytes());
    req.resize(NLMSG_HDR + 56, 0);
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

/// Reads the dump's datagrams until `NLMSG_DONE`, appending each socket to `out`.
fn read_dump(
    fd: &impl std::os::fd::AsRawFd,
    buf: &mut [u8],
    out: &mut Vec<DiagSocket>,
) -> io::Result<()> {
    // A dump of a namespace's sockets ends in a few datagrams; the bound only guards
    // against a kernel that never says it is done.
    for _ in 0..100_000 {
        // SAFETY: recv(2) writes at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if parse_messages(&buf[..n as usize], out)? {
            return Ok(());
        }
    }
    Err(io::Error::other("sock_diag: the dump did not end"))
}

/// Parses one datagram of netlink messages; `true` once the dump is done.
fn parse_messages(mut data: &[u8], out: &mut Vec<DiagSocket>) -> io::Result<bool> {
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
            SOCK_DIAG_BY_FAMILY => {
                if let Some(s) = parse_socket(body) {
                    out.push(s);
                }
            }
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
    fn malformed_replies_are_errors_not_panics() {
        let mut out = Vec::new();
        // A length beyond the datagram.
        let mut m = vec![0u8; 16];
        m[0..4].copy_from_slice(&64u32.to_ne_bytes());
        assert!(parse_messages(&m, &mut out).is_err());
        // An error message carrying EPERM.
        let mut e = vec![0u8; 20];
        e[0..4].copy_from_slice(&20u32.to_ne_bytes());
        e[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        e[16..20].copy_from_slice(&(-libc::EPERM).to_ne_bytes());
        let err = parse_messages(&e, &mut out).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EPERM));
        // A short socket message is skipped.
        let mut s = vec![0u8; 30];
        s[0..4].copy_from_slice(&30u32.to_ne_bytes());
        s[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        assert!(!parse_messages(&s, &mut out).unwrap());
        assert!(out.is_empty());
    }
}
