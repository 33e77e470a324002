//! The request lifecycle in the engine: a discovered URL becomes a [`Req`] (its pool,
//! priority, frame and headers), and a request that cannot complete is failed and taken
//! out of every queue.

use super::*;

impl Engine<'_> {
    /// The pool a request to `u` joins: `*` for one multiplexed session (single domain or
    /// a proxy), otherwise its origin, partitioned for a cross-site frame and, with the
    /// browser model, by privacy mode (as Chromium's socket pool group ids read).
    pub(super) fn pool_key(&self, u: &Url, cross_site: bool, privacy: chromium::Privacy) -> String {
        let single = self.cfg.domains == Domains::Single || self.cfg.proxy.is_some();
        if matches!(self.cfg.proto, Proto::Spdy | Proto::H2 | Proto::H3) && single {
            return "*".into();
        }
        let mut key = u.origin();
        if !self.cfg.partition_frames {
            return key;
        }
        if cross_site {
            key.push_str(" (cross-site frame)");
        }
        if self.chromium && privacy != chromium::Privacy::Credentialed {
            key.push(' ');
            key.push_str(privacy.tag());
        }
        key
    }

    /// The privacy mode of a request for `url` of `kind` made under `parent` (the origin of
    /// the document it is made for against the page's).
    pub(super) fn privacy(
        &self,
        url: &Url,
        kind: ObjectType,
        parent: Option<ReqId>,
    ) -> chromium::Privacy {
        self.privacy_in(url, kind, self.document_of(parent))
    }

    /// [`Self::privacy`] for a request made for document `doc` (none: the page itself).
    fn privacy_in(&self, url: &Url, kind: ObjectType, doc: Option<&Req>) -> chromium::Privacy {
        let top = self.reqs.get(&self.root).map_or(&url.host, |r| &r.url.host);
        let origin = url.origin();
        let doc_origin = doc.map_or_else(|| origin.clone(), |d| d.url.origin());
        chromium::Privacy::of(kind, &origin, &url.host, &doc_origin, top)
    }

    /// The document a request under `parent` is made for: the nearest document up its
    /// initiators (none for the page itself).
    fn document_of(&self, parent: Option<ReqId>) -> Option<&Req> {
        let mut at = parent;
        while let Some(r) = at.and_then(|d| self.reqs.get(&d)) {
            if r.kind == ObjectType::Document {
                return Some(r);
            }
            at = r.initiator.parent();
        }
        None
    }

    /// Chromium's request headers for a request for `url` of `kind` under `parent`, made
    /// for document `doc` (`chromium_headers`): the referrer is the style sheet for what a style sheet
    /// asks for, else the document, cut to its origin across origins (the default
    /// `strict-origin-when-cross-origin` policy); the archive's recorded cookie goes only
    /// with a credentialed request.
    fn chromium_headers(
        &self,
        url: &Url,
        kind: ObjectType,
        parent: Option<ReqId>,
        doc: Option<&Req>,
        archive_id: Option<usize>,
        privacy: chromium::Privacy,
    ) -> Vec<(String, String)> {
        use crate::loader::chromium_headers::{request_headers, Fetch};
        let navigation = (kind == ObjectType::Document).then_some(parent.is_none());
        let origin = url.origin();
        let by = match parent.and_then(|p| self.reqs.get(&p)) {
            Some(p) if p.kind == ObjectType::Stylesheet => Some(p),
            _ => doc,
        };
        let referer = by.map(|r| {
            if r.url.origin() == origin {
                r.url_s.clone()
            } else {
                format!("{}/", r.url.origin())
            }
        });
        let cookie = archive_id.zip(self.archive).and_then(|(a, ar)| {
            (ar.objects[a].request_headers.iter())
                .find(|(n, _)| n.eq_ignore_ascii_case("cookie"))
                .map(|(_, v)| v.clone())
        });
        request_headers(Fetch {
            kind,
            navigation,
            url,
            initiator: doc.map(|d| &d.url),
            referer,
            cookie,
            privacy,
        })
    }

    /// Whether a request for `url` of `kind` with this `parent` is made in (or, for a
    /// frame's document, navigates) a frame of another site than the page's.
    fn cross_site(&self, url: &Url, kind: ObjectType, parent: Option<ReqId>) -> bool {
        let Some(p) = parent.and_then(|p| self.reqs.get(&p)) else {
            return false;
        };
        if kind == ObjectType::Document {
            let root = self.reqs.get(&self.root).map(|r| &r.url);
            return root.is_some_and(|r| chromium::site(&r.host) != chromium::site(&url.host));
        }
        p.cross_site
    }

    /// The priority a request goes out with, and Chromium's for it.
    pub(super) fn priorities_for(
        &self,
        kind: ObjectType,
        initiator: &Initiator,
        blocking: Blocking,
    ) -> (u8, chromium::Priority) {
        let doc_images = initiator
            .parent()
            .and_then(|p| self.doc_images.get(&p).copied())
            .unwrap_or(0);
        let origin = match initiator {
            Initiator::Parser { .. }
            | Initiator::ArchiveOffset { .. }
            | Initiator::ArchiveFallback { .. } => Origin::Parser {
                async_or_defer: matches!(blocking, Blocking::AsyncScript | Blocking::DeferScript),
                after_first_image: doc_images > 0,
            },
            Initiator::Css { .. } => Origin::Css,
            Initiator::Script { .. } => Origin::Script,
            _ => Origin::Other,
        };
        let cp = chromium::priority(kind, origin, doc_images);
        let wire = match &self.cfg.priorities {
            Some(table) => table.of(kind),
            None if self.chromium => cp.spdy(),
            None => crate::config::Priorities::default().of(kind),
        };
        (wire, cp)
    }

    /// Queues a request for `url` unless one exists; returns its id if new.
    pub(super) fn discover(
        &mut self,
        url: Url,
        kind: ObjectType,
        initiator: Initiator,
        blocking: Blocking,
        now: Instant,
    ) -> Option<ReqId> {
        let key = url.to_string();
        if self.by_url.contains_key(&key) {
            return None;
        }
        let archive_id = self.index.get(&key).copied();
        let kind = match (archive_id, self.archive) {
            (Some(a), Some(ar)) => ar.objects[a].kind,
            _ => kind,
        };
        if let Some(a) = archive_id {
            self.discovered_archive.insert(a);
        }
        let id = self.ids.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let parent = initiator.parent();
        let cross_site = self.cross_site(&url, kind, parent);
        let doc = self.document_of(parent);
        let privacy = self.privacy_in(&url, kind, doc);
        let req_headers = if self.chromium {
            self.chromium_headers(&url, kind, parent, doc, archive_id, privacy)
        } else {
            let referer = parent
                .and_then(|p| self.reqs.get(&p))
                .map(|p| p.url_s.clone());
            self.request_headers(archive_id, kind, referer)
        };
        let pool = self.pool_key(&url, cross_site, privacy);
        self.ensure_pool(&pool, &url);
        // A cross-site frame's navigation: Chromium preconnects one credentialed socket
        // to its origin, in a group none of the frame's requests use.
        if kind == ObjectType::Document && cross_site && self.preconnects() {
            let key = self.pool_key(&url, true, chromium::Privacy::Credentialed);
            if key != pool {
                self.ensure_pool(&key, &url);
                self.preconnect(&key, 1);
            }
        }
        let (mut priority, mut chromium_priority) = self.priorities_for(kind, &initiator, blocking);
        // A priority Chrome recorded for this object (HAR `_priority`) stands for the model's.
        let recorded = archive_id
            .zip(self.archive)
            .and_then(|(a, ar)| ar.objects[a].priority.as_deref())
            .and_then(chromium::Priority::from_name);
        if let Some(p) = recorded.filter(|_| self.chromium) {
            chromium_priority = p;
            if self.cfg.priorities.is_none() {
                priority = p.spdy();
            }
        }
        // The main frame: the root, and what the root's subresources (not its frames) ask for.
        let main_frame = match parent.and_then(|p| self.reqs.get(&p)) {
            None => true,
            Some(p) => p.main_frame && !(p.kind == ObjectType::Document && p.id != self.root),
        };
        let delays_load = !(kind == ObjectType::Xhr
            || (kind == ObjectType::Other && matches!(initiator, Initiator::Script { .. })));
        if let Some(p) = parent {
            self.kids.entry(p).or_default().push(id);
        }
        let req = Req {
            id,
            url_s: key.clone(),
            url,
            kind,
            priority,
            initiator,
            archive_id,
            req_headers,
            req_header_bytes: -1,
            queued: now,
            assigned: None,
            conn: None,
            fresh: false,
            sent: None,
            first_byte: None,
            end: None,
            status: 0,
            resp_headers: Vec::new(),
            resp_header_bytes: -1,
            body_bytes: 0,
            decoded_bytes: 0,
            body: None,
            error: None,
            pushed: false,
            attempts: 0,
            chromium_priority,
            released: None,
            executed: None,
            delays_load,
            main_frame,
            cross_site,
            parse: Parse::None,
            pool,
        };
        self.by_url.insert(key, id);
        self.reqs.insert(id, req);
        self.outstanding += 1;
        self.held.push(id);
        self.release();
        Some(id)
    }

    /// Fails request `id` at `at` (unless done): it leaves its connection, its queue and
    /// the schedulers, and a document's parser completes.
    pub(super) fn fail(&mut self, id: ReqId, at: Instant, error: String) {
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        if r.done() {
            return;
        }
        r.error = Some(error);
        r.end = Some(at);
        r.parse = Parse::None;
        self.outstanding -= 1;
        if let Some(c) = r.conn {
            let c = &mut self.conns[c as usize];
            c.inflight = c.inflight.saturating_sub(1);
        }
        // Take it out of its queue, if it waits there.
        let pool = r.pool.clone();
        if let Some(p) = self.pools.get_mut(&pool) {
            p.queue.retain(|q| *q != id);
        }
        self.held.retain(|q| *q != id);
        self.blink.finish(id);
        self.net.finish(id);
        if let Some(p) = self.parsers.get_mut(&id) {
            p.complete = true;
        }
    }

    /// The `<base href>` of document `parent`, if it has one.
    pub(super) fn base_of(&self, parent: ReqId) -> Option<Url> {
        self.bases.get(&parent).cloned()
    }
}
