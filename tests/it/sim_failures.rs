//! Failures are loud: a flow whose QP runs out of retries is `failed` with the transport's
//! reason, counted in `qp_errors`, makes Jain's index undefined when nothing moved, and makes
//! `roce sim` exit non-zero naming the flow (unless `--allow-failures`). Healthy runs report
//! their totals: goodput, bottleneck utilisation, retransmissions, NAKs and timeouts.

use std::process::Command;

use roce_fabric::experiment::builtin::{Builtin, BuiltinKind};
use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::experiment::summary::FlowState;

use crate::support::scenario_files;

use scenario_files::RETRIES_EXHAUSTED as FAILING;

fn failing() -> roce_fabric::experiment::summary::RunSummary {
    let text = std::fs::read_to_string(FAILING).unwrap();
    let s = Scenario::from_toml(&text).unwrap();
    println!("scenario {} seed {}", s.name, s.seed);
    s.run(|_| {}).unwrap().0
}

#[test]
fn flows_whose_retries_run_out_are_failed_with_the_transport_reason() {
    let sum = failing();
    assert_eq!(sum.flows.len(), 2);
    for f in &sum.flows {
        assert_eq!(f.state, FlowState::Failed, "{}", sum.table());
        assert_eq!(
            f.error.as_deref(),
            Some("RetryExcErr, QP in the error state")
        );
        assert_eq!(f.completion_us, None);
        // retry_cnt 7: the first timeout and seven retries.
        assert_eq!(f.recovery.timeouts, 8, "{}", sum.table());
        assert!(f.recovery.retransmitted > 0);
    }
    assert_eq!(sum.qp_errors, 2);
    assert_eq!(sum.failed_flows, 2);
    assert_eq!(sum.jain_fairness, 0.0);
    assert_eq!(sum.total_goodput_gbps, 0.0);
    let table = sum.table();
    assert!(table.contains("jain undefined (no flow moved)"), "{table}");
    assert!(table.contains("flows 2: 2 failed"), "{table}");
    assert!(
        table.contains("flow   0 0->2#17 failed: RetryExcErr, QP in the error state"),
        "{table}"
    );
}

#[test]
fn roce_sim_exits_non_zero_naming_the_failed_flow_unless_failures_are_allowed() {
    let roce = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_roce"))
            .args(["sim", "run", FAILING])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = roce(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "2 of 2 flows failed or stalled (2 QPs in the error state); first: flow 0 0->2#17 failed: RetryExcErr"
        ),
        "{err}"
    );
    let out = roce(&["--allow-failures", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["qp_errors"], 2);
    assert_eq!(json["flows"][1]["state"], "failed");
    assert_eq!(
        json["flows"][1]["error"],
        "RetryExcErr, QP in the error state"
    );
}

#[test]
fn a_healthy_incast_reports_totals_and_running_flows() {
    let p = Builtin {
        senders: Some(2),
        duration_us: Some(300.0),
        ..Builtin::default()
    };
    let s = p.scenario(BuiltinKind::Incast);
    println!("scenario {} seed {}", s.name, s.seed);
    let sum = s.run(|_| {}).unwrap().0;
    let t = sum.table();
    assert!(
        sum.flows.iter().all(|f| f.state == FlowState::Running),
        "{t}"
    );
    assert_eq!((sum.failed_flows, sum.qp_errors), (0, 0), "{t}");
    assert_eq!(
        (
            sum.recovery.retransmitted,
            sum.recovery.naks,
            sum.recovery.timeouts
        ),
        (0, 0, 0),
        "{t}"
    );
    let total: f64 = sum.flows.iter().map(|f| f.goodput_gbps).sum();
    assert_eq!(sum.total_goodput_gbps, total);
    // PFC keeps the bottleneck busy: wire utilisation near 1 (a frame counted when it starts
    // may end after the window), goodput below it by the headers.
    let u = sum.bottleneck_utilisation;
    assert!(u > 0.97 && u < 1.001, "{u} {t}");
    assert!(total < 100.0 * sum.bottleneck_utilisation, "{t}");
    assert!(t.contains("flows 2: 2 running"), "{t}");
}

#[test]
fn dcqcn_mlx_with_a_4us_cnp_interval_completes_every_flow_without_qp_errors() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/scenarios/dcqcn-mlx-cnp4.toml"
    );
    let s = Scenario::from_toml(&std::fs::read_to_string(path).unwrap()).unwrap();
    println!("scenario {} seed {}", s.name, s.seed);
    let sum = s.run(|_| {}).unwrap().0;
    let t = sum.table();
    assert_eq!(sum.flows.len(), 8);
    assert!(sum.flows.iter().all(|f| f.state == FlowState::Done), "{t}");
    assert_eq!(
        (sum.qp_errors, sum.recovery.timeouts, sum.failed_flows),
        (0, 0, 0),
        "{t}"
    );
    // The CNPs did cut the rates (this is the case that used to collapse).
    assert!(sum.cnp_handled > 500, "{t}");
    // 16 MB through one 100 Gbit/s port: at least 1.3 ms, and well within the run.
    let last = sum
        .flows
        .iter()
        .filter_map(|f| f.completion_us)
        .fold(0.0, f64::max);
    assert!(last > 1_300.0 && last < 2_500.0, "{t}");
}
