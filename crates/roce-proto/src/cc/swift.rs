//! Swift: Kumar et al., "Swift: Delay is Simple and Effective for Congestion Control in the
//! Datacenter", SIGCOMM 2020. A window controller (AIMD on a congestion window in packets) that
//! keeps each ACK's delay near a target; below one packet of window it paces instead. CNPs are
//! ignored (counted in `rp_cnp_ignored`).
//!
//! Per ACK with delay d (the paper's Algorithm 1): the retransmit count resets; with the target
//! t (below), if d < t the window grows additively, `cwnd += ai·num_acked/cwnd` from one packet
//! up (so `ai` packets per RTT), `cwnd += ai·num_acked` below one; otherwise, at most once per
//! RTT (`now − t_last_decrease ≥ rtt`), `cwnd ·= max(1 − β·(d − t)/d, 1 − max_mdf)`. On a loss:
//! `retx_reset` losses without an ACK between set `cwnd = min_cwnd`, fewer cut by
//! `1 − max_mdf` (once per RTT). The window stays in `[min_cwnd, max_cwnd]`; a cut restarts the
//! RTT the next cut waits for. Below one packet the QP keeps one packet in flight and the
//! pacer spaces packets `rtt/cwnd` apart (Algorithm 1's `pacing_delay`); from one packet up it
//! sends at the line rate as the window allows.
//!
//! The target (§3.5): `t = base_target + hops·h + fs`, with the flow-scaling term
//! `fs = clamp(α/√cwnd + β', 0, fs_range)`, `α = fs_range/(1/√fs_min_cwnd − 1/√fs_max_cwnd)`,
//! `β' = −α/√fs_max_cwnd`: fs_range at `fs_min_cwnd` packets, 0 from `fs_max_cwnd` up, so many
//! small flows (an incast) aim a little higher and keep their windows apart less.
//!
//! What the core measures, and how it departs from the paper:
//! - Delay: the QP's RTT sample (transmit of the newest timed packet to its ACK,
//!   [`crate::qp::rtt`]), taken as the *fabric* delay. The paper subtracts the remote NIC and host
//!   delay (NIC timestamps) and runs a second, endpoint window; there are no NIC timestamps here,
//!   so the endpoint share counts as fabric. In the simulator the responder answers at once and
//!   the sample is the fabric's; on the wire (`roce perf`) it includes the peer's software
//!   turnaround, which `base_target` must then allow for.
//! - Hops: Swift counts them from the received TTL (64 minus it). The controller is not handed
//!   the TTL of the packets it hears about, so `hops` is a parameter: 1 by default, one switch
//!   between the hosts (the simulator's star and a host pair under one ToR).
//! - `rtt` in Algorithm 1 (the once-per-RTT cut and the pacing delay): the smoothed RTT,
//!   `srtt ← 7/8·srtt + 1/8·sample`, as htsim's Swift (`SwiftSubflowSrc::update_rtt`).
//! - Losses: the transport reports NAK sequence errors and ACK timeouts alike
//!   ([`CongestionControl::on_loss`]); both take the retransmit-timeout rule.
//!
//! The paper publishes the rules but not every constant. The defaults below are those of the
//! Swift model in htsim (github.com/Broadcom/csg-htsim, `sim/swift.cpp`, `SwiftSrc::SwiftSrc`):
//! base target 20 us, h = base/6.55 (3.05 us), fs_range 5·base, fs_min_cwnd 0.1, fs_max_cwnd 100,
//! ai 1, β 0.8, max_mdf 0.5, RETX_RESET_THRESHOLD 5, max_cwnd 1000 packets; min_cwnd 0.01 packets
//! (htsim: 10 bytes). They are sized for a fabric of tens of microseconds; a fabric whose PFC
//! threshold is a few microseconds of queueing needs a smaller `base_target` and `fs_range` (see
//! `docs/cc.md`).

use tracing::trace;

use super::{CcMetrics, CongestionControl, Rate};
use crate::time::{Duration, Instant};

crate::cc_params! {
    /// Swift parameters (the paper's names; defaults from htsim's Swift, see the module docs).
    pub struct SwiftParams {
        /// Base target delay: what the fabric's delay may reach with no hop or flow scaling.
        base_target: f64 = "us",
        /// Per-hop scaling h: target added per switch on the path.
        hop_scale: f64 = "us",
        /// Switches on the path (Swift reads it from the TTL; the core cannot, see the module
        /// docs).
        hops: u32 = "",
        /// Flow scaling's range: the most it adds to the target (at fs_min_cwnd); 0: off.
        fs_range: f64 = "us",
        /// Window at and below which flow scaling adds its whole range.
        fs_min_cwnd: f64 = "packets",
        /// Window from which flow scaling adds nothing.
        fs_max_cwnd: f64 = "packets",
        /// Additive increase ai per RTT while the delay is under the target.
        ai: f64 = "packets",
        /// Multiplicative decrease factor beta (of the delay's excess over the target).
        beta: f64 = "",
        /// Largest fraction one decrease may cut (max_mdf).
        max_mdf: f64 = "",
        /// Floor of the window (below one packet the QP paces).
        min_cwnd: f64 = "packets",
        /// Ceiling of the window.
        max_cwnd: f64 = "packets",
        /// Window at start; 0: one bandwidth-delay product of the line rate over
        /// base_target + hops·hop_scale (a lone flow starts at line rate).
        init_cwnd: f64 = "packets",
        /// Losses in a row (no ACK between) that reset the window to min_cwnd
        /// (RETX_RESET_THRESHOLD).
        retx_reset: u32 = "",
    }
}

/// htsim's base target delay, us (`_base_delay = timeFromUs(20)`).
const BASE_TARGET_US: f64 = 20.0;

impl Default for SwiftParams {
    fn default() -> Self {
        SwiftParams {
            base_target: BASE_TARGET_US,
            // htsim: `_h = _base_delay / 6.55` (3.0534 us), to the nearest 10 ns.
            hop_scale: 3.05,
            hops: 1,
            // htsim: `_fs_range = 5 * _base_delay`.
            fs_range: 5.0 * BASE_TARGET_US,
            fs_min_cwnd: 0.1,
            fs_max_cwnd: 100.0,
            ai: 1.0,
            beta: 0.8,
            max_mdf: 0.5,
            min_cwnd: 0.01,
            max_cwnd: 1000.0,
            init_cwnd: 0.0,
            retx_reset: 5,
        }
    }
}

impl super::params::CcKind for SwiftParams {
    fn build(&self, line_rate: Rate) -> super::Controller {
        super::Controller::Swift(Swift::new(self.clone(), line_rate))
    }
    fn check(&self) -> Result<(), (&'static str, &'static str)> {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        let non_negative = |v: f64| v.is_finite() && v >= 0.0;
        if !positive(self.base_target) {
            return Err(("base_target", "a positive time"));
        }
        if !non_negative(self.hop_scale) {
            return Err(("hop_scale", "a time of 0 or more"));
        }
        if !non_negative(self.fs_range) {
            return Err(("fs_range", "a time of 0 or more"));
        }
        if !positive(self.fs_min_cwnd) || self.fs_min_cwnd >= self.fs_max_cwnd {
            return Err(("fs_min_cwnd", "a positive window below fs_max_cwnd"));
        }
        if !positive(self.ai) {
            return Err(("ai", "a positive number of packets"));
        }
        if !(0.0..=1.0).contains(&self.beta) || !(0.0..1.0).contains(&self.max_mdf) {
            return Err(("max_mdf", "beta in 0..=1 and max_mdf in 0..1"));
        }
        if !positive(self.min_cwnd) || !self.max_cwnd.is_finite() || self.min_cwnd > self.max_cwnd {
            return Err(("min_cwnd", "a positive window at most max_cwnd"));
        }
        if !non_negative(self.init_cwnd) {
            return Err(("init_cwnd", "a window of 0 or more"));
        }
        Ok(())
    }
}

impl SwiftParams {
    /// The target delay, ns, for a window of `cwnd` packets (§3.5).
    pub fn target_ns(&self, cwnd: f64) -> f64 {
        let hops = f64::from(self.hops) * self.hop_scale;
        (self.base_target + hops + self.flow_scaling(cwnd)) * 1e3
    }

    /// The flow-scaling term, us: `α/√cwnd + β'` clamped to `[0, fs_range]`.
    pub fn flow_scaling(&self, cwnd: f64) -> f64 {
        if self.fs_range <= 0.0 {
            return 0.0;
        }
        let span = 1.0 / self.fs_min_cwnd.sqrt() - 1.0 / self.fs_max_cwnd.sqrt();
        if span <= 0.0 || cwnd <= 0.0 {
            return self.fs_range;
        }
        let alpha = self.fs_range / span;
        let beta = -alpha / self.fs_max_cwnd.sqrt();
        (alpha / cwnd.sqrt() + beta).clamp(0.0, self.fs_range)
    }
}

/// Swift for one QP.
#[derive(Clone, Debug)]
pub struct Swift {
    p: SwiftParams,
    /// The line rate, bits/s.
    line: f64,
    /// Path MTU, bytes: the window counts packets of this payload.
    mtu: u32,
    /// The largest data frame sent so far, bytes (0: none yet): what the pacer charges per
    /// packet and what acknowledged bytes are counted in.
    frame: u64,
    /// The window, packets.
    cwnd: f64,
    /// Smoothed RTT, ns.
    srtt: Option<f64>,
    last_decrease: Option<Instant>,
    /// Losses since the last ACK.
    retransmits: u32,
    /// Whether an ACK or loss has moved the window (until then a new MTU resizes the start).
    started: bool,
    metrics: CcMetrics,
}

/// The path MTU a QP starts with (`Mtu1024`) until it tells the controller otherwise.
const DEFAULT_MTU: u32 = 1024;

impl Swift {
    /// A controller on a port of `line_rate`, its window at `init_cwnd` (or one BDP).
    pub fn new(params: SwiftParams, line_rate: Rate) -> Self {
        let mut s = Swift {
            p: params,
            line: line_rate.as_bps_f64(),
            mtu: DEFAULT_MTU,
            frame: 0,
            cwnd: 1.0,
            srtt: None,
            last_decrease: None,
            retransmits: 0,
            started: false,
            metrics: CcMetrics::default(),
        };
        s.cwnd = s.initial_cwnd();
        s.refresh();
        s
    }

    /// The window, packets.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// The target delay for the window as it is now.
    pub fn target(&self) -> Duration {
        Duration::from_nanos(self.p.target_ns(self.cwnd) as u64)
    }

    fn initial_cwnd(&self) -> f64 {
        let cwnd = if self.p.init_cwnd > 0.0 {
            self.p.init_cwnd
        } else {
            let t_s = (self.p.base_target + f64::from(self.p.hops) * self.p.hop_scale) * 1e-6;
            self.line * t_s / (f64::from(self.mtu) * 8.0)
        };
        cwnd.clamp(self.p.min_cwnd, self.p.max_cwnd.max(self.p.min_cwnd))
    }

    /// Bytes per packet on the wire: the largest frame sent, the MTU before any.
    fn packet_bytes(&self) -> f64 {
        if self.frame > 0 {
            self.frame as f64
        } else {
            f64::from(self.mtu)
        }
    }

    /// The RTT Algorithm 1 waits between cuts and paces over: smoothed, or the target until a
    /// sample came.
    fn rtt_ns(&self) -> f64 {
        self.srtt.unwrap_or_else(|| self.p.target_ns(self.cwnd))
    }

    fn can_decrease(&self, now: Instant) -> bool {
        self.last_decrease
            .is_none_or(|t| now.saturating_since(t).as_nanos() as f64 >= self.rtt_ns())
    }

    /// The pacing rate: the line rate from one packet of window up; below, one packet per
    /// rtt/cwnd.
    fn pacing_rate(&self) -> f64 {
        if self.cwnd >= 1.0 {
            return self.line;
        }
        let bits = self.packet_bytes() * 8.0 * self.cwnd;
        (bits * 1e9 / self.rtt_ns().max(1.0)).min(self.line)
    }

    /// Clamps the window after an update from `prev`, notes a cut, and refreshes the metrics.
    fn settle(&mut self, now: Instant, prev: f64) {
        self.started = true;
        let max = self.p.max_cwnd.max(self.p.min_cwnd);
        self.cwnd = self.cwnd.clamp(self.p.min_cwnd, max);
        if self.cwnd < prev {
            self.last_decrease = Some(now);
            self.metrics.rate_cuts += 1;
        } else if self.cwnd > prev {
            self.metrics.rate_increases += 1;
        }
        self.refresh();
    }

    fn refresh(&mut self) {
        self.metrics.rate = Rate::from_bps_f64(self.pacing_rate());
        let window_rate = self.cwnd * self.packet_bytes() * 8.0 * 1e9 / self.rtt_ns().max(1.0);
        self.metrics.target_rate = Rate::from_bps_f64(window_rate.min(self.line));
    }

    fn on_delay(&mut self, now: Instant, delay_ns: f64, acked_bytes: u64) {
        let can_decrease = self.can_decrease(now);
        self.srtt = Some(match self.srtt {
            Some(s) => 0.875 * s + 0.125 * delay_ns,
            None => delay_ns,
        });
        self.retransmits = 0;
        let prev = self.cwnd;
        let target = self.p.target_ns(self.cwnd);
        if delay_ns < target {
            let acked = acked_bytes as f64 / self.packet_bytes();
            if self.cwnd >= 1.0 {
                self.cwnd += self.p.ai * acked / self.cwnd;
            } else {
                self.cwnd += self.p.ai * acked;
            }
        } else if can_decrease {
            let excess = (delay_ns - target) / delay_ns.max(1.0);
            self.cwnd *= (1.0 - self.p.beta * excess).max(1.0 - self.p.max_mdf);
        }
        self.settle(now, prev);
        trace!(
            t_ns = now.as_nanos(),
            delay_ns,
            target_ns = target,
            cwnd = self.cwnd,
            "swift update"
        );
    }
}

impl CongestionControl for Swift {
    fn name(&self) -> &'static str {
        "swift"
    }
    fn on_sent(&mut self, _now: Instant, bytes: u64) {
        if bytes > self.frame {
            self.frame = bytes;
            self.refresh();
        }
    }
    fn on_ack(&mut self, now: Instant, acked_bytes: u64, rtt: Option<Duration>) {
        if let Some(rtt) = rtt {
            self.on_delay(now, rtt.as_nanos() as f64, acked_bytes);
        }
    }
    fn on_cnp(&mut self, _now: Instant) {
        self.metrics.rp_cnp_ignored += 1;
    }
    fn on_loss(&mut self, now: Instant) {
        let prev = self.cwnd;
        self.retransmits = self.retransmits.saturating_add(1);
        if self.retransmits >= self.p.retx_reset {
            self.cwnd = self.p.min_cwnd;
        } else if self.can_decrease(now) {
            self.cwnd *= 1.0 - self.p.max_mdf;
        }
        self.settle(now, prev);
    }
    fn on_path_mtu(&mut self, mtu: u32) {
        self.mtu = mtu.max(1);
        if !self.started {
            self.cwnd = self.initial_cwnd();
        }
        self.refresh();
    }
    #[inline]
    fn window(&self) -> Option<u64> {
        Some(((self.cwnd * f64::from(self.mtu)) as u64).max(1))
    }
    #[inline]
    fn has_window(&self) -> bool {
        true
    }
    #[inline]
    fn metrics(&self) -> CcMetrics {
        self.metrics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PKT: u64 = 1024;

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    fn us(n: u64) -> Option<Duration> {
        Some(Duration::from_micros(n))
    }

    /// Swift at 100 Gbit/s starting at `cwnd` packets, with `set` applied to the defaults.
    fn swift(cwnd: f64, set: impl FnOnce(&mut SwiftParams)) -> Swift {
        let mut p = SwiftParams {
            init_cwnd: cwnd,
            ..SwiftParams::default()
        };
        set(&mut p);
        Swift::new(p, Rate::from_gbps(100))
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn below_the_target_the_window_grows_by_ai_per_window_acknowledged() {
        let mut s = swift(10.0, |_| {});
        // Default target at 10 packets: 20 + 3.05 + fs(10) us, far above 5 us.
        s.on_ack(at(10_000), PKT, us(5));
        assert!(close(s.cwnd(), 10.0 + 1.0 / 10.0), "{}", s.cwnd());
        // Ten packets acknowledged at once: ai·10/cwnd.
        let before = s.cwnd();
        s.on_ack(at(11_000), 10 * PKT, us(5));
        assert!(close(s.cwnd(), before + 10.0 / before));
        // Below one packet the increase is ai per packet acknowledged.
        let mut small = swift(0.25, |_| {});
        small.on_ack(at(10_000), PKT / 2, us(5));
        assert!(close(small.cwnd(), 0.75), "{}", small.cwnd());
        assert_eq!(s.metrics().rate_increases, 2);
        assert_eq!(s.metrics().rate_cuts, 0);
    }

    #[test]
    fn above_the_target_the_window_is_cut_once_per_rtt_by_at_most_max_mdf() {
        // No scaling: the target is 20 us.
        let mut s = swift(100.0, |p| {
            p.hops = 0;
            p.fs_range = 0.0;
        });
        // 25 us: 1 − 0.8·5/25 = 0.84.
        s.on_ack(at(100_000), PKT, us(25));
        assert!(close(s.cwnd(), 84.0), "{}", s.cwnd());
        // Within the RTT (srtt 25 us) no further cut, however high the delay.
        s.on_ack(at(110_000), PKT, us(1_000));
        s.on_ack(at(124_000), PKT, us(1_000));
        assert!(close(s.cwnd(), 84.0));
        assert_eq!(s.metrics().rate_cuts, 1);
        // One RTT later (srtt is now above 25 us, so wait it out): at 1 ms the cut would be
        // 1 − 0.8·0.98, bounded by max_mdf to a half.
        let srtt = s.rtt_ns().ceil() as u64;
        s.on_ack(at(100_000 + srtt), PKT, us(1_000));
        assert!(close(s.cwnd(), 42.0), "{}", s.cwnd());
        assert_eq!(s.metrics().rate_cuts, 2);
    }

    #[test]
    fn the_target_scales_with_hops_and_falls_with_the_window() {
        let p = SwiftParams::default();
        let h = 3.05;
        // At and below fs_min_cwnd the whole range; from fs_max_cwnd up nothing.
        assert!(close(p.target_ns(0.1), (20.0 + h + 100.0) * 1e3));
        assert!(close(p.target_ns(0.01), (20.0 + h + 100.0) * 1e3));
        assert!(close(p.target_ns(100.0), (20.0 + h) * 1e3));
        assert!(close(p.target_ns(1000.0), (20.0 + h) * 1e3));
        // Between: alpha/sqrt(cwnd) + beta, alpha = 100/(1/sqrt(0.1) − 1/10).
        let alpha = 100.0 / (1.0 / 0.1f64.sqrt() - 0.1);
        let at_4 = alpha / 2.0 - alpha / 10.0;
        assert!(close(p.flow_scaling(4.0), at_4));
        assert!(close(p.target_ns(4.0), (20.0 + h + at_4) * 1e3));
        // Three hops add 3h.
        let three = SwiftParams { hops: 3, ..p };
        assert!(close(three.target_ns(100.0), (20.0 + 3.0 * h) * 1e3));
        // fs_range 0 turns flow scaling off.
        let off = SwiftParams {
            fs_range: 0.0,
            ..SwiftParams::default()
        };
        assert!(close(off.target_ns(0.1), (20.0 + h) * 1e3));
    }

    #[test]
    fn below_one_packet_the_qp_paces_one_packet_per_rtt_over_cwnd() {
        let mut s = swift(0.5, |p| {
            p.hops = 0;
            p.fs_range = 0.0;
        });
        s.on_sent(at(0), 1100);
        // A 100 us sample, five times the 20 us target: 1 − 0.8·0.8 bounded by max_mdf, 0.25.
        s.on_ack(at(100_000), 1100, us(100));
        assert!(close(s.cwnd(), 0.25));
        // One 1100-byte frame per 100 us / 0.25 = 400 us: 22 Mbit/s.
        assert_eq!(s.rate(), Rate::from_mbps(22));
        // The window holds a quarter of a packet: the QP keeps one in flight.
        assert_eq!(s.window(), Some(256));
        // From one packet up the window alone limits, at the line rate.
        let full = swift(1.0, |_| {});
        assert_eq!(full.rate(), Rate::from_gbps(100));
        assert_eq!(full.window(), Some(1024));
    }

    #[test]
    fn losses_in_a_row_reset_the_window_and_an_ack_clears_the_count() {
        let mut s = swift(64.0, |_| {});
        // The first loss cuts by max_mdf; the next ones, within that RTT, do not.
        s.on_loss(at(0));
        assert!(close(s.cwnd(), 32.0));
        for i in 1..4 {
            s.on_loss(at(i));
        }
        assert!(close(s.cwnd(), 32.0));
        // An ACK clears the count: four more losses still do not reset.
        s.on_ack(at(10), PKT, us(5));
        let after = s.cwnd();
        for i in 0..4 {
            s.on_loss(at(20 + i));
        }
        assert!(close(s.cwnd(), after));
        // The fifth in a row (RETX_RESET_THRESHOLD) does.
        s.on_loss(at(30));
        assert!(close(s.cwnd(), 0.01));
    }

    #[test]
    fn the_start_is_one_bdp_in_packets_of_the_path_mtu() {
        // 100 Gbit/s over 20 + 3.05 us in 1024-byte packets.
        let t = (20.0 + 3.05) * 1e-6;
        let mut s = swift(0.0, |_| {});
        assert!(close(s.cwnd(), 100e9 * t / 8192.0));
        s.on_path_mtu(4096);
        assert!(close(s.cwnd(), 100e9 * t / 32768.0));
        assert_eq!(s.window(), Some((s.cwnd() * 4096.0) as u64));
        // Once the window moved, a new MTU only changes its unit.
        s.on_ack(at(0), 4096, us(5));
        let cwnd = s.cwnd();
        s.on_path_mtu(1024);
        assert!(close(s.cwnd(), cwnd));
    }

    #[test]
    fn parameters_are_checked_for_what_the_rules_need() {
        use crate::cc::params::CcKind;
        assert_eq!(SwiftParams::default().check(), Ok(()));
        let bad = |set: fn(&mut SwiftParams)| {
            let mut p = SwiftParams::default();
            set(&mut p);
            p.check().err().map(|(name, _)| name)
        };
        assert_eq!(bad(|p| p.base_target = 0.0), Some("base_target"));
        assert_eq!(bad(|p| p.fs_min_cwnd = 200.0), Some("fs_min_cwnd"));
        assert_eq!(bad(|p| p.max_mdf = 1.0), Some("max_mdf"));
        assert_eq!(bad(|p| p.min_cwnd = 0.0), Some("min_cwnd"));
        assert_eq!(bad(|p| p.ai = f64::NAN), Some("ai"));
    }
}
