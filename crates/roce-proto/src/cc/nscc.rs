//! NSCC: Ultra Ethernet 1.0's Network Signal-based Congestion Control, the sender-based window
//! controller of the UET congestion management sublayer. Per ACK it combines two signals, the
//! ECN mark and the queueing delay (the RTT sample less the base RTT), into four cases; on
//! severe congestion a quick adapt resets the window to what was delivered in the last period.
//! Below one packet of window it paces instead, as [`Swift`](super::Swift) does.
//!
//! Source: the UEC 1.0 specification's NSCC section is not public text this crate could check,
//! so the rules and every default constant are those of htsim's UEC model (`sim/uec.cpp`,
//! the csg-htsim line of simulators: `UecSrc::initNsccParams`, `updateCwndOnAck_NSCC`,
//! `quick_adapt`, `fair_increase`, `proportional_increase`, `fast_increase`,
//! `multiplicative_decrease`, `fulfill_adjustment`, `update_delay`, `update_base_rtt`,
//! `updateCwndOnNack_NSCC`). The four cases as htsim runs them, per ACK covering `B` new bytes
//! with queueing delay `d` and target `t` (`target_qdelay`):
//! - not marked, `d < t` (no congestion): proportional increase, `inc += α·(t − d)·B` plus the
//!   fair increase; while `d` stays under 1 us for more than a window of ACKs, fast increase
//!   instead (`cwnd += B/2` per ACK).
//! - not marked, `d ≥ t` (a queue that is not ours, or draining): fair increase only,
//!   `inc += fi·mtu·B`.
//! - marked, `d < t` (a queue building but short): hold; nothing changes.
//! - marked, `d ≥ t` (congestion): multiplicative decrease, at most once per base RTT, by the
//!   *average* delay's excess: `cwnd ·= max(1 − γ·(avg − t)/avg, 1 − max_md)` when `avg > t`.
//!
//! The pending increase is applied in one step (`cwnd += min(adjust_bytes, inc/cwnd)`) once
//! `adjust_bytes` were acknowledged or `adjust_period` passed since the last step, and every
//! `adjust_period` the window also grows by `η` (a fairness nudge). The average delay is an
//! EWMA of gain 1/80 (`update_delay`; an unmarked ACK over the target pulls it towards a quarter
//! of the base RTT instead). The window stays in `[min_cwnd, max_window·BDP]`, BDP over the base
//! RTT.
//!
//! Quick adapt: once per period (base RTT + target, `_qa_endtime`), if the average delay
//! exceeds `qa_threshold·t` or a loss occurred in it, the window drops to the bytes
//! acknowledged in the period (never raised by it), and marked ACKs are then ignored until what
//! was in flight has been acknowledged. A loss (NACK) takes one packet off the window and asks
//! for a quick adapt.
//!
//! Scaling (htsim `initNsccParams`; its comment cites the spec for `a`):
//! `a = BDP / (100 Gbit/s · 12 us)` with BDP the line rate over `network_rtt`,
//! `b = t / 12 us`; `α = pi·a·b·mtu/t` (pi 4), `fi = fi·a` (5), `η = eta·a·mtu` (0.15),
//! `adjust_bytes = 16000·b`, adjust period 12 us, `γ` 0.8, the cut at most a half, quick adapt
//! at 4·t, base and target 12 and 6 us, the window from 1 MTU to 1.5 BDP, starting at the top.
//!
//! What the core measures, and where this departs from htsim (or says what it is silent on):
//! - ECN: a RoCE receiver returns marks as CNPs, not as an ECE bit on the ACK. As DCTCP here
//!   gets them ([`super::Dctcp`]), the notification point answers every mark
//!   ([`cnp_interval`](super::params::CcKind::cnp_interval) 1 ns); the next ACK after one or
//!   more CNPs counts as marked. With an ACK per packet (the window asks for one) that is the
//!   marked packet's own ACK when its CNP arrives first, else the next packet's.
//! - Delay: the QP's RTT sample ([`crate::qp::rtt`]) less the base RTT. The base RTT starts at
//!   `network_rtt` and falls to the smallest sample seen, as `update_base_rtt` does (htsim
//!   only counts full-size packets; every sample counts here).
//! - Windows are counted in packets of the path MTU ([`on_path_mtu`](CongestionControl::on_path_mtu)),
//!   as the QP's send gate counts them; htsim counts bytes with a 4 KiB MSS. Acknowledged bytes
//!   (whole frames) are turned into packets by the largest frame sent.
//! - After a quick adapt htsim ignores marked ACKs until the bytes in flight at that moment are
//!   acknowledged; the controller does not see the QP's bytes in flight, so the window before
//!   the quick adapt (which bounds them) stands in. The next period starts at the quick adapt
//!   (htsim restarts it on the ACK after, which amounts to the same).
//! - Losses: the transport reports NAK sequence errors and ACK timeouts alike
//!   ([`CongestionControl::on_loss`]); both take the NACK rule (htsim's timeout path likewise
//!   takes one packet off the window).
//! - Not modelled: receiver credit (RCCC), entropy/path selection, htsim's `rcv_wnd_pen`.

use tracing::trace;

use super::{CcMetrics, CongestionControl, Rate};
use crate::time::{Duration, Instant};

crate::cc_params! {
    /// NSCC parameters (htsim's names where it has them; defaults from htsim, see the module
    /// docs).
    pub struct NsccParams {
        /// Target queueing delay t (`_target_Qdelay`).
        target_qdelay: f64 = "us",
        /// The fabric's base RTT: the start of each QP's base RTT (then the smallest sample)
        /// and the BDP the constants scale with (`network_rtt`).
        network_rtt: f64 = "us",
        /// Multiplicative decrease gain gamma (of the average delay's excess).
        gamma: f64 = "",
        /// Largest fraction one decrease may cut (htsim: 0.5).
        max_md: f64 = "",
        /// Proportional increase factor pi: alpha = pi·a·b·mtu/t.
        pi: f64 = "",
        /// Fair increase factor: fi = fi·a packets per window acknowledged.
        fi: f64 = "",
        /// Periodic increase factor: eta = eta·a packets per adjust period.
        eta: f64 = "",
        /// The period of the increase step and of eta (`_adjust_period_threshold`).
        adjust_period: f64 = "us",
        /// Quick adapt when the average delay exceeds this many targets (`_qa_threshold`).
        qa_threshold: f64 = "",
        /// EWMA gain of the average delay (`_delay_alpha`).
        delay_alpha: f64 = "",
        /// Fast increase while the delay stays under this (htsim: 1 us); 0: off.
        fast_increase_delay: f64 = "us",
        /// Ceiling of the window, in BDPs of the line rate over the base RTT (`_maxwnd`).
        max_window: f64 = "BDP",
        /// Floor of the window (htsim: one MTU; below one packet the QP paces).
        min_cwnd: f64 = "packets",
        /// Window at start; 0: the ceiling (htsim `initNscc` with cwnd 0).
        init_cwnd: f64 = "packets",
    }
}

/// htsim's reference network: 100 Gbit/s over 12 us (`_reference_network_*`), bytes.
const REFERENCE_BDP_BYTES: f64 = 100e9 / 8.0 * 12e-6;
/// htsim's reference RTT, us.
const REFERENCE_RTT_US: f64 = 12.0;
/// htsim: `_adjust_bytes_threshold = 16000·b`.
const ADJUST_BYTES_PER_B: f64 = 16_000.0;

impl Default for NsccParams {
    fn default() -> Self {
        NsccParams {
            target_qdelay: 6.0,
            network_rtt: REFERENCE_RTT_US,
            gamma: 0.8,
            max_md: 0.5,
            pi: 4.0,
            fi: 5.0,
            eta: 0.15,
            adjust_period: REFERENCE_RTT_US,
            qa_threshold: 4.0,
            delay_alpha: 0.0125,
            fast_increase_delay: 1.0,
            max_window: 1.5,
            min_cwnd: 1.0,
            init_cwnd: 0.0,
        }
    }
}

impl super::params::CcKind for NsccParams {
    fn build(&self, line_rate: Rate) -> super::Controller {
        super::Controller::Nscc(Nscc::new(self.clone(), line_rate))
    }
    fn check(&self) -> Result<(), (&'static str, &'static str)> {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        let non_negative = |v: f64| v.is_finite() && v >= 0.0;
        if !positive(self.target_qdelay) {
            return Err(("target_qdelay", "a positive time"));
        }
        if !positive(self.network_rtt) {
            return Err(("network_rtt", "a positive time"));
        }
        if !(0.0..=1.0).contains(&self.gamma) || !(0.0..1.0).contains(&self.max_md) {
            return Err(("max_md", "gamma in 0..=1 and max_md in 0..1"));
        }
        for (name, v) in [("pi", self.pi), ("fi", self.fi), ("eta", self.eta)] {
            if !non_negative(v) {
                return Err((name, "a factor of 0 or more"));
            }
        }
        if !positive(self.adjust_period) {
            return Err(("adjust_period", "a positive time"));
        }
        if !positive(self.qa_threshold) {
            return Err(("qa_threshold", "a positive number of targets"));
        }
        if !(self.delay_alpha > 0.0 && self.delay_alpha <= 1.0) {
            return Err(("delay_alpha", "a gain in (0, 1]"));
        }
        if !non_negative(self.fast_increase_delay) {
            return Err(("fast_increase_delay", "a time of 0 or more"));
        }
        if !positive(self.max_window) {
            return Err(("max_window", "a positive number of BDPs"));
        }
        if !positive(self.min_cwnd) {
            return Err(("min_cwnd", "a positive window"));
        }
        if !non_negative(self.init_cwnd) {
            return Err(("init_cwnd", "a window of 0 or more"));
        }
        Ok(())
    }
    /// Every mark must come back (the four cases read one mark per ACK), as for DCTCP.
    fn cnp_interval(&self) -> Duration {
        Duration::from_nanos(1)
    }
}

impl NsccParams {
    /// htsim's `a`: the BDP of `line_bps` over `network_rtt` against 100 Gbit/s over 12 us.
    pub fn scaling_a(&self, line_bps: f64) -> f64 {
        line_bps / 8.0 * self.network_rtt * 1e-6 / REFERENCE_BDP_BYTES
    }

    /// htsim's `b`: the target against 12 us.
    pub fn scaling_b(&self) -> f64 {
        self.target_qdelay / REFERENCE_RTT_US
    }
}

/// NSCC for one QP.
#[derive(Clone, Debug)]
pub struct Nscc {
    p: NsccParams,
    /// The line rate, bits/s.
    line: f64,
    /// Path MTU, bytes: the window counts packets of this payload.
    mtu: u32,
    /// The largest data frame sent so far, bytes (0: none yet).
    frame: u64,
    /// The window, packets.
    cwnd: f64,
    /// Base RTT, ns: `network_rtt`, then the smallest sample.
    base_rtt: f64,
    /// Average queueing delay, ns.
    avg_delay: f64,
    /// A CNP arrived since the last ACK.
    marked: bool,
    /// Pending increase, packets² (applied as `inc/cwnd`).
    inc: f64,
    /// Bytes acknowledged since the last increase step.
    received: f64,
    last_adjust: Instant,
    last_eta: Instant,
    last_decrease: Instant,
    /// Packets acknowledged with the delay under the fast-increase bound.
    fi_count: f64,
    increasing: bool,
    /// Packets acknowledged in the current quick-adapt period.
    achieved: f64,
    /// End of the current quick-adapt period (`None`: the first ACK starts one).
    qa_end: Option<Instant>,
    trigger_qa: bool,
    /// After a quick adapt: packets to acknowledge before marks count again, and so far.
    to_ignore: f64,
    ignored: f64,
    /// Whether an ACK or loss has moved the window (until then a new MTU resizes the start).
    started: bool,
    metrics: CcMetrics,
}

/// The path MTU a QP starts with (`Mtu1024`) until it tells the controller otherwise.
const DEFAULT_MTU: u32 = 1024;

impl Nscc {
    /// A controller on a port of `line_rate`, its window at `init_cwnd` (or the ceiling).
    pub fn new(params: NsccParams, line_rate: Rate) -> Self {
        let base_rtt = params.network_rtt * 1e3;
        let mut s = Nscc {
            p: params,
            line: line_rate.as_bps_f64(),
            mtu: DEFAULT_MTU,
            frame: 0,
            cwnd: 1.0,
            base_rtt,
            avg_delay: 0.0,
            marked: false,
            inc: 0.0,
            received: 0.0,
            last_adjust: Instant::ZERO,
            last_eta: Instant::ZERO,
            last_decrease: Instant::ZERO,
            fi_count: 0.0,
            increasing: false,
            achieved: 0.0,
            qa_end: None,
            trigger_qa: false,
            to_ignore: 0.0,
            ignored: 0.0,
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

    /// The base RTT the delay is measured against.
    pub fn base_rtt(&self) -> Duration {
        Duration::from_nanos(self.base_rtt as u64)
    }

    /// The average queueing delay.
    pub fn avg_delay(&self) -> Duration {
        Duration::from_nanos(self.avg_delay as u64)
    }

    /// The ceiling: `max_window` BDPs of the line rate over the base RTT, packets.
    pub fn max_cwnd(&self) -> f64 {
        let bdp = self.line / 8.0 * self.base_rtt * 1e-9 / f64::from(self.mtu);
        (self.p.max_window * bdp).max(self.p.min_cwnd)
    }

    fn initial_cwnd(&self) -> f64 {
        let max = self.max_cwnd();
        if self.p.init_cwnd > 0.0 {
            self.p.init_cwnd.clamp(self.p.min_cwnd, max)
        } else {
            max
        }
    }

    fn target_ns(&self) -> f64 {
        self.p.target_qdelay * 1e3
    }

    /// Bytes per packet on the wire: the largest frame sent, the MTU before any.
    fn packet_bytes(&self) -> f64 {
        if self.frame > 0 {
            self.frame as f64
        } else {
            f64::from(self.mtu)
        }
    }

    /// The RTT the pacer spreads a window below one packet over: base RTT plus target.
    fn rtt_ns(&self) -> f64 {
        self.base_rtt + self.target_ns()
    }

    fn pacing_rate(&self) -> f64 {
        if self.cwnd >= 1.0 {
            return self.line;
        }
        let bits = self.packet_bytes() * 8.0 * self.cwnd;
        (bits * 1e9 / self.rtt_ns().max(1.0)).min(self.line)
    }

    fn refresh(&mut self) {
        self.metrics.rate = Rate::from_bps_f64(self.pacing_rate());
        let window_rate = self.cwnd * self.packet_bytes() * 8.0 * 1e9 / self.rtt_ns().max(1.0);
        self.metrics.target_rate = Rate::from_bps_f64(window_rate.min(self.line));
    }

    /// Clamps the window after an update from `prev` and refreshes the metrics.
    fn settle(&mut self, prev: f64) {
        self.started = true;
        self.cwnd = self.cwnd.clamp(self.p.min_cwnd, self.max_cwnd());
        if self.cwnd < prev {
            self.metrics.rate_cuts += 1;
        } else if self.cwnd > prev {
            self.metrics.rate_increases += 1;
        }
        self.refresh();
    }

    /// `update_delay`: the average queueing delay after a sample of `delay` ns.
    fn update_avg(&mut self, delay: f64, marked: bool) {
        let g = self.p.delay_alpha;
        let sample = if !marked && delay > self.target_ns() {
            self.base_rtt * 0.25
        } else {
            delay
        };
        self.avg_delay = g * sample + (1.0 - g) * self.avg_delay;
    }

    /// `quick_adapt`: at the end of a period, if it saw a loss or the average delay is past
    /// `qa_threshold` targets, the window drops to what the period delivered. True if it did.
    fn quick_adapt(&mut self, now: Instant, loss: bool) -> bool {
        if self.qa_end.is_some_and(|end| now <= end) {
            return false;
        }
        let severe =
            self.trigger_qa || loss || self.avg_delay > self.p.qa_threshold * self.target_ns();
        let adapted = self.qa_end.is_some() && severe && self.cwnd >= self.achieved;
        if adapted {
            let prev = self.cwnd;
            self.cwnd = self.achieved.max(self.p.min_cwnd);
            self.to_ignore = prev;
            self.ignored = 0.0;
            self.trigger_qa = false;
            trace!(
                t_ns = now.as_nanos(),
                from = prev,
                cwnd = self.cwnd,
                "nscc quick adapt"
            );
        }
        self.achieved = 0.0;
        self.qa_end = Some(now + Duration::from_nanos(self.rtt_ns() as u64));
        adapted
    }

    /// `proportional_increase` with its `fast_increase` (which, once the delay has stayed under
    /// its bound for a window, grows the window by half of what each ACK covers instead).
    fn proportional_increase(&mut self, acked: f64, delay: f64) {
        let fast = self.p.fast_increase_delay * 1e3;
        if delay < fast {
            self.fi_count += acked;
            if self.fi_count > self.cwnd || self.increasing {
                self.cwnd += acked * 0.5;
                self.increasing = true;
                return;
            }
        } else {
            self.fi_count = 0.0;
        }
        self.increasing = false;
        let alpha = self.p.pi * self.p.scaling_a(self.line) * self.p.scaling_b();
        self.inc += alpha * (self.target_ns() - delay) / self.target_ns() * acked;
        self.fair_increase(acked);
    }

    fn fair_increase(&mut self, acked: f64) {
        self.inc += self.p.fi * self.p.scaling_a(self.line) * acked;
    }

    /// `multiplicative_decrease`: by the average delay's excess, once per base RTT. True if
    /// it cut.
    fn multiplicative_decrease(&mut self, now: Instant) -> bool {
        self.increasing = false;
        self.fi_count = 0.0;
        let avg = self.avg_delay;
        let target = self.target_ns();
        let since = now.saturating_since(self.last_decrease).as_nanos() as f64;
        if avg > target && since > self.base_rtt {
            self.cwnd *= (1.0 - self.p.gamma * (avg - target) / avg).max(1.0 - self.p.max_md);
            self.last_decrease = now;
            return true;
        }
        false
    }

    /// The periodic steps: the pending increase (`fulfill_adjustment`) and eta.
    fn adjust(&mut self, now: Instant) {
        let period = self.p.adjust_period * 1e3;
        let adjust_bytes = ADJUST_BYTES_PER_B * self.p.scaling_b();
        let elapsed = |t: Instant| now.saturating_since(t).as_nanos() as f64;
        if self.received > adjust_bytes || elapsed(self.last_adjust) > period {
            let cap = adjust_bytes / f64::from(self.mtu);
            self.cwnd += cap.min(self.inc / self.cwnd.max(f64::MIN_POSITIVE));
            self.inc = 0.0;
            self.received = 0.0;
            self.last_adjust = now;
        }
        if elapsed(self.last_eta) > period {
            self.cwnd += self.p.eta * self.p.scaling_a(self.line);
            self.last_eta = now;
        }
    }

    fn on_delay(&mut self, now: Instant, rtt: Option<f64>, acked_bytes: u64) {
        let prev = self.cwnd;
        let acked = acked_bytes as f64 / self.packet_bytes();
        self.achieved += acked;
        self.ignored += acked;
        self.received += acked_bytes as f64;
        let marked = core::mem::take(&mut self.marked);
        let delay = match rtt {
            Some(r) => {
                if r < self.base_rtt {
                    self.base_rtt = r;
                }
                let d = r - self.base_rtt;
                self.update_avg(d, marked);
                d
            }
            None => self.avg_delay,
        };
        if marked && self.ignored < self.to_ignore {
            self.metrics.rp_cnp_ignored += 1;
            self.settle(prev);
            return;
        }
        if self.quick_adapt(now, false) {
            self.metrics.cnp_rate_cuts += u64::from(marked);
            self.settle(prev);
            return;
        }
        let target = self.target_ns();
        match (marked, delay >= target) {
            (false, true) => self.fair_increase(acked),
            (false, false) => self.proportional_increase(acked, delay),
            (true, true) => {
                if self.multiplicative_decrease(now) {
                    self.metrics.cnp_rate_cuts += 1;
                } else {
                    self.metrics.rp_cnp_ignored += 1;
                }
            }
            (true, false) => self.metrics.rp_cnp_ignored += 1,
        }
        self.adjust(now);
        self.settle(prev);
        trace!(
            t_ns = now.as_nanos(),
            delay_ns = delay,
            avg_ns = self.avg_delay,
            marked,
            cwnd = self.cwnd,
            "nscc update"
        );
    }
}

impl CongestionControl for Nscc {
    fn name(&self) -> &'static str {
        "nscc"
    }
    fn on_sent(&mut self, _now: Instant, bytes: u64) {
        if bytes > self.frame {
            self.frame = bytes;
            self.refresh();
        }
    }
    fn on_ack(&mut self, now: Instant, acked_bytes: u64, rtt: Option<Duration>) {
        self.on_delay(now, rtt.map(|r| r.as_nanos() as f64), acked_bytes);
    }
    fn on_cnp(&mut self, _now: Instant) {
        if self.marked {
            // Folded into the mark the next ACK already carries.
            self.metrics.rp_cnp_ignored += 1;
        }
        self.marked = true;
    }
    fn on_loss(&mut self, now: Instant) {
        let prev = self.cwnd;
        self.cwnd -= 1.0;
        self.cwnd = self.cwnd.max(self.p.min_cwnd);
        self.trigger_qa = true;
        if self.ignored >= self.to_ignore {
            self.quick_adapt(now, true);
        }
        self.settle(prev);
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

    fn at(us: f64) -> Instant {
        Instant::from_nanos((us * 1e3) as u64)
    }

    /// An RTT sample of the default 12 us base RTT plus `d` us of queueing.
    fn rtt(d: f64) -> Option<Duration> {
        Some(Duration::from_nanos(((12.0 + d) * 1e3) as u64))
    }

    /// NSCC at 100 Gbit/s (a = 1, b = 0.5 with the defaults) starting at `cwnd` packets, with
    /// `set` applied to the defaults.
    fn nscc(cwnd: f64, set: impl FnOnce(&mut NsccParams)) -> Nscc {
        let mut p = NsccParams {
            init_cwnd: cwnd,
            ..NsccParams::default()
        };
        set(&mut p);
        Nscc::new(p, Rate::from_gbps(100))
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn unmarked_under_the_target_increases_proportionally_to_the_delay_left() {
        let mut s = nscc(10.0, |p| p.fast_increase_delay = 0.0);
        // d = 2 us of t = 6: alpha·(t − d)/t = 4·1·0.5·4/6 of a packet, plus fi = 5; applied
        // as inc/cwnd at once (the adjust period has passed), then eta 0.15.
        s.on_ack(at(100.0), PKT, rtt(2.0));
        let inc = 4.0 * 0.5 * 4.0 / 6.0 + 5.0;
        assert!(close(s.cwnd(), 10.0 + inc / 10.0 + 0.15), "{}", s.cwnd());
        assert_eq!(s.metrics().rate_increases, 1);
        assert_eq!(s.metrics().rate_cuts, 0);
    }

    #[test]
    fn unmarked_over_the_target_increases_fairly_only() {
        let mut s = nscc(10.0, |p| p.fast_increase_delay = 0.0);
        s.on_ack(at(100.0), PKT, rtt(7.0));
        assert!(close(s.cwnd(), 10.0 + 5.0 / 10.0 + 0.15), "{}", s.cwnd());
        // Unmarked delays over the target pull the average towards a quarter of the base RTT.
        assert_eq!(s.avg_delay(), Duration::from_nanos(37));
    }

    #[test]
    fn marked_under_the_target_holds_the_window() {
        let mut s = nscc(10.0, |p| p.eta = 0.0);
        s.on_cnp(at(99.0));
        s.on_ack(at(100.0), PKT, rtt(2.0));
        assert!(close(s.cwnd(), 10.0), "{}", s.cwnd());
        assert_eq!(s.metrics().rp_cnp_ignored, 1);
        assert_eq!(s.metrics().rate_cuts + s.metrics().rate_increases, 0);
    }

    #[test]
    fn marked_over_the_target_cuts_by_the_average_excess_once_per_base_rtt() {
        let mut s = nscc(10.0, |p| {
            p.eta = 0.0;
            p.delay_alpha = 1.0;
        });
        // Average 9 us against t = 6: 1 − 0.8·3/9.
        s.on_cnp(at(99.0));
        s.on_ack(at(100.0), PKT, rtt(9.0));
        assert!(close(s.cwnd(), 10.0 * (1.0 - 0.8 / 3.0)), "{}", s.cwnd());
        assert_eq!(s.metrics().cnp_rate_cuts, 1);
        // Within the base RTT (12 us) no second cut.
        let after = s.cwnd();
        s.on_cnp(at(105.0));
        s.on_ack(at(105.0), PKT, rtt(9.0));
        assert!(close(s.cwnd(), after));
        // After it, a 20 us average would cut 1 − 0.8·14/20 = 0.44, bounded to a half.
        s.on_cnp(at(113.0));
        s.on_ack(at(113.0), PKT, rtt(20.0));
        assert!(close(s.cwnd(), after * 0.5), "{}", s.cwnd());
        assert_eq!(s.metrics().cnp_rate_cuts, 2);
        assert_eq!(s.metrics().rate_cuts, 2);
    }

    #[test]
    fn cnps_between_two_acks_mark_one_ack() {
        let mut s = nscc(10.0, |p| p.delay_alpha = 1.0);
        s.on_cnp(at(99.0));
        s.on_cnp(at(99.5));
        s.on_ack(at(100.0), PKT, rtt(9.0));
        assert_eq!(s.metrics().cnp_rate_cuts, 1);
        assert_eq!(s.metrics().rp_cnp_ignored, 1);
        // The next ACK is unmarked: neither a cut nor a mark held (a marked ACK within the
        // base RTT of the cut would count one more in rp_cnp_ignored).
        let cut = s.cwnd();
        s.on_ack(at(101.0), PKT, rtt(9.0));
        assert!(close(s.cwnd(), cut));
        assert_eq!(s.metrics().cnp_rate_cuts, 1);
        assert_eq!(s.metrics().rp_cnp_ignored, 1);
    }

    #[test]
    fn fast_increase_after_a_window_of_acks_near_the_base_rtt() {
        // No periodic steps in this test: the increase seen is fast increase alone.
        let mut s = nscc(2.0, |p| p.adjust_period = 1e6);
        for i in 0..2 {
            s.on_ack(at(10.0 + f64::from(i)), PKT, rtt(0.0));
            assert!(close(s.cwnd(), 2.0), "{}", s.cwnd());
        }
        // The third packet under 1 us passes the window: half of each ACK's packet from now.
        s.on_ack(at(12.0), PKT, rtt(0.0));
        assert!(close(s.cwnd(), 2.5));
        s.on_ack(at(13.0), PKT, rtt(0.0));
        assert!(close(s.cwnd(), 3.0));
        // A delay over 1 us ends it.
        s.on_ack(at(14.0), PKT, rtt(2.0));
        assert!(close(s.cwnd(), 3.0));
    }

    #[test]
    fn quick_adapt_sets_the_window_to_what_the_period_delivered() {
        let mut s = nscc(100.0, |p| p.delay_alpha = 1.0);
        // The first ACK starts a period of base RTT + target: 12 + 6 us.
        s.on_ack(at(10.0), PKT, rtt(2.0));
        for i in 0..5 {
            s.on_ack(at(12.0 + f64::from(i)), PKT, rtt(2.0));
        }
        assert!(s.cwnd() > 100.0);
        // Past the period's end (28 us) a marked ACK brings the average to 30 us, over
        // 4·t = 24: the window becomes the 6 packets acknowledged since the period began.
        s.on_cnp(at(29.0));
        s.on_ack(at(30.0), PKT, rtt(30.0));
        assert!(close(s.cwnd(), 6.0), "{}", s.cwnd());
        assert_eq!(s.metrics().rate_cuts, 1);
        // Marks are ignored until what was in flight (the old window) is acknowledged.
        s.on_cnp(at(50.0));
        s.on_ack(at(50.0), PKT, rtt(30.0));
        assert!(close(s.cwnd(), 6.0));
        assert_eq!(s.metrics().rate_cuts, 1);
        assert_eq!(s.metrics().rp_cnp_ignored, 1);
    }

    #[test]
    fn a_loss_takes_a_packet_and_asks_for_a_quick_adapt() {
        let mut s = nscc(20.0, |p| p.eta = 0.0);
        s.on_ack(at(10.0), PKT, rtt(7.0));
        let before = s.cwnd();
        // Within the period: one packet off now, the quick adapt at the period's end.
        s.on_loss(at(15.0));
        assert!(close(s.cwnd(), before - 1.0));
        for i in 0..3 {
            s.on_ack(at(20.0 + f64::from(i)), PKT, rtt(7.0));
        }
        s.on_ack(at(30.0), PKT, rtt(7.0));
        assert!(close(s.cwnd(), 4.0), "{}", s.cwnd());
        // A loss after a period's end adapts at once: two packets acknowledged in it.
        let mut s = nscc(20.0, |p| p.eta = 0.0);
        for t in [10.0, 20.0, 21.0] {
            s.on_ack(at(t), PKT, rtt(7.0));
        }
        s.on_loss(at(30.0));
        assert!(close(s.cwnd(), 2.0), "{}", s.cwnd());
    }

    #[test]
    fn the_window_stays_between_its_floor_and_one_and_a_half_bdp() {
        // 1.5 BDP of 100 Gbit/s over the 12 us base RTT, in 1024-byte packets.
        let max = 1.5 * 100e9 / 8.0 * 12e-6 / 1024.0;
        let mut s = nscc(0.0, |_| {});
        assert!(close(s.cwnd(), max));
        assert!(close(s.max_cwnd(), max));
        for i in 0..50 {
            s.on_ack(at(100.0 + 13.0 * f64::from(i)), 8 * PKT, rtt(0.5));
        }
        assert!(close(s.cwnd(), max));
        // The base RTT falls to the smallest sample, and the ceiling with it.
        s.on_ack(at(1_000.0), PKT, Some(Duration::from_micros(6)));
        assert_eq!(s.base_rtt(), Duration::from_micros(6));
        assert!(close(s.cwnd(), max / 2.0), "{}", s.cwnd());
        // Losses stop at min_cwnd.
        let mut low = nscc(3.0, |_| {});
        for i in 0..10 {
            low.on_loss(at(f64::from(i)));
        }
        assert!(close(low.cwnd(), 1.0));
        assert_eq!(low.window(), Some(1024));
        assert_eq!(low.rate(), Rate::from_gbps(100));
    }

    #[test]
    fn below_one_packet_the_qp_paces_over_the_target_rtt() {
        let mut s = nscc(0.25, |p| p.min_cwnd = 0.25);
        s.on_sent(at(0.0), 1100);
        // A quarter of an 1100-byte frame per 12 + 6 us: 2200 bits / 18 us.
        assert_eq!(s.rate(), Rate::from_bps_f64(2200.0 / 18e-6));
        assert_eq!(s.window(), Some(256));
    }

    #[test]
    fn the_start_is_the_ceiling_in_packets_of_the_path_mtu() {
        let mut s = nscc(0.0, |_| {});
        s.on_path_mtu(4096);
        assert!(close(s.cwnd(), 1.5 * 150_000.0 / 4096.0));
        s.on_ack(at(100.0), 4096, rtt(7.0));
        let cwnd = s.cwnd();
        s.on_path_mtu(1024);
        assert!(close(s.cwnd(), cwnd));
    }

    #[test]
    fn constants_scale_with_the_bdp_and_the_target() {
        let p = NsccParams::default();
        assert!(close(p.scaling_a(100e9), 1.0));
        assert!(close(p.scaling_a(400e9), 4.0));
        assert!(close(p.scaling_b(), 0.5));
        let small = NsccParams {
            network_rtt: 6.0,
            target_qdelay: 3.0,
            ..p
        };
        assert!(close(small.scaling_a(100e9), 0.5));
        assert!(close(small.scaling_b(), 0.25));
    }

    #[test]
    fn parameters_are_checked_for_what_the_rules_need() {
        use crate::cc::params::CcKind;
        assert_eq!(NsccParams::default().check(), Ok(()));
        let bad = |set: fn(&mut NsccParams)| {
            let mut p = NsccParams::default();
            set(&mut p);
            p.check().err().map(|(name, _)| name)
        };
        assert_eq!(bad(|p| p.target_qdelay = 0.0), Some("target_qdelay"));
        assert_eq!(bad(|p| p.max_md = 1.0), Some("max_md"));
        assert_eq!(bad(|p| p.fi = -1.0), Some("fi"));
        assert_eq!(bad(|p| p.delay_alpha = 0.0), Some("delay_alpha"));
        assert_eq!(bad(|p| p.min_cwnd = 0.0), Some("min_cwnd"));
        assert_eq!(bad(|p| p.network_rtt = f64::NAN), Some("network_rtt"));
    }
}
