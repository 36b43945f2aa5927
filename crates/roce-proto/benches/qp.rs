//! RC queue-pair benchmark: two endpoints in one thread over the in-memory loopback ports, RDMA
//! WRITE of 64 B messages (messages/s) and of 64 KiB messages (Gbit/s of payload), each next to a
//! baseline measured in the same run: a raw memcpy of the payload plus crc32fast over every frame's
//! bytes, the least work any RoCE stack must do. A counting global allocator checks that the
//! steady-state data path allocates nothing. Medians of several samples are printed with ratios.

// A benchmark may panic: its setup failing is a broken benchmark, not an input to handle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant as WallClock;

use roce_proto::connect::{connect_rc, RcOptions, RcSide};
use roce_proto::endpoint::{Endpoint, EndpointConfig};
use roce_proto::loopback::{loopback_pair, EndpointPair, LoopbackPort};
use roce_proto::mr::MrInfo;
use roce_proto::time::{Duration, Instant};
use roce_proto::verbs::{AccessFlags, Mtu, SendFlags, SendWr, Sge, WcStatus, WrOpcode};
use roce_proto::wire::EthernetAddress;

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const SAMPLES: usize = 9;

struct Rig {
    pair: EndpointPair<LoopbackPort>,
    a: RcSide,
    src: MrInfo,
    dst: MrInfo,
    size: u32,
    depth: u32,
}

fn rig(size: u32, mtu: Mtu) -> Rig {
    // Host i: MAC 02:00:00:00:00:0i, 198.18.0.i.
    let [a, b] = [1, 2].map(|i| {
        Endpoint::new(EndpointConfig::ipv4(
            EthernetAddress([2, 0, 0, 0, 0, i]),
            [198, 18, 0, i].into(),
        ))
    });
    let (pa, pb) = loopback_pair(9000, 4096);
    let mut pair = EndpointPair::new(a, b, pa, pb);
    let depth = 128;
    let o = RcOptions {
        mtu,
        max_send_wr: depth,
        max_recv_wr: 1,
        ..RcOptions::default()
    };
    let (sa, sb) = connect_rc(&mut pair.a, &mut pair.b, &o).expect("connect");
    let src = pair
        .a
        .reg_mr(sa.pd, size as usize, AccessFlags::LOCAL_WRITE);
    let dst = pair.b.reg_mr(
        sb.pd,
        size as usize,
        AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE,
    );
    if let Some(m) = pair.a.mr_mut(src.lkey) {
        m.bytes_mut()
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = i as u8);
    }
    Rig {
        pair,
        a: sa,
        src,
        dst,
        size,
        depth,
    }
}

/// Moves `n` WRITEs of the rig's size; returns (wall seconds, thread CPU seconds, frames moved,
/// allocations).
fn run(r: &mut Rig, n: u64) -> (f64, f64, u64, u64) {
    let frames_before = r.pair.a.counters().tx_frames + r.pair.b.counters().tx_frames;
    let (a, src, dst, size, depth) = (r.a, r.src, r.dst, r.size, u64::from(r.depth));
    let mut posted = 0u64;
    let mut done = 0u64;
    let allocs = ALLOCS.load(Ordering::Relaxed);
    let t = WallClock::now();
    let cpu = cpu_time::ThreadTime::now();
    let deadline = r.pair.now + Duration::from_secs(3600);
    r.pair.run_until(deadline, |_, ep, _| {
        while posted < n && posted - done < depth {
            // Signal every 16th (and the last) to keep the CQ short, as perftest does.
            let mut wr = SendWr::new(
                posted,
                WrOpcode::RdmaWrite {
                    remote_addr: dst.addr,
                    rkey: dst.rkey,
                },
                Sge {
                    addr: src.addr,
                    length: size,
                    lkey: src.lkey,
                },
            );
            if posted % 16 != 15 && posted + 1 != n {
                wr.flags = SendFlags::empty();
            }
            if ep.post_send(a.qpn, wr).is_err() {
                break;
            }
            posted += 1;
        }
        while let Some(wc) = ep.poll_cq_one(a.cq) {
            assert_eq!(wc.status, WcStatus::Success);
            done = wc.wr_id + 1;
        }
        done >= n
    });
    let cpu = cpu.elapsed().as_secs_f64();
    let secs = t.elapsed().as_secs_f64();
    let allocs = ALLOCS.load(Ordering::Relaxed) - allocs;
    let frames = r.pair.a.counters().tx_frames + r.pair.b.counters().tx_frames - frames_before;
    let _ = Instant::ZERO;
    (secs, cpu, frames, allocs)
}

/// memcpy of each message's payload plus crc32fast over each frame's bytes; (wall, thread CPU)
/// seconds.
fn baseline(size: usize, mtu: usize, n: u64) -> (f64, f64) {
    let src: Vec<u8> = (0..size).map(|i| i as u8).collect();
    let mut dst = vec![0u8; size];
    let frame = vec![0x5au8; mtu.min(size) + 86];
    let frames_per_msg = size.div_ceil(mtu).max(1);
    let t = WallClock::now();
    let cpu = cpu_time::ThreadTime::now();
    for _ in 0..n {
        dst.copy_from_slice(black_box(&src));
        for _ in 0..frames_per_msg {
            let mut h = crc32fast::Hasher::new();
            h.update(black_box(&frame));
            black_box(h.finalize());
        }
    }
    black_box(&dst);
    (t.elapsed().as_secs_f64(), cpu.elapsed().as_secs_f64())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn measure(label: &str, size: u32, mtu: Mtu, n: u64) {
    let mut r = rig(size, mtu);
    run(&mut r, n / 4); // warm-up: pools, queues and CQs reach their steady size
    let (mut rates, mut cpu_rates) = (Vec::new(), Vec::new());
    let (mut base, mut cpu_base) = (Vec::new(), Vec::new());
    let (mut ratios, mut cpu_ratios) = (Vec::new(), Vec::new());
    let mut allocs = 0;
    let mut frames = 0;
    for _ in 0..SAMPLES {
        let (secs, cpu, f, a) = run(&mut r, n);
        allocs += a;
        frames += f;
        let (b_secs, b_cpu) = baseline(size as usize, mtu.bytes() as usize, n);
        let n = n as f64;
        rates.push(n / secs);
        cpu_rates.push(n / cpu);
        base.push(n / b_secs);
        cpu_base.push(n / b_cpu);
        // Each sample's ratio against the baseline measured right after it: robust to load
        // that changes between samples.
        ratios.push(b_secs / secs);
        cpu_ratios.push(b_cpu / cpu);
    }
    let gbps = |msgs: f64| msgs * f64::from(size) * 8.0 / 1e9;
    let (m, b, r) = (median(rates), median(base), median(ratios));
    let (mc, bc, rc) = (median(cpu_rates), median(cpu_base), median(cpu_ratios));
    println!(
        "{label:<14} roce {:>10.0} msg/s {:>7.2} Gbit/s | baseline memcpy+crc32 {:>10.0} msg/s {:>7.2} Gbit/s | roce/baseline {:.3} (median of per-sample ratios) | allocations {} over {} frames ({:.4}/frame)",
        m, gbps(m), b, gbps(b), r, allocs, frames, allocs as f64 / frames.max(1) as f64
    );
    println!(
        "{:<14} thread CPU time: roce {:>10.0} msg/s {:>7.2} Gbit/s | baseline {:>10.0} msg/s | roce/baseline {:.3}",
        "", mc, gbps(mc), bc, rc
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this quickly as a smoke test.
    let quick = !std::env::args().any(|a| a == "--bench");
    let scale = if quick { 100 } else { 1 };
    // `cargo bench -p roce-proto --bench qp -- 64B` runs only the rows whose label (spaces removed) has "64B".
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let selected = |label: &str| {
        let l = label.replace(' ', "");
        filters.is_empty() || filters.iter().any(|f| l.contains(f.as_str()))
    };
    println!("RC RDMA WRITE over the in-memory loopback, one thread, medians of {SAMPLES} samples");
    for (label, size, n) in [("write 64 B", 64, 200_000), ("write 64 KiB", 65536, 4_000)] {
        if selected(label) {
            measure(label, size, Mtu::Mtu4096, n / scale);
        }
    }
}
