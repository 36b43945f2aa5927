//! Wire formats of RoCEv2: zero-copy packet views and high-level `Repr`s, smoltcp style.
//!
//! Each header has a `Packet<T: AsRef<[u8]>>` view whose `new_checked` guarantees that no accessor
//! can panic, and a `Repr` whose `parse` validates and whose `emit` writes exactly `buffer_len()`
//! bytes. Nothing here allocates, does I/O or panics on input.
