//! Inflating gzip input files (a `.warc.gz`, a `.wprgo`) with a bound, so that a small
//! hostile file (a "gzip bomb": a few MB that inflate to many GB) is refused with a clear
//! error instead of taking the machine's memory.

use std::io::Read;

/// Inflated bytes always allowed, whatever the ratio.
pub const FLOOR: u64 = 256 << 20;
/// Inflated over compressed size beyond which a file is taken for a bomb (above
/// [`FLOOR`]). Text compresses about 3-10× with gzip; a WARC or WPR archive of pages
/// whose bodies are mostly already compressed (images, gzip-encoded text) less.
pub const MAX_RATIO: u64 = 100;
/// Inflated bytes never exceeded: more than a lab corpus needs, and what it must hold in
/// memory.
pub const CEILING: u64 = 4 << 30;

/// The most `compressed` bytes may inflate to: [`MAX_RATIO`] × their size, at least
/// [`FLOOR`], at most [`CEILING`].
pub fn limit(compressed: usize) -> u64 {
    (compressed as u64)
        .saturating_mul(MAX_RATIO)
        .clamp(FLOOR, CEILING)
}

/// Inflates every gzip member of `data`, at most [`limit`]`(data.len())` bytes; an error
/// says where the data went bad or that it inflates past the limit.
pub fn gunzip(data: &[u8]) -> Result<Vec<u8>, String> {
    gunzip_at_most(data, limit(data.len()))
}

/// [`gunzip`] with the limit given.
pub fn gunzip_at_most(data: &[u8], max: u64) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(data.len().saturating_mul(4).min(max as usize));
    flate2::read::MultiGzDecoder::new(data)
        .take(max + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("gzip: {e} (at byte {} of the decompressed data)", out.len()))?;
    if out.len() as u64 > max {
        return Err(format!(
            "gzip: the {} compressed bytes inflate to more than {} bytes ({}× or {} MiB, \
             whichever is more, up to {} GiB: a file past that is refused as a gzip bomb)",
            data.len(),
            max,
            MAX_RATIO,
            FLOOR >> 20,
            CEILING >> 30
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn inflates_within_the_limit_and_refuses_past_it() {
        let text = b"WARC/1.1\r\n".repeat(1000);
        assert_eq!(gunzip(&gz(&text)).unwrap(), text);
        // Two members, as a .warc.gz has one per record.
        let mut two = gz(b"ab");
        two.extend(gz(b"cd"));
        assert_eq!(gunzip(&two).unwrap(), b"abcd");
        // 1 MiB of zeros is a ~1 KiB file: past a limit of 100 KiB, refused, by name.
        let zeros = gz(&vec![0u8; 1 << 20]);
        let e = gunzip_at_most(&zeros, 100 << 10).unwrap_err();
        assert!(e.contains("gzip bomb") && e.contains("102400 bytes"), "{e}");
        assert_eq!(gunzip_at_most(&zeros, 1 << 20).unwrap().len(), 1 << 20);
        let e = gunzip(&zeros[..zeros.len() / 2]).unwrap_err();
        assert!(e.starts_with("gzip: "), "{e}");
    }

    #[test]
    fn the_limit_is_a_ratio_between_a_floor_and_a_ceiling() {
        assert_eq!(limit(1000), FLOOR);
        assert_eq!(limit(10 << 20), 1000 << 20);
        assert_eq!(limit(1 << 30), CEILING);
    }
}
