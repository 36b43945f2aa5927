//! Scenario files: a TOML description of a topology, switch settings, workloads and link events,
//! and the runner that turns one into a fabric of hosts (real RC endpoints, or the stand-in
//! engines with `engine = "stand-in"`), runs it and summarizes it.
//!
//! Parsing and validation errors are [`ScenarioError`]s with one clear line each; the run itself
//! cannot fail.

use serde::{Deserialize, Serialize};

pub use super::failures::LinkEvent;
use super::failures::{self, Failure};
use super::outage::{self, Outage};
use super::settle;
use super::summary::{self, RunSummary};
pub use super::topology_spec::TopologySpec;
use crate::engines::{EngineKind, LossRecovery, RcEngine, RcRecovery, RcSetupError};
use crate::engines::{ScenarioEngine, StandInEngine};
use crate::flows::collective::{self, CollectivePlan};
use crate::flows::workload::{FlowDefaults, Plan, Workload, WorkloadError};
use crate::hpcc::topology_file::TopologyFile;
use crate::limits::bounds::{at_most, at_most_f64, clip_quoted, LimitError, Limits};
use crate::limits::bounds::{MAX_BINS, MAX_DURATION_US, MAX_SAMPLES, MAX_THREADS};
use crate::net::custom_topology::{self, WiringError};
use crate::net::ecmp::{self, EcmpLoad, RailLoad};
use crate::net::fabric::{Fabric, FabricError, LinkConfig};
use crate::net::fat_tree::ThreeTier;
use crate::net::reroute::Routing;
use crate::net::spray::{Reordering, Spray};
use crate::net::topology::{End, Topology};
use crate::record::series::Recorder;
use crate::record::telemetry::Telemetry;
use crate::switching::sched;
pub use crate::switching::switch_spec::SwitchSpec;
use crate::{HostId, Node, SwitchId};
use roce_proto::cc::{CcConfig, CcRegistry, Rate};
use roce_proto::size;
use roce_proto::time::{Duration, Instant};
use std::net::IpAddr;

/// Why a scenario could not be run.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file is not valid TOML for a scenario.
    #[error("scenario: {0}")]
    Parse(String),
    /// A value is out of range or inconsistent.
    #[error("scenario: {0}")]
    Invalid(String),
    /// The fabric refused the topology.
    #[error("scenario: {0}")]
    Fabric(#[from] FabricError),
    /// It asks for more than this build or the memory allows (see [`crate::limits::bounds`]).
    #[error("scenario: {0}")]
    Limit(LimitError),
}

impl From<LimitError> for ScenarioError {
    fn from(e: LimitError) -> Self {
        ScenarioError::Limit(e)
    }
}

fn d_sample() -> f64 {
    1.0
}
fn d_mtu() -> usize {
    1024
}
fn d_msg() -> u64 {
    1 << 20
}
/// The notification point's interval when no congestion control says one, µs.
const DEFAULT_CNP_US: f64 = 50.0;
fn d_cc() -> String {
    "none".into()
}
fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// A complete experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Name for reports.
    pub name: String,
    /// RNG seed.
    #[serde(default)]
    pub seed: u64,
    /// Virtual run time, µs.
    pub duration_us: f64,
    /// Measurement starts here, µs (default: a fifth of the run).
    #[serde(default)]
    pub warmup_us: Option<f64>,
    /// Time-series sampling interval, µs.
    #[serde(default = "d_sample")]
    pub sample_us: f64,
    /// Congestion control of every sender, by name (see `roce cc list`): "none", "dcqcn-mlx",
    /// "dcqcn-paper", "dctcp", ...
    #[serde(default = "d_cc")]
    pub cc: String,
    /// Host engine: "rc" (the default: the real `Endpoint`, its QPs, DCQCN and notification
    /// point) or "stand-in" (the fabric's stand-in senders, which never retransmit; its old
    /// name "test" still reads). Also accepted as `transport`.
    #[serde(default, alias = "transport")]
    pub engine: EngineKind,
    /// Parameter overrides for `cc`, as `name=value`.
    #[serde(default)]
    pub cc_params: Vec<String>,
    /// Payload bytes per packet.
    #[serde(default = "d_mtu")]
    pub mtu: usize,
    /// Bytes per message.
    #[serde(default = "d_msg", deserialize_with = "size::deserialize_bytes")]
    pub message_bytes: u64,
    /// Minimum time between CNPs per QP at receivers, µs (0 disables CNPs). Default: the
    /// interval the congestion control is designed with ([`CcConfig::cnp_interval`]: 4 us for
    /// dcqcn-mlx, 1 ns for DCTCP (every mark), 50 us for dcqcn-paper), 50 us without one.
    #[serde(default)]
    pub cnp_interval_us: Option<f64>,
    /// How the RC engine's QPs recover lost packets: "go-back-n" (the default) or
    /// "selective-repeat" (IRN; also "selective"), which tolerates the reordering of spraying
    /// and adaptive routing.
    #[serde(default, skip_serializing_if = "LossRecovery::is_go_back_n")]
    pub recovery: LossRecovery,
    /// Selective repeat: how long a packet a NAK showed missing may still be in flight
    /// (reordered, not lost) before it is resent, µs (default 0: at once).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reorder_window_us: f64,
    /// The network.
    pub topology: TopologySpec,
    /// Switch settings.
    #[serde(default)]
    pub switch: SwitchSpec,
    /// Traffic.
    #[serde(default)]
    pub workloads: Vec<Workload>,
    /// Link failures and recoveries.
    #[serde(default)]
    pub link_events: Vec<LinkEvent>,
    /// Flapping cables, switch reboots, lossy cables.
    #[serde(default)]
    pub failures: Vec<Failure>,
    /// Failure detection delay and routing convergence time (0 and 0 by default).
    #[serde(default)]
    pub routing: Routing,
    /// Width of the per-flow rate bins of the summary, µs (default: a twelfth of the run).
    #[serde(default)]
    pub bin_us: Option<f64>,
    /// Host whose switch-facing port is the bottleneck reports watch (default: the topology's).
    #[serde(default)]
    pub monitor_host: Option<usize>,
    /// Spraying from every host's NIC (`[spray]`, default off): each QP's packets change UDP
    /// source port, the ECMP entropy, per packet or per flowlet ([`Spray`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spray: Option<Spray>,
    /// The controllers `cc` may name: the built-ins unless the program that runs the scenario
    /// added its own ([`Scenario::from_toml_with`]). Not part of the file.
    #[serde(skip)]
    pub controllers: CcRegistry,
}

impl Scenario {
    /// Parses a scenario from TOML text (its `cc` one of the built-in controllers).
    pub fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_toml_with(text, CcRegistry::builtin())
    }

    /// Parses a scenario from TOML text whose `cc` may name any of `controllers`.
    pub fn from_toml_with(text: &str, controllers: CcRegistry) -> Result<Scenario, ScenarioError> {
        let mut s: Scenario =
            toml::from_str(text).map_err(|e| ScenarioError::Parse(clip_quoted(e.message())))?;
        s.controllers = controllers;
        s.validate()?;
        Ok(s)
    }

    /// Checks ranges, and that the topology and the time series stay within the ceilings
    /// of [`crate::limits::bounds`] (before anything is built).
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let bad = |m: String| Err(ScenarioError::Invalid(m));
        if self.duration_us.is_nan() || self.duration_us <= 0.0 {
            return bad(format!(
                "duration_us must be positive, got {}",
                self.duration_us
            ));
        }
        at_most_f64(
            "µs of virtual time (duration_us)",
            self.duration_us,
            MAX_DURATION_US,
        )?;
        self.size()?;
        if self
            .warmup_us
            .is_some_and(|w| !(0.0..self.duration_us).contains(&w))
        {
            return bad("warmup_us must lie in [0, duration_us)".into());
        }
        if self.sample_us.is_nan() || self.sample_us <= 0.0 {
            return bad("sample_us must be positive".into());
        }
        at_most_f64(
            "samples of the time series (duration_us / sample_us)",
            self.duration_us / self.sample_us,
            MAX_SAMPLES,
        )?;
        if self.bin_us.is_some_and(|b| b.is_nan() || b <= 0.0) {
            return bad("bin_us must be positive".into());
        }
        if let Some(Err(e)) = self.spray.map(|s| s.check()) {
            return bad(e);
        }
        self.check_recovery().or_else(bad)?;
        at_most_f64(
            "telemetry bins (duration_us / bin_us)",
            self.bins(),
            MAX_BINS,
        )?;
        if !(64..=9000).contains(&self.mtu) {
            return bad(format!("mtu {} is outside 64..=9000", self.mtu));
        }
        if let Some(shape) = self.three_tier() {
            shape.check().or_else(|e| bad(e.to_string()))?;
        }
        self.hpcc_nodes()?;
        self.cc_config()?;
        if self.uses_int() && self.engine == EngineKind::StandIn {
            return bad(format!(
                "cc {} needs INT echoed by the receiver, which the stand-in engine does not do: use engine = \"rc\"",
                self.cc
            ));
        }
        for f in &self.failures {
            f.check().or_else(|e| bad(e.to_string()))?;
        }
        self.check_collectives().or_else(|e| bad(e.to_string()))?;
        self.shape().map(drop).or_else(|e| bad(e.to_string()))?;
        if let Some(e) = &self.switch.ecn {
            if e.kmax_bytes < e.kmin_bytes || !(0.0..=1.0).contains(&e.pmax) {
                return bad("ecn needs kmin <= kmax and 0 <= pmax <= 1".into());
            }
        }
        if let Some(w) = &self.switch.pfc_watchdog {
            w.check().or_else(bad)?;
        }
        Ok(())
    }

    /// `recovery` and `reorder_window_us` make sense together and with the engine.
    fn check_recovery(&self) -> Result<(), String> {
        let w = self.reorder_window_us;
        if !(w.is_finite() && (0.0..=MAX_DURATION_US).contains(&w)) {
            return Err(format!(
                "reorder_window_us is {w}: a duration of 0 or more µs, at most {MAX_DURATION_US}"
            ));
        }
        let selective = self.recovery == LossRecovery::SelectiveRepeat;
        if w > 0.0 && !selective {
            return Err("reorder_window_us needs recovery = \"selective-repeat\"".into());
        }
        if selective && self.engine == EngineKind::StandIn {
            return Err("recovery = \"selective-repeat\" needs engine = \"rc\" (the stand-in never retransmits)".into());
        }
        Ok(())
    }

    /// Every collective can be scheduled and stays on one rail ([`collective::check`]).
    fn check_collectives(&self) -> Result<(), WorkloadError> {
        let rails = match self.topology {
            TopologySpec::LeafSpine { rails, .. } => rails,
            _ => 1,
        };
        for (i, w) in self.workloads.iter().enumerate() {
            if let Workload::AllReduce(c) = w {
                collective::check(c.algorithm, &c.hosts, c.bytes, rails)
                    .map_err(|e| WorkloadError::Collective(i, e))?;
            }
        }
        Ok(())
    }

    /// Whether the senders' controller uses in-band telemetry (then switches stamp INT and
    /// the RC endpoints send and echo it, with no setting of the user's).
    pub fn uses_int(&self) -> bool {
        self.cc_config()
            .ok()
            .flatten()
            .is_some_and(|c| c.uses_int())
    }

    /// Whether the senders' controller is defined with a step marker (DCTCP): the switches'
    /// `ecn` marks every packet at or above Kmin unless it names its own `step_bytes`
    /// (`ecn_by_rate` is taken as written, as HPCC config files give it).
    pub fn step_marking(&self) -> bool {
        self.cc_config()
            .ok()
            .flatten()
            .is_some_and(|c| c.step_marking())
    }

    /// The senders' congestion control, `None` for "none".
    pub fn cc_config(&self) -> Result<Option<CcConfig>, ScenarioError> {
        if self.cc == "none" {
            return Ok(None);
        }
        let line = Rate::from_bps(self.host_link().rate_bps());
        let invalid =
            |e: &dyn std::fmt::Display| ScenarioError::Invalid(clip_quoted(&e.to_string()));
        let mut cfg = self
            .controllers
            .config(&self.cc, line)
            .map_err(|e| invalid(&e))?;
        for setting in &self.cc_params {
            cfg.apply(setting).map_err(|e| invalid(&e))?;
        }
        Ok(Some(cfg))
    }

    /// RC endpoints for every host, one connected QP pair per flow; sets the QPN the flow meter
    /// follows for each flow to the receiver's QP.
    fn rc_engines(
        &self,
        ips: &[IpAddr],
        plan: &mut Plan,
        cnp: Duration,
    ) -> Result<Vec<ScenarioEngine>, ScenarioError> {
        let invalid = |m: String| ScenarioError::Invalid(m);
        let np = (cnp > Duration::ZERO).then_some(cnp);
        let recovery = RcRecovery {
            mode: self.recovery.verbs(),
            reorder_window: Duration::from_micros_f64(self.reorder_window_us),
        };
        let mut rc = ips
            .iter()
            .enumerate()
            .map(|(i, &ip)| {
                let h = RcEngine::new(ip, np, recovery)?;
                Ok(match plan.gates.get(i).cloned().flatten() {
                    Some(g) => h.with_gate(g),
                    None => h,
                })
            })
            .collect::<Result<Vec<_>, RcSetupError>>()
            .map_err(|e| invalid(e.to_string()))?;
        for spec in &mut plan.flows {
            let flow = plan
                .host_flows
                .get(spec.src_host)
                .and_then(|v| v.get(spec.src_index))
                .ok_or_else(|| invalid("flow without a sender".into()))?;
            let two = || invalid(format!("flow {} needs two distinct hosts", spec.name));
            let (lo, hi) = (
                spec.src_host.min(spec.dst_host),
                spec.src_host.max(spec.dst_host),
            );
            if lo == hi || hi >= rc.len() {
                return Err(two());
            }
            let (left, right) = rc.split_at_mut(hi);
            let (Some(a), Some(b)) = (left.get_mut(lo), right.first_mut()) else {
                return Err(two());
            };
            let (src, dst) = if spec.src_host == lo { (a, b) } else { (b, a) };
            let (qpn, _) = RcEngine::connect(src, dst, flow).map_err(|e| invalid(e.to_string()))?;
            spec.dst_qpn = qpn;
        }
        Ok(rc
            .into_iter()
            .map(|h| ScenarioEngine::Rc(Box::new(h)))
            .collect())
    }

    /// Stand-in engines for every host, each sending its flows of `plan`.
    fn stand_in_engines(ips: &[IpAddr], plan: &Plan, cnp: Duration) -> Vec<ScenarioEngine> {
        let engine = |(i, &ip): (usize, &IpAddr)| {
            let mut h = StandInEngine::new(ip);
            if cnp > Duration::ZERO {
                h = h.with_cnp_interval(cnp);
            }
            for f in plan.host_flows.get(i).into_iter().flatten() {
                h = h.with_flow(f.clone());
            }
            if let Some(g) = plan.gates.get(i).cloned().flatten() {
                h = h.with_gate(g);
            }
            ScenarioEngine::StandIn(Box::new(h))
        };
        ips.iter().enumerate().map(engine).collect()
    }

    /// Warm-up end.
    pub fn warmup(&self) -> Instant {
        Instant::ZERO + Duration::from_micros_f64(self.warmup_us.unwrap_or(self.duration_us / 5.0))
    }

    /// The end of the run.
    pub fn end(&self) -> Instant {
        Instant::ZERO + Duration::from_micros_f64(self.duration_us)
    }

    /// The receivers' sequence counters over every host of `fabric` (and selective repeat's,
    /// when it is on).
    fn reordering(&self, fabric: &Fabric<ScenarioEngine>) -> Reordering {
        let mut r = Reordering::default();
        let selective = self.recovery == LossRecovery::SelectiveRepeat;
        for h in (0..fabric.host_count()).filter_map(|h| fabric.engine(HostId(h))) {
            let ((oos, dup), (placed, sacks)) = (h.sequence_counters(), h.placement_counters());
            r.out_of_sequence += oos;
            r.duplicate_request += dup;
            if selective {
                *r.out_of_order_placed.get_or_insert(0) += placed;
                *r.selective_naks.get_or_insert(0) += sacks;
            }
        }
        r
    }

    /// The topology this describes.
    pub fn topology(&self) -> Topology {
        let mut t = self.shape().unwrap_or_else(|_| Topology::new());
        // Dynamic PFC's alpha is for the hosts' NICs; faster ports scale it.
        let nic_bps = self.host_link().rate_bps();
        for (_, cfg) in t.switches.iter_mut() {
            if let Some(d) = cfg.pfc.as_mut().and_then(|p| p.dynamic.as_mut()) {
                if d.nic_bps == 0 {
                    d.nic_bps = nic_bps;
                }
            }
        }
        if self.switch.ecmp_salt_per_switch {
            for (i, (_, cfg)) in t.switches.iter_mut().enumerate() {
                cfg.ecmp_salt = ecmp::salt_of(self.switch.ecmp_salt, i);
            }
        }
        t
    }

    /// The topology before per-switch settings; fails for a written-out one naming what does
    /// not exist.
    fn shape(&self) -> Result<Topology, WiringError> {
        let mut cfg = self.switch.config();
        cfg.int |= self.uses_int();
        if self.step_marking() {
            // DCTCP's AQM: a step at K = Kmin unless the scenario sets its own `step_bytes`
            // (`step_bytes = kmax_bytes` keeps the RED ramp).
            for e in cfg.ecn.iter_mut().flatten() {
                e.step_bytes.get_or_insert(e.kmin_bytes);
            }
        }
        Ok(match &self.topology {
            TopologySpec::Custom {
                switches,
                hosts,
                cables,
                link,
            } => custom_topology::build(switches, *hosts, cables, *link, &cfg)?,
            TopologySpec::BackToBack { link } => Topology::back_to_back(*link),
            TopologySpec::Star { hosts, link } => Topology::star(*hosts, *link, cfg),
            TopologySpec::Dumbbell {
                left,
                right,
                link,
                core,
            } => Topology::dumbbell(*left, *right, *link, *core, cfg),
            TopologySpec::LeafSpine {
                leaves,
                spines,
                hosts_per_leaf,
                rails,
                link,
                uplink,
            } => Topology::leaf_spine(
                *leaves,
                *spines,
                *hosts_per_leaf,
                *rails,
                *link,
                *uplink,
                cfg,
            ),
            TopologySpec::ThreeTier(_) | TopologySpec::FatTree { .. } => self
                .three_tier()
                .and_then(|s| Topology::three_tier(&s, cfg).ok())
                .unwrap_or_default(),
            TopologySpec::HpccFile { path, loss } => {
                let mut t = TopologyFile::load(path)
                    .map(|f| f.to_topology(|_| cfg.clone()))
                    .unwrap_or_default();
                for c in t.cables.iter_mut().filter(|c| c.2.loss == 0.0) {
                    c.2.loss = *loss;
                }
                t
            }
        })
    }

    /// The fat-tree shape of a `three_tier` or `fat_tree` topology.
    fn three_tier(&self) -> Option<ThreeTier> {
        match self.topology {
            TopologySpec::ThreeTier(shape) => Some(shape),
            TopologySpec::FatTree { k, link } => Some(ThreeTier::k_ary(k, link)),
            _ => None,
        }
    }

    /// The node id of every host in an `hpcc_file` topology (host `i` is node `ids[i]`);
    /// `None` for other topologies, whose hosts are their own ids.
    pub fn host_node_ids(&self) -> Option<Vec<usize>> {
        self.hpcc_nodes().ok().flatten().map(|f| f.hosts())
    }

    /// The HPCC topology file, if the topology is one.
    fn hpcc_nodes(&self) -> Result<Option<TopologyFile>, ScenarioError> {
        match &self.topology {
            TopologySpec::HpccFile { path, .. } => TopologyFile::load(path)
                .map(Some)
                .map_err(|e| ScenarioError::Invalid(e.to_string())),
            _ => Ok(None),
        }
    }

    fn host_link(&self) -> LinkConfig {
        match &self.topology {
            TopologySpec::BackToBack { link }
            | TopologySpec::Star { link, .. }
            | TopologySpec::Dumbbell { link, .. }
            | TopologySpec::LeafSpine { link, .. }
            | TopologySpec::FatTree { link, .. }
            | TopologySpec::Custom { link, .. } => *link,
            TopologySpec::ThreeTier(shape) => shape.link,
            TopologySpec::HpccFile { .. } => {
                let rate = self
                    .hpcc_nodes()
                    .ok()
                    .flatten()
                    .and_then(|f| f.nic_rate_bps());
                LinkConfig::new(rate.unwrap_or(100_000_000_000) as f64 / 1e9, 1000)
            }
        }
    }

    /// Builds the fabric with its engines, ready to run.
    pub fn build(&self) -> Result<Built, ScenarioError> {
        self.build_within(&Limits::default(), 1)
    }

    /// [`Scenario::build`] within `limits`: given a memory, the scenario's `Footprint` on
    /// `threads` threads is checked against it before the topology is made, and again with
    /// the flows once the workloads made them, before their engines are.
    pub fn build_within(&self, limits: &Limits, threads: usize) -> Result<Built, ScenarioError> {
        self.validate()?;
        at_most("threads", threads as u64, MAX_THREADS as u64)?;
        let fits = |flows: usize| -> Result<(), ScenarioError> {
            match limits.memory_bytes {
                Some(m) => Ok(self.footprint(flows, threads)?.check(m)?),
                None => Ok(()),
            }
        };
        fits(0)?;
        let topo = self.topology();
        let ips: Vec<_> = topo.hosts.iter().map(|h| h.1).collect();
        let defaults = FlowDefaults {
            mtu: self.mtu,
            message_bytes: self.message_bytes,
            link_gbps: self.host_link().gbps,
        };
        let nodes = self.hpcc_nodes()?.map(|f| f.hosts());
        let mut plan = Plan::new_over(
            &self.workloads,
            &ips,
            nodes.as_deref(),
            defaults,
            self.seed,
            limits,
        )
        .map_err(|e| ScenarioError::Invalid(e.to_string()))?;
        fits(plan.flows.len())?;
        let cc = self.cc_config()?;
        for f in plan.host_flows.iter_mut().flatten() {
            f.cc.clone_from(&cc);
        }
        let cnp = match (self.cnp_interval_us, &cc) {
            (Some(us), _) => Duration::from_micros_f64(us),
            (None, Some(cc)) => cc.cnp_interval(),
            (None, None) => Duration::from_micros_f64(DEFAULT_CNP_US),
        };
        let hosts = match self.engine {
            EngineKind::Rc => self.rc_engines(&ips, &mut plan, cnp)?,
            EngineKind::StandIn => Self::stand_in_engines(&ips, &plan, cnp),
        };
        let mut hosts: Vec<Option<ScenarioEngine>> = hosts.into_iter().map(Some).collect();
        let (mut fabric, cables) = topo.build(self.seed, |i, ip| {
            hosts
                .get_mut(i)
                .and_then(Option::take)
                .unwrap_or_else(|| ScenarioEngine::StandIn(Box::new(StandInEngine::new(ip))))
        })?;
        // RC responders take a flow's packets in order only (go-back-N), or place them inside
        // their window (selective repeat): so does the meter.
        fabric.flow_meter.in_order = self.engine == EngineKind::Rc;
        fabric.flow_meter.placed = self.recovery == LossRecovery::SelectiveRepeat;
        for spec in &plan.flows {
            fabric.register_flow(spec.clone());
        }
        if let TopologySpec::HpccFile { .. } = self.topology {
            // The simulator's PFC_OUTPUT_FILE lists every PFC frame a port received.
            fabric.log_pfc();
        }
        fabric.set_routing(self.routing);
        fabric.set_spray(self.spray);
        failures::apply(
            &mut fabric,
            &topo,
            &cables,
            &self.link_events,
            &self.failures,
        )
        .map_err(|e| ScenarioError::Invalid(e.to_string()))?;
        let bottleneck = match self.monitor_host {
            Some(h) => topo
                .cables
                .iter()
                .zip(&cables)
                .find_map(|((a, b, _), c)| match (a, b) {
                    (End::Switch(s), End::Host(x)) if *x == h => Some((*s, c.a_port)),
                    _ => None,
                }),
            None => topo.bottleneck,
        };
        let monitors: Vec<(SwitchId, u16)> = bottleneck
            .map(|(s, p)| (SwitchId(s), p))
            .into_iter()
            .collect();
        let interval = Duration::from_micros_f64(self.sample_us).max(Duration::NANOSECOND);
        let bin = Duration::from_micros_f64(self.bin_us.unwrap_or(self.duration_us / 12.0));
        let telemetry = Telemetry::new(bin, Some(ScenarioEngine::host_counters as _));
        let mut recorder = Recorder::new(interval, monitors.clone()).with_telemetry(telemetry);
        if cc.is_some() {
            let senders = (0..ips.len()).map(HostId).collect();
            recorder = recorder.with_probe(senders, ScenarioEngine::cc_samples);
        }
        fabric.record(recorder);
        Ok(Built {
            fabric,
            bottleneck: monitors.first().map(|&(s, p)| (Node::Switch(s), p)),
            collectives: plan.collectives,
        })
    }

    /// Builds, runs and summarizes. `progress(fraction)` is called every
    /// [`crate::PROGRESS_EVERY`] events and once at the end.
    pub fn run(&self, progress: impl FnMut(f64)) -> Result<(RunSummary, Built), ScenarioError> {
        self.run_built(self.build()?, progress)
    }

    /// Runs and summarizes what [`Scenario::build`] built (and the caller adjusted, e.g. with
    /// a port capture).
    pub fn run_built(
        &self,
        mut built: Built,
        mut progress: impl FnMut(f64),
    ) -> Result<(RunSummary, Built), ScenarioError> {
        let (end, warm) = (self.end(), self.warmup());
        let total = end.as_nanos().max(1) as f64;
        built
            .fabric
            .run_until_threads(warm, |t| progress(t.as_nanos() as f64 / total));
        built.fabric.mark_warmup();
        let at_warm = built
            .bottleneck
            .map(|(n, p)| built.fabric.port_counters(n, p));
        let bottleneck = built
            .bottleneck
            .map(|(n, p)| (n, p, built.fabric.port_counters(n, p).total()));
        built
            .fabric
            .run_until_threads(end, |t| progress(t.as_nanos() as f64 / total));
        progress(1.0);
        let f = &built.fabric;
        tracing::debug!(events = f.events(), elided = f.events_elided(), "events");
        built.fabric.finish_telemetry();
        let mut summary = RunSummary::collect(
            &self.name,
            self.seed,
            warm,
            &built.fabric,
            &built.collectives,
            bottleneck,
        );
        let cc = self.cc_config()?;
        summary.describe_cc(cc.as_ref(), &self.cc_params, self.cnp_interval_us);
        let disturbed = !self.failures.is_empty() || !self.link_events.is_empty();
        let shape = settle::RunShape {
            cc: cc.as_ref(),
            warm: self.warmup(),
            disturbed,
        };
        for w in settle::warnings(shape, &built.fabric, &summary) {
            summary.warn(w);
        }
        let (f, topo) = (&built.fabric, self.topology());
        summary.fct = summary::fct_report(f, &summary.flows, &topo, self.mtu, self.message_bytes);
        summary.collectives = summary::collective_reports(f, &built.collectives, &topo, self.mtu);
        summary.outage = self.outage(&built.fabric, &summary);
        summary.ecmp = EcmpLoad::collect(&built.fabric);
        if self.spray.is_some() || !self.switch.routing.is_ecmp() || !self.recovery.is_go_back_n() {
            summary.reordering = Some(self.reordering(&built.fabric));
        }
        if let TopologySpec::LeafSpine { rails, .. } = self.topology {
            summary.rails = RailLoad::collect(&built.fabric, rails);
        }
        if let Some(t) = built.fabric.recorder().and_then(|r| r.telemetry.as_ref()) {
            (summary.ports, summary.hosts) = (t.ports(), t.hosts());
            summary.buffers = t.buffers();
        }
        if let (Some((n, p)), Some(before), false) = (
            built.bottleneck,
            at_warm,
            self.switch.sched.ets_weights.is_empty(),
        ) {
            let now = built.fabric.port_counters(n, p);
            let bytes = std::array::from_fn(|i| now.prio[i].tx_bytes - before.prio[i].tx_bytes);
            let secs = (end - warm).as_secs_f64();
            summary.classes = Some(sched::class_shares(&self.switch.sched, &bytes, secs));
        }
        Ok((summary, built))
    }
}

impl Scenario {
    /// When the first failure hits, µs (a cable going down, a flap, a reboot).
    pub fn failure_at_us(&self) -> Option<f64> {
        let downs = self.link_events.iter().filter(|e| !e.up).map(|e| e.at_us);
        downs
            .chain(self.failures.iter().filter_map(Failure::starts_us))
            .min_by(f64::total_cmp)
    }

    /// The outage report of a finished run, when the scenario has failures.
    pub(super) fn outage(
        &self,
        fabric: &Fabric<ScenarioEngine>,
        summary: &RunSummary,
    ) -> Option<Outage> {
        let at = self.failure_at_us()?;
        let rec = fabric.recorder()?;
        let bin_us = self.bin_us.unwrap_or(self.duration_us / 12.0);
        let (bin, flows) = (Duration::from_micros_f64(bin_us), summary.flows.len());
        let bins = outage::bins(&rec.rows, rec.interval, flows, bin, self.end());
        let specs = &fabric.flow_meter.specs;
        let done_at_us: Vec<Option<f64>> = (summary.flows.iter().zip(specs))
            .map(|(f, spec)| Some(spec.start_ns as f64 / 1e3 + f.completion_us?))
            .collect();
        let lost = fabric.lost_traffic();
        let warm_us = (self.warmup() - Instant::ZERO).as_micros_f64();
        Some(Outage {
            frames_lost: lost.frames,
            bytes_lost: lost.bytes,
            retransmitted: summary.recovery.retransmitted,
            failed_flows: summary.failed_flows,
            ..Outage::new(bins, bin_us, at, warm_us, &done_at_us)
        })
    }
}

/// A built scenario.
pub struct Built {
    /// The fabric.
    pub fabric: Fabric<ScenarioEngine>,
    /// The monitored egress port.
    pub bottleneck: Option<(Node, u16)>,
    /// Collectives, in workload order.
    pub collectives: Vec<CollectivePlan>,
}
