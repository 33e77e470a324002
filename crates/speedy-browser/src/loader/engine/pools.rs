//! The engine's browser schedulers and connection pools: which held request the browser
//! lets through (`release`: Blink's tight mode, the network service's delayable limits),
//! which connection carries it (`schedule`: six per host over HTTP/1.1 and a total cap,
//! one session per origin, or one in all, when multiplexing), and what is sent
//! (`assign`).

use super::*;

impl Engine<'_> {
    pub(super) fn ensure_pool(&mut self, pool: &str, url: &Url) {
        if self.pools.contains_key(pool) {
            return;
        }
        // An https origin through a plain HTTP proxy over HTTP/1.1 is tunnelled, as a
        // browser does: CONNECT, then TLS to the origin inside.
        let tunnel = match &self.cfg.proxy {
            Some(p)
                if !p.tls
                    && self.cfg.proto == Proto::Http1
                    && self.cfg.transport.tls_for(&url.scheme) =>
            {
                Some((url.host.clone(), url.port.unwrap_or(443)))
            }
            _ => None,
        };
        let (host, port, scheme) = if let Some(p) = &self.cfg.proxy {
            let scheme = if p.tls || tunnel.is_some() {
                "https"
            } else {
                "http"
            };
            (p.host.clone(), Some(p.port), scheme.to_string())
        } else if pool == "*" {
            let root = Url::parse(&self.cfg.url).expect("checked");
            (root.host.clone(), root.port, root.scheme.clone())
        } else {
            (url.host.clone(), url.port, url.scheme.clone())
        };
        // In single-domain mode the page's scheme decides TLS for the one connection; to a
        // proxy, the proxy URL's scheme (`--tls`/`--plain` are about the origins).
        let tls = if self.cfg.proxy.is_some() {
            scheme == "https"
        } else {
            self.cfg.transport.tls_for(&scheme)
        };
        self.pools.insert(
            pool.to_string(),
            Pool {
                host,
                port,
                tls,
                tunnel,
                queue: Vec::new(),
                conns: Vec::new(),
                error: None,
            },
        );
        self.pool_order.push(pool.to_string());
    }

    /// Lets held requests through the browser's schedulers, highest priority first (then
    /// discovery order): Blink's for the main frame's subresources, and the network
    /// service's for servers it knows no request priorities of ([`NetGate::holds`]).
    pub(super) fn release(&mut self) {
        if self.held.is_empty() {
            return;
        }
        let mut held = std::mem::take(&mut self.held);
        held.sort_by_key(|id| (Reverse(self.reqs[id].chromium_priority), *id));
        let mut kept = Vec::new();
        for id in held {
            let (p, main, host) = {
                let r = &self.reqs[&id];
                (r.chromium_priority, r.main_frame, r.url.host.clone())
            };
            let gated = self.chromium && id != self.root;
            let net_held = NetGate::holds(self.cfg.proto);
            if gated
                && ((main && !self.blink.allows(p)) || (net_held && !self.net.allows(&host, p)))
            {
                kept.push(id);
                continue;
            }
            if gated {
                if main {
                    self.blink.start(id, p);
                }
                if net_held {
                    self.net.start(id, &host, p);
                }
            }
            self.reqs.get_mut(&id).expect("req").released = Some(self.now);
            self.enqueue(id);
        }
        kept.sort();
        self.held = kept;
    }

    pub(super) fn enqueue(&mut self, id: ReqId) {
        let (pool, prio) = {
            let r = &self.reqs[&id];
            (r.pool.clone(), r.priority)
        };
        let reqs = &self.reqs;
        let p = self.pools.get_mut(&pool).expect("pool exists");
        // Highest priority first; discovery order within a priority.
        let at = p
            .queue
            .iter()
            .position(|q| {
                let o = &reqs[q];
                o.priority > prio || (o.priority == prio && o.id > id)
            })
            .unwrap_or(p.queue.len());
        p.queue.insert(at, id);
    }

    pub(super) fn request_headers(
        &self,
        archive_id: Option<usize>,
        kind: ObjectType,
        referer: Option<String>,
    ) -> Vec<(String, String)> {
        if let (Some(a), Some(ar)) = (archive_id, self.archive) {
            let rec = &ar.objects[a].request_headers;
            if !rec.is_empty() {
                return rec
                    .iter()
                    .filter(|(n, _)| {
                        !n.starts_with(':')
                            && !matches!(
                                n.to_ascii_lowercase().as_str(),
                                "host"
                                    | "connection"
                                    | "keep-alive"
                                    | "content-length"
                                    | "transfer-encoding"
                                    | "proxy-connection"
                                    | "upgrade"
                            )
                    })
                    .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
                    .collect();
            }
        }
        let accept = match kind {
            ObjectType::Document => {
                "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
            }
            ObjectType::Stylesheet => "text/css,*/*;q=0.1",
            ObjectType::Image => "image/webp,image/*,*/*;q=0.8",
            _ => "*/*",
        };
        let mut h = vec![
            (
                "user-agent".to_string(),
                concat!(
                    "Mozilla/5.0 (X11; Linux x86_64) speedy-browser/",
                    env!("CARGO_PKG_VERSION")
                )
                .to_string(),
            ),
            ("accept".into(), accept.into()),
            ("accept-encoding".into(), "gzip, deflate".into()),
            ("accept-language".into(), "en-US,en;q=0.8".into()),
        ];
        if let Some(r) = referer {
            h.push(("referer".into(), r));
        }
        h
    }

    // ---- connection pools ---------------------------------------------------------

    pub(super) fn schedule(&mut self) {
        let mut keys: Vec<String> = self
            .pool_order
            .iter()
            .filter(|k| !self.pools[*k].queue.is_empty())
            .cloned()
            .collect();
        // Chromium hands requests to its socket pools in priority order, so the pools of
        // the most urgent requests dial first (their SYNs and ClientHellos lead the
        // queue on a slow uplink): pools by their first queued request, highest priority
        // first, then discovery order. Chromium's HAR of a cellular-2013 page on the DSL line
        // (`docs/validate/connections.toml`): the style sheets' connections started at
        // 664-680 ms, then the scripts' at 690-695 ms, in that order.
        if self.chromium {
            keys.sort_by_key(|k| {
                let head = self.pools[k].queue[0];
                (Reverse(self.reqs[&head].chromium_priority), head)
            });
        }
        for key in keys {
            if self.driver.depth() == usize::MAX {
                self.schedule_multiplexed(&key);
            } else {
                self.schedule_http1(&key);
            }
        }
    }

    pub(super) fn schedule_multiplexed(&mut self, key: &str) {
        let live: Vec<ConnId> = self.pools[key]
            .conns
            .iter()
            .copied()
            .filter(|c| self.conns[*c as usize].live())
            .collect();
        // Up to `sessions_per_pool` sessions, one more per waiting request; before the
        // first is up, a browser that learns the protocol by ALPN (TLS) and does not yet
        // know the server races one connection per waiting request (over plain TCP the
        // protocol is prior knowledge). QUIC never races: its protocol is known before the
        // dial, and Chromium's QuicSessionPool attaches every request for a session key to
        // the one job under way for it (`net/quic/quic_session_pool_job.h`).
        let waiting = self.pools[key].queue.len();
        let want = self.cfg.sessions_per_pool.max(1).min(live.len() + waiting);
        let racing = self.cfg.race_connections
            && self.pools[key].tls
            && !self.driver.quic()
            && !self.pool_knows_multiplexing(key);
        let open_to = if racing {
            want.max(waiting.min(self.cfg.per_host.max(1)))
        } else {
            want
        };
        for _ in live.len()..open_to {
            self.open_conn(key);
        }
        let ready: Vec<ConnId> = live
            .into_iter()
            .filter(|c| self.conns[*c as usize].times.is_some())
            .collect();
        if ready.is_empty() {
            return; // connecting
        }
        let queue = std::mem::take(&mut self.pools.get_mut(key).expect("pool").queue);
        // With several sessions, each ready one takes no more than its share of what is
        // in flight and waiting; the rest wait for the sessions still connecting.
        let in_flight: usize = ready.iter().map(|c| self.conns[*c as usize].inflight).sum();
        let share = (in_flight + queue.len()).div_ceil(want.max(ready.len()));
        // On a new connection the set-up phases go to the request that caused it (the
        // earliest queued), though requests leave in priority order.
        let opener = queue
            .iter()
            .copied()
            .min_by_key(|id| (self.reqs[id].queued, *id));
        let unused: Vec<ConnId> = ready
            .iter()
            .copied()
            .filter(|c| !self.conns[*c as usize].used)
            .collect();
        let mut left = Vec::new();
        for id in queue {
            let c = *ready
                .iter()
                .min_by_key(|c| (self.conns[**c as usize].inflight, **c))
                .expect("non-empty");
            if self.conns[c as usize].inflight >= share {
                left.push(id);
                continue;
            }
            self.assign(id, c);
            if unused.contains(&c) {
                self.reqs.get_mut(&id).expect("req").fresh = Some(id) == opener;
            }
        }
        self.pools.get_mut(key).expect("pool").queue = left;
    }

    /// Whether a session of this pool has been up (the browser now knows the server
    /// speaks SPDY/h2).
    pub(super) fn pool_knows_multiplexing(&self, key: &str) -> bool {
        self.pools[key]
            .conns
            .iter()
            .any(|c| self.conns[*c as usize].times.is_some())
    }

    /// A connection of a multiplexed pool that comes up when the pool already has the
    /// sessions it wants closes unused: one that lost the race to the pool's first
    /// session, or a backup dial whose first dial won (Chromium finds the session in
    /// its `SpdySessionPool` and hands the new socket back).
    pub(super) fn close_if_surplus(&mut self, conn: ConnId) {
        let key = self.conns[conn as usize].pool.clone();
        if self.driver.depth() != usize::MAX {
            return;
        }
        let others = self.pools[&key]
            .conns
            .iter()
            .filter(|c| **c != conn)
            .filter(|c| {
                let c = &self.conns[**c as usize];
                c.live() && c.times.is_some()
            })
            .count();
        if others >= self.cfg.sessions_per_pool.max(1) {
            let c = &mut self.conns[conn as usize];
            c.closing = true;
            self.actions.push_back(Action::Close { conn });
        }
    }

    pub(super) fn schedule_http1(&mut self, key: &str) {
        let depth = self.driver.depth();
        // 1. Idle ready connections.
        loop {
            let Some(&head) = self.pools[key].queue.first() else {
                return;
            };
            let idle = self.pools[key].conns.iter().copied().find(|c| {
                let c = &self.conns[*c as usize];
                c.live() && c.times.is_some() && c.inflight == 0
            });
            let Some(c) = idle else { break };
            self.pools.get_mut(key).expect("pool").queue.remove(0);
            self.assign(head, c);
        }
        // 2. New connections for what is left (connecting ones count).
        let connecting = self.pools[key]
            .conns
            .iter()
            .filter(|c| {
                let c = &self.conns[**c as usize];
                c.live() && c.times.is_none()
            })
            .count();
        let mut need = self.pools[key].queue.len().saturating_sub(connecting);
        while need > 0 {
            let here = self.pools[key]
                .conns
                .iter()
                .filter(|c| self.conns[**c as usize].live())
                .count();
            if here >= self.cfg.per_host.max(1) {
                break;
            }
            let total = self.conns.iter().filter(|c| c.live()).count();
            if total >= self.cfg.max_connections.max(1) && !self.close_an_idle_connection(key) {
                break;
            }
            self.open_conn(key);
            need -= 1;
        }
        // 3. Pipelining onto busy connections.
        if depth > 1 {
            loop {
                let Some(&head) = self.pools[key].queue.first() else {
                    return;
                };
                let c = self.pools[key]
                    .conns
                    .iter()
                    .copied()
                    .filter(|c| {
                        let c = &self.conns[*c as usize];
                        c.live() && c.times.is_some() && c.inflight < depth
                    })
                    .min_by_key(|c| self.conns[*c as usize].inflight);
                let Some(c) = c else { break };
                self.pools.get_mut(key).expect("pool").queue.remove(0);
                self.assign(head, c);
            }
        }
    }

    /// Frees a slot under the total cap by closing an idle connection of another pool.
    pub(super) fn close_an_idle_connection(&mut self, except: &str) -> bool {
        let victim = self
            .conns
            .iter()
            .position(|c| c.live() && c.times.is_some() && c.inflight == 0 && c.pool != except);
        match victim {
            Some(i) => {
                let c = &mut self.conns[i];
                c.closing = true;
                self.actions.push_back(Action::Close { conn: c.id });
                true
            }
            None => false,
        }
    }

    pub(super) fn open_conn(&mut self, key: &str) -> ConnId {
        let id = self.conns.len() as ConnId;
        // A pool with nothing live (no connection, none connecting) arms its backup
        // timer with its first dial (`backup_job`).
        let empty = !self.pools[key]
            .conns
            .iter()
            .any(|c| self.conns[*c as usize].live());
        if empty && self.cfg.backup_connect_jobs && !self.driver.quic() {
            self.push_timer(
                self.now + chromium::BACKUP_JOB_AFTER,
                Timer::Backup { pool: key.into() },
            );
        }
        let p = self.pools.get_mut(key).expect("pool");
        p.conns.push(id);
        let (host, port, tls, tunnel) = (p.host.clone(), p.port, p.tls, p.tunnel.clone());
        self.conns.push(ConnRecord {
            id,
            pool: key.to_string(),
            host: host.clone(),
            times: None,
            peer: None,
            error: None,
            requests: 0,
            tcp_info: None,
            counters: ConnCounters::default(),
            closed: false,
            opened: self.now,
            dialing: None,
            inflight: 0,
            used: false,
            closing: false,
        });
        self.actions.push_back(Action::Dial {
            conn: id,
            host,
            port,
            tls,
            tunnel,
        });
        id
    }

    /// Whether this load makes Chromium's preconnects (`LoadConfig::preconnect`).
    pub(super) fn preconnects(&self) -> bool {
        self.cfg.preconnect && self.chromium && self.cfg.proxy.is_none() && !self.driver.quic()
    }

    /// Chromium's preconnect of `sockets` to a pool (`PreconnectManager` asking the socket
    /// pool for that many): dials until the pool has that many live connections; none to
    /// a pool that already has a multiplexed session.
    pub(super) fn preconnect(&mut self, key: &str, sockets: usize) {
        let live = (self.pools[key].conns.iter())
            .filter(|c| self.conns[**c as usize].live())
            .count();
        if self.driver.depth() == usize::MAX && self.pool_knows_multiplexing(key) {
            return;
        }
        for _ in live..sockets.min(self.cfg.per_host.max(1)) {
            self.open_conn(key);
        }
    }

    /// A pool's backup timer fired: Chromium's backup connect job
    /// (`chromium::BACKUP_JOB_AFTER`). When the pool's oldest dial still has no
    /// transport connection and requests wait for one, one more dial starts; while that
    /// dial is still resolving, or the pool or the browser has no connection to spare,
    /// the timer starts again; once the oldest dial has connected, none is needed.
    pub(super) fn backup_job(&mut self, key: &str) {
        let oldest = self.pools[key]
            .conns
            .iter()
            .map(|c| &self.conns[*c as usize])
            .find(|c| c.live() && c.times.is_none());
        let Some(oldest) = oldest else {
            return; // every dial is done
        };
        if oldest.dialing == Some(crate::net::DialPhase::Connected) {
            return;
        }
        let here = (self.pools[key].conns.iter())
            .filter(|c| self.conns[**c as usize].live())
            .count();
        let total = self.conns.iter().filter(|c| c.live()).count();
        if oldest.dialing.is_none()
            || here >= self.cfg.per_host.max(1)
            || total >= self.cfg.max_connections.max(1)
        {
            let again = self.now + chromium::BACKUP_JOB_AFTER;
            self.push_timer(again, Timer::Backup { pool: key.into() });
            return;
        }
        if !self.pools[key].queue.is_empty() {
            self.open_conn(key);
        }
    }

    pub(super) fn assign(&mut self, id: ReqId, conn: ConnId) {
        let now = self.now;
        let c = &mut self.conns[conn as usize];
        let fresh = !c.used;
        c.used = true;
        c.inflight += 1;
        c.requests += 1;
        let r = self.reqs.get_mut(&id).expect("req");
        r.assigned = Some(now);
        r.conn = Some(conn);
        r.fresh = fresh;
        r.attempts += 1;
        let req = WireRequest {
            id,
            method: "GET".into(),
            scheme: r.url.scheme.clone(),
            authority: r.url.authority(),
            path: r.url.path.clone(),
            headers: r.req_headers.clone(),
            priority: r.priority,
            // Through a tunnel the origin is spoken to directly.
            absolute_form: self.cfg.proxy.is_some()
                && self.cfg.proto == Proto::Http1
                && self.pools[&self.conns[conn as usize].pool].tunnel.is_none(),
        };
        self.actions.push_back(Action::Send { conn, req });
    }
}
