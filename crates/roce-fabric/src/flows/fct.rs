//! Flow-completion-time statistics as the field reports them (HPCC's
//! `analysis/fct_analysis.py` is the convention): per finished flow its FCT, its ideal FCT
//! (the same flow alone on the idle network) and the slowdown, and per size bin the p50 /
//! p95 / p99 slowdown, bins holding equal numbers of flows sorted by size.
//!
//! The ideal FCT models our fabric exactly for a lone flow: the flow's wire bytes (RoCE
//! headers, preamble, gap and FCS included) at the path's slowest link, the last frame
//! stored and forwarded by every other hop, the propagation delays, and the last ACK's way
//! back. The HPCC-format records use the simulator's own standalone FCT instead
//! ([`crate::hpcc::fct_file::standalone_fct_ns`]).

use std::collections::VecDeque;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::hpcc::fct_file::{node_ip, standalone_fct_ns, FctRecord, FIRST_SPORT};
use crate::net::fabric::LinkConfig;
use crate::net::topology::{End, Topology};
use crate::switching::port::wire_bytes;
use roce_proto::time::Duration;
use roce_proto::wire::{aeth, bth, ethernet, ipv4};

/// UDP header bytes.
const UDP_LEN: usize = 8;
/// RETH bytes (first packet of every WRITE message).
const RETH_LEN: usize = 16;
/// ICRC bytes.
const ICRC_LEN: usize = roce_proto::wire::icrc::ICRC_LEN;
/// Headers of every RoCEv2 packet: Ethernet, IPv4, UDP, BTH, and the ICRC after the payload.
const ROCE_HEADERS: usize =
    ethernet::HEADER_LEN + ipv4::HEADER_LEN + UDP_LEN + bth::HEADER_LEN + ICRC_LEN;

/// One finished flow with its ideal FCT and slowdown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FctRow {
    /// The flow.
    #[serde(flatten)]
    pub run: Finished,
    /// The same flow alone on the idle network, ns.
    pub ideal_ns: u64,
    /// `fct_ns / ideal_ns`.
    pub slowdown: f64,
    /// `third.cc`'s standalone FCT for the HPCC-format file, ns.
    pub standalone_ns: u64,
}

/// The slowdown percentiles of one size bin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowdownBin {
    /// Upper end of the bin's flow-count percentile range (5, 10, ... 100).
    pub pct: u32,
    /// Largest flow in the bin, bytes.
    pub max_bytes: u64,
    /// Flows in the bin.
    pub flows: usize,
    /// Median slowdown.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// FCTs of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FctReport {
    /// Finished finite flows, in flow order.
    pub flows: Vec<FctRow>,
    /// Slowdown per size bin (5 % of the flows each, as `fct_analysis.py -s 5`).
    pub bins: Vec<SlowdownBin>,
}

impl FctReport {
    /// The slowdown percentiles over every finished flow (one bin of 100%).
    pub fn overall(&self) -> Option<SlowdownBin> {
        let rows: Vec<(u64, f64)> = self
            .flows
            .iter()
            .map(|f| (f.run.size, f.slowdown))
            .collect();
        slowdown_bins(&rows, 100).pop()
    }
}

/// `fct_analysis.py`'s percentile: the element at `int(len * p)`.
fn pctl(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p) as usize).min(sorted.len().saturating_sub(1));
    sorted.get(i).copied().unwrap_or(0.0)
}

/// Slowdown bins of `step` percent of the flows each, as `fct_analysis.py` makes them: flows
/// sorted by size, slowdowns below 1 counted as 1; empty bins are left out.
pub fn slowdown_bins(rows: &[(u64, f64)], step: u32) -> Vec<SlowdownBin> {
    let mut v: Vec<(u64, f64)> = rows.iter().map(|&(s, x)| (s, x.max(1.0))).collect();
    v.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let n = v.len();
    let step = step.clamp(1, 100) as usize;
    (0..100)
        .step_by(step)
        .filter_map(|i| {
            let (l, r) = (i * n / 100, ((i + step) * n / 100).min(n));
            let bin = v.get(l..r).filter(|b| !b.is_empty())?;
            let mut s: Vec<f64> = bin.iter().map(|x| x.1).collect();
            s.sort_by(f64::total_cmp);
            Some(SlowdownBin {
                pct: (i + step) as u32,
                max_bytes: bin.last().map_or(0, |x| x.0),
                flows: bin.len(),
                p50: pctl(&s, 0.5),
                p95: pctl(&s, 0.95),
                p99: pctl(&s, 0.99),
            })
        })
        .collect()
}

/// Shortest paths (cables) from a host through switches, as lists of links per host.
pub struct Paths {
    adj: Vec<Vec<(usize, LinkConfig)>>,
    hosts: usize,
}

impl Paths {
    /// The paths of `topo`.
    pub fn new(topo: &Topology) -> Self {
        let hosts = topo.hosts.len();
        let idx = |e: End| match e {
            End::Host(h) => h,
            End::Switch(s) => hosts + s,
        };
        let mut adj = vec![Vec::new(); hosts + topo.switches.len()];
        for &(a, b, link) in &topo.cables {
            adj[idx(a)].push((idx(b), link));
            adj[idx(b)].push((idx(a), link));
        }
        Paths { adj, hosts }
    }

    /// The links of a shortest path from host `src` to host `dst` (breadth first, through
    /// switches only).
    pub fn links(&self, src: usize, dst: usize) -> Option<Vec<LinkConfig>> {
        let mut prev: Vec<Option<(usize, LinkConfig)>> = vec![None; self.adj.len()];
        let mut seen = vec![false; self.adj.len()];
        *seen.get_mut(src)? = true;
        let mut q = VecDeque::from([src]);
        while let Some(now) = q.pop_front() {
            for &(next, link) in &self.adj[now] {
                if seen[next] {
                    continue;
                }
                seen[next] = true;
                prev[next] = Some((now, link));
                if next >= self.hosts {
                    q.push_back(next);
                }
            }
        }
        let mut out = Vec::new();
        let mut at = dst;
        while at != src {
            let (p, link) = prev.get(at).copied().flatten()?;
            out.push(link);
            at = p;
        }
        out.reverse();
        Some(out)
    }
}

/// A transmitter as the fabric's: whole nanoseconds per frame, the picoseconds carried.
struct Wire {
    rate_bps: u64,
    carry_ps: u64,
}

impl Wire {
    /// The serialization time of `wire` bytes (the picoseconds left over are carried).
    fn ser(&mut self, wire: u64) -> Duration {
        let ps = wire * 8 * 1_000_000_000_000 / self.rate_bps.max(1) + self.carry_ps;
        self.carry_ps = ps % 1000;
        Duration::from_nanos(ps / 1000)
    }
}

/// The FCT of a `size`-byte WRITE flow (messages of `message_bytes`, packets of `mtu`
/// payload bytes) alone on `links`: [`ideal_delivery`], then the last ACK back.
pub fn ideal_fct(links: &[LinkConfig], size: u64, mtu: usize, message_bytes: u64) -> Duration {
    let arrived = ideal_delivery(links, size, mtu, message_bytes);
    let ack = wire_bytes(ROCE_HEADERS + aeth::HEADER_LEN);
    links.iter().rev().fold(arrived, |t, l| {
        let mut w = Wire {
            rate_bps: l.rate_bps(),
            carry_ps: 0,
        };
        t + w.ser(ack) + l.delay()
    })
}

/// How long after it starts the last frame of a `size`-byte WRITE flow alone on `links`
/// reaches the receiver: every frame (RoCE headers, preamble, gap and FCS included) stored
/// and forwarded hop by hop as the fabric serializes it (whole ns per frame, remainders
/// carried).
pub fn ideal_delivery(links: &[LinkConfig], size: u64, mtu: usize, message_bytes: u64) -> Duration {
    let (mtu, msg) = (mtu.max(1) as u64, message_bytes.max(1));
    let frame = |payload: u64, first: bool| {
        wire_bytes(ROCE_HEADERS + payload as usize + if first { RETH_LEN } else { 0 })
    };
    let mut wires: Vec<Wire> = links
        .iter()
        .map(|l| Wire {
            rate_bps: l.rate_bps(),
            carry_ps: 0,
        })
        .collect();
    // When each transmitter is next free, and when the last frame arrived at the receiver.
    let mut free = vec![Duration::ZERO; links.len()];
    let mut arrived = Duration::ZERO;
    let mut left = size.max(1);
    while left > 0 {
        let m = left.min(msg);
        left -= m;
        let mut off = 0;
        while off < m {
            let payload = (m - off).min(mtu);
            let bytes = frame(payload, off == 0);
            off += payload;
            // Ready at the sender whenever its NIC is free.
            let mut at = Duration::ZERO;
            for ((w, f), l) in wires.iter_mut().zip(&mut free).zip(links) {
                let end = at.max(*f) + w.ser(bytes);
                *f = end;
                at = end + l.delay();
            }
            arrived = at;
        }
    }
    arrived
}

/// A finished flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finished {
    /// Flow index.
    pub flow: usize,
    /// Sending host.
    pub src: usize,
    /// Receiving host.
    pub dst: usize,
    /// Bytes.
    pub size: u64,
    /// Start, ns.
    pub start_ns: u64,
    /// Completion time, ns.
    pub fct_ns: u64,
}

impl FctReport {
    /// The report of `flows` on `topo` with packets of `mtu` payload bytes in messages of
    /// `message_bytes`.
    pub fn new(topo: &Topology, flows: &[Finished], mtu: usize, message_bytes: u64) -> Self {
        let paths = Paths::new(topo);
        let rows: Vec<FctRow> = flows
            .iter()
            .map(|f| {
                let links = paths.links(f.src, f.dst).unwrap_or_default();
                let ideal = ideal_fct(&links, f.size, mtu, message_bytes);
                let ideal_ns = ideal.max(Duration::NANOSECOND).as_nanos();
                let delay: u64 = links.iter().map(|l| l.delay_ns).sum();
                let tx: u64 = links
                    .iter()
                    .map(|l| mtu as u64 * 8_000_000_000 / l.rate_bps().max(1))
                    .sum();
                let bw = links.iter().map(LinkConfig::rate_bps).min().unwrap_or(1);
                FctRow {
                    run: *f,
                    ideal_ns,
                    slowdown: f.fct_ns as f64 / ideal_ns as f64,
                    standalone_ns: standalone_fct_ns(f.size, mtu as u32, 2 * delay + tx, bw),
                }
            })
            .collect();
        let pairs: Vec<(u64, f64)> = rows.iter().map(|r| (r.run.size, r.slowdown)).collect();
        FctReport {
            bins: slowdown_bins(&pairs, 5),
            flows: rows,
        }
    }

    /// Per-flow CSV.
    pub fn csv(&self) -> String {
        let mut s = String::from("flow,src,dst,size_bytes,start_ns,fct_ns,ideal_fct_ns,slowdown\n");
        for FctRow {
            run: f,
            ideal_ns,
            slowdown,
            ..
        } in &self.flows
        {
            let (flow, src, dst, size) = (f.flow, f.src, f.dst, f.size);
            let _ = writeln!(
                s,
                "{flow},{src},{dst},{size},{},{},{ideal_ns},{slowdown:.6}",
                f.start_ns, f.fct_ns
            );
        }
        s
    }

    /// The HPCC simulator's FCT file lines: host `i` is node `nodes[i]` (or `i`), source
    /// ports count from 10000 per host in flow order, destination port `dport`.
    pub fn hpcc_records(&self, nodes: Option<&[usize]>, dport: u16) -> Vec<FctRecord> {
        let node = |h: usize| nodes.and_then(|n| n.get(h).copied()).unwrap_or(h);
        let mut next_port = std::collections::HashMap::new();
        let mut by_flow: Vec<&FctRow> = self.flows.iter().collect();
        by_flow.sort_by_key(|r| r.run.flow);
        by_flow
            .into_iter()
            .map(|r| {
                let f = &r.run;
                let p = next_port.entry(f.src).or_insert(FIRST_SPORT);
                let sport = *p;
                *p = p.wrapping_add(1);
                FctRecord {
                    sip: node_ip(node(f.src)),
                    dip: node_ip(node(f.dst)),
                    sport,
                    dport,
                    size: f.size,
                    start_ns: f.start_ns,
                    fct_ns: f.fct_ns,
                    standalone_ns: r.standalone_ns,
                }
            })
            .collect()
    }

    /// The per-bin table for humans.
    pub fn table(&self) -> String {
        let mut s = format!(
            "fct slowdown by size ({} finished flows, bins of 5% of them)\n   pct  max bytes  flows      p50      p95      p99\n",
            self.flows.len()
        );
        let rows = self.bins.iter().map(|b| {
            format!(
                "{:>6} {:>10} {:>6} {:>8.3} {:>8.3} {:>8.3}\n",
                b.pct, b.max_bytes, b.flows, b.p50, b.p95, b.p99
            )
        });
        s.extend(rows);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_split_flows_by_count_and_take_script_percentiles() {
        // 40 flows, sizes 1..=40, slowdown = size / 10 (below 1 counts as 1).
        let rows: Vec<(u64, f64)> = (1..=40).rev().map(|s| (s, s as f64 / 10.0)).collect();
        let b = slowdown_bins(&rows, 25);
        assert_eq!(b.len(), 4);
        assert_eq!(
            b[0],
            SlowdownBin {
                pct: 25,
                max_bytes: 10,
                flows: 10,
                p50: 1.0,
                p95: 1.0,
                p99: 1.0
            }
        );
        assert_eq!((b[3].max_bytes, b[3].flows), (40, 10));
        assert_eq!((b[3].p50, b[3].p95, b[3].p99), (3.6, 4.0, 4.0));
        // Fewer flows than bins: only non-empty ones.
        assert_eq!(slowdown_bins(&rows[..3], 5).len(), 3);
    }

    #[test]
    fn ideal_fct_of_one_packet_over_one_hop() {
        let l = LinkConfig::new(100.0, 1000);
        // 100 B: frame 14+20+8+12+16+100+4 = 174 B + 24 on the wire = 198 B = 15.84 ns
        // (15 whole ns); ACK 62 B -> 86 B = 6.88 ns (6); 1 us each way.
        let ns = |n| Duration::from_nanos(n);
        assert_eq!(ideal_fct(&[l], 100, 1024, 1 << 20), ns(15 + 2000 + 6));
        // Two hops: the frame is stored and forwarded once more.
        assert_eq!(
            ideal_fct(&[l, l], 100, 1024, 1 << 20),
            ns(2 * 15 + 4000 + 2 * 6)
        );
        // 2048 B: frames of 1098 and 1082 B, 1122 and 1106 B on the wire (89.76 and 88.48
        // ns: 89, then 89 with the carry); the second hop forwards the second frame after
        // the first.
        assert_eq!(
            ideal_fct(&[l, l], 2048, 1024, 1 << 20),
            ns(89 + 89 + 89 + 2000 + 2000 + 2 * 6)
        );
    }
}
