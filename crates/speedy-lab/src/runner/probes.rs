//! What the lab measures around a load besides the HAR: the link's, both namespaces'
//! TCP and the replay servers' SCTP counters ([`Snapshot`]), the server's connections
//! (as `ss -ti` prints them, over `sock_diag`), and the proxy's TCP series file.

use crate::tcpinfo::{parse_tcp_mib, ConnSample, TcpMib};
use crate::testbed::ReplayServer;
use linkem::{Side, Topology};
use speedy_archive::har::Har;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

/// What tells a lane's replay servers apart: their spec (without the port), as JSON.
pub(super) type ServerKey = String;

/// A lane's replay servers, one per [`ServerKey`] its variants use.
pub(super) type Servers = HashMap<ServerKey, ReplayServer>;

/// A file's length, 0 when it does not exist yet.
pub(super) fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

/// Copies what `src` gained since byte `from` (whole lines) to `dst`.
pub(super) fn copy_tail(src: &Path, from: u64, dst: &Path) -> Result<(), String> {
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

/// The link's, both namespaces' TCP and the replay servers' SCTP counters at one moment.
pub(super) struct Snapshot {
    at_ms: f64,
    /// The link's counters.
    pub link: linkem::Counters,
    /// The server namespace's TCP MIB.
    pub server: TcpMib,
    /// The client namespace's TCP MIB: the loader's sockets only.
    pub loader: TcpMib,
    /// The lane's replay servers' SCTP counters, summed.
    pub sctp: speedy_net::sctp::counters::Counters,
    /// The link's write lateness (its maximum: since the snapshot before).
    pub late: linkem::Lateness,
}

impl Snapshot {
    /// Reads every counter now.
    pub fn take(topo: &Topology, servers: &Servers) -> Result<Snapshot, String> {
        let at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
        Ok(Snapshot {
            at_ms,
            link: topo.counters(),
            late: topo.take_lateness(),
            server: tcp_counters(topo, Side::Server)?,
            loader: tcp_counters(topo, Side::Client)?,
            sctp: servers
                .values()
                .fold(Default::default(), |sum, s| sum.plus(&s.sctp_counters())),
        })
    }
}

/// The snapshots around visit `i` of a session's HAR, as indices into `snaps`: the last
/// taken before the visit started (the first snapshot for the first visit) and the last
/// taken before the next visit started (the final snapshot for the last visit).
/// Snapshots come every [`SS_EVERY`], and visits are a think time apart, so a window's
/// edges fall in the idle time between visits.
pub(super) fn visit_window(
    h: &Har,
    i: usize,
    snaps: &[Snapshot],
) -> Result<(usize, usize), String> {
    let start = |i: usize| {
        let p = &h.log.pages[i];
        speedy_archive::date::parse_ms(&p.started_date_time).ok_or_else(|| {
            format!(
                "log.pages[{i}].startedDateTime {:?}: not a date",
                p.started_date_time
            )
        })
    };
    let before = |t: f64| snaps.iter().rposition(|s| s.at_ms <= t).unwrap_or(0);
    let from = if i == 0 { 0 } else { before(start(i)?) };
    let to = if i + 1 < h.log.pages.len() {
        before(start(i + 1)?)
    } else {
        snaps.len() - 1
    };
    Ok((from, to))
}

/// The link's mean and largest write lateness (µs) between snapshots `from` and `to`: a
/// visit of a session is judged by its own packets, not the whole session's.
pub(super) fn link_lateness(snaps: &[Snapshot], from: usize, to: usize) -> (u64, u64) {
    let max = snaps[from + 1..=to]
        .iter()
        .map(|s| s.late.late_max)
        .max()
        .unwrap_or_default();
    let mean = snaps[to].late.mean_since(&snaps[from].late);
    (mean.as_micros() as u64, max.as_micros() as u64)
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

/// What is sampled while a load runs: the server's connections (`sock_diag`, each
/// connection's last sample; connections of an earlier load still closing left out) and,
/// for a browsing session, counter snapshots to cut its visits from.
pub(super) struct Watch {
    earlier: HashSet<(String, String)>,
    /// The load's connections as last sampled.
    pub conns: Vec<ConnSample>,
    /// Counter snapshots: one before the load, one per sample in a session, one after.
    pub snaps: Vec<Snapshot>,
    session: bool,
}

impl Watch {
    /// Starts watching: the connections open now are not the load's, and the first
    /// snapshot is taken.
    pub fn start(topo: &Topology, servers: &Servers, session: bool) -> Result<Watch, String> {
        let earlier = server_conns(topo)
            .map(|t| t.into_iter().map(|c| (c.local, c.peer)).collect())
            .unwrap_or_default();
        Ok(Watch {
            earlier,
            conns: Vec::new(),
            snaps: vec![Snapshot::take(topo, servers)?],
            session,
        })
    }

    /// One sample during the load. A failed sample loses only the per-connection
    /// figures.
    pub fn sample(&mut self, topo: &Topology, servers: &Servers) {
        if let Ok(t) = server_conns(topo) {
            for c in t
                .into_iter()
                .filter(|c| !self.earlier.contains(&(c.local.clone(), c.peer.clone())))
            {
                match self
                    .conns
                    .iter_mut()
                    .find(|x| x.local == c.local && x.peer == c.peer)
                {
                    Some(x) => *x = c,
                    None => self.conns.push(c),
                }
            }
        }
        if self.session {
            if let Ok(s) = Snapshot::take(topo, servers) {
                self.snaps.push(s);
            }
        }
    }

    /// The last sample and snapshot, once the loader has exited.
    pub fn finish(&mut self, topo: &Topology, servers: &Servers) -> Result<(), String> {
        self.sample(topo, servers);
        self.snaps.push(Snapshot::take(topo, servers)?);
        Ok(())
    }
}

/// The server namespace's connected TCP sockets with a congestion window, listed by a
/// thread in the namespace over `sock_diag` (what `ss -tin state connected` prints,
/// without a process per sample).
fn server_conns(topo: &Topology) -> Result<Vec<ConnSample>, String> {
    let listed = topo
        // The namespaces have no IPv6 (linkem turns it off).
        .spawn_in(Side::Server, || {
            speedy_net::transport::sock_diag::connected_tcp(false)
        })
        .join()
        .map_err(|_| "the sock_diag thread panicked".to_string())?
        .map_err(|e| format!("listing the server namespace's sockets: {e}"))?;
    Ok(listed.iter().filter_map(ConnSample::from_diag).collect())
}

/// Aborts the server namespace's connections to the client (`sock_diag` `SOCK_DESTROY`),
/// before a load's link starts: after a load its client is gone, but the server's ends of
/// its connections live on and keep retransmitting into the stopped link, which the next
/// load's counters (`server_retransmissions`) would count. A proxy's connections to the
/// origins are left alone. On a kernel without `CONFIG_INET_DIAG_DESTROY` it says so once
/// and leaves them, as before.
pub(super) fn abort_earlier_connections(topo: &Topology) -> Result<(), String> {
    static UNSUPPORTED: std::sync::Once = std::sync::Once::new();
    let client = std::net::IpAddr::V4(topo.client_addr());
    let aborted = topo
        .spawn_in(Side::Server, move || {
            speedy_net::transport::sock_diag::abort_tcp(|_, peer| peer.ip() == client)
        })
        .join()
        .map_err(|_| "the sock_diag thread panicked".to_string())?;
    match aborted {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
            UNSUPPORTED.call_once(|| {
                eprintln!(
                    "speedy lab: this kernel cannot abort sockets (CONFIG_INET_DIAG_DESTROY): \
                     a load's server_retransmissions may count the previous load's connections"
                )
            });
            Ok(())
        }
        Err(e) => Err(format!("aborting the previous load's connections: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(at_ms: f64, written: u64, late_sum_us: u64, late_max_us: u64) -> Snapshot {
        Snapshot {
            at_ms,
            link: Default::default(),
            server: Default::default(),
            loader: Default::default(),
            sctp: Default::default(),
            late: linkem::Lateness {
                written,
                late_sum: Duration::from_micros(late_sum_us),
                late_max: Duration::from_micros(late_max_us),
            },
        }
    }

    #[test]
    fn a_window_counts_the_lateness_of_its_own_packets() {
        // A late packet (30 ms) between snapshots 1 and 2; a busy stretch (mean 500 µs)
        // between 3 and 4.
        let snaps = [
            snap(0.0, 0, 0, 0),
            snap(250.0, 100, 1_000, 40),
            snap(500.0, 110, 31_000, 30_000),
            snap(750.0, 200, 32_000, 60),
            snap(1000.0, 300, 82_000, 900),
        ];
        assert_eq!(link_lateness(&snaps, 0, 4), (273, 30_000));
        assert_eq!(link_lateness(&snaps, 2, 4), (268, 900));
        assert_eq!(link_lateness(&snaps, 3, 4), (500, 900));
        assert_eq!(link_lateness(&snaps, 0, 1), (10, 40));
        assert_eq!(link_lateness(&snaps, 2, 2), (0, 0), "an empty window");
    }
}
