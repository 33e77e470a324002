//! The `h3` crate's QUIC traits (`h3::quic`) implemented over quinn, in place of the
//! `h3-quinn` crate, because speedy needs what `h3-quinn` keeps private: each quinn
//! stream, and the bytes of the peer's control stream. With them:
//!
//! - **Server**: every response stream's send half is registered in the connection's
//!   [`Priorities`], and its urgency (RFC 9218: 0 most urgent .. 7, default 3) becomes
//!   quinn's stream priority. quinn fills each packet from the most urgent stream with
//!   data queued (round-robin within a level) and re-reads a stream's priority each
//!   time it writes a packet's worth of it, so a change takes effect from the next
//!   packet, also for data already queued. The urgency comes from a PRIORITY_UPDATE
//!   frame (RFC 9218 §7.2, type 0xF0700) read off the client's control stream by a tap
//!   in [`RecvStream`] (`h3` 0.0.8 skips the frame as unknown), or else from the
//!   request's `priority` header ([`Priorities::set_default`]). Uni streams (control,
//!   QPACK) are sent before any request stream.
//! - **Client**: [`Injector::priority_update`] writes PRIORITY_UPDATE frames onto the
//!   client's control stream between the frames `h3` writes there, and
//!   [`Injector::ping`] measures a round trip: it opens a unidirectional stream of a
//!   reserved type (RFC 9114 §6.2.3), which a server must ignore and should stop, and
//!   waits for the STOP_SENDING. Like a PING's answer, it is queued behind the data the
//!   server has already sent.
//! - **Frame limit** (server, [`Connection::limit_frames`]): `h3` reads every frame but
//!   DATA whole into memory before it looks at it, whatever length it declares (a HEADERS
//!   frame declaring 16 MiB was held whole, then answered 431). A [`Tap`] on each request
//!   stream and on the control stream reads the frame headers as they pass, and a frame
//!   other than DATA declaring more than the limit (the header-section limit) is refused
//!   there, before `h3` buffers any of it: a request's HEADERS gets a 431 response and its
//!   reading is stopped (H3_NO_ERROR: the response stands, RFC 9114 §4.1.2), any other
//!   such frame on a request stream resets it with H3_EXCESSIVE_LOAD, and on the control
//!   stream closes the connection with H3_EXCESSIVE_LOAD.

pub use super::tap::priority_update_frame;
use super::tap::{put_varint, Tap, Tapped, HEADERS};
use crate::h2::priority::DEFAULT_URGENCY;
use bytes::{Buf, Bytes, BytesMut};
use futures_util::{Stream, StreamExt};
use h3::quic::{self, ConnectionErrorIncoming, StreamErrorIncoming, StreamId, WriteBuf};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio_util::sync::ReusableBoxFuture;

/// Streams an urgency is remembered for that are not sending: a client may announce
/// priorities for streams it opens later (RFC 9218 §7.1), but not without bound.
const MAX_REMEMBERED: usize = 256;

/// A reserved stream type (0x1f × N + 0x21, N = 0), used by [`Injector::ping`].
const RESERVED_STREAM: u64 = 0x21;
/// HTTP/3 error codes (RFC 9114 §8.1).
const H3_NO_ERROR: u32 = 0x100;
const H3_EXCESSIVE_LOAD: u32 = 0x107;
/// A response of status 431 (Request Header Fields Too Large) as a HEADERS frame: QPACK
/// with no dynamic table (two zero bytes), then `:status` by its static index (24) with
/// the literal value `431` (RFC 9204 §4.5.4).
const RESPONSE_431: [u8; 10] = [0x01, 0x08, 0x00, 0x00, 0x5f, 0x09, 0x03, b'4', b'3', b'1'];
/// quinn's priority of the streams `h3` opens itself (control, QPACK): above every
/// request stream (whose priorities are `7 - urgency`).
const UNI_PRIORITY: i32 = 8;

/// quinn's stream priority for an urgency: higher goes first.
fn quinn_priority(urgency: u8) -> i32 {
    7 - i32::from(urgency.min(7))
}

type Shared<T> = Arc<Mutex<T>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// =======================================================================================
// Priorities (server side).

/// One connection's stream urgencies and its response streams' send halves.
#[derive(Default)]
pub struct Priorities {
    state: Mutex<PrioState>,
}

#[derive(Default)]
struct PrioState {
    /// Send halves of request streams, by stream id, kept while quinn still knows them
    /// (after `h3` dropped its half, queued data may still be waiting to go).
    streams: HashMap<u64, Shared<quinn::SendStream>>,
    /// Urgencies (a frame's, or else the request header's).
    urgency: HashMap<u64, u8>,
    /// The id after the highest request stream accepted (0 before the first).
    next_request: u64,
}

impl PrioState {
    fn apply(&self, id: u64) {
        if let Some(s) = self.streams.get(&id) {
            let u = self.urgency.get(&id).copied().unwrap_or(DEFAULT_URGENCY);
            let _ = lock(s).set_priority(quinn_priority(u));
        }
    }

    /// Forgets streams quinn has closed, and urgencies of streams never registered
    /// when there are too many.
    fn prune(&mut self) {
        self.streams
            .retain(|_, s| Arc::strong_count(s) > 1 || lock(s).priority().is_ok());
        if self.urgency.len() > MAX_REMEMBERED + self.streams.len() {
            let streams = &self.streams;
            self.urgency.retain(|id, _| streams.contains_key(id));
        }
    }
}

impl Priorities {
    /// Sets stream `id`'s urgency from a PRIORITY_UPDATE frame (it overrides the
    /// header); effective from quinn's next packet.
    pub fn set(&self, id: u64, urgency: u8) {
        let mut st = lock(&self.state);
        st.urgency.insert(id, urgency.min(7));
        st.apply(id);
        if st.urgency.len() > MAX_REMEMBERED + st.streams.len() {
            st.prune();
        }
    }

    /// Sets stream `id`'s urgency from its request's `priority` header, unless a frame
    /// already set one.
    pub fn set_default(&self, id: u64, urgency: u8) {
        let mut st = lock(&self.state);
        st.urgency.entry(id).or_insert(urgency.min(7));
        st.apply(id);
    }

    fn register(&self, id: u64, s: &Shared<quinn::SendStream>) {
        let mut st = lock(&self.state);
        if st.streams.len() >= MAX_REMEMBERED {
            st.prune();
        }
        st.streams.insert(id, s.clone());
        st.next_request = st.next_request.max(id + 4);
        st.apply(id);
    }

    /// The id of the first request stream not accepted yet (client-initiated
    /// bidirectional ids go up by 4): the GOAWAY id that lets every request accepted so
    /// far finish (RFC 9114 §5.2).
    pub fn next_request(&self) -> u64 {
        lock(&self.state).next_request
    }

    /// Completes when every response stream still known has been finished or reset and
    /// the peer has acknowledged all its data (or stopped it, or the connection is
    /// gone): closing the connection then loses nothing sent (quinn discards unsent and
    /// unacknowledged stream data on close).
    pub fn acknowledged(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let waits: Vec<_> = lock(&self.state)
            .streams
            .values()
            .map(|s| lock(s).stopped())
            .collect();
        async move {
            for w in waits {
                let _ = w.await;
            }
        }
    }
}

// =======================================================================================
// The connection.

type Accepted<T> = Pin<Box<dyn Stream<Item = Result<T, quinn::ConnectionError>> + Send + Sync>>;
type Opening<T> =
    Option<Pin<Box<dyn Future<Output = Result<T, quinn::ConnectionError>> + Send + Sync>>>;

/// A quinn connection as `h3` sees it.
pub struct Connection {
    conn: quinn::Connection,
    bidi: Accepted<(quinn::SendStream, quinn::RecvStream)>,
    uni: Accepted<quinn::RecvStream>,
    open: OpenStreams,
    /// Server: the longest frame but DATA taken on the peer's streams (see the module
    /// doc).
    max_frame: Option<u64>,
}

/// What the streams of one connection share.
struct ConnShared {
    prio: Arc<Priorities>,
    /// The client's control stream, once `h3` has opened it.
    control: Mutex<Option<Shared<Ctl>>>,
}

impl Connection {
    /// Wraps a quinn connection; a server passes the [`Priorities`] its request
    /// handlers will also see.
    pub fn new(conn: quinn::Connection, prio: Arc<Priorities>) -> Connection {
        let shared = Arc::new(ConnShared {
            prio,
            control: Mutex::new(None),
        });
        let c = conn.clone();
        let bidi = Box::pin(futures_util::stream::unfold(c, |c| async {
            Some((c.accept_bi().await, c))
        }));
        let c = conn.clone();
        let uni = Box::pin(futures_util::stream::unfold(c, |c| async {
            Some((c.accept_uni().await, c))
        }));
        let open = OpenStreams {
            conn: conn.clone(),
            shared,
            bidi: None,
            uni: None,
        };
        Connection {
            conn,
            bidi,
            uni,
            open,
            max_frame: None,
        }
    }

    /// Refuses frames other than DATA declaring more than `max` bytes on the peer's
    /// request streams and control stream (see the module doc): a server's, with its
    /// header-section limit.
    pub fn limit_frames(mut self, max: u64) -> Connection {
        self.max_frame = Some(max);
        self
    }

    /// The client's handle for PRIORITY_UPDATE frames and round-trip probes.
    pub fn injector(&self) -> Injector {
        Injector {
            conn: self.conn.clone(),
            shared: self.open.shared.clone(),
        }
    }
}

fn conn_error(e: quinn::ConnectionError) -> ConnectionErrorIncoming {
    match e {
        quinn::ConnectionError::ApplicationClosed(c) => ConnectionErrorIncoming::ApplicationClose {
            error_code: c.error_code.into_inner(),
        },
        quinn::ConnectionError::TimedOut => ConnectionErrorIncoming::Timeout,
        other => ConnectionErrorIncoming::Undefined(Arc::new(other)),
    }
}

fn stream_conn_error(e: quinn::ConnectionError) -> StreamErrorIncoming {
    StreamErrorIncoming::ConnectionErrorIncoming {
        connection_error: conn_error(e),
    }
}

fn write_error(e: quinn::WriteError) -> StreamErrorIncoming {
    match e {
        quinn::WriteError::Stopped(code) => StreamErrorIncoming::StreamTerminated {
            error_code: code.into_inner(),
        },
        quinn::WriteError::ConnectionLost(e) => stream_conn_error(e),
        other => StreamErrorIncoming::Unknown(Box::new(other)),
    }
}

fn read_error(e: quinn::ReadError) -> StreamErrorIncoming {
    match e {
        quinn::ReadError::Reset(code) => StreamErrorIncoming::StreamTerminated {
            error_code: code.into_inner(),
        },
        quinn::ReadError::ConnectionLost(e) => stream_conn_error(e),
        other => StreamErrorIncoming::Unknown(Box::new(other)),
    }
}

fn stream_id(id: quinn::StreamId) -> StreamId {
    StreamId::try_from(u64::from(id)).expect("a QUIC stream id is a 62-bit integer")
}

impl<B: Buf> quic::Connection<B> for Connection {
    type RecvStream = RecvStream;
    type OpenStreams = OpenStreams;

    fn poll_accept_recv(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<RecvStream, ConnectionErrorIncoming>> {
        let r = ready!(self.uni.poll_next_unpin(cx)).expect("the accept stream never ends");
        let s = r.map_err(conn_error)?;
        let mut recv = RecvStream::new(s);
        // Its type comes first: the tap lets go unless it is the control stream.
        recv.tap = Some(Tap {
            max: self.max_frame,
            ..Tap::default()
        });
        recv.prio = Some(self.open.shared.prio.clone());
        recv.refuse = Some(Refuse::Connection(self.conn.clone()));
        Poll::Ready(Ok(recv))
    }

    fn poll_accept_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<BidiStream<B>, ConnectionErrorIncoming>> {
        let r = ready!(self.bidi.poll_next_unpin(cx)).expect("the accept stream never ends");
        let (send, recv) = r.map_err(conn_error)?;
        let send = SendStream::new(send, None);
        self.open
            .shared
            .prio
            .register(u64::from(send.id), &send.quinn);
        let mut recv = RecvStream::new(recv);
        if let Some(max) = self.max_frame {
            // A request stream has no type: its frames start at once.
            recv.tap = Some(Tap {
                typed: true,
                max: Some(max),
                ..Tap::default()
            });
            recv.refuse = Some(Refuse::Request(send.quinn.clone()));
        }
        Poll::Ready(Ok(BidiStream { send, recv }))
    }

    fn opener(&self) -> OpenStreams {
        self.open.clone()
    }
}

impl<B: Buf> quic::OpenStreams<B> for Connection {
    type BidiStream = BidiStream<B>;
    type SendStream = SendStream<B>;

    fn poll_open_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<BidiStream<B>, StreamErrorIncoming>> {
        self.open.poll_open_bidi(cx)
    }

    fn poll_open_send(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<SendStream<B>, StreamErrorIncoming>> {
        self.open.poll_open_send(cx)
    }

    fn close(&mut self, code: h3::error::Code, reason: &[u8]) {
        quic::OpenStreams::<B>::close(&mut self.open, code, reason)
    }
}

/// Opens streams on a connection (`h3`'s request sender holds one).
pub struct OpenStreams {
    conn: quinn::Connection,
    shared: Arc<ConnShared>,
    bidi: Opening<(quinn::SendStream, quinn::RecvStream)>,
    uni: Opening<quinn::SendStream>,
}

impl Clone for OpenStreams {
    fn clone(&self) -> Self {
        OpenStreams {
            conn: self.conn.clone(),
            shared: self.shared.clone(),
            bidi: None,
            uni: None,
        }
    }
}

impl<B: Buf> quic::OpenStreams<B> for OpenStreams {
    type BidiStream = BidiStream<B>;
    type SendStream = SendStream<B>;

    fn poll_open_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<BidiStream<B>, StreamErrorIncoming>> {
        let conn = &self.conn;
        let f = self.bidi.get_or_insert_with(|| {
            let c = conn.clone();
            Box::pin(async move { c.open_bi().await })
        });
        let r = ready!(f.as_mut().poll(cx));
        self.bidi = None;
        let (send, recv) = r.map_err(stream_conn_error)?;
        Poll::Ready(Ok(BidiStream {
            send: SendStream::new(send, None),
            recv: RecvStream::new(recv),
        }))
    }

    fn poll_open_send(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<SendStream<B>, StreamErrorIncoming>> {
        let conn = &self.conn;
        let f = self.uni.get_or_insert_with(|| {
            let c = conn.clone();
            Box::pin(async move { c.open_uni().await })
        });
        let r = ready!(f.as_mut().poll(cx));
        self.uni = None;
        let send = r.map_err(stream_conn_error)?;
        let _ = send.set_priority(UNI_PRIORITY);
        Poll::Ready(Ok(SendStream::new(send, Some(self.shared.clone()))))
    }

    fn close(&mut self, code: h3::error::Code, reason: &[u8]) {
        let code = quinn::VarInt::from_u64(code.value()).unwrap_or(quinn::VarInt::MAX);
        self.conn.close(code, reason);
    }
}

// =======================================================================================
// Streams.

/// Both halves of a request stream.
pub struct BidiStream<B: Buf> {
    send: SendStream<B>,
    recv: RecvStream,
}

impl<B: Buf> quic::BidiStream<B> for BidiStream<B> {
    type SendStream = SendStream<B>;
    type RecvStream = RecvStream;

    fn split(self) -> (SendStream<B>, RecvStream) {
        (self.send, self.recv)
    }
}

impl<B: Buf> quic::RecvStream for BidiStream<B> {
    type Buf = Bytes;

    fn poll_data(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Bytes>, StreamErrorIncoming>> {
        self.recv.poll_data(cx)
    }

    fn stop_sending(&mut self, code: u64) {
        self.recv.stop_sending(code)
    }

    fn recv_id(&self) -> StreamId {
        self.recv.recv_id()
    }
}

impl<B: Buf> quic::SendStream<B> for BidiStream<B> {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.send.poll_ready(cx)
    }

    fn send_data<T: Into<WriteBuf<B>>>(&mut self, data: T) -> Result<(), StreamErrorIncoming> {
        self.send.send_data(data)
    }

    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.send.poll_finish(cx)
    }

    fn reset(&mut self, code: u64) {
        self.send.reset(code)
    }

    fn send_id(&self) -> StreamId {
        self.send.send_id()
    }
}

impl<B: Buf> quic::SendStreamUnframed<B> for BidiStream<B> {
    fn poll_send<D: Buf>(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut D,
    ) -> Poll<Result<usize, StreamErrorIncoming>> {
        self.send.poll_send(cx, buf)
    }
}

type ReadChunk = ReusableBoxFuture<
    'static,
    (
        quinn::RecvStream,
        Result<Option<quinn::Chunk>, quinn::ReadError>,
    ),
>;

/// A stream's receiving half; on the peer's unidirectional streams, a tap that reads
/// PRIORITY_UPDATE frames off the control stream, and on a server's, the frame limit
/// (see the module doc).
pub struct RecvStream {
    stream: Option<quinn::RecvStream>,
    id: quinn::StreamId,
    reading: ReadChunk,
    tap: Option<Tap>,
    /// Where the control stream's PRIORITY_UPDATE frames go.
    prio: Option<Arc<Priorities>>,
    /// How a frame over the tap's limit is refused.
    refuse: Option<Refuse>,
    /// Set once one was: every read fails from then on.
    refused: bool,
}

/// How a frame over the limit is refused.
enum Refuse {
    /// On a request stream, by its response half.
    Request(Shared<quinn::SendStream>),
    /// On the control stream, by closing the connection.
    Connection(quinn::Connection),
}

impl RecvStream {
    fn new(stream: quinn::RecvStream) -> RecvStream {
        RecvStream {
            id: stream.id(),
            stream: Some(stream),
            reading: ReusableBoxFuture::new(async { unreachable!("replaced before polled") }),
            tap: None,
            prio: None,
            refuse: None,
            refused: false,
        }
    }

    /// Refuses the frame of type `ty` declaring `len` bytes, the stream's first if
    /// `first` (see the module doc); the error `h3` then gets.
    fn refuse(
        &mut self,
        ty: u64,
        len: u64,
        first: bool,
        cx: &mut Context<'_>,
    ) -> StreamErrorIncoming {
        self.refused = true;
        let code = |c: u32| quinn::VarInt::from_u32(c);
        match &self.refuse {
            Some(Refuse::Request(send)) => {
                let mut s = lock(send);
                // The response is written here, at once (quinn takes 10 bytes on a new
                // stream); if it cannot be, the stream is reset instead.
                let answered = first
                    && ty == HEADERS
                    && matches!(Pin::new(&mut *s).poll_write(cx, &RESPONSE_431),
                        Poll::Ready(Ok(n)) if n == RESPONSE_431.len())
                    && s.finish().is_ok();
                let stop = if answered {
                    H3_NO_ERROR
                } else {
                    let _ = s.reset(code(H3_EXCESSIVE_LOAD));
                    H3_EXCESSIVE_LOAD
                };
                drop(s);
                if let Some(r) = self.stream.as_mut() {
                    let _ = r.stop(code(stop));
                }
            }
            Some(Refuse::Connection(conn)) => {
                conn.close(code(H3_EXCESSIVE_LOAD), b"a frame over the limit")
            }
            None => {}
        }
        excess(ty, len)
    }
}

/// The error `h3` gets for a frame over the limit.
fn excess(ty: u64, len: u64) -> StreamErrorIncoming {
    StreamErrorIncoming::Unknown(Box::new(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("an HTTP/3 frame of type {ty:#x} declaring {len} bytes, over the limit: refused"),
    )))
}

impl quic::RecvStream for RecvStream {
    type Buf = Bytes;

    fn poll_data(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Bytes>, StreamErrorIncoming>> {
        if self.refused {
            return Poll::Ready(Err(excess(0, 0)));
        }
        if let Some(mut s) = self.stream.take() {
            self.reading.set(async move {
                let r = s.read_chunk(usize::MAX, true).await;
                (s, r)
            });
        }
        let (s, r) = ready!(self.reading.poll(cx));
        self.stream = Some(s);
        let data = r.map_err(read_error)?.map(|c| c.bytes);
        if let (Some(b), Some(tap)) = (&data, &mut self.tap) {
            let prio = &self.prio;
            match tap.feed(b, |id, u| {
                if let Some(p) = prio {
                    p.set(id, u)
                }
            }) {
                Tapped::Go => {}
                Tapped::NotControl => self.tap = None,
                Tapped::TooLong { ty, len, first } => {
                    return Poll::Ready(Err(self.refuse(ty, len, first, cx)));
                }
            }
        }
        Poll::Ready(Ok(data))
    }

    fn stop_sending(&mut self, code: u64) {
        if let Some(s) = self.stream.as_mut() {
            let _ = s.stop(quinn::VarInt::from_u64(code).unwrap_or(quinn::VarInt::MAX));
        }
    }

    fn recv_id(&self) -> StreamId {
        stream_id(self.id)
    }
}

impl Drop for RecvStream {
    /// A stream dropped before its end asks the peer to stop sending with H3_NO_ERROR
    /// (RFC 9114 §4.1.2: what a server that answered without reading the whole request
    /// sends, and a peer then keeps the response). quinn's own drop would say 0, not an
    /// HTTP/3 code, which a client takes for an error and loses the response over.
    fn drop(&mut self) {
        quic::RecvStream::stop_sending(self, 0x100);
    }
}

/// The client's control stream: `h3`'s frames and injected ones, in one queue so that
/// neither cuts into the other.
struct Ctl {
    stream: Shared<quinn::SendStream>,
    queue: VecDeque<Bytes>,
}

impl Ctl {
    /// Writes the queue out; ready once it is empty.
    fn flush(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), quinn::WriteError>> {
        let mut s = lock(&self.stream);
        while let Some(head) = self.queue.front_mut() {
            let n = ready!(Pin::new(&mut *s).poll_write(cx, head))?;
            head.advance(n);
            if head.is_empty() {
                self.queue.pop_front();
            }
        }
        Poll::Ready(Ok(()))
    }
}

/// A stream's sending half.
pub struct SendStream<B: Buf> {
    quinn: Shared<quinn::SendStream>,
    id: quinn::StreamId,
    writing: Option<WriteBuf<B>>,
    /// A unidirectional stream not yet written to (it may be the control stream): its
    /// connection's shared state, where the control stream is recorded.
    fresh_uni: Option<Arc<ConnShared>>,
    /// Set when this is the client's control stream: writes go through its queue.
    ctl: Option<Shared<Ctl>>,
    finished: bool,
}

impl<B: Buf> SendStream<B> {
    fn new(s: quinn::SendStream, fresh_uni: Option<Arc<ConnShared>>) -> SendStream<B> {
        SendStream {
            id: s.id(),
            quinn: Arc::new(Mutex::new(s)),
            writing: None,
            fresh_uni,
            ctl: None,
            finished: false,
        }
    }
}

impl<B: Buf> quic::SendStream<B> for SendStream<B> {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        if let Some(ctl) = &self.ctl {
            return lock(ctl).flush(cx).map_err(write_error);
        }
        if let Some(w) = self.writing.as_mut() {
            let mut s = lock(&self.quinn);
            while w.has_remaining() {
                let n = ready!(Pin::new(&mut *s).poll_write(cx, w.chunk())).map_err(write_error)?;
                w.advance(n);
            }
        }
        self.writing = None;
        Poll::Ready(Ok(()))
    }

    fn send_data<T: Into<WriteBuf<B>>>(&mut self, data: T) -> Result<(), StreamErrorIncoming> {
        let mut data = data.into();
        if let Some(shared) = self.fresh_uni.take() {
            // The stream type varint 0x00: the control stream.
            if data.chunk().first() == Some(&0) {
                let ctl = Arc::new(Mutex::new(Ctl {
                    stream: self.quinn.clone(),
                    queue: VecDeque::new(),
                }));
                *lock(&shared.control) = Some(ctl.clone());
                self.ctl = Some(ctl);
            }
        }
        if let Some(ctl) = &self.ctl {
            let b = data.copy_to_bytes(data.remaining());
            lock(ctl).queue.push_back(b);
            return Ok(());
        }
        if self.writing.is_some() {
            return Err(StreamErrorIncoming::ConnectionErrorIncoming {
                connection_error: ConnectionErrorIncoming::InternalError(
                    "h3 sent data before the previous write finished".into(),
                ),
            });
        }
        self.writing = Some(data);
        Ok(())
    }

    fn poll_finish(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.finished = true;
        Poll::Ready(
            lock(&self.quinn)
                .finish()
                .map_err(|e| StreamErrorIncoming::Unknown(Box::new(e))),
        )
    }

    fn reset(&mut self, code: u64) {
        self.finished = true;
        let _ =
            lock(&self.quinn).reset(quinn::VarInt::from_u64(code).unwrap_or(quinn::VarInt::MAX));
    }

    fn send_id(&self) -> StreamId {
        stream_id(self.id)
    }
}

impl<B: Buf> quic::SendStreamUnframed<B> for SendStream<B> {
    fn poll_send<D: Buf>(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut D,
    ) -> Poll<Result<usize, StreamErrorIncoming>> {
        let mut s = lock(&self.quinn);
        let n = ready!(Pin::new(&mut *s).poll_write(cx, buf.chunk())).map_err(write_error)?;
        buf.advance(n);
        Poll::Ready(Ok(n))
    }
}

impl<B: Buf> Drop for SendStream<B> {
    /// quinn finishes a stream whose handle is dropped; the [`Priorities`] may keep
    /// the handle longer, so finish it here as quinn would.
    fn drop(&mut self) {
        if !self.finished && self.ctl.is_none() {
            let _ = lock(&self.quinn).finish();
        }
    }
}

// =======================================================================================
// Client: injected frames and round trips.

/// The client's way to write PRIORITY_UPDATE frames and to measure a round trip.
#[derive(Clone)]
pub struct Injector {
    conn: quinn::Connection,
    shared: Arc<ConnShared>,
}

impl Injector {
    /// Queues a PRIORITY_UPDATE for request stream `id` at `urgency` onto the control
    /// stream and writes it out (in the background if quinn cannot take it at once).
    /// An error if `h3` has not opened the control stream.
    pub fn priority_update(&self, id: u64, urgency: u8) -> Result<(), String> {
        let Some(ctl) = lock(&self.shared.control).clone() else {
            return Err("the HTTP/3 control stream is not open".into());
        };
        lock(&ctl)
            .queue
            .push_back(priority_update_frame(id, urgency));
        tokio::spawn(async move {
            let flush = std::future::poll_fn(|cx| lock(&ctl).flush(cx));
            if let Ok(Err(e)) = tokio::time::timeout(Duration::from_secs(30), flush).await {
                tracing::debug!("h3 PRIORITY_UPDATE: {e}");
            }
        });
        Ok(())
    }

    /// A round trip: from opening a reserved-type unidirectional stream to the
    /// server's STOP_SENDING for it; `None` if the server ignores it (no answer in 10 s)
    /// or the connection fails.
    pub async fn ping(&self) -> Option<Duration> {
        let t = std::time::Instant::now();
        let mut s = self.conn.open_uni().await.ok()?;
        let _ = s.set_priority(UNI_PRIORITY);
        let mut ty = BytesMut::new();
        put_varint(&mut ty, RESERVED_STREAM);
        s.write_all(&ty).await.ok()?;
        match tokio::time::timeout(Duration::from_secs(10), s.stopped()).await {
            Ok(Ok(Some(_))) => Some(t.elapsed()),
            _ => None,
        }
    }
}
