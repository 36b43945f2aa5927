//! Traffic classes with the schedulers switches ship (scenarios/mixed.toml): with ETS weights
//! 70/30 RDMA keeps 70 % of the bottleneck and best effort gets the rest; with equal weights
//! they split 50/50; hosts honour a workload's `rate_gbps`, and what a rate-capped class leaves
//! goes to the others; a per-class buffer limit drops the class that exceeds it; CNPs in the
//! strict class never wait behind data at a congested port.

use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::experiment::summary::RunSummary;
use roce_fabric::switching::stats::PortCounters;

const MIXED: &str = include_str!("../../../../scenarios/mixed.toml");

fn run(text: &str) -> RunSummary {
    let s = Scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}"));
    println!("scenario {} seed {}", s.name, s.seed);
    s.run(|_| {}).expect("runs").0
}

/// (share of priority 3, share of priority 0) at the bottleneck.
fn shares(sum: &RunSummary) -> (f64, f64) {
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
fn equal_weights_split_evenly_and_a_rate_capped_class_leaves_the_rest_to_rdma() {
    // Without its rate cap best effort wants the whole line: equal weights split it evenly.
    let uncapped = MIXED.replace("rate_gbps = 40.0\n", "");
    let even = run(&uncapped.replace("[30, 0, 0, 70]", "[50, 0, 0, 50]"));
    let (rdma, be) = shares(&even);
    assert!(
        (rdma - 0.5).abs() < 0.02 && (be - 0.5).abs() < 0.02,
        "{}",
        even.table()
    );
    // Best effort may now take 80 %, but its host honours the workload's rate_gbps = 40: it
    // sends 40 Gbit/s and RDMA absorbs the rest (the scheduler is work conserving).
    let capped = run(&MIXED.replace("[30, 0, 0, 70]", "[80, 0, 0, 20]"));
    let t = capped.table();
    let c = capped.classes.as_ref().expect("classes");
    let be_gbps = c.iter().find(|x| x.prio == 0).map_or(0.0, |x| x.gbps);
    assert!((38.0..=41.0).contains(&be_gbps), "{t}");
    assert!(capped.flows[2].goodput_gbps <= 40.0, "{t}");
    let (rdma, be) = shares(&capped);
    assert!(rdma > 0.57 && (rdma + be - 1.0).abs() < 1e-9, "{t}");
    assert!(capped.bottleneck_utilisation > 0.99, "{t}");
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

/// A star where RDMA flows 0->2 and 1->2 are ECN-marked at h2's port, so h2 sends CNPs to h0
/// and h1, while lossy best-effort flows 3->0 and 4->0 congest the switch's port toward h0:
/// the CNPs to h0 cross a port whose data queue is deep. Returns the run's summary and the
/// counters of that port by priority.
fn cnps_through_a_congested_port(sched: &str) -> (RunSummary, PortCounters) {
    let text = format!(
        r#"
        name = "cnp-strict"
        duration_us = 300
        monitor_host = 0
        topology = {{ kind = "star", hosts = 5, link = {{ gbps = 100, delay_ns = 1000 }} }}
        switch = {{ buffer_bytes = 8000000, queue_limit_bytes = 1000000, lossless = [3], pfc = true, ecn = {{ kmin_bytes = 20000, kmax_bytes = 100000, pmax = 0.2 }}, sched = {{ {sched} }} }}
        workloads = [
            {{ kind = "flow", src = 0, dst = 2 }},
            {{ kind = "flow", src = 1, dst = 2 }},
            {{ kind = "flow", src = 3, dst = 0, dscp = 0 }},
            {{ kind = "flow", src = 4, dst = 0, dscp = 0 }},
        ]
        "#
    );
    let s = Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{e}"));
    println!("scenario {} seed {} sched {sched}", s.name, s.seed);
    let (sum, built) = s.run(|_| {}).expect("runs");
    let (node, port) = built.bottleneck.expect("monitored port");
    (sum, built.fabric.port_counters(node, port))
}

#[test]
fn cnps_in_the_strict_class_never_wait_behind_data() {
    let weights = "ets_weights = [30, 0, 0, 70]";
    let (sum, strict) = cnps_through_a_congested_port(&format!("strict = [6, 7], {weights}"));
    let t = sum.table();
    let cnp = strict.prio[6];
    // Data queues deep at the port (best effort fills its queue limit) ...
    assert!(strict.prio[0].queue_hwm_bytes > 500_000, "{t}\n{strict:?}");
    // ... while every CNP found its class empty and left ahead of it: the class never held
    // more than the one CNP being sent, so none waited behind data or another CNP.
    assert!(cnp.tx_packets > 0, "{t}\n{cnp:?}");
    let one = cnp.tx_bytes / cnp.tx_packets;
    assert_eq!(cnp.queue_hwm_bytes, one, "{t}\n{cnp:?}");
    // ETS weights without a strict list make CNPs and control strict by default: the same.
    let (_, default) = cnps_through_a_congested_port(weights);
    assert_eq!(default.prio[6], cnp);
    // With no strict class the CNP class (weight 0) waits behind all weighted data: in this
    // run none of them leaves and they all pile up.
    let (_, none) = cnps_through_a_congested_port(&format!("strict = [], {weights}"));
    assert_eq!(none.prio[6].tx_packets, 0, "{:?}", none.prio[6]);
    assert_eq!(
        none.prio[6].queue_hwm_bytes, cnp.tx_bytes,
        "{:?}",
        none.prio[6]
    );
}
