//! The HTTP/1.1 response decoder of `speedy-net` (`http1::response`, sans IO: heads and
//! body framing, as the pipelining client and the page loader read them).

use crate::Input;
use bytes::BytesMut;
use speedy_net::http1::response::{parse_head, BodyDecoder, Framing, Piece, MAX_HEAD};

/// Responses read off one stream at most.
const MAX_RESPONSES: usize = 64;
/// Reads of a stream in pieces at most.
const MAX_READS: usize = 128;

/// What reading a stream gave: per response, its status, whether the head said
/// keep-alive, and its body; then how it ended.
#[derive(Debug, PartialEq, Eq)]
struct Read {
    responses: Vec<(u16, bool, Vec<u8>)>,
    /// An error (the message's first word, enough to tell the kinds apart), or `None`.
    error: Option<String>,
}

/// Reads `wire` delivered `step` bytes at a time; `head_only` says, per response, whether
/// it answers a HEAD request.
fn read(wire: &[u8], step: usize, head_only: &[bool]) -> Read {
    let mut input = wire.chunks(step);
    let mut buf = BytesMut::new();
    let mut out = Read {
        responses: Vec::new(),
        error: None,
    };
    let mut more = |buf: &mut BytesMut| match input.next() {
        Some(c) => {
            buf.extend_from_slice(c);
            true
        }
        None => false,
    };
    let fail = |out: &mut Read, e: std::io::Error| {
        out.error = Some(format!("{:?}", e.kind()));
    };
    for i in 0..MAX_RESPONSES {
        let h = head_only[i % head_only.len()];
        let head = loop {
            let before = buf.len();
            match parse_head(&mut buf, h) {
                Ok(Some(hd)) => {
                    assert_eq!(before - buf.len(), hd.wire_len, "a head takes its bytes");
                    let _ = hd.has_token("connection", "close");
                    if hd.is_interim() {
                        continue;
                    }
                    break hd;
                }
                Ok(None) => {
                    assert_eq!(buf.len(), before, "a partial head is left in place");
                    assert!(buf.len() <= MAX_HEAD, "more than MAX_HEAD buffered");
                    if !more(&mut buf) {
                        return out;
                    }
                }
                Err(e) => {
                    fail(&mut out, e);
                    return out;
                }
            }
        };
        if h || matches!(head.status, 100..=199 | 204 | 304) {
            assert_eq!(head.framing, Framing::None);
        }
        let mut dec = BodyDecoder::new(head.framing);
        let mut body = Vec::new();
        loop {
            let before = buf.len();
            match dec.decode(&mut buf) {
                Ok(Some(Piece::Data(d))) => {
                    assert!(!d.is_empty(), "an empty piece of body");
                    assert!(buf.len() + d.len() <= before);
                    body.extend_from_slice(&d);
                }
                Ok(Some(Piece::End)) => {
                    assert!(dec.is_done());
                    let again = buf.len();
                    assert_eq!(dec.decode(&mut buf).ok(), Some(Some(Piece::End)));
                    assert_eq!(buf.len(), again, "a finished body takes nothing");
                    break;
                }
                Ok(None) if more(&mut buf) => {}
                Ok(None) => {
                    if let Err(e) = dec.eof() {
                        fail(&mut out, e);
                        return out;
                    }
                    assert!(dec.is_done());
                    break;
                }
                Err(e) => {
                    fail(&mut out, e);
                    return out;
                }
            }
        }
        if let Framing::Length(n) = head.framing {
            assert_eq!(
                body.len() as u64,
                n,
                "a Content-Length body of another length"
            );
        }
        out.responses.push((head.status, head.keep_alive(), body));
        if head.framing == Framing::Close {
            return out;
        }
    }
    out
}

/// A stream of responses: the first byte says which answer HEAD requests (one bit per
/// response, repeating), the second how the bytes arrive (1 to 128 at a time, at most
/// [`MAX_READS`] reads, or all at once), the third whether byte 0xfe stands for 4 KiB
/// of `a` (heads and chunk lines up to [`MAX_HEAD`] and past it). Unless the stream was
/// made that long, it must give the same responses and end read at once and in pieces.
pub fn http1_response(data: &[u8]) {
    let mut inp = Input::new(data);
    let heads = inp.byte();
    let head_only: Vec<bool> = (0..8).map(|i| heads >> i & 1 == 1).collect();
    let step = 1 + inp.byte() as usize % 128;
    let expand = inp.byte() & 1 == 1;
    let raw = inp.rest();
    let wire: Vec<u8> = if expand {
        let mut w = Vec::with_capacity(raw.len());
        let mut n = 0;
        for &b in raw {
            if b == 0xfe && n < 20 {
                w.extend_from_slice(&[b'a'; 4096]);
                n += 1;
            } else {
                w.push(b);
            }
        }
        w
    } else {
        raw.to_vec()
    };
    // A head is parsed again from its start on each read: the reads are bounded to
    // keep an input's cost near its bytes' (1-byte reads of a 100 KiB head took
    // seconds, 64 reads of 80 KiB 20 ms; 3 pass MAX_HEAD in pieces).
    let reads = if expand { 3 } else { MAX_READS };
    let step = step.max(wire.len().div_ceil(reads));
    let whole = read(&wire, wire.len().max(1), &head_only);
    let pieces = read(&wire, step, &head_only);
    if wire.len() <= MAX_HEAD {
        assert_eq!(
            whole, pieces,
            "the stream read at once and {step} bytes at a time"
        );
    }
}
