//! The timers of one queue pair in one small table (quinn-proto style), and the IBTA conversions
//! from the 5-bit `timeout` and RNR timer codes to durations.
//!
//! The table only remembers deadlines; the QP decides what an expiry means.

use crate::time::{Duration, Instant};

/// The timers a QP runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    /// Local ACK timeout: no response for the oldest outstanding request.
    AckTimeout = 0,
    /// RNR wait: the peer had no receive; resend when this fires.
    RnrRetry = 1,
    /// Selective repeat's reordering window: packets a NAK showed missing count as lost once
    /// it has passed.
    ReorderWindow = 2,
}

impl Timer {
    /// Every timer, in table order.
    pub const ALL: [Timer; 3] = [Timer::AckTimeout, Timer::RnrRetry, Timer::ReorderWindow];
}

/// Deadlines, one per [`Timer`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimerTable {
    deadlines: [Option<Instant>; 3],
}

impl TimerTable {
    /// Arms (or re-arms) `timer` for `at`.
    pub fn set(&mut self, timer: Timer, at: Instant) {
        self.deadlines[timer as usize] = Some(at);
    }
    /// Disarms `timer`.
    pub fn stop(&mut self, timer: Timer) {
        self.deadlines[timer as usize] = None;
    }
    /// The deadline of `timer`, if armed.
    pub fn get(&self, timer: Timer) -> Option<Instant> {
        self.deadlines[timer as usize]
    }
    /// `timer` is armed and its deadline has passed: disarms it and says so.
    pub fn take_expired(&mut self, timer: Timer, now: Instant) -> bool {
        match self.deadlines[timer as usize] {
            Some(at) if at <= now => {
                self.deadlines[timer as usize] = None;
                true
            }
            _ => false,
        }
    }
    /// The earliest armed deadline.
    pub fn next_timeout(&self) -> Option<Instant> {
        self.deadlines.iter().flatten().min().copied()
    }
    /// Disarms everything.
    pub fn stop_all(&mut self) {
        self.deadlines = [None; 3];
    }
}

/// Local ACK timeout for the 5-bit `timeout` attribute: 4.096 µs × 2^timeout; 0 means infinite.
pub fn ack_timeout(code: u8) -> Option<Duration> {
    if code == 0 {
        return None;
    }
    Some(Duration::from_nanos(4096 << u32::from(code.min(31))))
}

/// RNR NAK timer codes (IBTA table 45), in microseconds; code 0 is the longest, 655.36 ms.
const RNR_TIMER_US: [u64; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

/// The wait before resending after an RNR NAK carrying timer `code` (low 5 bits used).
pub fn rnr_timeout(code: u8) -> Duration {
    Duration::from_micros(RNR_TIMER_US[usize::from(code & 0x1f)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_timeout_doubles_per_step_from_4096_ns() {
        assert_eq!(ack_timeout(0), None);
        assert_eq!(ack_timeout(1), Some(Duration::from_nanos(8192)));
        assert_eq!(ack_timeout(14), Some(Duration::from_nanos(67_108_864)));
    }

    #[test]
    fn rnr_timer_follows_the_ibta_table() {
        assert_eq!(rnr_timeout(0), Duration::from_micros(655_360));
        assert_eq!(rnr_timeout(12), Duration::from_micros(640));
        assert_eq!(rnr_timeout(31), Duration::from_micros(491_520));
    }

    #[test]
    fn table_reports_the_earliest_deadline_and_expires_once() {
        let mut t = TimerTable::default();
        t.set(Timer::AckTimeout, Instant::from_nanos(50));
        t.set(Timer::RnrRetry, Instant::from_nanos(20));
        assert_eq!(t.next_timeout(), Some(Instant::from_nanos(20)));
        assert!(!t.take_expired(Timer::AckTimeout, Instant::from_nanos(49)));
        assert!(t.take_expired(Timer::AckTimeout, Instant::from_nanos(50)));
        assert!(!t.take_expired(Timer::AckTimeout, Instant::from_nanos(51)));
        assert_eq!(t.next_timeout(), Some(Instant::from_nanos(20)));
    }
}
