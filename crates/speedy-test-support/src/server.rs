//! The loopback server fixture: [`TestServer`].

use speedy_net::server::{serve, Handler, ServerConfig};
use speedy_net::Shutdown;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a dropped server's connections have to drain before its runtime is dropped
/// (which ends whatever is left).
const DRAIN: Duration = Duration::from_secs(2);

/// `speedy_net::server::serve` running in-process on `127.0.0.1:0`, on a tokio runtime
/// of its own (one thread driving it, two workers), so a test on a blocking socket can
/// talk to it. Dropping it triggers the configuration's [`Shutdown`], gives the
/// connections up to 2 s to drain, and waits for the runtime's thread to end.
pub struct TestServer {
    addr: SocketAddr,
    text: String,
    shutdown: Shutdown,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Binds `127.0.0.1:0` and serves `handler` with `cfg` (SPDY, h2 and HTTP/1.1 on the
    /// one port; TLS as well when `cfg.tls` is set). The listener is bound when this
    /// returns, so connections made at once wait in its backlog. Panics if the address
    /// or the runtime cannot be had.
    pub fn start(handler: Arc<dyn Handler>, cfg: ServerConfig) -> TestServer {
        TestServer::start_on("127.0.0.1:0", handler, cfg)
    }

    /// [`TestServer::start`] on `addr` (`IP:PORT`, port 0 for any free one), e.g. another
    /// loopback address (`127.0.0.2:0`) for a server of its own. Panics if it cannot be
    /// bound.
    pub fn start_on(addr: &str, handler: Arc<dyn Handler>, cfg: ServerConfig) -> TestServer {
        let listener =
            std::net::TcpListener::bind(addr).unwrap_or_else(|e| panic!("bind {addr}: {e}"));
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let addr = listener.local_addr().expect("listener address");
        let shutdown = cfg.shutdown.clone();
        let stop = shutdown.clone();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("test-server")
            .enable_all()
            .build()
            .expect("tokio runtime");
        let thread = std::thread::Builder::new()
            .name(format!("test-server {addr}"))
            .spawn(move || {
                rt.block_on(async move {
                    let l = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                    let drained = async {
                        stop.wait().await;
                        tokio::time::sleep(DRAIN).await;
                    };
                    tokio::select! {
                        r = serve(l, cfg, handler) => {
                            if let Err(e) = r {
                                eprintln!("test server {addr}: {e}");
                            }
                        }
                        _ = drained => {}
                    }
                });
                rt.shutdown_timeout(Duration::from_secs(1));
            })
            .expect("start the server thread");
        TestServer {
            addr,
            text: addr.to_string(),
            shutdown,
            thread: Some(thread),
        }
    }

    /// `127.0.0.1:PORT`, as the [`raw`](crate::raw) peers take it.
    pub fn addr(&self) -> &str {
        &self.text
    }

    /// The listener's address.
    pub fn socket_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown.trigger();
        if let Some(t) = self.thread.take() {
            // A panic on the server's thread was already printed; the test has its own.
            let _ = t.join();
        }
    }
}

/// `cfg` with TLS: a fresh self-signed certificate for `localhost`, `127.0.0.1` and
/// `::1`, offering every protocol the server speaks by ALPN (as `speedy serve
/// --tls-self-signed`). Plain clients still get through on the same port.
pub fn with_self_signed_tls(mut cfg: ServerConfig) -> ServerConfig {
    let (certs, key) = speedy_net::tls::self_signed(&[]).expect("self-signed certificate");
    let tls = speedy_net::tls::server_config(certs, key, &speedy_net::tls::SERVER_ALPN)
        .expect("TLS server configuration");
    cfg.tls = Some(tls);
    cfg
}
