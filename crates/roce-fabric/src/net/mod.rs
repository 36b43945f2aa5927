//! The discrete-event network: the event queue, the links and the packet pool, the
//! [`fabric`] of hosts and switches with its event loop and parallel engine, ECMP, spraying
//! from the hosts ([`spray`]) and rerouting after failures, PFC [`deadlock`] detection, what it
//! shows while it runs, and the topologies it is built in ([`topology`], [`fat_tree`],
//! [`custom_topology`]).

pub mod custom_topology;
pub mod deadlock;
pub(crate) mod dispatch;
pub mod ecmp;
pub mod event;
pub mod fabric;
pub mod fat_tree;
mod observe;
mod pfc_watch;
mod pool;
pub mod reroute;
mod slots;
pub mod spray;
pub mod topology;
mod transit;
mod wait_for;
