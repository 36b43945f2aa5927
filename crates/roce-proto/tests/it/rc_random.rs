//! Randomized end-to-end runs over links that drop, duplicate, reorder and corrupt frames:
//! every destination byte exact, every work request completes exactly once and in order, atomics
//! execute exactly once, across the 24-bit PSN wrap. Each run prints its seed on failure; set
//! `ROCE_TEST_SEED` to replay one.

use roce_testkit::rc;

use rc::random::{run, Faults, Run};
use roce_proto::fault::FaultConfig;
use roce_proto::loopback::loopback_pair;
use roce_proto::verbs::Recovery;

fn seeds(default: std::ops::Range<u64>) -> Vec<u64> {
    match std::env::var("ROCE_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(s) => vec![s],
        None => default.collect(),
    }
}

fn memory(r: Run) {
    eprintln!("seed {} (replay with ROCE_TEST_SEED={})", r.seed, r.seed);
    let (pa, pb) = loopback_pair(9000, 1 << 16);
    run(r, pa, pb);
}

#[test]
fn every_byte_and_completion_survives_a_lossy_reordering_corrupting_link() {
    for seed in seeds(0..8) {
        memory(Run {
            seed,
            qps: 4,
            ops_per_qp: 24,
            byte_budget: 2 << 20,
            faults: Faults::Random,
            recovery: Recovery::GoBackN,
        });
    }
}

#[test]
fn many_small_messages_cross_the_psn_wrap_on_many_qps() {
    for seed in seeds(100..104) {
        memory(Run {
            seed,
            qps: 16,
            ops_per_qp: 40,
            byte_budget: 64 << 10,
            faults: Faults::Random,
            recovery: Recovery::GoBackN,
        });
    }
}

#[test]
fn all_four_faults_at_ten_percent_at_once_still_deliver_exactly() {
    let f = FaultConfig {
        loss: 0.10,
        duplicate: 0.10,
        reorder: 0.10,
        corrupt: 0.10,
    };
    for seed in seeds(200..204) {
        memory(Run {
            seed,
            qps: 4,
            ops_per_qp: 24,
            byte_budget: 1 << 20,
            faults: Faults::Fixed(f),
            recovery: Recovery::GoBackN,
        });
    }
}

#[test]
fn selective_repeat_delivers_every_byte_and_completion_over_the_same_links() {
    for seed in seeds(300..308) {
        memory(Run {
            seed,
            qps: 4,
            ops_per_qp: 24,
            byte_budget: 2 << 20,
            faults: Faults::Random,
            recovery: Recovery::SelectiveRepeat,
        });
    }
}

#[test]
fn selective_repeat_with_many_small_messages_across_the_psn_wrap_on_many_qps() {
    for seed in seeds(100..104) {
        memory(Run {
            seed,
            qps: 16,
            ops_per_qp: 40,
            byte_budget: 64 << 10,
            faults: Faults::Random,
            recovery: Recovery::SelectiveRepeat,
        });
    }
}
