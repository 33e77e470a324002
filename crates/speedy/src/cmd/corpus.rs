//! `speedy corpus`: make page archives (synthetic, or imported from HAR, WARC, Web Page
//! Replay and Mahimahi) and export them as HAR, Mahimahi or Web Page Replay. The archive
//! format is documented in `docs/archive.md`.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use speedy_archive::import::{import_file, Imported};
use speedy_archive::synth::{calibration, synthesize_calibrated, SynthOptions};
use speedy_archive::Archive;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod record;

/// Arguments of `speedy corpus`.
#[derive(Args, Debug)]
pub struct CorpusArgs {
    #[command(subcommand)]
    command: CorpusCommand,
}

#[derive(Subcommand, Debug)]
enum CorpusCommand {
    /// Generate synthetic pages calibrated to the lab's page statistics.
    Synth(SynthArgs),
    /// Import a HAR (1.1/1.2), WARC (plain or gzip), Web Page Replay archive (.wprgo) or
    /// Mahimahi recording (a directory) as an archive.
    Import(ImportArgs),
    /// Write an archive as HAR 1.2, a Mahimahi recording or a Web Page Replay archive.
    Export(ExportAsArgs),
    /// Write an archive as HAR 1.2 (the same as `export --format har`).
    ExportHar(ExportArgs),
    /// Record live pages into an archive through a recording proxy, with headless
    /// Chromium (or --loader).
    Record(record::RecordArgs),
}

/// Arguments of `speedy corpus synth`.
#[derive(Args, Debug)]
#[command(
    after_help = "Calibrations (page statistics copied, never load times):\n  \
cellular-2013  the cellular study's 20 pages, 2013 (the default; ~1.2 MB, ~130 objects)\n  \
web-2010       Google's web metrics, 2010: 320 KB, 44 resources, 7 hosts (the whitepaper's era)\n  \
web-2025       HTTP Archive Web Almanac 2024 median page: 2.6 MB, 71 requests\n\n\
Examples:\n  speedy corpus synth --out ./corpus --pages 25 --seed 1\n  \
speedy corpus synth --out ./corpus-2010 --pages 25 --calibration web-2010"
)]
struct SynthArgs {
    /// Archive directory to write (archive.json and bodies/).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Number of pages (at least 1).
    #[arg(long, default_value_t = 25, value_name = "N")]
    pages: usize,
    /// Seed: the same seed gives the same corpus, byte for byte.
    #[arg(long, default_value_t = 1, value_name = "S")]
    seed: u64,
    /// Page statistics to copy: cellular-2013, web-2010 or web-2025 (sources in --help).
    #[arg(long, default_value = "cellular-2013", value_name = "NAME")]
    calibration: String,
}

/// Arguments of `speedy corpus import`.
#[derive(Args, Debug)]
#[command(
    after_help = "The format is told by the content: a directory is a Mahimahi recording (every \
file in it one RequestResponse record); gzip data is a WARC when it holds `WARC/`, else a Web \
Page Replay archive (JSON with `Requests`); plain data is a WARC, a WPR archive (JSON with \
`Requests`) or a HAR (JSON with `log`). Parents and discovery come from _initiator, else from \
references in the recorded bodies, else from the recorded timings (docs/archive.md).\n\n\
Examples:\n  speedy corpus import page.har --out ./archive\n  \
speedy corpus import crawl.warc.gz --out ./archive-warc\n  \
speedy corpus import page.wprgo --out ./archive-wpr\n  \
speedy corpus import ./recording --out ./archive-mahimahi"
)]
struct ImportArgs {
    /// HAR, WARC or WPR file, or Mahimahi recording directory.
    #[arg(value_name = "PATH")]
    file: PathBuf,
    /// Archive directory to write.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Do not print the import's warnings (skipped or repaired entries).
    #[arg(long)]
    quiet: bool,
}

/// The formats `speedy corpus export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ExportFormat {
    /// HAR 1.2 (a JSON file).
    Har,
    /// A Mahimahi recording: a new or empty directory, one RequestResponse file per object.
    Mahimahi,
    /// A Web Page Replay archive: gzip-compressed JSON (.wprgo).
    Wpr,
}

/// Arguments of `speedy corpus export`.
#[derive(Args, Debug)]
#[command(
    after_help = "Mahimahi records carry each object's recorded server address, else a made-up \
one in 10.0.0.0/8 per host; WPR archives carry the recorded protocol per host and no \
certificates (`Certs` is empty). Bodies are the stored bytes, content coding kept \
(docs/archive.md).\n\n\
Examples:\n  speedy corpus export ./archive --format har --out archive.har\n  \
speedy corpus export ./archive --format mahimahi --out ./archive-recording\n  \
speedy corpus export ./archive --format wpr --out archive.wprgo"
)]
struct ExportAsArgs {
    /// Archive directory.
    #[arg(value_name = "ARCHIVE_DIR")]
    dir: PathBuf,
    /// What to write: har, mahimahi or wpr.
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: ExportFormat,
    /// File (har, wpr) or directory (mahimahi) to write.
    #[arg(long, value_name = "PATH")]
    out: PathBuf,
}

/// Arguments of `speedy corpus export-har`.
#[derive(Args, Debug)]
#[command(after_help = "Example:\n  speedy corpus export-har ./archive --out archive.har")]
struct ExportArgs {
    /// Archive directory.
    #[arg(value_name = "ARCHIVE_DIR")]
    dir: PathBuf,
    /// HAR file to write.
    #[arg(long, value_name = "FILE.har")]
    out: PathBuf,
}

/// `N pages, M objects, B bytes, D domains`.
pub fn summary(a: &Archive) -> String {
    let bytes: usize = a.objects.iter().map(|o| o.body.size()).sum();
    let domains: HashSet<String> = a
        .objects
        .iter()
        .filter_map(|o| spdy::url::Url::parse(&o.url).map(|u| u.authority()))
        .collect();
    format!(
        "{} pages, {} objects, {} bytes, {} domains",
        a.pages.len(),
        a.objects.len(),
        bytes,
        domains.len()
    )
}

fn save(a: &Archive, out: &Path) -> Result<()> {
    a.save(out)
        .with_context(|| format!("writing the archive to {}", out.display()))
}

fn synth(a: SynthArgs) -> Result<()> {
    if a.pages == 0 {
        anyhow::bail!("--pages 0: an archive needs at least 1 page");
    }
    let cal = calibration(&a.calibration).map_err(|e| anyhow::anyhow!("--calibration: {e}"))?;
    let archive = synthesize_calibrated(
        SynthOptions {
            pages: a.pages,
            seed: a.seed,
        },
        cal,
    );
    save(&archive, &a.out)?;
    println!("{}: {}", a.out.display(), summary(&archive));
    Ok(())
}

fn import(a: ImportArgs) -> Result<()> {
    let Imported {
        archive,
        warnings,
        sources,
    } = import_file(&a.file)?;
    save(&archive, &a.out)?;
    if !a.quiet {
        for w in &warnings {
            eprintln!("speedy corpus import: {}: {w}", a.file.display());
        }
    }
    let how: Vec<String> = sources.iter().map(|(k, n)| format!("{n} {k}")).collect();
    println!(
        "{}: {} (discovery from: {})",
        a.out.display(),
        summary(&archive),
        if how.is_empty() {
            "roots only".to_string()
        } else {
            how.join(", ")
        }
    );
    Ok(())
}

fn export(a: ExportArgs) -> Result<()> {
    export_as(ExportAsArgs {
        dir: a.dir,
        format: ExportFormat::Har,
        out: a.out,
    })
}

fn export_as(a: ExportAsArgs) -> Result<()> {
    use speedy_archive::export_replay::{export_mahimahi, export_wpr};
    let (what, w) = match a.format {
        ExportFormat::Har => {
            let har = speedy_archive::export::export_har(&a.dir, &a.out)?;
            let entries = har["log"]["entries"].as_array().map_or(0, Vec::len);
            let pages = har["log"]["pages"].as_array().map_or(0, Vec::len);
            println!(
                "{}: HAR 1.2, {pages} pages, {entries} entries",
                a.out.display()
            );
            return Ok(());
        }
        ExportFormat::Mahimahi => ("Mahimahi recording", export_mahimahi(&a.dir, &a.out)?),
        ExportFormat::Wpr => ("Web Page Replay archive", export_wpr(&a.dir, &a.out)?),
    };
    println!(
        "{}: {what}, {} records, {} hosts",
        a.out.display(),
        w.records,
        w.hosts
    );
    Ok(())
}

/// Runs `speedy corpus …`; errors name the file (and the entry) and exit with 2.
pub fn run(a: CorpusArgs) -> ExitCode {
    let (name, r) = match a.command {
        CorpusCommand::Synth(x) => ("synth", synth(x)),
        CorpusCommand::Import(x) => ("import", import(x)),
        CorpusCommand::Export(x) => ("export", export_as(x)),
        CorpusCommand::ExportHar(x) => ("export-har", export(x)),
        CorpusCommand::Record(x) => ("record", record::run(x)),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("speedy corpus {name}: {e:#}");
            ExitCode::from(2)
        }
    }
}
