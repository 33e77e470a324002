//! SST's Fig 8 on today's protocols: whole page loads from a web-like workload under the
//! ways HTTP has used connections, against one stream per request on one connection.
//!
//! The workload is the lab's synthetic corpus with the `web-2010` calibration (Google's
//! web metrics of 2010: 44 resources and 320 KB per page; the page statistics closest to
//! the paper's time that the lab cites), every page's objects served by one `speedy
//! serve` (a page's several hosts become one: SST's figure is about one client-server
//! path). A page load is `speedy fetch --after-first` of its objects: the root first,
//! then the rest, timed from the fetch's start to its end (process start-up included,
//! the same for every flavour). Each page is loaded afresh: no connection outlives it.
//!
//! Flavours ([`FLAVOURS`], what each asks of `speedy fetch` in `flavour_spec`): HTTP/1.0 serial (a new connection per object, one at a time),
//! HTTP/1.0 parallel (a new connection per object, 4 at a time: this lab's choice, the
//! paper's count is not in its references), HTTP/1.1 persistent (2 keep-alive
//! connections, RFC 2616 §8.1.4's limit for a single-user client), HTTP/1.1 pipelined
//! (one connection, RFC 9112 §9.3.2), and a stream per request on one SPDY/3.1, h2
//! (both plain TCP) or h3 (QUIC, encrypted) connection, which stand where the paper had
//! HTTP/1.0 over SST.

use super::bed::Bed;
use speedy_archive::synth::{calibration, synthesize_calibrated, SynthOptions};
use speedy_net::fetch::FetchSpec;
use speedy_net::fetch_record::FetchLine;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The flavours' names, in the figure's order.
pub const FLAVOURS: [&str; 7] = [
    "http1.0-serial",
    "http1.0-parallel",
    "http1.1-persistent",
    "http1.1-pipelined",
    "spdy/3.1",
    "h2",
    "h3",
];

/// What a flavour asks of `speedy fetch` (`None`: no such flavour).
fn flavour_spec(name: &str) -> Option<FetchSpec> {
    let on = |protocol: &str| FetchSpec {
        protocol: Some(protocol.into()),
        ..FetchSpec::default()
    };
    let http1 = on("http1");
    Some(match name {
        "http1.0-serial" => FetchSpec {
            connection_per_request: true,
            concurrency: 1,
            ..http1
        },
        "http1.0-parallel" => FetchSpec {
            connection_per_request: true,
            concurrency: 4,
            ..http1
        },
        "http1.1-persistent" => FetchSpec {
            concurrency: 2,
            ..http1
        },
        "http1.1-pipelined" => FetchSpec {
            pipeline: true,
            ..http1
        },
        "spdy/3.1" | "h2" | "h3" => on(name),
        _ => return None,
    })
}

/// What a Fig 8 run needs.
#[derive(Clone, Debug)]
pub struct Fig8Options {
    /// The `speedy` program.
    pub speedy: PathBuf,
    /// Output directory: `www/` and `fig8.html`.
    pub out: PathBuf,
    /// Pages in the workload.
    pub pages: usize,
    /// The corpus seed.
    pub seed: u64,
    /// Flavours to run (names from [`FLAVOURS`]).
    pub flavours: Vec<String>,
    /// Link rate each way, kbit/s.
    pub rate_kbit: u32,
    /// Round-trip propagation delay, ms.
    pub rtt_ms: u32,
}

impl Fig8Options {
    /// SST's link (1.5 Mbit/s; 50 ms round trip, this lab's assumption), 10 pages, every
    /// flavour.
    pub fn paper(speedy: PathBuf, out: PathBuf) -> Fig8Options {
        Fig8Options {
            speedy,
            out,
            pages: 10,
            seed: 1,
            flavours: FLAVOURS.iter().map(|f| f.to_string()).collect(),
            rate_kbit: 1_500,
            rtt_ms: 50,
        }
    }
}

/// One page of the workload.
#[derive(Clone, Debug)]
pub struct Fig8Page {
    /// Objects (root included).
    pub objects: usize,
    /// Bytes of all its bodies.
    pub bytes: u64,
}

/// A Fig 8 run: the pages, and each flavour's load time per page (ms, in page order).
#[derive(Clone, Debug, Default)]
pub struct Fig8Result {
    /// The workload.
    pub pages: Vec<Fig8Page>,
    /// Load times by flavour, in page order.
    pub times: BTreeMap<String, Vec<f64>>,
}

/// Runs Fig 8 through `speedy link` (needs root), writes `fig8.html` and returns the
/// load times.
pub fn fig8(o: &Fig8Options) -> Result<Fig8Result, String> {
    for f in &o.flavours {
        if flavour_spec(f).is_none() {
            return Err(format!("fig 8: no flavour {f:?}"));
        }
    }
    let cal = calibration("web-2010")?;
    let archive = synthesize_calibrated(
        SynthOptions {
            pages: o.pages,
            seed: o.seed,
        },
        cal,
    );
    let www = o.out.join("www");
    let mut result = Fig8Result::default();
    let mut paths: Vec<Vec<String>> = Vec::new();
    for (p, page) in archive.pages.iter().enumerate() {
        let dir = www.join(format!("p{p}"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut bytes = 0u64;
        let mut list = Vec::new();
        for (k, &id) in page.objects.iter().enumerate() {
            let size = archive.objects[id].body.size();
            let body: Vec<u8> = (0..size).map(|i| (i * 7 + k) as u8).collect();
            let path = dir.join(format!("{k}.bin"));
            std::fs::write(&path, body).map_err(|e| format!("{}: {e}", path.display()))?;
            bytes += size as u64;
            list.push(format!("p{p}/{k}.bin"));
        }
        result.pages.push(Fig8Page {
            objects: list.len(),
            bytes,
        });
        paths.push(list);
    }
    let mut bed = Bed::new(&o.speedy, o.rate_kbit, o.rtt_ms)?;
    bed.serve(&bed.files_spec(&www)?)?;
    // Serial HTTP/1.0 pays two round trips per object on top of the bytes.
    let limit = |p: &Fig8Page| {
        Duration::from_secs_f64(
            30.0 + 2.0
                * (p.bytes as f64 * 8.0 / (f64::from(o.rate_kbit) * 1e3)
                    + p.objects as f64 * 3.0 * f64::from(o.rtt_ms) / 1e3
                    + 1.0),
        )
    };
    for f in &o.flavours {
        let flavour = flavour_spec(f).expect("checked above");
        eprintln!("sst fig 8: {f} ({} pages) …", o.pages);
        let base = bed.base(f == "h3");
        let mut times = Vec::new();
        for (list, p) in paths.iter().zip(&result.pages) {
            let spec = FetchSpec {
                urls: list.iter().map(|u| format!("{base}{u}")).collect(),
                insecure: true,
                after_first: true,
                ..flavour.clone()
            };
            let (out, took) = bed.fetch(&spec, limit(p), &format!("fig 8, {f}"))?;
            check_whole(f, &out, p)?;
            times.push(took.as_secs_f64() * 1e3);
        }
        result.times.insert(f.clone(), times);
    }
    let path = o.out.join("fig8.html");
    std::fs::write(&path, page(o, &result)).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(result)
}

/// Every object of a page must have come whole: one 200 line per object.
fn check_whole(flavour: &str, out: &str, page: &Fig8Page) -> Result<(), String> {
    let mut whole = 0usize;
    for line in out.lines() {
        let v: FetchLine = speedy_records::version::read(line)
            .map_err(|e| format!("fig 8, {flavour}: {e}: {line}"))?;
        if !v.is_ok_200() {
            return Err(format!("fig 8, {flavour}: {line}"));
        }
        whole += 1;
    }
    if whole != page.objects {
        return Err(format!(
            "fig 8, {flavour}: {whole} of the page's {} objects came whole",
            page.objects
        ));
    }
    Ok(())
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The printed table: per flavour, the median, mean, fastest and slowest page load,
/// and the median over pages of its time against HTTP/1.0 serial's.
pub fn table(r: &Fig8Result) -> String {
    let objects: usize = r.pages.iter().map(|p| p.objects).sum();
    let bytes: u64 = r.pages.iter().map(|p| p.bytes).sum();
    let mut s = format!(
        "{} pages, {:.0} objects and {:.0} KB each on average\n\
         flavour              median     mean      min      max   vs serial   (page load, ms)\n",
        r.pages.len(),
        objects as f64 / r.pages.len().max(1) as f64,
        bytes as f64 / 1e3 / r.pages.len().max(1) as f64
    );
    let base = r.times.get("http1.0-serial");
    for name in FLAVOURS {
        let Some(t) = r.times.get(name) else {
            continue;
        };
        let mean = t.iter().sum::<f64>() / t.len().max(1) as f64;
        let min = t.iter().copied().fold(f64::INFINITY, f64::min);
        let max = t.iter().copied().fold(0.0, f64::max);
        let vs = base.map_or(f64::NAN, |b| {
            let ratios: Vec<f64> = t.iter().zip(b).map(|(x, y)| x / y).collect();
            median(&ratios)
        });
        s.push_str(&format!(
            "{name:<18} {:>8.0} {mean:>8.0} {min:>8.0} {max:>8.0} {vs:>10.2}\n",
            median(t)
        ));
    }
    s
}

fn page(o: &Fig8Options, r: &Fig8Result) -> String {
    format!(
        "<!doctype html><meta charset=utf-8><title>speedy lab sst: Fig 8</title>\
         <style>body{{font-family:sans-serif;max-width:1040px;margin:auto}}</style>\n\
         <h1>SST Fig 8: page loads under HTTP's ways of using connections</h1>\n<p>Through \
         <code>speedy link</code> at {} kbit/s each way, {} ms round-trip propagation; {} \
         pages of the lab's <code>web-2010</code> corpus (seed {}), all objects on one \
         server; each page loaded afresh, its root first. HTTP/1.0: a new connection per \
         object, one at a time (serial) or 4 (parallel); HTTP/1.1: 2 keep-alive connections \
         (persistent) or one pipelined; SPDY/3.1, h2 (plain TCP) and h3 (QUIC): a stream \
         per object on one connection.</p>\n<pre>{}</pre>\n{}",
        o.rate_kbit,
        o.rtt_ms,
        r.pages.len(),
        o.seed,
        crate::report::escape(&table(r)),
        crate::report::fig8_chart(r)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_needs_every_object_whole_and_the_flavours_say_what_they_ask() {
        let pages = vec![
            Fig8Page {
                objects: 2,
                bytes: 10,
            },
            Fig8Page {
                objects: 1,
                bytes: 5,
            },
        ];
        let ok = r#"{"url":"http://a/p0/0.bin","status":200,"bytes":5}
{"url":"http://a/p0/1.bin","status":200,"bytes":5}"#;
        check_whole("h2", ok, &pages[0]).unwrap();
        assert!(check_whole("h2", ok, &pages[1]).is_err());
        let failed = ok.replace("\"status\":200,\"bytes\":5}\n", "\"error\":\"reset\"}\n");
        assert_ne!(failed, ok);
        assert!(check_whole("h2", &failed, &pages[0]).is_err());
        let newer = ok.replace("\"bytes\":5}", "\"bytes\":5,\"version\":7}");
        let e = check_whole("h2", &newer, &pages[0]).unwrap_err();
        assert!(e.contains("version 7"), "{e}");
        for f in FLAVOURS {
            assert!(flavour_spec(f).is_some(), "{f}");
        }
        let serial = flavour_spec("http1.0-serial").unwrap();
        assert!(serial.connection_per_request && serial.concurrency == 1);
        assert_eq!(serial.protocol.as_deref(), Some("http1"));
        assert!(flavour_spec("http2.5").is_none());
        let pipelined = flavour_spec("http1.1-pipelined").unwrap();
        assert!(pipelined.pipeline && !pipelined.connection_per_request);
        let mut r = Fig8Result {
            pages,
            ..Default::default()
        };
        r.times.insert("http1.0-serial".into(), vec![1500.0, 250.0]);
        r.times.insert("h2".into(), vec![750.0, 250.0]);
        let t = table(&r);
        assert!(t.contains("http1.0-serial"), "{t}");
        let h2 = t.lines().find(|l| l.starts_with("h2 ")).unwrap();
        assert!(
            h2.trim_end().ends_with("0.75"),
            "median of 0.5 and 1.0: {h2}"
        );
    }
}
