//! A PFC watchdog, as switch vendors ship it (SONiC `pfcwd`, Arista, Cisco and NVIDIA Spectrum
//! "PFC watchdog"): it notices a lossless egress queue that holds packets but cannot send
//! because its link partner keeps it paused (a PFC storm: a stuck NIC, a deadlock), and stops
//! honouring that partner's pauses on that priority until they have stopped for a while.
//!
//! What is modelled, per egress port and lossless priority (SONiC's `PFC_WD` table keys):
//! - **Detection** after `detect_us` of the queue being *stuck*: paused the whole time, at
//!   least one packet queued, none sent (SONiC's Lua: occupancy > 0, no packet sent, pause frames
//!   received, sustained for `detection_time`). The watchdog here is exact in virtual time:
//!   a stuck spell is noticed when it starts (a pause frame arriving for a non-empty queue, or a
//!   packet queued behind a pause) and checked once when `detect_us` has passed, instead of
//!   being polled every 100-200 ms as SONiC does, so it fires exactly `detect_us` after the
//!   spell began. Nothing is done, and no event is scheduled, for a switch without it.
//! - **Mitigation**, the `action`: `drop` (SONiC's default) drops what the queue holds, ignores
//!   pauses for that priority on that port while the storm lasts, and drops every packet of
//!   the priority bound for the port or arriving on it (SONiC's zero-buffer egress profile and
//!   ingress ACL); `forward` ignores the pauses and keeps sending; `alert` only counts.
//! - **Restoration** once no pause frame has arrived for that priority on that port for
//!   `restore_us` (SONiC's `pfc_restore.lua`: the port's PFC RX counter has not moved for
//!   `restoration_time`); from then on pauses are honoured again.
//!
//! Assumed: restoration is timed from the detection (as if the last pause frame arrived then);
//! a switch reboot forgets the watchdog's state with its buffer; SONiC's limits on the times
//! (detection 100-5000 ms, restoration 100-60000 ms) are not enforced, so that a simulation of
//! a few milliseconds can study storms. Counters (storms detected and restored, packets the
//! watchdog dropped) are the port's, kept by the fabric.
//!
//! This is the state machine alone: the driver tells it what it sees ([`Stuck`]) and schedules
//! the checks it asks for.

use serde::{Deserialize, Serialize};

use roce_proto::time::{Duration, Instant};
use roce_proto::wire::pfc::PRIORITIES;

/// What the watchdog does to a stormed queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WatchdogAction {
    /// Drop the queue's packets, ignore the pauses, drop new packets of the priority bound for
    /// the port or arriving on it.
    #[default]
    Drop,
    /// Ignore the pauses and keep sending.
    Forward,
    /// Count the storm, change nothing.
    Alert,
}

/// A switch's PFC watchdog (`[switch.pfc_watchdog]` in a scenario file).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcWatchdog {
    /// How long a lossless queue must be stuck (paused, holding packets, sending none) before
    /// it is declared stormed, µs (SONiC `detection_time`, there in ms).
    pub detect_us: f64,
    /// How long after the last pause frame a stormed queue is restored, µs (SONiC
    /// `restoration_time`).
    pub restore_us: f64,
    /// What to do with a stormed queue (default `drop`).
    #[serde(default)]
    pub action: WatchdogAction,
}

impl PfcWatchdog {
    /// Why the times cannot be used, if they cannot (each must be positive and finite).
    pub fn check(&self) -> Result<(), String> {
        for (name, v) in [
            ("detect_us", self.detect_us),
            ("restore_us", self.restore_us),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("pfc_watchdog.{name} must be positive, got {v}"));
            }
        }
        Ok(())
    }
}

/// What the driver sees of one egress queue now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stuck {
    /// The transmitter is paused for the priority now.
    pub paused: bool,
    /// Time the transmitter has been paused for the priority so far (it grows as fast as the
    /// clock while the pause holds without a break).
    pub paused_total: Duration,
    /// Frames the port has sent on the priority so far.
    pub sent: u64,
    /// The queue holds a packet.
    pub queued: bool,
}

/// What a check decided (see [`Watchdog::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing to do (a stale check, or a spell that ended).
    Nothing,
    /// Check again at this time.
    Again(Instant),
    /// The queue is stormed now: act, count it, and check for restoration at this time.
    Storm(Instant),
    /// The storm is over: honour pauses again, count it.
    Restored,
}

/// One egress queue's watch.
#[derive(Clone, Copy, Debug, Default)]
struct QueueWatch {
    /// When the current stuck spell began, with the pause total and sent count then.
    since: Option<(Instant, Duration, u64)>,
    /// The check scheduled for this queue (one at a time; others are stale).
    pending: Option<Instant>,
    /// Declared stormed and not yet restored.
    stormed: bool,
    /// The last pause frame for the priority while stormed.
    last_pause: Instant,
}

/// The watchdog of one switch: a watch per port and priority.
#[derive(Clone, Debug)]
pub struct Watchdog {
    cfg: PfcWatchdog,
    detect: Duration,
    restore: Duration,
    queues: Vec<[QueueWatch; PRIORITIES]>,
    /// Per port, bit `p` set while priority `p` is stormed (what each packet asks).
    stormed: Vec<u8>,
}

impl Watchdog {
    /// A watchdog with `cfg` and no ports yet.
    pub fn new(cfg: PfcWatchdog) -> Self {
        Watchdog {
            detect: Duration::from_micros_f64(cfg.detect_us).max(Duration::NANOSECOND),
            restore: Duration::from_micros_f64(cfg.restore_us).max(Duration::NANOSECOND),
            cfg,
            queues: Vec::new(),
            stormed: Vec::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &PfcWatchdog {
        &self.cfg
    }

    /// Watches one more port.
    pub fn add_port(&mut self) {
        self.queues.push(Default::default());
        self.stormed.push(0);
    }

    /// Forgets every spell and storm (the switch rebooted); scheduled checks become stale.
    pub fn reset(&mut self) {
        self.queues.fill(Default::default());
        self.stormed.fill(0);
    }

    fn watch(&mut self, port: u16, prio: usize) -> Option<&mut QueueWatch> {
        self.queues.get_mut(usize::from(port))?.get_mut(prio)
    }

    /// Whether `port`'s priority `prio` is stormed.
    pub fn stormed(&self, port: u16, prio: usize) -> bool {
        let bits = self.stormed.get(usize::from(port)).copied().unwrap_or(0);
        prio < 8 && bits & (1 << prio) != 0
    }

    /// Whether pauses for `prio` received on `port` are ignored now (stormed, not `alert`).
    pub fn ignores_pause(&self, port: u16, prio: usize) -> bool {
        self.cfg.action != WatchdogAction::Alert && self.stormed(port, prio)
    }

    /// Whether packets of `prio` bound for `port` or arriving on it are dropped now.
    pub fn drops(&self, port: u16, prio: usize) -> bool {
        self.cfg.action == WatchdogAction::Drop && self.stormed(port, prio)
    }

    /// Whether `ingress` or `egress` drops packets of `prio` now: the check every packet
    /// makes at a switch with a watchdog (one load per port while nothing is stormed).
    pub fn drops_either(&self, ingress: u16, egress: u16, prio: usize) -> Option<u16> {
        if self.cfg.action != WatchdogAction::Drop {
            return None;
        }
        [egress, ingress]
            .into_iter()
            .find(|&p| self.stormed(p, prio))
    }

    /// A pause frame for `prio` arrived on `port` at `now` (the restoration waits for them to
    /// stop).
    pub fn on_pause(&mut self, port: u16, prio: usize, now: Instant) {
        if let Some(w) = self.watch(port, prio).filter(|w| w.stormed) {
            w.last_pause = now;
        }
    }

    /// The queue may have become stuck at `now` (a pause arrived, or a packet was queued
    /// behind one): starts a spell if one is not already running, and returns when to check
    /// it if a check must be scheduled.
    pub fn watch_queue(
        &mut self,
        port: u16,
        prio: usize,
        now: Instant,
        s: Stuck,
    ) -> Option<Instant> {
        let detect = self.detect;
        let w = self.watch(port, prio)?;
        if w.stormed || !(s.paused && s.queued) {
            return None;
        }
        if w.since.is_some_and(|since| unbroken(since, now, s)) {
            return None;
        }
        w.since = Some((now, s.paused_total, s.sent));
        if w.pending.is_some() {
            // The check already scheduled comes first and moves itself to this spell's end.
            return None;
        }
        let at = now + detect;
        w.pending = Some(at);
        Some(at)
    }

    /// The check scheduled for `port`'s `prio` at `now`, seeing `s`.
    pub fn check(&mut self, port: u16, prio: usize, now: Instant, s: Stuck) -> Verdict {
        let (detect, restore) = (self.detect, self.restore);
        let Some(w) = self.watch(port, prio) else {
            return Verdict::Nothing;
        };
        if w.pending != Some(now) {
            return Verdict::Nothing;
        }
        w.pending = None;
        if w.stormed {
            let due = w.last_pause + restore;
            if now < due {
                w.pending = Some(due);
                return Verdict::Again(due);
            }
            w.stormed = false;
            if let Some(b) = self.stormed.get_mut(usize::from(port)) {
                *b &= !(1 << prio);
            }
            return Verdict::Restored;
        }
        let Some(since) = w.since else {
            return Verdict::Nothing;
        };
        let due = since.0 + detect;
        if now < due {
            w.pending = Some(due);
            return Verdict::Again(due);
        }
        w.since = None;
        if !unbroken(since, now, s) {
            return Verdict::Nothing;
        }
        w.stormed = true;
        w.last_pause = now;
        let at = now + restore;
        w.pending = Some(at);
        if let Some(b) = self.stormed.get_mut(usize::from(port)) {
            *b |= 1 << prio;
        }
        Verdict::Storm(at)
    }
}

/// Whether a spell that began at `since` (time, pause total, sent count) has held until `now`,
/// which sees `s`: paused the whole time (the pause total grew as fast as the clock), nothing
/// sent, and still holding a packet (nothing left it, so it held one throughout).
fn unbroken((at, paused, sent): (Instant, Duration, u64), now: Instant, s: Stuck) -> bool {
    s.queued
        && s.sent == sent
        && s.paused_total.as_nanos().saturating_sub(paused.as_nanos())
            >= now.saturating_since(at).as_nanos()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(us: u64) -> Instant {
        Instant::from_nanos(us * 1000)
    }

    fn stuck(paused_us: u64) -> Stuck {
        Stuck {
            paused: true,
            paused_total: Duration::from_micros(paused_us),
            sent: 5,
            queued: true,
        }
    }

    fn dog(action: WatchdogAction) -> Watchdog {
        let mut w = Watchdog::new(PfcWatchdog {
            detect_us: 100.0,
            restore_us: 50.0,
            action,
        });
        w.add_port();
        w
    }

    #[test]
    fn a_queue_stuck_for_the_detection_time_is_stormed_then_restored_after_the_pauses_stop() {
        let mut w = dog(WatchdogAction::Drop);
        assert_eq!(w.watch_queue(0, 3, t(10), stuck(0)), Some(t(110)));
        // A refresh of the same pause starts nothing new.
        assert_eq!(w.watch_queue(0, 3, t(60), stuck(50)), None);
        assert_eq!(w.check(0, 3, t(110), stuck(100)), Verdict::Storm(t(160)));
        assert!(w.stormed(0, 3) && w.ignores_pause(0, 3) && w.drops(0, 3));
        assert_eq!(w.drops_either(0, 0, 3), Some(0));
        assert_eq!(w.drops_either(0, 0, 2), None);
        // Pause frames keep coming until 200: restoration 50 us after the last.
        w.on_pause(0, 3, t(200));
        assert_eq!(w.check(0, 3, t(160), stuck(100)), Verdict::Again(t(250)));
        assert_eq!(w.check(0, 3, t(250), stuck(100)), Verdict::Restored);
        assert!(!w.stormed(0, 3));
        // A stale check does nothing.
        assert_eq!(w.check(0, 3, t(250), stuck(100)), Verdict::Nothing);
    }

    #[test]
    fn a_break_in_the_pause_or_a_packet_sent_restarts_the_spell() {
        let mut w = dog(WatchdogAction::Drop);
        assert_eq!(w.watch_queue(0, 3, t(0), stuck(0)), Some(t(100)));
        // Paused 40 of the 50 us to 50 (a break), a new pause at 50: the spell starts again.
        assert_eq!(w.watch_queue(0, 3, t(50), stuck(40)), None);
        assert_eq!(w.check(0, 3, t(100), stuck(90)), Verdict::Again(t(150)));
        assert_eq!(w.check(0, 3, t(150), stuck(140)), Verdict::Storm(t(200)));
        // A queue that sent a packet in the spell is not stormed.
        let mut w = dog(WatchdogAction::Forward);
        assert_eq!(w.watch_queue(0, 3, t(0), stuck(0)), Some(t(100)));
        let sent = Stuck {
            sent: 6,
            ..stuck(100)
        };
        assert_eq!(w.check(0, 3, t(100), sent), Verdict::Nothing);
        assert!(!w.stormed(0, 3));
        // Nor one that is not paused, or empty, when a spell would start.
        let free = Stuck {
            paused: false,
            ..stuck(0)
        };
        assert_eq!(w.watch_queue(0, 3, t(200), free), None);
    }

    #[test]
    fn forward_ignores_pauses_without_dropping_and_alert_only_counts() {
        let mut w = dog(WatchdogAction::Forward);
        w.watch_queue(0, 3, t(0), stuck(0));
        assert_eq!(w.check(0, 3, t(100), stuck(100)), Verdict::Storm(t(150)));
        assert!(w.ignores_pause(0, 3) && !w.drops(0, 3));
        assert_eq!(w.drops_either(0, 0, 3), None);
        let mut w = dog(WatchdogAction::Alert);
        w.watch_queue(0, 3, t(0), stuck(0));
        assert_eq!(w.check(0, 3, t(100), stuck(100)), Verdict::Storm(t(150)));
        assert!(w.stormed(0, 3) && !w.ignores_pause(0, 3) && !w.drops(0, 3));
        w.reset();
        assert!(!w.stormed(0, 3));
        assert_eq!(w.check(0, 3, t(150), stuck(150)), Verdict::Nothing);
    }
}
