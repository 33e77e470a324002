//! `speedy lab sst`: SST's Figs 7, 8 and 9.

use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::PathBuf;

/// Arguments of `speedy lab sst`.
#[derive(Args, Debug)]
pub(super) struct SstArgs {
    /// Output directory (default: lab-out/sst).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Figures to run, comma-separated: 7, 8 and 9.
    #[arg(
        long,
        default_value = "7,8,9",
        value_delimiter = ',',
        value_name = "LIST"
    )]
    figures: Vec<u32>,
    /// Fig 9's protocols, comma-separated: spdy/3.1, h2 and h3.
    #[arg(
        long,
        default_value = "spdy/3.1,h2,h3",
        value_delimiter = ',',
        value_name = "LIST"
    )]
    protocols: Vec<String>,
    /// Fig 9's bytes per download (the paper: 1.5 MB).
    #[arg(long, default_value_t = 1_500_000, value_name = "BYTES")]
    size: usize,
    /// Fig 7's response sizes in bytes, comma-separated (default 32 B to 2 MiB).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    sizes: Vec<usize>,
    /// Fig 7's transactions per size and variant (the median is reported).
    #[arg(long, default_value_t = 3, value_name = "N")]
    reps: usize,
    /// Fig 8's pages (synthetic, web-2010 calibration).
    #[arg(long, default_value_t = 10, value_name = "N")]
    pages: usize,
    /// Fig 8's flavours, comma-separated: http1.0-serial, http1.0-parallel,
    /// http1.1-persistent, http1.1-pipelined, spdy/3.1, h2, h3 (default all).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    flavours: Vec<String>,
}

/// `speedy lab sst`.
pub(super) fn sst(a: SstArgs) -> Result<()> {
    let SstArgs {
        out,
        figures,
        protocols,
        size,
        sizes,
        reps,
        pages,
        flavours,
    } = a;
    speedy_lab::sst::Choice {
        figures: &figures,
        protocols: &protocols,
        size,
        sizes: &sizes,
        reps,
        pages,
        flavours: &flavours,
    }
    .check()
    .map_err(anyhow::Error::msg)?;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("sst needs root (network namespaces and TUN devices); run it with sudo");
    }
    let speedy = std::env::current_exe().context("finding the speedy program")?;
    let out = out.unwrap_or_else(|| PathBuf::from("lab-out").join("sst"));
    if figures.contains(&7) {
        let mut o = speedy_lab::sst::Fig7Options::paper(speedy.clone(), out.clone());
        if !sizes.is_empty() {
            o.sizes = sizes;
        }
        o.reps = reps;
        let r = speedy_lab::sst::fig7(&o).map_err(anyhow::Error::msg)?;
        println!("Fig 7:");
        print!("{}", speedy_lab::sst::fig7_table(&r));
        let html = o.out.join("fig7.html");
        println!("report: {}", speedy_lab::report::file_url(&html));
    }
    if figures.contains(&8) {
        let mut o = speedy_lab::sst::Fig8Options::paper(speedy.clone(), out.clone());
        o.pages = pages;
        if !flavours.is_empty() {
            o.flavours = flavours;
        }
        let r = speedy_lab::sst::fig8(&o).map_err(anyhow::Error::msg)?;
        println!("Fig 8:");
        print!("{}", speedy_lab::sst::fig8_table(&r));
        let html = o.out.join("fig8.html");
        println!("report: {}", speedy_lab::report::file_url(&html));
    }
    if figures.contains(&9) {
        let mut o = speedy_lab::sst::Fig9Options::paper(speedy, out);
        o.protocols = protocols;
        o.size = size;
        let runs = speedy_lab::sst::fig9(&o).map_err(anyhow::Error::msg)?;
        println!("Fig 9:");
        print!("{}", speedy_lab::sst::table(&runs));
        let html = o.out.join("sst.html");
        println!("report: {}", speedy_lab::report::file_url(&html));
    }
    Ok(())
}
