//! Results written by speedy before the lab's typed contract (issue 36) still load and
//! report the same: `tests/fixtures/before-issue-36/` holds the `results.jsonl` of a
//! built-in `quick` run and of a reduced `whitepaper` run (`--runs 1 --pages 1`), made
//! by the build at ff8b9d1, with the tables of the report and the summary that build
//! printed for them (`speedy lab report DIR`, the HARs left out of the fixture, so the
//! waterfall section names them as missing in both). This build must print the same
//! numbers: every number of those tables and of that summary, as many times as there
//! (the layout may change: Table 1 was drawn narrower and the summary gained intervals
//! after that build, so the check is on the numbers, not the markup).

use speedy_lab::report::{summary_text, write_report};
use std::path::Path;

/// The `<table>` elements of a report, in order, one per line group.
fn tables(html: &str) -> String {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<table") {
        let end = rest[start..].find("</table>").expect("a table ends") + start + 8;
        out.push(&rest[start..end]);
        rest = &rest[end..];
    }
    out.join("\n") + "\n"
}

/// The numbers of `text` (digits with their decimal point, sign and unit: `2.2%`,
/// `1.02×`, `−3.9%`), in order.
fn numbers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let starts = c.is_ascii_digit()
            || (matches!(c, '−' | '-' | '+')
                && cur.is_empty()
                && chars.peek().is_some_and(|d| d.is_ascii_digit()));
        if starts || (!cur.is_empty() && (c.is_ascii_digit() || c == '.')) {
            cur.push(c);
            continue;
        }
        if !cur.is_empty() {
            if matches!(c, '%' | '×') {
                cur.push(c);
            }
            out.push(std::mem::take(&mut cur).trim_end_matches('.').to_string());
        }
    }
    if !cur.is_empty() {
        out.push(cur.trim_end_matches('.').to_string());
    }
    out
}

/// The numbers of `want` that `got` lacks, counting repeats.
fn missing_numbers(want: &str, got: &str) -> Vec<String> {
    let mut have = numbers(got);
    let mut lost = Vec::new();
    for n in numbers(want) {
        match have.iter().position(|h| *h == n) {
            Some(i) => {
                have.swap_remove(i);
            }
            None => lost.push(n),
        }
    }
    lost
}

#[test]
fn numbers_are_read_with_their_sign_and_unit() {
    assert_eq!(
        numbers("a 2.2% b −3.9% c 1.02× d [0.97 – 1.08] 2177."),
        ["2.2%", "−3.9%", "1.02×", "0.97", "1.08", "2177"]
    );
    assert_eq!(missing_numbers("1 2 2 3%", "3% 2 1"), ["2"]);
}

fn same_report_as_before(name: &str) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/before-issue-36")
        .join(name);
    let dir =
        std::env::temp_dir().join(format!("speedy-old-results-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let results = dir.join("results.jsonl");
    std::fs::copy(fixture.join("results.jsonl"), &results).unwrap();
    let html = dir.join("report.html");
    let stats = write_report(&results, &html).unwrap_or_else(|e| panic!("{name}: {e}"));
    let got = tables(&std::fs::read_to_string(&html).unwrap());
    let want = std::fs::read_to_string(fixture.join("tables.html")).unwrap();
    assert!(!want.trim().is_empty(), "{name}: the fixture has tables");
    let lost = missing_numbers(&want, &got);
    assert!(
        lost.is_empty(),
        "{name}: the report's tables lost {lost:?}:\n{got}"
    );
    let want = std::fs::read_to_string(fixture.join("summary.txt")).unwrap();
    let got = summary_text(&stats);
    let lost = missing_numbers(&want, &got);
    assert!(lost.is_empty(), "{name}: the summary lost {lost:?}:\n{got}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_quick_run_from_before_reports_the_same_tables() {
    same_report_as_before("quick");
}

#[test]
fn a_reduced_whitepaper_run_from_before_reports_the_same_tables() {
    same_report_as_before("whitepaper-reduced");
}
