//! Immediate data (4 bytes): the `imm_data` of a SEND or RDMA WRITE with immediate, in network
//! order, delivered to the receiver's completion. This is the header only, not the completion.

use super::{read_u32, write_u32};

/// Length of the ImmDt header.
pub const HEADER_LEN: usize = 4;

fixed_header! {
    /// A parsed ImmDt.
    pub struct Repr {
        /// The immediate data as a number (network order on the wire).
        pub imm_data: u32 { at: 0, read: read_u32, write: write_u32, set: set_imm_data },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fixed_header_tests!(
        [0x12, 0x34, 0x56, 0x78],
        Repr {
            imm_data: 0x1234_5678
        }
    );
}
