//! Decoding a typical request field block against the static table and a warm dynamic
//! table allocates nothing: a counting global allocator checks it.

use h2wire::hpack::{Decoder, Encoder, HuffmanPolicy, IndexPolicy};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.with(|n| n.set(n.get() + 1));
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.with(|n| n.set(n.get() + 1));
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` and returns how many allocations it made on this thread.
fn allocations(f: impl FnOnce()) -> usize {
    ALLOCATIONS.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.with(Cell::get)
}

const REQUEST: [(&str, &str); 6] = [
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/1k.bin"),
    (":authority", "host"),
    ("user-agent", "speedy-load/0.1 (h2wire)"),
    ("accept", "*/*"),
];

fn block(enc: &mut Encoder) -> Vec<u8> {
    let mut out = Vec::new();
    enc.encode(REQUEST, &mut out);
    out
}

#[test]
fn decoding_a_typical_request_with_a_warm_table_does_not_allocate() {
    // Indexing encoder: the first block fills the table, the next are all indexed.
    let mut enc = Encoder::new();
    let first = block(&mut enc);
    let warm = block(&mut enc);
    // Non-indexing encoder with Huffman: every block has Huffman literals.
    let mut literal_enc = Encoder::new();
    literal_enc.set_indexing(IndexPolicy::Never);
    literal_enc.set_huffman(HuffmanPolicy::Always);
    let literal = block(&mut literal_enc);

    let mut dec = Decoder::new();
    let mut lit_dec = Decoder::new();
    let mut total = 0usize;
    dec.decode(&first, |n, v| total += n.len() + v.len())
        .unwrap();
    lit_dec
        .decode(&literal, |n, v| total += n.len() + v.len())
        .unwrap(); // warms the scratch buffer

    let n = allocations(|| {
        for _ in 0..100 {
            dec.decode(&warm, |n, v| total += n.len() + v.len())
                .unwrap();
            lit_dec
                .decode(&literal, |n, v| total += n.len() + v.len())
                .unwrap();
        }
    });
    assert_eq!(n, 0, "allocations while decoding");
    assert!(total > 0);
    // The counter does see allocations: a cold decoder must grow its scratch buffer.
    assert!(allocations(|| Decoder::new().decode(&literal, |_, _| {}).unwrap()) > 0);
}

/// Requests whose `:path` changes every time: each block inserts one entry and the
/// full table evicts one; evicted buffers are reused, so once the table has cycled
/// decoding still does not allocate.
#[test]
fn decoding_with_insertions_into_a_cycled_table_does_not_allocate() {
    let mut enc = Encoder::new();
    let mut dec = Decoder::new();
    let blocks: Vec<Vec<u8>> = (0..600)
        .map(|i| {
            let path = format!("/1k.bin?n={i:06}");
            let mut out = Vec::new();
            enc.encode(
                [
                    (":method", "GET"),
                    (":scheme", "https"),
                    (":path", path.as_str()),
                    (":authority", "host"),
                ],
                &mut out,
            );
            out
        })
        .collect();
    for b in &blocks[..300] {
        dec.decode(b, |_, _| {}).unwrap();
    }
    let n = allocations(|| {
        for b in &blocks[300..] {
            dec.decode(b, |_, _| {}).unwrap();
        }
    });
    assert_eq!(n, 0, "allocations while decoding");
    assert_eq!(dec.table().size(), enc.table().size());
}
