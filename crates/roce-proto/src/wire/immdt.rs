//! Immediate data (4 bytes): the `imm_data` of a SEND or RDMA WRITE with immediate, in network
//! order, delivered to the receiver's completion. This is the header only, not the completion.

fixed_header! {
    /// A parsed ImmDt.
    pub struct Repr[4, "Length of the ImmDt header."] {
        /// The immediate data as a number (network order on the wire).
        pub imm_data: u32 { at: 0, read: read_u32, write: write_u32, set: set_imm_data },
    }
}
