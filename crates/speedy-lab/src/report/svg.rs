//! A minimal SVG writer: elements as strings, linear scales, tick choice, the palettes
//! and number formatting shared by every chart.

use std::fmt::Write;

/// Colours for variants, in order: Okabe & Ito's colour-blind-safe palette (black first
/// for the baseline, the hard-to-see yellow left out, a grey added), then six of Paul
/// Tol's muted colours for experiments with many variants.
pub const VARIANT_COLOURS: [&str; 14] = [
    "#000000", "#E69F00", "#0072B2", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#7F7F7F",
    "#882255", "#332288", "#44AA99", "#999933", "#88CCEE", "#DDCC77",
];

/// Dash patterns cycled once the colours run out (and used to tell lines apart).
pub const DASHES: [&str; 3] = ["", "6 3", "2 2"];

/// Colours of the five object-time phases: blocked, connect (with DNS and TLS), send,
/// wait, receive.
pub const PHASE_COLOURS: [&str; 5] = ["#BBBBBB", "#E69F00", "#CC79A7", "#56B4E9", "#0072B2"];

/// Names of the phases, in [`PHASE_COLOURS`] order.
pub const PHASE_NAMES: [&str; 5] = [
    "blocked",
    "connect (incl. DNS, TLS)",
    "send",
    "wait",
    "receive",
];

/// Marker shapes for series (so colour is never the only cue).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Marker {
    /// Filled circle.
    Circle,
    /// Filled square.
    Square,
    /// Filled triangle, point up.
    Triangle,
    /// Filled diamond.
    Diamond,
    /// Hollow circle.
    Ring,
    /// An ×.
    Cross,
}

const MARKERS: [Marker; 6] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
    Marker::Ring,
    Marker::Cross,
];

/// How series number `i` is drawn: colour, dash pattern, marker.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Style {
    /// Stroke and fill colour.
    pub colour: &'static str,
    /// SVG dash array ("" for solid).
    pub dash: &'static str,
    /// Marker shape.
    pub marker: Marker,
}

/// The style of series `i`.
pub fn style(i: usize) -> Style {
    Style {
        colour: VARIANT_COLOURS[i % VARIANT_COLOURS.len()],
        dash: DASHES[(i / VARIANT_COLOURS.len()) % DASHES.len()],
        marker: MARKERS[i % MARKERS.len()],
    }
}

/// Escapes text for XML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// A number for a tick label or a table: no more digits than the magnitude needs.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    if a >= 100.0 || a == 0.0 || (a - a.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A millisecond value, rounded to whole ms above 100 ms.
pub fn ms(v: f64) -> String {
    if !v.is_finite() {
        "–".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// "Nice" tick values covering `[lo, hi]` with about `n` intervals (1, 2, 5 × 10ᵏ).
pub fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let (lo, hi) = if hi > lo { (lo, hi) } else { (lo, lo + 1.0) };
    let raw = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).floor() * step;
    let mut out = Vec::new();
    let mut k = 0;
    loop {
        let t = first + k as f64 * step;
        // Snap tiny floating errors (0.30000000000000004).
        let t = (t / step).round() * step;
        out.push(t);
        if t >= hi - step * 1e-9 || k > 1000 {
            break;
        }
        k += 1;
    }
    out
}

/// A linear map from a domain to a pixel range.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    d0: f64,
    d1: f64,
    r0: f64,
    r1: f64,
}

impl Scale {
    /// Maps `[d0, d1]` onto `[r0, r1]`.
    pub fn new(d0: f64, d1: f64, r0: f64, r1: f64) -> Scale {
        let d1 = if d1 == d0 { d0 + 1.0 } else { d1 };
        Scale { d0, d1, r0, r1 }
    }

    /// Pixel position of `v`.
    pub fn at(&self, v: f64) -> f64 {
        self.r0 + (v - self.d0) / (self.d1 - self.d0) * (self.r1 - self.r0)
    }
}

/// An SVG document being written.
pub struct Svg {
    w: f64,
    h: f64,
    label: String,
    body: String,
}

/// Text anchor.
#[derive(Clone, Copy, Debug)]
pub enum Anchor {
    /// Left aligned.
    Start,
    /// Centred.
    Middle,
    /// Right aligned.
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

impl Svg {
    /// A `w` × `h` drawing described by `label` (for screen readers).
    pub fn new(w: f64, h: f64, label: &str) -> Svg {
        Svg {
            w,
            h,
            label: label.to_string(),
            body: String::new(),
        }
    }

    /// Sets the height once the content is laid out.
    pub fn set_height(&mut self, h: f64) {
        self.h = h;
    }

    /// A filled rectangle; `title` becomes a hover tooltip.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, title: Option<&str>) {
        let _ = write!(
            self.body,
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{fill}""#,
            x,
            y,
            w.max(0.0),
            h.max(0.0)
        );
        match title {
            Some(t) => {
                let _ = write!(self.body, "><title>{}</title></rect>", esc(t));
            }
            None => self.body.push_str("/>"),
        }
    }

    /// A rectangle with extra raw attributes (opacity, stroke, …).
    pub fn rect_attrs(&mut self, x: f64, y: f64, w: f64, h: f64, attrs: &str) {
        let _ = write!(
            self.body,
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" {attrs}/>"#,
            x,
            y,
            w.max(0.0),
            h.max(0.0)
        );
    }

    /// A line segment.
    #[allow(clippy::too_many_arguments)]
    pub fn line(
        &mut self,
        x1: f64,
        y1: f64,
        x2: f64,
        y2: f64,
        stroke: &str,
        width: f64,
        dash: &str,
    ) {
        let _ = write!(
            self.body,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{stroke}" stroke-width="{width}""#
        );
        if !dash.is_empty() {
            let _ = write!(self.body, r#" stroke-dasharray="{dash}""#);
        }
        self.body.push_str("/>");
    }

    /// An open polyline.
    pub fn polyline(&mut self, pts: &[(f64, f64)], stroke: &str, width: f64, dash: &str) {
        if pts.is_empty() {
            return;
        }
        let mut p = String::new();
        for (x, y) in pts {
            let _ = write!(p, "{x:.1},{y:.1} ");
        }
        let _ = write!(
            self.body,
            r#"<polyline points="{}" fill="none" stroke="{stroke}" stroke-width="{width}" stroke-linejoin="round""#,
            p.trim_end()
        );
        if !dash.is_empty() {
            let _ = write!(self.body, r#" stroke-dasharray="{dash}""#);
        }
        self.body.push_str("/>");
    }

    /// Text at (`x`, `y`) (baseline), in `size` px.
    pub fn text(&mut self, x: f64, y: f64, s: &str, anchor: Anchor, size: f64, attrs: &str) {
        let _ = write!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}" text-anchor="{}" font-size="{size}" {attrs}>{}</text>"#,
            anchor.as_str(),
            esc(s)
        );
    }

    /// Text with a hover tooltip.
    pub fn text_titled(&mut self, x: f64, y: f64, s: &str, title: &str, size: f64, attrs: &str) {
        let _ = write!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}" {attrs}><title>{}</title>{}</text>"#,
            esc(title),
            esc(s)
        );
    }

    /// A marker of radius about `r`, centred at (`x`, `y`).
    pub fn marker(&mut self, m: Marker, x: f64, y: f64, r: f64, colour: &str, title: Option<&str>) {
        let shape = match m {
            Marker::Circle => {
                format!(r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r:.1}" fill="{colour}""#)
            }
            Marker::Ring => format!(
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r:.1}" fill="white" stroke="{colour}" stroke-width="1.8""#
            ),
            Marker::Square => {
                let s = r * 0.9;
                format!(
                    r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{colour}""#,
                    x - s,
                    y - s,
                    2.0 * s,
                    2.0 * s
                )
            }
            Marker::Triangle => {
                let s = r * 1.2;
                format!(
                    r#"<polygon points="{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" fill="{colour}""#,
                    x,
                    y - s,
                    x - s,
                    y + s * 0.8,
                    x + s,
                    y + s * 0.8
                )
            }
            Marker::Diamond => {
                let s = r * 1.25;
                format!(
                    r#"<polygon points="{:.1},{:.1} {:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" fill="{colour}""#,
                    x,
                    y - s,
                    x + s,
                    y,
                    x,
                    y + s,
                    x - s,
                    y
                )
            }
            Marker::Cross => {
                let s = r;
                format!(
                    r#"<path d="M{:.1},{:.1}L{:.1},{:.1}M{:.1},{:.1}L{:.1},{:.1}" stroke="{colour}" stroke-width="2.2""#,
                    x - s,
                    y - s,
                    x + s,
                    y + s,
                    x - s,
                    y + s,
                    x + s,
                    y - s
                )
            }
        };
        self.body.push_str(&shape);
        match (title, m) {
            (Some(t), Marker::Circle | Marker::Ring) => {
                let _ = write!(self.body, "><title>{}</title></circle>", esc(t));
            }
            (Some(t), Marker::Square) => {
                let _ = write!(self.body, "><title>{}</title></rect>", esc(t));
            }
            (Some(t), Marker::Triangle | Marker::Diamond) => {
                let _ = write!(self.body, "><title>{}</title></polygon>", esc(t));
            }
            (Some(t), Marker::Cross) => {
                let _ = write!(self.body, "><title>{}</title></path>", esc(t));
            }
            (None, _) => self.body.push_str("/>"),
        }
    }

    /// A vertical error bar from `y_lo` to `y_hi` at `x` with caps.
    pub fn error_bar_v(&mut self, x: f64, y_lo: f64, y_hi: f64, colour: &str) {
        self.line(x, y_lo, x, y_hi, colour, 1.3, "");
        self.line(x - 4.0, y_lo, x + 4.0, y_lo, colour, 1.3, "");
        self.line(x - 4.0, y_hi, x + 4.0, y_hi, colour, 1.3, "");
    }

    /// Raw markup (already escaped).
    pub fn raw(&mut self, s: &str) {
        self.body.push_str(s);
    }

    /// The `<svg>` element.
    pub fn finish(self) -> String {
        format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{l}" font-family="system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif"><rect width="{w}" height="{h}" fill="white"/>{b}</svg>"#,
            w = self.w,
            h = self.h,
            l = esc(&self.label),
            b = self.body
        )
    }
}

/// Horizontal grid lines and y tick labels at the left of the plot area.
pub fn y_axis(
    svg: &mut Svg,
    ys: &Scale,
    ticks: &[f64],
    x0: f64,
    x1: f64,
    fmt: &dyn Fn(f64) -> String,
) {
    for &t in ticks {
        let y = ys.at(t);
        svg.line(x0, y, x1, y, "#E3E3E3", 1.0, "");
        svg.text(
            x0 - 6.0,
            y + 4.0,
            &fmt(t),
            Anchor::End,
            11.0,
            r##"fill="#333""##,
        );
    }
    svg.line(
        x0,
        ys.at(ticks[0]),
        x0,
        ys.at(*ticks.last().unwrap()),
        "#555",
        1.0,
        "",
    );
}

/// Vertical grid lines and x tick labels under the plot area.
pub fn x_axis(
    svg: &mut Svg,
    xs: &Scale,
    ticks: &[f64],
    y0: f64,
    y1: f64,
    fmt: &dyn Fn(f64) -> String,
) {
    for &t in ticks {
        let x = xs.at(t);
        svg.line(x, y0, x, y1, "#E3E3E3", 1.0, "");
        svg.text(
            x,
            y1 + 15.0,
            &fmt(t),
            Anchor::Middle,
            11.0,
            r##"fill="#333""##,
        );
    }
    svg.line(
        xs.at(ticks[0]),
        y1,
        xs.at(*ticks.last().unwrap()),
        y1,
        "#555",
        1.0,
        "",
    );
}

/// A rotated axis title along the left edge.
pub fn y_title(svg: &mut Svg, x: f64, y_mid: f64, s: &str) {
    svg.raw(&format!(
        r##"<text x="{x:.1}" y="{y_mid:.1}" text-anchor="middle" font-size="12" fill="#222" transform="rotate(-90 {x:.1} {y_mid:.1})">{}</text>"##,
        esc(s)
    ));
}

/// An x-axis title centred on `x_mid` at `y` (the style `y_title` gives the y axis).
pub fn x_title(svg: &mut Svg, x_mid: f64, y: f64, s: &str) {
    svg.text(x_mid, y, s, Anchor::Middle, 12.0, r##"fill="#222""##);
}

/// Legend entries in rows from (`x`, `y`), wrapping at `max_x`; returns the y below it.
/// Each entry is (label, style, kind) where kind draws a line+marker or a filled box.
pub fn legend(svg: &mut Svg, x: f64, y: f64, max_x: f64, entries: &[(String, Style, bool)]) -> f64 {
    let mut cx = x;
    let mut cy = y;
    for (label, st, as_box) in entries {
        let w = 34.0 + label.chars().count() as f64 * 6.6;
        if cx + w > max_x && cx > x {
            cx = x;
            cy += 18.0;
        }
        if *as_box {
            svg.rect(cx, cy - 9.0, 14.0, 11.0, st.colour, None);
        } else {
            svg.line(cx, cy - 4.0, cx + 22.0, cy - 4.0, st.colour, 2.0, st.dash);
            svg.marker(st.marker, cx + 11.0, cy - 4.0, 3.8, st.colour, None);
        }
        let tx = if *as_box { cx + 19.0 } else { cx + 27.0 };
        svg.text(tx, cy, label, Anchor::Start, 12.0, r##"fill="#222""##);
        cx += w + 10.0;
    }
    cy + 8.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_nice() {
        assert_eq!(
            ticks(0.0, 1000.0, 5),
            [0.0, 200.0, 400.0, 600.0, 800.0, 1000.0]
        );
        assert_eq!(ticks(0.0, 0.03, 3), [0.0, 0.01, 0.02, 0.03]);
        let t = ticks(0.0, 1234.0, 5);
        assert!(*t.last().unwrap() >= 1234.0 && t[0] == 0.0);
        assert!(ticks(5.0, 5.0, 4).len() >= 2);
    }

    #[test]
    fn escaping_and_numbers() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        assert_eq!(num(1234.4), "1234");
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(0.025), "0.025");
        assert_eq!(num(2.0), "2");
        assert_eq!(ms(12.34), "12.3");
    }

    #[test]
    fn styles_differ() {
        assert_ne!(style(0), style(1));
        assert_ne!(style(0), style(8));
        let s = Scale::new(0.0, 10.0, 100.0, 200.0);
        assert_eq!(s.at(5.0), 150.0);
    }
}
