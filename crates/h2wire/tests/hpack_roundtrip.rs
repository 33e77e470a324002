//! decode(encode(x)) == x over pseudo-random header lists, every encoder policy, and
//! table size changes between blocks; plus the encoder's size-update signalling.

use h2wire::hpack::{Decoder, Encoder, Field, HuffmanPolicy, IndexPolicy};

/// xorshift64*: a small deterministic generator, enough to vary the inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const NAMES: &[&str] = &[
    ":method",
    ":path",
    ":status",
    ":authority",
    "accept",
    "cookie",
    "authorization",
    "user-agent",
    "x-request-id",
    "x-trace",
    "set-cookie",
    "content-length",
    "date",
    "cache-control",
];
const VALUES: &[&str] = &[
    "GET",
    "/",
    "/index.html",
    "200",
    "gzip, deflate",
    "",
    "text/html",
    "no-cache",
];

/// A header list mixing static entries, repeats (to hit the dynamic table) and
/// random bytes of every value 0..=255.
fn random_list(rng: &mut Rng) -> Vec<(Vec<u8>, Vec<u8>, bool)> {
    let count = rng.below(12);
    (0..count)
        .map(|_| {
            let name = match rng.below(4) {
                0 => (0..1 + rng.below(20))
                    .map(|_| b'a' + rng.below(26) as u8)
                    .collect(),
                _ => NAMES[rng.below(NAMES.len())].as_bytes().to_vec(),
            };
            let value = match rng.below(3) {
                0 => (0..rng.below(300)).map(|_| rng.next() as u8).collect(),
                1 => format!("v{}", rng.below(5)).into_bytes(),
                _ => VALUES[rng.below(VALUES.len())].as_bytes().to_vec(),
            };
            (name, value, rng.below(8) == 0)
        })
        .collect()
}

fn run(seed: u64, huffman: HuffmanPolicy, indexing: IndexPolicy) {
    let mut rng = Rng(seed);
    let mut enc = Encoder::new();
    enc.set_huffman(huffman);
    enc.set_indexing(indexing);
    enc.set_table_size_cap(1 << 16);
    let mut dec = Decoder::new();
    dec.set_max_header_list_size(usize::MAX);
    for block_no in 0..300 {
        if rng.below(10) == 0 {
            let size = [0, 64, 256, 1024, 4096, 10_000][rng.below(6)];
            dec.set_max_table_size(size);
            enc.set_peer_table_size(size);
        }
        let list = random_list(&mut rng);
        let mut block = Vec::new();
        enc.encode(
            list.iter().map(|(n, v, s)| Field {
                name: n,
                value: v,
                sensitive: *s,
            }),
            &mut block,
        );
        let mut got = Vec::new();
        dec.decode_fields(&block, |f| {
            got.push((f.name.to_vec(), f.value.to_vec(), f.sensitive))
        })
        .unwrap_or_else(|e| panic!("seed {seed} block {block_no}: {e}"));
        let names_values: Vec<_> = got.iter().map(|(n, v, _)| (n, v)).collect();
        assert_eq!(
            names_values,
            list.iter().map(|(n, v, _)| (n, v)).collect::<Vec<_>>(),
            "seed {seed} block {block_no}"
        );
        for ((_, _, sent), (_, _, received)) in list.iter().zip(&got) {
            assert!(!*sent || *received, "a sensitive field arrived indexable");
        }
        assert!(
            enc.table().iter().eq(dec.table().iter()),
            "tables diverged at block {block_no}"
        );
        assert_eq!(enc.table().size(), dec.table().size());
    }
}

#[test]
fn round_trips_random_lists_with_every_policy() {
    for seed in 1..=4u64 {
        for huffman in [
            HuffmanPolicy::Never,
            HuffmanPolicy::Always,
            HuffmanPolicy::Shorter,
        ] {
            for indexing in [IndexPolicy::Always, IndexPolicy::Never] {
                run(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15), huffman, indexing);
            }
        }
    }
}

#[test]
fn exact_static_match_is_one_byte() {
    let mut out = Vec::new();
    Encoder::new().encode(
        [(":method", "GET"), (":scheme", "https"), (":status", "404")],
        &mut out,
    );
    assert_eq!(out, [0x82, 0x87, 0x8d]);
}

#[test]
fn repeated_request_is_all_indexed_the_second_time() {
    let list = [
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/1k.bin"),
        (":authority", "host"),
        ("user-agent", "speedy/0.1"),
        ("accept", "*/*"),
    ];
    let mut e = Encoder::new();
    let mut first = Vec::new();
    e.encode(list, &mut first);
    let mut second = Vec::new();
    e.encode(list, &mut second);
    assert_eq!(
        second.len(),
        list.len(),
        "one byte per field: {second:02x?}"
    );
    let mut d = Decoder::new();
    d.decode_to_vec(&first).unwrap();
    assert_eq!(d.decode_to_vec(&second).unwrap().len(), list.len());
}

#[test]
fn peer_lowering_the_table_size_emits_an_update_first_in_the_next_block() {
    let mut e = Encoder::new();
    let mut out = Vec::new();
    e.encode([("x-a", "1")], &mut out);
    e.set_peer_table_size(100);
    out.clear();
    e.encode([(":method", "GET")], &mut out);
    // 100 = 31 + 69.
    assert_eq!(out, [0x3f, 0x45, 0x82]);
    out.clear();
    e.encode([(":method", "GET")], &mut out);
    assert_eq!(out, [0x82], "signalled once");
}

#[test]
fn size_going_down_then_up_signals_the_minimum_then_the_final_size() {
    let mut e = Encoder::new();
    let mut d = Decoder::new();
    let mut out = Vec::new();
    e.encode([("x-a", "1")], &mut out);
    d.decode_to_vec(&out).unwrap();

    e.set_peer_table_size(100);
    d.set_max_table_size(100);
    e.set_peer_table_size(4096);
    d.set_max_table_size(4096);
    out.clear();
    e.encode([("x-a", "1")], &mut out);
    assert_eq!(&out[..5], [0x3f, 0x45, 0x3f, 0xe1, 0x1f]);
    assert_eq!(
        d.decode_to_vec(&out).unwrap(),
        [(b"x-a".to_vec(), b"1".to_vec())]
    );
    assert!(e.table().iter().eq(d.table().iter()));
}

#[test]
fn sensitive_fields_are_never_indexed() {
    let mut e = Encoder::new();
    let mut out = Vec::new();
    e.encode(
        [("authorization", "Bearer abc"), ("cookie", "short=1")],
        &mut out,
    );
    assert!(e.table().is_empty());
    // authorization is static index 23: never-indexed literal, 4-bit prefix 15 + 8.
    assert_eq!(&out[..2], [0x1f, 0x08]);
    let mut d = Decoder::new();
    let mut flags = Vec::new();
    d.decode_fields(&out, |f| flags.push(f.sensitive)).unwrap();
    assert_eq!(flags, [true, true]);
}

#[test]
fn long_cookies_are_indexed_unless_marked_sensitive() {
    let mut e = Encoder::new();
    let mut out = Vec::new();
    e.encode([("cookie", "session=0123456789abcdef0123")], &mut out);
    assert_eq!(e.table().len(), 1);
    e.encode([Field::sensitive(b"x-secret", b"s3cr3t")], &mut out);
    assert_eq!(e.table().len(), 1);
}

#[test]
fn fields_larger_than_the_table_are_not_indexed() {
    let mut e = Encoder::with_table_size(64);
    let mut out = Vec::new();
    e.encode([("x-small", "1")], &mut out);
    e.encode(
        [("x-large", "a value that does not fit in a 64-byte table")],
        &mut out,
    );
    assert_eq!(e.table().len(), 1, "the small entry survived");
}
