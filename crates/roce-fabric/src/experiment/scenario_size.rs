//! How big a scenario is, counted from its description before anything is built: hosts,
//! switches, cables and the busiest switch's ports of its topology (with overflow-checked
//! arithmetic, so that a leaf-spine of 2^40 leaves is refused, not multiplied), the telemetry
//! bins of its run, and the [`Footprint`] a caller checks against its memory.

use super::scenario::{Scenario, ScenarioError, TopologySpec};
use crate::engines::EngineKind;
use crate::hpcc::topology_file::TopologyFile;
use crate::limits::bounds::{
    at_most, human_bytes, LimitError, CABLE_BYTES, HOST_BYTES, RC_FLOW_BYTES, ROUTE_BYTES,
    STAND_IN_FLOW_BYTES,
};
use crate::limits::bounds::{MAX_CABLES, MAX_HOSTS, MAX_PORTS, MAX_SWITCHES};

/// The counts of a topology.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Size {
    pub(crate) hosts: u64,
    pub(crate) switches: u64,
    pub(crate) cables: u64,
    /// Ports of the switch with the most.
    pub(crate) ports: u64,
}

/// `a * b`, or `u64::MAX` when it overflows (then above every ceiling).
fn mul(a: usize, b: usize) -> u64 {
    (a as u64).saturating_mul(b as u64)
}

fn add(a: u64, b: u64) -> u64 {
    a.saturating_add(b)
}

impl Size {
    fn of(spec: &TopologySpec) -> Result<Size, ScenarioError> {
        let n = |x: usize| x as u64;
        Ok(match spec {
            TopologySpec::BackToBack { .. } => Size {
                hosts: 2,
                switches: 0,
                cables: 1,
                ports: 0,
            },
            TopologySpec::Star { hosts, .. } => Size {
                hosts: n(*hosts),
                switches: 1,
                cables: n(*hosts),
                ports: n(*hosts),
            },
            TopologySpec::Dumbbell { left, right, .. } => Size {
                hosts: add(n(*left), n(*right)),
                switches: 2,
                cables: add(add(n(*left), n(*right)), 1),
                ports: add(n(*left.max(right)), 1),
            },
            TopologySpec::LeafSpine {
                leaves,
                spines,
                hosts_per_leaf,
                rails,
                ..
            } => {
                // A plane per rail, even an empty one.
                at_most("rails", n(*rails), MAX_SWITCHES as u64)?;
                let hosts = mul(*leaves, *hosts_per_leaf).saturating_mul(n(*rails));
                Size {
                    hosts,
                    switches: n(*rails).saturating_mul(add(n(*leaves), n(*spines))),
                    cables: add(hosts, mul(*leaves, *spines).saturating_mul(n(*rails))),
                    ports: add(n(*spines), n(*hosts_per_leaf)).max(n(*leaves)),
                }
            }
            TopologySpec::ThreeTier(shape) => {
                shape
                    .check()
                    .map_err(|e| ScenarioError::Invalid(e.to_string()))?;
                let pods = shape.pods.max(1);
                let aggs_per_pod = (shape.aggs / pods).max(1);
                let cores_per_agg = shape.cores / aggs_per_pod;
                let hosts = mul(shape.hosts_per_tor, shape.tors);
                Size {
                    hosts,
                    switches: add(add(n(shape.tors), n(shape.aggs)), n(shape.cores)),
                    cables: add(
                        hosts,
                        add(
                            mul(shape.tors, aggs_per_pod),
                            mul(shape.aggs, cores_per_agg),
                        ),
                    ),
                    ports: add(n(shape.hosts_per_tor), n(aggs_per_pod))
                        .max(add(n(shape.tors / pods), n(cores_per_agg)))
                        .max(n(pods)),
                }
            }
            TopologySpec::FatTree { k, .. } => {
                // k^3/4 hosts, 5k^2/4 switches, 3k^3/4 cables, k ports each.
                let h = *k / 2;
                let hosts = mul(*k, h).saturating_mul(n(h));
                Size {
                    hosts,
                    switches: add(mul(*k, h).saturating_mul(2), mul(h, h)),
                    cables: hosts.saturating_mul(3),
                    ports: n(*k),
                }
            }
            TopologySpec::HpccFile { path, .. } => {
                let f =
                    TopologyFile::load(path).map_err(|e| ScenarioError::Invalid(e.to_string()))?;
                let switches = f.is_switch.iter().filter(|&&s| s).count();
                Size {
                    hosts: n(f.nodes - switches),
                    switches: n(switches),
                    cables: n(f.links.len()),
                    // The file's reader counted every node's ports.
                    ports: 0,
                }
            }
            TopologySpec::Custom {
                switches,
                hosts,
                cables,
                ..
            } => {
                let mut ports = std::collections::HashMap::new();
                for c in cables {
                    for end in [&c.a, &c.b] {
                        *ports.entry(end.as_str()).or_insert(0u64) += 1;
                    }
                }
                Size {
                    hosts: n(*hosts),
                    switches: n(switches.len()),
                    cables: n(cables.len()),
                    ports: ports.values().copied().max().unwrap_or(0),
                }
            }
        })
    }

    /// Refuses a size above the ceilings.
    fn check(&self) -> Result<(), LimitError> {
        at_most("hosts", self.hosts, MAX_HOSTS as u64)?;
        at_most("switches", self.switches, MAX_SWITCHES as u64)?;
        at_most("cables", self.cables, MAX_CABLES as u64)?;
        at_most("ports on one switch", self.ports, MAX_PORTS as u64)?;
        Ok(())
    }
}

impl Scenario {
    /// The topology's counts, refused above the ceilings of [`crate::limits::bounds`].
    pub(crate) fn size(&self) -> Result<Size, ScenarioError> {
        let size = Size::of(&self.topology)?;
        size.check()?;
        Ok(size)
    }

    /// Telemetry bins the run closes (`duration_us / bin_us`, a twelfth of the run by
    /// default).
    pub(crate) fn bins(&self) -> f64 {
        match self.bin_us {
            Some(b) => self.duration_us / b,
            None => 12.0,
        }
    }

    /// What the scenario will hold in memory with `flows` flows on `threads` threads (see
    /// `Footprint::bytes`); refused above the ceilings like [`Scenario::validate`].
    pub fn footprint(&self, flows: usize, threads: usize) -> Result<Footprint, ScenarioError> {
        let size = self.size()?;
        Ok(Footprint {
            hosts: size.hosts,
            switches: size.switches,
            cables: size.cables,
            flows: flows as u64,
            rc: self.engine == EngineKind::Rc,
            bins: self.bins().ceil().max(0.0) as u64,
            // A split uses at most a partition per switch.
            threads: (threads as u64).min(size.switches.max(1)),
            outage: self.failure_at_us().is_some(),
        })
    }
}

/// What a scenario holds in memory, counted before it is built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Hosts.
    pub hosts: u64,
    /// Switches.
    pub switches: u64,
    /// Cables.
    pub cables: u64,
    /// Flows.
    pub flows: u64,
    /// Whether hosts run the RC engine (else the stand-in).
    pub rc: bool,
    /// Telemetry bins the run closes.
    pub bins: u64,
    /// Threads the fabric runs on (each partition copies the links and the flow meter).
    pub threads: u64,
    /// Whether the run has failures (then its outage report keeps every flow's rate in every
    /// bin).
    pub outage: bool,
}

impl Footprint {
    /// The estimate, bytes: per host, cable and flow, a route per switch and host, the
    /// telemetry bins (every port's eight priorities and every host's counters each), per
    /// partition of a split run the copied links and flow meter, and the outage report's rate of
    /// every flow in every bin.
    pub fn bytes(&self) -> u64 {
        let prio = std::mem::size_of::<crate::switching::stats::PrioCounters>() as u64 + 16;
        let host = std::mem::size_of::<crate::record::telemetry::HostCounters>() as u64;
        let flow = if self.rc {
            RC_FLOW_BYTES
        } else {
            STAND_IN_FLOW_BYTES
        };
        let ports = self.cables.saturating_mul(2);
        let bin = ports
            .saturating_mul(8 * prio)
            .saturating_add(self.hosts.saturating_mul(host));
        // A partition's copies: links, the flow meter's flows, and per node a slot and an RNG.
        let per_thread = self
            .cables
            .saturating_mul(256)
            .saturating_add(self.flows.saturating_mul(128))
            .saturating_add(self.hosts.saturating_add(self.switches).saturating_mul(64));
        [
            self.hosts.saturating_mul(HOST_BYTES),
            self.cables.saturating_mul(CABLE_BYTES),
            self.flows.saturating_mul(flow),
            self.switches
                .saturating_mul(self.hosts)
                .saturating_mul(ROUTE_BYTES),
            self.bins.saturating_add(1).saturating_mul(bin),
            self.threads.saturating_sub(1).saturating_mul(per_thread),
            if self.outage {
                self.flows
                    .saturating_mul(self.bins.saturating_add(1))
                    .saturating_mul(8)
            } else {
                0
            },
        ]
        .into_iter()
        .fold(0u64, u64::saturating_add)
    }

    /// Refuses a footprint above `memory_bytes`, naming what needs it.
    pub fn check(&self, memory_bytes: u64) -> Result<(), LimitError> {
        let need = self.bytes();
        if need <= memory_bytes {
            return Ok(());
        }
        let mut what = format!(
            "{} hosts, {} switches, {} cables, {} flows",
            self.hosts, self.switches, self.cables, self.flows
        );
        if self.bins > 100 {
            what.push_str(&format!(", {} telemetry bins", self.bins));
        }
        if self.threads > 1 {
            what.push_str(&format!(" on {} threads", self.threads));
        }
        Err(LimitError::Memory {
            what,
            need: human_bytes(need),
            have: human_bytes(memory_bytes),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(topology: &str) -> Result<Size, String> {
        let text = format!("name = \"x\"\nduration_us = 10\ntopology = {topology}\n");
        let s: Scenario = toml::from_str(&text).map_err(|e| e.to_string())?;
        s.size().map_err(|e| e.to_string())
    }

    #[test]
    fn sizes_are_counted_as_the_builders_build() {
        let link = "link = { gbps = 100, delay_ns = 1 }";
        let shapes = [
            format!("{{ kind = \"star\", hosts = 5, {link} }}"),
            format!("{{ kind = \"dumbbell\", left = 2, right = 3, {link}, core = {{ gbps = 100, delay_ns = 1 }} }}"),
            format!("{{ kind = \"leaf_spine\", leaves = 4, spines = 2, hosts_per_leaf = 3, rails = 2, {link}, uplink = {{ gbps = 100, delay_ns = 1 }} }}"),
            format!("{{ kind = \"fat_tree\", k = 4, {link} }}"),
            format!("{{ kind = \"three_tier\", hosts_per_tor = 16, tors = 20, aggs = 20, cores = 16, pods = 5, {link}, uplink = {{ gbps = 400, delay_ns = 1 }} }}"),
        ];
        for shape in shapes {
            let text = format!("name = \"x\"\nduration_us = 10\ntopology = {shape}\n");
            let s: Scenario = toml::from_str(&text).unwrap();
            let t = s.topology();
            let got = s.size().unwrap();
            let mut ports = vec![0u64; t.switches.len()];
            for (a, b, _) in &t.cables {
                for e in [a, b] {
                    if let crate::net::topology::End::Switch(i) = e {
                        ports[*i] += 1;
                    }
                }
            }
            let want = Size {
                hosts: t.hosts.len() as u64,
                switches: t.switches.len() as u64,
                cables: t.cables.len() as u64,
                ports: ports.iter().copied().max().unwrap_or(0),
            };
            assert_eq!(got, want, "{shape}");
        }
    }

    #[test]
    fn huge_topologies_are_refused_before_they_are_built() {
        let link = "link = { gbps = 100, delay_ns = 1 }";
        let up = "uplink = { gbps = 100, delay_ns = 1 }";
        assert_eq!(
            size(&format!(
                "{{ kind = \"star\", hosts = 4000000000, {link} }}"
            ))
            .unwrap_err(),
            "scenario: 4000000000 hosts is more than this build supports (at most 65536)"
        );
        assert_eq!(
            size(&format!(
                "{{ kind = \"leaf_spine\", leaves = 4294967296, spines = 2, hosts_per_leaf = 4294967296, rails = 1, {link}, {up} }}"
            ))
            .unwrap_err(),
            "scenario: 18446744073709551615 hosts is more than this build supports (at most 65536)"
        );
        // Empty planes are still planes.
        assert_eq!(
            size(&format!(
                "{{ kind = \"leaf_spine\", leaves = 0, spines = 0, hosts_per_leaf = 0, rails = 4294967296, {link}, {up} }}"
            ))
            .unwrap_err(),
            "scenario: 4294967296 rails is more than this build supports (at most 65536)"
        );
        assert_eq!(
            size(&format!(
                "{{ kind = \"fat_tree\", k = 18446744073709551614, {link} }}"
            ))
            .unwrap_err(),
            "scenario: 18446744073709551615 hosts is more than this build supports (at most 65536)"
        );
        assert_eq!(
            size(&format!(
                "{{ kind = \"dumbbell\", left = 65536, right = 0, {link}, core = {{ gbps = 100, delay_ns = 1 }} }}"
            ))
            .unwrap_err(),
            "scenario: 65537 ports on one switch is more than this build supports (at most 65536)"
        );
        assert!(size(&format!("{{ kind = \"fat_tree\", k = 64, {link} }}")).is_ok());
    }

    #[test]
    fn a_footprint_names_what_does_not_fit() {
        let f = Footprint {
            hosts: 20_000,
            switches: 1,
            cables: 20_000,
            flows: 1_000_000,
            rc: true,
            bins: 12,
            threads: 1,
            outage: false,
        };
        assert!(f.check(64_000_000_000).is_ok());
        let e = f.check(16_000_000_000).unwrap_err().to_string();
        assert!(
            e.starts_with("20000 hosts, 1 switches, 20000 cables, 1000000 flows need about 27."),
            "{e}"
        );
        assert!(
            e.ends_with(" GB, more than the 16.0 GB of memory here"),
            "{e}"
        );
    }
}
