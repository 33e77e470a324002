//! The synthetic corpus: pages calibrated only to published page statistics, never to
//! load results. A [`Calibration`] names the source (`cellular-2013`, the default: the
//! cellular study's 20 pages of lab-facts §4; `web-2010`: Google's 2010 web metrics;
//! `web-2025`: the HTTP Archive Web Almanac 2024) and states its assumptions.
//!
//! Each page copies one row of its calibration (rows are dealt in a seeded order) with ±15%
//! jitter; object sizes are log-normal per type, scaled so the page's bytes (and, where the
//! source gives them, each type's bytes) match the row. Bodies are real: HTML that links its
//! CSS, scripts, images and iframes; CSS with `@import`, `@font-face` and `url()` images;
//! scripts that load their children after a `setTimeout` equal to the recorded compute
//! delay; GIFs padded with comment blocks. Assumptions common to every calibration (stated
//! here, not tuned to any result): 30% of scripts, 10% of images and all XHRs/other are
//! script-initiated; 20% of images and every font are referenced from CSS.

mod calibration;
mod headers;
use headers::headers_of;

pub use calibration::{calibration, Calibration, CALIBRATIONS};

use crate::model::{Archive, BodySource, Discovery, Object, ObjectType, Page};
use crate::rng::Rng;
use bytes::Bytes;
use calibration::{Mix, Row};
use std::fmt::Write;

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

/// `Server` headers, one per host in turn.
const SERVERS: [&str; 6] = [
    "Apache",
    "nginx",
    "ECS (dca/24A4)",
    "Microsoft-IIS/7.5",
    "AmazonS3",
    "gws",
];

/// Header pairs as the archive records them.
type Headers = Vec<(String, String)>;

struct Node {
    sub: Sub,
    url: String,
    domain: usize,
    size: usize,
    parent: Option<usize>,
    after_ms: Option<u32>,
}

/// Generates the corpus with the default calibration (`cellular-2013`).
pub fn synthesize(opts: SynthOptions) -> Archive {
    synthesize_calibrated(opts, &CALIBRATIONS[0])
}

/// Generates the corpus from the rows of `cal`.
pub fn synthesize_calibrated(opts: SynthOptions, cal: &Calibration) -> Archive {
    let flag = if std::ptr::eq(cal, &CALIBRATIONS[0]) {
        String::new()
    } else {
        format!(" --calibration {}", cal.name)
    };
    let mut a = Archive::new(&format!(
        "speedy corpus synth --pages {} --seed {}{flag}",
        opts.pages, opts.seed
    ));
    let mut rng = Rng::new(opts.seed);
    let mut order: Vec<usize> = (0..cal.rows.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.range(0, i + 1));
    }
    for p in 0..opts.pages {
        let row = &cal.rows[order[p % cal.rows.len()]];
        let mut prng = Rng::new(opts.seed.wrapping_mul(1_000_003).wrapping_add(p as u64));
        let page = synth_page(&mut a, p, row, &mut prng);
        a.pages.push(page);
    }
    a
}

/// What one page will hold: objects per type, hosts, and byte targets.
struct Plan {
    /// Object types in document order (the root first).
    subs: Vec<Sub>,
    hosts: usize,
    /// The page's bytes.
    bytes: f64,
    /// Bytes per type where the source gives them; other types share the rest.
    typed: Vec<(Sub, f64)>,
}

fn plan(row: &Row, rng: &mut Rng) -> Plan {
    let jitter = rng.uniform(0.85, 1.15);
    let n = ((row.objects * jitter).round() as usize).max(3);
    let (n_css, n_js, n_img, n_font, n_rest, typed) = match row.mix {
        Mix::Classes {
            text,
            jscss,
            images,
        } => {
            let total = text + jscss + images;
            let n_text = ((n as f64 * text / total).round() as usize).clamp(1, n);
            let n_jscss = ((n as f64 * jscss / total).round() as usize).min(n - n_text);
            let n_other = n - n_text - n_jscss;
            let n_css = if n_jscss == 0 {
                0
            } else {
                ((n_jscss as f64 * 0.4).round() as usize).max(1)
            };
            let n_font = if n_css > 0 {
                n_other.min(((n_other as f64 * 0.02).round() as usize).min(2))
            } else {
                0
            };
            let n_img = ((n_other - n_font) as f64 * 0.9).round() as usize;
            // Text beyond the root, then the opaque rest of images/other.
            let rest = (n_text - 1, n_other - n_font - n_img);
            (n_css, n_jscss - n_css, n_img, n_font, rest, Vec::new())
        }
        Mix::ByType {
            images,
            scripts,
            css,
            fonts,
        } => {
            let f = n as f64 / row.objects;
            let mut left = n - 1;
            let mut take = |k: f64| {
                let k = ((k * f).round() as usize).min(left);
                left -= k;
                k
            };
            let (n_img, n_js, n_css) = (take(images.0), take(scripts.0), take(css.0));
            let n_font = if n_css > 0 { take(fonts.0) } else { 0 };
            let typed = vec![
                (Sub::Img, images.1),
                (Sub::Js, scripts.1),
                (Sub::Css, css.1),
                (Sub::Font, fonts.1),
            ]
            .into_iter()
            .map(|(s, kb)| (s, kb * 1024.0 * jitter))
            .collect();
            // The rest: two thirds text (iframes, XHRs), one third opaque other.
            let other = left / 3;
            (n_css, n_js, n_img, n_font, (left - other, other), typed)
        }
    };
    let n_iframe = n_rest.0.div_ceil(2);
    let n_json = n_rest.0 - n_iframe;
    let mut subs = vec![Sub::Root];
    for (s, k) in [
        (Sub::Css, n_css),
        (Sub::Js, n_js),
        (Sub::Iframe, n_iframe),
        (Sub::Img, n_img),
        (Sub::Font, n_font),
        (Sub::Json, n_json),
        (Sub::Other, n_rest.1),
    ] {
        subs.extend(std::iter::repeat_n(s, k));
    }
    Plan {
        hosts: ((row.domains * jitter).round() as usize).clamp(1, subs.len()),
        subs,
        bytes: row.size_kb * 1024.0 * jitter,
        typed,
    }
}

/// Object sizes: log-normal per type, each typed group scaled to its bytes and the rest
/// to what remains of the page's.
fn sizes(plan: &Plan, rng: &mut Rng) -> Vec<usize> {
    let raw: Vec<f64> = plan
        .subs
        .iter()
        .map(|s| rng.lognormal(s.median(), 0.9).clamp(200.0, 2_000_000.0))
        .collect();
    let group = |s: Sub| plan.typed.iter().find(|(t, _)| *t == s).map(|(_, b)| *b);
    let typed_bytes: f64 = plan
        .typed
        .iter()
        .filter(|(t, _)| plan.subs.contains(t))
        .map(|(_, b)| b)
        .sum();
    let untyped_raw: f64 = (0..raw.len())
        .filter(|&i| group(plan.subs[i]).is_none())
        .map(|i| raw[i])
        .sum();
    let rest_scale = (plan.bytes - typed_bytes).max(0.0) / untyped_raw.max(1.0);
    (0..raw.len())
        .map(|i| {
            let s = plan.subs[i];
            let scale = match group(s) {
                Some(b) => {
                    let sum: f64 = (0..raw.len())
                        .filter(|&j| plan.subs[j] == s)
                        .map(|j| raw[j])
                        .sum();
                    b / sum
                }
                None => rest_scale,
            };
            ((raw[i] * scale) as usize).max(120)
        })
        .collect()
}

/// Generates page `p` from `row`: plans it, places its objects on hosts, links the
/// discovery graph, sets cookies and adds the objects with their bodies to `a`.
fn synth_page(a: &mut Archive, p: usize, row: &Row, rng: &mut Rng) -> Page {
    let plan = plan(row, rng);
    let domains = host_names(p, plan.hosts);
    let sizes = sizes(&plan, rng);
    let placed = place(&plan, rng);
    let mut nodes: Vec<Node> = Vec::new();
    for ((s, size), domain) in plan.subs.iter().zip(sizes).zip(placed) {
        let name = rng.hex(10);
        let url = format!("https://{}{}", domains[domain], s.path(&name));
        nodes.push(Node {
            sub: *s,
            url,
            domain,
            size,
            parent: None,
            after_ms: None,
        });
    }
    link_discovery(&mut nodes, rng);
    // Drawn even when the row sizes the cookies, so later draws stay where they were.
    let cookies = random_cookies(plan.hosts, rng);
    let cookies = match row.request_header_bytes {
        Some(mean) => sized_cookies(mean, &nodes, &domains, rng),
        None => cookies,
    };
    let base = a.objects.len();
    let page_objects = add_objects(a, &nodes, &cookies, &domains, rng);
    Page {
        name: format!("{p:02}-{}", row.kind),
        root: base,
        objects: page_objects,
    }
}

/// The host names of page `p`'s `n` hosts: the site's own `www`, `static` and CDN hosts
/// first, then analytics, ad networks and more CDNs in turn.
fn host_names(p: usize, n: usize) -> Vec<String> {
    let site = format!("site{p}");
    (0..n)
        .map(|d| match d {
            0 => format!("www.{site}.example"),
            1 => format!("static.{site}.example"),
            2 => format!("img.{site}-cdn.example"),
            d if d % 3 == 0 => format!("t{d}.analytics{}.example", d % 5),
            d if d % 3 == 1 => format!("ads{d}.adnet{}.example", d % 4),
            d => format!("cdn{d}.{site}-cdn.example"),
        })
        .collect()
}

/// The host of each planned object: first-party hosts carry the root, CSS and most
/// scripts; the rest spread out. Every planned host serves something (the source counts
/// hosts that served): a host left empty takes an object from the most crowded host other
/// than the root's.
fn place(plan: &Plan, rng: &mut Rng) -> Vec<usize> {
    let n_dom = plan.hosts;
    let mut placed: Vec<usize> = plan
        .subs
        .iter()
        .map(|s| match s {
            Sub::Root => 0,
            _ if n_dom == 1 => 0,
            Sub::Css | Sub::Font => rng.range(0, n_dom.min(2)),
            _ if rng.chance(0.35) => rng.range(0, n_dom.min(3)),
            _ => rng.range(1, n_dom),
        })
        .collect();
    for d in 0..n_dom {
        if placed.contains(&d) {
            continue;
        }
        let mut count = vec![0usize; n_dom];
        for &p in &placed {
            count[p] += 1;
        }
        let movable = (1..placed.len())
            .rev()
            .filter(|&i| !matches!(plan.subs[i], Sub::Css | Sub::Font) && count[placed[i]] > 1)
            .max_by_key(|&i| count[placed[i]]);
        if let Some(i) = movable {
            placed[i] = d;
        }
    }
    placed
}

/// The discovery graph: sets every non-root node's parent, and its compute delay when a
/// script (rather than a parser) finds it.
fn link_discovery(nodes: &mut [Node], rng: &mut Rng) {
    let of = |nodes: &[Node], s: Sub| -> Vec<usize> {
        (0..nodes.len()).filter(|&i| nodes[i].sub == s).collect()
    };
    let (css, js) = (of(nodes, Sub::Css), of(nodes, Sub::Js));
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
}

/// Cookies per host when the source gives no request sizes: the first-party hosts and
/// half of the others (ad networks) set one to four random crumbs.
fn random_cookies(n_dom: usize, rng: &mut Rng) -> Vec<Option<String>> {
    (0..n_dom)
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
        .collect()
}

/// Renders the nodes' bodies and adds one archive object per node (discovery, headers,
/// think time); returns the objects' ids in node order.
fn add_objects(
    a: &mut Archive,
    nodes: &[Node],
    cookies: &[Option<String>],
    domains: &[String],
    rng: &mut Rng,
) -> Vec<usize> {
    let base = a.objects.len();
    let mut page_objects = Vec::with_capacity(nodes.len());
    let bodies = render_bodies(nodes, rng);
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
        let (req, resp, dynamic) = headers_of(node, nodes, cookies, domains, rng);
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
            exec_ms: None,
            priority: None,
            recorded: None,
        };
        page_objects.push(a.add_object(o, Some(body.clone())));
    }
    page_objects
}

/// Cookies per host sized so that the host's requests average a size drawn log-normal
/// around `mean` bytes (kept within 200 B and 2 KB): the cookie makes up the difference
/// between that and the host's requests without one (their request line, `Host` and
/// the other headers, in HTTP/1.1 wire form). A host whose requests are already larger
/// gets no cookie.
fn sized_cookies(
    mean: f64,
    nodes: &[Node],
    domains: &[String],
    rng: &mut Rng,
) -> Vec<Option<String>> {
    const SIGMA: f64 = 0.4;
    let none = vec![None; domains.len()];
    let mut sum = vec![(0.0, 0usize); domains.len()];
    for node in nodes {
        // The headers without a cookie, from a copy of the generator (their draws do not
        // count).
        let (req, ..) = headers_of(node, nodes, &none, domains, &mut rng.clone());
        let s = &mut sum[node.domain];
        s.0 += request_wire_bytes(&node.url, &req) as f64;
        s.1 += 1;
    }
    // log-normal with this mean: median = mean / exp(sigma^2 / 2).
    let median = mean / (SIGMA * SIGMA / 2.0).exp();
    sum.iter()
        .map(|&(total, n)| {
            let target = rng.lognormal(median, SIGMA).clamp(200.0, 2048.0);
            let have = if n == 0 { target } else { total / n as f64 };
            // "cookie: " and its CRLF.
            let room = target - have - 10.0;
            (room >= 12.0)
                .then(|| {
                    let mut c = String::new();
                    while c.len() + 8 < room as usize {
                        if !c.is_empty() {
                            c.push_str("; ");
                        }
                        let (nl, vl) = (rng.range(3, 8), rng.range(16, 48));
                        c.push_str(&format!("{}={}", rng.hex(nl), rng.hex(vl)));
                    }
                    c.truncate(room as usize);
                    // A crumb cut before its `=` goes.
                    if c.rsplit("; ")
                        .next()
                        .is_some_and(|last| !last.contains('='))
                    {
                        c.truncate(c.rfind("; ").unwrap_or(0));
                    }
                    c
                })
                .filter(|c| !c.is_empty())
        })
        .collect()
}

/// The size of a GET for `url` with `headers` in HTTP/1.1 wire form: request line, `Host`,
/// each `name: value` line, the blank line.
pub(crate) fn request_wire_bytes(url: &str, headers: &[(String, String)]) -> usize {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    format!("GET /{path} HTTP/1.1\r\n").len()
        + format!("Host: {host}\r\n").len()
        + headers
            .iter()
            .map(|(n, v)| n.len() + v.len() + 4)
            .sum::<usize>()
        + 2
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

    /// Per-page means of a corpus: objects, KB, hosts, and (count, KB) of images,
    /// scripts and stylesheets.
    fn corpus_means(a: &Archive) -> [f64; 9] {
        let mut m = [0.0; 9];
        for p in &a.pages {
            let mut hosts = std::collections::HashSet::new();
            m[0] += p.objects.len() as f64;
            for &o in &p.objects {
                let obj = &a.objects[o];
                let kb = obj.body.size() as f64 / 1024.0;
                m[1] += kb;
                hosts.insert(obj.url.split('/').nth(2).unwrap().to_string());
                let k = match obj.kind {
                    ObjectType::Image => 3,
                    ObjectType::Script => 5,
                    ObjectType::Stylesheet => 7,
                    _ => continue,
                };
                m[k] += 1.0;
                m[k + 1] += kb;
            }
            m[2] += hosts.len() as f64;
        }
        m.map(|x| x / a.pages.len() as f64)
    }

    fn within(what: &str, cal: &str, got: f64, want: f64) {
        assert!(
            (got / want - 1.0).abs() <= 0.10,
            "{cal}: {what} per page {got:.1}, the source says {want:.1}"
        );
    }

    #[test]
    fn every_calibration_matches_its_source_means_within_10_percent() {
        for cal in CALIBRATIONS {
            let a = synthesize_calibrated(SynthOptions { pages: 50, seed: 1 }, cal);
            a.validate().unwrap();
            let m = corpus_means(&a);
            eprintln!("{}: {m:.1?}", cal.name);
            let (objects, kb, hosts) = cal.means();
            within("objects", cal.name, m[0], objects);
            for r in cal.rows {
                if let Some(want) = r.request_header_bytes {
                    let sizes: Vec<usize> = a
                        .objects
                        .iter()
                        .map(|o| request_wire_bytes(&o.url, &o.request_headers))
                        .collect();
                    let mean = sizes.iter().sum::<usize>() as f64 / sizes.len() as f64;
                    eprintln!(
                        "{}: request headers {mean:.0} B on average, {}-{}",
                        cal.name,
                        sizes.iter().min().unwrap(),
                        sizes.iter().max().unwrap()
                    );
                    within("request header bytes", cal.name, mean, want);
                }
            }
            within("KB", cal.name, m[1], kb);
            within("hosts", cal.name, m[2], hosts);
            for r in cal.rows {
                if let Mix::ByType {
                    images,
                    scripts,
                    css,
                    ..
                } = r.mix
                {
                    within("images", cal.name, m[3], images.0);
                    within("image KB", cal.name, m[4], images.1);
                    within("scripts", cal.name, m[5], scripts.0);
                    within("script KB", cal.name, m[6], scripts.1);
                    within("stylesheets", cal.name, m[7], css.0);
                    within("stylesheet KB", cal.name, m[8], css.1);
                }
            }
        }
    }

    #[test]
    fn the_default_calibration_is_the_cellular_study() {
        assert_eq!(CALIBRATIONS[0].name, "cellular-2013");
        let a = synthesize(SynthOptions { pages: 2, seed: 4 });
        let b = synthesize_calibrated(SynthOptions { pages: 2, seed: 4 }, &CALIBRATIONS[0]);
        assert_eq!(a.objects, b.objects);
        assert!(calibration("web-2010").is_ok());
        let e = calibration("web-1999").err().unwrap();
        assert!(e.contains("web-2010") && e.contains("web-1999"), "{e}");
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
