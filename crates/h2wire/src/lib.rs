//! # h2wire: HTTP/2 on the wire, sans IO
//!
//! The byte-exact layer of HTTP/2: frames (RFC 9113 §4, §6) and HPACK field
//! compression (RFC 7541). No sockets, no async, no clocks, no threads: bytes go in
//! through decoders and come out of encoders, so the same code serves a load generator,
//! a server, a proxy and a fuzzer.
//!
//! - [`frame`]: the connection [`PREFACE`](frame::PREFACE), typed frames borrowing
//!   their payloads, [`FrameDecoder`](frame::FrameDecoder) with the per-frame rules of
//!   §6 and the CONTINUATION sequencing rule, and encoders appending to any
//!   [`bytes::BufMut`] (`Vec<u8>`, `BytesMut`);
//! - [`hpack`]: integer and string primitives, the Huffman code, the static and
//!   dynamic tables, and the [`Decoder`](hpack::Decoder) and
//!   [`Encoder`](hpack::Encoder) one connection needs per direction;
//! - [`ErrorCode`] and [`FrameError`]: the §7 codes and the connection-or-stream
//!   classification of §5.4;
//! - [`server`]: a sans-IO server connection on top of the two: stream states (§5.1),
//!   flow control both ways (§6.9), request validation (§8.3), server push (§8.4),
//!   GOAWAY, and response DATA scheduled by RFC 9218 urgency.
//!
//! What it is not (yet): there is no client connection and no RFC 7540 priority tree
//! (priority signals are reduced to RFC 9218 urgencies). Below [`server`], the one
//! piece of cross-frame state is the field-block rule of §4.3 (CONTINUATION must follow
//! an unfinished HEADERS or PUSH_PROMISE on the same stream, with nothing in between),
//! because it is framing, not stream state.
//!
//! A request on the wire and back:
//!
//! ```
//! use h2wire::frame::{encode_header_block, Frame, FrameDecoder, StreamId, DEFAULT_MAX_FRAME_SIZE};
//! use h2wire::hpack::{Decoder, Encoder};
//!
//! let mut block = Vec::new();
//! Encoder::new().encode([(":method", "GET"), (":scheme", "https"), (":path", "/"), (":authority", "example.com")], &mut block);
//! let mut wire = Vec::new();
//! encode_header_block(StreamId(1), &block, true, None, DEFAULT_MAX_FRAME_SIZE, &mut wire);
//!
//! let (frame, used) = FrameDecoder::new().decode(&wire).unwrap().unwrap();
//! assert_eq!(used, wire.len());
//! let Frame::Headers(headers) = frame else { panic!() };
//! let mut fields = Vec::new();
//! Decoder::new().decode(headers.fragment, |n, v| fields.push((n.to_vec(), v.to_vec()))).unwrap();
//! assert_eq!(fields[3], (b":authority".to_vec(), b"example.com".to_vec()));
//! ```

#![warn(missing_docs)]

pub mod error;
pub mod frame;
pub mod hpack;
pub mod server;

pub use error::{ErrorCode, FrameError};
