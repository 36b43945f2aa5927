//! The `none` controller: the QP always sends at the line rate and counts, but ignores, CNPs.
//!
//! Useful as a baseline in experiments and when congestion is left to PFC alone.

use super::{CcMetrics, CongestionControl, Rate};
use crate::time::{Duration, Instant};

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
    #[inline]
    fn on_sent(&mut self, _now: Instant, _bytes: u64) {}
    fn on_ack(&mut self, _now: Instant, _acked_bytes: u64, _rtt: Option<Duration>) {}
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
