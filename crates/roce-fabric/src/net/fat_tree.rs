//! Three-tier fat trees as parameters: hosts under ToRs, ToRs and aggregation switches in
//! pods (every ToR cabled to every aggregation switch of its pod), aggregation switch `j` of
//! each pod cabled to core group `j`. The HPCC paper's 320-host network
//! ([`ThreeTier::hpcc_320`]) and the k-ary fat tree ([`ThreeTier::k_ary`]) are two
//! settings of it.

use serde::{Deserialize, Serialize};

use super::fabric::LinkConfig;
use super::topology::{End, Topology};
use crate::switching::switch::SwitchConfig;

/// The shape of a three-tier fat tree.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreeTier {
    /// Hosts under each ToR.
    pub hosts_per_tor: usize,
    /// ToR switches (a multiple of `pods`).
    pub tors: usize,
    /// Aggregation switches (a multiple of `pods`).
    pub aggs: usize,
    /// Core switches (a multiple of aggregation switches per pod).
    pub cores: usize,
    /// Pods.
    pub pods: usize,
    /// Host-ToR cables.
    pub link: LinkConfig,
    /// Switch-switch cables.
    pub uplink: LinkConfig,
}

impl ThreeTier {
    /// The HPCC paper's network (its `mix/fat.txt`): 16 hosts per ToR, 20 ToRs and 20
    /// aggregation switches in 5 pods, 16 cores; 100 Gbit/s host links, 400 Gbit/s between
    /// switches, 1 µs per link.
    pub fn hpcc_320() -> Self {
        ThreeTier {
            hosts_per_tor: 16,
            tors: 20,
            aggs: 20,
            cores: 16,
            pods: 5,
            link: LinkConfig::new(100.0, 1000),
            uplink: LinkConfig::new(400.0, 1000),
        }
    }

    /// The k-ary fat tree (Al-Fares et al. 2008): k pods of k/2 ToRs and k/2 aggregation
    /// switches, (k/2)² cores, k/2 hosts per ToR, every cable `link`.
    pub fn k_ary(k: usize, link: LinkConfig) -> Self {
        let h = k / 2;
        ThreeTier {
            hosts_per_tor: h,
            tors: k * h,
            aggs: k * h,
            cores: h * h,
            pods: k,
            link,
            uplink: link,
        }
    }

    /// Hosts in total.
    pub fn hosts(&self) -> usize {
        self.hosts_per_tor * self.tors
    }

    /// ToR oversubscription: host capacity under a ToR over its uplink capacity.
    pub fn oversubscription(&self) -> f64 {
        let up = (self.aggs / self.pods.max(1)) as f64 * self.uplink.gbps;
        self.hosts_per_tor as f64 * self.link.gbps / up.max(1e-9)
    }

    /// Why the shape cannot be built, if it cannot.
    pub fn check(&self) -> Result<(), ShapeError> {
        let p = self.pods;
        if p == 0 || self.tors == 0 || self.aggs == 0 || self.cores == 0 || self.hosts_per_tor == 0
        {
            return Err(ShapeError::Empty);
        }
        if self.tors % p != 0 || self.aggs % p != 0 || self.cores % (self.aggs / p) != 0 {
            return Err(ShapeError::Uneven {
                tors: self.tors,
                aggs: self.aggs,
                pods: p,
                cores: self.cores,
            });
        }
        Ok(())
    }
}

/// Why a [`ThreeTier`] shape cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// A count is zero.
    #[error("a fat tree needs hosts, ToRs, aggregation and core switches, pods")]
    Empty,
    /// ToRs or aggregation switches do not split evenly into pods, or cores among a pod's
    /// aggregation switches.
    #[error("fat tree: {tors} ToRs and {aggs} aggregation switches must split evenly into {pods} pods, and {cores} cores evenly among {} aggregation switches per pod", .aggs / .pods)]
    Uneven {
        /// ToR switches.
        tors: usize,
        /// Aggregation switches.
        aggs: usize,
        /// Pods.
        pods: usize,
        /// Core switches.
        cores: usize,
    },
}

impl Topology {
    /// A three-tier fat tree (see [`ThreeTier`]); hosts `h{i}` are numbered ToR by ToR,
    /// switches are `tor{i}`, `agg{i}`, `core{i}`. The bottleneck watched is ToR 0's port to
    /// host 0.
    pub fn three_tier(shape: &ThreeTier, cfg: SwitchConfig) -> Result<Self, ShapeError> {
        shape.check()?;
        let mut t = Topology::new();
        let mut salt = 0u64;
        let mut sw = |t: &mut Topology, name: String| {
            salt += 1;
            t.switch(
                name,
                SwitchConfig {
                    ecmp_salt: salt,
                    ..cfg.clone()
                },
            )
        };
        let tors: Vec<End> = (0..shape.tors)
            .map(|i| sw(&mut t, format!("tor{i}")))
            .collect();
        let aggs: Vec<End> = (0..shape.aggs)
            .map(|i| sw(&mut t, format!("agg{i}")))
            .collect();
        let cores: Vec<End> = (0..shape.cores)
            .map(|i| sw(&mut t, format!("core{i}")))
            .collect();
        let tors_per_pod = shape.tors / shape.pods;
        let aggs_per_pod = shape.aggs / shape.pods;
        let cores_per_agg = shape.cores / aggs_per_pod;
        for (i, &tor) in tors.iter().enumerate() {
            let pod = i / tors_per_pod;
            for &agg in &aggs[pod * aggs_per_pod..(pod + 1) * aggs_per_pod] {
                t.cable(tor, agg, shape.uplink);
            }
        }
        for (i, &agg) in aggs.iter().enumerate() {
            let j = i % aggs_per_pod;
            for &core in &cores[j * cores_per_agg..(j + 1) * cores_per_agg] {
                t.cable(agg, core, shape.uplink);
            }
        }
        for (i, &tor) in tors.iter().enumerate() {
            for k in 0..shape.hosts_per_tor {
                let h = t.host(format!("h{}", i * shape.hosts_per_tor + k));
                let (port, _) = t.cable(tor, h, shape.link);
                if t.bottleneck.is_none() {
                    t.bottleneck = Some((0, port));
                }
            }
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hpcc_320_has_the_shape_of_its_fat_txt() {
        let s = ThreeTier::hpcc_320();
        let t = Topology::three_tier(&s, SwitchConfig::default()).unwrap();
        // mix/fat.txt: 376 nodes, 56 switches, 480 links.
        assert_eq!(t.hosts.len(), 320);
        assert_eq!(t.switches.len(), 56);
        assert_eq!(t.cables.len(), 480);
        assert_eq!(s.oversubscription(), 1.0);
        let degree = |e: End| {
            t.cables
                .iter()
                .filter(|(a, b, _)| *a == e || *b == e)
                .count()
        };
        // ToR: 4 aggregation + 16 hosts; aggregation: 4 ToRs + 4 cores; core: 5 pods.
        assert_eq!(degree(End::Switch(0)), 20);
        assert_eq!(degree(End::Switch(20)), 8);
        assert_eq!(degree(End::Switch(40)), 5);
        // Agg 1 of pod 0 (switch 21) reaches cores 4..8 (switches 44..48), as in fat.txt.
        let cores: Vec<End> = t
            .cables
            .iter()
            .filter(|(a, _, _)| *a == End::Switch(21))
            .map(|c| c.1)
            .filter(|e| matches!(e, End::Switch(s) if *s >= 40))
            .collect();
        assert_eq!(
            cores,
            [
                End::Switch(44),
                End::Switch(45),
                End::Switch(46),
                End::Switch(47)
            ]
        );
        assert_eq!(t.bottleneck, Some((0, 4)));
    }

    #[test]
    fn k_ary_fat_tree_has_k3_over_4_hosts() {
        let s = ThreeTier::k_ary(4, LinkConfig::new(100.0, 1000));
        let t = Topology::three_tier(&s, SwitchConfig::default()).unwrap();
        assert_eq!(t.hosts.len(), 16);
        assert_eq!(t.switches.len(), 20);
        // k³/4 host cables + k³/4 ToR-agg + k³/4 agg-core.
        assert_eq!(t.cables.len(), 48);
        assert_eq!(s.oversubscription(), 1.0);
        let bad = ThreeTier { pods: 3, ..s };
        assert!(Topology::three_tier(&bad, SwitchConfig::default()).is_err());
    }
}
