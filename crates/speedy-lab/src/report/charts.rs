//! Generic charts: grouped bars with error bars, lines with error bars, a scatter with
//! the diagonal, stacked horizontal bars. Each returns one `<svg>` element.

use super::svg::{self, esc, legend, ticks, x_axis, y_axis, y_title, Anchor, Scale, Style, Svg};

/// Width of every chart, in px.
pub const WIDTH: f64 = 1000.0;
const ML: f64 = 78.0;
const MR: f64 = 24.0;

/// One named series with its drawing style.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// Colour, dash, marker.
    pub style: Style,
}

/// One bar: a value, an optional CI, and an optional second (lighter) segment on top.
#[derive(Clone, Debug)]
pub struct Bar {
    /// Height of the (first) segment.
    pub value: f64,
    /// Error bar (low, high) drawn on the total.
    pub ci: Option<(f64, f64)>,
    /// A second segment stacked on top, drawn lighter.
    pub upper: Option<f64>,
    /// Tooltip.
    pub title: String,
}

/// A grouped bar chart.
#[derive(Clone, Debug)]
pub struct Bars {
    /// Accessible label.
    pub label: String,
    /// Group labels (x axis).
    pub groups: Vec<String>,
    /// Series (one bar per group each).
    pub series: Vec<Series>,
    /// `values[group][series]`.
    pub values: Vec<Vec<Option<Bar>>>,
    /// Y axis title with its unit.
    pub y_title: String,
    /// Format of values.
    pub fmt: fn(f64) -> String,
    /// Legend names of the lower and upper segments when bars are stacked.
    pub stack_names: Option<(String, String)>,
    /// Fixed top of the y axis (e.g. 100 for percentages).
    pub y_max: Option<f64>,
}

/// Draws a [`Bars`] chart.
pub fn bars(c: &Bars) -> String {
    let mut s = Svg::new(WIDTH, 100.0, &c.label);
    let mut entries: Vec<(String, Style, bool)> = c
        .series
        .iter()
        .map(|se| (se.name.clone(), se.style, true))
        .collect();
    if let Some((lo, up)) = &c.stack_names {
        let grey = svg::style(7);
        entries.push((format!("solid: {lo}"), grey, true));
        entries.push((
            format!("light: {up}"),
            Style {
                colour: "#D9D9D9",
                ..grey
            },
            true,
        ));
    }
    let top = legend(&mut s, ML, 18.0, WIDTH - MR, &entries) + 10.0;
    let ph = 270.0;
    let (y0, y1) = (top, top + ph);
    let mut hi: f64 = 0.0;
    for g in &c.values {
        for b in g.iter().flatten() {
            hi = hi.max(b.value + b.upper.unwrap_or(0.0));
            if let Some((_, h)) = b.ci {
                hi = hi.max(h);
            }
        }
    }
    let tk = ticks(0.0, c.y_max.unwrap_or(hi * 1.08).max(1e-9), 5);
    let ys = Scale::new(0.0, *tk.last().unwrap(), y1, y0);
    y_axis(&mut s, &ys, &tk, ML, WIDTH - MR, &|v| (c.fmt)(v));
    y_title(&mut s, 16.0, (y0 + y1) / 2.0, &c.y_title);
    let ng = c.groups.len().max(1) as f64;
    let gw = (WIDTH - ML - MR) / ng;
    let ns = c.series.len().max(1) as f64;
    let bw = (gw * 0.82 / ns).min(60.0);
    let mut two_lines = false;
    for (gi, g) in c.groups.iter().enumerate() {
        let gx = ML + gw * gi as f64;
        let start = gx + (gw - bw * ns) / 2.0;
        for (si, se) in c.series.iter().enumerate() {
            let Some(b) = c
                .values
                .get(gi)
                .and_then(|v| v.get(si))
                .and_then(|b| b.as_ref())
            else {
                continue;
            };
            let x = start + bw * si as f64;
            let yv = ys.at(b.value);
            s.rect(
                x + 1.0,
                yv,
                bw - 2.0,
                y1 - yv,
                se.style.colour,
                Some(&b.title),
            );
            let mut total = b.value;
            if let Some(u) = b.upper {
                let yu = ys.at(b.value + u);
                s.rect_attrs(
                    x + 1.0,
                    yu,
                    bw - 2.0,
                    yv - yu,
                    &format!(
                        r#"fill="{}" fill-opacity="0.35" stroke="{}" stroke-width="1""#,
                        se.style.colour, se.style.colour
                    ),
                );
                total += u;
            }
            let mut label_y = ys.at(total);
            if let Some((lo, h)) = b.ci {
                s.error_bar_v(x + bw / 2.0, ys.at(lo), ys.at(h), "#333");
                label_y = label_y.min(ys.at(h));
            }
            if bw >= 30.0 {
                s.text(
                    x + bw / 2.0,
                    label_y - 4.0,
                    &(c.fmt)(total),
                    Anchor::Middle,
                    10.0,
                    r##"fill="#222""##,
                );
            }
        }
        let max_chars = (gw / 6.4).max(4.0) as usize;
        // A long label "name (details)" goes on two lines.
        let lines: Vec<&str> = match g.split_once(" (") {
            Some((a, _)) if g.chars().count() > max_chars => vec![a, &g[a.len() + 1..]],
            _ => vec![g.as_str()],
        };
        for (k, line) in lines.iter().enumerate() {
            s.text(
                gx + gw / 2.0,
                y1 + 18.0 + 14.0 * k as f64,
                &truncate(line, max_chars),
                Anchor::Middle,
                12.0,
                r##"fill="#222""##,
            );
        }
        two_lines |= lines.len() > 1;
    }
    s.line(ML, y1, WIDTH - MR, y1, "#555", 1.0, "");
    s.set_height(y1 + if two_lines { 46.0 } else { 32.0 });
    s.finish()
}

/// A point of a line series.
#[derive(Clone, Debug)]
pub struct Point {
    /// X value.
    pub x: f64,
    /// Y value.
    pub y: f64,
    /// Error bar (low, high).
    pub ci: Option<(f64, f64)>,
    /// Tooltip.
    pub title: String,
}

/// A line chart with error bars; x ticks at the data's x values when there are few.
pub fn lines(
    label: &str,
    series: &[(Series, Vec<Point>)],
    x_title: &str,
    y_title_s: &str,
    x_fmt: &dyn Fn(f64) -> String,
) -> String {
    let mut s = Svg::new(WIDTH, 100.0, label);
    let entries: Vec<(String, Style, bool)> = series
        .iter()
        .map(|(se, _)| (se.name.clone(), se.style, false))
        .collect();
    let top = legend(&mut s, ML, 18.0, WIDTH - MR, &entries) + 10.0;
    let (y0, y1) = (top, top + 300.0);
    let pts = series.iter().flat_map(|(_, p)| p.iter());
    let mut xs_v: Vec<f64> = pts.clone().map(|p| p.x).collect();
    xs_v.sort_by(f64::total_cmp);
    xs_v.dedup();
    let hi = pts
        .map(|p| p.ci.map_or(p.y, |c| c.1.max(p.y)))
        .fold(0.0, f64::max);
    let (xlo, xhi) = (
        xs_v.first().copied().unwrap_or(0.0),
        xs_v.last().copied().unwrap_or(1.0),
    );
    let pad = if xhi > xlo { (xhi - xlo) * 0.04 } else { 1.0 };
    let xs = Scale::new(xlo - pad, xhi + pad, ML + 10.0, WIDTH - MR - 10.0);
    let yt = ticks(0.0, (hi * 1.06).max(1e-9), 5);
    let ys = Scale::new(0.0, *yt.last().unwrap(), y1, y0);
    y_axis(&mut s, &ys, &yt, ML, WIDTH - MR, &|v| svg::num(v));
    let xt = if xs_v.len() <= 10 && !xs_v.is_empty() {
        xs_v.clone()
    } else {
        ticks(xlo, xhi, 6)
            .into_iter()
            .filter(|t| *t >= xlo - pad && *t <= xhi + pad)
            .collect()
    };
    for &t in &xt {
        let x = xs.at(t);
        s.line(x, y0, x, y1, "#EFEFEF", 1.0, "");
        s.text(
            x,
            y1 + 16.0,
            &x_fmt(t),
            Anchor::Middle,
            11.0,
            r##"fill="#333""##,
        );
    }
    s.line(ML, y1, WIDTH - MR, y1, "#555", 1.0, "");
    y_title(&mut s, 16.0, (y0 + y1) / 2.0, y_title_s);
    svg::x_title(&mut s, (ML + WIDTH - MR) / 2.0, y1 + 36.0, x_title);
    let n = series.len() as f64;
    for (i, (se, p)) in series.iter().enumerate() {
        // Dodge the series sideways a little so error bars do not hide each other.
        let dx = (i as f64 - (n - 1.0) / 2.0) * 4.0;
        let mut p = p.clone();
        p.sort_by(|a, b| a.x.total_cmp(&b.x));
        let line: Vec<(f64, f64)> = p.iter().map(|q| (xs.at(q.x) + dx, ys.at(q.y))).collect();
        s.polyline(&line, se.style.colour, 2.0, se.style.dash);
        for q in &p {
            if let Some((lo, h)) = q.ci {
                s.error_bar_v(xs.at(q.x) + dx, ys.at(lo), ys.at(h), se.style.colour);
            }
            s.marker(
                se.style.marker,
                xs.at(q.x) + dx,
                ys.at(q.y),
                4.2,
                se.style.colour,
                Some(&q.title),
            );
        }
    }
    s.set_height(y1 + 48.0);
    s.finish()
}

/// A scatter series: its style and its points (x, y, tooltip).
pub type ScatterSeries = (Series, Vec<(f64, f64, String)>);

/// A square scatter with the diagonal `y = x` (and `y = x/2`, "2× faster"); points are
/// (x, y, tooltip) per series.
pub fn scatter(label: &str, series: &[ScatterSeries], x_title: &str, y_title_s: &str) -> String {
    let side = 460.0;
    let mut s = Svg::new(WIDTH, 100.0, label);
    let (x0, y0) = (ML, 20.0);
    let (x1, y1) = (x0 + side, y0 + side);
    let hi = series
        .iter()
        .flat_map(|(_, p)| p.iter())
        .map(|p| p.0.max(p.1))
        .fold(0.0, f64::max);
    let tk = ticks(0.0, (hi * 1.05).max(1e-9), 5);
    let top = *tk.last().unwrap();
    let xs = Scale::new(0.0, top, x0, x1);
    let ys = Scale::new(0.0, top, y1, y0);
    y_axis(&mut s, &ys, &tk, x0, x1, &|v| svg::num(v));
    x_axis(&mut s, &xs, &tk, y0, y1, &|v| svg::num(v));
    s.line(x1, y0, x1, y1, "#BBB", 1.0, "");
    s.line(x0, y0, x1, y0, "#BBB", 1.0, "");
    s.line(
        xs.at(0.0),
        ys.at(0.0),
        xs.at(top),
        ys.at(top),
        "#555",
        1.2,
        "",
    );
    s.line(
        xs.at(0.0),
        ys.at(0.0),
        xs.at(top),
        ys.at(top / 2.0),
        "#999",
        1.0,
        "5 4",
    );
    // Labels along their lines, just above them, near the top right.
    for (frac, slope, text, colour) in [
        (0.93, 1.0, "same time (y = x)", "#444"),
        (0.97, 0.5, "2× faster (y = x/2)", "#777"),
    ] {
        let (lx, ly) = (xs.at(top * frac), ys.at(top * frac * slope));
        let angle = -f64::atan(slope).to_degrees();
        s.raw(&format!(
            r#"<text x="{lx:.1}" y="{:.1}" text-anchor="end" font-size="11" fill="{colour}" transform="rotate({angle:.1} {lx:.1} {ly:.1})">{}</text>"#,
            ly - 5.0,
            esc(text)
        ));
    }
    y_title(&mut s, 16.0, (y0 + y1) / 2.0, y_title_s);
    svg::x_title(&mut s, (x0 + x1) / 2.0, y1 + 38.0, x_title);
    for (se, pts) in series {
        for (x, y, t) in pts {
            s.marker(
                se.style.marker,
                xs.at(*x),
                ys.at(*y),
                5.0,
                se.style.colour,
                Some(t),
            );
        }
    }
    // Legend in a column at the right of the square.
    let lx = x1 + 30.0;
    s.text(
        lx,
        y0 + 8.0,
        "variant (y)",
        Anchor::Start,
        12.0,
        r##"font-weight="bold" fill="#222""##,
    );
    for (i, (se, _)) in series.iter().enumerate() {
        let y = y0 + 30.0 + 20.0 * i as f64;
        s.marker(
            se.style.marker,
            lx + 8.0,
            y - 4.0,
            5.0,
            se.style.colour,
            None,
        );
        s.text(
            lx + 20.0,
            y,
            &se.name,
            Anchor::Start,
            12.0,
            r##"fill="#222""##,
        );
    }
    let note_y = y0 + 40.0 + 20.0 * series.len() as f64;
    s.text(
        lx,
        note_y,
        "below the diagonal:",
        Anchor::Start,
        11.0,
        r##"fill="#555""##,
    );
    s.text(
        lx,
        note_y + 14.0,
        "faster than the baseline",
        Anchor::Start,
        11.0,
        r##"fill="#555""##,
    );
    s.set_height(y1 + 50.0);
    s.finish()
}

/// Stacked horizontal bars: one row per label, segments in the given colours, total at
/// the end. Rows are (label, segment values, tooltip).
pub fn stacked_hbars(
    label: &str,
    rows: &[(String, Vec<f64>, String)],
    seg_names: &[&str],
    seg_colours: &[&'static str],
    x_title: &str,
) -> String {
    let mut s = Svg::new(WIDTH, 100.0, label);
    let entries: Vec<(String, Style, bool)> = seg_names
        .iter()
        .zip(seg_colours)
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
    let lw = rows
        .iter()
        .map(|r| r.0.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(8, 34) as f64
        * 6.6
        + 14.0;
    let top = legend(&mut s, lw, 18.0, WIDTH - MR, &entries) + 12.0;
    let rh = 26.0;
    let y1 = top + rh * rows.len() as f64;
    let hi = rows
        .iter()
        .map(|r| r.1.iter().sum::<f64>())
        .fold(0.0, f64::max);
    let tk = ticks(0.0, (hi * 1.1).max(1e-9), 6);
    let xs = Scale::new(0.0, *tk.last().unwrap(), lw, WIDTH - MR - 10.0);
    x_axis(&mut s, &xs, &tk, top, y1, &|v| svg::num(v));
    for (i, (name, segs, title)) in rows.iter().enumerate() {
        let y = top + rh * i as f64 + 4.0;
        s.text_titled(
            lw - 8.0,
            y + 13.0,
            &truncate(name, 34),
            title,
            12.0,
            r##"text-anchor="end" fill="#222""##,
        );
        let mut acc = 0.0;
        for (k, v) in segs.iter().enumerate() {
            let colour = seg_colours[k % seg_colours.len()];
            let t = format!(
                "{name}: {} {} ms",
                seg_names.get(k).unwrap_or(&""),
                svg::ms(*v)
            );
            s.rect(
                xs.at(acc),
                y,
                xs.at(acc + v) - xs.at(acc),
                rh - 8.0,
                colour,
                Some(&t),
            );
            acc += v;
        }
        s.text(
            xs.at(acc) + 5.0,
            y + 13.0,
            &svg::ms(acc),
            Anchor::Start,
            11.0,
            r##"fill="#333""##,
        );
    }
    svg::x_title(&mut s, (lw + WIDTH - MR) / 2.0, y1 + 36.0, x_title);
    s.set_height(y1 + 48.0);
    s.finish()
}

/// Shortens `s` to `n` characters with an ellipsis.
pub fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let t: String = s.chars().take(n.saturating_sub(1)).collect();
        format!("{t}…")
    }
}

/// A placeholder figure for a chart without data.
pub fn no_data(what: &str) -> String {
    format!(
        r#"<p class="nodata">No data for this chart: {}.</p>"#,
        esc(what)
    )
}
