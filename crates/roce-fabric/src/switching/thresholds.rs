//! A switch's thresholds: ECN marking (RED ramp or DCTCP step) per queue, PFC XOFF/XON per
//! ingress, the dynamic PFC thresholds of a shared buffer, and ECN thresholds chosen by a port's
//! link rate (the knobs of HPCC's simulator, `third.cc`: `USE_DYNAMIC_PFC_THRESHOLD`,
//! `KMIN_MAP`/`KMAX_MAP`/`PMAX_MAP`). The switch element ([`crate::switching::switch`]) applies them.

use serde::{Deserialize, Serialize};
use smart_default::SmartDefault;

use roce_proto::size;

/// ECN marking thresholds of one queue: the RED ramp (Kmin, Kmax, Pmax) and the DCTCP step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct EcnThresholds {
    /// Below this queue depth (bytes) nothing is marked.
    #[serde(deserialize_with = "size::deserialize_bytes")]
    pub kmin_bytes: u64,
    /// At or above this depth every ECT packet is marked; between Kmin and Kmax the probability
    /// grows linearly from 0 to `pmax`.
    #[serde(deserialize_with = "size::deserialize_bytes")]
    pub kmax_bytes: u64,
    /// Marking probability at Kmax (0..=1).
    pub pmax: f64,
    /// DCTCP-style step: mark every ECT packet that finds at least this many bytes queued.
    #[serde(default, deserialize_with = "size::deserialize_opt_bytes")]
    pub step_bytes: Option<u64>,
}

impl EcnThresholds {
    /// Marking probability for a queue of `depth` bytes.
    pub fn probability(&self, depth: u64) -> f64 {
        if self.step_bytes.is_some_and(|k| depth >= k) || depth >= self.kmax_bytes {
            return 1.0;
        }
        if depth <= self.kmin_bytes || self.kmax_bytes <= self.kmin_bytes {
            return 0.0;
        }
        let span = (self.kmax_bytes - self.kmin_bytes) as f64;
        self.pmax * (depth - self.kmin_bytes) as f64 / span
    }
}

/// PFC thresholds, per ingress port and lossless priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, SmartDefault)]
pub struct PfcConfig {
    /// Bytes buffered from one ingress port and priority at which XOFF is sent upstream.
    #[serde(deserialize_with = "size::deserialize_bytes")]
    #[default(200_000)]
    pub xoff_bytes: u64,
    /// Bytes at or below which XON (pause time 0) is sent after an XOFF.
    #[serde(deserialize_with = "size::deserialize_bytes")]
    #[default(180_000)]
    pub xon_bytes: u64,
    /// Room beyond XOFF for what is still in flight; past `xoff + headroom` even a lossless
    /// packet is dropped (and counted): the headroom was too small.
    #[serde(deserialize_with = "size::deserialize_bytes")]
    #[default(150_000)]
    pub headroom_bytes: u64,
    /// Pause time carried by XOFF frames, in quanta of 512 bit times.
    #[default(roce_proto::wire::pfc::MAX_QUANTA)]
    pub quanta: u16,
    /// Dynamic thresholds from the free shared buffer instead of `xoff_bytes`/`xon_bytes`.
    #[serde(default)]
    pub dynamic: Option<DynamicPfc>,
}

/// PFC thresholds as shared-buffer switches compute them (Broadcom's dynamic threshold alpha;
/// the HPCC simulator's `SwitchMmu::GetPfcThreshold`): an ingress (port, priority) sends XOFF
/// once it holds at least (buffer − every port's headroom − bytes buffered) >> shift, and XON
/// when it holds `resume_offset_bytes` less than that, or nothing. A port 2^k times faster than
/// the hosts' NICs uses shift − k (alpha doubles with the link rate, as in HPCC's `third.cc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynamicPfc {
    /// alpha = 1/2^shift of the free buffer (HPCC: 3).
    #[serde(default = "d_shift")]
    pub shift: u8,
    /// Gap between the XOFF and XON thresholds, bytes (HPCC: 3 KiB).
    #[serde(default = "d_resume", deserialize_with = "size::deserialize_bytes")]
    pub resume_offset_bytes: u64,
    /// The hosts' NIC rate, bit/s, that `shift` is for (0: every port uses `shift`; scenarios
    /// fill in their host link rate).
    #[serde(default)]
    pub nic_bps: u64,
}

fn d_shift() -> u8 {
    3
}
fn d_resume() -> u64 {
    3 * 1024
}

impl Default for DynamicPfc {
    fn default() -> Self {
        DynamicPfc {
            shift: d_shift(),
            resume_offset_bytes: d_resume(),
            nic_bps: 0,
        }
    }
}

impl DynamicPfc {
    /// The shift of a port of `rate_bps`.
    pub fn shift_at(&self, rate_bps: u64) -> u8 {
        let mut shift = self.shift;
        let mut rate = rate_bps;
        while self.nic_bps > 0 && rate > self.nic_bps && shift > 0 {
            shift -= 1;
            rate /= 2;
        }
        shift
    }
}

/// ECN thresholds for the ports of one link rate (HPCC's `KMIN_MAP`/`KMAX_MAP`/`PMAX_MAP`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RateEcn {
    /// The ports' rate, Gbit/s.
    pub gbps: f64,
    /// Their marking.
    #[serde(flatten)]
    pub ecn: EcnThresholds,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faster_ports_get_a_larger_alpha_as_in_hpccs_third_cc() {
        let d = DynamicPfc {
            nic_bps: 100_000_000_000,
            ..DynamicPfc::default()
        };
        assert_eq!(d.shift_at(100_000_000_000), 3);
        assert_eq!(d.shift_at(200_000_000_000), 2);
        assert_eq!(d.shift_at(400_000_000_000), 1);
        assert_eq!(d.shift_at(25_000_000_000), 3);
        let unknown = DynamicPfc::default();
        assert_eq!(unknown.shift_at(400_000_000_000), 3);
    }
}
