//! `speedy serve`: files from a directory, or a page archive, over SPDY/3.1, 3, 2, HTTP/2
//! and HTTP/1.1 on one port.

use anyhow::Result;
use clap::Args;
use speedy_server::spec::{read_spec, ServeSpec};
use std::path::{Path, PathBuf};

/// Arguments of `speedy serve`.
#[derive(Args, Debug)]
#[command(
    after_help = "Speaks SPDY/3.1, SPDY/3, SPDY/2, HTTP/2 (h2) and HTTP/1.1. Plain TCP: SPDY, HTTP/2 (prior knowledge) and HTTP/1.1 are told apart by the \
first bytes, and an HTTP/1.1 request with `Connection: Upgrade` and `Upgrade: SPDY/3.1` switches \
its connection to SPDY/3.1 (101; --stream-protocol for Kubernetes' X-Stream-Protocol-Version). \
TLS: by ALPN (spdy/3.1, spdy/3, spdy/2, h2, http/1.1). With --h3, HTTP/3 over QUIC too, on UDP \
at the same address and port, with the same certificate (clients by prior knowledge: no Alt-Svc). \
--sctp beside --h3 (or --udp-get) needs --sctp-port: UDP has one listener per port.\n\n\
Start-up lines (stdout, once every address is bound): `listening on IP:PORT (...)`, with \
--archive one `origin HOST IP:PORT` per origin, then one JSON line for programs:\n  \
{\"listening\":\"IP:PORT\",\"tls\":BOOL,\"plain\":BOOL,\"protocols\":[\"spdy/3.1\",\"spdy/3\",\
\"spdy/2\",\"h2\",\"http/1.1\"],\"root\":DIR | \"archive\":DIR,\"origins\":[{\"host\":HOST,\"addr\":\"IP:PORT\"},...],\"sctp\":BOOL,\"h3\":BOOL,\
\"listeners\":[{\"kind\":\"tcp\"|\"sctp\"|\"h3\"|\"udp-get\",\"addr\":\"IP:PORT\"},...]}\n\
`tls`/`plain`: which connections the port accepts (an archive with https origins: both); \
`origins` is empty with --root; `listeners` says where each listener is (SCTP's port \
with --sctp-port). Read the first line that starts with `{`; fields may be \
added, so ignore unknown ones. Details: docs/serve.md.\n\n\
Limits: request bodies over --max-body are refused unread (HTTP/1.1 413 and close, h2 413, \
SPDY RST_STREAM REFUSED_STREAM; past it mid-body: CANCEL); a handler that does not read a \
body makes the client wait; SPDY header blocks, all frames of a stream together, and h2 \
and HTTP/3 header lists are bounded at 64 KiB (an HTTP/3 HEADERS frame declaring more: 431 \
before it is read); unread request-body bytes at 8 MiB per connection (reading pauses at half \
of it; HTTP/3: the QUIC connection's receive window). HTTP/3 connections are held to \
--max-connections (counted apart from TCP's) and --max-connections-per-ip (more: \
CONNECTION_REFUSED), a request's header section to --header-read-timeout, an idle \
connection to --idle-timeout.\n\n\
Shutdown: SIGTERM or SIGINT stops accepting, sends GOAWAY (SPDY, h2) or closes after the \
response in flight (HTTP/1.1, `Connection: close` on responses not yet begun), lets open \
streams finish for up to --drain-timeout, then exits 0. A second signal exits at once \
with status 130.\n\n\
Examples (./corpus from `speedy corpus synth --out ./corpus`):\n  \
speedy serve --listen 127.0.0.1:8443 --root ./site --tls-self-signed --h3\n  \
speedy serve --listen 127.0.0.1:8080 --archive ./corpus"
)]
pub struct ServeArgs {
    /// Read every option from FILE instead of flags: JSON (TOML for a `.toml` name; `-`
    /// reads JSON from standard input), keys named as the flags with `_` for `-`
    /// (`"archive": "DIR"`, `"h3": true`); `--print-spec` writes one.
    #[arg(long, value_name = "FILE", exclusive = true)]
    spec: Option<PathBuf>,
    /// Print the server's spec as JSON (every option, defaults filled in) and exit.
    #[arg(long)]
    print_spec: bool,
    #[command(flatten)]
    opts: ServeSpec,
}

impl ServeArgs {
    /// The server asked for: the spec file, or the flags.
    fn spec(&self) -> Result<ServeSpec> {
        match &self.spec {
            Some(p) => read_spec(p).map_err(anyhow::Error::msg),
            None => Ok(self.opts.clone()),
        }
    }
}

/// A directory option that names something else is refused by name (it would otherwise
/// fail later in words about a file inside it).
pub(crate) fn not_a_file(flag: &str, p: &Path) -> Result<()> {
    speedy_server::run::not_a_file(flag, p).map_err(anyhow::Error::msg)
}

/// Prints the spec with `--print-spec`; otherwise serves until SIGTERM/SIGINT and the
/// drain after it, returning early only on a start-up error.
pub async fn run(args: ServeArgs) -> Result<()> {
    let spec = args.spec()?;
    if args.print_spec {
        println!("{}", serde_json::to_string_pretty(&spec)?);
        return Ok(());
    }
    speedy_server::run::serve(&spec, std::io::stdout())
        .await
        .map_err(anyhow::Error::msg)
}
