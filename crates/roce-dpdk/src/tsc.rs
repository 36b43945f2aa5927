//! A [`Clock`] reading the CPU's time-stamp counter through DPDK (`rte_get_tsc_cycles`), scaled
//! with the frequency EAL measured at start. Cheaper than `clock_gettime` on the fast path.

use dpdk_bindings as sys;

use super::eal::Eal;
use crate::clock::Clock;
use roce_proto::time::Instant;

/// TSC-based clock; its epoch is its creation.
#[derive(Clone, Copy, Debug)]
pub struct TscClock {
    start: u64,
    hz: u64,
}

impl TscClock {
    /// A clock starting at zero now.
    pub fn new(_eal: &Eal) -> Self {
        // SAFETY: EAL is running (it calibrated the TSC); both calls only read.
        let (start, hz) = unsafe { (sys::roce_shim_get_tsc_cycles(), sys::rte_get_tsc_hz()) };
        TscClock {
            start,
            hz: hz.max(1),
        }
    }

    /// Ticks per second.
    pub fn hz(&self) -> u64 {
        self.hz
    }
}

impl Clock for TscClock {
    fn now(&self) -> Instant {
        // SAFETY: reads the TSC; no preconditions.
        let cycles = unsafe { sys::roce_shim_get_tsc_cycles() }.wrapping_sub(self.start);
        let nanos = u128::from(cycles) * 1_000_000_000 / u128::from(self.hz);
        Instant::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}
