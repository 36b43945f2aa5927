//! The responder half of an RC queue pair: PSN check (expected / duplicate / future), opcode
//! sequence and length checks, rkey and access checks, execution of SEND / WRITE / READ / atomics
//! into memory regions, and the ordered queue of ACKs, NAKs, READ responses and atomic ACKs.
//!
//! Behaviour follows Linux rxe where the spec leaves room: duplicate SEND/WRITE → ACK for the
//! expected PSN minus one with the current MSN; one PSN sequence NAK per gap carrying the expected
//! PSN; RNR NAK carrying the request's PSN and `min_rnr_timer`; credits field 31 on every ACK.

use std::collections::VecDeque;

use crate::counters::QpCounters;
use crate::mr::{MrError, MrRange, MrTable, PdHandle};
use crate::psn::{Msn, Psn};
use crate::verbs::{
    sgl_len, AccessFlags, CompletionQueue, RecvWr, WcOpcode, WcStatus, WorkCompletion,
};
use crate::wire::aeth;
use crate::wire::aeth::{NakCode, Syndrome};
use crate::wire::opcode::Opcode;
use crate::wire::{atomic_ack_eth, RoceView};

use super::state::MAX_RD_ATOMIC;
use super::{Outgoing, Payload};

mod placed;

/// The credit code rxe puts in every ACK: 31, "invalid credit count".
pub const ACK_CREDITS_INVALID: u8 = 0x1f;

/// Most responses queued at once. Every packet a peer sends can ask for one (an RNR NAK, a
/// duplicate's ACK or atomic ACK, a sequence NAK), so what does not fit is dropped and counted
/// instead: the requester's retry covers a lost response. A new READ or atomic that does not fit
/// is dropped unexecuted, like a lost request; a NAK that ends the QP always fits (nothing
/// follows it). Four times [`MAX_RD_ATOMIC`]: room for every READ/atomic in flight and an ACK
/// between each two.
pub const MAX_QUEUED_RESPONSES: usize = 4 * MAX_RD_ATOMIC as usize;

/// One response waiting to go out, in PSN order.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RespItem {
    /// ACK or NAK.
    Ack {
        psn: Psn,
        syndrome: Syndrome,
        msn: Msn,
    },
    /// ATOMIC ACKNOWLEDGE.
    AtomicAck {
        psn: Psn,
        orig: u64,
        msn: Msn,
        duplicate: bool,
    },
    /// A READ response stream: packet `k` of `npkts` goes next.
    Read {
        first_psn: Psn,
        k: u32,
        npkts: u32,
        range: Option<MrRange>,
        len: u64,
        msn: Msn,
        duplicate: bool,
    },
}

impl RespItem {
    /// The READ response stream for a request at `psn`, from its first packet.
    fn read_from_start(
        psn: Psn,
        npkts: u32,
        range: Option<MrRange>,
        len: u64,
        msn: Msn,
        duplicate: bool,
    ) -> Self {
        RespItem::Read {
            first_psn: psn,
            k: 0,
            npkts,
            range,
            len,
            msn,
            duplicate,
        }
    }
}

#[derive(Clone, Debug)]
enum InMessage {
    Send {
        wqe: RecvWr,
        offset: u64,
    },
    Write {
        range: Option<MrRange>,
        offset: u64,
        dma_len: u64,
    },
}

/// What the responder needs from its QP for one packet.
pub(crate) struct ResponderCtx<'a> {
    pub qpn: u32,
    pub pd: PdHandle,
    pub access: AccessFlags,
    pub mtu: u32,
    pub min_rnr_timer: u8,
    pub max_dest_rd_atomic: u8,
    pub mrs: &'a mut MrTable,
    pub cq: &'a mut CompletionQueue,
    pub stats: &'a mut QpCounters,
}

/// A responder error that ends the QP (the NAK is already queued).
pub(crate) type Fatal = WcStatus;

/// Responder state.
#[derive(Debug)]
pub(crate) struct Responder {
    pub epsn: Psn,
    pub msn: Msn,
    nak_sent: bool,
    current: Option<InMessage>,
    pub rq: VecDeque<RecvWr>,
    pub max_recv_wr: usize,
    pub out: VecDeque<RespItem>,
    atomic_replay: VecDeque<(Psn, u64)>,
    /// A queued READ's region went away: its NAK went out and the QP must fail.
    fatal: bool,
    /// Selective repeat's state, on a QP that uses it.
    reorder: Option<Box<placed::Reorder>>,
}

enum Check {
    Ok,
    /// Not executed and not answered (no room to queue the response).
    Dropped,
    Nak(NakCode, WcStatus),
}

impl Responder {
    pub fn new(max_recv_wr: usize) -> Self {
        Responder {
            epsn: Psn::new(0),
            msn: Msn::new(0),
            nak_sent: false,
            current: None,
            // Queues grow as they are used, up to their bounds: a fabric holds a QP for every
            // flow, and most of them never queue more than an ACK or two.
            rq: VecDeque::new(),
            max_recv_wr,
            out: VecDeque::new(),
            atomic_replay: VecDeque::new(),
            fatal: false,
            reorder: None,
        }
    }

    /// Room for atomic replays without allocating.
    pub fn atomic_replay_capacity(&self) -> usize {
        self.atomic_replay.capacity()
    }

    /// Whether one more response fits; counts the drop when it does not.
    fn has_room(&self, stats: &mut QpCounters) -> bool {
        if self.out.len() < MAX_QUEUED_RESPONSES {
            return true;
        }
        stats.resp_queue_full += 1;
        stats.rx_dropped += 1;
        false
    }

    /// Whether the QP must fail because a queued READ's region went away (its NAK was just
    /// written); taken once.
    pub fn take_fatal(&mut self) -> bool {
        std::mem::take(&mut self.fatal)
    }

    fn push_ack(&mut self, psn: Psn, stats: &mut QpCounters) {
        let syndrome = Syndrome::Ack {
            credits: ACK_CREDITS_INVALID,
        };
        if let Some(RespItem::Ack {
            psn: p,
            syndrome: Syndrome::Ack { .. },
            msn,
        }) = self.out.back_mut()
        {
            // Coalesce: a later cumulative ACK replaces one not yet sent.
            *p = psn;
            *msn = self.msn;
            return;
        }
        if self.has_room(stats) {
            self.out.push_back(RespItem::Ack {
                psn,
                syndrome,
                msn: self.msn,
            });
        }
    }

    /// Queues a NAK unless the queue is full; `true` when queued.
    fn push_nak(&mut self, psn: Psn, syndrome: Syndrome, stats: &mut QpCounters) -> bool {
        let room = self.has_room(stats);
        if room {
            self.push_final_nak(psn, syndrome);
        }
        room
    }

    /// Queues a NAK that ends the QP (always: nothing can follow it).
    fn push_final_nak(&mut self, psn: Psn, syndrome: Syndrome) {
        self.out.push_back(RespItem::Ack {
            psn,
            syndrome,
            msn: self.msn,
        });
    }

    /// Drops queued READ responses (the QP failed; NAKs and ACKs still go out) and the message
    /// in progress, handing back the receive it had consumed (to complete as flushed).
    pub fn abort(&mut self) -> Option<RecvWr> {
        self.out.retain(|i| matches!(i, RespItem::Ack { .. }));
        match self.current.take() {
            Some(InMessage::Send { wqe, .. }) => Some(wqe),
            _ => None,
        }
    }

    /// A request packet for this QP.
    pub fn handle_request(
        &mut self,
        pkt: &RoceView<'_>,
        c: &mut ResponderCtx<'_>,
    ) -> Result<(), Fatal> {
        if self.reorder.is_some() {
            return self.handle_selective(pkt, c);
        }
        let psn = pkt.bth.psn;
        let d = psn.diff(self.epsn);
        if d > 0 {
            c.stats.out_of_sequence += 1;
            if !self.nak_sent {
                self.nak_sent =
                    self.push_nak(self.epsn, Syndrome::Nak(NakCode::PsnSequenceError), c.stats);
            }
            return Ok(());
        }
        if d < 0 {
            c.stats.duplicate_request += 1;
            self.handle_duplicate(pkt, c);
            return Ok(());
        }
        self.nak_sent = false;
        match self.execute(pkt, c) {
            Check::Ok | Check::Dropped => Ok(()),
            Check::Nak(code, status) => Err(self.fail_request(psn, code, status, c)),
        }
    }

    /// The request at `psn` ends the QP: counts it, queues its NAK and completes the receive
    /// of a SEND in progress with `status`.
    fn fail_request(
        &mut self,
        psn: Psn,
        code: NakCode,
        status: WcStatus,
        c: &mut ResponderCtx<'_>,
    ) -> Fatal {
        match code {
            NakCode::RemoteAccessError => c.stats.resp_remote_access_errors += 1,
            _ => c.stats.resp_invalid_request += 1,
        }
        self.push_final_nak(psn, Syndrome::Nak(code));
        if let Some(InMessage::Send { wqe, .. }) = self.current.take() {
            c.cq.push(WorkCompletion {
                wr_id: wqe.wr_id,
                status,
                opcode: WcOpcode::Recv,
                byte_len: 0,
                imm_data: None,
                invalidated_rkey: None,
                qp_num: c.qpn,
            });
            c.stats.error_completions += 1;
        }
        status
    }

    fn check_len(&self, op: Opcode, len: usize, mtu: u32) -> bool {
        let mtu = mtu as usize;
        if op.is_first() || op.is_middle() {
            len == mtu
        } else if op.is_last() {
            (1..=mtu).contains(&len)
        } else {
            len <= mtu
        }
    }

    fn execute(&mut self, pkt: &RoceView<'_>, c: &mut ResponderCtx<'_>) -> Check {
        let op = pkt.bth.opcode;
        let invalid = Check::Nak(NakCode::InvalidRequest, WcStatus::RemInvReqErr);
        // Opcode sequence: FIRST/MIDDLE must be followed by MIDDLE/LAST of the same kind.
        let seq_ok = match &self.current {
            None => !(op.is_middle() || op.is_last()),
            Some(InMessage::Send { .. }) => op.is_send() && (op.is_middle() || op.is_last()),
            Some(InMessage::Write { .. }) => op.is_write() && (op.is_middle() || op.is_last()),
        };
        if !seq_ok {
            return invalid;
        }
        if (op.is_send() || op.is_write()) && !self.check_len(op, pkt.payload().len(), c.mtu) {
            return invalid;
        }
        // A READ or atomic is executed only when its response can be queued.
        if (op.is_read_request() || op.is_atomic()) && !self.has_room(c.stats) {
            return Check::Dropped;
        }
        if op.is_send() {
            self.execute_send(pkt, c)
        } else if op.is_write() {
            self.execute_write(pkt, c)
        } else if op.is_read_request() {
            self.execute_read(pkt, c)
        } else if op.is_atomic() {
            self.execute_atomic(pkt, c)
        } else {
            invalid
        }
    }

    fn rnr(&mut self, psn: Psn, c: &mut ResponderCtx<'_>) -> Check {
        let syndrome = Syndrome::RnrNak {
            timer: c.min_rnr_timer,
        };
        if self.push_nak(psn, syndrome, c.stats) {
            c.stats.send_rnr_err += 1;
        }
        Check::Ok
    }

    /// The packet was executed: advance the expected PSN and ACK when asked.
    fn accept(&mut self, pkt: &RoceView<'_>, message_done: bool, stats: &mut QpCounters) {
        let psn = pkt.bth.psn;
        self.epsn = psn.next();
        if message_done {
            self.msn = self.msn.next();
        }
        if pkt.bth.ack_req {
            self.push_ack(psn, stats);
        }
    }

    fn execute_send(&mut self, pkt: &RoceView<'_>, c: &mut ResponderCtx<'_>) -> Check {
        let op = pkt.bth.opcode;
        if op.is_first() || op.is_only() {
            let Some(wqe) = self.rq.pop_front() else {
                return self.rnr(pkt.bth.psn, c);
            };
            self.current = Some(InMessage::Send { wqe, offset: 0 });
        }
        let Some(InMessage::Send { wqe, offset }) = &mut self.current else {
            return Check::Nak(NakCode::InvalidRequest, WcStatus::RemInvReqErr);
        };
        let end = *offset + pkt.payload().len() as u64;
        if end > sgl_len(&wqe.sgl) {
            c.stats.resp_local_length_error += 1;
            return Check::Nak(NakCode::InvalidRequest, WcStatus::LocLenErr);
        }
        if !pkt.payload().is_empty() && !c.mrs.scatter(&wqe.sgl, *offset, pkt.payload()) {
            return Check::Nak(NakCode::RemoteOperationalError, WcStatus::LocProtErr);
        }
        // SEND with Invalidate: the named rkey stops working once the data is placed (as in rxe);
        // one this QP's PD cannot invalidate makes the message an invalid request.
        let invalidated = pkt.ieth();
        if let Some(rkey) = invalidated {
            if c.mrs.invalidate(c.pd, rkey, true).is_err() {
                return Check::Nak(NakCode::InvalidRequest, WcStatus::RemInvReqErr);
            }
        }
        *offset = end;
        let done = op.is_last() || op.is_only();
        if done {
            let (wr_id, byte_len) = (wqe.wr_id, end as u32);
            self.current = None;
            c.stats.rx_send_requests += 1;
            c.cq.push(WorkCompletion {
                wr_id,
                status: WcStatus::Success,
                opcode: WcOpcode::Recv,
                byte_len,
                imm_data: pkt.immdt(),
                invalidated_rkey: invalidated,
                qp_num: c.qpn,
            });
        }
        self.accept(pkt, done, c.stats);
        Check::Ok
    }

    fn execute_write(&mut self, pkt: &RoceView<'_>, c: &mut ResponderCtx<'_>) -> Check {
        let op = pkt.bth.opcode;
        let invalid = Check::Nak(NakCode::InvalidRequest, WcStatus::RemInvReqErr);
        let access_err = Check::Nak(NakCode::RemoteAccessError, WcStatus::RemAccessErr);
        let len = pkt.payload().len() as u64;
        // The message's target and progress: from the RETH on FIRST/ONLY, else from the message
        // in progress. `current` changes only once the packet is executed, so a packet that is
        // NAKed (RNR included) leaves it as it was for the retry.
        let (range, offset, dma_len) = if op.is_first() || op.is_only() {
            let Some(reth) = pkt.reth() else {
                return invalid;
            };
            let dma_len = u64::from(reth.dma_len);
            if (op.is_only() && dma_len != len) || (op.is_first() && dma_len <= len) {
                return invalid;
            }
            let range = if dma_len == 0 {
                None
            } else if !c.access.contains(AccessFlags::REMOTE_WRITE) {
                return access_err;
            } else {
                match c.mrs.resolve_remote(
                    c.pd,
                    reth.rkey,
                    reth.va,
                    dma_len,
                    AccessFlags::REMOTE_WRITE,
                ) {
                    Ok(r) => Some(r),
                    Err(_) => return access_err,
                }
            };
            (range, 0, dma_len)
        } else {
            match self.current {
                Some(InMessage::Write {
                    range,
                    offset,
                    dma_len,
                }) => (range, offset, dma_len),
                _ => return invalid,
            }
        };
        let end = offset + len;
        let done = op.is_last() || op.is_only();
        if (done && end != dma_len) || (!done && end >= dma_len) {
            return invalid;
        }
        let imm = pkt.immdt();
        let wqe = if done && imm.is_some() {
            match self.rq.pop_front() {
                Some(w) => Some(w),
                None => return self.rnr(pkt.bth.psn, c),
            }
        } else {
            None
        };
        if let Some(r) = range {
            // Checked now, not only on the first packet: the region may be gone since.
            let at = r.narrow(offset as usize, len as usize);
            match c.mrs.store(at, pkt.payload()) {
                Ok(true) => {}
                Ok(false) | Err(MrError::Memory(_)) => {
                    return Check::Nak(NakCode::RemoteOperationalError, WcStatus::RemOpErr)
                }
                Err(_) => return access_err,
            }
        }
        if done {
            self.current = None;
            c.stats.rx_write_requests += 1;
            if let Some(wqe) = wqe {
                c.cq.push(WorkCompletion {
                    wr_id: wqe.wr_id,
                    status: WcStatus::Success,
                    opcode: WcOpcode::RecvRdmaWithImm,
                    byte_len: dma_len as u32,
                    imm_data: imm,
                    invalidated_rkey: None,
                    qp_num: c.qpn,
                });
            }
        } else {
            self.current = Some(InMessage::Write {
                range,
                offset: end,
                dma_len,
            });
        }
        self.accept(pkt, done, c.stats);
        Check::Ok
    }

    fn pending_rd_atomic(&self) -> usize {
        self.out
            .iter()
            .filter(|i| {
                matches!(
                    i,
                    RespItem::Read {
                        duplicate: false,
                        ..
                    } | RespItem::AtomicAck {
                        duplicate: false,
                        ..
                    }
                )
            })
            .count()
    }

    /// Resolves a READ's RETH: the range to read, or the NAK to send.
    fn read_range(
        &self,
        pkt: &RoceView<'_>,
        c: &ResponderCtx<'_>,
    ) -> Result<(Option<MrRange>, u64), Check> {
        let Some(reth) = pkt.reth() else {
            return Err(Check::Nak(NakCode::InvalidRequest, WcStatus::RemInvReqErr));
        };
        let len = u64::from(reth.dma_len);
        if len > 1 << 31 {
            return Err(Check::Nak(NakCode::InvalidRequest, WcStatus::RemInvReqErr));
        }
        if len == 0 {
            return Ok((None, 0));
        }
        let access_err = Check::Nak(NakCode::RemoteAccessError, WcStatus::RemAccessErr);
        if !c.access.contains(AccessFlags::REMOTE_READ) {
            return Err(access_err);
        }
        c.mrs
            .resolve_remote(c.pd, reth.rkey, reth.va, len, AccessFlags::REMOTE_READ)
            .map(|r| (Some(r), len))
            .map_err(|_| access_err)
    }

    fn execute_read(&mut self, pkt: &RoceView<'_>, c: &mut ResponderCtx<'_>) -> Check {
        let (range, len) = match self.read_range(pkt, c) {
            Ok(r) => r,
            Err(nak) => return nak,
        };
        if self.pending_rd_atomic() >= usize::from(c.max_dest_rd_atomic) {
            return Check::Nak(NakCode::InvalidRequest, WcStatus::RemInvReqErr);
        }
        let npkts = len.div_ceil(u64::from(c.mtu)).max(1) as u32;
        let psn = pkt.bth.psn;
        self.msn = self.msn.next();
        self.out.push_back(RespItem::read_from_start(
            psn, npkts, range, len, self.msn, false,
        ));
        self.epsn = psn.add(npkts);
        c.stats.rx_read_requests += 1;
        Check::Ok
    }

    fn execute_atomic(&mut self, pkt: &RoceView<'_>, c: &mut ResponderCtx<'_>) -> Check {
        let Some(a) = pkt.atomic_eth() else {
            return Check::Nak(NakCode::InvalidRequest, WcStatus::RemInvReqErr);
        };
        if a.va % 8 != 0 {
            return Check::Nak(NakCode::InvalidRequest, WcStatus::RemInvReqErr);
        }
        if self.pending_rd_atomic() >= usize::from(c.max_dest_rd_atomic) {
            return Check::Nak(NakCode::InvalidRequest, WcStatus::RemInvReqErr);
        }
        let access_err = Check::Nak(NakCode::RemoteAccessError, WcStatus::RemAccessErr);
        if !c.access.contains(AccessFlags::REMOTE_ATOMIC) {
            return access_err;
        }
        let Ok(range) = c
            .mrs
            .resolve_remote(c.pd, a.rkey, a.va, 8, AccessFlags::REMOTE_ATOMIC)
        else {
            return access_err;
        };
        let mut bytes = [0u8; 8];
        match c.mrs.load(range, &mut bytes) {
            Ok(true) => {}
            Ok(false) | Err(MrError::Memory(_)) => {
                return Check::Nak(NakCode::RemoteOperationalError, WcStatus::RemOpErr)
            }
            Err(_) => return access_err,
        }
        let orig = u64::from_le_bytes(bytes);
        let new = if pkt.bth.opcode == Opcode::RC_COMPARE_SWAP {
            if orig == a.compare {
                a.swap_add
            } else {
                orig
            }
        } else {
            orig.wrapping_add(a.swap_add)
        };
        if c.mrs.store(range, &new.to_le_bytes()) != Ok(true) {
            return Check::Nak(NakCode::RemoteOperationalError, WcStatus::RemOpErr);
        }
        let psn = pkt.bth.psn;
        if self.atomic_replay.len() >= usize::from(MAX_RD_ATOMIC) {
            self.atomic_replay.pop_front();
        }
        self.atomic_replay.push_back((psn, orig));
        self.msn = self.msn.next();
        self.epsn = psn.next();
        self.out.push_back(RespItem::AtomicAck {
            psn,
            orig,
            msn: self.msn,
            duplicate: false,
        });
        c.stats.rx_atomic_requests += 1;
        Check::Ok
    }

    fn handle_duplicate(&mut self, pkt: &RoceView<'_>, c: &mut ResponderCtx<'_>) {
        let op = pkt.bth.opcode;
        let psn = pkt.bth.psn;
        if op.is_send() || op.is_write() {
            // C9-105: acknowledge again, for the last PSN executed.
            self.push_ack(self.epsn.sub(1), c.stats);
        } else if op.is_read_request() {
            // READs are idempotent: serve the (possibly shortened) request again.
            if !self.has_room(c.stats) {
                return;
            }
            match self.read_range(pkt, c) {
                Ok((range, len)) => {
                    let npkts = len.div_ceil(u64::from(c.mtu)).max(1) as u32;
                    // A stream still queued for these PSNs restarts from the requested one
                    // instead of queueing a second copy behind it (as rxe does).
                    let existing = self.out.iter_mut().find(|i| match i {
                        RespItem::Read {
                            first_psn, npkts, ..
                        } => {
                            let d = psn.diff(*first_psn);
                            d >= 0 && (d as u32) < *npkts
                        }
                        _ => false,
                    });
                    let duplicate = match &existing {
                        Some(RespItem::Read { duplicate, .. }) => *duplicate,
                        _ => true,
                    };
                    let restart =
                        RespItem::read_from_start(psn, npkts, range, len, self.msn, duplicate);
                    match existing {
                        Some(item) => *item = restart,
                        None => self.out.push_back(restart),
                    }
                }
                Err(_) => c.stats.rx_dropped += 1,
            }
        } else if op.is_atomic() {
            match self.atomic_replay.iter().find(|(p, _)| *p == psn) {
                Some(&(_, orig)) if self.has_room(c.stats) => {
                    self.out.push_back(RespItem::AtomicAck {
                        psn,
                        orig,
                        msn: self.msn,
                        duplicate: true,
                    })
                }
                Some(_) => {}
                None => c.stats.rx_dropped += 1,
            }
        }
    }

    /// An ACK, NAK or atomic ACK at the head of the queue (control traffic).
    pub fn has_control(&self) -> bool {
        matches!(
            self.out.front(),
            Some(RespItem::Ack { .. } | RespItem::AtomicAck { .. })
        )
    }

    /// A READ response at the head of the queue (data traffic).
    pub fn has_data(&self) -> bool {
        matches!(self.out.front(), Some(RespItem::Read { .. }))
    }

    /// The next response packet (control or data, whichever is at the head), written into `o`;
    /// `false` when there is none. A READ response whose region went away since the request
    /// becomes a remote access error NAK, and [`Responder::take_fatal`] tells the QP to fail.
    pub fn next_packet(&mut self, mtu: u32, mrs: &MrTable, o: &mut Outgoing) -> bool {
        let Some(&item) = self.out.front() else {
            return false;
        };
        let ack = |msn| aeth::Repr {
            syndrome: Syndrome::Ack {
                credits: ACK_CREDITS_INVALID,
            },
            msn,
        };
        match item {
            RespItem::Ack { psn, syndrome, msn } => {
                o.reset(Opcode::RC_ACKNOWLEDGE, psn);
                o.fields.ext.aeth = Some(aeth::Repr { syndrome, msn });
                self.out.pop_front();
            }
            RespItem::AtomicAck { psn, orig, msn, .. } => {
                o.reset(Opcode::RC_ATOMIC_ACKNOWLEDGE, psn);
                o.fields.ext.aeth = Some(ack(msn));
                o.fields.ext.atomic_ack_eth = Some(atomic_ack_eth::Repr { orig });
                self.out.pop_front();
            }
            RespItem::Read {
                first_psn,
                k,
                npkts,
                range,
                len,
                msn,
                ..
            } => {
                let first = k == 0;
                let last = k + 1 >= npkts;
                let psn = first_psn.add(k);
                let skip = u64::from(k) * u64::from(mtu);
                let n = len.saturating_sub(skip).min(u64::from(mtu)) as usize;
                let piece = range.filter(|_| n > 0).map(|r| r.narrow(skip as usize, n));
                if piece.is_some_and(|r| mrs.check(r).is_err()) {
                    // Checked per packet, as rxe re-checks the MR for each response.
                    o.reset(Opcode::RC_ACKNOWLEDGE, psn);
                    o.fields.ext.aeth = Some(aeth::Repr {
                        syndrome: Syndrome::Nak(NakCode::RemoteAccessError),
                        msn,
                    });
                    self.out.pop_front();
                    self.fatal = true;
                    return true;
                }
                let opcode = match (first, last) {
                    (true, true) => Opcode::RC_RDMA_READ_RESPONSE_ONLY,
                    (true, false) => Opcode::RC_RDMA_READ_RESPONSE_FIRST,
                    (false, false) => Opcode::RC_RDMA_READ_RESPONSE_MIDDLE,
                    (false, true) => Opcode::RC_RDMA_READ_RESPONSE_LAST,
                };
                o.reset(opcode, psn);
                if first || last {
                    o.fields.ext.aeth = Some(ack(msn));
                }
                o.set_payload(match piece {
                    Some(range) => Payload::Mr { range },
                    None => Payload::None,
                });
                if last {
                    self.out.pop_front();
                } else if let Some(RespItem::Read { k, .. }) = self.out.front_mut() {
                    *k += 1;
                }
            }
        }
        true
    }
}
