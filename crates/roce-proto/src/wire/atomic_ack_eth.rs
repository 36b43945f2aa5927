//! The atomic acknowledge extended transport header (8 bytes): the original remote value an
//! atomic CmpSwap or FetchAdd found. It follows the AETH of an Atomic Acknowledge.

use super::{read_u64, write_u64, WireError};

/// Length of the AtomicAckETH.
pub const HEADER_LEN: usize = 8;

fixed_header_view!("an atomic acknowledge extended transport header");

impl<T: AsRef<[u8]>> Packet<T> {
    /// The value the remote location held before the atomic operation.
    pub fn orig(&self) -> u64 {
        read_u64(self.buffer.as_ref(), 0)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the original value.
    pub fn set_orig(&mut self, value: u64) {
        write_u64(self.buffer.as_mut(), 0, value);
    }
}

/// A parsed AtomicAckETH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Repr {
    /// Original remote data.
    pub orig: u64,
}

impl Repr {
    /// Parses a checked header.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        Ok(Repr {
            orig: packet.orig(),
        })
    }

    /// 8.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes exactly `buffer_len()` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_orig(self.orig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static HEADER: [u8; 8] = [0, 0, 0, 0, 0, 0, 0x01, 0x02];
    const REPR: Repr = Repr { orig: 0x0102 };

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
