//! # roce-fabric: the deterministic virtual-time fabric and the switch element
//!
//! The fabric: hosts running any [`Engine`](roce_proto::engine::Engine)
//! behind simulated NICs (by default the real RC [`Endpoint`](roce_proto::endpoint::Endpoint) with
//! its QPs, DCQCN and notification point), links, switches with ECN marking and PFC,
//! topologies, workloads, scenario files and their summaries.
//!
//! Time is virtual (nanoseconds, jump to the next event); every random choice comes from one
//! seeded RNG, so a scenario and a seed replay bit for bit. It is not a packet-level model of
//! any particular switch ASIC, and it does no I/O (the `roce` CLI writes reports).
//!
//! - [`net::fabric::Fabric`]: build (`add_host`, `add_switch`, `connect`), run (`run_until`),
//!   read counters; [`net::topology::Topology`] builds common shapes.
//! - A host's NIC serializes at its link rate and asks its engine for a frame only when free;
//!   PFC pauses stop it per priority. Switches are output-queued with eight priorities over a
//!   shared buffer ([`switching::switch`], the sans-IO element the real-time
//!   [`switching::rt_switch`] runs too); `roce_proto::wire::pfc` has the 802.1Qbb frame.
//! - [`experiment::scenario::Scenario`] (TOML) and [`experiment::builtin`] describe experiments
//!   over the engines of [`engines::ScenarioEngine`]: the RC endpoint ([`engines::RcEngine`], the
//!   default) or the stand-in [`engines::StandInEngine`] (`engine = "stand-in"`);
//!   [`experiment::summary::RunSummary`] and the [`record::series`] are what a run leaves.
//!
//! The modules, each using only those above it in this list:
//! - [`limits`]: the ceilings on what a scenario and its input files may count; bounded reads.
//! - [`switching`]: the sans-IO switch element (queues, thresholds, scheduler, counters), the
//!   transmitter a switch port and a NIC share, and the real-time switch.
//! - [`record`]: what a run records while it goes (flow meter, port capture, telemetry, series).
//! - [`net`]: the discrete-event network (events, links, packet pool, fabric, parallel engine,
//!   ECMP, rerouting) and the topologies it is built in.
//! - [`hpcc`]: the file formats of the HPCC simulator.
//! - [`flows`]: workloads, Poisson traffic, collectives and flow-completion times.
//! - [`engines`]: what runs on a host (the RC endpoint or the stand-in engine).
//! - [`experiment`]: scenario files and their runner, failures, summaries, the built-in
//!   experiments, `compare` grids and HPCC runs.
//!
//! ```
//! use roce_fabric::engines::StandInEngine;
//! use roce_fabric::flows::workload::FlowConfig;
//! use roce_fabric::net::topology::Topology;
//! use roce_fabric::{HostId, LinkConfig};
//! use roce_proto::time::Instant;
//!
//! let topo = Topology::back_to_back(LinkConfig::new(100.0, 500));
//! let dst = topo.hosts[1].1;
//! let (mut fabric, _) = topo
//!     .build(7, |i, ip| {
//!         let h = StandInEngine::new(ip);
//!         if i == 0 { h.with_flow(FlowConfig::bulk(dst, 17)) } else { h }
//!     })
//!     .unwrap();
//! fabric.run_until(Instant::from_nanos(20_000));
//! let rx = fabric.engine(HostId(1)).unwrap().counters;
//! // 1024-byte payloads in 1082-byte frames (+24 B on the wire) at 100 Gbit/s, after 500 ns.
//! assert_eq!(rx.rx_packets, 220);
//! ```

pub mod engines;
pub mod experiment;
pub mod flows;
pub mod hpcc;
pub mod limits;
pub mod net;
pub mod record;
pub mod switching;

pub use net::dispatch::PROGRESS_EVERY;
pub use net::fabric::{Cable, Fabric, FabricError, IntSink, LinkConfig, PfcEvent};
pub use switching::port::wire_bytes;
pub use switching::switch::{
    EcnThresholds, MarkPoint, PfcConfig, Switch, SwitchConfig, SwitchPort,
};

/// Index of a frame in the fabric's packet pool.
pub(crate) type PktId = u32;

/// A host in a fabric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostId(pub usize);

/// A switch in a fabric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SwitchId(pub usize);

/// One direction of a cable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkId(pub usize);

/// A node: a host or a switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Node {
    /// A host (one NIC port, port 0).
    Host(HostId),
    /// A switch.
    Switch(SwitchId),
}
