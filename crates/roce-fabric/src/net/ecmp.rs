//! ECMP as deployed: a hash salt per switch (the same salt at every tier polarises: a switch
//! that got the flows with even hashes sends them all to its even next hop), and the load each
//! member of an equal-cost group carried, with the max/min ratio per switch; and on a topology
//! with rails, the load each rail carried and its utilisation over time.

use serde::{Deserialize, Serialize};

use super::fabric::Fabric;
use crate::{HostId, Node, SwitchId};
use roce_proto::engine::Engine;
use roce_proto::time::Instant;

/// The salt of switch `index` when salts vary per switch (a different, fixed value each,
/// derived from the scenario's `base`).
pub fn salt_of(base: u64, index: usize) -> u64 {
    base.wrapping_add((index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// Bytes one ECMP group member sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UplinkLoad {
    /// Switch name.
    pub switch: String,
    /// Its port.
    pub port: u16,
    /// The node the port leads to.
    pub peer: String,
    /// Frame bytes it sent over the run.
    pub bytes: u64,
}

/// Mean frame size above which a member carried data (ACKs and CNPs are 62 to 78 bytes;
/// data frames of the smallest MTU, 256 bytes, are over 300).
const DATA_FRAME_BYTES: u64 = 128;

/// How evenly the switches spread flows over their equal-cost next hops.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EcmpLoad {
    /// Every member of every switch's equal-cost groups.
    pub uplinks: Vec<UplinkLoad>,
    /// The largest max/min ratio of bytes among one switch's data-direction members (1 =
    /// even). A member is data-direction when it carried data frames (a mean frame over 128
    /// bytes); members that carried only ACKs and CNPs (the groups leading back to the
    /// senders) and members that carried nothing are left out of every switch's ratio alike,
    /// so a group on the ACK path cannot make the ratio of a balanced fabric look bad.
    pub worst_ratio: f64,
    /// The switch with that ratio.
    pub worst_switch: String,
    /// Members that sent nothing while another member of their switch did (polarised paths,
    /// in either direction: ACK paths polarise too).
    pub idle_members: usize,
}

impl EcmpLoad {
    /// The load of every ECMP member of `fabric` (`None` without equal-cost groups).
    pub fn collect<E: Engine>(fabric: &Fabric<E>) -> Option<Self> {
        let mut uplinks = Vec::new();
        let (mut worst_ratio, mut worst_switch, mut idle_members) = (1.0, String::new(), 0);
        for (s, sw) in fabric.switches.iter().enumerate() {
            let members = sw.ecmp_members();
            let sent: Vec<(u64, u64)> = members
                .iter()
                .map(|&p| {
                    let c = fabric.port_counters(Node::Switch(SwitchId(s)), p).total();
                    (c.tx_bytes, c.tx_packets)
                })
                .collect();
            let bytes: Vec<u64> = sent.iter().map(|&(b, _)| b).collect();
            if bytes.iter().any(|&b| b > 0) {
                idle_members += bytes.iter().filter(|&&b| b == 0).count();
            }
            if let Some(ratio) = data_ratio(&sent) {
                if ratio > worst_ratio {
                    worst_ratio = ratio;
                    worst_switch = sw.name().to_owned();
                }
            }
            for (&port, bytes) in members.iter().zip(bytes) {
                let peer = sw
                    .port(port)
                    .and_then(|p| p.tx.link)
                    .and_then(|l| fabric.link_peer(l))
                    .map_or_else(String::new, |(n, _)| match n {
                        Node::Host(h) => fabric.host_name(h).to_owned(),
                        Node::Switch(x) => fabric.switch_name(x).to_owned(),
                    });
                uplinks.push(UplinkLoad {
                    switch: sw.name().to_owned(),
                    port,
                    peer,
                    bytes,
                });
            }
        }
        (!uplinks.is_empty()).then_some(EcmpLoad {
            uplinks,
            worst_ratio,
            worst_switch,
            idle_members,
        })
    }

    /// The lines the summary table prints.
    pub fn lines(&self) -> String {
        use std::fmt::Write;
        let mut s = format!(
            "ecmp: {} members, {} idle, worst max/min {:.2}{}\n",
            self.uplinks.len(),
            self.idle_members,
            self.worst_ratio,
            if self.worst_switch.is_empty() {
                String::new()
            } else {
                format!(" at {}", self.worst_switch)
            }
        );
        for u in &self.uplinks {
            let _ = writeln!(s, "  {}:{} -> {} {} B", u.switch, u.port, u.peer, u.bytes);
        }
        s
    }
}

/// Max over min bytes among the members (`(bytes, frames)` each) that carried data frames
/// (a mean frame over [`DATA_FRAME_BYTES`]); `None` when none did.
fn data_ratio(sent: &[(u64, u64)]) -> Option<f64> {
    let data = sent
        .iter()
        .filter(|&&(b, n)| n > 0 && b / n > DATA_FRAME_BYTES)
        .map(|&(b, _)| b);
    let (max, min) = (data.clone().max()?, data.min()?);
    Some(max as f64 / min as f64)
}

/// What each rail of a rails topology carried: the frame bytes its hosts' NICs sent, over
/// the run and per telemetry bin as a share of the rail's NIC capacity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RailLoad {
    /// Bytes per rail, rail 0 first.
    pub bytes: Vec<u64>,
    /// Max over min among the rails that carried traffic (1 = even); idle rails are counted
    /// in `idle_rails` instead.
    pub ratio: f64,
    /// Rails that carried nothing while another did.
    pub idle_rails: usize,
    /// Per telemetry bin: its end (µs) and each rail's utilisation, the bits its hosts' NICs
    /// sent in the bin (frames, without preamble, gap and FCS) over the bin's length times the
    /// sum of their line rates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub utilisation: Vec<RailBin>,
}

/// One telemetry bin of [`RailLoad::utilisation`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RailBin {
    /// The bin's end, µs.
    pub end_us: f64,
    /// Utilisation per rail (0 to 1), rail 0 first.
    pub rails: Vec<f64>,
}

impl RailLoad {
    /// The load of each of `rails` rails of `fabric`, host `h` being on rail `h % rails` (as
    /// [`crate::net::topology::Topology::leaf_spine`] numbers them), over time when the fabric
    /// records telemetry; `None` with fewer than 2 rails.
    pub fn collect<E: Engine>(fabric: &Fabric<E>, rails: usize) -> Option<Self> {
        if rails < 2 {
            return None;
        }
        let mut bytes = vec![0u64; rails];
        for h in 0..fabric.host_count() {
            bytes[h % rails] += fabric
                .port_counters(Node::Host(HostId(h)), 0)
                .total()
                .tx_bytes;
        }
        let busy = bytes.iter().copied().filter(|&b| b > 0);
        let ratio = match (busy.clone().max(), busy.min()) {
            (Some(max), Some(min)) => max as f64 / min as f64,
            _ => 1.0,
        };
        let idle_rails = if bytes.iter().any(|&b| b > 0) {
            bytes.iter().filter(|&&b| b == 0).count()
        } else {
            0
        };
        Some(RailLoad {
            bytes,
            ratio,
            idle_rails,
            utilisation: utilisation(fabric, rails),
        })
    }

    /// The lines the summary table prints: the bytes, and the utilisation per bin.
    pub fn line(&self) -> String {
        let per: Vec<String> = self
            .bytes
            .iter()
            .enumerate()
            .map(|(r, b)| format!("r{r} {b} B"))
            .collect();
        let mut s = format!(
            "rails: {}  max/min {:.2}, {} idle\n",
            per.join("  "),
            self.ratio,
            self.idle_rails
        );
        if !self.utilisation.is_empty() {
            s.push_str("rail utilisation by bin (%):\n");
            for r in 0..self.bytes.len() {
                let by_bin: Vec<String> = self
                    .utilisation
                    .iter()
                    .map(|b| format!("{:.0}", 100.0 * b.rails.get(r).copied().unwrap_or(0.0)))
                    .collect();
                s.push_str(&format!("  r{r} {}\n", by_bin.join(" ")));
            }
        }
        s
    }

    /// `rails.csv`: `time_us,rail,utilisation`, one line per bin and rail.
    pub fn csv(&self) -> String {
        let mut s = String::from("time_us,rail,utilisation\n");
        for b in &self.utilisation {
            for (r, u) in b.rails.iter().enumerate() {
                s.push_str(&format!("{:.3},{r},{u:.6}\n", b.end_us));
            }
        }
        s
    }
}

/// Each telemetry bin's utilisation per rail (none without telemetry).
fn utilisation<E: Engine>(fabric: &Fabric<E>, rails: usize) -> Vec<RailBin> {
    let Some(t) = fabric.recorder().and_then(|r| r.telemetry.as_ref()) else {
        return Vec::new();
    };
    let hosts = t.host_names().len();
    let mut capacity_bps = vec![0u64; rails];
    for h in 0..hosts {
        let rate = fabric.port_rate_bps(Node::Host(HostId(h)), 0).unwrap_or(0);
        capacity_bps[h % rails] += rate;
    }
    let mut out = Vec::with_capacity(t.bins.len());
    let (mut start, mut before) = (Instant::ZERO, vec![0u64; hosts]);
    for bin in &t.bins {
        let secs = (bin.end - start).as_secs_f64();
        let mut sent = vec![0u64; rails];
        for (h, prev) in before.iter_mut().enumerate() {
            let now = t.nic(&bin.ports, h).tx_bytes;
            sent[h % rails] += now.saturating_sub(*prev);
            *prev = now;
        }
        let rails = sent
            .iter()
            .zip(&capacity_bps)
            .map(|(&b, &c)| match c {
                0 => 0.0,
                _ if secs <= 0.0 => 0.0,
                c => b as f64 * 8.0 / (c as f64 * secs),
            })
            .collect();
        out.push(RailBin {
            end_us: bin.end.as_nanos() as f64 / 1e3,
            rails,
        });
        start = bin.end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ratio_counts_members_that_carried_data_not_ack_only_or_idle_ones() {
        // 1 MB and 0.5 MB of 1 KB frames; 100 ACKs of 62 bytes; an idle member.
        let sent = [(1_000_000, 1000), (500_000, 500), (6_200, 100), (0, 0)];
        assert_eq!(data_ratio(&sent), Some(2.0));
        assert_eq!(data_ratio(&[(6_200, 100), (620, 10)]), None);
    }
}
