//! SPDY over SCTP through the real program (issue 14): `speedy serve --sctp` and
//! `speedy fetch --transport sctp` on loopback, with and without DATA on the COOKIE
//! ECHO; through a relay that reorders packets, and one that loses a packet of one SCTP
//! stream and holds its retransmission (the other stream's object must not wait); through
//! `speedy link` with 1% and 5% loss and reordering (`--reorder`) in namespaces. Every object is checked byte for
//! byte by its SHA-256. SCTP beside HTTP/3 on a UDP port of its own (`--sctp-port`): on
//! loopback, and in one lab experiment with SPDY over TCP, SPDY over SCTP and h3.

mod support;
use serde_json::Value;
use speedy_lab::results::{read_rows, Row};
use speedy_net::sctp::counters::Counters;
use speedy_net::sctp::SctpStack;
use speedy_net::{Carrier, Protocol};
use speedy_server::startup::{ListenerKind, ServeStartup};
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{can_run_link, run_bounded, Server, TempDir, BIN};

/// The site every test here serves: 10 B to 2 MB.
fn site(dir: &Path) -> Vec<(String, String)> {
    support::sized_site(
        dir,
        &[
            ("a.txt", 10),
            ("b.bin", 70_000),
            ("c.bin", 300_000),
            ("d.bin", 2_000_000),
        ],
    )
}

/// Runs `speedy fetch ARGS`, returns its exit code and one JSON value per URL.
fn fetch(args: &[String], limit: Duration) -> (Option<i32>, Vec<Value>, String) {
    let out = run_bounded(Command::new(BIN).arg("fetch").args(args), limit);
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (
        out.status.code(),
        lines,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn urls(addr: &str, files: &[(String, String)]) -> Vec<String> {
    files
        .iter()
        .map(|(n, _)| format!("http://{addr}/{n}"))
        .collect()
}

#[test]
fn serve_and_fetch_over_sctp_with_and_without_data_on_the_cookie_echo() {
    let dir = TempDir::new("sctp-site");
    let files = site(&dir.0);
    let counters = dir.0.join("sctp-counters.json");
    let server = Server::start(&[
        "--root",
        dir.0.to_str().unwrap(),
        "--sctp",
        "--sctp-counters",
        counters.to_str().unwrap(),
    ]);
    let read_counters = || -> Counters {
        serde_json::from_str(&std::fs::read_to_string(&counters).unwrap()).unwrap()
    };
    // Written as the server starts serving (just after its start-up line), before any
    // association.
    let t0 = Instant::now();
    while !counters.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "no {}",
            counters.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(read_counters().associations, 0);
    for (i, extra) in [&[][..], &["--no-cookie-bundling"][..]].iter().enumerate() {
        let mut args = vec!["--transport".to_string(), "sctp".into()];
        args.extend(extra.iter().map(|s| s.to_string()));
        args.extend(urls(&server.addr, &files));
        let (code, lines, err) = fetch(&args, Duration::from_secs(60));
        assert_eq!(code, Some(0), "{extra:?}: {err}");
        support::check_fetched(&lines, &files, &format!("sctp {extra:?}"));
        // The server's counters file follows within 20 ms: one association per fetch,
        // whose requests arrived as DATA chunks.
        let t0 = Instant::now();
        while read_counters().associations != i as u64 + 1 {
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "{:?}",
                read_counters()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let c = read_counters();
        assert!(c.data_chunks_in >= files.len() as u64, "{c:?}");
    }
    // The same server still speaks every protocol over TCP.
    let (code, lines, err) = fetch(&urls(&server.addr, &files), Duration::from_secs(60));
    assert_eq!(code, Some(0), "{err}");
    support::check_fetched(&lines, &files, "tcp");
}

#[test]
fn sctp_options_that_cannot_work_are_refused_by_name() {
    let (code, _, err) = fetch(
        &["--no-cookie-bundling".into(), "http://127.0.0.1:1/".into()],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--no-cookie-bundling: only with --transport sctp"),
        "{err}"
    );
    let (code, lines, _) = fetch(
        &[
            "--transport".into(),
            "sctp".into(),
            "https://127.0.0.1:1/".into(),
        ],
        Duration::from_secs(20),
    );
    assert_ne!(code, Some(0));
    let e = lines[0]["error"].as_str().unwrap_or("");
    assert!(e.contains("SCTP carries plain SPDY only"), "{e}");
    // Nobody on the port: refused at once (ICMP), not after the INIT retransmissions.
    let t0 = Instant::now();
    let (code, lines, _) = fetch(
        &[
            "--transport".into(),
            "sctp".into(),
            "http://127.0.0.1:1/".into(),
        ],
        Duration::from_secs(20),
    );
    assert_ne!(code, Some(0));
    let e = lines[0]["error"].as_str().unwrap_or("");
    assert!(e.contains("refused"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(10));
}

/// What the relay does with one datagram.
enum Action {
    Forward,
    Drop,
    /// Forward this now (if any) and that later (if any) instead.
    Split(Option<Vec<u8>>, Option<(Vec<u8>, Duration)>),
}

/// A UDP relay between one client and `server`: `decide(packet, from_server, t)` says
/// what happens to each datagram; `swap_every` > 0 holds every Nth datagram of each
/// direction back until the next one has gone (reordering). Runs until dropped.
struct Relay {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    dropped: Arc<AtomicUsize>,
}

impl Relay {
    fn start(
        server: SocketAddr,
        swap_every: usize,
        mut decide: impl FnMut(&[u8], bool, Duration) -> Action + Send + 'static,
    ) -> Relay {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(5)))
            .unwrap();
        let addr = sock.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicUsize::new(0));
        let (s2, d2) = (stop.clone(), dropped.clone());
        std::thread::spawn(move || {
            let t0 = Instant::now();
            let mut client: Option<SocketAddr> = None;
            let mut held: [Option<Vec<u8>>; 2] = [None, None];
            let mut later: Vec<(Instant, Vec<u8>, SocketAddr)> = Vec::new();
            let mut counts = [0usize; 2];
            let mut buf = vec![0u8; 65536];
            // Bounded: a test that forgets to stop it still ends it after 2 minutes.
            while !s2.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(120) {
                let now = Instant::now();
                later.retain(|(at, p, to)| {
                    if *at <= now {
                        let _ = sock.send_to(p, to);
                    }
                    *at > now
                });
                let Ok((n, from)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                let from_server = from == server;
                if !from_server {
                    client = Some(from);
                }
                let Some(to) = (if from_server { client } else { Some(server) }) else {
                    continue;
                };
                let p = buf[..n].to_vec();
                match decide(&p, from_server, t0.elapsed()) {
                    Action::Forward => {}
                    Action::Drop => {
                        d2.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    Action::Split(now, then) => {
                        if let Some((q, d)) = then {
                            later.push((Instant::now() + d, q, to));
                        }
                        if let Some(q) = now {
                            let _ = sock.send_to(&q, to);
                        }
                        continue;
                    }
                }
                let dir = usize::from(from_server);
                counts[dir] += 1;
                if swap_every > 0 && counts[dir] % swap_every == 0 && held[dir].is_none() {
                    held[dir] = Some(p);
                    continue;
                }
                let _ = sock.send_to(&p, to);
                if let Some(h) = held[dir].take() {
                    let _ = sock.send_to(&h, to);
                }
            }
        });
        Relay {
            addr,
            stop,
            dropped,
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// `p`'s common header with those of its chunks `pick` selects (by TSN for DATA, `None`
/// for others), checksummed; `None` if none is picked.
fn select_chunks(p: &[u8], pick: impl Fn(Option<u32>) -> bool) -> Option<Vec<u8>> {
    let mut out = p[..12].to_vec();
    let mut at = 12;
    while at + 4 <= p.len() {
        let len = usize::from(u16::from_be_bytes([p[at + 2], p[at + 3]])).max(4);
        let end = (at + ((len + 3) & !3)).min(p.len());
        let tsn = (p[at] == 0 && at + 8 <= p.len())
            .then(|| u32::from_be_bytes([p[at + 4], p[at + 5], p[at + 6], p[at + 7]]));
        if pick(tsn) {
            out.extend_from_slice(&p[at..end]);
        }
        at = end;
    }
    (out.len() > 12).then(|| {
        speedy_net::sctp::packet::seal(&mut out);
        out
    })
}

/// The (SCTP stream, TSN) of a packet's DATA chunks.
fn data_chunks(p: &[u8]) -> Vec<(u16, u32)> {
    let mut out = Vec::new();
    let mut at = 12;
    while at + 4 <= p.len() {
        let len = usize::from(u16::from_be_bytes([p[at + 2], p[at + 3]])).max(4);
        if p[at] == 0 && at + 10 <= p.len() {
            let tsn = u32::from_be_bytes([p[at + 4], p[at + 5], p[at + 6], p[at + 7]]);
            out.push((u16::from_be_bytes([p[at + 8], p[at + 9]]), tsn));
        }
        at += (len + 3) & !3;
    }
    out
}

#[test]
fn objects_arrive_intact_through_a_relay_that_reorders_packets() {
    let dir = TempDir::new("sctp-reorder");
    let files = site(&dir.0);
    let server = Server::start(&["--root", dir.0.to_str().unwrap(), "--sctp"]);
    let relay = Relay::start(server.addr.parse().unwrap(), 4, |_, _, _| Action::Forward);
    let mut args = vec!["--transport".to_string(), "sctp".into()];
    args.extend(urls(&relay.addr.to_string(), &files));
    let (code, lines, err) = fetch(&args, Duration::from_secs(60));
    assert_eq!(code, Some(0), "{err}");
    support::check_fetched(&lines, &files, "reordered");
}

#[test]
fn a_lost_packet_of_one_stream_does_not_hold_back_another_stream() {
    let dir = TempDir::new("sctp-hol");
    std::fs::write(dir.0.join("x.bin"), vec![7u8; 400_000]).unwrap();
    std::fs::write(dir.0.join("y.bin"), vec![8u8; 200_000]).unwrap();
    let server = Server::start(&["--root", dir.0.to_str().unwrap(), "--sctp"]);
    // SPDY stream 1's DATA rides SCTP stream 1 and stream 3's SCTP stream 2
    // (docs/sctp.md). The 10th server packet whose DATA is all on SCTP stream 1 is lost,
    // and the retransmitted chunks are held 800 ms (less than SCTP's 1 s minimum RTO, so
    // no timeout collapses the window; chunks bundled with them pass at once): that
    // object cannot finish sooner. The other object's packets all pass; over one ordered
    // byte stream (TCP) its bytes after the hole would wait for the hole too, so it could
    // not finish before the held chunks arrive either. Over SCTP it must. (It is slower
    // than without the loss: the association's one congestion window shrinks.)
    const HOLD: Duration = Duration::from_millis(800);
    let mut seen = 0;
    let mut lost: Vec<u32> = Vec::new();
    let relay = Relay::start(server.addr.parse().unwrap(), 0, move |p, from_server, _| {
        let chunks = data_chunks(p);
        if !from_server || chunks.is_empty() {
            return Action::Forward;
        }
        if !lost.is_empty() {
            if !chunks.iter().any(|(_, tsn)| lost.contains(tsn)) {
                return Action::Forward;
            }
            // A retransmission: the lost chunks wait, anything bundled with them goes on.
            let is_lost = |t: Option<u32>| t.is_some_and(|t| lost.contains(&t));
            return Action::Split(
                select_chunks(p, |t| !is_lost(t)),
                select_chunks(p, is_lost).map(|q| (q, HOLD)),
            );
        }
        if chunks.iter().all(|&(s, _)| s == 1) {
            seen += 1;
            if seen == 10 {
                lost = chunks.iter().map(|&(_, tsn)| tsn).collect();
                return Action::Drop;
            }
        }
        Action::Forward
    });
    let args: Vec<String> = ["--transport", "sctp"]
        .iter()
        .map(|s| s.to_string())
        .chain(["x.bin", "y.bin"].map(|n| format!("http://{}/{n}", relay.addr)))
        .collect();
    let (code, lines, err) = fetch(&args, Duration::from_secs(60));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(lines.len(), 2);
    let mut ms: Vec<f64> = lines
        .iter()
        .map(|v| v["elapsed_ms"].as_f64().expect("elapsed_ms"))
        .collect();
    ms.sort_by(f64::total_cmp);
    eprintln!("elapsed: {ms:?} ms");
    assert_eq!(relay.dropped.load(Ordering::Relaxed), 1, "one packet lost");
    assert!(
        ms[1] >= HOLD.as_millis() as f64,
        "the object with the lost packet finished before its retransmission: {ms:?}"
    );
    assert!(
        ms[0] < HOLD.as_millis() as f64,
        "the other object waited for the lost packet: {ms:?}"
    );
}

#[test]
fn objects_arrive_intact_through_speedy_link_with_loss_and_reordering() {
    if !can_run_link() {
        return;
    }
    let dir = TempDir::new("sctp-link");
    let files = site(&dir.0);
    // 1% loss with 3% of packets held back 10 ms (overtaken by those behind), and 5%
    // loss with 1%.
    for (loss, reorder, seed) in [("1%", "3%", "3"), ("5%", "1%", "4")] {
        let server_cmd = format!(
            "exec {BIN} serve --listen 0.0.0.0:9000 --root {} --sctp",
            dir.0.display()
        );
        let fetch_cmd = format!(
            "exec {BIN} fetch --transport sctp {}",
            files
                .iter()
                .map(|(n, _)| format!("http://$SPEEDY_SERVER_ADDR:9000/{n}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let out = run_bounded(
            Command::new(BIN).args([
                "link",
                "--rtt",
                "40",
                "--down",
                "20mbit",
                "--up",
                "20mbit",
                "--loss",
                loss,
                "--reorder",
                reorder,
                "--seed",
                seed,
                "--stats",
                "--server-cmd",
                &server_cmd,
                "--",
                "sh",
                "-c",
                &fetch_cmd,
            ]),
            Duration::from_secs(120),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "loss {loss}: {err}");
        // The server's start-up line shares stdout; the fetch lines name a URL.
        let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v.get("url").is_some())
            .collect();
        support::check_fetched(&lines, &files, &format!("loss {loss}"));
        eprintln!("loss {loss}: {}", err.trim());
    }
}

#[test]
fn the_built_in_sctp_experiment_loads_every_page_over_both_transports_and_reports_them() {
    if !can_run_link() {
        return;
    }
    let dir = TempDir::new("sctp-lab");
    let out = dir.0.join("out");
    let o = run_bounded(
        Command::new(BIN)
            .args(["lab", "sctp", "--pages", "1", "--runs", "1", "--out"])
            .arg(&out),
        Duration::from_secs(300),
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "speedy lab sctp: {stderr}");
    let rows = read_rows(&out.join("results.jsonl")).unwrap();
    assert_eq!(rows.len(), 3 * 6, "networks × variants: {stderr}");
    support::assert_same_page_whole(&rows);
    let sctp = Some(Carrier::Sctp);
    for r in &rows {
        assert_eq!(r.protocol, Protocol::Spdy(spdy::Version::V3_1), "{r:?}");
        let (transport, bundling, rto) = match r.variant.as_str() {
            "spdy-tcp" | "spdy-tcp-reno3" => (None, None, None),
            "spdy-sctp" => (sctp, Some(true), Some(3000)),
            "spdy-sctp-nobundle" => (sctp, Some(false), Some(3000)),
            "spdy-sctp-rto1s" => (sctp, Some(true), Some(1000)),
            "spdy-usrsctp" => (sctp, Some(true), Some(3000)),
            v => panic!("variant {v}"),
        };
        let stack = match r.variant.as_str() {
            "spdy-usrsctp" => Some(SctpStack::Usrsctp),
            _ if transport.is_some() => Some(SctpStack::SctpProto),
            _ => None,
        };
        assert_eq!(r.sctp_stack, stack, "{r:?}");
        assert_eq!(r.transport, transport, "{r:?}");
        assert_eq!(r.cookie_bundling, bundling, "{r:?}");
        assert_eq!(r.sctp_rto_initial_ms, rto, "{r:?}");
        // Each side's SCTP counters over the load: the server's from its counters file,
        // the loader's from its HAR; a TCP load has neither. (Every counter, t3_timeouts
        // among them, is required when the counters are present: reading the row checked
        // that.)
        for (side, c) in [
            ("server_sctp", r.server_sctp),
            ("loader_sctp", r.loader_sctp),
        ] {
            if transport.is_some() {
                let c = c.unwrap_or_else(|| panic!("no {side}: {r:?}"));
                assert!(c.associations >= 1, "{side}: {r:?}");
                assert!(c.data_chunks_in >= 1, "{side}: {r:?}");
            } else {
                assert!(c.is_none(), "{side}: {r:?}");
            }
        }
    }
    // Where the link dropped packets, the report says how each variant recovered.
    if rows.iter().any(|r| r.link_drops > 0) {
        let report = std::fs::read_to_string(out.join("report.html")).unwrap();
        assert!(
            report.contains("how the loads recovered from loss"),
            "{report}"
        );
    }
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        report.contains(r#"<h2 id="sctp">"#),
        "the report's SCTP section"
    );
    // One table per network and SCTP variant.
    assert_eq!(
        report.matches("spdy-tcp (TCP) against spdy-sctp").count(),
        3 * 3
    );
}

#[test]
fn an_association_completes_whichever_handshake_packet_is_lost() {
    use speedy_net::sctp::packet::{chunk, first_chunk};
    let dir = TempDir::new("sctp-handshake-loss");
    let files = site(&dir.0);
    let server = Server::start(&["--root", dir.0.to_str().unwrap(), "--sctp"]);
    // (the packet lost: from the server?, its first chunk; with DATA on the COOKIE ECHO?)
    // A lost COOKIE ECHO with bundling: the requests it carried, sent again by the
    // stack's own timer, may reach the server before a COOKIE ECHO does.
    let cases = [
        (false, chunk::INIT, true),
        (true, chunk::INIT_ACK, true),
        (false, chunk::COOKIE_ECHO, true),
        (false, chunk::COOKIE_ECHO, false),
        (true, chunk::COOKIE_ACK, false),
    ];
    for (server_side, kind, bundling) in cases {
        let what = format!("chunk {kind} from the server {server_side}, bundling {bundling}");
        let mut lost = false;
        let relay = Relay::start(server.addr.parse().unwrap(), 0, move |p, from_server, _| {
            if from_server == server_side && !lost && first_chunk(p) == Some(kind) {
                lost = true;
                return Action::Drop;
            }
            Action::Forward
        });
        let mut args: Vec<String> = ["--transport", "sctp", "--sctp-rto-initial-ms", "1000"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if !bundling {
            args.push("--no-cookie-bundling".into());
        }
        args.extend(urls(&relay.addr.to_string(), &files));
        let (code, lines, err) = fetch(&args, Duration::from_secs(90));
        assert_eq!(code, Some(0), "{what}: {err}");
        support::check_fetched(&lines, &files, &what);
        assert_eq!(relay.dropped.load(Ordering::Relaxed), 1, "{what}");
    }
}

/// Starts `speedy serve --listen 127.0.0.1:0 ARGS...` and reads its start-up block up to
/// the JSON line (at most 10 lines; the server is killed on drop).
fn serve_announced(args: &[&str]) -> (Server, ServeStartup) {
    use std::io::BufRead;
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut startup = None;
    for _ in 0..10 {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some(s) = ServeStartup::parse(&line) {
            startup = Some(s);
            break;
        }
    }
    // Keep draining stdout so the server never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let startup = startup.expect("a JSON start-up line");
    let addr = startup.listening.to_string();
    (Server { child, addr }, startup)
}

/// `speedy serve --sctp --h3` needs `--sctp-port` (refused by name without it); with
/// `--sctp-port 0` SCTP gets a free UDP port of its own, told by the start-up line's
/// `listeners`, where `speedy fetch --transport sctp --sctp-port` reaches it, while h3
/// answers on the TCP port's number.
#[test]
fn serve_runs_sctp_beside_h3_on_a_udp_port_of_its_own() {
    let dir = TempDir::new("sctp-h3-serve");
    let files = site(&dir.0);
    let root = dir.0.to_str().unwrap();
    let o = run_bounded(
        Command::new(BIN).args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--root",
            root,
            "--tls-self-signed",
            "--sctp",
            "--h3",
        ]),
        Duration::from_secs(20),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("--sctp and --h3") && err.contains("--sctp-port"),
        "{err}"
    );
    let (server, startup) = serve_announced(&[
        "--root",
        root,
        "--tls-self-signed",
        "--sctp",
        "--h3",
        "--sctp-port",
        "0",
    ]);
    let tcp = startup.listening;
    let sctp = startup.port_at(ListenerKind::Sctp, tcp.ip()).expect("SCTP");
    assert_eq!(
        startup.port_at(ListenerKind::H3, tcp.ip()),
        Some(tcp.port())
    );
    assert_ne!(sctp, tcp.port(), "{startup:?}");
    assert!(startup.sctp && startup.h3 && startup.version >= 2);
    // SPDY over SCTP at its own port; the URLs keep the TCP port.
    let mut args: Vec<String> = ["--transport", "sctp", "--sctp-port", &sctp.to_string()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(urls(&server.addr, &files));
    let (code, lines, err) = fetch(&args, Duration::from_secs(60));
    assert_eq!(code, Some(0), "{err}");
    support::check_fetched(&lines, &files, "sctp at --sctp-port");
    // HTTP/3 at the TCP port's number.
    let h3_url = format!("https://localhost:{}/{}", tcp.port(), files[1].0);
    let (code, lines, err) = fetch(
        &["-k".into(), "--protocol".into(), "h3".into(), h3_url],
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(lines[0]["protocol"], "h3", "{lines:?}");
    assert_eq!(lines[0]["sha256"].as_str(), Some(files[1].1.as_str()));
}

/// One experiment with SPDY over TCP, SPDY over SCTP and h3 side by side, through the
/// link (1 page, 1 run, 50 Mbit/s, 10 ms): one replay server answers all three (SCTP
/// on a UDP port of its own, which the lab reads from the start-up line and hands the
/// SCTP load), every load reaches onLoad, the server's SCTP counters are the SCTP load's
/// alone, and `speedy lab report` writes the transport and SCTP sections.
#[test]
fn one_experiment_runs_spdy_over_tcp_and_over_sctp_beside_h3() {
    if !can_run_link() {
        return;
    }
    let t0 = Instant::now();
    let dir = TempDir::new("sctp-h3-lab");
    let exp = dir.0.join("sctp-h3.toml");
    std::fs::write(
        &exp,
        "name = \"sctp-h3\"\nruns = 1\nseed = 7\ntimeout_s = 30\n[pages]\nsynth = 1\n\
         [[network]]\nname = \"fast\"\ndown = \"50mbit\"\nup = \"20mbit\"\nrtt_ms = 10\n\
         [[variant]]\nname = \"spdy-tcp\"\nprotocol = \"spdy\"\nbaseline = true\n\
         [[variant]]\nname = \"spdy-sctp\"\nprotocol = \"spdy\"\ntransport = \"sctp\"\n\
         [[variant]]\nname = \"h3\"\nprotocol = \"h3\"\n",
    )
    .unwrap();
    let out = dir.0.join("out");
    let (rows, stderr) = support::run_lab(&exp, &out, Duration::from_secs(240));
    assert_eq!(rows.len(), 3, "one page × three variants: {stderr}");
    support::assert_same_page_whole(&rows);
    // Each load's connections' peers (IP:PORT) from its HAR.
    let peers = |r: &Row| -> Vec<std::net::SocketAddr> {
        let har: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join(&r.har)).unwrap()).unwrap();
        let page = &har["log"]["pages"][0];
        assert!(page["pageTimings"]["onLoad"].as_f64() > Some(0.0), "{r:?}");
        page["_connections"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["peer"].as_str()?.parse().ok())
            .collect()
    };
    let mut ports = std::collections::BTreeMap::new();
    for r in &rows {
        assert!(r.on_load_ms > 10.0, "an onLoad: {r:?}");
        let variant = r.variant.as_str();
        let spdy31 = Protocol::Spdy(spdy::Version::V3_1);
        let (protocol, transport) = match variant {
            "spdy-tcp" => (spdy31, None),
            "spdy-sctp" => (spdy31, Some(Carrier::Sctp)),
            "h3" => (Protocol::H3, None),
            v => panic!("variant {v}"),
        };
        assert_eq!(r.protocol, protocol, "{r:?}");
        assert_eq!(r.transport, transport, "{r:?}");
        if transport.is_some() {
            // The server's counters over this load are this load's: as many associations
            // as the loader set up, whose requests arrived.
            let (Some(server), Some(loader)) = (r.server_sctp, r.loader_sctp) else {
                panic!("both sides' SCTP counters: {r:?}");
            };
            assert!(server.associations >= 1, "{r:?}");
            assert_eq!(server.associations, loader.associations, "{r:?}");
            assert!(server.data_chunks_in >= 1, "{r:?}");
        } else {
            assert!(r.server_sctp.is_none() && r.loader_sctp.is_none(), "{r:?}");
        }
        let p: std::collections::BTreeSet<u16> = peers(r).iter().map(|a| a.port()).collect();
        assert!(!p.is_empty(), "{variant}: connections with peers");
        ports.insert(variant.to_string(), p);
    }
    // SCTP went to a port of its own; TCP and QUIC to the origins' port.
    assert_eq!(ports["spdy-tcp"], ports["h3"], "{ports:?}");
    assert!(
        ports["spdy-sctp"].is_disjoint(&ports["spdy-tcp"]),
        "{ports:?}"
    );
    let o = run_bounded(
        Command::new(BIN).args(["lab", "report"]).arg(&out),
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    for id in ["phases", "traffic", "sctp"] {
        assert!(
            report.contains(&format!(r#"<h2 id="{id}">"#)),
            "section {id}"
        );
    }
    assert!(
        report.contains("spdy-tcp (TCP) against spdy-sctp"),
        "the SCTP table"
    );
    eprintln!(
        "the lab experiment and its report took {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}
