//! An RC queue pair: the facade over `requester`, `responder`, `completer`, the state
//! machine ([`state`]), the timers ([`timer`]) and its congestion control ([`paced`]), with packet
//! emission into caller buffers (`transmit`).
//!
//! A QP owns no memory and no completion queue: the [`crate::endpoint::Endpoint`] lends it the
//! memory-region table and the CQs for each call. Sans-IO: time is always an argument.

pub(crate) mod completer;
pub(crate) mod due;
pub mod int;
pub(crate) mod notify;
pub mod paced;
pub(crate) mod requester;
pub(crate) mod responder;
pub mod rtt;
pub mod state;
pub mod timer;
mod transmit;

use crate::counters::QpCounters;
use crate::mr::{MrTable, PdHandle};
use crate::psn::Psn;
use crate::time::Instant;
use crate::verbs::{
    sgl_len, AccessFlags, AddressVector, CompletionQueue, CqHandle, Mtu, QpAttr, QpInit, QpState,
    Recovery, RecvWr, SendWr, WcOpcode, WcStatus, WorkCompletion,
};
use crate::wire::opcode::Opcode;
use crate::wire::{Ecn, RoceView};

use completer::CompleterCtx;
use paced::CcPacer;
use requester::Requester;
pub use requester::RequesterConfig;
pub use responder::MAX_QUEUED_RESPONSES;
use responder::{Responder, ResponderCtx};
pub use state::QpError;
use timer::{Timer, TimerTable};
pub use transmit::LocalAddr;
use transmit::Templates;
pub(crate) use transmit::{Outgoing, Payload};

/// Attributes in force.
#[derive(Clone, Copy, Debug)]
struct Attrs {
    path_mtu: Mtu,
    dest_qpn: u32,
    av: Option<AddressVector>,
    timeout: u8,
    retry_cnt: u8,
    rnr_retry: u8,
    min_rnr_timer: u8,
    max_rd_atomic: u8,
    max_dest_rd_atomic: u8,
    access: AccessFlags,
    recovery: Recovery,
}

/// A reliable-connection queue pair.
#[derive(Debug)]
pub struct QueuePair {
    qpn: u32,
    pd: PdHandle,
    send_cq: CqHandle,
    recv_cq: CqHandle,
    state: QpState,
    attrs: Attrs,
    req: Requester,
    resp: Responder,
    timers: TimerTable,
    stats: QpCounters,
    udp_src_port: u16,
    cfg: RequesterConfig,
    next_departure: Instant,
    /// The congestion controller and its pacer, when one is installed.
    cc: Option<CcPacer>,
    /// Header templates for the current path (rebuilt when it changes).
    templates: Option<Box<Templates>>,
    rtt: rtt::RttSampler,
}

fn cq(cqs: &mut [CompletionQueue], h: CqHandle) -> Option<&mut CompletionQueue> {
    cqs.get_mut(h.0 as usize)
}

/// Completes every work request of `wrs` as flushed; returns how many.
fn flush(
    mut cq: Option<&mut CompletionQueue>,
    qp_num: u32,
    wrs: impl Iterator<Item = (u64, WcOpcode)>,
) -> u64 {
    let mut n = 0;
    for (wr_id, opcode) in wrs {
        n += 1;
        if let Some(cq) = cq.as_deref_mut() {
            cq.push(WorkCompletion {
                wr_id,
                status: WcStatus::WrFlushErr,
                opcode,
                byte_len: 0,
                imm_data: None,
                invalidated_rkey: None,
                qp_num,
            });
        }
    }
    n
}

impl QueuePair {
    /// A QP in RESET.
    pub fn new(qpn: u32, init: &QpInit, udp_src_port: u16, cfg: RequesterConfig) -> Self {
        QueuePair {
            qpn,
            pd: init.pd,
            send_cq: init.send_cq,
            recv_cq: init.recv_cq,
            state: QpState::Reset,
            attrs: Attrs {
                path_mtu: Mtu::Mtu1024,
                dest_qpn: 0,
                av: None,
                timeout: 14,
                retry_cnt: 7,
                rnr_retry: 7,
                min_rnr_timer: 12,
                max_rd_atomic: 1,
                max_dest_rd_atomic: 1,
                access: AccessFlags::empty(),
                recovery: Recovery::GoBackN,
            },
            req: Requester::new(init.max_send_wr as usize),
            resp: Responder::new(init.max_recv_wr as usize),
            timers: TimerTable::default(),
            stats: QpCounters::default(),
            udp_src_port,
            cfg,
            next_departure: Instant::ZERO,
            cc: None,
            templates: None,
            rtt: rtt::RttSampler::default(),
        }
    }

    /// QP number.
    pub fn qpn(&self) -> u32 {
        self.qpn
    }
    /// Current state.
    pub fn state(&self) -> QpState {
        self.state
    }
    /// Counters.
    pub fn counters(&self) -> &QpCounters {
        &self.stats
    }
    /// The send and receive completion queues.
    pub fn cqs(&self) -> (CqHandle, CqHandle) {
        (self.send_cq, self.recv_cq)
    }
    /// UDP source port of this QP's packets.
    pub fn udp_src_port(&self) -> u16 {
        self.udp_src_port
    }
    /// The peer's QP number.
    pub fn dest_qpn(&self) -> u32 {
        self.attrs.dest_qpn
    }
    /// The peer's address, once in RTR.
    pub fn address_vector(&self) -> Option<AddressVector> {
        self.attrs.av
    }
    /// The next PSN a new send work request will use.
    pub fn sq_psn(&self) -> Psn {
        self.req.next_post_psn
    }
    /// The PSN the responder expects next.
    pub fn expected_psn(&self) -> Psn {
        self.resp.epsn
    }
    /// Send work requests not yet completed.
    pub fn send_queue_len(&self) -> usize {
        self.req.sq.len()
    }
    /// Receive work requests posted and not yet consumed.
    pub fn recv_queue_len(&self) -> usize {
        self.resp.rq.len()
    }
    /// Entries the QP's queues (send and receive work requests, queued responses, atomic
    /// replays, RTT stamps) have room for without allocating: none until they are used, then
    /// what their use needed, each within its bound. A fabric holds many idle QPs.
    pub fn queue_capacity(&self) -> usize {
        self.req.sq.capacity()
            + self.resp.rq.capacity()
            + self.resp.out.capacity()
            + self.resp.atomic_replay_capacity()
            + self.rtt.capacity()
    }
    /// Installs (or removes) the congestion controller whose pacer decides the earliest
    /// departure times of data packets.
    pub fn set_congestion_control(&mut self, mut cc: Option<CcPacer>) {
        if let Some(p) = cc.as_mut() {
            p.on_path_mtu(self.attrs.path_mtu.bytes());
        }
        self.cc = cc;
    }
    /// Sets the earliest time the next data packet may leave.
    pub fn set_next_departure(&mut self, at: Instant) {
        self.next_departure = at;
    }

    /// Whether the pacer holds the next data packet past `now` ([`QueuePair::poll_data`]
    /// then returns at once, changing nothing).
    #[inline]
    pub(crate) fn departure_held(&self, now: Instant) -> bool {
        self.next_departure > now
    }

    /// `modify_qp`: validates the transition and attributes, then applies them.
    pub fn modify(&mut self, attr: &QpAttr, cqs: &mut [CompletionQueue]) -> Result<(), QpError> {
        let to = state::validate(self.state, attr)?;
        self.templates = None;
        // An attribute not given keeps its value.
        let a = &mut self.attrs;
        a.path_mtu = attr.path_mtu.unwrap_or(a.path_mtu);
        if let (Some(mtu), Some(p)) = (attr.path_mtu, self.cc.as_mut()) {
            p.on_path_mtu(mtu.bytes());
        }
        a.dest_qpn = attr.dest_qp_num.unwrap_or(a.dest_qpn);
        a.av = attr.av.or(a.av);
        a.timeout = attr.timeout.unwrap_or(a.timeout);
        a.retry_cnt = attr.retry_cnt.unwrap_or(a.retry_cnt);
        a.rnr_retry = attr.rnr_retry.unwrap_or(a.rnr_retry);
        a.min_rnr_timer = attr.min_rnr_timer.unwrap_or(a.min_rnr_timer);
        a.max_rd_atomic = attr.max_rd_atomic.unwrap_or(a.max_rd_atomic);
        a.max_dest_rd_atomic = attr.max_dest_rd_atomic.unwrap_or(a.max_dest_rd_atomic);
        a.access = attr.access_flags.unwrap_or(a.access);
        a.recovery = attr.recovery.unwrap_or(a.recovery);
        if let Some(psn) = attr.rq_psn {
            self.resp.epsn = psn;
        }
        if let Some(psn) = attr.sq_psn {
            self.req.set_sq_psn(psn);
        }
        let from = self.state;
        self.state = to;
        match to {
            QpState::Rtr
                if from == QpState::Init && self.attrs.recovery == Recovery::SelectiveRepeat =>
            {
                self.resp.enable_selective_repeat();
            }
            QpState::Rts if from == QpState::Rtr => {
                if self.attrs.recovery == Recovery::SelectiveRepeat {
                    self.req.enable_selective_repeat();
                }
                self.req.retry_left = self.attrs.retry_cnt;
                self.req.rnr_retry_left = self.attrs.rnr_retry;
            }
            QpState::Err if from != QpState::Err => self.enter_error(cqs),
            QpState::Reset => {
                let (sq, rq) = (self.req.max_send_wr, self.resp.max_recv_wr);
                self.req = Requester::new(sq);
                self.resp = Responder::new(rq);
                self.timers.stop_all();
                self.rtt = rtt::RttSampler::default();
            }
            _ => {}
        }
        Ok(())
    }

    fn enter_error(&mut self, cqs: &mut [CompletionQueue]) {
        self.state = QpState::Err;
        self.timers.stop_all();
        let in_progress = self.resp.abort();
        self.req.cursor = 0;
        self.req.cursor_pkt = 0;
        let qpn = self.qpn;
        let sends = self
            .req
            .sq
            .drain(..)
            .map(|w| (w.wr.wr_id, w.wr.opcode.wc_opcode()));
        let mut flushed = flush(cq(cqs, self.send_cq), qpn, sends);
        let recvs = in_progress
            .into_iter()
            .chain(self.resp.rq.drain(..))
            .map(|w| (w.wr_id, WcOpcode::Recv));
        flushed += flush(cq(cqs, self.recv_cq), qpn, recvs);
        self.stats.error_completions += flushed;
        tracing::debug!(qpn, "QP entered the error state");
    }

    /// Completes the head send WQE with `status`, then moves to ERR and flushes the rest.
    fn fail(
        &mut self,
        status: WcStatus,
        now: Instant,
        mrs: &mut MrTable,
        cqs: &mut [CompletionQueue],
    ) {
        // Set first so the step below reports nothing more than the head.
        self.state = QpState::Err;
        self.completer_step(now, mrs, cqs, |q, c| {
            q.complete_head(status, c);
            Ok(())
        });
        self.enter_error(cqs);
    }

    /// Runs a completer step and turns a fatal outcome into an error completion and ERR.
    fn completer_step(
        &mut self,
        now: Instant,
        mrs: &mut MrTable,
        cqs: &mut [CompletionQueue],
        step: impl FnOnce(&mut Requester, &mut CompleterCtx<'_>) -> Result<(), WcStatus>,
    ) {
        let Some(cq) = cqs.get_mut(self.send_cq.0 as usize) else {
            return;
        };
        let mut c = CompleterCtx {
            now,
            qpn: self.qpn,
            pd: self.pd,
            mtu: self.attrs.path_mtu.bytes(),
            mrs,
            cq,
            stats: &mut self.stats,
            timers: &mut self.timers,
            ack_timeout: timer::ack_timeout(self.attrs.timeout),
            retry_cnt: self.attrs.retry_cnt,
            rnr_retry: self.attrs.rnr_retry,
            reorder_window: self.cfg.reorder_window,
        };
        let mut result = step(&mut self.req, &mut c);
        if self.state == QpState::Err {
            return;
        }
        if result.is_ok() {
            result = self.req.run_local_ops(&mut c);
        }
        let fatal = result.err().or_else(|| self.req.head_local_error());
        if let Some(status) = fatal {
            self.fail(status, now, mrs, cqs);
        }
    }

    /// `post_send`: queues a send work request (RTS or SQD; in ERR it completes as flushed).
    pub fn post_send(
        &mut self,
        wr: SendWr,
        mrs: &mut MrTable,
        cqs: &mut [CompletionQueue],
    ) -> Result<(), QpError> {
        if !matches!(
            self.state,
            QpState::Rts | QpState::Sqd | QpState::Err | QpState::Sqe
        ) {
            return Err(QpError::InvalidState(self.state));
        }
        if self.req.sq.len() >= self.req.max_send_wr {
            return Err(QpError::QueueFull);
        }
        let len = sgl_len(&wr.sgl);
        if wr.opcode.is_atomic() && len != 8 {
            return Err(QpError::InvalidWorkRequest(
                "atomic needs one 8-byte local buffer",
            ));
        }
        if len > 1 << 31 {
            return Err(QpError::InvalidWorkRequest("message longer than 2 GiB"));
        }
        let need = if wr.opcode.is_read_or_atomic() {
            AccessFlags::LOCAL_WRITE
        } else {
            AccessFlags::empty()
        };
        let local = wr.opcode.is_local();
        let local_error = mrs
            .check_sgl(self.pd, &wr.sgl, need)
            .err()
            .filter(|_| !local)
            .map(|_| WcStatus::LocProtErr);
        self.req
            .push(wr, len, self.attrs.path_mtu.bytes(), local_error);
        if matches!(self.state, QpState::Err | QpState::Sqe) {
            self.enter_error(cqs);
        } else if self.req.sq.len() == 1 && local_error.is_some() {
            self.fail(WcStatus::LocProtErr, Instant::ZERO, mrs, cqs);
        } else if self.req.sq.len() == 1 && local {
            // Nothing before it: a local operation runs now.
            self.completer_step(Instant::ZERO, mrs, cqs, |_, _| Ok(()));
        }
        Ok(())
    }

    /// `post_recv`: queues a receive (any state but RESET; in ERR it completes as flushed).
    pub fn post_recv(
        &mut self,
        wr: RecvWr,
        mrs: &MrTable,
        cqs: &mut [CompletionQueue],
    ) -> Result<(), QpError> {
        if self.state == QpState::Reset {
            return Err(QpError::InvalidState(self.state));
        }
        if self.resp.rq.len() >= self.resp.max_recv_wr {
            return Err(QpError::QueueFull);
        }
        mrs.check_sgl(self.pd, &wr.sgl, AccessFlags::LOCAL_WRITE)
            .map_err(|_| {
                QpError::InvalidWorkRequest(
                    "receive SGE fails its lkey, bounds or LOCAL_WRITE check",
                )
            })?;
        self.resp.rq.push_back(wr);
        if self.state == QpState::Err {
            self.enter_error(cqs);
        }
        Ok(())
    }

    /// A checked packet addressed to this QP (the endpoint has checked its headers, ICRC,
    /// destination, P_Key and source). Returns `false` when the QP's state refused it.
    pub fn handle_packet(
        &mut self,
        now: Instant,
        pkt: &RoceView<'_>,
        frame_len: usize,
        mrs: &mut MrTable,
        cqs: &mut [CompletionQueue],
    ) -> bool {
        let op = pkt.bth.opcode;
        if pkt.ecn == Ecn::Ce {
            self.stats.ecn_ce_received += 1;
        }
        if op.is_request() {
            if !matches!(
                self.state,
                QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
            ) {
                return false;
            }
            self.count_rx(frame_len);
            let Some(cq) = cqs.get_mut(self.recv_cq.0 as usize) else {
                return false;
            };
            let mut c = ResponderCtx {
                qpn: self.qpn,
                pd: self.pd,
                access: self.attrs.access,
                mtu: self.attrs.path_mtu.bytes(),
                min_rnr_timer: self.attrs.min_rnr_timer,
                max_dest_rd_atomic: self.attrs.max_dest_rd_atomic,
                mrs,
                cq,
                stats: &mut self.stats,
            };
            if self.resp.handle_request(pkt, &mut c).is_err() {
                self.enter_error(cqs);
            }
            return true;
        }
        if !matches!(self.state, QpState::Rts | QpState::Sqd) {
            return false;
        }
        self.count_rx(frame_len);
        let psn = pkt.bth.psn;
        let aeth = pkt.aeth();
        let payload = pkt.payload();
        let losses = self.loss_count();
        let covered = match aeth.map(|a| a.syndrome) {
            Some(crate::wire::aeth::Syndrome::Ack { .. }) | None => psn,
            Some(_) => psn.sub(1),
        };
        if op == Opcode::RC_ACKNOWLEDGE {
            if let Some(a) = aeth {
                self.completer_step(now, mrs, cqs, |q, c| q.on_ack(psn, a.syndrome, a.msn, c));
            }
            self.feed_cc(now, Some(covered), losses);
        } else if op.is_read_response() {
            self.completer_step(now, mrs, cqs, |q, c| {
                q.on_read_response(op, psn, payload, c)
            });
            self.feed_cc(now, Some(covered), losses);
        } else if op == Opcode::RC_ATOMIC_ACKNOWLEDGE {
            if let Some(a) = pkt.atomic_ack_eth() {
                self.completer_step(now, mrs, cqs, |q, c| q.on_atomic_ack(psn, a.orig, c));
            }
            self.feed_cc(now, Some(covered), losses);
        } else {
            self.stats.rx_dropped += 1;
        }
        true
    }

    fn count_rx(&mut self, frame_len: usize) {
        self.stats.rx_packets += 1;
        self.stats.rx_bytes += frame_len as u64;
    }

    /// A CNP arrived for this QP (the reaction point's congestion control reacts to it).
    /// Returns `false`, doing nothing, unless the QP is sending (RTS or SQD).
    pub fn note_cnp(&mut self, now: Instant) -> bool {
        if !matches!(self.state, QpState::Rts | QpState::Sqd) {
            return false;
        }
        self.stats.rp_cnp_handled += 1;
        if let Some(p) = self.cc.as_mut() {
            p.on_cnp(now);
        }
        self.refresh_departure(now);
        true
    }

    /// A packet held by the pacer leaves when the rate as it is now allows, not when the rate
    /// it was charged at would have (a collapsed rate must not hold it after recovery).
    fn refresh_departure(&mut self, now: Instant) {
        if self.next_departure <= now {
            return;
        }
        if let Some(p) = self.cc.as_ref() {
            let next = p.departure(now);
            self.next_departure = if next > now { next } else { Instant::ZERO };
        }
    }

    /// Whether a timer (the QP's or its controller's) is due at `now`, or a held departure
    /// waits to be moved to the current rate: [`Self::handle_timeout`] has something to do.
    /// When not, it would change nothing (a departure that has come is `poll_data`'s).
    pub(crate) fn timer_due(&self, now: Instant) -> bool {
        self.departure_held(now)
            || self.timers.next_timeout().is_some_and(|t| t <= now)
            || self
                .cc
                .as_ref()
                .is_some_and(|p| p.poll_timeout().is_some_and(|t| t <= now))
    }

    /// Runs expired timers.
    pub fn handle_timeout(&mut self, now: Instant, mrs: &mut MrTable, cqs: &mut [CompletionQueue]) {
        if let Some(p) = self.cc.as_mut() {
            if p.poll_timeout().is_some_and(|t| t <= now) {
                p.handle_timeout(now);
            }
        }
        self.refresh_departure(now);
        if self.timers.take_expired(Timer::RnrRetry, now) {
            self.completer_step(now, mrs, cqs, |q, c| {
                q.on_rnr_timer(c);
                Ok(())
            });
        }
        if self.timers.take_expired(Timer::ReorderWindow, now) {
            let window = self.cfg.reorder_window;
            self.req.on_reorder_window(now, window, &mut self.timers);
        }
        if self.timers.take_expired(Timer::AckTimeout, now) {
            let losses = self.loss_count();
            self.completer_step(now, mrs, cqs, |q, c| q.on_ack_timeout(c));
            self.feed_cc(now, None, losses);
        }
    }

    /// Losses detected so far (go-back-N's NAK sequence errors, selective repeat's recoveries,
    /// ACK timeouts).
    fn loss_count(&self) -> u64 {
        self.stats.packet_seq_err + self.req.losses + self.stats.local_ack_timeout_err
    }

    /// Feeds the congestion controller after a response or timeout: an RTT sample when a
    /// response covering `covered` retired a timed request, then a loss when this event detected
    /// one (the loss count moved from `losses_before`).
    fn feed_cc(&mut self, now: Instant, covered: Option<Psn>, losses_before: u64) {
        let Some(p) = self.cc.as_mut() else {
            return;
        };
        if let Some(s) = covered.and_then(|psn| self.rtt.on_response(now, psn)) {
            p.on_ack(now, s.acked_bytes, Some(s.rtt));
        }
        if self.stats.packet_seq_err + self.req.losses + self.stats.local_ack_timeout_err
            != losses_before
        {
            self.rtt.on_loss();
            p.on_loss(now);
        }
        self.refresh_departure(now);
    }

    /// Whether the pacer's rate lets fewer than `ack_req_interval` packets of `mtu` bytes leave
    /// in a quarter of the ACK timeout (then every packet asks for its ACK, so packets that left
    /// are acknowledged before the timer runs out while later ones wait on the pacer).
    fn pacer_is_slow(&self, mtu: u32) -> bool {
        let (Some(p), Some(timeout)) = (self.cc.as_ref(), timer::ack_timeout(self.attrs.timeout))
        else {
            return false;
        };
        let bits = f64::from(mtu) * 8.0 * f64::from(self.cfg.ack_req_interval);
        bits / p.metrics().rate.as_bps_f64().max(1.0) > timeout.as_secs_f64() / 4.0
    }

    /// The state of this QP's congestion controller, if one is installed.
    pub fn cc_metrics(&self) -> Option<crate::cc::CcMetrics> {
        Some(self.cc.as_ref()?.metrics())
    }

    /// In-band telemetry the peer echoed for this QP (on a response already handled): handed
    /// to the congestion controller with where the response left the sequence.
    pub fn note_int(&mut self, now: Instant, hops: &[crate::cc::IntHop]) {
        let ack = crate::cc::IntAck {
            acked: self.req.una,
            next: self.req.high_psn,
        };
        if let Some(p) = self.cc.as_mut() {
            p.on_int(now, hops, ack);
        }
        self.refresh_departure(now);
    }

    /// The earliest timer deadline, and the pacer's departure time when data is waiting on it.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let cc = self.cc.as_ref().and_then(|p| p.poll_timeout());
        let t = match (self.timers.next_timeout(), cc) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // The departure word first: a QP without a held departure (every responder) skips
        // the send queue's cold lines.
        if self.next_departure > Instant::ZERO && self.has_unpaced_data() {
            return Some(t.map_or(self.next_departure, |t| t.min(self.next_departure)));
        }
        t
    }

    /// An ACK/NAK/atomic ACK is waiting (sent before any data, unpaced).
    pub fn has_control(&self) -> bool {
        !matches!(self.state, QpState::Reset | QpState::Init) && self.resp.has_control()
    }

    fn has_unpaced_data(&self) -> bool {
        if matches!(self.state, QpState::Reset | QpState::Init | QpState::Err) {
            return false;
        }
        self.resp.has_data() || self.requester_ready().is_some()
    }

    fn requester_ready(&self) -> Option<Psn> {
        self.requester_ready_within(|| self.cc.as_ref().and_then(CcPacer::window))
    }

    /// [`Self::requester_ready`] with the controller's send window from `window` (asked only
    /// once the requester has something: a caller that already holds it passes it in).
    #[inline]
    fn requester_ready_within(&self, window: impl FnOnce() -> Option<u64>) -> Option<Psn> {
        if !matches!(self.state, QpState::Rts | QpState::Sqd) {
            return None;
        }
        let (psn, in_flight) = self.req.ready(self.attrs.max_rd_atomic, &self.cfg)?;
        // SQD finishes what was sent but starts nothing new.
        if self.state == QpState::Sqd && !psn.before(self.req.high_psn) {
            return None;
        }
        // The controller's window (if any) is full: new data waits for ACKs.
        let mtu = self.attrs.path_mtu.bytes();
        if window().is_some_and(|w| u64::from(in_flight) * u64::from(mtu) >= w) {
            return None;
        }
        Some(psn)
    }

    /// A data packet (request or READ response) is waiting, due now or held back by the pacer.
    pub fn has_pending_data(&self) -> bool {
        self.has_unpaced_data()
    }

    /// A data packet (request or READ response) could leave at `now`.
    pub fn has_data(&self, now: Instant) -> bool {
        self.next_departure <= now && self.has_unpaced_data()
    }

    /// When this QP's next data packet may leave (for the endpoint's scheduler).
    pub fn next_departure(&self) -> Instant {
        self.next_departure
    }
}
