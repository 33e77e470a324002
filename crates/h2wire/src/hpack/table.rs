//! The HPACK dynamic table (RFC 7541 §2.3.2, §4): a FIFO of header fields, newest
//! first, bounded in size, where an entry's size is its name and value lengths plus 32.
//!
//! Each entry owns one buffer holding name then value. Evicted buffers are kept (a few
//! of them) and reused by later insertions, so a table in steady state inserts without
//! allocating once buffers of the right sizes are around.

use std::collections::VecDeque;

/// Per-entry overhead counted in the table size (§4.1).
pub const ENTRY_OVERHEAD: usize = 32;

/// How many evicted buffers are kept for reuse.
const SPARE_BUFFERS: usize = 16;

#[derive(Clone, Debug)]
struct Entry {
    bytes: Vec<u8>,
    name_len: usize,
}

impl Entry {
    fn name(&self) -> &[u8] {
        &self.bytes[..self.name_len]
    }

    fn value(&self) -> &[u8] {
        &self.bytes[self.name_len..]
    }

    fn size(&self) -> usize {
        self.bytes.len() + ENTRY_OVERHEAD
    }
}

/// An HPACK dynamic table. Index 0 here is the newest entry, which is HPACK index 62.
#[derive(Clone, Debug)]
pub struct DynamicTable {
    entries: VecDeque<Entry>,
    size: usize,
    max_size: usize,
    spare: Vec<Vec<u8>>,
}

impl DynamicTable {
    /// An empty table whose maximum size is `max_size` bytes.
    pub fn new(max_size: usize) -> DynamicTable {
        DynamicTable {
            entries: VecDeque::new(),
            size: 0,
            max_size,
            spare: Vec::new(),
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Current size: the sum of entry sizes (name + value + 32 each).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Maximum size.
    pub fn max_size(&self) -> usize {
        self.max_size
    }

    /// Entry `i` (0 = newest) as `(name, value)`.
    pub fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.entries.get(i).map(|e| (e.name(), e.value()))
    }

    /// The entries, newest first.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.entries.iter().map(|e| (e.name(), e.value()))
    }

    /// Changes the maximum size, evicting oldest entries until the table fits (§4.3).
    pub fn set_max_size(&mut self, max_size: usize) {
        self.max_size = max_size;
        self.evict_to(max_size);
    }

    /// Adds `(name, value)` as the newest entry, evicting as needed (§4.4). An entry
    /// larger than the maximum size empties the table and is not added.
    pub fn insert(&mut self, name: &[u8], value: &[u8]) {
        let mut bytes = self.buffer(name.len() + value.len());
        bytes.extend_from_slice(name);
        bytes.extend_from_slice(value);
        self.push(Entry {
            bytes,
            name_len: name.len(),
        });
    }

    /// Adds an entry whose name is that of entry `name_of` (0 = newest), which may be
    /// evicted by this very insertion (§4.4: the name is copied first).
    ///
    /// # Panics
    /// If `name_of` is out of range.
    pub fn insert_with_name_of(&mut self, name_of: usize, value: &[u8]) {
        let name_len = self.entries[name_of].name_len;
        let mut bytes = self.buffer(name_len + value.len());
        bytes.extend_from_slice(self.entries[name_of].name());
        bytes.extend_from_slice(value);
        self.push(Entry { bytes, name_len });
    }

    /// Finds `(name, value)`: the newest entry equal to both, and the newest entry with
    /// that name (indices 0 = newest).
    pub fn find(&self, name: &[u8], value: &[u8]) -> (Option<usize>, Option<usize>) {
        let mut by_name = None;
        for (i, e) in self.entries.iter().enumerate() {
            if e.name_len == name.len() && e.name() == name {
                if e.value() == value {
                    return (Some(i), by_name.or(Some(i)));
                }
                by_name = by_name.or(Some(i));
            }
        }
        (None, by_name)
    }

    fn buffer(&mut self, len: usize) -> Vec<u8> {
        match self.spare.iter().position(|b| b.capacity() >= len) {
            Some(i) => self.spare.swap_remove(i),
            None => self.spare.pop().unwrap_or_default(),
        }
    }

    fn push(&mut self, entry: Entry) {
        let size = entry.size();
        if size > self.max_size {
            self.evict_to(0);
            self.recycle(entry.bytes);
            return;
        }
        self.evict_to(self.max_size - size);
        self.size += size;
        self.entries.push_front(entry);
    }

    fn evict_to(&mut self, target: usize) {
        while self.size > target {
            let Some(e) = self.entries.pop_back() else {
                break;
            };
            self.size -= e.size();
            self.recycle(e.bytes);
        }
    }

    fn recycle(&mut self, mut bytes: Vec<u8>) {
        if self.spare.len() < SPARE_BUFFERS {
            bytes.clear();
            self.spare.push(bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_count_name_value_and_32() {
        let mut t = DynamicTable::new(4096);
        t.insert(b"custom-key", b"custom-header");
        assert_eq!(t.size(), 55);
        assert_eq!(t.get(0), Some((&b"custom-key"[..], &b"custom-header"[..])));
    }

    #[test]
    fn evicts_oldest_first_and_never_exceeds_max() {
        let mut t = DynamicTable::new(100);
        t.insert(b"a", b"1"); // 34
        t.insert(b"b", b"2"); // 68
        t.insert(b"c", b"3"); // 102 > 100: evicts a
        assert_eq!(t.len(), 2);
        assert_eq!(t.size(), 68);
        assert_eq!(t.get(1), Some((&b"b"[..], &b"2"[..])));
    }

    #[test]
    fn an_entry_larger_than_the_table_empties_it() {
        let mut t = DynamicTable::new(40);
        t.insert(b"a", b"1");
        t.insert(b"name", b"a value far too long");
        assert!(t.is_empty());
        assert_eq!(t.size(), 0);
    }

    #[test]
    fn insertion_may_name_the_entry_it_evicts() {
        let mut t = DynamicTable::new(70);
        t.insert(b"name", b"v1"); // 38
        t.insert_with_name_of(0, b"v2-longer"); // 45: evicts the entry it names
        assert_eq!(t.len(), 1);
        assert_eq!(t.get(0), Some((&b"name"[..], &b"v2-longer"[..])));
    }

    #[test]
    fn shrinking_evicts_and_zero_clears() {
        let mut t = DynamicTable::new(4096);
        t.insert(b"a", b"1");
        t.insert(b"b", b"2");
        t.set_max_size(40);
        assert_eq!(t.len(), 1);
        t.set_max_size(0);
        assert!(t.is_empty());
    }

    #[test]
    fn find_prefers_the_newest_entry() {
        let mut t = DynamicTable::new(4096);
        t.insert(b"x", b"1");
        t.insert(b"x", b"2");
        assert_eq!(t.find(b"x", b"1"), (Some(1), Some(0)));
        assert_eq!(t.find(b"x", b"3"), (None, Some(0)));
        assert_eq!(t.find(b"y", b"1"), (None, None));
    }
}
