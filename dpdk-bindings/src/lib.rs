//! Raw DPDK 22.11 bindings: bindgen output for the allowlisted EAL, ethdev, mbuf, mempool, ring,
//! lcore and errno API, plus `roce_shim_*` wrappers around DPDK's `static inline` fast path.
//!
//! Everything here is `unsafe` and C-shaped; the safe layer is `roce::driver::dpdk`. See the
//! README for linking, PMD plugin loading and the tested DPDK version.

#![no_std]
// bindgen's output keeps DPDK's C names and carries no docs (build.rs turns bindgen's comment
// copying off); DPDK's headers document these items. What is written here has rustdoc.
#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    missing_docs
)]
#![allow(clippy::all)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));

// Offload bits are `RTE_BIT64(n)` macros, which bindgen cannot evaluate; values from
// rte_ethdev.h of DPDK 22.11.

/// `RTE_ETH_RX_OFFLOAD_VLAN_STRIP`
pub const RTE_ETH_RX_OFFLOAD_VLAN_STRIP: u64 = 1 << 0;
/// `RTE_ETH_RX_OFFLOAD_IPV4_CKSUM`
pub const RTE_ETH_RX_OFFLOAD_IPV4_CKSUM: u64 = 1 << 1;
/// `RTE_ETH_RX_OFFLOAD_UDP_CKSUM`
pub const RTE_ETH_RX_OFFLOAD_UDP_CKSUM: u64 = 1 << 2;
/// `RTE_ETH_RX_OFFLOAD_TCP_CKSUM`
pub const RTE_ETH_RX_OFFLOAD_TCP_CKSUM: u64 = 1 << 3;
/// `RTE_ETH_RX_OFFLOAD_SCATTER`
pub const RTE_ETH_RX_OFFLOAD_SCATTER: u64 = 1 << 13;
/// `RTE_ETH_RX_OFFLOAD_TIMESTAMP`
pub const RTE_ETH_RX_OFFLOAD_TIMESTAMP: u64 = 1 << 14;
/// `RTE_ETH_RX_OFFLOAD_RSS_HASH`
pub const RTE_ETH_RX_OFFLOAD_RSS_HASH: u64 = 1 << 19;
/// `RTE_ETH_TX_OFFLOAD_VLAN_INSERT`
pub const RTE_ETH_TX_OFFLOAD_VLAN_INSERT: u64 = 1 << 0;
/// `RTE_ETH_TX_OFFLOAD_IPV4_CKSUM`
pub const RTE_ETH_TX_OFFLOAD_IPV4_CKSUM: u64 = 1 << 1;
/// `RTE_ETH_TX_OFFLOAD_UDP_CKSUM`
pub const RTE_ETH_TX_OFFLOAD_UDP_CKSUM: u64 = 1 << 2;
/// `RTE_ETH_TX_OFFLOAD_TCP_CKSUM`
pub const RTE_ETH_TX_OFFLOAD_TCP_CKSUM: u64 = 1 << 3;
/// `RTE_ETH_TX_OFFLOAD_MULTI_SEGS`
pub const RTE_ETH_TX_OFFLOAD_MULTI_SEGS: u64 = 1 << 15;
/// `RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE`
pub const RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE: u64 = 1 << 16;
/// `RTE_ETH_DEV_NO_OWNER`: iterate over every port with `rte_eth_find_next_owned_by`.
pub const RTE_ETH_DEV_NO_OWNER: u64 = 0;

/// True when DPDK is linked from its static archives (feature `static`): the drivers are then
/// built in, and loading Debian's plugin `.so` files (`-d`) would load a second DPDK.
pub const LINKED_STATICALLY: bool = cfg!(feature = "static");
