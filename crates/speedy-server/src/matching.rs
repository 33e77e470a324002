//! Which recorded object answers a request, as Web Page Replay matches (the rules are
//! described in `../shared/reference/archive-formats.md` and `docs/archive.md`):
//!
//! 1. **Exact**: same method, host and path with query; when several records share the
//!    URL, the one with the most request headers equal to the request's (the first of
//!    equals).
//! 2. **Query**: same method, host and path, the query differing: the record whose query
//!    parameters match best, by 2·M / T (M parameters equal, T the parameters of both
//!    together); the first of equals. A cache-busting parameter, or a script that picks
//!    another URL per visit, lands here.
//! 3. **Other host**: same method, path and query on any host (a page replayed under
//!    other host names).
//!
//! Hosts are compared without a port. A request none of these finds is a miss. The
//! replay server says how each response was found ([`MATCH_HEADER`]), so a load's HAR,
//! the loader's or Chromium's, counts its fuzzy matches and misses without asking the
//! server.

use spdy::url::Url;
use spdy::Headers;
use speedy_archive::Archive;
use std::collections::HashMap;

/// The response header naming a match that was not exact (`query`, `other-host`) or a
/// miss (`miss`, on the 404). Exact matches do not carry it: a replay that finds every
/// object sends the recorded headers and nothing else.
pub const MATCH_HEADER: &str = "x-speedy-replay";

/// How a request found its object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Match {
    /// The same URL and method.
    Exact,
    /// The same host and path, another query.
    Query,
    /// The same path and query on another host.
    OtherHost,
}

impl Match {
    /// The [`MATCH_HEADER`] value, `None` for an exact match.
    pub fn header_value(self) -> Option<&'static str> {
        match self {
            Match::Exact => None,
            Match::Query => Some("query"),
            Match::OtherHost => Some("other-host"),
        }
    }
}

/// The archive's objects indexed for matching.
#[derive(Debug, Default)]
pub struct Matcher {
    /// (host, path without query) → objects, in archive order.
    by_path: HashMap<(String, String), Vec<usize>>,
    /// (method, path with query) → the first object, any host.
    any_host: HashMap<(String, String), usize>,
    /// Each object's method and path with query.
    keys: Vec<(String, String)>,
}

/// Path and query split at the first `?`.
fn split_query(pq: &str) -> (&str, &str) {
    pq.split_once('?').unwrap_or((pq, ""))
}

/// 2·M / T over the `&`-separated parameters of two queries (multisets, compared as
/// written). 1 when both are empty.
pub fn query_ratio(a: &str, b: &str) -> f64 {
    let params = |q: &str| -> Vec<String> {
        q.split('&')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect()
    };
    let (pa, mut pb) = (params(a), params(b));
    let total = pa.len() + pb.len();
    if total == 0 {
        return 1.0;
    }
    let mut equal = 0;
    for p in &pa {
        if let Some(i) = pb.iter().position(|q| q == p) {
            pb.swap_remove(i);
            equal += 1;
        }
    }
    2.0 * equal as f64 / total as f64
}

impl Matcher {
    /// Indexes every object of `archive` whose URL parses.
    pub fn new(archive: &Archive) -> Matcher {
        let mut m = Matcher::default();
        for o in &archive.objects {
            let Some(u) = Url::parse(&o.url) else {
                m.keys.push((o.method.clone(), String::new()));
                continue;
            };
            let pq = u.path.clone();
            let path = split_query(&pq).0.to_string();
            m.by_path
                .entry((u.host_bare().to_string(), path))
                .or_default()
                .push(o.id);
            m.any_host
                .entry((o.method.clone(), pq.clone()))
                .or_insert(o.id);
            m.keys.push((o.method.clone(), pq));
        }
        m
    }

    /// The object that answers `method host pq` with `headers`, and how it was found.
    /// `host` is bare (no port, lower case).
    pub fn find(
        &self,
        archive: &Archive,
        method: &str,
        host: &str,
        pq: &str,
        headers: &Headers,
    ) -> Option<(usize, Match)> {
        let (path, query) = split_query(pq);
        let same_path = self
            .by_path
            .get(&(host.to_string(), path.to_string()))
            .map(Vec::as_slice)
            .unwrap_or_default();
        let same_method = || same_path.iter().filter(|&&id| self.keys[id].0 == method);
        // The first recorded wins among equals: only a strictly better one replaces it.
        let mut exact: Option<(usize, usize)> = None;
        for &id in same_method().filter(|&&id| self.keys[id].1 == pq) {
            let equal = equal_headers(&archive.objects[id].request_headers, headers);
            if exact.is_none_or(|(_, e)| equal > e) {
                exact = Some((id, equal));
            }
        }
        if let Some((id, _)) = exact {
            return Some((id, Match::Exact));
        }
        let mut best: Option<(usize, f64)> = None;
        for &id in same_method() {
            let r = query_ratio(query, split_query(&self.keys[id].1).1);
            if best.is_none_or(|(_, b)| r > b) {
                best = Some((id, r));
            }
        }
        if let Some((id, _)) = best {
            return Some((id, Match::Query));
        }
        self.any_host
            .get(&(method.to_string(), pq.to_string()))
            .map(|&id| (id, Match::OtherHost))
    }
}

/// How many recorded request headers the request carries with the same value.
fn equal_headers(recorded: &[(String, String)], req: &Headers) -> usize {
    recorded
        .iter()
        .filter(|(n, v)| req.get(n) == Some(v.as_bytes()))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use speedy_archive::{BodySource, Discovery, Object, ObjectType};

    fn object(url: &str, headers: &[(&str, &str)]) -> Object {
        Object {
            id: 0,
            url: url.into(),
            method: "GET".into(),
            status: 200,
            request_headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            response_headers: vec![],
            body: BodySource::Synthetic { size: 1 },
            content_type: "text/plain".into(),
            content_encoding: None,
            think_ms: 0,
            kind: ObjectType::Other,
            exec_ms: None,
            priority: None,
            discovery: Discovery::Root,
            recorded: None,
        }
    }

    fn archive(objects: Vec<Object>) -> Archive {
        let mut a = Archive::new("test");
        for o in objects {
            a.add_object(o, None);
        }
        a
    }

    #[test]
    fn query_ratio_counts_equal_parameters_of_both() {
        assert_eq!(query_ratio("", ""), 1.0);
        assert_eq!(query_ratio("a=1&b=2", "b=2&a=1"), 1.0);
        assert_eq!(query_ratio("a=1&t=5", "a=1&t=6"), 0.5);
        assert_eq!(query_ratio("a=1", ""), 0.0);
        assert_eq!(query_ratio("a=1&a=1", "a=1"), 2.0 / 3.0);
    }

    #[test]
    fn exact_first_then_the_best_query_then_another_host() {
        let a = archive(vec![
            object("https://a.test/x?v=1&t=100", &[]),
            object("https://a.test/x?v=2&t=100", &[]),
            object("https://a.test/y?k=1", &[("accept", "text/css")]),
            object("https://a.test/y?k=1", &[("accept", "image/png")]),
            object("https://b.test/z?q", &[]),
        ]);
        let m = Matcher::new(&a);
        let none = Headers::new();
        let find = |host: &str, pq: &str, h: &Headers| m.find(&a, "GET", host, pq, h);
        assert_eq!(
            find("a.test", "/x?v=2&t=100", &none),
            Some((1, Match::Exact))
        );
        // A cache-busting t: the record sharing v wins.
        assert_eq!(
            find("a.test", "/x?v=2&t=999", &none),
            Some((1, Match::Query))
        );
        assert_eq!(
            find("a.test", "/x?v=1&t=999", &none),
            Some((0, Match::Query))
        );
        // No parameter in common: the first record of the path.
        assert_eq!(find("a.test", "/x", &none), Some((0, Match::Query)));
        // Two records of one URL: the one whose request headers the request has.
        let png = Headers::from_pairs([("accept", "image/png")]);
        assert_eq!(find("a.test", "/y?k=1", &png), Some((3, Match::Exact)));
        assert_eq!(find("a.test", "/y?k=1", &none), Some((2, Match::Exact)));
        assert_eq!(find("c.test", "/z?q", &none), Some((4, Match::OtherHost)));
        assert_eq!(find("a.test", "/nothing", &none), None);
        assert_eq!(m.find(&a, "POST", "a.test", "/x?v=1&t=100", &none), None);
        assert_eq!(Match::Query.header_value(), Some("query"));
        assert_eq!(Match::Exact.header_value(), None);
    }
}
