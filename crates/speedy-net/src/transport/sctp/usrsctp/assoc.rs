//! One usrsctp association's task: the session's byte stream cut into frames by the
//! [`Router`] and sent as messages, messages read (reassembled from partial deliveries)
//! and merged back into one byte stream; woken by the socket's upcall, the session's
//! byte stream, and (a client) its own UDP socket.

use super::super::route::Router;
use super::super::stream::Fate;
use super::super::{SctpConfig, HOLD_LIMIT, RECEIVE_HIGH};
use super::{ffi, Addr, Sock};
use bytes::{Buf, Bytes, BytesMut};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::net::UdpSocket;

/// Payload protocol identifier on every message: 53, binary (as the sctp-proto path).
const PPI: u32 = 53;
/// Frames from the session waiting for the socket's send buffer at most.
const SEND_QUEUE: usize = 1024;
/// The socket's send and receive buffers are usrsctp's defaults; a message larger than
/// this is read in pieces and reassembled.
const READ_CHUNK: usize = 64 << 10;

/// One association and the queues between it and the session.
pub(super) struct Assoc {
    sock: Sock,
    router: Router,
    /// Frames for SCTP, with their stream.
    to_sctp: VecDeque<(u16, Bytes)>,
    /// Frames for the session, and their bytes.
    to_app: VecDeque<Bytes>,
    to_app_bytes: usize,
    /// Messages being reassembled, per SCTP stream.
    partial: HashMap<u16, BytesMut>,
    fate: Fate,
    peer: SocketAddr,
    /// The session closed its side; the association was told to shut down.
    app_done: bool,
    shut: bool,
    /// The association ended (SHUTDOWN, ABORT, failure).
    ended: bool,
    /// The session stopped reading.
    app_gone: bool,
}

/// What the socket said when asked to read or write.
enum Step {
    /// Done for now: wait for the upcall.
    Wait,
    /// The association is over.
    End,
}

impl Assoc {
    /// The task state of an association on `sock` with `peer`.
    pub(super) fn new(
        sock: Sock,
        client: bool,
        cfg: &SctpConfig,
        fate: Fate,
        peer: SocketAddr,
    ) -> Assoc {
        Assoc {
            sock,
            router: Router::new(client, cfg.streams.max(2), HOLD_LIMIT),
            to_sctp: VecDeque::new(),
            to_app: VecDeque::new(),
            to_app_bytes: 0,
            partial: HashMap::new(),
            fate,
            peer,
            app_done: false,
            shut: false,
            ended: false,
            app_gone: false,
        }
    }

    fn fail(&self, e: io::Error) {
        let msg = format!("SCTP to {}: {e}", self.peer);
        tracing::debug!("usrsctp association: {msg}");
        let mut f = self.fate.lock().expect("fate");
        f.get_or_insert((e.kind(), msg));
    }

    /// Whether `e` only says "not now" (or, before the association is up, "not yet").
    fn not_now(&self, e: &io::Error) -> bool {
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINPROGRESS) => true,
            Some(libc::ENOTCONN) => !self.sock.failed(),
            _ => false,
        }
    }

    /// The step after a usrsctp call failed: wait when it only said "not now", else end
    /// the association with the OS error.
    fn after_os_error(&mut self) -> Step {
        let e = io::Error::last_os_error();
        if self.not_now(&e) {
            return Step::Wait;
        }
        self.fail(e);
        Step::End
    }

    /// Reads every message the socket holds while the session keeps up.
    fn read(&mut self, buf: &mut [u8]) -> Step {
        let mut frames = Vec::new();
        while self.to_app_bytes < RECEIVE_HIGH {
            let mut info = ffi::RcvInfo::default();
            let mut infolen = std::mem::size_of::<ffi::RcvInfo>() as libc::socklen_t;
            let mut infotype: libc::c_uint = 0;
            let mut flags: libc::c_int = 0;
            // SAFETY: every pointer is to a live local of the size given.
            let n = unsafe {
                ffi::usrsctp_recvv(
                    self.sock.so,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    (&mut info as *mut ffi::RcvInfo).cast(),
                    &mut infolen,
                    &mut infotype,
                    &mut flags,
                )
            };
            if n < 0 {
                return self.after_os_error();
            }
            if n == 0 {
                return Step::End;
            }
            if flags & ffi::MSG_NOTIFICATION != 0 {
                continue;
            }
            let sid = if infotype == ffi::SCTP_RECVV_RCVINFO {
                info.rcv_sid
            } else {
                0
            };
            let part = self.partial.entry(sid).or_default();
            part.extend_from_slice(&buf[..n as usize]);
            if flags & ffi::MSG_EOR == 0 {
                continue;
            }
            let msg = self.partial.remove(&sid).unwrap_or_default().freeze();
            if let Err(e) = self.router.incoming(sid, msg, &mut frames) {
                self.fail(io::Error::new(io::ErrorKind::InvalidData, e.to_string()));
                return Step::End;
            }
            for f in frames.drain(..) {
                self.to_app_bytes += f.len();
                self.to_app.push_back(f);
            }
        }
        Step::Wait
    }

    /// Sends queued frames while the socket's send buffer takes them; shuts the
    /// association down once the session is done and everything is handed over.
    fn write(&mut self) -> Step {
        while let Some((sid, frame)) = self.to_sctp.front() {
            let mut info = ffi::SndInfo {
                snd_sid: *sid,
                snd_ppid: PPI.to_be(),
                ..Default::default()
            };
            // SAFETY: the frame and the info are live for the call, which copies them.
            let n = unsafe {
                ffi::usrsctp_sendv(
                    self.sock.so,
                    frame.as_ptr().cast(),
                    frame.len(),
                    std::ptr::null_mut(),
                    0,
                    (&mut info as *mut ffi::SndInfo).cast(),
                    std::mem::size_of::<ffi::SndInfo>() as libc::socklen_t,
                    ffi::SCTP_SENDV_SNDINFO,
                    0,
                )
            };
            if n < 0 {
                return self.after_os_error();
            }
            self.to_sctp.pop_front();
        }
        if self.app_done && !self.shut {
            self.shut = true;
            // SAFETY: a live socket; SHUTDOWN goes once every message is acknowledged.
            unsafe { ffi::usrsctp_shutdown(self.sock.so, libc::SHUT_WR) };
        }
        Step::Wait
    }

    /// Runs the association until it ends and the session has read everything. A
    /// client brings its UDP socket and address, fed to the stack here.
    pub(super) async fn run(mut self, io: DuplexStream, udp: Option<(UdpSocket, Addr)>) {
        let (mut rd, mut wr) = tokio::io::split(io);
        let mut from_app = vec![0u8; 64 << 10];
        let mut read_buf = vec![0u8; READ_CHUNK];
        let mut datagram = vec![0u8; if udp.is_some() { 65536 } else { 0 }];
        let mut out = Vec::new();
        let waker = self.sock.waker.clone();
        loop {
            if !self.ended {
                let r = self.read(&mut read_buf);
                let w = self.write();
                self.ended = matches!(r, Step::End) || matches!(w, Step::End);
            }
            if self.ended && (self.to_app.is_empty() || self.app_gone) {
                break;
            }
            let want_app = !self.app_done && !self.ended && self.to_sctp.len() < SEND_QUEUE;
            let front = self.to_app.front().cloned().unwrap_or_default();
            tokio::select! {
                _ = waker.notified(), if !self.ended => {}
                r = async { udp.as_ref().expect("udp").0.recv(&mut datagram).await },
                    if udp.is_some() && !self.ended => match r {
                    Ok(n) => udp.as_ref().expect("udp").1.input(&datagram[..n]),
                    Err(e) => {
                        self.fail(e);
                        self.ended = true;
                    }
                },
                r = rd.read(&mut from_app), if want_app => match r {
                    Ok(0) | Err(_) => self.app_done = true,
                    Ok(n) => {
                        self.router.outgoing(&from_app[..n], &mut out);
                        self.to_sctp.extend(out.drain(..));
                    }
                },
                r = wr.write(&front), if !front.is_empty() && !self.app_gone => match r {
                    Ok(n) => {
                        self.to_app_bytes -= n;
                        let f = self.to_app.front_mut().expect("non-empty");
                        f.advance(n);
                        if f.is_empty() {
                            self.to_app.pop_front();
                        }
                    }
                    Err(_) => {
                        self.app_gone = true;
                        self.app_done = true;
                        self.to_app.clear();
                        self.to_app_bytes = 0;
                    }
                },
            }
        }
        let _ = wr.shutdown().await;
        // The client's address stays routed a little longer, for the SHUTDOWN exchange's
        // last packets; the socket is closed now (gracefully, if the association is up).
        drop(self);
        if let Some((udp, addr)) = udp {
            tokio::spawn(async move {
                let _ = tokio::time::timeout(super::LINGER, async {
                    let mut b = vec![0u8; 65536];
                    while let Ok(n) = udp.recv(&mut b).await {
                        addr.input(&b[..n]);
                    }
                })
                .await;
            });
        }
    }
}
