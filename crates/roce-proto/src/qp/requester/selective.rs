//! The requester in selective-repeat mode ([`Recovery::SelectiveRepeat`]): what the responder
//! holds, learned from the PSNs its NAKs name, and which packets to resend. As IRN (SIGCOMM'18,
//! §3.1): the first NAK of a loss starts a recovery that lasts until every packet sent before it
//! is acknowledged; during it, a packet below the highest PSN the responder holds that it does
//! not hold is lost (once a reordering window has passed, when one is set), and is resent once,
//! lowest first, ahead of new packets. A packet lost again waits for the ACK timeout, which
//! resends the oldest unacknowledged packet and every later one the responder does not hold.
//!
//! [`Recovery::SelectiveRepeat`]: crate::verbs::Recovery::SelectiveRepeat

use crate::psn::{Psn, PsnWindow, PSN_WINDOW};
use crate::time::{Duration, Instant};

use super::super::timer::{Timer, TimerTable};

use super::{Requester, RequesterConfig};

/// What selective repeat adds to a requester.
#[derive(Clone, Debug)]
pub(crate) struct Selective {
    /// PSNs the responder said it holds; the window starts at the oldest unacknowledged PSN.
    held: PsnWindow,
    /// One past the highest PSN the responder said it holds.
    held_end: Psn,
    /// Packets below this one that the responder does not hold are lost (`held_end` once the
    /// reordering window has passed over it).
    lost_end: Psn,
    /// A `held_end` waiting for the reordering window to pass, and when it does.
    exposing: Option<(Psn, Instant)>,
    /// In recovery until the oldest unacknowledged PSN reaches this one.
    recovery_end: Option<Psn>,
    /// Where the search for the next packet to resend starts.
    resend_next: Psn,
    /// A READ or atomic request to send again (its response went missing), alone: the packets
    /// after it reached the responder or are resent as lost.
    rerequest: Option<Psn>,
    /// The recovery in progress has resent a packet (its first resend is the loss the
    /// congestion controller hears of).
    resent_in_recovery: bool,
}

impl Selective {
    pub fn new(una: Psn) -> Self {
        Selective {
            held: PsnWindow::new(una),
            held_end: una,
            lost_end: una,
            exposing: None,
            recovery_end: None,
            resend_next: una,
            rerequest: None,
            resent_in_recovery: false,
        }
    }

    /// Ends the recovery in progress (the cursor was moved back and resends from there).
    pub fn end_recovery(&mut self) {
        self.recovery_end = None;
    }
}

impl Requester {
    /// Turns selective repeat on (at RTR).
    pub fn enable_selective_repeat(&mut self) {
        self.selective = Some(Box::new(Selective::new(self.una)));
    }

    /// Most PSNs outstanding: the configured limit, and under selective repeat no more than the
    /// responder's window holds.
    pub fn outstanding_cap(&self, cfg: &RequesterConfig) -> u32 {
        match self.selective {
            Some(_) => cfg.max_outstanding_psns.min(PSN_WINDOW),
            None => cfg.max_outstanding_psns,
        }
    }

    /// Forgets what the responder held behind the oldest unacknowledged PSN; ends a recovery
    /// that is over.
    pub fn note_una(&mut self) {
        let una = self.una;
        if let Some(s) = self.selective.as_deref_mut() {
            s.held.slide_to(una);
            if s.recovery_end.is_some_and(|end| !una.before(end)) {
                s.recovery_end = None;
            }
        }
    }

    /// A NAK for `expected` that names `held`, a PSN the responder holds, at `now`; the packets
    /// it shows missing count as lost `window` later (the reordering timer is armed for it).
    /// `true` when it starts a recovery (a loss event, for the counters and the controller).
    pub fn on_selective_nak(
        &mut self,
        expected: Psn,
        held: Psn,
        now: Instant,
        window: Duration,
        timers: &mut TimerTable,
    ) -> bool {
        self.note_una();
        let high = self.high_psn;
        let Some(s) = self.selective.as_deref_mut() else {
            return false;
        };
        if held.after(expected) && held.before(high) {
            s.held.insert(held);
            if held.next().after(s.held_end) {
                s.held_end = held.next();
            }
        }
        if window == Duration::ZERO {
            s.lost_end = s.held_end;
        } else if s.exposing.is_none() && s.held_end.after(s.lost_end) {
            s.exposing = Some((s.held_end, now + window));
            timers.set(Timer::ReorderWindow, now + window);
        }
        if s.recovery_end.is_some() {
            return false;
        }
        s.recovery_end = Some(high);
        s.resent_in_recovery = false;
        // Never back over packets an earlier recovery resent: one lost again waits for the
        // ACK timeout, as in IRN.
        if s.resend_next.before(expected) {
            s.resend_next = expected;
        }
        true
    }

    /// The reordering window passed: what the NAK before it showed missing is lost now; the
    /// window starts again for anything NAKs showed missing since.
    pub fn on_reorder_window(&mut self, now: Instant, window: Duration, timers: &mut TimerTable) {
        let Some(s) = self.selective.as_deref_mut() else {
            return;
        };
        let Some((end, _)) = s.exposing.take() else {
            return;
        };
        if end.after(s.lost_end) {
            s.lost_end = end;
        }
        if s.held_end.after(s.lost_end) {
            s.exposing = Some((s.held_end, now + window));
            timers.set(Timer::ReorderWindow, now + window);
        }
    }

    /// The PSN of the packet the cursor would send next (the next posted one when none).
    fn cursor_psn(&self) -> Psn {
        self.sq
            .get(self.cursor)
            .map_or(self.next_post_psn, |w| w.first_psn.add(self.cursor_pkt))
    }

    /// The next lost packet to resend in the recovery in progress: its WQE index, packet index
    /// and PSN. Only SEND and WRITE packets: READs and atomics recover as IBA says.
    pub fn resend_candidate(&self) -> Option<(usize, u32, Psn)> {
        let s = self.selective.as_deref()?;
        let end = s.recovery_end?;
        if !self.una.before(end) {
            return None;
        }
        let start = if s.resend_next.before(self.una) {
            self.una
        } else {
            s.resend_next
        };
        // Packets from the cursor on go out anyway; past the highest held one (once the
        // reordering window has passed it), none is lost.
        let mut limit = s.lost_end;
        for p in [self.cursor_psn(), self.high_psn] {
            if p.before(limit) {
                limit = p;
            }
        }
        for (i, w) in self.sq.iter().enumerate() {
            if w.npkts == 0 || w.last_psn().before(start) {
                continue;
            }
            if !w.first_psn.before(limit) {
                break;
            }
            if w.wr.opcode.is_read_or_atomic() {
                continue;
            }
            for k in start.diff(w.first_psn).max(0) as u32..w.npkts {
                let psn = w.first_psn.add(k);
                if !psn.before(limit) {
                    return None;
                }
                if !s.held.contains(psn) {
                    return Some((i, k, psn));
                }
            }
        }
        None
    }

    /// Asks again for the READ or atomic response at `psn` (already requested), without
    /// resending what followed the request; `false` when `psn` is not such a response.
    pub fn rerequest(&mut self, psn: Psn) -> bool {
        let Some(i) = self.sq.iter().position(|w| w.covers(psn)) else {
            return false;
        };
        let sent = i < self.cursor;
        let Some(s) = self.selective.as_deref_mut() else {
            return false;
        };
        if !sent || !self.sq[i].wr.opcode.is_read_or_atomic() {
            return false;
        }
        s.rerequest = Some(psn);
        true
    }

    /// The READ or atomic to ask for again: its WQE index, packet index and PSN.
    pub fn rerequest_due(&self) -> Option<(usize, u32, Psn)> {
        let psn = self.selective.as_deref()?.rerequest?;
        let i = self.sq.iter().position(|w| w.covers(psn))?;
        let w = &self.sq[i];
        (i < self.cursor && w.wr.opcode.is_read_or_atomic())
            .then(|| (i, psn.diff(w.first_psn) as u32, psn))
    }

    /// The re-request went out (or is moot).
    pub fn rerequested(&mut self) {
        if let Some(s) = self.selective.as_deref_mut() {
            s.rerequest = None;
        }
    }

    /// `psn` was resent as lost: the search goes on after it, and the recovery's first resend
    /// counts a loss.
    pub fn resent(&mut self, psn: Psn) {
        if let Some(s) = self.selective.as_deref_mut() {
            s.resend_next = psn.next();
            if !s.resent_in_recovery {
                s.resent_in_recovery = true;
                self.losses += 1;
            }
        }
    }

    /// Moves the cursor past packets already sent that the responder holds, except the oldest
    /// unacknowledged one: the responder holds that one only if it has executed it and its
    /// ACK was lost, and sending it again is what brings that ACK back.
    pub fn skip_held(&mut self) {
        let Some(s) = self.selective.as_deref() else {
            return;
        };
        while let Some(w) = self.sq.get(self.cursor) {
            if w.wr.opcode.is_read_or_atomic() || w.npkts == 0 {
                return;
            }
            let psn = w.first_psn.add(self.cursor_pkt);
            if !psn.before(self.high_psn) || psn == self.una || !s.held.contains(psn) {
                return;
            }
            if self.cursor_pkt + 1 >= w.npkts {
                self.cursor += 1;
                self.cursor_pkt = 0;
            } else {
                self.cursor_pkt += 1;
            }
        }
    }
}
