//! The pieces of `roce demo` that are not DPDK plumbing: the real-time software switch that sits
//! between the hosts' ports ([`switch`]), message payloads that prove every byte arrived
//! ([`payload`]), and the tables,
//! sparklines, CSV and SVG a run leaves ([`report`], [`text`]).
//!
//! The command itself (EAL, ports, hosts, the polling loop) is `src/cli/demo.rs`.

pub mod payload;
pub mod report;
pub mod switch;
pub mod text;
