//! Sentence-encoder time (`cargo bench --bench semantic`): one `encode` of a short Chinese query,
//! a short English query and a 40-word text; a batch of 12 queries through `encode_many`; and
//! `Encoder::from_bytes`, the load of the weights file (19 MB) that `semantic::embedded()` does
//! once per process. Not part of `cargo test`: never a timed assertion.

#![allow(missing_docs)] // criterion_group! generates undocumented items.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use switchboard::matching::semantic::{self, Encoder};

const LONG: &str = "Hi, I am flying from Beijing to Shanghai next Friday morning and need a taxi from the \
                    airport to my hotel near the Bund, then a table for four at a quiet Sichuan restaurant \
                    around seven in the evening, please.";

mod common;
use common::QUERIES;

fn bench(c: &mut Criterion) {
    assert_eq!(LONG.split_whitespace().count(), 40);
    let enc = semantic::embedded();
    let mut group = c.benchmark_group("semantic");
    group.bench_function("encode/zh_short", |b| b.iter(|| enc.encode(black_box("明天上海冷不冷"))));
    group.bench_function("encode/en_short", |b| b.iter(|| enc.encode(black_box("Will it rain in Shanghai tomorrow?"))));
    group.bench_function("encode/en_40_words", |b| b.iter(|| enc.encode(black_box(LONG))));
    group.throughput(Throughput::Elements(QUERIES.len() as u64));
    group.bench_function("encode_many/12_queries", |b| b.iter(|| enc.encode_many(black_box(QUERIES))));
    group.finish();

    let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/semantic/use-m3-zh-en.bin")).unwrap();
    let mut group = c.benchmark_group("semantic_load");
    group.sample_size(10);
    group.bench_function("from_bytes", |b| b.iter(|| Encoder::from_bytes(black_box(&bytes)).unwrap()));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
