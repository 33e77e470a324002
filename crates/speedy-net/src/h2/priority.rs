//! RFC 9218 priorities written by the HTTP/2 client, which runs on the `h2` crate: the
//! crate does not know PRIORITY_UPDATE (frame type 0x10), so the client writes through a
//! [`FrameInjector`], which follows the frame boundaries of what the crate writes and
//! puts a PRIORITY_UPDATE frame into the byte stream at the next boundary
//! ([`Injector::priority_update`]). The server (`server.rs`, on `h2wire`) reads every
//! priority signal itself; HTTP/3 reads the same `priority` field.
//!
//! Urgencies are 0 (most urgent) to 7, default 3: the same scale as SPDY/3 priorities.

use crate::transport::io::BoxIo;
pub use h2wire::server::{parse_priority_field, DEFAULT_URGENCY};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

const PRIORITY_UPDATE: u8 = h2wire::server::PRIORITY_UPDATE;
/// Payload bytes kept of a PRIORITY_UPDATE frame HTTP/3's tap reads (a field value is a
/// few bytes; longer ones are cut, which can only drop parameters after `u`).
pub(crate) const KEEP: usize = 64;

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

/// Where a byte stream of HTTP/2 frames (what a client writes after its preface, which
/// the crate writes first) is: in a frame header, or in a payload with `left` bytes to go.
enum Cut {
    Preface(usize),
    Header([u8; 9], usize),
    Payload(usize),
}

impl Cut {
    fn new() -> Cut {
        Cut::Preface(h2wire::frame::PREFACE.len())
    }

    fn at_boundary(&self) -> bool {
        matches!(self, Cut::Header(_, 0))
    }

    /// Follows `bytes` (written in order).
    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            match self {
                Cut::Preface(left) | Cut::Payload(left) => {
                    let n = (*left).min(bytes.len());
                    bytes = &bytes[n..];
                    *left -= n;
                }
                Cut::Header(h, n) => {
                    let k = (9 - *n).min(bytes.len());
                    h[*n..*n + k].copy_from_slice(&bytes[..k]);
                    *n += k;
                    bytes = &bytes[k..];
                    if *n == 9 {
                        *self = Cut::Payload(u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize);
                    }
                }
            }
            if matches!(self, Cut::Preface(0) | Cut::Payload(0)) {
                *self = Cut::Header([0; 9], 0);
            }
        }
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
            me.cut.feed(&buf[..n]);
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
    fn the_cut_finds_frame_boundaries_whatever_the_chunking() {
        let mut wire = h2wire::frame::PREFACE.to_vec();
        // SETTINGS (empty), a 3-byte DATA frame, a PRIORITY_UPDATE.
        wire.extend_from_slice(&[0, 0, 0, 0x4, 0, 0, 0, 0, 0]);
        wire.extend_from_slice(&[0, 0, 3, 0, 0, 0, 0, 0, 3, 1, 2, 3]);
        wire.extend_from_slice(&priority_update_frame(5, 6));
        for chunk in [1, 2, 7, 1000] {
            let mut cut = Cut::new();
            let mut boundaries = 0;
            for b in wire.chunks(chunk).flat_map(|p| p.chunks(1)) {
                cut.feed(b);
                boundaries += usize::from(cut.at_boundary());
            }
            assert!(cut.at_boundary(), "chunks of {chunk}");
            assert_eq!(boundaries, 4, "after the preface and each of 3 frames");
        }
        let f = priority_update_frame(5, 6);
        assert_eq!(f[3], PRIORITY_UPDATE);
        assert_eq!(parse_priority_field(&f[13..]), Some(6));
    }
}
