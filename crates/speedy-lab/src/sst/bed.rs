//! The bed every SST figure runs on: the lab's own namespaces and link
//! ([`linkem::Topology`], as the runner's lanes have them), one `speedy serve` in the
//! server namespace and `speedy fetch` in the client namespace, each handed its typed
//! spec on standard input ([`ServeSpec`], [`FetchSpec`]): no flag of either is spelled
//! here, and the server's address is known before the client starts, so the client's
//! URLs are written out rather than left to a shell.

use crate::testbed::{die_with_parent, spawn_announced};
use linkem::{LinkConfig, Server, Side, Topology, TopologyConfig};
use speedy_net::fetch::FetchSpec;
use speedy_server::spec::ServeSpec;
use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The port every SST server listens on (TCP, and UDP for h3 or the datagram GETs).
pub(crate) const PORT: u16 = 9000;

/// Namespaces, a running link of `rate_kbit` each way and `rtt_ms` of round trip, and
/// at most one server. Dropping it kills the server (by pid) and removes the
/// namespaces.
pub(crate) struct Bed {
    speedy: PathBuf,
    server: Option<Child>,
    // Dropped last: the server dies before its namespace goes.
    topo: Topology,
}

impl Bed {
    /// Creates the namespaces and starts the link.
    pub fn new(speedy: &Path, rate_kbit: u32, rtt_ms: u32) -> Result<Bed, String> {
        let mut topo = Topology::create(&TopologyConfig::default())
            .map_err(|e| format!("creating namespaces (needs root): {e}"))?;
        let rate = Server::Rate(u64::from(rate_kbit) * 1000);
        let half = Duration::from_micros(u64::from(rtt_ms) * 500);
        let mut link = LinkConfig::default();
        link.down.server = rate.clone();
        link.up.server = rate;
        link.down.delay = half;
        link.up.delay = half;
        topo.start_link(&link)
            .map_err(|e| format!("starting the link: {e}"))?;
        Ok(Bed {
            speedy: speedy.to_path_buf(),
            server: None,
            topo,
        })
    }

    /// The server's address, as the client reaches it.
    pub fn server_addr(&self) -> Ipv4Addr {
        self.topo.server_addrs()[0]
    }

    /// `http://ADDR:PORT/` (or https), for the client's URLs.
    pub fn base(&self, https: bool) -> String {
        let scheme = if https { "https" } else { "http" };
        format!("{scheme}://{}:{PORT}/", self.server_addr())
    }

    /// The server every SST figure runs: `speedy serve` of `root` on port [`PORT`],
    /// plain TCP and h3 on UDP (with a self-signed certificate). QUIC runs the
    /// congestion control the namespace's TCP runs (read from
    /// `net.ipv4.tcp_congestion_control` there: the host's default, bbr on this lab's
    /// machine), so the protocols differ in what they are, not in their senders'
    /// algorithm (with quinn's default CUBIC against TCP's BBR, QUIC filled the link's
    /// queue: Fig 9's round trip grew to 10 s where TCP's stayed under 1 s).
    pub fn files_spec(&self, root: &Path) -> Result<ServeSpec, String> {
        let cc = self.server_sysctl("net.ipv4.tcp_congestion_control")?;
        let quic_cc = speedy_net::h3::QuicCcAlgorithm::parse(&cc)
            .map_err(|e| format!("the namespace's congestion control {cc:?}: {e}"))?;
        Ok(ServeSpec {
            listen: format!("0.0.0.0:{PORT}"),
            root: Some(root.to_path_buf()),
            tls_self_signed: true,
            h3: true,
            quic_cc: Some(quic_cc),
            ..ServeSpec::default()
        })
    }

    fn server_sysctl(&self, key: &str) -> Result<String, String> {
        let o = self
            .topo
            .command(Side::Server, "sysctl")
            .args(["-n", key])
            .output()
            .map_err(|e| format!("sysctl {key}: {e}"))?;
        if !o.status.success() {
            return Err(format!(
                "sysctl {key}: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
    }

    /// Starts `speedy serve` with `spec` in the server namespace (stopping the one
    /// before, if any) and waits for its start-up line.
    pub fn serve(&mut self, spec: &ServeSpec) -> Result<(), String> {
        self.stop_server();
        let mut cmd = self.topo.command(Side::Server, &self.speedy);
        cmd.args(["serve", "--spec", "-"]);
        let json = serde_json::to_vec(spec).map_err(|e| format!("the serve spec: {e}"))?;
        let (child, _) = spawn_announced(cmd, json, &self.speedy, "the SST server")?;
        self.server = Some(child);
        Ok(())
    }

    fn stop_server(&mut self) {
        if let Some(mut c) = self.server.take() {
            // Our own child, by pid.
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Runs `speedy fetch` with `spec` in the client namespace; returns its standard
    /// output and how long the process ran (start-up included). Bounded by `limit`; a
    /// fetch that fails is an error naming `what` with the fetch's own message.
    pub fn fetch(
        &self,
        spec: &FetchSpec,
        limit: Duration,
        what: &str,
    ) -> Result<(String, Duration), String> {
        let mut cmd = self.topo.command(Side::Client, &self.speedy);
        cmd.args(["fetch", "--spec", "-"]);
        let json = serde_json::to_vec(spec).map_err(|e| format!("the fetch spec: {e}"))?;
        run_bounded(cmd, &json, limit, what)
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        self.stop_server();
    }
}

/// Runs `cmd` with `input` on its standard input, its output collected, killed (by pid)
/// past `limit`.
fn run_bounded(
    mut cmd: Command,
    input: &[u8],
    limit: Duration,
    what: &str,
) -> Result<(String, Duration), String> {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    die_with_parent(&mut cmd);
    let t0 = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("{what}: starting: {e}"))?;
    // A spec is a few KiB, well under a pipe's buffer.
    let _ = child.stdin.take().expect("piped").write_all(input);
    let out = read_all(child.stdout.take());
    let err = read_all(child.stderr.take());
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| format!("{what}: {e}"))? {
            break s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{what}: did not finish within {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let took = t0.elapsed();
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    if !status.success() {
        return Err(format!(
            "{what}: speedy fetch failed ({status}): {}",
            err.trim()
        ));
    }
    Ok((out, took))
}

/// Reads a child's pipe to its end on a thread of its own (so neither pipe can fill and
/// stall the child while the other is read).
fn read_all(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_string(&mut s);
        }
        s
    })
}
