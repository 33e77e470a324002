//! The engine's result of a page: its requests and connections, its milestones, what
//! the archive expected and did not get, and the connections carried to the session's
//! next page.

use super::*;

impl Engine<'_> {
    /// The load's record (requests, connections, milestones, what the archive expected).
    pub fn finish(
        self,
        started: SystemTime,
        start: Instant,
        timed_out: bool,
        dns_cost: Duration,
    ) -> LoadResult {
        self.finish_page(started, start, timed_out, dns_cost).0
    }

    /// The page's result, and the connections for the session's next page (open ones
    /// stay open; the result lists every connection of the session so far).
    pub fn finish_page(
        mut self,
        started: SystemTime,
        start: Instant,
        timed_out: bool,
        dns_cost: Duration,
    ) -> (LoadResult, Carry) {
        for p in self.pools.values_mut() {
            p.queue.clear();
        }
        // The next page starts its own account of the connections it inherits: what a
        // connection already closed reported, and the requests each carried, stay with
        // this page (a connection still open reports its counters when it closes, to the
        // page it closes in).
        let carry = Carry {
            conns: self
                .conns
                .iter()
                .cloned()
                .map(|mut c| {
                    c.counters = ConnCounters::default();
                    c.tcp_info = None;
                    c.requests = 0;
                    c
                })
                .collect(),
            pools: std::mem::take(&mut self.pools),
            pool_order: std::mem::take(&mut self.pool_order),
        };
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
        let result = LoadResult {
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
        };
        (result, carry)
    }
}
