//! The switches' PFC watchdog and the deadlock search: a host NIC that storms PFC
//! (scenarios/pfc-storm.toml) is detected `detect_us` after its pause starts holding a queue,
//! the queue's packets are dropped and counted, the port is restored `restore_us` after the
//! storm's last pause frame; without the watchdog the pause holds and spreads, and nothing is
//! counted. A ring of switches whose routes go one way round deadlocks; the summary names the
//! cycle, and the watchdog breaks it. Both give the same summary on one and two threads.

use roce_fabric::engines::ScenarioEngine;
use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::experiment::warning::WarningKind;
use roce_fabric::{Fabric, Node, SwitchId};
use roce_proto::time::{Duration, Instant};
use roce_testkit::fixtures;

fn storm_scenario() -> Scenario {
    let text = std::fs::read_to_string(format!("{}/pfc-storm.toml", fixtures::SCENARIOS)).unwrap();
    Scenario::from_toml(&text).unwrap()
}

/// The storm scenario without its `[switch.pfc_watchdog]` line.
fn without_watchdog(s: &Scenario) -> Scenario {
    let mut s = s.clone();
    s.switch.pfc_watchdog = None;
    s
}

const SW0: Node = Node::Switch(SwitchId(0));

/// Storms detected and restored, and packets the watchdog dropped, at sw0's port to h3.
fn watchdog_counts(f: &Fabric<ScenarioEngine>) -> (u64, u64, u64) {
    let c = f.port_counters(SW0, 3).prio[3];
    (c.pfc_wd_storms, c.pfc_wd_restored, c.dropped.pfc_watchdog)
}

/// When the pause frames h3 sent reached sw0: (first, last).
fn storm_frames(f: &Fabric<ScenarioEngine>) -> (Instant, Instant) {
    let at: Vec<u64> = f
        .pfc_events()
        .iter()
        .filter(|e| e.node == SW0 && e.port == 3)
        .map(|e| e.t_ns)
        .collect();
    let t = |ns: Option<&u64>| Instant::from_nanos(*ns.unwrap());
    (t(at.first()), t(at.last()))
}

#[test]
fn a_storm_is_detected_after_detect_us_dropped_and_restored_restore_us_after_it_stops() {
    let s = storm_scenario();
    let us = Duration::from_micros;
    let mut built = s.build().unwrap();
    let f = &mut built.fabric;
    f.log_pfc();
    f.run_until(Instant::from_nanos(600_000));
    // h3's first XOFF reaches sw0 a frame and a link delay after 500 us; the queue to h3 holds
    // packets from then on (two 40 Gbit/s flows feed it).
    let (first, _) = storm_frames(f);
    assert!(first > Instant::from_nanos(501_000) && first < Instant::from_nanos(501_100));
    f.run_until(first + us(200) - Duration::NANOSECOND);
    assert_eq!(watchdog_counts(f), (0, 0, 0), "not before detect_us");
    // Detected within a frame time of detect_us after the pause began holding packets.
    f.run_until(first + us(200) + Duration::from_nanos(100));
    let (storms, restored, dropped) = watchdog_counts(f);
    assert_eq!((storms, restored), (1, 0));
    assert!(dropped > 100, "the queued packets are dropped: {dropped}");
    assert_eq!(f.queue_bytes(SwitchId(0), 3), 0);
    // While the storm lasts, what comes for h3 is dropped too, and the port is not paused.
    f.run_until(Instant::from_nanos(1_400_000));
    assert!(watchdog_counts(f).2 > dropped);
    assert!(!f.paused_now().contains(&(SW0, 3, 3)));
    // h3 sends XON at 1500 us: restored restore_us after that last pause frame, not before.
    f.run_until(Instant::from_nanos(1_600_000));
    let (_, last) = storm_frames(f);
    assert!(last > Instant::from_nanos(1_500_000) && last < Instant::from_nanos(1_501_100));
    f.run_until(last + us(200) - Duration::NANOSECOND);
    assert_eq!(watchdog_counts(f).1, 0);
    f.run_until(last + us(200));
    assert_eq!(watchdog_counts(f).0, 1);
    assert_eq!(watchdog_counts(f).1, 1, "restored");

    // The whole run's summary: one row, its drops in `drops`, a warning, every flow alive.
    let (on, _) = s.run(|_| {}).unwrap();
    let t = on.table();
    assert_eq!(on.pfc_watchdog.len(), 1, "{t}");
    let row = &on.pfc_watchdog[0];
    assert_eq!((row.node.as_str(), row.port, row.priority), ("sw0", 3, 3));
    assert_eq!((row.storms, row.restored), (1, 1), "{t}");
    assert_eq!(row.dropped, on.drops, "{t}");
    assert!(
        t.contains("  sw0:3          prio 3  storms    1  restored    1  dropped"),
        "{t}"
    );
    let kinds: Vec<WarningKind> = on.warnings.iter().map(|w| w.kind).collect();
    assert!(kinds.contains(&WarningKind::PfcStorm), "{t}");
    assert!(on.failures().next().is_none(), "{t}");
    assert!(on.pfc_deadlock.is_none(), "{t}");

    // Without the watchdog the pause holds for the whole storm and spreads to h0, whose flow
    // to h2 stalls with the rest; nothing is counted or reported.
    let (off, _) = without_watchdog(&s).run(|_| {}).unwrap();
    let t = off.table();
    assert!(off.pfc_watchdog.is_empty() && off.drops == 0, "{t}");
    let held = off
        .pfc
        .iter()
        .find(|p| p.node == "sw0" && p.port == 3)
        .unwrap();
    assert!((999.0..1001.0).contains(&held.rx_pause_duration_us), "{t}");
    assert!(
        !off.warnings.iter().any(|w| w.kind == WarningKind::PfcStorm),
        "{t}"
    );
    assert!(off.flows[2].bytes < on.flows[2].bytes, "{t}");
    let json = serde_json::to_string(&off).unwrap();
    assert!(
        !json.contains("pfc_watchdog") && !json.contains("pfc_wd"),
        "{json}"
    );
}

/// Five switches in a ring, host `h<i>` on `s<i>`, and a flow from every host to the host two
/// switches on: shortest paths all go the same way round (two hops against three), so every
/// ring link carries two flows and each switch's buffer for its next hop waits on the next
/// switch's: the cyclic buffer dependency of a PFC deadlock.
fn ring(watchdog: &str) -> Scenario {
    let mut t = String::from(
        r#"name = "ring-deadlock"
seed = 1
duration_us = 2000
engine = "stand-in"
topology = { kind = "custom", switches = ["s0", "s1", "s2", "s3", "s4"], hosts = 5, link = { gbps = 100, delay_ns = 1000 }, cables = [
  { a = "h0", b = "s0" }, { a = "h1", b = "s1" }, { a = "h2", b = "s2" }, { a = "h3", b = "s3" }, { a = "h4", b = "s4" },
  { a = "s0", b = "s1" }, { a = "s1", b = "s2" }, { a = "s2", b = "s3" }, { a = "s3", b = "s4" }, { a = "s4", b = "s0" },
] }

[switch]
buffer_bytes = "12MiB"
queue_limit_bytes = "1MiB"
lossless = [3]
pfc = true
pfc_thresholds = { xoff_bytes = "100KB", xon_bytes = "90KB", headroom_bytes = "150KB", quanta = 65535 }
"#,
    );
    t.push_str(watchdog);
    for i in 0..5 {
        t.push_str(&format!(
            "\n[[workloads]]\nkind = \"flow\"\nsrc = {i}\ndst = {}\n",
            (i + 2) % 5
        ));
    }
    Scenario::from_toml(&t).unwrap()
}

#[test]
fn a_ring_deadlock_is_reported_with_its_cycle_and_broken_by_the_watchdog() {
    let cycle = ["s0:1", "s1:2", "s2:2", "s3:2", "s4:2", "s0:1"];
    let (off, _) = ring("").run(|_| {}).unwrap();
    let t = off.table();
    let d = off.pfc_deadlock.as_ref().expect("a deadlock");
    assert_eq!(d.cycle, cycle, "{t}");
    assert_eq!(d.priority, 3);
    assert!(d.standing_at_end, "{t}");
    // Seen at a sample (every 1 us) soon after the ring fills.
    assert!(d.first_seen_us > 0.0 && d.first_seen_us < 100.0, "{t}");
    assert!(
        t.contains("pfc deadlock on priority 3: s0:1 -> s1:2 -> s2:2 -> s3:2 -> s4:2 -> s0:1"),
        "{t}"
    );
    assert!(off
        .warnings
        .iter()
        .any(|w| w.kind == WarningKind::PfcDeadlock));
    assert_eq!(off.failures().count(), 5, "every flow stalls: {t}");

    let (on, _) = ring(WATCHDOG).run(|_| {}).unwrap();
    let t = on.table();
    let d = on
        .pfc_deadlock
        .as_ref()
        .expect("seen before the watchdog broke it");
    assert_eq!(d.cycle, cycle, "{t}");
    assert!(!d.standing_at_end, "{t}");
    assert!(on.pfc_watchdog.iter().all(|r| r.storms >= 1), "{t}");
    assert_eq!(on.failures().count(), 0, "traffic moves again: {t}");
    for (a, b) in on.flows.iter().zip(&off.flows) {
        assert!(a.bytes > 2 * b.bytes, "{t}");
    }
}

const WATCHDOG: &str = "pfc_watchdog = { detect_us = 200, restore_us = 200 }\n";

/// The JSON summary of `s` run on `threads`.
fn summary_on(s: &Scenario, threads: usize) -> serde_json::Value {
    let mut built = s.build().unwrap();
    built.fabric.set_threads(threads).unwrap();
    let (sum, _) = s.run_built(built, |_| {}).unwrap();
    serde_json::to_value(&sum).unwrap()
}

#[test]
fn storms_and_deadlocks_come_out_the_same_on_one_and_two_threads() {
    for s in [storm_scenario(), ring(WATCHDOG), ring("")] {
        let one = summary_on(&s, 1);
        assert!(one.get("pfc_watchdog").is_some() || one.get("pfc_deadlock").is_some());
        assert_eq!(summary_on(&s, 2), one, "{}", s.name);
    }
}
