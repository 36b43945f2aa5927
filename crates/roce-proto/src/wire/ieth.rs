//! The invalidate extended transport header (4 bytes): the R_Key a SEND with Invalidate asks the
//! responder to invalidate. Invalidation itself is the memory-region layer's job.

use super::{read_u32, write_u32, WireError};

/// Length of the IETH.
pub const HEADER_LEN: usize = 4;

fixed_header_view!("an invalidate extended transport header");

impl<T: AsRef<[u8]>> Packet<T> {
    /// The R_Key to invalidate.
    pub fn rkey(&self) -> u32 {
        read_u32(self.buffer.as_ref(), 0)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the R_Key to invalidate.
    pub fn set_rkey(&mut self, value: u32) {
        write_u32(self.buffer.as_mut(), 0, value);
    }
}

/// A parsed IETH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Repr {
    /// The R_Key to invalidate.
    pub rkey: u32,
}

impl Repr {
    /// Parses a checked header.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        Ok(Repr {
            rkey: packet.rkey(),
        })
    }

    /// 4.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes exactly `buffer_len()` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_rkey(self.rkey);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rkey_is_network_order_both_ways() {
        let bytes = [0x00, 0x00, 0x16, 0x0a];
        let repr = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(repr.rkey, 0x160a);
        let mut buf = [0xa5u8; 5];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, [0x00, 0x00, 0x16, 0x0a, 0xa5]);
    }
}
