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

pub mod codes;
pub mod compress;
pub mod frame;
pub mod headers;
pub mod http;
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
