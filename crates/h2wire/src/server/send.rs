//! The sending half: queued control frames first, then DATA frames chosen by urgency
//! (RFC 9218: 0 first, round-robin a frame at a time within a level), each within the
//! stream's and the connection's send windows and the client's SETTINGS_MAX_FRAME_SIZE.

use super::{Phase, SendState, ServerConnection};
use crate::frame::{encode_header_block, flags, FrameHeader, FrameType, StreamId};
use bytes::Buf;

impl ServerConnection {
    /// Puts `id` in its urgency's ready queue if it has DATA to frame.
    pub(super) fn schedule(&mut self, id: u32) {
        if let Some(s) = self.streams.get_mut(&id) {
            if !s.queued && s.send == SendState::Body && (s.out_len > 0 || s.out_end) {
                s.queued = true;
                self.ready[usize::from(s.urgency.min(7))].push_back(id);
            }
        }
    }

    /// Appends to `dst` every queued control frame (SETTINGS, ACKs, WINDOW_UPDATE,
    /// RST_STREAM, GOAWAY, response HEADERS, PUSH_PROMISE), then DATA frames that may
    /// go now, until about [`Config::transmit_batch`](super::Config::transmit_batch)
    /// bytes were appended. Returns the number of bytes appended; call again until it
    /// returns 0 (a change of urgency or window is honoured from the next call).
    pub fn poll_transmit(&mut self, dst: &mut Vec<u8>) -> usize {
        let start = dst.len();
        if dst.is_empty() {
            std::mem::swap(dst, &mut self.ctrl);
        } else {
            dst.extend_from_slice(&self.ctrl);
            self.ctrl.clear();
        }
        if self.phase != Phase::Open {
            return dst.len() - start;
        }
        while dst.len() - start < self.cfg.transmit_batch {
            let Some(level) = self.ready.iter().position(|q| !q.is_empty()) else {
                break;
            };
            let id = self.ready[level][0];
            let conn_window = self.conn_send_window;
            let max_frame = self.peer_max_frame_size as usize;
            let Some(s) = self.streams.get_mut(&id) else {
                self.ready[level].pop_front();
                continue;
            };
            if usize::from(s.urgency) != level {
                self.ready[level].pop_front();
                self.ready[usize::from(s.urgency)].push_back(id);
                continue;
            }
            if s.send != SendState::Body || (s.out_len == 0 && !s.out_end) {
                self.ready[level].pop_front();
                s.queued = false;
                continue;
            }
            let window = s.send_window.min(conn_window).max(0) as usize;
            let n = s.out_len.min(window).min(max_frame);
            if n == 0 && s.out_len > 0 {
                if s.send_window <= 0 {
                    // Waits for the stream's WINDOW_UPDATE, which schedules it again.
                    self.ready[level].pop_front();
                    s.queued = false;
                    continue;
                }
                // The connection window is closed: nothing more goes now.
                break;
            }
            let end = s.out_end && n == s.out_len;
            let trailers = if end { s.trailers.take() } else { None };
            if n > 0 || trailers.is_none() {
                let end_flag = end && trailers.is_none();
                FrameHeader {
                    length: n as u32,
                    kind: FrameType::DATA,
                    flags: if end_flag { flags::END_STREAM } else { 0 },
                    stream_id: StreamId(id),
                }
                .encode(dst);
            }
            let mut left = n;
            while left > 0 {
                let front = s.out.front_mut().expect("out_len counts these bytes");
                let k = front.len().min(left);
                dst.extend_from_slice(&front[..k]);
                if k == front.len() {
                    s.out.pop_front();
                } else {
                    front.advance(k);
                }
                left -= k;
            }
            s.out_len -= n;
            s.send_window -= n as i64;
            if end {
                s.send = SendState::Done;
                s.queued = false;
            } else if s.out_len > 0 || s.out_end {
                self.ready[level].push_back(id);
            } else {
                s.queued = false;
            }
            self.conn_send_window -= n as i64;
            self.ready[level].pop_front();
            if let Some(fields) = trailers {
                // Encoded now, in wire order: every block queued before is already in
                // `dst`, every block queued later goes after it.
                self.block.clear();
                self.hpack_enc.encode(
                    fields.iter().map(|(n, v)| (&n[..], &v[..])),
                    &mut self.block,
                );
                encode_header_block(
                    StreamId(id),
                    &self.block,
                    true,
                    None,
                    self.peer_max_frame_size,
                    dst,
                );
            }
            if end {
                self.finished_sending(StreamId(id));
            }
        }
        dst.len() - start
    }
}
