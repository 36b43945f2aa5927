//! Building controllers by name, with `name=value` parameter overrides: what `--cc` and `--set`
//! on the command line, scenario files and the endpoint's QP attributes use.
//!
//! Names come from a [`CcRegistry`](super::registry::CcRegistry): the built-ins `none`, `dcqcn-paper`, `dcqcn-mlx`,
//! `dctcp`, `timely`, `patched-timely`, `hpcc`, `swift`, `nscc`, `nvidia-rtt` ([`BUILTIN`]), and
//! whatever a program registered in its own registry. Unknown names, parameters or values are
//! [`CcError`]s that list the valid choices.

use super::entry::{CcEntry, BUILTIN};
use super::params::{CcKind, ParamError, ParamInfo};
use super::{Controller, Rate};

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

/// The parameters of one controller: a boxed [`CcKind`] (built once per configuration, never on
/// the data path). Equal when they list the same names and values.
#[derive(Debug)]
pub struct CcParams(Box<dyn CcKind>);

impl CcParams {
    /// The parameter set and constructor.
    pub fn kind(&self) -> &dyn CcKind {
        &*self.0
    }

    /// Every parameter with its value, unit and help.
    pub fn list(&self) -> Vec<ParamInfo> {
        self.0.list()
    }
}

impl Clone for CcParams {
    fn clone(&self) -> Self {
        CcParams(self.0.clone_kind())
    }
}

impl PartialEq for CcParams {
    fn eq(&self, other: &Self) -> bool {
        self.0.list() == other.0.list()
    }
}

/// A map of parameter names to their values as `--set` accepts them.
impl serde::Serialize for CcParams {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let list = self.0.list();
        let mut map = s.serialize_map(Some(list.len()))?;
        for p in &list {
            map.serialize_entry(p.name, &p.value)?;
        }
        map.end()
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
    /// The built-in preset called `name` (a name or alias) for a port of `line_rate`; a
    /// controller a program added is built by its registry
    /// ([`CcRegistry::config`](super::CcRegistry::config)).
    pub fn new(name: &str, line_rate: Rate) -> Result<Self, CcError> {
        CcConfig::from_entries(BUILTIN.iter(), name, line_rate)
    }

    /// The defaults of the entry among `entries` answering to `name`, for a port of
    /// `line_rate`; the error lists the entries' names.
    pub(crate) fn from_entries<'a>(
        entries: impl Iterator<Item = &'a CcEntry> + Clone,
        name: &str,
        line_rate: Rate,
    ) -> Result<Self, CcError> {
        let entry = entries
            .clone()
            .find(|e| e.answers_to(name))
            .ok_or_else(|| CcError::UnknownController {
                name: name.to_string(),
                valid: entries.map(|e| e.name).collect::<Vec<_>>().join(", "),
            })?;
        let mut params = (entry.defaults)();
        params.scale_to(line_rate);
        Ok(CcConfig {
            name: entry.name,
            line_rate,
            params: CcParams(params),
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
        self.params.0.uses_int()
    }

    /// The units multiplier of the byte fields of the INT records its QPs collect
    /// ([`CcKind::int_units`]: HPCC's `int_multi`).
    pub fn int_units(&self) -> u8 {
        self.params.0.int_units()
    }

    /// Whether the switches should mark with a step at K, as the controller is defined
    /// ([`CcKind::step_marking`]: DCTCP), instead of RED's ramp.
    pub fn step_marking(&self) -> bool {
        self.params.0.step_marking()
    }

    /// The CNP interval of the notification point this controller is designed with
    /// ([`CcKind::cnp_interval`]): DCQCN's `min_time_between_cnps`; 1 ns for DCTCP (every
    /// mark); 50 us (the SIGCOMM'15 N) for controllers that ignore CNPs.
    pub fn cnp_interval(&self) -> crate::time::Duration {
        self.params.0.cnp_interval()
    }

    /// How long after a flow starts the controller takes to settle ([`CcKind::settle_time`]):
    /// a run whose measurement opens earlier describes its start-up.
    pub fn settle_time(&self) -> crate::time::Duration {
        self.params.0.settle_time()
    }

    /// Sets parameter `param` to `value`.
    pub fn set(&mut self, param: &str, value: &str) -> Result<(), CcError> {
        let controller = self.name;
        let unknown = |names: Vec<&str>| CcError::UnknownParam {
            controller,
            param: param.to_string(),
            valid: if names.is_empty() {
                "(none)".to_string()
            } else {
                names.join(", ")
            },
        };
        let mut params = self.params.clone();
        let bad = |param: &str, expected: &str| CcError::BadValue {
            param: param.to_string(),
            value: value.to_string(),
            expected: expected.to_string(),
        };
        match params.0.set(param, value) {
            Ok(()) => {}
            Err(ParamError::Unknown) => return Err(unknown(params.0.names())),
            Err(ParamError::BadValue { expected }) => return Err(bad(param, expected)),
        }
        params.0.check().map_err(|(name, why)| bad(name, why))?;
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
        self.params.list()
    }

    /// A fresh controller for one QP.
    pub fn build(&self) -> Controller {
        self.params.0.build(self.line_rate)
    }
}
