//! The worked example of docs/cc.md ("Adding a congestion controller"): two controllers a
//! researcher adds from outside roce-proto, compiled and exercised by `tests/it/cc_registry.rs`.
//!
//! - `DCQCN_G64`: a preset of a built-in controller (DCQCN with the paper's values but alpha
//!   gain g = 1/64). One registry entry; it builds the `Controller::Dcqcn` arm, so its data path
//!   is the built-in, statically dispatched one.
//! - `AIMD`: a controller of its own. Its parameters (`cc_params!` gives names, units, help and
//!   `--set`), its algorithm (`CongestionControl`), how it is built (`CcKind`) and its entry.
//!   Built as `Controller::Custom` (one box per QP, a virtual call per input).
//!
//! `controllers.register(&AIMD)` makes `aimd` a name like `dcqcn-mlx` for whatever is handed
//! that registry: `controllers.config`, scenario files read with it
//! (`Scenario::from_toml_with`: `cc = "aimd"`, `cc_params = ["md_factor=0.5"]`), overrides
//! (`--set cc.ai_rate=100`) and `compare` grids over such a scenario.

use roce_proto::cc::registry::{CcEntry, CcKind};
use roce_proto::cc::{CcMetrics, CongestionControl, Controller, Rate, ScaledDcqcnParams};
use roce_proto::time::{Duration, Instant};

/// DCQCN (paper values) with g = 1/64: alpha = (1008·alpha + 16·cnp)/1024.
pub static DCQCN_G64: CcEntry = CcEntry {
    name: "dcqcn-g64",
    aliases: &[],
    about: "DCQCN with the paper's values and alpha gain g = 1/64",
    defaults: || {
        let mut p = ScaledDcqcnParams::paper();
        p.params.dce_tcp_g = 1008;
        Box::new(p)
    },
};

roce_proto::cc_params! {
    /// AIMD parameters.
    pub struct AimdParams {
        /// Additive increase per `ai_interval`.
        ai_rate: u32 = "Mbit/s",
        /// Period of the additive increase.
        ai_interval: u32 = "us",
        /// A CNP multiplies the rate by this (0..1).
        md_factor: f64 = "",
        /// At most one cut per this interval (later CNPs inside it are ignored).
        md_holdoff: u32 = "us",
        /// Floor of the rate.
        min_rate: u32 = "Mbit/s",
    }
}

impl Default for AimdParams {
    fn default() -> Self {
        AimdParams {
            ai_rate: 500,
            ai_interval: 5,
            md_factor: 0.5,
            md_holdoff: 10,
            min_rate: 100,
        }
    }
}

impl CcKind for AimdParams {
    fn build(&self, line_rate: Rate) -> Controller {
        Controller::Custom(Box::new(Aimd::new(self.clone(), line_rate)))
    }
    fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if self.md_factor > 0.0 && self.md_factor < 1.0 {
            Ok(())
        } else {
            Err(("md_factor", "a factor strictly between 0 and 1"))
        }
    }
    /// Every CE mark counts: the notification point sends a CNP per 4 us at most.
    fn cnp_interval(&self) -> Duration {
        Duration::from_micros(4)
    }
}

/// The registry entry.
pub static AIMD: CcEntry = CcEntry {
    name: "aimd",
    aliases: &["aimd-toy"],
    about: "toy AIMD: rate += ai_rate every ai_interval, rate *= md_factor per CNP",
    defaults: || Box::new(AimdParams::default()),
};

/// Rate-based AIMD for one QP.
pub struct Aimd {
    p: AimdParams,
    line: f64,
    rate: f64,
    next_increase: Option<Instant>,
    holdoff_until: Option<Instant>,
    metrics: CcMetrics,
}

impl Aimd {
    /// A controller starting at `line_rate`.
    pub fn new(p: AimdParams, line_rate: Rate) -> Self {
        let line = line_rate.as_bps_f64();
        Aimd {
            p,
            line,
            rate: line,
            next_increase: None,
            holdoff_until: None,
            metrics: CcMetrics::default(),
        }
    }

    fn period(&self) -> Duration {
        Duration::from_micros(u64::from(self.p.ai_interval.max(1)))
    }
}

impl CongestionControl for Aimd {
    fn name(&self) -> &'static str {
        "aimd"
    }
    fn on_cnp(&mut self, now: Instant) {
        if self.holdoff_until.is_some_and(|t| now < t) {
            self.metrics.rp_cnp_ignored += 1;
            return;
        }
        let floor = f64::from(self.p.min_rate) * 1e6;
        self.rate = (self.rate * self.p.md_factor).max(floor).min(self.line);
        self.holdoff_until = Some(now + Duration::from_micros(u64::from(self.p.md_holdoff)));
        self.next_increase = Some(now + self.period());
        self.metrics.cnp_rate_cuts += 1;
        self.metrics.rate_cuts += 1;
    }
    fn handle_timeout(&mut self, now: Instant) {
        while let Some(t) = self.next_increase.filter(|&t| t <= now) {
            self.rate = (self.rate + f64::from(self.p.ai_rate) * 1e6).min(self.line);
            self.metrics.rate_increases += 1;
            self.next_increase = (self.rate < self.line).then(|| t + self.period());
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.next_increase
    }
    fn metrics(&self) -> CcMetrics {
        let rate = Rate::from_bps_f64(self.rate);
        CcMetrics {
            rate,
            target_rate: rate,
            ..self.metrics
        }
    }
}
