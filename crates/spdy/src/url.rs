//! The workspace's one URL type: absolute `http`/`https` URLs as HTTP and SPDY name a
//! resource (scheme, host, port, path and query; no fragment), and the resolution of a
//! reference against a base (RFC 3986 §5.2, dot segments removed per §5.2.4).
//!
//! It lives here, in the lowest crate that reads URLs (SPDY/2's `url` header, pushed
//! streams' URLs), so that the archive, the loader, the server and the CLI share it
//! (`speedy_archive::url` and `speedy_browser::url` re-export this module).
//!
//! Parsing is deliberately small and byte-preserving: the scheme and host are lower-cased,
//! user information and the fragment are dropped, an empty path becomes `/`; nothing is
//! percent-encoded or decoded, so a URL read from an archive matches the same URL read
//! from a page. (The WHATWG parser of the `url` crate re-encodes paths and hosts, which
//! would make archived and requested URLs differ.)
//!
//! ```
//! use spdy::url::Url;
//! let base: Url = "https://a.example:8443/b/c?q#top".parse().unwrap();
//! assert_eq!(base.authority(), "a.example:8443");
//! assert_eq!(base.path, "/b/c?q");
//! assert_eq!(base.join("../d").unwrap().to_string(), "https://a.example:8443/d");
//! assert!("ftp://a.example/".parse::<Url>().unwrap_err().to_string().contains("ftp://"));
//! ```

use std::fmt;
use std::net::Ipv6Addr;
use std::str::FromStr;

/// An absolute `http` or `https` URL without its fragment.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Url {
    /// `http` or `https` (lower case).
    pub scheme: String,
    /// Host name or address (lower case; an IPv6 literal keeps its brackets, `[::1]`).
    pub host: String,
    /// The port written in the URL, if any (see [`Url::port_or_default`]).
    pub port: Option<u16>,
    /// Path and query, starting with `/` (`http://a.example?q` has `/?q`).
    pub path: String,
}

/// Why a string is not an absolute http(s) URL; its message names the URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlError {
    /// The text that failed to parse, as given.
    pub url: String,
    /// What is wrong with it, e.g. `scheme must be http or https`.
    pub reason: String,
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.url, self.reason)
    }
}

impl std::error::Error for UrlError {}

impl FromStr for Url {
    type Err = UrlError;

    /// Parses an absolute http(s) URL (surrounding whitespace ignored, fragment dropped),
    /// with an error naming the URL and the fault.
    fn from_str(s: &str) -> Result<Url, UrlError> {
        let err = |reason: String| UrlError {
            url: s.to_string(),
            reason,
        };
        let t = s.trim();
        let t = t.split('#').next().unwrap_or("");
        let (scheme, auth, path) =
            split_url(t).ok_or_else(|| err("not an absolute URL (scheme://host/path)".into()))?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(err("scheme must be http or https".into()));
        }
        // User information (`user:pass@`) is not part of what HTTP names.
        let auth = auth.rsplit('@').next().unwrap_or(auth);
        let (host, port) = split_host_port(auth).map_err(err)?;
        Ok(Url {
            scheme,
            host: host.to_ascii_lowercase(),
            port,
            path: path_from_root(path),
        })
    }
}

impl Url {
    /// Parses an absolute http(s) URL, or `None`: for callers that skip what is not one
    /// (discovered references, archive entries). Use `str::parse` for the error.
    pub fn parse(s: &str) -> Option<Url> {
        s.parse().ok()
    }

    /// The scheme's default port: 443 for `https`, 80 for `http`.
    pub fn default_port(&self) -> u16 {
        if self.scheme == "https" {
            443
        } else {
            80
        }
    }

    /// The port, explicit or the scheme's default.
    pub fn port_or_default(&self) -> u16 {
        self.port.unwrap_or(self.default_port())
    }

    /// The host without IPv6 brackets (`::1`), as sockets and TLS server names take it.
    pub fn host_bare(&self) -> &str {
        self.host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(&self.host)
    }

    /// `host`, or `host:port` when the port is not the scheme's default: the `Host`
    /// header, SPDY's `:host` and HTTP/2's `:authority`.
    pub fn authority(&self) -> String {
        match self.port {
            Some(p) if p != self.default_port() => format!("{}:{p}", self.host),
            _ => self.host.clone(),
        }
    }

    /// `scheme://authority`.
    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme, self.authority())
    }

    /// Resolves `reference` (as found in an attribute, `url()`, a `Location` header)
    /// against this URL per RFC 3986 §5.2.2, with dot segments removed; the fragment is
    /// dropped. Returns `None` for non-http(s) references (`data:`, `javascript:`,
    /// `mailto:`, …), for empty and fragment-only ones (they name this document, not a
    /// new fetch) and for network-path references without a valid host. `http:g` with
    /// this URL's scheme is taken as relative (the RFC's backward-compatible reading).
    pub fn join(&self, reference: &str) -> Option<Url> {
        let r = reference.trim_matches(|c: char| c.is_ascii_whitespace());
        let r = r.split('#').next().unwrap_or("");
        if r.is_empty() {
            return None;
        }
        if let Some((s, rest)) = scheme_of(r) {
            let lower = s.to_ascii_lowercase();
            if lower != "http" && lower != "https" {
                return None;
            }
            if rest.starts_with("//") {
                return Url::parse(r);
            }
            if lower != self.scheme {
                return None;
            }
            return self.join(rest);
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
            // Merge (§5.2.3): the base path up to its last `/`, then the reference.
            let dir = &base_path[..base_path.rfind('/').map_or(0, |i| i + 1)];
            format!("{dir}{r}")
        };
        let (p, q) = split_query(&path);
        let mut out = remove_dot_segments(p);
        if !out.starts_with('/') {
            out.insert(0, '/');
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

impl fmt::Display for Url {
    /// `scheme://authority/path?query`: the normal form (default port left out).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}{}", self.scheme, self.authority(), self.path)
    }
}

/// The scheme of a reference and what follows its `:`, if it has one (RFC 3986 §3.1:
/// a letter, then letters, digits, `+`, `-` or `.`).
fn scheme_of(r: &str) -> Option<(&str, &str)> {
    let (s, rest) = r.split_once(':')?;
    let mut b = s.bytes();
    let first = b.next()?;
    (first.is_ascii_alphabetic()
        && b.all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.'))
    .then_some((s, rest))
}

fn split_query(p: &str) -> (&str, Option<&str>) {
    match p.split_once('?') {
        Some((a, b)) => (a, Some(b)),
        None => (p, None),
    }
}

/// Splits a URL as written into (scheme, authority, path and query) without checking or
/// changing any part: the authority ends at the first `/` or `?`, and an empty path is
/// `/` (`http://a.example?q` → `("http", "a.example", "?q")`). For callers that key on
/// URLs exactly as an archive stores them; [`Url`] is built on it.
pub fn split_url(url: &str) -> Option<(&str, &str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let i = rest.find(['/', '?']).unwrap_or(rest.len());
    let path = if i == rest.len() { "/" } else { &rest[i..] };
    Some((scheme, &rest[..i], path))
}

/// `host[:port]` → (host, port), IPv6 literals in brackets (`[::1]:8080`); an empty port
/// (`host:`) is no port. The error says what is wrong.
pub fn split_host_port(auth: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if auth.starts_with('[') {
        let end = auth
            .find(']')
            .ok_or_else(|| format!("IPv6 host {auth:?} lacks its closing `]`"))?;
        let (host, rest) = auth.split_at(end + 1);
        if host[1..end].parse::<Ipv6Addr>().is_err() {
            return Err(format!("bad IPv6 host {host:?}"));
        }
        match rest {
            "" => (host, None),
            _ => match rest.strip_prefix(':') {
                Some(p) => (host, Some(p)),
                None => return Err(format!("unexpected {rest:?} after the IPv6 host")),
            },
        }
    } else {
        match auth.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (auth, None),
        }
    };
    if host.is_empty() {
        return Err("no host".into());
    }
    if let Some(c) = host
        .chars()
        .find(|&c| c.is_whitespace() || c.is_control() || (c == ':' && !host.starts_with('[')))
    {
        return Err(format!("bad character {c:?} in host {host:?}"));
    }
    let port = match port {
        None | Some("") => None,
        Some(p) => Some(
            p.parse::<u16>()
                .map_err(|_| format!("bad port {p:?} (0 to 65535)"))?,
        ),
    };
    Ok((host, port))
}

/// Removes `.` and `..` segments from a path (RFC 3986 §5.2.4); `..` never climbs above
/// the root.
pub fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segs: Vec<&str> = path.split('/').collect();
    let n = segs.len();
    for (i, s) in segs.iter().enumerate() {
        let last = i + 1 == n;
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

    fn url(s: &str) -> Url {
        s.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(s: &str) -> String {
        s.parse::<Url>().unwrap_err().to_string()
    }

    /// RFC 3986 §5.4.1, "Normal Examples", base `http://a/b/c/d;p?q`. Fragments are
    /// dropped; `g:h` (not http) and the references naming the base itself (`""`, `#s`)
    /// resolve to nothing, by design (see `join`).
    #[test]
    fn resolves_rfc3986_normal_examples() {
        let base = url("http://a/b/c/d;p?q");
        let cases = [
            ("g", "http://a/b/c/g"),
            ("./g", "http://a/b/c/g"),
            ("g/", "http://a/b/c/g/"),
            ("/g", "http://a/g"),
            ("//g", "http://g/"),
            ("?y", "http://a/b/c/d;p?y"),
            ("g?y", "http://a/b/c/g?y"),
            ("g#s", "http://a/b/c/g"),
            ("g?y#s", "http://a/b/c/g?y"),
            (";x", "http://a/b/c/;x"),
            ("g;x", "http://a/b/c/g;x"),
            ("g;x?y#s", "http://a/b/c/g;x?y"),
            (".", "http://a/b/c/"),
            ("./", "http://a/b/c/"),
            ("..", "http://a/b/"),
            ("../", "http://a/b/"),
            ("../g", "http://a/b/g"),
            ("../..", "http://a/"),
            ("../../", "http://a/"),
            ("../../g", "http://a/g"),
        ];
        for (r, want) in cases {
            assert_eq!(
                base.join(r).map(|u| u.to_string()).as_deref(),
                Some(want),
                "{r}"
            );
        }
        for r in ["g:h", "", "#s"] {
            assert_eq!(base.join(r), None, "{r}");
        }
    }

    /// RFC 3986 §5.4.2, "Abnormal Examples" (`http:g` read the lenient way).
    #[test]
    fn resolves_rfc3986_abnormal_examples() {
        let base = url("http://a/b/c/d;p?q");
        let cases = [
            ("../../../g", "http://a/g"),
            ("../../../../g", "http://a/g"),
            ("/./g", "http://a/g"),
            ("/../g", "http://a/g"),
            ("g.", "http://a/b/c/g."),
            (".g", "http://a/b/c/.g"),
            ("g..", "http://a/b/c/g.."),
            ("..g", "http://a/b/c/..g"),
            ("./../g", "http://a/b/g"),
            ("./g/.", "http://a/b/c/g/"),
            ("g/./h", "http://a/b/c/g/h"),
            ("g/../h", "http://a/b/c/h"),
            ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
            ("g;x=1/../y", "http://a/b/c/y"),
            ("g?y/./x", "http://a/b/c/g?y/./x"),
            ("g?y/../x", "http://a/b/c/g?y/../x"),
            ("g#s/./x", "http://a/b/c/g"),
            ("http:g", "http://a/b/c/g"),
        ];
        for (r, want) in cases {
            assert_eq!(
                base.join(r).map(|u| u.to_string()).as_deref(),
                Some(want),
                "{r}"
            );
        }
    }

    #[test]
    fn joins_absolute_and_network_path_references() {
        let base = url("https://a.example/dir/page.html?q=1");
        let j = |r: &str| base.join(r).map(|u| u.to_string());
        assert_eq!(
            j("HTTP://B.Example:80/y#f").as_deref(),
            Some("http://b.example/y")
        );
        assert_eq!(
            j("//cdn.example/x").as_deref(),
            Some("https://cdn.example/x")
        );
        assert_eq!(
            j("  x.css\n").as_deref(),
            Some("https://a.example/dir/x.css")
        );
        // `http:` relative to an https base is another scheme: not resolvable.
        assert_eq!(j("http:g"), None);
        assert_eq!(j("//"), None);
        for r in [
            "data:image/png;base64,xx",
            "javascript:void(0)",
            "mailto:x@y",
        ] {
            assert_eq!(j(r), None, "{r}");
        }
        // A first segment with a colon but no valid scheme is a path.
        assert_eq!(j("1:x").as_deref(), Some("https://a.example/dir/1:x"));
    }

    #[test]
    fn parses_default_and_explicit_ports() {
        let u = url("https://S.Example:8443?x#f");
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("s.example", Some(8443), "/?x")
        );
        assert_eq!(u.origin(), "https://s.example:8443");
        let u = url("https://s.example:443/");
        assert_eq!(
            (u.authority(), u.port_or_default()),
            ("s.example".into(), 443)
        );
        assert_eq!(u.to_string(), "https://s.example/");
        let u = url("http://s.example");
        assert_eq!(
            (u.port, u.port_or_default(), u.path.as_str()),
            (None, 80, "/")
        );
        assert_eq!(url("http://s.example:/").port, None);
        assert_eq!(url("http://s.example:8080/").authority(), "s.example:8080");
        assert_eq!(
            url("HTTP://user:pw@s.example/").to_string(),
            "http://s.example/"
        );
    }

    #[test]
    fn parses_ipv6_literal_hosts() {
        let u = url("http://[::1]:8080/a?b");
        assert_eq!(
            (u.host.as_str(), u.host_bare(), u.port),
            ("[::1]", "::1", Some(8080))
        );
        assert_eq!(u.authority(), "[::1]:8080");
        let u = url("https://[2001:DB8::1]/");
        assert_eq!(
            (u.host.as_str(), u.port_or_default()),
            ("[2001:db8::1]", 443)
        );
        assert_eq!(u.to_string(), "https://[2001:db8::1]/");
        assert_eq!(url("http://a.example/").host_bare(), "a.example");
    }

    #[test]
    fn keeps_queries_and_drops_fragments() {
        let u = url(" http://a.example/p/q.html?x=1&y=/z#frag ");
        assert_eq!(u.path, "/p/q.html?x=1&y=/z");
        assert_eq!(url("http://a.example#f").path, "/");
        assert_eq!(url("http://a.example/?").path, "/?");
    }

    #[test]
    fn rejects_bad_input_naming_the_url() {
        assert_eq!(
            err("nope"),
            "nope: not an absolute URL (scheme://host/path)"
        );
        assert_eq!(err("ftp://x/"), "ftp://x/: scheme must be http or https");
        assert_eq!(err("http:///x"), "http:///x: no host");
        assert_eq!(
            err("http://x:99999/"),
            "http://x:99999/: bad port \"99999\" (0 to 65535)"
        );
        assert_eq!(
            err("http://x:8o/"),
            "http://x:8o/: bad port \"8o\" (0 to 65535)"
        );
        assert!(
            err("http://[::1/").contains("lacks its closing"),
            "{}",
            err("http://[::1/")
        );
        assert!(err("http://[nope]/").starts_with("http://[nope]/: bad IPv6 host"));
        assert!(err("http://[::1]x/").contains("after the IPv6 host"));
        assert!(err("http://a b/").contains("bad character ' '"));
        assert!(err("http://::1/").contains("bad character ':'"));
        assert_eq!(Url::parse("ftp://x/"), None);
    }

    #[test]
    fn splits_urls_as_written() {
        assert_eq!(
            split_url("https://A.example:8443/x?y"),
            Some(("https", "A.example:8443", "/x?y"))
        );
        assert_eq!(
            split_url("http://a.example"),
            Some(("http", "a.example", "/"))
        );
        assert_eq!(
            split_url("http://a.example?q"),
            Some(("http", "a.example", "?q"))
        );
        assert_eq!(split_url("a.example/x"), None);
    }

    #[test]
    fn removes_dot_segments() {
        assert_eq!(remove_dot_segments("/a/b/c/./../../g"), "/a/g");
        assert_eq!(remove_dot_segments("mid/content=5/../6"), "mid/6");
        assert_eq!(remove_dot_segments("/.."), "/");
    }
}
