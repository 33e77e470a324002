//! `speedy link`: the command line over [`crate::Topology`] and [`crate::Link`].

use crate::config::{self, find_profile, parse_duration, parse_loss, parse_rate};
use crate::io::topology::{Side, Topology, TopologyConfig};
use crate::link::{Link, LinkConfig};
use crate::log::PacketLog;
use crate::stage::queue::QueueSpec;
use crate::stage::radio::RadioSpec;
use crate::stage::rate::Server;
use crate::stage::trace::Trace;
use crate::stage::DropCause;
use crate::Direction;
use clap::Args;
use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Arguments of `speedy link`.
#[derive(Args, Debug, Clone, Default)]
#[command(
    about = "Run a command behind an emulated link (rate, trace, delay, loss, queue, radio)",
    after_help = "COMMAND runs in the client namespace and finds the far side in \
                  SPEEDY_SERVER_ADDR (the first address) and SPEEDY_SERVER_ADDRS (all, \
                  space-separated). Rates: 2mbit, 375kbit, 1.5mbit, 12000000 (bit/s)."
)]
pub struct LinkArgs {
    /// Downlink rate (server → client), e.g. 2mbit.
    #[arg(long, value_name = "RATE", conflicts_with = "down_trace")]
    pub down: Option<String>,
    /// Downlink Mahimahi trace file.
    #[arg(long, value_name = "FILE")]
    pub down_trace: Option<PathBuf>,
    /// Both directions from a trace pair: a built-in one (tmobile-umts, verizon-lte) or a
    /// path prefix P with Mahimahi's P.down and P.up.
    #[arg(long, value_name = "NAME|PREFIX", conflicts_with_all = ["down", "up", "down_trace", "up_trace"])]
    pub trace: Option<String>,
    /// Uplink rate (client → server), e.g. 375kbit.
    #[arg(long, value_name = "RATE", conflicts_with = "up_trace")]
    pub up: Option<String>,
    /// Uplink Mahimahi trace file.
    #[arg(long, value_name = "FILE")]
    pub up_trace: Option<PathBuf>,
    /// Round-trip time added, in ms, split evenly between the directions.
    #[arg(long, value_name = "MS", conflicts_with_all = ["delay_down", "delay_up"])]
    pub rtt: Option<String>,
    /// One-way delay of the downlink, in ms.
    #[arg(long, value_name = "MS")]
    pub delay_down: Option<String>,
    /// One-way delay of the uplink, in ms.
    #[arg(long, value_name = "MS")]
    pub delay_up: Option<String>,
    /// Extra random delay per direction, uniform in [0, MS); never reorders.
    #[arg(long, value_name = "MS")]
    pub jitter: Option<String>,
    /// Loss in both directions: 0.01, 1%, or ge:p=P,r=R[,good=G,bad=B] (Gilbert-Elliott).
    #[arg(long, value_name = "P", conflicts_with_all = ["loss_down", "loss_up"])]
    pub loss: Option<String>,
    /// Loss of the downlink.
    #[arg(long, value_name = "P")]
    pub loss_down: Option<String>,
    /// Loss of the uplink.
    #[arg(long, value_name = "P")]
    pub loss_up: Option<String>,
    /// Reordering in both directions: each packet is held back --reorder-ms with
    /// probability P (0.02 or 2%), and the packets behind it overtake it.
    #[arg(long, value_name = "P")]
    pub reorder: Option<String>,
    /// How long a reordered packet is held back, in ms.
    #[arg(long, value_name = "MS", default_value = "10", requires = "reorder")]
    pub reorder_ms: String,
    /// Bottleneck queue of both directions: infinite, droptail:packets=N, droptail:bytes=N,
    /// drophead:packets=N, drophead:bytes=N, codel[:target=MS,interval=MS,packets=N].
    #[arg(long, value_name = "SPEC")]
    pub queue: Option<String>,
    /// Cellular radio state machine shared by both directions: 3g or lte, optionally with
    /// scaled timers, e.g. 3g:dch_tail=200ms,fach_tail=2s (3g: dch_tail, fach_tail,
    /// idle_to_dch, fach_to_dch; lte: promotion, inactivity, tail).
    #[arg(long, value_name = "3g|lte")]
    pub radio: Option<String>,
    /// A named network profile (see --profiles); other options override it.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// List the named profiles and exit.
    #[arg(long)]
    pub profiles: bool,
    /// Number of server-side addresses (one per origin).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub server_addrs: usize,
    /// Shell command to run in the server namespace before COMMAND, in its own process
    /// group: when `link` ends (COMMAND done, an error, SIGINT/SIGTERM/SIGHUP) the whole
    /// group gets SIGTERM, then SIGKILL after 2 s.
    #[arg(long, value_name = "CMD")]
    pub server_cmd: Option<String>,
    /// Milliseconds to let --server-cmd start before COMMAND runs.
    #[arg(long, value_name = "MS", default_value_t = 300)]
    pub server_wait: u64,
    /// Seed for loss and jitter.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the uplink's per-packet log (mm-link format) to FILE.
    #[arg(long, value_name = "FILE")]
    pub log_up: Option<PathBuf>,
    /// Write the downlink's per-packet log (mm-link format) to FILE.
    #[arg(long, value_name = "FILE")]
    pub log_down: Option<PathBuf>,
    /// Print the counters when the command ends.
    #[arg(long)]
    pub stats: bool,
    /// Measure the forwarding ceiling for SECS seconds (no COMMAND), with the link options.
    #[arg(long, value_name = "SECS")]
    pub bench: Option<f64>,
    /// Forward one packet at a time even where the link only delays (by default such a
    /// link carries TCP super-packets whole, with the devices' segmentation offload).
    #[arg(long)]
    pub no_offload: bool,
    /// The command to run in the client namespace (default: $SHELL, its prompt marked
    /// `[link ARGS] ` as Mahimahi's shells are). `SPEEDY_LINK` holds ARGS either way.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

fn rate_or_trace(
    rate: &Option<String>,
    trace: &Option<PathBuf>,
    what: &str,
) -> Result<Option<Server>, String> {
    if let Some(r) = rate {
        let bps = parse_rate(r).map_err(|e| format!("--{what}: {e}"))?;
        return Ok(Some(Server::Rate(bps)));
    }
    if let Some(p) = trace {
        return Ok(Some(Server::Trace(Arc::new(Trace::load(p)?))));
    }
    Ok(None)
}

/// Builds the link settings from the arguments (profile first, then overrides).
pub fn link_config(a: &LinkArgs) -> Result<LinkConfig, String> {
    let mut cfg = LinkConfig {
        seed: a.seed,
        ..Default::default()
    };
    if let Some(name) = &a.profile {
        let p = find_profile(name)?;
        cfg.down.server = Server::Rate(p.down);
        cfg.up.server = Server::Rate(p.up);
        if let Some(rtt) = p.rtt_ms {
            let half = Duration::from_micros(rtt as u64 * 500);
            cfg.down.delay = half;
            cfg.up.delay = half;
        }
        let loss = parse_loss(&p.loss.to_string())?;
        cfg.down.loss = loss;
        cfg.up.loss = loss;
        if let Some(r) = p.radio {
            cfg.radio = Some(RadioSpec::parse(r)?);
        }
    }
    if let Some(t) = &a.trace {
        let (d, u) = crate::stage::trace::trace_pair(t, std::path::Path::new("."))
            .map_err(|e| format!("--trace: {e}"))?;
        cfg.down.server = Server::Trace(Arc::new(d));
        cfg.up.server = Server::Trace(Arc::new(u));
    }
    if let Some(s) = rate_or_trace(&a.down, &a.down_trace, "down")? {
        cfg.down.server = s;
    }
    if let Some(s) = rate_or_trace(&a.up, &a.up_trace, "up")? {
        cfg.up.server = s;
    }
    if let Some(r) = &a.rtt {
        let d = parse_duration(r).map_err(|e| format!("--rtt: {e}"))? / 2;
        cfg.down.delay = d;
        cfg.up.delay = d;
    }
    if let Some(d) = &a.delay_down {
        cfg.down.delay = parse_duration(d).map_err(|e| format!("--delay-down: {e}"))?;
    }
    if let Some(d) = &a.delay_up {
        cfg.up.delay = parse_duration(d).map_err(|e| format!("--delay-up: {e}"))?;
    }
    if let Some(j) = &a.jitter {
        let j = parse_duration(j).map_err(|e| format!("--jitter: {e}"))?;
        cfg.down.jitter = j;
        cfg.up.jitter = j;
    }
    if let Some(l) = &a.loss {
        let l = parse_loss(l).map_err(|e| format!("--loss: {e}"))?;
        cfg.down.loss = l;
        cfg.up.loss = l;
    }
    if let Some(l) = &a.loss_down {
        cfg.down.loss = parse_loss(l).map_err(|e| format!("--loss-down: {e}"))?;
    }
    if let Some(r) = &a.reorder {
        let p = config::parse_probability(r).map_err(|e| format!("--reorder: {e}"))?;
        let hold = parse_duration(&a.reorder_ms).map_err(|e| format!("--reorder-ms: {e}"))?;
        cfg.down.reorder = Some((p, hold));
        cfg.up.reorder = Some((p, hold));
    }
    if let Some(l) = &a.loss_up {
        cfg.up.loss = parse_loss(l).map_err(|e| format!("--loss-up: {e}"))?;
    }
    if let Some(q) = &a.queue {
        let q = QueueSpec::parse(q).map_err(|e| format!("--queue: {e}"))?;
        cfg.down.queue = q;
        cfg.up.queue = q;
    }
    if let Some(r) = &a.radio {
        cfg.radio = Some(RadioSpec::parse(r).map_err(|e| format!("--radio: {e}"))?);
    }
    if a.server_addrs == 0 {
        return Err("--server-addrs must be at least 1".into());
    }
    Ok(cfg)
}

static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
}

/// The last of SIGINT, SIGTERM or SIGHUP received since [`record_signals`] (0: none).
pub fn signal_received() -> i32 {
    SIGNAL.load(Ordering::SeqCst)
}

/// Installs handlers that only record SIGINT, SIGTERM and SIGHUP for
/// [`signal_received`] (one atomic store: async-signal-safe); whoever polls it does the
/// teardown. Used by `speedy link` and by the lab.
pub fn record_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

fn stop_child(child: &mut Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    // SAFETY: signalling a child we spawned, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `--server-cmd`'s process group, ended on drop (every exit path of [`run`], unwinding
/// included): SIGTERM to the group, SIGKILL after [`ServerGroup::GRACE`] to what is left.
///
/// The leader (`sh -c CMD`) is reaped only once the group is empty or killed, so its pid,
/// which is the group id, cannot be reused by an unrelated process while it is signalled.
struct ServerGroup {
    leader: Child,
}

impl ServerGroup {
    /// Time the group has to exit after SIGTERM.
    const GRACE: Duration = Duration::from_secs(2);

    fn pgid(&self) -> i32 {
        self.leader.id() as i32
    }

    /// Whether a live (not zombie) process is still in the group.
    fn group_alive(&self) -> bool {
        let pgid = self.pgid();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return false;
        };
        dir.flatten().any(|e| {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                return false;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
            let Some(rest) = stat.rsplit_once(')').map(|x| x.1) else {
                return false;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            f.len() > 2 && f[0] != "Z" && f[0] != "X" && f[2].parse::<i32>() == Ok(pgid)
        })
    }

    fn stop(&mut self) {
        let pgid = self.pgid();
        if self.group_alive() {
            // SAFETY: signalling the process group of a child we spawned (its leader is
            // not reaped yet, so the group id is still ours).
            unsafe { libc::kill(-pgid, libc::SIGTERM) };
            let deadline = Instant::now() + Self::GRACE;
            while self.group_alive() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if self.group_alive() {
                // SAFETY: as above.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
            }
        }
        let _ = self.leader.wait();
    }
}

impl Drop for ServerGroup {
    fn drop(&mut self) {
        self.stop();
    }
}

fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

fn open_log(path: &Option<PathBuf>, dir: &str, desc: &str) -> Result<Option<PacketLog>, String> {
    match path {
        None => Ok(None),
        Some(p) => {
            let f = std::fs::File::create(p)
                .map_err(|e| format!("cannot create {}: {e}", p.display()))?;
            Ok(Some(PacketLog::new(
                Box::new(std::io::BufWriter::new(f)),
                dir,
                desc,
            )))
        }
    }
}

/// Runs `speedy link`; returns the process exit code.
pub fn run(a: LinkArgs) -> i32 {
    match run_inner(a) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("speedy link: {e}");
            2
        }
    }
}

/// The link's own arguments (`--profile 3g`, …): the words after `link` up to the
/// command, as the prompt and `SPEEDY_LINK` show them.
fn link_words() -> String {
    let all: Vec<String> = std::env::args().collect();
    let from = all.iter().position(|w| w == "link").map_or(1, |i| i + 1);
    let to = all.iter().position(|w| w == "--").unwrap_or(all.len());
    all[from..to.max(from)].join(" ")
}

/// As Mahimahi's shells: a shell started without a command shows the link in its prompt,
/// `[link ARGS] `, set in `PS1` and, for bash (whose start-up files often set `PS1`),
/// put back by `PROMPT_COMMAND` before each prompt.
fn shell_prompt(cmd: &mut std::process::Command) {
    let mark = format!("[link {}] ", link_words());
    let ps1 = std::env::var("PS1").unwrap_or_else(|_| "\\u@\\h:\\w\\$ ".into());
    let quoted = mark.replace('\'', "'\\''");
    cmd.env("PS1", format!("{mark}{ps1}")).env(
        "PROMPT_COMMAND",
        format!("case \"$PS1\" in '{quoted}'*) ;; *) PS1='{quoted}'\"$PS1\" ;; esac"),
    );
}

/// `speedy link` itself: builds the link and the namespaces, then runs the bench, or
/// `--server-cmd` and COMMAND; returns the exit code, or why it could not run.
fn run_inner(a: LinkArgs) -> Result<i32, String> {
    if a.profiles {
        print!("{}", config::profiles_table());
        return Ok(0);
    }
    let link = build_link(&a)?;
    record_signals();
    let topo_cfg = TopologyConfig {
        server_addrs: a.server_addrs,
        offload: !a.no_offload,
        ..Default::default()
    };
    let mut topo =
        Topology::create(&topo_cfg).map_err(|e| format!("cannot build namespaces: {e}"))?;
    topo.start(link)
        .map_err(|e| format!("cannot start the link: {e}"))?;

    if let Some(secs) = a.bench {
        let report = crate::bench::run(&mut topo, Duration::from_secs_f64(secs), || {
            SIGNAL.load(Ordering::SeqCst) != 0
        })
        .map_err(|e| format!("bench: {e}"))?;
        println!("{report}");
        return Ok(0);
    }

    let env = command_env(&topo);
    let server = start_server(&topo, &a, &env)?;
    let sig = SIGNAL.load(Ordering::SeqCst);
    if sig != 0 {
        // Stopped while the server was starting: end it (the guard does) and go.
        drop(server);
        drop(topo);
        return Ok(128 + sig);
    }
    let code = run_command(&topo, &a, &env)?;
    drop(server);
    report_drops(&mut topo, a.stats);
    drop(topo);
    Ok(code)
}

/// The link the arguments describe, with the per-packet logs they ask for (each log
/// names the command line that made it).
fn build_link(a: &LinkArgs) -> Result<Link, String> {
    let cfg = link_config(a)?;
    let desc = std::env::args().collect::<Vec<_>>().join(" ");
    let mut link = Link::new(&cfg);
    if let Some(l) = open_log(&a.log_up, "uplink", &desc)? {
        link.set_log(Direction::Up, l);
    }
    if let Some(l) = open_log(&a.log_down, "downlink", &desc)? {
        link.set_log(Direction::Down, l);
    }
    Ok(link)
}

/// The environment `--server-cmd` and COMMAND get: the server and client addresses and
/// the two namespaces' names.
fn command_env(topo: &Topology) -> [(&'static str, String); 5] {
    let addrs: Vec<String> = topo.server_addrs().iter().map(|a| a.to_string()).collect();
    [
        ("SPEEDY_SERVER_ADDR", addrs[0].clone()),
        ("SPEEDY_SERVER_ADDRS", addrs.join(" ")),
        ("SPEEDY_CLIENT_ADDR", topo.client_addr().to_string()),
        (
            "SPEEDY_LINK_CLIENT_NETNS",
            topo.netns_name(Side::Client).to_string(),
        ),
        (
            "SPEEDY_LINK_SERVER_NETNS",
            topo.netns_name(Side::Server).to_string(),
        ),
    ]
}

/// Starts `--server-cmd` (if given) in the server namespace, in its own process group,
/// and gives it `--server-wait` ms to start (less if a signal comes).
fn start_server(
    topo: &Topology,
    a: &LinkArgs,
    env: &[(&'static str, String)],
) -> Result<Option<ServerGroup>, String> {
    let Some(cmd) = &a.server_cmd else {
        return Ok(None);
    };
    use std::os::unix::process::CommandExt;
    let leader = topo
        .command(Side::Server, "sh")
        .arg("-c")
        .arg(cmd)
        .envs(env.iter().cloned())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start --server-cmd: {e}"))?;
    let group = ServerGroup { leader };
    let until = Instant::now() + Duration::from_millis(a.server_wait);
    while Instant::now() < until && SIGNAL.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(Some(group))
}

/// Runs COMMAND (default: the user's shell, its prompt marked) in the client namespace
/// until it exits or a signal comes; returns its exit code (128 + the signal when
/// stopped, 127 when it cannot start).
fn run_command(
    topo: &Topology,
    a: &LinkArgs,
    env: &[(&'static str, String)],
) -> Result<i32, String> {
    let (prog, args) = match a.command.split_first() {
        Some((p, rest)) => (p.clone(), rest.to_vec()),
        None => (
            std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into()),
            vec![],
        ),
    };
    let mut cmd = topo.command(Side::Client, &prog);
    cmd.args(&args)
        .envs(env.iter().cloned())
        .env("SPEEDY_LINK", link_words());
    if a.command.is_empty() {
        shell_prompt(&mut cmd);
    }
    match cmd.spawn() {
        Ok(mut child) => loop {
            if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
                return Ok(exit_code(st));
            }
            let sig = SIGNAL.load(Ordering::SeqCst);
            if sig != 0 {
                stop_child(&mut child);
                return Ok(128 + sig);
            }
            std::thread::sleep(Duration::from_millis(10));
        },
        Err(e) => {
            eprintln!("speedy link: cannot run {prog}: {e}");
            Ok(127)
        }
    }
}

/// Stops the link, prints its counters when `stats` asks, and warns when packets were
/// lost at the TUN devices (by the link's writes or by the kernel).
fn report_drops(topo: &mut Topology, stats: bool) {
    let kernel: Vec<_> = [Side::Client, Side::Server]
        .iter()
        .map(|s| topo.tun_stats(*s).unwrap_or_default())
        .collect();
    let counters = topo.stop_link();
    if stats {
        eprint!("speedy link: {counters}");
    }
    let tun_drops =
        counters.up.dropped(DropCause::TunWrite) + counters.down.dropped(DropCause::TunWrite);
    let kernel_drops: u64 = kernel
        .iter()
        .map(|k| k.queued_dropped + k.written_dropped)
        .sum();
    if tun_drops > 0 || kernel_drops > 0 {
        eprintln!(
            "speedy link: warning: {tun_drops} packets failed to be written to a TUN device, \
             {kernel_drops} dropped by the kernel at the TUN devices"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{FromArgMatches, Parser};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        link: LinkArgs,
    }

    fn parse(args: &[&str]) -> Result<LinkArgs, String> {
        let m = <Cli as clap::CommandFactory>::command()
            .try_get_matches_from(std::iter::once("link").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        Ok(Cli::from_arg_matches(&m).map_err(|e| e.to_string())?.link)
    }

    #[test]
    fn a_built_in_trace_sets_both_directions() {
        let cfg = link_config(&parse(&["--trace", "verizon-lte", "--rtt", "60"]).unwrap()).unwrap();
        for (server, mbit) in [(&cfg.down.server, 5.03), (&cfg.up.server, 5.95)] {
            match server {
                Server::Trace(t) => {
                    assert_eq!((t.mean_rate_bps() / 1e4).round() / 100.0, mbit)
                }
                _ => panic!("not a trace"),
            }
        }
        assert!(parse(&["--trace", "verizon-lte", "--down", "1mbit"]).is_err());
        let e = link_config(&parse(&["--trace", "no-such"]).unwrap()).unwrap_err();
        assert!(
            e.starts_with("--trace: ") && e.contains("tmobile-umts"),
            "{e}"
        );
    }
}
