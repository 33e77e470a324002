//! The fidelity check (`speedy lab validate`): how closely the loader stands in for a
//! browser. Every page of an experiment is loaded through each of its emulated networks
//! by headless Chromium and by the loader, over HTTP/1.1, HTTP/2 and HTTP/3 (all over
//! TLS, as Chromium speaks HTTP/2 only over TLS; HTTP/3 over QUIC, to every origin by
//! prior knowledge), and each page's onLoad ratio
//! (loader / Chromium, medians over the runs) is reported.
//!
//! The set-up is the runner's: one namespace pair per network joined by the emulated
//! link, the replay server in the server namespace (one address per origin, think time
//! replayed), and both clients in the client namespace, started fresh for every load
//! (no cache, no connection or TLS session reuse, a new Chromium profile). Chromium
//! resolves the archive's hosts to their addresses with `--host-resolver-rules` (every
//! other name fails at once, so nothing else crosses the link), skips certificate checks
//! (the lab CA is not in its store), and gets `--disable-http2` for HTTP/1.1.
//!
//! Chromium is started, pointed at the origins and driven over the DevTools protocol
//! as the runner's Chromium variants are: [`crate::chromium`].
//! Its onLoad and DOMContentLoaded are Navigation Timing's `loadEventStart` and
//! `domContentLoadedEventStart` (ms since navigation start); the loader's are its
//! `onLoad_ms` and `onContentLoad_ms`. The loaders differ in one definition: Chromium's
//! load event does not wait for a script timer that has not fired yet, the loader's
//! onLoad waits for pending compute delays and what they request (docs/loader.md).
//!
//! Tools alternate run by run (run 0: Chromium first, run 1: the loader first, …).
//! Every load starts on a fresh link seeded by (experiment seed, page, run), as in the
//! runner: every load of a page in one run (both clients, every protocol) meets the same
//! random loss sequence, so a tail loss that one client draws and the other does not
//! decides fewer ratios (the sequence is by packet index, so the pairing is partial).

use crate::chromium::events::NetworkEvent;
use crate::chromium::{self, own_group, Group};
use crate::experiment::{Experiment, Network};
use crate::runner::{prepare_pages, PageInfo};
use crate::testbed::{ReplayServer, ReplaySpec};
use linkem::{Side, Topology};
use serde::{Deserialize, Serialize};
use speedy_net::Protocol;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How to run the fidelity check.
#[derive(Clone, Debug)]
pub struct ValidateOptions {
    /// Output directory (validate.json, corpus/, lab-ca/, hars/).
    pub out: PathBuf,
    /// Loads per page × network × protocol × client.
    pub runs: u32,
    /// The `speedy` program (replay server and loader).
    pub speedy: PathBuf,
    /// The Chromium program.
    pub chromium: PathBuf,
}

/// The protocols compared: (name, `speedy load --protocol`, the protocol); Chromium's
/// flags for each are [`crate::chromium`]'s (`--disable-http2` for HTTP/1.1, QUIC by
/// prior knowledge and the lab CA's key hash for h3).
const PROTOCOLS: [Compared; 3] = [
    ("http/1.1", "http1", Protocol::Http1),
    ("h2", "h2", Protocol::H2),
    ("h3", "h3", Protocol::H3),
];

/// One load by each client.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ValidateRun {
    /// Run number (0-based).
    pub run: u32,
    /// The link's seed for both clients' loads of this run (the same for every protocol
    /// of the page: one loss sequence per page and run).
    #[serde(default)]
    pub link_seed: u64,
    /// Chromium's onLoad (`loadEventStart`), ms; `None` when the load failed.
    pub chromium_on_load_ms: Option<f64>,
    /// Chromium's DOMContentLoaded (`domContentLoadedEventStart`), ms.
    pub chromium_dom_content_loaded_ms: Option<f64>,
    /// Objects Chromium had loaded at onLoad (the document and its resource timings).
    pub chromium_objects: Option<u32>,
    /// The loader's onLoad, ms; `None` when the load failed.
    pub loader_on_load_ms: Option<f64>,
    /// The loader's onContentLoad, ms.
    pub loader_on_content_load_ms: Option<f64>,
    /// Objects the loader requested.
    pub loader_objects: Option<u32>,
    /// The loader's HAR, relative to the output directory (its JSON summary, with every
    /// connection it opened, is beside it with the extension `.json`).
    pub har: String,
    /// Bytes the link carried up (client → server) during Chromium's load: its TLS
    /// handshakes, request headers and ACKs, to set beside the loader's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chromium_bytes_up: Option<u64>,
    /// Bytes the link carried down during Chromium's load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chromium_bytes_down: Option<u64>,
    /// Bytes the link carried up during the loader's load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loader_bytes_up: Option<u64>,
    /// Bytes the link carried down during the loader's load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loader_bytes_down: Option<u64>,
    /// Chromium's resource timings at onLoad (what it fetched and when), to set beside
    /// the loader's HAR request by request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chromium_resources: Vec<ChromiumResource>,
    /// What went wrong, if anything.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// One request as Chromium's DevTools `Network` domain saw it (ms after navigation
/// start). Resource Timing would hide what cross-origin style sheets fetch; these do not.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChromiumResource {
    /// URL.
    pub url: String,
    /// Resource type (`Document`, `Stylesheet`, `Script`, `Image`, `Font`, `Fetch`, …).
    pub kind: String,
    /// Initiator type (`parser`, `script`, `preload`, `other`).
    pub initiator: String,
    /// Chromium's initial priority (`VeryHigh`, `High`, `Medium`, `Low`, `VeryLow`).
    pub priority: String,
    /// When the renderer asked for it (`requestWillBeSent`).
    pub start_ms: f64,
    /// When its headers went on the wire (`requestTime + sendStart`; 0 if unknown).
    pub sent_ms: f64,
    /// First response byte (`requestTime + receiveHeadersEnd`; 0 if unknown).
    pub response_start_ms: f64,
    /// Last byte (`loadingFinished`; 0 if it had not finished at onLoad).
    pub end_ms: f64,
}

/// One page over one network and protocol.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValidateRow {
    /// Page name.
    pub page: String,
    /// Network name.
    pub network: String,
    /// Network description.
    pub network_desc: String,
    /// `http/1.1`, `h2` or `h3` (all over TLS).
    pub protocol: String,
    /// Median of Chromium's onLoad over the runs, ms.
    pub chromium_on_load_ms: Option<f64>,
    /// Median of the loader's onLoad over the runs, ms.
    pub loader_on_load_ms: Option<f64>,
    /// loader / Chromium (of the medians).
    pub ratio: Option<f64>,
    /// Every run.
    pub runs: Vec<ValidateRun>,
}

/// The whole check, as written to `validate.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValidateReport {
    /// Experiment name.
    pub experiment: String,
    /// Runs per cell.
    pub runs: u32,
    /// The Chromium version (`chromium --version`).
    pub chromium: String,
    /// One row per page × network × protocol.
    pub rows: Vec<ValidateRow>,
}

impl ValidateReport {
    /// Geometric mean of the ratios of one protocol (`None` when there are none).
    pub fn mean_ratio(&self, protocol: &str) -> Option<f64> {
        let rs: Vec<f64> = self
            .rows
            .iter()
            .filter(|r| r.protocol == protocol)
            .filter_map(|r| r.ratio)
            .collect();
        crate::stats::geometric_mean(&rs)
    }

    /// The table: page, network, protocol, Chromium onLoad, loader onLoad, ratio.
    pub fn table(&self) -> String {
        let f = |x: Option<f64>, prec: usize| x.map_or("-".into(), |v| format!("{v:.prec$}"));
        let mut s = format!(
            "{:<20} {:<18} {:<9} {:>18} {:>16} {:>6}\n",
            "page", "network", "protocol", "Chromium onLoad ms", "loader onLoad ms", "ratio"
        );
        for r in &self.rows {
            s += &format!(
                "{:<20} {:<18} {:<9} {:>18} {:>16} {:>6}\n",
                r.page,
                r.network,
                r.protocol,
                f(r.chromium_on_load_ms, 0),
                f(r.loader_on_load_ms, 0),
                f(r.ratio, 2)
            );
        }
        for (p, _, _) in PROTOCOLS {
            if let Some(m) = self.mean_ratio(p) {
                s += &format!("geometric mean ratio over {p}: {m:.2}\n");
            }
            if let Some(w) = self.worst(p) {
                s += &format!(
                    "worst page over {p}: {} on {} ({:.2}, furthest from 1)\n",
                    w.page,
                    w.network,
                    w.ratio.unwrap_or(0.0)
                );
            }
        }
        s
    }

    /// The row of `protocol` whose ratio is furthest from 1 (either way, in log terms).
    pub fn worst(&self, protocol: &str) -> Option<&ValidateRow> {
        self.rows
            .iter()
            .filter(|r| r.protocol == protocol && r.ratio.is_some_and(|x| x > 0.0))
            .max_by(|a, b| {
                let d = |r: &ValidateRow| r.ratio.unwrap_or(1.0).ln().abs();
                d(a).total_cmp(&d(b))
            })
    }
}

/// One protocol compared: (name, `speedy load --protocol`, the protocol), as in
/// [`PROTOCOLS`].
type Compared = (&'static str, &'static str, Protocol);

/// What every load of the check shares: the experiment, the options, the prepared pages.
struct Check<'a> {
    /// The experiment checked.
    exp: &'a Experiment,
    /// How to run the check.
    opts: &'a ValidateOptions,
    /// The archive the pages are served from.
    archive: PathBuf,
    /// The experiment's pages.
    pages: Vec<PageInfo>,
    /// The lab CA's directory.
    ca_dir: PathBuf,
    /// Loads per page × network × protocol × client.
    runs: u32,
}

/// The count of loads done of all, for the line each load writes on stderr.
struct Progress {
    /// Loads done.
    done: usize,
    /// Loads in all.
    total: usize,
    /// When the first load started.
    started: Instant,
}

impl Progress {
    /// Counts a load that took `took` and writes `what` with the count and the
    /// estimated time left.
    fn log(&mut self, what: &str, took: Duration) {
        self.done += 1;
        let elapsed = self.started.elapsed().as_secs_f64();
        let eta = elapsed / self.done as f64 * (self.total - self.done) as f64;
        eprintln!(
            "[{}/{}] {what} ({:.1} s) ETA {}m{:02}s",
            self.done,
            self.total,
            took.as_secs_f64(),
            eta as u64 / 60,
            eta as u64 % 60
        );
    }
}

/// Runs the check over every page and network of `exp`; writes `validate.json` in the
/// output directory and returns the report.
pub fn validate(exp: &Experiment, opts: &ValidateOptions) -> Result<ValidateReport, String> {
    std::fs::create_dir_all(&opts.out).map_err(|e| format!("{}: {e}", opts.out.display()))?;
    crate::interrupt::tear_down_on_signals("speedy lab validate");
    let version = chromium::version(&opts.chromium, "`speedy lab validate`")?;
    let (archive, pages) = prepare_pages(exp, &opts.out)?;
    let check = Check {
        exp,
        opts,
        archive,
        pages,
        ca_dir: opts.out.join("lab-ca"),
        runs: opts.runs.max(1),
    };
    let (pages, runs) = (&check.pages, check.runs);
    let total = exp.networks.len() * pages.len() * PROTOCOLS.len() * runs as usize * 2;
    eprintln!(
        "speedy lab validate {}: {} pages × {} networks × {} protocols × {runs} runs × 2 clients \
         (Chromium: {version}); {total} loads",
        exp.name,
        pages.len(),
        exp.networks.len(),
        PROTOCOLS.len()
    );
    let mut rows: Vec<ValidateRow> = Vec::new();
    let mut progress = Progress {
        done: 0,
        total,
        started: Instant::now(),
    };
    for (ni, net) in exp.networks.iter().enumerate() {
        rows.extend(network_rows(&check, ni, net, &mut progress)?);
    }
    let report = ValidateReport {
        experiment: exp.name.clone(),
        runs,
        chromium: version,
        rows,
    };
    let path = opts.out.join("validate.json");
    let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    std::fs::write(&path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(report)
}

/// The rows of one network (the `index`th): every page over every protocol, each with
/// its runs and their medians, measured in a lab of its own.
fn network_rows(
    check: &Check,
    index: usize,
    net: &Network,
    progress: &mut Progress,
) -> Result<Vec<ValidateRow>, String> {
    let mut cells: Vec<ValidateRow> = Vec::new();
    for p in &check.pages {
        for (proto, _, _) in PROTOCOLS {
            cells.push(ValidateRow {
                page: p.name.clone(),
                network: net.name.clone(),
                network_desc: net.desc.clone(),
                protocol: proto.into(),
                chromium_on_load_ms: None,
                loader_on_load_ms: None,
                ratio: None,
                runs: Vec::new(),
            });
        }
    }
    let (exp, opts) = (check.exp, check.opts);
    let mut lab = NetLab::start(
        exp,
        opts,
        net,
        index,
        &check.pages,
        &check.archive,
        &check.ca_dir,
    )?;
    for run in 0..check.runs {
        for (pi, page) in check.pages.iter().enumerate() {
            for (k, compared) in PROTOCOLS.iter().enumerate() {
                let r = load_pair(&mut lab, check, net, page, run, compared, progress)?;
                cells[pi * PROTOCOLS.len() + k].runs.push(r);
            }
        }
    }
    drop(lab);
    for c in &mut cells {
        c.set_medians();
    }
    Ok(cells)
}

impl ValidateRow {
    /// Sets the medians of both clients' onLoads over the runs, and their ratio.
    fn set_medians(&mut self) {
        let med = |f: fn(&ValidateRun) -> Option<f64>| {
            crate::stats::median(&self.runs.iter().filter_map(f).collect::<Vec<_>>())
        };
        self.chromium_on_load_ms = med(|r| r.chromium_on_load_ms);
        self.loader_on_load_ms = med(|r| r.loader_on_load_ms);
        self.ratio = match (self.loader_on_load_ms, self.chromium_on_load_ms) {
            (Some(l), Some(b)) if b > 0.0 => Some(l / b),
            _ => None,
        };
    }
}

/// Run `run` of `page` over one protocol on `net`: a load by each client, Chromium first
/// in even runs, the loader first in odd ones.
fn load_pair(
    lab: &mut NetLab,
    check: &Check,
    net: &Network,
    page: &PageInfo,
    run: u32,
    compared: &Compared,
    progress: &mut Progress,
) -> Result<ValidateRun, String> {
    let (proto, loader_proto, _) = compared;
    let link_seed = crate::runner::load_seed(check.exp.seed, &page.name, run);
    let mut r = ValidateRun {
        run,
        link_seed,
        har: format!(
            "hars/validate/{}/{}/{}-run{run}.har",
            crate::runner::sanitize(&net.name),
            loader_proto,
            page.name
        ),
        ..Default::default()
    };
    for step in 0..2 {
        let chromium_turn = (step + run as usize).is_multiple_of(2);
        // Common random numbers, as the lab runner does: every load of a page in one run
        // (both clients, every protocol) meets the same loss sequence, so a ratio
        // compares the clients, not their luck.
        lab.restart_link(&net.link, link_seed)?;
        let t0 = Instant::now();
        let (what, res) = lab.load_one(check, page, compared, chromium_turn, &mut r);
        let outcome = match &res {
            Ok(ms) => format!("onLoad {ms:.0} ms"),
            Err(e) => {
                r.errors.push(format!("{what}: {e}"));
                format!("FAILED: {e}")
            }
        };
        progress.log(
            &format!(
                "{} | {} | {proto} | {what} | run {run}: {outcome}",
                net.name, page.name
            ),
            t0.elapsed(),
        );
    }
    Ok(r)
}

/// onLoad, DOMContentLoaded and objects of one load.
struct Timing {
    on_load_ms: f64,
    dcl_ms: f64,
    objects: u32,
    resources: Vec<ChromiumResource>,
}

/// One network's namespaces, link and replay server (declared first: it is killed before
/// the namespaces go).
struct NetLab {
    _server: ReplayServer,
    topo: Topology,
    archive: PathBuf,
    ca_dir: PathBuf,
    /// (host, address) of every origin.
    origins: Vec<(String, String)>,
    /// The lab CA's key hash, for Chromium over QUIC ([`chromium::ca_spki_hash`]).
    ca_spki: String,
    scratch: PathBuf,
}

impl NetLab {
    fn start(
        exp: &Experiment,
        opts: &ValidateOptions,
        net: &Network,
        index: usize,
        pages: &[PageInfo],
        archive: &Path,
        ca_dir: &Path,
    ) -> Result<NetLab, String> {
        let topo = crate::testbed::topology_for(
            pages.iter().map(|p| p.hosts.len()).max().unwrap_or(1),
            &net.link,
            exp.seed.wrapping_add(index as u64 * 104_729),
        )?;
        // As the runner's default variants: runs do not learn from each other.
        for side in [Side::Client, Side::Server] {
            let st = topo
                .command(side, "sysctl")
                .args(["-q", "-w", "net.ipv4.tcp_no_metrics_save=1"])
                .status()
                .map_err(|e| format!("sysctl: {e}"))?;
            if !st.success() {
                return Err(format!("sysctl net.ipv4.tcp_no_metrics_save=1: {st}"));
            }
        }
        std::fs::create_dir_all(ca_dir).map_err(|e| format!("{}: {e}", ca_dir.display()))?;
        let server = ReplayServer::start(
            &topo,
            &ReplaySpec {
                speedy: &opts.speedy,
                serve: speedy_server::spec::ServeSpec {
                    archive: Some(archive.to_path_buf()),
                    ca_dir: Some(ca_dir.to_path_buf()),
                    listen: "0.0.0.0:8443".into(),
                    h3: true,
                    ..Default::default()
                },
            },
        )?;
        let origins = server.resolve();
        let scratch = opts.out.join("chromium-profiles");
        std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
        Ok(NetLab {
            topo,
            _server: server,
            archive: archive.to_path_buf(),
            ca_dir: ca_dir.to_path_buf(),
            origins,
            ca_spki: chromium::ca_spki_hash(ca_dir)?,
            scratch,
        })
    }

    /// A fresh link seeded with `seed` (its counters start from zero).
    fn restart_link(&mut self, link: &linkem::LinkConfig, seed: u64) -> Result<(), String> {
        self.topo.stop_link();
        let mut link = link.clone();
        link.seed = seed;
        self.topo
            .start_link(&link)
            .map_err(|e| format!("restarting the link: {e}"))
    }

    /// One load of `page` over `compared` by Chromium (`chromium_turn`) or the loader:
    /// records its timings and the bytes the link carried in `r`; returns the client's
    /// name and the load's onLoad.
    fn load_one(
        &mut self,
        check: &Check,
        page: &PageInfo,
        compared: &Compared,
        chromium_turn: bool,
        r: &mut ValidateRun,
    ) -> (&'static str, Result<f64, String>) {
        let (_, loader_proto, protocol) = compared;
        let (exp, opts) = (check.exp, check.opts);
        let before = self.topo.counters();
        let (what, res) = if chromium_turn {
            let res = self.chromium_load(opts, exp, page, *protocol);
            if let Ok(t) = &res {
                r.chromium_on_load_ms = Some(t.on_load_ms);
                r.chromium_dom_content_loaded_ms = Some(t.dcl_ms);
                r.chromium_objects = Some(t.objects);
                r.chromium_resources = t.resources.clone();
            }
            ("chromium", res.map(|t| t.on_load_ms))
        } else {
            let har = opts.out.join(&r.har);
            let res = self.loader_load(opts, exp, page, loader_proto, &har);
            if let Ok(t) = &res {
                r.loader_on_load_ms = Some(t.on_load_ms);
                r.loader_on_content_load_ms = Some(t.dcl_ms);
                r.loader_objects = Some(t.objects);
            }
            ("loader", res.map(|t| t.on_load_ms))
        };
        let after = self.topo.counters();
        let up = after.up.bytes_out - before.up.bytes_out;
        let down = after.down.bytes_out - before.down.bytes_out;
        if chromium_turn {
            (r.chromium_bytes_up, r.chromium_bytes_down) = (Some(up), Some(down));
        } else {
            (r.loader_bytes_up, r.loader_bytes_down) = (Some(up), Some(down));
        }
        (what, res)
    }

    fn loader_load(
        &self,
        opts: &ValidateOptions,
        exp: &Experiment,
        page: &PageInfo,
        protocol: &str,
        har: &Path,
    ) -> Result<Timing, String> {
        std::fs::create_dir_all(har.parent().expect("has a parent")).map_err(|e| e.to_string())?;
        let mut spec = speedy_browser::LoadSpec::new(
            &page.url,
            speedy_net::Protocol::parse(protocol).map_err(|e| e.to_string())?,
        );
        spec.archive = Some(self.archive.clone());
        spec.tls = true;
        spec.resolve = self
            .origins
            .iter()
            .map(|(h, a)| format!("{h}={a}"))
            .collect();
        spec.cacert = Some(self.ca_dir.join("ca.pem"));
        spec.har = Some(har.to_path_buf());
        spec.timeout = exp.timeout.as_secs_f64();
        let mut cmd = self.topo.command(Side::Client, &opts.speedy);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        own_group(&mut cmd);
        let mut child = Group(crate::testbed::spawn_load(cmd, &spec)?);
        let drain = |r: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut s = String::new();
                if let Some(mut r) = r {
                    let _ = r.read_to_string(&mut s);
                }
                s
            })
        };
        let out = drain(child.0.stdout.take().map(|o| Box::new(o) as _));
        let err = drain(child.0.stderr.take().map(|e| Box::new(e) as _));
        let deadline = Instant::now() + exp.timeout + Duration::from_secs(15);
        let Some(st) = child.wait_until(deadline) else {
            return Err(format!("did not finish within {:?}", exp.timeout));
        };
        let (out, err) = (
            out.join().unwrap_or_default(),
            err.join().unwrap_or_default(),
        );
        let v: speedy_browser::report::Summary = speedy_records::version::read(out.trim())
            .map_err(|e| format!("exit {st}, no summary ({e}): {}", err.trim()))?;
        // Its summary (connections, their TCP_INFO, bytes) beside its HAR.
        let _ = std::fs::write(har.with_extension("json"), out.as_bytes());
        if v.timed_out {
            return Err(format!("timed out after {:?}", exp.timeout));
        }
        if !v.failed.is_empty() {
            let urls: Vec<String> = v
                .failed
                .iter()
                .map(|f| {
                    format!(
                        "{} ({})",
                        f.url,
                        f.error
                            .clone()
                            .unwrap_or_else(|| format!("status {}", f.status))
                    )
                })
                .collect();
            return Err(format!(
                "{} objects failed: {}",
                v.failed.len(),
                urls.join(", ")
            ));
        }
        Ok(Timing {
            on_load_ms: v.on_load_ms.ok_or("no onLoad_ms")?,
            dcl_ms: v.on_content_load_ms.ok_or("no onContentLoad_ms")?,
            objects: v.totals.requests as u32,
            resources: Vec::new(),
        })
    }

    fn chromium_load(
        &self,
        opts: &ValidateOptions,
        exp: &Experiment,
        page: &PageInfo,
        protocol: Protocol,
    ) -> Result<Timing, String> {
        let launch = chromium::Launch {
            program: &opts.chromium,
            origins: &self.origins,
            ca_spki: &self.ca_spki,
            protocol,
            profile: &self.scratch.join(format!("p{}", std::process::id())),
            after_paint: false,
        };
        let deadline = exp.timeout + Duration::from_secs(20);
        let l = chromium::load(
            &self.topo,
            &launch,
            &page.url,
            deadline,
            (Duration::from_secs(3600), &mut || {}),
        )?;
        if l.timed_out {
            return Err(format!("no load event within {deadline:?}"));
        }
        let t = &l.timings;
        Ok(Timing {
            on_load_ms: t.load,
            dcl_ms: t.dcl,
            objects: t.resources as u32 + 1,
            resources: network_log(&l.events, t.fetch),
        })
    }
}

/// Chromium's requests from its `Network` events, timed from navigation start: the
/// document's `requestWillBeSent` is placed at Navigation Timing's `fetchStart` (both
/// clocks are monotonic; only the origin differs).
fn network_log(events: &[NetworkEvent], fetch_start_ms: f64) -> Vec<ChromiumResource> {
    let mut order: Vec<&str> = Vec::new();
    let mut by_id: std::collections::HashMap<&str, ChromiumResource> = Default::default();
    let mut base: Option<f64> = None;
    for ev in events {
        match ev {
            NetworkEvent::Request(r) => {
                let ts = r.timestamp * 1000.0;
                if base.is_none() && r.kind.as_deref() == Some("Document") {
                    base = Some(ts - fetch_start_ms);
                }
                if by_id.contains_key(r.request_id.as_str()) {
                    continue; // a redirect: keep the first request's start
                }
                order.push(&r.request_id);
                by_id.insert(
                    &r.request_id,
                    ChromiumResource {
                        url: r.request.url.clone(),
                        kind: r.kind.clone().unwrap_or_default(),
                        initiator: r.initiator.kind.clone(),
                        priority: r.request.initial_priority.clone().unwrap_or_default(),
                        start_ms: ts,
                        ..Default::default()
                    },
                );
            }
            NetworkEvent::Response(r) => {
                if let (Some(res), Some(t)) =
                    (by_id.get_mut(r.request_id.as_str()), &r.response.timing)
                {
                    let req = t.request_time * 1000.0;
                    if t.send_start >= 0.0 {
                        res.sent_ms = req + t.send_start;
                    }
                    if t.receive_headers_end >= 0.0 {
                        res.response_start_ms = req + t.receive_headers_end;
                    }
                }
            }
            NetworkEvent::Finished(f) => {
                if let Some(res) = by_id.get_mut(f.request_id.as_str()) {
                    res.end_ms = f.timestamp * 1000.0;
                }
            }
            NetworkEvent::Failed(f) => {
                if let Some(res) = by_id.get_mut(f.request_id.as_str()) {
                    res.end_ms = f.timestamp * 1000.0;
                }
            }
            NetworkEvent::Data(_) => {}
        }
    }
    let base = base.unwrap_or(0.0);
    let rel = |v: f64| if v > 0.0 { v - base } else { 0.0 };
    order
        .into_iter()
        .filter_map(|id| by_id.remove(id))
        .map(|mut r| {
            r.start_ms = rel(r.start_ms);
            r.sent_ms = rel(r.sent_ms);
            r.response_start_ms = rel(r.response_start_ms);
            r.end_ms = rel(r.end_ms);
            r
        })
        .collect()
}
