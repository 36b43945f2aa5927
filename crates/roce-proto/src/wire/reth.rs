//! The RDMA extended transport header (16 bytes): remote virtual address, R_Key and DMA length.
//! Carried by RDMA WRITE First/Only and READ Request. Access checks live in the memory regions.

use super::{read_u32, read_u64, write_u32, write_u64, WireError};

mod field {
    pub const VA: usize = 0;
    pub const RKEY: usize = 8;
    pub const DMA_LEN: usize = 12;
}

/// Length of the RETH.
pub const HEADER_LEN: usize = 16;

fixed_header_view!("an RDMA extended transport header");

impl<T: AsRef<[u8]>> Packet<T> {
    /// Remote virtual address.
    pub fn va(&self) -> u64 {
        read_u64(self.buffer.as_ref(), field::VA)
    }

    /// Remote key.
    pub fn rkey(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::RKEY)
    }

    /// Length of the whole RDMA operation in bytes.
    pub fn dma_len(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::DMA_LEN)
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

    /// Sets the DMA length.
    pub fn set_dma_len(&mut self, value: u32) {
        write_u32(self.buffer.as_mut(), field::DMA_LEN, value);
    }
}

/// A parsed RETH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Repr {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Length of the whole operation.
    pub dma_len: u32,
}

impl Repr {
    /// Parses a checked header.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        Ok(Repr {
            va: packet.va(),
            rkey: packet.rkey(),
            dma_len: packet.dma_len(),
        })
    }

    /// 16.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes exactly `buffer_len()` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        packet.buffer.as_mut()[..HEADER_LEN].copy_from_slice(&self.to_bytes());
    }

    /// The 16 header bytes (what `emit` writes).
    #[inline]
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..8].copy_from_slice(&self.va.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..].copy_from_slice(&self.dma_len.to_be_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static HEADER: [u8; 16] = [
        0x00, 0x00, 0x55, 0x55, 0x12, 0x34, 0x50, 0x00, // VA
        0x00, 0x00, 0x12, 0x03, // rkey
        0x00, 0x00, 0x20, 0x00, // 8192 bytes
    ];

    const REPR: Repr = Repr {
        va: 0x5555_1234_5000,
        rkey: 0x1203,
        dma_len: 8192,
    };

    #[test]
    fn parses_header() {
        let packet = Packet::new_checked(&HEADER[..]).unwrap();
        assert_eq!(Repr::parse(&packet).unwrap(), REPR);
    }

    #[test]
    fn emits_header() {
        let mut buf = [0xa5u8; 17];
        REPR.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[..16], &HEADER[..]);
        assert_eq!(buf[16], 0xa5);
        assert_eq!(Packet::new_checked(&buf[..15]), Err(WireError::Truncated));
    }
}
