//! The load generator's SPDY connection: an [`Owner`] of the one connection loop that
//! keeps its requests in flight itself. Each response's events are counted where the
//! loop reads them and the next request is opened in the same turn: no channel, task or
//! waker per request (the [`Client`](crate::client::Client) hands each response to its
//! caller through channels, which cost the generator more CPU per request than the
//! server it measured spent).

use super::{InFlight, Pace};
use crate::client::ClientConfig;
use crate::spdy::conn::{self, Owner, Tuning};
use crate::transport::io::BoxIo;
use spdy::ids::IdMap;
use spdy::session::{Event, Stats};
use spdy::url::Url;
use spdy::{Headers, RstStatus, Session, StreamId, Version};

/// A SPDY connection not yet driven: its socket, its session and the request it
/// repeats.
pub(super) struct Lean {
    io: BoxIo,
    session: Session,
    request: Headers,
}

impl Lean {
    /// A client session of `version` on `io` with the [`Client`](crate::client::Client)'s
    /// configuration (Chromium's receive windows) but fixed-code header blocks, repeating a GET of
    /// `url`.
    pub(super) fn new(io: BoxIo, version: Version, url: &Url) -> Lean {
        let mut cfg = ClientConfig::default().spdy;
        cfg.role = spdy::Role::Client;
        cfg.version = version;
        // Fixed Huffman codes for its requests (zlib's level 9, Chromium's, spent a third
        // of the generator's CPU in deflate_slow at -c 100 -m 10, and level 1 a quarter in
        // building Huffman trees): a generator should cost less than what it measures.
        cfg.compression.level = 1;
        cfg.compression.fixed_codes = true;
        let mut extra = Headers::new();
        extra.add("user-agent", "speedy-bench");
        extra.add("accept", "*/*");
        let authority = url.authority();
        let request =
            spdy::http::request_headers(version, "GET", &url.scheme, &authority, &url.path, &extra);
        Lean {
            io,
            session: Session::new(cfg),
            request,
        }
    }

    /// Runs the connection until `pace` starts no more requests and every started one
    /// has ended (or the connection has); returns the session's counters.
    pub(super) async fn drive(self, in_flight: usize, pace: &mut impl Pace) -> Stats {
        let Lean {
            io,
            mut session,
            request,
        } = self;
        let mut gen = Gen {
            pace,
            request,
            open: IdMap::with_capacity_and_hasher(in_flight, Default::default()),
            stopped: false,
        };
        for _ in 0..in_flight.max(1) {
            gen.next(&mut session);
        }
        conn::run(io, &mut session, &mut gen, Tuning::CLIENT).await;
        // Whatever is still open ended with the connection.
        for (_, r) in gen.open.drain() {
            gen.pace.done(r.started, Err("connection closed".into()));
        }
        session.stats()
    }
}

struct Gen<'p, P: Pace> {
    pace: &'p mut P,
    request: Headers,
    open: IdMap<StreamId, InFlight>,
    /// The pace said stop (or the session cannot open more): no more requests.
    stopped: bool,
}

impl<P: Pace> Gen<'_, P> {
    /// Starts another request if the pace says so.
    fn next(&mut self, session: &mut Session) {
        if self.stopped {
            return;
        }
        let Some(started) = self.pace.start() else {
            self.stopped = true;
            return;
        };
        match session.open(self.request.clone(), 0, true) {
            Ok(id) => {
                self.open.insert(id, InFlight::new(started));
            }
            Err(_) => {
                self.stopped = true;
                self.pace.done(started, Err("connection closed".into()));
            }
        }
    }

    /// A request ended: told to the pace, and the next one started.
    fn end(&mut self, session: &mut Session, id: StreamId, error: Option<&str>) {
        let Some(r) = self.open.remove(&id) else {
            return;
        };
        self.pace
            .done(r.started, r.outcome(error.map(str::to_string)));
        self.next(session);
    }

    /// The status of a reply's headers.
    fn reply(&mut self, session: &mut Session, id: StreamId, headers: &Headers, fin: bool) {
        if let Some(r) = self.open.get_mut(&id) {
            if r.status.is_none() {
                r.status = spdy::http::parse_status(session.version(), headers);
            }
        }
        if fin {
            self.end(session, id, None);
        }
    }
}

impl<P: Pace> Owner for Gen<'_, P> {
    type Wire = Session;
    type Input = ();

    fn on_event(&mut self, session: &mut Session, ev: Event) {
        match ev {
            Event::Reply { id, headers, fin } | Event::Headers { id, headers, fin } => {
                self.reply(session, id, &headers, fin);
            }
            Event::Data { id, data, fin } => {
                session.release(id, data.len());
                if let Some(r) = self.open.get_mut(&id) {
                    r.bytes += data.len() as u64;
                }
                if fin {
                    self.end(session, id, None);
                }
            }
            // A push the generator did not ask for: refused, its data not wanted.
            Event::Stream { id, .. } => session.reset(id, RstStatus::CANCEL),
            Event::Reset { id, .. } => self.end(session, id, Some("stream reset")),
            Event::GoAway { unprocessed, .. } => {
                self.stopped = true;
                for id in unprocessed {
                    self.end(session, id, Some("stream reset"));
                }
            }
            Event::Error { .. } => self.stopped = true,
            _ => {}
        }
    }

    fn wants_input(&self) -> bool {
        false
    }

    fn next_input(&mut self) -> impl std::future::Future<Output = Option<()>> + Send {
        std::future::pending()
    }

    fn on_input(&mut self, _: &mut Session, _: ()) {}

    fn on_peer_closed(&mut self, _: &mut Session) -> bool {
        false
    }

    fn finished(&self, _: &Session) -> bool {
        self.stopped && self.open.is_empty()
    }
}
