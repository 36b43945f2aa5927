//! Patched TIMELY: Zhu et al., "ECN or Delay: Lessons Learnt from Analysis of DCQCN and TIMELY",
//! CoNEXT 2016. TIMELY's pure-gradient rule has no unique fixed point; the patch weighs the
//! gradient against the absolute RTT error so that flows converge to a fair share.
//!
//! Per RTT sample r with gradient g (as in [`super::Timely`]): r < T_low: R += δ; r > T_high:
//! R ← R(1 − β(1 − T_high/r)); otherwise w(g) = 0 for g ≤ −1/4, 2g + 1/2 in between, 1 for
//! g ≥ 1/4, e = (r − RTT_ref)/RTT_ref, and R ← δ(1 − w) + R(1 − β'·w·e). β' = 0.008 follows the
//! paper; RTT_ref = 100 us is our default (set it to the fabric's target queueing RTT).

use tracing::trace;

use super::timely::RttGradient;
use super::{clamp_rate, CcMetrics, CongestionControl, Rate};
use crate::time::{Duration, Instant};

crate::cc_params! {
    /// Patched TIMELY parameters.
    pub struct PatchedTimelyParams {
        /// Below this RTT the rate always grows.
        t_low: u32 = "us",
        /// Above this RTT the rate is cut in proportion to the excess.
        t_high: u32 = "us",
        /// Normalizes the RTT difference into a gradient.
        min_rtt: u32 = "us",
        /// EWMA weight of the newest RTT difference.
        ewma: f64 = "",
        /// Decrease factor beta above T_high.
        beta: f64 = "",
        /// Decrease factor beta' of the weighted RTT error.
        beta_patch: f64 = "",
        /// The RTT the weighted error is measured against.
        rtt_ref: u32 = "us",
        /// Additive step delta.
        add_step: u32 = "Mbit/s",
        /// Floor of the rate.
        min_rate: u32 = "Mbit/s",
    }
}

impl Default for PatchedTimelyParams {
    fn default() -> Self {
        PatchedTimelyParams {
            t_low: 50,
            t_high: 500,
            min_rtt: 20,
            ewma: 0.875,
            beta: 0.8,
            beta_patch: 0.008,
            rtt_ref: 100,
            add_step: 10,
            min_rate: 100,
        }
    }
}

/// Patched TIMELY for one QP.
#[derive(Clone, Debug)]
pub struct PatchedTimely {
    p: PatchedTimelyParams,
    max: f64,
    rc: f64,
    grad: RttGradient,
    metrics: CcMetrics,
}

impl PatchedTimely {
    /// A controller starting at `line_rate`.
    pub fn new(params: PatchedTimelyParams, line_rate: Rate) -> Self {
        let max = line_rate.as_bps_f64();
        let mut t = PatchedTimely {
            p: params,
            max,
            rc: max,
            grad: RttGradient::default(),
            metrics: CcMetrics::default(),
        };
        t.refresh();
        t
    }

    fn refresh(&mut self) {
        self.metrics.rate = Rate::from_bps_f64(self.rc);
        self.metrics.target_rate = self.metrics.rate;
    }

    /// The gradient weight w(g).
    fn weight(g: f64) -> f64 {
        if g <= -0.25 {
            0.0
        } else if g >= 0.25 {
            1.0
        } else {
            2.0 * g + 0.5
        }
    }

    fn on_rtt(&mut self, now: Instant, rtt: Duration) {
        let r = rtt.as_nanos() as f64;
        let us = 1e3;
        let Some(g) = self
            .grad
            .update(r, self.p.ewma, f64::from(self.p.min_rtt) * us)
        else {
            return;
        };
        let old = self.rc;
        let delta = f64::from(self.p.add_step) * 1e6;
        let t_high = f64::from(self.p.t_high) * us;
        if r < f64::from(self.p.t_low) * us {
            self.rc += delta;
        } else if r > t_high {
            self.rc *= 1.0 - self.p.beta * (1.0 - t_high / r);
        } else {
            let w = Self::weight(g);
            let rtt_ref = (f64::from(self.p.rtt_ref) * us).max(1.0);
            let e = (r - rtt_ref) / rtt_ref;
            self.rc = delta * (1.0 - w) + self.rc * (1.0 - self.p.beta_patch * w * e);
        }
        let min = (f64::from(self.p.min_rate) * 1e6).min(self.max);
        self.rc = clamp_rate(self.rc, min, self.max);
        if self.rc < old {
            self.metrics.rate_cuts += 1;
        } else {
            self.metrics.rate_increases += 1;
        }
        trace!(
            t_ns = now.as_nanos(),
            rtt_ns = r,
            gradient = g,
            rc_bps = self.rc,
            "patched timely update"
        );
        self.refresh();
    }
}

impl CongestionControl for PatchedTimely {
    fn name(&self) -> &'static str {
        "patched-timely"
    }
    #[inline]
    fn on_sent(&mut self, _now: Instant, _bytes: u64) {}
    fn on_ack(&mut self, now: Instant, _acked_bytes: u64, rtt: Option<Duration>) {
        if let Some(rtt) = rtt {
            self.on_rtt(now, rtt);
        }
    }
    fn on_cnp(&mut self, _now: Instant) {
        self.metrics.rp_cnp_ignored += 1;
    }
    fn on_loss(&mut self, _now: Instant) {}
    fn handle_timeout(&mut self, _now: Instant) {}
    #[inline]
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    #[inline]
    fn rate(&self) -> Rate {
        self.metrics.rate
    }
    #[inline]
    fn metrics(&self) -> CcMetrics {
        self.metrics
    }
}
