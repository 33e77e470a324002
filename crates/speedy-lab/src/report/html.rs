//! The HTML around the charts: the page skeleton with its inline style sheet, tables,
//! figures with captions.

use super::svg::esc;

/// The inline style sheet.
const CSS: &str = r#"
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  color: #1d1d1d; background: #fff; margin: 0; line-height: 1.45; font-size: 15px; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 28px 60px; }
h1 { font-size: 26px; margin: 8px 0 4px; }
h2 { font-size: 20px; margin: 40px 0 8px; padding-top: 10px; border-top: 2px solid #e4e4e4; }
h3 { font-size: 16px; margin: 24px 0 6px; }
.sub { color: #555; margin: 0 0 12px; }
nav.toc { background: #f6f7f8; border: 1px solid #e4e4e4; border-radius: 6px;
  padding: 8px 14px; margin: 14px 0; font-size: 14px; }
nav.toc a { margin-right: 14px; white-space: nowrap; color: #0b5394; }
table { border-collapse: collapse; margin: 8px 0 6px; font-size: 13.5px; }
div.tw { overflow-x: auto; max-width: 100%; }
th, td { padding: 4px 9px; border-bottom: 1px solid #e6e6e6; text-align: right;
  vertical-align: top; }
th { background: #f3f4f5; font-weight: 600; border-bottom: 2px solid #d5d5d5; }
td.l, th.l { text-align: left; }
td.l { white-space: nowrap; }
tr.grp td { border-top: 2px solid #d5d5d5; }
td .ci { color: #666; font-size: 12px; white-space: nowrap; }
td.good { color: #00603f; font-weight: 600; }
td.bad { color: #a03000; font-weight: 600; }
p.guide { background: #f3f7fb; border-left: 3px solid #0b5394; padding: 6px 10px;
  margin: 8px 0 6px; font-size: 13.5px; }
a.har { color: #0b5394; font-weight: 400; font-size: 13px; }
.warn { color: #8a5a00; font-size: 12px; font-weight: 600; white-space: nowrap; cursor: help; }
.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 2px;
  margin-right: 6px; vertical-align: -1px; }
figure { margin: 14px 0 22px; }
figure svg { max-width: 100%; height: auto; display: block; }
figcaption, p.cap { color: #444; font-size: 13px; margin: 4px 0 0; max-width: 1000px; }
p.nodata { color: #7a4a00; background: #fff7e6; border: 1px solid #f0d9a8;
  padding: 8px 12px; border-radius: 4px; font-size: 14px; }
details { margin: 8px 0; }
details > summary { cursor: pointer; font-weight: 600; padding: 4px 0; }
.note { color: #444; font-size: 14px; }
ul.notes li, ul.limits li { margin: 3px 0; }
code { font-size: 13px; background: #f3f3f3; padding: 0 3px; border-radius: 3px; }
.fixture { background: #fdecea; border: 1px solid #f1b8b0; color: #7a1d10; padding: 8px 12px;
  border-radius: 4px; font-weight: 600; }
"#;

/// The whole page.
pub fn page(
    title: &str,
    subtitle: &str,
    banner: Option<&str>,
    toc: &[(String, String)],
    body: &str,
) -> String {
    let mut nav = String::new();
    for (id, name) in toc {
        nav.push_str(&format!(r##"<a href="#{}">{}</a> "##, esc(id), esc(name)));
    }
    let banner = banner
        .map(|b| format!(r#"<p class="fixture">{}</p>"#, esc(b)))
        .unwrap_or_default();
    format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{t}</title>
<style>{CSS}</style>
</head>
<body>
<main>
<h1>{t}</h1>
<p class="sub">{s}</p>
{banner}
<nav class="toc">{nav}</nav>
{body}
</main>
</body>
</html>
"#,
        t = esc(title),
        s = esc(subtitle),
    )
}

/// A section heading with an anchor.
pub fn h2(id: &str, title: &str) -> String {
    format!(r#"<h2 id="{}">{}</h2>"#, esc(id), esc(title))
}

/// A sub-heading.
pub fn h3(title: &str) -> String {
    format!("<h3>{}</h3>", esc(title))
}

/// A paragraph of (escaped) text.
pub fn p(text: &str) -> String {
    format!(r#"<p class="note">{}</p>"#, esc(text))
}

/// A figure: the chart (SVG or a no-data notice) with its caption beneath.
pub fn figure(chart: &str, caption: &str) -> String {
    format!(
        "<figure>{chart}<figcaption>{}</figcaption></figure>",
        esc(caption)
    )
}

/// A table cell: its HTML content and classes.
#[derive(Clone, Debug, Default)]
pub struct Cell {
    /// Inner HTML (escaped by the caller).
    pub html: String,
    /// CSS classes.
    pub class: &'static str,
}

impl Cell {
    /// A cell of plain text, right aligned.
    pub fn num(s: impl AsRef<str>) -> Cell {
        Cell {
            html: esc(s.as_ref()),
            class: "",
        }
    }

    /// A cell of plain text, left aligned.
    pub fn text(s: impl AsRef<str>) -> Cell {
        Cell {
            html: esc(s.as_ref()),
            class: "l",
        }
    }

    /// A cell of raw HTML.
    pub fn raw(html: String, class: &'static str) -> Cell {
        Cell { html, class }
    }
}

/// A table with a header row; `group_starts` marks rows that start a new group. The
/// tables are drawn to fit a laptop's window (1,300 pixels); one that would not scrolls
/// within its own box rather than past the page's edge.
pub fn table(header: &[(&str, bool)], rows: &[(Vec<Cell>, bool)]) -> String {
    let mut o = String::from(r#"<div class="tw"><table><thead><tr>"#);
    for (h, left) in header {
        o.push_str(&format!(
            "<th{}>{}</th>",
            if *left { r#" class="l""# } else { "" },
            esc(h)
        ));
    }
    o.push_str("</tr></thead><tbody>");
    for (cells, group_start) in rows {
        o.push_str(if *group_start {
            r#"<tr class="grp">"#
        } else {
            "<tr>"
        });
        for c in cells {
            if c.class.is_empty() {
                o.push_str(&format!("<td>{}</td>", c.html));
            } else {
                o.push_str(&format!(r#"<td class="{}">{}</td>"#, c.class, c.html));
            }
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>");
    o
}

/// A value with its CI in small print beneath: `1234` / `[1200, 1270]`.
pub fn with_ci(v: &str, lo: &str, hi: &str) -> String {
    format!(
        r#"{}<br><span class="ci">[{} – {}]</span>"#,
        esc(v),
        esc(lo),
        esc(hi)
    )
}

/// A colour swatch followed by a name.
///
/// A label's parenthesis (`spdy-single (SPDY/3.1, TLS)`) goes on a line of its own in
/// small print, so that tables of long variant names still fit a laptop's window.
pub fn swatch(colour: &str, name: &str) -> String {
    let (head, tail) = match name.find(" (") {
        Some(i) => (&name[..i], Some(&name[i + 1..])),
        None => (name, None),
    };
    format!(
        r#"<span class="swatch" style="background:{colour}"></span>{}{}"#,
        esc(head),
        tail.map_or(String::new(), |t| format!(
            r#"<br><span class="ci">{}</span>"#,
            esc(t)
        ))
    )
}
