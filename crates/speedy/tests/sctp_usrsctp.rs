//! SPDY over SCTP with usrsctp as the second stack (issue 42), through the real program:
//! `speedy serve --sctp --sctp-stack usrsctp` fetched by `speedy fetch` over sctp-proto,
//! and the reverse, on loopback and through `speedy link` with 1% and 5% loss; every
//! object checked byte for byte by its SHA-256, several at once on one session. A bad
//! `--sctp-stack` is refused by name.

mod support;
use serde_json::Value;
use speedy_net::sctp::counters::Counters;
use speedy_net::sctp::SctpStack;
use speedy_net::Carrier;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use support::{can_run_link, run_bounded, Server, TempDir, BIN};

/// The fetch's lines (those naming a URL) checked against `files`.
/// Six files of 10 B to 1 MB.
fn site(dir: &Path) -> Vec<(String, String)> {
    support::sized_site(
        dir,
        &[
            ("a.txt", 10),
            ("b.bin", 1_500),
            ("c.bin", 70_000),
            ("d.bin", 300_000),
            ("e.bin", 1_000_000),
            ("f.bin", 500_000),
        ],
    )
}

fn check_all(stdout: &[u8], files: &[(String, String)], what: &str) {
    let lines: Vec<Value> = String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("url").is_some())
        .collect();
    support::check_fetched(&lines, files, what);
}

/// The stack pairs: (server's, client's).
const PAIRS: [(&str, &str); 2] = [("usrsctp", "sctp-proto"), ("sctp-proto", "usrsctp")];

#[test]
fn each_stack_serves_the_other_on_loopback_with_counters() {
    let dir = TempDir::new("usrsctp-site");
    let files = site(&dir.0);
    for (server_stack, client_stack) in PAIRS.iter().chain(&[("usrsctp", "usrsctp")]) {
        let counters = dir
            .0
            .join(format!("counters-{server_stack}-{client_stack}.json"));
        let server = Server::start(&[
            "--root",
            dir.0.to_str().unwrap(),
            "--sctp",
            "--sctp-stack",
            server_stack,
            "--sctp-counters",
            counters.to_str().unwrap(),
        ]);
        let mut args = vec!["fetch", "--transport", "sctp", "--sctp-stack", client_stack];
        let urls: Vec<String> = files
            .iter()
            .map(|(n, _)| format!("http://{}/{n}", server.addr))
            .collect();
        args.extend(urls.iter().map(|s| s.as_str()));
        let out = run_bounded(Command::new(BIN).args(&args), Duration::from_secs(60));
        let what = format!("server {server_stack}, client {client_stack}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{what}: {err}");
        check_all(&out.stdout, &files, &what);
        // The server's counters come from its stack, usrsctp's from its statistics:
        // one association, whose requests arrived as DATA chunks, SACKs for its data.
        let t0 = Instant::now();
        loop {
            let c: Counters = std::fs::read_to_string(&counters)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default();
            if c.associations == 1 && c.data_chunks_in >= files.len() as u64 && c.sacks_in > 0 {
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "{what}: {c:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn each_stack_serves_the_other_through_speedy_link_with_loss() {
    if !can_run_link() {
        return;
    }
    let dir = TempDir::new("usrsctp-link");
    let files = site(&dir.0);
    for (loss, seed) in [("1%", "5"), ("5%", "6")] {
        for (server_stack, client_stack) in PAIRS {
            let server_cmd = format!(
                "exec {BIN} serve --listen 0.0.0.0:9000 --root {} --sctp --sctp-stack {server_stack}",
                dir.0.display()
            );
            let fetch_cmd = format!(
                "exec {BIN} fetch --transport sctp --sctp-stack {client_stack} {}",
                files
                    .iter()
                    .map(|(n, _)| format!("http://$SPEEDY_SERVER_ADDR:9000/{n}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            let t0 = Instant::now();
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
                Duration::from_secs(150),
            );
            let what = format!("loss {loss}, server {server_stack}, client {client_stack}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{what}: {err}");
            check_all(&out.stdout, &files, &what);
            eprintln!(
                "{what}: {:.1} s; {}",
                t0.elapsed().as_secs_f64(),
                err.trim()
            );
        }
    }
}

#[test]
fn a_bad_sctp_stack_is_refused_by_name() {
    for args in [
        &[
            "fetch",
            "--transport",
            "sctp",
            "--sctp-stack",
            "linux",
            "http://127.0.0.1:9/",
        ][..],
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--sctp",
            "--sctp-stack",
            "linux",
        ][..],
    ] {
        let out = run_bounded(Command::new(BIN).args(args), Duration::from_secs(10));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("\"linux\"") && err.contains("sctp-proto or usrsctp"),
            "{args:?}: {err}"
        );
    }
    // The right name, at the wrong end of the command line: only with SCTP.
    let out = run_bounded(
        Command::new(BIN).args(["fetch", "--sctp-stack", "usrsctp", "http://127.0.0.1:9/"]),
        Duration::from_secs(10),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--sctp-stack: only with --transport sctp"),
        "{err}"
    );
}

/// One lab experiment with SPDY over SCTP on each stack (`sctp_stack`), through the link
/// (1 page, 1 run): the usrsctp variant gets a replay server of its own on usrsctp and a
/// loader on usrsctp, every load reaches onLoad with every object, and the rows record
/// the stack and the server's counters (usrsctp's from its statistics).
#[test]
fn one_experiment_loads_over_both_stacks() {
    if !can_run_link() {
        return;
    }
    let dir = TempDir::new("usrsctp-lab");
    let exp = dir.0.join("stacks.toml");
    std::fs::write(
        &exp,
        "name = \"stacks\"\nruns = 1\nseed = 7\ntimeout_s = 30\n[pages]\nsynth = 1\n\
         [[network]]\nname = \"fast\"\ndown = \"50mbit\"\nup = \"20mbit\"\nrtt_ms = 10\n\
         [[variant]]\nname = \"sctp-proto\"\nprotocol = \"spdy\"\ntransport = \"sctp\"\n\
         baseline = true\n\
         [[variant]]\nname = \"usrsctp\"\nprotocol = \"spdy\"\ntransport = \"sctp\"\n\
         sctp_stack = \"usrsctp\"\n",
    )
    .unwrap();
    let out = dir.0.join("out");
    let (rows, stderr) = support::run_lab(&exp, &out, Duration::from_secs(240));
    assert_eq!(rows.len(), 2, "one page × two variants: {stderr}");
    for r in &rows {
        let variant = r.variant.as_str();
        support::assert_no_failed_object(r);
        assert!(r.on_load_ms > 10.0, "an onLoad: {r:?}");
        assert_eq!(r.transport, Some(Carrier::Sctp), "{r:?}");
        // Each variant is named after its stack.
        let stack = match variant {
            "sctp-proto" => SctpStack::SctpProto,
            "usrsctp" => SctpStack::Usrsctp,
            v => panic!("variant {v}"),
        };
        assert_eq!(r.sctp_stack, Some(stack), "{r:?}");
        let server = r
            .server_sctp
            .unwrap_or_else(|| panic!("{variant}: no server_sctp: {r:?}"));
        assert!(server.associations > 0, "{variant}: {server:?}");
        assert!(server.data_chunks_in > 0, "{variant}: {server:?}");
    }
}
