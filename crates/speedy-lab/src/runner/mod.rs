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
//! with [`merge`](crate::merge).
//!
//! A variant with `client = "chromium"` loads its pages with headless Chromium instead
//! of the loader (`browser`), through the same link, replay server and CA, sampled the
//! same way; a Chromium load takes more of the CPU the lanes share (`budget`,
//! [`chromium_share`]).
//!
//! Rooms: [`plan`] (corpora, pages, the job list: pure), `lane` (a lane's namespaces,
//! servers and proxies, and its loop), `load` (the loader's spec and process), `browser`
//! (a Chromium load and its HAR), `budget` (the CPU the lanes share), `probes` (counters
//! and connection samples around a load), `row` (one row from what was measured),
//! `knobs` (a variant's TCP settings in the namespaces).

mod browser;
#[cfg(test)]
pub(crate) use browser::CHROMIUM_HTTP1_LIMITS;
mod budget;
pub mod governor;
mod knobs;
mod lane;
mod load;
mod plan;
mod probes;
mod progress;
mod queue;
mod row;

pub(crate) use plan::key;
pub use plan::{prepare_corpus, prepare_pages, PageInfo};

use crate::experiment::Experiment;
use crate::results::{read_rows, Row};
use lane::{run_lane, Shared};
use plan::{jobs, Corpora, Job};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

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
        let lag = r.loader_lag_max_us.unwrap_or(0);
        if lag > us(self.loader_lag_max) {
            out.push(format!(
                "loader lag {} ms > {} ms",
                lag / 1000,
                us(self.loader_lag_max) / 1000
            ));
        }
        (!out.is_empty()).then(|| out.join(", "))
    }

    /// The largest share of a bound the row used (1 or more: [`Headroom::check`] flags
    /// it); a figure the row lacks (Chromium has no loader lag) counts as none used.
    pub fn usage(&self, r: &Row) -> f64 {
        let share = |v: u64, bound: Duration| v as f64 / bound.as_micros().max(1) as f64;
        share(r.link_late_mean_us, self.link_late_mean)
            .max(share(r.link_late_max_us, self.link_late_max))
            .max(share(r.loader_lag_max_us.unwrap_or(0), self.loader_lag_max))
    }
}

/// Lanes per CPU core that `--lanes auto` starts with, and runs throughout an experiment
/// with a Chromium variant (measured: docs/lab.md, "Lanes").
pub const LANES_PER_CORE: usize = 4;

/// The most lanes per CPU core `--lanes auto` opens: loads are paced by their links, and a
/// browsing session spends most of its time in think times (docs/lab.md, "Lanes").
pub const MAX_LANES_PER_CORE: usize = 16;

/// Lanes' shares of the CPU one Chromium load takes on `lanes` lanes and `cores` cores
/// (a loader load takes one): two cores' worth, `2 × lanes / cores`, so that at most one
/// Chromium load runs per two cores (on 2 cores, one at a time, alone). Chromium's
/// browser, renderer and network service work in parallel: a load takes ~1.5 s of CPU
/// in about 12 processes, ten times a loader load with its replay server and emulator,
/// and two at once on 2 cores made Chromium's onLoad 5-22% later per cell on the LTE
/// trace than one at a time (measured: docs/lab.md, "Chromium as a client").
pub fn chromium_share(lanes: usize, cores: usize) -> usize {
    (2 * lanes.max(1) / cores.max(1)).clamp(1, lanes.max(1))
}

/// The lanes `--lanes auto` starts with on a machine with `cores` cores.
pub fn auto_lanes(cores: usize) -> usize {
    (cores.max(1) * LANES_PER_CORE).min(16)
}

/// This machine's cores (the CPUs this process may run on).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// How many loads run at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lanes {
    /// This many, throughout (`--lanes N`).
    Fixed(usize),
    /// Chosen while the run goes by what the machine is doing ([`governor`]): `start` at
    /// first, never more than `max` (`--lanes auto`).
    Auto {
        /// Lanes at the start.
        start: usize,
        /// The most lanes.
        max: usize,
    },
}

/// The lanes `--lanes` asks for: a number of at least 1, or `auto` ([`auto_lanes`] of
/// this machine's cores at first, up to [`MAX_LANES_PER_CORE`] per core).
pub fn lanes(arg: &str) -> Result<Lanes, String> {
    match arg {
        "auto" => {
            let cores = cores();
            Ok(Lanes::Auto {
                start: auto_lanes(cores),
                max: (cores * MAX_LANES_PER_CORE).min(64),
            })
        }
        n => match n.parse::<usize>() {
            Ok(n) if n > 0 => Ok(Lanes::Fixed(n)),
            _ => Err(format!("--lanes {n}: a number of at least 1, or auto")),
        },
    }
}

/// The governor of a run of `exp` with `lanes` (said on stderr for `auto`): a fixed one
/// when a variant loads with Chromium, whose share of the lanes' CPU is measured at a
/// fixed count ([`chromium_share`]).
fn governor_for(exp: &Experiment, lanes: Lanes) -> governor::Governor {
    let chromium = has_chromium(exp);
    match lanes {
        Lanes::Fixed(n) => governor::Governor::fixed(n),
        Lanes::Auto { start, .. } if chromium => {
            eprintln!(
                "speedy lab: {start} lanes ({LANES_PER_CORE} per core × {} cores, fixed: a \
                 variant loads with Chromium; --lanes N to choose)",
                cores()
            );
            governor::Governor::fixed(start)
        }
        Lanes::Auto { start, max } => {
            eprintln!(
                "speedy lab: {start} lanes at first, then as many as the machine keeps up \
                 with, up to {max} (CPU, wake-up lateness, each load's headroom; --lanes N \
                 to fix them)"
            );
            governor::Governor::adaptive(start, max)
        }
    }
}

/// How often the server's connections are sampled during a load (`sock_diag`: the
/// figures `ss -ti` prints).
pub const SS_EVERY: Duration = Duration::from_millis(250);

/// How to run an experiment.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Output directory (results.jsonl, hars/, corpus/, lab-ca/, report.html).
    pub out: PathBuf,
    /// Parallel lanes.
    pub lanes: Lanes,
    /// Shard `(i, n)`: run loads whose index % n == i.
    pub shard: (usize, usize),
    /// The `speedy` program (server and loader run as processes).
    pub speedy: PathBuf,
    /// The Chromium program, for variants with `client = "chromium"`.
    pub chromium: PathBuf,
}

/// What the lanes do about Chromium's CPU, said at the start of a run with Chromium
/// variants: how many Chromium loads run at once on `lanes` lanes and `cores` cores, and
/// beside how many loader loads.
pub fn chromium_lanes_note(lanes: usize, cores: usize) -> String {
    let lanes = lanes.max(1);
    let share = chromium_share(lanes, cores);
    let at_once = lanes / share;
    let beside = match lanes - share {
        0 => "alone".to_string(),
        n => format!(
            "each beside at most {n} loader load{}",
            if n == 1 { "" } else { "s" }
        ),
    };
    format!(
        "speedy lab: a Chromium load takes {share} of the {lanes} lanes' CPU shares (two \
         cores' worth of {cores}; a loader load takes one): at most {at_once} Chromium \
         load{} at once, {beside}",
        if at_once == 1 { "" } else { "s" },
    )
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
    let ccs = knobs::resolve_cc(
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
    let done = done_keys(&results, exp)?;
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
    let governor = governor_for(exp, opts.lanes);
    // A fixed governor's lanes: the count Chromium's share is reckoned on.
    let chromium = chromium_of(exp, opts, governor.max())?;
    let budget = budget::Budget::new(governor.max(), chromium_share(governor.max(), cores()));
    let progress = Mutex::new(progress::Progress::default());
    let ca_dir = opts.out.join("lab-ca");
    let shared = Shared {
        exp,
        opts,
        corpora: &corpora,
        ccs: &ccs,
        ca_dir: &ca_dir,
        results: &results,
        done: &done,
        progress: &progress,
        total,
        jobs: todo.len(),
        budget: &budget,
        governor: &governor,
        chromium: chromium.as_deref(),
    };
    let ran = std::thread::scope(|outer| {
        outer.spawn(|| governor.follow());
        let ran = run_networks(&shared, &todo);
        governor.finish();
        ran
    });
    ran?;
    say_missing(exp, &results, progress.lock().expect("lock").rows, total);
    Ok(results)
}

/// Runs `todo`'s jobs on as many lanes as the governor opens, network after network
/// with their ends overlapping ([`queue::Queues`]): the lanes open at the start set up
/// together before any load, the others when they first take one, one at a time
/// ([`governor::Gate`]); a lane moves from network to network without setting up again.
fn run_networks(shared: &Shared, todo: &[Job]) -> Result<(), String> {
    let queues = queue::Queues::new(shared.exp.networks.len(), todo);
    let threads = shared.governor.max().min(todo.len());
    let gate = governor::Gate::new(shared.governor.target().min(threads));
    let errors: Mutex<Vec<String>> = Mutex::default();
    std::thread::scope(|s| {
        for lane in 0..threads {
            let (queues, errors, gate) = (&queues, &errors, &gate);
            s.spawn(move || {
                if let Err(e) = run_lane(shared, lane, queues, gate) {
                    errors
                        .lock()
                        .expect("lock")
                        .push(format!("lane {lane} {e}"));
                }
            });
        }
    });
    let errs = errors.into_inner().expect("lock");
    if !errs.is_empty() {
        return Err(errs.join("\n"));
    }
    Ok(())
}

/// Says how many rows a run left unwritten (their loads failed twice), if any.
fn say_missing(exp: &Experiment, results: &Path, written: usize, total: usize) {
    if written < total {
        eprintln!(
            "speedy lab {}: {} of {total} rows were not written, their loads failed twice ({} \
             says why); run again with the same --out to try them again",
            exp.name,
            total - written,
            results
                .with_file_name(crate::results::FAILURES_FILE)
                .display()
        );
    }
}

/// Whether a variant of `exp` loads with Chromium.
fn has_chromium(exp: &Experiment) -> bool {
    exp.variants
        .iter()
        .any(|v| v.client == crate::experiment::Client::Chromium)
}

/// Chromium's `--version` when a variant of `exp` loads with Chromium (`None`
/// otherwise), checked before anything runs; says what the lanes do about its CPU.
fn chromium_of(
    exp: &Experiment,
    opts: &RunOptions,
    lanes: usize,
) -> Result<Option<String>, String> {
    if !has_chromium(exp) {
        return Ok(None);
    }
    let v = crate::chromium::version(&opts.chromium, "a variant with client = \"chromium\"")?;
    eprintln!("{} ({v})", chromium_lanes_note(lanes, cores()));
    Ok(Some(v))
}

/// The link seed of one load: a hash of the experiment seed, the page and the run.
pub(crate) fn load_seed(seed: u64, page: &str, run: u32) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for b in page.bytes().chain(run.to_le_bytes()) {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h
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

/// The running kernel's release (`/proc/sys/kernel/osrelease`, what `uname -r` prints),
/// read once per process; `None` where it cannot be read.
pub fn kernel_release() -> Option<&'static str> {
    static RELEASE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    RELEASE
        .get_or_init(|| {
            std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        })
        .as_deref()
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

/// The keys of the loads already in `results` (none if it does not exist yet), after
/// cutting off a row left unfinished; refused when they were run with another seed.
fn done_keys(results: &Path, exp: &Experiment) -> Result<HashSet<String>, String> {
    Ok(if results.exists() {
        crate::results::drop_unfinished_tail(results)?;
        let rows = read_rows(results)?;
        if let Some(other) = rows.iter().filter_map(|r| r.seed).find(|&s| s != exp.seed) {
            return Err(format!(
                "{} holds loads of seed {other} (other pages and loss sequences) and this run's \
                 seed is {}: resume with the same seed, or give another --out",
                results.display(),
                exp.seed
            ));
        }
        rows.iter()
            .map(|r| key(&r.page, &r.network, &r.variant, r.run))
            .collect()
    } else {
        HashSet::new()
    })
}

#[cfg(test)]
mod tests {
    use super::knobs::{resolve_cc, Cc};
    use super::*;
    use crate::experiment::CcName;

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
        exp.variants[1].cc_preference = vec![CcName::Cubic, CcName::Reno];
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
    fn a_chromium_load_takes_two_cores_worth_of_the_lanes() {
        // auto on 2 cores: 8 lanes, a Chromium load takes them all: one at a time.
        assert_eq!(chromium_share(8, 2), 8);
        assert_eq!(chromium_share(16, 4), 8, "4 cores: two at once");
        assert_eq!(chromium_share(1, 2), 1);
        assert_eq!(
            chromium_share(2, 8),
            1,
            "fewer lanes than cores: one lane each"
        );
        let note = chromium_lanes_note(8, 2);
        assert!(
            note.contains("takes 8 of the 8")
                && note.contains("at most 1 Chromium load at once, alone"),
            "{note}"
        );
        let note = chromium_lanes_note(16, 4);
        assert!(
            note.contains("at most 2 Chromium loads at once, each beside at most 8 loader loads"),
            "{note}"
        );
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
