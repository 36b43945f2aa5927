//! The requester half of an RC queue pair: the send queue, PSN assignment (24-bit wrap, READs
//! consuming one PSN per response packet), segmentation by path MTU, AckReq placement, and the
//! limits on outstanding PSNs and READ/atomic requests.
//!
//! Not here: what responses do to the send queue (see [`super::completer`]).

use std::collections::VecDeque;

use crate::psn::Psn;
use crate::time::Duration;
use crate::verbs::{SendFlags, SendWr, WcStatus, WrOpcode};
use crate::wire::opcode::Opcode;
use crate::wire::{atomic_eth, placement, reth};

use super::{Outgoing, Payload};

mod selective;
pub(crate) use selective::Selective;

/// A posted send work request and its place in PSN space.
#[derive(Clone, Debug)]
pub(crate) struct SendWqe {
    pub wr: SendWr,
    /// Message bytes (atomics: 8).
    pub len: u64,
    pub first_psn: Psn,
    /// PSNs the message occupies (request packets, or response packets for a READ).
    pub npkts: u32,
    /// READ response packets received in order so far.
    pub read_pkts: u32,
    /// A local error found when posting; reported when the WQE reaches the head.
    pub local_error: Option<WcStatus>,
    /// Receive work requests the messages posted before this one consume at the responder
    /// (SENDs and WRITEs with immediate; selective repeat's placement header carries it).
    pub recv_sn: u32,
}

impl SendWqe {
    /// PSN of the last packet (or last READ response).
    pub fn last_psn(&self) -> Psn {
        self.first_psn.add(self.npkts.saturating_sub(1))
    }
    /// `psn` lies in this WQE's PSN range.
    pub fn covers(&self, psn: Psn) -> bool {
        let d = psn.diff(self.first_psn);
        d >= 0 && (d as u32) < self.npkts
    }
}

/// Send-queue and requester state.
#[derive(Debug)]
pub(crate) struct Requester {
    pub sq: VecDeque<SendWqe>,
    pub max_send_wr: usize,
    /// PSN for the next posted WQE.
    pub next_post_psn: Psn,
    /// Index in `sq` of the WQE being transmitted.
    pub cursor: usize,
    /// Packet index within that WQE.
    pub cursor_pkt: u32,
    /// Oldest PSN not yet acknowledged.
    pub una: Psn,
    /// One past the highest PSN ever sent (retransmissions stay below it).
    pub high_psn: Psn,
    /// READ/atomic WQEs sent and not completed.
    pub rd_atomic_outstanding: u32,
    /// Packets sent since the last AckReq.
    pub since_ack_req: u32,
    /// Set AckReq on every packet: the pacer is too slow for `ack_req_interval` packets to
    /// leave well within the ACK timeout, so packets that left must not wait for later ones to
    /// be acknowledged.
    pub ack_each: bool,
    /// Waiting for the RNR timer: send nothing.
    pub rnr_wait: bool,
    /// The PSN of the current retransmission round (suppresses repeated NAK-triggered rounds).
    pub retry_psn: Option<Psn>,
    pub retry_left: u8,
    pub rnr_retry_left: u8,
    /// The receive sequence number of the next posted message.
    pub next_recv_sn: u32,
    /// Selective repeat's state, on a QP that uses it.
    pub selective: Option<Box<Selective>>,
    /// Selective repeat: losses the congestion controller hears of (recoveries that resent a
    /// packet, READ or atomic responses asked for again; go-back-N's are `packet_seq_err`).
    pub losses: u64,
}

/// Tunables of the requester.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequesterConfig {
    /// Most PSNs outstanding (sent, not acknowledged).
    pub max_outstanding_psns: u32,
    /// Set AckReq at least every this many packets inside long messages.
    pub ack_req_interval: u32,
    /// Selective repeat: how long a packet a NAK showed missing may still be on its way
    /// (reordered, not lost) before it is resent. Zero (the default) resends at once, as IRN
    /// does on its in-order fabric; a fabric that sprays packets over paths of different
    /// delays wants about a quarter of the round trip (RACK's `min_rtt / 4`, RFC 8985).
    pub reorder_window: Duration,
}

impl Default for RequesterConfig {
    fn default() -> Self {
        RequesterConfig {
            max_outstanding_psns: 512,
            ack_req_interval: 32,
            reorder_window: Duration::ZERO,
        }
    }
}

impl Requester {
    pub fn new(max_send_wr: usize) -> Self {
        Requester {
            sq: VecDeque::new(),
            max_send_wr,
            next_post_psn: Psn::new(0),
            cursor: 0,
            cursor_pkt: 0,
            una: Psn::new(0),
            high_psn: Psn::new(0),
            rd_atomic_outstanding: 0,
            since_ack_req: 0,
            ack_each: false,
            rnr_wait: false,
            retry_psn: None,
            retry_left: 0,
            rnr_retry_left: 0,
            next_recv_sn: 0,
            selective: None,
            losses: 0,
        }
    }

    /// Starts PSN space at `psn` (modify to RTS).
    pub fn set_sq_psn(&mut self, psn: Psn) {
        self.next_post_psn = psn;
        self.una = psn;
        self.high_psn = psn;
    }

    /// Queues a WQE, assigning its PSNs.
    pub fn push(&mut self, wr: SendWr, len: u64, mtu: u32, local_error: Option<WcStatus>) {
        let npkts = if wr.opcode.is_local() {
            0
        } else if wr.opcode.is_atomic() {
            1
        } else {
            (len.div_ceil(u64::from(mtu)).max(1)) as u32
        };
        let first_psn = self.next_post_psn;
        self.next_post_psn = first_psn.add(npkts);
        let recv_sn = self.next_recv_sn;
        if wr.opcode.consumes_receive() {
            self.next_recv_sn = recv_sn.wrapping_add(1);
        }
        self.sq.push_back(SendWqe {
            wr,
            len,
            first_psn,
            npkts,
            read_pkts: 0,
            local_error,
            recv_sn,
        });
    }

    /// Moves the transmit cursor back to `psn` (go-back-N). Returns `false` when `psn` is not in
    /// any sent WQE.
    pub fn rewind(&mut self, psn: Psn) -> bool {
        let Some(i) = self.sq.iter().position(|w| w.covers(psn)) else {
            return false;
        };
        let k = psn.diff(self.sq[i].first_psn) as u32;
        // A READ whose (re)request is still unsent may skip ahead to the first missing response.
        let read_ahead = i == self.cursor && self.sq[i].wr.opcode.is_read_or_atomic();
        if i > self.cursor || (i == self.cursor && k > self.cursor_pkt && !read_ahead) {
            return false;
        }
        self.set_cursor(i, k);
        self.since_ack_req = 0;
        // The cursor resends what the responder does not hold from here on.
        if let Some(s) = self.selective.as_deref_mut() {
            s.end_recovery();
        }
        true
    }

    /// Puts the transmit cursor at packet `k` of WQE `i` (the READs/atomics before it count as
    /// outstanding).
    fn set_cursor(&mut self, i: usize, k: u32) {
        self.cursor = i;
        self.cursor_pkt = k;
        self.rd_atomic_outstanding = self
            .sq
            .iter()
            .take(i)
            .filter(|w| w.wr.opcode.is_read_or_atomic())
            .count() as u32;
    }

    /// WQE `index` cannot be sent (its memory went away): it gets `status` as its local error,
    /// sending stops there (as for an error found when posting), and it fails the QP once it is
    /// the oldest.
    pub fn stop_at(&mut self, index: usize, status: WcStatus) {
        let Some(w) = self.sq.get_mut(index) else {
            return;
        };
        w.local_error = Some(status);
        if index <= self.cursor {
            self.set_cursor(index, 0);
        }
    }

    /// The next request packet, written into `o`, if the window, fences and limits allow one
    /// (`false` otherwise); advances the cursor. Under selective repeat, a packet to resend goes
    /// first, and the cursor passes over packets the responder holds.
    pub fn next_packet(
        &mut self,
        mtu: u32,
        max_rd_atomic: u8,
        cfg: &RequesterConfig,
        o: &mut Outgoing,
    ) -> bool {
        let rerequest = self.rerequest_due();
        self.rerequested();
        if let Some((i, k, psn)) = rerequest.or_else(|| self.resend_candidate()) {
            self.write_packet(i, k, psn, mtu, true, o);
            if rerequest.is_none() {
                self.resent(psn);
            }
            o.retransmission = true;
            return true;
        }
        self.skip_held();
        let Some((psn, in_flight)) = self.ready(max_rd_atomic, cfg) else {
            return false;
        };
        let Some(w) = self.sq.get(self.cursor) else {
            return false;
        };
        let rd_atomic = w.wr.opcode.is_read_or_atomic();
        let k = self.cursor_pkt;
        let last = k + 1 >= w.npkts;
        // A READ request covers the rest of the message's PSNs in one packet.
        let psns = if rd_atomic { w.npkts - k } else { 1 };
        let ack_req = last
            || self.ack_each
            || self.since_ack_req + 1 >= cfg.ack_req_interval
            || in_flight + 1 >= self.outstanding_cap(cfg);
        self.write_packet(self.cursor, k, psn, mtu, ack_req, o);
        let retransmission = psn.before(self.high_psn);
        let end = psn.add(psns);
        if end.after(self.high_psn) {
            self.high_psn = end;
        }
        if rd_atomic || last {
            self.cursor += 1;
            self.cursor_pkt = 0;
        } else {
            self.cursor_pkt += 1;
        }
        if rd_atomic {
            self.rd_atomic_outstanding += 1;
        }
        self.since_ack_req = if o.fields.ack_req {
            0
        } else {
            self.since_ack_req + 1
        };
        o.retransmission = retransmission;
        true
    }

    /// Writes packet `k` (PSN `psn`) of send WQE `i` into `o`; READ and atomic requests always
    /// ask for their response, others when `ack_req`.
    fn write_packet(&self, i: usize, k: u32, psn: Psn, mtu: u32, ack_req: bool, o: &mut Outgoing) {
        let Some(w) = self.sq.get(i) else {
            return;
        };
        let mtu64 = u64::from(mtu);
        let offset = u64::from(k) * mtu64;
        let last = k + 1 >= w.npkts;
        let first = k == 0;
        let mut payload = Payload::None;
        let mut ack_req = ack_req;
        let mut placement = placement::Repr {
            msg_psn: w.first_psn.value(),
            recv_sn: w.recv_sn,
            dma_len: w.len as u32,
            ..placement::Repr::default()
        };
        o.reset(Opcode::RC_SEND_ONLY, psn);
        let ext = &mut o.fields.ext;
        let opcode = match w.wr.opcode {
            WrOpcode::Send | WrOpcode::SendWithImm { .. } => {
                let imm = match w.wr.opcode {
                    WrOpcode::SendWithImm { imm } => Some(imm),
                    _ => None,
                };
                if last {
                    ext.immdt = imm;
                }
                payload = sgl_payload(w, i, offset, mtu64);
                Opcode::message_packet(Opcode::RC_SEND_FIRST, first, last, imm.is_some())
            }
            WrOpcode::SendWithInv { rkey } => {
                if last {
                    ext.ieth = Some(rkey);
                }
                payload = sgl_payload(w, i, offset, mtu64);
                match (first, last) {
                    (true, true) => Opcode::RC_SEND_ONLY_WITH_INVALIDATE,
                    (true, false) => Opcode::RC_SEND_FIRST,
                    (false, false) => Opcode::RC_SEND_MIDDLE,
                    (false, true) => Opcode::RC_SEND_LAST_WITH_INVALIDATE,
                }
            }
            // Never at the cursor when sending: `ready` stops before it.
            WrOpcode::LocalInv { .. } => return,
            WrOpcode::RdmaWrite { remote_addr, rkey }
            | WrOpcode::RdmaWriteWithImm {
                remote_addr, rkey, ..
            } => {
                let imm = match w.wr.opcode {
                    WrOpcode::RdmaWriteWithImm { imm, .. } => Some(imm),
                    _ => None,
                };
                if first {
                    ext.reth = Some(reth::Repr {
                        va: remote_addr,
                        rkey,
                        dma_len: w.len as u32,
                    });
                }
                if last {
                    ext.immdt = imm;
                }
                placement.va = remote_addr;
                placement.rkey = rkey;
                payload = sgl_payload(w, i, offset, mtu64);
                Opcode::message_packet(Opcode::RC_RDMA_WRITE_FIRST, first, last, imm.is_some())
            }
            WrOpcode::RdmaRead { remote_addr, rkey } => {
                ext.reth = Some(reth::Repr {
                    va: remote_addr.wrapping_add(offset),
                    rkey,
                    dma_len: w.len.saturating_sub(offset) as u32,
                });
                ack_req = true;
                Opcode::RC_RDMA_READ_REQUEST
            }
            WrOpcode::AtomicCmpAndSwp {
                remote_addr,
                rkey,
                compare,
                swap,
            } => {
                ext.atomic_eth = Some(atomic_eth::Repr {
                    va: remote_addr,
                    rkey,
                    swap_add: swap,
                    compare,
                });
                ack_req = true;
                Opcode::RC_COMPARE_SWAP
            }
            WrOpcode::AtomicFetchAndAdd {
                remote_addr,
                rkey,
                add,
            } => {
                ext.atomic_eth = Some(atomic_eth::Repr {
                    va: remote_addr,
                    rkey,
                    swap_add: add,
                    compare: 0,
                });
                ack_req = true;
                Opcode::RC_FETCH_ADD
            }
        };
        let f = &mut o.fields;
        f.opcode = opcode;
        f.ack_req = ack_req;
        f.solicited = last && w.wr.flags.contains(SendFlags::SOLICITED);
        if self.selective.is_some() && (opcode.is_send() || opcode.is_write()) {
            o.placement = Some(placement);
        }
        o.set_payload(payload);
    }

    /// The PSN and in-flight count of the next packet, when the window, fences and READ/atomic
    /// limits allow one now.
    pub fn ready(&self, max_rd_atomic: u8, cfg: &RequesterConfig) -> Option<(Psn, u32)> {
        if self.rnr_wait {
            return None;
        }
        // A resend takes the place of a packet the network lost: no window holds it back.
        if let Some((_, _, psn)) = self.rerequest_due().or_else(|| self.resend_candidate()) {
            return Some((psn, 0));
        }
        let w = self.sq.get(self.cursor)?;
        // A local operation runs when it is the oldest (see `run_local_ops`); nothing after it
        // starts before.
        if w.local_error.is_some() || w.wr.opcode.is_local() {
            return None;
        }
        let psn = w.first_psn.add(self.cursor_pkt);
        let in_flight = psn.diff(self.una).max(0) as u32;
        if in_flight >= self.outstanding_cap(cfg) {
            return None;
        }
        let rd_atomic = w.wr.opcode.is_read_or_atomic();
        if rd_atomic && self.rd_atomic_outstanding >= u32::from(max_rd_atomic.max(1)) {
            return None;
        }
        let fenced = w.wr.flags.contains(SendFlags::FENCE)
            && self.cursor_pkt == 0
            && self.rd_atomic_outstanding > 0;
        (!fenced).then_some((psn, in_flight))
    }
}

/// The payload of the packet at `offset` of WQE `w`, which sits at `index` in the send queue.
/// The opcode of a packet of a SEND or RDMA WRITE message (`family` is its First opcode): IBA
/// numbers both families alike, First, Middle, Last, Last with Immediate, Only, Only with
/// Immediate.
fn sgl_payload(w: &SendWqe, index: usize, offset: u64, mtu: u64) -> Payload {
    let len = w.len.saturating_sub(offset).min(mtu) as usize;
    if len == 0 {
        return Payload::None;
    }
    Payload::Wqe {
        wqe: index,
        offset,
        len,
    }
}
