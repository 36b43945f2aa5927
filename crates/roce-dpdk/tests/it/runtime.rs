//! DPDK integration tests of the poll-mode runtime over ring pairs (mempool exhaustion, full TX
//! rings, engines exchanging frames, no steady-state allocation, the randomized RC suite), under
//! this binary's runner (`harness.rs`).

use std::sync::Arc;

use anyhow::ensure;
use roce_dpdk::clock::{Clock, MonotonicClock};
use roce_dpdk::runtime::{Runtime, RuntimeConfig};
use roce_dpdk::{DpdkPort, Eal, Mempool, MempoolConfig, PortConfig, TscClock};
use roce_proto::engine::Engine;
use roce_proto::port::{FrameBuf, Port};
use roce_proto::time;
use roce_proto::verbs::Recovery;
use roce_proto::wire::parse_frame;
use roce_testkit::rc;
use roce_testkit::roce_frames;

use crate::harness::{burst_of, no_leak, pool, port_config, ring_ports, rx_until, Test};
use roce_frames::{FrameSource, TxOnly};

/// The tests (all with the EAL).
pub const TESTS: &[(&str, Test)] = dpdk_tests![
    mempool_exhaustion_is_counted_without_leak,
    full_tx_ring_keeps_unsent_frames_in_order,
    runtime_moves_frames_between_engines_over_ring_pair,
    runtime_steady_state_allocates_nothing,
    rc_random_run_over_ring_ports_delivers_exactly_and_frees_every_mbuf,
];

fn mempool_exhaustion_is_counted_without_leak(eal: &Eal) -> anyhow::Result<()> {
    let pool = pool(eal, 63)?;
    let mut held = Vec::new();
    while let Some(m) = pool.alloc() {
        held.push(m);
    }
    ensure!(
        held.len() == 63 && pool.available() == 0,
        "got {}",
        held.len()
    );
    ensure!(!pool.alloc_bulk(&mut held, 1) && held.len() == 63);
    drop(held);
    no_leak(&pool)?;

    // The loop keeps going when the pool runs dry and says so in its counters.
    let (port, mut peer) = ring_ports(eal, "rp_exhaust", 1024, &pool, &port_config())?;
    let mut rt = Runtime::new(
        port,
        MonotonicClock::new(),
        RuntimeConfig {
            burst: 32,
            max_tx_retries: 4,
            pfc_link_bps: None,
        },
    );
    let mut hoard = Vec::new();
    ensure!(pool.alloc_bulk(&mut hoard, 60));
    let mut gen = Generator::new(100, 64);
    rt.poll_once(&mut gen);
    let c = rt.counters();
    ensure!(c.tx_packets == 3 && c.alloc_failures == 1, "{c:?}");
    drop(hoard);
    rt.poll_once(&mut gen);
    ensure!(rt.counters().tx_packets == 35, "{:?}", rt.counters());
    rt.discard_backlog();
    drop(rt);
    // Frames in flight sit in the ring until the peer takes them.
    ensure!(pool.in_use() == 35, "in use {}", pool.in_use());
    let mut got = Vec::new();
    rx_until(&mut peer, &mut got, 35);
    ensure!(got.len() == 35);
    drop((got, peer));
    no_leak(&pool)
}

fn full_tx_ring_keeps_unsent_frames_in_order(eal: &Eal) -> anyhow::Result<()> {
    let pool = pool(eal, 255)?;
    // 16-slot rings hold 15 frames: a 32-frame burst is only partly accepted.
    let (mut tx_port, mut rx_port) = ring_ports(eal, "rp_full", 16, &pool, &port_config())?;
    let frames: Vec<Vec<u8>> = (0..32).map(|i| roce_frames::frame(i, 64)).collect();
    let mut burst = burst_of(&pool, &frames)?;
    ensure!(
        tx_port.tx_burst(&mut burst) == 15,
        "sent {}",
        32 - burst.len()
    );
    ensure!(burst.len() == 17 && burst[0].frame() == frames[15].as_slice());
    ensure!(tx_port.tx_burst(&mut burst) == 0 && burst.len() == 17);
    let mut got = Vec::new();
    rx_until(&mut rx_port, &mut got, 15);
    ensure!(tx_port.tx_burst(&mut burst) == 15 && burst.len() == 2);
    rx_until(&mut rx_port, &mut got, 30);
    ensure!(got.len() == 30);
    ensure!(
        got.iter()
            .zip(&frames)
            .all(|(m, f)| m.frame() == f.as_slice()),
        "order"
    );
    drop((got, burst));

    // The same through the loop: retries while the ring is full, drops when it stays full.
    let mut rt = Runtime::new(
        tx_port,
        MonotonicClock::new(),
        RuntimeConfig {
            burst: 32,
            max_tx_retries: 2,
            pfc_link_bps: None,
        },
    );
    let mut gen = Generator::new(40, 64);
    for _ in 0..4 {
        rt.poll_once(&mut gen);
    }
    let c = rt.counters();
    // 32 generated, 15 sent, 8 more generated into the backlog, then 3 polls without progress.
    ensure!(
        c.tx_packets == 15 && c.tx_retries == 4 && c.tx_drops == 25,
        "{c:?}"
    );
    let mut drained = Vec::new();
    rx_until(&mut rx_port, &mut drained, 15);
    ensure!(drained.len() == 15);
    drop(drained);
    rt.discard_backlog();
    drop((rt, rx_port));
    no_leak(&pool)
}

type RingRuntime<C> = Runtime<DpdkPort, C>;

/// A sender and a receiver loop over `ports`, each with its own clock from `clock`: bursts of
/// 32, up to 64 TX retries.
fn runtime_pair<C: Clock>(
    (a, b): (DpdkPort, DpdkPort),
    clock: impl Fn() -> C,
) -> (RingRuntime<C>, RingRuntime<C>) {
    let config = RuntimeConfig {
        burst: 32,
        max_tx_retries: 64,
        pfc_link_bps: None,
    };
    (
        Runtime::new(a, clock(), config),
        Runtime::new(b, clock(), config),
    )
}

fn runtime_moves_frames_between_engines_over_ring_pair(eal: &Eal) -> anyhow::Result<()> {
    let pool = pool(eal, 1023)?;
    let ports = ring_ports(eal, "rp_runtime", 1024, &pool, &port_config())?;
    let (mut sender, mut receiver) = runtime_pair(ports, MonotonicClock::new);
    let mut gen = Generator::new(1000, 256);
    let mut sink = Verifier::default();
    for _ in 0..200 {
        sender.poll_once(&mut gen);
        receiver.poll_once(&mut sink);
        if sink.ok == 1000 {
            break;
        }
    }
    let (s, r) = (sender.counters(), receiver.counters());
    ensure!(s.tx_packets == 1000 && s.tx_drops == 0, "{s:?}");
    ensure!(
        r.rx_packets == 1000 && sink.ok == 1000 && sink.bad == 0,
        "{r:?} ok={} bad={}",
        sink.ok,
        sink.bad
    );
    ensure!(r.rx_bytes == s.tx_bytes);
    drop((sender, receiver));
    no_leak(&pool)
}

fn runtime_steady_state_allocates_nothing(eal: &Eal) -> anyhow::Result<()> {
    let pool = pool(eal, 1023)?;
    let ports = ring_ports(eal, "rp_noalloc", 1024, &pool, &port_config())?;
    let (mut sender, mut receiver) = runtime_pair(ports, || TscClock::new(eal));
    let mut gen = Generator::new(u32::MAX, 64);
    let mut sink = Verifier {
        check_payload: false,
        ..Verifier::default()
    };
    // Warm up: the burst vectors reach their capacity.
    for _ in 0..4 {
        sender.poll_once(&mut gen);
        receiver.poll_once(&mut sink);
    }
    let info = allocation_counter::measure(|| {
        for _ in 0..200 {
            sender.poll_once(&mut gen);
            receiver.poll_once(&mut sink);
        }
    });
    ensure!(
        info.count_total == 0,
        "{} allocations in 200 polls",
        info.count_total
    );
    ensure!(
        sink.ok == 204 * 32 && sink.bad == 0,
        "ok {} bad {}",
        sink.ok,
        sink.bad
    );
    drop((sender, receiver));
    no_leak(&pool)
}

/// The randomized RC suite (roce_testkit::rc::random) once over two net_ring ports: many QPs,
/// every opcode, 0 B..1 MiB, 1-10% of every fault, start PSNs at the 24-bit wrap, exact
/// verification; afterwards every mbuf is back in the pool. `ROCE_TEST_SEED` replays a seed.
fn rc_random_run_over_ring_ports_delivers_exactly_and_frees_every_mbuf(
    eal: &Eal,
) -> anyhow::Result<()> {
    use rc::random::{run, Faults, Run};
    let seed = std::env::var("ROCE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    // Frames of the largest path MTU (4096) plus every RoCE header fit one mbuf.
    let mtu = 4200;
    let config = MempoolConfig {
        cache: 0,
        ..MempoolConfig::for_frames(mtu + 18, 4095)
    };
    let pool = Arc::new(Mempool::new(eal, &config)?);
    let cfg = PortConfig {
        mtu: Some(mtu),
        ..port_config()
    };
    let (port_a, port_b) = ring_ports(eal, "rp_rc_random", 1024, &pool, &cfg)?;
    let r = Run {
        seed,
        qps: 8,
        ops_per_qp: 24,
        byte_budget: 3 << 20,
        faults: Faults::Random,
        recovery: Recovery::GoBackN,
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(r, port_a, port_b))).map_err(
        |e| {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            anyhow::anyhow!("seed {seed}: {msg}")
        },
    )?;
    no_leak(&pool)
}

// ---------------------------------------------------------------------------------------------
// engines

/// Sends `remaining` WRITE Only frames, PSN counting up from 0.
struct Generator {
    remaining: u32,
    next_psn: u32,
    payload_len: usize,
}

impl Generator {
    fn new(count: u32, payload_len: usize) -> TxOnly<Self> {
        TxOnly(Generator {
            remaining: count,
            next_psn: 0,
            payload_len,
        })
    }
}

impl FrameSource for Generator {
    fn next_frame(&mut self, buf: &mut [u8]) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        let repr = roce_frames::write_only(self.next_psn, self.payload_len);
        let seed = self.next_psn;
        let len = repr
            .emit_with(buf, |p| {
                for (i, b) in p.iter_mut().enumerate() {
                    *b = (i as u32).wrapping_mul(31).wrapping_add(seed) as u8;
                }
            })
            .ok()?;
        self.remaining -= 1;
        self.next_psn += 1;
        Some(len)
    }
}

/// Checks every frame parses with a valid ICRC, arrives in PSN order and (optionally, which
/// allocates) carries its payload.
struct Verifier {
    ok: u32,
    bad: u32,
    check_payload: bool,
}

impl Default for Verifier {
    fn default() -> Self {
        Verifier {
            ok: 0,
            bad: 0,
            check_payload: true,
        }
    }
}

impl Engine for Verifier {
    fn handle_frame(&mut self, _now: time::Instant, frame: &[u8]) {
        let good = parse_frame(frame).is_ok_and(|p| {
            p.repr.bth.psn.value() == self.ok
                && (!self.check_payload
                    || p.payload == roce_frames::payload(self.ok, p.payload.len()).as_slice())
        });
        if good {
            self.ok += 1;
        } else {
            self.bad += 1;
        }
    }
    fn handle_timeout(&mut self, _now: time::Instant) {}
    fn poll_transmit(&mut self, _now: time::Instant, _buf: &mut [u8]) -> Option<usize> {
        None
    }
    fn poll_timeout(&self) -> Option<time::Instant> {
        None
    }
}
