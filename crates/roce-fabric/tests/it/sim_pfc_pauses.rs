//! PFC per port and priority in the summary: the per-port figures add up to the totals the
//! summary has always printed, and the text lists the ports held longest.

use roce_fabric::experiment::pfc_pauses::TEXT_ROWS;
use roce_fabric::experiment::scenario::Scenario;
use roce_testkit::fixtures;

#[test]
fn pauses_per_port_and_priority_add_up_to_the_totals() {
    let text = std::fs::read_to_string(format!("{}/incast.toml", fixtures::SCENARIOS)).unwrap();
    let s = Scenario::from_toml(&text.replace("duration_us = 2000", "duration_us = 400")).unwrap();
    let (sum, _) = s.run(|_| {}).unwrap();
    let t = sum.table();
    assert!(sum.pfc_pause_frames > 0, "{t}");
    let sent: u64 = sum.pfc.iter().map(|p| p.tx_pause).sum();
    assert_eq!(sent, sum.pfc_pause_frames, "{t}");
    let hosts = sum.pfc.iter().filter(|p| p.node.starts_with('h'));
    let (got, held) = hosts.fold((0, 0.0), |(n, us), p| {
        (n + p.rx_pause, us + p.rx_pause_duration_us)
    });
    assert_eq!(got, sum.host_pause_frames, "{t}");
    assert!((held - sum.host_paused_us).abs() < 1e-6, "{held} {t}");
    // Every entry is on the lossless priority and moved something.
    assert!(sum.pfc.iter().all(|p| p.priority == 3), "{:?}", sum.pfc);
    assert!(sum.pfc.iter().all(|p| p.tx_pause + p.rx_pause > 0));
    // The text shows the ports held longest, then how many more the JSON has.
    let listed = t.lines().filter(|l| l.contains(" prio 3  sent ")).count();
    assert_eq!(listed, TEXT_ROWS.min(sum.pfc.len()), "{t}");
    assert!(
        t.contains(&format!("... {} more (--json)", sum.pfc.len() - TEXT_ROWS)),
        "{t}"
    );
}
