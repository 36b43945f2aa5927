//! The multi-lcore runtime over DPDK (one EAL per process, and this one takes no vdevs and 512 MB,
//! so its own binary and runner, `harness = false`, printing "N passed, N failed"): randomized RC
//! runs with QPs spread over shards on 2 lcores and on more lcores than the machine has CPUs,
//! through the queue API, with every completion and byte checked; frames crossing shards through
//! the software dispatcher. `ROCE_TEST_SEED` replays a seed.

// Tests may panic: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod lcore_rc;

use std::sync::Arc;

use anyhow::ensure;
use lcore_rc::{run_over_lcores, LcoreOutcome, LcoreRun};
use roce_dpdk::lcore::Cores;
use roce_dpdk::steer::{steer_udp_source, Steering};
use roce_dpdk::{
    ring_pair_queues, DpdkPort, Eal, EalConfig, Mbuf, Mempool, MempoolConfig, PortConfig,
};
use roce_proto::port::Port;
use roce_proto::wire::EthernetAddress;

/// What every test gets: the process's one EAL and a mempool for its ports (dropped first).
struct Env {
    pool: Arc<Mempool>,
    eal: Eal,
}

impl Env {
    /// Runs `r` over a ring pair called `name` (every completion and byte checked); its outcome
    /// once every mbuf is back in the pool.
    fn exact_run(&self, name: &str, r: &LcoreRun) -> anyhow::Result<LcoreOutcome> {
        let out = run_over_lcores(&self.eal, &self.pool, name, r)?;
        let leaked = self.pool.in_use();
        ensure!(leaked == 0, "{leaked} mbufs leaked");
        Ok(out)
    }
}

type Test = fn(&Env) -> anyhow::Result<()>;

fn seed() -> u64 {
    std::env::var("ROCE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(11)
}

fn main() {
    let selected = roce_testkit::filter::name_filter();
    // Room for the lcore threads to register: EAL hands out lcore ids up to RTE_MAX_LCORE.
    let eal = match Eal::init(&EalConfig {
        require_ports: false,
        ..EalConfig::new("--log-level=lib.eal:4 -m 512")
    }) {
        Ok(eal) => eal,
        Err(e) => {
            println!("EAL did not start: {e}\n0 passed, 1 failed");
            std::process::exit(1);
        }
    };
    let env = match Mempool::new(&eal, &MempoolConfig::for_frames(4200 + 18, 8191)) {
        Ok(p) => Env {
            pool: Arc::new(p),
            eal,
        },
        Err(e) => {
            println!("no mempool: {e}\n0 passed, 1 failed");
            std::process::exit(1);
        }
    };
    let tests: &[(&str, Test)] = &[
        (
            "qps_on_two_lcores_deliver_every_byte_and_completion",
            qps_on_two_lcores_deliver_every_byte_and_completion,
        ),
        (
            "frames_on_the_wrong_queue_reach_their_shard_through_the_dispatcher",
            frames_on_the_wrong_queue_reach_their_shard_through_the_dispatcher,
        ),
        (
            "more_lcores_than_cpus_deliver_every_byte_and_completion",
            more_lcores_than_cpus_deliver_every_byte_and_completion,
        ),
        (
            "tap_steers_by_udp_source_port_and_ring_falls_back_to_software",
            tap_steers_by_udp_source_port_and_ring_falls_back_to_software,
        ),
        (
            "lcores_are_named_and_pinned_each_to_its_own_cpu",
            lcores_are_named_and_pinned_each_to_its_own_cpu,
        ),
    ];
    let (mut passed, mut failed) = (0, 0);
    for (name, t) in tests {
        if !selected(name) {
            continue;
        }
        match t(&env) {
            Ok(()) => {
                passed += 1;
                println!("test {name} ... ok");
            }
            Err(e) => {
                failed += 1;
                println!("test {name} ... FAILED: seed {}: {e:#}", seed());
            }
        }
    }
    println!("\n{passed} passed, {failed} failed");
    std::process::exit(i32::from(failed > 0));
}

/// `qps` QP pairs of `ops_per_qp` requests each over two shards per end on two lcores, crossing
/// shards or not.
fn two_lcores(seed: u64, qps: usize, ops_per_qp: usize, cross: bool) -> anyhow::Result<LcoreRun> {
    Ok(LcoreRun {
        seed,
        shards: 2,
        cores: Cores::count(2)?,
        qps,
        ops_per_qp,
        cross,
    })
}

/// Two shards per end on two lcores, QP `i` of A and B on shard `i % 2`: a ring queue carries
/// only its shard's frames, so nothing crosses shards.
fn qps_on_two_lcores_deliver_every_byte_and_completion(env: &Env) -> anyhow::Result<()> {
    let out = env.exact_run("lc_two", &two_lcores(seed(), 8, 40, false)?)?;
    let (done, crossed) = (out.completions, out.forwarded);
    ensure!(done > 8 * 40, "only {done} completions");
    ensure!(
        crossed == 0,
        "{crossed} frames crossed shards on aligned queues"
    );
    Ok(())
}

/// A's QP on shard `i` talks to B's on shard `i + 1`: every frame arrives on a queue whose
/// shard does not own it and is handed over, and the run is still exact.
fn frames_on_the_wrong_queue_reach_their_shard_through_the_dispatcher(
    env: &Env,
) -> anyhow::Result<()> {
    let out = env.exact_run("lc_cross", &two_lcores(seed() + 1, 6, 30, true)?)?;
    let (forwarded, dropped) = (out.forwarded, out.inbox_full);
    ensure!(forwarded >= 6 * 30, "only {forwarded} frames forwarded");
    ensure!(dropped == 0, "{dropped} frames dropped at full inboxes");
    Ok(())
}

/// Five shards per end on five lcores, more than the CPUs: lcores share CPUs, preempt each other
/// mid-burst, and the run is exact all the same.
fn more_lcores_than_cpus_deliver_every_byte_and_completion(env: &Env) -> anyhow::Result<()> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let lcores = (cpus + 3).max(5);
    let r = LcoreRun {
        seed: seed() + 2,
        shards: 5,
        cores: Cores::count(lcores)?,
        qps: 10,
        ops_per_qp: 24,
        cross: true,
    };
    let done = env.exact_run("lc_many", &r)?.completions;
    ensure!(done > 10 * 24, "only {done} completions");
    Ok(())
}

fn ip(args: &str) -> anyhow::Result<()> {
    let st = std::process::Command::new("ip")
        .args(args.split(' '))
        .status()?;
    ensure!(st.success(), "ip {args} failed");
    Ok(())
}

/// A ring port (no rte_flow) is reported as software dispatch. A net_tap port with two queue
/// pairs is reported as flow rules when its kernel takes a flower rule, and then a rule sending
/// UDP source port 50001 to queue 1 puts every datagram the kernel sends from that port on queue
/// 1; a kernel without the flower classifier is reported as software with its refusal, and
/// rules are refused the same way.
fn tap_steers_by_udp_source_port_and_ring_falls_back_to_software(env: &Env) -> anyhow::Result<()> {
    let (eal, pool) = (&env.eal, &env.pool);
    let cfg = PortConfig {
        queues: 2,
        link_timeout: std::time::Duration::from_secs(5),
        ..PortConfig::default()
    };
    let (ring, _) = ring_pair_queues(eal, "lc_steer", 256, 2)?;
    let ring = DpdkPort::new(eal, ring, pool.clone(), &cfg)?;
    let probed = Steering::probe(&ring);
    ensure!(
        probed == Steering::Software("Function not implemented".into()),
        "ring: {probed}"
    );
    drop(ring);
    let id = eal.probe_device("net_tap7,iface=rlcsteer0")?;
    let tap = DpdkPort::new(eal, id, pool.clone(), &cfg)?;
    let peer = std::net::Ipv4Addr::new(198, 18, 200, 1);
    match Steering::probe(&tap) {
        Steering::FlowRules => {}
        Steering::Software(why) => {
            ensure!(
                why.contains("ernel"),
                "tap refused rules for another reason: {why}"
            );
            let refused = steer_udp_source(&tap, Some(peer), 50001, 1);
            ensure!(
                refused.is_err(),
                "a rule was created after the probe failed"
            );
            return Ok(());
        }
        Steering::Single => anyhow::bail!("tap with two queue pairs reported single-queue"),
    }
    let _rule = steer_udp_source(&tap, Some(peer), 50001, 1)?;
    let mac = EthernetAddress(tap.info().mac).to_string();
    ip("addr add 198.18.200.1/24 dev rlcsteer0")?;
    ip("link set rlcsteer0 up")?;
    ip(&format!(
        "neigh replace 198.18.200.2 lladdr {mac} dev rlcsteer0"
    ))?;
    let sock = std::net::UdpSocket::bind("198.18.200.1:50001")?;
    for _ in 0..16 {
        sock.send_to(b"steered", "198.18.200.2:4791")?;
    }
    let mut queues = tap.into_queues();
    let mut per_queue = [0usize; 2];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    let mut got: Vec<Mbuf> = Vec::new();
    while per_queue.iter().sum::<usize>() < 16 && std::time::Instant::now() < deadline {
        for (q, port) in queues.iter_mut().enumerate() {
            port.rx_burst(&mut got, 32);
            per_queue[q] += got.iter().filter(|m| m.frame_ok_udp(50001)).count();
            got.clear();
        }
    }
    ensure!(
        per_queue == [0, 16],
        "datagrams per queue {per_queue:?}, expected [0, 16]"
    );
    Ok(())
}

trait UdpSource {
    fn frame_ok_udp(&self, sport: u16) -> bool;
}

impl UdpSource for Mbuf {
    /// An untagged IPv4/UDP frame from `sport` to 4791.
    fn frame_ok_udp(&self, sport: u16) -> bool {
        use roce_proto::port::FrameBuf;
        let f = self.frame();
        f.get(12..14) == Some(&[8, 0])
            && f.get(34..36) == Some(&sport.to_be_bytes())
            && f.get(36..38) == Some(&4791u16.to_be_bytes())
    }
}

/// `--cores N` puts lcore `i` on the `i`-th online CPU (wrapping), named `roce-lcore<i>`, even
/// though EAL pinned the main thread (and so every thread it starts) to its first lcore's CPU.
fn lcores_are_named_and_pinned_each_to_its_own_cpu(env: &Env) -> anyhow::Result<()> {
    let (eal, pool) = (&env.eal, &env.pool);
    use roce_dpdk::lcore::dispatch::shard_ports;
    use roce_dpdk::lcore::shard::VerbsShard;
    use roce_dpdk::lcore::{LcoreConfig, Lcores, Shard};
    let online = roce_dpdk::online_cpus();
    let n = online.len() + 1;
    let (a, _) = ring_pair_queues(eal, "lc_pin", 256, n as u16)?;
    let cfg = PortConfig {
        queues: n as u16,
        ..PortConfig::default()
    };
    let port = DpdkPort::new(eal, a, pool.clone(), &cfg)?;
    let shards = shard_ports(port.into_queues(), 16)
        .into_iter()
        .enumerate()
        .map(|(i, p)| Shard {
            engine: VerbsShard::new(roce_proto::endpoint::Endpoint::new(
                roce_dpdk::lcore::dispatch::shard_config(
                    roce_proto::endpoint::EndpointConfig::ipv4(
                        roce_proto::wire::EthernetAddress([2, 0, 0, 0, 0, 9]),
                        [198, 18, 3, 1].into(),
                    ),
                    i,
                ),
            )),
            port: p,
            lcore: i,
        })
        .collect();
    let cores = Cores::count(n)?;
    let rt = Lcores::spawn(
        Some(eal),
        &cores,
        shards,
        roce_dpdk::TscClock::new(eal),
        LcoreConfig::default(),
    )?;
    for (i, h) in rt.handles().iter().enumerate() {
        let (name, cpus) = h.call(|_, _| {
            let name = std::thread::current().name().map(str::to_owned);
            (name, roce_dpdk::thread_cpus())
        })?;
        let want = online[i % online.len()];
        ensure!(
            name.as_deref() == Some(format!("roce-lcore{i}").as_str()),
            "lcore {i} is named {name:?}"
        );
        ensure!(
            cpus == [want],
            "lcore {i} runs on CPUs {cpus:?}, expected [{want}]"
        );
    }
    drop(rt);
    Ok(())
}
