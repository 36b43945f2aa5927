//! IPv6 fixed headers as RoCEv2 uses them: traffic class (DSCP + ECN), flow label, hop limit.
//! Extension headers are not walked: RoCEv2 puts UDP directly after the fixed header.

use std::net::Ipv6Addr;

use zerocopy::byteorder::network_endian::U16;

use super::{
    bytes_at, dscp, read_u16, read_u32, traffic_class, write_u16, write_u32, Ecn, WireError,
};

header_layout! {
    /// The fixed IPv6 header: the one layout the view ([`field`]), the frame templates, the ICRC
    /// masks and the receive fast path all read their offsets from.
    pub(crate) struct Header {
        /// Version (4 bits), traffic class (8), flow label (20).
        ver_tc_flow: [u8; 4] => [VER_TC_FLOW],
        payload_len: U16 => LENGTH,
        next_header: u8 => NXT_HDR,
        hop_limit: u8 => HOP_LIMIT,
        src: [u8; 16] => [SRC],
        dst: [u8; 16] => [DST],
    }
}

/// Length of the fixed IPv6 header.
pub const HEADER_LEN: usize = core::mem::size_of::<Header>();

/// The byte of the first word that holds the ECN bits: the traffic class spans bits 27..20 of
/// the word, so its low nibble (ECN included) is the high nibble of byte 1.
pub(crate) const ECN_BYTE: usize = field::VER_TC_FLOW.start + 1;

/// Byte [`ECN_BYTE`] of a header with its ECN bits (5..4) replaced by `ecn`.
pub(crate) const fn with_ecn(byte: u8, ecn: Ecn) -> u8 {
    (byte & !(Ecn::MASK << 4)) | (ecn.bits() << 4)
}

/// The traffic class in the header's first word (version, traffic class, flow label).
pub(crate) const fn traffic_class_of(first_word: u32) -> u8 {
    (first_word >> 20) as u8
}

/// The flow label in the header's first word.
pub(crate) const fn flow_label_of(first_word: u32) -> u32 {
    first_word & 0x000f_ffff
}

header_view!(Packet, WireError, "an IPv6 packet");

impl<T: AsRef<[u8]>> Packet<T> {
    /// `Err(Truncated)` when the header or the announced payload do not fit.
    pub fn check_len(&self) -> Result<(), WireError> {
        let len = self.len_at_least(HEADER_LEN)?;
        if len < HEADER_LEN + usize::from(self.payload_len()) {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    fn first_word(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::VER_TC_FLOW.start)
    }

    /// IP version (6 for a valid packet).
    pub fn version(&self) -> u8 {
        (self.first_word() >> 28) as u8
    }

    /// Traffic class (DSCP << 2 | ECN).
    pub fn traffic_class(&self) -> u8 {
        traffic_class_of(self.first_word())
    }

    /// DSCP (6 bits).
    pub fn dscp(&self) -> u8 {
        dscp(self.traffic_class())
    }

    /// ECN codepoint.
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.traffic_class())
    }

    /// Flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        flow_label_of(self.first_word())
    }

    getters! { d =>
        payload_len -> u16 = read_u16(d, field::LENGTH), "Payload length.";
        next_header -> u8 = d[field::NXT_HDR], "Next header (17 for UDP).";
        hop_limit -> u8 = d[field::HOP_LIMIT], "Hop limit.";
        src_addr -> Ipv6Addr = Ipv6Addr::from(bytes_at::<16>(d, field::SRC)), "Source address.";
        dst_addr -> Ipv6Addr = Ipv6Addr::from(bytes_at::<16>(d, field::DST)), "Destination address.";
    }

    /// The payload, up to the payload length (Ethernet padding excluded).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + usize::from(self.payload_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets version 6, traffic class from DSCP and ECN, and the flow label.
    pub fn set_version_tc_flow(&mut self, dscp: u8, ecn: Ecn, flow_label: u32) {
        let tc = u32::from(traffic_class(dscp, ecn));
        write_u32(
            self.buffer.as_mut(),
            field::VER_TC_FLOW.start,
            (6 << 28) | (tc << 20) | (flow_label & 0x000f_ffff),
        );
    }

    /// Sets only the ECN bits.
    pub fn set_ecn(&mut self, ecn: Ecn) {
        let b = &mut self.buffer.as_mut()[ECN_BYTE];
        *b = with_ecn(*b, ecn);
    }

    setters! { d =>
        set_payload_len(value: u16) = write_u16(d, field::LENGTH, value), "Sets the payload length.";
        set_next_header(value: u8) = d[field::NXT_HDR] = value, "Sets the next header.";
        set_hop_limit(value: u8) = d[field::HOP_LIMIT] = value, "Sets the hop limit.";
        set_src_addr(addr: Ipv6Addr) = d[field::SRC].copy_from_slice(&addr.octets()), "Sets the source address.";
        set_dst_addr(addr: Ipv6Addr) = d[field::DST].copy_from_slice(&addr.octets()), "Sets the destination address.";
    }
}

/// A parsed IPv6 fixed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source address.
    pub src: Ipv6Addr,
    /// Destination address.
    pub dst: Ipv6Addr,
    /// DSCP (6 bits).
    pub dscp: u8,
    /// ECN codepoint.
    pub ecn: Ecn,
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
    /// Next header (17 for UDP).
    pub next_header: u8,
    /// Payload length.
    pub payload_len: usize,
}

impl Repr {
    /// Parses a checked packet (version must be 6).
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        if packet.version() != 6 {
            return Err(WireError::BadVersion(packet.version()));
        }
        Ok(Repr {
            src: packet.src_addr(),
            dst: packet.dst_addr(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            flow_label: packet.flow_label(),
            hop_limit: packet.hop_limit(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.payload_len()),
        })
    }

    /// 40.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes exactly `buffer_len()` bytes (`payload_len` must fit in 16 bits).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_version_tc_flow(self.dscp, self.ecn, self.flow_label);
        packet.set_payload_len(self.payload_len as u16);
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src);
        packet.set_dst_addr(self.dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::assert_emits;

    static HEADER: [u8; 40] = [
        0x6b, 0xaa, 0xbc, 0xde, // version 6, TC 0xba (DSCP 46, ECT(0)), flow label 0xabcde
        0x00, 0x04, 0x11, 0x40, // payload 4, UDP, hop limit 64
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, // src
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x11, // dst
    ];

    fn repr() -> Repr {
        Repr {
            src: "2001:db8::12".parse().unwrap(),
            dst: "2001:db8::11".parse().unwrap(),
            dscp: 0xb8 >> 2,
            ecn: Ecn::Ect0,
            flow_label: 0xabcde,
            hop_limit: 64,
            next_header: 17,
            payload_len: 4,
        }
    }

    #[test]
    fn parses_header() {
        let mut buf = HEADER.to_vec();
        buf.extend_from_slice(&[1, 2, 3, 4]);
        let packet = Packet::new_checked(&buf[..]).unwrap();
        // TC = 0xb8 | ECT(0) = 0xba: byte 0 low nibble 0xb, byte 1 high nibble 0xa.
        assert_eq!(packet.traffic_class(), 0xba);
        assert_eq!(Repr::parse(&packet).unwrap(), repr());
        assert_eq!(packet.payload(), &[1, 2, 3, 4]);
    }

    #[test]
    fn emits_header() {
        assert_emits(&HEADER, |b| repr().emit(&mut Packet::new_unchecked(b)));
    }

    #[test]
    fn set_ecn_touches_only_ecn_bits() {
        let mut buf = HEADER;
        let mut packet = Packet::new_unchecked(&mut buf[..]);
        packet.set_ecn(Ecn::Ce);
        assert_eq!(packet.ecn(), Ecn::Ce);
        assert_eq!(packet.dscp(), 0xb8 >> 2);
        assert_eq!(packet.flow_label(), 0xabcde);
    }

    #[test]
    fn truncated_payload_is_an_error() {
        assert_eq!(Packet::new_checked(&HEADER[..]), Err(WireError::Truncated));
    }
}
