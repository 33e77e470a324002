//! The synthetic corpus: pages calibrated only to the page statistics of
//! `shared/reference/lab-facts.md` §4 (the cellular study's 20 pages: objects, bytes,
//! domains, and the split into text, JS/CSS and images/other), never to load results.
//!
//! Each page copies one row of that table (rows are dealt in a seeded order) with ±15%
//! jitter; object sizes are log-normal per type, scaled so the page's bytes match the
//! row. Bodies are real: HTML that links its CSS, scripts, images and iframes; CSS with
//! `@import`, `@font-face` and `url()` images; scripts that load their children after a
//! `setTimeout` equal to the recorded compute delay; GIFs padded with comment blocks.
//! Assumptions not in the table (stated here, not tuned to any result): JS:CSS = 3:2;
//! images/other are 90% images, up to 2 fonts per page when it has CSS, the rest opaque
//! `other`; text objects beyond the root are iframes and JSON XHRs in equal parts; 30% of
//! scripts, 10% of images and all XHRs/other are script-initiated.

use crate::model::{Archive, BodySource, Discovery, Object, ObjectType, Page};
use crate::rng::Rng;
use bytes::Bytes;
use std::fmt::Write;

/// One row of lab-facts §4.
struct Row {
    kind: &'static str,
    objects: f64,
    size_kb: f64,
    domains: f64,
    text: f64,
    jscss: f64,
    images: f64,
}

const fn row(
    kind: &'static str,
    objects: f64,
    size_kb: f64,
    domains: f64,
    text: f64,
    jscss: f64,
    images: f64,
) -> Row {
    Row {
        kind,
        objects,
        size_kb,
        domains,
        text,
        jscss,
        images,
    }
}

/// lab-facts §4 ("Towards a SPDY-ier mobile web", 20 pages, 2013).
const ROWS: [Row; 20] = [
    row("finance", 134.8, 626.9, 37.6, 28.6, 41.3, 64.9),
    row("entertainment", 160.6, 2197.3, 36.3, 16.5, 28.0, 116.1),
    row("shopping", 143.8, 1563.1, 15.8, 13.3, 36.8, 93.7),
    row("portal", 121.6, 963.3, 27.5, 9.6, 18.3, 93.7),
    row("technology", 45.2, 602.8, 3.0, 2.0, 18.0, 25.2),
    row("isp", 163.4, 1594.5, 13.2, 13.2, 36.4, 113.8),
    row("news", 115.8, 1130.6, 28.5, 9.1, 49.5, 57.2),
    row("news", 157.7, 1184.5, 27.3, 29.6, 28.3, 99.8),
    row("shopping", 5.1, 56.2, 2.0, 3.1, 2.0, 0.0),
    row("auction", 59.3, 719.7, 17.9, 6.8, 7.0, 45.5),
    row("radio", 122.1, 1489.1, 17.9, 24.1, 21.0, 77.0),
    row("photos", 29.4, 688.0, 4.0, 2.3, 10.0, 17.1),
    row("technology", 63.4, 895.1, 9.0, 4.1, 15.0, 44.3),
    row("baseball", 167.8, 1130.5, 12.5, 19.5, 94.0, 54.3),
    row("news", 323.0, 1722.7, 84.7, 73.4, 73.6, 176.0),
    row("football", 267.1, 2311.0, 75.0, 60.3, 56.9, 149.9),
    row("news", 218.5, 4691.3, 37.0, 19.0, 56.3, 143.2),
    row("photos", 33.6, 1664.8, 9.1, 3.3, 6.7, 23.6),
    row("radio", 68.7, 2908.9, 15.5, 5.2, 23.8, 39.7),
    row("weather", 163.2, 1653.8, 48.7, 19.7, 45.3, 98.2),
];

/// Options of the generator.
#[derive(Clone, Copy, Debug)]
pub struct SynthOptions {
    /// Number of pages.
    pub pages: usize,
    /// Seed: the same seed gives the same corpus, byte for byte.
    pub seed: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sub {
    Root,
    Iframe,
    Json,
    Css,
    Js,
    Img,
    Font,
    Other,
}

impl Sub {
    fn kind(self) -> ObjectType {
        match self {
            Sub::Root | Sub::Iframe => ObjectType::Document,
            Sub::Json => ObjectType::Xhr,
            Sub::Css => ObjectType::Stylesheet,
            Sub::Js => ObjectType::Script,
            Sub::Img => ObjectType::Image,
            Sub::Font => ObjectType::Font,
            Sub::Other => ObjectType::Other,
        }
    }
    fn content_type(self) -> &'static str {
        match self {
            Sub::Root | Sub::Iframe => "text/html; charset=utf-8",
            Sub::Json => "application/json",
            Sub::Css => "text/css",
            Sub::Js => "application/javascript",
            Sub::Img => "image/gif",
            Sub::Font => "font/woff2",
            Sub::Other => "application/octet-stream",
        }
    }
    fn median(self) -> f64 {
        match self {
            Sub::Root => 40_000.0,
            Sub::Iframe => 8_000.0,
            Sub::Json => 2_000.0,
            Sub::Css => 12_000.0,
            Sub::Js => 20_000.0,
            Sub::Img => 8_000.0,
            Sub::Font => 25_000.0,
            Sub::Other => 3_000.0,
        }
    }
    fn path(self, name: &str) -> String {
        match self {
            Sub::Root => "/".into(),
            Sub::Iframe => format!("/frame/{name}.html"),
            Sub::Json => format!("/api/{name}.json"),
            Sub::Css => format!("/css/{name}.css"),
            Sub::Js => format!("/js/{name}.js"),
            Sub::Img => format!("/img/{name}.gif"),
            Sub::Font => format!("/fonts/{name}.woff2"),
            Sub::Other => format!("/static/{name}.bin"),
        }
    }
}

struct Node {
    sub: Sub,
    url: String,
    domain: usize,
    size: usize,
    parent: Option<usize>,
    after_ms: Option<u32>,
}

/// Generates the corpus.
pub fn synthesize(opts: SynthOptions) -> Archive {
    let mut a = Archive::new(&format!(
        "speedy corpus synth --pages {} --seed {}",
        opts.pages, opts.seed
    ));
    let mut rng = Rng::new(opts.seed);
    let mut order: Vec<usize> = (0..ROWS.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.range(0, i + 1));
    }
    for p in 0..opts.pages {
        let row = &ROWS[order[p % ROWS.len()]];
        let mut prng = Rng::new(opts.seed.wrapping_mul(1_000_003).wrapping_add(p as u64));
        let page = synth_page(&mut a, p, row, &mut prng);
        a.pages.push(page);
    }
    a
}

fn synth_page(a: &mut Archive, p: usize, row: &Row, rng: &mut Rng) -> Page {
    let jitter = rng.uniform(0.85, 1.15);
    let n = ((row.objects * jitter).round() as usize).max(3);
    let total = row.text + row.jscss + row.images;
    let n_text = ((n as f64 * row.text / total).round() as usize).clamp(1, n);
    let n_jscss = ((n as f64 * row.jscss / total).round() as usize).min(n - n_text);
    let n_rest = n - n_text - n_jscss;
    let n_css = if n_jscss == 0 {
        0
    } else {
        ((n_jscss as f64 * 0.4).round() as usize).max(1)
    };
    let n_js = n_jscss - n_css;
    let n_font = if n_css > 0 {
        n_rest.min(((n_rest as f64 * 0.02).round() as usize).min(2))
    } else {
        0
    };
    let n_img = ((n_rest - n_font) as f64 * 0.9).round() as usize;
    let n_other = n_rest - n_font - n_img;
    let n_iframe = (n_text - 1).div_ceil(2);
    let n_json = n_text - 1 - n_iframe;
    let n_dom = ((row.domains * jitter).round() as usize).clamp(1, n);

    let site = format!("site{p}");
    let domains: Vec<String> = (0..n_dom)
        .map(|d| match d {
            0 => format!("www.{site}.example"),
            1 => format!("static.{site}.example"),
            2 => format!("img.{site}-cdn.example"),
            d if d % 3 == 0 => format!("t{d}.analytics{}.example", d % 5),
            d if d % 3 == 1 => format!("ads{d}.adnet{}.example", d % 4),
            d => format!("cdn{d}.{site}-cdn.example"),
        })
        .collect();
    // Object sizes: log-normal per type, scaled to the row's bytes.
    let mut subs = vec![Sub::Root];
    for (s, k) in [
        (Sub::Css, n_css),
        (Sub::Js, n_js),
        (Sub::Iframe, n_iframe),
        (Sub::Img, n_img),
        (Sub::Font, n_font),
        (Sub::Json, n_json),
        (Sub::Other, n_other),
    ] {
        subs.extend(std::iter::repeat_n(s, k));
    }
    let raw: Vec<f64> = subs
        .iter()
        .map(|s| rng.lognormal(s.median(), 0.9).clamp(200.0, 2_000_000.0))
        .collect();
    let target = row.size_kb * 1024.0 * jitter;
    let scale = target / raw.iter().sum::<f64>();
    let mut nodes: Vec<Node> = Vec::new();
    for (i, s) in subs.iter().enumerate() {
        // First-party domains carry the root, CSS and most scripts; the rest spread out.
        let domain = match s {
            Sub::Root => 0,
            _ if n_dom == 1 => 0,
            Sub::Css | Sub::Font => rng.range(0, n_dom.min(2)),
            _ if rng.chance(0.35) => rng.range(0, n_dom.min(3)),
            _ => rng.range(1, n_dom),
        };
        let name = rng.hex(10);
        let url = format!("https://{}{}", domains[domain], s.path(&name));
        nodes.push(Node {
            sub: *s,
            url,
            domain,
            size: ((raw[i] * scale) as usize).max(120),
            parent: None,
            after_ms: None,
        });
    }
    // The discovery graph.
    let of = |nodes: &Vec<Node>, s: Sub| -> Vec<usize> {
        (0..nodes.len()).filter(|&i| nodes[i].sub == s).collect()
    };
    let (css, js) = (of(&nodes, Sub::Css), of(&nodes, Sub::Js));
    #[allow(clippy::needless_range_loop)] // the match reads other nodes too
    for i in 1..nodes.len() {
        let (parent, after) = match nodes[i].sub {
            Sub::Css if i != css[0] && rng.chance(0.2) => (css[0], None),
            Sub::Js if !js.is_empty() && i != js[0] && rng.chance(0.3) => {
                let earlier: Vec<usize> = js.iter().copied().filter(|&j| j < i).collect();
                (*rng.pick(&earlier), Some(rng.range(5, 50) as u32))
            }
            Sub::Img if !css.is_empty() && rng.chance(0.2) => (*rng.pick(&css), None),
            Sub::Img if !js.is_empty() && rng.chance(0.1) => {
                (*rng.pick(&js), Some(rng.range(10, 100) as u32))
            }
            Sub::Font => (*rng.pick(&css), None),
            Sub::Json | Sub::Other if !js.is_empty() => {
                (*rng.pick(&js), Some(rng.range(5, 80) as u32))
            }
            _ => (0, None),
        };
        nodes[i].parent = Some(parent);
        nodes[i].after_ms = after;
    }
    // Cookies per domain (first-party domains and ad networks set them).
    let cookies: Vec<Option<String>> = (0..n_dom)
        .map(|d| {
            (d < 3 || rng.chance(0.5)).then(|| {
                let crumbs = rng.range(1, 5);
                (0..crumbs)
                    .map(|_| {
                        let (nl, vl) = (rng.range(3, 8), rng.range(16, 48));
                        format!("{}={}", rng.hex(nl), rng.hex(vl))
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            })
        })
        .collect();
    let servers = [
        "Apache",
        "nginx",
        "ECS (dca/24A4)",
        "Microsoft-IIS/7.5",
        "AmazonS3",
        "gws",
    ];
    let base = a.objects.len();
    let mut page_objects = Vec::with_capacity(nodes.len());
    let bodies = render_bodies(&nodes, rng);
    for (i, node) in nodes.iter().enumerate() {
        let (body, offset_in_parent) = (&bodies.0[i], bodies.1[i]);
        let discovery = match (node.parent, node.after_ms) {
            (None, _) => Discovery::Root,
            (Some(pa), Some(ms)) => Discovery::Computed {
                parent: base + pa,
                after_ms: ms,
            },
            (Some(pa), None) => Discovery::Parsed {
                parent: base + pa,
                offset: offset_in_parent,
            },
        };
        let mut req = vec![
            ("user-agent".to_string(), "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36".to_string()),
            ("accept".to_string(), accept_for(node.sub).to_string()),
            ("accept-encoding".to_string(), "gzip, deflate, br".to_string()),
            ("accept-language".to_string(), "en-US,en;q=0.9".to_string()),
        ];
        if let Some(pa) = node.parent {
            req.push(("referer".into(), nodes[pa].url.clone()));
        }
        if let Some(c) = &cookies[node.domain] {
            req.push(("cookie".into(), c.clone()));
        }
        let dynamic = matches!(node.sub, Sub::Root | Sub::Json | Sub::Iframe);
        let mut resp = vec![
            (
                "date".to_string(),
                "Tue, 05 Mar 2013 10:00:00 GMT".to_string(),
            ),
            (
                "server".to_string(),
                servers[node.domain % servers.len()].to_string(),
            ),
            (
                "content-type".to_string(),
                node.sub.content_type().to_string(),
            ),
            (
                "cache-control".to_string(),
                if dynamic {
                    "private, no-cache".into()
                } else {
                    format!("public, max-age={}", rng.range(3600, 31_536_000))
                },
            ),
        ];
        if !dynamic {
            resp.push(("etag".into(), format!("\"{}\"", rng.hex(16))));
            resp.push((
                "last-modified".into(),
                "Mon, 04 Mar 2013 08:30:00 GMT".into(),
            ));
        }
        if matches!(
            node.sub,
            Sub::Root | Sub::Css | Sub::Js | Sub::Json | Sub::Iframe
        ) {
            resp.push(("vary".into(), "Accept-Encoding".into()));
        }
        if node.sub == Sub::Root || (cookies[node.domain].is_some() && rng.chance(0.05)) {
            resp.push((
                "set-cookie".into(),
                format!(
                    "sid={}; path=/; domain={}",
                    rng.hex(32),
                    domains[node.domain]
                ),
            ));
        }
        let o = Object {
            id: 0,
            url: node.url.clone(),
            method: "GET".into(),
            status: 200,
            request_headers: req,
            response_headers: resp,
            body: BodySource::Synthetic { size: body.len() },
            content_type: node.sub.content_type().into(),
            content_encoding: None,
            think_ms: if dynamic {
                rng.range(5, 40) as u32
            } else {
                rng.range(0, 3) as u32
            },
            kind: node.sub.kind(),
            discovery,
        };
        page_objects.push(a.add_object(o, Some(body.clone())));
    }
    Page {
        name: format!("{p:02}-{}", row.kind),
        root: base,
        objects: page_objects,
    }
}

fn accept_for(s: Sub) -> &'static str {
    match s {
        Sub::Root | Sub::Iframe => {
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
        }
        Sub::Css => "text/css,*/*;q=0.1",
        Sub::Img => "image/avif,image/webp,image/apng,image/*,*/*;q=0.8",
        Sub::Json => "application/json, text/plain, */*",
        _ => "*/*",
    }
}

const WORDS: [&str; 16] = [
    "speedy", "latency", "stream", "priority", "window", "header", "session", "packet", "browser",
    "page", "load", "network", "mobile", "radio", "server", "client",
];

fn filler_text(rng: &mut Rng, n: usize) -> String {
    let mut s = String::with_capacity(n + 16);
    while s.len() < n {
        s.push_str(WORDS[rng.range(0, WORDS.len())]);
        s.push(' ');
    }
    s.truncate(n);
    s
}

/// Renders every body; returns the bodies and, per node, the offset in its parent's body
/// where the reference to it ends.
fn render_bodies(nodes: &[Node], rng: &mut Rng) -> (Vec<Bytes>, Vec<usize>) {
    let mut offsets = vec![0usize; nodes.len()];
    let mut bodies = vec![Bytes::new(); nodes.len()];
    let children = |p: usize, computed: bool| -> Vec<usize> {
        (0..nodes.len())
            .filter(|&i| nodes[i].parent == Some(p) && nodes[i].after_ms.is_some() == computed)
            .collect()
    };
    for (i, node) in nodes.iter().enumerate() {
        let parsed = children(i, false);
        let computed = children(i, true);
        let body: Vec<u8> = match node.sub {
            Sub::Root => render_html(nodes, i, &parsed, rng, &mut offsets),
            Sub::Css => render_css(nodes, i, &parsed, rng, &mut offsets),
            Sub::Js => render_js(nodes, i, &computed, rng),
            Sub::Iframe => {
                let mut s = String::from("<!doctype html><html><body><p>");
                let n = node.size.saturating_sub(40);
                s.push_str(&filler_text(rng, n));
                s.push_str("</p></body></html>");
                s.into_bytes()
            }
            Sub::Json => {
                let mut s = String::from("{\"items\":[");
                while s.len() + 40 < node.size {
                    let _ = write!(
                        s,
                        "{{\"id\":\"{}\",\"v\":{}}},",
                        rng.hex(8),
                        rng.range(0, 100_000)
                    );
                }
                s.push_str("{\"id\":\"end\",\"v\":0}]}");
                s.into_bytes()
            }
            Sub::Img => gif(node.size, rng),
            Sub::Font | Sub::Other => {
                crate::model::synthetic_body(rng.range(0, 1 << 30), node.size).to_vec()
            }
        };
        bodies[i] = Bytes::from(body);
    }
    (bodies, offsets)
}

fn render_html(
    nodes: &[Node],
    me: usize,
    parsed: &[usize],
    rng: &mut Rng,
    offsets: &mut [usize],
) -> Vec<u8> {
    let mut s = String::from("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>speedy synthetic page</title>\n");
    let head: Vec<usize> = parsed
        .iter()
        .copied()
        .filter(|&c| nodes[c].sub == Sub::Css || (nodes[c].sub == Sub::Js && c % 2 == 0))
        .collect();
    let body_refs: Vec<usize> = parsed
        .iter()
        .copied()
        .filter(|c| !head.contains(c))
        .collect();
    for &c in &head {
        match nodes[c].sub {
            Sub::Css => {
                let _ = writeln!(s, "<link rel=\"stylesheet\" href=\"{}\">", nodes[c].url);
            }
            _ => {
                let _ = write!(s, "<script src=\"{}\"></script>", nodes[c].url);
                s.push('\n');
            }
        }
        offsets[c] = s.trim_end().len();
    }
    s.push_str("</head>\n<body>\n");
    // One element per image and font that the page's style sheets reference, each styled
    // by its own rule (see `render_css`): a browser fetches a background or a font only
    // when an element uses it, and of rules on one element only the winner counts.
    for (c, n) in nodes.iter().enumerate() {
        let from_css = n.parent.is_some_and(|pa| nodes[pa].sub == Sub::Css);
        match n.sub {
            Sub::Img if from_css => {
                let _ = writeln!(s, "<div class=\"{}\"></div>", css_class(c));
            }
            Sub::Font if from_css => {
                let _ = writeln!(s, "<div class=\"{}\">speedy</div>", css_class(c));
            }
            _ => {}
        }
    }
    let room = nodes[me]
        .size
        .saturating_sub(s.len() + body_refs.len() * 90 + 20);
    let per = room / (body_refs.len() + 1);
    for &c in &body_refs {
        let _ = writeln!(s, "<p>{}</p>", filler_text(rng, per));
        match nodes[c].sub {
            Sub::Img => {
                let _ = write!(s, "<img src=\"{}\" alt=\"\">", nodes[c].url);
            }
            Sub::Iframe => {
                let _ = write!(s, "<iframe src=\"{}\"></iframe>", nodes[c].url);
            }
            Sub::Js => {
                let _ = write!(s, "<script src=\"{}\"></script>", nodes[c].url);
            }
            _ => {
                let _ = write!(s, "<link rel=\"stylesheet\" href=\"{}\">", nodes[c].url);
            }
        }
        offsets[c] = s.len();
        s.push('\n');
    }
    let _ = write!(s, "<p>{}</p>\n</body>\n</html>\n", filler_text(rng, per));
    s.into_bytes()
}

fn render_css(
    nodes: &[Node],
    me: usize,
    parsed: &[usize],
    rng: &mut Rng,
    offsets: &mut [usize],
) -> Vec<u8> {
    let mut s = String::new();
    for &c in parsed.iter().filter(|&&c| nodes[c].sub == Sub::Css) {
        let _ = write!(s, "@import url(\"{}\");", nodes[c].url);
        offsets[c] = s.len();
        s.push('\n');
    }
    // Each font and background styles its own element of the root document (`render_html`)
    // so that a browser really fetches every one of them.
    for &c in parsed.iter().filter(|&&c| nodes[c].sub == Sub::Font) {
        let class = css_class(c);
        let _ = write!(
            s,
            "@font-face{{font-family:\"{class}\";src:url(\"{}\") format(\"woff2\");}}",
            nodes[c].url
        );
        offsets[c] = s.len();
        let _ = writeln!(s, "\n.{class}{{font-family:\"{class}\",sans-serif}}");
    }
    for &c in parsed.iter().filter(|&&c| nodes[c].sub == Sub::Img) {
        let _ = write!(
            s,
            ".{}{{background-image:url(\"{}\")}}",
            css_class(c),
            nodes[c].url
        );
        offsets[c] = s.len();
        s.push('\n');
    }
    while s.len() < nodes[me].size {
        let _ = writeln!(
            s,
            ".c{}{{margin:{}px;padding:{}px;color:#{}}}",
            rng.hex(6),
            rng.range(0, 20),
            rng.range(0, 20),
            rng.hex(3)
        );
    }
    s.into_bytes()
}

/// The class (and font family) of the element that uses node `c` from CSS.
fn css_class(c: usize) -> String {
    format!("s{c}")
}

fn render_js(nodes: &[Node], me: usize, computed: &[usize], rng: &mut Rng) -> Vec<u8> {
    let mut s = String::from("(function(){\n");
    for &c in computed {
        let (url, ms) = (&nodes[c].url, nodes[c].after_ms.unwrap_or(0));
        let load = match nodes[c].sub {
            Sub::Js => format!("var e=document.createElement('script');e.src='{url}';document.head.appendChild(e);"),
            Sub::Img => format!("var i=new Image();i.src='{url}';(window.__keep=window.__keep||[]).push(i);"),
            _ => format!("fetch('{url}',{{credentials:'include'}}).then(function(r){{return r.arrayBuffer();}});"),
        };
        let _ = writeln!(s, "setTimeout(function(){{{load}}},{ms});");
    }
    while s.len() + 8 < nodes[me].size {
        let _ = writeln!(
            s,
            "function f{}(a){{return a*{}+{};}}",
            rng.hex(8),
            rng.range(1, 1000),
            rng.range(0, 1000)
        );
    }
    s.push_str("})();\n");
    s.into_bytes()
}

/// A valid 1×1 GIF padded to `size` bytes with comment-extension blocks.
fn gif(size: usize, rng: &mut Rng) -> Vec<u8> {
    let mut v = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00".to_vec();
    let tail: &[u8] = b"\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02\x44\x01\x00\x3b";
    let mut pad = size.saturating_sub(v.len() + tail.len() + 3);
    if pad > 0 {
        v.extend_from_slice(&[0x21, 0xfe]);
        while pad > 0 {
            let n = pad.clamp(1, 255);
            v.push(n as u8);
            v.extend((0..n).map(|_| b'a' + (rng.next_u64() % 26) as u8));
            pad = pad.saturating_sub(n + 1);
        }
        v.push(0);
    }
    v.extend_from_slice(tail);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_deterministic_for_a_seed() {
        let a = synthesize(SynthOptions { pages: 3, seed: 7 });
        let b = synthesize(SynthOptions { pages: 3, seed: 7 });
        assert_eq!(a.objects, b.objects);
        assert_eq!(a.bodies, b.bodies);
        let c = synthesize(SynthOptions { pages: 3, seed: 8 });
        assert_ne!(a.objects, c.objects);
    }

    #[test]
    fn matches_the_calibration_table_on_average() {
        let a = synthesize(SynthOptions { pages: 40, seed: 1 });
        let objs: f64 = a.pages.iter().map(|p| p.objects.len() as f64).sum::<f64>() / 40.0;
        let kb: f64 = a
            .pages
            .iter()
            .map(|p| {
                p.objects
                    .iter()
                    .map(|&o| a.objects[o].body.size())
                    .sum::<usize>() as f64
                    / 1024.0
            })
            .sum::<f64>()
            / 40.0;
        let table_objs = ROWS.iter().map(|r| r.objects).sum::<f64>() / 20.0;
        let table_kb = ROWS.iter().map(|r| r.size_kb).sum::<f64>() / 20.0;
        assert!(
            (objs / table_objs - 1.0).abs() < 0.1,
            "objects per page {objs} vs table {table_objs}"
        );
        assert!(
            (kb / table_kb - 1.0).abs() < 0.15,
            "KB per page {kb} vs table {table_kb}"
        );
    }

    #[test]
    fn references_sit_at_their_recorded_offsets() {
        let a = synthesize(SynthOptions { pages: 5, seed: 3 });
        a.validate().unwrap();
        for o in &a.objects {
            if let Discovery::Parsed { parent, offset } = o.discovery {
                let body = a.body(parent);
                let upto = std::str::from_utf8(&body[..offset]).unwrap();
                assert!(
                    upto.ends_with(&format!("{}\">", o.url))
                        || upto.ends_with(&format!("{}\");", o.url))
                        || upto.ends_with(&format!("{}\")}}", o.url))
                        || upto.ends_with(&format!("{}\") format(\"woff2\");}}", o.url))
                        || upto.ends_with("></script>")
                        || upto.ends_with("alt=\"\">")
                        || upto.ends_with("></iframe>"),
                    "{} not referenced at {offset} in {}",
                    o.url,
                    a.objects[parent].url
                );
                assert!(upto.contains(&o.url));
            }
            if let Discovery::Computed { parent, .. } = o.discovery {
                let body = a.body(parent);
                assert!(std::str::from_utf8(&body).unwrap().contains(&o.url));
            }
        }
    }

    #[test]
    fn gifs_have_the_requested_size_and_are_well_formed() {
        let mut r = Rng::new(1);
        for size in [40, 100, 300, 5000] {
            let g = gif(size, &mut r);
            assert!(g.starts_with(b"GIF89a") && g.ends_with(b"\x3b"));
            assert!(
                (g.len() as i64 - size as i64).abs() <= 3,
                "{} vs {size}",
                g.len()
            );
        }
    }
}
