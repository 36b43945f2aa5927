//! Immediate data (4 bytes): the `imm_data` of a SEND or RDMA WRITE with immediate, in network
//! order, delivered to the receiver's completion. This is the header only, not the completion.

use super::{read_u32, write_u32, WireError};

/// Length of the ImmDt header.
pub const HEADER_LEN: usize = 4;

fixed_header_view!("an immediate data header");

impl<T: AsRef<[u8]>> Packet<T> {
    /// The immediate data as a number (network order on the wire).
    pub fn imm_data(&self) -> u32 {
        read_u32(self.buffer.as_ref(), 0)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the immediate data.
    pub fn set_imm_data(&mut self, value: u32) {
        write_u32(self.buffer.as_mut(), 0, value);
    }
}

/// A parsed ImmDt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Repr {
    /// The immediate data.
    pub imm_data: u32,
}

impl Repr {
    /// Parses a checked header.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        Ok(Repr {
            imm_data: packet.imm_data(),
        })
    }

    /// 4.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes exactly `buffer_len()` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_imm_data(self.imm_data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn immediate_is_network_order_both_ways() {
        let bytes = [0x12, 0x34, 0x56, 0x78];
        let repr = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(repr.imm_data, 0x1234_5678);
        let mut buf = [0xa5u8; 5];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, [0x12, 0x34, 0x56, 0x78, 0xa5]);
        assert_eq!(Packet::new_checked(&buf[..3]), Err(WireError::Truncated));
    }
}
