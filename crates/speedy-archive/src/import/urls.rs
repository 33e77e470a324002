//! URL normalization and reference resolution for the importer.

/// Lower-case scheme and host, no default port, no fragment, `/` for an empty path.
pub(super) fn normalize(url: &str) -> String {
    let url = url.split('#').next().unwrap_or("");
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let scheme = scheme.to_ascii_lowercase();
    let i = rest.find(['/', '?']).unwrap_or(rest.len());
    let mut host = rest[..i].to_ascii_lowercase();
    if let Some(at) = host.rfind('@') {
        host = host[at + 1..].to_string();
    }
    if (scheme == "http" && host.ends_with(":80")) || (scheme == "https" && host.ends_with(":443"))
    {
        host.truncate(host.rfind(':').unwrap_or(host.len()));
    }
    let path = crate::url::path_from_root(&rest[i..]);
    format!("{scheme}://{host}{path}")
}

pub(super) fn remove_dots(path: &str) -> String {
    let (p, q) = match path.find('?') {
        Some(i) => (&path[..i], &path[i..]),
        None => (path, ""),
    };
    let mut out: Vec<&str> = Vec::new();
    let segs: Vec<&str> = p.split('/').collect();
    for (k, s) in segs.iter().enumerate() {
        let last = k + 1 == segs.len();
        match *s {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 {
                    out.pop();
                }
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let mut r = out.join("/");
    if !r.starts_with('/') {
        r.insert(0, '/');
    }
    r + q
}

/// Resolves a reference against an absolute http(s) base; `None` for other schemes.
pub(super) fn resolve(base: &str, rel: &str) -> Option<String> {
    let rel = rel.trim_matches(|c: char| c.is_ascii_whitespace());
    if rel.is_empty() || rel.starts_with('#') {
        return None;
    }
    let rel = rel.split('#').next().unwrap_or("");
    if let Some(colon) = rel.find(':') {
        let scheme = &rel[..colon];
        if !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
        {
            let s = scheme.to_ascii_lowercase();
            return ((s == "http" || s == "https") && rel[colon..].starts_with("://"))
                .then(|| rel.to_string());
        }
    }
    let (scheme, authority, path) = crate::model::split_url(base)?;
    if let Some(r) = rel.strip_prefix("//") {
        return (!r.is_empty()).then(|| format!("{scheme}://{r}"));
    }
    let base_path = path.split('#').next().unwrap_or("/");
    let joined = if rel.starts_with('/') {
        rel.to_string()
    } else if rel.starts_with('?') {
        format!("{}{rel}", base_path.split('?').next().unwrap_or("/"))
    } else {
        let dir = base_path.split('?').next().unwrap_or("/");
        let dir = &dir[..dir.rfind('/').map_or(0, |i| i + 1)];
        format!("{}{rel}", if dir.is_empty() { "/" } else { dir })
    };
    Some(format!("{scheme}://{authority}{}", remove_dots(&joined)))
}

pub(super) fn host_of(url: &str) -> String {
    crate::model::split_url(url)
        .map(|(_, h, _)| h.to_ascii_lowercase())
        .unwrap_or_default()
}

pub(super) fn is_http(url: &str) -> bool {
    let l = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    (l.starts_with("http://") || l.starts_with("https://"))
        && crate::model::split_url(url).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_references() {
        let b = "http://a.example/dir/page.html?q=1";
        assert_eq!(
            resolve(b, "x.css").as_deref(),
            Some("http://a.example/dir/x.css")
        );
        assert_eq!(
            resolve(b, "../img/a.gif").as_deref(),
            Some("http://a.example/img/a.gif")
        );
        assert_eq!(resolve(b, "/r").as_deref(), Some("http://a.example/r"));
        assert_eq!(
            resolve(b, "//cdn.example/x").as_deref(),
            Some("http://cdn.example/x")
        );
        assert_eq!(
            resolve(b, "?z").as_deref(),
            Some("http://a.example/dir/page.html?z")
        );
        assert_eq!(
            resolve(b, "https://b.example/y#f").as_deref(),
            Some("https://b.example/y")
        );
        assert_eq!(
            resolve(b, "./a/./b/../c").as_deref(),
            Some("http://a.example/dir/a/c")
        );
        assert_eq!(resolve(b, "data:image/gif;base64,AAAA"), None);
        assert_eq!(resolve(b, "javascript:void(0)"), None);
        assert_eq!(resolve(b, "#top"), None);
        assert_eq!(normalize("HTTP://A.example:80"), "http://a.example/");
        assert_eq!(
            normalize("https://a.example:443/x?y#z"),
            "https://a.example/x?y"
        );
    }
}
