//! The progress thread's work, without the thread: commands in, the runtime loop over a port,
//! transport completions out to the application's CQs. Generic over the port and clock, so
//! the tests run two workers over an in-memory port pair.
//!
//! Every transport work request carries our own id (and is signaled), so a completion finds its
//! record: the application's id and whether it wanted a completion. Registered regions are the
//! application's own memory, lent to the transport (zero-copy): the transport reads and writes it
//! only for accesses that passed every check, so there is nothing to copy back and forth here.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use roce_dpdk::clock::Clock;
use roce_dpdk::runtime::{Runtime, RuntimeConfig};
use roce_proto::cc::CcConfig;
use roce_proto::counters::{QpCounters, RdmaCounters};
use roce_proto::port::Port;
use roce_proto::qp::QpError;
use roce_proto::resolving::{Modify, ResolutionEvent, ResolvingEndpoint};
use roce_proto::verbs::{
    AccessFlags, CqHandle, Mtu, QpAttr, QpInit, QpState, Recovery, RecvWr, SendFlags, SendWr, Sge,
    WcOpcode, WcStatus, WorkCompletion,
};
use roce_proto::wire::EthernetAddress;

use crate::command::Command;
use crate::error::VerbsError;
use crate::objects::{Completion, Cq, Qp, RecvRequest, SendRequest};

/// A send in the transport's queue.
#[derive(Debug)]
struct SendRecord {
    id: u64,
    wr_id: u64,
    signaled: bool,
}

/// A receive in the transport's queue.
#[derive(Debug)]
struct RecvRecord {
    id: u64,
    wr_id: u64,
}

/// A transport-owned region holding the bytes of inline sends, one slot per send-queue entry
/// (a slot is reused only after its send completed, as the queue depth guarantees).
#[derive(Debug)]
struct InlineSlots {
    lkey: u32,
    addr: u64,
    slot: usize,
    count: usize,
    next: usize,
}

#[derive(Debug)]
struct QpEntry {
    qp: Arc<Qp>,
    sends: VecDeque<SendRecord>,
    recvs: VecDeque<RecvRecord>,
    /// Sends posted while the peer's MAC is being resolved.
    held: VecDeque<SendRequest>,
    next_id: u64,
    inline: Option<InlineSlots>,
}

/// Any MAC, to validate an address vector whose MAC ARP has yet to find.
const PLACEHOLDER_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);

/// The progress thread's state.
pub(crate) struct Worker<P: Port, C: Clock + Clone> {
    runtime: Runtime<P, C>,
    clock: C,
    host: ResolvingEndpoint,
    qps: HashMap<u32, QpEntry>,
    cqs: Vec<(CqHandle, Arc<Cq>)>,
    cc: Option<CcConfig>,
    active_mtu: Mtu,
    /// Loss recovery of QPs whose program names none (`ROCE_VERBS_RECOVERY`).
    recovery: Recovery,
    /// Counters of destroyed QPs (programs destroy theirs before the exit report).
    retired: QpCounters,
}

impl<P: Port, C: Clock + Clone> Worker<P, C> {
    /// A worker driving `host` over `port`.
    pub(crate) fn new(
        port: P,
        clock: C,
        host: ResolvingEndpoint,
        cc: Option<CcConfig>,
        active_mtu: Mtu,
    ) -> Self {
        Worker {
            runtime: Runtime::new(port, clock.clone(), RuntimeConfig::default()),
            clock,
            host,
            qps: HashMap::new(),
            cqs: Vec::new(),
            cc,
            active_mtu,
            recovery: Recovery::GoBackN,
            retired: QpCounters::default(),
        }
    }

    /// Gives QPs `recovery` at RTR unless their program chose one (libibverbs has no such
    /// attribute: the configuration chooses for every QP of the process).
    pub(crate) fn with_recovery(mut self, recovery: Recovery) -> Self {
        self.recovery = recovery;
        self
    }

    /// One turn: frames in and out, timers, completions delivered, ARP results applied.
    /// Returns how much happened (0: idle).
    pub(crate) fn poll(&mut self) -> usize {
        let moved = self.runtime.poll_once(&mut self.host);
        let delivered = self.harvest();
        self.host_events();
        moved + delivered
    }

    /// Carries out one command.
    pub(crate) fn handle(&mut self, cmd: Command) {
        // A dropped reply channel means the caller gave up (it cannot, today); nothing to do.
        match cmd {
            Command::AllocPd(reply) => {
                let _ = reply.send(self.host.endpoint_mut().alloc_pd());
            }
            Command::RegMr {
                pd,
                mem,
                iova,
                access,
                reply,
            } => {
                let ep = self.host.endpoint_mut();
                let info = ep.reg_mr_lent(pd, iova, Box::new(mem), access);
                let _ = reply.send(info.map_err(VerbsError::from));
            }
            Command::DeregMr { lkey, reply } => {
                // The region (and with it the application memory) is gone before the answer.
                let r = self.host.endpoint_mut().dereg_mr(lkey);
                let _ = reply.send(r.map_err(VerbsError::from));
            }
            Command::CreateCq { cq, reply } => {
                let cap = cq.cqe as usize;
                let handle = self.host.endpoint_mut().create_cq(cap);
                self.cqs.push((handle, cq));
                let _ = reply.send(());
            }
            Command::DestroyCq { cq, reply } => {
                let used = self.qps.values().any(|e| {
                    Arc::ptr_eq(&e.qp.spec.send_cq, &cq) || Arc::ptr_eq(&e.qp.spec.recv_cq, &cq)
                });
                let r = if used {
                    Err(VerbsError::Busy("completion queue"))
                } else {
                    self.cqs.retain(|(_, c)| !Arc::ptr_eq(c, &cq));
                    Ok(())
                };
                let _ = reply.send(r);
            }
            Command::CreateQp { spec, reply } => {
                let _ = reply.send(self.create_qp(spec));
            }
            Command::ModifyQp { qp, attr, reply } => {
                let _ = reply.send(self.modify_qp(&qp, attr));
            }
            Command::DestroyQp { qpn, reply } => {
                self.destroy_qp(qpn);
                let _ = reply.send(());
            }
            Command::PostSend { qpn, wrs } => self.post_send(qpn, wrs),
            Command::PostRecv { qpn, wrs } => self.post_recv(qpn, wrs),
            Command::Counters(reply) => {
                let _ = reply.send(self.counters());
            }
            // The progress thread handles it before it gets here.
            Command::Finish(reply) => {
                let _ = reply.send(());
            }
        }
    }

    fn cq_handle(&self, cq: &Arc<Cq>) -> Option<CqHandle> {
        self.cqs
            .iter()
            .find(|(_, c)| Arc::ptr_eq(c, cq))
            .map(|(h, _)| *h)
    }

    fn create_qp(&mut self, spec: crate::objects::QpSpec) -> Result<Arc<Qp>, VerbsError> {
        let unknown = VerbsError::Unknown("completion queue");
        let send_cq = self.cq_handle(&spec.send_cq).ok_or(unknown)?;
        let recv_cq = self
            .cq_handle(&spec.recv_cq)
            .ok_or(VerbsError::Unknown("completion queue"))?;
        let caps = spec.caps;
        let ep = self.host.endpoint_mut();
        let qpn = ep.create_qp(QpInit {
            pd: spec.pd,
            send_cq,
            recv_cq,
            max_send_wr: caps.max_send_wr,
            max_recv_wr: caps.max_recv_wr,
        })?;
        if let Some(cc) = &self.cc {
            ep.set_congestion_control(qpn, cc.build(), 64 * 1024)?;
        }
        let inline = (caps.max_inline > 0).then(|| {
            let slot = caps.max_inline as usize;
            let count = caps.max_send_wr.max(1) as usize;
            let info = ep.reg_mr(spec.pd, slot * count, AccessFlags::LOCAL_WRITE);
            InlineSlots {
                lkey: info.lkey,
                addr: info.addr,
                slot,
                count,
                next: 0,
            }
        });
        let qp = Arc::new(Qp::new(qpn, spec));
        self.qps.insert(
            qpn,
            QpEntry {
                qp: qp.clone(),
                sends: VecDeque::new(),
                recvs: VecDeque::new(),
                held: VecDeque::new(),
                next_id: 1,
                inline,
            },
        );
        Ok(qp)
    }

    fn modify_qp(&mut self, qp: &Qp, mut attr: QpAttr) -> Result<(), VerbsError> {
        if attr.state == Some(QpState::Rtr) && attr.recovery.is_none() {
            attr.recovery = Some(self.recovery);
        }
        if let Some(mtu) = attr.path_mtu {
            if mtu.bytes() > self.active_mtu.bytes() {
                attr.path_mtu = Some(self.active_mtu);
            }
        }
        // Check now what the transport would refuse later, after ARP, with nobody to tell.
        let mut probe = attr;
        if let Some(av) = probe.av.as_mut() {
            av.remote_mac = PLACEHOLDER_MAC;
        }
        let to = roce_proto::qp::state::validate(qp.state(), &probe)?;
        let now = self.clock.now();
        let applied = self.host.modify_qp(now, qp.qpn, &attr)?;
        qp.set_state(to);
        if to == QpState::Reset {
            if let Some(e) = self.qps.get_mut(&qp.qpn) {
                e.sends.clear();
                e.recvs.clear();
                e.held.clear();
            }
            qp.reset_queues();
        }
        if applied == Modify::Applied {
            self.release_held(qp.qpn);
        }
        Ok(())
    }

    fn destroy_qp(&mut self, qpn: u32) {
        if let Some(q) = self.host.endpoint().qp(qpn) {
            self.retired.accumulate(q.counters());
        }
        // Through the resolving host: a connect still waiting for ARP dies with its QP.
        if let Err(e) = self.host.destroy_qp(qpn) {
            tracing::warn!(qpn, error = %e, "destroying a QP");
        }
        if let Some(slots) = self.qps.remove(&qpn).and_then(|e| e.inline) {
            let _ = self.host.endpoint_mut().dereg_mr(slots.lkey);
        }
    }

    fn post_send(&mut self, qpn: u32, wrs: Vec<SendRequest>) {
        let deferred = self.host.is_deferred(qpn);
        let Some(e) = self.qps.get_mut(&qpn) else {
            return;
        };
        if deferred || !e.held.is_empty() {
            e.held.extend(wrs);
            return;
        }
        for wr in wrs {
            self.submit_send(qpn, wr);
        }
    }

    /// Sends held for ARP go out once the QP is connected (or flush once it failed).
    fn release_held(&mut self, qpn: u32) {
        if self.host.is_deferred(qpn) {
            return;
        }
        let held = match self.qps.get_mut(&qpn) {
            Some(e) => std::mem::take(&mut e.held),
            None => return,
        };
        for wr in held {
            self.submit_send(qpn, wr);
        }
    }

    fn submit_send(&mut self, qpn: u32, req: SendRequest) {
        let Worker { qps, host, .. } = self;
        let Some(e) = qps.get_mut(&qpn) else {
            return;
        };
        let id = e.next_id;
        e.next_id += 1;
        let mut sgl = req.sgl.clone();
        if let Some(bytes) = &req.inline {
            let Some(slots) = e.inline.as_mut().filter(|s| bytes.len() <= s.slot) else {
                return fail_send(&e.qp, &req, WcStatus::LocLenErr);
            };
            let off = slots.next * slots.slot;
            slots.next = (slots.next + 1) % slots.count;
            let ep = host.endpoint_mut();
            if let Some(dst) = ep
                .mr_mut(slots.lkey)
                .and_then(|m| m.bytes_mut().get_mut(off..off + bytes.len()))
            {
                dst.copy_from_slice(bytes);
            }
            sgl.clear();
            if !bytes.is_empty() {
                sgl.push(Sge {
                    addr: slots.addr + off as u64,
                    length: bytes.len() as u32,
                    lkey: slots.lkey,
                });
            }
        }
        let wr = SendWr {
            wr_id: id,
            opcode: req.opcode,
            sgl,
            flags: req.flags | SendFlags::SIGNALED,
        };
        match host.endpoint_mut().post_send(qpn, wr) {
            Ok(()) => e.sends.push_back(SendRecord {
                id,
                wr_id: req.wr_id,
                signaled: req.signaled,
            }),
            Err(err) => {
                tracing::debug!(qpn, error = %err, "post_send refused by the transport");
                fail_send(&e.qp, &req, status_of(&err));
            }
        }
    }

    fn post_recv(&mut self, qpn: u32, wrs: Vec<RecvRequest>) {
        let Worker { qps, host, .. } = self;
        let Some(e) = qps.get_mut(&qpn) else {
            return;
        };
        for req in wrs {
            let id = e.next_id;
            e.next_id += 1;
            let wr = RecvWr {
                wr_id: id,
                sgl: req.sgl.clone(),
            };
            match host.endpoint_mut().post_recv(qpn, wr) {
                Ok(()) => e.recvs.push_back(RecvRecord {
                    id,
                    wr_id: req.wr_id,
                }),
                Err(err) => {
                    tracing::debug!(qpn, error = %err, "post_recv refused by the transport");
                    e.qp.recv_done();
                    e.qp.spec.recv_cq.push(Completion {
                        wr_id: req.wr_id,
                        status: status_of(&err),
                        opcode: WcOpcode::Recv,
                        byte_len: 0,
                        imm: None,
                        qp_num: qpn,
                        src_qp: 0,
                    });
                }
            }
        }
    }

    /// Moves transport completions to the application's CQs; returns how many.
    fn harvest(&mut self) -> usize {
        let mut n = 0;
        for i in 0..self.cqs.len() {
            let Some(&(handle, _)) = self.cqs.get(i) else {
                break;
            };
            while let Some(wc) = self.host.endpoint_mut().poll_cq_one(handle) {
                self.deliver(wc);
                n += 1;
            }
        }
        n
    }

    fn deliver(&mut self, wc: WorkCompletion) {
        let Worker { qps, host, .. } = self;
        let Some(e) = qps.get_mut(&wc.qp_num) else {
            return;
        };
        let ep = host.endpoint();
        let (src_qp, transport_state) = ep
            .qp(wc.qp_num)
            .map_or((0, QpState::Err), |q| (q.dest_qpn(), q.state()));
        let mut done = Completion {
            wr_id: 0,
            status: wc.status,
            opcode: wc.opcode,
            byte_len: wc.byte_len,
            imm: wc.imm_data,
            qp_num: wc.qp_num,
            src_qp: 0,
        };
        if matches!(wc.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm) {
            let Some(r) = e.recvs.pop_front() else {
                tracing::error!(qpn = wc.qp_num, "a receive completion without a receive");
                return;
            };
            if r.id != wc.wr_id {
                tracing::error!(qpn = wc.qp_num, "receive completions out of order");
            }
            e.qp.recv_done();
            done.wr_id = r.wr_id;
            done.src_qp = src_qp;
            e.qp.spec.recv_cq.push(done);
        } else {
            let Some(s) = e.sends.pop_front() else {
                tracing::error!(qpn = wc.qp_num, "a send completion without a send");
                return;
            };
            if s.id != wc.wr_id {
                tracing::error!(qpn = wc.qp_num, "send completions out of order");
            }
            e.qp.send_done();
            if s.signaled || wc.status != WcStatus::Success {
                done.wr_id = s.wr_id;
                e.qp.spec.send_cq.push(done);
            }
        }
        if wc.status != WcStatus::Success && transport_state == QpState::Err {
            e.qp.set_state(QpState::Err);
        }
    }

    fn host_events(&mut self) {
        while let Some(ev) = self.host.poll_event() {
            match ev {
                ResolutionEvent::QpResolved { qpn, .. } => self.release_held(qpn),
                ResolutionEvent::QpUnreachable { qpn, ip } => {
                    tracing::warn!(qpn, %ip, "the peer does not answer ARP/NDP: QP in error");
                    if let Some(e) = self.qps.get(&qpn) {
                        e.qp.set_state(QpState::Err);
                    }
                    self.release_held(qpn);
                }
            }
        }
    }

    /// The port's counters (mlx5 / rxe names) and the loop's.
    pub(crate) fn counters(&self) -> Vec<(&'static str, u64)> {
        let host = &self.host;
        let ep = host.endpoint();
        let mut port = ep.counters();
        port.qp.accumulate(&self.retired);
        let mut out = RdmaCounters::of_port(&port, &ep.np_counters()).pairs();
        let h = host.counters();
        let r = self.runtime.counters();
        out.extend([
            ("arp_rx", h.arp_rx),
            ("arp_tx_requests", h.arp_tx_requests),
            ("arp_tx_replies", h.arp_tx_replies),
            ("looped_back", h.looped_back),
            ("port_rx_packets", r.rx_packets),
            ("port_tx_packets", r.tx_packets),
            ("port_tx_drops", r.tx_drops),
        ]);
        out
    }

    /// QPs alive.
    #[cfg(test)]
    pub(crate) fn qp_count(&self) -> usize {
        self.qps.len()
    }
}

/// Completes a send the transport never queued.
fn fail_send(qp: &Qp, req: &SendRequest, status: WcStatus) {
    qp.send_done();
    qp.spec.send_cq.push(Completion {
        wr_id: req.wr_id,
        status,
        opcode: req.opcode.wc_opcode(),
        byte_len: 0,
        imm: None,
        qp_num: qp.qpn,
        src_qp: 0,
    });
}

fn status_of(e: &QpError) -> WcStatus {
    match e {
        QpError::InvalidWorkRequest(_) => WcStatus::LocProtErr,
        _ => WcStatus::LocQpOpErr,
    }
}

#[cfg(test)]
mod tests;
