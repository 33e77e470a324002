//! Finds the references of a style sheet: `@import` and `url()`.
//!
//! A browser parses a style sheet once it has arrived whole, so this scanner takes the
//! complete text. It skips comments and strings, understands quoted and unquoted `url()`,
//! `@import "x"` and `@import url(x)`, and in `@font-face` takes only the first source
//! of each `src` declaration (a browser fetches the first format it supports).

use speedy_archive::ObjectType;

/// A reference found in CSS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CssRef {
    /// The reference as written (unresolved; escapes and quotes removed).
    pub url: String,
    /// Byte offset just past the reference (after `)` or the closing quote).
    pub end: usize,
    /// What the reference loads: a style sheet (`@import`), a font (`@font-face` src)
    /// or an image (any other `url()`).
    pub kind: ObjectType,
}

/// Scans a whole style sheet (or a `style` attribute's value) for references.
pub fn scan_css(css: &[u8]) -> Vec<CssRef> {
    let mut s = Scanner {
        b: css,
        i: 0,
        out: Vec::new(),
        block_stack: Vec::new(),
        pending_at: None,
        property: Vec::new(),
        decl_has_url: false,
        import_pending: false,
    };
    s.run();
    s.out
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    out: Vec<CssRef>,
    /// For each open `{`: whether it is an `@font-face` block.
    block_stack: Vec<bool>,
    /// The at-keyword of the prelude being read (before its `{` or `;`).
    pending_at: Option<Vec<u8>>,
    /// Name of the declaration being read (lower case), inside a block.
    property: Vec<u8>,
    /// The current declaration already produced a url (font-face `src`).
    decl_has_url: bool,
    /// Inside an `@import` prelude that has not yet named its URL.
    import_pending: bool,
}

impl Scanner<'_> {
    fn peek(&self, k: usize) -> Option<u8> {
        self.b.get(self.i + k).copied()
    }

    fn in_font_face(&self) -> bool {
        self.block_stack.last().copied().unwrap_or(false)
    }

    fn run(&mut self) {
        let mut word_start: Option<usize> = None;
        while self.i < self.b.len() {
            let c = self.b[self.i];
            // Identifier characters accumulate into a word (property names, `url`).
            if c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c >= 0x80 || c == b'\\' {
                if word_start.is_none() {
                    word_start = Some(self.i);
                }
                if c == b'\\' {
                    self.i += 1;
                }
                self.i += 1;
                continue;
            }
            let word = word_start.take().map(|w| &self.b[w..self.i]);
            match c {
                b'/' if self.peek(1) == Some(b'*') => {
                    self.i = find(self.b, self.i + 2, b"*/").map_or(self.b.len(), |e| e + 2);
                }
                b'"' | b'\'' => {
                    let start = self.i;
                    let (text, end) = read_string(self.b, self.i);
                    self.i = end;
                    if self.import_pending {
                        self.import_pending = false;
                        self.push(text, end, ObjectType::Stylesheet);
                    }
                    let _ = start;
                }
                b'(' => {
                    let is_url = word.is_some_and(|w| w.eq_ignore_ascii_case(b"url"));
                    self.i += 1;
                    if is_url {
                        self.read_url();
                    }
                }
                b'@' => {
                    self.i += 1;
                    let st = self.i;
                    while self.i < self.b.len()
                        && (self.b[self.i].is_ascii_alphanumeric() || self.b[self.i] == b'-')
                    {
                        self.i += 1;
                    }
                    let kw = self.b[st..self.i].to_ascii_lowercase();
                    self.import_pending = kw == b"import";
                    self.pending_at = Some(kw);
                }
                b'{' => {
                    let ff = self.pending_at.take().is_some_and(|k| k == b"font-face");
                    self.block_stack.push(ff);
                    self.import_pending = false;
                    self.property.clear();
                    self.decl_has_url = false;
                    self.i += 1;
                }
                b'}' => {
                    self.block_stack.pop();
                    self.property.clear();
                    self.decl_has_url = false;
                    self.i += 1;
                }
                b';' => {
                    self.pending_at = None;
                    self.import_pending = false;
                    self.property.clear();
                    self.decl_has_url = false;
                    self.i += 1;
                }
                b':' => {
                    if let Some(w) = word {
                        if self.property.is_empty() {
                            self.property = w.to_ascii_lowercase();
                        }
                    }
                    self.i += 1;
                }
                _ => self.i += 1,
            }
        }
    }

    /// After `url(`: a quoted string or unquoted text up to `)`.
    fn read_url(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
        let text;
        if matches!(self.peek(0), Some(b'"') | Some(b'\'')) {
            let (t, e) = read_string(self.b, self.i);
            text = t;
            self.i = e;
            while self.i < self.b.len() && self.b[self.i] != b')' {
                self.i += 1;
            }
        } else {
            let mut t = Vec::new();
            while self.i < self.b.len() && self.b[self.i] != b')' {
                if self.b[self.i] == b'\\' && self.i + 1 < self.b.len() {
                    self.i += 1;
                }
                t.push(self.b[self.i]);
                self.i += 1;
            }
            while t.last().is_some_and(|c| c.is_ascii_whitespace()) {
                t.pop();
            }
            text = String::from_utf8_lossy(&t).into_owned();
        }
        if self.i < self.b.len() {
            self.i += 1; // ')'
        }
        let end = self.i;
        let kind = if self.import_pending {
            self.import_pending = false;
            ObjectType::Stylesheet
        } else if self.in_font_face() && self.property == b"src" {
            if self.decl_has_url {
                return;
            }
            self.decl_has_url = true;
            ObjectType::Font
        } else {
            ObjectType::Image
        };
        self.push(text, end, kind);
    }

    fn push(&mut self, url: String, end: usize, kind: ObjectType) {
        if !url.is_empty() {
            self.out.push(CssRef { url, end, kind });
        }
    }
}

fn find(b: &[u8], from: usize, pat: &[u8]) -> Option<usize> {
    b.get(from..)?
        .windows(pat.len())
        .position(|w| w == pat)
        .map(|p| p + from)
}

/// Reads a CSS string starting at its quote; returns (contents, offset past the end).
fn read_string(b: &[u8], start: usize) -> (String, usize) {
    let q = b[start];
    let mut i = start + 1;
    let mut t = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c == q {
            i += 1;
            break;
        }
        if c == b'\\' && i + 1 < b.len() {
            // An escaped newline continues the string; other escapes keep the character.
            if b[i + 1] != b'\n' {
                t.push(b[i + 1]);
            }
            i += 2;
            continue;
        }
        if c == b'\n' {
            break; // unterminated: a bad string ends at the line
        }
        t.push(c);
        i += 1;
    }
    (String::from_utf8_lossy(&t).into_owned(), i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(css: &str) -> Vec<(String, ObjectType)> {
        scan_css(css.as_bytes())
            .into_iter()
            .map(|r| (r.url, r.kind))
            .collect()
    }

    #[test]
    fn finds_url_forms_and_offsets() {
        let css = "a{background:url(a.png)} b{background:URL( \"b c.png\" )}\nc{x:url('c.gif')}";
        let refs = scan_css(css.as_bytes());
        let got: Vec<&str> = refs.iter().map(|r| r.url.as_str()).collect();
        assert_eq!(got, ["a.png", "b c.png", "c.gif"]);
        for r in &refs {
            assert_eq!(&css[r.end - 1..r.end], ")", "{r:?}");
            assert!(css[..r.end].contains(&r.url));
        }
        assert!(refs.iter().all(|r| r.kind == ObjectType::Image));
    }

    #[test]
    fn finds_imports() {
        let css = "@charset \"utf-8\";\n@import \"one.css\";\n@import url(two.css) screen;\n@import url('three.css');\nbody{color:red}";
        assert_eq!(
            urls(css),
            [
                ("one.css".into(), ObjectType::Stylesheet),
                ("two.css".into(), ObjectType::Stylesheet),
                ("three.css".into(), ObjectType::Stylesheet),
            ]
        );
        let r = &scan_css(css.as_bytes())[0];
        assert_eq!(&css[..r.end], "@charset \"utf-8\";\n@import \"one.css\"");
    }

    #[test]
    fn skips_comments_and_strings() {
        let css = "/* url(no.png) @import 'no.css'; */ a{content:\"url(no2.png)\"; background:url(yes.png)}";
        assert_eq!(urls(css), [("yes.png".into(), ObjectType::Image)]);
    }

    #[test]
    fn font_face_takes_the_first_source() {
        let css = "@font-face{font-family:F;src:url(f.woff2) format('woff2'),url(f.woff) format('woff')}\np{background:url(p.png)}";
        assert_eq!(
            urls(css),
            [
                ("f.woff2".into(), ObjectType::Font),
                ("p.png".into(), ObjectType::Image),
            ]
        );
    }

    #[test]
    fn tolerates_truncated_input() {
        assert_eq!(
            urls("a{background:url(x.png"),
            [("x.png".into(), ObjectType::Image)]
        );
        assert!(urls("a{b:'unterminated").is_empty());
        assert!(urls("").is_empty());
    }
}
