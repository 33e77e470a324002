//! The loader against headless Chromium: the agreement table of an experiment whose
//! variants come in pairs, one per client (`speedy lab validate`,
//! [`crate::validate::agreement`]); left out when the rows have no such pair.

use super::html::{self, table, Cell};
use super::Ctx;
use crate::validate::agreement::{agreement, CELL_BOUNDS, PAGE_BOUNDS};

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
        ],
        &rows,
    );
    let met = a.cells.iter().filter(|c| c.within_goal()).count();
    out.push_str(&html::p(&format!(
        "The loader's onLoad over headless Chromium's for the same pages, network and \
         protocol (each page's median over its runs; the cell's ratio is the geometric \
         mean over its pages). Above 1 the loader is slower than Chromium. The goal: every \
         cell within {:.2}-{:.2} and every page within {:.2}-{:.2}; {met} of {} cells meet \
         it.",
        CELL_BOUNDS.0,
        CELL_BOUNDS.1,
        PAGE_BOUNDS.0,
        PAGE_BOUNDS.1,
        a.cells.len()
    )));
    out
}
