//! Distribution charts: horizontal box plots grouped by page, and empirical CDFs.

use super::charts::{truncate, Series, WIDTH};
use super::svg::{self, legend, ticks, x_axis, Anchor, Scale, Style, Svg};
use crate::stats::quantile;

const MR: f64 = 24.0;

/// Ticks for a time axis: from 0, unless every value is far from 0 (smallest above 40%
/// of the largest), then from a tick under the smallest value so the spread is visible.
fn axis_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let start = if lo > 0.4 * hi {
        let t = ticks(0.0, hi, 8);
        let step = t.get(1).copied().unwrap_or(1.0);
        (lo / step).floor() * step
    } else {
        0.0
    };
    ticks(start, (hi * 1.02).max(start + 1e-9), 6)
}

/// A group of box plots: its label (the page) and, per box, the series index and values.
pub type BoxGroup = (String, Vec<(usize, Vec<f64>)>);

/// The axis title, saying so when the axis does not start at 0.
fn axis_title(t: &str, start: f64) -> String {
    if start > 0.0 {
        format!("{t} — axis starts at {}", svg::num(start))
    } else {
        t.to_string()
    }
}

/// Horizontal box plots: one group per page, one box per series inside it. Boxes span
/// the quartiles, the thick line is the median, whiskers reach the minimum and maximum,
/// every load is a dot. `groups` = (page, [(series index, load times)]).
pub fn box_plots(label: &str, series: &[Series], groups: &[BoxGroup], x_title: &str) -> String {
    let mut s = Svg::new(WIDTH, 100.0, label);
    let entries: Vec<(String, Style, bool)> = series
        .iter()
        .map(|se| (se.name.clone(), se.style, true))
        .collect();
    let lw = groups
        .iter()
        .map(|g| g.0.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(6, 28) as f64
        * 6.6
        + 16.0;
    let top = legend(&mut s, lw, 18.0, WIDTH - MR, &entries) + 22.0;
    let rh = 13.0;
    let gap = 12.0;
    let all = || {
        groups
            .iter()
            .flat_map(|g| g.1.iter())
            .flat_map(|b| b.1.iter())
    };
    let hi = all().fold(0.0f64, |a, &b| a.max(b));
    let lo = all().fold(f64::INFINITY, |a, &b| a.min(b));
    let tk = axis_ticks(lo, hi);
    let xs = Scale::new(tk[0], *tk.last().unwrap(), lw, WIDTH - MR - 6.0);
    let total_rows: usize = groups.iter().map(|g| g.1.len()).sum();
    let y1 = top + rh * total_rows as f64 + gap * groups.len() as f64;
    x_axis(&mut s, &xs, &tk, top - 4.0, y1, &|v| svg::num(v));
    if total_rows > 30 {
        // A tall chart gets its tick labels at the top too.
        for &t in &tk {
            s.text(
                xs.at(t),
                top - 8.0,
                &svg::num(t),
                Anchor::Middle,
                11.0,
                r##"fill="#333""##,
            );
        }
    }
    let mut y = top;
    for (gi, (page, boxes)) in groups.iter().enumerate() {
        let gh = rh * boxes.len() as f64;
        if gi % 2 == 1 {
            s.rect_attrs(
                lw,
                y - 3.0,
                WIDTH - MR - 6.0 - lw,
                gh + 6.0,
                r##"fill="#F4F4F4""##,
            );
        }
        s.text_titled(
            lw - 8.0,
            y + gh / 2.0 + 4.0,
            &truncate(page, 28),
            page,
            12.0,
            r##"text-anchor="end" fill="#222""##,
        );
        for (k, (si, vals)) in boxes.iter().enumerate() {
            let st = series.get(*si).map(|x| x.style).unwrap_or(svg::style(*si));
            let cy = y + rh * k as f64 + rh / 2.0;
            if vals.is_empty() {
                continue;
            }
            let q = |p: f64| quantile(vals, p).unwrap_or(0.0);
            let (mn, q1, md, q3, mx) = (q(0.0), q(0.25), q(0.5), q(0.75), q(1.0));
            let name = series.get(*si).map_or("", |x| x.name.as_str());
            let title = format!(
                "{page} · {name}: n={}, min {} · Q1 {} · median {} · Q3 {} · max {} ms",
                vals.len(),
                svg::ms(mn),
                svg::ms(q1),
                svg::ms(md),
                svg::ms(q3),
                svg::ms(mx)
            );
            s.line(xs.at(mn), cy, xs.at(mx), cy, st.colour, 1.2, "");
            s.line(xs.at(mn), cy - 3.0, xs.at(mn), cy + 3.0, st.colour, 1.2, "");
            s.line(xs.at(mx), cy - 3.0, xs.at(mx), cy + 3.0, st.colour, 1.2, "");
            s.raw(&format!(
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{c}" fill-opacity="0.3" stroke="{c}" stroke-width="1.2"><title>{}</title></rect>"#,
                xs.at(q1),
                cy - rh / 2.0 + 1.5,
                (xs.at(q3) - xs.at(q1)).max(1.0),
                rh - 3.0,
                svg::esc(&title),
                c = st.colour
            ));
            s.line(
                xs.at(md),
                cy - rh / 2.0 + 1.0,
                xs.at(md),
                cy + rh / 2.0 - 1.0,
                st.colour,
                2.6,
                "",
            );
            for v in vals {
                s.raw(&format!(
                    r##"<circle cx="{:.1}" cy="{cy:.1}" r="2.1" fill="#222" fill-opacity="0.6"/>"##,
                    xs.at(*v)
                ));
            }
        }
        y += gh + gap;
    }
    svg::x_title(
        &mut s,
        (lw + WIDTH - MR) / 2.0,
        y1 + 36.0,
        &axis_title(x_title, tk[0]),
    );
    s.set_height(y1 + 48.0);
    s.finish()
}

/// Empirical CDFs (step functions), one line per series, y in percent of loads.
pub fn cdfs(label: &str, series: &[(Series, Vec<f64>)], x_title: &str) -> String {
    let ml = 78.0;
    let mut s = Svg::new(WIDTH, 100.0, label);
    let entries: Vec<(String, Style, bool)> = series
        .iter()
        .map(|(se, v)| (format!("{} (n={})", se.name, v.len()), se.style, false))
        .collect();
    let top = legend(&mut s, ml, 18.0, WIDTH - MR, &entries) + 10.0;
    let (y0, y1) = (top, top + 300.0);
    let hi = series
        .iter()
        .flat_map(|x| x.1.iter())
        .fold(0.0f64, |a, &b| a.max(b));
    let lo = series
        .iter()
        .flat_map(|x| x.1.iter())
        .fold(f64::INFINITY, |a, &b| a.min(b));
    let tk = axis_ticks(lo, hi);
    let xs = Scale::new(tk[0], *tk.last().unwrap(), ml, WIDTH - MR);
    let ys = Scale::new(0.0, 100.0, y1, y0);
    let yt: Vec<f64> = (0..=4).map(|i| i as f64 * 25.0).collect();
    svg::y_axis(&mut s, &ys, &yt, ml, WIDTH - MR, &|v| format!("{v:.0}%"));
    x_axis(&mut s, &xs, &tk, y0, y1, &|v| svg::num(v));
    svg::y_title(&mut s, 16.0, (y0 + y1) / 2.0, "loads finished by then (%)");
    svg::x_title(
        &mut s,
        (ml + WIDTH - MR) / 2.0,
        y1 + 36.0,
        &axis_title(x_title, tk[0]),
    );
    for (se, vals) in series {
        if vals.is_empty() {
            continue;
        }
        let mut v = vals.clone();
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        let mut pts = vec![(xs.at(v[0]), ys.at(0.0))];
        for (i, x) in v.iter().enumerate() {
            pts.push((xs.at(*x), ys.at(100.0 * i as f64 / n)));
            pts.push((xs.at(*x), ys.at(100.0 * (i + 1) as f64 / n)));
        }
        s.polyline(&pts, se.style.colour, 2.0, se.style.dash);
        // Marker at the median, for identification without colour.
        let med = quantile(&v, 0.5).unwrap_or(v[0]);
        s.marker(
            se.style.marker,
            xs.at(med),
            ys.at(50.0),
            4.5,
            se.style.colour,
            Some(&format!("{}: median {} ms", se.name, svg::ms(med))),
        );
    }
    s.set_height(y1 + 48.0);
    s.finish()
}
