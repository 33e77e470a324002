//! What a client request gives back: a streaming response or why it failed, and the
//! frame log hook. Shared by the client and its SPDY session owner.

use crate::body::Body;
use spdy::{Headers, RstStatus};
use std::sync::Arc;

/// Receives the client's `-v` lines: every SPDY frame sent or received, the request and
/// response heads of HTTP/1.1 and h2, and what connecting did ([`LogKind::Info`]).
pub type FrameLog = Arc<dyn Fn(LogKind, &str) + Send + Sync>;

/// What a [`FrameLog`] line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogKind {
    /// Sent to the server (a frame or a request head).
    Sent,
    /// Received from the server.
    Received,
    /// About the connection: address, TLS version and cipher, ALPN.
    Info,
}

/// Why a request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientError {
    /// Connecting or TLS failed.
    Connect(String),
    /// The stream was reset (status, by whom).
    Reset(RstStatus, &'static str),
    /// The server sent GOAWAY before processing it; safe to retry.
    NotProcessed,
    /// The connection closed first.
    Closed,
    /// A protocol error.
    Protocol(String),
    /// HTTP/1.1 failure.
    Http(String),
    /// No response head within the client's read timeout.
    Timeout(std::time::Duration),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Connect(e) => write!(f, "connect: {e}"),
            ClientError::Reset(s, who) => write!(f, "stream reset by {who}: {s}"),
            ClientError::NotProcessed => {
                write!(f, "not processed by the server (GOAWAY); safe to retry")
            }
            ClientError::Closed => write!(f, "connection closed"),
            ClientError::Protocol(e) => write!(f, "protocol error: {e}"),
            ClientError::Http(e) => write!(f, "http: {e}"),
            ClientError::Timeout(d) => write!(f, "no response within {d:?}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// A response whose body arrives as it streams in.
pub struct ResponseStream {
    /// Status code.
    pub status: u16,
    /// Headers (lower-case names).
    pub headers: Headers,
    /// Protocol it came over.
    pub protocol: &'static str,
    /// For pushed streams, the pushed URL.
    pub pushed_url: Option<String>,
    /// The stream's id on its connection (SPDY, h2, h3), for
    /// [`crate::Client::reprioritize`]; `None` over HTTP/1.1.
    pub stream_id: Option<u32>,
    /// The body.
    pub body: Body,
}
