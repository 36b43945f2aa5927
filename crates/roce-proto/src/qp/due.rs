//! Each QP's next deadline ([`QueuePair::poll_timeout`]), kept so that an endpoint finds its
//! earliest deadline, and the QPs whose timers are due, without asking every QP: an endpoint
//! asks after every event.
//!
//! Two layouts by the number of slots. Up to [`LINEAR_SLOTS`] the cached deadlines are
//! scanned: a few words, cheaper than any ordered structure (a 64 B WRITE changes its QP's
//! deadline on every message, and keeping a B-tree current cost 14% of it). Above that an
//! ordered set keeps the scan from growing with the QPs a host ever had (a simulated host
//! may have hundreds).
//!
//! A QP handed out mutably is *stale* until [`DueCache::refresh`] recomputes its deadline
//! (all of it behind `&mut self`: no interior mutability here);
//! [`DueCache::earliest`] asks the stale QPs themselves, so it is right between refreshes too.
//!
//! Not here: which calls touch a QP (the endpoint says so whenever it hands one out mutably).

use std::collections::BTreeSet;

use super::QueuePair;
use crate::time::Instant;

/// Slots up to which deadlines are scanned rather than kept ordered.
pub(crate) const LINEAR_SLOTS: usize = 32;

/// Deadlines by QP slot.
#[derive(Debug, Default)]
pub(crate) struct DueCache {
    /// Each slot's deadline as last computed (out of date while the slot is stale).
    due: Vec<Option<Instant>>,
    /// Whether a slot awaits recomputation (then it is in `stale_slots`).
    stale: Vec<bool>,
    stale_slots: Vec<usize>,
    /// With more than [`LINEAR_SLOTS`] slots: (deadline, slot) of every slot with a deadline
    /// as last computed. A stale slot's entry stays until its refresh finds a different
    /// deadline, and [`Self::earliest`] skips it.
    order: Option<BTreeSet<(Instant, usize)>>,
    /// `order`'s first deadline, kept beside it: [`Self::earliest`] is asked after every
    /// event, and with no stale slot this word answers it without walking the set's nodes
    /// (cold in a fabric of many hosts).
    head: Option<Instant>,
}

impl DueCache {
    /// Slot `slot`'s QP changed (or came or went): its deadline is recomputed at the next
    /// [`Self::refresh`].
    pub(crate) fn touch(&mut self, slot: usize) {
        if self.stale.len() <= slot {
            self.grow(slot + 1);
        }
        let Some(stale) = self.stale.get_mut(slot) else {
            return;
        };
        if !*stale {
            *stale = true;
            self.stale_slots.push(slot);
        }
    }

    fn grow(&mut self, slots: usize) {
        self.stale.resize(slots, false);
        self.due.resize(slots, None);
        if slots > LINEAR_SLOTS && self.order.is_none() {
            let order: BTreeSet<(Instant, usize)> = self
                .due
                .iter()
                .enumerate()
                .filter_map(|(slot, t)| Some(((*t)?, slot)))
                .collect();
            self.head = order.first().map(|&(t, _)| t);
            self.order = Some(order);
        }
    }

    /// Recomputes the stale slots' deadlines from `qps` (indexed by slot) where the ordered
    /// set needs it; with few slots, stale ones wait for [`Self::earliest`] or
    /// [`Self::due_by`] to ask them (a busy QP is touched by every frame, and asking it each
    /// time cost more than the set itself).
    pub(crate) fn refresh(&mut self, qps: &[Option<QueuePair>]) {
        if self.order.is_some() {
            self.recompute(qps);
        }
    }

    fn recompute(&mut self, qps: &[Option<QueuePair>]) {
        let mut moved = false;
        for slot in self.stale_slots.drain(..) {
            let t = qps
                .get(slot)
                .and_then(Option::as_ref)
                .and_then(QueuePair::poll_timeout);
            let (Some(stale), Some(due)) = (self.stale.get_mut(slot), self.due.get_mut(slot))
            else {
                continue;
            };
            *stale = false;
            if *due == t {
                continue;
            }
            if let Some(order) = self.order.as_mut() {
                if let Some(old) = *due {
                    order.remove(&(old, slot));
                }
                if let Some(t) = t {
                    order.insert((t, slot));
                }
                moved = true;
            }
            *due = t;
        }
        if moved {
            self.head = self.order.as_ref().and_then(|o| o.first()).map(|&(t, _)| t);
        }
    }

    fn is_stale(&self, slot: usize) -> bool {
        self.stale.get(slot).copied().unwrap_or(false)
    }

    /// The earliest deadline among `qps` (indexed by slot).
    pub(crate) fn earliest(&self, qps: &[Option<QueuePair>]) -> Option<Instant> {
        // Fresh slots from the cache; stale slots' cached deadlines may be out of date.
        let fresh = match &self.order {
            // Every entry is fresh: the first is the answer.
            Some(_) if self.stale_slots.is_empty() => return self.head,
            Some(order) => order
                .iter()
                .find(|&&(_, slot)| !self.is_stale(slot))
                .map(|&(t, _)| t),
            None => self
                .due
                .iter()
                .zip(&self.stale)
                .filter_map(|(t, stale)| if *stale { None } else { *t })
                .min(),
        };
        self.stale_slots
            .iter()
            .filter_map(|&slot| qps.get(slot)?.as_ref()?.poll_timeout())
            .chain(fresh)
            .min()
    }

    /// After a refresh from `qps`: writes into `slots` the slots whose deadline is at or
    /// before `now`, in slot order (the order timers have always fired in).
    pub(crate) fn due_by(
        &mut self,
        qps: &[Option<QueuePair>],
        now: Instant,
        slots: &mut Vec<usize>,
    ) {
        self.recompute(qps);
        slots.clear();
        match &self.order {
            // Nothing due (a host also wakes for its engine's own reasons): no walk.
            Some(_) if self.head.map_or(true, |h| h > now) => {}
            Some(order) => {
                slots.extend(order.range(..=(now, usize::MAX)).map(|&(_, slot)| slot));
                slots.sort_unstable();
            }
            None => slots.extend(
                self.due
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| t.is_some_and(|t| t <= now))
                    .map(|(slot, _)| slot),
            ),
        }
    }
}
