//! What a server connection's owner keeps for the streams it answers, whatever the
//! protocol (the SPDY and h2 servers, each an `Owner` of the one connection loop):
//! the handlers' futures, request bodies on their way to handlers (within `max_body`
//! each and `max_buffered` unread per connection), response bodies pulled chunk by chunk
//! while their stream's queue is short, and the flow-control credit handlers give back
//! as they read. Streams are named by number; the protocol's session does the rest.

use crate::body::{Body, Credit, CreditTx};
use crate::handler::ServerConfig;
use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::sync::mpsc;

/// A stream's body is pulled while less than this is queued on it …
const BODY_HIGH: usize = 128 * 1024;
/// … and a stream parked above it resumes once its queue drained below this.
const BODY_LOW: usize = 32 * 1024;

type Chunk = std::io::Result<Bytes>;
type Pull = Pin<Box<dyn Future<Output = (u32, Body, Option<Chunk>)> + Send>>;

/// A request body on its way to the handler.
struct Upload {
    tx: mpsc::UnboundedSender<Chunk>,
    received: usize,
}

/// Something the streams being answered have ready for the owner.
pub(crate) enum Ready<A> {
    /// A handler's answer (`A`: the protocol's stream and what it needs to answer).
    Answer(A),
    /// The next chunk of stream `.0`'s response body (`None`: its end), with the body.
    Chunk(u32, Body, Option<Chunk>),
    /// A handler read this many bytes of stream `.0`'s request body: give the window back.
    Release(u32, usize),
}

/// What became of a DATA frame's bytes.
#[must_use]
pub(crate) enum Delivery {
    /// Handed to the handler (its window goes back as the handler reads).
    Taken,
    /// Nobody will read them: give `n` bytes of window back now.
    Release(usize),
    /// The body went over a bound (said to its reader): give `n` back and reset the
    /// stream (CANCEL).
    Refuse(usize),
}

/// The streams a server connection is answering; `A` is what a handler's future yields.
pub(crate) struct Answering<A> {
    max_body: usize,
    /// Most request-body bytes held for handlers on this connection.
    max_buffered: usize,
    /// Request-body bytes handed to handlers and not yet read.
    buffered: usize,
    body_read_timeout: Duration,
    uploads: HashMap<u32, Upload>,
    answers: FuturesUnordered<Pin<Box<dyn Future<Output = A> + Send>>>,
    pulls: FuturesUnordered<Pull>,
    /// Response bodies waiting for their stream's queue to drain.
    parked: HashMap<u32, Body>,
    /// Credit given back as handlers consume request bodies (made on first use).
    credit: Option<(CreditTx, mpsc::UnboundedReceiver<Credit>)>,
}

impl<A: Send + 'static> Answering<A> {
    /// Nothing answered yet, with the listener's body limits.
    pub(crate) fn new(cfg: &ServerConfig) -> Answering<A> {
        Answering {
            max_body: cfg.max_body,
            max_buffered: cfg.limits.max_buffered,
            buffered: 0,
            body_read_timeout: cfg.limits.body_read_timeout,
            uploads: HashMap::new(),
            answers: FuturesUnordered::new(),
            pulls: FuturesUnordered::new(),
            parked: HashMap::new(),
            credit: None,
        }
    }

    /// Whether a declared body length is over `max_body` (refused before the handler).
    pub(crate) fn too_long(&self, len: Option<u64>) -> bool {
        len.is_some_and(|n| n > self.max_body as u64)
    }

    /// Starts stream `id`'s request body: the body the handler reads, fed by
    /// [`Answering::on_data`].
    pub(crate) fn upload(&mut self, id: u32, len: Option<u64>) -> Body {
        let (ctx, _) = self.credit.get_or_insert_with(mpsc::unbounded_channel);
        let credit = ctx.clone();
        let (tx, rx) = mpsc::unbounded_channel();
        self.uploads.insert(id, Upload { tx, received: 0 });
        Body::fed(rx, id, credit, false, len).with_read_timeout(self.body_read_timeout)
    }

    /// A DATA frame's bytes for stream `id` (`end`: the body's last).
    pub(crate) fn on_data(&mut self, id: u32, data: Bytes, end: bool) -> Delivery {
        let n = data.len();
        let Some(up) = self.uploads.get_mut(&id) else {
            return Delivery::Release(n);
        };
        up.received += n;
        let over = if up.received > self.max_body {
            Some(format!("request body over {} bytes", self.max_body))
        } else if self.buffered + n > self.max_buffered {
            Some(format!(
                "over {} request-body bytes unread on this connection",
                self.max_buffered
            ))
        } else {
            None
        };
        if let Some(why) = over {
            let up = self.uploads.remove(&id).expect("present");
            tracing::debug!("stream {id}: {why}: reset");
            let e = std::io::Error::new(std::io::ErrorKind::InvalidData, why);
            let _ = up.tx.send(Err(e));
            return Delivery::Refuse(n);
        }
        let mut delivery = Delivery::Taken;
        if n > 0 {
            // A handler that dropped the body gives the window back now.
            if up.tx.send(Ok(data)).is_err() {
                delivery = Delivery::Release(n);
            } else {
                self.buffered += n;
            }
        }
        if end {
            self.uploads.remove(&id);
        }
        delivery
    }

    /// Stream `id`'s request body ended without DATA (trailers, or a last HEADERS).
    pub(crate) fn end_upload(&mut self, id: u32) {
        self.uploads.remove(&id);
    }

    /// Runs a handler's future; its output comes back as [`Ready::Answer`].
    pub(crate) fn answer(&mut self, f: impl Future<Output = A> + Send + 'static) {
        self.answers.push(Box::pin(f));
    }

    /// Pulls stream `id`'s response body's next chunk ([`Ready::Chunk`]).
    pub(crate) fn pull(&mut self, id: u32, mut body: Body) {
        self.pulls.push(Box::pin(async move {
            let c = body.chunk().await;
            (id, body, c)
        }));
    }

    /// A chunk of stream `id` was queued, `queued` bytes wait on it now: the next is
    /// pulled, or waits until the queue drains ([`Answering::resume`]).
    pub(crate) fn sent(&mut self, id: u32, body: Body, queued: usize) {
        if queued < BODY_HIGH {
            self.pull(id, body);
        } else {
            self.parked.insert(id, body);
        }
    }

    /// After output: pulls again the bodies whose streams' queues drained (`queued`
    /// tells a stream's).
    pub(crate) fn resume(&mut self, queued: impl Fn(u32) -> usize) {
        if self.parked.is_empty() {
            return;
        }
        let ready: Vec<u32> = self
            .parked
            .keys()
            .filter(|id| queued(**id) < BODY_LOW)
            .copied()
            .collect();
        for id in ready {
            if let Some(b) = self.parked.remove(&id) {
                self.pull(id, b);
            }
        }
    }

    /// Stream `id` is gone (reset): its response body is dropped, its request body's
    /// reader told.
    pub(crate) fn forget(&mut self, id: u32) {
        self.parked.remove(&id);
        if let Some(up) = self.uploads.remove(&id) {
            let e = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "stream reset");
            let _ = up.tx.send(Err(e));
        }
    }

    /// `n` bytes a handler read were given back to the peer.
    pub(crate) fn released(&mut self, n: usize) {
        self.buffered = self.buffered.saturating_sub(n);
    }

    /// Whether the connection may read more: handlers hold under half the bound (one
    /// read, ≤ 64 KiB, never takes a well-behaved peer over it).
    pub(crate) fn wants_read(&self) -> bool {
        self.buffered < self.max_buffered / 2
    }

    /// Whether no handler and no body pull is under way.
    pub(crate) fn is_idle(&self) -> bool {
        self.answers.is_empty() && self.pulls.is_empty()
    }

    /// Drops every handler and pull (the connection is being dropped).
    pub(crate) fn abandon(&mut self) {
        self.answers = FuturesUnordered::new();
        self.pulls = FuturesUnordered::new();
    }

    /// Gives back the buckets of maps whose streams are all gone (a parked connection).
    pub(crate) fn shrink(&mut self) {
        if self.uploads.is_empty() {
            self.uploads = HashMap::new();
        }
        if self.parked.is_empty() {
            self.parked = HashMap::new();
        }
    }

    /// The next thing ready; pending while nothing is. Cancel-safe.
    pub(crate) async fn next(&mut self) -> Ready<A> {
        let credit = &mut self.credit;
        // Request bodies never send `Cancel` (only clients' response bodies do).
        let released = async {
            loop {
                match credit {
                    Some((_, rx)) => match rx.recv().await {
                        Some(Credit::Release(id, n)) => return (id, n),
                        Some(Credit::Cancel(_)) => {}
                        // Never: this side holds a sender.
                        None => std::future::pending::<()>().await,
                    },
                    None => std::future::pending::<()>().await,
                }
            }
        };
        tokio::select! {
            Some(a) = self.answers.next(), if !self.answers.is_empty() => Ready::Answer(a),
            Some((id, body, c)) = self.pulls.next(), if !self.pulls.is_empty() => {
                Ready::Chunk(id, body, c)
            }
            (id, n) = released => Ready::Release(id, n),
        }
    }
}
