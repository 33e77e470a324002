//! Message bodies that stream: what a handler receives as a request body and answers
//! with as a response body, on every protocol the server speaks.
//!
//! A [`Body`] is either bytes already in memory (sent zero-copy) or a stream of chunks
//! pulled one at a time. The protocol drivers pull the next chunk only when the peer's
//! flow-control window (SPDY, h2) or the socket (HTTP/1.1) took the previous ones, so a
//! slow reader holds the producer back instead of making the server buffer. Request
//! bodies arrive the same way: SPDY and h2 give credit back to the peer as the handler
//! consumes chunks, not when they arrive.

use bytes::{Bytes, BytesMut};
use futures_util::Stream;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// A boxed stream of body chunks.
pub type ChunkStream = Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>>;

/// What a body fed by a connection's owner (SPDY, the HTTP/2 server) tells the
/// connection's loop as it is read or dropped, by stream number.
#[derive(Debug)]
pub(crate) enum Credit {
    /// The reader consumed this many bytes of the stream: WINDOW_UPDATE credit.
    Release(u32, usize),
    /// The reader dropped the body before its end (a client's response): RST_STREAM.
    Cancel(u32),
}

/// Where a fed body sends its [`Credit`].
pub(crate) type CreditTx = mpsc::UnboundedSender<Credit>;

/// A request or response body.
pub struct Body {
    inner: Inner,
    /// Length, when known ahead (sent as `content-length`).
    len: Option<u64>,
    /// How long a reader may wait for the peer's next bytes ([`Body::with_read_timeout`]).
    idle: Option<IdleTimer>,
}

/// The read timeout of a body the peer sends: armed while a reader waits, reset by every
/// chunk.
struct IdleTimer {
    limit: std::time::Duration,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    fired: bool,
}

enum Inner {
    Full(Bytes),
    Stream(ChunkStream),
    /// A body fed by a connection's owner: chunks from the session, credit back on
    /// consumption.
    Fed {
        rx: mpsc::UnboundedReceiver<io::Result<Bytes>>,
        id: u32,
        credit: CreditTx,
        /// Reset the stream when dropped before its end (clients).
        cancel_on_drop: bool,
        done: bool,
    },
    /// An h2 request body; `left`: bytes it may still carry (`max_body`).
    H2 {
        rx: h2::RecvStream,
        left: u64,
    },
    /// An HTTP/1.1 request body; `left` as for h2.
    Http1 {
        rx: hyper::body::Incoming,
        left: u64,
    },
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.inner {
            Inner::Full(b) => return write!(f, "Body::Full({} bytes)", b.len()),
            Inner::Stream(_) => "stream",
            Inner::Fed { .. } => "spdy",
            Inner::H2 { .. } => "h2",
            Inner::Http1 { .. } => "http/1.1",
        };
        write!(f, "Body::{kind}(len {:?})", self.len)
    }
}

impl Default for Body {
    fn default() -> Self {
        Body::empty()
    }
}

impl From<Bytes> for Body {
    fn from(b: Bytes) -> Self {
        Body::full(b)
    }
}

impl From<Vec<u8>> for Body {
    fn from(v: Vec<u8>) -> Self {
        Body::full(Bytes::from(v))
    }
}

impl From<String> for Body {
    fn from(s: String) -> Self {
        Body::full(Bytes::from(s))
    }
}

impl From<&'static str> for Body {
    fn from(s: &'static str) -> Self {
        Body::full(Bytes::from_static(s.as_bytes()))
    }
}

impl Body {
    /// No body.
    pub fn empty() -> Body {
        Body::full(Bytes::new())
    }

    /// Bytes already in memory.
    pub fn full(b: Bytes) -> Body {
        Body {
            len: Some(b.len() as u64),
            inner: Inner::Full(b),
            idle: None,
        }
    }

    /// A stream of chunks; `len` is the total when known (sent as `content-length`; a
    /// stream that ends short or runs long is cut off as an error by the drivers).
    pub fn stream(
        s: impl Stream<Item = io::Result<Bytes>> + Send + 'static,
        len: Option<u64>,
    ) -> Body {
        Body {
            inner: Inner::Stream(Box::pin(s)),
            len,
            idle: None,
        }
    }

    /// A file read in `chunk`-byte pieces as the consumer asks for them (never whole).
    /// Each piece is one `pread` on the blocking pool straight into the buffer sent
    /// (no zeroing, no second copy as `tokio::fs::File` makes); a file shorter than
    /// `len` ends the body with an error.
    pub fn file(file: std::fs::File, len: u64, chunk: usize) -> Body {
        let state = (std::sync::Arc::new(file), 0u64, chunk.max(1));
        let s = futures_util::stream::unfold(state, move |(f, off, chunk)| async move {
            if off >= len {
                return None;
            }
            let want = ((len - off) as usize).min(chunk);
            let file = f.clone();
            let read = tokio::task::spawn_blocking(move || read_at(&file, off, want)).await;
            match read.unwrap_or_else(|e| Err(io::Error::other(e))) {
                Ok(b) => Some((Ok(b), (f, off + want as u64, chunk))),
                Err(e) => Some((Err(e), (f, len, chunk))),
            }
        });
        Body::stream(s, Some(len))
    }

    /// Stream `id`'s body (SPDY, or a request to the HTTP/2 server), fed by the
    /// connection's owner through `rx`; credit goes back through `credit` as it is read.
    /// `cancel_on_drop`: dropping it unfinished resets the stream (a client abandoning a
    /// response; a server's handler may drop a request body it does not want and still
    /// answer).
    pub(crate) fn fed(
        rx: mpsc::UnboundedReceiver<io::Result<Bytes>>,
        id: u32,
        credit: CreditTx,
        cancel_on_drop: bool,
        len: Option<u64>,
    ) -> Body {
        Body {
            inner: Inner::Fed {
                rx,
                id,
                credit,
                cancel_on_drop,
                done: false,
            },
            len,
            idle: None,
        }
    }

    /// An h2 request body of at most `max` bytes (more is an `InvalidData` error).
    pub(crate) fn h2(rx: h2::RecvStream, len: Option<u64>, max: usize) -> Body {
        Body {
            inner: Inner::H2 {
                rx,
                left: max as u64,
            },
            len,
            idle: None,
        }
    }

    /// An HTTP/1.1 request body of at most `max` bytes (more is an `InvalidData` error).
    pub(crate) fn http1(rx: hyper::body::Incoming, len: Option<u64>, max: usize) -> Body {
        Body {
            inner: Inner::Http1 {
                rx,
                left: max as u64,
            },
            len,
            idle: None,
        }
    }

    /// The length when known ahead.
    pub fn len(&self) -> Option<u64> {
        self.len
    }

    /// Whether the body is known to be empty.
    pub fn is_empty(&self) -> bool {
        self.len == Some(0)
    }

    /// Takes the in-memory bytes out (leaving an empty body), if the body is held whole.
    pub fn take_full(&mut self) -> Option<Bytes> {
        match &mut self.inner {
            Inner::Full(b) => Some(std::mem::take(b)),
            _ => None,
        }
    }

    /// Limits how long a reader waits for the peer's next bytes: after `limit` with
    /// nothing, the read fails with `TimedOut` (once; the body then ends). For bodies the
    /// peer sends (request bodies on a server, response bodies on a client): a peer that
    /// trickles a body, or stops, cannot hold the reader longer than this per chunk.
    pub fn with_read_timeout(mut self, limit: std::time::Duration) -> Body {
        self.idle = Some(IdleTimer {
            limit,
            sleep: None,
            fired: false,
        });
        self
    }

    /// The next chunk; `None` at the end. Empty chunks are skipped.
    pub fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> {
        if self.idle.as_ref().is_some_and(|t| t.fired) {
            return Poll::Ready(None);
        }
        let r = self.poll_inner(cx);
        let Some(t) = self.idle.as_mut() else {
            return r;
        };
        if r.is_ready() {
            t.sleep = None;
            return r;
        }
        let limit = t.limit;
        let sleep = t
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => {
                t.fired = true;
                Poll::Ready(Some(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("body: nothing from the peer for {limit:?}"),
                ))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_inner(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> {
        loop {
            let r = match &mut self.inner {
                Inner::Full(b) => {
                    if b.is_empty() {
                        Poll::Ready(None)
                    } else {
                        Poll::Ready(Some(Ok(std::mem::take(b))))
                    }
                }
                Inner::Stream(s) => s.as_mut().poll_next(cx),
                Inner::Fed {
                    rx,
                    id,
                    credit,
                    done,
                    ..
                } => match rx.poll_recv(cx) {
                    Poll::Ready(Some(Ok(c))) => {
                        let _ = credit.send(Credit::Release(*id, c.len()));
                        Poll::Ready(Some(Ok(c)))
                    }
                    Poll::Ready(other) => {
                        *done = true;
                        Poll::Ready(other)
                    }
                    Poll::Pending => Poll::Pending,
                },
                Inner::H2 { rx, left } => match rx.poll_data(cx) {
                    Poll::Ready(Some(Ok(c))) => {
                        let _ = rx.flow_control().release_capacity(c.len());
                        Poll::Ready(Some(take_within(left, c)))
                    }
                    Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(io::Error::other(e)))),
                    Poll::Ready(None) => Poll::Ready(None),
                    Poll::Pending => Poll::Pending,
                },
                Inner::Http1 { rx, left } => {
                    use hyper::body::Body as _;
                    match Pin::new(rx).poll_frame(cx) {
                        Poll::Ready(Some(Ok(f))) => match f.into_data() {
                            Ok(c) => Poll::Ready(Some(take_within(left, c))),
                            Err(_) => continue, // trailers
                        },
                        Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(io::Error::other(e)))),
                        Poll::Ready(None) => Poll::Ready(None),
                        Poll::Pending => Poll::Pending,
                    }
                }
            };
            match r {
                Poll::Ready(Some(Ok(c))) if c.is_empty() => continue,
                r => return r,
            }
        }
    }

    /// The next chunk; `None` at the end.
    pub async fn chunk(&mut self) -> Option<io::Result<Bytes>> {
        poll_fn(|cx| self.poll_chunk(cx)).await
    }

    /// Writes the body to `w` chunk by chunk as it comes, then shuts `w`'s write side
    /// down (a tunnel's half-close); stops at the first error on either side.
    pub async fn copy_to(mut self, w: &mut (impl tokio::io::AsyncWrite + Unpin)) -> io::Result<()> {
        use tokio::io::AsyncWriteExt;
        while let Some(c) = self.chunk().await {
            w.write_all(&c?).await?;
        }
        w.shutdown().await
    }

    /// Reads the whole body into memory, refusing more than `limit` bytes (an
    /// `InvalidData` error naming the limit) before holding them.
    pub async fn collect(mut self, limit: usize) -> io::Result<Bytes> {
        if let Some(b) = self.take_full() {
            if b.len() > limit {
                return Err(too_large(limit));
            }
            return Ok(b);
        }
        if self.len.is_some_and(|n| n > limit as u64) {
            return Err(too_large(limit));
        }
        let mut out = BytesMut::new();
        while let Some(c) = self.chunk().await {
            let c = c?;
            if out.len() + c.len() > limit {
                return Err(too_large(limit));
            }
            out.extend_from_slice(&c);
        }
        Ok(out.freeze())
    }
}

impl Drop for Body {
    fn drop(&mut self) {
        if let Inner::Fed {
            rx,
            id,
            credit,
            cancel_on_drop,
            done,
        } = &mut self.inner
        {
            // Chunks received and never read still count against the peer's windows
            // and the connection's buffer: give their credit back.
            rx.close();
            let mut unread = 0;
            while let Ok(c) = rx.try_recv() {
                unread += c.map_or(0, |c| c.len());
            }
            if unread > 0 {
                let _ = credit.send(Credit::Release(*id, unread));
            }
            if *cancel_on_drop && !*done {
                let _ = credit.send(Credit::Cancel(*id));
            }
        }
    }
}

/// Counts a request-body chunk against what is `left` of `max_body`.
fn take_within(left: &mut u64, c: Bytes) -> io::Result<Bytes> {
    match left.checked_sub(c.len() as u64) {
        Some(l) => {
            *left = l;
            Ok(c)
        }
        None => {
            *left = 0;
            Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request body over the server's limit (--max-body)",
            ))
        }
    }
}

fn too_large(limit: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("body larger than the limit of {limit} bytes"),
    )
}

/// HTTP/1.1 (hyper) sends a [`Body`] as it is pulled: hyper asks for the next frame only
/// once the socket took the previous one.
impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, io::Error>>> {
        self.get_mut()
            .poll_chunk(cx)
            .map(|o| o.map(|r| r.map(hyper::body::Frame::data)))
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Inner::Full(b) => b.is_empty(),
            _ => false,
        }
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        match &self.inner {
            Inner::Full(b) => hyper::body::SizeHint::with_exact(b.len() as u64),
            _ => match self.len {
                Some(n) => hyper::body::SizeHint::with_exact(n),
                None => hyper::body::SizeHint::default(),
            },
        }
    }
}

/// Reads exactly `want` bytes of `f` at `off` into a fresh buffer.
fn read_at(f: &std::fs::File, off: u64, want: usize) -> io::Result<Bytes> {
    use std::os::fd::AsRawFd;
    let mut buf = BytesMut::with_capacity(want);
    while buf.len() < want {
        let at = off + buf.len() as u64;
        let left = want - buf.len();
        let spare = buf.spare_capacity_mut();
        let room = spare.len().min(left);
        // SAFETY: pread writes at most `room` bytes into the buffer's spare capacity,
        // which has at least that many; the bytes it reports written become the length.
        let n = unsafe {
            libc::pread(
                f.as_raw_fd(),
                spare.as_mut_ptr() as *mut libc::c_void,
                room,
                at as libc::off_t,
            )
        };
        match n {
            0 => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "file shrank")),
            n if n < 0 => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            // SAFETY: pread initialised n bytes past the length.
            n => unsafe { buf.set_len(buf.len() + n as usize) },
        }
    }
    Ok(buf.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn collect_refuses_past_the_limit() {
        let chunks = (0..4).map(|_| Ok(Bytes::from(vec![1u8; 100])));
        let body = Body::stream(futures_util::stream::iter(chunks), None);
        let e = body.collect(350).await.unwrap_err();
        assert!(e.to_string().contains("350"), "{e}");
        let b = Body::from("hello").collect(5).await.unwrap();
        assert_eq!(&b[..], b"hello");
        assert!(Body::from("hello!").collect(5).await.is_err());
    }

    #[tokio::test]
    async fn file_bodies_come_in_chunks_of_the_asked_size() {
        let dir = std::env::temp_dir().join(format!("speedy-body-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let f = std::fs::File::open(&p).unwrap();
        let mut body = Body::file(f, data.len() as u64, 4096);
        let mut sizes = vec![];
        let mut all = vec![];
        while let Some(c) = body.chunk().await {
            let c = c.unwrap();
            sizes.push(c.len());
            all.extend_from_slice(&c);
        }
        assert_eq!(sizes, vec![4096, 4096, 1808]);
        assert_eq!(all, data);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
