//! Micro-benchmarks of the wire layer and of a session pair.
//!
//!     cargo bench -p spdy --bench wire -- --quick
//!
//! Header blocks are measured in the steady state: one long-lived compression context
//! per direction (as on a session) over a sequence of realistic, slightly different
//! blocks. Benchmarks never assert anything about speed.

use bytes::Bytes;
use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use spdy::codes::SettingId;
use spdy::compress::{CompressionConfig, HeaderCompressor, HeaderDecompressor};
use spdy::frame::{encode_data_header, Frame, FrameHeader, Setting, StreamId, SynStream};
use spdy::session::{Config, Event, OutBuf, Role, Session};
use spdy::{http, Headers, Version};
use std::time::{Duration, Instant};

const V: Version = Version::V3_1;

/// A browser-like request: 5 pseudo-headers and 6 ordinary ones.
fn request(i: usize) -> Headers {
    let extra = Headers::from_pairs([
        (
            "user-agent",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/31.0.1650.63 Safari/537.36",
        ),
        ("accept", "image/webp,*/*;q=0.8"),
        ("accept-encoding", "gzip,deflate,sdch"),
        ("accept-language", "en-US,en;q=0.8"),
        ("referer", "https://www.example.com/news/2013/12/index.html"),
        (
            "cookie",
            "PREF=ID=4f2a9c1e5b2d8f4a:U=17c3b2a9d8e7f6a5:FF=0:TM=1386950211; NID=67=a8Bz3kQ9",
        ),
    ]);
    let path = format!("/static/img/photo-{i:04}.jpg?v=20131213");
    http::request_headers(V, "GET", "https", "www.example.com", &path, &extra)
}

/// A typical response to it.
fn response(i: usize) -> Headers {
    let extra = Headers::from_pairs([
        (
            "date",
            format!("Fri, 13 Dec 2013 16:{:02}:{:02} GMT", i / 60 % 60, i % 60),
        ),
        ("content-type", "image/jpeg".to_string()),
        ("content-length", format!("{}", 10_000 + i * 37)),
        ("cache-control", "public, max-age=31536000".to_string()),
        ("etag", format!("\"5f3a-{i:08x}\"")),
        ("last-modified", "Tue, 10 Dec 2013 09:12:44 GMT".to_string()),
        ("server", "nginx/1.5.7".to_string()),
    ]);
    http::response_headers(V, 200, &extra)
}

fn plain() -> CompressionConfig {
    CompressionConfig {
        crime_safe: false,
        ..CompressionConfig::default()
    }
}

fn frames(c: &mut Criterion) {
    let mut g = c.benchmark_group("frame");
    let mut out = Vec::with_capacity(4096);

    g.bench_function("encode/data_header", |b| {
        b.iter(|| {
            out.clear();
            encode_data_header(
                black_box(StreamId(7)),
                black_box(true),
                black_box(8192),
                &mut out,
            );
            black_box(&out);
        })
    });
    let data = [0u8, 0, 0, 7, 1, 0, 0x20, 0];
    g.bench_function("decode/data_header", |b| {
        b.iter(|| black_box(FrameHeader::parse(black_box(&data))))
    });

    let settings = Frame::Settings {
        clear: false,
        entries: vec![
            Setting {
                id: SettingId::MAX_CONCURRENT_STREAMS,
                flags: 0,
                value: 100,
            },
            Setting {
                id: SettingId::INITIAL_WINDOW_SIZE,
                flags: 0,
                value: 1 << 20,
            },
        ],
    };
    let mut comp = HeaderCompressor::new(V, plain());
    g.bench_function("encode/settings", |b| {
        b.iter(|| {
            out.clear();
            black_box(&settings).encode(V, &mut comp, &mut out);
            black_box(&out);
        })
    });
    let mut wire = Vec::new();
    settings.encode(V, &mut comp, &mut wire);
    let wire = Bytes::from(wire);
    let mut dec = HeaderDecompressor::new(V, 1 << 16);
    g.bench_function("decode/settings", |b| {
        b.iter(|| {
            let mut buf = wire.clone();
            black_box(Frame::decode(V, &mut buf, &mut dec).unwrap());
        })
    });

    // SYN_STREAM with 11 realistic headers, compressed in the steady state.
    let syns: Vec<Frame> = (0..1000)
        .map(|i| {
            Frame::SynStream(SynStream {
                stream_id: StreamId(2 * i as u32 + 1),
                assoc_id: StreamId(0),
                priority: 3,
                slot: 0,
                fin: true,
                unidirectional: false,
                headers: request(i),
            })
        })
        .collect();
    for (name, cfg) in [
        ("default", CompressionConfig::default()),
        ("plain", plain()),
    ] {
        let mut comp = HeaderCompressor::new(V, cfg);
        let mut i = 0;
        g.bench_function(format!("encode/syn_stream/{name}"), |b| {
            b.iter(|| {
                out.clear();
                syns[i % syns.len()].encode(V, &mut comp, &mut out);
                i += 1;
                black_box(&out);
            })
        });
        let encoded = encode_sequence(&syns, cfg);
        g.bench_function(format!("decode/syn_stream/{name}"), |b| {
            b.iter_custom(|iters| decode_sequence(&encoded, iters))
        });
    }
    g.finish();
}

/// Encodes frames in order through one context.
fn encode_sequence(frames: &[Frame], cfg: CompressionConfig) -> Vec<Bytes> {
    let mut comp = HeaderCompressor::new(V, cfg);
    frames
        .iter()
        .map(|f| {
            let mut out = Vec::new();
            f.encode(V, &mut comp, &mut out);
            Bytes::from(out)
        })
        .collect()
}

/// Decodes `iters` frames of a sequence in order; a new context (not timed) starts each
/// pass over the sequence.
fn decode_sequence(encoded: &[Bytes], iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0u64;
    while done < iters {
        let mut dec = HeaderDecompressor::new(V, 1 << 16);
        let n = (iters - done).min(encoded.len() as u64) as usize;
        let start = Instant::now();
        for f in &encoded[..n] {
            let mut buf = f.clone();
            black_box(Frame::decode(V, &mut buf, &mut dec).unwrap());
        }
        total += start.elapsed();
        done += n as u64;
    }
    total
}

fn header_blocks(c: &mut Criterion) {
    let mut g = c.benchmark_group("headers");
    for (kind, make) in [
        ("request", request as fn(usize) -> Headers),
        ("response", response),
    ] {
        let blocks: Vec<Headers> = (0..1000).map(make).collect();
        g.throughput(Throughput::Bytes(blocks[0].encoded_len(V) as u64));
        for (name, cfg) in [
            ("default", CompressionConfig::default()),
            ("plain", plain()),
            (
                "level1",
                CompressionConfig {
                    level: 1,
                    ..CompressionConfig::default()
                },
            ),
            (
                "level0",
                CompressionConfig {
                    level: 0,
                    ..CompressionConfig::default()
                },
            ),
            (
                "fixed",
                CompressionConfig {
                    level: 1,
                    fixed_codes: true,
                    ..CompressionConfig::default()
                },
            ),
        ] {
            let mut comp = HeaderCompressor::new(V, cfg);
            let mut out = Vec::with_capacity(1024);
            let mut i = 0;
            g.bench_function(format!("compress/{kind}/{name}"), |b| {
                b.iter(|| {
                    out.clear();
                    comp.compress(&blocks[i % blocks.len()], &mut out);
                    i += 1;
                    black_box(&out);
                })
            });
            let mut comp = HeaderCompressor::new(V, cfg);
            let compressed: Vec<Vec<u8>> = blocks
                .iter()
                .map(|h| {
                    let mut out = Vec::new();
                    comp.compress(h, &mut out);
                    out
                })
                .collect();
            g.bench_function(format!("decompress/{kind}/{name}"), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    let mut done = 0u64;
                    while done < iters {
                        let mut dec = HeaderDecompressor::new(V, 1 << 16);
                        let n = (iters - done).min(compressed.len() as u64) as usize;
                        let start = Instant::now();
                        for blk in &compressed[..n] {
                            black_box(dec.decompress(blk).unwrap());
                        }
                        total += start.elapsed();
                        done += n as u64;
                    }
                    total
                })
            });
        }
    }
    // The uncompressed block alone: name and value checks over a 4 KiB value.
    let mut h = request(0);
    h.add("x-state", "k=v; ".repeat(820));
    let mut raw = Vec::new();
    h.encode(V, &mut raw);
    g.throughput(Throughput::Bytes(raw.len() as u64));
    g.bench_function("decode/request_4k_value", |b| {
        b.iter(|| black_box(Headers::decode(V, black_box(&raw)).unwrap()))
    });
    g.finish();
}

/// 100 requests and 1 KiB responses through a client and a server session.
fn session_round_trip(c: &mut Criterion) {
    let mut g = c.benchmark_group("session");
    g.throughput(Throughput::Elements(100));
    let body = Bytes::from(vec![b'x'; 1024]);
    g.bench_function("100_requests_1k_responses", |b| {
        b.iter_batched(
            || {
                (
                    Session::new(Config::new(Role::Client, V)),
                    Session::new(Config::new(Role::Server, V)),
                )
            },
            |(mut client, mut server)| {
                let now = Instant::now();
                for i in 0..100 {
                    client.open(request(i), (i % 8) as u8, true).unwrap();
                }
                let mut done = 0;
                let mut to_server = bytes::BytesMut::new();
                let mut to_client = bytes::BytesMut::new();
                let mut out = OutBuf::new();
                while done < 100 {
                    while client.poll_transmit(&mut out) {}
                    to_server.extend_from_slice(&out.take_all());
                    server.recv(&mut to_server, now);
                    while let Some(e) = server.poll_event() {
                        if let Event::Stream { id, .. } = e {
                            server.reply(id, response(id.0 as usize), false).unwrap();
                            server.send_data(id, body.clone(), true).unwrap();
                        }
                    }
                    while server.poll_transmit(&mut out) {}
                    to_client.extend_from_slice(&out.take_all());
                    client.recv(&mut to_client, now);
                    while let Some(e) = client.poll_event() {
                        match e {
                            Event::Data { id, data, .. } => client.release(id, data.len()),
                            Event::Closed { .. } => done += 1,
                            _ => {}
                        }
                    }
                }
                black_box((client, server))
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, frames, header_blocks, session_round_trip);
criterion_main!(benches);
