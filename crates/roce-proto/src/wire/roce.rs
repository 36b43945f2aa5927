//! Whole RoCEv2 frames: the general checked parse from Ethernet through the ICRC (any VLAN tag, IP
//! version and options; [`super::parse_frame`] tries the receive view's fast path first), and
//! one-shot emission of a complete frame (headers, payload, pad, ICRC) into a caller's buffer. No transport state and
//! no policy (P_Key, QP lookup, PSN windows) lives here; those checks belong to the QP layer.
//!
//! The parse verifies the IPv4 header checksum (`BadChecksum`) before the ICRC, so a frame
//! whose TTL or DSCP a router changed without fixing the checksum is rejected there.

use std::net::IpAddr;

use super::icrc::{
    compute_icrc, crc32, mask, unmask, RegCrc, BTH_MASKED, ICRC_LEN, IPV4_MASKED, IPV6_MASKED,
    LRH_LEN, UDP_MASKED,
};
use super::opcode::{ExtHeaders, Opcode, OpcodeInfo};
use super::{
    aeth, atomic_ack_eth, atomic_eth, bth, cnp, deth, ethernet, ieth, immdt, ipv4, ipv6, reth, udp,
    Ecn, EtherType, WireError, ROCE_UDP_PORT,
};
use crate::psn::Psn;

/// The IP layer of a RoCEv2 frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IpRepr {
    /// IPv4.
    V4(ipv4::Repr),
    /// IPv6.
    V6(ipv6::Repr),
}

impl IpRepr {
    /// An IP header as rxe sends it: IPv4 with DF, TTL 64 and ident 0, or IPv6 with hop limit 64
    /// and flow label 0; protocol UDP. Mixed address families give IPv6 with mapped addresses.
    pub fn new_roce(src: IpAddr, dst: IpAddr, dscp: u8, ecn: Ecn) -> Self {
        match (src, dst) {
            (IpAddr::V4(src), IpAddr::V4(dst)) => IpRepr::V4(ipv4::Repr {
                src,
                dst,
                dscp,
                ecn,
                ttl: 64,
                ident: 0,
                dont_frag: true,
                protocol: ipv4::PROTOCOL_UDP,
                payload_len: 0,
            }),
            (src, dst) => IpRepr::V6(ipv6::Repr {
                src: to_v6(src),
                dst: to_v6(dst),
                dscp,
                ecn,
                flow_label: 0,
                hop_limit: 64,
                next_header: ipv4::PROTOCOL_UDP,
                payload_len: 0,
            }),
        }
    }

    /// The ECN codepoint.
    pub fn ecn(&self) -> Ecn {
        match self {
            IpRepr::V4(r) => r.ecn,
            IpRepr::V6(r) => r.ecn,
        }
    }

    /// Sets the ECN codepoint.
    pub fn set_ecn(&mut self, ecn: Ecn) {
        match self {
            IpRepr::V4(r) => r.ecn = ecn,
            IpRepr::V6(r) => r.ecn = ecn,
        }
    }

    /// The DSCP.
    pub fn dscp(&self) -> u8 {
        match self {
            IpRepr::V4(r) => r.dscp,
            IpRepr::V6(r) => r.dscp,
        }
    }

    /// Source address.
    pub fn src(&self) -> IpAddr {
        match self {
            IpRepr::V4(r) => IpAddr::V4(r.src),
            IpRepr::V6(r) => IpAddr::V6(r.src),
        }
    }

    /// Destination address.
    pub fn dst(&self) -> IpAddr {
        match self {
            IpRepr::V4(r) => IpAddr::V4(r.dst),
            IpRepr::V6(r) => IpAddr::V6(r.dst),
        }
    }

    /// Header length (20 or 40).
    pub fn buffer_len(&self) -> usize {
        match self {
            IpRepr::V4(r) => r.buffer_len(),
            IpRepr::V6(r) => r.buffer_len(),
        }
    }

    /// Bytes after the IP header.
    pub fn payload_len(&self) -> usize {
        match self {
            IpRepr::V4(r) => r.payload_len,
            IpRepr::V6(r) => r.payload_len,
        }
    }

    fn set_payload_len_udp(&mut self, len: usize) {
        match self {
            IpRepr::V4(r) => {
                r.payload_len = len;
                r.protocol = ipv4::PROTOCOL_UDP;
            }
            IpRepr::V6(r) => {
                r.payload_len = len;
                r.next_header = ipv4::PROTOCOL_UDP;
            }
        }
    }

    fn ethertype(&self) -> EtherType {
        match self {
            IpRepr::V4(_) => EtherType::Ipv4,
            IpRepr::V6(_) => EtherType::Ipv6,
        }
    }
}

fn to_v6(addr: IpAddr) -> std::net::Ipv6Addr {
    match addr {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

/// The extension headers after the BTH; the opcode table says which are present.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExtRepr {
    /// Datagram ETH (UD).
    pub deth: Option<deth::Repr>,
    /// RDMA ETH (WRITE First/Only, READ Request).
    pub reth: Option<reth::Repr>,
    /// Atomic ETH (CmpSwap, FetchAdd).
    pub atomic_eth: Option<atomic_eth::Repr>,
    /// ACK ETH (ACK, READ Response First/Last/Only, Atomic ACK).
    pub aeth: Option<aeth::Repr>,
    /// Atomic ACK ETH.
    pub atomic_ack_eth: Option<atomic_ack_eth::Repr>,
    /// Immediate data.
    pub immdt: Option<u32>,
    /// R_Key to invalidate.
    pub ieth: Option<u32>,
}

/// Everything in a RoCEv2 frame but the payload bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoceRepr {
    /// Ethernet header (its `ethertype` is derived from `ip` on emit).
    pub eth: ethernet::Repr,
    /// IP header (its payload length and protocol are derived on emit).
    pub ip: IpRepr,
    /// UDP source port: the flow entropy, fixed per QP.
    pub udp_src_port: u16,
    /// Base transport header (its pad count is derived on emit).
    pub bth: bth::Repr,
    /// Extension headers.
    pub ext: ExtRepr,
    /// Payload bytes, without pad.
    pub payload_len: usize,
}

/// A parsed frame: the headers, the payload (without pad) borrowed from the frame, and the ICRC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RocePacket<'a> {
    /// The headers.
    pub repr: RoceRepr,
    /// The payload, pad excluded.
    pub payload: &'a [u8],
    /// The ICRC carried by the frame.
    pub icrc: u32,
}

/// The pad count for a payload length: bytes to the next multiple of 4.
pub const fn pad_count(payload_len: usize) -> u8 {
    ((4 - payload_len % 4) % 4) as u8
}

/// The IP packet inside `frame` (header through ICRC, Ethernet padding cut off).
#[inline]
fn ip_packet(frame: &[u8]) -> Result<(ethernet::Repr, IpRepr, &[u8]), WireError> {
    let eth_frame = ethernet::Frame::new_checked(frame)?;
    let eth = ethernet::Repr::parse(&eth_frame)?;
    let ip_bytes = frame
        .get(eth_frame.header_len()..)
        .ok_or(WireError::Truncated)?;
    match eth.ethertype {
        EtherType::Ipv4 => {
            let packet = ipv4::Packet::new_checked(ip_bytes)?;
            if packet.version() != 4 {
                return Err(WireError::BadVersion(packet.version()));
            }
            if packet.protocol() != ipv4::PROTOCOL_UDP {
                return Err(WireError::NotRoce);
            }
            let repr = ipv4::Repr::parse(&packet)?;
            let total = usize::from(packet.total_len());
            Ok((eth, IpRepr::V4(repr), &ip_bytes[..total]))
        }
        EtherType::Ipv6 => {
            let packet = ipv6::Packet::new_checked(ip_bytes)?;
            let repr = ipv6::Repr::parse(&packet)?;
            if repr.next_header != ipv4::PROTOCOL_UDP {
                return Err(WireError::NotRoce);
            }
            let total = ipv6::HEADER_LEN + repr.payload_len;
            Ok((eth, IpRepr::V6(repr), &ip_bytes[..total]))
        }
        _ => Err(WireError::NotRoce),
    }
}

/// The general parse: any Ethernet (tagged or not) and IP version, each check in order with its
/// own error. Also returns the opcode's table entry.
#[inline(never)]
pub(super) fn parse_any(
    frame: &[u8],
    verify: bool,
) -> Result<(RocePacket<'_>, &'static OpcodeInfo), WireError> {
    let (eth, ip, ip_bytes) = ip_packet(frame)?;
    let ip_len = ip.buffer_len();
    let udp_packet = udp::Packet::new_checked(&ip_bytes[ip_len..])?;
    if udp_packet.dst_port() != ROCE_UDP_PORT {
        return Err(WireError::NotRoce);
    }
    if usize::from(udp_packet.len()) != ip.payload_len() {
        return Err(WireError::BadLength);
    }
    let udp_payload = &ip_bytes[ip_len + udp::HEADER_LEN..];
    if udp_payload.len() < bth::HEADER_LEN + ICRC_LEN {
        return Err(WireError::Truncated);
    }
    let bth_packet = bth::Packet::new_checked(udp_payload)?;
    let bth = bth::Repr::parse(&bth_packet)?;
    if bth.tver != 0 {
        return Err(WireError::BadVersion(bth.tver));
    }
    let info = bth
        .opcode
        .info()
        .ok_or(WireError::BadOpcode(bth.opcode.0))?;

    let (covered, trailer) = udp_payload.split_at(udp_payload.len() - ICRC_LEN);
    let icrc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let after_bth = &covered[bth::HEADER_LEN..];
    if after_bth.len() < info.ext_len {
        return Err(WireError::BadLength);
    }
    let (ext_bytes, padded) = after_bth.split_at(info.ext_len);
    let pad = usize::from(bth.pad_count);
    if padded.len() % 4 != 0 || pad > padded.len() || (!info.has_payload && !padded.is_empty()) {
        return Err(WireError::BadLength);
    }
    let payload = &padded[..padded.len() - pad];

    if verify {
        let icrc_end = ip_bytes.len() - ICRC_LEN;
        let expected = compute_icrc(&ip_bytes[..icrc_end])?;
        if expected != icrc {
            return Err(WireError::BadIcrc {
                expected,
                found: icrc,
            });
        }
    }

    let ext = parse_ext(info, ext_bytes)?;
    let packet = RocePacket {
        repr: RoceRepr {
            eth,
            ip,
            udp_src_port: udp_packet.src_port(),
            bth,
            ext,
            payload_len: payload.len(),
        },
        payload,
        icrc,
    };
    Ok((packet, info))
}

/// Parses the extension headers the opcode table lists, in wire order.
#[inline]
pub(super) fn parse_ext(info: &OpcodeInfo, mut bytes: &[u8]) -> Result<ExtRepr, WireError> {
    let mut ext = ExtRepr::default();
    let mut take = |len: usize| -> Result<&[u8], WireError> {
        if bytes.len() < len {
            return Err(WireError::BadLength);
        }
        let (head, tail) = bytes.split_at(len);
        bytes = tail;
        Ok(head)
    };
    if info.deth() {
        ext.deth = Some(deth::Repr::parse(&deth::Packet::new_checked(take(
            deth::HEADER_LEN,
        )?)?)?);
    }
    if info.reth() {
        ext.reth = Some(reth::Repr::parse(&reth::Packet::new_checked(take(
            reth::HEADER_LEN,
        )?)?)?);
    }
    if info.atomic_eth() {
        ext.atomic_eth = Some(atomic_eth::Repr::parse(&atomic_eth::Packet::new_checked(
            take(atomic_eth::HEADER_LEN)?,
        )?)?);
    }
    if info.immdt() {
        let p = immdt::Packet::new_checked(take(immdt::HEADER_LEN)?)?;
        ext.immdt = Some(p.imm_data());
    }
    if info.ieth() {
        let p = ieth::Packet::new_checked(take(ieth::HEADER_LEN)?)?;
        ext.ieth = Some(p.rkey());
    }
    if info.aeth() {
        ext.aeth = Some(aeth::Repr::parse(&aeth::Packet::new_checked(take(
            aeth::HEADER_LEN,
        )?)?)?);
    }
    if info.atomic_ack_eth() {
        ext.atomic_ack_eth = Some(atomic_ack_eth::Repr::parse(
            &atomic_ack_eth::Packet::new_checked(take(atomic_ack_eth::HEADER_LEN)?)?,
        )?);
    }
    Ok(ext)
}

impl RoceRepr {
    /// A CNP (opcode 0x81, BECN set, P_Key 0xffff, PSN 0) to the reaction point's QP `dest_qpn`.
    pub fn cnp(eth: ethernet::Repr, ip: IpRepr, udp_src_port: u16, dest_qpn: u32) -> Self {
        let mut repr = RoceRepr {
            eth,
            ip,
            udp_src_port,
            bth: bth::Repr {
                opcode: Opcode::CNP,
                becn: true,
                dest_qpn,
                psn: Psn::new(0),
                ..bth::Repr::default()
            },
            ext: ExtRepr::default(),
            payload_len: 0,
        };
        repr.fill_lengths();
        repr
    }

    /// Sets the derived fields (EtherType, IP payload length and protocol, BTH pad count) to
    /// what [`RoceRepr::emit`] writes, so that `parse(emit(repr)) == repr`.
    pub fn fill_lengths(&mut self) {
        self.eth.ethertype = self.ip.ethertype();
        let udp_len = self.udp_len();
        self.ip.set_payload_len_udp(udp_len);
        self.bth.pad_count = pad_count(self.payload_len);
    }

    fn ext_len(&self) -> usize {
        self.bth.opcode.info().map_or(0, |i| i.ext_len)
    }

    fn udp_len(&self) -> usize {
        udp::HEADER_LEN
            + bth::HEADER_LEN
            + self.ext_len()
            + self.payload_len
            + usize::from(pad_count(self.payload_len))
            + ICRC_LEN
    }

    /// Bytes of the whole frame, Ethernet header through ICRC, pad included.
    pub fn frame_len(&self) -> usize {
        self.eth.buffer_len() + self.ip.buffer_len() + self.udp_len()
    }

    /// Writes the complete frame (headers, `payload`, pad, ICRC) to the start of `buf`; returns
    /// its length. `payload.len()` must equal `payload_len`.
    pub fn emit(&self, payload: &[u8], buf: &mut [u8]) -> Result<usize, WireError> {
        if payload.len() != self.payload_len {
            return Err(WireError::BadLength);
        }
        self.emit_with(buf, |dst| dst.copy_from_slice(payload))
    }

    /// Writes the frame, letting `fill_payload` write the `payload_len` payload bytes in place
    /// (gather from memory regions without an intermediate copy); returns the frame length.
    ///
    /// The IP, UDP and BTH headers are first written with their ICRC-variant fields set to
    /// ones and the last 8 bytes of the Ethernet header to ones (the masked LRH), so the ICRC is
    /// one CRC-32 call over contiguous bytes; then the real values of those few bytes and the
    /// Ethernet header are written: no copy of the frame and no second pass.
    pub fn emit_with(
        &self,
        buf: &mut [u8],
        fill_payload: impl FnOnce(&mut [u8]),
    ) -> Result<usize, WireError> {
        let info = self
            .bth
            .opcode
            .info()
            .ok_or(WireError::BadOpcode(self.bth.opcode.0))?;
        if !info.has_payload && self.payload_len != 0 {
            return Err(WireError::BadLength);
        }
        let pad = pad_count(self.payload_len);
        let ext_end = bth::HEADER_LEN + info.ext_len;
        let payload_end = ext_end + self.payload_len;
        let pad_end = payload_end + usize::from(pad);
        let udp_len = udp::HEADER_LEN + pad_end + ICRC_LEN;
        let eth_len = self.eth.buffer_len();
        let ip_len = self.ip.buffer_len();
        let ip_total = ip_len + udp_len;
        if ip_total > usize::from(u16::MAX) {
            return Err(WireError::BadLength);
        }
        let frame_len = eth_len + ip_total;
        let frame = buf.get_mut(..frame_len).ok_or(WireError::BufferTooSmall)?;
        let (eth_bytes, ip_bytes) = frame.split_at_mut(eth_len);
        let (ip_header, udp_bytes) = ip_bytes.split_at_mut(ip_len);

        // The IP header with the ICRC-variant bytes set to ones; `real` keeps the real ones.
        let real: [u8; 5] = match &self.ip {
            IpRepr::V4(r) => {
                let mut header = ipv4::Repr {
                    payload_len: udp_len,
                    protocol: ipv4::PROTOCOL_UDP,
                    ..*r
                }
                .to_bytes();
                let [a, b, c, d] = mask(&mut header, &IPV4_MASKED);
                ip_header.copy_from_slice(&header);
                [a, b, c, d, 0]
            }
            IpRepr::V6(r) => {
                let repr = ipv6::Repr {
                    payload_len: udp_len,
                    next_header: ipv4::PROTOCOL_UDP,
                    ..*r
                };
                repr.emit(&mut ipv6::Packet::new_unchecked(&mut *ip_header));
                mask(ip_header, &IPV6_MASKED)
            }
        };

        let (udp_header, transport) = udp_bytes
            .split_first_chunk_mut::<{ udp::HEADER_LEN }>()
            .ok_or(WireError::BufferTooSmall)?;
        let mut udp_bytes = udp::Repr {
            src_port: self.udp_src_port,
            dst_port: ROCE_UDP_PORT,
            length: udp_len as u16,
        }
        .to_bytes();
        // The checksum is masked to ones for the ICRC, and is zero (none) on the wire.
        mask(&mut udp_bytes, &UDP_MASKED);
        *udp_header = udp_bytes;

        let bth_repr = bth::Repr {
            pad_count: pad,
            ..self.bth
        };
        let (bth_header, after_bth) = transport
            .split_first_chunk_mut::<{ bth::HEADER_LEN }>()
            .ok_or(WireError::BufferTooSmall)?;
        let mut bth_bytes = bth_repr.to_bytes();
        mask(&mut bth_bytes, &[BTH_MASKED]);
        *bth_header = bth_bytes;

        emit_ext(&self.ext, info, &mut after_bth[..info.ext_len])?;
        let (payload, pad_icrc) = after_bth[info.ext_len..].split_at_mut(self.payload_len);
        fill_payload(payload);
        // Zero the pad and the ICRC slot (at least 4 bytes, a fixed-size store); the ICRC is
        // written over its part at the end.
        pad_icrc[..ICRC_LEN].fill(0);

        // The masked LRH in the Ethernet header's last bytes, then one pass.
        let lrh_start = eth_len - LRH_LEN;
        eth_bytes[lrh_start..].fill(0xff);
        let covered_end = frame_len - ICRC_LEN;
        let icrc = crc32(&frame[lrh_start..covered_end]);

        let (eth_bytes, ip_bytes) = frame.split_at_mut(eth_len);
        let mut eth_frame = ethernet::Frame::new_unchecked(eth_bytes);
        eth_frame.set_dst_addr(self.eth.dst);
        eth_frame.set_src_addr(self.eth.src);
        eth_frame.set_vlan_and_ethertype(self.eth.vlan, self.ip.ethertype());
        let [a, b, c, d, e] = real;
        match self.ip {
            IpRepr::V4(_) => unmask(ip_bytes, &IPV4_MASKED, [a, b, c, d]),
            IpRepr::V6(_) => unmask(ip_bytes, &IPV6_MASKED, [a, b, c, d, e]),
        }
        let transport = &mut ip_bytes[ip_len..];
        unmask(transport, &UDP_MASKED, [0, 0]);
        let bth_at = udp::HEADER_LEN;
        unmask(
            &mut transport[bth_at..],
            &[BTH_MASKED],
            [bth_repr.fecn_becn_byte()],
        );
        ip_bytes[ip_total - ICRC_LEN..].copy_from_slice(&icrc.to_le_bytes());
        Ok(frame_len)
    }
}

/// Writes the extension headers `info` lists, in wire order, from `ext` into `bytes` (exactly
/// `info.ext_len` long); `MissingHeader` when `ext` lacks one. The layouts of most data packets
/// and ACKs (one header, or none) are written inline; the others by [`emit_ext_general`].
#[inline(always)]
pub(super) fn emit_ext(
    ext: &ExtRepr,
    info: &OpcodeInfo,
    bytes: &mut [u8],
) -> Result<(), WireError> {
    let missing = WireError::MissingHeader;
    match info.ext {
        ExtHeaders::NONE => Ok(()),
        ExtHeaders::RETH => {
            let r = ext.reth.ok_or(missing("RETH"))?;
            bytes.copy_from_slice(&r.to_bytes());
            Ok(())
        }
        ExtHeaders::AETH => {
            let r = ext.aeth.ok_or(missing("AETH"))?;
            let [_, m0, m1, m2] = r.msn.value().to_be_bytes();
            bytes.copy_from_slice(&[r.syndrome.to_byte(), m0, m1, m2]);
            Ok(())
        }
        ExtHeaders::IMMDT => {
            let imm_data = ext.immdt.ok_or(missing("ImmDt"))?;
            bytes.copy_from_slice(&imm_data.to_be_bytes());
            Ok(())
        }
        _ => emit_ext_general(ext, info, bytes),
    }
}

/// Feeds to `reg` the extension-header bytes [`emit_ext`] writes for `info` (after it succeeded,
/// so every listed header is present), from the values: the emitter never reads them back (see
/// [`RegCrc`]).
pub(super) fn hash_ext(ext: &ExtRepr, info: &OpcodeInfo, reg: &mut RegCrc) {
    if let (true, Some(r)) = (info.deth(), ext.deth) {
        reg.be_u32(r.qkey);
        reg.be_u32(r.src_qpn & 0x00ff_ffff);
    }
    if let (true, Some(r)) = (info.reth(), ext.reth) {
        reg.be_u64(r.va);
        reg.be_u32(r.rkey);
        reg.be_u32(r.dma_len);
    }
    if let (true, Some(r)) = (info.atomic_eth(), ext.atomic_eth) {
        reg.be_u64(r.va);
        reg.be_u32(r.rkey);
        reg.be_u64(r.swap_add);
        reg.be_u64(r.compare);
    }
    if let (true, Some(imm)) = (info.immdt(), ext.immdt) {
        reg.be_u32(imm);
    }
    if let (true, Some(rkey)) = (info.ieth(), ext.ieth) {
        reg.be_u32(rkey);
    }
    if let (true, Some(r)) = (info.aeth(), ext.aeth) {
        reg.be_u32(u32::from(r.syndrome.to_byte()) << 24 | (r.msn.value() & 0x00ff_ffff));
    }
    if let (true, Some(r)) = (info.atomic_ack_eth(), ext.atomic_ack_eth) {
        reg.be_u64(r.orig);
    }
    if info.ext.contains(ExtHeaders::CNP_RESERVED) {
        reg.be_u64(0);
        reg.be_u64(0);
    }
}

/// [`emit_ext`] for any layout.
#[inline(never)]
fn emit_ext_general(
    ext: &ExtRepr,
    info: &OpcodeInfo,
    mut bytes: &mut [u8],
) -> Result<(), WireError> {
    let missing = WireError::MissingHeader;
    let mut next = |len: usize| {
        let (head, tail) = core::mem::take(&mut bytes).split_at_mut(len);
        bytes = tail;
        head
    };
    // Each present header: its `Repr` (or `MissingHeader`) emitted into the next bytes.
    macro_rules! emit_repr {
        ($($module:ident $name:literal),+) => {$(
            if info.$module() {
                let r = ext.$module.ok_or(missing($name))?;
                r.emit(&mut $module::Packet::new_unchecked(next($module::HEADER_LEN)));
            }
        )+};
    }
    emit_repr!(deth "DETH", reth "RETH", atomic_eth "AtomicETH");
    if info.immdt() {
        let imm_data = ext.immdt.ok_or(missing("ImmDt"))?;
        immdt::Packet::new_unchecked(next(immdt::HEADER_LEN)).set_imm_data(imm_data);
    }
    if info.ieth() {
        let rkey = ext.ieth.ok_or(missing("IETH"))?;
        ieth::Packet::new_unchecked(next(ieth::HEADER_LEN)).set_rkey(rkey);
    }
    emit_repr!(aeth "AETH", atomic_ack_eth "AtomicAckETH");
    if info.ext.contains(ExtHeaders::CNP_RESERVED) {
        cnp::Packet::new_unchecked(next(cnp::HEADER_LEN)).clear();
    }
    Ok(())
}

/// Rewrites the ECN codepoint of a RoCEv2 (or any IPv4/IPv6) frame in place, as a switch marking
/// CE does, fixing the IPv4 header checksum; the ICRC stays valid because it masks ECN.
/// Returns the previous codepoint.
pub fn set_frame_ecn(frame: &mut [u8], ecn: Ecn) -> Result<Ecn, WireError> {
    let eth_frame = ethernet::Frame::new_checked(&*frame)?;
    let ethertype = eth_frame.ethertype();
    let start = eth_frame.header_len();
    let ip_bytes = &mut frame[start..];
    match ethertype {
        EtherType::Ipv4 => {
            let mut packet = ipv4::Packet::new_checked(ip_bytes)?;
            let old = packet.ecn();
            packet.set_ecn(ecn);
            packet.fill_checksum();
            Ok(old)
        }
        EtherType::Ipv6 => {
            let mut packet = ipv6::Packet::new_checked(ip_bytes)?;
            let old = packet.ecn();
            packet.set_ecn(ecn);
            Ok(old)
        }
        _ => Err(WireError::NotRoce),
    }
}
