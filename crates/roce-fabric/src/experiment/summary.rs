//! The summary of a run: per-flow goodput and completion time, Jain's fairness, bottleneck queue
//! statistics, the fabric's counters (ECN marks, CNPs, PFC frames, drops, events), and the FCT
//! and collective reports of the flows that finished.
//!
//! Read from a finished fabric; serialized as the `--json` output and the snapshot tables.

use serde::{Deserialize, Serialize};

use super::outage::Outage;
use super::pfc_pauses::{self, PfcPause};
use super::pfc_storms::{self, DeadlockReport, WatchdogRow};
use super::queue_delay::{self, QueueDelay};
use super::warning::{Warning, WarningKind};
use crate::engines::{Recovery, ScenarioEngine};
use crate::flows::collective::{CollectivePlan, CollectiveReport};
use crate::flows::fct::{FctReport, Finished, Paths};
use crate::net::ecmp::{EcmpLoad, RailLoad};
use crate::net::fabric::Fabric;
use crate::net::spray::Reordering;
use crate::net::topology::Topology;
use crate::record::telemetry::{BufferTelemetry, HostTelemetry, PortTelemetry};
use crate::switching::port::WIRE_OVERHEAD;
use crate::switching::sched::ClassShare;
use crate::switching::sojourn::DelayStats;
use crate::switching::stats::PrioCounters;
use crate::{HostId, Node};
use roce_proto::cc::CcConfig;
use roce_proto::time::{Duration, Instant};

/// A flow that has moved no payload for this long (and for half the measurement window) is
/// stalled: longer than any PFC pause storm or RC retransmission timeout of the scenarios.
const STALL: Duration = Duration::from_micros(100);

/// How a flow ended up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowState {
    /// A finite flow that delivered every byte.
    Done,
    /// A flow without an end that was still moving payload.
    #[default]
    Running,
    /// A finite flow still moving payload when the run ended.
    Unfinished,
    /// Not done and no payload for a while (see `error` for a cause, if the transport gave one).
    Stalled,
    /// Its transport failed (a QP in the error state, an error completion).
    Failed,
}

impl FlowState {
    /// Stalled and failed flows make a run fail.
    pub fn is_failure(self) -> bool {
        matches!(self, FlowState::Stalled | FlowState::Failed)
    }

    /// The name the JSON uses.
    pub fn name(self) -> &'static str {
        match self {
            FlowState::Done => "done",
            FlowState::Running => "running",
            FlowState::Unfinished => "unfinished",
            FlowState::Stalled => "stalled",
            FlowState::Failed => "failed",
        }
    }
}

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
    /// How the flow ended up.
    #[serde(default)]
    pub state: FlowState,
    /// Why it failed, as the transport says (first error completion, QP state).
    #[serde(default)]
    pub error: Option<String>,
    /// How its sender recovered losses (retransmitted packets, NAKs received, ACK timeouts).
    #[serde(flatten)]
    pub recovery: Recovery,
}

/// A run's summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Scenario name.
    pub name: String,
    /// Seed (replay with `--seed`).
    pub seed: u64,
    /// The senders' congestion control and the parameters the scenario set on it, as
    /// [`cc_label`] writes them (`dcqcn-mlx`, `dcqcn-mlx (rpg_ai_rate=10)`, `none`).
    #[serde(default)]
    pub cc: String,
    /// Whether the figures describe the controller settled: no [`Warning`] was raised.
    #[serde(default)]
    pub settled: bool,
    /// Why the figures may not describe the controller settled (`warning: ...` lines in the
    /// text): a measurement that opens before its settle time, goodput still moving, flows
    /// still running or PFC still active at the end, a CNP interval the scenario overrode, a
    /// PFC storm or deadlock.
    #[serde(default)]
    pub warnings: Vec<Warning>,
    /// Virtual run time, µs.
    pub duration_us: f64,
    /// Jain's fairness index over flow goodputs (1 = perfectly fair); 0 when no flow moved any
    /// payload, where the index is undefined (the text says "undefined").
    pub jain_fairness: f64,
    /// Payload the flows delivered after warm-up over the measurement window, Gbit/s: for flows
    /// that run through the window the sum of their goodputs; a flow that finishes counts the
    /// bytes it delivered in the window, not its own rate (summing the rates of short flows
    /// that never overlapped would add up to more than the fabric carried).
    #[serde(default)]
    pub total_goodput_gbps: f64,
    /// Wire bytes (headers, preamble, gap and FCS included) the bottleneck egress sent after
    /// warm-up over what its line rate allows, 0..=1 (0 without a bottleneck).
    #[serde(default)]
    pub bottleneck_utilisation: f64,
    /// Retransmitted packets, NAKs and ACK timeouts over all flows.
    #[serde(flatten)]
    pub recovery: Recovery,
    /// QPs (senders and receivers, all hosts) in the error state at the end.
    #[serde(default)]
    pub qp_errors: u64,
    /// Flows that failed or stalled.
    #[serde(default)]
    pub failed_flows: usize,
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
    /// Events processed, counting the transmitter wake-ups left unscheduled because they had
    /// nothing to do (the count a run scheduling every event has).
    pub events: u64,
    /// Of `events`, those left unscheduled (not in the JSON: `events` minus it is the work done).
    #[serde(skip)]
    pub events_elided: u64,
    /// Per-iteration (step) times of each collective, µs.
    pub allreduce_iter_us: Vec<Vec<f64>>,
    /// Each collective's step and communication times against the idle fabric's (set by the
    /// scenario runner, which knows the paths).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collectives: Vec<CollectiveReport>,
    /// Flows.
    pub flows: Vec<FlowResult>,
    /// Flow completion times, ideal FCTs and slowdown per size bin of the finished finite
    /// flows (set by the scenario runner, which knows the paths).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fct: Option<FctReport>,
    /// What the scenario's failures did (runs with failures only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage: Option<Outage>,
    /// How the switches spread flows over equal-cost next hops (fabrics with ECMP only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecmp: Option<EcmpLoad>,
    /// The receivers' sequence counters (runs with adaptive routing or spraying only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reordering: Option<Reordering>,
    /// What each rail carried (topologies with rails only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rails: Option<RailLoad>,
    /// What each class sent through the bottleneck after warm-up (with ETS weights only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<Vec<ClassShare>>,
    /// Per switch egress queue that forwarded a packet: how long packets waited in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queue_delay: Vec<QueueDelay>,
    /// How long CNPs took after warm-up, from the CE mark they answer to the reaction point
    /// (see [`crate::record::cnp_delay`]); none without CNPs that answered a mark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cnp_delay: Option<DelayStats>,
    /// Per port and priority that sent or received a PFC pause: frames and time held.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pfc: Vec<PfcPause>,
    /// Per switch port and priority whose PFC watchdog detected a storm or dropped a packet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pfc_watchdog: Vec<WatchdogRow>,
    /// The first PFC deadlock (a cycle of lossless queues pausing each other) the run saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pfc_deadlock: Option<DeadlockReport>,
    /// Per port and priority that saw traffic: queue depth, drops by reason, PFC, ECN marks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<PortTelemetry>,
    /// Per host: CNPs, retransmissions, timeouts, NAKs, QP errors, pauses received.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostTelemetry>,
    /// Per switch whose shared buffer held anything: its sampled occupancy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buffers: Vec<BufferTelemetry>,
}

/// When each iteration of a collective among `members` ended: the slowest member's mark, for
/// the iterations every member completed.
pub fn iteration_ends(f: &Fabric<ScenarioEngine>, members: &[usize]) -> Vec<Instant> {
    let marks: Vec<&[_]> = members
        .iter()
        .filter_map(|&m| f.engine(HostId(m)).map(|e| e.marks()))
        .collect();
    let iters = marks.iter().map(|m| m.len()).min().unwrap_or(0);
    (0..iters)
        .map(|i| {
            marks
                .iter()
                .filter_map(|m| m.get(i).copied())
                .max()
                .unwrap_or(Instant::ZERO)
        })
        .collect()
}

/// Step and communication times of each of `collectives` run on `f` against the idle
/// fabric's (`topology`, packets of `mtu` payload bytes).
pub fn collective_reports(
    f: &Fabric<ScenarioEngine>,
    collectives: &[CollectivePlan],
    topology: &Topology,
    mtu: usize,
) -> Vec<CollectiveReport> {
    let paths = Paths::new(topology);
    collectives
        .iter()
        .map(|c| {
            let ends = iteration_ends(f, &c.collective.hosts);
            CollectiveReport::new(c, &ends, c.idle_comm(&paths, mtu))
        })
        .collect()
}

/// FCTs of the finished finite flows of `f` (`flows` are their results, in the same order)
/// on `topology`, `None` when there are none.
pub fn fct_report(
    f: &Fabric<ScenarioEngine>,
    flows: &[FlowResult],
    topology: &Topology,
    mtu: usize,
    message_bytes: u64,
) -> Option<FctReport> {
    let finished: Vec<Finished> = f
        .flow_meter
        .specs
        .iter()
        .zip(flows)
        .filter_map(|(spec, r)| {
            Some(Finished {
                flow: r.id,
                src: spec.src_host,
                dst: spec.dst_host,
                size: spec.size_bytes?,
                start_ns: spec.start_ns,
                fct_ns: Duration::from_micros_f64_rounded(r.completion_us?).as_nanos(),
            })
        })
        .collect();
    (!finished.is_empty()).then(|| FctReport::new(topology, &finished, mtu, message_bytes))
}

/// How a summary names a scenario's congestion control: its name, then the parameters the
/// scenario set (`cc_params`, as given), if any.
pub fn cc_label(cc: &str, params: &[String]) -> String {
    if params.is_empty() {
        cc.to_owned()
    } else {
        format!("{cc} ({})", params.join(", "))
    }
}

/// Jain's fairness index of `x`: (Σx)² / (n Σx²). Undefined for an empty or all-zero input
/// (nobody got anything, which is not fairness): 0 then, so such a run never looks fair.
pub fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    if sq == 0.0 {
        0.0
    } else {
        sum * sum / (x.len() as f64 * sq)
    }
}

impl RunSummary {
    /// Reads the summary of a finished run named `name` (seeded with `seed`, measured after
    /// `warm`) from its fabric `f` and its `collectives`. `bottleneck` is the monitored
    /// egress with its counters when the measurement window opened.
    pub fn collect(
        name: &str,
        seed: u64,
        warm: Instant,
        f: &Fabric<ScenarioEngine>,
        collectives: &[CollectivePlan],
        bottleneck: Option<(Node, u16, PrioCounters)>,
    ) -> RunSummary {
        let end = f.now();
        let measured = end - warm;
        let window = measured.max(Duration::NANOSECOND).as_secs_f64();
        let meter = &f.flow_meter;
        let flows: Vec<FlowResult> = meter
            .specs
            .iter()
            .zip(&meter.progress)
            .enumerate()
            .map(|(id, (spec, p))| {
                // The sender's own completion (RC work completions) beats the flow meter's count.
                let done = f
                    .engine(HostId(spec.src_host))
                    .and_then(|e| e.completed_at(spec.src_index))
                    .or(p.completed_at());
                let start = spec.start();
                let completion = done.map(|c| c - start);
                let goodput = match (spec.size_bytes, completion) {
                    // Bits per nanosecond: Gbit/s.
                    (Some(size), Some(c)) => size as f64 * 8.0 / c.as_nanos().max(1) as f64,
                    _ => p.bytes_since_warmup() as f64 * 8.0 / window / 1e9,
                };
                let transport = f
                    .engine(HostId(spec.src_host))
                    .map(|e| e.flow_transport(spec.src_index))
                    .unwrap_or_default();
                let idle_since = p.last_at().unwrap_or(start).max(start);
                let stall = STALL.max(measured / 2);
                let state = if done.is_some() {
                    FlowState::Done
                } else if transport.error.is_some() {
                    FlowState::Failed
                } else if start < end && end - idle_since > stall {
                    FlowState::Stalled
                } else if spec.size_bytes.is_some() {
                    FlowState::Unfinished
                } else {
                    FlowState::Running
                };
                FlowResult {
                    id,
                    name: spec.name.clone(),
                    goodput_gbps: goodput,
                    completion_us: completion.map(Duration::as_micros_f64),
                    bytes: p.bytes(),
                    state,
                    error: transport.error,
                    recovery: transport.recovery,
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
            f.recorder().map_or((0.0, 0), |r| r.queue_stats(0, warm));
        let allreduce_iter_us = collectives
            .iter()
            .map(|c| {
                let mut prev = Instant::ZERO;
                iteration_ends(f, &c.collective.hosts)
                    .into_iter()
                    .map(|done| {
                        let d = done - prev;
                        prev = done;
                        d.as_micros_f64()
                    })
                    .collect()
            })
            .collect();
        let bottleneck_utilisation = bottleneck.map_or(0.0, |(node, port, at_warm)| {
            let now = f.port_counters(node, port).total();
            let rate = f.port_rate_bps(node, port).unwrap_or(0) as f64;
            let packets = now.tx_packets.saturating_sub(at_warm.tx_packets);
            // Counters hold frames without preamble, gap and FCS; the wire carries those too.
            let bytes = now.tx_bytes.saturating_sub(at_warm.tx_bytes) + packets * WIRE_OVERHEAD;
            if rate > 0.0 {
                bytes as f64 * 8.0 / (rate * window)
            } else {
                0.0
            }
        });
        let goodputs: Vec<f64> = flows.iter().map(|f| f.goodput_gbps).collect();
        let delivered_gbps: f64 = meter
            .progress
            .iter()
            .map(|p| p.bytes_since_warmup() as f64 * 8.0 / window / 1e9)
            .sum();
        let qp_errors = (0..f.host_count())
            .filter_map(|h| f.engine(HostId(h)))
            .map(ScenarioEngine::qp_errors)
            .sum();
        RunSummary {
            name: name.to_owned(),
            seed,
            cc: String::new(),
            settled: true,
            warnings: Vec::new(),
            duration_us: end.saturating_since(Instant::ZERO).as_micros_f64(),
            jain_fairness: jain(&goodputs),
            total_goodput_gbps: delivered_gbps,
            bottleneck_utilisation,
            recovery: flows.iter().map(|f| f.recovery).sum(),
            qp_errors,
            failed_flows: flows.iter().filter(|f| f.state.is_failure()).count(),
            queue_mean_bytes,
            queue_p99_bytes,
            ecn_marked: sw.ecn_marked,
            cnp_sent: meter.cnp_sent,
            cnp_handled: meter.cnp_received,
            pfc_pause_frames: sw.pause_sent,
            host_pause_frames: hosts.pause_received,
            host_paused_us: hosts.pause_ns as f64 / 1e3,
            drops: sw.drops + hosts.drops,
            events: f.events(),
            events_elided: f.events_elided(),
            allreduce_iter_us,
            collectives: Vec::new(),
            flows,
            fct: None,
            outage: None,
            ecmp: None,
            reordering: None,
            rails: None,
            classes: None,
            pfc: pfc_pauses::collect(f),
            pfc_watchdog: pfc_storms::collect(f),
            pfc_deadlock: pfc_storms::deadlock(f),
            queue_delay: queue_delay::collect(f),
            cnp_delay: f.cnp_delays().map(|d| d.stats()),
            ports: Vec::new(),
            hosts: Vec::new(),
            buffers: Vec::new(),
        }
    }

    /// Names the congestion control `cfg` ("none" without one) with the parameters the
    /// scenario set ([`cc_label`]), and notes a scenario CNP interval (`cnp_us`) that overrides
    /// the one the controller was designed with (DCQCN's fluid model and DCTCP's marking
    /// assume theirs).
    pub fn describe_cc(&mut self, cfg: Option<&CcConfig>, params: &[String], cnp_us: Option<f64>) {
        let cc = cfg.map_or("none", CcConfig::name);
        self.cc = cc_label(cc, params);
        if let (Some(us), Some(cfg)) = (cnp_us, cfg) {
            let designed = cfg.cnp_interval().as_micros_f64();
            if (us - designed).abs() > 1e-9 {
                self.warn(Warning {
                    kind: WarningKind::CnpOverride,
                    message: format!(
                        "cnp_interval_us = {us} overrides {cc}'s designed CNP interval of {designed} us"
                    ),
                });
            }
        }
    }

    /// Adds `w` to the warnings: the figures no longer count as settled.
    pub fn warn(&mut self, w: Warning) {
        self.warnings.push(w);
        self.settled = false;
    }

    /// A fixed-width table for humans and snapshot tests (floats rounded for stability).
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "scenario {} seed {} duration {:.1} us  cc {}",
            self.name, self.seed, self.duration_us, self.cc
        );
        let jain = if self.flows.iter().any(|f| f.goodput_gbps > 0.0) {
            format!("{:.4}", self.jain_fairness)
        } else {
            "undefined (no flow moved)".to_owned()
        };
        let _ = writeln!(
            s,
            "jain {jain}  queue mean {:.0} B p99 {} B  ecn {}  cnp {}/{}  pfc {} (hosts got {}, paused {:.1} us)  drops {}  events {}",
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
            if v.is_empty() {
                let _ = writeln!(s, "allreduce {i}: no iteration completed in the run");
            } else {
                let _ = writeln!(s, "allreduce {i} iterations us: {}", v.join(" "));
            }
        }
        s.push_str(&queue_delay::lines(&self.queue_delay));
        if let Some(d) = &self.cnp_delay {
            let _ = writeln!(
                s,
                "cnp delay (CE mark to reaction point, us): cnps {}  mean {:.2}  p50 {:.2}  p99 {:.2}  max {:.2}",
                d.packets, d.mean_us, d.p50_us, d.p99_us, d.max_us
            );
        }
        s.push_str(&pfc_pauses::lines(&self.pfc));
        s.push_str(&pfc_storms::lines(
            &self.pfc_watchdog,
            self.pfc_deadlock.as_ref(),
        ));
        s.push_str(&BufferTelemetry::lines(
            &self.buffers,
            queue_delay::TEXT_ROWS,
        ));
        for f in &self.flows {
            // A flow's state, and when it finished if it did (a running flow has no time).
            let done = f
                .completion_us
                .map_or(String::new(), |c| format!("{c:.1} us"));
            let _ = writeln!(
                s,
                "flow {:>3} {:<16} {:>8.3} Gbit/s  {:<10} {:>13}  {} B",
                f.id,
                f.name,
                f.goodput_gbps,
                f.state.name(),
                done,
                f.bytes
            );
        }
        let _ = writeln!(
            s,
            "total {:.3} Gbit/s  bottleneck utilisation {:.1}%  retransmitted {}  naks {}  timeouts {}  qp_errors {}",
            self.total_goodput_gbps,
            self.bottleneck_utilisation * 100.0,
            self.recovery.retransmitted,
            self.recovery.naks,
            self.recovery.timeouts,
            self.qp_errors
        );
        let mut states: Vec<String> = Vec::new();
        for st in [
            FlowState::Done,
            FlowState::Running,
            FlowState::Unfinished,
            FlowState::Stalled,
            FlowState::Failed,
        ] {
            let n = self.flows.iter().filter(|f| f.state == st).count();
            if n > 0 {
                states.push(format!("{n} {}", st.name()));
            }
        }
        let _ = writeln!(s, "flows {}: {}", self.flows.len(), states.join(", "));
        for f in self
            .flows
            .iter()
            .filter(|f| f.state != FlowState::Done && f.state != FlowState::Running)
        {
            let why = match (&f.error, f.state) {
                (Some(e), _) => e.as_str(),
                (None, FlowState::Unfinished) => "still moving when the run ended",
                (None, _) => "no payload delivered for a while, no error reported",
            };
            let _ = writeln!(s, "flow {:>3} {} {}: {why}", f.id, f.name, f.state.name());
        }
        if let Some(o) = &self.outage {
            s.push_str(&o.lines());
        }
        if let Some(e) = &self.ecmp {
            s.push_str(&e.lines());
        }
        if let Some(r) = &self.reordering {
            s.push_str(&r.line());
        }
        if let Some(r) = &self.rails {
            s.push_str(&r.line());
        }
        if let Some(c) = &self.classes {
            s.push_str(&crate::switching::sched::shares_line(c));
        }
        for w in &self.warnings {
            let _ = writeln!(s, "warning: {}", w.message);
        }
        s
    }

    /// The flows that failed or stalled (a run with any is a failed run).
    pub fn failures(&self) -> impl Iterator<Item = &FlowResult> {
        self.flows.iter().filter(|f| f.state.is_failure())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_when_equal_lower_when_not_and_zero_when_nothing_moved() {
        assert_eq!(jain(&[3.0, 3.0, 3.0]), 1.0);
        assert_eq!(jain(&[1.0, 0.0]), 0.5);
        assert_eq!(jain(&[0.0, 0.0]), 0.0);
        assert_eq!(jain(&[]), 0.0);
    }

    #[test]
    fn the_controller_is_named_with_the_parameters_the_scenario_set() {
        assert_eq!(cc_label("dcqcn-mlx", &[]), "dcqcn-mlx");
        let set = ["rpg_ai_rate=10".to_owned(), "rpg_time_reset=100".to_owned()];
        assert_eq!(
            cc_label("dcqcn-mlx", &set),
            "dcqcn-mlx (rpg_ai_rate=10, rpg_time_reset=100)"
        );
    }
}
