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
    use crate::wire::WireError;

    #[test]
    fn immediate_is_network_order_both_ways() {
        let bytes = [0x12, 0x34, 0x56, 0x78];
        let repr = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(repr.imm_data, 0x1234_5678);
        let mut buf = [0xa5u8; 5];
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, [0x12, 0x34, 0x56, 0x78, 0xa5]);
        assert_eq!(Packet::new_checked(&buf[..3]), Err(WireError::Truncated));
    }
}
