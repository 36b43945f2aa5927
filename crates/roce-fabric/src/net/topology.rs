//! Topologies as data: hosts (name, IP), switches and cables, built into a [`Fabric`] once the
//! workload has chosen each host's engine. Back-to-back pair, N:1 star, dumbbell and a
//! two-tier leaf-spine with oversubscription and rails.
//!
//! A host has one NIC; a server with R rails is R hosts (one per rail plane).

use std::net::{IpAddr, Ipv4Addr};

use super::fabric::{Cable, Fabric, FabricError, LinkConfig};
use crate::switching::switch::SwitchConfig;
use crate::{HostId, Node, SwitchId};
use roce_proto::engine::Engine;

/// An end of a cable in a topology description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Host by index.
    Host(usize),
    /// Switch by index.
    Switch(usize),
}

/// A network to build.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    /// Hosts: name and address.
    pub hosts: Vec<(String, IpAddr)>,
    /// Switches: name and configuration.
    pub switches: Vec<(String, SwitchConfig)>,
    /// Cables, in the order ports are numbered.
    pub cables: Vec<(End, End, LinkConfig)>,
    /// The egress port whose queue reports watch: (switch, port).
    pub bottleneck: Option<(usize, u16)>,
    /// Cables on each switch so far (the next port's number), kept by [`Topology::cable`].
    ports: Vec<usize>,
}

/// The address of host `i`: 10.x.y.z counting from 10.0.0.1.
pub fn host_ip(i: usize) -> IpAddr {
    let n = (i + 1) as u32;
    IpAddr::V4(Ipv4Addr::from(0x0a00_0000 | (n & 0x00ff_ffff)))
}

impl Topology {
    /// An empty topology.
    pub fn new() -> Self {
        Topology {
            hosts: Vec::new(),
            switches: Vec::new(),
            cables: Vec::new(),
            bottleneck: None,
            ports: Vec::new(),
        }
    }

    /// Adds a host named `name` with the next address.
    pub fn host(&mut self, name: impl Into<String>) -> End {
        let i = self.hosts.len();
        self.hosts.push((name.into(), host_ip(i)));
        End::Host(i)
    }

    /// Adds a switch.
    pub fn switch(&mut self, name: impl Into<String>, cfg: SwitchConfig) -> End {
        self.switches.push((name.into(), cfg));
        End::Switch(self.switches.len() - 1)
    }

    /// Cables `a` to `b`; returns the port numbers the cable gets on `a` and `b`.
    pub fn cable(&mut self, a: End, b: End, link: LinkConfig) -> (u16, u16) {
        let pa = self.next_port(a);
        let pb = self.next_port(b);
        self.cables.push((a, b, link));
        for (i, end) in [a, b].into_iter().enumerate() {
            if let (End::Switch(s), false) = (end, i == 1 && a == b) {
                if self.ports.len() <= s {
                    self.ports.resize(s + 1, 0);
                }
                if let Some(n) = self.ports.get_mut(s) {
                    *n += 1;
                }
            }
        }
        (pa, pb)
    }

    /// The port number the next cable gets on `end`: the cables it has so far.
    fn next_port(&self, end: End) -> u16 {
        match end {
            End::Host(_) => 0,
            End::Switch(s) => self.ports.get(s).copied().unwrap_or(0) as u16,
        }
    }

    /// Builds the fabric, asking `engine(host index, its IP, every host's IP)` for each host.
    pub fn build<E: Engine>(
        &self,
        seed: u64,
        mut engine: impl FnMut(usize, IpAddr) -> E,
    ) -> Result<(Fabric<E>, Vec<Cable>), FabricError> {
        let mut fabric = Fabric::new(seed);
        for (i, (name, ip)) in self.hosts.iter().enumerate() {
            fabric.add_host(name, *ip, engine(i, *ip))?;
        }
        for (name, cfg) in &self.switches {
            fabric.add_switch(name, cfg.clone());
        }
        let node = |e: End| match e {
            End::Host(h) => Node::Host(HostId(h)),
            End::Switch(s) => Node::Switch(SwitchId(s)),
        };
        let mut cables = Vec::new();
        for (a, b, link) in &self.cables {
            cables.push(fabric.connect(node(*a), node(*b), *link)?);
        }
        fabric.compute_routes();
        Ok((fabric, cables))
    }

    /// Two hosts cabled back to back.
    pub fn back_to_back(link: LinkConfig) -> Self {
        let mut t = Topology::new();
        let a = t.host("h0");
        let b = t.host("h1");
        t.cable(a, b, link);
        t
    }

    /// `n` hosts on one switch; host `n - 1` is the receiver of an incast and its switch port
    /// is the bottleneck.
    pub fn star(n: usize, link: LinkConfig, cfg: SwitchConfig) -> Self {
        let mut t = Topology::new();
        let sw = t.switch("sw0", cfg);
        for i in 0..n {
            let h = t.host(format!("h{i}"));
            let (port, _) = t.cable(sw, h, link);
            if i + 1 == n {
                t.bottleneck = Some((0, port));
            }
        }
        t
    }

    /// `left` hosts on switch 0, `right` hosts on switch 1, the two switches joined by `core`;
    /// the bottleneck is switch 0's port toward switch 1. Left hosts are 0..left.
    pub fn dumbbell(
        left: usize,
        right: usize,
        edge: LinkConfig,
        core: LinkConfig,
        cfg: SwitchConfig,
    ) -> Self {
        let mut t = Topology::new();
        let s0 = t.switch("sw0", cfg.clone());
        let s1 = t.switch(
            "sw1",
            SwitchConfig {
                ecmp_salt: 1,
                ..cfg
            },
        );
        for i in 0..left {
            let h = t.host(format!("l{i}"));
            t.cable(s0, h, edge);
        }
        for i in 0..right {
            let h = t.host(format!("r{i}"));
            t.cable(s1, h, edge);
        }
        let (p0, _) = t.cable(s0, s1, core);
        t.bottleneck = Some((0, p0));
        t
    }

    /// A two-tier leaf-spine per rail: `rails` planes, each with `leaves` leaves and `spines`
    /// spines, every leaf cabled to every spine with `uplink`. Server `i` (of
    /// `leaves * hosts_per_leaf`) has one host per rail, named `s{i}r{r}`, on leaf
    /// `i / hosts_per_leaf` of plane `r`; hosts are numbered server-major
    /// (`i * rails + r`). Oversubscription is `hosts_per_leaf * access.gbps / (spines * uplink.gbps)`.
    pub fn leaf_spine(
        leaves: usize,
        spines: usize,
        hosts_per_leaf: usize,
        rails: usize,
        access: LinkConfig,
        uplink: LinkConfig,
        cfg: SwitchConfig,
    ) -> Self {
        let mut t = Topology::new();
        let mut leaf_ids = Vec::new();
        for r in 0..rails {
            let mut plane = Vec::new();
            for l in 0..leaves {
                let salt = (r * 1000 + l) as u64;
                plane.push(t.switch(
                    format!("leaf{l}r{r}"),
                    SwitchConfig {
                        ecmp_salt: salt,
                        ..cfg.clone()
                    },
                ));
            }
            let spine_ids: Vec<End> = (0..spines)
                .map(|s| {
                    let salt = (r * 1000 + 500 + s) as u64;
                    t.switch(
                        format!("spine{s}r{r}"),
                        SwitchConfig {
                            ecmp_salt: salt,
                            ..cfg.clone()
                        },
                    )
                })
                .collect();
            for &leaf in &plane {
                for &spine in &spine_ids {
                    let (lp, _) = t.cable(leaf, spine, uplink);
                    if t.bottleneck.is_none() {
                        if let End::Switch(s) = leaf {
                            t.bottleneck = Some((s, lp));
                        }
                    }
                }
            }
            leaf_ids.push(plane);
        }
        for i in 0..leaves * hosts_per_leaf {
            for (r, plane) in leaf_ids.iter().enumerate() {
                let h = t.host(format!("s{i}r{r}"));
                if let Some(&leaf) = plane.get(i / hosts_per_leaf.max(1)) {
                    t.cable(leaf, h, access);
                }
            }
        }
        t
    }

    /// Oversubscription ratio of a leaf (downlink over uplink capacity), for reports.
    pub fn oversubscription(
        hosts_per_leaf: usize,
        spines: usize,
        access: &LinkConfig,
        uplink: &LinkConfig,
    ) -> f64 {
        hosts_per_leaf as f64 * access.gbps / (spines as f64 * uplink.gbps).max(1e-9)
    }
}

impl Default for Topology {
    fn default() -> Self {
        Self::new()
    }
}
