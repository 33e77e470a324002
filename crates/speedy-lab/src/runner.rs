//! The runner: builds the topology with the link emulator, starts the replay server in
//! the server namespace (one address per origin), runs the loader in the client
//! namespace, alternates variants run by run, keeps every HAR and appends one
//! [`Row`] per load to `results.jsonl`. An interrupted experiment resumes where it
//! stopped: loads already in the results file are skipped.
//!
//! Lanes run loads in parallel, each on its own namespace pair and link; every load gets
//! a fresh link seeded by (seed, page, run), so lanes change no result beyond CPU
//! contention; shards split the load list
//! (`i/n` takes every n-th load starting at i) for batch schedulers, merged afterwards
//! with [`merge`].

use crate::experiment::{Experiment, Network, Pages, Variant};
use crate::results::{append_row, read_rows, Row, SweepPoint};
use crate::tcpinfo::{parse_ss, parse_tcp_mib, ConnSample, TcpMib};
use crate::testbed::{topology_for, ProxyServer, ReplayServer, ReplaySpec};
use linkem::{Side, Topology};
use speedy_archive::har::Har;
use speedy_archive::synth::{Calibration, CALIBRATIONS};
use speedy_server::spec::ServeSpec;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The CPU headroom a load must have had for its timings to stand for the network (see
/// [`Headroom`]).
pub const HEADROOM: Headroom = Headroom {
    link_late_mean: Duration::from_micros(500),
    link_late_max: Duration::from_millis(20),
    loader_lag_max: Duration::from_millis(50),
};

/// Bounds on the lab's own lateness. A load that exceeded one is flagged in its row and
/// listed in the report; its figures are kept (as measured) but say as much about the CPU
/// as about the link.
#[derive(Clone, Copy, Debug)]
pub struct Headroom {
    /// Mean lateness of the emulator's packet writes.
    pub link_late_mean: Duration,
    /// Largest lateness of one packet write.
    pub link_late_max: Duration,
    /// Largest lag of the loader's event loop.
    pub loader_lag_max: Duration,
}

impl Headroom {
    /// `None` within bounds, else which bound the row exceeded.
    pub fn check(&self, r: &Row) -> Option<String> {
        let us = |d: Duration| d.as_micros() as u64;
        let mut out = Vec::new();
        if r.link_late_mean_us > us(self.link_late_mean) {
            out.push(format!(
                "link lateness mean {} µs > {} µs",
                r.link_late_mean_us,
                us(self.link_late_mean)
            ));
        }
        if r.link_late_max_us > us(self.link_late_max) {
            out.push(format!(
                "link lateness max {} ms > {} ms",
                r.link_late_max_us / 1000,
                us(self.link_late_max) / 1000
            ));
        }
        if r.loader_lag_max_us > us(self.loader_lag_max) {
            out.push(format!(
                "loader lag {} ms > {} ms",
                r.loader_lag_max_us / 1000,
                us(self.loader_lag_max) / 1000
            ));
        }
        (!out.is_empty()).then(|| out.join(", "))
    }
}

/// Lanes per CPU core that `--lanes auto` runs (measured: docs/lab.md, "Lanes").
pub const LANES_PER_CORE: usize = 4;

/// The lanes `--lanes auto` picks on a machine with `cores` cores.
pub fn auto_lanes(cores: usize) -> usize {
    (cores.max(1) * LANES_PER_CORE).min(16)
}

/// How often the server's connections are sampled with `ss -ti` during a load.
pub const SS_EVERY: Duration = Duration::from_millis(250);

/// How to run an experiment.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Output directory (results.jsonl, hars/, corpus/, lab-ca/, report.html).
    pub out: PathBuf,
    /// Parallel lanes.
    pub lanes: usize,
    /// Shard `(i, n)`: run loads whose index % n == i.
    pub shard: (usize, usize),
    /// The `speedy` program (server and loader run as processes).
    pub speedy: PathBuf,
}

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

#[derive(Clone, Debug)]
struct Job {
    index: usize,
    network: usize,
    /// The pages the load visits, in order: one page, or a session's every page.
    visits: Vec<usize>,
    variant: usize,
    run: u32,
}

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
    Ok((dir, pages))
}

/// The pages every variant loads: the experiment's corpus, and one more per calibration
/// a variant names (each with the same number of pages).
struct Corpora {
    /// (archive directory, pages) per corpus; the experiment's first.
    list: Vec<(PathBuf, Vec<PageInfo>)>,
    /// Per variant, its corpus in `list`.
    of_variant: Vec<usize>,
}

impl Corpora {
    fn prepare(exp: &Experiment, out: &Path) -> Result<Corpora, String> {
        let mut names: Vec<Option<&str>> = vec![None];
        let mut list = vec![prepare_pages(exp, out)?];
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
        Ok(Corpora { list, of_variant })
    }

    /// Page `i` as variant `v` loads it, and the archive it comes from.
    fn page(&self, v: usize, i: usize) -> (&PageInfo, &Path) {
        let (dir, pages) = &self.list[self.of_variant[v]];
        (&pages[i], dir)
    }

    /// Every page of every corpus (for sizing the topology).
    fn all_pages(&self) -> Vec<PageInfo> {
        self.list
            .iter()
            .flat_map(|(_, p)| p.iter().cloned())
            .collect()
    }
}

/// The congestion control a variant runs, and how it is set.
#[derive(Clone, Debug, PartialEq)]
struct Cc {
    /// The algorithm (`reno`, `cubic`, `bbr`).
    name: String,
    /// Set on the namespaces' routes (`ip route ... congctl NAME`) rather than as their
    /// default: Linux lets a namespace other than the host's make only the algorithms in
    /// `net.ipv4.tcp_allowed_congestion_control` its default, but a route's `congctl`
    /// may name any algorithm the kernel has (`tcp_available_congestion_control`), and
    /// every connection over that route runs it.
    per_route: bool,
}

/// The congestion control each variant uses: the first of its preference the kernel has
/// (`None`: the namespaces' default). An algorithm the host does not allow namespaces to
/// make their default is set per route, and said once; an algorithm the kernel lacks
/// falls back along the preference, said too; none at all is refused.
fn resolve_cc(exp: &Experiment, allowed: &str, available: &str) -> Result<Vec<Option<Cc>>, String> {
    let allowed_list: Vec<&str> = allowed.split_whitespace().collect();
    let available_list: Vec<&str> = available.split_whitespace().collect();
    let mut out = Vec::new();
    let mut notes: Vec<(String, Vec<String>)> = Vec::new();
    let mut note = |what: String, variant: &str| match notes.iter_mut().find(|(k, _)| *k == what) {
        Some((_, vs)) => vs.push(variant.to_string()),
        None => notes.push((what, vec![variant.to_string()])),
    };
    for v in &exp.variants {
        if v.cc_preference.is_empty() {
            out.push(None);
            continue;
        }
        let first = &v.cc_preference[0];
        let Some(pick) = v
            .cc_preference
            .iter()
            .find(|c| allowed_list.contains(&c.as_str()) || available_list.contains(&c.as_str()))
        else {
            return Err(format!(
                "variant {}: this kernel has none of cc = {:?} \
                 (net.ipv4.tcp_available_congestion_control = {available:?}); load the \
                 module (modprobe tcp_{first}) on the host",
                v.name, v.cc_preference
            ));
        };
        if pick != first {
            note(
                format!("congestion control {first} → {pick} (the kernel has no {first})"),
                &v.name,
            );
        }
        let per_route = !allowed_list.contains(&pick.as_str());
        if per_route {
            note(
                format!(
                    "congestion control {pick} set per route (congctl): namespaces here may \
                     only make {allowed:?} their default"
                ),
                &v.name,
            );
        }
        out.push(Some(Cc {
            name: pick.clone(),
            per_route,
        }));
    }
    for (what, variants) in notes {
        eprintln!("speedy lab: {what}, for {}", variants.join(", "));
    }
    Ok(out)
}

fn jobs(exp: &Experiment, pages: usize) -> Vec<Job> {
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
                    });
                }
            }
        }
    }
    out
}

/// Runs (or resumes) an experiment; prints progress with an ETA on stderr.
pub fn run(exp: &Experiment, opts: &RunOptions) -> Result<PathBuf, String> {
    std::fs::create_dir_all(&opts.out).map_err(|e| format!("{}: {e}", opts.out.display()))?;
    crate::interrupt::tear_down_on_signals("speedy lab");
    let corpora = Corpora::prepare(exp, &opts.out)?;
    let sysctl = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/net/ipv4/{name}"))
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let ccs = resolve_cc(
        exp,
        &sysctl("tcp_allowed_congestion_control"),
        &sysctl("tcp_available_congestion_control"),
    )?;
    let pages = &corpora.list[0].1;
    let results = opts.out.join(if opts.shard.1 > 1 {
        format!("results-shard{}of{}.jsonl", opts.shard.0, opts.shard.1)
    } else {
        "results.jsonl".into()
    });
    let done: HashSet<String> = if results.exists() {
        crate::results::drop_unfinished_tail(&results)?;
        read_rows(&results)?
            .iter()
            .map(|r| key(&r.page, &r.network, &r.variant, r.run))
            .collect()
    } else {
        HashSet::new()
    };
    let all = jobs(exp, pages.len());
    let todo: Vec<Job> = all
        .into_iter()
        .filter(|j| j.index % opts.shard.1 == opts.shard.0)
        .filter(|j| {
            j.visits.iter().any(|&p| {
                !done.contains(&key(
                    &corpora.page(j.variant, p).0.name,
                    &exp.networks[j.network].name,
                    &exp.variants[j.variant].name,
                    j.run,
                ))
            })
        })
        .collect();
    // Rows to write (a session's visits each make one), for the progress line.
    let total = if exp.session_think.is_some() {
        todo.len() * pages.len()
    } else {
        todo.len()
    };
    eprintln!(
        "speedy lab {}: {} pages × {} networks × {} variants × {} runs; {}{}",
        exp.name,
        pages.len(),
        exp.networks.len(),
        exp.variants.len(),
        exp.runs,
        match exp.session_think {
            Some(t) => format!(
                "{} browsing sessions ({total} visits, {:.0} s apart) to run",
                todo.len(),
                t.as_secs_f64()
            ),
            None => format!("{total} loads to run"),
        },
        if done.is_empty() {
            String::new()
        } else {
            format!(" ({} already done, resuming)", done.len())
        }
    );
    let progress = Arc::new(Mutex::new((0usize, Instant::now())));
    let ca_dir = opts.out.join("lab-ca");
    for (ni, net) in exp.networks.iter().enumerate() {
        let queue: Vec<Job> = todo.iter().filter(|j| j.network == ni).cloned().collect();
        if queue.is_empty() {
            continue;
        }
        let queue = Arc::new(Mutex::new(std::collections::VecDeque::from(queue)));
        let lanes = opts.lanes.max(1);
        let errors: Arc<Mutex<Vec<String>>> = Arc::default();
        std::thread::scope(|s| {
            for lane in 0..lanes {
                let (queue, errors, progress) = (queue.clone(), errors.clone(), progress.clone());
                let (corpora, ccs, results, ca_dir, done) =
                    (&corpora, &ccs, &results, &ca_dir, &done);
                s.spawn(move || {
                    let r = run_lane(
                        exp, opts, net, lane, corpora, ccs, ca_dir, results, done, &queue,
                        &progress, total,
                    );
                    if let Err(e) = r {
                        errors
                            .lock()
                            .expect("lock")
                            .push(format!("lane {lane} on {}: {e}", net.name));
                    }
                });
            }
        });
        let errs = errors.lock().expect("lock");
        if !errs.is_empty() {
            return Err(errs.join("\n"));
        }
    }
    Ok(results)
}

/// What tells replay servers apart: their spec (without the port), as JSON.
type ServerKey = String;

/// The replay server a variant loads from, but for its port: the corpus, the lab CA,
/// and the variant's server options.
fn serve_spec(corpora: &Corpora, exp: &Experiment, v: usize, ca_dir: &Path) -> ServeSpec {
    let var = &exp.variants[v];
    let h3 = var.protocol == speedy_net::Protocol::H3;
    ServeSpec {
        archive: Some(corpora.list[corpora.of_variant[v]].0.clone()),
        ca_dir: Some(ca_dir.to_path_buf()),
        push: var.push,
        hint: var.hint,
        header_compression: var.header_compression,
        // Every server of an experiment with SCTP (or h3) variants listens for them,
        // so one server serves its TCP and UDP variants alike.
        sctp: exp.variants.iter().any(|v| v.sctp),
        sctp_rto_initial_ms: var.sctp_rto_initial_ms.filter(|_| var.sctp),
        h3: exp
            .variants
            .iter()
            .any(|v| v.protocol == speedy_net::Protocol::H3),
        // A TCP initial window of N segments as bytes (1,460-byte MSS), for QUIC.
        quic_initial_window: var.initcwnd.filter(|_| h3).map(|n| u64::from(n) * 1460),
        ..ServeSpec::default()
    }
}

/// The server a variant loads from.
fn server_key(corpora: &Corpora, exp: &Experiment, v: usize) -> ServerKey {
    // The CA directory is the lane's, the same for every variant.
    let spec = serve_spec(corpora, exp, v, Path::new(""));
    serde_json::to_string(&spec).expect("a ServeSpec serializes")
}

/// The lane's replay servers, one per [`ServerKey`] the variants use.
type Servers = HashMap<ServerKey, ReplayServer>;

fn start_servers(
    exp: &Experiment,
    opts: &RunOptions,
    topo: &Topology,
    corpora: &Corpora,
    ca_dir: &Path,
) -> Result<Servers, String> {
    let mut started = Servers::new();
    let mut port = 8443;
    for v in 0..exp.variants.len() {
        let key = server_key(corpora, exp, v);
        if started.contains_key(&key) {
            continue;
        }
        let mut serve = serve_spec(corpora, exp, v, ca_dir);
        serve.listen = format!("0.0.0.0:{port}");
        port += 1;
        let spec = ReplaySpec {
            speedy: &opts.speedy,
            serve,
        };
        started.insert(key, ReplayServer::start(topo, &spec)?);
    }
    Ok(started)
}

/// The lane's proxies, one per replay server a proxy variant loads from (port 3128 and
/// up on the first server address), each with its TCP series file.
#[allow(clippy::too_many_arguments)]
fn start_proxies(
    exp: &Experiment,
    opts: &RunOptions,
    topo: &Topology,
    corpora: &Corpora,
    ca_dir: &Path,
    servers: &Servers,
    net: &Network,
    lane: usize,
) -> Result<HashMap<ServerKey, ProxyServer>, String> {
    // In the order of the variants that first use each.
    let mut keys: Vec<ServerKey> = Vec::new();
    for v in (0..exp.variants.len()).filter(|&v| exp.variants[v].proxy.is_some()) {
        let key = server_key(corpora, exp, v);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let mut out = HashMap::new();
    for (i, key) in keys.into_iter().enumerate() {
        let series = opts.out.join(format!(
            "series/{}/lane{lane}-proxy{i}.jsonl",
            sanitize(&net.name)
        ));
        std::fs::create_dir_all(series.parent().expect("has parent")).map_err(|e| e.to_string())?;
        let resolve = servers[&key].resolve();
        let p = ProxyServer::start(
            topo,
            &opts.speedy,
            3128 + i as u16,
            &resolve,
            ca_dir,
            &series,
        )?;
        out.insert(key, p);
    }
    Ok(out)
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

/// Copies what `src` gained since byte `from` (whole lines) to `dst`.
fn copy_tail(src: &Path, from: u64, dst: &Path) -> Result<(), String> {
    use std::io::{Read, Seek, SeekFrom};
    // The sampler writes a tick's lines and flushes; give the last tick time to land.
    std::thread::sleep(Duration::from_millis(30));
    let mut f = std::fs::File::open(src).map_err(|e| format!("{}: {e}", src.display()))?;
    f.seek(SeekFrom::Start(from)).map_err(|e| e.to_string())?;
    let mut text = String::new();
    f.read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", src.display()))?;
    let whole = text.rfind('\n').map_or("", |i| &text[..=i]);
    std::fs::create_dir_all(dst.parent().expect("has parent")).map_err(|e| e.to_string())?;
    std::fs::write(dst, whole).map_err(|e| format!("{}: {e}", dst.display()))
}

fn sh(topo: &Topology, side: Side, prog: &str, args: &[&str]) -> Result<String, String> {
    let o = topo
        .command(side, prog)
        .args(args)
        .output()
        .map_err(|e| format!("{prog}: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "{prog} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Applies a variant's TCP knobs inside both namespaces (never on the host): `cc` is
/// the algorithm [`resolve_cc`] picked for it.
fn apply_tcp_knobs(
    topo: &Topology,
    v: &Variant,
    cc: Option<&Cc>,
    default_cc: &str,
) -> Result<(), String> {
    // The congestion control is always set: a variant without `cc` gets the namespaces'
    // default back, not the previous variant's choice (the value is recorded in each row).
    let default = match cc {
        Some(c) if !c.per_route => &c.name,
        _ => default_cc,
    };
    let set = [
        format!("net.ipv4.tcp_no_metrics_save={}", v.no_metrics_save as u8),
        format!(
            "net.ipv4.tcp_slow_start_after_idle={}",
            v.slow_start_after_idle.unwrap_or(true) as u8
        ),
        // RACK (bit 1 of tcp_recovery) and TLP (tcp_early_retrans 3, the kernel's
        // default) on, or both off.
        format!("net.ipv4.tcp_recovery={}", v.rack_tlp as u8),
        format!("net.ipv4.tcp_early_retrans={}", 3 * v.rack_tlp as u8),
        format!("net.ipv4.tcp_congestion_control={default}"),
    ];
    let args: Vec<&str> = ["-q", "-w"]
        .into_iter()
        .chain(set.iter().map(String::as_str))
        .collect();
    for side in [Side::Client, Side::Server] {
        // One process per namespace and load, all five settings in it.
        sh(topo, side, "sysctl", &args)?;
        set_route_option(
            topo,
            side,
            "congctl",
            cc.filter(|c| c.per_route).map(|c| c.name.clone()),
        )?;
    }
    set_route_option(
        topo,
        Side::Server,
        "initcwnd",
        Some(v.initcwnd.unwrap_or(10).to_string()),
    )?;
    set_route_option(
        topo,
        Side::Client,
        "initrwnd",
        v.initrwnd.map(|w| w.to_string()),
    )?;
    set_route_option(
        topo,
        Side::Server,
        "rto_min",
        v.rto_min_ms.map(|ms| format!("{ms}ms")),
    )?;
    Ok(())
}

/// Sets (or, with `None`, clears) a per-route option (`initcwnd`, `initrwnd`,
/// `rto_min`) on every route of one namespace. `ip route show` prints a locked metric as
/// `rto_min lock 3s`, which `ip route replace` does not take back: `lock` words are
/// dropped (the lab locks nothing else), and the old value of `knob` goes.
fn set_route_option(
    topo: &Topology,
    side: Side,
    knob: &str,
    value: Option<String>,
) -> Result<(), String> {
    let routes = sh(topo, side, "ip", &["route", "show"])?;
    for r in routes.lines().filter(|l| !l.trim().is_empty()) {
        let mut words: Vec<&str> = r.split_whitespace().filter(|w| *w != "lock").collect();
        if let Some(i) = words.iter().position(|w| *w == knob) {
            words.drain(i..(i + 2).min(words.len()));
        }
        let mut args = vec!["route", "replace"];
        args.extend(words.iter());
        if let Some(v) = &value {
            args.extend([knob, v.as_str()]);
        }
        sh(topo, side, "ip", &args)?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run_lane(
    exp: &Experiment,
    opts: &RunOptions,
    net: &Network,
    lane: usize,
    corpora: &Corpora,
    ccs: &[Option<Cc>],
    ca_dir: &Path,
    results: &Path,
    done: &HashSet<String>,
    queue: &Mutex<std::collections::VecDeque<Job>>,
    progress: &Mutex<(usize, Instant)>,
    total: usize,
) -> Result<(), String> {
    let mut link = net.link.clone();
    let mut topo = topology_for(&corpora.all_pages(), &link, exp.seed)?;
    // The namespaces' own default congestion control, for variants that name none.
    let default_cc = sh(
        &topo,
        Side::Server,
        "sysctl",
        &["-n", "net.ipv4.tcp_congestion_control"],
    )?
    .trim()
    .to_string();
    let servers = start_servers(exp, opts, &topo, corpora, ca_dir)?;
    let proxies = start_proxies(exp, opts, &topo, corpora, ca_dir, &servers, net, lane)?;
    let mut last_har: HashMap<String, PathBuf> = HashMap::new();
    loop {
        let Some(job) = queue.lock().expect("lock").pop_front() else {
            break;
        };
        let visits: Vec<&PageInfo> = job
            .visits
            .iter()
            .map(|&i| corpora.page(job.variant, i).0)
            .collect();
        let archive = corpora.page(job.variant, job.visits[0]).1;
        let session = exp.session_think.is_some();
        // A session's file names and link seed say "session"; a load's, its page.
        let stem = if session {
            "session".to_string()
        } else {
            visits[0].name.clone()
        };
        let variant = &exp.variants[job.variant];
        let cc = ccs[job.variant].as_ref();
        apply_tcp_knobs(&topo, variant, cc, &default_cc)?;
        // A fresh link per load, seeded by (experiment seed, page, run): every variant of a
        // run meets the same random loss sequence, and which lane runs a load changes
        // nothing.
        topo.stop_link();
        link.seed = load_seed(exp.seed, &stem, job.run);
        topo.start_link(&link)
            .map_err(|e| format!("restarting the link: {e}"))?;
        // Where this load's files go under the output directory.
        let file = |dir: &str, ext: &str| {
            format!(
                "{dir}/{}/{}/{stem}-run{}.{ext}",
                sanitize(&net.name),
                variant.name,
                job.run
            )
        };
        let rel = file("hars", "har");
        let har = opts.out.join(&rel);
        std::fs::create_dir_all(har.parent().expect("has parent")).map_err(|e| e.to_string())?;
        let skey = server_key(corpora, exp, job.variant);
        let resolve = servers[&skey].resolve();
        let proxy = variant.proxy.as_ref().map(|_| &proxies[&skey]);
        let series_from = proxy.map(|p| file_len(&p.series));
        let t0 = Instant::now();
        let mut conns: Vec<ConnSample> = Vec::new();
        let ss = || sh(&topo, Side::Server, "ss", &["-tinH", "state", "connected"]);
        // Connections of the previous load still closing are not this load's.
        let earlier: HashSet<(String, String)> = ss()
            .map(|t| {
                parse_ss(&t)
                    .into_iter()
                    .map(|c| (c.local, c.peer))
                    .collect()
            })
            .unwrap_or_default();
        // Link and server counters over time: a session's visits are cut from them.
        let mut snaps: Vec<Snapshot> = vec![Snapshot::take(&topo, &servers)?];
        let mut sample = || {
            // A failed sample (ss missing) loses only the per-connection figures.
            if let Ok(t) = ss() {
                for c in parse_ss(&t)
                    .into_iter()
                    .filter(|c| !earlier.contains(&(c.local.clone(), c.peer.clone())))
                {
                    match conns
                        .iter_mut()
                        .find(|x| x.local == c.local && x.peer == c.peer)
                    {
                        Some(x) => *x = c,
                        None => conns.push(c),
                    }
                }
            }
            if session {
                if let Ok(s) = Snapshot::take(&topo, &servers) {
                    snaps.push(s);
                }
            }
        };
        let status = load(
            &topo,
            opts,
            exp,
            &visits,
            variant,
            archive,
            ca_dir,
            &resolve,
            proxy.map(|p| p.addr),
            &har,
            last_har.get(&visits[0].name),
            &mut sample,
        )?;
        sample();
        snaps.push(Snapshot::take(&topo, &servers)?);
        // Stopped here (restarted before the next load) for the forwarding thread's own
        // measure of this load's timing.
        topo.stop_link();
        let fwd = topo.forward_stats();
        let cc = cc.map_or(default_cc.as_str(), |c| c.name.as_str());
        let h = Har::read(&har).map_err(|e| format!("{e} (loader exit {status})"))?;
        // Which of the HAR's pages are measured: a session's every visit, a revisit's
        // second, a load's one.
        let measured: Vec<(usize, &PageInfo)> = if session {
            visits.iter().copied().enumerate().collect()
        } else {
            vec![(h.log.pages.len().saturating_sub(1), visits[0])]
        };
        let series = match (proxy, series_from) {
            (Some(p), Some(from)) => {
                let rel = file("series", "jsonl");
                copy_tail(&p.series, from, &opts.out.join(&rel))?;
                Some(rel)
            }
            _ => None,
        };
        for (visit, page) in measured {
            if done.contains(&key(&page.name, &net.name, &variant.name, job.run)) {
                continue;
            }
            // A session's visit counts the link and the server from its start to the next
            // visit's (the think time between is idle but for keep-alives); a load counts
            // all of it.
            let (before, after) = if session {
                visit_window(&h, visit, &snaps).map_err(|e| format!("{}: {e}", har.display()))?
            } else {
                (&snaps[0], snaps.last().expect("two snapshots"))
            };
            let mut row = row_from_har(
                exp,
                net,
                variant,
                page,
                job.run,
                &h,
                visit,
                &rel,
                &before.link,
                &after.link,
                cc.trim(),
            )
            .map_err(|e| format!("{}: {e} (loader exit {status})", har.display()))?;
            row.build = Some(build_id(&opts.speedy).to_string());
            row.calibration = match (&exp.pages, variant.calibration) {
                (_, Some(c)) => c.name.to_string(),
                (Pages::Synth(_, c), None) => c.name.to_string(),
                (Pages::Archive(..), None) => "archive".into(),
            };
            row.server_retransmissions = after.server.retrans_segs - before.server.retrans_segs;
            row.server_rto_timeouts = after.server.timeouts - before.server.timeouts;
            row.server_segments_out = after.server.out_segs - before.server.out_segs;
            row.loader_retransmissions =
                Some(after.loader.retrans_segs - before.loader.retrans_segs);
            row.loader_rto_timeouts = Some(after.loader.timeouts - before.loader.timeouts);
            if variant.sctp {
                row.server_sctp = Some(after.sctp.since(&before.sctp));
                // The loader's counters cover its whole run: a row of a one-page load.
                // A load over SCTP without them, or with others, is an error: never "none".
                if h.log.pages.len() == 1 {
                    let v = h.log.sctp.clone().ok_or_else(|| {
                        format!("{}: a load over SCTP whose HAR has no _sctp", har.display())
                    })?;
                    let c: speedy_net::sctp::counters::Counters = serde_json::from_value(v)
                        .map_err(|e| format!("{}: _sctp: {e}", har.display()))?;
                    row.loader_sctp = Some(c);
                }
            }
            row.server_connections = conns.clone();
            row.link_late_mean_us = (fwd.late_sum.as_micros() as u64)
                .checked_div(fwd.written)
                .unwrap_or(0);
            row.link_late_max_us = fwd.late_max.as_micros() as u64;
            row.headroom = HEADROOM.check(&row);
            row.tcp_series = series.clone();
            append_row(results, &row)?;
            if !session {
                last_har.insert(page.name.clone(), har.clone());
            }
            let mut p = progress.lock().expect("lock");
            p.0 += 1;
            let elapsed = p.1.elapsed().as_secs_f64();
            let eta = elapsed / p.0 as f64 * (total - p.0) as f64;
            eprintln!(
                "[{}/{}] {} | {} | {} | run {}: onLoad {:.0} ms ({:.1} s){} ETA {}",
                p.0,
                total,
                net.name,
                page.name,
                variant.name,
                job.run,
                row.on_load_ms,
                t0.elapsed().as_secs_f64(),
                match (row.failed_objects, &row.headroom) {
                    (0, None) => String::new(),
                    (n, None) => format!(", {n} failed objects"),
                    (0, Some(h)) => format!(", short of CPU: {h}"),
                    (n, Some(h)) => format!(", {n} failed objects, short of CPU: {h}"),
                },
                fmt_eta(eta)
            );
        }
        if !exp.think_time.is_zero() {
            std::thread::sleep(exp.think_time);
        }
    }
    drop(servers);
    topo.stop_link();
    Ok(())
}

/// The link seed of one load: a hash of the experiment seed, the page and the run.
pub(crate) fn load_seed(seed: u64, page: &str, run: u32) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for b in page.bytes().chain(run.to_le_bytes()) {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn fmt_eta(s: f64) -> String {
    let s = s.max(0.0) as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

/// A name made safe for a file path (letters, digits, `-`, `.`; anything else `_`).
pub(crate) fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn load(
    topo: &Topology,
    opts: &RunOptions,
    exp: &Experiment,
    visits: &[&PageInfo],
    v: &Variant,
    archive: &Path,
    ca_dir: &Path,
    resolve: &[(String, String)],
    proxy: Option<std::net::SocketAddr>,
    har: &Path,
    earlier: Option<&PathBuf>,
    sample: &mut dyn FnMut(),
) -> Result<String, String> {
    let page = visits[0];
    let mut spec = speedy_browser::LoadSpec::new(&page.url, v.protocol);
    spec.archive = Some(archive.to_path_buf());
    if let Some(p) = proxy {
        // tls = true with a proxy: TLS to the proxy; its origins stay plain (below).
        let scheme = if v.tls { "https" } else { "http" };
        spec.proxy = Some(format!("{scheme}://{p}"));
    }
    // The pages after the first, and the pause before each.
    let (then, pause): (Vec<&PageInfo>, Option<Duration>) = match exp.revisit_after {
        Some(after) => (vec![page], Some(after)),
        None => (visits[1..].to_vec(), exp.session_think),
    };
    if let (false, Some(pause)) = (then.is_empty(), pause) {
        spec.then = then.iter().map(|p| p.url.clone()).collect();
        spec.think_ms = pause.as_millis() as u64;
        spec.keepalive_ms = v.keepalive_ms.map(u64::from);
    }
    spec.tls = v.tls && proxy.is_none();
    spec.plain = !spec.tls;
    if v.single_domain {
        spec.spdy_domains = speedy_browser::Domains::Single;
    }
    spec.hint = v.hint;
    if v.prefetch {
        spec.prefetch = earlier.cloned();
    }
    spec.resolve = resolve.iter().map(|(h, a)| format!("{h}={a}")).collect();
    spec.cacert = Some(ca_dir.join("ca.pem"));
    spec.header_compression = v.header_compression;
    if let Some(n) = v.connections_per_host {
        spec.connections_per_host = n;
    }
    if let Some(n) = v.sessions {
        spec.sessions = n as usize;
    }
    if let Some(h) = v.tls_hello {
        spec.tls_hello = h;
    }
    spec.known_servers = v.known_servers == Some(true);
    spec.partition = v.partition != Some(false);
    if v.sctp {
        spec.transport = speedy_net::Carrier::Sctp;
        spec.cookie_bundling = v.cookie_bundling;
        spec.sctp_rto_initial_ms = v.sctp_rto_initial_ms;
    }
    if let Some(n) = v.max_connections {
        spec.max_connections = n;
    }
    spec.har = Some(har.to_path_buf());
    spec.timeout = exp.timeout.as_secs_f64();
    // The loader's stderr goes to a file beside its HAR, kept when it is not empty (its
    // warnings, and diagnostics such as SPEEDY_SCTP_STATS): a pipe read only at the end
    // would stall a loader that wrote more than the pipe holds.
    let log_path = har.with_extension("stderr.txt");
    let log = std::fs::File::create(&log_path)
        .map_err(|e| format!("creating {}: {e}", log_path.display()))?;
    let mut cmd = topo.command(Side::Client, &opts.speedy);
    cmd.stdout(Stdio::null()).stderr(log);
    crate::testbed::die_with_parent(&mut cmd);
    let mut child = crate::testbed::spawn_load(cmd, &spec)?;
    let deadline = Instant::now()
        + exp.timeout * (then.len() as u32 + 1)
        + pause.unwrap_or_default() * then.len() as u32
        + Duration::from_secs(15);
    let mut next_sample = Instant::now() + SS_EVERY;
    loop {
        if Instant::now() >= next_sample {
            sample();
            next_sample = Instant::now() + SS_EVERY;
        }
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            if std::fs::metadata(&log_path).is_ok_and(|m| m.len() == 0) {
                let _ = std::fs::remove_file(&log_path);
            }
            if !har.exists() {
                let err = std::fs::read_to_string(&log_path).unwrap_or_default();
                return Err(format!("the loader wrote no HAR ({st}): {}", err.trim()));
            }
            return Ok(st.to_string());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the loader did not finish {} within {:?}",
                page.url, exp.timeout
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[allow(clippy::too_many_arguments)]
fn row_from_har(
    exp: &Experiment,
    net: &Network,
    v: &Variant,
    page: &PageInfo,
    run: u32,
    h: &Har,
    visit: usize,
    rel: &str,
    before: &linkem::Counters,
    after: &linkem::Counters,
    cc: &str,
) -> Result<Row, String> {
    // The loader's HAR through the one model: a missing field (a `_totals` counter, the
    // page timings, `_protocol`) is an error, never a 0.
    let lp = h.loaded_page_at(visit)?;
    let (p, t) = (lp.page, lp.totals);
    let drops =
        |c: &linkem::Counters| c.up.drops.iter().sum::<u64>() + c.down.drops.iter().sum::<u64>();
    Ok(Row {
        experiment: exp.name.clone(),
        seed: Some(exp.seed),
        // The caller knows the program.
        build: None,
        page: page.name.clone(),
        network: net.name.clone(),
        network_desc: net.desc.clone(),
        sweep: net.sweep.as_ref().map(|(s, p, v)| SweepPoint {
            sweep: s.clone(),
            param: p.clone(),
            value: *v,
        }),
        variant: v.name.clone(),
        baseline: v.baseline,
        protocol: lp.protocol.to_ascii_lowercase(),
        tls: v.tls,
        run,
        on_load_ms: p.page_timings.on_load,
        on_content_load_ms: p.page_timings.on_content_load,
        objects: t.requests as u32,
        failed_objects: t.failed as u32,
        bytes_down: after.down.bytes_out - before.down.bytes_out,
        bytes_up: after.up.bytes_out - before.up.bytes_out,
        packets_down: after.down.packets_out - before.down.packets_out,
        packets_up: after.up.packets_out - before.up.packets_out,
        link_drops: drops(after) - drops(before),
        header_bytes_sent_raw: t.header_bytes_sent_raw,
        header_bytes_sent_compressed: t.header_bytes_sent,
        header_bytes_received_raw: t.header_bytes_received_raw,
        header_bytes_received_compressed: t.header_bytes_received,
        connections: t.connections as u32,
        tcp_cc: cc.to_string(),
        tcp_retransmissions: t.retransmits,
        har: rel.to_string(),
        calibration: String::new(),
        header_compression: v.header_compression.name().to_string(),
        initcwnd: v.initcwnd.unwrap_or(10),
        initrwnd: v.initrwnd,
        slow_start_after_idle: v.slow_start_after_idle.unwrap_or(true),
        rack_tlp: v.rack_tlp,
        no_metrics_save: v.no_metrics_save,
        connections_per_host: v.connections_per_host.unwrap_or(6) as u32,
        max_connections: v.max_connections.unwrap_or(32) as u32,
        against: v.against.clone(),
        variant_index: exp
            .variants
            .iter()
            .position(|x| x.name == v.name)
            .map(|i| i as u32),
        server_retransmissions: 0,
        server_rto_timeouts: 0,
        loader_retransmissions: None,
        loader_rto_timeouts: None,
        server_sctp: None,
        loader_sctp: None,
        server_segments_out: 0,
        server_connections: Vec::new(),
        link_late_mean_us: 0,
        link_late_max_us: 0,
        loader_lag_max_us: t.event_loop_lag_max_us,
        headroom: None,
        proxy: v.proxy.clone(),
        transport: v.sctp.then(|| "sctp".to_string()),
        cookie_bundling: v.sctp.then_some(v.cookie_bundling),
        sctp_rto_initial_ms: v.sctp.then(|| v.sctp_rto_initial_ms.unwrap_or(3000)),
        rto_min_ms: v.rto_min_ms,
        keepalive_ms: v.keepalive_ms,
        sessions: v.sessions,
        known_servers: v.known_servers,
        partition: v.partition,
        tls_hello: v.tls.then(|| {
            let h = v.tls_hello.unwrap_or(speedy_net::tls::Hello::Chromium);
            h.name().to_string()
        }),
        revisit_after_ms: exp.revisit_after.map(|d| d.as_millis() as u64),
        session_think_ms: exp.session_think.map(|d| d.as_millis() as u64),
        session_visit: exp.session_think.map(|_| visit as u32),
        tcp_series: None,
    })
}

/// The link's, both namespaces' TCP and the replay servers' SCTP counters at one moment.
struct Snapshot {
    at_ms: f64,
    link: linkem::Counters,
    server: TcpMib,
    /// The client namespace's TCP MIB: the loader's sockets only.
    loader: TcpMib,
    /// The lane's replay servers' SCTP counters, summed.
    sctp: speedy_net::sctp::counters::Counters,
}

impl Snapshot {
    fn take(topo: &Topology, servers: &Servers) -> Result<Snapshot, String> {
        let at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
        Ok(Snapshot {
            at_ms,
            link: topo.counters(),
            server: tcp_counters(topo, Side::Server)?,
            loader: tcp_counters(topo, Side::Client)?,
            sctp: servers
                .values()
                .fold(Default::default(), |sum, s| sum.plus(&s.sctp_counters())),
        })
    }
}

/// The snapshots around visit `i` of a session's HAR: the last taken before the visit
/// started (the first snapshot for the first visit) and the last taken before the next
/// visit started (the final snapshot for the last visit). Snapshots come every
/// [`SS_EVERY`], and visits are a think time apart, so a window's edges fall in the idle
/// time between visits.
fn visit_window<'a>(
    h: &Har,
    i: usize,
    snaps: &'a [Snapshot],
) -> Result<(&'a Snapshot, &'a Snapshot), String> {
    let start = |i: usize| {
        let p = &h.log.pages[i];
        speedy_archive::date::parse_ms(&p.started_date_time).ok_or_else(|| {
            format!(
                "log.pages[{i}].startedDateTime {:?}: not a date",
                p.started_date_time
            )
        })
    };
    let before = |t: f64| {
        snaps
            .iter()
            .rev()
            .find(|s| s.at_ms <= t)
            .unwrap_or(&snaps[0])
    };
    let from = if i == 0 { &snaps[0] } else { before(start(i)?) };
    let to = if i + 1 < h.log.pages.len() {
        before(start(i + 1)?)
    } else {
        snaps.last().expect("at least one snapshot")
    };
    Ok((from, to))
}

/// The TCP MIB of one side's namespace (only that side's processes' sockets count), read
/// by a thread in the namespace (as `Topology::tun_stats` reads its devices), not a process.
fn tcp_counters(topo: &Topology, side: Side) -> Result<TcpMib, String> {
    let text = topo
        .spawn_in(side, || {
            let mut t = std::fs::read_to_string("/proc/thread-self/net/snmp")?;
            t.push_str(&std::fs::read_to_string("/proc/thread-self/net/netstat")?);
            Ok(t)
        })
        .join()
        .map_err(|_| "the MIB reader thread panicked".to_string())?
        .map_err(|e| format!("reading the namespace's TCP MIB: {e}"))?;
    let name = match side {
        Side::Client => "client",
        Side::Server => "server",
    };
    parse_tcp_mib(&text)
        .ok_or_else(|| format!("the {name} namespace's /proc/net/snmp has no Tcp counters"))
}

/// The build of the `speedy` program at `path`: its version and the first 16 hex digits of
/// the file's SHA-256, computed once per process.
pub fn build_id(path: &Path) -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        use sha2::Digest;
        let hash = std::fs::read(path)
            .map(|b| hex::encode(&sha2::Sha256::digest(&b)[..8]))
            .unwrap_or_else(|_| "unreadable".into());
        format!("speedy {} sha256:{hash}", env!("CARGO_PKG_VERSION"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_the_cc_by_sysctl_or_per_route_and_falls_back_where_the_kernel_lacks_it() {
        let mut exp = crate::experiment::parse(
            crate::experiment::built_in("quick").unwrap().toml,
            "q",
            Path::new("."),
        )
        .unwrap();
        exp.variants.truncate(2); // quick's HTTP/1.1 and SPDY
        exp.variants[0].cc_preference = vec![];
        exp.variants[1].cc_preference = vec!["cubic".into(), "reno".into()];
        let cc = |name: &str, per_route| {
            Some(Cc {
                name: name.into(),
                per_route,
            })
        };
        // Allowed as a namespace default: the sysctl; only available: per route.
        let ccs = resolve_cc(&exp, "reno cubic", "reno cubic bbr").unwrap();
        assert_eq!(ccs, vec![None, cc("cubic", false)]);
        let ccs = resolve_cc(&exp, "reno bbr", "reno bbr cubic").unwrap();
        assert_eq!(ccs, vec![None, cc("cubic", true)]);
        // The kernel lacks cubic: the next preference.
        let ccs = resolve_cc(&exp, "reno bbr", "reno bbr").unwrap();
        assert_eq!(ccs, vec![None, cc("reno", false)]);
        let e = resolve_cc(&exp, "bbr", "bbr").unwrap_err();
        assert!(e.contains("modprobe tcp_cubic"), "{e}");
    }

    #[test]
    fn alternates_variants_run_by_run() {
        let q = crate::experiment::built_in("quick").unwrap().toml;
        let mut exp = crate::experiment::parse(q, "q", Path::new(".")).unwrap();
        exp.variants.truncate(2); // quick's HTTP/1.1 and SPDY
        let js = jobs(&exp, 2);
        assert_eq!(js.len(), exp.loads(2));
        let first: Vec<usize> = js
            .iter()
            .filter(|j| j.visits == [0])
            .map(|j| j.variant)
            .collect();
        assert_eq!(
            &first[..4],
            &[0, 1, 1, 0],
            "run 0 starts with variant 0, run 1 with variant 1"
        );
    }
}
