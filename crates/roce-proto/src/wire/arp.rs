//! ARP for IPv4 over Ethernet (RFC 826): the packet view [`ArpPacket`], [`ArpRepr`], and whole
//! frames ([`parse_frame`], [`emit_frame`]). Only the format: the neighbour cache that answers and
//! resolves is [`crate::arp::Resolver`]. Not here: ARP for other hardware or protocol types.

use std::net::Ipv4Addr;

use super::ethernet;
use super::ethernet::{EtherType, EthernetAddress, VlanTag};
use super::{bytes_at, read_u16, write_u16};

mod field {
    use core::ops::Range;
    pub const HTYPE: usize = 0;
    pub const PTYPE: usize = 2;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: usize = 6;
    pub const SHA: Range<usize> = 8..14;
    pub const SPA: Range<usize> = 14..18;
    pub const THA: Range<usize> = 18..24;
    pub const TPA: Range<usize> = 24..28;
}

/// Length of an Ethernet/IPv4 ARP packet.
pub const PACKET_LEN: usize = 28;
/// Hardware type of Ethernet.
pub const HTYPE_ETHERNET: u16 = 1;
/// Protocol type of IPv4 (its EtherType).
pub const PTYPE_IPV4: u16 = ethernet::ETHERTYPE_IPV4;

/// Why an ARP frame was not taken, or could not be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArpError {
    /// The frame is not ARP (another EtherType).
    #[error("not an ARP frame")]
    NotArp,
    /// The frame ends before the ARP packet does.
    #[error("truncated ARP packet")]
    Truncated,
    /// ARP for another hardware or protocol type, or odd address lengths.
    #[error("unsupported ARP: htype {htype}, ptype {ptype:#06x}, hlen {hlen}, plen {plen}")]
    Unsupported {
        /// Hardware type.
        htype: u16,
        /// Protocol type.
        ptype: u16,
        /// Hardware address length.
        hlen: u8,
        /// Protocol address length.
        plen: u8,
    },
    /// The output buffer is shorter than the frame.
    #[error("buffer too small for an ARP frame")]
    BufferTooSmall,
}

/// The ARP operation; unknown values are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// 1: who has `target_ip`?
    Request,
    /// 2: `sender_ip` is at `sender_mac`.
    Reply,
    /// Anything else (RARP and friends).
    Unknown(u16),
}

impl From<u16> for Operation {
    fn from(value: u16) -> Self {
        match value {
            1 => Operation::Request,
            2 => Operation::Reply,
            other => Operation::Unknown(other),
        }
    }
}

impl From<Operation> for u16 {
    fn from(value: Operation) -> Self {
        match value {
            Operation::Request => 1,
            Operation::Reply => 2,
            Operation::Unknown(other) => other,
        }
    }
}

header_view!(ArpPacket, ArpError, "an ARP packet (the Ethernet payload)");

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// `Err(Truncated)` unless the buffer holds an Ethernet/IPv4-sized ARP packet.
    pub fn check_len(&self) -> Result<(), ArpError> {
        self.len_at_least(PACKET_LEN).map(drop)
    }

    getters! { d =>
        htype -> u16 = read_u16(d, field::HTYPE), "Hardware type (1 = Ethernet).";
        ptype -> u16 = read_u16(d, field::PTYPE), "Protocol type (0x0800 = IPv4).";
        hlen -> u8 = d[field::HLEN], "Hardware address length.";
        plen -> u8 = d[field::PLEN], "Protocol address length.";
        operation -> Operation = Operation::from(read_u16(d, field::OPER)), "The operation.";
        sender_mac -> EthernetAddress = EthernetAddress(bytes_at(d, field::SHA)), "Sender hardware address.";
        sender_ip -> Ipv4Addr = Ipv4Addr::from(bytes_at::<4>(d, field::SPA)), "Sender protocol address.";
        target_mac -> EthernetAddress = EthernetAddress(bytes_at(d, field::THA)), "Target hardware address.";
        target_ip -> Ipv4Addr = Ipv4Addr::from(bytes_at::<4>(d, field::TPA)), "Target protocol address.";
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Writes the fixed Ethernet/IPv4 header fields (htype, ptype, hlen, plen).
    pub fn set_ethernet_ipv4(&mut self) {
        let data = self.buffer.as_mut();
        write_u16(data, field::HTYPE, HTYPE_ETHERNET);
        write_u16(data, field::PTYPE, PTYPE_IPV4);
        data[field::HLEN] = 6;
        data[field::PLEN] = 4;
    }
    setters! { d =>
        set_operation(op: Operation) = write_u16(d, field::OPER, op.into()), "Sets the operation.";
        set_sender_mac(mac: EthernetAddress) = d[field::SHA].copy_from_slice(&mac.0), "Sets the sender hardware address.";
        set_sender_ip(ip: Ipv4Addr) = d[field::SPA].copy_from_slice(&ip.octets()), "Sets the sender protocol address.";
        set_target_mac(mac: EthernetAddress) = d[field::THA].copy_from_slice(&mac.0), "Sets the target hardware address.";
        set_target_ip(ip: Ipv4Addr) = d[field::TPA].copy_from_slice(&ip.octets()), "Sets the target protocol address.";
    }
}

/// A parsed Ethernet/IPv4 ARP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArpRepr {
    /// Request or reply.
    pub operation: Operation,
    /// Sender hardware address.
    pub sender_mac: EthernetAddress,
    /// Sender protocol address.
    pub sender_ip: Ipv4Addr,
    /// Target hardware address (all zeros in a request).
    pub target_mac: EthernetAddress,
    /// Target protocol address.
    pub target_ip: Ipv4Addr,
}

impl ArpRepr {
    /// Parses a checked packet; only Ethernet/IPv4 ARP is accepted.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &ArpPacket<&T>) -> Result<ArpRepr, ArpError> {
        if packet.buffer.as_ref().len() < PACKET_LEN {
            return Err(ArpError::Truncated);
        }
        let (htype, ptype, hlen, plen) =
            (packet.htype(), packet.ptype(), packet.hlen(), packet.plen());
        if htype != HTYPE_ETHERNET || ptype != PTYPE_IPV4 || hlen != 6 || plen != 4 {
            return Err(ArpError::Unsupported {
                htype,
                ptype,
                hlen,
                plen,
            });
        }
        Ok(ArpRepr {
            operation: packet.operation(),
            sender_mac: packet.sender_mac(),
            sender_ip: packet.sender_ip(),
            target_mac: packet.target_mac(),
            target_ip: packet.target_ip(),
        })
    }

    /// Always [`PACKET_LEN`].
    pub const fn buffer_len(&self) -> usize {
        PACKET_LEN
    }

    /// Writes exactly `buffer_len()` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut ArpPacket<&mut T>) {
        packet.set_ethernet_ipv4();
        packet.set_operation(self.operation);
        packet.set_sender_mac(self.sender_mac);
        packet.set_sender_ip(self.sender_ip);
        packet.set_target_mac(self.target_mac);
        packet.set_target_ip(self.target_ip);
    }

    /// A request from `mac`/`ip` asking who has `target`.
    pub const fn request(mac: EthernetAddress, ip: Ipv4Addr, target: Ipv4Addr) -> ArpRepr {
        ArpRepr {
            operation: Operation::Request,
            sender_mac: mac,
            sender_ip: ip,
            target_mac: EthernetAddress([0; 6]),
            target_ip: target,
        }
    }
}

/// Parses a whole Ethernet frame carrying ARP (an 802.1Q tag is allowed).
pub fn parse_frame(frame: &[u8]) -> Result<(ethernet::Repr, ArpRepr), ArpError> {
    let eth = ethernet::Frame::new_checked(frame).map_err(|_| ArpError::Truncated)?;
    let eth_repr = ethernet::Repr::parse(&eth).map_err(|_| ArpError::Truncated)?;
    if eth_repr.ethertype != EtherType::Arp {
        return Err(ArpError::NotArp);
    }
    let arp = ArpPacket::new_checked(eth.payload())?;
    Ok((eth_repr, ArpRepr::parse(&arp)?))
}

/// Writes `arp` in an Ethernet frame from `src` to `dst` (with an optional tag) into `buf`;
/// returns the frame length (42, or 46 tagged; the NIC pads to the 60-byte minimum).
pub fn emit_frame(
    arp: &ArpRepr,
    src: EthernetAddress,
    dst: EthernetAddress,
    vlan: Option<VlanTag>,
    buf: &mut [u8],
) -> Result<usize, ArpError> {
    let eth = ethernet::Repr {
        dst,
        src,
        vlan,
        ethertype: EtherType::Arp,
    };
    let len = eth.buffer_len() + arp.buffer_len();
    let out = buf.get_mut(..len).ok_or(ArpError::BufferTooSmall)?;
    let mut frame = ethernet::Frame::new_unchecked(&mut *out);
    eth.emit(&mut frame);
    arp.emit(&mut ArpPacket::new_unchecked(frame.payload_mut()));
    Ok(len)
}

#[cfg(test)]
pub(crate) mod tests;
