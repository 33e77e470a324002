//! The benchmark engine of `speedy bench` (h2load-like): [`run`] opens the
//! [`loadgen`](crate::loadgen) connections of a [`BenchPlan`], keeps the asked-for
//! requests in flight on each until the duration or the request budget is spent, and
//! returns [`BenchResults`]: requests and bytes measured after the warm-up, latency
//! percentiles (an HDR histogram, from sending a request to reading the last byte of its
//! response), errors by kind and responses by status class. [`open_idle`] instead opens
//! sessions that each make one request and then stay idle (a server's memory per idle
//! session). Printing belongs to the caller; progress is reported through a callback.

use crate::client::{Client, ClientConfig, ClientError, ClientRequest};
use crate::loadgen::{LoadConn, Pace};
use crate::protocol::Protocol;
use crate::transport::tls::Verify;
use hdrhistogram::Histogram;
use spdy::url::Url;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchPlan {
    /// The URL every request GETs.
    pub url: Url,
    /// The protocol of every connection.
    pub protocol: Protocol,
    /// How the connections check the server's certificate.
    pub verify: Verify,
    /// Connections opened (each before the warm-up starts).
    pub connections: usize,
    /// Requests kept in flight on each connection (1 over HTTP/1.1).
    pub streams_per_connection: usize,
    /// Requests measured in all (after the warm-up); `None`: as many as `duration` allows.
    pub requests: Option<u64>,
    /// Measuring time after the warm-up; `None`: until `requests` are done.
    pub duration: Option<Duration>,
    /// Time spent requesting before measuring starts.
    pub warmup: Duration,
}

/// Where a run is, once a second after the warm-up.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Seconds measured so far.
    pub secs: f64,
    /// The measuring time planned, if any.
    pub of: Option<Duration>,
    /// Measured requests answered so far.
    pub done: u64,
    /// Measured requests failed so far.
    pub errors: u64,
    /// Requests answered during the last second.
    pub per_second: u64,
}

/// Latency percentiles, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
    /// The slowest request.
    pub max: f64,
    /// The mean.
    pub mean: f64,
}

/// Header bytes summed over a run's SPDY sessions, raw and as sent on the wire (zlib).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeaderBytes {
    /// Header bytes sent, before compression.
    pub raw_sent: u64,
    /// Header bytes sent, compressed.
    pub wire_sent: u64,
    /// Header bytes received, after decompression.
    pub raw_received: u64,
    /// Header bytes received, compressed.
    pub wire_received: u64,
}

/// What a run measured (after its warm-up).
#[derive(Clone, Debug)]
pub struct BenchResults {
    /// Seconds measured: the planned duration, or the time the requests took.
    pub measured_s: f64,
    /// Requests answered (status below 400).
    pub requests: u64,
    /// Body bytes of the answered requests.
    pub bytes: u64,
    /// Latency of the answered requests.
    pub latency_ms: Latency,
    /// Failed requests by kind (`http 404`, `stream reset`, ...).
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Responses by status class (`2xx` … `5xx`), errors with a status included.
    pub status_codes: BTreeMap<String, u64>,
    /// SPDY's header compression over the whole run; `None` over HTTP/1.1 and h2.
    pub header_bytes: Option<HeaderBytes>,
}

impl BenchResults {
    /// Failed requests in all.
    pub fn errors(&self) -> u64 {
        self.errors_by_kind.values().sum()
    }

    /// Requests answered per second measured.
    pub fn requests_per_s(&self) -> f64 {
        self.requests as f64 / self.measured_s
    }

    /// Body bytes per second measured.
    pub fn bytes_per_s(&self) -> f64 {
        self.bytes as f64 / self.measured_s
    }
}

/// A connection stops after this many errors per request it keeps in flight: the target
/// is down.
const MAX_STREAM_ERRORS: u64 = 1000;

/// Counts of measured requests, summed over the connections.
#[derive(Default)]
struct Totals {
    done: u64,
    bytes: u64,
    errors: BTreeMap<String, u64>,
    /// Responses by status class: index 2 counts 2xx (a counter, not a map keyed by a
    /// formatted string: this is counted once a request).
    statuses: [u64; 10],
}

impl Totals {
    /// Adds another connection's counts.
    fn add(&mut self, other: Totals) {
        self.done += other.done;
        self.bytes += other.bytes;
        for (k, v) in other.errors {
            *self.errors.entry(k).or_default() += v;
        }
        for (mine, theirs) in self.statuses.iter_mut().zip(other.statuses) {
            *mine += theirs;
        }
    }

    /// Counts a response of `status`.
    fn status(&mut self, status: u16) {
        self.statuses[usize::from(status / 100).min(9)] += 1;
    }

    /// The status classes seen (`2xx`) and their counts.
    fn status_codes(&self) -> BTreeMap<String, u64> {
        (0..10)
            .filter(|&i| self.statuses[i] > 0)
            .map(|i| (format!("{i}xx"), self.statuses[i]))
            .collect()
    }
}

/// What the connections of a run share.
struct Shared {
    stop: AtomicBool,
    budget: AtomicI64,
    measure_from: Instant,
    /// Measured requests answered and failed so far, for the progress reports.
    live_done: AtomicU64,
    live_errors: AtomicU64,
}

/// An empty latency histogram: 1 µs to 10 minutes, 3 significant digits.
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid bounds")
}

/// Runs `plan`: opens its connections (the first that fails ends the run), requests
/// through the warm-up and the measuring, calls `progress` once a second while
/// measuring, and returns what was measured.
pub async fn run(
    plan: &BenchPlan,
    progress: impl Fn(Progress) + Send + 'static,
) -> Result<BenchResults, ClientError> {
    let mut conns = Vec::with_capacity(plan.connections);
    for _ in 0..plan.connections {
        conns.push(LoadConn::connect(&plan.url, plan.protocol, &plan.verify).await?);
    }
    let start = Instant::now();
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        budget: AtomicI64::new(plan.requests.map_or(i64::MAX, |n| n as i64)),
        measure_from: start + plan.warmup,
        live_done: AtomicU64::new(0),
        live_errors: AtomicU64::new(0),
    });
    let ticker = tokio::spawn(report_progress(shared.clone(), plan.duration, progress));
    // One task a connection, its requests paced by its own tally (one latency histogram
    // a connection: one a stream, 100 of ~300 KB each at -c 10 -m 10, spent 6.5% of the
    // generator's CPU in cache misses recording into them).
    let in_flight = plan.streams_per_connection;
    let tasks: Vec<_> = conns
        .into_iter()
        .map(|c| {
            let mut tally = Tally::new(shared.clone(), in_flight);
            tokio::spawn(async move {
                let stats = c.drive(in_flight, &mut tally).await;
                (tally, stats)
            })
        })
        .collect();
    if let Some(d) = plan.duration {
        tokio::time::sleep(plan.warmup + d).await;
        shared.stop.store(true, Ordering::SeqCst);
    }
    let mut hist = histogram();
    let mut totals = Totals::default();
    let mut header_bytes: Option<HeaderBytes> = None;
    for t in tasks {
        let Ok((tally, stats)) = t.await else {
            continue;
        };
        let _ = hist.add(&tally.hist);
        totals.add(tally.mine);
        if let Some(s) = stats {
            let h = header_bytes.get_or_insert_with(HeaderBytes::default);
            h.raw_sent += s.header_bytes_raw_sent;
            h.wire_sent += s.header_bytes_compressed_sent;
            h.raw_received += s.header_bytes_raw_received;
            h.wire_received += s.header_bytes_compressed_received;
        }
    }
    shared.stop.store(true, Ordering::SeqCst);
    ticker.abort();
    let measured_s = match plan.duration {
        Some(d) => d.as_secs_f64(),
        None => start
            .elapsed()
            .saturating_sub(plan.warmup)
            .as_secs_f64()
            .max(1e-9),
    };
    let status_codes = totals.status_codes();
    Ok(BenchResults {
        measured_s,
        requests: totals.done,
        bytes: totals.bytes,
        latency_ms: latency(&hist),
        errors_by_kind: totals.errors,
        status_codes,
        header_bytes,
    })
}

/// The percentiles of a histogram of microseconds, in milliseconds.
fn latency(hist: &Histogram<u64>) -> Latency {
    let q = |p: f64| hist.value_at_quantile(p) as f64 / 1000.0;
    Latency {
        p50: q(0.5),
        p90: q(0.9),
        p99: q(0.99),
        p99_9: q(0.999),
        max: hist.max() as f64 / 1000.0,
        mean: hist.mean() / 1000.0,
    }
}

/// Calls `progress` once a second after the warm-up until the run stops.
async fn report_progress(shared: Arc<Shared>, of: Option<Duration>, progress: impl Fn(Progress)) {
    let mut last = 0u64;
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::from_std(shared.measure_from) + Duration::from_secs(1),
        Duration::from_secs(1),
    );
    loop {
        tick.tick().await;
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        let done = shared.live_done.load(Ordering::Relaxed);
        progress(Progress {
            secs: shared.measure_from.elapsed().as_secs_f64(),
            of,
            done,
            errors: shared.live_errors.load(Ordering::Relaxed),
            per_second: done - last,
        });
        last = done;
    }
}

/// One connection's pacing and counts: requests start while the run is on and the
/// budget lasts; those started after the warm-up are counted here, merged at the end.
struct Tally {
    shared: Arc<Shared>,
    hist: Histogram<u64>,
    mine: Totals,
    failed: u64,
    /// Errors after which the connection stops: its target is down.
    max_errors: u64,
    /// The clock as the last request ended well, taken by the next start: a closed loop
    /// starts the next request as it times the last one's end (in the same turn of its
    /// loop), one clock read for both.
    ended_at: Option<Instant>,
}

impl Tally {
    fn new(shared: Arc<Shared>, in_flight: usize) -> Tally {
        Tally {
            shared,
            hist: histogram(),
            mine: Totals::default(),
            failed: 0,
            max_errors: MAX_STREAM_ERRORS * in_flight.max(1) as u64,
            ended_at: None,
        }
    }
}

impl Pace for Tally {
    fn start(&mut self) -> Option<Instant> {
        if self.shared.stop.load(Ordering::Relaxed) || self.failed > self.max_errors {
            return None;
        }
        let t0 = self.ended_at.take().unwrap_or_else(Instant::now);
        if t0 >= self.shared.measure_from && self.shared.budget.fetch_sub(1, Ordering::Relaxed) <= 0
        {
            return None;
        }
        Some(t0)
    }

    fn done(&mut self, started: Instant, result: Result<(u16, u64), String>) {
        let now = Instant::now();
        // After a failure the next start may wait for a new connection: no reuse then.
        self.ended_at = result.is_ok().then_some(now);
        if started < self.shared.measure_from {
            return;
        }
        match result {
            Ok((status, n)) => {
                let us = (now.duration_since(started).as_micros() as u64).max(1);
                let _ = self.hist.record(us);
                self.mine.done += 1;
                self.mine.bytes += n;
                self.mine.status(status);
                self.shared.live_done.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                if let Some(s) = e.strip_prefix("http ").and_then(|s| s.parse().ok()) {
                    self.mine.status(s);
                }
                self.shared.live_errors.fetch_add(1, Ordering::Relaxed);
                *self.mine.errors.entry(e).or_default() += 1;
                self.failed += 1;
            }
        }
    }
}

/// Sessions opened by [`open_idle`], held open while this lives.
pub struct IdleSessions {
    /// The sessions that made their request.
    pub held: Vec<Client>,
    /// Sessions that failed to open or to make their request.
    pub failed: usize,
}

/// Opens `n` sessions with the [`Client`] (in batches of 200, so a listen backlog is not
/// overrun), each making one request for `url` and reading its body; they then stay
/// idle, making no request, for as long as the result is kept.
pub async fn open_idle(
    n: usize,
    url: &Url,
    protocol: Option<Protocol>,
    verify: Verify,
) -> IdleSessions {
    // A session the server never accepts (its connection cap) fails after the default
    // read timeout instead of holding the caller forever; held sessions make no request,
    // so no timer runs while they idle.
    let cfg = ClientConfig {
        protocol,
        verify,
        http1_connections: 1,
        ..Default::default()
    };
    let mut out = IdleSessions {
        held: Vec::with_capacity(n),
        failed: 0,
    };
    for chunk in (0..n).collect::<Vec<_>>().chunks(200) {
        let mut tasks = Vec::new();
        for _ in chunk {
            let (cfg, url) = (cfg.clone(), url.clone());
            tasks.push(tokio::spawn(async move { one_request(&url, &cfg).await }));
        }
        for t in tasks {
            match t.await {
                Ok(Ok(c)) => out.held.push(c),
                _ => out.failed += 1,
            }
        }
    }
    out
}

/// Connects, GETs `url` once and reads the body; returns the connected client.
async fn one_request(url: &Url, cfg: &ClientConfig) -> Result<Client, String> {
    let c = Client::connect(&url.scheme, url.host_bare(), url.port_or_default(), cfg)
        .await
        .map_err(|e| e.to_string())?;
    let r = c
        .request(ClientRequest::get(&url.path))
        .await
        .map_err(|e| e.to_string())?;
    r.body
        .collect(usize::MAX)
        .await
        .map_err(|e| e.to_string())?;
    Ok(c)
}

/// Keeps glibc's malloc from giving freed memory back and taking it again on every large
/// read: a generator reading 100 MiB bodies otherwise spends a fifth of its time in page
/// faults and zeroing (perf), which caps the MB/s it can measure. Freed memory then stays
/// in the process until it ends (a benchmark is short-lived). Call it before any thread
/// starts.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_is_in_milliseconds_and_totals_add_up() {
        let mut h = histogram();
        for us in [1_000u64, 2_000, 3_000, 4_000] {
            h.record(us).unwrap();
        }
        let l = latency(&h);
        assert!((l.p50 - 2.0).abs() < 0.01, "{l:?}");
        assert!((l.max - 4.0).abs() < 0.01, "{l:?}");
        assert!((l.mean - 2.5).abs() < 0.01, "{l:?}");
        let mut t = Totals::default();
        let mut other = Totals {
            done: 2,
            bytes: 10,
            ..Totals::default()
        };
        other.errors.insert("http 404".into(), 1);
        other.status(404);
        other.status(200);
        t.add(other);
        assert_eq!((t.done, t.bytes), (2, 10));
        let codes = t.status_codes();
        assert_eq!(codes.get("4xx"), Some(&1));
        assert_eq!(codes.get("2xx"), Some(&1));
        assert_eq!(codes.len(), 2);
    }
}
