//! IPv4 headers as RoCEv2 uses them: DSCP and ECN in the TOS byte, DF set, no options, no fragments.
//! `Repr::parse` verifies the header checksum and rejects options and fragments (`Unsupported`)
//! so that every parsed header can be re-emitted byte for byte.

use std::net::Ipv4Addr;

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

#[cfg(test)]
mod tests {
    use super::*;
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
