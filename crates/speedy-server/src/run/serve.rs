//! `speedy serve` from its [`ServeSpec`]: the files of a directory (`root`), or a page
//! archive replayed for every origin at once (`archive`), on one port per address.

use super::bind::{bind_tcp, set_tls, tcp_series, use_pair, Udp};
use super::{named, not_a_file, Serving};
use crate::spec::ServeSpec;
use crate::startup::{Listener, ListenerKind, ServeStartup, ServedOrigin};
use speedy_net::server::{Handler, Request, ResponseFuture, ServerConfig};
use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The SPDY DATA frame size for a stream alone on its session, serving `--root`: a
/// download alone goes out in 64 KiB frames (8 KiB once another stream has data).
const LONE_DATA_FRAME: usize = 64 * 1024;

/// Runs `speedy serve` as `spec` asks: checks it, binds every listener, writes the
/// start-up lines ([`ServeStartup`]) to `out`, and serves until SIGTERM/SIGINT and the
/// drain after it; returns early only on a start-up error.
pub async fn serve(spec: &ServeSpec, out: impl Write) -> Result<(), String> {
    // Every value is checked before anything starts, whichever mode uses it.
    spec.check()?;
    if let Some(d) = &spec.ca_dir {
        not_a_file("--ca-dir", d)?;
    }
    let serving = match &spec.archive {
        Some(dir) => bind_archive(spec, dir, out).await?,
        None => bind_files(spec, out).await?,
    };
    serving.until_signal().await
}

/// A server configuration with the spec's limits, SPDY settings and TCP series.
fn server_config(spec: &ServeSpec) -> Result<ServerConfig, String> {
    let mut cfg = ServerConfig::default();
    spec.apply_limits(&mut cfg);
    spec.apply_spdy(&mut cfg);
    cfg.tcp_series = tcp_series(spec.tcp_series.as_deref(), spec.tcp_interval_ms)?;
    Ok(cfg)
}

/// The server configuration `--root` serves files with: the spec's limits, SPDY
/// settings and TCP series, and 64 KiB DATA frames for a download alone on its session
/// (archive replay keeps 8 KiB throughout, as the lab's SPDY loads have always been
/// framed). TLS is set apart.
pub fn files_config(spec: &ServeSpec) -> Result<ServerConfig, String> {
    let mut cfg = server_config(spec)?;
    cfg.spdy.lone_data_frame = LONE_DATA_FRAME;
    Ok(cfg)
}

/// `root`: binds `listen` (and UDP beside it) and announces the files of the directory.
async fn bind_files(spec: &ServeSpec, out: impl Write) -> Result<Serving, String> {
    let root_arg = spec.root.as_ref().expect("checked: root or archive");
    let root = root_arg
        .canonicalize()
        .map_err(|e| named(format!("--root {}", root_arg.display()), &e))?;
    if !root.is_dir() {
        return Err(format!("--root {}: not a directory", root.display()));
    }
    let push_map = match &spec.push_map {
        Some(p) => parse_push_map(p)?,
        None => HashMap::new(),
    };
    let mut cfg = files_config(spec)?;
    set_tls(
        &mut cfg,
        spec.tls_self_signed,
        spec.tls_cert.as_deref(),
        spec.tls_key.as_deref(),
    )?;
    let listeners = bind_tcp(std::slice::from_ref(&spec.listen), |b| {
        format!("--listen {b}")
    })
    .await?;
    let addr = local_addr(&listeners[0])?;
    let udp = Udp::bind(spec, &cfg, &[addr]).await?;
    let mode = if cfg.tls.is_some() { "tls" } else { "plain" };
    // Human line, then the JSON start-up line.
    let startup = ServeStartup {
        root: Some(root.display().to_string()),
        sctp: !udp.sctp.is_empty(),
        h3: !udp.h3.is_empty(),
        listeners: all_listeners(&[addr], &udp)?,
        ..ServeStartup::new(addr, cfg.tls.is_some())
    };
    let human = format!(
        "listening on {addr} ({mode}; {}; root {}){}\n",
        speedy_net::tls::SERVER_ALPN.join(", "),
        root.display(),
        udp.notes(addr.port())
    );
    startup
        .announce(&human, out)
        .map_err(|e| super::with_causes(&e))?;
    let files = Arc::new(crate::files::FileServer::new(
        root,
        push_map,
        spec.echo_upload,
        spec.reset_path.iter().cloned().collect(),
    ));
    let handler = with_request_log(files, spec.log_requests.as_deref())?;
    Ok(Serving {
        listeners,
        udp,
        cfg,
        handler,
        drain: spec.drain_timeout,
    })
}

/// `archive`: loads the archive, binds an address per `bind_origins` (or `listen`), UDP
/// beside them, and announces every origin and the address serving it.
async fn bind_archive(spec: &ServeSpec, dir: &Path, out: impl Write) -> Result<Serving, String> {
    let archive = speedy_archive::Archive::load(dir).map_err(|e| e.to_string())?;
    let https = archive
        .objects
        .iter()
        .any(|o| o.url.starts_with("https://"));
    let replay = crate::Replay::new(
        Arc::new(archive),
        crate::ReplayOptions {
            push: spec.push,
            hint: spec.hint,
            think_time: !spec.no_think_time,
            recorded_think_time: spec.recorded_think_time,
        },
    );
    let hosts = replay.hosts();
    let slots = replay.host_slots();
    let mut cfg = server_config(spec)?;
    if https && !spec.plain {
        let ca_dir = spec.ca_dir.clone().unwrap_or_else(|| dir.join("lab-ca"));
        use_pair(&mut cfg, crate::ca::issue(&ca_dir, &hosts)?, |e| e)?;
    }
    let handler = with_request_log(Arc::new(replay), spec.log_requests.as_deref())?;
    let mode = if cfg.tls.is_some() {
        "tls+plain"
    } else {
        "plain"
    };
    let listeners = bind_tcp(&origin_binds(spec), |b| format!("binding {b}")).await?;
    let addrs: Vec<SocketAddr> = listeners.iter().map(local_addr).collect::<Result<_, _>>()?;
    let udp = Udp::bind(spec, &cfg, &addrs).await?;
    // Human lines, then the JSON start-up line.
    // Hosts recorded at one address share one here too.
    let origins: Vec<ServedOrigin> = hosts
        .iter()
        .zip(slots)
        .map(|(h, slot)| ServedOrigin {
            host: h.to_string(),
            addr: addrs[slot % addrs.len()],
        })
        .collect();
    let mut human = format!(
        "listening on {} ({mode}; {}; archive {}, {} origins){}\n",
        addrs[0],
        speedy_net::tls::SERVER_ALPN.join(", "),
        dir.display(),
        hosts.len(),
        udp.notes(addrs[0].port())
    );
    for o in &origins {
        human.push_str(&format!("origin {} {}\n", o.host, o.addr));
    }
    let startup = ServeStartup {
        archive: Some(dir.display().to_string()),
        origins,
        sctp: !udp.sctp.is_empty(),
        h3: !udp.h3.is_empty(),
        listeners: all_listeners(&addrs, &udp)?,
        ..ServeStartup::new(addrs[0], cfg.tls.is_some())
    };
    startup
        .announce(&human, out)
        .map_err(|e| super::with_causes(&e))?;
    Ok(Serving {
        listeners,
        udp,
        cfg,
        handler,
        drain: spec.drain_timeout,
    })
}

/// The addresses an archive is served on: each of `bind_origins` at the `listen` port,
/// or `listen` alone.
fn origin_binds(spec: &ServeSpec) -> Vec<String> {
    if spec.bind_origins.is_empty() {
        return vec![spec.listen.clone()];
    }
    let port = spec
        .listen
        .rsplit_once(':')
        .map(|(_, p)| p.to_string())
        .unwrap_or_else(|| "0".into());
    spec.bind_origins
        .iter()
        .map(|ip| {
            if ip.contains(':') {
                format!("[{ip}]:{port}")
            } else {
                format!("{ip}:{port}")
            }
        })
        .collect()
}

/// Every listener for the start-up line: TCP at `tcp`, then the UDP ones.
fn all_listeners(tcp: &[SocketAddr], udp: &Udp) -> Result<Vec<Listener>, String> {
    let tcp = tcp.iter().map(|&addr| Listener {
        kind: ListenerKind::Tcp,
        addr,
    });
    Ok(tcp.chain(udp.listeners()?).collect())
}

/// A listener's address (port resolved).
pub(super) fn local_addr(l: &tokio::net::TcpListener) -> Result<SocketAddr, String> {
    l.local_addr().map_err(|e| super::with_causes(&e))
}

/// `handler`, wrapped in a [`RequestLog`] appending to `log` when one is given.
fn with_request_log(
    handler: Arc<dyn Handler>,
    log: Option<&Path>,
) -> Result<Arc<dyn Handler>, String> {
    let Some(p) = log else { return Ok(handler) };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(p)
        .map_err(|e| named(format!("--log-requests {}", p.display()), &e))?;
    Ok(Arc::new(RequestLog {
        inner: handler,
        file: Mutex::new(file),
    }))
}

/// Wraps a handler and writes `METHOD HOST PATH PROTOCOL` per request (`log_requests`).
struct RequestLog {
    inner: Arc<dyn Handler>,
    file: Mutex<std::fs::File>,
}

impl Handler for RequestLog {
    fn handle(&self, req: Request) -> ResponseFuture {
        let line = format!(
            "{} {} {} {}\n",
            req.method, req.host, req.path, req.protocol
        );
        // One write per line, so concurrent connections never interleave within a line.
        let _ = self
            .file
            .lock()
            .expect("not poisoned")
            .write_all(line.as_bytes());
        self.inner.handle(req)
    }
}

/// Reads a push map: `PATH: PUSHED_PATH ...` per line, `#` comments.
fn parse_push_map(p: &Path) -> Result<HashMap<String, Vec<String>>, String> {
    let text =
        std::fs::read_to_string(p).map_err(|e| named(format!("--push-map {}", p.display()), &e))?;
    let mut map = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let Some((k, v)) = line.split_once(':') else {
            return Err(format!(
                "{}:{}: expected `PATH: PUSHED_PATH ...`, got {line:?}",
                p.display(),
                i + 1
            ));
        };
        let k = k.trim();
        let pushed: Vec<String> = v.split_whitespace().map(str::to_string).collect();
        if !k.starts_with('/') || pushed.iter().any(|x| !x.starts_with('/')) {
            return Err(format!(
                "{}:{}: paths must start with '/'",
                p.display(),
                i + 1
            ));
        }
        map.entry(k.to_string())
            .or_insert_with(Vec::new)
            .extend(pushed);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_bind_at_the_listen_port() {
        let mut s = ServeSpec {
            listen: "127.0.0.1:8443".into(),
            ..ServeSpec::default()
        };
        assert_eq!(origin_binds(&s), ["127.0.0.1:8443"]);
        s.bind_origins = vec!["10.0.0.1".into(), "fd00::2".into()];
        assert_eq!(origin_binds(&s), ["10.0.0.1:8443", "[fd00::2]:8443"]);
    }
}
