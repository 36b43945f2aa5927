//! The life of an RC engine's QPs: a flow's QP numbers are held when the flow is planned
//! (so they, the UDP source ports and the ECMP paths derived from them are what they always
//! were), its sender's QP is made when the flow starts and its receiver's when the first packet
//! reaches it. The sender's QP is retired when the flow is done and the QP is idle (no frame
//! to send, no timer armed: a finished DCQCN flow's recovery timers still run out, as they
//! always did, so a run's events do not change). The receiver's is retired [`LINGER`] after
//! its last expected packet arrived (like TCP's TIME_WAIT: the sender's retransmissions after
//! a lost last ACK, which it answers, all come within its retry budget), once idle. A retired
//! sender's CQ goes back to a pool; memory regions are one per host and message size, shared
//! by its flows (they keep no bytes). Late packets for a retired QP are dropped and counted by
//! the endpoint (`drops.retired_qp`).
//!
//! Not here: what a flow posts ([`super`]).

use std::collections::VecDeque;
use std::net::IpAddr;

use roce_proto::cc::{CcConfig, Rate};
use roce_proto::connect::RcOptions;
use roce_proto::mr::MrInfo;
use roce_proto::qp::QpError;
use roce_proto::time::{Duration, Instant};
use roce_proto::verbs::{AccessFlags, AddressVector, CqHandle, Mtu, QpInit, QpState};
use serde::Serialize;

use super::{set_dscp, RcEngine, DEPTH, INT_HOPS, RECV_DEPTH};
use crate::engines::{mac_of, Recovery};
use crate::switching::frame::{bth_info, classify};

/// Where a flow's sending QP is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Life {
    /// Its number is held; the QP is made when the flow starts.
    Planned,
    /// Made, sending or waiting for its work to complete.
    Open,
    /// Done, waiting for the QP to go idle (its controller's timers to stop) to retire it.
    Closing,
    /// Retired: its counters are kept in the flow ([`Recovery`]) and the endpoint's totals.
    Retired,
}

/// The other end of a QP.
#[derive(Clone, Copy, Debug)]
pub(super) struct Peer {
    /// Its QP number.
    pub(super) qpn: u32,
    /// Its host's address.
    pub(super) ip: IpAddr,
}

/// What both ends of a flow's QP pair share.
#[derive(Clone, Copy, Debug)]
pub(super) struct QpEnds {
    /// Path MTU.
    pub(super) mtu: Mtu,
    /// Whether the receiver consumes receives (SEND, or WRITE-with-immediate of a collective).
    pub(super) consumes: bool,
    /// DSCP of the flow's packets.
    pub(super) dscp: u8,
}

/// A receiving QP whose number is held, made when its first packet arrives.
#[derive(Clone, Copy, Debug)]
pub(super) struct PlannedRx {
    peer: Peer,
    ends: QpEnds,
    /// The PSN it expects once the flow's last packet arrived, if it is ever retired.
    last: Option<u32>,
}

/// How often a host looks through its closing flows for QPs gone idle: a finished DCQCN
/// flow's timers tick every microsecond for milliseconds, and looking at every tick cost more
/// than the QPs' memory is worth. Retiring an idle QP later changes nothing it does.
const SWEEP: Duration = Duration::from_micros(100);

/// The ACK timeout of the engine's QPs (code 6: 4.096 us * 2^6).
const ACK_TIMEOUT: Duration = Duration::from_nanos(4096 << 6);

/// How long a receiver that got its flow's last packet stays before it is retired: twice the
/// sender's whole retry budget (the ACK timeout times 1 + its 7 retries), so that a sender
/// whose last ACK was lost finds it answering every retransmission.
pub const LINGER: Duration = Duration::from_nanos(ACK_TIMEOUT.as_nanos() * 8 * 2);

/// The PSN a receiver expects after a flow of `total` bytes in messages of `msg` bytes and
/// packets of `mtu` (from PSN 0); `None` for an endless flow or one whose packets could wrap
/// the 24-bit PSN (its receiver is kept).
pub(super) fn last_psn(total: Option<u64>, msg: u32, mtu: Mtu) -> Option<u32> {
    let (total, msg, mtu) = (total?, u64::from(msg), u64::from(mtu.bytes()));
    let packets = (total / msg) * msg.div_ceil(mtu) + (total % msg).div_ceil(mtu);
    u32::try_from(packets).ok().filter(|&p| p < 1 << 23)
}

/// How many QPs, CQs and regions a host made, retired and reused: live state is bounded by
/// `peak_live`, not by the flows a run has (counted, not measured: no RSS).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QpLife {
    /// QPs made (senders when their flow started, receivers at their first packet).
    pub opened: u64,
    /// QPs retired (a finished flow's sender, a receiver whose linger ended).
    pub retired: u64,
    /// QPs that exist now.
    pub live: u64,
    /// The most QPs that existed at once.
    pub peak_live: u64,
    /// Flows whose QPs are not made yet (held numbers only).
    pub planned: u64,
    /// CQs made.
    pub cqs_made: u64,
    /// Times a retired QP's CQ served a new one.
    pub cqs_reused: u64,
    /// Memory regions registered (one per message size, shared by the host's flows).
    pub regions: u64,
}

impl std::ops::AddAssign for QpLife {
    /// Sums hosts (`peak_live` too: an upper bound on the fabric's peak).
    fn add_assign(&mut self, o: QpLife) {
        self.opened += o.opened;
        self.retired += o.retired;
        self.live += o.live;
        self.peak_live += o.peak_live;
        self.planned += o.planned;
        self.cqs_made += o.cqs_made;
        self.cqs_reused += o.cqs_reused;
        self.regions += o.regions;
    }
}

/// The engine's QP bookkeeping: pooled CQs, shared regions, receivers not made yet.
#[derive(Debug, Default)]
pub(super) struct Pools {
    /// Registered discard regions by length (the host's flows share them).
    regions: Vec<(u32, MrInfo)>,
    /// CQs of retired senders that consume no receives, free for new ones.
    free_cqs: Vec<CqHandle>,
    /// The one CQ of receivers that consume no receives (nothing completes there).
    rx_cq: Option<CqHandle>,
    /// Receivers not made yet, by QP slot (QPN minus the endpoint's first).
    planned_rx: Vec<Option<PlannedRx>>,
    /// How many of `planned_rx` are set.
    awaiting: usize,
    /// Finished flows whose QP is not idle yet.
    pub(super) closing: Vec<usize>,
    /// When `closing` is looked through next (see [`SWEEP`]).
    next_sweep: Instant,
    /// Open receivers' expected PSN after their flow's last packet, by slot (`u32::MAX`: not
    /// followed).
    rx_last: Vec<u32>,
    /// How many of `rx_last` are followed.
    following: usize,
    /// Receivers that got their last packet, with when they may be retired, oldest first.
    lingering: VecDeque<(Instant, u32)>,
    pub(super) life: QpLife,
}

/// A QP's CQ capacity: its send and receive queues, twice (what `connect_rc` gives).
fn cq_capacity(consumes: bool) -> usize {
    (DEPTH + if consumes { RECV_DEPTH as usize } else { 1 }) * 2
}

impl RcEngine {
    /// The host's discard region of `len` bytes (registered once per length).
    pub(super) fn region(&mut self, len: u32) -> Result<MrInfo, roce_proto::mr::MrError> {
        if let Some(&(_, mr)) = self.pools.regions.iter().find(|(l, _)| *l == len) {
            return Ok(mr);
        }
        let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
        let mr = self.ep.reg_mr_discard(self.pd, len as usize, access)?;
        self.pools.regions.push((len, mr));
        self.pools.life.regions += 1;
        Ok(mr)
    }

    /// Makes the QP numbered `qpn` (held) and connects it to `peer` (RTS on DSCP
    /// `ends.dscp`), as `connect_rc` and the engine always did; returns its CQ.
    pub(super) fn open_qp(
        &mut self,
        qpn: u32,
        peer: Peer,
        ends: QpEnds,
    ) -> Result<CqHandle, QpError> {
        let recv = if ends.consumes { RECV_DEPTH } else { 1 };
        let pools = &mut self.pools;
        let pooled = if ends.consumes {
            None
        } else {
            pools.free_cqs.pop()
        };
        pools.life.cqs_reused += u64::from(pooled.is_some());
        let cq = match pooled {
            Some(cq) => cq,
            None => {
                pools.life.cqs_made += 1;
                self.ep.create_cq(cq_capacity(ends.consumes))
            }
        };
        self.ep
            .create_held_qp(qpn, QpInit::shared_cq(self.pd, cq, DEPTH as u32, recv))?;
        let opts = RcOptions {
            mtu: ends.mtu,
            // 4.096 us * 2^6 = 262 us: tail losses recover within a short run.
            timeout: 6,
            // Queues as deep as this engine keeps them, not verbs' 256 each.
            max_send_wr: DEPTH as u32,
            max_recv_wr: recv,
            recovery: self.recovery,
            ..RcOptions::default()
        };
        let av = AddressVector {
            remote_ip: peer.ip,
            remote_mac: mac_of(peer.ip),
            traffic_class: 0,
            hop_limit: 64,
        };
        // Both ends start at PSN 0 (`RcOptions`' a_psn and b_psn).
        for attr in opts.attrs_to_rts(peer.qpn, av, opts.b_psn, opts.a_psn) {
            self.ep.modify_qp(qpn, &attr)?;
        }
        set_dscp(&mut self.ep, qpn, peer.ip, ends.dscp)?;
        let life = &mut self.pools.life;
        life.opened += 1;
        life.live += 1;
        life.peak_live = life.peak_live.max(life.live);
        Ok(cq)
    }

    /// Holds receiver `qpn` for a flow from `peer`, made when its first packet arrives and
    /// retired [`LINGER`] after its PSN reached `last` (never when `None`).
    pub(super) fn plan_receiver(&mut self, qpn: u32, peer: Peer, ends: QpEnds, last: Option<u32>) {
        let Some(slot) = qpn.checked_sub(self.ep.config().first_qpn) else {
            return;
        };
        let slots = &mut self.pools.planned_rx;
        if slots.len() <= slot as usize {
            slots.resize(slot as usize + 1, None);
        }
        if let Some(s) = slots.get_mut(slot as usize) {
            *s = Some(PlannedRx { peer, ends, last });
            self.pools.awaiting += 1;
        }
    }

    /// The destination QP of `frame`, when a receiver waits to be made or followed.
    pub(super) fn frame_qpn(&self, frame: &[u8]) -> Option<u32> {
        if self.pools.awaiting == 0 && self.pools.following == 0 {
            return None;
        }
        let ip = classify(frame).ip?;
        Some(bth_info(frame, &ip)?.dest_qpn)
    }

    fn slot_of(&self, qpn: u32) -> usize {
        qpn.wrapping_sub(self.ep.config().first_qpn) as usize
    }

    /// Makes receiver `qpn` if it is one not made yet (its first packet arrived).
    pub(super) fn open_receiver(&mut self, qpn: u32) {
        let slot = self.slot_of(qpn);
        let Some(p) = self.pools.planned_rx.get_mut(slot).and_then(Option::take) else {
            return;
        };
        self.pools.awaiting -= 1;
        if let Some(last) = p.last {
            let followed = &mut self.pools.rx_last;
            if followed.len() <= slot {
                followed.resize(slot + 1, u32::MAX);
            }
            if let Some(l) = followed.get_mut(slot) {
                *l = last;
                self.pools.following += 1;
            }
        }
        // Receivers that consume nothing complete nothing: they share one CQ.
        let opened = match self.pools.rx_cq {
            Some(cq) => self
                .ep
                .create_held_qp(qpn, QpInit::shared_cq(self.pd, cq, DEPTH as u32, 1))
                .and_then(|()| self.connect_made(qpn, p)),
            None => self.open_qp(qpn, p.peer, p.ends).map(|cq| {
                self.pools.rx_cq = Some(cq);
            }),
        };
        if let Err(e) = opened {
            // The packet then finds no QP and is counted as such by the endpoint.
            tracing::warn!(qpn, error = %e, "receiver QP could not be made");
        }
    }

    /// A packet for receiver `qpn` was handled at `now`: once it expects the PSN after its
    /// flow's last packet, it lingers.
    pub(super) fn note_received(&mut self, now: Instant, qpn: u32) {
        let slot = self.slot_of(qpn);
        let Some(&last) = self.pools.rx_last.get(slot) else {
            return;
        };
        if last == u32::MAX
            || self
                .ep
                .qp(qpn)
                .is_none_or(|q| q.expected_psn().value() != last)
        {
            return;
        }
        if let Some(l) = self.pools.rx_last.get_mut(slot) {
            *l = u32::MAX;
        }
        self.pools.following -= 1;
        self.pools.lingering.push_back((now + LINGER, qpn));
    }

    /// Retires the receivers whose linger ended by `now`, if idle (else they linger again).
    pub(super) fn retire_lingering(&mut self, now: Instant) {
        while let Some(&(at, qpn)) = self.pools.lingering.front() {
            if at > now {
                return;
            }
            self.pools.lingering.pop_front();
            let Some(qp) = self.ep.qp(qpn) else {
                continue;
            };
            if qp.state() == QpState::Err {
                continue;
            }
            if qp.poll_timeout().is_some() || qp.has_control() || qp.has_pending_data() {
                self.pools.lingering.push_back((now + LINGER, qpn));
                continue;
            }
            if self.ep.retire_qp(qpn).is_ok() {
                let life = &mut self.pools.life;
                life.retired += 1;
                life.live = life.live.saturating_sub(1);
            }
        }
    }

    /// Connects receiver `qpn`, made on the shared CQ, as [`RcEngine::open_qp`] does.
    fn connect_made(&mut self, qpn: u32, p: PlannedRx) -> Result<(), QpError> {
        let opts = RcOptions {
            mtu: p.ends.mtu,
            timeout: 6,
            max_send_wr: DEPTH as u32,
            max_recv_wr: 1,
            recovery: self.recovery,
            ..RcOptions::default()
        };
        let av = AddressVector {
            remote_ip: p.peer.ip,
            remote_mac: mac_of(p.peer.ip),
            traffic_class: 0,
            hop_limit: 64,
        };
        for attr in opts.attrs_to_rts(p.peer.qpn, av, opts.b_psn, opts.a_psn) {
            self.ep.modify_qp(qpn, &attr)?;
        }
        set_dscp(&mut self.ep, qpn, p.peer.ip, p.ends.dscp)?;
        let life = &mut self.pools.life;
        life.opened += 1;
        life.live += 1;
        life.peak_live = life.peak_live.max(life.live);
        Ok(())
    }

    /// Makes flow `i`'s sending QP, with its controller: the flow starts.
    pub(super) fn open_flow(&mut self, i: usize) {
        let Some(f) = self.flows.get(i) else {
            return;
        };
        let (qpn, peer) = (
            f.qpn,
            Peer {
                qpn: f.dst_qpn,
                ip: f.cfg.dst_ip,
            },
        );
        let ends = QpEnds {
            mtu: Mtu::from_bytes(f.cfg.mtu as u32).unwrap_or(Mtu::Mtu1024),
            consumes: f.cfg.send || f.cfg.gate.is_some(),
            dscp: f.cfg.dscp,
        };
        // Without a controller, a workload's `rate_gbps` paces the QP at that fixed rate
        // (checked when the flow was planned).
        let fixed = match (f.cfg.cc.is_none(), f.cfg.rate_gbps) {
            (true, Some(g)) => CcConfig::new("none", Rate::from_bps_f64(g * 1e9)).ok(),
            _ => None,
        };
        let cc = f.cfg.cc.clone().or(fixed);
        let opened = self.open_qp(qpn, peer, ends).and_then(|cq| {
            if let Some(cfg) = &cc {
                self.ep.set_congestion_control(qpn, cfg.build(), 0)?;
                if cfg.uses_int() {
                    // Each slot costs 10 bytes of every data packet and of its ACK's echo.
                    self.ep.enable_int(qpn, INT_HOPS, cfg.int_units())?;
                }
            }
            self.ep.req_notify_cq(cq)?;
            Ok(cq)
        });
        let Some(f) = self.flows.get_mut(i) else {
            return;
        };
        f.life = Life::Open;
        match opened {
            Ok(cq) => {
                f.cq = Some(cq);
                let c = cq.index();
                if self.cq_flow.len() <= c {
                    self.cq_flow.resize(c + 1, usize::MAX);
                }
                if let Some(slot) = self.cq_flow.get_mut(c) {
                    *slot = i;
                }
            }
            // Its posts are refused then, and counted as the flow's errors.
            Err(e) => tracing::warn!(qpn, error = %e, "sender QP could not be made"),
        }
    }

    /// Retires finished flow `i`'s QP if it is idle; returns whether it need not be tried
    /// again (retired, or never to be: in the error state).
    pub(super) fn try_retire(&mut self, i: usize) -> bool {
        let Some(f) = self.flows.get_mut(i) else {
            return true;
        };
        let Some(qp) = self.ep.qp(f.qpn) else {
            return true;
        };
        if qp.state() == QpState::Err {
            return true;
        }
        if qp.poll_timeout().is_some() || qp.has_control() || qp.has_pending_data() {
            f.life = Life::Closing;
            return false;
        }
        let c = *qp.counters();
        f.kept = Recovery {
            retransmitted: c.retransmitted_packets,
            naks: c.naks_received(),
            timeouts: c.local_ack_timeout_err,
        };
        if self.ep.retire_qp(f.qpn).is_err() {
            return true;
        }
        f.life = Life::Retired;
        match f.cq.take() {
            Some(cq) if !(f.cfg.send || f.cfg.gate.is_some()) => self.pools.free_cqs.push(cq),
            _ => {}
        }
        let life = &mut self.pools.life;
        life.retired += 1;
        life.live = life.live.saturating_sub(1);
        true
    }

    /// Retires the closing flows whose QPs went idle (after a timer ran), at most once per
    /// [`SWEEP`].
    pub(super) fn retire_idle(&mut self, now: Instant) {
        if self.pools.closing.is_empty() || now < self.pools.next_sweep {
            return;
        }
        self.pools.next_sweep = now + SWEEP;
        let mut closing = std::mem::take(&mut self.pools.closing);
        closing.retain(|&i| !self.try_retire(i));
        self.pools.closing = closing;
    }

    /// How many QPs, CQs and regions this host made, retired and reused.
    pub fn qp_life(&self) -> QpLife {
        let planned = self
            .flows
            .iter()
            .filter(|f| f.life == Life::Planned)
            .count();
        QpLife {
            planned: (planned + self.pools.awaiting) as u64,
            ..self.pools.life
        }
    }
}
