//! # spdy: a pure, sans-IO SPDY implementation
//!
//! SPDY/3.1 first, SPDY/3 and SPDY/2 on the same code. No sockets, threads, clocks or
//! global randomness: time is a parameter and bytes go in and out through methods.
//!
//! - [`frame`]: typed frames, byte-exact encode and decode for every version;
//! - [`headers`] and [`compress`]: name/value blocks and their shared zlib contexts;
//! - [`session`]: streams, flow control, priorities, settings, ping, goaway and push;
//! - [`http`] and [`url`]: the HTTP mapping of header blocks, and the workspace's one URL
//!   type.
//!
//! A client and a server session in memory: bytes from one end's
//! [`Session::poll_transmit`] go into the other's [`Session::recv`]; what happened comes
//! out of [`Session::poll_event`]. An IO loop does the same with a socket (speedy's is
//! `speedy_net::spdy::conn::run`).
//!
//! ```
//! use bytes::{Bytes, BytesMut};
//! use spdy::session::{Config, Event, OutBuf, Role, Session};
//! use spdy::{http, Headers, Version};
//! use std::time::Instant;
//!
//! let v = Version::V3_1;
//! let mut client = Session::new(Config::new(Role::Client, v));
//! let mut server = Session::new(Config::new(Role::Server, v));
//! // Moves everything `from` has to write into `to`.
//! fn pump(from: &mut Session, to: &mut Session) {
//!     let mut out = OutBuf::new();
//!     while from.poll_transmit(&mut out) {}
//!     to.recv(&mut BytesMut::from(&out.take_all()[..]), Instant::now());
//! }
//!
//! let req = http::request_headers(v, "GET", "https", "example.com", "/", &Headers::new());
//! let id = client.open(req, 0, true).unwrap();
//! pump(&mut client, &mut server);
//! while let Some(ev) = server.poll_event() {
//!     if let Event::Stream { id, .. } = ev {
//!         server.reply(id, http::response_headers(v, 200, &Headers::new()), false).unwrap();
//!         server.send_data(id, Bytes::from_static(b"hello"), true).unwrap();
//!     }
//! }
//! pump(&mut server, &mut client);
//! let mut body = Vec::new();
//! while let Some(ev) = client.poll_event() {
//!     match ev {
//!         Event::Reply { headers, .. } => assert_eq!(http::parse_status(v, &headers), Some(200)),
//!         Event::Data { id: i, data, .. } if i == id => {
//!             body.extend_from_slice(&data);
//!             client.release(id, data.len()); // consumed: credit goes back to the peer
//!         }
//!         _ => {}
//!     }
//! }
//! assert_eq!(body, b"hello");
//! ```

pub mod codes;
pub mod compress;
mod fixed;
pub mod frame;
pub mod headers;
pub mod http;
pub mod ids;
pub mod session;
pub mod url;
mod version;
mod zlib;

pub use codes::{GoAwayStatus, RstStatus, SettingId};
pub use compress::{CompressionConfig, HeaderCompression};
pub use frame::{Frame, StreamId};
pub use headers::Headers;
pub use session::{Config, Event, Role, Session};
pub use version::Version;
