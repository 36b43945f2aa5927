//! Wire benchmarks: emit and checked parse (every header check + ICRC verify) of an RC RDMA WRITE
//! Only frame with 64 B and 4096 B of payload, each measured next to raw crc32fast over the bytes
//! the ICRC covers, in the same run. After the runs the medians and their ratios are printed from
//! criterion's estimates (wall time), then every case again in thread CPU time (preemption on
//! the shared machine excluded), each beside crc32fast timed the same way in the same run.
//!
//! Emit rows: `emit_generic` is `RoceRepr::emit` (headers from the reprs + payload copy + ICRC);
//! `emit_template` is `FrameTemplate::emit` (template headers + payload copy + ICRC);
//! `emit_template_in_place` is `FrameTemplate::emit_in_place`: the payload is already in the TX
//! buffer (written there once before the loop, as a zero-copy data path attaches it), the
//! emitter writes headers, pad and ICRC around it and hashes the whole frame, payload included.
//! Only the payload copy is skipped, and only in that row.
//!
//! Placement: emit buffers are placed the way the DPDK port places TX frames (byte
//! `FrameTemplate::icrc_offset` on a cache line, see `wire::ICRC_LEAD`) and the crc32fast baseline
//! hashes from a cache line too, so both get the CRC's best case; the payload source is
//! cache-aligned as an MR buffer from the allocator would be.
//!
//! With `WIRE_ICOUNT=<n>` set, criterion is skipped and each case runs `n` times through an
//! `#[inline(never)]` `icount_*` function (`WIRE_ICOUNT_SIZE=64` picks one size) instead, for instruction counting under load, e.g.
//! `WIRE_ICOUNT=10000 valgrind --tool=callgrind target/release/deps/wire-*` and
//! `callgrind_annotate --inclusive=yes` (divide the `icount_*` totals by `n`).

// A benchmark may panic: its setup failing is a broken benchmark, not an input to handle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{black_box, BenchmarkId, Criterion, Throughput};
use roce_proto::wire::{parse_frame, parse_view, FrameTemplate, PacketFields, RoceRepr};
use roce_testkit::cpu_median::cpu_paired;
use roce_testkit::criterion_median::{self, median_ns};
use roce_testkit::roce_frames;

const SIZES: [usize; 2] = [64, 4096];

/// The RDMA WRITE Only the DPDK benches send (roce_testkit::roce_frames), PSN 1.
fn write_only(payload_len: usize) -> RoceRepr {
    roce_frames::write_only(1, payload_len)
}

/// Bytes the ICRC hashes: 8 bytes of ones plus IP header through pad.
fn icrc_covered_len(repr: &RoceRepr) -> usize {
    8 + repr.frame_len() - repr.eth.buffer_len() - 4
}

/// `len` bytes of `fill` whose byte `lead` starts a 64-byte cache line.
struct Aligned {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl Aligned {
    fn new(len: usize, lead: usize, fill: u8) -> Aligned {
        let storage = vec![fill; len + 128];
        let addr = storage.as_ptr() as usize + 64 + lead;
        let start = 64 - addr % 64;
        assert_eq!((storage.as_ptr() as usize + start + lead) % 64, 0);
        Aligned {
            storage,
            start,
            len,
        }
    }
}

impl std::ops::Deref for Aligned {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }
}

impl std::ops::DerefMut for Aligned {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

/// Everything an emit case needs for one payload size.
struct Case {
    repr: RoceRepr,
    template: FrameTemplate,
    fields: PacketFields,
    payload: Aligned,
    /// The TX buffer, placed as the DPDK port places frames, the payload in place.
    buf: Aligned,
    /// As many bytes as the ICRC covers, for the crc32fast baseline.
    raw: Aligned,
}

impl Case {
    fn new(size: usize) -> Case {
        let repr = write_only(size);
        let template = FrameTemplate::new(&repr);
        let mut buf = Aligned::new(repr.frame_len(), template.icrc_offset(), 0);
        let payload = Aligned::new(size, 0, 0x5a);
        // The in-place emit finds the payload already written.
        let at = template.payload_offset(repr.bth.opcode).unwrap_or_default();
        buf[at..at + size].copy_from_slice(&payload);
        Case {
            fields: PacketFields::from_repr(&repr),
            payload,
            buf,
            raw: Aligned::new(icrc_covered_len(&repr), 0, 0xa5),
            template,
            repr,
        }
    }
}

fn emit(c: &mut Criterion) {
    for size in SIZES {
        let mut case = Case::new(size);
        let mut group = c.benchmark_group(format!("emit_{size}B"));
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(BenchmarkId::from_parameter("emit_generic"), |b| {
            b.iter(|| black_box(&case.repr).emit(black_box(&case.payload), &mut case.buf))
        });
        group.bench_function(BenchmarkId::from_parameter("emit_template"), |b| {
            b.iter(|| {
                black_box(&case.template).emit(
                    black_box(&case.fields),
                    black_box(&case.payload),
                    &mut case.buf,
                )
            })
        });
        group.bench_function(BenchmarkId::from_parameter("emit_template_in_place"), |b| {
            b.iter(|| {
                black_box(&case.template)
                    .emit_in_place(black_box(&case.fields), black_box(&mut case.buf))
            })
        });
        group.bench_function(BenchmarkId::from_parameter("crc32fast"), |b| {
            b.iter(|| crc32fast::hash(black_box(&case.raw)))
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
        group.bench_function(BenchmarkId::from_parameter("parse_view"), |b| {
            b.iter(|| parse_view(black_box(&frame)).map(|v| v.payload().len()))
        });
        group.bench_function(BenchmarkId::from_parameter("crc32fast"), |b| {
            b.iter(|| crc32fast::hash(black_box(&raw)))
        });
        group.finish();
    }
}

/// Rows printed after the run: (kind, subject, what it includes); the target applies to
/// every emit row (64 B: 1.5x crc + 20 ns, 4096 B: 1.2x crc).
const ROWS: [(&str, &str, &str); 5] = [
    ("emit", "emit_generic", "RoceRepr::emit, payload copied"),
    (
        "emit",
        "emit_template",
        "FrameTemplate::emit, payload copied",
    ),
    (
        "emit",
        "emit_template_in_place",
        "FrameTemplate, payload already in buffer",
    ),
    ("parse", "parse_verify", "parse_frame, every check + ICRC"),
    ("parse", "parse_view", "parse_view, every check + ICRC"),
];

fn print_ratios() {
    println!("\nwire bench medians (baseline: crc32fast over the bytes the ICRC covers, same run)");
    for (kind, subject, what) in ROWS {
        for size in SIZES {
            let group = format!("{kind}_{size}B");
            match (median_ns(&group, subject), median_ns(&group, "crc32fast")) {
                (Some(s), Some(b)) => {
                    let target = if size == 64 { 1.5 * b + 20.0 } else { 1.2 * b };
                    let verdict = if s <= target { "within" } else { "OVER" };
                    println!(
                        "{group:<12} {subject:<23} {s:>8.1} ns  crc32fast {b:>7.1} ns  \
                         ratio {:>5.2}  {verdict} target {target:.1} ns  ({what})",
                        s / b
                    );
                }
                _ => println!("{group} {subject}: no estimates (filtered out?)"),
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
fn icount_emit_template(
    template: &FrameTemplate,
    fields: &PacketFields,
    payload: &[u8],
    buf: &mut [u8],
    n: usize,
) {
    for _ in 0..n {
        let _ =
            black_box(black_box(template).emit(black_box(fields), black_box(payload), &mut *buf));
    }
}

#[inline(never)]
fn icount_emit_template_in_place(
    template: &FrameTemplate,
    fields: &PacketFields,
    buf: &mut [u8],
    n: usize,
) {
    for _ in 0..n {
        let _ =
            black_box(black_box(template).emit_in_place(black_box(fields), black_box(&mut *buf)));
    }
}

#[inline(never)]
fn icount_parse(frame: &[u8], n: usize) {
    for _ in 0..n {
        let _ = black_box(parse_frame(black_box(frame)).map(|p| p.payload.len()));
    }
}

#[inline(never)]
fn icount_parse_view(frame: &[u8], n: usize) {
    for _ in 0..n {
        let _ = black_box(parse_view(black_box(frame)).map(|v| v.payload().len()));
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
    for size in SIZES.into_iter().filter(|s| only.is_none_or(|o| o == *s)) {
        let mut case = Case::new(size);
        icount_emit(&case.repr, &case.payload, &mut case.buf, n);
        icount_emit_template(
            &case.template,
            &case.fields,
            &case.payload,
            &mut case.buf,
            n,
        );
        icount_emit_template_in_place(&case.template, &case.fields, &mut case.buf, n);
        let frame = case.buf.to_vec();
        icount_parse(&frame, n);
        icount_parse_view(&frame, n);
        icount_crc32fast(&case.raw, n);
    }
}

/// The same cases as the criterion groups, timed in thread CPU time (21 runs), each run in
/// alternation with crc32fast over the ICRC bytes; the ratio is the median of the per-run ratios.
fn cpu_summary() {
    const RUNS: usize = 21;
    println!(
        "\nwire medians in thread CPU time ({RUNS} runs, each beside a crc32fast run; ratio = \
         median of the per-run ratios)"
    );
    for size in SIZES {
        let iters = if size == 64 { 200_000 } else { 20_000 };
        let mut case = Case::new(size);
        let crc = || {
            black_box(crc32fast::hash(black_box(&case.raw)));
        };
        let mut rows = vec![(
            "emit_generic",
            cpu_paired(
                RUNS,
                iters,
                || {
                    let _ = black_box(
                        black_box(&case.repr).emit(black_box(&case.payload), &mut case.buf),
                    );
                },
                crc,
            ),
        )];
        rows.push((
            "emit_template",
            cpu_paired(
                RUNS,
                iters,
                || {
                    let _ = black_box(black_box(&case.template).emit(
                        &case.fields,
                        black_box(&case.payload),
                        &mut case.buf,
                    ));
                },
                crc,
            ),
        ));
        rows.push((
            "emit_template_in_place",
            cpu_paired(
                RUNS,
                iters,
                || {
                    let _ = black_box(
                        black_box(&case.template)
                            .emit_in_place(&case.fields, black_box(&mut case.buf)),
                    );
                },
                crc,
            ),
        ));
        let frame = case.buf.to_vec();
        rows.push((
            "parse_verify",
            cpu_paired(
                RUNS,
                iters,
                || {
                    let _ = black_box(parse_frame(black_box(&frame)).map(|p| p.payload.len()));
                },
                crc,
            ),
        ));
        rows.push((
            "parse_view",
            cpu_paired(
                RUNS,
                iters,
                || {
                    let _ = black_box(parse_view(black_box(&frame)).map(|v| v.payload().len()));
                },
                crc,
            ),
        ));
        for (subject, p) in rows {
            let what = ROWS.iter().find(|r| r.1 == subject).map_or("", |r| r.2);
            let within = if size == 64 {
                p.subject_ns <= 1.5 * p.baseline_ns + 20.0
            } else {
                p.ratio <= 1.2
            };
            let verdict = if within { "within" } else { "OVER" };
            let target = if size == 64 { "1.5x + 20 ns" } else { "1.2x" };
            println!(
                "{size:>4} B {subject:<23} {:>8.1} ns  crc32fast {:>7.1} ns  ratio {:>5.2}  \
                 {verdict} target {target}  ({what})",
                p.subject_ns, p.baseline_ns, p.ratio
            );
        }
    }
}

fn main() {
    criterion_median::mark_start();
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
    cpu_summary();
}
