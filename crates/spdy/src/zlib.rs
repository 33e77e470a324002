//! A small safe wrapper over zlib's streaming deflate/inflate (stock zlib via `libz-sys`).
//!
//! Why stock zlib and not zlib-rs (DESIGN.md's default): zlib-rs allocates a fixed
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

/// A zlib-format deflate stream.
pub struct Deflater {
    strm: Box<z::z_stream>,
    level: c_int,
}

// SAFETY: the stream is owned exclusively and zlib keeps no thread-local state.
unsafe impl Send for Deflater {}

impl Deflater {
    /// Creates a zlib-format compressor with a preset dictionary.
    pub fn new(level: u32, window_bits: u8, mem_level: u8, dictionary: &[u8]) -> Deflater {
        let mut strm = new_stream();
        let level = level.min(9) as c_int;
        let wb = window_bits.clamp(9, 15) as c_int;
        let ml = mem_level.clamp(1, 9) as c_int;
        // SAFETY: strm is a valid, boxed (pinned) z_stream; version/size match libz-sys.
        unsafe {
            let rc = z::deflateInit2_(
                &mut *strm,
                level,
                z::Z_DEFLATED,
                wb,
                ml,
                z::Z_DEFAULT_STRATEGY,
                z::zlibVersion(),
                std::mem::size_of::<z::z_stream>() as c_int,
            );
            assert_eq!(rc, z::Z_OK, "deflateInit2 failed (out of memory?)");
            let rc = z::deflateSetDictionary(
                &mut *strm,
                dictionary.as_ptr(),
                dictionary.len() as c_uint,
            );
            assert_eq!(rc, z::Z_OK, "deflateSetDictionary failed");
        }
        Deflater { strm, level }
    }

    /// Compresses `input` into `out` with the given flush mode.
    pub fn deflate(&mut self, input: &[u8], out: &mut Vec<u8>, flush: Flush) {
        let s = &mut *self.strm;
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
    }

    /// Switches the strategy; any buffered input is first flushed to a block boundary.
    pub fn set_strategy(&mut self, strategy: Strategy, out: &mut Vec<u8>) {
        self.deflate(&[], out, Flush::Block);
        let st = match strategy {
            Strategy::Default => z::Z_DEFAULT_STRATEGY,
            Strategy::HuffmanOnly => z::Z_HUFFMAN_ONLY,
        };
        // SAFETY: valid initialised stream; pending input was flushed above.
        // deflateParams may itself call deflate(Z_BLOCK): give it a valid output buffer.
        let mut spare = [0u8; 64];
        let s = &mut *self.strm;
        s.next_out = spare.as_mut_ptr();
        s.avail_out = spare.len() as c_uint;
        // SAFETY: valid initialised stream; next_out points to `spare`.
        let rc = unsafe { z::deflateParams(s, self.level, st) };
        let written = spare.len() - s.avail_out as usize;
        out.extend_from_slice(&spare[..written]);
        s.next_out = std::ptr::null_mut();
        assert_eq!(rc, z::Z_OK, "deflateParams failed after a block flush");
    }
}

impl Drop for Deflater {
    fn drop(&mut self) {
        // SAFETY: initialised in new().
        unsafe {
            z::deflateEnd(&mut *self.strm);
        }
    }
}

/// Why inflating failed. After this the stream is unusable (a session error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InflateError(pub String);

/// A zlib-format inflate stream expecting a preset dictionary.
pub struct Inflater {
    strm: Box<z::z_stream>,
    dictionary: &'static [u8],
    failed: bool,
}

// SAFETY: see Deflater.
unsafe impl Send for Inflater {}

impl Inflater {
    /// Creates an inflater; windowBits 0 takes the window size from the peer's zlib header,
    /// so a peer compressing with a 2 KiB window costs only 2 KiB here.
    pub fn new(dictionary: &'static [u8]) -> Inflater {
        let mut strm = new_stream();
        // SAFETY: valid boxed stream.
        unsafe {
            let rc = z::inflateInit2_(
                &mut *strm,
                0,
                z::zlibVersion(),
                std::mem::size_of::<z::z_stream>() as c_int,
            );
            assert_eq!(rc, z::Z_OK, "inflateInit2 failed (out of memory?)");
        }
        Inflater {
            strm,
            dictionary,
            failed: false,
        }
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
        if self.failed {
            return Err(InflateError(
                "header compression context already failed".into(),
            ));
        }
        let mut overflow = false;
        let mut discard = [0u8; 4096];
        let s = &mut *self.strm;
        s.next_in = input.as_ptr() as *mut u8;
        s.avail_in = input.len() as c_uint;
        let result = loop {
            let room = limit.saturating_sub(out.len());
            let (ptr, avail, into_out) = if room > 0 {
                out.reserve(room.min(4096.max(input.len() * 4)));
                let spare = (out.capacity() - out.len()).min(room);
                // SAFETY: within out's spare capacity.
                (unsafe { out.as_mut_ptr().add(out.len()) }, spare, true)
            } else {
                (discard.as_mut_ptr(), discard.len(), false)
            };
            s.next_out = ptr;
            s.avail_out = avail as c_uint;
            let before_in = s.avail_in;
            // SAFETY: pointers valid for their lengths.
            let rc = unsafe { z::inflate(s, z::Z_SYNC_FLUSH) };
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
                    let have = adler32(self.dictionary);
                    if want != have {
                        break Err(InflateError(format!(
                            "dictionary id {want:#010x} is not the SPDY dictionary {have:#010x}"
                        )));
                    }
                    // SAFETY: dictionary is a valid slice.
                    let rc = unsafe {
                        z::inflateSetDictionary(
                            s,
                            self.dictionary.as_ptr(),
                            self.dictionary.len() as c_uint,
                        )
                    };
                    if rc != z::Z_OK {
                        break Err(InflateError("inflateSetDictionary failed".into()));
                    }
                }
                z::Z_OK | z::Z_BUF_ERROR => {
                    if s.avail_in == 0 && s.avail_out != 0 {
                        break Ok(overflow);
                    }
                    if rc == z::Z_BUF_ERROR && s.avail_in == before_in && written == 0 {
                        break Err(InflateError("inflate made no progress".into()));
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
        if result.is_err() {
            self.failed = true;
        }
        result
    }
}

impl Drop for Inflater {
    fn drop(&mut self) {
        // SAFETY: initialised in new().
        unsafe {
            z::inflateEnd(&mut *self.strm);
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
