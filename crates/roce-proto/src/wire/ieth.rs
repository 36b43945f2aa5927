//! The invalidate extended transport header (4 bytes): the R_Key a SEND with Invalidate asks the
//! responder to invalidate. Invalidation itself is the memory-region layer's job.

use super::{read_u32, write_u32};

/// Length of the IETH.
pub const HEADER_LEN: usize = 4;

fixed_header! {
    /// A parsed IETH.
    pub struct Repr {
        /// The R_Key to invalidate.
        pub rkey: u32 { at: 0, read: read_u32, write: write_u32, set: set_rkey },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fixed_header_tests!([0x00, 0x00, 0x16, 0x0a], Repr { rkey: 0x160a });
}
