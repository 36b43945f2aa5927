//! TIMELY: Mittal et al., "TIMELY: RTT-based Congestion Control for the Datacenter", SIGCOMM
//! 2015. The rate follows the gradient of the RTT samples that ACKs carry; ECN/CNPs are ignored.
//! Also holds the RTT-gradient filter that [`super::PatchedTimely`] shares.
//!
//! Per RTT sample r (the paper's Algorithm 1): new_diff = r − prev;
//! rtt_diff ← (1 − a)·rtt_diff + a·new_diff; gradient = rtt_diff / min_rtt. If r > T_high:
//! R ← R(1 − β(1 − T_high/r)). If r < T_low or gradient ≤ 0: R += N·δ, with N = `hai_n` after
//! `hai_n` consecutive increases, else 1 (the paper applies N only to the gradient branch; the
//! HPCC authors' ns-3 model `UpdateRateTimely` to every increase, and so do we: after an incast
//! cuts a flow to the floor, plain δ steps take seconds to recover at 100 Gbit/s).
//! Otherwise R ← R(1 − β·gradient).
//! Defaults follow the paper (δ = 10 Mbit/s at 10 Gbit/s, scaled to 1/1000 of the line rate as
//! the HPCC authors' ns-3 run.py does; β = 0.8, T_low = 50 us, T_high = 500 us, N = 5) and that
//! ns-3 model (a = 0.875, min_rtt = 20 us). By default (`per_rtt`) a sample acts only if its
//! packet left after the last update (the model's `HandleAckTimely`), and the gradient is then
//! the change since that update: updating on every sample cuts again for each packet of one
//! congestion episode (16 flows at 400 Gbit/s: Jain 0.727 in
//! crates/roce-fabric/tests/it/cc_validation.rs). Every packet asks for its ACK (`ack_each`), as
//! that model acknowledges each: with the NIC's coalescing (one ACK request per 32 packets) the
//! sample that ends an RTT waits for the next request, and patched TIMELY's 2:1 incast at 25 Gbit/s
//! oscillated at 0.895 utilisation.

use tracing::trace;

use super::{clamp_rate, CcMetrics, CongestionControl, Rate, Window, WindowParams};
use crate::time::{Duration, Instant};

crate::cc_params! {
    /// The parameters TIMELY and patched TIMELY share: the RTT thresholds, the gradient filter,
    /// the cut above `t_high`, the additive step and the rate floor.
    pub struct RttParams {
        /// The send window beside the rate (off: run.py gives TIMELY HAS_WIN 0; its
        /// `timely_vwin` runs one).
        base win: WindowParams,
        /// Below this RTT the rate always grows.
        t_low: u32 = "us",
        /// Above this RTT the rate is cut in proportion to the excess.
        t_high: u32 = "us",
        /// Normalizes the RTT difference into a gradient.
        min_rtt: u32 = "us",
        /// EWMA weight a of the newest RTT difference.
        ewma: f64 = "",
        /// Multiplicative decrease factor beta.
        beta: f64 = "",
        /// Additive step delta (default 1/1000 of the line rate: 100 at 100 Gbit/s).
        add_step: u32 = "Mbit/s",
        /// Floor of the rate.
        min_rate: u32 = "Mbit/s",
        /// Update once per RTT (the default, as the authors' ns-3 `HandleAckTimely`: only a
        /// sample of a packet sent after the last update acts); 0 updates on every sample
        /// (Algorithm 1 as written).
        per_rtt: bool = "",
        /// Every packet asks for its ACK, so an RTT sample comes back per packet (the default,
        /// as the authors' ns-3 acknowledges each, L2_ACK_INTERVAL 1); 0: one per
        /// ack_req_interval packets, a NIC's coalescing (TIMELY's per-segment completions).
        ack_each: bool = "",
    }
}

/// The additive step delta as a fraction of the line rate.
const ADD_STEP_FRACTION: f64 = 1e-3;

impl Default for RttParams {
    /// The 100 Gbit/s values.
    fn default() -> Self {
        RttParams {
            win: WindowParams::OFF,
            t_low: 50,
            t_high: 500,
            min_rtt: 20,
            ewma: 0.875,
            beta: 0.8,
            add_step: super::rate::mbps_of(Rate::from_gbps(100), ADD_STEP_FRACTION),
            min_rate: 100,
            per_rtt: true,
            ack_each: true,
        }
    }
}

impl RttParams {
    pub(crate) fn t_low_ns(&self) -> f64 {
        f64::from(self.t_low) * 1e3
    }
    pub(crate) fn t_high_ns(&self) -> f64 {
        f64::from(self.t_high) * 1e3
    }
    pub(crate) fn delta_bps(&self) -> f64 {
        f64::from(self.add_step) * 1e6
    }
    /// The additive step for a port of `line`: the paper's 10 Mbit/s at 10 Gbit/s, 1/1000 of
    /// the line rate as the authors' ns-3 run.py scales it (`RATE_AI` = bw Mbit/s).
    pub(crate) fn scale_to(&mut self, line: Rate) {
        self.add_step = super::rate::mbps_of(line, ADD_STEP_FRACTION);
    }
}

crate::cc_params! {
    /// TIMELY parameters.
    pub struct TimelyParams {
        /// The shared RTT-gradient parameters.
        base rtt: RttParams,
        /// Hyper-additive multiplier N, used after N consecutive increases.
        hai_n: u32 = "",
    }
}

impl Default for TimelyParams {
    fn default() -> Self {
        TimelyParams {
            rtt: RttParams::default(),
            hai_n: 5,
        }
    }
}

impl super::params::CcKind for TimelyParams {
    fn build(&self, line_rate: Rate) -> super::Controller {
        super::Controller::Timely(Timely::new(self.clone(), line_rate))
    }
    fn scale_to(&mut self, line_rate: Rate) {
        self.rtt.scale_to(line_rate);
    }
}

/// The filtered RTT gradient of Algorithm 1, shared by TIMELY and patched TIMELY.
#[derive(Clone, Debug, Default)]
struct RttGradient {
    prev: Option<f64>,
    diff: f64,
}

impl RttGradient {
    /// Feeds one RTT sample (ns); returns the normalized gradient once two samples were seen.
    fn update(&mut self, rtt_ns: f64, ewma: f64, min_rtt_ns: f64) -> Option<f64> {
        let prev = self.prev.replace(rtt_ns)?;
        let a = ewma.clamp(0.0, 1.0);
        self.diff = (1.0 - a) * self.diff + a * (rtt_ns - prev);
        Some(self.diff / min_rtt_ns.max(1.0))
    }
}

/// The rate rule of an RTT-gradient controller: TIMELY's or the patched one.
pub trait RttRule {
    /// The controller's name.
    const NAME: &'static str;
    /// The shared parameters.
    fn params(&self) -> &RttParams;
    /// The new rate (bits/s, before clamping) after RTT sample `rtt_ns` with normalized
    /// `gradient`, from rate `rate`.
    fn next_rate(&mut self, rate: f64, rtt_ns: f64, gradient: f64) -> f64;
}

/// A controller driven by the RTT samples ACKs carry; it ignores CNPs.
#[derive(Clone, Debug)]
pub struct RttController<R> {
    rule: R,
    window: Window,
    max: f64,
    rc: f64,
    grad: RttGradient,
    /// When the last sample acted (for `per_rtt`).
    last_update: Option<Instant>,
    metrics: CcMetrics,
}

impl<R: RttRule> RttController<R> {
    pub(crate) fn with_rule(rule: R, line_rate: Rate) -> Self {
        let max = line_rate.as_bps_f64();
        let rate = Rate::from_bps_f64(max);
        RttController {
            window: Window::new(&rule.params().win, line_rate),
            rule,
            max,
            rc: max,
            grad: RttGradient::default(),
            last_update: None,
            metrics: CcMetrics {
                rate,
                target_rate: rate,
                ..CcMetrics::default()
            },
        }
    }

    fn on_rtt(&mut self, now: Instant, rtt: Duration) {
        let r = rtt.as_nanos() as f64;
        let p = self.rule.params();
        let (ewma, min_rtt_ns) = (p.ewma, f64::from(p.min_rtt) * 1e3);
        let min = (f64::from(p.min_rate) * 1e6).min(self.max);
        // Per RTT: a sample acts only if its packet left after the last update, so one
        // congestion episode is answered once, not once per packet in flight.
        let sent = now.as_nanos().saturating_sub(rtt.as_nanos());
        if p.per_rtt && self.last_update.is_some_and(|t| sent < t.as_nanos()) {
            return;
        }
        self.last_update = Some(now);
        let Some(gradient) = self.grad.update(r, ewma, min_rtt_ns) else {
            return;
        };
        let old = self.rc;
        self.rc = clamp_rate(self.rule.next_rate(self.rc, r, gradient), min, self.max);
        if self.rc < old {
            self.metrics.rate_cuts += 1;
        } else {
            self.metrics.rate_increases += 1;
        }
        trace!(
            t_ns = now.as_nanos(),
            rtt_ns = r,
            gradient,
            rc_bps = self.rc,
            name = R::NAME,
            "rtt update"
        );
        self.metrics.rate = Rate::from_bps_f64(self.rc);
        self.metrics.target_rate = self.metrics.rate;
    }
}

impl<R: RttRule> CongestionControl for RttController<R> {
    fn name(&self) -> &'static str {
        R::NAME
    }
    fn on_ack(&mut self, now: Instant, _acked_bytes: u64, rtt: Option<Duration>) {
        if let Some(rtt) = rtt {
            self.on_rtt(now, rtt);
        }
    }
    fn on_cnp(&mut self, _now: Instant) {
        self.metrics.rp_cnp_ignored += 1;
    }
    #[inline]
    fn window(&self) -> Option<u64> {
        self.window.bytes(self.rc, self.max)
    }
    #[inline]
    fn has_window(&self) -> bool {
        self.window.is_on()
    }
    #[inline]
    fn ack_each(&self) -> bool {
        self.rule.params().ack_each || self.has_window()
    }
    #[inline]
    fn metrics(&self) -> CcMetrics {
        self.metrics
    }
}

/// TIMELY's rule: its parameters and the count of consecutive increases.
#[derive(Clone, Debug)]
pub struct TimelyRule {
    p: TimelyParams,
    inc_stage: u32,
}

impl RttRule for TimelyRule {
    const NAME: &'static str = "timely";
    fn params(&self) -> &RttParams {
        &self.p.rtt
    }
    fn next_rate(&mut self, rate: f64, r: f64, gradient: f64) -> f64 {
        let p = &self.p.rtt;
        let delta = p.delta_bps();
        let t_high = p.t_high_ns();
        if r > t_high {
            self.inc_stage = 0;
            return rate * (1.0 - p.beta * (1.0 - t_high / r));
        }
        if r >= p.t_low_ns() && gradient > 0.0 {
            self.inc_stage = 0;
            return rate * (1.0 - (p.beta * gradient).min(1.0));
        }
        // Hyper-additive after `hai_n` increases in a row, below T_low too (as the reference
        // model's UpdateRateTimely): a flow cut to the floor recovers in tens of RTTs, not
        // thousands.
        let n = if self.inc_stage >= self.p.hai_n {
            self.p.hai_n.max(1)
        } else {
            1
        };
        self.inc_stage = self.inc_stage.saturating_add(1);
        rate + f64::from(n) * delta
    }
}

impl RttParams {
    /// The rule both variants apply outside `t_low..=t_high`: grow by delta below `t_low`, cut
    /// in proportion to the excess above `t_high`; `None` inside the band.
    pub(crate) fn outside_band(&self, rate: f64, r: f64) -> Option<f64> {
        let t_high = self.t_high_ns();
        if r < self.t_low_ns() {
            Some(rate + self.delta_bps())
        } else if r > t_high {
            Some(rate * (1.0 - self.beta * (1.0 - t_high / r)))
        } else {
            None
        }
    }
}

/// TIMELY for one QP.
pub type Timely = RttController<TimelyRule>;

impl Timely {
    /// A controller starting at `line_rate`.
    pub fn new(params: TimelyParams, line_rate: Rate) -> Self {
        Self::with_rule(
            TimelyRule {
                p: params,
                inc_stage: 0,
            },
            line_rate,
        )
    }
}
