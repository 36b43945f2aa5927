//! Each QP's next deadline ([`QueuePair::poll_timeout`]), kept ordered so that an endpoint
//! finds its earliest deadline, and the QPs whose timers are due, without visiting its other
//! QPs: an endpoint asks after every event, and scanning every QP it ever had made an event
//! cost grow with the QPs rather than with the traffic.
//!
//! A QP handed out mutably is *stale* until [`DueCache::refresh`] recomputes its deadline
//! (all of it behind `&mut self`: no interior mutability here; what still keeps `Endpoint`
//! from `Sync` is the boxed `dyn CongestionControl + Send` of registered controllers);
//! [`DueCache::earliest`] asks the stale QPs themselves, so it is right between refreshes too.
//!
//! Not here: which calls touch a QP (the endpoint says so whenever it hands one out mutably).

use std::collections::BTreeSet;

use super::QueuePair;
use crate::time::Instant;

/// Deadlines by QP slot.
#[derive(Debug, Default)]
pub(crate) struct DueCache {
    /// Each slot's deadline as last computed: its entry in `order`, kept while the slot is
    /// stale so that a refresh that finds the same deadline leaves the set alone (most
    /// touches of a busy QP change nothing, and the set's remove + insert cost 14% of a
    /// 64 B WRITE).
    due: Vec<Option<Instant>>,
    /// Whether a slot awaits recomputation (then it is in `stale_slots`).
    stale: Vec<bool>,
    stale_slots: Vec<usize>,
    /// (deadline, slot) of every slot with a deadline as last computed; a stale slot's entry
    /// may be out of date and is skipped by [`Self::earliest`].
    order: BTreeSet<(Instant, usize)>,
}

impl DueCache {
    /// Slot `slot`'s QP changed (or came or went): its deadline is recomputed at the next
    /// [`Self::refresh`].
    pub(crate) fn touch(&mut self, slot: usize) {
        if self.stale.len() <= slot {
            self.stale.resize(slot + 1, false);
            self.due.resize(slot + 1, None);
        }
        let Some(stale) = self.stale.get_mut(slot) else {
            return;
        };
        if !*stale {
            *stale = true;
            self.stale_slots.push(slot);
        }
    }

    /// Recomputes the stale slots' deadlines from `qps` (indexed by slot).
    pub(crate) fn refresh(&mut self, qps: &[Option<QueuePair>]) {
        for slot in self.stale_slots.drain(..) {
            let t = qps
                .get(slot)
                .and_then(Option::as_ref)
                .and_then(QueuePair::poll_timeout);
            let (Some(stale), Some(due)) = (self.stale.get_mut(slot), self.due.get_mut(slot)) else {
                continue;
            };
            *stale = false;
            if *due == t {
                continue;
            }
            if let Some(old) = due.take() {
                self.order.remove(&(old, slot));
            }
            if let Some(t) = t {
                self.order.insert((t, slot));
            }
            *due = t;
        }
    }

    /// The earliest deadline among `qps` (indexed by slot).
    pub(crate) fn earliest(&self, qps: &[Option<QueuePair>]) -> Option<Instant> {
        // The first fresh entry: stale slots' entries may be out of date, and there are at
        // most as many of them as stale slots.
        let fresh = self
            .order
            .iter()
            .find(|&&(_, slot)| !self.stale.get(slot).copied().unwrap_or(false))
            .map(|&(t, _)| t);
        self.stale_slots
            .iter()
            .filter_map(|&slot| qps.get(slot)?.as_ref()?.poll_timeout())
            .chain(fresh)
            .min()
    }

    /// After a refresh from `qps`: the slots whose deadline is at or before `now`, in slot
    /// order (the order timers have always fired in).
    pub(crate) fn due_by(&mut self, qps: &[Option<QueuePair>], now: Instant) -> Vec<usize> {
        self.refresh(qps);
        let mut slots: Vec<usize> = self
            .order
            .range(..=(now, usize::MAX))
            .map(|&(_, slot)| slot)
            .collect();
        slots.sort_unstable();
        slots
    }
}
