//! Clocks for drivers: where the runtime loop reads `now` before handing it to the sans-IO core.
//! The core itself never reads a clock. The TSC clock lives in `driver::dpdk` (it needs EAL).

use roce_proto::time::Instant;

/// A source of [`Instant`]s, monotonic, with an epoch of the implementor's choosing.
pub trait Clock {
    /// The time now.
    fn now(&self) -> Instant;
}

/// `std::time::Instant`-based clock (`CLOCK_MONOTONIC`); its epoch is its creation.
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    start: std::time::Instant,
}

impl MonotonicClock {
    /// A clock starting at zero now.
    pub fn new() -> Self {
        MonotonicClock {
            start: std::time::Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Instant {
        let nanos = self.start.elapsed().as_nanos();
        Instant::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> Instant {
        (**self).now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clock_never_goes_back() {
        let c = MonotonicClock::new();
        let a = c.now();
        let b = c.now();
        assert!(b >= a);
    }
}
