//! Failures that reconverge (scenarios/link-failure.toml and variants): a dead cable stalls the
//! flows hashed across it until routing reconverges, the summary's per-flow bins show the stall
//! and the recovery, and the outage report counts what was lost. Reboots, flaps and lossy
//! cables hurt the way they should.

use crate::support::cli_output;

use cli_output::{roce, scratch_dir};
use roce_fabric::experiment::outage::Outage;
use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::experiment::summary::RunSummary;

const LINK_FAILURE: &str = include_str!("../../scenarios/link-failure.toml");
const SWITCH_REBOOT: &str = include_str!("../../scenarios/switch-reboot.toml");
const MAINTENANCE_DRAIN: &str = include_str!("../../scenarios/maintenance-drain.toml");

fn run(text: &str) -> RunSummary {
    let s = Scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    println!("scenario {} seed {}", s.name, s.seed);
    s.run(|_| {}).expect("runs").0
}

fn outage(sum: &RunSummary) -> &Outage {
    sum.outage
        .as_ref()
        .unwrap_or_else(|| panic!("no outage:\n{}", sum.table()))
}

/// scenarios/link-failure.toml with `failures` (a TOML line) instead of its link events.
fn with_failures(failures: &str) -> String {
    let mut text = LINK_FAILURE.to_string();
    text.truncate(text.find("link_events = [").unwrap_or(text.len()));
    text.push_str(failures);
    text
}

/// The sum of the flows' rates in bin `b`.
fn total(o: &Outage, b: usize) -> f64 {
    o.flow_bins_gbps.iter().map(|f| f[b]).sum()
}

/// From the failure to the end of the first bin, once the flows had fallen below 90% of their
/// rate before it (in any bin from the failure's on), in which the flows still sending (not
/// finished in or before the bin) are back above it, read off the summary's bins and flows;
/// `Some(0.0)` if they never fell.
fn first_bin_back(sum: &RunSummary) -> Option<f64> {
    let o = outage(sum);
    let bin = o.bin_us;
    // Flows start at 0 here, so a completion time is when the flow finished.
    let sending = |f: usize, b: usize| {
        sum.flows[f]
            .completion_us
            .is_none_or(|c| c >= (b as f64 + 1.0) * bin)
    };
    let fail_bin = (o.failure_at_us / bin) as usize;
    let mut fell = false;
    for b in fail_bin..o.flow_bins_gbps[0].len() {
        let live: Vec<usize> = (0..sum.flows.len()).filter(|&f| sending(f, b)).collect();
        let now: f64 = live.iter().map(|&f| o.flow_bins_gbps[f][b]).sum();
        let before: f64 = live.iter().map(|&f| o.before_gbps[f]).sum();
        if before == 0.0 {
            break;
        }
        if now < 0.9 * before {
            fell = true;
        } else if fell {
            return Some((b + 1) as f64 * bin - o.failure_at_us);
        }
    }
    (!fell).then_some(0.0)
}

#[test]
fn link_failure_stalls_flows_until_routing_reconverges_then_recovers() {
    let sum = run(LINK_FAILURE);
    let o = outage(&sum);
    let t = sum.table();
    assert_eq!((o.failure_at_us, o.bin_us), (1000.0, 250.0), "{t}");
    assert_eq!(o.flow_bins_gbps.len(), 4);
    assert!(o.flow_bins_gbps.iter().all(|f| f.len() == 12), "{t}");
    // Before the failure each flow has half of the two 100G uplinks.
    for f in &o.flow_bins_gbps {
        assert!(f[1..4].iter().all(|&g| g > 40.0), "{t}");
    }
    // The stall: some flow moves (almost) nothing right after the cable dies.
    assert!(!o.stalled_flows.is_empty(), "{t}");
    let slowest = o
        .flow_bins_gbps
        .iter()
        .map(|f| f[4].min(f[5]))
        .fold(f64::MAX, f64::min);
    assert!(slowest < 5.0, "{t}");
    // Reconvergence (50 us detection + 250 us) ends it within two bins.
    assert!(o.stalls_end_us > 0.0 && o.stalls_end_us <= 500.0, "{t}");
    // Back to 90% of the rate before only once the cable is back (2 ms), noticed (50 us) and
    // routed again (250 us): the bin from 2.5 ms.
    assert_eq!(o.time_to_recover_us, first_bin_back(&sum), "{t}");
    let back = o.time_to_recover_us.unwrap();
    assert!((1250.0..=1750.0).contains(&back), "{t}");
    // Then all four share the one surviving uplink: nobody stalled, the uplink full.
    for b in 6..8 {
        assert!(o.flow_bins_gbps.iter().all(|f| f[b] > 15.0), "bin {b}\n{t}");
        assert!((85.0..=100.0).contains(&total(o, b)), "bin {b}\n{t}");
    }
    // The cable comes back at 2 ms: both uplinks in use again.
    for f in &o.flow_bins_gbps {
        assert!(f[10..].iter().all(|&g| g > 40.0), "{t}");
    }
    assert!(
        o.frames_lost > 0 && o.bytes_lost > o.frames_lost * 64,
        "{t}"
    );
    assert!(o.retransmitted > 0, "{t}");
    assert_eq!(o.failed_flows, 0, "{t}");
    assert!(
        t.contains("outage at 1000.0 us:") && t.contains("rate per 250 us bin"),
        "{t}"
    );
}

#[test]
fn without_reconvergence_the_stall_lasts_until_the_cable_returns() {
    let text = LINK_FAILURE.replace("converge_us = 250", "converge_us = 5000");
    let sum = run(&text);
    let o = outage(&sum);
    let t = sum.table();
    // The flows whose ACKs spine 0 sends over the dead cable stay stalled for the whole
    // second (only leaf 0 noticed; nobody else withdrew the route).
    assert!(o.longest_stall_us >= 750.0, "{t}");
    assert!(o.stalls_end_us >= 1000.0, "{t}");
    for &f in &o.stalled_flows {
        assert!(o.flow_bins_gbps[f][6..8].iter().all(|&g| g < 5.0), "{t}");
    }
}

#[test]
fn a_rebooting_spine_loses_its_buffer_and_traffic_reroutes_around_it() {
    let text = with_failures(
        "failures = [{ kind = \"reboot\", switch = \"spine0r0\", at_us = 1000, down_us = 1000 }]\n",
    );
    let sum = run(&text);
    let o = outage(&sum);
    let t = sum.table();
    assert_eq!(o.failure_at_us, 1000.0, "{t}");
    assert!(o.frames_lost > 0, "{t}");
    for b in 6..8 {
        assert!((85.0..=100.0).contains(&total(o, b)), "bin {b}\n{t}");
    }
    for f in &o.flow_bins_gbps {
        assert!(f[10..].iter().all(|&g| g > 40.0), "{t}");
    }
}

#[test]
fn a_flapping_cable_stalls_flows_once_per_flap() {
    let mut text = with_failures("failures = [{ kind = \"flap\", a = \"leaf0r0\", b = \"spine0r0\", at_us = 750, down_us = 250, up_us = 500, count = 3 }]\n");
    text = text.replace(
        "routing = { detect_us = 50, converge_us = 250 }",
        "routing = { detect_us = 50, converge_us = 5000 }",
    );
    let sum = run(&text);
    let o = outage(&sum);
    let t = sum.table();
    // Down in bins 3, 6 and 9 (750..1000, 1500..1750, 2250..2500), up in between: the flow
    // last stalled one shows it (seed 0: flow 2; flow 0 keeps 11 Gbit/s in bins 3 and 9).
    let stalled = *o.stalled_flows.last().unwrap();
    let f = &o.flow_bins_gbps[stalled];
    for b in [3, 6, 9] {
        assert!(f[b] < 5.0, "bin {b}\n{t}");
    }
    for b in [5, 8, 11] {
        assert!(f[b] > 20.0, "bin {b}\n{t}");
    }
}

#[test]
fn a_lossy_cable_costs_retransmissions_but_no_outage_frames() {
    let text = with_failures(
        "failures = [{ kind = \"loss\", a = \"leaf0r0\", b = \"spine0r0\", loss = 0.001 }]\n",
    );
    let sum = run(&text);
    let t = sum.table();
    assert!(sum.outage.is_none(), "loss alone is no outage\n{t}");
    assert!(sum.recovery.retransmitted > 0 && sum.drops > 0, "{t}");
    assert_eq!(sum.failed_flows, 0, "{t}");
}

#[test]
fn failures_naming_what_does_not_exist_are_refused() {
    let with = |f: &str| {
        let s = Scenario::from_toml(&with_failures(&format!("failures = [{f}]\n")));
        s.and_then(|s| s.build().map(|_| ()))
            .expect_err(f)
            .to_string()
    };
    assert!(
        with("{ kind = \"reboot\", switch = \"spine9\", at_us = 1, down_us = 1 }")
            .contains("no switch \"spine9\"")
    );
    assert!(
        with("{ kind = \"loss\", a = \"h0\", b = \"spine0r0\", loss = 0.1 }")
            .contains("no cable between")
    );
    assert!(
        with("{ kind = \"loss\", a = \"leaf0r0\", b = \"spine0r0\", loss = 2 }").contains("0..=1")
    );
    assert!(with("{ kind = \"flap\", a = \"leaf0r0\", b = \"spine0r0\", at_us = 1, down_us = 1, up_us = 1, count = 0 }").contains("count >= 1"));
    assert!(
        with("{ kind = \"drain\", switch = \"spine0r0\", at_us = 5, until_us = 1 }")
            .contains("at_us <= until_us")
    );
    assert!(
        with("{ kind = \"drain\", switch = \"spine7\", at_us = 1, until_us = 5 }")
            .contains("no switch \"spine7\"")
    );
}

#[test]
fn sim_run_out_writes_the_flow_bins_with_the_stall() {
    let dir = scratch_dir("sim-outage");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/link-failure.toml");
    let out_dir = dir.to_str().expect("a UTF-8 temp dir");
    let (code, stdout, stderr) = roce(&["sim", "run", path, "--out", out_dir]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("outage at 1000.0 us: "), "{stdout}");
    // The queue delay histograms: every packet of every queue in one bucket line.
    let qd = std::fs::read_to_string(dir.join("queue_delay.csv")).expect("queue_delay.csv");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("summary.json")).expect("summary.json"),
    )
    .expect("json");
    let in_json: u64 = summary["queue_delay"]
        .as_array()
        .expect("queue_delay")
        .iter()
        .map(|q| q["packets"].as_u64().unwrap())
        .sum();
    let in_csv: u64 = qd
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(in_json > 0);
    assert_eq!(in_csv, in_json);
    assert!(
        qd.starts_with("node,port,priority,from_us,to_us,packets\n"),
        "{qd}"
    );
    let csv = std::fs::read_to_string(dir.join("flow_bins.csv")).expect("flow_bins.csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "bin_start_us,flow0_gbps,flow1_gbps,flow2_gbps,flow3_gbps"
    );
    assert_eq!(lines.len(), 13, "{csv}");
    let row = |start: &str| -> Vec<f64> {
        let l = lines.iter().find(|l| l.starts_with(start)).expect(start);
        l.split(',').skip(1).map(|v| v.parse().unwrap()).collect()
    };
    let at_failure = row("1000.0,");
    assert!(
        at_failure.iter().chain(&row("1250.0,")).any(|&g| g < 5.0),
        "{csv}"
    );
    assert!(row("500.0,").iter().all(|&g| g > 40.0), "{csv}");
    let summary = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert!(v["outage"]["bytes_lost"].as_u64().unwrap() > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn after_a_reboot_every_finished_flow_delivered_its_size_and_recovery_matches_the_bins() {
    let sum = run(SWITCH_REBOOT);
    let o = outage(&sum);
    let t = sum.table();
    assert!(o.frames_lost > 0 && o.retransmitted > 0, "{t}");
    let finished: Vec<_> = sum
        .flows
        .iter()
        .filter(|f| f.completion_us.is_some())
        .collect();
    assert_eq!(finished.len(), 2, "{t}");
    // The receiver's count of a flow is what its responder took in order: the frames the
    // reboot lost count once, when they came again.
    for f in finished {
        assert_eq!(f.bytes, 8_000_000, "flow {}\n{t}", f.id);
    }
    // The finished flows' empty bins after they finished are not stalls.
    for &f in &o.stalled_flows {
        let done = sum.flows[f].completion_us.unwrap_or(f64::MAX);
        assert!(done > o.failure_at_us + o.longest_stall_us, "flow {f}\n{t}");
    }
    // Recovery is the first bin the flows still sending are back above 90% of their rate.
    let back = o.time_to_recover_us.unwrap();
    assert_eq!(Some(back), first_bin_back(&sum), "{t}");
    // Spine 0 is back at 1.5 ms, noticed 50 us and routed 250 us later.
    assert!((800.0..=1250.0).contains(&back), "{t}");
    assert!(
        t.contains(&format!(
            "back to 90% of the rate before after {back:.1} us"
        )),
        "{t}"
    );
}

#[test]
fn a_drained_switch_reboots_without_losing_a_frame_and_takes_traffic_back_after() {
    let sum = run(MAINTENANCE_DRAIN);
    let o = outage(&sum);
    let t = sum.table();
    // The same reboot unplanned loses frames; drained first, none: nothing was in the spine.
    let unplanned = run(SWITCH_REBOOT);
    assert!(outage(&unplanned).frames_lost > 0, "{}", unplanned.table());
    assert_eq!((o.frames_lost, sum.drops), (0, 0), "{t}");
    for f in sum.flows.iter().filter(|f| f.completion_us.is_some()) {
        assert_eq!(f.bytes, 8_000_000, "flow {}\n{t}", f.id);
    }
    // Drained from 500 us, rerouted 250 us later (what was in spine 0 drains meanwhile): from
    // 1 ms to 2 ms the four flows share spine 1 alone, and no flow stalls.
    for b in 4..8 {
        assert!(total(o, b) <= 100.0, "bin {b}\n{t}");
    }
    assert!(o.stalled_flows.is_empty(), "{t}");
    // Back in service at 2 ms, rerouted by 2.25 ms: the two long flows take both spines again,
    // more than one spine carries.
    for b in 10..12 {
        assert!(
            o.flow_bins_gbps[2][b] + o.flow_bins_gbps[3][b] > 150.0,
            "bin {b}\n{t}"
        );
    }
    assert_eq!(o.time_to_recover_us, first_bin_back(&sum), "{t}");
}
