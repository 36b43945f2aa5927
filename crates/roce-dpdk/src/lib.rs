//! # roce-dpdk: the DPDK driver and the poll-mode runtime
//!
//! EAL start-up, mempools, mbufs and ethdev ports behind the [`Port`] trait, the TSC clock, and
//! the run-to-completion [`runtime`] loop that drives any [`Engine`] over any port.
//!
//! The [`lcore`] module scales it out: one shard (engine + queue pair) per lcore, frames steered
//! to the shard owning their destination QPN (flow rules where the device has them, see
//! [`steer`], else a software dispatcher), applications posting work through lock-free queues.
//!
//! This crate (with `dpdk-bindings`) is the only place of roce that contains `unsafe`; every block
//! says why it is sound. Apart from reading a frame's destination QPN to dispatch it, it does not
//! know RoCE: it moves Ethernet frames.
//!
//! [`Engine`]: roce_proto::engine::Engine
//!
//! [`Port`]: roce_proto::port::Port

pub mod clock;
mod eal;
mod error;
pub mod lcore;
mod mbuf;
pub mod memif;
mod mempool;
mod pmd;
mod port;
mod ring_pair;
pub mod runtime;
mod spec;
pub mod steer;
pub mod telemetry;
mod tsc;

pub use eal::{online_cpus, pin_current_thread, thread_cpus, Eal, EalConfig};
pub use error::DpdkError;
pub use mbuf::Mbuf;
pub use mempool::{Mempool, MempoolConfig};
pub use pmd::DEBIAN_PMD_DIR;
pub use port::{DpdkPort, EthStats, LinkStatus, Offloads, PortConfig, PortInfo};
pub use ring_pair::{ring_pair, ring_pair_queues};
pub use spec::{MemifRole, PortSpec};
pub use tsc::TscClock;
