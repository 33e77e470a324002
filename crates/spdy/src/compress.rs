//! Header-block compression: one zlib stream per direction per session, the version's
//! preset dictionary, a sync flush after every block (digest §4.2).
//!
//! CRIME-safe mode (digest §10.3): the values of `cookie`, `set-cookie`, `authorization`
//! and `proxy-authorization` never share back-references with other data. Such pairs are
//! written last in the block; each sensitive value is coded Huffman-only (it refers to
//! nothing) and followed by a full flush (nothing after it can refer to it). The output
//! is an ordinary zlib stream: any standard inflater decodes it. The cost is that the
//! block after a sensitive value starts from an empty history.

use crate::fixed::FixedDeflater;
use crate::headers::{HeaderError, Headers};
use crate::zlib::{Deflater, Flush, InflateError, Inflater, Strategy};
use crate::Version;

/// The SPDY/3 and SPDY/3.1 preset dictionary (1423 bytes, adler32 0xe3c6a7c2).
pub const SPDY3_DICTIONARY: &[u8] = include_bytes!("../dict/spdy3-dictionary.bin");
/// The SPDY/2 preset dictionary (907 bytes including the final NUL, adler32 0xdfa251b2).
pub const SPDY2_DICTIONARY: &[u8] = include_bytes!("../dict/spdy2-dictionary.bin");

/// Header names whose values are kept apart in CRIME-safe mode.
pub const SENSITIVE_HEADERS: [&str; 4] = [
    "authorization",
    "cookie",
    "proxy-authorization",
    "set-cookie",
];

/// Compressor settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompressionConfig {
    /// zlib level 0 (stored) ..= 9.
    pub level: u32,
    /// log2 of the compression window, 9 ..= 15.
    pub window_bits: u8,
    /// zlib memLevel 1 ..= 9 (hash table size).
    pub mem_level: u8,
    /// Keep cookie and authorization values out of back-references.
    pub crime_safe: bool,
    /// Code blocks with deflate's fixed Huffman codes and this crate's own match finder
    /// ([`crate::fixed`]) instead of zlib's: the same stream format, a few bits a symbol
    /// longer, without the Huffman trees zlib builds for every block. `level` then only
    /// names the header's FLEVEL; `mem_level` is unused. Level 0 (stored blocks) always
    /// uses that encoder, which writes them without zlib.
    pub fixed_codes: bool,
}

impl Default for CompressionConfig {
    /// Chromium's 2012 settings (level 9, 2 KiB window, memLevel 1: about 15 KiB of
    /// zlib state), with CRIME-safe mode on.
    fn default() -> Self {
        CompressionConfig {
            level: 9,
            window_bits: 11,
            mem_level: 1,
            crime_safe: true,
            fixed_codes: false,
        }
    }
}

/// How an endpoint compresses its header blocks, by name (the lab's `header_compression`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderCompression {
    /// zlib with the SPDY dictionary over the whole block, as Chrome did before CRIME
    /// (2012): cookies share the context and compress against earlier requests.
    Zlib,
    /// zlib, but cookie and authorization values Huffman-coded apart (no back-references
    /// into or out of them): the mode that resists CRIME. This library's default.
    CrimeSafe,
    /// Stored blocks (zlib level 0): the header bytes as they are, plus framing.
    None,
}

impl std::fmt::Display for HeaderCompression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for HeaderCompression {
    type Err = String;
    fn from_str(s: &str) -> Result<HeaderCompression, String> {
        HeaderCompression::parse(s)
    }
}

impl HeaderCompression {
    /// Every mode, by its name.
    pub const ALL: [HeaderCompression; 3] = [
        HeaderCompression::Zlib,
        HeaderCompression::CrimeSafe,
        HeaderCompression::None,
    ];

    /// `zlib`, `crime-safe` or `none`.
    pub fn parse(s: &str) -> Result<HeaderCompression, String> {
        Self::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("{s:?}: one of zlib, crime-safe, none"))
    }

    /// The mode's name.
    pub fn name(self) -> &'static str {
        match self {
            HeaderCompression::Zlib => "zlib",
            HeaderCompression::CrimeSafe => "crime-safe",
            HeaderCompression::None => "none",
        }
    }

    /// Sets `c` to this mode (the level is kept unless the mode is `none`).
    pub fn apply(self, c: &mut CompressionConfig) {
        c.crime_safe = self == HeaderCompression::CrimeSafe;
        if self == HeaderCompression::None {
            c.level = 0;
        }
    }
}

/// The deflate encoder of a [`HeaderCompressor`].
enum Encoder {
    Zlib(Deflater),
    Fixed(FixedDeflater),
}

impl Encoder {
    fn deflate(&mut self, input: &[u8], out: &mut Vec<u8>, flush: Flush) {
        match self {
            Encoder::Zlib(d) => d.deflate(input, out, flush),
            Encoder::Fixed(d) => d.deflate(input, out, flush),
        }
    }

    fn set_strategy(&mut self, strategy: Strategy, out: &mut Vec<u8>) {
        match self {
            Encoder::Zlib(d) => d.set_strategy(strategy, out),
            Encoder::Fixed(d) => d.set_strategy(strategy, out),
        }
    }

    fn park(&mut self) -> bool {
        match self {
            Encoder::Zlib(d) => d.park(),
            Encoder::Fixed(d) => d.park(),
        }
    }
}

/// Compresses header blocks for one direction of one session.
pub struct HeaderCompressor {
    version: Version,
    deflater: Encoder,
    crime_safe: bool,
    scratch: Vec<u8>,
}

impl HeaderCompressor {
    /// Creates the compressor for `version`.
    pub fn new(version: Version, config: CompressionConfig) -> HeaderCompressor {
        HeaderCompressor {
            version,
            // Level 0 is stored blocks whichever encoder: ours writes them without zlib.
            deflater: if config.fixed_codes || config.level == 0 {
                Encoder::Fixed(FixedDeflater::new(
                    config.level,
                    config.window_bits,
                    version.dictionary(),
                ))
            } else {
                Encoder::Zlib(Deflater::new(
                    config.level,
                    config.window_bits,
                    config.mem_level,
                    version.dictionary(),
                ))
            },
            crime_safe: config.crime_safe,
            scratch: Vec::new(),
        }
    }

    /// Compresses one block and appends it to `out`. Call in wire order: the peer
    /// inflates blocks in the order frames arrive.
    pub fn compress(&mut self, headers: &Headers, out: &mut Vec<u8>) {
        let v = self.version;
        self.scratch.clear();
        let sensitive = |n: &[u8]| SENSITIVE_HEADERS.iter().any(|s| s.as_bytes() == n);
        if !self.crime_safe || !headers.iter().any(|(n, _)| sensitive(n)) {
            headers.encode(v, &mut self.scratch);
            self.deflater.deflate(&self.scratch, out, Flush::Sync);
            return;
        }
        // Ordinary pairs first, then each sensitive pair.
        put_int(&mut self.scratch, v, headers.len());
        for (n, val) in headers.iter().filter(|(n, _)| !sensitive(n)) {
            put_pair(&mut self.scratch, v, n, val);
        }
        for (n, val) in headers.iter().filter(|(n, _)| sensitive(n)) {
            put_int(&mut self.scratch, v, n.len());
            self.scratch.extend_from_slice(n);
            put_int(&mut self.scratch, v, val.len());
            self.deflater.deflate(&self.scratch, out, Flush::None);
            self.scratch.clear();
            self.deflater.set_strategy(Strategy::HuffmanOnly, out);
            self.deflater.deflate(val, out, Flush::Full);
            self.deflater.set_strategy(Strategy::Default, out);
        }
        self.deflater.deflate(&self.scratch, out, Flush::Sync);
    }
}

impl HeaderCompressor {
    /// Gives back what an idle session need not hold: zlib's state (kept as its 2 KiB
    /// history: the stream resumes as raw deflate primed with it) and the scratch buffer. The next block resumes
    /// the same stream; the peer sees no difference.
    pub fn park(&mut self) {
        self.deflater.park();
        self.scratch = Vec::new();
    }
}

fn put_int(out: &mut Vec<u8>, v: Version, n: usize) {
    if v == Version::V2 {
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

fn put_pair(out: &mut Vec<u8>, v: Version, n: &[u8], val: &[u8]) {
    put_int(out, v, n.len());
    out.extend_from_slice(n);
    put_int(out, v, val.len());
    out.extend_from_slice(val);
}

/// Why a compressed header block could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecompressError {
    /// zlib failed: the shared context is unusable, a session error.
    Zlib(InflateError),
    /// The block inflated to more than the limit (it was still fully inflated, so the
    /// context stays in sync): a stream error.
    TooLarge,
    /// The block inflated fine but is not a valid name/value block: a stream error.
    Invalid(HeaderError),
}

/// Decompresses header blocks received on one session.
pub struct HeaderDecompressor {
    version: Version,
    inflater: Inflater,
    max_size: usize,
    scratch: Vec<u8>,
}

impl HeaderDecompressor {
    /// Creates the decompressor; blocks inflating to more than `max_size` bytes are
    /// refused (a zlib bomb costs CPU to skip, never memory).
    pub fn new(version: Version, max_size: usize) -> HeaderDecompressor {
        HeaderDecompressor {
            version,
            inflater: Inflater::new(version.dictionary()),
            max_size,
            scratch: Vec::new(),
        }
    }

    /// Inflates one complete compressed block and parses it.
    pub fn decompress(&mut self, block: &[u8]) -> Result<Headers, DecompressError> {
        self.scratch.clear();
        let over = self
            .inflater
            .inflate(block, &mut self.scratch, self.max_size)
            .map_err(DecompressError::Zlib)?;
        let r = if over {
            Err(DecompressError::TooLarge)
        } else {
            Headers::decode(self.version, &self.scratch).map_err(DecompressError::Invalid)
        };
        if self.scratch.capacity() > 16 * 1024 {
            self.scratch = Vec::new();
        }
        r
    }

    /// Gives back what an idle session need not hold: zlib's state when it stands at a
    /// block boundary (kept as the peer's window) and the
    /// scratch buffer.
    pub fn park(&mut self) {
        self.inflater.park();
        self.scratch = Vec::new();
    }

    /// Inflates part of a block that is being skipped (too large to buffer), discarding
    /// the output, so the shared context stays in sync.
    pub fn skip(&mut self, part: &[u8]) -> Result<(), DecompressError> {
        self.scratch.clear();
        self.inflater
            .inflate(part, &mut self.scratch, 0)
            .map_err(DecompressError::Zlib)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zlib::adler32;

    #[test]
    fn dictionaries_match_the_digest() {
        assert_eq!(
            (SPDY3_DICTIONARY.len(), adler32(SPDY3_DICTIONARY)),
            (1423, 0xe3c6a7c2)
        );
        assert_eq!(
            (SPDY2_DICTIONARY.len(), adler32(SPDY2_DICTIONARY)),
            (907, 0xdfa251b2)
        );
    }

    #[test]
    fn header_compression_modes_differ_as_named() {
        let mut h = Headers::new();
        h.add(":path", "/index.html");
        h.add(":host", "www.example.test");
        h.add("user-agent", "Mozilla/5.0 (X11; Linux x86_64) speedy");
        h.add("cookie", "sid=0123456789abcdef0123456789abcdef; pref=dark");
        let raw = {
            let mut v = Vec::new();
            h.encode(Version::V3, &mut v);
            v.len()
        };
        // The second identical request: what each mode costs once the context is warm.
        let second = |m: HeaderCompression| {
            let mut cfg = CompressionConfig::default();
            m.apply(&mut cfg);
            let mut c = HeaderCompressor::new(Version::V3, cfg);
            let mut out = Vec::new();
            c.compress(&h, &mut out);
            out.clear();
            c.compress(&h, &mut out);
            let mut d = HeaderDecompressor::new(Version::V3, 1 << 16);
            let mut first = Vec::new();
            HeaderCompressor::new(Version::V3, cfg).compress(&h, &mut first);
            assert_eq!(d.decompress(&first).unwrap(), h, "{m:?} round-trips");
            out.len()
        };
        let (zlib, safe, none) = (
            second(HeaderCompression::Zlib),
            second(HeaderCompression::CrimeSafe),
            second(HeaderCompression::None),
        );
        assert!(zlib < safe, "zlib {zlib} B < crime-safe {safe} B");
        assert!(safe < none, "crime-safe {safe} B < none {none} B");
        assert!(none >= raw, "none {none} B ≥ raw {raw} B");
        for m in HeaderCompression::ALL {
            assert_eq!(HeaderCompression::parse(m.name()), Ok(m));
        }
        assert!(HeaderCompression::parse("gzip")
            .unwrap_err()
            .contains("crime-safe"));
    }

    fn chromium_cfg() -> CompressionConfig {
        CompressionConfig {
            level: 9,
            window_bits: 11,
            mem_level: 1,
            crime_safe: false,
            fixed_codes: false,
        }
    }

    /// Chromium's spdy_framer_test.cc (2012) vector, digest §10.1 and Appendix C.
    #[test]
    fn reproduces_chromium_v3_block() {
        let mut c = HeaderCompressor::new(Version::V3, chromium_cfg());
        let mut out = Vec::new();
        c.compress(
            &Headers::from_pairs([("bar", "foo"), ("foo", "bar")]),
            &mut out,
        );
        let want = "38eae3c6a7c202e50e50c24b4a04e50be6b4fc7c240a2808000000ffff";
        assert_eq!(hex(&out), want);
        let mut d = HeaderDecompressor::new(Version::V3, 1 << 16);
        assert_eq!(
            d.decompress(&out).unwrap(),
            Headers::from_pairs([("bar", "foo"), ("foo", "bar")])
        );
    }

    #[test]
    fn reproduces_chromium_v2_block() {
        let mut c = HeaderCompressor::new(Version::V2, chromium_cfg());
        let mut out = Vec::new();
        c.compress(
            &Headers::from_pairs([("bar", "foo"), ("foo", "bar")]),
            &mut out,
        );
        assert_eq!(
            hex(&out),
            "38eadfa251b262606260 4e4a2c62604ecbcf871240 2e000000ffff".replace(' ', "")
        );
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn shares_one_context_across_blocks() {
        let mut c = HeaderCompressor::new(Version::V3, CompressionConfig::default());
        let mut d = HeaderDecompressor::new(Version::V3, 1 << 16);
        let h = Headers::from_pairs([
            (":method", "GET"),
            (":path", "/a"),
            ("user-agent", "speedy/0.1 test agent"),
        ]);
        let mut sizes = vec![];
        for _ in 0..3 {
            let mut out = Vec::new();
            c.compress(&h, &mut out);
            assert!(out.ends_with(&[0, 0, 0xff, 0xff]));
            sizes.push(out.len());
            assert_eq!(d.decompress(&out).unwrap(), h);
        }
        assert!(
            sizes[1] < sizes[0] / 2,
            "repeat blocks should refer back: {sizes:?}"
        );
    }

    #[test]
    fn refuses_zlib_bombs_and_stays_in_sync() {
        let mut c = HeaderCompressor::new(Version::V3, chromium_cfg());
        let mut big = Headers::new();
        big.add("x", vec![b'a'; 200_000]);
        let mut bomb = Vec::new();
        c.compress(&big, &mut bomb);
        assert!(bomb.len() < 2000);
        let mut d = HeaderDecompressor::new(Version::V3, 16 * 1024);
        assert_eq!(d.decompress(&bomb), Err(DecompressError::TooLarge));
        let small = Headers::from_pairs([("a", "b")]);
        let mut next = Vec::new();
        c.compress(&small, &mut next);
        assert_eq!(d.decompress(&next).unwrap(), small);
    }

    #[test]
    fn rejects_the_wrong_dictionary() {
        let mut c = HeaderCompressor::new(Version::V2, chromium_cfg());
        let mut out = Vec::new();
        c.compress(&Headers::from_pairs([("a", "b")]), &mut out);
        let mut d = HeaderDecompressor::new(Version::V3, 1 << 16);
        assert!(matches!(d.decompress(&out), Err(DecompressError::Zlib(_))));
    }

    /// The CRIME oracle: with the secret in an earlier block, the compressed size of a
    /// later block must not depend on whether attacker-chosen text matches the secret.
    #[test]
    fn crime_safe_sizes_do_not_reveal_the_cookie() {
        let secret = "session=7f3a9c1e5b2d8f4a";
        for fixed_codes in [false, true] {
            let sizes = |crime_safe: bool| -> Vec<usize> {
                // The right guess, and one with the same letters in another order.
                let guesses = ["session=7f3a9c1e5b2d8f4a", "session=a4f8d2b5e1c9a3f7"];
                guesses
                    .iter()
                    .map(|g| {
                        let cfg = CompressionConfig {
                            crime_safe,
                            fixed_codes,
                            ..CompressionConfig::default()
                        };
                        let mut c = HeaderCompressor::new(Version::V3, cfg);
                        let mut d = HeaderDecompressor::new(Version::V3, 1 << 16);
                        let mut first = Vec::new();
                        let h1 = Headers::from_pairs([(":path", "/"), ("cookie", secret)]);
                        c.compress(&h1, &mut first);
                        assert_eq!(d.decompress(&first).unwrap(), h1);
                        let h2 = Headers::from_pairs([
                            (":path", format!("/search?q={g}")),
                            ("cookie", secret.to_string()),
                        ]);
                        let mut second = Vec::new();
                        c.compress(&h2, &mut second);
                        assert_eq!(d.decompress(&second).unwrap(), h2);
                        second.len()
                    })
                    .collect()
            };
            let unsafe_sizes = sizes(false);
            assert!(
                unsafe_sizes[0] < unsafe_sizes[1],
                "plain mode leaks (test sanity): {unsafe_sizes:?}"
            );
            let safe = sizes(true);
            assert_eq!(
                safe[0], safe[1],
                "CRIME-safe sizes must not depend on the guess: {safe:?}"
            );
        }
    }

    /// Blocks coded with fixed codes decode with the ordinary decompressor, in both
    /// modes, across blocks and parking, and repeats shrink as with zlib.
    #[test]
    fn fixed_codes_round_trip_through_stock_zlib() {
        for crime_safe in [false, true] {
            let cfg = CompressionConfig {
                level: 1,
                crime_safe,
                fixed_codes: true,
                ..CompressionConfig::default()
            };
            let mut c = HeaderCompressor::new(Version::V3, cfg);
            let mut d = HeaderDecompressor::new(Version::V3, 1 << 16);
            let mut sizes = Vec::new();
            for i in 0..50 {
                let h = Headers::from_pairs([
                    (":status", "200".to_string()),
                    (":version", "HTTP/1.1".to_string()),
                    ("content-length", format!("{}", 1000 + i)),
                    ("content-type", "text/html; charset=utf-8".to_string()),
                    ("set-cookie", format!("id={i:08x}")),
                ]);
                let mut out = Vec::new();
                c.compress(&h, &mut out);
                sizes.push(out.len());
                assert_eq!(d.decompress(&out).unwrap(), h, "block {i}");
                if i % 7 == 0 {
                    c.park();
                    d.park();
                }
            }
            // Without CRIME-safety later blocks refer back; with it, the set-cookie
            // value's full flush leaves every next block an empty history, as with zlib.
            if !crime_safe {
                assert!(sizes[10] < sizes[0] / 2, "{sizes:?}");
            }
        }
    }
}
