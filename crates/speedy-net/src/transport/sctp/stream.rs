//! The session's side of an association: a byte stream ([`BoxIo`]) whose end carries the
//! reason the association ended, and the UDP socket's buffer sizes.

use super::{DIAG, SOCKET_BUFFER};
use crate::transport::io::BoxIo;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf};
use tokio::net::UdpSocket;

/// Why an association ended, for the byte stream's reader.
pub(super) type Fate = Arc<Mutex<Option<(io::ErrorKind, String)>>>;

/// The session's end of an association: a byte stream whose end carries the reason the
/// association ended (refused, timed out, aborted).
struct SctpIo {
    inner: DuplexStream,
    fate: Fate,
}

impl SctpIo {
    fn error(&self) -> Option<io::Error> {
        let f = self.fate.lock().expect("fate");
        f.as_ref().map(|(k, m)| io::Error::new(*k, m.clone()))
    }
}

impl AsyncRead for SctpIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) if buf.filled().len() == before && buf.remaining() > 0 => {
                Poll::Ready(self.error().map_or(Ok(()), Err))
            }
            other => other,
        }
    }
}

impl AsyncWrite for SctpIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, buf) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(self.error().unwrap_or(e))),
            other => other,
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A session's byte stream and the association task's end of it.
pub(super) fn pair() -> (BoxIo, DuplexStream, Fate) {
    let (app, ours) = tokio::io::duplex(DIAG.duplex);
    let fate = Fate::default();
    let io = SctpIo {
        inner: app,
        fate: fate.clone(),
    };
    (Box::new(io), ours, fate)
}

/// Larger UDP buffers than the default: a congestion window's burst fits.
pub(super) fn grow_buffers(sock: &UdpSocket) {
    use std::os::fd::AsRawFd;
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: a valid socket and a c_int option value of the right size.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&SOCKET_BUFFER as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}
