//! The completer half of an RC queue pair: retires send WQEs on ACKs (including ACKs implied by
//! later responses), lands READ response data and atomic results, runs the local ACK timeout and
//! the RNR wait, and decides go-back-N retransmissions and fatal errors.
//!
//! It acts on [`Requester`] state; it never builds packets.

use crate::counters::QpCounters;
use crate::mr::{MrTable, PdHandle};
use crate::psn::{Msn, Psn};
use crate::time::{Duration, Instant};
use crate::verbs::{CompletionQueue, SendFlags, WcStatus, WorkCompletion, WrOpcode};
use crate::wire::aeth::{NakCode, Syndrome};
use crate::wire::opcode::Opcode;

use super::requester::Requester;
use super::timer::{rnr_timeout, Timer, TimerTable};

/// What the completer needs from its QP for one event.
pub(crate) struct CompleterCtx<'a> {
    pub now: Instant,
    pub qpn: u32,
    pub pd: PdHandle,
    pub mtu: u32,
    pub mrs: &'a mut MrTable,
    pub cq: &'a mut CompletionQueue,
    pub stats: &'a mut QpCounters,
    pub timers: &'a mut TimerTable,
    pub ack_timeout: Option<Duration>,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    /// Selective repeat's reordering window.
    pub reorder_window: Duration,
}

/// A failure that ends the QP: the head WQE completes with this status, the rest flush.
pub(crate) type Fatal = WcStatus;

enum Acked {
    /// Retired up to the PSN (possibly nothing).
    Done,
    /// A READ/atomic before the PSN never got its response: resend from here.
    ImpliedNak(Psn),
}

impl Requester {
    fn progress(&mut self, c: &mut CompleterCtx<'_>) {
        self.note_una();
        self.retry_psn = None;
        self.retry_left = c.retry_cnt;
        self.rnr_retry_left = c.rnr_retry;
        self.arm_ack_timer(c.now, c.timers, c.ack_timeout, true);
    }

    /// (Re)arms the local ACK timer while anything is outstanding; `restart` moves an armed one.
    pub fn arm_ack_timer(
        &self,
        now: Instant,
        timers: &mut TimerTable,
        timeout: Option<Duration>,
        restart: bool,
    ) {
        match timeout {
            Some(t) if self.una.before(self.high_psn) => {
                if restart || timers.get(Timer::AckTimeout).is_none() {
                    timers.set(Timer::AckTimeout, now + t);
                }
            }
            _ => timers.stop(Timer::AckTimeout),
        }
    }

    /// Pops the head WQE and reports it (always on error, on success when signaled).
    pub fn complete_head(&mut self, status: WcStatus, c: &mut CompleterCtx<'_>) {
        // Read in place, then dropped: popping the whole WQE out would copy it.
        let Some(w) = self.sq.front() else {
            return;
        };
        let (opcode, wr_id, len, last_psn, npkts) =
            (w.wr.opcode, w.wr.wr_id, w.len, w.last_psn(), w.npkts);
        let signaled = w.wr.flags.contains(SendFlags::SIGNALED);
        self.sq.pop_front();
        if self.cursor > 0 {
            self.cursor -= 1;
            if opcode.is_read_or_atomic() {
                self.rd_atomic_outstanding = self.rd_atomic_outstanding.saturating_sub(1);
            }
        } else {
            self.cursor_pkt = 0;
        }
        if status != WcStatus::Success {
            c.stats.error_completions += 1;
        } else if npkts > 0 {
            self.una = last_psn.next();
        }
        if status != WcStatus::Success || signaled {
            let byte_len = if opcode.is_atomic() { 8 } else { len as u32 };
            c.cq.push(WorkCompletion {
                wr_id,
                status,
                opcode: opcode.wc_opcode(),
                byte_len,
                imm_data: None,
                invalidated_rkey: None,
                qp_num: c.qpn,
            });
        }
    }

    /// Runs the local operations (local invalidate) at the head of the send queue, each once every
    /// work request before it has completed, and completes them. A key that names no valid
    /// region of this QP's PD fails with a local QP operation error (as in rxe).
    pub fn run_local_ops(&mut self, c: &mut CompleterCtx<'_>) -> Result<(), Fatal> {
        while let Some(w) = self.sq.front() {
            let WrOpcode::LocalInv { rkey } = w.wr.opcode else {
                break;
            };
            if w.local_error.is_some() {
                break;
            }
            if c.mrs.invalidate(c.pd, rkey, false).is_err() {
                return Err(WcStatus::LocQpOpErr);
            }
            self.complete_head(WcStatus::Success, c);
        }
        Ok(())
    }

    /// A local error found at post time, now at the head: the QP must fail with it.
    pub fn head_local_error(&self) -> Option<WcStatus> {
        self.sq.front().and_then(|w| w.local_error)
    }

    fn ack_through(&mut self, psn: Psn, c: &mut CompleterCtx<'_>) -> Acked {
        let mut progressed = false;
        let mut outcome = Acked::Done;
        while let Some(w) = self.sq.front() {
            if psn.diff(w.last_psn()) >= 0 {
                if w.wr.opcode.is_read_or_atomic() {
                    outcome = Acked::ImpliedNak(w.first_psn.add(w.read_pkts));
                    break;
                }
                self.complete_head(WcStatus::Success, c);
                progressed = true;
            } else {
                if !w.wr.opcode.is_read_or_atomic() && psn.diff(w.first_psn) >= 0 {
                    let una = psn.next();
                    if una.after(self.una) {
                        self.una = una;
                        progressed = true;
                    }
                }
                break;
            }
        }
        if progressed {
            self.progress(c);
        }
        outcome
    }

    /// Spends one transport retry on a retransmission round, or fails the QP when none is left.
    fn spend_retry(&mut self, c: &mut CompleterCtx<'_>) -> Result<(), Fatal> {
        if self.retry_left == 0 {
            c.stats.req_transport_retries_exceeded += 1;
            return Err(WcStatus::RetryExcErr);
        }
        self.retry_left -= 1;
        c.stats.completer_retry_err += 1;
        Ok(())
    }

    /// Starts a go-back-N round from `psn`, spending one transport retry. `force` (timeouts)
    /// restarts even a round already running from the same PSN.
    fn retry(&mut self, psn: Psn, force: bool, c: &mut CompleterCtx<'_>) -> Result<(), Fatal> {
        if !force && self.retry_psn == Some(psn) {
            return Ok(());
        }
        self.spend_retry(c)?;
        // Selective repeat asks again for a missing READ or atomic response alone; a timeout
        // goes back over everything the responder does not hold.
        if force || !self.rerequest(psn) {
            self.rewind(psn);
        }
        self.retry_psn = Some(psn);
        self.arm_ack_timer(c.now, c.timers, c.ack_timeout, true);
        Ok(())
    }

    fn implied(&mut self, acked: Acked, c: &mut CompleterCtx<'_>) -> Result<bool, Fatal> {
        match acked {
            Acked::Done => Ok(false),
            Acked::ImpliedNak(p) => {
                c.stats.implied_nak_seq_err += 1;
                self.retry(p, false, c)?;
                Ok(true)
            }
        }
    }

    /// A response PSN this requester could have caused: one it sent and has not seen
    /// acknowledged (`una` up to `high_psn`), or the one just before `una`, which a duplicate ACK
    /// carries. Measured as an offset from there, not by serial comparison with `high_psn`
    /// alone: a PSN half the ring away from `high_psn` compares as before it and as after every
    /// PSN not yet sent, so a forged ACK carrying one would complete work requests never sent.
    /// (rxe's completer likewise drops a response that reaches a WQE its requester has not
    /// started.)
    fn response_in_window(&self, psn: Psn) -> bool {
        let from = self.una.sub(1);
        psn.sub(from.value()).value() < self.high_psn.sub(from.value()).value()
    }

    /// An ACK or NAK (opcode ACKNOWLEDGE) for `psn`, with the AETH's MSN field (under selective
    /// repeat a sequence NAK's names a PSN the responder holds).
    pub fn on_ack(
        &mut self,
        psn: Psn,
        syndrome: Syndrome,
        msn: Msn,
        c: &mut CompleterCtx<'_>,
    ) -> Result<(), Fatal> {
        if !self.response_in_window(psn) {
            c.stats.rx_dropped += 1;
            return Ok(());
        }
        match syndrome {
            Syndrome::Ack { .. } => {
                let acked = self.ack_through(psn, c);
                self.implied(acked, c)?;
            }
            Syndrome::RnrNak { timer } => {
                let acked = self.ack_through(psn.sub(1), c);
                if self.implied(acked, c)? {
                    return Ok(());
                }
                c.stats.rnr_nak_retry_err += 1;
                if self.rnr_retry_left == 0 {
                    c.stats.retry_rnr_exceeded_err += 1;
                    return Err(WcStatus::RnrRetryExcErr);
                }
                if self.rnr_retry_left != 7 {
                    self.rnr_retry_left -= 1;
                }
                if self.rewind(psn) {
                    self.rnr_wait = true;
                    c.timers.set(Timer::RnrRetry, c.now + rnr_timeout(timer));
                    c.timers.stop(Timer::AckTimeout);
                }
            }
            Syndrome::Nak(code) => {
                let acked = self.ack_through(psn.sub(1), c);
                match code {
                    NakCode::PsnSequenceError if self.selective.is_some() => {
                        return self.on_selective_nak_at(psn, Psn::new(msn.value()), acked, c);
                    }
                    NakCode::PsnSequenceError => {
                        c.stats.packet_seq_err += 1;
                        // Packets that followed an RNR-NAKed one are resent when the RNR wait
                        // ends anyway; the gap they left is no reason for another round.
                        if self.rnr_wait {
                            return Ok(());
                        }
                        if !self.implied(acked, c)? {
                            self.retry(psn, false, c)?;
                        }
                    }
                    NakCode::RemoteAccessError => {
                        c.stats.req_remote_access_errors += 1;
                        return Err(WcStatus::RemAccessErr);
                    }
                    NakCode::RemoteOperationalError => return Err(WcStatus::RemOpErr),
                    _ => {
                        c.stats.req_remote_invalid_request += 1;
                        return Err(WcStatus::RemInvReqErr);
                    }
                }
            }
            Syndrome::Reserved(_) => c.stats.rx_dropped += 1,
        }
        Ok(())
    }

    /// Finds the WQE a READ response or atomic ACK for `psn` answers (of the kind `is_kind`) and
    /// retires what precedes it, which the response implicitly acknowledges. `Ok(true)` when that
    /// WQE is now at the head; stale, unknown or mismatched responses are counted and dropped.
    fn response_reaches_head(
        &mut self,
        psn: Psn,
        is_kind: impl Fn(&WrOpcode) -> bool,
        c: &mut CompleterCtx<'_>,
    ) -> Result<bool, Fatal> {
        // Never sent, or a duplicate of a response already landed.
        let found = if self.response_in_window(psn) && !psn.before(self.una) {
            self.sq.iter().position(|w| w.covers(psn))
        } else {
            None
        };
        let Some(idx) = found.filter(|&i| is_kind(&self.sq[i].wr.opcode)) else {
            c.stats.rx_dropped += 1;
            return Ok(false);
        };
        if idx > 0 {
            let first = self.sq[idx].first_psn;
            let acked = self.ack_through(first.sub(1), c);
            if self.implied(acked, c)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A selective-repeat NAK for `psn` naming `held` (`acked`: what its cumulative part
    /// retired). The first of a loss starts a recovery, spending one transport retry (the
    /// controller hears of a loss only when a packet is resent: a reordered one is not lost);
    /// a NAK stuck at a READ or atomic goes back to it as IBA says.
    fn on_selective_nak_at(
        &mut self,
        psn: Psn,
        held: Psn,
        acked: Acked,
        c: &mut CompleterCtx<'_>,
    ) -> Result<(), Fatal> {
        c.stats.selective_naks += 1;
        if self.rnr_wait || self.implied(acked, c)? {
            return Ok(());
        }
        let at_read = self
            .sq
            .iter()
            .find(|w| w.covers(psn))
            .is_some_and(|w| w.wr.opcode.is_read_or_atomic());
        let began = self.on_selective_nak(psn, held, c.now, c.reorder_window, c.timers);
        if at_read {
            self.losses += u64::from(self.retry_psn != Some(psn));
            return self.retry(psn, false, c);
        }
        if began {
            self.spend_retry(c)?;
            self.arm_ack_timer(c.now, c.timers, c.ack_timeout, true);
        }
        Ok(())
    }

    /// A READ response packet.
    pub fn on_read_response(
        &mut self,
        opcode: Opcode,
        psn: Psn,
        payload: &[u8],
        c: &mut CompleterCtx<'_>,
    ) -> Result<(), Fatal> {
        if !self.response_reaches_head(psn, |op| matches!(op, WrOpcode::RdmaRead { .. }), c)? {
            return Ok(());
        }
        let Some(w) = self.sq.front() else {
            return Ok(());
        };
        let expected = w.first_psn.add(w.read_pkts);
        if psn != expected {
            c.stats.implied_nak_seq_err += 1;
            return self.retry(expected, false, c);
        }
        let k = w.read_pkts;
        let last = k + 1 >= w.npkts;
        let offset = u64::from(k) * u64::from(c.mtu);
        let want = if last {
            w.len.saturating_sub(offset)
        } else {
            u64::from(c.mtu)
        };
        let position_ok = if last {
            opcode == Opcode::RC_RDMA_READ_RESPONSE_LAST
                || opcode == Opcode::RC_RDMA_READ_RESPONSE_ONLY
        } else {
            opcode == Opcode::RC_RDMA_READ_RESPONSE_FIRST
                || opcode == Opcode::RC_RDMA_READ_RESPONSE_MIDDLE
        };
        if !position_ok || payload.len() as u64 != want {
            c.stats.rx_dropped += 1;
            return Ok(());
        }
        if !payload.is_empty() && !c.mrs.scatter(&w.wr.sgl, offset, payload) {
            return Err(WcStatus::LocProtErr);
        }
        if let Some(w) = self.sq.front_mut() {
            w.read_pkts += 1;
        }
        self.una = psn.next();
        if last {
            self.complete_head(WcStatus::Success, c);
        }
        self.progress(c);
        Ok(())
    }

    /// An ATOMIC ACKNOWLEDGE carrying the original value.
    pub fn on_atomic_ack(
        &mut self,
        psn: Psn,
        orig: u64,
        c: &mut CompleterCtx<'_>,
    ) -> Result<(), Fatal> {
        if !self.response_reaches_head(psn, WrOpcode::is_atomic, c)? {
            return Ok(());
        }
        let Some(w) = self.sq.front() else {
            return Ok(());
        };
        if !c.mrs.scatter(&w.wr.sgl, 0, &orig.to_le_bytes()) {
            return Err(WcStatus::LocProtErr);
        }
        self.complete_head(WcStatus::Success, c);
        self.progress(c);
        Ok(())
    }

    /// The local ACK timer fired: resend from the oldest unacknowledged PSN.
    pub fn on_ack_timeout(&mut self, c: &mut CompleterCtx<'_>) -> Result<(), Fatal> {
        if self.rnr_wait || !self.una.before(self.high_psn) {
            return Ok(());
        }
        c.stats.local_ack_timeout_err += 1;
        let una = self.una;
        self.retry(una, true, c)
    }

    /// The RNR wait is over: sending resumes from the NAK'd PSN.
    pub fn on_rnr_timer(&mut self, c: &mut CompleterCtx<'_>) {
        self.rnr_wait = false;
        self.arm_ack_timer(c.now, c.timers, c.ack_timeout, true);
    }
}
