//! The DPDK driver: EAL start-up, mempools, mbufs and ethdev ports behind the [`Port`] trait.
//!
//! This is the only module of `roce` (with `dpdk-bindings`) that contains `unsafe`; every block
//! says why it is sound. It does not know RoCE: it moves Ethernet frames.
//!
//! [`Port`]: crate::driver::Port

mod eal;
mod error;
mod mbuf;
mod mempool;
mod port;
mod ring_pair;
mod spec;
mod tsc;

pub use eal::{pin_current_thread, Eal, EalConfig, DEBIAN_PMD_DIR};
pub use error::DpdkError;
pub use mbuf::Mbuf;
pub use mempool::{Mempool, MempoolConfig};
pub use port::{DpdkPort, LinkStatus, Offloads, PortConfig, PortInfo, PortStats};
pub use ring_pair::ring_pair;
pub use spec::PortSpec;
pub use tsc::TscClock;
