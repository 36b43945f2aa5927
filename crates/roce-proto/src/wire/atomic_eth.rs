//! The atomic extended transport header (28 bytes) of CmpSwap and FetchAdd requests: remote
//! address, R_Key, swap (or add) value and compare value. Alignment checks are the responder's.

use super::{read_u32, read_u64, write_u32, write_u64};

/// Length of the AtomicETH.
pub const HEADER_LEN: usize = 28;

fixed_header! {
    /// A parsed AtomicETH.
    pub struct Repr {
        /// Remote virtual address (8-byte aligned for a valid request).
        pub va: u64 { at: 0, read: read_u64, write: write_u64, set: set_va },
        /// Remote key.
        pub rkey: u32 { at: 8, read: read_u32, write: write_u32, set: set_rkey },
        /// Swap value (CmpSwap) or addend (FetchAdd).
        pub swap_add: u64 { at: 12, read: read_u64, write: write_u64, set: set_swap_add },
        /// Compare value (CmpSwap only).
        pub compare: u64 { at: 20, read: read_u64, write: write_u64, set: set_compare },
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

    fixed_header_tests!(HEADER, REPR);
}
