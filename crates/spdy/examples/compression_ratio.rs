//! Header compression ratio over the requests and responses of a realistic 100-object
//! page, in CRIME-safe and plain mode.
//!
//!     cargo run --release -p spdy --example compression_ratio
//!
//! The page (a 2013-style news article) has 100 objects on 8 origins; as in a browser,
//! each origin gets one SPDY/3.1 session, i.e. one compression context per direction, and
//! the objects are fetched in a plausible order (document, then CSS/JS, then images,
//! interleaved across origins). Sizes are reported against the uncompressed SPDY
//! name/value blocks and against the same headers written as HTTP/1.1 text. Published
//! SPDY figures: about 88% smaller requests and 85% smaller responses; this prints what
//! this implementation gets and is not tuned to match.

use spdy::compress::{CompressionConfig, HeaderCompressor};
use spdy::{http, Headers, Version};
use std::collections::BTreeMap;

const V: Version = Version::V3_1;
const UA: &str = "Mozilla/5.0 (Windows NT 6.1; WOW64) AppleWebKit/537.36 (KHTML, like Gecko) \
                  Chrome/31.0.1650.63 Safari/537.36";
const PAGE: &str =
    "https://www.example-news.com/2013/12/13/world/europe/kiev-protests-continue.html";

/// A small deterministic generator for ids, sizes and times.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn hex(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from_digit(self.below(16) as u32, 16).unwrap())
            .collect()
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Html,
    Css,
    Js,
    Image,
    Font,
    Beacon,
}

struct Origin {
    host: &'static str,
    cookie: Option<String>,
    server: &'static str,
    cache: &'static str,
}

struct Object {
    origin: usize,
    path: String,
    kind: Kind,
    referer: String,
}

fn origins(rng: &mut Rng) -> Vec<Origin> {
    let utm = format!(
        "__utma={}.{}.1386861102.1386932254.1386950211.4; __utmb={}.3.10.1386950211; \
         __utmc={}; __utmz={}.1386861102.1.1.utmcsr=(direct)|utmccn=(direct)|utmcmd=(none)",
        rng.below(1 << 30),
        rng.below(1 << 31),
        rng.below(1 << 30),
        rng.below(1 << 30),
        rng.below(1 << 30)
    );
    vec![
        Origin {
            host: "www.example-news.com",
            cookie: Some(format!(
                "RMID={}; nyt-m={}; adxcs=-; WT_FPC=id={}:lv=1386950210123:ss=1386950210123; {utm}",
                rng.hex(24),
                rng.hex(32),
                rng.hex(26)
            )),
            server: "Apache",
            cache: "no-cache",
        },
        Origin {
            host: "static.example-news-cdn.com",
            cookie: None,
            server: "nginx/1.4.4",
            cache: "public, max-age=31536000",
        },
        Origin {
            host: "img.example-news-cdn.com",
            cookie: None,
            server: "ECS (lga/13A4)",
            cache: "public, max-age=2592000",
        },
        Origin {
            host: "ads.adserver.example",
            cookie: Some(format!(
                "id={}|t=1386950211|et=730|cs=002213fd48",
                rng.hex(16)
            )),
            server: "cafe",
            cache: "private, no-cache, no-store, must-revalidate",
        },
        Origin {
            host: "www.google-analytics.example",
            cookie: None,
            server: "Golfe2",
            cache: "private, no-cache, no-cache=Set-Cookie, proxy-revalidate",
        },
        Origin {
            host: "fonts.example-fonts.com",
            cookie: None,
            server: "sffe",
            cache: "public, max-age=86400",
        },
        Origin {
            host: "platform.social.example",
            cookie: Some(format!(
                "guest_id=v1%3A{}; pid=\"v3:{}\"; __utma={}.{}.1386100000.1386100000.1386950211.2",
                rng.below(1 << 50),
                rng.below(1 << 40),
                rng.below(1 << 30),
                rng.below(1 << 31)
            )),
            server: "tfe",
            cache: "public, max-age=1800",
        },
        Origin {
            host: "cdn.video.example",
            cookie: None,
            server: "AmazonS3",
            cache: "public, max-age=604800",
        },
    ]
}

/// 100 objects in fetch order.
fn page(rng: &mut Rng) -> Vec<Object> {
    let mut objs = Vec::new();
    let mut add = |origin: usize, path: String, kind: Kind, referer: &str| {
        objs.push(Object {
            origin,
            path,
            kind,
            referer: referer.to_string(),
        })
    };
    add(
        0,
        PAGE[28..].to_string(),
        Kind::Html,
        "https://www.example-news.com/",
    );
    // Style sheets and scripts.
    for (o, p) in [
        (1, "/css/0.1/screen/build/article/2.0/styles.css"),
        (1, "/css/0.1/screen/build/common/global.css"),
        (0, "/css/article/comments.css"),
        (1, "/css/0.1/print/styles.css"),
        (5, "/css?family=Georgia:400,700|Open+Sans:400italic,400,700"),
        (0, "/css/section/world.css"),
        (0, "/css/2.0/video/player.css"),
    ] {
        add(o, p.to_string(), Kind::Css, PAGE);
    }
    for (o, p) in [
        (1, "/js/app/lib/jquery/jquery-1.9.1.min.js"),
        (1, "/js/app/common/analytics/tagx.js"),
        (1, "/js/app/article/articleShare.js"),
        (0, "/js/app/common/nyt5/bootstrap.js?v=20131212"),
        (0, "/js/util/comments/comments-2.0.js"),
        (0, "/svc/user/auth/status.js?callback=authStatus"),
        (1, "/js/app/recommendations/recommendationsModule.js"),
        (1, "/js/app/lib/require/require-2.1.9.min.js"),
        (3, "/adx/bin/adx_remote.js?type=fastscript&page=www.example-news.com/yr/mo/day/world&posall=Bar1A,Box1,Frame4A,MiddleRight,Position1,TopLeft"),
        (4, "/ga.js"),
        (0, "/js/app/article/upshot.js"),
        (6, "/widgets.js"),
        (7, "/player/2.0/embed.js"),
    ] {
        add(o, p.to_string(), Kind::Js, PAGE);
    }
    // Images, interleaved across origins as the parser discovers them.
    let sections = [
        "world", "europe", "business", "sports", "arts", "opinion", "science",
    ];
    for i in 0..66 {
        let (o, path, referer) = match i % 10 {
            0..=3 => {
                let s = sections[rng.below(7) as usize];
                (
                    1,
                    format!(
                        "/images/2013/12/{:02}/{s}/{:08x}/{:08x}-thumbStandard.jpg",
                        1 + rng.below(13),
                        rng.next() as u32,
                        rng.next() as u32
                    ),
                    PAGE.to_string(),
                )
            }
            4..=6 => (
                2,
                format!(
                    "/images/2013/12/13/{}/13{}-{}/13{}-articleLarge.jpg",
                    sections[rng.below(7) as usize],
                    sections[rng.below(7) as usize],
                    i,
                    sections[rng.below(7) as usize]
                ),
                PAGE.to_string(),
            ),
            7 => (
                1,
                format!(
                    "/images/icons/{}_sprite_v{}.png",
                    ["share", "nav", "t"][i % 3],
                    i
                ),
                "https://static.example-news-cdn.com/css/0.1/screen/build/article/2.0/styles.css"
                    .to_string(),
            ),
            8 => (
                0,
                format!("/images/section/{}-hd.gif", sections[i % 7]),
                PAGE.to_string(),
            ),
            _ => (
                7,
                format!("/posters/2013/12/{:010}.jpg", rng.below(1 << 32)),
                PAGE.to_string(),
            ),
        };
        add(o, path, Kind::Image, &referer);
    }
    add(
        5,
        "/s/opensans/v8/u-WUoqrET9fUeobQW7jkRT8E0i7KZn-EPnyo3HZu7kw.woff".into(),
        Kind::Font,
        PAGE,
    );
    add(
        5,
        "/s/georgia/v3/k3k702ZOKiLJc3WVjuplzHhCUOGz7vYGh680lGh-uXM.woff".into(),
        Kind::Font,
        PAGE,
    );
    for i in 0..3 {
        add(
            3,
            format!(
                "/adx/images/ADS/{}/{}/{}_300x250.gif",
                30000 + rng.below(9999),
                rng.below(999_999),
                ["Box1", "MiddleRight", "Bar1A"][i]
            ),
            Kind::Image,
            PAGE,
        );
    }
    add(
        3,
        "/adx/bin/clientside/ping.gif?rand=1386950211".into(),
        Kind::Beacon,
        PAGE,
    );
    add(
        3,
        "/adx/bin/clientside/vi.gif?ord=42".into(),
        Kind::Beacon,
        PAGE,
    );
    add(
        4,
        format!(
            "/__utm.gif?utmwv=5.4.6&utms=3&utmn={}&utmhn=www.example-news.com&utmcs=UTF-8\
             &utmsr=1920x1080&utmvp=1903x955&utmsc=24-bit&utmul=en-us&utmje=1&utmfl=11.9%20r900\
             &utmdt=Kiev%20Protests%20Continue%20-%20Example%20News&utmhid={}&utmr=-\
             &utmp=%2F2013%2F12%2F13%2Fworld%2Feurope%2Fkiev-protests-continue.html\
             &utmht=1386950211123&utmac=UA-58630905-1&utmcc=__utma%3D{}.{}.1386861102.\
             1386932254.1386950211.4%3B%2B__utmz%3D{}.1386861102.1.1.utmcsr%3D(direct)\
             %7Cutmccn%3D(direct)%7Cutmcmd%3D(none)%3B&utmu=q~",
            rng.below(1 << 31),
            rng.below(1 << 31),
            rng.below(1 << 30),
            rng.below(1 << 31),
            rng.below(1 << 30)
        ),
        Kind::Beacon,
        PAGE,
    );
    for p in [
        "/widgets/tweet_button.html",
        "/widgets/follow_button.html",
        "/i/jot",
        "/t.gif",
    ] {
        add(6, p.to_string(), Kind::Image, PAGE);
    }
    add(0, "/favicon.ico".into(), Kind::Image, PAGE);
    assert_eq!(objs.len(), 100, "the page has 100 objects");
    objs
}

fn accept(kind: Kind) -> &'static str {
    match kind {
        Kind::Html => "text/html,application/xhtml+xml,application/xml;q=0.9,image/webp,*/*;q=0.8",
        Kind::Css => "text/css,*/*;q=0.1",
        Kind::Js | Kind::Font => "*/*",
        Kind::Image | Kind::Beacon => "image/webp,*/*;q=0.8",
    }
}

fn request_headers(o: &Origin, obj: &Object) -> Headers {
    let mut extra = Headers::new();
    extra.add("user-agent", UA);
    extra.add("accept", accept(obj.kind));
    extra.add("accept-encoding", "gzip,deflate,sdch");
    extra.add("accept-language", "en-US,en;q=0.8");
    if obj.kind != Kind::Html {
        extra.add("referer", &obj.referer);
    }
    if let Some(c) = &o.cookie {
        extra.add("cookie", c);
    }
    if obj.kind == Kind::Font {
        extra.add("origin", "https://www.example-news.com");
    }
    http::request_headers(V, "GET", "https", o.host, &obj.path, &extra)
}

fn response_headers(o: &Origin, obj: &Object, i: usize, rng: &mut Rng) -> Headers {
    let mut h = Headers::new();
    h.add(
        "date",
        format!("Fri, 13 Dec 2013 16:05:{:02} GMT", 11 + i / 10),
    );
    h.add("server", o.server);
    let (ct, len) = match obj.kind {
        Kind::Html => ("text/html; charset=utf-8", 38_000 + rng.below(40_000)),
        Kind::Css => ("text/css", 2_000 + rng.below(30_000)),
        Kind::Js => ("application/javascript", 1_000 + rng.below(90_000)),
        Kind::Font => ("font/woff", 20_000 + rng.below(20_000)),
        Kind::Beacon => ("image/gif", 35 + rng.below(10)),
        Kind::Image if obj.path.ends_with(".png") => ("image/png", 500 + rng.below(9_000)),
        Kind::Image if obj.path.ends_with(".gif") => ("image/gif", 43 + rng.below(20_000)),
        Kind::Image if obj.path.ends_with(".html") => ("text/html; charset=utf-8", 5_000),
        Kind::Image => ("image/jpeg", 3_000 + rng.below(60_000)),
    };
    h.add("content-type", ct);
    h.add("content-length", len.to_string());
    h.add("cache-control", o.cache);
    let text = matches!(obj.kind, Kind::Html | Kind::Css | Kind::Js) || ct.starts_with("text/");
    if text {
        h.add("content-encoding", "gzip");
        h.add("vary", "Accept-Encoding");
    }
    if matches!(obj.kind, Kind::Html | Kind::Beacon) || obj.origin == 3 {
        h.add("expires", "Thu, 01 Dec 1994 16:00:00 GMT");
        h.add("pragma", "no-cache");
    } else {
        h.add("etag", format!("\"{}-{}\"", rng.hex(4), rng.hex(13)));
        h.add(
            "last-modified",
            format!(
                "{}, {:02} Dec 2013 {:02}:{:02}:{:02} GMT",
                ["Mon", "Tue", "Wed", "Thu", "Fri"][rng.below(5) as usize],
                1 + rng.below(12),
                rng.below(24),
                rng.below(60),
                rng.below(60)
            ),
        );
        h.add("accept-ranges", "bytes");
        if o.cache.starts_with("public") {
            h.add("age", rng.below(86_400).to_string());
            h.add("x-cache", "HIT");
        }
    }
    if obj.kind == Kind::Font {
        h.add("access-control-allow-origin", "*");
        h.add("timing-allow-origin", "*");
    }
    if obj.kind == Kind::Html {
        for c in [
            format!(
                "RMID={}; Expires=Sat, 13 Dec 2014 16:05:11 GMT; Path=/; Domain=.example-news.com",
                rng.hex(24)
            ),
            "adxcs=-; path=/; domain=.example-news.com".to_string(),
        ] {
            h.add("set-cookie", c);
        }
        h.add("x-frame-options", "SAMEORIGIN");
    }
    if obj.origin == 3 {
        h.add("set-cookie", format!("id={}|t=1386950211|et=730|cs=002213fd48; path=/; domain=.adserver.example; expires=Sun, 13-Dec-2015 16:05:11 GMT", rng.hex(16)));
        h.add("p3p", "policyref=\"https://ads.adserver.example/w3c/p3p.xml\", CP=\"NOI DEV PSA PSD IVA PVD OTP OUR OTR IND OTC\"");
    }
    http::response_headers(V, 200, &h)
}

/// The same headers as HTTP/1.1 text (request line or status line, one line per value).
fn http1_len(h: &Headers, request: bool) -> usize {
    let mut n = 0;
    let get = |k: &str| h.get_str(k).unwrap_or("").len();
    if request {
        n += get(":method") + 1 + get(":path") + 1 + get(":version") + 2;
        n += "host: ".len() + get(":host") + 2;
    } else {
        n += get(":version") + 1 + get(":status") + 2;
    }
    for (name, value) in h.iter() {
        if name.starts_with(b":") {
            continue;
        }
        for v in value.split(|&b| b == 0) {
            n += name.len() + 2 + v.len() + 2;
        }
    }
    n + 2
}

#[derive(Default)]
struct Tally {
    raw: usize,
    compressed: usize,
    http1: usize,
}

fn pct(from: usize, to: usize) -> f64 {
    100.0 * (1.0 - to as f64 / from as f64)
}

fn main() {
    let mut rng = Rng(0x5eed_2013_1213);
    let origins = origins(&mut rng);
    let objects = page(&mut rng);
    let requests: Vec<Headers> = objects
        .iter()
        .map(|o| request_headers(&origins[o.origin], o))
        .collect();
    let responses: Vec<Headers> = objects
        .iter()
        .enumerate()
        .map(|(i, o)| response_headers(&origins[o.origin], o, i, &mut rng))
        .collect();
    let per_origin: BTreeMap<usize, usize> = objects.iter().fold(BTreeMap::new(), |mut m, o| {
        *m.entry(o.origin).or_default() += 1;
        m
    });

    println!(
        "header compression over a {}-object page on {} origins (one {V} session per origin)",
        objects.len(),
        origins.len()
    );
    for (o, n) in &per_origin {
        println!("  {:>3} objects  {}", n, origins[*o].host);
    }
    println!();
    println!(
        "{:<12} {:>9} {:>11} {:>13} {:>13}    {:>9} {:>11} {:>13} {:>13}",
        "mode",
        "req NV B",
        "req zlib B",
        "vs NV block",
        "vs HTTP/1.1",
        "resp NV B",
        "resp zlib B",
        "vs NV block",
        "vs HTTP/1.1"
    );
    for (mode, crime_safe) in [("crime-safe", true), ("plain", false)] {
        let cfg = CompressionConfig {
            crime_safe,
            ..CompressionConfig::default()
        };
        // One context per origin and direction, as on real sessions.
        let mut client: Vec<HeaderCompressor> = origins
            .iter()
            .map(|_| HeaderCompressor::new(V, cfg))
            .collect();
        let mut server: Vec<HeaderCompressor> = origins
            .iter()
            .map(|_| HeaderCompressor::new(V, cfg))
            .collect();
        let (mut req, mut resp) = (Tally::default(), Tally::default());
        for (i, obj) in objects.iter().enumerate() {
            let mut out = Vec::new();
            client[obj.origin].compress(&requests[i], &mut out);
            req.raw += requests[i].encoded_len(V);
            req.compressed += out.len();
            req.http1 += http1_len(&requests[i], true);
            let mut out = Vec::new();
            server[obj.origin].compress(&responses[i], &mut out);
            resp.raw += responses[i].encoded_len(V);
            resp.compressed += out.len();
            resp.http1 += http1_len(&responses[i], false);
        }
        println!(
            "{:<12} {:>9} {:>11} {:>12.1}% {:>12.1}%    {:>9} {:>11} {:>12.1}% {:>12.1}%",
            mode,
            req.raw,
            req.compressed,
            pct(req.raw, req.compressed),
            pct(req.http1, req.compressed),
            resp.raw,
            resp.compressed,
            pct(resp.raw, resp.compressed),
            pct(resp.http1, resp.compressed),
        );
    }
    println!();
    println!("(compressor: zlib level 9, windowBits 11, memLevel 1 — the crate's default;");
    println!(" \"vs NV block\" = smaller than the uncompressed SPDY name/value blocks,");
    println!(" \"vs HTTP/1.1\" = smaller than the same headers as HTTP/1.1 text.)");
}
