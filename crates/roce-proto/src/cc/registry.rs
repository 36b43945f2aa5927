//! The congestion controllers a program can name: every name `--cc`, scenario files (`cc = "..."`,
//! `cc_params`), `--set cc.PARAM=...`, `roce sim compare --cc/--param` and `roce cc list/show`
//! accept comes from a [`CcRegistry`]: the built-in entries ([`BUILTIN`]) plus what its owner
//! adds. A registry is a value the caller owns and passes where controllers are built by name
//! (as quinn carries its controller factory in its config): there is no process-wide list.
//!
//! An entry ([`CcEntry`]) is a name, its aliases, a one-line description and a constructor of
//! its default parameters. The parameters are a [`CcKind`]: a [`cc_params!`](crate::cc_params)
//! struct (names, units, help and values, settable by name) that also knows how to build the
//! controller of one QP. Built-in controllers build an arm of the [`Controller`](super::Controller) enum, so the data
//! path stays statically dispatched and allocation free; a controller from outside this crate
//! builds [`Controller::Custom`](super::Controller::Custom) (a box made once per QP, a virtual call per input).
//!
//! A preset of an existing controller (other defaults) is one entry:
//! ```
//! use roce_proto::cc::registry::{CcEntry, CcRegistry};
//! use roce_proto::cc::{Rate, ScaledDcqcnParams};
//!
//! static DCQCN_G64: CcEntry = CcEntry {
//!     name: "dcqcn-g64",
//!     aliases: &[],
//!     about: "DCQCN (paper values) with alpha gain g = 1/64",
//!     defaults: || {
//!         let mut p = ScaledDcqcnParams::paper();
//!         p.params.dce_tcp_g = 1008;
//!         Box::new(p)
//!     },
//! };
//! let mut controllers = CcRegistry::builtin();
//! controllers.register(&DCQCN_G64).unwrap();
//! let cfg = controllers.config("dcqcn-g64", Rate::from_gbps(100)).unwrap();
//! let value = |name: &str| cfg.describe().into_iter().find(|p| p.name == name).unwrap().value;
//! assert_eq!(value("dce_tcp_g"), "1008");
//! // The paper's R_AI (40 Mbit/s at 40 Gbit/s), rescaled to the port's 100 Gbit/s.
//! assert_eq!(value("rpg_ai_rate"), "100");
//! ```

use super::config::{CcConfig, CcError};
use super::params::ParamInfo;
pub use super::params::{CcKind, CloneKind};
use super::{
    DcqcnParams, DctcpParams, HpccParams, NoParams, PatchedTimelyParams, Rate, ScaledDcqcnParams,
    TimelyParams,
};

/// [`CcRegistry::register`] was given a name (or alias) another controller has.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("congestion control `{name}` is already registered")]
pub struct NameTaken {
    /// The name.
    pub name: String,
}

/// One registered controller (or preset of one).
#[derive(Debug)]
pub struct CcEntry {
    /// The name `--cc` and scenario files use, and reports print.
    pub name: &'static str,
    /// Other names accepted for it.
    pub aliases: &'static [&'static str],
    /// One line for `roce cc list`.
    pub about: &'static str,
    /// Its default parameters (units, help and values come with them).
    pub defaults: fn() -> Box<dyn CcKind>,
}

impl CcEntry {
    /// Whether `name` is this entry's name or one of its aliases.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }

    /// Every parameter with its default, unit and help.
    pub fn params(&self) -> Vec<ParamInfo> {
        (self.defaults)().list()
    }
}

/// The built-in controllers, in the order `roce cc list` prints them.
pub static BUILTIN: &[CcEntry] = &[
    CcEntry {
        name: "none",
        aliases: &[],
        about: "no congestion control: always the line rate (congestion is left to PFC)",
        defaults: || Box::new(NoParams {}),
    },
    CcEntry {
        name: "dcqcn-paper",
        aliases: &[],
        about: "DCQCN with the SIGCOMM'15 paper's values (g = 1/256, T = K = 55 us, B = 10 MiB)",
        defaults: || Box::new(ScaledDcqcnParams::paper()),
    },
    CcEntry {
        name: "dcqcn-mlx",
        aliases: &["dcqcn"],
        about: "DCQCN with NVIDIA ConnectX firmware defaults (mlxconfig RPG_*/DCE_TCP_* values)",
        defaults: || Box::new(DcqcnParams::mlx()),
    },
    CcEntry {
        name: "dctcp",
        aliases: &[],
        about: "rate-based DCTCP (SIGCOMM'10): cut by alpha/2 per marked window, CNPs as ECN echo",
        defaults: || Box::new(DctcpParams::default()),
    },
    CcEntry {
        name: "timely",
        aliases: &[],
        about: "TIMELY (SIGCOMM'15): rate follows the RTT gradient of ACKs; ignores CNPs",
        defaults: || Box::new(TimelyParams::default()),
    },
    CcEntry {
        name: "patched-timely",
        aliases: &[],
        about: "patched TIMELY (CoNEXT'16): gradient weighed against the RTT error, a fixed point",
        defaults: || Box::new(PatchedTimelyParams::default()),
    },
    CcEntry {
        name: "hpcc",
        aliases: &[],
        about: "HPCC (SIGCOMM'19): rate from per-hop INT (queue, tx bytes, link rate); needs INT",
        defaults: || Box::new(HpccParams::default()),
    },
];

/// The built-in controllers plus those its owner registered.
#[derive(Clone, Debug, Default)]
pub struct CcRegistry {
    /// Registered after the built-ins, in registration order.
    added: Vec<&'static CcEntry>,
}

impl PartialEq for CcRegistry {
    /// The same entries in the same order.
    fn eq(&self, other: &Self) -> bool {
        self.added.len() == other.added.len()
            && self
                .added
                .iter()
                .zip(&other.added)
                .all(|(a, b)| core::ptr::eq(*a, *b))
    }
}

impl CcRegistry {
    /// The built-in controllers only.
    pub fn builtin() -> Self {
        CcRegistry::default()
    }

    /// Adds `entry` after the controllers already here. Registering the same entry again is a
    /// no-op; another entry with a taken name or alias is [`NameTaken`].
    pub fn register(&mut self, entry: &'static CcEntry) -> Result<(), NameTaken> {
        if self.added.iter().any(|e| core::ptr::eq(*e, entry)) {
            return Ok(());
        }
        let taken = core::iter::once(entry.name)
            .chain(entry.aliases.iter().copied())
            .find(|n| self.find(n).is_some());
        if let Some(name) = taken {
            return Err(NameTaken {
                name: name.to_string(),
            });
        }
        self.added.push(entry);
        Ok(())
    }

    /// Every controller: the built-ins, then the registered ones in registration order.
    pub fn entries(&self) -> impl Iterator<Item = &'static CcEntry> + '_ {
        BUILTIN.iter().chain(self.added.iter().copied())
    }

    /// The entry answering to `name` (a name or an alias).
    pub fn find(&self, name: &str) -> Option<&'static CcEntry> {
        self.entries().find(|e| e.answers_to(name))
    }

    /// Every controller's name (not aliases), built-ins first.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.entries().map(|e| e.name)
    }

    /// The preset called `name` (a name or alias here) for a port of `line_rate`.
    pub fn config(&self, name: &str, line_rate: Rate) -> Result<CcConfig, CcError> {
        let entry = self.find(name).ok_or_else(|| CcError::UnknownController {
            name: name.to_string(),
            valid: self.names().collect::<Vec<_>>().join(", "),
        })?;
        Ok(CcConfig::of_entry(entry, line_rate))
    }
}
