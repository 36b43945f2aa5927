//! A run whose figures do not describe its controller settled says why, in the summary's
//! text and JSON: each warning fires on a scenario made to trigger it and stays silent on one
//! that settles.

use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::experiment::summary::RunSummary;
use roce_fabric::experiment::warning::WarningKind;

/// A 4:1 incast at 100 Gbit/s through one switch with ECN below PFC, as the CC matrix builds it.
fn incast(cc: &str, duration_us: u32, warmup_us: u32, extra: &str) -> String {
    format!(
        r#"
name = "settle"
seed = 1
duration_us = {duration_us}
warmup_us = {warmup_us}
cc = "{cc}"
topology = {{ kind = "star", hosts = 5, link = {{ gbps = 100, delay_ns = 1000 }} }}
[switch]
buffer_bytes = "12MiB"
queue_limit_bytes = "1MiB"
lossless = [3]
pfc = true
pfc_thresholds = {{ xoff_bytes = "400KB", xon_bytes = "380KB", headroom_bytes = "150KB", quanta = 65535 }}
ecn = {{ kmin_bytes = "64KB", kmax_bytes = "256KB", pmax = 0.2 }}
[[workloads]]
kind = "incast"
senders = [0, 1, 2]
receiver = 4
{extra}
"#
    )
}

fn run(text: &str) -> RunSummary {
    let s = Scenario::from_toml(text).unwrap();
    let (sum, _) = s.run(|_| {}).unwrap();
    sum
}

fn kinds(s: &RunSummary) -> Vec<WarningKind> {
    s.warnings.iter().map(|w| w.kind).collect()
}

/// The text says each warning on its own line, and JSON carries it with its kind.
fn said(s: &RunSummary, kind: WarningKind) {
    let w = s.warnings.iter().find(|w| w.kind == kind).unwrap();
    assert!(!s.settled);
    let text = s.table();
    assert!(
        text.contains(&format!("\nwarning: {}\n", w.message)),
        "{text}"
    );
    let json = serde_json::to_value(s).unwrap();
    assert_eq!(json["settled"], false);
    let listed: Vec<String> = json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap().to_owned())
        .collect();
    let name = serde_json::to_value(kind).unwrap();
    assert!(listed.iter().any(|k| name == *k), "{listed:?}");
}

#[test]
fn a_run_measured_after_the_controller_settled_carries_no_warning() {
    let s = run(&incast("dcqcn-mlx", 2_000, 1_000, ""));
    assert_eq!(kinds(&s), [], "{}", s.table());
    assert!(s.settled);
    assert!(!s.table().contains("warning:"), "{}", s.table());
    assert_eq!(serde_json::to_value(&s).unwrap()["settled"], true);
}

#[test]
fn a_measurement_that_opens_before_the_settle_time_says_so() {
    // dcqcn-paper's alpha relaxes over 14 ms: a 2 ms run is its start-up.
    let s = run(&incast("dcqcn-paper", 2_000, 1_000, ""));
    said(&s, WarningKind::BeforeSettle);
    let w = &s.warnings[0].message;
    assert!(w.contains("dcqcn-paper settles (14355 us"), "{w}");
    // dcqcn-mlx settles in 505 us: a warm-up of 400 us is too short, 600 us is not.
    let s = run(&incast("dcqcn-mlx", 2_000, 400, ""));
    assert!(
        kinds(&s).contains(&WarningKind::BeforeSettle),
        "{}",
        s.table()
    );
    let s = run(&incast("dcqcn-mlx", 2_000, 600, ""));
    assert!(
        !kinds(&s).contains(&WarningKind::BeforeSettle),
        "{}",
        s.table()
    );
}

#[test]
fn goodput_that_moves_between_the_halves_of_the_window_is_not_steady() {
    // A fourth long flow on its own path starts halfway through the window: the total grows
    // by a third.
    let extra = "[[workloads]]\nkind = \"flow\"\nsrc = 3\ndst = 2\nstart_us = 1500.0\n";
    let s = run(&incast("dcqcn-mlx", 2_000, 1_000, extra));
    said(&s, WarningKind::NotSteady);
    // The same flow from the start: steady.
    let extra = extra.replace("start_us = 1500.0", "start_us = 0.0");
    let s = run(&incast("dcqcn-mlx", 2_000, 1_000, &extra));
    assert_eq!(kinds(&s), [], "{}", s.table());
}

#[test]
fn finite_flows_still_moving_at_the_end_are_named() {
    let extra = "[[workloads]]\nkind = \"flow\"\nsrc = 3\ndst = 2\nbytes = 100000000\n";
    let s = run(&incast("dcqcn-mlx", 1_000, 600, extra));
    said(&s, WarningKind::FlowsUnfinished);
    // A flow that finishes in the run leaves nothing to say.
    let s = run(&incast(
        "dcqcn-mlx",
        1_000,
        600,
        &extra.replace("100000000", "100000"),
    ));
    assert!(
        !kinds(&s).contains(&WarningKind::FlowsUnfinished),
        "{}",
        s.table()
    );
}

#[test]
fn pfc_still_pausing_at_the_end_is_said() {
    // Without congestion control PFC alone holds the incast: pauses at the end.
    let s = run(&incast("none", 1_000, 600, ""));
    said(&s, WarningKind::PfcActive);
    // dcqcn-mlx keeps the queue below the XOFF threshold.
    let s = run(&incast("dcqcn-mlx", 1_000, 600, ""));
    assert!(
        !kinds(&s).contains(&WarningKind::PfcActive),
        "{}",
        s.table()
    );
}
