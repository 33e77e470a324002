//! `speedy kube`: Kubernetes' exec and port-forward streams over SPDY/3.1, as kubectl
//! speaks them to an API server or a kubelet (plain http:// endpoints; the protocol is in
//! `speedy_net::spdy::kube`).

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use spdy::url::Url;
use std::path::PathBuf;

/// Arguments of `speedy kube`.
#[derive(Args, Debug)]
pub struct KubeArgs {
    #[command(subcommand)]
    command: KubeCommand,
}

#[derive(Subcommand, Debug)]
enum KubeCommand {
    /// Run the exec protocol (v4.channel.k8s.io, falling back to v3, v2, v1): stdin is
    /// sent, stdout and stderr copied out; exits with the remote command's exit code.
    #[command(
        after_help = "The command is whatever the URL asks for (its `command=` query \
parameters); speedy only carries the streams.\n\n\
Exit status: the remote exit code; 1 when the exchange failed; 2 on bad arguments.\n\n\
Example (a kubelet's streaming endpoint, or any server speaking the protocol):\n  \
echo hello | speedy kube exec --stdin - \\\n      \
'http://127.0.0.1:10250/exec/default/pod/ctr?command=cat&input=1&output=1&error=1'"
    )]
    Exec {
        /// http://HOST:PORT/PATH?QUERY of the exec endpoint.
        #[arg(value_name = "URL")]
        url: String,
        /// Send this file as stdin (`-`: standard input); without it no stdin stream.
        #[arg(long, value_name = "FILE")]
        stdin: Option<PathBuf>,
    },
    /// Forward a local TCP port to a port on the far side (portforward.k8s.io): every
    /// connection to LOCAL gets its own data/error stream pair.
    #[command(
        after_help = "Prints `forwarding 127.0.0.1:LOCAL -> REMOTE` once listening \
(LOCAL 0 picks a free port). Stops after --connections connections, or on Ctrl-C.\n\n\
Example:\n  \
speedy kube port-forward http://127.0.0.1:10250/portforward/default/pod 8080:80"
    )]
    PortForward {
        /// http://HOST:PORT/PATH of the port-forward endpoint.
        #[arg(value_name = "URL")]
        url: String,
        /// LOCAL:REMOTE ports.
        #[arg(value_name = "LOCAL:REMOTE")]
        ports: String,
        /// Stop after this many connections have been forwarded and closed.
        #[arg(long, value_name = "N")]
        connections: Option<u64>,
    },
}

/// Splits an http:// URL into `host:port` and path.
fn endpoint(url: &str) -> Result<(String, String)> {
    let u: Url = url.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
    if u.scheme != "http" {
        bail!("{url}: only http:// endpoints (the Upgrade to SPDY/3.1 runs on plain TCP)");
    }
    Ok((format!("{}:{}", u.host, u.port_or_default()), u.path))
}

/// Runs `speedy kube`; returns the exit status.
pub async fn run(a: KubeArgs) -> Result<u8> {
    match a.command {
        KubeCommand::Exec { url, stdin } => {
            let (authority, path) = endpoint(&url)?;
            let input: Option<Box<dyn tokio::io::AsyncRead + Send + Unpin>> = match &stdin {
                None => None,
                Some(p) if p.as_os_str() == "-" => Some(Box::new(tokio::io::stdin())),
                Some(p) if p.is_dir() => anyhow::bail!("--stdin {}: a directory", p.display()),
                Some(p) => Some(Box::new(
                    tokio::fs::File::open(p)
                        .await
                        .with_context(|| format!("--stdin {}", p.display()))?,
                )),
            };
            match speedy_net::spdy::kube::exec(
                &authority,
                &path,
                input,
                Box::new(tokio::io::stdout()),
                Box::new(tokio::io::stderr()),
            )
            .await
            {
                Ok(o) => Ok(u8::try_from(o.exit_code.clamp(0, 255)).unwrap_or(1)),
                Err(e) => {
                    eprintln!("speedy kube exec: {url}: {e}");
                    Ok(1)
                }
            }
        }
        KubeCommand::PortForward {
            url,
            ports,
            connections,
        } => {
            let (authority, path) = endpoint(&url)?;
            let (local, remote) = ports
                .split_once(':')
                .and_then(|(l, r)| Some((l.parse::<u16>().ok()?, r.parse::<u16>().ok()?)))
                .ok_or_else(|| anyhow::anyhow!("{ports}: expected LOCAL:REMOTE ports"))?;
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", local))
                .await
                .with_context(|| format!("listening on 127.0.0.1:{local}"))?;
            let (mux, _) = speedy_net::spdy::kube::connect(
                &authority,
                "POST",
                &path,
                &[speedy_net::spdy::kube::PORT_FORWARD_PROTOCOL],
            )
            .await
            .with_context(|| url.clone())?;
            println!(
                "forwarding {} -> {remote}",
                listener.local_addr().context("local address")?
            );
            let mux = std::sync::Arc::new(mux);
            let mut tasks = tokio::task::JoinSet::new();
            let mut accepted = 0u64;
            let mut failed = false;
            loop {
                if connections.is_some_and(|n| accepted >= n) {
                    break;
                }
                tokio::select! {
                    c = listener.accept() => {
                        let (conn, _) = c.context("accept")?;
                        accepted += 1;
                        let mux = mux.clone();
                        let id = accepted as u32;
                        tasks.spawn(async move {
                            speedy_net::spdy::kube::forward(&mux, remote, id, conn).await
                        });
                    }
                    _ = tokio::signal::ctrl_c() => break,
                }
            }
            while let Some(r) = tasks.join_next().await {
                match r {
                    Ok(Ok(None)) => {}
                    Ok(Ok(Some(said))) => {
                        eprintln!("speedy kube port-forward: remote error: {said}");
                        failed = true;
                    }
                    Ok(Err(e)) => {
                        eprintln!("speedy kube port-forward: {e}");
                        failed = true;
                    }
                    Err(e) => bail!("forwarding task: {e}"),
                }
            }
            Ok(u8::from(failed))
        }
    }
}
