//! The HPACK encoder (RFC 7541 §2, §4.2, §6): header lists in, field blocks out.

use super::primitive::{encode_integer, encode_string};
use super::static_table::{self, Match};
use super::table::DynamicTable;
use super::{huffman, Field, DEFAULT_TABLE_SIZE};
use bytes::BufMut;

/// When string literals are Huffman-coded (§5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum HuffmanPolicy {
    /// Always raw.
    Never,
    /// Always Huffman-coded (as in RFC 7541 Appendix C.4 and C.6).
    Always,
    /// Huffman-coded when strictly shorter than raw (ties stay raw: cheaper to decode).
    #[default]
    Shorter,
}

/// Which literals go into the dynamic table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IndexPolicy {
    /// Every field not found in a table is sent as "literal with incremental indexing"
    /// (as in RFC 7541 Appendix C), except sensitive fields and fields too large for
    /// the table (adding those would only empty it).
    #[default]
    Always,
    /// Nothing is added to the dynamic table: literals are sent "without indexing", and
    /// only the static table is used.
    Never,
}

/// Encodes the field blocks of one direction of a connection.
///
/// The dynamic table size follows the peer's SETTINGS_HEADER_TABLE_SIZE
/// ([`set_peer_table_size`](Self::set_peer_table_size)) capped by this encoder's own
/// ceiling ([`set_table_size_cap`](Self::set_table_size_cap)); any change is signalled
/// by a size update at the start of the next block (§4.2), the smallest size in the
/// interval first if the size went down and back up.
///
/// Per field, in order of preference: an exact static match (one byte), an exact
/// dynamic match (neither for fields marked sensitive), then a literal naming a static (preferred) or dynamic entry, then a
/// literal with a literal name.
#[derive(Clone, Debug)]
pub struct Encoder {
    table: DynamicTable,
    cap: usize,
    peer_limit: usize,
    pending: Option<(usize, usize)>,
    huffman: HuffmanPolicy,
    indexing: IndexPolicy,
    never_index_sensitive: bool,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder::new()
    }
}

impl Encoder {
    /// An encoder with the default 4,096-byte table, Huffman when shorter, indexing
    /// every field, and sensitive fields never indexed.
    pub fn new() -> Encoder {
        Encoder::with_table_size(DEFAULT_TABLE_SIZE)
    }

    /// An encoder whose table is `size` bytes from the start, with no size update
    /// pending: for a connection where the peer's SETTINGS_HEADER_TABLE_SIZE is `size`
    /// before the first block (as in RFC 7541 Appendix C.5). The cap is `size` too.
    pub fn with_table_size(size: usize) -> Encoder {
        Encoder {
            table: DynamicTable::new(size),
            cap: size,
            peer_limit: size,
            pending: None,
            huffman: HuffmanPolicy::default(),
            indexing: IndexPolicy::default(),
            never_index_sensitive: true,
        }
    }

    /// Sets when strings are Huffman-coded.
    pub fn set_huffman(&mut self, policy: HuffmanPolicy) {
        self.huffman = policy;
    }

    /// Sets which literals are added to the dynamic table.
    pub fn set_indexing(&mut self, policy: IndexPolicy) {
        self.indexing = policy;
    }

    /// Whether `authorization`, `proxy-authorization` and short (under 20 bytes)
    /// `cookie` values are sent "never indexed" even if the caller did not mark them
    /// sensitive (§7.1.3). On by default.
    pub fn set_never_index_sensitive(&mut self, on: bool) {
        self.never_index_sensitive = on;
    }

    /// Applies the peer's SETTINGS_HEADER_TABLE_SIZE.
    pub fn set_peer_table_size(&mut self, size: usize) {
        self.peer_limit = size;
        self.resize();
    }

    /// Sets this encoder's own ceiling on the table size (memory bound); the table is
    /// the smaller of this and the peer's limit.
    pub fn set_table_size_cap(&mut self, cap: usize) {
        self.cap = cap;
        self.resize();
    }

    /// The dynamic table.
    pub fn table(&self) -> &DynamicTable {
        &self.table
    }

    fn resize(&mut self) {
        let target = self.cap.min(self.peer_limit);
        if target == self.table.max_size() {
            return;
        }
        // Evicting now is what the peer's decoder will do on reading the update.
        self.table.set_max_size(target);
        self.pending = Some(match self.pending {
            Some((min, _)) => (min.min(target), target),
            None => (target, target),
        });
    }

    /// Appends the field block for `fields`, in order, to `dst`.
    pub fn encode<'a, I, T, D>(&mut self, fields: I, dst: &mut D)
    where
        I: IntoIterator<Item = T>,
        T: Into<Field<'a>>,
        D: BufMut,
    {
        if let Some((min, last)) = self.pending.take() {
            if min < last {
                encode_integer(min as u32, 5, 0x20, dst);
            }
            encode_integer(last as u32, 5, 0x20, dst);
        }
        for field in fields {
            self.encode_field(field.into(), dst);
        }
    }

    fn encode_field<D: BufMut>(&mut self, f: Field<'_>, dst: &mut D) {
        let found = static_table::find(f.name, f.value);
        // A field the caller marked sensitive keeps the never-indexed form even when
        // the static table has it, so that an intermediary forwards it as it came
        // (§6.2.3).
        if let (Some(Match::Full(i)), false) = (found, f.sensitive) {
            encode_integer(i as u32, 7, 0x80, dst);
            return;
        }
        let sensitive = f.sensitive || (self.never_index_sensitive && is_sensitive(&f));
        let (dyn_full, dyn_name) = self.table.find(f.name, f.value);
        let dynamic = |i: usize| (i + static_table::LEN + 1) as u32;
        if let (Some(i), false) = (dyn_full, sensitive) {
            encode_integer(dynamic(i), 7, 0x80, dst);
            return;
        }
        let name_index = match found {
            Some(Match::Name(i)) => Some(i as u32),
            _ => dyn_name.map(dynamic),
        };
        let index_it =
            !sensitive && self.indexing == IndexPolicy::Always && f.size() <= self.table.max_size();
        let (prefix, flags) = match (sensitive, index_it) {
            (true, _) => (4, 0x10),
            (false, true) => (6, 0x40),
            (false, false) => (4, 0x00),
        };
        match name_index {
            Some(i) => encode_integer(i, prefix, flags, dst),
            None => {
                encode_integer(0, prefix, flags, dst);
                self.string(f.name, dst);
            }
        }
        self.string(f.value, dst);
        if index_it {
            self.table.insert(f.name, f.value);
        }
    }

    fn string<D: BufMut>(&self, s: &[u8], dst: &mut D) {
        let coded_len = match self.huffman {
            HuffmanPolicy::Never => None,
            HuffmanPolicy::Always => Some(huffman::encoded_len(s)),
            HuffmanPolicy::Shorter => Some(huffman::encoded_len(s)).filter(|&n| n < s.len()),
        };
        match coded_len {
            Some(n) => {
                encode_integer(n as u32, 7, 0x80, dst);
                huffman::encode(s, dst);
            }
            None => encode_string(s, false, dst),
        }
    }
}

/// Fields that carry credentials and are kept out of the dynamic table by default.
fn is_sensitive(f: &Field<'_>) -> bool {
    match f.name {
        b"authorization" | b"proxy-authorization" => true,
        b"cookie" => f.value.len() < 20,
        _ => false,
    }
}
