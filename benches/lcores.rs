//! The multi-lcore runtime, 1 lcore against 2 in the same run (criterion, medians):
//! - `lcores_tx_null`: RDMA WRITE Only frames of 64 B payload (per-QP template + ICRC, alloc,
//!   tx_burst) out of net_null, one queue pair per lcore, through the full runtime loop;
//! - `lcores_rc_ring`: the RC path end to end on a net_ring pair (one queue pair per lcore each
//!   side): 2 QPs of 1 KiB RDMA WRITEs, window 32, the requester shard and its responder on the
//!   same lcore (each lcore runs A's shard i and B's shard i);
//! - `lcores_rc_ring/2_scraped_1hz`: the 2-lcore RC run while a thread takes a metrics snapshot of
//!   every shard and renders the OpenMetrics text once a second; `metrics/snapshot_render`: what
//!   one such scrape costs.
//!
//! A summary prints the rates, the 2-lcore/1-lcore ratios and the scraping overhead. The machine
//! this project runs on has 2 CPUs shared with other work: read the spreads criterion prints.

#[path = "../tests/support/criterion_median.rs"]
mod criterion_median;
#[path = "../tests/support/roce_frames.rs"]
mod roce_frames;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use criterion_median::median_ns;
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

/// Frames (TX bench) or messages (RC bench) per criterion iteration.
const UNIT: u64 = 32768;
const RC_SIZE: usize = 1024;
const RC_QPS: usize = 2;
const RC_WINDOW: u64 = 32;

// ---------------------------------------------------------------------------------------------
// TX on net_null

/// Emits WRITE Only frames from a per-QP template while its quota lasts.
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

/// Sends `n` frames from every shard; returns when all are out.
fn tx_quota(
    handles: &[ShardHandle<Generator>],
    n: u64,
    done: &(Sender<()>, Receiver<()>),
) -> Duration {
    let start = Instant::now();
    for h in handles {
        let tx = done.0.clone();
        let mut armed = false;
        let _ = h.run_task(move |g, _| {
            if !armed {
                g.quota = n;
                armed = true;
            }
            if g.quota == 0 {
                let _ = tx.send(());
                return false;
            }
            true
        });
    }
    for _ in handles {
        let _ = done.1.recv();
    }
    start.elapsed()
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
            b.iter_custom(|iters| tx_quota(&handles, iters * UNIT / lcores as u64, &done))
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

fn rc_setup(eal: &Eal, pool: &Arc<Mempool>, lcores: usize) -> RcSetup {
    let (a, b) = ring_pair_queues(eal, &format!("bench_lc{lcores}"), 2048, lcores as u16)
        .unwrap_or_else(|e| panic!("{e}"));
    let cfg = PortConfig {
        queues: lcores as u16,
        mtu: Some(1500),
        ..PortConfig::default()
    };
    let mut shards = Vec::new();
    for (side, id) in [(1u8, a), (2u8, b)] {
        let port = DpdkPort::new(eal, id, pool.clone(), &cfg).unwrap_or_else(|e| panic!("{e}"));
        for (i, p) in shard_ports(port.into_queues(), 1024)
            .into_iter()
            .enumerate()
        {
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
                .create_qp(QpInit {
                    pd,
                    send_cq: cq,
                    recv_cq: cq,
                    max_send_wr: 256,
                    max_recv_wr: 16,
                })
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
fn rc_quota(s: &RcSetup, n: u64, done: &(Sender<()>, Receiver<()>)) -> Duration {
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
        let _ = h.run_task(move |e, _| {
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
                let _ = tx.send(());
                return false;
            }
            true
        });
    }
    for _ in 0..tasks {
        let _ = done.1.recv();
    }
    start.elapsed()
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

fn rc_bench(c: &mut Criterion, eal: &Eal, pool: &Arc<Mempool>) {
    let done = channel::unbounded();
    let per_qp = UNIT / RC_QPS as u64;
    for lcores in [1usize, 2] {
        let s = rc_setup(eal, pool, lcores);
        let mut g = c.benchmark_group("lcores_rc_ring");
        g.throughput(Throughput::Elements(UNIT));
        g.bench_function(lcores.to_string(), |b| {
            b.iter_custom(|iters| rc_quota(&s, iters * per_qp, &done))
        });
        if lcores == 2 {
            let stop = Arc::new(AtomicBool::new(false));
            let source = s.rt.snapshot_source();
            let st = stop.clone();
            let scraper = std::thread::spawn(move || {
                while !st.load(Ordering::Relaxed) {
                    let mut merged = EndpointSnapshot::default();
                    for snap in source.collect(Duration::from_secs(1)).into_iter().flatten() {
                        merged.merge(snap);
                    }
                    let text = render(&Exposition {
                        ports: vec![PortMetrics {
                            device: "bench".into(),
                            snapshot: merged,
                        }],
                        switch: None,
                    });
                    std::hint::black_box(text);
                    // 1 Hz, but wake often enough to stop promptly.
                    for _ in 0..20 {
                        if st.load(Ordering::Relaxed) {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            });
            g.bench_function("2_scraped_1hz", |b| {
                b.iter_custom(|iters| rc_quota(&s, iters * per_qp, &done))
            });
            stop.store(true, Ordering::Relaxed);
            let _ = scraper.join();
            g.finish();
            let mut m = c.benchmark_group("metrics");
            m.bench_function("snapshot_render", |b| b.iter(|| scrape(&s.rt)));
            m.finish();
        } else {
            g.finish();
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
        "\n== multi-lcore summary (medians of this run; {UNIT} frames or messages per iteration)"
    );
    let rate = |g: &str, f: &str| median_ns(g, f).map(|ns| UNIT as f64 / ns * 1e3);
    if let (Some(one), Some(two)) = (rate("lcores_tx_null", "1"), rate("lcores_tx_null", "2")) {
        println!(
            "tx_null 64 B WRITE frames: 1 lcore {one:.2} Mpps | 2 lcores {two:.2} Mpps ({:.2}x)",
            two / one
        );
    }
    if let (Some(one), Some(two)) = (rate("lcores_rc_ring", "1"), rate("lcores_rc_ring", "2")) {
        let gbps = |mpps: f64| mpps * (RC_SIZE * 8) as f64 / 1e3;
        println!(
            "rc_ring 1 KiB WRITEs: 1 lcore {one:.3} M msg/s ({:.2} Gbit/s) | 2 lcores {two:.3} M msg/s ({:.2} Gbit/s) ({:.2}x)",
            gbps(one),
            gbps(two),
            two / one
        );
        if let Some(scraped) = rate("lcores_rc_ring", "2_scraped_1hz") {
            println!("rc_ring 2 lcores scraped at 1 Hz: {scraped:.3} M msg/s ({:+.2}% against unscraped)", (scraped / two - 1.0) * 100.0);
        }
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
