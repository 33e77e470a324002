//! The recorded request and response headers of a synthesized object.

use super::{Headers, Node, Sub, SERVERS};
use crate::rng::Rng;

/// The origin (`scheme://host[:port]`) of the document `node` belongs to, when `node` is
/// of a kind a browser may fetch in CORS mode and lives on another domain than that
/// document; `None` otherwise.
fn cors_origin(node: &Node, nodes: &[Node]) -> Option<String> {
    if !matches!(node.sub, Sub::Json | Sub::Font | Sub::Other | Sub::Css) {
        return None;
    }
    let mut doc = node.parent?;
    while !matches!(nodes[doc].sub, Sub::Root | Sub::Iframe) {
        doc = nodes[doc].parent?;
    }
    if nodes[doc].domain == node.domain {
        return None;
    }
    let url = &nodes[doc].url;
    let after_scheme = url.find("://")? + 3;
    let end = url[after_scheme..]
        .find('/')
        .map_or(url.len(), |i| after_scheme + i);
    Some(url[..end].to_string())
}

/// The recorded request and response headers of one object (and whether it is dynamic:
/// the root, iframes and XHRs are `no-cache` and think longer on the server).
pub(super) fn headers_of(
    node: &Node,
    nodes: &[Node],
    cookies: &[Option<String>],
    domains: &[String],
    rng: &mut Rng,
) -> (Headers, Headers, bool) {
    let mut req = vec![
        ("user-agent".to_string(), "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36".to_string()),
        ("accept".to_string(), accept_for(node.sub).to_string()),
        ("accept-encoding".to_string(), "gzip, deflate, br".to_string()),
        ("accept-language".to_string(), "en-US,en;q=0.9".to_string()),
    ];
    if let Some(pa) = node.parent {
        req.push(("referer".into(), nodes[pa].url.clone()));
    }
    if let Some(c) = &cookies[node.domain] {
        req.push(("cookie".into(), c.clone()));
    }
    let dynamic = matches!(node.sub, Sub::Root | Sub::Json | Sub::Iframe);
    let mut resp = vec![
        (
            "date".to_string(),
            "Tue, 05 Mar 2013 10:00:00 GMT".to_string(),
        ),
        (
            "server".to_string(),
            SERVERS[node.domain % SERVERS.len()].to_string(),
        ),
        (
            "content-type".to_string(),
            node.sub.content_type().to_string(),
        ),
        (
            "cache-control".to_string(),
            if dynamic {
                "private, no-cache".into()
            } else {
                format!("public, max-age={}", rng.range(3600, 31_536_000))
            },
        ),
    ];
    if !dynamic {
        resp.push(("etag".into(), format!("\"{}\"", rng.hex(16))));
        resp.push((
            "last-modified".into(),
            "Mon, 04 Mar 2013 08:30:00 GMT".into(),
        ));
    }
    if matches!(
        node.sub,
        Sub::Root | Sub::Css | Sub::Js | Sub::Json | Sub::Iframe
    ) {
        resp.push(("vary".into(), "Accept-Encoding".into()));
    }
    // An object a browser may fetch in CORS mode (a script's credentialed fetch(), a
    // font) from another origin than its document's carries the CORS headers that let the
    // browser use it, as a site serving such fetches must (Fetch standard, "CORS check":
    // Access-Control-Allow-Origin naming the origin, and Allow-Credentials for a
    // credentialed request). Without them Chromium refuses the response.
    if let Some(origin) = cors_origin(node, nodes) {
        resp.push(("access-control-allow-origin".into(), origin));
        resp.push(("access-control-allow-credentials".into(), "true".into()));
    }
    if node.sub == Sub::Root || (cookies[node.domain].is_some() && rng.chance(0.05)) {
        resp.push((
            "set-cookie".into(),
            format!(
                "sid={}; path=/; domain={}",
                rng.hex(32),
                domains[node.domain]
            ),
        ));
    }
    (req, resp, dynamic)
}

fn accept_for(s: Sub) -> &'static str {
    match s {
        Sub::Root | Sub::Iframe => {
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
        }
        Sub::Css => "text/css,*/*;q=0.1",
        Sub::Img => "image/avif,image/webp,image/apng,image/*,*/*;q=0.8",
        Sub::Json => "application/json, text/plain, */*",
        _ => "*/*",
    }
}
