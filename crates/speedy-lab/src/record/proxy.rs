//! The recording proxy of one visit: `speedy proxy --spec -` handed a [`ProxySpec`] with
//! `record` set, on a free loopback port, stopped (SIGTERM, by its pid) once the visit
//! is over so that every exchange is written when its log is read.

use crate::testbed::spawn_announced_to;
use speedy_server::spec::ProxySpec;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// How long the proxy has to finish after SIGTERM before it is killed: its own drain is
/// 10 s, and the visit's clients are gone by then.
const STOP_WITHIN: Duration = Duration::from_secs(15);

/// What the recording proxy is asked for besides its log.
#[derive(Clone, Debug, Default)]
pub struct Upstream {
    /// `HOST[:PORT]=IP[:PORT]` entries (`speedy proxy --resolve`).
    pub resolve: Vec<String>,
    /// Trust the CAs of this PEM file for https origins.
    pub cacert: Option<std::path::PathBuf>,
    /// Check no origin's certificate.
    pub insecure: bool,
}

/// A running recording proxy; killed (by pid) if dropped before [`RecordingProxy::stop`].
pub(super) struct RecordingProxy {
    child: Option<Child>,
    /// Where clients reach it.
    pub addr: SocketAddr,
}

impl RecordingProxy {
    /// Starts `speedy proxy` recording into `log` with the CA in `ca_dir`, reaching every
    /// host (`--allow '*'`; it listens on loopback only) as `up` says. Its standard
    /// error goes to `log` with the extension `stderr.txt`.
    pub fn start(
        speedy: &Path,
        log: &Path,
        ca_dir: &Path,
        up: &Upstream,
    ) -> Result<RecordingProxy, String> {
        let spec = ProxySpec {
            listen: "127.0.0.1:0".into(),
            record: Some(log.to_path_buf()),
            record_ca: Some(ca_dir.to_path_buf()),
            resolve: up.resolve.clone(),
            allow: vec!["*".into()],
            cacert: up.cacert.clone(),
            insecure: up.insecure,
            ..ProxySpec::default()
        };
        spec.check()
            .map_err(|e| format!("the recording proxy: {e}"))?;
        let json = serde_json::to_vec(&spec).map_err(|e| format!("the proxy spec: {e}"))?;
        let err_path = log.with_extension("stderr.txt");
        let err = std::fs::File::create(&err_path)
            .map_err(|e| format!("creating {}: {e}", err_path.display()))?;
        let mut cmd = Command::new(speedy);
        cmd.args(["proxy", "--spec", "-"]);
        let (child, startup) =
            spawn_announced_to(cmd, json, speedy, "the recording proxy", err.into())?;
        Ok(RecordingProxy {
            child: Some(child),
            addr: startup.listening,
        })
    }

    /// Stops the proxy: SIGTERM, then its exit (killed after [`STOP_WITHIN`]). Every
    /// exchange it finished is in its log afterwards.
    pub fn stop(mut self) -> Result<(), String> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        // SAFETY: kill(2) on our own child's pid, not yet reaped (so still ours).
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + STOP_WITHIN;
        loop {
            match child.try_wait() {
                Ok(Some(st)) if st.success() => return Ok(()),
                Ok(Some(st)) => return Err(format!("the recording proxy ended with {st}")),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "the recording proxy did not stop within {STOP_WITHIN:?}; killed"
                    ));
                }
            }
        }
    }
}

impl Drop for RecordingProxy {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // Child::kill signals our own unreaped child by pid.
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
