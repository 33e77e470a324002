//! The report: one self-contained `report.html` (inline CSS, inline SVG drawn here, no
//! script, nothing fetched) from a results file and the HARs it points to.
//!
//! Sections: summary (mean onLoad ± 95% CI, speedup and mean change per network ×
//! variant, under a reading guide; [`summary_text`] is its terminal form), the
//! conditions of each variant, the whitepaper's tables beside the measured ones and the
//! factor chain when the rows have them ([`era`]), speedup
//! per page, the per-page scatter of the baseline against each other variant, box plots
//! per page, CDFs, the loader's agreement with Chromium where variants come in pairs of
//! clients, First and Largest Contentful Paint of the variants Chromium loaded,
//! sweeps (tables and lines against loss or RTT), the split of object
//! time into HAR phases, packets and bytes per load, header compression, one waterfall
//! per page and variant (each linking its HAR file when it exists), what the lab cannot
//! model, and notes (unreadable HARs, loads
//! without onLoad, failed objects). Statistics are those of [`crate::stats`].
//!
//! Per-page and per-protocol charts are drawn for the *main* networks: those that are
//! not points of a sweep (all networks when every network is a sweep point).

pub(crate) mod agreement;
mod cellular;
mod charts;
mod dist;
mod era;
mod har;
mod html;
mod links;
mod paint;
mod sctp;
mod sections;
mod sst;
pub(crate) mod summary;
mod svg;
mod transport;
mod waterfall;

pub use agreement::agreement_text;
pub use har::{parse as parse_har, read as read_har, Load as HarLoad, Object as HarObject};
pub use links::file_url;
pub use sections::READING_GUIDE;
pub use sst::{escape, fig7_chart, fig8_chart, fig9_chart};
pub use summary::{summary_text, text_table};

use crate::results::{read_rows, Row};
use crate::stats::Stats;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Options of the report.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Title (default: "speedy lab: <experiment>").
    pub title: Option<String>,
    /// A warning shown in a red box under the title (e.g. for layout fixtures).
    pub banner: Option<String>,
    /// Network whose loads get waterfalls (default: the first main network).
    pub waterfall_network: Option<String>,
    /// Most objects drawn in one waterfall.
    pub max_waterfall_objects: usize,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            title: None,
            banner: None,
            waterfall_network: None,
            max_waterfall_objects: 120,
        }
    }
}

/// Reads `results` (and the HARs it names, relative to its directory) and writes the
/// report to `out_html`. Returns the statistics the report shows (for a terminal
/// summary, [`summary_text`]).
pub fn write_report(results: &Path, out_html: &Path) -> Result<Stats, String> {
    write_report_with(results, out_html, &ReportOptions::default())
}

/// [`write_report`] with options.
pub fn write_report_with(
    results: &Path,
    out_html: &Path,
    opts: &ReportOptions,
) -> Result<Stats, String> {
    let rows = read_rows(results)?;
    if rows.is_empty() {
        return Err(format!(
            "{}: no rows: nothing to report (no report written)",
            results.display()
        ));
    }
    let dir = results
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let html_dir = out_html
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // Waterfalls link their HARs relative to where the report is written.
    let har_links = links::relative_dir(html_dir, dir);
    let (html, stats) = render_linked(&rows, dir, har_links, opts);
    std::fs::write(out_html, html).map_err(|e| format!("{}: {e}", out_html.display()))?;
    Ok(stats)
}

/// Renders the report of `rows` to a string; HAR paths are relative to `har_dir`, and
/// the waterfalls' HAR links assume the report is saved in `har_dir`. Never fails:
/// missing data becomes a notice in the report.
pub fn render(rows: &[Row], har_dir: &Path, opts: &ReportOptions) -> String {
    render_linked(rows, har_dir, Some(PathBuf::new()), opts).0
}

/// [`render`], with HAR links relative to `har_links` (`None`: no links), returning
/// the statistics too.
fn render_linked(
    rows: &[Row],
    har_dir: &Path,
    har_links: Option<PathBuf>,
    opts: &ReportOptions,
) -> (String, Stats) {
    let mut cx = Ctx::new(rows, har_dir, opts);
    cx.har_links = har_links;
    let mut body = String::new();
    let mut toc = Vec::new();
    let parts: Vec<Section> = vec![
        ("summary", "Summary", sections::summary),
        ("conditions", "Conditions", era::conditions_section),
        (
            "whitepaper",
            "The whitepaper's tables",
            era::whitepaper_section,
        ),
        (
            "factors",
            "Where SPDY's advantage went",
            era::factors_section,
        ),
        ("pages", "Speedup per page", sections::per_page),
        ("scatter", "Baseline vs variants", sections::scatter),
        ("boxes", "Distribution per page", sections::boxes),
        ("cdf", "CDFs", sections::cdfs),
        (
            "agreement",
            "The loader against Chromium",
            agreement::section,
        ),
        ("paint", "Paint timings (Chromium)", paint::section),
        ("sweeps", "Sweeps", sections::sweeps),
        ("phases", "Object time", transport::phases),
        ("traffic", "Packets and bytes", transport::traffic),
        ("proxy-tcp", "The proxy's TCP over time", cellular::section),
        ("sctp", "SPDY over SCTP against TCP", sctp::section),
        ("headers", "Header compression", transport::headers),
        ("waterfalls", "Waterfalls", transport::waterfalls),
        ("limits", "What the lab cannot model", transport::limits),
    ];
    for (id, name, f) in parts {
        // A section with nothing to say for these rows (no factor chain, none of the
        // whitepaper's networks) is left out, heading and all.
        let text = f(&mut cx);
        if text.is_empty() {
            continue;
        }
        toc.push((id.to_string(), name.to_string()));
        body.push_str(&html::h2(id, name));
        body.push_str(&text);
    }
    toc.push(("notes".into(), "Notes".into()));
    body.push_str(&html::h2("notes", "Notes"));
    body.push_str(&transport::notes(&cx));
    let experiments: BTreeSet<&str> = rows.iter().map(|r| r.experiment.as_str()).collect();
    let exp = experiments.into_iter().collect::<Vec<_>>().join(", ");
    let title = opts.title.clone().unwrap_or_else(|| {
        format!(
            "speedy lab: {}",
            if exp.is_empty() { "(no rows)" } else { &exp }
        )
    });
    let sub = format!(
        "{} loads · {} pages · {} networks · {} variants · statistics: mean with 95% percentile-bootstrap CI ({} resamples, fixed seed)",
        rows.len(),
        cx.stats.pages.len(),
        cx.stats.networks.len(),
        cx.stats.variants.len(),
        crate::stats::RESAMPLES
    );
    (
        html::page(&title, &sub, opts.banner.as_deref(), &toc, &body),
        cx.stats,
    )
}

/// A section: anchor, title, and the function writing it.
type Section = (&'static str, &'static str, fn(&mut Ctx) -> String);

/// What every section works from.
pub(crate) struct Ctx<'a> {
    pub rows: &'a [Row],
    pub stats: Stats,
    pub main_networks: Vec<String>,
    pub har_dir: PathBuf,
    /// The results' directory as seen from the report's (`None`: HARs are not linked).
    pub har_links: Option<PathBuf>,
    pub opts: &'a ReportOptions,
    /// HAR path → why it could not be read.
    pub har_errors: BTreeMap<String, String>,
    /// Further notes for the notes section.
    pub notes: Vec<String>,
}

impl<'a> Ctx<'a> {
    fn new(rows: &'a [Row], har_dir: &Path, opts: &'a ReportOptions) -> Ctx<'a> {
        let stats = Stats::compute(rows);
        let main = stats.main_networks();
        Ctx {
            rows,
            stats,
            main_networks: main,
            har_dir: har_dir.to_path_buf(),
            har_links: None,
            opts,
            har_errors: BTreeMap::new(),
            notes: Vec::new(),
        }
    }

    /// Drawing style of a variant (by its position in the variant list).
    pub fn style(&self, variant: &str) -> svg::Style {
        let i = self
            .stats
            .variants
            .iter()
            .position(|v| v.name == variant)
            .unwrap_or(0);
        svg::style(i)
    }

    /// `spdy (SPDY/3.1, TLS)`; a variant Chromium loaded says so: `h2 (HTTP/2, TLS,
    /// Chromium)`.
    pub fn variant_label(&self, variant: &str) -> String {
        match self.stats.variant(variant) {
            Some(v) => format!(
                "{} ({}, {}{})",
                v.name,
                proto_name(v.protocol),
                v.carrier(),
                client_suffix(v.client)
            ),
            None => variant.to_string(),
        }
    }

    /// A chart series for a variant.
    pub fn series(&self, variant: &str) -> charts::Series {
        charts::Series {
            name: self.variant_label(variant),
            style: self.style(variant),
        }
    }

    /// Rows of the given networks (and variants, when given).
    pub fn rows_of(&self, networks: &[String], variants: Option<&[String]>) -> Vec<&'a Row> {
        self.rows
            .iter()
            .filter(|r| networks.contains(&r.network))
            .filter(|r| match variants {
                None => true,
                Some(v) => v.contains(&r.variant),
            })
            .collect()
    }

    /// What was run, for a caption: networks with their descriptions, pages, variants
    /// with protocol and TCP/TLS, runs per cell; then `extra`.
    pub fn caption(&self, networks: &[String], variants: Option<&[String]>, extra: &str) -> String {
        let rows = self.rows_of(networks, variants);
        let mut nets: Vec<String> = Vec::new();
        for n in &self.stats.networks {
            if networks.contains(&n.name) {
                nets.push(format!("{} ({})", n.name, n.desc));
            }
        }
        let pages: BTreeSet<&str> = rows.iter().map(|r| r.page.as_str()).collect();
        let mut vars: Vec<String> = Vec::new();
        for v in &self.stats.variants {
            if rows.iter().any(|r| r.variant == v.name) {
                vars.push(format!(
                    "{} = {} over {}{}{}",
                    v.name,
                    proto_name(v.protocol),
                    v.carrier(),
                    if v.client == crate::experiment::Client::Chromium {
                        ", loaded by Chromium"
                    } else {
                        ""
                    },
                    if v.baseline { ", baseline" } else { "" }
                ));
            }
        }
        let mut per_cell: BTreeMap<(&str, &str, &str), usize> = BTreeMap::new();
        for r in &rows {
            *per_cell
                .entry((r.page.as_str(), r.network.as_str(), r.variant.as_str()))
                .or_default() += 1;
        }
        let lo = per_cell.values().min().copied().unwrap_or(0);
        let hi = per_cell.values().max().copied().unwrap_or(0);
        let runs = if lo == hi {
            format!("{lo}")
        } else {
            format!("{lo}–{hi}")
        };
        let mut s = format!(
            "{}: {}. {} page{}, {} run{} per page and variant ({} loads). Variants: {}.",
            if nets.len() == 1 {
                "Network"
            } else {
                "Networks"
            },
            nets.join("; "),
            pages.len(),
            if pages.len() == 1 { "" } else { "s" },
            runs,
            if hi == 1 { "" } else { "s" },
            rows.len(),
            vars.join("; ")
        );
        if !extra.is_empty() {
            s.push(' ');
            s.push_str(extra);
        }
        s
    }

    /// The href of a row's HAR from the report, when the file exists and the report's
    /// place is known.
    pub fn har_href(&self, row: &Row) -> Option<String> {
        let base = self.har_links.as_ref()?;
        if row.har.is_empty() || !self.har_dir.join(&row.har).is_file() {
            return None;
        }
        Some(links::href(base, &row.har))
    }

    /// Reads the HAR of a row; failures are remembered for the notes section.
    pub fn har(&mut self, row: &Row) -> Option<har::Load> {
        if row.har.is_empty() {
            self.har_errors
                .entry(format!(
                    "(none) {} / {} / {} / run {}",
                    row.page, row.network, row.variant, row.run
                ))
                .or_insert_with(|| "the row names no HAR".into());
            return None;
        }
        if self.har_errors.contains_key(&row.har) {
            return None;
        }
        match har::read(&self.har_dir.join(&row.har)) {
            Ok(l) => Some(l),
            Err(e) => {
                self.har_errors.insert(row.har.clone(), e);
                None
            }
        }
    }
}

/// `, Chromium` for a variant Chromium loaded, nothing for the loader's.
pub(crate) fn client_suffix(c: crate::experiment::Client) -> &'static str {
    match c {
        crate::experiment::Client::Loader => "",
        crate::experiment::Client::Chromium => ", Chromium",
    }
}

/// `HTTP/1.1`, `SPDY/3.1`, `HTTP/2`, `h3`: a protocol as the report names it.
pub(crate) fn proto_name(p: speedy_net::Protocol) -> String {
    match p {
        speedy_net::Protocol::H2 => "HTTP/2".into(),
        speedy_net::Protocol::Http1 => "HTTP/1.1".into(),
        speedy_net::Protocol::Spdy(_) => p.alpn().to_ascii_uppercase(),
        speedy_net::Protocol::H3 => p.alpn().to_string(),
    }
}

#[cfg(test)]
mod tests;
