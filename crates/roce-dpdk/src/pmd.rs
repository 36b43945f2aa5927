//! Where DPDK's poll-mode driver plugins live. Debian builds DPDK with its PMDs as shared plugins
//! that EAL loads with `-d DIR`; [`EalConfig`](crate::EalConfig) adds it, and the error for a
//! port-less EAL names it.

/// Where Debian 12 installs DPDK 22.11's PMD plugins.
pub const DEBIAN_PMD_DIR: &str = "/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0";
