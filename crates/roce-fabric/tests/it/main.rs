//! Integration tests of roce-fabric, one binary: the simulator's scenarios and builtins end to
//! end (congestion control, classes, collectives, ECMP, HPCC, outages run in parallel, RC over
//! the fabric, thresholds), the CC validation matrix, INT through the fabric, summary snapshots
//! (insta, in `snapshots/`) and the bounds on simulator inputs.

// Tests may panic: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cc_int;
mod cc_validation;
mod hpcc_parity;
mod input_bounds;
mod sim_buffers;
mod sim_cc;
mod sim_classes;
mod sim_cnp_delay;
mod sim_collectives;
mod sim_dcqcn_theory;
mod sim_ecmp;
mod sim_fabric;
mod sim_flow_life;
mod sim_hpcc;
mod sim_parallel;
mod sim_pfc_pauses;
mod sim_pfc_watchdog;
mod sim_queue_delay;
mod sim_rc;
mod sim_scenarios;
mod sim_selective;
mod sim_settle;
mod sim_snapshots;
mod sim_thresholds;
