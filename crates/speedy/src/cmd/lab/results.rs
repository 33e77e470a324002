//! The subcommands of `speedy lab` that read a run's results: `report`, `compare` and
//! `export`.

use anyhow::Result;
use clap::Args;
use std::path::{Path, PathBuf};

/// Arguments of `speedy lab compare`.
#[derive(Args, Debug)]
pub(super) struct CompareArgs {
    /// The reference: a results directory (holding results.jsonl) or a results file.
    #[arg(value_name = "A")]
    a: PathBuf,
    /// The result set compared with it.
    #[arg(value_name = "B")]
    b: PathBuf,
    /// Print the comparison as one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Compare result sets of different experiments.
    #[arg(long)]
    any_experiment: bool,
}

/// Arguments of `speedy lab export`.
#[derive(Args, Debug)]
pub(super) struct ExportArgs {
    /// A results directory (results.jsonl and the HARs it names).
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Where the tables go (default: DIR/export).
    #[arg(long, value_name = "OUT")]
    out: Option<PathBuf>,
    /// csv or parquet.
    #[arg(long, default_value = "csv", value_name = "FORMAT")]
    format: speedy_lab::export::Format,
}

/// `speedy lab export DIR`.
pub(super) fn export(e: ExportArgs) -> Result<()> {
    let out = e.out.unwrap_or_else(|| e.dir.join("export"));
    let done = speedy_lab::export::export(&e.dir, &out, e.format).map_err(anyhow::Error::msg)?;
    println!("{done}");
    Ok(())
}

/// `speedy lab compare A B`.
pub(super) fn compare(c: CompareArgs) -> Result<()> {
    let cmp =
        speedy_lab::compare::compare(&c.a, &c.b, c.any_experiment).map_err(anyhow::Error::msg)?;
    if c.json {
        println!("{}", serde_json::to_string_pretty(&cmp)?);
    } else {
        print!("{}", cmp.text());
    }
    Ok(())
}

/// Writes DIR/report.html, then prints the summary table (the report's own numbers) and
/// the report's `file://` URL.
pub(super) fn write_report(dir: &Path) -> Result<()> {
    let html = dir.join("report.html");
    let stats = speedy_lab::report::write_report(&dir.join("results.jsonl"), &html)
        .map_err(anyhow::Error::msg)?;
    println!();
    print!("{}", speedy_lab::report::summary_text(&stats));
    let abs = html.canonicalize().unwrap_or(html);
    println!("report: {}", speedy_lab::report::file_url(&abs));
    Ok(())
}
