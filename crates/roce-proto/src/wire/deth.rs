//! The datagram extended transport header (8 bytes) of UD packets: Q_Key and source QPN.
//! The reserved byte is written as zero and ignored when read.

use super::{read_u24, read_u32, write_u24, write_u32};

/// Length of the DETH.
pub const HEADER_LEN: usize = 8;

fixed_header! {
    /// A parsed DETH.
    pub struct Repr {
        /// Queue key.
        pub qkey: u32 { at: 0, read: read_u32, write: write_u32, set: set_qkey },
        /// Source QP number (24 bits).
        pub src_qpn: u32 { at: 5, read: read_u24, write: write_qpn, set: set_src_qpn },
    }
}

/// Writes the 24-bit QPN at `at` and zeroes the reserved byte before it.
fn write_qpn(buffer: &mut [u8], at: usize, value: u32) {
    buffer[at - 1] = 0;
    write_u24(buffer, at, value);
}

#[cfg(test)]
mod tests {
    use super::*;

    static HEADER: [u8; 8] = [0x11, 0x11, 0x11, 0x11, 0x00, 0x00, 0x00, 0x12];
    const REPR: Repr = Repr {
        qkey: 0x1111_1111,
        src_qpn: 0x12,
    };

    fixed_header_tests!(HEADER, REPR);
}
