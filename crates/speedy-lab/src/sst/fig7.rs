//! SST's Fig 7: request + response time against response size, for a transaction on a
//! new TCP connection against a new stream on a connection already warm.
//!
//! Each variant runs through the same link (the SST bed, `super::bed`) against `speedy
//! serve` with TLS and h3 (`udp`: `speedy serve` answering one-datagram GETs):
//! - `udp`: one datagram each way (`speedy fetch --protocol udp`: no handshake, no
//!   retransmission), for the sizes one datagram holds (65,506 bytes and below);
//! - `tcp`: a new TCP connection per transaction (HTTP/1.1, one `speedy fetch` each: the
//!   time includes the three-way handshake, and slow start from a cold window);
//! - `spdy/3.1`, `h2`: a new stream per transaction on one warm connection (plain TCP,
//!   one `speedy fetch --concurrency 1`, after a warm-up request that is not counted);
//! - `h3`: the same on one warm QUIC connection (encrypted: QUIC always is).
//!
//! The time is `speedy fetch`'s `elapsed_ms`: from the request to the body's last byte.

use super::bed::Bed;
use crate::report::{escape, fig7_chart};
use speedy_net::fetch::FetchSpec;
use speedy_net::fetch_record::FetchLine;
use speedy_server::spec::ServeSpec;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What a Fig 7 run needs.
#[derive(Clone, Debug)]
pub struct Fig7Options {
    /// The `speedy` program.
    pub speedy: PathBuf,
    /// Output directory: the files served, `fig7.html`.
    pub out: PathBuf,
    /// Variants: `udp`, `tcp`, `spdy/3.1`, `h2`, `h3`.
    pub variants: Vec<String>,
    /// Response sizes, bytes.
    pub sizes: Vec<usize>,
    /// Transactions per size and variant (the median is reported).
    pub reps: usize,
    /// Link rate each way, kbit/s (the paper: 1,500).
    pub rate_kbit: u32,
    /// Round-trip propagation delay, ms.
    pub rtt_ms: u32,
}

impl Fig7Options {
    /// The paper's link (1.5 Mbit/s; 50 ms round trip is this lab's assumption) and sizes
    /// from 32 B to 2 MB, three transactions each.
    pub fn paper(speedy: PathBuf, out: PathBuf) -> Fig7Options {
        Fig7Options {
            speedy,
            out,
            variants: ["udp", "tcp", "spdy/3.1", "h2", "h3"]
                .map(String::from)
                .to_vec(),
            sizes: vec![32, 256, 2_048, 16_384, 131_072, 1_048_576, 2_097_152],
            reps: 3,
            rate_kbit: 1_500,
            rtt_ms: 50,
        }
    }
}

/// Median milliseconds per variant and size.
pub type Fig7Result = BTreeMap<String, BTreeMap<usize, f64>>;

/// Runs Fig 7 and writes `fig7.html`. Needs root.
pub fn fig7(o: &Fig7Options) -> Result<Fig7Result, String> {
    let www = o.out.join("www");
    std::fs::create_dir_all(&www).map_err(|e| format!("{}: {e}", www.display()))?;
    for &n in o.sizes.iter().chain([32].iter()) {
        let body: Vec<u8> = (0..n).map(|k| (k * 13) as u8).collect();
        let path = www.join(format!("s{n}.bin"));
        std::fs::write(&path, body).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let mut bed = Bed::new(&o.speedy, o.rate_kbit, o.rtt_ms)?;
    let files = bed.files_spec(&www)?;
    let udp = ServeSpec {
        listen: files.listen.clone(),
        root: Some(www.clone()),
        udp_get: true,
        ..ServeSpec::default()
    };
    let mut result = Fig7Result::new();
    for v in &o.variants {
        eprintln!("sst fig 7: {v} …");
        bed.serve(if v == "udp" { &udp } else { &files })?;
        let base = bed.base(v == "h3");
        let sizes: Vec<usize> = o
            .sizes
            .iter()
            .copied()
            .filter(|&n| v != "udp" || n <= speedy_net::transport::udp_get::MAX_BODY)
            .collect();
        let urls: Vec<String> = (0..o.reps)
            .flat_map(|_| sizes.iter().map(|&n| format!("{base}s{n}.bin")))
            .collect();
        let bytes: u64 = sizes.iter().map(|&n| n as u64).sum::<u64>() * o.reps as u64;
        let limit = super::transfer_limit(bytes, o.rate_kbit);
        let spec = |urls: Vec<String>, protocol: &str| FetchSpec {
            urls,
            protocol: Some(protocol.to_string()),
            ..FetchSpec::default()
        };
        let out = match v.as_str() {
            "udp" => bed.fetch(&spec(urls, "udp"), limit, v)?.0,
            // A new connection (and a new process) per transaction.
            "tcp" => {
                let mut out = String::new();
                for u in urls {
                    out.push_str(&bed.fetch(&spec(vec![u], "http1"), limit, v)?.0);
                }
                out
            }
            _ => {
                let mut all = vec![format!("{base}s32.bin?warm")];
                all.extend(urls);
                let s = FetchSpec {
                    insecure: true,
                    concurrency: 1,
                    ..spec(all, v)
                };
                bed.fetch(&s, limit, v)?.0
            }
        };
        result.insert(v.clone(), medians(v, &out, &sizes, o.reps)?);
    }
    let html = page(o, &result);
    let path = o.out.join("fig7.html");
    std::fs::write(&path, html).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(result)
}

/// The median `elapsed_ms` per size from `speedy fetch`'s JSON lines (the warm-up and
/// the server's start-up line left out); every transaction must have succeeded.
fn medians(
    variant: &str,
    stdout: &str,
    sizes: &[usize],
    reps: usize,
) -> Result<BTreeMap<usize, f64>, String> {
    let mut by_size: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for line in stdout.lines() {
        // The server's start-up line and anything else that is not a fetch line.
        let Ok(v) = serde_json::from_str::<FetchLine>(line) else {
            continue;
        };
        speedy_records::version::check(&v)?;
        let url = v.url.as_str();
        if url.ends_with("?warm") {
            continue;
        }
        if !v.is_ok_200() {
            return Err(format!("{variant}: {line}"));
        }
        let size = url
            .rsplit("/s")
            .next()
            .and_then(|s| s.strip_suffix(".bin"))
            .and_then(|s| s.parse::<usize>().ok())
            .ok_or_else(|| format!("{variant}: unexpected URL {url}"))?;
        if v.bytes != Some(size as u64) {
            return Err(format!("{variant}: {url}: {:?} bytes", v.bytes));
        }
        let ms = v
            .elapsed_ms
            .ok_or_else(|| format!("{variant}: {url}: no elapsed_ms"))?;
        by_size.entry(size).or_default().push(ms);
    }
    let mut med = BTreeMap::new();
    for &n in sizes {
        let mut v = by_size.remove(&n).unwrap_or_default();
        if v.len() != reps {
            return Err(format!(
                "{variant}: {} of {reps} transactions of {n} B",
                v.len()
            ));
        }
        v.sort_by(f64::total_cmp);
        med.insert(n, v[v.len() / 2]);
    }
    Ok(med)
}

/// A byte count as the chart and table print it.
pub fn size_label(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}

/// A plain-text table: a row per size, a column per variant, median ms.
pub fn table(r: &Fig7Result) -> String {
    let variants: Vec<&String> = r.keys().collect();
    let mut s = format!("{:>10}", "size");
    for v in &variants {
        s.push_str(&format!(" {:>10}", v));
    }
    s.push_str("   (median ms, request to last byte)\n");
    let sizes: std::collections::BTreeSet<usize> =
        r.values().flat_map(|m| m.keys().copied()).collect();
    for n in sizes {
        s.push_str(&format!("{:>10}", size_label(n)));
        for v in &variants {
            match r[*v].get(&n) {
                Some(ms) => s.push_str(&format!(" {ms:>10.0}")),
                // A size the variant cannot carry (UDP: over one datagram).
                None => s.push_str(&format!(" {:>10}", "–")),
            }
        }
        s.push('\n');
    }
    s
}

fn page(o: &Fig7Options, r: &Fig7Result) -> String {
    format!(
        "<!doctype html><meta charset=utf-8><title>speedy lab sst: Fig 7</title>\
         <style>body{{font-family:sans-serif;max-width:1040px;margin:auto}}</style>\n\
         <h1>SST Fig 7: transaction time against size</h1>\n<p>Through <code>speedy link</code> \
         at {} kbit/s each way, {} ms round-trip propagation; median of {} transactions per \
         size. <code>tcp</code>: a new TCP connection per transaction (HTTP/1.1); the others: \
         a new stream per transaction on one warm connection (SPDY/3.1 and h2 over plain TCP, \
         h3 over QUIC); <code>udp</code>: one datagram each way, for the sizes one datagram \
         holds.</p>\n<pre>{}</pre>\n{}",
        o.rate_kbit,
        o.rtt_ms,
        o.reps,
        escape(&table(r)),
        fig7_chart(r)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_skip_the_warm_up_and_refuse_a_failed_transaction() {
        let o = Fig7Options {
            sizes: vec![32, 2048],
            reps: 3,
            ..Fig7Options::paper("speedy".into(), "out".into())
        };
        let line = |size: usize, ms: f64| {
            format!(
                r#"{{"url":"http://10.0.0.1:9000/s{size}.bin","status":200,"bytes":{size},"elapsed_ms":{ms}}}"#
            )
        };
        let mut out = vec![
            r#"{"listening":"0.0.0.0:9000"}"#.to_string(),
            r#"{"url":"http://10.0.0.1:9000/s32.bin?warm","status":200,"bytes":32,"elapsed_ms":999}"#.into(),
        ];
        for ms in [60.0, 50.0, 70.0] {
            out.push(line(32, ms));
            out.push(line(2048, ms * 2.0));
        }
        let m = medians("h2", &out.join("\n"), &o.sizes, o.reps).unwrap();
        assert_eq!((m[&32], m[&2048]), (60.0, 120.0));
        out.push(r#"{"url":"http://10.0.0.1:9000/s32.bin","error":"reset"}"#.into());
        assert!(medians("h2", &out.join("\n"), &o.sizes, o.reps).is_err());
        assert_eq!(size_label(2_097_152), "2 MiB");
    }
}
