//! IPv4 headers as RoCEv2 uses them: DSCP and ECN in the TOS byte, DF set, no options, no fragments.
//! `Repr::parse` verifies the header checksum and rejects options and fragments (`Unsupported`)
//! so that every parsed header can be re-emitted byte for byte.

use std::net::{AddrParseError, Ipv4Addr};
use std::str::FromStr;

use zerocopy::byteorder::network_endian::U16;

use super::{bytes_at, dscp, read_u16, traffic_class, write_u16, Ecn, WireError};

header_layout! {
    /// The option-less IPv4 header: the one layout the view ([`field`]), the frame templates, the
    /// ICRC masks and the receive fast path all read their offsets from.
    pub(crate) struct Header {
        ver_ihl: u8 => VER_IHL,
        tos: u8 => TOS,
        total_len: U16 => LENGTH,
        ident: U16 => IDENT,
        flags_frag: U16 => FLG_OFF,
        ttl: u8 => TTL,
        protocol: u8 => PROTOCOL,
        checksum: U16 => CHECKSUM,
        src: [u8; 4] => [SRC],
        dst: [u8; 4] => [DST],
    }
}

/// Length of an IPv4 header without options.
pub const HEADER_LEN: usize = core::mem::size_of::<Header>();
/// IP protocol number of UDP.
pub const PROTOCOL_UDP: u8 = 17;

/// Version 4, header length 5 words: the first byte of every header we emit.
pub(crate) const VER_IHL: u8 = 0x45;
pub(crate) const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const FRAG_OFFSET_MASK: u16 = 0x1fff;

/// The Internet checksum (RFC 1071) of `data`, as stored in a header.
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for pair in &mut chunks {
        sum += u32::from(u16::from_be_bytes([pair[0], pair[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    fold(sum)
}

/// Folds a 32-bit one's-complement sum to 16 bits and complements it.
pub(crate) const fn fold(mut sum: u32) -> u16 {
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    !(sum as u16)
}

/// The checksum of an option-less 20-byte header (fixed size, so the loop unrolls).
pub(crate) fn header_checksum(header: &[u8; HEADER_LEN]) -> u16 {
    let mut sum: u32 = 0;
    let mut i = 0;
    while i < HEADER_LEN {
        sum += u32::from(u16::from_be_bytes([header[i], header[i + 1]]));
        i += 2;
    }
    fold(sum)
}

header_view!(Packet, WireError, "an IPv4 packet");

impl<T: AsRef<[u8]>> Packet<T> {
    /// `Err(Truncated)` when the buffer is shorter than the header or the total length;
    /// `Err(BadLength)` when IHL or the total length are impossible.
    pub fn check_len(&self) -> Result<(), WireError> {
        let len = self.len_at_least(HEADER_LEN)?;
        let header_len = self.header_len();
        let total_len = usize::from(self.total_len());
        if header_len < HEADER_LEN || total_len < header_len {
            Err(WireError::BadLength)
        } else if len < header_len || len < total_len {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// IP version (4 for a valid packet).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL * 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// Differentiated services code point (6 bits).
    pub fn dscp(&self) -> u8 {
        dscp(self.buffer.as_ref()[field::TOS])
    }

    /// ECN codepoint.
    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.buffer.as_ref()[field::TOS])
    }

    /// Total length (header + payload).
    pub fn total_len(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::LENGTH)
    }

    getters! { d =>
        ident -> u16 = read_u16(d, field::IDENT), "Identification.";
        dont_frag -> bool = read_u16(d, field::FLG_OFF) & FLAG_DF != 0, "Don't-fragment flag.";
        more_frags -> bool = read_u16(d, field::FLG_OFF) & FLAG_MF != 0, "More-fragments flag.";
        frag_offset -> u16 = read_u16(d, field::FLG_OFF) & FRAG_OFFSET_MASK, "Fragment offset in 8-byte units.";
        reserved_flag -> bool = read_u16(d, field::FLG_OFF) & 0x8000 != 0, "The reserved (\"evil\") flag bit.";
        ttl -> u8 = d[field::TTL], "Time to live.";
        protocol -> u8 = d[field::PROTOCOL], "Protocol of the payload.";
        checksum -> u16 = read_u16(d, field::CHECKSUM), "Header checksum as stored.";
        src_addr -> Ipv4Addr = Ipv4Addr::from(bytes_at::<4>(d, field::SRC)), "Source address.";
        dst_addr -> Ipv4Addr = Ipv4Addr::from(bytes_at::<4>(d, field::DST)), "Destination address.";
    }

    /// The header checksum verifies.
    pub fn verify_checksum(&self) -> bool {
        let data = self.buffer.as_ref();
        match data.first_chunk::<HEADER_LEN>() {
            Some(fixed) if self.header_len() == HEADER_LEN => header_checksum(fixed) == 0,
            _ => checksum(&data[..self.header_len()]) == 0,
        }
    }

    /// The payload, up to the total length (Ethernet padding excluded).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets version 4 and the header length in bytes (a multiple of 4).
    pub fn set_version_and_header_len(&mut self, header_len: usize) {
        self.buffer.as_mut()[field::VER_IHL] = 0x40 | ((header_len / 4) as u8 & 0x0f);
    }

    /// Sets DSCP and ECN.
    pub fn set_dscp_ecn(&mut self, dscp: u8, ecn: Ecn) {
        self.buffer.as_mut()[field::TOS] = traffic_class(dscp, ecn);
    }

    /// Sets only the ECN bits (the checksum must be filled again afterwards).
    pub fn set_ecn(&mut self, ecn: Ecn) {
        let tos = &mut self.buffer.as_mut()[field::TOS];
        *tos = ecn.apply(*tos);
    }

    setters! { d =>
        set_total_len(value: u16) = write_u16(d, field::LENGTH, value), "Sets the total length.";
        set_ident(value: u16) = write_u16(d, field::IDENT, value), "Sets the identification.";
        set_dont_frag_unfragmented(dont_frag: bool) = write_u16(d, field::FLG_OFF, if dont_frag { FLAG_DF } else { 0 }), "Sets flags (DF only, no MF) and a zero fragment offset.";
        set_ttl(value: u8) = d[field::TTL] = value, "Sets the time to live.";
        set_protocol(value: u8) = d[field::PROTOCOL] = value, "Sets the protocol.";
        set_checksum(value: u16) = write_u16(d, field::CHECKSUM, value), "Sets the stored checksum.";
        set_src_addr(addr: Ipv4Addr) = d[field::SRC].copy_from_slice(&addr.octets()), "Sets the source address.";
        set_dst_addr(addr: Ipv4Addr) = d[field::DST].copy_from_slice(&addr.octets()), "Sets the destination address.";
    }

    /// Computes and stores the header checksum.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let data = self.buffer.as_ref();
        let sum = match data.first_chunk::<HEADER_LEN>() {
            Some(fixed) if self.header_len() == HEADER_LEN => header_checksum(fixed),
            _ => checksum(&data[..self.header_len()]),
        };
        self.set_checksum(sum);
    }
}

/// A parsed IPv4 header (no options, unfragmented).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Differentiated services code point (6 bits).
    pub dscp: u8,
    /// ECN codepoint.
    pub ecn: Ecn,
    /// Time to live.
    pub ttl: u8,
    /// Identification (rxe uses a per-socket counter; kept to re-emit identically).
    pub ident: u16,
    /// Don't-fragment flag (rxe sets it).
    pub dont_frag: bool,
    /// Payload protocol (17 for RoCEv2).
    pub protocol: u8,
    /// Payload length (total length minus the header).
    pub payload_len: usize,
}

impl Repr {
    /// Parses a checked packet: version 4, no options, not fragmented, checksum correct.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(WireError::BadVersion(packet.version()));
        }
        if packet.header_len() != HEADER_LEN
            || packet.more_frags()
            || packet.frag_offset() != 0
            || packet.reserved_flag()
        {
            return Err(WireError::Unsupported);
        }
        if !packet.verify_checksum() {
            return Err(WireError::BadChecksum);
        }
        Ok(Repr {
            src: packet.src_addr(),
            dst: packet.dst_addr(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            ttl: packet.ttl(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            protocol: packet.protocol(),
            payload_len: usize::from(packet.total_len()) - HEADER_LEN,
        })
    }

    emit_via_to_bytes!(
        "Writes exactly `buffer_len()` bytes, checksum included. `payload_len + 20` must fit in \
         16 bits (the caller checks; larger values are truncated)."
    );

    /// The 20 header bytes, checksum included (what `emit` writes).
    #[inline]
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let tos = traffic_class(self.dscp, self.ecn);
        let total = (HEADER_LEN + self.payload_len) as u16;
        let flags: u16 = if self.dont_frag { FLAG_DF } else { 0 };
        let (src, dst) = (u32::from(self.src), u32::from(self.dst));
        // The checksum from the field values (not by reading back the bytes just written).
        let sum = (u32::from(VER_IHL) << 8 | u32::from(tos))
            + u32::from(total)
            + u32::from(self.ident)
            + u32::from(flags)
            + ((u32::from(self.ttl) << 8) | u32::from(self.protocol))
            + (src >> 16)
            + (src & 0xffff)
            + (dst >> 16)
            + (dst & 0xffff);
        let mut b = [0u8; HEADER_LEN];
        b[field::VER_IHL] = VER_IHL;
        b[field::TOS] = tos;
        write_u16(&mut b, field::LENGTH, total);
        write_u16(&mut b, field::IDENT, self.ident);
        write_u16(&mut b, field::FLG_OFF, flags);
        b[field::TTL] = self.ttl;
        b[field::PROTOCOL] = self.protocol;
        write_u16(&mut b, field::CHECKSUM, fold(sum));
        b[field::SRC].copy_from_slice(&src.to_be_bytes());
        b[field::DST].copy_from_slice(&dst.to_be_bytes());
        b
    }
}

/// An IPv4 address with the length of its network's prefix: `198.18.0.1/15`, as a host's address
/// on a port is given (without `/LEN`, a /32).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv4Cidr {
    address: Ipv4Addr,
    prefix_len: u8,
}

/// Why a text is not `ADDR[/LEN]` (the messages are the ones the CLI and the verbs configuration
/// print after the text).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseCidrError {
    /// The part before `/` is not a dotted-quad IPv4 address.
    #[error("not an IPv4 address")]
    Address(#[source] AddrParseError),
    /// The part after `/` is not a number from 0 to 32.
    #[error("prefix length must be 0..=32")]
    PrefixLen,
    /// The unspecified, a multicast or the broadcast address where a host's own was asked for.
    #[error("not a unicast address")]
    NotUnicast,
}

impl Ipv4Cidr {
    /// `address/prefix_len`; `None` when the prefix is longer than 32 bits.
    pub const fn new(address: Ipv4Addr, prefix_len: u8) -> Option<Self> {
        if prefix_len > 32 {
            return None;
        }
        Some(Ipv4Cidr {
            address,
            prefix_len,
        })
    }

    /// Parses an address a host may own ([`FromStr`]'s `ADDR[/LEN]`): not the unspecified,
    /// a multicast or the broadcast address.
    pub fn parse_unicast(text: &str) -> Result<Self, ParseCidrError> {
        let cidr: Ipv4Cidr = text.parse()?;
        let ip = cidr.address;
        if ip.is_unspecified() || ip.is_multicast() || ip.is_broadcast() {
            return Err(ParseCidrError::NotUnicast);
        }
        Ok(cidr)
    }

    /// The address.
    pub const fn address(&self) -> Ipv4Addr {
        self.address
    }

    /// The prefix length, 0..=32.
    pub const fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    /// Whether `addr` shares this address's first `prefix_len` bits (is on its network).
    pub fn contains_addr(&self, addr: Ipv4Addr) -> bool {
        let mask = u32::MAX
            .checked_shl(32 - u32::from(self.prefix_len))
            .unwrap_or(0);
        u32::from(addr) & mask == u32::from(self.address) & mask
    }
}

impl FromStr for Ipv4Cidr {
    type Err = ParseCidrError;

    /// `a.b.c.d` or `a.b.c.d/LEN` with LEN 0..=32.
    fn from_str(text: &str) -> Result<Self, ParseCidrError> {
        let (addr, len) = text.split_once('/').unwrap_or((text, "32"));
        let address: Ipv4Addr = addr.parse().map_err(ParseCidrError::Address)?;
        len.parse::<u8>()
            .ok()
            .and_then(|l| Ipv4Cidr::new(address, l))
            .ok_or(ParseCidrError::PrefixLen)
    }
}

impl core::fmt::Display for Ipv4Cidr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_parse_with_and_without_a_prefix() {
        let ip = Ipv4Addr::new(198, 18, 0, 1);
        assert_eq!("198.18.0.1/15".parse(), Ok(Ipv4Cidr::new(ip, 15).unwrap()));
        assert_eq!("198.18.0.1".parse(), Ok(Ipv4Cidr::new(ip, 32).unwrap()));
        assert_eq!(
            "198.18.0.1/0".parse::<Ipv4Cidr>().map(|c| c.prefix_len()),
            Ok(0)
        );
        let c: Ipv4Cidr = "198.18.0.1/15".parse().unwrap();
        assert_eq!(
            (c.address(), c.to_string()),
            (ip, "198.18.0.1/15".to_owned())
        );
    }

    #[test]
    fn bad_cidrs_say_which_part_is_wrong() {
        for bad in ["1.2.3", "", "198.18.0.256/15", "x/8", "198.18.0.1 /8"] {
            assert!(
                matches!(bad.parse::<Ipv4Cidr>(), Err(ParseCidrError::Address(_))),
                "{bad:?}"
            );
        }
        for bad in [
            "198.18.0.1/40",
            "198.18.0.1/33",
            "198.18.0.1/",
            "198.18.0.1/x",
        ] {
            assert_eq!(
                bad.parse::<Ipv4Cidr>(),
                Err(ParseCidrError::PrefixLen),
                "{bad:?}"
            );
        }
        assert_eq!(Ipv4Cidr::new(Ipv4Addr::LOCALHOST, 33), None);
        assert_eq!(
            ParseCidrError::PrefixLen.to_string(),
            "prefix length must be 0..=32"
        );
    }

    #[test]
    fn a_hosts_own_address_is_unicast() {
        assert!(Ipv4Cidr::parse_unicast("198.18.0.1/15").is_ok());
        for bad in ["0.0.0.0/8", "224.0.0.1/4", "255.255.255.255"] {
            assert_eq!(
                Ipv4Cidr::parse_unicast(bad),
                Err(ParseCidrError::NotUnicast),
                "{bad}"
            );
        }
    }

    #[test]
    fn networks_compare_on_the_prefix() {
        let net = |s: &str| s.parse::<Ipv4Cidr>().unwrap();
        let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        assert!(net("198.18.0.1/15").contains_addr(ip("198.18.0.254")));
        assert!(net("198.18.0.1/15").contains_addr(ip("198.19.7.7")));
        assert!(!net("198.18.0.1/15").contains_addr(ip("198.20.0.1")));
        assert!(!net("198.18.0.1/32").contains_addr(ip("198.18.0.254")));
        assert!(net("198.18.0.1/0").contains_addr(ip("10.0.0.1")));
    }
    use crate::wire::assert_emits;

    // The IPv4 header of the first SEND Only in rc_pingpong_send_64.pcap, shape-wise: TOS 0x02.
    static HEADER: [u8; 20] = [
        0x45, 0x02, 0x00, 0x70, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 198, 18, 0, 12,
        198, 18, 0, 11,
    ];

    fn header_with_checksum() -> [u8; 20] {
        let mut h = HEADER;
        let sum = checksum(&h);
        h[10..12].copy_from_slice(&sum.to_be_bytes());
        h
    }

    fn repr() -> Repr {
        Repr {
            src: Ipv4Addr::new(198, 18, 0, 12),
            dst: Ipv4Addr::new(198, 18, 0, 11),
            dscp: 0,
            ecn: Ecn::Ect0,
            ttl: 64,
            ident: 0x1234,
            dont_frag: true,
            protocol: PROTOCOL_UDP,
            payload_len: 0x70 - 20,
        }
    }

    #[test]
    fn checksum_matches_rfc1071_example() {
        // RFC 1071 section 3 example bytes: sum 0xddf2, checksum 0x220d.
        assert_eq!(
            checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0x220d
        );
    }

    #[test]
    fn parses_header() {
        let mut buf = [0u8; 0x70];
        buf[..20].copy_from_slice(&header_with_checksum());
        let packet = Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(Repr::parse(&packet).unwrap(), repr());
    }

    #[test]
    fn emits_header() {
        let expected = header_with_checksum();
        assert_emits(&expected, |b| repr().emit(&mut Packet::new_unchecked(b)));
    }

    #[test]
    fn rejects_bad_checksum_options_and_fragments() {
        let mut buf = [0u8; 0x70];
        buf[..20].copy_from_slice(&header_with_checksum());
        buf[8] = 63; // TTL changed, checksum stale
        assert_eq!(
            Repr::parse(&Packet::new_checked(&buf[..]).unwrap()),
            Err(WireError::BadChecksum)
        );
        buf[..20].copy_from_slice(&header_with_checksum());
        buf[6] = 0x20; // MF
        assert_eq!(
            Repr::parse(&Packet::new_checked(&buf[..]).unwrap()),
            Err(WireError::Unsupported)
        );
        buf[..20].copy_from_slice(&header_with_checksum());
        buf[0] = 0x65;
        assert_eq!(
            Repr::parse(&Packet::new_checked(&buf[..]).unwrap()),
            Err(WireError::BadVersion(6))
        );
    }

    #[test]
    fn truncated_and_impossible_lengths_are_errors() {
        let h = header_with_checksum();
        assert_eq!(Packet::new_checked(&h[..19]), Err(WireError::Truncated));
        // total length 0x70 but only 20 bytes present
        assert_eq!(Packet::new_checked(&h[..]), Err(WireError::Truncated));
        let mut short = h;
        short[2..4].copy_from_slice(&10u16.to_be_bytes());
        assert_eq!(Packet::new_checked(&short[..]), Err(WireError::BadLength));
    }
}
