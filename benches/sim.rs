//! Simulator throughput: fabric events per second on one core, beside a baseline measured in the
//! same run (push + pop of the same number of entries on a bare `BinaryHeap`, the floor any
//! event-driven simulator pays), and the wall time of a 16:1 incast at 100 Gbit/s for 10 ms of
//! virtual time. Prints medians and the ratio.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::time::Instant as Wall;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use roce::sim::builtin::{Builtin, BuiltinKind};
use roce::sim::scenario::Scenario;

fn incast(senders: usize, duration_us: f64) -> Scenario {
    Builtin {
        senders: Some(senders),
        duration_us: Some(duration_us),
        ..Builtin::default()
    }
    .scenario(BuiltinKind::Incast)
}

/// Runs the scenario; returns (events, wall seconds).
fn run(s: &Scenario) -> (u64, f64) {
    let t = Wall::now();
    let (summary, _) = s.run(|_| {}).expect("runs");
    (summary.events, t.elapsed().as_secs_f64())
}

/// Pushes and pops `n` timed entries with a pseudo-random spread of times, as the fabric does.
fn heap_baseline(n: u64) -> u64 {
    let mut heap = BinaryHeap::new();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut now = 0u64;
    let mut acc = 0u64;
    // Keep ~64 pending entries, like a fabric of a few dozen ports and hosts.
    for seq in 0..64u64 {
        heap.push(Reverse((seq * 50, seq)));
    }
    for seq in 64..n + 64 {
        if let Some(Reverse((t, s))) = heap.pop() {
            now = t;
            acc = acc.wrapping_add(s);
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        heap.push(Reverse((now + (x & 1023), seq)));
    }
    black_box(acc)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn bench(c: &mut Criterion) {
    let short = incast(16, 1_000.0);
    let (events, _) = run(&short);
    let mut g = c.benchmark_group("sim");
    g.sample_size(10);
    g.throughput(Throughput::Elements(events));
    g.bench_function("incast16_100g_1ms_events", |b| {
        b.iter(|| black_box(run(&short)))
    });
    g.bench_function("binaryheap_baseline_same_events", |b| {
        b.iter(|| heap_baseline(black_box(events)))
    });
    g.finish();

    // Medians of our own, for the ratio line and the 10 ms figure.
    let mut fabric_rates = Vec::new();
    let mut heap_rates = Vec::new();
    for _ in 0..5 {
        let (ev, secs) = run(&short);
        fabric_rates.push(ev as f64 / secs);
        let t = Wall::now();
        heap_baseline(events);
        heap_rates.push(events as f64 / t.elapsed().as_secs_f64());
    }
    let (f, h) = (median(fabric_rates), median(heap_rates));
    println!(
        "sim events/s (median of 5): fabric {:.2} M/s, BinaryHeap push+pop baseline {:.2} M/s, ratio {:.3}",
        f / 1e6,
        h / 1e6,
        f / h
    );
    let long = incast(16, 10_000.0);
    let walls: Vec<f64> = (0..3).map(|_| run(&long).1).collect();
    let (ev, _) = run(&long);
    println!(
        "16:1 incast at 100 Gbit/s, 10 ms virtual: {} events, median wall {:.3} s ({:.2} M events/s)",
        ev,
        median(walls.clone()),
        ev as f64 / median(walls) / 1e6
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
