//! The pure plan of an experiment: its corpora and pages, and the list of loads (jobs),
//! before anything runs.

use crate::experiment::{Experiment, Pages};
use speedy_archive::synth::{Calibration, CALIBRATIONS};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// A page to load.
#[derive(Clone, Debug)]
pub struct PageInfo {
    /// Page name.
    pub name: String,
    /// Root URL.
    pub url: String,
    /// Hosts of the page's objects.
    pub hosts: Vec<String>,
}

/// One load to run: a page (or a session's pages) over a network with a variant, in a
/// run.
#[derive(Clone, Debug)]
pub(super) struct Job {
    /// Its place in the experiment's whole list (shards take every n-th).
    pub index: usize,
    /// Index into the experiment's networks.
    pub network: usize,
    /// The pages the load visits, in order: one page, or a session's every page.
    pub visits: Vec<usize>,
    /// Index into the experiment's variants.
    pub variant: usize,
    /// The run, from 0.
    pub run: u32,
    /// A second try, after the first failed ([`crate::results::FailedLoad`]).
    pub retry: bool,
}

/// What identifies a row in a results file (resuming skips loads whose key is there).
pub(crate) fn key(page: &str, network: &str, variant: &str, run: u32) -> String {
    format!("{page}\u{1}{network}\u{1}{variant}\u{1}{run}")
}

/// Makes (or finds) the experiment's archive and lists the pages to load.
pub fn prepare_pages(exp: &Experiment, out: &Path) -> Result<(PathBuf, Vec<PageInfo>), String> {
    prepare_corpus(exp, out, None)
}

/// The directory of a synthesized corpus: `corpus/` for the default calibration (as
/// before calibrations had names), `corpus-NAME/` for the others.
fn corpus_dir(out: &Path, cal: &Calibration) -> PathBuf {
    if cal.name == CALIBRATIONS[0].name {
        out.join("corpus")
    } else {
        out.join(format!("corpus-{}", cal.name))
    }
}

/// Makes (or finds) the archive of the experiment's pages, or of its synthesized pages
/// under calibration `cal` (a variant's own), and lists the pages to load.
pub fn prepare_corpus(
    exp: &Experiment,
    out: &Path,
    cal: Option<&'static Calibration>,
) -> Result<(PathBuf, Vec<PageInfo>), String> {
    load_corpus(exp, out, cal).map(|(dir, pages, _)| (dir, pages))
}

/// [`prepare_corpus`], and the address each of the replay server's slots was recorded at
/// (`speedy_server::Replay::slot_addrs`; IPv4 only, the test bed's), empty when none was.
#[allow(clippy::type_complexity)]
fn load_corpus(
    exp: &Experiment,
    out: &Path,
    cal: Option<&'static Calibration>,
) -> Result<(PathBuf, Vec<PageInfo>, Vec<Option<Ipv4Addr>>), String> {
    let (dir, archive) = match &exp.pages {
        Pages::Synth(n, default) => {
            let cal = cal.unwrap_or(default);
            let dir = corpus_dir(out, cal);
            let archive = if dir.join("archive.json").exists() {
                speedy_archive::Archive::load(&dir).map_err(|e| e.to_string())?
            } else {
                let a = speedy_archive::synth::synthesize_calibrated(
                    speedy_archive::synth::SynthOptions {
                        pages: *n,
                        seed: exp.seed,
                    },
                    cal,
                );
                a.save(&dir).map_err(|e| e.to_string())?;
                a
            };
            (dir, archive)
        }
        Pages::Archive(dir, _) => (
            dir.clone(),
            speedy_archive::Archive::load(dir).map_err(|e| e.to_string())?,
        ),
    };
    let select = match &exp.pages {
        Pages::Archive(_, Some(sel)) => Some(sel.clone()),
        _ => None,
    };
    let mut pages = Vec::new();
    for p in &archive.pages {
        if select.as_ref().is_some_and(|s| !s.contains(&p.name)) {
            continue;
        }
        let mut hosts: Vec<String> = Vec::new();
        for &o in &p.objects {
            if let Some(u) = spdy::url::Url::parse(&archive.objects[o].url) {
                let h = u.host;
                if !hosts.contains(&h) {
                    hosts.push(h);
                }
            }
        }
        pages.push(PageInfo {
            name: p.name.clone(),
            url: archive.objects[p.root].url.clone(),
            hosts,
        });
    }
    if let Some(sel) = &select {
        for s in sel {
            if !pages.iter().any(|p| &p.name == s) {
                return Err(format!("pages.select: no page {s:?} in {}", dir.display()));
            }
        }
    }
    if pages.is_empty() {
        return Err(format!("{}: no pages to load", dir.display()));
    }
    let recorded = if archive.objects.iter().any(|o| o.recorded.is_some()) {
        let replay = speedy_server::Replay::new(
            std::sync::Arc::new(archive),
            speedy_server::ReplayOptions::default(),
        );
        let addrs: Vec<Option<Ipv4Addr>> = replay
            .slot_addrs()
            .into_iter()
            .map(|a| match a {
                Some(std::net::IpAddr::V4(v4)) => Some(v4),
                _ => None,
            })
            .collect();
        if addrs.iter().any(Option::is_some) {
            addrs
        } else {
            Vec::new()
        }
    } else {
        Vec::new()
    };
    Ok((dir, pages, recorded))
}

/// The pages every variant loads: the experiment's corpus, and one more per calibration
/// a variant names (each with the same number of pages).
pub(super) struct Corpora {
    /// (archive directory, pages) per corpus; the experiment's first.
    pub list: Vec<(PathBuf, Vec<PageInfo>)>,
    /// Per variant, its corpus in `list`.
    pub of_variant: Vec<usize>,
    /// The addresses the experiment's corpus was recorded at, per replay slot (empty for
    /// synthesized pages and archives with no recorded address): the test bed serves
    /// each slot there where it can ([`linkem::TopologyConfig::preferred_addrs`]).
    pub recorded_addrs: Vec<Option<Ipv4Addr>>,
}

impl Corpora {
    /// Makes (or finds) every corpus the variants load.
    pub fn prepare(exp: &Experiment, out: &Path) -> Result<Corpora, String> {
        let mut names: Vec<Option<&str>> = vec![None];
        let (dir, pages, recorded_addrs) = load_corpus(exp, out, None)?;
        let mut list = vec![(dir, pages)];
        let mut of_variant = Vec::new();
        for v in &exp.variants {
            let name = v.calibration.map(|c| c.name);
            let default = match &exp.pages {
                Pages::Synth(_, c) => Some(c.name),
                Pages::Archive(..) => None,
            };
            let i = if name.is_none() || name == default {
                0
            } else if let Some(i) = names.iter().position(|n| *n == name) {
                i
            } else {
                names.push(name);
                list.push(prepare_corpus(exp, out, v.calibration)?);
                list.len() - 1
            };
            of_variant.push(i);
        }
        Ok(Corpora {
            list,
            of_variant,
            recorded_addrs,
        })
    }

    /// Page `i` as variant `v` loads it, and the archive it comes from.
    pub fn page(&self, v: usize, i: usize) -> (&PageInfo, &Path) {
        let (dir, pages) = &self.list[self.of_variant[v]];
        (&pages[i], dir)
    }

    /// The most origins of any page of any corpus (for sizing the topology).
    pub fn max_hosts(&self) -> usize {
        self.list
            .iter()
            .flat_map(|(_, p)| p.iter().map(|p| p.hosts.len()))
            .max()
            .unwrap_or(1)
    }
}

/// Every load of the experiment in order: per network and run, each page (or the one
/// session), the variants in an order that alternates run by run.
pub(super) fn jobs(exp: &Experiment, pages: usize) -> Vec<Job> {
    let nv = exp.variants.len();
    let mut out = Vec::new();
    // A browsing session is one load over every page; otherwise a load per page.
    let loads: Vec<Vec<usize>> = if exp.session_think.is_some() {
        vec![exp.session_order(pages)]
    } else {
        (0..pages).map(|p| vec![p]).collect()
    };
    for network in 0..exp.networks.len() {
        for run in 0..exp.runs {
            for visits in &loads {
                // Alternate the order of variants run by run.
                for k in 0..nv {
                    let variant = (k + run as usize) % nv;
                    if !exp.runs_on(network, variant) {
                        continue;
                    }
                    out.push(Job {
                        index: out.len(),
                        network,
                        visits: visits.clone(),
                        variant,
                        run,
                        retry: false,
                    });
                }
            }
        }
    }
    out
}
