//! How long packets waited in each switch egress queue (sojourn time, enqueue to dequeue) after
//! warm-up: per port and priority that forwarded anything, the mean, p50, p99 and maximum in
//! µs and the histogram, as the summary's `queue_delay` (the text lists the longest p99s).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::engines::ScenarioEngine;
use crate::net::fabric::Fabric;
use crate::switching::sojourn::SojournBucket;
use roce_proto::wire::pfc::PRIORITIES;

/// The text summary lists the queues with the longest p99; the JSON has them all.
pub const TEXT_ROWS: usize = 8;

/// The sojourn times of one egress queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueueDelay {
    /// The switch.
    pub node: String,
    /// The egress port.
    pub port: u16,
    /// The priority.
    pub priority: usize,
    /// Packets that left the queue.
    pub packets: u64,
    /// Mean wait, µs.
    pub mean_us: f64,
    /// Median wait, µs (the low end of its histogram bucket: at most 12.5 % below).
    pub p50_us: f64,
    /// 99th percentile, µs (the same).
    pub p99_us: f64,
    /// Longest wait, µs.
    pub max_us: f64,
    /// The non-empty buckets of the histogram.
    pub histogram: Vec<SojournBucket>,
}

/// Every switch egress queue of `f` that forwarded a packet.
pub fn collect(f: &Fabric<ScenarioEngine>) -> Vec<QueueDelay> {
    let mut out = Vec::new();
    for (s, port) in f.switch_ports() {
        for priority in 0..PRIORITIES {
            let Some(q) = f.sojourn(s, port, priority) else {
                continue;
            };
            out.push(QueueDelay {
                node: f.switch_name(s).to_owned(),
                port,
                priority,
                packets: q.packets(),
                mean_us: q.mean().as_micros_f64(),
                p50_us: q.quantile(0.5).as_micros_f64(),
                p99_us: q.quantile(0.99).as_micros_f64(),
                max_us: q.max().as_micros_f64(),
                histogram: q.buckets(),
            });
        }
    }
    out
}

/// The summary's lines: the [`TEXT_ROWS`] queues with the longest p99.
pub fn lines(queues: &[QueueDelay]) -> String {
    let mut s = String::new();
    let mut order: Vec<&QueueDelay> = queues.iter().filter(|q| q.max_us > 0.0).collect();
    if order.is_empty() {
        return s;
    }
    order.sort_by(|a, b| {
        b.p99_us
            .total_cmp(&a.p99_us)
            .then(b.max_us.total_cmp(&a.max_us))
    });
    let _ = writeln!(s, "queue delay by egress and priority (sojourn, us):");
    for q in order.iter().take(TEXT_ROWS) {
        let _ = writeln!(
            s,
            "  {:<14} prio {}  packets {:>8}  mean {:>8.2}  p50 {:>8.2}  p99 {:>8.2}  max {:>8.2}",
            format!("{}:{}", q.node, q.port),
            q.priority,
            q.packets,
            q.mean_us,
            q.p50_us,
            q.p99_us,
            q.max_us
        );
    }
    if order.len() > TEXT_ROWS {
        let _ = writeln!(s, "  ... {} more (--json)", order.len() - TEXT_ROWS);
    }
    s
}

/// The histograms as CSV, one line per non-empty bucket:
/// `node,port,priority,from_us,to_us,packets`.
pub fn csv(queues: &[QueueDelay]) -> String {
    let mut s = String::from("node,port,priority,from_us,to_us,packets\n");
    for q in queues {
        for b in &q.histogram {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{}",
                q.node, q.port, q.priority, b.from_us, b.to_us, b.packets
            );
        }
    }
    s
}
