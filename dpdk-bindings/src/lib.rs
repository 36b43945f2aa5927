//! Raw DPDK bindings (skeleton; filled in by the DPDK data-path work).
