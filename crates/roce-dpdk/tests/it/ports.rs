//! DPDK integration tests of the EAL, mbufs and ports (net_null, net_ring, ring pairs, tap and
//! af_packet against a kernel namespace), under this binary's runner (`harness.rs`).

use std::net::UdpSocket;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use roce_dpdk::clock::Clock;
use roce_dpdk::{DpdkError, DpdkPort, Eal, EalConfig, PortConfig, PortSpec, TscClock};
use roce_proto::port::{FrameBuf, Port};
use roce_proto::wire::{parse_frame, EthernetAddress};
use roce_testkit::roce_frames;

use crate::harness::{
    burst_of, mbuf_with, named_port, no_leak, pool, port_config, ring_ports, rx_until, BeforeEal,
    Test, EAL_ARGS,
};
use crate::netns::{self, NetNs};

/// Set in a child re-executed inside a namespace: send one UDP datagram "ADDR PAYLOAD" and exit.
const CHILD_SEND_UDP: &str = "ROCE_DPDK_TEST_SEND_UDP";

/// In a child re-executed by [`af_packet_port_exchanges_frames_over_veth`]: sends its datagram
/// and exits, before any test runs.
pub fn child_role() {
    if let Ok(what) = std::env::var(CHILD_SEND_UDP) {
        std::process::exit(i32::from(child_send_udp(&what).is_err()));
    }
}

/// The tests that run before the EAL exists.
pub const BEFORE_EAL: &[(&str, BeforeEal)] = &[(
    "bad_eal_args_are_one_clear_error",
    bad_eal_args_are_one_clear_error,
)];

/// The tests that run with the EAL.
pub const TESTS: &[(&str, Test)] = dpdk_tests![
    eal_comes_up_without_hugepages,
    second_eal_init_is_refused,
    tsc_clock_starts_at_zero_and_advances,
    mbuf_frame_len_stays_within_room,
    aligned_alloc_puts_the_icrc_bytes_on_a_cache_line,
    ring_pair_delivers_roce_frames_byte_identical,
    memif_pair_delivers_roce_frames_byte_identical_both_ways,
    ring_vdev_loops_tx_back_to_its_rx,
    null_port_sinks_tx_and_sources_rx,
    missing_vdev_driver_is_one_clear_error,
    out_of_range_port_id_is_one_clear_error,
    tap_port_exchanges_frames_with_kernel_namespace,
    af_packet_port_exchanges_frames_over_veth,
];

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

fn second_eal_init_is_refused(_eal: &Eal) -> anyhow::Result<()> {
    match Eal::init(&EalConfig::new(EAL_ARGS)) {
        Err(DpdkError::AlreadyInitialised) => Ok(()),
        other => bail!("expected AlreadyInitialised, got {other:?}"),
    }
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

fn ring_pair_delivers_roce_frames_byte_identical(eal: &Eal) -> anyhow::Result<()> {
    let pool = pool(eal, 1023)?;
    let (mut tx_port, mut rx_port) = ring_ports(eal, "rp_identical", 1024, &pool, &port_config())?;
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

/// A memif server and client on one socket (both in this process, made from `--port` specs):
/// RoCE frames of 64 to 1025 payload bytes (a 1024-byte MTU's) cross byte-identical each way,
/// and no mbuf is left behind.
fn memif_pair_delivers_roce_frames_byte_identical_both_ways(eal: &Eal) -> anyhow::Result<()> {
    let pool = pool(eal, 1023)?;
    let dir = std::env::temp_dir().join(format!("roce-dpdk-memif-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let socket = dir.join("m.sock").display().to_string();
    let spec = |role: &str| format!("memif:{socket},{role}").parse::<PortSpec>();
    let server = eal.probe_device(&spec("server")?.devargs(70))?;
    let client = eal.probe_device(&spec("client")?.devargs(71))?;
    // The link is up only once both ends run: start both, then wait.
    let no_wait = PortConfig {
        link_timeout: Duration::ZERO,
        ..port_config()
    };
    let mut a = DpdkPort::new(eal, server, pool.clone(), &no_wait)?;
    let mut b = DpdkPort::new(eal, client, pool.clone(), &no_wait)?;
    for p in [&a, &b] {
        p.wait_link(Duration::from_secs(5))?;
    }
    for from in ["server", "client"] {
        let (tx, rx) = if from == "server" {
            (&mut a, &mut b)
        } else {
            (&mut b, &mut a)
        };
        let frames: Vec<Vec<u8>> = (0..32)
            .map(|i| roce_frames::frame(200 + i, 64 + 31 * i as usize))
            .collect();
        // The server sends into buffers the client's RX posts, so both sides poll together.
        let mut burst = burst_of(&pool, &frames)?;
        let mut got = Vec::new();
        let start = Instant::now();
        while got.len() < 32 && start.elapsed() < Duration::from_secs(2) {
            tx.tx_burst(&mut burst);
            let want = 32 - got.len();
            rx.rx_burst(&mut got, want);
        }
        ensure!(burst.is_empty(), "{from}: {} frames not sent", burst.len());
        ensure!(got.len() == 32, "{from}: received {} of 32", got.len());
        for (i, (m, f)) in got.iter().zip(&frames).enumerate() {
            ensure!(m.frame() == f.as_slice(), "{from}: frame {i} differs");
        }
    }
    drop((a, b));
    let _ = std::fs::remove_dir_all(&dir);
    no_leak(&pool)
}

fn ring_vdev_loops_tx_back_to_its_rx(eal: &Eal) -> anyhow::Result<()> {
    let pool = pool(eal, 255)?;
    let mut port = named_port(eal, "net_ring0", &pool)?;
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
    let mut port = named_port(eal, "net_null0", &pool)?;
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

    let mac = EthernetAddress(port.info().mac).to_string();
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
