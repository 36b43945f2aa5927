//! How long packets waited in each switch egress queue (sojourn time, enqueue to dequeue) after
//! warm-up: per port and priority that forwarded anything, the mean, p50, p99 and maximum in
//! µs and the histogram, as the summary's `queue_delay` (the text lists the longest p99s).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::engines::ScenarioEngine;
use crate::net::fabric::Fabric;
use crate::switching::sojourn::DelayStats;
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
    /// How long its packets waited.
    #[serde(flatten)]
    pub delay: DelayStats,
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
                delay: q.stats(),
            });
        }
    }
    out
}

/// The summary's lines: the [`TEXT_ROWS`] queues with the longest p99.
pub fn lines(queues: &[QueueDelay]) -> String {
    let mut s = String::new();
    let mut order: Vec<&QueueDelay> = queues.iter().filter(|q| q.delay.max_us > 0.0).collect();
    if order.is_empty() {
        return s;
    }
    order.sort_by(|a, b| {
        let (a, b) = (&a.delay, &b.delay);
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
            q.delay.packets,
            q.delay.mean_us,
            q.delay.p50_us,
            q.delay.p99_us,
            q.delay.max_us
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
        for b in &q.delay.histogram {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{}",
                q.node, q.port, q.priority, b.from_us, b.to_us, b.packets
            );
        }
    }
    s
}
