//! Building controllers by name, with `name=value` parameter overrides: what `--cc` and `--set`
//! on the command line, scenario files and the endpoint's QP attributes use.
//!
//! Names: `none`, `dcqcn-paper`, `dcqcn-mlx`, `dctcp`, `timely`, `patched-timely`, `hpcc`
//! ([`CC_NAMES`]). Unknown names, parameters or values are [`CcError`]s that list the valid
//! choices.

use super::params::{ParamError, ParamInfo, ParamSet};
use super::{
    Controller, Dcqcn, DcqcnParams, Dctcp, DctcpParams, Hpcc, HpccParams, LineRate, PatchedTimely,
    PatchedTimelyParams, Rate, Timely, TimelyParams,
};

/// Every controller name [`CcConfig::new`] accepts.
pub const CC_NAMES: &[&str] = &[
    "none",
    "dcqcn-paper",
    "dcqcn-mlx",
    "dctcp",
    "timely",
    "patched-timely",
    "hpcc",
];

/// A configuration error, phrased for one line of CLI output.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CcError {
    /// No controller has this name.
    #[error("unknown congestion control `{name}`; valid: {valid}")]
    UnknownController {
        /// The name given.
        name: String,
        /// The valid names, comma separated.
        valid: String,
    },
    /// The controller has no such parameter.
    #[error("`{controller}` has no parameter `{param}`; valid: {valid}")]
    UnknownParam {
        /// The controller's name.
        controller: &'static str,
        /// The parameter given.
        param: String,
        /// Its valid parameters, comma separated.
        valid: String,
    },
    /// The value does not parse, or is out of range.
    #[error("bad value `{value}` for `{param}`: expected {expected}")]
    BadValue {
        /// The parameter.
        param: String,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// A setting that is not `name=value`.
    #[error("bad setting `{setting}`: expected name=value")]
    BadSetting {
        /// The setting given.
        setting: String,
    },
}

/// The parameters of one controller kind.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub enum CcParams {
    /// `none` has no parameters.
    None,
    /// `dcqcn-paper` / `dcqcn-mlx`.
    Dcqcn(DcqcnParams),
    /// `dctcp`.
    Dctcp(DctcpParams),
    /// `timely`.
    Timely(TimelyParams),
    /// `patched-timely`.
    PatchedTimely(PatchedTimelyParams),
    /// `hpcc`.
    Hpcc(HpccParams),
}

/// A preset's parameter set, shared or mutable as `$params` is borrowed.
macro_rules! param_set {
    ($params:expr) => {
        match $params {
            CcParams::None => None,
            CcParams::Dcqcn(p) => Some(p as _),
            CcParams::Dctcp(p) => Some(p as _),
            CcParams::Timely(p) => Some(p as _),
            CcParams::PatchedTimely(p) => Some(p as _),
            CcParams::Hpcc(p) => Some(p as _),
        }
    };
}

impl CcParams {
    fn set(&mut self) -> Option<&mut dyn ParamSet> {
        param_set!(self)
    }

    fn get(&self) -> Option<&dyn ParamSet> {
        param_set!(self)
    }
}

/// A named controller with its parameters and the line rate it starts at.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CcConfig {
    name: &'static str,
    line_rate: Rate,
    params: CcParams,
}

impl CcConfig {
    /// The preset called `name` for a port of `line_rate`.
    pub fn new(name: &str, line_rate: Rate) -> Result<Self, CcError> {
        let (name, params) = match name {
            "none" => ("none", CcParams::None),
            "dcqcn-paper" => ("dcqcn-paper", CcParams::Dcqcn(DcqcnParams::paper())),
            "dcqcn-mlx" | "dcqcn" => ("dcqcn-mlx", CcParams::Dcqcn(DcqcnParams::mlx())),
            "dctcp" => ("dctcp", CcParams::Dctcp(DctcpParams::default())),
            "timely" => ("timely", CcParams::Timely(TimelyParams::default())),
            "patched-timely" => (
                "patched-timely",
                CcParams::PatchedTimely(PatchedTimelyParams::default()),
            ),
            "hpcc" => ("hpcc", CcParams::Hpcc(HpccParams::default())),
            other => {
                return Err(CcError::UnknownController {
                    name: other.to_string(),
                    valid: CC_NAMES.join(", "),
                })
            }
        };
        Ok(CcConfig {
            name,
            line_rate,
            params,
        })
    }

    /// The preset's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The line rate controllers start at.
    pub fn line_rate(&self) -> Rate {
        self.line_rate
    }

    /// The parameters.
    pub fn params(&self) -> &CcParams {
        &self.params
    }

    /// Whether the controller reacts to in-band telemetry: its QP must send INT shims, switches
    /// must stamp them and the receiver echo them (HPCC).
    pub fn uses_int(&self) -> bool {
        matches!(self.params, CcParams::Hpcc(_))
    }

    /// The CNP interval of the notification point this controller is designed with: DCQCN's
    /// `min_time_between_cnps`; 1 us for DCTCP, whose mark fraction needs (nearly) every CE
    /// mark echoed (a 50 us interval lets one mark per 50 us through, and the queue grows past
    /// Kmax into PFC); 50 us (the SIGCOMM'15 N) for controllers that ignore CNPs.
    pub fn cnp_interval(&self) -> crate::time::Duration {
        let us = match &self.params {
            CcParams::Dcqcn(p) => u64::from(p.min_time_between_cnps),
            CcParams::Dctcp(_) => 1,
            _ => 50,
        };
        crate::time::Duration::from_micros(us)
    }

    /// Sets parameter `param` to `value`.
    pub fn set(&mut self, param: &str, value: &str) -> Result<(), CcError> {
        let controller = self.name;
        let valid = self
            .params
            .get()
            .map(|p| p.names().join(", "))
            .unwrap_or_else(|| "(none)".to_string());
        let mut params = self.params.clone();
        let Some(set) = params.set() else {
            return Err(CcError::UnknownParam {
                controller,
                param: param.to_string(),
                valid,
            });
        };
        match set.set(param, value) {
            Ok(()) => {}
            Err(ParamError::Unknown) => {
                return Err(CcError::UnknownParam {
                    controller,
                    param: param.to_string(),
                    valid,
                })
            }
            Err(ParamError::BadValue { expected }) => {
                return Err(CcError::BadValue {
                    param: param.to_string(),
                    value: value.to_string(),
                    expected: expected.to_string(),
                })
            }
        }
        if let CcParams::Dcqcn(p) = &params {
            if let Err((name, why)) = p.validate() {
                return Err(CcError::BadValue {
                    param: name.to_string(),
                    value: value.to_string(),
                    expected: why.to_string(),
                });
            }
        }
        // Only a fully valid setting replaces the parameters.
        self.params = params;
        Ok(())
    }

    /// Applies one `name=value` setting.
    pub fn apply(&mut self, setting: &str) -> Result<(), CcError> {
        let Some((param, value)) = setting.split_once('=') else {
            return Err(CcError::BadSetting {
                setting: setting.to_string(),
            });
        };
        self.set(param.trim(), value.trim())
    }

    /// Every parameter with its value, for `roce cc show`.
    pub fn describe(&self) -> Vec<ParamInfo> {
        self.params.get().map(|p| p.list()).unwrap_or_default()
    }

    /// A fresh controller for one QP.
    pub fn build(&self) -> Controller {
        let line = self.line_rate;
        match &self.params {
            CcParams::None => Controller::None(LineRate::new(line)),
            CcParams::Dcqcn(p) => Controller::Dcqcn(Dcqcn::new(p.clone(), line)),
            CcParams::Dctcp(p) => Controller::Dctcp(Dctcp::new(p.clone(), line)),
            CcParams::Timely(p) => Controller::Timely(Timely::new(p.clone(), line)),
            CcParams::PatchedTimely(p) => {
                Controller::PatchedTimely(PatchedTimely::new(p.clone(), line))
            }
            CcParams::Hpcc(p) => Controller::Hpcc(Hpcc::new(p.clone(), line)),
        }
    }
}
