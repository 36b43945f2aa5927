//! The multi-lcore runtime, 1 lcore against 2 in the same run (criterion, medians):
//! - `lcores_tx_null`: RDMA WRITE Only frames of 64 B payload (per-QP template + ICRC, alloc,
//!   tx_burst) out of net_null, one queue pair per lcore, through the full runtime loop;
//! - `lcores_rc_ring`: the RC path end to end on a net_ring pair (one queue pair per lcore each
//!   side): 2 QPs of 1 KiB RDMA WRITEs, window 32, the requester shard and its responder on the
//!   same lcore (each lcore runs A's shard i and B's shard i); `lcores_rc_pairs/2`: the same on
//!   two ring pairs of one queue each (no ring-PMD state shared between the lcores);
//! - `lcores_rc_ring/2_scraped_1hz`: the 2-lcore RC run while a thread takes a metrics snapshot of
//!   every shard and renders the OpenMetrics text once a second; `metrics/snapshot_render`: what
//!   one such scrape costs.
//!
//! A summary prints the rates and the 2-lcore/1-lcore ratios twice: in wall time (criterion's
//! medians) and in the busiest lcore's thread CPU time (what the lcores do when each has a CPU
//! of its own: the machine this project runs on has 2 CPUs shared with other work, which wall
//! time includes); and the scraping overhead: scraped/unscraped pairs of one-second runs,
//! interleaved, in lcore CPU time, beside what one scrape costs.

// A benchmark may panic: its setup failing is a broken benchmark, not an input to handle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use crossbeam::channel::{self, Receiver, Sender};

use roce::metrics::{exposition::render, Exposition, PortMetrics};
use roce_dpdk::lcore::dispatch::{shard_config, shard_ports};
use roce_dpdk::lcore::shard::{connect_across, EndpointSnapshot, ShardEngine, VerbsShard};
use roce_dpdk::lcore::{Cores, LcoreConfig, Lcores, Shard, ShardHandle};
use roce_dpdk::{
    ring_pair_queues, DpdkPort, Eal, EalConfig, Mempool, MempoolConfig, PortConfig, TscClock,
};
use roce_proto::connect::RcOptions;
use roce_proto::endpoint::{Endpoint, EndpointConfig};
use roce_proto::engine::Engine;
use roce_proto::mr::MrInfo;
use roce_proto::time;
use roce_proto::verbs::{AccessFlags, CqHandle, QpInit, SendWr, Sge, WcStatus, WrOpcode};
use roce_proto::wire::{EthernetAddress, FrameTemplate, PacketFields};
use roce_testkit::criterion_median::{self, median_ns};
use roce_testkit::roce_frames;

/// Frames (TX bench) or messages (RC bench) per criterion iteration.
const UNIT: u64 = 32768;
const RC_SIZE: usize = 1024;
const RC_QPS: usize = 2;
const RC_WINDOW: u64 = 32;

// ---------------------------------------------------------------------------------------------
// TX on net_null

/// Emits WRITE Only frames from a per-QP template while its quota lasts; what arrives is
/// ignored, and it has no timer.
struct Generator {
    template: FrameTemplate,
    fields: PacketFields,
    payload: Vec<u8>,
    quota: u64,
}

impl Engine for Generator {
    fn handle_frame(&mut self, _now: time::Instant, _frame: &[u8]) {}
    fn handle_timeout(&mut self, _now: time::Instant) {}
    fn poll_transmit(&mut self, _now: time::Instant, buf: &mut [u8]) -> Option<usize> {
        if self.quota == 0 {
            return None;
        }
        self.quota -= 1;
        self.fields.psn = self.fields.psn.add(1);
        self.template.emit(&self.fields, &self.payload, buf).ok()
    }
    fn poll_timeout(&self) -> Option<time::Instant> {
        None
    }
}

impl ShardEngine for Generator {
    type Work = ();
    type Done = ();
    type Snapshot = ();
    fn apply(&mut self, _now: time::Instant, _work: ()) {}
    fn poll_done(&mut self) -> Option<()> {
        None
    }
    fn snapshot(&self, _now: time::Instant) {}
}

/// What a task says when its quota is done: the CPU time its lcore thread spent on it.
type Done = (Sender<Duration>, Receiver<Duration>);

/// Waits for `tasks` tasks; returns the wall time since `start` and the most CPU time one lcore
/// spent (the run's length had every lcore a CPU of its own).
fn wait(start: Instant, tasks: usize, done: &Done) -> (Duration, Duration) {
    let mut cpu = Duration::ZERO;
    for _ in 0..tasks {
        cpu = cpu.max(done.1.recv().unwrap_or_default());
    }
    (start.elapsed(), cpu)
}

/// Sends `n` frames from every shard; returns the wall time and the busiest lcore's CPU time.
fn tx_quota(handles: &[ShardHandle<Generator>], n: u64, done: &Done) -> (Duration, Duration) {
    let start = Instant::now();
    for h in handles {
        let tx = done.0.clone();
        let mut armed = None;
        let _ = h.run_task(move |g, _| {
            let t0 = *armed.get_or_insert_with(|| {
                g.quota = n;
                thread_cpu()
            });
            if g.quota == 0 {
                let _ = tx.send(thread_cpu().saturating_sub(t0));
                return false;
            }
            true
        });
    }
    wait(start, handles.len(), done)
}

/// CPU time of the calling thread so far.
fn thread_cpu() -> Duration {
    cpu_time::ThreadTime::now().as_duration()
}

/// Rates (units per second) measured in lcore CPU time, by case.
static CPU_RATES: std::sync::Mutex<Vec<(String, f64)>> = std::sync::Mutex::new(Vec::new());

/// The median over `runs` of `units` per second of the busiest lcore's CPU time (preemption by
/// the machine's other work excluded), recorded as `case`.
fn cpu_rate(case: &str, runs: usize, units: u64, mut run: impl FnMut() -> (Duration, Duration)) {
    let mut rates: Vec<f64> = (0..runs)
        .map(|_| units as f64 / run().1.as_secs_f64().max(1e-9))
        .collect();
    rates.sort_by(f64::total_cmp);
    let median = rates.get(rates.len() / 2).copied().unwrap_or(f64::NAN);
    let mut all = CPU_RATES.lock().unwrap_or_else(|e| e.into_inner());
    all.push((case.to_owned(), median));
}

fn cpu_rate_of(case: &str) -> Option<f64> {
    let all = CPU_RATES.lock().unwrap_or_else(|e| e.into_inner());
    all.iter().find(|(c, _)| c == case).map(|(_, r)| *r)
}

fn tx_bench(c: &mut Criterion, eal: &Eal, pool: &Arc<Mempool>) {
    let mut g = c.benchmark_group("lcores_tx_null");
    g.throughput(Throughput::Elements(UNIT));
    for lcores in [1usize, 2] {
        let id = match eal.probe_device(&format!("net_null{lcores},no-rx=1")) {
            Ok(id) => id,
            Err(e) => panic!("{e}"),
        };
        let cfg = PortConfig {
            queues: lcores as u16,
            link_timeout: Duration::ZERO,
            ..PortConfig::default()
        };
        let port = DpdkPort::new(eal, id, pool.clone(), &cfg).unwrap_or_else(|e| panic!("{e}"));
        let repr = roce_frames::write_only(1, 64);
        let shards = shard_ports(port.into_queues(), 64)
            .into_iter()
            .enumerate()
            .map(|(i, p)| Shard {
                engine: Generator {
                    template: FrameTemplate::new(&repr),
                    fields: PacketFields::from_repr(&repr),
                    payload: roce_frames::payload(1, 64),
                    quota: 0,
                },
                port: p,
                lcore: i,
            })
            .collect();
        let rt = spawn(eal, lcores, shards);
        let done = channel::unbounded();
        let handles = rt.handles().to_vec();
        g.bench_function(lcores.to_string(), |b| {
            b.iter_custom(|iters| tx_quota(&handles, iters * UNIT / lcores as u64, &done).0)
        });
        cpu_rate(&format!("tx_null/{lcores}"), 21, 8 * UNIT, || {
            tx_quota(&handles, 8 * UNIT / lcores as u64, &done)
        });
        drop(rt);
    }
    g.finish();
}

// ---------------------------------------------------------------------------------------------
// The RC path on a ring pair

type Sh = ShardHandle<VerbsShard<Endpoint>>;

struct RcSetup {
    rt: Lcores<VerbsShard<Endpoint>>,
    /// (A-side handle, QPN, CQ, source MR, destination MR on B)
    qps: Vec<(Sh, u32, CqHandle, MrInfo, MrInfo)>,
}

fn mac(i: u8) -> EthernetAddress {
    EthernetAddress([0x02, 0, 0, 0, 0xbe, i])
}

/// How the two ends are wired for `lcores` lcores.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wiring {
    /// One ring pair with a queue pair per lcore (the ring PMD keeps the queues' counters of a
    /// port side by side: lcores write to shared cache lines every burst).
    Queues,
    /// A ring pair of one queue per lcore.
    Pairs,
}

fn rc_setup(eal: &Eal, pool: &Arc<Mempool>, lcores: usize, wiring: Wiring) -> RcSetup {
    let name = |i: usize| format!("bench_lc{lcores}_{}{i}", wiring as u8);
    let ports: Vec<(u16, u16)> =
        match wiring {
            Wiring::Queues => vec![ring_pair_queues(eal, &name(0), 2048, lcores as u16)
                .unwrap_or_else(|e| panic!("{e}"))],
            Wiring::Pairs => (0..lcores)
                .map(|i| ring_pair_queues(eal, &name(i), 2048, 1).unwrap_or_else(|e| panic!("{e}")))
                .collect(),
        };
    let cfg = PortConfig {
        queues: if wiring == Wiring::Queues {
            lcores as u16
        } else {
            1
        },
        mtu: Some(1500),
        ..PortConfig::default()
    };
    let mut shards = Vec::new();
    for side in [1u8, 2] {
        let queues: Vec<_> = ports
            .iter()
            .map(|&(a, b)| if side == 1 { a } else { b })
            .flat_map(|id| {
                let port =
                    DpdkPort::new(eal, id, pool.clone(), &cfg).unwrap_or_else(|e| panic!("{e}"));
                shard_ports(port.into_queues(), 1024)
            })
            .collect();
        for (i, p) in queues.into_iter().enumerate() {
            let c = shard_config(
                EndpointConfig::ipv4(mac(side), [198, 18, 9, side].into()),
                i,
            );
            shards.push(Shard {
                engine: VerbsShard::new(Endpoint::new(c)),
                port: p,
                lcore: i,
            });
        }
    }
    let rt = spawn(eal, lcores, shards);
    let h: Vec<Sh> = rt.handles().to_vec();
    let opts = RcOptions {
        max_send_wr: 256,
        max_recv_wr: 16,
        ..RcOptions::default()
    };
    let mut qps = Vec::new();
    for j in 0..RC_QPS {
        let (ha, hb) = (h[j % lcores].clone(), h[lcores + j % lcores].clone());
        let mk = move |e: &mut VerbsShard<Endpoint>, _| {
            let ep = e.engine_mut();
            let (pd, cq) = (ep.alloc_pd(), ep.create_cq(1024));
            let qpn = ep
                .create_qp(QpInit::shared_cq(pd, cq, 256, 16))
                .unwrap_or_else(|e| panic!("{e}"));
            let mr = ep.reg_mr(
                pd,
                RC_SIZE * RC_WINDOW as usize,
                AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE,
            );
            (qpn, cq, mr)
        };
        let (qa, cq, src) = ha.call(mk).unwrap_or_else(|e| panic!("{e}"));
        let (qb, _, dst) = hb.call(mk).unwrap_or_else(|e| panic!("{e}"));
        connect_across(&ha, qa, &hb, qb, &opts).unwrap_or_else(|e| panic!("{e}"));
        qps.push((ha, qa, cq, src, dst));
    }
    RcSetup { rt, qps }
}

/// A QP as a task drives it: number, CQ, source, destination, posted, completed.
type RcQp = (u32, CqHandle, MrInfo, MrInfo, u64, u64);

/// Completes `n` WRITEs on every QP (window 32, one in-lcore task per shard driving its QPs);
/// returns the wall time.
fn rc_quota(s: &RcSetup, n: u64, done: &Done) -> (Duration, Duration) {
    let start = Instant::now();
    let mut shards: Vec<(Sh, Vec<RcQp>)> = Vec::new();
    for (h, qpn, cq, src, dst) in s.qps.iter().cloned() {
        match shards.iter_mut().find(|(x, _)| x.index() == h.index()) {
            Some((_, v)) => v.push((qpn, cq, src, dst, 0, 0)),
            None => shards.push((h, vec![(qpn, cq, src, dst, 0, 0)])),
        }
    }
    let tasks = shards.len();
    for (h, mut qps) in shards {
        let tx = done.0.clone();
        let mut t0 = None;
        let _ = h.run_task(move |e, _| {
            let t0 = *t0.get_or_insert_with(thread_cpu);
            let ep = e.engine_mut();
            let mut all = true;
            for (qpn, cq, src, dst, posted, completed) in qps.iter_mut() {
                while let Some(wc) = ep.poll_cq_one(*cq) {
                    assert_eq!(wc.status, WcStatus::Success);
                    *completed += 1;
                }
                while *posted < n && *posted - *completed < RC_WINDOW {
                    let slot = (*posted % RC_WINDOW) * RC_SIZE as u64;
                    let sge = Sge {
                        addr: src.addr + slot,
                        length: RC_SIZE as u32,
                        lkey: src.lkey,
                    };
                    let op = WrOpcode::RdmaWrite {
                        remote_addr: dst.addr + slot,
                        rkey: dst.rkey,
                    };
                    if ep.post_send(*qpn, SendWr::new(*posted, op, sge)).is_err() {
                        break;
                    }
                    *posted += 1;
                }
                all &= *completed >= n;
            }
            if all {
                let _ = tx.send(thread_cpu().saturating_sub(t0));
                return false;
            }
            true
        });
    }
    wait(start, tasks, done)
}

/// Takes a snapshot of every shard and renders it, as one scrape does.
fn scrape(rt: &Lcores<VerbsShard<Endpoint>>) -> usize {
    let mut merged = EndpointSnapshot::default();
    for s in rt.snapshots(Duration::from_secs(1)).into_iter().flatten() {
        merged.merge(s);
    }
    render(&Exposition {
        ports: vec![PortMetrics {
            device: "bench".into(),
            snapshot: merged,
        }],
        switch: None,
    })
    .len()
}

/// A thread scraping `rt` like Prometheus at 1 Hz (the first scrape at once) until stopped.
fn scraper(rt: &Lcores<VerbsShard<Endpoint>>) -> (Arc<AtomicBool>, std::thread::JoinHandle<u64>) {
    let stop = Arc::new(AtomicBool::new(false));
    let source = rt.snapshot_source();
    let st = stop.clone();
    let t = std::thread::spawn(move || {
        let mut scrapes = 0;
        while !st.load(Ordering::Relaxed) {
            let mut merged = EndpointSnapshot::default();
            for snap in source.collect(Duration::from_secs(1)).into_iter().flatten() {
                merged.merge(snap);
            }
            std::hint::black_box(render(&Exposition {
                ports: vec![PortMetrics {
                    device: "bench".into(),
                    snapshot: merged,
                }],
                switch: None,
            }));
            scrapes += 1;
            // 1 Hz, waking often enough to stop promptly.
            for _ in 0..20 {
                if st.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        scrapes
    });
    (stop, t)
}

fn rc_bench(c: &mut Criterion, eal: &Eal, pool: &Arc<Mempool>) {
    let done = channel::unbounded();
    let per_qp = UNIT / RC_QPS as u64;
    for lcores in [1usize, 2] {
        if lcores == 2 {
            let s = rc_setup(eal, pool, lcores, Wiring::Pairs);
            let mut g = c.benchmark_group("lcores_rc_pairs");
            g.throughput(Throughput::Elements(UNIT));
            g.bench_function("2", |b| {
                b.iter_custom(|iters| rc_quota(&s, iters * per_qp, &done).0)
            });
            g.finish();
            cpu_rate("rc_pairs/2", 11, 4 * UNIT, || {
                rc_quota(&s, 4 * per_qp, &done)
            });
        }
        let s = rc_setup(eal, pool, lcores, Wiring::Queues);
        let mut g = c.benchmark_group("lcores_rc_ring");
        g.throughput(Throughput::Elements(UNIT));
        g.bench_function(lcores.to_string(), |b| {
            b.iter_custom(|iters| rc_quota(&s, iters * per_qp, &done).0)
        });
        g.finish();
        cpu_rate(&format!("rc_ring/{lcores}"), 11, 4 * UNIT, || {
            rc_quota(&s, 4 * per_qp, &done)
        });
        if lcores == 2 {
            // Scraped against unscraped, interleaved, runs of about a second each so that every
            // scraped run takes a scrape or more; lcore CPU time, so the scraper's own thread and
            // the machine's other work do not count, what the lcores do for a scrape does.
            let long = 16 * UNIT;
            let mut ratios = Vec::new();
            let mut scrapes = 0;
            for _ in 0..7 {
                let (_, plain) = rc_quota(&s, long / RC_QPS as u64, &done);
                let (stop, t) = scraper(&s.rt);
                let (_, scraped) = rc_quota(&s, long / RC_QPS as u64, &done);
                stop.store(true, Ordering::Relaxed);
                scrapes += t.join().unwrap_or(0);
                ratios.push(plain.as_secs_f64() / scraped.as_secs_f64().max(1e-9));
            }
            ratios.sort_by(f64::total_cmp);
            let mut all = CPU_RATES.lock().unwrap_or_else(|e| e.into_inner());
            all.push(("scraped_ratio".into(), ratios[ratios.len() / 2]));
            all.push(("scraped_min".into(), ratios[0]));
            all.push(("scraped_max".into(), ratios[ratios.len() - 1]));
            all.push(("scrapes".into(), scrapes as f64));
            drop(all);
            let mut m = c.benchmark_group("metrics");
            m.bench_function("snapshot_render", |b| b.iter(|| scrape(&s.rt)));
            m.finish();
        }
    }
}

/// `lcores` lcores on CPUs 0.. running `shards`, on the TSC clock.
fn spawn<E: ShardEngine>(eal: &Eal, lcores: usize, shards: Vec<Shard<E, DpdkPort>>) -> Lcores<E> {
    let cores = Cores::count(lcores).unwrap_or_else(|e| panic!("{e}"));
    Lcores::spawn(
        Some(eal),
        &cores,
        shards,
        TscClock::new(eal),
        LcoreConfig::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn summary() {
    println!(
        "\n== multi-lcore summary (criterion medians of this run, wall time; {UNIT} frames or messages per iteration)"
    );
    let rate = |g: &str, f: &str| median_ns(g, f).map(|ns| UNIT as f64 / ns * 1e3);
    let gbps = |mpps: f64| mpps * (RC_SIZE * 8) as f64 / 1e3;
    if let (Some(one), Some(two)) = (rate("lcores_tx_null", "1"), rate("lcores_tx_null", "2")) {
        println!(
            "tx_null 64 B WRITE frames, wall: 1 lcore {one:.2} Mpps | 2 lcores {two:.2} Mpps ({:.2}x)",
            two / one
        );
    }
    if let (Some(one), Some(two)) = (rate("lcores_rc_ring", "1"), rate("lcores_rc_ring", "2")) {
        println!(
            "rc_ring 1 KiB WRITEs, wall: 1 lcore {one:.3} M msg/s ({:.2} Gbit/s) | 2 lcores {two:.3} M msg/s ({:.2} Gbit/s) ({:.2}x)",
            gbps(one),
            gbps(two),
            two / one
        );
        if let Some(pairs) = rate("lcores_rc_pairs", "2") {
            println!(
                "rc_ring 1 KiB WRITEs, wall, 2 lcores on a ring pair each: {pairs:.3} M msg/s ({:.2} Gbit/s) ({:.2}x of 1 lcore)",
                gbps(pairs),
                pairs / one
            );
        }
    }
    println!("== in lcore thread CPU time (the busiest lcore's; median of 21 / 11 runs; preemption excluded)");
    let cpu = |c: &str| cpu_rate_of(c).map(|r| r / 1e6);
    if let (Some(one), Some(two)) = (cpu("tx_null/1"), cpu("tx_null/2")) {
        println!(
            "tx_null 64 B WRITE frames: 1 lcore {one:.2} Mpps | 2 lcores {two:.2} Mpps ({:.2}x)",
            two / one
        );
    }
    if let (Some(one), Some(two)) = (cpu("rc_ring/1"), cpu("rc_ring/2")) {
        println!(
            "rc_ring 1 KiB WRITEs: 1 lcore {one:.3} M msg/s ({:.2} Gbit/s) | 2 lcores {two:.3} M msg/s ({:.2} Gbit/s) ({:.2}x)",
            gbps(one),
            gbps(two),
            two / one
        );
        if let Some(pairs) = cpu("rc_pairs/2") {
            println!(
                "rc_ring 1 KiB WRITEs, 2 lcores on a ring pair each: {pairs:.3} M msg/s ({:.2} Gbit/s) ({:.2}x of 1 lcore)",
                gbps(pairs),
                pairs / one
            );
        }
    }
    if let (Some(r), Some(lo), Some(hi), Some(n)) = (
        cpu_rate_of("scraped_ratio"),
        cpu_rate_of("scraped_min"),
        cpu_rate_of("scraped_max"),
        cpu_rate_of("scrapes"),
    ) {
        println!(
            "rc_ring 2 lcores scraped at 1 Hz ({n:.0} scrapes) / unscraped, lcore CPU time: median {r:.4} (7 interleaved pairs, {lo:.4}..{hi:.4}): {:+.2}%",
            (r - 1.0) * 100.0
        );
    }
    if let Some(ns) = median_ns("metrics", "snapshot_render") {
        println!(
            "one scrape (snapshot of every shard + OpenMetrics render): {:.1} us = {:.4}% of one core at 1 Hz",
            ns / 1e3,
            ns / 1e9 * 100.0
        );
    }
}

fn main() {
    criterion_median::mark_start();
    let eal = Eal::init(&EalConfig {
        require_ports: false,
        ..EalConfig::new("--log-level=lib.eal:4 -m 512")
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let pool = Arc::new(
        Mempool::new(&eal, &MempoolConfig::for_frames(1600, 16383))
            .unwrap_or_else(|e| panic!("{e}")),
    );
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    tx_bench(&mut c, &eal, &pool);
    rc_bench(&mut c, &eal, &pool);
    c.final_summary();
    summary();
}
