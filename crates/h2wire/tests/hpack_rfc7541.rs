//! RFC 7541 Appendix C, byte for byte: decoding every example, checking the dynamic
//! table after each, and reproducing every encoding with the encoder.

use h2wire::hpack::{huffman, Decoder, Encoder, HuffmanPolicy};

/// Parses the RFC's hex dumps ("8286 8441 ...").
fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

type List = &'static [(&'static str, &'static str)];

fn owned(list: List) -> Vec<(Vec<u8>, Vec<u8>)> {
    list.iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect()
}

fn table_of(d: &Decoder) -> Vec<(String, String)> {
    d.table()
        .iter()
        .map(|(n, v)| {
            (
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            )
        })
        .collect()
}

fn expect_table(d: &Decoder, entries: List, size: usize) {
    let want: Vec<(String, String)> = entries
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    assert_eq!(table_of(d), want);
    assert_eq!(d.table().size(), size);
}

/// One step of a C.3-C.6 sequence: encoded block, header list, table after.
struct Step {
    wire: &'static str,
    list: List,
    table: List,
    size: usize,
}

const REQ1: List = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
];
const REQ2: List = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
    ("cache-control", "no-cache"),
];
const REQ3: List = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/index.html"),
    (":authority", "www.example.com"),
    ("custom-key", "custom-value"),
];
const REQ_TABLE1: List = &[(":authority", "www.example.com")];
const REQ_TABLE2: List = &[
    ("cache-control", "no-cache"),
    (":authority", "www.example.com"),
];
const REQ_TABLE3: List = &[
    ("custom-key", "custom-value"),
    ("cache-control", "no-cache"),
    (":authority", "www.example.com"),
];

const DATE1: &str = "Mon, 21 Oct 2013 20:13:21 GMT";
const DATE2: &str = "Mon, 21 Oct 2013 20:13:22 GMT";
const LOCATION: &str = "https://www.example.com";
const COOKIE: &str = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
const RESP1: List = &[
    (":status", "302"),
    ("cache-control", "private"),
    ("date", DATE1),
    ("location", LOCATION),
];
const RESP2: List = &[
    (":status", "307"),
    ("cache-control", "private"),
    ("date", DATE1),
    ("location", LOCATION),
];
const RESP3: List = &[
    (":status", "200"),
    ("cache-control", "private"),
    ("date", DATE2),
    ("location", LOCATION),
    ("content-encoding", "gzip"),
    ("set-cookie", COOKIE),
];
const RESP_TABLE1: List = &[
    ("location", LOCATION),
    ("date", DATE1),
    ("cache-control", "private"),
    (":status", "302"),
];
const RESP_TABLE2: List = &[
    (":status", "307"),
    ("location", LOCATION),
    ("date", DATE1),
    ("cache-control", "private"),
];
const RESP_TABLE3: List = &[
    ("set-cookie", COOKIE),
    ("content-encoding", "gzip"),
    ("date", DATE2),
];

const C3: [Step; 3] = [
    Step {
        wire: "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
        list: REQ1,
        table: REQ_TABLE1,
        size: 57,
    },
    Step {
        wire: "8286 84be 5808 6e6f 2d63 6163 6865",
        list: REQ2,
        table: REQ_TABLE2,
        size: 110,
    },
    Step {
        wire: "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
        list: REQ3,
        table: REQ_TABLE3,
        size: 164,
    },
];

const C4: [Step; 3] = [
    Step {
        wire: "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
        list: REQ1,
        table: REQ_TABLE1,
        size: 57,
    },
    Step {
        wire: "8286 84be 5886 a8eb 1064 9cbf",
        list: REQ2,
        table: REQ_TABLE2,
        size: 110,
    },
    Step {
        wire: "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
        list: REQ3,
        table: REQ_TABLE3,
        size: 164,
    },
];

const C5: [Step; 3] = [
    Step {
        wire: "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
               2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
               6c65 2e63 6f6d",
        list: RESP1,
        table: RESP_TABLE1,
        size: 222,
    },
    Step {
        wire: "4803 3330 37c1 c0bf",
        list: RESP2,
        table: RESP_TABLE2,
        size: 222,
    },
    Step {
        wire: "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
               54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
               5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
               3d31",
        list: RESP3,
        table: RESP_TABLE3,
        size: 215,
    },
];

const C6: [Step; 3] = [
    Step {
        wire: "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
               2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        list: RESP1,
        table: RESP_TABLE1,
        size: 222,
    },
    Step {
        wire: "4883 640e ffc1 c0bf",
        list: RESP2,
        table: RESP_TABLE2,
        size: 222,
    },
    Step {
        wire: "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
               77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
               9587 3160 65c0 03ed 4ee5 b106 3d50 07",
        list: RESP3,
        table: RESP_TABLE3,
        size: 215,
    },
];

fn decode_sequence(steps: &[Step], table_size: usize) {
    let mut d = Decoder::with_table_size(table_size);
    for (i, step) in steps.iter().enumerate() {
        let got = d
            .decode_to_vec(&hex(step.wire))
            .unwrap_or_else(|e| panic!("block {}: {e}", i + 1));
        assert_eq!(got, owned(step.list), "block {}", i + 1);
        expect_table(&d, step.table, step.size);
    }
}

fn encode_sequence(steps: &[Step], table_size: usize, huffman: HuffmanPolicy) {
    let mut e = Encoder::with_table_size(table_size);
    e.set_huffman(huffman);
    for (i, step) in steps.iter().enumerate() {
        let mut out = Vec::new();
        e.encode(step.list.iter().copied(), &mut out);
        assert_eq!(out, hex(step.wire), "block {}", i + 1);
        assert_eq!(e.table().size(), step.size, "block {}", i + 1);
        let entries: Vec<(&[u8], &[u8])> = step
            .table
            .iter()
            .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
            .collect();
        assert_eq!(
            e.table().iter().collect::<Vec<_>>(),
            entries,
            "block {}",
            i + 1
        );
    }
}

#[test]
fn c2_1_literal_with_indexing() {
    let mut d = Decoder::new();
    let got = d
        .decode_to_vec(&hex(
            "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
        ))
        .unwrap();
    assert_eq!(got, owned(&[("custom-key", "custom-header")]));
    expect_table(&d, &[("custom-key", "custom-header")], 55);
}

#[test]
fn c2_2_literal_without_indexing() {
    let mut d = Decoder::new();
    let got = d
        .decode_to_vec(&hex("040c 2f73 616d 706c 652f 7061 7468"))
        .unwrap();
    assert_eq!(got, owned(&[(":path", "/sample/path")]));
    expect_table(&d, &[], 0);
}

#[test]
fn c2_3_literal_never_indexed() {
    let mut d = Decoder::new();
    let mut fields = Vec::new();
    d.decode_fields(&hex("1008 7061 7373 776f 7264 0673 6563 7265 74"), |f| {
        fields.push((f.name.to_vec(), f.value.to_vec(), f.sensitive))
    })
    .unwrap();
    assert_eq!(fields, [(b"password".to_vec(), b"secret".to_vec(), true)]);
    expect_table(&d, &[], 0);
}

#[test]
fn c2_4_indexed_field() {
    let mut d = Decoder::new();
    assert_eq!(
        d.decode_to_vec(&hex("82")).unwrap(),
        owned(&[(":method", "GET")])
    );
    expect_table(&d, &[], 0);
}

#[test]
fn c2_encoder_reproduces_the_representations() {
    use h2wire::hpack::{Field, IndexPolicy};
    let mut e = Encoder::new();
    e.set_huffman(HuffmanPolicy::Never);
    let mut out = Vec::new();
    e.encode([("custom-key", "custom-header")], &mut out);
    assert_eq!(
        out,
        hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572")
    );

    let mut e = Encoder::new();
    e.set_huffman(HuffmanPolicy::Never);
    e.set_indexing(IndexPolicy::Never);
    out.clear();
    e.encode([(":path", "/sample/path")], &mut out);
    assert_eq!(out, hex("040c 2f73 616d 706c 652f 7061 7468"));

    out.clear();
    e.encode([Field::sensitive(b"password", b"secret")], &mut out);
    assert_eq!(out, hex("1008 7061 7373 776f 7264 0673 6563 7265 74"));

    out.clear();
    e.encode([(":method", "GET")], &mut out);
    assert_eq!(out, [0x82]);
}

#[test]
fn c3_requests_without_huffman_decode() {
    decode_sequence(&C3, 4096);
}

#[test]
fn c4_requests_with_huffman_decode() {
    decode_sequence(&C4, 4096);
}

#[test]
fn c5_responses_without_huffman_decode_with_evictions() {
    decode_sequence(&C5, 256);
}

#[test]
fn c6_responses_with_huffman_decode_with_evictions() {
    decode_sequence(&C6, 256);
}

#[test]
fn c3_encoder_reproduces_the_requests() {
    encode_sequence(&C3, 4096, HuffmanPolicy::Never);
}

#[test]
fn c4_encoder_reproduces_the_requests() {
    encode_sequence(&C4, 4096, HuffmanPolicy::Always);
    // Every C.4 string is strictly shorter coded, so the default policy agrees.
    encode_sequence(&C4, 4096, HuffmanPolicy::Shorter);
}

#[test]
fn c5_encoder_reproduces_the_responses() {
    encode_sequence(&C5, 256, HuffmanPolicy::Never);
}

#[test]
fn c6_encoder_reproduces_the_responses() {
    encode_sequence(&C6, 256, HuffmanPolicy::Always);
}

/// The Huffman strings of C.4 and C.6, decoded and encoded on their own.
#[test]
fn c4_and_c6_huffman_strings_are_byte_exact() {
    let cases: &[(&str, &str)] = &[
        ("f1e3 c2e5 f23a 6ba0 ab90 f4ff", "www.example.com"),
        ("a8eb 1064 9cbf", "no-cache"),
        ("25a8 49e9 5ba9 7d7f", "custom-key"),
        ("25a8 49e9 5bb8 e8b4 bf", "custom-value"),
        ("6402", "302"),
        ("aec3 771a 4b", "private"),
        ("d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff", DATE1),
        ("9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3", LOCATION),
        ("640e ff", "307"),
        ("d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff", DATE2),
        ("9bd9 ab", "gzip"),
        (
            "94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
            COOKIE,
        ),
    ];
    for &(coded, plain) in cases {
        let mut dec = Vec::new();
        huffman::decode(&hex(coded), &mut dec).unwrap();
        assert_eq!(dec, plain.as_bytes());
        let mut enc = Vec::new();
        huffman::encode(plain.as_bytes(), &mut enc);
        assert_eq!(enc, hex(coded), "{plain}");
        assert_eq!(huffman::encoded_len(plain.as_bytes()), enc.len());
    }
}
