//! An output-queued switch: eight priority queues per egress port over one shared buffer, ECN
//! marking at enqueue (RED ramp Kmin..Kmax up to Pmax, and/or a DCTCP step), PFC accounting per
//! ingress port and priority (XOFF/XON thresholds plus headroom), tail drop for lossy classes and
//! ECMP by flow hash or adaptive routing by egress queue ([`Routing`]).
//!
//! This is the sans-IO switch element both the virtual-time fabric ([`crate::net::fabric`]) and
//! the real-time switch between ports ([`crate::switching::rt_switch`]) run: it decides what happens to
//! a packet; moving frames and keeping time is their job. A driver reads a frame once on arrival
//! ([`Arrival::of`]), picks the egress (its own forwarding, or [`Switch::route`]), then asks
//! [`Switch::admit`], [`mark_ce`] and [`Switch::enqueue`]; on the way out
//! [`Switch::dequeue`] and [`Switch::should_resume`]; the pause frames to send come from
//! [`Switch::pause_frame`]; a standing XOFF is re-sent when [`Switch::xoff_due`] says so (the
//! driver tells [`Switch::xoff_sent`] when it sent one).

use std::collections::VecDeque;

use rand::RngExt;

use super::frame::{classify, flow_hash, FrameInfo, IpInfo};
use super::routes::RouteTable;
use super::sched::SchedState;
use super::sojourn::Sojourn;
pub use super::switch_config::{MarkPoint, Routing, SwitchConfig};
pub use super::thresholds::{DynamicPfc, EcnThresholds, PfcConfig, RateEcn};
use super::watchdog::Watchdog;
use roce_proto::time::{Duration, Instant};
use roce_proto::wire::pfc::{self, PauseRepr, PRIORITIES};

pub use super::stats::DropReason;

/// The priority (traffic class) of a frame from the fields [`classify`] read: the rule of
/// [`pfc::priority_of`] (the 802.1Q PCP if tagged, else DSCP >> 3, else 0).
pub fn priority(pcp: Option<u8>, ip: Option<&IpInfo>) -> usize {
    pfc::priority_of(pcp, ip.map(|ip| ip.dscp))
}

/// ECN with marking probability `p` ([`Switch::ecn_probability`] of the egress queue now): sets
/// CE in `frame`, whose IP fields `ip` were read on arrival, when it is ECN-capable and the RED
/// ramp or the step says so. Only ECT packets draw from `rng` (and only on the ramp), so marking
/// replays. Returns whether the frame was marked (an already CE-marked one is not).
pub fn mark_ce(p: f64, frame: &mut [u8], ip: &mut IpInfo, rng: &mut impl rand::Rng) -> bool {
    if !ip.ect() {
        return false;
    }
    let marks = p >= 1.0 || (p > 0.0 && rng.random::<f64>() < p);
    marks && super::frame::mark_ce(frame, ip)
}

/// What a switch reads from a frame once, when it arrives: the header fields it acts on and
/// the priority they give.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Arrival {
    /// 802.1Q priority, ethertype, IP and UDP fields.
    pub info: FrameInfo,
    /// The frame's priority (see [`priority`]).
    pub prio: usize,
}

impl Arrival {
    /// Reads `frame` (never panics; what cannot be read is left out).
    pub fn of(frame: &[u8]) -> Self {
        let info = classify(frame);
        let prio = priority(info.pcp, info.ip.as_ref());
        Arrival { info, prio }
    }
}

/// A packet waiting in an egress queue.
#[derive(Debug)]
struct Queued<T> {
    pkt: T,
    ingress: u16,
    len: u32,
    /// When it was queued, the low 32 bits of its nanoseconds (a wait is read modulo 2^32 ns,
    /// 4.3 s, so that the entry stays 16 bytes).
    at: u32,
}

/// One switch port: the caller's transmit side `tx` (the fabric's serializer, the real-time
/// switch's port and drain), eight egress queues, and the ingress PFC accounting.
#[derive(Debug)]
pub struct SwitchPort<T, X> {
    /// What moves this port's frames (not this element's business).
    pub tx: X,
    queues: [VecDeque<Queued<T>>; PRIORITIES],
    /// Bit `p` set while queue `p` holds a packet: the scheduler asks this byte for every
    /// class it considers instead of reading eight queue headers spread over four lines.
    nonempty: u8,
    qbytes: [u64; PRIORITIES],
    sched: SchedState,
    /// Bytes buffered that arrived on this port, per priority (what PFC watches).
    ingress_bytes: [u64; PRIORITIES],
    /// Whether XOFF is standing upstream, per priority.
    xoff: [bool; PRIORITIES],
    /// Line rate, bit/s, when the owner said it (`Switch::set_port_rate`; 0 unknown).
    rate_bps: u64,
    /// How long packets waited, per priority (made when the first one leaves).
    sojourn: [Option<Sojourn>; PRIORITIES],
}

impl<T, X> SwitchPort<T, X> {
    /// A port with empty queues around `tx`.
    pub fn new(tx: X) -> Self {
        SwitchPort {
            tx,
            queues: Default::default(),
            nonempty: 0,
            qbytes: [0; PRIORITIES],
            sched: SchedState::default(),
            ingress_bytes: [0; PRIORITIES],
            xoff: [false; PRIORITIES],
            rate_bps: 0,
            sojourn: Default::default(),
        }
    }

    /// How long the packets that left priority `prio`'s queue waited in it (`None` before the
    /// first).
    pub fn sojourn(&self, prio: usize) -> Option<&Sojourn> {
        self.sojourn.get(prio)?.as_ref()
    }

    /// Whether this port's XOFF for `prio` stands upstream (sent, no XON since).
    pub fn xoff(&self, prio: usize) -> bool {
        self.xoff.get(prio).copied().unwrap_or(false)
    }

    /// Bytes queued over all priorities.
    pub fn queued_bytes(&self) -> u64 {
        self.qbytes.iter().sum()
    }

    /// Bit mask of the priorities with a packet waiting that `paused` does not hold back
    /// (asked once per class with packets, not once per class the scheduler considers).
    fn ready(&self, paused: impl Fn(&X, usize) -> bool) -> u8 {
        let mut ready = self.nonempty;
        let mut left = ready;
        while left != 0 {
            let prio = left.trailing_zeros() as usize;
            left &= left - 1;
            if paused(&self.tx, prio) {
                ready &= !(1 << prio);
            }
        }
        ready
    }

    /// Bit mask of priorities with packets waiting.
    pub fn waiting(&self) -> u8 {
        self.nonempty
    }
}

/// The length of the packet at the head of `queues[prio]` if `prio` is in `ready` (a function
/// of the queues alone, so that a port's scheduler can be borrowed beside them).
#[inline]
fn head_len<T>(queues: &[VecDeque<Queued<T>>; PRIORITIES], ready: u8, prio: usize) -> Option<u64> {
    if ready & (1 << prio) == 0 {
        return None;
    }
    let q = queues.get(prio)?.front()?;
    Some(u64::from(q.len))
}

/// The low 32 bits of `t`'s nanoseconds: what a queue entry keeps of its arrival.
fn low32(t: Instant) -> u32 {
    t.as_nanos() as u32
}

/// A packet the egress scheduler picked.
#[derive(Debug)]
pub struct Dequeued<T> {
    /// The packet.
    pub pkt: T,
    /// Its priority.
    pub prio: usize,
    /// The port it arrived on.
    pub ingress: u16,
    /// Its length, bytes.
    pub len: u64,
    /// When it was queued, modulo 2^32 ns (all a requeue needs).
    pub queued_at: Instant,
}

/// The switch element: ports, routes and the shared buffer. `T` is a packet (a pool index in
/// the fabric, a frame buffer in the real-time switch), `X` each port's transmit side.
#[derive(Debug)]
pub struct Switch<T, X> {
    name: String,
    cfg: SwitchConfig,
    /// Ports, in the order they were added.
    ports: Vec<SwitchPort<T, X>>,
    /// The equal-cost groups toward each destination and the ports that are live.
    routes: RouteTable,
    /// Each port's marking when its rate has its own (`SwitchConfig::ecn_by_rate`), by port;
    /// empty when none has. Here rather than in the port, so that a switch asks a line of its
    /// own on every mark, not a line of every egress port.
    port_ecn: Vec<Option<EcnThresholds>>,
    /// Bytes in the shared buffer.
    used_bytes: u64,
    /// Bit `p` set when priority `p` (below 64) is lossless with PFC on: asked at every
    /// admission and enqueue, where the configuration's list is a pointer chase away.
    pfc_mask: u64,
    /// The scheduler's strict classes ([`Scheduling::strict_mask`]), asked at every dequeue.
    strict_mask: u8,
    /// Per port and priority, when the XOFF it sent is due to be re-sent (`None` while no
    /// XOFF stands): see [`Switch::xoff_sent`]. Apart from the ports, which every hop reads.
    xoff_refresh: Vec<[Option<Instant>; PRIORITIES]>,
    /// The PFC watchdog, when the configuration has one and PFC is on.
    watchdog: Option<Box<Watchdog>>,
}

/// The lossless priorities below 64 of `cfg` with PFC on, as a bit set.
fn pfc_mask(cfg: &SwitchConfig) -> u64 {
    if cfg.pfc.is_none() {
        return 0;
    }
    cfg.lossless
        .iter()
        .filter(|&&p| p < 64)
        .fold(0, |m, &p| m | 1 << p)
}

impl<T, X> Switch<T, X> {
    /// A switch without ports or routes.
    pub fn new(name: String, cfg: SwitchConfig) -> Self {
        let watchdog = cfg
            .pfc
            .and(cfg.pfc_watchdog)
            .map(|w| Box::new(Watchdog::new(w)));
        Switch {
            pfc_mask: pfc_mask(&cfg),
            strict_mask: (cfg.sched.strict_mask() & 0xff) as u8,
            cfg,
            ports: Vec::new(),
            routes: RouteTable::default(),
            port_ecn: Vec::new(),
            used_bytes: 0,
            xoff_refresh: Vec::new(),
            watchdog,
            name,
        }
    }

    /// Name, for logs.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The configuration.
    pub fn config(&self) -> &SwitchConfig {
        &self.cfg
    }

    /// Turns PFC on with these thresholds, or off.
    pub fn set_pfc(&mut self, pfc: Option<PfcConfig>) {
        self.cfg.pfc = pfc;
        self.pfc_mask = pfc_mask(&self.cfg);
    }

    /// [`SwitchConfig::pfc_on`] from the bit set (the list itself past 63).
    fn pfc_on(&self, prio: usize) -> bool {
        match u32::try_from(prio)
            .ok()
            .and_then(|p| self.pfc_mask.checked_shr(p))
        {
            Some(m) => m & 1 != 0,
            None => self.cfg.pfc_on(prio),
        }
    }

    /// Adds a port around the transmit side `tx`; returns its index.
    pub fn add_port(&mut self, tx: X) -> u16 {
        self.ports.push(SwitchPort::new(tx));
        self.xoff_refresh.push([None; PRIORITIES]);
        if let Some(w) = self.watchdog.as_mut() {
            w.add_port();
        }
        (self.ports.len() - 1) as u16
    }

    /// Tells port `port` its line rate: it picks its marking from `ecn_by_rate`, and its
    /// dynamic PFC threshold scales with it.
    pub fn set_port_rate(&mut self, port: u16, rate_bps: u64) {
        let ecn = self
            .cfg
            .ecn_by_rate
            .iter()
            .find(|r| (r.gbps * 1e9 - rate_bps as f64).abs() <= 0.01 * rate_bps as f64)
            .map(|r| r.ecn);
        if let Some(p) = self.ports.get_mut(usize::from(port)) {
            p.rate_bps = rate_bps;
            let i = usize::from(port);
            if ecn.is_some() && self.port_ecn.len() <= i {
                self.port_ecn.resize(i + 1, None);
            }
            if let Some(e) = self.port_ecn.get_mut(i) {
                *e = ecn;
            }
        }
    }

    /// Bytes at which ingress (`port`, any lossless priority) sends XOFF now.
    fn xoff_threshold(&self, port: u16) -> u64 {
        let Some(pfc) = self.cfg.pfc else {
            return u64::MAX;
        };
        let Some(dynamic) = pfc.dynamic else {
            return pfc.xoff_bytes;
        };
        let shift = dynamic.shift_at(self.port(port).map_or(0, |p| p.rate_bps));
        let reserved = pfc.headroom_bytes.saturating_mul(self.ports.len() as u64);
        let free = self
            .cfg
            .buffer_bytes
            .saturating_sub(reserved)
            .saturating_sub(self.used_bytes);
        free >> shift.min(63)
    }

    /// Bytes at or below which a paused ingress (`port`, priority) sends XON now.
    fn xon_threshold(&self, port: u16) -> u64 {
        match self.cfg.pfc {
            Some(PfcConfig {
                dynamic: Some(d), ..
            }) => self
                .xoff_threshold(port)
                .saturating_sub(d.resume_offset_bytes),
            Some(p) => p.xon_bytes,
            None => 0,
        }
    }

    /// Number of ports.
    pub fn port_count(&self) -> usize {
        self.ports.len()
    }

    /// Port `i`.
    pub fn port(&self, i: u16) -> Option<&SwitchPort<T, X>> {
        self.ports.get(usize::from(i))
    }

    /// Port `i`, mutably (its transmit side is the driver's).
    pub fn port_mut(&mut self, i: u16) -> Option<&mut SwitchPort<T, X>> {
        self.ports.get_mut(usize::from(i))
    }

    /// The ports, in the order they were added.
    pub fn ports(&self) -> &[SwitchPort<T, X>] {
        &self.ports
    }

    /// Bytes in the shared buffer.
    pub fn used_bytes(&self) -> u64 {
        self.used_bytes
    }

    /// Sets the equal-cost egress ports toward each destination (indexed by host).
    pub fn set_routes(&mut self, routes: Vec<Vec<u16>>) {
        self.routes.set_routes(routes);
    }

    /// Ports that are members of an equal-cost group (a route with more than one port).
    pub fn ecmp_members(&self) -> Vec<u16> {
        self.routes.ecmp_members()
    }

    /// Records whether `port` has a link its sending end believes up (see [`Switch::port_live`]).
    pub fn set_port_live(&mut self, port: u16, live: bool) {
        self.routes.set_port_live(port, live);
    }

    /// Whether `port` has a link its sending end believes up, as last set by
    /// [`Switch::set_port_live`] (false for a port never set).
    pub fn port_live(&self, port: u16) -> bool {
        self.routes.port_live(port)
    }

    /// Picks the egress port for a packet among the routes to `host` whose link its sending
    /// end believes up ([`Switch::port_live`]): by flow hash, or under [`Routing::Adaptive`]
    /// the member with the fewest bytes queued now (ties to the hash's pick, then route order
    /// after it).
    pub fn route(&self, host: usize, ip: &IpInfo) -> Option<u16> {
        let r = self.routes.group(host)?;
        // A lone live member needs no hash (it is every pick); otherwise the hash modulo the
        // live members indexes them in route order.
        match r.len {
            0 => None,
            1 => Some(r.first),
            n => {
                let pick = (flow_hash(ip, self.cfg.ecmp_salt) % u64::from(n)) as usize;
                let members = self.routes.members(r)?;
                match self.cfg.routing {
                    Routing::Ecmp => members.get(pick).copied(),
                    Routing::Adaptive => self.least_queued(members, pick),
                }
            }
        }
    }

    /// The member of `members` with the fewest bytes queued, scanning from `first` round the
    /// group so that the earliest in that order wins a tie.
    fn least_queued(&self, members: &[u16], first: usize) -> Option<u16> {
        let n = members.len();
        (0..n)
            .filter_map(|i| members.get((first + i) % n).copied())
            .min_by_key(|&p| self.port(p).map_or(u64::MAX, SwitchPort::queued_bytes))
    }

    /// Admission: can a packet of `len` bytes from `ingress` join `egress`'s queue `prio`?
    pub fn admit(
        &self,
        ingress: u16,
        egress: u16,
        prio: usize,
        len: u64,
    ) -> Result<(), DropReason> {
        if self.used_bytes + len > self.cfg.buffer_bytes {
            return Err(DropReason::BufferFull);
        }
        if let Some(limit) = self.cfg.sched.class_limit(prio) {
            let held: u64 = self.ports.iter().filter_map(|p| p.qbytes.get(prio)).sum();
            if held + len > limit {
                return Err(DropReason::ClassFull);
            }
        }
        if self.pfc_on(prio) {
            let pfc = self.cfg.pfc.unwrap_or_default();
            let limit = self
                .xoff_threshold(ingress)
                .saturating_add(pfc.headroom_bytes);
            if self.ingress_depth(ingress, prio) + len > limit {
                return Err(DropReason::HeadroomOverrun);
            }
        } else if self.queue_depth(egress, prio) + len > self.cfg.queue_limit_bytes {
            return Err(DropReason::QueueFull);
        }
        Ok(())
    }

    /// Bytes in `egress`'s queue `prio`.
    pub fn queue_depth(&self, egress: u16, prio: usize) -> u64 {
        self.port_bytes(egress, |p| &p.qbytes, prio)
    }

    /// Bytes buffered that arrived on `ingress` with priority `prio`.
    pub fn ingress_depth(&self, ingress: u16, prio: usize) -> u64 {
        self.port_bytes(ingress, |p| &p.ingress_bytes, prio)
    }

    fn port_bytes(
        &self,
        port: u16,
        which: impl Fn(&SwitchPort<T, X>) -> &[u64; PRIORITIES],
        prio: usize,
    ) -> u64 {
        self.port(port)
            .and_then(|p| which(p).get(prio))
            .copied()
            .unwrap_or(0)
    }

    /// The probability of marking an ECT packet at `egress`'s queue `prio` now (0 without
    /// ECN there): at 0 (below Kmin, most packets) nothing is marked and nothing is drawn.
    pub fn ecn_probability(&self, egress: u16, prio: usize) -> f64 {
        let Some(Some(ecn)) = self.cfg.ecn.get(prio) else {
            return 0.0;
        };
        let own = self.port_ecn.get(usize::from(egress));
        let ecn = own.and_then(Option::as_ref).unwrap_or(ecn);
        ecn.probability(self.queue_depth(egress, prio))
    }

    /// The 802.1Qbb frame a port with MAC `src` sends upstream for `prio`: XOFF with the
    /// configured pause time, or XON (pause time 0). `None` with PFC off.
    pub fn pause_frame(
        &self,
        src: [u8; 6],
        prio: usize,
        xoff: bool,
    ) -> Option<[u8; pfc::FRAME_LEN]> {
        let quanta = match self.cfg.pfc {
            Some(p) if xoff => p.quanta,
            Some(_) => 0,
            None => return None,
        };
        let mut frame = [0u8; pfc::FRAME_LEN];
        PauseRepr::single(src, prio as u8, quanta).emit(&mut frame)?;
        Some(frame)
    }

    /// Queues an admitted packet at `now`; returns whether the ingress (port, prio) just
    /// crossed XOFF (the caller sends the pause frame upstream).
    pub fn enqueue(
        &mut self,
        pkt: T,
        (ingress, egress): (u16, u16),
        prio: usize,
        len: u64,
        now: Instant,
    ) -> bool {
        self.used_bytes += len;
        let pfc_on = self.pfc_on(prio);
        // Only a lossless class needs the threshold (it depends on the buffer, not the queues).
        let xoff_at = if pfc_on {
            self.xoff_threshold(ingress)
        } else {
            u64::MAX
        };
        if let Some(out) = self.ports.get_mut(usize::from(egress)) {
            if let (Some(q), Some(b)) = (out.queues.get_mut(prio), out.qbytes.get_mut(prio)) {
                q.push_back(Queued {
                    pkt,
                    ingress,
                    len: u32::try_from(len).unwrap_or(u32::MAX),
                    at: low32(now),
                });
                *b += len;
                out.nonempty |= 1 << prio;
            }
        }
        let Some(inp) = self.ports.get_mut(usize::from(ingress)) else {
            return false;
        };
        let (Some(b), Some(x)) = (inp.ingress_bytes.get_mut(prio), inp.xoff.get_mut(prio)) else {
            return false;
        };
        *b += len;
        if pfc_on && !*x && *b > xoff_at {
            *x = true;
            return true;
        }
        false
    }

    /// The priority [`Switch::dequeue`] would serve next at `egress`, and the length of the
    /// packet it would hand out.
    pub fn peek(&self, egress: u16, paused: impl Fn(&X, usize) -> bool) -> Option<(usize, u64)> {
        let port = self.ports.get(usize::from(egress))?;
        let ready = port.ready(paused);
        let prio =
            port.sched
                .clone()
                .pick_ready(&self.cfg.sched, self.strict_mask, ready, |p| {
                    head_len(&port.queues, ready, p)
                })?;
        let len = port.queues.get(prio)?.front()?.len;
        Some((prio, u64::from(len)))
    }

    /// Picks the next packet for `egress` at `now` (round robin over non-empty priorities that
    /// `paused(tx, prio)` does not hold back), counts how long it waited and releases its
    /// buffer.
    pub fn dequeue(
        &mut self,
        egress: u16,
        now: Instant,
        paused: impl Fn(&X, usize) -> bool,
    ) -> Option<Dequeued<T>> {
        let port = self.ports.get_mut(usize::from(egress))?;
        let ready = port.ready(paused);
        let queues = &port.queues;
        let prio = port
            .sched
            .pick_ready(&self.cfg.sched, self.strict_mask, ready, |p| {
                head_len(queues, ready, p)
            })?;
        let q = port.queues.get_mut(prio)?.pop_front()?;
        if port.queues.get(prio).is_some_and(VecDeque::is_empty) {
            port.sched.emptied(prio);
            port.nonempty &= !(1 << prio);
        }
        if let Some(slot) = port.sojourn.get_mut(prio) {
            let waited = low32(now).wrapping_sub(q.at);
            slot.get_or_insert_with(Sojourn::default)
                .record(Duration::from_nanos(u64::from(waited)));
        }
        let len = u64::from(q.len);
        if let Some(b) = port.qbytes.get_mut(prio) {
            *b -= len.min(*b);
        }
        self.used_bytes -= len.min(self.used_bytes);
        if let Some(b) = self
            .ports
            .get_mut(usize::from(q.ingress))
            .and_then(|p| p.ingress_bytes.get_mut(prio))
        {
            *b -= len.min(*b);
        }
        Some(Dequeued {
            pkt: q.pkt,
            prio,
            ingress: q.ingress,
            len,
            queued_at: Instant::from_nanos(u64::from(q.at)),
        })
    }

    /// What a [`Switch::dequeue`] at `egress` does to the scheduler with every queue empty.
    pub fn idle(&mut self, egress: u16) {
        if let Some(port) = self.ports.get_mut(usize::from(egress)) {
            port.sched.idle(&self.cfg.sched);
        }
    }

    /// Empties every queue, as a reboot does: the buffer, the queue and ingress accounting and
    /// the standing XOFFs are cleared; returns the packets that were buffered (lost), each with
    /// its egress port and priority.
    pub fn flush(&mut self) -> Vec<(u16, usize, T)> {
        self.used_bytes = 0;
        let mut lost = Vec::new();
        for (i, port) in self.ports.iter_mut().enumerate() {
            for (prio, q) in port.queues.iter_mut().enumerate() {
                lost.extend(q.drain(..).map(|x| (i as u16, prio, x.pkt)));
            }
            port.nonempty = 0;
            port.qbytes = [0; PRIORITIES];
            port.ingress_bytes = [0; PRIORITIES];
            port.xoff = [false; PRIORITIES];
        }
        self.xoff_refresh.fill([None; PRIORITIES]);
        if let Some(w) = self.watchdog.as_mut() {
            w.reset();
        }
        lost
    }

    /// Forgets the sojourn times counted so far (the measurement window opens).
    pub fn clear_sojourn(&mut self) {
        for p in &mut self.ports {
            p.sojourn = Default::default();
        }
    }

    /// Puts a dequeued packet back at the head of its queue (a port that refused it), taking
    /// its buffer again; PFC is not re-evaluated. Its sojourn counts again when it leaves.
    pub fn requeue_front(&mut self, egress: u16, d: Dequeued<T>) {
        if let Some(p) = self.ports.get_mut(usize::from(d.ingress)) {
            if let Some(b) = p.ingress_bytes.get_mut(d.prio) {
                *b += d.len;
            }
        }
        let Some(port) = self.ports.get_mut(usize::from(egress)) else {
            return;
        };
        if let (Some(q), Some(b)) = (port.queues.get_mut(d.prio), port.qbytes.get_mut(d.prio)) {
            q.push_front(Queued {
                pkt: d.pkt,
                ingress: d.ingress,
                len: u32::try_from(d.len).unwrap_or(u32::MAX),
                at: low32(d.queued_at),
            });
            *b += d.len;
            port.nonempty |= 1 << d.prio;
            self.used_bytes += d.len;
        }
    }

    /// After a dequeue: whether the ingress (port, prio) should now send XON.
    pub fn should_resume(&mut self, ingress: u16, prio: usize) -> bool {
        let xon = self.xon_threshold(ingress);
        let Some(p) = self.ports.get_mut(usize::from(ingress)) else {
            return false;
        };
        match (p.xoff.get_mut(prio), p.ingress_bytes.get(prio)) {
            (Some(x), Some(&b)) if *x && b <= xon => {
                *x = false;
                let refresh = self.xoff_refresh.get_mut(usize::from(ingress));
                if let Some(t) = refresh.and_then(|r| r.get_mut(prio)) {
                    *t = None;
                }
                true
            }
            _ => false,
        }
    }

    /// Records that `port` sent XOFF for `prio` at `now` (the first or a refresh) and returns
    /// when to re-send it while it stands, so that the sender stays paused: half its pause time
    /// later (the configured quanta at the port's rate, [`Switch::set_port_rate`]; at least
    /// 1 ns). `None` with PFC off or no such port. XON and [`Switch::flush`] forget it.
    pub fn xoff_sent(&mut self, port: u16, prio: usize, now: Instant) -> Option<Instant> {
        let quanta = self.cfg.pfc?.quanta;
        let half = pfc::quanta_to_nanos(quanta, self.port(port)?.rate_bps) / 2;
        let at = now + Duration::from_nanos(half.max(1));
        let slots = self.xoff_refresh.get_mut(usize::from(port))?;
        *slots.get_mut(prio)? = Some(at);
        Some(at)
    }

    /// When `port`'s standing XOFF for `prio` is due to be re-sent (`None` if none stands).
    pub fn xoff_refresh_at(&self, port: u16, prio: usize) -> Option<Instant> {
        let stands = self.port(port)?.xoff(prio);
        let at = self.xoff_refresh.get(usize::from(port))?.get(prio).copied();
        at.flatten().filter(|_| stands)
    }

    /// Every standing XOFF that was sent: (port, priority, refresh time), port by port.
    fn refreshes(&self) -> impl Iterator<Item = (u16, usize, Instant)> + '_ {
        let ports = 0..self.xoff_refresh.len() as u16;
        ports.flat_map(move |i| {
            (0..PRIORITIES).filter_map(move |p| Some((i, p, self.xoff_refresh_at(i, p)?)))
        })
    }

    /// The standing XOFFs due to be re-sent at `now`, as (port, priority), port by port.
    pub fn xoff_due(&self, now: Instant) -> impl Iterator<Item = (u16, usize)> + '_ {
        let due = self.refreshes().filter(move |&(.., at)| at <= now);
        due.map(|(i, p, _)| (i, p))
    }

    /// When the next standing XOFF is due to be re-sent, if any stands.
    pub fn next_xoff_due(&self) -> Option<Instant> {
        self.refreshes().map(|(.., at)| at).min()
    }
}

#[path = "switch_watch.rs"]
mod watch;

#[cfg(test)]
#[path = "switch_tests.rs"]
mod tests;
