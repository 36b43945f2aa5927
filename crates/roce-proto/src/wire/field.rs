//! The boilerplate shared by every fixed-length header view: a `Packet<T>` wrapper whose
//! `new_checked` proves the buffer holds `HEADER_LEN` bytes, so its accessors cannot panic.
//! Variable-length headers (Ethernet, IPv4, IPv6, UDP) write their own views.

/// Defines `pub struct Packet<T>` with `new_unchecked`, `new_checked`, `check_len`,
/// `into_inner` and `as_bytes`, checking against the module's `HEADER_LEN`.
macro_rules! fixed_header_view {
    ($what:literal) => {
        #[doc = concat!("A read/write view of ", $what, " in a byte buffer.")]
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct Packet<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> Packet<T> {
            /// Wraps a buffer without checking its length (accessors may then panic).
            pub const fn new_unchecked(buffer: T) -> Self {
                Packet { buffer }
            }

            /// Wraps a buffer after checking that it holds the whole header.
            pub fn new_checked(buffer: T) -> Result<Self, $crate::wire::WireError> {
                let packet = Self::new_unchecked(buffer);
                packet.check_len()?;
                Ok(packet)
            }

            /// `Err(Truncated)` when the buffer is shorter than [`HEADER_LEN`].
            pub fn check_len(&self) -> Result<(), $crate::wire::WireError> {
                if self.buffer.as_ref().len() < HEADER_LEN {
                    Err($crate::wire::WireError::Truncated)
                } else {
                    Ok(())
                }
            }

            /// The wrapped buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }

            /// The header bytes (the first [`HEADER_LEN`] bytes of the buffer).
            pub fn header_bytes(&self) -> &[u8] {
                &self.buffer.as_ref()[..HEADER_LEN]
            }
        }
    };
}
