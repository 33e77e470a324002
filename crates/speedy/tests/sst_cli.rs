//! SST's experiments end to end, through `speedy link` in namespaces (needs root):
//! reprioritization of requests in flight (`speedy fetch --reprioritize` against
//! `speedy serve`, over SPDY/3.1 with speedy's PRIORITY extension frame, h2 and h3 with
//! RFC 9218 PRIORITY_UPDATE), and `speedy lab sst`'s Fig 7, Fig 8 and Fig 9.

mod support;
use serde_json::Value;
use std::process::Command;
use std::time::Duration;
use support::{can_run_link, run_bounded, TempDir, BIN};

/// Bytes of each body on the 1.5 Mbit/s link (about 5.3 s each alone).
const SIZE: usize = 1_000_000;

/// The client raises one of two equal downloads to priority 0 after 2 s, with a
/// PING sent beside the frame (over h3: a reserved-type stream that the server stops).
/// The PING's answer marks the next round trip as the client sees it (queues included:
/// its answer is sent behind whatever the server had already handed to the kernel). In
/// the second from that answer on, the other stream gets no more than what was already
/// handed over before the change could act: what the server lets wait unsent in the
/// kernel (`--notsent-lowat 16K`: below 16 KiB the socket is writable, so up to one more
/// 16 KiB frame beyond it), plus, over h2, two 16 KiB frames (the `h2` crate's buffer per
/// stream; SPDY's scheduler and quinn pick every frame or packet by priority).
/// Measured: SPDY 0 B, h3 0-1,419 B, h2 32,768-48,801 B of the other stream in that
/// second, against about 180 KB of the raised one; without the change the two would
/// share it about evenly.
#[test]
fn a_raised_stream_takes_the_link_from_the_next_round_trip() {
    if !can_run_link() {
        return;
    }
    let dir = TempDir::new("priority");
    for n in ["a", "b"] {
        let body: Vec<u8> = (0..SIZE).map(|i| (i * 7 + n.len()) as u8).collect();
        std::fs::write(dir.0.join(format!("{n}.bin")), body).unwrap();
    }
    for proto in ["spdy/3.1", "h2", "h3"] {
        let progress = dir.0.join(format!("progress-{}.jsonl", &proto[..2]));
        let (tls, scheme, k) = match proto {
            "h3" => (" --tls-self-signed --h3", "https", " -k"),
            _ => ("", "http", ""),
        };
        let server_cmd = format!(
            "exec {BIN} serve --listen 0.0.0.0:9000 --root {} --notsent-lowat 16K{tls}",
            dir.0.display()
        );
        let fetch_cmd = format!(
            "exec {BIN} fetch{k} --protocol {proto} --progress {} --reprioritize 2:2=0 \
             {scheme}://$SPEEDY_SERVER_ADDR:9000/a.bin {scheme}://$SPEEDY_SERVER_ADDR:9000/b.bin",
            progress.display()
        );
        let out = run_bounded(
            Command::new(BIN).args([
                "link",
                "--rtt",
                "50",
                "--down",
                "1500kbit",
                "--up",
                "1500kbit",
                "--server-cmd",
                &server_cmd,
                "--",
                "sh",
                "-c",
                &fetch_cmd,
            ]),
            Duration::from_secs(60),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{proto}: {err}");
        let done = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["bytes"] == SIZE as u64 && v["status"] == 200)
            .count();
        assert_eq!(done, 2, "{proto}: both bodies whole");

        let rows: Vec<Value> = std::fs::read_to_string(&progress)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let at = |ev: &str| {
            rows.iter()
                .find(|r| r["event"] == ev)
                .and_then(|r| r["t"].as_f64())
                .unwrap_or_else(|| panic!("{proto}: no {ev} line"))
        };
        let (change, pong) = (at("reprioritize"), at("pong"));
        let mut last = [0u64; 3];
        let (mut raised, mut other, mut raised_before) = (0u64, 0u64, 0u64);
        for r in rows.iter().filter(|r| r.get("bytes").is_some()) {
            let (u, n, t) = (
                r["url"].as_u64().unwrap() as usize,
                r["bytes"].as_u64().unwrap(),
                r["t"].as_f64().unwrap(),
            );
            let d = n - last[u];
            last[u] = n;
            if u == 2 && t < change {
                raised_before += d;
            }
            if (pong..=pong + 1.0).contains(&t) {
                if u == 2 {
                    raised += d;
                } else {
                    other += d;
                }
            }
        }
        let share = raised as f64 / (raised + other).max(1) as f64;
        eprintln!(
            "{proto}: change at {change:.3} s, PING answered at {pong:.3} s; stream 2 had \
             {raised_before} B before; in the next second {raised} B of it, {other} B of the other ({share:.2})"
        );
        assert!(
            raised_before > 0 && raised_before < SIZE as u64 / 2,
            "{proto}: the change came mid-transfer ({raised_before} B before it)"
        );
        let allowance = 2 * 16 * 1024 + if proto == "h2" { 2 * 16 * 1024 } else { 0 };
        assert!(
            other <= allowance && raised > other,
            "{proto}: the other stream had {other} B (at most {allowance}) and the raised \
             one {raised} B ({share:.2}) of the second after the PING's answer"
        );
    }
}

/// `speedy lab sst` runs Fig 9 end to end and draws it: every download whole, the
/// table printed, one chart per protocol in sst.html (h3: the lab's TLS and QUIC path;
/// SPDY and h2 are run by the test above).
#[test]
fn lab_sst_runs_and_draws_fig_9() {
    let Some((_dir, out, stdout)) =
        lab_sst(&["--figures", "9", "--protocols", "h3", "--size", "1000000"])
    else {
        return;
    };
    let row = stdout
        .lines()
        .find(|l| l.starts_with("h3 "))
        .unwrap_or_else(|| panic!("no h3 row: {stdout}"));
    let share: f64 = row.split_whitespace().last().unwrap().parse().unwrap();
    assert!((0.0..=1.0).contains(&share), "{row}");
    let html = std::fs::read_to_string(out.join("sst.html")).unwrap();
    assert_eq!(
        html.matches("<svg").count(),
        1,
        "one chart for one protocol"
    );
    let progress = std::fs::read_to_string(out.join("fig9-h3.jsonl")).unwrap();
    let whole: Vec<u64> = progress
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["bytes"] == 1_000_000)
        .map(|v| v["url"].as_u64().unwrap())
        .collect();
    assert_eq!(whole.len(), 3, "each request logged to its end: {whole:?}");
    let bad = run_bounded(
        Command::new(BIN).args(["lab", "sst", "--protocols", "http1"]),
        Duration::from_secs(10),
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("only spdy/3.1, h2 and h3"));
}

/// `speedy lab sst --figures 7`: every variant's transactions succeed, and a
/// transaction on a new TCP connection takes at least one round trip (50 ms of
/// propagation) longer than a new stream on a warm SPDY session for the smallest size:
/// the handshake SST's structured streams avoid.
#[test]
fn lab_sst_fig_7_shows_the_handshake_a_warm_stream_saves() {
    let Some((_dir, out, stdout)) =
        lab_sst(&["--figures", "7", "--sizes", "32,65536", "--reps", "2"])
    else {
        return;
    };
    let head = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("size"))
        .unwrap_or_else(|| panic!("no table: {stdout}"));
    let cols: Vec<&str> = head.split_whitespace().collect();
    let row = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("32 B"))
        .unwrap_or_else(|| panic!("no 32 B row: {stdout}"));
    let vals: Vec<f64> = row
        .split_whitespace()
        .skip(2)
        .map(|v| v.parse().unwrap())
        .collect();
    let of = |name: &str| vals[cols.iter().position(|c| *c == name).unwrap() - 1];
    eprintln!("{stdout}");
    for v in ["udp", "tcp", "spdy/3.1", "h2", "h3"] {
        assert!(of(v) > 0.0, "{v}: {row}");
    }
    assert!(
        of("tcp") >= of("spdy/3.1") + 40.0,
        "a new TCP connection costs a round trip more than a warm SPDY stream: {row}"
    );
    assert!(
        of("tcp") >= of("udp") + 40.0,
        "a new TCP connection costs a round trip more than a datagram each way: {row}"
    );
    let html = std::fs::read_to_string(out.join("fig7.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 1);
}

/// `speedy lab sst --figures 8` on one page under HTTP/1.0 serial, HTTP/1.1 pipelined
/// and h3: every object whole (the lab checks), the table printed and drawn, and serial
/// HTTP/1.0 at least one round trip (50 ms of propagation: its new connection's
/// handshake) per object slower than pipelining them on one connection.
#[test]
fn lab_sst_fig_8_loads_a_page_under_each_flavour() {
    let Some((_dir, out, stdout)) = lab_sst(&[
        "--figures",
        "8",
        "--pages",
        "1",
        "--flavours",
        "http1.0-serial,http1.1-pipelined,h3",
    ]) else {
        return;
    };
    eprintln!("{stdout}");
    let objects: f64 = stdout
        .lines()
        .find(|l| l.starts_with("1 pages, "))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no workload line: {stdout}"));
    let median = |name: &str| -> f64 {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} row: {stdout}"))
    };
    let (serial, pipelined, h3) = (
        median("http1.0-serial"),
        median("http1.1-pipelined"),
        median("h3"),
    );
    assert!(h3 > 0.0 && pipelined > 0.0);
    assert!(
        serial >= pipelined + (objects - 1.0) * 50.0,
        "serial {serial} ms, pipelined {pipelined} ms, {objects} objects"
    );
    let html = std::fs::read_to_string(out.join("fig8.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 1);
}

/// Runs `speedy lab sst ARGS --out DIR` (bounded) and checks it succeeded; returns the
/// temporary directory, DIR and the standard output, or `None` where links cannot run.
fn lab_sst(args: &[&str]) -> Option<(TempDir, std::path::PathBuf, String)> {
    if !can_run_link() {
        return None;
    }
    let dir = TempDir::new("sst-lab");
    let out = dir.0.join("out");
    let o = run_bounded(
        Command::new(BIN)
            .args(["lab", "sst"])
            .args(args)
            .arg("--out")
            .arg(&out),
        Duration::from_secs(180),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Some((dir, out, String::from_utf8_lossy(&o.stdout).into_owned()))
}

/// `speedy serve --udp-get` and `speedy fetch --protocol udp` on loopback: bodies up to
/// one datagram's 65,506 bytes byte for byte; larger ones, missing files and silence
/// are failures that say why; options that cannot work are refused by name.
#[test]
fn udp_get_answers_one_datagram_each_way() {
    let dir = TempDir::new("udp-get");
    let mut sums = Vec::new();
    for (i, n) in [0usize, 1, 1400, 65_506, 65_507].iter().enumerate() {
        let body: Vec<u8> = (0..*n).map(|k| (k * 13 + i) as u8).collect();
        std::fs::write(dir.0.join(format!("{i}.bin")), &body).unwrap();
        use sha2::Digest;
        sums.push(format!("{:x}", sha2::Sha256::digest(&body)));
    }
    let root = dir.0.to_str().unwrap();
    let srv = support::Server::start(&["--root", root, "--udp-get"]);
    let port = srv.addr.rsplit(':').next().unwrap();
    let url = |i: &str| format!("http://127.0.0.1:{port}/{i}");
    let o = run_bounded(
        Command::new(BIN)
            .args(["fetch", "--protocol", "udp", "--read-timeout", "5"])
            .args(["0.bin", "1.bin", "2.bin", "3.bin", "4.bin", "none"].map(url)),
        Duration::from_secs(30),
    );
    assert_eq!(o.status.code(), Some(1), "some failed");
    let lines: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 6);
    for (i, l) in lines.iter().take(4).enumerate() {
        assert_eq!(l["protocol"], "udp", "{l}");
        assert_eq!(l["sha256"].as_str().unwrap(), sums[i], "{l}");
    }
    assert!(
        lines[4]["error"]
            .as_str()
            .unwrap()
            .contains("over 65506 bytes"),
        "{}",
        lines[4]
    );
    assert!(
        lines[5]["error"].as_str().unwrap().contains("status 404"),
        "{}",
        lines[5]
    );
    // Nobody answers on this port: a timeout that says a lost datagram is not resent.
    let quiet = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let qport = quiet.local_addr().unwrap().port();
    let o = run_bounded(
        Command::new(BIN).args([
            "fetch",
            "--protocol",
            "udp",
            "--read-timeout",
            "1",
            &format!("http://127.0.0.1:{qport}/x"),
        ]),
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("not sent again"));
    for (args, says) in [
        (
            vec!["fetch", "--protocol", "udp", "https://127.0.0.1:1/x"],
            "http:// URLs only",
        ),
        (
            vec![
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--root",
                root,
                "--udp-get",
                "--h3",
                "--tls-self-signed",
            ],
            "--udp-get",
        ),
    ] {
        let o = run_bounded(Command::new(BIN).args(&args), Duration::from_secs(10));
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{args:?}"
        );
    }
}

/// Scheduling options that cannot work are refused by name, before anything connects.
#[test]
fn bad_scheduling_options_are_refused_by_name() {
    let url = "http://127.0.0.1:1/a";
    for (args, says) in [
        (
            vec!["--reprioritize", "10:5=0", url],
            "\"5\" is not a URL position (1 to 1)",
        ),
        (vec!["--reprioritize", "1", url], "expected SECS:N=PRIORITY"),
        (vec!["--start", "1=x", url], "\"x\" is not seconds"),
        (
            vec!["--priority-of", "1=9", url],
            "\"9\" is not a priority (0 to 7)",
        ),
        (
            vec!["--start", "1=1", url, "http://127.0.0.2:1/b"],
            "give URLs of one origin",
        ),
    ] {
        let o = run_bounded(
            Command::new(BIN).arg("fetch").args(&args),
            Duration::from_secs(10),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}
