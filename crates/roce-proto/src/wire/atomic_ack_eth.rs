//! The atomic acknowledge extended transport header (8 bytes): the original remote value an
//! atomic CmpSwap or FetchAdd found. It follows the AETH of an Atomic Acknowledge.

use super::{read_u64, write_u64};

/// Length of the AtomicAckETH.
pub const HEADER_LEN: usize = 8;

fixed_header! {
    /// A parsed AtomicAckETH.
    pub struct Repr {
        /// The value the remote location held before the atomic operation.
        pub orig: u64 { at: 0, read: read_u64, write: write_u64, set: set_orig },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static HEADER: [u8; 8] = [0, 0, 0, 0, 0, 0, 0x01, 0x02];
    const REPR: Repr = Repr { orig: 0x0102 };

    fixed_header_tests!(HEADER, REPR);
}
