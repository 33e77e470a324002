//! Header blocks: the name/value list carried by SYN_STREAM, SYN_REPLY and HEADERS,
//! and its uncompressed wire layout (digest §4.1).
//!
//! ```text
//! SPDY/3:  u32 N | { u32 name_len | name | u32 value_len | value } × N
//! SPDY/2:  u16 N | { u16 name_len | name | u16 value_len | value } × N
//! ```
//! Names are non-empty, lower-case, printable ASCII and distinct. Several values for one
//! name are joined with a single NUL byte.

use crate::Version;
use bytes::{BufMut, Bytes};
use std::collections::{HashMap, HashSet};

/// An ordered list of header names and values.
///
/// Adding a name that is already present appends the value NUL-separated, so a block
/// always has distinct names, as the wire format requires.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Headers {
    entries: Vec<(Bytes, Bytes)>,
}

/// Why a header block was rejected (each is a stream error PROTOCOL_ERROR, digest §3.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// The block ended before the counts said it would.
    Truncated,
    /// Bytes follow the last pair.
    TrailingBytes,
    /// A name is empty.
    EmptyName,
    /// A name has an upper-case letter or a byte outside printable ASCII.
    InvalidName,
    /// The same name appears twice.
    DuplicateName,
    /// A value has an empty NUL-separated segment, or a control character.
    InvalidValue,
    /// The pair count cannot fit in the block.
    TooManyPairs,
}

impl std::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            HeaderError::Truncated => "header block truncated",
            HeaderError::TrailingBytes => "bytes after the last header pair",
            HeaderError::EmptyName => "empty header name",
            HeaderError::InvalidName => "header name not lower-case printable ASCII",
            HeaderError::DuplicateName => "duplicate header name",
            HeaderError::InvalidValue => "invalid header value",
            HeaderError::TooManyPairs => "header pair count larger than the block",
        };
        f.write_str(s)
    }
}

impl std::error::Error for HeaderError {}

impl Headers {
    /// An empty block.
    pub fn new() -> Headers {
        Headers::default()
    }

    /// An empty block with room for `n` pairs.
    pub fn with_capacity(n: usize) -> Headers {
        Headers {
            entries: Vec::with_capacity(n),
        }
    }

    /// Adds a value under a constant name without copying either (a response's
    /// `:status`, a file's `content-type`); otherwise as [`Headers::add`], which it falls
    /// back to for a name with upper-case letters.
    pub fn add_static(&mut self, name: &'static str, value: Bytes) {
        if name.bytes().any(|b| b.is_ascii_uppercase()) {
            return self.add(name, value);
        }
        match self
            .entries
            .iter_mut()
            .find(|(n, _)| n[..] == *name.as_bytes())
        {
            Some(e) => join(&mut e.1, &value),
            None => self
                .entries
                .push((Bytes::from_static(name.as_bytes()), value)),
        }
    }

    /// Builds a block from `(name, value)` pairs; names are lower-cased.
    pub fn from_pairs<N: AsRef<str>, V: AsRef<[u8]>>(
        pairs: impl IntoIterator<Item = (N, V)>,
    ) -> Headers {
        let mut h = Headers::new();
        for (n, v) in pairs {
            h.add(n.as_ref(), v.as_ref());
        }
        h
    }

    /// Adds a value; the name is lower-cased. A repeated name gets the value appended
    /// after a NUL separator (in amortised constant time per byte: repeating a name
    /// many times costs linear, not quadratic, copying).
    pub fn add(&mut self, name: &str, value: impl AsRef<[u8]>) {
        let value = value.as_ref();
        let lower = name.to_ascii_lowercase();
        if let Some(e) = self
            .entries
            .iter_mut()
            .find(|(n, _)| n[..] == *lower.as_bytes())
        {
            join(&mut e.1, value);
        } else {
            self.entries.push((
                Bytes::from(lower.into_bytes()),
                Bytes::copy_from_slice(value),
            ));
        }
    }

    /// Adds every pair of `other` (names as they are: blocks from the wire are already
    /// lower-case), joining repeated names as [`Headers::add`] does, in time linear in
    /// the two blocks' sizes (a hash index replaces the per-name scan for large blocks).
    pub fn merge(&mut self, other: Headers) {
        if other.entries.len() <= SMALL {
            for (n, v) in other.entries {
                match self.entries.iter_mut().find(|(m, _)| *m == n) {
                    Some(e) => join(&mut e.1, &v),
                    None => self.entries.push((n, v)),
                }
            }
            return;
        }
        let mut index: HashMap<Bytes, usize> = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.clone(), i))
            .collect();
        for (n, v) in other.entries {
            match index.get(&n) {
                Some(&i) => join(&mut self.entries[i].1, &v),
                None => {
                    index.insert(n.clone(), self.entries.len());
                    self.entries.push((n, v));
                }
            }
        }
    }

    /// Sets a name to one value, replacing any earlier value.
    pub fn set(&mut self, name: &str, value: impl AsRef<[u8]>) {
        self.remove(name);
        self.add(name, value);
    }

    /// Removes a name; returns its value if it was present.
    pub fn remove(&mut self, name: &str) -> Option<Bytes> {
        let i = self
            .entries
            .iter()
            .position(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))?;
        Some(self.entries.remove(i).1)
    }

    /// The raw value of a name (NUL-joined if it has several).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.entries
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| &v[..])
    }

    /// The value of a name as UTF-8 text, if present and valid.
    pub fn get_str(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(|v| std::str::from_utf8(v).ok())
    }

    /// Whether the name is present.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The `(name, value)` pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.entries.iter().map(|(n, v)| (&n[..], &v[..]))
    }

    /// Number of distinct names.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the block is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Size of the uncompressed name/value block in this version's layout.
    pub fn encoded_len(&self, version: Version) -> usize {
        let w = int_width(version);
        w + self
            .entries
            .iter()
            .map(|(n, v)| 2 * w + n.len() + v.len())
            .sum::<usize>()
    }

    /// Writes the uncompressed name/value block.
    pub fn encode(&self, version: Version, out: &mut impl BufMut) {
        put_int(out, version, self.entries.len());
        for (n, v) in &self.entries {
            put_int(out, version, n.len());
            out.put_slice(n);
            put_int(out, version, v.len());
            out.put_slice(v);
        }
    }

    /// Parses and validates an uncompressed name/value block.
    pub fn decode(version: Version, block: &[u8]) -> Result<Headers, HeaderError> {
        let w = int_width(version);
        let mut pos = 0usize;
        let count = get_int(block, &mut pos, w)?;
        // Each pair needs at least 2w+1 bytes; refuse counts that cannot fit before allocating.
        if count > block.len().saturating_sub(w) / (2 * w + 1) {
            return Err(HeaderError::TooManyPairs);
        }
        let mut entries: Vec<(Bytes, Bytes)> = Vec::with_capacity(count);
        // One copy of the block; every name and value is a slice of it (no allocation
        // per pair).
        let all = Bytes::copy_from_slice(block);
        let block: &[u8] = &all;
        let slice = |part: &[u8]| all.slice_ref(part);
        // Distinct names, checked in linear time: a scan for small blocks, a hash set
        // beyond (a hostile block of thousands of names must not cost n²).
        let mut seen: HashSet<&[u8]> = HashSet::new();
        for _ in 0..count {
            let nlen = get_int(block, &mut pos, w)?;
            let name = take(block, &mut pos, nlen)?;
            validate_name(name)?;
            let vlen = get_int(block, &mut pos, w)?;
            let value = take(block, &mut pos, vlen)?;
            validate_value(value)?;
            let dup = if count <= SMALL {
                entries.iter().any(|(n, _)| n[..] == *name)
            } else {
                !seen.insert(name)
            };
            if dup {
                return Err(HeaderError::DuplicateName);
            }
            entries.push((slice(name), slice(value)));
        }
        if pos != block.len() {
            return Err(HeaderError::TrailingBytes);
        }
        Ok(Headers { entries })
    }
}

/// Up to this many names, a linear scan beats hashing.
const SMALL: usize = 16;

/// Appends `value` to `joined` after a NUL. The buffer is taken back without copying
/// when `joined` is its only owner, and grows geometrically, so n appends copy O(total).
fn join(joined: &mut Bytes, value: &[u8]) {
    let mut v = Vec::from(std::mem::take(joined));
    v.reserve(1 + value.len());
    v.push(0);
    v.extend_from_slice(value);
    *joined = Bytes::from(v);
}

fn int_width(version: Version) -> usize {
    if version == Version::V2 {
        2
    } else {
        4
    }
}

fn put_int(out: &mut impl BufMut, version: Version, n: usize) {
    if version == Version::V2 {
        out.put_u16(n as u16);
    } else {
        out.put_u32(n as u32);
    }
}

fn get_int(b: &[u8], pos: &mut usize, w: usize) -> Result<usize, HeaderError> {
    let s = take(b, pos, w)?;
    Ok(if w == 2 {
        u16::from_be_bytes([s[0], s[1]]) as usize
    } else {
        u32::from_be_bytes([s[0], s[1], s[2], s[3]]) as usize
    })
}

fn take<'a>(b: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8], HeaderError> {
    let end = pos.checked_add(n).ok_or(HeaderError::Truncated)?;
    let s = b.get(*pos..end).ok_or(HeaderError::Truncated)?;
    *pos = end;
    Ok(s)
}

fn validate_name(name: &[u8]) -> Result<(), HeaderError> {
    if name.is_empty() {
        return Err(HeaderError::EmptyName);
    }
    if name
        .iter()
        .any(|&c| !(0x20..=0x7e).contains(&c) || c.is_ascii_uppercase())
    {
        return Err(HeaderError::InvalidName);
    }
    Ok(())
}

fn validate_value(value: &[u8]) -> Result<(), HeaderError> {
    // Most values hold neither NULs nor control bytes: one branch-free pass settles them.
    if value
        .iter()
        .fold(true, |ok, &c| ok & (c >= 0x20) & (c != 0x7f))
    {
        return Ok(());
    }
    // NUL separates values: none at the edges, no empty segment (digest §4.1).
    if value.first() == Some(&0)
        || value.last() == Some(&0)
        || value.windows(2).any(|w| w == [0, 0])
    {
        return Err(HeaderError::InvalidValue);
    }
    if value
        .iter()
        .any(|&c| c != 0 && c != b'\t' && (c < 0x20 || c == 0x7f))
    {
        return Err(HeaderError::InvalidValue);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_duplicate_among_thousands_of_names() {
        let names: Vec<String> = (0..3000).map(|i| format!("n{i}")).collect();
        let mut h = Headers::new();
        for n in &names {
            h.entries.push((Bytes::from(n.clone()), Bytes::new()));
        }
        let mut block = Vec::new();
        h.encode(Version::V3, &mut block);
        assert_eq!(Headers::decode(Version::V3, &block).unwrap().len(), 3000);
        h.entries.push((Bytes::from("n1234"), Bytes::new()));
        block.clear();
        h.encode(Version::V3, &mut block);
        assert_eq!(
            Headers::decode(Version::V3, &block),
            Err(HeaderError::DuplicateName)
        );
    }

    #[test]
    fn merges_and_joins_repeated_names() {
        for extra in [2usize, 40] {
            let mut a = Headers::from_pairs([("a", "1"), ("b", "2")]);
            let mut b = Headers::from_pairs([("b", "3"), ("c", "4")]);
            for i in 0..extra {
                b.add(&format!("x{i}"), "v");
            }
            a.merge(b);
            assert_eq!(a.get("b"), Some(&b"2\x003"[..]));
            assert_eq!(a.get("c"), Some(&b"4"[..]));
            assert_eq!(a.len(), 3 + extra);
        }
        let mut h = Headers::new();
        for _ in 0..300 {
            h.add("x-repeat", "ab");
        }
        assert_eq!(h.get("x-repeat").unwrap().len(), 300 * 3 - 1);
    }

    #[test]
    fn round_trips_v3_and_v2() {
        let h = Headers::from_pairs([("bar", "foo"), ("foo", "bar")]);
        for v in [Version::V2, Version::V3] {
            let mut out = Vec::new();
            h.encode(v, &mut out);
            assert_eq!(out.len(), h.encoded_len(v));
            assert_eq!(Headers::decode(v, &out).unwrap(), h);
        }
    }

    #[test]
    fn joins_repeated_names_with_nul() {
        let mut h = Headers::new();
        h.add("Set-Cookie", "a=1");
        h.add("set-cookie", "b=2");
        assert_eq!(h.get("set-cookie").unwrap(), b"a=1\0b=2");
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn rejects_bad_blocks() {
        let enc = |pairs: &[(&[u8], &[u8])]| {
            let mut b = (pairs.len() as u32).to_be_bytes().to_vec();
            for (n, v) in pairs {
                b.extend((n.len() as u32).to_be_bytes());
                b.extend(*n);
                b.extend((v.len() as u32).to_be_bytes());
                b.extend(*v);
            }
            b
        };
        let d = |b: Vec<u8>| Headers::decode(Version::V3, &b);
        assert_eq!(d(enc(&[(b"", b"x")])), Err(HeaderError::EmptyName));
        assert_eq!(d(enc(&[(b"Host", b"x")])), Err(HeaderError::InvalidName));
        assert_eq!(
            d(enc(&[(b"a", b"x"), (b"a", b"y")])),
            Err(HeaderError::DuplicateName)
        );
        assert_eq!(d(enc(&[(b"a", b"x\0\0y")])), Err(HeaderError::InvalidValue));
        assert_eq!(d(enc(&[(b"a", b"\0y")])), Err(HeaderError::InvalidValue));
        assert_eq!(
            d(vec![0, 0, 0, 1, 0, 0, 0, 9]),
            Err(HeaderError::TooManyPairs)
        );
        assert_eq!(
            d(vec![0xff, 0xff, 0xff, 0xff]),
            Err(HeaderError::TooManyPairs)
        );
        let mut t = enc(&[(b"a", b"x")]);
        t.push(0);
        assert_eq!(d(t), Err(HeaderError::TrailingBytes));
        assert!(
            d(enc(&[(b"a", b"")])).is_ok(),
            "empty values are legal in SPDY/3"
        );
    }
}
