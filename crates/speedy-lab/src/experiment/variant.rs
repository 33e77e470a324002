//! A variant of an experiment: its TOML table (`[[variant]]`), its checks, and the typed
//! [`Variant`] the runner reads.

use super::{calibration, Pages};
use serde::Deserialize;
use spdy::HeaderCompression;
use speedy_archive::synth::Calibration;
use speedy_browser::LoadSpec;
use speedy_net::Protocol;
use speedy_server::spec::ServeSpec;
use speedy_server::PushPolicy;
use std::ops::Range;
use toml::Spanned;

/// SPDY/3.1, the SPDY the loader speaks.
const SPDY: Protocol = Protocol::Spdy(spdy::Version::V3_1);

/// What carries a variant's sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// TCP, with TLS over it when the variant says `tls` (h3: QUIC).
    Tcp,
    /// SPDY over SCTP over UDP (`transport = "sctp"`).
    Sctp {
        /// The first DATA in the COOKIE ECHO's packet (`cookie_bundling`, default true).
        cookie_bundling: bool,
        /// RTO.Initial at both ends, ms (`sctp_rto_initial_ms`; the stack's 3 s when
        /// `None`).
        rto_initial_ms: Option<u32>,
        /// The SCTP stack at both ends, the loader's and the replay server's
        /// (`sctp_stack = "sctp-proto" | "usrsctp"`, default sctp-proto).
        stack: speedy_net::sctp::SctpStack,
    },
}

/// The kind of `speedy proxy` a variant loads through (`proxy = "spdy"` or `"http"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyKind {
    /// One SPDY session to the proxy for every origin (Chrome's SPDY proxy).
    Spdy,
    /// HTTP/1.1 with absolute-form requests.
    Http,
}

impl std::fmt::Display for ProxyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProxyKind::Spdy => "spdy",
            ProxyKind::Http => "http",
        })
    }
}

/// Which client loads a variant's pages (`client`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Client {
    /// `speedy load`, the lab's page loader (the default).
    #[default]
    Loader,
    /// Headless Chromium driven over the DevTools protocol (`crate::chromium`).
    Chromium,
}

impl Client {
    /// Its name in experiment files and rows: `loader` or `chromium`.
    pub fn name(self) -> &'static str {
        match self {
            Client::Loader => "loader",
            Client::Chromium => "chromium",
        }
    }
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Client {
    type Err = String;

    fn from_str(s: &str) -> Result<Client, String> {
        [Client::Loader, Client::Chromium]
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| format!("client = {s:?}: loader or chromium"))
    }
}

/// A TCP congestion control a variant may ask for (`cc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcName {
    /// NewReno, Linux's `reno`.
    Reno,
    /// CUBIC.
    Cubic,
    /// BBR.
    Bbr,
}

impl CcName {
    /// Linux's name of it (`net.ipv4.tcp_congestion_control`).
    pub fn name(self) -> &'static str {
        match self {
            CcName::Reno => "reno",
            CcName::Cubic => "cubic",
            CcName::Bbr => "bbr",
        }
    }

    /// By Linux's name.
    fn parse(s: &str) -> Option<CcName> {
        [CcName::Reno, CcName::Cubic, CcName::Bbr]
            .into_iter()
            .find(|c| c.name() == s)
    }
}

/// One protocol variant.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// Name (unique).
    pub name: String,
    /// The protocol the loader speaks: HTTP/1.1, SPDY/3.1, h2 or h3 (named in the
    /// experiment file with the one vocabulary of [`speedy_net::protocol`]).
    pub protocol: Protocol,
    /// Over TLS.
    pub tls: bool,
    /// One SPDY session for all origins.
    pub single_domain: bool,
    /// Server push policy.
    pub push: PushPolicy,
    /// Server hint.
    pub hint: bool,
    /// Client prefetch.
    pub prefetch: bool,
    /// The baseline for speedups.
    pub baseline: bool,
    /// Initial congestion window (segments) on the server's routes, if set.
    pub initcwnd: Option<u32>,
    /// net.ipv4.tcp_slow_start_after_idle, if set.
    pub slow_start_after_idle: Option<bool>,
    /// Linux's RACK loss detection and tail loss probes (net.ipv4.tcp_recovery,
    /// net.ipv4.tcp_early_retrans): on (the kernel's defaults) unless set false.
    pub rack_tlp: bool,
    /// net.ipv4.tcp_no_metrics_save (default true: runs do not learn from each other).
    pub no_metrics_save: bool,
    /// TCP congestion control in order of preference: the first the host allows is used.
    pub cc_preference: Vec<CcName>,
    /// The client's initial receive window (segments) on its routes, if set.
    pub initrwnd: Option<u32>,
    /// SPDY header compression of requests and responses.
    pub header_compression: HeaderCompression,
    /// HTTP/1.1 connections per host (the loader's default when `None`).
    pub connections_per_host: Option<usize>,
    /// HTTP/1.1 connections in all (the loader's default when `None`).
    pub max_connections: Option<usize>,
    /// This variant's own synthesized pages (the experiment's when `None`).
    pub calibration: Option<&'static Calibration>,
    /// The variant this one's speedup is computed against (the baseline when `None`).
    pub against: Option<String>,
    /// Through `speedy proxy` in the server namespace, and the protocol the loader
    /// speaks to it.
    pub proxy: Option<ProxyKind>,
    /// A minimum retransmission timeout on the server namespace's routes, ms (`ip route
    /// ... rto_min`): the cellular study's recommendation of an RTO that outlasts the
    /// radio's promotion delay. Linux applies it to every RTO of those routes, not only
    /// after idle periods.
    pub rto_min_ms: Option<u32>,
    /// With `revisit_after_ms` or `session_think_ms`: a SPDY PING on every open
    /// connection this often during the pauses (the study's keep-alive).
    pub keepalive_ms: Option<u32>,
    /// SPDY or h2 sessions per pool (to the proxy: all of them), the loader's
    /// `--sessions` (the study's 20 SPDY connections).
    pub sessions: Option<u32>,
    /// The loader's TLS ClientHello (`plain` for browsers before 2023; the loader's
    /// default is Chromium's).
    pub tls_hello: Option<speedy_net::tls::Hello>,
    /// The loader knows each server speaks SPDY/h2 (`--known-servers`).
    pub known_servers: Option<bool>,
    /// Cross-site frames get connections of their own (`false`: `--no-partition`).
    pub partition: Option<bool>,
    /// What carries the sessions: TCP, or SCTP with its options.
    pub transport: Transport,
    /// TCP_NOTSENT_LOWAT on the replay server's connections, bytes (`notsent_lowat`;
    /// the kernel's, no limit, when `None`): at most about this much unsent data waits in
    /// the socket, so the server's priorities act within a round trip.
    pub notsent_lowat: Option<u32>,
    /// Which client loads the pages: the loader (default) or headless Chromium.
    pub client: Client,
}

impl Variant {
    /// The sessions run over SCTP.
    pub fn is_sctp(&self) -> bool {
        matches!(self.transport, Transport::Sctp { .. })
    }

    /// Sets what this variant asks of the loader on `spec` (its protocol is set where the
    /// spec is made; the pages, addresses, proxy and TLS by the runner).
    pub fn configure_load(&self, spec: &mut LoadSpec) {
        if self.single_domain {
            spec.spdy_domains = speedy_browser::Domains::Single;
        }
        spec.hint = self.hint;
        spec.header_compression = self.header_compression;
        if let Some(n) = self.connections_per_host {
            spec.connections_per_host = n;
        }
        if let Some(n) = self.max_connections {
            spec.max_connections = n;
        }
        if let Some(n) = self.sessions {
            spec.sessions = n as usize;
        }
        if let Some(h) = self.tls_hello {
            spec.tls_hello = h;
        }
        spec.known_servers = self.known_servers == Some(true);
        spec.partition = self.partition != Some(false);
        if let Transport::Sctp {
            cookie_bundling,
            rto_initial_ms,
            stack,
        } = self.transport
        {
            spec.transport = speedy_net::Carrier::Sctp;
            spec.cookie_bundling = cookie_bundling;
            spec.sctp_rto_initial_ms = rto_initial_ms;
            spec.sctp_stack = stack;
        }
    }

    /// QUIC's congestion control for an h3 variant: the first algorithm of its `cc`
    /// preference (quinn has all three; `reno` is NewReno), else quinn's default, CUBIC.
    /// `None` for the other protocols (their congestion control is the kernel's TCP).
    pub fn quic_cc(&self) -> Option<speedy_net::h3::QuicCcAlgorithm> {
        use speedy_net::h3::QuicCcAlgorithm as Q;
        (self.protocol == Protocol::H3).then(|| match self.cc_preference.first() {
            Some(CcName::Reno) => Q::NewReno,
            Some(CcName::Bbr) => Q::Bbr,
            Some(CcName::Cubic) | None => Q::Cubic,
        })
    }

    /// Sets what this variant asks of the replay server on `spec` (which listeners it
    /// runs, and on which ports, is the runner's: every variant's server listens for
    /// SCTP or QUIC when one variant needs it, SCTP on a UDP port of its own).
    pub fn configure_serve(&self, spec: &mut ServeSpec) {
        spec.push = self.push;
        spec.hint = self.hint;
        spec.header_compression = self.header_compression;
        if let Transport::Sctp {
            rto_initial_ms,
            stack,
            ..
        } = self.transport
        {
            spec.sctp_rto_initial_ms = rto_initial_ms;
            spec.sctp_stack = stack;
        }
        // A TCP initial window of N segments as bytes (1,460-byte MSS), for QUIC.
        spec.quic_initial_window = self
            .initcwnd
            .filter(|_| self.protocol == Protocol::H3)
            .map(|n| u64::from(n) * 1460);
        // quinn's default left unsaid, so that an h3 variant shares its replay server
        // with the TCP variants whose settings it has.
        spec.quic_cc = self
            .quic_cc()
            .filter(|c| *c != speedy_net::h3::QuicCcAlgorithm::default());
        spec.notsent_lowat = self.notsent_lowat.map(|n| n as usize);
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct VariantSpec {
    name: String,
    protocol: String,
    tls: Option<bool>,
    spdy_domains: Option<String>,
    push: Option<String>,
    hint: Option<bool>,
    prefetch: Option<bool>,
    baseline: Option<bool>,
    cc: Option<OneOrManyStr>,
    initcwnd: Option<u32>,
    initrwnd: Option<u32>,
    slow_start_after_idle: Option<bool>,
    rack_tlp: Option<bool>,
    no_metrics_save: Option<bool>,
    header_compression: Option<String>,
    connections_per_host: Option<usize>,
    max_connections: Option<usize>,
    calibration: Option<String>,
    against: Option<String>,
    proxy: Option<String>,
    rto_min_ms: Option<u32>,
    keepalive_ms: Option<u32>,
    sessions: Option<u32>,
    tls_hello: Option<String>,
    known_servers: Option<bool>,
    partition: Option<bool>,
    transport: Option<String>,
    cookie_bundling: Option<bool>,
    sctp_rto_initial_ms: Option<u32>,
    sctp_stack: Option<String>,
    notsent_lowat: Option<u32>,
    client: Option<String>,
}

#[derive(Deserialize, Clone)]
#[serde(untagged)]
pub(super) enum OneOrManyStr {
    One(String),
    Many(Vec<String>),
}

/// A `[[variant]]` table, checked: every value in range, every combination possible.
pub(super) fn variant(v: &VariantSpec) -> Result<Variant, String> {
    let protocol = protocol_of(v)?;
    let client = client_of(v, protocol)?;
    let single_domain = match v.spdy_domains.as_deref() {
        None | Some("per-origin") => false,
        Some("single") => true,
        Some(x) => return Err(format!("spdy_domains = {x:?}: per-origin or single")),
    };
    let push: PushPolicy = match &v.push {
        None => PushPolicy::None,
        Some(p) => p
            .parse()
            .map_err(|_| format!("push = {p:?}: none, subresources or all"))?,
    };
    if protocol == Protocol::Http1 && (push != PushPolicy::None || single_domain) {
        return Err("push and spdy_domains need protocol spdy or h2".into());
    }
    let cc_preference = cc_preference(v)?;
    check_numbers(v)?;
    let header_compression = match &v.header_compression {
        None => HeaderCompression::CrimeSafe,
        Some(h) => HeaderCompression::parse(h).map_err(|e| format!("header_compression = {e}"))?,
    };
    if v.connections_per_host == Some(0) || v.max_connections == Some(0) || v.sessions == Some(0) {
        return Err("connections_per_host, max_connections and sessions: at least 1".into());
    }
    if v.sessions.is_some() && protocol == Protocol::Http1 {
        return Err(
            "sessions = N is for SPDY and h2 sessions; HTTP/1.1 has connections_per_host".into(),
        );
    }
    let calibration = match &v.calibration {
        None => None,
        Some(c) => Some(calibration(c).map_err(|e| format!("calibration: {e}"))?),
    };
    let transport = transport_of(v, protocol)?;
    if v.name.is_empty() || v.name.contains(['/', ' ']) {
        return Err(format!(
            "variant name {:?}: non-empty, no '/' or spaces",
            v.name
        ));
    }
    Ok(Variant {
        name: v.name.clone(),
        protocol,
        tls: v.tls.unwrap_or(protocol == Protocol::H3),
        single_domain,
        push,
        hint: v.hint.unwrap_or(false),
        prefetch: v.prefetch.unwrap_or(false),
        baseline: v.baseline.unwrap_or(false),
        initcwnd: v.initcwnd,
        slow_start_after_idle: v.slow_start_after_idle,
        rack_tlp: v.rack_tlp.unwrap_or(true),
        no_metrics_save: v.no_metrics_save.unwrap_or(true),
        cc_preference,
        initrwnd: v.initrwnd,
        header_compression,
        connections_per_host: v.connections_per_host,
        max_connections: v.max_connections,
        calibration,
        against: v.against.clone(),
        proxy: proxy_of(v, protocol, single_domain, push)?,
        rto_min_ms: v.rto_min_ms,
        keepalive_ms: v.keepalive_ms,
        sessions: v.sessions,
        tls_hello: v
            .tls_hello
            .as_deref()
            .map(speedy_net::tls::Hello::parse)
            .transpose()
            .map_err(|e| format!("tls_hello = {e}"))?,
        known_servers: v.known_servers,
        partition: v.partition,
        transport,
        notsent_lowat: v.notsent_lowat,
        client,
    })
}

/// `client`: the loader, or headless Chromium where Chromium can honour everything the
/// variant asks (each refusal says why and names the variant).
fn client_of(v: &VariantSpec, protocol: Protocol) -> Result<Client, String> {
    let client = match &v.client {
        None => Client::Loader,
        Some(c) => c.parse()?,
    };
    if client == Client::Loader {
        return Ok(client);
    }
    let refuse = |why: &str| Err(format!("variant {:?}: client = \"chromium\" {why}", v.name));
    if protocol == SPDY {
        return refuse("cannot speak SPDY: Chromium removed SPDY in version 51, 2016");
    }
    if protocol != Protocol::H3 && v.tls != Some(true) {
        return refuse(
            "needs tls = true: the archive's URLs are https, and Chromium speaks h2 only \
             over TLS",
        );
    }
    if v.transport.as_deref() == Some("sctp") {
        return refuse("cannot run over SCTP (transport = \"sctp\" is the loader's SPDY)");
    }
    if v.proxy.is_some() {
        return refuse("is not run through `speedy proxy` (proxy is the loader's)");
    }
    // What only the loader (or the replay server's SPDY) has: Chromium would ignore it.
    let loader_only = [
        (v.spdy_domains.is_some(), "spdy_domains"),
        (v.push.is_some(), "push"),
        (v.hint.is_some(), "hint"),
        (v.prefetch.is_some(), "prefetch"),
        (v.header_compression.is_some(), "header_compression"),
        (v.connections_per_host.is_some(), "connections_per_host"),
        (v.max_connections.is_some(), "max_connections"),
        (v.sessions.is_some(), "sessions"),
        (v.tls_hello.is_some(), "tls_hello"),
        (v.known_servers.is_some(), "known_servers"),
        (v.partition.is_some(), "partition"),
        (v.keepalive_ms.is_some(), "keepalive_ms"),
    ];
    if let Some((_, key)) = loader_only.iter().find(|(set, _)| *set) {
        return refuse(&format!(
            "cannot honour {key}: it is a setting of the loader (or of the replay server's \
             SPDY), which Chromium would ignore"
        ));
    }
    Ok(client)
}

/// What an experiment asks of every load that Chromium cannot do: a revisit on the same
/// connections (`revisit_after_ms`) or a browsing session (`session_think_ms`) is the
/// loader's (`speedy load --then`); a Chromium variant beside them is refused by name.
pub(super) fn check_experiment_wide(
    variants: &[Variant],
    revisit: bool,
    session: bool,
) -> Result<(), String> {
    let key = match (revisit, session) {
        (true, _) => "revisit_after_ms",
        (false, true) => "session_think_ms",
        (false, false) => return Ok(()),
    };
    match variants.iter().find(|v| v.client == Client::Chromium) {
        Some(v) => Err(format!(
            "variant {:?}: client = \"chromium\" loads one page per load; the experiment's \
             {key} (a revisit or a browsing session on the same connections) is the loader's",
            v.name
        )),
        None => Ok(()),
    }
}

/// The variant's protocol, of the one vocabulary (`speedy_net::protocol`); the loader
/// speaks HTTP/1.1, SPDY/3.1, h2 and h3.
fn protocol_of(v: &VariantSpec) -> Result<Protocol, String> {
    match Protocol::parse(&v.protocol) {
        Ok(p @ (Protocol::Http1 | SPDY | Protocol::H2 | Protocol::H3)) => Ok(p),
        Ok(_) => Err(format!(
            "protocol = {:?}: the loader speaks http1, spdy (SPDY/3.1), h2 and h3",
            v.protocol
        )),
        Err(e) => Err(format!("protocol = {:?}: {e}", v.protocol)),
    }
}

/// `cc`: the congestion controls in order of preference (none: the namespaces' default).
fn cc_preference(v: &VariantSpec) -> Result<Vec<CcName>, String> {
    let cc_preference = match &v.cc {
        None => vec![],
        Some(OneOrManyStr::One(c)) => vec![c.clone()],
        Some(OneOrManyStr::Many(cs)) if cs.is_empty() => {
            return Err("cc = []: name at least one of reno, cubic, bbr".into())
        }
        Some(OneOrManyStr::Many(cs)) => cs.clone(),
    };
    cc_preference
        .iter()
        .map(|cc| CcName::parse(cc).ok_or_else(|| format!("cc = {cc:?}: reno, cubic or bbr")))
        .collect()
}

/// The windows, counts and timeouts in range.
fn check_numbers(v: &VariantSpec) -> Result<(), String> {
    if let Some(ms) = v.rto_min_ms {
        if !(1..=120_000).contains(&ms) {
            return Err(format!("rto_min_ms = {ms}: between 1 and 120000"));
        }
    }
    if v.notsent_lowat == Some(0) {
        return Err("notsent_lowat = 0: at least 1 byte (leave it out for no limit)".into());
    }
    for (w, name) in [(v.initcwnd, "initcwnd"), (v.initrwnd, "initrwnd")] {
        if let Some(w) = w {
            if !(1..=1000).contains(&w) {
                return Err(format!("{name} = {w}: between 1 and 1000 segments"));
            }
        }
    }
    Ok(())
}

/// `proxy`: the kind, the protocol each kind needs, and what a proxy decides instead of
/// the variant.
fn proxy_of(
    v: &VariantSpec,
    protocol: Protocol,
    single_domain: bool,
    push: PushPolicy,
) -> Result<Option<ProxyKind>, String> {
    let kind = match (v.proxy.as_deref(), protocol) {
        (None, _) => None,
        (Some("spdy"), SPDY) => Some(ProxyKind::Spdy),
        (Some("http"), Protocol::Http1) => Some(ProxyKind::Http),
        (Some(p @ ("spdy" | "http")), _) => {
            return Err(format!(
                "proxy = {p:?} needs protocol = {:?}",
                if p == "spdy" { "spdy" } else { "http1" }
            ))
        }
        (Some(p), _) => return Err(format!("proxy = {p:?}: spdy or http")),
    };
    if v.proxy.is_some() && (single_domain || push != PushPolicy::None) {
        return Err("proxy: without spdy_domains or push (the proxy decides those)".into());
    }
    if v.proxy.as_deref() == Some("http") && v.tls == Some(true) {
        return Err(
            "proxy = \"http\" with tls: Chrome's HTTP proxy is plain; tls = true is TLS to the \
             SPDY proxy"
                .into(),
        );
    }
    Ok(kind)
}

/// `transport`: whether the variant runs SPDY over SCTP (and its options), and what h3
/// and SCTP rule out.
fn transport_of(v: &VariantSpec, protocol: Protocol) -> Result<Transport, String> {
    let sctp = match v.transport.as_deref() {
        None | Some("tcp") => false,
        Some("sctp") => true,
        Some(t) => return Err(format!("transport = {t:?}: tcp or sctp")),
    };
    if sctp && (protocol != SPDY || v.tls == Some(true) || v.proxy.is_some()) {
        return Err(
            "transport = \"sctp\": protocol = \"spdy\", without tls or proxy (SCTP carries \
             plain SPDY)"
                .into(),
        );
    }
    if protocol == Protocol::H3 && (v.tls == Some(false) || v.proxy.is_some() || sctp) {
        return Err(
            "protocol = \"h3\": HTTP/3 runs over QUIC, always encrypted (tls is implied), \
             without proxy or sctp"
                .into(),
        );
    }
    if v.cookie_bundling.is_some() && !sctp {
        return Err("cookie_bundling: only with transport = \"sctp\"".into());
    }
    if let Some(ms) = v.sctp_rto_initial_ms {
        if !sctp {
            return Err("sctp_rto_initial_ms: only with transport = \"sctp\"".into());
        }
        if !(1..=60_000).contains(&ms) {
            return Err(format!("sctp_rto_initial_ms = {ms}: between 1 and 60000"));
        }
    }
    let stack = match &v.sctp_stack {
        Some(_) if !sctp => {
            return Err("sctp_stack: only with transport = \"sctp\"".into());
        }
        Some(name) => name
            .parse()
            .map_err(|e| format!("sctp_stack = {name:?}: {e}"))?,
        None => Default::default(),
    };
    if stack == speedy_net::sctp::SctpStack::Usrsctp && v.cookie_bundling == Some(false) {
        return Err("cookie_bundling = false: sctp-proto only (usrsctp bundles as it will)".into());
    }
    Ok(if sctp {
        Transport::Sctp {
            cookie_bundling: v.cookie_bundling.unwrap_or(true),
            rto_initial_ms: v.sctp_rto_initial_ms,
            stack,
        }
    } else {
        Transport::Tcp
    })
}

/// Every `[[variant]]`, checked one by one and together (unique names, `against` and
/// calibrations that fit, one baseline: HTTP/1.1's when none is named).
pub(super) fn variants_of(
    specs: &[Spanned<VariantSpec>],
    origin: &str,
    pages: &Pages,
    at: &dyn Fn(Range<usize>, String) -> String,
) -> Result<Vec<Variant>, String> {
    let mut variants = Vec::new();
    for v in specs {
        let var = variant(v.get_ref()).map_err(|e| at(v.span(), e))?;
        if variants.iter().any(|x: &Variant| x.name == var.name) {
            return Err(at(
                v.span(),
                format!("two variants are named {:?}", var.name),
            ));
        }
        variants.push(var);
    }
    if variants.is_empty() {
        return Err(format!("{origin}: no [[variant]]"));
    }
    for v in &variants {
        if let Some(a) = &v.against {
            let Some(b) = variants.iter().find(|x| &x.name == a) else {
                return Err(format!(
                    "{origin}: variant {:?} is against {a:?}, which no [[variant]] defines",
                    v.name
                ));
            };
            if b.calibration.map(|c| c.name) != v.calibration.map(|c| c.name) {
                return Err(format!(
                    "{origin}: variant {:?} is against {a:?}, which loads other pages (calibration)",
                    v.name
                ));
            }
        }
        if v.calibration.is_some() && !matches!(pages, Pages::Synth(..)) {
            return Err(format!(
                "{origin}: variant {:?} has a calibration, which needs [pages] synth = N",
                v.name
            ));
        }
    }
    if variants.iter().filter(|v| v.baseline).count() > 1 {
        return Err(format!(
            "{origin}: more than one variant has baseline = true"
        ));
    }
    if !variants.iter().any(|v| v.baseline) {
        if let Some(v) = variants.iter_mut().find(|v| v.protocol == Protocol::Http1) {
            v.baseline = true;
        }
    }
    Ok(variants)
}
