//! Packet sequence numbers: 24-bit counters compared as serial numbers, and message sequence numbers.
//!
//! `Psn` deliberately has no `Ord`: on a 24-bit ring "less than" only means something within half
//! the ring, so comparisons go through [`Psn::cmp_serial`] and friends, as Linux rxe's
//! `psn_compare` does (sign of the 24-bit difference shifted into 32 bits).

use core::cmp::Ordering;
use core::fmt;

mod window;
pub use window::{PsnWindow, WINDOW as PSN_WINDOW};

/// The PSN space is 2^24.
pub const PSN_MODULUS: u32 = 1 << 24;
/// Mask for the low 24 bits.
pub const PSN_MASK: u32 = PSN_MODULUS - 1;

/// A 24-bit packet sequence number.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Psn(u32);

impl Psn {
    /// Builds a PSN from the low 24 bits of `value`.
    pub const fn new(value: u32) -> Self {
        Psn(value & PSN_MASK)
    }

    /// The 24-bit value.
    pub const fn value(self) -> u32 {
        self.0
    }

    /// `self + n` on the 24-bit ring.
    #[must_use]
    pub const fn add(self, n: u32) -> Self {
        Psn(self.0.wrapping_add(n) & PSN_MASK)
    }

    /// `self - n` on the 24-bit ring.
    #[must_use]
    pub const fn sub(self, n: u32) -> Self {
        Psn(self.0.wrapping_sub(n) & PSN_MASK)
    }

    /// The next PSN.
    #[must_use]
    pub const fn next(self) -> Self {
        self.add(1)
    }

    /// Signed distance from `other` to `self` (positive when `self` is ahead), in (-2^23, 2^23].
    pub const fn diff(self, other: Psn) -> i32 {
        // Shift the 24-bit difference into the top of an i32 and back: the sign bit is bit 23.
        ((self.0.wrapping_sub(other.0) << 8) as i32) >> 8
    }

    /// Serial-number comparison: `Less` when `self` is behind `other` within half the ring.
    pub const fn cmp_serial(self, other: Psn) -> Ordering {
        let d = self.diff(other);
        if d < 0 {
            Ordering::Less
        } else if d > 0 {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }

    /// `self` is strictly behind `other`.
    pub const fn before(self, other: Psn) -> bool {
        self.diff(other) < 0
    }

    /// `self` is strictly ahead of `other`.
    pub const fn after(self, other: Psn) -> bool {
        self.diff(other) > 0
    }
}

impl fmt::Debug for Psn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Psn({:#08x})", self.0)
    }
}

impl fmt::Display for Psn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A 24-bit message sequence number, as carried in the AETH.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
pub struct Msn(u32);

impl Msn {
    /// Builds an MSN from the low 24 bits of `value`.
    pub const fn new(value: u32) -> Self {
        Msn(value & PSN_MASK)
    }
    /// The 24-bit value.
    pub const fn value(self) -> u32 {
        self.0
    }
    /// The next MSN, wrapping at 2^24.
    #[must_use]
    pub const fn next(self) -> Self {
        Msn(self.0.wrapping_add(1) & PSN_MASK)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_wraps_at_24_bits() {
        assert_eq!(Psn::new(0xFF_FFFF).next(), Psn::new(0));
        assert_eq!(Psn::new(0).sub(1), Psn::new(0xFF_FFFF));
        assert_eq!(Psn::new(0x1_000_005).value(), 5);
    }

    #[test]
    fn psn_compares_as_serial_numbers_across_the_wrap() {
        let near_end = Psn::new(0xFF_FFF0);
        let after_wrap = Psn::new(0x10);
        assert!(near_end.before(after_wrap));
        assert!(after_wrap.after(near_end));
        assert_eq!(after_wrap.diff(near_end), 0x20);
        assert_eq!(near_end.diff(after_wrap), -0x20);
        assert_eq!(Psn::new(7).cmp_serial(Psn::new(7)), Ordering::Equal);
    }

    #[test]
    fn half_ring_distance_is_the_boundary() {
        let a = Psn::new(0);
        assert_eq!(Psn::new(0x7F_FFFF).diff(a), 0x7F_FFFF);
        assert_eq!(Psn::new(0x80_0000).diff(a), -0x80_0000);
    }

    #[test]
    fn msn_wraps_at_24_bits() {
        assert_eq!(Msn::new(0xFF_FFFF).next(), Msn::new(0));
    }
}
