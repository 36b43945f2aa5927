//! Time as the sans-IO core sees it: plain nanosecond counts handed in by a driver.
//!
//! The core never reads a clock. Drivers (TSC or monotonic clock for DPDK, the virtual clock of
//! the fabric, tests) pass `now` as an [`Instant`]; durations are [`Duration`]s. Both are `u64`
//! nanoseconds, which covers 584 years of run time.

use core::ops::{Add, AddAssign, Div, Sub};

/// A point in time, in nanoseconds since an arbitrary epoch chosen by the driver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(u64);

impl Instant {
    /// The driver's epoch.
    pub const ZERO: Instant = Instant(0);
    /// A time later than any real event; useful as "no deadline".
    pub const FAR_FUTURE: Instant = Instant(u64::MAX);

    /// An instant `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Time elapsed since `earlier`, or zero if `earlier` is later.
    pub const fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);
    /// The longest representable span.
    pub const MAX: Duration = Duration(u64::MAX);
    /// The shortest span that is not zero: the clock's resolution.
    pub const NANOSECOND: Duration = Duration(1);

    /// `nanos` nanoseconds.
    pub const fn from_nanos(nanos: u64) -> Self {
        Duration(nanos)
    }
    /// `micros` microseconds.
    pub const fn from_micros(micros: u64) -> Self {
        Duration(micros.saturating_mul(1_000))
    }
    /// `millis` milliseconds.
    pub const fn from_millis(millis: u64) -> Self {
        Duration(millis.saturating_mul(1_000_000))
    }
    /// `secs` seconds.
    pub const fn from_secs(secs: u64) -> Self {
        Duration(secs.saturating_mul(1_000_000_000))
    }
    /// `micros` microseconds given as a float (a setting in a file), truncated to whole
    /// nanoseconds: saturating at [`Duration::MAX`], and zero for a negative or NaN value.
    pub fn from_micros_f64(micros: f64) -> Self {
        // `as` truncates toward zero and saturates (NaN gives 0).
        Duration((micros * 1000.0) as u64)
    }
    /// [`Duration::from_micros_f64`] rounded to the nearest nanosecond (halves away from
    /// zero) instead of truncated.
    pub fn from_micros_f64_rounded(micros: f64) -> Self {
        Duration((micros * 1000.0).round() as u64)
    }
    /// Whole nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds as a float, for reports.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Microseconds as a float, for reports.
    pub fn as_micros_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
    /// Multiplies, saturating at [`Duration::MAX`].
    pub const fn saturating_mul(self, n: u64) -> Duration {
        Duration(self.0.saturating_mul(n))
    }
    /// How many whole `step`s fit in this span (a zero `step` counts as one nanosecond).
    pub const fn div_floor(self, step: Duration) -> u64 {
        self.0 / nonzero(step.0)
    }
    /// How many `step`s it takes to cover this span (a zero `step` counts as one
    /// nanosecond).
    pub const fn div_ceil(self, step: Duration) -> u64 {
        self.0.div_ceil(nonzero(step.0))
    }
}

/// `n`, or 1 for 0 (a divisor).
const fn nonzero(n: u64) -> u64 {
    if n == 0 {
        1
    } else {
        n
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, rhs: Duration) -> Instant {
        Instant(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturating: an earlier minus a later instant is zero, never a panic.
    fn sub(self, rhs: Instant) -> Duration {
        self.saturating_since(rhs)
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    /// Saturating: going back past the epoch gives the epoch.
    fn sub(self, rhs: Duration) -> Instant {
        Instant(self.0.saturating_sub(rhs.0))
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, rhs: Duration) -> Duration {
        Duration(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Duration {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub for Duration {
    type Output = Duration;
    fn sub(self, rhs: Duration) -> Duration {
        Duration(self.0.saturating_sub(rhs.0))
    }
}

impl core::iter::Sum for Duration {
    /// Saturating, as `+` is.
    fn sum<I: Iterator<Item = Duration>>(iter: I) -> Duration {
        iter.fold(Duration::ZERO, |sum, d| sum + d)
    }
}

impl Div<u64> for Duration {
    type Output = Duration;
    /// Whole nanoseconds of the `n`th part; panics if `n` is zero, as integer division does.
    fn div(self, n: u64) -> Duration {
        Duration(self.0 / n)
    }
}

impl From<Duration> for core::time::Duration {
    fn from(d: Duration) -> Self {
        core::time::Duration::from_nanos(d.0)
    }
}

impl From<core::time::Duration> for Duration {
    fn from(d: core::time::Duration) -> Self {
        Duration(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instant_arithmetic_saturates_instead_of_panicking() {
        let a = Instant::from_nanos(10);
        let b = Instant::from_nanos(25);
        assert_eq!(b - a, Duration::from_nanos(15));
        assert_eq!(a - b, Duration::ZERO);
        assert_eq!(
            Instant::FAR_FUTURE + Duration::from_secs(1),
            Instant::FAR_FUTURE
        );
        assert_eq!(Duration::from_micros(3).as_nanos(), 3_000);
        assert_eq!(b - Duration::from_nanos(5), Instant::from_nanos(20));
        assert_eq!(a - Duration::from_nanos(11), Instant::ZERO);
    }

    #[test]
    fn float_micros_truncate_or_round_and_saturate() {
        let ns = |d: Duration| d.as_nanos();
        assert_eq!(ns(Duration::from_micros_f64(1.5)), 1_500);
        // 0.0013 µs is 1.3 ns: truncated to 1, rounded to 1; 2.5009 ns rounds to 3.
        assert_eq!(ns(Duration::from_micros_f64(0.0013)), 1);
        assert_eq!(ns(Duration::from_micros_f64(0.0025009)), 2);
        assert_eq!(ns(Duration::from_micros_f64_rounded(0.0025009)), 3);
        assert_eq!(ns(Duration::from_micros_f64_rounded(0.0013)), 1);
        // Exactly what `(us * 1000.0) as u64` gives, float error included.
        for us in [0.1, 0.3, 2.675, 1e-3, 123.456_789, 4.35] {
            assert_eq!(
                ns(Duration::from_micros_f64(us)),
                (us * 1000.0) as u64,
                "{us}"
            );
            let rounded = (us * 1000.0).round() as u64;
            assert_eq!(ns(Duration::from_micros_f64_rounded(us)), rounded, "{us}");
        }
        for bad in [-1.0, f64::NAN, f64::NEG_INFINITY, -0.0] {
            assert_eq!(Duration::from_micros_f64(bad), Duration::ZERO, "{bad}");
            assert_eq!(
                Duration::from_micros_f64_rounded(bad),
                Duration::ZERO,
                "{bad}"
            );
        }
        assert_eq!(Duration::from_micros_f64(f64::INFINITY), Duration::MAX);
        assert_eq!(Duration::from_micros_f64_rounded(1e300), Duration::MAX);
    }

    #[test]
    fn spans_divide_into_whole_and_covering_steps() {
        let (span, step) = (Duration::from_nanos(10), Duration::from_nanos(4));
        assert_eq!((span.div_floor(step), span.div_ceil(step)), (2, 3));
        assert_eq!(Duration::from_nanos(8).div_ceil(step), 2);
        assert_eq!(span.div_floor(Duration::ZERO), 10, "a zero step is 1 ns");
        assert_eq!(span.div_ceil(Duration::ZERO), 10);
        assert_eq!(Duration::from_nanos(11) / 2, Duration::from_nanos(5));
        let spans = [Duration::MAX, Duration::NANOSECOND];
        assert_eq!(spans.into_iter().sum::<Duration>(), Duration::MAX);
    }
}
