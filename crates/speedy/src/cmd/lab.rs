//! `speedy lab`: run experiments (pages × networks × protocol variants) and report.

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use speedy_lab::runner::{run, RunOptions};
use std::path::PathBuf;
use std::process::ExitCode;

mod results;
mod sst;

use results::write_report;
use sst::{sst, SstArgs};

/// Arguments of `speedy lab`.
#[derive(Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "With no argument, runs the built-in `quick` experiment (a few minutes) and prints \
a summary table and the report's file:// URL. EXPERIMENT is a built-in name (see `speedy lab list`) or a TOML file \
(format: docs/lab.md). Needs root: every load runs in network namespaces behind the link \
emulator. An interrupted run resumes where it stopped when started again with the same --out."
)]
pub struct LabArgs {
    #[command(subcommand)]
    cmd: Option<LabCmd>,
    /// A built-in experiment name or an experiment file.
    #[arg(value_name = "EXPERIMENT")]
    experiment: Option<String>,
    /// Output directory (default: lab-out/NAME).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Loads to run in parallel, each on its own namespace pair and link: a number, or
    /// `auto` (the default: 4 per CPU core at first, then as many as the machine keeps up with,
    /// judged by its CPU, how late threads wake and each load's headroom; said on stderr).
    #[arg(long, default_value = "auto", value_name = "N|auto")]
    lanes: String,
    /// Run only shard I of N (0-based), for batch schedulers; combine with `speedy lab merge`.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Do not write report.html at the end.
    #[arg(long)]
    no_report: bool,
    #[command(flatten)]
    size: SizeArgs,
    /// The Chromium program, for variants with client = "chromium".
    #[arg(long, default_value = "chromium", value_name = "PROGRAM")]
    chromium: PathBuf,
}

#[derive(Subcommand, Debug)]
enum LabCmd {
    /// List the built-in experiments with their size and expected duration.
    List,
    /// Merge the results of shards (directories or results files) into one directory.
    Merge {
        /// Shard output directories or results files.
        #[arg(required = true, value_name = "DIR")]
        inputs: Vec<PathBuf>,
        /// Where the merged results (and report) go.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Write report.html from a results directory, and print its summary table and
    /// file:// URL.
    Report {
        /// Directory holding results.jsonl.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Compare two result sets of an experiment (before and after a change, this kernel
    /// and that one): per network × variant, the change of load time from A to B over the
    /// pages both ran, with its 95% interval, a permutation test's p-value and a verdict,
    /// and the recorded conditions that differ (build, seed, kernel, congestion control,
    /// the variants' knobs).
    #[command(after_help = "Examples:\n  \
speedy lab compare lab-out/quick lab-out/quick-after\n  \
speedy lab compare a/results.jsonl b/results.jsonl --json > change.json\n\n\
Results of different experiments are refused unless --any-experiment.")]
    Compare(results::CompareArgs),
    /// Write a results directory as two flat tables for pandas, R or DuckDB: loads (one
    /// record per load, a column per field of its row) and objects (one per HAR entry);
    /// CSV or Parquet, every column's type and unit in docs/export.md.
    #[command(after_help = "Examples:\n  \
speedy lab export lab-out/quick\n  \
speedy lab export lab-out/quick --format parquet --out /tmp/quick-tables\n\n\
A worked example with DuckDB: docs/examples/export_duckdb.py.")]
    Export(results::ExportArgs),
    /// Fidelity check: an experiment whose variants come in pairs, each protocol loaded by
    /// the loader and by headless Chromium (HTTP/1.1, h2 and h3, all over TLS), run by the
    /// lab's runner; prints the agreement table (per network, pages and protocol, the
    /// loader's onLoad over Chromium's: geometric mean over pages, worst page) and writes
    /// DIR/validate.json beside the results and report.
    #[command(
        after_help = "EXPERIMENT's pages, networks, runs and seed are kept and its variants replaced by the pairs (an experiment that has Chromium variants already runs as it is). `all` is the built-in `validate` experiment: pages of 2010, 2013 and 2025 on the whitepaper's DSL and cable lines, 3G and the Verizon LTE trace with their radios. Needs root (network namespaces) and Chromium (Debian: apt-get install chromium). See docs/lab.md.\n\nExamples:\n  \
sudo speedy lab validate\n  \
sudo speedy lab validate all --out /tmp/validate-all\n  \
sudo speedy lab validate docs/validate/holdout.toml --runs 2\n  \
sudo speedy lab validate all --seed 2 --out /tmp/validate-seed2\n  \
sudo speedy lab validate all --network lte-trace --out /tmp/validate-lte"
    )]
    Validate(ValidateArgs),
    /// SST's experiments through a 1.5 Mbit/s link. Fig 7: transaction time against
    /// response size, one UDP datagram each way and a new TCP connection per transaction
    /// against a new SPDY, h2 or h3 stream on a warm connection (DIR/fig7.html). Fig 8: page loads (web-2010 corpus)
    /// under HTTP/1.0 serial and parallel, HTTP/1.1 persistent and pipelined, and a
    /// stream per object over SPDY, h2 and h3 (DIR/fig8.html). Fig 9, dynamic reprioritization:
    /// three downloads on one connection, a high-priority third at 5 s, a swap at 10 s,
    /// bytes over time per request (DIR/sst.html). Tables printed.
    #[command(
        after_help = "Needs root (network namespaces). Fig 9: SPDY uses speedy's PRIORITY extension \
frame (docs/spdy-priority.md), h2 and h3 RFC 9218's PRIORITY_UPDATE. \
The defaults (all three figures) take about 9 minutes.\n\nExamples:\n  \
sudo speedy lab sst\n  \
sudo speedy lab sst --figures 8 --pages 3 --flavours http1.0-serial,http1.1-pipelined,h2\n  \
sudo speedy lab sst --figures 9 --protocols h2 --size 1000000 --out /tmp/sst\n  \
sudo speedy lab sst --figures 7 --sizes 32,16384,1048576 --reps 1"
    )]
    Sst(SstArgs),
    /// Remove what labs that are gone left behind: the network namespaces (`lk<pid>-…`,
    /// a client and a server side per lane) of a lab killed with SIGKILL or crashed, whose
    /// process no longer runs. A lab removes its own when it ends, even on Ctrl-C, and the
    /// next lab removes stale ones before it starts; this does it on demand. Namespaces of
    /// labs still running are listed and left alone.
    #[command(
        after_help = "Needs root. Its servers, proxies and browsers die with the lab (they are started with the parent-death signal), so the namespaces are all that is left.\n\nExample:\n  sudo speedy lab clean"
    )]
    Clean,
}

/// Runs `speedy lab`.
pub fn run_cmd(a: LabArgs) -> ExitCode {
    match lab(a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("speedy lab: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn lab(mut a: LabArgs) -> Result<()> {
    match a.cmd.take() {
        Some(LabCmd::List) => {
            // Expected times at the lanes `--lanes auto` starts with, Chromium's loads
            // taking their CPU share of them.
            let cores = speedy_lab::runner::cores();
            let lanes = speedy_lab::runner::auto_lanes(cores);
            let chromium_lanes = lanes / speedy_lab::runner::chromium_share(lanes, cores);
            let table = speedy_lab::experiment::built_ins_table(lanes, chromium_lanes);
            print!("{}", table.map_err(anyhow::Error::msg)?);
            Ok(())
        }
        Some(LabCmd::Merge { inputs, out }) => {
            let n = speedy_lab::merge::merge(&inputs, &out).map_err(anyhow::Error::msg)?;
            println!(
                "merged {n} loads into {}",
                out.join("results.jsonl").display()
            );
            write_report(&out)
        }
        Some(LabCmd::Report { dir }) => write_report(&dir),
        Some(LabCmd::Validate(v)) => validate(v),
        Some(LabCmd::Sst(s)) => sst(s),
        Some(LabCmd::Clean) => clean(),
        Some(LabCmd::Compare(c)) => results::compare(c),
        Some(LabCmd::Export(e)) => results::export(e),
        None => run_experiment(&a),
    }
}

/// `speedy lab clean`: removes the namespaces of labs that are gone, names those left.
fn clean() -> Result<()> {
    use linkem::io::netns;
    let before = netns::survey();
    let removed = netns::remove_stale();
    for name in &removed {
        println!("removed {name}");
    }
    let mut failed = 0;
    for (name, pid, alive) in netns::survey() {
        if alive {
            println!("left {name}: its lab (pid {pid}) is running");
        } else {
            eprintln!("speedy lab clean: could not remove {name} (try: ip netns del {name})");
            failed += 1;
        }
    }
    println!(
        "{} namespaces of labs that are gone removed, {} of running labs left",
        removed.len(),
        before.len() - removed.len() - failed
    );
    if failed > 0 {
        anyhow::bail!("{failed} namespaces could not be removed (is this root?)");
    }
    Ok(())
}

/// Arguments of `speedy lab validate`.
#[derive(Args, Debug)]
struct ValidateArgs {
    /// A built-in experiment name, an experiment file, or `all` (default: quick).
    #[arg(value_name = "EXPERIMENT")]
    experiment: Option<String>,
    #[command(flatten)]
    size: SizeArgs,
    /// Output directory (default: lab-out/NAME-validate).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Loads to run in parallel (as `speedy lab --lanes`).
    #[arg(long, default_value = "auto", value_name = "N|auto")]
    lanes: String,
    /// The Chromium program.
    #[arg(long, default_value = "chromium", value_name = "PROGRAM")]
    chromium: PathBuf,
}

/// `speedy lab validate`: the paired experiment through the runner, then its agreement
/// table, `validate.json` and the report.
fn validate(v: ValidateArgs) -> Result<()> {
    let name = match v.experiment.as_deref() {
        None => "quick",
        Some("all") => "validate",
        Some(n) => n,
    };
    let base = speedy_lab::experiment::named(name).map_err(anyhow::Error::msg)?;
    let mut exp = speedy_lab::validate::paired(&base).map_err(anyhow::Error::msg)?;
    let default_out = PathBuf::from("lab-out").join(if exp.name.ends_with("-validate") {
        exp.name.clone()
    } else {
        format!("{}-validate", exp.name)
    });
    override_size(&mut exp, &v.size)?;
    let out = v.out.unwrap_or(default_out);
    let rows = run_rows(&exp, &out, &v.lanes, (0, 1), &v.chromium)?;
    let agreement = speedy_lab::validate::agreement::agreement(&rows);
    print!("{}", speedy_lab::report::agreement_text(&agreement));
    let path = out.join("validate.json");
    let json = serde_json::to_vec_pretty(&agreement)?;
    std::fs::write(&path, json).with_context(|| format!("writing {}", path.display()))?;
    println!("validate: {}", path.display());
    write_report(&out)
}

/// What may be changed of an experiment from the command line: its size and its seed.
#[derive(Args, Debug)]
struct SizeArgs {
    /// Override the experiment's number of runs (e.g. a reduced run of a built-in).
    #[arg(long, value_name = "N")]
    runs: Option<u32>,
    /// Override the number of synthesized pages.
    #[arg(long, value_name = "N")]
    pages: Option<usize>,
    /// Override the experiment's seed: other synthesized pages and other link loss and
    /// trace offsets (a held-out set for a check no change was tuned against).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Run only this network of the experiment (by its name in the summary; repeat for
    /// several), e.g. one network of a built-in.
    #[arg(long = "network", value_name = "NAME")]
    networks: Vec<String>,
}

/// `--runs`, `--pages`, `--seed` and `--network` on an experiment.
fn override_size(exp: &mut speedy_lab::experiment::Experiment, size: &SizeArgs) -> Result<()> {
    if let Some(seed) = size.seed {
        exp.seed = seed;
    }
    if !size.networks.is_empty() {
        let names: Vec<&str> = exp.networks.iter().map(|n| n.name.as_str()).collect();
        if let Some(bad) = size.networks.iter().find(|n| !names.contains(&n.as_str())) {
            bail!(
                "--network {bad}: {} has no such network (it has: {})",
                exp.name,
                names.join(", ")
            );
        }
        exp.networks.retain(|n| size.networks.contains(&n.name));
    }
    if let Some(r) = size.runs {
        if r == 0 {
            bail!("--runs must be at least 1");
        }
        exp.runs = r;
    }
    if let Some(p) = size.pages {
        match &mut exp.pages {
            speedy_lab::experiment::Pages::Synth(n, _) if p > 0 => *n = p,
            speedy_lab::experiment::Pages::Synth(..) => bail!("--pages must be at least 1"),
            _ => bail!("--pages applies to synthesized pages only"),
        }
    }
    Ok(())
}

/// Runs (or resumes) `exp` into `out` with the runner; returns the rows written.
fn run_rows(
    exp: &speedy_lab::experiment::Experiment,
    out: &std::path::Path,
    lanes: &str,
    shard: (usize, usize),
    chromium: &std::path::Path,
) -> Result<Vec<speedy_lab::results::Row>> {
    let lanes = speedy_lab::runner::lanes(lanes).map_err(anyhow::Error::msg)?;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("the lab needs root (network namespaces and TUN devices); run it with sudo");
    }
    let speedy = std::env::current_exe().context("finding the speedy program")?;
    let opts = RunOptions {
        out: out.to_path_buf(),
        lanes,
        shard,
        speedy,
        chromium: chromium.to_path_buf(),
    };
    let results = run(exp, &opts).map_err(anyhow::Error::msg)?;
    println!("results: {}", results.display());
    speedy_lab::results::read_rows(&results).map_err(anyhow::Error::msg)
}

/// `speedy lab [EXPERIMENT]`: runs (or resumes) an experiment and writes its report.
fn run_experiment(a: &LabArgs) -> Result<()> {
    let name = a.experiment.clone().unwrap_or_else(|| "quick".into());
    let mut exp = speedy_lab::experiment::named(&name).map_err(anyhow::Error::msg)?;
    let default_out = PathBuf::from("lab-out").join(&exp.name);
    override_size(&mut exp, &a.size)?;
    let shard = match &a.shard {
        None => {
            match speedy_lab::shard::from_env(|k| std::env::var(k).ok())
                .map_err(anyhow::Error::msg)?
            {
                Some((i, n, from)) => {
                    eprintln!("speedy lab: shard {i}/{n} (0-based) from {from}");
                    (i, n)
                }
                None => (0, 1),
            }
        }
        Some(s) => speedy_lab::shard::parse(s).map_err(anyhow::Error::msg)?,
    };
    let out = a.out.clone().unwrap_or(default_out);
    run_rows(&exp, &out, &a.lanes, shard, &a.chromium)?;
    if !a.no_report && shard.1 == 1 {
        write_report(&out)?;
    }
    Ok(())
}
