//! The multi-lcore runtime over DPDK (one EAL per process, so its own binary and runner,
//! `harness = false`, printing "N passed, N failed"): randomized RC runs with QPs spread over
//! shards on 2 lcores and on more lcores than the machine has CPUs, through the queue API, with
//! every completion and byte checked; frames crossing shards through the software dispatcher.
//! `ROCE_TEST_SEED` replays a seed.

#[path = "support/lcore_rc.rs"]
mod lcore_rc;

use std::sync::Arc;

use anyhow::ensure;
use lcore_rc::{run_over_lcores, LcoreRun};
use roce_dpdk::lcore::Cores;
use roce_dpdk::{Eal, EalConfig, Mempool, MempoolConfig};

type Test = fn(&Eal, &Arc<Mempool>) -> anyhow::Result<()>;

fn seed() -> u64 {
    std::env::var("ROCE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(11)
}

fn main() {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let selected =
        |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
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
    let pool = match Mempool::new(&eal, &MempoolConfig::for_frames(4200 + 18, 8191)) {
        Ok(p) => Arc::new(p),
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
    ];
    let (mut passed, mut failed) = (0, 0);
    for (name, t) in tests {
        if !selected(name) {
            continue;
        }
        match t(&eal, &pool) {
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

fn no_leak(pool: &Mempool) -> anyhow::Result<()> {
    ensure!(pool.in_use() == 0, "{} mbufs leaked", pool.in_use());
    Ok(())
}

/// Two shards per end on two lcores, QP `i` of A and B on shard `i % 2`: a ring queue carries
/// only its shard's frames, so nothing crosses shards.
fn qps_on_two_lcores_deliver_every_byte_and_completion(
    eal: &Eal,
    pool: &Arc<Mempool>,
) -> anyhow::Result<()> {
    let r = LcoreRun {
        seed: seed(),
        shards: 2,
        cores: Cores::count(2)?,
        qps: 8,
        ops_per_qp: 40,
        cross: false,
    };
    let out = run_over_lcores(eal, pool, "lc_two", &r)?;
    ensure!(
        out.completions > 8 * 40,
        "only {} completions",
        out.completions
    );
    ensure!(
        out.forwarded == 0,
        "{} frames crossed shards on aligned queues",
        out.forwarded
    );
    no_leak(pool)
}

/// A's QP on shard `i` talks to B's on shard `i + 1`: every frame arrives on a queue whose
/// shard does not own it and is handed over, and the run is still exact.
fn frames_on_the_wrong_queue_reach_their_shard_through_the_dispatcher(
    eal: &Eal,
    pool: &Arc<Mempool>,
) -> anyhow::Result<()> {
    let r = LcoreRun {
        seed: seed() + 1,
        shards: 2,
        cores: Cores::count(2)?,
        qps: 6,
        ops_per_qp: 30,
        cross: true,
    };
    let out = run_over_lcores(eal, pool, "lc_cross", &r)?;
    ensure!(
        out.forwarded >= 6 * 30,
        "only {} frames forwarded",
        out.forwarded
    );
    ensure!(
        out.inbox_full == 0,
        "{} frames dropped at full inboxes",
        out.inbox_full
    );
    no_leak(pool)
}

/// Five shards per end on five lcores, more than the CPUs: lcores share CPUs, preempt each other
/// mid-burst, and the run is exact all the same.
fn more_lcores_than_cpus_deliver_every_byte_and_completion(
    eal: &Eal,
    pool: &Arc<Mempool>,
) -> anyhow::Result<()> {
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
    let out = run_over_lcores(eal, pool, "lc_many", &r)?;
    ensure!(
        out.completions > 10 * 24,
        "only {} completions",
        out.completions
    );
    no_leak(pool)
}
