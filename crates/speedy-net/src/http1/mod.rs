//! HTTP/1.1.
//!
//! - `server.rs`: the server, through hyper, after `ready.rs` has answered what the
//!   handler knows at once (a GET or HEAD of a file held in memory) without it.
//! - `pipeline.rs`: the client's pipelining on one connection (`Http1Mode::Pipelined`).
//! - `response.rs`: response heads and body framing, sans IO, read by the pipelining
//!   client and the page loader's HTTP/1.1 driver.

pub(crate) mod pipeline;
mod ready;
pub mod response;
pub(crate) mod server;
