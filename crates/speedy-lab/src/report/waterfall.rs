//! The waterfall of one load: one bar per object from its start offset, phases
//! coloured, URL labels, onContentLoad and onLoad lines; the time axis on top, repeated
//! under the last row of a tall waterfall ([`TALL_WATERFALL_ROWS`]).

use super::charts::{truncate, WIDTH};
use super::har::{Load, Object};
use super::svg::{self, legend, ticks, Anchor, Scale, Style, Svg, PHASE_COLOURS, PHASE_NAMES};

const MR: f64 = 24.0;
const LABEL_W: f64 = 300.0;
/// Colour of the onContentLoad line.
pub const DCL_COLOUR: &str = "#009E73";
/// Colour of the onLoad line.
pub const LOAD_COLOUR: &str = "#D55E00";
/// A waterfall drawing more rows than this repeats its time axis (ticks and labels)
/// under the last row: at 15 px a row, 25 rows fill most of a laptop screen, so the
/// top axis has scrolled out of sight by the time the reader reaches the last objects.
pub const TALL_WATERFALL_ROWS: usize = 25;
const AXIS_TITLE: &str = "ms from navigation start →";

/// Row height, px.
const ROW_H: f64 = 15.0;

/// Draws a waterfall. `x_max` fixes the time axis (ms) so that the waterfalls of one
/// page share a scale; at most `max_objects` rows are drawn (the rest is counted).
pub fn waterfall(label: &str, load: &Load, x_max: f64, max_objects: usize) -> String {
    let mut s = Svg::new(WIDTH, 100.0, label);
    let top = legend(&mut s, 10.0, 16.0, WIDTH - MR, &legend_entries()) + 22.0;
    let shown = load.objects.len().min(max_objects);
    let y1 = top + ROW_H * shown.max(1) as f64;
    let tk = ticks(0.0, x_max.max(1.0), 8);
    let xs = Scale::new(0.0, *tk.last().unwrap(), LABEL_W, WIDTH - MR - 40.0);
    top_axis(&mut s, &xs, &tk, top, y1);
    for (i, o) in load.objects.iter().take(shown).enumerate() {
        object_row(&mut s, &xs, o, i, top + ROW_H * i as f64);
    }
    if load.objects.is_empty() {
        s.text(
            LABEL_W,
            top + 11.0,
            "(no entries in the HAR)",
            Anchor::Start,
            11.0,
            r##"fill="#555""##,
        );
    }
    // Below the rows: the bottom axis of a tall waterfall, then the onContentLoad and
    // onLoad labels and the count of objects not drawn.
    let below = if shown > TALL_WATERFALL_ROWS {
        bottom_axis(&mut s, &xs, &tk, y1);
        y1 + 20.0
    } else {
        y1
    };
    load_lines(&mut s, &xs, load, (top, y1), below);
    let mut h = below + 20.0;
    if load.objects.len() > shown {
        s.text(
            8.0,
            below + 16.0,
            &format!("… {} more objects not drawn", load.objects.len() - shown),
            Anchor::Start,
            11.0,
            r##"fill="#555""##,
        );
        h += 6.0;
    }
    s.set_height(h);
    s.finish()
}

/// The legend of a waterfall: the phases' colours, then the onContentLoad and onLoad
/// lines.
fn legend_entries() -> Vec<(String, Style, bool)> {
    let mut entries: Vec<(String, Style, bool)> = PHASE_NAMES
        .iter()
        .zip(PHASE_COLOURS)
        .map(|(n, c)| {
            (
                n.to_string(),
                Style {
                    colour: c,
                    ..svg::style(0)
                },
                true,
            )
        })
        .collect();
    for (name, colour) in [("onContentLoad", DCL_COLOUR), ("onLoad", LOAD_COLOUR)] {
        entries.push((
            name.into(),
            Style {
                colour,
                dash: "4 3",
                ..svg::style(0)
            },
            true,
        ));
    }
    entries
}

/// The time axis above the rows: a grid line from `top` down to `y1` and a label at
/// every tick, and the axis title left of the first.
fn top_axis(s: &mut Svg, xs: &Scale, tk: &[f64], top: f64, y1: f64) {
    s.raw(r#"<g class="x-axis top">"#);
    for &t in tk {
        let x = xs.at(t);
        s.line(x, top - 4.0, x, y1, "#E8E8E8", 1.0, "");
        s.text(
            x,
            top - 8.0,
            &svg::num(t),
            Anchor::Middle,
            10.0,
            r##"fill="#333""##,
        );
    }
    s.text(
        LABEL_W - 8.0,
        top - 8.0,
        AXIS_TITLE,
        Anchor::End,
        10.0,
        r##"fill="#333""##,
    );
    s.raw("</g>");
}

/// The `i`th row, at `y`: the object's label (red with its status when it failed) and
/// one bar per phase from its start, under one tooltip with its URL and timings.
fn object_row(s: &mut Svg, xs: &Scale, o: &Object, i: usize, y: f64) {
    if i % 2 == 1 {
        s.rect_attrs(0.0, y, WIDTH - MR, ROW_H, r##"fill="#F6F6F6""##);
    }
    let short = o
        .url
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    let mut lab = String::new();
    if o.pushed {
        lab.push_str("⇡ ");
    }
    lab.push_str(&truncate(short, 44));
    let colour = if o.failed() { "#B03000" } else { "#222" };
    if o.failed() {
        let st = if o.status == 0 {
            "failed".to_string()
        } else {
            o.status.to_string()
        };
        lab = format!("{} [{st}]", truncate(&lab, 36));
    }
    // One tooltip for the whole row (label and bars) keeps the file small.
    s.raw(&format!("<g><title>{}</title>", svg::esc(&tooltip(o))));
    s.text(
        8.0,
        y + 11.0,
        &lab,
        Anchor::Start,
        10.5,
        &format!(r#"fill="{colour}""#),
    );
    let mut acc = o.start;
    for (k, p) in o.phases.iter().enumerate() {
        if *p > 0.0 {
            let x0 = xs.at(acc);
            let w = (xs.at(acc + p) - x0).max(0.6);
            s.rect(x0, y + 3.0, w, ROW_H - 6.0, PHASE_COLOURS[k], None);
        }
        acc += p;
    }
    if o.phases.iter().all(|p| *p <= 0.0) {
        s.rect(xs.at(o.start), y + 3.0, 1.5, ROW_H - 6.0, "#555", None);
    }
    s.raw("</g>");
}

/// An object's tooltip: URL, status, start, every phase, priority, push and error.
fn tooltip(o: &Object) -> String {
    let mut tip = format!(
        "{} · status {} · start {} ms · ",
        o.url,
        o.status,
        svg::ms(o.start)
    );
    for (k, n) in PHASE_NAMES.iter().enumerate() {
        tip.push_str(&format!("{n} {} ms, ", svg::ms(o.phases[k])));
    }
    if let Some(p) = &o.priority {
        tip.push_str(&format!("priority {p}"));
    }
    if o.pushed {
        tip.push_str(" · pushed");
    }
    if let Some(e) = &o.error {
        tip.push_str(&format!(" · error: {e}"));
    }
    tip
}

/// The onContentLoad and onLoad lines across the rows (`top` to `y1`), each labelled
/// under the rows at `below`: onContentLoad left of its line, onLoad right of its line,
/// so that they never collide.
fn load_lines(s: &mut Svg, xs: &Scale, load: &Load, (top, y1): (f64, f64), below: f64) {
    for (v, c, name, dx, anchor) in [
        (
            load.on_content_load,
            DCL_COLOUR,
            "onContentLoad",
            -3.0,
            "end",
        ),
        (load.on_load, LOAD_COLOUR, "onLoad", 3.0, "start"),
    ] {
        if let Some(v) = v {
            let x = xs.at(v);
            s.line(x, top - 2.0, x, y1, c, 1.6, "4 3");
            s.text_titled(
                x + dx,
                below + 12.0,
                &format!("{name} {} ms", svg::ms(v)),
                &format!("{name} {} ms", svg::ms(v)),
                10.0,
                &format!(r#"fill="{c}" text-anchor="{anchor}""#),
            );
        }
    }
}

/// The time axis under the last row of a tall waterfall: a rule, tick marks and labels
/// at the same ticks as the top axis, and the axis title.
fn bottom_axis(s: &mut Svg, xs: &Scale, tk: &[f64], y1: f64) {
    s.raw(r#"<g class="x-axis bottom">"#);
    s.line(
        xs.at(tk[0]),
        y1,
        xs.at(*tk.last().unwrap()),
        y1,
        "#999",
        1.0,
        "",
    );
    for &t in tk {
        let x = xs.at(t);
        s.line(x, y1, x, y1 + 4.0, "#999", 1.0, "");
        s.text(
            x,
            y1 + 15.0,
            &svg::num(t),
            Anchor::Middle,
            10.0,
            r##"fill="#333""##,
        );
    }
    s.text(
        LABEL_W - 8.0,
        y1 + 15.0,
        AXIS_TITLE,
        Anchor::End,
        10.0,
        r##"fill="#333""##,
    );
    s.raw("</g>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::har::Object;

    fn load(n: usize) -> Load {
        Load {
            on_content_load: Some(400.0),
            on_load: Some(100.0 * n as f64),
            objects: (0..n)
                .map(|i| Object {
                    url: format!("http://a.test/o{i}.js"),
                    status: 200,
                    start: 100.0 * i as f64,
                    phases: [1.0, 0.0, 1.0, 20.0, 30.0],
                    time: 52.0,
                    priority: None,
                    pushed: false,
                    error: None,
                })
                .collect(),
        }
    }

    #[test]
    fn tall_waterfalls_repeat_the_time_axis_at_the_bottom() {
        let short = waterfall("short", &load(TALL_WATERFALL_ROWS), 3000.0, 120);
        assert!(short.contains(r#"<g class="x-axis top">"#));
        assert!(!short.contains("x-axis bottom"), "{short}");
        let tall = waterfall("tall", &load(TALL_WATERFALL_ROWS + 1), 3000.0, 120);
        assert!(tall.contains(r#"<g class="x-axis top">"#));
        let bottom = tall
            .find(r#"<g class="x-axis bottom">"#)
            .expect("bottom axis");
        // Under the last row, with the same tick labels as the top axis.
        assert!(bottom > tall.rfind("a.test/o25.js").unwrap());
        let axis = &tall[bottom..];
        let axis = &axis[..axis.find("</g>").unwrap()];
        for t in ["0", "1000", "2000", "3000"] {
            assert!(axis.contains(&format!(">{t}</text>")), "tick {t}: {axis}");
        }
        assert!(axis.contains(AXIS_TITLE));
        roxmltree::Document::parse(&tall).unwrap();
        // What counts is the rows drawn, not the objects in the HAR.
        let capped = waterfall("capped", &load(60), 6000.0, 20);
        assert!(!capped.contains("x-axis bottom"));
        assert!(capped.contains("40 more objects not drawn"));
    }
}
