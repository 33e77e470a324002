//! The loader against headless Chromium: the agreement table of an experiment whose
//! variants come in pairs, one per client (`speedy lab validate`,
//! [`crate::validate::agreement`]); left out when the rows have no such pair.

use super::html::{self, table, Cell};
use super::Ctx;
use crate::validate::agreement::{agreement, Agreement, Cell as Agreed, CELL_BOUNDS, PAGE_BOUNDS};

/// The section: one line per network × calibration × protocol.
pub fn section(cx: &mut Ctx) -> String {
    let a = agreement(cx.rows);
    if a.cells.is_empty() {
        return String::new();
    }
    let rows: Vec<(Vec<Cell>, bool)> = a
        .cells
        .iter()
        .map(|c| {
            (
                vec![
                    Cell::text(&c.network),
                    Cell::text(&c.calibration),
                    Cell::text(super::proto_name(c.protocol)),
                    Cell::num(c.pages.to_string()),
                    Cell::num(format!("{}/{}", c.loads.0, c.loads.1)),
                    Cell::num(format!("{:.2}", c.ratio)),
                    Cell::text(format!("{:.2} ({})", c.worst, c.worst_page)),
                    Cell::num(c.pages_outside.to_string()),
                    Cell::text(if c.within_goal() { "yes" } else { "no" }),
                    Cell::num(opens(c)),
                    Cell::num(kb_up(c)),
                ],
                false,
            )
        })
        .collect();
    let mut out = table(
        &[
            ("Network", true),
            ("Pages from", true),
            ("Protocol", true),
            ("Pages", false),
            ("Loads (loader/Chromium)", false),
            ("onLoad ratio", false),
            ("Worst page", true),
            ("Pages outside", false),
            ("Within goal", true),
            ("TCP opens / load (loader / Chromium)", false),
            ("KB up / load (loader / Chromium)", false),
        ],
        &rows,
    );
    out.push_str(&html::p(&format!(
        "The loader's onLoad over headless Chromium's for the same pages, network and \
         protocol (each page's median over its runs; the cell's ratio is the geometric \
         mean over its pages). Above 1 the loader is slower than Chromium. Beside it, what \
         each client put on the wire, a mean per load: the TCP connections it opened \
         (every connect in the client's namespace, raced and unused ones included) and the \
         kilobytes it sent through the link. {}",
        goal(&a)
    )));
    out
}

/// A pair of per-load means as `loader / Chromium` (`–` for a missing one).
fn both(v: (Option<f64>, Option<f64>), digits: usize) -> String {
    let one = |x: Option<f64>| x.map_or("–".to_string(), |x| format!("{x:.digits$}"));
    format!("{} / {}", one(v.0), one(v.1))
}

/// The cell's TCP opens per load, loader / Chromium.
fn opens(c: &Agreed) -> String {
    c.wire.map_or("–".into(), |w| both(w.tcp_opens, 1))
}

/// The cell's kilobytes client → server per load, loader / Chromium.
fn kb_up(c: &Agreed) -> String {
    let kb = |x: f64| Some(x / 1000.0);
    c.wire.map_or("–".into(), |w| {
        both((kb(w.bytes_up.0), kb(w.bytes_up.1)), 1)
    })
}

/// The goal and how many cells meet it.
fn goal(a: &Agreement) -> String {
    let met = a.cells.iter().filter(|c| c.within_goal()).count();
    format!(
        "The goal: every cell within {:.2}-{:.2} and every page within {:.2}-{:.2}; {met} of \
         {} cells meet it.",
        CELL_BOUNDS.0,
        CELL_BOUNDS.1,
        PAGE_BOUNDS.0,
        PAGE_BOUNDS.1,
        a.cells.len()
    )
}

/// The agreement table for the terminal: a line per cell, then the goal.
pub fn agreement_text(a: &Agreement) -> String {
    let lines: Vec<Vec<String>> = a
        .cells
        .iter()
        .map(|c| {
            vec![
                c.network.clone(),
                c.calibration.clone(),
                c.protocol.to_string(),
                c.pages.to_string(),
                format!("{}/{}", c.loads.0, c.loads.1),
                format!("{:.2}", c.ratio),
                format!("{:.2} ({})", c.worst, c.worst_page),
                c.pages_outside.to_string(),
                if c.within_goal() { "yes" } else { "no" }.into(),
                opens(c),
                kb_up(c),
            ]
        })
        .collect();
    let mut out = super::text_table(
        &[
            "network",
            "pages from",
            "protocol",
            "pages",
            "loads (loader/Chromium)",
            "onLoad ratio (geomean)",
            "worst page",
            "pages outside",
            "within goal",
            "TCP opens/load (L/C)",
            "KB up/load (L/C)",
        ],
        &[
            true, true, true, false, false, false, false, false, true, false, false,
        ],
        &lines,
    );
    out.push_str(&format!(
        "ratio = loader / Chromium onLoad, each page's median over its runs; L/C: the \
         loader's and Chromium's means per load. {}\n",
        goal(a)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::agreement_text;
    use crate::validate::agreement::agreement;

    #[test]
    fn the_terminal_table_has_a_line_per_cell_and_the_goal() {
        let row = |page: &str, variant: &str, client: &str, ms: f64| -> crate::results::Row {
            let (opens, up) = if client == "loader" {
                (6, 70_000)
            } else {
                (3, 50_000)
            };
            serde_json::from_value(serde_json::json!({
                "experiment": "v", "page": page, "network": "dsl", "network_desc": "d",
                "variant": variant, "baseline": client == "loader", "protocol": "h2",
                "tls": true, "client": client, "run": 0, "on_load_ms": ms,
                "on_content_load_ms": ms, "objects": 1, "failed_objects": 0,
                "bytes_down": 0, "bytes_up": up, "packets_down": 0, "packets_up": 0,
                "link_drops": 0, "connections": 1, "har": "h", "calibration": "web-2010",
                "client_tcp_opens": opens
            }))
            .unwrap()
        };
        let rows = vec![
            row("a", "h2", "loader", 1200.0),
            row("a", "h2-chromium", "chromium", 1000.0),
            row("b", "h2", "loader", 900.0),
            row("b", "h2-chromium", "chromium", 1000.0),
        ];
        let t = agreement_text(&agreement(&rows));
        assert!(t.contains("1.04") && t.contains("1.20 (a)"), "{t}");
        assert!(t.contains("1 of 1 cells meet it"), "{t}");
        assert!(t.contains("6.0 / 3.0") && t.contains("70.0 / 50.0"), "{t}");
    }
}
