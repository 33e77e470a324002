//! The HPACK Huffman code (RFC 7541 §5.2, Appendix B): encoding, and decoding with the
//! padding rules of §5.2.
//!
//! Decoding is table-driven: a 256-entry table resolves every code of 8 bits or fewer
//! (letters, digits, space and `%&*,-./:;=_`) from one byte of lookahead; longer
//! codes are found by canonical-code limits, one comparison per code length. Both
//! tables are built at compile time from the Appendix B table (`huffman_table.rs`).

use super::huffman_table::{CODES, EOS};
use super::DecodeError;
use bytes::BufMut;

/// The longest code, in bits (EOS and three control bytes).
const MAX_LEN: usize = 30;

/// The canonical form of the code: per length, the first code, how many codes have
/// that length, and where they start in `sorted` (symbols ordered by (length, value)).
struct Canonical {
    first: [u32; MAX_LEN + 1],
    count: [u32; MAX_LEN + 1],
    offset: [u32; MAX_LEN + 1],
    sorted: [u16; 257],
}

const fn build_canonical() -> Canonical {
    let mut c = Canonical {
        first: [0; MAX_LEN + 1],
        count: [0; MAX_LEN + 1],
        offset: [0; MAX_LEN + 1],
        sorted: [0; 257],
    };
    let mut n = 0;
    let mut code = 0u32;
    let mut len = 1;
    while len <= MAX_LEN {
        c.offset[len] = n as u32;
        c.first[len] = code;
        let mut sym = 0;
        while sym < 257 {
            if CODES[sym].1 as usize == len {
                c.sorted[n] = sym as u16;
                n += 1;
                c.count[len] += 1;
            }
            sym += 1;
        }
        code = (code + c.count[len]) << 1;
        len += 1;
    }
    c
}

const CANONICAL: Canonical = build_canonical();

/// One past the largest 32-bit left-aligned window that starts with a code of `len`
/// bits or fewer.
const fn limit(len: usize) -> u64 {
    ((CANONICAL.first[len] + CANONICAL.count[len]) as u64) << (32 - len)
}

/// `(symbol, length)` of the code at the top of a left-aligned 32-bit window.
const fn lookup_slow(window: u32, from_len: usize) -> (u16, u32) {
    let mut len = from_len;
    while len < MAX_LEN && (window as u64) >= limit(len) {
        len += 1;
    }
    let index = CANONICAL.offset[len] + ((window >> (32 - len)) - CANONICAL.first[len]);
    (CANONICAL.sorted[index as usize], len as u32)
}

/// For each first byte, `symbol | length << 9` if a code of at most 8 bits starts the
/// byte, else 0.
const FAST: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut b = 0;
    while b < 256 {
        let (sym, len) = lookup_slow((b as u32) << 24, 1);
        if len <= 8 {
            t[b] = sym | (len as u16) << 9;
        }
        b += 1;
    }
    t
};

#[inline]
fn lookup(window: u32) -> (u16, u32) {
    let fast = FAST[(window >> 24) as usize];
    if fast != 0 {
        (fast & 0x1ff, u32::from(fast >> 9))
    } else {
        lookup_slow(window, 9)
    }
}

/// Bytes the Huffman encoding of `src` takes, padding included.
pub fn encoded_len(src: &[u8]) -> usize {
    let bits: usize = src
        .iter()
        .map(|&b| usize::from(CODES[usize::from(b)].1))
        .sum();
    bits.div_ceil(8)
}

/// Appends the Huffman encoding of `src`, padded with the most significant bits of
/// EOS (ones) to a whole byte (§5.2).
pub fn encode<D: BufMut>(src: &[u8], dst: &mut D) {
    let mut acc = 0u64;
    let mut bits = 0u32;
    for &b in src {
        let (code, len) = CODES[usize::from(b)];
        acc = (acc << len) | u64::from(code);
        bits += u32::from(len);
        if bits >= 32 {
            bits -= 32;
            dst.put_u32((acc >> bits) as u32);
        }
    }
    while bits >= 8 {
        bits -= 8;
        dst.put_u8((acc >> bits) as u8);
    }
    if bits > 0 {
        dst.put_u8(((acc << (8 - bits)) as u8) | (0xff >> bits));
    }
}

/// Appends the decoding of `src` to `dst`.
///
/// Fails with [`DecodeError::InvalidHuffman`] if the string contains EOS, or ends in
/// more than 7 bits of padding, or in padding that is not all ones (§5.2).
pub fn decode(src: &[u8], dst: &mut Vec<u8>) -> Result<(), DecodeError> {
    dst.reserve(src.len() + src.len() / 2);
    let mut acc = 0u64;
    let mut bits = 0u32;
    let mut input = src.iter();
    loop {
        while bits <= 56 {
            match input.next() {
                Some(&b) => {
                    acc = (acc << 8) | u64::from(b);
                    bits += 8;
                }
                None => break,
            }
        }
        if bits == 0 {
            break;
        }
        // Bits above `bits` are stale; both shifts push them out of the window.
        let window = if bits >= 32 {
            (acc >> (bits - 32)) as u32
        } else {
            (acc << (32 - bits)) as u32
        };
        let (sym, len) = lookup(window);
        if len > bits {
            break;
        }
        if usize::from(sym) == EOS {
            return Err(DecodeError::InvalidHuffman("EOS inside a string"));
        }
        dst.push(sym as u8);
        bits -= len;
    }
    if bits > 7 {
        return Err(DecodeError::InvalidHuffman("padding longer than 7 bits"));
    }
    let mask = (1u64 << bits) - 1;
    if acc & mask != mask {
        return Err(DecodeError::InvalidHuffman(
            "padding not the most significant bits of EOS",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code of Appendix B is the canonical code its length gives (so the decoder's
    /// canonical tables decode exactly the published codes).
    #[test]
    fn every_code_is_the_canonical_code_for_its_length() {
        let mut order: Vec<usize> = (0..257).collect();
        order.sort_by_key(|&s| (CODES[s].1, s));
        let mut code = 0u32;
        let mut prev_len = CODES[order[0]].1;
        for (i, &sym) in order.iter().enumerate() {
            let (c, len) = CODES[sym];
            if i > 0 {
                code = (code + 1) << (len - prev_len);
            }
            prev_len = len;
            assert_eq!(c, code, "symbol {sym}");
            assert!(c < 1 << len, "symbol {sym}: code wider than its length");
        }
    }

    /// No code is a prefix of another, checked pairwise over all 257 codes.
    #[test]
    fn the_code_is_prefix_free() {
        for (a, &(ca, la)) in CODES.iter().enumerate() {
            for (b, &(cb, lb)) in CODES.iter().enumerate() {
                if a != b && la <= lb {
                    assert_ne!(cb >> (lb - la), ca, "code {a} is a prefix of code {b}");
                }
            }
        }
    }

    /// The Kraft sum over the 257 codes (EOS included) is exactly 1: the code is
    /// complete, so every bit string decodes or is a proper prefix of a code.
    #[test]
    fn the_code_is_complete() {
        let sum: u64 = CODES
            .iter()
            .map(|&(_, len)| 1u64 << (MAX_LEN - usize::from(len)))
            .sum();
        assert_eq!(sum, 1 << MAX_LEN);
        assert_eq!(CODES[EOS], (0x3fff_ffff, 30));
    }

    #[test]
    fn every_symbol_round_trips_alone_and_in_context() {
        for sym in 0..=255u8 {
            for s in [vec![sym], vec![b'a', sym, b'z', sym, sym]] {
                let mut enc = Vec::new();
                encode(&s, &mut enc);
                assert_eq!(enc.len(), encoded_len(&s));
                let mut dec = Vec::new();
                decode(&enc, &mut dec).unwrap();
                assert_eq!(dec, s);
            }
        }
    }

    #[test]
    fn rejects_padding_longer_than_seven_bits() {
        // 'a' is 00011 (5 bits); then 11 bits of ones: padding of 11 bits.
        assert!(matches!(
            decode(&[0b0001_1111, 0xff], &mut Vec::new()),
            Err(DecodeError::InvalidHuffman(_))
        ));
        // A lone all-ones byte: 8 bits of padding.
        assert!(decode(&[0xff], &mut Vec::new()).is_err());
    }

    #[test]
    fn rejects_padding_that_is_not_all_ones() {
        // 'a' (00011) then 110: padding with a zero.
        assert!(decode(&[0b0001_1110], &mut Vec::new()).is_err());
    }

    #[test]
    fn rejects_eos_in_a_string() {
        // EOS (30 ones) followed by two ones of padding.
        assert!(decode(&[0xff, 0xff, 0xff, 0xff], &mut Vec::new()).is_err());
    }

    #[test]
    fn empty_input_decodes_to_nothing() {
        let mut out = Vec::new();
        decode(&[], &mut out).unwrap();
        assert!(out.is_empty());
    }
}
