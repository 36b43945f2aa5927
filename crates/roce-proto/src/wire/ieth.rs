//! The invalidate extended transport header (4 bytes): the R_Key a SEND with Invalidate asks the
//! responder to invalidate. Invalidation itself is the memory-region layer's job.

fixed_header! {
    /// A parsed IETH.
    pub struct Repr[4, "Length of the IETH."] {
        /// The R_Key to invalidate.
        pub rkey: u32 { at: 0, read: read_u32, write: write_u32, set: set_rkey },
    }
}
