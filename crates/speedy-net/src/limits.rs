//! What a server holds each peer to, and how it is asked to stop: the [`Limits`] on
//! memory, time and connections (the flags of `speedy serve`), and the [`Shutdown`]
//! signal that starts a graceful drain.
//!
//! Where each limit is enforced:
//!
//! | limit | where | what the peer sees |
//! |---|---|---|
//! | `max_body` | `http1/server.rs`, `h2/server.rs`, `spdy/server.rs` (declared length, before the handler), `body.rs` (bytes counted as they are read) | HTTP/1.1 413 + close; h2 413 + RST_STREAM NO_ERROR; SPDY RST_STREAM REFUSED_STREAM (declared) or CANCEL (mid-body) |
//! | header block size | `spdy::Config::max_header_block` (SPDY: per stream, SYN_STREAM and every HEADERS added up, `spdy/src/session/recv.rs`); h2's max header list size and HTTP/3's max field section size are set to the same number; `h3/quic.rs`: an HTTP/3 frame but DATA declaring more, as its length arrives | SPDY RST_STREAM FRAME_TOO_LARGE (SPDY/2: PROTOCOL_ERROR); h2 per the `h2` crate; HTTP/3 431 (a frame but HEADERS on a request stream: reset H3_EXCESSIVE_LOAD; on the control stream: the connection closed H3_EXCESSIVE_LOAD) |
//! | `max_buffered` | `spdy/server.rs`: request-body bytes received and not yet read by handlers, per connection (SPDY/2 has no flow control, SPDY/3 only per-stream windows, and a lenient session accepts overruns from peers without flow control); `h3/mod.rs`: each QUIC connection's receive window | the connection is not read while half of it waits (`Owner::wants_read`: TCP holds the peer); RST_STREAM CANCEL on the stream whose DATA would still go over; QUIC's flow control holds the peer |
//! | `sniff_timeout` | `server.rs`: the first bytes of a plain connection; `h3/mod.rs`: a QUIC handshake | close |
//! | `tls_handshake_timeout` | `server.rs` | close |
//! | `header_read_timeout` | `http1/ready.rs`, then `http1/server.rs` (hyper) once a request went there: a request head, and the wait for the next one on a keep-alive connection; `h3/mod.rs`: a request's header section | close (HTTP/3: the stream dropped) |
//! | `body_read_timeout` | `body.rs` (`Body::with_read_timeout`, set on request bodies by `http1/server.rs`, `h2/server.rs`, `spdy/server.rs`): a handler waiting for the peer's next body bytes | the handler's read fails (`TimedOut`); what follows is the handler's answer (the proxy: 408) |
//! | `idle_timeout` | `spdy/server.rs`, `h2/server.rs`, `h3/mod.rs`: no open stream for this long | GOAWAY, then close |
//! | `park_after` | `spdy/conn.rs` (server sessions): quiet this long, the session's zlib contexts shrink to their histories and its empty read buffer is freed (~27 KiB → ~5 KiB a session) | nothing |
//! | `max_connections` | `server.rs`: accepting waits for a free slot (the kernel's backlog holds the rest); `h3/mod.rs`: QUIC connections, counted apart | a delayed accept; QUIC: CONNECTION_REFUSED |
//! | `max_connections_per_ip` | `server.rs`, `h3/mod.rs` (each its own count): connections from one address (IPv6: one /64) at once, counted at accept | closed at once (QUIC: CONNECTION_REFUSED), so one peer cannot take every slot |
//!
//! Clients facing a hostile server: `ClientConfig::read_timeout` (`client.rs`; `speedy
//! fetch --read-timeout`, default 30 s) bounds connecting, the wait for a response head
//! and each wait for more body; `speedy fetch --max-time` the whole command; over h2 a
//! response head is held to the header-block bound (the `h2` crate's header list size,
//! and its own cap on CONTINUATION floods). The loader gives up on a response head over
//! 64 KiB (`speedy-browser/src/conn/http1.rs`, and its h2 header list size)
//! and stops holding a style sheet past 16 MiB (`loader/engine.rs`); its `--timeout`
//! bounds a load. `tests/hostile.rs` runs each against a misbehaving server.

use std::time::Duration;
use tokio::sync::watch;

/// Limits on what one peer (and all of them) can make the server hold.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Request-body bytes, per connection, received but not yet read by the handlers.
    pub max_buffered: usize,
    /// Time for the first bytes of a connection (protocol sniffing).
    pub sniff_timeout: Duration,
    /// Time for a TLS handshake.
    pub tls_handshake_timeout: Duration,
    /// Time for an HTTP/1.1 request head (and between keep-alive requests).
    pub header_read_timeout: Duration,
    /// Time a handler waits for the next bytes of a request body.
    pub body_read_timeout: Duration,
    /// SPDY and h2 sessions with no open stream for this long get GOAWAY and are closed.
    pub idle_timeout: Duration,
    /// SPDY sessions quiet this long give back what they can rebuild (zlib contexts,
    /// read buffer); see `crate::spdy::conn::Tuning::park_after`.
    pub park_after: Duration,
    /// Connections served at once; accepting waits for a slot.
    pub max_connections: usize,
    /// Connections from one address (IPv6: one /64) at once; more are closed as they are
    /// accepted. 0: no limit per address.
    pub max_connections_per_ip: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_buffered: 8 << 20,
            sniff_timeout: Duration::from_secs(10),
            tls_handshake_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(120),
            park_after: Duration::from_secs(1),
            max_connections: 4096,
            max_connections_per_ip: 1024,
        }
    }
}

/// Asks a server to stop: [`Shutdown::trigger`] once, every connection sees it.
#[derive(Clone, Debug)]
pub struct Shutdown {
    tx: std::sync::Arc<watch::Sender<bool>>,
    rx: watch::Receiver<bool>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown::new()
    }
}

impl Shutdown {
    /// A signal not yet given.
    pub fn new() -> Shutdown {
        let (tx, rx) = watch::channel(false);
        Shutdown {
            tx: std::sync::Arc::new(tx),
            rx,
        }
    }

    /// Gives the signal: the listener stops accepting, sessions say GOAWAY (HTTP/1.1:
    /// `Connection: close`) and finish the streams they have.
    pub fn trigger(&self) {
        self.tx.send_replace(true);
    }

    /// Whether the signal was given.
    pub fn is_triggered(&self) -> bool {
        *self.rx.borrow()
    }

    /// Waits for the signal (at once if it was given already). Cancel-safe.
    pub async fn wait(&self) {
        let mut rx = self.rx.clone();
        // The sender lives in `self`, so `wait_for` cannot fail.
        let _ = rx.wait_for(|v| *v).await;
    }
}
