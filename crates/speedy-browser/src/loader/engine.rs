//! The loader's event handlers: scheduling, connection events, discovery, milestones.

use super::*;

pub(super) fn normalize(url: &str) -> Option<String> {
    Url::parse(url).map(|u| u.to_string())
}

impl Engine<'_> {
    pub(super) fn index_archive(&mut self, root: &Url) {
        let Some(a) = self.archive else { return };
        let key = root.to_string();
        let page = a.pages.iter().find(|p| {
            a.objects
                .get(p.root)
                .and_then(|o| normalize(&o.url))
                .as_deref()
                == Some(key.as_str())
        });
        let objects: Vec<usize> = match page {
            Some(p) => p.objects.clone(),
            None => (0..a.objects.len()).collect(),
        };
        for &id in &objects {
            let o = &a.objects[id];
            if let Some(k) = normalize(&o.url) {
                self.index.entry(k).or_insert(id);
            }
            if let Some(p) = o.discovery.parent() {
                self.children.entry(p).or_default().push(id);
            }
        }
        self.page_objects = if page.is_some() { objects } else { Vec::new() };
    }

    fn now_priority(&self, kind: ObjectType) -> u8 {
        self.cfg.priorities.of(kind)
    }

    fn pool_key(&self, u: &Url) -> String {
        match (self.cfg.proto, self.cfg.domains) {
            (Proto::Spdy | Proto::H2, Domains::Single) => "*".into(),
            _ => u.origin(),
        }
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
        let referer = initiator
            .parent()
            .and_then(|p| self.reqs.get(&p))
            .map(|p| p.url_s.clone());
        let req_headers = self.request_headers(archive_id, kind, referer);
        let pool = self.pool_key(&url);
        if !self.pools.contains_key(&pool) {
            let (host, port, scheme) = if pool == "*" {
                let root = Url::parse(&self.cfg.url).expect("checked");
                (root.host.clone(), root.port, root.scheme.clone())
            } else {
                (url.host.clone(), url.port, url.scheme.clone())
            };
            // In single-domain mode the page's scheme decides TLS for the one connection.
            let tls = match self.cfg.transport {
                Transport::Tls => true,
                Transport::Plain => false,
                Transport::Auto => scheme == "https",
            };
            self.pools.insert(
                pool.clone(),
                Pool {
                    host,
                    port,
                    tls,
                    queue: Vec::new(),
                    conns: Vec::new(),
                    error: None,
                },
            );
            self.pool_order.push(pool.clone());
        }
        let priority = self.now_priority(kind);
        let req = Req {
            id,
            url_s: key.clone(),
            url,
            kind,
            priority,
            initiator,
            blocking,
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
            parse: Parse::None,
            pool: pool.clone(),
        };
        self.by_url.insert(key, id);
        self.reqs.insert(id, req);
        self.outstanding += 1;
        self.enqueue(id);
        Some(id)
    }

    fn enqueue(&mut self, id: ReqId) {
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

    fn request_headers(
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

    // ---- scheduling ---------------------------------------------------------------

    pub(super) fn schedule(&mut self) {
        let keys: Vec<String> = self
            .pool_order
            .iter()
            .filter(|k| !self.pools[*k].queue.is_empty())
            .cloned()
            .collect();
        for key in keys {
            if self.driver.depth() == usize::MAX {
                self.schedule_multiplexed(&key);
            } else {
                self.schedule_http1(&key);
            }
        }
    }

    fn schedule_multiplexed(&mut self, key: &str) {
        let live = self.pools[key]
            .conns
            .iter()
            .copied()
            .find(|c| self.conns[*c as usize].live());
        match live {
            None => {
                self.open_conn(key);
            }
            Some(c) if self.conns[c as usize].times.is_some() => {
                let queue = std::mem::take(&mut self.pools.get_mut(key).expect("pool").queue);
                // On a new connection the set-up phases go to the request that caused it
                // (the earliest queued), though requests leave in priority order.
                let first_use = !self.conns[c as usize].used;
                let opener = queue
                    .iter()
                    .copied()
                    .min_by_key(|id| (self.reqs[id].queued, *id));
                for id in queue {
                    self.assign(id, c);
                    if first_use {
                        self.reqs.get_mut(&id).expect("req").fresh = Some(id) == opener;
                    }
                }
            }
            Some(_) => {} // connecting
        }
    }

    fn schedule_http1(&mut self, key: &str) {
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
    fn close_an_idle_connection(&mut self, except: &str) -> bool {
        let victim = self
            .conns
            .iter()
            .position(|c| c.live() && c.times.is_some() && c.inflight == 0 && c.pool != except);
        match victim {
            Some(i) => {
                let c = &mut self.conns[i];
                c.closing = true;
                let _ = c.tx.send(ConnCmd::Close);
                true
            }
            None => false,
        }
    }

    fn open_conn(&mut self, key: &str) -> ConnId {
        let id = self.conns.len() as ConnId;
        let (tx, rx) = mpsc::unbounded_channel();
        let p = self.pools.get_mut(key).expect("pool");
        p.conns.push(id);
        let host = p.host.clone();
        let port = p.port;
        let tls = if p.tls { self.tls.clone() } else { None };
        let use_tls = p.tls;
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
            opened: Instant::now(),
            tx,
            inflight: 0,
            used: false,
            closing: false,
        });
        let resolver = self.resolver.clone();
        let driver = self.driver.clone();
        let events = self.ev_tx.clone();
        let ids = self.ids.clone();
        tokio::spawn(async move {
            if use_tls && tls.is_none() {
                let _ = events.send(ConnEvent::DialFailed {
                    conn: id,
                    error: "TLS is not configured".into(),
                });
                return;
            }
            let d = net::dial(
                &resolver,
                DialSpec {
                    host: &host,
                    url_port: port,
                    tls,
                },
            )
            .await;
            match d {
                Ok(d) => {
                    if use_tls {
                        let want = driver.alpn();
                        let ok = match d.alpn.as_deref() {
                            Some(a) => a == want,
                            None => want == "http/1.1",
                        };
                        if !ok {
                            let _ = events.send(ConnEvent::DialFailed {
                                conn: id,
                                error: format!(
                                    "{host}: server does not speak {want} (ALPN chose {:?})",
                                    d.alpn
                                ),
                            });
                            return;
                        }
                    }
                    let _ = events.send(ConnEvent::Ready {
                        conn: id,
                        times: d.times,
                        peer: d.peer,
                    });
                    let ctx = ConnCtx {
                        conn: id,
                        cmds: rx,
                        events,
                        ids,
                        fd: d.fd,
                    };
                    driver.run(d.io, ctx).await;
                }
                Err(error) => {
                    let _ = events.send(ConnEvent::DialFailed { conn: id, error });
                }
            }
        });
        id
    }

    fn assign(&mut self, id: ReqId, conn: ConnId) {
        let now = Instant::now();
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
        let w = WireRequest {
            id,
            method: "GET".into(),
            scheme: r.url.scheme.clone(),
            authority: r.url.authority(),
            path: r.url.path.clone(),
            headers: r.req_headers.clone(),
            priority: r.priority,
        };
        if c.tx.send(ConnCmd::Send(w)).is_err() {
            // The task is gone; its Closed event will requeue the request.
        }
    }

    // ---- events -------------------------------------------------------------------

    pub(super) fn on_event(&mut self, ev: ConnEvent) {
        match ev {
            ConnEvent::Ready { conn, times, peer } => {
                let c = &mut self.conns[conn as usize];
                c.times = Some(times);
                c.peer = Some(peer);
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
                    let now = Instant::now();
                    for id in queue {
                        self.fail(id, now, error.clone());
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

    fn prefetch(&mut self, at: Instant) {
        let learned = self.cfg.prefetch.clone();
        for (u, kind) in learned {
            if let Some(url) = Url::parse(&u) {
                self.discover(url, kind, Initiator::Prefetch, Blocking::None, at);
            }
        }
    }

    fn on_push(&mut self, conn: ConnId, id: ReqId, assoc: Option<ReqId>, url: String, at: Instant) {
        let Some(mut u) = Url::parse(&url) else {
            let _ = self.conns[conn as usize].tx.send(ConnCmd::Cancel(id));
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
            let _ = self.conns[conn as usize].tx.send(ConnCmd::Cancel(id));
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
        let pool = self.pool_key(&u);
        self.by_url.insert(key.clone(), id);
        self.outstanding += 1;
        self.conns[conn as usize].requests += 1;
        self.reqs.insert(
            id,
            Req {
                id,
                url_s: key,
                url: u,
                kind,
                priority: self.cfg.priorities.of(kind),
                initiator: Initiator::Push { parent: assoc },
                blocking: Blocking::None,
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
                parse: Parse::None,
                pool,
            },
        );
    }

    fn on_head(
        &mut self,
        id: ReqId,
        first_byte: Instant,
        status: u16,
        headers: Vec<(String, String)>,
        header_bytes: i64,
    ) {
        let keep = self.cfg.keep_bodies;
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        if r.done() {
            return;
        }
        r.first_byte = Some(first_byte);
        r.status = status;
        r.resp_headers = headers;
        r.resp_header_bytes = header_bytes;
        if keep {
            r.body = Some(BytesMut::new());
        }
        let ct = r.content_type().unwrap_or("").to_ascii_lowercase();
        let enc = r.header("content-encoding").unwrap_or("").to_string();
        let ok = (200..300).contains(&status);
        let html = ct.contains("html") || (ct.is_empty() && r.kind == ObjectType::Document);
        let css = ct.contains("css") || (ct.is_empty() && r.kind == ObjectType::Stylesheet);
        let decoder = Decoder::for_encoding(&enc);
        r.parse = match (ok, html, css, decoder) {
            (true, true, _, Some(d)) => Parse::Html(Box::default(), d),
            (true, false, true, Some(d)) => Parse::Css(Vec::new(), d),
            (true, _, _, _) => {
                // Not parseable here: the archive's offsets stand in for a parser.
                let mut offs: Vec<(usize, usize)> = Vec::new();
                if let (Some(a), Some(ar)) = (r.archive_id, self.archive) {
                    for &ch in self.children.get(&a).map(Vec::as_slice).unwrap_or(&[]) {
                        if let Discovery::Parsed { offset, .. } = ar.objects[ch].discovery {
                            offs.push((offset, ch));
                        }
                    }
                }
                offs.sort();
                if offs.is_empty() {
                    Parse::None
                } else {
                    Parse::Offsets(offs, 0)
                }
            }
            _ => Parse::None,
        };
        if self.cfg.hint && id == self.root {
            let hinted: Vec<(String, Option<String>)> = r
                .resp_headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("x-subresources"))
                .flat_map(|(_, v)| parse_hint(v))
                .collect();
            let base = r.url.clone();
            for (h, ty) in hinted {
                if let Some(u) = base.join(&h) {
                    let kind = ObjectType::guess(ty.as_deref().unwrap_or(""), &u.to_string());
                    self.discover(
                        u,
                        kind,
                        Initiator::Hint { parent: id },
                        Blocking::None,
                        first_byte,
                    );
                }
            }
        }
    }

    fn on_data(&mut self, id: ReqId, at: Instant, data: Bytes) {
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        if r.done() {
            return;
        }
        r.body_bytes += data.len() as u64;
        if let Some(b) = &mut r.body {
            b.extend_from_slice(&data);
        }
        let mut found: Vec<HtmlRef> = Vec::new();
        let mut offsets: Vec<(usize, usize)> = Vec::new();
        match &mut r.parse {
            Parse::None => r.decoded_bytes += data.len() as u64,
            Parse::Html(scanner, dec) => {
                let plain = match dec {
                    Some(d) => Bytes::from(d.push(&data)),
                    None => data,
                };
                r.decoded_bytes += plain.len() as u64;
                found = scanner.feed(&plain);
            }
            Parse::Css(buf, dec) => {
                match dec {
                    Some(d) => buf.extend_from_slice(&d.push(&data)),
                    None => buf.extend_from_slice(&data),
                }
                r.decoded_bytes = buf.len() as u64;
            }
            Parse::Offsets(list, next) => {
                r.decoded_bytes += data.len() as u64;
                while *next < list.len() && list[*next].0 <= r.body_bytes as usize {
                    offsets.push(list[*next]);
                    *next += 1;
                }
            }
        }
        if !found.is_empty() {
            self.on_html_refs(id, found, at);
        }
        for (offset, child) in offsets {
            self.discover_archive_child(child, Initiator::ArchiveOffset { parent: id, offset }, at);
        }
    }

    fn discover_archive_child(&mut self, child: usize, init: Initiator, at: Instant) {
        let Some(ar) = self.archive else { return };
        let o = &ar.objects[child];
        if let Some(u) = Url::parse(&o.url) {
            self.discover(u, o.kind, init, Blocking::None, at);
        }
    }

    /// Handles references found by a document's parser (`<base>` changes its base).
    fn on_html_refs(&mut self, parent: ReqId, refs: Vec<HtmlRef>, at: Instant) {
        let mut base = self.reqs[&parent].url.clone();
        if let Some(b) = self.base_of(parent) {
            base = b;
        }
        let is_root = parent == self.root;
        for r in refs {
            let Some(kind) = r.kind else {
                if let Some(b) = base.join(&r.url) {
                    base = b.clone();
                    self.bases.insert(parent, b);
                }
                continue;
            };
            let Some(u) = base.join(&r.url) else { continue };
            let blocking = if is_root { r.blocking } else { Blocking::None };
            let init = if r.tag == "style" {
                Initiator::Css {
                    parent,
                    offset: r.end,
                }
            } else {
                Initiator::Parser {
                    parent,
                    offset: r.end,
                    tag: r.tag,
                }
            };
            let key = u.to_string();
            if let Some(&existing) = self.by_url.get(&key) {
                // Found again (e.g. hinted or pushed first): it still holds up DCL.
                if is_root {
                    let e = self.reqs.get_mut(&existing).expect("req");
                    if e.blocking == Blocking::None {
                        e.blocking = blocking;
                        self.dcl_refs.push((existing, r.end));
                    }
                }
                continue;
            }
            if let Some(id) = self.discover(u, kind, init, blocking, at) {
                if is_root {
                    self.dcl_refs.push((id, r.end));
                }
            }
        }
    }

    fn on_end(&mut self, id: ReqId, at: Instant) {
        let Some(r) = self.reqs.get_mut(&id) else {
            return;
        };
        if r.done() {
            return;
        }
        r.end = Some(at);
        self.outstanding -= 1;
        if let Some(c) = r.conn {
            let c = &mut self.conns[c as usize];
            c.inflight = c.inflight.saturating_sub(1);
        }
        let parse = std::mem::replace(&mut r.parse, Parse::None);
        let status = r.status;
        let base = r.url.clone();
        let archive_id = r.archive_id;
        let location = r.header("location").map(str::to_string);
        let kind = r.kind;
        match parse {
            Parse::Html(mut scanner, mut dec) => {
                let mut refs = Vec::new();
                if let Some(d) = &mut dec {
                    let rest = d.push(&[]);
                    refs.extend(scanner.feed(&rest));
                }
                refs.extend(scanner.finish());
                if !refs.is_empty() {
                    self.on_html_refs(id, refs, at);
                }
            }
            Parse::Css(buf, _) => {
                for c in scan_css(&buf) {
                    if let Some(u) = base.join(&c.url) {
                        self.discover(
                            u,
                            c.kind,
                            Initiator::Css {
                                parent: id,
                                offset: c.end,
                            },
                            Blocking::None,
                            at,
                        );
                    }
                }
            }
            Parse::Offsets(list, next) => {
                for &(offset, child) in &list[next..] {
                    self.discover_archive_child(
                        child,
                        Initiator::ArchiveOffset { parent: id, offset },
                        at,
                    );
                }
            }
            Parse::None => {}
        }
        if (200..300).contains(&status) {
            if let (Some(a), Some(ar)) = (archive_id, self.archive) {
                let kids = self.children.get(&a).cloned().unwrap_or_default();
                for ch in kids {
                    match ar.objects[ch].discovery {
                        Discovery::Computed { after_ms, .. } => {
                            self.timer_seq += 1;
                            let when = at + Duration::from_millis(after_ms as u64);
                            self.timers.push(Reverse((when, self.timer_seq)));
                            self.timer_actions.insert(
                                self.timer_seq,
                                Timer::Computed {
                                    child: ch,
                                    parent: id,
                                    after_ms,
                                },
                            );
                        }
                        Discovery::Parsed { .. }
                            if self.cfg.archive_fallback
                                && !self.discovered_archive.contains(&ch) =>
                        {
                            let url = ar.objects[ch].url.clone();
                            if let Some(k) = normalize(&url) {
                                if !self.by_url.contains_key(&k) {
                                    self.missed_by_parser.push(k);
                                }
                            }
                            self.discover_archive_child(
                                ch,
                                Initiator::ArchiveFallback { parent: id },
                                at,
                            );
                        }
                        _ => {}
                    }
                }
            }
        } else if (300..400).contains(&status) {
            if let Some(u) = location.and_then(|l| base.join(&l)) {
                self.discover(
                    u,
                    kind,
                    Initiator::Redirect { parent: id },
                    Blocking::None,
                    at,
                );
            }
        }
    }

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
    }

    pub(super) fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some(Reverse((t, seq))) = self.timers.peek().copied() {
            if t > now {
                break;
            }
            self.timers.pop();
            if let Some(Timer::Computed {
                child,
                parent,
                after_ms,
            }) = self.timer_actions.remove(&seq)
            {
                self.discover_archive_child(child, Initiator::Script { parent, after_ms }, t);
            }
        }
    }

    pub(super) fn check_milestones(&mut self) {
        let now = Instant::now();
        if self.dcl.is_none() {
            let root = &self.reqs[&self.root];
            if let Some(root_end) = root.end {
                // The last classic script's offset: style sheets before it block too.
                let last_script = self
                    .dcl_refs
                    .iter()
                    .filter(|(id, _)| {
                        matches!(
                            self.reqs[id].blocking,
                            Blocking::SyncScript | Blocking::DeferScript
                        )
                    })
                    .map(|(_, off)| *off)
                    .max();
                let mut t = root_end;
                let mut waiting = false;
                for (id, off) in &self.dcl_refs {
                    let r = &self.reqs[id];
                    let blocks = match r.blocking {
                        Blocking::SyncScript | Blocking::DeferScript => true,
                        Blocking::Stylesheet => last_script.is_some_and(|l| *off < l),
                        _ => false,
                    };
                    if blocks {
                        match r.end {
                            Some(e) => t = t.max(e),
                            None => waiting = true,
                        }
                    }
                }
                if !waiting {
                    self.dcl = Some(t);
                }
            }
        }
        if let Some(dcl) = self.dcl {
            if self.onload.is_none() && self.outstanding == 0 && self.timers.is_empty() {
                let last = self
                    .reqs
                    .values()
                    .filter_map(|r| r.end)
                    .max()
                    .unwrap_or(now);
                self.onload = Some(last.max(dcl));
            }
        }
    }

    fn base_of(&self, parent: ReqId) -> Option<Url> {
        self.bases.get(&parent).cloned()
    }

    pub(super) fn finish(
        self,
        started: SystemTime,
        start: Instant,
        timed_out: bool,
        dns_cost: Duration,
    ) -> LoadResult {
        let mut reqs: Vec<Req> = self.reqs.into_values().collect();
        reqs.sort_by_key(|r| (r.queued, r.id));
        let fetched: HashSet<&str> = reqs.iter().map(|r| r.url_s.as_str()).collect();
        let mut missing = Vec::new();
        let mut expected = HashSet::new();
        if let Some(ar) = self.archive {
            for &id in &self.page_objects {
                if let Some(k) = normalize(&ar.objects[id].url) {
                    if !fetched.contains(k.as_str()) {
                        missing.push(k.clone());
                    }
                    expected.insert(k);
                }
            }
        }
        let unexpected = if self.page_objects.is_empty() {
            Vec::new()
        } else {
            reqs.iter()
                .filter(|r| !expected.contains(&r.url_s))
                .map(|r| r.url_s.clone())
                .collect()
        };
        LoadResult {
            url: self.cfg.url.clone(),
            protocol: self.driver.name(),
            started,
            start,
            reqs,
            conns: self.conns,
            on_content_load: self.dcl.map(|t| t.saturating_duration_since(start)),
            on_load: self.onload.map(|t| t.saturating_duration_since(start)),
            timed_out,
            missing,
            unexpected,
            missed_by_parser: self.missed_by_parser,
            dns_cost,
            event_loop_lag_max: Duration::ZERO,
        }
    }
}
