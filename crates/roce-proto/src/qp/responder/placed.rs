//! The responder in selective-repeat mode ([`Recovery::SelectiveRepeat`]): SEND and RDMA WRITE
//! packets are placed where their [placement header](crate::wire::placement) says, in whatever
//! order they arrive inside the window; messages complete, and the expected PSN moves, only in
//! PSN order. Each packet that arrives ahead of the expected PSN is answered with a PSN sequence
//! error NAK for the expected PSN whose MSN field names the packet (IRN's NACK: a cumulative and
//! a selective acknowledgement in one). READs and atomics run as in go-back-N mode, in order.
//!
//! [`Recovery::SelectiveRepeat`]: crate::verbs::Recovery::SelectiveRepeat

use std::collections::VecDeque;

use crate::counters::QpCounters;
use crate::mr::MrError;
use crate::psn::{Msn, Psn, PsnWindow};
use crate::verbs::{sgl_len, AccessFlags, WcOpcode, WcStatus, WorkCompletion};
use crate::wire::aeth::{NakCode, Syndrome};
use crate::wire::{placement, RoceView};

use super::{Check, Fatal, RespItem, Responder, ResponderCtx};

/// What selective repeat adds to a responder.
#[derive(Clone, Debug)]
pub(crate) struct Reorder {
    /// Packets placed at or past the expected PSN; the window starts at the expected PSN.
    held: PsnWindow,
    /// The last packets of messages placed past the expected PSN, in PSN order: each completes
    /// its message once the expected PSN passes it.
    ends: VecDeque<MessageEnd>,
    /// Receive work requests consumed by messages completed so far (the receive sequence number
    /// of the head of the receive queue).
    recv_head: u32,
}

/// The last packet of a placed message, waiting for its turn to complete.
#[derive(Clone, Copy, Debug)]
struct MessageEnd {
    psn: Psn,
    kind: EndKind,
}

#[derive(Clone, Copy, Debug)]
enum EndKind {
    Send {
        byte_len: u32,
        imm: Option<u32>,
        invalidated: Option<u32>,
    },
    Write {
        dma_len: u32,
        imm: Option<u32>,
    },
}

/// What placing one packet did.
enum Placed {
    /// Its bytes are where they belong.
    Yes,
    /// Not placed and not answered (or answered with an RNR NAK): it will come again.
    No,
    Nak(NakCode, WcStatus),
}

impl Reorder {
    pub fn new(epsn: Psn) -> Self {
        Reorder {
            held: PsnWindow::new(epsn),
            ends: VecDeque::new(),
            recv_head: 0,
        }
    }

    /// Forgets what lies behind `epsn` (a READ or atomic moved it past held packets).
    fn catch_up(&mut self, epsn: Psn) {
        self.held.slide_to(epsn);
        while self.ends.front().is_some_and(|e| e.psn.before(epsn)) {
            self.ends.pop_front();
        }
    }

    fn insert_end(&mut self, end: MessageEnd) {
        let base = self.held.start();
        let at = self
            .ends
            .iter()
            .position(|e| e.psn.diff(base) > end.psn.diff(base))
            .unwrap_or(self.ends.len());
        self.ends.insert(at, end);
    }
}

impl Responder {
    /// Turns selective repeat on (at RTR, once the expected PSN is set).
    pub fn enable_selective_repeat(&mut self) {
        self.reorder = Some(Box::new(Reorder::new(self.epsn)));
    }

    /// A request packet on a selective-repeat QP.
    pub(super) fn handle_selective(
        &mut self,
        pkt: &RoceView<'_>,
        c: &mut ResponderCtx<'_>,
    ) -> Result<(), Fatal> {
        let op = pkt.bth.opcode;
        let psn = pkt.bth.psn;
        let d = psn.diff(self.epsn);
        if d < 0 {
            c.stats.duplicate_request += 1;
            self.handle_duplicate(pkt, c);
            return Ok(());
        }
        if !(op.is_send() || op.is_write()) {
            // READ and atomic: in order only (a later copy comes once the gap is filled).
            if d > 0 {
                c.stats.out_of_sequence += 1;
                c.stats.rx_dropped += 1;
                return Ok(());
            }
            let result = self.execute_in_order(pkt, c);
            let epsn = self.epsn;
            if let Some(r) = self.reorder.as_mut() {
                r.catch_up(epsn);
            }
            // Packets held behind it are executed now: acknowledge them (after its response).
            if result.is_ok() && self.deliver(c) > 0 {
                self.push_ack(self.epsn.sub(1), c.stats);
            }
            return result;
        }
        let Some(r) = self.reorder.as_ref() else {
            return Ok(());
        };
        if !r.held.spans(psn) {
            c.stats.out_of_sequence += 1;
            c.stats.rx_dropped += 1;
            return Ok(());
        }
        if r.held.contains(psn) {
            // Our NAK naming it may have been lost: name it again.
            c.stats.duplicate_request += 1;
            self.push_sack(psn, c.stats);
            return Ok(());
        }
        match self.place(pkt, d == 0, c) {
            Placed::Yes => {}
            Placed::No => return Ok(()),
            Placed::Nak(code, status) => return Err(self.fail_request(psn, code, status, c)),
        }
        if let Some(r) = self.reorder.as_mut() {
            r.held.insert(psn);
        }
        if d == 0 {
            let delivered = self.deliver(c);
            // Filling a gap acknowledges everything it released at once.
            if pkt.bth.ack_req || delivered > 1 {
                self.push_ack(self.epsn.sub(1), c.stats);
            }
        } else {
            c.stats.out_of_sequence += 1;
            c.stats.out_of_order_placed += 1;
            self.push_sack(psn, c.stats);
        }
        Ok(())
    }

    /// The NAK for the expected PSN that also names `psn`, which the responder now holds.
    fn push_sack(&mut self, psn: Psn, stats: &mut QpCounters) {
        if self.has_room(stats) {
            self.out.push_back(RespItem::Ack {
                psn: self.epsn,
                syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
                msn: Msn::new(psn.value()),
            });
        }
    }

    /// Moves the expected PSN over the packets held from it on, completing the messages that
    /// end there; returns how many it passed.
    fn deliver(&mut self, c: &mut ResponderCtx<'_>) -> u32 {
        let mut passed = 0;
        loop {
            let Some(r) = self.reorder.as_mut() else {
                return passed;
            };
            if !r.held.pop_start() {
                return passed;
            }
            let psn = self.epsn;
            self.epsn = psn.next();
            passed += 1;
            if r.ends.front().is_some_and(|e| e.psn == psn) {
                if let Some(end) = r.ends.pop_front() {
                    self.msn = self.msn.next();
                    self.complete(end, c);
                }
            }
        }
    }

    fn complete(&mut self, end: MessageEnd, c: &mut ResponderCtx<'_>) {
        let (opcode, byte_len, imm, invalidated) = match end.kind {
            EndKind::Write { imm: None, .. } => {
                c.stats.rx_write_requests += 1;
                return;
            }
            EndKind::Write { dma_len, imm } => {
                c.stats.rx_write_requests += 1;
                (WcOpcode::RecvRdmaWithImm, dma_len, imm, None)
            }
            EndKind::Send {
                byte_len,
                imm,
                invalidated,
            } => {
                c.stats.rx_send_requests += 1;
                (WcOpcode::Recv, byte_len, imm, invalidated)
            }
        };
        if let Some(r) = self.reorder.as_mut() {
            r.recv_head = r.recv_head.wrapping_add(1);
        }
        // Placement checked that the receive was posted; a peer that numbered two messages
        // alike finds none left for the second, which then completes nothing.
        let Some(wqe) = self.rq.pop_front() else {
            c.stats.rx_dropped += 1;
            return;
        };
        c.cq.push(WorkCompletion {
            wr_id: wqe.wr_id,
            status: WcStatus::Success,
            opcode,
            byte_len,
            imm_data: imm,
            invalidated_rkey: invalidated,
            qp_num: c.qpn,
        });
    }

    /// Writes one SEND or WRITE packet's data where its placement header says.
    fn place(&mut self, pkt: &RoceView<'_>, in_order: bool, c: &mut ResponderCtx<'_>) -> Placed {
        let invalid = Placed::Nak(NakCode::InvalidRequest, WcStatus::RemInvReqErr);
        let access_err = Placed::Nak(NakCode::RemoteAccessError, WcStatus::RemAccessErr);
        let op = pkt.bth.opcode;
        let psn = pkt.bth.psn;
        let Ok((h, data)) = placement::Repr::split(pkt.payload()) else {
            return invalid;
        };
        if !self.check_len(op, data.len(), c.mtu) {
            return invalid;
        }
        // The packet's place in its message, which must start at or before it.
        let k = psn.diff(h.message_psn());
        if k < 0 || ((op.is_first() || op.is_only()) != (k == 0)) {
            return invalid;
        }
        let offset = k as u64 * u64::from(c.mtu);
        let end = offset + data.len() as u64;
        let dma_len = u64::from(h.dma_len);
        let last = op.is_last() || op.is_only();
        if (last && end != dma_len) || (!last && end >= dma_len) {
            return invalid;
        }
        let imm = pkt.immdt();
        // The receive this message consumes, when it consumes one: a SEND on every packet, an
        // RDMA WRITE with immediate on its last.
        let recv_index = if op.is_send() || (last && imm.is_some()) {
            let head = self.reorder.as_ref().map_or(0, |r| r.recv_head);
            let i = h.recv_sn.wrapping_sub(head) as usize;
            if i >= self.rq.len() {
                // Not posted yet: an RNR NAK when it blocks the expected PSN, else dropped.
                if in_order {
                    let _ = self.rnr(psn, c);
                } else {
                    c.stats.rx_dropped += 1;
                }
                return Placed::No;
            }
            Some(i)
        } else {
            None
        };
        let kind = if op.is_send() {
            let Some(wqe) = recv_index.and_then(|i| self.rq.get(i)) else {
                return Placed::No;
            };
            if end > sgl_len(&wqe.sgl) {
                c.stats.resp_local_length_error += 1;
                return Placed::Nak(NakCode::InvalidRequest, WcStatus::LocLenErr);
            }
            if !data.is_empty() && !c.mrs.scatter(&wqe.sgl, offset, data) {
                return Placed::Nak(NakCode::RemoteOperationalError, WcStatus::LocProtErr);
            }
            let invalidated = pkt.ieth();
            if let Some(rkey) = invalidated {
                if c.mrs.invalidate(c.pd, rkey, true).is_err() {
                    return invalid;
                }
            }
            EndKind::Send {
                byte_len: end as u32,
                imm,
                invalidated,
            }
        } else {
            if !data.is_empty() {
                if !c.access.contains(AccessFlags::REMOTE_WRITE) {
                    return access_err;
                }
                let Ok(range) = c.mrs.resolve_remote(
                    c.pd,
                    h.rkey,
                    h.va.wrapping_add(offset),
                    data.len() as u64,
                    AccessFlags::REMOTE_WRITE,
                ) else {
                    return access_err;
                };
                match c.mrs.store(range, data) {
                    Ok(true) => {}
                    Ok(false) | Err(MrError::Memory(_)) => {
                        return Placed::Nak(NakCode::RemoteOperationalError, WcStatus::RemOpErr)
                    }
                    Err(_) => return access_err,
                }
            }
            EndKind::Write {
                dma_len: h.dma_len,
                imm,
            }
        };
        if last {
            if let Some(r) = self.reorder.as_mut() {
                r.insert_end(MessageEnd { psn, kind });
            }
        }
        Placed::Yes
    }

    /// Runs a READ or atomic at the expected PSN as go-back-N mode does.
    fn execute_in_order(
        &mut self,
        pkt: &RoceView<'_>,
        c: &mut ResponderCtx<'_>,
    ) -> Result<(), Fatal> {
        self.nak_sent = false;
        match self.execute(pkt, c) {
            Check::Ok | Check::Dropped => Ok(()),
            Check::Nak(code, status) => Err(self.fail_request(pkt.bth.psn, code, status, c)),
        }
    }
}
