//! How closely the loader's onLoad agrees with headless Chromium's, from the rows of an
//! experiment that loads the same pages with both clients (pairs of variants that differ
//! only in their client). Per network × pair (a calibration and a protocol): each page's
//! ratio is the loader's median onLoad over its runs over Chromium's, and the cell gives
//! the geometric mean of the pages' ratios, the page furthest from 1 and how many pages
//! fall outside [`PAGE_BOUNDS`]. The goal the lab holds itself to: every cell within
//! [`CELL_BOUNDS`], every page within [`PAGE_BOUNDS`] (issue 37).

use crate::experiment::Client;
use crate::results::Row;
use crate::stats::{geometric_mean, mean, median};
use serde::{Deserialize, Serialize};
use speedy_net::Protocol;
use std::collections::BTreeMap;

/// A cell's geometric-mean ratio should fall in this range.
pub const CELL_BOUNDS: (f64, f64) = (0.90, 1.10);
/// Every page's ratio should fall in this range.
pub const PAGE_BOUNDS: (f64, f64) = (0.80, 1.25);

/// The format version of [`Agreement`] (`validate.json`).
pub const AGREEMENT_VERSION: u32 = 3;

/// `validate.json`: the agreement of the loader with Chromium, cell by cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// The format version ([`AGREEMENT_VERSION`]; 1 was the fidelity check before it ran
    /// on the lab's runner, 2 had no [`Cell::wire`]).
    pub version: u32,
    /// The experiment the rows came from.
    pub experiment: String,
    /// One per network × pair, in the experiment's order.
    pub cells: Vec<Cell>,
}

/// One network × calibration × protocol.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// The network.
    pub network: String,
    /// The pages' calibration (`web-2010`, …, or `archive`).
    pub calibration: String,
    /// The protocol both clients spoke (`http/1.1`, `h2`, `h3`).
    #[serde(with = "speedy_net::text::by_name")]
    pub protocol: speedy_net::Protocol,
    /// The loader's variant and Chromium's.
    pub loader: String,
    /// Chromium's variant.
    pub chromium: String,
    /// Pages both clients loaded (with an onLoad).
    pub pages: usize,
    /// Loads behind the cell: the loader's and Chromium's.
    pub loads: (usize, usize),
    /// Geometric mean over the pages of loader / Chromium (median onLoads over runs).
    pub ratio: f64,
    /// The page whose ratio is furthest from 1 (by its logarithm), and that ratio.
    pub worst_page: String,
    /// The worst page's ratio.
    pub worst: f64,
    /// Pages whose ratio is outside [`PAGE_BOUNDS`].
    pub pages_outside: usize,
    /// Each page's ratio, by page name.
    pub per_page: BTreeMap<String, f64>,
    /// What each client's loads put on the wire (absent in files of version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<Wire>,
}

/// What a cell's loads did on the wire, each a mean per load as (loader, Chromium): the
/// first place to look when the two clients' onLoads disagree.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Wire {
    /// TCP connections the client opened (`client_tcp_opens`; `None` when the rows do
    /// not have it).
    pub tcp_opens: (Option<f64>, Option<f64>),
    /// Bytes through the link, client → server.
    pub bytes_up: (f64, f64),
    /// Bytes through the link, server → client.
    pub bytes_down: (f64, f64),
}

impl Cell {
    /// The cell meets the goal: its ratio within [`CELL_BOUNDS`] and every page within
    /// [`PAGE_BOUNDS`].
    pub fn within_goal(&self) -> bool {
        (CELL_BOUNDS.0..=CELL_BOUNDS.1).contains(&self.ratio) && self.pages_outside == 0
    }
}

/// The variant pairs of `rows`: (loader variant, Chromium variant) loading the same
/// pages (calibration) over the same protocol and encryption. A Chromium variant whose
/// `against` names a loader variant is paired with it; otherwise with the first loader
/// variant that matches. In the order of the Chromium variants' first rows.
pub fn pairs(rows: &[Row]) -> Vec<(String, String)> {
    let mut firsts: Vec<&Row> = Vec::new();
    for r in rows {
        if !firsts.iter().any(|f| f.variant == r.variant) {
            firsts.push(r);
        }
    }
    let same = |a: &Row, b: &Row| {
        a.protocol == b.protocol && a.tls == b.tls && a.calibration == b.calibration
    };
    // Lanes finish their loads in any order: the pairs go by calibration, then protocol
    // (HTTP/1.1, SPDY, h2, h3), then plain before TLS, whatever the rows' order.
    let rank = |r: &Row| {
        let p = match r.protocol {
            Protocol::Http1 => 0,
            Protocol::Spdy(_) => 1,
            Protocol::H2 => 2,
            Protocol::H3 => 3,
        };
        (r.calibration.clone(), p, r.tls)
    };
    firsts.sort_by_key(|r| rank(r));
    let loaders: Vec<&Row> = firsts
        .iter()
        .copied()
        .filter(|r| r.client == Client::Loader)
        .collect();
    let mut out = Vec::new();
    for c in firsts.iter().filter(|r| r.client == Client::Chromium) {
        let named = c
            .against
            .as_deref()
            .and_then(|a| loaders.iter().find(|l| l.variant == a && same(l, c)));
        if let Some(l) = named.or_else(|| loaders.iter().find(|l| same(l, c))) {
            out.push((l.variant.clone(), c.variant.clone()));
        }
    }
    out
}

/// The agreement cells of `rows` (none when no variant pair is there).
pub fn agreement(rows: &[Row]) -> Agreement {
    let mut networks: Vec<&str> = Vec::new();
    for r in rows {
        if !networks.contains(&r.network.as_str()) {
            networks.push(&r.network);
        }
    }
    let mut cells = Vec::new();
    for (loader, chromium) in pairs(rows) {
        for net in &networks {
            if let Some(c) = cell(rows, net, &loader, &chromium) {
                cells.push(c);
            }
        }
    }
    Agreement {
        version: AGREEMENT_VERSION,
        experiment: rows
            .first()
            .map(|r| r.experiment.clone())
            .unwrap_or_default(),
        cells,
    }
}

/// The loads of `variant` on `net` that reached onLoad: the loads a cell is made of.
fn loads_of<'a>(rows: &'a [Row], net: &'a str, variant: &'a str) -> impl Iterator<Item = &'a Row> {
    (rows.iter()).filter(move |r| r.network == net && r.variant == variant && r.on_load_ms > 0.0)
}

/// Each page's median onLoad of `variant` on `net` (loads that reached onLoad).
fn medians(rows: &[Row], net: &str, variant: &str) -> (BTreeMap<String, f64>, usize) {
    let mut by_page: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut loads = 0;
    for r in loads_of(rows, net, variant) {
        by_page
            .entry(r.page.clone())
            .or_default()
            .push(r.on_load_ms);
        loads += 1;
    }
    let m = by_page
        .into_iter()
        .filter_map(|(p, xs)| median(&xs).map(|m| (p, m)))
        .collect();
    (m, loads)
}

/// The mean per load of `f` over the loads of `variant` on `net` that reached onLoad (the
/// loads behind the medians); `None` when no such load has it.
fn per_load(
    rows: &[Row],
    net: &str,
    variant: &str,
    f: impl Fn(&Row) -> Option<f64>,
) -> Option<f64> {
    let xs: Vec<f64> = loads_of(rows, net, variant).filter_map(f).collect();
    mean(&xs)
}

/// The cell's [`Wire`] (`None` when a client has no load with an onLoad).
fn wire(rows: &[Row], net: &str, loader: &str, chromium: &str) -> Option<Wire> {
    let both = |f: &dyn Fn(&Row) -> Option<f64>| {
        (
            per_load(rows, net, loader, f),
            per_load(rows, net, chromium, f),
        )
    };
    let opens = both(&|r| r.client_tcp_opens.map(|n| n as f64));
    let up = both(&|r| Some(r.bytes_up as f64));
    let down = both(&|r| Some(r.bytes_down as f64));
    Some(Wire {
        tcp_opens: opens,
        bytes_up: (up.0?, up.1?),
        bytes_down: (down.0?, down.1?),
    })
}

fn cell(rows: &[Row], net: &str, loader: &str, chromium: &str) -> Option<Cell> {
    let (l, nl) = medians(rows, net, loader);
    let (c, nc) = medians(rows, net, chromium);
    let per_page: BTreeMap<String, f64> = l
        .iter()
        .filter_map(|(p, lm)| c.get(p).map(|cm| (p.clone(), lm / cm)))
        .collect();
    let ratios: Vec<f64> = per_page.values().copied().collect();
    let ratio = geometric_mean(&ratios)?;
    let (worst_page, worst) = per_page
        .iter()
        .max_by(|a, b| a.1.ln().abs().total_cmp(&b.1.ln().abs()))
        .map(|(p, r)| (p.clone(), *r))?;
    let first = rows
        .iter()
        .find(|r| r.network == net && r.variant == loader)?;
    Some(Cell {
        network: net.to_string(),
        calibration: first.calibration.clone(),
        protocol: first.protocol,
        loader: loader.to_string(),
        chromium: chromium.to_string(),
        pages: per_page.len(),
        loads: (nl, nc),
        ratio,
        worst_page,
        worst,
        pages_outside: ratios
            .iter()
            .filter(|r| !(PAGE_BOUNDS.0..=PAGE_BOUNDS.1).contains(*r))
            .count(),
        per_page,
        wire: wire(rows, net, loader, chromium),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(page: &str, variant: &str, client: &str, against: Option<&str>, ms: f64) -> Row {
        let up = if client == "loader" {
            1000
        } else {
            ms.max(0.0) as u64
        };
        serde_json::from_value(serde_json::json!({
            "experiment": "v", "page": page, "network": "dsl", "network_desc": "d",
            "variant": variant, "baseline": variant == "h2", "protocol": "h2",
            "tls": true, "client": client, "against": against, "run": 0,
            "on_load_ms": ms, "on_content_load_ms": ms, "objects": 1,
            "failed_objects": 0, "bytes_down": 0, "bytes_up": up, "packets_down": 0,
            "packets_up": 0, "link_drops": 0, "connections": 1, "har": "h",
            "calibration": "web-2010"
        }))
        .unwrap()
    }

    #[test]
    fn pairs_come_in_protocol_order_whatever_order_the_loads_ended_in() {
        let with = |variant: &str, client: &str, against: Option<&str>, protocol: &str| {
            let mut r = row("a", variant, client, against, 1000.0);
            r.protocol = Protocol::parse(protocol).unwrap();
            r
        };
        let rows = vec![
            with("h3-chromium", "chromium", Some("h3"), "h3"),
            with("h3", "loader", None, "h3"),
            with("h2", "loader", None, "h2"),
            with("http1-chromium", "chromium", Some("http1"), "http1"),
            with("h2-chromium", "chromium", Some("h2"), "h2"),
            with("http1", "loader", None, "http1"),
        ];
        let names: Vec<String> = pairs(&rows).into_iter().map(|(l, _)| l).collect();
        assert_eq!(names, ["http1", "h2", "h3"]);
    }

    #[test]
    fn pairs_by_against_and_conditions_and_ratios_are_medians_over_runs() {
        let mut rows = vec![
            row("a", "h2", "loader", None, 1000.0),
            row("a", "h2", "loader", None, 1200.0),
            row("a", "h2", "loader", None, 5000.0),
            row("a", "h2-chromium", "chromium", Some("h2"), 1000.0),
            row("b", "h2", "loader", None, 900.0),
            row("b", "h2-chromium", "chromium", Some("h2"), 1000.0),
        ];
        // A failed load (no onLoad) is left out of the medians.
        rows.push(row("b", "h2-chromium", "chromium", Some("h2"), -1.0));
        assert_eq!(pairs(&rows), vec![("h2".into(), "h2-chromium".into())]);
        let a = agreement(&rows);
        assert_eq!(a.cells.len(), 1);
        let c = &a.cells[0];
        // Page a: median 1200 / 1000 = 1.2; page b: 0.9; geometric mean sqrt(1.08).
        assert!((c.per_page["a"] - 1.2).abs() < 1e-9);
        assert!((c.ratio - 1.08f64.sqrt()).abs() < 1e-9, "{c:?}");
        assert_eq!((c.worst_page.as_str(), c.pages_outside), ("a", 0));
        assert_eq!(c.loads, (4, 2));
        // The wire: means over the same loads (Chromium's failed load left out), and no
        // TCP opens where the rows do not have them.
        let w = c.wire.expect("both clients have loads");
        assert_eq!(w.bytes_up, (1000.0, 1000.0), "{w:?}");
        assert_eq!(w.tcp_opens, (None, None));
        assert!(
            c.within_goal(),
            "1.04 is within the cell bounds, pages 1.2 and 0.9 too"
        );
        let mut far = c.clone();
        far.pages_outside = 1;
        assert!(!far.within_goal());
        // validate.json reads back (serde_json's float parsing may differ in the last bit).
        let back: Agreement = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        let b = &back.cells[0];
        assert!((b.ratio - c.ratio).abs() < 1e-12);
        assert_eq!(
            (&b.per_page, &b.worst_page, b.loads),
            (&c.per_page, &c.worst_page, c.loads)
        );
    }
}
