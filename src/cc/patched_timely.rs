//! Patched TIMELY: Zhu et al., "ECN or Delay: Lessons Learnt from Analysis of DCQCN and TIMELY",
//! CoNEXT 2016. TIMELY's pure-gradient rule has no unique fixed point; the patch weighs the
//! gradient against the absolute RTT error so that flows converge to a fair share.
//!
//! Per RTT sample r with gradient g (as in [`super::Timely`]): r < T_low: R += δ; r > T_high:
//! R ← R(1 − β(1 − T_high/r)); otherwise w(g) = 0 for g ≤ −1/4, 2g + 1/2 in between, 1 for
//! g ≥ 1/4, e = (r − RTT_ref)/RTT_ref, and R ← δ(1 − w) + R(1 − β'·w·e). β' = 0.008 follows the
//! paper; RTT_ref = 100 us is our default (set it to the fabric's target queueing RTT).

use super::timely::{RttController, RttRule};
use super::Rate;

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

/// The patched rule: its parameters.
#[derive(Clone, Debug)]
pub struct PatchedRule {
    p: PatchedTimelyParams,
}

impl PatchedRule {
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
}

impl RttRule for PatchedRule {
    const NAME: &'static str = "patched-timely";
    fn ewma(&self) -> f64 {
        self.p.ewma
    }
    fn min_rtt_ns(&self) -> f64 {
        f64::from(self.p.min_rtt) * 1e3
    }
    fn min_rate_bps(&self) -> f64 {
        f64::from(self.p.min_rate) * 1e6
    }
    fn next_rate(&mut self, rate: f64, r: f64, g: f64) -> f64 {
        let delta = f64::from(self.p.add_step) * 1e6;
        let t_high = f64::from(self.p.t_high) * 1e3;
        if r < f64::from(self.p.t_low) * 1e3 {
            rate + delta
        } else if r > t_high {
            rate * (1.0 - self.p.beta * (1.0 - t_high / r))
        } else {
            let w = Self::weight(g);
            let rtt_ref = (f64::from(self.p.rtt_ref) * 1e3).max(1.0);
            let e = (r - rtt_ref) / rtt_ref;
            delta * (1.0 - w) + rate * (1.0 - self.p.beta_patch * w * e)
        }
    }
}

/// Patched TIMELY for one QP.
pub type PatchedTimely = RttController<PatchedRule>;

impl PatchedTimely {
    /// A controller starting at `line_rate`.
    pub fn new(params: PatchedTimelyParams, line_rate: Rate) -> Self {
        Self::with_rule(PatchedRule { p: params }, line_rate)
    }
}
