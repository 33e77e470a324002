//! Connection events in the engine: a connection ready, failed or closed (its requests
//! requeued or failed), a request sent (the root's send starts the client prefetch) or
//! failed, and server pushes matched to the page's URLs. Response heads, bodies and
//! ends go on to `engine/responses.rs`.

use super::*;

impl Engine<'_> {
    /// Takes one connection event: a connection's state, a request's progress, a push.
    pub(super) fn on_event(&mut self, ev: ConnEvent) {
        match ev {
            ConnEvent::Ready { conn, times, peer } => {
                let c = &mut self.conns[conn as usize];
                c.times = Some(times);
                c.peer = Some(peer);
                self.close_if_surplus(conn);
            }
            ConnEvent::Dialing { conn, phase } => {
                self.conns[conn as usize].dialing = Some(phase);
            }
            ConnEvent::DialFailed { conn, error } => {
                let c = &mut self.conns[conn as usize];
                c.error = Some(error.clone());
                c.closed = true;
                let key = c.pool.clone();
                let p = self.pools.get_mut(&key).expect("pool");
                p.error = Some(error.clone());
                let others = p.conns.iter().any(|o| self.conns[*o as usize].live());
                if !others {
                    let queue = std::mem::take(&mut self.pools.get_mut(&key).expect("pool").queue);
                    for id in queue {
                        self.fail(id, self.now, error.clone());
                    }
                }
            }
            ConnEvent::Sent {
                id,
                at,
                header_bytes,
            } => {
                let is_root = id == self.root;
                if let Some(r) = self.reqs.get_mut(&id) {
                    r.sent = Some(at);
                    r.req_header_bytes = header_bytes;
                }
                if is_root && !self.root_sent {
                    self.root_sent = true;
                    self.prefetch(at);
                }
            }
            ConnEvent::Head {
                id,
                first_byte,
                status,
                headers,
                header_bytes,
            } => self.on_head(id, first_byte, status, headers, header_bytes),
            ConnEvent::Data { id, at, data } => self.on_data(id, at, data),
            ConnEvent::End { id, at } => self.on_end(id, at),
            ConnEvent::Failed {
                id,
                at,
                error,
                retry,
            } => {
                let Some(r) = self.reqs.get_mut(&id) else {
                    return;
                };
                if r.done() {
                    return;
                }
                if let Some(c) = r.conn.take() {
                    let c = &mut self.conns[c as usize];
                    c.inflight = c.inflight.saturating_sub(1);
                }
                if retry && r.attempts < 3 && !r.pushed && r.first_byte.is_none() {
                    r.assigned = None;
                    r.sent = None;
                    r.fresh = false;
                    self.enqueue(id);
                } else {
                    self.fail(id, at, error);
                }
            }
            ConnEvent::Pushed {
                conn,
                id,
                assoc,
                url,
                at,
            } => self.on_push(conn, id, assoc, url, at),
            ConnEvent::Closed {
                conn,
                at,
                tcp_info,
                counters,
            } => {
                let c = &mut self.conns[conn as usize];
                c.closed = true;
                c.tcp_info = tcp_info;
                c.counters = counters;
                // Requests still on it go elsewhere (their Failed events came first).
                let stuck: Vec<ReqId> = self
                    .reqs
                    .values()
                    .filter(|r| r.conn == Some(conn) && !r.done())
                    .map(|r| r.id)
                    .collect();
                for id in stuck {
                    let r = self.reqs.get_mut(&id).expect("req");
                    r.conn = None;
                    if r.first_byte.is_none() && r.attempts < 3 && !r.pushed {
                        r.assigned = None;
                        r.sent = None;
                        self.enqueue(id);
                    } else {
                        self.fail(id, at, "connection closed".into());
                    }
                }
                self.conns[conn as usize].inflight = 0;
            }
        }
    }

    /// The root request is sent: the client prefetch requests what earlier loads learned.
    fn prefetch(&mut self, at: Instant) {
        let learned = self.cfg.prefetch.clone();
        for (u, kind) in learned {
            if let Some(url) = Url::parse(&u) {
                self.discover(url, kind, Initiator::Prefetch, Blocking::None, at);
            }
        }
    }

    /// A pushed stream `id` for `url`: refused if the URL is bad or already requested,
    /// otherwise recorded as a request already sent on `conn`.
    fn on_push(&mut self, conn: ConnId, id: ReqId, assoc: Option<ReqId>, url: String, at: Instant) {
        let Some(mut u) = Url::parse(&url) else {
            self.actions.push_back(Action::Cancel { conn, id });
            return;
        };
        // A server on a forced transport (e.g. plain TCP for https origins) names pushes
        // with its own scheme: match them to the page's URLs.
        if self.cfg.transport != Transport::Auto {
            let known = |k: &str| self.by_url.contains_key(k) || self.index.contains_key(k);
            if !known(&u.to_string()) {
                let mut alt = u.clone();
                alt.scheme = if u.scheme == "http" { "https" } else { "http" }.into();
                if alt.port.is_none() || alt.port == Some(u.port_or_default()) {
                    alt.port = None;
                }
                if known(&alt.to_string()) {
                    u = alt;
                }
            }
        }
        let key = u.to_string();
        if self.by_url.contains_key(&key) {
            // Already requested: refuse the duplicate.
            self.actions.push_back(Action::Cancel { conn, id });
            return;
        }
        let archive_id = self.index.get(&key).copied();
        if let Some(a) = archive_id {
            self.discovered_archive.insert(a);
        }
        let kind = match (archive_id, self.archive) {
            (Some(a), Some(ar)) => ar.objects[a].kind,
            _ => ObjectType::guess("", &key),
        };
        let cross_site = assoc
            .and_then(|a| self.reqs.get(&a))
            .is_some_and(|a| a.cross_site);
        let pool = self.pool_key(&u, cross_site, self.privacy(&u, kind, assoc));
        self.by_url.insert(key.clone(), id);
        self.outstanding += 1;
        self.conns[conn as usize].requests += 1;
        let init = Initiator::Push { parent: assoc };
        let (priority, chromium_priority) = self.priorities_for(kind, &init, Blocking::None);
        self.reqs.insert(
            id,
            Req {
                id,
                url_s: key,
                url: u,
                kind,
                priority,
                initiator: init,
                archive_id,
                req_headers: Vec::new(),
                req_header_bytes: -1,
                queued: at,
                assigned: Some(at),
                conn: Some(conn),
                fresh: false,
                sent: Some(at),
                first_byte: None,
                end: None,
                status: 0,
                resp_headers: Vec::new(),
                resp_header_bytes: -1,
                body_bytes: 0,
                decoded_bytes: 0,
                body: None,
                error: None,
                pushed: true,
                attempts: 1,
                chromium_priority,
                released: Some(at),
                executed: None,
                delays_load: true,
                main_frame: true,
                cross_site,
                parse: Parse::None,
                pool,
            },
        );
    }
}
