//! Named page-statistics sources for the synthetic corpus. Each calibration copies the
//! published statistics of one era's pages (objects, bytes, hosts and, where the source
//! gives it, the split by type) and states what it had to assume. None is fitted to any
//! page-load result (docs/design.md's honesty rules).

/// One row of a source: a page (or the average page) the generator copies.
pub(crate) struct Row {
    /// Short name used in page names (`03-news`).
    pub kind: &'static str,
    /// Objects per page.
    pub objects: f64,
    /// Bytes per page, KB (1,024 bytes).
    pub size_kb: f64,
    /// Distinct hosts per page.
    pub domains: f64,
    /// How the objects divide into types.
    pub mix: Mix,
    /// Mean request header bytes (HTTP/1.1 wire form), when the source gives it: each
    /// host's cookie is sized so that its requests come to a size drawn around this.
    pub request_header_bytes: Option<f64>,
}

/// The split by type a source gives.
pub(crate) enum Mix {
    /// Object counts in three classes (the cellular study's table): text documents, JS and
    /// CSS together, images and other. Bytes are spread by the generator's per-type sizes.
    Classes { text: f64, jscss: f64, images: f64 },
    /// Counts and bytes (KB) per type; objects not listed are the root document, iframes,
    /// XHRs and other, in the generator's proportions, and take the remaining bytes.
    ByType {
        images: (f64, f64),
        scripts: (f64, f64),
        css: (f64, f64),
        fonts: (f64, f64),
    },
}

/// A named calibration: its rows, its source and its assumptions.
pub struct Calibration {
    /// Name for `--calibration` and `[pages] calibration`.
    pub name: &'static str,
    /// The source, cited.
    pub source: &'static str,
    /// What the source does not give and the generator assumes.
    pub assumptions: &'static str,
    pub(crate) rows: &'static [Row],
}

impl std::fmt::Debug for Calibration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Calibration({})", self.name)
    }
}

/// Calibrations are equal when their names are (names are unique).
impl PartialEq for Calibration {
    fn eq(&self, other: &Calibration) -> bool {
        self.name == other.name
    }
}

impl Calibration {
    /// The source's mean objects, KB and hosts per page (over its rows).
    pub fn means(&self) -> (f64, f64, f64) {
        let n = self.rows.len() as f64;
        let sum = |f: fn(&Row) -> f64| self.rows.iter().map(f).sum::<f64>() / n;
        (sum(|r| r.objects), sum(|r| r.size_kb), sum(|r| r.domains))
    }
}

const fn classes(
    kind: &'static str,
    objects: f64,
    size_kb: f64,
    domains: f64,
    text: f64,
    jscss: f64,
    images: f64,
) -> Row {
    Row {
        kind,
        objects,
        size_kb,
        domains,
        mix: Mix::Classes {
            text,
            jscss,
            images,
        },
        request_header_bytes: None,
    }
}

/// lab-facts §4 ("Towards a SPDY-ier mobile web", 20 pages, 2013).
const CELLULAR_2013: [Row; 20] = [
    classes("finance", 134.8, 626.9, 37.6, 28.6, 41.3, 64.9),
    classes("entertainment", 160.6, 2197.3, 36.3, 16.5, 28.0, 116.1),
    classes("shopping", 143.8, 1563.1, 15.8, 13.3, 36.8, 93.7),
    classes("portal", 121.6, 963.3, 27.5, 9.6, 18.3, 93.7),
    classes("technology", 45.2, 602.8, 3.0, 2.0, 18.0, 25.2),
    classes("isp", 163.4, 1594.5, 13.2, 13.2, 36.4, 113.8),
    classes("news", 115.8, 1130.6, 28.5, 9.1, 49.5, 57.2),
    classes("news", 157.7, 1184.5, 27.3, 29.6, 28.3, 99.8),
    classes("shopping", 5.1, 56.2, 2.0, 3.1, 2.0, 0.0),
    classes("auction", 59.3, 719.7, 17.9, 6.8, 7.0, 45.5),
    classes("radio", 122.1, 1489.1, 17.9, 24.1, 21.0, 77.0),
    classes("photos", 29.4, 688.0, 4.0, 2.3, 10.0, 17.1),
    classes("technology", 63.4, 895.1, 9.0, 4.1, 15.0, 44.3),
    classes("baseball", 167.8, 1130.5, 12.5, 19.5, 94.0, 54.3),
    classes("news", 323.0, 1722.7, 84.7, 73.4, 73.6, 176.0),
    classes("football", 267.1, 2311.0, 75.0, 60.3, 56.9, 149.9),
    classes("news", 218.5, 4691.3, 37.0, 19.0, 56.3, 143.2),
    classes("photos", 33.6, 1664.8, 9.1, 3.3, 6.7, 23.6),
    classes("radio", 68.7, 2908.9, 15.5, 5.2, 23.8, 39.7),
    classes("weather", 163.2, 1653.8, 48.7, 19.7, 45.3, 98.2),
];

/// lab-facts §6: Google's "Web metrics" (2010), all sites.
const WEB_2010: [Row; 1] = [Row {
    kind: "web2010",
    objects: 43.91,
    size_kb: 320.0,
    domains: 7.01,
    mix: Mix::ByType {
        images: (29.39, 205.99),
        scripts: (7.09, 57.98),
        css: (3.22, 18.72),
        fonts: (0.0, 0.0),
    },
    // The SPDY whitepaper (lab-facts §4): typical request headers 700-800 bytes, from
    // 200 B to over 2 KB, User-Agent, Host, Accept* and Cookie repeated to each host.
    request_header_bytes: Some(750.0),
}];

/// HTTP Archive Web Almanac 2024, Page Weight chapter (median desktop page).
const WEB_2025: [Row; 1] = [Row {
    kind: "web2025",
    objects: 71.0,
    size_kb: 2652.0,
    domains: 29.0,
    mix: Mix::ByType {
        images: (18.0, 1054.0),
        scripts: (24.0, 613.0),
        css: (6.0, 78.0),
        fonts: (3.0, 131.0),
    },
    request_header_bytes: None,
}];

/// Every calibration; the first is the default.
pub const CALIBRATIONS: &[Calibration] = &[
    Calibration {
        name: "cellular-2013",
        source: "Erman et al., \"Towards a SPDY'ier mobile web\" (CoNEXT 2013), the 20 pages \
                 of its page table (lab-facts §4): objects, KB, domains, and object counts of \
                 text, JS/CSS and images/other per page",
        assumptions: "JS:CSS = 3:2 by count; images/other are 90% images and up to 2 fonts; \
                      text objects beyond the root are iframes and JSON XHRs in equal parts; \
                      bytes spread by log-normal sizes per type",
        rows: &CELLULAR_2013,
    },
    Calibration {
        name: "web-2010",
        source: "Google, \"Web metrics: size and number of resources\" (S. Ramachandran, May \
                 2010, 4.2 billion pages, all sites; lab-facts §6): 43.91 resources, 320 KB, \
                 7.01 hosts, 29.39 images (205.99 KB), 7.09 scripts (57.98 KB), 3.22 \
                 stylesheets (18.72 KB) per page",
        assumptions: "no web fonts; the remaining 4.2 resources (37 KB) are the root HTML, \
                      iframes, XHRs and other; one page shape with ±15% jitter (the source \
                      gives means, not spreads); request headers of 750 bytes on average \
                      (the SPDY whitepaper's typical 700-800, lab-facts §4), reached by \
                      each host's cookie: its requests' size drawn log-normal around 750 \
                      (sigma 0.4, kept within the whitepaper's 200 B to 2 KB)",
        rows: &WEB_2010,
    },
    Calibration {
        name: "web-2025",
        source: "HTTP Archive Web Almanac 2024, Page Weight chapter (October 2024 crawl, median \
                 desktop page): 2,652 KB and 71 requests; images 1,054 KB in 18 requests, \
                 JavaScript 613 KB in 24, fonts 131 KB, CSS 78 KB; hosts: the Almanac 2024 \
                 Third Parties chapter's median of 27 third parties (top million) plus 2 \
                 first-party hosts",
        assumptions: "the source gives medians, used as means; 6 stylesheets (the Almanac \
                      2020 CSS chapter's median of remote stylesheets) and 3 font files; \
                      2 first-party hosts; the bytes the by-type medians leave (776 KB) go to \
                      the root, iframes, XHRs and other; one page shape with ±15% jitter",
        rows: &WEB_2025,
    },
];

/// Finds a calibration by name.
pub fn calibration(name: &str) -> Result<&'static Calibration, String> {
    CALIBRATIONS.iter().find(|c| c.name == name).ok_or_else(|| {
        let names: Vec<&str> = CALIBRATIONS.iter().map(|c| c.name).collect();
        format!("no calibration {name:?}; known: {}", names.join(", "))
    })
}
