//! Every way a field block can be rejected, and the header-list limit, which is not a
//! protocol error and leaves the decoder in step.

use h2wire::hpack::{primitive, DecodeError, Decoder, Encoder, HeaderList};
use h2wire::ErrorCode;

fn decode(d: &mut Decoder, block: &[u8]) -> Result<HeaderList, DecodeError> {
    d.decode_to_vec(block)
}

#[test]
fn rejects_index_zero() {
    assert_eq!(
        decode(&mut Decoder::new(), &[0x80]),
        Err(DecodeError::InvalidIndex(0))
    );
}

#[test]
fn rejects_index_past_the_dynamic_table() {
    // 62 is the first dynamic entry; the table is empty.
    assert_eq!(
        decode(&mut Decoder::new(), &[0xbe]),
        Err(DecodeError::InvalidIndex(62))
    );
}

#[test]
fn rejects_literal_whose_name_index_is_past_the_table() {
    // Literal with incremental indexing, name index 62, value "a".
    assert_eq!(
        decode(&mut Decoder::new(), &[0x7e, 0x01, b'a']),
        Err(DecodeError::InvalidIndex(62))
    );
}

#[test]
fn rejects_block_truncated_inside_a_string() {
    assert_eq!(
        decode(&mut Decoder::new(), &[0x41, 0x0f, b'w', b'w']),
        Err(DecodeError::Truncated)
    );
}

#[test]
fn rejects_block_truncated_inside_an_integer() {
    assert_eq!(
        decode(&mut Decoder::new(), &[0xff, 0x80]),
        Err(DecodeError::Truncated)
    );
}

#[test]
fn rejects_index_integer_over_u32() {
    let block = [0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
    assert_eq!(
        decode(&mut Decoder::new(), &block),
        Err(DecodeError::IntegerOverflow)
    );
}

#[test]
fn rejects_string_over_the_max_string_len() {
    let mut d = Decoder::new();
    d.set_max_string_len(10);
    let mut block = vec![0x40];
    primitive::encode_string(b"name", false, &mut block);
    primitive::encode_string(b"a value of 20 bytes.", false, &mut block);
    assert_eq!(
        decode(&mut d, &block),
        Err(DecodeError::StringTooLong { len: 20, max: 10 })
    );
}

#[test]
fn rejects_huffman_padding_longer_than_seven_bits() {
    // :path (index 4) without indexing, Huffman value of 2 bytes: 'a' (00011) + 11 ones.
    let block = [0x04, 0x82, 0b0001_1111, 0xff];
    assert!(matches!(
        decode(&mut Decoder::new(), &block),
        Err(DecodeError::InvalidHuffman(_))
    ));
}

#[test]
fn rejects_huffman_padding_that_is_not_all_ones() {
    let block = [0x04, 0x81, 0b0001_1110];
    assert!(matches!(
        decode(&mut Decoder::new(), &block),
        Err(DecodeError::InvalidHuffman(_))
    ));
}

#[test]
fn rejects_huffman_string_containing_eos() {
    let block = [0x04, 0x84, 0xff, 0xff, 0xff, 0xff];
    assert!(matches!(
        decode(&mut Decoder::new(), &block),
        Err(DecodeError::InvalidHuffman(_))
    ));
}

#[test]
fn rejects_size_update_after_a_field() {
    assert_eq!(
        decode(&mut Decoder::new(), &[0x82, 0x20]),
        Err(DecodeError::SizeUpdateNotAtStart)
    );
}

#[test]
fn rejects_size_update_above_the_advertised_limit() {
    // 4097 = 31 + 4066 → 0x3f 0xe2 0x1f.
    let err = decode(&mut Decoder::new(), &[0x3f, 0xe2, 0x1f]);
    assert_eq!(
        err,
        Err(DecodeError::SizeUpdateOverLimit {
            size: 4097,
            limit: 4096
        })
    );
}

#[test]
fn accepts_several_size_updates_at_the_start() {
    let mut d = Decoder::new();
    // 0, then 4096 (0x3f 0xe1 0x1f), then :method GET.
    assert_eq!(
        decode(&mut d, &[0x20, 0x3f, 0xe1, 0x1f, 0x82])
            .unwrap()
            .len(),
        1
    );
    assert_eq!(d.table().max_size(), 4096);
}

#[test]
fn size_update_to_zero_empties_the_table() {
    let mut d = Decoder::new();
    decode(&mut d, &[0x41, 0x01, b'h']).unwrap();
    assert_eq!(d.table().len(), 1);
    decode(&mut d, &[0x20]).unwrap();
    assert!(d.table().is_empty());
}

#[test]
fn rejects_block_without_size_update_after_the_limit_was_lowered() {
    let mut d = Decoder::new();
    d.set_max_table_size(100);
    assert_eq!(decode(&mut d, &[0x82]), Err(DecodeError::MissingSizeUpdate));
}

#[test]
fn rejects_empty_block_without_size_update_after_the_limit_was_lowered() {
    let mut d = Decoder::new();
    d.set_max_table_size(100);
    assert_eq!(decode(&mut d, &[]), Err(DecodeError::MissingSizeUpdate));
}

#[test]
fn accepts_the_required_size_update_then_no_more_is_needed() {
    let mut d = Decoder::new();
    d.set_max_table_size(100);
    // 100 = 31 + 69 → 0x3f 0x45.
    decode(&mut d, &[0x3f, 0x45, 0x82]).unwrap();
    decode(&mut d, &[0x82]).unwrap();
    assert_eq!(d.table().max_size(), 100);
}

#[test]
fn raising_the_limit_requires_no_size_update() {
    let mut d = Decoder::new();
    d.set_max_table_size(8192);
    decode(&mut d, &[0x82]).unwrap();
    assert_eq!(d.table().max_size(), 4096);
}

/// A block whose list is over the limit: the error is distinct, the callback stops
/// once the limit is crossed, and the table still took every insertion, so the next
/// block (which refers to it) decodes.
#[test]
fn header_list_over_the_limit_is_reported_after_the_whole_block() {
    let big = "v".repeat(200);
    let mut block = Vec::new();
    let mut e = Encoder::new();
    e.encode(
        [
            (":method", "GET"),
            ("x-big", big.as_str()),
            ("x-after", "1"),
        ],
        &mut block,
    );

    let mut d = Decoder::new();
    d.set_max_header_list_size(100);
    let mut seen = Vec::new();
    let err = d.decode(&block, |n, _| seen.push(n.to_vec())).unwrap_err();
    assert!(
        matches!(err, DecodeError::HeaderListTooLarge { limit: 100, .. }),
        "{err:?}"
    );
    assert!(!err.is_connection_error());
    assert_eq!(err.connection_error_code(), None);
    assert_eq!(seen, [b":method".to_vec()]);
    assert_eq!(d.table().len(), 2, "both literals were indexed");

    let mut next = Vec::new();
    e.encode([("x-after", "1")], &mut next);
    assert_eq!(next, [0xbe], "refers to the dynamic table");
    d.set_max_header_list_size(1000);
    assert_eq!(
        d.decode_to_vec(&next).unwrap(),
        [(b"x-after".to_vec(), b"1".to_vec())]
    );
}

#[test]
fn header_list_size_counts_name_value_and_32_per_field() {
    // :method GET is 7 + 3 + 32 = 42 bytes.
    let mut d = Decoder::new();
    d.set_max_header_list_size(42);
    assert!(decode(&mut d, &[0x82]).is_ok());
    d.set_max_header_list_size(41);
    assert!(matches!(
        decode(&mut d, &[0x82]),
        Err(DecodeError::HeaderListTooLarge {
            size: 42,
            limit: 41
        })
    ));
}

#[test]
fn protocol_errors_map_to_compression_error() {
    let err = decode(&mut Decoder::new(), &[0x80]).unwrap_err();
    assert!(err.is_connection_error());
    assert_eq!(
        err.connection_error_code(),
        Some(ErrorCode::COMPRESSION_ERROR)
    );
}
