//! The atomic acknowledge extended transport header (8 bytes): the original remote value an
//! atomic CmpSwap or FetchAdd found. It follows the AETH of an Atomic Acknowledge.

fixed_header! {
    /// A parsed AtomicAckETH.
    pub struct Repr[8, "Length of the AtomicAckETH."] {
        /// The value the remote location held before the atomic operation.
        pub orig: u64 { at: 0, read: read_u64, write: write_u64, set: set_orig },
    }
}
