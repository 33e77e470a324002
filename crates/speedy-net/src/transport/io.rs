//! Transport plumbing: a boxed byte stream, and a reader that replays sniffed bytes.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A bidirectional byte stream (TCP or TLS).
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

/// A boxed transport.
pub type BoxIo = Box<dyn Io>;

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
