//! `speedy proxy`: a forward proxy speaking SPDY/3.1 (TLS with ALPN, as Chrome's SPDY
//! proxy), HTTP/1.1 (absolute-form requests) and h2 to clients, and HTTP/1.1 or SPDY to
//! origins over pooled connections (`speedy_server::proxy`), to the hosts `--allow` and
//! `--resolve` name and no others.

use anyhow::Result;
use clap::Args;
use speedy_server::spec::{read_spec, ProxySpec};
use std::path::PathBuf;

/// Arguments of `speedy proxy`.
#[derive(Args, Debug)]
#[command(
    after_help = "Clients: SPDY/3.1, SPDY/3, SPDY/2 and h2 requests name their origin \
in :host/:authority and :scheme; HTTP/1.1 requests use absolute form \
(GET http://host/path HTTP/1.1). Over TLS (--tls-self-signed or --tls-cert/--tls-key), ALPN \
picks the protocol, as Chrome's SPDY proxy. HTTP/1.1 CONNECT host:port opens a tunnel to \
the target.\n\n\
Access (safe by default): the proxy listens on 127.0.0.1 unless --listen says otherwise \
(and then says on stderr that other machines can reach it), and lets clients reach only \
the hosts --resolve names (all of them with a `*` entry) and those --allow HOST[:PORT] \
names (`*.example.com`: every name under example.com; `*`: every host, an open proxy). \
Requests and CONNECT targets are matched by host and port, IP addresses as addresses; \
anything else gets 403 with the reason in the body (on its own stream over SPDY and h2). \
With neither flag nothing is allowed, and the proxy says so at start.\n\n\
Origins: reached at the addresses of --resolve (the lab has no DNS), else looked up with \
the system's resolver, over one pooled \
connection per origin: HTTP/1.1 for http:// (--upstream spdy for SPDY/3.1), ALPN for https://. \
An origin that cannot be reached gives 502, one that does not answer in --timeout 504, each \
with the reason in the body and in x-speedy-proxy-error. Request bodies are read whole before \
they go on, held to --max-body each and all of them at once (over it alone: 413; no room left \
by the others: 503).\n\n\
--log FILE: one JSON line per request: url, method, status, client_protocol, \
origin_protocol, bytes, first_byte_from_origin_ms, last_byte_from_origin_ms, \
last_byte_to_client_ms (from the request's arrival; the last is when the final chunk was \
handed to the client's connection).\n\n\
Example (./corpus from `speedy corpus synth --out ./corpus`, served by `speedy serve \
--listen 127.0.0.1:8080 --archive ./corpus`):\n  \
speedy proxy --listen 127.0.0.1:3128 --tls-self-signed --resolve '*=127.0.0.1:8080' -k --log proxy.jsonl\n\n\
Example (curl --proxy http://127.0.0.1:3128 reaching example.com over https and the hosts \
under example.org, nothing else):\n  \
speedy proxy --listen 127.0.0.1:3128 --allow example.com:443 --allow '*.example.org'"
)]
pub struct ProxyArgs {
    /// Read every option from FILE instead of flags: JSON (TOML for a `.toml` name; `-`
    /// reads JSON from standard input), keys named as the flags with `_` for `-`;
    /// `--print-spec` writes one.
    #[arg(long, value_name = "FILE", exclusive = true)]
    spec: Option<PathBuf>,
    /// Print the proxy's spec as JSON (every option, defaults filled in) and exit.
    #[arg(long)]
    print_spec: bool,
    #[command(flatten)]
    opts: ProxySpec,
}

/// Prints the spec with `--print-spec`; otherwise runs the proxy until SIGTERM or SIGINT
/// (and the drain after it).
pub async fn run(args: ProxyArgs) -> Result<()> {
    let spec = match &args.spec {
        Some(p) => read_spec::<ProxySpec>(p).map_err(anyhow::Error::msg)?,
        None => args.opts.clone(),
    };
    if args.print_spec {
        println!("{}", serde_json::to_string_pretty(&spec)?);
        return Ok(());
    }
    speedy_server::run::proxy(&spec, std::io::stdout())
        .await
        .map_err(anyhow::Error::msg)
}
