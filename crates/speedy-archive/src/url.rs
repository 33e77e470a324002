//! Absolute http(s) URLs: parsing, resolving a reference against a base (RFC 3986 §5.2),
//! and the parts the loader needs (origin, host, port, path and query). One type for the
//! archive, the loader (`speedy_browser::url` re-exports it) and the CLI.

/// An absolute `http` or `https` URL without its fragment.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Url {
    /// `http` or `https` (lower case).
    pub scheme: String,
    /// Host name or address (lower case; IPv6 keeps its brackets).
    pub host: String,
    /// Explicit port, if the URL has one.
    pub port: Option<u16>,
    /// Path and query, starting with `/`.
    pub path: String,
}

impl Url {
    /// Parses an absolute http(s) URL; the fragment is dropped.
    pub fn parse(s: &str) -> Option<Url> {
        let s = s.trim();
        let s = s.split('#').next().unwrap_or("");
        let (scheme, rest) = s.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return None;
        }
        let i = rest.find(['/', '?']).unwrap_or(rest.len());
        let (auth, path) = rest.split_at(i);
        let auth = auth.rsplit('@').next().unwrap_or(auth);
        if auth.is_empty() {
            return None;
        }
        let (host, port) = split_host_port(auth)?;
        let path = path_from_root(path);
        Some(Url {
            scheme,
            host: host.to_ascii_lowercase(),
            port,
            path,
        })
    }

    /// The port, explicit or the scheme's default.
    pub fn port_or_default(&self) -> u16 {
        self.port
            .unwrap_or(if self.scheme == "https" { 443 } else { 80 })
    }

    /// `host` or `host:port` when the port is not the scheme's default (the Host header).
    pub fn authority(&self) -> String {
        match self.port {
            Some(p) if p != self.default_port() => format!("{}:{p}", self.host),
            _ => self.host.clone(),
        }
    }

    fn default_port(&self) -> u16 {
        if self.scheme == "https" {
            443
        } else {
            80
        }
    }

    /// `scheme://authority`.
    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme, self.authority())
    }

    /// Resolves `reference` (as found in an attribute or `url()`) against this URL.
    /// Returns `None` for non-http(s) references (`data:`, `javascript:`, `mailto:`, …)
    /// and for empty or fragment-only ones.
    pub fn join(&self, reference: &str) -> Option<Url> {
        let r = reference.trim_matches(|c: char| c.is_ascii_whitespace());
        let r = r.split('#').next().unwrap_or("");
        if r.is_empty() {
            return None;
        }
        // A scheme: letters, digits, + - . before the first ':' (and no '/' before it).
        if let Some(colon) = r.find(':') {
            let s = &r[..colon];
            if !s.is_empty()
                && s.as_bytes()[0].is_ascii_alphabetic()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.')
            {
                let lower = s.to_ascii_lowercase();
                if lower != "http" && lower != "https" {
                    return None;
                }
                let rest = &r[colon + 1..];
                if rest.starts_with("//") {
                    return Url::parse(r);
                }
                // `http:path` with the base's scheme is relative (RFC 3986 §5.2.2 leniency).
                if lower != self.scheme {
                    return None;
                }
                return self.join(rest);
            }
        }
        if let Some(net) = r.strip_prefix("//") {
            return Url::parse(&format!("{}://{net}", self.scheme));
        }
        let (base_path, _) = split_query(&self.path);
        let path = if r.starts_with('/') {
            r.to_string()
        } else if r.starts_with('?') {
            format!("{base_path}{r}")
        } else {
            let dir = &base_path[..base_path.rfind('/').map_or(0, |i| i + 1)];
            format!("{dir}{r}")
        };
        let (p, q) = split_query(&path);
        let mut out = remove_dot_segments(p);
        if out.is_empty() {
            out.push('/');
        }
        if let Some(q) = q {
            out.push('?');
            out.push_str(q);
        }
        Some(Url {
            scheme: self.scheme.clone(),
            host: self.host.clone(),
            port: self.port,
            path: out,
        })
    }
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}{}", self.scheme, self.authority(), self.path)
    }
}

fn split_query(p: &str) -> (&str, Option<&str>) {
    match p.split_once('?') {
        Some((a, b)) => (a, Some(b)),
        None => (p, None),
    }
}

/// `host[:port]` → (host, port); IPv6 literals in brackets.
pub fn split_host_port(auth: &str) -> Option<(&str, Option<u16>)> {
    if auth.starts_with('[') {
        let end = auth.find(']')?;
        let host = &auth[..=end];
        let rest = &auth[end + 1..];
        return match rest.strip_prefix(':') {
            Some(p) if !p.is_empty() => Some((host, Some(p.parse().ok()?))),
            _ => Some((host, None)),
        };
    }
    match auth.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() => Some((h, Some(p.parse().ok()?))),
        Some((h, _)) => Some((h, None)),
        None => Some((auth, None)),
    }
}

/// RFC 3986 §5.2.4.
fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segs: Vec<&str> = path.split('/').collect();
    let n = segs.len();
    for (i, s) in segs.iter().enumerate() {
        match *s {
            "." => {
                if i == n - 1 {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 {
                    out.pop();
                }
                if i == n - 1 {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let j = out.join("/");
    if path.starts_with('/') && !j.starts_with('/') {
        format!("/{j}")
    } else {
        j
    }
}

/// The path part of a URL as a request names it: empty → `/`, a bare query `?q` → `/?q`.
pub fn path_from_root(path: &str) -> String {
    if path.is_empty() {
        "/".to_string()
    } else if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("http://a.example/b/c/d;p?q").unwrap()
    }

    #[test]
    fn resolves_rfc3986_examples() {
        let cases = [
            ("g", "http://a.example/b/c/g"),
            ("./g", "http://a.example/b/c/g"),
            ("g/", "http://a.example/b/c/g/"),
            ("/g", "http://a.example/g"),
            ("//g", "http://g/"),
            ("?y", "http://a.example/b/c/d;p?y"),
            ("g?y", "http://a.example/b/c/g?y"),
            ("g#s", "http://a.example/b/c/g"),
            (".", "http://a.example/b/c/"),
            ("./", "http://a.example/b/c/"),
            ("..", "http://a.example/b/"),
            ("../g", "http://a.example/b/g"),
            ("../..", "http://a.example/"),
            ("../../../g", "http://a.example/g"),
            ("/./g", "http://a.example/g"),
            ("g;x=1/../y", "http://a.example/b/c/y"),
            ("https://x.example:8443/z", "https://x.example:8443/z"),
        ];
        for (r, want) in cases {
            assert_eq!(base().join(r).unwrap().to_string(), want, "{r}");
        }
    }

    #[test]
    fn skips_non_http_references() {
        for r in [
            "data:image/png;base64,xx",
            "javascript:void(0)",
            "mailto:x@y",
            "#top",
            "",
        ] {
            assert_eq!(base().join(r), None, "{r}");
        }
    }

    #[test]
    fn parses_ports_and_origins() {
        let u = Url::parse("https://S.Example:8443?x#f").unwrap();
        assert_eq!(u.host, "s.example");
        assert_eq!(u.port, Some(8443));
        assert_eq!(u.path, "/?x");
        assert_eq!(u.origin(), "https://s.example:8443");
        let u = Url::parse("https://s.example:443/").unwrap();
        assert_eq!(u.authority(), "s.example");
        assert_eq!(u.port_or_default(), 443);
        assert_eq!(Url::parse("ftp://x/"), None);
    }
}
