//! `speedy load`: loads a page like a browser (HTTP/1.1, SPDY or HTTP/2) and writes HAR.

use anyhow::{Context, Result};
use clap::Args;
use speedy_browser::{har, loader, prefetch, report, LoadSpec};
use std::io::Write;
use std::path::PathBuf;

/// Exit status: the load completed (failed subresources are reported on stderr).
pub const EXIT_OK: u8 = 0;
/// Exit status: the page's root document failed, or the load timed out.
pub const EXIT_PAGE_FAILED: u8 = 1;
/// Exit status: with `--fail`, some subresource failed.
pub const EXIT_PARTIAL: u8 = 3;

const AFTER_HELP: &str = "\
Prints one JSON line: onContentLoad/onLoad (ms), totals, failed, missing and unexpected URLs.

Exit status:
  0  the page loaded (failed subresources are listed on stderr, and are not fatal)
  1  the page's root document failed (connection refused, no address for the host,
     untrusted certificate, HTTP status >= 400, ...) or the load timed out
  2  bad arguments or files (start-up error)
  3  with --fail: some subresource failed

TLS: with --archive DIR, DIR/lab-ca/ca.pem (the CA `speedy serve --archive DIR` signs with)
is trusted when it exists, unless --cacert or -k is given.

Example (after `speedy corpus synth --out ./corpus` and
`speedy serve --listen 127.0.0.1:8080 --archive ./corpus`):
  speedy load https://www.site0.example/ --archive ./corpus --protocol spdy \\
      --resolve '*=127.0.0.1:8080' --har out.har";

/// Arguments of `speedy load`: the URL, or a spec file, and the [`LoadSpec`]'s flags.
#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct LoadArgs {
    /// The page URL (an archived page's root URL).
    #[arg(required_unless_present_any = ["spec", "print_spec"])]
    url: Option<String>,
    /// Read the whole load from FILE instead of flags: the same options as JSON (or TOML
    /// for a `.toml` name; `-` reads JSON from standard input), named as the flags with
    /// `_` for `-` (`"protocol": "h2"`, `"partition": false` for --no-partition) plus
    /// `"url"`. `--print-spec` writes one.
    #[arg(long, value_name = "FILE", exclusive = true)]
    spec: Option<PathBuf>,
    /// Print the load's spec as JSON (every option, defaults filled in) and exit.
    #[arg(long)]
    print_spec: bool,
    #[command(flatten)]
    opts: LoadSpec,
}

impl LoadArgs {
    /// The load asked for: the spec file, or the flags with the URL.
    fn spec(&self) -> Result<LoadSpec> {
        if let Some(p) = &self.spec {
            return LoadSpec::read(p).map_err(anyhow::Error::msg);
        }
        let mut s = self.opts.clone();
        s.url = self.url.clone().unwrap_or_default();
        Ok(s)
    }
}

/// The exit status of a finished load (see [`EXIT_OK`] and the others), with what went
/// wrong said on stderr.
fn outcome(res: &loader::LoadResult, fail: bool) -> u8 {
    let root = res
        .reqs
        .iter()
        .find(|r| matches!(r.initiator, loader::Initiator::Root));
    let why = |r: &loader::Req| speedy_browser::report::FailedRequest::of(r).reason();
    match root {
        Some(r) if !r.done() && res.timed_out => {
            eprintln!(
                "speedy load: the load timed out (see --timeout) before the root document {} \
                 arrived",
                r.url_s
            );
            return EXIT_PAGE_FAILED;
        }
        Some(r) if r.failed() => {
            eprintln!(
                "speedy load: the page's root document failed: {}: {}",
                r.url_s,
                why(r)
            );
            return EXIT_PAGE_FAILED;
        }
        None => {
            eprintln!("speedy load: the page's root document was never requested");
            return EXIT_PAGE_FAILED;
        }
        Some(_) => {}
    }
    if res.timed_out {
        eprintln!("speedy load: the load timed out (see --timeout)");
        return EXIT_PAGE_FAILED;
    }
    let failed: Vec<&loader::Req> = res.reqs.iter().filter(|r| r.failed()).collect();
    if failed.is_empty() {
        return EXIT_OK;
    }
    eprintln!(
        "speedy load: {} of {} requests failed{}",
        failed.len(),
        res.reqs.len(),
        if fail { " (fatal with --fail)" } else { "" }
    );
    for r in failed.iter().take(10) {
        eprintln!("  {}: {}", r.url_s, why(r));
    }
    if failed.len() > 10 {
        eprintln!("  ... and {} more (see the JSON line)", failed.len() - 10);
    }
    if fail {
        EXIT_PARTIAL
    } else {
        EXIT_OK
    }
}

/// Runs one load; returns the exit status (see the `EXIT_*` constants).
pub async fn run(args: LoadArgs) -> Result<u8> {
    let a = args.spec()?;
    if args.print_spec {
        println!("{}", serde_json::to_string_pretty(&a)?);
        return Ok(EXIT_OK);
    }
    let cfg = a.config().map_err(anyhow::Error::msg)?;
    let archive = match &a.archive {
        // The object list only: the replay server serves the bodies.
        Some(dir) => Some(speedy_archive::Archive::load_objects(dir).map_err(anyhow::Error::msg)?),
        None => None,
    };
    for url in std::iter::once(&a.url).chain(&a.then) {
        let Some(ar) = &archive else { break };
        let want = speedy_browser::url::Url::parse(url).map(|u| u.to_string());
        let known = ar.pages.iter().any(|p| {
            ar.objects
                .get(p.root)
                .and_then(|o| speedy_browser::url::Url::parse(&o.url))
                .map(|u| u.to_string())
                == want
        });
        if !known {
            eprintln!(
                "speedy load: warning: {} is not the root of a page of the archive; \
                 loading without the page's object list",
                url
            );
        }
    }
    let urls = a.urls();
    let think = std::time::Duration::from_millis(a.think_ms);
    let pages = loader::load_session(&cfg, archive.as_ref(), &urls, think).await?;
    if let Some(out) = &a.har {
        let mut h = report::session_har(&pages);
        if a.transport == speedy_net::Carrier::Sctp {
            h.log.sctp = Some(speedy_net::sctp::counters::totals());
        }
        har::write(&h, out).with_context(|| format!("--har {}", out.display()))?;
    }
    if let Some(p) = &a.prefetch {
        prefetch::remember(p, &pages[0]).map_err(anyhow::Error::msg)?;
    }
    let mut out = std::io::stdout().lock();
    for res in &pages {
        writeln!(out, "{}", serde_json::to_string(&report::summary(res))?)?;
    }
    out.flush()?;
    // The worst outcome of the visits: a failed page before a partial one.
    let codes: Vec<u8> = pages.iter().map(|r| outcome(r, a.fail)).collect();
    Ok([EXIT_PAGE_FAILED, EXIT_PARTIAL]
        .into_iter()
        .find(|c| codes.contains(c))
        .unwrap_or(EXIT_OK))
}
