//! The built-in experiments of `roce sim` as scenarios: incast, fairness, PFC congestion
//! spreading, ring AllReduce and link failure, each from a handful of parameters.
//!
//! They only build [`Scenario`]s; running them is the scenario runner's job.

use super::scenario::{LinkEvent, Scenario, SwitchSpec, TopologySpec};
use crate::engines::EngineKind;
use crate::flows::collective::{Algorithm, Collective};
use crate::flows::workload::Workload;
use crate::net::fabric::LinkConfig;
use crate::switching::switch::EcnThresholds;
use roce_proto::time::Duration;

/// Which built-in experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuiltinKind {
    /// `senders` hosts to one receiver through one switch (default 16).
    Incast,
    /// `senders` long flows through one dumbbell bottleneck (default 4).
    Fairness,
    /// A victim flow (host 0 to the second right host) beside an incast of `senders` (default 4)
    /// into the first right host; the victim shares no bottleneck with the incast.
    PfcSpreading,
    /// Ring AllReduce of 4 MiB per iteration among `senders` hosts on one switch (default 8).
    Allreduce,
    /// `senders` flows (default 4) from leaf 0 to leaf 1 of a 2x2 leaf-spine; the cable
    /// leaf0r0-spine0r0 fails at a third of the run and recovers at two thirds.
    LinkFailure,
}

impl BuiltinKind {
    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            BuiltinKind::Incast => "incast",
            BuiltinKind::Fairness => "fairness",
            BuiltinKind::PfcSpreading => "pfc-spreading",
            BuiltinKind::Allreduce => "allreduce",
            BuiltinKind::LinkFailure => "link-failure",
        }
    }
}

/// Parameters shared by the built-ins.
#[derive(Clone, Debug, PartialEq)]
pub struct Builtin {
    /// Sender count (each experiment has its own default).
    pub senders: Option<usize>,
    /// Host link rate, Gbit/s.
    pub link_gbps: f64,
    /// One-way propagation delay per link, µs.
    pub delay_us: f64,
    /// ECN marking on every switch queue.
    pub ecn: Option<EcnThresholds>,
    /// Congestion control name.
    pub cc: String,
    /// Run time, µs (default per experiment).
    pub duration_us: Option<f64>,
    /// Warm-up, µs (default a fifth of the run).
    pub warmup_us: Option<f64>,
    /// Seed.
    pub seed: u64,
    /// PFC on the lossless class.
    pub pfc: bool,
    /// Host engine: the real RC endpoint (the default) or the stand-in senders.
    pub engine: EngineKind,
}

impl Default for Builtin {
    fn default() -> Self {
        Builtin {
            senders: None,
            link_gbps: 100.0,
            delay_us: 1.0,
            ecn: Some(EcnThresholds {
                kmin_bytes: 100_000,
                kmax_bytes: 400_000,
                pmax: 0.2,
                step_bytes: None,
            }),
            cc: "none".into(),
            duration_us: None,
            warmup_us: None,
            seed: 1,
            pfc: true,
            engine: EngineKind::Rc,
        }
    }
}

fn flow(src: usize, dst: usize) -> Workload {
    Workload::Flow {
        src,
        dst,
        bytes: None,
        start_us: 0.0,
        rate_gbps: None,
        dscp: 26,
        send: false,
    }
}

impl Builtin {
    fn base(&self, kind: BuiltinKind, topology: TopologySpec, default_us: f64) -> Scenario {
        Scenario {
            name: kind.name().into(),
            seed: self.seed,
            duration_us: self.duration_us.unwrap_or(default_us),
            warmup_us: self.warmup_us,
            sample_us: 1.0,
            cc: self.cc.clone(),
            cc_params: Vec::new(),
            engine: self.engine,
            mtu: 1024,
            message_bytes: 1 << 20,
            cnp_interval_us: None,
            topology,
            switch: SwitchSpec {
                pfc: self.pfc,
                ecn: self.ecn,
                lossless: vec![3],
                ..SwitchSpec::default()
            },
            workloads: Vec::new(),
            link_events: Vec::new(),
            failures: Vec::new(),
            routing: Default::default(),
            bin_us: None,
            monitor_host: None,
            spray: None,
            recovery: Default::default(),
            reorder_window_us: 0.0,
            controllers: Default::default(),
        }
    }

    fn link(&self) -> LinkConfig {
        let delay = Duration::from_micros_f64_rounded(self.delay_us);
        LinkConfig::new(self.link_gbps, delay.as_nanos())
    }

    /// The scenario of experiment `kind`.
    pub fn scenario(&self, kind: BuiltinKind) -> Scenario {
        let link = self.link();
        match kind {
            BuiltinKind::Incast => {
                let n = self.senders.unwrap_or(16);
                let mut s = self.base(kind, TopologySpec::Star { hosts: n + 1, link }, 2_000.0);
                s.workloads.push(Workload::Incast {
                    senders: (0..n).collect(),
                    receiver: n,
                    bytes: None,
                    start_us: 0.0,
                });
                s
            }
            BuiltinKind::Fairness => {
                let n = self.senders.unwrap_or(4);
                let topo = TopologySpec::Dumbbell {
                    left: n,
                    right: n,
                    link,
                    core: link,
                };
                let mut s = self.base(kind, topo, 2_000.0);
                s.workloads.extend((0..n).map(|i| flow(i, n + i)));
                s
            }
            BuiltinKind::PfcSpreading => {
                // Left: victim sender 0 and incast senders 1..=k; right: incast receiver,
                // victim receiver, then k more incast senders. The core has room for all.
                let k = self.senders.unwrap_or(4).div_ceil(2).max(1);
                let core = LinkConfig::new(
                    (self.link_gbps * (k as f64 + 2.0)).min(800.0),
                    link.delay_ns,
                );
                let (left, right) = (k + 1, k + 2);
                let topo = TopologySpec::Dumbbell {
                    left,
                    right,
                    link,
                    core,
                };
                let mut s = self.base(kind, topo, 2_000.0);
                let receiver = left;
                let mut senders: Vec<usize> = (1..=k).collect();
                senders.extend(left + 2..left + 2 + k);
                s.workloads.push(flow(0, left + 1));
                s.workloads.push(Workload::Incast {
                    senders,
                    receiver,
                    bytes: None,
                    start_us: 0.0,
                });
                s.monitor_host = Some(receiver);
                s
            }
            BuiltinKind::Allreduce => {
                let n = self.senders.unwrap_or(8);
                let mut s = self.base(kind, TopologySpec::Star { hosts: n, link }, 2_000.0);
                s.workloads.push(Workload::AllReduce(Collective {
                    hosts: (0..n).collect(),
                    bytes: 4 << 20,
                    iterations: 1000,
                    algorithm: Algorithm::Ring,
                    compute_us: 0.0,
                }));
                s
            }
            BuiltinKind::LinkFailure => {
                let n = self.senders.unwrap_or(4);
                let topo = TopologySpec::LeafSpine {
                    leaves: 2,
                    spines: 2,
                    hosts_per_leaf: n,
                    rails: 1,
                    link,
                    uplink: link,
                };
                let mut s = self.base(kind, topo, 3_000.0);
                s.workloads.extend((0..n).map(|i| flow(i, n + i)));
                let t = s.duration_us;
                for (at_us, up) in [(t / 3.0, false), (2.0 * t / 3.0, true)] {
                    s.link_events.push(LinkEvent {
                        a: "leaf0r0".into(),
                        b: "spine0r0".into(),
                        at_us,
                        up,
                    });
                }
                s
            }
        }
    }
}
