//! `speedy bench`: an h2load-like load generator for SPDY/3.1, SPDY/3, HTTP/1.1 and
//! HTTP/2, with warm-up, requests/s, bytes/s, latency percentiles (HDR histogram), errors
//! by kind and JSON output.

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use clap::Args;
use hdrhistogram::Histogram;
use spdy::url::Url;
use speedy_net::client::{Client, ClientConfig, ClientRequest, Protocol};
use speedy_net::tls::Verify;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Arguments of `speedy bench`.
#[derive(Args, Debug)]
#[command(
    after_help = "Example: speedy bench http://127.0.0.1:8080/a.html -c 100 -m 10 -d 10s --protocol spdy/3.1\n\
Latency is from sending a request to reading the last byte of its response."
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
    /// Measuring time, e.g. `10s`, `500ms` (default 10s unless -n).
    #[arg(short = 'd', long, value_name = "DURATION")]
    duration: Option<String>,
    /// Warm-up before measuring.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    warmup: String,
    /// spdy (= spdy/3.1), spdy/3, spdy/2, http1 (= http/1.1) or h2 (= http2).
    #[arg(long, default_value = "spdy/3.1", value_name = "PROTOCOL")]
    protocol: String,
    /// Worker threads (default: all cores).
    #[arg(long, value_name = "N")]
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
}

struct Shared {
    stop: AtomicBool,
    budget: AtomicI64,
    measure_from: Instant,
    hist: Mutex<Histogram<u64>>,
    totals: Mutex<Totals>,
}

enum Conn {
    Client(Client),
    H2(h2::client::SendRequest<Bytes>),
    /// A lean HTTP/1.1 keep-alive connection (one request in flight, as h2load does).
    H1(tokio::sync::Mutex<H1>),
}

struct H1 {
    io: speedy_net::io::BoxIo,
    buf: bytes::BytesMut,
    request: Vec<u8>,
}

impl H1 {
    async fn connect(
        scheme: &str,
        host: &str,
        port: u16,
        path: &str,
        verify: &Verify,
    ) -> Result<H1> {
        let tcp = tokio::net::TcpStream::connect((host, port))
            .await
            .with_context(|| format!("{host}:{port}"))?;
        tcp.set_nodelay(true)?;
        let io: speedy_net::io::BoxIo = if scheme == "https" {
            let tls = speedy_net::tls::client_config(verify, &["http/1.1"])
                .map_err(anyhow::Error::msg)?;
            Box::new(
                tokio_rustls::TlsConnector::from(tls)
                    .connect(rustls_name(host)?, tcp)
                    .await?,
            )
        } else {
            Box::new(tcp)
        };
        let authority = if port == 80 || port == 443 {
            host.to_string()
        } else {
            format!("{host}:{port}")
        };
        let request = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: speedy-bench\r\nAccept: */*\r\n\r\n").into_bytes();
        Ok(H1 {
            io,
            buf: bytes::BytesMut::with_capacity(16 * 1024),
            request,
        })
    }

    /// Sends the request and reads one response (Content-Length bodies only).
    async fn roundtrip(&mut self) -> Result<u64, String> {
        use bytes::Buf;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        self.io
            .write_all(&self.request)
            .await
            .map_err(|_| "connection closed".to_string())?;
        let (status, head_len, body_len) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut resp = httparse::Response::new(&mut headers);
            match resp.parse(&self.buf) {
                Ok(httparse::Status::Complete(n)) => {
                    let mut len = None;
                    for h in resp.headers.iter() {
                        if h.name.eq_ignore_ascii_case("content-length") {
                            len = std::str::from_utf8(h.value)
                                .ok()
                                .and_then(|v| v.trim().parse::<usize>().ok());
                        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                            return Err("chunked body (unsupported by the bench)".into());
                        }
                    }
                    break (resp.code.unwrap_or(0), n, len.unwrap_or(0));
                }
                Ok(httparse::Status::Partial) => {}
                Err(e) => return Err(format!("bad response: {e}")),
            }
            if self
                .io
                .read_buf(&mut self.buf)
                .await
                .map_err(|_| "connection closed".to_string())?
                == 0
            {
                return Err("connection closed".into());
            }
        };
        while self.buf.len() < head_len + body_len {
            self.buf.reserve(head_len + body_len - self.buf.len());
            if self
                .io
                .read_buf(&mut self.buf)
                .await
                .map_err(|_| "connection closed".to_string())?
                == 0
            {
                return Err("connection closed".into());
            }
        }
        self.buf.advance(head_len + body_len);
        if status >= 400 {
            return Err(format!("http {status}"));
        }
        Ok(body_len as u64)
    }
}

/// Runs the benchmark; returns whether it ran without errors.
pub fn run(a: BenchArgs) -> Result<bool> {
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
    let (scheme, host, port, path) = (
        url.scheme.as_str(),
        url.host_bare().to_string(),
        url.port_or_default(),
        url.path.as_str(),
    );
    if a.connections == 0 || a.streams == 0 {
        bail!("-c and -m must be at least 1");
    }
    if a.requests == Some(0) {
        bail!("-n 0: nothing to measure (give at least 1 request, or -d for a duration)");
    }
    let warmup = parse_duration(&a.warmup)?;
    let duration = match (&a.duration, a.requests) {
        (Some(d), _) => Some(parse_duration(d)?),
        (None, None) => Some(Duration::from_secs(10)),
        (None, Some(_)) => None,
    };
    let parsed = Protocol::parse(&a.protocol).map_err(|e| anyhow::anyhow!("--protocol: {e}"))?;
    let h2 = parsed == Protocol::H2;
    let proto = if h2 { None } else { Some(parsed) };
    let verify = if a.insecure {
        Verify::Insecure
    } else if let Some(c) = &a.cacert {
        speedy_net::tls::ca_certs(c).map_err(|e| anyhow::anyhow!("--cacert: {e}"))?;
        Verify::CaFile(c.clone())
    } else {
        Verify::System
    };
    let per_conn = if proto == Some(Protocol::Http1) {
        1
    } else {
        a.streams
    };
    if let Some(n) = a.idle {
        let hold = parse_duration(&a.hold)?;
        return hold_idle(n, scheme, &host, port, path, proto, hold, verify).await;
    }
    let mut conns = Vec::with_capacity(a.connections);
    for _ in 0..a.connections {
        let c = if h2 {
            Conn::H2(h2_connect(scheme, &host, port, &verify).await?)
        } else if proto == Some(Protocol::Http1) {
            Conn::H1(tokio::sync::Mutex::new(
                H1::connect(scheme, &host, port, path, &verify).await?,
            ))
        } else {
            let cfg = ClientConfig {
                protocol: proto,
                verify: verify.clone(),
                http1_connections: 1,
                ..Default::default()
            };
            Conn::Client(
                Client::connect(scheme, &host, port, &cfg)
                    .await
                    .map_err(|e| anyhow::anyhow!("{e}"))?,
            )
        };
        conns.push(Arc::new(c));
    }
    let start = Instant::now();
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        budget: AtomicI64::new(a.requests.map_or(i64::MAX, |n| n as i64)),
        measure_from: start + warmup,
        hist: Mutex::new(Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid bounds")),
        totals: Mutex::new(Totals::default()),
    });
    let uri = url.to_string();
    let mut tasks = Vec::new();
    for c in &conns {
        for _ in 0..per_conn {
            let (c, shared, path, uri) = (c.clone(), shared.clone(), path.to_string(), uri.clone());
            tasks.push(tokio::spawn(
                async move { worker(c, shared, path, uri).await },
            ));
        }
    }
    if let Some(d) = duration {
        tokio::time::sleep(warmup + d).await;
        shared.stop.store(true, Ordering::SeqCst);
    }
    for t in tasks {
        let _ = t.await;
    }
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
        "errors": errors, "errors_by_kind": totals.errors,
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
        for (k, v) in &totals.errors {
            println!("errors: {v} × {k}");
        }
    }
    Ok(errors == 0)
}

#[allow(clippy::too_many_arguments)]
async fn hold_idle(
    n: usize,
    scheme: &str,
    host: &str,
    port: u16,
    path: &str,
    proto: Option<Protocol>,
    hold: Duration,
    verify: Verify,
) -> Result<bool> {
    use std::io::Write;
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
            let (cfg, scheme, host, path) = (
                cfg.clone(),
                scheme.to_string(),
                host.to_string(),
                path.to_string(),
            );
            tasks.push(tokio::spawn(async move {
                let c = Client::connect(&scheme, &host, port, &cfg)
                    .await
                    .map_err(|e| e.to_string())?;
                let r = c
                    .request(ClientRequest::get(&path))
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

async fn h2_connect(
    scheme: &str,
    host: &str,
    port: u16,
    verify: &Verify,
) -> Result<h2::client::SendRequest<Bytes>> {
    let tcp = tokio::net::TcpStream::connect((host, port))
        .await
        .with_context(|| format!("{host}:{port}"))?;
    tcp.set_nodelay(true)?;
    let io: speedy_net::io::BoxIo = if scheme == "https" {
        let tls = speedy_net::tls::client_config(verify, &["h2"]).map_err(anyhow::Error::msg)?;
        let name = rustls_name(host)?;
        Box::new(
            tokio_rustls::TlsConnector::from(tls)
                .connect(name, tcp)
                .await?,
        )
    } else {
        Box::new(tcp)
    };
    let (send, conn) = h2::client::Builder::new()
        .initial_window_size(1 << 20)
        .initial_connection_window_size(8 << 20)
        .handshake(io)
        .await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(send)
}

fn rustls_name(host: &str) -> Result<rustls::pki_types::ServerName<'static>> {
    rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| anyhow::anyhow!("{host}: {e}"))
}

async fn one(c: &Conn, path: &str, uri: &str) -> Result<u64, String> {
    match c {
        Conn::Client(cl) => {
            let resp = cl
                .request(ClientRequest::get(path))
                .await
                .map_err(|e| kind(&e.to_string()))?;
            if resp.status >= 400 {
                return Err(format!("http {}", resp.status));
            }
            let mut body = resp.body;
            let mut n = 0u64;
            while let Some(c) = body.chunk().await {
                n += c.map_err(|e| kind(&e.to_string()))?.len() as u64;
            }
            Ok(n)
        }
        Conn::H1(h1) => h1.lock().await.roundtrip().await,
        Conn::H2(send) => {
            let mut s = send.clone().ready().await.map_err(|e| format!("h2: {e}"))?;
            let req = http::Request::get(uri)
                .body(())
                .map_err(|e| e.to_string())?;
            let (resp, _) = s.send_request(req, true).map_err(|e| format!("h2: {e}"))?;
            let resp = resp.await.map_err(|e| format!("h2: {e}"))?;
            if resp.status().as_u16() >= 400 {
                return Err(format!("http {}", resp.status().as_u16()));
            }
            let mut body = resp.into_body();
            let mut n = 0u64;
            while let Some(d) = body.data().await {
                let d = d.map_err(|e| format!("h2: {e}"))?;
                let _ = body.flow_control().release_capacity(d.len());
                n += d.len() as u64;
            }
            Ok(n)
        }
    }
}

fn kind(e: &str) -> String {
    if e.contains("reset") {
        "stream reset".into()
    } else if e.contains("closed") {
        "connection closed".into()
    } else if e.contains("connect") {
        "connect".into()
    } else {
        e.split(':').next().unwrap_or(e).to_string()
    }
}

async fn worker(c: Arc<Conn>, shared: Arc<Shared>, path: String, uri: String) {
    let mut hist = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).expect("valid bounds");
    let (mut done, mut bytes) = (0u64, 0u64);
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    while !shared.stop.load(Ordering::Relaxed) {
        let t0 = Instant::now();
        let measuring = t0 >= shared.measure_from;
        if measuring && shared.budget.fetch_sub(1, Ordering::Relaxed) <= 0 {
            break;
        }
        let r = one(&c, &path, &uri).await;
        if !measuring {
            continue;
        }
        match r {
            Ok(n) => {
                let _ = hist.record((t0.elapsed().as_micros() as u64).max(1));
                done += 1;
                bytes += n;
            }
            Err(e) => {
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
