//! Patched TIMELY: Zhu et al., "ECN or Delay: Lessons Learnt from Analysis of DCQCN and TIMELY",
//! CoNEXT 2016. TIMELY's pure-gradient rule has no unique fixed point; the patch weighs the
//! gradient against the absolute RTT error so that flows converge to a fair share.
//!
//! Per RTT sample r with gradient g (as in [`super::Timely`]): r < T_low: R += δ; r > T_high:
//! R ← R(1 − β(1 − T_high/r)); otherwise w(g) = 0 for g ≤ −1/4, 2g + 1/2 in between, 1 for
//! g ≥ 1/4, e = (r − RTT_ref)/RTT_ref, and R ← δ(1 − w) + R(1 − β'·w·e). β' = 0.008 follows the
//! paper; RTT_ref = 100 us is our default (set it to the fabric's target queueing RTT).

use super::timely::{RttController, RttParams, RttRule};
use super::Rate;

crate::cc_params! {
    /// Patched TIMELY parameters.
    pub struct PatchedTimelyParams {
        /// The shared RTT-gradient parameters (`beta` is the cut above `t_high`).
        base rtt: RttParams,
        /// Decrease factor beta' of the weighted RTT error.
        beta_patch: f64 = "",
        /// The RTT the weighted error is measured against.
        rtt_ref: u32 = "us",
    }
}

impl Default for PatchedTimelyParams {
    fn default() -> Self {
        PatchedTimelyParams {
            rtt: RttParams::default(),
            beta_patch: 0.008,
            rtt_ref: 100,
        }
    }
}

impl super::params::CcKind for PatchedTimelyParams {
    fn build(&self, line_rate: Rate) -> super::Controller {
        super::Controller::PatchedTimely(PatchedTimely::new(self.clone(), line_rate))
    }
    fn scale_to(&mut self, line_rate: Rate) {
        self.rtt.scale_to(line_rate);
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
    fn params(&self) -> &RttParams {
        &self.p.rtt
    }
    fn next_rate(&mut self, rate: f64, r: f64, g: f64) -> f64 {
        if let Some(next) = self.p.rtt.outside_band(rate, r) {
            return next;
        }
        let w = Self::weight(g);
        let rtt_ref = (f64::from(self.p.rtt_ref) * 1e3).max(1.0);
        let e = (r - rtt_ref) / rtt_ref;
        self.p.rtt.delta_bps() * (1.0 - w) + rate * (1.0 - self.p.beta_patch * w * e)
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
