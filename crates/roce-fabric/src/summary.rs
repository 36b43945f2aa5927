//! The summary of a run: per-flow goodput and completion time, Jain's fairness, bottleneck queue
//! statistics and the fabric's counters (ECN marks, CNPs, PFC frames, drops, events).
//!
//! Read from a finished fabric; serialized as the `--json` output and the snapshot tables.

use serde::{Deserialize, Serialize};

use super::engines::ScenarioEngine;
use super::fabric::Fabric;
use super::stats::PrioCounters;
use super::{HostId, Node};

/// One flow's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlowResult {
    /// Flow index.
    pub id: usize,
    /// `src->dst#qpn`.
    pub name: String,
    /// Goodput, Gbit/s: over the measurement window for long flows; size over completion time
    /// for finite flows that completed.
    pub goodput_gbps: f64,
    /// Completion time from the flow's start, µs (finite flows that completed).
    pub completion_us: Option<f64>,
    /// Payload bytes delivered in the whole run.
    pub bytes: u64,
}

/// A run's summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Scenario name.
    pub name: String,
    /// Seed (replay with `--seed`).
    pub seed: u64,
    /// Virtual run time, µs.
    pub duration_us: f64,
    /// Jain's fairness index over flow goodputs (1 = perfectly fair).
    pub jain_fairness: f64,
    /// Mean bytes queued at the bottleneck egress after warm-up (sampled).
    pub queue_mean_bytes: f64,
    /// 99th percentile of the same.
    pub queue_p99_bytes: u64,
    /// Packets marked CE by switches.
    pub ecn_marked: u64,
    /// CNPs sent by hosts.
    pub cnp_sent: u64,
    /// CNPs received by hosts.
    pub cnp_handled: u64,
    /// PFC frames sent by switches.
    pub pfc_pause_frames: u64,
    /// PFC frames received by hosts.
    pub host_pause_frames: u64,
    /// Total time host transmitters were paused, µs.
    pub host_paused_us: f64,
    /// Packets dropped anywhere (buffers, queues, headroom, links).
    pub drops: u64,
    /// Events processed.
    pub events: u64,
    /// Per-iteration times of each ring AllReduce, µs.
    pub allreduce_iter_us: Vec<Vec<f64>>,
    /// Flows.
    pub flows: Vec<FlowResult>,
}

/// Jain's fairness index of `x`: (Σx)² / (n Σx²); 1 for an empty or all-zero input.
pub fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    if sq == 0.0 {
        1.0
    } else {
        sum * sum / (x.len() as f64 * sq)
    }
}

impl Summary {
    /// Reads the summary of a finished run named `name` (seeded with `seed`, measured after
    /// `warm_ns`) from its fabric `f` and its ring AllReduce groups `rings` (members, bytes per
    /// member per iteration).
    pub fn collect(
        name: &str,
        seed: u64,
        warm_ns: u64,
        f: &Fabric<ScenarioEngine>,
        rings: &[(Vec<usize>, u64)],
    ) -> Summary {
        let end_ns = f.now().as_nanos();
        let window = (end_ns.saturating_sub(warm_ns)).max(1) as f64 / 1e9;
        let tap = &f.tap;
        let flows: Vec<FlowResult> = tap
            .specs
            .iter()
            .zip(&tap.progress)
            .enumerate()
            .map(|(id, (spec, p))| {
                // The sender's own completion (RC work completions) beats the tap's count.
                let done = f
                    .engine(HostId(spec.src_host))
                    .and_then(|e| e.completed_at(spec.src_index))
                    .map(|t| t.as_nanos())
                    .or(p.completed_ns);
                let completion_ns = done.map(|c| c.saturating_sub(spec.start_ns));
                let goodput = match (spec.size_bytes, completion_ns) {
                    (Some(size), Some(c)) => size as f64 * 8.0 / c.max(1) as f64,
                    _ => (p.bytes - p.bytes_at_warmup) as f64 * 8.0 / window / 1e9,
                };
                FlowResult {
                    id,
                    name: spec.name.clone(),
                    goodput_gbps: goodput,
                    completion_us: completion_ns.map(|c| c as f64 / 1e3),
                    bytes: p.bytes,
                }
            })
            .collect();
        let mut sw = PrioCounters::default();
        for (s, p) in f.switch_ports() {
            sw.accumulate(&f.port_counters(Node::Switch(s), p).total());
        }
        let mut hosts = PrioCounters::default();
        for h in 0..f.host_count() {
            hosts.accumulate(&f.port_counters(Node::Host(HostId(h)), 0).total());
        }
        let (queue_mean_bytes, queue_p99_bytes) =
            f.recorder().map_or((0.0, 0), |r| r.queue_stats(0, warm_ns));
        let allreduce_iter_us = rings
            .iter()
            .map(|(members, _)| {
                let marks: Vec<&[_]> = members
                    .iter()
                    .filter_map(|&m| f.engine(HostId(m)).map(|e| e.marks()))
                    .collect();
                let iters = marks.iter().map(|m| m.len()).min().unwrap_or(0);
                let mut prev = 0u64;
                (0..iters)
                    .map(|i| {
                        let done = marks
                            .iter()
                            .filter_map(|m| m.get(i))
                            .map(|t| t.as_nanos())
                            .max()
                            .unwrap_or(0);
                        let d = done.saturating_sub(prev);
                        prev = done;
                        d as f64 / 1e3
                    })
                    .collect()
            })
            .collect();
        Summary {
            name: name.to_owned(),
            seed,
            duration_us: end_ns as f64 / 1e3,
            jain_fairness: jain(&flows.iter().map(|f| f.goodput_gbps).collect::<Vec<_>>()),
            queue_mean_bytes,
            queue_p99_bytes,
            ecn_marked: sw.ecn_marked,
            cnp_sent: tap.cnp_sent,
            cnp_handled: tap.cnp_received,
            pfc_pause_frames: sw.pause_sent,
            host_pause_frames: hosts.pause_received,
            host_paused_us: hosts.pause_ns as f64 / 1e3,
            drops: sw.drops + hosts.drops,
            events: f.events(),
            allreduce_iter_us,
            flows,
        }
    }

    /// A fixed-width table for humans and snapshot tests (floats rounded for stability).
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "scenario {} seed {} duration {:.1} us",
            self.name, self.seed, self.duration_us
        );
        let _ = writeln!(
            s,
            "jain {:.4}  queue mean {:.0} B p99 {} B  ecn {}  cnp {}/{}  pfc {} (hosts got {}, paused {:.1} us)  drops {}  events {}",
            self.jain_fairness,
            self.queue_mean_bytes,
            self.queue_p99_bytes,
            self.ecn_marked,
            self.cnp_sent,
            self.cnp_handled,
            self.pfc_pause_frames,
            self.host_pause_frames,
            self.host_paused_us,
            self.drops,
            self.events
        );
        for (i, it) in self.allreduce_iter_us.iter().enumerate() {
            let v: Vec<String> = it.iter().map(|x| format!("{x:.1}")).collect();
            let _ = writeln!(s, "allreduce {i} iterations us: {}", v.join(" "));
        }
        for f in &self.flows {
            let c = f
                .completion_us
                .map_or("-".to_owned(), |c| format!("{c:.1}"));
            let _ = writeln!(
                s,
                "flow {:>3} {:<16} {:>8.3} Gbit/s  done {:>10} us  {} B",
                f.id, f.name, f.goodput_gbps, c, f.bytes
            );
        }
        s
    }
}
