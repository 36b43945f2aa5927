//! Per-packet cost of congestion control and pacing on the TX path, beside a baseline measured
//! in the same run. Target: CC + pacer ≤ 10 ns median per packet.
//!
//! Each iteration is what the endpoint scheduler does per data packet: ask the pacer for the
//! departure time, advance virtual time to it, tell the controller and the pacer, and hand the
//! controller's rate back to the pacer. DCQCN is kept throttled (a CNP every 4096 packets) so the
//! byte counter, increase events and timers are on the measured path.

// A benchmark may panic: its setup failing is a broken benchmark, not an input to handle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cpu_time::ThreadTime;
use std::hint::black_box;

use criterion::Criterion;
use roce_proto::cc::{CcConfig, CongestionControl, Controller, Pacer, Rate};
use roce_proto::time::Instant;

const LEN: u64 = 4158;

struct TxPath {
    cc: Controller,
    pacer: Pacer,
    now: Instant,
    n: u64,
}

impl TxPath {
    fn new(name: &str) -> Self {
        let cc = CcConfig::new(name, Rate::from_gbps(100)).unwrap().build();
        let pacer = Pacer::new(cc.rate(), 0);
        TxPath {
            cc,
            pacer,
            now: Instant::ZERO,
            n: 0,
        }
    }

    #[inline]
    fn packet(&mut self) {
        self.now = self.pacer.earliest_departure(self.now, LEN);
        if self.n & 4095 == 0 {
            self.cc.on_cnp(self.now);
        }
        self.n += 1;
        self.cc.on_sent(self.now, LEN);
        if let Some(t) = self.cc.poll_timeout() {
            if t <= self.now {
                self.cc.handle_timeout(self.now);
            }
        }
        self.pacer.on_sent(self.now, LEN);
        self.pacer.set_rate(self.now, self.cc.rate());
    }
}

fn criterion_benches(c: &mut Criterion) {
    let mut counter = 0u64;
    c.bench_function("baseline/counter_increment", |b| {
        b.iter(|| {
            counter = black_box(counter).wrapping_add(1);
        })
    });
    for name in ["none", "dcqcn-mlx", "dcqcn-paper"] {
        let mut tx = TxPath::new(name);
        c.bench_function(&format!("tx_path/{name}"), |b| b.iter(|| tx.packet()));
    }
}

/// Median ns per iteration over `runs` runs of `iters` iterations, in thread CPU time so that
/// preemption on a shared machine does not count.
fn median_ns(runs: usize, iters: u64, mut f: impl FnMut()) -> f64 {
    let mut v: Vec<f64> = (0..runs)
        .map(|_| {
            let t = ThreadTime::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ratio_summary() {
    let mut counter = 0u64;
    let base = median_ns(31, 1_000_000, || {
        counter = black_box(counter).wrapping_add(1);
    });
    println!(
        "\nper-packet medians (thread CPU time, 31 runs x 1M packets), \
         baseline counter increment {base:.2} ns"
    );
    {
        let mut pacer = Pacer::new(Rate::from_gbps(100), 0);
        let mut now = Instant::ZERO;
        let ns = median_ns(31, 1_000_000, || {
            now = pacer.earliest_departure(now, LEN);
            pacer.on_sent(now, LEN);
            black_box(&now);
        });
        println!(
            "  pacer alone            {ns:6.2} ns/packet  ratio {:5.1}x baseline",
            ns / base
        );
        let mut cc = CcConfig::new("none", Rate::from_gbps(100)).unwrap().build();
        let mut t = 0u64;
        let ns = median_ns(31, 1_000_000, || {
            t += 300;
            cc.on_sent(Instant::from_nanos(t), LEN);
            black_box(cc.rate());
        });
        println!(
            "  `none` controller alone {ns:5.2} ns/packet  ratio {:5.1}x baseline",
            ns / base
        );
    }
    for name in ["none", "dcqcn-mlx", "dcqcn-paper"] {
        let mut tx = TxPath::new(name);
        let ns = median_ns(31, 1_000_000, || {
            tx.packet();
            black_box(&tx.now);
        });
        println!(
            "  cc+pacer {name:<12} {ns:6.2} ns/packet  ratio {:5.1}x baseline  (target <= 10 ns)",
            ns / base
        );
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    criterion_benches(&mut c);
    c.final_summary();
    ratio_summary();
}
