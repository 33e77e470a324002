//! A streaming HTML scanner, the loader's preload scanner: fed the document in pieces as
//! they arrive, it reports each subresource reference as soon as the tag holding it is
//! complete, with the byte offset where that tag ends.
//!
//! It tokenizes with `lol_html` (a streaming HTML parser), so references inside comments,
//! scripts, `<textarea>` and other raw text are not seen, attribute quoting and entities
//! follow the HTML rules, and a tag split over any number of pieces is reported once.
//!
//! What it looks for (the references a browser fetches while parsing):
//!
//! | element | attribute | type |
//! |---|---|---|
//! | `link rel=stylesheet` (not `alternate`) | `href` | stylesheet |
//! | `link rel=preload` / `modulepreload` | `href` | from `as` / script |
//! | `link rel=icon` | `href` | image |
//! | `script` (JavaScript or `module` type, not `nomodule`) | `src` | script |
//! | `img` | `src`, or the `1x` candidate of `srcset` | image |
//! | `input type=image` | `src` | image |
//! | `iframe`, `frame` | `src` | document |
//! | `embed` / `object` | `src` / `data` | other |
//! | `video` | `poster` | image |
//! | `body`, `table`, `td`, `th` | `background` | image |
//! | any element | `style` (CSS `url()`) | image |
//! | `style` element | its text (`@import`, `url()`) | stylesheet / image / font |
//! | `base` | `href` (changes the base URL of later references) | – |

use super::css::scan_css;
use speedy_archive::ObjectType;
use std::sync::{Arc, Mutex};

/// How a reference holds up the document's `DOMContentLoaded`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocking {
    /// It does not (images, async scripts, fonts, …).
    None,
    /// A classic script without `async`/`defer`: the parser waits for it.
    SyncScript,
    /// A `defer` or module script: runs before `DOMContentLoaded`.
    DeferScript,
    /// An `async` script.
    AsyncScript,
    /// A style sheet (blocks the scripts after it).
    Stylesheet,
}

/// A reference found in HTML.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HtmlRef {
    /// The reference as written (attribute value, unresolved).
    pub url: String,
    /// What it loads; `None` for `<base href>` (a new base URL, nothing to load) and for
    /// the `<body>` marker (`tag` = `"body"`, empty `url`), where the parser inserts the
    /// body.
    pub kind: Option<ObjectType>,
    /// Byte offset in the document just past the tag that holds it (for `<style>`
    /// contents, just past the reference in the style text).
    pub end: usize,
    /// The element (`img`, `script`, …).
    pub tag: &'static str,
    /// Its effect on `DOMContentLoaded`.
    pub blocking: Blocking,
}

struct NullSink;

impl lol_html::OutputSink for NullSink {
    fn handle_chunk(&mut self, _: &[u8]) {}
}

#[derive(Default)]
struct Shared {
    found: Vec<HtmlRef>,
    /// Text of the `<style>` element being read, and where it starts.
    style: Vec<u8>,
    style_start: Option<usize>,
}

/// The streaming scanner. Feed it with [`HtmlScanner::feed`], then call
/// [`HtmlScanner::finish`].
pub struct HtmlScanner {
    rw: Option<lol_html::send::HtmlRewriter<'static, NullSink>>,
    shared: Arc<Mutex<Shared>>,
    fed: usize,
}

impl Default for HtmlScanner {
    fn default() -> Self {
        Self::new()
    }
}

const SELECTOR: &str =
    "link, script, img, input, iframe, frame, embed, object, video, body, table, td, th, base, [style]";

impl HtmlScanner {
    /// A scanner for a new document.
    pub fn new() -> HtmlScanner {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (s1, s2) = (shared.clone(), shared.clone());
        let settings = lol_html::send::Settings::new_send()
            .with_strict(false)
            .append_element_content_handler(lol_html::element!(
                SELECTOR,
                move |el: &mut lol_html::send::Element<'_, '_>| {
                    let end = el.source_location().bytes().end;
                    let mut sh = s1.lock().expect("not poisoned");
                    on_element(el, end, &mut sh.found);
                    Ok(())
                }
            ))
            .append_element_content_handler(lol_html::text!("style", move |t| {
                let mut sh = s2.lock().expect("not poisoned");
                if sh.style_start.is_none() {
                    sh.style_start = Some(t.source_location().bytes().start);
                }
                sh.style.extend_from_slice(t.as_str().as_bytes());
                if t.last_in_text_node() {
                    let start = sh.style_start.take().unwrap_or(0);
                    let text = std::mem::take(&mut sh.style);
                    for r in scan_css(&text) {
                        sh.found.push(HtmlRef {
                            url: r.url,
                            kind: Some(r.kind),
                            end: start + r.end,
                            tag: "style",
                            blocking: if r.kind == ObjectType::Stylesheet {
                                Blocking::Stylesheet
                            } else {
                                Blocking::None
                            },
                        });
                    }
                }
                Ok(())
            }));
        HtmlScanner {
            rw: Some(lol_html::send::HtmlRewriter::new(settings, NullSink)),
            shared,
            fed: 0,
        }
    }

    /// Bytes fed so far.
    pub fn fed(&self) -> usize {
        self.fed
    }

    /// Feeds the next piece of the document; returns the references completed by it.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<HtmlRef> {
        self.fed += chunk.len();
        if let Some(rw) = &mut self.rw {
            if rw.write(chunk).is_err() {
                // Unparseable input: stop scanning (what was found stays found).
                self.rw = None;
            }
        }
        self.take()
    }

    /// Ends the document; returns any references completed by its end.
    pub fn finish(&mut self) -> Vec<HtmlRef> {
        if let Some(rw) = self.rw.take() {
            let _ = rw.end();
        }
        self.take()
    }

    fn take(&mut self) -> Vec<HtmlRef> {
        std::mem::take(&mut self.shared.lock().expect("not poisoned").found)
    }
}

fn attr(el: &lol_html::send::Element<'_, '_>, name: &str) -> Option<String> {
    el.get_attribute(name)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The `1x` (or lowest-density) candidate of a `srcset`, or its first `w` candidate.
fn srcset_pick(srcset: &str) -> Option<String> {
    let mut best: Option<(f32, &str)> = None;
    let mut first_w: Option<&str> = None;
    for cand in srcset.split(',') {
        let mut parts = cand.split_whitespace();
        let Some(url) = parts.next() else { continue };
        let desc = parts.next().unwrap_or("1x");
        if let Some(x) = desc.strip_suffix('x') {
            let d: f32 = x.parse().unwrap_or(1.0);
            // Prefer exactly 1x, then the smallest density above it, then the largest below.
            let score = if d >= 1.0 { d - 1.0 } else { 100.0 - d };
            if best.is_none_or(|(s, _)| score < s) {
                best = Some((score, url));
            }
        } else if first_w.is_none() {
            first_w = Some(url);
        }
    }
    best.map(|(_, u)| u).or(first_w).map(str::to_string)
}

fn is_js_type(t: &str) -> bool {
    let t = t.trim().to_ascii_lowercase();
    t.is_empty()
        || t == "module"
        || matches!(
            t.split(';').next().unwrap_or("").trim(),
            "text/javascript"
                | "application/javascript"
                | "application/x-javascript"
                | "text/ecmascript"
                | "application/ecmascript"
                | "text/jscript"
                | "text/livescript"
        )
}

/// Reports the references of element `el`, whose start tag ends at `end`: the `<body>`
/// marker, the element's own reference (see [`element_ref`]), then its `style`
/// attribute's `url()`s.
fn on_element(el: &lol_html::send::Element<'_, '_>, end: usize, out: &mut Vec<HtmlRef>) {
    let tag_name = el.tag_name();
    let mut push = |url: String, kind: Option<ObjectType>, tag: &'static str, b: Blocking| {
        out.push(HtmlRef {
            url,
            kind,
            end,
            tag,
            blocking: b,
        })
    };
    if tag_name == "body" {
        // A marker, not a reference: where the parser inserts `<body>`.
        push(String::new(), None, "body", Blocking::None);
    }
    if let Some(r) = element_ref(el, &tag_name) {
        push(r.url, r.kind, r.tag, r.blocking);
    }
    if let Some(style) = el.get_attribute("style") {
        for r in scan_css(style.as_bytes()) {
            push(r.url, Some(r.kind), "style-attr", Blocking::None);
        }
    }
}

/// A reference an element holds, before its place in the document is known.
struct ElementRef {
    url: String,
    kind: Option<ObjectType>,
    tag: &'static str,
    blocking: Blocking,
}

impl ElementRef {
    /// A reference that does not hold up `DOMContentLoaded`.
    fn plain(url: String, kind: Option<ObjectType>, tag: &'static str) -> ElementRef {
        ElementRef {
            url,
            kind,
            tag,
            blocking: Blocking::None,
        }
    }
}

/// The one reference element `el` (named `tag_name`) holds in its attributes, if any:
/// the table in the module's documentation, except the `style` attribute.
fn element_ref(el: &lol_html::send::Element<'_, '_>, tag_name: &str) -> Option<ElementRef> {
    let plain = |name: &str, kind: Option<ObjectType>, tag: &'static str| {
        attr(el, name).map(|u| ElementRef::plain(u, kind, tag))
    };
    match tag_name {
        "link" => link_ref(el),
        "script" => script_ref(el),
        "img" => el
            .get_attribute("srcset")
            .and_then(|s| srcset_pick(&s))
            .or_else(|| attr(el, "src"))
            .map(|u| ElementRef::plain(u, Some(ObjectType::Image), "img")),
        "input" => {
            let ty = el.get_attribute("type").unwrap_or_default();
            if !ty.eq_ignore_ascii_case("image") {
                return None;
            }
            plain("src", Some(ObjectType::Image), "input")
        }
        "iframe" => plain("src", Some(ObjectType::Document), "iframe"),
        "frame" => plain("src", Some(ObjectType::Document), "frame"),
        "embed" => plain("src", Some(ObjectType::Other), "embed"),
        "object" => plain("data", Some(ObjectType::Other), "object"),
        "video" => plain("poster", Some(ObjectType::Image), "video"),
        "body" | "table" | "td" | "th" => {
            plain("background", Some(ObjectType::Image), "background")
        }
        "base" => plain("href", None, "base"),
        _ => None,
    }
}

/// A `<link>`'s reference: a style sheet (not an alternate one), a preload (its type
/// from `as`), a module preload, or an icon; other relations load nothing here.
fn link_ref(el: &lol_html::send::Element<'_, '_>) -> Option<ElementRef> {
    let rel = el
        .get_attribute("rel")
        .unwrap_or_default()
        .to_ascii_lowercase();
    let rels: Vec<&str> = rel.split_ascii_whitespace().collect();
    let href = attr(el, "href")?;
    let (kind, blocking) = if rels.contains(&"stylesheet") && !rels.contains(&"alternate") {
        (ObjectType::Stylesheet, Blocking::Stylesheet)
    } else if rels.contains(&"preload") {
        let kind = match el.get_attribute("as").unwrap_or_default().as_str() {
            "style" => ObjectType::Stylesheet,
            "script" => ObjectType::Script,
            "font" => ObjectType::Font,
            "image" => ObjectType::Image,
            "fetch" => ObjectType::Xhr,
            "document" => ObjectType::Document,
            _ => ObjectType::Other,
        };
        (kind, Blocking::None)
    } else if rels.contains(&"modulepreload") {
        (ObjectType::Script, Blocking::None)
    } else if rels.contains(&"icon") {
        (ObjectType::Image, Blocking::None)
    } else {
        return None;
    };
    Some(ElementRef {
        url: href,
        kind: Some(kind),
        tag: "link",
        blocking,
    })
}

/// A `<script src>` the browser runs (JavaScript or a module, not `nomodule`), and how
/// it blocks: `async`, deferred (`defer` or a module), or the parser waits for it.
fn script_ref(el: &lol_html::send::Element<'_, '_>) -> Option<ElementRef> {
    let ty = el.get_attribute("type").unwrap_or_default();
    let src = attr(el, "src")?;
    if !is_js_type(&ty) || el.has_attribute("nomodule") {
        return None;
    }
    let module = ty.trim().eq_ignore_ascii_case("module");
    let blocking = if el.has_attribute("async") {
        Blocking::AsyncScript
    } else if module || el.has_attribute("defer") {
        Blocking::DeferScript
    } else {
        Blocking::SyncScript
    };
    Some(ElementRef {
        url: src,
        kind: Some(ObjectType::Script),
        tag: "script",
        blocking,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"<!DOCTYPE html>
<html><head>
<meta charset="utf-8">
<title>t</title>
<link rel="stylesheet" href="/css/main.css">
<link rel="alternate stylesheet" href="/css/alt.css">
<link rel="preload" as="font" href="/f.woff2" crossorigin>
<style>@import url("/css/imp.css"); body { background: url('/img/bg.png') }</style>
<script src="/js/sync.js"></script>
<script async src='/js/async.js'></script>
<script defer src=/js/defer.js></script>
<script type="text/template" src="/no-template.js"></script>
<script>document.write('<img src="/no-in-script.png">')</script>
<!-- <img src="/no-in-comment.png"> -->
</head>
<body background="/img/body.jpg">
<base href="http://other.example/base/">
<img src="rel.png" alt="x">
<img srcset="a-2x.png 2x, a-1x.png 1x" src="a.png">
<div style="background-image:url(div.png)">text</div>
<iframe src="frame.html"></iframe>
<textarea><img src="/no-in-textarea.png"></textarea>
<video poster="poster.jpg"></video>
<input type="image" src="btn.png">
<a href="/not-fetched.html">link</a>
</body></html>"#;

    fn want() -> Vec<(&'static str, Option<ObjectType>)> {
        use ObjectType::*;
        vec![
            ("/css/main.css", Some(Stylesheet)),
            ("/f.woff2", Some(Font)),
            ("/css/imp.css", Some(Stylesheet)),
            ("/img/bg.png", Some(Image)),
            ("/js/sync.js", Some(Script)),
            ("/js/async.js", Some(Script)),
            ("/js/defer.js", Some(Script)),
            ("/img/body.jpg", Some(Image)),
            ("http://other.example/base/", None),
            ("rel.png", Some(Image)),
            ("a-1x.png", Some(Image)),
            ("div.png", Some(Image)),
            ("frame.html", Some(Document)),
            ("poster.jpg", Some(Image)),
            ("btn.png", Some(Image)),
        ]
    }

    fn scan_in_chunks(doc: &[u8], size: usize) -> Vec<(HtmlRef, usize)> {
        let mut s = HtmlScanner::new();
        let mut out = Vec::new();
        for c in doc.chunks(size) {
            for r in s.feed(c) {
                out.push((r, s.fed()));
            }
        }
        for r in s.finish() {
            out.push((r, s.fed()));
        }
        out
    }

    /// Where the tag holding `url` ends in the document.
    fn tag_end(doc: &str, url: &str) -> usize {
        let at = doc.find(url).unwrap();
        at + doc[at..].find('>').unwrap() + 1
    }

    #[test]
    fn finds_references_at_their_offsets_whatever_the_chunking() {
        for size in [1, 2, 3, 7, 16, 64, 4096] {
            let mut got = scan_in_chunks(PAGE.as_bytes(), size);
            // One `<body>` marker, where the start tag ends; the rest are references.
            let body: Vec<usize> = got
                .iter()
                .filter(|(r, _)| r.tag == "body")
                .map(|(r, _)| r.end)
                .collect();
            let body_tag = PAGE.find("<body").unwrap();
            assert_eq!(body, [body_tag + PAGE[body_tag..].find('>').unwrap() + 1]);
            got.retain(|(r, _)| r.tag != "body");
            let urls: Vec<(&str, Option<ObjectType>)> =
                got.iter().map(|(r, _)| (r.url.as_str(), r.kind)).collect();
            assert_eq!(urls, want(), "chunk size {size}");
            for (r, fed) in &got {
                // Reported no later than needed, never before the tag is complete.
                assert!(r.end <= *fed, "{r:?} reported after {fed} bytes");
                if r.tag != "style" {
                    assert_eq!(r.end, tag_end(PAGE, &r.url), "{r:?}");
                    if size == 1 {
                        assert_eq!(*fed, r.end, "one byte at a time: found at its end");
                    }
                } else {
                    // Inside the style text: just past the reference.
                    let e = r.end;
                    assert!(
                        PAGE[..e].ends_with(&format!("{}\")", r.url))
                            || PAGE[..e].ends_with(&format!("{}')", r.url))
                            || PAGE[..e].ends_with(&format!("{})", r.url)),
                        "{r:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn classifies_blocking() {
        let got = scan_in_chunks(PAGE.as_bytes(), 4096);
        let b = |u: &str| got.iter().find(|(r, _)| r.url == u).unwrap().0.blocking;
        assert_eq!(b("/css/main.css"), Blocking::Stylesheet);
        assert_eq!(b("/js/sync.js"), Blocking::SyncScript);
        assert_eq!(b("/js/async.js"), Blocking::AsyncScript);
        assert_eq!(b("/js/defer.js"), Blocking::DeferScript);
        assert_eq!(b("rel.png"), Blocking::None);
    }

    #[test]
    fn picks_srcset_candidates() {
        assert_eq!(srcset_pick("a.png 2x, b.png"), Some("b.png".into()));
        assert_eq!(srcset_pick("a.png 3x, b.png 2x"), Some("b.png".into()));
        assert_eq!(srcset_pick("a.png 400w, b.png 800w"), Some("a.png".into()));
    }

    #[test]
    fn survives_garbage() {
        let mut s = HtmlScanner::new();
        let junk: Vec<u8> = (0..5000u32).map(|i| (i * 7919 % 251) as u8).collect();
        let _ = s.feed(&junk);
        let _ = s.feed(b"<img src=x.png>");
        let _ = s.finish();
    }
}
