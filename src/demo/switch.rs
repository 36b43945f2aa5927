//! A real-time software switch between [`Port`]s: forwarding by destination MAC, one egress queue
//! per port over a shared buffer with tail drop, and on rate-limited ports (bottleneck links) a
//! token-bucket drain with RED/ECN marking at enqueue (the simulator's [`EcnConfig`] ramp).
//!
//! It reads no clock: the caller passes `now` to [`RtSwitch::poll`]. It does no PFC (it is a lossy
//! ECN switch) and no ECMP; the virtual-time fabric in [`crate::sim`] models those.

use std::collections::VecDeque;

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use serde::Serialize;

use crate::cc::Rate;
use crate::driver::{FrameBuf, Port};
use crate::sim::EcnConfig;
use crate::time::Instant;
use crate::wire::{set_frame_ecn, Ecn, EthernetAddress};

/// Preamble, start delimiter, FCS and inter-frame gap: what a frame costs on the wire beyond its
/// bytes.
pub const WIRE_OVERHEAD: u64 = 24;

/// Credit an idle bottleneck keeps: one full-size frame, so a link with nothing queued does not
/// save up bandwidth for a later burst.
const IDLE_CREDIT: f64 = 1518.0 + WIRE_OVERHEAD as f64;

/// Bursts a port may receive and send per poll: a slow loop (a busy machine) still drains the
/// bottleneck at its rate.
const BURSTS_PER_POLL: usize = 4;

/// How the switch behaves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RtSwitchConfig {
    /// Shared packet buffer, bytes (a frame that does not fit is dropped).
    pub buffer_bytes: u64,
    /// ECN marking of the rate-limited egress queues (`None`: no marking).
    pub ecn: Option<EcnConfig>,
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
    /// Frames dropped because the shared buffer was full.
    pub drops: u64,
    /// Frames dropped because no port has their destination MAC.
    pub unknown_destination: u64,
    /// Highest occupancy of the shared buffer, bytes.
    pub buffer_hwm_bytes: u64,
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

struct SwitchPort<P: Port> {
    port: P,
    mac: Option<EthernetAddress>,
    queue: VecDeque<P::Buf>,
    queued_bytes: u64,
    tx_bytes: u64,
    drain: Option<Drain>,
}

/// The switch: ports, their queues and counters.
pub struct RtSwitch<P: Port> {
    cfg: RtSwitchConfig,
    ports: Vec<SwitchPort<P>>,
    used_bytes: u64,
    rng: Pcg64,
    counters: RtSwitchCounters,
    rx: Vec<P::Buf>,
    tx: Vec<P::Buf>,
}

impl<P: Port> std::fmt::Debug for RtSwitch<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RtSwitch")
            .field("ports", &self.ports.len())
            .field("used_bytes", &self.used_bytes)
            .field("counters", &self.counters)
            .finish()
    }
}

impl<P: Port> RtSwitch<P> {
    /// A switch without ports.
    pub fn new(cfg: RtSwitchConfig) -> Self {
        RtSwitch {
            cfg,
            ports: Vec::new(),
            used_bytes: 0,
            rng: Pcg64::seed_from_u64(cfg.seed),
            counters: RtSwitchCounters::default(),
            rx: Vec::new(),
            tx: Vec::new(),
        }
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
        self.ports.push(SwitchPort {
            port,
            mac,
            queue: VecDeque::new(),
            queued_bytes: 0,
            tx_bytes: 0,
            drain,
        });
        self.ports.len() - 1
    }

    /// Counters so far.
    pub fn counters(&self) -> RtSwitchCounters {
        self.counters
    }

    /// Bytes queued at egress port `index`.
    pub fn queue_bytes(&self, index: usize) -> u64 {
        self.ports.get(index).map_or(0, |p| p.queued_bytes)
    }

    /// Bytes sent out of port `index` (frames without wire overhead).
    pub fn port_tx_bytes(&self, index: usize) -> u64 {
        self.ports.get(index).map_or(0, |p| p.tx_bytes)
    }

    /// Bytes in the shared buffer.
    pub fn buffer_bytes(&self) -> u64 {
        self.used_bytes
    }

    fn egress_of(&self, frame: &[u8]) -> Option<usize> {
        let dst = frame.get(..6)?;
        self.ports
            .iter()
            .position(|p| p.mac.is_some_and(|m| m.0 == dst))
    }

    /// One round: receive a burst on every port and queue it (marking, dropping), then drain
    /// every egress queue as its rate allows. `on_egress` sees every frame as it leaves.
    /// Returns the number of frames received plus sent.
    pub fn poll(&mut self, now: Instant, on_egress: &mut dyn FnMut(&[u8])) -> usize {
        let mut work = 0;
        for i in 0..self.ports.len() {
            let Some(p) = self.ports.get_mut(i) else {
                continue;
            };
            let burst = p.port.caps().burst.max(1) * BURSTS_PER_POLL;
            work += p.port.rx_burst(&mut self.rx, burst);
            let mut rx = std::mem::take(&mut self.rx);
            for buf in rx.drain(..) {
                self.ingress(i, buf);
            }
            self.rx = rx;
        }
        for p in &mut self.ports {
            let mut budget = f64::INFINITY;
            if let Some(d) = p.drain.as_mut() {
                d.refill(now);
                budget = d.tokens;
            }
            let burst = p.port.caps().burst.max(1) * BURSTS_PER_POLL;
            while self.tx.len() < burst {
                let Some(len) = p.queue.front().map(|b| b.frame().len() as u64) else {
                    break;
                };
                let cost = (len + WIRE_OVERHEAD) as f64;
                if cost > budget {
                    break;
                }
                budget -= cost;
                if let Some(b) = p.queue.pop_front() {
                    self.tx.push(b);
                }
            }
            if let Some(d) = p.drain.as_mut() {
                d.idle = p.queue.is_empty() && self.tx.is_empty();
            }
            if self.tx.is_empty() {
                continue;
            }
            for b in &self.tx {
                on_egress(b.frame());
            }
            let before: u64 = self.tx.iter().map(|b| b.frame().len() as u64).sum();
            let sent = p.port.tx_burst(&mut self.tx);
            let after: u64 = self.tx.iter().map(|b| b.frame().len() as u64).sum();
            let bytes = before - after;
            if let Some(d) = p.drain.as_mut() {
                d.tokens -= (bytes + WIRE_OVERHEAD * sent as u64) as f64;
            }
            p.queued_bytes -= bytes.min(p.queued_bytes);
            self.used_bytes -= bytes.min(self.used_bytes);
            self.counters.tx_frames += sent as u64;
            self.counters.tx_bytes += bytes;
            p.tx_bytes += bytes;
            work += sent;
            // What the port refused goes back to the head of its queue, in order.
            while let Some(b) = self.tx.pop() {
                p.queue.push_front(b);
            }
            if let Some(d) = p.drain.as_mut() {
                d.idle = p.queue.is_empty();
            }
        }
        work
    }

    fn ingress(&mut self, from: usize, mut buf: P::Buf) {
        self.counters.rx_frames += 1;
        let len = buf.frame().len() as u64;
        let Some(to) = self.egress_of(buf.frame()).filter(|&to| to != from) else {
            self.counters.unknown_destination += 1;
            return;
        };
        if self.used_bytes + len > self.cfg.buffer_bytes {
            self.counters.drops += 1;
            return;
        }
        let Some(p) = self.ports.get_mut(to) else {
            return;
        };
        // Only a rate-limited port builds a real queue; the others stand for links faster than
        // the loop, whose momentary backlog within one burst is no congestion.
        if let Some(ecn) = self.cfg.ecn.filter(|_| p.drain.is_some()) {
            let prob = ecn.probability(p.queued_bytes);
            let mark = prob >= 1.0 || (prob > 0.0 && self.rng.random::<f64>() < prob);
            if mark && ect(buf.frame()) && set_frame_ecn(buf.frame_mut(), Ecn::Ce).is_ok() {
                self.counters.ecn_marked += 1;
            }
        }
        p.queue.push_back(buf);
        p.queued_bytes += len;
        self.used_bytes += len;
        self.counters.buffer_hwm_bytes = self.counters.buffer_hwm_bytes.max(self.used_bytes);
    }
}

/// Whether an untagged IPv4 or IPv6 frame is ECN-capable (ECT(0) or ECT(1)).
fn ect(frame: &[u8]) -> bool {
    let ecn = match frame.get(12..14) {
        Some([0x08, 0x00]) => frame.get(15).map(|tos| tos & 3),
        Some([0x86, 0xdd]) => frame.get(15).map(|b| (b >> 4) & 3),
        _ => None,
    };
    matches!(ecn, Some(1 | 2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::loopback::{loopback_pair, LoopbackPort};

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
            ecn: Some(EcnConfig {
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
}
