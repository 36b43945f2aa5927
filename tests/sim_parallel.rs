//! The parallel engine (`--threads N`) gives the single-threaded run's summary, field for
//! field, for the same seed: an incast, a leaf-spine with ECMP and WebSearch Poisson traffic,
//! the small HPCC fixture config and a run with PFC, two seeds each, on 2 and 3 threads, and a
//! port capture. It refuses what it does not split yet, in one line.

use std::path::Path;

use roce_fabric::builtin::{Builtin, BuiltinKind};
use roce_fabric::fabric::parallel::ParallelError;
use roce_fabric::hpcc_run::HpccRun;
use roce_fabric::scenario::Scenario;

/// The JSON summary, the PFC log and the number of partitions of a run on `threads`.
fn run(s: &Scenario, threads: usize) -> (serde_json::Value, usize, usize) {
    let mut built = s.build().unwrap();
    let parts = built.fabric.set_threads(threads).unwrap();
    let (summary, built) = s.run_built(built, |_| {}).unwrap();
    let json = serde_json::to_value(&summary).unwrap();
    (json, built.fabric.pfc_events().len(), parts)
}

/// Runs `s` with seeds 1 and 2 on 1, 2 and 3 threads; returns the partitions 3 threads got.
fn same_on_threads(mut s: Scenario) -> usize {
    let mut parts = 0;
    for seed in [1, 2] {
        s.seed = seed;
        let (one, pfc, _) = run(&s, 1);
        assert!(
            one["events"].as_u64().unwrap() > 1000,
            "{}: a real run",
            s.name
        );
        for threads in [2, 3] {
            let (many, many_pfc, p) = run(&s, threads);
            parts = p;
            assert_eq!(many, one, "{} seed {seed} on {threads} threads", s.name);
            assert_eq!(many_pfc, pfc, "{} seed {seed}: PFC log", s.name);
        }
    }
    parts
}

fn builtin(kind: BuiltinKind, senders: usize, duration_us: f64, cc: &str) -> Scenario {
    Builtin {
        senders: Some(senders),
        duration_us: Some(duration_us),
        cc: cc.into(),
        ..Builtin::default()
    }
    .scenario(kind)
}

#[test]
fn an_incast_is_the_same_on_any_thread_count() {
    // One switch: one partition, whatever the threads.
    let parts = same_on_threads(builtin(BuiltinKind::Incast, 8, 200.0, "dcqcn"));
    assert_eq!(parts, 1);
}

#[test]
fn pfc_spreading_is_the_same_on_two_and_three_threads() {
    let s = builtin(BuiltinKind::PfcSpreading, 4, 300.0, "none");
    let parts = same_on_threads(s.clone());
    assert!(parts >= 2, "{parts} partitions");
    let (json, _, _) = run(&s, 2);
    let pauses = json["pfc_pause_frames"].as_u64().unwrap();
    assert!(pauses > 0, "PFC fired: {pauses} pause frames");
}

const LEAF_SPINE: &str = r#"
name = "leafspine-websearch"
duration_us = 300
warmup_us = 30
topology = { kind = "leaf_spine", leaves = 3, spines = 2, hosts_per_leaf = 4, link = { gbps = 100, delay_ns = 1000 }, uplink = { gbps = 100, delay_ns = 1000 } }
cc = "dcqcn"
switch = { buffer_bytes = 12000000, queue_limit_bytes = 1000000, lossless = [3], pfc = true, ecn = { kmin_bytes = 50000, kmax_bytes = 200000, pmax = 0.2 } }

[[workloads]]
kind = "flow_sizes"
hosts = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
load = 0.5
flows = 60
sizes = { kind = "web_search", scale = 0.05 }
"#;

#[test]
fn a_leaf_spine_with_ecmp_and_websearch_is_the_same_on_two_and_three_threads() {
    let s = Scenario::from_toml(LEAF_SPINE).unwrap();
    assert_eq!(same_on_threads(s), 3, "5 switches over 3 threads");
}

#[test]
fn the_hpcc_fixture_is_the_same_on_two_and_three_threads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hpcc/mix");
    let run = HpccRun::load(&dir.join("config_topo8_flow8_dcqcn.txt")).unwrap();
    // Its flows start at 2 s, as the simulator's flow files have them.
    assert!(same_on_threads(run.scenario.clone()) >= 2);
}

#[test]
fn a_port_capture_is_the_same_on_two_threads() {
    let s = Scenario::from_toml(LEAF_SPINE).unwrap();
    let capture = |threads: usize| {
        let mut built = s.build().unwrap();
        let at = built.fabric.find_port("leaf1r0:4").unwrap();
        built.fabric.capture_port(at.0, at.1);
        assert_eq!(built.fabric.set_threads(threads).unwrap(), threads);
        let (_, mut built) = s.run_built(built, |_| {}).unwrap();
        built.fabric.drain_captured()
    };
    let one = capture(1);
    assert!(one.len() > 100, "{} frames", one.len());
    assert!(one.iter().any(|f| f.outbound) && one.iter().any(|f| !f.outbound));
    assert_eq!(capture(2), one);
}

#[test]
fn zero_threads_is_refused_in_one_line() {
    let mut built = builtin(BuiltinKind::Incast, 2, 100.0, "none")
        .build()
        .unwrap();
    let err = built.fabric.set_threads(0).unwrap_err();
    assert_eq!(err, ParallelError::NoThreads);
    assert!(!err.to_string().contains('\n'));
    assert_eq!(built.fabric.set_threads(1), Ok(1));
    assert!(built.fabric.parallel_stats().is_none());
}

#[test]
fn the_stats_count_windows_events_and_crossings() {
    let s = Scenario::from_toml(LEAF_SPINE).unwrap();
    let mut built = s.build().unwrap();
    assert_eq!(built.fabric.set_threads(2), Ok(2));
    let (summary, built) = s.run_built(built, |_| {}).unwrap();
    let st = built.fabric.parallel_stats().unwrap().clone();
    let in_windows: u64 = st.events.iter().sum();
    // Every event but the samples (fabric-wide) runs in a window; 300 us of 1 us windows.
    assert!(in_windows < summary.events && in_windows > summary.events * 9 / 10);
    assert!(
        st.windows >= 100 && st.windows <= 400,
        "{} windows",
        st.windows
    );
    assert!(st.crossings > 0 && st.critical_events >= in_windows / 2);
    assert!(st.balance_bound() > 1.0 && st.balance_bound() <= 2.0);
}

const LINK_FAILURE: &str = include_str!("../scenarios/link-failure.toml");

#[test]
fn zz_probe_link_failure() {
    let mut s = Scenario::from_toml(LINK_FAILURE).unwrap();
    if let Ok(x) = std::env::var("PROBE") {
        s = Scenario::from_toml(&std::fs::read_to_string(x).unwrap()).unwrap();
    }
    let (one, pfc, _) = run(&s, 1);
    for threads in [2, 3, 4] {
        let (many, many_pfc, p) = run(&s, threads);
        if many != one {
            let (a, b) = (one.as_object().unwrap(), many.as_object().unwrap());
            for (k, v) in a {
                if b.get(k) != Some(v) {
                    println!("{threads} ({p} parts): {k}: one {v} many {}", b[k]);
                }
            }
        }
        println!("{threads}: same={} pfc {pfc} {many_pfc}", many == one);
    }
}
