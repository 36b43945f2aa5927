//! How the simulator's cost per event grows with the fabric: events per second on the 320-host
//! and the 1,280-host variants of the HPCC WebSearch experiment (scenarios/scale/: the same
//! three-tier fat tree with ToRs, aggregation switches and pods multiplied by 4, the same load
//! per host), and their ratio. The target of the datacenter-scale issue: at 1,280 hosts at
//! least 0.8 of the events/s at 320. Also the parallel engine's speed-up (2 threads against 1)
//! at each size.
//!
//! The runs are cut to `ROCE_SCALE_US` µs of virtual time (500 by default; the scenario files
//! run 2,000): the fabric is built outside the timed part, so events/s is the event loop's.

// A benchmark may panic: its setup failing is a broken benchmark, not an input to handle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Instant as Wall;

use criterion::{criterion_main, Criterion, Throughput};
use roce_fabric::experiment::scenario::Scenario;

/// The two sizes: (hosts, scenario file).
const SIZES: [(usize, &str); 2] = [
    (
        320,
        include_str!("../../../scenarios/scale/websearch-320.toml"),
    ),
    (
        1280,
        include_str!("../../../scenarios/scale/websearch-1280.toml"),
    ),
];

/// The scenario of `text`, cut to `ROCE_SCALE_US` µs (500 unless set).
fn scenario(text: &str) -> Scenario {
    let us = std::env::var("ROCE_SCALE_US")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500.0);
    let mut s = Scenario::from_toml(text).expect("scenario");
    s.duration_us = us;
    s
}

/// Builds `s` on `threads` threads and runs it; returns the handled events (as `roce sim run
/// --speed` counts them: without the idle-port wake-ups left unscheduled) and the wall seconds
/// of the run alone (not the build).
fn run(s: &Scenario, threads: usize) -> (u64, f64) {
    let mut built = s.build().expect("builds");
    built.fabric.set_threads(threads).expect("splits");
    let t = Wall::now();
    let (summary, _) = s.run_built(built, |_| {}).expect("runs");
    let secs = t.elapsed().as_secs_f64();
    (summary.events.saturating_sub(summary.events_elided), secs)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn bench(c: &mut Criterion) {
    let sizes: Vec<(usize, Scenario)> = SIZES.iter().map(|&(n, t)| (n, scenario(t))).collect();
    let mut g = c.benchmark_group("scale");
    g.sample_size(10);
    for (hosts, s) in &sizes {
        let (events, _) = run(s, 1);
        g.throughput(Throughput::Elements(events));
        // Criterion times the build too; the lines printed below do not.
        g.bench_function(format!("websearch{hosts}_threads1"), |b| {
            b.iter(|| black_box(run(s, 1)))
        });
    }
    g.finish();

    // Our own medians of 3, the sizes interleaved, the build left out of the time.
    let mut rate = vec![(Vec::new(), Vec::new()); sizes.len()];
    for _ in 0..3 {
        for ((_, s), (one, two)) in sizes.iter().zip(rate.iter_mut()) {
            let (ev, secs) = run(s, 1);
            one.push(ev as f64 / secs);
            let (ev, secs) = run(s, 2);
            two.push(ev as f64 / secs);
        }
    }
    let medians: Vec<(f64, f64)> = rate
        .into_iter()
        .map(|(one, two)| (median(one), median(two)))
        .collect();
    for ((hosts, s), (one, two)) in sizes.iter().zip(&medians) {
        println!(
            "scale: {hosts} hosts, {} us (median of 3): 1 thread {:.2} M events/s, 2 threads \
             {:.2} M events/s ({:.2}x)",
            s.duration_us,
            one / 1e6,
            two / 1e6,
            two / one
        );
    }
    if let [(small, _), (large, _)] = medians[..] {
        println!(
            "scale: events/s at 1280 hosts / at 320 hosts (1 thread): {:.2} (target >= 0.8)",
            large / small
        );
    }
}

/// The benches `main` runs.
mod group {
    // criterion_group! writes `pub fn benches` without docs: in a private module it is no API.
    criterion::criterion_group!(benches, super::bench);
}
criterion_main!(group::benches);
