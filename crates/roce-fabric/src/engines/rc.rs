//! The RC engine: the real transport, an [`Endpoint`] with one connected QP per running flow,
//! kept busy by posting RDMA WRITEs (or SENDs) a few at a time. QPs live only while their flow
//! does (made when it starts, the sender's retired when it is done; see the `life` module).
//! Congestion control is the endpoint's own: a controller from [`roce_proto::cc`] installed
//! per QP with
//! `Endpoint::set_congestion_control` (its metrics read back with `Endpoint::cc_metrics`), fed
//! by the endpoint's CNP, ACK and loss handling; the endpoint's notification point answers
//! CE-marked requests with CNPs. Completions come from the endpoint's CQs, so retransmission
//! (go-back-N, timeouts) is the transport's own.
//!
//! Nothing here knows about the fabric beyond the [`Engine`] trait; it only posts work and reads
//! completions, as an application would. Ring members are gated on WRITE-with-immediate receives.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::net::IpAddr;

use roce_proto::cc::{CcConfig, CcMetrics, Rate};
use roce_proto::endpoint::{Endpoint, EndpointConfig};
use roce_proto::engine::Engine;
use roce_proto::time::{Duration, Instant};
use roce_proto::verbs::{
    self, AddressVector, CqHandle, Mtu, PdHandle, QpAttr, QpState, RecvWr, SendWr, Sge, Sgl,
    WcStatus, WrOpcode,
};
use roce_proto::wire::Ecn;

mod life;

use self::life::{Life, Peer, Pools, QpEnds};
pub use self::life::{QpLife, LINGER};
use super::{mac_of, FlowTransport, ReceivedBytes, Recovery};
use crate::flows::collective::MemberGate;
use crate::flows::workload::FlowConfig;
use crate::record::series::CcSample;

/// Work requests kept outstanding per flow.
const DEPTH: usize = 4;
/// INT record slots on the data of QPs whose controller uses INT: every switch of a path
/// through the fabric's deepest topologies (a three-tier or k-ary fat tree crosses ToR,
/// aggregation, core, aggregation, ToR), as the HPCC authors' ns-3 records up to 5 hops. A
/// deeper path's later switches find the shim full and are counted in the receiver's
/// `IntCounters::records_dropped`.
pub const INT_HOPS: u8 = 5;
/// Receives kept posted on a QP that consumes them (SEND or WRITE-with-immediate flows).
const RECV_DEPTH: u32 = 64;

#[derive(Debug)]
struct RcFlow {
    qpn: u32,
    /// The receiver's QPN (what the flow meter and the recorder call the flow).
    dst_qpn: u32,
    /// The QP's CQ once it is open (from the pool, to which it goes back at retirement).
    cq: Option<CqHandle>,
    /// Planned (number held), open, or retired.
    life: Life,
    /// The QP's recovery counters, kept when it was retired.
    kept: Recovery,
    lkey: u32,
    addr: u64,
    msg: u32,
    remote_addr: u64,
    rkey: u32,
    /// What to send (its MTU, DSCP and controller are the QP's by now).
    cfg: FlowConfig,
    posted: u64,
    completed: u64,
    in_flight: Window,
    /// Whether the flow has posted (or failed to post) work: it left `unstarted` then.
    started: bool,
    done_at: Option<Instant>,
    errors: u64,
    /// The first error completion that was not a flush (the cause; flushes follow it).
    first_error: Option<WcStatus>,
}

/// Bytes of the record that stands for one flow on its sender.
pub(crate) fn flow_record_bytes() -> usize {
    std::mem::size_of::<RcFlow>()
}

impl RcFlow {
    /// Whether the flow may still post or complete work: not every byte of a finite flow
    /// posted, acknowledged and noted.
    fn running(&self) -> bool {
        let total = self.cfg.total_bytes;
        !(total.is_some_and(|t| self.posted >= t)
            && self.in_flight.is_empty()
            && self.done_at.is_some())
    }
}

/// The lengths of a flow's outstanding work requests, oldest first: a ring inside the flow
/// rather than a `VecDeque` on the heap, so visiting a flow touches one allocation fewer.
#[derive(Debug, Default)]
struct Window {
    lens: [u32; DEPTH],
    head: usize,
    len: usize,
}

impl Window {
    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends a length. The one caller posts only below `DEPTH` outstanding (the QP's send
    /// queue is as deep, so it refuses a post beyond); a full window keeps what it has.
    fn push_back(&mut self, n: u32) {
        debug_assert!(self.len < DEPTH, "window full: a post past DEPTH");
        if self.len == DEPTH {
            return;
        }
        if let Some(slot) = self.lens.get_mut((self.head + self.len) % DEPTH) {
            *slot = n;
            self.len += 1;
        }
    }

    fn pop_front(&mut self) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let n = self.lens.get(self.head).copied();
        self.head = (self.head + 1) % DEPTH;
        self.len -= 1;
        n
    }
}

/// A QP on the receiving side that consumes receives.
#[derive(Debug)]
struct RxQp {
    qpn: u32,
    cq: CqHandle,
    sge: Sge,
    /// Bytes one receive stands for (a WRITE-with-immediate message).
    msg: u32,
    next_wr: u64,
    /// The collective in-slot its bytes count for.
    slot: Option<usize>,
}

/// How an RC host's QPs recover lost packets: every QP of the host, so both ends of a flow
/// agree when both hosts are set alike.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RcRecovery {
    /// Go-back-N (the default) or selective repeat, set on every QP at INIT -> RTR.
    pub mode: verbs::Recovery,
    /// Selective repeat: how long a packet a NAK showed missing may still be in flight before
    /// it is resent (the endpoint's `RequesterConfig::reorder_window`; zero resends at once).
    pub reorder_window: Duration,
}

/// A host whose engine is the RC [`Endpoint`].
#[derive(Debug)]
pub struct RcEngine {
    ep: Endpoint,
    ip: IpAddr,
    /// How its QPs recover lost packets (set on each as it is connected).
    recovery: verbs::Recovery,
    /// The one protection domain of the host's QPs and regions.
    pd: PdHandle,
    /// Pooled CQs, shared regions, receivers not made yet, flows closing.
    pools: Pools,
    flows: Vec<RcFlow>,
    /// Flows that may still post or complete work and whose start has come, in flow order:
    /// finished ones leave, so an event's work grows with the flows running, not with every
    /// flow the host ever had or will have.
    live: Vec<usize>,
    /// Flows of `live` the next drive visits whatever their CQs say (they can post without a
    /// completion: just started, or a post was refused). The others wait for an event on
    /// their CQ (`req_notify_cq`), so an event's work grows with the flows it concerns.
    again: Vec<usize>,
    /// The flows one drive visits (reused).
    visit: Vec<usize>,
    /// The flow whose CQ each of the endpoint's CQs is, by CQ index (`usize::MAX`: none).
    cq_flow: Vec<usize>,
    /// Flows whose start has not come yet (start, flow): they join `live` then.
    pending: BTreeSet<(Instant, usize)>,
    /// The earliest start in `pending` (read by every drive; the set's nodes are cold).
    next_pending: Option<Instant>,
    /// Flows that have posted nothing yet (start, flow): the earliest start wakes the host.
    unstarted: BTreeSet<(Instant, usize)>,
    /// The earliest start in `unstarted` (read by every `poll_timeout`).
    first_unstarted: Option<Instant>,
    rx_qps: Vec<RxQp>,
    /// Bytes that arrived in receives.
    received: ReceivedBytes,
    /// Every QP this host owns (senders and receivers), for the error count.
    qpns: Vec<u32>,
    /// The last time work was posted (a compute phase ending later is a timer).
    driven: Instant,
    /// `poll_timeout`'s answer since the last call that changed anything (a fabric asks
    /// before and after a host's transmit, often with nothing in between).
    deadline: Cell<Option<Option<Instant>>>,
}

/// Why two RC hosts could not be connected.
#[derive(Debug, thiserror::Error)]
pub enum RcSetupError {
    /// Only IPv4 hosts are set up here.
    #[error("rc hosts need IPv4 addresses, got {0}")]
    NotIpv4(IpAddr),
    /// The path MTU is not an IB MTU.
    #[error("mtu {0} is not one of 256, 512, 1024, 2048, 4096")]
    BadMtu(usize),
    /// The message size does not fit a work request.
    #[error("message size {0} is not in 1..=2^31")]
    BadMessage(u64),
    /// The transport refused a QP or MR operation.
    #[error("rc setup: {0}")]
    Qp(String),
}

impl RcEngine {
    /// A host at `ip` (IPv4) with no QPs. Its endpoint's notification point sends at most one
    /// CNP per QP per `cnp_interval`; `None` turns it off (CE marks are counted but answered
    /// with no CNP, as with a NIC's notification point disabled). Its QPs recover lost packets
    /// as `recovery` says.
    pub fn new(
        ip: IpAddr,
        cnp_interval: Option<Duration>,
        recovery: RcRecovery,
    ) -> Result<Self, RcSetupError> {
        let IpAddr::V4(v4) = ip else {
            return Err(RcSetupError::NotIpv4(ip));
        };
        let mut cfg = EndpointConfig::ipv4(mac_of(ip), v4);
        // Keys from the address, not the OS: a simulation repeats exactly.
        cfg.key_seed = Some(u64::from(u32::from(v4)));
        // The fabric drops every corrupted frame at the receiving port (an FCS error): a wrong
        // ICRC cannot arrive, so the endpoint does not hash each frame again to compare it.
        cfg.verify_icrc = false;
        // A flow's QP numbers are never given out again (they name its UDP source port, its
        // path): a host with many flows over a run numbers them up to the 24-bit QPN space, a
        // number costing a few bytes until its QP is made.
        cfg.max_qps = (1 << 24) - cfg.first_qpn as usize;
        match cnp_interval {
            Some(iv) => cfg.cnp_interval = iv,
            None => cfg.np_enabled = false,
        }
        cfg.requester.reorder_window = recovery.reorder_window;
        let mut ep = Endpoint::new(cfg);
        let pd = ep.alloc_pd();
        Ok(RcEngine {
            ep,
            ip,
            recovery: recovery.mode,
            pd,
            pools: Pools::default(),
            flows: Vec::new(),
            live: Vec::new(),
            again: Vec::new(),
            visit: Vec::new(),
            cq_flow: Vec::new(),
            pending: BTreeSet::new(),
            next_pending: None,
            unstarted: BTreeSet::new(),
            first_unstarted: None,
            rx_qps: Vec::new(),
            received: ReceivedBytes::default(),
            qpns: Vec::new(),
            driven: Instant::ZERO,
            deadline: Cell::new(None),
        })
    }

    /// Makes the host a collective member: its gated flows follow `gate`, which counts the
    /// bytes that arrive in receives on the collective's QPs.
    pub fn with_gate(mut self, gate: MemberGate) -> Self {
        self.received.gate = Some(gate);
        self
    }

    /// Plans a QP on `src` connected to one on `dst` (their numbers held now, the QPs made
    /// when the flow starts and its first packet arrives) and makes `src` send `flow` over it
    /// from then: RDMA WRITEs
    /// (SENDs with `flow.send`; WRITE-with-immediate when `flow.gate` gates it on what
    /// `src` receives) of `flow.message_bytes`, `flow.total_bytes` in all (forever when `None`),
    /// from `flow.start`, on DSCP `flow.dscp`, paced by `flow.cc` when given, else at
    /// `flow.rate_gbps` when given (`flow.dst_ip`, `qpn` and UDP port are the endpoint's). Returns the QPN on
    /// `dst` (what the fabric's flow meter follows) and the flow's index on `src`.
    pub fn connect(
        src: &mut RcEngine,
        dst: &mut RcEngine,
        flow: &FlowConfig,
    ) -> Result<(u32, usize), RcSetupError> {
        let qp_err = |e: &dyn std::fmt::Display| RcSetupError::Qp(e.to_string());
        let msg = u32::try_from(flow.message_bytes)
            .ok()
            .filter(|&m| m > 0 && m <= 1 << 31)
            .ok_or(RcSetupError::BadMessage(flow.message_bytes))?;
        let mtu = Mtu::from_bytes(flow.mtu as u32).ok_or(RcSetupError::BadMtu(flow.mtu))?;
        // Without a controller, a workload's `rate_gbps` paces the QP at that fixed rate.
        if let (true, Some(g)) = (flow.cc.is_none(), flow.rate_gbps) {
            CcConfig::new("none", Rate::from_bps_f64(g * 1e9)).map_err(|e| qp_err(&e))?;
        }
        // Numbers held now, in the order QPs were always made (the sender's, then the
        // receiver's): they name the flow (and its UDP source port, its ECMP path) as before,
        // while the QPs themselves are made when the flow starts.
        let a = src.ep.reserve_qpn().map_err(|e| qp_err(&e))?;
        let b = dst.ep.reserve_qpn().map_err(|e| qp_err(&e))?;
        src.qpns.push(a);
        dst.qpns.push(b);
        // Nobody reads a simulated flow's bytes: regions that keep none, one per host and
        // message size, shared by its flows.
        let local = src.region(msg).map_err(|e| qp_err(&e))?;
        let remote = dst.region(msg).map_err(|e| qp_err(&e))?;
        let ends = QpEnds {
            mtu,
            consumes: flow.send || flow.gate.is_some(),
            dscp: flow.dscp,
        };
        if ends.consumes {
            // A receiver that consumes receives is made now: its receives are posted ahead.
            let peer = Peer { qpn: a, ip: src.ip };
            let cq = dst.open_qp(b, peer, ends).map_err(|e| qp_err(&e))?;
            let mut rx = RxQp {
                qpn: b,
                cq,
                sge: Sge {
                    addr: remote.addr,
                    length: if flow.send { msg } else { 0 },
                    lkey: remote.lkey,
                },
                msg,
                next_wr: 0,
                slot: flow.gate.map(|g| g.inbound),
            };
            for _ in 0..RECV_DEPTH {
                post_recv(&mut dst.ep, &mut rx).map_err(|e| qp_err(&e))?;
            }
            dst.rx_qps.push(rx);
        } else {
            let last = life::last_psn(flow.total_bytes, msg, mtu);
            dst.plan_receiver(b, Peer { qpn: a, ip: src.ip }, ends, last);
        }
        src.flows.push(RcFlow {
            qpn: a,
            dst_qpn: b,
            cq: None,
            life: Life::Planned,
            kept: Recovery::default(),
            lkey: local.lkey,
            addr: local.addr,
            msg,
            remote_addr: remote.addr,
            rkey: remote.rkey,
            cfg: flow.clone(),
            posted: 0,
            completed: 0,
            in_flight: Window::default(),
            started: false,
            done_at: None,
            errors: 0,
            first_error: None,
        });
        let i = src.flows.len() - 1;
        if flow.total_bytes == Some(0) {
            // Done at the first drive, whenever it starts.
            src.live.push(i);
            src.again.push(i);
        } else {
            src.pending.insert((flow.start, i));
            src.unstarted.insert((flow.start, i));
            src.next_pending = src.pending.first().map(|&(t, _)| t);
            src.first_unstarted = src.unstarted.first().map(|&(t, _)| t);
        }
        Ok((b, i))
    }

    /// The endpoint (counters, QPs).
    pub fn endpoint(&self) -> &Endpoint {
        &self.ep
    }

    /// When flow `i` (on this sender) had every byte acknowledged, if it is finite and done.
    pub fn completed_at(&self, i: usize) -> Option<Instant> {
        self.flows.get(i)?.done_at
    }

    /// Bytes of flow `i` whose work requests completed successfully.
    pub fn completed_bytes(&self, i: usize) -> u64 {
        self.flows.get(i).map_or(0, |f| f.completed)
    }

    /// Work completions with an error status, over all flows.
    pub fn completion_errors(&self) -> u64 {
        self.flows.iter().map(|f| f.errors).sum()
    }

    /// What the transport says about flow `i`: why it failed, if it did, and its sender QP's
    /// retransmissions, NAKs and timeouts.
    pub fn flow_transport(&self, i: usize) -> FlowTransport {
        let Some(f) = self.flows.get(i) else {
            return FlowTransport::default();
        };
        let qp = self.ep.qp(f.qpn);
        // A QP not made yet (the flow never started) or retired (done) is in no error.
        let in_error = qp.is_some_and(|q| q.state() == QpState::Err)
            || (qp.is_none() && matches!(f.life, Life::Open | Life::Closing));
        let error = match (f.first_error, in_error) {
            (Some(status), true) => Some(format!("{status:?}, QP in the error state")),
            (Some(status), false) => Some(format!("{status:?}")),
            (None, true) => Some("QP in the error state".to_owned()),
            (None, false) if f.errors > 0 => Some("work request refused".to_owned()),
            (None, false) => None,
        };
        let recovery = match qp {
            Some(q) => {
                let c = q.counters();
                Recovery {
                    retransmitted: c.retransmitted_packets,
                    naks: c.naks_received(),
                    timeouts: c.local_ack_timeout_err,
                }
            }
            None => f.kept,
        };
        FlowTransport { error, recovery }
    }

    /// QPs of this host (senders and receivers) in the error state.
    pub fn qp_errors(&self) -> u64 {
        // QPs not made yet and retired ones are in no error.
        let failed = |&&qpn: &&u32| self.ep.qp(qpn).is_some_and(|q| q.state() == QpState::Err);
        self.qpns.iter().filter(failed).count() as u64
    }

    /// Congestion-control metrics of flow `i`'s QP, if it runs a controller.
    pub fn cc_metrics(&self, i: usize) -> Option<CcMetrics> {
        self.ep.cc_metrics(self.flows.get(i)?.qpn)
    }

    /// Congestion-control state of every sending flow with a controller (for the fabric's
    /// recorder): started and not finished, so that a run of thousands of flows, most of them
    /// idle at any time, keeps samples of the few that are not.
    pub fn cc_samples(&self, out: &mut Vec<CcSample>) {
        for (i, f) in self.flows.iter().enumerate() {
            if !(f.started && f.running()) {
                continue;
            }
            if let Some(m) = self.cc_metrics(i) {
                out.push(CcSample::of(f.dst_qpn, &m));
            }
        }
    }

    /// When each iteration of the host's collective (see [`RcEngine::with_gate`]) completed.
    pub fn marks(&self) -> &[Instant] {
        self.received.marks()
    }

    /// Reaps completions, reposts receives and posts work up to each flow's window.
    fn drive(&mut self, now: Instant) {
        for rx in &mut self.rx_qps {
            while let Some(wc) = self.ep.poll_cq_one(rx.cq) {
                if wc.qp_num != rx.qpn || wc.status != WcStatus::Success {
                    continue;
                }
                let got = if wc.byte_len > 0 { wc.byte_len } else { rx.msg };
                self.received.add(now, rx.slot, u64::from(got));
                // A refused repost leaves one receive fewer; the sender then sees RNR NAKs.
                let _ = post_recv(&mut self.ep, rx);
            }
        }
        self.driven = now;
        let mut visit = std::mem::take(&mut self.visit);
        visit.clear();
        visit.append(&mut self.again);
        let cq_flow = &self.cq_flow;
        visit.extend(self.ep.cq_events().filter_map(|cq| cq_flow.get(cq.index())));
        if self.next_pending.is_some_and(|t| t <= now) {
            while let Some(&(start, i)) = self.pending.first() {
                if start > now {
                    break;
                }
                self.pending.pop_first();
                let at = self.live.partition_point(|&j| j < i);
                self.live.insert(at, i);
                visit.push(i);
            }
            self.next_pending = self.pending.first().map(|&(t, _)| t);
        }
        let gate = self.received.gate.as_ref();
        if gate.is_none() && visit.is_empty() {
            // Nothing to visit (a frame that completed no work of this host's senders).
            self.visit = visit;
            return;
        }
        if gate.is_some() {
            // A collective's allowance grows with what arrives: every running flow may post.
            visit.clear();
            visit.extend_from_slice(&self.live);
        } else {
            // In flow order, as posts (and so the QPs' turns to send) have always come.
            visit.sort_unstable();
            visit.dedup();
            let live = &self.live;
            visit.retain(|i| live.binary_search(i).is_ok());
        }
        let (mut started, mut finished) = (false, false);
        for &i in &visit {
            if self.flows.get(i).is_some_and(|f| f.life == Life::Planned) {
                self.open_flow(i);
            }
            let gate = self.received.gate.as_ref();
            let Some(f) = self.flows.get_mut(i) else {
                continue;
            };
            if visit_flow(&mut self.ep, f, now, gate) {
                self.again.push(i);
            }
            if !f.started && (f.posted > 0 || f.errors > 0) {
                f.started = true;
                started = true;
                self.unstarted.remove(&(f.cfg.start, i));
            }
            if !f.running() {
                finished = true;
                if f.life == Life::Open && !self.try_retire(i) {
                    self.pools.closing.push(i);
                }
            }
        }
        self.visit = visit;
        if started {
            self.first_unstarted = self.unstarted.first().map(|&(t, _)| t);
        }
        if finished {
            let flows = &self.flows;
            let running = |i: &usize| flows.get(*i).is_some_and(RcFlow::running);
            self.live.retain(running);
        }
    }
}

/// One drive's work on flow `f`: reaps its completions, re-arms its CQ and posts up to its
/// window. Returns whether it could post more without a completion (the next drive must
/// visit it whatever its CQ says).
fn visit_flow(ep: &mut Endpoint, f: &mut RcFlow, now: Instant, gate: Option<&MemberGate>) -> bool {
    let cq = f.cq;
    while let Some(wc) = cq.and_then(|cq| ep.poll_cq_one(cq)) {
        if wc.qp_num != f.qpn {
            continue;
        }
        let len = f.in_flight.pop_front().unwrap_or(0);
        if wc.status == WcStatus::Success {
            f.completed += u64::from(len);
        } else {
            f.errors += 1;
            if f.first_error.is_none_or(|e| e == WcStatus::WrFlushErr) {
                f.first_error = Some(wc.status);
            }
        }
    }
    // Empty now: the next completion (from the posts below on) is an event.
    if let Some(cq) = cq {
        let _ = ep.req_notify_cq(cq);
    }
    if f.done_at.is_none() && f.cfg.total_bytes.is_some_and(|t| f.completed >= t) {
        f.done_at = Some(now);
    }
    let allowed = f.cfg.allowance(gate);
    if now < f.cfg.start || f.cfg.gate_start(gate).is_some_and(|t| now < t) {
        return f.in_flight.len() < DEPTH && f.posted < allowed;
    }
    while f.in_flight.len() < DEPTH && f.posted < allowed {
        let len = (allowed - f.posted).min(u64::from(f.msg)) as u32;
        let opcode = if f.cfg.send {
            WrOpcode::Send
        } else if f.cfg.gate.is_some() {
            WrOpcode::RdmaWriteWithImm {
                remote_addr: f.remote_addr,
                rkey: f.rkey,
                imm: f.posted as u32,
            }
        } else {
            WrOpcode::RdmaWrite {
                remote_addr: f.remote_addr,
                rkey: f.rkey,
            }
        };
        let sge = Sge {
            addr: f.addr,
            length: len,
            lkey: f.lkey,
        };
        if ep
            .post_send(f.qpn, SendWr::new(f.posted, opcode, sge))
            .is_err()
        {
            f.errors += 1;
            // Tried again at the next drive, as ever.
            return true;
        }
        f.posted += u64::from(len);
        f.in_flight.push_back(len);
    }
    false
}

/// Moves a connected QP's packets onto DSCP `dscp` with ECT(0) (RTS → SQD → RTS, as verbs
/// allow).
fn set_dscp(
    ep: &mut Endpoint,
    qpn: u32,
    remote_ip: IpAddr,
    dscp: u8,
) -> Result<(), roce_proto::qp::QpError> {
    let to = |state| QpAttr {
        state: Some(state),
        ..Default::default()
    };
    ep.modify_qp(qpn, &to(QpState::Sqd))?;
    ep.modify_qp(
        qpn,
        &QpAttr {
            av: Some(AddressVector {
                remote_ip,
                remote_mac: mac_of(remote_ip),
                // ECT(0) made explicit so DSCP 0 (a lossy class) is a traffic class of its own.
                traffic_class: ((dscp & 0x3f) << 2) | Ecn::Ect0.bits(),
                hop_limit: 64,
            }),
            ..Default::default()
        },
    )?;
    ep.modify_qp(qpn, &to(QpState::Rts))
}

fn post_recv(ep: &mut Endpoint, rx: &mut RxQp) -> Result<(), roce_proto::qp::QpError> {
    let mut sgl = Sgl::new();
    if rx.sge.length > 0 {
        sgl.push(rx.sge);
    }
    rx.next_wr += 1;
    ep.post_recv(
        rx.qpn,
        RecvWr {
            wr_id: rx.next_wr,
            sgl,
        },
    )
}

impl Engine for RcEngine {
    fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        self.deadline.set(None);
        let qpn = self.frame_qpn(frame);
        if let Some(q) = qpn {
            self.open_receiver(q);
        }
        self.ep.handle_frame(now, frame);
        if let Some(q) = qpn {
            self.note_received(now, q);
        }
        self.drive(now);
        self.retire_lingering(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.deadline.set(None);
        self.ep.handle_timeout(now);
        self.drive(now);
        self.retire_lingering(now);
        // A finished flow's QP goes idle when its last timer ran.
        self.retire_idle(now);
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.deadline.set(None);
        self.ep.poll_transmit(now, buf)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if let Some(known) = self.deadline.get() {
            return known;
        }
        let start = self.first_unstarted;
        // A compute phase that ends after the last drive: post the next iteration then (only
        // a collective member's flows are gated).
        let gate = self.received.gate.as_ref();
        let computed = gate.and_then(|_| {
            self.flows
                .iter()
                .filter_map(|f| f.cfg.gate_start(gate))
                .filter(|&t| t > self.driven)
                .min()
        });
        let t = self
            .ep
            .poll_timeout()
            .into_iter()
            .chain(start)
            .chain(computed)
            .min();
        self.deadline.set(Some(t));
        t
    }
}
