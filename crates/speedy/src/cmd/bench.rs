//! `speedy bench`: an h2load-like load generator for SPDY/3.1, SPDY/3, HTTP/1.1 and
//! HTTP/2, with warm-up, requests/s, bytes/s, latency percentiles (HDR histogram), errors
//! by kind and JSON output. The engine is `speedy_net::bench` (on `speedy_net::loadgen`'s
//! connections); this file parses the arguments, runs it and prints.

use anyhow::{bail, Context, Result};
use clap::Args;
use spdy::url::Url;
use speedy_net::bench::{BenchPlan, BenchResults, Progress};
use speedy_net::client::Protocol;
use speedy_net::tls::Verify;
use std::time::Duration;

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

/// Runs the benchmark; returns whether it ran without errors.
pub fn run(a: BenchArgs) -> Result<bool> {
    if a.threads == Some(0) {
        bail!("-t 0: at least 1 thread");
    }
    speedy_net::bench::keep_freed_memory();
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

/// What the arguments ask for: a measured run, or idle sessions held for a while.
enum Task {
    Measure(BenchPlan),
    Idle {
        n: usize,
        url: Url,
        protocol: Protocol,
        verify: Verify,
        hold: Duration,
    },
}

/// Checks the arguments and turns them into a [`Task`].
fn task(a: &BenchArgs) -> Result<Task> {
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
    let protocol = Protocol::parse(&a.protocol).map_err(|e| anyhow::anyhow!("--protocol: {e}"))?;
    let verify = if a.insecure {
        Verify::Insecure
    } else if let Some(c) = &a.cacert {
        speedy_net::tls::ca_certs(c).map_err(|e| anyhow::anyhow!("--cacert: {e}"))?;
        Verify::CaFile(c.clone())
    } else {
        Verify::System
    };
    if let Some(n) = a.idle {
        let hold = parse_duration(&a.hold)?;
        return Ok(Task::Idle {
            n,
            url,
            protocol,
            verify,
            hold,
        });
    }
    Ok(Task::Measure(BenchPlan {
        url,
        protocol,
        verify,
        connections: a.connections,
        // HTTP/1.1 has one request in flight per connection.
        streams_per_connection: if protocol == Protocol::Http1 {
            1
        } else {
            a.streams
        },
        requests: a.requests,
        duration,
        warmup,
    }))
}

/// The progress line on stderr: seconds measured, requests done and failed, and the
/// rate over the last second.
fn print_progress(p: Progress) {
    let of =
        p.of.map_or(String::new(), |t| format!(" of {:.0}", t.as_secs_f64()));
    eprintln!(
        "progress: {:.0}{of} s, {} done, {} errors, {} req/s",
        p.secs, p.done, p.errors, p.per_second
    );
}

/// Measures (or holds idle sessions) as `a` asks and prints the report; returns whether
/// no request failed.
async fn bench(a: BenchArgs) -> Result<bool> {
    let plan = match task(&a)? {
        Task::Measure(plan) => plan,
        Task::Idle {
            n,
            url,
            protocol,
            verify,
            hold,
        } => return hold_idle(n, &url, protocol, hold, verify).await,
    };
    let r = speedy_net::bench::run(&plan, print_progress)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if a.json {
        println!("{}", json_report(&a, &plan, &r));
    } else {
        print_text(&a, &plan, &r);
    }
    Ok(r.errors() == 0)
}

/// The `--json` object.
fn json_report(a: &BenchArgs, plan: &BenchPlan, r: &BenchResults) -> serde_json::Value {
    let l = &r.latency_ms;
    serde_json::json!({
        "url": a.url, "protocol": a.protocol, "connections": a.connections, "streams_per_connection": plan.streams_per_connection,
        "threads": a.threads, "warmup_s": plan.warmup.as_secs_f64(), "measured_s": r.measured_s,
        "requests": r.requests, "requests_per_s": r.requests_per_s(),
        "bytes": r.bytes, "bytes_per_s": r.bytes_per_s(),
        "latency_ms": {"p50": l.p50, "p90": l.p90, "p99": l.p99, "p99_9": l.p99_9, "max": l.max, "mean": l.mean},
        "errors": r.errors(), "errors_by_kind": r.errors_by_kind, "status_codes": r.status_codes,
        "header_bytes": r.header_bytes.map(|h| serde_json::json!({"raw_sent": h.raw_sent, "wire_sent": h.wire_sent, "raw_received": h.raw_received, "wire_received": h.wire_received})),
    })
}

/// The text report.
fn print_text(a: &BenchArgs, plan: &BenchPlan, r: &BenchResults) {
    println!(
        "speedy bench {} ({}, {} connections × {} streams, {:.1} s measured after {:.1} s warm-up)",
        a.url,
        a.protocol,
        a.connections,
        plan.streams_per_connection,
        r.measured_s,
        plan.warmup.as_secs_f64()
    );
    println!(
        "requests: {} done, {} errors, {:.0} req/s, {:.2} MB/s",
        r.requests,
        r.errors(),
        r.requests_per_s(),
        r.bytes_per_s() / 1e6
    );
    let l = &r.latency_ms;
    println!(
        "latency (ms): p50 {:.3}  p90 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}",
        l.p50, l.p90, l.p99, l.p99_9, l.max
    );
    let classes: Vec<String> = ["2xx", "3xx", "4xx", "5xx"]
        .iter()
        .map(|c| format!("{} {c}", r.status_codes.get(*c).unwrap_or(&0)))
        .collect();
    println!("status codes: {}", classes.join(", "));
    for (k, v) in &r.errors_by_kind {
        println!("errors: {v} × {k}");
    }
    match r.header_bytes {
        Some(h) => println!(
            "header compression (SPDY zlib, whole run): sent {}; received {}",
            saving(h.wire_sent, h.raw_sent),
            saving(h.wire_received, h.raw_received)
        ),
        None => println!(
            "header compression: {}",
            if plan.protocol == Protocol::Http1 {
                "none (HTTP/1.1)"
            } else {
                "not reported over h2 (the h2 library does not expose HPACK sizes)"
            }
        ),
    }
}

/// Opens `n` sessions, makes one request on each, then holds them idle for `hold`.
async fn hold_idle(
    n: usize,
    url: &Url,
    protocol: Protocol,
    hold: Duration,
    verify: Verify,
) -> Result<bool> {
    use std::io::Write;
    let sessions = speedy_net::bench::open_idle(n, url, Some(protocol), verify).await;
    println!(
        "holding {} idle sessions ({} failed) for {:.0} s",
        sessions.held.len(),
        sessions.failed,
        hold.as_secs_f64()
    );
    std::io::stdout().flush()?;
    tokio::time::sleep(hold).await;
    Ok(sessions.failed == 0)
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
