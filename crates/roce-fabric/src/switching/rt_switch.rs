//! A real-time software switch between [`Port`]s: forwarding by destination MAC onto the
//! fabric's sans-IO switch element ([`Switch`]: eight priority queues per egress port over a
//! shared buffer, RED/ECN marking, PFC accounting), driven through its public API, with on
//! rate-limited ports
//! (bottleneck links) a token-bucket drain. With [`RtSwitch::with_pfc`] the lossless priority
//! (3, DSCP 26) sends 802.1Qbb pause frames to the ports that overfill it and honours the ones
//! it receives.
//!
//! It reads no clock: the caller passes `now` to [`RtSwitch::poll`]. No ECMP: every MAC lives
//! behind one port (the virtual-time fabric in [`crate`] models multipath).

use std::collections::VecDeque;

use rand::SeedableRng;
use rand_pcg::Pcg64;
use serde::Serialize;

use crate::switching::port::WIRE_OVERHEAD;
use crate::switching::switch::{
    mark_ce, Arrival, Dequeued, EcnThresholds, PfcConfig, Switch, SwitchConfig, SwitchPort,
};
use roce_proto::cc::Rate;
use roce_proto::pause::PauseState;
use roce_proto::port::{FrameBuf, Port};
use roce_proto::time::Instant;
use roce_proto::wire::pfc;
use roce_proto::wire::EthernetAddress;

/// Credit an idle bottleneck keeps: one full-size frame, so a link with nothing queued does not
/// save up bandwidth for a later burst.
const IDLE_CREDIT: f64 = 1518.0 + WIRE_OVERHEAD as f64;

/// Bursts a port may receive and send per poll: a slow loop (a busy machine) still drains the
/// bottleneck at its rate.
const BURSTS_PER_POLL: usize = 4;

/// The rate pause quanta are counted at on ports without a drain rate.
const DEFAULT_PORT_BPS: u64 = 100_000_000_000;

/// The lossless (PFC) priority: DSCP 26, as RoCE data travels.
const LOSSLESS: u8 = 3;

/// How the switch behaves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RtSwitchConfig {
    /// Shared packet buffer, bytes (a frame that does not fit is dropped).
    pub buffer_bytes: u64,
    /// ECN marking of the rate-limited egress queues (`None`: no marking).
    pub ecn: Option<EcnThresholds>,
    /// Seed of the marking decisions.
    pub seed: u64,
}

/// What the switch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RtSwitchCounters {
    /// Frames received on any port.
    pub rx_frames: u64,
    /// Frames sent out of an egress port.
    pub tx_frames: u64,
    /// Bytes sent out of an egress port.
    pub tx_bytes: u64,
    /// ECT frames marked CE.
    pub ecn_marked: u64,
    /// Frames dropped because the shared buffer (or a lossless class's headroom) was full.
    pub drops: u64,
    /// Frames dropped because no port has their destination MAC.
    pub unknown_destination: u64,
    /// Highest occupancy of the shared buffer, bytes.
    pub buffer_hwm_bytes: u64,
    /// PFC pause frames sent (XOFF, refreshes and XON).
    pub pfc_pause_frames: u64,
    /// PFC pause frames received and honoured, each once per priority it enables (the ports'
    /// [`PauseState`]s count them).
    pub pfc_pause_received: u64,
}

/// A token bucket draining an egress queue at a fixed rate.
#[derive(Clone, Copy, Debug)]
struct Drain {
    bytes_per_ns: f64,
    cap_bytes: f64,
    tokens: f64,
    last: Option<Instant>,
    /// The queue was empty at the end of the last poll.
    idle: bool,
}

impl Drain {
    fn refill(&mut self, now: Instant) {
        if let Some(last) = self.last {
            let dt = now.saturating_since(last).as_nanos() as f64;
            let cap = if self.idle {
                IDLE_CREDIT
            } else {
                self.cap_bytes
            };
            self.tokens = (self.tokens + dt * self.bytes_per_ns).min(cap);
        }
        self.last = Some(now);
    }
}

/// The transmit side of one port, as the switch element sees it.
struct RtPort<P: Port> {
    port: P,
    mac: Option<EthernetAddress>,
    tx_bytes: u64,
    drain: Option<Drain>,
    /// Pause frames waiting to leave, ahead of data.
    ctrl: VecDeque<P::Buf>,
    /// What the peer's pause frames did to this port's transmitter (and how many came).
    pause: PauseState,
}

impl<P: Port> RtPort<P> {
    fn paused(&self, prio: usize, now: Instant) -> bool {
        self.pause.is_paused(prio, now)
    }
}

/// The switch: the element, its ports and counters.
pub struct RtSwitch<P: Port> {
    sw: Switch<P::Buf, RtPort<P>>,
    rng: Pcg64,
    counters: RtSwitchCounters,
    rx: Vec<P::Buf>,
    tx: Vec<P::Buf>,
    /// (ingress, priority, length, when queued) of the frames in `tx`.
    sent: Vec<(u16, usize, u64, Instant)>,
}

impl<P: Port> std::fmt::Debug for RtSwitch<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RtSwitch")
            .field("ports", &self.sw.port_count())
            .field("used_bytes", &self.sw.used_bytes())
            .field("counters", &self.counters())
            .finish()
    }
}

impl<P: Port> RtSwitch<P> {
    /// A switch without ports, lossy (no PFC): a full buffer drops.
    pub fn new(cfg: RtSwitchConfig) -> Self {
        let sw_cfg = SwitchConfig {
            buffer_bytes: cfg.buffer_bytes,
            queue_limit_bytes: cfg.buffer_bytes,
            lossless: vec![LOSSLESS],
            pfc: None,
            ..SwitchConfig::default()
        }
        .with_ecn_all(cfg.ecn);
        RtSwitch {
            sw: Switch::new("rt".into(), sw_cfg),
            rng: Pcg64::seed_from_u64(cfg.seed),
            counters: RtSwitchCounters::default(),
            rx: Vec::new(),
            tx: Vec::new(),
            sent: Vec::new(),
        }
    }

    /// Turns PFC on for the lossless priority 3 with these thresholds (per ingress port).
    pub fn with_pfc(mut self, pfc: PfcConfig) -> Self {
        self.sw.set_pfc(Some(pfc));
        self
    }

    /// Adds a port behind which the host `mac` lives; frames to `mac` leave through it, at
    /// `rate` when given (a bottleneck), else as fast as the port takes them. Returns its index.
    pub fn add_port(&mut self, port: P, mac: Option<EthernetAddress>, rate: Option<Rate>) -> usize {
        let drain = rate.map(|r| {
            let bytes_per_ns = r.as_bps_f64() / 8e9;
            Drain {
                bytes_per_ns,
                // A busy link keeps draining while this process is descheduled (up to 20 ms);
                // an idle one saves nothing (see `IDLE_CREDIT`).
                cap_bytes: (bytes_per_ns * 20_000_000.0).max(2.0 * 9216.0),
                tokens: 0.0,
                last: None,
                idle: true,
            }
        });
        let rate_bps = rate.map_or(DEFAULT_PORT_BPS, |r| r.as_bps_f64() as u64);
        let i = self.sw.add_port(RtPort {
            port,
            mac,
            tx_bytes: 0,
            drain,
            ctrl: VecDeque::new(),
            pause: PauseState::new(rate_bps),
        });
        // The element times XOFF refreshes by the port's rate.
        self.sw.set_port_rate(i, rate_bps);
        usize::from(i)
    }

    /// Counters so far.
    pub fn counters(&self) -> RtSwitchCounters {
        let ports = self.sw.ports().iter();
        RtSwitchCounters {
            pfc_pause_received: ports.map(|p| p.tx.pause.total_frames()).sum(),
            ..self.counters
        }
    }

    fn port(&self, index: usize) -> Option<&SwitchPort<P::Buf, RtPort<P>>> {
        self.sw.port(u16::try_from(index).ok()?)
    }

    /// Bytes queued at egress port `index`.
    pub fn queue_bytes(&self, index: usize) -> u64 {
        self.port(index).map_or(0, |p| p.queued_bytes())
    }

    /// Bytes sent out of port `index` (frames without wire overhead).
    pub fn port_tx_bytes(&self, index: usize) -> u64 {
        self.port(index).map_or(0, |p| p.tx.tx_bytes)
    }

    /// Bytes in the shared buffer.
    pub fn buffer_bytes(&self) -> u64 {
        self.sw.used_bytes()
    }

    fn egress_of(&self, frame: &[u8]) -> Option<u16> {
        let dst = frame.get(..6)?;
        let i = self
            .sw
            .ports()
            .iter()
            .position(|p| p.tx.mac.is_some_and(|m| m.0 == dst))?;
        u16::try_from(i).ok()
    }

    /// The ports' indices.
    fn port_ids(&self) -> std::ops::Range<u16> {
        0..u16::try_from(self.sw.port_count()).unwrap_or(u16::MAX)
    }

    /// One round: receive a burst on every port and queue it (marking, dropping, pausing),
    /// then drain every egress queue as its rate and PFC allow. `on_egress` sees every data
    /// frame as it leaves. Returns the number of frames received plus sent.
    pub fn poll(&mut self, now: Instant, on_egress: &mut dyn FnMut(&[u8])) -> usize {
        let mut work = 0;
        for i in self.port_ids() {
            let Some(p) = self.sw.port_mut(i) else {
                continue;
            };
            let burst = p.tx.port.caps().burst.max(1) * BURSTS_PER_POLL;
            work += p.tx.port.rx_burst(&mut self.rx, burst);
            let mut rx = std::mem::take(&mut self.rx);
            for buf in rx.drain(..) {
                self.ingress(i, buf, now);
            }
            self.rx = rx;
        }
        // Standing XOFFs the switch says are due go again (none with PFC off).
        let due: Vec<(u16, usize)> = self.sw.xoff_due(now).collect();
        for (i, prio) in due {
            self.send_pfc(i, prio, true, now);
        }
        for i in self.port_ids() {
            work += self.egress(i, now, on_egress);
        }
        work
    }

    fn egress(&mut self, port: u16, now: Instant, on_egress: &mut dyn FnMut(&[u8])) -> usize {
        let Some(p) = self.sw.port_mut(port) else {
            return 0;
        };
        let mut budget = f64::INFINITY;
        if let Some(d) = p.tx.drain.as_mut() {
            d.refill(now);
            budget = d.tokens;
        }
        let burst = p.tx.port.caps().burst.max(1) * BURSTS_PER_POLL;
        // Pause frames first: they are tiny and must not wait behind the data they pause.
        let mut ctrl: Vec<P::Buf> = p.tx.ctrl.drain(..).collect();
        let ctrl_sent = if ctrl.is_empty() {
            0
        } else {
            p.tx.port.tx_burst(&mut ctrl)
        };
        while let Some(b) = ctrl.pop() {
            p.tx.ctrl.push_front(b);
        }
        if let Some(d) = p.tx.drain.as_mut() {
            d.tokens -= ((pfc::FRAME_LEN as u64 + WIRE_OVERHEAD) * ctrl_sent as u64) as f64;
            budget -= ((pfc::FRAME_LEN as u64 + WIRE_OVERHEAD) * ctrl_sent as u64) as f64;
        }
        while self.tx.len() < burst {
            let Some((_, len)) = self.sw.peek(port, |t, prio| t.paused(prio, now)) else {
                break;
            };
            let cost = (len + WIRE_OVERHEAD) as f64;
            if cost > budget {
                break;
            }
            budget -= cost;
            let Some(d) = self.sw.dequeue(port, now, |t, prio| t.paused(prio, now)) else {
                break;
            };
            self.tx.push(d.pkt);
            self.sent.push((d.ingress, d.prio, d.len, d.queued_at));
        }
        let Some(p) = self.sw.port_mut(port) else {
            return ctrl_sent;
        };
        let queued = p.queued_bytes();
        if let Some(d) = p.tx.drain.as_mut() {
            d.idle = queued == 0 && self.tx.is_empty();
        }
        if self.tx.is_empty() {
            return ctrl_sent;
        }
        for b in &self.tx {
            on_egress(b.frame());
        }
        let before: u64 = self.tx.iter().map(|b| b.frame().len() as u64).sum();
        let sent = p.tx.port.tx_burst(&mut self.tx);
        let after: u64 = self.tx.iter().map(|b| b.frame().len() as u64).sum();
        let bytes = before - after;
        if let Some(d) = p.tx.drain.as_mut() {
            d.tokens -= (bytes + WIRE_OVERHEAD * sent as u64) as f64;
        }
        self.counters.tx_frames += sent as u64;
        self.counters.tx_bytes += bytes;
        p.tx.tx_bytes += bytes;
        // What the port refused goes back to the head of its queues, in order.
        while let Some(b) = self.tx.pop() {
            if let Some((ingress, prio, len, queued_at)) = self.sent.pop() {
                let d = Dequeued {
                    pkt: b,
                    prio,
                    ingress,
                    len,
                    queued_at,
                };
                self.sw.requeue_front(port, d);
            }
        }
        // What left may let its ingress resume.
        for k in 0..self.sent.len() {
            if let Some(&(ingress, prio, ..)) = self.sent.get(k) {
                if self.sw.should_resume(ingress, prio) {
                    self.send_pfc(ingress, prio, false, now);
                }
            }
        }
        self.sent.clear();
        if let Some(p) = self.sw.port_mut(port) {
            let queued = p.queued_bytes();
            if let Some(d) = p.tx.drain.as_mut() {
                d.idle = queued == 0;
            }
        }
        sent + ctrl_sent
    }

    fn ingress(&mut self, from: u16, mut buf: P::Buf, now: Instant) {
        self.counters.rx_frames += 1;
        let Arrival { mut info, prio } = Arrival::of(buf.frame());
        if info.ethertype == pfc::MAC_CONTROL_ETHERTYPE {
            if let Some(p) = self.sw.port_mut(from) {
                p.tx.pause.on_frame(now, buf.frame());
            }
            return;
        }
        let len = buf.frame().len() as u64;
        let Some(to) = self.egress_of(buf.frame()).filter(|&to| to != from) else {
            self.counters.unknown_destination += 1;
            return;
        };
        if self.sw.admit(from, to, prio, len).is_err() {
            self.counters.drops += 1;
            return;
        }
        // Only a rate-limited port builds a real queue; the others stand for links faster than
        // the loop, whose momentary backlog within one burst is no congestion.
        let limited = self.sw.port(to).is_some_and(|p| p.tx.drain.is_some());
        if let Some(ip) = info.ip.as_mut().filter(|_| limited) {
            let p = self.sw.ecn_probability(to, prio);
            if mark_ce(p, buf.frame_mut(), ip, &mut self.rng) {
                self.counters.ecn_marked += 1;
            }
        }
        if self.sw.enqueue(buf, (from, to), prio, len, now) {
            self.send_pfc(from, prio, true, now);
        }
        self.counters.buffer_hwm_bytes = self.counters.buffer_hwm_bytes.max(self.sw.used_bytes());
    }

    /// Queues a pause frame (XOFF with the configured quanta, or XON) out of port `i`.
    fn send_pfc(&mut self, i: u16, prio: usize, xoff: bool, now: Instant) {
        let src = [0x02, 0x00, 0x00, 0x03, 0x00, i as u8];
        let Some(frame) = self.sw.pause_frame(src, prio, xoff) else {
            return;
        };
        let Some(p) = self.sw.port_mut(i) else {
            return;
        };
        let Some(mut buf) = p.tx.port.alloc() else {
            return;
        };
        if !buf.set_frame_len(frame.len()) {
            return;
        }
        buf.frame_mut().copy_from_slice(&frame);
        p.tx.ctrl.push_back(buf);
        if xoff {
            self.sw.xoff_sent(i, prio, now);
        }
        self.counters.pfc_pause_frames += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roce_proto::loopback::{loopback_pair, LoopbackPort};
    use roce_proto::wire::pfc::PauseRepr;

    /// Sends one IPv4 frame of `len` bytes to `dst` per TOS byte in `tos`.
    fn send(host: &mut LoopbackPort, dst: EthernetAddress, tos: &[u8], len: usize) {
        let mut out = Vec::new();
        for &t in tos {
            let Some(mut buf) = host.alloc() else {
                panic!("loopback pool empty")
            };
            let f = frame_to(dst.0, t, len);
            buf.set_frame_len(f.len());
            buf.frame_mut().copy_from_slice(&f);
            out.push(buf);
        }
        assert_eq!(host.tx_burst(&mut out), tos.len());
    }

    fn frame_to(dst: [u8; 6], tos: u8, len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[..6].copy_from_slice(&dst);
        f[12] = 0x08;
        f[14] = 0x45;
        f[15] = tos;
        f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
        f[22] = 64;
        f[23] = 17;
        f
    }

    #[test]
    fn ect_frames_above_kmax_are_marked_ce_and_not_ect_ones_are_not() {
        let b_mac = EthernetAddress([2, 0, 0, 0, 0, 2]);
        let (mut host_a, sw_a) = loopback_pair(9000, 1 << 10);
        let (mut host_b, sw_b) = loopback_pair(9000, 1 << 10);
        let mut sw = RtSwitch::new(RtSwitchConfig {
            buffer_bytes: 1 << 20,
            ecn: Some(EcnThresholds {
                kmin_bytes: 0,
                kmax_bytes: 1,
                pmax: 1.0,
                step_bytes: None,
            }),
            seed: 1,
        });
        sw.add_port(sw_a, None, None);
        let to_b = sw.add_port(sw_b, Some(b_mac), Some(Rate::from_gbps(1)));
        send(&mut host_a, b_mac, &[0x02, 0x02, 0x00], 200);
        // First poll: the bucket has no credit yet, everything queues.
        sw.poll(Instant::from_nanos(0), &mut |_| {});
        assert_eq!(sw.queue_bytes(to_b), 600);
        let mut seen = Vec::new();
        sw.poll(Instant::from_nanos(1_000_000), &mut |f| {
            seen.push(f.get(15).copied())
        });
        // The first frame found an empty queue; the second found 200 B (> Kmax): CE; the third
        // is not ECN-capable.
        assert_eq!(seen, [Some(0x02), Some(0x03), Some(0x00)]);
        assert_eq!(sw.counters().ecn_marked, 1);
        let mut got = Vec::new();
        assert_eq!(host_b.rx_burst(&mut got, 8), 3);
    }

    #[test]
    fn bottleneck_drains_at_its_rate_and_full_buffer_drops() {
        let b_mac = EthernetAddress([2, 0, 0, 0, 0, 2]);
        let (mut host_a, sw_a) = loopback_pair(9000, 1 << 10);
        let (_host_b, sw_b) = loopback_pair(9000, 1 << 10);
        let mut sw = RtSwitch::new(RtSwitchConfig {
            buffer_bytes: 10 * 1000,
            ecn: None,
            seed: 1,
        });
        sw.add_port(sw_a, None, None);
        // 8 Gbit/s = 1 byte per ns.
        let to_b = sw.add_port(sw_b, Some(b_mac), Some(Rate::from_gbps(8)));
        send(&mut host_a, b_mac, &[0; 12], 1000);
        sw.poll(Instant::from_nanos(0), &mut |_| {});
        assert_eq!(sw.counters().drops, 2);
        assert_eq!(sw.queue_bytes(to_b), 10_000);
        // 3072 ns of credit: three 1024-byte wire slots.
        sw.poll(Instant::from_nanos(3_072), &mut |_| {});
        assert_eq!(sw.counters().tx_frames, 3);
        assert_eq!(sw.queue_bytes(to_b), 7_000);
        // A long stall while busy: the link kept draining, so all seven go.
        sw.poll(Instant::from_nanos(1_000_000), &mut |_| {});
        assert_eq!(sw.counters().tx_frames, 10);
        // Idle for a second: no credit saved, one 1000-byte frame goes, the next waits.
        send(&mut host_a, b_mac, &[0; 2], 1000);
        sw.poll(Instant::from_nanos(1_001_000_000), &mut |_| {});
        assert_eq!(sw.counters().tx_frames, 11);
        assert_eq!(sw.queue_bytes(to_b), 1_000);
    }

    /// Host B's MAC in [`pfc_switch`].
    const PFC_B_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);

    /// A PFC switch (XOFF 2500 B, XON 1000 B) after host A sent four 1000-byte frames with
    /// `tos` (DSCP and ECN) to host B and the switch polled once at t = 0.
    fn pfc_switch_after_burst(tos: u8) -> (LoopbackPort, LoopbackPort, RtSwitch<LoopbackPort>) {
        let (mut host_a, host_b, mut sw) = pfc_switch(2_500, 1_000);
        send(&mut host_a, PFC_B_MAC, &[tos; 4], 1000);
        sw.poll(Instant::from_nanos(0), &mut |_| {});
        (host_a, host_b, sw)
    }

    fn pfc_switch(xoff: u64, xon: u64) -> (LoopbackPort, LoopbackPort, RtSwitch<LoopbackPort>) {
        let (host_a, sw_a) = loopback_pair(9000, 1 << 10);
        let (host_b, sw_b) = loopback_pair(9000, 1 << 10);
        let mut sw = RtSwitch::new(RtSwitchConfig {
            buffer_bytes: 1 << 20,
            ecn: None,
            seed: 1,
        })
        .with_pfc(PfcConfig {
            xoff_bytes: xoff,
            xon_bytes: xon,
            headroom_bytes: 100_000,
            quanta: 1000,
            dynamic: None,
        });
        sw.add_port(sw_a, Some(EthernetAddress([2, 0, 0, 0, 0, 1])), None);
        sw.add_port(sw_b, Some(PFC_B_MAC), Some(Rate::from_gbps(8)));
        (host_a, host_b, sw)
    }

    fn received(host: &mut LoopbackPort) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        host.rx_burst(&mut got, 64);
        got.iter().map(|b| b.frame().to_vec()).collect()
    }

    #[test]
    fn lossless_class_over_xoff_pauses_its_sender_and_resumes_it_when_drained() {
        // DSCP 26 (priority 3, lossless), ECT(0): four 1000-byte frames, 4000 B > XOFF.
        let (mut host_a, mut host_b, mut sw) = pfc_switch_after_burst(0x6a);
        let got = received(&mut host_a);
        assert_eq!(got.len(), 1, "one XOFF back to the sender");
        let pause = PauseRepr::parse(&got[0]).expect("a PFC frame");
        assert_eq!(pause.quanta[3], Some(1000));
        assert_eq!(sw.counters().pfc_pause_frames, 1);
        assert_eq!(sw.counters().drops, 0);
        // 8 Gbit/s drains 1 B/ns: after 3.1 us three frames left, 1000 B remain: XON. Before
        // that, half of the XOFF's pause (1000 quanta at 100 Gbit/s: 5.12 us) had passed, so it
        // was refreshed.
        sw.poll(Instant::from_nanos(3_100), &mut |_| {});
        assert_eq!(received(&mut host_b).len(), 3);
        sw.poll(Instant::from_nanos(3_100), &mut |_| {});
        let quanta: Vec<_> = received(&mut host_a)
            .iter()
            .filter_map(|f| PauseRepr::parse(f))
            .map(|p| p.quanta[3])
            .collect();
        assert_eq!(quanta, [Some(1000), Some(0)]);
        assert_eq!(sw.counters().pfc_pause_frames, 3);
    }

    #[test]
    fn lossy_class_is_never_paused_and_a_received_pause_holds_only_its_priority() {
        // Priority 0 (DSCP 0) over XOFF: no pause.
        let (mut host_a, mut host_b, mut sw) = pfc_switch_after_burst(0x02);
        assert!(received(&mut host_a).is_empty());
        // Host B pauses priority 0 for 1000 quanta (64 us at 8 Gbit/s).
        let mut pause = vec![0u8; pfc::FRAME_LEN];
        PauseRepr::single([2, 0, 0, 0, 0, 2], 0, 1000)
            .emit(&mut pause)
            .expect("emits");
        let mut buf = host_b.alloc().expect("buffer");
        buf.set_frame_len(pause.len());
        buf.frame_mut().copy_from_slice(&pause);
        assert_eq!(host_b.tx_burst(&mut vec![buf]), 1);
        sw.poll(Instant::from_nanos(10_000), &mut |_| {});
        assert_eq!(sw.counters().pfc_pause_received, 1);
        assert!(received(&mut host_b).is_empty(), "priority 0 is paused");
        // A lossless frame still goes; priority 0 waits until the pause expires.
        send(&mut host_a, PFC_B_MAC, &[0x6a], 1000);
        sw.poll(Instant::from_nanos(20_000), &mut |_| {});
        assert_eq!(received(&mut host_b).len(), 1);
        sw.poll(Instant::from_nanos(80_000), &mut |_| {});
        assert_eq!(received(&mut host_b).len(), 4);
    }
}
