//! Serving until a signal: every listener of a server runs until SIGTERM or SIGINT,
//! then the server drains (GOAWAY, or close after the response in flight) for up to its
//! drain timeout; a second signal exits the process at once with status 130. Messages
//! go to stderr as `speedy serve: ...` (the proxy's too).

use super::bind::Udp;
use super::named;
use speedy_net::server::{serve, serve_sctp, Handler, ServerConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A server with every listener bound and its start-up lines written: what
/// [`Serving::until_signal`] runs.
pub(super) struct Serving {
    pub(super) listeners: Vec<tokio::net::TcpListener>,
    pub(super) udp: Udp,
    pub(super) cfg: ServerConfig,
    pub(super) handler: Arc<dyn Handler>,
    /// How long streams have to finish after the first signal.
    pub(super) drain: Duration,
}

impl Serving {
    /// Serves on every listener until SIGTERM or SIGINT, then drains for up to the drain
    /// timeout; a second signal exits the process at once (status 130). Returns early
    /// only when a listener fails.
    pub(super) async fn until_signal(self) -> Result<(), String> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).map_err(|e| named("SIGTERM handler", &e))?;
        let mut int = signal(SignalKind::interrupt()).map_err(|e| named("SIGINT handler", &e))?;
        let drain = self.drain;
        let shutdown = self.cfg.shutdown.clone();
        let mut tasks = self.spawn()?;
        let all_done = async {
            while let Some(r) = tasks.join_next().await {
                r.map_err(|e| super::with_causes(&e))?
                    .map_err(|e| super::with_causes(&e))?;
            }
            Ok::<(), String>(())
        };
        tokio::pin!(all_done);
        let name = tokio::select! {
            r = &mut all_done => return r,
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        eprintln!("speedy serve: {name}: draining (up to {drain:?}; a second signal exits now)");
        shutdown.trigger();
        tokio::spawn(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            eprintln!("speedy serve: second signal: exiting now");
            std::process::exit(130);
        });
        match tokio::time::timeout(drain, &mut all_done).await {
            Ok(r) => r?,
            Err(_) => eprintln!("speedy serve: drain timeout: closing the connections left"),
        }
        Ok(())
    }

    /// Starts a task per listener, and the SCTP counters' keeper if asked for.
    fn spawn(self) -> Result<tokio::task::JoinSet<std::io::Result<()>>, String> {
        let Serving {
            listeners,
            udp,
            cfg,
            handler,
            ..
        } = self;
        let mut tasks = tokio::task::JoinSet::new();
        for l in listeners {
            tasks.spawn(serve(l, cfg.clone(), handler.clone()));
        }
        for l in udp.sctp {
            tasks.spawn(serve_sctp(l, cfg.clone(), handler.clone()));
        }
        if let Some(path) = udp.sctp_counters {
            keep_sctp_counters_from_now(path)?;
        }
        for l in udp.h3 {
            tasks.spawn(speedy_net::h3::serve_h3(l, cfg.clone(), handler.clone()));
        }
        for s in udp.udp_get {
            tasks.spawn(speedy_net::transport::udp_get::serve_udp_get(
                s,
                cfg.clone(),
                handler.clone(),
            ));
        }
        Ok(tasks)
    }
}

/// Writes the SCTP counters to `path` now, then keeps it current every 20 ms in a task
/// (which stops, saying why, when a write fails).
fn keep_sctp_counters_from_now(path: PathBuf) -> Result<(), String> {
    let mut held = None;
    keep_sctp_counters(&path, &mut held)?;
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            if let Err(e) = keep_sctp_counters(&path, &mut held) {
                eprintln!("speedy serve: --sctp-counters: {e}");
                return;
            }
        }
    });
    Ok(())
}

/// Writes the process's SCTP counters to `path` when they differ from `held`, what it
/// holds (through a temporary file and a rename: a reader never sees half of it).
fn keep_sctp_counters(
    path: &Path,
    held: &mut Option<speedy_net::sctp::counters::Counters>,
) -> Result<(), String> {
    let now = speedy_net::sctp::counters::totals();
    if *held == Some(now) {
        return Ok(());
    }
    let tmp = path.with_extension("tmp");
    let json = serde_json::to_string(&now).map_err(|e| super::with_causes(&e))?;
    std::fs::write(&tmp, json).map_err(|e| named(format!("writing {}", tmp.display()), &e))?;
    std::fs::rename(&tmp, path).map_err(|e| named(format!("writing {}", path.display()), &e))?;
    *held = Some(now);
    Ok(())
}
