//! # roce-proto: the sans-IO RoCEv2 protocol core
//!
//! Deterministic and without I/O: it reads no clock, spawns no thread and contains no `unsafe`.
//! Time comes in as an argument ([`time::Instant`]); frames come in as byte slices and go out into
//! buffers the caller owns. Drivers (the `roce-dpdk` ports, the `roce-fabric` simulator, the
//! in-memory [`loopback`] pair) feed an [`engine::Engine`], so a run in the simulator and a run on a
//! NIC execute the same transport code.
//!
//! Layers, bottom up:
//! - [`time`], [`psn`]: virtual instants and 24-bit serial sequence numbers; [`size`]: byte
//!   counts with suffixes (`16K`, `5KB`, `1MiB`), the one parser of every size option and field.
//! - [`wire`]: zero-copy views and `Repr`s for every header (RoCEv2, ARP, NDP, PFC, INT), the
//!   opcode table, the ICRC, frame templates.
//! - [`verbs`], [`mr`]: work requests, completions, QP attributes; memory regions and their checks.
//! - [`qp`]: the RC queue pair (requester, responder, completer, state machine, timers).
//! - [`cc`]: congestion control of a sending QP (DCQCN, DCTCP, TIMELY, HPCC) and its pacer;
//!   [`ecn`]: the notification point (CE → CNP) and ECN marking of what we send.
//! - [`endpoint`]: QPs, MRs and CQs behind one address; [`counters`]: what it counts.
//! - [`arp`], [`ndp`], [`resolving`]: neighbour resolution, and an endpoint with both in front of
//!   it.
//! - [`engine`], [`port`]: the two interfaces drivers meet; [`loopback`], [`fault`] and
//!   [`connect`]: in-memory ports, fault injection and RC connection helpers for tests and tools.

#![forbid(unsafe_code)]

pub mod arp;
pub mod cc;
pub mod connect;
pub mod counters;
pub mod ecn;
pub mod endpoint;
pub mod engine;
pub mod fault;
pub mod loopback;
pub mod mr;
pub mod ndp;
pub mod pause;
pub mod port;
pub mod psn;
pub mod qp;
pub mod resolving;
pub mod size;
pub mod time;
pub mod verbs;
pub mod wire;

/// Compile-time limits chosen by `build.rs` (override with environment variables at build time).
pub mod limits {
    include!(concat!(env!("OUT_DIR"), "/limits.rs"));
}
