//! The InfiniBand base transport header (12 bytes), present in every RoCEv2 packet: opcode,
//! solicited event, migration, pad count, version, P_Key, FECN/BECN, destination QP, AckReq, PSN.
//! Reserved bits are written as zero and ignored when read.

use zerocopy::byteorder::network_endian::U16;

use super::opcode::Opcode;
use super::{read_u16, read_u24, write_u16, write_u24, WireError};
use crate::psn::Psn;

header_layout! {
    /// The BTH: the one layout the view ([`field`]), [`Repr::from_bytes`], the frame templates and
    /// the ICRC masks read their offsets from.
    pub(crate) struct Header {
        opcode: u8 => OPCODE,
        /// SE, MigReq, pad count, TVer.
        flags: u8 => FLAGS,
        pkey: U16 => PKEY,
        /// FECN, BECN, 6 reserved bits.
        fecn_becn: u8 => FECN_BECN,
        dest_qpn: [u8; 3] => DEST_QPN,
        /// AckReq, 7 reserved bits.
        ack_req: u8 => ACK_REQ,
        psn: [u8; 3] => PSN,
    }
}

/// Length of the BTH.
pub const HEADER_LEN: usize = core::mem::size_of::<Header>();
/// The default partition key (full member of the default partition).
pub const DEFAULT_PKEY: u16 = 0xffff;

/// Solicited event, in the flags byte.
pub(crate) const SE: u8 = 0x80;
const MIGREQ: u8 = 0x40;
/// The pad count's bits in the flags byte.
pub(crate) const PAD_COUNT: u8 = 0x30;
const FECN: u8 = 0x80;
const BECN: u8 = 0x40;
/// AckReq, in its byte.
pub(crate) const ACK_REQ: u8 = 0x80;

fixed_header_view!("a base transport header");

impl<T: AsRef<[u8]>> Packet<T> {
    fn byte(&self, at: usize) -> u8 {
        self.buffer.as_ref()[at]
    }

    /// Opcode.
    pub fn opcode(&self) -> Opcode {
        Opcode(self.byte(field::OPCODE))
    }

    /// Solicited event.
    pub fn solicited(&self) -> bool {
        self.byte(field::FLAGS) & SE != 0
    }

    /// Migration request.
    pub fn migreq(&self) -> bool {
        self.byte(field::FLAGS) & MIGREQ != 0
    }

    /// Pad count: bytes of padding between the payload and the ICRC (0-3).
    pub fn pad_count(&self) -> u8 {
        (self.byte(field::FLAGS) >> 4) & 0x3
    }

    /// Transport header version (0).
    pub fn tver(&self) -> u8 {
        self.byte(field::FLAGS) & 0x0f
    }

    /// Partition key.
    pub fn pkey(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::PKEY)
    }

    /// Forward explicit congestion notification.
    pub fn fecn(&self) -> bool {
        self.byte(field::FECN_BECN) & FECN != 0
    }

    /// Backward explicit congestion notification (set in a CNP).
    pub fn becn(&self) -> bool {
        self.byte(field::FECN_BECN) & BECN != 0
    }

    /// Destination queue pair number (24 bits).
    pub fn dest_qpn(&self) -> u32 {
        read_u24(self.buffer.as_ref(), field::DEST_QPN)
    }

    /// Acknowledge request.
    pub fn ack_req(&self) -> bool {
        self.byte(field::ACK_REQ) & ACK_REQ != 0
    }

    /// Packet sequence number.
    pub fn psn(&self) -> Psn {
        Psn::new(read_u24(self.buffer.as_ref(), field::PSN))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the opcode.
    pub fn set_opcode(&mut self, value: Opcode) {
        self.buffer.as_mut()[field::OPCODE] = value.0;
    }

    /// Sets SE, M, pad count and TVer at once.
    pub fn set_flags(&mut self, solicited: bool, migreq: bool, pad_count: u8, tver: u8) {
        let mut b = ((pad_count & 0x3) << 4) | (tver & 0x0f);
        if solicited {
            b |= SE;
        }
        if migreq {
            b |= MIGREQ;
        }
        self.buffer.as_mut()[field::FLAGS] = b;
    }

    /// Sets the partition key.
    pub fn set_pkey(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::PKEY, value);
    }

    /// Sets FECN and BECN (reserved bits cleared).
    pub fn set_fecn_becn(&mut self, fecn: bool, becn: bool) {
        self.buffer.as_mut()[field::FECN_BECN] =
            if fecn { FECN } else { 0 } | if becn { BECN } else { 0 };
    }

    /// Sets the destination QPN (low 24 bits).
    pub fn set_dest_qpn(&mut self, value: u32) {
        write_u24(self.buffer.as_mut(), field::DEST_QPN, value);
    }

    /// Sets AckReq (reserved bits cleared).
    pub fn set_ack_req(&mut self, value: bool) {
        self.buffer.as_mut()[field::ACK_REQ] = if value { ACK_REQ } else { 0 };
    }

    /// Sets the PSN.
    pub fn set_psn(&mut self, value: Psn) {
        write_u24(self.buffer.as_mut(), field::PSN, value.value());
    }
}

/// A parsed BTH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Opcode (may be unknown: the frame parser rejects those, this header does not).
    pub opcode: Opcode,
    /// Solicited event.
    pub solicited: bool,
    /// Migration request.
    pub migreq: bool,
    /// Pad count (0-3). [`crate::wire::RoceRepr::emit`] derives it from the payload length.
    pub pad_count: u8,
    /// Transport header version (0).
    pub tver: u8,
    /// Partition key.
    pub pkey: u16,
    /// Forward ECN.
    pub fecn: bool,
    /// Backward ECN.
    pub becn: bool,
    /// Destination QPN (24 bits).
    pub dest_qpn: u32,
    /// Acknowledge request.
    pub ack_req: bool,
    /// Packet sequence number.
    pub psn: Psn,
}

impl Default for Repr {
    fn default() -> Self {
        Repr {
            opcode: Opcode::RC_SEND_ONLY,
            solicited: false,
            migreq: false,
            pad_count: 0,
            tver: 0,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qpn: 0,
            ack_req: false,
            psn: Psn::new(0),
        }
    }
}

impl Repr {
    /// Parses a checked header. Any opcode and TVer are accepted here.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        let header = packet
            .buffer
            .as_ref()
            .first_chunk()
            .ok_or(WireError::Truncated)?;
        Ok(Repr::from_bytes(header))
    }

    /// Decodes the 12 header bytes (what `parse` gives for a checked packet). Always inlined so
    /// the fields land where the caller keeps them (a copy of a just-built struct with wide loads
    /// stalls on store forwarding).
    #[inline(always)]
    pub const fn from_bytes(b: &[u8; HEADER_LEN]) -> Repr {
        Repr {
            opcode: Opcode(b[field::OPCODE]),
            solicited: b[field::FLAGS] & SE != 0,
            migreq: b[field::FLAGS] & MIGREQ != 0,
            pad_count: (b[field::FLAGS] >> 4) & 0x3,
            tver: b[field::FLAGS] & 0x0f,
            pkey: u16::from_be_bytes([b[field::PKEY], b[field::PKEY + 1]]),
            fecn: b[field::FECN_BECN] & FECN != 0,
            becn: b[field::FECN_BECN] & BECN != 0,
            dest_qpn: be24(b, field::DEST_QPN),
            ack_req: b[field::ACK_REQ] & ACK_REQ != 0,
            psn: Psn::new(be24(b, field::PSN)),
        }
    }

    emit_via_to_bytes!("Writes exactly `buffer_len()` bytes.");

    /// The FECN/BECN byte (byte 4), reserved bits zero.
    pub const fn fecn_becn_byte(&self) -> u8 {
        (if self.fecn { FECN } else { 0 }) | (if self.becn { BECN } else { 0 })
    }

    /// The 12 header bytes (what `emit` writes).
    #[inline]
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let flags = (if self.solicited { SE } else { 0 })
            | (if self.migreq { MIGREQ } else { 0 })
            | ((self.pad_count & 0x3) << 4)
            | (self.tver & 0x0f);
        let mut b = [0u8; HEADER_LEN];
        b[field::OPCODE] = self.opcode.0;
        b[field::FLAGS] = flags;
        b[field::PKEY..field::PKEY + 2].copy_from_slice(&self.pkey.to_be_bytes());
        b[field::FECN_BECN] = self.fecn_becn_byte();
        b[field::DEST_QPN..field::DEST_QPN + 3].copy_from_slice(&self.dest_qpn.to_be_bytes()[1..]);
        b[field::ACK_REQ] = if self.ack_req { ACK_REQ } else { 0 };
        b[field::PSN..field::PSN + 3].copy_from_slice(&self.psn.value().to_be_bytes()[1..]);
        b
    }
}

/// The 24-bit big-endian number at `at` of a header.
#[inline(always)]
const fn be24(b: &[u8; HEADER_LEN], at: usize) -> u32 {
    u32::from_be_bytes([0, b[at], b[at + 1], b[at + 2]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::assert_emits;

    static HEADER: [u8; 12] = [
        0x0a, // RDMA WRITE Only
        0xa0, // SE, pad count 2, TVer 0
        0xff, 0xff, // P_Key
        0x40, // BECN
        0x00, 0x00, 0x11, // dest QPN 17
        0x80, // AckReq
        0xab, 0xcd, 0xef, // PSN
    ];

    fn repr() -> Repr {
        Repr {
            opcode: Opcode::RC_RDMA_WRITE_ONLY,
            solicited: true,
            migreq: false,
            pad_count: 2,
            tver: 0,
            pkey: 0xffff,
            fecn: false,
            becn: true,
            dest_qpn: 17,
            ack_req: true,
            psn: Psn::new(0xabcdef),
        }
    }

    #[test]
    fn parses_header() {
        let packet = Packet::new_checked(&HEADER[..]).unwrap();
        assert_eq!(Repr::parse(&packet).unwrap(), repr());
    }

    #[test]
    fn emits_header() {
        assert_emits(&HEADER, |b| repr().emit(&mut Packet::new_unchecked(b)));
    }

    #[test]
    fn short_buffer_is_truncated() {
        assert_eq!(
            Packet::new_checked(&HEADER[..11]).map(|_| ()),
            Err(WireError::Truncated)
        );
    }
}
