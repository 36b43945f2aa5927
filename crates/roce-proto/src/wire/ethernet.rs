//! Ethernet II frames with an optional 802.1Q tag (priority code point, DEI, VLAN id).
//! No FCS: frames are seen as NICs and pcaps hand them over. Stacked tags (QinQ) are not parsed.

use core::fmt;
use core::str::FromStr;

use zerocopy::byteorder::network_endian::U16;
use zerocopy::{FromBytes, Immutable, KnownLayout, Unaligned};

use super::{read_u16, write_u16, WireError};

/// A 48-bit MAC address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct EthernetAddress(pub [u8; 6]);

impl EthernetAddress {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: EthernetAddress = EthernetAddress([0xff; 6]);

    /// The address from the first six bytes of `data`; `None` when it is shorter.
    pub fn from_bytes(data: &[u8]) -> Option<Self> {
        let bytes: [u8; 6] = data.get(..6)?.try_into().ok()?;
        Some(EthernetAddress(bytes))
    }

    /// The six bytes.
    pub const fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// The group bit (multicast or broadcast).
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 1 != 0
    }

    /// Parses an address a host may own (`aa:bb:cc:dd:ee:ff`, as [`FromStr`]): neither a group
    /// address nor all zeros.
    pub fn parse_unicast(text: &str) -> Result<Self, ParseMacError> {
        let mac: EthernetAddress = text.parse()?;
        if mac.is_multicast() || mac.0 == [0; 6] {
            return Err(ParseMacError::NotUnicast);
        }
        Ok(mac)
    }
}

/// Why a text is not a MAC address (the messages are the ones the CLI and the verbs
/// configuration print after the text).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseMacError {
    /// A group is not one or two hex digits.
    #[error("not a MAC address")]
    Digits,
    /// Not six groups.
    #[error("not a MAC address (six bytes)")]
    Length,
    /// A group address or all zeros where a host's own address was asked for.
    #[error("not a unicast MAC address")]
    NotUnicast,
}

impl FromStr for EthernetAddress {
    type Err = ParseMacError;

    /// Six groups of one or two hex digits, either case, separated by colons
    /// (`52:54:00:12:00:0a`, `2:0:0:0:0:1`). A bad group is reported before a wrong count.
    fn from_str(text: &str) -> Result<Self, ParseMacError> {
        let mut bytes = [0u8; 6];
        let mut groups = 0;
        for group in text.split(':') {
            let hex =
                (1..=2).contains(&group.len()) && group.bytes().all(|b| b.is_ascii_hexdigit());
            let byte = match u8::from_str_radix(group, 16) {
                Ok(b) if hex => b,
                _ => return Err(ParseMacError::Digits),
            };
            if let Some(slot) = bytes.get_mut(groups) {
                *slot = byte;
            }
            groups += 1;
        }
        if groups != bytes.len() {
            return Err(ParseMacError::Length);
        }
        Ok(EthernetAddress(bytes))
    }
}

impl fmt::Display for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
/// EtherType of ARP.
pub const ETHERTYPE_ARP: u16 = 0x0806;
/// EtherType (TPID) of an 802.1Q tag.
pub const ETHERTYPE_VLAN: u16 = 0x8100;
/// EtherType of MAC control frames (802.3x pause, 802.1Qbb PFC).
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;

/// The EtherType field; unknown values are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EtherType {
    /// 0x0800.
    Ipv4,
    /// 0x86dd.
    Ipv6,
    /// 0x0806.
    Arp,
    /// 0x8100, an 802.1Q tag follows.
    Vlan,
    /// Anything else.
    Unknown(u16),
}

impl From<u16> for EtherType {
    fn from(value: u16) -> Self {
        match value {
            ETHERTYPE_IPV4 => EtherType::Ipv4,
            ETHERTYPE_IPV6 => EtherType::Ipv6,
            ETHERTYPE_ARP => EtherType::Arp,
            ETHERTYPE_VLAN => EtherType::Vlan,
            other => EtherType::Unknown(other),
        }
    }
}

impl From<EtherType> for u16 {
    fn from(value: EtherType) -> Self {
        match value {
            EtherType::Ipv4 => ETHERTYPE_IPV4,
            EtherType::Ipv6 => ETHERTYPE_IPV6,
            EtherType::Arp => ETHERTYPE_ARP,
            EtherType::Vlan => ETHERTYPE_VLAN,
            EtherType::Unknown(other) => other,
        }
    }
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EtherType::Ipv4 => f.write_str("IPv4"),
            EtherType::Ipv6 => f.write_str("IPv6"),
            EtherType::Arp => f.write_str("ARP"),
            EtherType::Vlan => f.write_str("802.1Q"),
            EtherType::Unknown(v) => write!(f, "{v:#06x}"),
        }
    }
}

/// The 802.1Q tag control information.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct VlanTag {
    /// Priority code point (3 bits): the class PFC pauses.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier (12 bits).
    pub vid: u16,
}

impl VlanTag {
    /// Decodes the 16-bit tag control information.
    pub const fn from_tci(tci: u16) -> Self {
        VlanTag {
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & 0x0fff,
        }
    }

    /// Encodes the tag control information (fields are masked to their widths).
    pub const fn tci(&self) -> u16 {
        ((self.pcp as u16 & 0x7) << 13) | ((self.dei as u16) << 12) | (self.vid & 0x0fff)
    }
}

/// The untagged Ethernet header: the one layout the views ([`field`]), the frame templates and
/// the receive fast path all read their offsets from.
#[derive(FromBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct Header {
    pub(crate) dst: [u8; 6],
    pub(crate) src: [u8; 6],
    pub(crate) ethertype: U16,
}

/// The 802.1Q tag between the addresses and the payload's EtherType: the tag control information
/// takes the EtherType's place, and the payload's EtherType follows it.
#[derive(FromBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct Tag {
    pub(crate) tci: U16,
    pub(crate) ethertype: U16,
}

/// Byte offsets, computed from [`Header`] and [`Tag`].
pub(crate) mod field {
    use core::mem::{offset_of, size_of};
    use core::ops::Range;

    use super::{Header, Tag};

    pub const DST: Range<usize> = offset_of!(Header, dst)..offset_of!(Header, src);
    pub const SRC: Range<usize> = offset_of!(Header, src)..offset_of!(Header, ethertype);
    pub const ETHERTYPE: usize = offset_of!(Header, ethertype);
    pub const TCI: usize = size_of::<Header>() + offset_of!(Tag, tci);
    pub const INNER_ETHERTYPE: usize = size_of::<Header>() + offset_of!(Tag, ethertype);
}

/// Length of an untagged Ethernet header.
pub const HEADER_LEN: usize = core::mem::size_of::<Header>();
/// Length of the 802.1Q tag.
pub const VLAN_TAG_LEN: usize = core::mem::size_of::<Tag>();

header_view!(Frame, WireError, "an Ethernet frame");

impl<T: AsRef<[u8]>> Frame<T> {
    /// `Err(Truncated)` unless the header (and tag) fit.
    pub fn check_len(&self) -> Result<(), WireError> {
        let len = self.len_at_least(HEADER_LEN)?;
        if len < self.header_len() {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    /// Destination MAC.
    pub fn dst_addr(&self) -> EthernetAddress {
        let mut b = [0u8; 6];
        b.copy_from_slice(&self.buffer.as_ref()[field::DST]);
        EthernetAddress(b)
    }

    /// Source MAC.
    pub fn src_addr(&self) -> EthernetAddress {
        let mut b = [0u8; 6];
        b.copy_from_slice(&self.buffer.as_ref()[field::SRC]);
        EthernetAddress(b)
    }

    /// The EtherType right after the addresses (`Vlan` when tagged).
    pub fn outer_ethertype(&self) -> EtherType {
        EtherType::from(read_u16(self.buffer.as_ref(), field::ETHERTYPE))
    }

    /// The 802.1Q tag, if present.
    pub fn vlan_tag(&self) -> Option<VlanTag> {
        match self.outer_ethertype() {
            EtherType::Vlan => Some(VlanTag::from_tci(read_u16(
                self.buffer.as_ref(),
                field::TCI,
            ))),
            _ => None,
        }
    }

    /// The EtherType of the payload (after the tag, if tagged).
    pub fn ethertype(&self) -> EtherType {
        match self.outer_ethertype() {
            EtherType::Vlan => {
                EtherType::from(read_u16(self.buffer.as_ref(), field::INNER_ETHERTYPE))
            }
            other => other,
        }
    }

    /// 14, or 18 with a tag. Reads only the first 14 bytes.
    pub fn header_len(&self) -> usize {
        let data = self.buffer.as_ref();
        if data.len() >= HEADER_LEN && read_u16(data, field::ETHERTYPE) == ETHERTYPE_VLAN {
            HEADER_LEN + VLAN_TAG_LEN
        } else {
            HEADER_LEN
        }
    }

    /// Everything after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Sets the destination MAC.
    #[inline]
    pub fn set_dst_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&addr.0);
    }

    /// Sets the source MAC.
    #[inline]
    pub fn set_src_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&addr.0);
    }

    /// Writes the tag (or none) and the payload EtherType; returns the header length used.
    #[inline]
    pub fn set_vlan_and_ethertype(&mut self, vlan: Option<VlanTag>, ethertype: EtherType) -> usize {
        let data = self.buffer.as_mut();
        match vlan {
            Some(tag) => {
                write_u16(data, field::ETHERTYPE, ETHERTYPE_VLAN);
                write_u16(data, field::TCI, tag.tci());
                write_u16(data, field::INNER_ETHERTYPE, ethertype.into());
                HEADER_LEN + VLAN_TAG_LEN
            }
            None => {
                write_u16(data, field::ETHERTYPE, ethertype.into());
                HEADER_LEN
            }
        }
    }

    /// Everything after the header, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        &mut self.buffer.as_mut()[start..]
    }
}

/// A parsed Ethernet header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Destination MAC.
    pub dst: EthernetAddress,
    /// Source MAC.
    pub src: EthernetAddress,
    /// The 802.1Q tag, if any.
    pub vlan: Option<VlanTag>,
    /// The payload's EtherType (never `Vlan` for a parsed frame).
    pub ethertype: EtherType,
}

impl Repr {
    /// Parses a checked frame.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(frame: &Frame<&T>) -> Result<Repr, WireError> {
        frame.check_len()?;
        Ok(Repr {
            dst: frame.dst_addr(),
            src: frame.src_addr(),
            vlan: frame.vlan_tag(),
            ethertype: frame.ethertype(),
        })
    }

    /// 14, or 18 with a tag.
    pub const fn buffer_len(&self) -> usize {
        if self.vlan.is_some() {
            HEADER_LEN + VLAN_TAG_LEN
        } else {
            HEADER_LEN
        }
    }

    /// Writes exactly `buffer_len()` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, frame: &mut Frame<&mut T>) {
        frame.set_dst_addr(self.dst);
        frame.set_src_addr(self.src);
        frame.set_vlan_and_ethertype(self.vlan, self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_addresses_parse_in_either_case_with_short_groups() {
        let want = EthernetAddress([0x52, 0x54, 0x00, 0xab, 0xcd, 0x0e]);
        assert_eq!("52:54:00:ab:cd:0e".parse(), Ok(want));
        assert_eq!("52:54:00:AB:Cd:0E".parse(), Ok(want));
        assert_eq!("52:54:0:ab:cd:e".parse(), Ok(want));
        // Display and FromStr agree.
        assert_eq!(want.to_string().parse(), Ok(want));
        assert_eq!("ff:ff:ff:ff:ff:ff".parse(), Ok(EthernetAddress::BROADCAST));
    }

    #[test]
    fn mac_addresses_of_the_wrong_length_are_refused_as_such() {
        let length = Err(ParseMacError::Length);
        assert_eq!("52:54:00:12:00".parse::<EthernetAddress>(), length);
        assert_eq!("52:54:00:12:00:11:22".parse::<EthernetAddress>(), length);
        assert_eq!("52".parse::<EthernetAddress>(), length);
    }

    #[test]
    fn garbage_is_not_a_mac_address() {
        for bad in [
            "",
            "zz:54:00:12:00:11",
            "52:54:00:12:00:",
            "52-54-00-12-00-11",
            "52.54.00.12.00.11",
            "525:54:00:12:00:11",
            "+5:54:00:12:00:11",
            " 52:54:00:12:00:11",
            "52:54:00:12:00:11:zz",
            "52:54:00:12:00:1é",
        ] {
            assert_eq!(
                bad.parse::<EthernetAddress>(),
                Err(ParseMacError::Digits),
                "{bad:?}"
            );
        }
        assert_eq!(
            ParseMacError::Digits.to_string(),
            "not a MAC address",
            "the message the CLI prints after the text"
        );
        assert_eq!(
            ParseMacError::Length.to_string(),
            "not a MAC address (six bytes)"
        );
    }

    #[test]
    fn a_hosts_own_mac_is_neither_a_group_nor_zero() {
        assert_eq!(
            EthernetAddress::parse_unicast("02:00:00:00:00:01"),
            Ok(EthernetAddress([2, 0, 0, 0, 0, 1]))
        );
        for group in [
            "01:00:5e:00:00:01",
            "ff:ff:ff:ff:ff:ff",
            "00:00:00:00:00:00",
        ] {
            assert_eq!(
                EthernetAddress::parse_unicast(group),
                Err(ParseMacError::NotUnicast),
                "{group}"
            );
        }
        assert_eq!(
            EthernetAddress::parse_unicast("02:00"),
            Err(ParseMacError::Length)
        );
    }

    static TAGGED: [u8; 20] = [
        0x52, 0x54, 0x00, 0x12, 0x00, 0x11, // dst
        0x52, 0x54, 0x00, 0x12, 0x00, 0x12, // src
        0x81, 0x00, 0x60, 0x0a, // 802.1Q: PCP 3, DEI 0, VID 10
        0x08, 0x00, // IPv4
        0xde, 0xad,
    ];

    fn tagged_repr() -> Repr {
        Repr {
            dst: EthernetAddress([0x52, 0x54, 0x00, 0x12, 0x00, 0x11]),
            src: EthernetAddress([0x52, 0x54, 0x00, 0x12, 0x00, 0x12]),
            vlan: Some(VlanTag {
                pcp: 3,
                dei: false,
                vid: 10,
            }),
            ethertype: EtherType::Ipv4,
        }
    }

    #[test]
    fn parses_tagged_frame() {
        let frame = Frame::new_checked(&TAGGED[..]).unwrap();
        assert_eq!(frame.header_len(), 18);
        assert_eq!(frame.payload(), &[0xde, 0xad]);
        assert_eq!(Repr::parse(&frame).unwrap(), tagged_repr());
    }

    #[test]
    fn emits_tagged_frame() {
        let mut buf = [0xa5u8; 20];
        let repr = tagged_repr();
        assert_eq!(repr.buffer_len(), 18);
        repr.emit(&mut Frame::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[..18], &TAGGED[..18]);
        assert_eq!(&buf[18..], &[0xa5, 0xa5]);
    }

    #[test]
    fn untagged_roundtrip_and_truncation() {
        let mut buf = [0xa5u8; 14];
        let repr = Repr {
            vlan: None,
            ethertype: EtherType::Ipv6,
            ..tagged_repr()
        };
        repr.emit(&mut Frame::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[12..], &[0x86, 0xdd]);
        assert_eq!(
            Repr::parse(&Frame::new_checked(&buf[..]).unwrap()).unwrap(),
            repr
        );
        assert_eq!(Frame::new_checked(&TAGGED[..17]), Err(WireError::Truncated));
        assert_eq!(Frame::new_checked(&TAGGED[..13]), Err(WireError::Truncated));
    }

    #[test]
    fn mac_displays_colon_hex() {
        assert_eq!(tagged_repr().dst.to_string(), "52:54:00:12:00:11");
    }
}
