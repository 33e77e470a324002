//! Per-stream state.
//!
//! ```text
//!                 SYN_STREAM sent / received
//!     (idle) ───────────────────────────────► open
//!                                            │  │
//!              our FIN written (or the peer  │  │ peer's FIN received (or we
//!              opened it unidirectional)     │  │ opened it unidirectional)
//!                                            ▼  ▼
//!               half-closed (local)   half-closed (remote)
//!                                 \      /
//!                       the other  \    /  side closes too
//!                                   ▼  ▼
//!                                  closed      ◄── RST_STREAM either way, from any state
//! ```
//! `local_open` and `remote_open` are the two halves; a stream is removed from the
//! session when both are false or when it is reset.

use super::flow::{RecvWindow, Window};
use crate::frame::StreamId;
use crate::headers::Headers;
use bytes::Bytes;
use std::collections::VecDeque;

/// An item waiting in a stream's send queue.
#[derive(Debug)]
pub(crate) enum Out {
    /// SYN_REPLY (`reply == true`) or HEADERS.
    Headers {
        reply: bool,
        headers: Headers,
        fin: bool,
    },
    /// DATA payload (split into frames by the scheduler).
    Data(Bytes),
    /// A bare FIN (zero-length DATA with FLAG_FIN).
    Fin,
}

/// One stream.
#[derive(Debug)]
pub(crate) struct Stream {
    pub id: StreamId,
    pub priority: u8,
    /// We may still send (no FIN written yet, and not a push towards us).
    pub local_open: bool,
    /// The peer may still send.
    pub remote_open: bool,
    /// We queued our FIN (it may still wait in `outq`).
    pub fin_queued: bool,
    /// For our own bidirectional streams: SYN_REPLY received. For the peer's: SYN_REPLY queued.
    pub replied: bool,
    /// SYN_STREAM written to the wire (own streams wait in the SYN queue until then).
    pub opened: bool,
    /// A server push (unidirectional, server to client).
    pub pushed: bool,
    /// The request a push belongs to.
    pub assoc: StreamId,
    /// Our credit to send DATA (may go negative after a SETTINGS shrink).
    pub send: Window,
    /// The credit the peer has left to send to us, and what we owe it.
    pub recv: RecvWindow,
    /// Pending output.
    pub outq: VecDeque<Out>,
    /// DATA bytes waiting in `outq`.
    pub queued_bytes: usize,
    /// Whether the stream sits in a ready queue of the scheduler.
    pub in_ready: bool,
    /// Header-block bytes received on this stream so far (SYN_STREAM or SYN_REPLY plus
    /// every HEADERS, uncompressed): bounded by `Config::max_header_block`.
    pub header_bytes: usize,
}

impl Stream {
    pub fn new(id: StreamId, priority: u8, send_window: u32, recv_window: u32) -> Stream {
        Stream {
            id,
            priority,
            local_open: true,
            remote_open: true,
            fin_queued: false,
            replied: false,
            opened: true,
            pushed: false,
            assoc: StreamId(0),
            send: Window::new(send_window),
            recv: RecvWindow::new(recv_window),
            outq: VecDeque::new(),
            queued_bytes: 0,
            in_ready: false,
            header_bytes: 0,
        }
    }
}
