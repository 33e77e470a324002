//! Kubernetes' exec and port-forward streams with the real Kubernetes libraries (the Go
//! peer `interop/go/bin/kube-peer`, built by the test command from k8s.io/client-go and
//! k8s.io/apimachinery), both directions:
//!
//! * client-go's SPDY executor and port forwarder against speedy's endpoints (the
//!   kubelet-like double on `speedy_net::spdy::mux`, in this process);
//! * `speedy kube exec` and `speedy kube port-forward` against apimachinery's server side
//!   (`kube-peer kubelet`: httpstream.Handshake and the SPDY response upgrader).
//!
//! Exec: 300 KiB of stdin comes back on stdout, stderr carries the double's fixed line,
//! and exit codes 0 and 3 arrive as the v4 status says. Port-forward: 10 MiB each way
//! through the tunnel to an echo, checked by SHA-256.

mod support;

use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use support::{run_bounded, Server, TempDir, BIN};

const LIMIT: Duration = Duration::from_secs(60);
const STDIN_LEN: usize = 300 * 1024;
const FORWARD_LEN: usize = 10 << 20;
const STDERR_LINE: &str = "speedy-kube-double stderr\n";

fn kube_peer() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/go/bin/kube-peer");
    assert!(
        p.is_file(),
        "{} is missing: build it in the repository root with \
         `cd interop/go && go build -o bin/ ./cmd/...` (the test command does this)",
        p.display()
    );
    p
}

fn random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn sha(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

/// speedy's kubelet-like double on a thread of its own; returns its address.
fn start_double() -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            tx.send(l.local_addr().expect("addr").to_string())
                .expect("send");
            let _ = speedy_net::spdy::kube_double::serve(l).await;
        });
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("double started")
}

fn json(out: &std::process::Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or("")).unwrap_or_else(|e| {
        panic!(
            "no JSON line ({e}): stdout {text:?}, stderr {:?}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn client_go_exec(addr: &str, dir: &Path) {
    let input = random(STDIN_LEN, 7);
    let stdin = dir.join("stdin.bin");
    std::fs::write(&stdin, &input).unwrap();
    for exit in [0, 3] {
        let url = format!("http://{addr}/exec?exit={exit}");
        let out = run_bounded(
            Command::new(kube_peer())
                .args(["exec", "--url", &url, "--stdin"])
                .arg(&stdin),
            LIMIT,
        );
        let v = json(&out);
        assert_eq!(v["stdout_bytes"], STDIN_LEN, "{v}");
        assert_eq!(v["stdout_sha256"], sha(&input), "{v}");
        assert_eq!(v["stderr"], STDERR_LINE, "{v}");
        assert_eq!(v["exit_code"], exit, "{v}");
    }
}

fn client_go_port_forward(addr: &str, dir: &Path) {
    let data = random(FORWARD_LEN, 11);
    let file = dir.join("forward.bin");
    std::fs::write(&file, &data).unwrap();
    let url = format!("http://{addr}/portforward");
    let out = run_bounded(
        Command::new(kube_peer())
            .args([
                "port-forward",
                "--url",
                &url,
                "--remote-port",
                "80",
                "--send",
            ])
            .arg(&file),
        LIMIT,
    );
    let v = json(&out);
    assert_eq!(v["sent"], FORWARD_LEN, "{v}");
    assert_eq!(v["received"], FORWARD_LEN, "{v}");
    assert_eq!(v["sha256_received"], sha(&data), "{v}");
    assert!(out.status.success(), "{v}");
}

#[test]
fn client_go_exec_against_speedy() {
    let dir = TempDir::new("kube-exec");
    client_go_exec(&start_double(), &dir);
}

#[test]
fn client_go_port_forward_against_speedy() {
    let dir = TempDir::new("kube-pf");
    client_go_port_forward(&start_double(), &dir);
}

fn apimachinery_kubelet() -> Server {
    let mut cmd = Command::new(kube_peer());
    cmd.args(["kubelet", "--listen", "127.0.0.1:0"]);
    Server::spawn(cmd, "listening on ")
}

#[test]
fn speedy_kube_exec_against_apimachinery() {
    let kubelet = apimachinery_kubelet();
    let dir = TempDir::new("kube-speedy-exec");
    let input = random(STDIN_LEN, 13);
    let stdin = dir.join("stdin.bin");
    std::fs::write(&stdin, &input).unwrap();
    for exit in [0, 3] {
        let url = format!(
            "http://{}/exec?command=cat&stdin=true&stdout=true&stderr=true&exit={exit}",
            kubelet.addr
        );
        let out = run_bounded(
            Command::new(BIN)
                .args(["kube", "exec", "--stdin"])
                .arg(&stdin)
                .arg(&url),
            LIMIT,
        );
        assert_eq!(
            out.stdout.len(),
            STDIN_LEN,
            "stderr: {:?}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(sha(&out.stdout), sha(&input));
        assert_eq!(String::from_utf8_lossy(&out.stderr), STDERR_LINE);
        assert_eq!(out.status.code(), Some(exit));
    }
}

#[test]
fn speedy_kube_port_forward_against_apimachinery() {
    let kubelet = apimachinery_kubelet();
    let mut cmd = Command::new(BIN);
    cmd.args(["kube", "port-forward", "--connections", "1"])
        .arg(format!("http://{}/portforward", kubelet.addr))
        .arg("0:80");
    let fwd = Server::spawn(cmd, "forwarding ");
    let data = random(FORWARD_LEN, 17);
    let conn = std::net::TcpStream::connect(&fwd.addr).expect("connect to the forwarded port");
    conn.set_read_timeout(Some(LIMIT)).unwrap();
    let mut writer = conn.try_clone().unwrap();
    let sent = data.clone();
    let w = std::thread::spawn(move || {
        writer.write_all(&sent).unwrap();
        writer.shutdown(std::net::Shutdown::Write).unwrap();
    });
    let mut got = Vec::new();
    (&conn).read_to_end(&mut got).expect("read the echo");
    w.join().unwrap();
    assert_eq!(got.len(), FORWARD_LEN);
    assert_eq!(sha(&got), sha(&data));
}

// The peer against itself, so that a failure above can be told apart from a broken Go
// setup: client-go against apimachinery.
#[test]
fn harness_client_go_against_apimachinery() {
    let kubelet = apimachinery_kubelet();
    let dir = TempDir::new("kube-harness");
    client_go_exec(&kubelet.addr, &dir);
    client_go_port_forward(&kubelet.addr, &dir);
}
