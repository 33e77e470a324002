//! Hand-driven peers for tests that watch how a server answers on the wire: a SPDY
//! client on a blocking socket (the sans-IO `spdy::Session` does the protocol), a minimal
//! HTTP/2 framer (enough to send a request or hostile header frames and to see DATA,
//! GOAWAY and RST_STREAM), and a plain HTTP/1.1 request. Every read has a timeout; every
//! loop is bounded by a deadline. Addresses are `IP:PORT` strings, as
//! [`TestServer::addr`](crate::TestServer::addr) and `speedy serve`'s start-up line give
//! them.

use spdy::session::{Config, Event, OutBuf, Role, Session};
use spdy::{Headers, StreamId, Version};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// How long one blocking read or write may wait before the caller looks at its deadline.
const TICK: Duration = Duration::from_millis(50);

/// A TCP connection with short read and write timeouts.
pub fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(TICK)).expect("read timeout");
    s.set_write_timeout(Some(Duration::from_secs(2)))
        .expect("write timeout");
    s.set_nodelay(true).expect("nodelay");
    s
}

/// Whether the peer closed `s` (EOF or reset) within `limit`; data read meanwhile is
/// discarded.
pub fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    let mut buf = [0u8; 16384];
    while Instant::now() < end {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return true,
        }
    }
    false
}

/// A SPDY client session over a blocking socket.
pub struct SpdyClient {
    /// The socket.
    pub sock: TcpStream,
    /// The session.
    pub s: Session,
    /// Give DATA credit back as it arrives.
    pub auto_release: bool,
    /// Keep DATA events in what [`SpdyClient::pump_until`] returns (off: they are only
    /// shown to its callback, for large downloads).
    pub keep_data: bool,
    inbox: bytes::BytesMut,
    /// The peer closed the connection.
    pub eof: bool,
}

impl SpdyClient {
    /// Connects and sends the session's opening frames.
    pub fn connect(addr: &str, v: Version) -> SpdyClient {
        let mut c = SpdyClient {
            sock: connect(addr),
            s: Session::new(Config::new(Role::Client, v)),
            auto_release: true,
            keep_data: true,
            inbox: bytes::BytesMut::new(),
            eof: false,
        };
        c.flush();
        c
    }

    /// A request's headers (`http`, host `localhost`) plus `extra`.
    pub fn request(&self, method: &str, path: &str, extra: &[(&str, &str)]) -> Headers {
        let extra = Headers::from_pairs(extra.iter().copied());
        spdy::http::request_headers(self.s.version(), method, "http", "localhost", path, &extra)
    }

    /// Writes everything the session has to send, ignoring a socket that would not take
    /// it (the server stopped reading: that is for the caller's assertions to notice).
    pub fn flush(&mut self) {
        let _ = self.try_flush();
    }

    /// Writes what the session has; the error when the socket would not take it.
    pub fn try_flush(&mut self) -> std::io::Result<()> {
        let mut out = OutBuf::new();
        while self.s.poll_transmit(&mut out) {}
        let bytes = out.take_all();
        self.sock.write_all(&bytes)
    }

    /// Reads for up to `limit`, collecting events until `done` says so (or EOF).
    pub fn pump_until(
        &mut self,
        limit: Duration,
        mut done: impl FnMut(&Event) -> bool,
    ) -> (Vec<Event>, bool) {
        let end = Instant::now() + limit;
        let mut events = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        while Instant::now() < end && !self.eof {
            match self.sock.read(&mut buf) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    self.inbox.extend_from_slice(&buf[..n]);
                    self.s.recv(&mut self.inbox, Instant::now());
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => self.eof = true,
            }
            let mut hit = false;
            while let Some(e) = self.s.poll_event() {
                if self.auto_release {
                    if let Event::Data { id, data, .. } = &e {
                        self.s.release(*id, data.len());
                    }
                }
                hit |= done(&e);
                if self.keep_data || !matches!(e, Event::Data { .. }) {
                    events.push(e);
                }
            }
            let _ = self.try_flush();
            if hit {
                return (events, true);
            }
        }
        (events, false)
    }

    /// One GET that must answer `200`; returns the body length.
    pub fn get_ok(&mut self, path: &str, limit: Duration) -> usize {
        let (status, body) = self.get(path, limit);
        assert_eq!(status, Some(200), "GET {path} over SPDY");
        body.len()
    }

    /// One GET that must end (closed or reset) within `limit`: its status (`None`: no
    /// reply) and body.
    pub fn get(&mut self, path: &str, limit: Duration) -> (Option<u16>, Vec<u8>) {
        let h = self.request("GET", path, &[]);
        let id = self.s.open(h, 0, true).expect("open");
        self.flush();
        let mut status = None;
        let mut body = Vec::new();
        let (ev, done) = self.pump_until(
            limit,
            |e| matches!(e, Event::Closed { id: i } | Event::Reset { id: i, .. } if *i == id),
        );
        for e in ev {
            match e {
                Event::Reply { id: i, headers, .. } if i == id => {
                    status = spdy::http::parse_status(self.s.version(), &headers)
                }
                Event::Data { id: i, data, .. } if i == id => body.extend_from_slice(&data),
                _ => {}
            }
        }
        assert!(done, "GET {path} over SPDY did not finish in {limit:?}");
        (status, body)
    }
}

/// A stream id from its number.
pub fn sid(n: u32) -> StreamId {
    StreamId(n)
}

/// HTTP/1.1: one GET on a fresh connection that must answer 200; returns the response.
pub fn http1_get_ok(addr: &str, path: &str, limit: Duration) -> Vec<u8> {
    let got = http1_get(addr, path, limit);
    assert!(
        got.starts_with(b"HTTP/1.1 200"),
        "GET {path}: {:?}",
        String::from_utf8_lossy(&got[..got.len().min(200)])
    );
    got
}

/// HTTP/1.1: one GET on a fresh connection (`Connection: close`), the path sent as it
/// is; returns the response as read to the connection's end (or `limit`).
pub fn http1_get(addr: &str, path: &str, limit: Duration) -> Vec<u8> {
    let mut s = connect(addr);
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .expect("write request");
    let end = Instant::now() + limit;
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    while Instant::now() < end {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("GET {path}: {e}"),
        }
    }
    got
}

/// An HTTP/2 frame: type, flags, stream, payload.
pub type H2Frame = (u8, u8, u32, Vec<u8>);

/// HTTP/2 frame types used here.
pub mod h2t {
    /// DATA.
    pub const DATA: u8 = 0;
    /// HEADERS.
    pub const HEADERS: u8 = 1;
    /// RST_STREAM.
    pub const RST_STREAM: u8 = 3;
    /// SETTINGS.
    pub const SETTINGS: u8 = 4;
    /// PING.
    pub const PING: u8 = 6;
    /// GOAWAY.
    pub const GOAWAY: u8 = 7;
    /// WINDOW_UPDATE.
    pub const WINDOW_UPDATE: u8 = 8;
    /// CONTINUATION.
    pub const CONTINUATION: u8 = 9;
}

/// A minimal HTTP/2 client: frames out, frames in; SETTINGS and PING are acknowledged
/// and DATA credited back as frames are read.
pub struct H2Raw {
    /// The socket.
    pub sock: TcpStream,
    inbox: Vec<u8>,
    /// The peer closed the connection.
    pub eof: bool,
}

impl H2Raw {
    /// Connects with the preface, empty SETTINGS and a large connection window.
    pub fn connect(addr: &str) -> H2Raw {
        let mut c = H2Raw {
            sock: connect(addr),
            inbox: Vec::new(),
            eof: false,
        };
        c.sock
            .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .expect("preface");
        c.frame(h2t::SETTINGS, 0, 0, &[]);
        c.frame(h2t::WINDOW_UPDATE, 0, 0, &(1u32 << 30).to_be_bytes());
        c
    }

    /// Writes one frame; `false` if the socket would not take it.
    pub fn frame(&mut self, ty: u8, flags: u8, stream: u32, payload: &[u8]) -> bool {
        let len = payload.len() as u32;
        let mut f = Vec::with_capacity(9 + payload.len());
        f.extend_from_slice(&len.to_be_bytes()[1..]);
        f.push(ty);
        f.push(flags);
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        self.sock.write_all(&f).is_ok()
    }

    /// A header block for a request (HPACK literals, no Huffman, no indexing).
    pub fn request_block(method: &str, path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
        let mut b = Vec::new();
        let lit = |b: &mut Vec<u8>, name: &str, value: &str| {
            b.push(0x00); // literal without indexing, new name
            b.push(name.len() as u8);
            b.extend_from_slice(name.as_bytes());
            b.push(value.len() as u8);
            b.extend_from_slice(value.as_bytes());
        };
        lit(&mut b, ":method", method);
        lit(&mut b, ":scheme", "http");
        lit(&mut b, ":authority", "localhost");
        lit(&mut b, ":path", path);
        for (n, v) in extra {
            lit(&mut b, n, v);
        }
        b
    }

    /// The next frame within `limit` (acknowledging SETTINGS and PING, crediting DATA);
    /// `None` on EOF or timeout.
    pub fn next_frame(&mut self, limit: Duration) -> Option<H2Frame> {
        let end = Instant::now() + limit;
        let mut buf = vec![0u8; 65536];
        loop {
            if self.inbox.len() >= 9 {
                let len =
                    u32::from_be_bytes([0, self.inbox[0], self.inbox[1], self.inbox[2]]) as usize;
                if self.inbox.len() >= 9 + len {
                    let f: Vec<u8> = self.inbox.drain(..9 + len).collect();
                    let stream = u32::from_be_bytes([f[5], f[6], f[7], f[8]]) & 0x7fff_ffff;
                    let fr = (f[3], f[4], stream, f[9..].to_vec());
                    match fr.0 {
                        h2t::SETTINGS if fr.1 & 1 == 0 => {
                            self.frame(h2t::SETTINGS, 1, 0, &[]);
                        }
                        h2t::PING if fr.1 & 1 == 0 => {
                            let p = fr.3.clone();
                            self.frame(h2t::PING, 1, 0, &p);
                        }
                        h2t::DATA if !fr.3.is_empty() => {
                            let n = (fr.3.len() as u32).to_be_bytes();
                            self.frame(h2t::WINDOW_UPDATE, 0, 0, &n);
                            self.frame(h2t::WINDOW_UPDATE, 0, fr.2, &n);
                        }
                        _ => {}
                    }
                    return Some(fr);
                }
            }
            if self.eof || Instant::now() >= end {
                return None;
            }
            match self.sock.read(&mut buf) {
                Ok(0) => self.eof = true,
                Ok(n) => self.inbox.extend_from_slice(&buf[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => self.eof = true,
            }
        }
    }

    /// One GET on stream `id` that must end with DATA END_STREAM; returns the body
    /// length. Only `:status` 200 is accepted: the block must start with the static
    /// table's `:status 200` (0x88).
    pub fn get_ok(&mut self, id: u32, path: &str, limit: Duration) -> usize {
        let block = H2Raw::request_block("GET", path, &[]);
        self.frame(h2t::HEADERS, 0x4 | 0x1, id, &block);
        let end = Instant::now() + limit;
        let mut n = 0;
        let mut status_ok = false;
        while Instant::now() < end {
            let Some((ty, flags, s, p)) = self.next_frame(end - Instant::now()) else {
                break;
            };
            if s != id {
                continue;
            }
            match ty {
                h2t::HEADERS => {
                    status_ok = p.first() == Some(&0x88);
                    if flags & 1 != 0 {
                        break;
                    }
                }
                h2t::DATA => {
                    n += p.len();
                    if flags & 1 != 0 {
                        assert!(status_ok, "GET {path} over h2: status not 200");
                        return n;
                    }
                }
                h2t::RST_STREAM => panic!("GET {path} over h2: RST_STREAM {p:?}"),
                _ => {}
            }
        }
        panic!("GET {path} over h2 did not finish in {limit:?} (status 200: {status_ok})");
    }
}
