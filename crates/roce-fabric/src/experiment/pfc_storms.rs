//! PFC storms and deadlocks in a run's summary: per switch port and priority what its PFC
//! watchdog did (storms detected and restored, packets dropped: `pfcwd show stats`), and the
//! first cycle of lossless queues waiting on each other that the run saw (see
//! [`crate::net::deadlock`]), with the warnings that say so.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::warning::{Warning, WarningKind};
use crate::engines::ScenarioEngine;
use crate::net::deadlock::DeadlockCycle;
use crate::net::fabric::Fabric;
use crate::Node;
use roce_proto::time::Instant;

/// What one switch port's watchdog did on one priority.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WatchdogRow {
    /// The switch.
    pub node: String,
    /// The egress port.
    pub port: u16,
    /// The priority.
    pub priority: usize,
    /// Storms detected (SONiC `STORM DETECTED`).
    pub storms: u64,
    /// Storms restored (SONiC `STORM RESTORED`).
    pub restored: u64,
    /// Packets the watchdog dropped: queued when the storm was detected, bound for the port or
    /// arriving on it while it lasted (SONiC `TX DROP` and `RX DROP`).
    pub dropped: u64,
}

/// A PFC deadlock the run saw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeadlockReport {
    /// When it was first seen (at a time-series sample, or at the end), µs.
    pub first_seen_us: f64,
    /// The priority of its queues.
    pub priority: usize,
    /// Its egress queues as `switch:port`, each paused by the next; the first again at the end.
    pub cycle: Vec<String>,
    /// Whether a cycle still stood when the run ended (a watchdog breaks them).
    pub standing_at_end: bool,
}

impl DeadlockReport {
    /// The cycle as one line: `sw0:2 -> sw1:1 -> sw0:2`.
    pub fn path(&self) -> String {
        self.cycle.join(" -> ")
    }
}

/// Every switch port and priority of `f` whose watchdog detected a storm or dropped a packet.
pub fn collect(f: &Fabric<ScenarioEngine>) -> Vec<WatchdogRow> {
    let mut out = Vec::new();
    for (s, port) in f.switch_ports() {
        let c = f.port_counters(Node::Switch(s), port);
        for (priority, p) in c.prio.iter().enumerate() {
            if p.pfc_wd_storms > 0 || p.dropped.pfc_watchdog > 0 {
                out.push(WatchdogRow {
                    node: f.switch_name(s).to_owned(),
                    port,
                    priority,
                    storms: p.pfc_wd_storms,
                    restored: p.pfc_wd_restored,
                    dropped: p.dropped.pfc_watchdog,
                });
            }
        }
    }
    out
}

/// The deadlock `f` saw: the first its samples met, or one standing at the end.
pub fn deadlock(f: &Fabric<ScenarioEngine>) -> Option<DeadlockReport> {
    let now = f.find_pfc_deadlock();
    let (at, cycle) = match (f.pfc_deadlock(), &now) {
        (Some((t, c)), _) => (t, c),
        (None, Some(c)) => (f.now(), c),
        (None, None) => return None,
    };
    Some(DeadlockReport {
        first_seen_us: at.saturating_since(Instant::ZERO).as_micros_f64(),
        priority: cycle.prio,
        cycle: names(f, cycle),
        standing_at_end: now.is_some(),
    })
}

/// `switch:port` of each queue of `c`, the first again at the end.
fn names(f: &Fabric<ScenarioEngine>, c: &DeadlockCycle) -> Vec<String> {
    let name = |&(s, p): &(crate::SwitchId, u16)| format!("{}:{p}", f.switch_name(s));
    let mut v: Vec<String> = c.queues.iter().map(name).collect();
    if let Some(first) = v.first().cloned() {
        v.push(first);
    }
    v
}

/// The summary's lines: each port the watchdog acted on, and the deadlock.
pub fn lines(rows: &[WatchdogRow], deadlock: Option<&DeadlockReport>) -> String {
    let mut s = String::new();
    if !rows.is_empty() {
        let _ = writeln!(
            s,
            "pfc watchdog by port and priority (storms detected, restored, packets dropped):"
        );
        for r in rows {
            let at = format!("{}:{}", r.node, r.port);
            let _ = writeln!(
                s,
                "  {at:<14} prio {}  storms {:>4}  restored {:>4}  dropped {:>8}",
                r.priority, r.storms, r.restored, r.dropped
            );
        }
    }
    if let Some(d) = deadlock {
        let _ = writeln!(
            s,
            "pfc deadlock on priority {}: {} (first seen at {:.1} us, {})",
            d.priority,
            d.path(),
            d.first_seen_us,
            if d.standing_at_end {
                "still standing at the end"
            } else {
                "broken before the end"
            }
        );
    }
    s
}

/// The warnings of a run with PFC storms or a deadlock.
pub fn warnings(rows: &[WatchdogRow], deadlock: Option<&DeadlockReport>) -> Vec<Warning> {
    let mut out = Vec::new();
    let storms: u64 = rows.iter().map(|r| r.storms).sum();
    if let Some(first) = rows.iter().find(|r| r.storms > 0) {
        let dropped: u64 = rows.iter().map(|r| r.dropped).sum();
        out.push(Warning::new(
            WarningKind::PfcStorm,
            format!(
                "the PFC watchdog detected {storms} storms (first: {}:{} priority {}) and dropped {dropped} packets: a lossless queue stayed paused with packets for longer than detect_us",
                first.node, first.port, first.priority
            ),
        ));
    }
    if let Some(d) = deadlock {
        out.push(Warning::new(
            WarningKind::PfcDeadlock,
            format!(
                "PFC deadlock on priority {}: {} paused each other with packets queued (first seen at {:.1} us){}",
                d.priority,
                d.path(),
                d.first_seen_us,
                if d.standing_at_end {
                    "; it still stood at the end"
                } else {
                    ""
                }
            ),
        ));
    }
    out
}
