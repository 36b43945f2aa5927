//! The RDMA extended transport header (16 bytes): remote virtual address, R_Key and DMA length.
//! Carried by RDMA WRITE First/Only and READ Request. Access checks live in the memory regions.

use super::{read_u32, read_u64, write_u32, write_u64};

/// Length of the RETH.
pub const HEADER_LEN: usize = 16;

fixed_header! {
    /// A parsed RETH.
    pub struct Repr {
        /// Remote virtual address.
        pub va: u64 { at: 0, read: read_u64, write: write_u64, set: set_va },
        /// Remote key.
        pub rkey: u32 { at: 8, read: read_u32, write: write_u32, set: set_rkey },
        /// Length of the whole RDMA operation in bytes.
        pub dma_len: u32 { at: 12, read: read_u32, write: write_u32, set: set_dma_len },
    }
}

impl Repr {
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

    fixed_header_tests!(HEADER, REPR);
}
