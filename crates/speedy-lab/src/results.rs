//! The results file: one JSON object per line (`results.jsonl`), one line per page load.
//! Every later step (statistics, report, merge of shards) reads only this file and the
//! HARs it points to.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// Which parameter a sweep varies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// Sweep name (for grouping into one chart), e.g. `loss sweep (cable)`.
    pub sweep: String,
    /// `loss` (fraction, 0.01 = 1%) or `rtt_ms`.
    pub param: String,
    /// The value of the parameter in this network.
    pub value: f64,
}

/// A load's requests the replay server answered other than by an exact match, and those
/// it had nothing for, counted from the load's HAR (`x-speedy-replay` on the response,
/// `speedy_server::matching::MATCH_HEADER`). Every other request was an exact match.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayMatches {
    /// Same host and path, another query (the best-matching recorded query).
    pub query: u32,
    /// Same path and query on another host.
    pub other_host: u32,
    /// Nothing recorded: answered 404.
    pub missed: u32,
}

/// One page load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Experiment name.
    pub experiment: String,
    /// The experiment's seed (pages, losses, orders); `lab merge` refuses to mix seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The build of `speedy` that measured the row (`speedy 0.1.0 sha256:…`: the program
    /// file's hash); `lab merge` refuses to mix builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
    /// The kernel the load ran on (its release, `uname -r`); absent in rows written
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Page name (archive page).
    pub page: String,
    /// Network name.
    pub network: String,
    /// Human description of the network (`2 Mbit/s down, 375 kbit/s up, 100 ms RTT, 1% loss`).
    pub network_desc: String,
    /// Set when the network is a point of a sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepPoint>,
    /// Variant name (`http1`, `spdy`, `spdy-single`, `spdy-push`, …).
    pub variant: String,
    /// Whether this variant is the HTTP/1.1 baseline speedups are computed against.
    pub baseline: bool,
    /// Wire protocol used, by its ALPN id (`http/1.1`, `spdy/3.1`, `h2`, `h3`; any
    /// spelling of the one vocabulary reads).
    #[serde(with = "speedy_net::text::by_name")]
    pub protocol: speedy_net::Protocol,
    /// Over TLS.
    pub tls: bool,
    /// Which client loaded the page: `loader` (`speedy load`) or `chromium` (headless
    /// Chromium); rows written before it was recorded are the loader's.
    #[serde(default, with = "speedy_net::text::by_name")]
    pub client: crate::experiment::Client,
    /// Run index (0-based); variants alternate run by run.
    pub run: u32,
    /// onLoad, ms from navigation start.
    pub on_load_ms: f64,
    /// onContentLoad (DOMContentLoaded), ms.
    pub on_content_load_ms: f64,
    /// First Contentful Paint, ms from navigation start (Paint Timing's
    /// `first-contentful-paint`): Chromium's loads only (the loader paints nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fcp_ms: Option<f64>,
    /// Largest Contentful Paint, ms from navigation start: the last
    /// `largest-contentful-paint` entry Chromium reported by the end of the load (read
    /// after onLoad); Chromium's loads only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lcp_ms: Option<f64>,
    /// Objects loaded (including failed ones).
    pub objects: u32,
    /// Objects that failed (4xx/5xx, reset, connection errors).
    pub failed_objects: u32,
    /// The objects that failed, each with its URL, status (0: no response) and the
    /// client's reason, from the load's HAR; absent in rows written before they were
    /// recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures: Option<Vec<speedy_browser::report::FailedRequest>>,
    /// Bytes through the emulated link, server → client (IP packets).
    pub bytes_down: u64,
    /// Bytes through the link, client → server.
    pub bytes_up: u64,
    /// Packets through the link, server → client.
    pub packets_down: u64,
    /// Packets through the link, client → server.
    pub packets_up: u64,
    /// Packets the link dropped (loss and queues), both directions.
    pub link_drops: u64,
    /// Request header bytes before compression (SPDY) or as sent (HTTP/1.1), as the
    /// loader counted them (its HAR's `_totals`); absent from Chromium's rows, which
    /// cannot count them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_bytes_sent_raw: Option<u64>,
    /// Request header bytes on the wire (the loader's; absent from Chromium's rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_bytes_sent_compressed: Option<u64>,
    /// Response header bytes before decompression (SPDY) or as received (the loader's;
    /// absent from Chromium's rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_bytes_received_raw: Option<u64>,
    /// Response header bytes on the wire (the loader's; absent from Chromium's rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_bytes_received_compressed: Option<u64>,
    /// Connections opened: the loader's dials that succeeded; for Chromium, the distinct
    /// connections its responses came over (DevTools' `connectionId`).
    pub connections: u32,
    /// TCP congestion control in the namespaces (`cubic`, `bbr`, `reno`).
    #[serde(default)]
    pub tcp_cc: String,
    /// QUIC's congestion control on the replay server (quinn's `cubic`, `bbr` or
    /// `newreno`), for h3 loads; absent for the others and in rows written before it was
    /// recorded.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "speedy_net::text::opt_by_name"
    )]
    pub quic_cc: Option<speedy_net::h3::QuicCcAlgorithm>,
    /// TCP retransmissions summed over the loader's connections (TCP_INFO); absent from
    /// Chromium's rows (its sockets' TCP_INFO is not visible: see
    /// `loader_retransmissions`, the client namespace's count, which is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_retransmissions: Option<u64>,
    /// The HAR of this load, relative to the results file's directory.
    pub har: String,
    /// Where the pages came from: a synthetic calibration (`web-2010`, `cellular-2013`,
    /// `web-2025`) or `archive`. Empty in files written before it was recorded.
    #[serde(default)]
    pub calibration: String,
    /// SPDY header compression (`zlib`, `crime-safe`, `none`) of requests and responses.
    #[serde(default)]
    pub header_compression: String,
    /// Initial congestion window on the server's routes (segments).
    #[serde(default)]
    pub initcwnd: u32,
    /// Initial receive window on the client's routes (segments), when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initrwnd: Option<u32>,
    /// net.ipv4.tcp_slow_start_after_idle in the namespaces.
    #[serde(default)]
    pub slow_start_after_idle: bool,
    /// RACK loss detection and tail loss probes on in the namespaces (the kernel's
    /// defaults; rows written before the key existed had them on).
    #[serde(default = "on")]
    pub rack_tlp: bool,
    /// net.ipv4.tcp_no_metrics_save in the namespaces (true: loads do not learn from
    /// each other's cached TCP metrics).
    #[serde(default)]
    pub no_metrics_save: bool,
    /// HTTP/1.1 connections per host the loader allowed (Chromium's rows: its own 6).
    #[serde(default)]
    pub connections_per_host: u32,
    /// HTTP/1.1 connections in all the loader allowed (Chromium's rows: its own 256).
    #[serde(default)]
    pub max_connections: u32,
    /// The variant's position in its experiment (report order; older files lack it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_index: Option<u32>,
    /// The variant this one's speedup is computed against, when not the baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against: Option<String>,
    /// Segments the server namespace retransmitted during the load (`RetransSegs` of its
    /// TCP MIB): the sender's retransmissions, which `tcp_retransmissions` (the client's
    /// sockets) does not see.
    #[serde(default)]
    pub server_retransmissions: u64,
    /// Retransmission timeouts that fired on the server (`TCPTimeouts`).
    #[serde(default)]
    pub server_rto_timeouts: u64,
    /// Segments the server namespace sent during the load (`OutSegs`).
    #[serde(default)]
    pub server_segments_out: u64,
    /// Segments the client namespace retransmitted during the load (`RetransSegs`: the
    /// client's requests and acknowledgements, the loader's or Chromium's; absent from
    /// rows of older speedy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loader_retransmissions: Option<u64>,
    /// Retransmission timeouts that fired on the loader's sockets (`TCPTimeouts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loader_rto_timeouts: Option<u64>,
    /// TCP connections the client namespace opened during the load (`Tcp: ActiveOpens`:
    /// every `connect`, raced and unused sockets included), the loader's or Chromium's
    /// alike: the connection count the two clients share (`connections` counts the
    /// loader's successful dials, and for Chromium the connections that carried a
    /// response). Absent in rows written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_tcp_opens: Option<u64>,
    /// Over SCTP: the replay servers' SCTP counters over the load (T3 timeouts, fast
    /// retransmissions, ...: the sender's side of the downloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_sctp: Option<speedy_net::sctp::counters::Counters>,
    /// Over SCTP: the loader's SCTP counters (its HAR's `_sctp`; a one-page load only,
    /// as they cover the loader's whole run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loader_sctp: Option<speedy_net::sctp::counters::Counters>,
    /// The link emulator's mean lateness writing packets during the load, µs (how much
    /// later than their emulated departure time packets left: a busy CPU shows here); a
    /// session's visit counts from its start to the next visit's.
    #[serde(default)]
    pub link_late_mean_us: u64,
    /// The link emulator's largest lateness during the load (a session's visit: its own
    /// window, as for the mean), µs.
    #[serde(default)]
    pub link_late_max_us: u64,
    /// Packets found waiting at the link's devices as this load's link started (sent
    /// while no link ran, by the previous load's connections), discarded so the load
    /// starts on an empty link; absent from rows written before they were counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_stale: Option<u64>,
    /// The loader's largest event-loop lag during the load, µs; absent from Chromium's
    /// rows and from rows written before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loader_lag_max_us: Option<u64>,
    /// How the replay server found what the load asked for, beyond exact matches
    /// (`speedy_server::matching`); absent from rows written before it was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayMatches>,
    /// TCP_NOTSENT_LOWAT on the replay server's connections, bytes, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notsent_lowat: Option<u32>,
    /// The server namespace's per-route minimum RTO, ms, when set (`rto_min`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto_min_ms: Option<u32>,
    /// SPDY keep-alive PINGs during the revisit pause, every this many ms, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keepalive_ms: Option<u32>,
    /// SPDY or h2 sessions per pool the loader was allowed, when not 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<u32>,
    /// The loader's TLS ClientHello (`plain` or `chromium`) over TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_hello: Option<String>,
    /// The loader knew the servers speak SPDY/h2 (`known_servers`), when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_servers: Option<bool>,
    /// Whether cross-site frames had connections of their own (`partition`), when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<bool>,
    /// SPDY/h2 sessions per origin (`per-origin`) or one for every origin (`single`);
    /// absent in rows written before it was recorded.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "speedy_net::text::opt_by_name"
    )]
    pub spdy_domains: Option<speedy_browser::Domains>,
    /// The replay server's push policy; absent in rows written before it was recorded.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "speedy_net::text::opt_by_name"
    )]
    pub push: Option<speedy_server::PushPolicy>,
    /// Server hint (`x-subresources`) on; absent in rows written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<bool>,
    /// Client prefetch on; absent in rows written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefetch: Option<bool>,
    /// `sctp` when the session ran over SCTP (TCP, or QUIC for h3, otherwise).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "speedy_net::text::opt_by_name"
    )]
    pub transport: Option<speedy_net::Carrier>,
    /// Over SCTP: whether the first request rode the COOKIE ECHO's packet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookie_bundling: Option<bool>,
    /// Over SCTP: RTO.Initial at both ends, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sctp_rto_initial_ms: Option<u32>,
    /// Over SCTP: the SCTP stack at both ends (`sctp-proto` or `usrsctp`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "speedy_net::text::opt_by_name"
    )]
    pub sctp_stack: Option<speedy_net::sctp::SctpStack>,
    /// Through `speedy proxy` (`spdy` or `http`), when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    /// The page was visited twice on the same connections, this many ms apart, and the
    /// row measures the second visit (link and server counters cover both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revisit_after_ms: Option<u64>,
    /// The load was a browsing session over every page, this many ms of think time
    /// apart, and the row is one visit (link and server counters from its start to the
    /// next visit's; `server_connections` and `tcp_series` are the whole session's; the
    /// loader's per-connection counters, such as header bytes, count on the visit in
    /// which the connection closed, usually the last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_think_ms: Option<u64>,
    /// The visit's place in its session (0: the first, on fresh connections).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_visit: Option<u32>,
    /// The proxy's sender-side TCP series during this load (JSON lines), relative to the
    /// results file's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_series: Option<String>,
    /// Set when the load ran with less CPU headroom than [`crate::runner::HEADROOM`]
    /// allows (its reason); such loads are listed in the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headroom: Option<String>,
    /// Each server connection as last sampled (`ss -ti` in the server namespace every
    /// [`crate::runner::SS_EVERY`] during the load and once when it ends).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_connections: Vec<crate::tcpinfo::ConnSample>,
}

/// Reads `results.jsonl`. A last line without its newline that does not parse is what a
/// run stopped while writing leaves: it is skipped, said on stderr (its load runs again on
/// serde's default for keys that were on before they could be set.
fn on() -> bool {
    true
}

/// resume, [`drop_unfinished_tail`]); any other bad line is an error naming it.
pub fn read_rows(path: &Path) -> Result<Vec<Row>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let unfinished = !text.is_empty() && !text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut rows = Vec::with_capacity(lines.len());
    for (i, l) in lines.iter().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(l) {
            Ok(r) => rows.push(r),
            Err(e) if unfinished && i + 1 == lines.len() => eprintln!(
                "speedy lab: {}:{}: the last line is unfinished (a run stopped while \
                 writing it?) and is skipped: {e}",
                path.display(),
                i + 1
            ),
            Err(e) => return Err(format!("{}:{}: {e}", path.display(), i + 1)),
        }
    }
    Ok(rows)
}

/// Cuts an unfinished last line (no newline) off `results.jsonl` before rows are appended
/// to it again, so that a resumed run's first row does not land on the same line.
pub fn drop_unfinished_tail(path: &Path) -> Result<(), String> {
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let bytes = std::fs::read(path).map_err(err)?;
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        return Ok(());
    }
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(err)?;
    f.set_len(keep as u64).map_err(err)
}

/// Appends one row (one line) to `results.jsonl`.
pub fn append_row(path: &Path, row: &Row) -> Result<(), String> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut line = serde_json::to_string(row).map_err(|e| e.to_string())?;
    line.push('\n');
    // One write(2) per row: lanes append to the same file, and O_APPEND keeps each write
    // whole, where `writeln!` would write the row and its newline separately and let
    // another lane's row land between them.
    f.write_all(line.as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The file beside `results.jsonl` that lists the loads that failed.
pub const FAILURES_FILE: &str = "failures.jsonl";

/// A load that failed, one line of [`FAILURES_FILE`]: which load and why (its client
/// crashed or hung, a replay server or proxy died under it, its HAR could not be read).
/// A failed load has no row: the runner tries it once more at the end of its lane's
/// queue, and resuming the experiment (the same `--out`) runs whatever has no row yet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailedLoad {
    /// The line's format ([`FailedLoad::CURRENT`]).
    pub version: u32,
    /// Network name.
    pub network: String,
    /// Page name (or `session`).
    pub page: String,
    /// Variant name.
    pub variant: String,
    /// Run index.
    pub run: u32,
    /// What went wrong, as the lane saw it.
    pub reason: String,
    /// Whether this was the load's second try (after which the lane leaves it to a
    /// resumed run).
    pub retry: bool,
}

impl speedy_records::version::Versioned for FailedLoad {
    const NAME: &'static str = "a failed-load line";
    const CURRENT: u32 = 1;
    fn version(&self) -> u32 {
        self.version
    }
}

/// Appends `f` to `path` as one line (one write, as [`append_row`]).
pub fn append_failure(path: &Path, f: &FailedLoad) -> Result<(), String> {
    use std::io::Write;
    let mut line = serde_json::to_string(f).map_err(|e| e.to_string())?;
    line.push('\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(line.as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The failed loads of `path` (none when it does not exist); a line that does not read
/// is an error naming it.
pub fn read_failures(path: &Path) -> Result<Vec<FailedLoad>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            speedy_records::version::read(l)
                .map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_loads_round_trip_and_name_a_bad_line() {
        let dir = std::env::temp_dir().join(format!("speedy-failures-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(FAILURES_FILE);
        let _ = std::fs::remove_file(&p);
        assert_eq!(read_failures(&p).unwrap(), vec![]);
        let f = FailedLoad {
            version: 1,
            network: "dsl".into(),
            page: "00-news".into(),
            variant: "h2".into(),
            run: 2,
            reason: "the replay server died during the load (signal: 9 (SIGKILL))".into(),
            retry: false,
        };
        append_failure(&p, &f).unwrap();
        append_failure(
            &p,
            &FailedLoad {
                retry: true,
                ..f.clone()
            },
        )
        .unwrap();
        let got = read_failures(&p).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], f);
        assert!(got[1].retry);
        std::fs::write(&p, "{\"version\": 9}\n").unwrap();
        let e = read_failures(&p).unwrap_err();
        assert!(e.contains(":1:"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unfinished_last_line_is_skipped_and_cut_before_appending() {
        let dir = std::env::temp_dir().join(format!("speedy-unfinished-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("results.jsonl");
        append_row(&p, &row(0)).unwrap();
        append_row(&p, &row(1)).unwrap();
        let whole = std::fs::read_to_string(&p).unwrap();
        // A crash in the middle of the third row's write.
        let third = serde_json::to_string(&row(2)).unwrap();
        std::fs::write(&p, format!("{whole}{}", &third[..third.len() / 2])).unwrap();
        assert_eq!(read_rows(&p).unwrap().len(), 2);
        drop_unfinished_tail(&p).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), whole);
        append_row(&p, &row(2)).unwrap();
        assert_eq!(read_rows(&p).unwrap().len(), 3);
        // A bad line that is not the unfinished last one is still an error, by line.
        std::fs::write(&p, format!("{{oops\n{whole}")).unwrap();
        assert!(read_rows(&p).unwrap_err().contains("results.jsonl:1:"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn row(i: usize) -> Row {
        let mut r: Row = serde_json::from_value(serde_json::json!({
            "experiment": "x", "page": format!("p{i}"), "network": "n", "network_desc": "d",
            "variant": "v", "baseline": false, "protocol": "spdy/3.1", "tls": false, "run": 0,
            "on_load_ms": 1.0, "on_content_load_ms": 1.0, "objects": 1, "failed_objects": 0,
            "bytes_down": 1, "bytes_up": 1, "packets_down": 1, "packets_up": 1, "link_drops": 0,
            "header_bytes_sent_raw": 0, "header_bytes_sent_compressed": 0,
            "header_bytes_received_raw": 0, "header_bytes_received_compressed": 0,
            "connections": 1, "tcp_retransmissions": 0, "har": "h"
        }))
        .unwrap();
        // Rows as long as a many-host load's (tens of sampled connections).
        r.server_connections = vec![crate::tcpinfo::ConnSample::default(); 40];
        r
    }

    #[test]
    fn lanes_appending_at_once_never_share_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        std::thread::scope(|s| {
            for t in 0..8 {
                let path = &path;
                s.spawn(move || {
                    for i in 0..100 {
                        append_row(path, &row(t * 1000 + i)).unwrap();
                    }
                });
            }
        });
        let rows = read_rows(&path).unwrap();
        assert_eq!(rows.len(), 800);
    }
}
