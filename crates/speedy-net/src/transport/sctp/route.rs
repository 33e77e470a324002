//! SPDY frames onto SCTP streams and back: the mapping of `docs/sctp.md`, sans-IO.
//!
//! Going out, the session's byte stream is cut into frames; every control frame goes on
//! SCTP stream 0 (ordered, so header blocks reach the peer's inflater in the order they
//! were deflated), and each SPDY stream's DATA on its own SCTP stream
//! ([`data_stream`]), ordered within the stream and independent of the others. One SCTP
//! message carries exactly one SPDY frame.
//!
//! Coming in, frames are handed to the session in an order it accepts: a DATA frame that
//! overtook the SYN_STREAM or SYN_REPLY opening its stream (a lost packet on stream 0) is
//! held until that frame arrives, and DATA for a stream the peer has reset is dropped.

use bytes::{Bytes, BytesMut};
use spdy::codes::{flags, frame_type as ft};
use spdy::frame::{FrameHeader, HEADER_LEN};
use std::collections::{HashSet, VecDeque};

/// The SCTP stream carrying every control frame.
pub const CONTROL_STREAM: u16 = 0;

/// The SCTP stream that carries SPDY stream `id`'s DATA when the association has
/// `streams` outbound streams (at least 2): 1 + (id / 2) mod (streams − 1), so the
/// client's streams 1, 3, 5 … and the server's pushes 2, 4, 6 … each take consecutive
/// SCTP streams.
pub fn data_stream(id: u32, streams: u16) -> u16 {
    let data_streams = u32::from(streams.max(2) - 1);
    1 + ((id >> 1) % data_streams) as u16
}

/// The stream id of a control frame that names one (SYN_STREAM, SYN_REPLY, HEADERS,
/// RST_STREAM, WINDOW_UPDATE: the 31 bits after the header in every version).
fn control_stream_id(frame: &[u8]) -> Option<u32> {
    (frame.len() >= HEADER_LEN + 4)
        .then(|| u32::from_be_bytes([frame[8], frame[9], frame[10], frame[11]]) & 0x7fff_ffff)
}

/// An empty DATA frame with FLAG_FIN for `id`.
fn fin_frame(id: u32) -> Bytes {
    let mut out = Vec::with_capacity(HEADER_LEN);
    spdy::frame::encode_data_header(spdy::StreamId(id), true, 0, &mut out);
    out.into()
}

/// A message that is not exactly one SPDY frame: the peer does not follow the mapping.
#[derive(Debug, PartialEq, Eq)]
pub struct NotOneFrame {
    /// The SCTP stream it came on.
    pub sctp_stream: u16,
    /// Its length.
    pub len: usize,
}

impl std::fmt::Display for NotOneFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SCTP stream {}: a {}-byte message that is not one SPDY frame",
            self.sctp_stream, self.len
        )
    }
}

/// Both directions of one association's mapping.
pub struct Router {
    /// Outbound SCTP streams (both ends of speedy use the same count).
    streams: u16,
    /// Client or server: which stream ids the peer opens.
    client: bool,
    /// Bytes of the session's output not yet a whole frame.
    pending: BytesMut,
    /// Streams that sent DATA and have not ended: a HEADERS with FLAG_FIN for one of these
    /// is sent without the flag, followed by an empty DATA frame with FLAG_FIN on the
    /// stream's SCTP stream, so the end cannot overtake the data.
    sent_data: HashSet<u32>,
    /// Own streams whose SYN_REPLY has not arrived: their DATA waits.
    awaiting_reply: HashSet<u32>,
    /// The highest stream id the peer has opened (they only grow): DATA above it waits.
    peer_max_syn: u32,
    /// DATA that arrived before its stream's opening frame, in arrival order.
    held: VecDeque<(u32, Bytes)>,
    held_bytes: usize,
    /// More than this held and everything goes to the session, which then judges.
    hold_limit: usize,
}

impl Router {
    /// A router for the `client` or server end of an association with `streams` outbound
    /// SCTP streams, holding at most `hold_limit` bytes of early DATA.
    pub fn new(client: bool, streams: u16, hold_limit: usize) -> Router {
        Router {
            streams,
            client,
            pending: BytesMut::new(),
            sent_data: HashSet::new(),
            awaiting_reply: HashSet::new(),
            peer_max_syn: 0,
            held: VecDeque::new(),
            held_bytes: 0,
            hold_limit,
        }
    }

    /// Whether the peer opens stream `id` (client-initiated ids are odd).
    fn peer_opens(&self, id: u32) -> bool {
        (id % 2 == 1) != self.client
    }

    /// Takes bytes the session wrote and appends each whole frame, with its SCTP stream,
    /// to `out`.
    pub fn outgoing(&mut self, bytes: &[u8], out: &mut Vec<(u16, Bytes)>) {
        self.pending.extend_from_slice(bytes);
        while self.pending.len() >= HEADER_LEN {
            let head: [u8; HEADER_LEN] = self.pending[..HEADER_LEN].try_into().expect("8");
            let header = FrameHeader::parse(&head);
            let total = HEADER_LEN + header.len();
            if self.pending.len() < total {
                self.pending.reserve(total - self.pending.len());
                break;
            }
            let mut frame = self.pending.split_to(total);
            match header {
                FrameHeader::Data {
                    stream_id, flags, ..
                } => {
                    let id = stream_id.0;
                    if flags & flags::FIN != 0 {
                        self.sent_data.remove(&id);
                    } else {
                        self.sent_data.insert(id);
                    }
                    out.push((data_stream(id, self.streams), frame.freeze()));
                }
                FrameHeader::Control {
                    frame_type, flags, ..
                } => {
                    let id = control_stream_id(&frame);
                    match (frame_type, id) {
                        (ft::SYN_STREAM, Some(id)) if !self.peer_opens(id) => {
                            self.awaiting_reply.insert(id);
                        }
                        (ft::RST_STREAM, Some(id)) => {
                            self.sent_data.remove(&id);
                            self.awaiting_reply.remove(&id);
                        }
                        (ft::HEADERS, Some(id))
                            if flags & flags::FIN != 0 && self.sent_data.remove(&id) =>
                        {
                            frame[4] &= !flags::FIN;
                            out.push((CONTROL_STREAM, frame.freeze()));
                            out.push((data_stream(id, self.streams), fin_frame(id)));
                            continue;
                        }
                        _ => {}
                    }
                    out.push((CONTROL_STREAM, frame.freeze()));
                }
            }
        }
    }

    /// Takes one message from SCTP stream `sctp_stream` and appends, in order, the frames
    /// the session may now read.
    pub fn incoming(
        &mut self,
        sctp_stream: u16,
        msg: Bytes,
        out: &mut Vec<Bytes>,
    ) -> Result<(), NotOneFrame> {
        let bad = || NotOneFrame {
            sctp_stream,
            len: msg.len(),
        };
        let head: [u8; HEADER_LEN] = msg
            .get(..HEADER_LEN)
            .and_then(|h| h.try_into().ok())
            .ok_or_else(bad)?;
        let header = FrameHeader::parse(&head);
        if HEADER_LEN + header.len() != msg.len() {
            return Err(bad());
        }
        match header {
            FrameHeader::Data { stream_id, .. } => {
                let id = stream_id.0;
                if self.waits(id) {
                    self.held_bytes += msg.len();
                    self.held.push_back((id, msg));
                    if self.held_bytes > self.hold_limit {
                        out.extend(self.held.drain(..).map(|(_, m)| m));
                        self.held_bytes = 0;
                    }
                } else {
                    out.push(msg);
                }
            }
            FrameHeader::Control { frame_type, .. } => {
                let id = control_stream_id(&msg);
                out.push(msg);
                match (frame_type, id) {
                    (ft::SYN_STREAM, Some(id)) if self.peer_opens(id) => {
                        self.peer_max_syn = self.peer_max_syn.max(id);
                        self.release(out);
                    }
                    (ft::SYN_REPLY, Some(id)) if self.awaiting_reply.remove(&id) => {
                        self.release(out);
                    }
                    (ft::RST_STREAM, Some(id)) => {
                        self.awaiting_reply.remove(&id);
                        self.sent_data.remove(&id);
                        self.drop_held(id);
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Whether DATA for `id` must wait for its stream's opening frame.
    fn waits(&self, id: u32) -> bool {
        if self.peer_opens(id) {
            id > self.peer_max_syn
        } else {
            self.awaiting_reply.contains(&id)
        }
    }

    /// Hands over every held frame that no longer waits, keeping arrival order.
    fn release(&mut self, out: &mut Vec<Bytes>) {
        let mut keep = VecDeque::new();
        for (id, m) in std::mem::take(&mut self.held) {
            if !self.waits(id) {
                self.held_bytes -= m.len();
                out.push(m);
            } else {
                keep.push_back((id, m));
            }
        }
        self.held = keep;
    }

    /// Forgets held DATA of a stream the peer reset.
    fn drop_held(&mut self, id: u32) {
        let before = self.held.len();
        self.held.retain(|(i, _)| *i != id);
        if self.held.len() != before {
            self.held_bytes = self.held.iter().map(|(_, m)| m.len()).sum();
        }
    }

    /// Bytes of early DATA held now.
    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn control(kind: u16, fl: u8, id: u32, extra: usize) -> Vec<u8> {
        let len = 4 + extra;
        let mut f = vec![0x80, 3];
        f.extend_from_slice(&kind.to_be_bytes());
        f.push(fl);
        f.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
        f.extend_from_slice(&id.to_be_bytes());
        f.resize(HEADER_LEN + len, 0xab);
        f
    }

    fn data(id: u32, fl: u8, len: usize) -> Vec<u8> {
        let mut f = Vec::new();
        spdy::frame::encode_data_header(spdy::StreamId(id), fl & flags::FIN != 0, len, &mut f);
        f.resize(HEADER_LEN + len, 7);
        f
    }

    #[test]
    fn frames_split_across_writes_go_out_whole_and_on_their_streams() {
        let mut r = Router::new(true, 16, 1 << 20);
        let mut wire = control(ft::SYN_STREAM, 0, 1, 10);
        wire.extend(data(1, 0, 100));
        wire.extend(data(3, flags::FIN, 5));
        wire.extend(control(ft::WINDOW_UPDATE, 0, 0, 4));
        let mut out = Vec::new();
        for piece in wire.chunks(7) {
            r.outgoing(piece, &mut out);
        }
        let streams: Vec<u16> = out.iter().map(|(s, _)| *s).collect();
        assert_eq!(streams, vec![0, 1, 2, 0]);
        let lens: Vec<usize> = out.iter().map(|(_, f)| f.len()).collect();
        assert_eq!(lens, vec![22, 108, 13, 16]);
        assert_eq!(out.iter().map(|(_, f)| f.len()).sum::<usize>(), wire.len());
    }

    #[test]
    fn a_headers_fin_after_data_moves_its_fin_behind_the_data() {
        let mut r = Router::new(false, 16, 1 << 20);
        let mut out = Vec::new();
        r.outgoing(&data(1, 0, 10), &mut out);
        r.outgoing(&control(ft::HEADERS, flags::FIN, 1, 6), &mut out);
        assert_eq!(out.len(), 3);
        assert_eq!(out[1].0, CONTROL_STREAM);
        assert_eq!(out[1].1[4] & flags::FIN, 0, "HEADERS lost its FIN");
        assert_eq!(out[2].0, out[0].0, "the FIN rides the data's stream");
        assert_eq!(&out[2].1[..], &data(1, flags::FIN, 0)[..]);
        // Without data before it, HEADERS keeps its FIN.
        out.clear();
        r.outgoing(&control(ft::HEADERS, flags::FIN, 3, 6), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].1[4] & flags::FIN, flags::FIN);
    }

    #[test]
    fn data_that_overtakes_its_syn_reply_waits_for_it() {
        let mut r = Router::new(true, 16, 1 << 20);
        let mut sent = Vec::new();
        r.outgoing(&control(ft::SYN_STREAM, flags::FIN, 1, 10), &mut sent);
        r.outgoing(&control(ft::SYN_STREAM, flags::FIN, 3, 10), &mut sent);
        let mut out = Vec::new();
        r.incoming(1, data(1, 0, 20).into(), &mut out).unwrap();
        r.incoming(2, data(3, 0, 30).into(), &mut out).unwrap();
        r.incoming(1, data(1, flags::FIN, 0).into(), &mut out)
            .unwrap();
        assert!(out.is_empty());
        assert_eq!(r.held_bytes(), 28 + 38 + 8);
        r.incoming(0, control(ft::SYN_REPLY, 0, 1, 6).into(), &mut out)
            .unwrap();
        let lens: Vec<usize> = out.iter().map(|f| f.len()).collect();
        assert_eq!(
            lens,
            vec![18, 28, 8],
            "reply first, then stream 1's data in order"
        );
        assert_eq!(r.held_bytes(), 38);
        // A reset drops what waited for the stream.
        out.clear();
        r.incoming(0, control(ft::RST_STREAM, 0, 3, 4).into(), &mut out)
            .unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(r.held_bytes(), 0);
    }

    #[test]
    fn request_data_before_its_syn_stream_waits_on_the_server() {
        let mut r = Router::new(false, 16, 1 << 20);
        let mut out = Vec::new();
        r.incoming(1, data(5, 0, 3).into(), &mut out).unwrap();
        r.incoming(1, data(1, 0, 3).into(), &mut out).unwrap();
        assert!(out.is_empty());
        r.incoming(0, control(ft::SYN_STREAM, 0, 1, 10).into(), &mut out)
            .unwrap();
        assert_eq!(
            out.len(),
            2,
            "SYN_STREAM 1 and its data; stream 5's still waits"
        );
        r.incoming(0, control(ft::SYN_STREAM, 0, 5, 10).into(), &mut out)
            .unwrap();
        assert_eq!(out.len(), 4);
        // Data for a stream the peer already opened goes straight through.
        r.incoming(3, data(5, flags::FIN, 0).into(), &mut out)
            .unwrap();
        assert_eq!(out.len(), 5);
    }

    #[test]
    fn past_the_hold_limit_the_session_gets_everything_and_judges() {
        let mut r = Router::new(false, 16, 100);
        let mut out = Vec::new();
        r.incoming(1, data(9, 0, 60).into(), &mut out).unwrap();
        assert!(out.is_empty());
        r.incoming(1, data(9, 0, 60).into(), &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(r.held_bytes(), 0);
    }

    #[test]
    fn a_message_that_is_not_one_frame_is_refused() {
        let mut r = Router::new(false, 16, 100);
        let mut out = Vec::new();
        let mut two = data(1, 0, 4);
        two.extend(data(1, 0, 4));
        assert_eq!(
            r.incoming(1, two.into(), &mut out),
            Err(NotOneFrame {
                sctp_stream: 1,
                len: 24
            })
        );
        assert!(r
            .incoming(1, Bytes::from_static(&[0x80, 3]), &mut out)
            .is_err());
        assert!(out.is_empty());
    }

    #[test]
    fn data_streams_spread_both_parities_and_skip_the_control_stream() {
        assert_eq!(data_stream(1, 16), 1);
        assert_eq!(data_stream(3, 16), 2);
        assert_eq!(data_stream(2, 16), 2);
        assert_eq!(data_stream(31, 16), 1);
        assert_eq!(data_stream(7, 2), 1);
    }
}
