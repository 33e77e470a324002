//! The loader against the replay server in the same process, on loopback: a synthetic
//! corpus loaded over HTTP/1.1, SPDY and HTTP/2, plain and TLS, per-origin and
//! single-domain. Every load must fetch exactly the page's archived objects, with
//! byte-identical bodies, every one found by the loader's own parsing (or the archive's
//! script delays), and produce a valid HAR.

use base64::Engine as _;
use speedy_archive::synth::{synthesize, SynthOptions};
use speedy_archive::Archive;
use speedy_browser::config::{Domains, LoadConfig, Proto, Transport};
use speedy_browser::net::Target;
use speedy_browser::{har, loader, report};
use speedy_server::{PushPolicy, Replay, ReplayOptions};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

struct Served {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(archive: Arc<Archive>, tls: Option<&PathBuf>, opts: ReplayOptions) -> Served {
    let mut cfg = speedy_net::ServerConfig::default();
    if let Some(ca_dir) = tls {
        let replay = Replay::new(archive.clone(), opts);
        let (c, k) = speedy_server::ca::issue(ca_dir, &replay.hosts()).unwrap();
        let alpn = ["h2", "spdy/3.1", "spdy/3", "spdy/2", "http/1.1"];
        cfg.tls = Some(speedy_net::tls::server_config(c, k, &alpn).unwrap());
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handler = Arc::new(Replay::new(archive, opts));
    let task = tokio::spawn(async move {
        let _ = speedy_net::server::serve(listener, cfg, handler).await;
    });
    Served { addr, task }
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "speedy-browser-{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Loads every page of `archive` and checks the load against the archive.
async fn load_and_check(
    archive: &Archive,
    addr: SocketAddr,
    proto: Proto,
    transport: Transport,
    domains: Domains,
    ca: Option<&PathBuf>,
) {
    for page in &archive.pages {
        let url = archive.objects[page.root].url.clone();
        let mut cfg = LoadConfig::new(&url, proto);
        cfg.transport = transport;
        // These count one connection per origin: no race to new servers, no partitioned
        // pools and no preconnects (all tested in the engine's tests).
        cfg.race_connections = false;
        cfg.partition_frames = false;
        cfg.preconnect = false;
        cfg.domains = domains;
        cfg.keep_bodies = true;
        cfg.timeout = Duration::from_secs(30);
        cfg.resolve.insert(
            "*".into(),
            Target {
                ip: addr.ip(),
                port: Some(addr.port()),
            },
        );
        if let Some(ca) = ca {
            cfg.verify = speedy_net::tls::Verify::CaFile(ca.join("ca.pem"));
        }
        let what = format!("{} {proto:?} {transport:?} {domains:?}", page.name);
        let res = loader::load(&cfg, Some(archive)).await.unwrap();
        assert!(!res.timed_out, "{what}: timed out");
        assert!(res.missing.is_empty(), "{what}: missing {:?}", res.missing);
        assert!(
            res.unexpected.is_empty(),
            "{what}: unexpected {:?}",
            res.unexpected
        );
        assert!(
            res.missed_by_parser.is_empty(),
            "{what}: the parser missed {:?}",
            res.missed_by_parser
        );
        let want: HashSet<&str> = page
            .objects
            .iter()
            .map(|&o| archive.objects[o].url.as_str())
            .collect();
        assert_eq!(res.reqs.len(), want.len(), "{what}: one request per object");
        for r in &res.reqs {
            assert_eq!(r.status, 200, "{what}: {} {:?}", r.url_s, r.error);
            let id = r.archive_id.expect("archived");
            let body = r.body.as_ref().expect("kept");
            assert!(
                body[..] == archive.body(id)[..],
                "{what}: body of {} differs",
                r.url_s
            );
        }
        assert!(
            res.on_content_load.is_some() && res.on_load.is_some(),
            "{what}"
        );
        assert!(res.on_content_load <= res.on_load, "{what}");
        // HAR: valid, bodies identical, phases summing to the time.
        let h = serde_json::to_value(report::to_har(&res)).unwrap();
        if let Err(errs) = har::validate(&h, 0.0011) {
            panic!("{what}: invalid HAR:\n{}", errs.join("\n"));
        }
        // The one model reads the loader's HAR back whole: the same document, with the
        // page's typed `_protocol` and `_totals`.
        let text = serde_json::to_vec(&report::to_har(&res)).unwrap();
        let back = har::Har::from_slice(&text).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(back, report::to_har(&res), "{what}");
        let page = back.loaded_page().unwrap();
        assert_eq!(page.totals.requests, want.len() as u64, "{what}");
        assert_eq!(page.totals, &report::totals(&res), "{what}");
        let entries = h["log"]["entries"].as_array().unwrap();
        assert_eq!(entries.len(), want.len());
        for e in entries {
            let url = e["request"]["url"].as_str().unwrap();
            let id = archive
                .objects
                .iter()
                .position(|o| o.url == url)
                .unwrap_or_else(|| panic!("{what}: HAR entry {url} not archived"));
            let text = e["response"]["content"]["text"].as_str().unwrap();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .unwrap();
            assert!(
                bytes[..] == archive.body(id)[..],
                "{what}: HAR body of {url}"
            );
        }
        let tot = report::totals(&res);
        assert!(tot.connections >= 1);
        match (proto, domains) {
            (Proto::Http1, _) => assert!(tot.connections >= 2, "{what}: {tot:?}"),
            (_, Domains::Single) => assert_eq!(tot.connections, 1, "{what}"),
            (_, Domains::PerOrigin) => {
                let origins: HashSet<String> = res.reqs.iter().map(|r| r.url.origin()).collect();
                assert_eq!(tot.connections, origins.len() as u64, "{what}");
            }
        }
        match proto {
            Proto::Spdy => assert!(
                tot.header_bytes_sent
                    .is_some_and(|b| b < tot.header_bytes_sent_raw),
                "{what}: SPDY compresses headers: {tot:?}"
            ),
            Proto::Http1 => assert_eq!(
                tot.header_bytes_sent,
                Some(tot.header_bytes_sent_raw),
                "{what}: HTTP/1.1 sends them as they are"
            ),
            // HPACK's and QPACK's sizes are not measured: absent, never 0.
            _ => assert_eq!(tot.header_bytes_sent, None, "{what}"),
        }
    }
}

fn corpus() -> Arc<Archive> {
    // Small pages keep the test quick; the generator's first rows for this seed.
    let mut a = synthesize(SynthOptions { pages: 2, seed: 11 });
    a.pages.retain(|p| p.objects.len() <= 200);
    Arc::new(a)
}

fn opts() -> ReplayOptions {
    ReplayOptions {
        think_time: false,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loads_over_plain_tcp() {
    let a = corpus();
    let s = serve(a.clone(), None, opts()).await;
    for proto in [Proto::Http1, Proto::Spdy, Proto::H2] {
        load_and_check(
            &a,
            s.addr,
            proto,
            Transport::Plain,
            Domains::PerOrigin,
            None,
        )
        .await;
    }
    for proto in [Proto::Spdy, Proto::H2] {
        load_and_check(&a, s.addr, proto, Transport::Plain, Domains::Single, None).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loads_over_tls_with_the_lab_ca() {
    let a = corpus();
    let ca = temp_dir("ca");
    let s = serve(a.clone(), Some(&ca), opts()).await;
    for proto in [Proto::Http1, Proto::Spdy, Proto::H2] {
        load_and_check(
            &a,
            s.addr,
            proto,
            Transport::Auto,
            Domains::PerOrigin,
            Some(&ca),
        )
        .await;
    }
    for proto in [Proto::Spdy, Proto::H2] {
        load_and_check(
            &a,
            s.addr,
            proto,
            Transport::Auto,
            Domains::Single,
            Some(&ca),
        )
        .await;
    }
    let _ = std::fs::remove_dir_all(&ca);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uses_pushed_resources_and_hints() {
    let a = corpus();
    let pushing = ReplayOptions {
        think_time: false,
        push: PushPolicy::Subresources,
        hint: true,
        ..opts()
    };
    let s = serve(a.clone(), None, pushing).await;
    for proto in [Proto::Spdy, Proto::H2] {
        let page = &a.pages[0];
        let url = a.objects[page.root].url.clone();
        let mut cfg = LoadConfig::new(&url, proto);
        cfg.transport = Transport::Plain;
        cfg.partition_frames = false; // one connection (and look-up) per host
        cfg.keep_bodies = true;
        cfg.hint = true;
        cfg.resolve.insert(
            "*".into(),
            Target {
                ip: s.addr.ip(),
                port: Some(s.addr.port()),
            },
        );
        let res = loader::load(&cfg, Some(&a)).await.unwrap();
        assert!(res.missing.is_empty(), "{proto:?}: {:?}", res.missing);
        assert!(res.unexpected.is_empty(), "{proto:?}: {:?}", res.unexpected);
        let pushed = res.reqs.iter().filter(|r| r.pushed).count();
        assert!(pushed > 0, "{proto:?}: nothing pushed");
        assert_eq!(
            res.reqs.len(),
            page.objects.len(),
            "{proto:?}: no duplicates"
        );
        for r in &res.reqs {
            assert_eq!(r.status, 200, "{} {:?}", r.url_s, r.error);
            assert!(r.body.as_ref().unwrap()[..] == a.body(r.archive_id.unwrap())[..]);
        }
        let h = serde_json::to_value(report::to_har(&res)).unwrap();
        har::validate(&h, 0.0011).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_a_404_and_completes() {
    let mut a = (*corpus()).clone();
    // Drop one image from the server's copy: the loader still finds it in the HTML.
    let page = a.pages[0].clone();
    let victim = *page
        .objects
        .iter()
        .find(|&&o| a.objects[o].kind == speedy_archive::ObjectType::Image)
        .expect("an image");
    let url = a.objects[victim].url.clone();
    let mut served = a.clone();
    served.objects[victim].url = format!("{url}-gone");
    let s = serve(Arc::new(served), None, opts()).await;
    a.pages.truncate(1);
    for proto in [Proto::Http1, Proto::Spdy] {
        let mut cfg = LoadConfig::new(&a.objects[page.root].url, proto);
        cfg.transport = Transport::Plain;
        cfg.partition_frames = false; // one connection (and look-up) per host
        cfg.resolve.insert(
            "*".into(),
            Target {
                ip: s.addr.ip(),
                port: Some(s.addr.port()),
            },
        );
        let res = loader::load(&cfg, Some(&a)).await.unwrap();
        assert!(!res.timed_out);
        assert!(res.on_load.is_some());
        let failed: Vec<&str> = res
            .reqs
            .iter()
            .filter(|r| r.failed())
            .map(|r| r.url_s.as_str())
            .collect();
        assert_eq!(failed, [url.as_str()], "{proto:?}");
        assert_eq!(res.reqs.len(), page.objects.len());
        let h = serde_json::to_value(report::to_har(&res)).unwrap();
        har::validate(&h, 0.0011).unwrap();
        let e = h["log"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["request"]["url"] == url.as_str())
            .unwrap();
        assert_eq!(e["response"]["status"], 404);
    }
}

fn plain_cfg(a: &Archive, s: &Served, proto: Proto) -> LoadConfig {
    let mut cfg = LoadConfig::new(&a.objects[a.pages[0].root].url, proto);
    cfg.transport = Transport::Plain;
    cfg.partition_frames = false; // one connection (and look-up) per host
    cfg.keep_bodies = true;
    cfg.resolve.insert(
        "*".into(),
        Target {
            ip: s.addr.ip(),
            port: Some(s.addr.port()),
        },
    );
    cfg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelines_on_one_connection_per_host() {
    let a = corpus();
    let s = serve(a.clone(), None, opts()).await;
    let mut cfg = plain_cfg(&a, &s, Proto::Http1);
    cfg.per_host = 1;
    cfg.max_connections = 1000;
    cfg.pipeline = 4;
    let res = loader::load(&cfg, Some(&a)).await.unwrap();
    assert!(res.missing.is_empty() && res.unexpected.is_empty());
    for r in &res.reqs {
        assert_eq!(r.status, 200, "{}", r.url_s);
        assert!(r.body.as_ref().unwrap()[..] == a.body(r.archive_id.unwrap())[..]);
    }
    let hosts: HashSet<&str> = res.reqs.iter().map(|r| r.url.host.as_str()).collect();
    assert_eq!(report::totals(&res).connections, hosts.len() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn charges_the_dns_cost_once_per_host() {
    let a = corpus();
    let s = serve(a.clone(), None, opts()).await;
    let mut cfg = plain_cfg(&a, &s, Proto::Spdy);
    cfg.dns_cost = speedy_browser::config::DnsCost::Ms(30.0);
    let res = loader::load(&cfg, Some(&a)).await.unwrap();
    let h = serde_json::to_value(report::to_har(&res)).unwrap();
    har::validate(&h, 0.0011).unwrap();
    let entries = h["log"]["entries"].as_array().unwrap();
    assert!(entries[0]["timings"]["dns"].as_f64().unwrap() >= 29.5);
    let with_dns = entries
        .iter()
        .filter(|e| e["timings"]["dns"].as_f64().unwrap() >= 0.0)
        .count();
    let hosts: HashSet<&str> = res.reqs.iter().map(|r| r.url.host.as_str()).collect();
    assert_eq!(with_dns, hosts.len(), "one resolution per host");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefetches_what_an_earlier_load_learned() {
    let a = corpus();
    let s = serve(a.clone(), None, opts()).await;
    let dir = temp_dir("prefetch");
    let store = dir.join("learned.json");
    let cfg = plain_cfg(&a, &s, Proto::Spdy);
    let first = loader::load(&cfg, Some(&a)).await.unwrap();
    speedy_browser::prefetch::remember(&store, &first).unwrap();
    let mut cfg2 = cfg.clone();
    cfg2.prefetch = speedy_browser::prefetch::learned(&store, &cfg.url).unwrap();
    assert_eq!(cfg2.prefetch.len(), a.pages[0].objects.len() - 1);
    let second = loader::load(&cfg2, Some(&a)).await.unwrap();
    assert!(second.missing.is_empty() && second.unexpected.is_empty());
    assert_eq!(second.reqs.len(), a.pages[0].objects.len());
    let prefetched = second
        .reqs
        .iter()
        .filter(|r| r.initiator == loader::Initiator::Prefetch)
        .count();
    assert_eq!(prefetched, a.pages[0].objects.len() - 1);
    // A HAR works as the source too.
    let har_path = dir.join("first.har");
    har::write(&report::to_har(&first), &har_path).unwrap();
    let from_har = speedy_browser::prefetch::learned(&har_path, &cfg.url).unwrap();
    assert_eq!(from_har.len(), cfg2.prefetch.len());
    let _ = std::fs::remove_dir_all(&dir);
}
