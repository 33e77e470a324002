//! The fixture itself: a [`TestServer`] answers every protocol on its port and is gone
//! once dropped.

use speedy_net::server::{Handler, Request, Response, ResponseFuture, ServerConfig};
use speedy_test_support::raw::{http1_get_ok, H2Raw, SpdyClient};
use speedy_test_support::{with_self_signed_tls, TestServer};
use std::sync::Arc;
use std::time::Duration;

const T: Duration = Duration::from_secs(10);

/// Answers `hello` to everything.
struct Hello;

impl Handler for Hello {
    fn handle(&self, _req: Request) -> ResponseFuture {
        Box::pin(async { Response::new(200, "text/plain", "hello") })
    }
}

#[test]
fn serves_http1_spdy_and_h2_on_one_loopback_port() {
    let srv = TestServer::start(Arc::new(Hello), ServerConfig::default());
    assert!(srv.socket_addr().ip().is_loopback());
    let got = http1_get_ok(srv.addr(), "/", T);
    assert!(got.ends_with(b"hello"), "{}", String::from_utf8_lossy(&got));
    let mut c = SpdyClient::connect(srv.addr(), spdy::Version::V3_1);
    assert_eq!(c.get_ok("/", T), 5);
    let mut h2 = H2Raw::connect(srv.addr());
    assert_eq!(h2.get_ok(1, "/", T), 5);
}

#[test]
fn a_tls_server_still_takes_plain_clients_and_drop_stops_it() {
    let srv = TestServer::start(
        Arc::new(Hello),
        with_self_signed_tls(ServerConfig::default()),
    );
    let addr = srv.socket_addr();
    http1_get_ok(srv.addr(), "/", T);
    drop(srv);
    assert!(
        std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err(),
        "{addr} still accepts after the server was dropped"
    );
}
