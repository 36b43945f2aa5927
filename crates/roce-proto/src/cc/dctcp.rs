//! Rate-based DCTCP for RoCE: Alizadeh et al., SIGCOMM 2010, with the window replaced by a rate as
//! in the HPCC authors' ns-3 model (alibaba-edu/High-Precision-Congestion-Control, `rdma-hw.cc`,
//! `HandleAckDctcp`). CNPs are the ECN marks, one per CE-marked packet (the notification point
//! echoes every mark, as the model's per-packet ACKs do); the packets sent are what they are a
//! fraction of.
//!
//! Per observation window (one RTT: the smoothed RTT sample, or `rtt` until one arrives):
//! alpha ← (1 − g)·alpha + g·F with F = min(1, CNPs / packets sent) in the window (the
//! model's marks over its batch of one RTT of packets; RoCE ACKs are coalesced, one per many
//! packets, so counting them would make F one whenever any mark came back); outside congestion
//! window reduction (CWR) the rate grows by `rate_ai` (one MTU per base RTT) per window. A CNP
//! outside CWR cuts RC ← RC·(1 − alpha/2) and enters CWR for one window. Not an ECN-echo TCP: no
//! cwnd, no ssthresh. DCTCP is defined with a step marker at K ([`step_marking`]), and scenarios
//! give it one.
//!
//! [`step_marking`]: super::params::CcKind::step_marking

use tracing::debug;

use super::{clamp_rate, CcMetrics, CongestionControl, Rate, Window, WindowParams};
use crate::time::{Duration, Instant};

crate::cc_params! {
    /// Rate-based DCTCP parameters.
    pub struct DctcpParams {
        /// The send window beside the rate (on: the HPCC authors' run.py gives DCTCP
        /// HAS_WIN 1, VAR_WIN 1).
        base win: WindowParams,
        /// EWMA gain g of alpha (DCTCP's 1/16).
        g: f64 = "",
        /// Additive increase per window without CWR (default one 1 KB MTU per 5 us base RTT,
        /// DCTCP's one packet per RTT, at every line rate).
        rate_ai: u32 = "Mbit/s",
        /// Floor of the rate.
        min_rate: u32 = "Mbit/s",
        /// Observation window until an RTT sample arrives.
        rtt: u32 = "us",
        /// Alpha at start, in 0..=1 (1 halves on the first CNP).
        initial_alpha: f64 = "",
    }
}

/// The additive step per window, Mbit/s: DCTCP adds one packet per RTT, so a rate grows by one
/// MTU per base RTT whatever the line rate. The HPCC authors' ns-3 `run.py` derives its
/// `dctcp_ai` = 615 Mbit/s the same way ("calculated from RTT=13us and MTU=1KB, because DCTCP
/// add 1 MTU per RTT"); this fabric's star with 1 us links has a 5 us base RTT and scenarios
/// send 1 KB packets: 8192 bits per 5 us. Set `rate_ai` for another base RTT or MTU.
const RATE_AI_MBPS: u32 = 1024 * 8 / 5;

/// The base RTT of the window's BDP, ns: ns-3's maxRtt (two one-way delays plus one packet's
/// transmission per hop) of this fabric's star, 4 us of links and 1 KB frames crossing two
/// hops, rounded up to the 5 us the additive step assumes (a window under the real base RTT
/// would cap a lone flow below the line rate). Set `win_rtt` for another topology.
const BASE_RTT_NS: u32 = 5_000;

impl Default for DctcpParams {
    /// The 100 Gbit/s values.
    fn default() -> Self {
        DctcpParams {
            win: WindowParams::var(BASE_RTT_NS),
            g: 1.0 / 16.0,
            rate_ai: RATE_AI_MBPS,
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
    /// The mark fraction needs every CE mark echoed: 1 ns is shorter than any packet, so every
    /// marked packet is answered (a 1 us interval lets one mark per us through, and F then
    /// falls with a flow's rate; 50 us lets the queue grow past Kmax into PFC).
    fn cnp_interval(&self) -> Duration {
        Duration::from_nanos(1)
    }
    /// The switch marks every packet that finds K queued (SIGCOMM'10 section 3.1; the HPCC
    /// authors' `run.py` sets Kmin = Kmax and Pmax = 1 for DCTCP).
    fn step_marking(&self) -> bool {
        true
    }
    /// Alpha's time constant: an EWMA of gain g updated once per window (`rtt`), so 1/g
    /// windows (16 × 10 us = 160 us by default).
    fn settle_time(&self) -> Duration {
        let windows = (1.0 / self.g.max(1e-6)).round() as u64;
        Duration::from_micros(u64::from(self.rtt)).saturating_mul(windows)
    }
}

/// Rate-based DCTCP for one QP.
#[derive(Clone, Debug)]
pub struct Dctcp {
    p: DctcpParams,
    send_window: Window,
    max: f64,
    rc: f64,
    alpha: f64,
    srtt: Option<Duration>,
    sent: u64,
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
            send_window: Window::new(&params.win, line_rate),
            p: params,
            max,
            rc: max,
            srtt: None,
            sent: 0,
            marks: 0,
            window_end: None,
            cwr_until: Instant::ZERO,
            metrics: CcMetrics::default(),
        };
        d.refresh();
        d
    }

    fn period(&self) -> Duration {
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
        let frac = match (self.sent, self.marks) {
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
        self.sent = 0;
        self.marks = 0;
        self.window_end = (!idle).then(|| at + self.period());
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
        // Counted while a window runs: an idle flow at line rate has none.
        self.sent += u64::from(self.window_end.is_some());
    }
    fn on_ack(&mut self, now: Instant, _acked_bytes: u64, rtt: Option<Duration>) {
        self.handle_timeout(now);
        if let Some(r) = rtt {
            self.srtt = Some(match self.srtt {
                None => r,
                Some(s) => Duration::from_nanos((s.as_nanos() * 7 + r.as_nanos()) / 8),
            });
        }
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
    fn window(&self) -> Option<u64> {
        self.send_window.bytes(self.rc, self.max)
    }
    #[inline]
    fn has_window(&self) -> bool {
        self.send_window.is_on()
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
            self.window_end = Some(now + self.period());
        }
        if now < self.cwr_until {
            self.metrics.rp_cnp_ignored += u64::from(cnp);
        } else {
            self.metrics.cnp_rate_cuts += u64::from(cnp);
            self.metrics.rate_cuts += 1;
            let old = self.rc;
            self.rc = clamp_rate(self.rc * (1.0 - self.alpha / 2.0), self.min(), self.max);
            self.cwr_until = now + self.period();
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
