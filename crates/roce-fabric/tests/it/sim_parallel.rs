//! The parallel engine (`--threads N`) gives the single-threaded run's summary, field for
//! field, for the same seed: an incast, a leaf-spine with ECMP and WebSearch Poisson traffic,
//! the small HPCC fixture config and a run with PFC, two seeds each, on 2 and 3 threads, and a
//! port capture. Link failures, reboots, flaps and lossy cables (scenarios/link-failure.toml
//! and the shapes of tests/it/sim_outage.rs and tests/it/sim_failures.rs) give it on 1 to 4
//! threads, with the failing cable between partitions. Zero threads are refused in one line.

use std::path::Path;

use roce_fabric::experiment::builtin::{Builtin, BuiltinKind};
use roce_fabric::experiment::hpcc_run::HpccRun;
use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::net::fabric::parallel::ParallelError;
use roce_fabric::net::fabric::{Fabric, LinkConfig};
use roce_fabric::switching::switch::SwitchConfig;
use roce_fabric::Node;
use roce_proto::engine::Engine;
use roce_proto::time::Instant;
use roce_testkit::fixtures;

/// The JSON summary, the PFC log and the number of partitions of a run on `threads`.
fn run(s: &Scenario, threads: usize) -> (serde_json::Value, usize, usize) {
    let mut built = s.build().unwrap();
    let parts = built.fabric.set_threads(threads).unwrap();
    let (summary, built) = s.run_built(built, |_| {}).unwrap();
    let json = serde_json::to_value(&summary).unwrap();
    (json, built.fabric.pfc_events().len(), parts)
}

/// Runs `s` with seeds 1 and 2 on 1, 2 and 3 threads; returns the partitions 3 threads got.
fn same_on_threads(s: Scenario) -> usize {
    same_on(s, &[1, 2], &[2, 3]).1[1]
}

/// Runs `s` with each of `seeds` on one thread and on each of `threads`, asserting the same
/// summary and PFC log; returns the last one-thread summary and the partitions of each
/// thread count (last seed).
fn same_on(mut s: Scenario, seeds: &[u64], threads: &[usize]) -> (serde_json::Value, Vec<usize>) {
    let (mut last, mut parts) = (serde_json::Value::Null, Vec::new());
    for &seed in seeds {
        s.seed = seed;
        let (one, pfc, _) = run(&s, 1);
        assert!(
            one["events"].as_u64().unwrap() > 1000,
            "{}: a real run",
            s.name
        );
        parts.clear();
        for &t in threads {
            let (many, many_pfc, p) = run(&s, t);
            parts.push(p);
            assert_eq!(many, one, "{} seed {seed} on {t} threads", s.name);
            assert_eq!(many_pfc, pfc, "{} seed {seed}: PFC log", s.name);
        }
        last = one;
    }
    (last, parts)
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

/// Multipath on scenarios/ecmp-polarisation.toml (adaptive routing; spraying over 64 ports in
/// 5 µs flowlets) gives the same summary on 2 and 3 threads: the queues a switch compares and
/// a NIC's port state stay in their partition.
#[test]
fn adaptive_routing_and_spraying_are_the_same_on_two_and_three_threads() {
    let text = include_str!("../../../../scenarios/ecmp-polarisation.toml")
        .replace("duration_us = 1500\n", "duration_us = 300\n");
    let adaptive = text.replace(
        "ecmp_salt_per_switch = false\n",
        "ecmp_salt_per_switch = false\nrouting = \"adaptive\"\n",
    );
    let sprayed = text.replace(
        "duration_us = 300\n",
        "duration_us = 300\nspray = { paths = 64, flowlet_us = 5.0 }\n",
    );
    for t in [adaptive, sprayed] {
        let s = Scenario::from_toml(&t).unwrap();
        let (json, parts) = same_on(s, &[1], &[2, 3]);
        assert!(
            json["reordering"]["out_of_sequence"].as_u64() > Some(0),
            "{json}"
        );
        assert!(parts.iter().all(|&p| p > 1), "{parts:?}");
    }
}

#[test]
fn the_hpcc_fixture_is_the_same_on_two_and_three_threads() {
    let dir = Path::new(fixtures::HPCC).join("mix");
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

const LINK_FAILURE: &str = include_str!("../../../../scenarios/link-failure.toml");

/// scenarios/link-failure.toml cut to `duration_us`, with `failures` (a TOML line) instead of
/// its link events.
fn with_failures(duration_us: u32, failures: &str) -> Scenario {
    let mut text = shortened(duration_us);
    text.truncate(text.find("link_events = [").unwrap_or(text.len()));
    text.push_str(failures);
    Scenario::from_toml(&text).unwrap()
}

/// scenarios/link-failure.toml cut to `duration_us` (the cable dies at 1 ms, returns at 2 ms).
fn shortened(duration_us: u32) -> String {
    let text = LINK_FAILURE.replace(
        "duration_us = 3000",
        &format!("duration_us = {duration_us}"),
    );
    assert_ne!(text, LINK_FAILURE);
    text
}

/// Runs a failure scenario on 1, 2, 3 and 4 threads (its own seed); returns the one-thread
/// summary's outage report after checking that every leaf and spine got its own partition on
/// four threads (so the failing cables cross partitions on three and four).
fn failure_same_on_one_to_four_threads(s: Scenario) -> serde_json::Value {
    let seed = s.seed;
    let (one, parts) = same_on(s, &[seed], &[2, 3, 4]);
    assert_eq!(parts, [2, 3, 4]);
    one["outage"].clone()
}

#[test]
fn the_shipped_link_failure_is_the_same_on_one_to_four_threads() {
    let s = Scenario::from_toml(LINK_FAILURE).unwrap();
    let outage = failure_same_on_one_to_four_threads(s);
    // Frames died on the cable while in flight toward the other partition: their drops count
    // at the sending port, wherever it ran.
    assert!(outage["frames_lost"].as_u64().unwrap() > 0, "{outage}");
    assert!(!outage["stalled_flows"].as_array().unwrap().is_empty());
}

#[test]
fn the_builtin_link_failure_is_the_same_on_one_to_four_threads() {
    let s = builtin(BuiltinKind::LinkFailure, 2, 600.0, "dcqcn");
    assert_eq!(same_on(s, &[1, 2], &[2, 3, 4]).1, [2, 3, 4]);
}

#[test]
fn a_failure_without_reconvergence_is_the_same_on_one_to_four_threads() {
    let text = shortened(2000).replace("converge_us = 250", "converge_us = 5000");
    let outage = failure_same_on_one_to_four_threads(Scenario::from_toml(&text).unwrap());
    assert!(outage["longest_stall_us"].as_f64().unwrap() >= 750.0);
}

#[test]
fn a_failure_noticed_and_rerouted_at_once_is_the_same_on_one_to_four_threads() {
    // Detection and reconvergence in the same nanosecond as the cable's death: one global
    // step runs the link change, its detection and the route recomputation in key order.
    let text = shortened(1500).replace(
        "routing = { detect_us = 50, converge_us = 250 }",
        "routing = { detect_us = 0, converge_us = 0 }",
    );
    failure_same_on_one_to_four_threads(Scenario::from_toml(&text).unwrap());
}

#[test]
fn a_rebooting_spine_is_the_same_on_one_to_four_threads() {
    let s = with_failures(
        2250,
        "failures = [{ kind = \"reboot\", switch = \"spine0r0\", at_us = 1000, down_us = 1000 }]\n",
    );
    let outage = failure_same_on_one_to_four_threads(s);
    assert!(outage["frames_lost"].as_u64().unwrap() > 0, "{outage}");
}

#[test]
fn a_flapping_cable_is_the_same_on_one_to_four_threads() {
    let s = with_failures(2500, "failures = [{ kind = \"flap\", a = \"leaf0r0\", b = \"spine0r0\", at_us = 750, down_us = 250, up_us = 500, count = 3 }]\n");
    let outage = failure_same_on_one_to_four_threads(s);
    assert!(!outage["stalled_flows"].as_array().unwrap().is_empty());
}

#[test]
fn a_lossy_cable_is_the_same_on_one_to_four_threads() {
    let s = with_failures(
        1000,
        "failures = [{ kind = \"loss\", a = \"leaf0r0\", b = \"spine0r0\", loss = 0.001 }]\n",
    );
    let seed = s.seed;
    let (one, parts) = same_on(s, &[seed], &[2, 3, 4]);
    assert_eq!(parts, [2, 3, 4]);
    assert!(
        one["retransmitted"].as_u64().unwrap() > 0,
        "{}",
        one["retransmitted"]
    );
}

#[test]
fn retries_running_out_behind_a_dead_cable_are_the_same_on_two_threads() {
    // One switch: one partition, whatever the threads.
    let s = Scenario::from_toml(include_str!(
        "../../../../tests/scenarios/retries-exhausted.toml"
    ))
    .unwrap();
    let seed = s.seed;
    let (one, parts) = same_on(s, &[seed], &[2]);
    assert_eq!(parts, [1]);
    assert_eq!(one["qp_errors"].as_u64(), Some(2), "{}", one["qp_errors"]);
}

/// Sends a frame (no IP: switches drop it, no route) whenever polled from `from_ns` on, and
/// never asks to be woken: only the fabric's kicks (a NIC freeing, its cable changing) poll it.
struct Chatter {
    from_ns: u64,
}

/// 1,226 bytes and 24 of preamble, gap and FCS: 100 ns at 100 Gbit/s.
const CHATTER_LEN: usize = 1226;

impl Engine for Chatter {
    fn handle_frame(&mut self, _: Instant, _: &[u8]) {}
    fn handle_timeout(&mut self, _: Instant) {}
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let frame = buf.get_mut(..CHATTER_LEN)?;
        frame.fill(0);
        (now.as_nanos() >= self.from_ns).then_some(CHATTER_LEN)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
}

#[test]
fn a_frame_a_link_change_sent_goes_after_a_link_change_scheduled_earlier_for_its_nanosecond() {
    // h0's cable dies at 10 us; the kick finds h0 ready, and its frame dies on the cable,
    // freeing the NIC 100 ns later, the very nanosecond the cable comes back. The cable's
    // return was scheduled first, so on one thread it goes first: h0's next frame leaves on
    // the live cable. Both are fabric-wide tie keys; a window that ran the NIC's event before
    // the global step would send that frame into the dead cable.
    let counters = |threads: usize| {
        let mut f: Fabric<Chatter> = Fabric::new(7);
        let h0 = f
            .add_host(
                "h0",
                "10.0.0.1".parse().unwrap(),
                Chatter { from_ns: 10_000 },
            )
            .unwrap();
        let h1 = f
            .add_host(
                "h1",
                "10.0.0.2".parse().unwrap(),
                Chatter { from_ns: u64::MAX },
            )
            .unwrap();
        let s0 = f.add_switch("s0", SwitchConfig::default());
        let s1 = f.add_switch("s1", SwitchConfig::default());
        let link = LinkConfig::new(100.0, 1000);
        let up = f.connect(Node::Host(h0), Node::Switch(s0), link).unwrap();
        f.connect(Node::Host(h1), Node::Switch(s1), link).unwrap();
        f.connect(Node::Switch(s0), Node::Switch(s1), link).unwrap();
        f.schedule_link(up.ab, Instant::from_nanos(10_000), false);
        f.schedule_link(up.ab, Instant::from_nanos(10_100), true);
        assert_eq!(f.set_threads(threads), Ok(threads));
        f.run_until_threads(Instant::from_nanos(13_000), |_| {});
        let h0_tx = f.port_counters(Node::Host(h0), 0);
        let s0_rx = f.port_counters(Node::Switch(s0), up.b_port);
        (h0_tx, s0_rx, f.lost_traffic(), f.events())
    };
    let one = counters(1);
    let (h0_tx, s0_rx, ..) = one;
    // Exactly the one frame sent at the cable's death was lost to it; later ones arrive.
    assert_eq!(h0_tx.prio[0].dropped.link_down, 1, "{h0_tx:?}");
    assert!(s0_rx.prio[0].rx_packets > 0, "{s0_rx:?}");
    assert_eq!(counters(2), one);
}

#[test]
fn a_maintenance_drain_is_the_same_on_two_and_three_threads() {
    let text =
        std::fs::read_to_string(format!("{}/maintenance-drain.toml", fixtures::SCENARIOS)).unwrap();
    let s = Scenario::from_toml(&text).unwrap();
    assert!(same_on_threads(s) >= 2);
}

#[test]
fn the_1280_host_fat_tree_forwards_every_frame_and_is_the_same_on_any_thread_count() {
    // scenarios/scale/websearch-1280.toml (the 320-host HPCC fat tree with ToRs, aggregation
    // switches and pods multiplied by 4: each switch routes toward 1,280 destinations through
    // a handful of groups), cut to its first 30 us.
    let path = Path::new(fixtures::SCENARIOS).join("scale/websearch-1280.toml");
    let mut s = Scenario::from_toml(&std::fs::read_to_string(path).unwrap()).unwrap();
    s.duration_us = 30.0;
    let (one, parts) = same_on(s, &[1], &[2, 3]);
    assert_eq!(parts, vec![2, 3]);
    // Every frame reached its destination: nothing dropped (no route, a wrong port), nothing
    // resent, and short flows that started early finished, nearly all between pods (64 hosts
    // each, through the cores) and into the last pod.
    assert_eq!(
        (one["drops"].as_u64(), one["retransmitted"].as_u64()),
        (Some(0), Some(0))
    );
    let flows = one["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 5493, "the 2 ms plan");
    let pods: Vec<(u64, u64)> = flows
        .iter()
        .filter(|f| f["completion_us"].is_number())
        .map(|f| {
            // "SRC->DST#ID"
            let name = f["name"].as_str().unwrap();
            let (src, rest) = name.split_once("->").unwrap();
            let dst = rest.split('#').next().unwrap();
            (
                src.parse::<u64>().unwrap() / 64,
                dst.parse::<u64>().unwrap() / 64,
            )
        })
        .collect();
    let across = pods.iter().filter(|(a, b)| a != b).count();
    assert!(pods.len() >= 20 && across + 2 >= pods.len(), "{pods:?}");
    assert!(pods.iter().any(|&(_, b)| b == 19), "{pods:?}");
}
