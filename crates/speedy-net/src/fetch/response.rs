//! One response of a fetch, start to end: its head reported, its body read to the end,
//! hashed (SHA-256) and written where it goes (`-o`, `--output-dir` or nowhere) as it
//! arrives, never held whole, with a progress line per piece, and its [`FetchLine`].

use super::{Ctx, Out, Report};
use crate::client::{ClientError, ResponseStream};
use crate::fetch_record::{FetchLine, ProgressLine};
use crate::Body;
use sha2::{Digest, Sha256};
use spdy::url::Url;
use std::sync::Arc;
use std::time::Instant;

/// What a response is reported with.
pub(super) struct Job {
    /// The URL (a pushed stream's own).
    pub(super) url: String,
    /// Its position among the URLs (from 0); `None` for pushed streams.
    pub(super) pos: Option<usize>,
    /// Where its body goes (`-o`), if not to the output directory or nowhere.
    pub(super) out: Option<Out>,
    /// When it was requested.
    pub(super) t0: Instant,
    /// The protocol it came over.
    pub(super) protocol: &'static str,
    /// The server pushed it.
    pub(super) pushed: bool,
}

/// Reports a request's response (or failure) and reads its body to the end; whether the
/// whole response came.
pub(super) async fn finish(
    job: Job,
    r: Result<ResponseStream, ClientError>,
    ctx: Arc<Ctx>,
) -> bool {
    let Job {
        url,
        pos,
        out,
        t0,
        protocol,
        pushed,
    } = job;
    let resp = match r {
        Ok(r) => r,
        Err(e) => {
            ctx.line(FetchLine {
                url,
                protocol: Some(protocol.to_string()),
                pushed: Some(pushed),
                error: Some(e.to_string()),
                ..Default::default()
            });
            return false;
        }
    };
    let status = resp.status;
    (ctx.sink)(Report::Head(protocol, status, &resp.headers));
    let body: Body = resp.body;
    // Streamed: hashed and written as it arrives, never held whole.
    let out = out.or_else(|| {
        ctx.out_dir
            .as_ref()
            .map(|dir| Out::File(dir.join(file_name(&url))))
    });
    let report = |n: u64| {
        if let Some(pos) = pos {
            ctx.progress(ProgressLine {
                bytes: Some(n),
                ..ProgressLine::at(pos + 1)
            });
        }
    };
    match drain(body, out.as_ref(), report).await {
        Ok((n, sha)) => {
            let ms = t0.elapsed().as_secs_f64() * 1000.0;
            ctx.line(FetchLine {
                url,
                status: Some(status),
                protocol: Some(protocol.to_string()),
                bytes: Some(n),
                sha256: Some(sha),
                pushed: Some(pushed),
                elapsed_ms: Some((ms * 1000.0).round() / 1000.0),
                error: None,
                ..Default::default()
            });
            if !(200..300).contains(&status) {
                ctx.not_2xx
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
            true
        }
        Err(e) => {
            ctx.line(FetchLine {
                url,
                status: Some(status),
                protocol: Some(protocol.to_string()),
                pushed: Some(pushed),
                error: Some(e),
                ..Default::default()
            });
            false
        }
    }
}

/// The file name a URL's body is saved under in the output directory: its path without
/// the query, `/` turned to `_`, `index.html` for the root.
fn file_name(url: &str) -> String {
    let path = Url::parse(url).map_or_else(|| "/".to_string(), |u| u.path);
    let name = path
        .split('?')
        .next()
        .unwrap_or("")
        .trim_start_matches('/')
        .replace('/', "_");
    if name.is_empty() || name.starts_with('.') {
        format!("index{name}.html")
    } else {
        name
    }
}

/// Reads a body to its end, hashing it and writing it where `save` says; returns its
/// length and SHA-256 (hex).
async fn drain(
    mut body: Body,
    save: Option<&Out>,
    progress: impl Fn(u64),
) -> Result<(u64, String), String> {
    use tokio::io::{AsyncWrite, AsyncWriteExt};
    let name = |o: &Out| match o {
        Out::Stdout => "stdout".to_string(),
        Out::File(p) => p.display().to_string(),
    };
    let mut sink: Option<std::pin::Pin<Box<dyn AsyncWrite + Send>>> = match save {
        Some(Out::Stdout) => Some(Box::pin(tokio::io::stdout())),
        Some(Out::File(p)) => Some(Box::pin(
            tokio::fs::File::create(p)
                .await
                .map_err(|e| format!("writing {}: {e}", p.display()))?,
        )),
        None => None,
    };
    let mut sha = Sha256::new();
    let mut n = 0u64;
    while let Some(c) = body.chunk().await {
        let c = c.map_err(|e| e.to_string())?;
        n += c.len() as u64;
        progress(n);
        sha.update(&c);
        if let (Some(f), Some(o)) = (&mut sink, save) {
            f.write_all(&c)
                .await
                .map_err(|e| format!("writing {}: {e}", name(o)))?;
        }
    }
    if let (Some(f), Some(o)) = (&mut sink, save) {
        f.flush()
            .await
            .map_err(|e| format!("writing {}: {e}", name(o)))?;
    }
    Ok((n, hex::encode(sha.finalize())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_saved_files_after_the_path() {
        assert_eq!(file_name("http://a/"), "index.html");
        assert_eq!(file_name("http://a/x/y.css?v=1"), "x_y.css");
        assert_eq!(file_name("http://a/.hidden"), "index.hidden.html");
    }
}
