//! Per-flow frame templates: the Ethernet, IP, UDP and fixed BTH bytes of one flow (one QP's
//! path) built once, then copied and patched per packet, with the ICRC from a precomputed state.
//! Not here: which opcode or PSN to send (that is the QP's business) or any parsing.
//!
//! The template stores the IP/UDP/BTH header with the ICRC-variant fields already set to ones and
//! the per-packet fields zero, plus the CRC state after it. A packet is: copy the header, patch
//! the lengths and per-packet BTH fields, write the extension headers and payload, then write back
//! the real TOS / traffic class, TTL / hop limit, IPv4 checksum (incrementally from a
//! precomputed partial sum), UDP checksum (zero) and FECN/BECN byte. The ICRC never reads the
//! headers back: it starts from the template's state, corrects it for the per-packet fields and
//! feeds the extension headers from their values (`RegCrc`), then hashes payload and pad
//! where they lie. The bytes are identical to [`RoceRepr::emit`]'s.

use super::icrc::{
    crc32, crc_after_lrh, mask, past_zeros, RegCrc, ZeroShift, BTH_MASKED, ICRC_LEN, IPV4_MASKED,
    IPV6_MASKED, LRH_LEN, MAX_SHIFT, UDP_MASKED,
};
use super::opcode::{Opcode, OpcodeInfo};
use super::roce::{emit_ext, hash_ext, pad_count, ExtRepr, IpRepr, RoceRepr};
use super::{bth, ethernet, ipv4, ipv6, udp, write_u16, Ecn, WireError};
use crate::psn::Psn;

/// Longest header a template holds: tagged Ethernet, IPv6, UDP, BTH.
const MAX_HEADER_LEN: usize = ethernet::HEADER_LEN
    + ethernet::VLAN_TAG_LEN
    + ipv6::HEADER_LEN
    + udp::HEADER_LEN
    + bth::HEADER_LEN;

// `emit_shaped` restores exactly the bytes the ICRC masks, in `ip_real`'s order: IPv4 TOS and TTL
// (and the checksum, recomputed), the IPv6 first word and hop limit, the UDP checksum (zero) and
// the BTH's FECN/BECN byte. Checked against the masking tables at compile time.
const _: () = {
    let [tos, ttl, c0, c1] = IPV4_MASKED;
    assert!(tos.0 == ipv4::field::TOS && ttl.0 == ipv4::field::TTL);
    assert!(c0.0 == ipv4::field::CHECKSUM && c1.0 == ipv4::field::CHECKSUM + 1);
    let [w0, w1, w2, w3, hop] = IPV6_MASKED;
    assert!(w0.0 == ipv6::field::VER_TC_FLOW.start && w1.0 == w0.0 + 1);
    assert!(w2.0 == w0.0 + 2 && w3.0 == w0.0 + 3 && w3.0 + 1 == ipv6::field::VER_TC_FLOW.end);
    assert!(hop.0 == ipv6::field::HOP_LIMIT);
    let [u0, u1] = UDP_MASKED;
    assert!(u0.0 == udp::field::CHECKSUM && u1.0 == udp::field::CHECKSUM + 1);
    assert!(BTH_MASKED.0 == bth::field::FECN_BECN);
};

/// The BTH flag bits that a template leaves to each packet: SE and the pad count.
const BTH_PER_PACKET_FLAGS: u8 = bth::SE | bth::PAD_COUNT;

/// Offset of the length field in an IPv6 (`v6`) or IPv4 header: the one per-packet IP field.
#[inline(always)]
const fn ip_length_offset(v6: bool) -> usize {
    if v6 {
        ipv6::field::LENGTH
    } else {
        ipv4::field::LENGTH
    }
}

/// The per-packet fields of a frame built from a [`FrameTemplate`]: everything a QP changes from
/// one packet to the next. The rest (addresses, ports, ECN, P_Key, dest QPN, ...) is the
/// template's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketFields {
    /// BTH opcode; its table entry says which of `ext` are written.
    pub opcode: Opcode,
    /// BTH solicited event bit.
    pub solicited: bool,
    /// BTH AckReq bit.
    pub ack_req: bool,
    /// BTH PSN.
    pub psn: Psn,
    /// Extension headers (only those the opcode lists are written; missing ones are an error).
    pub ext: ExtRepr,
    /// Payload bytes, without pad (the pad count is derived).
    pub payload_len: usize,
}

impl PacketFields {
    /// The per-packet fields of `repr`.
    pub fn from_repr(repr: &RoceRepr) -> Self {
        PacketFields {
            opcode: repr.bth.opcode,
            solicited: repr.bth.solicited,
            ack_req: repr.bth.ack_req,
            psn: repr.bth.psn,
            ext: repr.ext,
            payload_len: repr.payload_len,
        }
    }
}

/// Where the IP header sits and which version it is: each shape has its own monomorphic,
/// fixed-offset emit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    V4,
    V4Tagged,
    V6,
    V6Tagged,
}

/// The precomputed headers of one flow. Build it once per QP (or per path) with
/// [`FrameTemplate::new`]; each [`FrameTemplate::emit`] then writes a complete frame, ICRC
/// included, byte-identical to what [`RoceRepr::emit`] writes for the same fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameTemplate {
    /// Ethernet (real) then IP, UDP and BTH with the ICRC-variant fields set to ones; the
    /// per-packet fields (lengths, opcode, flags, AckReq, PSN) are overwritten on emit.
    header: [u8; MAX_HEADER_LEN],
    shape: Shape,
    /// Real values of the masked IP bytes: IPv4 `[tos, ttl, 0, 0, 0]`, IPv6 bytes 0..4 and the
    /// hop limit.
    ip_real: [u8; 5],
    /// IPv4: the one's-complement sum (folded, not complemented) of the header's words with the
    /// total length and checksum taken as zero; adding the total length gives the checksum.
    ip_partial_sum: u16,
    /// BTH byte 1 bits owned by the template (MigReq, TVer).
    bth_flags: u8,
    /// The real BTH byte 4 (FECN, BECN, reserved).
    fecn_becn: u8,
    /// crc32fast state after the LRH ones and the template's masked IP, UDP and BTH headers
    /// (per-packet fields zero).
    icrc_seed: u32,
}

impl FrameTemplate {
    /// A template for frames with `repr`'s Ethernet header, IP header (addresses, DSCP, ECN,
    /// TTL / hop limit, ident, DF, flow label), UDP source port and BTH fixed fields (P_Key,
    /// dest QPN, MigReq, TVer, FECN, BECN). `repr`'s opcode, PSN, flags, extension headers,
    /// payload length and all derived lengths are ignored: they come with each packet.
    pub fn new(repr: &RoceRepr) -> Self {
        // The generic emitter writes the headers once (a SEND Only has no extension header).
        let mut base = *repr;
        base.bth.opcode = Opcode::RC_SEND_ONLY;
        base.ext = ExtRepr::default();
        base.payload_len = 0;
        let mut frame = [0u8; MAX_HEADER_LEN + ICRC_LEN];
        // A SEND Only with no payload fits `frame` and has a known opcode: emit cannot fail.
        let _ = base.emit(&[], &mut frame);

        let eth_len = repr.eth.buffer_len();
        let mut header = [0u8; MAX_HEADER_LEN];
        let (shape, ip_len) = match (repr.ip, repr.eth.vlan.is_some()) {
            (IpRepr::V4(_), false) => (Shape::V4, ipv4::HEADER_LEN),
            (IpRepr::V4(_), true) => (Shape::V4Tagged, ipv4::HEADER_LEN),
            (IpRepr::V6(_), false) => (Shape::V6, ipv6::HEADER_LEN),
            (IpRepr::V6(_), true) => (Shape::V6Tagged, ipv6::HEADER_LEN),
        };
        let len = eth_len + ip_len + udp::HEADER_LEN + bth::HEADER_LEN;
        header[..len].copy_from_slice(&frame[..len]);

        let ip = &mut header[eth_len..eth_len + ip_len];
        let mut ip_partial_sum = 0;
        let ip_real = if ip_len == ipv4::HEADER_LEN {
            let mut fixed = [0u8; ipv4::HEADER_LEN];
            fixed.copy_from_slice(ip);
            write_u16(&mut fixed, ipv4::field::LENGTH, 0);
            write_u16(&mut fixed, ipv4::field::CHECKSUM, 0);
            ip_partial_sum = !ipv4::header_checksum(&fixed);
            // TOS and TTL are kept; the checksum is recomputed per packet.
            let [tos, ttl, _, _] = mask(ip, &IPV4_MASKED);
            [tos, ttl, 0, 0, 0]
        } else {
            mask(ip, &IPV6_MASKED)
        };
        let udp_at = eth_len + ip_len;
        mask(&mut header[udp_at..], &UDP_MASKED);
        let bth_at = udp_at + udp::HEADER_LEN;
        let bth_flags = header[bth_at + bth::field::FLAGS] & !BTH_PER_PACKET_FLAGS;
        let [fecn_becn] = mask(&mut header[bth_at..], &[BTH_MASKED]);
        // Per-packet fields zero, so a packet's ICRC is the seed corrected by their values.
        let ip_length_at = eth_len + ip_length_offset(ip_len == ipv6::HEADER_LEN);
        write_u16(&mut header, ip_length_at, 0);
        write_u16(&mut header, udp_at + udp::field::LENGTH, 0);
        header[bth_at + bth::field::OPCODE] = 0;
        header[bth_at + bth::field::FLAGS] = bth_flags;
        header[bth_at + bth::field::ACK_REQ] = 0;
        header[bth_at + bth::field::PSN..bth_at + bth::HEADER_LEN].fill(0);
        let icrc_seed = crc_after_lrh(&header[eth_len..len]);
        FrameTemplate {
            header,
            shape,
            ip_real,
            ip_partial_sum,
            bth_flags,
            fecn_becn,
            icrc_seed,
        }
    }

    /// Changes the ECN codepoint of the frames this template builds (e.g. ECT(0) for data,
    /// Not-ECT for ACKs). ECN is masked by the ICRC, so this only updates two stored bytes.
    pub fn set_ecn(&mut self, ecn: Ecn) {
        match self.shape {
            Shape::V4 | Shape::V4Tagged => {
                let old = self.ip_real[0];
                let new = ecn.apply(old);
                self.ip_real[0] = new;
                // RFC 1624: HC' = ~(~HC + ~m + m'); the partial sum is ~HC's counterpart. TOS
                // shares its 16-bit word with the version and header length.
                let word = |tos: u8| u16::from_be_bytes([ipv4::VER_IHL, tos]);
                let sum =
                    u32::from(self.ip_partial_sum) + u32::from(!word(old)) + u32::from(word(new));
                self.ip_partial_sum = !ipv4::fold(sum);
            }
            Shape::V6 | Shape::V6Tagged => {
                // The first four masked bytes are the header's first four.
                let b = &mut self.ip_real[ipv6::ECN_BYTE];
                *b = ipv6::with_ecn(*b, ecn);
            }
        }
    }

    /// Offset of the IP header in the frame (14, or 18 with a VLAN tag).
    pub fn ip_offset(&self) -> usize {
        match self.shape {
            Shape::V4 | Shape::V6 => ethernet::HEADER_LEN,
            Shape::V4Tagged | Shape::V6Tagged => ethernet::HEADER_LEN + ethernet::VLAN_TAG_LEN,
        }
    }

    /// Offset of the first byte the emit hashes for the ICRC ([`super::ICRC_LEAD`], or 4 more
    /// with a VLAN tag). Buffers whose byte at this offset starts a cache line hash fastest.
    pub fn icrc_offset(&self) -> usize {
        self.ip_offset() - LRH_LEN
    }

    fn ip_len(&self) -> usize {
        match self.shape {
            Shape::V4 | Shape::V4Tagged => ipv4::HEADER_LEN,
            Shape::V6 | Shape::V6Tagged => ipv6::HEADER_LEN,
        }
    }

    /// Offset of the payload in a frame with `opcode` (after BTH and extension headers), or
    /// `None` for an opcode not in the table. With [`FrameTemplate::emit_in_place`] the caller
    /// puts the payload here first.
    pub fn payload_offset(&self, opcode: Opcode) -> Option<usize> {
        let info = opcode.info()?;
        Some(self.ip_offset() + self.ip_len() + udp::HEADER_LEN + bth::HEADER_LEN + info.ext_len)
    }

    /// Bytes of the frame for `fields` (Ethernet through ICRC, pad included), or `None` for an
    /// opcode not in the table.
    pub fn frame_len(&self, fields: &PacketFields) -> Option<usize> {
        let pad = usize::from(pad_count(fields.payload_len));
        Some(self.payload_offset(fields.opcode)? + fields.payload_len + pad + ICRC_LEN)
    }

    /// Writes the whole frame (headers, `payload`, pad, ICRC) to the start of `buf`; returns its
    /// length. Errors as [`RoceRepr::emit`]: `BadLength` if `payload.len() != payload_len` or
    /// the opcode carries no payload, `BadOpcode`, `BufferTooSmall`, `MissingHeader`.
    #[inline]
    pub fn emit(
        &self,
        fields: &PacketFields,
        payload: &[u8],
        buf: &mut [u8],
    ) -> Result<usize, WireError> {
        if payload.len() != fields.payload_len {
            return Err(WireError::BadLength);
        }
        self.emit_with(fields, buf, |dst| dst.copy_from_slice(payload))
    }

    /// Writes the frame, letting `fill_payload` write the `payload_len` payload bytes in place
    /// (gather without an intermediate copy); returns the frame length. Same errors as
    /// [`FrameTemplate::emit`] but for the payload length check.
    #[inline]
    pub fn emit_with(
        &self,
        fields: &PacketFields,
        buf: &mut [u8],
        fill_payload: impl FnOnce(&mut [u8]),
    ) -> Result<usize, WireError> {
        self.emit_gathered(fields, buf, |dst| {
            fill_payload(dst);
            false
        })
    }

    /// [`FrameTemplate::emit_with`] for a `fill_payload` that says whether it wrote only zeros
    /// (a discarding region's bytes): their ICRC is then a few table lookups, not a hash.
    #[inline]
    pub(crate) fn emit_gathered(
        &self,
        fields: &PacketFields,
        buf: &mut [u8],
        fill_payload: impl FnOnce(&mut [u8]) -> bool,
    ) -> Result<usize, WireError> {
        match self.shape {
            Shape::V4 | Shape::V4Tagged => self.emit_ip::<false>(fields, buf, fill_payload),
            Shape::V6 | Shape::V6Tagged => self.emit_ip::<true>(fields, buf, fill_payload),
        }
    }

    /// [`emit_shaped`](Self::emit_shaped) with the Ethernet header length of the shape's tag.
    #[inline(always)]
    fn emit_ip<const V6: bool>(
        &self,
        fields: &PacketFields,
        buf: &mut [u8],
        fill_payload: impl FnOnce(&mut [u8]) -> bool,
    ) -> Result<usize, WireError> {
        const TAGGED: usize = ethernet::HEADER_LEN + ethernet::VLAN_TAG_LEN;
        if matches!(self.shape, Shape::V4Tagged | Shape::V6Tagged) {
            self.emit_shaped::<TAGGED, V6>(fields, buf, fill_payload)
        } else {
            self.emit_shaped::<{ ethernet::HEADER_LEN }, V6>(fields, buf, fill_payload)
        }
    }

    /// Zero-copy emit: the `payload_len` payload bytes are already at
    /// [`FrameTemplate::payload_offset`] in `buf` (the caller wrote or received them there);
    /// writes the headers, pad and ICRC around them and returns the frame length.
    #[inline]
    pub fn emit_in_place(&self, fields: &PacketFields, buf: &mut [u8]) -> Result<usize, WireError> {
        self.emit_gathered(fields, buf, |_| false)
    }

    /// The emit for one shape: every header offset is a constant.
    #[inline(always)]
    fn emit_shaped<const ETH: usize, const V6: bool>(
        &self,
        fields: &PacketFields,
        buf: &mut [u8],
        fill_payload: impl FnOnce(&mut [u8]) -> bool,
    ) -> Result<usize, WireError> {
        let ip_len = if V6 {
            ipv6::HEADER_LEN
        } else {
            ipv4::HEADER_LEN
        };
        let udp_at = ETH + ip_len;
        let bth_at = udp_at + udp::HEADER_LEN;
        let header_len = bth_at + bth::HEADER_LEN;

        let info: &OpcodeInfo = fields
            .opcode
            .info()
            .ok_or(WireError::BadOpcode(fields.opcode.0))?;
        if !info.has_payload && fields.payload_len != 0 {
            return Err(WireError::BadLength);
        }
        let pad = pad_count(fields.payload_len);
        let ext_end = header_len + info.ext_len;
        let payload_end = ext_end + fields.payload_len;
        let pad_end = payload_end + usize::from(pad);
        let frame_len = pad_end + ICRC_LEN;
        let udp_len = frame_len - udp_at;
        if ip_len + udp_len > usize::from(u16::MAX) {
            return Err(WireError::BadLength);
        }
        let frame = buf.get_mut(..frame_len).ok_or(WireError::BufferTooSmall)?;

        let (head, rest) = frame.split_at_mut(header_len);
        head.copy_from_slice(&self.header[..header_len]);
        let ip_length = if V6 { udp_len } else { ip_len + udp_len } as u16;
        let ip_length_at = ip_length_offset(V6);
        write_u16(head, ETH + ip_length_at, ip_length);
        write_u16(head, udp_at + udp::field::LENGTH, udp_len as u16);
        head[bth_at + bth::field::OPCODE] = fields.opcode.0;
        let flags = (pad << 4) | if fields.solicited { bth::SE } else { 0 };
        head[bth_at + bth::field::FLAGS] = self.bth_flags | flags;
        let ack_req = if fields.ack_req { bth::ACK_REQ } else { 0 };
        head[bth_at + bth::field::ACK_REQ] = ack_req;
        let [_, psn_hi, psn_mid, psn_lo] = fields.psn.value().to_be_bytes();
        let psn_at = bth_at + bth::field::PSN;
        head[psn_at..psn_at + 3].copy_from_slice(&[psn_hi, psn_mid, psn_lo]);

        let (ext, rest) = rest.split_at_mut(info.ext_len);
        emit_ext(&fields.ext, info, ext)?;
        let (payload, trailer) = rest.split_at_mut(fields.payload_len);
        let zeros = fill_payload(payload);
        // Zero the pad and the ICRC slot (at least 4 bytes: a fixed-size store, no memset call);
        // the ICRC goes over its part at the end.
        trailer[..ICRC_LEN].fill(0);

        // The ICRC. Payload and pad are hashed where they lie, from the initial state (so
        // independently of the headers) when a table can combine them with the header state
        // after (short tails, full-MTU payloads); the header state is the template's, corrected
        // for the per-packet header bytes at their distance from the BTH's end, then fed the
        // extension headers' values.
        let tail = &frame[ext_end..pad_end];
        let short = tail.len() <= MAX_SHIFT;
        let tail_crc =
            (!zeros && (short || ZeroShift::for_len(tail.len()).is_some())).then(|| crc32(tail));
        let last = header_len - ETH - 1;
        let mut reg = RegCrc::from_state(self.icrc_seed);
        let [len_hi, len_lo] = ip_length.to_be_bytes();
        reg.flip(last - ip_length_at, len_hi);
        reg.flip(last - ip_length_at - 1, len_lo);
        let [udp_hi, udp_lo] = (udp_len as u16).to_be_bytes();
        let udp_length_at = ip_len + udp::field::LENGTH;
        reg.flip(last - udp_length_at, udp_hi);
        reg.flip(last - udp_length_at - 1, udp_lo);
        let bth = ip_len + udp::HEADER_LEN;
        reg.flip(last - bth - bth::field::OPCODE, fields.opcode.0);
        reg.flip(last - bth - bth::field::FLAGS, flags);
        reg.flip(last - bth - bth::field::ACK_REQ, ack_req);
        let psn = bth + bth::field::PSN;
        reg.flip(last - psn, psn_hi);
        reg.flip(last - psn - 1, psn_mid);
        reg.flip(last - psn - 2, psn_lo);
        hash_ext(&fields.ext, info, &mut reg);
        // Zeros (payload and pad) only move the state: no bytes to read.
        let zeroed = zeros.then(|| past_zeros(reg.state(), tail.len())).flatten();
        let combined = zeroed.or_else(|| {
            tail_crc.and_then(|tail_crc| {
                let head = if short {
                    reg.shifted_state(tail.len())?
                } else {
                    ZeroShift::for_len(tail.len())?.apply(reg.state())
                };
                Some(head ^ tail_crc)
            })
        });
        let icrc = combined.unwrap_or_else(|| {
            reg.bytes(&frame[ext_end..pad_end]);
            reg.state()
        });

        // The real values of the masked fields (the bytes `new` masked; a compile-time check at
        // the top ties them to the masking tables), field by field: wide stores, fixed offsets.
        if V6 {
            let first_word =
                ETH + ipv6::field::VER_TC_FLOW.start..ETH + ipv6::field::VER_TC_FLOW.end;
            frame[first_word].copy_from_slice(&self.ip_real[..4]);
            frame[ETH + ipv6::field::HOP_LIMIT] = self.ip_real[4];
        } else {
            frame[ETH + ipv4::field::TOS] = self.ip_real[0];
            frame[ETH + ipv4::field::TTL] = self.ip_real[1];
            let total = (ip_len + udp_len) as u32;
            write_u16(
                frame,
                ETH + ipv4::field::CHECKSUM,
                ipv4::fold(u32::from(self.ip_partial_sum) + total),
            );
        }
        write_u16(frame, udp_at + udp::field::CHECKSUM, 0);
        frame[bth_at + bth::field::FECN_BECN] = self.fecn_becn;
        frame[pad_end..].copy_from_slice(&icrc.to_le_bytes());
        Ok(frame_len)
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    use super::*;
    use crate::wire::{EtherType, EthernetAddress};

    #[test]
    fn zeros_said_so_hash_like_zeros_written() {
        let v4 = |b| IpAddr::V4(Ipv4Addr::new(10, 0, 0, b));
        let v6 = |b| IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, b));
        for (src, dst) in [(v4(1), v4(2)), (v6(1), v6(2))] {
            let eth = ethernet::Repr {
                dst: EthernetAddress([2, 0, 0, 0, 0, 2]),
                src: EthernetAddress([2, 0, 0, 0, 0, 1]),
                vlan: None,
                ethertype: EtherType::Ipv4,
            };
            let ip = IpRepr::new_roce(src, dst, 26, Ecn::Ect0);
            let t = FrameTemplate::new(&RoceRepr::cnp(eth, ip, 0xc000, 0x12));
            for payload_len in [0, 1, 3, 4, 255, 256, 700, 1023, 1024, 1025, 4096] {
                let fields = PacketFields {
                    opcode: Opcode::RC_RDMA_WRITE_MIDDLE,
                    solicited: false,
                    ack_req: true,
                    psn: Psn::new(77),
                    ext: ExtRepr::default(),
                    payload_len,
                };
                // Buffers pre-filled with 0xa5: the zeros must be written, not assumed.
                let (mut hashed, mut shifted) = ([0xa5u8; 4200], [0xa5u8; 4200]);
                let n = t.emit(&fields, &vec![0; payload_len], &mut hashed);
                let m = t.emit_gathered(&fields, &mut shifted, |p| {
                    p.fill(0);
                    true
                });
                assert_eq!(n, m, "payload {payload_len}");
                assert_eq!(hashed, shifted, "payload {payload_len}");
            }
        }
    }
}
