//! UDP headers as RoCEv2 uses them: destination port 4791, source port as flow entropy (fixed
//! per QP), checksum 0. The checksum is neither verified nor computed (the ICRC covers the data).

use zerocopy::byteorder::network_endian::U16;

use super::{read_u16, write_u16, WireError};

header_layout! {
    /// The UDP header: the one layout the view ([`field`]), the frame templates, the ICRC masks and
    /// the receive fast path all read their offsets from.
    pub(crate) struct Header {
        src_port: U16 => SRC_PORT,
        dst_port: U16 => DST_PORT,
        len: U16 => LENGTH,
        checksum: U16 => CHECKSUM,
    }
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = core::mem::size_of::<Header>();

header_view!(Packet, WireError, "a UDP datagram");

impl<T: AsRef<[u8]>> Packet<T> {
    /// `Err(Truncated)` when the header or the datagram do not fit, `Err(BadLength)` when the
    /// length field is shorter than the header.
    pub fn check_len(&self) -> Result<(), WireError> {
        let len = self.len_at_least(HEADER_LEN)?;
        let length = usize::from(self.len());
        if length < HEADER_LEN {
            Err(WireError::BadLength)
        } else if len < length {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }

    getters! { d =>
        src_port -> u16 = read_u16(d, field::SRC_PORT), "Source port.";
        dst_port -> u16 = read_u16(d, field::DST_PORT), "Destination port.";
        #[allow(clippy::len_without_is_empty)]
        len -> u16 = read_u16(d, field::LENGTH), "Length of header plus payload.";
        checksum -> u16 = read_u16(d, field::CHECKSUM), "Checksum as stored (0 = none).";
    }

    /// The payload, up to the length field.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    setters! { d =>
        set_src_port(value: u16) = write_u16(d, field::SRC_PORT, value), "Sets the source port.";
        set_dst_port(value: u16) = write_u16(d, field::DST_PORT, value), "Sets the destination port.";
        set_len(value: u16) = write_u16(d, field::LENGTH, value), "Sets the length field.";
        set_checksum(value: u16) = write_u16(d, field::CHECKSUM, value), "Sets the checksum field.";
    }
}

/// A parsed UDP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source port (RoCEv2: flow entropy).
    pub src_port: u16,
    /// Destination port (RoCEv2: 4791).
    pub dst_port: u16,
    /// Length of the whole datagram, header included.
    pub length: u16,
}

impl Repr {
    /// Parses a checked datagram.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        Ok(Repr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            length: packet.len(),
        })
    }

    emit_via_to_bytes!("Writes exactly `buffer_len()` bytes, checksum 0.");

    /// The 8 header bytes (what `emit` writes).
    #[inline]
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        write_u16(&mut b, field::SRC_PORT, self.src_port);
        write_u16(&mut b, field::DST_PORT, self.dst_port);
        write_u16(&mut b, field::LENGTH, self.length);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::assert_emits;

    static DATAGRAM: [u8; 12] = [0xc0, 0x01, 0x12, 0xb7, 0x00, 0x0c, 0x00, 0x00, 1, 2, 3, 4];

    fn repr() -> Repr {
        Repr {
            src_port: 0xc001,
            dst_port: super::super::ROCE_UDP_PORT,
            length: 12,
        }
    }

    #[test]
    fn parses_datagram() {
        let packet = Packet::new_checked(&DATAGRAM[..]).unwrap();
        assert_eq!(Repr::parse(&packet).unwrap(), repr());
        assert_eq!(packet.payload(), &[1, 2, 3, 4]);
    }

    #[test]
    fn emits_header_with_zero_checksum() {
        assert_emits(&DATAGRAM[..8], |b| {
            repr().emit(&mut Packet::new_unchecked(b))
        });
    }

    #[test]
    fn bad_lengths_are_errors() {
        assert_eq!(
            Packet::new_checked(&DATAGRAM[..11]),
            Err(WireError::Truncated)
        );
        let mut short = DATAGRAM;
        short[5] = 7;
        assert_eq!(Packet::new_checked(&short[..]), Err(WireError::BadLength));
    }
}
