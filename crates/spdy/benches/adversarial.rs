//! Micro-benchmarks of adversarial inputs: the costs a hostile peer can impose per byte
//! it sends (issue 19). Each is one case a server must stay linear on.
//!
//!     cargo bench -p spdy --bench adversarial -- --quick
//!
//! - `decode/5900_distinct_names`: an uncompressed SPDY/2 header block of 5,900 distinct
//!   two-byte names (41 KB), through `Headers::decode` (the duplicate-name check);
//! - `session/syn_stream_5900_names`: the same block compressed in one SYN_STREAM (about
//!   7.8 KB on the wire), through a server `Session::recv`;
//! - `session/settings_8000_ids`: one SETTINGS frame with 8,000 distinct ids (the largest
//!   that fits a 64 KiB control frame), through a server `Session::recv`;
//! - `headers/join_300_repeats`: 300 one-KiB values added under one name (what repeated
//!   HEADERS frames on a stream do).
//!
//! Benchmarks never assert anything about speed.

use bytes::{Bytes, BytesMut};
use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use spdy::codes::SettingId;
use spdy::compress::{CompressionConfig, HeaderCompressor};
use spdy::frame::{Frame, Setting, StreamId, SynStream};
use spdy::session::{Config, Role, Session};
use spdy::{Headers, Version};
use std::time::Instant;

const NAMES: usize = 5_900;

/// 5,900 distinct names of two lower-case letters or digits, empty values.
fn distinct_names() -> Vec<(String, &'static str)> {
    const ALPHA: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut v = Vec::with_capacity(NAMES);
    'outer: for a in ALPHA {
        for b in ALPHA {
            for c in ALPHA {
                if v.len() == NAMES {
                    break 'outer;
                }
                v.push((String::from_utf8(vec![*a, *b, *c]).expect("ascii"), ""));
            }
        }
    }
    v
}

/// The uncompressed block, written by hand (building a `Headers` is not what is timed).
fn raw_block(version: Version) -> Vec<u8> {
    let names = distinct_names();
    let mut out = Vec::new();
    let put = |out: &mut Vec<u8>, n: usize| {
        if version == Version::V2 {
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    };
    put(&mut out, names.len());
    for (n, v) in &names {
        put(&mut out, n.len());
        out.extend_from_slice(n.as_bytes());
        put(&mut out, v.len());
        out.extend_from_slice(v.as_bytes());
    }
    out
}

fn server(version: Version) -> Session {
    let mut cfg = Config::new(Role::Server, version);
    cfg.max_header_block = 64 * 1024;
    Session::new(cfg)
}

fn adversarial(c: &mut Criterion) {
    let mut g = c.benchmark_group("adversarial");
    let v2 = Version::V2;
    let block = raw_block(v2);
    g.bench_function("decode/5900_distinct_names", |b| {
        b.iter(|| black_box(Headers::decode(v2, black_box(&block)).expect("valid")))
    });

    let headers = Headers::decode(v2, &block).expect("valid");
    let mut comp = HeaderCompressor::new(v2, CompressionConfig::default());
    let mut wire = Vec::new();
    Frame::SynStream(SynStream {
        stream_id: StreamId(1),
        assoc_id: StreamId(0),
        priority: 0,
        slot: 0,
        fin: true,
        unidirectional: false,
        headers,
    })
    .encode(v2, &mut comp, &mut wire);
    eprintln!("SYN_STREAM with {NAMES} names: {} bytes", wire.len());
    let wire = Bytes::from(wire);
    g.bench_function("session/syn_stream_5900_names", |b| {
        b.iter_batched(
            || (server(v2), BytesMut::from(&wire[..])),
            |(mut s, mut buf)| {
                s.recv(&mut buf, Instant::now());
                black_box(s)
            },
            BatchSize::SmallInput,
        )
    });

    let v3 = Version::V3_1;
    let entries: Vec<Setting> = (0..8_000u32)
        .map(|i| Setting {
            id: SettingId(1000 + i),
            flags: 0,
            value: i,
        })
        .collect();
    let mut comp = HeaderCompressor::new(v3, CompressionConfig::default());
    let mut wire = Vec::new();
    Frame::Settings {
        clear: false,
        entries,
    }
    .encode(v3, &mut comp, &mut wire);
    let wire = Bytes::from(wire);
    g.bench_function("session/settings_8000_ids", |b| {
        b.iter_batched(
            || (server(v3), BytesMut::from(&wire[..])),
            |(mut s, mut buf)| {
                s.recv(&mut buf, Instant::now());
                black_box(s)
            },
            BatchSize::SmallInput,
        )
    });

    let value = vec![b'x'; 1024];
    g.bench_function("headers/join_300_repeats", |b| {
        b.iter(|| {
            let mut h = Headers::new();
            for _ in 0..300 {
                h.add("x-repeat", &value);
            }
            black_box(h)
        })
    });
    g.finish();
}

criterion_group!(benches, adversarial);
criterion_main!(benches);
