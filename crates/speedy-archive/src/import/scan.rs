//! References in recorded bodies: HTML attributes, CSS `url()`/`@import`, script strings.

use super::urls::{normalize, resolve};
use super::{Rec, MAX_DECODED};
use std::collections::HashSet;
/// A reference found in a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Ref {
    /// Normalized absolute URL.
    pub(super) url: String,
    /// `Some(end offset)`: found by a parser (HTML attribute, CSS url()/@import); `None`:
    /// a string in a script.
    pub(super) offset: Option<usize>,
}

pub(super) fn find_ci(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || from >= hay.len() || hay.len() - from < needle.len() {
        return None;
    }
    (from..=hay.len() - needle.len())
        .find(|&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

pub(super) fn find_b(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if from >= hay.len() || hay.len() - from < needle.len() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

pub(super) fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest[1..].find(';').map(|e| e + 1).filter(|&e| e <= 10);
        let Some(end) = end else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let ent = &rest[1..end];
        let ch = match ent {
            "amp" => Some('&'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "lt" => Some('<'),
            "gt" => Some('>'),
            _ if ent.starts_with("#x") || ent.starts_with("#X") => {
                u32::from_str_radix(&ent[2..], 16)
                    .ok()
                    .and_then(char::from_u32)
            }
            _ if ent.starts_with('#') => ent[1..].parse().ok().and_then(char::from_u32),
            _ => None,
        };
        match ch {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// url() and @import references of CSS; offsets are where each reference ends.
pub(super) fn scan_css(css: &[u8], base: &str, shift: usize, out: &mut Vec<Ref>) {
    let mut i = 0;
    let n = css.len();
    while i < n {
        let c = css[i];
        if c == b'/' && css.get(i + 1) == Some(&b'*') {
            i = find_b(css, b"*/", i + 2).map_or(n, |e| e + 2);
            continue;
        }
        if (c == b'u' || c == b'U')
            && css.len() >= i + 4
            && css[i..i + 4].eq_ignore_ascii_case(b"url(")
        {
            let mut j = i + 4;
            while j < n && css[j].is_ascii_whitespace() {
                j += 1;
            }
            let (value, after) = if j < n && (css[j] == b'"' || css[j] == b'\'') {
                let q = css[j];
                let end = css[j + 1..]
                    .iter()
                    .position(|&x| x == q || x == b'\n')
                    .map_or(n, |p| j + 1 + p);
                (&css[j + 1..end], end + 1)
            } else {
                let end = css[j..]
                    .iter()
                    .position(|&x| x == b')')
                    .map_or(n, |p| j + p);
                (&css[j..end], end)
            };
            let close = css[after.min(n)..]
                .iter()
                .position(|&x| x == b')')
                .map_or(n, |p| after + p + 1);
            let v = String::from_utf8_lossy(value);
            if let Some(u) = resolve(base, v.trim()) {
                out.push(Ref {
                    url: normalize(&u),
                    offset: Some(shift + close.min(n)),
                });
            }
            i = close.max(i + 1);
            continue;
        }
        if c == b'@' && css.len() >= i + 7 && css[i..i + 7].eq_ignore_ascii_case(b"@import") {
            let mut j = i + 7;
            while j < n && css[j].is_ascii_whitespace() {
                j += 1;
            }
            if j < n && (css[j] == b'"' || css[j] == b'\'') {
                let q = css[j];
                let end = css[j + 1..]
                    .iter()
                    .position(|&x| x == q || x == b'\n')
                    .map_or(n, |p| j + 1 + p);
                let v = String::from_utf8_lossy(&css[j + 1..end]);
                if let Some(u) = resolve(base, v.trim()) {
                    out.push(Ref {
                        url: normalize(&u),
                        offset: Some(shift + (end + 1).min(n)),
                    });
                }
                i = end + 1;
                continue;
            }
            i = j;
            continue;
        }
        if c == b'"' || c == b'\'' {
            // Skip other strings (a "url(" inside one is not a reference).
            i = css[i + 1..]
                .iter()
                .position(|&x| x == c || x == b'\n')
                .map_or(n, |p| i + 2 + p);
            continue;
        }
        i += 1;
    }
}

/// String literals of a script that resolve to http(s) URLs (comments skipped).
pub(super) fn scan_js(js: &[u8], bases: &[&str], out: &mut Vec<Ref>) {
    let n = js.len();
    let mut i = 0;
    let mut seen = HashSet::new();
    while i < n {
        let c = js[i];
        if c == b'/' && js.get(i + 1) == Some(&b'/') {
            i = js[i..]
                .iter()
                .position(|&x| x == b'\n')
                .map_or(n, |p| i + p + 1);
            continue;
        }
        if c == b'/' && js.get(i + 1) == Some(&b'*') {
            i = find_b(js, b"*/", i + 2).map_or(n, |e| e + 2);
            continue;
        }
        if c == b'"' || c == b'\'' || c == b'`' {
            let mut j = i + 1;
            let mut s = Vec::new();
            while j < n && js[j] != c && (c == b'`' || js[j] != b'\n') {
                if js[j] == b'\\' && j + 1 < n {
                    j += 1;
                }
                s.push(js[j]);
                j += 1;
            }
            if !s.is_empty() && s.len() < 2048 && !s.iter().any(|b| b.is_ascii_whitespace()) {
                let lit = String::from_utf8_lossy(&s);
                for b in bases {
                    if let Some(u) = resolve(b, &lit) {
                        let u = normalize(&u);
                        if seen.insert(u.clone()) {
                            out.push(Ref {
                                url: u,
                                offset: None,
                            });
                        }
                    }
                }
            }
            i = j + 1;
            continue;
        }
        i += 1;
    }
}

/// (attribute, is a list like srcset) pairs that load something, per element.
pub(super) fn loading_attrs(tag: &str) -> &'static [(&'static str, bool)] {
    match tag {
        "script" | "iframe" | "frame" | "embed" | "audio" | "track" => &[("src", false)],
        "img" => &[("src", false), ("srcset", true)],
        "source" => &[("src", false), ("srcset", true)],
        "video" => &[("src", false), ("poster", false)],
        "input" => &[("src", false)],
        "object" => &[("data", false)],
        "body" | "table" | "td" | "th" => &[("background", false)],
        _ => &[],
    }
}

/// Reads the start tag at `lt` (`<` followed by a letter): its lower-case name, its
/// attributes (lower-case names, entities decoded) and the offset just past its `>`.
fn read_tag(html: &[u8], lt: usize) -> (String, Vec<(String, String)>, usize) {
    let n = html.len();
    let mut j = lt + 1;
    while j < n && (html[j].is_ascii_alphanumeric() || html[j] == b'-' || html[j] == b':') {
        j += 1;
    }
    let tag = String::from_utf8_lossy(&html[lt + 1..j]).to_ascii_lowercase();
    let mut attrs: Vec<(String, String)> = Vec::new();
    loop {
        while j < n && (html[j].is_ascii_whitespace() || html[j] == b'/') {
            j += 1;
        }
        if j >= n || html[j] == b'>' {
            break;
        }
        let ns = j;
        while j < n && !html[j].is_ascii_whitespace() && !matches!(html[j], b'=' | b'>' | b'/') {
            j += 1;
        }
        let name = String::from_utf8_lossy(&html[ns..j]).to_ascii_lowercase();
        while j < n && html[j].is_ascii_whitespace() {
            j += 1;
        }
        let mut value = String::new();
        if j < n && html[j] == b'=' {
            j += 1;
            while j < n && html[j].is_ascii_whitespace() {
                j += 1;
            }
            if j < n && (html[j] == b'"' || html[j] == b'\'') {
                let q = html[j];
                let e = html[j + 1..]
                    .iter()
                    .position(|&c| c == q)
                    .map_or(n, |p| j + 1 + p);
                value = String::from_utf8_lossy(&html[j + 1..e]).into_owned();
                j = (e + 1).min(n);
            } else {
                let s = j;
                while j < n && !html[j].is_ascii_whitespace() && html[j] != b'>' {
                    j += 1;
                }
                value = String::from_utf8_lossy(&html[s..j]).into_owned();
            }
        }
        if ns == j {
            j += 1;
        }
        attrs.push((name, decode_entities(&value)));
    }
    (tag, attrs, (j + 1).min(n))
}

/// References of an HTML document: attributes that load something (at the end of their
/// tag), CSS in `style` attributes and elements (parsed), strings in inline scripts.
pub(super) fn scan_html(html: &[u8], url: &str, out: &mut Vec<Ref>) {
    let mut base = url.to_string();
    let mut i = 0;
    while let Some(lt) = html[i..].iter().position(|&c| c == b'<').map(|p| p + i) {
        if let Some(next) = past_markup(html, lt) {
            i = next;
            continue;
        }
        let (name, attrs, end) = read_tag(html, lt);
        let tag = Tag { name, attrs, end };
        tag.refs(&mut base, out);
        i = tag.raw_text(html, &base, out).unwrap_or(tag.end);
        if i <= lt {
            i = lt + 1;
        }
    }
}

/// Where scanning resumes when the `<` at `lt` opens no start tag: past a comment, a
/// declaration, a processing instruction or an end tag, or just past a stray `<`;
/// `None` when a start tag opens there.
fn past_markup(html: &[u8], lt: usize) -> Option<usize> {
    let n = html.len();
    if html[lt..].starts_with(b"<!--") {
        return Some(find_b(html, b"-->", lt + 4).map_or(n, |e| e + 3));
    }
    let next = html.get(lt + 1).copied().unwrap_or(0);
    if next == b'!' || next == b'?' || next == b'/' {
        return Some(
            html[lt..]
                .iter()
                .position(|&c| c == b'>')
                .map_or(n, |p| lt + p + 1),
        );
    }
    if !next.is_ascii_alphabetic() {
        return Some(lt + 1);
    }
    None
}

/// A start tag as [`read_tag`] reads it.
struct Tag {
    /// Lower-case name.
    name: String,
    /// Attributes (lower-case names, entities decoded).
    attrs: Vec<(String, String)>,
    /// The offset just past its `>`.
    end: usize,
}

impl Tag {
    /// The value of attribute `name`, if the tag has it.
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(a, _)| a == name)
            .map(|(_, v)| v.as_str())
    }

    /// Records a reference to `v` (resolved against `base`) at the end of the tag.
    fn push(&self, base: &str, v: &str, out: &mut Vec<Ref>) {
        if let Some(u) = resolve(base, v) {
            out.push(Ref {
                url: normalize(&u),
                offset: Some(self.end),
            });
        }
    }

    /// The tag's own references, all at its end: a `<link>` whose `rel` loads something,
    /// the loading attributes of other elements, `url()`s in its `style` attribute. A
    /// `<base href>` changes `base` instead.
    fn refs(&self, base: &mut String, out: &mut Vec<Ref>) {
        match self.name.as_str() {
            "base" => {
                if let Some(u) = self.attr("href").and_then(|h| resolve(base, h)) {
                    *base = u;
                }
            }
            "link" => {
                let rel = self.attr("rel").unwrap_or("").to_ascii_lowercase();
                let loads = rel.split_ascii_whitespace().any(|r| {
                    matches!(
                        r,
                        "stylesheet"
                            | "icon"
                            | "preload"
                            | "modulepreload"
                            | "prefetch"
                            | "manifest"
                    ) || r.starts_with("apple-touch-icon")
                });
                if loads {
                    if let Some(h) = self.attr("href") {
                        self.push(base, h, out);
                    }
                }
            }
            t => {
                for (a, list) in loading_attrs(t) {
                    let Some(v) = self.attr(a) else { continue };
                    if *list {
                        for cand in v.split(',') {
                            if let Some(u) = cand.split_ascii_whitespace().next() {
                                self.push(base, u, out);
                            }
                        }
                    } else {
                        self.push(base, v, out);
                    }
                }
            }
        }
        if let Some(style) = self.attr("style") {
            let mut found = Vec::new();
            scan_css(style.as_bytes(), base, 0, &mut found);
            for mut r in found {
                r.offset = Some(self.end);
                out.push(r);
            }
        }
    }

    /// For a raw-text element (`script`, `style`, `textarea`, …), the offset past its end
    /// tag, after scanning an inline script's strings or a style sheet; `None` for other
    /// elements, whose content is markup.
    fn raw_text(&self, html: &[u8], base: &str, out: &mut Vec<Ref>) -> Option<usize> {
        let n = html.len();
        let raw_end = |name: &[u8]| -> (usize, usize) {
            let mut close = Vec::from(&b"</"[..]);
            close.extend_from_slice(name);
            match find_ci(html, &close, self.end) {
                Some(c) => (
                    c,
                    html[c..]
                        .iter()
                        .position(|&x| x == b'>')
                        .map_or(n, |p| c + p + 1),
                ),
                None => (n, n),
            }
        };
        match self.name.as_str() {
            "script" => {
                let (c, after) = raw_end(b"script");
                if self.attr("src").is_none() {
                    scan_js(&html[self.end..c], &[base], out);
                }
                Some(after)
            }
            "style" => {
                let (c, after) = raw_end(b"style");
                scan_css(&html[self.end..c], base, self.end, out);
                Some(after)
            }
            "textarea" | "title" | "xmp" | "noscript" | "template" => {
                Some(raw_end(self.name.as_bytes()).1)
            }
            _ => None,
        }
    }
}

/// Every reference in a record's (decoded) body; `doc` is the base for script strings.
pub(super) fn scan(r: &Rec, doc: &str) -> Vec<Ref> {
    let Some(body) = r.decoded.as_ref().filter(|b| b.len() <= MAX_DECODED) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if r.is_html() {
        scan_html(body, &r.url, &mut out);
    } else if r.is_css() {
        scan_css(body, &r.url, 0, &mut out);
    } else if r.is_js() {
        let bases = if doc == r.url {
            vec![doc]
        } else {
            vec![doc, r.url.as_str()]
        };
        scan_js(body, &bases, &mut out);
    }
    out
}

/// The byte offset where 0-based `line` of `body` ends.
pub(super) fn line_end(body: &[u8], line: u64) -> Option<usize> {
    let mut seen = 0;
    for (i, &b) in body.iter().enumerate() {
        if b == b'\n' {
            if seen == line {
                return Some(i);
            }
            seen += 1;
        }
    }
    (seen == line).then_some(body.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_html_references_at_the_end_of_their_tags() {
        let html = br#"<!doctype html><html><head><base href="/sub/">
<link rel="stylesheet" href="a.css"><!-- <img src="no.gif"> -->
<script>var u = '/late.gif'; // 'no2.gif'
</script><style>body{background:url(bg.png)}</style></head>
<body style="background-image:url('/s.gif')"><img src="i.gif?x=1&amp;y=2" srcset="i2.gif 2x, i3.gif 3x">
<textarea><img src="no3.gif"></textarea></body></html>"#;
        let mut out = Vec::new();
        scan_html(html, "http://h/p.html", &mut out);
        let text = std::str::from_utf8(html).unwrap();
        let get = |u: &str| out.iter().find(|r| r.url == u).cloned();
        let css = get("http://h/sub/a.css").unwrap();
        assert!(text[..css.offset.unwrap()].ends_with("href=\"a.css\">"));
        assert_eq!(get("http://h/late.gif").unwrap().offset, None);
        let bg = get("http://h/sub/bg.png").unwrap();
        assert!(text[..bg.offset.unwrap()].ends_with("url(bg.png)"));
        assert!(get("http://h/s.gif").is_some());
        assert!(get("http://h/sub/i.gif?x=1&y=2").is_some());
        assert!(get("http://h/sub/i3.gif").is_some());
        for no in ["no.gif", "no2.gif", "no3.gif"] {
            assert!(out.iter().all(|r| !r.url.ends_with(no)), "{no} in {out:?}");
        }
    }

    #[test]
    fn finds_css_references() {
        let css = br#"@import "x.css"; @import url(y.css);
/* url(no.gif) */ .a{background:url( "../i.gif" )} .b{content:"url(no2.gif)"}"#;
        let mut out = Vec::new();
        scan_css(css, "http://h/c/s.css", 0, &mut out);
        let urls: Vec<&str> = out.iter().map(|r| r.url.as_str()).collect();
        assert_eq!(
            urls,
            ["http://h/c/x.css", "http://h/c/y.css", "http://h/i.gif"]
        );
        let text = std::str::from_utf8(css).unwrap();
        assert!(text[..out[2].offset.unwrap()].ends_with("\"../i.gif\" )"));
    }
}
