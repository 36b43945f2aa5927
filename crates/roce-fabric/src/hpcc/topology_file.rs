//! The HPCC simulator's topology file (`mix/fat.txt`): `nodes switches links`, the switch
//! ids, then one `a b rate delay error_rate` line per link (`0 320 100Gbps 1000ns 0`).
//! Nodes that are not switches are hosts. [`TopologyFile::paths_from`] computes what
//! `third.cc`'s `CalculateRoute` does (hop delays, per-hop serialization of one payload,
//! bottleneck rate) for the standalone FCT.

use std::collections::VecDeque;

use super::tokens::Tokens;
use super::{parse_rate, parse_time_ns, HpccError};
use crate::limits::bounds::{
    at_most, excerpt, MAX_CABLES, MAX_HOSTS, MAX_PORTS, MAX_SWITCHES, MAX_TOPOLOGY_LINE_BYTES,
};
use crate::net::fabric::LinkConfig;
use crate::net::topology::{End, Topology};
use crate::switching::switch::SwitchConfig;

/// One link line.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkLine {
    /// One node.
    pub a: usize,
    /// The other node.
    pub b: usize,
    /// Rate, bit/s.
    pub rate_bps: u64,
    /// One-way delay, ns.
    pub delay_ns: u64,
    /// Packet error (loss) rate.
    pub error_rate: f64,
    /// The line it came from.
    pub line: usize,
}

/// A parsed topology file.
#[derive(Clone, Debug, PartialEq)]
pub struct TopologyFile {
    /// Number of nodes (hosts and switches), ids `0..nodes`.
    pub nodes: usize,
    /// Which node ids are switches.
    pub is_switch: Vec<bool>,
    /// The links, in file order.
    pub links: Vec<LinkLine>,
}

/// What [`TopologyFile::paths_from`] finds from one node to a host: `third.cc`'s
/// `pairDelay`, `pairTxDelay` and `pairBw`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathInfo {
    /// Sum of one-way link delays, ns.
    pub delay_ns: u64,
    /// Sum over hops of one payload's serialization time (integer ns per hop).
    pub tx_delay_ns: u64,
    /// Slowest link on the path, bit/s.
    pub bw_bps: u64,
}

impl PathInfo {
    /// `third.cc`'s base RTT: twice the delay plus one payload's serialization per hop.
    pub fn base_rtt_ns(&self) -> u64 {
        self.delay_ns
            .saturating_mul(2)
            .saturating_add(self.tx_delay_ns)
    }
}

impl TopologyFile {
    /// Parses the topology text of the file named `file`.
    pub fn parse(file: &str, text: &str) -> Result<TopologyFile, HpccError> {
        Self::read(Tokens::of_text(file, text))
    }

    fn read(mut t: Tokens) -> Result<TopologyFile, HpccError> {
        let count = |t: &mut Tokens, what: &str| t.value(what, |s| s.parse::<u64>().ok());
        let (line, nodes) = count(&mut t, "the number of nodes")?;
        let (_, switches) = count(&mut t, "the number of switches")?;
        let (_, links) = count(&mut t, "the number of links")?;
        if switches > nodes {
            return Err(t.error(line, format!("{switches} switches but only {nodes} nodes")));
        }
        let limit = |limit| HpccError::Limit {
            file: t.file().to_owned(),
            line,
            limit,
        };
        at_most("nodes", nodes, (MAX_HOSTS + MAX_SWITCHES) as u64).map_err(limit)?;
        at_most("switches", switches, MAX_SWITCHES as u64).map_err(limit)?;
        at_most("hosts", nodes - switches, MAX_HOSTS as u64).map_err(limit)?;
        at_most("links", links, MAX_CABLES as u64).map_err(limit)?;
        // Within the ceilings, which fit in usize.
        let (nodes, switches, links) = (nodes as usize, switches as usize, links as usize);
        let mut is_switch = vec![false; nodes];
        for _ in 0..switches {
            let (line, id) = t.value("a switch id", |s| s.parse::<usize>().ok())?;
            match is_switch.get_mut(id) {
                Some(s) if !*s => *s = true,
                Some(_) => return Err(t.error(line, format!("switch {id} listed twice"))),
                None => return Err(t.error(line, format!("switch id {id} is not below {nodes}"))),
            }
        }
        let mut ports = vec![0usize; nodes];
        let mut out = Vec::with_capacity(links.min(1 << 16));
        for _ in 0..links {
            let line = t.line()?;
            let a: usize = t.num("a node id")?;
            let b: usize = t.num("a node id")?;
            let (_, rate_bps) = t.value("a data rate (e.g. 100Gbps)", parse_rate)?;
            let (_, delay_ns) = t.value("a delay (e.g. 1000ns, 0.001ms)", parse_time_ns)?;
            let error_rate: f64 = t.num("an error rate")?;
            if a >= nodes || b >= nodes || a == b {
                return Err(t.error(
                    line,
                    format!("link {a}-{b} needs two distinct nodes below {nodes}"),
                ));
            }
            if rate_bps == 0 || !(0.0..=1.0).contains(&error_rate) {
                return Err(t.error(line, "link rate must be positive and error rate in 0..=1"));
            }
            for n in [a, b] {
                if let Some(p) = ports.get_mut(n) {
                    *p += 1;
                    at_most("ports on one node", *p as u64, MAX_PORTS as u64).map_err(|limit| {
                        HpccError::Limit {
                            file: t.file().to_owned(),
                            line,
                            limit,
                        }
                    })?;
                }
            }
            out.push(LinkLine {
                a,
                b,
                rate_bps,
                delay_ns,
                error_rate,
                line,
            });
        }
        if let Some((line, tok)) = t.next_owned()? {
            return Err(t.error(line, format!("{} after the {links} links", excerpt(&tok))));
        }
        Ok(TopologyFile {
            nodes,
            is_switch,
            links: out,
        })
    }

    /// Host node ids in ascending order (host index `i` of the fabric is the `i`-th).
    pub fn hosts(&self) -> Vec<usize> {
        (0..self.nodes).filter(|&n| !self.is_switch[n]).collect()
    }

    /// Paths from every node to host `host` over up links, as `third.cc`'s breadth-first
    /// `CalculateRoute(host)` finds them (through switches only), with `payload` bytes per
    /// packet for the per-hop serialization. `None` for unreachable nodes.
    pub fn paths_from(&self, host: usize, payload: u32) -> Vec<Option<PathInfo>> {
        let mut adj: Vec<Vec<(usize, &LinkLine)>> = vec![Vec::new(); self.nodes];
        for l in &self.links {
            adj[l.a].push((l.b, l));
            adj[l.b].push((l.a, l));
        }
        for a in &mut adj {
            a.sort_by_key(|x| x.0);
        }
        let mut info: Vec<Option<PathInfo>> = vec![None; self.nodes];
        info[host] = Some(PathInfo {
            delay_ns: 0,
            tx_delay_ns: 0,
            bw_bps: u64::MAX,
        });
        let mut q = VecDeque::from([host]);
        while let Some(now) = q.pop_front() {
            let Some(here) = info[now] else { continue };
            for &(next, l) in &adj[now] {
                if info[next].is_some() {
                    continue;
                }
                let tx_ns = u64::from(payload).saturating_mul(8_000_000_000) / l.rate_bps;
                info[next] = Some(PathInfo {
                    delay_ns: here.delay_ns.saturating_add(l.delay_ns),
                    tx_delay_ns: here.tx_delay_ns.saturating_add(tx_ns),
                    bw_bps: here.bw_bps.min(l.rate_bps),
                });
                if self.is_switch[next] {
                    q.push_back(next);
                }
            }
        }
        info
    }
}

impl TopologyFile {
    /// Loads and parses the file at `path`, its lines and counts within the bounds of
    /// [`crate::limits::bounds`].
    pub fn load(path: &std::path::Path) -> Result<TopologyFile, HpccError> {
        Self::read(Tokens::new(super::lines(path, MAX_TOPOLOGY_LINE_BYTES)?))
    }

    /// The rate of the first link that touches a host (the NIC rate `third.cc` takes), bit/s.
    pub fn nic_rate_bps(&self) -> Option<u64> {
        self.links
            .iter()
            .find(|l| !self.is_switch[l.a] || !self.is_switch[l.b])
            .map(|l| l.rate_bps)
    }

    /// Our topology: hosts `n{id}` in node order (host `i` is `self.hosts()[i]`), switches
    /// `sw{id}` each with `cfg(switch id)`, cables in file order (error rate as loss).
    pub fn to_topology(&self, mut cfg: impl FnMut(usize) -> SwitchConfig) -> Topology {
        let mut t = Topology::new();
        let mut ends = Vec::with_capacity(self.nodes);
        for id in 0..self.nodes {
            ends.push(if self.is_switch[id] {
                let mut c = cfg(id);
                c.ecmp_salt = id as u64;
                t.switch(format!("sw{id}"), c)
            } else {
                t.host(format!("n{id}"))
            });
        }
        for l in &self.links {
            let mut link = LinkConfig::new(l.rate_bps as f64 / 1e9, l.delay_ns);
            link.loss = l.error_rate;
            let (pa, pb) = t.cable(ends[l.a], ends[l.b], link);
            if t.bottleneck.is_none() {
                t.bottleneck = match (ends[l.a], ends[l.b]) {
                    (End::Switch(s), End::Host(_)) => Some((s, pa)),
                    (End::Host(_), End::Switch(s)) => Some((s, pb)),
                    _ => None,
                };
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two hosts under switch 2, host 3 under switch 4, the switches joined at 400G.
    const SMALL: &str = "5 2 3
2 4
0 2 100Gbps 0.001ms 0
1 2 100Gbps 1000ns 0.000000
2 4 400Gbps 1us 0
";

    #[test]
    fn reads_counts_switches_and_links() {
        let mut text = SMALL.to_owned();
        text.push_str("3 4 25Gbps 2000ns 0.01\n");
        let text = text.replacen("5 2 3", "5 2 4", 1);
        let t = TopologyFile::parse("topo.txt", &text).unwrap();
        assert_eq!(t.nodes, 5);
        assert_eq!(t.is_switch, [false, false, true, false, true]);
        assert_eq!(t.hosts(), [0, 1, 3]);
        assert_eq!(t.links.len(), 4);
        assert_eq!(
            t.links[0],
            LinkLine {
                a: 0,
                b: 2,
                rate_bps: 100_000_000_000,
                delay_ns: 1000,
                error_rate: 0.0,
                line: 3
            }
        );
        assert_eq!(t.links[2].rate_bps, 400_000_000_000);
        assert_eq!(t.links[3].rate_bps, 25_000_000_000);
        assert_eq!(t.links[3].delay_ns, 2000);
        assert_eq!(t.links[3].error_rate, 0.01);
        assert_eq!(t.links[3].line, 6);
        // Host 3 to host 0: three hops of 1 us; 1000 B takes 80, 20 and 320 ns per hop.
        let p = t.paths_from(0, 1000);
        let to3 = p[3].unwrap();
        assert_eq!(to3.delay_ns, 4000);
        assert_eq!(to3.tx_delay_ns, 80 + 20 + 320);
        assert_eq!(to3.bw_bps, 25_000_000_000);
        assert_eq!(to3.base_rtt_ns(), 8420);
        assert_eq!(p[1].unwrap().base_rtt_ns(), 4000 + 160);
        assert_eq!(t.nic_rate_bps(), Some(100_000_000_000));
        let topo = t.to_topology(|_| SwitchConfig::default());
        let names: Vec<&str> = topo.hosts.iter().map(|h| h.0.as_str()).collect();
        assert_eq!(names, ["n0", "n1", "n3"]);
        assert_eq!(topo.switches.len(), 2);
        assert_eq!(topo.cables.len(), 4);
        assert_eq!(
            topo.cables[3],
            (End::Host(2), End::Switch(1), {
                let mut l = LinkConfig::new(25.0, 2000);
                l.loss = 0.01;
                l
            })
        );
        assert_eq!(topo.bottleneck, Some((0, 0)));
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        crate::hpcc::assert_malformed(
            |t| TopologyFile::parse("mix/topo.txt", t),
            &[
                (
                    "5 2 3\n2 4\n0 2 100Gbps 1000ns 0\n1 2 fast 1000ns 0\n",
                    "mix/topo.txt:4: \"fast\" is not a data rate (e.g. 100Gbps)",
                ),
                (
                    "5 2 3\n2 4\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n",
                    "mix/topo.txt:4: file ends where a node id was expected",
                ),
                (
                    "5 2 1\n2 9\n0 2 100Gbps 1000ns 0\n",
                    "mix/topo.txt:2: switch id 9 is not below 5",
                ),
                (
                    "5 2 1\n2 4\n0 7 100Gbps 1000ns 0\n",
                    "mix/topo.txt:3: link 0-7 needs two distinct nodes below 5",
                ),
                (
                    "5 2 1\n2 4\n0 2 100Gbps soon 0\n",
                    "mix/topo.txt:3: \"soon\" is not a delay (e.g. 1000ns, 0.001ms)",
                ),
                (
                    format!("{SMALL}9 9 9\n").as_str(),
                    "mix/topo.txt:6: \"9\" after the 3 links",
                ),
            ],
        );
    }
}
