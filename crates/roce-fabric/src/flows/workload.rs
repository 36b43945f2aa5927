//! Workloads: who sends what to whom and when. Each variant expands into per-host flows
//! ([`FlowConfig`]) and the flow meter's flow list. Random workloads (flow-size distributions) draw
//! from their own RNG seeded from the scenario seed, so they replay too.
//!
//! Nothing here runs anything; [`crate::experiment::scenario`] builds and runs the fabric.

use std::net::IpAddr;

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use serde::{Deserialize, Serialize};

use super::collective::{
    schedule, Collective, CollectiveError, CollectivePlan, GateSlots, MemberGate,
};
use super::traffic::{poisson_flows_within, PoissonSpec, SizeCdf};
use crate::hpcc::flow_file::{self, FlowLine};
use crate::hpcc::HpccError;
use crate::limits::bounds::{LimitError, Limits};
use crate::record::flow_meter::FlowSpec;
use roce_proto::cc::CcConfig;
use roce_proto::size;
use roce_proto::time::{Duration, Instant};

fn default_dscp() -> u8 {
    26
}

/// Flow sizes for [`Workload::FlowSizes`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SizeDist {
    /// Every flow the same size.
    Fixed {
        /// Bytes.
        bytes: u64,
    },
    /// Exponentially distributed sizes.
    Exponential {
        /// Mean bytes.
        mean_bytes: u64,
    },
    /// The DCTCP web-search distribution (Alizadeh et al. 2010), scaled by `scale`.
    WebSearch {
        /// Multiplier on every size (1.0 = the published CDF).
        #[serde(default = "one")]
        scale: f64,
    },
}

fn one() -> f64 {
    1.0
}

/// Web-search CDF: (bytes, cumulative probability).
const WEB_SEARCH: &[(f64, f64)] = &[
    (6_000.0, 0.15),
    (13_000.0, 0.2),
    (19_000.0, 0.3),
    (33_000.0, 0.4),
    (53_000.0, 0.53),
    (133_000.0, 0.6),
    (667_000.0, 0.7),
    (1_333_000.0, 0.8),
    (3_333_000.0, 0.9),
    (6_667_000.0, 0.97),
    (20_000_000.0, 1.0),
];

impl SizeDist {
    /// Draws one size.
    pub fn sample(&self, rng: &mut Pcg64) -> u64 {
        match self {
            SizeDist::Fixed { bytes } => *bytes,
            SizeDist::Exponential { mean_bytes } => {
                let u: f64 = rng.random::<f64>();
                (-(1.0 - u).ln() * *mean_bytes as f64).ceil().max(1.0) as u64
            }
            SizeDist::WebSearch { scale } => {
                let u: f64 = rng.random::<f64>();
                let mut prev = (0.0, 0.0);
                for &(b, p) in WEB_SEARCH {
                    if u <= p {
                        let frac = (u - prev.1) / (p - prev.1).max(1e-12);
                        return ((prev.0 + frac * (b - prev.0)) * scale).ceil().max(1.0) as u64;
                    }
                    prev = (b, p);
                }
                (20_000_000.0 * scale) as u64
            }
        }
    }

    /// Mean size in bytes.
    pub fn mean(&self) -> f64 {
        match self {
            SizeDist::Fixed { bytes } => *bytes as f64,
            SizeDist::Exponential { mean_bytes } => *mean_bytes as f64,
            SizeDist::WebSearch { scale } => {
                let mut prev = (0.0, 0.0);
                let mut m = 0.0;
                for &(b, p) in WEB_SEARCH {
                    m += (p - prev.1) * (b + prev.0) / 2.0;
                    prev = (b, p);
                }
                m * scale
            }
        }
    }
}

/// A traffic pattern over host indices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Workload {
    /// One flow (long when `bytes` is absent).
    Flow {
        /// Sender.
        src: usize,
        /// Receiver.
        dst: usize,
        /// Bytes to send; absent = forever.
        #[serde(default, deserialize_with = "size::deserialize_opt_bytes")]
        bytes: Option<u64>,
        /// Start time, µs.
        #[serde(default)]
        start_us: f64,
        /// Pacing rate, Gbit/s; absent = line rate.
        #[serde(default)]
        rate_gbps: Option<f64>,
        /// DSCP (26 = lossless RDMA class 3; 0 = lossy best effort).
        #[serde(default = "default_dscp")]
        dscp: u8,
        /// SEND instead of WRITE.
        #[serde(default)]
        send: bool,
    },
    /// Every sender sends to one receiver at once.
    Incast {
        /// Senders.
        senders: Vec<usize>,
        /// Receiver.
        receiver: usize,
        /// Bytes per sender; absent = forever.
        #[serde(default, deserialize_with = "size::deserialize_opt_bytes")]
        bytes: Option<u64>,
        /// Start time, µs.
        #[serde(default)]
        start_us: f64,
    },
    /// Repeated synchronized bursts from the senders to one receiver.
    Microburst {
        /// Senders.
        senders: Vec<usize>,
        /// Receiver.
        receiver: usize,
        /// Bytes per sender per burst.
        #[serde(deserialize_with = "size::deserialize_bytes")]
        burst_bytes: u64,
        /// Time between burst starts, µs.
        period_us: f64,
        /// Number of bursts.
        count: u32,
        /// First burst, µs.
        #[serde(default)]
        start_us: f64,
    },
    /// A collective among `hosts` ([`crate::flows::collective`]): ring AllReduce (2(K-1) steps of
    /// `bytes / K`), halving-doubling AllReduce or all-to-all, `iterations` times, each
    /// iteration's communication after `compute_us` of computation. Also `kind = "collective"`.
    #[serde(alias = "collective")]
    AllReduce(Collective),
    /// Poisson arrivals of flows between random pairs of `hosts`, sizes from `sizes`, offered
    /// load `load` of one host link.
    FlowSizes {
        /// Hosts taking part.
        hosts: Vec<usize>,
        /// Offered load per host link (0..1).
        load: f64,
        /// Size distribution.
        sizes: SizeDist,
        /// Number of flows.
        flows: u32,
    },
    /// Per-host Poisson arrivals with sizes from a CDF, as HPCC's `traffic_gen.py` makes
    /// them ([`crate::flows::traffic`]): each host offers `load` of its link over `duration_us`.
    PoissonCdf {
        /// Hosts taking part (empty: every host).
        #[serde(default)]
        hosts: Vec<usize>,
        /// Offered load per host link (0..1].
        load: f64,
        /// `websearch`, `fb_hadoop`, or the path of a `size percent` CDF file.
        cdf: String,
        /// Arrivals during this long, µs.
        duration_us: f64,
        /// First arrival no earlier than this, µs.
        #[serde(default)]
        start_us: f64,
    },
    /// The flows of an HPCC flow file (`src dst pg dport size start_s`; path relative to the
    /// working directory). Hosts are node ids of an `hpcc_file` topology, else host indices;
    /// priority group `pg` becomes DSCP `8 * pg`.
    FlowFile {
        /// The file.
        path: std::path::PathBuf,
    },
}

/// One flow a host sends, as a workload plans it. The stand-in engine honours every field; the
/// RC engine takes the sizes, start, DSCP, SEND, ring gating and controller, and leaves
/// addresses, QPN, UDP port, ECN and pacing to its endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowConfig {
    /// Destination address.
    pub dst_ip: IpAddr,
    /// Destination QP number (the CNP for this flow comes back to the same number here).
    pub qpn: u32,
    /// UDP source port (ECMP entropy).
    pub udp_src_port: u16,
    /// DSCP (26 → priority 3, the usual RoCE class).
    pub dscp: u8,
    /// 802.1Q priority, if frames should be tagged (VLAN 0).
    pub pcp: Option<u8>,
    /// Send ECT(0) (else Not-ECT).
    pub ect: bool,
    /// Payload bytes per packet (path MTU).
    pub mtu: usize,
    /// Bytes per message (WRITE FIRST/MIDDLE/LAST or ONLY).
    pub message_bytes: u64,
    /// Total bytes to send; `None` sends forever.
    pub total_bytes: Option<u64>,
    /// Pacing rate in Gbit/s of wire bytes; `None` sends whenever the NIC is free.
    pub rate_gbps: Option<f64>,
    /// When to start.
    pub start: Instant,
    /// SEND instead of RDMA WRITE.
    pub send: bool,
    /// Collective gating: the flow's slots in its sender's and receiver's [`MemberGate`]s
    /// (it sends a step's bytes once the step's inputs arrived).
    pub gate: Option<GateSlots>,
    /// Congestion control (reacting to CNPs for `qpn`); `None` sends at the pacing rate.
    pub cc: Option<CcConfig>,
}

impl FlowConfig {
    /// An unpaced, endless WRITE stream of 1 MiB messages with a 1024-byte MTU on priority 3.
    pub fn bulk(dst_ip: IpAddr, qpn: u32) -> Self {
        FlowConfig {
            dst_ip,
            qpn,
            udp_src_port: 0xc000 | (qpn as u16 & 0x3fff),
            dscp: 26,
            pcp: None,
            ect: true,
            mtu: 1024,
            message_bytes: 1 << 20,
            total_bytes: None,
            rate_gbps: None,
            start: Instant::ZERO,
            send: false,
            gate: None,
            cc: None,
        }
    }

    /// Bytes the flow may have sent by now: all of them, or with collective gating what its
    /// host's `gate` allows its out-slot.
    pub fn allowance(&self, gate: Option<&MemberGate>) -> u64 {
        let total = self.total_bytes.unwrap_or(u64::MAX);
        match (self.gate, gate) {
            (Some(slots), Some(g)) => total.min(g.allowance(slots.out)),
            _ => total,
        }
    }

    /// When a gated flow may next send as far as its compute phase goes (`None`: not gated, or
    /// every iteration done).
    pub fn gate_start(&self, gate: Option<&MemberGate>) -> Option<Instant> {
        gate.filter(|_| self.gate.is_some())?.iteration_start()
    }
}

/// Sizes every flow shares.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowDefaults {
    /// Payload bytes per packet.
    pub mtu: usize,
    /// Bytes per message.
    pub message_bytes: u64,
    /// Line rate of a host link, Gbit/s (for load computations).
    pub link_gbps: f64,
}

/// The expansion of a set of workloads: flows per host and the flow meter's flow list.
#[derive(Debug, Default)]
pub struct Plan {
    /// Flows each host sends, indexed by host.
    pub host_flows: Vec<Vec<FlowConfig>>,
    /// What the flow meter follows (one per flow, same order as created).
    pub flows: Vec<FlowSpec>,
    /// Collectives, in workload order.
    pub collectives: Vec<CollectivePlan>,
    /// The collective gate of each host that is a member of one, indexed by host.
    pub gates: Vec<Option<MemberGate>>,
    next_qpn: u32,
    /// What the workloads may make.
    limits: Limits,
}

/// Why workloads cannot be expanded into flows.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A host index beyond the topology's hosts.
    #[error("host {host} does not exist (the topology has {hosts})")]
    NoHost {
        /// The index named.
        host: usize,
        /// Hosts in the topology.
        hosts: usize,
    },
    /// Workload `workload` makes more flows than allowed.
    #[error("workload {workload}: {source}")]
    TooMany {
        /// Index of the workload.
        workload: usize,
        /// The ceiling passed.
        source: LimitError,
    },
    /// A collective's compute phase is negative or not a number.
    #[error("compute_us must be >= 0, got {0}")]
    ComputeUs(f64),
    /// A collective that cannot be scheduled.
    #[error(transparent)]
    Schedule(CollectiveError),
    /// The collective of the workload of this index cannot be planned (members repeated or in
    /// two collectives, on different rails).
    #[error("workload {0}: {1}")]
    Collective(usize, #[source] CollectiveError),
    /// `flow_sizes` with fewer than two hosts or a load outside (0, 1].
    #[error("flow_sizes needs 2+ hosts and 0 < load <= 1")]
    FlowSizes,
    /// `poisson_cdf` with fewer than two hosts or a load outside (0, 1].
    #[error("poisson_cdf needs 2+ hosts and 0 < load <= 1")]
    PoissonCdf,
    /// Workload `workload`'s Poisson arrivals draw more flows than allowed.
    #[error("workload {workload}: poisson_cdf draws more flows than allowed: {}", .limit.as_ref().map_or_else(String::new, ToString::to_string))]
    PoissonTooMany {
        /// Index of the workload.
        workload: usize,
        /// The ceiling passed.
        limit: Option<LimitError>,
    },
    /// A size distribution or flow file that cannot be read.
    #[error(transparent)]
    File(#[from] HpccError),
    /// A flow file names a node that is not a host.
    #[error("{file}: node {node} is not a host of the topology")]
    NotAHost {
        /// The flow file.
        file: String,
        /// The node id.
        node: usize,
    },
}

impl Plan {
    /// Expands `workloads` over hosts with addresses `ips`.
    pub fn new(
        workloads: &[Workload],
        ips: &[IpAddr],
        defaults: FlowDefaults,
        seed: u64,
    ) -> Result<Plan, WorkloadError> {
        Self::new_over(workloads, ips, None, defaults, seed, &Limits::default())
    }

    /// [`Plan::new`] where flow files name host `i` by `nodes[i]` (an HPCC topology's node
    /// ids); `None` names hosts by index. Workloads that make more flows than `limits` allow
    /// are refused, before their flows are made where the count is known up front (a flow
    /// file, bursts, `flow_sizes`), else as they are drawn.
    pub fn new_over(
        workloads: &[Workload],
        ips: &[IpAddr],
        nodes: Option<&[usize]>,
        defaults: FlowDefaults,
        seed: u64,
        limits: &Limits,
    ) -> Result<Plan, WorkloadError> {
        let mut plan = Plan {
            host_flows: vec![Vec::new(); ips.len()],
            gates: vec![None; ips.len()],
            next_qpn: 0x11,
            limits: *limits,
            ..Plan::default()
        };
        let mut rng = Pcg64::seed_from_u64(seed ^ 0x5eed_f10e);
        let check = |h: usize| {
            if h < ips.len() {
                Ok(h)
            } else {
                Err(WorkloadError::NoHost {
                    host: h,
                    hosts: ips.len(),
                })
            }
        };
        // A flow file names hosts by node id: the host of each node, looked up once.
        let host_of: Option<Vec<Option<usize>>> = nodes.map(|n| {
            let mut v = vec![None; n.iter().max().map_or(0, |&m| m + 1)];
            for (h, &node) in n.iter().enumerate() {
                if let Some(slot) = v.get_mut(node) {
                    *slot = Some(h);
                }
            }
            v
        });
        for (i, w) in workloads.iter().enumerate() {
            let too_many = |source| WorkloadError::TooMany {
                workload: i,
                source,
            };
            match w {
                Workload::Flow {
                    src,
                    dst,
                    bytes,
                    start_us,
                    rate_gbps,
                    dscp,
                    send,
                } => {
                    let (s, d) = (check(*src)?, check(*dst)?);
                    plan.room(1).map_err(too_many)?;
                    plan.add(ips, s, d, defaults, *bytes, *start_us, |f| {
                        f.rate_gbps = *rate_gbps;
                        f.dscp = *dscp;
                        f.send = *send;
                    });
                }
                Workload::Incast {
                    senders,
                    receiver,
                    bytes,
                    start_us,
                } => {
                    let d = check(*receiver)?;
                    plan.room(senders.len() as u64).map_err(too_many)?;
                    for &s in senders {
                        plan.add(ips, check(s)?, d, defaults, *bytes, *start_us, |_| {});
                    }
                }
                Workload::Microburst {
                    senders,
                    receiver,
                    burst_bytes,
                    period_us,
                    count,
                    start_us,
                } => {
                    let d = check(*receiver)?;
                    let n = u64::from(*count).saturating_mul(senders.len() as u64);
                    plan.room(n).map_err(too_many)?;
                    for k in 0..*count {
                        for &s in senders {
                            let at = start_us + f64::from(k) * period_us;
                            plan.add(ips, check(s)?, d, defaults, Some(*burst_bytes), at, |_| {});
                        }
                    }
                }
                Workload::AllReduce(collective) => {
                    let Collective {
                        hosts,
                        bytes,
                        algorithm,
                        compute_us,
                        ..
                    } = collective;
                    for &h in hosts {
                        check(h)?;
                    }
                    if !(compute_us.is_finite() && *compute_us >= 0.0) {
                        return Err(WorkloadError::ComputeUs(*compute_us));
                    }
                    let c = CollectivePlan {
                        steps: schedule(*algorithm, hosts.len(), *bytes)
                            .map_err(WorkloadError::Schedule)?,
                        message_bytes: (bytes / hosts.len() as u64).max(1),
                        collective: collective.clone(),
                    };
                    plan.add_collective(ips, defaults, c, i)?;
                }
                Workload::FlowSizes {
                    hosts,
                    load,
                    sizes,
                    flows,
                } => {
                    if hosts.len() < 2 || !(*load > 0.0 && *load <= 1.0) {
                        return Err(WorkloadError::FlowSizes);
                    }
                    plan.room(u64::from(*flows)).map_err(too_many)?;
                    // Arrivals per second over all hosts: load * n * link rate / mean size.
                    let bps = defaults.link_gbps * 1e9 * load * hosts.len() as f64;
                    let lambda = bps / 8.0 / sizes.mean().max(1.0);
                    let mut t_us = 0.0;
                    for _ in 0..*flows {
                        let u: f64 = rng.random::<f64>();
                        t_us += -(1.0 - u).ln() / lambda * 1e6;
                        let s = hosts[rng.random_range(0..hosts.len())];
                        let mut d = hosts[rng.random_range(0..hosts.len() - 1)];
                        if d == s {
                            d = hosts[hosts.len() - 1];
                        }
                        let size = sizes.sample(&mut rng);
                        plan.add(
                            ips,
                            check(s)?,
                            check(d)?,
                            defaults,
                            Some(size),
                            t_us,
                            |_| {},
                        );
                    }
                }
                Workload::PoissonCdf {
                    hosts,
                    load,
                    cdf,
                    duration_us,
                    start_us,
                } => {
                    let cdf = SizeCdf::named_or_file(cdf)?;
                    let spec = PoissonSpec {
                        hosts: if hosts.is_empty() {
                            (0..ips.len()).collect()
                        } else {
                            hosts.clone()
                        },
                        load: *load,
                        link_bps: defaults.link_gbps * 1e9,
                        start: Instant::ZERO + Duration::from_micros_f64(*start_us),
                        duration: Duration::from_micros_f64(*duration_us),
                    };
                    if spec.hosts.len() < 2 || !(*load > 0.0 && *load <= 1.0) {
                        return Err(WorkloadError::PoissonCdf);
                    }
                    let room = plan.limits.max_flows().saturating_sub(plan.flows.len());
                    let Some(flows) = poisson_flows_within(&cdf, &spec, seed, room) else {
                        return Err(WorkloadError::PoissonTooMany {
                            workload: i,
                            limit: plan.room(room as u64 + 1).err(),
                        });
                    };
                    for f in flows {
                        let (s, d) = (check(f.src)?, check(f.dst)?);
                        plan.add_line(ips, s, d, defaults, &f);
                    }
                }
                Workload::FlowFile { path } => {
                    let name = path.display().to_string();
                    let host =
                        |node: usize| match &host_of {
                            Some(h) => h.get(node).copied().flatten().ok_or_else(|| {
                                WorkloadError::NotAHost {
                                    file: name.clone(),
                                    node,
                                }
                            }),
                            None => check(node),
                        };
                    // Read a flow at a time: the file is never held whole.
                    let flows = flow_file::FlowReader::open(path, &plan.limits)?;
                    plan.room(flows.announced()).map_err(too_many)?;
                    for f in flows {
                        let f = f?;
                        let (s, d) = (host(f.src)?, host(f.dst)?);
                        plan.add_line(ips, s, d, defaults, &f);
                    }
                }
            }
        }
        Ok(plan)
    }

    /// Refuses `more` flows beyond those planned so far that `limits` do not allow.
    fn room(&self, more: u64) -> Result<(), LimitError> {
        self.limits
            .flows((self.flows.len() as u64).saturating_add(more))
    }

    /// Adds one HPCC-format flow line from host `src` to host `dst`.
    fn add_line(
        &mut self,
        ips: &[IpAddr],
        src: usize,
        dst: usize,
        defaults: FlowDefaults,
        f: &FlowLine,
    ) {
        let start_us = f.start_ns() as f64 / 1e3;
        self.add(ips, src, dst, defaults, Some(f.size), start_us, |c| {
            c.dscp = f.pg * 8;
        });
    }

    /// Adds collective `c`: a gate per member and a flow per (member, peer it sends to), each
    /// gated on its sender's gate and counted by its receiver's.
    fn add_collective(
        &mut self,
        ips: &[IpAddr],
        defaults: FlowDefaults,
        c: CollectivePlan,
        workload: usize,
    ) -> Result<(), WorkloadError> {
        let hosts = &c.collective.hosts;
        let compute = Duration::from_micros_f64_rounded(c.collective.compute_us);
        let mut gates: Vec<MemberGate> = c
            .steps
            .iter()
            .map(|s| MemberGate::new(s, c.collective.iterations, compute))
            .collect();
        for (i, &h) in hosts.iter().enumerate() {
            if hosts[..i].contains(&h) {
                return Err(WorkloadError::Collective(
                    workload,
                    CollectiveError::Repeated(h),
                ));
            }
            if self.gates.get(h).is_some_and(Option::is_some) {
                return Err(WorkloadError::Collective(
                    workload,
                    CollectiveError::TwoCollectives(h),
                ));
            }
        }
        let flows = gates.iter().map(|g| g.out_peers().len() as u64).sum();
        self.room(flows)
            .map_err(|source| WorkloadError::TooMany { workload, source })?;
        for m in 0..gates.len() {
            for (out, &p) in gates[m].out_peers().to_vec().iter().enumerate() {
                let inbound = gates[p].in_peers().iter().position(|&x| x == m);
                let slots = GateSlots {
                    out,
                    inbound: inbound.unwrap_or(0),
                };
                let total = gates[m].out_total(out);
                let (src, dst) = (hosts[m], hosts[p]);
                gates[p].set_in_qpn(slots.inbound, self.next_qpn);
                self.add(ips, src, dst, defaults, Some(total), 0.0, |f| {
                    f.gate = Some(slots);
                    f.message_bytes = c.message_bytes;
                });
            }
        }
        for (&h, g) in c.collective.hosts.iter().zip(gates) {
            if let Some(slot) = self.gates.get_mut(h) {
                *slot = Some(g);
            }
        }
        self.collectives.push(c);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        ips: &[IpAddr],
        src: usize,
        dst: usize,
        defaults: FlowDefaults,
        bytes: Option<u64>,
        start_us: f64,
        tweak: impl FnOnce(&mut FlowConfig),
    ) {
        let (Some(&src_ip), Some(&dst_ip)) = (ips.get(src), ips.get(dst)) else {
            return;
        };
        let qpn = self.next_qpn;
        self.next_qpn += 1;
        let start = Instant::ZERO + Duration::from_micros_f64_rounded(start_us);
        let mut flow = FlowConfig::bulk(dst_ip, qpn);
        flow.mtu = defaults.mtu;
        flow.message_bytes = defaults.message_bytes;
        flow.total_bytes = bytes;
        flow.start = start;
        tweak(&mut flow);
        let src_index = self.host_flows.get(src).map_or(0, Vec::len);
        self.flows.push(FlowSpec {
            name: format!("{src}->{dst}#{qpn}"),
            src_host: src,
            src_index,
            dst_host: dst,
            src_ip,
            dst_qpn: qpn,
            size_bytes: bytes,
            start_ns: start.as_nanos(),
        });
        if let Some(v) = self.host_flows.get_mut(src) {
            v.push(flow);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_all_reduce_workload_reads_its_collective_and_refuses_unknown_keys() {
        let w: Workload = toml::from_str(
            "kind = \"all_reduce\"\nhosts = [0, 1]\nbytes = \"4K\"\niterations = 2\ncompute_us = 5.0\n",
        )
        .unwrap();
        let expected = Collective {
            hosts: vec![0, 1],
            bytes: 4096,
            iterations: 2,
            algorithm: super::super::collective::Algorithm::Ring,
            compute_us: 5.0,
        };
        assert_eq!(w, Workload::AllReduce(expected));
        let err = toml::from_str::<Workload>(
            "kind = \"collective\"\nhosts = [0, 1]\nbytes = 4096\niterations = 2\nrounds = 3\n",
        )
        .unwrap_err();
        assert!(err.to_string().contains("unknown field `rounds`"), "{err}");
    }

    #[test]
    fn web_search_sizes_follow_the_cdf_median() {
        let mut rng = Pcg64::seed_from_u64(7);
        let d = SizeDist::WebSearch { scale: 1.0 };
        let mut v: Vec<u64> = (0..20_000).map(|_| d.sample(&mut rng)).collect();
        v.sort_unstable();
        // The CDF passes 0.53 at 53 kB: the median lies between 33 kB and 53 kB.
        let median = v[v.len() / 2];
        assert!(
            (33_000..=53_000).contains(&median),
            "median {median}, seed 7"
        );
    }
}
