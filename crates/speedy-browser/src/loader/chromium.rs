//! Chromium's loading model, as the loader applies it: request priorities, the two request
//! schedulers, and what the HTML parser does with scripts. The version modelled is
//! Chromium 156 (what `speedy lab validate` compares against); each rule names the
//! Chromium source it comes from. Pure functions and state: no IO, no clock (`now` is a
//! parameter), so `engine` tests drive every rule on a virtual clock.
//!
//! | rule | Chromium source |
//! |---|---|
//! | priorities per type ([`priority`]) | Blink `ResourceFetcher::ComputeLoadPriority` (`resource_fetcher.cc`) and the image boost of `features::kBoostImagePriority` (the first five images get Medium) |
//! | Blink priority → net → SPDY ([`Priority::spdy`]) | `WebURLRequest` → `net::RequestPriority` (`VeryHigh`→`HIGHEST` … `VeryLow`→`IDLE`); `net/spdy` `ConvertRequestPriorityToSpdyPriority` (`HIGHEST` → 0) |
//! | tight mode until `<body>` ([`BlinkGate`]) | Blink `ResourceLoadScheduler` (`resource_load_scheduler.cc`): while the frame has not seen `<body>`, requests below High run only while fewer than `kTightLimitForRendererSideResourceScheduler` = 2 throttleable requests run, Medium ones also while fewer than `kTightMediumLimitForRendererSideResourceScheduler` = 2 Medium ones do |
//! | HTTP/1.1 and HTTP/3 delayable limits ([`NetGate`]) | network service `ResourceScheduler` (`resource_scheduler.cc`): requests below net `MEDIUM` to servers without request priorities (`HttpServerProperties::SupportsRequestPriority`: not known to speak HTTP/2 and no QUIC `Alt-Svc`, so HTTP/1.1 and QUIC by prior knowledge, [`NetGate::holds`]) are delayable; at most `kDefaultMaxNumDelayableRequestsPerClient` = 10 in flight, and none while `kMaxNumDelayableRequestsPerHostPerClient` = 6 requests to its host are |
//! | parser-blocking scripts | HTML Standard §13.2.6 "prepare the script element" / Blink `HTMLParserScriptRunner`: a classic script without `async`/`defer` stops the parser until it has arrived and every style sheet inserted before it has loaded (`Document::IsScriptExecutionReady`), then runs |
//! | preload scanner reach | Blink `HTMLPreloadScanner` (`html_preload_scanner.cc`): while the parser waits, scripts, style sheets and images ahead are requested; `<iframe>` is not (only the parser creates frames), nor what style sheets or scripts will request |
//! | async, defer, inserted scripts | HTML Standard: async and script-inserted scripts run when they arrive; defer scripts in order after parsing, before `DOMContentLoaded` |
//! | style sheet images raised at the first layout ([`priority`]) | Blink `ResourceFetcher::UpdateAllImageResourcePriorities`: images of elements in the viewport go to High after layout; the NetLogs of `speedy lab validate` show every style sheet image restarted as `REQUEST_REPRIORITIZED` |
//! | style sheet subresources | Blink requests `url()` images and fonts at style recalc, once the sheet has loaded and the parser has inserted the elements (`<body>` seen); `@import` when the sheet is parsed |
//! | connections to a server not yet known to speak HTTP/2 (`LoadConfig::race_connections`) | `net/http/http_stream_factory_job.cc`: `ShouldThrottleConnectForSpdy` holds a request's connect back only when `HttpServerProperties::GetSupportsSpdy` knows the server, so with a fresh profile every request waiting for a first session starts its own connect job (up to the socket pool's 6 per group); a job whose socket connects after a session exists hands the socket back, which closes it (NetLog of `speedy lab validate`: 13 connections for 6 sessions on a quick page) |
//! | backup connect jobs ([`BACKUP_JOB_AFTER`], `LoadConfig::backup_connect_jobs`) | `net/socket/transport_client_socket_pool.cc`: a socket pool group's first connect job arms a timer of `ClientSocketPool::kMaxConnectRetryIntervalMs` = 250 ms (`Group::StartBackupJobTimer`); when it fires (`OnBackupJobTimerFired`) and the group's oldest job has not established its TCP connection, one more connect job starts if requests wait and the group (6) and the pool (256) have a socket to spare; while the job resolves its host or no socket is spare, the timer starts again. NetLog of a cellular-2013 page over h2 on the whitepaper's DSL line: 23 of 112 connect jobs `backup_job: true` |
//! | partitioned connections (`LoadConfig::partition_frames`) | `net/socket/client_socket_pool.h` `GroupId` and `net/spdy/spdy_session_key.h` carry the `NetworkAnonymizationKey` (top-frame site, whether the frame is cross-site): a cross-site frame's requests do not share the page's connections or sessions |
//! | privacy mode in the socket pool group ([`Privacy`]) | `net/socket/client_socket_pool.h` `GroupId` and `SpdySessionKey` carry the request's `PrivacyMode`: requests sent without cookies never share a connection with requests sent with them. Blink fetches fonts in CORS mode with credentials `same-origin` (CSS Fonts §4.8.2), so a cross-origin font goes out without (`pm` in the group id); a request to another site than the top frame's, with third-party cookies blocked as in headless Chromium 156, goes out in `PRIVACY_MODE_ENABLED_PARTITIONED_STATE_ALLOWED` (`pmpsa`). NetLog of a cellular-2013 page over h2: every third-party subresource and cross-site frame navigation `pmpsa`, a cross-origin font `pm`, each in a group of its own |
//! | preconnects ([`PRECONNECT_SOCKETS`], `LoadConfig::preconnect`) | `chrome/browser/predictors/loading_predictor.cc`: as a main-frame navigation starts, `AddInitialUrlToPreconnectPrediction` adds its origin with `kMinSockets` = 2 even without a learned prediction, and `PreconnectManager` asks the socket pool for that many sockets, which the navigation and the origin's next request take up. NetLog (same page): two connect jobs to the page's origin before its request, and one credentialed preconnect to each cross-site frame's origin as the frame navigates (`kAllowCredentialsOnPreconnectByDefault`), which no request used: the frame's navigation went out `pmpsa`, in another group. Which code issues the frame preconnects was not established; the NetLog is the source |
//! | request headers (`chromium_headers`) | read off the wire from headless Chromium 156 (docs/loader.md, "Request headers"): the low-entropy client hints, `Sec-Fetch-Site`/`-Mode`/`-User`/`-Dest` (W3C Fetch Metadata), `Upgrade-Insecure-Requests` on navigations, `Origin` on CORS-mode requests, the referrer cut to its origin across origins (`strict-origin-when-cross-origin`), no cookie in privacy mode |
//! | milestones | HTML Standard "the end": `DOMContentLoaded` after parsing and the defer scripts; `load` once nothing that delays it is loading (scripts, style sheets, images, frames; `fetch()`/XHR and timers do not delay it) |

use crate::config::Proto;
use crate::conn::ReqId;
use crate::discover::Blocking;
use speedy_archive::ObjectType;
use std::collections::HashSet;
use std::time::Duration;

/// How long a socket pool group's first connect job may go without a TCP connection
/// before Chromium starts a backup job beside it (`ClientSocketPool::
/// kMaxConnectRetryIntervalMs`, `net/socket/client_socket_pool.h`).
pub const BACKUP_JOB_AFTER: Duration = Duration::from_millis(250);

/// Sockets Chromium preconnects to a main frame's origin as its navigation starts
/// (`kMinSockets`, `chrome/browser/predictors/loading_predictor.cc`).
pub const PRECONNECT_SOCKETS: usize = 2;

/// The privacy mode of a request, part of its socket pool group: requests of different
/// modes to one origin use different connections (`net/base/privacy_mode.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Privacy {
    /// Sent with cookies (`PRIVACY_MODE_DISABLED`).
    Credentialed,
    /// A CORS request without credentials, such as a cross-origin font
    /// (`PRIVACY_MODE_ENABLED`, `pm`).
    Anonymous,
    /// A request to another site than the top frame's while third-party cookies are
    /// blocked (`PRIVACY_MODE_ENABLED_PARTITIONED_STATE_ALLOWED`, `pmpsa`).
    Partitioned,
}

impl Privacy {
    /// The mode of a request of `kind` to `host`, made by a document of `doc_origin` in a
    /// page whose top frame is on `top_host`.
    pub fn of(
        kind: ObjectType,
        origin: &str,
        host: &str,
        doc_origin: &str,
        top_host: &str,
    ) -> Privacy {
        if kind == ObjectType::Font && origin != doc_origin {
            Privacy::Anonymous
        } else if site(host) != site(top_host) {
            Privacy::Partitioned
        } else {
            Privacy::Credentialed
        }
    }

    /// How Chromium's NetLog writes the mode in a group id (empty when credentialed).
    pub fn tag(self) -> &'static str {
        match self {
            Privacy::Credentialed => "",
            Privacy::Anonymous => "pm",
            Privacy::Partitioned => "pmpsa",
        }
    }
}

/// Blink's `ResourceLoadPriority`, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// `kVeryLow` (net `IDLE`).
    VeryLow,
    /// `kLow` (net `LOWEST`).
    Low,
    /// `kMedium` (net `LOW`).
    Medium,
    /// `kHigh` (net `MEDIUM`).
    High,
    /// `kVeryHigh` (net `HIGHEST`).
    VeryHigh,
}

impl Priority {
    /// The SPDY/3 priority Chromium sends (0 = highest): `HIGHEST` 0, `MEDIUM` 1, `LOW` 2,
    /// `LOWEST` 3, `IDLE` 4.
    pub fn spdy(self) -> u8 {
        match self {
            Priority::VeryHigh => 0,
            Priority::High => 1,
            Priority::Medium => 2,
            Priority::Low => 3,
            Priority::VeryLow => 4,
        }
    }

    /// The priority a Chrome HAR's `_priority` names (`VeryHigh` … `VeryLow`).
    pub fn from_name(name: &str) -> Option<Priority> {
        Some(match name {
            "VeryHigh" => Priority::VeryHigh,
            "High" => Priority::High,
            "Medium" => Priority::Medium,
            "Low" => Priority::Low,
            "VeryLow" => Priority::VeryLow,
            _ => return None,
        })
    }

    /// Delayable for the network service's `ResourceScheduler`: below net `MEDIUM`
    /// (`kDelayablePriorityThreshold`), i.e. Blink Medium and lower.
    pub fn delayable(self) -> bool {
        self <= Priority::Medium
    }
}

/// How a request came to be, as far as its priority is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Found in a document by the parser or the preload scanner.
    Parser {
        /// `async` or `defer`.
        async_or_defer: bool,
        /// After the document's first `<img>` (a "late body" script).
        after_first_image: bool,
    },
    /// Requested by a style sheet (`url()`, `@import`, `@font-face`).
    Css,
    /// Requested by a running script (inserted elements, `new Image()`, `fetch()`).
    Script,
    /// Anything else (hints, prefetch, redirects).
    Other,
}

/// The priority Chromium gives a request (`ResourceFetcher::ComputeLoadPriority`).
/// `image_index` is how many images were requested before this one (for the boost of
/// the first five).
pub fn priority(kind: ObjectType, origin: Origin, image_index: usize) -> Priority {
    match kind {
        ObjectType::Document | ObjectType::Stylesheet | ObjectType::Font => Priority::VeryHigh,
        ObjectType::Script => match origin {
            Origin::Parser {
                async_or_defer: true,
                ..
            }
            | Origin::Script => Priority::Low,
            Origin::Parser {
                after_first_image: true,
                ..
            } => Priority::Medium,
            _ => Priority::High,
        },
        ObjectType::Image => match origin {
            // Style sheet images count as visible. Blink requests a `url()` image at
            // style recalc at Low and, at the layout that follows, raises the images of
            // elements in the viewport to High
            // (`ResourceFetcher::UpdateAllImageResourcePriorities`), which makes them
            // non-delayable for the network service. In the NetLogs of `speedy lab
            // validate quick` every style sheet image (18 of 18) was started with trigger
            // `REQUEST_REPRIORITIZED` within 2 ms of its creation, and no `<img>` was;
            // the loader has no layout, so it gives them High from the start.
            Origin::Css => Priority::High,
            _ if image_index < BOOSTED_IMAGES => Priority::Medium,
            _ => Priority::Low,
        },
        ObjectType::Xhr => Priority::High,
        ObjectType::Other => match origin {
            Origin::Script => Priority::High, // fetch()
            _ => Priority::Low,
        },
    }
}

/// Images boosted to Medium (`kBoostImagePriority`'s default of five).
pub const BOOSTED_IMAGES: usize = 5;

/// Blink's per-frame `ResourceLoadScheduler` for the main frame: tight until `<body>`.
#[derive(Debug, Default)]
pub struct BlinkGate {
    /// `<body>` seen: the policy is normal (effectively unlimited).
    pub loosened: bool,
    running: HashSet<ReqId>,
    running_medium: HashSet<ReqId>,
}

impl BlinkGate {
    /// Blink's tight-mode limit for requests below High.
    pub const TIGHT_LIMIT: usize = 2;
    /// Medium requests allowed in tight mode whatever else runs.
    pub const TIGHT_MEDIUM_LIMIT: usize = 2;

    /// Whether a request of `p` may start now.
    pub fn allows(&self, p: Priority) -> bool {
        if self.loosened || p >= Priority::High {
            return true;
        }
        (p == Priority::Medium && self.running_medium.len() < Self::TIGHT_MEDIUM_LIMIT)
            || self.running.len() < Self::TIGHT_LIMIT
    }

    /// A request started.
    pub fn start(&mut self, id: ReqId, p: Priority) {
        self.running.insert(id);
        if p == Priority::Medium {
            self.running_medium.insert(id);
        }
    }

    /// A request finished (or failed).
    pub fn finish(&mut self, id: ReqId) {
        self.running.remove(&id);
        self.running_medium.remove(&id);
    }
}

/// The network service's `ResourceScheduler` for servers without request priorities
/// (HTTP/1.1, and HTTP/3 by prior knowledge: [`NetGate::holds`]): delayable requests
/// wait while 10 delayable ones are in flight, or while 6 requests to their host are.
#[derive(Debug, Default)]
pub struct NetGate {
    in_flight: Vec<(ReqId, String, bool)>,
}

impl NetGate {
    /// `kDefaultMaxNumDelayableRequestsPerClient`.
    pub const MAX_DELAYABLE: usize = 10;
    /// `kMaxNumDelayableRequestsPerHostPerClient`.
    pub const MAX_PER_HOST: usize = 6;

    /// Whether the network service holds delayable requests to servers reached over
    /// `proto`: over HTTP/1.1, and over HTTP/3 as the lab and the loader reach it (QUIC
    /// by prior knowledge, `--origin-to-force-quic-on`, on a fresh profile).
    /// `ResourceScheduler` lets a request through unthrottled only when
    /// `HttpServerProperties::SupportsRequestPriority` holds for its origin: the server
    /// is known to speak HTTP/2 (`SetSupportsSpdy`, called when an HTTP/2 session is made
    /// from a TCP connection, `net/http/http_stream_pool_attempt_manager.cc`
    /// `OnTcpBasedAttemptComplete`) or has a QUIC alternative service (from an `Alt-Svc`
    /// header). A QUIC session made by prior knowledge records neither
    /// (`OnQuicAttemptComplete` sets no server property), so every origin of an h3 load
    /// is throttled as HTTP/1.1's are. The HARs of `speedy lab validate all` agree: on the
    /// LTE trace Chromium had at most 20-25 delayable requests in flight on cellular-2013
    /// pages over h3 and over HTTP/1.1, 42-47 over h2.
    pub fn holds(proto: Proto) -> bool {
        matches!(proto, Proto::Http1 | Proto::H3)
    }

    /// Whether a request for `host` at `p` may start now.
    pub fn allows(&self, host: &str, p: Priority) -> bool {
        if !p.delayable() {
            return true;
        }
        let delayable = self.in_flight.iter().filter(|(_, _, d)| *d).count();
        let same_host = self.in_flight.iter().filter(|(_, h, _)| h == host).count();
        delayable < Self::MAX_DELAYABLE && same_host < Self::MAX_PER_HOST
    }

    /// A request started.
    pub fn start(&mut self, id: ReqId, host: &str, p: Priority) {
        self.in_flight.push((id, host.to_string(), p.delayable()));
    }

    /// A request finished (or failed).
    pub fn finish(&mut self, id: ReqId) {
        self.in_flight.retain(|(i, _, _)| *i != id);
    }
}

/// A host's site for partitioning: its registrable domain, taken as its last two labels
/// (the lab's hosts are all `name.example`-style; a public-suffix list would be needed for
/// `co.uk`-style names), or the whole host for an IP address.
pub fn site(host: &str) -> &str {
    let h = host.trim_end_matches('.');
    if h.parse::<std::net::IpAddr>().is_ok() || h.starts_with('[') {
        return h;
    }
    match h.rmatch_indices('.').nth(1) {
        Some((i, _)) => &h[i + 1..],
        None => h,
    }
}

/// Script execution cost: what the archive says, else `ms_per_kb` of the decoded body.
pub fn exec_cost(recorded_ms: Option<u32>, decoded_bytes: u64, ms_per_kb: f64) -> Duration {
    match recorded_ms {
        Some(ms) => Duration::from_millis(ms as u64),
        None => Duration::from_secs_f64(decoded_bytes as f64 / 1024.0 * ms_per_kb / 1000.0),
    }
}

/// What the parser does at one point of a document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A reference the parser creates an element for; `id` once requested.
    Ref {
        /// The request, once made (by the preload scanner or the parser).
        id: Option<ReqId>,
        /// Index into the engine's list of references not yet requested.
        pending: Option<usize>,
        /// What it does to the parser: a `SyncScript` stops it, a `DeferScript` runs
        /// after it, a `Stylesheet` holds the scripts after it.
        blocking: Blocking,
    },
    /// The `<body>` start tag.
    Body,
}

/// The HTML parser's position in one document.
#[derive(Debug, Default)]
pub struct DocParser {
    /// (offset just past the tag, what happens there), in document order.
    pub steps: Vec<(usize, Step)>,
    /// Steps the parser has passed.
    pub pos: usize,
    /// Bytes of the document that have arrived.
    pub arrived: usize,
    /// The whole document has arrived.
    pub complete: bool,
    /// Parsing ended (every step passed, every blocking script run).
    pub finished: bool,
}

impl DocParser {
    /// Style sheets inserted before step `i`.
    pub fn sheets_before(&self, i: usize) -> Vec<ReqId> {
        self.steps[..i]
            .iter()
            .filter_map(|(_, s)| match s {
                Step::Ref {
                    id: Some(id),
                    blocking: Blocking::Stylesheet,
                    ..
                } => Some(*id),
                _ => None,
            })
            .collect()
    }

    /// Defer scripts in document order.
    pub fn defer_scripts(&self) -> Vec<ReqId> {
        self.steps
            .iter()
            .filter_map(|(_, s)| match s {
                Step::Ref {
                    id: Some(id),
                    blocking: Blocking::DeferScript,
                    ..
                } => Some(*id),
                _ => None,
            })
            .collect()
    }

    /// Whether the document references request `id` as a blocking or defer script.
    pub fn runs_script(&self, id: ReqId) -> bool {
        self.steps.iter().any(|(_, s)| {
            matches!(s, Step::Ref { id: Some(i), blocking: Blocking::SyncScript | Blocking::DeferScript, .. }
                if *i == id)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_follow_blink() {
        let head = Origin::Parser {
            async_or_defer: false,
            after_first_image: false,
        };
        assert_eq!(
            priority(ObjectType::Stylesheet, head, 0),
            Priority::VeryHigh
        );
        assert_eq!(priority(ObjectType::Script, head, 0), Priority::High);
        let late = Origin::Parser {
            async_or_defer: false,
            after_first_image: true,
        };
        assert_eq!(priority(ObjectType::Script, late, 3), Priority::Medium);
        assert_eq!(
            priority(ObjectType::Script, Origin::Script, 0),
            Priority::Low
        );
        assert_eq!(priority(ObjectType::Image, head, 4), Priority::Medium);
        assert_eq!(priority(ObjectType::Image, head, 5), Priority::Low);
        assert_eq!(priority(ObjectType::Image, Origin::Css, 0), Priority::High);
        assert_eq!(priority(ObjectType::Xhr, Origin::Script, 0), Priority::High);
        assert_eq!(Priority::VeryHigh.spdy(), 0);
        assert_eq!(Priority::VeryLow.spdy(), 4);
        assert!(Priority::Medium.delayable() && !Priority::High.delayable());
    }

    #[test]
    fn tight_mode_limits_low_and_medium() {
        let mut g = BlinkGate::default();
        g.start(1, Priority::High);
        g.start(2, Priority::VeryHigh);
        assert!(g.allows(Priority::High));
        assert!(!g.allows(Priority::Low), "two throttleable requests run");
        assert!(g.allows(Priority::Medium));
        g.start(3, Priority::Medium);
        g.start(4, Priority::Medium);
        assert!(!g.allows(Priority::Medium), "two Medium requests run");
        g.finish(3);
        assert!(g.allows(Priority::Medium));
        g.loosened = true;
        assert!(g.allows(Priority::Low));
    }

    #[test]
    fn net_gate_limits_delayable_per_client_and_host() {
        let mut n = NetGate::default();
        for i in 0..6 {
            n.start(i, "a", Priority::High);
        }
        assert!(!n.allows("a", Priority::Low), "six in flight to a");
        assert!(n.allows("a", Priority::High), "non-delayable always starts");
        for i in 10..20 {
            n.start(i, &format!("h{i}"), Priority::Low);
        }
        assert!(!n.allows("b", Priority::Low), "ten delayable in flight");
        n.finish(10);
        assert!(n.allows("b", Priority::Low));
    }
}
