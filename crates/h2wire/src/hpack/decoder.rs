//! The HPACK decoder (RFC 7541 §3, §6): field blocks in, fields out.

use super::primitive::{decode_integer, decode_string};
use super::table::DynamicTable;
use super::{static_table, DecodeError, Field, HeaderList, DEFAULT_TABLE_SIZE};

/// Default bound on the decoded header list (name + value + 32 per field): 64 KiB.
pub const DEFAULT_MAX_HEADER_LIST_SIZE: usize = 64 * 1024;

/// Default bound on one string literal's encoded length: 64 KiB.
pub const DEFAULT_MAX_STRING_LEN: usize = 64 * 1024;

/// Decodes the field blocks of one direction of a connection.
///
/// Feed it every complete field block (HEADERS or PUSH_PROMISE fragment plus any
/// CONTINUATION fragments, joined) in arrival order. Fields go to a callback as
/// borrowed slices: nothing is allocated per block except while the scratch buffer for
/// Huffman-coded literals grows, or when an inserted entry needs a bigger buffer than
/// the table has spare.
///
/// Limits: a string literal over [`max_string_len`](Self::set_max_string_len) is a
/// connection error (the decoder cannot stay in step without reading it); a header
/// list over [`max_header_list_size`](Self::set_max_header_list_size) is reported as
/// [`DecodeError::HeaderListTooLarge`] after the whole block has been processed, with
/// the callback no longer called once the limit is crossed.
#[derive(Clone, Debug)]
pub struct Decoder {
    table: DynamicTable,
    limit: usize,
    update_required: bool,
    max_header_list_size: usize,
    max_string_len: usize,
    scratch: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new()
    }
}

/// How a literal field is to be indexed (§6.2).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Indexing {
    Incremental,
    Without,
    Never,
}

/// Running header list size and whether the limit was crossed.
struct ListSize {
    size: usize,
    limit: usize,
    over: bool,
}

impl ListSize {
    fn emit(&mut self, field: Field<'_>, sink: &mut impl FnMut(Field<'_>)) {
        self.size = self.size.saturating_add(field.size());
        if self.size > self.limit {
            self.over = true;
        }
        if !self.over {
            sink(field);
        }
    }
}

/// The `(name, value)` at HPACK `index` in the static then dynamic table.
fn lookup(table: &DynamicTable, index: u32) -> Result<(&[u8], &[u8]), DecodeError> {
    let i = index as usize;
    match i {
        0 => Err(DecodeError::InvalidIndex(0)),
        1..=static_table::LEN => Ok(static_table::ENTRIES[i - 1]),
        _ => table
            .get(i - static_table::LEN - 1)
            .ok_or(DecodeError::InvalidIndex(index)),
    }
}

impl Decoder {
    /// A decoder with the default 4,096-byte table and limits.
    pub fn new() -> Decoder {
        Decoder::with_table_size(DEFAULT_TABLE_SIZE)
    }

    /// A decoder whose table limit and initial maximum size are `size`: for a
    /// connection where this endpoint's SETTINGS_HEADER_TABLE_SIZE is `size` from the
    /// start (as in RFC 7541 Appendix C.5).
    pub fn with_table_size(size: usize) -> Decoder {
        Decoder {
            table: DynamicTable::new(size),
            limit: size,
            update_required: false,
            max_header_list_size: DEFAULT_MAX_HEADER_LIST_SIZE,
            max_string_len: DEFAULT_MAX_STRING_LEN,
            scratch: Vec::new(),
        }
    }

    /// Sets the limit on the dynamic table size: the SETTINGS_HEADER_TABLE_SIZE this
    /// endpoint advertises. Call it when the value takes effect: at once when it
    /// grows, when the peer acknowledges the SETTINGS when it shrinks. If the table is
    /// then larger than `limit`, the next block must start with a size update to at
    /// most `limit` ([`DecodeError::MissingSizeUpdate`] otherwise).
    pub fn set_max_table_size(&mut self, limit: usize) {
        self.limit = limit;
        self.update_required = self.table.max_size() > limit;
    }

    /// The limit on the dynamic table size.
    pub fn max_table_size(&self) -> usize {
        self.limit
    }

    /// Sets the bound on the decoded header list (SETTINGS_MAX_HEADER_LIST_SIZE).
    pub fn set_max_header_list_size(&mut self, size: usize) {
        self.max_header_list_size = size;
    }

    /// Sets the bound on one string literal's encoded length.
    pub fn set_max_string_len(&mut self, len: usize) {
        self.max_string_len = len;
    }

    /// The dynamic table.
    pub fn table(&self) -> &DynamicTable {
        &self.table
    }

    /// Decodes one complete field block, calling `sink(name, value)` for each field in
    /// order.
    pub fn decode<F: FnMut(&[u8], &[u8])>(
        &mut self,
        block: &[u8],
        mut sink: F,
    ) -> Result<(), DecodeError> {
        self.decode_fields(block, |f| sink(f.name, f.value))
    }

    /// Decodes one complete field block into owned `(name, value)` pairs.
    pub fn decode_to_vec(&mut self, block: &[u8]) -> Result<HeaderList, DecodeError> {
        let mut out = Vec::new();
        self.decode(block, |n, v| out.push((n.to_vec(), v.to_vec())))?;
        Ok(out)
    }

    /// Decodes one complete field block, calling `sink` for each [`Field`] in order
    /// (with `sensitive` set for never-indexed literals).
    pub fn decode_fields<F: FnMut(Field<'_>)>(
        &mut self,
        block: &[u8],
        mut sink: F,
    ) -> Result<(), DecodeError> {
        let mut pos = 0;
        let mut fields_seen = false;
        let mut list = ListSize {
            size: 0,
            limit: self.max_header_list_size,
            over: false,
        };
        while let Some(&first) = block.get(pos) {
            if first & 0xe0 == 0x20 {
                if fields_seen {
                    return Err(DecodeError::SizeUpdateNotAtStart);
                }
                let (size, used) = decode_integer(&block[pos..], 5)?;
                pos += used;
                if size as usize > self.limit {
                    return Err(DecodeError::SizeUpdateOverLimit {
                        size,
                        limit: self.limit,
                    });
                }
                self.table.set_max_size(size as usize);
                self.update_required = false;
                continue;
            }
            if self.update_required {
                return Err(DecodeError::MissingSizeUpdate);
            }
            fields_seen = true;
            self.field(block, &mut pos, &mut list, &mut sink)?;
        }
        if self.update_required {
            return Err(DecodeError::MissingSizeUpdate);
        }
        if list.over {
            return Err(DecodeError::HeaderListTooLarge {
                size: list.size,
                limit: list.limit,
            });
        }
        Ok(())
    }

    /// Decodes the field representation at `block[*pos]` (not a size update).
    fn field(
        &mut self,
        block: &[u8],
        pos: &mut usize,
        list: &mut ListSize,
        sink: &mut impl FnMut(Field<'_>),
    ) -> Result<(), DecodeError> {
        let Decoder {
            table,
            scratch,
            max_string_len,
            ..
        } = self;
        let first = block[*pos];
        if first & 0x80 != 0 {
            // Indexed field (§6.1).
            let (index, used) = decode_integer(&block[*pos..], 7)?;
            *pos += used;
            let (name, value) = lookup(table, index)?;
            list.emit(
                Field {
                    name,
                    value,
                    sensitive: false,
                },
                sink,
            );
            return Ok(());
        }
        let (prefix, indexing) = match first {
            0x40..=0x7f => (6, Indexing::Incremental),
            0x10..=0x1f => (4, Indexing::Never),
            _ => (4, Indexing::Without),
        };
        let (name_index, used) = decode_integer(&block[*pos..], prefix)?;
        *pos += used;
        scratch.clear();
        let literal_name = if name_index == 0 {
            Some(decode_string(block, pos, *max_string_len, scratch)?)
        } else {
            lookup(table, name_index)?;
            None
        };
        let value = decode_string(block, pos, *max_string_len, scratch)?;
        let value = value.get(block, scratch);
        let name = match literal_name {
            Some(s) => s.get(block, scratch),
            None => lookup(table, name_index)?.0,
        };
        list.emit(
            Field {
                name,
                value,
                sensitive: indexing == Indexing::Never,
            },
            sink,
        );
        if indexing == Indexing::Incremental {
            match literal_name {
                Some(s) => table.insert(s.get(block, scratch), value),
                None if name_index as usize <= static_table::LEN => {
                    table.insert(static_table::ENTRIES[name_index as usize - 1].0, value)
                }
                None => {
                    table.insert_with_name_of(name_index as usize - static_table::LEN - 1, value)
                }
            }
        }
        Ok(())
    }
}
