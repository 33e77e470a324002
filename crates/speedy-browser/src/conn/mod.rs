//! The connection layer: one task per connection, driven by commands from the loader and
//! reporting what happens as [`ConnEvent`]s. Each protocol is a [`Driver`]; HTTP/1.1
//! ([`http1`]), SPDY ([`spdy`]), HTTP/2 ([`h2`]) and HTTP/3 ([`h3`], over QUIC: its
//! connection comes to [`Driver::run_quic`] instead of a byte stream) implement it, and a
//! new protocol slots in by implementing it too.
//!
//! Contract of a driver's `run`: it owns the transport; it reads [`ConnCmd`]s until
//! `Close` (or the channel closes), answers each `Send` with `Sent`, then `Head`, `Data`*
//! and `End` — or `Failed` — for that request id, reports server pushes with `Pushed`
//! (ids from [`ConnCtx::next_id`]), and finishes with exactly one `Closed` carrying the
//! socket's TCP_INFO read just before the connection is shut.

pub mod h2;
pub mod h3;
pub mod http1;
pub mod spdy;

use crate::net::TcpInfo;
use bytes::Bytes;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;

/// A request id (unique within a load).
pub type ReqId = u64;
/// A connection id (unique within a load).
pub type ConnId = u64;

/// A request as the connection sends it.
#[derive(Clone, Debug)]
pub struct WireRequest {
    /// Id.
    pub id: ReqId,
    /// Method.
    pub method: String,
    /// `http` / `https`.
    pub scheme: String,
    /// `host[:port]` (Host header / `:host` / `:authority`).
    pub authority: String,
    /// Path and query.
    pub path: String,
    /// Other headers (lower-case names).
    pub headers: Vec<(String, String)>,
    /// Priority 0 (highest) ..= 7 (SPDY); mapped onto each protocol's scheme.
    pub priority: u8,
    /// HTTP/1.1 to a proxy: the request line carries the whole URL.
    pub absolute_form: bool,
}

/// What the loader tells a connection.
#[derive(Debug)]
pub enum ConnCmd {
    /// Send a request.
    Send(WireRequest),
    /// Abandon a request (or refuse a push) by id.
    Cancel(ReqId),
    /// Finish: report TCP_INFO and close.
    Close,
    /// Send a keep-alive PING (SPDY; other protocols ignore it): the cellular study's
    /// mitigation that holds the radio in its high-power state during think time.
    Ping,
}

/// Protocol-level counters of a connection, reported when it closes.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, PartialEq, Eq)]
pub struct ConnCounters {
    /// Bytes written to the transport (above TLS).
    pub bytes_out: u64,
    /// Bytes read from the transport (above TLS).
    pub bytes_in: u64,
    /// Header bytes sent, uncompressed.
    pub header_bytes_raw_sent: u64,
    /// Header bytes sent as they went on the wire (compressed for SPDY), where
    /// `wire_headers` says they were measured.
    pub header_bytes_sent: u64,
    /// Header bytes received, uncompressed.
    pub header_bytes_raw_received: u64,
    /// Header bytes received as they came (compressed for SPDY).
    pub header_bytes_received: u64,
    /// Whether `header_bytes_sent` and `header_bytes_received` were measured: HTTP/1.1's
    /// and SPDY's drivers see their headers on the wire; h2's HPACK and h3's QPACK run
    /// inside the `h2` and `h3` crates, which do not say their sizes.
    pub wire_headers: bool,
    /// Frames sent (SPDY / HTTP/2).
    pub frames_sent: u64,
    /// Frames received (SPDY / HTTP/2).
    pub frames_received: u64,
}

/// What a connection tells the loader.
#[derive(Debug)]
pub enum ConnEvent {
    /// Dialled and ready for requests.
    Ready {
        /// Connection.
        conn: ConnId,
        /// Set-up times.
        times: crate::net::DialTimes,
        /// Peer address.
        peer: std::net::SocketAddr,
    },
    /// A dial got further: its host resolved, or its transport connected (TLS may
    /// follow). The engine's backup connect jobs look at it.
    Dialing {
        /// Connection.
        conn: ConnId,
        /// How far it got.
        phase: crate::net::DialPhase,
    },
    /// Could not connect.
    DialFailed {
        /// Connection.
        conn: ConnId,
        /// Why.
        error: String,
    },
    /// The request left (written, or handed to the session).
    Sent {
        /// Request.
        id: ReqId,
        /// When.
        at: Instant,
        /// Request header bytes as sent (-1 unknown).
        header_bytes: i64,
    },
    /// Response headers.
    Head {
        /// Request.
        id: ReqId,
        /// First response byte.
        first_byte: Instant,
        /// Status.
        status: u16,
        /// Headers (lower-case names).
        headers: Vec<(String, String)>,
        /// Header bytes (-1 unknown).
        header_bytes: i64,
    },
    /// A piece of the body (after transfer decoding, before content decoding).
    Data {
        /// Request.
        id: ReqId,
        /// When.
        at: Instant,
        /// Bytes.
        data: Bytes,
    },
    /// The response is complete.
    End {
        /// Request.
        id: ReqId,
        /// When.
        at: Instant,
    },
    /// The request failed.
    Failed {
        /// Request.
        id: ReqId,
        /// When.
        at: Instant,
        /// Why.
        error: String,
        /// Nothing of it was processed: it may be sent again elsewhere.
        retry: bool,
    },
    /// The server pushed a resource.
    Pushed {
        /// Connection.
        conn: ConnId,
        /// A fresh id for the pushed response.
        id: ReqId,
        /// The request it came with.
        assoc: Option<ReqId>,
        /// Its URL.
        url: String,
        /// When its stream opened.
        at: Instant,
    },
    /// The connection is gone.
    Closed {
        /// Connection.
        conn: ConnId,
        /// When.
        at: Instant,
        /// TCP_INFO just before closing.
        tcp_info: Option<TcpInfo>,
        /// Counters.
        counters: ConnCounters,
    },
}

/// What a driver works with.
pub struct ConnCtx {
    /// This connection.
    pub conn: ConnId,
    /// Commands from the loader.
    pub cmds: mpsc::UnboundedReceiver<ConnCmd>,
    /// Events to the loader.
    pub events: mpsc::UnboundedSender<ConnEvent>,
    /// Id allocator shared with the loader (for pushes).
    pub ids: Arc<AtomicU64>,
    /// The socket, for TCP_INFO.
    pub fd: Option<OwnedFd>,
}

impl ConnCtx {
    /// A fresh request id.
    pub fn next_id(&self) -> ReqId {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends an event (the loader may be gone at the very end: ignored).
    pub fn emit(&self, ev: ConnEvent) {
        let _ = self.events.send(ev);
    }

    /// Fails every request sent (`why`, not to be retried) until told to close, then
    /// reports the connection closed: a driver whose connection cannot carry requests.
    pub async fn fail_until_close(mut self, why: String, counters: ConnCounters) {
        while let Some(c) = self.cmds.recv().await {
            match c {
                ConnCmd::Send(r) => self.emit(ConnEvent::Failed {
                    id: r.id,
                    at: Instant::now(),
                    error: why.clone(),
                    retry: false,
                }),
                ConnCmd::Close => break,
                ConnCmd::Cancel(_) | ConnCmd::Ping => {}
            }
        }
        self.closed(counters);
    }

    /// Reads TCP_INFO and reports the connection closed.
    pub fn closed(&self, counters: ConnCounters) {
        let tcp_info = self.fd.as_ref().and_then(crate::net::tcp_info);
        self.emit(ConnEvent::Closed {
            conn: self.conn,
            at: Instant::now(),
            tcp_info,
            counters,
        });
    }
}

/// A protocol spoken over one connection.
pub trait Driver: Send + Sync {
    /// Name for reports and HAR `httpVersion` (`HTTP/1.1`, `spdy/3.1`, `h2`).
    fn name(&self) -> &'static str;
    /// The ALPN id to offer over TLS.
    fn alpn(&self) -> &'static str;
    /// Requests a connection carries at once (1 for HTTP/1.1 without pipelining;
    /// `usize::MAX` for multiplexed protocols).
    fn depth(&self) -> usize;
    /// Runs the connection to its end (see the module docs for the contract).
    fn run(
        &self,
        io: speedy_net::io::BoxIo,
        ctx: ConnCtx,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;
    /// Whether connections are QUIC ([`crate::net::dial_quic`], then [`Driver::run_quic`])
    /// rather than TCP or TLS byte streams.
    fn quic(&self) -> bool {
        false
    }
    /// Runs a QUIC connection to its end, as [`Driver::run`] does a byte stream. Only
    /// drivers whose [`Driver::quic`] is true are given one.
    fn run_quic(
        &self,
        _conn: speedy_net::h3::H3Client,
        ctx: ConnCtx,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        Box::pin(ctx.fail_until_close(
            format!("{} does not run over QUIC", self.name()),
            ConnCounters::default(),
        ))
    }
}
