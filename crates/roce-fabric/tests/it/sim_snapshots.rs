//! Snapshot tables of the built-in experiments (short runs): any change to the fabric's
//! behaviour shows up as a reviewed diff of these summaries. Also checks that every scenario
//! file in scenarios/ parses and builds.

use roce_fabric::experiment::builtin::{Builtin, BuiltinKind};
use roce_fabric::experiment::scenario::Scenario;
use roce_testkit::fixtures;

fn table(kind: BuiltinKind, senders: usize, duration_us: f64) -> String {
    let p = Builtin {
        senders: Some(senders),
        duration_us: Some(duration_us),
        ..Builtin::default()
    };
    let s = p.scenario(kind);
    println!("scenario {} seed {}", s.name, s.seed);
    s.run(|_| {}).expect("runs").0.table()
}

/// One test per built-in experiment: its summary table after a short run (senders, µs).
macro_rules! summary_snapshots {
    ($($test:ident: $kind:ident, $senders:expr, $duration_us:expr;)*) => {$(
        #[test]
        fn $test() {
            insta::assert_snapshot!(table(BuiltinKind::$kind, $senders, $duration_us));
        }
    )*};
}

summary_snapshots! {
    incast_summary_snapshot: Incast, 4, 300.0;
    fairness_summary_snapshot: Fairness, 3, 300.0;
    pfc_spreading_summary_snapshot: PfcSpreading, 4, 300.0;
    allreduce_summary_snapshot: Allreduce, 4, 1_500.0;
    link_failure_summary_snapshot: LinkFailure, 2, 600.0;
}

/// Many QPs per host, most of them not started yet for most of the run: pins the events and
/// every flow's outcome, so the endpoint's and the RC engine's bookkeeping of deadlines and
/// pending flows (kept so an event costs what changed, not every QP) changes nothing.
#[test]
fn websearch_many_flows_per_host_summary_snapshot() {
    let text = include_str!("../../../../scenarios/websearch.toml");
    let s = Scenario::from_toml(text).unwrap();
    insta::assert_snapshot!(s.run(|_| {}).expect("runs").0.table());
}

#[test]
fn every_scenario_file_parses_and_builds() {
    let dir = fixtures::SCENARIOS;
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let s = Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        s.build()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        n += 1;
    }
    assert!(n >= 5, "found {n} scenario files");
}

#[test]
fn bad_scenarios_are_rejected_with_one_clear_line() {
    let cases = [
        ("name = \"x\"", "missing field `duration_us`"),
        (
            "name = \"x\"\nduration_us = 10\ntopology = { kind = \"star\", hosts = 2, link = { gbps = 900, delay_ns = 1 } }",
            "link rate 900 Gbit/s is outside 1..=800",
        ),
        (
            "name = \"x\"\nduration_us = 10\ntopology = { kind = \"ring\" }",
            "unknown variant `ring`",
        ),
        (
            "name = \"x\"\nduration_us = 10\ntopology = { kind = \"star\", hosts = 2, link = { gbps = 10, delay_ns = 1 } }\nworkloads = [{ kind = \"flow\", src = 0, dst = 5 }]",
            "host 5 does not exist",
        ),
    ];
    for (text, want) in cases {
        let err = Scenario::from_toml(text).and_then(|s| s.build().map(|_| ()));
        let msg = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains(want), "{msg:?} should mention {want:?}");
        assert!(!msg.contains('\n'), "one line: {msg:?}");
    }
}
