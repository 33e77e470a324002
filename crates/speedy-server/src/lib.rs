//! # speedy-server: replay page archives
//!
//! [`Replay`] answers requests from an [`Archive`] held in memory, for every origin of
//! the archive, over whatever protocol `speedy-net` negotiated (HTTP/1.1, SPDY, HTTP/2).
//!
//! Matching as Web Page Replay matches ([`matching`]): the exact URL and method (ties
//! by equal request headers); else the same host and path with the best-matching query;
//! else the same path and query on any host; otherwise 404. Responses found other than
//! exactly, and the 404s, say so in `x-speedy-replay`. Hosts are compared without a port.
//!
//! Push policies (SPDY and HTTP/2): `none`; `subresources`, an HTML response pushes the
//! objects its parser discovers directly (same origin); `all`, every same-origin
//! descendant of the HTML (parsed or script-initiated). Hints: with `hint`, HTML
//! responses carry `x-subresources: TYPE; URL; TYPE; URL ...` listing every object the
//! document's parser discovers directly (any origin), in discovery order.

pub mod allow;
pub mod ca;
pub mod files;
pub mod matching;
pub mod proxy;
pub mod recorder;
pub mod run;
pub mod spec;
pub mod startup;

use bytes::Bytes;
use spdy::url::Url;
use speedy_archive::{Archive, Discovery, ObjectType};
use speedy_net::server::{Handler, Push, Request, Response, ResponseFuture};
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// What an HTML response pushes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushPolicy {
    /// Nothing.
    None,
    /// Same-origin objects the document's parser discovers directly.
    Subresources,
    /// Every same-origin descendant of the document.
    All,
}

impl std::fmt::Display for PushPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PushPolicy::None => "none",
            PushPolicy::Subresources => "subresources",
            PushPolicy::All => "all",
        })
    }
}

impl FromStr for PushPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(PushPolicy::None),
            "subresources" => Ok(PushPolicy::Subresources),
            "all" => Ok(PushPolicy::All),
            _ => Err(format!(
                "unknown push policy {s:?} (none, subresources, all)"
            )),
        }
    }
}

/// Replay settings.
#[derive(Clone, Copy, Debug)]
pub struct ReplayOptions {
    /// Push policy.
    pub push: PushPolicy,
    /// Add `x-subresources` to HTML responses.
    pub hint: bool,
    /// Wait each object's think time (`think_ms`, the archive's model of the server's
    /// work) before answering.
    pub think_time: bool,
    /// Also wait the think time a recording saw ([`recorded_think_ms`]); off by default,
    /// as in Mahimahi's and Web Page Replay's replays.
    pub recorded_think_time: bool,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            push: PushPolicy::None,
            hint: false,
            think_time: true,
            recorded_think_time: false,
        }
    }
}

/// The replay handler.
pub struct Replay {
    archive: Arc<Archive>,
    opts: ReplayOptions,
    matcher: matching::Matcher,
    children: HashMap<usize, Vec<usize>>,
    /// Per object, the recorded think time to wait (empty unless
    /// `recorded_think_time`).
    recorded_think: Vec<u32>,
}

/// Per object of `a`, the server think time its recording saw: the time to the
/// response's first byte beyond the quickest first byte of any object of the same host
/// (which stands for the round trip to that origin, as the HAR importer takes the
/// quickest wait); 0 for objects recorded without a first-byte time.
pub fn recorded_think_ms(a: &Archive) -> Vec<u32> {
    let host = |url: &str| Url::parse(url).map(|u| u.host_bare().to_string());
    let mut quickest: HashMap<String, u32> = HashMap::new();
    for o in &a.objects {
        if let (Some(h), Some(fb)) = (
            host(&o.url),
            o.recorded.as_ref().and_then(|r| r.first_byte_ms),
        ) {
            let q = quickest.entry(h).or_insert(fb);
            *q = (*q).min(fb);
        }
    }
    a.objects
        .iter()
        .map(|o| {
            match (
                host(&o.url).and_then(|h| quickest.get(&h)),
                o.recorded.as_ref().and_then(|r| r.first_byte_ms),
            ) {
                (Some(q), Some(fb)) => fb - q,
                _ => 0,
            }
        })
        .collect()
}

/// Host without a port, lower-cased.
pub fn bare_host(h: &str) -> String {
    let h = h.trim().to_ascii_lowercase();
    if let Some(rest) = h.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("").to_string();
    }
    h.rsplit_once(':')
        .filter(|(_, p)| p.chars().all(|c| c.is_ascii_digit()))
        .map_or(h.clone(), |(x, _)| x.to_string())
}

impl Replay {
    /// Indexes an archive.
    pub fn new(archive: Arc<Archive>, opts: ReplayOptions) -> Replay {
        let mut r = Replay {
            archive: archive.clone(),
            opts,
            matcher: matching::Matcher::new(&archive),
            children: HashMap::new(),
            recorded_think: if opts.recorded_think_time {
                recorded_think_ms(&archive)
            } else {
                Vec::new()
            },
        };
        for o in &archive.objects {
            if let Some(p) = o.discovery.parent() {
                r.children.entry(p).or_default().push(o.id);
            }
        }
        r
    }

    /// The origins (hosts) of the archive, in order of first appearance.
    pub fn hosts(&self) -> Vec<String> {
        let mut seen = Vec::new();
        for o in &self.archive.objects {
            if let Some(u) = Url::parse(&o.url) {
                let h = u.host_bare().to_string();
                if !seen.contains(&h) {
                    seen.push(h);
                }
            }
        }
        seen
    }

    /// For each host of [`Replay::hosts`], the address slot it is served on: hosts that
    /// were recorded at one server address share a slot (as live, so that a browser may
    /// share their connections as it did then); every other host has a slot of its own.
    /// Slots are numbered from 0 in the order of their first host.
    pub fn host_slots(&self) -> Vec<usize> {
        self.slots().0
    }

    /// For each slot of [`Replay::host_slots`], the address its hosts were recorded at
    /// (`None` for a host with no recorded address): where a test bed can, it serves the
    /// slot at that address, as live.
    pub fn slot_addrs(&self) -> Vec<Option<std::net::IpAddr>> {
        self.slots().1
    }

    /// (slot per host, recorded address per slot).
    fn slots(&self) -> (Vec<usize>, Vec<Option<std::net::IpAddr>>) {
        let mut recorded: HashMap<String, std::net::IpAddr> = HashMap::new();
        for o in &self.archive.objects {
            let (Some(u), Some(addr)) =
                (Url::parse(&o.url), o.recorded.as_ref().and_then(|r| r.addr))
            else {
                continue;
            };
            recorded
                .entry(u.host_bare().to_string())
                .or_insert(addr.ip());
        }
        let mut slot_of_addr: HashMap<std::net::IpAddr, usize> = HashMap::new();
        let mut addrs: Vec<Option<std::net::IpAddr>> = Vec::new();
        let slots = self
            .hosts()
            .iter()
            .map(|h| match recorded.get(h) {
                Some(ip) => *slot_of_addr.entry(*ip).or_insert_with(|| {
                    addrs.push(Some(*ip));
                    addrs.len() - 1
                }),
                None => {
                    addrs.push(None);
                    addrs.len() - 1
                }
            })
            .collect();
        (slots, addrs)
    }

    /// Finds the object a request asks for, and how ([`matching`]).
    pub fn find(
        &self,
        method: &str,
        host: &str,
        path: &str,
        headers: &spdy::Headers,
    ) -> Option<(usize, matching::Match)> {
        self.matcher
            .find(&self.archive, method, &bare_host(host), path, headers)
    }

    /// Finds the object a request without headers asks for.
    pub fn lookup(&self, method: &str, host: &str, path: &str) -> Option<usize> {
        self.find(method, host, path, &spdy::Headers::new())
            .map(|(id, _)| id)
    }

    fn same_origin(&self, a: usize, b: usize) -> bool {
        let host = |i: usize| {
            Url::parse(&self.archive.objects[i].url)
                .map(|u| (u.scheme.clone(), u.host_bare().to_string()))
        };
        host(a) == host(b)
    }

    fn pushes_for(&self, id: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut stack: Vec<usize> = self.children.get(&id).cloned().unwrap_or_default();
        stack.reverse();
        while let Some(c) = stack.pop() {
            let direct_parsed = matches!(self.archive.objects[c].discovery, Discovery::Parsed { parent, .. } if parent == id);
            let wanted = match self.opts.push {
                PushPolicy::None => false,
                PushPolicy::Subresources => direct_parsed,
                PushPolicy::All => true,
            };
            if wanted && self.same_origin(id, c) && !out.contains(&c) {
                out.push(c);
            }
            if self.opts.push == PushPolicy::All {
                let mut grand = self.children.get(&c).cloned().unwrap_or_default();
                grand.reverse();
                stack.extend(grand);
            }
        }
        out
    }

    fn response_for(&self, id: usize, method: &str) -> Response {
        let o = &self.archive.objects[id];
        let headers: Vec<(String, String)> = o
            .response_headers
            .iter()
            .filter(|(n, _)| {
                !matches!(
                    n.as_str(),
                    "content-length" | "transfer-encoding" | "connection" | "keep-alive"
                )
            })
            .cloned()
            .collect();
        let body = self.archive.body(id);
        let head = method == "HEAD";
        Response {
            status: o.status,
            headers,
            head_len: head.then_some(body.len() as u64),
            body: if head { Bytes::new() } else { body }.into(),
            ..Default::default()
        }
    }
}

impl Handler for Replay {
    fn handle(&self, req: Request) -> ResponseFuture {
        let Some((id, how)) = self.find(&req.method, &req.host, &req.path, &req.headers) else {
            let msg = format!(
                "not in the archive: {} {}{}\n",
                req.method, req.host, req.path
            );
            let mut resp = Response::new(404, "text/plain", msg);
            resp.headers
                .push((matching::MATCH_HEADER.into(), "miss".into()));
            return Box::pin(async move { resp });
        };
        let mut resp = self.response_for(id, &req.method);
        if let Some(v) = how.header_value() {
            resp.headers.push((matching::MATCH_HEADER.into(), v.into()));
        }
        let o = &self.archive.objects[id];
        if o.kind == ObjectType::Document {
            if req.protocol != "http/1.1" {
                for c in self.pushes_for(id) {
                    let co = &self.archive.objects[c];
                    let Some(Url { path, .. }) = Url::parse(&co.url) else {
                        continue;
                    };
                    let mut r = self.response_for(c, "GET");
                    resp.pushes.push(Push {
                        path,
                        status: r.status,
                        body: r.body.take_full().unwrap_or_default(),
                        headers: r.headers,
                    });
                }
            }
            if self.opts.hint {
                let list: Vec<String> = self
                    .children
                    .get(&id)
                    .map(|cs| {
                        cs.iter()
                            .filter(|&&c| {
                                matches!(
                                    self.archive.objects[c].discovery,
                                    Discovery::Parsed { .. }
                                )
                            })
                            .map(|&c| {
                                format!(
                                    "{}; {}",
                                    self.archive.objects[c]
                                        .content_type
                                        .split(';')
                                        .next()
                                        .unwrap_or("")
                                        .trim(),
                                    self.archive.objects[c].url
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                if !list.is_empty() {
                    resp.headers
                        .push(("x-subresources".into(), list.join("; ")));
                }
            }
        }
        let think = if self.opts.think_time { o.think_ms } else { 0 }
            + self.recorded_think.get(o.id).copied().unwrap_or(0);
        Box::pin(async move {
            if think > 0 {
                tokio::time::sleep(Duration::from_millis(think as u64)).await;
            }
            resp
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use speedy_archive::synth::{synthesize, SynthOptions};

    #[test]
    fn strips_ports_from_hosts() {
        assert_eq!(bare_host("WWW.a.example:8443"), "www.a.example");
        assert_eq!(bare_host("[::1]:80"), "::1");
        assert_eq!(bare_host("a.example"), "a.example");
    }

    #[test]
    fn finds_every_archived_object_and_falls_back_on_query() {
        let a = Arc::new(synthesize(SynthOptions { pages: 2, seed: 5 }));
        let r = Replay::new(a.clone(), ReplayOptions::default());
        for o in &a.objects {
            let u = Url::parse(&o.url).unwrap();
            let (host, path) = (u.authority(), u.path.as_str());
            assert_eq!(r.lookup("GET", &format!("{host}:443"), path), Some(o.id));
            assert_eq!(
                r.lookup("GET", &host, &format!("{path}?cachebust=1")),
                Some(o.id)
            );
        }
        assert_eq!(r.lookup("GET", "nowhere.example", "/nothing"), None);
    }

    #[test]
    fn hosts_recorded_at_one_address_share_a_slot() {
        let mut a = synthesize(SynthOptions { pages: 1, seed: 5 });
        let r = Replay::new(Arc::new(a.clone()), ReplayOptions::default());
        let hosts = r.hosts();
        assert!(hosts.len() >= 3, "{hosts:?}");
        assert_eq!(r.host_slots(), (0..hosts.len()).collect::<Vec<_>>());
        // The first and third hosts recorded at one address, the second at another.
        let at = |ip: &str| speedy_archive::Recorded {
            addr: Some(format!("{ip}:443").parse().unwrap()),
            ..Default::default()
        };
        for o in a.objects.iter_mut() {
            let h = Url::parse(&o.url).unwrap().host_bare().to_string();
            if h == hosts[0] || h == hosts[2] {
                o.recorded = Some(at("192.0.2.7"));
            } else if h == hosts[1] {
                o.recorded = Some(at("192.0.2.8"));
            }
        }
        let r = Replay::new(Arc::new(a), ReplayOptions::default());
        let slots = r.host_slots();
        assert_eq!(&slots[..3], &[0, 1, 0]);
        let rest: Vec<usize> = slots[3..].to_vec();
        assert_eq!(rest, (2..hosts.len() - 1).collect::<Vec<_>>());
        // Each slot's recorded address, none for the hosts recorded nowhere.
        let addrs = r.slot_addrs();
        assert_eq!(addrs.len(), hosts.len() - 1);
        assert_eq!(addrs[0], Some("192.0.2.7".parse().unwrap()));
        assert_eq!(addrs[1], Some("192.0.2.8".parse().unwrap()));
        assert!(addrs[2..].iter().all(Option::is_none));
    }

    #[test]
    fn recorded_think_time_is_the_wait_beyond_the_hosts_quickest() {
        let mut a = synthesize(SynthOptions { pages: 1, seed: 5 });
        let host0 = Url::parse(&a.objects[0].url)
            .unwrap()
            .host_bare()
            .to_string();
        let mut of_host0 = Vec::new();
        for o in a.objects.iter_mut() {
            if Url::parse(&o.url).unwrap().host_bare() == host0 {
                of_host0.push(o.id);
                o.recorded = Some(speedy_archive::Recorded {
                    first_byte_ms: Some(40 + 10 * of_host0.len() as u32),
                    ..Default::default()
                });
            }
        }
        assert!(of_host0.len() >= 2, "{of_host0:?}");
        let think = recorded_think_ms(&a);
        for (k, id) in of_host0.iter().enumerate() {
            assert_eq!(think[*id], 10 * k as u32);
        }
        // Objects recorded without timings wait nothing more.
        assert_eq!(think.iter().filter(|t| **t > 0).count(), of_host0.len() - 1);
        // Only when asked.
        let off = Replay::new(Arc::new(a.clone()), ReplayOptions::default());
        assert!(off.recorded_think.is_empty());
        let on = Replay::new(
            Arc::new(a),
            ReplayOptions {
                recorded_think_time: true,
                ..Default::default()
            },
        );
        assert_eq!(on.recorded_think, think);
    }

    #[test]
    fn a_head_says_the_length_a_get_would_have_and_sends_no_body() {
        let a = Arc::new(synthesize(SynthOptions { pages: 1, seed: 2 }));
        let r = Replay::new(a.clone(), ReplayOptions::default());
        let id = a.pages[0].root;
        let get = r.response_for(id, "GET");
        let mut head = r.response_for(id, "HEAD");
        let len = get.body.len().expect("a known length");
        assert!(len > 0);
        assert_eq!(head.head_len, Some(len));
        assert_eq!(head.body.take_full().map(|b| b.len()), Some(0));
        assert_eq!(get.head_len, None);
    }

    #[test]
    fn pushes_same_origin_parsed_children_only() {
        let a = Arc::new(synthesize(SynthOptions { pages: 1, seed: 2 }));
        let r = Replay::new(
            a.clone(),
            ReplayOptions {
                push: PushPolicy::Subresources,
                ..Default::default()
            },
        );
        let root = a.pages[0].root;
        let pushed = r.pushes_for(root);
        assert!(!pushed.is_empty());
        for c in &pushed {
            assert!(r.same_origin(root, *c));
            assert!(
                matches!(a.objects[*c].discovery, Discovery::Parsed { parent, .. } if parent == root)
            );
        }
        let all = Replay::new(
            a.clone(),
            ReplayOptions {
                push: PushPolicy::All,
                ..Default::default()
            },
        )
        .pushes_for(root);
        assert!(all.len() >= pushed.len());
        let none = Replay::new(a, ReplayOptions::default()).pushes_for(root);
        assert!(none.is_empty());
    }
}
