//! One row of `results.jsonl`, built once from everything measured about a load.

use super::browser::CHROMIUM_HTTP1_LIMITS;
use super::knobs::DEFAULT_INITCWND;
use super::plan::PageInfo;
use super::probes::Snapshot;
use super::HEADROOM;
use crate::experiment::{Experiment, Network, Pages, Variant};
use crate::results::{ReplayMatches, Row, SweepPoint};
use crate::tcpinfo::ConnSample;
use speedy_archive::har::Har;
use speedy_browser::report::FailedRequest;
use speedy_browser::LoadSpec;
use std::path::Path;

/// Everything measured about one page of a load, the inputs of its [`Row`].
pub(super) struct Measured<'a> {
    /// The experiment.
    pub exp: &'a Experiment,
    /// The network it ran on.
    pub net: &'a Network,
    /// The variant.
    pub variant: &'a Variant,
    /// What the loader was asked to do (`None`: Chromium loaded the page).
    pub spec: Option<&'a LoadSpec>,
    /// The page.
    pub page: &'a PageInfo,
    /// The run.
    pub run: u32,
    /// The load's HAR (the loader's, or the one built from Chromium's events).
    pub har: &'a Har,
    /// Where it is.
    pub har_path: &'a Path,
    /// Its path under the output directory, as the row records it.
    pub rel: &'a str,
    /// Which of the HAR's pages this row is.
    pub visit: usize,
    /// The counters before and after the page.
    pub before: &'a Snapshot,
    /// See `before`.
    pub after: &'a Snapshot,
    /// The congestion control the load ran.
    pub cc: &'a str,
    /// The `speedy` build.
    pub build: &'a str,
    /// The server's connections as last sampled.
    pub conns: &'a [ConnSample],
    /// The link's mean and largest lateness of a packet write, µs.
    pub link_late_mean_us: u64,
    /// See `link_late_mean_us`.
    pub link_late_max_us: u64,
    /// The proxy's TCP series of the load, under the output directory.
    pub series: Option<String>,
}

/// What the client itself reported of a page (the lab's probes give the rest).
struct Reported {
    /// The protocol the document came over.
    protocol: speedy_net::Protocol,
    /// onLoad and onContentLoad, ms.
    on_load: f64,
    on_content_load: f64,
    /// First and Largest Contentful Paint, ms (Chromium's).
    paints: (Option<f64>, Option<f64>),
    /// Objects, failed objects, connections.
    counts: (u32, u32, u32),
    /// Header bytes: sent raw and compressed, received raw and compressed (the
    /// loader's).
    headers: Option<(u64, Option<u64>, u64, Option<u64>)>,
    /// Retransmissions over its connections (TCP_INFO) and its event loop's largest lag,
    /// µs (the loader's).
    retransmits: Option<u64>,
    lag_us: Option<u64>,
    /// How the replay server matched the page's requests.
    replay: ReplayMatches,
    /// The page's requests that failed.
    failures: Vec<FailedRequest>,
}

/// The entries of page `page_id` that failed ([`Entry::failed`](speedy_archive::har::Entry::failed)).
fn failures(har: &Har, page_id: &str) -> Vec<FailedRequest> {
    har.log
        .entries
        .iter()
        .filter(|e| e.pageref.as_deref() == Some(page_id) && e.failed())
        .map(|e| FailedRequest {
            url: e.request.url.clone(),
            status: e.response.status,
            error: e.error.clone(),
        })
        .collect()
}

/// Counts the replay server's fuzzy matches and misses among the entries of page
/// `page_id` (their `x-speedy-replay` response header).
fn replay_matches(har: &Har, page_id: &str) -> ReplayMatches {
    let mut m = ReplayMatches::default();
    let name = speedy_server::matching::MATCH_HEADER;
    for e in har.log.entries.iter() {
        if e.pageref.as_deref() != Some(page_id) {
            continue;
        }
        let how = e
            .response
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name));
        match how.map(|h| h.value.as_str()) {
            Some("query") => m.query += 1,
            Some("other-host") => m.other_host += 1,
            Some("miss") => m.missed += 1,
            _ => {}
        }
    }
    m
}

/// What the client reported of the page `m` measures. The loader's HAR is read through
/// the one model: a missing field (a `_totals` counter, the page timings, `_protocol`) is
/// an error, never a 0. Chromium's HAR has no `_totals` (what only the loader counts is
/// left out of its row); its counts are its entries'.
fn reported(m: &Measured) -> Result<Reported, String> {
    let protocol = |p: &str| speedy_net::Protocol::parse(p).map_err(|e| format!("_protocol: {e}"));
    if m.spec.is_none() {
        let p = m.har.log.pages.first().ok_or("log.pages: no page")?;
        let proto = p
            .protocol
            .as_deref()
            .ok_or("log.pages[0]._protocol: missing")?;
        return Ok(Reported {
            protocol: protocol(proto)?,
            on_load: p.page_timings.on_load,
            on_content_load: p.page_timings.on_content_load,
            paints: (p.fcp_ms, p.lcp_ms),
            counts: crate::chromium::har::counts(m.har),
            headers: None,
            retransmits: None,
            lag_us: None,
            replay: replay_matches(m.har, &p.id),
            failures: failures(m.har, &p.id),
        });
    }
    let lp = m.har.loaded_page_at(m.visit)?;
    let (p, t) = (lp.page, lp.totals);
    Ok(Reported {
        protocol: protocol(lp.protocol)?,
        on_load: p.page_timings.on_load,
        on_content_load: p.page_timings.on_content_load,
        paints: (None, None),
        counts: (t.requests as u32, t.failed as u32, t.connections as u32),
        headers: Some((
            t.header_bytes_sent_raw,
            t.header_bytes_sent,
            t.header_bytes_received_raw,
            t.header_bytes_received,
        )),
        retransmits: Some(t.retransmits),
        lag_us: Some(t.event_loop_lag_max_us),
        replay: replay_matches(m.har, &p.id),
        failures: failures(m.har, &p.id),
    })
}

/// The row of `m`.
pub(super) fn row(m: &Measured) -> Result<Row, String> {
    let (exp, net, v, page) = (m.exp, m.net, m.variant, m.page);
    let r = reported(m)?;
    let (before, after) = (m.before, m.after);
    let (before_link, after_link) = (&before.link, &after.link);
    let drops =
        |c: &linkem::Counters| c.up.drops.iter().sum::<u64>() + c.down.drops.iter().sum::<u64>();
    let mut row = Row {
        experiment: exp.name.clone(),
        seed: Some(exp.seed),
        build: Some(m.build.to_string()),
        kernel: super::kernel_release().map(str::to_string),
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
        protocol: r.protocol,
        tls: v.tls,
        client: v.client,
        run: m.run,
        on_load_ms: r.on_load,
        on_content_load_ms: r.on_content_load,
        fcp_ms: r.paints.0,
        lcp_ms: r.paints.1,
        objects: r.counts.0,
        failed_objects: r.counts.1,
        failures: Some(r.failures),
        bytes_down: after_link.down.bytes_out - before_link.down.bytes_out,
        bytes_up: after_link.up.bytes_out - before_link.up.bytes_out,
        packets_down: after_link.down.packets_out - before_link.down.packets_out,
        packets_up: after_link.up.packets_out - before_link.up.packets_out,
        link_drops: drops(after_link) - drops(before_link),
        // The link started with this load, so its whole count is this load's.
        link_stale: Some(after_link.up.stale + after_link.down.stale),
        header_bytes_sent_raw: r.headers.map(|h| h.0),
        header_bytes_sent_compressed: r.headers.and_then(|h| h.1),
        header_bytes_received_raw: r.headers.map(|h| h.2),
        header_bytes_received_compressed: r.headers.and_then(|h| h.3),
        connections: r.counts.2,
        tcp_cc: m.cc.to_string(),
        quic_cc: v.quic_cc(),
        tcp_retransmissions: r.retransmits,
        har: m.rel.to_string(),
        calibration: calibration(m),
        header_compression: v.header_compression.name().to_string(),
        initcwnd: v.initcwnd.unwrap_or(DEFAULT_INITCWND),
        initrwnd: v.initrwnd,
        slow_start_after_idle: v.slow_start_after_idle.unwrap_or(true),
        rack_tlp: v.rack_tlp,
        no_metrics_save: v.no_metrics_save,
        connections_per_host: m
            .spec
            .map_or(CHROMIUM_HTTP1_LIMITS.0, |s| s.connections_per_host as u32),
        max_connections: m
            .spec
            .map_or(CHROMIUM_HTTP1_LIMITS.1, |s| s.max_connections as u32),
        against: v.against.clone(),
        variant_index: exp
            .variants
            .iter()
            .position(|x| x.name == v.name)
            .map(|i| i as u32),
        server_retransmissions: after.server.retrans_segs - before.server.retrans_segs,
        server_rto_timeouts: after.server.timeouts - before.server.timeouts,
        loader_retransmissions: Some(after.loader.retrans_segs - before.loader.retrans_segs),
        loader_rto_timeouts: Some(after.loader.timeouts - before.loader.timeouts),
        client_tcp_opens: Some(after.loader.active_opens - before.loader.active_opens),
        server_sctp: v.is_sctp().then(|| after.sctp.since(&before.sctp)),
        loader_sctp: loader_sctp(m)?,
        server_segments_out: after.server.out_segs - before.server.out_segs,
        server_connections: m.conns.to_vec(),
        link_late_mean_us: m.link_late_mean_us,
        link_late_max_us: m.link_late_max_us,
        loader_lag_max_us: r.lag_us,
        headroom: None,
        proxy: v.proxy.map(|p| p.to_string()),
        transport: v.is_sctp().then_some(speedy_net::Carrier::Sctp),
        cookie_bundling: m.spec.filter(|_| v.is_sctp()).map(|s| s.cookie_bundling),
        sctp_rto_initial_ms: m.spec.filter(|_| v.is_sctp()).map(sctp_rto_initial_ms),
        sctp_stack: m.spec.filter(|_| v.is_sctp()).map(|s| s.sctp_stack),
        rto_min_ms: v.rto_min_ms,
        notsent_lowat: v.notsent_lowat,
        replay: Some(r.replay),
        keepalive_ms: v.keepalive_ms,
        sessions: v.sessions,
        known_servers: v.known_servers,
        partition: v.partition,
        spdy_domains: m.spec.map(|s| s.spdy_domains),
        push: Some(v.push),
        hint: Some(v.hint),
        prefetch: Some(v.prefetch),
        tls_hello: m
            .spec
            .filter(|_| v.tls)
            .map(|s| s.tls_hello.name().to_string()),
        revisit_after_ms: exp.revisit_after.map(|d| d.as_millis() as u64),
        session_think_ms: exp.session_think.map(|d| d.as_millis() as u64),
        session_visit: exp.session_think.map(|_| m.visit as u32),
        tcp_series: m.series.clone(),
    };
    row.headroom = HEADROOM.check(&row);
    Ok(row)
}

/// Where the pages came from: the variant's calibration, the experiment's, or an
/// archive.
fn calibration(m: &Measured) -> String {
    match (&m.exp.pages, m.variant.calibration) {
        (_, Some(c)) => c.name.to_string(),
        (Pages::Synth(_, c), None) => c.name.to_string(),
        (Pages::Archive(..), None) => "archive".into(),
    }
}

/// The loader's SCTP counters, for a one-page load over SCTP (they cover the loader's
/// whole run). A load over SCTP without them, or with others, is an error: never "none".
fn loader_sctp(m: &Measured) -> Result<Option<speedy_net::sctp::counters::Counters>, String> {
    if !m.variant.is_sctp() || m.har.log.pages.len() != 1 {
        return Ok(None);
    }
    m.har.log.sctp.map(Some).ok_or_else(|| {
        format!(
            "{}: a load over SCTP whose HAR has no _sctp",
            m.har_path.display()
        )
    })
}

/// SCTP's RTO.Initial the load ran with, ms: the spec's, or the stack's default.
fn sctp_rto_initial_ms(spec: &LoadSpec) -> u32 {
    spec.sctp_rto_initial_ms.unwrap_or_else(|| {
        speedy_net::sctp::SctpConfig::default()
            .rto_initial
            .as_millis() as u32
    })
}
