//! The loader's CPU cost per object.
//!
//! - `discovery/html+css_100_objects`: streaming a 100-reference HTML page through the
//!   scanner in 1460-byte pieces, resolving every reference, and scanning a style sheet
//!   (no network). Throughput is per object.
//! - `loopback_load/{http1,spdy,h2}_100_objects`: a whole load of a 100-object page from
//!   the replay server on loopback. The loader runs on a single-threaded runtime on the
//!   benchmark thread and the server on its own threads, and the measurement is the
//!   benchmark thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): the loader's CPU alone —
//!   parsing, bookkeeping, HTTP/SPDY/h2 framing, TLS-free socket I/O — per object.
//!
//! Run: `cargo bench -p speedy-browser --bench discovery`.

use bytes::Bytes;
use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use speedy_archive::{Archive, BodySource, Discovery, Object, ObjectType, Page};
use speedy_browser::config::{LoadConfig, Proto, Transport};
use speedy_browser::discover::{scan_css, HtmlScanner};
use speedy_browser::net::Target;
use speedy_browser::url::Url;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

const OBJECTS: usize = 100;

/// CPU time of the calling thread.
struct ThreadCpu;

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

struct CpuFormatter;

impl ValueFormatter for CpuFormatter {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (div, unit) = if typical < 1e3 {
            (1.0, "ns cpu")
        } else if typical < 1e6 {
            (1e3, "µs cpu")
        } else if typical < 1e9 {
            (1e6, "ms cpu")
        } else {
            (1e9, "s cpu")
        };
        for v in values {
            *v /= div;
        }
        unit
    }
    fn scale_throughputs(&self, _: f64, t: &Throughput, values: &mut [f64]) -> &'static str {
        let n = match t {
            Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => *n,
        } as f64;
        for v in values {
            *v = n * 1e9 / *v;
        }
        "objects/cpu-s"
    }
    fn scale_for_machines(&self, _: &mut [f64]) -> &'static str {
        "ns cpu"
    }
}

impl Measurement for ThreadCpu {
    type Intermediate = Duration;
    type Value = Duration;
    fn start(&self) -> Duration {
        thread_cpu()
    }
    fn end(&self, i: Duration) -> Duration {
        thread_cpu().saturating_sub(i)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, v: &Duration) -> f64 {
        v.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuFormatter
    }
}

/// A page of `OBJECTS` objects over three hosts: the HTML references 2 style sheets,
/// 8 scripts and the images; each style sheet references 5 images.
fn page() -> Archive {
    let hosts = [
        "www.bench.example",
        "static.bench.example",
        "img.bench.example",
    ];
    let mut a = Archive::new("bench");
    let mut html = String::from("<!doctype html><html><head><title>bench</title>\n");
    let mut css = [String::new(), String::new()];
    let mut objs: Vec<(String, ObjectType, Option<usize>, &str)> = Vec::new();
    objs.push((
        format!("http://{}/", hosts[0]),
        ObjectType::Document,
        None,
        "text/html",
    ));
    for i in 0..2 {
        objs.push((
            format!("http://{}/css/s{i}.css", hosts[1]),
            ObjectType::Stylesheet,
            Some(0),
            "text/css",
        ));
    }
    for i in 0..8 {
        objs.push((
            format!("http://{}/js/j{i}.js", hosts[1]),
            ObjectType::Script,
            Some(0),
            "application/javascript",
        ));
    }
    let mut k = 0;
    while objs.len() < OBJECTS {
        let parent = if k < 10 { 1 + k % 2 } else { 0 };
        objs.push((
            format!("http://{}/img/i{k}.gif", hosts[2]),
            ObjectType::Image,
            Some(parent),
            "image/gif",
        ));
        k += 1;
    }
    for (url, kind, parent, _) in &objs {
        match (kind, parent) {
            (ObjectType::Stylesheet, _) => {
                html.push_str(&format!("<link rel=\"stylesheet\" href=\"{url}\">\n"))
            }
            (ObjectType::Script, _) => html.push_str(&format!("<script src=\"{url}\"></script>\n")),
            (ObjectType::Image, Some(0)) => {
                html.push_str(&format!(
                    "<p>{}</p><img src=\"{url}\" alt=\"\">\n",
                    "lorem ipsum dolor sit amet ".repeat(12)
                ));
            }
            (ObjectType::Image, Some(p)) => {
                css[p - 1].push_str(&format!(".c{} {{ background: url({url}) }}\n", url.len()));
            }
            _ => {}
        }
    }
    html.push_str("</body></html>\n");
    for (url, kind, parent, ct) in objs {
        let body: Vec<u8> = match kind {
            ObjectType::Document => html.clone().into_bytes(),
            ObjectType::Stylesheet => {
                let i: usize = url.contains("s1.css").into();
                css[i].clone().into_bytes()
            }
            _ => vec![b'x'; 2000],
        };
        let offset = match (parent, kind) {
            (Some(0), _) => html.find(&url).unwrap() + url.len(),
            (Some(p), _) => css[p - 1].find(&url).unwrap() + url.len(),
            _ => 0,
        };
        let o = Object {
            id: 0,
            url,
            method: "GET".into(),
            status: 200,
            request_headers: vec![],
            response_headers: vec![("content-type".into(), ct.into())],
            body: BodySource::Synthetic { size: body.len() },
            content_type: ct.into(),
            content_encoding: None,
            think_ms: 0,
            kind,
            exec_ms: None,
            priority: None,
            recorded: None,
            discovery: match parent {
                None => Discovery::Root,
                Some(p) => Discovery::Parsed { parent: p, offset },
            },
        };
        a.add_object(o, Some(Bytes::from(body)));
    }
    a.pages.push(Page {
        name: "bench".into(),
        root: 0,
        objects: (0..OBJECTS).collect(),
    });
    a
}

fn discovery(c: &mut Criterion) {
    let a = page();
    let html = a.body(0);
    let css = a.body(1);
    let base = Url::parse(&a.objects[0].url).unwrap();
    let mut g = c.benchmark_group("discovery");
    g.throughput(Throughput::Elements(OBJECTS as u64));
    g.bench_function("html+css_100_objects", |b| {
        b.iter(|| {
            let mut s = HtmlScanner::new();
            let mut n = 0;
            for piece in html.chunks(1460) {
                for r in s.feed(piece) {
                    n += base.join(&r.url).is_some() as usize;
                }
            }
            for r in s.finish() {
                n += base.join(&r.url).is_some() as usize;
            }
            for _ in 0..2 {
                for r in scan_css(&css) {
                    n += base.join(&r.url).is_some() as usize;
                }
            }
            black_box(n)
        })
    });
    g.finish();
}

fn loopback(c: &mut Criterion<ThreadCpu>) {
    let a = Arc::new(page());
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let addr = server_rt.block_on(async {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let h = Arc::new(speedy_server::Replay::new(
            a.clone(),
            speedy_server::ReplayOptions {
                think_time: false,
                ..Default::default()
            },
        ));
        tokio::spawn(speedy_net::server::serve(
            l,
            speedy_net::ServerConfig::default(),
            h,
        ));
        addr
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("loopback_load");
    g.throughput(Throughput::Elements(OBJECTS as u64));
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(8));
    for (name, proto) in [
        ("http1", Proto::Http1),
        ("spdy", Proto::Spdy),
        ("h2", Proto::H2),
    ] {
        let mut cfg = LoadConfig::new(&a.objects[0].url, proto);
        cfg.transport = Transport::Plain;
        cfg.resolve.insert(
            "*".into(),
            Target {
                ip: addr.ip(),
                port: Some(addr.port()),
            },
        );
        g.bench_function(format!("{name}_100_objects"), |b| {
            b.iter(|| {
                let res = rt.block_on(speedy_browser::load(&cfg, Some(&a))).unwrap();
                assert_eq!(res.reqs.len(), OBJECTS);
                assert!(res.missing.is_empty());
                black_box(res.on_load)
            })
        });
    }
    g.finish();
    drop(server_rt);
}

criterion_group!(wall, discovery);
criterion_group! {
    name = cpu;
    config = Criterion::default().with_measurement(ThreadCpu);
    targets = loopback
}
criterion_main!(wall, cpu);
