//! The CNP delay (a CE mark to the CNP at the reaction point) agrees with the path it takes.
//! Marked at dequeue, a mark has no queue left to wait in: the shortest delay is the marked
//! frame's serialization and flight to the receiver, then the CNP's serialization and flight
//! back through the switch, and nothing more. Marked at enqueue on a standing queue, it also
//! waits that queue.

use roce_fabric::experiment::scenario::Scenario;
use roce_fabric::experiment::summary::RunSummary;
use roce_fabric::switching::sojourn::DelayStats;

const DELAY_NS: f64 = 1000.0;

/// An 8:1 incast at 100 Gbit/s under dcqcn-mlx, marked at `ecn_at`.
fn incast(ecn_at: &str) -> RunSummary {
    let text = format!(
        r#"
        name = "cnp-delay"
        seed = 1
        duration_us = 1500
        warmup_us = 500
        cc = "dcqcn-mlx"
        topology = {{ kind = "star", hosts = 9, link = {{ gbps = 100, delay_ns = {DELAY_NS} }} }}
        workloads = [{{ kind = "incast", senders = [0, 1, 2, 3, 4, 5, 6, 7], receiver = 8 }}]
        [switch]
        buffer_bytes = 12000000
        queue_limit_bytes = 4000000
        lossless = [3]
        ecn = {{ kmin_bytes = 5000, kmax_bytes = 200000, pmax = 0.2 }}
        ecn_at = "{ecn_at}"
        "#
    );
    let s = Scenario::from_toml(&text).expect("scenario parses");
    s.run(|_| {}).expect("runs").0
}

/// Nanoseconds a frame of `len` bytes (without FCS) takes at 100 Gbit/s, with its preamble,
/// gap and FCS.
fn ser_ns(len: f64) -> f64 {
    (len + 24.0) * 8.0 / 100.0
}

fn cnp_delay(sum: &RunSummary) -> &DelayStats {
    let t = sum.table();
    println!("{t}");
    let d = sum
        .cnp_delay
        .as_ref()
        .unwrap_or_else(|| panic!("no CNP delay\n{t}"));
    assert!(d.packets > 50, "CNPs answered marks\n{t}");
    assert!(d.packets <= sum.cnp_handled, "{t}");
    let counted: u64 = d.histogram.iter().map(|b| b.packets).sum();
    assert_eq!(counted, d.packets);
    assert!(
        t.contains("cnp delay (CE mark to reaction point, us): cnps "),
        "{t}"
    );
    d
}

#[test]
fn marked_at_dequeue_the_shortest_cnp_delay_is_the_path_there_and_back() {
    let sum = incast("dequeue");
    let d = cnp_delay(&sum);
    // A full data frame (1024 B of payload and 58 of headers) to the receiver; a CNP (74 B)
    // to the switch and on to the sender: three link delays.
    let path_ns = ser_ns(1082.0) + 2.0 * ser_ns(74.0) + 3.0 * DELAY_NS;
    // Nothing arrives sooner than its path allows; none waits longer than a few small frames
    // ahead of it at a NIC (an ACK is 62 B).
    let slack_ns = 3.0 * ser_ns(62.0);
    let (mean, max) = (d.mean_us * 1e3, d.max_us * 1e3);
    assert!(
        path_ns - 1.0 <= mean && mean <= max && max <= path_ns + slack_ns,
        "mean {mean} ns, max {max} ns, path {path_ns} ns\n{}",
        sum.table()
    );
    let first = &d.histogram[0];
    assert!(
        first.from_us * 1e3 <= path_ns && path_ns < first.to_us * 1e3,
        "shortest bucket {first:?}, path {path_ns} ns"
    );
}

#[test]
fn marked_at_enqueue_the_cnp_delay_also_waits_the_queue() {
    let (deq, enq) = (incast("dequeue"), incast("enqueue"));
    let (deq_d, enq_d) = (cnp_delay(&deq), cnp_delay(&enq));
    let queue = enq
        .queue_delay
        .iter()
        .find(|q| q.node == "sw0" && q.port == 8 && q.priority == 3)
        .map(|q| &q.delay)
        .unwrap_or_else(|| panic!("no bottleneck queue\n{}", enq.table()));
    assert!(queue.p50_us > 1.0, "a standing queue\n{}", enq.table());
    // Marked at enqueue, a CNP's delay holds the marked packet's wait in the queue too (RED
    // marks deeper queues more often, so more than the mean wait), and no more than the
    // longest wait and the path.
    let why = format!(
        "enqueue {enq_d:?}\ndequeue {deq_d:?}\nqueue {queue:?}\n{}",
        enq.table()
    );
    assert!(enq_d.mean_us >= deq_d.max_us + queue.mean_us, "{why}");
    assert!(enq_d.max_us <= queue.max_us + deq_d.max_us + 1.0, "{why}");
}
