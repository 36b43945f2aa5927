//! A switch's configuration: buffer, queue limits, lossless classes and PFC, ECN marking (and
//! where it happens), ECMP salt and routing mode, INT, scheduling, the PFC watchdog.

use serde::{Deserialize, Serialize};

use super::sched::Scheduling;
use super::thresholds::{EcnThresholds, PfcConfig, RateEcn};
use super::watchdog::PfcWatchdog;
use roce_proto::wire::pfc::PRIORITIES;

/// When a switch decides whether to mark a packet CE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkPoint {
    /// On arrival, from the egress queue depth the packet finds (most merchant ASICs' WRED).
    #[default]
    Enqueue,
    /// On departure, from the depth the packet leaves behind (the DCQCN authors' ns-3 switch):
    /// the mark skips the queueing delay on its way to the receiver.
    Dequeue,
}

/// How a switch picks among the equal-cost egress ports toward a destination.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Routing {
    /// By flow hash (the 5-tuple with the ECMP salt): every packet of a flow takes one path.
    #[default]
    Ecmp,
    /// Per packet, the live member with the fewest bytes queued (all priorities) at the moment
    /// the packet arrives; among equally short queues, the member the flow hash picks, else the
    /// first after it in route order. Packets of one flow may take different paths and arrive
    /// out of order.
    Adaptive,
}

impl Routing {
    /// Whether this is the default, [`Routing::Ecmp`].
    pub fn is_ecmp(&self) -> bool {
        *self == Routing::Ecmp
    }
}

/// A switch's configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwitchConfig {
    /// Shared packet buffer, bytes.
    pub buffer_bytes: u64,
    /// Largest egress queue of a lossy class (and of every class while PFC is off), bytes.
    pub queue_limit_bytes: u64,
    /// Priorities that are lossless (PFC-protected when `pfc` is set).
    pub lossless: Vec<u8>,
    /// PFC thresholds; `None` turns PFC off.
    pub pfc: Option<PfcConfig>,
    /// ECN marking per priority (index = priority); missing entries mark nothing.
    pub ecn: Vec<Option<EcnThresholds>>,
    /// Whether ECN marking happens at enqueue or at dequeue.
    #[serde(default)]
    pub ecn_at: MarkPoint,
    /// Salt of the ECMP hash (vary it per switch to avoid polarization).
    pub ecmp_salt: u64,
    /// How the egress port is picked among equal-cost members (default: ECMP by flow hash).
    #[serde(default, skip_serializing_if = "Routing::is_ecmp")]
    pub routing: Routing,
    /// Stamp INT metadata (`cc::IntHop`: queue, tx bytes, time, rate) on every packet at egress,
    /// as HPCC switches do: into the frame's INT shim (`wire::int`) when it carries one, else
    /// out of band (hosts then get the stack through `Fabric::set_int_sink`).
    #[serde(default)]
    pub int: bool,
    /// Egress scheduling (strict classes, ETS weights) and per-class buffer limits.
    #[serde(default)]
    pub sched: Scheduling,
    /// Marking by port rate: a port whose rate is listed marks the ECN-enabled priorities with
    /// that entry's thresholds instead of `ecn`'s.
    #[serde(default)]
    pub ecn_by_rate: Vec<RateEcn>,
    /// A PFC watchdog on the lossless queues (`None`: off, as by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pfc_watchdog: Option<PfcWatchdog>,
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            buffer_bytes: 12 * 1024 * 1024,
            queue_limit_bytes: 1024 * 1024,
            lossless: vec![3],
            pfc: Some(PfcConfig::default()),
            ecn: vec![None; PRIORITIES],
            ecn_at: MarkPoint::Enqueue,
            ecmp_salt: 0,
            routing: Routing::Ecmp,
            int: false,
            sched: Scheduling::default(),
            ecn_by_rate: Vec::new(),
            pfc_watchdog: None,
        }
    }
}

impl SwitchConfig {
    /// Whether `prio` is a lossless class with PFC on.
    pub fn pfc_on(&self, prio: usize) -> bool {
        self.pfc.is_some() && self.lossless.iter().any(|&p| usize::from(p) == prio)
    }

    /// Sets the same ECN marking on every priority.
    pub fn with_ecn_all(mut self, ecn: Option<EcnThresholds>) -> Self {
        self.ecn = vec![ecn; PRIORITIES];
        self
    }
}
