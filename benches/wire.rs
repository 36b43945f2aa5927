//! Wire benchmarks (filled in with the wire layer).
use criterion::{criterion_group, criterion_main, Criterion};

fn crc_baseline(c: &mut Criterion) {
    let buf = vec![0xa5u8; 4096];
    c.bench_function("crc32fast/4096", |b| {
        b.iter(|| crc32fast::hash(criterion::black_box(&buf)))
    });
}

criterion_group!(benches, crc_baseline);
criterion_main!(benches);
