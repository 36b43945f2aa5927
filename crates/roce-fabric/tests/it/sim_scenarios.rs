//! What the shipped scenarios say they demonstrate, asserted (issue 17 item 7): the microburst
//! absorbed by the buffer (scenarios/microburst.toml), flows with really different RTTs sharing
//! a bottleneck once PFC headroom covers the longest cable (scenarios/fairness.toml), and the
//! 2:1 oversubscribed uplink of scenarios/allreduce-leafspine.toml queueing and slowing the
//! ring; the lossless incast, the RC incast that retransmits, and web-search flows that all
//! finish. The other scenarios are asserted elsewhere: link-failure in the root's
//! tests/it/sim_outage.rs, ecmp-polarisation in sim_ecmp.rs, mixed in sim_classes.rs,
//! fat-tree-fb-hadoop in the root's tests/it/sim_hpcc_files.rs, the PFC victim in sim_fabric.rs,
//! allreduce-incast in sim_collectives.rs.

use roce_fabric::experiment::scenario::{Built, Scenario};
use roce_fabric::experiment::summary::RunSummary;
use roce_fabric::experiment::warning::WarningKind;

const MICROBURST: &str = include_str!("../../../../scenarios/microburst.toml");
const FAIRNESS: &str = include_str!("../../../../scenarios/fairness.toml");
const ALLREDUCE: &str = include_str!("../../../../scenarios/allreduce-leafspine.toml");
const INCAST: &str = include_str!("../../../../scenarios/incast.toml");
const RC_INCAST: &str = include_str!("../../../../scenarios/rc-incast.toml");
const WEBSEARCH: &str = include_str!("../../../../scenarios/websearch.toml");

fn run(text: &str) -> (RunSummary, Built) {
    let s = Scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}"));
    println!("scenario {} seed {}", s.name, s.seed);
    s.run(|_| {}).expect("runs")
}

/// (time ns, bytes queued) at the monitored port.
fn queue(built: &Built) -> Vec<(u64, u64)> {
    let rec = built.fabric.recorder().expect("recorder");
    rec.rows
        .iter()
        .filter_map(|r| r.queue_bytes.first().map(|&q| (r.t_ns, q)))
        .collect()
}

#[test]
fn a_microburst_is_absorbed_by_the_buffer_the_queue_peaks_and_drains_every_period() {
    let (sum, built) = run(MICROBURST);
    let t = sum.table();
    assert_eq!(sum.drops, 0, "{t}");
    assert_eq!(sum.pfc_pause_frames, 0, "{t}");
    assert_eq!(sum.flows.len(), 80, "{t}");
    assert!(sum.flows.iter().all(|f| f.completion_us.is_some()), "{t}");
    let q = queue(&built);
    // Each of the ten 50 us periods: a burst of 8 x 64 KiB at 8x the drain rate builds a queue
    // of several hundred KB, and it is empty again before the next burst.
    for k in 0..10u64 {
        let in_period: Vec<u64> = q
            .iter()
            .filter(|(t, _)| (k * 50_000..(k + 1) * 50_000).contains(t))
            .map(|&(_, b)| b)
            .collect();
        let peak = in_period.iter().copied().max().unwrap_or(0);
        let low = in_period.iter().copied().min().unwrap_or(u64::MAX);
        assert!(
            peak > 300_000 && peak < 1_000_000,
            "period {k}: peak {peak}\n{t}"
        );
        assert!(
            low < 5_000,
            "period {k}: the queue never drained ({low} B)\n{t}"
        );
    }
}

#[test]
fn flows_with_different_rtts_share_the_bottleneck_when_headroom_covers_the_longest_cable() {
    // The RTTs really differ: the senders' cables are 1, 4, 8 and 16 us long.
    for d in ["delay_ns = 4000", "delay_ns = 8000", "delay_ns = 16000"] {
        assert!(FAIRNESS.contains(d), "{d}");
    }
    let (sum, _) = run(FAIRNESS);
    let t = sum.table();
    assert_eq!(sum.drops, 0, "{t}");
    assert!(sum.jain_fairness > 0.95, "{t}");
    assert!(sum.bottleneck_utilisation > 0.99, "{t}");
    assert!(sum.flows.iter().all(|f| f.goodput_gbps > 15.0), "{t}");
    // With the default 150 KB headroom a paused 16 us cable still delivers more than the
    // headroom holds: the lossless class drops and the long-RTT flows fall behind.
    let short = FAIRNESS.replace("headroom_bytes = \"500KB\"", "headroom_bytes = \"150KB\"");
    assert_ne!(short, FAIRNESS);
    let (small, _) = run(&short);
    let ts = small.table();
    assert!(small.drops > 0, "{ts}");
    assert!(small.jain_fairness < sum.jain_fairness, "{t}\n{ts}");
}

#[test]
fn the_oversubscribed_uplink_queues_and_slows_a_ring_that_crosses_it_at_every_hop() {
    // One 2 MiB iteration keeps the debug-build run short.
    let short = ALLREDUCE
        .replace("bytes = 8388608", "bytes = 2097152")
        .replace("iterations = 4", "iterations = 1")
        .replace("duration_us = 3000", "duration_us = 1000");
    let local = short
        .replace("[0, 8, 2, 10, 4, 12, 6, 14]", "[0, 2, 4, 6, 8, 10, 12, 14]")
        .replace("[1, 9, 3, 11, 5, 13, 7, 15]", "[1, 3, 5, 7, 9, 11, 13, 15]");
    assert_ne!(local, short);
    let (cross, _) = run(&short);
    let (near, _) = run(&local);
    let (tc, tn) = (cross.table(), near.table());
    let iter = |s: &RunSummary| -> f64 {
        let v = &s.allreduce_iter_us;
        assert_eq!(v.len(), 2, "two rings");
        assert!(v.iter().all(|r| r.len() == 1), "one iteration each");
        v[0][0].max(v[1][0])
    };
    let (ic, in_) = (iter(&cross), iter(&near));
    // Leaf-local order: one ring flow per uplink (100 of 200 Gbit/s), no queue.
    assert_eq!(near.queue_p99_bytes, 0, "{tn}");
    // Crossing order: four ring flows per uplink (400 of 200 Gbit/s).
    assert!(cross.queue_p99_bytes > 100_000, "{tc}");
    assert_eq!(cross.drops, 0, "{tc}");
    assert!(
        ic > 1.8 * in_ && ic < 2.3 * in_,
        "{ic} vs {in_}\n{tc}\n{tn}"
    );
}

#[test]
fn a_lossless_incast_pauses_and_marks_instead_of_dropping_and_shares_the_line() {
    let (sum, _) = run(&INCAST.replace("duration_us = 2000", "duration_us = 500"));
    let t = sum.table();
    assert_eq!(sum.flows.len(), 16, "{t}");
    assert_eq!(sum.drops, 0, "{t}");
    assert!(sum.pfc_pause_frames > 0 && sum.host_pause_frames > 0, "{t}");
    assert!(sum.ecn_marked > 0 && sum.cnp_sent > 0, "{t}");
    assert!(sum.bottleneck_utilisation > 0.99, "{t}");
    assert!(sum.jain_fairness > 0.99, "{t}");
}

#[test]
fn the_summary_names_the_controller_and_the_parameters_the_scenario_set() {
    let text = INCAST.replace("duration_us = 2000", "duration_us = 100");
    let set = text.replace(
        "name = \"incast-16\"",
        "name = \"incast-16\"\ncc = \"dcqcn-mlx\"\ncc_params = [\"rpg_ai_rate=10\"]",
    );
    let (sum, _) = run(&set);
    assert_eq!(sum.cc, "dcqcn-mlx (rpg_ai_rate=10)");
    let header = sum.table().lines().next().unwrap_or_default().to_owned();
    assert!(
        header.ends_with("  cc dcqcn-mlx (rpg_ai_rate=10)"),
        "{header}"
    );
    let overrides = |s: &RunSummary| -> Vec<String> {
        s.warnings
            .iter()
            .filter(|w| w.kind == WarningKind::CnpOverride)
            .map(|w| w.message.clone())
            .collect()
    };
    assert!(overrides(&sum).is_empty(), "{:?}", sum.warnings);
    // A scenario's CNP interval other than the controller's own is said, in text and JSON.
    let (sum, _) = run(&set.replace("seed = 1", "seed = 1\ncnp_interval_us = 1"));
    let note = "cnp_interval_us = 1 overrides dcqcn-mlx's designed CNP interval of 4 us";
    assert_eq!(overrides(&sum), [note]);
    assert!(!sum.settled);
    assert!(
        sum.table().contains(&format!("\nwarning: {note}\n")),
        "{}",
        sum.table()
    );
    let (sum, _) = run(&set.replace("seed = 1", "seed = 1\ncnp_interval_us = 4"));
    assert!(overrides(&sum).is_empty(), "{:?}", sum.warnings);
    let (sum, _) = run(&text.replace(
        "name = \"incast-16\"",
        "name = \"incast-16\"\ncc = \"none\"",
    ));
    assert_eq!(sum.cc, "none");
    // No flow of a 100 us incast finishes: each says it is running, with no time.
    let t = sum.table();
    let flows: Vec<&str> = t.lines().filter(|l| l.starts_with("flow ")).collect();
    assert_eq!(flows.len(), 16, "{t}");
    assert!(
        flows
            .iter()
            .all(|l| l.contains(" running ") && !l.contains(" us ")),
        "{t}"
    );
}

#[test]
fn the_rc_incast_drops_and_its_flows_complete_by_retransmitting() {
    let (sum, _) = run(RC_INCAST);
    let t = sum.table();
    assert!(sum.drops > 0, "{t}");
    assert!(sum.recovery.retransmitted > 0, "{t}");
    assert_eq!(sum.flows.len(), 2, "{t}");
    assert!(sum.flows.iter().all(|f| f.completion_us.is_some()), "{t}");
    assert_eq!(sum.qp_errors, 0, "{t}");
}

#[test]
fn every_websearch_flow_finishes_and_gets_a_slowdown_report() {
    let (sum, _) = run(WEBSEARCH);
    let t = sum.table();
    assert_eq!(sum.flows.len(), 200, "{t}");
    assert!(sum.flows.iter().all(|f| f.completion_us.is_some()), "{t}");
    assert_eq!(sum.drops, 0, "{t}");
    let fct = sum.fct.as_ref().expect("fct report");
    assert_eq!(fct.flows.len(), 200, "{t}");
    assert!(!fct.bins.is_empty(), "{t}");
    // The window holds the traffic: the monitored port is busy, and the total is what the
    // hosts' links could carry (8 x 100 Gbit/s at most), not a sum of short flows' own rates.
    assert!(sum.bottleneck_utilisation > 0.05, "{t}");
    assert!(
        sum.total_goodput_gbps > 50.0 && sum.total_goodput_gbps < 800.0,
        "{t}"
    );
}
