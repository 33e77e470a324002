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
const HASH_SIZE: usize = 1 << HASH_BITS;
/// The shortest and longest match deflate can code.
const MIN_MATCH: usize = 3;
const MAX_MATCH: usize = 258;
/// A match at least this long, of bytes at most half a window back, leaves its inner
/// positions out of the hash table (see [`FixedDeflater::deflate`]).
const LONG_MATCH: usize = 32;
/// The most bytes one stored block holds (its LEN field is 16 bits).
const MAX_STORED: usize = 0xffff;

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

/// The fixed literal/length code of every symbol 0..=287 (RFC 1951 §3.2.6): its bits,
/// reversed for the LSB-first bit stream, and its length.
const LIT_CODES: [(u16, u8); 288] = {
    let mut t = [(0u16, 0u8); 288];
    let mut sym = 0;
    while sym < 288 {
        let (code, len) = match sym {
            0..=143 => (0x30 + sym as u32, 8),
            144..=255 => (0x190 + (sym as u32 - 144), 9),
            256..=279 => (sym as u32 - 256, 7),
            _ => (0xc0 + (sym as u32 - 280), 8),
        };
        t[sym] = ((code.reverse_bits() >> (32 - len)) as u16, len as u8);
        sym += 1;
    }
    t
};

/// Per match length 3..=258, its length code's index into [`LEN_BASE`].
const LEN_INDEX: [u8; MAX_MATCH + 1] = {
    let mut t = [0u8; MAX_MATCH + 1];
    let mut len = MIN_MATCH;
    let mut k = 0;
    while len <= MAX_MATCH {
        while k + 1 < LEN_BASE.len() && LEN_BASE[k + 1] as usize <= len {
            k += 1;
        }
        t[len] = k as u8;
        len += 1;
    }
    t
};

fn lit_code(sym: usize) -> (u32, u32) {
    let (code, len) = LIT_CODES[sym];
    (code as u32, len as u32)
}

/// Bits to bytes, least significant first (RFC 1951 §3.1.1). At most 31 bits a put;
/// whole 32-bit words go out as soon as they are full.
#[derive(Default)]
struct Bits {
    acc: u64,
    n: u32,
}

impl Bits {
    #[inline]
    fn put(&mut self, out: &mut Vec<u8>, bits: u32, count: u32) {
        self.acc |= (bits as u64) << self.n;
        self.n += count;
        if self.n >= 32 {
            out.extend_from_slice(&(self.acc as u32).to_le_bytes());
            self.acc >>= 32;
            self.n -= 32;
        }
    }

    /// Writes out every whole byte and pads the last one with zero bits (RFC 1951
    /// §3.1.1): the stream is at a byte boundary after.
    fn align(&mut self, out: &mut Vec<u8>) {
        while self.n > 0 {
            out.push(self.acc as u8);
            self.acc >>= 8;
            self.n = self.n.saturating_sub(8);
        }
        self.acc = 0;
    }
}

/// How many leading bytes of `h[a..]` and `h[b..]` agree, at most `max` (`a < b`,
/// `b + max <= h.len()`); eight bytes a step.
#[inline]
fn match_len(h: &[u8], a: usize, b: usize, max: usize) -> usize {
    let (x, y) = (&h[a..a + max], &h[b..b + max]);
    let mut n = 0;
    while n + 8 <= max {
        let d = u64::from_le_bytes(x[n..n + 8].try_into().expect("8 bytes"))
            ^ u64::from_le_bytes(y[n..n + 8].try_into().expect("8 bytes"));
        if d != 0 {
            return n + (d.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    while n < max && x[n] == y[n] {
        n += 1;
    }
    n
}

/// The hash-table slot of three bytes, given as the low 24 bits of `three` (the first
/// byte lowest).
#[inline]
fn slot(three: u32) -> usize {
    (three.wrapping_mul(0x9e37_79b1) >> (32 - HASH_BITS)) as usize & (HASH_SIZE - 1)
}

/// The slot of the three bytes of `h` at `i`.
#[inline]
fn hash(h: &[u8], i: usize) -> usize {
    slot(u32::from_le_bytes([h[i], h[i + 1], h[i + 2], 0]))
}

/// Puts the positions of `hist` from `*hashed` up to `end` (those with three bytes)
/// into `head`.
#[inline]
fn hash_upto(hist: &[u8], head: &mut [u32], hashed: &mut usize, end: usize) {
    let end = end.min(hist.len().saturating_sub(MIN_MATCH - 1));
    let head = &mut head[..HASH_SIZE];
    let mut i = *hashed;
    // Six positions from one eight-byte load while eight bytes remain.
    while i + 6 <= end && i + 8 <= hist.len() {
        let v = u64::from_le_bytes(hist[i..i + 8].try_into().expect("8 bytes"));
        for k in 0..6 {
            head[slot(((v >> (8 * k)) & 0xff_ffff) as u32)] = (i + k) as u32 + 1;
        }
        i += 6;
    }
    for i in i..end {
        head[hash(hist, i)] = i as u32 + 1;
    }
    *hashed = (*hashed).max(end);
}

/// A zlib stream compressed with fixed Huffman codes (or, at level 0, stored blocks);
/// see the module's documentation.
pub struct FixedDeflater {
    level_flags: u8,
    window_bits: u8,
    /// Level 0: every block stored as it is (zlib's level 0, nginx's SPDY default).
    stored: bool,
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
    /// `level` sets the header's FLEVEL field, as zlib would for that level, and level 0
    /// writes stored blocks (no compression, as zlib's level 0).
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
            stored: level == 0,
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
            if self.stored {
                return;
            }
            // Room for the two windows kept while live, so the history is allocated
            // once rather than grown (every grown-and-freed size is a hole in the heap
            // of a server holding thousands of sessions).
            let d = self.dictionary;
            self.hist = Vec::with_capacity(2 * w + 512);
            self.hist.extend_from_slice(&d[d.len().saturating_sub(w)..]);
        }
        if self.stored {
            return;
        }
        if self.hist.len() > 2 * w {
            // Keep one window; the positions in `head` move down with it.
            let cut = self.hist.len() - w;
            self.hist.drain(..cut);
            self.floor = self.floor.saturating_sub(cut);
            self.hashed = self.hashed.saturating_sub(cut).max(self.floor);
            let c = cut as u32;
            self.head.iter_mut().for_each(|h| *h = h.saturating_sub(c));
        }
        if self.head.is_empty() {
            self.head = vec![0; HASH_SIZE];
            self.hashed = self.floor;
            hash_upto(
                &self.hist,
                &mut self.head,
                &mut self.hashed,
                self.hist.len(),
            );
        }
    }

    /// Compresses `input` into `out`; `Sync` and `Full` end the block at a byte boundary
    /// (`00 00 ff ff`), `Full` also forgets the history.
    pub fn deflate(&mut self, input: &[u8], out: &mut Vec<u8>, flush: Flush) {
        self.prepare(out);
        if self.stored {
            self.store(input, out, flush);
            return;
        }
        // Fixed codes take at most 9 bits a byte; the block's ends a few bytes more.
        out.reserve(input.len() + input.len() / 8 + 16);
        if !input.is_empty() && !self.in_block {
            // BFINAL 0, BTYPE 01 (fixed Huffman codes).
            self.bits.put(out, 0b010, 3);
            self.in_block = true;
        }
        let start = self.hist.len();
        self.hist.extend_from_slice(input);
        let (w, floor, literals_only) = (self.window(), self.floor, self.literals_only);
        let (hist, head, bits) = (&self.hist[..], &mut self.head[..], &mut self.bits);
        // Positions before the new input that now have their three bytes.
        hash_upto(hist, head, &mut self.hashed, start);
        let mut i = start;
        while i < hist.len() {
            let rest = hist.len() - i;
            let mut best = 0;
            let mut dist = 0;
            if !literals_only && rest >= MIN_MATCH {
                let cand = head[hash(hist, i)] as usize;
                if cand > floor && i - (cand - 1) <= w {
                    let c = cand - 1;
                    let len = match_len(hist, c, i, rest.min(MAX_MATCH));
                    if len >= MIN_MATCH {
                        best = len;
                        dist = i - c;
                    }
                }
            }
            if best >= MIN_MATCH {
                put_match(bits, out, best, dist);
                if !literals_only {
                    if dist <= w / 2 && best >= LONG_MATCH {
                        // A long repeat of bytes at most half a window back (a header
                        // block repeating the last one): their positions are in `head`
                        // (or were when they were coded) and stay findable for another
                        // half window, so only the last two, whose three bytes reach
                        // past the match, go in: a lookup, not a hash a byte.
                        self.hashed = self.hashed.max(i + best - (MIN_MATCH - 1));
                    }
                    hash_upto(hist, head, &mut self.hashed, i + best);
                }
                i += best;
            } else {
                let (code, len) = lit_code(hist[i] as usize);
                bits.put(out, code, len);
                if !literals_only {
                    hash_upto(hist, head, &mut self.hashed, i + 1);
                }
                i += 1;
            }
        }
        if literals_only {
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

    /// Level 0: `input` as stored blocks (BFINAL 0, BTYPE 00, LEN, NLEN, the bytes), then
    /// on a sync or full flush the empty stored block zlib writes there. The stream is
    /// at a byte boundary throughout; there is no history to keep or forget.
    fn store(&mut self, input: &[u8], out: &mut Vec<u8>, flush: Flush) {
        out.reserve(input.len() + 5 * (input.len() / MAX_STORED + 2));
        for part in input.chunks(MAX_STORED) {
            let len = part.len() as u16;
            out.push(0);
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&(!len).to_le_bytes());
            out.extend_from_slice(part);
        }
        if matches!(flush, Flush::Sync | Flush::Full) {
            out.extend_from_slice(&[0, 0, 0, 0xff, 0xff]);
        }
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
            // A fresh allocation of the window alone; the live buffers go whole.
            self.hist = self.hist[keep.min(self.hist.len())..].to_vec();
            self.floor = self.floor.saturating_sub(keep);
            self.head = Vec::new();
            self.hashed = self.floor;
        }
        true
    }
}

/// Codes a match of `len` bytes `dist` back: its length code and extra bits, then its
/// distance code (five bits, fixed) and extra bits.
#[inline]
fn put_match(bits: &mut Bits, out: &mut Vec<u8>, len: usize, dist: usize) {
    let lc = LEN_INDEX[len] as usize;
    let (code, n) = lit_code(257 + lc);
    bits.put(out, code, n);
    bits.put(
        out,
        (len - LEN_BASE[lc] as usize) as u32,
        LEN_EXTRA[lc] as u32,
    );
    let dc = DIST_BASE.partition_point(|&b| b as usize <= dist) - 1;
    bits.put(out, (dc as u32).reverse_bits() >> 27, 5);
    bits.put(
        out,
        (dist - DIST_BASE[dc] as usize) as u32,
        DIST_EXTRA[dc] as u32,
    );
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
    fn level_0_writes_the_stored_blocks_zlib_writes_at_level_0() {
        let mut ours = FixedDeflater::new(0, 11, SPDY3_DICTIONARY);
        let mut zlib = crate::zlib::Deflater::new(0, 11, 1, SPDY3_DICTIONARY);
        let inputs: Vec<Vec<u8>> = (0..30)
            .map(|i| block(i + 7, 40 + (i as usize * 97) % 700))
            .collect();
        let mut blocks = Vec::new();
        for (k, i) in inputs.iter().enumerate() {
            let flush = if k % 5 == 4 { Flush::Full } else { Flush::Sync };
            let (mut a, mut b) = (Vec::new(), Vec::new());
            ours.deflate(i, &mut a, flush);
            zlib.deflate(i, &mut b, flush);
            // zlib cuts stored blocks at its buffer's size (about 500 bytes with memLevel
            // 1); below that the bytes are the same, above it both inflate alike.
            if i.len() <= 400 {
                assert_eq!(a, b, "block {k} ({} bytes, {flush:?})", i.len());
            }
            assert!(ours.park(), "a stored stream can always park");
            blocks.push(a);
        }
        assert_eq!(inflate_all(&blocks), inputs);
    }

    #[test]
    fn level_0_splits_a_block_longer_than_a_stored_block_holds() {
        let mut d = FixedDeflater::new(0, 15, SPDY3_DICTIONARY);
        let big = block(3, MAX_STORED + 1000);
        let mut out = Vec::new();
        d.deflate(&big, &mut out, Flush::Sync);
        // zlib header and id, two stored blocks' framing, the empty block.
        assert_eq!(out.len(), 6 + big.len() + 2 * 5 + 5);
        assert_eq!(inflate_all(&[out]), vec![big]);
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
