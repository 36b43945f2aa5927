//! A transmitter: one port's side of a link, shared by host NICs and switch ports. It serializes
//! one frame at a time at its line rate and keeps the per-priority PFC pause state others set
//! (a [`PauseState`], the one home of pause bookkeeping).
//!
//! Queues are not here (a switch port has eight, a NIC asks its engine); this is the wire end.

use std::collections::VecDeque;

use super::stats::PortCounters;
use crate::{LinkId, PktId};
use roce_proto::pause::PauseState;
use roce_proto::time::{Duration, Instant};
use roce_proto::wire::pfc::PRIORITIES;

/// Bytes on the wire around each frame besides the frame itself: preamble + SFD + IFG (20) + FCS (4).
pub const WIRE_OVERHEAD: u64 = 24;
/// Frames shorter than this (without FCS) are padded on the wire.
pub const MIN_FRAME: u64 = 60;

/// Wire bytes one frame of `len` bytes (without FCS) occupies.
pub fn wire_bytes(len: usize) -> u64 {
    (len as u64).max(MIN_FRAME) + WIRE_OVERHEAD
}

/// Picoseconds in a second times bits in a byte.
const BIT_PS: u64 = 8 * 1_000_000_000_000;

/// Picoseconds per byte at `rate_bps` when that is a whole number, else 0.
fn ps_per_byte(rate_bps: u64) -> u64 {
    match rate_bps {
        0 => 0,
        r if BIT_PS % r == 0 => BIT_PS / r,
        _ => 0,
    }
}

/// One transmitter. `repr(C)`, in the order a frame's hop reads it: what `transmit` and
/// `settle` touch first (one cache line), then the pause state, the counters last. The default
/// layout put `busy` after the 1.2 KB of counters, a line of its own on every hop.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct TxPort {
    /// The end of the frame on the wire, when its `TxDone` was not scheduled because the port
    /// had nothing else to send: the event's sort key (time, tie key). Whoever queues onto
    /// the port first settles it (`Transit::settle`).
    pub done: Option<u128>,
    /// The link this port sends on.
    pub link: Option<LinkId>,
    /// Line rate, bits per second (set it with [`TxPort::set_rate`]).
    pub rate_bps: u64,
    /// Picoseconds of serialization time carried over between frames (keeps long runs exact).
    carry_ps: u64,
    /// Picoseconds per wire byte when the rate divides 8 Tbit/s evenly (every standard rate):
    /// the serialization time is then a multiply, not a division per frame. 0 otherwise.
    ps_per_byte: u64,
    /// A scheduled wake-up for the end of a pause, if any.
    pub pause_wake: Option<Instant>,
    /// A frame is on the wire (or its end was not scheduled: see `done`).
    pub busy: bool,
    /// The port's MAC address (source of its PFC frames).
    pub mac: [u8; 6],
    /// Control frames (PFC) waiting; they go before any data and ignore pauses.
    pub ctrl: VecDeque<PktId>,
    /// The PFC pauses the link partner sent, per priority (quanta count at `rate_bps`).
    pause: PauseState,
    /// Counters.
    pub counters: PortCounters,
}

impl TxPort {
    pub fn new(rate_bps: u64, mac: [u8; 6]) -> Self {
        TxPort {
            link: None,
            rate_bps,
            carry_ps: 0,
            ps_per_byte: ps_per_byte(rate_bps),
            busy: false,
            done: None,
            pause: PauseState::new(rate_bps),
            pause_wake: None,
            ctrl: VecDeque::new(),
            mac,
            counters: PortCounters::default(),
        }
    }

    /// Sets the line rate (when the port is cabled, before any pause arrives).
    pub fn set_rate(&mut self, rate_bps: u64) {
        self.rate_bps = rate_bps;
        self.ps_per_byte = ps_per_byte(rate_bps);
        self.pause = PauseState::new(rate_bps);
    }

    /// Serialization time of a `len`-byte frame in whole nanoseconds, carrying the remainder.
    pub fn serialization_time(&mut self, len: usize) -> Duration {
        let exact = match self.ps_per_byte {
            0 => wire_bytes(len) * BIT_PS / self.rate_bps.max(1),
            per_byte => wire_bytes(len) * per_byte,
        };
        let ps = exact + self.carry_ps;
        self.carry_ps = ps % 1000;
        Duration::from_nanos(ps / 1000)
    }

    /// Whether `prio` may send at `now`.
    pub fn is_paused(&self, prio: usize, now: Instant) -> bool {
        self.pause.is_paused(prio, now)
    }

    /// Applies a received pause of `quanta` for `prio` (`0` resumes); the pause state counts
    /// the frame.
    pub fn apply_pause(&mut self, prio: usize, now: Instant, quanta: u16) {
        self.pause.apply(prio, now, quanta);
    }

    /// Counts a pause frame for `prio` without obeying it (a stormed queue's watchdog).
    pub fn count_pause(&mut self, prio: usize) {
        self.pause.count_frame(prio);
    }

    /// Ends the pause standing on `prio` at `now` without a frame (a watchdog stops honouring
    /// it).
    pub fn lift_pause(&mut self, prio: usize, now: Instant) {
        self.pause.lift(prio, now);
    }

    /// Time `prio` has been paused up to `now`.
    pub fn paused(&self, prio: usize, now: Instant) -> Duration {
        self.pause.paused(prio, now)
    }

    /// Earliest end among the pauses of the priorities in `waiting` (bit mask), if any is paused.
    pub fn earliest_resume(&self, waiting: u8, now: Instant) -> Option<Instant> {
        (0..PRIORITIES)
            .filter(|&p| waiting & (1 << p) != 0)
            .filter_map(|p| self.pause.paused_until(p, now))
            .min()
    }

    /// Counters with what the pause state keeps filled in: pause frames received, and
    /// pause durations up to `now` (in the counters' nanoseconds).
    pub fn counters_at(&self, now: Instant) -> PortCounters {
        let mut c = self.counters;
        for (p, pc) in c.prio.iter_mut().enumerate() {
            pc.pause_received = self.pause.frames(p);
            pc.pause_ns = self.paused(p, now).as_nanos();
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_of_1500_byte_frames_at_100g_is_exact_over_many_frames() {
        let mut port = TxPort::new(100_000_000_000, [0; 6]);
        let total: u64 = (0..1000)
            .map(|_| port.serialization_time(1500).as_nanos())
            .sum();
        // (1500 + 24) * 8 bits / 100 Gbit/s = 121.92 ns per frame.
        assert_eq!(total, 121_920);
        // The multiply (rates dividing 8 Tbit/s) and the division give the same times.
        for rate in [400_000_000_000, 25_000_000_000, 3_000_000_000, 7] {
            let mut port = TxPort::new(rate, [0; 6]);
            let mut carry = 0;
            for len in [60, 1500, 4096, 9000, 1] {
                let ps = wire_bytes(len) * BIT_PS / rate + carry;
                carry = ps % 1000;
                let want = Duration::from_nanos(ps / 1000);
                assert_eq!(port.serialization_time(len), want, "{rate} {len}");
            }
        }
    }

    #[test]
    fn pause_time_accumulates_across_periods_and_resume() {
        // One quantum is 512 bit times: 51.2 ns at 10 Gbit/s, rounded up to 52.
        let mut port = TxPort::new(10_000_000_000, [0; 6]);
        let t = Instant::from_nanos;
        port.apply_pause(3, t(100), 1);
        assert!(port.is_paused(3, t(120)));
        port.apply_pause(3, t(120), 0); // XON at 120
        assert!(!port.is_paused(3, t(120)));
        port.apply_pause(3, t(200), 1);
        assert_eq!(port.paused(3, t(1000)), Duration::from_nanos(20 + 52));
        assert_eq!(port.paused(3, t(210)), Duration::from_nanos(20 + 10));
        let c = port.counters_at(t(210)).prio[3];
        assert_eq!((c.pause_received, c.pause_ns), (3, 30));
        assert_eq!(port.earliest_resume(1 << 3, t(210)), Some(t(252)));
        assert_eq!(port.earliest_resume(1 << 2, t(210)), None);
    }
}
