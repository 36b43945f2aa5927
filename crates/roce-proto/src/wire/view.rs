//! The receive path's parse ([`parse_frame`]) and a light, checked view of a RoCEv2 frame: offsets
//! into the frame plus the BTH, ECN and ICRC, decoded without building the full [`RoceRepr`]. Not
//! a second parser: the common shapes (untagged IPv4 without options, untagged IPv6) take a flat
//! fixed-offset path, everything else (and every error) goes through the general parser of
//! [`super::roce`], so a view exists exactly when `parse_frame` succeeds, and errors are the same.
//!
//! The fixed headers of the fast path are `zerocopy` layouts: one bounds check, then named
//! big-endian fields at constant offsets. The ICRC is verified without copying the frame: only
//! the IP/UDP/BTH headers are copied (fixed size) to be masked; the rest is hashed in place.

use core::ops::Range;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use zerocopy::{FromBytes, FromZeros, Immutable, KnownLayout, Unaligned};

use super::icrc::{icrc_in_place, ICRC_LEN, LRH_LEN};
use super::opcode::{ExtHeaders, OpcodeInfo};
use super::roce::{parse_any, parse_ext, ExtRepr, IpRepr, RocePacket, RoceRepr};
use super::{
    bth, dscp, ethernet, ipv4, ipv6, read_u16, udp, Ecn, EtherType, EthernetAddress, VlanTag,
    WireError, ROCE_UDP_PORT,
};

/// One getter per extension header `$name` (flag `ExtHeaders::$flag`), decoded alone from its
/// bytes: its whole `Repr`, or the one value its view's `$get` reads.
macro_rules! ext_getters {
    ($($(#[doc = $doc:literal])+ $name:ident($flag:ident) -> $ty:ident $(= $get:ident)?;)+) => {$(
        $(#[doc = $doc])+
        #[inline]
        pub fn $name(&self) -> Option<ext_getters!(@ty $name $ty)> {
            use super::$name as h;
            let packet = h::Packet::new_checked(self.ext_header(ExtHeaders::$flag, h::HEADER_LEN)?);
            ext_getters!(@get packet.ok()? $(, $get)?)
        }
    )+};
    (@ty $name:ident Repr) => { super::$name::Repr };
    (@ty $name:ident $ty:ident) => { $ty };
    (@get $packet:expr) => { h::Repr::parse(&$packet).ok() };
    (@get $packet:expr, $get:ident) => { Some($packet.$get()) };
}

/// Untagged Ethernet, option-less IPv4, UDP, BTH.
#[derive(FromBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct V4Headers {
    eth: ethernet::Header,
    ip: ipv4::Header,
    udp: udp::Header,
    bth: [u8; bth::HEADER_LEN],
}

/// Untagged Ethernet, IPv6, UDP, BTH.
#[derive(FromBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct V6Headers {
    eth: ethernet::Header,
    ip: ipv6::Header,
    udp: udp::Header,
    bth: [u8; bth::HEADER_LEN],
}

/// IP + UDP + BTH bytes of each IP version.
const V4_HEADERS: usize = ipv4::HEADER_LEN + udp::HEADER_LEN + bth::HEADER_LEN;
const V6_HEADERS: usize = ipv6::HEADER_LEN + udp::HEADER_LEN + bth::HEADER_LEN;

/// A RoCEv2 frame that passed every check of [`parse_frame`] (ICRC included unless made with
/// [`parse_view_unverified`]): where its parts are, and its BTH. `Copy`, a few words; the other
/// headers are decoded on demand from the borrowed frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoceView<'a> {
    /// Ethernet header through ICRC (Ethernet padding cut off).
    frame: &'a [u8],
    ip_offset: usize,
    v6: bool,
    payload_offset: usize,
    payload_len: usize,
    /// The base transport header.
    pub bth: bth::Repr,
    /// The opcode's table entry.
    pub info: &'static OpcodeInfo,
    /// The IP header's ECN codepoint.
    pub ecn: Ecn,
    /// The ICRC carried by the frame.
    pub icrc: u32,
}

/// Parses and checks a whole frame, ICRC included.
///
/// Checks, in order: Ethernet header (`Truncated`), EtherType IPv4/IPv6 (`NotRoce`), IP version
/// (`BadVersion`), lengths (`Truncated`/`BadLength`), IPv4 options or fragments (`Unsupported`),
/// protocol UDP and port 4791 (`NotRoce`), IPv4 header checksum (`BadChecksum`), UDP length,
/// BTH TVer (`BadVersion`), opcode (`BadOpcode`), extension headers, pad and payload against the
/// opcode table (`BadLength`), and the ICRC (`BadIcrc`). Bytes after the IP packet (Ethernet
/// padding) are ignored. Never panics.
pub fn parse_frame(frame: &[u8]) -> Result<RocePacket<'_>, WireError> {
    parse(frame, true)
}

/// Like [`parse_frame`] but skips only the ICRC comparison (`icrc` is still the carried value).
pub fn parse_frame_unverified(frame: &[u8]) -> Result<RocePacket<'_>, WireError> {
    parse(frame, false)
}

#[inline]
fn parse(frame: &[u8], verify: bool) -> Result<RocePacket<'_>, WireError> {
    match fast_path(frame, verify) {
        Some(view) => Ok(view.to_packet()),
        None => parse_any(frame, verify).map(|(packet, _)| packet),
    }
}

/// Parses and checks a whole frame like [`parse_frame`] (same checks, same errors), returning a
/// light [`RoceView`] instead of the full [`RocePacket`].
#[inline]
pub fn parse_view(frame: &[u8]) -> Result<RoceView<'_>, WireError> {
    parse_view_with(frame, true)
}

/// The flat fast path of [`parse_view`] alone: `Some` exactly when the frame is an untagged IPv4
/// (no options) or IPv6 RoCEv2 frame passing every check, ICRC included; `None` for any other
/// shape and for every error, when the caller goes on to [`parse_view`] (VLAN tags, the error
/// to count). For a receive path that wants the view without a conversion copy.
#[inline]
pub fn parse_view_fast(frame: &[u8]) -> Option<RoceView<'_>> {
    fast_path(frame, true)
}

/// [`parse_view_fast`], with the ICRC compared only when `verify` (else as
/// [`parse_view_unverified`]'s fast path).
#[inline]
pub fn parse_view_fast_with(frame: &[u8], verify: bool) -> Option<RoceView<'_>> {
    fast_path(frame, verify)
}

/// Like [`parse_view`] but skips only the ICRC comparison.
#[inline]
pub fn parse_view_unverified(frame: &[u8]) -> Result<RoceView<'_>, WireError> {
    parse_view_with(frame, false)
}

/// [`parse_view`] when `verify`, else [`parse_view_unverified`]: for a receiver whose
/// configuration says whether the link already checked the ICRC.
#[inline]
pub fn parse_view_with(frame: &[u8], verify: bool) -> Result<RoceView<'_>, WireError> {
    match fast_path(frame, verify) {
        Some(view) => Ok(view),
        None => {
            let (packet, info) = parse_any(frame, verify)?;
            Ok(RoceView::from_packet(frame, &packet, info))
        }
    }
}

/// The flat path for untagged IPv4 (no options) and IPv6. `None` unless every check of the
/// general parser passes; the caller then runs the general parser, which reports the error (or
/// handles a VLAN tag). On `Some`, the view describes exactly what the general parser returns.
#[inline]
pub(super) fn fast_path(frame: &[u8], verify: bool) -> Option<RoceView<'_>> {
    let (eth, _) = ethernet::Header::ref_from_prefix(frame).ok()?;
    match eth.ethertype.get() {
        ethernet::ETHERTYPE_IPV4 => fast_v4(frame, verify),
        ethernet::ETHERTYPE_IPV6 => fast_v6(frame, verify),
        _ => None,
    }
}

#[inline]
fn fast_v4(frame: &[u8], verify: bool) -> Option<RoceView<'_>> {
    const IP: usize = ethernet::HEADER_LEN;
    let (h, _) = V4Headers::ref_from_prefix(frame).ok()?;
    let total = usize::from(h.ip.total_len.get());
    if h.ip.ver_ihl != ipv4::VER_IHL
        || h.ip.protocol != ipv4::PROTOCOL_UDP
        || h.ip.flags_frag.get() & !ipv4::FLAG_DF != 0
        || total < V4_HEADERS + ICRC_LEN
        || h.udp.dst_port.get() != ROCE_UDP_PORT
        || usize::from(h.udp.len.get()) != total - ipv4::HEADER_LEN
    {
        return None;
    }
    let ip_bytes = frame.get(IP..IP + total)?;
    let ip_header: &[u8; ipv4::HEADER_LEN] = ip_bytes.first_chunk()?;
    if ipv4::header_checksum(ip_header) != 0 {
        return None;
    }
    let ecn = Ecn::from_bits(h.ip.tos);
    checked_rest::<V4_HEADERS>(frame, IP, ip_bytes, &h.bth, verify, ecn)
}

#[inline]
fn fast_v6(frame: &[u8], verify: bool) -> Option<RoceView<'_>> {
    const IP: usize = ethernet::HEADER_LEN;
    let (h, _) = V6Headers::ref_from_prefix(frame).ok()?;
    let payload_len = usize::from(h.ip.payload_len.get());
    if h.ip.ver_tc_flow[0] >> 4 != 6
        || h.ip.next_header != ipv4::PROTOCOL_UDP
        || payload_len < udp::HEADER_LEN + bth::HEADER_LEN + ICRC_LEN
        || h.udp.dst_port.get() != ROCE_UDP_PORT
        || usize::from(h.udp.len.get()) != payload_len
    {
        return None;
    }
    let ip_bytes = frame.get(IP..IP + ipv6::HEADER_LEN + payload_len)?;
    let ecn = Ecn::from_bits(ipv6::traffic_class_of(u32::from_be_bytes(h.ip.ver_tc_flow)));
    checked_rest::<V6_HEADERS>(frame, IP, ip_bytes, &h.bth, verify, ecn)
}

/// The checks after UDP, shared by both IP versions: BTH version and opcode, extension headers,
/// pad and payload against the opcode table, and the ICRC. `ip_bytes` is the IP packet, its
/// first `N` bytes the IP, UDP and BTH headers (IPv6 when `N` is [`V6_HEADERS`]); `ecn` is the
/// IP header's. The view is built once, in place.
#[inline(always)]
fn checked_rest<'a, const N: usize>(
    frame: &'a [u8],
    ip_offset: usize,
    ip_bytes: &'a [u8],
    bth_bytes: &[u8; bth::HEADER_LEN],
    verify: bool,
    ecn: Ecn,
) -> Option<RoceView<'a>> {
    let bth = bth::Repr::from_bytes(bth_bytes);
    if bth.tver != 0 {
        return None;
    }
    let info = bth.opcode.info()?;
    let (covered, trailer) = ip_bytes.split_last_chunk::<ICRC_LEN>()?;
    let icrc = u32::from_le_bytes(*trailer);
    let (_, rest) = covered.split_first_chunk::<N>()?;
    let padded = rest.get(info.ext_len..)?;
    let pad = usize::from(bth.pad_count);
    if padded.len() % 4 != 0 || pad > padded.len() || (!info.has_payload && !padded.is_empty()) {
        return None;
    }
    // Hashed from 8 bytes before the IP header (they stand in for the LRH's ones).
    let hashed = frame.get(ip_offset - LRH_LEN..ip_offset + covered.len())?;
    if verify && icrc_in_place::<N>(hashed) != Some(icrc) {
        return None;
    }
    Some(RoceView {
        frame: frame.get(..ip_offset + ip_bytes.len())?,
        ip_offset,
        v6: N == V6_HEADERS,
        payload_offset: ip_offset + N + info.ext_len,
        payload_len: padded.len() - pad,
        bth,
        info,
        ecn,
        icrc,
    })
}

impl<'a> RoceView<'a> {
    /// The view of a packet the general parser returned for `frame`.
    fn from_packet(frame: &'a [u8], packet: &RocePacket<'a>, info: &'static OpcodeInfo) -> Self {
        let repr = &packet.repr;
        let ip_offset = repr.eth.buffer_len();
        let ip_len = repr.ip.buffer_len();
        RoceView {
            frame: frame
                .get(..ip_offset + ip_len + repr.ip.payload_len())
                .unwrap_or(frame),
            ip_offset,
            v6: matches!(repr.ip, IpRepr::V6(_)),
            payload_offset: ip_offset + ip_len + udp::HEADER_LEN + bth::HEADER_LEN + info.ext_len,
            payload_len: repr.payload_len,
            bth: repr.bth,
            info,
            ecn: repr.ip.ecn(),
            icrc: packet.icrc,
        }
    }

    /// The frame, Ethernet header through ICRC (any Ethernet padding cut off).
    pub fn frame(&self) -> &'a [u8] {
        self.frame
    }

    /// Offset of the IP header (14, or 18 with a VLAN tag).
    pub fn ip_offset(&self) -> usize {
        self.ip_offset
    }

    /// Whether the IP header is IPv6.
    pub fn is_ipv6(&self) -> bool {
        self.v6
    }

    fn ip_len(&self) -> usize {
        if self.v6 {
            ipv6::HEADER_LEN
        } else {
            ipv4::HEADER_LEN
        }
    }

    /// Offset of the payload in the frame.
    pub fn payload_offset(&self) -> usize {
        self.payload_offset
    }

    /// The payload, pad excluded.
    pub fn payload(&self) -> &'a [u8] {
        self.frame
            .get(self.payload_offset..self.payload_offset + self.payload_len)
            .unwrap_or_default()
    }

    /// Destination MAC.
    pub fn eth_dst(&self) -> EthernetAddress {
        EthernetAddress::from_bytes(self.frame).unwrap_or_default()
    }

    /// Source MAC.
    pub fn eth_src(&self) -> EthernetAddress {
        self.frame
            .get(ethernet::field::SRC)
            .and_then(EthernetAddress::from_bytes)
            .unwrap_or_default()
    }

    /// The IP address at `v4` in an IPv4 header or `v6` in an IPv6 one.
    fn ip_addr(&self, v4: Range<usize>, v6: Range<usize>) -> IpAddr {
        let at = |r: Range<usize>| self.ip_offset + r.start..self.ip_offset + r.end;
        if self.v6 {
            let octets: Option<[u8; 16]> = self.frame.get(at(v6)).and_then(|b| b.try_into().ok());
            IpAddr::V6(Ipv6Addr::from(octets.unwrap_or_default()))
        } else {
            let octets: Option<[u8; 4]> = self.frame.get(at(v4)).and_then(|b| b.try_into().ok());
            IpAddr::V4(Ipv4Addr::from(octets.unwrap_or_default()))
        }
    }

    /// Source IP address.
    pub fn ip_src(&self) -> IpAddr {
        self.ip_addr(ipv4::field::SRC, ipv6::field::SRC)
    }

    /// Destination IP address.
    pub fn ip_dst(&self) -> IpAddr {
        self.ip_addr(ipv4::field::DST, ipv6::field::DST)
    }

    /// UDP source port (the flow entropy).
    pub fn udp_src_port(&self) -> u16 {
        let at = self.ip_offset + self.ip_len() + udp::field::SRC_PORT;
        self.frame
            .get(at..at + 2)
            .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
    }

    /// The extension header bytes (as many as the opcode table says).
    fn ext_bytes(&self) -> &'a [u8] {
        self.frame
            .get(self.payload_offset - self.info.ext_len..self.payload_offset)
            .unwrap_or_default()
    }

    /// All extension headers, decoded.
    pub fn ext(&self) -> ExtRepr {
        parse_ext(self.info, self.ext_bytes()).unwrap_or_default()
    }

    /// The bytes of extension header `header` (one flag, `len` bytes), if the opcode carries it.
    #[inline]
    fn ext_header(&self, header: ExtHeaders, len: usize) -> Option<&'a [u8]> {
        let at = self.payload_offset - self.info.ext_len + self.info.ext_offset(header)?;
        self.frame.get(at..at + len)
    }

    ext_getters! {
        /// The RETH, if the opcode has one (decoded alone, without the other headers).
        reth(RETH) -> Repr;
        /// The AtomicETH, if the opcode has one.
        atomic_eth(ATOMIC_ETH) -> Repr;
        /// The immediate data, if the opcode carries it.
        immdt(IMMDT) -> u32 = imm_data;
        /// The R_Key to invalidate (IETH), if the opcode carries one.
        ieth(IETH) -> u32 = rkey;
        /// The AETH, if the opcode has one (ACKs and READ responses).
        aeth(AETH) -> Repr;
        /// The AtomicAckETH, if the opcode has one.
        atomic_ack_eth(ATOMIC_ACK_ETH) -> Repr;
    }

    /// The whole packet, as [`parse_frame`] returns it.
    #[inline]
    pub fn to_packet(&self) -> RocePacket<'a> {
        let frame = self.frame;
        let vlan = (self.ip_offset > ethernet::HEADER_LEN)
            .then(|| VlanTag::from_tci(read_u16(frame, ethernet::field::TCI)));
        let ip_bytes = frame.get(self.ip_offset..).unwrap_or_default();
        let (ethertype, ip) = if self.v6 {
            (EtherType::Ipv6, IpRepr::V6(ipv6_repr(ip_bytes)))
        } else {
            (EtherType::Ipv4, IpRepr::V4(ipv4_repr(ip_bytes)))
        };
        RocePacket {
            repr: RoceRepr {
                eth: ethernet::Repr {
                    dst: self.eth_dst(),
                    src: self.eth_src(),
                    vlan,
                    ethertype,
                },
                ip,
                udp_src_port: self.udp_src_port(),
                bth: self.bth,
                ext: self.ext(),
                payload_len: self.payload_len,
            },
            payload: self.payload(),
            icrc: self.icrc,
        }
    }
}

/// The repr of a checked option-less IPv4 header at the start of `bytes`. Out of line: inlined
/// into `parse_frame`'s conversion it costs that path about 1% more instructions (callgrind).
#[inline(never)]
fn ipv4_repr(bytes: &[u8]) -> ipv4::Repr {
    // An all-zero header (unreachable for a view: its IP header was checked whole) gives the
    // unspecified addresses and zero fields.
    let h = ipv4::Header::read_from_prefix(bytes)
        .map_or_else(|_| ipv4::Header::new_zeroed(), |(h, _)| h);
    ipv4::Repr {
        src: Ipv4Addr::from(h.src),
        dst: Ipv4Addr::from(h.dst),
        dscp: dscp(h.tos),
        ecn: Ecn::from_bits(h.tos),
        ttl: h.ttl,
        ident: h.ident.get(),
        dont_frag: h.flags_frag.get() & ipv4::FLAG_DF != 0,
        protocol: h.protocol,
        payload_len: usize::from(h.total_len.get()).saturating_sub(ipv4::HEADER_LEN),
    }
}

/// The repr of a checked IPv6 header at the start of `bytes`.
fn ipv6_repr(bytes: &[u8]) -> ipv6::Repr {
    // An all-zero header (unreachable for a view: its IP header was checked whole) gives the
    // unspecified addresses and zero fields.
    let h = ipv6::Header::read_from_prefix(bytes)
        .map_or_else(|_| ipv6::Header::new_zeroed(), |(h, _)| h);
    let word = u32::from_be_bytes(h.ver_tc_flow);
    let traffic_class = ipv6::traffic_class_of(word);
    ipv6::Repr {
        src: Ipv6Addr::from(h.src),
        dst: Ipv6Addr::from(h.dst),
        dscp: dscp(traffic_class),
        ecn: Ecn::from_bits(traffic_class),
        flow_label: ipv6::flow_label_of(word),
        hop_limit: h.hop_limit,
        next_header: h.next_header,
        payload_len: usize::from(h.payload_len.get()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::psn::Psn;
    use crate::wire::{reth, Opcode};

    /// An RDMA WRITE Only over IPv4 or IPv6, optionally VLAN-tagged.
    fn write_only(payload_len: usize, v6: bool, tagged: bool) -> RoceRepr {
        let eth = ethernet::Repr {
            dst: EthernetAddress([2, 0, 0, 0, 0, 0x11]),
            src: EthernetAddress([2, 0, 0, 0, 0, 0x12]),
            vlan: tagged.then_some(VlanTag {
                pcp: 3,
                dei: false,
                vid: 10,
            }),
            ethertype: EtherType::Ipv4,
        };
        let (src, dst): (IpAddr, IpAddr) = if v6 {
            ("fd00::12".parse().unwrap(), "fd00::11".parse().unwrap())
        } else {
            ([198, 18, 0, 12].into(), [198, 18, 0, 11].into())
        };
        let ip = IpRepr::new_roce(src, dst, 26, Ecn::Ect0);
        let mut repr = RoceRepr::cnp(eth, ip, 0xc351, 17);
        repr.bth.opcode = Opcode::RC_RDMA_WRITE_ONLY;
        repr.bth.becn = false;
        repr.bth.psn = Psn::new(0x42_4242);
        repr.ext.reth = Some(reth::Repr {
            va: 0x7f00_0000_1000,
            rkey: 0x1234,
            dma_len: payload_len as u32,
        });
        repr.payload_len = payload_len;
        repr.fill_lengths();
        repr
    }

    /// The fast path takes untagged IPv4 and IPv6 frames, declines tagged ones, and for every
    /// single-byte corruption it either declines (the general path then reports the error) or
    /// describes exactly what the general path returns.
    #[test]
    fn fast_path_agrees_with_general_parse_under_every_byte_flip() {
        for (v6, tagged) in [(false, false), (true, false), (false, true)] {
            for payload_len in [0, 3, 64] {
                let repr = write_only(payload_len, v6, tagged);
                let payload: Vec<u8> = (0..payload_len as u8).collect();
                let mut frame = vec![0u8; repr.frame_len()];
                repr.emit(&payload, &mut frame).unwrap();
                let (general, info) = parse_any(&frame, true).unwrap();
                assert_eq!(general.repr, repr);
                match fast_path(&frame, true) {
                    Some(fast) => {
                        assert!(!tagged);
                        assert_eq!(fast, RoceView::from_packet(&frame, &general, info));
                        assert_eq!(fast.to_packet(), general);
                        assert_eq!(fast.reth(), repr.ext.reth);
                        assert_eq!(fast.payload(), &payload[..]);
                    }
                    None => assert!(tagged, "fast path declined a valid untagged frame"),
                }
                for at in 0..frame.len() {
                    for flip in [0x01u8, 0x80, 0xff] {
                        let mut bad = frame.clone();
                        bad[at] ^= flip;
                        for verify in [true, false] {
                            if let Some(v) = fast_path(&bad, verify) {
                                let (p, info) = parse_any(&bad, verify).expect("general accepts");
                                assert_eq!(v, RoceView::from_packet(&bad, &p, info), "{at}");
                                assert_eq!(v.to_packet(), p, "byte {at} ^ {flip:#x}");
                            }
                        }
                    }
                }
            }
        }
    }
}
