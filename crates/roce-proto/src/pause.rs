//! What a transmitter knows about the PFC pauses its link partner sent: per priority, until when
//! it must hold frames, how long it has been held in total, and how many pause frames arrived.
//! Counters carry the names NICs give them (mlx5: `rx_prio<p>_pause`,
//! `rx_prio<p>_pause_duration`).
//!
//! Sans-IO: a driver hands received frames to [`PauseState::on_frame`] and asks
//! [`PauseState::is_paused`] with the [`priority`](crate::wire::pfc::priority) of a frame before
//! it sends it. The frame format and the priority rule are [`crate::wire::pfc`]'s.
//!
//! This is the one count of received pause frames: the fabric's ports and the real-time switch
//! read theirs from here ([`PauseState::frames`], [`PauseState::total_frames`]).

use crate::time::{Duration, Instant};
use crate::wire::pfc::{quanta_to_nanos, PauseRepr, PRIORITIES};

/// Per-priority pause state of one transmitter.
#[derive(Clone, Debug)]
pub struct PauseState {
    /// Bits per second the pause quanta are counted at (the link's rate).
    link_bps: u64,
    paused_until: [Option<Instant>; PRIORITIES],
    since: [Instant; PRIORITIES],
    closed_ns: [u64; PRIORITIES],
    frames: [u64; PRIORITIES],
}

impl PauseState {
    /// A transmitter on a link of `link_bps` (one quantum is 512 bit times at that rate).
    pub fn new(link_bps: u64) -> Self {
        PauseState {
            link_bps: link_bps.max(1),
            paused_until: [None; PRIORITIES],
            since: [Instant::ZERO; PRIORITIES],
            closed_ns: [0; PRIORITIES],
            frames: [0; PRIORITIES],
        }
    }

    /// Takes `frame` if it is a PFC frame (returns true: it is for the MAC, not for the engine),
    /// applying the pause or resume of every priority it enables.
    pub fn on_frame(&mut self, now: Instant, frame: &[u8]) -> bool {
        let Some(pause) = PauseRepr::parse(frame) else {
            return false;
        };
        for (prio, quanta) in pause.quanta.iter().enumerate() {
            if let Some(q) = quanta {
                self.apply(prio, now, *q);
            }
        }
        true
    }

    /// Pauses `prio` for `quanta` (0 resumes it at once).
    pub fn apply(&mut self, prio: usize, now: Instant, quanta: u16) {
        if prio >= PRIORITIES {
            return;
        }
        self.frames[prio] += 1;
        let was_paused = self.is_paused(prio, now);
        if !was_paused {
            // The previous period (if any) ended on its own; count it whole.
            self.close(prio, now);
            self.since[prio] = now;
        }
        let ns = quanta_to_nanos(quanta, self.link_bps);
        if quanta == 0 {
            self.closed_ns[prio] += now.saturating_since(self.since[prio]).as_nanos();
            self.paused_until[prio] = None;
        } else {
            self.paused_until[prio] = Some(now + Duration::from_nanos(ns));
        }
    }

    /// Counts a pause frame for `prio` that is not obeyed (a PFC watchdog that stopped
    /// honouring the priority still sees, and counts, what its link partner sends).
    pub fn count_frame(&mut self, prio: usize) {
        if let Some(f) = self.frames.get_mut(prio) {
            *f += 1;
        }
    }

    /// Ends the pause of `prio` standing at `now`, if any, without a frame (a PFC watchdog
    /// that stops honouring it): its time so far still counts.
    pub fn lift(&mut self, prio: usize, now: Instant) {
        if prio >= PRIORITIES || !self.is_paused(prio, now) {
            return;
        }
        self.closed_ns[prio] += now.saturating_since(self.since[prio]).as_nanos();
        self.paused_until[prio] = None;
    }

    fn close(&mut self, prio: usize, now: Instant) {
        if let Some(until) = self.paused_until[prio].take() {
            let end = if until < now { until } else { now };
            self.closed_ns[prio] += end.saturating_since(self.since[prio]).as_nanos();
        }
    }

    /// Whether frames of `prio` must wait at `now`.
    pub fn is_paused(&self, prio: usize, now: Instant) -> bool {
        self.paused_until
            .get(prio)
            .copied()
            .flatten()
            .is_some_and(|u| u > now)
    }

    /// When the pause of `prio` ends, if it is paused at `now`.
    pub fn paused_until(&self, prio: usize, now: Instant) -> Option<Instant> {
        self.paused_until
            .get(prio)
            .copied()
            .flatten()
            .filter(|u| *u > now)
    }

    /// Pause frames received that enabled `prio` (mlx5 `rx_prio<p>_pause`).
    pub fn frames(&self, prio: usize) -> u64 {
        self.frames.get(prio).copied().unwrap_or(0)
    }

    /// Pause frames received in total (each counted once per priority it enables).
    pub fn total_frames(&self) -> u64 {
        self.frames.iter().sum()
    }

    /// Time `prio` has been held up to `now` (mlx5 `rx_prio<p>_pause_duration`, there in µs).
    pub fn paused(&self, prio: usize, now: Instant) -> Duration {
        let Some(&closed) = self.closed_ns.get(prio) else {
            return Duration::ZERO;
        };
        let open = self.paused_until[prio].map_or(0, |until| {
            let end = if until < now { until } else { now };
            end.saturating_since(self.since[prio]).as_nanos()
        });
        Duration::from_nanos(closed + open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GBPS_100: u64 = 100_000_000_000;

    fn at(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    #[test]
    fn a_pause_holds_its_priority_for_its_quanta_and_xon_ends_it() {
        let mut p = PauseState::new(GBPS_100);
        let mut xoff = [0u8; 60];
        PauseRepr::single([2; 6], 3, 1000).emit(&mut xoff);
        assert!(p.on_frame(at(1_000), &xoff));
        // 1000 quanta x 512 bits at 100 Gbit/s = 5.12 us.
        assert!(p.is_paused(3, at(6_119)));
        assert!(!p.is_paused(3, at(6_120)));
        assert!(!p.is_paused(6, at(2_000)), "other priorities flow");
        assert_eq!(p.paused(3, at(10_000)), Duration::from_nanos(5_120));
        // Paused again, then resumed early by XON.
        p.apply(3, at(20_000), 0xffff);
        p.apply(3, at(21_000), 0);
        assert!(!p.is_paused(3, at(21_000)));
        assert_eq!(p.paused(3, at(30_000)), Duration::from_nanos(6_120));
        assert_eq!(p.frames(3), 3);
        assert_eq!(p.total_frames(), 3);
    }

    #[test]
    fn a_refresh_extends_the_pause_without_counting_time_twice() {
        let mut p = PauseState::new(GBPS_100);
        p.apply(3, at(0), 1000);
        p.apply(3, at(2_000), 1000);
        assert_eq!(p.paused_until(3, at(3_000)), Some(at(7_120)));
        assert_eq!(p.paused(3, at(100_000)), Duration::from_nanos(7_120));
    }

    #[test]
    fn a_lifted_pause_ends_at_once_and_keeps_its_time_and_frames() {
        let mut p = PauseState::new(GBPS_100);
        p.apply(3, at(1_000), 0xffff);
        p.lift(3, at(4_000));
        assert!(!p.is_paused(3, at(4_000)));
        assert_eq!(p.paused(3, at(50_000)), Duration::from_nanos(3_000));
        p.count_frame(3);
        assert!(!p.is_paused(3, at(5_000)), "a counted frame does not pause");
        assert_eq!(p.frames(3), 2);
        // Lifting what is not paused changes nothing.
        p.lift(3, at(6_000));
        assert_eq!(p.paused(3, at(50_000)), Duration::from_nanos(3_000));
    }

    #[test]
    fn other_frames_are_not_taken_nor_counted() {
        let mut p = PauseState::new(GBPS_100);
        let mut ipv4 = vec![0u8; 60];
        ipv4[12..14].copy_from_slice(&crate::wire::ethernet::ETHERTYPE_IPV4.to_be_bytes());
        ipv4[15] = 26 << 2 | 0b10;
        assert!(!p.on_frame(at(0), &ipv4));
        assert_eq!(p.total_frames(), 0);
    }
}
