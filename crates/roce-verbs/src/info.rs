//! What `ibv_query_device`, `ibv_query_port` and `ibv_query_gid` report: the port's addresses,
//! the GID table (index 0 the link-local GID from the MAC, index 1 the IPv4-mapped GID, as rxe
//! lays them out, so programs' `-g 1` / `-x 1` pick the RoCEv2 IPv4 GID) and the limits.

use std::net::{Ipv4Addr, Ipv6Addr};

use roce_proto::verbs::Mtu;
use roce_proto::wire::EthernetAddress;

/// The device name programs see.
pub const DEVICE_NAME: &str = "roce0";
/// Most outstanding work requests per queue.
pub const MAX_QP_WR: u32 = 16384;
/// Most scatter/gather entries per work request.
pub const MAX_SGE: u32 = roce_proto::verbs::MAX_SGE as u32;
/// Most bytes of inline data per send work request.
pub const MAX_INLINE: u32 = 256;
/// Most completion queue entries.
pub const MAX_CQE: u32 = 1 << 20;
/// Most outstanding READ/atomic requests per QP.
pub const MAX_RD_ATOMIC: u8 = roce_proto::qp::state::MAX_RD_ATOMIC;
/// Entries of the GID table.
pub const GID_TABLE_LEN: usize = 2;

/// The port as the progress thread brought it up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Our MAC.
    pub mac: EthernetAddress,
    /// Our IPv4 address.
    pub ip: Ipv4Addr,
    /// The MTU `ibv_query_port` reports as active (path MTUs above it are lowered to it).
    pub active_mtu: Mtu,
    /// The Ethernet link is up.
    pub link_up: bool,
    /// Link speed in Mbit/s (0 when unknown).
    pub speed_mbps: u32,
}

impl DeviceInfo {
    /// The GID table: `[link-local from the MAC, ::ffff:ip]`.
    pub fn gids(&self) -> [Ipv6Addr; GID_TABLE_LEN] {
        [link_local(self.mac), self.ip.to_ipv6_mapped()]
    }

    /// The node GUID (EUI-64 of the MAC, as rxe builds it), in network byte order.
    pub fn node_guid(&self) -> [u8; 8] {
        let m = self.mac.0;
        [m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]]
    }
}

/// `fe80::` plus the modified EUI-64 of `mac`.
pub fn link_local(mac: EthernetAddress) -> Ipv6Addr {
    let m = mac.0;
    Ipv6Addr::new(
        0xfe80,
        0,
        0,
        0,
        u16::from_be_bytes([m[0] ^ 2, m[1]]),
        u16::from_be_bytes([m[2], 0xff]),
        u16::from_be_bytes([0xfe, m[3]]),
        u16::from_be_bytes([m[4], m[5]]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gid_table_is_link_local_then_ipv4_mapped_like_rxe() {
        let info = DeviceInfo {
            mac: EthernetAddress([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]),
            ip: Ipv4Addr::new(198, 18, 0, 1),
            active_mtu: Mtu::Mtu1024,
            link_up: true,
            speed_mbps: 10000,
        };
        let [g0, g1] = info.gids();
        assert_eq!(g0.to_string(), "fe80::5054:ff:fe12:3456");
        assert_eq!(g1.to_string(), "::ffff:198.18.0.1");
        assert_eq!(
            info.node_guid(),
            [0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56]
        );
    }
}
