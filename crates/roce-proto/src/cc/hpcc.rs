//! HPCC: Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019. The sender computes
//! each hop's normalized inflight from in-band telemetry (INT) echoed in ACKs and steers its rate
//! to a target utilization η, with a reference rate updated once per RTT and per-ACK fast
//! reaction against it (Algorithm 1; single-bottleneck-U variant of the authors' ns-3 model,
//! alibaba-edu/High-Precision-Congestion-Control `rdma-hw.cc`, `UpdateRateHp`).
//!
//! Per hop j, between two INT records: τ = ts − ts', txRate = Δtx_bytes·8/τ,
//! u_j = txRate/B + min(qlen, qlen')·8/(B·T). U = max_j u_j is smoothed over the base RTT T:
//! u ← (u·(T − τ) + U·τ)/T. With k = u/η: k ≥ 1 or after `max_stage` additive steps,
//! R ← R_ref/k + W_AI; else R ← R_ref + W_AI. R_ref takes R once per T (a "full" update).
//!
//! # Carrying INT RoCE-safely
//! On the wire the records travel in the INT shim of [`crate::wire::int`] (between UDP and BTH,
//! announced by UDP port 4792, stripped by the receiver before ICRC verification and echoed on
//! its ACKs); see that module for the format and why the ICRC stays valid. An endpoint turns
//! the shim on per QP with `Endpoint::enable_int` and hands echoed records to
//! [`CongestionControl::on_int`]. The simulated fabric's INT switches fill the shim's slots at
//! egress (and stamp out-of-band metadata on frames without a shim, for test engines).

use tracing::trace;

use super::{clamp_rate, CcMetrics, CongestionControl, Rate, Window, WindowParams};
use crate::time::{Duration, Instant};

/// Hops remembered per flow.
pub const MAX_HOPS: usize = 8;

/// One switch egress port's telemetry, as INT records it when the packet leaves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntHop {
    /// Bytes queued at the egress port.
    pub qlen_bytes: u64,
    /// Bytes transmitted by the port so far (a free-running counter).
    pub tx_bytes: u64,
    /// When the switch recorded this (its own clock; only differences matter).
    pub ts: Instant,
    /// The port's line rate B.
    pub link_rate: Rate,
}

impl From<crate::wire::int::HopRecord> for IntHop {
    fn from(r: crate::wire::int::HopRecord) -> Self {
        IntHop {
            qlen_bytes: u64::from(r.qlen_bytes),
            tx_bytes: r.tx_bytes,
            ts: Instant::from_nanos(r.ts_ns),
            link_rate: Rate::from_bps(u64::from(r.link_mbps) * 1_000_000),
        }
    }
}

impl From<IntHop> for crate::wire::int::HopRecord {
    fn from(h: IntHop) -> Self {
        crate::wire::int::HopRecord {
            ts_ns: h.ts.as_nanos(),
            tx_bytes: h.tx_bytes,
            qlen_bytes: u32::try_from(h.qlen_bytes).unwrap_or(u32::MAX),
            link_mbps: u32::try_from(h.link_rate.as_bps() / 1_000_000).unwrap_or(u32::MAX),
        }
    }
}

crate::cc_params! {
    /// HPCC parameters.
    pub struct HpccParams {
        /// The send window beside the rate (on, over the 10 us base RTT: the HPCC authors'
        /// run.py gives HPCC HAS_WIN 1, VAR_WIN 1 with the window's RTT equal to T).
        base win: WindowParams,
        /// Target utilization eta.
        eta: f64 = "",
        /// Additive steps before a multiplicative adjustment is forced.
        max_stage: u32 = "",
        /// Additive increase W_AI (default B·(1 − eta)/16: 313 at 100 Gbit/s).
        w_ai: u32 = "Mbit/s",
        /// Base RTT T of the path (also the reference-rate update period).
        base_rtt: u32 = "us",
        /// Floor of the rate.
        min_rate: u32 = "Mbit/s",
    }
}

/// The flows W_AI is sized for: N·W_AI = (1 − eta)·B, so that up to this many flows' additive
/// steps together stay inside the headroom eta leaves (HPCC §3.3: W_AI trades the speed of
/// reaching fairness against the standing queue, and scales with B and N; the authors' ns-3
/// run.py scales it with the line rate). Measured in the fabric's incast matrix (tests/
/// cc_validation.rs): 8 and 12 leave other 25 Gbit/s cells short of Jain 0.95 and 8 takes 16
/// flows to 90 % utilisation; 16 keeps the queue under 0.5 us of line rate.
const AI_FLOWS: f64 = 16.0;

/// W_AI for a port of `line` and target utilization `eta`, Mbit/s.
fn w_ai_for(line: Rate, eta: f64) -> u32 {
    super::rate::mbps_of(line, (1.0 - eta).max(0.0) / AI_FLOWS)
}

impl Default for HpccParams {
    /// The 100 Gbit/s values.
    fn default() -> Self {
        HpccParams {
            win: WindowParams::var(10_000),
            eta: 0.95,
            max_stage: 5,
            w_ai: w_ai_for(Rate::from_gbps(100), 0.95),
            base_rtt: 10,
            min_rate: 100,
        }
    }
}

impl super::params::CcKind for HpccParams {
    fn build(&self, line_rate: Rate) -> super::Controller {
        super::Controller::Hpcc(Hpcc::new(self.clone(), line_rate))
    }
    fn uses_int(&self) -> bool {
        true
    }
    fn scale_to(&mut self, line_rate: Rate) {
        self.w_ai = w_ai_for(line_rate, self.eta);
    }
}

/// HPCC for one QP.
#[derive(Clone, Debug)]
pub struct Hpcc {
    p: HpccParams,
    window: Window,
    max: f64,
    rate: f64,
    reference: f64,
    u: f64,
    inc_stage: u32,
    prev: [Option<IntHop>; MAX_HOPS],
    last_update: Option<Instant>,
    metrics: CcMetrics,
}

impl Hpcc {
    /// A controller starting at `line_rate`.
    pub fn new(params: HpccParams, line_rate: Rate) -> Self {
        let max = line_rate.as_bps_f64();
        let mut h = Hpcc {
            window: Window::new(&params.win, line_rate),
            p: params,
            max,
            rate: max,
            reference: max,
            u: 0.0,
            inc_stage: 0,
            prev: [None; MAX_HOPS],
            last_update: None,
            metrics: CcMetrics::default(),
        };
        h.refresh();
        h
    }

    fn refresh(&mut self) {
        self.metrics.rate = Rate::from_bps_f64(self.rate);
        self.metrics.target_rate = Rate::from_bps_f64(self.reference);
        self.metrics.alpha = self.u;
    }

    /// The largest normalized inflight over the hops with a previous record, and its τ (ns).
    fn max_utilization(&mut self, hops: &[IntHop]) -> Option<(f64, f64)> {
        let t_ns = f64::from(self.p.base_rtt.max(1)) * 1e3;
        let mut best: Option<(f64, f64)> = None;
        for (hop, prev) in hops.iter().zip(self.prev.iter_mut()) {
            if let Some(old) = prev.replace(*hop) {
                let tau = hop.ts.saturating_since(old.ts).as_nanos() as f64;
                let b = hop.link_rate.as_bps_f64();
                if tau <= 0.0 || b <= 0.0 {
                    continue;
                }
                let tx_rate = hop.tx_bytes.saturating_sub(old.tx_bytes) as f64 * 8e9 / tau;
                let q = hop.qlen_bytes.min(old.qlen_bytes) as f64 * 8e9;
                let u = tx_rate / b + q / (b * t_ns);
                if best.is_none_or(|(bu, _)| u > bu) {
                    best = Some((u, tau));
                }
            }
        }
        best
    }
}

impl CongestionControl for Hpcc {
    fn name(&self) -> &'static str {
        "hpcc"
    }
    fn on_cnp(&mut self, _now: Instant) {
        self.metrics.rp_cnp_ignored += 1;
    }
    fn on_int(&mut self, now: Instant, hops: &[IntHop]) {
        let Some((big_u, tau)) = self.max_utilization(hops) else {
            self.last_update.get_or_insert(now);
            return;
        };
        let t = f64::from(self.p.base_rtt.max(1)) * 1e3;
        let tau = tau.min(t);
        self.u = (self.u * (t - tau) + big_u * tau) / t;
        let k = self.u / self.p.eta.max(f64::MIN_POSITIVE);
        let w_ai = f64::from(self.p.w_ai) * 1e6;
        let (new_rate, new_stage) = if k >= 1.0 || self.inc_stage >= self.p.max_stage {
            let scaled = if k > 0.0 {
                self.reference / k
            } else {
                self.max
            };
            (scaled + w_ai, 0)
        } else {
            (self.reference + w_ai, self.inc_stage.saturating_add(1))
        };
        let min = (f64::from(self.p.min_rate) * 1e6).min(self.max);
        let new_rate = clamp_rate(new_rate, min, self.max);
        if new_rate < self.rate {
            self.metrics.rate_cuts += 1;
        } else if new_rate > self.rate {
            self.metrics.rate_increases += 1;
        }
        self.rate = new_rate;
        let period = Duration::from_micros(u64::from(self.p.base_rtt));
        let full = self.last_update.is_none_or(|at| now >= at + period);
        if full {
            self.reference = new_rate;
            self.inc_stage = new_stage;
            self.last_update = Some(now);
        }
        trace!(
            t_ns = now.as_nanos(),
            u = self.u,
            k,
            rate_bps = self.rate,
            full,
            "hpcc update"
        );
        self.refresh();
    }
    #[inline]
    fn window(&self) -> Option<u64> {
        self.window.bytes(self.rate, self.max)
    }
    #[inline]
    fn has_window(&self) -> bool {
        self.window.is_on()
    }
    #[inline]
    fn metrics(&self) -> CcMetrics {
        self.metrics
    }
}
