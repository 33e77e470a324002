//! A deflate encoder for header blocks of our own: fixed-Huffman blocks (RFC 1951
//! §3.2.6) with matches found through a hash of three bytes into the stream's window,
//! each block ended by a sync flush. Its output is an ordinary zlib stream with a preset
//! dictionary (RFC 1950), which any inflater, stock zlib included, decodes.
//!
//! Why: zlib builds dynamic Huffman trees for every flushed block whatever its level or
//! strategy, and on header blocks of a few hundred bytes that costs more than finding
//! the matches (a `perf` profile of `speedy serve` answering SPDY requests: a quarter of
//! the server's CPU in deflate, half of it building trees). Fixed codes cost a few bits a
//! symbol over dynamic ones; header blocks repeat earlier ones almost whole, so matches,
//! not codes, make the size.
//!
//! The same calls as [`crate::zlib::Deflater`]: [`FixedDeflater::deflate`] with
//! [`Flush::None`], `Sync` or `Full`; [`FixedDeflater::set_strategy`] to code a stretch
//! as literals only (CRIME-safe values); [`FixedDeflater::park`] to keep only the
//! history while idle.

use crate::zlib::{adler32, Flush, Strategy};

/// log2 of the hash table's size.
const HASH_BITS: u32 = 10;
/// The shortest and longest match deflate can code.
const MIN_MATCH: usize = 3;
const MAX_MATCH: usize = 258;

/// Length codes 257..=285: base length and extra bits (RFC 1951 §3.2.5).
const LEN_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
/// Distance codes 0..=29: base distance and extra bits.
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

/// The fixed literal/length code of `sym` (0..=287): its bits, reversed for the
/// LSB-first bit stream, and its length.
fn lit_code(sym: u16) -> (u32, u32) {
    let (code, len) = match sym {
        0..=143 => (0x30 + sym as u32, 8),
        144..=255 => (0x190 + (sym as u32 - 144), 9),
        256..=279 => (sym as u32 - 256, 7),
        _ => (0xc0 + (sym as u32 - 280), 8),
    };
    (reverse(code, len), len)
}

fn reverse(code: u32, len: u32) -> u32 {
    code.reverse_bits() >> (32 - len)
}

/// Bits to bytes, least significant first (RFC 1951 §3.1.1).
#[derive(Default)]
struct Bits {
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, out: &mut Vec<u8>, bits: u32, count: u32) {
        self.acc |= (bits as u64) << self.n;
        self.n += count;
        while self.n >= 8 {
            out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// Pads to a byte boundary with zero bits.
    fn align(&mut self, out: &mut Vec<u8>) {
        if self.n > 0 {
            out.push(self.acc as u8);
            self.acc = 0;
            self.n = 0;
        }
    }
}

/// A zlib stream compressed with fixed Huffman codes; see the module's documentation.
pub struct FixedDeflater {
    level_flags: u8,
    window_bits: u8,
    dictionary: &'static [u8],
    started: bool,
    /// Uncompressed history (the dictionary first); matches reach back at most the window.
    hist: Vec<u8>,
    /// Matches may not start before this index of `hist` (after a full flush).
    floor: usize,
    /// Positions of `hist` up to here are in `head`.
    hashed: usize,
    /// Per hash of three bytes, its latest position in `hist` plus one (0: none). Empty
    /// while parked.
    head: Vec<u32>,
    bits: Bits,
    /// A fixed-Huffman block is open (its header written, no end-of-block yet).
    in_block: bool,
    literals_only: bool,
}

impl FixedDeflater {
    /// A stream with a window of `2^window_bits` bytes (9..=15) and a preset dictionary;
    /// `level` only sets the header's FLEVEL field, as zlib would for that level.
    pub fn new(level: u32, window_bits: u8, dictionary: &'static [u8]) -> FixedDeflater {
        let level_flags = match level {
            0 | 1 => 0,
            2..=5 => 1,
            6 => 2,
            _ => 3,
        };
        FixedDeflater {
            level_flags,
            window_bits: window_bits.clamp(9, 15),
            dictionary,
            started: false,
            hist: Vec::new(),
            floor: 0,
            hashed: 0,
            head: Vec::new(),
            bits: Bits::default(),
            in_block: false,
            literals_only: false,
        }
    }

    fn window(&self) -> usize {
        1 << self.window_bits
    }

    fn hash(b: &[u8]) -> usize {
        let v = u32::from_le_bytes([b[0], b[1], b[2], 0]);
        (v.wrapping_mul(0x9e37_79b1) >> (32 - HASH_BITS)) as usize
    }

    /// Puts the positions of `hist` from `hashed` on (those with three bytes) into `head`.
    fn hash_upto(&mut self, end: usize) {
        let end = end.min(self.hist.len().saturating_sub(MIN_MATCH - 1));
        while self.hashed < end {
            let h = Self::hash(&self.hist[self.hashed..]);
            self.head[h] = self.hashed as u32 + 1;
            self.hashed += 1;
        }
    }

    /// Starts the stream (zlib header, history from the dictionary) or resumes it after
    /// [`FixedDeflater::park`]; drops history beyond two windows.
    fn prepare(&mut self, out: &mut Vec<u8>) {
        let w = self.window();
        if !self.started {
            self.started = true;
            let cmf = 0x08 | ((self.window_bits - 8) << 4);
            let mut flg = (self.level_flags << 6) | 0x20;
            flg += (31 - ((cmf as u16 * 256 + flg as u16) % 31) as u8) % 31;
            out.extend_from_slice(&[cmf, flg]);
            out.extend_from_slice(&adler32(self.dictionary).to_be_bytes());
            let d = self.dictionary;
            self.hist = d[d.len().saturating_sub(w)..].to_vec();
        }
        if self.hist.len() > 2 * w {
            let cut = self.hist.len() - w;
            self.hist.drain(..cut);
            self.floor = self.floor.saturating_sub(cut);
            self.hashed = self.floor;
            self.head.clear();
        }
        if self.head.is_empty() {
            self.head = vec![0; 1 << HASH_BITS];
            self.hashed = self.floor;
            self.hash_upto(self.hist.len());
        }
    }

    /// Compresses `input` into `out`; `Sync` and `Full` end the block at a byte boundary
    /// (`00 00 ff ff`), `Full` also forgets the history.
    pub fn deflate(&mut self, input: &[u8], out: &mut Vec<u8>, flush: Flush) {
        self.prepare(out);
        if !input.is_empty() && !self.in_block {
            // BFINAL 0, BTYPE 01 (fixed Huffman codes).
            self.bits.put(out, 0b010, 3);
            self.in_block = true;
        }
        let start = self.hist.len();
        self.hist.extend_from_slice(input);
        // Positions before the new input that now have their three bytes.
        self.hash_upto(start);
        let w = self.window();
        let mut i = start;
        while i < self.hist.len() {
            let rest = self.hist.len() - i;
            let mut best = 0;
            let mut dist = 0;
            if !self.literals_only && rest >= MIN_MATCH {
                let h = Self::hash(&self.hist[i..]);
                let cand = self.head[h] as usize;
                if cand > self.floor && i - (cand - 1) <= w {
                    let c = cand - 1;
                    let max = rest.min(MAX_MATCH);
                    let len = (0..max)
                        .position(|k| self.hist[c + k] != self.hist[i + k])
                        .unwrap_or(max);
                    if len >= MIN_MATCH {
                        best = len;
                        dist = i - c;
                    }
                }
            }
            if best >= MIN_MATCH {
                self.put_match(out, best, dist);
                if !self.literals_only {
                    self.hash_upto(i + best);
                }
                i += best;
            } else {
                let (code, len) = lit_code(self.hist[i] as u16);
                self.bits.put(out, code, len);
                if !self.literals_only {
                    self.hash_upto(i + 1);
                }
                i += 1;
            }
        }
        if self.literals_only {
            // Nothing later may refer to these bytes: not hashed, and with the full flush
            // that follows them, behind the floor.
            self.hashed = self.hist.len();
        }
        match flush {
            Flush::None | Flush::Block => {}
            Flush::Sync | Flush::Full => {
                if self.in_block {
                    let (code, len) = lit_code(256);
                    self.bits.put(out, code, len);
                    self.in_block = false;
                }
                // An empty stored block: BFINAL 0, BTYPE 00, aligned, LEN 0, NLEN ffff.
                self.bits.put(out, 0, 3);
                self.bits.align(out);
                out.extend_from_slice(&[0, 0, 0xff, 0xff]);
                if flush == Flush::Full {
                    self.floor = self.hist.len();
                    self.hashed = self.floor;
                    self.head.iter_mut().for_each(|h| *h = 0);
                }
            }
        }
    }

    fn put_match(&mut self, out: &mut Vec<u8>, len: usize, dist: usize) {
        let lc = LEN_BASE.partition_point(|&b| b as usize <= len) - 1;
        let (code, bits) = lit_code(257 + lc as u16);
        self.bits.put(out, code, bits);
        self.bits.put(
            out,
            (len - LEN_BASE[lc] as usize) as u32,
            LEN_EXTRA[lc] as u32,
        );
        let dc = DIST_BASE.partition_point(|&b| b as usize <= dist) - 1;
        self.bits.put(out, reverse(dc as u32, 5), 5);
        self.bits.put(
            out,
            (dist - DIST_BASE[dc] as usize) as u32,
            DIST_EXTRA[dc] as u32,
        );
    }

    /// Codes what follows as literals only (`HuffmanOnly`, for values kept out of every
    /// back-reference) or with matches again (`Default`). No block boundary is needed:
    /// a fixed-Huffman block holds either.
    pub fn set_strategy(&mut self, strategy: Strategy, _out: &mut Vec<u8>) {
        self.literals_only = strategy == Strategy::HuffmanOnly;
    }

    /// Keeps only the history (one window) while idle, if the last block ended with a
    /// sync or full flush; the next [`FixedDeflater::deflate`] rebuilds the rest. Returns
    /// whether the stream is now parked (or was never started).
    pub fn park(&mut self) -> bool {
        if self.in_block || self.bits.n != 0 {
            return false;
        }
        if self.started {
            let keep = self
                .hist
                .len()
                .saturating_sub(self.window())
                .max(self.floor);
            self.hist.drain(..keep.min(self.hist.len()));
            self.floor = self.floor.saturating_sub(keep);
            self.hist.shrink_to_fit();
            self.head = Vec::new();
            self.hashed = self.floor;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::SPDY3_DICTIONARY;
    use crate::zlib::Inflater;

    fn inflate_all(blocks: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut inf = Inflater::new(SPDY3_DICTIONARY);
        blocks
            .iter()
            .map(|b| {
                let mut out = Vec::new();
                assert!(!inf.inflate(b, &mut out, 1 << 24).expect("inflates"));
                out
            })
            .collect()
    }

    /// A pseudo-random header-like block: repeated names and values, some fresh bytes.
    fn block(seed: u64, n: usize) -> Vec<u8> {
        let mut x = seed | 1;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let words: [&[u8]; 6] = [
            b":status",
            b"200",
            b"content-type",
            b"text/html; charset=utf-8",
            b"content-length",
            b"cache-control",
        ];
        let mut v = Vec::new();
        while v.len() < n {
            if next() % 3 == 0 {
                v.push((next() % 256) as u8);
            } else {
                v.extend_from_slice(words[(next() % 6) as usize]);
            }
        }
        v
    }

    #[test]
    fn stock_zlib_inflates_every_block_as_it_was() {
        for wb in [9u8, 11, 15] {
            let mut d = FixedDeflater::new(1, wb, SPDY3_DICTIONARY);
            let inputs: Vec<Vec<u8>> = (0..200)
                .map(|i| block(i, (i as usize * 37) % 3000))
                .collect();
            let blocks: Vec<Vec<u8>> = inputs
                .iter()
                .map(|i| {
                    let mut out = Vec::new();
                    d.deflate(i, &mut out, Flush::Sync);
                    assert!(out.ends_with(&[0, 0, 0xff, 0xff]));
                    out
                })
                .collect();
            assert_eq!(inflate_all(&blocks), inputs, "window bits {wb}");
        }
    }

    #[test]
    fn repeated_blocks_shrink_to_a_few_bytes() {
        let mut d = FixedDeflater::new(1, 11, SPDY3_DICTIONARY);
        let b = block(7, 300);
        let mut sizes = Vec::new();
        let mut blocks = Vec::new();
        for _ in 0..3 {
            let mut out = Vec::new();
            d.deflate(&b, &mut out, Flush::Sync);
            sizes.push(out.len());
            blocks.push(out);
        }
        assert!(sizes[1] < 20 && sizes[2] < 20, "{sizes:?}");
        assert_eq!(inflate_all(&blocks), vec![b.clone(), b.clone(), b]);
    }

    #[test]
    fn literals_only_values_are_never_referred_to_and_the_stream_stays_valid() {
        let mut d = FixedDeflater::new(1, 11, SPDY3_DICTIONARY);
        let secret = b"session=7f3a9c1e5b2d8f4a";
        let mut blocks = Vec::new();
        let mut out = Vec::new();
        d.deflate(b"cookie", &mut out, Flush::None);
        d.set_strategy(Strategy::HuffmanOnly, &mut out);
        d.deflate(secret, &mut out, Flush::Full);
        d.set_strategy(Strategy::Default, &mut out);
        d.deflate(b"", &mut out, Flush::Sync);
        blocks.push(out);
        // The same secret again: coded from scratch (no match into the first), so the
        // block is as long as a block of other letters.
        let mut sizes = Vec::new();
        for guess in [&secret[..], b"session=a4f8d2b5e1c9a3f7"] {
            let mut probe = FixedDeflater::new(1, 11, SPDY3_DICTIONARY);
            let mut o = Vec::new();
            probe.deflate(b"cookie", &mut o, Flush::None);
            probe.set_strategy(Strategy::HuffmanOnly, &mut o);
            probe.deflate(secret, &mut o, Flush::Full);
            probe.set_strategy(Strategy::Default, &mut o);
            o.clear();
            probe.deflate(guess, &mut o, Flush::Sync);
            sizes.push(o.len());
        }
        assert_eq!(sizes[0], sizes[1], "{sizes:?}");
        let mut second = Vec::new();
        d.deflate(b"cookie: more", &mut second, Flush::Sync);
        blocks.push(second);
        let got = inflate_all(&blocks);
        assert_eq!(got[0], [&b"cookie"[..], secret].concat());
        assert_eq!(got[1], b"cookie: more");
    }

    #[test]
    fn a_parked_stream_resumes_where_it_was() {
        let mut d = FixedDeflater::new(1, 11, SPDY3_DICTIONARY);
        let mut blocks = Vec::new();
        let inputs: Vec<Vec<u8>> = (0..20).map(|i| block(i + 100, 700)).collect();
        for (k, i) in inputs.iter().enumerate() {
            let mut out = Vec::new();
            d.deflate(i, &mut out, Flush::Sync);
            blocks.push(out);
            if k % 3 == 0 {
                assert!(d.park());
                assert!(d.head.is_empty() && d.hist.len() <= 1 << 11);
            }
        }
        assert_eq!(inflate_all(&blocks), inputs);
    }
}
