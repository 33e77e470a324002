//! HTTP/3 over QUIC ([`speedy_net::h3`]): one QUIC connection per origin, every request at
//! once on its own stream. The connection is dialled by [`crate::net::dial_quic`] (the
//! QUIC handshake is the connect and TLS phases at once) and handed to
//! [`Driver::run_quic`].
//!
//! Limits: priorities go only as RFC 9218's `priority` header (`conn::h2::build`; the
//! `h3` crate has no PRIORITY_UPDATE), and `speedy serve`'s h3 side does not schedule by
//! them yet; QPACK's
//! compressed sizes are not exposed, so header bytes are reported uncompressed (name +
//! value + 32 per field, as for h2); `bytes_in`/`bytes_out` count UDP payload (QUIC
//! headers, acknowledgements and retransmissions included).

use super::{ConnCmd, ConnCounters, ConnCtx, ConnEvent, Driver, ReqId};
use speedy_net::h3::H3Client;
use speedy_net::io::BoxIo;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// HTTP/3.
#[derive(Default)]
pub struct H3;

impl Driver for H3 {
    fn name(&self) -> &'static str {
        "h3"
    }
    fn alpn(&self) -> &'static str {
        speedy_net::h3::ALPN
    }
    fn depth(&self) -> usize {
        usize::MAX
    }
    fn quic(&self) -> bool {
        true
    }
    fn run(&self, _io: BoxIo, ctx: ConnCtx) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        // Never dialled over TCP (the loader asks `quic()` first); say so if it is.
        Box::pin(ctx.fail_until_close(
            "HTTP/3 needs a QUIC connection, not a byte stream".into(),
            ConnCounters::default(),
        ))
    }
    fn run_quic(&self, conn: H3Client, ctx: ConnCtx) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(drive(conn, ctx))
    }
}

async fn drive(conn: H3Client, mut ctx: ConnCtx) {
    let hdr_raw_sent = Arc::new(AtomicU64::new(0));
    let hdr_raw_recv = Arc::new(AtomicU64::new(0));
    let mut tasks: HashMap<ReqId, tokio::task::AbortHandle> = HashMap::new();
    while let Some(cmd) = ctx.cmds.recv().await {
        match cmd {
            ConnCmd::Send(r) => {
                let id = r.id;
                let req = match super::h2::build(&r) {
                    Ok(q) => q,
                    Err(error) => {
                        ctx.emit(ConnEvent::Failed {
                            id,
                            at: Instant::now(),
                            error,
                            retry: false,
                        });
                        continue;
                    }
                };
                let raw = super::h2::request_header_bytes(&r, &req);
                hdr_raw_sent.fetch_add(raw as u64, Ordering::Relaxed);
                let (events, hr, conn) = (ctx.events.clone(), hdr_raw_recv.clone(), conn.clone());
                let h = tokio::spawn(async move {
                    let _ = events.send(ConnEvent::Sent {
                        id,
                        at: Instant::now(),
                        header_bytes: raw,
                    });
                    request(conn, req, id, events, hr).await;
                });
                tasks.insert(id, h.abort_handle());
            }
            ConnCmd::Cancel(id) => {
                if let Some(h) = tasks.remove(&id) {
                    h.abort();
                }
            }
            ConnCmd::Close => break,
            ConnCmd::Ping => {}
        }
        tasks.retain(|_, h| !h.is_finished());
    }
    for (_, h) in tasks {
        h.abort();
    }
    let (out, inn) = conn.udp_bytes();
    let counters = ConnCounters {
        bytes_out: out,
        bytes_in: inn,
        header_bytes_raw_sent: hdr_raw_sent.load(Ordering::Relaxed),
        header_bytes_raw_received: hdr_raw_recv.load(Ordering::Relaxed),
        ..Default::default()
    };
    ctx.closed(counters);
    conn.close();
}

/// One request: its response head, then its body as it arrives.
async fn request(
    conn: H3Client,
    req: http::Request<()>,
    id: ReqId,
    events: tokio::sync::mpsc::UnboundedSender<ConnEvent>,
    hdr_raw: Arc<AtomicU64>,
) {
    let fail = |error: String| ConnEvent::Failed {
        id,
        at: Instant::now(),
        error,
        retry: false,
    };
    let (parts, mut body, _) = match conn.request(req, bytes::Bytes::new()).await {
        Ok(r) => r,
        Err(e) => {
            let _ = events.send(fail(e.to_string()));
            return;
        }
    };
    let (headers, raw) = super::h2::response_head(&parts);
    hdr_raw.fetch_add(raw as u64, Ordering::Relaxed);
    let _ = events.send(ConnEvent::Head {
        id,
        first_byte: Instant::now(),
        status: parts.status.as_u16(),
        headers,
        header_bytes: raw,
    });
    while let Some(c) = body.chunk().await {
        match c {
            Ok(data) => {
                let _ = events.send(ConnEvent::Data {
                    id,
                    at: Instant::now(),
                    data,
                });
            }
            Err(e) => {
                let _ = events.send(fail(e.to_string()));
                return;
            }
        }
    }
    let _ = events.send(ConnEvent::End {
        id,
        at: Instant::now(),
    });
}
