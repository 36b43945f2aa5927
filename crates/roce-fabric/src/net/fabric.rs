//! The fabric: hosts (any [`Engine`] behind a simulated NIC), switches and links, driven by one
//! event queue in virtual time. It jumps from event to event: link deliveries, transmitters
//! finishing a frame, pause expiries and every host's `poll_timeout`.
//!
//! Engines see only frames and `now`; nothing in them knows it is simulated.

pub mod parallel;

use std::collections::VecDeque;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::slots::Slots;
use super::spray::{Spray, Sprayer};
use super::transit::{code, Event, Link, Routing, Transit, GLOBAL};
use super::wait_for::DeadlockCycle;
use crate::record::cnp_delay::CnpDelay;
use crate::record::flow_meter::{FlowId, FlowMeter, FlowSpec};
use crate::record::series::Recorder;
use crate::switching::frame::{ip_key, IpKey, MixMap};
use crate::switching::port::TxPort;
use crate::switching::sojourn::Sojourn;
use crate::switching::stats::{PortCounters, PrioCounters};
use crate::switching::switch::{Switch, SwitchConfig, SwitchPort};
use crate::{HostId, LinkId, Node, PktId, SwitchId};
use parallel::RunMode;
use roce_proto::engine::Engine;
use roce_proto::time::{Duration, Instant};
use roce_proto::wire::pfc::PRIORITIES;

/// A link direction's properties.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkConfig {
    /// Line rate in Gbit/s (1..=800).
    pub gbps: f64,
    /// One-way propagation delay, ns.
    pub delay_ns: u64,
    /// Probability that a frame is lost.
    #[serde(default)]
    pub loss: f64,
    /// Probability that a frame is corrupted (dropped by the receiver's FCS check).
    #[serde(default)]
    pub corrupt: f64,
}

impl LinkConfig {
    /// A clean link of `gbps` and `delay_ns`.
    pub fn new(gbps: f64, delay_ns: u64) -> Self {
        LinkConfig {
            gbps,
            delay_ns,
            loss: 0.0,
            corrupt: 0.0,
        }
    }

    /// Line rate in bit/s.
    pub fn rate_bps(&self) -> u64 {
        (self.gbps * 1e9).round() as u64
    }

    /// One-way propagation delay (`delay_ns`).
    pub fn delay(&self) -> Duration {
        Duration::from_nanos(self.delay_ns)
    }
}

/// Errors building a fabric.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FabricError {
    /// Link rate outside 1..=800 Gbit/s.
    #[error("link rate {0} Gbit/s is outside 1..=800")]
    BadRate(f64),
    /// Loss or corruption probability outside 0..=1.
    #[error("probability {0} is outside 0..=1")]
    BadProbability(f64),
    /// A host's NIC is already cabled.
    #[error("host {0} is already connected")]
    HostBusy(usize),
    /// Two hosts were cabled directly to each other more than once, or a node does not exist.
    #[error("no such node {0:?}")]
    NoSuchNode(Node),
    /// Two hosts share an IP address.
    #[error("duplicate IP address {0}")]
    DuplicateIp(IpAddr),
    /// A link's delay above [`MAX_LINK_DELAY_NS`].
    #[error("link delay {0} ns is more than this build supports (at most {MAX_LINK_DELAY_NS})")]
    BadDelay(u64),
}

/// The longest one-way link delay, ns (one second: events stay far from the end of the 64-bit
/// clock whatever the run's length).
pub const MAX_LINK_DELAY_NS: u64 = 1_000_000_000;

/// The two directions of a cable and the ports at its ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cable {
    /// Link from `a` to `b`.
    pub ab: LinkId,
    /// Link from `b` to `a`.
    pub ba: LinkId,
    /// Port index on `a` (0 for a host).
    pub a_port: u16,
    /// Port index on `b` (0 for a host).
    pub b_port: u16,
}

pub(super) struct Host<E> {
    pub(super) name: String,
    pub(super) engine: E,
    pub(super) ip: IpKey,
    pub(super) tx: TxPort,
    pub(super) wake: Option<Instant>,
    pub(super) parked: [Option<PktId>; PRIORITIES],
    /// Marks its notification point has yet to answer, and its reaction point's CNP delays.
    pub(super) cnp: CnpDelay,
    /// A PFC storm the NIC is sending: its priority and when its XOFF is due again.
    pub(super) storm: Option<(u8, Instant)>,
    /// The NIC's spraying, when it sprays (see [`Fabric::set_spray`]).
    pub(super) spray: Option<Box<Sprayer>>,
}

/// A PFC frame's instruction for one priority, as the port that received it took it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcEvent {
    /// When it arrived, ns.
    pub t_ns: u64,
    /// The receiving node.
    pub node: Node,
    /// Its port (0 for a host).
    pub port: u16,
    /// The priority.
    pub prio: u8,
    /// Pause (XOFF, a non-zero time) or resume (XON).
    pub pause: bool,
}

/// Receives the INT hops a frame collected, before the frame: `(engine, now, hops)`.
pub type IntSink<E> = fn(&mut E, Instant, &[roce_proto::cc::IntHop]);

/// A simulated network of engines, switches and links.
pub struct Fabric<E> {
    pub(super) w: Transit,
    pub(super) seed: u64,
    pub(super) hosts: Slots<Host<E>>,
    pub(super) switches: Slots<FabricSwitch>,
    pub(super) ip_to_host: MixMap<IpKey, usize>,
    pub(super) scratch: Vec<u8>,
    pub(super) routed: bool,
    /// Whether each switch is drained for maintenance, by index (empty in a partition of a
    /// parallel run, which never computes routes).
    pub(super) drained: Vec<bool>,
    pub(super) started: bool,
    /// The flow meter counting flows and CNPs at the host NICs.
    pub flow_meter: FlowMeter,
    pub(super) recorder: Option<Recorder<E>>,
    pub(super) int_sink: Option<IntSink<E>>,
    pub(super) routing: Routing,
    /// PFC frames received, per priority (only once [`Fabric::log_pfc`] asked).
    pub(super) pfc_log: Option<Vec<PfcEvent>>,
    /// Whole on one thread, split over threads, or one partition of a split fabric.
    pub(super) mode: RunMode<E>,
    /// The first PFC deadlock a sample saw, and when (see [`crate::net::deadlock`]).
    pub(super) deadlock: Option<(Instant, DeadlockCycle)>,
}

impl<E: Engine> Fabric<E> {
    /// An empty fabric whose random choices (loss, RED marking) all come from `seed`: each node
    /// draws from its own stream, derived from `seed` and the node.
    pub fn new(seed: u64) -> Self {
        tracing::info!(seed, "fabric seeded");
        Fabric {
            w: Transit::new(seed),
            routing: Routing::default(),
            seed,
            hosts: Slots::default(),
            switches: Slots::default(),
            ip_to_host: MixMap::default(),
            scratch: vec![0; roce_proto::limits::MAX_FRAME],
            routed: false,
            drained: Vec::new(),
            started: false,
            flow_meter: FlowMeter::default(),
            recorder: None,
            int_sink: None,
            pfc_log: None,
            mode: RunMode::Whole,
            deadlock: None,
        }
    }

    /// The seed this run replays from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Virtual time now.
    pub fn now(&self) -> Instant {
        self.w.now
    }

    /// Events processed so far, counting the `TxDone`s left unscheduled (see
    /// [`Fabric::events_elided`]): the count of a run that schedules every event.
    pub fn events(&self) -> u64 {
        self.w.events + self.events_elided()
    }

    /// Transmitter wake-ups (a switch port's frame ended with nothing else to send) that were
    /// due so far but never scheduled: they would have found nothing to do.
    pub fn events_elided(&self) -> u64 {
        let pending = self.switches.iter().flat_map(|s| s.ports());
        let due = pending.filter(|p| p.tx.done.is_some_and(|k| self.w.passed(k)));
        self.w.elided + due.count() as u64
    }

    /// Adds a host with address `ip` running `engine`; cable it with [`Fabric::connect`].
    pub fn add_host(&mut self, name: &str, ip: IpAddr, engine: E) -> Result<HostId, FabricError> {
        let key = ip_key(ip);
        let id = self.hosts.len();
        if self.ip_to_host.insert(key, id).is_some() {
            return Err(FabricError::DuplicateIp(ip));
        }
        let mac = [0x02, 0x00, 0x00, 0x01, (id >> 8) as u8, id as u8];
        self.hosts.push(Host {
            name: name.to_owned(),
            engine,
            ip: key,
            tx: TxPort::new(1, mac),
            wake: None,
            parked: [None; PRIORITIES],
            cnp: CnpDelay::default(),
            storm: None,
            spray: None,
        });
        Ok(HostId(id))
    }

    /// Adds a switch (ports appear as cables are connected).
    pub fn add_switch(&mut self, name: &str, cfg: SwitchConfig) -> SwitchId {
        self.switches.push(Switch::new(name.to_owned(), cfg));
        self.drained.push(false);
        self.routed = false;
        SwitchId(self.switches.len() - 1)
    }

    /// Cables `a` and `b` with two links of the same configuration.
    pub fn connect(&mut self, a: Node, b: Node, cfg: LinkConfig) -> Result<Cable, FabricError> {
        if !(1.0..=800.0).contains(&cfg.gbps) {
            return Err(FabricError::BadRate(cfg.gbps));
        }
        if cfg.delay_ns > MAX_LINK_DELAY_NS {
            return Err(FabricError::BadDelay(cfg.delay_ns));
        }
        for p in [cfg.loss, cfg.corrupt] {
            if !(0.0..=1.0).contains(&p) {
                return Err(FabricError::BadProbability(p));
            }
        }
        let a_port = self.new_port(a, cfg.rate_bps())?;
        let b_port = self.new_port(b, cfg.rate_bps())?;
        let ab = self.new_link((a, a_port), (b, b_port), &cfg);
        let ba = self.new_link((b, b_port), (a, a_port), &cfg);
        self.routed = false;
        Ok(Cable {
            ab,
            ba,
            a_port,
            b_port,
        })
    }

    fn new_port(&mut self, node: Node, rate_bps: u64) -> Result<u16, FabricError> {
        match node {
            Node::Host(h) => {
                let host = self
                    .hosts
                    .get_mut(h.0)
                    .ok_or(FabricError::NoSuchNode(node))?;
                if host.tx.link.is_some() {
                    return Err(FabricError::HostBusy(h.0));
                }
                host.tx.set_rate(rate_bps);
                Ok(0)
            }
            Node::Switch(s) => {
                let sw = self
                    .switches
                    .get_mut(s.0)
                    .ok_or(FabricError::NoSuchNode(node))?;
                let port = sw.port_count();
                let mac = [
                    0x02,
                    0x00,
                    0x00,
                    0x02 + (s.0 >> 8) as u8,
                    s.0 as u8,
                    port as u8,
                ];
                let p = sw.add_port(TxPort::new(rate_bps, mac));
                sw.set_port_rate(p, rate_bps);
                Ok(p)
            }
        }
    }

    fn new_link(&mut self, from: (Node, u16), to: (Node, u16), cfg: &LinkConfig) -> LinkId {
        let id = LinkId(self.w.links.len());
        self.w.links.push(Link {
            from,
            to,
            delay: cfg.delay(),
            loss: cfg.loss,
            corrupt: cfg.corrupt,
            up: true,
            detected: false,
            epoch: 0,
        });
        if let Some(tx) = self.tx_mut(from.0, from.1) {
            tx.link = Some(id);
        }
        self.set_detected(id, true);
        id
    }

    /// Records whether the sending end of `l` believes it up: the link's `detected` and the
    /// sending switch's live-port bit that routes read (`Switch::port_live`). Their one
    /// writer, so the two never disagree.
    pub(super) fn set_detected(&mut self, l: LinkId, up: bool) {
        let Some(link) = self.w.links.get_mut(l.0) else {
            return;
        };
        link.detected = up;
        if let (Node::Switch(s), port) = link.from {
            if let Some(sw) = self.switches.get_mut(s.0) {
                sw.set_port_live(port, up);
            }
        }
    }

    pub(super) fn tx_mut(&mut self, node: Node, port: u16) -> Option<&mut TxPort> {
        match node {
            Node::Host(h) => self.hosts.get_mut(h.0).map(|h| &mut h.tx),
            Node::Switch(s) => self
                .switches
                .get_mut(s.0)
                .and_then(|sw| sw.port_mut(port))
                .map(|p| &mut p.tx),
        }
    }

    pub(super) fn tx_ref(&self, node: Node, port: u16) -> Option<&TxPort> {
        match node {
            Node::Host(h) => self.hosts.get(h.0).map(|h| &h.tx),
            Node::Switch(s) => self
                .switches
                .get(s.0)
                .and_then(|sw| sw.port(port))
                .map(|p| &p.tx),
        }
    }

    /// Takes the link down or up at `at` (both directions of a cable: call it for each).
    /// Frames on a link that goes down are lost. Its sending end notices after the detection
    /// delay and stops hashing flows onto it; every switch recomputes its routes a convergence
    /// time later (see [`Fabric::set_routing`]).
    pub fn schedule_link(&mut self, link: LinkId, at: Instant, up: bool) {
        self.w.origin = GLOBAL;
        self.w.schedule(at, Event::LinkState(link.0 as u32, up));
    }

    /// Hands each frame's INT stack (from switches with `int` on) to the receiving engine,
    /// just before the frame itself: the hook for HPCC-style controllers.
    pub fn set_int_sink(&mut self, sink: IntSink<E>) {
        self.int_sink = Some(sink);
    }

    /// Makes every host's NIC spray its QPs' packets over paths as `spray` says ([`Sprayer`]),
    /// or stop (`None`).
    pub fn set_spray(&mut self, spray: Option<Spray>) {
        for h in self.hosts.iter_mut() {
            h.spray = spray.map(|s| Box::new(Sprayer::new(s)));
        }
    }

    /// Keeps every PFC instruction a port receives from now on (see [`Fabric::pfc_events`]).
    pub fn log_pfc(&mut self) {
        self.pfc_log.get_or_insert_with(Vec::new);
    }

    /// The PFC instructions received since [`Fabric::log_pfc`], in order.
    pub fn pfc_events(&self) -> &[PfcEvent] {
        self.pfc_log.as_deref().unwrap_or_default()
    }

    /// Follows a flow in the flow meter (goodput, completion time).
    pub fn register_flow(&mut self, spec: FlowSpec) -> FlowId {
        self.flow_meter.register(spec)
    }

    /// Records time series every `interval` from now on.
    pub fn record(&mut self, recorder: Recorder<E>) {
        let at = self.now() + recorder.interval;
        self.recorder = Some(recorder);
        self.w.origin = GLOBAL;
        self.w.schedule(at, Event::Sample);
    }

    /// The recorder, if one is attached.
    pub fn recorder(&self) -> Option<&Recorder<E>> {
        self.recorder.as_ref()
    }

    /// The recorder, once the run is over.
    pub fn take_recorder(&mut self) -> Option<Recorder<E>> {
        self.recorder.take()
    }

    /// The engine of `host`.
    pub fn engine(&self, host: HostId) -> Option<&E> {
        self.hosts.get(host.0).map(|h| &h.engine)
    }

    /// Runs `f` on the engine of `host` at the current time (e.g. to post work), then lets the
    /// host transmit and re-arms its timer.
    pub fn with_engine<R>(
        &mut self,
        host: HostId,
        f: impl FnOnce(&mut E, Instant) -> R,
    ) -> Option<R> {
        let now = self.now();
        let r = f(&mut self.hosts.get_mut(host.0)?.engine, now);
        self.w.origin = code(Node::Host(host));
        self.service_host(host.0);
        Some(r)
    }

    /// Number of hosts.
    pub fn host_count(&self) -> usize {
        self.hosts.len()
    }

    /// Name of a host.
    pub fn host_name(&self, host: HostId) -> &str {
        self.hosts.get(host.0).map_or("", |h| &h.name)
    }

    /// Counters of a port (pause durations up to now).
    pub fn port_counters(&self, node: Node, port: u16) -> PortCounters {
        self.tx_ref(node, port)
            .map(|t| t.counters_at(self.w.now))
            .unwrap_or_default()
    }

    /// Transmitters a PFC pause holds right now, hosts' and switches': (node, port, priority).
    pub fn paused_now(&self) -> Vec<(Node, u16, usize)> {
        let hosts = (0..self.hosts.len()).map(|h| (Node::Host(HostId(h)), 0));
        let switches = self.switch_ports().map(|(s, p)| (Node::Switch(s), p));
        hosts
            .chain(switches)
            .filter_map(|(node, port)| Some((node, port, self.tx_ref(node, port)?)))
            .flat_map(|(node, port, tx)| {
                (0..PRIORITIES)
                    .filter(move |&prio| tx.is_paused(prio, self.w.now))
                    .map(move |prio| (node, port, prio))
            })
            .collect()
    }

    /// Line rate of a port, bits per second.
    pub fn port_rate_bps(&self, node: Node, port: u16) -> Option<u64> {
        self.tx_ref(node, port).map(|t| t.rate_bps)
    }

    /// All switch ports as (switch, port).
    pub fn switch_ports(&self) -> impl Iterator<Item = (SwitchId, u16)> + '_ {
        self.switches
            .iter()
            .enumerate()
            .flat_map(|(s, sw)| (0..sw.port_count()).map(move |p| (SwitchId(s), p as u16)))
    }

    /// Bytes queued at a switch's egress port, all priorities.
    pub fn queue_bytes(&self, switch: SwitchId, port: u16) -> u64 {
        self.switches
            .get(switch.0)
            .and_then(|s| s.port(port))
            .map_or(0, |p| p.queued_bytes())
    }

    /// How long the packets that left `switch`'s egress `port` at priority `prio` waited in
    /// its queue (`None` before the first).
    pub fn sojourn(&self, switch: SwitchId, port: u16, prio: usize) -> Option<&Sojourn> {
        self.switches.get(switch.0)?.port(port)?.sojourn(prio)
    }

    /// Name of a switch.
    pub fn switch_name(&self, switch: SwitchId) -> &str {
        self.switches.get(switch.0).map_or("", |s| s.name())
    }

    /// Where a link leads: (node, port).
    pub fn link_peer(&self, link: LinkId) -> Option<(Node, u16)> {
        self.w.links.get(link.0).map(|l| l.to)
    }

    /// Where a link leads, if its sending end believes it up (what routing sees).
    fn live_peer(&self, link: LinkId) -> Option<(Node, u16)> {
        self.w
            .links
            .get(link.0)
            .filter(|l| l.detected)
            .map(|l| l.to)
    }

    /// Computes shortest-path ECMP routes from every switch to every host (done automatically
    /// before the first run and after topology changes).
    pub fn compute_routes(&mut self) {
        let hosts = self.hosts.len();
        // routes[switch][host]: the switch's equal-cost egress ports toward the host.
        let mut routes = vec![vec![Vec::new(); hosts]; self.switches.len()];
        for h in 0..hosts {
            // BFS over switches from the host's attachment point.
            let mut dist = vec![u32::MAX; self.switches.len()];
            let mut frontier = VecDeque::new();
            let attached = self.hosts.get(h).and_then(|x| x.tx.link);
            if let Some((Node::Switch(s), _)) = attached.and_then(|l| self.live_peer(l)) {
                dist[s.0] = 1;
                frontier.push_back(s.0);
            }
            let drained = |s: usize| self.drained.get(s).copied().unwrap_or(false);
            while let Some(s) = frontier.pop_front() {
                // A drained switch is no one's next hop on the way (its neighbours route
                // around it), unless the host hangs off it.
                if drained(s) && dist[s] > 1 {
                    continue;
                }
                let ports = self.switches.get(s).map_or(&[][..], |sw| sw.ports());
                for port in ports {
                    if let Some((Node::Switch(n), _)) = port.tx.link.and_then(|l| self.live_peer(l))
                    {
                        if dist[n.0] == u32::MAX {
                            dist[n.0] = dist[s] + 1;
                            frontier.push_back(n.0);
                        }
                    }
                }
            }
            // A drained switch forwards what still reaches it toward its nearest neighbour
            // that is not drained.
            let via = |s: usize| -> u32 {
                if !drained(s) || dist[s] == 1 {
                    return dist[s];
                }
                let ports = self.switches.get(s).map_or(&[][..], |sw| sw.ports());
                let nearest = ports
                    .iter()
                    .filter_map(|p| match p.tx.link.and_then(|l| self.live_peer(l)) {
                        Some((Node::Switch(n), _)) if !drained(n.0) => Some(dist[n.0]),
                        _ => None,
                    })
                    .min()
                    .unwrap_or(u32::MAX);
                nearest.saturating_add(1)
            };
            for (s, to_host) in routes.iter_mut().enumerate() {
                let ports = self.switches.get(s).map_or(&[][..], |sw| sw.ports());
                let own = via(s);
                for (p, port) in ports.iter().enumerate() {
                    let next_hop = match port.tx.link.and_then(|l| self.live_peer(l)) {
                        Some((Node::Host(x), _)) => x.0 == h,
                        Some((Node::Switch(n), _)) => {
                            own != u32::MAX
                                && dist[n.0] != u32::MAX
                                && dist[n.0] + 1 == own
                                && (!drained(n.0) || dist[n.0] == 1)
                        }
                        None => false,
                    };
                    if next_hop {
                        to_host[h].push(p as u16);
                    }
                }
            }
        }
        for (sw, r) in self.switches.iter_mut().zip(routes) {
            sw.set_routes(r);
        }
        self.routed = true;
    }

    /// Marks the start of the measurement window (after warm-up).
    pub fn mark_warmup(&mut self) {
        self.flow_meter.mark_warmup();
        for sw in self.switches.iter_mut() {
            sw.clear_sojourn();
        }
        for host in self.hosts.iter_mut() {
            host.cnp.clear();
        }
    }

    /// Every host's CNP delays (a CE mark to the CNP at the reaction point) since warm-up, in
    /// one histogram; `None` when no CNP answered a mark.
    pub fn cnp_delays(&self) -> Option<Sojourn> {
        let mut all: Option<Sojourn> = None;
        for d in self.hosts.iter().filter_map(|h| h.cnp.delays()) {
            all.get_or_insert_with(Sojourn::default).merge(d);
        }
        all
    }

    /// IP address key of a host.
    pub fn host_ip(&self, host: HostId) -> Option<IpKey> {
        self.hosts.get(host.0).map(|h| h.ip)
    }
}

/// The fabric's switches: packets in its pool, ports with its serializers.
pub(crate) type FabricSwitch = Switch<PktId, TxPort>;

impl FabricSwitch {
    /// Counters of `port`'s priority `prio`.
    pub fn counters_mut(&mut self, port: u16, prio: usize) -> Option<&mut PrioCounters> {
        self.port_mut(port)
            .and_then(|p| p.tx.counters.prio.get_mut(prio))
    }

    /// Queues a packet at `now` as [`Switch::enqueue`] does and updates the egress high-water
    /// mark.
    pub fn enqueue_counted(
        &mut self,
        pkt: PktId,
        (ingress, egress): (u16, u16),
        prio: usize,
        len: u64,
        now: Instant,
    ) -> bool {
        let crossed = self.enqueue(pkt, (ingress, egress), prio, len, now);
        let depth = self.queue_depth(egress, prio);
        if let Some(c) = self.counters_mut(egress, prio) {
            c.queue_hwm_bytes = c.queue_hwm_bytes.max(depth);
        }
        crossed
    }
}

impl<T> SwitchPort<T, TxPort> {
    /// Nothing waits behind the frame on the wire: no control frame, no data in any class.
    pub fn drained(&self) -> bool {
        self.tx.ctrl.is_empty() && self.waiting() == 0
    }
}
