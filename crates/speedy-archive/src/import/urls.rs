//! The importer's view of URLs, on the workspace's one [`Url`] type: the normal form it
//! keys records on, and reference resolution (RFC 3986 §5.2).

use crate::url::Url;

/// Lower-case scheme and host, no default port, no user information, no fragment, `/`
/// for an empty path. Text that is not an http(s) URL comes back without its fragment.
pub(super) fn normalize(url: &str) -> String {
    match Url::parse(url) {
        Some(u) => u.to_string(),
        None => url.split('#').next().unwrap_or("").to_string(),
    }
}

/// Resolves a reference against an absolute http(s) base, in the normal form; `None`
/// for other schemes, fragment-only references and a base that is not an http(s) URL.
pub(super) fn resolve(base: &str, rel: &str) -> Option<String> {
    Url::parse(base)?.join(rel).map(|u| u.to_string())
}

/// `host[:port]` of a URL (lower case, default port left out); empty if it is not one.
pub(super) fn host_of(url: &str) -> String {
    Url::parse(url).map(|u| u.authority()).unwrap_or_default()
}

/// Whether `url` is an absolute http(s) URL.
pub(super) fn is_http(url: &str) -> bool {
    Url::parse(url).is_some()
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
