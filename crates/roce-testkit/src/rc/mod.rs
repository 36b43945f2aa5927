//! Shared set-up for the RC integration tests: two endpoints on an in-memory link.

use std::net::Ipv4Addr;

use roce_proto::connect::{connect_rc, RcOptions, RcSide};
use roce_proto::endpoint::{Endpoint, EndpointConfig};
use roce_proto::fault::{FaultConfig, FaultPort};
use roce_proto::loopback::{loopback_pair, EndpointPair, LoopbackPort};
use roce_proto::mr::MrInfo;
use roce_proto::time::{Duration, Instant};
use roce_proto::verbs::{AccessFlags, WorkCompletion};
use roce_proto::wire::EthernetAddress;

/// Endpoint A's MAC (guest a of the golden vectors).
pub const MAC_A: EthernetAddress = EthernetAddress([0x52, 0x54, 0, 0x12, 0, 0x11]);
/// Endpoint B's MAC (guest b of the golden vectors).
pub const MAC_B: EthernetAddress = EthernetAddress([0x52, 0x54, 0, 0x12, 0, 0x12]);
/// Endpoint A's address.
pub const IP_A: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 11);
/// Endpoint B's address.
pub const IP_B: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 12);

/// An endpoint at `mac`/`ip` with memory-region keys from a fixed seed (runs repeat).
pub fn endpoint(mac: EthernetAddress, ip: Ipv4Addr) -> Endpoint {
    Endpoint::new(EndpointConfig {
        key_seed: Some(u64::from(u32::from(ip))),
        ..EndpointConfig::ipv4(mac, ip)
    })
}

/// Endpoints A and B.
pub fn endpoints() -> (Endpoint, Endpoint) {
    (endpoint(MAC_A, IP_A), endpoint(MAC_B, IP_B))
}

/// A and B on an in-memory link, each port with faults.
pub type Pair = EndpointPair<FaultPort<LoopbackPort>>;

/// A and B on an in-memory link (9000-byte frames) with `faults` both ways, drawn from `seed`.
pub fn pair(faults: FaultConfig, seed: u64) -> Pair {
    let (a, b) = endpoints();
    let (pa, pb) = loopback_pair(9000, 1 << 16);
    EndpointPair::new(
        a,
        b,
        FaultPort::new(pa, faults, seed),
        FaultPort::new(pb, faults, seed ^ 0x5eed),
    )
}

/// One RC QP each, connected with `o`.
pub fn connect<P: roce_proto::port::Port>(
    p: &mut EndpointPair<P>,
    o: &RcOptions,
) -> (RcSide, RcSide) {
    connect_rc(&mut p.a, &mut p.b, o).expect("connect")
}

/// Every right a region can grant.
pub const ALL_ACCESS: AccessFlags = AccessFlags::LOCAL_WRITE
    .union(AccessFlags::REMOTE_WRITE)
    .union(AccessFlags::REMOTE_READ)
    .union(AccessFlags::REMOTE_ATOMIC);

/// A region of `len` bytes on `side`'s protection domain with every right, filled with a
/// pattern from `fill`.
pub fn mr(ep: &mut Endpoint, side: &RcSide, len: usize, fill: u8) -> MrInfo {
    let mr = ep.reg_mr(side.pd, len, ALL_ACCESS);
    if let Some(m) = ep.mr_mut(mr.lkey) {
        for (i, b) in m.bytes_mut().iter_mut().enumerate() {
            *b = fill.wrapping_add((i % 251) as u8);
        }
    }
    mr
}

/// Moves `side`'s completions into `out`.
pub fn drain(ep: &mut Endpoint, side: &RcSide, out: &mut Vec<WorkCompletion>) {
    while let Some(wc) = ep.poll_cq_one(side.cq) {
        out.push(wc);
    }
}

/// `secs` seconds after the pair's present.
pub fn deadline<P: roce_proto::port::Port>(p: &EndpointPair<P>, secs: u64) -> Instant {
    p.now + Duration::from_secs(secs)
}

pub mod random;
pub mod script;

pub use crate::work_requests::{send_wr, write_wr};
