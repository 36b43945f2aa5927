// Skeleton: the DPDK issue fills this in (pkg-config + allowlisted bindgen + C shim).
fn main() {}
