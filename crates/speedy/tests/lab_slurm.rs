//! `speedy lab` under a real batch engine: a single-node Slurm (munged, slurmctld and
//! slurmd started here, in the foreground, on free ports, state in a temporary directory)
//! runs a tiny experiment as an `sbatch --array` job of two tasks, each taking its shard
//! from Slurm's variables; `speedy lab merge` joins them, and the merged loads must be
//! those of the same experiment run unsharded. Needs root and Debian's `slurm-wlm` and
//! `munge` (`.ci/run` installs them); a missing program fails the test, naming it.

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{result_keys as keys, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_speedy");

/// Daemons started by this test, killed by pid when it ends.
struct Daemons(Vec<Child>);
impl Drop for Daemons {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn need(prog: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
        .unwrap_or(false)
        || Path::new("/usr/sbin").join(prog).is_file();
    assert!(
        found,
        "this test needs {prog}: apt-get install slurm-wlm munge (as .ci/run does)"
    );
}

#[test]
fn a_slurm_array_runs_the_shards_and_the_merge_equals_the_unsharded_run() {
    for p in ["munged", "slurmctld", "slurmd", "sbatch", "sinfo"] {
        need(p);
    }
    let dir = TempDir::new("lab-slurm");
    let d = |s: &str| dir.0.join(s);
    for sub in ["state", "spool", "munge"] {
        std::fs::create_dir_all(d(sub)).unwrap();
    }
    // munge: a fresh key, a private socket.
    let key: Vec<u8> = (0..1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(d("munge/munge.key"), key).unwrap();
    std::fs::set_permissions(
        d("munge/munge.key"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let sock = d("munge/sock");
    let mut daemons = Daemons(Vec::new());
    daemons.0.push(
        Command::new("munged")
            .arg("-F")
            .arg(format!("--key-file={}", d("munge/munge.key").display()))
            .arg(format!("--socket={}", sock.display()))
            .arg(format!("--pid-file={}", d("munge/pid").display()))
            .arg(format!("--log-file={}", d("munge/log").display()))
            .arg(format!("--seed-file={}", d("munge/seed").display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let host = String::from_utf8(Command::new("hostname").arg("-s").output().unwrap().stdout)
        .unwrap()
        .trim()
        .to_string();
    let conf = d("slurm.conf");
    std::fs::write(
        &conf,
        format!(
            "ClusterName=speedytest\nSlurmctldHost={host}(127.0.0.1)\nSlurmctldPort={}\nSlurmdPort={}\n\
SlurmUser=root\nSlurmdUser=root\nStateSaveLocation={}\nSlurmdSpoolDir={}\n\
SlurmctldPidFile={}\nSlurmdPidFile={}\nSlurmctldLogFile={}\nSlurmdLogFile={}\n\
AuthType=auth/munge\nAuthInfo=socket={}\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
JobAcctGatherType=jobacct_gather/none\nSelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n\
SchedulerType=sched/builtin\nReturnToService=2\nMpiDefault=none\n\
NodeName={host} NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN\nPartitionName=lab Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n",
            free_port(),
            free_port(),
            d("state").display(),
            d("spool").display(),
            d("ctld.pid").display(),
            d("d.pid").display(),
            d("ctld.log").display(),
            d("d.log").display(),
            sock.display(),
        ),
    )
    .unwrap();
    let slurm = |prog: &str| {
        let mut c = Command::new(prog);
        c.env("SLURM_CONF", &conf);
        c
    };
    // Wait for munged's socket before the Slurm daemons authenticate through it.
    let t0 = Instant::now();
    while !sock.exists() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    for (prog, args) in [("slurmctld", vec!["-D", "-i"]), ("slurmd", vec!["-D"])] {
        daemons.0.push(
            slurm(prog)
                .args(&args)
                .arg("-f")
                .arg(&conf)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
    }
    let t0 = Instant::now();
    loop {
        let o = slurm("sinfo").args(["-h", "-o", "%t"]).output().unwrap();
        let state = String::from_utf8_lossy(&o.stdout).trim().to_string();
        if state == "idle" {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the Slurm node never became idle ({state:?}); slurmctld log:\n{}",
            std::fs::read_to_string(d("ctld.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(250));
    }

    let exp = d("tiny.toml");
    std::fs::write(
        &exp,
        "name = \"tiny-slurm\"\nruns = 2\nseed = 4\ntimeout_s = 60\n[pages]\nsynth = 2\n\
[[network]]\nname = \"lan-ish\"\ndown = \"20mbit\"\nup = \"5mbit\"\nrtt_ms = 20\n\
[[variant]]\nname = \"http1\"\nprotocol = \"http1\"\n[[variant]]\nname = \"spdy\"\nprotocol = \"spdy\"\n",
    )
    .unwrap();
    // Array ids 1 and 2: the lab must count from SLURM_ARRAY_TASK_MIN.
    let job = d("job.sh");
    std::fs::write(
        &job,
        format!(
            "#!/bin/bash\nexec {BIN} lab {} --out {} --lanes 1 --no-report\n",
            exp.display(),
            d("sharded").display()
        ),
    )
    .unwrap();
    let o = slurm("sbatch")
        .args(["--array=1-2", "--wait", "--time=5", "-o"])
        .arg(d("task-%a.log"))
        .arg(&job)
        .output()
        .unwrap();
    let logs: String = ["1", "2"]
        .iter()
        .map(|a| std::fs::read_to_string(d(&format!("task-{a}.log"))).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n---\n");
    assert!(
        o.status.success(),
        "sbatch: {}\n{}\ntask logs:\n{logs}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        logs.contains("from SLURM_ARRAY_TASK_ID 1") && logs.contains("from SLURM_ARRAY_TASK_ID 2"),
        "each task said where its shard came from:\n{logs}"
    );
    for f in ["results-shard0of2.jsonl", "results-shard1of2.jsonl"] {
        assert!(d("sharded").join(f).exists(), "{f} written:\n{logs}");
    }
    let o = Command::new(BIN)
        .args(["lab", "merge"])
        .arg(d("sharded"))
        .arg("--out")
        .arg(d("merged"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(BIN)
        .arg("lab")
        .arg(&exp)
        .args(["--lanes", "2", "--no-report", "--out"])
        .arg(d("whole"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let merged = keys(&d("merged/results.jsonl"));
    assert_eq!(merged.len(), 8, "2 pages × 2 variants × 2 runs");
    assert_eq!(merged, keys(&d("whole/results.jsonl")));
    assert!(d("merged/report.html").exists());
}
