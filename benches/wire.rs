//! Wire benchmarks: emit (headers + payload copy + ICRC) and checked parse (every header check +
//! ICRC verify) of an RC RDMA WRITE Only frame with 64 B and 4096 B of payload, each measured next
//! to raw crc32fast over the bytes the ICRC covers, in the same run. After the runs the medians
//! and their ratios are printed from criterion's estimates.
//!
//! With `WIRE_ICOUNT=<n>` set, criterion is skipped and each case runs `n` times through an
//! `#[inline(never)]` `icount_*` function (`WIRE_ICOUNT_SIZE=64` picks one size) instead, for instruction counting under load, e.g.
//! `WIRE_ICOUNT=10000 valgrind --tool=callgrind target/release/deps/wire-*` and
//! `callgrind_annotate --inclusive=yes` (divide the `icount_*` totals by `n`).

#[path = "../tests/support/roce_frames.rs"]
mod roce_frames;

use std::path::PathBuf;

use criterion::{black_box, BenchmarkId, Criterion, Throughput};
use roce::wire::{parse_frame, RoceRepr};

const SIZES: [usize; 2] = [64, 4096];

/// The RDMA WRITE Only the DPDK benches send (tests/support/roce_frames.rs), PSN 1.
fn write_only(payload_len: usize) -> RoceRepr {
    roce_frames::write_only(1, payload_len)
}

/// Bytes the ICRC hashes: 8 bytes of ones plus IP header through pad.
fn icrc_covered_len(repr: &RoceRepr) -> usize {
    8 + repr.frame_len() - repr.eth.buffer_len() - 4
}

fn emit(c: &mut Criterion) {
    for size in SIZES {
        let repr = write_only(size);
        let payload = vec![0x5au8; size];
        let mut buf = vec![0u8; repr.frame_len()];
        let raw = vec![0xa5u8; icrc_covered_len(&repr)];
        let mut group = c.benchmark_group(format!("emit_{size}B"));
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(BenchmarkId::from_parameter("emit_icrc"), |b| {
            b.iter(|| black_box(&repr).emit(black_box(&payload), &mut buf))
        });
        group.bench_function(BenchmarkId::from_parameter("crc32fast"), |b| {
            b.iter(|| crc32fast::hash(black_box(&raw)))
        });
        group.finish();
    }
}

fn parse(c: &mut Criterion) {
    for size in SIZES {
        let repr = write_only(size);
        let mut frame = vec![0u8; repr.frame_len()];
        repr.emit(&vec![0x5au8; size], &mut frame).expect("emit");
        assert!(parse_frame(&frame).is_ok());
        let raw = vec![0xa5u8; icrc_covered_len(&repr)];
        let mut group = c.benchmark_group(format!("parse_{size}B"));
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(BenchmarkId::from_parameter("parse_verify"), |b| {
            b.iter(|| parse_frame(black_box(&frame)).map(|p| p.payload.len()))
        });
        group.bench_function(BenchmarkId::from_parameter("crc32fast"), |b| {
            b.iter(|| crc32fast::hash(black_box(&raw)))
        });
        group.finish();
    }
}

/// The median (ns) criterion stored for `group/function` in this run.
fn median_ns(group: &str, function: &str) -> Option<f64> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let path = target
        .join("criterion")
        .join(group)
        .join(function)
        .join("new")
        .join("estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json["median"]["point_estimate"].as_f64()
}

fn print_ratios() {
    println!("\nwire bench medians (baseline: crc32fast over the bytes the ICRC covers)");
    for (kind, subject) in [("emit", "emit_icrc"), ("parse", "parse_verify")] {
        for size in SIZES {
            let group = format!("{kind}_{size}B");
            match (median_ns(&group, subject), median_ns(&group, "crc32fast")) {
                (Some(s), Some(b)) => {
                    let target = if size == 64 { 1.5 * b + 20.0 } else { 1.2 * b };
                    let verdict = if s <= target { "within" } else { "OVER" };
                    println!(
                        "{group:<12} {subject:<13} {s:>9.1} ns   crc32fast {b:>8.1} ns   \
                         ratio {:>5.2}   {verdict} target {target:.1} ns",
                        s / b
                    );
                }
                _ => println!("{group}: no estimates (filtered out?)"),
            }
        }
    }
}

#[inline(never)]
fn icount_emit(repr: &RoceRepr, payload: &[u8], buf: &mut [u8], n: usize) {
    for _ in 0..n {
        let _ = black_box(black_box(repr).emit(black_box(payload), &mut *buf));
    }
}

#[inline(never)]
fn icount_parse(frame: &[u8], n: usize) {
    for _ in 0..n {
        let _ = black_box(parse_frame(black_box(frame)).map(|p| p.payload.len()));
    }
}

#[inline(never)]
fn icount_crc32fast(raw: &[u8], n: usize) {
    for _ in 0..n {
        black_box(crc32fast::hash(black_box(raw)));
    }
}

/// Runs every case `n` times outside criterion (see the module docs).
fn icount(n: usize) {
    let only: Option<usize> = std::env::var("WIRE_ICOUNT_SIZE")
        .ok()
        .and_then(|v| v.parse().ok());
    for size in SIZES.into_iter().filter(|s| only.map_or(true, |o| o == *s)) {
        let repr = write_only(size);
        let payload = vec![0x5au8; size];
        let mut frame = vec![0u8; repr.frame_len()];
        let raw = vec![0xa5u8; icrc_covered_len(&repr)];
        icount_emit(&repr, &payload, &mut frame, n);
        icount_parse(&frame, n);
        icount_crc32fast(&raw, n);
    }
}

fn main() {
    if let Some(n) = std::env::var("WIRE_ICOUNT")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        icount(n);
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    emit(&mut c);
    parse(&mut c);
    c.final_summary();
    print_ratios();
}
