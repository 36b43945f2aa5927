//! Shared-buffer occupancy over time: a switch's buffer holds what its egress queues hold, so
//! its sampled mean is the sum of its queues' sampled means and its largest sample at least
//! any queue's; the text names the fullest switch.

use roce_fabric::experiment::scenario::Scenario;
use roce_testkit::fixtures;

#[test]
fn a_switch_buffer_holds_the_sum_of_its_queues() {
    let text = std::fs::read_to_string(format!("{}/incast.toml", fixtures::SCENARIOS)).unwrap();
    let s = Scenario::from_toml(&text).unwrap();
    let (sum, built) = s.run(|_| {}).unwrap();
    let t = sum.table();
    assert_eq!(sum.buffers.len(), 1, "{t}");
    let b = &sum.buffers[0];
    assert_eq!((b.node.as_str(), b.buffer_bytes), ("sw0", 12 << 20), "{t}");
    let queues = sum.ports.iter().filter(|p| p.node == "sw0");
    let mean: f64 = queues.clone().map(|p| p.queue_mean_bytes).sum();
    assert!(mean > 100_000.0, "a standing queue\n{t}");
    assert!(
        (b.mean_bytes - mean).abs() < 1e-6 * mean,
        "{b:?} against {mean}\n{t}"
    );
    assert!(
        queues.clone().all(|p| p.queue_p99_bytes <= b.max_bytes),
        "{t}"
    );
    assert!(b.max_bytes <= b.buffer_bytes);
    assert!(
        t.contains("shared buffer by switch (sampled occupancy):\n  sw0 "),
        "{t}"
    );
    // Per bin, the same: the buffer's bin means are the sum of the queues' bin means.
    let rec = built.fabric.recorder().unwrap();
    let tel = rec.telemetry.as_ref().unwrap();
    let series: Vec<_> = tel.series().collect();
    for bin in &tel.bins {
        let q: f64 = (series.iter().zip(&bin.queue))
            .filter(|((node, _, _), _)| *node == "sw0")
            .map(|(_, (m, _))| m)
            .sum();
        let (m, max) = bin.buffer[0];
        assert!(
            (m - q).abs() <= 1e-6 * q.max(1.0),
            "bin {:?}: {m} against {q}",
            bin.end
        );
        assert!(max <= b.max_bytes);
    }
}
