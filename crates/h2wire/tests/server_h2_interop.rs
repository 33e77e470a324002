//! The sans-IO server against the independent `h2` crate's client, over an in-memory
//! duplex pipe: the test's loop reads bytes, feeds `recv`, answers events, and writes
//! what `poll_transmit` gives.

use bytes::Bytes;
use h2wire::frame::StreamId;
use h2wire::server::{Config, Event, ServerConnection};
use h2wire::ErrorCode;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

/// What the application does with each event; it may use the connection's commands.
type App = Box<dyn FnMut(&mut ServerConnection, Event) + Send>;

/// Runs the server side until the connection is done or the client goes away. Returns
/// every event seen, for the test to check.
async fn serve(io: DuplexStream, cfg: Config, mut app: App) -> Vec<String> {
    let mut conn = ServerConnection::new(cfg);
    let (mut rd, mut wr) = tokio::io::split(io);
    let mut buf = vec![0u8; 64 << 10];
    let mut out = Vec::with_capacity(64 << 10);
    let mut log = Vec::new();
    loop {
        loop {
            out.clear();
            if conn.poll_transmit(&mut out) == 0 {
                break;
            }
            if wr.write_all(&out).await.is_err() {
                return log;
            }
        }
        if conn.is_done() {
            let _ = wr.shutdown().await;
            return log;
        }
        let n = match rd.read(&mut buf).await {
            Ok(0) | Err(_) => return log,
            Ok(n) => n,
        };
        conn.recv(&buf[..n]);
        while let Some(ev) = conn.poll_event() {
            log.push(format!("{ev:?}"));
            app(&mut conn, ev);
        }
    }
}

/// An h2 client connection over a pipe to `serve` with `app`.
async fn connect(
    cfg: Config,
    app: App,
    push: bool,
) -> (
    h2::client::SendRequest<Bytes>,
    tokio::task::JoinHandle<Vec<String>>,
) {
    let (a, b) = tokio::io::duplex(64 << 10);
    let server = tokio::spawn(serve(b, cfg, app));
    let (client, conn) = h2::client::Builder::new()
        .enable_push(push)
        .handshake::<_, Bytes>(a)
        .await
        .expect("handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    (client, server)
}

fn get(path: &str) -> http::Request<()> {
    http::Request::get(format!("https://example.com{path}"))
        .body(())
        .unwrap()
}

/// Reads a whole body, releasing capacity as it goes.
async fn body(mut b: h2::RecvStream) -> Result<Vec<u8>, h2::Error> {
    let mut all = Vec::new();
    while let Some(chunk) = b.data().await {
        let chunk = chunk?;
        b.flow_control().release_capacity(chunk.len()).unwrap();
        all.extend_from_slice(&chunk);
    }
    Ok(all)
}

/// The bytes `n` of a test body: a pattern that shows misplaced data.
fn pattern(n: usize) -> Bytes {
    (0..n).map(|i| (i % 251) as u8).collect::<Vec<u8>>().into()
}

/// An app answering every request with `200` and a body chosen from the path
/// (`/size/N` gives N pattern bytes, anything else "hello world"); request bodies are
/// counted and their length returned as the body instead.
fn simple_app() -> App {
    let mut posted: HashMap<StreamId, usize> = HashMap::new();
    Box::new(move |conn, ev| match ev {
        Event::Request {
            stream,
            head,
            end_stream,
        } => {
            if !end_stream {
                posted.insert(stream, 0);
                return;
            }
            let path = std::str::from_utf8(head.path().unwrap()).unwrap();
            let body = match path.strip_prefix("/size/") {
                Some(n) => pattern(n.parse().unwrap()),
                None => Bytes::from_static(b"hello world"),
            };
            conn.send_response(stream, 200, &[("content-type", "text/plain")], false)
                .unwrap();
            conn.send_data(stream, body, true).unwrap();
        }
        Event::Data {
            stream,
            data,
            end_stream,
        } => {
            conn.release_capacity(stream, data.len());
            let n = posted.get_mut(&stream).unwrap();
            *n += data.len();
            if end_stream {
                let body = n.to_string();
                conn.send_response(stream, 200, &[] as &[(&str, &str)], false)
                    .unwrap();
                conn.send_data(stream, body.into(), true).unwrap();
            }
        }
        _ => {}
    })
}

#[tokio::test]
async fn get_with_a_small_body() {
    let (mut client, _server) = connect(Config::default(), simple_app(), false).await;
    let (resp, _) = client.send_request(get("/hello"), true).unwrap();
    let resp = resp.await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/plain");
    assert_eq!(body(resp.into_body()).await.unwrap(), b"hello world");
}

#[tokio::test]
async fn one_mib_response_across_window_updates() {
    let (mut client, _server) = connect(Config::default(), simple_app(), false).await;
    let (resp, _) = client.send_request(get("/size/1048576"), true).unwrap();
    let resp = resp.await.unwrap();
    let got = body(resp.into_body()).await.unwrap();
    assert_eq!(got.len(), 1 << 20);
    assert!(got == pattern(1 << 20));
}

#[tokio::test]
async fn three_mib_post_needs_released_capacity() {
    let (mut client, _server) = connect(Config::default(), simple_app(), false).await;
    let req = http::Request::post("https://example.com/upload")
        .body(())
        .unwrap();
    let (resp, mut send) = client.send_request(req, false).unwrap();
    send.send_data(pattern(3 << 20), true).unwrap();
    let resp = resp.await.unwrap();
    assert_eq!(body(resp.into_body()).await.unwrap(), b"3145728");
}

#[tokio::test]
async fn a_hundred_concurrent_streams() {
    // Requests are held until all 100 are open at once, then answered.
    let mut held = Vec::new();
    let max_open = Arc::new(Mutex::new(0));
    let seen = max_open.clone();
    let app: App = Box::new(move |conn, ev| {
        if let Event::Request { stream, head, .. } = ev {
            held.push((stream, head));
            let mut m = seen.lock().unwrap();
            *m = (*m).max(conn.open_streams());
            if held.len() == 100 {
                for (stream, head) in held.drain(..) {
                    let path = std::str::from_utf8(head.path().unwrap()).unwrap();
                    let n: usize = path.strip_prefix("/size/").unwrap().parse().unwrap();
                    conn.send_response(stream, 200, &[] as &[(&str, &str)], false)
                        .unwrap();
                    conn.send_data(stream, pattern(n), true).unwrap();
                }
            }
        }
    });
    let (client, _server) = connect(Config::default(), app, false).await;
    let mut tasks = Vec::new();
    for i in 0..100 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let mut client = client.ready().await.unwrap();
            let (resp, _) = client
                .send_request(get(&format!("/size/{}", 1000 + i * 100)), true)
                .unwrap();
            let resp = resp.await.unwrap();
            body(resp.into_body()).await.unwrap().len()
        }));
    }
    for (i, t) in tasks.into_iter().enumerate() {
        assert_eq!(t.await.unwrap(), 1000 + i * 100);
    }
    assert_eq!(*max_open.lock().unwrap(), 100);
}

#[tokio::test]
async fn client_reset_mid_response() {
    let resets = Arc::new(Mutex::new(Vec::new()));
    let seen = resets.clone();
    let mut inner = simple_app();
    let app: App = Box::new(move |conn, ev| {
        if let Event::Reset {
            stream,
            code,
            remote,
        } = &ev
        {
            seen.lock().unwrap().push((*stream, *code, *remote));
        }
        inner(conn, ev)
    });
    let (mut client, _server) = connect(Config::default(), app, false).await;
    let (resp, _) = client.send_request(get("/size/4194304"), true).unwrap();
    let resp = resp.await.unwrap();
    let mut b = resp.into_body();
    let first = b.data().await.unwrap().unwrap();
    assert!(!first.is_empty());
    drop(b); // h2 sends RST_STREAM CANCEL.
             // The connection goes on, and the server has seen the reset by then.
    let (resp, _) = client.send_request(get("/after"), true).unwrap();
    let resp = resp.await.unwrap();
    assert_eq!(body(resp.into_body()).await.unwrap(), b"hello world");
    assert_eq!(
        resets.lock().unwrap().as_slice(),
        &[(StreamId(1), ErrorCode::CANCEL, true)]
    );
}

#[tokio::test]
async fn pushed_resource_reaches_the_client() {
    let app: App = Box::new(|conn, ev| {
        if let Event::Request { stream, .. } = ev {
            let pushed = conn
                .push(
                    stream,
                    &[
                        (":method", "GET"),
                        (":scheme", "https"),
                        (":authority", "example.com"),
                        (":path", "/style.css"),
                    ],
                )
                .unwrap();
            conn.send_response(stream, 200, &[] as &[(&str, &str)], false)
                .unwrap();
            conn.send_data(stream, Bytes::from_static(b"<html>"), true)
                .unwrap();
            conn.send_response(pushed, 200, &[("content-type", "text/css")], false)
                .unwrap();
            conn.send_data(pushed, Bytes::from_static(b"body{}"), true)
                .unwrap();
        }
    });
    let (mut client, _server) = connect(Config::default(), app, true).await;
    let (mut resp, _) = client.send_request(get("/"), true).unwrap();
    let mut promises = resp.push_promises();
    let resp = resp.await.unwrap();
    assert_eq!(body(resp.into_body()).await.unwrap(), b"<html>");
    let promise = promises.push_promise().await.unwrap().unwrap();
    let (req, pushed) = promise.into_parts();
    assert_eq!(req.uri().path(), "/style.css");
    let pushed = pushed.await.unwrap();
    assert_eq!(pushed.headers()["content-type"], "text/css");
    assert_eq!(body(pushed.into_body()).await.unwrap(), b"body{}");
}

#[tokio::test]
async fn graceful_shutdown_mid_flight() {
    // The third request triggers the shutdown; all three are answered afterwards.
    let mut open = Vec::new();
    let app: App = Box::new(move |conn, ev| {
        if let Event::Request { stream, .. } = ev {
            open.push(stream);
            if open.len() == 3 {
                conn.shutdown();
                for &s in &open {
                    conn.send_response(s, 200, &[] as &[(&str, &str)], false)
                        .unwrap();
                    conn.send_data(s, pattern(100_000), true).unwrap();
                }
            }
        }
    });
    let (client, server) = connect(Config::default(), app, false).await;
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let mut client = client.clone();
        tasks.push(tokio::spawn(async move {
            let (resp, _) = client.send_request(get("/"), true).unwrap();
            body(resp.await.unwrap().into_body()).await.unwrap().len()
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), 100_000);
    }
    // The server loop ends by itself (is_done), and new requests fail.
    let log = tokio::time::timeout(std::time::Duration::from_secs(10), server)
        .await
        .expect("server finished")
        .unwrap();
    assert_eq!(log.iter().filter(|e| e.starts_with("Request")).count(), 3);
    let mut client = client;
    let failed = match client.send_request(get("/late"), true) {
        Err(_) => true,
        Ok((resp, _)) => resp.await.is_err(),
    };
    assert!(failed);
}

#[tokio::test]
async fn server_reset_and_client_trailers() {
    let app: App = Box::new(|conn, ev| match ev {
        Event::Request { stream, head, .. } if head.path() == Some(&b"/refuse"[..]) => {
            conn.reset(stream, ErrorCode::REFUSED_STREAM);
        }
        Event::Data { stream, data, .. } => conn.release_capacity(stream, data.len()),
        Event::Trailers { stream, fields } => {
            let v = fields.get(b"x-checksum").unwrap_or(b"none").to_vec();
            conn.send_response(stream, 200, &[] as &[(&str, &str)], false)
                .unwrap();
            conn.send_data(stream, v.into(), true).unwrap();
        }
        _ => {}
    });
    let (mut client, _server) = connect(Config::default(), app, false).await;
    let (resp, _) = client.send_request(get("/refuse"), true).unwrap();
    let err = resp.await.unwrap_err();
    assert_eq!(err.reason(), Some(h2::Reason::REFUSED_STREAM));

    let req = http::Request::post("https://example.com/t")
        .body(())
        .unwrap();
    let (resp, mut send) = client.send_request(req, false).unwrap();
    send.send_data(Bytes::from_static(b"payload"), false)
        .unwrap();
    let mut trailers = http::HeaderMap::new();
    trailers.insert("x-checksum", "abc".parse().unwrap());
    send.send_trailers(trailers).unwrap();
    let resp = resp.await.unwrap();
    assert_eq!(body(resp.into_body()).await.unwrap(), b"abc");
}

#[tokio::test]
async fn response_trailers_reach_the_client() {
    let app: App = Box::new(|conn, ev| {
        if let Event::Request { stream, .. } = ev {
            conn.send_response(stream, 200, &[] as &[(&str, &str)], false)
                .unwrap();
            conn.send_data(stream, pattern(100_000), false).unwrap();
            conn.send_trailers(stream, &[("x-done", "yes")]).unwrap();
        }
    });
    let (mut client, _server) = connect(Config::default(), app, false).await;
    let (resp, _) = client.send_request(get("/"), true).unwrap();
    let mut b = resp.await.unwrap().into_body();
    let mut n = 0;
    while let Some(chunk) = b.data().await {
        let chunk = chunk.unwrap();
        b.flow_control().release_capacity(chunk.len()).unwrap();
        n += chunk.len();
    }
    assert_eq!(n, 100_000);
    let trailers = b.trailers().await.unwrap().unwrap();
    assert_eq!(trailers["x-done"], "yes");
}
