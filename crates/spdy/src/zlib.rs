//! A small safe wrapper over zlib's streaming deflate/inflate (stock zlib via `libz-sys`).
//!
//! Why stock zlib and not zlib-rs (docs/design.md's default): zlib-rs allocates a fixed
//! 65,536-entry hash table (128 KiB) per deflate stream whatever `memLevel` says, which
//! alone is twice the 64 KiB budget for an idle session; stock zlib honours `memLevel`
//! (windowBits 11 + memLevel 1 ≈ 15 KiB). Stock zlib also reproduces Chromium's published
//! compressed vectors byte for byte.
//!
//! zlib's allocations go through Rust's global allocator (see `zalloc`), so heap
//! measurements with a counting allocator include them.

use libz_sys as z;
use std::alloc::{self, Layout};
use std::os::raw::{c_int, c_uint, c_void};

const HDR: usize = 16;

unsafe extern "C" fn zalloc(_opaque: *mut c_void, items: c_uint, size: c_uint) -> *mut c_void {
    let n = (items as usize)
        .saturating_mul(size as usize)
        .saturating_add(HDR);
    let Ok(layout) = Layout::from_size_align(n, HDR) else {
        return std::ptr::null_mut();
    };
    // SAFETY: layout has non-zero size; the size is stored in front for zfree.
    let p = alloc::alloc(layout);
    if p.is_null() {
        return p as *mut c_void;
    }
    (p as *mut usize).write(n);
    p.add(HDR) as *mut c_void
}

unsafe extern "C" fn zfree(_opaque: *mut c_void, ptr: *mut c_void) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: ptr came from zalloc, which stored the allocation size HDR bytes before it.
    let base = (ptr as *mut u8).sub(HDR);
    let n = (base as *const usize).read();
    alloc::dealloc(base, Layout::from_size_align_unchecked(n, HDR));
}

fn new_stream() -> Box<z::z_stream> {
    Box::new(z::z_stream {
        next_in: std::ptr::null_mut(),
        avail_in: 0,
        total_in: 0,
        next_out: std::ptr::null_mut(),
        avail_out: 0,
        total_out: 0,
        msg: std::ptr::null_mut(),
        state: std::ptr::null_mut(),
        zalloc,
        zfree,
        opaque: std::ptr::null_mut(),
        data_type: 0,
        adler: 0,
        reserved: 0,
    })
}

/// Flush modes used here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flush {
    /// Buffer input; emit only what is ready.
    None,
    /// Finish the current block at a byte boundary without resetting history.
    Block,
    /// Byte-align the output (ends with `00 00 ff ff`); history kept.
    Sync,
    /// Like `Sync`, and forget all history: later data cannot refer to earlier data.
    Full,
}

impl Flush {
    fn raw(self) -> c_int {
        match self {
            Flush::None => z::Z_NO_FLUSH,
            Flush::Block => z::Z_BLOCK,
            Flush::Sync => z::Z_SYNC_FLUSH,
            Flush::Full => z::Z_FULL_FLUSH,
        }
    }
}

/// Deflate strategies used here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// LZ77 matches plus Huffman coding.
    Default,
    /// Huffman coding only: no back-references at all.
    HuffmanOnly,
}

// Declared here: `libz-sys` does not expose them; its bundled zlib (1.3) has them.
extern "C" {
    fn deflateGetDictionary(strm: z::z_streamp, dictionary: *mut u8, len: *mut c_uint) -> c_int;
    fn inflateGetDictionary(strm: z::z_streamp, dictionary: *mut u8, len: *mut c_uint) -> c_int;
    fn inflateValidate(strm: z::z_streamp, check: c_int) -> c_int;
}

/// Where a stream's zlib state is.
enum State {
    /// Not allocated yet: the stream starts (zlib header, preset dictionary) on first use.
    Unstarted,
    /// zlib's state, allocated.
    Live(Box<z::z_stream>),
    /// Given back between blocks: only the history (the last window of uncompressed
    /// bytes) is kept. The stream resumes as raw deflate primed with it, which the peer
    /// cannot tell apart: at a byte-aligned block boundary a zlib stream is nothing but
    /// its history.
    Parked(Box<[u8]>),
}

/// zlib's deflateGetDictionary or inflateGetDictionary.
type GetDictionary = unsafe extern "C" fn(z::z_streamp, *mut u8, *mut c_uint) -> c_int;

/// Ends a live stream and returns it parked: its history, at most `2^window_bits` bytes
/// read by `get`.
///
/// # Safety
/// `s` is an initialised stream of the kind `get` and `end` take; it is ended here and
/// must be replaced by the result.
unsafe fn parked(
    s: &mut z::z_stream,
    window_bits: u32,
    get: GetDictionary,
    end: unsafe extern "C" fn(z::z_streamp) -> c_int,
) -> State {
    let mut history = vec![0u8; 1 << window_bits];
    let mut len: c_uint = 0;
    // SAFETY: valid stream (the caller's promise); history holds a whole window, the most
    // zlib copies.
    let rc = unsafe { get(s, history.as_mut_ptr(), &mut len) };
    assert_eq!(rc, z::Z_OK, "zlib refused to give its history");
    history.truncate(len as usize);
    // SAFETY: valid stream, ended once; the caller replaces it.
    unsafe { end(s) };
    State::Parked(history.into_boxed_slice())
}

/// Opens a zlib stream: `init` runs deflateInit2 or inflateInit2 on it.
fn open_stream(init: impl FnOnce(&mut z::z_stream) -> c_int, what: &str) -> Box<z::z_stream> {
    let mut strm = new_stream();
    let rc = init(&mut strm);
    assert_eq!(rc, z::Z_OK, "{what} failed (out of memory?)");
    strm
}

/// A zlib-format deflate stream with a preset dictionary. zlib's state (about 15 KiB at
/// windowBits 11, memLevel 1) is allocated at the first [`Deflater::deflate`] and can be
/// given back between blocks with [`Deflater::park`].
pub struct Deflater {
    state: State,
    level: c_int,
    window_bits: c_int,
    mem_level: c_int,
    dictionary: &'static [u8],
    /// The last call ended with a sync or full flush: all output is out, byte-aligned.
    flushed: bool,
}

// SAFETY: the stream is owned exclusively and zlib keeps no thread-local state.
unsafe impl Send for Deflater {}

impl Deflater {
    /// A zlib-format compressor with a preset dictionary (nothing allocated until used).
    pub fn new(level: u32, window_bits: u8, mem_level: u8, dictionary: &'static [u8]) -> Deflater {
        Deflater {
            state: State::Unstarted,
            level: level.min(9) as c_int,
            window_bits: window_bits.clamp(9, 15) as c_int,
            mem_level: mem_level.clamp(1, 9) as c_int,
            dictionary,
            flushed: true,
        }
    }

    /// The live stream, started or resumed if need be.
    fn stream(&mut self) -> &mut z::z_stream {
        let (wb, history) = match &self.state {
            State::Live(_) => (0, &[][..]),
            State::Unstarted => (self.window_bits, self.dictionary),
            State::Parked(h) => (-self.window_bits, &h[..]),
        };
        if wb != 0 {
            let (level, ml) = (self.level, self.mem_level);
            let strm = open_stream(
                // SAFETY: a valid boxed stream; version and size match libz-sys.
                |s| unsafe {
                    z::deflateInit2_(
                        s,
                        level,
                        z::Z_DEFLATED,
                        wb,
                        ml,
                        z::Z_DEFAULT_STRATEGY,
                        z::zlibVersion(),
                        std::mem::size_of::<z::z_stream>() as c_int,
                    )
                },
                "deflateInit2",
            );
            let mut strm = strm;
            // SAFETY: initialised stream, nothing deflated yet; history is a valid slice.
            let rc = unsafe {
                z::deflateSetDictionary(&mut *strm, history.as_ptr(), history.len() as c_uint)
            };
            assert_eq!(rc, z::Z_OK, "deflateSetDictionary failed");
            self.state = State::Live(strm);
        }
        match &mut self.state {
            State::Live(s) => s,
            _ => unreachable!("started above"),
        }
    }

    /// Compresses `input` into `out` with the given flush mode.
    pub fn deflate(&mut self, input: &[u8], out: &mut Vec<u8>, flush: Flush) {
        let s = self.stream();
        s.next_in = input.as_ptr() as *mut u8;
        s.avail_in = input.len() as c_uint;
        loop {
            if out.capacity() - out.len() < 64 {
                out.reserve(256 + input.len() / 2);
            }
            let spare = out.capacity() - out.len();
            // SAFETY: next_out points into out's spare capacity of `spare` bytes.
            unsafe {
                s.next_out = out.as_mut_ptr().add(out.len());
                s.avail_out = spare as c_uint;
                let rc = z::deflate(s, flush.raw());
                let written = spare - s.avail_out as usize;
                out.set_len(out.len() + written);
                debug_assert!(rc == z::Z_OK || rc == z::Z_BUF_ERROR, "deflate rc {rc}");
            }
            if s.avail_in == 0 && s.avail_out != 0 {
                break;
            }
        }
        s.next_in = std::ptr::null_mut();
        s.next_out = std::ptr::null_mut();
        self.flushed = matches!(flush, Flush::Sync | Flush::Full);
    }

    /// Switches the strategy; any buffered input is first flushed to a block boundary.
    pub fn set_strategy(&mut self, strategy: Strategy, out: &mut Vec<u8>) {
        self.deflate(&[], out, Flush::Block);
        let st = match strategy {
            Strategy::Default => z::Z_DEFAULT_STRATEGY,
            Strategy::HuffmanOnly => z::Z_HUFFMAN_ONLY,
        };
        // deflateParams may itself call deflate(Z_BLOCK): give it a valid output buffer.
        let mut spare = [0u8; 64];
        let level = self.level;
        let s = self.stream();
        s.next_out = spare.as_mut_ptr();
        s.avail_out = spare.len() as c_uint;
        // SAFETY: valid initialised stream; next_out points to `spare`.
        let rc = unsafe { z::deflateParams(s, level, st) };
        let written = spare.len() - s.avail_out as usize;
        out.extend_from_slice(&spare[..written]);
        s.next_out = std::ptr::null_mut();
        assert_eq!(rc, z::Z_OK, "deflateParams failed after a block flush");
        self.flushed = false;
    }

    /// Gives zlib's state back, keeping only the history (2 KiB at windowBits 11), if
    /// the last block ended with a sync or full flush (as every header block does);
    /// the next [`Deflater::deflate`] resumes. Returns whether the stream is now
    /// parked (or was never started).
    pub fn park(&mut self) -> bool {
        let State::Live(s) = &mut self.state else {
            return true;
        };
        if !self.flushed {
            return false;
        }
        // SAFETY: a live deflate stream, replaced by what this returns.
        self.state = unsafe {
            parked(
                s,
                self.window_bits as u32,
                deflateGetDictionary,
                z::deflateEnd,
            )
        };
        true
    }
}

impl Drop for Deflater {
    fn drop(&mut self) {
        if let State::Live(s) = &mut self.state {
            // SAFETY: initialised when it became Live.
            unsafe { z::deflateEnd(&mut **s) };
        }
    }
}

/// Why inflating failed. After this the stream is unusable (a session error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InflateError(pub String);

/// A zlib-format inflate stream expecting a preset dictionary. zlib's state (about
/// 7 KiB plus the peer's window) is allocated at the first [`Inflater::inflate`] and can
/// be given back between blocks with [`Inflater::park`].
pub struct Inflater {
    state: State,
    dictionary: &'static [u8],
    /// log2 of the peer's window, from its zlib header (0 until that arrives).
    window_bits: u8,
    failed: bool,
}

// SAFETY: see Deflater.
unsafe impl Send for Inflater {}

impl Inflater {
    /// Creates an inflater (nothing allocated until used). windowBits 0 takes the
    /// window size from the peer's zlib header, so a peer compressing with a 2 KiB
    /// window costs only 2 KiB here.
    pub fn new(dictionary: &'static [u8]) -> Inflater {
        Inflater {
            state: State::Unstarted,
            dictionary,
            window_bits: 0,
            failed: false,
        }
    }

    /// The live stream, started or resumed if need be.
    fn stream(&mut self) -> &mut z::z_stream {
        let resume = match &self.state {
            State::Live(_) => None,
            State::Unstarted => Some((0, &[][..])),
            State::Parked(h) => Some((-(self.window_bits as c_int), &h[..])),
        };
        if let Some((wb, history)) = resume {
            let mut strm = open_stream(
                // SAFETY: a valid boxed stream; version and size match libz-sys.
                |s| unsafe {
                    z::inflateInit2_(
                        s,
                        wb,
                        z::zlibVersion(),
                        std::mem::size_of::<z::z_stream>() as c_int,
                    )
                },
                "inflateInit2",
            );
            if wb == 0 {
                // A SPDY stream never ends, so the Adler-32 of its output is never
                // checked against a trailer: zlib need not compute it (a tenth of
                // inflating a small header block).
                // SAFETY: a freshly initialised inflate stream.
                let rc = unsafe { inflateValidate(&mut *strm, 0) };
                assert_eq!(rc, z::Z_OK, "inflateValidate failed");
            }
            if !history.is_empty() {
                // SAFETY: a raw inflate stream accepts a dictionary before any input.
                let rc = unsafe {
                    z::inflateSetDictionary(&mut *strm, history.as_ptr(), history.len() as c_uint)
                };
                assert_eq!(rc, z::Z_OK, "inflateSetDictionary failed");
            }
            self.state = State::Live(strm);
        }
        match &mut self.state {
            State::Live(s) => s,
            _ => unreachable!("started above"),
        }
    }

    /// Gives zlib's state back, keeping only the history (the peer's window), if the
    /// stream stands at a byte-aligned block boundary (as it does after a block that
    /// ended with a sync flush); the next [`Inflater::inflate`] resumes. Returns whether
    /// the stream is now parked (or was never started).
    pub fn park(&mut self) -> bool {
        let State::Live(s) = &mut self.state else {
            return true;
        };
        // data_type: 128 = at a block boundary, 64 = after the last block, 0-63 = bits
        // held; 256 = inside a block.
        if self.failed || self.window_bits == 0 || s.data_type & 0x1ff != 128 {
            return false;
        }
        // SAFETY: a live inflate stream, replaced by what this returns.
        self.state = unsafe {
            parked(
                s,
                self.window_bits as u32,
                inflateGetDictionary,
                z::inflateEnd,
            )
        };
        true
    }

    /// Inflates all of `input`, appending at most `limit` bytes to `out`; output beyond the
    /// limit is decoded and discarded so the stream stays in sync. Returns whether the
    /// output exceeded the limit.
    pub fn inflate(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<bool, InflateError> {
        let mut window_bits = None;
        if self.failed {
            return Err(InflateError(
                "header compression context already failed".into(),
            ));
        }
        let mut overflow = false;
        let mut stalled = false;
        // Output past the limit lands here and is never read: left uninitialised, as
        // zeroing 4 KiB on every call was most of the cost of small header blocks.
        let mut discard = std::mem::MaybeUninit::<[u8; 4096]>::uninit();
        let dictionary = self.dictionary;
        let first = self.window_bits == 0;
        let s = self.stream();
        if first && s.total_in == 0 {
            if let Some(&cmf) = input.first() {
                // The zlib header's CINFO: log2 of the peer's window, minus 8.
                window_bits = Some(((cmf >> 4) + 8).min(15));
            }
        }
        s.next_in = input.as_ptr() as *mut u8;
        s.avail_in = input.len() as c_uint;
        let result = loop {
            let room = limit.saturating_sub(out.len());
            let (ptr, avail, into_out) = if room > 0 {
                // Z_BLOCK returns at each block: grow only when little room is left.
                let want = room.min(4096.max(input.len() * 4));
                if out.capacity() - out.len() < want.min(512) {
                    out.reserve(want);
                }
                let spare = (out.capacity() - out.len()).min(room);
                // SAFETY: within out's spare capacity.
                (unsafe { out.as_mut_ptr().add(out.len()) }, spare, true)
            } else {
                (discard.as_mut_ptr().cast::<u8>(), 4096, false)
            };
            s.next_out = ptr;
            s.avail_out = avail as c_uint;
            let before_in = s.avail_in;
            // SAFETY: pointers valid for their lengths.
            // Z_BLOCK: stop at block boundaries, so `data_type` says when one is reached.
            let rc = unsafe { z::inflate(s, z::Z_BLOCK) };
            let written = avail - s.avail_out as usize;
            if into_out {
                // SAFETY: inflate initialised `written` bytes.
                unsafe { out.set_len(out.len() + written) };
            } else if written > 0 {
                overflow = true;
            }
            match rc {
                z::Z_NEED_DICT => {
                    let want = s.adler as u32;
                    let have = adler32(dictionary);
                    if want != have {
                        break Err(InflateError(format!(
                            "dictionary id {want:#010x} is not the SPDY dictionary {have:#010x}"
                        )));
                    }
                    // SAFETY: dictionary is a valid slice.
                    let rc = unsafe {
                        z::inflateSetDictionary(s, dictionary.as_ptr(), dictionary.len() as c_uint)
                    };
                    if rc != z::Z_OK {
                        break Err(InflateError("inflateSetDictionary failed".into()));
                    }
                }
                z::Z_OK | z::Z_BUF_ERROR => {
                    if s.avail_in == 0 && s.avail_out != 0 {
                        break Ok(overflow);
                    }
                    // One call without progress is normal under Z_BLOCK (it stops at
                    // the boundary it starts on after a dictionary); two are not.
                    if rc == z::Z_BUF_ERROR && s.avail_in == before_in && written == 0 {
                        if stalled {
                            break Err(InflateError("inflate made no progress".into()));
                        }
                        stalled = true;
                    } else {
                        stalled = false;
                    }
                }
                z::Z_STREAM_END => {
                    if s.avail_in != 0 {
                        break Err(InflateError("data after the end of the zlib stream".into()));
                    }
                    break Ok(overflow);
                }
                _ => {
                    let msg = if s.msg.is_null() {
                        format!("inflate error {rc}")
                    } else {
                        // SAFETY: zlib sets msg to a static NUL-terminated string.
                        unsafe { std::ffi::CStr::from_ptr(s.msg) }
                            .to_string_lossy()
                            .into_owned()
                    };
                    break Err(InflateError(msg));
                }
            }
        };
        s.next_in = std::ptr::null_mut();
        s.next_out = std::ptr::null_mut();
        if let Some(wb) = window_bits {
            self.window_bits = wb;
        }
        if result.is_err() {
            self.failed = true;
        }
        result
    }
}

impl Drop for Inflater {
    fn drop(&mut self) {
        if let State::Live(s) = &mut self.state {
            // SAFETY: initialised when it became Live.
            unsafe { z::inflateEnd(&mut **s) };
        }
    }
}

/// Adler-32 checksum (RFC 1950), the DICTID of a preset dictionary.
pub fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += x as u32;
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    (b << 16) | a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::SPDY3_DICTIONARY;

    /// Header-like blocks from a fixed generator: repeats (so back-references span
    /// blocks) and fresh bytes.
    fn blocks(n: usize) -> Vec<Vec<u8>> {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        (0..n)
            .map(|i| {
                let mut b = format!(":path/img/{}.png user-agent Mozilla/5.0 accept */*", i % 7)
                    .into_bytes();
                for _ in 0..(next() % 600) {
                    b.push(b"abcdefgh=; /0123"[(next() % 16) as usize]);
                }
                b
            })
            .collect()
    }

    fn inflate_all(inf: &mut Inflater, wire: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let r = inf.inflate(wire, &mut out, 1 << 20);
        assert_eq!(r, Ok(false));
        out
    }

    #[test]
    fn parked_streams_continue_the_same_stream() {
        let mut def = Deflater::new(9, 11, 1, SPDY3_DICTIONARY);
        let mut never_parked = Inflater::new(SPDY3_DICTIONARY);
        let mut parked = Inflater::new(SPDY3_DICTIONARY);
        for (i, b) in blocks(300).iter().enumerate() {
            let mut wire = Vec::new();
            if i % 5 == 3 {
                // A CRIME-safe-like block: a Huffman-only stretch and a full flush.
                def.deflate(&b[..10], &mut wire, Flush::None);
                def.set_strategy(Strategy::HuffmanOnly, &mut wire);
                def.deflate(&b[10..], &mut wire, Flush::Full);
                def.set_strategy(Strategy::Default, &mut wire);
                def.deflate(&[], &mut wire, Flush::Sync);
            } else {
                def.deflate(b, &mut wire, Flush::Sync);
            }
            if i == 0 {
                assert_eq!(wire[0], 0x38, "a zlib header for a 2 KiB window");
            }
            assert_eq!(&inflate_all(&mut never_parked, &wire), b, "block {i}");
            assert_eq!(&inflate_all(&mut parked, &wire), b, "block {i}, parked");
            if i % 3 != 1 {
                assert!(def.park(), "deflater parks after a sync flush ({i})");
                assert!(matches!(&def.state, State::Parked(h) if h.len() <= 2048));
            }
            if i % 2 == 0 {
                assert!(parked.park(), "inflater parks at a block boundary ({i})");
                assert!(matches!(&parked.state, State::Parked(h) if h.len() <= 2048));
            }
        }
    }

    #[test]
    fn nothing_is_parked_mid_block() {
        let mut def = Deflater::new(9, 11, 1, SPDY3_DICTIONARY);
        assert!(def.park(), "an unstarted stream has nothing to give back");
        assert!(matches!(def.state, State::Unstarted));
        let data = blocks(2).concat();
        let mut wire = Vec::new();
        def.deflate(&data[..100], &mut wire, Flush::None);
        assert!(!def.park(), "input is buffered");
        def.deflate(&data[100..], &mut wire, Flush::Sync);
        let mut inf = Inflater::new(SPDY3_DICTIONARY);
        let half = wire.len() / 2;
        let mut out = inflate_all(&mut inf, &wire[..half]);
        assert!(!inf.park(), "half a block in");
        out.extend(inflate_all(&mut inf, &wire[half..]));
        assert_eq!(out, data);
        assert!(inf.park());
    }

    #[test]
    fn a_failed_or_finished_stream_is_not_parked() {
        let mut inf = Inflater::new(SPDY3_DICTIONARY);
        assert!(inf
            .inflate(b"\x78\x9c\xff\xff", &mut Vec::new(), 100)
            .is_err());
        assert!(!inf.park());
        assert!(
            inf.inflate(b"\x00", &mut Vec::new(), 100).is_err(),
            "still failed"
        );
    }
}
