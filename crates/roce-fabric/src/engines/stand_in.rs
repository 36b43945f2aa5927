//! The stand-in engine: a host that sends paced streams of RC WRITE (or SEND) packets built with
//! the wire layer and counts what it receives, without the transport's reliability: it never
//! acknowledges, retransmits or completes work requests (that is the real endpoint's job, see
//! [`RcEngine`](super::RcEngine)). It stands in for the transport where only the traffic
//! matters: fabric tests, benchmarks and scenarios run with `engine = "stand-in"`.
//!
//! Its congestion machinery is the transport's own: CE-marked packets go to a
//! [`NotificationPoint`] (at most one CNP per sending QP per interval), and a flow with a
//! controller from [`roce_proto::cc`] paces with a [`Pacer`] fed as a QP feeds its pacer.

use std::net::IpAddr;

use roce_proto::cc::{CcMetrics, CongestionControl, Controller, IntHop, Pacer, Rate};
use roce_proto::ecn::{NotificationPoint, NpCounters};
use roce_proto::engine::Engine;
use roce_proto::psn::Psn;
use roce_proto::time::{Duration, Instant};
use roce_proto::wire::{
    bth, ethernet, parse_frame, reth, Ecn, EtherType, ExtRepr, IpRepr, Opcode, RoceRepr, VlanTag,
};

use super::{mac_of, ReceivedBytes};
use crate::flows::collective::MemberGate;
use crate::flows::workload::FlowConfig;
use crate::record::series::CcSample;
use crate::switching::frame::MixMap;
use crate::switching::port::wire_bytes;

/// One flow being sent.
#[derive(Debug)]
struct Sending {
    cfg: FlowConfig,
    sent: u64,
    psn: Psn,
    /// The flow's fixed pacing rate (`rate_gbps`), charged with wire bytes.
    fixed: Option<Pacer>,
    /// The flow's congestion controller and its pacer, charged as a QP charges them.
    cc: Option<(Controller, Pacer)>,
}

impl Sending {
    fn new(cfg: FlowConfig) -> Self {
        let fixed = cfg
            .rate_gbps
            .map(|g| Pacer::new(Rate::from_bps_f64(g * 1e9), 0));
        let cc = cfg.cc.as_ref().map(|c| {
            let cc = c.build();
            let pacer = Pacer::new(cc.rate(), 0);
            (cc, pacer)
        });
        Sending {
            cfg,
            sent: 0,
            psn: Psn::new(0),
            fixed,
            cc,
        }
    }

    /// Whether the flow may send more, given its host's collective `gate`.
    fn has_more(&self, gate: Option<&MemberGate>) -> bool {
        self.sent < self.cfg.allowance(gate)
    }

    /// When the next packet may leave: the start and the compute phase, then both pacers.
    fn ready_at(&self, gate: Option<&MemberGate>) -> Instant {
        let paced = |p: &Pacer| p.earliest_departure(Instant::ZERO, 0);
        let fixed = self.fixed.as_ref().map_or(Instant::ZERO, paced);
        let cc = self.cc.as_ref().map_or(Instant::ZERO, |(_, p)| paced(p));
        let computed = self.cfg.gate_start(gate).unwrap_or(Instant::ZERO);
        self.cfg.start.max(computed).max(fixed).max(cc)
    }

    /// A `len`-byte frame left at `now`: the controller and its pacer are charged as the QP
    /// charges them (frame bytes, then the pacer follows the controller's rate); the fixed
    /// rate is one of wire bytes.
    fn on_sent(&mut self, now: Instant, len: usize) {
        if let Some((cc, pacer)) = &mut self.cc {
            cc.on_sent(now, len as u64);
            pacer.on_sent(now, len as u64);
            pacer.set_rate(now, cc.rate());
        }
        if let Some(p) = &mut self.fixed {
            p.on_sent(now, wire_bytes(len));
        }
    }
}

/// Counters of a [`StandInEngine`] (its notification point counts CE marks and CNPs sent: see
/// [`StandInEngine::np_counters`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StandInCounters {
    /// RoCE frames received that passed every check (ICRC included).
    pub rx_packets: u64,
    /// In-order payload bytes received.
    pub rx_bytes: u64,
    /// Frames that failed `parse_frame` (bad ICRC, not RoCE...).
    pub rx_errors: u64,
    /// INT hops received (through the fabric's INT sink).
    pub int_hops: u64,
    /// CNPs received (as reaction point).
    pub cnp_handled: u64,
    /// Data packets sent.
    pub tx_packets: u64,
}

/// A sender seen by the receiving side: its address and the next PSN expected from it.
#[derive(Debug)]
struct Sender {
    ip: IpAddr,
    next_psn: Psn,
}

/// The stand-in: paced senders plus a counting receiver and notification point.
#[derive(Debug)]
pub struct StandInEngine {
    ip: IpAddr,
    flows: Vec<Sending>,
    rr: usize,
    np: NotificationPoint,
    /// Senders by (source IP, destination QPN); the notification point knows a sender by its
    /// index here (as an endpoint's knows its local QP), so CNPs are paced per sender.
    senders: MixMap<(IpAddr, u32), u32>,
    sender_list: Vec<Sender>,
    received: ReceivedBytes,
    /// Counters.
    pub counters: StandInCounters,
    last_int: Vec<IntHop>,
}

impl StandInEngine {
    /// A host at `ip` sending nothing, generating no CNPs.
    pub fn new(ip: IpAddr) -> Self {
        StandInEngine {
            ip,
            flows: Vec::new(),
            rr: 0,
            np: NotificationPoint::new(Duration::ZERO).with_enabled(false),
            senders: MixMap::default(),
            sender_list: Vec::new(),
            received: ReceivedBytes::default(),
            counters: StandInCounters::default(),
            last_int: Vec::new(),
        }
    }

    /// Adds a flow to send.
    pub fn with_flow(mut self, flow: FlowConfig) -> Self {
        self.flows.push(Sending::new(flow));
        self
    }

    /// Acts as a notification point: CE-marked packets trigger a CNP per (source, QP) at most
    /// once per `interval`.
    pub fn with_cnp_interval(mut self, interval: Duration) -> Self {
        self.np = NotificationPoint::new(interval);
        self
    }

    /// Makes the host a collective member: its gated flows follow `gate`, which counts the
    /// in-order payload of the collective's flows into this host.
    pub fn with_gate(mut self, gate: MemberGate) -> Self {
        self.received.gate = Some(gate);
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

    /// The notification point's counters: CE-marked packets received, CNPs sent.
    pub fn np_counters(&self) -> NpCounters {
        self.np.counters()
    }

    /// When each iteration of the host's collective (see [`Self::with_gate`]) completed.
    pub fn marks(&self) -> &[Instant] {
        self.received.marks()
    }

    /// Congestion-control state of every flow with a controller (for the fabric's recorder).
    pub fn cc_samples(&self, out: &mut Vec<CcSample>) {
        for f in &self.flows {
            if let Some((cc, _)) = &f.cc {
                out.push(CcSample::of(f.cfg.qpn, &cc.metrics()));
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

    fn build(&self, f: &Sending, buf: &mut [u8]) -> Option<(usize, u64)> {
        let cfg = &f.cfg;
        let msg = cfg.message_bytes.max(1);
        let offset = f.sent % msg;
        let remaining_total = cfg.total_bytes.map_or(u64::MAX, |t| t - f.sent);
        let msg_left = (msg - offset).min(remaining_total);
        let payload = msg_left.min(cfg.mtu as u64);
        let first = offset == 0;
        let last = payload == msg_left;
        let family = if cfg.send {
            Opcode::RC_SEND_FIRST
        } else {
            Opcode::RC_RDMA_WRITE_FIRST
        };
        let opcode = Opcode::message_packet(family, first, last, false);
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

    /// The index of the sender `ip` sending to our QP `qpn`, first PSN `psn` when new.
    fn sender(&mut self, ip: IpAddr, qpn: u32, psn: Psn) -> usize {
        let next = self.sender_list.len() as u32;
        let i = *self.senders.entry((ip, qpn)).or_insert(next);
        if i == next {
            self.sender_list.push(Sender { ip, next_psn: psn });
        }
        i as usize
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
        let (qpn, psn) = (repr.bth.dest_qpn, repr.bth.psn);
        let i = self.sender(repr.ip.src(), qpn, psn);
        if repr.ip.ecn() == Ecn::Ce {
            // The CNP goes back to the same QPN (the flow's number on both ends here).
            self.np.on_ce(now, i as u32, qpn);
        }
        // Count packets that advance the PSN (skip gaps from loss, ignore duplicates).
        let Some(s) = self.sender_list.get_mut(i) else {
            return;
        };
        if psn.cmp_serial(s.next_psn).is_lt() {
            return;
        }
        s.next_psn = psn.add(1);
        let slot = self
            .received
            .gate
            .as_ref()
            .and_then(|g| g.in_slot_of_qpn(qpn));
        self.received.add(now, slot, repr.payload_len as u64);
        self.counters.rx_bytes = self.received.bytes;
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
        if let Some(cnp) = self.np.poll_cnp(now) {
            let to = self.sender_list.get(cnp.local_qpn as usize)?.ip;
            return self.build_cnp(to, cnp.dest_qpn, buf);
        }
        let n = self.flows.len();
        let gate = self.received.gate.as_ref();
        let pick = (1..=n).map(|i| (self.rr + i) % n).find(|&i| {
            self.flows
                .get(i)
                .is_some_and(|f| f.has_more(gate) && f.ready_at(gate) <= now)
        })?;
        let (len, payload) = self.build(self.flows.get(pick)?, buf)?;
        let f = self.flows.get_mut(pick)?;
        f.sent += payload;
        f.psn = f.psn.add(1);
        f.on_sent(now, len);
        self.rr = pick;
        self.counters.tx_packets += 1;
        Some(len)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.np.has_pending() {
            return Some(Instant::ZERO);
        }
        let gate = self.received.gate.as_ref();
        let send = self
            .flows
            .iter()
            .filter(|f| f.has_more(gate))
            .map(|f| f.ready_at(gate))
            .min();
        let timers = self
            .flows
            .iter()
            .filter_map(|f| f.cc.as_ref().and_then(|(cc, _)| cc.poll_timeout()))
            .min();
        send.into_iter().chain(timers).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roce_proto::wire::set_frame_ecn;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    /// The next frame `from` sends at `now`, CE-marked on the way.
    fn marked(from: &mut StandInEngine, now: Instant) -> Vec<u8> {
        let mut buf = vec![0u8; 9216];
        let n = from.poll_transmit(now, &mut buf).expect("a frame");
        buf.truncate(n);
        set_frame_ecn(&mut buf, Ecn::Ce).expect("IPv4");
        buf
    }

    #[test]
    fn ce_marks_earn_one_cnp_per_sender_per_interval_and_none_with_the_np_off() {
        // Senders 10.0.0.1 and .2 both send to QP 17 on 10.0.0.3.
        let mut senders: Vec<_> = [1, 2]
            .map(|i| StandInEngine::new(ip(i)).with_flow(FlowConfig::bulk(ip(3), 17)))
            .into();
        let mut c = StandInEngine::new(ip(3)).with_cnp_interval(Duration::from_micros(4));
        let mut off = StandInEngine::new(ip(3));
        for (t, from) in [(0, 0), (0, 1), (1_000, 0), (4_000, 0)] {
            let now = Instant::from_nanos(t);
            let frame = marked(&mut senders[from], now);
            c.handle_frame(now, &frame);
            off.handle_frame(now, &frame);
        }
        let mut buf = vec![0u8; 256];
        let mut cnps = Vec::new();
        while let Some(n) = c.poll_transmit(Instant::from_nanos(5_000), &mut buf) {
            let p = parse_frame(&buf[..n]).expect("a valid CNP");
            assert_eq!(p.repr.bth.opcode, Opcode::CNP);
            cnps.push((p.repr.ip.dst(), p.repr.bth.dest_qpn));
        }
        assert_eq!(cnps, [(ip(1), 17), (ip(2), 17), (ip(1), 17)]);
        let np = c.np_counters();
        assert_eq!((np.np_ecn_marked_roce_packets, np.np_cnp_sent), (4, 3));
        assert_eq!(
            off.poll_transmit(Instant::from_nanos(5_000), &mut buf),
            None
        );
        let np = off.np_counters();
        assert_eq!((np.np_ecn_marked_roce_packets, np.np_cnp_sent), (4, 0));
        assert_eq!(off.counters.rx_bytes, 4 * 1024);
    }

    #[test]
    fn a_fixed_rate_spaces_frames_by_their_exact_wire_time() {
        let mut flow = FlowConfig::bulk(ip(2), 17);
        flow.rate_gbps = Some(10.0);
        let mut a = StandInEngine::new(ip(1)).with_flow(flow);
        let mut buf = vec![0u8; 9216];
        let mut wire_bits = 0;
        let mut now = Instant::ZERO;
        for _ in 0..3 {
            let n = a.poll_transmit(now, &mut buf).expect("due");
            wire_bits += wire_bytes(n) * 8;
            // 10 Gbit/s: 0.1 ns per bit, rounded up once over the whole schedule.
            let due = Instant::from_nanos(wire_bits.div_ceil(10));
            assert_eq!(a.poll_timeout(), Some(due));
            let before = Instant::from_nanos(due.as_nanos() - 1);
            assert_eq!(a.poll_transmit(before, &mut buf), None);
            now = due;
        }
        assert_eq!(a.counters.tx_packets, 3);
    }
}
