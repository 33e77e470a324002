//! SST's experiments (Ford, "Structured Streams: a New Transport Abstraction",
//! SIGCOMM 2007) on today's stream protocols: Fig 7, transaction time against size
//! ([`fig7`]), Fig 8, page loads under HTTP's ways of using connections against a
//! stream per request ([`fig8`]), and Fig 9, dynamic reprioritization (here).
//!
//! Fig 9, as the paper describes it: over a 1.5 Mbit/s link, two 1.5 MB downloads start
//! at once with equal priority; at 5 s a third, high-priority download starts and
//! should take the link; at 10 s the client swaps priorities so that one of the first
//! two takes the link. Here each protocol that can reprioritize (SPDY/3.1 with speedy's
//! PRIORITY extension, docs/spdy-priority.md; h2 and h3 with RFC 9218 PRIORITY_UPDATE)
//! runs it through the lab's link in namespaces ([`bed`]): `speedy serve` with
//! TCP_NOTSENT_LOWAT at 16 KiB, TLS and h3, and `speedy fetch` of three URLs, the third
//! at priority 0 starting at 5 s, and at 10 s the second moved to 0 and the third to 3,
//! with progress lines (bytes received over time per request), which are drawn. h3 runs over QUIC with TLS (it always
//! is); SPDY and h2 over plain TCP.

mod bed;
mod fig7;
mod fig8;
pub use fig7::{fig7, size_label, table as fig7_table, Fig7Options, Fig7Result};
pub use fig8::{fig8, table as fig8_table, Fig8Options, Fig8Page, Fig8Result, FLAVOURS};

use crate::report::fig9_chart;
use bed::Bed;
use speedy_net::fetch::FetchSpec;
use speedy_net::fetch_record::{ProgressEvent, ProgressLine};
use speedy_server::spec::ServeSpec;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a Fig 9 run needs.
#[derive(Clone, Debug)]
pub struct Fig9Options {
    /// The `speedy` program.
    pub speedy: PathBuf,
    /// Output directory: progress files, `sst.html`.
    pub out: PathBuf,
    /// Protocols to run (`spdy/3.1`, `h2`, `h3`).
    pub protocols: Vec<String>,
    /// Bytes per download (the paper: 1.5 MB).
    pub size: usize,
    /// Link rate each way, kbit/s (the paper: 1,500).
    pub rate_kbit: u32,
    /// Round-trip propagation delay, ms.
    pub rtt_ms: u32,
    /// When the third, high-priority request starts (the paper: 5 s).
    pub third_at: f64,
    /// When priorities are swapped (the paper: 10 s).
    pub swap_at: f64,
}

impl Fig9Options {
    /// The paper's conditions: 1.5 MB downloads, 1.5 Mbit/s, a third request at 5 s, a
    /// swap at 10 s. The paper gives the link as a DSL line; 50 ms of round-trip
    /// propagation is this lab's assumption.
    pub fn paper(speedy: PathBuf, out: PathBuf) -> Fig9Options {
        Fig9Options {
            speedy,
            out,
            protocols: vec!["spdy/3.1".into(), "h2".into(), "h3".into()],
            size: 1_500_000,
            rate_kbit: 1_500,
            rtt_ms: 50,
            third_at: 5.0,
            swap_at: 10.0,
        }
    }
}

/// One request's bytes over time: (seconds since the connection was up, bytes so far).
pub type Trace = Vec<(f64, u64)>;

/// One protocol's run.
#[derive(Clone, Debug)]
pub struct Fig9Run {
    /// Protocol.
    pub protocol: String,
    /// Bytes over time of requests 1, 2 and 3.
    pub traces: [Trace; 3],
    /// The PING round trip measured with the swap, ms (queues included).
    pub swap_rtt_ms: Option<f64>,
    /// Seconds from the third request's start to its first byte.
    pub third_first_byte: Option<f64>,
    /// Share of the bytes received in the second after the swap's PING answer that
    /// belong to request 2 (the one raised).
    pub swap_share: Option<f64>,
}

/// Runs Fig 9 for each protocol, writes `sst.html` and returns the runs. Needs root.
pub fn fig9(o: &Fig9Options) -> Result<Vec<Fig9Run>, String> {
    std::fs::create_dir_all(&o.out).map_err(|e| format!("{}: {e}", o.out.display()))?;
    let www = o.out.join("www");
    std::fs::create_dir_all(&www).map_err(|e| format!("{}: {e}", www.display()))?;
    for (i, n) in ["1.bin", "2.bin", "3.bin"].iter().enumerate() {
        let body: Vec<u8> = (0..o.size).map(|k| (k * 31 + i * 7) as u8).collect();
        std::fs::write(www.join(n), body).map_err(|e| format!("{n}: {e}"))?;
    }
    let mut runs = Vec::new();
    for p in &o.protocols {
        eprintln!("sst fig 9: {p} …");
        let progress = o.out.join(format!("fig9-{}.jsonl", p.replace('/', "")));
        run_one(o, p, &www, &progress)?;
        let text = std::fs::read_to_string(&progress)
            .map_err(|e| format!("{}: {e}", progress.display()))?;
        let run = analyse(p, &text, o)?;
        runs.push(run);
    }
    let html = page(o, &runs);
    let path = o.out.join("sst.html");
    std::fs::write(&path, html).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(runs)
}

fn run_one(o: &Fig9Options, protocol: &str, www: &Path, progress: &Path) -> Result<(), String> {
    let mut bed = Bed::new(&o.speedy, o.rate_kbit, o.rtt_ms)?;
    let serve = ServeSpec {
        notsent_lowat: Some(16 << 10),
        ..bed.files_spec(www)?
    };
    bed.serve(&serve)?;
    let base = bed.base(protocol == "h3");
    let fetch = FetchSpec {
        urls: (1..=3).map(|n| format!("{base}{n}.bin")).collect(),
        protocol: Some(protocol.to_string()),
        insecure: true,
        progress: Some(progress.to_path_buf()),
        priority_of: vec!["3=0".into()],
        start: vec![format!("3={}", o.third_at)],
        reprioritize: vec![format!("{}:2=0", o.swap_at), format!("{}:3=3", o.swap_at)],
        ..FetchSpec::default()
    };
    bed.fetch(
        &fetch,
        transfer_limit(3 * o.size as u64, o.rate_kbit),
        protocol,
    )
    .map(|_| ())
}

/// Twice the time `bytes` take at `rate_kbit`, plus 30 s: how long a figure's client may
/// run.
pub(crate) fn transfer_limit(bytes: u64, rate_kbit: u32) -> Duration {
    let bits = bytes as f64 * 8.0;
    Duration::from_secs_f64(30.0 + 2.0 * bits / (f64::from(rate_kbit) * 1e3))
}

/// Reads a `speedy fetch --progress` file.
fn analyse(protocol: &str, text: &str, o: &Fig9Options) -> Result<Fig9Run, String> {
    let mut traces: [Trace; 3] = Default::default();
    let (mut pong, mut swap) = (None, None);
    let mut rtt = None;
    for line in text.lines() {
        let v: ProgressLine =
            speedy_records::version::read(line).map_err(|e| format!("{protocol} progress: {e}"))?;
        match v.event {
            Some(ProgressEvent::Reprioritize) if v.url == 2 => swap = Some(v.t),
            Some(ProgressEvent::Pong) if v.url == 2 => {
                pong = Some(v.t);
                rtt = v.rtt_ms;
            }
            Some(_) => {}
            None => {
                let bytes = v
                    .bytes
                    .ok_or_else(|| format!("{protocol} progress: a line without bytes: {line}"))?;
                if (1..=3).contains(&v.url) {
                    traces[v.url - 1].push((v.t, bytes));
                }
            }
        }
    }
    if traces
        .iter()
        .any(|t| t.last().map(|l| l.1) != Some(o.size as u64))
    {
        return Err(format!("{protocol}: a download did not complete"));
    }
    if swap.is_none() {
        return Err(format!("{protocol}: no reprioritization happened"));
    }
    let third_first_byte = traces[2].first().map(|f| f.0 - o.third_at);
    let swap_share = pong.map(|p| {
        let in_window = |tr: &Trace| bytes_between(tr, p, p + 1.0) as f64;
        let raised = in_window(&traces[1]);
        let all = raised + in_window(&traces[0]) + in_window(&traces[2]);
        if all > 0.0 {
            raised / all
        } else {
            0.0
        }
    });
    Ok(Fig9Run {
        protocol: protocol.to_string(),
        traces,
        swap_rtt_ms: rtt,
        third_first_byte,
        swap_share,
    })
}

/// Bytes of a trace received in (a, b].
fn bytes_between(tr: &Trace, a: f64, b: f64) -> u64 {
    let at = |t: f64| tr.iter().take_while(|p| p.0 <= t).last().map_or(0, |p| p.1);
    at(b) - at(a)
}

/// A plain-text table of the runs.
pub fn table(runs: &[Fig9Run]) -> String {
    let mut s = format!(
        "{:<10} {:>22} {:>22} {:>26}\n",
        "protocol", "3rd: first byte after", "swap: PING RTT (ms)", "raised share, next second"
    );
    let f = |v: Option<f64>, d: usize| v.map_or("–".into(), |v| format!("{v:.d$}"));
    for r in runs {
        s.push_str(&format!(
            "{:<10} {:>20} s {:>22} {:>26}\n",
            r.protocol,
            f(r.third_first_byte, 2),
            f(r.swap_rtt_ms, 0),
            f(r.swap_share, 2)
        ));
    }
    s
}

fn page(o: &Fig9Options, runs: &[Fig9Run]) -> String {
    let mut body = format!(
        "<h1>SST Fig 9: dynamic reprioritization</h1>\n<p>Three {} kB downloads over one \
         connection through <code>speedy link</code> at {} kbit/s each way, {} ms round-trip \
         propagation; request 3 starts at {} s at priority 0 (the others 3); at {} s the \
         client raises request 2 to 0 and puts request 3 at 3, with a PING beside the change. \
         Server: <code>speedy serve --notsent-lowat 16K</code>. Bytes received over time, as \
         <code>speedy fetch --progress</code> logged them.</p>\n<pre>{}</pre>\n",
        o.size / 1000,
        o.rate_kbit,
        o.rtt_ms,
        o.third_at,
        o.swap_at,
        crate::report::escape(&table(runs))
    );
    for r in runs {
        body.push_str(&format!(
            "<h2>{}</h2>\n",
            crate::report::escape(&r.protocol)
        ));
        body.push_str(&fig9_chart(r, o.third_at, o.swap_at));
    }
    format!(
        "<!doctype html><meta charset=utf-8><title>speedy lab sst</title>\
         <style>body{{font-family:sans-serif;max-width:1040px;margin:auto}}</style>\n{body}"
    )
}

/// What `speedy lab sst` is asked to run: the figures and their options, checked before
/// anything starts.
pub struct Choice<'a> {
    /// Figures: 7, 8, 9.
    pub figures: &'a [u32],
    /// Fig 9's protocols.
    pub protocols: &'a [String],
    /// Fig 9's bytes per download.
    pub size: usize,
    /// Fig 7's response sizes (empty: the paper's).
    pub sizes: &'a [usize],
    /// Fig 7's transactions per size and variant.
    pub reps: usize,
    /// Fig 8's pages.
    pub pages: usize,
    /// Fig 8's flavours (empty: all).
    pub flavours: &'a [String],
}

impl Choice<'_> {
    /// Every option in range, named by its flag when not.
    pub fn check(&self) -> Result<(), String> {
        if let Some(f) = self.figures.iter().find(|f| ![7, 8, 9].contains(*f)) {
            return Err(format!("--figures {f}: SST's figures 7, 8 and 9"));
        }
        if !(1..=200).contains(&self.pages) {
            return Err(format!("--pages {}: 1 to 200", self.pages));
        }
        for f in self.flavours {
            if !FLAVOURS.contains(&f.as_str()) {
                let names: Vec<&str> = FLAVOURS.to_vec();
                return Err(format!("--flavours {f}: one of {}", names.join(", ")));
            }
        }
        if let Some(n) = self.sizes.iter().find(|n| !(1..=100_000_000).contains(*n)) {
            return Err(format!("--sizes {n}: between 1 and 100000000 bytes"));
        }
        if !(1..=100).contains(&self.reps) {
            return Err(format!("--reps {}: 1 to 100", self.reps));
        }
        for p in self.protocols {
            if !["spdy/3.1", "spdy", "h2", "h3"].contains(&p.as_str()) {
                return Err(format!(
                    "--protocols {p}: only spdy/3.1, h2 and h3 can reprioritize a request in flight"
                ));
            }
        }
        if !(10_000..=100_000_000).contains(&self.size) {
            return Err(format!(
                "--size {}: between 10000 and 100000000 bytes",
                self.size
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_progress_file_and_measures_the_swap() {
        let o = Fig9Options {
            size: 300,
            ..Fig9Options::paper("speedy".into(), "out".into())
        };
        let text = [
            r#"{"url":1,"bytes":100,"t":1.0}"#,
            r#"{"url":2,"bytes":100,"t":1.0}"#,
            r#"{"url":3,"bytes":100,"t":5.5}"#,
            r#"{"event":"reprioritize","url":2,"priority":0,"t":10.0}"#,
            r#"{"event":"pong","url":2,"rtt_ms":400.0,"t":10.4}"#,
            r#"{"url":1,"bytes":150,"t":10.5}"#,
            r#"{"url":2,"bytes":300,"t":11.0}"#,
            r#"{"url":3,"bytes":300,"t":12.0}"#,
            r#"{"url":1,"bytes":300,"t":13.0}"#,
        ]
        .join("\n");
        let r = analyse("h2", &text, &o).unwrap();
        assert_eq!(r.swap_rtt_ms, Some(400.0));
        assert!((r.third_first_byte.unwrap() - 0.5).abs() < 1e-9);
        // In (10.4, 11.4]: 200 B of request 2, 50 B of request 1.
        assert!((r.swap_share.unwrap() - 0.8).abs() < 1e-9);
        assert!(analyse(
            "h2",
            &text.replace("\"bytes\":300,\"t\":13.0", "\"bytes\":299,\"t\":13.0"),
            &o
        )
        .is_err());
    }
}
