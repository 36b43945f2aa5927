//! Wire formats of RoCEv2: zero-copy packet views and high-level `Repr`s, smoltcp style.
//!
//! Each header has a `Packet<T: AsRef<[u8]>>` view whose `new_checked` guarantees that no accessor
//! can panic, and a `Repr` whose `parse` validates and whose `emit` writes exactly `buffer_len()`
//! bytes. Nothing here allocates, does I/O or panics on input. Whole frames (Ethernet through
//! ICRC) are parsed and built by [`roce`]; this module holds no transport state.

#[macro_use]
mod field;

pub mod aeth;
pub mod arp;
pub mod atomic_ack_eth;
pub mod atomic_eth;
pub mod bth;
pub mod cnp;
pub mod deth;
mod ecn;
pub mod ethernet;
pub mod icrc;
pub mod ieth;
pub mod immdt;
pub mod int;
pub mod ipv4;
pub mod ipv6;
pub mod ndp;
pub mod opcode;
pub mod pfc;
pub mod placement;
pub mod pretty;
pub mod reth;
pub mod roce;
pub mod template;
pub mod udp;
pub mod view;

pub use ecn::{dscp, traffic_class, Ecn};
pub use ethernet::{EtherType, EthernetAddress, ParseMacError, VlanTag};
pub use icrc::{compute_icrc, verify_icrc, Icrc};
pub use ipv4::{Ipv4Cidr, ParseCidrError};
pub use opcode::{ExtHeaders, Opcode, OpcodeInfo, Position, Transport};
pub use roce::{set_frame_ecn, ExtRepr, IpRepr, RocePacket, RoceRepr};
pub use template::{FrameTemplate, PacketFields};
pub use view::{
    parse_frame, parse_frame_unverified, parse_view, parse_view_fast, parse_view_fast_with,
    parse_view_unverified, parse_view_with, RoceView,
};

/// The UDP destination port of RoCEv2.
pub const ROCE_UDP_PORT: u16 = 4791;

/// Offset in an untagged frame where the bytes the ICRC hashes begin: the 8 bytes of ones that
/// stand for the LRH overlay the Ethernet header's tail (see [`FrameTemplate::icrc_offset`]).
/// TX buffers are placed so this byte starts a cache line, which keeps crc32fast's 64-byte loads
/// from straddling lines (about 10% of the CRC time of a 4 KiB frame on AVX-512 machines).
pub const ICRC_LEAD: usize = ethernet::HEADER_LEN - icrc::LRH_LEN;

/// Why a buffer is not a valid (RoCEv2) packet, or cannot hold one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The buffer ends before the header (or the length a header announces) does.
    #[error("truncated packet")]
    Truncated,
    /// Not IPv4/IPv6 carrying UDP to port 4791 (or an Ethernet type we do not carry RoCE on).
    #[error("not a RoCEv2 packet")]
    NotRoce,
    /// A BTH opcode that is not in the opcode table.
    #[error("unknown or unsupported BTH opcode {0:#04x}")]
    BadOpcode(u8),
    /// Lengths disagree: IP vs UDP vs opcode headers, pad, or a payload where none is allowed.
    #[error("inconsistent lengths")]
    BadLength,
    /// BTH transport version other than 0, or an IP version that does not match the EtherType.
    #[error("bad version {0}")]
    BadVersion(u8),
    /// The invariant CRC does not match the packet.
    #[error("bad ICRC: expected {expected:#010x}, found {found:#010x}")]
    BadIcrc {
        /// The ICRC computed over the packet.
        expected: u32,
        /// The ICRC carried by the packet.
        found: u32,
    },
    /// The IPv4 header checksum does not match.
    #[error("bad IPv4 header checksum")]
    BadChecksum,
    /// IPv4 options or fragments, which RoCEv2 does not use and we do not carry.
    #[error("IPv4 options or fragmentation are not supported")]
    Unsupported,
    /// A `Repr` lacks an extension header its opcode requires (emit only).
    #[error("missing {0} for this opcode")]
    MissingHeader(&'static str),
    /// The output buffer is shorter than the packet to emit.
    #[error("buffer too small")]
    BufferTooSmall,
}

/// The field readers and writers, for `fixed_header!` tables to name.
pub(crate) mod field_io {
    // (Each table names only some of them.)
    #[allow(unused_imports)]
    pub(crate) use super::{
        read_u16, read_u24, read_u32, read_u64, write_u16, write_u24, write_u32, write_u64,
    };
}

/// Reads a big-endian `u16` at `at`; the caller has checked the length.
#[inline]
pub(crate) fn read_u16(data: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([data[at], data[at + 1]])
}

/// Reads a big-endian 24-bit number at `at`.
#[inline]
pub(crate) fn read_u24(data: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([0, data[at], data[at + 1], data[at + 2]])
}

/// Reads a big-endian `u32` at `at`.
#[inline]
pub(crate) fn read_u32(data: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]])
}

/// Reads a big-endian `u64` at `at`.
#[inline]
pub(crate) fn read_u64(data: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&data[at..at + 8]);
    u64::from_be_bytes(b)
}

/// The `N` bytes at `range` (`N` long); the caller has checked the length.
#[inline]
pub(crate) fn bytes_at<const N: usize>(data: &[u8], range: core::ops::Range<usize>) -> [u8; N] {
    let mut b = [0u8; N];
    b.copy_from_slice(&data[range]);
    b
}

/// Writes a big-endian `u16` at `at`.
#[inline]
pub(crate) fn write_u16(data: &mut [u8], at: usize, value: u16) {
    data[at..at + 2].copy_from_slice(&value.to_be_bytes());
}

/// Writes the low 24 bits of `value` big-endian at `at`.
#[inline]
pub(crate) fn write_u24(data: &mut [u8], at: usize, value: u32) {
    data[at..at + 3].copy_from_slice(&value.to_be_bytes()[1..]);
}

/// Writes a big-endian `u32` at `at`.
#[inline]
pub(crate) fn write_u32(data: &mut [u8], at: usize, value: u32) {
    data[at..at + 4].copy_from_slice(&value.to_be_bytes());
}

/// Writes a big-endian `u64` at `at`.
#[inline]
pub(crate) fn write_u64(data: &mut [u8], at: usize, value: u64) {
    data[at..at + 8].copy_from_slice(&value.to_be_bytes());
}

/// A test frame from hex digits (whitespace between them is ignored): exactly `N` bytes, or a
/// compile-time panic in a `static`.
#[cfg(test)]
pub(crate) const fn hex<const N: usize>(text: &str) -> [u8; N] {
    let text = text.as_bytes();
    let mut out = [0u8; N];
    let (mut i, mut digits) = (0, 0);
    while i < text.len() {
        let c = text[i];
        i += 1;
        let value = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b' ' | b'\n' => continue,
            _ => panic!("not a hex digit"),
        };
        assert!(digits < 2 * N, "more than N bytes");
        out[digits / 2] |= value << (4 * (1 - digits % 2));
        digits += 1;
    }
    assert!(digits == 2 * N, "fewer than N bytes");
    out
}

/// Asserts that `emit` writes exactly `expected` at the start of a buffer one byte longer, and
/// nothing past it.
#[cfg(test)]
pub(crate) fn assert_emits(expected: &[u8], emit: impl FnOnce(&mut [u8])) {
    let mut buf = vec![0xa5u8; expected.len() + 1];
    emit(&mut buf);
    assert_eq!(&buf[..expected.len()], expected);
    assert_eq!(buf[expected.len()], 0xa5, "wrote past the end");
}

/// The single-field fixed headers, both ways.
#[cfg(test)]
mod fixed_headers {
    fixed_header_tests! {
        ieth: [0x00, 0x00, 0x16, 0x0a] => Repr { rkey: 0x160a };
        immdt: [0x12, 0x34, 0x56, 0x78] => Repr { imm_data: 0x1234_5678 };
        atomic_ack_eth: [0, 0, 0, 0, 0, 0, 0x01, 0x02] => Repr { orig: 0x0102 };
    }
}
