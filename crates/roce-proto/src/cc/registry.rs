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
pub use super::entry::{CcEntry, BUILTIN};
pub use super::params::{CcKind, CloneKind};
use super::Rate;

/// [`CcRegistry::register`] was given a name (or alias) another controller has.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("congestion control `{name}` is already registered")]
pub struct NameTaken {
    /// The name.
    pub name: String,
}

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
    pub fn entries(&self) -> impl Iterator<Item = &'static CcEntry> + Clone + '_ {
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
        CcConfig::from_entries(self.entries(), name, line_rate)
    }
}
