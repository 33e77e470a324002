//! HPACK primitive types (RFC 7541 §5): integers with an N-bit prefix and string
//! literals, raw or Huffman-coded.
//!
//! Integer bound: a decoded integer must fit in a `u32` (values up to 2^32 - 1) and
//! use at most 5 continuation bytes; anything longer or larger is
//! [`DecodeError::IntegerOverflow`]. Every integer HPACK carries (an index, a string
//! length, a table size) is far below that in practice, and each has its own tighter
//! check afterwards.

use super::{huffman, DecodeError};
use bytes::BufMut;

/// Appends `value` as an HPACK integer with a `prefix_bits`-bit prefix (§5.1). `flags`
/// holds the bits of the first byte above the prefix (e.g. 0x80 for an indexed field).
///
/// # Panics
/// If `prefix_bits` is not in 1..=8.
pub fn encode_integer<D: BufMut>(value: u32, prefix_bits: u8, flags: u8, dst: &mut D) {
    assert!((1..=8).contains(&prefix_bits), "prefix must be 1..=8 bits");
    let max_prefix = (1u32 << prefix_bits) - 1;
    if value < max_prefix {
        dst.put_u8(flags | value as u8);
        return;
    }
    dst.put_u8(flags | max_prefix as u8);
    let mut rest = value - max_prefix;
    while rest >= 128 {
        dst.put_u8((rest & 0x7f) as u8 | 0x80);
        rest >>= 7;
    }
    dst.put_u8(rest as u8);
}

/// Decodes an HPACK integer with a `prefix_bits`-bit prefix from the start of `buf`
/// (the bits above the prefix are ignored). Returns the value and the bytes used.
///
/// # Panics
/// If `prefix_bits` is not in 1..=8.
pub fn decode_integer(buf: &[u8], prefix_bits: u8) -> Result<(u32, usize), DecodeError> {
    assert!((1..=8).contains(&prefix_bits), "prefix must be 1..=8 bits");
    let max_prefix = (1u32 << prefix_bits) - 1;
    let first = *buf.first().ok_or(DecodeError::Truncated)?;
    let mut value = u64::from(u32::from(first) & max_prefix);
    if value < u64::from(max_prefix) {
        return Ok((value as u32, 1));
    }
    let mut shift = 0u32;
    for (i, &b) in buf[1..].iter().enumerate() {
        if shift > 28 {
            return Err(DecodeError::IntegerOverflow);
        }
        value += u64::from(b & 0x7f) << shift;
        if value > u64::from(u32::MAX) {
            return Err(DecodeError::IntegerOverflow);
        }
        if b & 0x80 == 0 {
            return Ok((value as u32, i + 2));
        }
        shift += 7;
    }
    Err(DecodeError::Truncated)
}

/// Appends `s` as a string literal (§5.2): Huffman-coded if `huffman`, else raw.
pub fn encode_string<D: BufMut>(s: &[u8], huffman: bool, dst: &mut D) {
    if huffman {
        encode_integer(huffman::encoded_len(s) as u32, 7, 0x80, dst);
        huffman::encode(s, dst);
    } else {
        encode_integer(s.len() as u32, 7, 0, dst);
        dst.put_slice(s);
    }
}

/// Where a decoded string literal's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Str {
    /// Raw: this range of the input.
    Input(usize, usize),
    /// Huffman-coded: decoded into this range of the scratch buffer.
    Scratch(usize, usize),
}

impl Str {
    /// The bytes, given the input and scratch buffers.
    pub(crate) fn get<'a>(self, input: &'a [u8], scratch: &'a [u8]) -> &'a [u8] {
        match self {
            Str::Input(a, b) => &input[a..b],
            Str::Scratch(a, b) => &scratch[a..b],
        }
    }
}

/// Decodes the string literal at `input[*pos..]`, advancing `pos`. Raw strings stay in
/// `input`; Huffman-coded ones are decoded onto the end of `scratch`. An encoded
/// length over `max_len` fails before any decoding.
pub(crate) fn decode_string(
    input: &[u8],
    pos: &mut usize,
    max_len: usize,
    scratch: &mut Vec<u8>,
) -> Result<Str, DecodeError> {
    let rest = &input[*pos..];
    let huffman = rest.first().is_some_and(|b| b & 0x80 != 0);
    let (len, used) = decode_integer(rest, 7)?;
    let len = len as usize;
    if len > max_len {
        return Err(DecodeError::StringTooLong { len, max: max_len });
    }
    let start = *pos + used;
    let end = start
        .checked_add(len)
        .filter(|&e| e <= input.len())
        .ok_or(DecodeError::Truncated)?;
    *pos = end;
    if !huffman {
        return Ok(Str::Input(start, end));
    }
    let from = scratch.len();
    huffman::decode(&input[start..end], scratch)?;
    Ok(Str::Scratch(from, scratch.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(value: u32, prefix: u8) -> Vec<u8> {
        let mut v = Vec::new();
        encode_integer(value, prefix, 0, &mut v);
        v
    }

    /// RFC 7541 C.1.1-C.1.3.
    #[test]
    fn rfc7541_c1_integer_examples() {
        assert_eq!(int(10, 5), [0x0a]);
        assert_eq!(int(1337, 5), [0x1f, 0x9a, 0x0a]);
        assert_eq!(int(42, 8), [0x2a]);
        assert_eq!(decode_integer(&[0xea], 5), Ok((10, 1)));
        assert_eq!(decode_integer(&[0x1f, 0x9a, 0x0a, 0xff], 5), Ok((1337, 3)));
        assert_eq!(decode_integer(&[0x2a], 8), Ok((42, 1)));
    }

    #[test]
    fn integers_round_trip_at_every_prefix_and_boundary() {
        for prefix in 1..=8 {
            let max_prefix = (1u32 << prefix) - 1;
            for v in [
                0,
                1,
                max_prefix - 1,
                max_prefix,
                max_prefix + 1,
                127,
                128,
                16_383,
                16_384,
                u32::MAX - 1,
                u32::MAX,
            ] {
                let enc = int(v, prefix);
                assert_eq!(
                    decode_integer(&enc, prefix),
                    Ok((v, enc.len())),
                    "{v} with {prefix}-bit prefix"
                );
            }
        }
    }

    #[test]
    fn rejects_integer_over_u32() {
        // 2^32 with a 5-bit prefix: 31 + (2^32 - 31).
        let mut enc = vec![0x1f];
        let mut rest = (1u64 << 32) - 31;
        while rest >= 128 {
            enc.push((rest & 0x7f) as u8 | 0x80);
            rest >>= 7;
        }
        enc.push(rest as u8);
        assert_eq!(decode_integer(&enc, 5), Err(DecodeError::IntegerOverflow));
    }

    #[test]
    fn rejects_integer_with_too_many_continuation_bytes() {
        // Value 31 padded with zero-valued continuation bytes: six of them.
        let enc = [0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00];
        assert_eq!(decode_integer(&enc, 5), Err(DecodeError::IntegerOverflow));
    }

    #[test]
    fn rejects_truncated_integer() {
        assert_eq!(
            decode_integer(&[0x1f, 0x9a], 5),
            Err(DecodeError::Truncated)
        );
        assert_eq!(decode_integer(&[], 5), Err(DecodeError::Truncated));
    }

    #[test]
    fn rejects_string_over_the_length_bound_before_decoding() {
        let mut enc = Vec::new();
        encode_string(&[b'x'; 100], false, &mut enc);
        let err = decode_string(&enc, &mut 0, 99, &mut Vec::new());
        assert_eq!(err, Err(DecodeError::StringTooLong { len: 100, max: 99 }));
    }

    #[test]
    fn rejects_string_longer_than_the_input() {
        let enc = [0x05, b'a', b'b'];
        assert_eq!(
            decode_string(&enc, &mut 0, 1000, &mut Vec::new()),
            Err(DecodeError::Truncated)
        );
    }
}
