//! ECMP as deployed: a hash salt per switch (the same salt at every tier polarises: a switch
//! that got the flows with even hashes sends them all to its even next hop), and the load each
//! member of an equal-cost group carried, with the max/min ratio per switch.

use serde::{Deserialize, Serialize};

use super::fabric::Fabric;
use super::{Node, SwitchId};
use roce_proto::engine::Engine;

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

/// How evenly the switches spread flows over their equal-cost next hops.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EcmpLoad {
    /// Every member of every switch's equal-cost groups.
    pub uplinks: Vec<UplinkLoad>,
    /// The largest max/min ratio of bytes among one switch's members that carried traffic
    /// (1 = even); members that carried nothing are counted in `idle_members` instead.
    pub worst_ratio: f64,
    /// The switch with that ratio.
    pub worst_switch: String,
    /// Members that sent nothing while another member of their switch did (polarised paths).
    pub idle_members: usize,
}

impl EcmpLoad {
    /// The load of every ECMP member of `fabric` (`None` without equal-cost groups).
    pub fn collect<E: Engine>(fabric: &Fabric<E>) -> Option<Self> {
        let mut uplinks = Vec::new();
        let (mut worst_ratio, mut worst_switch, mut idle_members) = (1.0, String::new(), 0);
        for (s, sw) in fabric.switches.iter().enumerate() {
            let members = sw.ecmp_members();
            let bytes: Vec<u64> = members
                .iter()
                .map(|&p| {
                    fabric
                        .port_counters(Node::Switch(SwitchId(s)), p)
                        .total()
                        .tx_bytes
                })
                .collect();
            let max = bytes.iter().copied().max().unwrap_or(0);
            let busy = bytes.iter().copied().filter(|&b| b > 0);
            let min = busy.clone().min().unwrap_or(0);
            if max > 0 {
                idle_members += bytes.iter().filter(|&&b| b == 0).count();
                let ratio = max as f64 / min.max(1) as f64;
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
