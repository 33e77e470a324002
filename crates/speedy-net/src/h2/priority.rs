//! Priorities over HTTP/2 around the `h2` crate, which parses PRIORITY frames and
//! discards them and does not know RFC 9218's PRIORITY_UPDATE (frame type 0x10, an
//! extension frame it skips as unknown). Both ends see the bytes the crate reads or
//! writes:
//!
//! - the server reads through a [`FrameTap`], which follows the frame boundaries of the
//!   client's byte stream and records each stream's urgency in a [`Scheduler`]: from
//!   PRIORITY_UPDATE (RFC 9218 §7.1), from a HEADERS frame's priority fields or a
//!   PRIORITY frame (RFC 7540 §6.3 weights, mapped to an urgency as Chromium's
//!   `Http2WeightToSpdy3Priority` maps them to SPDY priorities), or, when none of those
//!   came, from the request's `priority` header field (RFC 9218 §5). The response body
//!   loop asks the scheduler for its turn before each frame's worth of data: a stream
//!   sends only while no stream with a more urgent level has data to send, round-robin
//!   within a level (the crate's own order); so a change takes effect from the next
//!   frame each stream hands the crate.
//! - the client writes through a [`FrameInjector`], which puts a PRIORITY_UPDATE frame
//!   into its byte stream at the next frame boundary ([`Injector::priority_update`]).
//!
//! Urgencies are 0 (most urgent) to 7, default 3: the same scale as SPDY/3 priorities.

use crate::transport::io::{BoxIo, SendRate};
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// RFC 9218's default urgency.
pub const DEFAULT_URGENCY: u8 = 3;
/// The client connection preface (RFC 9113 §3.4), which precedes the first frame.
const PREFACE_LEN: usize = 24;
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const PRIORITY: u8 = 0x2;
const PRIORITY_UPDATE: u8 = 0x10;
const FLAG_PADDED: u8 = 0x8;
const FLAG_PRIORITY: u8 = 0x20;
/// Payload bytes kept of a frame the tap reads (a PRIORITY_UPDATE's field value is a
/// few bytes; longer ones are cut, which can only drop parameters after `u`).
pub(crate) const KEEP: usize = 64;
/// Streams the scheduler remembers an urgency for that are not sending: a client may
/// announce priorities for streams it opens later (RFC 9218 §7.1), but not without
/// bound.
pub(crate) const MAX_REMEMBERED: usize = 256;

/// The urgency in an RFC 9218 Priority field value (`u=N`, other members ignored), or
/// `None` when it has no valid `u`.
pub fn parse_priority_field(v: &[u8]) -> Option<u8> {
    let s = std::str::from_utf8(v).ok()?;
    s.split(',').find_map(|m| {
        let (k, val) = m.trim().split_once('=')?;
        let u: u8 = (k.trim() == "u").then(|| val.trim().parse().ok())??;
        (u <= 7).then_some(u)
    })
}

/// An RFC 7540 weight (1-256) as an urgency, as Chromium maps weights to SPDY/3
/// priorities (`Http2WeightToSpdy3Priority` in QUICHE's `spdy_protocol.cc`: 7 minus
/// (weight-1)/(255.9/7), truncated): 256 → 0, 147 → 3, 1 → 7.
pub fn weight_to_urgency(weight: u16) -> u8 {
    let w = u32::from(weight.clamp(1, 256));
    ((7 * (2559 - 10 * (w - 1))) / 2559) as u8
}

/// A PRIORITY_UPDATE frame (RFC 9218 §7.1) setting `stream`'s urgency.
pub fn priority_update_frame(stream: u32, urgency: u8) -> Vec<u8> {
    let field = format!("u={}", urgency.min(7));
    let len = 4 + field.len();
    let mut f = Vec::with_capacity(9 + len);
    f.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    f.extend_from_slice(&[PRIORITY_UPDATE, 0, 0, 0, 0, 0]);
    f.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    f.extend_from_slice(field.as_bytes());
    f
}

// =======================================================================================
// The server's scheduler.

#[derive(Default)]
struct State {
    /// How fast the socket has been taking DATA bytes.
    sent: SendRate,
    urgency: HashMap<u32, u8>,
    /// Streams with response data to send: bytes handed to the crate, bytes written.
    sending: HashMap<u32, Flow>,
    waiters: Vec<Waker>,
}

/// A sending stream's DATA bytes: handed to the crate, and written to the socket (seen
/// by the [`FrameTap`] below the crate and its write buffer).
#[derive(Default, Clone, Copy)]
struct Flow {
    handed: u64,
    written: u64,
}

impl State {
    /// `stream` may hand the crate more: no stream with data to send is more urgent,
    /// and what it handed and was not yet written is under its limit.
    fn turn(&self, stream: u32, limits: (u64, u64)) -> bool {
        let of = |id: &u32| self.urgency.get(id).copied().unwrap_or(DEFAULT_URGENCY);
        let mine = of(&stream);
        self.allowance(stream, limits) > 0 && self.sending.keys().all(|id| of(id) >= mine)
    }

    /// Bytes `stream` may hand the crate now: its limit less what it handed that was
    /// not yet written.
    fn allowance(&self, stream: u32, limits: (u64, u64)) -> u64 {
        let limit = if self.sending.len() > 1 {
            limits.0
        } else {
            // Alone: what the socket takes in `BACKLOG_TIME`, so that a stream that
            // starts meanwhile waits about that long whatever the link's rate.
            self.sent
                .bytes_in(BACKLOG_TIME, limits.0 as usize, limits.1 as usize) as u64
        };
        let queued = self
            .sending
            .get(&stream)
            .map_or(0, |f| f.handed.saturating_sub(f.written));
        limit.saturating_sub(queued)
    }

    /// Records an urgency, first forgetting those of streams not sending when there
    /// are too many (streams that ended without sending, or never opened).
    fn remember(&mut self, stream: u32, urgency: u8, overwrite: bool) {
        if self.urgency.len() >= MAX_REMEMBERED + self.sending.len() {
            let sending = &self.sending;
            self.urgency.retain(|id, _| sending.contains_key(id));
        }
        let u = urgency.min(7);
        if overwrite {
            self.urgency.insert(stream, u);
        } else {
            self.urgency.entry(stream).or_insert(u);
        }
    }
}

/// Seconds of sending a stream alone may have handed the crate ahead of the socket.
const BACKLOG_TIME: f64 = 0.01;

/// One connection's stream urgencies and the turn-taking of its response bodies.
pub struct Scheduler {
    state: Mutex<State>,
    /// Bytes a stream may have handed the crate and not yet seen written: while other
    /// streams also send, and while it is alone.
    limits: (u64, u64),
}

impl Scheduler {
    /// A scheduler that lets a stream keep `contended` bytes unwritten while others
    /// send too, and while it is the only one what the socket took in the last 10 ms,
    /// between `contended` and `alone` bytes.
    pub fn new(contended: usize, alone: usize) -> Scheduler {
        Scheduler {
            state: Mutex::default(),
            limits: (contended as u64, alone as u64),
        }
    }

    /// Bytes `stream` may hand the crate now (0 when it must wait its turn).
    pub fn allowance(&self, stream: u32) -> usize {
        let st = self.lock();
        st.allowance(stream, self.limits) as usize
    }

    /// `n` bytes of `stream`'s body were handed to the crate.
    pub fn handed(&self, stream: u32, n: usize) {
        if let Some(f) = self.lock().sending.get_mut(&stream) {
            f.handed += n as u64;
        }
    }

    /// `n` bytes of `stream`'s DATA reached the socket.
    fn written(&self, stream: u32, n: usize) {
        let mut st = self.lock();
        st.sent.wrote(n, std::time::Instant::now());
        if let Some(f) = st.sending.get_mut(&stream) {
            f.written += n as u64;
            for w in st.waiters.drain(..) {
                w.wake();
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets `stream`'s urgency (a frame from the client: it overrides the header).
    pub fn set(&self, stream: u32, urgency: u8) {
        let mut st = self.lock();
        st.remember(stream, urgency, true);
        for w in st.waiters.drain(..) {
            w.wake();
        }
    }

    /// The urgency from the request's `priority` header, unless a frame set one.
    pub fn set_default(&self, stream: u32, urgency: u8) {
        self.lock().remember(stream, urgency, false);
    }

    /// Marks `stream` as having data to send until the guard is dropped.
    pub fn sending(self: &Arc<Self>, stream: u32) -> Sending {
        self.lock().sending.insert(stream, Flow::default());
        Sending {
            sched: self.clone(),
            stream,
        }
    }

    /// Ready when no stream with data to send is more urgent than `stream`.
    pub fn poll_turn(&self, stream: u32, cx: &mut Context<'_>) -> Poll<()> {
        let mut st = self.lock();
        if st.turn(stream, self.limits) {
            return Poll::Ready(());
        }
        st.waiters.push(cx.waker().clone());
        Poll::Pending
    }

    /// Whether `stream` may send now.
    pub fn is_turn(&self, stream: u32) -> bool {
        self.lock().turn(stream, self.limits)
    }

    /// Waits for `stream`'s turn.
    pub async fn turn(&self, stream: u32) {
        std::future::poll_fn(|cx| self.poll_turn(stream, cx)).await
    }
}

/// A stream's place among those with data to send; leaving wakes the others.
pub struct Sending {
    sched: Arc<Scheduler>,
    stream: u32,
}

impl Drop for Sending {
    fn drop(&mut self) {
        let mut st = self.sched.lock();
        st.sending.remove(&self.stream);
        st.urgency.remove(&self.stream);
        for w in st.waiters.drain(..) {
            w.wake();
        }
    }
}

// =======================================================================================
// Following frame boundaries in a byte stream.

/// Called with each complete frame of interest: type, flags, stream, kept payload.
type OnFrame<'a> = dyn FnMut(u8, u8, u32, &[u8]) + 'a;
/// Called with each piece of DATA payload: stream, bytes.
type OnData<'a> = dyn FnMut(u32, usize) + 'a;

/// Where a byte stream of HTTP/2 frames is.
enum Cut {
    Preface(usize),
    Header([u8; 9], usize),
    Payload {
        ty: u8,
        flags: u8,
        stream: u32,
        left: usize,
        kept: Vec<u8>,
    },
}

impl Cut {
    fn new() -> Cut {
        Cut::Preface(PREFACE_LEN)
    }

    /// A stream of frames with no preface (what a server writes).
    fn frames() -> Cut {
        Cut::Header([0; 9], 0)
    }

    fn at_boundary(&self) -> bool {
        matches!(self, Cut::Header(_, 0))
    }

    /// Follows `bytes`; calls `frame` with each complete frame of a type in `want`
    /// (type, flags, stream, first `KEEP` payload bytes), and `data` with each piece of
    /// a DATA frame's payload as it passes (stream, bytes).
    fn feed(&mut self, mut bytes: &[u8], want: &[u8], frame: &mut OnFrame, data: &mut OnData) {
        while !bytes.is_empty() {
            match self {
                Cut::Preface(left) => {
                    let n = (*left).min(bytes.len());
                    bytes = &bytes[n..];
                    *left -= n;
                    if *left == 0 {
                        *self = Cut::Header([0; 9], 0);
                    }
                }
                Cut::Header(h, n) => {
                    let k = (9 - *n).min(bytes.len());
                    h[*n..*n + k].copy_from_slice(&bytes[..k]);
                    *n += k;
                    bytes = &bytes[k..];
                    if *n == 9 {
                        let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
                        let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
                        *self = Cut::Payload {
                            ty: h[3],
                            flags: h[4],
                            stream,
                            left: len,
                            kept: Vec::new(),
                        };
                    }
                }
                Cut::Payload {
                    ty,
                    stream,
                    left,
                    kept,
                    ..
                } => {
                    let n = (*left).min(bytes.len());
                    if *ty == DATA && n > 0 {
                        data(*stream, n);
                    }
                    if want.contains(ty) && kept.len() < KEEP {
                        let k = n.min(KEEP - kept.len());
                        kept.extend_from_slice(&bytes[..k]);
                    }
                    bytes = &bytes[n..];
                    *left -= n;
                }
            }
            if let Cut::Payload {
                ty,
                flags,
                stream,
                left: 0,
                kept,
            } = self
            {
                if want.contains(ty) {
                    frame(*ty, *flags, *stream, kept);
                }
                *self = Cut::Header([0; 9], 0);
            }
        }
    }
}

/// The urgency a client frame gives, if any: (stream, urgency).
fn priority_of(ty: u8, flags: u8, stream: u32, p: &[u8]) -> Option<(u32, u8)> {
    match ty {
        PRIORITY_UPDATE if stream == 0 && p.len() >= 4 => {
            let id = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff;
            Some((id, parse_priority_field(&p[4..])?))
        }
        PRIORITY if p.len() == 5 => Some((stream, weight_to_urgency(u16::from(p[4]) + 1))),
        HEADERS if flags & FLAG_PRIORITY != 0 => {
            let p = if flags & FLAG_PADDED != 0 {
                p.get(1..)?
            } else {
                p
            };
            Some((stream, weight_to_urgency(u16::from(*p.get(4)?) + 1)))
        }
        _ => None,
    }
}

/// The server's side: reads pass through unchanged; the priority-bearing frames among
/// them set urgencies in the connection's [`Scheduler`].
pub struct FrameTap {
    io: BoxIo,
    cut: Cut,
    /// The frames the server writes: their DATA bytes are counted as written.
    out: Cut,
    sched: Arc<Scheduler>,
}

impl FrameTap {
    /// Taps `io`, the server end of an HTTP/2 connection from the client preface on.
    pub fn new(io: BoxIo, sched: Arc<Scheduler>) -> FrameTap {
        FrameTap {
            io,
            cut: Cut::new(),
            out: Cut::frames(),
            sched,
        }
    }

    fn count_written(&mut self, bytes: &[u8]) {
        let sched = &self.sched;
        self.out
            .feed(bytes, &[], &mut |_, _, _, _| {}, &mut |id, n| {
                sched.written(id, n)
            });
    }
}

impl AsyncRead for FrameTap {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let me = &mut *self;
        let r = Pin::new(&mut me.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            let sched = &me.sched;
            me.cut.feed(
                &buf.filled()[before..],
                &[HEADERS, PRIORITY, PRIORITY_UPDATE],
                &mut |ty, fl, id, p| {
                    if let Some((id, u)) = priority_of(ty, fl, id, p) {
                        sched.set(id, u);
                    }
                },
                &mut |_, _| {},
            );
        }
        r
    }
}

impl AsyncWrite for FrameTap {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            self.count_written(&buf[..n]);
        }
        r
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(mut n)) = r {
            for b in bufs {
                let k = n.min(b.len());
                self.count_written(&b[..k]);
                n -= k;
                if n == 0 {
                    break;
                }
            }
        }
        r
    }
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

// =======================================================================================
// The client's injector.

#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    /// The connection task's, from its last read: woken to write what was queued.
    waker: Option<Waker>,
}

/// A handle that queues frames for a [`FrameInjector`]'s connection.
#[derive(Clone, Default)]
pub struct Injector(Arc<Mutex<Pending>>);

impl Injector {
    /// Queues a PRIORITY_UPDATE for `stream`; it goes out at the next frame boundary.
    pub fn priority_update(&self, stream: u32, urgency: u8) {
        let mut p = self.0.lock().unwrap_or_else(|e| e.into_inner());
        p.bytes.extend(priority_update_frame(stream, urgency));
        if let Some(w) = p.waker.take() {
            w.wake();
        }
    }
}

/// The client's side: writes pass through, and frames queued on its [`Injector`] are
/// written between two of the crate's frames.
pub struct FrameInjector {
    io: BoxIo,
    cut: Cut,
    queued: Injector,
    /// Injected bytes taken from the queue, not yet all written.
    out: Vec<u8>,
}

impl FrameInjector {
    /// Wraps the client end of an HTTP/2 connection before the crate's handshake.
    pub fn new(io: BoxIo) -> (FrameInjector, Injector) {
        let queued = Injector::default();
        let me = FrameInjector {
            io,
            cut: Cut::new(),
            queued: queued.clone(),
            out: Vec::new(),
        };
        (me, queued)
    }

    /// Writes queued frames if the crate's stream is between frames; ready when none is
    /// left half-written.
    fn poll_inject(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.out.is_empty() && self.cut.at_boundary() {
            let mut p = self.queued.0.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::swap(&mut self.out, &mut p.bytes);
        }
        while !self.out.is_empty() {
            match Pin::new(&mut self.io).poll_write(cx, &self.out) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()))
                }
                Poll::Ready(Ok(n)) => {
                    self.out.drain(..n);
                    if self.out.is_empty() {
                        let _ = Pin::new(&mut self.io).poll_flush(cx);
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for FrameInjector {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let me = &mut *self;
        me.queued.0.lock().unwrap_or_else(|e| e.into_inner()).waker = Some(cx.waker().clone());
        // Queued frames go out from here when the crate has nothing to write; a write
        // error shows on the crate's next write.
        let _ = me.poll_inject(cx);
        Pin::new(&mut me.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for FrameInjector {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let me = &mut *self;
        if let Poll::Ready(Err(e)) = me.poll_inject(cx) {
            return Poll::Ready(Err(e));
        }
        if !me.out.is_empty() {
            return Poll::Pending;
        }
        let r = Pin::new(&mut me.io).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            me.cut
                .feed(&buf[..n], &[], &mut |_, _, _, _| {}, &mut |_, _| {});
        }
        r
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let me = &mut *self;
        if let Poll::Ready(Err(e)) = me.poll_inject(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut me.io).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_map_to_urgencies_as_chromium_maps_them_to_spdy_priorities() {
        // QUICHE's spdy_protocol_test.cc expectations for Http2WeightToSpdy3Priority.
        for (w, u) in [
            (256, 0),
            (221, 0),
            (220, 1),
            (184, 1),
            (183, 2),
            (148, 2),
            (147, 3),
        ] {
            assert_eq!(weight_to_urgency(w), u, "weight {w}");
        }
        assert_eq!(weight_to_urgency(1), 7);
    }

    #[test]
    fn reads_urgency_from_priority_fields() {
        assert_eq!(parse_priority_field(b"u=0"), Some(0));
        assert_eq!(parse_priority_field(b"i, u=5"), Some(5));
        assert_eq!(parse_priority_field(b"u=9"), None);
        assert_eq!(parse_priority_field(b"i"), None);
    }

    #[test]
    fn the_tap_finds_priority_frames_whatever_the_chunking() {
        let mut wire = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        // SETTINGS (empty), HEADERS with priority (weight byte 219 → weight 220 → 1),
        // DATA, PRIORITY_UPDATE for stream 5 (u=6).
        wire.extend_from_slice(&[0, 0, 0, 0x4, 0, 0, 0, 0, 0]);
        wire.extend_from_slice(&[0, 0, 7, HEADERS, FLAG_PRIORITY | 0x4, 0, 0, 0, 3]);
        wire.extend_from_slice(&[0, 0, 0, 0, 219, 0x82, 0x84]);
        wire.extend_from_slice(&[0, 0, 3, 0, 0, 0, 0, 0, 3, 1, 2, 3]);
        wire.extend_from_slice(&priority_update_frame(5, 6));
        for chunk in [1, 2, 7, 1000] {
            let mut cut = Cut::new();
            let mut got = Vec::new();
            let mut data = Vec::new();
            for piece in wire.chunks(chunk) {
                cut.feed(
                    piece,
                    &[HEADERS, PRIORITY, PRIORITY_UPDATE],
                    &mut |t, f, s, p| got.extend(priority_of(t, f, s, p)),
                    &mut |s, n| data.push((s, n)),
                );
            }
            assert_eq!(got, [(3, 1), (5, 6)], "chunks of {chunk}");
            let on_3: usize = data.iter().filter(|d| d.0 == 3).map(|d| d.1).sum();
            assert_eq!((on_3, data.len() <= 3), (3, true), "DATA bytes of stream 3");
            assert!(cut.at_boundary());
        }
    }

    #[test]
    fn a_less_urgent_stream_waits_while_a_more_urgent_one_sends() {
        let s = Arc::new(Scheduler::new(1 << 20, 1 << 20));
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        s.set_default(1, 3);
        s.set_default(3, 3);
        let a = s.sending(1);
        let _b = s.sending(3);
        assert!(s.poll_turn(1, &mut cx).is_ready() && s.poll_turn(3, &mut cx).is_ready());
        s.set(3, 0);
        assert!(
            s.poll_turn(1, &mut cx).is_pending(),
            "1 waits for the raised 3"
        );
        assert!(s.poll_turn(3, &mut cx).is_ready());
        drop(a);
        assert!(!s.lock().urgency.contains_key(&1), "forgotten once done");
    }
}
