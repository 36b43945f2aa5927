//! The stand-in engine: [`StandInEngine`], a host that sends paced RC WRITE (or SEND) streams
//! built with the wire layer and counts what it receives, acting as an ECN notification point
//! (CNP per QP at most once per interval). A flow may carry a congestion controller from
//! [`roce_proto::cc`] (DCQCN...) that CNPs drive and whose rate the flow's [`Pacer`] enforces.
//! It stands in for the transport in fabric tests, benchmarks and scenarios run with
//! `engine = "test"`; it never retransmits or completes work requests (that is the real
//! endpoint's job, see [`RcEngine`](super::RcEngine)).

use std::collections::VecDeque;
use std::net::IpAddr;

use roce_proto::engine::Engine;
use roce_proto::psn::Psn;
use roce_proto::time::{Duration, Instant};
use roce_proto::wire::{
    bth, ethernet, parse_frame, reth, Ecn, EtherType, ExtRepr, IpRepr, Opcode, RoceRepr, VlanTag,
};

use super::mac_of;
use crate::frame::MixMap;
use crate::port::wire_bytes;
use crate::series::CcSample;
use crate::workload::FlowConfig;
use roce_proto::cc::{CcMetrics, CongestionControl, Controller, IntHop, Pacer};

#[derive(Debug)]
struct FlowState {
    cfg: FlowConfig,
    sent: u64,
    psn: Psn,
    next_ps: u64,
    cc: Option<(Controller, Pacer)>,
}

impl FlowState {
    fn done(&self) -> bool {
        self.cfg.total_bytes.is_some_and(|t| self.sent >= t)
    }
    fn allowance(&self, rx_bytes: u64) -> u64 {
        let total = self.cfg.total_bytes.unwrap_or(u64::MAX);
        match self.cfg.gate_chunk {
            Some(c) => total.min(c.saturating_mul(1 + rx_bytes / c.max(1))),
            None => total,
        }
    }
    fn ready_at_ps(&self) -> u64 {
        let paced = self.cc.as_ref().map_or(0, |(_, p)| {
            p.earliest_departure(Instant::ZERO, 0)
                .as_nanos()
                .saturating_mul(1000)
        });
        self.next_ps
            .max(self.cfg.start.as_nanos() * 1000)
            .max(paced)
    }
}

/// Counters of a [`StandInEngine`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StandInCounters {
    /// RoCE frames received that passed every check (ICRC included).
    pub rx_packets: u64,
    /// In-order payload bytes received.
    pub rx_bytes: u64,
    /// Frames that failed `parse_frame` (bad ICRC, not RoCE...).
    pub rx_errors: u64,
    /// Frames received with CE set.
    pub ce_received: u64,
    /// INT hops received (through the fabric's INT sink).
    pub int_hops: u64,
    /// CNPs sent (as notification point).
    pub cnp_sent: u64,
    /// CNPs received (as reaction point).
    pub cnp_handled: u64,
    /// Data packets sent.
    pub tx_packets: u64,
}

/// The stand-in: paced senders plus a counting receiver and notification point.
#[derive(Debug)]
pub struct StandInEngine {
    ip: IpAddr,
    flows: Vec<FlowState>,
    rr: usize,
    cnp_interval: Option<Duration>,
    last_cnp: MixMap<(IpAddr, u32), Instant>,
    pending_cnps: VecDeque<(IpAddr, u32)>,
    next_psn: MixMap<(IpAddr, u32), u32>,
    /// Counters.
    pub counters: StandInCounters,
    /// Times at which the in-order received bytes crossed each multiple of `mark_every`.
    pub marks: Vec<Instant>,
    last_int: Vec<IntHop>,
    mark_every: Option<u64>,
}

impl StandInEngine {
    /// A host at `ip` sending nothing, generating no CNPs.
    pub fn new(ip: IpAddr) -> Self {
        StandInEngine {
            ip,
            flows: Vec::new(),
            rr: 0,
            cnp_interval: None,
            last_cnp: MixMap::default(),
            pending_cnps: VecDeque::new(),
            next_psn: MixMap::default(),
            counters: StandInCounters::default(),
            marks: Vec::new(),
            last_int: Vec::new(),
            mark_every: None,
        }
    }

    /// Adds a flow to send.
    pub fn with_flow(mut self, flow: FlowConfig) -> Self {
        let cc = flow.cc.as_ref().map(|c| {
            let cc = c.build();
            let pacer = Pacer::new(cc.rate(), 0);
            (cc, pacer)
        });
        self.flows.push(FlowState {
            next_ps: flow.start.as_nanos() * 1000,
            cfg: flow,
            sent: 0,
            psn: Psn::new(0),
            cc,
        });
        self
    }

    /// Acts as a notification point: CE-marked packets trigger a CNP per (source, QP) at most
    /// once per `interval`.
    pub fn with_cnp_interval(mut self, interval: Duration) -> Self {
        self.cnp_interval = Some(interval);
        self
    }

    /// Records the time each multiple of `bytes` of in-order payload has been received.
    pub fn with_marks(mut self, bytes: u64) -> Self {
        self.mark_every = Some(bytes.max(1));
        self
    }

    /// The fabric's INT sink for stand-ins: counts hops and keeps the last stack.
    pub fn on_int(&mut self, _now: Instant, hops: &[IntHop]) {
        self.counters.int_hops += hops.len() as u64;
        self.last_int.clear();
        self.last_int.extend_from_slice(hops);
    }

    /// The INT stack of the last frame that carried one.
    pub fn last_int(&self) -> &[IntHop] {
        &self.last_int
    }

    /// Congestion-control state of every flow with a controller (for the fabric's recorder).
    pub fn cc_samples(&self, out: &mut Vec<CcSample>) {
        for f in &self.flows {
            if let Some((cc, _)) = &f.cc {
                let m = cc.metrics();
                out.push(CcSample {
                    qpn: f.cfg.qpn,
                    rate_gbps: m.rate.as_gbps_f64(),
                    alpha: m.alpha,
                });
            }
        }
    }

    /// Congestion-control metrics of flow `i`, if it has a controller.
    pub fn cc_metrics(&self, i: usize) -> Option<CcMetrics> {
        self.flows.get(i)?.cc.as_ref().map(|(cc, _)| cc.metrics())
    }

    /// Payload bytes sent by flow `i`.
    pub fn sent_bytes(&self, i: usize) -> u64 {
        self.flows.get(i).map_or(0, |f| f.sent)
    }

    fn build(&self, f: &FlowState, buf: &mut [u8]) -> Option<(usize, u64)> {
        let cfg = &f.cfg;
        let msg = cfg.message_bytes.max(1);
        let offset = f.sent % msg;
        let remaining_total = cfg.total_bytes.map_or(u64::MAX, |t| t - f.sent);
        let msg_left = (msg - offset).min(remaining_total);
        let payload = msg_left.min(cfg.mtu as u64);
        let first = offset == 0;
        let last = payload == msg_left;
        let opcode = match (cfg.send, first, last) {
            (false, true, true) => Opcode::RC_RDMA_WRITE_ONLY,
            (false, true, false) => Opcode::RC_RDMA_WRITE_FIRST,
            (false, false, false) => Opcode::RC_RDMA_WRITE_MIDDLE,
            (false, false, true) => Opcode::RC_RDMA_WRITE_LAST,
            (true, true, true) => Opcode::RC_SEND_ONLY,
            (true, true, false) => Opcode::RC_SEND_FIRST,
            (true, false, false) => Opcode::RC_SEND_MIDDLE,
            (true, false, true) => Opcode::RC_SEND_LAST,
        };
        let reth = (first && !cfg.send).then_some(reth::Repr {
            va: 0x1000,
            rkey: 0x100,
            dma_len: msg_left as u32,
        });
        let ecn = if cfg.ect { Ecn::Ect0 } else { Ecn::NotEct };
        let repr = RoceRepr {
            eth: ethernet::Repr {
                dst: mac_of(cfg.dst_ip),
                src: mac_of(self.ip),
                vlan: cfg.pcp.map(|pcp| VlanTag {
                    pcp,
                    dei: false,
                    vid: 0,
                }),
                ethertype: EtherType::Ipv4,
            },
            ip: IpRepr::new_roce(self.ip, cfg.dst_ip, cfg.dscp, ecn),
            udp_src_port: cfg.udp_src_port,
            bth: bth::Repr {
                opcode,
                dest_qpn: cfg.qpn,
                psn: f.psn,
                ack_req: last,
                pkey: 0xffff,
                ..bth::Repr::default()
            },
            ext: ExtRepr {
                reth,
                ..ExtRepr::default()
            },
            payload_len: payload as usize,
        };
        let len = repr.emit_with(buf, |p| p.fill(0)).ok()?;
        Some((len, payload))
    }

    fn build_cnp(&self, to: IpAddr, qpn: u32, buf: &mut [u8]) -> Option<usize> {
        let eth = ethernet::Repr {
            dst: mac_of(to),
            src: mac_of(self.ip),
            vlan: None,
            ethertype: EtherType::Ipv4,
        };
        // CNPs travel on the RDMA class (DSCP 26) with Not-ECT, as NICs send them.
        let ip = IpRepr::new_roce(self.ip, to, 26, Ecn::NotEct);
        RoceRepr::cnp(eth, ip, 0xc000, qpn).emit(&[], buf).ok()
    }
}

impl Engine for StandInEngine {
    fn handle_frame(&mut self, now: Instant, frame: &[u8]) {
        let Ok(p) = parse_frame(frame) else {
            self.counters.rx_errors += 1;
            return;
        };
        self.counters.rx_packets += 1;
        let repr = &p.repr;
        if repr.bth.opcode == Opcode::CNP {
            self.counters.cnp_handled += 1;
            let qpn = repr.bth.dest_qpn;
            for f in self.flows.iter_mut().filter(|f| f.cfg.qpn == qpn) {
                if let Some((cc, pacer)) = &mut f.cc {
                    cc.on_cnp(now);
                    pacer.set_rate(now, cc.rate());
                }
            }
            return;
        }
        let key = (repr.ip.src(), repr.bth.dest_qpn);
        if repr.ip.ecn() == Ecn::Ce {
            self.counters.ce_received += 1;
            if let Some(iv) = self.cnp_interval {
                let due = self
                    .last_cnp
                    .get(&key)
                    .map_or(true, |&t| now.saturating_since(t) >= iv);
                if due {
                    self.last_cnp.insert(key, now);
                    self.pending_cnps.push_back(key);
                }
            }
        }
        // Count packets that advance the PSN (skip gaps from loss, ignore duplicates).
        let psn = repr.bth.psn;
        let expected = self.next_psn.entry(key).or_insert(psn.value());
        if psn.cmp_serial(Psn::new(*expected)).is_lt() {
            return;
        }
        *expected = psn.add(1).value();
        let before = self.counters.rx_bytes;
        self.counters.rx_bytes += repr.payload_len as u64;
        if let Some(m) = self.mark_every {
            for _ in before / m..self.counters.rx_bytes / m {
                self.marks.push(now);
            }
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        for f in &mut self.flows {
            if let Some((cc, pacer)) = &mut f.cc {
                if cc.poll_timeout().is_some_and(|t| t <= now) {
                    cc.handle_timeout(now);
                    pacer.set_rate(now, cc.rate());
                }
            }
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        if let Some((to, qpn)) = self.pending_cnps.pop_front() {
            let len = self.build_cnp(to, qpn, buf)?;
            self.counters.cnp_sent += 1;
            return Some(len);
        }
        let now_ps = now.as_nanos() * 1000;
        let n = self.flows.len();
        let rx = self.counters.rx_bytes;
        let pick = (1..=n).map(|i| (self.rr + i) % n).find(|&i| {
            self.flows
                .get(i)
                .is_some_and(|f| !f.done() && f.sent < f.allowance(rx) && f.ready_at_ps() <= now_ps)
        })?;
        let (len, payload) = self.build(self.flows.get(pick)?, buf)?;
        let f = self.flows.get_mut(pick)?;
        f.sent += payload;
        f.psn = f.psn.add(1);
        if let Some((cc, pacer)) = &mut f.cc {
            // Rates are wire rates: the pacer charges preamble, IFG and FCS too.
            cc.on_sent(now, len as u64);
            pacer.on_sent(now, wire_bytes(len));
        }
        if let Some(gbps) = f.cfg.rate_gbps {
            let ps = (wire_bytes(len) as f64 * 8_000.0 / gbps).round() as u64;
            f.next_ps = f.next_ps.max(now_ps) + ps;
        }
        self.rr = pick;
        self.counters.tx_packets += 1;
        Some(len)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if !self.pending_cnps.is_empty() {
            return Some(Instant::ZERO);
        }
        let rx = self.counters.rx_bytes;
        let send = self
            .flows
            .iter()
            .filter(|f| !f.done() && f.sent < f.allowance(rx))
            .map(|f| Instant::from_nanos(f.ready_at_ps().div_ceil(1000)))
            .min();
        let timers = self
            .flows
            .iter()
            .filter_map(|f| f.cc.as_ref().and_then(|(cc, _)| cc.poll_timeout()))
            .min();
        match (send, timers) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
