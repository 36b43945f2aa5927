//! # roce: the command line's library
//!
//! What the `roce` commands share beyond the transport: the out-of-band exchanges of
//! ibv_rc_pingpong, perftest and the pyverbs peer ([`oob`]), packet captures ([`pcap`]), counter
//! reports ([`stats`]), verifiable payloads ([`payload`]), the tables, CSV and plots runs leave
//! ([`report`]) and live metrics for Prometheus and DPDK telemetry ([`metrics`]).
//!
//! The transport itself lives in the workspace's crates, which import only downward:
//! - `roce-proto`: the sans-IO protocol core (wire, QPs, congestion control, endpoint);
//! - `roce-fabric`: the switch element and the virtual-time fabric, over `roce-proto`;
//! - `roce-dpdk`: DPDK ports and the poll-mode runtime, over `roce-proto` (feature `dpdk`).

#![deny(unsafe_code)]

pub mod metrics;
pub mod oob;
pub mod payload;
pub mod pcap;
pub mod report;
pub mod stats;
