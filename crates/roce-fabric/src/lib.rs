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
//! - [`fabric::Fabric`]: build (`add_host`, `add_switch`, `connect`), run (`run_until`), read
//!   counters; [`topology::Topology`] builds common shapes.
//! - A host's NIC serializes at its link rate and asks its engine for a frame only when free;
//!   PFC pauses stop it per priority. Switches are output-queued with eight priorities over a
//!   shared buffer ([`switch`], the sans-IO element the real-time [`rt_switch`] runs too);
//!   `roce_proto::wire::pfc` has the 802.1Qbb frame.
//! - [`scenario::Scenario`] (TOML) and [`builtin`] describe experiments over the engines of
//!   [`engines::ScenarioEngine`]: the RC endpoint ([`engines::RcEngine`], the default) or the
//!   stand-in [`engines::StandInEngine`] (`engine = "stand-in"`);
//!   [`summary::RunSummary`] and the [`series`] are what a run leaves.
//!
//! ```
//! use roce_fabric::engines::StandInEngine;
//! use roce_fabric::topology::Topology;
//! use roce_fabric::workload::FlowConfig;
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

pub mod bounds;
pub mod builtin;
pub mod capture;
pub mod collective;
pub mod compare;
pub mod custom_topology;
mod dispatch;
pub mod ecmp;
pub mod engines;
pub mod event;
pub mod fabric;
pub mod failures;
pub mod fat_tree;
pub mod fct;
pub mod flow_meter;
pub mod frame;
pub mod hpcc;
pub mod hpcc_run;
pub mod input;
mod observe;
pub mod outage;
mod pool;
mod port;
pub mod reroute;
pub mod rt_switch;
pub mod scenario;
mod scenario_size;
pub mod sched;
pub mod series;
mod slots;
pub mod stats;
pub mod summary;
pub mod switch;
pub mod switch_spec;
pub mod telemetry;
pub mod thresholds;
pub mod topology;
pub mod traffic;
mod transit;
pub mod workload;

pub use dispatch::PROGRESS_EVERY;
pub use fabric::{Cable, Fabric, FabricError, IntSink, LinkConfig, PfcEvent};
pub use port::wire_bytes;
pub use switch::{EcnThresholds, MarkPoint, PfcConfig, Switch, SwitchConfig, SwitchPort};

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
