//! `speedy fetch`: fetch URLs over one session per origin (like curl or spdycat) and
//! print one JSON line per response. The engine is [`speedy_net::fetch`] and the flags are
//! its [`FetchSpec`]'s; this file reads the spec, runs it and prints what it reports.

use anyhow::{anyhow, Context, Result};
use clap::Args;
use speedy_net::client::LogKind;
use speedy_net::fetch::{self, FetchError, FetchSpec, Outcome, Report, Sink};
use speedy_net::fetch_record::FetchLine;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Arguments of `speedy fetch`.
#[derive(Args, Debug)]
#[command(
    after_help = "Prints one JSON line per response: url, status, protocol, bytes, sha256, pushed, \
elapsed_ms (or url and error). When stdout carries response content (`-o -` or -I), the \
JSON lines go to stderr instead.\n\n\
Exit status (as curl's):\n  \
0   every request got a whole response, whatever its HTTP status\n  \
1   some request got none (connection refused, TLS, stream reset, body cut short, no \
progress within --read-timeout)\n  \
2   bad arguments or files\n  \
22  with -f/--fail: some response's status was not 2xx\n  \
28  --max-time ran out\n\n\
Examples (against the servers of `speedy serve --help`'s examples):\n  \
speedy fetch -k https://localhost:8443/a.html https://localhost:8443/b.css\n  \
speedy fetch -k --protocol spdy/3 https://localhost:8443/ -v\n  \
speedy fetch -k --protocol h2 -I https://localhost:8443/a.html\n  \
speedy fetch -k --protocol h3 https://localhost:8443/a.html\n  \
speedy fetch -k --protocol http1 --pipeline --after-first https://localhost:8443/a.html https://localhost:8443/b.css\n  \
speedy fetch -k -o a.html -o - https://localhost:8443/a.html https://localhost:8443/b.css\n  \
speedy fetch --cacert ./corpus/lab-ca/ca.pem \\\n      \
--resolve www.site0.example=127.0.0.1:8080 https://www.site0.example/\n  \
speedy fetch --upgrade http://localhost:8443/a.html"
)]
pub struct FetchArgs {
    /// URLs to fetch (http:// or https://); those of one origin share one session.
    #[arg(required_unless_present_any = ["spec", "print_spec"], value_name = "URL")]
    urls: Vec<String>,
    /// Read the whole fetch from FILE instead of flags: the same options as JSON (or TOML
    /// for a `.toml` name; `-` reads JSON from standard input), named as the long flags
    /// with `_` for `-` (`"protocol": "h2"`, `"crime_safe": false` for --no-crime-safe)
    /// plus `"urls"`. `--print-spec` writes one.
    #[arg(long, value_name = "FILE", exclusive = true)]
    spec: Option<PathBuf>,
    /// Print the fetch's spec as JSON (every option, defaults filled in) and exit.
    #[arg(long)]
    print_spec: bool,
    #[command(flatten)]
    opts: FetchSpec,
}

impl FetchArgs {
    /// The fetch asked for: the spec file, or the flags with the URLs.
    fn spec(&self) -> Result<FetchSpec> {
        if let Some(p) = &self.spec {
            return FetchSpec::read(p).map_err(anyhow::Error::msg);
        }
        let mut s = self.opts.clone();
        s.urls = self.urls.clone();
        Ok(s)
    }
}

/// Runs the command; returns the exit status (see the help).
pub async fn run(args: FetchArgs) -> Result<u8> {
    let a = args.spec()?;
    if args.print_spec {
        println!("{}", serde_json::to_string_pretty(&a)?);
        return Ok(0);
    }
    let mut opts = a.options().map_err(anyhow::Error::msg)?;
    if a.verbose {
        opts.client.log = Some(log());
    }
    let (head, json_to_stderr) = (a.head, a.json_to_stderr());
    let sink: Sink = Arc::new(move |r| print(r, head, json_to_stderr));
    match fetch::fetch(opts, sink).await {
        Ok(Outcome::TimedOut(t)) => {
            eprintln!("speedy fetch: --max-time {t:?} ran out");
            Ok(28)
        }
        Ok(Outcome::Done { all_whole, not_2xx }) => Ok(match (all_whole, a.fail && not_2xx) {
            (false, _) => 1,
            (true, true) => 22,
            (true, false) => 0,
        }),
        Err(e @ FetchError::UpgradeNeedsHttp(_)) => Err(anyhow!("--upgrade: {e}")),
        Err(FetchError::Progress(e)) => Err(e).context("--progress"),
    }
}

/// Prints a report: a JSON line (on stderr when stdout carries content), a head, a note.
fn print(r: Report<'_>, head: bool, json_to_stderr: bool) {
    let lossy = String::from_utf8_lossy;
    let json = |l: &FetchLine| serde_json::to_string(l).expect("a fetch line serializes");
    match r {
        Report::Line(line) if json_to_stderr => eprintln!("{}", json(&line)),
        Report::Line(line) => println!("{}", json(&line)),
        Report::Head(protocol, status, headers) if head => {
            let lines = headers
                .iter()
                .map(|(n, v)| format!("{}: {}\n", lossy(n), lossy(v)));
            println!("{protocol} {status}\n{}", lines.collect::<String>());
        }
        Report::Head(..) => {}
        Report::Upgraded(o, p) => eprintln!("* {o}: upgraded to SPDY/3.1, stream protocol {p}"),
        Report::ReprioritizeFailed(e) => eprintln!("speedy fetch: --reprioritize: {e}"),
    }
}

/// -v: frames and heads, sent (>) and received (<), and other news (*) on stderr, with
/// seconds since start.
fn log() -> speedy_net::client::FrameLog {
    let t0 = Instant::now();
    Arc::new(move |kind, line| {
        let mark = match kind {
            LogKind::Sent => ">",
            LogKind::Received => "<",
            LogKind::Info => "*",
        };
        eprintln!("[{:8.3}] {mark} {line}", t0.elapsed().as_secs_f64())
    })
}
