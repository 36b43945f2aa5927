//! Queue delay (sojourn time) per egress queue agrees with the queue's depth over its drain
//! rate: a 16:1 incast held by PFC keeps the receiver's port at a near constant depth, so every
//! packet waits about depth / rate.

use roce_fabric::experiment::queue_delay::TEXT_ROWS;
use roce_fabric::experiment::scenario::Scenario;
use roce_testkit::fixtures;

#[test]
fn sojourn_at_a_standing_queue_is_its_depth_over_the_drain_rate() {
    let text = std::fs::read_to_string(format!("{}/incast.toml", fixtures::SCENARIOS)).unwrap();
    let s = Scenario::from_toml(&text).unwrap();
    let (sum, _) = s.run(|_| {}).unwrap();
    let t = sum.table();
    // The receiver's port (the bottleneck) holds a standing queue.
    let q = sum
        .queue_delay
        .iter()
        .find(|q| q.node == "sw0" && q.port == 16 && q.priority == 3)
        .map(|q| &q.delay)
        .unwrap_or_else(|| panic!("no queue delay for sw0:16\n{t}"));
    assert!(
        sum.queue_p99_bytes as f64 <= sum.queue_mean_bytes * 1.05,
        "{t}"
    );
    // Depth over the rate the queue's bytes drain at: frames leave at 100 Gbit/s with 24 bytes
    // of preamble, gap and FCS each beside the bytes the queue counts.
    let frame = 1024.0 + 58.0;
    let drain_bytes_per_us = 100e9 / 8.0 / 1e6 * frame / (frame + 24.0);
    let expected_us = sum.queue_mean_bytes / drain_bytes_per_us;
    assert!(
        (q.mean_us - expected_us).abs() <= 0.03 * expected_us,
        "mean {} us, depth / rate {expected_us:.2} us\n{t}",
        q.mean_us
    );
    // Percentiles are their bucket's low end: at most an eighth below, never above the max.
    for p in [q.p50_us, q.p99_us] {
        assert!(
            p <= q.max_us && p >= 0.85 * expected_us,
            "{p} against {expected_us}\n{t}"
        );
    }
    let counted: u64 = q.histogram.iter().map(|b| b.packets).sum();
    assert_eq!(counted, q.packets);
    assert!(q.histogram.iter().all(|b| b.to_us > b.from_us));
    // The text lists the queues with the longest p99 first: this one.
    let first = t
        .lines()
        .skip_while(|l| !l.starts_with("queue delay by egress"))
        .nth(1)
        .unwrap_or_default();
    assert!(first.trim_start().starts_with("sw0:16 "), "{t}");
    let rows = t.lines().filter(|l| l.contains("  packets ")).count();
    assert!(rows <= TEXT_ROWS, "{t}");
}
