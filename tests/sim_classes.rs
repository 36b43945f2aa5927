//! Traffic classes with the schedulers switches ship (scenarios/mixed.toml): with ETS weights
//! 70/30 RDMA keeps 70 % of the bottleneck and best effort gets the rest; with equal turns
//! (the old round robin) they split 50/50; a per-class buffer limit drops the class that
//! exceeds it.

use roce_fabric::scenario::Scenario;
use roce_fabric::summary::Summary;

const MIXED: &str = include_str!("../scenarios/mixed.toml");

fn run(text: &str) -> Summary {
    let s = Scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}"));
    println!("scenario {} seed {}", s.name, s.seed);
    s.run(|_| {}).expect("runs").0
}

/// (share of priority 3, share of priority 0) at the bottleneck.
fn shares(sum: &Summary) -> (f64, f64) {
    let c = sum
        .classes
        .as_ref()
        .unwrap_or_else(|| panic!("no classes\n{}", sum.table()));
    let of = |p| c.iter().find(|x| x.prio == p).map_or(0.0, |x| x.share);
    (of(3), of(0))
}

#[test]
fn ets_gives_rdma_its_70_percent_and_best_effort_the_rest() {
    let sum = run(MIXED);
    let t = sum.table();
    let (rdma, be) = shares(&sum);
    assert!((rdma - 0.70).abs() < 0.02, "{t}");
    assert!((be - 0.30).abs() < 0.02, "{t}");
    assert!(sum.bottleneck_utilisation > 0.99, "{t}");
    assert!(t.contains("bottleneck classes: prio 0 (weight 30) "), "{t}");
}

#[test]
fn equal_weights_split_the_bottleneck_evenly_and_weights_move_the_split() {
    let even = run(&MIXED.replace(
        "ets_weights = [30, 0, 0, 70]",
        "ets_weights = [50, 0, 0, 50]",
    ));
    let (rdma, be) = shares(&even);
    assert!(
        (rdma - 0.5).abs() < 0.02 && (be - 0.5).abs() < 0.02,
        "{}",
        even.table()
    );
    let be_heavy = run(&MIXED.replace(
        "ets_weights = [30, 0, 0, 70]",
        "ets_weights = [80, 0, 0, 20]",
    ));
    let (rdma, be) = shares(&be_heavy);
    assert!(
        (rdma - 0.2).abs() < 0.02 && (be - 0.8).abs() < 0.02,
        "{}",
        be_heavy.table()
    );
}

#[test]
fn a_class_limit_drops_the_class_that_exceeds_it() {
    let free = run(MIXED);
    let capped = run(&MIXED.replace(
        "ets_weights = [30, 0, 0, 70] }",
        "ets_weights = [30, 0, 0, 70], class_limit_bytes = [20000] }",
    ));
    assert!(
        capped.drops > free.drops,
        "{}\n{}",
        free.table(),
        capped.table()
    );
    // RDMA (priority 3, no limit) is not hurt: it still has its share.
    let (rdma, _) = shares(&capped);
    assert!(rdma >= 0.68, "{}", capped.table());
}
