//! `speedy bench`: an h2load-like load generator for SPDY/3.1, SPDY/3, HTTP/1.1 and
//! HTTP/2, with warm-up, requests/s, bytes/s, latency percentiles (HDR histogram), errors
//! by kind and JSON output. The connections are `speedy_net::loadgen`'s; this file parses
//! the arguments, runs the workers and prints.

use anyhow::{bail, Context, Result};
use clap::Args;
use hdrhistogram::Histogram;
use spdy::url::Url;
use speedy_net::client::{Client, ClientConfig, ClientRequest, Protocol};
use speedy_net::loadgen::LoadConn;
use speedy_net::tls::Verify;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Arguments of `speedy bench`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples (against the servers of `speedy serve --help`'s examples):\n  \
speedy bench -k https://localhost:8443/a.html -c 100 -m 10 -D 3s --protocol spdy/3.1\n  \
speedy bench -k https://localhost:8443/a.html -c 10 -m 10 -n 2000 --protocol h2 -t 1\n\n\
Flags as h2load's where they overlap: -c, -m, -n, -D (duration), -t (threads). Progress goes \
to stderr once a second. Latency is from sending a request to reading the last byte of its \
response. Status codes of 400 and above count as errors. Header compression is reported for \
SPDY (zlib); HTTP/1.1 has none and the h2 library does not report HPACK sizes.\n\n\
Exit status: 0 no errors, 1 some request failed, 2 bad arguments or no connection."
)]
pub struct BenchArgs {
    /// URL to request (http:// or https://).
    #[arg(value_name = "URL")]
    url: String,
    /// Connections.
    #[arg(short = 'c', long, default_value_t = 10, value_name = "N")]
    connections: usize,
    /// Requests in flight per connection (SPDY, HTTP/2; HTTP/1.1 always 1).
    #[arg(short = 'm', long, default_value_t = 1, value_name = "N")]
    streams: usize,
    /// Total requests (after warm-up), at least 1.
    #[arg(short = 'n', long, value_name = "N", conflicts_with = "duration")]
    requests: Option<u64>,
    /// Measuring time, e.g. `10s`, `500ms` (default 10s unless -n); -D as h2load's.
    #[arg(short = 'D', long, value_name = "DURATION")]
    duration: Option<String>,
    /// The old spelling of -D: refused with a pointer (h2load's -d is a data file).
    #[arg(short = 'd', hide = true, value_name = "DURATION")]
    old_duration: Option<String>,
    /// Warm-up before measuring.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    warmup: String,
    /// spdy (= spdy/3.1), spdy/3, spdy/2, http1 (= http/1.1), h2 (= http2) or h3 (= http3,
    /// over QUIC; https:// only).
    #[arg(long, default_value = "spdy/3.1", value_name = "PROTOCOL")]
    protocol: String,
    /// Worker threads (default: all cores).
    #[arg(short = 't', long, value_name = "N")]
    threads: Option<usize>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Accept any TLS certificate.
    #[arg(short = 'k', long, conflicts_with = "cacert")]
    insecure: bool,
    /// Trust the CA certificates in this PEM file.
    #[arg(long, alias = "ca", value_name = "FILE")]
    cacert: Option<std::path::PathBuf>,
    /// Instead of loading: open N sessions, make one request on each, then hold them idle
    /// for --hold (to measure a server's memory per idle session).
    #[arg(long, value_name = "N")]
    idle: Option<usize>,
    /// How long --idle holds its sessions.
    #[arg(long, default_value = "30s", value_name = "DURATION")]
    hold: String,
}

fn parse_duration(s: &str) -> Result<Duration> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or((s, "s"), |i| (&s[..i], &s[i..]));
    let v: f64 = num.parse().with_context(|| format!("bad duration {s:?}"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" | "" => v,
        "m" => v * 60.0,
        _ => bail!("bad duration unit in {s:?} (ms, s, m)"),
    };
    Ok(Duration::from_secs_f64(secs))
}

#[derive(Default)]
struct Totals {
    done: u64,
    bytes: u64,
    errors: BTreeMap<String, u64>,
    /// Responses by status class (`2xx` … `5xx`), errors with a status included.
    statuses: BTreeMap<String, u64>,
}

struct Shared {
    stop: AtomicBool,
    budget: AtomicI64,
    measure_from: Instant,
    hist: Mutex<Histogram<u64>>,
    totals: Mutex<Totals>,
    /// Measured requests answered and failed so far, for the progress line.
    live_done: AtomicU64,
    live_errors: AtomicU64,
}

/// The status class of a response (`2xx`), or of an `http NNN` error kind.
fn status_class(status: u16) -> String {
    format!("{}xx", status / 100)
}

/// Prints one progress line a second on stderr until `stop`: seconds measured, requests
/// done and failed, and the rate over the last second.
async fn progress(shared: Arc<Shared>, total: Option<Duration>) {
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
        let errors = shared.live_errors.load(Ordering::Relaxed);
        let secs = shared.measure_from.elapsed().as_secs_f64();
        let of = total.map_or(String::new(), |t| format!(" of {:.0}", t.as_secs_f64()));
        eprintln!(
            "progress: {secs:.0}{of} s, {done} done, {errors} errors, {} req/s",
            done - last
        );
        last = done;
    }
}

/// Header bytes summed over the SPDY sessions: (raw sent, wire sent, raw received, wire
/// received); `None` when no connection reports them.
async fn header_bytes(conns: &[Arc<LoadConn>]) -> Option<[u64; 4]> {
    let mut sum: Option<[u64; 4]> = None;
    for c in conns {
        if let Some(s) = c.header_bytes().await {
            let t = sum.get_or_insert([0; 4]);
            t[0] += s.header_bytes_raw_sent;
            t[1] += s.header_bytes_compressed_sent;
            t[2] += s.header_bytes_raw_received;
            t[3] += s.header_bytes_compressed_received;
        }
    }
    sum
}

/// The most connections `-c` opens (and `--idle` holds, per run).
const MAX_CONNECTIONS: usize = 100_000;

/// `12.3 KB for 98.7 KB raw (87.5% saved)`.
fn saving(wire: u64, raw: u64) -> String {
    let pct = if raw == 0 {
        0.0
    } else {
        100.0 * (1.0 - wire as f64 / raw as f64)
    };
    format!(
        "{:.1} KB for {:.1} KB raw ({pct:.1}% saved)",
        wire as f64 / 1e3,
        raw as f64 / 1e3
    )
}

/// Keeps glibc's malloc from giving freed memory back and taking it again on every large
/// read: a generator reading 100 MiB bodies otherwise spends a fifth of its time in page
/// faults and zeroing (perf), which caps the MB/s it can measure. Freed memory then stays
/// in the process until it ends (a bench is short-lived).
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
    }
}

/// Runs the benchmark; returns whether it ran without errors.
pub fn run(a: BenchArgs) -> Result<bool> {
    if a.threads == Some(0) {
        bail!("-t 0: at least 1 thread");
    }
    keep_freed_memory();
    let threads = a
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    // One thread: a current-thread runtime, no cross-thread wake-ups.
    let rt = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()?
    };
    rt.block_on(bench(a))
}

async fn bench(a: BenchArgs) -> Result<bool> {
    let url: Url = a.url.parse()?;
    if a.connections == 0 || a.streams == 0 {
        bail!("-c and -m must be at least 1");
    }
    if a.connections > MAX_CONNECTIONS {
        bail!(
            "-c {}: at most {MAX_CONNECTIONS} connections (one client address has ~28,000 ports to each server port)",
            a.connections
        );
    }
    if a.idle == Some(0) {
        bail!("--idle 0: at least 1 session");
    }
    if let Some(d) = &a.old_duration {
        bail!("-d {d}: the duration is -D {d} (as h2load's; h2load's -d names a data file)");
    }
    if a.requests == Some(0) {
        bail!("-n 0: nothing to measure (give at least 1 request, or -D for a duration)");
    }
    let warmup = parse_duration(&a.warmup)?;
    let duration = match (&a.duration, a.requests) {
        (Some(d), _) => match parse_duration(d)? {
            z if z.is_zero() => bail!("-D {d}: a duration above 0"),
            d => Some(d),
        },
        (None, None) => Some(Duration::from_secs(10)),
        (None, Some(_)) => None,
    };
    let proto = Protocol::parse(&a.protocol).map_err(|e| anyhow::anyhow!("--protocol: {e}"))?;
    let verify = if a.insecure {
        Verify::Insecure
    } else if let Some(c) = &a.cacert {
        speedy_net::tls::ca_certs(c).map_err(|e| anyhow::anyhow!("--cacert: {e}"))?;
        Verify::CaFile(c.clone())
    } else {
        Verify::System
    };
    // HTTP/1.1 has one request in flight per connection.
    let per_conn = if proto == Protocol::Http1 {
        1
    } else {
        a.streams
    };
    if let Some(n) = a.idle {
        let hold = parse_duration(&a.hold)?;
        return hold_idle(n, &url, Some(proto), hold, verify).await;
    }
    let mut conns = Vec::with_capacity(a.connections);
    for _ in 0..a.connections {
        let c = LoadConn::connect(&url, proto, &verify)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        conns.push(Arc::new(c));
    }
    let start = Instant::now();
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        budget: AtomicI64::new(a.requests.map_or(i64::MAX, |n| n as i64)),
        measure_from: start + warmup,
        hist: Mutex::new(Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid bounds")),
        totals: Mutex::new(Totals::default()),
        live_done: AtomicU64::new(0),
        live_errors: AtomicU64::new(0),
    });
    let ticker = tokio::spawn(progress(shared.clone(), duration));
    let mut tasks = Vec::new();
    for c in &conns {
        for _ in 0..per_conn {
            let (c, shared) = (c.clone(), shared.clone());
            tasks.push(tokio::spawn(async move { worker(c, shared).await }));
        }
    }
    if let Some(d) = duration {
        tokio::time::sleep(warmup + d).await;
        shared.stop.store(true, Ordering::SeqCst);
    }
    for t in tasks {
        let _ = t.await;
    }
    shared.stop.store(true, Ordering::SeqCst);
    ticker.abort();
    let headers = header_bytes(&conns).await;
    let measured = match duration {
        Some(d) => d.as_secs_f64(),
        None => start
            .elapsed()
            .saturating_sub(warmup)
            .as_secs_f64()
            .max(1e-9),
    };
    let hist = shared.hist.lock().expect("lock").clone();
    let totals = std::mem::take(&mut *shared.totals.lock().expect("lock"));
    let errors: u64 = totals.errors.values().sum();
    let q = |p: f64| hist.value_at_quantile(p) as f64 / 1000.0;
    let report = serde_json::json!({
        "url": a.url, "protocol": a.protocol, "connections": a.connections, "streams_per_connection": per_conn,
        "threads": a.threads, "warmup_s": warmup.as_secs_f64(), "measured_s": measured,
        "requests": totals.done, "requests_per_s": totals.done as f64 / measured,
        "bytes": totals.bytes, "bytes_per_s": totals.bytes as f64 / measured,
        "latency_ms": {"p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "p99_9": q(0.999), "max": hist.max() as f64 / 1000.0, "mean": hist.mean() / 1000.0},
        "errors": errors, "errors_by_kind": totals.errors, "status_codes": totals.statuses,
        "header_bytes": headers.map(|h| serde_json::json!({"raw_sent": h[0], "wire_sent": h[1], "raw_received": h[2], "wire_received": h[3]})),
    });
    if a.json {
        println!("{report}");
    } else {
        println!("speedy bench {} ({}, {} connections × {} streams, {:.1} s measured after {:.1} s warm-up)", a.url, a.protocol, a.connections, per_conn, measured, warmup.as_secs_f64());
        println!(
            "requests: {} done, {} errors, {:.0} req/s, {:.2} MB/s",
            totals.done,
            errors,
            totals.done as f64 / measured,
            totals.bytes as f64 / measured / 1e6
        );
        println!(
            "latency (ms): p50 {:.3}  p90 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}",
            q(0.5),
            q(0.9),
            q(0.99),
            q(0.999),
            hist.max() as f64 / 1000.0
        );
        let classes: Vec<String> = ["2xx", "3xx", "4xx", "5xx"]
            .iter()
            .map(|c| format!("{} {c}", totals.statuses.get(*c).unwrap_or(&0)))
            .collect();
        println!("status codes: {}", classes.join(", "));
        for (k, v) in &totals.errors {
            println!("errors: {v} × {k}");
        }
        match headers {
            Some(h) => println!(
                "header compression (SPDY zlib, whole run): sent {}; received {}",
                saving(h[1], h[0]),
                saving(h[3], h[2])
            ),
            None => println!(
                "header compression: {}",
                if proto == Protocol::Http1 {
                    "none (HTTP/1.1)"
                } else {
                    "not reported over h2 (the h2 library does not expose HPACK sizes)"
                }
            ),
        }
    }
    Ok(errors == 0)
}

/// Opens `n` sessions with the [`Client`], makes one request on each, then holds them
/// idle for `hold`.
async fn hold_idle(
    n: usize,
    url: &Url,
    proto: Option<Protocol>,
    hold: Duration,
    verify: Verify,
) -> Result<bool> {
    use std::io::Write;
    // A session the server never accepts (its connection cap) fails after the default
    // read timeout instead of holding the command forever; held sessions make no request,
    // so no timer runs while they idle.
    let cfg = ClientConfig {
        protocol: proto,
        verify,
        http1_connections: 1,
        ..Default::default()
    };
    let mut clients = Vec::with_capacity(n);
    let mut failed = 0usize;
    // Open in batches so the listen backlog is not overrun.
    for chunk in (0..n).collect::<Vec<_>>().chunks(200) {
        let mut tasks = Vec::new();
        for _ in chunk {
            let (cfg, url) = (cfg.clone(), url.clone());
            tasks.push(tokio::spawn(async move {
                let c = Client::connect(&url.scheme, url.host_bare(), url.port_or_default(), &cfg)
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
                Ok::<Client, String>(c)
            }));
        }
        for t in tasks {
            match t.await {
                Ok(Ok(c)) => clients.push(c),
                _ => failed += 1,
            }
        }
    }
    println!(
        "holding {} idle sessions ({failed} failed) for {:.0} s",
        clients.len(),
        hold.as_secs_f64()
    );
    std::io::stdout().flush()?;
    tokio::time::sleep(hold).await;
    Ok(failed == 0)
}

/// Repeats GETs on one connection until stopped or out of budget, recording what was
/// measured after the warm-up.
async fn worker(c: Arc<LoadConn>, shared: Arc<Shared>) {
    let mut hist = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).expect("valid bounds");
    let (mut done, mut bytes) = (0u64, 0u64);
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    let mut statuses: BTreeMap<String, u64> = BTreeMap::new();
    while !shared.stop.load(Ordering::Relaxed) {
        let t0 = Instant::now();
        let measuring = t0 >= shared.measure_from;
        if measuring && shared.budget.fetch_sub(1, Ordering::Relaxed) <= 0 {
            break;
        }
        let r = c.get().await;
        if !measuring {
            continue;
        }
        match r {
            Ok((status, n)) => {
                let _ = hist.record((t0.elapsed().as_micros() as u64).max(1));
                done += 1;
                bytes += n;
                *statuses.entry(status_class(status)).or_default() += 1;
                shared.live_done.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                if let Some(s) = e.strip_prefix("http ").and_then(|s| s.parse().ok()) {
                    *statuses.entry(status_class(s)).or_default() += 1;
                }
                shared.live_errors.fetch_add(1, Ordering::Relaxed);
                *errors.entry(e).or_default() += 1;
                if errors.values().sum::<u64>() > 1000 {
                    break; // the target is down; stop hammering it
                }
            }
        }
    }
    let _ = shared.hist.lock().expect("lock").add(&hist);
    let mut t = shared.totals.lock().expect("lock");
    t.done += done;
    t.bytes += bytes;
    for (k, v) in errors {
        *t.errors.entry(k).or_default() += v;
    }
    for (k, v) in statuses {
        *t.statuses.entry(k).or_default() += v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert!(parse_duration("5h").is_err());
    }
}
