//! Output: the scheduler and frame serialisation.
//!
//! Order of output: PING answers; other control frames (SETTINGS, WINDOW_UPDATE,
//! RST_STREAM, GOAWAY, push SYN_STREAMs) in FIFO order; our SYN_STREAMs in id order as
//! the peer's stream limit allows; then stream frames by priority: always the most urgent
//! level with something sendable, round-robin within a level, one frame at a time, DATA
//! cut to `max_data_frame` and to the flow-control windows. Header blocks are compressed
//! here, at the moment their frame is serialised, so the peer inflates them in order.

use super::{Event, Out, Session};
use crate::frame::{encode_data_header, Frame, StreamId, SynStream};
use bytes::Bytes;
use std::collections::VecDeque;
use std::io::IoSlice;

/// DATA payloads at least this large are kept as their own chunk (zero-copy).
const ZERO_COPY_MIN: usize = 1024;

/// Bytes ready to be written: small frames are copied into a buffer, large DATA
/// payloads are kept as shared [`Bytes`] for vectored writes.
#[derive(Debug, Default)]
pub struct OutBuf {
    chunks: VecDeque<Bytes>,
    tail: Vec<u8>,
    len: usize,
}

impl OutBuf {
    /// An empty buffer.
    pub fn new() -> OutBuf {
        OutBuf::default()
    }

    /// Bytes waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn seal(&mut self) {
        if !self.tail.is_empty() {
            let t = std::mem::take(&mut self.tail);
            self.chunks.push_back(Bytes::from(t));
        }
    }

    fn put_bytes(&mut self, b: Bytes) {
        self.len += b.len();
        if b.len() < ZERO_COPY_MIN {
            self.tail.extend_from_slice(&b);
        } else {
            self.seal();
            self.chunks.push_back(b);
        }
    }

    /// Lets `write` append bytes made elsewhere (another protocol's frames, for the same
    /// loop) after what waits, in place: no buffer of their own, no copy.
    pub fn append_with(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        let before = self.tail.len();
        write(&mut self.tail);
        self.len += self.tail.len() - before;
    }

    /// Fills `dst` with slices of the waiting bytes, in order; returns how many.
    pub fn io_slices<'a>(&'a mut self, dst: &mut [IoSlice<'a>]) -> usize {
        self.seal();
        let mut n = 0;
        for (c, slot) in self.chunks.iter().zip(dst.iter_mut()) {
            *slot = IoSlice::new(c);
            n += 1;
        }
        n
    }

    /// Drops the first `n` bytes (after a write).
    pub fn advance(&mut self, mut n: usize) {
        self.seal();
        self.len -= n;
        while n > 0 {
            let front = self.chunks.front_mut().expect("advance past end");
            if n >= front.len() {
                n -= front.len();
                self.chunks.pop_front();
            } else {
                let _ = front.split_to(n);
                n = 0;
            }
        }
    }

    /// Takes everything as one contiguous vector (tests, TLS writers).
    pub fn take_all(&mut self) -> Vec<u8> {
        self.seal();
        let mut v = Vec::with_capacity(self.len);
        for c in self.chunks.drain(..) {
            v.extend_from_slice(&c);
        }
        self.len = 0;
        v
    }
}

impl Session {
    /// Writes the next frame into `out`; returns `false` when nothing can be sent now
    /// (nothing queued, or all queued DATA is blocked by flow control).
    pub fn poll_transmit(&mut self, out: &mut OutBuf) -> bool {
        if let Some(f) = self.urgent.pop_front() {
            self.write_frame(&f, out);
            return true;
        }
        if let Some(f) = self.control.pop_front() {
            self.write_frame(&f, out);
            return true;
        }
        if self.local_streams < self.peer_max_streams {
            if let Some((id, headers, fin)) = self.syn_queue.pop_front() {
                self.local_streams += 1;
                let st = self.streams.get_mut(&id.0).expect("queued stream exists");
                st.opened = true;
                let priority = st.priority;
                if fin {
                    st.local_open = false;
                }
                let syn = SynStream {
                    stream_id: id,
                    assoc_id: StreamId(0),
                    priority,
                    slot: 0,
                    fin,
                    unidirectional: false,
                    headers,
                };
                self.write_frame(&Frame::SynStream(syn), out);
                self.make_ready(id);
                return true;
            }
        }
        self.poll_stream_frame(out)
    }

    /// Bytes the session window lets us send now: unlimited before SPDY/3.1 (the 3.1
    /// window holds while plain TCP is undecided) and for a peer without flow control.
    fn session_credit(&self) -> usize {
        let enforced = self.version.has_session_flow_control() || self.peer_flow.undecided();
        if enforced && self.peer_flow.enforce_send() {
            self.session_send.credit()
        } else {
            usize::MAX
        }
    }

    fn poll_stream_frame(&mut self, out: &mut OutBuf) -> bool {
        let flow = self.version.has_stream_flow_control() && self.peer_flow.enforce_send();
        for level in 0..self.ready.len() {
            let mut tries = self.ready[level].len();
            while tries > 0 {
                tries -= 1;
                let Some(id) = self.ready[level].pop_front() else {
                    break;
                };
                let alone = self.ready.iter().all(|q| q.is_empty());
                let frame_max = if alone {
                    self.cfg.max_data_frame.max(self.cfg.lone_data_frame)
                } else {
                    self.cfg.max_data_frame
                };
                let session_credit = self.session_credit();
                let Some(st) = self.streams.get_mut(&id.0) else {
                    continue;
                };
                let frame = match st.outq.front_mut() {
                    None => {
                        st.in_ready = false;
                        continue;
                    }
                    Some(Out::Data(data)) => {
                        let credit = if flow { st.send.credit() } else { usize::MAX };
                        if credit == 0 {
                            st.in_ready = false; // back when a WINDOW_UPDATE or SETTINGS opens it
                            self.window_blocked = true;
                            continue;
                        }
                        if session_credit == 0 {
                            self.ready[level].push_back(id); // back when the session window opens
                            self.window_blocked = true;
                            continue;
                        }
                        let n = data
                            .len()
                            .min(credit)
                            .min(session_credit)
                            // At least one byte: 0 would write empty frames forever.
                            .min(frame_max.max(1));
                        let chunk = if n == data.len() {
                            std::mem::take(data)
                        } else {
                            data.split_to(n)
                        };
                        if data.is_empty() {
                            st.outq.pop_front();
                        }
                        st.queued_bytes -= n;
                        // Counted even when not enforced (SPDY/2; the session in SPDY/3).
                        st.send.consume(n);
                        // Fold a following bare FIN into this frame.
                        let fin = matches!(st.outq.front(), Some(Out::Fin)) && {
                            st.outq.pop_front();
                            true
                        };
                        if fin {
                            st.local_open = false;
                        }
                        self.session_send.consume(n);
                        Frame::Data {
                            stream_id: id,
                            fin,
                            data: chunk,
                        }
                    }
                    Some(_) => match st.outq.pop_front().expect("non-empty") {
                        Out::Fin => {
                            st.local_open = false;
                            Frame::Data {
                                stream_id: id,
                                fin: true,
                                data: Bytes::new(),
                            }
                        }
                        Out::Headers {
                            reply,
                            headers,
                            fin,
                        } => {
                            if fin {
                                st.local_open = false;
                            }
                            if reply {
                                Frame::SynReply {
                                    stream_id: id,
                                    fin,
                                    headers,
                                }
                            } else {
                                Frame::Headers {
                                    stream_id: id,
                                    fin,
                                    headers,
                                }
                            }
                        }
                        Out::Data(_) => unreachable!("matched above"),
                    },
                };
                let more = !st.outq.is_empty();
                if more {
                    self.ready[level].push_back(id);
                } else {
                    st.in_ready = false;
                }
                self.write_frame(&frame, out);
                if !more {
                    self.maybe_close(id);
                }
                return true;
            }
        }
        false
    }

    fn write_frame(&mut self, f: &Frame, out: &mut OutBuf) {
        self.stats.frames_sent += 1;
        if self.cfg.log_frames {
            self.events.push_back(Event::Frame {
                sent: true,
                summary: summarize(f),
            });
        }
        match f {
            Frame::Data {
                stream_id,
                fin,
                data,
            } => {
                self.stats.data_bytes_sent += data.len() as u64;
                encode_data_header(*stream_id, *fin, data.len(), &mut out.tail);
                out.len += 8;
                out.put_bytes(data.clone());
            }
            _ => {
                self.scratch.clear();
                f.encode(self.version, &mut self.comp, &mut self.scratch);
                let raw = match f {
                    Frame::SynStream(s) => Some((&s.headers, 18)),
                    Frame::SynReply { headers, .. } | Frame::Headers { headers, .. } => Some((
                        headers,
                        if self.version == crate::Version::V2 {
                            14
                        } else {
                            12
                        },
                    )),
                    _ => None,
                };
                if let Some((h, fixed)) = raw {
                    self.stats.header_bytes_raw_sent += h.encoded_len(self.version) as u64;
                    self.stats.header_bytes_compressed_sent += (self.scratch.len() - fixed) as u64;
                }
                out.len += self.scratch.len();
                out.tail.extend_from_slice(&self.scratch);
            }
        }
    }
}

/// A one-line description of a frame, for `-v` logs.
pub(crate) fn summarize(f: &Frame) -> String {
    let fin = |b: bool| if b { " fin" } else { "" };
    let hdrs = |h: &crate::Headers| {
        let parts: Vec<String> = h
            .iter()
            .map(|(n, v)| {
                format!(
                    "{}: {}",
                    String::from_utf8_lossy(n),
                    String::from_utf8_lossy(v).replace('\0', "\\0")
                )
            })
            .collect();
        parts.join(", ")
    };
    match f {
        Frame::Data {
            stream_id,
            fin: f,
            data,
        } => format!("DATA stream={stream_id} len={}{}", data.len(), fin(*f)),
        Frame::SynStream(s) => format!(
            "SYN_STREAM stream={} assoc={} pri={}{}{} {{{}}}",
            s.stream_id,
            s.assoc_id,
            s.priority,
            fin(s.fin),
            if s.unidirectional {
                " unidirectional"
            } else {
                ""
            },
            hdrs(&s.headers)
        ),
        Frame::SynReply {
            stream_id,
            fin: f,
            headers,
        } => format!(
            "SYN_REPLY stream={stream_id}{} {{{}}}",
            fin(*f),
            hdrs(headers)
        ),
        Frame::Headers {
            stream_id,
            fin: f,
            headers,
        } => format!(
            "HEADERS stream={stream_id}{} {{{}}}",
            fin(*f),
            hdrs(headers)
        ),
        Frame::RstStream { stream_id, status } => {
            format!("RST_STREAM stream={stream_id} status={status}")
        }
        Frame::Settings { clear, entries } => {
            let e: Vec<String> = entries
                .iter()
                .map(|e| format!("{}={}", e.id, e.value))
                .collect();
            format!(
                "SETTINGS{} {}",
                if *clear { " clear" } else { "" },
                e.join(" ")
            )
        }
        Frame::Noop => "NOOP".into(),
        Frame::Ping { id } => format!("PING id={id}"),
        Frame::GoAway { last_good, status } => {
            format!("GOAWAY last_good={last_good} status={status}")
        }
        Frame::WindowUpdate { stream_id, delta } => {
            format!("WINDOW_UPDATE stream={stream_id} delta={delta}")
        }
        Frame::Credential { slot, .. } => format!("CREDENTIAL slot={slot}"),
        Frame::Priority {
            stream_id,
            priority,
        } => format!("PRIORITY stream={stream_id} pri={priority}"),
        Frame::Unknown {
            frame_type,
            payload,
            ..
        } => format!("UNKNOWN type={frame_type} len={}", payload.len()),
    }
}
