//! Results written by speedy before the lab's typed contract (issue 36) still load and
//! report the same: `tests/fixtures/before-issue-36/` holds the `results.jsonl` of a
//! built-in `quick` run and of a reduced `whitepaper` run (`--runs 1 --pages 1`), made
//! by the build at ff8b9d1, with the tables of the report and the summary that build
//! printed for them (`speedy lab report DIR`, the HARs left out of the fixture, so the
//! waterfall section names them as missing in both). This build must print the same.

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
    assert!(got == want, "{name}: the report's tables changed:\n{got}");
    let want = std::fs::read_to_string(fixture.join("summary.txt")).unwrap();
    assert_eq!(
        summary_text(&stats).trim(),
        want.trim(),
        "{name}: the summary changed"
    );
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
