//! HPACK, the HTTP/2 field compression format (RFC 7541).
//!
//! - [`Decoder`] turns complete field blocks into `(name, value)` pairs handed to a
//!   callback, borrowing from the block, the tables or a reused scratch buffer;
//! - [`Encoder`] turns header lists into field blocks appended to a [`bytes::BufMut`];
//! - [`DynamicTable`] is the table both keep, one per direction of a connection;
//! - [`huffman`] and [`primitive`] are the building blocks (§5), public for callers
//!   that assemble blocks by hand.
//!
//! Field blocks must be decoded in the order they arrive, every one of them, even for
//! streams being refused: the dynamic table is shared by the whole connection.

mod decoder;
mod encoder;
pub mod huffman;
mod huffman_table;
pub mod primitive;
mod static_table;
mod table;

pub use decoder::{Decoder, DEFAULT_MAX_HEADER_LIST_SIZE, DEFAULT_MAX_STRING_LEN};
pub use encoder::{Encoder, HuffmanPolicy, IndexPolicy};
pub use table::{DynamicTable, ENTRY_OVERHEAD};

use crate::ErrorCode;

/// The initial SETTINGS_HEADER_TABLE_SIZE, and so the initial dynamic table size
/// (RFC 9113 §6.5.2).
pub const DEFAULT_TABLE_SIZE: usize = 4_096;

/// Number of static table entries (RFC 7541 Appendix A); dynamic indices start after.
pub const STATIC_TABLE_LEN: usize = static_table::LEN;

/// An owned header list, as [`Decoder::decode_to_vec`] returns it: `(name, value)`
/// pairs in order.
pub type HeaderList = Vec<(Vec<u8>, Vec<u8>)>;

/// A header field: name, value, and whether it is sensitive.
///
/// On decode, `sensitive` is set for fields sent as "never indexed" (§6.2.3), which an
/// intermediary must forward the same way. On encode, `sensitive` makes the encoder
/// use "never indexed" and keep the field out of the dynamic table (§7.1.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    /// The field name (HTTP/2 requires lowercase; this layer does not check).
    pub name: &'a [u8],
    /// The field value.
    pub value: &'a [u8],
    /// Never index this field.
    pub sensitive: bool,
}

impl<'a> Field<'a> {
    /// A field that may be indexed.
    pub fn new(name: &'a [u8], value: &'a [u8]) -> Field<'a> {
        Field {
            name,
            value,
            sensitive: false,
        }
    }

    /// A field that must never be indexed.
    pub fn sensitive(name: &'a [u8], value: &'a [u8]) -> Field<'a> {
        Field {
            name,
            value,
            sensitive: true,
        }
    }

    /// Its size for SETTINGS_MAX_HEADER_LIST_SIZE and the dynamic table: name + value
    /// + 32 (RFC 9113 §6.5.2, RFC 7541 §4.1).
    pub fn size(&self) -> usize {
        self.name.len() + self.value.len() + ENTRY_OVERHEAD
    }
}

impl<'a> From<(&'a [u8], &'a [u8])> for Field<'a> {
    fn from((name, value): (&'a [u8], &'a [u8])) -> Field<'a> {
        Field::new(name, value)
    }
}

impl<'a> From<(&'a str, &'a str)> for Field<'a> {
    fn from((name, value): (&'a str, &'a str)) -> Field<'a> {
        Field::new(name.as_bytes(), value.as_bytes())
    }
}

impl<'a> From<&'a (Vec<u8>, Vec<u8>)> for Field<'a> {
    fn from(pair: &'a (Vec<u8>, Vec<u8>)) -> Field<'a> {
        Field::new(&pair.0, &pair.1)
    }
}

/// Why a field block could not be decoded.
///
/// All but [`HeaderListTooLarge`](Self::HeaderListTooLarge) are COMPRESSION_ERROR
/// connection errors (RFC 9113 §4.3): the decoder's state can no longer be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The block ends inside a representation.
    #[error("field block truncated")]
    Truncated,
    /// An integer over 2^32 - 1 or with more than 5 continuation bytes.
    #[error("HPACK integer overflow")]
    IntegerOverflow,
    /// Index 0, or an index past the end of the static plus dynamic tables.
    #[error("invalid table index {0}")]
    InvalidIndex(u32),
    /// A string literal whose encoded length exceeds the decoder's bound.
    #[error("string literal of {len} bytes exceeds the limit of {max}")]
    StringTooLong {
        /// Encoded length announced.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// A Huffman string with EOS or bad padding (RFC 7541 §5.2).
    #[error("invalid Huffman string: {0}")]
    InvalidHuffman(&'static str),
    /// A dynamic table size update after the first field of the block (§4.2).
    #[error("dynamic table size update after a field")]
    SizeUpdateNotAtStart,
    /// A dynamic table size update above the SETTINGS_HEADER_TABLE_SIZE in force (§6.3).
    #[error("dynamic table size update to {size} exceeds the limit of {limit}")]
    SizeUpdateOverLimit {
        /// Size asked for.
        size: u32,
        /// The limit this decoder advertised.
        limit: usize,
    },
    /// The limit was lowered below the table's size, and the first block after did not
    /// start with a size update bringing it within the limit (§4.2).
    #[error("missing dynamic table size update after the limit was lowered")]
    MissingSizeUpdate,
    /// The decoded header list exceeds the decoder's max header list size. Not a
    /// protocol error: the whole block was still decoded and the table is in step, so
    /// the connection lives on. A server answers 431 (RFC 6585) or resets the stream.
    #[error("header list of {size}+ bytes exceeds the limit of {limit}")]
    HeaderListTooLarge {
        /// Size reached when the limit was crossed (name + value + 32 per field).
        size: usize,
        /// The limit.
        limit: usize,
    },
}

impl DecodeError {
    /// Whether the connection must end with COMPRESSION_ERROR (everything except
    /// [`HeaderListTooLarge`](Self::HeaderListTooLarge)).
    pub fn is_connection_error(&self) -> bool {
        !matches!(self, DecodeError::HeaderListTooLarge { .. })
    }

    /// The GOAWAY error code for a connection error, `None` for
    /// [`HeaderListTooLarge`](Self::HeaderListTooLarge).
    pub fn connection_error_code(&self) -> Option<ErrorCode> {
        self.is_connection_error()
            .then_some(ErrorCode::COMPRESSION_ERROR)
    }
}
