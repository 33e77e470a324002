//! The request headers Chromium 156 sends, as the loader sends them with the browser
//! model. Read off the wire: headless Chromium 156 loading a page with a style sheet, a
//! script, an image, a `fetch()`, a font and a frame from an HTTP/1.1 server over TLS
//! (docs/loader.md, "Request headers"). Blink adds the `Sec-Fetch-*` metadata (Fetch
//! Metadata Request Headers, W3C) and the low-entropy client hints (`sec-ch-ua*`) to every
//! request to a secure origin, `Upgrade-Insecure-Requests` to navigations, `Origin` to
//! CORS-mode requests; cookies only to requests that are not in privacy mode
//! ([`super::chromium::Privacy`]).

use super::chromium::{site, Privacy};
use spdy::url::Url;
use speedy_archive::ObjectType;

const USER_AGENT: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36";
const SEC_CH_UA: &str = r#""Not:A-Brand";v="8", "Chromium";v="156""#;
const NAVIGATION_ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,image/jxl,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";
const IMAGE_ACCEPT: &str =
    "image/jxl,image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8";

/// What a request is, for its headers.
pub struct Fetch<'a> {
    /// Its type.
    pub kind: ObjectType,
    /// Navigations: `Some(true)` the page itself, `Some(false)` a frame; `None` a
    /// subresource.
    pub navigation: Option<bool>,
    /// Its URL.
    pub url: &'a Url,
    /// The URL of the document that makes it (none for the page itself).
    pub initiator: Option<&'a Url>,
    /// `Referer`.
    pub referer: Option<String>,
    /// The cookie the archive recorded for it, if any.
    pub cookie: Option<String>,
    /// Its privacy mode.
    pub privacy: Privacy,
}

/// Chromium's request headers for `f`, in its order (lower-case names).
pub fn request_headers(f: Fetch) -> Vec<(String, String)> {
    let origin = f.url.origin();
    let initiator = f.initiator.map(|i| (i.origin(), i.host.as_str()));
    let fetch_site = match &initiator {
        None => "none",
        Some((o, _)) if *o == origin => "same-origin",
        Some((_, h)) if site(h) == site(&f.url.host) => "same-site",
        Some(_) => "cross-site",
    };
    let cors = matches!(
        f.kind,
        ObjectType::Font | ObjectType::Xhr | ObjectType::Other
    );
    let (mode, dest, accept) = match (f.navigation, f.kind) {
        (Some(true), _) => ("navigate", "document", NAVIGATION_ACCEPT),
        (Some(false), _) => ("navigate", "iframe", NAVIGATION_ACCEPT),
        (None, ObjectType::Stylesheet) => ("no-cors", "style", "text/css,*/*;q=0.1"),
        (None, ObjectType::Script) => ("no-cors", "script", "*/*"),
        (None, ObjectType::Image) => ("no-cors", "image", IMAGE_ACCEPT),
        (None, ObjectType::Font) => ("cors", "font", "*/*"),
        (None, _) => ("cors", "empty", "*/*"),
    };
    let mut h: Vec<(&str, String)> = Vec::new();
    if f.navigation.is_some() {
        h.push(("sec-ch-ua", SEC_CH_UA.into()));
        h.push(("sec-ch-ua-mobile", "?0".into()));
        h.push(("sec-ch-ua-platform", "\"Linux\"".into()));
        h.push(("upgrade-insecure-requests", "1".into()));
        h.push(("user-agent", USER_AGENT.into()));
    } else {
        // A CORS-mode request carries its initiator's origin: fonts always, a fetch to
        // another origin.
        if let Some((o, _)) =
            initiator.filter(|(o, _)| cors && (f.kind == ObjectType::Font || *o != origin))
        {
            h.push(("origin", o));
        }
        h.push(("sec-ch-ua-platform", "\"Linux\"".into()));
        h.push(("user-agent", USER_AGENT.into()));
        h.push(("sec-ch-ua", SEC_CH_UA.into()));
        h.push(("sec-ch-ua-mobile", "?0".into()));
    }
    h.push(("accept", accept.into()));
    h.push(("sec-fetch-site", fetch_site.into()));
    h.push(("sec-fetch-mode", mode.into()));
    if f.navigation == Some(true) {
        h.push(("sec-fetch-user", "?1".into()));
    }
    h.push(("sec-fetch-dest", dest.into()));
    if let Some(r) = f.referer {
        h.push(("referer", r));
    }
    h.push(("accept-encoding", "gzip, deflate, br, zstd".into()));
    h.push(("accept-language", "en-US,en;q=0.9".into()));
    if let Some(c) = f.cookie.filter(|_| f.privacy == Privacy::Credentialed) {
        h.push(("cookie", c));
    }
    h.into_iter().map(|(n, v)| (n.to_string(), v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(h: &[(String, String)]) -> Vec<&str> {
        h.iter().map(|(n, _)| n.as_str()).collect()
    }

    fn url(u: &str) -> Url {
        Url::parse(u).unwrap()
    }

    /// A request the page `page` makes for `u`.
    fn from_page(
        kind: ObjectType,
        u: &str,
        page: &Url,
        referer: &str,
        privacy: Privacy,
    ) -> Vec<(String, String)> {
        request_headers(Fetch {
            kind,
            navigation: (kind == ObjectType::Document).then_some(false),
            url: &url(u),
            initiator: Some(page),
            referer: Some(referer.into()),
            cookie: Some("k=v".into()),
            privacy,
        })
    }

    fn get<'a>(h: &'a [(String, String)], name: &str) -> Option<&'a str> {
        h.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    #[test]
    fn navigations_and_subresources_carry_what_chromium_156_sent() {
        let page = url("https://www.a.example/");
        let top = request_headers(Fetch {
            kind: ObjectType::Document,
            navigation: Some(true),
            url: &page,
            initiator: None,
            referer: None,
            cookie: Some("k=v".into()),
            privacy: Privacy::Credentialed,
        });
        assert_eq!(
            names(&top),
            [
                "sec-ch-ua",
                "sec-ch-ua-mobile",
                "sec-ch-ua-platform",
                "upgrade-insecure-requests",
                "user-agent",
                "accept",
                "sec-fetch-site",
                "sec-fetch-mode",
                "sec-fetch-user",
                "sec-fetch-dest",
                "accept-encoding",
                "accept-language",
                "cookie"
            ]
        );
        assert_eq!(get(&top, "sec-fetch-site"), Some("none"));
        // A font from a sibling host: CORS with Origin, same-site; in privacy mode `pm`
        // it goes without the cookie.
        let font = from_page(
            ObjectType::Font,
            "https://static.a.example/f.woff2",
            &page,
            "https://www.a.example/s.css",
            Privacy::Anonymous,
        );
        assert_eq!(names(&font)[..2], ["origin", "sec-ch-ua-platform"]);
        assert_eq!(get(&font, "origin"), Some("https://www.a.example"));
        assert_eq!(get(&font, "sec-fetch-site"), Some("same-site"));
        assert_eq!(get(&font, "sec-fetch-mode"), Some("cors"));
        assert_eq!(get(&font, "sec-fetch-dest"), Some("font"));
        assert_eq!(get(&font, "cookie"), None);
        // A third-party image; a frame of the page's origin.
        let img = from_page(
            ObjectType::Image,
            "https://cdn.b.example/i.gif",
            &page,
            "https://www.a.example/",
            Privacy::Partitioned,
        );
        assert_eq!(get(&img, "sec-fetch-site"), Some("cross-site"));
        assert_eq!(get(&img, "sec-fetch-mode"), Some("no-cors"));
        assert_eq!(get(&img, "origin"), None);
        assert_eq!(get(&img, "cookie"), None);
        let frame = from_page(
            ObjectType::Document,
            "https://www.a.example/f.html",
            &page,
            "https://www.a.example/",
            Privacy::Credentialed,
        );
        assert_eq!(get(&frame, "sec-fetch-dest"), Some("iframe"));
        assert_eq!(get(&frame, "sec-fetch-user"), None);
        assert_eq!(get(&frame, "sec-fetch-site"), Some("same-origin"));
        assert_eq!(get(&frame, "cookie"), Some("k=v"));
    }
}
