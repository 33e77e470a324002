//! HTTP/1.1 responses read off a byte stream, sans IO: [`parse_head`] takes a response
//! head from the front of a buffer and says how its body ends (RFC 9112 §6.3), and
//! [`BodyDecoder`] cuts that body out of the bytes that follow, leaving the next
//! response's bytes in place. The caller reads the socket and calls again when either
//! asks for more. The loader's HTTP/1.1 driver and the pipelining client both read
//! responses this way.

use bytes::{Buf, Bytes, BytesMut};
use std::io;

/// The largest response head (status line and headers), and the longest chunk-size or
/// trailer line, read before giving up: a server that never ends one cannot make the
/// client buffer more.
pub const MAX_HEAD: usize = 64 << 10;
/// Most header fields in a response head.
pub const MAX_HEADERS: usize = 128;

/// How a response body ends (RFC 9112 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// No body: a response to HEAD, 1xx, 204 or 304.
    None,
    /// `Content-Length` bytes.
    Length(u64),
    /// Chunked transfer coding, up to the last chunk and its trailers.
    Chunked,
    /// Everything up to the end of the connection.
    Close,
}

/// A response head.
#[derive(Debug)]
pub struct ResponseHead {
    /// The status code.
    pub status: u16,
    /// HTTP/1.`minor`.
    pub minor: u8,
    /// The header fields in order, names lowercased.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The head's size on the wire, blank line included.
    pub wire_len: usize,
    /// How the body ends.
    pub framing: Framing,
}

impl ResponseHead {
    /// An interim response (1xx other than 101): the final one follows on the stream.
    pub fn is_interim(&self) -> bool {
        (100..200).contains(&self.status) && self.status != 101
    }

    /// Whether the connection may carry another response after this one: HTTP/1.1
    /// unless `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`, never
    /// after a body that ends with the connection.
    pub fn keep_alive(&self) -> bool {
        if self.framing == Framing::Close {
            return false;
        }
        if self.minor == 0 {
            self.has_token("connection", "keep-alive")
        } else {
            !self.has_token("connection", "close")
        }
    }

    /// Whether a comma-separated field `name` lists `token` (case-insensitive).
    pub fn has_token(&self, name: &str, token: &str) -> bool {
        self.headers.iter().any(|(n, v)| {
            n == name
                && v.split(|&c| c == b',')
                    .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
        })
    }
}

fn bad(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}

/// Takes a response head off the front of `buf`: `Ok(None)` when it is not all there yet
/// (read more and call again), an error when it is malformed or longer than
/// [`MAX_HEAD`]. `head_only`: the response to a HEAD request (no body whatever it says).
pub fn parse_head(buf: &mut BytesMut, head_only: bool) -> io::Result<Option<ResponseHead>> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut fields);
    let n = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
            return Err(bad(format!(
                "response head over {} KiB without its end",
                MAX_HEAD >> 10
            )))
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(bad(format!("bad response head: {e}"))),
    };
    let status = resp.code.unwrap_or(0);
    let headers: Vec<(String, Vec<u8>)> = resp
        .headers
        .iter()
        .map(|h| (h.name.to_ascii_lowercase(), h.value.to_vec()))
        .collect();
    let mut head = ResponseHead {
        status,
        minor: resp.version.unwrap_or(1),
        headers,
        wire_len: n,
        framing: Framing::None,
    };
    head.framing = framing(&head, head_only)?;
    buf.advance(n);
    Ok(Some(head))
}

/// RFC 9112 §6.3: no body for HEAD, 1xx, 204 and 304; then a transfer coding whose last
/// coding is chunked; then one `Content-Length` (repeats must agree); else the
/// connection's end (a transfer coding without chunked last ends that way too).
fn framing(head: &ResponseHead, head_only: bool) -> io::Result<Framing> {
    if head_only || (100..200).contains(&head.status) || head.status == 204 || head.status == 304 {
        return Ok(Framing::None);
    }
    let mut coded = false;
    let mut chunked = false;
    let mut length = None;
    for (n, v) in &head.headers {
        if n == "transfer-encoding" {
            coded = true;
            chunked = v
                .rsplit(|&c| c == b',')
                .next()
                .is_some_and(|t| t.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if n == "content-length" {
            let len = std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    bad(format!(
                        "bad content-length {:?}",
                        String::from_utf8_lossy(v)
                    ))
                })?;
            if length.is_some_and(|l| l != len) {
                return Err(bad("conflicting content-length headers".into()));
            }
            length = Some(len);
        }
    }
    Ok(match (coded, chunked, length) {
        (true, true, _) => Framing::Chunked,
        (true, false, _) => Framing::Close,
        (false, _, Some(n)) => Framing::Length(n),
        (false, _, None) => Framing::Close,
    })
}

/// What [`BodyDecoder::decode`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece {
    /// Body bytes, in order.
    Data(Bytes),
    /// The body ended; the bytes after it belong to the next response.
    End,
}

#[derive(Debug)]
enum State {
    Length(u64),
    ChunkSize,
    ChunkData(u64),
    ChunkEnd,
    Trailers,
    Close,
    Done,
}

/// Cuts one body out of a byte stream.
#[derive(Debug)]
pub struct BodyDecoder {
    state: State,
}

impl BodyDecoder {
    /// A decoder for a body framed as `framing`.
    pub fn new(framing: Framing) -> BodyDecoder {
        let state = match framing {
            Framing::None | Framing::Length(0) => State::Done,
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::ChunkSize,
            Framing::Close => State::Close,
        };
        BodyDecoder { state }
    }

    /// The next piece of the body from the front of `buf`: `Ok(None)` when it needs more
    /// bytes (read more and call again; at the end of the stream call [`Self::eof`]).
    /// After [`Piece::End`] it keeps returning `End` and takes nothing.
    pub fn decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<Piece>> {
        loop {
            match self.state {
                State::Done => return Ok(Some(Piece::End)),
                State::Length(left) | State::ChunkData(left) => {
                    if buf.is_empty() {
                        return Ok(None);
                    }
                    let n = (buf.len() as u64).min(left);
                    let rest = left - n;
                    self.state = match self.state {
                        State::Length(_) if rest == 0 => State::Done,
                        State::Length(_) => State::Length(rest),
                        _ if rest == 0 => State::ChunkEnd,
                        _ => State::ChunkData(rest),
                    };
                    return Ok(Some(Piece::Data(buf.split_to(n as usize).freeze())));
                }
                State::Close => {
                    if buf.is_empty() {
                        return Ok(None);
                    }
                    let n = buf.len();
                    return Ok(Some(Piece::Data(buf.split_to(n).freeze())));
                }
                State::ChunkSize => {
                    let Some(line) = take_line(buf)? else {
                        return Ok(None);
                    };
                    let size = std::str::from_utf8(&line)
                        .ok()
                        .and_then(|l| l.split(';').next())
                        .and_then(|s| u64::from_str_radix(s.trim(), 16).ok())
                        .ok_or_else(|| {
                            bad(format!(
                                "bad chunk size {:?}",
                                String::from_utf8_lossy(&line)
                            ))
                        })?;
                    self.state = if size == 0 {
                        State::Trailers
                    } else {
                        State::ChunkData(size)
                    };
                }
                State::ChunkEnd => {
                    let Some(line) = take_line(buf)? else {
                        return Ok(None);
                    };
                    if !line.is_empty() {
                        return Err(bad("chunk data longer than its size".into()));
                    }
                    self.state = State::ChunkSize;
                }
                State::Trailers => {
                    let Some(line) = take_line(buf)? else {
                        return Ok(None);
                    };
                    if line.is_empty() {
                        self.state = State::Done;
                    }
                }
            }
        }
    }

    /// The stream ended (after [`Self::decode`] asked for more): `Ok` when that ends the
    /// body (a close-delimited body, or a chunked one cut inside its trailers), else
    /// an error naming where it was cut.
    pub fn eof(&mut self) -> io::Result<()> {
        let cut = |w: &str| Err(io::Error::new(io::ErrorKind::UnexpectedEof, w.to_string()));
        match self.state {
            State::Done | State::Close | State::Trailers => {
                self.state = State::Done;
                Ok(())
            }
            State::Length(_) => cut("connection closed inside the body"),
            State::ChunkSize | State::ChunkEnd => cut("connection closed inside a chunked body"),
            State::ChunkData(_) => cut("connection closed inside a chunk"),
        }
    }

    /// Whether the whole body has been decoded.
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done)
    }
}

/// One line off the front of `buf` without its LF or CRLF; `None` until it is all there.
fn take_line(buf: &mut BytesMut) -> io::Result<Option<Bytes>> {
    match buf.iter().position(|&c| c == b'\n') {
        Some(i) => {
            let mut line = buf.split_to(i + 1);
            line.truncate(if i > 0 && line[i - 1] == b'\r' {
                i - 1
            } else {
                i
            });
            Ok(Some(line.freeze()))
        }
        None if buf.len() > MAX_HEAD => {
            Err(bad(format!("a chunk line over {} KiB", MAX_HEAD >> 10)))
        }
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `wire` `step` bytes at a time; returns each response's status, body and
    /// keep-alive, and what is left.
    fn read_all(
        wire: &[u8],
        step: usize,
        head_only: &[bool],
    ) -> io::Result<Vec<(u16, Vec<u8>, bool)>> {
        let mut input = wire.chunks(step);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let mut more = |buf: &mut BytesMut| match input.next() {
            Some(c) => {
                buf.extend_from_slice(c);
                true
            }
            None => false,
        };
        for &h in head_only {
            let head = loop {
                match parse_head(&mut buf, h)? {
                    Some(hd) if hd.is_interim() => continue,
                    Some(hd) => break hd,
                    None if more(&mut buf) => {}
                    None => return Err(io::ErrorKind::UnexpectedEof.into()),
                }
            };
            let mut dec = BodyDecoder::new(head.framing);
            let mut body = Vec::new();
            loop {
                match dec.decode(&mut buf)? {
                    Some(Piece::Data(d)) => body.extend_from_slice(&d),
                    Some(Piece::End) => break,
                    None if more(&mut buf) => {}
                    None => {
                        dec.eof()?;
                        break;
                    }
                }
            }
            out.push((head.status, body, head.keep_alive()));
        }
        Ok(out)
    }

    const WIRE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n\
        HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello\
        HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3;x=y\r\nabc\r\n2\nde\r\n0\r\nt: 1\r\n\r\n\
        HTTP/1.1 200 OK\r\ncontent-length: 99\r\n\r\n\
        HTTP/1.1 204 No Content\r\ncontent-length: 7\r\n\r\n\
        HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 1\r\n\r\nx\
        HTTP/1.1 404 Not Found\r\n\r\nrest of the stream";

    #[test]
    fn every_framing_in_one_stream_at_every_split() {
        let want = vec![
            (200, b"hello".to_vec(), true),
            (200, b"abcde".to_vec(), true),
            (200, Vec::new(), true),
            (204, Vec::new(), true),
            (200, b"x".to_vec(), true),
            (404, b"rest of the stream".to_vec(), false),
        ];
        for step in [1, 2, 3, 7, 64, WIRE.len()] {
            let got = read_all(WIRE, step, &[false, false, true, false, false, false]).unwrap();
            assert_eq!(got, want, "step {step}");
        }
    }

    #[test]
    fn bad_and_cut_responses_are_errors_naming_the_problem() {
        let err = |wire: &[u8]| read_all(wire, 5, &[false]).unwrap_err().to_string();
        assert!(
            err(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort").contains("inside the body")
        );
        assert!(
            err(b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n")
                .contains("conflicting")
        );
        assert!(
            err(b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n").contains("bad content-length")
        );
        assert!(
            err(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n")
                .contains("bad chunk size")
        );
        assert!(
            err(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabc\r\n")
                .contains("longer than its size")
        );
        assert!(
            err(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab")
                .contains("inside a chunk")
        );
        assert!(err(b"HTTTP/1.1 200 OK\r\n\r\n").contains("bad response head"));
        let endless = [b"HTTP/1.1 200 OK\r\n".to_vec(), vec![b'x'; MAX_HEAD + 10]].concat();
        assert!(err(&endless).contains("without its end"));
        // A transfer coding without chunked last is delimited by the connection's end.
        let got = read_all(
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\ncontent-length: 2\r\n\r\nabcd",
            3,
            &[false],
        );
        assert_eq!(got.unwrap(), vec![(200, b"abcd".to_vec(), false)]);
    }
}
