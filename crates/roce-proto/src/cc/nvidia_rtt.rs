//! NVIDIA's RTT-based congestion control ("ZTR RTTCC", Zero-Touch RoCE): the reference
//! algorithm NVIDIA publishes with DOCA PCC, `rtt_template` (DOCA's `pcc` application sample,
//! files `rtt_template.c`, `rtt_template_algo_params.h` and `rtt_template_ctxt.h`). A rate
//! controller driven by RTT measurements, with CNPs and NACKs as extra signals. This module
//! implements what that public source describes, in our own code; what it leaves to the NIC or
//! firmware is assumed below.
//!
//! The reference keeps a rate per flow as a 20-bit fixed-point fraction of the port's line rate
//! (`1 << 20` is the line rate) and updates it once per RTT measurement (`algorithm_core`,
//! called from `rtt_template_handle_roce_rtt`), with `u` = `update_factor` in 16-bit fixed
//! point (the multiplications are `doca_pcc_dev_fxp_mult`):
//! - a NACK was seen since the last update and the RTT is at least `max_delay`: rate ·=
//!   1 − 5u, and the NACK is forgotten;
//! - otherwise a CNP was seen since the last update, or the RTT is at least `max_delay`: rate
//!   ·= 1 − 2u, and the CNP is forgotten;
//! - otherwise an RTT above `base_rtt`: rate ·= 1 − u; at or below it: rate += `ai`.
//!
//! The result is clamped to `[min_rate, line rate]`. A CNP or NACK event changes no rate by
//! itself (`rtt_template_handle_roce_cnp`, `rtt_template_handle_roce_nack` only set a flag), and
//! a NACK flag outlives RTT samples under `max_delay` (only the first branch clears it). A flow
//! starts at `new_flow_rate` (`rtt_template_handle_new_flow`). TX events change no rate either:
//! `rtt_template_handle_roce_tx` only tracks the RTT probe (marks it sent, and asks for a new
//! one when none went out within two TX events or the outstanding one is older than 300 us,
//! doubling per abort).
//!
//! The defaults are the reference's (`rtt_template_algo_params.h`, "the best set of the
//! parameters for real firmware"), kept in its units so that a value can be copied across:
//! `update_factor` 6553/65536 (0.1: the header's comment says 0.08, its value is 10 %), so the
//! cuts are by 10 %, 20 % and 50 %; `ai` 52428/2^20 (5 % of the line rate per update);
//! `base_rtt` 13 us; `max_delay` 150 us; `new_flow_rate` 2^20 (the line rate); `min_rate`
//! 2^6/2^20 (1/16384 of the line rate).
//!
//! Assumed, where the reference leaves it to DOCA's device library or the hardware:
//! - RTT samples. The reference measures RTT with its own probe packets (an RTT request the NIC
//!   sends, answered by the peer NIC), one outstanding at a time, a new one requested with every
//!   update. Here the samples come from ACKs (the transport's RTT sampler, [`crate::qp::rtt`]:
//!   the transmit time of the newest timed packet to its ACK), and one probe round is emulated:
//!   a sample acts only if its packet left at or after the last update, so the rate moves once
//!   per RTT as the reference's does. Every packet asks for its ACK (`ack_each`), as the next
//!   probe leaves with the first packet after an update. With samples taken this way a lost
//!   response is replaced by the next ACK, so the probe's abort timer has nothing to do and is
//!   not modelled. The sample includes the peer's turnaround, as the probe's does.
//! - The rate unit. `1 << 20` is taken as the line rate and `doca_pcc_dev_fxp_mult(f, r)` as
//!   `(f · r) >> 16`, truncating.
//! - NACK events are our [`CongestionControl::on_loss`]: NAK sequence errors and ACK timeouts
//!   alike.
//! - The high-utilisation factors (cuts of 2u, 4u and 10u when the port's TX utilisation is
//!   above 0.85, compiled in only with `DOCA_PCC_SAMPLE_TX_BYTES`) need the port's byte
//!   counters, which a per-QP controller is not given: not modelled, as in the reference's
//!   default build.
//! - CNPs come from the notification point as for DCQCN, at the default 50 us interval. A
//!   second CNP before the next update is absorbed by the first (counted in `rp_cnp_ignored`).

use tracing::trace;

use super::{CcMetrics, CongestionControl, Rate};
use crate::time::{Duration, Instant};

/// One in 16-bit fixed point: the unit of `update_factor`.
pub const FXP16_ONE: u32 = 1 << 16;
/// One in 20-bit fixed point: the line rate, the unit of `ai`, `new_flow_rate`, `min_rate`.
pub const FXP20_ONE: u32 = 1 << 20;

crate::cc_params! {
    /// Parameters of [`NvidiaRtt`], in the units of DOCA's `rtt_template` (defaults from its
    /// `rtt_template_algo_params.h`; see the module docs).
    pub struct NvidiaRttParams {
        /// Decrease step u (UPDATE_FACTOR): an RTT above base_rtt cuts by u, a CNP by 2u, a
        /// NACK by 5u (5u must stay below 65536).
        update_factor: u32 = "1/65536",
        /// Additive increase (AI) per update whose RTT is at most base_rtt.
        ai: u32 = "1/2^20 of line rate",
        /// Above this RTT the rate is cut (BASE_RTT).
        base_rtt: u32 = "ns",
        /// From this RTT a sample cuts as a CNP does, and a pending NACK acts (MAX_DELAY).
        max_delay: u32 = "ns",
        /// Rate a flow starts at (NEW_FLOW_RATE; 1048576: the line rate).
        new_flow_rate: u32 = "1/2^20 of line rate",
        /// Floor of the rate (MIN_RATE).
        min_rate: u32 = "1/2^20 of line rate",
        /// Every packet asks for its ACK, so an RTT sample follows each update as the
        /// reference's next probe does; 0: one per ack_req_interval packets.
        ack_each: bool = "",
    }
}

impl Default for NvidiaRttParams {
    /// `rtt_template_algo_params.h`'s values.
    fn default() -> Self {
        NvidiaRttParams {
            // 10 % of one in 16-bit fixed point, computed as the header computes it.
            update_factor: FXP16_ONE * 10 / 100,
            // 5 % of the line rate in 20-bit fixed point.
            ai: FXP20_ONE * 5 / 100,
            base_rtt: 13_000,
            max_delay: 150_000,
            new_flow_rate: FXP20_ONE,
            min_rate: FXP20_ONE >> 14,
            ack_each: true,
        }
    }
}

impl super::params::CcKind for NvidiaRttParams {
    fn build(&self, line_rate: Rate) -> super::Controller {
        super::Controller::NvidiaRtt(NvidiaRtt::new(self.clone(), line_rate))
    }
    fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if self.update_factor.saturating_mul(5) >= FXP16_ONE {
            return Err(("update_factor", "at most 13107 (5u below 65536)"));
        }
        if self.ai > FXP20_ONE {
            return Err(("ai", "at most 1048576 (the line rate)"));
        }
        if self.min_rate == 0 || self.min_rate > FXP20_ONE {
            return Err(("min_rate", "1..=1048576"));
        }
        if self.new_flow_rate < self.min_rate || self.new_flow_rate > FXP20_ONE {
            return Err(("new_flow_rate", "min_rate..=1048576"));
        }
        Ok(())
    }
}

impl NvidiaRttParams {
    /// The rate after one RTT sample of `rtt_ns` from `rate` (both rates in 1/2^20 of the line
    /// rate), with the CNP and NACK flags: `algorithm_core` of the reference with its
    /// high-utilisation mode off. Returns the new rate and which rule applied.
    #[must_use]
    pub fn next_rate(&self, rate: u32, rtt_ns: u64, cnp: bool, nack: bool) -> (u32, Rule) {
        let late = rtt_ns >= u64::from(self.max_delay);
        let u = self.update_factor;
        let (next, rule) = if nack && late {
            (fxp16_mul(FXP16_ONE.saturating_sub(5 * u), rate), Rule::Nack)
        } else if cnp || late {
            (fxp16_mul(FXP16_ONE.saturating_sub(2 * u), rate), Rule::Cnp)
        } else if rtt_ns > u64::from(self.base_rtt) {
            (fxp16_mul(FXP16_ONE.saturating_sub(u), rate), Rule::Rtt)
        } else {
            (rate.saturating_add(self.ai), Rule::Increase)
        };
        (next.min(FXP20_ONE).max(self.min_rate), rule)
    }
}

/// `factor · rate` with `factor` in 16-bit fixed point, truncated (`doca_pcc_dev_fxp_mult`, as
/// assumed in the module docs).
fn fxp16_mul(factor: u32, rate: u32) -> u32 {
    u32::try_from((u64::from(factor) * u64::from(rate)) >> 16).unwrap_or(u32::MAX)
}

/// Which branch of the reference's rate rule an update took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// A pending NACK and an RTT of at least `max_delay`: cut by 5u.
    Nack,
    /// A pending CNP, or an RTT of at least `max_delay`: cut by 2u.
    Cnp,
    /// An RTT above `base_rtt`: cut by u.
    Rtt,
    /// An RTT at most `base_rtt`: add `ai`.
    Increase,
}

/// NVIDIA's RTT-based congestion control for one QP.
#[derive(Clone, Debug)]
pub struct NvidiaRtt {
    p: NvidiaRttParams,
    /// The line rate, bits/s.
    line: f64,
    /// The rate in 1/2^20 of the line rate (the reference's `cur_rate`).
    rate: u32,
    /// A CNP arrived since the last update (`flags.was_cnp`).
    was_cnp: bool,
    /// A NACK (loss) arrived and has not acted yet (`flags.was_nack`).
    was_nack: bool,
    /// When the last update happened: the emulated probe's send time (see the module docs).
    last_update: Option<Instant>,
    metrics: CcMetrics,
}

impl NvidiaRtt {
    /// A new flow on a port of `line_rate`, at `new_flow_rate`.
    pub fn new(params: NvidiaRttParams, line_rate: Rate) -> Self {
        let rate = params
            .new_flow_rate
            .clamp(params.min_rate.max(1), FXP20_ONE);
        let mut c = NvidiaRtt {
            p: params,
            line: line_rate.as_bps_f64(),
            rate,
            was_cnp: false,
            was_nack: false,
            last_update: None,
            metrics: CcMetrics::default(),
        };
        c.publish();
        c
    }

    /// The rate in 1/2^20 of the line rate.
    #[must_use]
    pub fn rate_fxp(&self) -> u32 {
        self.rate
    }

    fn publish(&mut self) {
        let bps = self.line * f64::from(self.rate) / f64::from(FXP20_ONE);
        // At least 1 bit/s: a rate of zero would stop the QP for good.
        let rate = Rate::from_bps_f64(bps).max(Rate::from_bps(1));
        self.metrics.rate = rate;
        self.metrics.target_rate = rate;
    }

    fn on_rtt(&mut self, now: Instant, rtt: Duration) {
        // One probe round: only a sample of a packet sent at or after the last update acts.
        let sent = now.as_nanos().saturating_sub(rtt.as_nanos());
        if self.last_update.is_some_and(|t| sent < t.as_nanos()) {
            return;
        }
        self.last_update = Some(now);
        let rtt_ns = rtt.as_nanos();
        let (next, rule) = self
            .p
            .next_rate(self.rate, rtt_ns, self.was_cnp, self.was_nack);
        match rule {
            Rule::Nack => self.was_nack = false,
            Rule::Cnp => {
                if self.was_cnp {
                    self.metrics.cnp_rate_cuts += 1;
                }
                self.was_cnp = false;
            }
            Rule::Rtt | Rule::Increase => {}
        }
        if rule == Rule::Increase {
            self.metrics.rate_increases += 1;
        } else {
            self.metrics.rate_cuts += 1;
        }
        self.rate = next;
        trace!(
            t_ns = now.as_nanos(),
            rtt_ns,
            ?rule,
            rate_fxp = self.rate,
            "nvidia-rtt update"
        );
        self.publish();
    }
}

impl CongestionControl for NvidiaRtt {
    fn name(&self) -> &'static str {
        "nvidia-rtt"
    }
    fn on_ack(&mut self, now: Instant, _acked_bytes: u64, rtt: Option<Duration>) {
        if let Some(rtt) = rtt {
            self.on_rtt(now, rtt);
        }
    }
    fn on_cnp(&mut self, _now: Instant) {
        if self.was_cnp {
            self.metrics.rp_cnp_ignored += 1;
        }
        self.was_cnp = true;
    }
    fn on_loss(&mut self, _now: Instant) {
        self.was_nack = true;
    }
    #[inline]
    fn ack_each(&self) -> bool {
        self.p.ack_each
    }
    #[inline]
    fn metrics(&self) -> CcMetrics {
        self.metrics
    }
}
