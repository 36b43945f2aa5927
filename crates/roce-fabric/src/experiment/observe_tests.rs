//! Tests of the fabric's idle sampling ([`crate::net::observe`]) on a scenario's run: here, beside
//! the scenario runner, because the fabric's modules do not use the scenarios built on them.

use super::scenario::Scenario;

/// Two flows done within 100 us of a 20 ms run sampled every microsecond, telemetry in
/// bins of 1.5 ms.
const IDLE_TAIL: &str = r#"
name = "idle-tail"
duration_us = 20000
warmup_us = 10
sample_us = 1
bin_us = 1500
cc = "dcqcn-mlx"
[topology]
kind = "star"
hosts = 3
link = { gbps = 100, delay_ns = 1000 }
[[workloads]]
kind = "incast"
senders = [0, 1]
receiver = 2
bytes = 200000
"#;

#[test]
fn idle_samples_taken_at_once_leave_the_run_as_one_by_one() {
    let s = Scenario::from_toml(IDLE_TAIL).unwrap();
    let run = |at_once: bool| {
        let mut built = s.build().unwrap();
        // Some other partition "busy" makes every sample a regular event.
        built.fabric.set_idle_elsewhere(at_once);
        let (summary, built) = s.run_built(built, |_| {}).unwrap();
        let rec = built.fabric.recorder().unwrap();
        let t = rec.telemetry.as_ref().unwrap();
        let json = serde_json::to_string(&summary).unwrap();
        (
            json,
            rec.rows.clone(),
            t.bins.clone(),
            built.fabric.idle_samples(),
        )
    };
    let (fast, slow) = (run(true), run(false));
    assert_eq!(fast.0, slow.0);
    assert_eq!(fast.1, slow.1);
    assert_eq!(fast.2, slow.2);
    assert_eq!(slow.3, 0);
    // All but a few hundred of the 20,000 samples came at once; the idle tail is one row.
    assert!(fast.3 > 19_000, "{}", fast.3);
    assert_eq!(fast.2.len(), 14);
    let last = fast.1.last().unwrap();
    assert!(
        last.flow_gbps.is_empty() && last.repeats > 19_000,
        "{last:?}"
    );
    assert!(fast.1.len() < 1_000, "{} rows", fast.1.len());
}
