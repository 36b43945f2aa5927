//! A sending rate in bits per second, as congestion controllers and the pacer exchange it.
//!
//! Plain integer bits/s: 400 Gbit/s needs 39 bits, so `u64` leaves ample headroom. Controllers may
//! compute in `f64` internally and hand out a [`Rate`] rounded to the nearest bit/s.

use core::fmt;

/// A rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Rate(u64);

impl Rate {
    /// Nothing may be sent.
    pub const ZERO: Rate = Rate(0);

    /// `bps` bits per second.
    pub const fn from_bps(bps: u64) -> Rate {
        Rate(bps)
    }
    /// `mbps` megabits (10^6 bits) per second.
    pub const fn from_mbps(mbps: u64) -> Rate {
        Rate(mbps.saturating_mul(1_000_000))
    }
    /// `gbps` gigabits (10^9 bits) per second.
    pub const fn from_gbps(gbps: u64) -> Rate {
        Rate(gbps.saturating_mul(1_000_000_000))
    }
    /// A rate from a float in bits/s, rounded to the nearest bit/s; negative or NaN gives zero.
    pub fn from_bps_f64(bps: f64) -> Rate {
        if bps.is_nan() || bps <= 0.0 {
            Rate(0)
        } else if bps >= u64::MAX as f64 {
            Rate(u64::MAX)
        } else {
            // Round half up without `f64::round`, which is a libm call on baseline x86-64.
            Rate((bps + 0.5) as u64)
        }
    }
    /// Bits per second.
    pub const fn as_bps(self) -> u64 {
        self.0
    }
    /// Bits per second as a float.
    pub fn as_bps_f64(self) -> f64 {
        self.0 as f64
    }
    /// Gigabits per second as a float, for reports.
    pub fn as_gbps_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Megabits per second as a float, for reports.
    pub fn as_mbps_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
}

/// `fraction` of `line`, in whole Mbit/s (at least 1): a default that the published settings
/// scale with the line rate.
pub(crate) fn mbps_of(line: Rate, fraction: f64) -> u32 {
    let mbps = line.as_mbps_f64() * fraction;
    if mbps >= f64::from(u32::MAX) {
        u32::MAX
    } else {
        // Round half up; `f64::round` is a libm call on baseline x86-64.
        ((mbps + 0.5) as u32).max(1)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bps = self.0 as f64;
        if bps >= 1e9 {
            write!(f, "{} Gbit/s", bps / 1e9)
        } else if bps >= 1e6 {
            write!(f, "{} Mbit/s", bps / 1e6)
        } else {
            write!(f, "{} bit/s", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_constructors_agree_and_round() {
        assert_eq!(Rate::from_gbps(100), Rate::from_mbps(100_000));
        assert_eq!(Rate::from_bps_f64(1.6), Rate::from_bps(2));
        assert_eq!(Rate::from_bps_f64(-3.0), Rate::ZERO);
        assert_eq!(Rate::from_gbps(25).to_string(), "25 Gbit/s");
    }
}
