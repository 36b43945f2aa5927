//! A QP's congestion controller and pacer ([`CcPacer`]) that also publishes the controller's
//! metrics to a shared [`CcProbe`], so the demo can sample a sending QP's DCQCN rate while the
//! endpoint owns the pacer. Nothing else changes: the QP sees a plain [`DeparturePacer`].

use std::sync::{Arc, Mutex};

use crate::cc::{CcMetrics, CongestionControl, Controller, IntHop};
use crate::qp::paced::CcPacer;
use crate::qp::DeparturePacer;
use crate::time::{Duration, Instant};

/// The latest metrics of one QP's controller, readable from outside the endpoint.
#[derive(Clone, Debug, Default)]
pub struct CcProbe(Arc<Mutex<CcMetrics>>);

impl CcProbe {
    /// The metrics as of the controller's last input.
    pub fn get(&self) -> CcMetrics {
        self.0.lock().map(|m| *m).unwrap_or_default()
    }

    fn set(&self, m: CcMetrics) {
        if let Ok(mut g) = self.0.lock() {
            *g = m;
        }
    }
}

/// A [`CcPacer`] that mirrors its controller's metrics into a [`CcProbe`].
#[derive(Debug)]
pub struct ProbedPacer {
    inner: CcPacer,
    probe: CcProbe,
}

impl ProbedPacer {
    /// Paces at `cc`'s rate with `burst_bytes` of burst; returns the pacer and its probe.
    pub fn new(cc: Controller, burst_bytes: u64) -> (Self, CcProbe) {
        let probe = CcProbe::default();
        probe.set(cc.metrics());
        let inner = CcPacer::new(cc, burst_bytes);
        (
            ProbedPacer {
                inner,
                probe: probe.clone(),
            },
            probe,
        )
    }

    fn publish(&self) {
        self.probe.set(self.inner.controller().metrics());
    }
}

impl DeparturePacer for ProbedPacer {
    fn on_transmit(&mut self, now: Instant, frame_len: usize) -> Instant {
        let t = self.inner.on_transmit(now, frame_len);
        self.publish();
        t
    }

    fn on_cnp(&mut self, now: Instant) {
        self.inner.on_cnp(now);
        self.publish();
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.inner.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.inner.handle_timeout(now);
        self.publish();
    }

    // RTT samples, losses and INT reach the controller through the probe too (TIMELY, HPCC).
    fn on_ack(&mut self, now: Instant, acked_bytes: u64, rtt: Option<Duration>) {
        self.inner.on_ack(now, acked_bytes, rtt);
        self.publish();
    }

    fn on_loss(&mut self, now: Instant) {
        self.inner.on_loss(now);
        self.publish();
    }

    fn on_int(&mut self, now: Instant, hops: &[IntHop]) {
        self.inner.on_int(now, hops);
        self.publish();
    }

    fn cc_metrics(&self) -> Option<CcMetrics> {
        self.inner.cc_metrics()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{CcConfig, Rate};

    #[test]
    fn probe_sees_the_rate_cut_of_a_cnp() {
        let cc = CcConfig::new("dcqcn-mlx", Rate::from_gbps(10))
            .map(|c| c.build())
            .ok();
        let Some(cc) = cc else {
            panic!("dcqcn-mlx is a known controller")
        };
        let (mut pacer, probe) = ProbedPacer::new(cc, 4096);
        assert_eq!(probe.get().rate, Rate::from_gbps(10));
        pacer.on_cnp(Instant::from_nanos(1_000));
        let m = probe.get();
        assert_eq!(m.rp_cnp_handled, 1);
        assert!(m.rate < Rate::from_gbps(10), "rate {} after a CNP", m.rate);
    }
}
