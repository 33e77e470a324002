//! The one connection loop: read → [`Wire::recv`] → the owner handles events →
//! [`Wire::poll_transmit`] → vectored write, then flush. SPDY's client, server, load
//! generator and multiplexer run their sessions through [`run`], and so does the HTTP/2
//! server (`crate::h2::server`); what differs between them (what an event means, where
//! commands come from, when the work is done) lives behind the [`Owner`] trait, and what
//! the protocol is behind [`Wire`].
//!
//! One task owns the session (DESIGN rule 2). TLS keeps records it could not write yet
//! until the next write or flush, so the loop flushes whenever its output runs dry
//! ([`write_or_flush`]); a WINDOW_UPDATE left in a TLS buffer would stall the peer.

use crate::transport::io::{write_or_flush, write_some, BoxIo};
use bytes::BytesMut;
use spdy::session::{Event, OutBuf};
use spdy::Session;
use std::future::Future;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Output is produced from the session until what the socket takes in `OUT_TIME` is
/// waiting to be written (at least `OUT_LOW`, at most `OUT_HIGH` bytes): enough to keep
/// a fast socket busy, little enough that on a slow link a frame the scheduler picks
/// next (a raised priority, a PING's answer) is not queued behind seconds of output.
const OUT_HIGH: usize = 256 * 1024;
/// See [`OUT_HIGH`].
const OUT_LOW: usize = 32 * 1024;
/// See [`OUT_HIGH`].
const OUT_TIME: f64 = 0.01;
/// The read buffer grows when less than this is free.
const READ_SPARE: usize = 4096;
/// Inputs handled in one turn of the loop, at most, before output is produced and
/// written: a bound so that a flood of inputs cannot keep the socket from being read.
const INPUT_BATCH: usize = 64;
/// See [`Tuning::flow_stall`].
const FLOW_STALL: Duration = Duration::from_millis(500);
/// See [`Tuning::park_after`].
const PARK_AFTER: Duration = Duration::from_secs(1);

/// Sessions parked in this process so far: the server trims the heap after a burst of
/// them (`server.rs`), since the memory they free sits in holes malloc keeps resident.
pub(crate) static PARKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Buffer sizes: small for servers holding many idle sessions, larger for clients that
/// download.
#[derive(Clone, Copy, Debug)]
pub struct Tuning {
    /// Read buffer capacity at start.
    pub read_initial: usize,
    /// How much the read buffer grows by when nearly full.
    pub read_grow: usize,
    /// How long our sending may stay stalled on the windows of a peer that has never
    /// sent a WINDOW_UPDATE before it is taken to have no flow control (lenient
    /// sessions only; moby/spdystream never sends one). Long enough for a peer that does
    /// flow control to consume half a window and say so over a slow link.
    pub flow_stall: Duration,
    /// How long a session stays quiet (no open stream, nothing to write) before the
    /// memory it can rebuild is given back: its zlib contexts shrink to their histories
    /// ([`Session::park`]) and an empty read buffer is freed, about 27 KiB per session.
    /// Resuming costs a few microseconds, so a session busy with one request after
    /// another should not pay it each time; a keep-alive session quiet for a second is
    /// likely to stay quiet. `None`: never.
    pub park_after: Option<Duration>,
}

impl Tuning {
    /// A server holding many sessions: 8 KiB to start, growing by 16 KiB.
    pub const SERVER: Tuning = Tuning {
        read_initial: 8 * 1024,
        read_grow: 16 * 1024,
        flow_stall: FLOW_STALL,
        park_after: Some(PARK_AFTER),
    };
    /// A client: 64 KiB to start and to grow by.
    pub const CLIENT: Tuning = Tuning {
        read_initial: 64 * 1024,
        read_grow: 64 * 1024,
        flow_stall: FLOW_STALL,
        park_after: None,
    };
}

/// A sans-IO connection the loop drives: bytes in, events out, frames out.
pub trait Wire: Send {
    /// What the connection reports to its owner.
    type Event;
    /// Takes what was read (leaving in `buf` only bytes it waits to complete).
    fn recv(&mut self, buf: &mut BytesMut, now: Instant);
    /// The next event, if any.
    fn poll_event(&mut self) -> Option<Self::Event>;
    /// Appends output to `out`; `false` when there was nothing to send.
    fn poll_transmit(&mut self, out: &mut OutBuf) -> bool;
    /// Streams open now (none: the connection may be parked).
    fn open_streams(&self) -> usize;
    /// Whether sending waits on a peer that may have no flow control (SPDY only).
    fn flow_stall_pending(&self) -> bool {
        false
    }
    /// The wait of [`Wire::flow_stall_pending`] is over.
    fn flow_stall_expired(&mut self) {}
    /// Gives back memory a quiet connection can rebuild.
    fn park(&mut self) {}
}

impl Wire for Session {
    type Event = Event;
    fn recv(&mut self, buf: &mut BytesMut, now: Instant) {
        Session::recv(self, buf, now)
    }
    fn poll_event(&mut self) -> Option<Event> {
        Session::poll_event(self)
    }
    fn poll_transmit(&mut self, out: &mut OutBuf) -> bool {
        Session::poll_transmit(self, out)
    }
    fn open_streams(&self) -> usize {
        Session::open_streams(self)
    }
    fn flow_stall_pending(&self) -> bool {
        Session::flow_stall_pending(self)
    }
    fn flow_stall_expired(&mut self) {
        Session::flow_stall_expired(self)
    }
    fn park(&mut self) {
        Session::park(self)
    }
}

/// What a session's owner does around the shared loop.
pub trait Owner: Send {
    /// The connection it owns.
    type Wire: Wire;
    /// Something from outside the session the owner waits for: a command from a handle,
    /// a handler's answer, the next chunk of a body.
    type Input: Send;

    /// Handles one event of the session.
    fn on_event(&mut self, session: &mut Self::Wire, ev: <Self::Wire as Wire>::Event);

    /// Called after the events of a read (or an input) were handled: a place for work
    /// that looks at all streams at once.
    fn after_events(&mut self, _session: &mut Self::Wire) {}

    /// Called each time the session produced output: streams whose queues drained may
    /// ask for more body.
    fn after_transmit(&mut self, _session: &mut Self::Wire) {}

    /// Called when the loop parks a quiet session ([`Tuning::park_after`]): a place to
    /// give back what the owner kept for streams that are gone (a map's buckets).
    fn on_park(&mut self) {}

    /// Whether the loop may read more from the socket now. An owner holding too many
    /// received bytes its consumers have not taken says no: that is what bounds memory
    /// when a peer ignores our windows ([`spdy::session::FlowControl::Lenient`]).
    fn wants_read(&self) -> bool {
        true
    }

    /// Whether [`Owner::next_input`] has anything that can complete.
    fn wants_input(&self) -> bool;

    /// Waits for the next input. Must be cancel-safe: the loop drops it when the socket
    /// is ready first, and polls it once without waiting to take inputs already there.
    /// `None`: that source ended (the owner remembers it).
    fn next_input(&mut self) -> impl Future<Output = Option<Self::Input>> + Send;

    /// Handles an input.
    fn on_input(&mut self, session: &mut Self::Wire, input: Self::Input);

    /// The peer closed its side (or reading failed). `true`: keep going to write what
    /// is still to come (a server finishing answers); `false`: stop now.
    fn on_peer_closed(&mut self, session: &mut Self::Wire) -> bool;

    /// Called once when [`Owner::finished`] said yes, before the last output is written
    /// (e.g. a client says GOAWAY).
    fn on_finish(&mut self, _session: &mut Self::Wire) {}

    /// Whether the owner's work is done; checked when all output is written and flushed.
    fn finished(&self, session: &Self::Wire) -> bool;
}

/// Why the loop ended.
#[derive(Debug)]
pub enum End {
    /// The owner's work was done and everything was written.
    Finished,
    /// The peer closed the connection.
    PeerClosed,
    /// Reading failed (the transport says why: reset, refused, an SCTP association lost).
    ReadFailed(std::io::Error),
    /// Writing failed.
    WriteFailed(std::io::Error),
}

/// Bytes moved by the loop.
#[derive(Clone, Copy, Debug, Default)]
pub struct Traffic {
    /// Bytes read from the transport.
    pub bytes_in: u64,
    /// Bytes written to the transport.
    pub bytes_out: u64,
}

/// Runs `session` over `io` for `owner` until the owner is finished, the peer closes, or
/// writing fails. The transport is shut down on the way out.
pub async fn run<O: Owner>(
    io: BoxIo,
    session: &mut O::Wire,
    owner: &mut O,
    tuning: Tuning,
) -> (End, Traffic) {
    let (mut rd, mut wr) = tokio::io::split(io);
    let mut st = LoopState::new(tuning);
    let end = loop {
        st.produce(session, owner);
        if st.out.is_empty() && !st.unflushed && owner.finished(session) {
            st.write_last(&mut wr, session, owner).await;
            break End::Finished;
        }
        let (stall_deadline, park_deadline) = st.deadlines(session);
        let wants_input = owner.wants_input();
        let may_read = !st.read_closed && owner.wants_read();
        tokio::select! {
            _ = sleep_until_opt(stall_deadline), if stall_deadline.is_some() => {
                session.flow_stall_expired();
                st.stall_since = None;
            }
            _ = sleep_until_opt(park_deadline), if park_deadline.is_some() => st.park(session, owner),
            r = rd.read_buf(&mut st.rbuf), if may_read => {
                if let Some(end) = st.on_read(r, session, owner) {
                    break end;
                }
            }
            i = owner.next_input(), if wants_input => {
                if let Some(i) = i {
                    take_inputs(session, owner, i);
                }
            }
            r = write_or_flush(&mut wr, &mut st.out, &mut st.unflushed), if !st.out.is_empty() || st.unflushed => {
                match r {
                    Ok(n) => {
                        st.traffic.bytes_out += n as u64;
                        st.sent.wrote(n, Instant::now());
                    }
                    Err(e) => break End::WriteFailed(e),
                }
            }
            else => break End::PeerClosed,
        }
    };
    let _ = wr.shutdown().await;
    (end, st.traffic)
}

/// What [`run`] keeps from one turn of its loop to the next, besides the session, the
/// owner and the transport.
struct LoopState {
    tuning: Tuning,
    /// Bytes read and not yet taken by the session.
    rbuf: BytesMut,
    /// The session's output not yet written.
    out: OutBuf,
    traffic: Traffic,
    /// How fast the socket takes output (sizes `out`).
    sent: crate::transport::io::SendRate,
    /// The peer closed its side, or reading failed.
    read_closed: bool,
    /// Written but not flushed yet.
    unflushed: bool,
    /// Since when sending has been stalled on the peer's windows (flow-stall pending).
    stall_since: Option<Instant>,
    /// Since when the session has been quiet, while it is and is not parked yet.
    quiet_since: Option<Instant>,
    parked: bool,
}

impl LoopState {
    /// The state at the start: an empty read buffer of `tuning`'s initial size, no output.
    fn new(tuning: Tuning) -> LoopState {
        LoopState {
            tuning,
            rbuf: BytesMut::with_capacity(tuning.read_initial),
            out: OutBuf::new(),
            traffic: Traffic::default(),
            sent: crate::transport::io::SendRate::default(),
            read_closed: false,
            unflushed: false,
            stall_since: None,
            quiet_since: None,
            parked: false,
        }
    }

    /// Lets the owner handle the session's events, then takes output from the session
    /// until about what the socket takes in [`OUT_TIME`] waits to be written.
    fn produce<O: Owner>(&mut self, session: &mut O::Wire, owner: &mut O) {
        while let Some(ev) = session.poll_event() {
            owner.on_event(session, ev);
        }
        owner.after_events(session);
        let mut produced = false;
        let high = self.sent.bytes_in(OUT_TIME, OUT_LOW, OUT_HIGH);
        while self.out.len() < high && session.poll_transmit(&mut self.out) {
            produced = true;
        }
        if produced {
            owner.after_transmit(session);
        }
    }

    /// The owner is finished: lets it say its last (e.g. GOAWAY) and writes all the
    /// session's remaining output, stopping at the first write error.
    async fn write_last<O: Owner, W: tokio::io::AsyncWrite + Unpin>(
        &mut self,
        wr: &mut W,
        session: &mut O::Wire,
        owner: &mut O,
    ) {
        owner.on_finish(session);
        while session.poll_transmit(&mut self.out) {}
        while !self.out.is_empty() {
            let before = self.out.len();
            if write_some(wr, &mut self.out).await.is_err() {
                break;
            }
            self.traffic.bytes_out += (before - self.out.len()) as u64;
        }
    }

    /// When to give up waiting for a peer's WINDOW_UPDATE (it may have no flow control:
    /// `FlowControl::Lenient`) and when to park a quiet session, updating since when
    /// each has been the case.
    fn deadlines(&mut self, session: &impl Wire) -> (Option<Instant>, Option<Instant>) {
        if session.flow_stall_pending() {
            self.stall_since.get_or_insert_with(Instant::now);
        } else {
            self.stall_since = None;
        }
        let stall_deadline = self.stall_since.map(|t| t + self.tuning.flow_stall);
        let quiet = session.open_streams() == 0 && self.out.is_empty() && !self.unflushed;
        if !quiet {
            self.quiet_since = None;
            self.parked = false;
        } else if !self.parked && self.tuning.park_after.is_some() {
            self.quiet_since.get_or_insert_with(Instant::now);
        }
        let park_deadline = self
            .quiet_since
            .zip(self.tuning.park_after)
            .map(|(t, d)| t + d);
        (stall_deadline, park_deadline)
    }

    /// Parks the quiet session ([`Session::park`]) and frees an empty read buffer.
    fn park<O: Owner>(&mut self, session: &mut O::Wire, owner: &mut O) {
        session.park();
        owner.on_park();
        if self.out.is_empty() {
            self.out = OutBuf::new();
        }
        PARKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if self.rbuf.is_empty() {
            // The next read starts small and the buffer grows as it fills.
            self.rbuf = BytesMut::new();
        }
        self.parked = true;
        self.quiet_since = None;
    }

    /// Handles what a read gave: bytes go to the session (the buffer grows when nearly
    /// full); the end of input or an error goes to the owner, and the loop ends with it
    /// (`Some`) unless the owner wants to keep writing.
    fn on_read<O: Owner>(
        &mut self,
        r: std::io::Result<usize>,
        session: &mut O::Wire,
        owner: &mut O,
    ) -> Option<End> {
        match r {
            Ok(0) => {
                self.read_closed = true;
                (!owner.on_peer_closed(session)).then_some(End::PeerClosed)
            }
            Err(e) => {
                self.read_closed = true;
                (!owner.on_peer_closed(session)).then_some(End::ReadFailed(e))
            }
            Ok(n) => {
                self.traffic.bytes_in += n as u64;
                session.recv(&mut self.rbuf, Instant::now());
                if self.rbuf.capacity() - self.rbuf.len() < READ_SPARE {
                    self.rbuf.reserve(self.tuning.read_grow);
                }
                None
            }
        }
    }
}

/// Hands the owner `first`, then up to [`INPUT_BATCH`] inputs in all that are already
/// waiting, so that what they produce leaves in one write: otherwise the socket, always
/// writable, wins every other turn of the select and a batch of requests (or answers)
/// goes out one frame per system call.
fn take_inputs<O: Owner>(session: &mut O::Wire, owner: &mut O, first: O::Input) {
    owner.on_input(session, first);
    for _ in 1..INPUT_BATCH {
        if !owner.wants_input() {
            break;
        }
        match futures_util::FutureExt::now_or_never(owner.next_input()) {
            Some(Some(i)) => owner.on_input(session, i),
            _ => break,
        }
    }
}

/// Sleeps until `at`; never wakes when `None`.
async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => std::future::pending().await,
    }
}
