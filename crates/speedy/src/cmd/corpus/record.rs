//! `speedy corpus record`: record live pages into an archive through `speedy proxy
//! --record`, with headless Chromium or speedy's loader (`speedy_lab::record`; the
//! recording is described in docs/archive.md, "Recording").

use anyhow::{anyhow, Result};
use clap::Args;
use speedy_lab::record::{record, RecordOptions, Recorder, Upstream};
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `speedy corpus record`.
#[derive(Args, Debug)]
#[command(
    after_help = "Each URL is loaded (--visits times, each with a fresh browser profile) \
through a recording `speedy proxy` on 127.0.0.1: plain http and, inside CONNECT, https \
(TLS terminated with certificates from DIR/lab-ca, which Chromium trusts by its key hash). \
Every exchange is kept: headers in order, the body as delivered (content coding kept), the \
origin's address and protocol, the time to the first byte and the transfer time. The \
archive has one page per URL: its root is the navigation (redirects followed), discovery \
comes from Chromium's initiators, and visits are merged so URLs that differ per visit are \
all kept. It replays at once with `speedy serve --archive DIR` (DIR/lab-ca signs its \
certificates) and `speedy load --archive DIR`.\n\n\
--loader records with `speedy load` instead of Chromium: no browser needed, but no \
script runs, so what scripts would request is missed.\n\n\
Examples:\n  \
speedy corpus record https://example.com/ --out ./example\n  \
speedy corpus record https://example.com/ https://example.org/ --out ./corpus --visits 3\n  \
speedy corpus record http://example.com/ --out ./example-loader --loader\n  \
speedy corpus record https://www.site.test/ --out ./site \\\n      \
--resolve www.site.test=127.0.0.2:8443 --cacert site-ca.pem"
)]
pub struct RecordArgs {
    /// The pages to record (absolute http:// or https:// URLs).
    #[arg(value_name = "URL", required = true)]
    urls: Vec<String>,
    /// Archive directory to write (archive.json, bodies/, lab-ca/).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Load each URL N times, merging what the visits requested.
    #[arg(long, default_value_t = 1, value_name = "N")]
    visits: usize,
    /// Record with speedy's loader instead of Chromium (no browser; scripts do not run).
    #[arg(long, conflicts_with = "chromium")]
    loader: bool,
    /// The Chromium program.
    #[arg(long, default_value = "chromium", value_name = "PROGRAM")]
    chromium: PathBuf,
    /// Reach HOST at IP (and PORT) instead of looking it up (repeatable; `*` for every
    /// other host), as `speedy proxy --resolve`.
    #[arg(long, value_name = "HOST[:PORT]=IP[:PORT]")]
    resolve: Vec<String>,
    /// Trust the CA certificates in this PEM file for https origins, instead of the
    /// system's roots.
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    cacert: Option<PathBuf>,
    /// Accept any certificate from https origins.
    #[arg(short = 'k', long)]
    insecure: bool,
    /// Seconds to wait for each page's load event.
    #[arg(long, default_value_t = 60, value_name = "SECS")]
    timeout: u64,
    /// After the load event, milliseconds with no request in flight before a visit ends
    /// (requests scripts make after the load are recorded too).
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    quiet_ms: u64,
    /// Keep DIR/.speedy-recording/: the proxy's exchange lines and bodies, one log per visit.
    #[arg(long)]
    keep_recording: bool,
}

/// Records the pages; prints the archive's summary on stdout and progress and the
/// import's warnings on stderr.
pub fn run(a: RecordArgs) -> Result<()> {
    if a.timeout == 0 {
        return Err(anyhow!("--timeout 0: at least 1 second"));
    }
    let speedy = std::env::current_exe()
        .map_err(|e| anyhow!("finding this program to start `speedy proxy`: {e}"))?;
    let opts = RecordOptions {
        urls: a.urls,
        out: a.out.clone(),
        visits: a.visits,
        client: if a.loader {
            Recorder::Loader
        } else {
            Recorder::Chromium(a.chromium)
        },
        upstream: Upstream {
            resolve: a.resolve,
            cacert: a.cacert,
            insecure: a.insecure,
        },
        speedy,
        timeout: Duration::from_secs(a.timeout),
        quiet: Duration::from_millis(a.quiet_ms),
        keep_recording: a.keep_recording,
    };
    let mut progress = |line: &str| eprintln!("speedy corpus record: {line}");
    let r = record(&opts, &mut progress).map_err(|e| anyhow!(e))?;
    for w in &r.imported.warnings {
        eprintln!("speedy corpus record: {w}");
    }
    let how: Vec<String> = (r.imported.sources.iter())
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    println!(
        "{}: {} from {} exchanges (discovery from: {})",
        a.out.display(),
        super::summary(&r.imported.archive),
        r.exchanges,
        if how.is_empty() {
            "roots only".to_string()
        } else {
            how.join(", ")
        }
    );
    Ok(())
}
