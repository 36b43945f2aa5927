//! DPDK data-path benchmarks, one core, with baselines measured in the same run:
//! - TX of RDMA WRITE Only frames (alloc + headers + payload + ICRC + tx_burst) on net_null,
//!   beside bare DPDK (alloc + tx_burst of empty mbufs) and raw crc32fast over the same bytes,
//!   for 64-byte payloads (Mpps) and 4096-byte payloads (Gbit/s);
//!   (`roce_write` uses the per-QP `FrameTemplate`, `roce_write_generic` `RoceRepr::emit`; both
//!   copy the payload into the mbuf and compute the ICRC over the whole frame);
//! - TX + RX + parse + ICRC verify on a net_ring loopback pair (`parse_frame` and the light
//!   `parse_view`), beside TX + RX alone, both sizes.
//!
//! After criterion's own report, a summary prints the medians as Mpps / Gbit/s and ratios, then
//! the TX cases again in thread CPU time (preemption on the shared machine excluded).

// A benchmark may panic: its setup failing is a broken benchmark, not an input to handle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput};
use roce_dpdk::{ring_pair, DpdkPort, Eal, EalConfig, Mbuf, Mempool, MempoolConfig, PortConfig};
use roce_proto::port::{FrameBuf, Port};
use roce_proto::wire::{parse_frame, parse_view, FrameTemplate, PacketFields};
use roce_testkit::cpu_median::cpu_median_ns;
use roce_testkit::criterion_median::{self, median_ns};
use roce_testkit::roce_frames;

const BURST: usize = 32;
const SIZES: [usize; 2] = [64, 4096];

struct Setup {
    eal: Eal,
    pool: Arc<Mempool>,
}

fn port(setup: &Setup, id: u16) -> DpdkPort {
    let config = PortConfig {
        mtu: Some(4200),
        ..PortConfig::default()
    };
    match DpdkPort::new(&setup.eal, id, setup.pool.clone(), &config) {
        Ok(p) => p,
        Err(e) => panic!("port {id}: {e}"),
    }
}

fn alloc_burst(pool: &Mempool, burst: &mut Vec<Mbuf>) {
    while !pool.alloc_bulk(burst, BURST) {
        std::hint::spin_loop();
    }
}

/// What one TX bench iteration does with a burst of `BURST` frames.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tx {
    /// Alloc, per-QP `FrameTemplate` emit (PSN + payload copy + ICRC), tx_burst.
    Template,
    /// Alloc, `RoceRepr::emit` (headers from the reprs + payload copy + ICRC), tx_burst.
    Generic,
    /// Alloc + tx_burst of mbufs with the frame length set, nothing written.
    Bare,
    /// crc32fast over the whole frame, `BURST` times; no DPDK.
    Crc,
}

const TX_CASES: [(Tx, &str); 4] = [
    (Tx::Template, "roce_write"),
    (Tx::Generic, "roce_write_generic"),
    (Tx::Bare, "bare_dpdk"),
    (Tx::Crc, "crc32fast"),
];

fn tx_benches(c: &mut Criterion, setup: &Setup, cpu: &mut Vec<(String, f64)>) {
    let null = match setup.eal.port_by_name("net_null0") {
        Ok(id) => id,
        Err(e) => panic!("{e}"),
    };
    let mut port = port(setup, null);
    let pool = setup.pool.clone();
    let mut burst: Vec<Mbuf> = Vec::with_capacity(BURST);
    for size in SIZES {
        let repr = roce_frames::write_only(1, size);
        let payload = roce_frames::payload(1, size);
        let frame = roce_frames::frame(1, size);
        let frame_len = frame.len();
        // The data path: a per-QP template built once, then per frame a PSN and the payload.
        let template = FrameTemplate::new(&repr);
        let mut fields = PacketFields::from_repr(&repr);
        let mut iteration = |kind: Tx| {
            if kind == Tx::Crc {
                for _ in 0..BURST {
                    black_box(crc32fast::hash(black_box(&frame)));
                }
                return;
            }
            alloc_burst(&pool, &mut burst);
            for m in burst.iter_mut() {
                m.set_frame_len(frame_len);
                match kind {
                    Tx::Template => {
                        fields.psn = fields.psn.add(1);
                        let _ = black_box(template.emit(&fields, &payload, m.frame_mut()));
                    }
                    Tx::Generic => {
                        let _ = black_box(repr.emit(&payload, m.frame_mut()));
                    }
                    Tx::Bare | Tx::Crc => {}
                }
            }
            while !burst.is_empty() {
                port.tx_burst(&mut burst);
            }
        };
        let group = format!("tx_{size}B");
        let mut g = c.benchmark_group(&group);
        g.throughput(Throughput::Elements(BURST as u64));
        for (kind, name) in TX_CASES {
            g.bench_function(name, |b| b.iter(|| iteration(kind)));
        }
        g.finish();
        let iters = if size == 64 { 20_000 } else { 2_000 };
        for (kind, name) in TX_CASES {
            cpu.push((
                format!("{group}/{name}"),
                cpu_median_ns(21, iters, || iteration(kind)),
            ));
        }
    }
}

fn rx_benches(c: &mut Criterion, setup: &Setup) {
    let (a, b) = match ring_pair(&setup.eal, "bench", 1024) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    };
    let (mut tx, mut rx) = (port(setup, a), port(setup, b));
    let pool = setup.pool.clone();
    let mut out: Vec<Mbuf> = Vec::with_capacity(BURST);
    let mut burst: Vec<Mbuf> = Vec::with_capacity(BURST);
    for size in SIZES {
        let frame = roce_frames::frame(1, size);
        let mut g = c.benchmark_group(format!("rx_{size}B_ring"));
        g.throughput(Throughput::Elements(BURST as u64));
        let mut run = |b: &mut criterion::Bencher, parse: Parse| {
            b.iter(|| {
                alloc_burst(&pool, &mut burst);
                for m in burst.iter_mut() {
                    if let Some(d) = m.append(frame.len()) {
                        d.copy_from_slice(&frame);
                    }
                }
                while !burst.is_empty() {
                    tx.tx_burst(&mut burst);
                }
                let mut got = 0;
                while got < BURST {
                    got += rx.rx_burst(&mut out, BURST - got);
                }
                for m in &out {
                    match parse {
                        Parse::Full => {
                            let _ = black_box(parse_frame(m.frame()).is_ok());
                        }
                        Parse::View => {
                            let _ = black_box(parse_view(m.frame()).is_ok());
                        }
                        Parse::None => {}
                    }
                }
                out.clear();
            })
        };
        g.bench_function("rx_parse_verify", |b| run(b, Parse::Full));
        g.bench_function("rx_parse_view", |b| run(b, Parse::View));
        g.bench_function("rx_only", |b| run(b, Parse::None));
        g.finish();
    }
}

/// What the RX bench does with each received frame.
#[derive(Clone, Copy)]
enum Parse {
    /// `parse_frame`: the full checked parse into a `RocePacket`, ICRC verified.
    Full,
    /// `parse_view`: the same checks, ICRC verified, into the light `RoceView`.
    View,
    /// Nothing (the baseline: TX + RX on the ring).
    None,
}

/// The TX cases again, in thread CPU time per burst.
fn cpu_summary(cpu: &[(String, f64)]) {
    println!("\n== DPDK TX in thread CPU time (median of 21 runs, same run; preemption excluded)");
    for size in SIZES {
        let g = format!("tx_{size}B");
        let rate = |f: &str| {
            cpu.iter()
                .find(|(k, _)| *k == format!("{g}/{f}"))
                .map(|(_, ns)| BURST as f64 / ns * 1e3)
        };
        let (Some(roce), Some(generic), Some(bare), Some(crc)) = (
            rate("roce_write"),
            rate("roce_write_generic"),
            rate("bare_dpdk"),
            rate("crc32fast"),
        ) else {
            continue;
        };
        println!(
            "{g}: roce_write (template) {roce:.2} Mpps = {:.1} Gbit/s of payload | generic \
             RoceRepr::emit {generic:.2} Mpps | bare_dpdk {bare:.2} Mpps | crc32fast alone {crc:.2} Mpps",
            roce * (size * 8) as f64 / 1e3
        );
    }
}

fn summary() {
    println!("\n== DPDK summary (medians, {BURST} frames per iteration, one core, same run)");
    for size in SIZES {
        let g = format!("tx_{size}B");
        let frame_bits = (roce_frames::frame(1, size).len() * 8) as f64;
        let payload_bits = (size * 8) as f64;
        let rate = |f: &str| median_ns(&g, f).map(|ns| BURST as f64 / ns * 1e3);
        let (Some(roce), Some(bare), Some(crc)) =
            (rate("roce_write"), rate("bare_dpdk"), rate("crc32fast"))
        else {
            println!("{g}: no estimates in this run (filtered out?)");
            continue;
        };
        let generic = rate("roce_write_generic").unwrap_or(f64::NAN);
        println!(
            "{g}: roce_write (template) {roce:.2} Mpps = {:.1} Gbit/s of payload ({:.1} of frames) | \
             generic RoceRepr::emit {generic:.2} Mpps | bare_dpdk {bare:.2} Mpps ({:.2}x of bare) | \
             crc32fast alone {crc:.2} Mpps ({:.2}x of crc)",
            roce * payload_bits / 1e3,
            roce * frame_bits / 1e3,
            roce / bare,
            roce / crc
        );
    }
    for size in SIZES {
        let g = format!("rx_{size}B_ring");
        let payload_bits = (size * 8) as f64;
        let rate = |f: &str| median_ns(&g, f).map(|ns| BURST as f64 / ns * 1e3);
        if let (Some(full), Some(view), Some(only)) = (
            rate("rx_parse_verify"),
            rate("rx_parse_view"),
            rate("rx_only"),
        ) {
            println!(
                "{g}: tx+rx+parse_frame+icrc {full:.2} Mpps ({:.1} Gbit/s) | \
                 tx+rx+parse_view+icrc {view:.2} Mpps ({:.1} Gbit/s) | tx+rx only {only:.2} Mpps",
                full * payload_bits / 1e3,
                view * payload_bits / 1e3,
            );
        } else {
            println!("{g}: no estimates in this run (filtered out?)");
        }
    }
}

fn main() {
    criterion_median::mark_start();
    let mut config = EalConfig::new("--log-level=lib.eal:4 --vdev=net_null0");
    config.require_ports = true;
    let eal = match Eal::init(&config) {
        Ok(e) => e,
        Err(e) => panic!("{e}"),
    };
    let pool = match Mempool::new(&eal, &MempoolConfig::for_frames(4300, 2047)) {
        Ok(p) => Arc::new(p),
        Err(e) => panic!("{e}"),
    };
    let setup = Setup { eal, pool };
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2))
        .configure_from_args();
    let mut cpu = Vec::new();
    tx_benches(&mut c, &setup, &mut cpu);
    rx_benches(&mut c, &setup);
    c.final_summary();
    summary();
    cpu_summary(&cpu);
}
