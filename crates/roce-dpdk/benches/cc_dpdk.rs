//! The full endpoint TX path on DPDK net_null (runtime loop: clock, timers, `poll_transmit` into
//! mbufs, `tx_burst`) for one RC QP streaming 1 KiB RDMA WRITE packets, with no controller, with
//! `none` and with `dcqcn-mlx` installed, all at a 400 Gbit/s line rate that one core cannot
//! reach, so the pacer never holds a packet back and the difference is the CC + pacer cost.
//! Every 64 packets the stream is acknowledged (a real sender handles ACKs too); the same work
//! runs in every variant. Prints the medians as Mpps and the ratios after criterion's report.

// A benchmark may panic: its setup failing is a broken benchmark, not an input to handle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use criterion::{Criterion, Throughput};
use roce_dpdk::runtime::{Runtime, RuntimeConfig};
use roce_dpdk::{DpdkPort, Eal, EalConfig, Mempool, MempoolConfig, PortConfig, TscClock};
use roce_proto::cc::{CcConfig, Rate};
use roce_proto::connect::RcOptions;
use roce_proto::endpoint::Endpoint;
use roce_proto::engine::Engine;
use roce_proto::psn::{Msn, Psn};
use roce_proto::time::Instant;
use roce_proto::verbs::{CqHandle, Mtu, SendWr};
use roce_proto::wire::{aeth, bth, ethernet, EtherType, ExtRepr, IpRepr, Opcode, RoceRepr};
use roce_testkit::cc_pair::{self, Pair};

const BURST: usize = 32;
const ACK_EVERY: u64 = 64;
const MSG: u32 = 1 << 20;
const VARIANTS: [&str; 3] = ["no_cc", "none", "dcqcn_mlx"];
const CCS: [Option<&str>; 3] = [None, Some("none"), Some("dcqcn-mlx")];
/// Interleaved rounds of the A/B comparison, and polls per variant per round.
const ROUNDS: usize = 41;
const POLLS: usize = 300;

/// The sender endpoint plus what keeps its QP streaming: WRs posted, completions reaped, and an
/// ACK (as the peer would send it) every `ACK_EVERY` packets.
struct Streamer {
    ep: Endpoint,
    qpn: u32,
    cq: CqHandle,
    wr: SendWr,
    ack: RoceRepr,
    sent: u64,
    ack_buf: Vec<u8>,
}

impl Streamer {
    fn new(cc: Option<&str>) -> Streamer {
        // No ACK timeout: criterion's pauses between samples must not trigger retransmissions.
        let opts = RcOptions {
            mtu: Mtu::Mtu1024,
            timeout: 0,
            ..RcOptions::default()
        };
        let p = Pair::new(cc_pair::config, &opts, MSG as usize);
        let wr = p.write_wr(0, MSG);
        let (mut a, sa, b) = (p.a, p.sa, *p.b.config());
        // Real data: a freshly registered region may still be untouched zero pages (calloc'd
        // by mmap), which every read would hit in cache, while a region carved from recycled
        // heap memory is real memory; filling it gives every variant the same source memory.
        if let Some(mr) = a.mr_mut(p.src.lkey) {
            mr.bytes_mut().fill(0x5a);
        }
        if let Some(name) = cc {
            let cc = CcConfig::new(name, Rate::from_gbps(400))
                .expect("cc")
                .build();
            a.set_congestion_control(sa.qpn, cc, 64 * 1024).expect("cc");
        }
        let (a_ip, b_ip) = (a.config().ipv4.expect("ipv4"), b.ipv4.expect("ipv4"));
        let ack = RoceRepr {
            eth: ethernet::Repr {
                dst: a.config().mac,
                src: b.mac,
                vlan: None,
                ethertype: EtherType::Ipv4,
            },
            ip: IpRepr::new_roce(b_ip.into(), a_ip.into(), 26, roce_proto::wire::Ecn::NotEct),
            udp_src_port: 0xc001,
            bth: bth::Repr {
                opcode: Opcode::RC_ACKNOWLEDGE,
                pkey: 0xffff,
                dest_qpn: sa.qpn,
                ..bth::Repr::default()
            },
            ext: ExtRepr {
                aeth: Some(aeth::Repr {
                    syndrome: aeth::Syndrome::Ack { credits: 31 },
                    msn: Msn::new(0),
                }),
                ..ExtRepr::default()
            },
            payload_len: 0,
        };
        let mut s = Streamer {
            ep: a,
            qpn: sa.qpn,
            cq: sa.cq,
            wr,
            ack,
            sent: 0,
            ack_buf: vec![0; 256],
        };
        s.refill();
        s
    }

    fn refill(&mut self) {
        while self.ep.poll_cq_one(self.cq).is_some() {}
        while self.ep.qp(self.qpn).is_some_and(|q| q.send_queue_len() < 4) {
            if self.ep.post_send(self.qpn, self.wr.clone()).is_err() {
                break;
            }
        }
    }

    /// Acknowledges everything through `psn` (the last packet sent).
    fn acknowledge(&mut self, now: Instant, psn: Psn) {
        self.ack.bth.psn = psn;
        if let Ok(n) = self.ack.emit(&[], &mut self.ack_buf) {
            let frame = &self.ack_buf[..n];
            self.ep.handle_frame(now, frame);
        }
        self.refill();
    }
}

impl Engine for Streamer {
    fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        self.ep.handle_frame(now, frame);
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.ep.handle_timeout(now);
    }
    #[inline]
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let n = self.ep.poll_transmit(now, buf)?;
        self.sent += 1;
        if self.sent % ACK_EVERY == 0 {
            // Untagged IPv4: the BTH starts at byte 42, its PSN at 42 + 9.
            if let Some(&[a, b, c]) = buf.get(51..54) {
                self.acknowledge(now, Psn::new(u32::from_be_bytes([0, a, b, c])));
            }
        }
        Some(n)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.ep.poll_timeout()
    }
}

fn median_ns(group: &str, function: &str) -> Option<f64> {
    let path = roce_testkit::target_dir()
        .join("criterion")
        .join(group)
        .join(function)
        .join("new")
        .join("estimates.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    v["median"]["point_estimate"].as_f64()
}

fn main() {
    let mut config = EalConfig::new("--log-level=lib.eal:4 --vdev=net_null0,no-rx=1");
    config.require_ports = true;
    let eal = Eal::init(&config).unwrap_or_else(|e| panic!("{e}"));
    let pool = Mempool::new(&eal, &MempoolConfig::for_frames(2048, 4095))
        .map(Arc::new)
        .unwrap_or_else(|e| panic!("{e}"));
    let id = eal
        .port_by_name("net_null0")
        .unwrap_or_else(|e| panic!("{e}"));
    let port =
        DpdkPort::new(&eal, id, pool, &PortConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    let clock = TscClock::new(&eal);
    let mut rt = Runtime::new(
        port,
        clock,
        RuntimeConfig {
            burst: BURST,
            ..RuntimeConfig::default()
        },
    );
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2))
        .configure_from_args();
    let group = "cc_tx_net_null";
    let mut streamers: Vec<Streamer> = CCS.iter().map(|cc| Streamer::new(*cc)).collect();
    let mut frames_per_poll = Vec::new();
    {
        let mut g = c.benchmark_group(group);
        g.throughput(Throughput::Elements(BURST as u64));
        for (variant, s) in VARIANTS.iter().zip(streamers.iter_mut()) {
            let before = rt.counters();
            g.bench_function(*variant, |b| b.iter(|| rt.poll_once(s)));
            let after = rt.counters();
            let polls = after.polls - before.polls;
            let sent = after.tx_packets - before.tx_packets;
            frames_per_poll.push(sent as f64 / polls.max(1) as f64);
        }
        g.finish();
    }
    c.final_summary();
    println!("\n== CC on the DPDK TX path (net_null, 1 KiB WRITEs, 400 Gbit/s line rate, medians)");
    let mpps: Vec<Option<f64>> = VARIANTS
        .iter()
        .zip(&frames_per_poll)
        .map(|(v, fpp)| median_ns(group, v).map(|ns| fpp / ns * 1e3))
        .collect();
    for ((v, r), fpp) in VARIANTS.iter().zip(&mpps).zip(&frames_per_poll) {
        match r {
            Some(r) => println!("{v:>10}: {r:.2} Mpps ({fpp:.1} frames per poll)"),
            None => println!("{v:>10}: no estimate (filtered out)"),
        }
    }
    if let [Some(no_cc), Some(none), Some(dcqcn)] = mpps[..] {
        println!(
            "criterion medians: dcqcn-mlx / none = {:.3} (target >= 0.90); dcqcn-mlx / no controller = {:.3}",
            dcqcn / none,
            dcqcn / no_cc
        );
    }
    interleaved(&mut rt, &mut streamers);
    for (v, s) in VARIANTS.iter().zip(&streamers) {
        let q = s.ep.counters().qp;
        println!(
            "{v:>10}: QP {:?}, {} packets sent, {} retransmitted",
            s.ep.qp(s.qpn).map(|q| q.state()),
            q.tx_packets,
            q.retransmitted_packets
        );
    }
}

/// The same comparison with the variants alternating in short rounds, so that a machine whose
/// load drifts during the run (shared cores) hits every variant alike: the median over rounds
/// of each variant's rate relative to `none` in the same round.
fn interleaved<P: roce_proto::port::Port, C: roce_dpdk::clock::Clock>(
    rt: &mut Runtime<P, C>,
    streamers: &mut [Streamer],
) {
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); streamers.len()];
    for round in 0..ROUNDS {
        let mut rate = vec![0.0; streamers.len()];
        // Alternate the order so that no variant always runs first or last in a round.
        let n = streamers.len();
        for k in 0..n {
            let i = if round % 2 == 0 { k } else { n - 1 - k };
            let sent_before = rt.counters().tx_packets;
            let t0 = std::time::Instant::now();
            for _ in 0..POLLS {
                rt.poll_once(&mut streamers[i]);
            }
            let ns = t0.elapsed().as_nanos() as f64;
            rate[i] = (rt.counters().tx_packets - sent_before) as f64 / ns;
        }
        for (r, v) in ratios.iter_mut().zip(&rate) {
            r.push(v / rate[1]);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "interleaved ({ROUNDS} rounds x {POLLS} polls each): dcqcn-mlx / none = {:.3} (target >= 0.90); none / no controller = {:.3}; dcqcn-mlx / no controller = {:.3}",
        median(&mut ratios[2]),
        1.0 / median(&mut ratios[0]),
        median(&mut ratios[2]) / median(&mut ratios[0])
    );
}
