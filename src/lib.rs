//! # roce: a userspace RoCEv2 transport with a sans-IO core
//!
//! `roce` speaks real RoCEv2 (Ethernet / IPv4 or IPv6 / UDP 4791 / InfiniBand BTH, extension
//! headers and ICRC) from userspace, on DPDK ports or in a deterministic virtual-time fabric.
//!
//! The protocol core (`wire`, `psn`, and the transport and congestion-control modules) is
//! deterministic and does no I/O: it reads no clock, spawns no thread and contains no `unsafe`.
//! Time comes in as an argument ([`time::Instant`]); packets come in as byte slices and go out into
//! buffers the caller owns. Drivers ([`driver`]) feed it: DPDK ports, the simulator, in-memory pairs.
//!
//! Layers, bottom up:
//! - [`wire`]: zero-copy views and `Repr`s for every header, the opcode table, the ICRC.
//! - [`psn`]: 24-bit sequence numbers compared as serial numbers.
//! - [`driver`]: the `Port` trait and its implementations (DPDK in `driver::dpdk`, feature `dpdk`).
//! - [`clock`] and [`runtime`]: the run-to-completion loop that drives an [`runtime::Engine`] over a
//!   `Port`, reading time from a `Clock`.
//! - [`verbs`], [`mr`]: work requests, completions, QP attributes; memory regions and their checks.
//! - [`qp`]: the RC queue pair (requester, responder, completer, state machine, timers).
//! - [`endpoint`]: the sans-IO endpoint owning QPs, MRs and CQs; [`stats`]: its counters.
//! - [`sim`]: the deterministic virtual-time fabric (links, switches with ECN and PFC, workloads).
//! - [`cc`]: congestion control of a sending QP (DCQCN, DCTCP, TIMELY, HPCC) and its pacer;
//!   [`ecn`]: the notification point (CE → CNP) and ECN marking of what we send.
//! - [`arp`]: a sans-IO ARP responder and resolver with a neighbour cache.
//! - [`ndp`]: IPv6 neighbour solicitation/advertisement and a responder.
//! - [`host`]: an endpoint with ARP and NDP in front of it, as one engine for a real port.
//! - [`demo`]: the pieces of `roce demo`: a real-time software switch (bottleneck, RED/ECN),
//!   observable congestion control, verifiable payloads, reports.
//! - [`oob`]: the out-of-band QPN/PSN/GID exchanges of ibv_rc_pingpong, perftest and the pyverbs peer.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod arp;
pub mod cc;
pub mod clock;
pub mod demo;
pub mod driver;
pub mod ecn;
pub mod endpoint;
pub mod host;
pub mod mr;
pub mod ndp;
pub mod oob;
pub mod pcap;
pub mod psn;
pub mod qp;
pub mod runtime;
pub mod sim;
pub mod stats;
pub mod time;
pub mod verbs;
pub mod wire;

/// Compile-time limits chosen by `build.rs` (override with environment variables at build time).
pub mod limits {
    include!(concat!(env!("OUT_DIR"), "/limits.rs"));
}
