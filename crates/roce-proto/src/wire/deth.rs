//! The datagram extended transport header (8 bytes) of UD packets: Q_Key and source QPN.
//! The reserved byte is written as zero and ignored when read.

use super::{read_u24, read_u32, write_u24, write_u32, WireError};

mod field {
    pub const QKEY: usize = 0;
    pub const RESERVED: usize = 4;
    pub const SRC_QPN: usize = 5;
}

/// Length of the DETH.
pub const HEADER_LEN: usize = 8;

fixed_header_view!("a datagram extended transport header");

impl<T: AsRef<[u8]>> Packet<T> {
    /// Queue key.
    pub fn qkey(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::QKEY)
    }

    /// Source QP number (24 bits).
    pub fn src_qpn(&self) -> u32 {
        read_u24(self.buffer.as_ref(), field::SRC_QPN)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the queue key.
    pub fn set_qkey(&mut self, value: u32) {
        write_u32(self.buffer.as_mut(), field::QKEY, value);
    }

    /// Sets the source QPN and clears the reserved byte.
    pub fn set_src_qpn(&mut self, value: u32) {
        self.buffer.as_mut()[field::RESERVED] = 0;
        write_u24(self.buffer.as_mut(), field::SRC_QPN, value);
    }
}

/// A parsed DETH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Repr {
    /// Queue key.
    pub qkey: u32,
    /// Source QPN (24 bits).
    pub src_qpn: u32,
}

impl Repr {
    /// Parses a checked header.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        Ok(Repr {
            qkey: packet.qkey(),
            src_qpn: packet.src_qpn(),
        })
    }

    /// 8.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes exactly `buffer_len()` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_qkey(self.qkey);
        packet.set_src_qpn(self.src_qpn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static HEADER: [u8; 8] = [0x11, 0x11, 0x11, 0x11, 0x00, 0x00, 0x00, 0x12];
    const REPR: Repr = Repr {
        qkey: 0x1111_1111,
        src_qpn: 0x12,
    };

    #[test]
    fn parses_header() {
        let packet = Packet::new_checked(&HEADER[..]).unwrap();
        assert_eq!(Repr::parse(&packet).unwrap(), REPR);
    }

    #[test]
    fn emits_header() {
        let mut buf = [0xa5u8; 9];
        REPR.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[..8], &HEADER[..]);
        assert_eq!(buf[8], 0xa5);
        assert_eq!(Packet::new_checked(&buf[..7]), Err(WireError::Truncated));
    }
}
