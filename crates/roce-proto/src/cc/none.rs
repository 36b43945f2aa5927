//! The `none` controller: the QP always sends at the line rate and counts, but ignores, CNPs.
//!
//! Useful as a baseline in experiments and when congestion is left to PFC alone.

use super::params::CcKind;
use super::params::{ParamError, ParamInfo, ParamSet};
use super::{CcMetrics, CongestionControl, Controller, Rate};
use crate::time::Instant;

/// The parameters of `none`: there are none.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct NoParams {}

impl ParamSet for NoParams {
    fn names(&self) -> Vec<&'static str> {
        Vec::new()
    }
    fn set(&mut self, _name: &str, _value: &str) -> Result<(), ParamError> {
        Err(ParamError::Unknown)
    }
    fn list(&self) -> Vec<ParamInfo> {
        Vec::new()
    }
}

impl CcKind for NoParams {
    fn build(&self, line_rate: Rate) -> Controller {
        Controller::None(LineRate::new(line_rate))
    }
}

/// Always the line rate.
#[derive(Clone, Debug)]
pub struct LineRate {
    metrics: CcMetrics,
}

impl LineRate {
    /// A controller pinned at `line_rate`.
    pub fn new(line_rate: Rate) -> Self {
        LineRate {
            metrics: CcMetrics {
                rate: line_rate,
                target_rate: line_rate,
                ..CcMetrics::default()
            },
        }
    }
}

impl CongestionControl for LineRate {
    fn name(&self) -> &'static str {
        "none"
    }
    fn on_cnp(&mut self, _now: Instant) {
        self.metrics.rp_cnp_ignored += 1;
    }
    #[inline]
    fn metrics(&self) -> CcMetrics {
        self.metrics
    }
}
