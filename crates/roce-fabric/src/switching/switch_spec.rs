//! The switch settings of a scenario file (`[switch]`): the same on every switch, turned into
//! each switch's [`SwitchConfig`].

use serde::{Deserialize, Serialize};

use crate::switching::sched::Scheduling;
use crate::switching::switch::{
    EcnThresholds, MarkPoint, PfcConfig, RateEcn, Routing, SwitchConfig,
};
use crate::switching::watchdog::PfcWatchdog;
use roce_proto::size;

fn d_true() -> bool {
    true
}

/// Switch settings (the same on every switch).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchSpec {
    /// Shared buffer, bytes (an integer or a size like "12MB").
    #[serde(deserialize_with = "size::deserialize_bytes")]
    pub buffer_bytes: u64,
    /// Egress queue limit of lossy classes (and all classes with PFC off), bytes.
    #[serde(deserialize_with = "size::deserialize_bytes")]
    pub queue_limit_bytes: u64,
    /// Lossless priorities.
    pub lossless: Vec<u8>,
    /// Salt of the ECMP hash (every switch's, unless `ecmp_salt_per_switch`).
    #[serde(default)]
    pub ecmp_salt: u64,
    /// A different salt on every switch (derived from `ecmp_salt`), as deployed fabrics do
    /// against polarisation.
    #[serde(default)]
    pub ecmp_salt_per_switch: bool,
    /// How every switch picks among equal-cost egress ports: "ecmp" (default, by flow hash)
    /// or "adaptive" (per packet, the member with the shortest egress queue in bytes; ties to
    /// the hash's pick).
    #[serde(default, skip_serializing_if = "Routing::is_ecmp")]
    pub routing: Routing,
    /// Egress scheduling: strict classes, ETS weights, per-class buffer limits
    /// (`[switch.sched]`; default: equal turns, no class limits).
    #[serde(default, alias = "scheduling")]
    pub sched: Scheduling,
    /// PFC on the lossless priorities.
    #[serde(default = "d_true")]
    pub pfc: bool,
    /// PFC thresholds.
    #[serde(default)]
    pub pfc_thresholds: Option<PfcConfig>,
    /// ECN marking on every queue. Under a controller defined with a step marker (DCTCP) it
    /// also marks every packet at or above Kmin unless `step_bytes` is set.
    #[serde(default)]
    pub ecn: Option<EcnThresholds>,
    /// Marking by port rate (`[{ gbps = 400, kmin_bytes = .., kmax_bytes = .., pmax = .. }]`),
    /// overriding `ecn` on the ports of that rate.
    #[serde(default)]
    pub ecn_by_rate: Vec<RateEcn>,
    /// Mark at "enqueue" (default) or "dequeue".
    #[serde(default)]
    pub ecn_at: MarkPoint,
    /// INT stamping at egress (HPCC telemetry); on by itself when the scenario's controller
    /// uses INT.
    #[serde(default)]
    pub int: bool,
    /// A PFC watchdog on every switch (`pfc_watchdog = { detect_us = .., restore_us = ..,
    /// action = "drop" }`; default off): see [`crate::switching::watchdog`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pfc_watchdog: Option<PfcWatchdog>,
}

impl Default for SwitchSpec {
    fn default() -> Self {
        let d = SwitchConfig::default();
        SwitchSpec {
            buffer_bytes: d.buffer_bytes,
            queue_limit_bytes: d.queue_limit_bytes,
            lossless: d.lossless,
            ecmp_salt: 0,
            ecmp_salt_per_switch: false,
            routing: Routing::Ecmp,
            sched: Scheduling::default(),
            pfc: true,
            pfc_thresholds: None,
            ecn: None,
            ecn_by_rate: Vec::new(),
            ecn_at: MarkPoint::Enqueue,
            int: false,
            pfc_watchdog: None,
        }
    }
}

impl SwitchSpec {
    /// The switch configuration this describes.
    pub fn config(&self) -> SwitchConfig {
        SwitchConfig {
            buffer_bytes: self.buffer_bytes,
            queue_limit_bytes: self.queue_limit_bytes,
            lossless: self.lossless.clone(),
            pfc: self.pfc.then(|| self.pfc_thresholds.unwrap_or_default()),
            ecn: Vec::new(),
            ecn_at: self.ecn_at,
            ecmp_salt: self.ecmp_salt,
            routing: self.routing,
            int: self.int,
            sched: self.sched.clone(),
            ecn_by_rate: self.ecn_by_rate.clone(),
            pfc_watchdog: self.pfc_watchdog,
        }
        .with_ecn_all(self.ecn)
    }
}
