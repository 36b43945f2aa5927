//! A warning a run's summary carries: why its figures may not describe the controller settled
//! (raised by [`super::settle`], [`super::pfc_storms`] and
//! [`super::summary::RunSummary::describe_cc`]).

use serde::{Deserialize, Serialize};

/// Why a run's figures may not describe its controller settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// The measurement window opens before the controller's settle time.
    BeforeSettle,
    /// The total goodput of long-running flows moved between the halves of the window.
    NotSteady,
    /// Finite flows were still moving when the run ended.
    FlowsUnfinished,
    /// PFC still held transmitters when the run ended.
    PfcActive,
    /// A scenario setting overrides the CNP interval the controller was designed with.
    CnpOverride,
    /// A switch's PFC watchdog detected a storm (a lossless queue paused with packets for
    /// longer than its detection time).
    PfcStorm,
    /// Lossless queues paused each other in a cycle (a PFC deadlock).
    PfcDeadlock,
}

/// One warning: its kind and one line for the reader.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    /// What kind.
    pub kind: WarningKind,
    /// What happened and what to change, one line.
    pub message: String,
}

impl Warning {
    /// A warning of `kind` saying `message`.
    pub fn new(kind: WarningKind, message: String) -> Warning {
        Warning { kind, message }
    }
}
