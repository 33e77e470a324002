//! Links out of the report: the relative path from the report's directory to the
//! results' directory (for each waterfall's HAR), percent-encoded hrefs, and `file://`
//! URLs for the terminal.

use std::path::{Component, Path, PathBuf};

/// The path that leads from directory `from` to directory `to` (`../hars` style), from
/// their canonical forms; `None` when either cannot be resolved (it does not exist).
pub(crate) fn relative_dir(from: &Path, to: &Path) -> Option<PathBuf> {
    let from = from.canonicalize().ok()?;
    let to = to.canonicalize().ok()?;
    let f: Vec<Component> = from.components().collect();
    let t: Vec<Component> = to.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut p = PathBuf::new();
    for _ in common..f.len() {
        p.push("..");
    }
    for c in &t[common..] {
        p.push(c);
    }
    Some(p)
}

/// Percent-encodes one path segment for a URL (RFC 3986 unreserved characters and
/// `!$&'()*+,;=:@` are kept).
fn encode_segment(seg: &str, out: &mut String) {
    for b in seg.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// A relative href for the file `rel` (as a results row names it, `/`-separated) under
/// `base` (a relative directory from [`relative_dir`]); an absolute `rel` gives a
/// [`file_url`].
pub(crate) fn href(base: &Path, rel: &str) -> String {
    if Path::new(rel).is_absolute() {
        return file_url(Path::new(rel));
    }
    let mut out = String::new();
    let segs = base
        .components()
        .filter_map(|c| match c {
            Component::ParentDir => Some("..".to_string()),
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .chain(
            rel.split('/')
                .filter(|s| !s.is_empty() && *s != ".")
                .map(String::from),
        );
    for (i, s) in segs.enumerate() {
        if i > 0 {
            out.push('/');
        }
        encode_segment(&s, &mut out);
    }
    out
}

/// `file:///abs/path` for an absolute path (a relative one is taken from the current
/// directory when it can be read), percent-encoded.
pub fn file_url(path: &Path) -> String {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
    };
    let mut out = String::from("file://");
    for c in abs.components() {
        if let Component::Normal(s) = c {
            out.push('/');
            encode_segment(&s.to_string_lossy(), &mut out);
        } else if let Component::ParentDir = c {
            out.push_str("/..");
        }
    }
    if out == "file://" {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_between_directories() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("out");
        let b = d.path().join("results/x");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        assert_eq!(
            relative_dir(&a, &b).unwrap(),
            Path::new("../results/x").to_path_buf()
        );
        assert_eq!(relative_dir(&b, &b).unwrap(), PathBuf::new());
        assert_eq!(relative_dir(&a, &d.path().join("nope")), None);
    }

    #[test]
    fn hrefs_and_file_urls_are_encoded() {
        assert_eq!(
            href(Path::new("../r"), "hars/a b/x#1.har"),
            "../r/hars/a%20b/x%231.har"
        );
        assert_eq!(href(Path::new(""), "hars/x.har"), "hars/x.har");
        assert_eq!(
            file_url(Path::new("/work/lab out/report.html")),
            "file:///work/lab%20out/report.html"
        );
        assert_eq!(file_url(Path::new("/")), "file:///");
    }
}
