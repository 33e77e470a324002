//! The `loads` table: one record per row of `results.jsonl`, one column per field of
//! [`Row`] (nested fields flattened with `_`: `sweep_param`, `server_sctp_t3_timeouts`;
//! `server_connections` as its count).

use super::column::{measured, non_empty, Column};
use crate::results::Row;
use speedy_net::sctp::counters::Counters;

type C = Column<Row>;

/// The columns of `loads`, in order.
pub fn columns() -> Vec<Column<Row>> {
    let mut c = identity();
    c.extend(measures());
    c.extend(settings());
    c.extend(server_counters());
    c.extend(sctp(
        [
            "server_sctp_associations",
            "server_sctp_data_chunks_in",
            "server_sctp_sacks_in",
            "server_sctp_t3_timeouts",
            "server_sctp_fast_retransmissions",
            "server_sctp_delayed_sack_timeouts",
        ],
        |r| r.server_sctp.as_ref(),
    ));
    c.extend(sctp(
        [
            "loader_sctp_associations",
            "loader_sctp_data_chunks_in",
            "loader_sctp_sacks_in",
            "loader_sctp_t3_timeouts",
            "loader_sctp_fast_retransmissions",
            "loader_sctp_delayed_sack_timeouts",
        ],
        |r| r.loader_sctp.as_ref(),
    ));
    c.extend(loader_options());
    c.extend(provenance());
    c
}

/// What the load was: the experiment's cell and run.
fn identity() -> Vec<C> {
    vec![
        C::str("experiment", |r| &r.experiment),
        C::opt_int("seed", "", |r| r.seed),
        C::opt_str("build", |r| r.build.as_deref()),
        C::opt_str("kernel", |r| r.kernel.as_deref()),
        C::str("page", |r| &r.page),
        C::str("network", |r| &r.network),
        C::str("network_desc", |r| &r.network_desc),
        C::opt_str("sweep_name", |r| r.sweep.as_ref().map(|s| s.sweep.as_str())),
        C::opt_str("sweep_param", |r| {
            r.sweep.as_ref().map(|s| s.param.as_str())
        }),
        C::opt_float("sweep_value", "", |r| r.sweep.as_ref().map(|s| s.value)),
        C::str("variant", |r| &r.variant),
        C::opt_int("variant_index", "", |r| r.variant_index),
        C::bool("baseline", |r| r.baseline),
        C::opt_str("against", |r| r.against.as_deref()),
        C::text("protocol", |r| r.protocol.to_string()),
        C::bool("tls", |r| r.tls),
        C::text("client", |r| r.client.to_string()),
        C::opt_text("transport", |r| r.transport.map(|t| t.to_string())),
        C::int("run", "", |r| r.run),
    ]
}

/// What was measured: times, objects, link and TCP counters.
fn measures() -> Vec<C> {
    vec![
        C::opt_float("on_load_ms", "ms", |r| measured(r.on_load_ms)),
        C::opt_float("on_content_load_ms", "ms", |r| {
            measured(r.on_content_load_ms)
        }),
        C::int("objects", "", |r| r.objects),
        C::int("failed_objects", "", |r| r.failed_objects),
        C::opt_text("failures", |r| r.failures.as_ref().map(|f| failures(f))),
        C::opt_int("replay_query", "", |r| r.replay.map(|m| m.query)),
        C::opt_int("replay_other_host", "", |r| r.replay.map(|m| m.other_host)),
        C::opt_int("replay_missed", "", |r| r.replay.map(|m| m.missed)),
        C::int("bytes_down", "bytes", |r| r.bytes_down),
        C::int("bytes_up", "bytes", |r| r.bytes_up),
        C::int("packets_down", "packets", |r| r.packets_down),
        C::int("packets_up", "packets", |r| r.packets_up),
        C::int("link_drops", "packets", |r| r.link_drops),
        C::opt_float("fcp_ms", "ms", |r| r.fcp_ms),
        C::opt_float("lcp_ms", "ms", |r| r.lcp_ms),
        C::opt_int("header_bytes_sent_raw", "bytes", |r| {
            r.header_bytes_sent_raw
        }),
        C::opt_int("header_bytes_sent_compressed", "bytes", |r| {
            r.header_bytes_sent_compressed
        }),
        C::opt_int("header_bytes_received_raw", "bytes", |r| {
            r.header_bytes_received_raw
        }),
        C::opt_int("header_bytes_received_compressed", "bytes", |r| {
            r.header_bytes_received_compressed
        }),
        C::int("connections", "", |r| r.connections),
        C::opt_int("tcp_retransmissions", "segments", |r| r.tcp_retransmissions),
        C::opt_int("loader_retransmissions", "segments", |r| {
            r.loader_retransmissions
        }),
        C::opt_int("loader_rto_timeouts", "", |r| r.loader_rto_timeouts),
        C::opt_int("client_tcp_opens", "", |r| r.client_tcp_opens),
        C::int("link_late_mean_us", "µs", |r| r.link_late_mean_us),
        C::int("link_late_max_us", "µs", |r| r.link_late_max_us),
        C::opt_int("link_stale", "packets", |r| r.link_stale),
        C::opt_int("loader_lag_max_us", "µs", |r| r.loader_lag_max_us),
    ]
}

/// The namespaces' and the links' TCP settings.
fn settings() -> Vec<C> {
    vec![
        C::opt_str("tcp_cc", |r| non_empty(&r.tcp_cc)),
        C::opt_str("quic_cc", |r| r.quic_cc.map(|c| c.name())),
        C::int("initcwnd", "segments", |r| r.initcwnd),
        C::opt_int("initrwnd", "segments", |r| r.initrwnd),
        C::bool("slow_start_after_idle", |r| r.slow_start_after_idle),
        C::bool("rack_tlp", |r| r.rack_tlp),
        C::bool("no_metrics_save", |r| r.no_metrics_save),
        C::opt_int("notsent_lowat", "bytes", |r| r.notsent_lowat),
        C::opt_int("rto_min_ms", "ms", |r| r.rto_min_ms),
    ]
}

/// The server namespace's counters and its sampled connections.
fn server_counters() -> Vec<C> {
    vec![
        C::int("server_retransmissions", "segments", |r| {
            r.server_retransmissions
        }),
        C::int("server_rto_timeouts", "", |r| r.server_rto_timeouts),
        C::int("server_segments_out", "segments", |r| r.server_segments_out),
        C::int("server_connections", "", |r| r.server_connections.len()),
    ]
}

/// The SCTP counters of one side, named `names` (in [`Counters`]' field order), null
/// when the load did not run over SCTP.
fn sctp(names: [&'static str; 6], side: fn(&Row) -> Option<&Counters>) -> Vec<C> {
    let fields: [fn(&Counters) -> u64; 6] = [
        |c| c.associations,
        |c| c.data_chunks_in,
        |c| c.sacks_in,
        |c| c.t3_timeouts,
        |c| c.fast_retransmissions,
        |c| c.delayed_sack_timeouts,
    ];
    names
        .into_iter()
        .zip(fields)
        .map(|(name, f)| C::opt_int(name, "", move |r| side(r).map(f)))
        .collect()
}

/// The variant's knobs on the loader, the server and the proxy.
fn loader_options() -> Vec<C> {
    vec![
        C::opt_str("header_compression", |r| non_empty(&r.header_compression)),
        C::int("connections_per_host", "", |r| r.connections_per_host),
        C::int("max_connections", "", |r| r.max_connections),
        C::opt_int("sessions", "", |r| r.sessions),
        C::opt_str("tls_hello", |r| r.tls_hello.as_deref()),
        C::opt_bool("known_servers", |r| r.known_servers),
        C::opt_bool("partition", |r| r.partition),
        C::opt_text("spdy_domains", |r| {
            r.spdy_domains.as_ref().map(|d| d.to_string())
        }),
        C::opt_text("push", |r| r.push.as_ref().map(|p| p.to_string())),
        C::opt_bool("hint", |r| r.hint),
        C::opt_bool("prefetch", |r| r.prefetch),
        C::opt_bool("cookie_bundling", |r| r.cookie_bundling),
        C::opt_int("sctp_rto_initial_ms", "ms", |r| r.sctp_rto_initial_ms),
        C::opt_text("sctp_stack", |r| r.sctp_stack.map(|s| s.to_string())),
        C::opt_str("proxy", |r| r.proxy.as_deref()),
        C::opt_int("keepalive_ms", "ms", |r| r.keepalive_ms),
        C::opt_int("revisit_after_ms", "ms", |r| r.revisit_after_ms),
        C::opt_int("session_think_ms", "ms", |r| r.session_think_ms),
        C::opt_int("session_visit", "", |r| r.session_visit),
    ]
}

/// Where the load's pages and files came from, and how trustworthy it is.
fn provenance() -> Vec<C> {
    vec![
        C::opt_str("calibration", |r| non_empty(&r.calibration)),
        C::str("har", |r| &r.har),
        C::opt_str("tcp_series", |r| r.tcp_series.as_deref()),
        C::opt_str("headroom", |r| r.headroom.as_deref()),
    ]
}

/// A row's failed objects in one cell: `URL (reason)` each, separated by `; `.
fn failures(f: &[speedy_browser::report::FailedRequest]) -> String {
    f.iter()
        .map(|r| format!("{} ({})", r.url, r.reason()))
        .collect::<Vec<_>>()
        .join("; ")
}
