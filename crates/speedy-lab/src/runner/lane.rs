//! A lane: its own namespace pair and link, the replay servers and proxies its variants
//! need, and the loads it takes from the run's queues, one at a time, on one network
//! after another.

use super::budget::Budget;
use super::governor::{Gate, Governor};
use super::knobs::{self, Cc};
use super::plan::{key, Corpora, Job, PageInfo};
use super::probes::{self, link_lateness, visit_window, ServerKey, Servers, Watch};
use super::progress::{fmt_eta, Progress};
use super::queue::Queues;
use super::{browser, build_id, load, load_seed, row, sanitize, RunOptions};
use crate::experiment::{Client, Experiment, Network};
use crate::results::{append_row, Row};
use crate::testbed::{topology_for, ProxyServer, ReplayServer, ReplaySpec};
use linkem::{Side, Topology};
use speedy_archive::har::Har;
use speedy_browser::LoadSpec;
use speedy_server::spec::ServeSpec;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

/// The replay server a variant loads from, but for its port: the corpus, the lab CA,
/// and the variant's server options.
fn serve_spec(corpora: &Corpora, exp: &Experiment, v: usize, ca_dir: &Path) -> ServeSpec {
    let var = &exp.variants[v];
    let mut spec = ServeSpec {
        archive: Some(corpora.list[corpora.of_variant[v]].0.clone()),
        ca_dir: Some(ca_dir.to_path_buf()),
        recorded_think_time: exp.recorded_think_time,
        // Every server of an experiment with SCTP (or h3) variants listens for them,
        // so one server serves its TCP and UDP variants alike (SCTP on a UDP port of
        // its own, which the test bed reads back from the start-up line).
        sctp: exp.variants.iter().any(|v| v.is_sctp()),
        h3: exp
            .variants
            .iter()
            .any(|v| v.protocol == speedy_net::Protocol::H3),
        ..ServeSpec::default()
    };
    var.configure_serve(&mut spec);
    spec
}

/// The server a variant loads from.
fn server_key(corpora: &Corpora, exp: &Experiment, v: usize) -> ServerKey {
    // The CA directory is the lane's, the same for every variant.
    let spec = serve_spec(corpora, exp, v, Path::new(""));
    serde_json::to_string(&spec).expect("a ServeSpec serializes")
}

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
/// up on the first server address), each with its TCP series file (each load's part of
/// it is copied beside the load's HAR).
fn start_proxies(
    exp: &Experiment,
    opts: &RunOptions,
    topo: &Topology,
    corpora: &Corpora,
    ca_dir: &Path,
    servers: &Servers,
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
        let series = opts.out.join(format!("series/lane{lane}-proxy{i}.jsonl"));
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

/// What a job measured, from which its rows are made.
struct Measured {
    /// The load's HAR, as read back.
    h: Har,
    /// Where it is.
    har: PathBuf,
    /// Its path under the output directory.
    rel: String,
    /// The loader's spec (`None`: Chromium loaded the page).
    spec: Option<LoadSpec>,
    /// The counters and connections sampled around the load.
    watch: Watch,
    /// The proxy's TCP series of the load, under the output directory.
    series: Option<String>,
    /// How the client ended, for errors.
    status: String,
    /// When the load started.
    t0: Instant,
}

/// What every lane of a run shares: the experiment, its plan, where rows go, and the
/// progress line.
pub(super) struct Shared<'a> {
    /// The experiment.
    pub exp: &'a Experiment,
    /// How it runs.
    pub opts: &'a RunOptions,
    /// Its corpora.
    pub corpora: &'a Corpora,
    /// Per variant, the congestion control [`super::knobs::resolve_cc`] picked.
    pub ccs: &'a [Option<Cc>],
    /// The lab CA's directory.
    pub ca_dir: &'a Path,
    /// The results file rows are appended to.
    pub results: &'a Path,
    /// Keys of the rows already there (resumed loads skip them).
    pub done: &'a HashSet<String>,
    /// Rows written and jobs finished so far, for the progress line.
    pub progress: &'a Mutex<Progress>,
    /// Rows to write in all.
    pub total: usize,
    /// Jobs to run in all (a session is one job of many rows).
    pub jobs: usize,
    /// The CPU the lanes share ([`Budget`]).
    pub budget: &'a Budget,
    /// Which lanes take loads now ([`Governor`]).
    pub governor: &'a Governor,
    /// Chromium's `--version`, when a variant has `client = "chromium"`.
    pub chromium: Option<&'a str>,
}

/// One lane, on one network at a time: its namespaces and link, replay servers and proxies.
pub(super) struct Lane<'a> {
    sh: &'a Shared<'a>,
    /// Index of `net` in the experiment's networks.
    network: usize,
    net: &'a Network,
    link: linkem::LinkConfig,
    topo: Topology,
    /// The namespaces' own default congestion control, for variants that name none.
    default_cc: String,
    /// The TCP knobs the namespaces have now (set by an earlier load of this lane).
    knobs: Option<knobs::Knobs>,
    servers: Servers,
    /// Per variant, the key of its server in `servers` (and `proxies`).
    keys: Vec<ServerKey>,
    proxies: HashMap<ServerKey, ProxyServer>,
    /// Each page's last HAR in this lane (client prefetch learns from it).
    last_har: HashMap<String, PathBuf>,
    /// The lab CA's key hash, when a variant loads with Chromium (over QUIC).
    ca_spki: Option<String>,
    /// This lane's Chromium profile directory (made afresh for each load).
    profile: PathBuf,
}

/// Loads failing one after another after which a lane gives up: faults (a server or
/// browser that dies, a loader that hangs) are rare, and a failure that repeats is a
/// set-up someone must look at.
const MAX_FAILURES_IN_A_ROW: usize = 3;

/// Runs jobs from `queues` on lane `lane` until none is left: on the network of its first
/// job, then on the next network with work when its own has none left
/// ([`Queues::take`], [`Lane::move_to`]). A load that fails is written to `failures.jsonl`
/// with its reason and tried once more at the end of its network's queue; a server or
/// proxy that died is started again before the next load. A lane that gives up stops
/// the run ([`Queues::stop`]).
pub(super) fn run_lane(
    sh: &Shared,
    lane: usize,
    queues: &Queues,
    gate: &Gate,
) -> Result<(), String> {
    let ran = take_loads(sh, lane, queues, gate);
    if ran.is_err() {
        queues.stop();
    }
    ran
}

fn take_loads(sh: &Shared, lane: usize, queues: &Queues, gate: &Gate) -> Result<(), String> {
    // The lanes of the gate open together before any load; the others when they first
    // take one (a lane the governor never opens costs nothing), one at a time.
    let mut opened: Option<Lane> = None;
    let mut first = gate.holds(lane);
    let mut in_a_row = 0;
    while sh.governor.admit(lane, &|| queues.is_done()) {
        let Some((job, begins_network)) = queues.take(opened.as_ref().map(|l| l.network)) else {
            break;
        };
        if begins_network {
            sh.governor.brace(&sh.exp.networks[job.network].name);
        }
        if let Some(l) = opened.as_mut().filter(|l| l.network != job.network) {
            let net = &sh.exp.networks[job.network].name;
            l.move_to(job.network)
                .map_err(|e| format!("moving to {net}: {e}"))?;
        }
        if opened.is_none() {
            let net = &sh.exp.networks[job.network];
            let l = if std::mem::take(&mut first) {
                let l = Lane::open(sh, job.network, lane);
                gate.arrive();
                if let Some(think) = sh.exp.session_think {
                    std::thread::sleep(gate.stagger(lane, think));
                }
                l
            } else {
                gate.one_by_one(|| Lane::open(sh, job.network, lane))
            };
            opened = Some(l.map_err(|e| format!("on {}: {e}", net.name))?);
        }
        let l = opened.as_mut().expect("opened above");
        // The job's share of the CPU, for as long as it runs.
        let shares = match sh.exp.variants[job.variant].client {
            Client::Loader => 1,
            Client::Chromium => sh.budget.chromium,
        };
        let taken = sh.budget.take(shares);
        let started = Instant::now();
        let result = l.attend(lane).and_then(|()| l.run_job(&job));
        drop(taken);
        match result {
            Ok(usage) => {
                in_a_row = 0;
                sh.governor.report(usage, started);
            }
            Err(reason) => {
                in_a_row += 1;
                l.failed(&job, lane, &reason)
                    .map_err(|e| format!("on {}: {e}", l.net.name))?;
                if in_a_row >= MAX_FAILURES_IN_A_ROW {
                    return Err(format!(
                        "on {}: {in_a_row} loads in a row failed (failures.jsonl); the last: \
                         {reason}",
                        l.net.name
                    ));
                }
                if !job.retry {
                    queues.push_back(Job {
                        retry: true,
                        ..job.clone()
                    });
                }
            }
        }
        if !sh.exp.think_time.is_zero() {
            std::thread::sleep(sh.exp.think_time);
        }
    }
    if first {
        // A lane of the gate that found no job: the others wait for it no longer.
        gate.arrive();
    }
    if let Some(l) = opened {
        l.close();
    }
    Ok(())
}

impl<'a> Lane<'a> {
    /// Creates the namespaces and link, and starts the servers and proxies.
    fn open(sh: &'a Shared<'a>, network: usize, lane: usize) -> Result<Lane<'a>, String> {
        let (exp, opts, corpora) = (sh.exp, sh.opts, sh.corpora);
        let net = &exp.networks[network];
        let link = net.link.clone();
        let topo = topology_for(
            corpora.max_hosts(),
            &corpora.recorded_addrs,
            &link,
            exp.seed,
        )?;
        let default_cc = knobs::sh(
            &topo,
            Side::Server,
            "sysctl",
            &["-n", "net.ipv4.tcp_congestion_control"],
        )?
        .trim()
        .to_string();
        let servers = start_servers(exp, opts, &topo, corpora, sh.ca_dir)?;
        let proxies = start_proxies(exp, opts, &topo, corpora, sh.ca_dir, &servers, lane)?;
        let keys = (0..exp.variants.len())
            .map(|v| server_key(corpora, exp, v))
            .collect();
        // The replay servers have made the lab CA by now.
        let ca_spki = match sh.chromium {
            Some(_) => Some(crate::chromium::ca_spki_hash(sh.ca_dir)?),
            None => None,
        };
        let profile = opts.out.join(format!("chromium-profiles/lane{lane}"));
        Ok(Lane {
            sh,
            network,
            net,
            link,
            topo,
            default_cc,
            knobs: None,
            servers,
            keys,
            proxies,
            last_har: HashMap::new(),
            ca_spki,
            profile,
        })
    }

    /// Moves the lane to network `network`: its next load's link is that network's. The
    /// namespaces, servers and proxies are the same for every network (only the link
    /// differs), so nothing is set up again beside the other lanes' loads. What earlier
    /// loads taught the lane is forgotten, as on a lane new to the network: the prefetch
    /// variants' last HAR of each page, and both namespaces' TCP metrics cache (RTT,
    /// ssthresh and cwnd per peer, which a variant with `no_metrics_save = false` saves
    /// and every connection then starts from).
    fn move_to(&mut self, network: usize) -> Result<(), String> {
        let net = &self.sh.exp.networks[network];
        self.topo.stop_link();
        for side in [Side::Client, Side::Server] {
            knobs::sh(&self.topo, side, "ip", &["tcp_metrics", "flush", "all"])?;
        }
        self.network = network;
        self.net = net;
        self.link = net.link.clone();
        self.last_har.clear();
        Ok(())
    }

    /// Stops the lane's servers, proxies and link; its namespaces go with it.
    fn close(mut self) {
        self.servers.clear();
        self.proxies.clear();
        self.topo.stop_link();
    }

    /// Runs one job: the variant's knobs, a fresh link, the client (the loader or
    /// Chromium, sampled), and a row per measured page; returns the largest share of the
    /// headroom bounds a row used ([`super::Headroom::usage`]).
    fn run_job(&mut self, job: &Job) -> Result<f64, String> {
        let (exp, opts, corpora) = (self.sh.exp, self.sh.opts, self.sh.corpora);
        let visits: Vec<&PageInfo> = job
            .visits
            .iter()
            .map(|&i| corpora.page(job.variant, i).0)
            .collect();
        let session = exp.session_think.is_some();
        // A session's file names and link seed say "session"; a load's, its page.
        let stem = if session {
            "session".to_string()
        } else {
            visits[0].name.clone()
        };
        let variant = &exp.variants[job.variant];
        self.reset(job, &stem)?;
        // Where this load's files go under the output directory.
        let file = |dir: &str, ext: &str| {
            format!(
                "{dir}/{}/{}/{stem}-run{}.{ext}",
                sanitize(&self.net.name),
                variant.name,
                job.run
            )
        };
        let rel = file("hars", "har");
        let har = opts.out.join(&rel);
        std::fs::create_dir_all(har.parent().expect("has parent")).map_err(|e| e.to_string())?;
        let skey = &self.keys[job.variant].clone();
        let proxy = variant.proxy.as_ref().map(|_| &self.proxies[skey]);
        let series_from = proxy.map(|p| (p.series.clone(), probes::file_len(&p.series)));
        let spec = (variant.client == Client::Loader).then(|| {
            load::spec(
                exp,
                variant,
                &load::Target {
                    visits: &visits,
                    archive: corpora.page(job.variant, job.visits[0]).1,
                    ca_dir: self.sh.ca_dir,
                    server: &self.servers[skey],
                    proxy: proxy.map(|p| p.addr),
                    har: &har,
                    earlier: self.last_har.get(&visits[0].name),
                },
            )
        });
        let t0 = Instant::now();
        let mut watch = Watch::start(&self.topo, &self.servers, session)?;
        let status = self.run_client(job, spec.as_ref(), &har, &mut watch);
        // Stopped here (restarted before the next load): nothing crosses it between loads.
        self.topo.stop_link();
        // A load whose server died under it measured the fault, not the variant.
        if let Some(why) = self.died_meanwhile() {
            return Err(why);
        }
        let status = status?;
        let h = Har::read(&har).map_err(|e| format!("{e} ({status})"))?;
        let series = match series_from {
            Some((path, from)) => {
                let rel = file("series", "jsonl");
                probes::copy_tail(&path, from, &opts.out.join(&rel))?;
                Some(rel)
            }
            None => None,
        };
        let measured = Measured {
            h,
            har,
            rel,
            spec,
            watch,
            series,
            status,
            t0,
        };
        let took = t0.elapsed();
        self.sh.progress.lock().expect("lock").job_done(took);
        self.write_rows(job, &visits, &measured)
    }

    /// Runs the variant's client for `job` (the loader with `spec`, or Chromium),
    /// sampling `watch` meanwhile; returns what to say of how it ended.
    fn run_client(
        &self,
        job: &Job,
        spec: Option<&LoadSpec>,
        har: &Path,
        watch: &mut Watch,
    ) -> Result<String, String> {
        let (topo, servers) = (&self.topo, &self.servers);
        let variant = &self.sh.exp.variants[job.variant];
        let status = match spec {
            Some(spec) => load::run(topo, self.sh.opts, spec, &mut || {
                watch.sample(topo, servers)
            })
            .map(|st| format!("loader exit {st}"))?,
            None => {
                let page = self.sh.corpora.page(job.variant, job.visits[0]).0;
                let chromium = self
                    .sh
                    .chromium
                    .ok_or("no Chromium for a chromium variant")?;
                let target = browser::Target {
                    program: &self.sh.opts.chromium,
                    version: chromium,
                    page,
                    server: &servers[&self.keys[job.variant]],
                    ca_spki: self.ca_spki.as_deref().unwrap_or_default(),
                    profile: &self.profile,
                    har,
                    timeout: self.sh.exp.timeout,
                };
                browser::run(topo, variant, &target, &mut || watch.sample(topo, servers))?
            }
        };
        watch.finish(topo, servers)?;
        Ok(status)
    }

    /// Appends the rows of a job's measured pages (a session's every visit, a revisit's
    /// second, a load's one) to the results; returns the largest share of the headroom
    /// bounds one of them used.
    fn write_rows(&mut self, job: &Job, visits: &[&PageInfo], m: &Measured) -> Result<f64, String> {
        let (exp, opts) = (self.sh.exp, self.sh.opts);
        let variant = &exp.variants[job.variant];
        let session = exp.session_think.is_some();
        let cc = self.sh.ccs[job.variant].as_ref();
        let cc = cc.map_or(self.default_cc.as_str(), |c| c.name.as_str());
        let (h, har, watch) = (&m.h, &m.har, &m.watch);
        let measured: Vec<(usize, &PageInfo)> = if session {
            visits.iter().copied().enumerate().collect()
        } else {
            vec![(h.log.pages.len().saturating_sub(1), visits[0])]
        };
        let mut usage = 0.0f64;
        for (visit, page) in measured {
            if self
                .sh
                .done
                .contains(&key(&page.name, &self.net.name, &variant.name, job.run))
            {
                continue;
            }
            // A session's visit counts the link and the server from its start to the next
            // visit's (the think time between is idle but for keep-alives); a load counts
            // all of it.
            let (from, to) = if session {
                visit_window(h, visit, &watch.snaps)
                    .map_err(|e| format!("{}: {e}", har.display()))?
            } else {
                (0, watch.snaps.len() - 1)
            };
            let (before, after) = (&watch.snaps[from], &watch.snaps[to]);
            let (link_late_mean_us, link_late_max_us) = link_lateness(&watch.snaps, from, to);
            let row = row::row(&row::Measured {
                exp,
                net: self.net,
                variant,
                spec: m.spec.as_ref(),
                page,
                run: job.run,
                har: h,
                har_path: har,
                rel: &m.rel,
                visit,
                before,
                after,
                cc: cc.trim(),
                build: build_id(&opts.speedy),
                conns: &watch.conns,
                link_late_mean_us,
                link_late_max_us,
                series: m.series.clone(),
            })
            .map_err(|e| format!("{}: {e} ({})", har.display(), m.status))?;
            append_row(self.sh.results, &row)?;
            usage = usage.max(super::HEADROOM.usage(&row));
            if !session {
                self.last_har.insert(page.name.clone(), har.clone());
            }
            self.progress(&row, m.t0);
        }
        Ok(usage)
    }

    /// Before a load: starts again any replay server or proxy that has died (killed,
    /// crashed), saying which and how it had ended.
    fn attend(&mut self, lane: usize) -> Result<(), String> {
        for s in self.servers.values_mut() {
            if let Some(how) = s.exited() {
                eprintln!(
                    "lane {lane} on {}: the replay server ended ({how}); starting it again",
                    self.net.name
                );
                s.restart(&self.topo)?;
            }
        }
        for p in self.proxies.values_mut() {
            if let Some(how) = p.exited() {
                eprintln!(
                    "lane {lane} on {}: the proxy ended ({how}); starting it again",
                    self.net.name
                );
                p.restart(&self.topo)?;
            }
        }
        Ok(())
    }

    /// After a load: the replay servers and proxies that ended while it ran, as a
    /// reason not to keep it (`None`: all run).
    fn died_meanwhile(&mut self) -> Option<String> {
        let mut dead = Vec::new();
        for s in self.servers.values_mut() {
            if let Some(how) = s.exited() {
                dead.push(format!("a replay server ended during the load ({how})"));
            }
        }
        for p in self.proxies.values_mut() {
            if let Some(how) = p.exited() {
                dead.push(format!("a proxy ended during the load ({how})"));
            }
        }
        (!dead.is_empty()).then(|| dead.join("; "))
    }

    /// Records that `job` failed for `reason` (failures.jsonl, and a line on stderr).
    fn failed(&self, job: &Job, lane: usize, reason: &str) -> Result<(), String> {
        let exp = self.sh.exp;
        let page = if exp.session_think.is_some() {
            "session".to_string()
        } else {
            self.sh
                .corpora
                .page(job.variant, job.visits[0])
                .0
                .name
                .clone()
        };
        let f = crate::results::FailedLoad {
            version: 1,
            network: self.net.name.clone(),
            page,
            variant: exp.variants[job.variant].name.clone(),
            run: job.run,
            reason: reason.to_string(),
            retry: job.retry,
        };
        eprintln!(
            "lane {lane} on {}: {} | {} | run {} failed: {reason}{}",
            f.network,
            f.page,
            f.variant,
            f.run,
            if job.retry {
                " (its second try: left to a resumed run)"
            } else {
                " (tried again at the end of the queue)"
            }
        );
        let path = self
            .sh
            .results
            .with_file_name(crate::results::FAILURES_FILE);
        crate::results::append_failure(&path, &f)
    }

    /// Before a load: the variant's TCP knobs, the previous load's connections aborted,
    /// and a fresh link seeded by (experiment seed, page or "session", run): every
    /// variant of a run meets the same random loss sequence, and which lane runs a load
    /// changes nothing.
    fn reset(&mut self, job: &Job, stem: &str) -> Result<(), String> {
        let variant = &self.sh.exp.variants[job.variant];
        let cc = self.sh.ccs[job.variant].as_ref();
        let want = knobs::Knobs::of(variant, cc, &self.default_cc);
        knobs::apply_tcp_knobs(&self.topo, want, &mut self.knobs)?;
        self.topo.stop_link();
        probes::abort_earlier_connections(&self.topo)?;
        self.link.seed = load_seed(self.sh.exp.seed, stem, job.run);
        self.topo
            .start_link(&self.link)
            .map_err(|e| format!("restarting the link: {e}"))
    }

    /// The progress line of a row written, with the run's ETA.
    fn progress(&self, row: &Row, t0: Instant) {
        let mut p = self.sh.progress.lock().expect("lock");
        p.rows += 1;
        let eta = p.eta(self.sh.jobs, self.sh.governor.target());
        eprintln!(
            "[{}/{}] {} | {} | {} | run {}: onLoad {:.0} ms{} ({:.1} s){} ETA {}",
            p.rows,
            self.sh.total,
            self.net.name,
            row.page,
            row.variant,
            row.run,
            row.on_load_ms,
            match (row.fcp_ms, row.lcp_ms) {
                (Some(f), Some(l)) => format!(", FCP {f:.0} ms, LCP {l:.0} ms"),
                (Some(f), None) => format!(", FCP {f:.0} ms"),
                _ => String::new(),
            },
            t0.elapsed().as_secs_f64(),
            match (failed_objects(row), &row.headroom) {
                (None, None) => String::new(),
                (Some(f), None) => format!(", {f}"),
                (None, Some(h)) => format!(", short of CPU: {h}"),
                (Some(f), Some(h)) => format!(", {f}, short of CPU: {h}"),
            },
            fmt_eta(eta)
        );
    }
}

/// The progress line's words on a row's failed objects (`None`: none failed): how many,
/// and the first one's URL and reason.
fn failed_objects(row: &Row) -> Option<String> {
    let n = row.failed_objects;
    if n == 0 {
        return None;
    }
    let first = (row.failures.as_ref())
        .and_then(|f| f.first())
        .map(|f| format!(" (first {}: {})", f.url, f.reason()));
    Some(format!(
        "{n} failed object{}{}",
        if n == 1 { "" } else { "s" },
        first.unwrap_or_default()
    ))
}
