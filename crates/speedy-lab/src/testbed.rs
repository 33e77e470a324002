//! The lab's test bed, shared by the runner ([`crate::runner`]) and the fidelity check
//! ([`crate::validate`]): a namespace pair joined by the emulated link
//! ([`topology_for`]), and `speedy serve --archive` in the server namespace with one
//! address per origin ([`ReplayServer`]).
//!
//! The server announces itself on stdout: human lines (`listening on …`, then `origin HOST
//! IP:PORT` per origin), then one JSON line, [`ServeStartup`] (documented in
//! `speedy serve --help` and docs/lab.md). The bed reads only the JSON line.

use crate::runner::PageInfo;
use linkem::{Side, Topology, TopologyConfig};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
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

/// The machine-readable start-up line of `speedy serve`: one JSON object on one line,
/// printed once after the human lines, when every listener is bound. Consumers ignore
/// fields they do not know (fields may be added, never renamed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServeStartup {
    /// The (first) address listened on, port resolved (`--listen` port 0 picks one).
    pub listening: SocketAddr,
    /// TLS is accepted (protocol chosen by ALPN).
    pub tls: bool,
    /// Plain TCP is accepted (protocol told apart by the first bytes). With an archive
    /// of https origins both are on, on the same port.
    pub plain: bool,
    /// The protocols served, as ALPN ids (`spdy/3.1`, `spdy/3`, `spdy/2`, `h2`,
    /// `http/1.1`), in the server's order of preference.
    pub protocols: Vec<String>,
    /// `--root`: the directory served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// `--archive`: the archive replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<String>,
    /// `--archive`: every origin of the archive and the address that serves it (empty
    /// with `--root`).
    #[serde(default)]
    pub origins: Vec<ServedOrigin>,
    /// `--sctp`: SPDY over SCTP is accepted on UDP at the same addresses.
    #[serde(default)]
    pub sctp: bool,
    /// `--h3`: HTTP/3 over QUIC is accepted on UDP at the same addresses.
    #[serde(default)]
    pub h3: bool,
}

/// One origin of an archive and where it is served.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedOrigin {
    /// Host name (with `:port` if the archive's URLs name one).
    pub host: String,
    /// Address serving it.
    pub addr: SocketAddr,
}

impl ServeStartup {
    /// The start-up of a server listening on `listening`, with TLS or not. Plain TCP is
    /// always accepted (the first byte tells a ClientHello from anything else); the
    /// protocols are the server's ALPN list. `root`, `archive` and `origins` are the
    /// caller's to fill.
    pub fn new(listening: SocketAddr, tls: bool) -> ServeStartup {
        ServeStartup {
            listening,
            tls,
            plain: true,
            protocols: speedy_net::tls::SERVER_ALPN.map(String::from).to_vec(),
            root: None,
            archive: None,
            origins: Vec::new(),
            sctp: false,
            h3: false,
        }
    }

    /// The line as `speedy serve` prints it (no newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("ServeStartup serializes")
    }

    /// Writes the start-up block: `human` (the human lines, each ending in a newline),
    /// then the JSON line, in one write so that a reader that stops after the human lines
    /// does not close the pipe between them; then flushes.
    pub fn announce(&self, human: &str, mut out: impl Write) -> std::io::Result<()> {
        let mut block = String::with_capacity(human.len() + 256);
        block.push_str(human);
        block.push_str(&self.to_line());
        block.push('\n');
        out.write_all(block.as_bytes())?;
        out.flush()
    }

    /// Parses a start-up line; `None` if `line` is not one (e.g. a human line).
    pub fn parse(line: &str) -> Option<ServeStartup> {
        let line = line.trim();
        if !line.starts_with('{') {
            return None;
        }
        serde_json::from_str(line).ok()
    }
}

/// Namespaces and a running link for loading `pages`: one server address per origin
/// (up to 32; origins share addresses beyond that).
pub fn topology_for(
    pages: &[PageInfo],
    link: &linkem::LinkConfig,
    seed: u64,
) -> Result<Topology, String> {
    let max_hosts = pages
        .iter()
        .map(|p| p.hosts.len())
        .max()
        .unwrap_or(1)
        .clamp(1, 32);
    let mut topo = Topology::create(&TopologyConfig {
        server_addrs: max_hosts,
        ..Default::default()
    })
    .map_err(|e| format!("creating namespaces: {e}"))?;
    let mut link = link.clone();
    link.seed = seed;
    topo.start_link(&link)
        .map_err(|e| format!("starting the link: {e}"))?;
    Ok(topo)
}

/// How to start one replay server.
#[derive(Clone, Debug)]
pub struct ReplaySpec<'a> {
    /// The `speedy` program.
    pub speedy: &'a Path,
    /// The archive to replay.
    pub archive: &'a Path,
    /// The lab CA's directory (`--ca-dir`).
    pub ca_dir: &'a Path,
    /// Port on every server address.
    pub port: u16,
    /// `--push` policy (`none`, `subresources`, `all`).
    pub push: &'a str,
    /// `--hint`.
    pub hint: bool,
    /// `--header-compression` (`zlib`, `crime-safe`, `none`).
    pub header_compression: &'a str,
    /// `--sctp`: SPDY over SCTP too, on UDP at the same addresses and port.
    pub sctp: bool,
    /// `--sctp-rto-initial-ms`, with `sctp`.
    pub sctp_rto_initial_ms: Option<u32>,
    /// `--h3`: HTTP/3 over QUIC too, on UDP at the same addresses and port.
    pub h3: bool,
    /// `--quic-initial-window`: QUIC's initial congestion window, bytes.
    pub quic_initial_window: Option<u64>,
}

/// `speedy serve --archive` running in the server namespace, every server address bound
/// (one per origin). Dropping it kills the server (by its pid); if the thread that
/// started it dies first, the kernel kills it (`PR_SET_DEATHSIG`), so an interrupted
/// lab leaves no server behind.
pub struct ReplayServer {
    child: Child,
    startup: ServeStartup,
    /// With SCTP: the file the server keeps its SCTP counters in (`--sctp-counters`), a
    /// temporary file removed with the server.
    sctp_counters: Option<PathBuf>,
}

impl ReplayServer {
    /// Starts the server and waits (at most [`STARTUP_TIMEOUT`]) for its start-up line.
    pub fn start(topo: &Topology, spec: &ReplaySpec) -> Result<ReplayServer, String> {
        let ips: Vec<String> = topo.server_addrs().iter().map(|a| a.to_string()).collect();
        let mut cmd = topo.command(Side::Server, spec.speedy);
        cmd.args(["serve", "--archive"])
            .arg(spec.archive)
            .args(["--listen", &format!("0.0.0.0:{}", spec.port)])
            .args(["--bind-origins", &ips.join(",")])
            .args(["--push", spec.push])
            .arg("--ca-dir")
            .arg(spec.ca_dir)
            .args(["--header-compression", spec.header_compression]);
        if spec.hint {
            cmd.arg("--hint");
        }
        if spec.h3 {
            cmd.arg("--h3");
            if let Some(w) = spec.quic_initial_window {
                cmd.args(["--quic-initial-window", &w.to_string()]);
            }
        }
        let mut sctp_counters = None;
        if spec.sctp {
            cmd.arg("--sctp");
            if let Some(ms) = spec.sctp_rto_initial_ms {
                cmd.args(["--sctp-rto-initial-ms", &ms.to_string()]);
            }
            let path = temp_path("sctp-counters", "json");
            cmd.arg("--sctp-counters").arg(&path);
            sctp_counters = Some(path);
        }
        let (child, startup) = spawn_announced(cmd, spec.speedy, "the replay server")?;
        let server = ReplayServer {
            child,
            startup,
            sctp_counters,
        };
        if server.startup.origins.is_empty() {
            // Dropping `server` kills it.
            return Err(format!(
                "the replay server reported no origins for {}",
                spec.archive.display()
            ));
        }
        Ok(server)
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

/// Spawns a `speedy` server command (dying with the thread that started it:
/// `PR_SET_DEATHSIG`) and waits (at most [`STARTUP_TIMEOUT`]) for its JSON start-up line.
fn spawn_announced(
    mut cmd: Command,
    speedy: &Path,
    what: &str,
) -> Result<(Child, ServeStartup), String> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    die_with_parent(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("starting {}: {e}", speedy.display()))?;
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
        let mut cmd = topo.command(Side::Server, speedy);
        // TLS (a certificate from the lab CA) and plain TCP on the one port: a variant
        // picks by the proxy URL's scheme.
        cmd.args(["proxy", "--listen", &format!("{ip}:{port}")])
            .arg("--tls-ca-dir")
            .arg(ca_dir)
            .arg("--cacert")
            .arg(ca_dir.join("ca.pem"))
            .arg("--tcp-series")
            .arg(series);
        for (h, a) in resolve {
            cmd.arg("--resolve").arg(format!("{h}={a}"));
        }
        let (child, startup) = spawn_announced(cmd, speedy, "the proxy")?;
        Ok(ProxyServer {
            child,
            addr: startup.listening,
            series: series.to_path_buf(),
        })
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
        }
    }

    #[test]
    fn startup_line_round_trips_and_has_the_documented_shape() {
        let s = sample();
        let line = s.to_line();
        assert!(!line.contains('\n'));
        assert_eq!(ServeStartup::parse(&line), Some(s));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["listening"], "10.0.0.2:8443");
        assert_eq!(v["origins"][1]["addr"], "[fd00::2]:8443");
        assert_eq!(v["origins"][0]["host"], "a.example");
        assert!(v.get("root").is_none());
    }

    #[test]
    fn parse_ignores_human_lines_and_unknown_fields() {
        assert_eq!(
            ServeStartup::parse("listening on 1.2.3.4:5 (plain; …)"),
            None
        );
        assert_eq!(ServeStartup::parse("origin a.example 1.2.3.4:5"), None);
        let s = ServeStartup::parse(
            r#"{"listening":"127.0.0.1:80","tls":false,"plain":true,"protocols":["http/1.1"],"root":"/srv","later":1}"#,
        )
        .unwrap();
        assert_eq!(s.root.as_deref(), Some("/srv"));
        assert!(s.origins.is_empty());
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
