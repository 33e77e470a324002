//! HTTP/1.1 over one connection: persistent, one request in flight (or up to the
//! pipelining depth, responses read in order), `Content-Length`, chunked and
//! close-delimited bodies. The loader's own client, so that every phase (written, first
//! byte, last byte) and every header byte is measured where it happens.

use super::{ConnCmd, ConnCounters, ConnCtx, ConnEvent, Driver, ReqId, WireRequest};
use bytes::BytesMut;
use speedy_net::http1::response::{parse_head, BodyDecoder, Piece};
use speedy_net::io::BoxIo;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// The largest response head read before giving up on it (a server that never ends its
/// head cannot make the loader buffer more).
pub(crate) use speedy_net::http1::response::MAX_HEAD;

/// HTTP/1.1 with a pipelining depth (1 = no pipelining, the browsers' default).
pub struct Http1 {
    /// Requests written ahead of their responses, at least 1.
    pub pipeline: usize,
}

impl Driver for Http1 {
    fn name(&self) -> &'static str {
        "HTTP/1.1"
    }
    fn alpn(&self) -> &'static str {
        "http/1.1"
    }
    fn depth(&self) -> usize {
        self.pipeline.max(1)
    }
    fn run(&self, io: BoxIo, ctx: ConnCtx) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(run(io, ctx))
    }
}

/// The request head as written on the wire.
pub fn request_head(r: &WireRequest) -> Vec<u8> {
    let mut h = Vec::with_capacity(256);
    h.extend_from_slice(r.method.as_bytes());
    h.push(b' ');
    if r.absolute_form {
        h.extend_from_slice(r.scheme.as_bytes());
        h.extend_from_slice(b"://");
        h.extend_from_slice(r.authority.as_bytes());
    }
    h.extend_from_slice(r.path.as_bytes());
    h.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    h.extend_from_slice(r.authority.as_bytes());
    h.extend_from_slice(b"\r\n");
    let mut has_conn = false;
    for (n, v) in &r.headers {
        if n.starts_with(':') || n.eq_ignore_ascii_case("host") {
            continue;
        }
        has_conn |= n.eq_ignore_ascii_case("connection");
        h.extend_from_slice(n.as_bytes());
        h.extend_from_slice(b": ");
        h.extend_from_slice(v.as_bytes());
        h.extend_from_slice(b"\r\n");
    }
    if !has_conn {
        h.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    h.extend_from_slice(b"\r\n");
    h
}

async fn run(io: BoxIo, ctx: ConnCtx) {
    let ConnCtx {
        conn,
        cmds,
        events,
        ids,
        fd,
    } = ctx;
    let ctx = ConnCtx {
        conn,
        cmds: mpsc::unbounded_channel().1,
        events: events.clone(),
        ids,
        fd,
    };
    let (mut rd, wr) = tokio::io::split(io);
    let (pend_tx, mut pend_rx) = mpsc::unbounded_channel::<(ReqId, bool)>();
    let (close_tx, mut close_rx) = oneshot::channel::<()>();
    let out_bytes = Arc::new(AtomicU64::new(0));
    let writer = tokio::spawn(write_loop(
        wr,
        cmds,
        events,
        pend_tx,
        close_tx,
        out_bytes.clone(),
    ));
    let mut buf = BytesMut::with_capacity(32 * 1024);
    let mut c = ConnCounters {
        wire_headers: true,
        ..ConnCounters::default()
    };
    loop {
        let next = tokio::select! {
            biased;
            p = pend_rx.recv() => p,
            _ = &mut close_rx => None,
        };
        let Some((id, head_only)) = next else { break };
        match read_response(&mut rd, &mut buf, id, head_only, &ctx, &mut c).await {
            Ok(true) => {}
            Ok(false) => break,
            Err((error, retry)) => {
                ctx.emit(ConnEvent::Failed {
                    id,
                    at: Instant::now(),
                    error,
                    retry,
                });
                break;
            }
        }
    }
    // Requests written but never answered can go elsewhere.
    pend_rx.close();
    while let Ok((id, _)) = pend_rx.try_recv() {
        ctx.emit(ConnEvent::Failed {
            id,
            at: Instant::now(),
            error: "connection closed before the response".into(),
            retry: true,
        });
    }
    c.bytes_out = out_bytes.load(Ordering::Relaxed);
    c.header_bytes_raw_sent = c.bytes_out;
    c.header_bytes_sent = c.bytes_out;
    ctx.closed(c);
    writer.abort();
    if let Ok(Some(mut wr)) = writer.await {
        let _ = wr.shutdown().await;
    }
}

type Wr = tokio::io::WriteHalf<BoxIo>;

async fn write_loop(
    mut wr: Wr,
    mut cmds: mpsc::UnboundedReceiver<ConnCmd>,
    events: mpsc::UnboundedSender<ConnEvent>,
    pend: mpsc::UnboundedSender<(ReqId, bool)>,
    close: oneshot::Sender<()>,
    out_bytes: Arc<AtomicU64>,
) -> Option<Wr> {
    while let Some(cmd) = cmds.recv().await {
        match cmd {
            ConnCmd::Send(r) => {
                let head = request_head(&r);
                if let Err(e) = wr.write_all(&head).await {
                    let _ = events.send(ConnEvent::Failed {
                        id: r.id,
                        at: Instant::now(),
                        error: format!("writing the request: {e}"),
                        retry: true,
                    });
                    let _ = close.send(());
                    return None;
                }
                out_bytes.fetch_add(head.len() as u64, Ordering::Relaxed);
                let _ = events.send(ConnEvent::Sent {
                    id: r.id,
                    at: Instant::now(),
                    header_bytes: head.len() as i64,
                });
                if pend.send((r.id, r.method == "HEAD")).is_err() {
                    return None;
                }
            }
            // A request on the wire cannot be taken back in HTTP/1.1.
            ConnCmd::Cancel(_) | ConnCmd::Ping => {}
            ConnCmd::Close => break,
        }
    }
    let _ = close.send(());
    Some(wr)
}

type Rd = tokio::io::ReadHalf<BoxIo>;

async fn fill(rd: &mut Rd, buf: &mut BytesMut, c: &mut ConnCounters) -> std::io::Result<usize> {
    if buf.capacity() - buf.len() < 8192 {
        buf.reserve(64 * 1024);
    }
    let n = rd.read_buf(buf).await?;
    c.bytes_in += n as u64;
    Ok(n)
}

/// Reads one response; `Ok(keep_alive)`, or `Err((why, retry))`.
async fn read_response(
    rd: &mut Rd,
    buf: &mut BytesMut,
    id: ReqId,
    head_only: bool,
    ctx: &ConnCtx,
    c: &mut ConnCounters,
) -> Result<bool, (String, bool)> {
    let mut first_byte = (!buf.is_empty()).then(Instant::now);
    // Head (skipping interim 1xx responses).
    let head = loop {
        match parse_head(buf, head_only) {
            Ok(Some(h)) => {
                c.header_bytes_raw_received += h.wire_len as u64;
                c.header_bytes_received += h.wire_len as u64;
                if !h.is_interim() {
                    break h;
                }
                continue;
            }
            Ok(None) => {}
            Err(e) => return Err((e.to_string(), false)),
        }
        match fill(rd, buf, c).await {
            Ok(0) => {
                return Err((
                    "connection closed before the response".into(),
                    first_byte.is_none(),
                ))
            }
            Ok(_) => {
                first_byte.get_or_insert_with(Instant::now);
            }
            Err(e) => return Err((format!("reading: {e}"), first_byte.is_none())),
        }
    };
    ctx.emit(ConnEvent::Head {
        id,
        first_byte: first_byte.unwrap_or_else(Instant::now),
        status: head.status,
        headers: head
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), String::from_utf8_lossy(v).into_owned()))
            .collect(),
        header_bytes: head.wire_len as i64,
    });
    let mut body = BodyDecoder::new(head.framing);
    loop {
        match body.decode(buf) {
            Ok(Some(Piece::Data(data))) => ctx.emit(ConnEvent::Data {
                id,
                at: Instant::now(),
                data,
            }),
            Ok(Some(Piece::End)) => break,
            Ok(None) => match fill(rd, buf, c).await {
                Ok(0) => {
                    body.eof().map_err(|e| (e.to_string(), false))?;
                    break;
                }
                Ok(_) => {}
                Err(e) => return Err((format!("reading the body: {e}"), false)),
            },
            Err(e) => return Err((e.to_string(), false)),
        }
    }
    ctx.emit(ConnEvent::End {
        id,
        at: Instant::now(),
    });
    Ok(head.keep_alive())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(id: ReqId, path: &str) -> WireRequest {
        WireRequest {
            id,
            method: "GET".into(),
            scheme: "http".into(),
            authority: "a.example".into(),
            path: path.into(),
            headers: vec![("accept".into(), "*/*".into())],
            priority: 0,
            absolute_form: false,
        }
    }

    /// Runs the driver against `server_bytes` (written by a fake server once the
    /// requests arrive) and returns the events.
    async fn exchange(
        reqs: Vec<WireRequest>,
        depth: usize,
        server_bytes: Vec<u8>,
    ) -> Vec<ConnEvent> {
        let (client, mut server) = tokio::io::duplex(1 << 20);
        let (ev_tx, mut ev_rx) = mpsc::unbounded_channel();
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let ctx = ConnCtx {
            conn: 1,
            cmds: cmd_rx,
            events: ev_tx,
            ids: Arc::new(AtomicU64::new(100)),
            fd: None,
        };
        let n = reqs.len();
        let task = tokio::spawn(Http1 { pipeline: depth }.run(Box::new(client), ctx));
        for r in reqs {
            cmd_tx.send(ConnCmd::Send(r)).unwrap();
        }
        let mut got = Vec::new();
        let mut seen = 0;
        let mut tmp = [0u8; 4096];
        while seen < n {
            let k = server.read(&mut tmp).await.unwrap();
            seen += tmp[..k].windows(4).filter(|w| w == b"\r\n\r\n").count();
        }
        server.write_all(&server_bytes).await.unwrap();
        let mut ends = 0;
        while ends < n {
            let ev = ev_rx.recv().await.unwrap();
            if matches!(ev, ConnEvent::End { .. } | ConnEvent::Failed { .. }) {
                ends += 1;
            }
            got.push(ev);
        }
        let _ = cmd_tx.send(ConnCmd::Close);
        drop(server);
        task.await.unwrap();
        while let Ok(ev) = ev_rx.try_recv() {
            got.push(ev);
        }
        got
    }

    fn body_of(evs: &[ConnEvent], id: ReqId) -> Vec<u8> {
        let mut b = Vec::new();
        for e in evs {
            if let ConnEvent::Data { id: i, data, .. } = e {
                if *i == id {
                    b.extend_from_slice(data);
                }
            }
        }
        b
    }

    #[tokio::test]
    async fn reads_length_and_chunked_bodies_pipelined() {
        let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n".to_vec();
        let evs = exchange(vec![req(1, "/a"), req(2, "/b")], 2, resp).await;
        assert_eq!(body_of(&evs, 1), b"hello");
        assert_eq!(body_of(&evs, 2), b"abcde");
        let heads: Vec<u16> = evs
            .iter()
            .filter_map(|e| match e {
                ConnEvent::Head { status, .. } => Some(*status),
                _ => None,
            })
            .collect();
        assert_eq!(heads, [200, 404]);
        assert!(matches!(evs.last(), Some(ConnEvent::Closed { .. })));
    }

    #[tokio::test]
    async fn unanswered_pipelined_requests_are_retryable() {
        let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".to_vec();
        let evs = exchange(vec![req(1, "/a"), req(2, "/b")], 2, resp).await;
        assert_eq!(body_of(&evs, 1), b"ok");
        assert!(evs.iter().any(|e| matches!(
            e,
            ConnEvent::Failed {
                id: 2,
                retry: true,
                ..
            }
        )));
    }

    #[test]
    fn writes_a_request_head() {
        let h = request_head(&req(1, "/x?y"));
        assert_eq!(
            String::from_utf8(h).unwrap(),
            "GET /x?y HTTP/1.1\r\nHost: a.example\r\naccept: */*\r\nConnection: keep-alive\r\n\r\n"
        );
    }
}
