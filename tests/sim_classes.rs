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
    // (best effort weight, RDMA weight) -> the shares they get.
    for (be_w, rdma_w) in [(50, 50), (80, 20)] {
        let weights = format!("ets_weights = [{be_w}, 0, 0, {rdma_w}]");
        let sum = run(&MIXED.replace("ets_weights = [30, 0, 0, 70]", &weights));
        let (rdma, be) = shares(&sum);
        let want = |w: u32| f64::from(w) / 100.0;
        assert!(
            (rdma - want(rdma_w)).abs() < 0.02 && (be - want(be_w)).abs() < 0.02,
            "{weights}\n{}",
            sum.table()
        );
    }
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
