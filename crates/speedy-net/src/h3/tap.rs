//! The tap on an incoming HTTP/3 stream ([`Tap`]): it follows the stream's frame headers
//! as the bytes pass to the `h3` crate, keeps PRIORITY_UPDATE payloads (which `h3` 0.0.8
//! skips as unknown) and refuses a frame but DATA that declares more than the limit before
//! `h3` buffers any of it (`quic.rs`, "Frame limit").

use crate::h2::priority::{parse_priority_field, KEEP};
use bytes::{Bytes, BytesMut};

/// HTTP/3 stream type of the control stream (RFC 9114 §6.2.1).
pub(super) const CONTROL_STREAM: u64 = 0x00;
/// RFC 9218 §7.2: PRIORITY_UPDATE for a request stream.
pub(super) const PRIORITY_UPDATE: u64 = 0xF0700;
/// HTTP/3 frame types (RFC 9114 §7.2).
pub(super) const DATA: u64 = 0x00;
pub(super) const HEADERS: u64 = 0x01;

/// A PRIORITY_UPDATE frame (RFC 9218 §7.2) for request stream `id`: `u=N`.
pub fn priority_update_frame(id: u64, urgency: u8) -> Bytes {
    let mut payload = BytesMut::new();
    put_varint(&mut payload, id);
    payload.extend_from_slice(format!("u={}", urgency.min(7)).as_bytes());
    let mut f = BytesMut::new();
    put_varint(&mut f, PRIORITY_UPDATE);
    put_varint(&mut f, payload.len() as u64);
    f.extend_from_slice(&payload);
    f.freeze()
}

/// Appends `v` as a QUIC variable-length integer (RFC 9000 §16).
pub(super) fn put_varint(out: &mut BytesMut, v: u64) {
    if v < 1 << 6 {
        out.extend_from_slice(&[v as u8]);
    } else if v < 1 << 14 {
        out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes());
    } else if v < 1 << 30 {
        out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// Reads a varint from the front of `b`: (value, length), or `None` if incomplete.
pub(super) fn get_varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    if b.len() < len {
        return None;
    }
    let mut v = u64::from(first & 0x3f);
    for &x in &b[1..len] {
        v = v << 8 | u64::from(x);
    }
    Some((v, len))
}

/// Follows the frames of an incoming stream: on a unidirectional stream its type, then
/// (on a control stream) each frame's type and length, keeping PRIORITY_UPDATE payloads;
/// on a request stream, its frames' types and lengths.
#[derive(Default)]
pub(super) struct Tap {
    /// Header bytes not yet complete (a varint split across chunks).
    pub(super) head: Vec<u8>,
    /// The stream type is read (or there is none: a request stream).
    pub(super) typed: bool,
    /// The frame being read: its type, bytes of payload left, payload kept.
    pub(super) frame: Option<(u64, u64, Vec<u8>)>,
    /// Frames but DATA declaring more than this are refused.
    pub(super) max: Option<u64>,
    /// Frames whose header has been read.
    pub(super) frames: u64,
}

/// What a [`Tap`] made of the bytes it was fed.
#[derive(Debug, PartialEq)]
pub(super) enum Tapped {
    /// Nothing to do.
    Go,
    /// The stream is not a control stream: nothing more to follow.
    NotControl,
    /// A frame of type `ty` declares `len` bytes, over the limit; the stream's first if
    /// `first`.
    TooLong { ty: u64, len: u64, first: bool },
}

impl Tap {
    /// Feeds received bytes; calls `found(stream, urgency)` for each PRIORITY_UPDATE.
    pub(super) fn feed(&mut self, mut b: &[u8], mut found: impl FnMut(u64, u8)) -> Tapped {
        while !b.is_empty() {
            if let Some((ty, left, kept)) = &mut self.frame {
                let n = (*left).min(b.len() as u64) as usize;
                if *ty == PRIORITY_UPDATE {
                    let room = KEEP.saturating_sub(kept.len()).min(n);
                    kept.extend_from_slice(&b[..room]);
                }
                *left -= n as u64;
                b = &b[n..];
                if *left == 0 {
                    let (ty, _, kept) = self.frame.take().expect("a frame is open");
                    if ty == PRIORITY_UPDATE {
                        if let Some((id, n)) = get_varint(&kept) {
                            if let Some(u) = parse_priority_field(&kept[n..]) {
                                found(id, u);
                            }
                        }
                    }
                }
                continue;
            }
            // A varint: the stream type, or a frame's type or length.
            self.head.push(b[0]);
            b = &b[1..];
            if !self.typed {
                if let Some((ty, _)) = get_varint(&self.head) {
                    if ty != CONTROL_STREAM {
                        return Tapped::NotControl;
                    }
                    self.typed = true;
                    self.head.clear();
                }
                continue;
            }
            if let Some((ty, n)) = get_varint(&self.head) {
                if let Some((len, _)) = get_varint(&self.head[n..]) {
                    self.head.clear();
                    self.frames += 1;
                    if ty != DATA && self.max.is_some_and(|m| len > m) {
                        let first = self.frames == 1;
                        return Tapped::TooLong { ty, len, first };
                    }
                    // (An empty frame has nothing to keep; an empty PRIORITY_UPDATE
                    // would be malformed, and is ignored like the rest.)
                    if len > 0 {
                        self.frame = Some((ty, len, Vec::new()));
                    }
                }
            }
        }
        Tapped::Go
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_each_length() {
        for v in [
            0u64,
            63,
            64,
            16_383,
            16_384,
            (1 << 30) - 1,
            1 << 30,
            (1 << 62) - 1,
        ] {
            let mut b = BytesMut::new();
            put_varint(&mut b, v);
            assert_eq!(get_varint(&b), Some((v, b.len())), "{v}");
            if b.len() > 1 {
                assert_eq!(get_varint(&b[..b.len() - 1]), None, "{v} cut short");
            }
        }
    }

    #[test]
    fn the_tap_finds_priority_updates_split_anywhere() {
        // Stream type, SETTINGS (type 4, 2 bytes), PRIORITY_UPDATE for stream 8, an
        // unknown frame, PRIORITY_UPDATE for stream 4.
        let mut s = vec![0x00, 0x04, 0x02, 0x06, 0x10];
        s.extend_from_slice(&priority_update_frame(8, 0));
        s.extend_from_slice(&[0x21, 0x03, 1, 2, 3]);
        s.extend_from_slice(&priority_update_frame(4, 6));
        for cut in 1..s.len() {
            let mut tap = Tap::default();
            let mut got = Vec::new();
            assert_eq!(tap.feed(&s[..cut], |i, u| got.push((i, u))), Tapped::Go);
            assert_eq!(tap.feed(&s[cut..], |i, u| got.push((i, u))), Tapped::Go);
            assert_eq!(got, [(8, 0), (4, 6)], "cut at {cut}");
        }
    }

    #[test]
    fn the_tap_lets_other_stream_types_go() {
        let mut tap = Tap::default();
        let got = tap.feed(&[0x02, 0x00], |_, _| panic!("no frame"));
        assert_eq!(got, Tapped::NotControl);
    }

    #[test]
    fn the_tap_refuses_long_frames_but_data_as_their_length_arrives() {
        // A request stream: HEADERS of 100 bytes, DATA of 1 MiB, then HEADERS (trailers)
        // declaring 16 MiB, each split anywhere; the limit 1,000.
        let mut s = vec![0x01, 0x40, 100];
        s.extend_from_slice(&[0xc2; 100]);
        s.extend_from_slice(&[0x00, 0x80, 0x10, 0x00, 0x00]);
        s.extend_from_slice(&vec![b'x'; 1 << 20]);
        let trailers = s.len();
        s.extend_from_slice(&[0x01, 0x81, 0x00, 0x00, 0x00]);
        for cut in [1, 2, 50, trailers - 1, trailers + 1, trailers + 4] {
            let mut tap = Tap {
                typed: true,
                max: Some(1000),
                ..Tap::default()
            };
            let a = tap.feed(&s[..cut], |_, _| panic!("no PRIORITY_UPDATE"));
            let b = tap.feed(&s[cut..], |_, _| panic!("no PRIORITY_UPDATE"));
            let refused = Tapped::TooLong {
                ty: HEADERS,
                len: 16 << 20,
                first: false,
            };
            assert!(
                a == Tapped::Go && b == refused,
                "cut at {cut}: {a:?} then {b:?}"
            );
        }
        // A first HEADERS over the limit, on a request stream; an unknown frame over it on
        // a control stream.
        let mut tap = Tap {
            typed: true,
            max: Some(1000),
            ..Tap::default()
        };
        let got = tap.feed(&[0x01, 0x44, 0x00, 0xc2], |_, _| {});
        assert_eq!(
            got,
            Tapped::TooLong {
                ty: HEADERS,
                len: 1024,
                first: true
            }
        );
        let mut tap = Tap {
            max: Some(1000),
            ..Tap::default()
        };
        let got = tap.feed(&[0x00, 0x04, 0x00, 0x21, 0x44, 0x00], |_, _| {});
        assert_eq!(
            got,
            Tapped::TooLong {
                ty: 0x21,
                len: 1024,
                first: false
            }
        );
    }
}
