//! Rate-based DCTCP for RoCE: Alizadeh et al., SIGCOMM 2010, with the window replaced by a rate as
//! in the HPCC authors' ns-3 model (alibaba-edu/High-Precision-Congestion-Control, `rdma-hw.cc`,
//! `HandleAckDctcp`). CNPs are the ECN marks; ACKs are the packets they are a fraction of.
//!
//! Per observation window (one RTT: the smoothed RTT sample, or `rtt` until one arrives):
//! alpha ← (1 − g)·alpha + g·F with F = min(1, CNPs / ACKs) in the window; outside congestion
//! window reduction (CWR) the rate grows by `rate_ai` (scaled with the line rate) per window. A CNP outside CWR cuts
//! RC ← RC·(1 − alpha/2) and enters CWR for one window. Not an ECN-echo TCP: no cwnd, no ssthresh.

use tracing::debug;

use super::{clamp_rate, CcMetrics, CongestionControl, Rate};
use crate::time::{Duration, Instant};

crate::cc_params! {
    /// Rate-based DCTCP parameters.
    pub struct DctcpParams {
        /// EWMA gain g of alpha (DCTCP's 1/16).
        g: f64 = "",
        /// Additive increase per window without CWR (default 1.5 % of the line rate: 1500
        /// at 100 Gbit/s).
        rate_ai: u32 = "Mbit/s",
        /// Floor of the rate.
        min_rate: u32 = "Mbit/s",
        /// Observation window until an RTT sample arrives.
        rtt: u32 = "us",
        /// Alpha at start, in 0..=1 (1 halves on the first CNP).
        initial_alpha: f64 = "",
    }
}

/// The additive step per window as a fraction of the line rate. DCTCP adds one MSS per RTT, a
/// step that is a fixed share of a flow's window; the authors' ns-3 model sets it per line rate
/// (`DctcpRateAI`, 1 Gbit/s by default, 615 Mbit/s in run.py for 1 KB packets and a 13 us
/// RTT). 1.5 % was measured in the incast matrix (tests/cc_validation.rs): 1 % leaves 25 Gbit/s
/// links below 90 % after the cuts, 2 % and more takes 16 flows at 25 Gbit/s past Kmax.
const AI_FRACTION: f64 = 0.015;

impl Default for DctcpParams {
    /// The 100 Gbit/s values.
    fn default() -> Self {
        DctcpParams {
            g: 1.0 / 16.0,
            rate_ai: super::rate::mbps_of(Rate::from_gbps(100), AI_FRACTION),
            min_rate: 100,
            rtt: 10,
            initial_alpha: 1.0,
        }
    }
}

impl super::params::CcKind for DctcpParams {
    fn build(&self, line_rate: Rate) -> super::Controller {
        super::Controller::Dctcp(Dctcp::new(self.clone(), line_rate))
    }
    /// The mark fraction needs (nearly) every CE mark echoed: a 50 us interval lets one mark
    /// per 50 us through, and the queue grows past Kmax into PFC.
    fn cnp_interval(&self) -> Duration {
        Duration::from_micros(1)
    }
    fn scale_to(&mut self, line_rate: Rate) {
        self.rate_ai = super::rate::mbps_of(line_rate, AI_FRACTION);
    }
}

/// Rate-based DCTCP for one QP.
#[derive(Clone, Debug)]
pub struct Dctcp {
    p: DctcpParams,
    max: f64,
    rc: f64,
    alpha: f64,
    srtt: Option<Duration>,
    acks: u64,
    marks: u64,
    window_end: Option<Instant>,
    cwr_until: Instant,
    metrics: CcMetrics,
}

impl Dctcp {
    /// A controller starting at `line_rate`.
    pub fn new(params: DctcpParams, line_rate: Rate) -> Self {
        let max = line_rate.as_bps_f64();
        let mut d = Dctcp {
            alpha: params.initial_alpha.clamp(0.0, 1.0),
            p: params,
            max,
            rc: max,
            srtt: None,
            acks: 0,
            marks: 0,
            window_end: None,
            cwr_until: Instant::ZERO,
            metrics: CcMetrics::default(),
        };
        d.refresh();
        d
    }

    fn window(&self) -> Duration {
        self.srtt
            .unwrap_or(Duration::from_micros(u64::from(self.p.rtt)))
            .max(Duration::from_nanos(1))
    }

    fn min(&self) -> f64 {
        (f64::from(self.p.min_rate) * 1e6).min(self.max)
    }

    fn refresh(&mut self) {
        self.metrics.rate = Rate::from_bps_f64(self.rc);
        self.metrics.target_rate = self.metrics.rate;
        self.metrics.alpha = self.alpha;
    }

    fn end_window(&mut self, at: Instant) {
        let frac = match (self.acks, self.marks) {
            (_, 0) => 0.0,
            (0, _) => 1.0,
            (a, m) => (m as f64 / a as f64).min(1.0),
        };
        let g = self.p.g.clamp(0.0, 1.0);
        self.alpha = (1.0 - g) * self.alpha + g * frac;
        if at >= self.cwr_until && self.rc < self.max {
            self.rc = (self.rc + f64::from(self.p.rate_ai) * 1e6).min(self.max);
            self.metrics.rate_increases += 1;
        }
        let idle = self.marks == 0 && self.rc >= self.max;
        self.acks = 0;
        self.marks = 0;
        self.window_end = (!idle).then(|| at + self.window());
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }
    #[inline]
    fn on_sent(&mut self, now: Instant, _bytes: u64) {
        if self.window_end.is_some_and(|t| t <= now) {
            self.handle_timeout(now);
        }
    }
    fn on_ack(&mut self, now: Instant, _acked_bytes: u64, rtt: Option<Duration>) {
        self.handle_timeout(now);
        if let Some(r) = rtt {
            self.srtt = Some(match self.srtt {
                None => r,
                Some(s) => Duration::from_nanos((s.as_nanos() * 7 + r.as_nanos()) / 8),
            });
        }
        self.acks += 1;
    }
    fn on_cnp(&mut self, now: Instant) {
        self.react(now, true);
    }
    fn on_loss(&mut self, now: Instant) {
        self.react(now, false);
    }
    fn handle_timeout(&mut self, now: Instant) {
        while let Some(end) = self.window_end.filter(|&t| t <= now) {
            self.end_window(end);
        }
        self.refresh();
    }
    #[inline]
    fn poll_timeout(&self) -> Option<Instant> {
        self.window_end
    }
    #[inline]
    fn metrics(&self) -> CcMetrics {
        self.metrics
    }
}

impl Dctcp {
    /// A congestion signal: a CNP (counted as a mark) or a loss (a cut without a mark).
    fn react(&mut self, now: Instant, cnp: bool) {
        self.handle_timeout(now);
        if cnp {
            self.marks += 1;
        }
        if self.window_end.is_none() {
            self.window_end = Some(now + self.window());
        }
        if now < self.cwr_until {
            self.metrics.rp_cnp_ignored += u64::from(cnp);
        } else {
            self.metrics.cnp_rate_cuts += u64::from(cnp);
            self.metrics.rate_cuts += 1;
            let old = self.rc;
            self.rc = clamp_rate(self.rc * (1.0 - self.alpha / 2.0), self.min(), self.max);
            self.cwr_until = now + self.window();
            debug!(
                t_ns = now.as_nanos(),
                from_bps = old,
                rc_bps = self.rc,
                alpha = self.alpha,
                "dctcp cut"
            );
        }
        self.refresh();
    }
}
