//! A kubelet-like test double for Kubernetes' exec and port-forward streams over SPDY/3.1
//! (feature `kube-double`: built for tests and the `kubelet_double` example only).
//!
//! It never runs a command from the network. Exec runs one fixed, harmless behaviour:
//! stdin is copied to stdout, the line [`STDERR_LINE`] goes to stderr, and once stdin
//! ends the streams close and the error stream says how the "command" ended, with the
//! exit code taken from the query parameter `exit` (default 0) as a v4 `metav1.Status`.
//! Port-forward echoes every data stream's bytes back on it (no real port is dialled).
//!
//! Requests: any path containing `portforward` is a port-forward; anything else is an
//! exec, whose streams are those its query asks for (`stdin`, `stdout`, `stderr` =
//! `true`/`1`; kubectl's `input`/`output`/`error` spellings too).

use crate::spdy::kube::{EXEC_PROTOCOLS, PORT_FORWARD_PROTOCOL, REQUEST_ID, STREAM_TYPE};
use crate::spdy::mux::{Mux, MuxStream};
use crate::spdy::upgrade::server_handshake;
use spdy::{Headers, Role, Version};
use std::collections::HashMap;
use std::io;
use tokio::net::TcpListener;

/// What the double's exec writes to stderr.
pub const STDERR_LINE: &str = "speedy-kube-double stderr\n";

/// Serves connections from `listener` until the task is dropped.
pub async fn serve(listener: TcpListener) -> io::Result<()> {
    loop {
        let (tcp, _) = listener.accept().await?;
        tokio::spawn(async move {
            if let Err(e) = connection(tcp).await {
                tracing::debug!("kube double: {e}");
            }
        });
    }
}

async fn connection(tcp: tokio::net::TcpStream) -> io::Result<()> {
    tcp.set_nodelay(true)?;
    let mut accepted: Vec<String> = EXEC_PROTOCOLS.iter().map(|s| s.to_string()).collect();
    accepted.push(PORT_FORWARD_PROTOCOL.into());
    let (io, req) = server_handshake(Box::new(tcp), &accepted).await?;
    let cfg = spdy::Config {
        flow_control: spdy::session::FlowControl::Lenient,
        ..spdy::Config::new(Role::Server, Version::V3_1)
    };
    let mux = Mux::start(io, cfg);
    if req.path.contains("portforward") {
        port_forward(mux).await
    } else {
        exec(mux, &req.path).await
    }
}

fn query(path: &str) -> HashMap<String, String> {
    path.split_once('?')
        .map(|(_, q)| q)
        .unwrap_or("")
        .split('&')
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (!k.is_empty()).then(|| (k.to_string(), v.to_string()))
        })
        .collect()
}

fn stream_type(s: &MuxStream) -> String {
    s.headers()
        .get(STREAM_TYPE)
        .map(|v| String::from_utf8_lossy(v).to_ascii_lowercase())
        .unwrap_or_default()
}

async fn exec(mut mux: Mux, path: &str) -> io::Result<()> {
    let q = query(path);
    let on = |a: &str, b: &str| {
        [a, b]
            .iter()
            .any(|k| q.get(*k).is_some_and(|v| v == "true" || v == "1"))
    };
    let want_stdin = on("stdin", "input");
    let mut wanted = vec!["error"];
    if want_stdin {
        wanted.push("stdin");
    }
    if on("stdout", "output") {
        wanted.push("stdout");
    }
    if on("stderr", "error") {
        wanted.push("stderr");
    }
    let exit: i32 = q.get("exit").and_then(|e| e.parse().ok()).unwrap_or(0);
    let mut streams: HashMap<String, MuxStream> = HashMap::new();
    while wanted.iter().any(|w| !streams.contains_key(*w)) {
        let Some(s) = mux.accept().await else {
            return Err(io::Error::other("the client went away before its streams"));
        };
        s.reply(Headers::new(), false)?;
        streams.insert(stream_type(&s), s);
    }
    let mut stdin = streams.remove("stdin");
    let stdout = streams.remove("stdout");
    let stderr = streams.remove("stderr");
    let error = streams.remove("error").expect("waited for");
    if let Some(e) = &stderr {
        e.send(bytes::Bytes::from_static(STDERR_LINE.as_bytes()))
            .await?;
    }
    if let Some(input) = stdin.as_mut() {
        while let Some(c) = input.recv().await {
            let c = c?;
            if let Some(o) = &stdout {
                o.send(c).await?;
            }
        }
    }
    for s in [&stdout, &stderr].into_iter().flatten() {
        s.finish();
    }
    let status = if exit == 0 {
        r#"{"metadata":{},"status":"Success"}"#.to_string()
    } else {
        format!(
            r#"{{"metadata":{{}},"status":"Failure","message":"command terminated with non-zero exit code: exit status {exit}","reason":"NonZeroExitCode","details":{{"causes":[{{"reason":"ExitCode","message":"{exit}"}}]}}}}"#
        )
    };
    error.send(bytes::Bytes::from(status)).await?;
    error.finish();
    mux.close().await
}

async fn port_forward(mut mux: Mux) -> io::Result<()> {
    let mut errors: HashMap<String, MuxStream> = HashMap::new();
    let mut echoes = tokio::task::JoinSet::new();
    while let Some(s) = mux.accept().await {
        s.reply(Headers::new(), false)?;
        let id = s
            .headers()
            .get(REQUEST_ID)
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default();
        match stream_type(&s).as_str() {
            "error" => {
                errors.insert(id, s);
            }
            "data" => {
                let error = errors.remove(&id);
                echoes.spawn(async move {
                    let (send, mut recv) = s.split();
                    while let Some(c) = recv.recv().await {
                        send.send(c?).await?;
                    }
                    send.finish();
                    if let Some(e) = error {
                        e.finish();
                    }
                    Ok::<(), io::Error>(())
                });
            }
            other => {
                tracing::debug!("kube double: stream type {other:?} refused");
                s.reset(spdy::RstStatus::REFUSED_STREAM);
            }
        }
    }
    while echoes.join_next().await.is_some() {}
    Ok(())
}
