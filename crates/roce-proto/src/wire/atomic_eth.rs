//! The atomic extended transport header (28 bytes) of CmpSwap and FetchAdd requests: remote
//! address, R_Key, swap (or add) value and compare value. Alignment checks are the responder's.

use super::{read_u32, read_u64, write_u32, write_u64, WireError};

mod field {
    pub const VA: usize = 0;
    pub const RKEY: usize = 8;
    pub const SWAP_ADD: usize = 12;
    pub const COMPARE: usize = 20;
}

/// Length of the AtomicETH.
pub const HEADER_LEN: usize = 28;

fixed_header_view!("an atomic extended transport header");

impl<T: AsRef<[u8]>> Packet<T> {
    /// Remote virtual address (8-byte aligned for a valid request).
    pub fn va(&self) -> u64 {
        read_u64(self.buffer.as_ref(), field::VA)
    }

    /// Remote key.
    pub fn rkey(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::RKEY)
    }

    /// Swap value (CmpSwap) or addend (FetchAdd).
    pub fn swap_add(&self) -> u64 {
        read_u64(self.buffer.as_ref(), field::SWAP_ADD)
    }

    /// Compare value (CmpSwap only).
    pub fn compare(&self) -> u64 {
        read_u64(self.buffer.as_ref(), field::COMPARE)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the remote virtual address.
    pub fn set_va(&mut self, value: u64) {
        write_u64(self.buffer.as_mut(), field::VA, value);
    }

    /// Sets the remote key.
    pub fn set_rkey(&mut self, value: u32) {
        write_u32(self.buffer.as_mut(), field::RKEY, value);
    }

    /// Sets the swap value or addend.
    pub fn set_swap_add(&mut self, value: u64) {
        write_u64(self.buffer.as_mut(), field::SWAP_ADD, value);
    }

    /// Sets the compare value.
    pub fn set_compare(&mut self, value: u64) {
        write_u64(self.buffer.as_mut(), field::COMPARE, value);
    }
}

/// A parsed AtomicETH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Repr {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Swap value or addend.
    pub swap_add: u64,
    /// Compare value.
    pub compare: u64,
}

impl Repr {
    /// Parses a checked header.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        Ok(Repr {
            va: packet.va(),
            rkey: packet.rkey(),
            swap_add: packet.swap_add(),
            compare: packet.compare(),
        })
    }

    /// 28.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes exactly `buffer_len()` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.set_va(self.va);
        packet.set_rkey(self.rkey);
        packet.set_swap_add(self.swap_add);
        packet.set_compare(self.compare);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static HEADER: [u8; 28] = [
        0, 0, 0x7f, 0, 0, 0, 0x10, 0x08, // VA
        0, 0, 0x03, 0x04, // rkey
        0, 0, 0, 0, 0, 0, 0, 7, // swap
        0, 0, 0, 0, 0, 0, 0, 5, // compare
    ];
    const REPR: Repr = Repr {
        va: 0x7f00_0000_1008,
        rkey: 0x0304,
        swap_add: 7,
        compare: 5,
    };

    #[test]
    fn parses_header() {
        let packet = Packet::new_checked(&HEADER[..]).unwrap();
        assert_eq!(Repr::parse(&packet).unwrap(), REPR);
    }

    #[test]
    fn emits_header() {
        let mut buf = [0xa5u8; 29];
        REPR.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[..28], &HEADER[..]);
        assert_eq!(buf[28], 0xa5);
        assert_eq!(Packet::new_checked(&buf[..27]), Err(WireError::Truncated));
    }
}
