//! The summary as plain text for a terminal (what `speedy lab` prints at the end), and
//! the aligned text table it and `speedy lab compare` are drawn with.

use super::sections::signed_pct;
use super::svg;
use crate::stats::{Change, Stats};

/// An aligned plain-text table: `header`, then `lines`; a column is left aligned where
/// `left` says so, right aligned otherwise; two spaces between columns, no trailing space.
pub fn text_table(header: &[&str], left: &[bool], lines: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            lines
                .iter()
                .map(|l| l[i].chars().count())
                .chain(std::iter::once(header[i].chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let fmt_line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = " ".repeat(widths[i] - c.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            if left[i] {
                s.push_str(c);
                s.push_str(&pad);
            } else {
                s.push_str(&pad);
                s.push_str(c);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = fmt_line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    for l in lines {
        out.push_str(&fmt_line(l));
    }
    out
}

/// `+3.9% (−2.0 to +9.8)`: a change with its interval.
pub(crate) fn change_with_ci(c: &Change) -> String {
    format!(
        "{} ({} to {})",
        signed_pct(c.pct),
        signed_pct(c.ci.low).trim_end_matches('%'),
        signed_pct(c.ci.high)
    )
}

/// The summary as plain text for a terminal: one line per main network × variant
/// (pages, loads, mean onLoad, speedup against the baseline and mean change, each with
/// its 95% interval, and the verdict the speedup's interval allows: faster, slower or no
/// detectable difference), then how to read it. The numbers are those of the report's
/// Summary table (the same [`Stats`]). A variant encrypted against a plain baseline (or
/// the reverse) is marked `†` and said under the table.
pub fn summary_text(stats: &Stats) -> String {
    let header = [
        "network",
        "variant",
        "pages",
        "loads",
        "mean onLoad (ms)",
        "speedup (95% CI)",
        "against",
        "mean change (95% CI)",
        "verdict",
    ];
    let left = [true, true, false, false, false, false, true, false, true];
    let mut lines: Vec<Vec<String>> = Vec::new();
    let mut any_disagree = false;
    let mut unequal: Vec<(String, String)> = Vec::new();
    let main = stats.main_networks();
    for net in &main {
        let mut first = true;
        for v in &stats.variants {
            let Some(c) = stats.network_cell(net, &v.name) else {
                continue;
            };
            let dis = stats.disagrees(net, &v.name);
            any_disagree |= dis;
            let change = stats.mean_change_ci(net, &v.name).map_or("–".into(), |m| {
                format!("{}{}", change_with_ci(&m), if dis { " ⚠" } else { "" })
            });
            let against = match c.baseline.as_deref().and_then(|b| stats.variant(b)) {
                Some(b) if b.encrypted() != v.encrypted() => {
                    if !unequal.iter().any(|(x, _)| x == &v.name) {
                        unequal.push((v.name.clone(), b.name.clone()));
                    }
                    format!("{} †", b.name)
                }
                Some(b) => b.name.clone(),
                None => "–".into(),
            };
            lines.push(vec![
                if first { net.clone() } else { String::new() },
                match v.client {
                    crate::experiment::Client::Loader => v.name.clone(),
                    crate::experiment::Client::Chromium => format!("{} (Chromium)", v.name),
                },
                c.pages.to_string(),
                c.summary.n.to_string(),
                svg::ms(c.summary.mean),
                match &c.speedup {
                    Some(s) => format!("{:.2}× ({:.2}–{:.2})", s.speedup, s.ci.low, s.ci.high),
                    None if v.baseline && c.baseline.is_none() => "baseline".into(),
                    None => "–".into(),
                },
                against,
                change,
                match &c.speedup {
                    // One load a side: nothing to resample, no interval to read.
                    Some(_) if c.summary.n < 2 => "too few loads to tell".to_string(),
                    Some(s) => s.verdict().text().to_string(),
                    None => String::new(),
                },
            ]);
            first = false;
        }
    }
    if lines.is_empty() {
        return "summary: no load has an onLoad time\n".into();
    }
    let mut out = text_table(&header, &left, &lines);
    let sweep_nets = stats.networks.len() - main.len();
    if sweep_nets > 0 {
        out.push_str(&format!(
            "(+{sweep_nets} sweep network{}: see the report's Sweeps section)\n",
            if sweep_nets == 1 { "" } else { "s" }
        ));
    }
    out.push_str(&wrap(
        "speedup: per-page ratio, geometric mean over pages (above 1× is faster); \
         mean change: the average onLoad against the baseline's (minus is faster); \
         95% bootstrap intervals over pages and runs; verdict: faster or slower when the \
         speedup's interval excludes 1×, else no detectable difference.",
    ));
    for (v, b) in &unequal {
        out.push_str(&wrap(&format!(
            "† {v} and its baseline {b} differ in encryption (TLS or QUIC against plain TCP): \
             the speedup includes the cost of the handshakes and encryption."
        )));
    }
    if any_disagree {
        out.push_str(&wrap(
            "⚠ speedup and mean change point opposite ways: most pages moved one way, \
             the slowest pages the other (see the report's Summary).",
        ));
    }
    out
}

/// Text wrapped at word boundaries to lines of at most [`WRAP`] characters (a longer
/// word stays whole), each ending in a newline.
pub(crate) fn wrap(text: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > WRAP {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Width of the summary's prose lines, characters.
const WRAP: usize = 100;
