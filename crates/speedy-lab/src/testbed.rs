//! The lab's test bed, shared by the runner ([`crate::runner`]) and the fidelity check
//! ([`crate::validate`]): a namespace pair joined by the emulated link
//! ([`topology_for`]), and `speedy serve --archive` in the server namespace with one
//! address per origin ([`ReplayServer`]).
//!
//! The server announces itself on stdout: human lines (`listening on …`, then `origin HOST
//! IP:PORT` per origin), then one JSON line, [`ServeStartup`] (documented in
//! `speedy serve --help` and docs/lab.md). The bed reads only the JSON line.

use linkem::{Side, Topology, TopologyConfig};
use speedy_server::spec::{ProxySpec, ServeSpec};
pub use speedy_server::startup::{Listener, ListenerKind, ServeStartup, ServedOrigin};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Longest wait for the server's start-up line (it loads the archive and, the first
/// time, makes the lab CA).
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Lines the server may print before its JSON line (the human lines: one per origin and
/// one more); anything beyond is not `speedy serve`.
const MAX_STARTUP_LINES: usize = 100_000;

/// Namespaces and a running link for loading pages of at most `hosts` origins each:
/// one server address per origin (up to 32; origins share addresses beyond that), and
/// one per replay slot of `recorded` (each the address the slot was recorded at where
/// that is free in the namespace; [`TopologyConfig::preferred_addrs`]).
pub fn topology_for(
    hosts: usize,
    recorded: &[Option<std::net::Ipv4Addr>],
    link: &linkem::LinkConfig,
    seed: u64,
) -> Result<Topology, String> {
    let mut topo = Topology::create(&TopologyConfig {
        server_addrs: hosts.clamp(1, 32),
        preferred_addrs: recorded.to_vec(),
        ..Default::default()
    })
    .map_err(|e| format!("creating namespaces: {e}"))?;
    let mut link = link.clone();
    link.seed = seed;
    topo.start_link(&link)
        .map_err(|e| format!("starting the link: {e}"))?;
    Ok(topo)
}

/// How to start one replay server: the `speedy` program and its [`ServeSpec`] (the
/// archive, the CA, the port in `listen`, the variant's server options).
/// [`ReplayServer::start`] fills in what the bed owns: the addresses
/// (`bind_origins`) and, with SCTP, the counters file and SCTP's own UDP port (any free
/// one unless the spec names it: the QUIC listeners of `h3` take the TCP port's number),
/// read back from the start-up line ([`ReplayServer::sctp_port`]).
#[derive(Clone, Debug)]
pub struct ReplaySpec<'a> {
    /// The `speedy` program.
    pub speedy: &'a Path,
    /// The server.
    pub serve: ServeSpec,
}

/// `speedy serve --archive` running in the server namespace, every server address bound
/// (one per origin). Dropping it kills the server (by its pid); if the thread that
/// started it dies first, the kernel kills it (`PR_SET_DEATHSIG`), so an interrupted
/// lab leaves no server behind.
pub struct ReplayServer {
    child: Child,
    /// How it was started, to start it again ([`ReplayServer::restart`]).
    speedy: PathBuf,
    serve: ServeSpec,
    startup: ServeStartup,
    /// With SCTP: the file the server keeps its SCTP counters in (`--sctp-counters`), a
    /// temporary file removed with the server.
    sctp_counters: Option<PathBuf>,
    /// With SCTP: the UDP port its SCTP listeners are at, at every origin's address.
    sctp_port: Option<u16>,
}

impl ReplayServer {
    /// Starts the server and waits (at most [`STARTUP_TIMEOUT`]) for its start-up line.
    pub fn start(topo: &Topology, spec: &ReplaySpec) -> Result<ReplayServer, String> {
        let given = spec.serve.clone();
        let mut serve = spec.serve.clone();
        serve.bind_origins = topo.server_addrs().iter().map(|a| a.to_string()).collect();
        let mut sctp_counters = None;
        if serve.sctp {
            let path = temp_path("sctp-counters", "json");
            serve.sctp_counters = Some(path.clone());
            sctp_counters = Some(path);
            serve.sctp_port.get_or_insert(0);
        }
        let mut cmd = topo.command(Side::Server, spec.speedy);
        cmd.args(["serve", "--spec", "-"]);
        let json = serde_json::to_vec(&serve).map_err(|e| format!("the serve spec: {e}"))?;
        let (child, startup) = spawn_announced(cmd, json, spec.speedy, "the replay server")?;
        let mut server = ReplayServer {
            child,
            speedy: spec.speedy.to_path_buf(),
            serve: given,
            startup,
            sctp_counters,
            sctp_port: None,
        };
        // Dropping `server` on an error kills it.
        if server.startup.origins.is_empty() {
            return Err(format!(
                "the replay server reported no origins for {}",
                serve.archive.unwrap_or_default().display()
            ));
        }
        if serve.sctp {
            server.sctp_port = Some(sctp_port_of(&server.startup)?);
        }
        Ok(server)
    }

    /// How the server ended, if it has (killed, crashed): `None` while it runs.
    pub fn exited(&mut self) -> Option<String> {
        exit_of(&mut self.child)
    }

    /// Starts the server again as it was started (the same spec, so the same ports and
    /// addresses), after it ended; the old process is reaped first.
    pub fn restart(&mut self, topo: &Topology) -> Result<(), String> {
        let spec = ReplaySpec {
            speedy: &self.speedy.clone(),
            serve: self.serve.clone(),
        };
        // Dropping the old value kills (if need be) and reaps it, and removes its files.
        *self = ReplayServer::start(topo, &spec)?;
        Ok(())
    }

    /// With SCTP: the UDP port of its SCTP listeners, the same at every origin's address
    /// (the loader's `sctp_port`); `None` for a server without SCTP.
    pub fn sctp_port(&self) -> Option<u16> {
        self.sctp_port
    }

    /// What the server announced.
    pub fn startup(&self) -> &ServeStartup {
        &self.startup
    }

    /// (host, address) of every origin, for `speedy load --resolve HOST=ADDR`.
    pub fn resolve(&self) -> Vec<(String, String)> {
        self.startup
            .origins
            .iter()
            .map(|o| (o.host.clone(), o.addr.to_string()))
            .collect()
    }

    /// The server's SCTP counters as it last wrote them (zero before it wrote any, and
    /// for a server without SCTP).
    pub fn sctp_counters(&self) -> speedy_net::sctp::counters::Counters {
        self.sctp_counters
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }
}

impl Drop for ReplayServer {
    fn drop(&mut self) {
        // Child::kill signals our own unreaped child by pid: never another process.
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The file, and its temporary twin if the server was killed between a write and
        // its rename.
        if let Some(p) = &self.sctp_counters {
            let _ = std::fs::remove_file(p);
            let _ = std::fs::remove_file(p.with_extension("tmp"));
        }
    }
}

/// The one port SCTP listens on at every origin's address, as `startup` announces its
/// listeners; an error naming the origin without one, or the two ports when they differ
/// (the loader dials one port everywhere).
fn sctp_port_of(startup: &ServeStartup) -> Result<u16, String> {
    let mut port = None;
    for o in &startup.origins {
        let Some(p) = startup.port_at(ListenerKind::Sctp, o.addr.ip()) else {
            return Err(format!(
                "the replay server announced no SCTP listener at {} (origin {})",
                o.addr.ip(),
                o.host
            ));
        };
        match port {
            Some(q) if q != p => {
                return Err(format!(
                    "the replay server's SCTP listeners are on ports {q} and {p}: the loader \
                     dials one"
                ))
            }
            _ => port = Some(p),
        }
    }
    port.ok_or_else(|| "the replay server reported no origins".into())
}

/// A path in the temporary directory no other call of this process returns:
/// `speedy-lab-PID-N-WHAT.EXT`.
fn temp_path(what: &str, ext: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!(
        "speedy-lab-{}-{n}-{what}.{ext}",
        std::process::id()
    ))
}

/// Has the kernel kill `cmd`'s process (SIGKILL) when the thread that starts it ends,
/// the whole lab process included (`PR_SET_PDEATHSIG`): an interrupted or crashed lab
/// leaves no server, loader or browser running.
pub(crate) fn die_with_parent(cmd: &mut Command) {
    // SAFETY: the closure only calls prctl(2), which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Starts `speedy load --spec -` as `cmd` (a `speedy` command with its namespace, output
/// and process group already set) and hands it `spec` on its standard input: the lab
/// never spells the loader's flags.
pub(crate) fn spawn_load(
    mut cmd: Command,
    spec: &speedy_browser::LoadSpec,
) -> Result<Child, String> {
    let json = serde_json::to_vec(spec).map_err(|e| format!("the load spec: {e}"))?;
    cmd.args(["load", "--spec", "-"]).stdin(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("starting the loader: {e}"))?;
    let mut stdin = child.stdin.take().expect("piped");
    // A spec is a few KiB, well under a pipe's buffer; the loader reads it at start.
    if let Err(e) = stdin.write_all(&json) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!("handing the loader its spec: {e}"));
    }
    Ok(child)
}

/// Spawns a `speedy` server command (dying with the thread that started it:
/// `PR_SET_DEATHSIG`) and waits (at most [`STARTUP_TIMEOUT`]) for its JSON start-up line.
pub(crate) fn spawn_announced(
    cmd: Command,
    spec: Vec<u8>,
    speedy: &Path,
    what: &str,
) -> Result<(Child, ServeStartup), String> {
    spawn_announced_to(cmd, spec, speedy, what, Stdio::inherit())
}

/// [`spawn_announced`] with the server's standard error going to `stderr`.
pub(crate) fn spawn_announced_to(
    mut cmd: Command,
    spec: Vec<u8>,
    speedy: &Path,
    what: &str,
    stderr: Stdio,
) -> Result<(Child, ServeStartup), String> {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr);
    die_with_parent(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("starting {}: {e}", speedy.display()))?;
    // The spec on standard input (`--spec -`), closed after it: a few KiB, well under a
    // pipe's buffer.
    let written = child.stdin.take().expect("piped").write_all(&spec);
    if let Err(e) = written {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!("{what}: handing it its spec: {e}"));
    }
    let stdout = child.stdout.take().expect("piped");
    match read_startup(stdout, STARTUP_TIMEOUT) {
        Ok(startup) => Ok((child, startup)),
        Err(e) => {
            let status = match child.try_wait() {
                Ok(Some(st)) => format!(" ({st})"),
                _ => String::new(),
            };
            // Our own unreaped child, by pid; its exit ends the reader thread.
            let _ = child.kill();
            let _ = child.wait();
            Err(format!("{what} did not start{status}: {e}"))
        }
    }
}

/// `speedy proxy` in the server namespace, across the link from the client as the
/// cellular study's proxy: every origin resolved to its replay server, plain SPDY and
/// HTTP/1.1 towards the loader on `port` of the first server address, the lab CA trusted
/// towards the origins, and its sender-side TCP series appended to a file. Killed (by
/// pid) when dropped.
pub struct ProxyServer {
    child: Child,
    /// How it was started, to start it again ([`ProxyServer::restart`]).
    speedy: PathBuf,
    spec: ProxySpec,
    /// Where the loader reaches it.
    pub addr: std::net::SocketAddr,
    /// Its `--tcp-series` file.
    pub series: std::path::PathBuf,
}

impl ProxyServer {
    /// Starts the proxy for the origins of `resolve` (HOST, ADDR).
    pub fn start(
        topo: &Topology,
        speedy: &Path,
        port: u16,
        resolve: &[(String, String)],
        ca_dir: &Path,
        series: &Path,
    ) -> Result<ProxyServer, String> {
        let ip = topo
            .server_addrs()
            .first()
            .copied()
            .ok_or("the topology has no server address")?;
        // TLS (a certificate from the lab CA) and plain TCP on the one port: a variant
        // picks by the proxy URL's scheme.
        let spec = ProxySpec {
            listen: format!("{ip}:{port}"),
            tls_ca_dir: Some(ca_dir.to_path_buf()),
            cacert: Some(ca_dir.join("ca.pem")),
            tcp_series: Some(series.to_path_buf()),
            resolve: resolve.iter().map(|(h, a)| format!("{h}={a}")).collect(),
            // Its namespace is reached only from the lane's client namespace.
            quiet: true,
            ..ProxySpec::default()
        };
        ProxyServer::spawn(topo, speedy, spec, series)
    }

    fn spawn(
        topo: &Topology,
        speedy: &Path,
        spec: ProxySpec,
        series: &Path,
    ) -> Result<ProxyServer, String> {
        let json = serde_json::to_vec(&spec).map_err(|e| format!("the proxy spec: {e}"))?;
        let mut cmd = topo.command(Side::Server, speedy);
        cmd.args(["proxy", "--spec", "-"]);
        let (child, startup) = spawn_announced(cmd, json, speedy, "the proxy")?;
        Ok(ProxyServer {
            child,
            speedy: speedy.to_path_buf(),
            spec,
            addr: startup.listening,
            series: series.to_path_buf(),
        })
    }

    /// How the proxy ended, if it has: `None` while it runs.
    pub fn exited(&mut self) -> Option<String> {
        exit_of(&mut self.child)
    }

    /// Starts the proxy again as it was started (the same address and files).
    pub fn restart(&mut self, topo: &Topology) -> Result<(), String> {
        let (speedy, spec, series) = (self.speedy.clone(), self.spec.clone(), self.series.clone());
        *self = ProxyServer::spawn(topo, &speedy, spec, &series)?;
        Ok(())
    }
}

/// How `child` ended (`exit status: 1`, `signal: 9 (SIGKILL)`), if it has; `None`
/// while it runs.
fn exit_of(child: &mut Child) -> Option<String> {
    match child.try_wait() {
        Ok(Some(status)) => Some(status.to_string()),
        Ok(None) => None,
        Err(e) => Some(format!("cannot be waited for: {e}")),
    }
}

impl Drop for ProxyServer {
    fn drop(&mut self) {
        // Child::kill signals our own unreaped child by pid: never another process.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads `out` on a thread until the start-up JSON line (skipping the human lines) and
/// returns it; an error if the stream ends, has more than [`MAX_STARTUP_LINES`] lines
/// first, or `timeout` passes. The thread keeps draining `out` until it closes, so the
/// server never meets a closed pipe.
fn read_startup(
    out: impl Read + Send + 'static,
    timeout: Duration,
) -> Result<ServeStartup, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut out = BufReader::new(out);
        let mut line = String::new();
        let (mut count, mut first) = (0usize, None::<String>);
        let result = loop {
            line.clear();
            match out.read_line(&mut line) {
                Ok(0) => {
                    break Err(format!(
                        "its output ended before the JSON start-up line (after {count} lines{})",
                        first
                            .as_ref()
                            .map(|l| format!(", the first {l:?}"))
                            .unwrap_or_default()
                    ))
                }
                Ok(_) => {}
                Err(e) => break Err(format!("reading its output: {e}")),
            }
            if let Some(s) = ServeStartup::parse(&line) {
                break Ok(s);
            }
            if line.trim_start().starts_with('{') {
                break Err(format!("unreadable JSON start-up line {:?}", line.trim()));
            }
            count += 1;
            if count > MAX_STARTUP_LINES {
                break Err(format!(
                    "no JSON start-up line within {MAX_STARTUP_LINES} lines"
                ));
            }
            first.get_or_insert_with(|| line.trim_end().to_string());
        };
        let ok = result.is_ok();
        let _ = tx.send(result);
        if ok {
            let _ = std::io::copy(&mut out, &mut std::io::sink());
        }
    });
    match rx.recv_timeout(timeout) {
        Ok(r) => r,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            Err(format!("no JSON start-up line within {:?}", timeout))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => Err("its output reader failed".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ServeStartup {
        ServeStartup {
            version: speedy_server::startup::STARTUP_VERSION,
            listening: "10.0.0.2:8443".parse().unwrap(),
            tls: true,
            plain: true,
            protocols: ["spdy/3.1", "spdy/3", "spdy/2", "h2", "http/1.1"]
                .map(String::from)
                .to_vec(),
            root: None,
            archive: Some("/tmp/corpus".into()),
            origins: vec![
                ServedOrigin {
                    host: "a.example".into(),
                    addr: "10.0.0.2:8443".parse().unwrap(),
                },
                ServedOrigin {
                    host: "b.example:8080".into(),
                    addr: "[fd00::2]:8443".parse().unwrap(),
                },
            ],
            sctp: true,
            h3: true,
            listeners: Vec::new(),
        }
    }

    #[test]
    fn read_startup_skips_human_lines() {
        let text = format!(
            "listening on 10.0.0.2:8443 (tls+plain; …; 2 origins)\norigin a.example 10.0.0.2:8443\n\
             origin b.example:8080 [fd00::2]:8443\n{}\n",
            sample().to_line()
        );
        let got = read_startup(std::io::Cursor::new(text), Duration::from_secs(5)).unwrap();
        assert_eq!(got, sample());
    }

    #[test]
    fn the_sctp_port_is_read_from_the_listeners_never_guessed() {
        let mut s = sample();
        // A version 1 line: SCTP at the origins' own addresses and ports.
        assert_eq!(sctp_port_of(&s), Ok(8443));
        for (kind, addr) in [
            (ListenerKind::Tcp, "10.0.0.2:8443"),
            (ListenerKind::H3, "10.0.0.2:8443"),
            (ListenerKind::Sctp, "10.0.0.2:41000"),
        ] {
            let addr = addr.parse().unwrap();
            s.listeners.push(Listener { kind, addr });
        }
        let e = sctp_port_of(&s).unwrap_err();
        assert!(
            e.contains("no SCTP listener at fd00::2 (origin b.example:8080)"),
            "{e}"
        );
        s.listeners.push(Listener {
            kind: ListenerKind::Sctp,
            addr: "[fd00::2]:41001".parse().unwrap(),
        });
        let e = sctp_port_of(&s).unwrap_err();
        assert!(e.contains("ports 41000 and 41001"), "{e}");
        s.listeners.last_mut().unwrap().addr.set_port(41000);
        assert_eq!(sctp_port_of(&s), Ok(41000));
    }

    #[test]
    fn read_startup_errors_are_clear() {
        let e = read_startup(
            std::io::Cursor::new("listening on 1.2.3.4:5 (plain)\n"),
            Duration::from_secs(5),
        )
        .unwrap_err();
        assert!(e.contains("ended before the JSON start-up line"), "{e}");
        assert!(e.contains("listening on 1.2.3.4:5"), "{e}");
        let e = read_startup(
            std::io::Cursor::new("{\"listening\": 5}\n"),
            Duration::from_secs(5),
        )
        .unwrap_err();
        assert!(e.contains("unreadable JSON start-up line"), "{e}");
        // A server that prints nothing and keeps its stdout open: the timeout ends the wait.
        struct Silent;
        impl Read for Silent {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                std::thread::sleep(Duration::from_millis(500));
                Ok(0)
            }
        }
        let e = read_startup(Silent, Duration::from_millis(50)).unwrap_err();
        assert!(e.contains("no JSON start-up line within"), "{e}");
    }
}
