//! Kubernetes' stream protocols over SPDY/3.1, client side: `exec` (the remote-command
//! channels) and `port-forward`, as kubectl and client-go speak them to an API server or
//! a kubelet (`k8s.io/client-go/tools/remotecommand`, `tools/portforward`).
//!
//! Both start with an HTTP/1.1 `Upgrade: SPDY/3.1` ([`crate::spdy::upgrade`]) offering
//! their sub-protocols, then open streams on a [`Mux`] told apart by the `streamtype`
//! header:
//!
//! - exec (`v4.channel.k8s.io`): `error` first, then `stdin` (if any), `stdout`,
//!   `stderr`; stdin is half-closed at its end; the outcome is the JSON `metav1.Status`
//!   on the error stream (`Success`, or `Failure` with reason `NonZeroExitCode` and a
//!   cause `{"type":"ExitCode","message":"<code>"}`).
//! - port-forward (`portforward.k8s.io`): per forwarded connection a pair of streams,
//!   `error` (half-closed by us at once) and `data`, both with `port` and the same
//!   `requestid`; the data stream carries the connection's bytes both ways.
//!
//! Header names are lower-case on the wire (SPDY/3); Kubernetes writes `streamType` and
//! `requestID`, which its SPDY layer lower-cases.

use crate::spdy::mux::{Mux, MuxRecv, MuxSend, MuxStream};
use crate::spdy::upgrade::{client_handshake, UpgradeRequest};
use crate::transport::io::BoxIo;
use bytes::Bytes;
use spdy::{Headers, Role, Version};
use std::io;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The header naming a stream's role.
pub const STREAM_TYPE: &str = "streamtype";
/// Port-forward: the remote port.
pub const PORT: &str = "port";
/// Port-forward: the id pairing a data stream with its error stream.
pub const REQUEST_ID: &str = "requestid";
/// Exec sub-protocols, most preferred first (v4 carries the exit code).
pub const EXEC_PROTOCOLS: [&str; 4] = [
    "v4.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
];
/// The port-forward sub-protocol.
pub const PORT_FORWARD_PROTOCOL: &str = "portforward.k8s.io";

/// Dials `authority` (plain TCP) and upgrades to SPDY/3.1 for `path`, offering
/// `protocols`. Returns the running multiplexer and the chosen sub-protocol.
pub async fn connect(
    authority: &str,
    method: &str,
    path: &str,
    protocols: &[&str],
) -> io::Result<(Mux, Option<String>)> {
    let tcp = tokio::net::TcpStream::connect(authority).await?;
    tcp.set_nodelay(true)?;
    let up = UpgradeRequest {
        method: method.into(),
        path: path.into(),
        stream_protocols: protocols.iter().map(|p| p.to_string()).collect(),
    };
    let (io, chosen) = client_handshake(Box::new(tcp) as BoxIo, authority, &up)
        .await
        .map_err(|e| io::Error::other(e.to_string()))?;
    let cfg = spdy::Config {
        flow_control: spdy::session::FlowControl::Lenient,
        ..spdy::Config::new(Role::Client, Version::V3_1)
    };
    Ok((Mux::start(io, cfg), chosen))
}

/// How a remote command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecOutcome {
    /// The command's exit code (0 on `Success`).
    pub exit_code: i32,
    /// The error stream's text (the `metav1.Status` JSON with v4).
    pub status: String,
    /// The sub-protocol the server chose.
    pub protocol: Option<String>,
}

/// Runs the exec protocol against `path` (e.g. `/api/v1/namespaces/N/pods/P/exec?
/// command=date&stdin=true&stdout=true&stderr=true`): `stdin` is sent and half-closed,
/// stdout and stderr are copied out until the server closes them.
pub async fn exec(
    authority: &str,
    path: &str,
    stdin: Option<Box<dyn AsyncRead + Send + Unpin>>,
    mut stdout: Box<dyn AsyncWrite + Send + Unpin>,
    mut stderr: Box<dyn AsyncWrite + Send + Unpin>,
) -> io::Result<ExecOutcome> {
    let (mux, protocol) = connect(authority, "POST", path, &EXEC_PROTOCOLS).await?;
    let open = |kind: &'static str| {
        let mux = &mux;
        async move {
            let mut s = mux
                .open(Headers::from_pairs([(STREAM_TYPE, kind)]), false)
                .await?;
            s.reply_headers().await?;
            Ok::<MuxStream, io::Error>(s)
        }
    };
    let mut error = open("error").await?;
    error.finish(); // we never write to it
    let stdin_stream = match stdin {
        Some(_) => Some(open("stdin").await?),
        None => None,
    };
    let (_, mut out) = open("stdout").await?.split();
    let (_, mut err) = open("stderr").await?.split();
    let send_stdin = async {
        if let (Some(mut input), Some(s)) = (stdin, stdin_stream) {
            copy_in(&mut input, &s.split().0).await?;
        }
        Ok::<(), io::Error>(())
    };
    let to_stdout = async {
        copy_out(&mut out, &mut stdout).await?;
        stdout.flush().await
    };
    let to_stderr = async {
        copy_out(&mut err, &mut stderr).await?;
        stderr.flush().await
    };
    let read_status = async {
        let mut text = Vec::new();
        while let Some(c) = error.recv().await {
            text.extend_from_slice(&c?);
        }
        Ok::<String, io::Error>(String::from_utf8_lossy(&text).into_owned())
    };
    let (a, b, c, status) = tokio::join!(send_stdin, to_stdout, to_stderr, read_status);
    a?;
    b?;
    c?;
    let status = status?;
    let exit_code = exit_code(&status)?;
    let _ = mux.close().await;
    Ok(ExecOutcome {
        exit_code,
        status,
        protocol,
    })
}

/// The exit code a v4 error-stream text says: 0 for none or `Success`, the `ExitCode`
/// cause for `NonZeroExitCode`; any other failure is an error with its message.
pub fn exit_code(status: &str) -> io::Result<i32> {
    if status.trim().is_empty() {
        return Ok(0);
    }
    let v: serde_json::Value = serde_json::from_str(status).map_err(|_| {
        // v1-v3 send plain text errors.
        io::Error::other(format!("remote error: {}", status.trim()))
    })?;
    match v.get("status").and_then(|s| s.as_str()) {
        Some("Success") => Ok(0),
        _ => {
            let code = v
                .pointer("/details/causes")
                .and_then(|c| c.as_array())
                .and_then(|causes| {
                    causes.iter().find_map(|c| {
                        // StatusCause's type is spelled "reason" in JSON.
                        let kind = c.get("reason").or_else(|| c.get("type"));
                        (kind.and_then(|r| r.as_str()) == Some("ExitCode"))
                            .then(|| c.get("message")?.as_str()?.parse::<i32>().ok())?
                    })
                });
            match code {
                Some(c) if v.get("reason").and_then(|r| r.as_str()) == Some("NonZeroExitCode") => {
                    Ok(c)
                }
                _ => Err(io::Error::other(format!(
                    "remote error: {}",
                    v.get("message").and_then(|m| m.as_str()).unwrap_or(status)
                ))),
            }
        }
    }
}

/// Copies `input` into the stream in pieces, then half-closes it.
async fn copy_in(input: &mut (dyn AsyncRead + Send + Unpin), s: &MuxSend) -> io::Result<()> {
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        let n = input.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        s.send(Bytes::copy_from_slice(&buf[..n])).await?;
    }
    s.finish();
    Ok(())
}

/// Copies the stream's bytes out until the peer's FIN.
async fn copy_out(s: &mut MuxRecv, out: &mut (dyn AsyncWrite + Send + Unpin)) -> io::Result<()> {
    while let Some(c) = s.recv().await {
        out.write_all(&c?).await?;
    }
    Ok(())
}

/// Forwards one local connection to `port` on the far side over `mux`: opens the
/// error/data pair with `request_id`, copies both ways until both directions end.
/// Returns what the error stream said, if anything.
pub async fn forward(
    mux: &Mux,
    port: u16,
    request_id: u32,
    conn: tokio::net::TcpStream,
) -> io::Result<Option<String>> {
    let headers = |kind: &str| {
        Headers::from_pairs([
            (STREAM_TYPE, kind.to_string()),
            (PORT, port.to_string()),
            (REQUEST_ID, request_id.to_string()),
        ])
    };
    let mut error = mux.open(headers("error"), false).await?;
    error.reply_headers().await?;
    error.finish();
    let mut data = mux.open(headers("data"), false).await?;
    data.reply_headers().await?;
    let (send, mut recv) = data.split();
    let (mut rd, mut wr) = conn.into_split();
    let up = copy_in(&mut rd, &send);
    let down = async {
        copy_out(&mut recv, &mut wr).await?;
        wr.shutdown().await
    };
    let said = async {
        let mut text = Vec::new();
        while let Some(Ok(c)) = error.recv().await {
            text.extend_from_slice(&c);
        }
        String::from_utf8_lossy(&text).into_owned()
    };
    let (a, b, said) = tokio::join!(up, down, said);
    a?;
    b?;
    Ok((!said.is_empty()).then_some(said))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_exit_codes_from_v4_status() {
        assert_eq!(exit_code("").unwrap(), 0);
        assert_eq!(exit_code(r#"{"status":"Success"}"#).unwrap(), 0);
        let failure = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3",
            "reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#;
        assert_eq!(exit_code(failure).unwrap(), 3);
        let other = r#"{"status":"Failure","message":"pod not found","reason":"NotFound"}"#;
        assert!(exit_code(other)
            .unwrap_err()
            .to_string()
            .contains("pod not found"));
        assert!(exit_code("container not running").is_err());
    }
}
