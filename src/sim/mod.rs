//! The deterministic virtual-time fabric: hosts running any [`Engine`](crate::driver::Engine)
//! behind simulated NICs, links, switches with ECN marking and PFC, topologies, workloads,
//! scenario files and reports.
//!
//! Time is virtual (nanoseconds, jump to the next event); every random choice comes from one
//! seeded RNG, so a scenario and a seed replay bit for bit. It is not a packet-level model of
//! any particular switch ASIC, and it does no I/O except where `report` writes files on request.

pub mod builtin;
mod dispatch;
pub mod event;
pub mod fabric;
pub mod frame;
pub mod host;
pub mod pfc;
mod port;
pub mod rc_host;
pub mod report;
pub mod scenario;
pub mod series;
pub mod stats;
pub mod summary;
pub mod switch;
pub mod tap;
pub mod testing;
pub mod topology;
mod wires;
pub mod workload;

pub use fabric::{Cable, Fabric, FabricError, IntSink, LinkConfig};
pub use port::wire_bytes;
pub use switch::{EcnConfig, PfcConfig, SwitchConfig};

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
