//! DPDK integration tests: one process, one EAL (it cannot be re-initialised), so this binary has
//! its own runner (`harness = false`) that runs the tests in sequence and prints
//! "N passed, N failed". Runs as root without hugepages (`--no-huge` is added automatically).
//! `cargo test --test dpdk -- WORD` runs the tests whose name contains WORD.

#[path = "support/netns.rs"]
mod netns;
mod rc_support;
#[path = "support/roce_frames.rs"]
mod roce_frames;

use std::net::UdpSocket;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use roce_dpdk::clock::{Clock, MonotonicClock};
use roce_dpdk::runtime::{Runtime, RuntimeConfig};
use roce_dpdk::{
    ring_pair, DpdkError, DpdkPort, Eal, EalConfig, Mbuf, Mempool, MempoolConfig, PortConfig,
    TscClock,
};
use roce_proto::engine::Engine;
use roce_proto::port::{FrameBuf, Port};
use roce_proto::time;
use roce_proto::wire::parse_frame;

use netns::NetNs;

const EAL_ARGS: &str = "--log-level=lib.eal:4 --vdev=net_null0 --vdev=net_ring0";
/// Set in a child re-executed inside a namespace: send one UDP datagram "ADDR PAYLOAD" and exit.
const CHILD_SEND_UDP: &str = "ROCE_DPDK_TEST_SEND_UDP";

type Test = fn(&Eal) -> anyhow::Result<()>;

fn main() {
    if let Ok(what) = std::env::var(CHILD_SEND_UDP) {
        std::process::exit(i32::from(child_send_udp(&what).is_err()));
    }
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let selected =
        |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    let (mut passed, mut failed) = (0, 0);
    let mut report = |name: &str, result: anyhow::Result<()>| match result {
        Ok(()) => {
            passed += 1;
            println!("test {name} ... ok");
        }
        Err(e) => {
            failed += 1;
            println!("test {name} ... FAILED: {e:#}");
        }
    };

    // Before the EAL exists: a refused start must leave the process able to start it properly.
    if selected("bad_eal_args_are_one_clear_error") {
        report(
            "bad_eal_args_are_one_clear_error",
            bad_eal_args_are_one_clear_error(),
        );
    }
    let eal = match Eal::init(&EalConfig::new(EAL_ARGS)) {
        Ok(eal) => eal,
        Err(e) => {
            println!("EAL did not start: {e}\n0 passed, 1 failed");
            std::process::exit(1);
        }
    };
    let tests: &[(&str, Test)] = &[
        (
            "eal_comes_up_without_hugepages",
            eal_comes_up_without_hugepages,
        ),
        ("second_eal_init_is_refused", second_eal_init_is_refused),
        (
            "tsc_clock_starts_at_zero_and_advances",
            tsc_clock_starts_at_zero_and_advances,
        ),
        (
            "mbuf_frame_len_stays_within_room",
            mbuf_frame_len_stays_within_room,
        ),
        (
            "aligned_alloc_puts_the_icrc_bytes_on_a_cache_line",
            aligned_alloc_puts_the_icrc_bytes_on_a_cache_line,
        ),
        (
            "ring_pair_delivers_roce_frames_byte_identical",
            ring_pair_delivers_roce_frames_byte_identical,
        ),
        (
            "ring_vdev_loops_tx_back_to_its_rx",
            ring_vdev_loops_tx_back_to_its_rx,
        ),
        (
            "null_port_sinks_tx_and_sources_rx",
            null_port_sinks_tx_and_sources_rx,
        ),
        (
            "mempool_exhaustion_is_counted_without_leak",
            mempool_exhaustion_is_counted_without_leak,
        ),
        (
            "full_tx_ring_keeps_unsent_frames_in_order",
            full_tx_ring_keeps_unsent_frames_in_order,
        ),
        (
            "runtime_moves_frames_between_engines_over_ring_pair",
            runtime_moves_frames_between_engines_over_ring_pair,
        ),
        (
            "runtime_steady_state_allocates_nothing",
            runtime_steady_state_allocates_nothing,
        ),
        (
            "rc_random_run_over_ring_ports_delivers_exactly_and_frees_every_mbuf",
            rc_random_run_over_ring_ports_delivers_exactly_and_frees_every_mbuf,
        ),
        (
            "missing_vdev_driver_is_one_clear_error",
            missing_vdev_driver_is_one_clear_error,
        ),
        (
            "out_of_range_port_id_is_one_clear_error",
            out_of_range_port_id_is_one_clear_error,
        ),
        (
            "tap_port_exchanges_frames_with_kernel_namespace",
            tap_port_exchanges_frames_with_kernel_namespace,
        ),
        (
            "af_packet_port_exchanges_frames_over_veth",
            af_packet_port_exchanges_frames_over_veth,
        ),
    ];
    for (name, test) in tests {
        if selected(name) {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(&eal)))
                .unwrap_or_else(|_| Err(anyhow::anyhow!("panicked")));
            report(name, result);
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
}

// ---------------------------------------------------------------------------------------------
// helpers

fn pool(eal: &Eal, size: u32) -> anyhow::Result<Arc<Mempool>> {
    let config = MempoolConfig {
        size,
        cache: 0,
        ..MempoolConfig::default()
    };
    Ok(Arc::new(Mempool::new(eal, &config)?))
}

fn no_leak(pool: &Mempool) -> anyhow::Result<()> {
    ensure!(
        pool.in_use() == 0,
        "{} mbufs leaked from {}",
        pool.in_use(),
        pool.name()
    );
    Ok(())
}

fn port_config() -> PortConfig {
    PortConfig {
        rx_desc: 128,
        tx_desc: 128,
        link_timeout: Duration::from_secs(5),
        ..PortConfig::default()
    }
}

/// Copies `frame` into a fresh mbuf.
fn mbuf_with(pool: &Mempool, frame: &[u8]) -> anyhow::Result<Mbuf> {
    let mut m = pool.alloc().context("pool exhausted")?;
    m.append(frame.len())
        .context("frame larger than an mbuf")?
        .copy_from_slice(frame);
    Ok(m)
}

/// One mbuf per frame.
fn burst_of(pool: &Mempool, frames: &[Vec<u8>]) -> anyhow::Result<Vec<Mbuf>> {
    frames.iter().map(|f| mbuf_with(pool, f)).collect()
}

/// Receives until `n` frames arrived or 2 s passed.
fn rx_until(port: &mut DpdkPort, out: &mut Vec<Mbuf>, n: usize) {
    let start = Instant::now();
    while out.len() < n && start.elapsed() < Duration::from_secs(2) {
        if port.rx_burst(out, n - out.len()) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// tests

fn bad_eal_args_are_one_clear_error() -> anyhow::Result<()> {
    match Eal::init(&EalConfig::new("--no-such-eal-option")) {
        Err(DpdkError::EalInit { errno: 22, .. }) => Ok(()),
        Err(e) => bail!("unexpected error {e}"),
        Ok(_) => bail!("EAL accepted a bogus option"),
    }
}

fn eal_comes_up_without_hugepages(eal: &Eal) -> anyhow::Result<()> {
    let args = eal.args().join(" ");
    let huge = std::fs::read_to_string("/proc/meminfo")?
        .lines()
        .any(|l| l.starts_with("HugePages_Free:") && !l.ends_with(" 0"));
    ensure!(huge || args.contains("--no-huge"), "no --no-huge in {args}");
    ensure!(eal.port_count() >= 2, "{} ports", eal.port_count());
    ensure!(eal.port_by_name("net_null0").is_ok() && eal.port_by_name("net_ring0").is_ok());
    Ok(())
}

fn tsc_clock_starts_at_zero_and_advances(eal: &Eal) -> anyhow::Result<()> {
    let clock = TscClock::new(eal);
    ensure!(clock.hz() > 1_000_000, "TSC at {} Hz", clock.hz());
    let (a, b) = (clock.now(), clock.now());
    ensure!(b >= a, "{b:?} before {a:?}");
    ensure!(a.as_nanos() < 1_000_000_000, "epoch is not creation: {a:?}");
    ensure!(roce_dpdk::pin_current_thread(0), "cannot pin to core 0");
    ensure!(
        eal.lcore_id() == 0,
        "main thread is lcore {}",
        eal.lcore_id()
    );
    Ok(())
}

fn mbuf_frame_len_stays_within_room(eal: &Eal) -> anyhow::Result<()> {
    let pool = pool(eal, 7)?;
    let mut m = pool.alloc().context("alloc")?;
    ensure!(
        m.frame().is_empty() && m.room() == pool.max_frame(),
        "room {}",
        m.room()
    );
    ensure!(m.set_frame_len(100) && m.frame().len() == 100 && m.pkt_len() == 100);
    m.frame_mut().fill(0xa5);
    ensure!(!m.set_frame_len(m.room() + 1) && m.frame().len() == 100);
    ensure!(m.set_frame_len(m.room()) && m.frame().len() == pool.max_frame());
    ensure!(m.set_frame_len(60) && m.frame() == [0xa5; 60].as_slice());
    ensure!(m.prepend(4).is_some() && m.frame().len() == 64 && m.headroom() == 124);
    ensure!(pool.in_use() == 1);
    drop(m);
    no_leak(&pool)
}

/// TX buffers from `alloc_aligned` (what DpdkPort::alloc hands the engine) put the frame's
/// ICRC-hashed bytes on a cache line, at most 63 bytes of headroom given up.
fn aligned_alloc_puts_the_icrc_bytes_on_a_cache_line(eal: &Eal) -> anyhow::Result<()> {
    let pool = pool(eal, 63)?;
    let lead = roce_proto::wire::ICRC_LEAD;
    for _ in 0..8 {
        let mut m = pool.alloc_aligned(lead as u16).context("alloc")?;
        let plain = pool.alloc().context("alloc")?;
        ensure!(m.set_frame_len(100));
        let at = m.frame().as_ptr() as usize + lead;
        ensure!(at % 64 == 0, "hashed bytes start at {at:#x}");
        ensure!(
            m.headroom() <= plain.headroom() && plain.headroom() - m.headroom() < 64,
            "headroom {} vs {}",
            m.headroom(),
            plain.headroom()
        );
        ensure!(m.room() >= plain.room());
    }
    no_leak(&pool)
}

fn second_eal_init_is_refused(_eal: &Eal) -> anyhow::Result<()> {
    match Eal::init(&EalConfig::new(EAL_ARGS)) {
        Err(DpdkError::AlreadyInitialised) => Ok(()),
        other => bail!("expected AlreadyInitialised, got {other:?}"),
    }
}

fn ring_pair_delivers_roce_frames_byte_identical(eal: &Eal) -> anyhow::Result<()> {
    let pool = pool(eal, 1023)?;
    let (a, b) = ring_pair(eal, "rp_identical", 1024)?;
    let mut tx_port = DpdkPort::new(eal, a, pool.clone(), &port_config())?;
    let mut rx_port = DpdkPort::new(eal, b, pool.clone(), &port_config())?;
    let frames: Vec<Vec<u8>> = (0..32)
        .map(|i| roce_frames::frame(100 + i, 64 + 13 * i as usize))
        .collect();
    let mut burst = burst_of(&pool, &frames)?;
    ensure!(tx_port.tx_burst(&mut burst) == 32 && burst.is_empty());
    let mut got = Vec::new();
    rx_until(&mut rx_port, &mut got, 32);
    ensure!(got.len() == 32, "received {} of 32", got.len());
    for (i, (m, f)) in got.iter().zip(&frames).enumerate() {
        ensure!(m.frame() == f.as_slice(), "frame {i} differs");
        let p = parse_frame(m.frame()).map_err(|e| anyhow::anyhow!("frame {i}: {e}"))?;
        ensure!(p.repr.bth.psn.value() == 100 + i as u32, "frame {i} PSN");
    }
    drop(got);
    drop((tx_port, rx_port));
    no_leak(&pool)
}

fn ring_vdev_loops_tx_back_to_its_rx(eal: &Eal) -> anyhow::Result<()> {
    let pool = pool(eal, 255)?;
    let mut port = DpdkPort::new(
        eal,
        eal.port_by_name("net_ring0")?,
        pool.clone(),
        &port_config(),
    )?;
    let frame = roce_frames::frame(7, 100);
    let mut burst = vec![mbuf_with(&pool, &frame)?];
    ensure!(port.tx_burst(&mut burst) == 1);
    let mut got = Vec::new();
    rx_until(&mut port, &mut got, 1);
    ensure!(got.len() == 1 && got[0].frame() == frame.as_slice());
    drop(got);
    drop(port);
    no_leak(&pool)
}

fn null_port_sinks_tx_and_sources_rx(eal: &Eal) -> anyhow::Result<()> {
    let pool = pool(eal, 511)?;
    let mut port = DpdkPort::new(
        eal,
        eal.port_by_name("net_null0")?,
        pool.clone(),
        &port_config(),
    )?;
    let mut burst = Vec::new();
    ensure!(pool.alloc_bulk(&mut burst, 32));
    ensure!(port.tx_burst(&mut burst) == 32 && burst.is_empty());
    let mut got = Vec::new();
    ensure!(
        port.rx_burst(&mut got, 16) == 16,
        "null RX gave {}",
        got.len()
    );
    ensure!(got.iter().all(|m| m.frame().len() == 64));
    drop(got);
    let stats = port.stats()?;
    ensure!(
        stats.tx_packets == 32 && stats.rx_packets == 16,
        "{stats:?}"
    );
    drop(port);
    no_leak(&pool)
}

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
    let (a, b) = ring_pair(eal, "rp_exhaust", 1024)?;
    let port = DpdkPort::new(eal, a, pool.clone(), &port_config())?;
    let mut peer = DpdkPort::new(eal, b, pool.clone(), &port_config())?;
    let mut rt = Runtime::new(
        port,
        MonotonicClock::new(),
        RuntimeConfig {
            burst: 32,
            max_tx_retries: 4,
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
    let (a, b) = ring_pair(eal, "rp_full", 16)?;
    let mut tx_port = DpdkPort::new(eal, a, pool.clone(), &port_config())?;
    let mut rx_port = DpdkPort::new(eal, b, pool.clone(), &port_config())?;
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

fn runtime_moves_frames_between_engines_over_ring_pair(eal: &Eal) -> anyhow::Result<()> {
    let pool = pool(eal, 1023)?;
    let (a, b) = ring_pair(eal, "rp_runtime", 1024)?;
    let config = RuntimeConfig {
        burst: 32,
        max_tx_retries: 64,
    };
    let mut sender = Runtime::new(
        DpdkPort::new(eal, a, pool.clone(), &port_config())?,
        MonotonicClock::new(),
        config,
    );
    let mut receiver = Runtime::new(
        DpdkPort::new(eal, b, pool.clone(), &port_config())?,
        MonotonicClock::new(),
        config,
    );
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
    let (a, b) = ring_pair(eal, "rp_noalloc", 1024)?;
    let config = RuntimeConfig {
        burst: 32,
        max_tx_retries: 64,
    };
    let port_a = DpdkPort::new(eal, a, pool.clone(), &port_config())?;
    let port_b = DpdkPort::new(eal, b, pool.clone(), &port_config())?;
    let mut sender = Runtime::new(port_a, TscClock::new(eal), config);
    let mut receiver = Runtime::new(port_b, TscClock::new(eal), config);
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

/// The randomized RC suite (tests/rc_support/random.rs) once over two net_ring ports: many QPs,
/// every opcode, 0 B..1 MiB, 1-10% of every fault, start PSNs at the 24-bit wrap, exact
/// verification; afterwards every mbuf is back in the pool. `ROCE_TEST_SEED` replays a seed.
fn rc_random_run_over_ring_ports_delivers_exactly_and_frees_every_mbuf(
    eal: &Eal,
) -> anyhow::Result<()> {
    use rc_support::random::{run, Faults, Run};
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
    let (a, b) = ring_pair(eal, "rp_rc_random", 1024)?;
    let cfg = PortConfig {
        mtu: Some(mtu),
        ..port_config()
    };
    let port_a = DpdkPort::new(eal, a, pool.clone(), &cfg)?;
    let port_b = DpdkPort::new(eal, b, pool.clone(), &cfg)?;
    let r = Run {
        seed,
        qps: 8,
        ops_per_qp: 24,
        byte_budget: 3 << 20,
        faults: Faults::Random,
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

fn missing_vdev_driver_is_one_clear_error(eal: &Eal) -> anyhow::Result<()> {
    match eal.probe_device("net_nosuchdriver0") {
        Err(
            e @ DpdkError::Call {
                op: "rte_dev_probe",
                ..
            },
        ) => {
            ensure!(!e.to_string().contains('\n'));
            Ok(())
        }
        other => bail!("expected an rte_dev_probe error, got {other:?}"),
    }
}

fn out_of_range_port_id_is_one_clear_error(eal: &Eal) -> anyhow::Result<()> {
    let pool = pool(eal, 63)?;
    match DpdkPort::new(eal, 999, pool.clone(), &port_config()) {
        Err(DpdkError::NoSuchPort { port: 999, .. }) => {}
        other => bail!("expected NoSuchPort, got {other:?}"),
    }
    ensure!(matches!(
        eal.port_info(4242),
        Err(DpdkError::NoSuchPort { port: 4242, .. })
    ));
    no_leak(&pool)
}

/// Frames out of `port` are seen by the kernel on `ns_if` in `ns`; a datagram the kernel sends
/// from `ns_ip` to `port_ip` (neighbour entry for the port's MAC) reaches `port`.
fn kernel_round_trip(
    port: &mut DpdkPort,
    ns: &NetNs,
    ns_if: &str,
    ns_ip: &str,
    port_ip: &str,
) -> anyhow::Result<()> {
    let pool = port.pool().clone();
    let capture = ns.capture(ns_if, 8, "udp dst port 4791")?;
    let frames: Vec<Vec<u8>> = (0..8).map(|i| roce_frames::frame(500 + i, 200)).collect();
    let mut burst = burst_of(&pool, &frames)?;
    let start = Instant::now();
    while !burst.is_empty() && start.elapsed() < Duration::from_secs(2) {
        port.tx_burst(&mut burst);
    }
    ensure!(burst.is_empty(), "{} frames not sent", burst.len());
    let seen = capture.frames()?;
    ensure!(
        seen == frames,
        "kernel saw {} frames, {} matching",
        seen.len(),
        seen.iter().filter(|s| frames.contains(s)).count()
    );

    let mac = port.info().mac;
    let mac = mac
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":");
    ns.exec(&[
        "ip",
        "neigh",
        "replace",
        port_ip,
        "lladdr",
        &mac,
        "dev",
        ns_if,
        "nud",
        "permanent",
    ])?;
    let payload = format!("roce-probe-{}", std::process::id());
    let status = Command::new("ip")
        .args(["netns", "exec", &ns.name])
        .arg(std::env::current_exe()?)
        .env(CHILD_SEND_UDP, format!("{ns_ip} {port_ip}:4791 {payload}"))
        .status()?;
    ensure!(status.success(), "sender in namespace failed");
    let mut got = Vec::new();
    let start = Instant::now();
    let mut found = false;
    while !found && start.elapsed() < Duration::from_secs(3) {
        got.clear();
        if port.rx_burst(&mut got, 32) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        found = got.iter().any(|m| {
            let f = m.frame();
            f.len() >= 42 + payload.len()
                && f[12..14] == [0x08, 0x00]
                && f[23] == 17
                && f[36..38] == 4791u16.to_be_bytes()
                && &f[42..42 + payload.len()] == payload.as_bytes()
        });
    }
    ensure!(found, "datagram from the kernel never reached the port");
    Ok(())
}

fn child_send_udp(what: &str) -> anyhow::Result<()> {
    let mut parts = what.splitn(3, ' ');
    let (Some(from), Some(to), Some(payload)) = (parts.next(), parts.next(), parts.next()) else {
        bail!("bad child spec");
    };
    let sock = UdpSocket::bind((from, 0))?;
    sock.send_to(payload.as_bytes(), to)?;
    Ok(())
}

fn tap_port_exchanges_frames_with_kernel_namespace(eal: &Eal) -> anyhow::Result<()> {
    let pool = pool(eal, 1023)?;
    let ns = NetNs::new("tap")?;
    let ifname = format!("rtap{}", std::process::id() % 100_000);
    let id = eal.probe_device(&format!("net_tap_roce,iface={ifname}"))?;
    let mut port = DpdkPort::new(eal, id, pool.clone(), &port_config())?;
    // The tap PMD keeps its file descriptor; the kernel side moves into our namespace.
    netns::run(&["ip", "link", "set", &ifname, "netns", &ns.name])?;
    ns.exec(&["ip", "addr", "add", "198.18.0.1/24", "dev", &ifname])?;
    ns.exec(&["ip", "link", "set", &ifname, "up"])?;
    let result = kernel_round_trip(&mut port, &ns, &ifname, "198.18.0.1", "198.18.0.2");
    drop(port);
    result?;
    no_leak(&pool)
}

fn af_packet_port_exchanges_frames_over_veth(eal: &Eal) -> anyhow::Result<()> {
    let pool = pool(eal, 1023)?;
    let mut ns = NetNs::new("afp")?;
    let pid = std::process::id() % 100_000;
    let (root_if, ns_if) = (format!("rva{pid}"), format!("rvb{pid}"));
    netns::run(&[
        "ip", "link", "add", &root_if, "type", "veth", "peer", "name", &ns_if, "netns", &ns.name,
    ])?;
    ns.root_links.push(root_if.clone());
    netns::run(&["ip", "link", "set", &root_if, "up"])?;
    ns.exec(&["ip", "addr", "add", "198.19.0.1/24", "dev", &ns_if])?;
    ns.exec(&["ip", "link", "set", &ns_if, "up"])?;
    let id = eal.probe_device(&format!("net_af_packet_roce,iface={root_if}"))?;
    let mut port = DpdkPort::new(eal, id, pool.clone(), &port_config())?;
    let result = kernel_round_trip(&mut port, &ns, &ns_if, "198.19.0.1", "198.19.0.2");
    drop(port);
    result?;
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
    fn new(count: u32, payload_len: usize) -> Self {
        Generator {
            remaining: count,
            next_psn: 0,
            payload_len,
        }
    }
}

impl Engine for Generator {
    fn handle_frame(&mut self, _now: time::Instant, _frame: &[u8]) {}
    fn handle_timeout(&mut self, _now: time::Instant) {}
    fn poll_transmit(&mut self, _now: time::Instant, buf: &mut [u8]) -> Option<usize> {
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
    fn poll_timeout(&self) -> Option<time::Instant> {
        None
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
