//! Simulator throughput: fabric events per second on one core, beside a baseline measured in the
//! same run (push + pop of as many entries on a bare `BinaryHeap`, the floor any event-driven
//! simulator pays). Three fabrics: "fabric only" hosts replay one prebuilt frame and count what
//! they get (the simulator's own cost); the stand-in engines (which build every frame with its ICRC
//! and check every ICRC on receipt); and the real RC endpoints, the scenarios' default (QPs,
//! ACKs, completions, payload copies). Also the wall time of a 16:1 incast at 100 Gbit/s for
//! 10 ms of virtual time on each transport. And `roce sim compare`'s grid runner: a grid of 3
//! controllers × 2 seeds (8:1 incast, 300 µs, RC endpoints) on 1 and 2 threads, in runs/s, the
//! 1-thread run being the baseline. Prints medians and ratios.

// A benchmark may panic: its setup failing is a broken benchmark, not an input to handle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::time::Instant as Wall;

use criterion::{criterion_main, Criterion, Throughput};
use roce_fabric::engines::{EngineKind, StandInEngine};
use roce_fabric::experiment::builtin::{Builtin, BuiltinKind};
use roce_fabric::experiment::compare::{run_grid, Grid, Run};
use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::flows::workload::FlowConfig;
use roce_fabric::net::topology::Topology;
use roce_fabric::{LinkConfig, SwitchConfig};
use roce_proto::engine::Engine;
use roce_proto::time::Instant;

fn incast(senders: usize, duration_us: f64, transport: EngineKind) -> Scenario {
    Builtin {
        senders: Some(senders),
        duration_us: Some(duration_us),
        engine: transport,
        ..Builtin::default()
    }
    .scenario(BuiltinKind::Incast)
}

/// Runs the scenario; returns (events, wall seconds).
fn run_scenario(s: &Scenario) -> (u64, f64) {
    let t = Wall::now();
    let (summary, _) = s.run(|_| {}).expect("runs");
    (summary.events, t.elapsed().as_secs_f64())
}

/// A host that sends one prebuilt frame over and over, or swallows what it receives.
enum Replay {
    Sender(Vec<u8>),
    Sink(u64),
}

impl Engine for Replay {
    fn handle_frame(&mut self, _now: Instant, frame: &[u8]) {
        if let Replay::Sink(n) = self {
            *n += frame.len() as u64;
        }
    }
    fn handle_timeout(&mut self, _now: Instant) {}
    fn poll_transmit(&mut self, _now: Instant, buf: &mut [u8]) -> Option<usize> {
        match self {
            Replay::Sender(f) => {
                buf.get_mut(..f.len())?.copy_from_slice(f);
                Some(f.len())
            }
            Replay::Sink(_) => None,
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Replay::Sender(_) => Some(Instant::ZERO),
            Replay::Sink(_) => None,
        }
    }
}

/// A 16:1 incast of replaying hosts through one PFC switch; returns (events, wall seconds).
fn run_fabric_only(senders: usize, duration_us: u64) -> (u64, f64) {
    let cfg = SwitchConfig::default();
    let topo = Topology::star(senders + 1, LinkConfig::new(100.0, 1000), cfg);
    let dst = topo.hosts[senders].1;
    let (mut fabric, _) = topo
        .build(1, |i, ip| {
            if i == senders {
                return Replay::Sink(0);
            }
            let mut h = StandInEngine::new(ip).with_flow(FlowConfig::bulk(dst, 17 + i as u32));
            let mut buf = vec![0u8; 9216];
            let n = h.poll_transmit(Instant::ZERO, &mut buf).unwrap_or(0);
            buf.truncate(n);
            Replay::Sender(buf)
        })
        .expect("builds");
    let t = Wall::now();
    fabric.run_until(Instant::from_nanos(duration_us * 1000));
    (fabric.events(), t.elapsed().as_secs_f64())
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
    let rc = incast(16, 1_000.0, EngineKind::Rc);
    let test = incast(16, 1_000.0, EngineKind::StandIn);
    let (rc_events, _) = run_scenario(&rc);
    let (test_events, _) = run_scenario(&test);
    let (fo_events, _) = run_fabric_only(16, 1_000);
    let mut g = c.benchmark_group("sim");
    g.sample_size(10);
    g.throughput(Throughput::Elements(fo_events));
    g.bench_function("fabric_only_incast16_100g_1ms", |b| {
        b.iter(|| black_box(run_fabric_only(16, 1_000)))
    });
    g.throughput(Throughput::Elements(test_events));
    g.bench_function("test_engines_incast16_100g_1ms", |b| {
        b.iter(|| black_box(run_scenario(&test)))
    });
    g.throughput(Throughput::Elements(rc_events));
    g.bench_function("rc_endpoints_incast16_100g_1ms", |b| {
        b.iter(|| black_box(run_scenario(&rc)))
    });
    g.bench_function("binaryheap_baseline_same_count", |b| {
        b.iter(|| heap_baseline(black_box(rc_events)))
    });
    g.finish();

    // Medians of our own, for the ratio lines and the 10 ms figures.
    let (mut fo, mut te, mut re, mut heap) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        let (ev, secs) = run_fabric_only(16, 1_000);
        fo.push(ev as f64 / secs);
        let (ev, secs) = run_scenario(&test);
        te.push(ev as f64 / secs);
        let (ev, secs) = run_scenario(&rc);
        re.push(ev as f64 / secs);
        let t = Wall::now();
        heap_baseline(rc_events);
        heap.push(rc_events as f64 / t.elapsed().as_secs_f64());
    }
    let (fo, te, re, h) = (median(fo), median(te), median(re), median(heap));
    println!(
        "sim events/s (median of 5): fabric only {:.2} M/s, stand-in engines {:.2} M/s, \
         RC endpoints {:.2} M/s, BinaryHeap push+pop baseline {:.2} M/s; ratios to baseline \
         {:.3}, {:.3} and {:.3}",
        fo / 1e6,
        te / 1e6,
        re / 1e6,
        h / 1e6,
        fo / h,
        te / h,
        re / h
    );
    for transport in EngineKind::ALL {
        let long = incast(16, 10_000.0, transport);
        let runs: Vec<(u64, f64)> = (0..3).map(|_| run_scenario(&long)).collect();
        let ev = runs.first().map_or(0, |r| r.0);
        let wall = median(runs.iter().map(|r| r.1).collect());
        println!(
            "16:1 incast at 100 Gbit/s, 10 ms virtual ({transport} transport): {ev} events, \
             median wall {wall:.3} s, {:.2} M events/s",
            ev as f64 / wall / 1e6
        );
    }
}

/// The grid `compare` runs: 3 controllers × 2 seeds of an 8:1 incast.
fn grid() -> Vec<Run> {
    let base = incast(8, 300.0, EngineKind::Rc);
    let grid = Grid {
        ccs: vec!["none".into(), "dcqcn-mlx".into(), "dctcp".into()],
        seeds: 2,
        ..Grid::default()
    };
    grid.expand(&base).expect("grid").1
}

/// Runs the grid on `threads`; returns the events of all runs.
fn run_compare(runs: &[Run], threads: usize) -> u64 {
    run_grid(runs, threads, |_, r| {
        r.scenario.run(|_| {}).expect("runs").0.events
    })
    .expect("pool")
    .iter()
    .sum()
}

fn bench_compare(c: &mut Criterion) {
    let runs = grid();
    let mut g = c.benchmark_group("compare");
    g.sample_size(10);
    g.throughput(Throughput::Elements(runs.len() as u64));
    for threads in [1, 2] {
        g.bench_function(format!("grid6_threads{threads}"), |b| {
            b.iter(|| black_box(run_compare(&runs, threads)))
        });
    }
    g.finish();
    // Interleaved 1- and 2-thread runs: the ratio of each pair, then the median.
    let (mut one, mut two, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..7 {
        let t = Wall::now();
        run_compare(&runs, 1);
        let a = runs.len() as f64 / t.elapsed().as_secs_f64();
        let t = Wall::now();
        run_compare(&runs, 2);
        let b = runs.len() as f64 / t.elapsed().as_secs_f64();
        one.push(a);
        two.push(b);
        ratio.push(b / a);
    }
    let (lo, hi) = ratio
        .iter()
        .fold((f64::INFINITY, 0f64), |(l, h), r| (l.min(*r), h.max(*r)));
    println!(
        "compare, 3 controllers x 2 seeds (median of 7 interleaved pairs): 1 thread {:.2} runs/s, \
         2 threads {:.2} runs/s, ratio {:.2}x (range {lo:.2}-{hi:.2})",
        median(one),
        median(two),
        median(ratio)
    );
}

/// A 4-leaf, 2-spine fabric (8 hosts per leaf) with WebSearch Poisson traffic at 30% load.
fn leaf_spine() -> Scenario {
    Scenario::from_toml(
        r#"
name = "leafspine-websearch"
duration_us = 500
topology = { kind = "leaf_spine", leaves = 4, spines = 2, hosts_per_leaf = 8, link = { gbps = 100, delay_ns = 1000 }, uplink = { gbps = 100, delay_ns = 1000 } }
cc = "dcqcn"
sample_us = 10
switch = { buffer_bytes = 12000000, queue_limit_bytes = 1000000, lossless = [3], pfc = true, ecn = { kmin_bytes = 100000, kmax_bytes = 400000, pmax = 0.2 } }

[[workloads]]
kind = "flow_sizes"
hosts = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]
load = 0.3
flows = 300
sizes = { kind = "web_search", scale = 0.1 }
"#,
    )
    .expect("scenario")
}

/// Runs `s` on `threads`; returns events and wall seconds.
fn run_threads(s: &Scenario, threads: usize) -> (u64, f64) {
    let t = Wall::now();
    let mut built = s.build().expect("builds");
    built.fabric.set_threads(threads).expect("splits");
    let events = s.run_built(built, |_| {}).expect("runs").0.events;
    (events, t.elapsed().as_secs_f64())
}

fn bench_parallel(c: &mut Criterion) {
    let s = leaf_spine();
    let (events, _) = run_threads(&s, 1);
    let mut g = c.benchmark_group("parallel");
    g.sample_size(10);
    g.throughput(Throughput::Elements(events));
    for threads in [1, 2] {
        g.bench_function(format!("leafspine32_websearch_threads{threads}"), |b| {
            b.iter(|| black_box(run_threads(&s, threads)))
        });
    }
    g.finish();
    let mut ratio = Vec::new();
    for _ in 0..5 {
        let (_, one) = run_threads(&s, 1);
        let (_, two) = run_threads(&s, 2);
        ratio.push(one / two);
    }
    println!(
        "parallel engine, 32-host leaf-spine, {events} events (median of 5 interleaved pairs): \
         2 threads {:.2}x the speed of 1",
        median(ratio)
    );
    // What bounds that ratio, independent of how busy the machine is.
    let mut built = s.build().expect("builds");
    built.fabric.set_threads(2).expect("splits");
    let (_, built) = s.run_built(built, |_| {}).expect("runs");
    if let Some(st) = built.fabric.parallel_stats() {
        let handled: u64 = st.events.iter().sum();
        println!(
            "  {} windows, {:.0} events per window, balance bound {:.2}x, {:.3} crossings per \
             event, {:.1}% of the wall time alone, thread CPU {:?} ms",
            st.windows,
            handled as f64 / st.windows.max(1) as f64,
            st.balance_bound(),
            st.crossings as f64 / handled.max(1) as f64,
            100.0 * st.serial_ns as f64 / (st.serial_ns + st.window_ns).max(1) as f64,
            st.cpu_ns.iter().map(|c| c / 1_000_000).collect::<Vec<_>>()
        );
    }
}

/// The benches `main` runs.
mod group {
    // criterion_group! writes `pub fn benches` without docs: in a private module it is no API.
    criterion::criterion_group!(
        benches,
        super::bench,
        super::bench_compare,
        super::bench_parallel
    );
}
criterion_main!(group::benches);
