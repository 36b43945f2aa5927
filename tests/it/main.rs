//! Integration tests of the roce crate, one binary: the `roce` CLI run as a user runs it (a
//! subprocess each, so each DPDK run has its own EAL), the library parts that only this crate
//! has (the out-of-band TCP exchanges, the metrics endpoint) and interoperability with the
//! kernel's Soft-RoCE. The sans-IO core's, the simulator's and the DPDK layer's own tests live in
//! their crates.
//!
//! Tests run in parallel threads, so what two modules would share is kept apart: scratch files
//! are named after their test and this process, TCP ports are the kernel's choice, the tap tests
//! (`perf_tap`) take one namespace at a time, and the one test that reads a DPDK telemetry socket
//! gives its EAL a file prefix of its own.

// Tests may panic: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod cc_cli;
mod cc_registry;
mod cli_errors;
mod cli_honest_errors;
mod cli_input_bounds;
mod cli_pcap;
mod cli_pipe;
mod cli_sizes;
mod cli_stats;
#[cfg(feature = "dpdk")]
mod demo;
#[cfg(feature = "dpdk")]
mod dpdk_cli;
mod interop_rxe;
#[cfg(feature = "dpdk")]
mod metrics_cli;
mod metrics_request_props;
mod metrics_server;
mod oob_props;
mod oob_tcp;
mod oob_vectors;
mod pcap_links;
#[cfg(feature = "dpdk")]
mod perf_cli;
#[cfg(feature = "dpdk")]
mod perf_hostile;
#[cfg(feature = "dpdk")]
mod perf_memif;
#[cfg(feature = "dpdk")]
mod perf_tap;
#[cfg(feature = "dpdk")]
mod perf_xdp;
mod rc_cli;
mod sim_compare;
mod sim_compare_out;
mod sim_failures;
mod sim_hpcc_config;
mod sim_hpcc_files;
mod sim_outage;
mod sim_shard;
mod sim_speed;
mod sim_telemetry;
mod sim_transport_grid;
