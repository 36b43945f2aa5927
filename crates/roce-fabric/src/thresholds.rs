//! A switch's thresholds: ECN marking (RED ramp or DCTCP step) per queue, PFC XOFF/XON per
//! ingress, the dynamic PFC thresholds of a shared buffer, and ECN thresholds chosen by a port's
//! link rate (the knobs of HPCC's simulator, `third.cc`: `USE_DYNAMIC_PFC_THRESHOLD`,
//! `KMIN_MAP`/`KMAX_MAP`/`PMAX_MAP`). The switch element ([`crate::switch`]) applies them.

use serde::{Deserialize, Serialize};

use roce_proto::size;

/// ECN marking of one queue.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct EcnConfig {
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

impl EcnConfig {
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PfcConfig {
    /// Bytes buffered from one ingress port and priority at which XOFF is sent upstream.
    #[serde(deserialize_with = "size::deserialize_bytes")]
    pub xoff_bytes: u64,
    /// Bytes at or below which XON (pause time 0) is sent after an XOFF.
    #[serde(deserialize_with = "size::deserialize_bytes")]
    pub xon_bytes: u64,
    /// Room beyond XOFF for what is still in flight; past `xoff + headroom` even a lossless
    /// packet is dropped (and counted): the headroom was too small.
    #[serde(deserialize_with = "size::deserialize_bytes")]
    pub headroom_bytes: u64,
    /// Pause time carried by XOFF frames, in quanta of 512 bit times.
    pub quanta: u16,
    /// Dynamic thresholds from the free shared buffer instead of `xoff_bytes`/`xon_bytes`.
    #[serde(default)]
    pub dynamic: Option<DynamicPfc>,
}

impl Default for PfcConfig {
    fn default() -> Self {
        PfcConfig {
            xoff_bytes: 200_000,
            xon_bytes: 180_000,
            headroom_bytes: 150_000,
            quanta: roce_proto::wire::pfc::MAX_QUANTA,
            dynamic: None,
        }
    }
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
    pub ecn: EcnConfig,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::switch::{Switch, SwitchConfig};

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

    /// A switch of 4 ports (0..3 at 100G, 3 at 400G) over a 1 MB buffer with 50 KB headroom
    /// per port and dynamic PFC: the XOFF threshold is (1 MB − 200 KB − used) >> shift.
    fn dynamic_switch() -> Switch<u32, ()> {
        let cfg = SwitchConfig {
            buffer_bytes: 1_000_000,
            pfc: Some(PfcConfig {
                headroom_bytes: 50_000,
                dynamic: Some(DynamicPfc {
                    nic_bps: 100_000_000_000,
                    ..DynamicPfc::default()
                }),
                ..PfcConfig::default()
            }),
            ..SwitchConfig::default()
        };
        let mut sw = Switch::new("s".into(), cfg);
        for rate in [100, 100, 100, 400] {
            let p = sw.add_port(());
            sw.set_port_rate(p, rate * 1_000_000_000);
        }
        sw
    }

    #[test]
    fn dynamic_xoff_follows_the_free_buffer_and_xon_sits_the_resume_offset_below() {
        let mut sw = dynamic_switch();
        // Ingress 0 (shift 3): XOFF once it holds more than (800 KB − used) / 8.
        let mut held = 0;
        let mut xoff_at = None;
        while xoff_at.is_none() && held < 800_000 {
            held += 1_000;
            if sw.enqueue(0, 0, 1, 3, 1_000) {
                xoff_at = Some(held);
            }
        }
        // The first holding x above (800 KB − x) / 8: 89 KB.
        let at = xoff_at.expect("XOFF");
        assert_eq!(at, 89_000);
        assert!(at > (800_000 - at) / 8, "{at}");
        assert!(at - 1_000 <= (800_000 - (at - 1_000)) / 8, "{at}");
        // XON when the ingress holds 3 KiB less than the threshold at that moment.
        let mut released = 0;
        loop {
            sw.dequeue(1, |_, _| false).expect("a packet");
            released += 1_000;
            if sw.should_resume(0, 3) {
                break;
            }
        }
        let left = at - released;
        assert!(left + 3 * 1024 <= (800_000 - left) / 8, "XON at {left}");
        assert!(
            left + 1_000 + 3 * 1024 > (800_000 - left - 1_000) / 8,
            "XON at {left}"
        );
    }

    #[test]
    fn the_400g_port_pauses_later_than_a_100g_port() {
        let xoff = |ingress: u16| {
            let mut sw = dynamic_switch();
            (1..=800u64)
                .find(|_| sw.enqueue(0, ingress, 1, 3, 1_000))
                .map(|n| n * 1_000)
        };
        // The first holding x (in 1 KB steps) above (800 KB − x) >> shift: shift 3 (alpha 1/8)
        // at 100G, x > 88.9 KB; shift 1 (alpha 1/2) at 400G, x > 266.7 KB.
        assert_eq!(xoff(0), Some(89_000));
        assert_eq!(xoff(3), Some(267_000));
    }

    #[test]
    fn a_port_uses_the_marking_of_its_rate() {
        let base = EcnConfig {
            kmin_bytes: 0,
            kmax_bytes: 1,
            pmax: 1.0,
            step_bytes: None,
        };
        let never = EcnConfig {
            kmin_bytes: u64::MAX - 1,
            kmax_bytes: u64::MAX,
            ..base
        };
        let cfg = SwitchConfig {
            ecn_by_rate: vec![RateEcn {
                gbps: 400.0,
                ecn: never,
            }],
            ..SwitchConfig::default()
        }
        .with_ecn_all(Some(base));
        let mut sw: Switch<u32, ()> = Switch::new("s".into(), cfg);
        let (slow, fast) = (sw.add_port(()), sw.add_port(()));
        sw.set_port_rate(slow, 100_000_000_000);
        sw.set_port_rate(fast, 400_000_000_000);
        for egress in [slow, fast] {
            sw.enqueue(0, 0, egress, 3, 10_000);
        }
        // Both thresholds are certainties (probability 1 and 0): the RNG is never consulted.
        let mut rng = <rand_pcg::Pcg64 as rand::SeedableRng>::seed_from_u64(0);
        assert!(
            sw.ecn_mark(slow, 3, &mut rng),
            "100G marks with the base ramp"
        );
        assert!(!sw.ecn_mark(fast, 3, &mut rng), "400G uses its own map");
    }
}
