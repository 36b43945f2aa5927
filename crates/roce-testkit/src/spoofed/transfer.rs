//! The honest side of the spoofed-peer tests: endpoint A posting numbered SENDs to endpoint B,
//! B keeping its receive queue full, and a ledger of what was sent on the wire, what A
//! completed and on the strength of which frame, and what arrived intact at B.
//!
//! Every message starts with its index and carries a pattern of it, so B tells A's messages
//! from forged ones and sees which are missing.

use std::net::Ipv4Addr;

use roce_proto::connect::{connect_rc, RcOptions, RcSide};
use roce_proto::counters::QpCounters;
use roce_proto::endpoint::{Endpoint, EndpointConfig};
use roce_proto::mr::MrInfo;
use roce_proto::psn::Psn;
use roce_proto::verbs::{AccessFlags, QpState, RecvWr, SendWr, Sge, WcStatus, WrOpcode};
use roce_proto::wire::EthernetAddress;

const MAC_A: EthernetAddress = EthernetAddress([0x52, 0x54, 0, 0x12, 0, 0x11]);
const MAC_B: EthernetAddress = EthernetAddress([0x52, 0x54, 0, 0x12, 0, 0x12]);
const IP_A: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 11);
const IP_B: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 12);

/// Work requests in flight per queue (A's send queue, B's receive queue).
pub const DEPTH: usize = 128;
/// Bytes of each message slot (messages are 4..=SLOT bytes).
pub const SLOT: usize = 2600;

/// The two endpoints, their QPs and the ledger.
pub struct Transfer {
    /// Endpoint A, the requester.
    pub a: Endpoint,
    /// Endpoint B, the responder.
    pub b: Endpoint,
    /// A's QP.
    pub sa: RcSide,
    /// B's QP.
    pub sb: RcSide,
    send_mr: MrInfo,
    recv_mr: MrInfo,
    posted: usize,
    lens: Vec<usize>,
    /// PSN offset (from A's first PSN) of each message's last packet.
    last_offset: Vec<u64>,
    a_psn: Psn,
    /// One past the highest PSN offset A put on the wire itself.
    sent_through: u64,
    /// A's completion of each message, and whether a made-up frame brought it.
    done: Vec<Option<(WcStatus, bool)>>,
    received: Vec<bool>,
    /// The next message B may receive (they arrive in order).
    next_rx: usize,
    /// Receives that completed with bytes A never sent.
    pub foreign_rx: u64,
    /// PSN offsets B's expected PSN moved across on a made-up request (A's messages there
    /// never existed for B).
    forged_at: Vec<(u64, u64)>,
}

fn pattern(k: usize, i: usize) -> u8 {
    (k.wrapping_mul(31).wrapping_add(i * 7) % 251) as u8 + 1
}

impl Transfer {
    /// Two endpoints connected with `o`, `lens.len()` messages of those lengths to send.
    pub fn new(seed: u64, o: &RcOptions, lens: Vec<usize>) -> Result<Transfer, String> {
        let ep = |mac, ip| {
            Endpoint::new(EndpointConfig {
                key_seed: Some(seed),
                ..EndpointConfig::ipv4(mac, ip)
            })
        };
        let (mut a, mut b) = (ep(MAC_A, IP_A), ep(MAC_B, IP_B));
        let (sa, sb) = connect_rc(&mut a, &mut b, o).map_err(|e| e.to_string())?;
        let send_mr = a.reg_mr(sa.pd, DEPTH * SLOT, AccessFlags::LOCAL_WRITE);
        let recv_mr = b.reg_mr(sb.pd, DEPTH * SLOT, AccessFlags::LOCAL_WRITE);
        let mtu = o.mtu.bytes() as usize;
        let mut end = 0u64;
        let last_offset = lens
            .iter()
            .map(|&n| {
                end += n.div_ceil(mtu).max(1) as u64;
                end - 1
            })
            .collect();
        let sends = lens.len();
        let mut t = Transfer {
            a,
            b,
            sa,
            sb,
            send_mr,
            recv_mr,
            posted: 0,
            lens,
            last_offset,
            a_psn: o.a_psn,
            sent_through: 0,
            done: vec![None; sends],
            received: vec![false; sends],
            next_rx: 0,
            foreign_rx: 0,
            forged_at: Vec::new(),
        };
        for slot in 0..DEPTH {
            t.post_recv(slot)?;
        }
        Ok(t)
    }

    /// Messages to send.
    pub fn sends(&self) -> usize {
        self.lens.len()
    }

    fn offset(&self, psn: Psn) -> u64 {
        u64::from(psn.sub(self.a_psn.value()).value())
    }

    /// A put a request with `psn` on the wire.
    pub fn note_sent(&mut self, psn: Psn) {
        self.sent_through = self.sent_through.max(self.offset(psn) + 1);
    }

    /// A made-up request moved B's expected PSN from `before` to `after`.
    pub fn note_forged_executed(&mut self, before: Psn, after: Psn) {
        let from = self.offset(before);
        let to = from + u64::from(after.sub(before.value()).value());
        self.forged_at.push((from, to));
    }

    /// B's expected PSN.
    pub fn b_expected(&self) -> Option<Psn> {
        self.b.qp(self.sb.qpn).map(|q| q.expected_psn())
    }

    fn post_recv(&mut self, slot: usize) -> Result<(), String> {
        let sge = Sge {
            addr: self.recv_mr.addr + (slot * SLOT) as u64,
            length: SLOT as u32,
            lkey: self.recv_mr.lkey,
        };
        self.b
            .post_recv(self.sb.qpn, RecvWr::new(slot as u64, sge))
            .map_err(|e| format!("post_recv: {e}"))
    }

    /// Takes A's completions; `made_up` when the frame just handled was the attacker's. A
    /// message completes successfully only once A has sent all of it.
    pub fn poll_a(&mut self, made_up: bool) -> Result<(), String> {
        while let Some(wc) = self.a.poll_cq_one(self.sa.cq) {
            let k = wc.wr_id as usize;
            let last = self.last_offset.get(k).copied().unwrap_or(u64::MAX);
            if wc.status == WcStatus::Success && last >= self.sent_through {
                return Err(format!(
                    "A completed SEND {k} (last PSN offset {last}) but has sent only {} PSNs",
                    self.sent_through
                ));
            }
            match self.done.get_mut(k) {
                Some(d @ None) => *d = Some((wc.status, made_up)),
                _ => return Err(format!("A: a completion for no outstanding WR: {wc:?}")),
            }
        }
        Ok(())
    }

    /// A posts while its send queue has room; B checks what arrived and reposts.
    pub fn run_verbs(&mut self) -> Result<(), String> {
        self.poll_a(false)?;
        self.post_until(self.sends())?;
        self.poll_b()
    }

    /// A posts messages until `count` are posted (or its send queue is full).
    pub fn post_until(&mut self, count: usize) -> Result<(), String> {
        while self.posted < count.min(self.sends()) && self.posted - self.completed() < DEPTH {
            self.post_send()?;
        }
        Ok(())
    }

    /// B checks what arrived and reposts its receives.
    pub fn poll_b(&mut self) -> Result<(), String> {
        while let Some(wc) = self.b.poll_cq_one(self.sb.cq) {
            if wc.status != WcStatus::Success {
                continue;
            }
            let slot = wc.wr_id as usize;
            let at = slot * SLOT;
            let m = self.b.mr(self.recv_mr.lkey).ok_or("B's region is gone")?;
            let got = &m.bytes()[at..at + wc.byte_len as usize];
            let k = got
                .get(..4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map_or(usize::MAX, |b| u32::from_le_bytes(b) as usize);
            let intact = k >= self.next_rx
                && k < self.sends()
                && got.len() == self.lens[k]
                && got
                    .iter()
                    .enumerate()
                    .skip(4)
                    .all(|(i, &b)| b == pattern(k, i));
            if intact {
                self.received[k] = true;
                self.next_rx = k + 1;
            } else {
                self.foreign_rx += 1;
            }
            if self.state_b() != Some(QpState::Err) {
                self.post_recv(slot)?;
            }
        }
        Ok(())
    }

    fn post_send(&mut self) -> Result<(), String> {
        let k = self.posted;
        let (slot, len) = (k % DEPTH, self.lens[k]);
        let at = slot * SLOT;
        let m = self
            .a
            .mr_mut(self.send_mr.lkey)
            .ok_or("A's region is gone")?;
        let bytes = &mut m.bytes_mut()[at..at + len];
        bytes[..4].copy_from_slice(&(k as u32).to_le_bytes());
        for (i, b) in bytes.iter_mut().enumerate().skip(4) {
            *b = pattern(k, i);
        }
        let sge = Sge {
            addr: self.send_mr.addr + at as u64,
            length: len as u32,
            lkey: self.send_mr.lkey,
        };
        self.a
            .post_send(self.sa.qpn, SendWr::new(k as u64, WrOpcode::Send, sge))
            .map_err(|e| format!("post_send: {e}"))?;
        self.posted += 1;
        Ok(())
    }

    /// A's work requests completed so far.
    pub fn completed(&self) -> usize {
        self.done.iter().filter(|d| d.is_some()).count()
    }

    /// Messages intact at B.
    pub fn received(&self) -> usize {
        self.received.iter().filter(|r| **r).count()
    }

    fn state_a(&self) -> Option<QpState> {
        self.a.qp(self.sa.qpn).map(|q| q.state())
    }

    fn state_b(&self) -> Option<QpState> {
        self.b.qp(self.sb.qpn).map(|q| q.state())
    }

    /// Both QPs' states.
    pub fn states(&self) -> (Option<QpState>, Option<QpState>) {
        (self.state_a(), self.state_b())
    }

    /// Both QPs' counters.
    pub fn counters(&self) -> (QpCounters, QpCounters) {
        let c = |ep: &Endpoint, s: &RcSide| ep.qp(s.qpn).map(|q| *q.counters()).unwrap_or_default();
        (c(&self.a, &self.sa), c(&self.b, &self.sb))
    }

    /// Whether message `k`'s absence at B has an excuse no transport could avoid: A completed
    /// it on the strength of a made-up ACK (one for a PSN A did send, so indistinguishable
    /// from B's), or B executed a made-up request at one of its PSNs.
    fn excused(&self, k: usize) -> bool {
        let first = if k == 0 {
            0
        } else {
            self.last_offset[k - 1] + 1
        };
        let by_forged_ack = matches!(self.done[k], Some((_, true)));
        let last = self.last_offset[k];
        by_forged_ack
            || self
                .forged_at
                .iter()
                .any(|&(from, to)| from <= last && first < to)
    }

    /// `Ok(None)` while the run is undecided; then whether every message arrived, or the
    /// transfer ended with a QP in ERR; `Err` when it ended in a way it never may.
    pub fn outcome(&self) -> Result<Option<bool>, String> {
        if self.completed() < self.sends() {
            return Ok(None);
        }
        let (a, b) = self.states();
        let a_err = a == Some(QpState::Err);
        if let Some(i) = self
            .done
            .iter()
            .position(|d| !matches!(d, Some((WcStatus::Success, _))))
        {
            if !a_err {
                return Err(format!(
                    "A's WR {i} completed {:?} but A is in {a:?}",
                    self.done[i]
                ));
            }
            return Ok(Some(false));
        }
        if a_err || b == Some(QpState::Err) {
            return Ok(Some(false));
        }
        if self.foreign_rx > 0 && self.forged_at.is_empty() {
            return Err(format!(
                "B received {} messages A never sent",
                self.foreign_rx
            ));
        }
        // Every SEND done at A: each one B lacks needs an excuse; without one, wait (it may
        // still be on the link), and the caller's deadline turns waiting forever into failure.
        let missing = (0..self.sends()).filter(|&k| !self.received[k] && !self.excused(k));
        Ok((missing.count() == 0).then_some(true))
    }

    /// Why the transfer is not done, for a failure message.
    pub fn describe(&self) -> String {
        let (qa, qb) = (self.a.qp(self.sa.qpn), self.b.qp(self.sb.qpn));
        let missing: Vec<usize> = (0..self.sends())
            .filter(|&k| !self.received[k] && !self.excused(k))
            .take(5)
            .collect();
        let (ca, cb) = self.counters();
        format!(
            "{} of {} SENDs complete at A, {} intact at B ({} foreign, first unexcused missing \
             {missing:?}); A {:?} next PSN {:?} send queue {}, B {:?} expects {:?}\nA {ca:?}\n\
             B {cb:?}",
            self.completed(),
            self.sends(),
            self.received(),
            self.foreign_rx,
            qa.map(|q| q.state()),
            qa.map(|q| q.sq_psn()),
            qa.map_or(0, |q| q.send_queue_len()),
            qb.map(|q| q.state()),
            qb.map(|q| q.expected_psn()),
        )
    }
}
