//! DCQCN reaction point: Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
//! SIGCOMM 2015 (Fig. 7), with the knobs of NVIDIA ConnectX firmware (mlx5 `cc_params` names
//! and units). Rate based: a CNP cuts the current rate RC, timers and a byte counter raise it
//! back through fast recovery, additive and hyper-additive increase. Not the notification
//! point (that is [`crate::ecn`]) and not the pacer ([`super::Pacer`]).
//!
//! The algorithm, with RC the current rate, RT the target rate, alpha the congestion estimate:
//! - CNP: RT ← RC (subject to `clamp_tgt_rate*`), RC ← RC·(1 − alpha·1024/2^rpg_gd) (= RC·(1 −
//!   alpha/2) for `rpg_gd` = 11), bounded below by RC·`rpg_min_dec_fac`% and `rpg_min_rate`;
//!   then alpha ← (1 − g)·alpha + g and the increase counters restart (with
//!   `alpha_update_before_cut`, as ConnectX's per-`dce_tcp_rtt` alpha sampling behaves, alpha is
//!   updated first, except on a flow's first CNP which cuts with `initial_alpha_value`). With
//!   `rate_reduce_monitor_period` P > 0 the first CNP of a quiet period cuts at once and opens a
//!   period; further CNPs inside it are coalesced into exactly one cut when it closes.
//! - No CNP for `dce_tcp_rtt`: alpha ← (1 − g)·alpha, repeated every `dce_tcp_rtt`.
//! - Increase events: every `rpg_time_reset` (timer, T) and every `rpg_byte_reset` units of 64
//!   bytes sent (byte counter, BC; see [`BYTE_RESET_UNIT`]). With T and BC counting the
//!   *earlier* events since the last cut and F = `rpg_threshold`: fast recovery while max(T,
//!   BC) < F (RC ← (RT + RC)/2, so the first F events are fast recovery); additive increase
//!   while min(T, BC) < F (RT += `rpg_ai_rate`, then RC ← (RT + RC)/2); otherwise hyper
//!   increase with i = min(T, BC) − F + 1 (RT += i·`rpg_hai_rate`, RC ← (RT + RC)/2), as in
//!   QCN and the authors' ns-3 model (bobzhuyb/ns3-rdma, `qbb-net-device.cc`,
//!   `rpr_hyper_increase`). A disabled trigger (0) mirrors the other's count.
//! - Target reset (`target_reset`, IEEE 802.1Qau's reaction point, which DCQCN's increase is
//!   built on; the DCQCN authors' ns-3 `AdjustRates`): at the first increase event after a cut
//!   (either counter reaching 1), if RT > 10·RC then RT ← RT/8 instead of the step, and RC ←
//!   (RT + RC)/2 as usual. Without it, a target the cuts never clamped (`clamp_tgt_rate` = 0
//!   and no increase between them) sends a collapsed flow, and every flow that collapsed with
//!   it, straight back to half of that target: an N:1 incast then overshoots N/2-fold into PFC.
//! - `rpg_ai_rate` and `rpg_hai_rate` are used as given, as a NIC uses them. A preset whose
//!   steps are published for one line rate ([`ScaledDcqcnParams`], `dcqcn-paper`) has them
//!   rescaled to the port's rate when its configuration is built, before any `--set`, as every
//!   controller's rate-scaled defaults are ([`CcKind::scale_to`](super::params::CcKind::scale_to)).
//! - When RC is back at the maximum the flow's rate limiter is released: timers stop, and the next
//!   CNP is again a "first" CNP (`initial_alpha_value`, `rate_to_set_on_first_cnp`).
//!
//! `dce_tcp_g` is the weight of the *old* alpha, as NVIDIA documents DcQcnDceAlphaG: every
//! `dce_tcp_rtt`, alpha ← (G·alpha + (1024 − G)·cnp_received)/1024. So the paper's g is
//! (1024 − `dce_tcp_g`)/1024: the ConnectX default 1019 is g = 5/1024, the paper's g = 1/256 is
//! `dce_tcp_g` = 1020. alpha is kept as an exact `f64`, not in 10-bit fixed point.

use tracing::{debug, trace};

use super::params::ParamSet;
use super::{clamp_rate, earliest, CcMetrics, CongestionControl, Rate, Window, WindowParams};
use crate::time::{Duration, Instant};

crate::cc_params! {
    /// DCQCN parameters, named and scaled like the mlx5 `cc_params` debugfs files and the
    /// mlxconfig `*_P1` keys (e.g. `RPG_TIME_RESET_P1`).
    pub struct DcqcnParams {
        /// The send window beside the rate (off: run.py gives DCQCN HAS_WIN 0; its `_vwin`
        /// variants run one).
        base win: WindowParams,
        /// Period of the rate-increase timer; 0 disables timer-driven increases.
        rpg_time_reset: u32 = "us",
        /// Data sent between byte-counter rate increases, in 64-byte units as the NIC counts
        /// (32767 = 2 MiB); 0 disables them.
        rpg_byte_reset: u64 = "x64 B",
        /// F: increase events spent in fast recovery before additive increase.
        rpg_threshold: u32 = "events",
        /// Additive-increase step of the target rate.
        rpg_ai_rate: u32 = "Mbit/s",
        /// Hyper-increase step of the target rate (times the hyper stage index i).
        rpg_hai_rate: u32 = "Mbit/s",
        /// Floor of the current rate.
        rpg_min_rate: u32 = "Mbit/s",
        /// Ceiling of both rates; 0 means the line rate.
        rpg_max_rate: u32 = "Mbit/s",
        /// log2(Gd): a cut is RC(1 - alpha*1024/Gd); 11 gives RC(1 - alpha/2).
        rpg_gd: u32 = "log2",
        /// A cut keeps at least this percentage of the current rate (50 = at most halve).
        rpg_min_dec_fac: u32 = "%",
        /// At most one cut per period; CNPs inside it are coalesced. 0 cuts on every CNP.
        rate_reduce_monitor_period: u32 = "us",
        /// G, the weight of the old alpha in 1/1024: alpha = (G*alpha + (1024 - G)*cnp)/1024.
        dce_tcp_g: u32 = "1/1024",
        /// Alpha decays by (1 - g) after each such period without a CNP; 0 disables decay.
        dce_tcp_rtt: u32 = "us",
        /// Alpha taken at the first CNP of a flow, in 1/1024 (1024 = 1.0).
        initial_alpha_value: u32 = "1/1024",
        /// Rate set on a flow's first CNP instead of a cut; 0 disables.
        rate_to_set_on_first_cnp: u32 = "Mbit/s",
        /// Every cut first sets the target rate to the current rate.
        clamp_tgt_rate: bool = "",
        /// Without clamp_tgt_rate: also clamp the target if a timer increase happened since the
        /// last cut (otherwise only after a byte-counter increase).
        clamp_tgt_rate_after_time_inc: bool = "",
        /// Notification point: at most one CNP per QP per this interval (used by crate::ecn).
        min_time_between_cnps: u32 = "us",
        /// Model switch, not an mlx5 knob: 1 folds the CNP into alpha before the cut uses it,
        /// 0 cuts first and updates alpha after (SIGCOMM'15 Fig. 7; both presets).
        alpha_update_before_cut: bool = "",
        /// Model switch, not an mlx5 knob: at the first increase event after a cut, a target
        /// above 10x the current rate drops to 1/8 of itself instead of being approached (the
        /// QCN reaction point's AdjustRates, kept in the DCQCN authors' ns-3; dcqcn-paper).
        target_reset: bool = "",
    }
}

/// Bytes per unit of `rpg_byte_reset`. NVIDIA documents `RPG_BYTE_RESET` as "given in bytes",
/// but the field is 15 bits wide and its default, 32767, is also its maximum: read as bytes, a
/// 400 Gbit/s flow would raise its target every 0.7 us, so the byte counter would outrun the
/// 300 us timer by 450x and make the increase proportional to the rate (two flows keep their
/// ratio: Jain 0.55 in the 2:1 incast at 400 Gbit/s,
/// `crates/roce-fabric/tests/it/cc_validation.rs`). Google's Isekai simulator models this firmware
/// with the same defaults and counts the field in 64-byte units
/// (`isekai/host/rdma/rdma_roce_cc_dcqcn.cc`: `byte_reset * 64`), 2 MiB by default, the order of
/// the DCQCN paper's B = 10 MB; so does this model.
pub const BYTE_RESET_UNIT: u64 = 64;

impl DcqcnParams {
    /// The SIGCOMM'15 paper's setting: g = 1/256, alpha timer K = 55 us, rate-increase timer
    /// T = 55 us, byte counter B = 10 MB (10 MiB here: 163840 units of 64 B), F = 5, R_AI = 40 Mbit/s, R_HAI = 200 Mbit/s
    /// (the authors' ns-3 configuration, bobzhuyb/ns3-rdma `mix/config.txt`: `RATE_AI 40Mb/s`,
    /// `RATE_HAI 200Mb/s`, `FAST_RECOVERY_TIMES 5`, `ALPHA_RESUME_INTERVAL 55`, `DCTCP_GAIN
    /// 0.00390625`), CNP interval N = 50 us, RT ← RC on every CNP, a cut on every CNP, alpha
    /// starting at 1, minimum rate 100 Mbit/s (the ns-3 model's `MinRate`), QCN's target reset.
    ///
    /// These are the values for the paper's 40 Gbit/s links; the `dcqcn-paper` preset
    /// ([`ScaledDcqcnParams::paper`]) rescales R_AI and R_HAI to the port's rate.
    pub fn paper() -> Self {
        DcqcnParams {
            win: WindowParams::OFF,
            rpg_time_reset: 55,
            rpg_byte_reset: 10 * 1024 * 1024 / BYTE_RESET_UNIT,
            rpg_threshold: 5,
            rpg_ai_rate: 40,
            rpg_hai_rate: 200,
            rpg_min_rate: 100,
            rpg_max_rate: 0,
            rpg_gd: 11,
            rpg_min_dec_fac: 0,
            rate_reduce_monitor_period: 0,
            dce_tcp_g: 1020,
            dce_tcp_rtt: 55,
            initial_alpha_value: 1024,
            rate_to_set_on_first_cnp: 0,
            clamp_tgt_rate: true,
            clamp_tgt_rate_after_time_inc: true,
            min_time_between_cnps: 50,
            alpha_update_before_cut: false,
            target_reset: true,
        }
    }

    /// NVIDIA ConnectX defaults as `mlxconfig -d <dev> query` reports them (`RPG_TIME_RESET_P1
    /// 300`, `RPG_BYTE_RESET_P1 32767` (in 64-byte units: [`BYTE_RESET_UNIT`]),
    /// `RPG_THRESHOLD_P1 1`, `RPG_MAX_RATE_P1 0`, `RPG_AI_RATE_P1 5`, `RPG_HAI_RATE_P1 50`, `RPG_GD_P1 11`, `RPG_MIN_DEC_FAC_P1 50`,
    /// `RPG_MIN_RATE_P1 1`, `RATE_TO_SET_ON_FIRST_CNP_P1 0`, `DCE_TCP_G_P1 1019`,
    /// `DCE_TCP_RTT_P1 1`, `RATE_REDUCE_MONITOR_PERIOD_P1 4`, `INITIAL_ALPHA_VALUE_P1 1023`,
    /// `CLAMP_TGT_RATE_P1 False`, `CLAMP_TGT_RATE_AFTER_TIME_INC_P1 True`, `CNP_DSCP_P1 48`,
    /// `CNP_802P_PRIO_P1 6`) and NVIDIA's DCQCN tuning notes (`min_time_between_cnps` default
    /// 4 us; some firmware reports `MIN_TIME_BETWEEN_CNPS_P1 2`). The increase steps are the
    /// NIC's absolute ones, not rescaled with the line rate (the HPCC authors' `run.py` treats
    /// them as 25 Gbit/s values: `--set rpg_ai_rate=20 --set rpg_hai_rate=200` at 100 Gbit/s).
    /// QCN's target reset is off, as in the HPCC authors' ns-3
    /// model of this firmware (NVIDIA does not document it either way); without it the clamp
    /// rules above leave the target at line rate through a synchronized collapse (see the
    /// module docs), and `target_reset=1` gives the DCQCN authors' QCN increase.
    pub fn mlx() -> Self {
        DcqcnParams {
            win: WindowParams::OFF,
            rpg_time_reset: 300,
            rpg_byte_reset: 32767,
            rpg_threshold: 1,
            rpg_ai_rate: 5,
            rpg_hai_rate: 50,
            rpg_min_rate: 1,
            rpg_max_rate: 0,
            rpg_gd: 11,
            rpg_min_dec_fac: 50,
            rate_reduce_monitor_period: 4,
            dce_tcp_g: 1019,
            dce_tcp_rtt: 1,
            initial_alpha_value: 1023,
            rate_to_set_on_first_cnp: 0,
            clamp_tgt_rate: false,
            clamp_tgt_rate_after_time_inc: true,
            min_time_between_cnps: 4,
            alpha_update_before_cut: false,
            target_reset: false,
        }
    }

    /// Checks ranges the algorithm relies on; returns the offending parameter and what it accepts.
    pub fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        if self.dce_tcp_g > 1024 {
            return Err(("dce_tcp_g", "a value in 0..=1024"));
        }
        if self.initial_alpha_value > 1024 {
            return Err(("initial_alpha_value", "a value in 0..=1024"));
        }
        if self.rpg_min_dec_fac > 100 {
            return Err(("rpg_min_dec_fac", "a percentage in 0..=100"));
        }
        if !(1..=30).contains(&self.rpg_gd) {
            return Err(("rpg_gd", "a value in 1..=30"));
        }
        Ok(())
    }
}

impl super::params::CcKind for DcqcnParams {
    fn build(&self, line_rate: Rate) -> super::Controller {
        super::Controller::Dcqcn(Dcqcn::new(self.clone(), line_rate))
    }
    fn check(&self) -> Result<(), (&'static str, &'static str)> {
        self.validate()
    }
    /// The notification point's interval is DCQCN's own knob.
    fn cnp_interval(&self) -> Duration {
        Duration::from_micros(u64::from(self.min_time_between_cnps))
    }
    /// Alpha's time constant (it decays by 1 − g every `dce_tcp_rtt`, from
    /// `initial_alpha_value`) plus the fast-recovery stages of the timer (`rpg_threshold` ×
    /// `rpg_time_reset`): 14.4 ms for the paper's values, 0.5 ms for ConnectX's.
    fn settle_time(&self) -> Duration {
        let g = f64::from(1024u32.saturating_sub(self.dce_tcp_g).max(1)) / 1024.0;
        let alpha_us = f64::from(self.dce_tcp_rtt) / g;
        let recovery_us = u64::from(self.rpg_threshold) * u64::from(self.rpg_time_reset);
        Duration::from_micros(alpha_us.round() as u64 + recovery_us)
    }
}

/// DCQCN parameters whose increase steps are published for one line rate: what `dcqcn-paper`
/// registers. On a port of another rate [`CcKind::scale_to`](super::params::CcKind::scale_to)
/// multiplies `rpg_ai_rate` and `rpg_hai_rate` by line/`steps_for` (rounded to whole Mbit/s;
/// `steps_for` becomes the line rate, so scaling again to the same rate changes nothing), as
/// the HPCC authors' ns-3 scales them with the link (alibaba-edu/High-Precision-Congestion-Control
/// `simulation/run.py`: `ai = 5 * bw / 25`, `hai = 50 * bw / 25` for both its `dcqcn` and
/// `dcqcn_paper`), so recovery takes the same time at every rate. Like every controller's
/// rate-scaled defaults this happens when the configuration is built, before any `--set`: an
/// explicit step is used as given. Timers, byte counter and g are not scaled (neither source
/// does). Parameters by name, building and checks are those of [`DcqcnParams`], which on its own
/// (the `dcqcn-mlx` preset, a NIC) keeps its steps absolute.
#[derive(Clone, Debug, PartialEq)]
pub struct ScaledDcqcnParams {
    /// The parameters, with the steps for `steps_for`.
    pub params: DcqcnParams,
    /// The line rate the increase steps are given for.
    pub steps_for: Rate,
}

impl ScaledDcqcnParams {
    /// The SIGCOMM'15 values ([`DcqcnParams::paper`]), whose R_AI and R_HAI are for its 40
    /// Gbit/s links, held at 100 Gbit/s like every controller's rate-scaled defaults (what
    /// `roce cc list` shows): 100 and 500 Mbit/s.
    pub fn paper() -> Self {
        let mut p = ScaledDcqcnParams {
            params: DcqcnParams::paper(),
            steps_for: Rate::from_gbps(40),
        };
        super::params::CcKind::scale_to(&mut p, Rate::from_gbps(100));
        p
    }
}

impl ParamSet for ScaledDcqcnParams {
    fn names(&self) -> Vec<&'static str> {
        self.params.names()
    }
    fn set(&mut self, name: &str, value: &str) -> Result<(), super::params::ParamError> {
        self.params.set(name, value)
    }
    fn list(&self) -> Vec<super::params::ParamInfo> {
        self.params.list()
    }
}

impl super::params::CcKind for ScaledDcqcnParams {
    fn build(&self, line_rate: Rate) -> super::Controller {
        self.params.build(line_rate)
    }
    fn check(&self) -> Result<(), (&'static str, &'static str)> {
        self.params.validate()
    }
    fn cnp_interval(&self) -> Duration {
        super::params::CcKind::cnp_interval(&self.params)
    }
    fn settle_time(&self) -> Duration {
        super::params::CcKind::settle_time(&self.params)
    }
    fn scale_to(&mut self, line_rate: Rate) {
        let ratio = line_rate.as_bps_f64() / self.steps_for.as_bps_f64().max(1.0);
        // `as` saturates, so a step scaled past u32::MAX stays u32::MAX.
        let scale = |mbps: u32| (f64::from(mbps) * ratio).round() as u32;
        self.params.rpg_ai_rate = scale(self.params.rpg_ai_rate);
        self.params.rpg_hai_rate = scale(self.params.rpg_hai_rate);
        self.steps_for = line_rate;
    }
}

/// Which trigger raised the rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trigger {
    Timer,
    Bytes,
}

/// A DCQCN reaction point for one QP.
#[derive(Clone, Debug)]
pub struct Dcqcn {
    p: DcqcnParams,
    /// The send window (its BDP at the ceiling, scaled by RC / ceiling).
    window: Window,
    /// Ceiling (line rate or `rpg_max_rate`), bits/s.
    max: f64,
    /// Floor, bits/s.
    min: f64,
    /// Additive and hyper-additive steps, bits/s.
    ai: f64,
    hai: f64,
    /// RC, bits/s.
    rc: f64,
    /// RT, bits/s.
    rt: f64,
    alpha: f64,
    /// g as a fraction.
    g: f64,
    /// A rate limiter is engaged (after a CNP, until RC is back at the maximum).
    active: bool,
    /// Timer events since the last cut.
    time_stage: u32,
    /// Byte-counter events since the last cut.
    byte_stage: u32,
    /// Bytes sent since the last byte-counter event.
    bytes: u64,
    next_increase: Option<Instant>,
    next_alpha: Option<Instant>,
    /// End of the current rate-reduce monitor period, if one is open.
    monitor_end: Option<Instant>,
    cut_pending: bool,
    /// The earliest of the three timers (FAR_FUTURE when none), kept for a cheap `on_sent`.
    deadline: Instant,
    metrics: CcMetrics,
}

impl Dcqcn {
    /// A reaction point sending at `line_rate` until the first CNP.
    pub fn new(params: DcqcnParams, line_rate: Rate) -> Self {
        let line = line_rate.as_bps_f64();
        let max = if params.rpg_max_rate == 0 {
            line
        } else {
            line.min(f64::from(params.rpg_max_rate) * 1e6)
        };
        let min = (f64::from(params.rpg_min_rate) * 1e6).min(max);
        let mut d = Dcqcn {
            ai: f64::from(params.rpg_ai_rate) * 1e6,
            hai: f64::from(params.rpg_hai_rate) * 1e6,
            g: f64::from(1024 - params.dce_tcp_g.min(1024)) / 1024.0,
            alpha: f64::from(params.initial_alpha_value.min(1024)) / 1024.0,
            window: Window::new(&params.win, Rate::from_bps_f64(max)),
            p: params,
            max,
            min,
            rc: max,
            rt: max,
            active: false,
            time_stage: 0,
            byte_stage: 0,
            bytes: 0,
            next_increase: None,
            next_alpha: None,
            monitor_end: None,
            cut_pending: false,
            deadline: Instant::FAR_FUTURE,
            metrics: CcMetrics::default(),
        };
        d.refresh();
        d
    }

    /// The parameters in use.
    pub fn params(&self) -> &DcqcnParams {
        &self.p
    }

    /// Whether a rate limiter is engaged (a CNP arrived and the rate has not fully recovered).
    pub fn is_limiting(&self) -> bool {
        self.active
    }

    fn us(v: u32) -> Option<Duration> {
        (v > 0).then(|| Duration::from_micros(u64::from(v)))
    }

    fn refresh(&mut self) {
        self.deadline = earliest(
            earliest(self.next_increase, self.next_alpha),
            self.monitor_end,
        )
        .unwrap_or(Instant::FAR_FUTURE);
        self.metrics.rate = Rate::from_bps_f64(self.rc);
        self.metrics.target_rate = Rate::from_bps_f64(self.rt);
        self.metrics.alpha = self.alpha;
    }

    /// The rate reduction of one CNP (or of a monitor period with CNPs in it).
    fn cut(&mut self, now: Instant, first: bool) {
        let old = self.rc;
        if first && self.p.rate_to_set_on_first_cnp > 0 {
            self.rt = self.rc;
            self.rc = clamp_rate(
                f64::from(self.p.rate_to_set_on_first_cnp) * 1e6,
                self.min,
                self.max,
            );
        } else {
            if self.p.alpha_update_before_cut && !first {
                self.alpha = (1.0 - self.g) * self.alpha + self.g;
            }
            // The target follows the current rate when told to always, after any byte-counter
            // increase, and (with clamp_tgt_rate_after_time_inc) after a timer increase.
            let clamp = self.p.clamp_tgt_rate
                || self.byte_stage > 0
                || (self.p.clamp_tgt_rate_after_time_inc && self.time_stage > 0);
            if clamp {
                self.rt = self.rc;
            }
            let depth = self.alpha * 1024.0 / f64::from(1u32 << self.p.rpg_gd.clamp(1, 30));
            let cut = self.rc * (1.0 - depth.min(1.0));
            let floor = self.rc * f64::from(self.p.rpg_min_dec_fac.min(100)) / 100.0;
            self.rc = clamp_rate(cut.max(floor), self.min, self.max);
        }
        if !self.p.alpha_update_before_cut {
            self.alpha = (1.0 - self.g) * self.alpha + self.g;
        }
        self.time_stage = 0;
        self.byte_stage = 0;
        self.bytes = 0;
        self.next_increase = Self::us(self.p.rpg_time_reset).map(|d| now + d);
        self.next_alpha = Self::us(self.p.dce_tcp_rtt).map(|d| now + d);
        self.metrics.rate_cuts += 1;
        debug!(
            t_ns = now.as_nanos(),
            from_bps = old,
            rc_bps = self.rc,
            rt_bps = self.rt,
            alpha = self.alpha,
            first,
            "dcqcn cut"
        );
    }

    fn increase(&mut self, now: Instant, trigger: Trigger) {
        let timer_on = self.p.rpg_time_reset > 0;
        let bytes_on = self.p.rpg_byte_reset > 0;
        let (mut t, mut bc) = (self.time_stage, self.byte_stage);
        if !timer_on {
            t = bc;
        }
        if !bytes_on {
            bc = t;
        }
        let f = self.p.rpg_threshold;
        // The first event of either counter after a cut, as QCN counts its cycles.
        let first = match trigger {
            Trigger::Timer => self.time_stage == 0 || self.byte_stage == 1,
            Trigger::Bytes => self.byte_stage == 0 || self.time_stage == 1,
        };
        let stage = if self.p.target_reset && first && self.rt > 10.0 * self.rc {
            // A target left far above a collapsed rate would send the flow (and every flow
            // that collapsed with it) straight back to half of it.
            self.rt /= 8.0;
            "target-reset"
        } else if t.max(bc) < f {
            "fast-recovery"
        } else if t.min(bc) < f {
            self.rt = (self.rt + self.ai).min(self.max);
            "additive"
        } else {
            let i = t.min(bc) - f + 1;
            self.rt = (self.rt + f64::from(i) * self.hai).min(self.max);
            "hyper"
        };
        self.rc = ((self.rt + self.rc) / 2.0).min(self.max);
        match trigger {
            Trigger::Timer => self.time_stage = self.time_stage.saturating_add(1),
            Trigger::Bytes => self.byte_stage = self.byte_stage.saturating_add(1),
        }
        self.metrics.rate_increases += 1;
        trace!(
            t_ns = now.as_nanos(),
            ?trigger,
            stage,
            rc_bps = self.rc,
            rt_bps = self.rt,
            "dcqcn increase"
        );
        if self.rc >= self.max || self.max - self.rc < 1.0 {
            self.release(now);
        }
    }

    /// RC is back at the ceiling: drop the rate limiter and its timers.
    fn release(&mut self, now: Instant) {
        self.rc = self.max;
        self.rt = self.max;
        self.active = false;
        self.next_increase = None;
        self.next_alpha = None;
        self.monitor_end = None;
        self.cut_pending = false;
        debug!(t_ns = now.as_nanos(), "dcqcn released at line rate");
    }

    /// Runs the earliest due timer; returns false when none is due.
    fn run_one_timer(&mut self, now: Instant) -> bool {
        let due = |t: Option<Instant>| t.filter(|&t| t <= now);
        let candidates = [
            due(self.monitor_end).map(|t| (t, 0u8)),
            due(self.next_alpha).map(|t| (t, 1)),
            due(self.next_increase).map(|t| (t, 2)),
        ];
        let Some((at, which)) = candidates.into_iter().flatten().min() else {
            return false;
        };
        match which {
            0 => {
                if self.cut_pending {
                    self.cut_pending = false;
                    self.cut(at, false);
                    self.monitor_end = Self::us(self.p.rate_reduce_monitor_period).map(|d| at + d);
                } else {
                    self.monitor_end = None;
                }
            }
            1 => {
                self.alpha *= 1.0 - self.g;
                // Zero stays zero: stop ticking until the next cut restarts the timer.
                self.next_alpha = Self::us(self.p.dce_tcp_rtt)
                    .filter(|_| self.alpha > 0.0)
                    .map(|d| at + d);
                trace!(
                    t_ns = at.as_nanos(),
                    alpha = self.alpha,
                    "dcqcn alpha decay"
                );
            }
            _ => {
                self.next_increase = Self::us(self.p.rpg_time_reset).map(|d| at + d);
                self.increase(at, Trigger::Timer);
            }
        }
        true
    }
}

impl CongestionControl for Dcqcn {
    fn name(&self) -> &'static str {
        "dcqcn"
    }

    #[inline]
    fn on_sent(&mut self, now: Instant, bytes: u64) {
        if now >= self.deadline {
            self.handle_timeout(now);
        }
        if !self.active || self.p.rpg_byte_reset == 0 {
            return;
        }
        self.bytes += bytes;
        let reset = self.p.rpg_byte_reset.saturating_mul(BYTE_RESET_UNIT);
        if self.bytes >= reset {
            while self.active && self.bytes >= reset {
                self.bytes -= reset;
                self.increase(now, Trigger::Bytes);
            }
            self.refresh();
        }
    }

    fn on_ack(&mut self, now: Instant, _acked_bytes: u64, _rtt: Option<Duration>) {
        if now >= self.deadline {
            self.handle_timeout(now);
        }
    }

    fn on_cnp(&mut self, now: Instant) {
        if now >= self.deadline {
            self.handle_timeout(now);
        }
        let first = !self.active;
        if first {
            self.active = true;
            self.alpha = f64::from(self.p.initial_alpha_value.min(1024)) / 1024.0;
            self.rt = self.rc;
        }
        if self.monitor_end.is_some_and(|end| now < end) {
            if self.cut_pending {
                self.metrics.rp_cnp_ignored += 1;
            } else {
                self.cut_pending = true;
                self.metrics.cnp_rate_cuts += 1;
            }
        } else {
            self.metrics.cnp_rate_cuts += 1;
            self.cut(now, first);
            self.monitor_end = Self::us(self.p.rate_reduce_monitor_period).map(|d| now + d);
        }
        self.refresh();
    }

    fn on_loss(&mut self, now: Instant) {
        // DCQCN reacts to CNPs only; losses are the transport's business (NVIDIA's
        // lossy-RoCE "slow restart" is a separate mechanism).
        if now >= self.deadline {
            self.handle_timeout(now);
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        while self.run_one_timer(now) {}
        self.refresh();
    }

    #[inline]
    fn poll_timeout(&self) -> Option<Instant> {
        (self.deadline != Instant::FAR_FUTURE).then_some(self.deadline)
    }

    #[inline]
    fn window(&self) -> Option<u64> {
        self.window.bytes(self.rc, self.max)
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

impl Dcqcn {
    /// The parameter listing, for `roce cc show`.
    pub fn describe(&self) -> Vec<super::params::ParamInfo> {
        self.p.list()
    }
}
