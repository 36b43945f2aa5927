//! The sans-IO RoCEv2 endpoint: one MAC and IP address owning queue pairs, memory regions and
//! completion queues; frames and time in (`handle_frame`, `handle_timeout`), frames and deadlines
//! out (`poll_transmit`, `poll_timeout`).
//!
//! It never reads a clock or touches a port: a driver (DPDK loop, in-memory pair, simulator) moves
//! the frames. Congestion control plugs in per QP (`set_congestion_control`, a [`CcPacer`]).

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::counters::EndpointCounters;
use crate::ecn::{Marking, NotificationPoint};
use crate::mr::{MemoryRegion, MrError, MrInfo, MrTable, PdHandle};
use crate::qp::paced::CcPacer;
use crate::qp::{LocalAddr, QpError, QueuePair, RequesterConfig};
use crate::time::{Duration, Instant};
use crate::verbs::{
    AccessFlags, CompletionQueue, CqHandle, QpAttr, QpInit, RecvWr, SendWr, WorkCompletion,
};
use crate::wire::opcode::Transport;
use crate::wire::{
    parse_view_fast_with, parse_view_with, Ecn, EthernetAddress, RoceView, WireError,
};

mod reserve;

/// QP numbers start here (0 and 1 are the special QPs; rxe starts at 17).
pub const FIRST_QPN: u32 = 17;
/// The default partition key (full member, default partition).
pub const DEFAULT_PKEY: u16 = 0xffff;

/// How an endpoint presents itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndpointConfig {
    /// MAC address.
    pub mac: EthernetAddress,
    /// IPv4 address (GID `::ffff:a.b.c.d`), if any.
    pub ipv4: Option<Ipv4Addr>,
    /// IPv6 address (GID), if any.
    pub ipv6: Option<Ipv6Addr>,
    /// Partition key.
    pub pkey: u16,
    /// DSCP, ECN and 802.1Q PCP of what the endpoint sends (data, ACKs, CNPs) where a QP's
    /// traffic class leaves them 0, and the VLAN to tag frames with.
    pub marking: Marking,
    /// Requester window and AckReq spacing.
    pub requester: RequesterConfig,
    /// Mixed into the per-QP UDP source port (flow entropy).
    pub udp_port_seed: u16,
    /// Most QPs.
    pub max_qps: usize,
    /// The number of the first QP ([`FIRST_QPN`] by default); QPs are numbered from it up. Endpoints
    /// sharing one MAC and IP across cores (one per shard) each take their own range, so a
    /// frame's destination QPN names the shard that owns it.
    pub first_qpn: u32,
    /// Notification point: at most one CNP per QP per this interval (mlx5 `min_time_between_cnps`).
    pub cnp_interval: Duration,
    /// Notification point on (the default): CE-marked requests and READ responses are answered
    /// with CNPs. Off (mlx5 `ecn/roce_np/enable/<prio>` = 0): CE marks are still counted
    /// (`np_ecn_marked_roce_packets`, the QP's `ecn_ce_received`) but no CNP is sent.
    pub np_enabled: bool,
    /// Seed of the memory-region key bytes; `None` (the default) draws them from the OS's
    /// randomness. Tests and simulations set it so their runs repeat.
    pub key_seed: Option<u64>,
    /// Check each received frame's ICRC (the default). Off only below a link that already
    /// dropped every corrupted frame (a NIC that verifies it, a simulated fabric that models
    /// corruption as an FCS error): no frame with a wrong ICRC can arrive there, and checking
    /// again is only cost. Every other header check stays.
    pub verify_icrc: bool,
}

impl EndpointConfig {
    /// An IPv4 endpoint with defaults elsewhere.
    pub fn ipv4(mac: EthernetAddress, ip: Ipv4Addr) -> Self {
        EndpointConfig {
            mac,
            ipv4: Some(ip),
            ipv6: None,
            pkey: DEFAULT_PKEY,
            marking: Marking::default(),
            requester: RequesterConfig::default(),
            udp_port_seed: 0,
            max_qps: crate::limits::MAX_QPS,
            first_qpn: FIRST_QPN,
            cnp_interval: Duration::from_micros(4),
            np_enabled: true,
            key_seed: None,
            verify_icrc: true,
        }
    }
}

/// The endpoint.
#[derive(Debug)]
pub struct Endpoint {
    cfg: EndpointConfig,
    local: LocalAddr,
    mrs: MrTable,
    cqs: Vec<CompletionQueue>,
    /// The QPs by slot (QPN minus `first_qpn`), boxed: a free slot costs a pointer, not a QP.
    qps: Vec<Option<Box<QueuePair>>>,
    /// Slots of the QPs that may have a frame to send (control or data, due or paced), in
    /// round-robin order. A QP leaves when it has nothing to send and comes back with any event
    /// that can give it something (post, received packet, timer, modify), so `poll_transmit`
    /// never scans idle QPs.
    ready: VecDeque<usize>,
    /// `ready` membership by slot.
    in_ready: Vec<bool>,
    /// Each QP's deadline; every place that hands out a QP mutably touches its slot.
    due: crate::qp::due::DueCache,
    /// Reused list of the slots whose timers fire in one `handle_timeout`.
    firing: Vec<usize>,
    /// Armed CQs and their events (`req_notify_cq`).
    cq_events: crate::qp::notify::CqEvents,
    stats: EndpointCounters,
    np: NotificationPoint,
    int: crate::qp::int::IntPaths,
    /// QP numbers held for QPs made later, and those of retired QPs (see [`reserve`]).
    held: reserve::Held,
}

fn pkey_matches(a: u16, b: u16) -> bool {
    (a & 0x7fff) == (b & 0x7fff) && (a | b) & 0x8000 != 0 && (a & 0x7fff) != 0
}

impl Endpoint {
    /// A new endpoint with no QPs.
    pub fn new(cfg: EndpointConfig) -> Self {
        Endpoint {
            local: LocalAddr {
                mac: cfg.mac,
                ipv4: cfg.ipv4,
                ipv6: cfg.ipv6,
                pkey: cfg.pkey,
                marking: cfg.marking,
            },
            cfg,
            mrs: MrTable::new(cfg.key_seed),
            cqs: Vec::new(),
            qps: Vec::new(),
            ready: VecDeque::new(),
            in_ready: Vec::new(),
            due: Default::default(),
            firing: Vec::new(),
            cq_events: Default::default(),
            stats: EndpointCounters::default(),
            np: NotificationPoint::new(cfg.cnp_interval).with_enabled(cfg.np_enabled),
            int: crate::qp::int::IntPaths::default(),
            held: reserve::Held::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &EndpointConfig {
        &self.cfg
    }

    /// A new protection domain.
    pub fn alloc_pd(&mut self) -> PdHandle {
        self.mrs.alloc_pd()
    }

    /// Registers `len` zeroed bytes owned by the endpoint. With [`crate::mr::MAX_REGIONS`]
    /// regions registered, nothing is and both keys are 0 (see [`Endpoint::try_reg_mr`]).
    pub fn reg_mr(&mut self, pd: PdHandle, len: usize, access: AccessFlags) -> MrInfo {
        self.mrs.register(pd, len, access)
    }

    /// Registers a region of `len` bytes that keeps none: reads give zeros, writes are dropped
    /// (see [`MrTable::register_discard`]; for traffic whose bytes nobody reads).
    pub fn reg_mr_discard(
        &mut self,
        pd: PdHandle,
        len: usize,
        access: AccessFlags,
    ) -> Result<MrInfo, MrError> {
        self.mrs.register_discard(pd, len, access)
    }

    /// Registers `memory`, lent by the caller, at address `addr`: zero-copy (see
    /// [`MrTable::register_lent`]).
    pub fn reg_mr_lent(
        &mut self,
        pd: PdHandle,
        addr: u64,
        memory: Box<dyn crate::mr::RegionMemory>,
        access: AccessFlags,
    ) -> Result<MrInfo, MrError> {
        self.mrs.register_lent(pd, addr, memory, access)
    }

    /// Registers `len` zeroed bytes owned by the endpoint, or says why not.
    pub fn try_reg_mr(
        &mut self,
        pd: PdHandle,
        len: usize,
        access: AccessFlags,
    ) -> Result<MrInfo, MrError> {
        self.mrs.try_register(pd, len, access)
    }

    /// Deregisters the region with local key `lkey`, at once: an operation still using it fails
    /// at its next access (see [`crate::mr`]), and nothing it does reaches the region that takes
    /// the slot next.
    pub fn dereg_mr(&mut self, lkey: u32) -> Result<(), MrError> {
        self.mrs.deregister(lkey)
    }

    /// The region with local key `lkey` (read its bytes).
    pub fn mr(&self, lkey: u32) -> Option<&MemoryRegion> {
        self.mrs.get(lkey)
    }

    /// The region with local key `lkey` (fill its bytes).
    pub fn mr_mut(&mut self, lkey: u32) -> Option<&mut MemoryRegion> {
        self.mrs.get_mut(lkey)
    }

    /// A completion queue holding `capacity` completions without reallocating.
    pub fn create_cq(&mut self, capacity: usize) -> CqHandle {
        self.cqs.push(CompletionQueue::new(capacity));
        CqHandle(self.cqs.len() as u32 - 1)
    }

    /// Moves up to `out.len()` completions of `cq` into `out`; returns how many.
    #[must_use]
    pub fn poll_cq(&mut self, cq: CqHandle, out: &mut [WorkCompletion]) -> usize {
        let Some(q) = self.cqs.get_mut(cq.0 as usize) else {
            return 0;
        };
        let mut n = 0;
        for slot in out.iter_mut() {
            match q.pop() {
                Some(wc) => {
                    *slot = wc;
                    n += 1;
                }
                None => break,
            }
        }
        n
    }

    /// The oldest completion of `cq`.
    // Inlined across crates: an engine polls each flow's CQ after every event.
    #[inline]
    #[must_use]
    pub fn poll_cq_one(&mut self, cq: CqHandle) -> Option<WorkCompletion> {
        self.cqs.get_mut(cq.0 as usize)?.pop()
    }

    /// Arms `cq` for one completion event (verbs' `req_notify_cq`): once it holds a
    /// completion after an endpoint call (at once, if it holds one now), it is disarmed and
    /// queued for [`Endpoint::cq_events`]. Lets an application with many CQs poll only those
    /// that got something.
    pub fn req_notify_cq(&mut self, cq: CqHandle) -> Result<(), QpError> {
        if cq.index() >= self.cqs.len() {
            return Err(QpError::UnknownCq);
        }
        self.cq_events.arm(cq, &self.cqs);
        Ok(())
    }

    /// The CQs that got completions while armed, oldest event first (verbs'
    /// `get_cq_event`); each stays disarmed until armed again. Taken as they are read: an
    /// iterator dropped early drops the rest.
    pub fn cq_events(&mut self) -> impl Iterator<Item = CqHandle> + '_ {
        self.cq_events.drain()
    }

    /// Queues completion events for slot `slot`'s CQs (after a call that may complete work).
    #[inline]
    fn note_completions(&mut self, slot: usize) {
        if let Some(qp) = self.qps.get(slot).and_then(Option::as_deref) {
            self.cq_events.check_qp(qp, &self.cqs);
        }
    }

    /// Creates a QP in RESET; returns its number.
    pub fn create_qp(&mut self, init: QpInit) -> Result<u32, QpError> {
        let cqs = self.cqs.len() as u32;
        if init.send_cq.0 >= cqs || init.recv_cq.0 >= cqs {
            return Err(QpError::UnknownCq);
        }
        let slot = self.free_slot()?;
        let qpn = self.cfg.first_qpn + slot as u32;
        let port = self.udp_src_port(qpn);
        if let Some(s) = self.qps.get_mut(slot) {
            *s = Some(Box::new(QueuePair::new(
                qpn,
                &init,
                port,
                self.cfg.requester,
            )));
        }
        self.due.touch(slot);
        Ok(qpn)
    }

    /// Per-QP UDP source port in 49152..=65535, spread by a hash of the QPN.
    fn udp_src_port(&self, qpn: u32) -> u16 {
        let mut x = u64::from(qpn) ^ (u64::from(self.cfg.udp_port_seed) << 32);
        x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        x ^= x >> 29;
        0xc000 | (x as u16 & 0x3fff)
    }

    /// Removes a QP (its outstanding work is dropped without completions).
    pub fn destroy_qp(&mut self, qpn: u32) -> Result<(), QpError> {
        let slot = self.slot(qpn).ok_or(QpError::UnknownQp(qpn))?;
        match self.qps.get_mut(slot) {
            Some(s @ Some(_)) => {
                *s = None;
                self.held.freed(slot);
                self.due.touch(slot);
                self.int.clear(slot);
                Ok(())
            }
            _ => Err(QpError::UnknownQp(qpn)),
        }
    }

    fn slot(&self, qpn: u32) -> Option<usize> {
        qpn.checked_sub(self.cfg.first_qpn).map(|s| s as usize)
    }

    /// Puts slot `slot` on the ready queue (its QP may have something to send now).
    fn mark_ready(&mut self, slot: usize) {
        if self.in_ready.len() <= slot {
            self.in_ready.resize(slot + 1, false);
        }
        if let Some(flag @ false) = self.in_ready.get_mut(slot) {
            *flag = true;
            self.ready.push_back(slot);
        }
    }

    /// Moves entry `i` of the ready queue to its back (it was just served).
    fn requeue_served(&mut self, i: usize) {
        match (i, self.ready.len()) {
            (_, 0 | 1) => {}
            (0, _) => self.ready.rotate_left(1),
            _ => {
                if let Some(slot) = self.ready.remove(i) {
                    self.ready.push_back(slot);
                }
            }
        }
    }

    /// Takes entry `i` off the ready queue.
    fn unready(&mut self, i: usize) {
        if let Some(slot) = self.ready.remove(i) {
            if let Some(flag) = self.in_ready.get_mut(slot) {
                *flag = false;
            }
        }
    }

    /// The numbers of the endpoint's QPs, in order.
    pub fn qpns(&self) -> impl Iterator<Item = u32> + '_ {
        let first = self.cfg.first_qpn;
        self.qps
            .iter()
            .enumerate()
            .filter_map(move |(slot, qp)| qp.as_ref().map(|_| first + slot as u32))
    }

    /// The QP numbered `qpn`.
    pub fn qp(&self, qpn: u32) -> Option<&QueuePair> {
        self.qps.get(self.slot(qpn)?)?.as_deref()
    }

    /// The QP numbered `qpn`, mutable.
    pub fn qp_mut(&mut self, qpn: u32) -> Option<&mut QueuePair> {
        let slot = self.slot(qpn)?;
        self.qps.get(slot)?.as_ref()?;
        // The caller may change what it has to send, and when it is next due.
        self.mark_ready(slot);
        self.due.touch(slot);
        self.qps.get_mut(slot)?.as_deref_mut()
    }

    /// QP `qpn` with the tables it borrows for a call, and its slot.
    fn qp_parts(
        &mut self,
        qpn: u32,
    ) -> Result<(usize, &mut QueuePair, &mut MrTable, &mut [CompletionQueue]), QpError> {
        let slot = self.slot(qpn).ok_or(QpError::UnknownQp(qpn))?;
        let qp = self
            .qps
            .get_mut(slot)
            .and_then(Option::as_deref_mut)
            .ok_or(QpError::UnknownQp(qpn))?;
        self.due.touch(slot);
        Ok((slot, qp, &mut self.mrs, &mut self.cqs))
    }

    fn with_qp<R>(
        &mut self,
        qpn: u32,
        f: impl FnOnce(&mut QueuePair, &mut MrTable, &mut [CompletionQueue]) -> R,
    ) -> Result<R, QpError> {
        let (slot, qp, mrs, cqs) = self.qp_parts(qpn)?;
        let r = f(qp, mrs, cqs);
        self.note_completions(slot);
        // Posts, modifications and pacers can all give the QP something to send.
        self.mark_ready(slot);
        self.due.refresh(&self.qps);
        Ok(r)
    }

    /// `modify_qp`.
    pub fn modify_qp(&mut self, qpn: u32, attr: &QpAttr) -> Result<(), QpError> {
        self.with_qp(qpn, |qp, _, cqs| qp.modify(attr, cqs))?
    }

    /// `post_send`.
    pub fn post_send(&mut self, qpn: u32, wr: SendWr) -> Result<(), QpError> {
        // Not through `with_qp`: a closure would capture (copy) the work request first.
        let (slot, qp, mrs, cqs) = self.qp_parts(qpn)?;
        let r = qp.post_send(wr, mrs, cqs);
        self.note_completions(slot);
        self.mark_ready(slot);
        self.due.refresh(&self.qps);
        r
    }

    /// `post_recv`.
    pub fn post_recv(&mut self, qpn: u32, wr: RecvWr) -> Result<(), QpError> {
        self.with_qp(qpn, |qp, mrs, cqs| qp.post_recv(wr, mrs, cqs))?
    }

    /// Counters of the endpoint, with the sum over its QPs in `qp`.
    pub fn counters(&self) -> EndpointCounters {
        let mut c = self.stats;
        let mut sum = *self.held.retired_counters();
        for qp in self.qps.iter().flatten() {
            sum.accumulate(qp.counters());
        }
        c.qp = sum;
        c
    }

    fn count_parse_error(&mut self, e: WireError) {
        let d = &mut self.stats.drops;
        match e {
            WireError::BadIcrc { .. } => d.bad_icrc += 1,
            WireError::BadChecksum => d.bad_ip_checksum += 1,
            WireError::BadOpcode(_) | WireError::BadVersion(_) => d.bad_header += 1,
            _ => d.malformed += 1,
        }
    }

    fn is_local_ip(&self, ip: IpAddr) -> bool {
        match ip {
            IpAddr::V4(v4) => self.cfg.ipv4 == Some(v4),
            IpAddr::V6(v6) => {
                self.cfg.ipv6 == Some(v6)
                    || v6
                        .to_ipv4_mapped()
                        .is_some_and(|v4| self.cfg.ipv4 == Some(v4))
            }
        }
    }

    /// One received Ethernet frame. Never panics; every discard is counted.
    pub fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        self.stats.rx_frames += 1;
        self.stats.rx_bytes += frame.len() as u64;
        self.handle_roce(now, frame);
        self.due.refresh(&self.qps);
    }

    fn handle_roce(&mut self, now: Instant, frame: &[u8]) {
        // By reference: moving the view out of the Result would copy it with wide loads right
        // after parse_view's narrow stores, which stalls (see wire::icrc::RegCrc).
        let fast = parse_view_fast_with(frame, self.cfg.verify_icrc);
        if let Some(view) = &fast {
            self.handle_parsed(now, view, frame.len());
            return;
        }
        // Other shapes (a VLAN tag) and every error.
        let parsed = self.parse(frame);
        match &parsed {
            Ok(view) => {
                self.handle_parsed(now, view, frame.len());
            }
            Err(e) => self.parse_failed(now, frame, *e),
        }
    }

    /// Parses a received frame (every header check and the ICRC, into a light view); a failure
    /// is handled by [`Self::parse_failed`], giving `None`.
    #[inline]
    fn parse_roce<'f>(&mut self, now: Instant, frame: &'f [u8]) -> Option<RoceView<'f>> {
        match self.parse(frame) {
            Ok(v) => Some(v),
            Err(e) => {
                self.parse_failed(now, frame, e);
                None
            }
        }
    }

    /// `parse_view`, or without the ICRC comparison when the configuration says the link
    /// checked it.
    #[inline]
    fn parse<'f>(&self, frame: &'f [u8]) -> Result<RoceView<'f>, WireError> {
        parse_view_with(frame, self.cfg.verify_icrc)
    }

    /// A frame `parse_view` refused: one carrying an INT shim goes to
    /// [`Self::handle_int_frame`], anything else is counted.
    fn parse_failed(&mut self, now: Instant, frame: &[u8], e: WireError) {
        match e {
            WireError::NotRoce if crate::wire::int::shim_offset(frame).is_some() => {
                self.handle_int_frame(now, frame);
            }
            e => self.count_parse_error(e),
        }
    }

    /// A checked RoCE packet of `frame_len` bytes: checked against this endpoint and handed to
    /// its QP (or, for a CNP, to the QP's reaction point). CNPs pass the same destination,
    /// P_Key, QP, source and state checks as every other packet. Returns whether the packet
    /// passed them all and its QP took it.
    fn handle_parsed(&mut self, now: Instant, view: &RoceView<'_>, frame_len: usize) -> bool {
        let bth = &view.bth;
        if view.eth_dst() != self.cfg.mac || !self.is_local_ip(view.ip_dst()) {
            self.stats.drops.wrong_destination += 1;
            return false;
        }
        if !pkey_matches(bth.pkey, self.cfg.pkey) {
            self.stats.drops.bad_pkey += 1;
            return false;
        }
        let transport = view.info.transport;
        if transport != Transport::Rc && transport != Transport::Cnp {
            self.stats.drops.not_rc += 1;
            return false;
        }
        let Some(slot) = self.slot(bth.dest_qpn) else {
            self.stats.drops.unknown_qp += 1;
            return false;
        };
        let Some(qp) = self.qps.get_mut(slot).and_then(Option::as_deref_mut) else {
            self.count_no_qp(slot);
            return false;
        };
        self.due.touch(slot);
        if let Some(av) = qp.address_vector() {
            if !same_ip(av.remote_ip, view.ip_src()) {
                self.stats.drops.wrong_source += 1;
                return false;
            }
        }
        if transport == Transport::Cnp {
            let handled = qp.note_cnp(now);
            if handled {
                self.mark_ready(slot);
            } else {
                self.stats.drops.bad_state += 1;
            }
            return handled;
        }
        if !qp.handle_packet(now, view, frame_len, &mut self.mrs, &mut self.cqs) {
            self.stats.drops.bad_state += 1;
            return false;
        }
        self.cq_events.check_qp(qp, &self.cqs);
        let (qpn, dest_qpn) = (qp.qpn(), qp.dest_qpn());
        self.mark_ready(slot);
        let op = bth.opcode;
        if view.ecn == Ecn::Ce && (op.is_request() || op.is_read_response()) {
            // Notification point: CE on data (a request, or a READ response, whose data flows
            // from the responder) → a CNP back to the sender's QP.
            self.np.on_ce(now, qpn, dest_qpn);
        }
        true
    }

    /// A frame with an INT shim: stripped (restoring the ICRC-covered bytes), handled as usual,
    /// then its records are owed to the peer (requests) or handed to the QP's controller (echoes
    /// on responses).
    fn handle_int_frame(&mut self, now: Instant, frame: &[u8]) {
        let Some((scratch, n, shim)) = self.int.strip(frame) else {
            self.stats.drops.malformed += 1;
            return;
        };
        let restored = scratch.get(..n).unwrap_or(&[]);
        // One parse serves both the packet's handling and the INT bookkeeping below, which only
        // a packet its QP took gets (the records are as much the peer's word as the packet).
        let target = self.parse_roce(now, restored).and_then(|view| {
            self.handle_parsed(now, &view, restored.len())
                .then_some((view.bth.dest_qpn, view.bth.opcode.is_request()))
        });
        if let Some((qpn, request)) = target {
            match (self.slot(qpn), shim.echo, request) {
                (Some(slot), false, true) if self.qp(qpn).is_some() => {
                    self.int.owe_echo(slot, &shim)
                }
                (Some(_), true, false) => {
                    let mut hops = [crate::cc::IntHop::default(); crate::wire::int::MAX_HOPS];
                    let k = self.int.echoed_hops(&shim, &mut hops);
                    if let Some(qp) = self.qp_mut(qpn) {
                        qp.note_int(now, hops.get(..k).unwrap_or(&[]));
                    }
                }
                _ => {}
            }
        }
        self.int.put_scratch(scratch);
    }

    /// Lets due timers fire.
    pub fn handle_timeout(&mut self, now: Instant) {
        let mut firing = std::mem::take(&mut self.firing);
        self.due.due_by(&self.qps, now, &mut firing);
        for &slot in &firing {
            let Some(qp) = self.qps.get_mut(slot).and_then(Option::as_deref_mut) else {
                continue;
            };
            // Due only for its paced departure (most wake-ups of a sending QP): no timer runs,
            // nothing changes, and `poll_transmit` serves it (its deadline stays as it is).
            if qp.timer_due(now) {
                qp.handle_timeout(now, &mut self.mrs, &mut self.cqs);
                self.cq_events.check_qp(qp, &self.cqs);
                self.due.touch(slot);
            }
            self.mark_ready(slot);
        }
        self.firing = firing;
        self.due.refresh(&self.qps);
    }

    /// Writes the next frame into `buf`: ACK/NAK/atomic ACK first, then data from the QPs in
    /// round-robin among those whose earliest departure has come. Returns the frame length.
    #[must_use]
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let len = self.next_frame(now, buf);
        self.due.refresh(&self.qps);
        len
    }

    fn next_frame(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        while let Some(cnp) = self.np.poll_cnp(now) {
            if let Some(len) = self.emit_cnp(cnp.local_qpn, cnp.dest_qpn, buf) {
                self.stats.cnps_sent += 1;
                return Some(self.count_tx(len));
            }
        }
        // Control first (ACKs, NAKs, atomic ACKs), then data; each pass round-robin over the
        // ready queue, the QP served going to its back.
        for i in 0..self.ready.len() {
            let Some(&slot) = self.ready.get(i) else {
                break;
            };
            let Some(qp) = self.qps.get_mut(slot).and_then(Option::as_deref_mut) else {
                continue;
            };
            if !qp.has_control() {
                continue;
            }
            self.due.touch(slot);
            if let Some(len) = qp.poll_control(now, &self.local, &self.mrs, buf) {
                self.requeue_served(i);
                let len = self.int.on_control_sent(slot, buf, len);
                return Some(self.count_tx(len));
            }
        }
        let mut i = 0;
        while let Some(&slot) = self.ready.get(i) {
            let Some(qp) = self.qps.get_mut(slot).and_then(Option::as_deref_mut) else {
                self.unready(i);
                continue;
            };
            // poll_data checks readiness itself (once). A QP the pacer holds comes back
            // unchanged (its deadline too): no recomputation at the refresh.
            if !qp.departure_held(now) {
                self.due.touch(slot);
            }
            let (local, mrs, cqs) = (&self.local, &mut self.mrs, &mut self.cqs);
            let sent = qp.poll_data(now, local, mrs, cqs, buf);
            // A data packet can fail the QP (its memory went away), completing work.
            self.cq_events.check_qp(qp, &self.cqs);
            if let Some(len) = sent {
                self.requeue_served(i);
                let len = self.int.on_data_sent(slot, buf, len);
                return Some(self.count_tx(len));
            }
            if qp.has_control() || qp.has_pending_data() {
                i += 1;
            } else {
                self.unready(i);
            }
        }
        None
    }

    fn emit_cnp(&self, local_qpn: u32, dest_qpn: u32, buf: &mut [u8]) -> Option<usize> {
        let qp = self.qp(local_qpn)?;
        let av = qp.address_vector()?;
        let src = match av.remote_ip {
            IpAddr::V4(_) => IpAddr::V4(self.cfg.ipv4?),
            IpAddr::V6(_) => IpAddr::V6(self.cfg.ipv6?),
        };
        let m = &self.cfg.marking;
        let eth = crate::wire::ethernet::Repr {
            dst: av.remote_mac,
            src: self.cfg.mac,
            vlan: m.vlan_tag(m.cnp_pcp),
            ethertype: crate::wire::EtherType::Ipv4,
        };
        let ip = crate::wire::IpRepr::new_roce(src, av.remote_ip, m.cnp_dscp, Ecn::NotEct);
        let repr = crate::wire::RoceRepr::cnp(eth, ip, qp.udp_src_port(), dest_qpn);
        repr.emit(&[], buf).ok()
    }

    /// Installs a congestion controller (with a pacer allowing `burst_bytes` of burst) on a QP.
    pub fn set_congestion_control(
        &mut self,
        qpn: u32,
        cc: crate::cc::Controller,
        burst_bytes: u64,
    ) -> Result<(), QpError> {
        let cc = CcPacer::new(cc, burst_bytes);
        self.with_qp(qpn, |qp, _, _| qp.set_congestion_control(Some(cc)))
    }

    /// Makes QP `qpn`'s data carry an INT shim with `max_hops` record slots (0: off) whose byte
    /// fields count in units of `units` (the controller's `CcConfig::int_units`, HPCC's
    /// `int_multi`), so INT switches on the path record themselves and the peer echoes the
    /// records on its ACKs to this QP's congestion controller (HPCC). Both ends must be roce
    /// endpoints: see [`crate::wire::int`] for the format.
    pub fn enable_int(&mut self, qpn: u32, max_hops: u8, units: u8) -> Result<(), QpError> {
        let slot = self.slot(qpn).filter(|_| self.qp(qpn).is_some());
        let slot = slot.ok_or(QpError::UnknownQp(qpn))?;
        self.int.enable(slot, max_hops, units);
        Ok(())
    }

    /// INT counters (shims sent, echoed, received).
    pub fn int_counters(&self) -> crate::qp::int::IntCounters {
        self.int.counters()
    }

    /// The state of QP `qpn`'s congestion controller (rate, target, alpha, counters), if one
    /// is installed.
    pub fn cc_metrics(&self, qpn: u32) -> Option<crate::cc::CcMetrics> {
        self.qp(qpn)?.cc_metrics()
    }

    /// Notification-point counters (CE-marked packets seen, CNPs queued).
    pub fn np_counters(&self) -> crate::ecn::NpCounters {
        self.np.counters()
    }

    /// This endpoint's port counters under the mlx5 / rxe names.
    pub fn rdma_counters(&self) -> crate::counters::RdmaCounters {
        crate::counters::RdmaCounters::of_port(&self.counters(), &self.np_counters())
    }

    fn count_tx(&mut self, len: usize) -> usize {
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += len as u64;
        len
    }

    /// The next instant `handle_timeout` (or a paced departure) is due.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.due.earliest(&self.qps)
    }
}

fn same_ip(a: IpAddr, b: IpAddr) -> bool {
    let v6 = |ip: IpAddr| match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    };
    v6(a) == v6(b)
}

impl crate::engine::Engine for Endpoint {
    fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        Endpoint::handle_frame(self, now, frame)
    }
    fn handle_timeout(&mut self, now: Instant) {
        Endpoint::handle_timeout(self, now)
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        Endpoint::poll_transmit(self, now, buf)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Endpoint::poll_timeout(self)
    }
}
