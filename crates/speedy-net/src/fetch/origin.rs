//! One origin's share of a fetch: one [`Client`] connection, its requests started in URL
//! order (or at their `--start` times) at most `concurrency` at a time, pushed streams
//! read as they arrive, and the schedule's reprioritizations each timed with a PING.
//! `--protocol udp` takes [`fetch_udp`] instead: one datagram each way per URL.

use super::response::{finish, Job};
use super::{Ctx, Origin, Report, Target};
use crate::client::{Client, ClientConfig, ClientRequest, ResponseStream};
use crate::fetch_record::{FetchLine, ProgressEvent, ProgressLine};
use crate::Body;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

/// What every request task of one connection shares.
#[derive(Clone)]
struct Conn {
    client: Arc<Client>,
    /// `concurrency` permits: requests in flight at once.
    sem: Arc<Semaphore>,
    /// Stream ids of the responses so far, by URL position, for the reprioritizations.
    ids: Arc<watch::Sender<HashMap<usize, u32>>>,
    /// When the connection was up.
    start: Instant,
    protocol: &'static str,
    ctx: Arc<Ctx>,
}

/// When a request goes out.
enum Slot {
    /// At once, in URL order: with its permit, once the request before it is queued
    /// (`wait`), saying when its own is (`done`).
    Turn {
        permit: OwnedSemaphorePermit,
        wait: Option<oneshot::Receiver<()>>,
        done: oneshot::Sender<()>,
    },
    /// `--start`: this long after the connection is up.
    At(Duration),
}

/// Fetches one origin's URLs over one connection; whether all got whole responses.
pub(super) async fn fetch_origin(
    origin: Origin,
    cfg: &ClientConfig,
    concurrency: usize,
    ctx: &Arc<Ctx>,
) -> bool {
    let Origin {
        scheme,
        host,
        port,
        targets: list,
    } = origin;
    let mut client = match Client::connect(&scheme, &host, port, cfg).await {
        Ok(c) => c,
        Err(e) => {
            for t in &list {
                ctx.line(FetchLine {
                    url: t.url.clone(),
                    error: Some(e.to_string()),
                    ..Default::default()
                });
            }
            return false;
        }
    };
    let protocol = client.protocol();
    if let Some(p) = client.stream_protocol() {
        (ctx.sink)(Report::Upgraded(format!("{scheme}://{host}:{port}"), p));
    }
    let start = Instant::now();
    let _ = ctx.up.set(start);
    // Pushed streams are read as they arrive, so they never stall flow control.
    let (done_tx, done_rx) = watch::channel(false);
    let push_task = client
        .take_pushes()
        .map(|rx| tokio::spawn(read_pushes(rx, done_rx, start, protocol, ctx.clone())));
    let (ids_tx, ids_rx) = watch::channel(HashMap::<usize, u32>::new());
    let conn = Conn {
        client: Arc::new(client),
        sem: Arc::new(Semaphore::new(concurrency)),
        ids: Arc::new(ids_tx),
        start,
        protocol,
        ctx: ctx.clone(),
    };
    let (first_ok, mut tasks) = start_requests(list, &conn).await;
    for &(at, pos, priority) in &ctx.schedule.changes {
        let change = reprioritize(conn.clone(), ids_rx.clone(), at, pos, priority);
        tasks.push(tokio::spawn(change));
    }
    drop(ids_rx);
    let mut ok = first_ok;
    for t in tasks {
        ok &= t.await.unwrap_or(false);
    }
    let _ = done_tx.send(true);
    if let Some(p) = push_task {
        ok &= p.await.unwrap_or(false);
    }
    ok
}

/// Reads pushed responses until the requests are done; whether all were whole.
async fn read_pushes(
    mut rx: mpsc::UnboundedReceiver<ResponseStream>,
    mut done_rx: watch::Receiver<bool>,
    start: Instant,
    protocol: &'static str,
    ctx: Arc<Ctx>,
) -> bool {
    let spawn = |p: ResponseStream| {
        let job = Job {
            url: p.pushed_url.clone().unwrap_or_default(),
            pos: None,
            out: None,
            t0: start,
            protocol,
            pushed: true,
        };
        tokio::spawn(finish(job, Ok(p), ctx.clone()))
    };
    let mut tasks = Vec::new();
    loop {
        tokio::select! {
            p = rx.recv() => match p {
                Some(p) => tasks.push(spawn(p)),
                None => break,
            },
            _ = done_rx.changed() => {
                while let Ok(p) = rx.try_recv() {
                    tasks.push(spawn(p));
                }
                break;
            }
        }
    }
    let mut ok = true;
    for t in tasks {
        ok &= t.await.unwrap_or(false);
    }
    ok
}

/// Starts a task per URL; returns whether the first got a whole response if the others
/// waited for it (`--after-first`), and the tasks.
async fn start_requests(list: Vec<Target>, conn: &Conn) -> (bool, Vec<JoinHandle<bool>>) {
    let mut tasks: Vec<JoinHandle<bool>> = Vec::new();
    let mut first_ok = true;
    // Unscheduled requests are started in URL order: each task polls its request once
    // (which queues it: a SPDY stream opened, a pipelined request written in turn) only
    // after the one before it has; the runtime's threads would otherwise race.
    let mut turn: Option<oneshot::Receiver<()>> = None;
    for (pos, t) in list.into_iter().enumerate() {
        if pos == 1 && conn.ctx.after_first {
            if let Some(first) = tasks.pop() {
                first_ok = first.await.unwrap_or(false);
            }
        }
        let slot = match conn.ctx.schedule.start.get(&pos).copied() {
            // Unscheduled requests take their turn in the order given, as before.
            None => {
                let permit = conn.sem.clone().acquire_owned().await;
                let (done, wait) = oneshot::channel::<()>();
                Slot::Turn {
                    permit: permit.expect("semaphore open"),
                    wait: turn.replace(wait),
                    done,
                }
            }
            Some(at) => Slot::At(at),
        };
        tasks.push(tokio::spawn(request(conn.clone(), pos, t, slot)));
    }
    (first_ok, tasks)
}

/// Sends the request for the URL in position `pos` when its slot says, then reads its
/// response; whether it was whole.
async fn request(conn: Conn, pos: usize, t: Target, slot: Slot) -> bool {
    let (permit, my_turn) = match slot {
        Slot::Turn { permit, wait, done } => (permit, Some((wait, done))),
        Slot::At(at) => {
            tokio::time::sleep_until((conn.start + at).into()).await;
            let permit = conn.sem.clone().acquire_owned().await;
            (permit.expect("semaphore open"), None)
        }
    };
    let ctx = conn.ctx;
    let t0 = Instant::now();
    let mut req = ClientRequest::get(&t.path);
    req.priority = ctx
        .schedule
        .priority
        .get(&pos)
        .copied()
        .unwrap_or(ctx.priority);
    req.headers = ctx.extra.clone();
    req.method = ctx.method.clone();
    req.body = ctx.body.clone();
    let r = match my_turn {
        None => conn.client.request(req).await,
        Some((wait, done)) => {
            if let Some(w) = wait {
                let _ = w.await;
            }
            let mut fut = std::pin::pin!(conn.client.request(req));
            let first = std::future::poll_fn(|cx| {
                std::task::Poll::Ready(std::future::Future::poll(fut.as_mut(), cx))
            })
            .await;
            let _ = done.send(());
            match first {
                std::task::Poll::Ready(r) => r,
                std::task::Poll::Pending => fut.await,
            }
        }
    };
    if let Some(id) = r.as_ref().ok().and_then(|r| r.stream_id) {
        conn.ids.send_modify(|m| {
            m.insert(pos, id);
        });
    }
    let job = Job {
        url: t.url,
        pos: Some(pos),
        out: t.out,
        t0,
        protocol: conn.protocol,
        pushed: false,
    };
    let ok = finish(job, r, ctx).await;
    drop(permit);
    ok
}

/// At `at` after the connection is up, once the URL in position `pos` has a stream, asks
/// the server to send it at `priority` and times a PING; whether the request was sent.
async fn reprioritize(
    conn: Conn,
    mut ids: watch::Receiver<HashMap<usize, u32>>,
    at: Duration,
    pos: usize,
    priority: u8,
) -> bool {
    tokio::time::sleep_until((conn.start + at).into()).await;
    let Ok(id) = ids
        .wait_for(|m| m.contains_key(&pos))
        .await
        .map(|m| m[&pos])
    else {
        return false;
    };
    let ctx = &conn.ctx;
    if let Err(e) = conn.client.reprioritize(id, priority) {
        (ctx.sink)(Report::ReprioritizeFailed(e));
        return false;
    }
    ctx.progress(ProgressLine {
        event: Some(ProgressEvent::Reprioritize),
        priority: Some(priority),
        ..ProgressLine::at(pos + 1)
    });
    if let Some(rtt) = conn.client.ping().await {
        let ms = (rtt.as_secs_f64() * 1e6).round() / 1e3;
        ctx.progress(ProgressLine {
            event: Some(ProgressEvent::Pong),
            rtt_ms: Some(ms),
            ..ProgressLine::at(pos + 1)
        });
    }
    true
}

/// `--protocol udp`: each URL as one datagram each way ([`crate::transport::udp_get`]),
/// one at a time; whether all got their bodies.
pub(super) async fn fetch_udp(origin: Origin, cfg: &ClientConfig, ctx: &Arc<Ctx>) -> bool {
    let timeout = cfg.read_timeout.unwrap_or(Duration::from_secs(30));
    // Once per origin, as the other protocols connect once.
    let addr = crate::client::resolve(&origin.host, origin.port, cfg.connect_to).await;
    let mut ok = true;
    for (pos, t) in origin.targets.into_iter().enumerate() {
        let t0 = Instant::now();
        let r = match &addr {
            Ok(addr) => crate::transport::udp_get::get(*addr, &t.path, timeout)
                .await
                .map(|b| ResponseStream {
                    status: 200,
                    headers: spdy::Headers::new(),
                    protocol: "udp",
                    pushed_url: None,
                    stream_id: None,
                    body: Body::full(b),
                }),
            Err(e) => Err(e.clone()),
        };
        let job = Job {
            url: t.url,
            pos: Some(pos),
            out: t.out,
            t0,
            protocol: "udp",
            pushed: false,
        };
        ok &= finish(job, r, ctx.clone()).await;
    }
    ok
}
