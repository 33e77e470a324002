//! Recordings that are a bag of exchanges, without a page list, timings or a meaningful
//! order (Mahimahi's folder, WPR's host → URL map): their records are grouped into pages
//! by what references what, then each page is built by the rules every format shares.
//!
//! A page root is a record no other record references that is an HTML document answered
//! 2xx or 3xx, or a redirect whose chain ends at one (a top-level navigation). Each root
//! (in input order) takes, breadth first, what it references — body references as
//! `scan` finds them and redirect targets — and what those reference, one record per URL
//! per page, each record on one page only. Documents reached by nothing (a cycle of
//! frames) become roots next. What is left (requests a script assembled, later copies of
//! a URL) joins the page that has the same URL, else the first page whose root has its
//! host, else the first page.

use super::pages::build_page;
use super::scan::scan;
use super::urls::{host_of, normalize};
use super::{finish, ImportError, Imported, Rec};
use crate::model::{Archive, ObjectType};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Builds the archive of a recording's records (in input order); `source` describes the
/// file; `warnings` holds those of reading it.
pub(super) fn import_recording(
    path: &Path,
    source: &str,
    recs: Vec<Rec>,
    mut warnings: Vec<String>,
) -> Result<Imported, ImportError> {
    let mut sources = Default::default();
    let mut a = Archive::new(source);
    for g in group_pages(recs) {
        let first = g[0].label.clone();
        let idx = a.pages.len();
        match build_page(&mut a, idx, None, g, &mut warnings, &mut sources) {
            Some(p) => a.pages.push(p),
            None => warnings.push(format!(
                "{first}: no HTML document or redirect among the records left; skipped"
            )),
        }
    }
    finish(&mut a, path)?;
    Ok(Imported {
        archive: a,
        warnings,
        sources,
    })
}

/// What the grouping knows of the records: their keys (normalized URLs), the records of
/// each key, and which records are placed on a page.
struct Graph<'a> {
    recs: &'a [Rec],
    keys: Vec<String>,
    by_key: HashMap<String, Vec<usize>>,
    placed: Vec<bool>,
}

impl Graph<'_> {
    /// What record `i` references (normalized URLs, in body order, then its redirect);
    /// `doc` is the page's document, the base of script strings.
    fn refs(&self, i: usize, doc: &str) -> Vec<String> {
        let r = &self.recs[i];
        let mut v: Vec<String> = scan(r, doc).into_iter().map(|x| x.url).collect();
        if let Some(t) = &r.redirect {
            v.push(normalize(t));
        }
        v
    }

    /// An HTML document answered 2xx or 3xx.
    fn is_document(&self, i: usize) -> bool {
        let r = &self.recs[i];
        (r.is_html() || r.kind == ObjectType::Document) && (200..400).contains(&r.status)
    }

    /// A document, or a redirect whose chain (up to 8 hops) ends at one.
    fn root_like(&self, i: usize) -> bool {
        let mut cur = i;
        for _ in 0..8 {
            if self.is_document(cur) {
                return true;
            }
            let next = self.recs[cur]
                .redirect
                .as_deref()
                .filter(|_| (300..400).contains(&self.recs[cur].status))
                .and_then(|t| self.by_key.get(&normalize(t)))
                .and_then(|v| v.first().copied());
            match next {
                Some(n) if n != cur => cur = n,
                _ => return false,
            }
        }
        false
    }

    /// The page of root `root`: it and, breadth first, the first unplaced record of each
    /// URL it reaches.
    fn walk(&mut self, root: usize) -> Vec<usize> {
        let doc = self.recs[root].url.clone();
        self.placed[root] = true;
        let mut seen: HashSet<String> = HashSet::from([self.keys[root].clone()]);
        let mut order = vec![root];
        let mut k = 0;
        while k < order.len() {
            for u in self.refs(order[k], &doc) {
                if !seen.insert(u.clone()) {
                    continue;
                }
                let next = self
                    .by_key
                    .get(&u)
                    .and_then(|v| v.iter().copied().find(|&j| !self.placed[j]));
                if let Some(j) = next {
                    self.placed[j] = true;
                    order.push(j);
                }
            }
            k += 1;
        }
        order
    }
}

/// Splits a recording's records into pages (docs/archive.md; the module comment says how).
pub(super) fn group_pages(recs: Vec<Rec>) -> Vec<Vec<Rec>> {
    let keys: Vec<String> = recs.iter().map(|r| normalize(&r.url)).collect();
    let mut by_key: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, k) in keys.iter().enumerate() {
        by_key.entry(k.clone()).or_default().push(i);
    }
    let n = recs.len();
    let mut g = Graph {
        recs: &recs,
        keys,
        by_key,
        placed: vec![false; n],
    };
    let mut referenced: HashSet<String> = HashSet::new();
    for (i, r) in recs.iter().enumerate() {
        let own = &g.keys[i];
        referenced.extend(g.refs(i, &r.url).into_iter().filter(|u| u != own));
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let first_roots: Vec<usize> = (0..n)
        .filter(|&i| g.root_like(i) && !referenced.contains(&g.keys[i]))
        .collect();
    for i in first_roots {
        if !g.placed[i] {
            groups.push(g.walk(i));
        }
    }
    // Documents nothing reached (frames that reference each other), if their URL is on
    // no page yet.
    let mut on_a_page: HashSet<String> = groups
        .iter()
        .flatten()
        .map(|&i| g.keys[i].clone())
        .collect();
    for i in 0..n {
        if !g.placed[i] && g.is_document(i) && !on_a_page.contains(&g.keys[i]) {
            let page = g.walk(i);
            on_a_page.extend(page.iter().map(|&j| g.keys[j].clone()));
            groups.push(page);
        }
    }
    groups.sort_by_key(|p| p[0]);
    for i in 0..n {
        if g.placed[i] {
            continue;
        }
        let host = host_of(&recs[i].url);
        let home = groups
            .iter()
            .position(|p| p.iter().any(|&j| g.keys[j] == g.keys[i]))
            .or_else(|| groups.iter().position(|p| host_of(&recs[p[0]].url) == host));
        match home {
            Some(p) => groups[p].push(i),
            None if groups.is_empty() => groups.push(vec![i]),
            None => groups[0].push(i),
        }
    }
    let mut slots: Vec<Option<Rec>> = recs.into_iter().map(Some).collect();
    groups
        .into_iter()
        .map(|p| p.into_iter().filter_map(|i| slots[i].take()).collect())
        .collect()
}
