//! Subcommands of the `speedy` program, one module each.
use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub mod bench;
pub mod corpus;
pub mod docs;
pub mod fetch;
pub mod kube;
pub mod lab;
pub mod link;
pub mod load;
pub mod proxy;
pub mod serve;

/// speedy: a SPDY toolkit and web-latency lab.
#[derive(Parser, Debug)]
#[command(name = "speedy", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size difference between variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Command {
    /// Serve a directory or a page archive over SPDY/3.1, 3, 2, HTTP/2 and HTTP/1.1 on one
    /// port (TCP or TLS).
    Serve(serve::ServeArgs),
    /// Fetch URLs over SPDY (3.1, 3, 2), HTTP/2 or HTTP/1.1, one JSON line per response.
    Fetch(fetch::FetchArgs),
    /// A forward proxy: SPDY/3.1 (as Chrome's SPDY proxy), HTTP/1.1 and h2 to clients,
    /// pooled HTTP/1.1 or SPDY connections to origins.
    Proxy(proxy::ProxyArgs),
    /// Kubernetes' exec and port-forward streams over SPDY/3.1 (Upgrade), as kubectl.
    Kube(kube::KubeArgs),
    /// Run a command behind an emulated network link (rate, delay, loss, queue, radio).
    Link(link::LinkArgs),
    /// Load-test a server over SPDY, HTTP/1.1 or HTTP/2 (like h2load).
    Bench(bench::BenchArgs),
    /// Run lab experiments (pages × networks × protocol variants) and write the report.
    Lab(lab::LabArgs),
    /// Load a page like a browser (HTTP/1.1, SPDY or HTTP/2) and write HAR.
    Load(load::LoadArgs),
    /// Make page archives (synthetic, or imported from HAR and WARC) and export them as HAR.
    Corpus(corpus::CorpusArgs),
    /// Print a shell completion script (bash, zsh, fish).
    Completions(docs::CompletionsArgs),
    /// Print the man page, or write one per subcommand into a directory.
    Man(docs::ManArgs),
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn report(r: anyhow::Result<bool>, cmd: &str) -> ExitCode {
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("speedy {cmd}: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Like [`report`], for commands that choose their exit status themselves.
fn report_status(r: anyhow::Result<u8>, cmd: &str) -> ExitCode {
    match r {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("speedy {cmd}: {e:#}");
            ExitCode::from(2)
        }
    }
}

impl Cli {
    /// Runs the chosen subcommand and returns the process exit code.
    pub fn run(self) -> ExitCode {
        match self.command {
            Command::Serve(a) => report(
                runtime().block_on(async { serve::run(a).await.map(|_| true) }),
                "serve",
            ),
            Command::Fetch(a) => report_status(runtime().block_on(fetch::run(a)), "fetch"),
            Command::Proxy(a) => report(
                runtime().block_on(async { proxy::run(a).await.map(|_| true) }),
                "proxy",
            ),
            Command::Kube(a) => report_status(runtime().block_on(kube::run(a)), "kube"),
            Command::Link(a) => link::run(a),
            Command::Lab(a) => lab::run_cmd(a),
            Command::Bench(a) => report(bench::run(a), "bench"),
            Command::Load(a) => report_status(runtime().block_on(load::run(a)), "load"),
            Command::Corpus(a) => corpus::run(a),
            Command::Completions(a) => report(docs::completions(a).map(|_| true), "completions"),
            Command::Man(a) => report(docs::man(a).map(|_| true), "man"),
        }
    }
}
