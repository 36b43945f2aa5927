//! Each QP's next deadline ([`QueuePair::poll_timeout`]), kept so that an endpoint finds its
//! earliest deadline, and the QPs whose timers are due, without asking every QP: an endpoint
//! asks after every event.
//!
//! Two layouts by the number of slots. Up to [`LINEAR_SLOTS`] the cached deadlines are
//! scanned: a few words, cheaper than any ordered structure (a 64 B WRITE changes its QP's
//! deadline on every message, and keeping a B-tree current cost 14% of it). Above that an
//! indexed binary heap keeps the scan from growing with the QPs a host ever had (a simulated
//! host may have hundreds); a busy QP's deadline moves with every packet, and moving it in the
//! heap is a short sift in one array where a B-tree removed and inserted nodes.
//!
//! A QP handed out mutably is *stale* until [`DueCache::refresh`] recomputes its deadline
//! (all of it behind `&mut self`: no interior mutability here);
//! [`DueCache::earliest`] asks the stale QPs themselves, so it is right between refreshes too.
//!
//! Not here: which calls touch a QP (the endpoint says so whenever it hands one out mutably).

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
    order: Option<Deadlines>,
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
            let mut order = Deadlines::default();
            for (slot, t) in self.due.iter().enumerate() {
                order.set(slot, *t);
            }
            self.head = order.first();
            self.order = Some(order);
        }
    }

    /// Recomputes the stale slots' deadlines from `qps` (indexed by slot) where the ordered
    /// set needs it; with few slots, stale ones wait for [`Self::earliest`] or
    /// [`Self::due_by`] to ask them (a busy QP is touched by every frame, and asking it each
    /// time cost more than the set itself).
    pub(crate) fn refresh(&mut self, qps: &[Option<Box<QueuePair>>]) {
        if self.order.is_some() {
            self.recompute(qps);
        }
    }

    fn recompute(&mut self, qps: &[Option<Box<QueuePair>>]) {
        let mut moved = false;
        for slot in self.stale_slots.drain(..) {
            let t = qps
                .get(slot)
                .and_then(Option::as_deref)
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
                order.set(slot, t);
                moved = true;
            }
            *due = t;
        }
        if moved {
            self.head = self.order.as_ref().and_then(Deadlines::first);
        }
    }

    fn is_stale(&self, slot: usize) -> bool {
        self.stale.get(slot).copied().unwrap_or(false)
    }

    /// The earliest deadline among `qps` (indexed by slot).
    pub(crate) fn earliest(&self, qps: &[Option<Box<QueuePair>>]) -> Option<Instant> {
        // Fresh slots from the cache; stale slots' cached deadlines may be out of date.
        let fresh = match &self.order {
            // Every entry is fresh: the first is the answer.
            Some(_) if self.stale_slots.is_empty() => return self.head,
            Some(order) => order.earliest_where(0, &|slot| !self.is_stale(slot)),
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
        qps: &[Option<Box<QueuePair>>],
        now: Instant,
        slots: &mut Vec<usize>,
    ) {
        self.recompute(qps);
        slots.clear();
        match &self.order {
            // Nothing due (a host also wakes for its engine's own reasons): no walk.
            Some(_) if self.head.is_none_or(|h| h > now) => {}
            Some(order) => {
                order.due_by(0, now, slots);
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

/// (deadline, slot) pairs in a binary heap ordered by the pair, with each slot's position in
/// it: a moved deadline sifts in place (no allocation, one array).
#[derive(Debug, Default)]
struct Deadlines {
    heap: Vec<(Instant, usize)>,
    /// Position in `heap` by slot; `usize::MAX` for a slot without a deadline.
    pos: Vec<usize>,
}

impl Deadlines {
    fn first(&self) -> Option<Instant> {
        self.heap.first().map(|&(t, _)| t)
    }

    /// Sets (or with `None` clears) `slot`'s deadline.
    fn set(&mut self, slot: usize, t: Option<Instant>) {
        if self.pos.len() <= slot {
            self.pos.resize(slot + 1, usize::MAX);
        }
        let at = self.pos.get(slot).copied().unwrap_or(usize::MAX);
        match (at < self.heap.len(), t) {
            (true, Some(t)) => {
                if let Some(e) = self.heap.get_mut(at) {
                    e.0 = t;
                }
                self.sift_up(at);
                self.sift_down(at);
            }
            (true, None) => {
                let last = self.heap.len() - 1;
                self.swap(at, last);
                self.heap.pop();
                if let Some(p) = self.pos.get_mut(slot) {
                    *p = usize::MAX;
                }
                if at < last {
                    self.sift_up(at);
                    self.sift_down(at);
                }
            }
            (false, Some(t)) => {
                self.heap.push((t, slot));
                let at = self.heap.len() - 1;
                if let Some(p) = self.pos.get_mut(slot) {
                    *p = at;
                }
                self.sift_up(at);
            }
            (false, None) => {}
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        for i in [a, b] {
            if let Some(&(_, slot)) = self.heap.get(i) {
                if let Some(p) = self.pos.get_mut(slot) {
                    *p = i;
                }
            }
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap.get(i) >= self.heap.get(parent) {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let left = 2 * i + 1;
            let Some(l) = self.heap.get(left) else {
                break;
            };
            let child = match self.heap.get(left + 1) {
                Some(r) if r < l => left + 1,
                _ => left,
            };
            if self.heap.get(child) >= self.heap.get(i) {
                break;
            }
            self.swap(i, child);
            i = child;
        }
    }

    /// The earliest deadline of a slot that `keep` accepts, in the subtree at `i`: a subtree
    /// is left at its first accepted entry (everything below it is later).
    fn earliest_where(&self, i: usize, keep: &impl Fn(usize) -> bool) -> Option<Instant> {
        let &(t, slot) = self.heap.get(i)?;
        if keep(slot) {
            return Some(t);
        }
        let left = self.earliest_where(2 * i + 1, keep);
        let right = self.earliest_where(2 * i + 2, keep);
        match (left, right) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Appends the slots of the subtree at `i` whose deadline is at or before `now` (in no
    /// order).
    fn due_by(&self, i: usize, now: Instant, out: &mut Vec<usize>) {
        if let Some(&(t, slot)) = self.heap.get(i) {
            if t <= now {
                out.push(slot);
                self.due_by(2 * i + 1, now, out);
                self.due_by(2 * i + 2, now, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn deadlines_answer_as_an_ordered_set_of_the_same_pairs() {
        let (mut heap, mut set) = (Deadlines::default(), BTreeSet::new());
        let mut due: Vec<Option<Instant>> = vec![None; 50];
        let mut x = 12345u64;
        for step in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let slot = (x >> 33) as usize % due.len();
            // Few distinct instants: ties between slots are common.
            let t = ((x >> 13) % 5 != 0).then(|| Instant::from_nanos((x >> 20) % 40));
            if let Some(old) = due[slot] {
                set.remove(&(old, slot));
            }
            if let Some(t) = t {
                set.insert((t, slot));
            }
            due[slot] = t;
            heap.set(slot, t);
            assert_eq!(heap.first(), set.first().map(|&(t, _)| t), "step {step}");
            let now = Instant::from_nanos(step % 40);
            let mut got = Vec::new();
            heap.due_by(0, now, &mut got);
            got.sort_unstable();
            let mut want: Vec<usize> = set.range(..=(now, usize::MAX)).map(|&(_, s)| s).collect();
            want.sort_unstable();
            assert_eq!(got, want, "step {step}");
            let odd = |s: usize| s % 2 == 1;
            let want = set.iter().find(|&&(_, s)| odd(s)).map(|&(t, _)| t);
            assert_eq!(heap.earliest_where(0, &odd), want, "step {step}");
        }
    }
}
