//! The demo's RC flows and the application on each host that drives them: every flow moves data
//! from a sender to the receiver `r`, so all of it crosses the bottleneck. WRITE and SEND are
//! posted by the sender; READ is posted by `r`, which reads from the sender's memory, so the READ
//! responses are the data and the sender's responder paces them with the flow's congestion
//! control. Every message is checked byte for byte at its destination.
//!
//! Not here: ports, the switch, the polling loop (`super`).

use anyhow::Context;

use roce::payload::Payload;
use roce::stats::StatsReport;
use roce_dpdk::clock::{Clock, MonotonicClock};
use roce_proto::cc::{CcConfig, CcMetrics};
use roce_proto::connect::{connect_rc, RcOptions};
use roce_proto::endpoint::Endpoint;
use roce_proto::mr::MrInfo;
use roce_proto::time::Instant;
use roce_proto::verbs::{AccessFlags, CqHandle, Mtu, RecvWr, SendWr, Sge, WcStatus, WrOpcode};

use super::Host;
use crate::cli::ops::Op;

/// Pacer burst allowance per QP.
const PACER_BURST: u64 = 4 * 1024;

/// One RC flow: data from a QP on a sender to its peer QP on the receiver.
#[derive(Clone)]
pub(super) struct Flow {
    pub op: Op,
    /// Host index of the sender (1..).
    pub sender: usize,
    /// The sender's QP (paced: it sends the data, as requester or as READ responder).
    pub src_qpn: u32,
    src_cq: CqHandle,
    /// The receiver's QP.
    pub dst_qpn: u32,
    dst_cq: CqHandle,
    /// Data source, on the sender.
    src: MrInfo,
    /// Data destination, on the receiver.
    dst: MrInfo,
    pub payload: Payload,
    pub posted: u64,
    pub completed: u64,
    recv_posted: u64,
    pub recv_done: u64,
    pub verified: u64,
    pub last_done: Option<Instant>,
    pub errors: Vec<String>,
    /// Messages outstanding at most (the slots of its buffers, or half of them when a WRITE is
    /// verified by another lcore after its completion).
    pub window: u64,
}

impl Flow {
    /// The flow has nothing outstanding.
    pub fn finished(&self) -> bool {
        self.completed >= self.posted
            && (!self.op.consumes_recv() || self.recv_done >= self.completed)
    }

    /// Buffer slots (messages) of its source region.
    pub(super) fn slots(&self) -> u64 {
        self.src.length / (self.payload.len() as u64).max(1)
    }
}

/// One flow per sender and operation; `hosts[0]` is the receiver, the rest are senders. With
/// `spare`, buffers have twice the slots the window needs (the other lcore's verification of a
/// WRITE may lag its completion by a window).
#[allow(clippy::too_many_arguments)]
pub(super) fn connect(
    hosts: &mut [Host],
    ops: &[Op],
    size: u32,
    depth: u32,
    mtu: Mtu,
    cc: &CcConfig,
    seed: u64,
    spare: bool,
) -> anyhow::Result<Vec<Flow>> {
    let opts = RcOptions {
        mtu,
        max_send_wr: depth,
        max_recv_wr: depth * 2,
        // 4.096 us * 2^14 = 67 ms: longer than a window takes at DCQCN's lowest rate.
        timeout: 14,
        ..RcOptions::default()
    };
    let (receiver, senders) = hosts
        .split_first_mut()
        .context("the demo needs a receiver")?;
    let receiver = &mut receiver.ep;
    let span = size as usize * depth as usize * if spare { 2 } else { 1 };
    let mut flows = Vec::new();
    for (s, sender) in senders.iter_mut().enumerate() {
        let sender = &mut sender.ep;
        for &op in ops {
            let (a, b) = connect_rc(sender, receiver, &opts).context("connecting a QP pair")?;
            let src = sender.reg_mr(
                a.pd,
                span,
                AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ,
            );
            let dst_len = if op == Op::Send { span * 2 } else { span };
            let dst = receiver.reg_mr(
                b.pd,
                dst_len,
                AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE,
            );
            let id = flows.len() as u32;
            let payload = Payload::new(size as usize, id, seed);
            if op == Op::Read {
                // READ sources: slot k holds message k for good.
                if let Some(mr) = sender.mr_mut(src.lkey) {
                    for (k, slot) in mr.bytes_mut().chunks_mut(size as usize).enumerate() {
                        payload.fill(k as u64, slot);
                    }
                }
            }
            sender
                .set_congestion_control(a.qpn, cc.build(), PACER_BURST)
                .context("installing congestion control")?;
            flows.push(Flow {
                op,
                sender: s + 1,
                src_qpn: a.qpn,
                src_cq: a.cq,
                dst_qpn: b.qpn,
                dst_cq: b.cq,
                src,
                dst,
                payload,
                posted: 0,
                completed: 0,
                recv_posted: 0,
                recv_done: 0,
                verified: 0,
                last_done: None,
                errors: Vec::new(),
                window: u64::from(depth),
            });
        }
    }
    Ok(flows)
}

fn slot_of(mr: &MrInfo, n: u64, size: u64, slots: u64) -> (u64, usize) {
    let off = (n % slots.max(1)) * size;
    (mr.addr + off, off as usize)
}

/// The `size` bytes at `off` in region `mr` of `ep`.
fn slot_bytes<'a>(ep: &'a Endpoint, mr: &MrInfo, off: usize, size: u64) -> Option<&'a [u8]> {
    ep.mr(mr.lkey)?.bytes().get(off..off + size as usize)
}

/// The application on host `i` after its loop iteration: post work, reap completions, verify.
pub(super) fn drive(
    i: usize,
    hosts: &mut [Host],
    flows: &mut [Flow],
    posting: bool,
    scratch: &mut Vec<u8>,
    clock: &MonotonicClock,
) {
    let Some((receiver, senders)) = hosts.split_first_mut() else {
        return;
    };
    let receiver = &mut receiver.ep;
    for f in flows.iter_mut() {
        let Some(sender) = senders.get_mut(f.sender.wrapping_sub(1)) else {
            continue;
        };
        let sender = &mut sender.ep;
        match (i, f.op) {
            (0, op) if op.consumes_recv() => receive(f, receiver, scratch),
            (0, Op::Read) => request(f, receiver, Some(sender), posting, scratch, clock.now()),
            (0, _) | (_, Op::Read) => {}
            (i, _) if i == f.sender => {
                request(f, sender, Some(receiver), posting, scratch, clock.now())
            }
            _ => {}
        }
    }
}

/// The receiver of a SEND flow: keep receives posted, verify what they got.
pub(super) fn receive(f: &mut Flow, receiver: &mut Endpoint, scratch: &mut Vec<u8>) {
    let size = f.payload.len() as u64;
    let rslots = f.slots() * 2;
    while let Some(wc) = receiver.poll_cq_one(f.dst_cq) {
        let n = f.recv_done;
        f.recv_done += 1;
        let (_, off) = slot_of(&f.dst, n, size, rslots);
        let got = slot_bytes(receiver, &f.dst, off, size);
        if wc.status != WcStatus::Success || wc.wr_id != n {
            push_err(
                &mut f.errors,
                format!("receive {n}: {:?} (wr {})", wc.status, wc.wr_id),
            );
        } else if got.is_some_and(|g| f.payload.matches(n, g, scratch)) {
            f.verified += 1;
        } else {
            push_err(
                &mut f.errors,
                format!("SEND message {n} arrived with wrong bytes"),
            );
        }
    }
    while f.recv_posted < f.recv_done + rslots {
        let n = f.recv_posted;
        let (addr, _) = slot_of(&f.dst, n, size, rslots);
        let sge = Sge {
            addr,
            length: size as u32,
            lkey: f.dst.lkey,
        };
        if receiver.post_recv(f.dst_qpn, RecvWr::new(n, sge)).is_err() {
            break;
        }
        f.recv_posted += 1;
    }
}

/// The requester of a flow (the sender for WRITE/SEND, the receiver for READ) and `peer`, the
/// other end: reap and verify completions, keep `f.window` messages outstanding while
/// `posting`. Without `peer` (it runs on another lcore) a WRITE completes unverified: the
/// caller has it verified there ([`verify_write`]).
pub(super) fn request(
    f: &mut Flow,
    req: &mut Endpoint,
    peer: Option<&Endpoint>,
    posting: bool,
    scratch: &mut Vec<u8>,
    now: Instant,
) {
    let size = f.payload.len() as u64;
    let depth = f.slots();
    let (qpn, cq) = match f.op {
        Op::Read => (f.dst_qpn, f.dst_cq),
        _ => (f.src_qpn, f.src_cq),
    };
    while let Some(wc) = req.poll_cq_one(cq) {
        let n = f.completed;
        f.completed += 1;
        if wc.status != WcStatus::Success || wc.wr_id != n {
            push_err(
                &mut f.errors,
                format!("message {n}: {:?} (wr {})", wc.status, wc.wr_id),
            );
            continue;
        }
        f.last_done = Some(now);
        let (_, off) = slot_of(&f.dst, n, size, depth);
        let ok = match f.op {
            Op::Read => slot_bytes(req, &f.dst, off, size)
                .is_some_and(|g| f.payload.matches(n % depth, g, scratch)),
            Op::Send => continue,
            _ => match peer {
                Some(peer) => slot_bytes(peer, &f.dst, off, size)
                    .is_some_and(|g| f.payload.matches(n, g, scratch)),
                None => continue,
            },
        };
        if ok {
            f.verified += 1;
        } else {
            push_err(
                &mut f.errors,
                format!("{} message {n} has wrong bytes at its destination", f.op),
            );
        }
    }
    while posting && f.errors.is_empty() && f.posted < f.completed + f.window {
        let n = f.posted;
        let (src_addr, src_off) = slot_of(&f.src, n, size, depth);
        let (dst_addr, dst_off) = slot_of(&f.dst, n, size, depth);
        let (opcode, sge) = if f.op == Op::Read {
            // Poisoned first, so a READ that wrote nothing cannot pass.
            if let Some(slot) = req
                .mr_mut(f.dst.lkey)
                .and_then(|m| m.bytes_mut().get_mut(dst_off..dst_off + size as usize))
            {
                slot.fill(0);
            }
            let read = WrOpcode::RdmaRead {
                remote_addr: src_addr,
                rkey: f.src.rkey,
            };
            (read, (dst_addr, f.dst.lkey))
        } else {
            if let Some(slot) = req
                .mr_mut(f.src.lkey)
                .and_then(|m| m.bytes_mut().get_mut(src_off..src_off + size as usize))
            {
                f.payload.fill(n, slot);
            }
            let op = match f.op {
                Op::Send => WrOpcode::Send,
                _ => WrOpcode::RdmaWrite {
                    remote_addr: dst_addr,
                    rkey: f.dst.rkey,
                },
            };
            (op, (src_addr, f.src.lkey))
        };
        let sge = Sge {
            addr: sge.0,
            length: size as u32,
            lkey: sge.1,
        };
        if let Err(e) = req.post_send(qpn, SendWr::new(n, opcode, sge)) {
            push_err(&mut f.errors, format!("post_send: {e}"));
            break;
        }
        f.posted += 1;
    }
}

/// Counters per port and per QP of the flows' QPs; the controllers' `rp_cnp_ignored` (CNPs a
/// pending cut absorbed) added to the senders' QPs and ports.
pub(super) fn stats(hosts: &[Eps], flows: &[Flow]) -> StatsReport {
    let mut report = StatsReport::default();
    for (i, &(name, ep)) in hosts.iter().enumerate() {
        let qpns = flows.iter().filter_map(|f| match i {
            0 => Some(f.dst_qpn),
            i if i == f.sender => Some(f.src_qpn),
            _ => None,
        });
        report.add_endpoint(name, ep, qpns);
        let ignored: u64 = flows
            .iter()
            .filter(|f| f.sender == i)
            .map(|f| {
                let n = cc_metrics(hosts, f).rp_cnp_ignored;
                let link = format!("{name}/1");
                if let Some(q) = report
                    .qps
                    .iter_mut()
                    .find(|q| q.link == link && q.lqpn == f.src_qpn)
                {
                    q.counters.rp_cnp_ignored = n;
                }
                n
            })
            .sum();
        if let Some(p) = report.ports.last_mut() {
            p.counters.rp_cnp_ignored = ignored;
        }
    }
    report
}

/// Checks WRITE message `n` of `f` in the receiver's memory (the sender saw it complete).
pub(super) fn verify_write(f: &mut Flow, receiver: &Endpoint, n: u64, scratch: &mut Vec<u8>) {
    let size = f.payload.len() as u64;
    let (_, off) = slot_of(&f.dst, n, size, f.slots());
    if slot_bytes(receiver, &f.dst, off, size).is_some_and(|g| f.payload.matches(n, g, scratch)) {
        f.verified += 1;
    } else {
        push_err(
            &mut f.errors,
            format!("{} message {n} has wrong bytes at its destination", f.op),
        );
    }
}

fn push_err(errors: &mut Vec<String>, e: String) {
    if errors.len() < 8 {
        errors.push(e);
    }
}

/// The congestion controller's state of `f`'s sending QP, read from its endpoint.
pub fn cc_metrics(hosts: &[Eps], f: &Flow) -> CcMetrics {
    hosts
        .get(f.sender)
        .and_then(|(_, ep)| ep.cc_metrics(f.src_qpn))
        .unwrap_or_default()
}

/// A host as the reports read it: its name and its endpoint.
pub(super) type Eps<'a> = (&'a str, &'a Endpoint);

/// What a run leaves: the hosts' names and endpoints, and the flows as they ended.
pub(super) type Ended = (Vec<(String, Endpoint)>, Vec<Flow>);
