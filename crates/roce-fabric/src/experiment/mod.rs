//! Experiments: the [`scenario`] file and its runner, its [`failures`] and its size, the
//! [`summary`] and [`outage`] report a run leaves and its [`settle`] [`warning`]s, the [`builtin`] experiments, grids of variants
//! ([`compare`]) and an HPCC simulator experiment run as a scenario ([`hpcc_run`]).

pub mod builtin;
pub mod compare;
pub mod failures;
pub mod hpcc_run;
#[cfg(test)]
mod observe_tests;
pub mod outage;
pub mod pfc_pauses;
pub mod pfc_storms;
pub mod queue_delay;
pub mod scenario;
mod scenario_size;
pub mod settle;
pub mod summary;
mod topology_spec;
pub mod warning;
