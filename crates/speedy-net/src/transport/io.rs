//! Transport plumbing: a boxed byte stream, a reader that replays sniffed bytes, and a
//! writer that flushes when the reader has nothing more ([`LazyFlush`]).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A bidirectional byte stream (TCP or TLS).
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

/// A boxed transport.
pub type BoxIo = Box<dyn Io>;

/// Reads a flush may wait behind, when the peer keeps sending.
const FLUSH_AFTER_READS: u32 = 8;

/// A connection whose flushes wait while its reader has more to read: `poll_flush` flushes
/// at once only when the last read found nothing (the engine has drained its input and
/// is about to wait); otherwise it notes that a flush is wanted, and the next read that
/// finds nothing (or the end, or an error) does it, or the [`FLUSH_AFTER_READS`]th read
/// with data since. The owner can also hold flushes ([`LazyFlush::holder`]) while it
/// answers requests the engine has already read. An engine that flushes after each
/// request it hands out (the `h2` crate does) then writes the answers to a batch of
/// requests with one system call instead of one per request; on loopback each write also
/// wakes the peer. Shutdown flushes first.
pub struct LazyFlush<T> {
    inner: T,
    want_flush: bool,
    /// The last read found nothing to read.
    drained: bool,
    reads_since: u32,
    hold: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl<T> LazyFlush<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Self {
        LazyFlush {
            inner,
            want_flush: false,
            drained: false,
            reads_since: 0,
            hold: Default::default(),
        }
    }

    /// A switch for the owner: while it is `true`, a read that finds nothing does not
    /// flush (the owner is answering requests already read, and will let go before it
    /// waits).
    pub fn holder(&self) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
        self.hold.clone()
    }
}

impl<T: AsyncWrite + Unpin> LazyFlush<T> {
    /// Does a wanted flush; `Ready(Ok)` once done (or when none is wanted).
    fn flush_wanted(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if !self.want_flush {
            return Poll::Ready(Ok(()));
        }
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        if let Poll::Ready(Ok(())) = r {
            self.want_flush = false;
            self.reads_since = 0;
        }
        r
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncRead for LazyFlush<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = &mut *self;
        let before = buf.filled().len();
        let r = Pin::new(&mut me.inner).poll_read(cx, buf);
        let got_data = matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before;
        me.drained = !got_data;
        if me.want_flush {
            if got_data {
                me.reads_since += 1;
            }
            let held = me.hold.load(std::sync::atomic::Ordering::Relaxed);
            if (!got_data && !held) || me.reads_since >= FLUSH_AFTER_READS {
                // A flush that cannot finish now is retried at the next read, its waker
                // registered; an error is the connection's.
                if let Poll::Ready(Err(e)) = me.flush_wanted(cx) {
                    return Poll::Ready(Err(e));
                }
            }
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for LazyFlush<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.want_flush = true;
        if self.drained && !self.hold.load(std::sync::atomic::Ordering::Relaxed) {
            return self.flush_wanted(cx);
        }
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.want_flush = true;
        std::task::ready!(self.flush_wanted(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A stream whose first bytes were already read (protocol sniffing); they are returned
/// again before the rest.
pub struct Prefixed<T> {
    prefix: bytes::Bytes,
    inner: T,
}

impl<T> Prefixed<T> {
    /// Wraps `inner`, replaying `prefix` first.
    pub fn new(prefix: bytes::Bytes, inner: T) -> Self {
        Prefixed { prefix, inner }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Prefixed<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            let chunk = self.prefix.split_to(n);
            buf.put_slice(&chunk);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Prefixed<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Writes as much of `out` as the transport takes in one vectored write.
pub(crate) async fn write_some<W: AsyncWrite + Unpin + ?Sized>(
    w: &mut W,
    out: &mut spdy::session::OutBuf,
) -> io::Result<()> {
    use tokio::io::AsyncWriteExt;
    let n = {
        let mut slices = [io::IoSlice::new(&[]); 64];
        let k = out.io_slices(&mut slices);
        w.write_vectored(&slices[..k]).await?
    };
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            "connection closed while writing",
        ));
    }
    out.advance(n);
    Ok(())
}

/// One step of output: writes some of `out` if it holds anything, else flushes the
/// transport. TLS streams keep records they could not write yet until the next write or
/// flush, so a driver whose buffer ran empty must still flush or the peer waits forever.
/// Cancel-safe: `unflushed` is cleared only once a flush completed.
pub async fn write_or_flush<W: AsyncWrite + Unpin + ?Sized>(
    w: &mut W,
    out: &mut spdy::session::OutBuf,
    unflushed: &mut bool,
) -> io::Result<usize> {
    use tokio::io::AsyncWriteExt;
    if out.is_empty() {
        w.flush().await?;
        *unflushed = false;
        return Ok(0);
    }
    *unflushed = true;
    let before = out.len();
    write_some(w, out).await?;
    Ok(before - out.len())
}

/// The rate a connection's socket has been taking bytes at, measured over windows of at
/// least 20 ms of writes (0 until measured). Output waiting in user space is bounded by
/// what the socket takes in a few milliseconds ([`SendRate::bytes_in`]), so that a
/// priority change reaches the wire that soon after it is made, on a slow link as on a
/// fast one.
#[derive(Debug, Default)]
pub struct SendRate {
    rate: f64,
    window: Option<(std::time::Instant, u64)>,
}

impl SendRate {
    /// The shortest window the rate is measured over.
    const WINDOW: std::time::Duration = std::time::Duration::from_millis(20);

    /// `n` bytes were written at `now`.
    pub fn wrote(&mut self, n: usize, now: std::time::Instant) {
        match &mut self.window {
            Some((t0, b)) => {
                *b += n as u64;
                let dt = now.duration_since(*t0);
                if dt >= Self::WINDOW {
                    self.rate = *b as f64 / dt.as_secs_f64();
                    self.window = Some((now, 0));
                }
            }
            None => self.window = Some((now, 0)),
        }
    }

    /// What the socket takes in `secs` at the measured rate, clamped to `lo..=hi`.
    pub fn bytes_in(&self, secs: f64, lo: usize, hi: usize) -> usize {
        ((self.rate * secs) as usize).clamp(lo, hi)
    }
}

#[cfg(test)]
mod send_rate_tests {
    use super::SendRate;
    use std::time::{Duration, Instant};

    #[test]
    fn the_backlog_follows_the_measured_rate_within_its_bounds() {
        let mut r = SendRate::default();
        assert_eq!(r.bytes_in(0.01, 1000, 9000), 1000, "unmeasured: the floor");
        let t = Instant::now();
        r.wrote(0, t);
        // 50,000 bytes in 25 ms: 2 MB/s, 20 KB in 10 ms.
        r.wrote(30_000, t + Duration::from_millis(10));
        r.wrote(20_000, t + Duration::from_millis(25));
        assert_eq!(r.bytes_in(0.01, 1000, 90_000), 20_000);
        assert_eq!(r.bytes_in(0.01, 1000, 9000), 9000, "capped");
    }
}
