//! The fabric: hosts (any [`Engine`] behind a simulated NIC), switches and links, driven by one
//! event queue in virtual time. It jumps from event to event: link deliveries, transmitters
//! finishing a frame, pause expiries and every host's `poll_timeout`.
//!
//! Engines see only frames and `now`; nothing in them knows it is simulated.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use serde::{Deserialize, Serialize};

use super::event::EventQueue;
use super::frame::{classify, ip_key, mark_ce, IpKey};
use super::pfc::{self, PauseRepr};
use super::port::TxPort;
use super::series::Recorder;
use super::stats::{PortCounters, PRIORITIES};
use super::switch::{priority, Switch, SwitchConfig, SwitchPort};
use super::tap::{FlowId, FlowSpec, FlowTap};
use super::{HostId, LinkId, Node, PktId, SwitchId};
use crate::driver::Engine;
use crate::time::Instant;

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
}

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

#[derive(Clone, Copy, Debug)]
enum Event {
    Deliver(LinkId),
    TxDone(Node, u16),
    HostWake(HostId),
    PauseEnd(Node, u16),
    XoffRefresh(SwitchId, u16, u8, u32),
    LinkState(LinkId, bool),
    Sample,
}

#[derive(Debug)]
struct Link {
    from: (Node, u16),
    to: (Node, u16),
    delay_ns: u64,
    loss: f64,
    corrupt: f64,
    up: bool,
    epoch: u32,
    inflight: VecDeque<(PktId, u32)>,
}

#[derive(Debug, Default)]
struct Slot {
    buf: Vec<u8>,
    fcs_bad: bool,
}

/// Frames in flight or queued, by index; buffers are reused.
#[derive(Debug, Default)]
struct PacketPool {
    slots: Vec<Slot>,
    free: Vec<PktId>,
}

impl PacketPool {
    fn alloc(&mut self, data: &[u8]) -> PktId {
        let id = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Slot::default());
            (self.slots.len() - 1) as PktId
        });
        if let Some(s) = self.slots.get_mut(id as usize) {
            s.buf.clear();
            s.buf.extend_from_slice(data);
            s.fcs_bad = false;
        }
        id
    }
    fn release(&mut self, id: PktId) {
        self.free.push(id);
    }
    fn frame(&self, id: PktId) -> &[u8] {
        self.slots.get(id as usize).map_or(&[], |s| &s.buf)
    }
    fn slot_mut(&mut self, id: PktId) -> Option<&mut Slot> {
        self.slots.get_mut(id as usize)
    }
    fn len(&self, id: PktId) -> u64 {
        self.frame(id).len() as u64
    }
}

struct Host<E> {
    name: String,
    engine: E,
    ip: IpKey,
    tx: TxPort,
    wake: Option<u64>,
    parked: [Option<PktId>; PRIORITIES],
}

/// What moves frames: the clock, the queue, the links, the packet pool and the RNG.
struct Wires {
    now: u64,
    queue: EventQueue<Event>,
    links: Vec<Link>,
    pool: PacketPool,
    rng: Pcg64,
    events: u64,
}

impl Wires {
    /// Puts `pkt` on the wire of `tx` (owned by `node`'s `port`) now.
    fn transmit(&mut self, tx: &mut TxPort, node: Node, port: u16, pkt: PktId, prio: usize) {
        let len = self.pool.len(pkt);
        let ser = tx.serialize_ns(len as usize);
        tx.busy = true;
        if let Some(c) = tx.counters.prio.get_mut(prio) {
            c.tx_packets += 1;
            c.tx_bytes += len;
        }
        self.queue.push(
            Instant::from_nanos(self.now + ser),
            Event::TxDone(node, port),
        );
        let Some(link) = tx.link.and_then(|l| self.links.get_mut(l.0)) else {
            self.pool.release(pkt);
            return;
        };
        let lost = !link.up || (link.loss > 0.0 && self.rng.random::<f64>() < link.loss);
        if lost {
            if let Some(c) = tx.counters.prio.get_mut(prio) {
                c.drops += 1;
            }
            self.pool.release(pkt);
            return;
        }
        if link.corrupt > 0.0 && self.rng.random::<f64>() < link.corrupt {
            if let Some(s) = self.pool.slot_mut(pkt) {
                let at = self.rng.random_range(0..s.buf.len().max(1));
                if let Some(b) = s.buf.get_mut(at) {
                    *b ^= 0x10;
                }
                s.fcs_bad = true;
            }
        }
        link.inflight.push_back((pkt, link.epoch));
        let at = self.now + ser + link.delay_ns;
        if let Some(id) = tx.link {
            self.queue.push(Instant::from_nanos(at), Event::Deliver(id));
        }
    }
}

/// A simulated network of engines, switches and links.
pub struct Fabric<E> {
    w: Wires,
    seed: u64,
    hosts: Vec<Host<E>>,
    switches: Vec<Switch>,
    ip_to_host: HashMap<IpKey, usize>,
    scratch: Vec<u8>,
    routed: bool,
    started: bool,
    /// The tap counting flows and CNPs at the host NICs.
    pub tap: FlowTap,
    recorder: Option<Recorder<E>>,
}

impl<E: Engine> Fabric<E> {
    /// An empty fabric whose random choices (loss, RED marking) all come from `seed`.
    pub fn new(seed: u64) -> Self {
        tracing::info!(seed, "fabric seeded");
        Fabric {
            w: Wires {
                now: 0,
                queue: EventQueue::new(),
                links: Vec::new(),
                pool: PacketPool::default(),
                rng: Pcg64::seed_from_u64(seed),
                events: 0,
            },
            seed,
            hosts: Vec::new(),
            switches: Vec::new(),
            ip_to_host: HashMap::new(),
            scratch: vec![0; crate::limits::MAX_FRAME],
            routed: false,
            started: false,
            tap: FlowTap::default(),
            recorder: None,
        }
    }

    /// The seed this run replays from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Virtual time now.
    pub fn now(&self) -> Instant {
        Instant::from_nanos(self.w.now)
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.w.events
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
        });
        Ok(HostId(id))
    }

    /// Adds a switch (ports appear as cables are connected).
    pub fn add_switch(&mut self, name: &str, cfg: SwitchConfig) -> SwitchId {
        self.switches.push(Switch::new(name.to_owned(), cfg));
        self.routed = false;
        SwitchId(self.switches.len() - 1)
    }

    /// Cables `a` and `b` with two links of the same configuration.
    pub fn connect(&mut self, a: Node, b: Node, cfg: LinkConfig) -> Result<Cable, FabricError> {
        if !(1.0..=800.0).contains(&cfg.gbps) {
            return Err(FabricError::BadRate(cfg.gbps));
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
                host.tx.rate_bps = rate_bps;
                Ok(0)
            }
            Node::Switch(s) => {
                let sw = self
                    .switches
                    .get_mut(s.0)
                    .ok_or(FabricError::NoSuchNode(node))?;
                let port = sw.ports.len();
                let mac = [
                    0x02,
                    0x00,
                    0x00,
                    0x02 + (s.0 >> 8) as u8,
                    s.0 as u8,
                    port as u8,
                ];
                sw.ports.push(SwitchPort::new(TxPort::new(rate_bps, mac)));
                Ok(port as u16)
            }
        }
    }

    fn new_link(&mut self, from: (Node, u16), to: (Node, u16), cfg: &LinkConfig) -> LinkId {
        let id = LinkId(self.w.links.len());
        self.w.links.push(Link {
            from,
            to,
            delay_ns: cfg.delay_ns,
            loss: cfg.loss,
            corrupt: cfg.corrupt,
            up: true,
            epoch: 0,
            inflight: VecDeque::new(),
        });
        if let Some(tx) = self.tx_mut(from.0, from.1) {
            tx.link = Some(id);
        }
        id
    }

    fn tx_mut(&mut self, node: Node, port: u16) -> Option<&mut TxPort> {
        match node {
            Node::Host(h) => self.hosts.get_mut(h.0).map(|h| &mut h.tx),
            Node::Switch(s) => self
                .switches
                .get_mut(s.0)
                .and_then(|sw| sw.ports.get_mut(usize::from(port)))
                .map(|p| &mut p.tx),
        }
    }

    fn tx_ref(&self, node: Node, port: u16) -> Option<&TxPort> {
        match node {
            Node::Host(h) => self.hosts.get(h.0).map(|h| &h.tx),
            Node::Switch(s) => self
                .switches
                .get(s.0)
                .and_then(|sw| sw.ports.get(usize::from(port)))
                .map(|p| &p.tx),
        }
    }

    /// Takes the link down or up at `at` (both directions of a cable: call it for each).
    /// Frames on a link that goes down are lost; switches stop hashing flows onto it at once.
    pub fn schedule_link(&mut self, link: LinkId, at: Instant, up: bool) {
        self.w.queue.push(at, Event::LinkState(link, up));
    }

    /// Follows a flow in the tap (goodput, completion time).
    pub fn register_flow(&mut self, spec: FlowSpec) -> FlowId {
        self.tap.register(spec)
    }

    /// Records time series every `interval` from now on.
    pub fn record(&mut self, recorder: Recorder<E>) {
        let at = self.now() + recorder.interval;
        self.recorder = Some(recorder);
        self.w.queue.push(at, Event::Sample);
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

    /// All switch ports as (switch, port).
    pub fn switch_ports(&self) -> impl Iterator<Item = (SwitchId, u16)> + '_ {
        self.switches
            .iter()
            .enumerate()
            .flat_map(|(s, sw)| (0..sw.ports.len()).map(move |p| (SwitchId(s), p as u16)))
    }

    /// Bytes queued at a switch's egress port, all priorities.
    pub fn queue_bytes(&self, switch: SwitchId, port: u16) -> u64 {
        self.switches
            .get(switch.0)
            .and_then(|s| s.ports.get(usize::from(port)))
            .map_or(0, |p| p.queued_bytes())
    }

    /// Name of a switch.
    pub fn switch_name(&self, switch: SwitchId) -> &str {
        self.switches.get(switch.0).map_or("", |s| &s.name)
    }

    /// Where a link leads: (node, port).
    pub fn link_peer(&self, link: LinkId) -> Option<(Node, u16)> {
        self.w.links.get(link.0).map(|l| l.to)
    }

    /// Computes shortest-path ECMP routes from every switch to every host (done automatically
    /// before the first run and after topology changes).
    pub fn compute_routes(&mut self) {
        let hosts = self.hosts.len();
        for sw in &mut self.switches {
            sw.routes = vec![Vec::new(); hosts];
        }
        for h in 0..hosts {
            // BFS over switches from the host's attachment point.
            let mut dist = vec![u32::MAX; self.switches.len()];
            let mut frontier = VecDeque::new();
            if let Some((Node::Switch(s), _)) =
                self.hosts[h].tx.link.and_then(|l| self.link_peer(l))
            {
                dist[s.0] = 1;
                frontier.push_back(s.0);
            }
            while let Some(s) = frontier.pop_front() {
                for port in &self.switches[s].ports {
                    if let Some((Node::Switch(n), _)) = port.tx.link.and_then(|l| self.link_peer(l))
                    {
                        if dist[n.0] == u32::MAX {
                            dist[n.0] = dist[s] + 1;
                            frontier.push_back(n.0);
                        }
                    }
                }
            }
            for s in 0..self.switches.len() {
                let mut ports = Vec::new();
                for (p, port) in self.switches[s].ports.iter().enumerate() {
                    let next_hop = match port.tx.link.and_then(|l| self.link_peer(l)) {
                        Some((Node::Host(x), _)) => x.0 == h,
                        Some((Node::Switch(n), _)) => {
                            dist[s] != u32::MAX && dist[n.0] + 1 == dist[s]
                        }
                        None => false,
                    };
                    if next_hop {
                        ports.push(p as u16);
                    }
                }
                self.switches[s].routes[h] = ports;
            }
        }
        self.routed = true;
    }

    /// Runs until virtual time `end` (events at `end` included), then sets the clock to `end`.
    pub fn run_until(&mut self, end: Instant) {
        self.run_until_with(end, |_| {});
    }

    /// Like [`Fabric::run_until`], calling `progress(now)` every 65536 events.
    pub fn run_until_with(&mut self, end: Instant, mut progress: impl FnMut(Instant)) {
        if !self.routed {
            self.compute_routes();
        }
        if !self.started {
            self.started = true;
            for h in 0..self.hosts.len() {
                self.service_host(h);
            }
        }
        while let Some(t) = self.w.queue.peek_time() {
            if t > end {
                break;
            }
            let Some((t, ev)) = self.w.queue.pop() else {
                break;
            };
            self.w.now = t.as_nanos();
            if self.dispatch(ev) {
                self.w.events += 1;
                if self.w.events & 0xffff == 0 {
                    progress(t);
                }
            }
        }
        self.w.now = self.w.now.max(end.as_nanos());
    }

    /// Handles one event; false for stale wake-ups.
    fn dispatch(&mut self, ev: Event) -> bool {
        match ev {
            Event::Deliver(l) => self.deliver(l),
            Event::TxDone(node, port) => {
                if let Some(tx) = self.tx_mut(node, port) {
                    tx.busy = false;
                }
                self.kick(node, port);
            }
            Event::HostWake(h) => {
                let Some(host) = self.hosts.get_mut(h.0) else {
                    return false;
                };
                if host.wake != Some(self.w.now) {
                    return false;
                }
                host.wake = None;
                self.service_host(h.0);
            }
            Event::PauseEnd(node, port) => {
                if let Some(tx) = self.tx_mut(node, port) {
                    tx.pause_wake = None;
                }
                self.kick(node, port);
            }
            Event::XoffRefresh(s, port, prio, gen) => {
                let standing = self
                    .switches
                    .get(s.0)
                    .and_then(|sw| sw.ports.get(usize::from(port)))
                    .is_some_and(|p| {
                        p.xoff.get(usize::from(prio)) == Some(&true)
                            && p.xoff_gen.get(usize::from(prio)) == Some(&gen)
                    });
                if !standing {
                    return false;
                }
                self.send_pfc(s, port, usize::from(prio), true);
            }
            Event::LinkState(l, up) => {
                let Some(link) = self.w.links.get_mut(l.0) else {
                    return false;
                };
                link.up = up;
                if !up {
                    link.epoch = link.epoch.wrapping_add(1);
                }
                tracing::debug!(link = l.0, up, "link state");
                let (node, port) = link.from;
                self.kick(node, port);
            }
            Event::Sample => {
                if let Some(mut rec) = self.recorder.take() {
                    rec.sample(self);
                    let at = self.now() + rec.interval;
                    self.recorder = Some(rec);
                    self.w.queue.push(at, Event::Sample);
                }
            }
        }
        true
    }

    fn kick(&mut self, node: Node, port: u16) {
        match node {
            Node::Host(h) => self.service_host(h.0),
            Node::Switch(s) => self.switch_tx(s, port),
        }
    }

    fn deliver(&mut self, l: LinkId) {
        let Some(link) = self.w.links.get_mut(l.0) else {
            return;
        };
        let Some((pkt, epoch)) = link.inflight.pop_front() else {
            return;
        };
        let (node, port) = link.to;
        if epoch != link.epoch || !link.up {
            let prio = self.frame_prio(pkt);
            self.count(link_from(&self.w.links, l), |c| {
                if let Some(c) = c.prio.get_mut(prio) {
                    c.drops += 1;
                }
            });
            self.w.pool.release(pkt);
            return;
        }
        self.receive(node, port, pkt);
    }

    fn frame_prio(&self, pkt: PktId) -> usize {
        let info = classify(self.w.pool.frame(pkt));
        priority(info.pcp, info.ip.as_ref())
    }

    fn count(&mut self, at: Option<(Node, u16)>, f: impl FnOnce(&mut PortCounters)) {
        if let Some(tx) = at.and_then(|(n, p)| self.tx_mut(n, p)) {
            f(&mut tx.counters);
        }
    }

    fn receive(&mut self, node: Node, port: u16, pkt: PktId) {
        let now = self.w.now;
        let frame = self.w.pool.frame(pkt);
        let len = frame.len() as u64;
        let info = classify(frame);
        let prio = priority(info.pcp, info.ip.as_ref());
        let fcs_bad = self
            .w
            .pool
            .slots
            .get(pkt as usize)
            .is_some_and(|s| s.fcs_bad);
        let pause = if info.ethertype == pfc::MAC_CONTROL_ETHERTYPE {
            PauseRepr::parse(frame)
        } else {
            None
        };
        let Some(tx) = self.tx_mut(node, port) else {
            self.w.pool.release(pkt);
            return;
        };
        if fcs_bad {
            tx.counters.rx_fcs_errors += 1;
            self.w.pool.release(pkt);
            return;
        }
        if let Some(c) = tx.counters.prio.get_mut(prio) {
            c.rx_packets += 1;
            c.rx_bytes += len;
        }
        if let Some(pause) = pause {
            let rate = tx.rate_bps;
            for (p, q) in pause.quanta.iter().enumerate() {
                if let Some(q) = *q {
                    tx.apply_pause(p, now, pfc::quanta_to_nanos(q, rate));
                    if let Some(c) = tx.counters.prio.get_mut(p) {
                        c.pause_received += 1;
                    }
                }
            }
            self.w.pool.release(pkt);
            self.kick(node, port);
            return;
        }
        match node {
            Node::Host(h) => {
                let t = self.now();
                if let Some(host) = self.hosts.get_mut(h.0) {
                    let frame = self.w.pool.frame(pkt);
                    self.tap.on_rx(h.0, t, frame);
                    host.engine.handle_frame(t, frame);
                }
                self.w.pool.release(pkt);
                self.service_host(h.0);
            }
            Node::Switch(s) => self.forward(s, port, pkt, info, prio),
        }
    }

    fn forward(
        &mut self,
        s: SwitchId,
        ingress: u16,
        pkt: PktId,
        info: super::frame::FrameInfo,
        prio: usize,
    ) {
        let len = self.w.pool.len(pkt);
        let Some(sw) = self.switches.get_mut(s.0) else {
            self.w.pool.release(pkt);
            return;
        };
        let egress = info.ip.as_ref().and_then(|ip| {
            let host = *self.ip_to_host.get(&ip.dst)?;
            let links = &self.w.links;
            let ports = &sw.ports;
            sw.route(host, ip, |p| {
                ports
                    .get(usize::from(p))
                    .and_then(|x| x.tx.link)
                    .and_then(|l| links.get(l.0))
                    .is_some_and(|l| l.up)
            })
        });
        let Some(egress) = egress else {
            if let Some(c) = sw
                .ports
                .get_mut(usize::from(ingress))
                .and_then(|p| p.tx.counters.prio.get_mut(prio))
            {
                c.drops += 1;
            }
            self.w.pool.release(pkt);
            return;
        };
        if let Err(why) = sw.admit(ingress, egress, prio, len) {
            tracing::trace!(switch = %sw.name, ?why, "drop");
            if let Some(c) = sw
                .ports
                .get_mut(usize::from(egress))
                .and_then(|p| p.tx.counters.prio.get_mut(prio))
            {
                c.drops += 1;
            }
            self.w.pool.release(pkt);
            return;
        }
        if let Some(ip) = info.ip.as_ref().filter(|ip| ip.ect()) {
            if sw.ecn_mark(egress, prio, &mut self.w.rng) {
                if let Some(slot) = self.w.pool.slot_mut(pkt) {
                    if mark_ce(&mut slot.buf, ip) {
                        if let Some(c) = sw
                            .ports
                            .get_mut(usize::from(egress))
                            .and_then(|p| p.tx.counters.prio.get_mut(prio))
                        {
                            c.ecn_marked += 1;
                        }
                    }
                }
            }
        }
        let crossed = sw.enqueue(pkt, ingress, egress, prio, len);
        if crossed {
            self.send_pfc(s, ingress, prio, true);
        }
        self.switch_tx(s, egress);
    }

    /// Queues a PFC frame (XOFF with the configured quanta, or XON) on `port` for `prio`.
    fn send_pfc(&mut self, s: SwitchId, port: u16, prio: usize, xoff: bool) {
        let now = self.w.now;
        let Some(sw) = self.switches.get_mut(s.0) else {
            return;
        };
        let quanta = if xoff {
            sw.cfg.pfc.map_or(0, |p| p.quanta)
        } else {
            0
        };
        let Some(p) = sw.ports.get_mut(usize::from(port)) else {
            return;
        };
        let mut buf = [0u8; pfc::FRAME_LEN];
        if PauseRepr::single(p.tx.mac, prio as u8, quanta)
            .emit(&mut buf)
            .is_none()
        {
            return;
        }
        let pkt = self.w.pool.alloc(&buf);
        p.tx.ctrl.push_back(pkt);
        if let Some(c) = p.tx.counters.prio.get_mut(prio) {
            c.pause_sent += 1;
        }
        if xoff {
            let gen = p.xoff_gen.get(prio).copied().unwrap_or(0).wrapping_add(1);
            if let Some(g) = p.xoff_gen.get_mut(prio) {
                *g = gen;
            }
            let refresh = pfc::quanta_to_nanos(quanta, p.tx.rate_bps) / 2;
            self.w.queue.push(
                Instant::from_nanos(now + refresh.max(1)),
                Event::XoffRefresh(s, port, prio as u8, gen),
            );
        }
        if let Some(rec) = self.recorder.as_mut() {
            rec.on_pfc(now, s, port, prio, xoff);
        }
        self.switch_tx(s, port);
    }

    fn switch_tx(&mut self, s: SwitchId, port: u16) {
        let now = self.w.now;
        let Some(sw) = self.switches.get_mut(s.0) else {
            return;
        };
        let Some(p) = sw.ports.get_mut(usize::from(port)) else {
            return;
        };
        if p.tx.busy {
            return;
        }
        if let Some(pkt) = p.tx.ctrl.pop_front() {
            self.w.transmit(&mut p.tx, Node::Switch(s), port, pkt, 7);
            return;
        }
        let pool = &self.w.pool;
        let Some(d) = sw.dequeue(port, now, |pkt| pool.len(pkt)) else {
            let p = &mut sw.ports[usize::from(port)];
            let waiting = p.waiting();
            if let Some(t) = p.tx.earliest_resume(waiting, now) {
                if p.tx.pause_wake.is_none_or(|w| t < w) {
                    p.tx.pause_wake = Some(t);
                    self.w.queue.push(
                        Instant::from_nanos(t),
                        Event::PauseEnd(Node::Switch(s), port),
                    );
                }
            }
            return;
        };
        let _ = d.len;
        if let Some(p) = sw.ports.get_mut(usize::from(port)) {
            self.w
                .transmit(&mut p.tx, Node::Switch(s), port, d.pkt, d.prio);
        }
        if sw.should_resume(d.ingress, d.prio) {
            self.send_pfc(s, d.ingress, d.prio, false);
        }
    }

    /// Lets host `h` fire due timers, transmit if its NIC is free, and re-arms its wake-up.
    fn service_host(&mut self, h: usize) {
        let now = self.w.now;
        let t = Instant::from_nanos(now);
        let Some(host) = self.hosts.get_mut(h) else {
            return;
        };
        if host.engine.poll_timeout().is_some_and(|d| d <= t) {
            host.engine.handle_timeout(t);
        }
        if !host.tx.busy {
            self.host_tx(h);
        }
        let Some(host) = self.hosts.get_mut(h) else {
            return;
        };
        let stalled = host.tx.busy || host.parked.iter().any(Option::is_some);
        let wake = match host.engine.poll_timeout().map(Instant::as_nanos) {
            None => None,
            Some(d) if d > now => Some(d),
            // Due now but the NIC is busy or blocked: TxDone or PauseEnd will come back here.
            Some(_) if stalled => None,
            // Due now yet nothing was sent: look again one nanosecond later rather than spin.
            Some(_) => Some(now + 1),
        };
        if wake != host.wake {
            host.wake = wake;
            if let Some(d) = wake {
                self.w
                    .queue
                    .push(Instant::from_nanos(d), Event::HostWake(HostId(h)));
            }
        }
    }

    /// Starts the next frame of a free host NIC: control, then parked frames whose priority is
    /// no longer paused, then (only with nothing parked) a fresh frame from the engine.
    fn host_tx(&mut self, h: usize) {
        let now = self.w.now;
        let Some(host) = self.hosts.get_mut(h) else {
            return;
        };
        let node = Node::Host(HostId(h));
        if let Some(pkt) = host.tx.ctrl.pop_front() {
            self.w.transmit(&mut host.tx, node, 0, pkt, 7);
            return;
        }
        let mut waiting = 0u8;
        for prio in 0..PRIORITIES {
            if let Some(pkt) = host.parked[prio] {
                if host.tx.is_paused(prio, now) {
                    waiting |= 1 << prio;
                } else {
                    host.parked[prio] = None;
                    self.w.transmit(&mut host.tx, node, 0, pkt, prio);
                    return;
                }
            }
        }
        if waiting == 0 {
            let Some(len) = host
                .engine
                .poll_transmit(Instant::from_nanos(now), &mut self.scratch)
            else {
                return;
            };
            let frame = self.scratch.get(..len).unwrap_or_default();
            self.tap.on_tx(frame);
            let info = classify(frame);
            let prio = priority(info.pcp, info.ip.as_ref());
            let pkt = self.w.pool.alloc(frame);
            if !host.tx.is_paused(prio, now) {
                self.w.transmit(&mut host.tx, node, 0, pkt, prio);
                return;
            }
            if let Some(slot) = host.parked.get_mut(prio) {
                *slot = Some(pkt);
            }
            waiting = 1 << prio;
        }
        if let Some(t) = host.tx.earliest_resume(waiting, now) {
            if host.tx.pause_wake.is_none_or(|w| t < w) {
                host.tx.pause_wake = Some(t);
                self.w
                    .queue
                    .push(Instant::from_nanos(t), Event::PauseEnd(node, 0));
            }
        }
    }

    /// Marks the start of the measurement window (after warm-up).
    pub fn mark_warmup(&mut self) {
        self.tap.mark_warmup();
    }

    /// IP address key of a host.
    pub fn host_ip(&self, host: HostId) -> Option<IpKey> {
        self.hosts.get(host.0).map(|h| h.ip)
    }
}

fn link_from(links: &[Link], l: LinkId) -> Option<(Node, u16)> {
    links.get(l.0).map(|l| l.from)
}
